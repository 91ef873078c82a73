//! The Redis scripts of `redis/`, embedded: ratesim's algorithms for a
//! production shared store (docs/semantics.md §6).
//!
//! Each script decides one request atomically with the caller's clock,
//! `EVALSHA sha 1 KEY now_us cost limit window_us [extra ...]`, and replies
//! `{outcome, wait_us, remaining, reset_us}`: 1 admitted, 2 delayed by
//! wait_us, 0 rejected with retry-after wait_us (−1: never); then the
//! RateLimit fields after the decision (docs/semantics.md §6 "Replies",
//! §11): the largest cost that passes at once (−1: any), and the µs until
//! the key is as new. Every argument is checked before the
//! key is read or written, as Redis' own commands check theirs: a number
//! in plain ASCII digits within the range the script's header states, or
//! one of its words; anything else is an error reply `ERR <algorithm>:
//! <argument> …` and the key is untouched. A caller whose clock is behind
//! the key's stored time is answered on its own clock: no stored time
//! moves back, and its wait adds the difference (each header says how).
//! `tests/it/redis_scripts.rs` replays random traces through each script on a
//! real redis-server and through ratesim's limiter, and compares every
//! decision and wait; it also checks the refusals and the clocks behind.

/// `(algorithm, script)` for every algorithm with a script, and the extra
/// arguments it takes after `window_us`.
pub const SCRIPTS: &[Script] = &[
    Script {
        algorithm: "token_bucket",
        extras: "capacity",
        text: include_str!("../redis/token_bucket.lua"),
    },
    Script {
        algorithm: "gcra",
        extras: "burst",
        text: include_str!("../redis/gcra.lua"),
    },
    Script {
        algorithm: "leaky_bucket",
        extras: "queue delay",
        text: include_str!("../redis/leaky_bucket.lua"),
    },
    Script {
        algorithm: "fixed_window",
        extras: "count_rejected(0|1) align(epoch|first_hit)",
        text: include_str!("../redis/fixed_window.lua"),
    },
    Script {
        algorithm: "sliding_log",
        extras: "count_rejected(0|1) boundary(exclusive|inclusive)",
        text: include_str!("../redis/sliding_log.lua"),
    },
    Script {
        algorithm: "sliding_counter",
        extras: "count_rejected(0|1) weight(exact|floor)",
        text: include_str!("../redis/sliding_counter.lua"),
    },
    Script {
        algorithm: "smooth_bursty",
        extras: "capacity start(empty|full)",
        text: include_str!("../redis/smooth_bursty.lua"),
    },
];

/// One algorithm's script.
#[derive(Debug, Clone, Copy)]
pub struct Script {
    pub algorithm: &'static str,
    /// The arguments after `window_us`, in order.
    pub extras: &'static str,
    pub text: &'static str,
}

impl Script {
    /// The SHA1 of the script's text, in lowercase hex: what `SCRIPT LOAD`
    /// returns and `EVALSHA` takes.
    pub fn sha(&self) -> String {
        sha1_smol::Sha1::from(self.text).digest().to_string()
    }
}

/// The script of `algorithm`, if it has one.
pub fn script(algorithm: &str) -> Option<&'static Script> {
    SCRIPTS.iter().find(|s| s.algorithm == algorithm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_states_its_call_and_its_exact_range() {
        for s in SCRIPTS {
            let header: String = s
                .text
                .lines()
                .take_while(|l| l.starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n");
            for needle in [
                "Rule",
                "Arguments:",
                "error reply",
                "Returns",
                "Clock behind:",
                "Exact",
                "2^53",
                "Expiry",
            ] {
                assert!(header.contains(needle), "{}: no {needle:?}", s.algorithm);
            }
            let call = header
                .lines()
                .find(|l| l.contains("Call:"))
                .unwrap_or_default();
            assert!(
                call.contains("EVALSHA sha 1 KEY now_us cost limit window_us"),
                "{call}"
            );
            for extra in s.extras.split_whitespace() {
                let name = extra.split('(').next().unwrap_or(extra);
                assert!(
                    call.contains(name),
                    "{}: the call names no {name}",
                    s.algorithm
                );
            }
            assert!(!s.text.contains("redis.call('TIME')"), "{}", s.algorithm);
        }
    }
}
