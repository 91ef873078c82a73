//! `[[chain]]` tables (docs/semantics.md §13): several limiters that decide
//! each request together, as nginx's `limit_req` directives of one location
//! (`all_or_nothing`) or envoyproxy/ratelimit's descriptors (`each_counts`).

use std::collections::HashSet;

use crate::error::{quoted, InputError};
use crate::fields::Fields;
use crate::limiter::chain::ChainMode;
use ratesim_core::scenario::LimiterSpec;

/// Parses every `[[chain]]` of `tables` and appends each chain to
/// `limiters` (after the plain limiters, in file order), marking its
/// members.
pub fn parse_all(
    tables: Vec<(String, &toml::Table)>,
    limiters: &mut Vec<LimiterSpec>,
) -> Result<(), InputError> {
    let plain = limiters.len();
    let mut names: HashSet<String> = limiters.iter().map(|l| l.name.clone()).collect();
    for (path, t) in tables {
        let mut f = Fields::new(path, t);
        let name = f
            .opt_str("name")?
            .ok_or_else(|| f.missing("name", "the chain's name, e.g. \"location /\""))?
            .to_string();
        let mode_value = f.peek("mode").cloned();
        let mode = match f.opt_str("mode")? {
            None => {
                return Err(f.missing(
                    "mode",
                    "how the members decide together: \"all_or_nothing\" (nginx: a request one member rejects is counted by none) or \"each_counts\" (envoyproxy/ratelimit: every member counts every request)",
                ))
            }
            Some(m) => ChainMode::parse(m).ok_or_else(|| {
                f.error(
                    "mode",
                    mode_value.as_ref().expect("mode is set"),
                    format!(
                        "accepted: {}",
                        ChainMode::NAMES
                            .iter()
                            .map(|n| quoted(n))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
        };
        let wanted = f.opt_str_list("limiters")?.ok_or_else(|| {
            f.missing(
                "limiters",
                "the names of its [[limiter]] tables, in the order they are asked, e.g. [\"perip\", \"perserver\"]",
            )
        })?;
        if wanted.is_empty() {
            return Err(InputError::new(format!(
                "{}: [] — a chain needs at least one limiter",
                f.at("limiters")
            )));
        }
        let mut members = Vec::with_capacity(wanted.len());
        for n in wanted {
            let Some(i) = limiters[..plain].iter().position(|l| l.name == n) else {
                let known: Vec<&str> = limiters[..plain].iter().map(|l| l.name.as_str()).collect();
                return Err(InputError::new(format!(
                    "{}: {} — no [[limiter]] has this name; names: {}",
                    f.at("limiters"),
                    quoted(n),
                    known.join(", ")
                )));
            };
            if members.contains(&i) {
                return Err(InputError::new(format!(
                    "{}: {} — listed twice; each member is asked once",
                    f.at("limiters"),
                    quoted(n)
                )));
            }
            if let Some(c) = limiters[i].member_of {
                return Err(InputError::new(format!(
                    "{}: {} — already a member of chain {}; a limiter belongs to one chain",
                    f.at("limiters"),
                    quoted(n),
                    quoted(&limiters[c].name)
                )));
            }
            let d = &limiters[i].deployment;
            if d.is_global() {
                return Err(InputError::new(format!(
                    "{}: {} — keeps its state in a shared store (scope = \"global\"); a chain's members are decided together on each gateway instance, with local state",
                    f.at("limiters"),
                    quoted(n)
                )));
            }
            if let Some(&first) = members.first() {
                let e = &limiters[first].deployment;
                if (e.instances, e.routing, e.scope) != (d.instances, d.routing, d.scope) {
                    return Err(InputError::new(format!(
                        "{}: {} — its deployment ({}) is not {}'s ({}); a chain's members share their gateway instances: give them the same instances, routing and share",
                        f.at("limiters"),
                        quoted(n),
                        shown(d),
                        quoted(&limiters[first].name),
                        shown(e)
                    )));
                }
            }
            members.push(i);
        }
        f.finish()?;
        if !names.insert(name.clone()) {
            return Err(InputError::new(format!(
                "{}: {} — a limiter or another chain already has this name; names must be unique",
                f.at("name"),
                quoted(&name)
            )));
        }
        let index = limiters.len();
        for &m in &members {
            limiters[m].member_of = Some(index);
        }
        let chain = LimiterSpec::chain(name, mode, members, limiters);
        limiters.push(chain);
    }
    Ok(())
}

/// A local deployment as the error messages show it.
fn shown(d: &crate::deploy::Deployment) -> String {
    let routing = crate::scenario::deployment::routing_name(d.routing);
    let share = matches!(d.scope, crate::deploy::Scope::Local { share: true });
    format!(
        "{} instance{}, {routing}{}",
        d.instances,
        if d.instances == 1 { "" } else { "s" },
        if share { ", share" } else { "" }
    )
}
