//! `ratesim export nginx` (docs/semantics.md §8): a scenario's leaky buckets back as
//! nginx configuration; `ratesim import` of the export decides the same.

use std::fs;
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

#[test]
fn an_exported_chain_imported_again_decides_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), LAYERED).unwrap();
    let o = ratesim_in(
        tmp.path(),
        &["export", "nginx", "s.toml", "--key", "$binary_remote_addr"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let export = String::from_utf8(o.stdout).unwrap();
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
    let o = ratesim_in(tmp.path(), &["import", "nginx.conf"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let imported = String::from_utf8(o.stdout).unwrap();
    // The imported limiters and chain, beside the originals, on the same
    // traffic.
    let start = imported.find("\n[[limiter]]\n").unwrap();
    let end = imported.find("\n# Placeholder traffic").unwrap();
    let both = format!(
        "{}{}\n",
        LAYERED.replace(
            "[[traffic]]",
            &format!("{}\n[[traffic]]", &imported[start..end])
        ),
        ""
    );
    fs::write(tmp.path().join("both.toml"), &both).unwrap();
    let o = ratesim_in(
        tmp.path(),
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
    let (_, rows) = csv_rows(&tmp.path().join("out/decisions.csv"));
    let of = |name: &str| -> Vec<Vec<String>> {
        rows.iter()
            .filter(|r| r[0] == name)
            .map(|r| r[1..8].to_vec())
            .collect()
    };
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
}

/// A leaky bucket of ratesim's exact arithmetic exports with a word on
/// nginx's whole milliseconds; an `implementation = "nginx"` one without.
#[test]
fn an_exact_shaper_is_exported_with_a_word_on_milliseconds() {
    let tmp = tempfile::tempdir().unwrap();
    let exact = LAYERED.replace(
        "implementation = \"nginx\"\nrate = \"5/1s\"",
        "algorithm = \"leaky_bucket\"\nrate = \"5/1s\"",
    );
    for (toml, said) in [(exact.as_str(), true), (LAYERED, false)] {
        fs::write(tmp.path().join("s.toml"), toml).unwrap();
        let o = ratesim_in(
            tmp.path(),
            &["export", "nginx", "s.toml", "--key", "$binary_remote_addr"],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(
            text.contains("# perip: ratesim's exact shaper; nginx computes in whole milliseconds"),
            said,
            "{text}"
        );
        assert!(!text.contains("# perserver: ratesim's exact"), "{text}");
    }
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
    let o = ratesim_in(tmp.path(), &["export", "envoy", "s.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let export = String::from_utf8(o.stdout).unwrap();
    fs::write(tmp.path().join("envoy.yaml"), &export).unwrap();
    let mut args = vec!["import", "envoy.yaml"];
    args.extend(import_args);
    let o = ratesim_in(tmp.path(), &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let imported = String::from_utf8(o.stdout).unwrap();
    let start = imported.find("\n[[limiter]]\n").unwrap();
    let end = imported.find("\n# Placeholder traffic").unwrap();
    let limiters = imported[start..end].replace("name = '", "name = 'rt-");
    let both = toml.replace("[[traffic]]", &format!("{limiters}\n[[traffic]]"));
    fs::write(tmp.path().join("both.toml"), &both).unwrap();
    let o = ratesim_in(
        tmp.path(),
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
    let (_, rows) = csv_rows(&tmp.path().join("out/decisions.csv"));
    let of = |name: &str| -> Vec<Vec<String>> {
        rows.iter()
            .filter(|r| r[0] == name)
            .map(|r| r[1..8].to_vec())
            .collect()
    };
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
