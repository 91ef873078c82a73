//! `report.html` (docs/semantics.md §3, the run directory) and `ratesim
//! diff`: the pages a reviewer opens, tested through the binary.

use std::fs;
use std::path::Path;

use crate::common::{csv_rows, ratesim, read, read_text};

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
