//! `run --set` and `ratesim sweep` end to end (docs/semantics.md §7): overrides equal
//! editing the file (1), the grid and `sweep.csv` (2), charts (3), the
//! recommendation (4), shards and `sweep merge` (5).

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A small scenario: two limiters, a few Poisson clients over a few
/// seconds (a sweep point takes milliseconds).
const SMALL: &str = r#"name = "sw"
seed = 3
duration = "4s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[limiter]]
algorithm = "sliding_log"

[[traffic]]
pattern = "poisson"
clients = 4
rate = "10/1s"
"#;

/// `text` written as `<tmp>/<sub>/sw.toml`.
fn scenario_in(tmp: &Path, sub: &str, text: &str) -> PathBuf {
    let dir = tmp.join(sub);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sw.toml");
    fs::write(&path, text).unwrap();
    path
}

/// Asserts two directories hold the same files, byte for byte.
fn assert_same_dir(a: &Path, b: &Path) {
    assert_eq!(entries(a), entries(b), "{} vs {}", a.display(), b.display());
    for f in entries(a) {
        assert_same_file(&a.join(&f), &b.join(&f));
    }
}

fn sweep(scenario: &Path, out: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    ratesim()
        .arg("sweep")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(args)
        .assert()
}

// ---------------------------------------------------------------------------
// 1. run --set
// ---------------------------------------------------------------------------

#[test]
fn set_is_the_same_as_editing_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let original = scenario_in(tmp.path(), "a", SMALL);
    let edited_text = SMALL
        .replacen("limit = 10", "limit = 7", 1)
        .replacen(
            "algorithm = \"sliding_log\"",
            "algorithm = \"sliding_log\"\nlimit = 3",
            1,
        )
        .replacen("clients = 4", "clients = 6", 1);
    let edited = scenario_in(tmp.path(), "b", &edited_text);
    let (out_set, out_edit) = (tmp.path().join("set"), tmp.path().join("edit"));
    ratesim()
        .arg("run")
        .arg(&original)
        .args([
            "--quiet",
            "--set",
            "defaults.limit=7",
            "--set",
            "limiter[1].limit=3",
            "--set",
            "traffic[0].clients=6",
            "--out",
        ])
        .arg(&out_set)
        .assert()
        .success();
    ratesim()
        .arg("run")
        .arg(&edited)
        .args(["--quiet", "--out"])
        .arg(&out_edit)
        .assert()
        .success();
    // run.json and report.html record the command line and the text as
    // read, which differ by design, and so does the marker, which lists
    // their bytes; every result is the same.
    for dir in [&out_set, &out_edit] {
        for f in ["run.json", "report.html", ".ratesim-run"] {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
    }
    assert_same_dir(&out_set, &out_edit);
    let json = read_text(&out_set.join("summary.json"));
    assert!(json.contains("\"limit\": 7"), "the echo shows the override");
}

#[test]
fn set_refuses_unknown_paths_and_wrong_types_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("out");
    for (set, needle) in [
        ("limiter[0].capacityy=3", "limiter[0].capacityy"),
        ("limiter[5].capacity=3", "limiter[5]"),
        ("defaults.limit=abc", "defaults.limit"),
        ("defaults.limit=0", "defaults.limit"),
        ("traffic[0].rate=fast", "traffic[0].rate"),
        ("nothing", "PATH=VALUE"),
    ] {
        assert_input_error(
            ratesim()
                .arg("run")
                .arg(&s)
                .args(["--quiet", "--set", set, "--out"])
                .arg(&out),
            &[needle],
        );
        assert_no_output(&out);
    }
}

#[test]
fn run_checks_a_sweep_table_but_runs_the_file_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = scenario_in(tmp.path(), "a", SMALL);
    let with = scenario_in(
        tmp.path(),
        "b",
        &format!(
            "{SMALL}\n[sweep]\nvary = [\"defaults.limit=5,20\"]\nminimize = \"defaults.limit\"\n"
        ),
    );
    let (a, b) = (tmp.path().join("ra"), tmp.path().join("rb"));
    for (s, o) in [(&plain, &a), (&with, &b)] {
        ratesim()
            .arg("run")
            .arg(s)
            .args(["--quiet", "--no-plots", "--out"])
            .arg(o)
            .assert()
            .success();
    }
    assert_same_file(&a.join("summary.csv"), &b.join("summary.csv"));
}

// Issue 23 item 7: an unknown key in `[sweep]` (`delay = -inf`) was
// accepted by `validate` and `run`, and only `sweep` refused it.
#[test]
fn validate_and_run_check_the_sweep_table_as_sweep_does() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str])] = &[
        (
            "delay = -inf",
            &["sw.toml: sweep: unknown field `delay`", "vary"],
        ),
        (
            "vary = \"defaults.limit=5\"",
            &["sw.toml: sweep:", "sequence"],
        ),
        (
            "vary = [\"defaults.limit=0,5\"]",
            &["sw.toml: [sweep] vary defaults.limit=0,5: value \"0\": defaults.limit: 0"],
        ),
        (
            "vary = [\"limiter[zzz].capacity=1\"]",
            &[
                "[sweep] vary limiter[zzz].capacity=1",
                "no limiter is called \"zzz\"",
            ],
        ),
        (
            "vary = [\"defaults.limit=5\", \"defaults.limit=6\"]",
            &["[sweep] vary defaults.limit=6", "varied twice"],
        ),
        ("require = [\"nope<=1\"]", &["[sweep] table", "nope"]),
        ("metric = \"nope\"", &["[sweep] table", "nope"]),
    ];
    for (i, (table, needles)) in cases.iter().enumerate() {
        let s = scenario_in(
            tmp.path(),
            &format!("case{i}"),
            &format!("{SMALL}\n[sweep]\n{table}\n"),
        );
        assert_input_error(ratesim().arg("validate").arg(&s), needles);
        let out = tmp.path().join(format!("out{i}"));
        assert_input_error(ratesim().arg("run").arg(&s).arg("--out").arg(&out), needles);
        assert_no_output(&out);
        let mut cmd = ratesim();
        cmd.arg("sweep").arg(&s).arg("--out").arg(&out);
        // sweep refuses them the same way (the last two tables have
        // nothing to vary, which sweep says first).
        if i < 5 {
            assert_input_error(&mut cmd, needles);
        }
    }
}

// Issue 23 item 7: `--set nosuch=1` was reported as the file's error
// (`s.toml: nosuch: unknown field`).
#[test]
fn errors_of_set_and_vary_name_the_argument_as_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("out");
    let runs: &[(&str, &str)] = &[
        ("nosuch=1", "error: --set nosuch=1: nosuch: unknown field"),
        (
            "limiter[0].rate=abc",
            "error: --set limiter[0].rate=abc: limiter[0].rate: \"abc\"",
        ),
        (
            "limiter[token_bucket].rate=abc",
            "error: --set limiter[token_bucket].rate=abc: limiter[0].rate: \"abc\"",
        ),
        (
            "traffic[x].rate=1",
            "error: --set traffic[x].rate=1: index [x]",
        ),
    ];
    for (set, start) in runs {
        let stderr = assert_input_error(
            ratesim()
                .arg("run")
                .arg(&s)
                .args(["--set", set, "--out"])
                .arg(&out),
            &[],
        );
        assert!(stderr.starts_with(start), "{stderr}");
        assert!(
            !stderr.contains("sw.toml"),
            "not the file's error: {stderr}"
        );
        assert_no_output(&out);
    }
    let sweeps: &[(&[&str], &str)] = &[
        (
            &["--set", "nosuch=1", "--vary", "defaults.limit=5,6"],
            "error: --set nosuch=1: nosuch: unknown field",
        ),
        (
            &["--vary", "defaults.limit=0..=10:5"],
            "error: --vary defaults.limit=0..=10:5: value \"0\": defaults.limit: 0",
        ),
        (
            &["--vary", "nosuch=1,2"],
            "error: --vary nosuch=1,2: value \"1\": nosuch: unknown field",
        ),
    ];
    for (args, start) in sweeps {
        let stderr = assert_input_error(
            ratesim()
                .arg("sweep")
                .arg(&s)
                .args(*args)
                .arg("--out")
                .arg(&out),
            &[],
        );
        assert!(stderr.starts_with(start), "{stderr}");
        assert!(
            !stderr.contains("sw.toml"),
            "not the file's error: {stderr}"
        );
        assert_no_output(&out);
    }
    // An error of the file itself is still the file's.
    let broken = scenario_in(tmp.path(), "b", &SMALL.replacen("seed = 3", "seed = -3", 1));
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&broken)
            .args(["--set", "defaults.limit=5", "--out"])
            .arg(&out),
        &["sw.toml: seed"],
    );
}

// ---------------------------------------------------------------------------
// 2. sweep: the grid and sweep.csv
// ---------------------------------------------------------------------------

#[test]
fn each_points_rows_are_the_summary_rows_of_run_with_set() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("sweep");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.limit=5,12",
            "--vary",
            "limiter[0].capacity=2..=20:9",
            "--quiet",
            "--no-plots",
        ],
    )
    .success();
    let text = read_text(&out.join("sweep.csv"));
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "defaults.limit,limiter[0].capacity,{}",
            summary_header(tmp.path())
        )
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2 * 3 * 2, "points × limiters");
    // Point order (the last --vary fastest), then limiter order.
    let expected_points = [
        ("5", "2"),
        ("5", "11"),
        ("5", "20"),
        ("12", "2"),
        ("12", "11"),
        ("12", "20"),
    ];
    for (p, (limit, cap)) in expected_points.iter().enumerate() {
        for (l, name) in ["token_bucket", "sliding_log"].iter().enumerate() {
            let row = rows[p * 2 + l];
            assert!(
                row.starts_with(&format!("{limit},{cap},{name},")),
                "row {}: {row}",
                p * 2 + l
            );
        }
    }
    // A few points against `run --set`, byte for byte.
    for p in [0usize, 4, 5] {
        let (limit, cap) = expected_points[p];
        let run = tmp.path().join(format!("run{p}"));
        ratesim()
            .arg("run")
            .arg(&s)
            .args([
                "--quiet",
                "--no-plots",
                "--set",
                &format!("defaults.limit={limit}"),
                "--set",
                &format!("limiter[0].capacity={cap}"),
                "--out",
            ])
            .arg(&run)
            .assert()
            .success();
        // Each summary.csv row, then the limiter's sources.csv cells
        // from `clients` on (docs/semantics.md §9; SMALL has one source).
        let summary = read_text(&run.join("summary.csv"));
        let sources = read_text(&run.join("sources.csv"));
        let run_rows: Vec<String> = summary
            .lines()
            .skip(1)
            .zip(sources.lines().skip(1))
            .map(|(r, s)| {
                let cells = s.splitn(3, ',').nth(2).unwrap();
                format!("{limit},{cap},{r},{cells}")
            })
            .collect();
        assert_eq!(rows[p * 2..p * 2 + 2], run_rows[..], "point {p}");
    }
}

/// Points that differ only in their limiters and defaults share one
/// generation of their arrivals (src/sweep: a batch); with retries (events
/// of each limiter's own) and two sources, each point's rows are still
/// those of `run --set` of that point, byte for byte — and a point whose
/// traffic differs runs on its own, the same.
#[test]
fn points_that_share_their_arrivals_are_each_the_run_of_that_point() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{SMALL}retry = {{ policy = \"retry_after\", max_attempts = 3 }}\n\n[[traffic]]\npattern = \"nat\"\nusers = 12\nips = 3\nrate = \"3/1s\"\nretry = {{ policy = \"exponential\", base = \"50ms\", factor = 2, cap = \"1s\", jitter = \"full\", max_attempts = 4 }}\n"
    );
    let s = scenario_in(tmp.path(), "a", &text);
    let out = tmp.path().join("sweep");
    let points = [
        ("4", "3", "4"),
        ("4", "9", "4"),
        ("8", "3", "4"),
        ("8", "9", "7"),
    ];
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "traffic[0].clients=4,7",
            "--vary",
            "defaults.limit=4,8",
            "--vary",
            "limiter[0].capacity=3,9",
            "--quiet",
            "--no-plots",
            "--no-html",
        ],
    )
    .success();
    let text = read_text(&out.join("sweep.csv"));
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 8 * 2, "points × limiters");
    for (limit, cap, clients) in points {
        let run = tmp.path().join(format!("run-{limit}-{cap}-{clients}"));
        ratesim()
            .arg("run")
            .arg(&s)
            .args(["--quiet", "--no-plots", "--no-html"])
            .args(["--set", &format!("traffic[0].clients={clients}")])
            .args(["--set", &format!("defaults.limit={limit}")])
            .args(["--set", &format!("limiter[0].capacity={cap}")])
            .arg("--out")
            .arg(&run)
            .assert()
            .success();
        let summary = read_text(&run.join("summary.csv"));
        for (l, row) in summary.lines().skip(1).enumerate() {
            let prefix = format!("{clients},{limit},{cap},{row},");
            let found = rows.iter().filter(|r| r.starts_with(&prefix)).count();
            assert_eq!(
                found, 1,
                "limiter {l} of point {limit},{cap},{clients}: {row}"
            );
        }
    }
}

/// The header of a plain run's summary.csv.
fn summary_header(tmp: &Path) -> String {
    let s = scenario_in(tmp, "hdr", SMALL);
    let out = tmp.join("hdr-run");
    ratesim()
        .arg("run")
        .arg(&s)
        .args(["--quiet", "--no-plots", "--out"])
        .arg(&out)
        .assert()
        .success();
    // sweep.csv adds each sources.csv column from `clients` on, per source.
    let sources = header(&out.join("sources.csv"));
    let source = read_text(&out.join("sources.csv"))
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_string();
    let per_source: Vec<String> = sources
        .split(',')
        .skip(2)
        .map(|c| format!("{c}[{source}]"))
        .collect();
    format!(
        "{},{}",
        header(&out.join("summary.csv")),
        per_source.join(",")
    )
}

#[test]
fn a_sweep_is_the_same_on_one_thread_and_on_two() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let mut dirs = Vec::new();
    for threads in ["1", "2"] {
        let out = tmp.path().join(format!("t{threads}"));
        ratesim()
            .env("RAYON_NUM_THREADS", threads)
            .arg("sweep")
            .arg(&s)
            .args([
                "--vary",
                "defaults.limit=4..=16:4",
                "--vary",
                "traffic[0].clients=2,5",
                "--quiet",
                "--require",
                "rejected_share<=0.1",
                "--minimize",
                "defaults.limit",
                "--out",
            ])
            .arg(&out)
            .assert()
            .success();
        dirs.push(out);
    }
    assert_same_dir(&dirs[0], &dirs[1]);
}

#[test]
fn a_sweep_table_in_the_scenario_is_the_grid_and_vary_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(
        tmp.path(),
        "a",
        &format!("{SMALL}\n[sweep]\nvary = [\"defaults.limit=5,20\"]\nrequire = [\"rejected_share<=0.5\"]\nminimize = \"defaults.limit\"\n"),
    );
    let out = tmp.path().join("from-table");
    sweep(&s, &out, &["--quiet", "--no-plots"]).success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    assert_eq!(head[0], "defaults.limit");
    assert_eq!(rows.len(), 4);
    assert!(out.join("recommendation.md").is_file());
    let out2 = tmp.path().join("from-flag");
    sweep(
        &s,
        &out2,
        &[
            "--quiet",
            "--no-plots",
            "--vary",
            "traffic[0].clients=1,2,3",
            "--minimize",
            "attempts",
        ],
    )
    .success();
    let (head, rows) = csv_rows(&out2.join("sweep.csv"));
    assert_eq!(head[0], "traffic[0].clients");
    assert_eq!(rows.len(), 6);
    // The table's `minimize = "defaults.limit"` names a column this grid
    // does not have.
    let mut cmd = ratesim();
    cmd.arg("sweep")
        .arg(&s)
        .args(["--vary", "traffic[0].clients=1,2", "--out"])
        .arg(tmp.path().join("bad"));
    assert_input_error(&mut cmd, &["[sweep] table", "defaults.limit"]);
    // A second sweep into the same directory replaces it.
    sweep(&s, &out2, &["--quiet", "--no-plots"]).success();
    assert_eq!(csv_rows(&out2.join("sweep.csv")).1.len(), 4);
}

#[test]
fn bad_sweeps_are_refused_naming_the_flag_and_value_writing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("out");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--vary", "defaults.limit="], &["--vary", "empty"]),
        (
            &["--vary", "defaults.limit=1..=10:0"],
            &["--vary", "step is 0"],
        ),
        (
            &["--vary", "defaults.limit=10..=1:1"],
            &["--vary", "TO is below FROM"],
        ),
        (
            &["--vary", "limiter[3].capacity=1,2"],
            &["--vary", "limiter[3]"],
        ),
        (
            &["--vary", "limiter[0].capacityy=1,2"],
            &["--vary limiter[0].capacityy=1,2", "unknown field"],
        ),
        (
            &["--vary", "defaults.limit=5,ten"],
            &["--vary defaults.limit=5,ten", "\"ten\""],
        ),
        (
            &[
                "--vary",
                "defaults.limit=1..=200:1",
                "--vary",
                "traffic[0].clients=1..=51:1",
            ],
            &["10200 points", "--no-budget"],
        ),
        (
            &["--vary", "defaults.limit=5", "--shard", "4/3"],
            &["--shard", "4/3"],
        ),
        (
            &["--vary", "defaults.limit=5", "--shard", "x"],
            &["--shard", "\"x\""],
        ),
        (
            &["--vary", "defaults.limit=5", "--require", "nope<=1"],
            &["--require", "nope"],
        ),
        (
            &["--vary", "defaults.limit=5", "--minimize", "nope"],
            &["--minimize", "nope"],
        ),
        (&[], &["nothing to vary"]),
        // A name labels the rows; it decides nothing.
        (
            &["--vary", "limiter[0].name=a,b"],
            &[
                "--vary limiter[0].name=a,b",
                "limiter[0].name",
                "cannot be varied",
            ],
        ),
        (
            &["--vary", "traffic[0].name=u,v"],
            &["traffic[0].name", "cannot be varied"],
        ),
    ];
    for (args, needles) in cases {
        let mut cmd = ratesim();
        cmd.arg("sweep").arg(&s).arg("--out").arg(&out).args(*args);
        assert_input_error(&mut cmd, needles);
        assert_no_output(&out);
    }
}

#[test]
fn an_invalid_point_is_bad_input_naming_the_point() {
    let tmp = tempfile::tempdir().unwrap();
    // An interval bucket needs window/limit to be a whole number of ns:
    // limit 8 (with the file's 1s) and window 10ns (with its limit 10) are
    // each fine alone, together they are not.
    let text = SMALL.replacen(
        "algorithm = \"token_bucket\"",
        "algorithm = \"interval_bucket\"",
        1,
    );
    let s = scenario_in(tmp.path(), "a", &text);
    let out = tmp.path().join("out");
    let stderr = assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args([
                "--vary",
                "defaults.limit=10,8",
                "--vary",
                "defaults.window=1s,10ns",
                "--out",
            ])
            .arg(&out),
        &["point "],
    );
    assert!(
        stderr.contains("point 3 (defaults.limit=8, defaults.window=10ns)"),
        "{stderr}"
    );
    assert_no_output(&out);
}

/// Two imported-style nginx zones, each with its own rate and queue:
/// nothing reads `[defaults] limit`.
const ZONES: &str = r#"name = "zones"
seed = 5
duration = "3s"

[defaults]
limit = 20
window = "1s"

[[limiter]]
name = "api-perip"
implementation = "nginx"
rate = "20/1s"
queue = 10

[[limiter]]
name = "key-perkey"
implementation = "nginx"
rate = "5/1s"
queue = 5

[[traffic]]
pattern = "poisson"
clients = 3
rate = "15/1s"
"#;

// Issue 23 item 6 (docs/semantics.md §9): `limiter[NAME]` wherever
// `limiter[INDEX]` is accepted.
#[test]
fn a_limiter_is_named_wherever_its_index_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", ZONES);
    // run --set: the same as the index.
    let (by_name, by_index) = (tmp.path().join("name"), tmp.path().join("index"));
    for (dir, set) in [
        (&by_name, "limiter[key-perkey].rate=10/1s"),
        (&by_index, "limiter[1].rate=10/1s"),
    ] {
        ratesim()
            .arg("run")
            .arg(&s)
            .args(["--quiet", "--no-plots", "--set", set, "--out"])
            .arg(dir)
            .assert()
            .success();
    }
    assert_same_file(&by_name.join("summary.csv"), &by_index.join("summary.csv"));
    assert_eq!(column(&summary_row(&by_name, "key-perkey"), "limit"), 10);

    // sweep --vary: the column is headed by the path as typed, and a
    // point's rows are `run --set`'s.
    let out = tmp.path().join("sweep");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "limiter[api-perip].rate=10/1s,20/1s,40/1s",
            "--quiet",
            "--no-plots",
        ],
    )
    .success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    assert_eq!(head[0], "limiter[api-perip].rate");
    assert_eq!(rows.len(), 3 * 2);
    let limit = head.iter().position(|c| c == "limit").unwrap();
    let limits: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[limit].as_str()))
        .collect();
    assert_eq!(
        limits,
        [
            ("api-perip", "10"),
            ("key-perkey", "5"),
            ("api-perip", "20"),
            ("key-perkey", "5"),
            ("api-perip", "40"),
            ("key-perkey", "5"),
        ],
        "each zone held to its own rate"
    );
    let run = tmp.path().join("run40");
    ratesim()
        .arg("run")
        .arg(&s)
        .args([
            "--quiet",
            "--no-plots",
            "--set",
            "limiter[api-perip].rate=40/1s",
            "--out",
        ])
        .arg(&run)
        .assert()
        .success();
    let sweep_text = read_text(&out.join("sweep.csv"));
    for row in read_text(&run.join("summary.csv")).lines().skip(1) {
        assert!(
            sweep_text.contains(&format!("\n40/1s,{row},")),
            "{row} in {sweep_text}"
        );
    }

    // The scenario's [sweep] table.
    let table = scenario_in(
        tmp.path(),
        "b",
        &format!("{ZONES}\n[sweep]\nvary = [\"limiter[key-perkey].queue=0,5\"]\n"),
    );
    let out = tmp.path().join("table");
    sweep(&table, &out, &["--quiet", "--no-plots"]).success();
    assert_eq!(
        csv_rows(&out.join("sweep.csv")).0[0],
        "limiter[key-perkey].queue"
    );

    // An unknown name is an error listing the names; one field named two
    // ways is varied twice.
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&s)
            .args(["--set", "limiter[api].rate=1", "--out"])
            .arg(tmp.path().join("x")),
        &[
            "--set limiter[api].rate=1",
            "no limiter is called \"api\"",
            "names: api-perip, key-perkey",
        ],
    );
    let bad = tmp.path().join("bad");
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args(["--vary", "limiter[nope].rate=1,2", "--out"])
            .arg(&bad),
        &[
            "--vary limiter[nope].rate=1,2",
            "names: api-perip, key-perkey",
        ],
    );
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args([
                "--vary",
                "limiter[1].queue=1,2",
                "--vary",
                "limiter[key-perkey].queue=3",
                "--out",
            ])
            .arg(&bad),
        &[
            "--vary limiter[key-perkey].queue=3",
            "the same field",
            "limiter[1].queue",
        ],
    );
    assert_no_output(&bad);
}

// Issue 23 item 6: sweeping `defaults.limit` over limiters that all set
// their own rate changed nothing (only peak_over_limit moved), silently.
#[test]
fn an_axis_nothing_reads_is_refused_naming_what_to_vary() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", ZONES);
    let out = tmp.path().join("out");
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args(["--vary", "defaults.limit=10..=50:10", "--out"])
            .arg(&out),
        &[
            "--vary defaults.limit=10..=50:10: nothing reads [defaults] limit",
            "vary limiter[api-perip].rate or limiter[key-perkey].rate instead",
        ],
    );
    assert_no_output(&out);
    // The same from the scenario's [sweep] table, for sweep, run and validate.
    let table = scenario_in(
        tmp.path(),
        "b",
        &format!("{ZONES}\n[sweep]\nvary = [\"defaults.limit=10,20\"]\n"),
    );
    for cmd in ["sweep", "run", "validate"] {
        let mut c = ratesim();
        c.arg(cmd).arg(&table);
        if cmd != "validate" {
            c.arg("--out").arg(&out);
        }
        assert_input_error(
            &mut c,
            &["[sweep] vary defaults.limit=10,20", "nothing reads"],
        );
        assert_no_output(&out);
    }
    // `run --set` runs, and says it changes nothing.
    let run = ratesim()
        .arg("run")
        .arg(&s)
        .args(["--no-plots", "--set", "defaults.limit=50", "--out"])
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(
        stderr.contains("warning: --set defaults.limit=50: nothing reads [defaults] limit"),
        "{stderr}"
    );
    // Once something takes [defaults] limit (a limiter's capacity, a
    // boundary burst) the axis is accepted.
    for (i, extra) in [
        "[[limiter]]\nalgorithm = \"token_bucket\"\nrate = \"5/1s\"\n",
        "[[traffic]]\npattern = \"boundary\"\n",
    ]
    .iter()
    .enumerate()
    {
        let s = scenario_in(tmp.path(), &format!("c{i}"), &format!("{ZONES}\n{extra}"));
        sweep(
            &s,
            &tmp.path().join(format!("ok{i}")),
            &["--vary", "defaults.limit=10,20", "--quiet", "--no-plots"],
        )
        .success();
    }
}

// ---------------------------------------------------------------------------
// 3. charts and summary.md
// ---------------------------------------------------------------------------

fn png_size(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(fs::File::open(path).unwrap());
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    (info.width, info.height)
}

#[test]
fn one_varied_path_draws_lines_two_draw_heatmaps_more_fix_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let one = tmp.path().join("one");
    sweep(&s, &one, &["--quiet", "--vary", "defaults.limit=4,8,16"]).success();
    let md = read_text(&one.join("summary.md"));
    for f in ["sweep-rejected_share.png", "sweep-peak_over_limit.png"] {
        assert!(md.contains(&format!("![{f}]({f})")), "{md}");
        assert_eq!(png_size(&one.join(f)), (1200, 700));
    }
    let two = tmp.path().join("two");
    sweep(
        &s,
        &two,
        &[
            "--quiet",
            "--vary",
            "defaults.limit=4,8",
            "--vary",
            "traffic[0].clients=1,3",
            "--vary",
            "seed=1,2",
            "--metric",
            "peak_over_limit",
        ],
    )
    .success();
    let md = read_text(&two.join("summary.md"));
    for i in 0..2 {
        let f = format!("sweep-heatmap-{i}.png");
        assert!(md.contains(&format!("![{f}]({f})")), "{md}");
        assert_eq!(png_size(&two.join(&f)), (1200, 800));
    }
    assert!(md.contains("`seed=1`"), "says which value is fixed: {md}");
    assert!(md.contains("peak_over_limit"), "{md}");
}

/// A two-source scenario for per-source requirements: users and one
/// steady scraper.
const SOURCES: &str = r#"name = "src"
seed = 5
duration = "4s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[limiter]]
algorithm = "sliding_log"

[[traffic]]
name = "users"
pattern = "poisson"
clients = 20
rate = "3/1s"

[[traffic]]
name = "scraper"
pattern = "steady"
rate = "40/1s"
"#;

#[test]
fn charts_draw_the_requirements_and_the_recommended_point() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SOURCES);
    let goal = [
        "--require",
        "clients_limited_share[users]<=0.1",
        "--require",
        "passed_per_s[scraper]<=12",
        "--minimize",
        "passed_per_s[scraper]",
    ];
    // One path: a line chart per required metric, with its threshold and
    // the recommended point; what is 0 everywhere is named, not drawn.
    let one = tmp.path().join("one");
    let mut args = vec!["--quiet", "--vary", "defaults.limit=2,4,8,16"];
    args.extend(goal);
    sweep(&s, &one, &args).success();
    let md = read_text(&one.join("summary.md"));
    let rec = read_text(&one.join("recommendation.md"));
    for (f, q) in [
        (
            "sweep-clients_limited_share-users.png",
            "clients_limited_share[users]<=0.1",
        ),
        (
            "sweep-passed_per_s-scraper.png",
            "passed_per_s[scraper]<=12",
        ),
    ] {
        assert_eq!(png_size(&one.join(f)), (1200, 700));
        let caption = md.split(&format!("![{f}]({f})")).nth(1).unwrap();
        let caption = caption.trim_start().lines().next().unwrap();
        assert!(
            caption.contains(&format!("The dashed line is the requirement `{q}`.")),
            "{caption}"
        );
        for name in ["token_bucket", "sliding_log"] {
            let section = rec.split(&format!("## {name}\n")).nth(1).unwrap();
            let at = section
                .lines()
                .find_map(|l| l.strip_prefix("**Recommended: defaults.limit="))
                .map(|l| l.split('*').next().unwrap().to_string());
            match at {
                Some(v) => assert!(caption.contains(&format!("{name} at {v}")), "{caption}"),
                None => assert!(!caption.contains(&format!("{name} at ")), "{caption}"),
            }
        }
    }
    assert!(
        md.contains("Not drawn, being 0 at every point for every limiter: `collateral_share`, `delay_p99_ms`."),
        "{md}"
    );
    assert!(!one.join("sweep-delay_p99_ms.png").exists());

    // Two paths: each heatmap is of the first requirement's metric, and
    // says how many of its cells meet every requirement — the count over
    // sweep.csv, from the counts.
    let two = tmp.path().join("two");
    let mut args = vec![
        "--quiet",
        "--vary",
        "defaults.limit=2,4,8,16",
        "--vary",
        "limiter[0].capacity=1,10,40",
    ];
    args.extend(goal);
    sweep(&s, &two, &args).success();
    let md = read_text(&two.join("summary.md"));
    let (head, rows) = csv_rows(&two.join("sweep.csv"));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let num = |r: &Vec<String>, n: &str| -> f64 { r[col(n)].parse().unwrap() };
    // The sliding log's heatmap has one column: the capacity is the token
    // bucket's, and cannot change it.
    for (name, cells) in [("token_bucket", 12), ("sliding_log", 4)] {
        let meets = rows
            .iter()
            .filter(|r| r[col("limiter")] == name)
            .filter(|r| cells == 12 || r[col("limiter[0].capacity")] == "1")
            .filter(|r| {
                num(r, "clients_limited[users]") <= 0.1 * num(r, "clients[users]")
                    && num(r, "passed_per_s[scraper]") <= 12.0
            })
            .count();
        let caption = md
            .lines()
            .find(|l| l.starts_with(&format!("{name}: `clients_limited_share[users]`")))
            .unwrap_or_else(|| panic!("no heatmap caption for {name}:\n{md}"));
        assert!(
            caption.contains(&format!(
                " {meets} of its {cells} cells meet every requirement"
            )),
            "{meets}: {caption}"
        );
        assert_eq!(
            caption.contains("`limiter[0].capacity` is another limiter's and cannot change sliding_log: one column stands for every value (`any`)."),
            name == "sliding_log",
            "{caption}"
        );
    }
}

// ---------------------------------------------------------------------------
// 4. the recommendation
// ---------------------------------------------------------------------------

#[test]
fn the_recommendation_is_the_brute_force_choice_over_sweep_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("rec");
    let bound = 0.05;
    let assert = sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.limit=4..=20:2",
            "--vary",
            "limiter[0].capacity=5,10,40",
            "--require",
            &format!("rejected_share<={bound}"),
            "--require",
            "peak_over_limit<=1.5",
            "--minimize",
            "defaults.limit",
            "--no-plots",
        ],
    )
    .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let md = read_text(&out.join("recommendation.md"));
    assert!(stdout.contains(md.trim()), "the recommendation is printed");
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    for name in ["token_bucket", "sliding_log"] {
        let best = rows
            .iter()
            .filter(|r| r[col("limiter")] == name)
            .filter(|r| {
                let rej: f64 = r[col("rejected")].parse().unwrap();
                let att: f64 = r[col("attempts")].parse().unwrap();
                let peak: f64 = r[col("peak_in_window")].parse().unwrap();
                let limit: f64 = r[col("limit")].parse().unwrap();
                rej / att <= bound && peak / limit <= 1.5
            })
            .min_by_key(|r| r[col("defaults.limit")].parse::<u64>().unwrap())
            .expect("some point qualifies");
        let section = md.split(&format!("## {name}\n")).nth(1).unwrap();
        // docs/semantics.md §7: a limiter's recommendation names only the axes that
        // can change it — limiter[0].capacity is the token bucket's.
        let expected = match name {
            "token_bucket" => format!(
                "**Recommended: defaults.limit={}, limiter[0].capacity={}**",
                best[0], best[1]
            ),
            _ => format!("**Recommended: defaults.limit={}**", best[0]),
        };
        assert!(section.contains(&expected), "{expected}\n{section}");
        assert!(section.contains("Its neighbours on the grid"), "{section}");
        assert!(
            section.contains("breaks `rejected_share<=0.05`"),
            "{section}"
        );
    }
}

/// Per-source requirements and objective: each limiter's recommended point
/// is the brute-force best over sweep.csv (shares from their counts), and
/// recommended.toml runs as is and gives every limiter its row at its own
/// point — here the two are recommended different `defaults.limit`s.
#[test]
fn recommended_toml_reproduces_each_limiters_brute_force_best_row() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SOURCES);
    let out = tmp.path().join("rec");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.limit=2,3,4,6,8,12,16",
            "--vary",
            "limiter[0].capacity=1,4,16",
            "--require",
            "clients_limited_share[users]<=0.25",
            "--maximize",
            "passed_per_s[users]",
            "--no-plots",
            "--quiet",
        ],
    )
    .success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let num = |r: &Vec<String>, n: &str| -> f64 { r[col(n)].parse().unwrap() };
    let md = read_text(&out.join("recommendation.md"));
    let mut best_rows = Vec::new();
    for name in ["token_bucket", "sliding_log"] {
        let mut best: Option<&Vec<String>> = None;
        for r in rows.iter().filter(|r| r[col("limiter")] == name) {
            if num(r, "clients_limited[users]") > 0.25 * num(r, "clients[users]") {
                continue;
            }
            // The most, ties to the first point in sweep order.
            if best.is_none_or(|b| num(r, "passed_per_s[users]") > num(b, "passed_per_s[users]")) {
                best = Some(r);
            }
        }
        let best = best.expect("some point qualifies");
        let section = md.split(&format!("## {name}\n")).nth(1).unwrap();
        let expected = match name {
            "token_bucket" => format!(
                "**Recommended: defaults.limit={}, limiter[0].capacity={}**",
                best[0], best[1]
            ),
            _ => format!("**Recommended: defaults.limit={}**", best[0]),
        };
        assert!(section.contains(&expected), "{expected}\n{section}");
        best_rows.push(best.clone());
    }
    assert_ne!(
        best_rows[0][0], best_rows[1][0],
        "the limiters should be recommended different limits, so that one is pinned"
    );
    let toml = read_text(&out.join("recommended.toml"));
    assert!(!toml.lines().any(|l| l.trim() == "[sweep]"), "{toml}");
    assert!(
        md.contains("`ratesim run recommended.toml` runs it as is"),
        "{md}"
    );
    let run = tmp.path().join("run");
    ratesim()
        .arg("run")
        .arg(out.join("recommended.toml"))
        .args(["--quiet", "--no-plots", "--out"])
        .arg(&run)
        .assert()
        .success();
    let (run_head, run_rows) = csv_rows(&run.join("summary.csv"));
    assert_eq!(run_rows.len(), 2);
    for (ran, best) in run_rows.iter().zip(&best_rows) {
        let swept: Vec<&String> = best[2..2 + run_head.len()].iter().collect();
        assert_eq!(
            ran.iter().collect::<Vec<_>>(),
            swept,
            "{}: recommended.toml's row differs from its recommended point's",
            ran[0]
        );
    }
    // And its sources.csv rows are the point's COLUMN[SOURCE] cells.
    let (src_head, src_rows) = csv_rows(&run.join("sources.csv"));
    assert_eq!(src_rows.len(), 4);
    for r in &src_rows {
        let best = &best_rows[if r[0] == "token_bucket" { 0 } else { 1 }];
        for (c, v) in src_head.iter().zip(r).skip(2) {
            assert_eq!(
                v,
                &best[col(&format!("{c}[{}]", r[1]))],
                "{} {} {c}",
                r[0],
                r[1]
            );
        }
    }
}

/// `defaults.window` recommended differently per limiter: each limiter's
/// parameters are written out, but the policy window of `peak_in_window`,
/// `limit` and `overshoot` is the file's one — the header says so (it did
/// not, found by an audit).
#[test]
fn recommended_toml_says_when_the_policy_window_is_not_a_limiters_own() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "name = \"w\"\nseed = 9\nduration = \"4s\"\n[defaults]\nlimit = 10\nwindow = \"1s\"\n[[limiter]]\nname = \"tb\"\nalgorithm = \"token_bucket\"\n[[limiter]]\nname = \"scnt\"\nalgorithm = \"sliding_counter\"\ncount_rejected = true\n[[traffic]]\nname = \"users\"\npattern = \"poisson\"\nclients = 25\nrate = \"3/1s\"\nprefix = \"user-\"\n[[traffic]]\nname = \"scrapers\"\npattern = \"steady\"\nclients = 2\nrate = \"25/1s\"\nprefix = \"scraper-\"\n";
    let s = scenario_in(tmp.path(), "a", text);
    let out = tmp.path().join("rec");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.window=250ms,500ms,1s,2s",
            "--require",
            "clients_limited_share[users]<=0.1",
            "--minimize",
            "passed_per_s[scrapers]",
            "--no-plots",
            "--quiet",
        ],
    )
    .success();
    let toml = read_text(&out.join("recommended.toml"));
    assert!(
        toml.contains("# tb: defaults.window=2s (point 3)")
            && toml.contains("# scnt: defaults.window=500ms (point 1)")
            && toml.contains("# defaults.window differs between the recommendations (tb: 2s, scnt: 500ms): this file has 2s, the first's. Each limiter decides as at its point, but peak_in_window, limit and overshoot are measured over this file's window"),
        "{toml}"
    );
}

/// A limiter whose implementation names its own parameter (redis-cell's
/// `max_burst`) is pinned at its point all the same: its parameters give
/// way to the resolved ones, whatever the limiters' order.
#[test]
fn recommended_toml_pins_a_limiter_given_by_its_implementations_names() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "name = \"preset\"\nseed = 3\nduration = \"10s\"\n[defaults]\nlimit = 10\nwindow = \"1s\"\n[[limiter]]\nname = \"tb\"\nalgorithm = \"token_bucket\"\ncapacity = 40\n[[limiter]]\nname = \"cell\"\nimplementation = \"redis-cell\"\nmax_burst = 4\n[[traffic]]\nname = \"users\"\npattern = \"poisson\"\nclients = 10\nrate = \"5/1s\"\n";
    let s = scenario_in(tmp.path(), "a", text);
    let out = tmp.path().join("rec");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.limit=2,4,6,8,10",
            "--vary",
            "limiter[0].capacity=5,40",
            "--require",
            "rejected_share<=0.05",
            "--minimize",
            "defaults.limit",
            "--no-plots",
            "--quiet",
        ],
    )
    .success();
    let md = read_text(&out.join("recommendation.md"));
    let toml = read_text(&out.join("recommended.toml"));
    assert!(
        toml.contains("# cell no longer reads [defaults]") && !toml.contains("max_burst"),
        "{md}\n{toml}"
    );
    let run = tmp.path().join("run");
    ratesim()
        .arg("run")
        .arg(out.join("recommended.toml"))
        .args(["--quiet", "--no-plots", "--out"])
        .arg(&run)
        .assert()
        .success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let (run_head, run_rows) = csv_rows(&run.join("summary.csv"));
    for ran in &run_rows {
        let section = md.split(&format!("## {}\n", ran[0])).nth(1).unwrap();
        let point: usize = section
            .split("(point ")
            .nth(1)
            .and_then(|p| p.split(')').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no point for {}: {section}", ran[0]));
        let swept = rows.iter().filter(|r| r[2] == ran[0]).nth(point).unwrap();
        assert_eq!(&swept[2..2 + run_head.len()], &ran[..], "{}", ran[0]);
        assert_eq!(head[2], "limiter");
    }
}

/// recommended.toml reads its trace from wherever it lies beside the
/// sweep, written unsharded or merged: its path is from the sweep
/// directory, and sweep.json names the scenario relative to it too.
#[test]
fn recommended_toml_finds_its_trace_from_the_sweep_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut trace = String::from("time,client\n");
    for i in 0..200u32 {
        trace.push_str(&format!("{}.{:03},c{}\n", i / 20, (i % 20) * 50, i % 3));
    }
    fs::create_dir_all(tmp.path().join("a/traces")).unwrap();
    fs::write(tmp.path().join("a/traces/t.csv"), trace).unwrap();
    let s = scenario_in(
        tmp.path(),
        "a",
        "name = \"tr\"\nduration = \"10s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n[[limiter]]\nalgorithm = \"token_bucket\"\n[[traffic]]\npattern = \"trace\"\npath = \"traces/t.csv\"\n",
    );
    let args = [
        "--vary",
        "defaults.limit=2,4,8",
        "--require",
        "rejected_share<=0.5",
        "--no-plots",
        "--quiet",
    ];
    let whole = tmp.path().join("deep/er/whole");
    fs::create_dir_all(whole.parent().unwrap()).unwrap();
    sweep(&s, &whole, &args).success();
    let json = read_text(&whole.join("sweep.json"));
    assert!(
        json.contains("\"scenario_file\": \"../../../a/sw.toml\""),
        "{json}"
    );
    let toml = read_text(&whole.join("recommended.toml"));
    assert!(
        toml.contains("path = \"../../../a/traces/t.csv\""),
        "{toml}"
    );
    let mut shards = Vec::new();
    for k in 1..=2 {
        let d = tmp.path().join(format!("s{k}"));
        let mut a = args.to_vec();
        let shard = format!("{k}/2");
        a.extend(["--shard", &shard]);
        sweep(&s, &d, &a).success();
        shards.push(d);
    }
    let merged = tmp.path().join("deep/merged");
    ratesim()
        .args(["sweep", "merge"])
        .args(&shards)
        .args(["--quiet", "--no-plots", "--out"])
        .arg(&merged)
        .assert()
        .success();
    let toml = read_text(&merged.join("recommended.toml"));
    assert!(toml.contains("path = \"../../a/traces/t.csv\""), "{toml}");
    // Run from elsewhere, each gives the recommended point's row.
    let (head, rows) = csv_rows(&whole.join("sweep.csv"));
    let md = read_text(&whole.join("recommendation.md"));
    let limit = md
        .split("**Recommended: defaults.limit=")
        .nth(1)
        .and_then(|r| r.split('*').next())
        .expect("a recommendation")
        .to_string();
    let row = rows.iter().find(|r| r[0] == limit).unwrap();
    for dir in [&whole, &merged] {
        let out = tmp.path().join("runs").join(dir.file_name().unwrap());
        ratesim()
            .current_dir(tmp.path().join("a/traces"))
            .arg("run")
            .arg(dir.join("recommended.toml"))
            .args(["--quiet", "--no-plots", "--out"])
            .arg(&out)
            .assert()
            .success();
        let (run_head, run_rows) = csv_rows(&out.join("summary.csv"));
        assert_eq!(run_head[..], head[1..1 + run_head.len()]);
        assert_eq!(run_rows[0][..], row[1..1 + run_head.len()]);
    }
}

#[test]
fn when_no_point_qualifies_it_says_which_requirement_came_closest() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("none");
    let assert = sweep(
        &s,
        &out,
        &[
            "--vary",
            "defaults.limit=2,3",
            "--require",
            "rejected_share<=0.0001",
            "--minimize",
            "defaults.limit",
            "--no-plots",
        ],
    )
    .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(
        stdout.contains("No point meets every requirement"),
        "{stdout}"
    );
    assert!(stdout.contains("Closest: defaults.limit=3"), "{stdout}");
}

// ---------------------------------------------------------------------------
// 5. shards and merge
// ---------------------------------------------------------------------------

#[test]
fn merged_shards_are_the_unsharded_sweep_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let args = [
        "--vary",
        "defaults.limit=4,8,12",
        "--vary",
        "traffic[0].clients=1,3",
        "--require",
        "rejected_share<=0.2",
        "--minimize",
        "defaults.limit",
        "--quiet",
    ];
    let whole = tmp.path().join("whole");
    sweep(&s, &whole, &args).success();
    assert!(whole.join("recommended.toml").is_file());
    let mut shards = Vec::new();
    for k in 1..=4 {
        let d = tmp.path().join(format!("shard{k}"));
        let mut a = args.to_vec();
        let shard = format!("{k}/4");
        a.extend(["--shard", &shard]);
        sweep(&s, &d, &a).success();
        shards.push(d);
    }
    // Shards in any order.
    let merged = tmp.path().join("merged");
    let joined = ratesim()
        .args(["sweep", "merge"])
        .args([&shards[2], &shards[0], &shards[3], &shards[1]])
        .arg("--out")
        .arg(&merged)
        .assert()
        .success();
    assert_same_dir(&whole, &merged);
    // It says what it joined, in shard order.
    let said = String::from_utf8_lossy(&joined.get_output().stdout).into_owned();
    let list = format!(
        "joined 4 shard(s) of sw: 1/4 {}, 2/4 {}",
        shards[0].display(),
        shards[1].display()
    );
    assert!(said.contains(&list), "{said}");

    // A missing shard, a shard given twice, another grid: refused.
    let out = tmp.path().join("bad");
    let mut cmd = ratesim();
    cmd.args(["sweep", "merge"])
        .args(&shards[..3])
        .arg("--out")
        .arg(&out);
    assert_input_error(&mut cmd, &["4/4", "missing"]);
    let mut cmd = ratesim();
    cmd.args(["sweep", "merge"])
        .args([&shards[0], &shards[0]])
        .arg("--out")
        .arg(&out);
    assert_input_error(&mut cmd, &["both shard 1/4"]);
    let other = tmp.path().join("other");
    sweep(
        &s,
        &other,
        &["--vary", "defaults.limit=4,8", "--shard", "2/4", "--quiet"],
    )
    .success();
    let mut cmd = ratesim();
    cmd.args(["sweep", "merge"])
        .args([&shards[0], &other])
        .arg("--out")
        .arg(&out);
    assert_input_error(&mut cmd, &["not shards of one sweep", "grids differ"]);
    let edited = scenario_in(tmp.path(), "b", &SMALL.replacen("seed = 3", "seed = 4", 1));
    let other = tmp.path().join("other2");
    let mut a = args.to_vec();
    a.extend(["--shard", "2/4"]);
    sweep(&edited, &other, &a).success();
    let mut cmd = ratesim();
    cmd.args(["sweep", "merge"])
        .args([&shards[0], &other])
        .arg("--out")
        .arg(&out);
    assert_input_error(&mut cmd, &["scenarios differ"]);
    // Other recommendation flags: said as flags (it printed Rust's own
    // form of them, `Goal { require: [...] … }`, before).
    let other = tmp.path().join("other3");
    let mut a: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "rejected_share<=0.2")
        .collect();
    a.retain(|x| *x != "--require");
    a.extend(["--shard", "2/4"]);
    sweep(&s, &other, &a).success();
    let mut cmd = ratesim();
    cmd.args(["sweep", "merge"])
        .args([&shards[0], &other])
        .arg("--out")
        .arg(&out);
    let err = assert_input_error(
        &mut cmd,
        &["(--require 'rejected_share<=0.2' --minimize defaults.limit vs --minimize defaults.limit)"],
    );
    assert!(!err.contains("Goal {"), "{err}");
    assert_no_output(&out);
}

/// docs/semantics.md §7: a limiter's recommendation names only the axes that can
/// change it; a limiter no axis can change gets none.
#[test]
fn a_limiter_no_axis_changes_is_recommended_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("sweep");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "limiter[0].capacity=2,20",
            "--require",
            "rejected_share<=1",
            "--quiet",
            "--no-plots",
        ],
    )
    .success();
    let md = read_text(&out.join("recommendation.md"));
    let second = md.split("\n## sliding_log\n").nth(1).expect("its section");
    assert!(
        second.contains("No axis of the grid is sliding_log's or shared"),
        "{md}"
    );
    let first = md.split("\n## token_bucket\n").nth(1).unwrap();
    assert!(
        first.contains("**Recommended: limiter[0].capacity="),
        "{md}"
    );
}

// Regression: with the objective on one limiter's axis, the other
// limiter's recommendation showed that axis as its own objective and in
// its neighbours' lines (docs/semantics.md §7: a limiter's recommendation
// names only the axes that can change it).
#[test]
fn an_objective_on_another_limiters_axis_is_left_out_of_a_limiters_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario_in(tmp.path(), "a", SMALL);
    let out = tmp.path().join("sweep");
    sweep(
        &s,
        &out,
        &[
            "--vary",
            "limiter[0].capacity=20,5,10",
            "--vary",
            "limiter[1].limit=2,12,40",
            "--require",
            "rejected_share<=0.05",
            "--minimize",
            "limiter[0].capacity",
            "--quiet",
            "--no-plots",
        ],
    )
    .success();
    let md = read_text(&out.join("recommendation.md"));
    let second = md
        .split("\n## sliding_log\n")
        .nth(1)
        .expect("its section")
        .trim_start();
    assert!(
        second.starts_with(
            "`limiter[0].capacity` is another limiter's field, which cannot change sliding_log's rows: left out of its choice."
        ),
        "{md}"
    );
    let rest = second.split_once('\n').unwrap().1;
    assert!(!rest.contains("limiter[0]"), "{md}");
    // Chosen as without the objective: the first qualifying limit in sweep
    // order, at the point where the other axis takes its first value.
    let csv = read_text(&out.join("sweep.csv"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (lim, limit, rej, att) = (
        col("limiter"),
        col("limiter[1].limit"),
        col("rejected"),
        col("attempts"),
    );
    let first = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| {
            r[lim] == "sliding_log"
                && r[rej].parse::<f64>().unwrap() / r[att].parse::<f64>().unwrap() <= 0.05
        })
        .expect("a qualifying row");
    assert!(
        second.contains(&format!(
            "**Recommended: limiter[1].limit={}**",
            first[limit]
        )),
        "{md}"
    );
    let first_section = md.split("\n## token_bucket\n").nth(1).unwrap();
    assert!(first_section.contains("| limiter[0].capacity |"), "{md}");
}
