//! nginx `limit_req` configuration → `implementation = "nginx"` limiters.
//!
//! | nginx | ratesim |
//! |---|---|
//! | `limit_req_zone KEY zone=NAME:SIZE rate=Nr/s` (or `r/m`) | `rate = "N/1s"` (`"N/1m"`); KEY is the client field of the log |
//! | `limit_req zone=NAME` | one `[[limiter]]`, `queue = 0` |
//! | `burst=N` | `queue = N` |
//! | `nodelay` | `delay = queue` |
//! | `delay=N` | `delay = N` |
//! | `limit_req_dry_run on` | the same decisions (nginx only logs them): a note |
//! | `location = /p`, `location /p` | the limiter replays only that location's requests |
//! | a zone keyed by `$server_name` | `key_by = "global"`: the key is the server block's first `server_name`, one constant for every request it handles |
//! | a zone keyed by a constant (`one`, `"global"`: no `$`) | `key_by = "global"`; an empty constant (`""`) or an empty `$server_name` is a key nginx accounts no request under: the zone is not imported (a note says so) |
//! | several `limit_req` in one context | one `[[chain]]`, `mode = "all_or_nothing"`, named after the location (docs/semantics.md §13) |
//! | a zone keyed by a `map` of exact strings | evaluated per request from the logged source variable: one `[[traffic]]` per map value (`only`) and one for the rest (`except`); a zone whose key is empty there is not asked |
//!
//! A `map` entry that is a regular expression (`~...`), `hostnames`, or
//! `include` inside a map is an import error naming its line: ratesim
//! evaluates maps of exact strings only.

use super::{Gateway, Import, Imported};
use crate::error::{quoted, InputError};

/// One directive, with its block if it has one.
#[derive(Debug, Clone)]
struct Directive {
    name: String,
    args: Vec<String>,
    line: usize,
    block: Option<Vec<Directive>>,
}

fn tokenize(text: &str) -> Result<Vec<(String, usize, bool)>, String> {
    // (token, line, quoted)
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while let Some(&c) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                }
            }
            ';' | '{' | '}' => {
                out.push((c.to_string(), line, false));
                chars.next();
            }
            '"' | '\'' => {
                let start = line;
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err(format!("line {start}: a quoted string is not closed")),
                        Some('\\') => {
                            if let Some(n) = chars.next() {
                                s.push(n);
                            }
                        }
                        Some(q) if q == c => break,
                        Some(ch) => {
                            if ch == '\n' {
                                line += 1;
                            }
                            s.push(ch);
                        }
                    }
                }
                out.push((s, start, true));
            }
            _ => {
                // As nginx reads a word (ngx_conf_read_token): it ends at a
                // space, `;` or `{` — but a `{` right after `$` opens a
                // braced variable (`${name}`), and a `}` inside a word is
                // part of it.
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    let braced = c == '{' && s.ends_with('$');
                    if c.is_whitespace() || c == ';' || (c == '{' && !braced) {
                        break;
                    }
                    s.push(c);
                    chars.next();
                }
                out.push((s, line, false));
            }
        }
    }
    Ok(out)
}

fn parse_block(
    tokens: &[(String, usize, bool)],
    pos: &mut usize,
    nested: bool,
) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    while *pos < tokens.len() {
        let (tok, line, q) = &tokens[*pos];
        if !q && tok == "}" {
            if !nested {
                return Err(format!("line {line}: unexpected }}"));
            }
            *pos += 1;
            return Ok(out);
        }
        let mut d = Directive {
            name: tok.clone(),
            args: Vec::new(),
            line: *line,
            block: None,
        };
        *pos += 1;
        loop {
            let Some((t, l, q)) = tokens.get(*pos) else {
                return Err(format!("line {}: {} has no ending ; or {{", d.line, d.name));
            };
            *pos += 1;
            match (t.as_str(), q) {
                (";", false) => break,
                ("{", false) => {
                    d.block = Some(parse_block(tokens, pos, true)?);
                    break;
                }
                ("}", false) => return Err(format!("line {l}: unexpected }}")),
                _ => d.args.push(t.clone()),
            }
        }
        out.push(d);
    }
    if nested {
        return Err("a { block is not closed".into());
    }
    Ok(out)
}

/// An nginx `map $source $result { value result; ... default result; }`
/// of exact strings. Values are compared ignoring ASCII case, as nginx's
/// `ngx_http_map_find` lowercases the looked-up value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Map {
    pub source: String,
    pub result: String,
    pub line: usize,
    /// `(value lowercased, result)`, in file order.
    pub entries: Vec<(String, String)>,
    /// The result of every other value (`""` when the map has no default).
    pub default: String,
    /// Why it cannot be evaluated exactly (a regular expression,
    /// `hostnames`, `include`), with the line: an import error only if a
    /// zone is keyed by it.
    pub problem: Option<(usize, String)>,
}

impl Map {
    /// The map's result for `value` (lowercase).
    pub(super) fn get(&self, value: &str) -> &str {
        self.entries
            .iter()
            .find(|(v, _)| v == value)
            .map_or(self.default.as_str(), |(_, r)| r.as_str())
    }
}

/// Reads a `map` directive; what keeps it from being evaluated exactly is
/// its `problem`.
fn map(d: &Directive) -> Map {
    let (source, result) = match d.args.as_slice() {
        [s, r] => (s.clone(), r.clone()),
        _ => {
            return Map {
                source: String::new(),
                result: d.args.get(1).cloned().unwrap_or_default(),
                line: d.line,
                entries: Vec::new(),
                default: String::new(),
                problem: Some((
                    d.line,
                    format!(
                        "{} — expected map $SOURCE $RESULT {{ ... }}",
                        crate::error::quote(&text(d))
                    ),
                )),
            }
        }
    };
    let block = d.block.as_deref().unwrap_or_default();
    let mut m = Map {
        source,
        result: result.clone(),
        line: d.line,
        entries: Vec::new(),
        default: String::new(),
        problem: None,
    };
    for e in block {
        let value = e.args.first().cloned().unwrap_or_default();
        match e.name.as_str() {
            "default" => m.default = value,
            "hostnames" | "include" => {
                m.problem.get_or_insert((
                    e.line,
                    format!(
                        "map {result}: {} — ratesim evaluates maps of exact strings only",
                        e.name
                    ),
                ));
            }
            "volatile" => {}
            name if name.starts_with('~') => {
                m.problem.get_or_insert((
                    e.line,
                    format!(
                        "map {result}: entry {} is a regular expression — ratesim evaluates maps of exact strings only; write each value out, or replay with the zone's key in the log instead",
                        quoted(name)
                    ),
                ));
            }
            name => {
                let name = name.strip_prefix('\\').unwrap_or(name);
                m.entries.push((name.to_ascii_lowercase(), value));
            }
        }
    }
    m
}

struct Zone {
    key: String,
    rate: (u64, &'static str),
    line: usize,
    text: String,
    size: String,
}

#[derive(Clone, Default)]
struct Ctx {
    location: Option<String>,
    where_: String,
    dry_run: bool,
    /// `limit_req_status`: the status of a rejection (nginx: 503).
    status: Option<u16>,
    /// The enclosing server block's first `server_name` (nginx's
    /// `$server_name`; `""` when the block names none).
    server_name: Option<String>,
}

/// A directive as written (an empty argument as `""`, as it must have
/// been).
fn text(d: &Directive) -> String {
    let args: Vec<&str> = d
        .args
        .iter()
        .map(|a| if a.is_empty() { "\"\"" } else { a })
        .collect();
    format!("{} {};", d.name, args.join(" "))
}

/// Rate directives ratesim reads; any other `limit_*` is listed as not
/// modelled.
const MODELLED: &[&str] = &[
    "limit_req_zone",
    "limit_req",
    "limit_req_status",
    "limit_req_dry_run",
];

pub fn import(file: &str, text_in: &str, out: &mut Import) -> Result<(), InputError> {
    let at = |line: usize, msg: String| InputError::new(format!("{file}:{line}: {msg}"));
    let tokens = tokenize(text_in).map_err(|e| InputError::new(format!("{file}: {e}")))?;
    let dirs =
        parse_block(&tokens, &mut 0, false).map_err(|e| InputError::new(format!("{file}: {e}")))?;

    // Zones and log formats, wherever they are.
    let mut zones: Vec<(String, Zone)> = Vec::new();
    let mut maps: Vec<Map> = Vec::new();
    let mut formats: Vec<(String, String)> = Vec::new();
    let mut access_format: Option<String> = None;
    let mut access_logs: Vec<(usize, String, String)> = Vec::new();
    fn all(dirs: &[Directive], f: &mut dyn FnMut(&Directive)) {
        for d in dirs {
            f(d);
            if let Some(b) = &d.block {
                all(b, f);
            }
        }
    }
    let mut first_err: Option<InputError> = None;
    all(&dirs, &mut |d| {
        if first_err.is_some() {
            return;
        }
        match d.name.as_str() {
            "limit_req_zone" => match zone(d) {
                Ok((name, z)) => zones.push((name, z)),
                Err(e) => first_err = Some(at(d.line, e)),
            },
            "map" => maps.push(map(d)),
            "log_format" if !d.args.is_empty() => {
                let rest: Vec<&str> = d.args[1..]
                    .iter()
                    .map(String::as_str)
                    .filter(|a| !a.starts_with("escape="))
                    .collect();
                formats.push((d.args[0].clone(), rest.join("")));
            }
            // `access_log PATH [FORMAT]`: nginx's `combined` unless named.
            "access_log" if !d.args.is_empty() && d.args[0] != "off" => {
                let name = d.args.get(1).cloned().unwrap_or_else(|| "combined".into());
                if access_format.is_none() {
                    access_format = Some(name.clone());
                }
                access_logs.push((d.line, d.args[0].clone(), name));
            }
            n if n.starts_with("limit_") && !MODELLED.contains(&n) => out.notes.push(format!(
                "{file}:{}: {} — not modelled by ratesim",
                d.line,
                crate::error::quote(&text(d))
            )),
            _ => {}
        }
    });
    if let Some(e) = first_err {
        return Err(e);
    }
    // One `--trace` log is read in one format: say which, when the
    // configuration writes logs in several.
    let mut names: Vec<&str> = Vec::new();
    for (_, _, n) in &access_logs {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    if let ([first, ..], true) = (&names[..], names.len() > 1) {
        let line = access_logs[0].0;
        out.notes.push(format!(
            "{file}:{line}: access_log … {first} — this configuration writes logs in {} formats ({}); a --trace log is read in the format of the access_log whose file has its name, else as {first}, its first access_log's, unless --log-format names another",
            names.len(),
            names.join(", ")
        ));
    }
    out.access_logs.extend(
        access_logs
            .iter()
            .map(|(line, path, format)| super::AccessLogAt {
                at: format!("{file}:{line}"),
                path: path.clone(),
                format: format.clone(),
            }),
    );
    if let Some(name) = access_format {
        let text = named_format(&name, &formats);
        if let (Some(text), None) = (text, &out.log_format) {
            out.log_format = Some(text);
            out.log_format_name = Some(name);
        }
    }
    out.log_formats.extend(formats);
    for (_, z) in &zones {
        out.notes.push(format!(
            "{file}:{}: zone size {} — nginx evicts the least recently used keys when a zone is full; ratesim keeps every key",
            z.line, z.size
        ));
    }
    walk(
        &dirs,
        &Ctx {
            where_: "the config".into(),
            ..Ctx::default()
        },
        file,
        &zones,
        &maps,
        out,
    )
}

fn zone(d: &Directive) -> Result<(String, Zone), String> {
    let mut key = None;
    let mut name = None;
    let mut rate = None;
    for a in &d.args {
        if let Some(z) = a.strip_prefix("zone=") {
            let (n, size) = z.split_once(':').unwrap_or((z, "?"));
            name = Some((n.to_string(), size.to_string()));
        } else if let Some(r) = a.strip_prefix("rate=") {
            rate = Some(parse_rate(r)?);
        } else if a == "sync" {
        } else if key.is_none() {
            key = Some(a.clone());
        }
    }
    let (name, size) = name.ok_or("limit_req_zone without zone=NAME:SIZE")?;
    let rate =
        rate.ok_or_else(|| format!("limit_req_zone zone={name} without rate=, e.g. rate=10r/s"))?;
    let key = key.ok_or_else(|| {
        format!("limit_req_zone zone={name} without a key, e.g. $binary_remote_addr")
    })?;
    let key = unbraced(&key).unwrap_or(key);
    Ok((
        name,
        Zone {
            key,
            rate,
            line: d.line,
            text: text(d),
            size,
        },
    ))
}

/// A key that is one variable in braces, `${name}` (how nginx lets a name
/// run into text), as the variable `$name` a log format names.
fn unbraced(key: &str) -> Option<String> {
    let name = key.strip_prefix("${")?.strip_suffix('}')?;
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then(|| format!("${name}"))
}

/// `10r/s` → (10, "1s"); `30r/m` → (30, "1m").
fn parse_rate(r: &str) -> Result<(u64, &'static str), String> {
    let bad = || {
        format!(
            "rate={} — nginx rates are whole requests per second or minute, e.g. rate=10r/s or rate=30r/m",
            quoted(r)
        )
    };
    let (n, unit) = r.split_once("r/").ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    if n > crate::fields::MAX_COUNT {
        return Err(format!(
            "rate={} — at most 10^12 requests per second or minute (ratesim's counts)",
            quoted(r)
        ));
    }
    let unit = match unit {
        "s" => "1s",
        "m" => "1m",
        _ => return Err(bad()),
    };
    Ok((n, unit))
}

fn walk(
    dirs: &[Directive],
    ctx: &Ctx,
    file: &str,
    zones: &[(String, Zone)],
    maps: &[Map],
    out: &mut Import,
) -> Result<(), InputError> {
    let at = |line: usize, msg: String| InputError::new(format!("{file}:{line}: {msg}"));
    let mut here = ctx.clone();
    for d in dirs {
        match d.name.as_str() {
            "limit_req_dry_run" => here.dry_run = d.args.first().map(String::as_str) == Some("on"),
            "limit_req_status" => {
                let arg = d.args.first().map(String::as_str).unwrap_or("");
                here.status = Some(match arg.parse::<u16>() {
                    Ok(s @ 400..=599) => s,
                    _ => {
                        return Err(at(
                            d.line,
                            format!(
                                "limit_req_status {} — nginx takes a status from 400 to 599",
                                quoted(arg)
                            ),
                        ))
                    }
                });
            }
            "server_name" if here.server_name.is_none() => {
                here.server_name = Some(d.args.first().cloned().unwrap_or_default());
            }
            _ => {}
        }
    }
    let first = out.limiters.len();
    let mut seen_zones: Vec<String> = Vec::new();
    for d in dirs.iter().filter(|d| d.name == "limit_req") {
        let mut zone_name = None;
        let (mut burst, mut nodelay, mut delay) = (0u64, false, 0u64);
        for a in &d.args {
            let num = |v: &str, what: &str| {
                v.parse::<u64>()
                    .ok()
                    .filter(|&n| n <= crate::fields::MAX_COUNT)
                    .ok_or_else(|| {
                        at(
                            d.line,
                            format!(
                                "{what}={} — expected a whole number up to 10^12 (ratesim's counts)",
                                quoted(v)
                            ),
                        )
                    })
            };
            if let Some(z) = a.strip_prefix("zone=") {
                zone_name = Some(z.to_string());
            } else if let Some(b) = a.strip_prefix("burst=") {
                burst = num(b, "burst")?;
            } else if let Some(v) = a.strip_prefix("delay=") {
                delay = num(v, "delay")?;
            } else if a == "nodelay" {
                nodelay = true;
            } else {
                return Err(at(
                    d.line,
                    format!("limit_req: unknown parameter {}", quoted(a)),
                ));
            }
        }
        let zone_name = zone_name
            .ok_or_else(|| at(d.line, format!("{} has no zone=NAME", quoted(&text(d)))))?;
        // As nginx: one zone once per block.
        if seen_zones.contains(&zone_name) {
            return Err(at(
                d.line,
                format!(
                    "{} — zone {zone_name} is asked twice here; nginx -t refuses it (\"limit_req\" directive is duplicate)",
                    quoted(&text(d))
                ),
            ));
        }
        seen_zones.push(zone_name.clone());
        let (_, z) = zones.iter().find(|(n, _)| *n == zone_name).ok_or_else(|| {
            at(
                d.line,
                format!(
                    "limit_req zone={zone_name}: no limit_req_zone defines zone {}",
                    quoted(&zone_name)
                ),
            )
        })?;
        // nginx takes a delay above the burst: a passing request's excess
        // is at most the burst, so none waits, as with nodelay.
        let above = !nodelay && delay > burst;
        let delay = if nodelay || above { burst } else { delay };
        let mut notes = vec![format!(
            "zone {zone_name} ({file}:{}): {}",
            z.line,
            crate::error::quote(&z.text)
        )];
        notes.push(format!(
            "in {}: leaky_bucket, rate {}/{}, queue = burst = {burst}, delay = {delay}{}",
            here.where_,
            z.rate.0,
            z.rate.1,
            if nodelay {
                " (nodelay)".to_string()
            } else if above {
                " (its delay= is above burst=, so nothing waits: as nodelay)".to_string()
            } else {
                String::new()
            }
        ));
        if here.dry_run {
            notes.push("limit_req_dry_run on: nginx only logs these decisions (REJECTED_DRY_RUN); ratesim shows the same decisions".into());
        }
        if let Some(s) = &here.status {
            notes.push(format!("limit_req_status {s}: the status of a rejection"));
        }
        // A constant key — the server block's first name ($server_name), or
        // a key with no variable — is one key for every request; nginx
        // skips a zone whose key is empty (checked against nginx 1.22:
        // `limit_req_zone ""` never limits, `limit_req_zone one` is one
        // bucket for all).
        let constant = match z.key.as_str() {
            "$server_name" => Some(here.server_name.clone().unwrap_or_default()),
            k if !k.contains('$') => Some(k.to_string()),
            _ => None,
        };
        let constant_key = constant.is_some();
        if let Some(value) = &constant {
            let what = if z.key == "$server_name" {
                "$server_name, and its server block names no server_name".to_string()
            } else {
                "the empty string \"\"".to_string()
            };
            if value.is_empty() {
                out.notes.push(format!(
                    "{file}:{}: {} — zone {zone_name} is keyed by {what}: the key is empty, so nginx accounts no request in this zone; not imported",
                    d.line,
                    crate::error::quote(&text(d)),
                ));
                continue;
            }
            notes.push(if z.key == "$server_name" {
                format!(
                    "key $server_name: the server block's first server_name {}, the same for every request it handles: key_by = \"global\"",
                    quoted(value)
                )
            } else {
                format!(
                    "key {}: a constant, the same for every request: key_by = \"global\"",
                    quoted(value)
                )
            });
        }
        // A zone keyed by a map's result: the map is evaluated per request
        // from the logged source variable (see the replay).
        let keyed_by_map = maps.iter().find(|m| m.result == z.key);
        if let Some((line, problem)) = keyed_by_map.and_then(|m| m.problem.as_ref()) {
            return Err(at(*line, format!("{problem} (zone {zone_name}'s key)")));
        }
        if let Some(m) = keyed_by_map {
            let mut cases: Vec<String> = m
                .entries
                .iter()
                .map(|(v, r)| format!("{v:?} → {}", shown_result(r)))
                .collect();
            cases.push(format!("otherwise → {}", shown_result(&m.default)));
            notes.push(format!(
                "key {}: map {} ({file}:{}), by the logged {}: {} (a request whose key is empty is not counted in this zone)",
                z.key,
                m.result,
                m.line,
                m.source,
                cases.join(", ")
            ));
        }
        if here.location.is_none() && here.where_ != "the config" {
            notes.push("outside any location: nginx applies it to every location without a limit_req of its own; ratesim replays every request through it".into());
        }
        let base = here
            .location
            .as_deref()
            .and_then(super::location_slug)
            .unwrap_or_else(|| "all".into());
        out.limiters.push(Imported {
            source: format!("{file}:{}: {}", d.line, text(d)),
            notes,
            name: format!("{base}-{zone_name}"),
            implementation: "nginx",
            fields: vec![
                ("rate".into(), format!("\"{}/{}\"", z.rate.0, z.rate.1)),
                ("queue".into(), burst.to_string()),
                ("delay".into(), delay.to_string()),
            ],
            key_by: if constant_key { "global" } else { "client" },
            location: here.location.clone(),
            client_field: (!constant_key).then(|| super::logged(&z.key)),
            zone: Some(zone_name.clone()),
            gateway: Gateway::Nginx,
            rejected_status: Some(
                here.status
                    .unwrap_or(crate::accesslog::nginx::DEFAULT_LIMIT_REQ_STATUS),
            ),
            policy: (z.rate.0, z.rate.1.to_string()),
            map: keyed_by_map.cloned(),
            group: None,
        });
    }
    // docs/semantics.md §13: the limit_req of one context decide each
    // request together; a map-keyed zone needs its lines sorted by value.
    let members: Vec<usize> = (first..out.limiters.len()).collect();
    if members.len() > 1 || members.iter().any(|&m| out.limiters[m].map.is_some()) {
        let group = out.groups.len();
        let lines: Vec<String> = dirs
            .iter()
            .filter(|d| d.name == "limit_req")
            .map(|d| d.line.to_string())
            .collect();
        for &m in &members {
            out.limiters[m].group = Some(group);
        }
        out.groups.push(super::Group {
            name: match &here.location {
                Some(l) => format!("location {l}"),
                None => "all".to_string(),
            },
            members,
            mode: "all_or_nothing",
            where_: here.where_.clone(),
            lines: format!("{file}:{}", lines.join(",")),
        });
    }
    for d in dirs {
        let Some(block) = &d.block else { continue };
        let mut inner = here.clone();
        match d.name.as_str() {
            "location" => {
                let spec = d.args.join(" ");
                inner.where_ = format!("location {spec} ({file}:{})", d.line);
                match d.args.as_slice() {
                    [m, p] if m == "=" => inner.location = Some(format!("= {p}")),
                    [m, p] if m == "^~" => inner.location = Some(p.clone()),
                    [p] if p.starts_with('/') => inner.location = Some(p.clone()),
                    _ => {
                        out.notes.push(format!(
                            "{file}:{}: location {spec} — only exact (=) and prefix locations are modelled; its limiters replay every request",
                            d.line
                        ));
                        inner.location = None;
                    }
                }
            }
            "server" => {
                inner.where_ = format!("server ({file}:{})", d.line);
                inner.server_name = None;
            }
            "http" => inner.where_ = format!("http ({file}:{})", d.line),
            other => inner.where_ = format!("{other} ({file}:{})", d.line),
        }
        walk(block, &inner, file, zones, maps, out)?;
    }
    Ok(())
}

/// A map result as the notes show it.
fn shown_result(r: &str) -> String {
    if r.is_empty() {
        "empty".to_string()
    } else {
        r.to_string()
    }
}

/// The text of the log format `name`: nginx's predefined `combined`, or a
/// `log_format NAME ...` of the configuration (`formats`).
pub(super) fn named_format(name: &str, formats: &[(String, String)]) -> Option<String> {
    if name == "combined" {
        return Some(crate::accesslog::nginx::COMBINED.to_string());
    }
    formats
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, f)| f.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_braced_variable_is_one_word_as_nginx_reads_it() {
        let words: Vec<String> =
            tokenize("limit_req_zone ${binary_remote_addr} zone=a:1m rate=1r/s;\nlocation /x{ }")
                .unwrap()
                .into_iter()
                .map(|(w, _, _)| w)
                .collect();
        assert_eq!(
            words,
            [
                "limit_req_zone",
                "${binary_remote_addr}",
                "zone=a:1m",
                "rate=1r/s",
                ";",
                "location",
                "/x",
                "{",
                "}"
            ]
        );
    }

    #[test]
    fn a_braced_variable_key_is_the_variable() {
        assert_eq!(
            unbraced("${binary_remote_addr}").as_deref(),
            Some("$binary_remote_addr")
        );
        assert_eq!(
            unbraced("${http_x_api_key}").as_deref(),
            Some("$http_x_api_key")
        );
        // Text around it, two variables, or no name: not one variable.
        for key in [
            "${binary_remote_addr}x",
            "${a}${b}",
            "${}",
            "$remote_addr",
            "one",
        ] {
            assert_eq!(unbraced(key), None, "{key}");
        }
    }

    #[test]
    fn rates_are_per_second_or_minute() {
        assert_eq!(parse_rate("10r/s"), Ok((10, "1s")));
        assert_eq!(parse_rate("30r/m"), Ok((30, "1m")));
        assert!(parse_rate("5r/h").unwrap_err().contains("rate=10r/s"));
        assert!(parse_rate("0r/s").is_err());
    }

    #[test]
    fn directives_keep_their_lines_and_blocks() {
        let d = parse_block(
            &tokenize("http {\n  a 1 '2 3';\n  # c\n  location = /x { b; }\n}\n").unwrap(),
            &mut 0,
            false,
        )
        .unwrap();
        let http = d[0].block.as_ref().unwrap();
        assert_eq!(
            (http[0].line, http[0].args.clone()),
            (2, vec!["1".to_string(), "2 3".to_string()])
        );
        assert_eq!(http[1].line, 4);
        assert_eq!(http[1].args, vec!["=", "/x"]);
    }

    #[test]
    fn a_configuration_logging_in_two_formats_says_which_one_a_trace_is_read_as() {
        let conf = "http {\n  log_format main '$msec $remote_addr';\n  \
                    limit_req_zone $binary_remote_addr zone=ip:10m rate=5r/s;\n  \
                    server {\n    access_log /var/log/a.log main;\n    \
                    location / { limit_req zone=ip; }\n  }\n  \
                    server {\n    access_log /var/log/b.log;\n  }\n}\n";
        let mut out = Import::default();
        import("n.conf", conf, &mut out).unwrap();
        assert_eq!(out.log_format_name.as_deref(), Some("main"));
        let note = out
            .notes
            .iter()
            .find(|n| n.contains("formats"))
            .expect("a note on the formats");
        assert!(
            note.starts_with("n.conf:5: access_log … main — this configuration writes logs in 2 formats (main, combined)"),
            "{note}"
        );
        // One format, written twice: nothing to say.
        let one = conf.replace(
            "access_log /var/log/b.log;",
            "access_log /var/log/b.log main;",
        );
        let mut out = Import::default();
        import("n.conf", &one, &mut out).unwrap();
        assert!(
            !out.notes.iter().any(|n| n.contains("formats")),
            "{:?}",
            out.notes
        );
    }
}
