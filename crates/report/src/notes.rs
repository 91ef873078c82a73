//! What `summary.md` says of the access logs a run replayed, read back from
//! the run directory's `summary.json`.

use crate::rundir::summary::Summary;

/// For `summary.md`: how each access log was read (whole-second stamps
/// placed by `subsecond`, lines with an empty key, a format without a
/// request path, verdicts from `$status`, bad lines skipped), from
/// `summary.json`.
pub(crate) fn summary_notes(dir: &std::path::Path) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join(crate::rundir::SUMMARY_JSON)) else {
        return String::new();
    };
    let Ok(summary) = serde_json::from_str::<Summary>(&text) else {
        return String::new();
    };
    let mut out = String::new();
    for t in summary.scenario.access_logs() {
        out.push_str(&format!(
            "- `{}`: {} log `{}`, {} requests",
            t.name, t.format, t.path, t.rows
        ));
        if let Some(l) = &t.location {
            out.push_str(&format!(" in location `{l}`"));
        }
        out.push_str(&format!(", re-ordered within {}", t.reorder));
        let n = t.lines_reordered;
        let plural = if n == 1 { "" } else { "s" };
        out.push_str(&format!(" ({n} line{plural} moved)"));
        if let Some(sub) = &t.subsecond {
            out.push_str(&format!("; subsecond {sub}"));
        }
        if t.lines_empty_key > 0 {
            let key = t.key.as_deref().unwrap_or("key");
            out.push_str(&format!(
                "; {} lines with an empty `{key}` not counted (nginx does not account a request whose zone key is empty)",
                t.lines_empty_key
            ));
        }
        if t.no_request_path {
            out.push_str(
                "; **the log format has no request path: every line goes to every limiter that reads it, whatever its location**",
            );
        }
        if let Some(s) = t.rejected_status {
            out.push_str(&format!(
                "; verdicts from `$status` (no `$limit_req_status`): {s} is rejected (limit_req_status), any other status not rejected"
            ));
        }
        if t.bad_lines_skipped > 0 {
            out.push_str(&format!("; **{} bad lines skipped**", t.bad_lines_skipped));
        }
        out.push_str(".\n");
    }
    if out.is_empty() {
        return out;
    }
    format!("## Access logs\n\n{out}\n")
}
