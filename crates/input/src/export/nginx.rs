//! `ratesim export nginx S`: a scenario's nginx-shaped limiters back as the
//! configuration that runs them (docs/semantics.md §8) — the reverse of
//! [`crate::import::nginx`], so that importing an export gives back
//! limiters that decide the same.
//!
//! | ratesim | nginx |
//! |---|---|
//! | `leaky_bucket` with nginx's arithmetic (`implementation = "nginx"`), `rate` a whole number per second or minute | `limit_req_zone KEY zone=NAME:10m rate=Nr/s` (`r/m`) |
//! | `queue` | `burst=` |
//! | `delay = queue` (> 0) | `nodelay` |
//! | `0 < delay < queue` | `delay=` |
//! | `queue = 0` | neither (nothing waits, whatever `delay` says) |
//! | `key_by = "client"` / `"ip"` | the variable the limiter was imported with (its nginx log source's `client` / `ip`), else `--key VAR`: one variable, `$name` |
//! | `key_by = "global"` | `$server_name`: one key for the server block |
//! | a chain's members | the `limit_req` lines of one location, in order |
//!
//! A limiter nginx cannot run exactly — another algorithm, ratesim's exact
//! leaky-bucket arithmetic (nginx's is whole milliseconds), a rate that is
//! no whole number per second or minute, a shared store, two limiters
//! whose names make one zone name — is an error naming it and why.

use std::fmt::Write as _;

use crate::accesslog::{AccessLog, Format};
use crate::error::{quoted, InputError};
use crate::limiter::chain::ChainMode;
use crate::limiter::{leaky_bucket, Algorithm};
use crate::scenario::{KeyBy, Scenario};

/// nginx's zone size in the export: 10m holds about 160 000 keys.
const ZONE_SIZE: &str = "10m";

/// The nginx configuration of `names` (every limiter nginx can run, and
/// every chain of them, when empty); `key` names the key variable of a
/// limiter imported from no nginx log.
pub fn config(s: &Scenario, names: &[String], key: Option<&str>) -> Result<String, InputError> {
    super::check_names(s, names)?;
    // Groups of limiters that share a location: a chain's members, or one
    // limiter alone.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    // Limiters left out of an export of all: said in its header.
    let mut left_out: Vec<String> = Vec::new();
    let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
    for (i, l) in s.limiters.iter().enumerate() {
        match &l.chain {
            Some(c)
                if wanted(&l.name)
                    || c.members
                        .iter()
                        .any(|&m| names.contains(&s.limiters[m].name)) =>
            {
                // docs/semantics.md §13: one location's limit_req lines
                // decide all or nothing; nginx has no other mode.
                if c.mode != ChainMode::AllOrNothing {
                    return Err(InputError::new(format!(
                        "chain {}: mode = \"{}\" — nginx asks one location's limit_req zones all or nothing (a request one rejects is counted by none), so it would decide otherwise: nginx has no each_counts (envoyproxy/ratelimit's mode)",
                        quoted(&l.name),
                        c.mode.as_str()
                    )));
                }
                groups.push((format!("chain {}", l.name), c.members.clone()));
            }
            Some(_) => {}
            None if l.member_of.is_some() => {}
            None if !names.is_empty() && !wanted(&l.name) => {}
            None if names.is_empty() && !matches!(l.algorithm, Algorithm::LeakyBucket(_)) => {
                left_out.push(format!("{} ({})", quoted(&l.name), l.algorithm.name()));
            }
            None => groups.push((format!("limiter {}", l.name), vec![i])),
        }
    }
    if groups.is_empty() {
        return Err(InputError::new(format!(
            "{}: no leaky_bucket limiter to export (nginx's limit_req is a leaky bucket)",
            s.name
        )));
    }
    let mut zones = String::new();
    let mut locations = String::new();
    let mut zone_names: Vec<(String, String)> = Vec::new();
    for (what, members) in &groups {
        let _ = writeln!(locations, "    # {what}");
        for &m in members {
            let l = &s.limiters[m];
            let Algorithm::LeakyBucket(c) = l.algorithm else {
                return Err(InputError::new(format!(
                    "limiter {}: {} — nginx's limit_req is a leaky bucket; export the limiter as a leaky_bucket, or to Envoy",
                    quoted(&l.name),
                    l.algorithm.name()
                )));
            };
            if !l.deployment.is_plain() {
                return Err(InputError::new(format!(
                    "limiter {}: deployed on {} instances or a shared store; nginx's zones are one server's",
                    quoted(&l.name),
                    l.deployment.instances
                )));
            }
            let (count, unit) = nginx_rate(&c).ok_or_else(|| {
                InputError::new(format!(
                    "limiter {}: rate {} is no whole number of requests per second or per minute, which is all nginx's rate= takes",
                    quoted(&l.name),
                    c.rate
                ))
            })?;
            if count > u128::from(crate::fields::MAX_COUNT) {
                return Err(InputError::new(format!(
                    "limiter {}: rate {} is rate={count}r/{unit}, and an import of it would hold a limit of {count}, above the 10^12 a count may be",
                    quoted(&l.name),
                    c.rate
                )));
            }
            let rate = format!("{count}r/{unit}");
            let variable = match l.key_by {
                KeyBy::Global => "$server_name".to_string(),
                by => match key.map(str::to_string).or_else(|| logged_key(s, m, by)) {
                    Some(v) => v,
                    None => {
                        return Err(InputError::new(format!(
                            "limiter {}: keyed by {}, and it reads no nginx log that names the variable; give it with --key VAR, e.g. --key '$binary_remote_addr'",
                            quoted(&l.name),
                            by.as_str()
                        )))
                    }
                },
            };
            if super::nginx_variable(&variable).is_none() {
                return Err(InputError::new(format!(
                    "limiter {}: its key {} is no single nginx variable ($name: letters, digits and _), which is the key a limit_req_zone of the export takes (give one with --key VAR, e.g. --key '$binary_remote_addr')",
                    quoted(&l.name),
                    quoted(&variable)
                )));
            }
            if c.arithmetic == leaky_bucket::Arithmetic::Exact {
                return Err(InputError::new(format!(
                    "limiter {}: a leaky bucket of exact arithmetic — nginx computes in whole milliseconds and thousandths of a request (docs/semantics.md §5), so it would decide otherwise; model what nginx runs with implementation = \"nginx\" (or arithmetic = \"nginx\"), then export that",
                    quoted(&l.name)
                )));
            }
            let zone = zone_name(&l.name);
            if let Some(other) = zone_names.iter().find(|(z, _)| *z == zone) {
                return Err(InputError::new(format!(
                    "limiters {} and {} would both be zone {zone} (a zone name keeps letters, digits, _ and -); rename one",
                    quoted(&other.1),
                    quoted(&l.name)
                )));
            }
            zone_names.push((zone.clone(), l.name.clone()));
            let _ = writeln!(
                zones,
                "    limit_req_zone {variable} zone={zone}:{ZONE_SIZE} rate={rate};"
            );
            let mut line = format!("    limit_req zone={zone}");
            if c.queue > 0 {
                let _ = write!(line, " burst={}", c.queue);
            }
            // With no queue nothing waits, whatever `delay` says: nginx
            // is given none.
            if c.queue > 0 && c.delay >= c.queue {
                line.push_str(" nodelay");
            } else if c.queue > 0 && c.delay > 0 {
                let _ = write!(line, " delay={}", c.delay);
            }
            let _ = writeln!(locations, "{line};");
        }
    }
    let mut out = format!(
        "# Exported by `ratesim export nginx` from scenario {}.\n",
        quoted(&s.name)
    );
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "# Not exported (nginx's limit_req is a leaky bucket): {}.",
            left_out.join(", ")
        );
    }
    out.push_str("# In the http block:\n");
    out.push_str(&zones);
    out.push_str("# In the location each group protects (a chain's zones together, in order):\n");
    out.push_str(&locations);
    Ok(out)
}

/// `rate=` of a leaky bucket, `(N, "s")` for `Nr/s` or `(N, "m")` for
/// `Nr/m`, when exact.
fn nginx_rate(c: &leaky_bucket::Config) -> Option<(u128, &'static str)> {
    let (tokens, per) = (c.rate.tokens(), c.rate.per_ns());
    for (unit, ns) in [("s", 1_000_000_000u128), ("m", 60_000_000_000)] {
        if (tokens * ns) % per == 0 && tokens * ns / per > 0 {
            return Some((tokens * ns / per, unit));
        }
    }
    None
}

/// The key variable limiter `m` was imported with: its nginx log
/// sources' `client` (or `ip`), when they agree.
pub(super) fn logged_key(s: &Scenario, m: usize, by: KeyBy) -> Option<String> {
    let mut found: Option<String> = None;
    for &i in &s.limiters[m].traffic {
        let log = AccessLog::of_pattern(&s.traffic[i].pattern)?;
        // Lines picked by a map's value: the key is the map's result, which
        // the export cannot write back.
        if log.options.select.is_some() {
            return None;
        }
        let Format::Nginx(n) = &*log.format else {
            return None;
        };
        let v = match by {
            KeyBy::Ip => n.ip_name()?,
            _ => n.client_name(),
        };
        let v = crate::import::zone_key(v);
        match &found {
            Some(f) if f != v => return None,
            _ => found = Some(v.to_string()),
        }
    }
    found
}

/// A zone name nginx accepts: letters, digits, `_` and `-`.
fn zone_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
