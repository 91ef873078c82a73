//! How an imported scenario replays `--trace` (docs/semantics.md §8): the
//! log's format (the configuration's `access_log`, `--log-format`, or the
//! gateway's default), checked against every limiter the way `ratesim run`
//! will check it, and the `[[traffic]]` sources — one per location, zone
//! key and rejection status, so that a limiter sees only its location's
//! requests and a zone's empty key is that zone's alone. A format without
//! a request path sends every line to every limiter, and says so.

use super::{location_slug, unique, Gateway, Import, ImportOptions};
use crate::error::InputError;

/// Where the log's format came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FormatFrom {
    /// The configuration's `access_log` (with the format's name).
    Config(Option<String>),
    /// `--log-format` (a name, or the format itself).
    Flag(String),
    /// The `access_log` (`file:line`, its format's name) whose file has
    /// the `--trace` log's name.
    Named { at: String, name: String },
    /// Neither: the gateway's default format.
    Default,
}

impl FormatFrom {
    fn shown(&self, gateway: Gateway) -> String {
        match (self, gateway) {
            (FormatFrom::Config(Some(name)), _) => {
                format!("log_format {name}, the configuration's access_log")
            }
            (FormatFrom::Config(None), _) => "the configuration's access_log format".into(),
            (FormatFrom::Flag(a), _) => format!("--log-format {}", crate::error::quoted(a)),
            (FormatFrom::Named { at, name }, _) => {
                format!("log_format {name}, that of the access_log at {at}, whose file has the log's name")
            }
            (FormatFrom::Default, Gateway::Nginx) => {
                "nginx's combined, the default: the configuration names no format".into()
            }
            (FormatFrom::Default, Gateway::Envoy) => {
                "Envoy's default format: the configuration names none".into()
            }
        }
    }
}

/// One `[[traffic]]` of the replay: the lines one location's limiters of
/// one zone key see (docs/semantics.md §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Source {
    pub(super) location: Option<String>,
    pub(super) client: Option<String>,
    pub(super) gateway: Gateway,
    /// Written when the log's verdict comes from `$status`.
    pub(super) rejected_status: Option<u16>,
    pub(super) name: String,
    /// Whether a zone keys on `client` (else every zone reading the source
    /// has one key for all its requests, and `client` only names them).
    pub(super) keyed: bool,
    /// A second zone key of the same requests (a chain's), read as `ip`.
    pub(super) ip: Option<String>,
    /// The lines it replays by a map's source variable: `(variable,
    /// values, except)`.
    pub(super) select: Option<(String, Vec<String>, bool)>,
}

/// How the scenario replays `--trace`: the log's format, checked against
/// every limiter so that `ratesim run` accepts what `import` writes.
#[derive(Debug, Clone)]
pub(super) struct Replay {
    pub(super) format: Option<String>,
    pub(super) from: FormatFrom,
    pub(super) sources: Vec<Source>,
    /// Per limiter, the sources it sees.
    pub(super) sources_of: Vec<Vec<usize>>,
    /// Per limiter, its `key_by` in the replay (a chain's second key
    /// variable is read as `ip`).
    pub(super) key_by: Vec<&'static str>,
    /// For stderr and the header comment.
    pub(super) notes: Vec<String>,
}

/// The `--log-format` argument: `combined`, a `log_format` name of the
/// configuration, or the format string itself.
fn flag_format(imp: &Import, arg: &str) -> Result<String, InputError> {
    if let Some(f) = super::nginx::named_format(arg, &imp.log_formats) {
        return Ok(f);
    }
    if arg.contains('$') || arg.contains('%') {
        return Ok(arg.to_string());
    }
    let names: Vec<&str> = std::iter::once("combined")
        .chain(imp.log_formats.iter().map(|(n, _)| n.as_str()))
        .collect();
    Err(InputError::new(format!(
        "--log-format {}: no log_format of that name (the configuration has {}), and no format string either (it has no $variable)",
        crate::error::quoted(arg),
        names.join(", ")
    )))
}

/// The `access_log` a `--trace` log was written by, by its file's name
/// (`/var/log/nginx/api.log` for `api.log`, a `.gz` of it too), when the
/// configuration writes several formats and the access_logs of that name
/// all write one of them.
fn access_log_of<'a>(imp: &'a Import, trace: &str) -> Option<&'a super::AccessLogAt> {
    let name = |p: &str| {
        let base = p.rsplit('/').next().unwrap_or(p).to_string();
        base.strip_suffix(".gz").map(str::to_string).unwrap_or(base)
    };
    let first = imp.access_logs.first()?;
    if imp.access_logs.iter().all(|l| l.format == first.format) {
        return None;
    }
    let trace = name(trace);
    let mut of = imp.access_logs.iter().filter(|l| name(&l.path) == trace);
    let log = of.next()?;
    of.all(|l| l.format == log.format).then_some(log)
}

/// Whether an nginx key is one variable (`$http_x_api_key`).
fn one_variable(key: &str) -> bool {
    key.strip_prefix('$')
        .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Plans the replay of `--trace`, or says why `run` would refuse it.
pub(super) fn replay(imp: &Import, options: &ImportOptions) -> Result<Replay, InputError> {
    let named = options.trace.as_deref().and_then(|t| access_log_of(imp, t));
    let (format, from) = match (&options.log_format, named) {
        (Some(arg), _) => (Some(flag_format(imp, arg)?), FormatFrom::Flag(arg.clone())),
        (None, Some(log)) => (
            Some(flag_format(imp, &log.format)?),
            FormatFrom::Named {
                at: log.at.clone(),
                name: log.format.clone(),
            },
        ),
        (None, None) => match &imp.log_format {
            Some(f) => (
                Some(f.clone()),
                FormatFrom::Config(imp.log_format_name.clone()),
            ),
            None => (None, FormatFrom::Default),
        },
    };
    let mut notes = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut sources_of: Vec<Vec<usize>> = Vec::new();
    let mut key_by: Vec<&'static str> = imp.limiters.iter().map(|l| l.key_by).collect();
    let mut taken = Vec::new();
    let mut unplaced: Vec<String> = Vec::new();
    for l in &imp.limiters {
        if l.gateway == Gateway::Nginx && l.group.is_some() {
            // Planned with its group, below.
            sources_of.push(Vec::new());
            continue;
        }
        let at = l.source.split(": ").next().unwrap_or(&l.source);
        // A zone with one key for every request (`$server_name`) reads no
        // key from the log; its lines still need a client, and nginx logs
        // `$remote_addr` for every request, so it shares that source.
        let client_field = match (&l.client_field, l.gateway) {
            (None, Gateway::Nginx) => Some("$remote_addr".to_string()),
            (c, _) => c.clone(),
        };
        let text = format
            .clone()
            .unwrap_or_else(|| l.gateway.default_log_format().to_string());
        let bad_format = |role: &str, e: String| {
            InputError::new(format!(
                "{at}: the log format ({}) cannot be replayed: {role}: {e}",
                from.shown(l.gateway)
            ))
        };
        // The checks `run` makes of the source (crate::accesslog).
        let (has_path, from_status) = match l.gateway {
            Gateway::Nginx => {
                let client = client_field.as_deref();
                let f = match crate::accesslog::nginx::NginxFormat::new(&text, None, client, None) {
                    Ok(f) => f,
                    Err(("client", e)) => {
                        let c = client.unwrap_or("$remote_addr");
                        return Err(InputError::new(if l.key_by == "global" {
                            format!(
                                "{at}: zone {} has one key for every request, but the replay names each request's client by {c}, which the log format ({}) does not have — add {c} to the log_format nginx writes the log with, or give the log's format with --log-format NAME|'FORMAT'",
                                l.zone.as_deref().unwrap_or("?"),
                                from.shown(l.gateway)
                            )
                        } else if one_variable(c) {
                            let has = crate::accesslog::nginx::compile(&text)
                                .map(|t| t.names.join(", "))
                                .unwrap_or_default();
                            let zone = l
                                .zone
                                .as_deref()
                                .map(|z| format!("zone {z}'s key"))
                                .unwrap_or_else(|| "the zone's key".into());
                            format!(
                                "{at}: {zone} {c} is not in the log format ({}), so the replay cannot tell its keys apart — add {c} to the log_format nginx writes the log with, or give the log's format with --log-format NAME|'FORMAT' (the format has {has})",
                                from.shown(l.gateway)
                            )
                        } else {
                            format!(
                                "{at}: the zone's key {} is not one variable; a replay keys on one variable of the log ({e})",
                                crate::error::quoted(c)
                            )
                        }));
                    }
                    Err((role, e)) => return Err(bad_format(role, e)),
                };
                (f.has_path(), f.verdict_from_status())
            }
            Gateway::Envoy => {
                let f = crate::accesslog::envoy::EnvoyFormat::new(&text, None, None, None)
                    .map_err(|(role, e)| bad_format(role, e))?;
                (f.has_path(), false)
            }
        };
        // docs/semantics.md §8: without a request path, every line goes
        // to every limiter, whatever its location.
        let location = match &l.location {
            Some(loc) if !has_path => {
                unplaced.push(format!("{} ({at})", loc));
                None
            }
            other => other.clone(),
        };
        let key = Source {
            location,
            client: client_field,
            gateway: l.gateway,
            rejected_status: l.rejected_status.filter(|_| from_status),
            name: String::new(),
            keyed: l.key_by != "global",
            ip: None,
            select: None,
        };
        let i = match sources.iter().position(|s| {
            s.ip.is_none()
                && s.select.is_none()
                && (&s.location, &s.client, s.gateway, s.rejected_status)
                    == (&key.location, &key.client, key.gateway, key.rejected_status)
        }) {
            Some(i) => {
                sources[i].keyed |= key.keyed;
                i
            }
            None => {
                let name = unique(&mut taken, &source_base(&key.location));
                sources.push(Source { name, ..key });
                sources.len() - 1
            }
        };
        sources_of.push(vec![i]);
    }
    for g in imp
        .groups
        .iter()
        .filter(|g| imp.limiters[g.members[0]].gateway == Gateway::Nginx)
    {
        let text = format
            .clone()
            .unwrap_or_else(|| Gateway::Nginx.default_log_format().to_string());
        plan_group(
            imp,
            g,
            &text,
            &from,
            &mut Planned {
                sources: &mut sources,
                sources_of: &mut sources_of,
                key_by: &mut key_by,
                taken: &mut taken,
                unplaced: &mut unplaced,
            },
        )?;
    }
    read_first_line(imp, options, format.as_deref(), &from)?;
    if !unplaced.is_empty() {
        notes.push(format!(
            "the log format has no request path ($request, $uri or $request_uri): every line of the log goes to every imported limiter, whatever its location (not applied: location {})",
            unplaced.join(", location ")
        ));
    }
    Ok(Replay {
        format,
        from,
        sources,
        sources_of,
        key_by,
        notes,
    })
}

/// `import` never writes a scenario that `run` refuses (docs/semantics.md
/// §8): the log's first line that is not blank must read in its format,
/// as `run` reads it. The log is opened from where `import` runs — the
/// scenario names it as given, relative to the scenario file, which is
/// usually written there; a log that cannot be opened from there is left
/// to `run`.
fn read_first_line(
    imp: &Import,
    options: &ImportOptions,
    format: Option<&str>,
    from: &FormatFrom,
) -> Result<(), InputError> {
    let Some(path) = &options.trace else {
        return Ok(());
    };
    let Ok(Some((n, line))) = crate::accesslog::first_line(std::path::Path::new(path)) else {
        return Ok(());
    };
    let gateways = [Gateway::Nginx, Gateway::Envoy]
        .into_iter()
        .filter(|&g| imp.limiters.iter().any(|l| l.gateway == g));
    for gateway in gateways {
        let text = format.unwrap_or(gateway.default_log_format());
        // Any of the format's variables will do as the client: the line
        // is read for its fields, not its key.
        let read = match gateway {
            Gateway::Nginx => {
                let client = crate::accesslog::nginx::compile(text)
                    .ok()
                    .and_then(|t| t.names.first().cloned());
                crate::accesslog::nginx::NginxFormat::new(text, None, client.as_deref(), None)
                    .ok()
                    .map(|f| f.parse(&line, &mut Vec::new()).err())
            }
            Gateway::Envoy => crate::accesslog::envoy::EnvoyFormat::new(text, None, None, None)
                .ok()
                .map(|f| f.parse(&line, &mut Vec::new()).err()),
        };
        if let Some(Some(e)) = read {
            return Err(InputError::new(format!(
                "--trace {} line {n}: {}: {} — the log is not in the format import read it with ({}); give its format with --log-format NAME|'FORMAT'",
                crate::error::quoted(path),
                e.message(&line),
                crate::error::quoted(&String::from_utf8_lossy(&line)),
                from.shown(gateway)
            )));
        }
    }
    Ok(())
}

/// What planning a group adds to the replay.
struct Planned<'a> {
    sources: &'a mut Vec<Source>,
    sources_of: &'a mut Vec<Vec<usize>>,
    key_by: &'a mut Vec<&'static str>,
    taken: &'a mut Vec<String>,
    unplaced: &'a mut Vec<String>,
}

/// A zone's key for the requests of one class of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// Not asked: the key is empty.
    Empty,
    /// One key for every request (`$server_name`).
    Constant,
    /// The logged variable.
    Var(String),
}

/// A source's name before it is made unique: its location's slug.
fn source_base(location: &Option<String>) -> String {
    match location {
        Some(loc) => location_slug(loc).unwrap_or_else(|| "root".into()),
        None => "log".to_string(),
    }
}

/// The sources of one nginx group (docs/semantics.md §13): its lines, in
/// one class per value of the maps its zones are keyed by (and one for
/// every other value), each with the zone keys the class's requests have
/// — the first as `client`, a second as `ip`. Every member sees the
/// classes where its key is not empty, so each line is decided once, by
/// every zone that accounts it.
fn plan_group(
    imp: &Import,
    g: &super::Group,
    text: &str,
    from: &FormatFrom,
    p: &mut Planned,
) -> Result<(), InputError> {
    let members: Vec<&super::Imported> = g.members.iter().map(|&m| &imp.limiters[m]).collect();
    let first = members[0];
    let at = first
        .source
        .split(": ")
        .next()
        .unwrap_or(&first.source)
        .to_string();
    // The maps' source variable: one per group.
    let mut by: Option<&str> = None;
    let mut values: Vec<String> = Vec::new();
    for m in members.iter().filter_map(|l| l.map.as_ref()) {
        match by {
            Some(v) if v != m.source => {
                return Err(InputError::new(format!(
                    "{at}: the zones of {} are keyed by maps of two variables ({v} and {}); ratesim sorts one location's requests by one variable",
                    g.where_, m.source
                )))
            }
            _ => by = Some(&m.source),
        }
        for (v, _) in &m.entries {
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
    }
    // Classes: each value, then every other value (none without maps).
    let classes: Vec<Option<(String, Vec<String>, bool)>> = match by {
        // A map of `default` alone gives every request one key.
        _ if values.is_empty() => vec![None],
        None => vec![None],
        Some(var) => values
            .iter()
            .map(|v| Some((var.to_string(), vec![v.clone()], false)))
            .chain(std::iter::once(Some((
                var.to_string(),
                values.clone(),
                true,
            ))))
            .collect(),
    };
    let key_in = |l: &super::Imported,
                  class: &Option<(String, Vec<String>, bool)>|
     -> Result<Key, InputError> {
        if let Some(m) = &l.map {
            let result = match class {
                Some((_, v, false)) => m.get(&v[0]),
                _ => m.default.as_str(),
            };
            return if result.is_empty() {
                Ok(Key::Empty)
            } else if one_variable(result) {
                Ok(Key::Var(super::logged(result)))
            } else {
                Err(InputError::new(format!(
                    "{at}: map {} ({}:{}) gives {} — ratesim replays a map whose results are empty or one variable",
                    m.result,
                    at.split(':').next().unwrap_or(""),
                    m.line,
                    crate::error::quoted(result)
                )))
            };
        }
        Ok(match &l.client_field {
            None => Key::Constant,
            Some(c) => Key::Var(c.clone()),
        })
    };
    let keys: Vec<Vec<Key>> = members
        .iter()
        .map(|l| classes.iter().map(|c| key_in(l, c)).collect())
        .collect::<Result<_, _>>()?;
    // Roles: a member keyed by variables is `client` if its variable is
    // the class's client in every class it is asked in, else `ip`.
    let mut client: Vec<Option<String>> = vec![None; classes.len()];
    let mut ip: Vec<Option<String>> = vec![None; classes.len()];
    let mut roles: Vec<&'static str> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let vars: Vec<(usize, &str)> = k
            .iter()
            .enumerate()
            .filter_map(|(c, k)| match k {
                Key::Var(v) => Some((c, v.as_str())),
                _ => None,
            })
            .collect();
        if vars.is_empty() {
            roles.push("global");
            continue;
        }
        let fits = |slots: &[Option<String>]| {
            vars.iter()
                .all(|&(c, v)| slots[c].as_deref().is_none_or(|s| s == v))
        };
        let slots = if fits(&client) {
            roles.push("client");
            &mut client
        } else if fits(&ip) {
            roles.push("ip");
            &mut ip
        } else {
            return Err(InputError::new(format!(
                "{}: the zones of {} key one request by more than two variables; a replay reads two (as client and ip)",
                members[i].source.split(": ").next().unwrap_or(""),
                g.where_
            )));
        };
        for (c, v) in vars {
            slots[c] = Some(v.to_string());
        }
    }
    let (has_path, from_status) = {
        let check = |client: Option<&str>, ip: Option<&str>| {
            crate::accesslog::nginx::NginxFormat::new(text, None, client, ip).map_err(|(role, e)| {
                InputError::new(format!(
                    "{at}: the log format ({}) cannot replay {}: {role}: {e} — add the variable to the log_format nginx writes the log with, or give the log's format with --log-format NAME|'FORMAT'",
                    from.shown(Gateway::Nginx),
                    g.where_
                ))
            })
        };
        let mut f = None;
        for c in 0..classes.len() {
            f = Some(check(
                Some(client[c].as_deref().unwrap_or("$remote_addr")),
                ip[c].as_deref(),
            )?);
        }
        let mut f = f.expect("a group has a class");
        if let Some(var) = by.filter(|_| !values.is_empty()) {
            f.select_by(var).map_err(|e| {
                InputError::new(format!(
                    "{at}: the zones of {} are keyed by a map of {var}, which the log format ({}) does not have, so the replay cannot evaluate it: {e}",
                    g.where_,
                    from.shown(Gateway::Nginx)
                ))
            })?;
        }
        (f.has_path(), f.verdict_from_status())
    };
    let location = match &first.location {
        Some(loc) if !has_path => {
            p.unplaced.push(format!("{loc} ({at})"));
            None
        }
        other => other.clone(),
    };
    let base = source_base(&location);
    for (c, class) in classes.iter().enumerate() {
        let asked: Vec<usize> = (0..members.len())
            .filter(|&i| keys[i][c] != Key::Empty)
            .collect();
        if asked.is_empty() {
            continue;
        }
        let name = match class {
            None => base.clone(),
            Some((_, v, false)) => {
                format!("{base}-{}", if v[0].is_empty() { "empty" } else { &v[0] })
            }
            Some((_, _, true)) => format!("{base}-other"),
        };
        let name = unique(p.taken, &name);
        p.sources.push(Source {
            location: location.clone(),
            client: Some(client[c].clone().unwrap_or_else(|| "$remote_addr".into())),
            gateway: Gateway::Nginx,
            rejected_status: first.rejected_status.filter(|_| from_status),
            name,
            keyed: asked.iter().any(|&i| roles[i] == "client"),
            ip: ip[c].clone(),
            select: class.clone(),
        });
        for &i in &asked {
            p.sources_of[g.members[i]].push(p.sources.len() - 1);
        }
    }
    for (i, &m) in g.members.iter().enumerate() {
        p.key_by[m] = roles[i];
    }
    Ok(())
}
