//! The simplest Rust replay of benches/access.log that a careful engineer
//! would write, to measure ratesim's replay against (README, "Replaying a
//! log"): read the `$msec $arg_k $status $request_time` lines through a
//! buffered reader, take each arrival as `$msec − $request_time` in integer
//! nanoseconds, intern the keys in a hash map, and decide each request by
//! one token bucket per key (capacity 10, 5 per second: benches/log.toml's,
//! kept as a theoretical arrival time), counting what passes. Nothing else:
//! no verdicts, no metrics, no outputs.
//!
//!     cargo build --release --example lean_replay
//!     target/release/examples/lean_replay benches/access.log heap
//!     target/release/examples/lean_replay benches/access.log unordered
//!
//! `heap` re-orders the lines by arrival within the window ratesim uses
//! (docs/semantics.md §8): a line waits in a binary heap until it arrives
//! more than 60 s before the latest arrival seen. Equal arrivals stay in
//! log order: it ignores `$status`, by which §8 takes one key's equal
//! arrivals passed first, then delayed, then rejected, so on another log
//! it may decide a tie differently from ratesim. `unordered` decides each line as it is
//! read, in completion order, which no correct replay may do: it is the
//! floor of reading, interning and deciding alone. It prints the lines,
//! the keys, and the requests admitted and rejected.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::BufRead as _;

/// A multiply-and-rotate hash over 8-byte words, mixed at the end (keys
/// that share a prefix must not share the low bits a hash map indexes by).
#[derive(Default)]
struct WordHash(u64);

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        let h = self.0 ^ (self.0 >> 29);
        h.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (h >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0 =
                (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
}

/// `S.fff` (any number of fraction digits up to 9) in nanoseconds.
fn nanos(field: &[u8]) -> Option<u64> {
    let (whole, frac) = match field.iter().position(|&c| c == b'.') {
        Some(dot) => (&field[..dot], &field[dot + 1..]),
        None => (field, &field[..0]),
    };
    let digits = |s: &[u8]| {
        s.iter().try_fold(0u64, |n, &c| {
            c.is_ascii_digit()
                .then(|| n.checked_mul(10)?.checked_add(u64::from(c - b'0')))
                .flatten()
        })
    };
    if frac.len() > 9 {
        return None;
    }
    let f = digits(frac)? * 10u64.pow(9 - frac.len() as u32);
    digits(whole)?.checked_mul(1_000_000_000)?.checked_add(f)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(mode)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: lean_replay ACCESS.LOG heap|unordered");
        std::process::exit(2);
    };
    let ordered = match mode.as_str() {
        "heap" => true,
        "unordered" => false,
        _ => {
            eprintln!("lean_replay: mode {mode:?} is not heap or unordered");
            std::process::exit(2);
        }
    };
    let file = std::fs::File::open(path).unwrap_or_else(|e| {
        eprintln!("lean_replay: {path}: {e}");
        std::process::exit(2);
    });
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);

    const WINDOW: u64 = 60_000_000_000;
    // Capacity 10 at 5 per second: a token every 200 ms, a full bucket 2 s.
    const PER_TOKEN: u64 = 200_000_000;
    const BURST: u64 = 10 * PER_TOKEN;
    let mut ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<WordHash>> = HashMap::default();
    // Each key's theoretical arrival time; admitted and rejected.
    let mut tat: Vec<u64> = Vec::new();
    let mut counts = [0u64; 2];
    let decide = |tat: &mut [u64], counts: &mut [u64; 2], t: u64, key: u32| {
        let at = &mut tat[key as usize];
        let next = (*at).max(t) + PER_TOKEN;
        let admit = next <= t + BURST;
        if admit {
            *at = next;
        }
        counts[usize::from(!admit)] += 1;
    };
    let mut waiting: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    let (mut latest, mut lines) = (0u64, 0u64);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("lean_replay: {path}: {e}");
                std::process::exit(2);
            }
        }
        lines += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let mut fields = text.split(|&c| c == b' ');
        let (Some(msec), Some(key), Some(_status), Some(duration)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            eprintln!("lean_replay: line {lines} has fewer than four fields");
            std::process::exit(2);
        };
        let arrival = nanos(msec)
            .zip(nanos(duration))
            .and_then(|(end, d)| end.checked_sub(d))
            .unwrap_or_else(|| {
                eprintln!("lean_replay: line {lines}: bad $msec or $request_time");
                std::process::exit(2);
            });
        let id = match ids.get(key) {
            Some(&id) => id,
            None => {
                let id = ids.len() as u32;
                ids.insert(key.into(), id);
                tat.push(0);
                id
            }
        };
        if !ordered {
            decide(&mut tat, &mut counts, arrival, id);
            continue;
        }
        latest = latest.max(arrival);
        waiting.push(Reverse((arrival, lines, id)));
        while let Some(&Reverse((t, _, key))) = waiting.peek() {
            if t + WINDOW >= latest {
                break;
            }
            waiting.pop();
            decide(&mut tat, &mut counts, t, key);
        }
    }
    while let Some(Reverse((t, _, key))) = waiting.pop() {
        decide(&mut tat, &mut counts, t, key);
    }
    println!(
        "{lines} lines, {} keys, {} admitted, {} rejected",
        ids.len(),
        counts[0],
        counts[1]
    );
}
