//! `ratesim run --keys K/N` end to end (docs/semantics.md §12): the N
//! partitions of a run decide every attempt exactly as the whole run does
//! (1), what cannot be partitioned is refused naming why (2), `auto` takes
//! K/N from the job array (3), and `ratesim merge` joins the partitions
//! into the whole run's directory byte for byte (4).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Poisson clients and NAT users behind shared addresses, every limiter
/// keyed by address, clients that retry.
const NAT: &str = r#"name = "pnat"
seed = 11
duration = "6s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"
key_by = "ip"

[[limiter]]
algorithm = "sliding_log"
key_by = "ip"

[[traffic]]
pattern = "nat"
users = 60
ips = 7
rate = "2/1s"
heavy_share = 0.1
heavy_rate = "30/1s"
retry = { policy = "exponential", base = "100ms", factor = 2, cap = "1s", jitter = "full", max_attempts = 4 }

[[traffic]]
pattern = "poisson"
clients = 9
rate = "12/1s"
retry = { policy = "retry_after", max_attempts = 3 }
"#;

/// Gateway instances routed by client, one deciding locally, one through a
/// shared store that fails now and then, one with an over-limit cache.
const DEPLOYED: &str = r#"name = "pdep"
seed = 5
duration = "5s"

[defaults]
limit = 10
window = "1s"

[deployment]
instances = 3
routing = "hash_client"

[[limiter]]
name = "local"
algorithm = "token_bucket"

[[limiter]]
name = "store"
algorithm = "token_bucket"
deployment = { scope = "global", store_latency = { median = "1ms", p99 = "5ms" }, timeout = "4ms", failure_rate = 0.05, on_store_failure = "fail_closed" }

[[limiter]]
name = "cached"
algorithm = "fixed_window"
deployment = { scope = "global", store_latency = "2ms", cache_over_limit = true, routing = "random" }

[[traffic]]
pattern = "poisson"
clients = 12
rate = "15/1s"
retry = { policy = "immediate", max_attempts = 3 }
"#;

/// FNV-1a 64 of `text`, as docs/semantics.md §12 defines the partition.
fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn write_scenario(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("s.toml");
    fs::write(&path, text).unwrap();
    path
}

fn run(scenario: &Path, out: &Path, extra: &[&str]) {
    ratesim()
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(["--decisions", "--quiet", "--no-plots", "--no-html"])
        .args(extra)
        .assert()
        .success();
}

/// The rows of `decisions.csv`, without its header.
fn decisions(dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(dir.join("decisions.csv")).unwrap();
    text.lines().skip(1).map(str::to_string).collect()
}

/// `column` of `summary.csv`, by limiter.
fn column(dir: &Path, column: &str) -> BTreeMap<String, u64> {
    let text = fs::read_to_string(dir.join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == column).unwrap();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[0].to_string(), cells[i].parse().unwrap())
        })
        .collect()
}

/// Runs `scenario` whole and as partitions 1..n of n, and checks that the
/// partitions together made every decision the whole run made, each in
/// the partition of its key, and no other.
fn assert_partitions_are_the_whole(scenario: &Path, tmp: &Path, n: u64) {
    let whole = tmp.join("whole");
    run(scenario, &whole, &[]);
    let mut all = Vec::new();
    let mut sums: BTreeMap<String, BTreeMap<&str, u64>> = BTreeMap::new();
    for k in 1..=n {
        let part = tmp.join(format!("part{k}"));
        run(scenario, &part, &["--keys", &format!("{k}/{n}")]);
        let rows = decisions(&part);
        for row in &rows {
            let key = row.split(',').nth(2).unwrap();
            assert_eq!(fnv1a(key) % n, k - 1, "{row} in partition {k}/{n}");
        }
        assert!(!rows.is_empty(), "partition {k}/{n} decided nothing");
        let run_json: serde_json::Value =
            serde_json::from_slice(&fs::read(part.join("run.json")).unwrap()).unwrap();
        assert_eq!(run_json["keys"]["k"], k, "run.json of {k}/{n}");
        assert_eq!(run_json["keys"]["n"], n);
        all.extend(rows);
        for c in ["attempts", "admitted", "delayed", "rejected", "keys"] {
            for (limiter, v) in column(&part, c) {
                *sums.entry(limiter).or_default().entry(c).or_default() += v;
            }
        }
    }
    let whole_json = fs::read_to_string(whole.join("run.json")).unwrap();
    assert!(!whole_json.contains("\"keys\""), "{whole_json}");
    let mut expected = decisions(&whole);
    expected.sort();
    all.sort();
    assert_eq!(all.len(), expected.len());
    assert!(
        all == expected,
        "the partitions' decisions are not the whole run's"
    );
    for c in ["attempts", "admitted", "delayed", "rejected", "keys"] {
        for (limiter, v) in column(&whole, c) {
            assert_eq!(sums[&limiter][c], v, "{limiter} {c}");
        }
    }
}

// ---------------------------------------------------------------------------
// 1. the partitions are the whole run
// ---------------------------------------------------------------------------

#[test]
fn partitions_of_nat_traffic_with_retries_decide_as_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), NAT);
    assert_partitions_are_the_whole(&s, tmp.path(), 3);
}

#[test]
fn partitions_of_an_access_log_replay_decide_as_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The shipped replay without its global limiter, keyed by address.
    let log = manifest_dir().join("scenarios/traces/access.log");
    let text = fs::read_to_string(manifest_dir().join("scenarios/access-log.toml")).unwrap();
    let start = text.find("[[limiter]]\nname = \"envoy-local\"").unwrap();
    let end = text.find("# The access log, replayed").unwrap();
    let text = format!("{}{}", &text[..start], &text[end..]).replace(
        "path = \"traces/access.log\"",
        &format!("path = {:?}", log.to_str().unwrap()),
    );
    let s = write_scenario(tmp.path(), &text);
    assert_partitions_are_the_whole(&s, tmp.path(), 4);
}

#[test]
fn partitions_of_a_deployment_decide_as_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), DEPLOYED);
    assert_partitions_are_the_whole(&s, tmp.path(), 2);
}

#[test]
fn one_partition_of_one_is_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), NAT);
    run(&s, &tmp.path().join("a"), &[]);
    run(&s, &tmp.path().join("b"), &["--keys", "1/1"]);
    for f in [
        "summary.csv",
        "summary.json",
        "timeseries.csv",
        "decisions.csv",
    ] {
        assert_same_file(&tmp.path().join("a").join(f), &tmp.path().join("b").join(f));
    }
}

// ---------------------------------------------------------------------------
// 2. refusals
// ---------------------------------------------------------------------------

/// `run SCENARIO --keys K/N` is bad input (exit 2) saying each of `says`,
/// and writes nothing.
fn refused(text: &str, keys: &str, says: &[&str]) {
    refused_with(&[], text, keys, says);
}

/// [`refused`], with `files` (name, text) beside the scenario.
fn refused_with(files: &[(&str, &str)], text: &str, keys: &str, says: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, body) in files {
        fs::write(tmp.path().join(name), body).unwrap();
    }
    let s = write_scenario(tmp.path(), text);
    let out = tmp.path().join("out");
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&s)
            .arg("--out")
            .arg(&out)
            .args(["--keys", keys, "--quiet"]),
        says,
    );
    assert!(!out.exists(), "a refused run wrote {}", out.display());
}

#[test]
fn what_cannot_be_partitioned_is_refused_naming_why() {
    let global = BASE.replace(
        "algorithm = \"token_bucket\"",
        "name = \"edge\"\nalgorithm = \"token_bucket\"\nkey_by = \"global\"",
    );
    refused(
        &global,
        "1/2",
        &["--keys 1/2", "limiter \"edge\"", "keyed \"global\""],
    );
    let mixed =
        format!("{BASE}\n[[limiter]]\nname = \"per-ip\"\nalgorithm = \"gcra\"\nkey_by = \"ip\"\n");
    refused(
        &mixed,
        "2/2",
        &["token_bucket", "is keyed by client", "\"per-ip\" by ip"],
    );
    let round_robin = BASE.replace("[[limiter]]", "[deployment]\ninstances = 2\n\n[[limiter]]");
    refused(
        &round_robin,
        "1/3",
        &["round robin over 2 instances", "hash_client"],
    );
    // Regression: closed-loop clients panicked a partition (exit 101).
    let closed = BASE.replace(
        "pattern = \"steady\"\nrate = \"5/1s\"",
        "name = \"shoppers\"\npattern = \"closed\"\nthink = \"const(100ms)\"",
    );
    assert!(closed.contains("closed"));
    refused(
        &closed,
        "1/1",
        &[
            "--keys 1/1",
            "traffic \"shoppers\" is closed-loop",
            "run it whole",
        ],
    );
    for (keys, says) in [
        ("0/2", "K must be from 1 to N"),
        ("3/2", "K must be from 1 to N"),
        ("x", "expected K/N"),
        ("1/y", "N is not a whole number"),
    ] {
        refused(BASE, keys, &["--keys", says]);
    }
}

/// A recorded client at two addresses, keyed by address: its attempts
/// would fall in two partitions (its counts, its per-client shadow), so
/// the run is refused, naming the client and both addresses.
#[test]
fn a_client_at_two_addresses_is_refused_in_a_partition_by_address() {
    refused_with(
        &[(
            "t.csv",
            "time,client,ip\n0.1,dave,10.0.0.1\n0.2,erin,10.0.0.9\n0.3,dave,10.0.0.2\n",
        )],
        "name = \"two\"\nduration = \"1s\"\n[defaults]\nlimit = 1\nwindow = \"1s\"\n[[limiter]]\nalgorithm = \"fixed_window\"\nkey_by = \"ip\"\n[[traffic]]\npattern = \"trace\"\npath = \"t.csv\"\n",
        "2/2",
        &[
            "client \"dave\"",
            "\"10.0.0.1\" and \"10.0.0.2\"",
            "key by client",
        ],
    );
}

// ---------------------------------------------------------------------------
// 3. `auto`: K/N from the job array
// ---------------------------------------------------------------------------

const JOB_VARS: [&str; 5] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_COUNT",
    "JOB_COMPLETION_INDEX",
    "RATESIM_SHARD_COUNT",
];

/// `ratesim` with none of the job array's variables but `vars`.
fn in_job(vars: &[(&str, &str)]) -> assert_cmd::Command {
    let mut cmd = ratesim();
    for v in JOB_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd
}

#[test]
fn keys_auto_is_the_slurm_task_or_the_indexed_jobs_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), NAT);
    run(&s, &tmp.path().join("given"), &["--keys", "2/3"]);
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "11"),
        ("SLURM_ARRAY_TASK_MIN", "10"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
    ];
    let kube = [("JOB_COMPLETION_INDEX", "1"), ("RATESIM_SHARD_COUNT", "3")];
    for (name, vars) in [("slurm", &slurm[..]), ("kube", &kube[..])] {
        let out = tmp.path().join(name);
        let assert = in_job(vars)
            .arg("run")
            .arg(&s)
            .arg("--out")
            .arg(&out)
            .args(["--keys", "auto", "--decisions", "--no-plots", "--no-html"])
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(stderr.contains("keys 2/3 (from the "), "{stderr}");
        assert_eq!(decisions(&out), decisions(&tmp.path().join("given")));
    }
    let assert = in_job(&[])
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(tmp.path().join("none"))
        .args(["--keys", "auto", "--quiet"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    for v in JOB_VARS {
        assert!(stderr.contains(v), "{stderr} does not name {v}");
    }
}

#[test]
fn sweep_shard_auto_is_the_shard_of_the_job_array() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), BASE);
    let sweep = |out: &str, shard: &str, vars: &[(&str, &str)]| {
        in_job(vars)
            .arg("sweep")
            .arg(&s)
            .arg("--out")
            .arg(tmp.path().join(out))
            .args(["--vary", "defaults.limit=5,10,20", "--shard", shard])
            .args(["--quiet", "--no-plots"])
            .assert()
            .success();
        fs::read(tmp.path().join(out).join("sweep.csv")).unwrap()
    };
    let given = sweep("given", "3/3", &[]);
    let kube = sweep(
        "kube",
        "auto",
        &[("JOB_COMPLETION_INDEX", "2"), ("RATESIM_SHARD_COUNT", "3")],
    );
    assert_eq!(given, kube);
    in_job(&[])
        .arg("sweep")
        .arg(&s)
        .args([
            "--vary",
            "defaults.limit=5,10",
            "--shard",
            "auto",
            "--quiet",
        ])
        .assert()
        .code(2);
}

// ---------------------------------------------------------------------------
// 4. `ratesim merge`: the partitions joined are the whole run
// ---------------------------------------------------------------------------

/// Runs `scenario` whole into `tmp/run`, moves that aside, runs it as
/// partitions 1..n of n, merges them into `tmp/run` (so that run.json's
/// --out is the same), and checks that every file of the merged directory
/// is the whole run's, byte for byte — the CSVs, the JSON, summary.md, and
/// with `extra` asking for them, the charts and report.html — and that no
/// partition's own file is left in it.
fn assert_merge_is_the_whole(scenario: &Path, tmp: &Path, n: u64, extra: &[&str]) {
    let out = tmp.join("run");
    let whole = tmp.join("whole");
    let go = |out: &Path, more: &[&str]| {
        ratesim()
            .arg("run")
            .arg(scenario)
            .arg("--out")
            .arg(out)
            .arg("--quiet")
            .args(extra)
            .args(more)
            .assert()
            .success();
    };
    go(&out, &[]);
    fs::rename(&out, &whole).unwrap();
    let mut parts = Vec::new();
    // Given in an order other than K's.
    for k in (1..=n).rev() {
        let part = tmp.join(format!("part{k}"));
        go(&part, &["--keys", &format!("{k}/{n}")]);
        assert!(part.join("partition.json").is_file());
        parts.push(part);
    }
    let o = ratesim()
        .arg("merge")
        .args(&parts)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains(&format!("merged {n} partitions")), "{said}");
    assert_eq!(entries(&whole), entries(&out));
    for f in entries(&whole) {
        assert_same_file(&whole.join(&f), &out.join(&f));
    }
    assert!(entries(&out).iter().all(|f| !f.starts_with("partition")));
}

#[test]
fn merged_partitions_of_nat_traffic_with_retries_are_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), NAT);
    assert_merge_is_the_whole(&s, tmp.path(), 3, &["--decisions=headers", "--no-plots"]);
}

#[test]
fn merged_partitions_of_a_deployment_are_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), DEPLOYED);
    assert_merge_is_the_whole(&s, tmp.path(), 2, &["--decisions"]);
}

/// A chain of a token bucket, a sliding log (whose keys hold items) and a
/// shaper's delays: state that grows and shrinks with items, passes
/// released later.
#[test]
fn merged_partitions_of_a_chain_with_a_log_and_a_shaper_are_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{}{}",
        NAT.replace(
            "[[limiter]]\nalgorithm = \"token_bucket\"\nkey_by = \"ip\"\n",
            "[[limiter]]\nname = \"tb\"\nalgorithm = \"token_bucket\"\nkey_by = \"ip\"\n\n[[limiter]]\nname = \"shaper\"\nalgorithm = \"leaky_bucket\"\nrate = \"3/1s\"\nqueue = 5\nkey_by = \"ip\"\n",
        )
        .replace(
            "[[limiter]]\nalgorithm = \"sliding_log\"",
            "[[limiter]]\nname = \"log\"\nalgorithm = \"sliding_log\""
        ),
        "\n[[chain]]\nname = \"both\"\nlimiters = [\"tb\", \"log\"]\nmode = \"each_counts\"\n"
    );
    let s = write_scenario(tmp.path(), &text);
    assert_merge_is_the_whole(
        &s,
        tmp.path(),
        4,
        &["--decisions", "--no-plots", "--no-html"],
    );
}

/// nginx's own log replayed through its imported config: agreement.csv
/// and disagreements.csv too; the charts and report.html as well.
#[test]
fn merged_partitions_of_an_nginx_replay_with_verdicts_are_the_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = crate::accesslog::imported_fixture(tmp.path());
    assert_merge_is_the_whole(&s, tmp.path(), 2, &["--decisions"]);
    assert!(tmp.path().join("run/disagreements.csv").is_file());
}

/// A small scenario drawn from `seed`: one of eight algorithms keyed by
/// client or address, NAT users and Poisson clients that retry (by
/// Retry-After, with jittered backoff, or at once), on one instance, two
/// hash-routed ones, or a shared store.
fn drawn_scenario(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut pick = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let algorithm = [
        "algorithm = \"token_bucket\"\ncapacity = 3\nrate = \"2/1s\"",
        "algorithm = \"gcra\"\nrate = \"2/1s\"\nburst = 3",
        "algorithm = \"leaky_bucket\"\nrate = \"2/1s\"\nqueue = 3",
        "algorithm = \"fixed_window\"\nlimit = 3\nwindow = \"1s\"",
        "algorithm = \"sliding_log\"\nlimit = 3\nwindow = \"1s\"",
        "algorithm = \"sliding_counter\"\nlimit = 3\nwindow = \"1s\"",
        "algorithm = \"interval_bucket\"\nmax_tokens = 3\ntokens_per_fill = 1\nfill_interval = \"500ms\"",
        "algorithm = \"smooth_bursty\"\nrate = \"2/1s\"\ncapacity = 3",
    ][pick(8) as usize];
    let key_by = ["client", "ip"][pick(2) as usize];
    let retry = [
        "{ policy = \"retry_after\", max_attempts = 4 }",
        "{ policy = \"exponential\", base = \"100ms\", factor = 2, cap = \"1s\", jitter = \"full\", max_attempts = 4 }",
        "{ policy = \"immediate\", max_attempts = 3 }",
    ];
    let deployment = [
        "",
        "deployment = { instances = 2, routing = \"hash_client\" }\n",
        "deployment = { instances = 2, routing = \"random\", scope = \"global\", store_latency = \"1ms\" }\n",
    ][pick(3) as usize];
    let (r1, r2) = (retry[pick(3) as usize], retry[pick(3) as usize]);
    format!(
        "name = \"drawn\"\nseed = {seed}\nduration = \"4s\"\n\n[defaults]\nlimit = 3\nwindow = \"1s\"\n\n\
         [[limiter]]\n{algorithm}\nkey_by = \"{key_by}\"\n{deployment}\n\
         [[traffic]]\npattern = \"nat\"\nusers = 20\nips = 5\nrate = \"2/1s\"\nretry = {r1}\n\n\
         [[traffic]]\npattern = \"poisson\"\nclients = 6\nrate = \"5/1s\"\nretry = {r2}\n"
    )
}

/// Scenarios drawn at random (see [`drawn_scenario`]), each split into 2,
/// 3 or 5 partitions and merged: the whole run, file for file.
#[test]
fn merged_partitions_of_drawn_scenarios_are_the_whole_run() {
    for seed in 1..=12u64 {
        let tmp = tempfile::tempdir().unwrap();
        let text = drawn_scenario(seed);
        let s = write_scenario(tmp.path(), &text);
        let n = [2, 3, 5][seed as usize % 3];
        assert_merge_is_the_whole(
            &s,
            tmp.path(),
            n,
            &["--decisions", "--no-plots", "--no-html"],
        );
    }
}

/// `merge DIRS --out OUT`: bad input (exit 2) saying each of `says`; OUT
/// not written.
fn merge_refused(dirs: &[PathBuf], out: &Path, says: &[&str]) {
    assert_input_error(
        ratesim().arg("merge").args(dirs).arg("--out").arg(out),
        says,
    );
}

#[test]
fn merge_refuses_what_is_not_one_runs_partitions_each_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), BASE);
    let p = |name: &str, keys: &str, more: &[&str]| {
        let dir = tmp.path().join(name);
        ratesim()
            .arg("run")
            .arg(&s)
            .arg("--out")
            .arg(&dir)
            .args(["--quiet", "--no-plots", "--no-html", "--keys", keys])
            .args(more)
            .assert()
            .success();
        dir
    };
    let (a, b, c) = (p("a", "1/3", &[]), p("b", "2/3", &[]), p("c", "3/3", &[]));
    let b_seed = p("b-seed", "2/3", &["--seed", "9"]);
    let b_of_2 = p("b-of-2", "2/2", &[]);
    let out = tmp.path().join("out");
    merge_refused(
        &[a.clone(), b.clone()],
        &out,
        &["partition 3/3", "is missing"],
    );
    merge_refused(
        &[a.clone(), b.clone(), b.clone(), c.clone()],
        &out,
        &["2/3 is given twice"],
    );
    merge_refused(
        &[a.clone(), b_seed, c.clone()],
        &out,
        &["different runs", "seeds"],
    );
    merge_refused(&[a.clone(), b_of_2, c.clone()], &out, &["partition counts"]);
    let whole = tmp.path().join("whole");
    run(&s, &whole, &[]);
    merge_refused(
        std::slice::from_ref(&whole),
        &out,
        &["not a key partition's run directory"],
    );
    assert!(!out.exists());
    // Never over one of its own inputs.
    merge_refused(
        &[a.clone(), b.clone(), c.clone()],
        &a,
        &[": is \"", "which this run reads"],
    );
    assert!(a.join("partition.json").is_file());
}
