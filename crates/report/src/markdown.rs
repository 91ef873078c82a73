//! `summary.md`: the comparison table and the run's charts, linked, ready
//! to paste into a design document or a pull request.
//!
//! It is written from the run directory (through the same loader as the
//! charts, which reads the time series only for them, a report, or a
//! chart's caption), so `ratesim plot` rewrites it too. Images are linked by
//! relative path: keep `summary.md` beside its PNGs.

use std::fs;
use std::path::Path;

use super::charts::{self, style, RunData};

pub const FILE: &str = crate::rundir::SUMMARY_MD;

/// The Markdown for `data`: it links the registered charts `drawn` (or,
/// when `None`, those present in `dir`), in their order, then any other
/// PNG in `dir` (such as `ratesim explain`'s close-ups) by name.
pub fn render(
    data: &RunData,
    dir: &Path,
    drawn: Option<&[&'static charts::Chart]>,
) -> anyhow::Result<String> {
    let images = images(data, dir, drawn)?;
    Ok(super::top_keys::with_sections(document(data, &images), dir))
}

/// The document itself, given the images to link and what each shows.
pub fn document(data: &RunData, images: &[(String, Option<String>)]) -> String {
    let mut md = format!("# {} — ratesim results\n\n", escape(&data.name));
    let description = data.description.trim();
    if !description.is_empty() {
        let stop = if description.ends_with(['.', '!', '?']) {
            ""
        } else {
            "."
        };
        md.push_str(&format!("{description}{stop}\n\n"));
    }
    let (policy, range, rest) = policy(data);
    md.push_str(&format!("Policy: **{policy}**{range} · {rest}\n\n"));
    let (head, rows) = overview(data);
    md.push_str(&format!("| {} |\n", head.join(" | ")));
    let align: Vec<&str> = head
        .iter()
        .enumerate()
        .map(|(i, _)| if i < 3 { "---" } else { "--:" })
        .collect();
    md.push_str(&format!("|{}|\n", align.join("|")));
    let peak = head.iter().position(|h| h == "peak / limit");
    for (l, mut row) in data.limiters.iter().zip(rows) {
        for cell in &mut row[..3] {
            *cell = escape(cell);
        }
        if let Some(cell) = peak.filter(|_| l.peak_in_window > l.limit) {
            row[cell] = format!("**{}**", row[cell]);
        }
        md.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    md.push_str(&format!(
        "\n`peak / limit`: the most one key got through within any one window, against {} (bold: above it).\n",
        if data.shared_limit().is_some() {
            "the policy's limit"
        } else {
            "that limiter's own policy: its own limit, or its own rate × the window, rounded up"
        }
    ));
    if !images.is_empty() {
        md.push_str("\n## Charts\n");
        let mut names = vec![data.name.as_str()];
        names.extend(data.limiters.iter().map(|l| l.name.as_str()));
        let missing = style::missing_glyphs(&names.concat());
        if !missing.is_empty() {
            let shown: String = missing.iter().take(20).collect();
            md.push_str(&format!(
                "\nThe charts' embedded font (DejaVu Sans) has no glyph for {} character{} in these names ({shown}{}): the charts draw {} as `?`.\n",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                if missing.len() > 20 { "…" } else { "" },
                if missing.len() == 1 { "it" } else { "them" },
            ));
        }
        if data.limiters.len() > charts::MAX_CHARTED {
            md.push_str(&format!(
                "\nThe charts show the first {} of the {} limiters; the table above has them all.\n",
                charts::MAX_CHARTED,
                data.limiters.len()
            ));
        }
        for (file, about) in images {
            let stem = file.trim_end_matches(".png");
            md.push_str(&format!("\n### {stem}\n\n"));
            if let Some(about) = about {
                md.push_str(&format!("{}\n\n", sentence(about)));
            }
            md.push_str(&format!("![{} — {stem}]({file})\n", escape(&data.name)));
        }
    }
    md
}

/// `summary.md`'s table, as text: its header and a row per limiter
/// (limiter, algorithm, key, the counts, `gave up` when clients gave up,
/// `peak / limit`, delay p99, state bytes per key, keys).
pub fn overview(data: &RunData) -> (Vec<String>, Vec<Vec<String>>) {
    let gave_up = data
        .limiters
        .iter()
        .any(|l| l.gave_up.is_some_and(|g| g > 0));
    let mut head = vec![
        "limiter",
        "algorithm",
        "key",
        "attempts",
        "admitted",
        "delayed",
        "rejected",
    ];
    if gave_up {
        head.push("gave up");
    }
    head.extend([
        "peak / limit",
        "delay p99",
        "state B/key (mean / peak)",
        "keys",
    ]);
    let rows = data
        .limiters
        .iter()
        .map(|l| {
            let mut row = vec![
                l.name.clone(),
                l.algorithm.clone(),
                l.key_by.clone(),
                l.attempts.to_string(),
                l.admitted.to_string(),
                l.delayed.to_string(),
                l.rejected.to_string(),
            ];
            if gave_up {
                row.push(l.gave_up.unwrap_or(0).to_string());
            }
            row.push(format!("{} / {}", l.peak_in_window, l.limit));
            row.push(match l.delay_p99_ms {
                Some(ms) => format!("{} ms", style::millis(ms)),
                None => "–".into(),
            });
            let mean = style::trim(l.state_mean, 2);
            row.push(if mean == l.state_peak.to_string() {
                mean
            } else {
                format!("{mean} / {}", l.state_peak)
            });
            row.push(l.keys.to_string());
            row
        })
        .collect();
    (head.into_iter().map(String::from).collect(), rows)
}

/// The run's policy as `summary.md` states it, in three parts: the limit
/// (bold there), the range of the limiters' own limits when they differ
/// (` (a–b)`, else empty), and the rest (limiters, duration, seed,
/// resolution).
pub fn policy(data: &RunData) -> (String, String, String) {
    let window = style::duration(data.window_ns);
    let (policy, range) = match data.shared_limit() {
        Some(limit) => (format!("{limit} per {window}"), String::new()),
        None => {
            let limits = data.limiters.iter().map(|l| l.limit);
            (
                format!("each limiter's own limit per {window}"),
                format!(
                    " ({}–{})",
                    limits.clone().min().unwrap_or(0),
                    limits.max().unwrap_or(0)
                ),
            )
        }
    };
    let rest = format!(
        "{} limiter{} · {} simulated · seed {} · time-series resolution {}",
        data.limiters.len(),
        if data.limiters.len() == 1 { "" } else { "s" },
        style::duration(data.duration_ns),
        data.seed,
        style::duration(data.resolution_ns),
    );
    (policy, range, rest)
}

/// The images of the run in `dir`, each with what it shows: the
/// registered charts `drawn` (or, when `None`, those present in `dir`),
/// in their order, then any other PNG in `dir` (such as `ratesim
/// explain`'s close-ups) by name.
pub fn images(
    data: &RunData,
    dir: &Path,
    drawn: Option<&[&'static charts::Chart]>,
) -> anyhow::Result<Vec<(String, Option<String>)>> {
    let mut images: Vec<(String, Option<String>)> = charts::CHARTS
        .iter()
        .filter(|c| match drawn {
            Some(drawn) => drawn.iter().any(|d| d.file == c.file),
            None => dir.join(c.file).is_file(),
        })
        .map(|c| (c.file.to_string(), Some((c.caption)(data))))
        .collect();
    let mut others: Vec<String> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png") && charts::chart(n).is_none())
        .collect();
    others.sort();
    images.extend(others.into_iter().map(|n| {
        let about = (n == charts::zoom::FILE).then(|| charts::zoom::ABOUT.to_string());
        (n, about)
    }));
    Ok(images)
}

/// A chart's caption as a sentence: capitalised, ending with a stop.
pub fn sentence(about: &str) -> String {
    let stop = if about.ends_with('.') { "" } else { "." };
    format!("{}{stop}", capitalise(about))
}

/// Table cells and titles: a `|` would end the cell.
fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::run_data;

    #[test]
    fn the_table_marks_a_limiter_above_the_limit_and_links_images_relatively() {
        let d = run_data(&[("fixed_window", 200), ("sliding|log", 100)], 100);
        let md = document(
            &d,
            &[
                ("peak.png".into(), Some("the peaks".into())),
                ("zoom.png".into(), None),
            ],
        );
        assert!(md.contains("| **200 / 100** |"), "{md}");
        assert!(md.contains("| 100 / 100 |"), "{md}");
        assert!(md.contains("sliding\\|log"), "{md}");
        assert!(md.contains("](peak.png)\n"), "{md}");
        assert!(md.contains("](zoom.png)\n"), "{md}");
        assert!(md.contains("The peaks."), "{md}");
        assert!(!md.contains("gave up"), "no retries, no column: {md}");
    }
}
