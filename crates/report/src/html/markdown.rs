//! ratesim's own Markdown (`summary.md`, `recommendation.md`) as HTML:
//! the few shapes those files use — headings, paragraphs, `- ` lists,
//! pipe tables, an image alone on its line, and inline `` `code` ``,
//! `**strong**` and `[text](file)` — and nothing else. An image becomes
//! a `data:` URI of the file in the directory, a link its text (the page
//! stands alone, without the files beside it).

use std::fmt::Write as _;
use std::path::Path;

use super::{cell, escape, inline_markdown, png_img};

/// `md` as HTML; images are read from `dir` (one missing is left out).
pub fn to_html(md: &str, dir: &Path) -> String {
    let mut out = String::new();
    let mut para: Vec<&str> = Vec::new();
    let mut list: Vec<&str> = Vec::new();
    let mut rows: Vec<&str> = Vec::new();
    let flush =
        |out: &mut String, para: &mut Vec<&str>, list: &mut Vec<&str>, rows: &mut Vec<&str>| {
            if !para.is_empty() {
                let _ = writeln!(out, "<p>{}</p>", inline(&para.join(" ")));
                para.clear();
            }
            if !list.is_empty() {
                out.push_str("<ul>\n");
                for item in list.iter() {
                    let _ = writeln!(out, "<li>{}</li>", inline(item));
                }
                out.push_str("</ul>\n");
                list.clear();
            }
            if !rows.is_empty() {
                out.push_str(&table(rows));
                rows.clear();
            }
        };
    for line in md.lines() {
        let t = line.trim_end();
        if t.starts_with('|') {
            if rows.is_empty() {
                flush(&mut out, &mut para, &mut list, &mut rows);
            }
            rows.push(t);
            continue;
        }
        if let Some(item) = t.strip_prefix("- ") {
            if list.is_empty() {
                flush(&mut out, &mut para, &mut list, &mut rows);
            }
            list.push(item);
            continue;
        }
        let level = t.chars().take_while(|&c| c == '#').count();
        let heading = (1..=3).contains(&level) && t[level..].starts_with(' ');
        let picture = image(t);
        if !t.is_empty() && !heading && picture.is_none() {
            if !list.is_empty() || !rows.is_empty() {
                flush(&mut out, &mut para, &mut list, &mut rows);
            }
            para.push(t);
            continue;
        }
        flush(&mut out, &mut para, &mut list, &mut rows);
        if heading {
            // One level down: the page's own title is its `<h1>`.
            let h = level + 1;
            let _ = writeln!(out, "<h{h}>{}</h{h}>", inline(t[level..].trim()));
        } else if let Some((alt, file)) = picture {
            if let Ok(png) = std::fs::read(dir.join(file)) {
                let _ = writeln!(
                    out,
                    "<figure id=\"chart-{}\">{}</figure>",
                    escape(file.trim_end_matches(".png")),
                    png_img(&png, alt)
                );
            }
        }
    }
    flush(&mut out, &mut para, &mut list, &mut rows);
    out
}

/// `![alt](file)` alone on a line.
fn image(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("![")?;
    let (alt, rest) = rest.split_once("](")?;
    let file = rest.strip_suffix(')')?;
    (!file.contains(['(', ')', '/'])).then_some((alt, file))
}

/// Inline Markdown, with `[text](target)` as its text.
fn inline(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        match after.split_once("](").and_then(|(label, tail)| {
            let end = tail.find(')')?;
            (!label.contains('[')).then_some((label, &tail[end + 1..]))
        }) {
            Some((label, tail)) => {
                plain.push_str(&rest[..i]);
                plain.push_str(label);
                rest = tail;
            }
            None => {
                plain.push_str(&rest[..=i]);
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    inline_markdown(&plain)
}

/// A pipe table: its first row the header, its `|---|` row skipped.
fn table(rows: &[&str]) -> String {
    let cells = |row: &str| -> Vec<String> {
        let inner = row.trim().trim_start_matches('|');
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'|') => {
                    cur.push('|');
                    chars.next();
                }
                '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
                c => cur.push(c),
            }
        }
        out.push(cur.trim().to_string());
        out
    };
    let mut s = String::from("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for h in cells(rows[0]) {
        let _ = write!(s, "<th>{}</th>", inline(&h));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for row in &rows[1..] {
        if row.chars().all(|c| "|-: ".contains(c)) {
            continue;
        }
        s.push_str("<tr>");
        for c in cells(row) {
            if c.contains(['`', '*', '[']) {
                let _ = write!(s, "<td>{}</td>", inline(&c));
            } else {
                s.push_str(&cell(&c));
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lists_tables_and_links_become_html_and_text_is_escaped() {
        let md = "# T <x>\n\nA `a&b` line\nwrapped.\n\n- one\n- [two](two.md)\n\n| a | b |\n|---|--:|\n| x\\|y | 1.5 |\n";
        let html = to_html(md, Path::new("/nonexistent"));
        assert!(html.contains("<h2>T &lt;x&gt;</h2>"), "{html}");
        assert!(
            html.contains("<p>A <code>a&amp;b</code> line wrapped.</p>"),
            "{html}"
        );
        assert!(html.contains("<li>two</li>"), "{html}");
        assert!(html.contains("<th>a</th><th>b</th>"), "{html}");
        assert!(
            html.contains("<td>x|y</td><td class=\"n\">1.5</td>"),
            "{html}"
        );
        assert!(!html.contains("---"), "{html}");
    }
}
