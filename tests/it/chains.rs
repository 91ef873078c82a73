//! Chains (docs/semantics.md §13) end to end: `[[chain]]` validation, and
//! a chain decides through the engine — with retries, several sources and
//! every algorithm — as its rules say against the members alone.

use std::fs;

use crate::common::*;

/// Every algorithm (and a counting variant), as a `[[limiter]]` body.
const ALGORITHMS: &[&str] = &[
    "algorithm = \"token_bucket\"\ncapacity = 4\nrate = \"3/1s\"",
    "algorithm = \"interval_bucket\"\nmax_tokens = 4\ntokens_per_fill = 1\nfill_interval = \"300ms\"",
    "algorithm = \"gcra\"\nburst = 4\nrate = \"3/1s\"",
    "algorithm = \"leaky_bucket\"\nrate = \"3/1s\"\nqueue = 3\ndelay = 1",
    "algorithm = \"fixed_window\"\nlimit = 3\nwindow = \"1s\"\ncount_rejected = true",
    "algorithm = \"sliding_log\"\nlimit = 3\nwindow = \"1s\"",
    "algorithm = \"sliding_counter\"\nlimit = 3\nwindow = \"1s\"",
    "implementation = \"guava\"\nrate = \"3/1s\"",
];

/// Two sources of Poisson clients that retry (after Retry-After, and
/// immediately), shared by one IP each pair.
const TRAFFIC: &str = r#"
[[traffic]]
name = "polite"
pattern = "poisson"
clients = 6
rate = "2/1s"
retry = { policy = "retry_after", max_attempts = 3 }

[[traffic]]
name = "eager"
pattern = "poisson"
clients = 4
rate = "3/1s"
retry = { policy = "immediate", max_attempts = 2 }
"#;

fn scenario(body: &str) -> String {
    format!(
        "name = \"chains\"\nduration = \"20s\"\nseed = 7\n\n[defaults]\nlimit = 3\nwindow = \"1s\"\n{body}{TRAFFIC}"
    )
}

/// Runs `toml` with the decision log; returns the run directory's parent.
fn run(toml: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.toml");
    fs::write(&path, toml).unwrap();
    let out = ratesim()
        .arg("run")
        .arg(&path)
        .args(["--decisions", "--no-plots", "--quiet", "--out"])
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmp
}

/// `ratesim ARGS` run in `dir`; asserts it succeeded, returns stdout.
fn ok_in(dir: &std::path::Path, args: &[&str]) -> String {
    let o = ratesim().current_dir(dir).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Decision rows without their key (a chain's key is the client, the
/// member's may be another).
fn without_key(rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|mut r| {
            r.remove(1);
            r
        })
        .collect()
}

/// `decisions.csv`'s rows of `limiter`, without the limiter and `by`.
fn decisions(dir: &std::path::Path, limiter: &str) -> Vec<Vec<String>> {
    let (_, rows) = csv_rows(&dir.join("decisions.csv"));
    rows.into_iter()
        .filter(|r| r[0] == limiter)
        .map(|r| r[1..8].to_vec())
        .collect()
}

/// An `all_or_nothing` chain of one member decides every attempt —
/// retries included — exactly as the member alone would.
#[test]
fn a_one_member_all_or_nothing_chain_is_its_member() {
    for (i, algorithm) in ALGORITHMS.iter().enumerate() {
        for key_by in ["client", "global"] {
            let body = format!(
                "\n[[limiter]]\nname = \"alone\"\nkey_by = \"{key_by}\"\n{algorithm}\n\n[[limiter]]\nname = \"member\"\nkey_by = \"{key_by}\"\n{algorithm}\n\n[[chain]]\nname = \"c\"\nlimiters = [\"member\"]\nmode = \"all_or_nothing\"\n"
            );
            let tmp = run(&scenario(&body));
            let out = tmp.path().join("out");
            let alone = decisions(&out, "alone");
            let chain = decisions(&out, "c");
            assert!(
                alone.iter().any(|r| r[4] == "rejected"),
                "algorithm {i}: no rejection to compare"
            );
            assert!(
                alone.iter().any(|r| r[3] != "1"),
                "algorithm {i}: no retry to compare"
            );
            // The chain's key is the client; compare the rest.
            assert_eq!(
                without_key(chain),
                without_key(alone),
                "algorithm {i}, key_by {key_by}"
            );
        }
    }
}

/// Without retries, every member of an `each_counts` chain decides every
/// request exactly as it would alone: what it rejects alone it rejects
/// in the chain, and what it passes alone it passes (or passes and is
/// overruled).
#[test]
fn each_counts_members_decide_as_they_would_alone() {
    let traffic = TRAFFIC
        .replace("retry = { policy = \"retry_after\", max_attempts = 3 }", "")
        .replace("retry = { policy = \"immediate\", max_attempts = 2 }", "");
    for pair in ALGORITHMS.windows(2) {
        let body = format!(
            "\n[[limiter]]\nname = \"a_alone\"\n{}\n\n[[limiter]]\nname = \"b_alone\"\nkey_by = \"global\"\n{}\n\n[[limiter]]\nname = \"a\"\n{}\n\n[[limiter]]\nname = \"b\"\nkey_by = \"global\"\n{}\n\n[[chain]]\nname = \"c\"\nlimiters = [\"a\", \"b\"]\nmode = \"each_counts\"\n",
            pair[0], pair[1], pair[0], pair[1]
        );
        let toml = scenario(&body).replace(TRAFFIC, &traffic);
        let tmp = run(&toml);
        let out = tmp.path().join("out");
        for (member, alone) in [("a", "a_alone"), ("b", "b_alone")] {
            let m = summary_row(&out, member);
            let a = summary_row(&out, alone);
            assert_eq!(column(&m, "attempts"), column(&a, "attempts"), "{member}");
            assert_eq!(
                column(&m, "rejected"),
                column(&a, "rejected"),
                "{member}: {pair:?}"
            );
            assert_eq!(
                column(&m, "admitted") + column(&m, "delayed") + column(&m, "overruled"),
                column(&a, "admitted") + column(&a, "delayed"),
                "{member}: {pair:?}"
            );
        }
        // The chain rejects what either rejects.
        let c = summary_row(&out, "c");
        let rejected_by_a = column(&summary_row(&out, "a_alone"), "rejected");
        assert!(column(&c, "rejected") >= rejected_by_a);
    }
}

#[test]
fn a_chain_is_checked_like_any_input() {
    let two = "\n[[limiter]]\nname = \"a\"\nalgorithm = \"token_bucket\"\n\n[[limiter]]\nname = \"b\"\nalgorithm = \"fixed_window\"\n";
    let bad = |chain: &str, needles: &[&str]| {
        assert_bad_scenario(
            &scenario(&format!("{two}\n[[chain]]\n{chain}\n")),
            &[],
            needles,
        );
    };
    bad(
        "name = \"c\"\nlimiters = [\"a\", \"b\"]",
        &["chain[0].mode", "missing", "all_or_nothing", "each_counts"],
    );
    bad(
        "name = \"c\"\nlimiters = [\"a\", \"b\"]\nmode = \"first\"",
        &[
            "chain[0].mode",
            "\"first\"",
            "\"all_or_nothing\", \"each_counts\"",
        ],
    );
    bad(
        "name = \"c\"\nlimiters = [\"a\", \"z\"]\nmode = \"each_counts\"",
        &[
            "chain[0].limiters",
            "\"z\"",
            "no [[limiter]]",
            "names: a, b",
        ],
    );
    bad(
        "name = \"c\"\nlimiters = []\nmode = \"each_counts\"",
        &["chain[0].limiters", "at least one"],
    );
    bad(
        "name = \"c\"\nlimiters = [\"a\", \"a\"]\nmode = \"each_counts\"",
        &["chain[0].limiters", "\"a\"", "twice"],
    );
    bad(
        "name = \"a\"\nlimiters = [\"b\"]\nmode = \"each_counts\"",
        &["chain[0].name", "\"a\"", "unique"],
    );
    bad(
        "limiters = [\"b\"]\nmode = \"each_counts\"",
        &["chain[0].name", "missing"],
    );
    bad(
        "name = \"c\"\nlimiters = [\"a\"]\nmode = \"each_counts\"\ncolor = 1",
        &["chain[0]", "color"],
    );
    bad(
        "name = \"c\"\nlimiters = [\"a\"]\nmode = \"each_counts\"\n\n[[chain]]\nname = \"d\"\nlimiters = [\"a\"]\nmode = \"each_counts\"",
        &["chain[1].limiters", "\"a\"", "already a member of chain \"c\""],
    );
    // Members share their gateway instances, with local state.
    let deployed = two.replace(
        "name = \"a\"\nalgorithm = \"token_bucket\"\n",
        "name = \"a\"\nalgorithm = \"token_bucket\"\ndeployment = { instances = 3 }\n",
    );
    assert_bad_scenario(
        &scenario(&format!("{deployed}\n[[chain]]\nname = \"c\"\nlimiters = [\"a\", \"b\"]\nmode = \"all_or_nothing\"\n")),
        &[],
        &["chain[0].limiters", "\"b\"", "(1 instance, round_robin) is not \"a\"'s (3 instances, round_robin)"],
    );
    let global = two.replace(
        "name = \"a\"\nalgorithm = \"token_bucket\"\n",
        "name = \"a\"\nalgorithm = \"token_bucket\"\ndeployment = { instances = 2, scope = \"global\" }\n",
    );
    assert_bad_scenario(
        &scenario(&format!(
            "{global}\n[[chain]]\nname = \"c\"\nlimiters = [\"a\"]\nmode = \"all_or_nothing\"\n"
        )),
        &[],
        &["chain[0].limiters", "\"a\"", "shared store"],
    );
}

/// On several gateway instances, each instance asks its own copies of the
/// members: a one-member `all_or_nothing` chain decides as its member does
/// on the same deployment, for every routing, with and without `share`.
#[test]
fn a_chain_on_several_instances_is_its_member_on_them() {
    for deployment in [
        "{ instances = 3 }",
        "{ instances = 2, routing = \"hash_client\" }",
        "{ instances = 4, routing = \"random\", share = true }",
    ] {
        for algorithm in [ALGORITHMS[0], ALGORITHMS[3], ALGORITHMS[4]] {
            let body = format!(
                "\n[[limiter]]\nname = \"alone\"\nkey_by = \"global\"\n{algorithm}\ndeployment = {deployment}\n\n[[limiter]]\nname = \"member\"\nkey_by = \"global\"\n{algorithm}\ndeployment = {deployment}\n\n[[chain]]\nname = \"c\"\nlimiters = [\"member\"]\nmode = \"all_or_nothing\"\n"
            );
            let tmp = run(&scenario(&body));
            let out = tmp.path().join("out");
            let alone = decisions(&out, "alone");
            assert!(
                alone.iter().any(|r| r[4] == "rejected"),
                "{deployment}: no rejection"
            );
            // The chain's key is the client; compare the rest.
            assert_eq!(
                without_key(decisions(&out, "c")),
                without_key(alone),
                "{deployment} {algorithm}"
            );
            let c = summary_row(&out, "c");
            let m = summary_row(&out, "member");
            let a = summary_row(&out, "alone");
            for col in ["keys", "state_bytes_total_peak", "instances"] {
                assert_eq!(column(&m, col), column(&a, col), "{deployment}: {col}");
                assert_eq!(column(&c, col), column(&a, col), "{deployment}: {col}");
            }
        }
    }
}

/// One real-nginx fixture of several limits on one request
/// (scripts/nginx-fixture.sh, `FIXTURE=layered` or `plans`), imported and
/// replayed: the share of its verdicts the chain agrees with, and the share
/// the same zones replayed independently (each alone; a request rejected
/// if any rejects it) would.
struct Agreement {
    requests: usize,
    chain: usize,
    independent: usize,
}

/// `client` of a fixture's access-log line, as the replay names it.
type ClientOf = fn(&[&str]) -> String;

fn fixture_agreement(name: &str, client_of: ClientOf) -> Agreement {
    let fixture = manifest_dir().join("tests/fixtures").join(name);
    let tmp = tempfile::tempdir().unwrap();
    for f in ["nginx.conf", "access.log"] {
        fs::copy(fixture.join(f), tmp.path().join(f)).unwrap();
    }
    let chained = ok_in(
        tmp.path(),
        &["import", "nginx.conf", "--trace", "access.log"],
    );
    assert!(
        chained.contains("[[chain]]\nname = 'location /'"),
        "{chained}"
    );
    let start = chained.find("[[chain]]").unwrap();
    let end = start + chained[start..].find("\n\n").unwrap();
    let independent = format!("{}{}", &chained[..start], &chained[end..]);
    let run = |toml: &str, out: &str| -> std::path::PathBuf {
        fs::write(tmp.path().join(format!("{out}.toml")), toml).unwrap();
        ok_in(
            tmp.path(),
            &[
                "run",
                &format!("{out}.toml"),
                "--decisions",
                "--no-plots",
                "--quiet",
                "--out",
                out,
            ],
        );
        tmp.path().join(out)
    };
    let with_chain = run(&chained, "chained");
    let alone = run(&independent, "alone");

    // The gateway's verdicts, per client in replay order: by arrival
    // ($msec − $request_time), then passed before rejected, then line.
    let log = fs::read_to_string(fixture.join("access.log")).unwrap();
    let mut lines: Vec<(String, i64, u8, usize, bool)> = log
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(' ').collect();
            let ms = |s: &str| (s.parse::<f64>().unwrap() * 1000.0).round() as i64;
            let rejected = f[3] == "REJECTED";
            (
                client_of(&f),
                ms(f[0]) - ms(f[1]),
                rejected as u8,
                i,
                rejected,
            )
        })
        .collect();
    lines.sort_by_key(|l| (l.0.clone(), l.1, l.2, l.3));
    let mut gateway: std::collections::BTreeMap<String, Vec<bool>> = Default::default();
    for (c, _, _, _, r) in lines {
        gateway.entry(c).or_default().push(r);
    }
    // Each limiter's decisions, per client in order.
    let per_client = |dir: &std::path::Path, limiter: &str| {
        let mut m: std::collections::BTreeMap<String, Vec<bool>> = Default::default();
        for r in decisions(dir, limiter) {
            m.entry(r[2].clone()).or_default().push(r[4] == "rejected");
        }
        m
    };
    let chain = per_client(&with_chain, "location /");
    let (_, summary) = csv_rows(&alone.join("summary.csv"));
    let members: Vec<_> = summary.iter().map(|r| per_client(&alone, &r[0])).collect();
    let mut a = Agreement {
        requests: 0,
        chain: 0,
        independent: 0,
    };
    for (client, verdicts) in &gateway {
        assert_eq!(chain[client].len(), verdicts.len(), "{name}: {client}");
        for (k, &g) in verdicts.iter().enumerate() {
            a.requests += 1;
            a.chain += (chain[client][k] == g) as usize;
            let any = members.iter().any(|m| m.get(client).is_some_and(|d| d[k]));
            a.independent += (any == g) as usize;
        }
    }
    // The join is the agreement sink's: the same count.
    let (_, counted) = csv_rows(&with_chain.join("agreement.csv"));
    let agreeing: usize = counted
        .iter()
        .filter(|r| (r[1] == "rejected") == (r[2] == "rejected"))
        .map(|r| r[3].parse::<usize>().unwrap())
        .sum();
    assert_eq!(agreeing, a.chain, "{name}");
    eprintln!(
        "{name}: {} requests; as a chain {} agree, as independent zones {}",
        a.requests, a.chain, a.independent
    );
    a
}

/// Fixture `name` has `requests` lines; replayed as a chain at least
/// `percent`% of its verdicts agree, and more than replayed zone by zone.
fn assert_chain_agrees(name: &str, client_of: ClientOf, requests: usize, percent: usize) {
    let a = fixture_agreement(name, client_of);
    assert_eq!(a.requests, requests, "{name}");
    assert!(
        a.chain * 100 / a.requests >= percent,
        "{name}: {}/{}",
        a.chain,
        a.requests
    );
    assert!(
        a.independent < a.chain,
        "{name}: independent {} ≥ chain {}",
        a.independent,
        a.chain
    );
}

/// nginx's documentation example: `limit_req` per address and per
/// `$server_name` in one location, on a real nginx 1.22 (761 requests from
/// 13 addresses). Replayed as a chain, ≥ 96% of the verdicts agree (the
/// rest is nginx's millisecond clock); the zones replayed independently
/// agree less.
#[test]
fn the_layered_nginx_fixture_agrees_as_a_chain() {
    assert_chain_agrees("nginx-layered", |f| f[4].to_string(), 761, 96);
}

/// Plans written with nginx `map`: free and pro zones keyed by X-Api-Key
/// only when X-Plan names them (compared ignoring case, as nginx does),
/// and a per-server zone; on a real nginx 1.22 (432 requests). Replayed as
/// a chain, ≥ 98% agree; the zones replayed independently agree less.
#[test]
fn the_plans_nginx_fixture_agrees_as_a_chain() {
    let client = |f: &[&str]| match f[5].to_ascii_lowercase().as_str() {
        "free" | "pro" => f[6].to_string(),
        _ => f[4].to_string(),
    };
    assert_chain_agrees("nginx-plans", client, 432, 98);
}

/// `ratesim import` of `conf` (written as `name`) in a fresh directory:
/// its status, stdout and stderr.
fn import_text(name: &str, conf: &str) -> (bool, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join(name), conf).unwrap();
    let o = ratesim()
        .current_dir(tmp.path())
        .args(["import", name])
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const PLANS_CONF: &str = "http {
    map $http_x_plan $free_key { default \"\"; free $http_x_api_key; }
    map $http_x_plan $pro_key { default \"\"; pro $http_x_api_key; }
    limit_req_zone $free_key zone=free:1m rate=2r/s;
    limit_req_zone $pro_key zone=pro:1m rate=10r/s;
    server {
        server_name api;
        location / {
            limit_req zone=free burst=2 nodelay;
            limit_req zone=pro burst=10 nodelay;
        }
    }
}
";

#[test]
fn a_map_with_a_regular_expression_is_an_import_error_naming_its_line() {
    let conf = PLANS_CONF.replace("pro $http_x_api_key; }", "~^pro $http_x_api_key; }");
    let (ok, out, err) = import_text("nginx.conf", &conf);
    assert!(!ok && out.is_empty(), "{out}");
    for needle in [
        "nginx.conf:3:",
        "map $pro_key",
        "\"~^pro\"",
        "regular expression",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // hostnames changes how nginx matches: refused the same way.
    let conf = PLANS_CONF.replace("{ default \"\"; free", "{ hostnames; default \"\"; free");
    let (ok, _, err) = import_text("nginx.conf", &conf);
    assert!(
        !ok && err.contains("nginx.conf:2:") && err.contains("hostnames"),
        "{err}"
    );
    // A map no zone is keyed by is none of the import's business.
    let conf = PLANS_CONF.replace(
        "http {\n",
        "http {\n    map $sent_http_content_type $expires { default off; ~image/ max; }\n",
    );
    let (ok, out, err) = import_text("nginx.conf", &conf);
    assert!(ok && out.contains("[[chain]]"), "{err}");
}

/// A map of `default` alone gives every request the same key: no line is
/// sorted out, and the replay runs.
#[test]
fn a_map_of_default_alone_keys_every_request() {
    let conf = "http {
    log_format main '$msec $request_time $status $remote_addr $http_x_api_key \"$request\"';
    access_log logs/access.log main;
    map $http_x_plan $key { default $http_x_api_key; }
    limit_req_zone $key zone=k:1m rate=1r/s;
    server { location / { limit_req zone=k; } }
}
";
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("nginx.conf"), conf).unwrap();
    fs::write(
        tmp.path().join("access.log"),
        "1.000 0.000 200 10.0.0.1 k1 \"GET / HTTP/1.1\"\n1.100 0.000 503 10.0.0.1 k1 \"GET / HTTP/1.1\"\n",
    )
    .unwrap();
    let toml = ok_in(
        tmp.path(),
        &["import", "nginx.conf", "--trace", "access.log"],
    );
    assert!(
        !toml.contains("only =") && !toml.contains("except ="),
        "{toml}"
    );
    fs::write(tmp.path().join("s.toml"), &toml).unwrap();
    ok_in(
        tmp.path(),
        &["run", "s.toml", "--no-plots", "--quiet", "--out", "out"],
    );
    let (_, rows) = csv_rows(&tmp.path().join("out/agreement.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
}

#[test]
fn maps_are_evaluated_from_the_logged_variable_one_source_per_value() {
    let (ok, out, err) = import_text("nginx.conf", PLANS_CONF);
    assert!(ok, "{err}");
    // Without --trace: the chain, and each zone's map in its comment.
    assert!(out.contains("[[chain]]\nname = 'location /'\nlimiters = ['all-free', 'all-pro']\nmode = \"all_or_nothing\""), "{out}");
    assert!(out.contains("key $free_key: map $free_key (nginx.conf:2), by the logged $http_x_plan: \"free\" → $http_x_api_key, otherwise → empty"), "{out}");
    // Two maps of different variables cannot be sorted by one.
    let conf = PLANS_CONF.replace("map $http_x_plan $pro_key", "map $http_x_tier $pro_key");
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("nginx.conf"), conf).unwrap();
    fs::write(tmp.path().join("access.log"), "").unwrap();
    let o = ratesim()
        .current_dir(tmp.path())
        .args([
            "import",
            "nginx.conf",
            "--trace",
            "access.log",
            "--log-format",
        ])
        .arg("$msec $status $remote_addr $http_x_plan $http_x_tier $http_x_api_key \"$request\"")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("maps of two variables ($http_x_plan and $http_x_tier)"),
        "{err}"
    );
}

#[test]
fn only_and_except_pick_lines_by_a_logged_variable_as_nginx_map_does() {
    // Six lines at distinct instants: plans free, FREE, pro, none (-).
    let log = "1.000 0.000 200 10.0.0.1 free k1 \"GET / HTTP/1.1\"
1.100 0.000 200 10.0.0.1 FREE k1 \"GET / HTTP/1.1\"
1.200 0.000 200 10.0.0.2 pro k2 \"GET / HTTP/1.1\"
1.300 0.000 200 10.0.0.3 - - \"GET / HTTP/1.1\"
1.400 0.000 200 10.0.0.3 Pro k2 \"GET / HTTP/1.1\"
1.500 0.000 200 10.0.0.4 other k3 \"GET / HTTP/1.1\"
";
    let source = |select: &str| {
        format!(
            "name = \"s\"\n[defaults]\nlimit = 10\nwindow = \"1s\"\n[[limiter]]\nalgorithm = \"sliding_log\"\n[[traffic]]\npattern = \"trace\"\nformat = \"nginx\"\npath = \"access.log\"\nlog_format = '$msec $request_time $status $remote_addr $http_x_plan $http_x_api_key \"$request\"'\n{select}\n"
        )
    };
    let attempts = |select: &str| {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("access.log"), log).unwrap();
        fs::write(tmp.path().join("s.toml"), source(select)).unwrap();
        ok_in(
            tmp.path(),
            &["run", "s.toml", "--no-plots", "--quiet", "--out", "out"],
        );
        let json = fs::read_to_string(tmp.path().join("out/summary.json")).unwrap();
        (
            column(
                &summary_row(&tmp.path().join("out"), "sliding_log"),
                "attempts",
            ),
            json,
        )
    };
    // Case does not matter (nginx's map lowercases the value).
    let (n, json) = attempts("only = { \"$http_x_plan\" = [\"free\"] }");
    assert_eq!(n, 2);
    assert!(json.contains("\"lines_not_selected\": 4"), "{json}");
    assert_eq!(
        attempts("only = { \"$http_x_plan\" = [\"free\", \"pro\"] }").0,
        4
    );
    // The default: every other value, and an empty one (logged as -).
    assert_eq!(
        attempts("except = { \"$http_x_plan\" = [\"free\", \"pro\"] }").0,
        2
    );
    assert_eq!(attempts("only = { \"$http_x_plan\" = [\"\"] }").0, 1);
    // Bad input names the field.
    let bad = |select: &str, needles: &[&str]| {
        assert_bad_scenario(&source(select), &[("access.log", log)], needles);
    };
    bad(
        "only = { \"$http_x_plan\" = [\"free\"] }\nexcept = { \"$http_x_plan\" = [\"pro\"] }",
        &["traffic[0].except", "not both"],
    );
    bad(
        "only = { \"$http_x_tier\" = [\"free\"] }",
        &["traffic[0].only", "$http_x_tier", "not in log_format"],
    );
    bad(
        "only = { \"$http_x_plan\" = [] }",
        &["traffic[0].only", "one nginx variable"],
    );
    bad("only = \"free\"", &["traffic[0].only", "expected a table"]);
}

/// envoyproxy/ratelimit counts a request in every descriptor: a domain's
/// descriptors become one `each_counts` chain, which runs.
#[test]
fn ratelimit_descriptors_of_a_domain_become_an_each_counts_chain() {
    let yaml = "domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: path
    value: /login
    rate_limit: { unit: minute, requests_per_unit: 20 }
";
    let (ok, out, err) = import_text("ratelimit.yaml", yaml);
    assert!(ok, "{err}");
    assert!(
        out.contains("[[chain]]\nname = 'domain api'\nlimiters = ['api-remote_address', 'api-path--login']\nmode = \"each_counts\""),
        "{out}"
    );
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), &out).unwrap();
    ok_in(
        tmp.path(),
        &["run", "s.toml", "--no-plots", "--quiet", "--out", "out"],
    );
    let chain = summary_row(&tmp.path().join("out"), "domain api");
    assert!(column(&chain, "attempts") > 0);
}

/// A member after the one that rejects a request's first attempt may be
/// asked about its retry only: the client still counts among the member's
/// clients, so no source's `clients_limited` exceeds its `clients`.
#[test]
fn a_member_asked_only_about_retries_counts_their_clients() {
    let body = "\n[[limiter]]\nname = \"own\"\nalgorithm = \"token_bucket\"\ncapacity = 1\nrate = \"1/1s\"\n\n[[limiter]]\nname = \"cap\"\nkey_by = \"global\"\nalgorithm = \"token_bucket\"\ncapacity = 3\nrate = \"4/1s\"\n\n[[chain]]\nname = \"c\"\nlimiters = [\"own\", \"cap\"]\nmode = \"all_or_nothing\"\n";
    let tmp = run(&scenario(body));
    let (head, rows) = csv_rows(&tmp.path().join("out/sources.csv"));
    let col = |n: &str| head.iter().position(|c| c == n).unwrap();
    assert!(rows
        .iter()
        .any(|r| r[col("limiter")] == "cap" && r[col("clients_limited")] != "0"));
    for r in &rows {
        let (clients, limited): (u64, u64) = (
            r[col("clients")].parse().unwrap(),
            r[col("clients_limited")].parse().unwrap(),
        );
        assert!(limited <= clients, "{r:?}");
    }
}

// Regression: a location quoted across lines (nginx -t accepts it) was
// copied into a comment of the scenario as it was, and its second line
// became TOML: here a real `[output]` table turning the decision log on.
#[test]
fn text_from_the_configuration_never_leaves_its_comment() {
    let conf = "http {\n limit_req_zone $binary_remote_addr zone=z1:10m rate=5r/s;\n server {\n  location \"/a\n[output]\ndecisions = true #\" { limit_req zone=z1; }\n }\n}\n";
    let (ok, toml, stderr) = import_text("inj.conf", conf);
    assert!(ok, "{stderr}");
    let value: toml::Value = toml::from_str(&toml).expect("valid TOML");
    assert!(value.get("output").is_none(), "{toml}");
    for line in toml.lines() {
        assert!(!line.starts_with("[output]"), "{toml}");
    }
    assert!(toml.contains("\\n[output]\\ndecisions = true #"), "{toml}");
    // An Envoy string with a line break, in a name and its comment.
    let yaml = "static_resources:\n  listeners:\n  - name: l\n    filter_chains:\n    - filters:\n      - name: envoy.filters.network.http_connection_manager\n        typed_config:\n          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n          http_filters:\n          - name: envoy.filters.http.local_ratelimit\n            typed_config:\n              \"@type\": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit\n              stat_prefix: \"x\\ny\"\n              token_bucket:\n                max_tokens: 5\n                tokens_per_fill: 5\n                fill_interval: 1s\n";
    let (ok, toml, stderr) = import_text("inj.yaml", yaml);
    assert!(ok, "{stderr}");
    toml::from_str::<toml::Value>(&toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_runs(&toml);
    // Two zones in such a location: a chain, named after it, that run takes.
    let chain = conf
        .replace(
            "limit_req zone=z1; }",
            "limit_req zone=z1; limit_req zone=z2; }",
        )
        .replace(
            " server {",
            " limit_req_zone $binary_remote_addr zone=z2:1m rate=50r/s;\n server {",
        );
    let (ok, toml, stderr) = import_text("inj2.conf", &chain);
    assert!(ok, "{stderr}");
    assert!(toml.contains("[[chain]]"), "{toml}");
    assert_runs(&toml);
    // An empty stat_prefix, and a rate above what a Poisson source draws:
    // the default name, and placeholder traffic at the most it may.
    let fast = yaml
        .replace("stat_prefix: \"x\\ny\"", "stat_prefix: \"\"")
        .replace("max_tokens: 5", "max_tokens: 900000")
        .replace("tokens_per_fill: 5", "tokens_per_fill: 900000");
    let (ok, toml, stderr) = import_text("fast.yaml", &fast);
    assert!(ok, "{stderr}");
    assert!(toml.contains("name = 'local_rate_limit'"), "{toml}");
    assert!(toml.contains("rate = \"1000000/1s\""), "{toml}");
    assert_runs(&toml);
}

/// `ratesim validate` takes the imported scenario.
fn assert_runs(toml: &str) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("i.toml"), toml).unwrap();
    let o = ratesim()
        .current_dir(tmp.path())
        .args(["validate", "i.toml"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{toml}",
        String::from_utf8_lossy(&o.stderr)
    );
}

// Regression: counts above ratesim's 10^12 were imported as they were, and
// run refused the scenario; a policy window past 10^9 s likewise.
#[test]
fn counts_past_ratesims_range_are_refused_at_import_naming_the_line() {
    let nginx = |rate: &str, burst: &str| {
        format!("http {{\n limit_req_zone $binary_remote_addr zone=z:1m rate={rate};\n server {{\n  location / {{ limit_req zone=z burst={burst}; }}\n }}\n}}\n")
    };
    let yaml = |n: &str| {
        format!("domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: {{ unit: second, requests_per_unit: {n} }}\n")
    };
    for (name, conf, says) in [
        (
            "a.conf",
            nginx("1000000000001r/s", "5"),
            "a.conf:2: rate=\"1000000000001r/s\" — at most 10^12",
        ),
        (
            "b.conf",
            nginx("5r/s", "1000000000001"),
            "b.conf:4: burst=\"1000000000001\" — expected a whole number up to 10^12",
        ),
        (
            "c.yaml",
            yaml("1000000000001"),
            "c.yaml:4: requests_per_unit: expected a whole number from 1 to 10^12",
        ),
    ] {
        let (ok, toml, stderr) = import_text(name, &conf);
        assert!(!ok && toml.is_empty(), "{name}: {toml}");
        assert!(stderr.contains(says), "{name}: {stderr}");
    }
    // At the edge, 10^12, the scenario runs.
    let (ok, toml, stderr) = import_text("d.yaml", &yaml("1000000000000"));
    assert!(ok, "{stderr}");
    assert_runs(&toml);
    // An Envoy bucket refilling 2^32 tokens one a second: its policy is
    // not 2^32 per 136 years (past 10^9 s) but one per second.
    let envoy = "static_resources:\n  listeners:\n  - name: l\n    filter_chains:\n    - filters:\n      - name: envoy.filters.network.http_connection_manager\n        typed_config:\n          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n          http_filters:\n          - name: envoy.filters.http.local_ratelimit\n            typed_config:\n              \"@type\": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit\n              stat_prefix: slow\n              token_bucket:\n                max_tokens: 4294967296\n                tokens_per_fill: 1\n                fill_interval: 1s\n";
    let (ok, toml, stderr) = import_text("e.yaml", envoy);
    assert!(ok, "{stderr}");
    assert!(toml.contains("limit = 1\nwindow = \"1s\""), "{toml}");
    assert_runs(&toml);
}

// nginx takes `delay=` above `burst=` (none waits then, as with nodelay)
// and refuses one zone asked twice in a block; import did the reverse.
#[test]
fn import_takes_what_nginx_takes_and_refuses_what_it_refuses() {
    let conf = |lines: &str| {
        format!("http {{\n limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;\n server {{\n  location / {{ {lines} }}\n }}\n}}\n")
    };
    let (ok, toml, stderr) = import_text("a.conf", &conf("limit_req zone=z burst=2 delay=3;"));
    assert!(ok, "{stderr}");
    assert!(toml.contains("queue = 2\ndelay = 2\n"), "{toml}");
    assert!(
        toml.contains("its delay= is above burst=, so nothing waits"),
        "{toml}"
    );
    assert_runs(&toml);
    let (ok, _, stderr) = import_text(
        "b.conf",
        &conf("limit_req zone=z; limit_req zone=z burst=5;"),
    );
    assert!(!ok);
    assert!(
        stderr.contains("b.conf:4: ")
            && stderr.contains("zone z is asked twice here; nginx -t refuses it"),
        "{stderr}"
    );
}
