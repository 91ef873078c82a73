//! `diff.html`: [`Diff`]'s table and the two runs' charts side by side, in
//! one self-contained page (see `ratesim_report::html`).

use std::fmt::Write as _;
use std::path::Path;

use super::Diff;
use crate::report::html::{self, escape};
use crate::rundir::RUN_CHARTS;

pub const FILE: &str = crate::rundir::DIFF_HTML;

/// The page of `d`, its charts read from the two run directories.
pub fn render(d: &Diff) -> String {
    let (a, b) = (d.a.display().to_string(), d.b.display().to_string());
    let mut s = String::from("<h1>ratesim diff</h1>\n");
    let _ = writeln!(
        s,
        "<p>A = <code id=\"a\">{}</code><br>B = <code id=\"b\">{}</code></p>",
        escape(&a),
        escape(&b)
    );
    let _ = writeln!(
        s,
        "<p>{} limiter{} in both, matched by name. Every column of <code>summary.csv</code> that \
         differs, after the fields of the scenario that differ (limiter <code>{}</code>); change is \
         B − A, and its ratio to A.</p>",
        d.matched.len(),
        if d.matched.len() == 1 { "" } else { "s" },
        escape(super::SCENARIO)
    );
    let rows: Vec<Vec<String>> = d
        .changes
        .iter()
        .map(|c| {
            vec![
                c.limiter.clone(),
                c.column.clone(),
                c.a.clone(),
                c.b.clone(),
                c.change.clone(),
            ]
        })
        .collect();
    if rows.is_empty() {
        s.push_str("<p id=\"same\">No value differs.</p>\n");
    } else {
        let head: Vec<String> = ["limiter", "column", "A", "B", "change"]
            .iter()
            .map(|h| h.to_string())
            .collect();
        s.push_str(&html::table("diff", &head, &rows));
    }
    for (which, names) in [("A", &d.only_a), ("B", &d.only_b)] {
        if !names.is_empty() {
            let _ = writeln!(
                s,
                "<p id=\"only-{}\">Only in {which}: {}</p>",
                which.to_lowercase(),
                escape(&names.join(", "))
            );
        }
    }
    s.push_str(&charts(&d.a, &d.b));
    html::page("ratesim diff", &s)
}

/// The PNGs of either run, the registered charts in their order then the
/// others by name, A's beside B's.
fn charts(a: &Path, b: &Path) -> String {
    let pngs = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|e| {
                e.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".png"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut files: Vec<String> = pngs(a);
    files.extend(pngs(b));
    let rank = |f: &String| RUN_CHARTS.iter().position(|c| c == f).unwrap_or(usize::MAX);
    files.sort_by(|x, y| rank(x).cmp(&rank(y)).then(x.cmp(y)));
    files.dedup();
    if files.is_empty() {
        return String::new();
    }
    let mut s = String::from("<section id=\"section-charts\">\n<h2>Charts</h2>\n");
    for f in files {
        let stem = f.trim_end_matches(".png");
        let _ = writeln!(s, "<h3>{}</h3>\n<div class=\"side\">", escape(stem));
        for (which, dir) in [("A", a), ("B", b)] {
            let _ = write!(s, "<figure><figcaption>{which}</figcaption>");
            match std::fs::read(dir.join(&f)) {
                Ok(png) => s.push_str(&html::png_img(&png, &format!("{which}: {stem}"))),
                Err(_) => s.push_str("<p>not drawn</p>"),
            }
            s.push_str("</figure>\n");
        }
        s.push_str("</div>\n");
    }
    s.push_str("</section>\n");
    s
}
