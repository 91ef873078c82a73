//! Self-contained HTML pages: `report.html` of a run directory ([`run`])
//! and the pieces the sweep's and `ratesim diff`'s pages share.
//!
//! A page is one file a reviewer opens from a mail or a ticket: styles and
//! the one small script inline, charts as `data:` URIs, nothing fetched
//! from the network. It reads the same without JavaScript; the script
//! only makes the tables sortable by a click on a column's header. Every
//! text from a file is escaped ([`escape`]) and nothing depends on the
//! time it was written, so the same files give the same bytes.

pub mod markdown;
pub mod run;

use std::fmt::Write as _;
use std::path::Path;

/// `s` with `&`, `<`, `>`, `"` and `'` as character references: safe in
/// element text and in a quoted attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 (RFC 4648 §4, with padding).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A PNG as an `<img>` whose source is a `data:` URI.
pub fn png_img(bytes: &[u8], alt: &str) -> String {
    format!(
        "<img alt=\"{}\" src=\"data:image/png;base64,{}\">",
        escape(alt),
        base64(bytes)
    )
}

/// A page: `title`, the shared style, `body` (already HTML), and the
/// script that sorts tables, last.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        escape(title)
    )
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
.scroll{overflow-x:auto;margin:1em 0}
table{border-collapse:collapse;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;white-space:nowrap}
th{background:#f3f3f3;text-align:left}
.scroll td:first-child{position:sticky;left:0;background:#fff}
.scroll th:first-child{position:sticky;left:0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer}
table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}
table.sortable th[aria-sort=descending]::after{content:' \\25BC'}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:.85em}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.meta{color:#555;font-size:.9em}
";

/// Sorts a `table.sortable` by the column whose header is clicked: as
/// numbers when every cell of the column is one, else as text.
const SCRIPT: &str = "
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var up=th.getAttribute('aria-sort')!=='ascending';
      t.querySelectorAll('thead th').forEach(function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',up?'ascending':'descending');
      var cell=function(r){return r.cells[i]?r.cells[i].textContent.trim():'';};
      var num=rows.every(function(r){var c=cell(r);return c===''||!isNaN(Number(c));});
      rows.sort(function(a,b){
        var x=cell(a),y=cell(b),d=num?(Number(x||0)-Number(y||0)):x.localeCompare(y);
        return up?d:-d;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
";

/// A table of `head` and `rows` (text, escaped here); a cell that reads
/// as a number is right-aligned. `id` names it for tests and links.
pub fn table(id: &str, head: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "<div class=\"scroll\"><table class=\"sortable\" id=\"{}\">\n<thead><tr>",
        escape(id)
    );
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            s.push_str(&cell(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

/// One `<td>`, right-aligned when it is a number.
pub fn cell(text: &str) -> String {
    if !text.is_empty() && text.parse::<f64>().is_ok() {
        format!("<td class=\"n\">{}</td>", escape(text))
    } else {
        format!("<td>{}</td>", escape(text))
    }
}

/// The header and rows of the CSV file `path`, as written; `None` when
/// it is absent or unreadable.
pub fn read_csv(path: &Path) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut r = csv::Reader::from_path(path).ok()?;
    let head = r.headers().ok()?.iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| rec.map(|rec| rec.iter().map(str::to_string).collect()))
        .collect::<Result<_, _>>()
        .ok()?;
    Some((head, rows))
}

/// A CSV file of `dir` as a section: a heading, what it holds, and the
/// table of its cells exactly as written (at most `max_rows`, saying how
/// many more the file has). Empty when the file is absent or has no rows.
pub fn csv_section(dir: &Path, file: &str, heading: &str, about: &str, max_rows: usize) -> String {
    let Some((head, mut rows)) = read_csv(&dir.join(file)) else {
        return String::new();
    };
    if rows.is_empty() {
        return String::new();
    }
    let all = rows.len();
    rows.truncate(max_rows);
    let more = if all > max_rows {
        format!(" The first {max_rows} of its {all} rows.")
    } else {
        String::new()
    };
    let id = file.trim_end_matches(".csv").replace('_', "-");
    format!(
        "<section id=\"section-{id}\">\n<h2>{}</h2>\n<p>{} (<code>{}</code>).{more}</p>\n{}</section>\n",
        escape(heading),
        escape(about),
        escape(file),
        table(&id, &head, &rows)
    )
}

/// Inline Markdown of ratesim's own notes as HTML: escaped, then
/// `` `code` `` and `**strong**` spans.
pub fn inline_markdown(text: &str) -> String {
    let escaped = escape(text);
    let mut out = String::new();
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            for (j, p) in part.split("**").enumerate() {
                if j % 2 == 1 {
                    let _ = write!(out, "<strong>{p}</strong>");
                } else {
                    out.push_str(p);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_replaces_every_character_html_reads_as_markup() {
        assert_eq!(
            escape(r#"<a href="x">Tom & Jerry's</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;"
        );
        assert_eq!(escape("plain – text"), "plain – text");
        assert_eq!(
            escape("&amp;"),
            "&amp;amp;",
            "escaping twice shows the text"
        );
    }

    #[test]
    fn base64_matches_the_rfc_4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded, "{plain:?}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
    }

    #[test]
    fn a_table_escapes_its_cells_and_right_aligns_numbers() {
        let t = table(
            "t",
            &["a<b".to_string(), "n".to_string()],
            &[vec!["<script>".to_string(), "1.5".to_string()]],
        );
        assert!(t.contains("<th>a&lt;b</th>"), "{t}");
        assert!(t.contains("<td>&lt;script&gt;</td>"), "{t}");
        assert!(t.contains("<td class=\"n\">1.5</td>"), "{t}");
        assert!(!t.contains("<script>"), "{t}");
    }

    #[test]
    fn inline_markdown_escapes_before_it_marks_up() {
        assert_eq!(
            inline_markdown("`a<b>` and **bold & <i>**"),
            "<code>a&lt;b&gt;</code> and <strong>bold &amp; &lt;i&gt;</strong>"
        );
    }
}
