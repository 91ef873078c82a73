//! The peak memory of a whole run, from its parameters: what each part of
//! the simulator keeps per key, per client, per entry and per limiter, read
//! from the code and calibrated against measured peak RSS (README, "Memory
//! of a run").

use std::mem::size_of;

use super::{count, mib, mul_div};
use crate::deploy::{OnFailure, Scope};
use crate::limiter::leaky_bucket::Arithmetic;
use crate::limiter::{
    fixed_window, interval_bucket, leaky_bucket, sliding_counter, sliding_log, smooth_bursty,
    token_bucket, Algorithm,
};
use crate::scenario::{KeyBy, LimiterSpec, Scenario};
use crate::traffic::bursty::Form;
use crate::traffic::Pattern;
/// The peak resident memory of a whole run, by what it is for.
///
/// Every limiter's run exists from the first arrival to the last, whatever
/// the number of threads: the limiters take each chunk of arrivals in
/// parallel, but their tables are all alive at once, and the arrivals are
/// generated once and shared (see [`crate::engine::simulate_all`]). So the
/// limiters' parts add up, the arrivals count once, and threads add only
/// their stacks (in [`Memory::process`]; the allocator keeps one arena for
/// all of them, see [`crate::cache::tune_malloc`]).
///
/// Bytes per key, read from the code: a limiter's recorder slot (64,
/// [`crate::metrics`]), its state (the rule's `State`, e.g. 16 for a token
/// bucket), its pending fresh event (16, plus the part-filled blocks of
/// the calendar queue holding them) and two bits beside them — per
/// instance of a local deployment, and once more for a
/// limiter keyed by `ip` or `global` (its per-client shadow). A Poisson
/// client is an 8-byte clock and a 16-byte event on the arrivals' queue;
/// every other synthetic client a boxed stream with its next arrival
/// (190 bytes for a steady client, 430–480 with a random generator).
/// Calibrated against peak RSS from 10^4 to 10^7 keys (README, "Memory of
/// a run").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Memory {
    /// The process before anything per key: code, the allocator, threads,
    /// and the two chunks of arrivals handed to the limiters.
    pub process: u128,
    /// Generating the arrivals: each client's generator and its next
    /// arrival on the queue, a Zipf source's table, a trace's reader and
    /// its clients' names.
    pub arrivals: u128,
    /// Tables with a row per key or client, over every limiter: recorder
    /// slots, states and fresh events.
    pub keys: u128,
    /// The keys of those tables, summed over the limiters and their
    /// instances (for messages).
    pub key_rows: u128,
    /// What grows with a limiter's parameters and traffic: log entries,
    /// window counts and their expiries, waiting requests and their
    /// releases, crowded windows of passes, retries waiting.
    pub entries: u128,
    /// The largest entries of one kind in one limiter: `(bytes, limiter
    /// index, what they are)`.
    pub largest_entries: (u128, usize, &'static str),
    /// Per limiter, whatever its keys: its time series, delay histograms
    /// and queues.
    pub limiters: u128,
    /// The decision log's buffers (none unless the log is written).
    pub decision_log: u128,
    /// The recorded sources' files as read — their packed requests and
    /// names (crates/input/src/recording.rs) — held once per process,
    /// shared by every run and sweep point that replays them.
    pub recordings: u128,
}

/// What a limiter's entries are, for messages.
pub(super) const LOG_ENTRIES: &str = "log entries (a sliding log's `limit` per key)";
pub(super) const WAITING_REQUESTS: &str = "waiting requests (a leaky bucket's `queue` per key)";
pub(super) const CROWDED_WINDOWS: &str =
    "windows of passes (more than five a key in a policy window)";
pub(super) const RETRIES: &str = "retries waiting (one per client of a source that retries)";
pub(super) const HELD_REQUESTS: &str =
    "requests held while r = 0 (every request of a source that reads the RateLimit fields)";

impl Memory {
    /// Adds `bytes` of limiter `index`'s entries of kind `what`.
    pub(super) fn add_entries(&mut self, index: usize, what: &'static str, bytes: u128) {
        self.entries = self.entries.saturating_add(bytes);
        if bytes > self.largest_entries.0 {
            self.largest_entries = (bytes, index, what);
        }
    }

    /// The whole run's peak memory, in bytes.
    pub fn total(&self) -> u128 {
        [
            self.process,
            self.arrivals,
            self.keys,
            self.entries,
            self.limiters,
            self.decision_log,
            self.recordings,
        ]
        .into_iter()
        .fold(0, u128::saturating_add)
    }

    /// What makes the run large: its largest part, in words.
    pub(super) fn largest(&self) -> String {
        let parts = [
            (self.keys, 0),
            (self.entries, 1),
            (self.arrivals, 2),
            (self.limiters.saturating_add(self.decision_log), 3),
            (self.recordings, 4),
        ];
        let (bytes, part) = parts
            .into_iter()
            .max_by_key(|&(b, _)| b)
            .expect("five parts");
        let what = match part {
            0 => format!(
                "per-key tables: a recorder slot, a state and its ledger entries for each of {} \
                 keys summed over the limiters and their instances",
                count(self.key_rows)
            ),
            1 => {
                let (_, index, what) = self.largest_entries;
                format!("entries, mostly limiter[{index}]'s {what}")
            }
            2 => "the arrivals' generators (many clients, each with its own stream)".to_string(),
            4 => "the requests of its traces and logs, read once and kept packed".to_string(),
            _ => "per-limiter buffers (many limiters, a long time series or the decision log)"
                .to_string(),
        };
        format!("≈{} MiB of it for {what}", mib(bytes))
    }
}

/// The memory available for a run: `MemAvailable` of `/proc/meminfo`, in
/// bytes; `None` where it cannot be read (not Linux, no `/proc`).
pub fn available_memory() -> Option<u64> {
    mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub(super) fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let mut words = line.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

/// The process itself, before any per-key table: peak RSS of a run of one
/// client through one limiter (5.8–6.0 MiB measured, release build).
pub(super) const PROCESS_BYTES: u128 = 6 << 20;

/// Per limiter whatever its keys: its run, recorder, delay histograms and
/// queues when nearly empty (a scenario of one client and seven limiters
/// takes about 60 KiB more per limiter than one of one).
pub(super) const LIMITER_BYTES: u128 = 64 << 10;

/// Arrivals handed to the limiters at a time, in two buffers of this many
/// (crates/core/src/engine/mod.rs `CHUNK`), each arrival 56 bytes there.
pub(super) const CHUNK_ARRIVALS: u128 = 1 << 14;
pub(super) const SHARED_ARRIVAL: u128 = 56;

/// One id's slot in a limiter's recorder (crates/core/src/metrics/window.rs `PerId`).
pub(super) const RECORDER_SLOT: u128 = 64;

/// A key's pending fresh moment, about one per key (the ledgers of
/// crates/core/src/limiter/fixed_ledger.rs and log_ledger.rs).
pub(super) const FRESH_EVENT: u128 = 16;

/// A sliding log's live entry in its ledger (crates/core/src/limiter/
/// log_ledger.rs): its expiry (8), the pair of moments its write moved its
/// key's fresh moment by (16), and those that cancel out until the ledger
/// drops them.
pub(super) const EXPIRY: u128 = 32;

/// A log entry moved out of a sliding log's state once a key holds more
/// than four (crates/core/src/limiter/sliding_log.rs).
pub(super) const LOG_ENTRY: u128 = 16;

/// A waiting request in a leaky bucket's deque (16: kept only while
/// requests of different costs wait together, and counted always, a
/// bound) and its release in the recorder's queue (32).
pub(super) const WAITING: u128 = 48;

/// A delayed request's release in the recorder's queue (the nginx
/// arithmetic keeps no deque).
pub(super) const RELEASE: u128 = 32;

/// A pass in a crowded window of the recorder (more than five in one
/// policy window), spilled out of the key's slot.
pub(super) const SPILLED_PASS: u128 = 16;
pub(super) const INLINE_PASSES: u128 = 5;

/// A retry waiting on a limiter's own queue: the 16-byte event and its
/// slot (crates/core/src/engine/mod.rs `events`).
pub(super) const WAITING_RETRY: u128 = 112;

/// A request a client holds while it reads `r = 0`, packed as its
/// differences from the one before (crates/core/src/engine/held.rs): 5
/// bytes for a gap under 2^20 ns (about 1 ms), 6 under 2^27 ns (134 ms),
/// with the queue's room to grow on top (measured: 4.9 bytes a request,
/// 3.2·10^6 more held at 400 s than at 80 s of a steady 10 000/s through
/// 5/s). A logical request is held once at a time, as its first attempt
/// or as a retry; a held retry carries its attempt and wait, and the
/// differences around it span seconds: up to 18 bytes.
pub(super) const HELD_REQUEST: u128 = 8;
pub(super) const HELD_RETRY: u128 = 18;

/// An instance's own id for a key (crates/core/src/engine/shared_store.rs `local_key`, a
/// hash map entry), and its memory of a store rejection (`Cached`).
pub(super) const LOCAL_ID: u128 = 24;
pub(super) const CACHED: u128 = 24;

/// A calendar queue keeps one part-filled block of 32 entries in each of
/// up to 1024 buckets (crates/core/src/calendar.rs).
pub(super) const CALENDAR_BLOCK: u128 = 32;

/// A stream of arrivals (usually one client), besides the stream itself
/// and its 16-byte event on the arrivals' queue: the box (16), its next
/// arrival (24) and its request count (8).
pub(super) const STREAM_CLIENT: u128 = 48;

/// A Poisson client, besides its event: an 8-byte clock.
pub(super) const POISSON_CLIENT: u128 = 8;

/// A trace's replay of its recording (the recording itself is in
/// [`Memory::recordings`]).
pub(super) const TRACE_REPLAY: u128 = 64;

/// An interned name (a trace's or an access log's client or address, a
/// NAT address): the population's copy and a trace's map entry.
pub(super) const NAME_BYTES: u128 = 128;

/// A decision log's buffer, per limiter (src/run/mod.rs).
pub(super) const DECISION_LOG_BYTES: u128 = (64 << 10) + (4 << 10);

/// Rows of a table indexed by a limiter's keys: dense, up to the largest
/// id of its kind.
pub(super) fn key_rows(s: &Scenario, key_by: KeyBy) -> u128 {
    match key_by {
        KeyBy::Client => s.population.clients() as u128,
        KeyBy::Ip => s.population.ips() as u128,
        KeyBy::Global => 1,
    }
}

/// Bytes of a heap block holding `n` bytes (glibc: an 8-byte header,
/// 16-byte granules, at least 32).
pub(super) fn malloc(n: u128) -> u128 {
    ((n + 8).div_ceil(16) * 16).max(32)
}

/// A calendar queue of `entries` entries of `size` bytes.
pub(super) fn calendar(entries: u128, size: u128) -> u128 {
    let blocks = entries.min(crate::calendar::BUCKETS as u128);
    entries
        .saturating_add(blocks * CALENDAR_BLOCK)
        .saturating_mul(size)
}

/// Of `seen` attempts over a run of `duration` ns, those expected within
/// `span` ns.
pub(super) fn within(seen: u128, span: u128, duration: u128) -> u128 {
    match span < duration {
        true => mul_div(seen, span, duration),
        false => seen,
    }
}

/// Adds the memory of limiter `index`, `l`, seeing `seen` first
/// attempts, to `m`.
pub(super) fn limiter_memory(
    s: &Scenario,
    index: usize,
    l: &LimiterSpec,
    seen: u128,
    m: &mut Memory,
) {
    let dep = &l.deployment;
    let instances = dep.instances as u128;
    let duration = s.duration.0 as u128;
    let keys = key_rows(s, l.key_by);
    let clients = s.population.clients() as u128;
    // The recorder: a slot per client, and per key beyond them; the time
    // series; the windows with more passes than a slot holds.
    let slots = clients.max(keys).max(1);
    m.keys = m.keys.saturating_add(slots * RECORDER_SLOT);
    // Per source it sees, two bit sets over the source's span of client
    // ids (seen, limited: sources.csv), each at most twice the span as it
    // doubles; each part of a split trace may span the trace's clients.
    for &i in &l.traffic {
        let span = source_clients(&s.traffic[i].pattern).min(clients.max(1));
        let parts = s.traffic[i].count() as u128;
        m.keys = m.keys.saturating_add(span.div_ceil(64) * 8 * 2 * 2 * parts);
    }
    let buckets = crate::scenario::planned_buckets(s.output.resolution, s.duration)
        .min(crate::scenario::MAX_BUCKETS + 1) as u128;
    m.limiters = m.limiters.saturating_add(
        LIMITER_BYTES + buckets * size_of::<crate::metrics::SeriesBucket>() as u128,
    );
    let per_window = within(seen, s.defaults.window.0 as u128, duration);
    if per_window > keys.saturating_mul(INLINE_PASSES) {
        let limit = l.policy.limit as u128;
        let passes = per_window.min(keys.saturating_mul(2 * limit));
        m.add_entries(index, CROWDED_WINDOWS, passes * SPILLED_PASS);
    }
    // A chain keeps no state of its own: its members' stores are counted
    // as theirs.
    if l.chain.is_some() {
        return;
    }
    // The limiter's stores: one per instance of a local deployment, each
    // seeing its share; the store's one, its instances' fallbacks and
    // caches for a global one.
    let store = |m: &mut Memory, algorithm: &Algorithm, keys: u128, seen: u128, copies: u128| {
        let (k, e) = store_memory(algorithm, keys, seen, duration);
        m.keys = m.keys.saturating_add(k.saturating_mul(copies));
        m.add_entries(index, entries_of(algorithm), e.saturating_mul(copies));
        m.key_rows = m.key_rows.saturating_add(keys.saturating_mul(copies));
    };
    match dep.scope {
        Scope::Local { .. } => {
            let algorithm = dep.instance_algorithm(&l.algorithm);
            store(m, &algorithm, keys, seen / instances, instances);
        }
        Scope::Global { .. } => {
            store(m, &l.algorithm, keys, seen, 1);
            if let (OnFailure::LocalFallback, Some(f)) = (dep.on_failure, &dep.fallback) {
                store(m, f, keys, seen / instances, instances);
            }
        }
    }
    if instances > 1 {
        let per_key = LOCAL_ID + if dep.cache_over_limit { CACHED } else { 0 };
        let bytes = keys.saturating_mul(instances).saturating_mul(per_key);
        m.keys = m.keys.saturating_add(bytes);
    }
    // A limiter keyed by ip or globally keeps a copy keyed by client, to
    // count collateral rejections.
    if l.key_by != KeyBy::Client {
        store(m, &l.algorithm, clients, seen, 1);
    }
    // Retries wait on the limiter's own queue: at most one per client of
    // a source that retries, as a client waits before it retries.
    let waiting = l
        .traffic
        .iter()
        .map(|&i| &s.traffic[i])
        .filter(|src| src.retry.max_attempts > 1)
        .map(|src| source_clients(&src.pattern).min(clients))
        .fold(0u128, u128::saturating_add);
    m.add_entries(index, RETRIES, waiting.saturating_mul(WAITING_RETRY));
    // A client that reads the RateLimit fields holds what it would send
    // while `r = 0`: at most every request of its source, when the hold
    // never lets one out before the end.
    let held = l
        .traffic
        .iter()
        .map(|&i| &s.traffic[i])
        .filter(|src| src.retry.policy.reads_headers())
        .map(|src| {
            let each = match src.retry.max_attempts > 1 {
                true => HELD_RETRY,
                false => HELD_REQUEST,
            };
            super::first_attempts(&src.pattern, s.duration).saturating_mul(each)
        })
        .fold(0u128, u128::saturating_add);
    m.add_entries(index, HELD_REQUESTS, held);
}

/// Bytes of one store of `keys` keys of `algorithm` seeing `seen` first
/// attempts over `duration` ns: `(per-key tables, entries)`.
pub(super) fn store_memory(
    algorithm: &Algorithm,
    keys: u128,
    seen: u128,
    duration: u128,
) -> (u128, u128) {
    let per_key = state_size(algorithm) + FRESH_EVENT;
    // Two bits per key: present, alive (a sliding log's a third: large).
    // The fresh events' calendar keeps part-filled blocks besides.
    let bits = match algorithm {
        Algorithm::SlidingLog(_) => keys.saturating_mul(3) / 8,
        _ => keys / 4,
    };
    let tables = keys
        .saturating_mul(per_key)
        .saturating_add(bits)
        .saturating_add(calendar(keys, 16) - keys.saturating_mul(16));
    let entries = match *algorithm {
        Algorithm::SlidingLog(c) => {
            let per_key = match c.count_rejected {
                true => u128::MAX,
                false => c.limit as u128,
            };
            let live =
                keys.saturating_mul(per_key)
                    .min(within(seen, c.window.0 as u128 + 1, duration));
            let spilled = match live > keys.saturating_mul(4) {
                true => live.saturating_mul(LOG_ENTRY),
                false => 0,
            };
            calendar(live, EXPIRY).saturating_add(spilled)
        }
        Algorithm::LeakyBucket(c) => {
            // A full queue drains in queue / rate.
            let drain = mul_div(c.queue as u128, c.rate.per_ns(), c.rate.tokens());
            let waiting = keys
                .saturating_mul(c.queue as u128)
                .min(within(seen, drain, duration));
            let each = match c.arithmetic {
                Arithmetic::Exact => WAITING,
                Arithmetic::Nginx => RELEASE,
            };
            waiting.saturating_mul(each)
        }
        _ => 0,
    };
    (tables, entries)
}

/// What `algorithm`'s entries are.
pub(super) fn entries_of(algorithm: &Algorithm) -> &'static str {
    match algorithm {
        Algorithm::SlidingLog(_) => LOG_ENTRIES,
        _ => WAITING_REQUESTS,
    }
}

/// Bytes of one key's state in the simulator: the rule's `State`.
pub(super) fn state_size(algorithm: &Algorithm) -> u128 {
    (match *algorithm {
        Algorithm::TokenBucket(c) => {
            // The balance is one u64 when a full bucket fits it
            // (limiter/token_bucket.rs `boxed`).
            match u64::try_from(c.capacity as u128 * c.rate.per_ns()) {
                Ok(_) => size_of::<token_bucket::Tokens<u64>>(),
                Err(_) => size_of::<token_bucket::Tokens<[u64; 2]>>(),
            }
        }
        Algorithm::IntervalBucket(_) => size_of::<interval_bucket::Fills>(),
        Algorithm::Gcra(_) => size_of::<u128>(),
        Algorithm::FixedWindow(_) => size_of::<fixed_window::Counter>(),
        Algorithm::SlidingLog(_) => size_of::<sliding_log::Log>(),
        Algorithm::SlidingCounter(_) => size_of::<sliding_counter::WindowCounts>(),
        Algorithm::LeakyBucket(c) => match c.arithmetic {
            Arithmetic::Exact => size_of::<leaky_bucket::Outlet>(),
            Arithmetic::Nginx => size_of::<Option<leaky_bucket::nginx::Node>>(),
        },
        Algorithm::SmoothBursty(_) => size_of::<smooth_bursty::StoredPermits>(),
        Algorithm::Quota(_) => size_of::<crate::limiter::quota::Used>(),
        // A count per key in flight; the backend's waiting room and an
        // adaptive limit are one state each.
        Algorithm::Concurrency { .. } => size_of::<u64>(),
        Algorithm::QueueLength { .. } | Algorithm::Adaptive(_) => 0,
    }) as u128
}

/// The clients of a source (a trace's: at most its rows).
pub(super) fn source_clients(p: &Pattern) -> u128 {
    (match p {
        Pattern::Trace(t) => t.rows() as usize,
        Pattern::Steady(s) => s.clients.len(),
        Pattern::Poisson(p) => p.clients.len(),
        Pattern::Boundary(b) => b.clients.len(),
        Pattern::Bursty(b) => b.clients.len(),
        Pattern::Nat(n) => n.users.len(),
        Pattern::Zipf(z) => z.clients.len(),
        Pattern::Ramp(r) => r.clients.len(),
        Pattern::Closed(c) => c.clients.len(),
    }) as u128
}

/// The streams of a source on the arrivals' queue, each with one event.
pub(super) fn streams(p: &Pattern) -> u128 {
    match p {
        Pattern::Trace(_) | Pattern::Zipf(_) => 1,
        p => source_clients(p),
    }
}

/// Bytes of generating one source's arrivals, besides their events (the
/// sizes of the streams of crates/core/src/traffic/, each on the heap).
pub(super) fn arrival_bytes(p: &Pattern) -> u128 {
    let rng = size_of::<rand_chacha::ChaCha8Rng>() as u128;
    let boxed = |n: usize, stream: u128| (n as u128).saturating_mul(STREAM_CLIENT + malloc(stream));
    match p {
        Pattern::Trace(_) => TRACE_REPLAY,
        Pattern::Poisson(p) => p.clients.len() as u128 * POISSON_CLIENT,
        // Five u128s, the end, the ids and the cost.
        Pattern::Steady(s) => boxed(s.clients.len(), 112),
        Pattern::Boundary(b) => boxed(b.clients.len(), 80),
        Pattern::Bursty(b) => match b.form {
            // The client's generator and its periods.
            Form::OnOff { .. } => boxed(b.clients.len(), rng + 88),
            Form::Periodic { .. } => boxed(b.clients.len(), 64),
        },
        // A Poisson stream with its generator; a skewed spread's table of
        // addresses.
        Pattern::Nat(n) => boxed(n.users.len(), rng + 40)
            .saturating_add(n.skew.map_or(0, |_| 8 * n.ips.len() as u128)),
        // One stream, and a table of 8 bytes per key.
        Pattern::Zipf(z) => boxed(1, rng + 64).saturating_add(8 * z.clients.len() as u128),
        // Made per run: one event per client on the run's own queue.
        Pattern::Closed(c) => c.clients.len() as u128 * 64,
        // Each client's copy of the steps (16 bytes each).
        Pattern::Ramp(r) => boxed(r.clients.len(), 112).saturating_add(
            (r.clients.len() as u128).saturating_mul(malloc(16 * r.steps.len() as u128)),
        ),
    }
}

/// Names the population holds one by one (a trace's clients and
/// addresses, a NAT's addresses): all but the numbered runs of synthetic
/// sources, which store nothing per name.
pub(super) fn interned_names(s: &Scenario) -> u128 {
    let numbered: u128 = s
        .traffic
        .iter()
        .map(|src| match &src.pattern {
            Pattern::Trace(_) => 0,
            p => source_clients(p),
        })
        .sum();
    let all = s.population.clients() as u128 + s.population.ips() as u128;
    all.saturating_sub(2 * numbered)
}
