//! Envoy's `envoy.filters.http.local_ratelimit` → `implementation =
//! "envoy"` (lazy token bucket, current Envoy) or `"envoy-timer"`
//! (interval bucket, Envoy's earlier timer refill).
//!
//! | Envoy | ratesim |
//! |---|---|
//! | `token_bucket.max_tokens` | `capacity` (`max_tokens`) |
//! | `tokens_per_fill` (default 1) / `fill_interval` | `rate` (`tokens_per_fill`, `fill_interval`) |
//! | one bucket per filter | `key_by = "global"` |
//! | `local_rate_limit_per_downstream_connection: true` | a note: ratesim has no connections |
//! | `filter_enforced` 0% | a note: shadow mode, the same decisions |
//! | `descriptors[]` with their own `token_bucket` | one limiter each, with a note on which requests match |
//!
//! Every local rate limit found anywhere in the file is read (the
//! listener's HTTP filter and any `typed_per_filter_config` of a route).

use super::yaml::YamlNode;
use super::{Gateway, Import, Imported};
use crate::clock::Nanos;
use crate::error::InputError;

/// A protobuf Duration: `"0.05s"` or `{seconds, nanos}`.
fn duration(n: &YamlNode) -> Option<Nanos> {
    match n {
        YamlNode::Scalar(s, _) => {
            let s = s.trim();
            let secs = s.strip_suffix('s')?;
            crate::clock::parse_seconds(secs).ok()
        }
        YamlNode::Map(..) => {
            let secs: u64 = n
                .get("seconds")
                .and_then(YamlNode::str)
                .unwrap_or("0")
                .parse()
                .ok()?;
            let nanos: u64 = n
                .get("nanos")
                .and_then(YamlNode::str)
                .unwrap_or("0")
                .parse()
                .ok()?;
            Some(Nanos(secs.checked_mul(1_000_000_000)?.checked_add(nanos)?))
        }
        _ => None,
    }
}

/// A runtime fractional percent's default as a fraction of 1 000 000.
fn percent(n: &YamlNode) -> Option<u64> {
    let d = n.get("default_value").unwrap_or(n);
    let num: u64 = d
        .get("numerator")
        .and_then(YamlNode::str)
        .unwrap_or("0")
        .parse()
        .ok()?;
    let per = match d
        .get("denominator")
        .and_then(YamlNode::str)
        .unwrap_or("HUNDRED")
    {
        "HUNDRED" => 10_000,
        "TEN_THOUSAND" => 100,
        "MILLION" => 1,
        _ => return None,
    };
    Some(num * per)
}

fn is_local_ratelimit(n: &YamlNode) -> bool {
    let typed = n
        .get("@type")
        .and_then(YamlNode::str)
        .is_some_and(|t| t.contains("local_ratelimit") && t.ends_with("LocalRateLimit"));
    typed || (n.get("token_bucket").is_some() && n.get("stat_prefix").is_some())
}

fn find<'n>(n: &'n YamlNode, found: &mut Vec<&'n YamlNode>, formats: &mut Vec<String>) {
    if is_local_ratelimit(n) {
        found.push(n);
    }
    if let Some(f) = n.get("text_format").and_then(YamlNode::str) {
        formats.push(f.to_string());
    }
    if let Some(f) = n
        .get("text_format_source")
        .and_then(|t| t.get("inline_string"))
        .and_then(YamlNode::str)
    {
        formats.push(f.to_string());
    }
    match n {
        YamlNode::Map(entries, _) => entries.iter().for_each(|(_, v)| find(v, found, formats)),
        YamlNode::Seq(items, _) => items.iter().for_each(|v| find(v, found, formats)),
        YamlNode::Scalar(..) => {}
    }
}

/// Token bucket fields → `(max_tokens, tokens_per_fill, fill_interval)`.
fn bucket(file: &str, b: &YamlNode) -> Result<(u64, u64, Nanos), InputError> {
    let at = |n: &YamlNode, msg: String| InputError::new(format!("{file}:{}: {msg}", n.line()));
    let count = |key: &str, default: Option<u64>| -> Result<u64, InputError> {
        match b.get(key) {
            None => default.ok_or_else(|| at(b, format!("token_bucket has no {key}"))),
            Some(v) => v
                .str()
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|&c| c > 0 && c <= crate::fields::MAX_COUNT)
                .ok_or_else(|| {
                    at(
                        v,
                        format!(
                            "token_bucket.{key}: expected a whole number from 1 to 10^12 (ratesim's counts)"
                        ),
                    )
                }),
        }
    };
    let max_tokens = count("max_tokens", None)?;
    let per_fill = count("tokens_per_fill", Some(1))?;
    let fill = b
        .get("fill_interval")
        .ok_or_else(|| at(b, "token_bucket has no fill_interval".into()))?;
    let interval = duration(fill).filter(|d| d.0 > 0).ok_or_else(|| {
        at(
            fill,
            "token_bucket.fill_interval: expected a duration such as \"0.05s\"".into(),
        )
    })?;
    Ok((max_tokens, per_fill, interval))
}

fn limiter(
    file: &str,
    line: usize,
    what: String,
    name: String,
    (max_tokens, per_fill, interval): (u64, u64, Nanos),
    timer: bool,
    notes: Vec<String>,
) -> Imported {
    let fields = if timer {
        vec![
            ("max_tokens".into(), max_tokens.to_string()),
            ("tokens_per_fill".into(), per_fill.to_string()),
            ("fill_interval".into(), format!("\"{interval}\"")),
        ]
    } else {
        vec![
            ("capacity".into(), max_tokens.to_string()),
            ("rate".into(), format!("\"{per_fill}/{interval}\"")),
        ]
    };
    // The policy: max_tokens per the time they take to refill, when whole.
    let window = interval.0 as u128 * max_tokens as u128;
    // (A window longer than ratesim's longest duration cannot be the
    // policy's: the rate per fill interval is then.)
    let policy = if window % per_fill as u128 == 0
        && window / (per_fill as u128) <= u128::from(crate::clock::MAX_NANOS)
    {
        (
            max_tokens,
            Nanos((window / per_fill as u128) as u64).to_string(),
        )
    } else {
        (per_fill, interval.to_string())
    };
    Imported {
        source: format!("{file}:{line}: {what}"),
        notes,
        name,
        implementation: if timer { "envoy-timer" } else { "envoy" },
        fields,
        key_by: "global",
        location: None,
        client_field: None,
        zone: None,
        gateway: Gateway::Envoy,
        rejected_status: None,
        policy,
        map: None,
        group: None,
    }
}

pub fn import(file: &str, doc: &YamlNode, timer: bool, out: &mut Import) -> Result<(), InputError> {
    let mut found = Vec::new();
    let mut formats = Vec::new();
    find(doc, &mut found, &mut formats);
    if out.log_format.is_none() {
        out.log_format = formats.into_iter().next();
    }
    for cfg in found {
        // An empty stat_prefix names no limiter: the default one does.
        let prefix = cfg
            .get("stat_prefix")
            .and_then(YamlNode::str)
            .filter(|p| !p.trim().is_empty())
            .unwrap_or("local_rate_limit")
            .to_string();
        let mut notes = vec![format!(
            "{}, key_by = \"global\": one bucket for every request through the filter",
            if timer {
                "interval_bucket (Envoy's timer refill)"
            } else {
                "token_bucket (Envoy's lazy refill)"
            }
        )];
        if let Some(e) = cfg.get("filter_enabled") {
            match percent(e) {
                Some(0) => notes.push(format!("filter_enabled 0% ({file}:{}): the filter is off in Envoy; ratesim runs it anyway", e.line())),
                Some(1_000_000) => {}
                _ => out.notes.push(format!("{file}:{}: filter_enabled below 100% — Envoy samples requests; ratesim limits every request", e.line())),
            }
        } else {
            notes.push("no filter_enabled: Envoy's default is 0% (the filter does nothing); ratesim runs it as if enabled".into());
        }
        match cfg.get("filter_enforced") {
            Some(e) => match percent(e) {
                Some(0) => notes.push(format!("shadow: filter_enforced 0% ({file}:{}) — Envoy counts but never rejects; ratesim shows what it would reject", e.line())),
                Some(1_000_000) => {}
                _ => out.notes.push(format!("{file}:{}: filter_enforced below 100% — Envoy enforces a sample; ratesim enforces every decision", e.line())),
            },
            None => notes.push("no filter_enforced: Envoy's default is 0% (shadow: it counts but never rejects); ratesim shows what it would reject".into()),
        }
        if cfg
            .get("local_rate_limit_per_downstream_connection")
            .and_then(YamlNode::str)
            == Some("true")
        {
            out.notes.push(format!(
                "{file}:{}: local_rate_limit_per_downstream_connection — one bucket per connection; ratesim has no connections and keeps one bucket",
                cfg.line()
            ));
        }
        for (k, v) in cfg.entries() {
            let known = [
                "@type",
                "stat_prefix",
                "token_bucket",
                "filter_enabled",
                "filter_enforced",
                "local_rate_limit_per_downstream_connection",
                "descriptors",
            ];
            if !known.contains(&k.as_str()) {
                out.notes.push(format!(
                    "{file}:{}: {k} — not modelled by ratesim",
                    v.line()
                ));
            }
        }
        if let Some(b) = cfg.get("token_bucket") {
            out.limiters.push(limiter(
                file,
                b.line(),
                format!("local_ratelimit {prefix} token_bucket"),
                prefix.clone(),
                bucket(file, b)?,
                timer,
                notes.clone(),
            ));
        }
        for d in cfg
            .get("descriptors")
            .map(YamlNode::items)
            .unwrap_or_default()
        {
            let Some(b) = d.get("token_bucket") else {
                continue;
            };
            let entries: Vec<String> = d
                .get("entries")
                .map(YamlNode::items)
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    format!(
                        "{}={}",
                        e.get("key").and_then(YamlNode::str).unwrap_or("?"),
                        e.get("value").and_then(YamlNode::str).unwrap_or("*")
                    )
                })
                .collect();
            let mut n = notes.clone();
            n.push(format!(
                "descriptor {}: Envoy uses this bucket only for requests whose route rate_limits actions produce it; ratesim replays every request through it",
                entries.join(", ")
            ));
            let suffix = entries
                .iter()
                .map(|e| e.replace('=', "-"))
                .collect::<Vec<_>>()
                .join("-");
            out.limiters.push(limiter(
                file,
                b.line(),
                format!("local_ratelimit {prefix} descriptor {}", entries.join(", ")),
                format!("{prefix}-{suffix}"),
                bucket(file, b)?,
                timer,
                n,
            ));
        }
    }
    Ok(())
}
