//! `ratesim export nginx` (docs/semantics.md §8): a scenario's leaky buckets back as
//! nginx configuration; `ratesim import` of the export decides the same.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// Two nginx zones in a chain (per address and per server) over Poisson
/// clients, as `implementation = "nginx"` limiters.
const LAYERED: &str = r#"name = "layered"
duration = "20s"
seed = 11

[defaults]
limit = 5
window = "1s"

[[limiter]]
name = "perip"
implementation = "nginx"
rate = "5/1s"
queue = 5
delay = 5

[[limiter]]
name = "perserver"
implementation = "nginx"
key_by = "global"
rate = "40/1s"
queue = 10
delay = 3

[[chain]]
name = "c"
limiters = ["perip", "perserver"]
mode = "all_or_nothing"

[[traffic]]
pattern = "poisson"
clients = 12
rate = "4/1s"
"#;

fn ratesim_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    ratesim().current_dir(dir).args(args).output().unwrap()
}

/// What ratesim prints run in `dir` with `args`, which must succeed.
fn stdout_in(dir: &std::path::Path, args: &[&str]) -> String {
    let o = ratesim_in(dir, args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The `[[limiter]]` (and `[[chain]]`) tables of an imported scenario.
fn imported_limiters(imported: &str) -> &str {
    let start = imported.find("\n[[limiter]]\n").unwrap();
    let end = imported.find("\n# Placeholder traffic").unwrap();
    &imported[start..end]
}

/// Runs `toml` with `limiters` added before its traffic, in `dir`: each
/// limiter's decisions (`decisions.csv` columns `time_ns` to
/// `retry_after_ns`), by name.
fn decisions_beside(
    dir: &std::path::Path,
    toml: &str,
    limiters: &str,
) -> impl Fn(&str) -> Vec<Vec<String>> {
    let both = toml.replace("[[traffic]]", &format!("{limiters}\n[[traffic]]"));
    fs::write(dir.join("both.toml"), &both).unwrap();
    let o = ratesim_in(
        dir,
        &[
            "run",
            "both.toml",
            "--decisions",
            "--no-plots",
            "--quiet",
            "--out",
            "out",
        ],
    );
    assert!(
        o.status.success(),
        "{}\n{both}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (_, rows) = csv_rows(&dir.join("out/decisions.csv"));
    move |name: &str| -> Vec<Vec<String>> {
        rows.iter()
            .filter(|r| r[0] == name)
            .map(|r| r[1..8].to_vec())
            .collect()
    }
}

#[test]
fn an_exported_chain_imported_again_decides_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), LAYERED).unwrap();
    let export = stdout_in(
        tmp.path(),
        &["export", "nginx", "s.toml", "--key", "$binary_remote_addr"],
    );
    assert!(
        export.contains("limit_req_zone $binary_remote_addr zone=perip:10m rate=5r/s;")
            && export.contains("limit_req_zone $server_name zone=perserver:10m rate=40r/s;")
            && export.contains("limit_req zone=perip burst=5 nodelay;\n    limit_req zone=perserver burst=10 delay=3;"),
        "{export}"
    );
    // Into a server block, as the comments say, and imported again.
    let lines = |prefix: &str| -> String {
        export
            .lines()
            .filter(|l| l.trim_start().starts_with(prefix))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let conf = format!(
        "http {{\n{}    server {{\n        server_name rt;\n        location / {{\n{}        }}\n    }}\n}}\n",
        lines("limit_req_zone"),
        lines("limit_req zone")
    );
    fs::write(tmp.path().join("nginx.conf"), &conf).unwrap();
    write_nginx_check(&tmp.path().join("nginx.conf"));
    let imported = stdout_in(tmp.path(), &["import", "nginx.conf"]);
    // The imported limiters and chain, beside the originals, on the same
    // traffic.
    let of = decisions_beside(tmp.path(), LAYERED, imported_limiters(&imported));
    let original = of("c");
    assert!(original.iter().any(|r| r[4] == "rejected"));
    assert!(original.iter().any(|r| r[4] == "delayed"));
    assert_eq!(of("location /"), original, "{imported}");
}

/// `nginx -t` accepts the export inside a minimal configuration, when
/// nginx is installed: `RATESIM_NGINX`, else `/usr/sbin/nginx` or `nginx`
/// (`.ci/run` installs it, and sets `RATESIM_REQUIRE_NGINX`).
fn write_nginx_check(conf: &std::path::Path) {
    let named = std::env::var("RATESIM_NGINX").ok();
    let nginx = named
        .iter()
        .map(String::as_str)
        .chain(["/usr/sbin/nginx", "nginx"])
        .find(|n| Command::new(n).arg("-v").output().is_ok())
        .map(str::to_string);
    let Some(nginx) = nginx else {
        assert!(
            std::env::var_os("RATESIM_REQUIRE_NGINX").is_none(),
            "RATESIM_REQUIRE_NGINX is set and there is no nginx"
        );
        eprintln!("SKIPPED nginx -t: no nginx");
        return;
    };
    let prefix = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(conf).unwrap();
    let full = format!(
        "daemon off;\npid nginx.pid;\nerror_log stderr;\nevents {{}}\n{}",
        text.replacen("http {\n", "http {\n    access_log off;\n", 1)
    );
    fs::write(prefix.path().join("nginx.conf"), full).unwrap();
    let o = Command::new(nginx)
        .args(["-t", "-q", "-p"])
        .arg(prefix.path())
        .args(["-c", "nginx.conf", "-e", "stderr"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nginx -t refuses the export: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn what_nginx_cannot_run_exactly_is_refused_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = |toml: &str, args: &[&str], needles: &[&str]| {
        fs::write(tmp.path().join("b.toml"), toml).unwrap();
        let mut all = vec!["export", "nginx", "b.toml"];
        all.extend(args);
        let o = ratesim_in(tmp.path(), &all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        for n in needles {
            assert!(err.contains(n), "{n}: {err}");
        }
        assert!(o.stdout.is_empty());
    };
    let key = ["--key", "$binary_remote_addr"];
    bad(
        &LAYERED.replace("rate = \"5/1s\"", "rate = \"5/7s\""),
        &key,
        &["\"perip\"", "rate 1/1.4s", "per second or per minute"],
    );
    bad(LAYERED, &[], &["\"perip\"", "--key"]);
    bad(
        LAYERED,
        &["--limiter", "nope"],
        &["--limiter \"nope\"", "names: perip"],
    );
    bad(
        &LAYERED.replace(
            "implementation = \"nginx\"\nrate = \"5/1s\"\nqueue = 5\ndelay = 5",
            "algorithm = \"token_bucket\"",
        ),
        &key,
        &["\"perip\"", "token_bucket", "leaky bucket"],
    );
    // ratesim's exact shaper decides otherwise than nginx's whole
    // milliseconds: refused, pointing at the nginx arithmetic.
    bad(
        &LAYERED.replace(
            "implementation = \"nginx\"\nrate = \"5/1s\"",
            "algorithm = \"leaky_bucket\"\nrate = \"5/1s\"",
        ),
        &key,
        &[
            "\"perip\"",
            "exact arithmetic",
            "implementation = \"nginx\"",
        ],
    );
    // Two names that make one zone name.
    bad(
        &LAYERED
            .replace("name = \"perserver\"", "name = \"per.ip\"")
            .replace("name = \"perip\"", "name = \"per_ip\"")
            .replace("\"perip\", \"perserver\"", "\"per_ip\", \"per.ip\""),
        &key,
        &["\"per_ip\"", "\"per.ip\"", "zone per_ip"],
    );
    // Regression: --key was written as given, so an empty one, or one with
    // a space or a `;`, made a limit_req_zone nginx refuses.
    for k in ["", "$a b", "$x;y", "binary_remote_addr", "$1x"] {
        bad(
            LAYERED,
            &["--key", k],
            &["\"perip\"", "is no single nginx variable", "--key VAR"],
        );
    }
    // Regression (found by an audit): an each_counts chain was written as
    // one location's limit_req lines, which nginx asks all or nothing.
    bad(
        &LAYERED.replace("mode = \"all_or_nothing\"", "mode = \"each_counts\""),
        &key,
        &["chain \"c\"", "mode = \"each_counts\"", "all or nothing"],
    );
    // Regression: a rate nginx's import of it cannot hold was written.
    bad(
        &LAYERED.replace("rate = \"5/1s\"", "rate = \"1000000000000/1ns\""),
        &key,
        &[
            "\"perip\"",
            "rate=1000000000000000000000r/s",
            "above the 10^12",
        ],
    );
}

/// An export of all a scenario's limiters says which it left out (it
/// left them out silently before, found by an audit).
#[test]
fn an_export_of_all_names_the_limiters_it_leaves_out() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = LAYERED.replace(
        "[[chain]]",
        "[[limiter]]\nname = \"edge\"\nalgorithm = \"token_bucket\"\nkey_by = \"global\"\n\n[[chain]]",
    );
    fs::write(tmp.path().join("s.toml"), toml).unwrap();
    let text = stdout_in(
        tmp.path(),
        &["export", "nginx", "s.toml", "--key", "$binary_remote_addr"],
    );
    assert!(
        text.contains(
            "# Not exported (nginx's limit_req is a leaky bucket): \"edge\" (token_bucket).\n"
        ),
        "{text}"
    );
    let text = stdout_in(tmp.path(), &["export", "envoy", "s.toml"]);
    assert!(
        text.contains(
            "# Not exported (Envoy's local_ratelimit is a token bucket): \"c\" (chain).\n"
        ),
        "{text}"
    );
}

// Regression: `queue = 0` with `delay = 3` was written `delay=3` without a
// burst, which import then refused; with no queue nothing waits, so nginx
// is given no delay, and the round trip holds.
#[test]
fn a_delay_without_a_queue_is_left_out_of_the_export() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = LAYERED
        .replace("queue = 5\ndelay = 5", "queue = 0\ndelay = 3")
        .replace("[[chain]]\nname = \"c\"\nlimiters = [\"perip\", \"perserver\"]\nmode = \"all_or_nothing\"\n", "");
    fs::write(tmp.path().join("s.toml"), &toml).unwrap();
    let export = stdout_in(
        tmp.path(),
        &[
            "export",
            "nginx",
            "s.toml",
            "--limiter",
            "perip",
            "--key",
            "$binary_remote_addr",
        ],
    );
    assert!(export.contains("    limit_req zone=perip;\n"), "{export}");
    let conf = format!(
        "http {{\n{}    server {{\n        location / {{\n{}        }}\n    }}\n}}\n",
        export
            .lines()
            .filter(|l| l.trim_start().starts_with("limit_req_zone"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        export
            .lines()
            .filter(|l| l.trim_start().starts_with("limit_req zone"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    fs::write(tmp.path().join("nginx.conf"), &conf).unwrap();
    let imported = stdout_in(tmp.path(), &["import", "nginx.conf"]);
    let of = decisions_beside(tmp.path(), &toml, imported_limiters(&imported));
    let original = of("perip");
    assert!(original.iter().any(|r| r[4] == "rejected"));
    // One zone in location `/`: a limiter named after both.
    assert!(imported.contains("name = 'all-perip'"), "{imported}");
    assert_eq!(of("all-perip"), original, "{imported}");
}

// ---------------------------------------------------------------------------
// `ratesim export envoy`
// ---------------------------------------------------------------------------

/// Envoy-shaped token buckets: one bucket for all requests, at rates whose
/// smallest exact fill is 5 per 50 ms, 3 per 1 s and 34 per 51 ms.
const EDGE: &str = r#"name = "edge"
duration = "20s"
seed = 5

[defaults]
limit = 100
window = "1s"

[[limiter]]
name = "edge"
implementation = "envoy"
capacity = 40
key_by = "global"

[[limiter]]
name = "slow"
algorithm = "token_bucket"
capacity = 5
rate = "3/1s"
key_by = "global"

[[limiter]]
name = "odd"
algorithm = "token_bucket"
capacity = 3
rate = "2/3ms"
key_by = "global"

[[traffic]]
pattern = "poisson"
clients = 20
rate = "6/1s"
"#;

/// Envoy's timer-refilled buckets (`implementation = "envoy-timer"`).
const TIMER: &str = r#"name = "timer"
duration = "20s"
seed = 6

[defaults]
limit = 100
window = "1s"

[[limiter]]
name = "timer"
implementation = "envoy-timer"
max_tokens = 10
tokens_per_fill = 2
fill_interval = "200ms"
key_by = "global"

[[limiter]]
name = "coarse"
algorithm = "interval_bucket"
max_tokens = 30
tokens_per_fill = 25
fill_interval = "2.5s"
key_by = "global"

[[traffic]]
pattern = "bursty"
form = "on_off"
clients = 10
rate = "8/1s"
on = "2s"
off = "3s"
"#;

/// Exports `toml` to Envoy, imports the export again (`import_args` after
/// the file), runs the imported limiters beside the originals on the same
/// traffic, and checks that each decides every attempt as its original.
/// Returns the export and the imported scenario.
fn envoy_round_trip(toml: &str, import_args: &[&str], names: &[&str]) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), toml).unwrap();
    let export = stdout_in(tmp.path(), &["export", "envoy", "s.toml"]);
    fs::write(tmp.path().join("envoy.yaml"), &export).unwrap();
    let mut args = vec!["import", "envoy.yaml"];
    args.extend(import_args);
    let imported = stdout_in(tmp.path(), &args);
    let limiters = imported_limiters(&imported).replace("name = '", "name = 'rt-");
    let of = decisions_beside(tmp.path(), toml, &limiters);
    for name in names {
        let original = of(name);
        assert!(
            original.iter().any(|r| r[4] == "rejected") && original.len() > 100,
            "{name}: the traffic must reject something"
        );
        assert_eq!(of(&format!("rt-{name}")), original, "{name}\n{imported}");
    }
    (export, imported)
}

#[test]
fn exported_envoy_token_buckets_imported_again_decide_the_same() {
    let (export, imported) = envoy_round_trip(EDGE, &[], &["edge", "slow", "odd"]);
    for fill in [
        "max_tokens: 40\n                tokens_per_fill: 5\n                fill_interval: 0.05s\n",
        "max_tokens: 5\n                tokens_per_fill: 3\n                fill_interval: 1s\n",
        "max_tokens: 3\n                tokens_per_fill: 34\n                fill_interval: 0.051s\n",
    ] {
        assert!(export.contains(fill), "{fill}\n{export}");
    }
    assert!(
        export.contains("stat_prefix: slow") && export.contains("port_value: 10002"),
        "{export}"
    );
    // Enabled and enforced: nothing for the import to note.
    assert!(
        imported.contains("Everything in the configuration about rate limits is modelled."),
        "{imported}"
    );
    assert_eq!(imported.matches("implementation = \"envoy\"").count(), 3);
}

#[test]
fn exported_envoy_timer_buckets_imported_with_envoy_timer_decide_the_same() {
    let (export, imported) = envoy_round_trip(TIMER, &["--envoy-timer"], &["timer", "coarse"]);
    assert!(
        export.contains("`ratesim import\n# --envoy-timer`"),
        "{export}"
    );
    assert!(
        export.contains("max_tokens: 30\n                tokens_per_fill: 25\n                fill_interval: 2.5s\n"),
        "{export}"
    );
    assert_eq!(
        imported.matches("implementation = \"envoy-timer\"").count(),
        2
    );
}

#[test]
fn what_envoy_cannot_run_exactly_is_refused_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = |toml: &str, args: &[&str], needles: &[&str]| {
        fs::write(tmp.path().join("b.toml"), toml).unwrap();
        let mut all = vec!["export", "envoy", "b.toml"];
        all.extend(args);
        let o = ratesim_in(tmp.path(), &all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        for n in needles {
            assert!(err.contains(n), "{n}: {err}");
        }
        assert!(o.stdout.is_empty());
    };
    let edge = "implementation = \"envoy\"\ncapacity = 40\nkey_by = \"global\"";
    bad(
        &EDGE.replace(edge, "implementation = \"envoy\"\ncapacity = 40"),
        &[],
        &["\"edge\"", "key_by = \"client\"", "one bucket"],
    );
    bad(
        &EDGE.replace(edge, "algorithm = \"gcra\"\nkey_by = \"global\""),
        &["--limiter", "edge"],
        &["\"edge\"", "gcra", "token bucket"],
    );
    bad(
        &EDGE.replace(edge, "algorithm = \"gcra\"\nkey_by = \"global\""),
        &["--limiter", "nope"],
        &["--limiter \"nope\"", "names: edge, slow, odd"],
    );
    bad(
        &EDGE.replace(
            edge,
            "implementation = \"envoy\"\ncapacity = 5000000000\nkey_by = \"global\"",
        ),
        &[],
        &["\"edge\"", "capacity 5000000000", "uint32"],
    );
    bad(
        &EDGE.replace(edge, &format!("{edge}\ndeployment = {{ instances = 3 }}")),
        &[],
        &["\"edge\"", "3 instances", "each Envoy"],
    );
    bad(
        &TIMER.replace("fill_interval = \"200ms\"", "fill_interval = \"20ms\""),
        &[],
        &["\"timer\"", "fill_interval 20ms", "under 50ms"],
    );
    bad(
        &TIMER.replace("fill_interval = \"200ms\"", "fill_interval = \"60.5ms\""),
        &[],
        &["\"timer\"", "60.5ms", "no whole number of milliseconds"],
    );
    // One Envoy refills every bucket one way.
    let mixed = TIMER.replace(
        "[[traffic]]",
        "[[limiter]]\nname = \"lazy\"\nalgorithm = \"token_bucket\"\nkey_by = \"global\"\n\n[[traffic]]",
    );
    bad(&mixed, &[], &["\"timer\"", "\"lazy\"", "--envoy-timer"]);
    bad(
        LAYERED,
        &[],
        &["layered", "no token_bucket or interval_bucket limiter"],
    );
    let chain = EDGE.replace(
        "[[traffic]]",
        "[[chain]]\nname = \"both\"\nlimiters = [\"edge\", \"slow\"]\nmode = \"each_counts\"\n\n[[traffic]]",
    );
    bad(&chain, &[], &["chain \"both\"", "takes its token"]);
    bad(
        &chain,
        &["--limiter", "slow"],
        &["\"slow\"", "inside chain \"both\""],
    );
}

// ---------------------------------------------------------------------------
// `ratesim export redis S --limiter NAME`
// ---------------------------------------------------------------------------

/// One limiter of every algorithm with a script, each knob somewhere, over
/// a trace in whole microseconds (`trace.csv`, written by the test).
const REDIS: &str = r#"name = "redis"

[defaults]
limit = 5
window = "1s"

[[limiter]]
name = "tb"
algorithm = "token_bucket"
capacity = 4
rate = "3/1s"

[[limiter]]
name = "gcra"
algorithm = "gcra"
burst = 3
rate = "7/2s"

[[limiter]]
name = "all"
algorithm = "gcra"
key_by = "global"
burst = 10
rate = "12/1s"

[[limiter]]
name = "shaper"
algorithm = "leaky_bucket"
rate = "4/1s"
queue = 3
delay = 1

[[limiter]]
name = "window"
algorithm = "fixed_window"
align = "first_hit"
count_rejected = true

[[limiter]]
name = "log"
algorithm = "sliding_log"
key_by = "ip"
boundary = "inclusive"

[[limiter]]
name = "counter"
algorithm = "sliding_counter"
weight = "floor"
window = "700ms"

[[limiter]]
name = "guava"
algorithm = "smooth_bursty"
capacity = 3

[[limiter]]
name = "store"
algorithm = "token_bucket"
capacity = 2
deployment = { scope = "global" }

[[limiter]]
name = "epoch"
algorithm = "fixed_window"
limit = 3
window = "500ms"

[[traffic]]
pattern = "trace"
path = "trace.csv"
"#;

/// 400 requests over about 12 s from five clients (two behind one
/// address): bursts at one µs, steps of 1 µs, pauses long enough for keys
/// to become fresh, costs of 1 to 3. `(time_us, cost)` per line, and the
/// CSV.
fn redis_trace() -> (Vec<(u64, u64)>, String) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let clients = [
        ("ann", "192.0.2.1"),
        ("bo", "192.0.2.2"),
        ("cy", "192.0.2.3"),
        ("di", "192.0.2.3"),
        ("ed", "192.0.2.5"),
    ];
    let mut t = 0u64;
    let mut lines = Vec::new();
    let mut csv = String::from("time_ns,client,ip,cost\n");
    for _ in 0..400 {
        t += match rng.random_range(0..10) {
            0..=2 => 0,
            3 => 1,
            4..=7 => rng.random_range(1..=120_000),
            8 => rng.random_range(200_000..=400_000),
            _ => rng.random_range(1_000_000..=2_500_000) / 20,
        };
        let (client, ip) = clients[rng.random_range(0..clients.len())];
        let cost = if rng.random_bool(0.8) {
            1
        } else {
            rng.random_range(2..=3)
        };
        lines.push((t, cost));
        csv.push_str(&format!("{},{client},{ip},{cost}\n", t * 1000));
    }
    (lines, csv)
}

/// The `EVALSHA` line of `ratesim export redis`'s output, split: the sha
/// and the arguments after `{cost}`.
fn evalsha_line(text: &str) -> (String, Vec<String>) {
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 1, "one EVALSHA line: {text}");
    let words: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!(words[0], "EVALSHA", "{text}");
    assert_eq!(&words[2..6], ["1", "{KEY}", "{now_us}", "{cost}"], "{text}");
    (
        words[1].to_string(),
        words[6..].iter().map(|w| w.to_string()).collect(),
    )
}

/// The arguments `ratesim export redis S --limiter NAME` prints, given to
/// the shipped script on a real redis-server, decide every request of a
/// trace as `ratesim run` does (outcome, and its wait rounded up to whole
/// µs), and the printed sha is the one `SCRIPT LOAD` returns; the RateLimit
/// fields each reply carries after the decision are `--decisions=headers`'
/// (`remaining` is `r` exactly, or -1 where `r` is the policy's `q`
/// because any cost passes; `reset_us` in whole seconds rounded up is `t`;
/// docs/semantics.md §6, §11). As in
/// `redis_scripts.rs`, the expiry each call asks for is applied in virtual
/// time. Skipped without a server, as the other Redis tests are.
#[test]
fn the_exported_evalsha_call_decides_as_ratesim_run_on_a_real_redis() {
    use crate::redis_scripts::{connect, observed, server};
    let tmp = tempfile::tempdir().unwrap();
    let (trace, csv) = redis_trace();
    fs::write(tmp.path().join("trace.csv"), csv).unwrap();
    fs::write(tmp.path().join("s.toml"), REDIS).unwrap();
    // The calls, which need no server.
    let names = [
        "tb", "gcra", "all", "shaper", "window", "log", "counter", "guava", "store", "epoch",
    ];
    let calls: Vec<(&str, String, Vec<String>)> = names
        .iter()
        .map(|name| {
            let text = stdout_in(
                tmp.path(),
                &["export", "redis", "s.toml", "--limiter", name],
            );
            let script = text
                .split("the script redis/")
                .nth(1)
                .and_then(|r| r.split(".lua").next())
                .unwrap_or_else(|| panic!("no script named: {text}"))
                .to_string();
            let (sha, args) = evalsha_line(&text);
            assert_eq!(sha.len(), 40, "{text}");
            (*name, script, [vec![sha], args].concat())
        })
        .collect();
    let args_of = |name: &str| calls.iter().find(|c| c.0 == name).unwrap().2[1..].join(" ");
    assert_eq!(args_of("tb"), "3 1000000 4");
    assert_eq!(args_of("gcra"), "7 2000000 3");
    assert_eq!(args_of("shaper"), "1 250000 3 1");
    assert_eq!(args_of("window"), "5 1000000 1 first_hit");
    assert_eq!(args_of("log"), "5 1000000 0 inclusive");
    assert_eq!(args_of("counter"), "5 700000 0 floor");
    assert_eq!(args_of("guava"), "1 200000 3 empty");
    assert_eq!(args_of("epoch"), "3 500000 0 epoch");

    let o = ratesim_in(
        tmp.path(),
        &[
            "run",
            "s.toml",
            "--decisions=headers",
            "--no-plots",
            "--quiet",
            "--out",
            "out",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (head, rows) = csv_rows(&tmp.path().join("out/decisions.csv"));
    assert_eq!(
        &head[..8],
        [
            "limiter",
            "time_ns",
            "key",
            "client",
            "attempt",
            "outcome",
            "delay_ns",
            "retry_after_ns"
        ]
    );

    let column = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (ratelimit, policy) = (column("ratelimit"), column("ratelimit_policy"));
    // `"NAME";r=R;t=T` or `"NAME";q=Q;w=W`: the number after `;key=`.
    let param = |field: &str, key: &str| -> i64 {
        field
            .split(';')
            .find_map(|p| p.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {field:?}"))
            .parse()
            .unwrap()
    };

    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    for (name, script, call) in &calls {
        let text = ratesim::redis::script(script).unwrap().text;
        let loaded: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(text)
            .query(&mut conn)
            .unwrap();
        assert_eq!(&loaded, &call[0], "{name}: the printed sha");
        // The script with its expiry captured, as redis_scripts.rs runs it.
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(observed(text))
            .query(&mut conn)
            .unwrap();
        let mine: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == *name).collect();
        assert_eq!(mine.len(), trace.len(), "{name}");
        let mut expires_at: std::collections::HashMap<String, u64> = Default::default();
        let mut seen = std::collections::HashSet::new();
        let mut outcomes = [0usize; 3];
        for (i, (row, &(t, cost))) in mine.iter().zip(&trace).enumerate() {
            assert_eq!(row[1], (t * 1000).to_string(), "{name}: request {i}");
            let key = format!("export:{name}:{}", row[2]);
            if seen.insert(key.clone()) {
                // A server kept from an earlier run may hold it.
                let _: i64 = redis::cmd("DEL").arg(&key).query(&mut conn).unwrap();
            }
            if expires_at.get(&key).is_some_and(|&at| t >= at) {
                let _: i64 = redis::cmd("PEXPIRE")
                    .arg(&key)
                    .arg(0)
                    .query(&mut conn)
                    .unwrap();
                expires_at.remove(&key);
            }
            let us = |ns: &str| ns.parse::<u64>().unwrap().div_ceil(1000) as i64;
            let want = match row[5].as_str() {
                "admitted" => (1, 0),
                "delayed" => (2, us(&row[6])),
                "rejected" if row[7].is_empty() => (0, -1),
                "rejected" => (0, us(&row[7])),
                other => panic!("{other}"),
            };
            let (outcome, wait, ms, remaining, reset_us): (i64, i64, i64, i64, i64) =
                redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(1)
                    .arg(&key)
                    .arg(t)
                    .arg(cost)
                    .arg(&call[1..])
                    .query(&mut conn)
                    .unwrap_or_else(|e| panic!("{name} request {i}: {e}"));
            assert_eq!(
                (outcome, wait),
                want,
                "{name}: request {i} (t = {t} us, key {}, cost {cost})",
                row[2]
            );
            let r = param(&row[ratelimit], "r");
            let any = remaining == -1 && r == param(&row[policy], "q");
            assert!(
                remaining == r || any,
                "{name}: request {i}: remaining {remaining}, ratesim's {:?}",
                row[ratelimit]
            );
            assert_eq!(
                (reset_us as u64).div_ceil(1_000_000) as i64,
                param(&row[ratelimit], "t"),
                "{name}: request {i}: reset_us {reset_us}, ratesim's {:?}",
                row[ratelimit]
            );
            outcomes[outcome as usize] += 1;
            if ms >= 0 {
                expires_at.insert(key, t + ms as u64 * 1000);
            }
        }
        assert!(
            outcomes[0] > 0 && outcomes[1] > 0,
            "{name}: admitted and rejected something: {outcomes:?}"
        );
        if *name == "shaper" {
            assert!(outcomes[2] > 0, "the shaper delayed something");
        }
    }
}

/// `ratesim export SUBCOMMAND b.toml ARGS` in `dir`, with `toml` as
/// b.toml: exit 2, an error holding every needle, nothing on stdout.
fn assert_export_refused(
    dir: &Path,
    subcommand: &str,
    toml: &str,
    args: &[&str],
    needles: &[&str],
) {
    fs::write(dir.join("b.toml"), toml).unwrap();
    let mut all = vec!["export", subcommand, "b.toml"];
    all.extend(args);
    let o = ratesim_in(dir, &all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n}: {err}");
    }
    assert!(o.stdout.is_empty());
}

#[test]
fn what_no_redis_script_runs_exactly_is_refused_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("trace.csv"), redis_trace().1).unwrap();
    let bad = |toml: &str, args: &[&str], needles: &[&str]| {
        assert_export_refused(tmp.path(), "redis", toml, args, needles)
    };
    let tb = "name = \"tb\"\nalgorithm = \"token_bucket\"\ncapacity = 4\nrate = \"3/1s\"";
    let with_tb = |table: &str| REDIS.replace(tb, &format!("name = \"tb\"\n{table}"));
    let limiter = ["--limiter", "tb"];
    bad(
        REDIS,
        &[],
        &["\"b.toml\": a scenario", "--limiter NAME", "tb, gcra, all"],
    );
    bad(
        REDIS,
        &["--limiter", "nope"],
        &["--limiter \"nope\"", "names: tb"],
    );
    bad(
        &with_tb(
            "implementation = \"envoy-timer\"\nfill_interval = \"100ms\"\ntokens_per_fill = 1",
        ),
        &limiter,
        &["\"tb\"", "interval_bucket", "no Redis script"],
    );
    bad(
        &with_tb("implementation = \"nginx\""),
        &limiter,
        &["\"tb\"", "nginx's arithmetic"],
    );
    bad(
        &with_tb("algorithm = \"fixed_window\"\nwindow = \"1500ns\""),
        &limiter,
        &["\"tb\"", "window 1.5us", "whole number of microseconds"],
    );
    bad(
        &with_tb("algorithm = \"token_bucket\"\ncapacity = 1000000000000\nrate = \"1/10ms\""),
        &limiter,
        &[
            "\"tb\"",
            "(capacity + cost) * window_us + limit",
            "exact range",
        ],
    );
    bad(
        &with_tb("algorithm = \"token_bucket\"\ndeployment = { instances = 3 }"),
        &limiter,
        &["\"tb\"", "3 instances", "scope = \"global\""],
    );
    bad(
        &with_tb(
            "algorithm = \"token_bucket\"\ndeployment = { scope = \"global\", atomic = false }",
        ),
        &limiter,
        &["\"tb\"", "read-then-write", "atomic = true"],
    );
    let chain = REDIS.replace(
        "[[traffic]]",
        "[[chain]]\nname = \"both\"\nlimiters = [\"tb\", \"gcra\"]\nmode = \"all_or_nothing\"\n\n[[traffic]]",
    );
    bad(
        &chain,
        &["--limiter", "both"],
        &["chain \"both\"", "together"],
    );
    bad(&chain, &limiter, &["\"tb\"", "inside chain \"both\""]);
}

/// `ratesim export nginx-lua S --limiter NAME` (docs/semantics.md §11): the
/// fragment says where it goes, embeds the limiter's script and its sha,
/// passes the call's arguments and keys as the limiter does; the fail mode
/// is the deployment's. (scripts/nginx-lua-check.py runs it on a real
/// nginx and Redis.)
#[test]
fn export_nginx_lua_prints_a_fragment_that_calls_the_limiters_script() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("trace.csv"), redis_trace().1).unwrap();
    fs::write(tmp.path().join("s.toml"), REDIS).unwrap();
    let export = |args: &[&str]| {
        let mut all = vec!["export", "nginx-lua", "s.toml"];
        all.extend(args);
        let o = ratesim_in(tmp.path(), &all);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = export(&["--limiter", "log", "--redis", "10.0.0.5:6380"]);
    let script = ratesim::redis::script("sliding_log").unwrap();
    for needle in [
        "# ratesim export nginx-lua: limiter \"log\" of scenario \"redis\" (sliding_log)",
        "inside the location { } block",
        "# Part 1 (location block):",
        "set $ratesim_redis_host \"10.0.0.5\";",
        "set $ratesim_redis_port \"6380\";",
        "access_by_lua_block {",
        "header_filter_by_lua_block {",
        "local CALL = {\"5\", \"1000000\", \"0\", \"inclusive\"}",
        &format!("local SHA = \"{}\"", script.sha()),
        // key_by = "ip", read from no nginx log: the client's address.
        "local KEY = ngx.var.binary_remote_addr",
        "local NAME = \"\\\"log\\\"\"",
        "local POLICY = \"\\\"log\\\";q=5;w=1\"",
        "local FAIL = \"fail_open\"",
        "local TIMEOUT_MS = 100 ",
        "ngx.exit(429)",
        "ngx.sleep(",
        "NOSCRIPT",
        "SCRIPT\", \"LOAD\"",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
    // The script as it is, byte for byte, so SCRIPT LOAD gives the sha: in
    // pieces of whole lines (nginx reads a Lua block's strings into a 4 KB
    // buffer), each a long string.
    assert!(
        text.contains("local SCRIPT = table.concat({\n[[\n"),
        "{text}"
    );
    assert_eq!(lua_pieces(&text, "local SCRIPT = "), script.text);
    assert!(!text.contains("lua_shared_dict"), "no fallback, no dict");
    // Every comment line of the header says where or what.
    assert!(text.lines().take_while(|l| l.starts_with('#')).count() > 20);

    let all = export(&["--limiter", "all"]);
    assert!(all.contains("local KEY = \"all\""), "{all}");
    let tb = export(&["--limiter", "tb", "--key", "$http_x_api_key"]);
    assert!(tb.contains("local KEY = ngx.var.http_x_api_key"), "{tb}");
    assert!(
        tb.contains("local CALL = {\"3\", \"1000000\", \"4\"}"),
        "{tb}"
    );

    // A store with a timeout and a local fallback of another algorithm.
    let fallback = REDIS.replace(
        "deployment = { scope = \"global\" }",
        "deployment = { scope = \"global\", timeout = \"20ms\", on_store_failure = \"local_fallback\", fallback = { algorithm = \"gcra\", burst = 2 } }",
    );
    fs::write(tmp.path().join("f.toml"), &fallback).unwrap();
    let store = ["--limiter", "store", "--key", "$http_x_client"];
    let text = stdout_in(
        tmp.path(),
        &[&["export", "nginx-lua", "f.toml"][..], &store].concat(),
    );
    for needle in [
        "# Part 1 (http block):\nlua_shared_dict ratesim_fallback 10m;",
        "# Part 2 (location block):",
        "local FAIL = \"local_fallback\"",
        "local TIMEOUT_MS = 20 ",
        "local FALLBACK_CALL = {\"1\", \"200000\", \"2\"}",
        "ngx.shared[\"ratesim_fallback\"]",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
    let gcra = ratesim::redis::script("gcra").unwrap().text;
    assert_eq!(
        lua_pieces(&text, "local FALLBACK_SCRIPT = "),
        gcra,
        "the fallback's own script"
    );
    let closed = REDIS.replace(
        "deployment = { scope = \"global\" }",
        "deployment = { scope = \"global\", on_store_failure = \"fail_closed\" }",
    );
    fs::write(tmp.path().join("c.toml"), &closed).unwrap();
    let o = ratesim_in(
        tmp.path(),
        &[&["export", "nginx-lua", "c.toml"][..], &store].concat(),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("local FAIL = \"fail_closed\""));
}

/// The text of the Lua `table.concat({[[\n...]], ...})` after `start` in
/// `fragment`, each piece at most 2048 bytes.
fn lua_pieces(fragment: &str, start: &str) -> String {
    let rest = &fragment[fragment.find(start).expect(start) + start.len()..];
    let rest = rest.strip_prefix("table.concat({\n").expect("pieces");
    let mut text = String::new();
    for piece in rest[..rest.find("]]})").expect("their end") + 2].split("]],\n") {
        let piece = piece.strip_prefix("[[\n").expect("a long string");
        let piece = piece.strip_suffix("]]").unwrap_or(piece);
        assert!(piece.len() <= 2048, "{}", piece.len());
        text.push_str(piece);
    }
    text
}

/// What the fragment cannot run is exit 2 naming the limiter and why, with
/// nothing on stdout.
#[test]
fn export_nginx_lua_refuses_what_no_script_runs_and_keys_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("trace.csv"), redis_trace().1).unwrap();
    let bad = |toml: &str, args: &[&str], needles: &[&str]| {
        assert_export_refused(tmp.path(), "nginx-lua", toml, args, needles)
    };
    let tb = "name = \"tb\"\nalgorithm = \"token_bucket\"\ncapacity = 4\nrate = \"3/1s\"";
    let with_tb = |table: &str| REDIS.replace(tb, &format!("name = \"tb\"\n{table}"));
    let limiter = ["--limiter", "tb", "--key", "$http_x_client"];
    bad(
        REDIS,
        &["--limiter", "nope"],
        &["--limiter \"nope\"", "names: tb"],
    );
    bad(
        REDIS,
        &["--limiter", "tb"],
        &["\"tb\"", "keyed by client", "--key VAR"],
    );
    bad(
        &with_tb(
            "implementation = \"envoy-timer\"\nfill_interval = \"100ms\"\ntokens_per_fill = 1",
        ),
        &limiter,
        &["\"tb\"", "interval_bucket", "no Redis script"],
    );
    bad(
        &with_tb("implementation = \"nginx\""),
        &limiter,
        &["\"tb\"", "nginx's arithmetic"],
    );
    bad(
        &format!(
            "{}\n[backend]\nworkers = 4\nservice = \"exp(20ms)\"\n",
            with_tb("algorithm = \"concurrency\"\nmax_in_flight = 4")
        ),
        &limiter,
        &["\"tb\"", "concurrency", "backend"],
    );
    let chain = REDIS.replace(
        "[[traffic]]",
        "[[chain]]\nname = \"both\"\nlimiters = [\"tb\", \"gcra\"]\nmode = \"all_or_nothing\"\n\n[[traffic]]",
    );
    bad(
        &chain,
        &["--limiter", "both"],
        &["chain \"both\"", "together"],
    );
    bad(&chain, &limiter, &["\"tb\"", "inside chain \"both\""]);
    for key in ["http_x_client", "$a b", "$", "$1x", "${x}"] {
        bad(
            REDIS,
            &["--limiter", "tb", "--key", key],
            &["\"tb\"", "no single nginx variable"],
        );
    }
    bad(
        REDIS,
        &["--limiter", "all", "--redis", "localhost"],
        &["--redis \"localhost\"", "HOST:PORT"],
    );
    bad(
        &with_tb(
            "algorithm = \"token_bucket\"\ndeployment = { scope = \"global\", on_store_failure = \"local_fallback\", fallback = { algorithm = \"interval_bucket\", fill_interval = \"1s\", tokens_per_fill = 1, max_tokens = 2 } }",
        ),
        &limiter,
        &["\"tb\"", "local_fallback", "interval_bucket"],
    );
}
