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
            let strip = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
                rows.into_iter()
                    .map(|mut r| {
                        r.remove(1);
                        r
                    })
                    .collect()
            };
            assert_eq!(strip(chain), strip(alone), "algorithm {i}, key_by {key_by}");
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
    let deployed = two.replace(
        "name = \"a\"\nalgorithm = \"token_bucket\"\n",
        "name = \"a\"\nalgorithm = \"token_bucket\"\ndeployment = { instances = 3 }\n",
    );
    assert_bad_scenario(
        &scenario(&format!(
            "{deployed}\n[[chain]]\nname = \"c\"\nlimiters = [\"a\"]\nmode = \"all_or_nothing\"\n"
        )),
        &[],
        &["chain[0].limiters", "\"a\"", "deployment"],
    );
}
