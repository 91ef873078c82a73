//! A trace split into sources by a field's value (`source = "FIELD"`,
//! docs/semantics.md §3), end to end: `sources.csv` rows per value with
//! counts worked out by hand, the decision log's `source` column, the
//! sweep's `COLUMN[SOURCE]` columns, and the bad input it refuses.

use std::fs;
use std::path::Path;

use crate::common::*;

/// Nine requests of four clients; `kind` says who sent each (empty on
/// one row: that request is the source named as the `[[traffic]]`).
const TRACE: &str = "\
time,client,kind
0.0,u1,users
0.1,s1,scrapers
0.2,s1,scrapers
0.3,s1,scrapers
0.4,u2,users
0.5,s1,scrapers
1.0,s1,scrapers
1.1,u1,
1.2,s2,scrapers
";

/// The trace split by `kind`, and one steady client as a second
/// `[[traffic]]`. `fixed_window` (2 per second per client) sees both;
/// `web-only` (1 per second) sees the trace alone.
const SCENARIO: &str = r#"name = "split"
duration = "2s"

[defaults]
limit = 2
window = "1s"

[[limiter]]
algorithm = "fixed_window"

[[limiter]]
name = "web-only"
algorithm = "fixed_window"
limit = 1
traffic = ["web"]

[[traffic]]
name = "web"
pattern = "trace"
path = "trace.csv"
source = "kind"

[[traffic]]
name = "background"
pattern = "steady"
rate = "1/1s"
"#;

/// Writes `scenario` and `files` into `dir`; the scenario's path.
fn write_in(dir: &Path, scenario: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join("s.toml");
    fs::write(&path, scenario).unwrap();
    path
}

/// Runs `scenario` (with `files` beside it) with the decision log; the
/// run directory's parent.
fn run(scenario: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_in(tmp.path(), scenario, files);
    ratesim()
        .arg("run")
        .arg(&path)
        .args(["--decisions", "--no-plots", "--quiet", "--out"])
        .arg(tmp.path().join("out"))
        .assert()
        .success();
    tmp
}

/// `sources.csv` without its header, each row's cells joined by commas.
fn source_rows(dir: &Path) -> Vec<String> {
    let (head, rows) = csv_rows(&dir.join("sources.csv"));
    assert_eq!(
        head.join(","),
        "limiter,source,clients,attempts,logical_requests,admitted,delayed,rejected,passed,passed_per_s,clients_limited,clients_limited_share,rejected_share"
    );
    rows.into_iter().map(|r| r.join(",")).collect()
}

#[test]
fn a_csv_trace_split_by_a_column_is_one_source_per_value() {
    let tmp = run(SCENARIO, &[("trace.csv", TRACE)]);
    let out = tmp.path().join("out");
    // fixed_window, 2 per client per second: s1 sends 4 in [0, 1s) and
    // the two after its second are rejected; every other request passes.
    // Sources in order of first appearance, the empty kind as "web", then
    // the next [[traffic]]. passed_per_s is over the 2 s run.
    //   users:    u1, u2 — 2 passed.
    //   scrapers: s1 ×5 (0.3 and 0.5 rejected), s2 — 4 of 6 passed.
    //   web:      u1 at 1.1 s.
    //   background: the steady client at 0 and 1 s.
    // web-only, 1 per client per second, sees the trace's sources only:
    // s1 passes at 0.1 and 1.0 s, its 0.2, 0.3 and 0.5 are rejected.
    assert_eq!(
        source_rows(&out),
        [
            "fixed_window,users,2,2,2,2,0,0,2,1,0,0,0",
            "fixed_window,scrapers,2,6,6,4,0,2,4,2,1,0.5,0.3333",
            "fixed_window,web,1,1,1,1,0,0,1,0.5,0,0,0",
            "fixed_window,background,1,2,2,2,0,0,2,1,0,0,0",
            "web-only,users,2,2,2,2,0,0,2,1,0,0,0",
            "web-only,scrapers,2,6,6,3,0,3,3,1.5,1,0.5,0.5",
            "web-only,web,1,1,1,1,0,0,1,0.5,0,0,0",
        ]
    );
    // The decision log names each attempt's source by its value.
    let (head, rows) = csv_rows(&out.join("decisions.csv"));
    assert_eq!(head.join(","), DECISIONS_HEADER);
    let web_only: Vec<(String, String, String)> = rows
        .iter()
        .filter(|r| r[0] == "web-only")
        .map(|r| (r[1].clone(), r[5].clone(), r[9].clone()))
        .collect();
    let expected = [
        ("0", "admitted", "users"),
        ("100000000", "admitted", "scrapers"),
        ("200000000", "rejected", "scrapers"),
        ("300000000", "rejected", "scrapers"),
        ("400000000", "admitted", "users"),
        ("500000000", "rejected", "scrapers"),
        ("1000000000", "admitted", "scrapers"),
        ("1100000000", "admitted", "web"),
        ("1200000000", "admitted", "scrapers"),
    ]
    .map(|(t, o, s)| (t.to_string(), o.to_string(), s.to_string()));
    assert_eq!(web_only, expected);
    let background = rows
        .iter()
        .filter(|r| r[0] == "fixed_window" && r[3] == "steady-0")
        .count();
    assert_eq!(background, 2);
    assert!(rows
        .iter()
        .filter(|r| r[3] == "steady-0")
        .all(|r| r[9] == "background"));
    // summary.json echoes what the trace was split by, and into how many.
    let json: serde_json::Value =
        serde_json::from_str(&read_text(&out.join("summary.json"))).unwrap();
    let echo = &json["scenario"]["traffic"][0];
    assert_eq!(
        (&echo["source"], &echo["sources"]),
        (&"kind".into(), &3.into())
    );
}

#[test]
fn splitting_a_trace_changes_no_decision() {
    // The same scenario without `source` (and without the column): every
    // limiter's summary.csv row is the same; only the rows per source
    // differ.
    let unsplit_trace: String = TRACE
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
        .collect();
    let unsplit = SCENARIO.replace("source = \"kind\"\n", "");
    let split = run(SCENARIO, &[("trace.csv", TRACE)]);
    let whole = run(&unsplit, &[("trace.csv", &unsplit_trace)]);
    assert_same_file(
        &split.path().join("out/summary.csv"),
        &whole.path().join("out/summary.csv"),
    );
    let rows = source_rows(&whole.path().join("out"));
    assert_eq!(rows[0], "fixed_window,web,4,9,9,7,0,2,7,3.5,1,0.25,0.2222");
}

#[test]
fn a_sweep_has_columns_per_split_source_and_requires_them() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_in(tmp.path(), SCENARIO, &[("trace.csv", TRACE)]);
    let out = tmp.path().join("sweep");
    ratesim()
        .arg("sweep")
        .arg(&s)
        .args([
            "--vary",
            "defaults.limit=1,2",
            "--require",
            "passed_per_s[scrapers]<=1.5",
            "--no-plots",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let col = |name: &str| {
        head.iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("sweep.csv has no {name}: {head:?}"))
    };
    for source in ["users", "scrapers", "web", "background"] {
        col(&format!("passed_per_s[{source}]"));
        col(&format!("clients_limited_share[{source}]"));
    }
    // fixed_window at limit 1 passes scrapers as web-only does, 3 of 6
    // (1.5/s); at limit 2, 4 (2/s). web-only has its own limit: 1.5/s.
    let (limit, limiter, scrapers) = (
        col("defaults.limit"),
        col("limiter"),
        col("passed_per_s[scrapers]"),
    );
    let cells: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (&*r[limit], &*r[limiter], &*r[scrapers]))
        .collect();
    assert_eq!(
        cells,
        [
            ("1", "fixed_window", "1.5"),
            ("1", "web-only", "1.5"),
            ("2", "fixed_window", "2"),
            ("2", "web-only", "1.5"),
        ]
    );
    // web-only does not see background: its cells there are empty.
    let bg = col("passed_per_s[background]");
    assert_eq!((&*rows[1][bg], &*rows[0][bg]), ("", "1"));
    // The requirement holds fixed_window to limit 1.
    let recommended = read_text(&out.join("recommendation.md"));
    let fixed = &recommended[recommended.find("## fixed_window").unwrap()..];
    assert!(
        fixed.contains("**Recommended: defaults.limit=1**")
            && fixed.contains("defaults.limit=2: breaks `passed_per_s[scrapers]<=1.5` (passed_per_s[scrapers] = 2)"),
        "{recommended}"
    );
    // A source that is not there is refused, listing the columns.
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args([
                "--vary",
                "defaults.limit=1,2",
                "--require",
                "passed_per_s[bots]<=1",
                "--out",
            ])
            .arg(tmp.path().join("no")),
        &[
            "passed_per_s[bots]",
            "no such column",
            "passed_per_s[scrapers]",
        ],
    );
}

#[test]
fn a_source_column_the_trace_lacks_is_bad_input_naming_its_columns() {
    assert_bad_scenario(
        &SCENARIO.replace("source = \"kind\"", "source = \"plan\""),
        &[("trace.csv", TRACE)],
        &[
            "traffic[0].source: \"plan\"",
            "\"trace.csv\" has no such column",
            "its header has time, client, kind",
        ],
    );
    // Without `source`, the extra column is an unknown one, and the
    // message says how to split by it.
    assert_bad_scenario(
        &SCENARIO.replace("source = \"kind\"\n", ""),
        &[("trace.csv", TRACE)],
        &[
            "traffic[0].path",
            "unknown column \"kind\"",
            "source = \"kind\"",
        ],
    );
    // `source` is a trace's field only.
    assert_bad_scenario(
        &SCENARIO.replace("rate = \"1/1s\"", "rate = \"1/1s\"\nsource = \"kind\""),
        &[("trace.csv", TRACE)],
        &["traffic[1].source: unknown field"],
    );
}

#[test]
fn a_value_that_names_another_source_is_bad_input_naming_both() {
    // A value that is another [[traffic]]'s name.
    assert_bad_scenario(
        &SCENARIO.replace("name = \"background\"", "name = \"scrapers\""),
        &[("trace.csv", TRACE)],
        &[
            "traffic[0].source: \"kind\" gives a source named \"scrapers\", the name of traffic[1]",
            "source names must be unique",
        ],
    );
    // A value of another split trace.
    let two = format!(
        "{SCENARIO}\n[[traffic]]\nname = \"mirror\"\npattern = \"trace\"\npath = \"trace.csv\"\nsource = \"kind\"\n"
    );
    assert_bad_scenario(
        &two,
        &[("trace.csv", TRACE)],
        &["traffic[2].source: \"kind\" gives a source named \"users\", as traffic[0].source (\"kind\") does"],
    );
}

#[test]
fn more_than_a_thousand_values_are_bad_input_naming_the_value_and_the_cap() {
    let mut many = String::from("time_ns,client,kind\n");
    for i in 0..1001 {
        many.push_str(&format!("{i},c,k{i}\n"));
    }
    assert_bad_scenario(
        SCENARIO,
        &[("trace.csv", &many)],
        &[
            "traffic[0].source: \"trace.csv\" line 1002: kind \"k1000\" would be source number 1001",
            "at most 1000 sources",
        ],
    );
    // A thousand is fine.
    many.truncate(many.rfind("1000,c,k1000").unwrap());
    let tmp = run(SCENARIO, &[("trace.csv", &many)]);
    let rows = source_rows(&tmp.path().join("out"));
    assert_eq!(rows.len(), 2 * 1000 + 1);
    assert!(
        rows[999].starts_with("fixed_window,k999,1,1,"),
        "{}",
        rows[999]
    );
}

#[test]
fn a_sweep_whose_points_split_into_other_sources_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let other = "time,client,kind\n0.0,a,users\n0.5,b,bots\n";
    let s = write_in(
        tmp.path(),
        SCENARIO,
        &[("trace.csv", TRACE), ("other.csv", other)],
    );
    let out = tmp.path().join("sweep");
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&s)
            .args(["--vary", "traffic[0].path=trace.csv,other.csv", "--out"])
            .arg(&out),
        &[
            "point 1 (traffic[0].path=other.csv): its sources are users, bots, background, the scenario's users, scrapers, web, background",
            "every point must have the same sources",
        ],
    );
    assert_no_output(&out);
}

/// `TRACE`'s requests as `format`'s log lines, `kind` in the field that
/// `source` names (`-` or no field for the empty one), and the table lines
/// that read it.
fn as_log(format: &str) -> (String, &'static str) {
    let mut log = String::new();
    for row in TRACE.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        let ms = (f[0].parse::<f64>().unwrap() * 1000.0).round() as u64;
        let (client, kind) = (f[1], f[2]);
        let shown = if kind.is_empty() { "-" } else { kind };
        log.push_str(&match format {
            "nginx" => format!(
                "{}.{:03} {client} {shown} \"GET /a HTTP/1.1\"\n",
                1_796_085_720 + ms / 1000,
                ms % 1000
            ),
            "envoy" => format!(
                "[2026-12-01T00:42:0{}.{:03}Z] {client} {shown}\n",
                ms / 1000,
                ms % 1000
            ),
            _ if kind.is_empty() => format!(
                "{{\"ts\": {}, \"user\": \"{client}\"}}\n",
                1_796_085_720_000 + ms
            ),
            _ => format!(
                "{{\"ts\": {}, \"user\": \"{client}\", \"kind\": \"{kind}\"}}\n",
                1_796_085_720_000 + ms
            ),
        });
    }
    let table = match format {
        "nginx" => "path = \"web.log\"\nformat = \"nginx\"\nlog_format = '$msec $http_x_client $http_x_kind \"$request\"'\nclient = \"$http_x_client\"\nsource = \"$http_x_kind\"",
        // An Envoy command is named in any case, as for `client`.
        "envoy" => "path = \"web.log\"\nformat = \"envoy\"\nlog_format = \"[%START_TIME%] %REQ(X-CLIENT)% %REQ(X-KIND)%\"\nclient = \"%REQ(X-CLIENT)%\"\nsource = \"%REQ(x-kind)%\"",
        _ => "path = \"web.log\"\nformat = \"jsonl\"\ntime = \"ts\"\ntime_unit = \"ms\"\nclient = \"user\"\nsource = \"kind\"",
    };
    (log, table)
}

#[test]
fn access_logs_split_by_a_logged_variable_as_the_csv_by_its_column() {
    let csv = run(SCENARIO, &[("trace.csv", TRACE)]);
    for format in ["nginx", "envoy", "jsonl"] {
        let (log, table) = as_log(format);
        let scenario = SCENARIO.replace("path = \"trace.csv\"\nsource = \"kind\"", table);
        let tmp = run(&scenario, &[("web.log", &log)]);
        // The same sources, counts and decisions: nginx's and Envoy's `-`
        // and a JSON line without the field are the empty value ("web").
        for file in ["sources.csv", "decisions.csv", "summary.csv"] {
            assert_same_file(
                &csv.path().join("out").join(file),
                &tmp.path().join("out").join(file),
            );
        }
        let json: serde_json::Value =
            serde_json::from_str(&read_text(&tmp.path().join("out/summary.json"))).unwrap();
        assert_eq!(json["scenario"]["traffic"][0]["sources"], 3, "{format}");
    }
}

#[test]
fn a_log_variable_to_split_by_is_checked_as_only_and_except_check_theirs() {
    let (log, table) = as_log("nginx");
    let scenario = SCENARIO.replace("path = \"trace.csv\"\nsource = \"kind\"", table);
    // As for `only`/`except`: the variable must be one of log_format's.
    assert_bad_scenario(
        &scenario.replace("source = \"$http_x_kind\"", "source = \"$http_x_plan\""),
        &[("web.log", &log)],
        &["traffic[0].source: \"$http_x_plan\" is not in log_format, which has $msec, $http_x_client, $http_x_kind, $request"],
    );
    let (log, table) = as_log("envoy");
    let scenario = SCENARIO.replace("path = \"trace.csv\"\nsource = \"kind\"", table);
    assert_bad_scenario(
        &scenario.replace("%REQ(x-kind)%", "%REQ(X-PLAN)%"),
        &[("web.log", &log)],
        &["traffic[0].source: \"%REQ(X-PLAN)%\" is not in log_format, which has %START_TIME%, %REQ(X-CLIENT)%, %REQ(X-KIND)%"],
    );
    // A JSON field no line has is most likely misnamed.
    let (log, table) = as_log("jsonl");
    let scenario = SCENARIO.replace("path = \"trace.csv\"\nsource = \"kind\"", table);
    assert_bad_scenario(
        &scenario.replace("source = \"kind\"", "source = \"knd\""),
        &[("web.log", &log)],
        &["traffic[0].source: \"web.log\" has no line with a value of \"knd\" to split by"],
    );
}

// The real nginx log (tests/fixtures/nginx/), split by client: the gateway
// agreement and every decision are the split log's too.
#[test]
fn splitting_a_replayed_nginx_log_keeps_its_agreement_with_nginx() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let imported = ratesim()
        .current_dir(manifest_dir())
        .args([
            "import",
            "tests/fixtures/nginx/nginx.conf",
            "--trace",
            "access.log",
        ])
        .output()
        .unwrap();
    assert!(imported.status.success());
    let whole = String::from_utf8(imported.stdout).unwrap();
    let location = "location = '= /delay'\n";
    assert!(whole.contains(location), "{whole}");
    let split = whole.replace(
        location,
        &format!("{location}source = \"$http_x_client\"\n"),
    );
    fs::copy(
        manifest_dir().join("tests/fixtures/nginx/access.log"),
        dir.join("access.log"),
    )
    .unwrap();
    let mut outs = Vec::new();
    for (name, text) in [("whole", &whole), ("split", &split)] {
        let path = dir.join(format!("{name}.toml"));
        fs::write(&path, text).unwrap();
        let out = dir.join(name);
        ratesim()
            .arg("run")
            .arg(&path)
            .args(["--decisions", "--no-plots", "--quiet", "--out"])
            .arg(&out)
            .assert()
            .success();
        outs.push(out);
    }
    for file in ["agreement.csv", "disagreements.csv", "summary.csv"] {
        assert_same_file(&outs[0].join(file), &outs[1].join(file));
    }
    // The /delay lines per client (awk '{print $5, $6}' access.log):
    // a 120, b 180, c 150, heavy 296, the clients in order of their first
    // /delay line; together the unsplit source's counts.
    let rows = |out: &Path| -> Vec<Vec<String>> {
        csv_rows(&out.join("sources.csv"))
            .1
            .into_iter()
            .filter(|r| r[0] == "delay-delay3")
            .collect()
    };
    let (whole_rows, split_rows) = (rows(&outs[0]), rows(&outs[1]));
    assert_eq!(whole_rows.len(), 1);
    let per_client: Vec<(&str, &str)> = split_rows
        .iter()
        .map(|r| (r[1].as_str(), r[3].as_str()))
        .collect();
    assert_eq!(
        per_client,
        [("a", "120"), ("b", "180"), ("c", "150"), ("heavy", "296")]
    );
    for column in 3..=8 {
        let sum: u64 = split_rows
            .iter()
            .map(|r| r[column].parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum.to_string(), whole_rows[0][column], "column {column}");
    }
    // Each decision on /delay names its client as its source.
    let (_, decisions) = csv_rows(&outs[1].join("decisions.csv"));
    let delay: Vec<&Vec<String>> = decisions
        .iter()
        .filter(|r| r[0] == "delay-delay3")
        .collect();
    assert_eq!(delay.len(), 746);
    assert!(delay.iter().all(|r| r[9] == r[3]));
}
