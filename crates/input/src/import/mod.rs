//! `ratesim import FILE... [--trace LOG]`: a gateway's rate-limit
//! configuration as a commented scenario.
//!
//! | file | read by | limiters |
//! |---|---|---|
//! | nginx config (`limit_req_zone`, `limit_req`) | [`nginx`] | `implementation = "nginx"` |
//! | Envoy config with `envoy.filters.http.local_ratelimit` | [`envoy`] | `"envoy"` (or `"envoy-timer"` with `--envoy-timer`) |
//! | envoyproxy/ratelimit YAML (`domain`, `descriptors`) | [`ratelimit_yaml`] | `"envoy-ratelimit"` |
//!
//! Every limiter says which directive it came from (`file:line`); anything
//! the configuration says that ratesim does not model is listed in a
//! comment. With `--trace LOG` the scenario replays that log (one
//! `[[traffic]]` per location and key); without, a placeholder source.

pub mod envoy;
pub mod nginx;
pub mod ratelimit_yaml;
mod replay;
pub mod yaml;

use replay::{replay, FormatFrom, Replay};

use std::fmt::Write as _;

use crate::error::InputError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    Nginx,
    Envoy,
}

impl Gateway {
    fn format(self) -> &'static str {
        match self {
            Gateway::Nginx => "nginx",
            Gateway::Envoy => "envoy",
        }
    }

    /// The format the gateway writes its log in when the configuration
    /// names none: nginx's `combined`, Envoy's default.
    fn default_log_format(self) -> &'static str {
        match self {
            Gateway::Nginx => crate::accesslog::nginx::COMBINED,
            Gateway::Envoy => crate::accesslog::envoy::DEFAULT,
        }
    }
}

/// One limiter read from a configuration.
#[derive(Debug, Clone)]
pub struct Imported {
    /// `file:line: directive`.
    pub source: String,
    pub notes: Vec<String>,
    pub name: String,
    pub implementation: &'static str,
    /// `(field, TOML value)`.
    pub fields: Vec<(String, String)>,
    pub key_by: &'static str,
    /// The nginx location its requests come from.
    pub location: Option<String>,
    /// The log field its key is.
    pub client_field: Option<String>,
    /// The nginx zone it counts in.
    pub zone: Option<String>,
    pub gateway: Gateway,
    /// nginx's `limit_req_status` where it applies (default 503): without
    /// `$limit_req_status` in the log, `$status` equal to it is a rejection.
    pub rejected_status: Option<u16>,
    /// `(limit, window)` of its policy, for `[defaults]`.
    pub policy: (u64, String),
    /// The nginx `map` its zone's key is the result of.
    pub map: Option<nginx::Map>,
    /// The group (in [`Import::groups`]) of limits applied together.
    pub group: Option<usize>,
}

/// Limits one request meets together (docs/semantics.md §13): the
/// `limit_req` directives of one nginx context, replayed from the same
/// lines; with two or more, a `[[chain]]`.
#[derive(Debug, Clone)]
pub struct Group {
    /// The chain's name: the location (`location /api/`), else `all`.
    pub name: String,
    /// Indices into [`Import::limiters`], in the order they are asked.
    pub members: Vec<usize>,
    pub mode: &'static str,
    /// Where, for messages (`location /api/ (nginx.conf:12)`).
    pub where_: String,
    /// The lines of its directives, for the chain's comment.
    pub lines: String,
}

#[derive(Debug, Default)]
pub struct Import {
    pub limiters: Vec<Imported>,
    pub groups: Vec<Group>,
    /// What ratesim does not model, `file:line: …`.
    pub notes: Vec<String>,
    /// The access-log format the configuration writes with, and its name.
    pub log_format: Option<String>,
    pub log_format_name: Option<String>,
    /// The configuration's named formats (nginx `log_format NAME ...`).
    pub log_formats: Vec<(String, String)>,
    /// Each nginx `access_log`: `file:line`, its path and its format's name.
    pub access_logs: Vec<AccessLogAt>,
}

/// An nginx `access_log` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogAt {
    pub at: String,
    pub path: String,
    pub format: String,
}

/// Options of `ratesim import`.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub trace: Option<String>,
    /// Envoy's timer-refilled bucket (`envoy-timer`) instead of today's
    /// lazy one.
    pub envoy_timer: bool,
    /// `--log-format NAME|'FORMAT'`: the log's format when the
    /// configuration does not hold it (`combined`, a `log_format` name of
    /// the configuration, or the format string itself).
    pub log_format: Option<String>,
}

/// What `import` writes: the scenario (stdout) and what the user must
/// know about it (stderr).
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub scenario: String,
    pub notes: Vec<String>,
}

/// Reads every file and renders the scenario.
pub fn import(files: &[std::path::PathBuf], options: &ImportOptions) -> Result<Output, InputError> {
    let mut out = Import::default();
    for path in files {
        let shown = path.display().to_string();
        crate::regular_file(path).map_err(|e| InputError::new(format!("{shown}: {e}")))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(format!("{shown}: cannot be read: {e}")))?;
        import_text(&shown, &text, options, &mut out)?;
    }
    if out.limiters.is_empty() {
        // What was read and left out may be why (a zone whose key is
        // always empty): say it.
        let left_out: String = out.notes.iter().map(|n| format!("\n  {n}")).collect();
        return Err(InputError::new(format!(
            "{}: no rate limits found (nginx limit_req, Envoy local_ratelimit, envoyproxy/ratelimit descriptors with rate_limit){}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if left_out.is_empty() {
                String::new()
            } else {
                format!("; read and left out:{left_out}")
            }
        )));
    }
    let replay = match &options.trace {
        Some(_) => Some(replay(&out, options)?),
        None => None,
    };
    let scenario = render(&out, files, options, replay.as_ref());
    Ok(Output {
        scenario,
        notes: replay.map(|r| r.notes).unwrap_or_default(),
    })
}

/// Reads one file's text into `out`, choosing the reader by content.
pub(crate) fn import_text(
    file: &str,
    text: &str,
    options: &ImportOptions,
    out: &mut Import,
) -> Result<(), InputError> {
    let yaml_ext = [".yaml", ".yml", ".json"].iter().any(|e| file.ends_with(e));
    if !yaml_ext && (text.contains("limit_req") || file.ends_with(".conf")) {
        return nginx::import(file, text, out);
    }
    let docs = yaml::parse(text).map_err(|e| InputError::new(format!("{file}: {e}")))?;
    for doc in &docs {
        if doc.get("domain").is_some() && doc.get("descriptors").is_some() {
            ratelimit_yaml::import(file, doc, out)?;
        } else {
            envoy::import(file, doc, options.envoy_timer, out)?;
        }
    }
    Ok(())
}

/// A string as TOML writes it (a literal string when it has no `'`).
fn toml_str(s: &str) -> String {
    // A literal string holds no quote and no control character but tab.
    if !s
        .chars()
        .any(|c| c == '\'' || (c.is_control() && c != '\t'))
    {
        format!("'{s}'")
    } else {
        toml::Value::String(s.to_string()).to_string()
    }
}

/// `s` as a TOML string, double-quoted where it can be (as a variable's
/// name or a map's value always can), escaped as TOML escapes.
fn quoted_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Text from a configuration, as it may stand in a `#` comment: one line,
/// its control characters (a line break inside a quoted nginx argument, an
/// Envoy string's `\n`) escaped, so that it can never end the comment and
/// add TOML to the scenario.
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| -> Box<dyn Iterator<Item = char>> {
            if c.is_control() {
                Box::new(c.escape_debug())
            } else {
                Box::new(std::iter::once(c))
            }
        })
        .collect()
}

/// Words into lines of at most `width` characters (a longer word alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// nginx keys a zone by `$binary_remote_addr`; a log records the address
/// as `$remote_addr`. The log variable a zone key is read from…
pub fn logged(key: &str) -> String {
    match key {
        "$binary_remote_addr" => "$remote_addr".to_string(),
        k => k.to_string(),
    }
}

/// …and back: the zone key of a log variable (for `ratesim export`).
pub fn zone_key(logged: &str) -> &str {
    match logged {
        "$remote_addr" => "$binary_remote_addr",
        v => v,
    }
}

/// A location as part of a name: `= /api/v1` → `api-v1`; `None` for `/`.
fn location_slug(location: &str) -> Option<String> {
    let slug = location
        .trim_start_matches(['=', '^', '~', ' '])
        .trim_matches('/')
        .replace('/', "-");
    (!slug.is_empty()).then_some(slug)
}

fn unique(names: &mut Vec<String>, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = if clean.is_empty() {
        "limiter".to_string()
    } else {
        clean
    };
    let mut n = clean.clone();
    let mut i = 2;
    while names.contains(&n) {
        n = format!("{clean}-{i}");
        i += 1;
    }
    names.push(n.clone());
    n
}

fn render(
    imp: &Import,
    files: &[std::path::PathBuf],
    options: &ImportOptions,
    replay: Option<&Replay>,
) -> String {
    let mut s = String::new();
    let shown: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let _ = writeln!(
        s,
        "# Imported by `ratesim import {}`.",
        one_line(&shown.join(" "))
    );
    let _ = writeln!(
        s,
        "# Each [[limiter]] names the directive it came from. Check the numbers, then run:\n#   ratesim run THIS.toml"
    );
    if imp.notes.is_empty() {
        let _ = writeln!(
            s,
            "#\n# Everything in the configuration about rate limits is modelled."
        );
    } else {
        let _ = writeln!(
            s,
            "#\n# Not modelled by ratesim (read, and left out of the replay):"
        );
        for n in &imp.notes {
            let _ = writeln!(s, "#   {}", one_line(n));
        }
    }
    for n in replay.map(|r| r.notes.as_slice()).unwrap_or_default() {
        let _ = writeln!(s, "#");
        for line in wrap(&format!("Note: {n}."), 76) {
            let _ = writeln!(s, "# {line}");
        }
    }
    let stem = files
        .first()
        .and_then(|f| f.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into());
    let _ = writeln!(s, "\nname = {}", toml_str(&format!("{stem}-imported")));
    let first = &imp.limiters[0];
    let _ = writeln!(
        s,
        "description = {}",
        toml_str(&format!(
            "The rate limits of {}, replayed exactly.",
            shown.join(", ")
        ))
    );
    if options.trace.is_none() {
        let _ = writeln!(s, "duration = \"10s\"");
    }
    let _ = writeln!(
        s,
        "\n[defaults]            # the first limiter's policy; each limiter is held to its own rate\nlimit = {}\nwindow = \"{}\"",
        first.policy.0, first.policy.1
    );

    let mut names = Vec::new();
    let mut limiter_names = Vec::new();
    for (i, l) in imp.limiters.iter().enumerate() {
        let _ = writeln!(s, "\n# {}", one_line(&l.source));
        for n in &l.notes {
            let _ = writeln!(s, "#   {}", one_line(n));
        }
        let _ = writeln!(s, "[[limiter]]");
        let name = unique(&mut names, &l.name);
        let _ = writeln!(s, "name = {}", toml_str(&name));
        limiter_names.push(name);
        let _ = writeln!(s, "implementation = \"{}\"", l.implementation);
        for (k, v) in &l.fields {
            let _ = writeln!(s, "{k} = {v}");
        }
        let key_by = replay.map_or(l.key_by, |r| r.key_by[i]);
        if key_by != "client" {
            let _ = writeln!(s, "key_by = \"{key_by}\"");
        }
        if let Some(r) = replay.filter(|r| r.sources.len() > 1) {
            let seen: Vec<String> = r.sources_of[i]
                .iter()
                .map(|&k| toml_str(&r.sources[k].name))
                .collect();
            let _ = writeln!(s, "traffic = [{}]", seen.join(", "));
        }
    }
    for g in imp.groups.iter().filter(|g| g.members.len() > 1) {
        let _ = writeln!(s);
        let why = match g.mode {
            "all_or_nothing" => format!(
                "{}: nginx asks these zones of {} together: a request one rejects is counted by none, and a passed one waits the longest delay (docs/semantics.md §13)",
                g.lines, g.where_
            ),
            _ => format!(
                "{}: the service counts a request in every descriptor and rejects it if any is over the limit; the replay takes every request to carry every descriptor (Envoy's rate_limits actions decide which it carries) (docs/semantics.md §13)",
                g.where_
            ),
        };
        for line in wrap(&why, 76) {
            let _ = writeln!(s, "# {line}");
        }
        // A name holds no comma, quote or line break (a location may).
        let mut name: String = g
            .name
            .chars()
            .map(|c| match c == ',' || c == '"' || c.is_control() {
                true => '-',
                false => c,
            })
            .collect();
        while names.contains(&name) {
            name.push_str(" (chain)");
        }
        names.push(name.clone());
        let members: Vec<String> = g
            .members
            .iter()
            .map(|&m| toml_str(&limiter_names[m]))
            .collect();
        let _ = writeln!(
            s,
            "[[chain]]\nname = {}\nlimiters = [{}]\nmode = \"{}\"",
            toml_str(&name),
            members.join(", "),
            g.mode
        );
    }
    match (&options.trace, replay) {
        (Some(log), Some(r)) => {
            for src in &r.sources {
                let _ = writeln!(s, "\n# The access log, replayed (docs/semantics.md §8 in the ratesim repository).");
                let _ = writeln!(s, "[[traffic]]");
                if r.sources.len() > 1 {
                    let _ = writeln!(s, "name = {}", toml_str(&src.name));
                }
                let _ = writeln!(
                    s,
                    "pattern = \"trace\"\nformat = \"{}\"",
                    src.gateway.format()
                );
                let _ = writeln!(
                    s,
                    "path = {}           # relative to this file",
                    toml_str(log)
                );
                let format = r
                    .format
                    .as_deref()
                    .unwrap_or(src.gateway.default_log_format());
                match &r.from {
                    FormatFrom::Config(_) => {
                        let _ = writeln!(
                            s,
                            "log_format = {}   # from the configuration",
                            toml_str(format)
                        );
                    }
                    FormatFrom::Flag(_) => {
                        let _ = writeln!(s, "log_format = {}   # --log-format", toml_str(format));
                    }
                    FormatFrom::Named { .. } => {
                        let _ = writeln!(
                            s,
                            "log_format = {}   # from the configuration's access_log of this log's name",
                            toml_str(format)
                        );
                    }
                    FormatFrom::Default => {
                        let _ = writeln!(
                            s,
                            "# log_format = {}   # the default; write yours here",
                            toml_str(format)
                        );
                    }
                }
                if src.gateway == Gateway::Nginx {
                    match &src.client {
                        Some(c) if src.keyed => {
                            let _ = writeln!(s, "client = {}   # the zone's key", quoted_str(c));
                        }
                        Some(c) => {
                            let _ = writeln!(
                                s,
                                "client = {}   # each request's client (the zone has one key)",
                                quoted_str(c)
                            );
                        }
                        None => {}
                    }
                    let coarse = crate::accesslog::nginx::NginxFormat::new(
                        format,
                        None,
                        src.client.as_deref(),
                        None,
                    )
                    .is_ok_and(|f| f.coarse());
                    if coarse {
                        let _ = writeln!(
                            s,
                            "subsecond = \"spread\"   # the log's times are whole seconds"
                        );
                    }
                    if let Some(status) = src.rejected_status {
                        let _ = writeln!(
                            s,
                            "limit_req_status = {status}   # the log has no $limit_req_status: $status {status} is a rejection"
                        );
                    }
                }
                if let Some(ip) = &src.ip {
                    let _ = writeln!(s, "ip = {}   # a second zone's key", quoted_str(ip));
                }
                if let Some(loc) = &src.location {
                    let _ = writeln!(s, "location = {}", toml_str(loc));
                }
                if let Some((var, values, except)) = &src.select {
                    let values: Vec<String> = values.iter().map(|v| quoted_str(v)).collect();
                    let _ = writeln!(
                        s,
                        "{} = {{ {} = [{}] }}   # {}",
                        if *except { "except" } else { "only" },
                        quoted_str(var),
                        values.join(", "),
                        if *except {
                            "the map's default: every other value"
                        } else {
                            "the requests this map value picks"
                        }
                    );
                }
            }
        }
        _ => {
            // Twice the first limiter's policy, within the most a Poisson
            // source may draw: a mean gap of at least MIN_MEAN_GAP_NS, as
            // its rate is checked.
            use crate::traffic::poisson::{MAX_POISSON_RATE, MIN_MEAN_GAP_NS};
            let (limit, window) = (first.policy.0, &first.policy.1);
            let too_fast = crate::clock::parse_duration(window)
                .is_ok_and(|w| u128::from(w.0) < MIN_MEAN_GAP_NS * u128::from(limit) * 2);
            let rate = match too_fast {
                true => MAX_POISSON_RATE.to_string(),
                false => format!("{}/{window}", limit * 2),
            };
            let _ = writeln!(
                s,
                "\n# Placeholder traffic: replay your access log instead with\n#   ratesim import {} --trace LOG\n[[traffic]]\npattern = \"poisson\"\nclients = 3\nrate = \"{rate}\"",
                one_line(&shown.join(" ")),
            );
        }
    }
    s
}
