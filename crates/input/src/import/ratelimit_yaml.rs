//! envoyproxy/ratelimit's configuration → `implementation =
//! "envoy-ratelimit"` (fixed windows that count rejected hits too).
//!
//! Each descriptor (at any depth) with a `rate_limit: {unit,
//! requests_per_unit}` becomes one limiter: `limit = requests_per_unit`,
//! `window` = the unit. A descriptor without a `value` counts each value
//! of its key separately (`key_by = "client"`: make the log's field for
//! that key the client); one with a value counts the requests carrying it
//! (`key_by = "global"`). `shadow_mode: true` is noted (the service
//! answers OK but counts: the same decisions).
//!
//! The descriptors of one domain become one `each_counts` chain
//! (docs/semantics.md §13): the service increments the counter of every
//! descriptor a request carries and answers over the limit if any is
//! over. Which descriptors a request carries is Envoy's route
//! configuration (`rate_limits` actions), which ratesim does not read: the
//! replay takes every request to carry every descriptor of the domain.

use super::yaml::YamlNode;
use super::{Gateway, Import, Imported};
use crate::error::{quoted, InputError};

const UNITS: &[(&str, &str)] = &[
    ("second", "1s"),
    ("minute", "1m"),
    ("hour", "1h"),
    ("day", "24h"),
    ("week", "168h"),
];

pub fn import(file: &str, doc: &YamlNode, out: &mut Import) -> Result<(), InputError> {
    let domain = doc
        .get("domain")
        .and_then(YamlNode::str)
        .unwrap_or("domain")
        .to_string();
    for (k, v) in doc.entries() {
        if !["domain", "descriptors"].contains(&k.as_str()) {
            out.notes.push(format!(
                "{file}:{}: {k} — not modelled by ratesim",
                v.line()
            ));
        }
    }
    let descriptors = doc
        .get("descriptors")
        .map(YamlNode::items)
        .unwrap_or_default();
    let first = out.limiters.len();
    walk(file, &domain, descriptors, &[], false, out)?;
    // docs/semantics.md §13: the service increments every matching
    // descriptor's counter and answers over the limit if any is over.
    let members: Vec<usize> = (first..out.limiters.len()).collect();
    if members.len() > 1 {
        let group = out.groups.len();
        for &m in &members {
            out.limiters[m].group = Some(group);
        }
        out.groups.push(super::Group {
            name: format!("domain {domain}"),
            members,
            mode: "each_counts",
            where_: format!("domain {domain} ({file})"),
            lines: String::new(),
        });
    }
    Ok(())
}

fn walk(
    file: &str,
    domain: &str,
    descriptors: &[YamlNode],
    path: &[String],
    shadow_above: bool,
    out: &mut Import,
) -> Result<(), InputError> {
    for d in descriptors {
        let at = |n: &YamlNode, msg: String| InputError::new(format!("{file}:{}: {msg}", n.line()));
        let key = d
            .get("key")
            .and_then(YamlNode::str)
            .ok_or_else(|| at(d, "a descriptor without a key".into()))?;
        let value = d.get("value").and_then(YamlNode::str);
        let mut here = path.to_vec();
        here.push(match value {
            Some(v) => format!("{key}={v}"),
            None => key.to_string(),
        });
        let shadow = shadow_above || d.get("shadow_mode").and_then(YamlNode::str) == Some("true");
        for (k, v) in d.entries() {
            if !["key", "value", "rate_limit", "descriptors", "shadow_mode"].contains(&k.as_str()) {
                out.notes.push(format!(
                    "{file}:{}: {k} — not modelled by ratesim",
                    v.line()
                ));
            }
        }
        if let Some(rl) = d.get("rate_limit") {
            if rl.get("unlimited").and_then(YamlNode::str) == Some("true") {
                out.notes
                    .push(format!("{file}:{}: unlimited — no limiter", rl.line()));
            } else {
                let unit_node = rl
                    .get("unit")
                    .ok_or_else(|| at(rl, "rate_limit without unit".into()))?;
                let unit = unit_node.str().unwrap_or("").to_ascii_lowercase();
                let window = UNITS
                    .iter()
                    .find(|(u, _)| *u == unit)
                    .map(|(_, w)| *w)
                    .ok_or_else(|| {
                        at(
                            unit_node,
                            format!(
                                "rate_limit.unit {} — ratesim models second, minute, hour, day, week",
                                quoted(&unit)
                            ),
                        )
                    })?;
                let n_node = rl
                    .get("requests_per_unit")
                    .ok_or_else(|| at(rl, "rate_limit without requests_per_unit".into()))?;
                let limit: u64 = n_node
                    .str()
                    .and_then(|s| s.parse().ok())
                    .filter(|&n| n > 0 && n <= crate::fields::MAX_COUNT)
                    .ok_or_else(|| {
                        at(
                            n_node,
                            "requests_per_unit: expected a whole number from 1 to 10^12 (ratesim's counts)"
                                .into(),
                        )
                    })?;
                let mut notes = vec![format!(
                    "fixed_window, count_rejected: {limit} per {unit}; windows start at the log's first request (the service aligns them to the Unix epoch)"
                )];
                notes.push(match value {
                    Some(v) => format!("counts the requests whose {key} is {v:?}: key_by = \"global\"; ratesim replays every request through it"),
                    None => format!("counts each value of {key} apart: key_by = \"client\" (make the log's {key} the client)"),
                });
                if here.len() > 1 {
                    notes.push(format!(
                        "nested descriptor {}: the whole chain must match",
                        here.join(" → ")
                    ));
                }
                if shadow {
                    notes.push("shadow_mode: the service answers OK and only counts; ratesim shows what it would reject".into());
                }
                out.limiters.push(Imported {
                    source: format!(
                        "{file}:{}: domain {domain}, descriptor {}",
                        rl.line(),
                        here.join(" → ")
                    ),
                    notes,
                    name: format!("{domain}-{}", here.join("-").replace('=', "-")),
                    implementation: "envoy-ratelimit",
                    fields: vec![
                        ("limit".into(), limit.to_string()),
                        ("window".into(), format!("\"{window}\"")),
                    ],
                    key_by: if value.is_some() { "global" } else { "client" },
                    location: None,
                    client_field: None,
                    zone: None,
                    gateway: Gateway::Envoy,
                    rejected_status: None,
                    policy: (limit, window.to_string()),
                    map: None,
                    group: None,
                });
            }
        }
        if let Some(nested) = d.get("descriptors") {
            walk(file, domain, nested.items(), &here, shadow, out)?;
        }
    }
    Ok(())
}
