//! `ratesim export nginx-lua S --limiter NAME`: one limiter as an nginx
//! fragment for nginx's Lua module (Debian's `libnginx-mod-http-lua`, no
//! other library) that decides every request with the limiter's Redis
//! script (docs/semantics.md §6) and answers with the RateLimit fields
//! (docs/semantics.md §11) — the same decisions `ratesim run` takes on the
//! same arrivals, in a gateway.
//!
//! | ratesim | the fragment |
//! |---|---|
//! | the limiter's `EVALSHA` call ([`super::redis::call`]) | `EVALSHA` over an `ngx.socket.tcp` cosocket, speaking RESP; `SCRIPT LOAD` of the embedded script on `NOSCRIPT`, then again |
//! | the arrival | `now_us`: `ngx.req.start_time()` (whole ms, nginx's `$msec − $request_time`) in µs |
//! | `key_by = "client"` / `"ip"` | the variable the limiter was imported with (its nginx log source's `client` / `ip`), else `--key VAR`; `"ip"` alone is `$binary_remote_addr` |
//! | `key_by = "global"` | one key for every request |
//! | admitted / delayed / rejected | passes / `ngx.sleep` (whole ms, rounded up) / 429 with `Retry-After` (whole s, rounded up) |
//! | `decisions.csv`'s `ratelimit`, `ratelimit_policy` | `RateLimit`, `RateLimit-Policy` on every counted response |
//! | `deployment.timeout` | each socket step's timeout (100 ms when the scenario sets none) |
//! | `on_store_failure` | `fail_open`: passes; `fail_closed`: 503; `local_fallback`: the fallback limiter's script on an `ngx.shared` dict |
//!
//! Refused, naming the limiter and why: all that [`super::redis::call`]
//! refuses (an algorithm with no script, feedback limiters, chains and
//! their members, several instances with their own state), a key variable
//! that is no nginx variable, a name a header cannot carry, and a
//! `local_fallback` whose fallback no script runs.

use std::fmt::Write as _;

use crate::deploy::OnFailure;
use crate::error::{quoted, InputError};
use crate::scenario::{KeyBy, Scenario};

/// The location part (see the file's comments).
const LOCATION: &str = include_str!("nginx_lua.lua");
/// The `local_fallback` function, inside the location part.
const FALLBACK: &str = include_str!("nginx_lua_fallback.lua");
/// The shared dict of `local_fallback`.
const DICT: &str = "ratesim_fallback";
/// Each socket step's timeout when the scenario sets none.
const TIMEOUT_MS: u64 = 100;

/// What the export needs of a Redis script: its text and the SHA1 that
/// `SCRIPT LOAD` returns for it.
pub struct Script {
    pub text: &'static str,
    pub sha: String,
}

/// Where the fragment's requests go and how they are keyed.
pub struct Options<'a> {
    /// `HOST:PORT` of the Redis server.
    pub redis: &'a str,
    /// The key variable of a limiter that reads no nginx log.
    pub key: Option<&'a str>,
}

/// The fragment of limiter `name` of `s`; `script` gives an algorithm's
/// Redis script.
pub fn fragment(
    s: &Scenario,
    name: &str,
    options: &Options,
    script: &dyn Fn(&str) -> Option<Script>,
) -> Result<String, InputError> {
    let call = super::redis::call(s, name)?;
    let m = s
        .limiters
        .iter()
        .position(|l| l.name == name)
        .expect("redis::call found it");
    let l = &s.limiters[m];
    let bad = |why: String| InputError::new(format!("limiter {}: {why}", quoted(name)));
    if !name.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(bad(
            "its name goes into the RateLimit header fields, which carry printable ASCII only; rename it".into(),
        ));
    }
    let (host, port) = redis_address(options.redis)?;
    let main = script(call.algorithm).ok_or_else(|| {
        bad(format!(
            "{} has no Redis script in this build",
            call.algorithm
        ))
    })?;

    // The key: an nginx variable read in the request, or one for all.
    let (key_lua, key_doc) = match l.key_by {
        KeyBy::Global => (
            "\"all\"".to_string(),
            "one key for every request (key_by = \"global\")".to_string(),
        ),
        by => {
            let variable = match options
                .key
                .map(str::to_string)
                .or_else(|| super::nginx::logged_key(s, m, by))
            {
                Some(v) => v,
                None if by == KeyBy::Ip => "$binary_remote_addr".to_string(),
                None => {
                    return Err(bad(format!(
                        "keyed by {}, and it reads no nginx log that names the variable; give it with --key VAR, e.g. --key '$http_x_api_key' (a header) or --key '$arg_user' (a query argument)",
                        by.as_str()
                    )))
                }
            };
            let Some(bare) = super::nginx_variable(&variable) else {
                return Err(bad(format!(
                    "its key {} is no single nginx variable ($name: letters, digits and _), which is all the fragment can read a key from",
                    quoted(&variable)
                )));
            };
            (
                format!("ngx.var.{bare}"),
                format!(
                    "{variable}, each value its own key (key_by = \"{}\")",
                    by.as_str()
                ),
            )
        }
    };

    // The RateLimit-Policy field, as decisions.csv writes it.
    let (q, window) = l.header_policy(&s.defaults);
    let sf_name = sf_string(name);
    let mut policy = format!("{sf_name};q={q}");
    if let Some(w) = window.filter(|w| w.0 % 1_000_000_000 == 0) {
        let _ = write!(policy, ";w={}", w.0 / 1_000_000_000);
    }

    let timeout_ms = l.deployment.timeout.map(|t| t.0.div_ceil(1_000_000).max(1));
    let fail = match l.deployment.on_failure {
        OnFailure::FailOpen => "fail_open",
        OnFailure::FailClosed => "fail_closed",
        OnFailure::LocalFallback => "local_fallback",
    };

    let fallback = match l.deployment.on_failure {
        OnFailure::LocalFallback => {
            let alg = l.deployment.fallback.ok_or_else(|| {
                bad("on_store_failure = \"local_fallback\" with no fallback limiter".into())
            })?;
            let (algorithm, limit, window_us, extras) = super::redis::arguments(&alg)
                .map_err(|why| bad(format!("its local_fallback limiter: {why}")))?;
            let text = if algorithm == call.algorithm {
                "SCRIPT".to_string()
            } else {
                let other = script(algorithm).ok_or_else(|| {
                    bad(format!(
                        "its local_fallback's {algorithm} has no Redis script in this build"
                    ))
                })?;
                lua_long_string(other.text)
            };
            Some((algorithm, lua_args(limit, window_us, &extras), text))
        }
        _ => None,
    };

    // The fragment's comments: where it goes and what each value means.
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# ratesim export nginx-lua: limiter {} of scenario {} ({}), decided\n\
         # on Redis by the script redis/{}.lua (ratesim's docs/semantics.md §6),\n\
         # for nginx with Debian's libnginx-mod-http-lua (no other Lua library).",
        quoted(name),
        quoted(&s.name),
        call.algorithm,
        call.algorithm
    );
    out.push_str(
        "#\n\
         # Where it goes:\n\
         # - The Lua module: Debian's package loads it (modules-enabled/); in an\n\
         #   nginx.conf of your own, first `load_module modules/ndk_http_module.so;`\n\
         #   and `load_module modules/ngx_http_lua_module.so;` (main context).\n",
    );
    if fallback.is_some() {
        let _ = writeln!(
            out,
            "# - Part 1, `lua_shared_dict {DICT}`: in the http {{ }} block, once for\n\
             #   every fragment (the local fallback's state, per nginx server)."
        );
    }
    let _ = writeln!(
        out,
        "# - Part {}: inside the location {{ }} block whose requests the\n\
         #   limit counts (in a server {{ }} block it counts every location of it\n\
         #   that has no access_by_lua of its own). The location needs a content\n\
         #   handler (files, proxy_pass): `return` answers before the access phase.\n\
         #   An internal redirect (index, try_files, error_page) into a location\n\
         #   that holds it counts the request again. Reload nginx (nginx -s\n\
         #   reload) after placing it.",
        if fallback.is_some() {
            "2, the rest"
        } else {
            "1, all that follows"
        }
    );
    out.push_str("#\n# What each value means:\n");
    let _ = writeln!(
        out,
        "# - $ratesim_redis_host, $ratesim_redis_port: the Redis server ({host}:{port},\n\
         #   from `--redis`); the script and its keys live there, shared by every\n\
         #   nginx that calls it."
    );
    let _ = writeln!(
        out,
        "# - KEY: {key_doc};\n\
         #   the Redis key is {}<value>.\n\
         #   A request whose key is empty is not counted and carries no fields.",
        prefix(name)
    );
    out.push_str(
        "# - now_us: the request's start, ngx.req.start_time() (whole milliseconds;\n\
         #   ngx.now() is the same clock, cached per event-loop turn), in µs: what\n\
         #   nginx logs as $msec - $request_time, so `ratesim run` replaying this\n\
         #   server's access log (format = \"nginx\") sees the same arrivals.\n",
    );
    let _ = writeln!(
        out,
        "# - CALL: limit, window_us and the extras after `{{now_us}} {{cost}}` in\n\
         #   `ratesim export redis S --limiter {name}`; cost 1 per request."
    );
    out.push_str(
        "# - A rejection: 429, Retry-After (whole seconds, rounded up; none when the\n\
         #   request can never pass), RateLimit and RateLimit-Policy. A delay:\n\
         #   ngx.sleep(delay, rounded up to whole ms), then the request goes on.\n\
         #   Every counted response carries RateLimit: \"NAME\";r=R;t=T (R the largest\n\
         #   cost that passes at once now, q when any does; T whole seconds until\n\
         #   the key is as new) and RateLimit-Policy: \"NAME\";q=Q;w=W.\n",
    );
    let timeout_doc = match timeout_ms {
        Some(ms) => format!("{ms} ms (the scenario's deployment.timeout)"),
        None => format!("{TIMEOUT_MS} ms (the scenario sets no deployment.timeout)"),
    };
    let fail_doc = match l.deployment.on_failure {
        OnFailure::FailOpen => {
            "the request passes, with RateLimit-Policy and no RateLimit\n#   (no limiter decided)"
        }
        OnFailure::FailClosed => {
            "503, with RateLimit-Policy and no RateLimit or Retry-After\n#   (no limiter decided, and the client is over no limit)"
        }
        OnFailure::LocalFallback => {
            "the scenario's fallback limiter decides, by its own script\n#   run on this server's lua_shared_dict, with its own RateLimit"
        }
    };
    let _ = writeln!(
        out,
        "# - TIMEOUT_MS: {timeout_doc},\n\
         #   for each socket step (connect, send, each read). A Redis that does\n\
         #   not answer in time, or answers an error, is on_store_failure =\n\
         #   \"{fail}\":\n\
         #   {fail_doc}; nginx's error log says why (warn)."
    );
    if fallback.is_some() {
        let _ = writeln!(out, "\n# Part 1 (http block):\nlua_shared_dict {DICT} 10m;");
    }
    let _ = writeln!(
        out,
        "\n# Part {} (location block):",
        if fallback.is_some() { 2 } else { 1 }
    );

    let fallback_code = match &fallback {
        Some((algorithm, args, text)) => FALLBACK
            .replace("@FALLBACK_ALGORITHM@", algorithm)
            .replace("@DICT@", DICT)
            .replace("@FALLBACK_ARGS@", args)
            .replace("@FALLBACK_SCRIPT@", text),
        None => "        local function fallback() return nil, \"no local fallback\" end\n".into(),
    };
    let body = LOCATION
        .replace("@HOST@", &host)
        .replace("@PORT@", &port.to_string())
        .replace("@NAME@", &lua_string(&sf_name))
        .replace("@POLICY@", &lua_string(&policy))
        .replace("@Q@", &q.to_string())
        .replace("@FAIL@", fail)
        .replace("@TIMEOUT@", &timeout_ms.unwrap_or(TIMEOUT_MS).to_string())
        .replace("@KEY@", &key_lua)
        .replace("@PREFIX@", &lua_string(&prefix(name)))
        .replace(
            "@ARGS@",
            &lua_args(call.limit, call.window_us, &call.extras),
        )
        .replace("@SHA@", &main.sha)
        .replace("@FALLBACK@\n", &fallback_code)
        .replace("@SCRIPT@", &lua_long_string(main.text));
    out.push_str(&body);
    Ok(out)
}

/// The Redis key prefix of limiter `name`'s keys.
fn prefix(name: &str) -> String {
    format!("ratesim:{name}:")
}

/// `HOST:PORT`, checked to be what an nginx `set` can hold.
fn redis_address(addr: &str) -> Result<(String, u16), InputError> {
    let bad = || {
        InputError::new(format!(
            "--redis {}: expected HOST:PORT, e.g. 127.0.0.1:6379",
            quoted(addr)
        ))
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty()
        || port == 0
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c))
    {
        return Err(bad());
    }
    Ok((host.trim_matches(['[', ']']).to_string(), port))
}

/// The call's arguments after `cost`, as Lua strings.
fn lua_args(limit: u64, window_us: u64, extras: &[String]) -> String {
    std::iter::once(limit.to_string())
        .chain(std::iter::once(window_us.to_string()))
        .chain(extras.iter().cloned())
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `s` as a structured-field string (RFC 9651 §3.3.3), as decisions.csv
/// writes it: in double quotes, `\` and `"` escaped.
fn sf_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `s` as a Lua string literal in double quotes.
fn lua_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b}");
            }
        }
    }
    out.push('"');
    out
}

/// The most text of one Lua long string in the fragment: nginx reads a
/// `*_by_lua_block` token by token into a buffer of 4096 bytes, and a
/// longer string is "missing the closing long bracket".
const PIECE: usize = 2048;

/// `text` as a Lua expression: `[==[...]==]` with a level that does not
/// occur in it (a long string drops a newline that follows its opening),
/// or the concatenation of such strings of whole lines, each at most
/// [`PIECE`] bytes, when it is longer.
fn lua_long_string(text: &str) -> String {
    let level = (0..)
        .map(|n| "=".repeat(n))
        .find(|eq| !text.contains(&format!("]{eq}]")))
        .expect("some level is free");
    let mut pieces = vec![String::new()];
    for line in text.split_inclusive('\n') {
        let last = pieces.last_mut().expect("one piece at least");
        if !last.is_empty() && last.len() + line.len() > PIECE {
            pieces.push(String::new());
        }
        pieces
            .last_mut()
            .expect("one piece at least")
            .push_str(line);
    }
    let strings: Vec<String> = pieces
        .iter()
        .map(|p| format!("[{level}[\n{p}]{level}]"))
        .collect();
    match strings.as_slice() {
        [one] => one.clone(),
        _ => format!("table.concat({{\n{}}})", strings.join(",\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_string_takes_a_level_its_text_does_not_close() {
        assert_eq!(lua_long_string("a"), "[[\na]]");
        assert_eq!(lua_long_string("x]]y"), "[=[\nx]]y]=]");
        assert_eq!(lua_long_string("]]]=]"), "[==[\n]]]=]]==]");
        // Longer than a piece: whole lines, concatenated back.
        let line = format!("{}\n", "x".repeat(1500));
        assert_eq!(
            lua_long_string(&line.repeat(3)),
            format!("table.concat({{\n[[\n{line}]],\n[[\n{line}]],\n[[\n{line}]]}})")
        );
    }

    #[test]
    fn names_are_escaped_for_lua_and_for_the_header() {
        assert_eq!(sf_string("a\"b\\"), "\"a\\\"b\\\\\"");
        assert_eq!(lua_string("a\"b\n"), "\"a\\\"b\\10\"");
    }

    #[test]
    fn the_redis_address_is_host_and_port() {
        assert_eq!(
            redis_address("127.0.0.1:6379").unwrap(),
            ("127.0.0.1".into(), 6379)
        );
        assert_eq!(redis_address("[::1]:7000").unwrap(), ("::1".into(), 7000));
        for bad in ["localhost", ":6379", "h:0", "h:x", "a b:1", "h\";:1"] {
            assert!(redis_address(bad).is_err(), "{bad}");
        }
    }
}
