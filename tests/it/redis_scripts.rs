//! The Redis scripts of `redis/` against ratesim's limiters, decision by
//! decision, on a real redis-server (docs/semantics.md §6).
//!
//! Random traces — microsecond timestamps, several keys, mixed costs,
//! parameters whole in microseconds, times snapped to window and emission
//! boundaries — go through `EVALSHA` and through ratesim's limiter at the
//! same nanosecond; every outcome and wait must agree (ratesim's ns waits
//! rounded up to whole µs), and so must the RateLimit fields each reply
//! carries after them (`remaining` exactly, -1 where ratesim's is
//! unbounded; `reset_us` as ratesim's ns reset rounded up to whole µs, so
//! its whole seconds are `--decisions=headers`' `t`). Along the way:
//! - keys of one trace never interfere (each has its own ratesim key);
//! - an expired key decides like a fresh one: the expiry each call asks for
//!   is captured (the trace runs slower than real time, where it would fire
//!   early) and applied in virtual time: when the key's next request comes
//!   after it, the key is expired first (PEXPIRE 0), and the
//!   decisions must still agree with ratesim, which never forgets;
//! - the edge of each script's stated range still agrees.
//!
//! The server: `RATESIM_REDIS=host:port` (what `.ci/run` starts), else a
//! `redis-server` on PATH started here on a free loopback port with no
//! persistence, else the tests are skipped with a message — unless
//! `RATESIM_REQUIRE_REDIS` is set, as `.ci/run` sets it. `export.rs` runs
//! the calls `ratesim export redis S --limiter NAME` prints on the same
//! server, with [`observed`] scripts.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use ratesim::clock::{Nanos, Rate};
use ratesim::limiter::fixed_window::Align;
use ratesim::limiter::leaky_bucket::Arithmetic;
use ratesim::limiter::sliding_counter::Weight;
use ratesim::limiter::sliding_log::BoundaryRule;
use ratesim::limiter::smooth_bursty::Start;
use ratesim::limiter::{
    fixed_window, gcra, leaky_bucket, sliding_counter, sliding_log, smooth_bursty, token_bucket,
    Decision, Headers, Limiter, UNBOUNDED,
};

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

pub(crate) struct Server {
    child: Option<Child>,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A redis-server to test against, or `None` (skipped) when there is none.
pub(crate) fn server() -> Option<Server> {
    if let Ok(addr) = std::env::var("RATESIM_REDIS") {
        return Some(Server {
            child: None,
            url: format!("redis://{addr}/"),
        });
    }
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("RATESIM_REQUIRE_REDIS").is_none(),
                "RATESIM_REQUIRE_REDIS is set but redis-server cannot be started: {e}"
            );
            eprintln!(
                "SKIPPED: no redis-server on PATH ({e}); install redis-server to run these tests"
            );
            return None;
        }
    };
    let server = Server {
        child: Some(child),
        url: format!("redis://127.0.0.1:{port}/"),
    };
    let start = Instant::now();
    loop {
        if let Ok(mut c) = connect(&server) {
            if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                return Some(server);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn connect(s: &Server) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(s.url.as_str())?.get_connection()
}

// ---------------------------------------------------------------------------
// The scripts and ratesim's limiters
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Algo {
    TokenBucket {
        capacity: u64,
    },
    Gcra {
        burst: u64,
    },
    Leaky {
        queue: u64,
        delay: u64,
    },
    Fixed {
        count_rejected: bool,
        align: Align,
    },
    Log {
        count_rejected: bool,
        boundary: BoundaryRule,
    },
    Counter {
        count_rejected: bool,
        weight: Weight,
    },
    Smooth {
        capacity: u64,
        start: Start,
    },
}

#[derive(Debug, Clone, Copy)]
struct Params {
    limit: u64,
    window_us: u64,
    algo: Algo,
}

impl Params {
    fn script(&self) -> &'static str {
        let name = match self.algo {
            Algo::TokenBucket { .. } => "token_bucket",
            Algo::Gcra { .. } => "gcra",
            Algo::Leaky { .. } => "leaky_bucket",
            Algo::Fixed { .. } => "fixed_window",
            Algo::Log { .. } => "sliding_log",
            Algo::Counter { .. } => "sliding_counter",
            Algo::Smooth { .. } => "smooth_bursty",
        };
        ratesim::redis::script(name).expect("a script").text
    }

    fn extras(&self) -> Vec<String> {
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        match self.algo {
            Algo::TokenBucket { capacity } => vec![capacity.to_string()],
            Algo::Gcra { burst } => vec![burst.to_string()],
            Algo::Leaky { queue, delay } => vec![queue.to_string(), delay.to_string()],
            Algo::Fixed {
                count_rejected,
                align,
            } => vec![
                flag(count_rejected),
                match align {
                    Align::Epoch => "epoch",
                    Align::FirstHit => "first_hit",
                }
                .into(),
            ],
            Algo::Log {
                count_rejected,
                boundary,
            } => vec![
                flag(count_rejected),
                match boundary {
                    BoundaryRule::Exclusive => "exclusive",
                    BoundaryRule::Inclusive => "inclusive",
                }
                .into(),
            ],
            Algo::Counter {
                count_rejected,
                weight,
            } => vec![
                flag(count_rejected),
                match weight {
                    Weight::Exact => "exact",
                    Weight::Floor => "floor",
                }
                .into(),
            ],
            Algo::Smooth { capacity, start } => vec![
                capacity.to_string(),
                match start {
                    Start::Empty => "empty",
                    Start::Full => "full",
                }
                .into(),
            ],
        }
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        let window = Nanos(self.window_us * 1000);
        let rate = Rate::per(self.limit, window).expect("a representable rate");
        let (limit, window) = (self.limit, window);
        match self.algo {
            Algo::TokenBucket { capacity } => {
                token_bucket::boxed(token_bucket::Config { capacity, rate })
            }
            Algo::Gcra { burst } => Box::new(gcra::Gcra::new(gcra::Config { burst, rate })),
            Algo::Leaky { queue, delay } => {
                Box::new(leaky_bucket::LeakyBucket::new(leaky_bucket::Config {
                    rate,
                    queue,
                    delay,
                    arithmetic: Arithmetic::Exact,
                }))
            }
            Algo::Fixed {
                count_rejected,
                align,
            } => Box::new(fixed_window::FixedWindow::new(fixed_window::Config {
                limit,
                window,
                count_rejected,
                align,
            })),
            Algo::Log {
                count_rejected,
                boundary,
            } => Box::new(sliding_log::SlidingLog::new(sliding_log::Config {
                limit,
                window,
                count_rejected,
                boundary,
            })),
            Algo::Counter {
                count_rejected,
                weight,
            } => Box::new(sliding_counter::SlidingCounter::new(
                sliding_counter::Config {
                    limit,
                    window,
                    count_rejected,
                    weight,
                },
            )),
            Algo::Smooth { capacity, start } => {
                Box::new(smooth_bursty::SmoothBursty::new(smooth_bursty::Config {
                    rate,
                    capacity,
                    start,
                }))
            }
        }
    }

    /// The emission interval and window in µs (rounded down): boundaries
    /// worth landing on.
    fn periods(&self) -> [u64; 2] {
        [(self.window_us / self.limit).max(1), self.window_us]
    }
}

/// What a script replies for ratesim's `decision`.
fn expected(decision: Decision) -> (i64, i64) {
    let us = |ns: u64| ns.div_ceil(1000) as i64;
    match decision {
        Decision::Admitted => (1, 0),
        Decision::Delayed { delay } => (2, us(delay.0)),
        Decision::Rejected { retry_after: None } => (0, -1),
        Decision::Rejected {
            retry_after: Some(r),
        } => (0, us(r.0)),
    }
}

/// The RateLimit fields a script replies after the decision for ratesim's
/// `headers`: `{remaining, reset_us}` (docs/semantics.md §6, §11).
fn expected_fields(headers: Headers) -> (i64, i64) {
    let remaining = if headers.remaining == UNBOUNDED {
        -1
    } else {
        headers.remaining as i64
    };
    (remaining, headers.reset.0.div_ceil(1000) as i64)
}

// ---------------------------------------------------------------------------
// Replaying a trace
// ---------------------------------------------------------------------------

/// `script` with its expiry captured instead of set: `{outcome, wait_us,
/// ms, remaining, reset_us}`, where `ms` is the PEXPIRE the script asked
/// for (−1: none). The
/// trace runs slower than real time, so a real expiry would fire early;
/// the caller applies it at its virtual moment instead. Nothing else of
/// the script's text changes.
pub(crate) fn observed(script: &str) -> String {
    const PEXPIRE: &str = "redis.call('PEXPIRE', KEYS[1], ";
    // GCRA's one string: `SET KEY value PX ms`.
    const SET_PX: &str = "redis.call('SET', KEYS[1], ";
    assert!(script.contains(PEXPIRE) || script.contains(SET_PX) || script.contains("no expiry"));
    let body = script
        .replace(PEXPIRE, "expire_in(")
        .replace(SET_PX, "set_px(");
    format!(
        "local expiry = -1\n\
         local function expire_in(ms) expiry = tonumber(ms) return 1 end\n\
         local function set_px(value, px, ms)\n\
           assert(px == 'PX') redis.call('SET', KEYS[1], value) return expire_in(ms)\n\
         end\n\
         local function decide()\n{body}\nend\n\
         local r = decide()\n\
         return {{r[1], r[2], expiry, r[3], r[4]}}\n"
    )
}

/// One request: time in µs, key, cost.
type Request = (u64, u32, u64);

/// Replays `trace` through the script and through ratesim; panics at the
/// first disagreement, naming it. Returns how many keys were expired on the
/// way (at the moment the script's expiry said they were fresh again).
fn replay(conn: &mut redis::Connection, prefix: &str, p: &Params, trace: &[Request]) -> usize {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(observed(p.script()))
        .query(conn)
        .expect("SCRIPT LOAD");
    let mut limiter = p.limiter();
    let extras = p.extras();
    let mut expires_at: Vec<Option<u64>> = Vec::new();
    let mut expired = 0;
    for (i, &(t, key, cost)) in trace.iter().enumerate() {
        let name = format!("{prefix}:{key}");
        let k = key as usize;
        if expires_at.len() <= k {
            expires_at.resize(k + 1, None);
        }
        if expires_at[k].is_some_and(|at| t >= at) {
            // Redis would have expired the key by now: make it so (a
            // timeout of 0 expires it at once).
            let _: i64 = redis::cmd("PEXPIRE").arg(&name).arg(0).query(conn).unwrap();
            let exists: i64 = redis::cmd("EXISTS").arg(&name).query(conn).unwrap();
            assert_eq!(exists, 0, "{name} did not expire");
            expires_at[k] = None;
            expired += 1;
        }
        let want = expected(limiter.decide(key, Nanos(t * 1000), cost));
        let headers = limiter.headers(key, Nanos(t * 1000));
        let want_fields = expected_fields(headers);
        // The expiry the call asked for is applied above, at its virtual
        // moment: the key expires `ms` after now.
        let (outcome, wait, ms, remaining, reset_us): (i64, i64, i64, i64, i64) =
            redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(1)
                .arg(&name)
                .arg(t)
                .arg(cost)
                .arg(p.limit)
                .arg(p.window_us)
                .arg(&extras)
                .query(conn)
                .unwrap_or_else(|e| panic!("{p:?} request {i} {:?}: {e}", trace[i]));
        let got = (outcome, wait);
        assert_eq!(
            got,
            want,
            "{p:?}: request {i} (t = {t} us, key {key}, cost {cost}) — script {got:?}, ratesim {want:?}; trace so far: {:?}",
            &trace[..=i]
        );
        assert_eq!(
            (remaining, reset_us),
            want_fields,
            "{p:?}: request {i} (t = {t} us, key {key}, cost {cost}) — the script's (remaining, reset_us), ratesim's {headers:?}; trace so far: {:?}",
            &trace[..=i]
        );
        // `t` of the field: the reset in whole seconds, rounded up.
        assert_eq!((reset_us as u64).div_ceil(1_000_000), headers.reset_s());
        if ms >= 0 {
            assert!(ms >= 1, "{p:?}: request {i}: PEXPIRE {ms}");
            expires_at[k] = Some(t + ms as u64 * 1000);
        }
    }
    expired
}

fn random_params(rng: &mut ChaCha8Rng, kinds: &[&str]) -> Params {
    let limit = rng.random_range(1..=8u64);
    let window_us = *[1_000u64, 3_000, 7, 250, 1_000_000, 333_333, 20_000]
        .get(rng.random_range(0..7))
        .unwrap();
    let small = |rng: &mut ChaCha8Rng| rng.random_range(1..=6u64);
    let kind = kinds[rng.random_range(0..kinds.len())];
    let algo = match kind {
        "token_bucket" => Algo::TokenBucket {
            capacity: small(rng),
        },
        "gcra" => Algo::Gcra { burst: small(rng) },
        "leaky_bucket" => {
            let queue = rng.random_range(0..=4u64);
            Algo::Leaky {
                queue,
                delay: rng.random_range(0..=queue),
            }
        }
        "fixed_window" => Algo::Fixed {
            count_rejected: rng.random_bool(0.4),
            align: if rng.random_bool(0.5) {
                Align::FirstHit
            } else {
                Align::Epoch
            },
        },
        "sliding_log" => Algo::Log {
            count_rejected: rng.random_bool(0.4),
            boundary: if rng.random_bool(0.5) {
                BoundaryRule::Inclusive
            } else {
                BoundaryRule::Exclusive
            },
        },
        "sliding_counter" => Algo::Counter {
            count_rejected: rng.random_bool(0.4),
            weight: if rng.random_bool(0.5) {
                Weight::Floor
            } else {
                Weight::Exact
            },
        },
        "smooth_bursty" => Algo::Smooth {
            capacity: small(rng),
            start: if rng.random_bool(0.5) {
                Start::Full
            } else {
                Start::Empty
            },
        },
        other => unreachable!("{other}"),
    };
    Params {
        limit,
        window_us,
        algo,
    }
}

/// Sorted requests over 3 keys: many at the same µs, some 1 µs apart, some
/// snapped to boundaries (±1 µs), some after long pauses (so keys expire).
fn random_trace(rng: &mut ChaCha8Rng, p: &Params, n: usize) -> Vec<Request> {
    let mut t = rng.random_range(0..3 * p.window_us);
    let periods = p.periods();
    (0..n)
        .map(|_| {
            t += match rng.random_range(0..10) {
                0..=2 => 0,
                3 => 1,
                4..=5 => rng.random_range(1..=p.window_us.max(2)),
                6 => rng.random_range(1..=4 * p.window_us),
                7 => 3 * p.window_us + rng.random_range(0..2_000_000),
                _ => {
                    let period = periods[rng.random_range(0..2)];
                    let next = (t / period + 1) * period;
                    (next + rng.random_range(0..=2)).saturating_sub(1) - t
                }
            };
            let cost = if rng.random_bool(0.8) {
                1
            } else {
                rng.random_range(1..=9)
            };
            (t, rng.random_range(0..3), cost)
        })
        .collect()
}

fn check(kinds: &[&str], seed: u64, traces: usize) {
    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut expired = 0;
    for n in 0..traces {
        let p = random_params(&mut rng, kinds);
        let trace = random_trace(&mut rng, &p, 60);
        expired += replay(&mut conn, &format!("t{seed}:{n}"), &p, &trace);
    }
    assert!(
        expired > 0,
        "no key ever expired: the expiry check did not run"
    );
}

#[test]
fn token_bucket_script_decides_as_ratesim() {
    check(&["token_bucket"], 1, 150);
}

#[test]
fn gcra_script_decides_as_ratesim() {
    check(&["gcra"], 2, 150);
}

#[test]
fn leaky_bucket_script_decides_and_delays_as_ratesim() {
    check(&["leaky_bucket"], 3, 150);
}

#[test]
fn fixed_window_script_decides_as_ratesim() {
    check(&["fixed_window"], 4, 150);
}

#[test]
fn sliding_log_script_decides_as_ratesim() {
    check(&["sliding_log"], 5, 150);
}

#[test]
fn sliding_counter_script_decides_as_ratesim() {
    check(&["sliding_counter"], 6, 150);
}

#[test]
fn smooth_bursty_script_decides_as_ratesim() {
    check(&["smooth_bursty"], 7, 150);
}

/// What the script itself does with the key, called as production calls it.
#[test]
fn the_scripts_as_shipped_reply_expire_and_refuse_bad_arguments() {
    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    let cases: &[(&str, &[&str], i64, [i64; 2])] = &[
        // (script, extras, ms the first admitted request's key lives, and
        // the RateLimit fields after it: remaining, reset_us)
        ("token_bucket", &["5"], 200, [4, 200_000]), // full again once 1 token is back
        ("gcra", &["5"], 200, [4, 200_000]),         // TAT, one emission interval ahead
        ("leaky_bucket", &["2", "0"], 200, [0, 200_000]), // the outlet is free again
        ("fixed_window", &["0", "epoch"], 1000, [4, 1_000_000]),
        ("fixed_window", &["1", "first_hit"], 1000, [4, 1_000_000]),
        ("sliding_log", &["0", "exclusive"], 1000, [4, 1_000_000]),
        ("sliding_counter", &["0", "exact"], 2000, [4, 2_000_000]),
        // Floored, a count of 1 weighs nothing from offset W − (W − 1) of
        // the next window: 1 000 001 µs, 1001 ms rounded up.
        ("sliding_counter", &["0", "floor"], 1001, [4, 1_000_001]),
        ("smooth_bursty", &["5", "full"], 200, [-1, 200_000]), // nothing owed: any cost
    ];
    for (i, (algorithm, extras, ms, fields)) in cases.iter().enumerate() {
        let text = ratesim::redis::script(algorithm).unwrap().text;
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(text)
            .query(&mut conn)
            .unwrap();
        let key = format!("shipped:{i}");
        // 5 per second, at t = 0: admitted, and the key expires when fresh.
        let reply: Vec<i64> = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg(&key)
            .arg(0)
            .arg(1)
            .arg(5)
            .arg(1_000_000)
            .arg(*extras)
            .query(&mut conn)
            .unwrap();
        assert_eq!(reply, [1, 0, fields[0], fields[1]], "{algorithm}");
        let pttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap();
        assert!(
            (*ms - 50..=*ms).contains(&pttl),
            "{algorithm}: PTTL {pttl}, expected {ms} less the time since"
        );
        // A cost of 0 is not a request: an error naming the arguments.
        let err = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg(&key)
            .arg(0)
            .arg(0)
            .arg(5)
            .arg(1_000_000)
            .arg(*extras)
            .query::<Vec<i64>>(&mut conn)
            .unwrap_err();
        assert!(err.to_string().contains(algorithm), "{algorithm}: {err}");
    }
}

// ---------------------------------------------------------------------------
// `ratesim export redis` (no server needed)
// ---------------------------------------------------------------------------

fn ratesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ratesim"))
}

#[test]
fn export_prints_each_script_exactly_as_the_repository_has_it() {
    for s in ratesim::redis::SCRIPTS {
        let out = ratesim()
            .args(["export", "redis", s.algorithm])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", s.algorithm);
        let file = std::fs::read(format!(
            "{}/redis/{}.lua",
            env!("CARGO_MANIFEST_DIR"),
            s.algorithm
        ))
        .unwrap();
        assert_eq!(out.stdout, file, "{}", s.algorithm);
    }
    // Every script in redis/ is exported.
    let mut files: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/redis"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lua"))
        .collect();
    files.sort();
    let mut exported: Vec<String> = ratesim::redis::SCRIPTS
        .iter()
        .map(|s| format!("{}.lua", s.algorithm))
        .collect();
    exported.sort();
    assert_eq!(files, exported);
}

#[test]
fn export_all_writes_every_script_into_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scripts");
    let out = ratesim()
        .args(["export", "redis", "--all"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    for s in ratesim::redis::SCRIPTS {
        let written = std::fs::read_to_string(dir.join(format!("{}.lua", s.algorithm))).unwrap();
        assert_eq!(written, s.text);
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        ratesim::redis::SCRIPTS.len()
    );
}

// Regression: `--all` wrote over a user's own `gcra.lua` and exited 0.
#[test]
fn export_all_never_writes_over_a_file_it_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scripts");
    let export = || {
        ratesim()
            .args(["export", "redis", "--all"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    assert!(export().status.success());
    // Again over its own scripts, unchanged: nothing to refuse.
    assert!(export().status.success());
    std::fs::write(dir.join("gcra.lua"), "-- my lua\n").unwrap();
    std::fs::remove_file(dir.join("token_bucket.lua")).unwrap();
    let out = export();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("gcra.lua") && stderr.contains("never overwrites"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("gcra.lua")).unwrap(),
        "-- my lua\n"
    );
    assert!(
        !dir.join("token_bucket.lua").exists(),
        "a refusal writes nothing"
    );
    // A link of a script's name is refused too, and its target untouched.
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let outside = tmp.path().join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, fresh.join("gcra.lua")).unwrap();
        let out = ratesim()
            .args(["export", "redis", "--all"])
            .arg(&fresh)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
        assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 1);
    }
}

#[test]
fn export_of_an_unknown_algorithm_is_bad_input_naming_the_scripts() {
    let out = ratesim()
        .args(["export", "redis", "interval_bucket"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"interval_bucket\"") && stderr.contains("gcra"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// The edges of each script's stated range: a clock near ratesim's largest
/// time (10^15 µs), and the products each header bounds (capacity ×
/// window, (limit + 1) × window, (queue + 1) × cost × window) close to 2^53.
#[test]
fn the_edges_of_each_scripts_stated_range_still_agree() {
    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    const BASE: u64 = 900_000_000_000_000; // µs: 28.5 years
    let edges = [
        // capacity · window = 8e15
        (
            7,
            8_000_000_000,
            Algo::TokenBucket {
                capacity: 1_000_000,
            },
        ),
        (7, 8_000_000_000, Algo::Gcra { burst: 1_000_000 }),
        // (queue + 1) · cost · window ≤ 11 · 9 · 8e13 = 7.9e15
        (
            3,
            80_000_000_000_000,
            Algo::Leaky {
                queue: 10,
                delay: 4,
            },
        ),
        (
            1_000,
            8_000_000_000_000,
            Algo::Fixed {
                count_rejected: true,
                align: Align::FirstHit,
            },
        ),
        (
            1_000,
            8_000_000_000_000,
            Algo::Log {
                count_rejected: true,
                boundary: BoundaryRule::Inclusive,
            },
        ),
        // (limit + 1) · W = 8.008e15
        (
            1_000,
            8_000_000_000_000,
            Algo::Counter {
                count_rejected: true,
                weight: Weight::Floor,
            },
        ),
        (
            1_000,
            8_000_000_000_000,
            Algo::Counter {
                count_rejected: false,
                weight: Weight::Exact,
            },
        ),
        (
            7,
            8_000_000_000,
            Algo::Smooth {
                capacity: 1_000_000,
                start: Start::Full,
            },
        ),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for (n, (limit, window_us, algo)) in edges.into_iter().enumerate() {
        let p = Params {
            limit,
            window_us,
            algo,
        };
        let mut trace = random_trace(&mut rng, &p, 60);
        for r in &mut trace {
            r.0 += BASE;
        }
        replay(&mut conn, &format!("edge:{n}"), &p, &trace);
    }
}

// ---------------------------------------------------------------------------
// Arguments: refused as Redis' own commands refuse theirs
// ---------------------------------------------------------------------------

/// `EVAL` of `script` as shipped, on `key`, with `args` after it: the
/// reply's first two values, `{outcome, wait_us}`, as a caller that reads
/// only those sees them (`replay` checks the RateLimit fields after them).
fn eval(
    conn: &mut redis::Connection,
    script: &str,
    key: &str,
    args: &[&str],
) -> redis::RedisResult<Vec<i64>> {
    let reply: Vec<i64> = redis::cmd("EVAL")
        .arg(ratesim::redis::script(script).expect("a script").text)
        .arg(1)
        .arg(key)
        .arg(args)
        .query(conn)?;
    assert_eq!(
        reply.len(),
        4,
        "{script} {args:?}: {{outcome, wait_us, remaining, reset_us}}"
    );
    Ok(reply[..2].to_vec())
}

/// What `key` holds: its TYPE, then its hash fields and values or its
/// sorted set's members and scores.
fn state(conn: &mut redis::Connection, key: &str) -> Vec<String> {
    let kind: String = redis::cmd("TYPE").arg(key).query(conn).unwrap();
    let content: Vec<String> = match kind.as_str() {
        "none" => Vec::new(),
        "hash" => redis::cmd("HGETALL").arg(key).query(conn).unwrap(),
        "string" => vec![redis::cmd("GET").arg(key).query(conn).unwrap()],
        "zset" => redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(conn)
            .unwrap(),
        other => panic!("{key} is a {other}"),
    };
    std::iter::once(kind).chain(content).collect()
}

const MAX: u64 = (1 << 53) - 1;

/// What an argument takes.
#[derive(Clone, Copy)]
enum Takes {
    /// A whole number from .0 to .1.
    Whole(u64, u64),
    /// One of these words.
    Word(&'static [&'static str]),
}

/// A script's arguments after KEY: (name, what it takes, a valid value);
/// the valid values are 5 per second at t = 1 000 000 µs, admitted on a
/// fresh key.
fn signature(script: &str) -> Vec<(&'static str, Takes, &'static str)> {
    use Takes::{Whole, Word};
    let w52 = (1 << 52) - 1;
    let common = |limit_max, window_max| {
        vec![
            ("now_us", Whole(0, MAX), "1000000"),
            ("cost", Whole(1, MAX), "1"),
            ("limit", Whole(1, limit_max), "5"),
            ("window_us", Whole(1, window_max), "1000000"),
        ]
    };
    let (mut args, extras) = match script {
        "token_bucket" => (common(MAX, MAX), vec![("capacity", Whole(1, MAX), "5")]),
        "gcra" => (common(MAX, MAX), vec![("burst", Whole(1, MAX), "5")]),
        "leaky_bucket" => (
            common(MAX, MAX),
            vec![("queue", Whole(0, MAX), "2"), ("delay", Whole(0, MAX), "0")],
        ),
        "fixed_window" => (
            common(MAX, MAX),
            vec![
                ("count_rejected", Word(&["0", "1"]), "0"),
                ("align", Word(&["epoch", "first_hit"]), "epoch"),
            ],
        ),
        "sliding_log" => (
            common(MAX, MAX),
            vec![
                ("count_rejected", Word(&["0", "1"]), "0"),
                ("boundary", Word(&["exclusive", "inclusive"]), "exclusive"),
            ],
        ),
        "sliding_counter" => (
            common(w52, w52),
            vec![
                ("count_rejected", Word(&["0", "1"]), "0"),
                ("weight", Word(&["exact", "floor"]), "exact"),
            ],
        ),
        "smooth_bursty" => (
            common(MAX, MAX),
            vec![
                ("capacity", Whole(1, MAX), "5"),
                ("start", Word(&["empty", "full"]), "full"),
            ],
        ),
        other => unreachable!("{other}"),
    };
    args.extend(extras);
    args
}

/// Calls whose every argument is well formed but which leave the script's
/// stated exact range, and the condition the error names.
fn out_of_joint_range(script: &str) -> Vec<(Vec<&'static str>, &'static str)> {
    match script {
        // (1 + 1) · 2^52 + 5 and (1 + 2^52) · 2 + 5 pass 2^53.
        "token_bucket" | "smooth_bursty" => {
            let extra = if script == "smooth_bursty" {
                vec!["full"]
            } else {
                vec![]
            };
            let cond = "(capacity + cost) * window_us + limit must be below 2^53";
            [
                vec!["0", "1", "5", "4503599627370496", "1"],
                vec!["0", "4503599627370496", "5", "2", "1"],
            ]
            .into_iter()
            .map(|mut a| {
                a.extend(&extra);
                (a, cond)
            })
            .collect()
        }
        "gcra" => vec![
            // 4 · 3e15 + 1
            (
                vec!["0", "1", "1", "3000000000000000", "4"],
                "burst * window_us + limit must be below 2^53",
            ),
            // 9e15 + 1e13 / 1
            (
                vec!["9000000000000000", "1", "1", "10000000000000", "1"],
                "now_us + burst * window_us / limit must be below 2^53",
            ),
        ],
        "leaky_bucket" => vec![
            // (2 + 1) · 4 · 1e15 + 1
            (
                vec!["0", "4", "1", "1000000000000000", "2", "0"],
                "(queue + 1) * cost * window_us + limit must be below 2^53",
            ),
            // 9e15 + 1 · 1 · 1e13 / 1
            (
                vec!["9000000000000000", "1", "1", "10000000000000", "0", "0"],
                "now_us + (queue + 1) * cost * window_us / limit must be below 2^53",
            ),
            // 9008 · 1e12 + 1
            (
                vec!["0", "1", "1", "1000000000000", "0", "9008"],
                "delay * window_us + limit must be below 2^53",
            ),
        ],
        "fixed_window" => vec![(
            vec!["9007199254740991", "1", "1", "1", "0", "epoch"],
            "now_us + window_us must be below 2^53",
        )],
        "sliding_log" => vec![(
            vec!["9007199254740990", "1", "1", "1", "0", "exclusive"],
            "now_us + window_us + 1 must be below 2^53",
        )],
        "sliding_counter" => vec![
            // 9e15 + 2 · 4e12
            (
                vec!["9000000000000000", "1", "1", "4000000000000", "0", "exact"],
                "now_us + 2 * window_us must be below 2^53",
            ),
            // (3 + 1) · 3e15
            (
                vec!["0", "1", "3", "3000000000000000", "0", "exact"],
                "(limit + 1) * window_us must be below 2^53",
            ),
        ],
        other => unreachable!("{other}"),
    }
}

/// Every bad call of `script` and the exact error text (after "ERR ") or,
/// ending in "…", its start.
fn bad_calls(script: &str) -> Vec<(Vec<String>, String)> {
    let sig = signature(script);
    let valid: Vec<String> = sig.iter().map(|a| a.2.to_string()).collect();
    let mut calls = Vec::new();
    for (i, &(name, takes, _)) in sig.iter().enumerate() {
        let bad: Vec<(String, String)> = match takes {
            Takes::Whole(lo, hi) => {
                let range = format!("a whole number from {lo} to {hi}");
                let mut values: Vec<String> = [
                    "1.5", // fractional
                    "1e3", // exponent
                    "0x10",
                    "0X1A", // hex
                    "",
                    " 5",
                    "5 ",
                    "+5",
                    "5\n",
                    "nan",
                    "inf",
                    "-inf",
                    "12345678901234567", // 17 digits
                    "00000000000000001", // 17 digits, though small
                    "007",               // a leading zero, which Redis refuses too
                    "-0",
                ]
                .map(String::from)
                .to_vec();
                values.push((hi + 1).to_string()); // too large
                if lo > 0 {
                    values.push((lo - 1).to_string()); // too small
                }
                let mut bad: Vec<(String, String)> = values
                    .into_iter()
                    .map(|v| {
                        let shown = format!("{v:?}");
                        (v, format!("{name} {shown} must be {range}"))
                    })
                    .collect();
                bad.push((
                    "-1".into(),
                    format!("{name} \"-1\" is negative; it must be {range}"),
                ));
                bad
            }
            Takes::Word(words) => {
                let takes = format!("\"{}\"", words.join("\" or \""));
                ["", "2", "-1", "1.0", " 0"]
                    .iter()
                    .map(|v| v.to_string())
                    .chain([words[0].to_uppercase(), format!("{} ", words[0])])
                    .filter(|v| !words.contains(&v.as_str()))
                    .map(|v| {
                        let shown = format!("{v:?}");
                        (v, format!("{name} {shown} must be {takes}"))
                    })
                    .collect()
            }
        };
        for (value, error) in bad {
            let mut args = valid.clone();
            args[i] = value;
            calls.push((args, format!("{script}: {error}")));
        }
    }
    for (args, condition) in out_of_joint_range(script) {
        let args = args.into_iter().map(String::from).collect();
        calls.push((args, format!("{script}: {condition}: …")));
    }
    // One argument too few, one too many.
    let n = valid.len();
    let arity = format!("{script}: takes 1 key and {n} arguments (…");
    calls.push((valid[..n - 1].to_vec(), arity.clone()));
    let mut more = valid.clone();
    more.push("1".into());
    calls.push((more, arity));
    calls
}

#[test]
fn every_script_refuses_a_malformed_or_out_of_range_argument_and_leaves_the_key_alone() {
    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    let mut checked = 0;
    for s in ratesim::redis::SCRIPTS {
        let script = s.algorithm;
        let valid: Vec<&str> = signature(script).iter().map(|a| a.2).collect();
        // A key with state: one valid call, admitted.
        let used = format!("args:{script}:used");
        assert_eq!(eval(&mut conn, script, &used, &valid).unwrap(), [1, 0]);
        // The script's expiry is in Redis's real time (a few hundred ms
        // here), and a loaded machine can take longer than that over the
        // bad calls: the key is kept, and no bad call may set an expiry.
        let _: i64 = redis::cmd("PERSIST").arg(&used).query(&mut conn).unwrap();
        let before = state(&mut conn, &used);
        assert!(
            before.len() > 1,
            "{script}: no state to compare: {before:?}"
        );
        for (args, want) in bad_calls(script) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let fresh = format!("args:{script}:fresh");
            for key in [&fresh, &used] {
                let err = eval(&mut conn, script, key, &args)
                    .expect_err(&format!("{script} {args:?}: no error"));
                assert_eq!(err.code(), Some("ERR"), "{script} {args:?}: {err}");
                let got = err.detail().unwrap_or_default();
                match want.strip_suffix('…') {
                    Some(start) => assert!(
                        got.starts_with(start),
                        "{script} {args:?}: {got:?}, expected {want:?}"
                    ),
                    None => assert_eq!(got, want, "{script} {args:?}"),
                }
            }
            let exists: i64 = redis::cmd("EXISTS").arg(&fresh).query(&mut conn).unwrap();
            assert_eq!(exists, 0, "{script} {args:?} wrote {fresh}");
            assert_eq!(
                state(&mut conn, &used),
                before,
                "{script} {args:?} changed {used}"
            );
            let ttl: i64 = redis::cmd("PTTL").arg(&used).query(&mut conn).unwrap();
            assert_eq!(ttl, -1, "{script} {args:?} set an expiry on {used}");
            checked += 1;
        }
    }
    assert!(checked > 7 * 60, "only {checked} bad calls");
}

#[test]
fn a_count_that_would_leave_the_exact_range_is_refused_and_changes_nothing() {
    let Some(server) = server() else { return };
    let mut conn = connect(&server).expect("a connection");
    // count_rejected = 1: a rejected cost still counts, so the count can
    // grow past limit; the request that would take it past the script's
    // range is an error instead.
    let cases: &[(&str, &str, &str, &str)] = &[
        // (script, a cost that fits, the extra that does not, the error)
        (
            "fixed_window",
            "9007199254740000",
            "1000",
            "fixed_window: the window's count 9007199254740000 + cost 1000 must stay below 2^53",
        ),
        (
            "sliding_log",
            "9007199254740000",
            "1000",
            "sliding_log: the live cost 9007199254740000 + cost 1000 must stay below 2^53",
        ),
        (
            "sliding_counter",
            "4503599627370000",
            "1000",
            "sliding_counter: the window's count 4503599627370000 + cost 1000 must stay below 2^52",
        ),
    ];
    for &(script, first, second, want) in cases {
        let word = signature(script)[5].2;
        let key = format!("count:{script}");
        // Rejected (cost > limit) and counted.
        let reply = eval(
            &mut conn,
            script,
            &key,
            &["0", first, "1", "1000000", "1", word],
        );
        assert_eq!(reply.unwrap(), [0, -1], "{script}");
        let before = state(&mut conn, &key);
        assert!(
            before.iter().any(|v| v.contains(first)),
            "{script}: {before:?}"
        );
        let err = eval(
            &mut conn,
            script,
            &key,
            &["1", second, "1", "1000000", "1", word],
        )
        .expect_err(script);
        assert_eq!(err.detail(), Some(want), "{script}");
        assert_eq!(state(&mut conn, &key), before, "{script}");
    }
}

// ---------------------------------------------------------------------------
// A caller whose clock is behind the key's
// ---------------------------------------------------------------------------
//
// Another gateway, its clock 50 ms ahead, wrote the key at t = 1 000 000 µs
// on its clock; this caller's clock reads 950 000. It is answered on its
// own clock: the state as of the stored time, the wait to the same moment.
// Every case is 5 per second (limit 5, window 1 000 000 µs) unless said.

const AHEAD: &str = "1000000";
const BEHIND: &str = "950000";

/// `script` on `key`: the call at `now` with these arguments after it.
fn at(conn: &mut redis::Connection, script: &str, key: &str, now: &str, rest: &[&str]) -> Vec<i64> {
    let args: Vec<&str> = std::iter::once(now).chain(rest.iter().copied()).collect();
    eval(conn, script, key, &args).unwrap_or_else(|e| panic!("{script} {args:?}: {e}"))
}

/// The ahead gateway's call admits; the caller behind gets `want`, and,
/// since `want` is a rejection, the key is as the ahead call left it.
fn rejected_behind(conn: &mut redis::Connection, script: &str, rest: &[&str], want: [i64; 2]) {
    let key = format!("behind:{script}:{}", rest.join(","));
    assert_eq!(at(conn, script, &key, AHEAD, rest), [1, 0], "{script}");
    let before = state(conn, &key);
    assert_eq!(
        at(conn, script, &key, BEHIND, rest),
        want,
        "{script} {rest:?}"
    );
    assert_eq!(
        state(conn, &key),
        before,
        "{script} {rest:?}: state changed"
    );
}

fn field(conn: &mut redis::Connection, key: &str, name: &str) -> String {
    redis::cmd("HGET").arg(key).arg(name).query(conn).unwrap()
}

#[test]
fn a_token_bucket_caller_behind_the_stored_time_is_decided_at_it_and_waits_on_its_own_clock() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Capacity 1: the ahead call drains the bucket at l = 1 000 000. At l
    // one token is 200 000 µs away; the caller is 50 000 behind l:
    // 200 000 + 50 000 = 250 000.
    rejected_behind(
        conn,
        "token_bucket",
        &["1", "5", "1000000", "1"],
        [0, 250_000],
    );

    // Capacity 2: one token is left at l, so the caller behind is admitted;
    // l stays 1 000 000 (no refill, never back).
    let key = "behind:token_bucket:admitted";
    let rest = ["1", "5", "1000000", "2"];
    assert_eq!(at(conn, "token_bucket", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "token_bucket", key, BEHIND, &rest), [1, 0]);
    assert_eq!(field(conn, key, "l"), "1000000");
    assert_eq!(field(conn, key, "b"), "0");
    // Full again 2 · 200 000 after l, which is 450 000 µs after the
    // caller's now: the key lives 450 ms, not 400.
    let pttl: i64 = redis::cmd("PTTL").arg(key).query(conn).unwrap();
    assert!((401..=450).contains(&pttl), "PTTL {pttl}");
    // In order again at 1 200 000: one token refilled since l (had l gone
    // back to 950 000 the bucket would hold 1.25 and the next retry-after
    // be 150 000, not 200 000).
    assert_eq!(at(conn, "token_bucket", key, "1200000", &rest), [1, 0]);
    assert_eq!(
        at(conn, "token_bucket", key, "1200000", &rest),
        [0, 200_000]
    );
}

#[test]
fn a_gcra_caller_behind_waits_to_the_same_tat_on_its_own_clock_and_tat_never_moves_back() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Burst 1: the ahead call sets TAT = 1 200 000; the caller conforms at
    // TAT, 250 000 after its now (200 000 at the stored clock + 50 000).
    rejected_behind(conn, "gcra", &["1", "5", "1000000", "1"], [0, 250_000]);

    // Burst 3: it conforms (TAT − 2 · 200 000 = 800 000 ≤ 950 000), and
    // TAT = max(TAT, now) + T = 1 400 000, not 950 000 + T.
    let key = "behind:gcra:admitted";
    let rest = ["1", "5", "1000000", "3"];
    assert_eq!(at(conn, "gcra", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "gcra", key, BEHIND, &rest), [1, 0]);
    let tat: String = redis::cmd("GET").arg(key).query(conn).unwrap();
    assert_eq!(tat, "1400000");

    // Burst 2, as the header says: GCRA keeps no time of the last update,
    // so the caller is decided at its own now against TAT = 1 200 000: it
    // conforms at TAT − T = 1 000 000, 50 000 after its now (a token
    // bucket read at its stored time would admit it).
    rejected_behind(conn, "gcra", &["1", "5", "1000000", "2"], [0, 50_000]);
}

/// GCRA's key is one plain string: its TAT, an integer Redis stores in
/// fewer bytes than the token bucket's hash when the emission interval is
/// whole µs, else `"u:f"`. A hash `{u, f}`, as the script kept the TAT
/// before, is read as the same TAT (and replaced); a value that is no TAT
/// is an error reply, and the key is untouched.
#[test]
fn gcra_keeps_its_tat_as_one_string_and_reads_the_hash_it_kept_before() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    const NOW: &str = "1700000000123456";
    let get = |conn: &mut redis::Connection, key: &str| -> String {
        redis::cmd("GET").arg(key).query(conn).unwrap()
    };
    let encoding = |conn: &mut redis::Connection, key: &str| -> String {
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(key)
            .query(conn)
            .unwrap()
    };
    let bytes = |conn: &mut redis::Connection, key: &str| -> u64 {
        redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query(conn)
            .unwrap()
    };
    for key in [
        "gcra:string:whole",
        "gcra:string:fraction",
        "gcra:string:tb",
    ] {
        let _: i64 = redis::cmd("DEL").arg(key).query(conn).unwrap();
    }
    // 5 per second: T = 200 000 µs, TAT a whole µs.
    let whole = "gcra:string:whole";
    assert_eq!(
        at(conn, "gcra", whole, NOW, &["1", "5", "1000000", "5"]),
        [1, 0]
    );
    assert_eq!(get(conn, whole), "1700000000323456");
    assert_eq!(encoding(conn, whole), "int");
    let tb = "gcra:string:tb";
    assert_eq!(
        at(conn, "token_bucket", tb, NOW, &["1", "5", "1000000", "5"]),
        [1, 0]
    );
    assert!(
        bytes(conn, whole) < bytes(conn, tb),
        "GCRA {} bytes, the token bucket {}",
        bytes(conn, whole),
        bytes(conn, tb)
    );
    // 3 per second: T = 333 333 1/3 µs.
    let fraction = "gcra:string:fraction";
    assert_eq!(
        at(conn, "gcra", fraction, NOW, &["1", "3", "1000000", "3"]),
        [1, 0]
    );
    assert_eq!(get(conn, fraction), "1700000000456789:1");

    // The same TAT as a hash and as the string decide every request alike:
    // TAT = 1 700 000 001 123 456 2/3, T = 333 333 1/3, burst 3.
    let tat = ("1700000001123456", "2");
    let rest = ["3", "1000000", "3"];
    for (i, (now, cost, outcome)) in [
        ("1700000000456789", "1", 0), // TAT − 2·T = …456 790, 1 µs early
        ("1700000000456790", "1", 1),
        ("1700000000790123", "2", 0), // TAT − T = …790 123 1/3
        ("1700000000790124", "2", 1),
        ("1700000001456793", "3", 1), // after TAT: as a fresh key
    ]
    .into_iter()
    .enumerate()
    {
        let (hash, string) = (format!("gcra:hash:{i}"), format!("gcra:str:{i}"));
        let _: i64 = redis::cmd("DEL")
            .arg(&hash)
            .arg(&string)
            .query(conn)
            .unwrap();
        let _: i64 = redis::cmd("HSET")
            .arg(&hash)
            .arg("u")
            .arg(tat.0)
            .arg("f")
            .arg(tat.1)
            .query(conn)
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg(&string)
            .arg(format!("{}:{}", tat.0, tat.1))
            .query(conn)
            .unwrap();
        let args: Vec<&str> = [cost].into_iter().chain(rest).collect();
        let from_hash = at(conn, "gcra", &hash, now, &args);
        assert_eq!(from_hash[0], outcome, "{now} {cost}: {from_hash:?}");
        assert_eq!(
            from_hash,
            at(conn, "gcra", &string, now, &args),
            "{now} {cost}"
        );
        if outcome == 1 {
            assert_eq!(state(conn, &hash), state(conn, &string), "{now} {cost}");
            assert_eq!(state(conn, &hash)[0], "string");
        } else {
            assert_eq!(state(conn, &hash)[0], "hash", "a refusal changes nothing");
        }
    }

    // Not a TAT.
    let foreign = "gcra:string:foreign";
    let _: () = redis::cmd("SET")
        .arg(foreign)
        .arg("hello")
        .query(conn)
        .unwrap();
    let err = eval(conn, "gcra", foreign, &[NOW, "1", "5", "1000000", "5"]).unwrap_err();
    assert!(
        err.to_string()
            .contains("gcra: KEY holds \"hello\", which is no TAT"),
        "{err}"
    );
    assert_eq!(get(conn, foreign), "hello");
}

#[test]
fn a_leaky_bucket_caller_behind_is_delayed_or_told_to_retry_to_the_same_moment_on_its_own_clock() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Queue 1, delay 0. The ahead call passes at once: next_free =
    // 1 200 000. The caller behind is released at next_free: 200 000 after
    // the stored clock + 50 000 = a delay of 250 000.
    let key = "behind:leaky_bucket";
    let rest = ["1", "5", "1000000", "1", "0"];
    assert_eq!(at(conn, "leaky_bucket", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "leaky_bucket", key, BEHIND, &rest), [2, 250_000]);
    assert_eq!(field(conn, key, "n"), "1400000 0");
    assert_eq!(field(conn, key, "q"), "1200000 0");
    // The queue is full: the next caller behind may retry when the waiting
    // slot leaves at 1 200 000, 250 000 after its now; nothing changes.
    let before = state(conn, key);
    assert_eq!(at(conn, "leaky_bucket", key, BEHIND, &rest), [0, 250_000]);
    assert_eq!(state(conn, key), before);

    // Queue 1, delay 1 (nginx nodelay): the caller passes at release −
    // delay / rate = 1 000 000, 50 000 after its now.
    let key = "behind:leaky_bucket:nodelay";
    let rest = ["1", "5", "1000000", "1", "1"];
    assert_eq!(at(conn, "leaky_bucket", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "leaky_bucket", key, BEHIND, &rest), [2, 50_000]);
}

#[test]
fn a_fixed_window_caller_behind_is_decided_in_the_window_the_ahead_clock_opened() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Limit 1. The ahead call fills the window [1 000 000, 2 000 000); the
    // caller behind (whose own window would be [0, 1 000 000)) is decided
    // in it: retry at its end, 1 000 000 after the stored start + 50 000.
    for align in ["epoch", "first_hit"] {
        rejected_behind(
            conn,
            "fixed_window",
            &["1", "1", "1000000", "0", align],
            [0, 1_050_000],
        );
    }
    // Limit 2: admitted into that window, which stays (epoch would have
    // reset the key to window 0 and count 1).
    let key = "behind:fixed_window:admitted";
    let rest = ["1", "2", "1000000", "0", "epoch"];
    assert_eq!(at(conn, "fixed_window", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "fixed_window", key, BEHIND, &rest), [1, 0]);
    assert_eq!(field(conn, key, "s"), "1000000");
    assert_eq!(field(conn, key, "c"), "2");
}

#[test]
fn a_sliding_log_caller_behind_is_decided_and_logged_at_the_newest_entry() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Limit 1. The entry at 1 000 000 expires at 2 000 000: 1 000 000 after
    // the stored time + 50 000.
    rejected_behind(
        conn,
        "sliding_log",
        &["1", "1", "1000000", "0", "exclusive"],
        [0, 1_050_000],
    );

    // Limit 2: admitted, and logged at 1 000 000, not 950 000, so at
    // 1 960 000 both entries are still live (one at 950 000 would have
    // expired at 1 950 000 and let the request through).
    let key = "behind:sliding_log:admitted";
    let rest = ["1", "2", "1000000", "0", "exclusive"];
    assert_eq!(at(conn, "sliding_log", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "sliding_log", key, BEHIND, &rest), [1, 0]);
    let scores: Vec<String> = state(conn, key).into_iter().skip(2).step_by(2).collect();
    assert_eq!(scores, ["1000000", "1000000"]);
    assert_eq!(at(conn, "sliding_log", key, "1960000", &rest), [0, 40_000]);

    // count_rejected: the rejected caller behind is logged too, at
    // 1 000 000; both entries must expire, at 2 000 000 (1 050 000).
    let key = "behind:sliding_log:count_rejected";
    let rest = ["1", "1", "1000000", "1", "inclusive"];
    assert_eq!(at(conn, "sliding_log", key, AHEAD, &rest), [1, 0]);
    // inclusive: an entry at s lives through s + W, so 1 050 001.
    assert_eq!(at(conn, "sliding_log", key, BEHIND, &rest), [0, 1_050_001]);
    let scores: Vec<String> = state(conn, key).into_iter().skip(2).step_by(2).collect();
    assert_eq!(scores, ["1000000", "1000000"]);
}

#[test]
fn a_sliding_counter_caller_behind_is_decided_at_the_start_of_the_stored_window() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Limit 1, W = 1 000 000. The ahead call fills window 1; the caller
    // behind is decided at its start, 1 000 000 (e = 0). Through window 2
    // that count weighs 1 · (W − e) + W > W, so it passes at 3 000 000:
    // 2 000 000 after the stored time + 50 000.
    rejected_behind(
        conn,
        "sliding_counter",
        &["1", "1", "1000000", "0", "exact"],
        [0, 2_050_000],
    );
    // Limit 2: admitted into window 1, which stays (the key had gone back
    // to window 0 with count 1).
    let key = "behind:sliding_counter:admitted";
    let rest = ["1", "2", "1000000", "0", "floor"];
    assert_eq!(at(conn, "sliding_counter", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "sliding_counter", key, BEHIND, &rest), [1, 0]);
    assert_eq!(field(conn, key, "k"), "1");
    assert_eq!(field(conn, key, "c"), "2");
}

#[test]
fn a_smooth_bursty_caller_behind_the_stored_time_is_decided_at_it_and_waits_on_its_own_clock() {
    let Some(server) = server() else { return };
    let conn = &mut connect(&server).expect("a connection");
    // Capacity 1, start empty: the ahead call is admitted into a debt of
    // one permit at l = 1 000 000, paid 200 000 later; the caller is 50 000
    // behind l: 250 000.
    rejected_behind(
        conn,
        "smooth_bursty",
        &["1", "5", "1000000", "1", "empty"],
        [0, 250_000],
    );
    // start full, capacity 2: one permit left at l, admitted; l stays.
    let key = "behind:smooth_bursty:admitted";
    let rest = ["1", "5", "1000000", "2", "full"];
    assert_eq!(at(conn, "smooth_bursty", key, AHEAD, &rest), [1, 0]);
    assert_eq!(at(conn, "smooth_bursty", key, BEHIND, &rest), [1, 0]);
    assert_eq!(field(conn, key, "l"), "1000000");
    assert_eq!(field(conn, key, "t"), "0");
}

/// A Redis script cannot import another, so each carries its own copy of
/// the argument checker (`arg`, from its `-- ARGV[i] as argument` comment
/// to the end of the function). The copies are one piece of code: a fix to
/// one must reach them all, and this holds them byte-identical.
#[test]
fn every_script_checks_its_arguments_with_the_same_code() {
    let checker = |text: &str| -> String {
        let start = text
            .find("-- ARGV[i] as argument `name`")
            .expect("the argument checker's comment");
        let rest = &text[start..];
        let end = rest.find("\nend\n").expect("the end of `arg`") + "\nend\n".len();
        rest[..end].to_string()
    };
    let first = checker(ratesim::redis::SCRIPTS[0].text);
    assert!(
        first.contains("local function arg(i, name, lo, hi)"),
        "{first}"
    );
    for s in ratesim::redis::SCRIPTS {
        assert_eq!(
            checker(s.text),
            first,
            "redis/{}.lua's argument checker",
            s.algorithm
        );
    }
}
