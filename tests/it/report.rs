//! `report.html` (docs/semantics.md §3, the run directory) and `ratesim
//! diff`: the pages a reviewer opens, tested through the binary.

use std::fs;
use std::path::Path;

use crate::common::{csv_rows, entries, ratesim, read, read_text};

/// Runs `args` (after `run`) into `dir`, quietly, and expects success.
fn run_into(dir: &Path, args: &[&str]) {
    let out = ratesim()
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(dir)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;` and `&#39;` back to their characters.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text between `open` (from its end) and the next `close`, each time
/// it occurs in `s`.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find(open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(close) else { break };
        out.push(&rest[..j]);
        rest = &rest[j + close.len()..];
    }
    out
}

/// The header and rows of the table `id` of an HTML page, unescaped.
pub fn html_table(page: &str, id: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let open = format!("id=\"{id}\">");
    let start = page.find(&open).unwrap_or_else(|| panic!("no table {id}"));
    let table = &page[start..start + page[start..].find("</table>").unwrap()];
    let head = between(table, "<th>", "</th>")
        .into_iter()
        .map(unescape)
        .collect();
    let body = &table[table.find("<tbody>").unwrap()..];
    let rows = between(body, "<tr", "</tr>")
        .into_iter()
        .map(|row| {
            between(row, "<td", "</td>")
                .into_iter()
                .map(|cell| unescape(&cell[cell.find('>').unwrap() + 1..]))
                .collect()
        })
        .collect();
    (head, rows)
}

/// Every `src="…"` and `href="…"` value of a page.
fn links(page: &str) -> Vec<&str> {
    let mut all = between(page, "src=\"", "\"");
    all.extend(between(page, "href=\"", "\""));
    all
}

/// What every report must be: self-contained, nothing fetched.
pub fn assert_self_contained(page: &str) {
    for link in links(page) {
        assert!(
            !link.starts_with("http://")
                && !link.starts_with("https://")
                && !link.starts_with("//"),
            "a link to the network: {link}"
        );
    }
    assert!(!page.contains("<script src"), "an external script");
    assert!(!page.contains("<link"), "an external stylesheet");
    assert!(!page.contains("@import"), "an imported stylesheet");
}

/// Every PNG of `dir` is in `page` as a data URI.
pub fn assert_every_png_inline(dir: &Path, page: &str) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "png") {
            let uri = format!(
                "data:image/png;base64,{}",
                ratesim::report::html::base64(&read(&path))
            );
            assert!(page.contains(&uri), "{} is not inline", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn the_boundary_report_is_one_small_page_holding_the_summary_csvs_numbers_and_every_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    run_into(&dir, &["boundary"]);
    let path = dir.join("report.html");
    let size = fs::metadata(&path).unwrap().len();
    assert!(size < 2_000_000, "report.html is {size} bytes");
    let page = read_text(&path);
    assert_self_contained(&page);

    let (head, rows) = csv_rows(&dir.join("summary.csv"));
    assert_eq!(html_table(&page, "summary"), (head, rows.clone()));
    assert_eq!(rows.len(), 7);
    let (head, rows) = csv_rows(&dir.join("top_keys.csv"));
    assert_eq!(html_table(&page, "top-keys"), (head, rows));
    let (head, rows) = csv_rows(&dir.join("sources.csv"));
    assert_eq!(html_table(&page, "sources"), (head, rows));

    let charts = assert_every_png_inline(&dir, &page);
    assert!(charts >= 5, "{charts} charts");
    // The captions are summary.md's.
    let md = read_text(&dir.join("summary.md"));
    let caption = md
        .lines()
        .find(|l| l.starts_with("One panel per limiter"))
        .expect("the timeline's caption");
    assert!(
        page.contains(&ratesim::report::html::escape(caption)),
        "{caption}"
    );

    // The purpose, the policy, the scenario's text (escaped), the version
    // and the command line.
    assert!(page.contains("A fixed window passes 2x its limit"));
    assert!(page.contains("<strong>100 per 1s</strong>"));
    assert!(
        page.contains("name = &quot;boundary&quot;"),
        "the scenario text, escaped"
    );
    assert!(page.contains(concat!("ratesim ", env!("CARGO_PKG_VERSION"))));
    let command = between(&page, "<code id=\"command\">", "</code>");
    assert_eq!(command.len(), 1);
    assert!(
        command[0].starts_with("ratesim run boundary --out ") && command[0].ends_with(" --quiet"),
        "{}",
        command[0]
    );
}

#[test]
fn no_html_skips_the_report_and_plot_rewrites_it_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    run_into(&dir, &["boundary", "--no-html"]);
    assert!(!dir.join("report.html").exists());
    assert!(dir.join("summary.md").is_file());

    run_into(&dir, &["boundary"]);
    let written = read(&dir.join("report.html"));
    fs::remove_file(dir.join("report.html")).unwrap();
    fs::remove_file(dir.join("timeline.png")).unwrap();
    let out = ratesim().arg("plot").arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("report.html"));
    assert!(
        read(&dir.join("report.html")) == written,
        "plot wrote another report.html than run did"
    );

    // `--force`-free replacement: report.html and run.json are ratesim's
    // own, so a second run replaces the directory.
    run_into(&dir, &["boundary", "--seed", "8"]);
    assert!(read_text(&dir.join("report.html")).contains("--seed 8"));
}

/// A run with neither charts nor a report draws summary.md without
/// reading its time series back (crates/report/src/render.rs): the same
/// summary.md as a run that reads it for its report.
#[test]
fn summary_md_is_the_same_whether_or_not_the_time_series_is_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    for scenario in ["retry-storm", "access-log"] {
        let bare = tmp.path().join(format!("{scenario}-bare"));
        let with_report = tmp.path().join(format!("{scenario}-report"));
        run_into(&bare, &[scenario, "--no-plots", "--no-html"]);
        run_into(&with_report, &[scenario, "--no-plots"]);
        assert!(with_report.join("report.html").is_file());
        let md = read_text(&bare.join("summary.md"));
        assert!(md.contains("| limiter | algorithm |"), "{md}");
        assert_eq!(md, read_text(&with_report.join("summary.md")), "{scenario}");
    }
}

#[test]
fn an_explain_runs_report_has_its_command_line_and_scenario_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gcra");
    let out = ratesim()
        .args(["explain", "gcra", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_str(&read_text(&dir.join("run.json"))).unwrap();
    assert_eq!(run["command"][1], "explain");
    assert_eq!(run["scenario_text"], ratesim::explain::gcra::SCENARIO);
    let page = read_text(&dir.join("report.html"));
    assert!(page.contains("id=\"command\">ratesim explain gcra --out "));
    assert!(page.contains(&ratesim::report::html::escape(
        ratesim::explain::gcra::SCENARIO
    )));
}

#[test]
fn the_report_escapes_what_the_scenario_says() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("s.toml");
    fs::write(
        &scenario,
        "name = \"t\"\ndescription = \"<script>alert('x')</script> & \\\"more\\\"\"\nduration = \"2s\"\n\
         [defaults]\nlimit = 10\nwindow = \"1s\"\n[[limiter]]\nalgorithm = \"token_bucket\"\n\
         [[traffic]]\npattern = \"steady\"\nrate = \"5/1s\"\n",
    )
    .unwrap();
    let dir = tmp.path().join("run");
    run_into(&dir, &[scenario.to_str().unwrap(), "--no-plots"]);
    let page = read_text(&dir.join("report.html"));
    assert_self_contained(&page);
    assert!(!page.contains("<script>alert"), "unescaped description");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;"));
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "only the sorting script"
    );
}

#[test]
fn a_sweeps_report_holds_its_charts_its_recommendation_and_sweep_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    for axes in [
        &["--vary", "defaults.limit=5,10,20"][..],
        &[
            "--vary",
            "defaults.limit=5,10",
            "--vary",
            "traffic[0].clients=2,4",
        ],
    ] {
        let _ = fs::remove_dir_all(&dir);
        let out = ratesim()
            .args(["sweep", "poisson"])
            .args(axes)
            .args([
                "--require",
                "rejected_share<=0.5",
                "--minimize",
                "defaults.limit",
                "--quiet",
                "--out",
            ])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = read_text(&dir.join("report.html"));
        assert_self_contained(&page);
        let charts = assert_every_png_inline(&dir, &page);
        assert!(charts >= 1, "{axes:?}: no chart");
        let (head, rows) = csv_rows(&dir.join("sweep.csv"));
        assert_eq!(html_table(&page, "sweep"), (head, rows));
        assert!(page.contains("<section id=\"section-recommendation\">"));
        let md = read_text(&dir.join("recommendation.md"));
        let first = md
            .lines()
            .find_map(|l| l.strip_prefix("**")?.split("**").next())
            .unwrap();
        assert!(
            page.contains(&ratesim::report::html::escape(first)),
            "{first}"
        );
        assert!(
            page.contains("Its neighbours on the grid")
                == md.contains("Its neighbours on the grid")
        );
    }
}

#[test]
fn a_sweep_with_no_html_writes_every_other_file_and_no_page() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |dir: &Path, extra: &[&str]| {
        let out = ratesim()
            .args(["sweep", "poisson", "--vary", "defaults.limit=5,10"])
            .args(["--require", "rejected_share<=0.5", "--quiet", "--out"])
            .arg(dir)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        entries(dir)
    };
    let (with, without) = (tmp.path().join("with"), tmp.path().join("without"));
    let all = sweep(&with, &[]);
    let lean = sweep(&without, &["--no-html"]);
    assert!(all.contains("report.html"), "{all:?}");
    let expected: std::collections::BTreeSet<String> =
        all.into_iter().filter(|n| n != "report.html").collect();
    assert_eq!(lean, expected);
    for name in ["sweep.csv", "recommendation.md", "summary.md"] {
        assert_eq!(
            fs::read(with.join(name)).unwrap(),
            fs::read(without.join(name)).unwrap(),
            "{name}"
        );
    }
}

/// `ratesim diff` with `args`: its exit status and stdout.
fn diff(args: &[&Path]) -> (i32, String, String) {
    let out = ratesim().arg("diff").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The cells of each line of `ratesim diff`'s table (split on runs of
/// two spaces or more).
fn diff_rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("limiter "))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with("only in"))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn diff_of_two_runs_of_one_command_finds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    run_into(&a, &["boundary"]);
    run_into(&b, &["boundary"]);
    let (code, stdout, _) = diff(&[&a, &b]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("7 limiters in both; no value of summary.csv or the scenario differs"),
        "{stdout}"
    );
    assert!(diff_rows(&stdout).is_empty(), "{stdout}");
    assert!(!stdout.contains("only in"), "{stdout}");
}

#[test]
fn diff_lists_the_changed_scenario_fields_first_then_each_changed_column() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("a-vs-b"),
    );
    run_into(&a, &["boundary"]);
    run_into(&b, &["boundary", "--set", "defaults.limit=50"]);
    let (code, stdout, stderr) = diff(&[&a, &b, Path::new("--out"), &out]);
    assert_eq!(code, 0, "{stderr}");
    let rows = diff_rows(&stdout);
    let first_limiter = rows.iter().position(|r| r[0] != "(scenario)").unwrap();
    assert!(first_limiter > 0, "{stdout}");
    assert!(rows[first_limiter..].iter().all(|r| r[0] != "(scenario)"));
    assert!(
        rows.contains(&vec![
            "(scenario)".to_string(),
            "defaults.limit".into(),
            "100".into(),
            "50".into(),
            "-50 (-50.0%)".into()
        ]),
        "{stdout}"
    );
    // A limiter's parameters by its name, as README's "Sharing results"
    // quotes them.
    assert!(
        rows.contains(&vec![
            "(scenario)".to_string(),
            "limiter[gcra].rate".into(),
            "1/10ms".into(),
            "1/20ms".into()
        ]),
        "{stdout}"
    );
    // Every row is what the two summary.csv files say, and every differing
    // cell of theirs is a row.
    let (head, ra) = csv_rows(&a.join("summary.csv"));
    let (_, rb) = csv_rows(&b.join("summary.csv"));
    let mut expected = Vec::new();
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x[0], y[0], "the same limiters in the same order");
        for (i, h) in head.iter().enumerate() {
            if x[i] != y[i] {
                expected.push((x[0].clone(), h.clone(), x[i].clone(), y[i].clone()));
            }
        }
    }
    let got: Vec<(String, String, String, String)> = rows[first_limiter..]
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[2].clone(), r[3].clone()))
        .collect();
    assert_eq!(got, expected);
    assert!(got.contains(&(
        "fixed_window".into(),
        "peak_in_window".into(),
        "200".into(),
        "100".into()
    )));

    // diff.html: the same rows, both runs' charts, nothing fetched.
    let page = read_text(&out.join("diff.html"));
    assert_self_contained(&page);
    let (h, html_rows) = html_table(&page, "diff");
    assert_eq!(h, ["limiter", "column", "A", "B", "change"]);
    assert_eq!(html_rows.len(), rows.len());
    assert_eq!(html_rows[0][..4], rows[0][..4]);
    assert_every_png_inline(&a, &page);
    assert_every_png_inline(&b, &page);

    // --out follows run's rules: its own directory is replaced, a file
    // ratesim did not write is never touched, and A or B is never a target.
    let (code, _, stderr) = diff(&[&a, &b, Path::new("--out"), &out]);
    assert_eq!(code, 0, "{stderr}");
    fs::write(out.join("notes.txt"), "mine").unwrap();
    let (code, _, stderr) = diff(&[&a, &b, Path::new("--out"), &out]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(read_text(&out.join("notes.txt")), "mine");
    let (code, _, stderr) = diff(&[&a, &b, Path::new("--out"), &a]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(": is \"") && stderr.contains("which this run reads"),
        "{stderr}"
    );
    assert!(a.join("summary.csv").is_file());
}

#[test]
fn diff_names_the_limiters_one_run_has_and_refuses_what_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one.toml");
    fs::write(&one, crate::common::BASE).unwrap();
    let two = tmp.path().join("two.toml");
    fs::write(
        &two,
        format!(
            "{}\n[[limiter]]\nalgorithm = \"gcra\"\n",
            crate::common::BASE
        ),
    )
    .unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    run_into(&a, &[one.to_str().unwrap(), "--no-plots"]);
    run_into(&b, &[two.to_str().unwrap(), "--no-plots"]);
    let (code, stdout, _) = diff(&[&a, &b]);
    assert_eq!(code, 0);
    assert!(stdout.contains("1 limiter in both"), "{stdout}");
    assert!(stdout.contains("only in B: gcra"), "{stdout}");
    assert!(!stdout.contains("only in A"), "{stdout}");
    let (_, stdout, _) = diff(&[&b, &a]);
    assert!(stdout.contains("only in A: gcra"), "{stdout}");

    for bad in [tmp.path().join("nowhere"), tmp.path().to_path_buf()] {
        let (code, stdout, stderr) = diff(&[&a, &bad]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains(&bad.display().to_string()), "{stderr}");
        assert!(stderr.contains("run director"), "{stderr}");
    }
}

// docs/semantics.md §3: report.html holds every table of the directory,
// chains among them.
#[test]
fn a_run_with_chains_reports_each_chain_and_its_members_as_summary_csv_counts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    run_into(&dir, &["plans", "--no-plots"]);
    let page = read_text(&dir.join("report.html"));
    let (head, rows) = html_table(&page, "chains");
    assert_eq!(
        head,
        [
            "chain",
            "mode",
            "limiter",
            "algorithm",
            "attempts",
            "admitted",
            "delayed",
            "rejected",
            "overruled"
        ]
    );
    let (sum_head, sum_rows) = csv_rows(&dir.join("summary.csv"));
    let col = |name: &str| sum_head.iter().position(|h| h == name).unwrap();
    let chains: Vec<&Vec<String>> = sum_rows
        .iter()
        .filter(|r| r[col("algorithm")] == "chain")
        .collect();
    assert!(!chains.is_empty(), "plans has a chain");
    // Every chain, then each of its members: the rows of summary.csv.
    let mut expected = 0;
    for c in &chains {
        expected += 1 + sum_rows
            .iter()
            .filter(|r| r[col("chain")] == c[col("limiter")])
            .count();
    }
    assert_eq!(rows.len(), expected);
    for row in &rows {
        let s = sum_rows
            .iter()
            .find(|r| r[col("limiter")] == row[2])
            .unwrap();
        for (i, name) in head.iter().enumerate().skip(3) {
            assert_eq!(row[i], s[col(name)], "{name} of {}", row[2]);
        }
        let member = s[col("algorithm")] != "chain";
        assert_eq!(
            &row[0],
            if member {
                &s[col("chain")]
            } else {
                &s[col("limiter")]
            }
        );
        if member {
            let n = |name: &str| {
                row[head.iter().position(|h| h == name).unwrap()]
                    .parse::<u64>()
                    .unwrap()
            };
            assert_eq!(
                n("attempts"),
                n("admitted") + n("delayed") + n("rejected") + n("overruled")
            );
        }
    }
    // A run without chains has no such section.
    let plain = tmp.path().join("plain");
    run_into(&plain, &["boundary", "--no-plots"]);
    assert!(!read_text(&plain.join("report.html")).contains("section-chains"));
}
