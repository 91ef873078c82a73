//! The floor of a replay: `cargo bench --bench replay_floor --
//! benches/access.log [CAPACITY]`.
//!
//! Plain Rust on one thread replays the nginx bench log
//! (`$msec $arg_k $status $request_time`, benches/make_log.py) through an
//! exact token bucket per key of `CAPACITY` (10 unless given) refilled at
//! 5 a second, as benches/log.toml's one limiter does: each line read and split at spaces,
//! `$msec` and `$request_time` read as integer nanoseconds, `$arg_k` kept
//! in a `HashMap`, the requests put in order of their start (`$msec`
//! less `$request_time`, then line) through a heap that holds each one
//! until the log has passed its start by a second (the bench log's
//! requests take at most 250 ms), and each decided in that order. It
//! counts nothing else: no time series, no per-key counts, no state over
//! time, no recording to share, and it trusts its input. So it is not
//! what ratesim does, but what a plain program that replays this log
//! costs; the README ("Where it stands") measures ratesim and Python's
//! floor against it. It prints the requests it admitted, the process's
//! CPU time and its peak resident memory. Its decisions are ratesim's:
//! `ratesim run benches/log.toml --set 'limiter[0].capacity=C'` admitted
//! as many for C = 1, 2 and 10 (909 307, 995 252 and all 10^6) on
//! 2026-12-05.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{BufRead, BufReader};

mod process;
use process::{cpu_seconds, peak_rss_mib};

/// `DIGITS.DIGITS` seconds in nanoseconds.
fn nanos(b: &[u8]) -> u64 {
    let (int, frac) = match b.iter().position(|&c| c == b'.') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &b""[..]),
    };
    let digits = |d: &[u8]| d.iter().fold(0u64, |n, &c| n * 10 + u64::from(c - b'0'));
    digits(int) * 1_000_000_000 + digits(frac) * 10u64.pow(9 - frac.len() as u32)
}

/// One token, in the bucket's units: a token is 10^9 of them, so that
/// 5 tokens a second refill 5 units a nanosecond, exactly.
const TOKEN: u64 = 1_000_000_000;
/// Tokens a second (benches/log.toml: 5 per 1 s), so units a nanosecond.
const RATE: u64 = 5;
/// How long past a request's start the log is read before it is decided
/// (ns): longer than any request of the bench log takes.
const HOLD: u64 = 1_000_000_000;

struct Bucket {
    tokens: u64,
    at: u64,
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(path) = args.first() else {
        eprintln!("usage: cargo bench --bench replay_floor -- LOG [CAPACITY]");
        std::process::exit(2);
    };
    let full = args
        .get(1)
        .map_or(10, |c| c.parse::<u64>().expect("a whole capacity"))
        .checked_mul(TOKEN)
        .expect("a capacity under 1.8·10^10 tokens");
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = BufReader::with_capacity(1 << 18, file);
    let mut line = Vec::new();
    let mut ids: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut waiting: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    let (mut number, mut admitted, mut last) = (0u64, 0u64, 0u64);
    let mut decide = |(start, _, id): (u64, u64, u32), buckets: &mut Vec<Bucket>| {
        assert!(start >= last, "a request started before one decided");
        last = start;
        let b = &mut buckets[id as usize];
        // A key's bucket is made full at its first line, whose start may
        // come after the start of a line of it that the log wrote later.
        let refill = start.saturating_sub(b.at).saturating_mul(RATE);
        b.tokens = b.tokens.saturating_add(refill).min(full);
        b.at = start;
        if b.tokens >= TOKEN {
            b.tokens -= TOKEN;
            admitted += 1;
        }
    };
    while lines.read_until(b'\n', &mut line).expect("readable") > 0 {
        number += 1;
        let mut fields = line.trim_ascii_end().split(|&b| b == b' ');
        let (msec, key, _status, took) =
            match (fields.next(), fields.next(), fields.next(), fields.next()) {
                (Some(m), Some(k), Some(s), Some(t)) => (m, k, s, t),
                _ => panic!("line {number}: not `$msec $arg_k $status $request_time`"),
            };
        let logged = nanos(msec);
        let start = logged - nanos(took);
        let id = match ids.get(key) {
            Some(&id) => id,
            None => {
                ids.insert(key.to_vec(), buckets.len() as u32);
                buckets.push(Bucket {
                    tokens: full,
                    at: start,
                });
                buckets.len() as u32 - 1
            }
        };
        waiting.push(Reverse((start, number, id)));
        while let Some(&Reverse(top)) = waiting.peek() {
            if top.0 + HOLD >= logged {
                break;
            }
            waiting.pop();
            decide(top, &mut buckets);
        }
        line.clear();
    }
    while let Some(Reverse(top)) = waiting.pop() {
        decide(top, &mut buckets);
    }
    println!(
        "{number} lines, {admitted} admitted, {:.2} CPU-s, peak RSS {:.1} MiB",
        cpu_seconds(),
        peak_rss_mib().unwrap_or(f64::NAN)
    );
}
