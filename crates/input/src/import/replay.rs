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
}

/// How the scenario replays `--trace`: the log's format, checked against
/// every limiter so that `ratesim run` accepts what `import` writes.
#[derive(Debug, Clone)]
pub(super) struct Replay {
    pub(super) format: Option<String>,
    pub(super) from: FormatFrom,
    pub(super) sources: Vec<Source>,
    /// Per limiter, its source.
    pub(super) source_of: Vec<usize>,
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

/// Whether an nginx key is one variable (`$http_x_api_key`).
fn one_variable(key: &str) -> bool {
    key.strip_prefix('$')
        .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Plans the replay of `--trace`, or says why `run` would refuse it.
pub(super) fn replay(imp: &Import, options: &ImportOptions) -> Result<Replay, InputError> {
    let (format, from) = match &options.log_format {
        Some(arg) => (Some(flag_format(imp, arg)?), FormatFrom::Flag(arg.clone())),
        None => match &imp.log_format {
            Some(f) => (
                Some(f.clone()),
                FormatFrom::Config(imp.log_format_name.clone()),
            ),
            None => (None, FormatFrom::Default),
        },
    };
    let mut notes = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut source_of = Vec::new();
    let mut taken = Vec::new();
    let mut unplaced: Vec<String> = Vec::new();
    for l in &imp.limiters {
        let at = l.source.split(": ").next().unwrap_or(&l.source);
        // A zone with one key for every request (`$server_name`) reads no
        // key from the log; its lines still need a client, and nginx logs
        // `$remote_addr` for every request, so it shares that source.
        let client_field = match (&l.client_field, l.gateway) {
            (None, Gateway::Nginx) => Some("$remote_addr".to_string()),
            (c, _) => c.clone(),
        };
        let text = format.clone().unwrap_or_else(|| match l.gateway {
            Gateway::Nginx => crate::accesslog::nginx::COMBINED.to_string(),
            Gateway::Envoy => crate::accesslog::envoy::DEFAULT.to_string(),
        });
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
        };
        let i = match sources.iter().position(|s| {
            (&s.location, &s.client, s.gateway, s.rejected_status)
                == (&key.location, &key.client, key.gateway, key.rejected_status)
        }) {
            Some(i) => {
                sources[i].keyed |= key.keyed;
                i
            }
            None => {
                let base = match &key.location {
                    Some(loc) => location_slug(loc).unwrap_or_else(|| "root".into()),
                    None => "log".to_string(),
                };
                let name = unique(&mut taken, &base);
                sources.push(Source { name, ..key });
                sources.len() - 1
            }
        };
        source_of.push(i);
    }
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
        source_of,
        notes,
    })
}
