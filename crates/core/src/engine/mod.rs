//! The discrete-event engine: one limiter, one run, no I/O.
//!
//! Every traffic stream contributes its next arrival to an event queue
//! ordered by `(time, sequence)`; the sequence number is given when an event
//! is created, so events at the same nanosecond come out first-in first-out
//! and every run is deterministic. The engine pops the earliest event, asks
//! the limiter, hands the decision to the [`Recorder`] and to an optional
//! [`DecisionSink`], and then either pulls that stream's next arrival or —
//! for a rejected attempt whose client retries — schedules the retry as a new
//! event. Memory holds one pending event per stream and per retry in flight,
//! plus per-key state: never the requests.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the run loop: streams, retries, decisions to the recorder |
//! | `queue.rs` | the event queue, ordered by `(time, sequence)` |
//! | `shared_store.rs` | a deployment's protocol: routing, a shared store's round trips, faults and the over-limit cache |
//! | `aside.rs` | a run alone, decided on a thread of its own, its recorder calls kept for the thread that generates arrivals to make |

mod arrivals;
mod aside;
mod held;
mod queue;
mod relay;
mod shared_store;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::backend::{Backend, BackendStats, Draw as _, Served};
use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::deploy::{Deployment, Scope};
use crate::limiter::chain::Chain;
use crate::limiter::{Decision, Footprint, Headers, Limiter, Sample};
use crate::metrics::{Call, Decided, Recorder};
use crate::partition::journal::{JournalWriter, Origin, Record, UnitChange};
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::closed::Closed;
use crate::traffic::retry::{event_rng, Retry, RetryPolicy};
use crate::traffic::Arrival;
use crate::traffic::Pattern;
use arrivals::{Arrivals, Shared};
use aside::{Aside, Kept};
use queue::Queue;
use shared_store::Cached;

/// One attempt and what the limiter decided, as the decision log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub arrival: Arrival,
    /// The index of the `[[traffic]]` it came from.
    pub traffic: u32,
    /// Its source's id: its position in [`Scenario::sources`] (a split
    /// trace's part, else its `[[traffic]]`'s own).
    pub source: u32,
    /// The id the limiter keyed on (client id, ip id, or 0 for global).
    pub key: u32,
    /// 1 for a first attempt.
    pub attempt: u32,
    pub decision: Decision,
    /// For a chain's decision: the member (its position in the chain) that
    /// rejected or set the delay (docs/semantics.md §13).
    pub by: Option<u32>,
    /// The RateLimit header fields after the decision, when the sink asks
    /// for them ([`DecisionSink::wants_headers`]) and a limiter decided
    /// (not a store failure or an instance's over-limit cache):
    /// docs/semantics.md §11.
    pub headers: Option<Headers>,
    /// For a key partition's run: the number of the event that decided it
    /// in the run's journal (see [`crate::partition::journal`]); else 0.
    pub event: u64,
}

/// Receives every decision in processing order (the decision log).
pub trait DecisionSink {
    fn record(&mut self, attempt: &Attempt) -> anyhow::Result<()>;

    /// Whether each [`Attempt`] should carry its [`Headers`] (computing
    /// them costs a look at the key's state per decision).
    fn wants_headers(&self) -> bool {
        false
    }
}

/// What one limiter's run produced.
#[derive(Debug, Clone)]
pub struct LimiterRun {
    pub recorder: Recorder,
    pub footprint: Footprint,
    /// What its backend measured, with a `[backend]` (a chain's members
    /// have none: their chain's run feeds it).
    pub backend: Option<BackendStats>,
}

/// How often (in events) progress is reported.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 16;

/// One logical request on its way: its current attempt and its history.
#[derive(Debug, Clone, Copy)]
struct Job {
    /// The current attempt; `arrival.time` is when it reaches an instance.
    arrival: Arrival,
    /// Its source's id (see [`Attempt`]).
    source: u32,
    /// The request's index within its stream.
    request: u64,
    first: Nanos,
    attempt: u32,
    /// The wait before this attempt (for decorrelated jitter).
    last_wait: Nanos,
}

/// Something that happens at a moment of the run.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// An attempt reaches a gateway instance.
    Arrive(Job),
    /// An attempt's store operation (the whole decision, or the read of a
    /// read-then-write) reaches the store. `late`: the instance has already
    /// given up on it; the store applies it all the same.
    Store {
        job: Job,
        key: u32,
        instance: u32,
        rtt: Nanos,
        late: bool,
    },
    /// The instance gives up on the store and decides by its failure mode.
    Failed { job: Job, key: u32, instance: u32 },
    /// A read-then-write's write reaches the store.
    Write { key: u32, ticket: u32 },
    /// A client's hold may have ended: it sends the first of the requests
    /// it holds (see [`Run::release`]).
    Release { client: u32 },
}

/// Arrivals generated at a time, shared by every limiter's run.
const CHUNK: usize = 1 << 14;

/// How many arrivals ahead a run asks for the state they will touch.
const PREFETCH_AHEAD: usize = 8;

/// Simulates every limiter of `scenario`, on the current rayon pool: the
/// arrivals are generated once (see [`arrivals`]) and each chunk of them is
/// handed to every limiter's run, the runs in parallel while the next chunk
/// is generated (a run alone, with a thread to spare, may decide on a
/// thread of its own). Each run takes its events in the same order
/// whatever the number of threads, so the results are too.
///
/// `sinks[i]`, if there is one, receives limiter `i`'s decisions;
/// `progress(limiter, time reached, events)` is called every
/// [`PROGRESS_EVERY`] events of a limiter.
pub fn simulate_all(
    scenario: &Scenario,
    sinks: Vec<Option<&mut (dyn DecisionSink + Send)>>,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Vec<LimiterRun>> {
    simulate_journaled(scenario, sinks, Vec::new(), progress)
}

/// [`simulate_all`], each limiter's run (a chain's members: their chain's)
/// writing its journal to `journals[i]` if there is one: a key
/// partition's (see [`crate::partition::journal`]).
pub fn simulate_journaled(
    scenario: &Scenario,
    mut sinks: Vec<Option<&mut (dyn DecisionSink + Send)>>,
    mut journals: Vec<Option<Box<dyn crate::partition::journal::Sink>>>,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Vec<LimiterRun>> {
    sinks.resize_with(scenario.limiters.len(), || None);
    journals.resize_with(scenario.limiters.len(), || None);
    // A chain's member decides only inside its chain's run.
    let runs = sinks
        .into_iter()
        .zip(journals)
        .enumerate()
        .filter(|(i, _)| scenario.limiters[*i].member_of.is_none())
        .map(|(i, (sink, journal))| {
            let mut run = Run::new(scenario, i, sink);
            if let Some(out) = journal {
                run.keep_journal(out);
            }
            run
        })
        .collect();
    let mut runs: Vec<(usize, LimiterRun)> = drive(scenario, runs, progress)?
        .into_iter()
        .flatten()
        .collect();
    runs.sort_by_key(|(i, _)| *i);
    Ok(runs.into_iter().map(|(_, run)| run).collect())
}

/// Simulates every limiter of each of `scenarios` over one generation of
/// their arrivals: scenarios whose traffic is the same (its sources, seed,
/// duration and population; the caller's to check, as a sweep's points
/// that vary only their limiters) and whose limiters together see the
/// same sources. Each limiter's run is the run [`simulate_all`] makes of
/// its own scenario, byte for byte: its events are its own, its arrivals
/// the same. Per scenario, its limiters' runs in order.
pub fn simulate_shared(
    scenarios: &[&Scenario],
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Vec<Vec<LimiterRun>>> {
    let Some(first) = scenarios.first() else {
        return Ok(Vec::new());
    };
    let mut runs = Vec::new();
    let mut owner = Vec::new();
    for (k, s) in scenarios.iter().enumerate() {
        anyhow::ensure!(
            s.partition.is_none() && s.traffic.len() == first.traffic.len(),
            "scenarios that share arrivals have the same traffic and no key partition"
        );
        for i in (0..s.limiters.len()).filter(|&i| s.limiters[i].member_of.is_none()) {
            runs.push(Run::new(s, i, None));
            owner.push(k);
        }
    }
    // The arrivals a scenario's runs would have generated alone: the
    // sources its limiters see, the same for every scenario.
    let seen_by = |k: usize| -> Vec<bool> {
        first
            .first_sources()
            .iter()
            .map(|&src| {
                runs.iter()
                    .zip(&owner)
                    .any(|(r, &o)| o == k && r.sees[src as usize])
            })
            .collect()
    };
    let seen = seen_by(0);
    anyhow::ensure!(
        (1..scenarios.len()).all(|k| seen_by(k) == seen),
        "scenarios that share arrivals see the same sources"
    );
    let mut out: Vec<Vec<(usize, LimiterRun)>> = vec![Vec::new(); scenarios.len()];
    for (ran, k) in drive(first, runs, progress)?.into_iter().zip(owner) {
        out[k].extend(ran);
    }
    Ok(out
        .into_iter()
        .map(|mut r| {
            r.sort_by_key(|(i, _)| *i);
            r.into_iter().map(|(_, run)| run).collect()
        })
        .collect())
}

/// Simulates limiter `index` of `scenario` from start to end.
///
/// `progress` is called every [`PROGRESS_EVERY`] events with the simulated
/// time reached and the events processed since the last call.
pub fn simulate(
    scenario: &Scenario,
    index: usize,
    sink: Option<&mut (dyn DecisionSink + Send)>,
    progress: &(dyn Fn(Nanos, u64) + Sync),
) -> anyhow::Result<LimiterRun> {
    // A member is simulated inside its chain; the chain's decisions are
    // not the member's, so they go to no sink.
    let lane = scenario.limiters[index].member_of;
    let run = match lane {
        Some(chain) => Run::new(scenario, chain, None),
        None => Run::new(scenario, index, sink),
    };
    let runs = drive(scenario, vec![run], &|_, t, n| progress(t, n))?;
    let (_, run) = runs
        .into_iter()
        .flatten()
        .find(|(i, _)| *i == index)
        .expect("the run of limiter `index`");
    Ok(run)
}

/// Whether limiter `index`'s run alone, its recorder set aside (on two
/// threads or more), takes its first attempts the plain way (see
/// `Run::is_plain`): for the tests that compare it with the general way.
#[doc(hidden)]
pub fn plain_alone(scenario: &Scenario, index: usize) -> bool {
    let mut run = Run::new(scenario, index, None);
    run.set_aside().is_some() && run.plain
}

/// Runs `runs` over the arrivals of the sources they see.
fn drive(
    scenario: &Scenario,
    mut runs: Vec<Run>,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Vec<Vec<(usize, LimiterRun)>>> {
    use rayon::prelude::*;
    // A [[traffic]]'s sources are seen together: look at its first.
    let seen: Vec<bool> = scenario
        .first_sources()
        .iter()
        .map(|&s| runs.iter().any(|r| r.sees[s as usize]))
        .collect();
    let mut arrivals = Arrivals::new(scenario, &seen)?;
    for run in &mut runs {
        run.pushed = arrivals.pushed();
    }
    // A run alone, with a thread to spare (a pool of two or more; one
    // keeps the run on this thread): its recorder is set aside, and this
    // thread makes the recorder's calls of the chunks decided, while a
    // thread of its own decides; either generates the chunks.
    if let [run] = runs.as_mut_slice() {
        let spare = rayon::current_num_threads() > 1;
        if let Some(aside) = spare.then(|| run.set_aside()).flatten() {
            aside::drive(run, aside, &mut arrivals, progress)?;
            return runs.into_iter().map(|run| run.end(progress)).collect();
        }
    }
    let (mut chunk, mut next) = (Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK));
    arrivals.next_chunk(&mut chunk, CHUNK)?;
    // In a partition by address: each client's address so far.
    let by_ip = scenario.partition.is_some_and(|p| p.by == KeyBy::Ip);
    let mut address_of = Vec::new();
    while !chunk.is_empty() {
        if by_ip {
            one_address(scenario, &mut address_of, &chunk)?;
        }
        let (generated, consumed) = rayon::join(
            || arrivals.next_chunk(&mut next, CHUNK),
            || {
                runs.par_iter_mut()
                    .try_for_each(|run| run.consume(&chunk, progress))
            },
        );
        generated?;
        consumed?;
        std::mem::swap(&mut chunk, &mut next);
    }
    runs.into_par_iter().map(|run| run.end(progress)).collect()
}

/// In a partition by address: refuses a client seen at two addresses
/// (among `chunk`'s arrivals, or before them in `address_of`), whose
/// attempts two partitions would share (its per-client counts, and a
/// per-client shadow's decisions, would be split).
fn one_address(
    scenario: &Scenario,
    address_of: &mut Vec<u32>,
    chunk: &[Shared],
) -> anyhow::Result<()> {
    for a in chunk.iter().map(|s| &s.arrival) {
        let c = a.client as usize;
        if c >= address_of.len() {
            address_of.resize(c + 1, u32::MAX);
        }
        match address_of[c] {
            u32::MAX => address_of[c] = a.ip,
            ip if ip != a.ip => {
                let p = &scenario.population;
                return Err(crate::error::InputError::new(format!(
                    "--keys: client {} sends from addresses {} and {}: partitions by address would split its attempts; key by client, or run it whole (without --keys)",
                    crate::error::quoted(&p.client_name(a.client).to_string()),
                    crate::error::quoted(&p.ip_name(ip).to_string()),
                    crate::error::quoted(&p.ip_name(a.ip).to_string()),
                ))
                .into());
            }
            _ => {}
        }
    }
    Ok(())
}

/// A key partition's journal as a run writes it (see
/// [`crate::partition::journal`]).
struct Journal {
    writer: JournalWriter,
    /// The record of the event being handled.
    record: Record,
    /// Per slot of `Run::events`: the event that created it (`None`:
    /// before the first) and how many that event had created before.
    created_by: Vec<(Option<u64>, u32)>,
    /// Inside an event's handling.
    stepping: bool,
}

/// The state of one limiter's run.
struct Run<'a, 's> {
    /// Where the limiter's decisions go, if anywhere.
    sink: Option<&'s mut (dyn DecisionSink + Send)>,
    scenario: &'a Scenario,
    dep: &'a Deployment,
    key_by: KeyBy,
    /// One per instance (local scope), or the store's one (global scope).
    limiters: Vec<Box<dyn Limiter>>,
    /// Each instance's fallback limiter (`local_fallback`).
    fallbacks: Vec<Box<dyn Limiter>>,
    /// For a limiter that shares keys between clients (`ip`, `global`): a
    /// copy of the algorithm keyed by client, fed every attempt at the
    /// moment the limiter decides it. A rejection it would have passed is
    /// collateral: the client paid for someone else's traffic.
    shadow: Option<Box<dyn Limiter>>,
    /// For a chain's run: its members, deciding together (then
    /// `limiters` is empty).
    chain: Option<Box<ChainLane>>,
    /// The chain member behind the decision being finished.
    by: Option<u32>,
    /// Whether the sink or a client wants each decision's header fields,
    /// and those of the decision being finished.
    wants_headers: bool,
    headers: Option<Headers>,
    /// The RateLimit-Policy `q` its clients read `r` against.
    header_q: u64,
    /// Per client whose source reads the RateLimit fields
    /// (`ratelimit_headers`): the moment its requests are held until (ns).
    held_until: Vec<u64>,
    /// Per client that holds requests, those requests in the order it
    /// sends them; a client is here exactly while an
    /// [`Event::Release`] of it is queued.
    held: HashMap<u32, held::Held>,
    /// Per instance, per key: rejected locally until this time (ns).
    cache: Vec<Vec<Cached>>,
    /// Per instance (when there are several): the instance's own dense ids
    /// for the keys it has seen, so its state grows with its keys, not with
    /// every key of the run.
    local_ids: Vec<HashMap<u32, u32>>,
    /// Attempts routed so far (round robin).
    routed: u64,
    recorder: Recorder,
    /// While the recorder is set aside (see [`aside`]): its calls since,
    /// the moment of its latest event, and the arrival being taken, if
    /// any (its place in the chunk, its source and itself).
    deferred: Option<Kept>,
    reached: Nanos,
    arriving: Option<(u32, u32, Arrival)>,
    /// Set aside, whether a first attempt is only decided and kept (see
    /// [`Run::consume_plain`]).
    plain: bool,
    /// Per source id: its `[[traffic]]`'s index and retry policy, and
    /// whether this limiter sees it.
    traffic_of: Vec<u32>,
    retries: Vec<Retry>,
    sees: Vec<bool>,
    /// With `--keys K/N`: the field the partition keys by, and per id of
    /// it whether it is this partition's (see [`crate::partition`]).
    keeps: Option<(KeyBy, Vec<bool>)>,
    /// Events other than first attempts (retries, store operations): a
    /// small queue whose payloads name a slot of `events`.
    queue: Queue,
    /// Each queued event, with the arrival pushes made before it was
    /// (see [`arrivals`]); free slots are reused through `free`.
    events: Vec<Option<(u64, Event)>>,
    free: Vec<u32>,
    /// Arrival pushes so far, as of the last arrival taken.
    pushed: u64,
    index: usize,
    /// Events processed.
    count: u64,
    /// The last moment anything happened: store answers and a shaper's
    /// releases may come after `duration`, and state is held until then.
    last: Nanos,
    /// With a `[backend]`: the servers behind the limiter, and the passes
    /// still to enter it (a shaper's releases), by `(time, order)`.
    backend: Option<Backend>,
    entering: BinaryHeap<Reverse<(u64, u64, Entering)>>,
    entered: u64,
    /// For a limiter that reads the backend: the request being decided
    /// (its instance, its key there, the requests in flight after its
    /// pass), and the responses still to come, by `(time, order)`.
    feedback: bool,
    asking: Option<(u32, u32, u64)>,
    responses: BinaryHeap<Reverse<(u64, u64, Response)>>,
    /// A key partition's journal, if it keeps one, and where the event
    /// being handled stands in the whole run's order.
    journal: Option<Box<Journal>>,
    origin: Origin,
}

/// A response a feedback limiter will hear of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Response {
    instance: u32,
    key: u32,
    rtt: u64,
    in_flight: u64,
    dropped: bool,
}

/// A pass on its way into the backend: the request (which names its
/// service draw, and for a closed-loop client its next request) and when it
/// arrived at the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entering {
    arrived: u64,
    traffic: u32,
    source: u32,
    client: u32,
    ip: u32,
    cost: u64,
    request: u64,
    attempt: u32,
}

impl<'a, 's> Run<'a, 's> {
    /// Limiter `index` of `scenario`, before its first event.
    fn new(
        scenario: &'a Scenario,
        index: usize,
        sink: Option<&'s mut (dyn DecisionSink + Send)>,
    ) -> Run<'a, 's> {
        let spec = &scenario.limiters[index];
        let chain = spec
            .chain
            .as_ref()
            .map(|c| Box::new(ChainLane::new(scenario, c)));
        let mut run = Run {
            scenario,
            dep: &spec.deployment,
            key_by: spec.key_by,
            limiters: match spec.deployment.scope {
                _ if chain.is_some() => Vec::new(),
                Scope::Local { .. } => (0..spec.deployment.instances)
                    .map(|i| {
                        // An adaptive limit's random draws: a stream of
                        // its own per limiter and instance.
                        let seed = scenario.seed;
                        spec.deployment
                            .instance_algorithm(&spec.algorithm)
                            .build_seeded(|| event_rng(seed, index as u32, i, 0, 0, *b"adpt"))
                    })
                    .collect(),
                Scope::Global { .. } => vec![spec.algorithm.build()],
            },
            fallbacks: match (&spec.deployment.fallback, spec.deployment.is_global()) {
                (Some(f), true) => (0..spec.deployment.instances).map(|_| f.build()).collect(),
                _ => Vec::new(),
            },
            shadow: (spec.key_by != KeyBy::Client).then(|| spec.algorithm.build()),
            chain,
            by: None,
            wants_headers: sink.as_ref().is_some_and(|s| s.wants_headers())
                || scenario
                    .traffic
                    .iter()
                    .any(|t| t.retry.policy.reads_headers()),
            headers: None,
            header_q: spec.header_policy(&scenario.defaults).0,
            held_until: Vec::new(),
            held: HashMap::new(),
            cache: vec![Vec::new(); spec.deployment.instances as usize],
            local_ids: vec![HashMap::new(); spec.deployment.instances as usize],
            routed: 0,
            recorder: recorder(scenario, spec),
            deferred: None,
            reached: Nanos::ZERO,
            arriving: None,
            plain: false,
            sink,
            traffic_of: scenario.sources().map(|(t, _)| t as u32).collect(),
            retries: scenario
                .sources()
                .map(|(t, _)| scenario.traffic[t].retry)
                .collect(),
            sees: sees(scenario, spec),
            keeps: scenario
                .partition
                .map(|p| (p.by, crate::partition::members(&p, &scenario.population))),
            queue: Queue::new(),
            events: Vec::new(),
            free: Vec::new(),
            pushed: 0,
            index,
            count: 0,
            backend: scenario
                .backend
                .as_ref()
                .map(|b| Backend::new(b, scenario.duration, scenario.output.resolution)),
            entering: BinaryHeap::new(),
            entered: 0,
            feedback: spec.algorithm.needs_backend(),
            asking: None,
            responses: BinaryHeap::new(),
            last: scenario.duration,
            journal: None,
            origin: Origin::default(),
        };
        run.start_closed();
        run
    }

    /// Writes a key partition's journal to `out` (before the first event):
    /// the ledgers keep their changes, the recorders which event decided
    /// each pass.
    fn keep_journal(&mut self, out: Box<dyn crate::partition::journal::Sink>) {
        self.recorder.track_origins();
        self.units(|_, _, l| l.keep_changes());
        if let Some(lane) = self.chain.as_deref_mut() {
            lane.recorders.iter_mut().for_each(Recorder::track_origins);
        }
        self.journal = Some(Box::new(Journal {
            writer: JournalWriter::new(out),
            record: Record::default(),
            created_by: Vec::new(),
            stepping: false,
        }));
    }

    /// Calls `f(limiter, instance, its state)` for every limiter state of
    /// the run: its own instances', or its chain's members'.
    fn units(&mut self, mut f: impl FnMut(u32, u32, &mut dyn Limiter)) {
        let index = self.index as u32;
        for (i, l) in self.limiters.iter_mut().enumerate() {
            f(index, i as u32, l.as_mut());
        }
        if let Some(lane) = self.chain.as_deref_mut() {
            for (i, chain) in lane.chains.iter_mut().enumerate() {
                for (m, l) in chain.members_mut().iter_mut().enumerate() {
                    f(lane.members[m] as u32, i as u32, l.as_mut());
                }
            }
        }
    }

    /// Moves the ledgers' changes kept so far into the record.
    fn take_changes(&mut self) {
        let Some(mut j) = self.journal.take() else {
            return;
        };
        self.units(|limiter, instance, l| {
            if let Some(changes) = l.changes() {
                j.record
                    .changes
                    .extend(changes.drain(..).map(|change| UnitChange {
                        limiter,
                        instance,
                        change,
                    }));
            }
        });
        self.journal = Some(j);
    }

    /// Sets its recorder aside, its calls kept from now on (see
    /// [`drive`]). Not for a run that keeps a journal (the recorder and
    /// the sink read the number of the event the journal is at), nor for
    /// one with closed-loop clients: a client answered when the backend
    /// lets a pass in, at the pass's own moment, may send its next request
    /// before the moment the run has reached, and the calls kept are made
    /// after releasing the passes due by the latest moment reached (see
    /// [`aside`]), which holds only for events in time order. Nor for a
    /// key partition's run: by address, a client seen at two addresses is
    /// refused chunk by chunk before the runs decide it (and from the
    /// command line, every partition's run keeps a journal).
    fn set_aside(&mut self) -> Option<Aside> {
        let closed = self
            .scenario
            .traffic
            .iter()
            .any(|t| matches!(t.pattern, Pattern::Closed(_)));
        if self.journal.is_some() || closed || self.scenario.partition.is_some() {
            return None;
        }
        self.deferred = Some(Kept::default());
        self.plain = self.is_plain();
        Some(Aside::new(std::mem::take(&mut self.recorder)))
    }

    /// Whether a first attempt's event does nothing but its decision and
    /// the recorder's call: one limiter on one gateway instance, its state
    /// its own (no store, no instances' own key ids), no backend, chain,
    /// shadow, sink, journal, header fields or partition, and clients that
    /// give up at a rejection (no retry, no hold: nothing is ever queued).
    fn is_plain(&self) -> bool {
        let gives_up = |r: &Retry| r.max_attempts <= 1 || matches!(r.policy, RetryPolicy::None);
        self.limiters.len() == 1
            && self.chain.is_none()
            && !self.dep.is_global()
            && self.dep.instances == 1
            && self.local_ids.len() <= 1
            && !self.feedback
            && !self.wants_headers
            && self.shadow.is_none()
            && self.backend.is_none()
            && self.sink.is_none()
            && self.journal.is_none()
            && self.keeps.is_none()
            && self.retries.iter().all(gives_up)
    }

    /// Decides `chunk` with its recorder set aside, and gives back the
    /// calls it kept over it, keeping `spare` (empty) for the next.
    fn consume_aside(
        &mut self,
        chunk: &[Shared],
        spare: Kept,
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
    ) -> anyhow::Result<Kept> {
        match self.plain && self.queue.is_empty() {
            true => self.consume_plain(chunk, progress),
            false => self.consume_as::<true>(chunk, progress)?,
        }
        let kept = self.deferred.as_mut().expect("the recorder is set aside");
        Ok(std::mem::replace(kept, spare))
    }

    /// Takes its recorder back, every call kept made.
    fn take_back(&mut self, aside: Aside) {
        self.recorder = aside.into_recorder();
        self.deferred = None;
    }

    /// Makes `call` to its recorder, or keeps it while the recorder is set
    /// aside.
    #[inline(always)]
    fn record(&mut self, call: Call) {
        match &mut self.deferred {
            Some(kept) => kept.call(self.reached, call),
            None => self.recorder.apply(call),
        }
    }

    /// Takes the first attempts of `chunk` of the sources it sees, each
    /// after its own events that come first.
    fn consume(
        &mut self,
        chunk: &[Shared],
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
    ) -> anyhow::Result<()> {
        match self.deferred {
            None => self.consume_as::<false>(chunk, progress),
            Some(_) => self.consume_as::<true>(chunk, progress),
        }
    }

    /// [`Run::consume`], its recorder set aside or not (`ASIDE`; see
    /// [`Run::finish_as`]).
    fn consume_as<const ASIDE: bool>(
        &mut self,
        chunk: &[Shared],
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
    ) -> anyhow::Result<()> {
        // One limiter (the local one, or the store's): its keys' state is
        // fetched a few arrivals ahead.
        let ahead = self.limiters.len() == 1;
        for (i, s) in chunk.iter().enumerate() {
            if ahead {
                if let Some(next) = chunk.get(i + PREFETCH_AHEAD) {
                    self.prefetch(next);
                }
            }
            if !self.sees[s.source as usize] {
                continue;
            }
            let at = s.arrival.time;
            while let Some((t, slot)) = self.queue.peek() {
                let (k, _) = self.events[slot as usize].expect("a queued slot holds an event");
                // An arrival pushed before this event comes first.
                if (at, s.index) < (t, k) {
                    break;
                }
                self.pop_own(progress)?;
            }
            // Another partition's arrival is pushed all the same: the
            // events created after it are, as in the whole run.
            self.pushed = s.pushed;
            if !self.keeps(&s.arrival) {
                continue;
            }
            self.origin = Origin::Arrival(s.index);
            let job = Job {
                arrival: s.arrival,
                source: s.source,
                request: s.request,
                first: at,
                attempt: 1,
                last_wait: Nanos::ZERO,
            };
            if ASIDE {
                self.arriving = Some((i as u32, s.source, s.arrival));
            }
            // `step` of `Event::Arrive(job)`, without the event: a first
            // attempt's job goes to `arrive` as it is.
            self.step_with::<ASIDE>(at, progress, |run| run.arrive(at, job))?;
            if ASIDE {
                self.arriving = None;
            }
        }
        Ok(())
    }

    /// [`Run::consume_as`] of a plain run set aside (see [`Run::is_plain`]),
    /// its queue empty: each first attempt's event in its few steps that
    /// do something — the limiter's decision, the call kept, and a
    /// rejected client giving up — with the same effects, the rest of the
    /// general path (the queue, a hold, a route, a store, a retry, a
    /// sink) being idle. Nothing is queued, so the queue stays empty.
    fn consume_plain(&mut self, chunk: &[Shared], progress: &(dyn Fn(usize, Nanos, u64) + Sync)) {
        for (i, s) in chunk.iter().enumerate() {
            if let Some(next) = chunk.get(i + PREFETCH_AHEAD) {
                self.prefetch(next);
            }
            if !self.sees[s.source as usize] {
                continue;
            }
            let (a, at) = (s.arrival, s.arrival.time);
            self.pushed = s.pushed;
            self.origin = Origin::Arrival(s.index);
            debug_assert!(
                at >= self.reached,
                "a run set aside takes its events in time order"
            );
            self.reached = at;
            let key = self.key_of(&a);
            self.routed += 1;
            let decision = self.limiters[0].decide(key, at, a.cost);
            let kept = self.deferred.as_mut().expect("the recorder is set aside");
            kept.on_arrival(i as u32, key, decision);
            if let Decision::Rejected { .. } = decision {
                kept.gave_up();
            }
            self.last = self.last.max(at);
            self.count += 1;
            if self.count % PROGRESS_EVERY == 0 {
                self.report(progress, at, PROGRESS_EVERY);
            }
        }
    }

    /// Asks for the state the first attempt `s` will touch (see
    /// [`crate::cache`]).
    #[inline(always)]
    fn prefetch(&self, s: &Shared) {
        if !self.sees[s.source as usize] || !self.keeps(&s.arrival) {
            return;
        }
        let a = s.arrival;
        let key = self.key_of(&a);
        self.limiters[0].prefetch(key);
        if let Some(shadow) = &self.shadow {
            shadow.prefetch(a.client);
        }
        // (Set aside, the recorder here holds no slot to ask for.)
        self.recorder.prefetch(key, a.client);
    }

    /// Whether `a`'s key is in the run's partition (always, for a whole
    /// run): a dropped arrival was generated all the same, so every other
    /// arrival is the whole run's (docs/semantics.md §12).
    #[inline]
    fn keeps(&self, a: &Arrival) -> bool {
        self.keeps
            .as_ref()
            .is_none_or(|(by, keep)| keep[key_of(*by, a) as usize])
    }

    /// The key the limiter decides `a` on.
    fn key_of(&self, a: &Arrival) -> u32 {
        key_of(self.key_by, a)
    }

    /// Takes the next of its own events.
    fn pop_own(&mut self, progress: &(dyn Fn(usize, Nanos, u64) + Sync)) -> anyhow::Result<()> {
        let (now, slot) = self.queue.pop().expect("an event is queued");
        self.free.push(slot);
        let (pushed, event) = self.events[slot as usize]
            .take()
            .expect("a queued slot holds an event");
        if let Some(j) = &self.journal {
            let (creator, sub) = j.created_by[slot as usize];
            self.origin = Origin::Own {
                pushed,
                creator,
                sub,
            };
        }
        self.step(now, event, progress)
    }

    fn step(
        &mut self,
        now: Nanos,
        event: Event,
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
    ) -> anyhow::Result<()> {
        match self.deferred {
            None => self.step_with::<false>(now, progress, |run| run.handle(now, event)),
            Some(_) => self.step_with::<true>(now, progress, |run| run.handle(now, event)),
        }
    }

    /// [`Run::step`] with `handle` for the event's handling.
    #[inline(always)]
    fn step_with<const ASIDE: bool>(
        &mut self,
        now: Nanos,
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
        handle: impl FnOnce(&mut Self) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        if self.journal.is_some() {
            self.begin_record(now);
        }
        match ASIDE {
            false => self.recorder.advance(now),
            true => {
                debug_assert!(
                    now >= self.reached,
                    "a run set aside takes its events in time order"
                );
                self.reached = now;
            }
        }
        self.enter_due(now);
        handle(self)?;
        if self.journal.is_some() {
            self.end_record();
        }
        self.last = self.last.max(now);
        self.count += 1;
        if self.count % PROGRESS_EVERY == 0 {
            self.report(progress, now, PROGRESS_EVERY);
        }
        Ok(())
    }

    /// Starts the journal's record of the event at `now`: every ledger
    /// takes its expiries due by then first (so that the merge learns of
    /// them before any later event of another partition), and the
    /// recorders learn the event's number.
    fn begin_record(&mut self, now: Nanos) {
        self.units(|_, _, l| l.expire_to(now));
        let n = self.journal.as_ref().map_or(0, |j| j.writer.n);
        self.recorder.event = n;
        if let Some(lane) = self.chain.as_deref_mut() {
            lane.recorders.iter_mut().for_each(|r| r.event = n);
        }
        let origin = self.origin;
        let j = self.journal.as_deref_mut().expect("a journal");
        j.record.t = now.0;
        j.record.origin = origin;
        j.record.rows = 0;
        j.record.created = 0;
        j.record.changes.clear();
        j.record.end = false;
        j.stepping = true;
        self.take_changes();
    }

    /// Writes the record of the event just handled.
    fn end_record(&mut self) {
        self.take_changes();
        let j = self.journal.as_deref_mut().expect("a journal");
        j.stepping = false;
        j.writer.write(&j.record);
    }

    /// Writes the journal's closing record at the run's last moment
    /// `last`: every expiry after the last event, to the end of time.
    fn close_journal(&mut self, last: Nanos) -> anyhow::Result<()> {
        if self.journal.is_none() {
            return Ok(());
        }
        self.units(|_, _, l| l.expire_to(Nanos(u64::MAX)));
        let j = self.journal.as_deref_mut().expect("a journal");
        j.record.t = last.0;
        j.record.origin = Origin::default();
        j.record.rows = 0;
        j.record.created = 0;
        j.record.changes.clear();
        j.record.end = true;
        self.take_changes();
        let mut j = self.journal.take().expect("a journal");
        j.writer.write(&j.record);
        j.writer
            .finish()
            .map_err(|e| anyhow::anyhow!("cannot write the partition's journal: {e:#}"))
    }

    /// Takes its remaining events (after the last arrival) and closes the
    /// run.
    fn end(
        mut self,
        progress: &(dyn Fn(usize, Nanos, u64) + Sync),
    ) -> anyhow::Result<Vec<(usize, LimiterRun)>> {
        while self.queue.peek().is_some() {
            self.pop_own(progress)?;
        }
        self.report(
            progress,
            self.scenario.duration,
            self.count % PROGRESS_EVERY,
        );
        self.recorder.finish();
        self.enter_due(Nanos(u64::MAX));
        let last = self.last;
        let members = self.chain.as_deref_mut().map(|lane| lane.close(last));
        let own: Vec<Footprint> = self.limiters.iter_mut().map(|l| l.close(last)).collect();
        self.close_journal(last)?;
        let mut runs = match (self.chain.take(), members) {
            (Some(lane), Some(footprints)) => lane.into_runs(footprints),
            _ => Vec::new(),
        };
        let footprint = own
            .into_iter()
            .chain(runs.iter().map(|(_, r)| r.footprint))
            .reduce(Footprint::combine)
            .unwrap_or_default();
        runs.push((
            self.index,
            LimiterRun {
                footprint,
                recorder: self.recorder,
                backend: self.backend.map(|b| b.stats),
            },
        ));
        Ok(runs)
    }

    /// Reports the time reached and the events since the last report; a
    /// chain's run reaches it for its members too (they have no run of
    /// their own), with no events of theirs.
    fn report(&self, progress: &(dyn Fn(usize, Nanos, u64) + Sync), now: Nanos, events: u64) {
        progress(self.index, now, events);
        if let Some(lane) = &self.chain {
            for &m in &lane.members {
                progress(m, now, 0);
            }
        }
    }

    /// Lets the passes due by `now` into the backend, in time order.
    fn enter_due(&mut self, now: Nanos) {
        while let Some(&Reverse((t, _, e))) = self.entering.peek() {
            if t > now.0 {
                break;
            }
            self.entering.pop();
            self.enter(Nanos(t), e);
        }
    }

    /// A pass enters the backend at `at`, its service drawn from the
    /// request's own stream.
    fn enter(&mut self, at: Nanos, e: Entering) {
        let seed = self.scenario.seed;
        let closed = self.closed_of(e.source);
        let Some(backend) = self.backend.as_mut() else {
            return;
        };
        let served = backend.enter(at, Nanos(e.arrived), closed.and_then(|c| c.timeout), || {
            event_rng(seed, e.traffic, e.client, e.request, e.attempt, *b"serv")
        });
        if let Some(c) = closed {
            // The client hears the response (a drop at once), or gives up
            // waiting for it, and thinks.
            let done = match served {
                Served::Done { wait, service } => {
                    Nanos(at.0.saturating_add(wait.0).saturating_add(service.0))
                }
                Served::Dropped => at,
            };
            let heard = match c.timeout {
                Some(t) => done.min(Nanos(e.arrived.saturating_add(t.0))),
                None => done,
            };
            self.think(e, heard);
        }
        // A feedback limiter hears of the response (a dropped request is
        // answered at once); one its client stopped waiting for — later
        // than its timeout after it arrived, as the backend counts
        // `timeouts` — is a drop to it (docs/semantics.md §10).
        if let Some((instance, key, in_flight)) = self.asking.take() {
            let (done, rtt, dropped) = match served {
                Served::Done { wait, service } => {
                    let rtt = wait.0 + service.0;
                    let done = at.0.saturating_add(rtt);
                    let timeout = closed.and_then(|c| c.timeout);
                    let timed_out = timeout.is_some_and(|t| done - e.arrived.min(done) > t.0);
                    (done, rtt, timed_out)
                }
                Served::Dropped => (at.0, 0, true),
            };
            let r = Response {
                instance,
                key,
                rtt,
                in_flight,
                dropped,
            };
            self.responses.push(Reverse((done, self.entered, r)));
            self.entered += 1;
        }
    }

    /// Tells the limiter of every response due by `now`, in time order
    /// (a response at the moment of a decision comes first).
    fn respond_due(&mut self, now: Nanos) {
        while let Some(&Reverse((t, _, r))) = self.responses.peek() {
            if t > now.0 {
                break;
            }
            self.responses.pop();
            let sample = Sample {
                rtt: Nanos(r.rtt),
                in_flight: r.in_flight,
                dropped: r.dropped,
            };
            self.limiters[r.instance as usize].respond(r.key, Nanos(t), sample);
        }
    }

    /// A closed-loop client heard the last answer to `job` at `heard`.
    fn answered(&mut self, job: &Job, heard: Nanos) {
        if self.closed_of(job.source).is_none() {
            return;
        }
        let e = self.entering_of(job);
        self.think(e, heard);
    }

    /// The request of `job` as it enters the backend (or a think time).
    fn entering_of(&self, job: &Job) -> Entering {
        let a = job.arrival;
        Entering {
            arrived: a.time.0,
            traffic: self.traffic_of[job.source as usize],
            source: job.source,
            client: a.client,
            ip: a.ip,
            cost: a.cost,
            request: job.request,
            attempt: job.attempt,
        }
    }

    /// The closed-loop pattern of source `source`, if it is one.
    fn closed_of(&self, source: u32) -> Option<&'a Closed> {
        let traffic = self.traffic_of[source as usize] as usize;
        match &self.scenario.traffic[traffic].pattern {
            Pattern::Closed(c) => Some(c),
            _ => None,
        }
    }

    /// Each closed-loop client of the sources this run sees sends its
    /// first request after a first think time (docs/semantics.md §10).
    fn start_closed(&mut self) {
        let first = self.scenario.first_sources();
        for (t, traffic) in self.scenario.traffic.iter().enumerate() {
            let (Pattern::Closed(c), source) = (&traffic.pattern, first[t]) else {
                continue;
            };
            if !self.sees[source as usize] {
                continue;
            }
            for (client, ip) in c.clients.iter() {
                let first = Arrival {
                    time: Nanos::ZERO,
                    client,
                    ip,
                    cost: c.cost,
                };
                if !self.keeps(&first) {
                    continue;
                }
                let e = Entering {
                    arrived: 0,
                    traffic: t as u32,
                    source,
                    client,
                    ip,
                    cost: c.cost,
                    // The first request is number 0: its think time is
                    // request 0's draw.
                    request: u64::MAX,
                    attempt: 0,
                };
                self.think(e, Nanos::ZERO);
            }
        }
    }

    /// A closed-loop client heard the answer to request `e` at `heard`:
    /// after a think time it sends the next, if that is within the run.
    fn think(&mut self, e: Entering, heard: Nanos) {
        let Some(c) = self.closed_of(e.source) else {
            return;
        };
        let request = e.request.wrapping_add(1);
        let mut rng = event_rng(
            self.scenario.seed,
            e.traffic,
            e.client,
            request,
            0,
            *b"thnk",
        );
        let at = heard.0.saturating_add(c.think.draw(&mut rng).0);
        if at >= self.scenario.duration.0 {
            return;
        }
        let at = Nanos(at);
        let job = Job {
            arrival: Arrival {
                time: at,
                client: e.client,
                ip: e.ip,
                cost: e.cost,
            },
            source: e.source,
            request,
            first: at,
            attempt: 1,
            last_wait: Nanos::ZERO,
        };
        self.schedule(at, Event::Arrive(job));
    }

    fn schedule(&mut self, at: Nanos, event: Event) {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                self.events.push(None);
                self.events.len() - 1
            }
        };
        self.events[slot] = Some((self.pushed, event));
        if let Some(j) = self.journal.as_deref_mut() {
            if slot >= j.created_by.len() {
                j.created_by.resize(slot + 1, (None, 0));
            }
            let creator = j.stepping.then_some(j.writer.n);
            j.created_by[slot] = (creator, j.record.created);
            if j.stepping {
                j.record.created += 1;
            }
        }
        self.queue.push(at, slot as u32);
    }

    /// Seeded by the `[[traffic]]`, not the source: splitting a trace
    /// into sources changes no draw.
    fn rng(&self, job: &Job, tag: [u8; 4]) -> impl FnMut() -> rand_chacha::ChaCha8Rng {
        let (seed, j) = (self.scenario.seed, *job);
        let traffic = self.traffic_of[j.source as usize];
        move || event_rng(seed, traffic, j.arrival.client, j.request, j.attempt, tag)
    }

    fn handle(&mut self, now: Nanos, event: Event) -> anyhow::Result<()> {
        match event {
            Event::Arrive(job) => self.arrive(now, job),
            Event::Store {
                job,
                key,
                instance,
                rtt,
                late,
            } => self.at_store(now, job, key, instance, rtt, late),
            Event::Failed { job, key, instance } => self.failed(now, job, key, instance),
            Event::Write { key, ticket } => {
                self.write(now, key, ticket);
                Ok(())
            }
            Event::Release { client } => self.release(now, client),
        }
    }

    /// An attempt reaches an instance — unless its client holds it, or
    /// still holds requests sent before it.
    fn arrive(&mut self, now: Nanos, job: Job) -> anyhow::Result<()> {
        let client = job.arrival.client;
        if self.retries[job.source as usize].policy.reads_headers() {
            let until = self.held_until.get(client as usize).copied().unwrap_or(0);
            if until > now.0 || self.held.contains_key(&client) {
                return self.hold(job, Nanos(until.max(now.0)));
            }
        }
        self.deliver(now, job)
    }

    /// An attempt that its client sends reaches an instance.
    fn deliver(&mut self, now: Nanos, job: Job) -> anyhow::Result<()> {
        let a = job.arrival;
        if self.chain.is_some() {
            let instance = self.route(&job);
            let lane = self.chain.as_deref_mut().expect("a chain's run");
            let (decision, by) = lane.decide(&job, now, instance, &mut self.local_ids);
            self.by = by;
            if self.wants_headers {
                self.headers = Some(lane.headers(instance, now));
            }
            return self.finish(job, a.client, now, Nanos::ZERO, decision);
        }
        let key = self.key_of(&a);
        let instance = self.route(&job);
        if !self.dep.is_global() {
            let local = self.local_key(instance, key);
            if self.feedback {
                self.respond_due(now);
                let waiting = self.backend.as_mut().map_or(0, |b| b.waiting_at(now));
                self.limiters[instance as usize].observe(now, waiting);
            }
            let limiter = &mut self.limiters[instance as usize];
            let decision = limiter.decide(local, now, a.cost);
            if self.wants_headers {
                self.headers = Some(limiter.headers(local, now));
            }
            if self.feedback && decision.passes() {
                self.asking = Some((instance, local, limiter.in_flight(local)));
            }
            if self.feedback {
                let limits = self.limiters.iter().filter_map(|l| l.current_limit());
                if let (Some(b), Some(limit)) = (self.backend.as_mut(), limits.reduce(|a, b| a + b))
                {
                    b.note_limit(now, limit);
                }
            }
            return self.finish(job, key, now, Nanos::ZERO, decision);
        }
        self.send_to_store(now, job, key, instance)
    }

    /// A client that read `r = 0` (or `r ≤ F × q`) sends `job` when its
    /// hold ends (at `until` or later), after the requests it held before
    /// (docs/semantics.md §11). One held past the end of the run is never
    /// sent: a retry's request is `pending_at_end`, as any retry due then;
    /// a first attempt is no request at all, as one generated after the
    /// end (so `logical_requests = passed + gave_up + pending_at_end`
    /// holds).
    ///
    /// A client's held requests wait in its own queue behind one release
    /// event, so a backlog that outlasts many holds costs one event per
    /// hold and one per request sent, not one per request per hold.
    fn hold(&mut self, job: Job, until: Nanos) -> anyhow::Result<()> {
        let client = job.arrival.client;
        if let Some(queue) = self.held.get_mut(&client) {
            queue.push(&job);
            return Ok(());
        }
        if until > self.scenario.duration {
            self.never_sent(job);
            return Ok(());
        }
        let mut queue = held::Held::new(client);
        queue.push(&job);
        self.held.insert(client, queue);
        self.schedule(until, Event::Release { client });
        Ok(())
    }

    /// A held request that the run ends before its client sends.
    fn never_sent(&mut self, job: Job) {
        if job.attempt > 1 {
            self.record(Call::PendingAtEnd);
        }
    }

    /// `client`'s hold may have ended at `now`: if it has, the client sends
    /// the first request it holds (the next goes out right after it, as
    /// the answer to this one allows); if not, it waits until the hold's
    /// end, or for ever when that is after the run.
    fn release(&mut self, now: Nanos, client: u32) -> anyhow::Result<()> {
        let until = self.held_until.get(client as usize).copied().unwrap_or(0);
        if until <= now.0 {
            let queue = self
                .held
                .get_mut(&client)
                .expect("a released client holds requests");
            let job = queue.pop(now).expect("a held queue is never empty");
            let emptied = queue.is_empty();
            if emptied {
                self.held.remove(&client);
            }
            self.deliver(now, job)?;
            if emptied {
                // Nothing left to send; a queue the answer started anew
                // has its own release.
                return Ok(());
            }
        }
        let until = self.held_until.get(client as usize).copied().unwrap_or(0);
        let until = Nanos(until.max(now.0));
        if until > self.scenario.duration {
            if let Some(queue) = self.held.remove(&client) {
                queue.drain(now).for_each(|job| self.never_sent(job));
            }
        } else {
            self.schedule(until, Event::Release { client });
        }
        Ok(())
    }

    /// A client of a `ratelimit_headers` source reads the fields `h` of
    /// its request's answer, heard at `heard`: at `r ≤ F × q` (`r = 0`
    /// when F = 0) it holds its requests until `t` seconds later.
    fn read_headers(&mut self, job: &Job, heard: Nanos, h: Headers) {
        let RetryPolicy::RatelimitHeaders {
            slow_below: (num, den),
        } = self.retries[job.source as usize].policy
        else {
            return;
        };
        let q = self.header_q;
        let r = h.written_remaining(q);
        if r as u128 * den as u128 > num as u128 * q as u128 {
            return;
        }
        let until = heard
            .0
            .saturating_add(h.reset_s().saturating_mul(NANOS_PER_SEC));
        let client = job.arrival.client as usize;
        if client >= self.held_until.len() {
            self.held_until.resize(client + 1, 0);
        }
        self.held_until[client] = self.held_until[client].max(until);
    }

    /// Handles `event` at `at`: now if that is the present (a zero
    /// latency takes no time, so nothing else may come between), else on
    /// the queue.
    fn at(&mut self, now: Nanos, at: Nanos, event: Event) -> anyhow::Result<()> {
        if at == now {
            self.handle(now, event)
        } else {
            self.schedule(at, event);
            Ok(())
        }
    }

    /// Records a decision, logs it, and schedules a retry if the client
    /// makes one. `decided_at` is where the limiter is; the client hears
    /// the decision `latency` after the attempt arrived.
    fn finish(
        &mut self,
        job: Job,
        key: u32,
        decided_at: Nanos,
        latency: Nanos,
        decision: Decision,
    ) -> anyhow::Result<()> {
        self.finish_with(job, key, decided_at, latency, decision, true)
    }

    /// [`Run::finish`]; `by_limiter` is false for a decision the limiter
    /// did not take (a store failure under `fail_closed`), which is never
    /// collateral.
    #[inline(always)]
    fn finish_with(
        &mut self,
        job: Job,
        key: u32,
        decided_at: Nanos,
        latency: Nanos,
        decision: Decision,
        by_limiter: bool,
    ) -> anyhow::Result<()> {
        match self.deferred {
            None => self.finish_as::<false>(job, key, decided_at, latency, decision, by_limiter),
            Some(_) => self.finish_as::<true>(job, key, decided_at, latency, decision, by_limiter),
        }
    }

    /// [`Run::finish_with`], its recorder set aside or not (`ASIDE`; one
    /// copy each, so that the run that makes its calls at once does not
    /// pay for keeping them).
    fn finish_as<const ASIDE: bool>(
        &mut self,
        job: Job,
        key: u32,
        decided_at: Nanos,
        latency: Nanos,
        decision: Decision,
        by_limiter: bool,
    ) -> anyhow::Result<()> {
        let a = job.arrival;
        if let Some(shadow) = self.shadow.as_mut() {
            // The shadow sees every attempt of the client, once.
            let own_key_passes = shadow.decide(a.client, decided_at, a.cost).passes();
            if by_limiter && own_key_passes && !decision.passes() {
                self.record(Call::Collateral { cost: a.cost });
            }
        }
        // A first attempt decided as it arrived, with the recorder set
        // aside: kept as its place in the chunk (see [`aside`]).
        let on_arrival = match ASIDE {
            false => None,
            true => self.arriving.take().filter(|&(_, source, arrival)| {
                (arrival, source, job.attempt, job.first) == (a, job.source, 1, a.time)
                    && (decided_at, latency, self.reached) == (a.time, Nanos::ZERO, a.time)
            }),
        };
        let decided = Decided {
            source: job.source,
            client: a.client,
            key,
            attempt: job.attempt,
            time: a.time,
            decided_at,
            latency,
            first: job.first,
            cost: a.cost,
            decision,
        };
        match (&mut self.deferred, on_arrival) {
            (Some(kept), Some((index, ..))) if ASIDE => kept.on_arrival(index, key, decision),
            (Some(kept), _) if ASIDE => kept.call(self.reached, Call::Decided(decided)),
            _ => self.recorder.decided(decided),
        }
        // When the client hears the decision: `latency` after the attempt
        // (a shared store's round trip), then a shaper's delay. Saturating:
        // a delay may reach past the clock's end.
        let heard_at = || {
            let delay = match decision {
                Decision::Delayed { delay } => delay,
                _ => Nanos::ZERO,
            };
            Nanos(a.time.0.saturating_add(latency.0).saturating_add(delay.0))
        };
        let headers = self.headers.take();
        if let Some(h) = headers {
            self.read_headers(&job, heard_at(), h);
        }
        let closed = match self.backend.is_none() && decision.passes() {
            true => self.closed_of(job.source),
            false => None,
        };
        if let Some(closed) = closed {
            // No backend: a closed-loop client's response is its pass, heard
            // when the gateway can answer it — as a rejection is, a round
            // trip after the attempt (the pass itself is at the store's
            // moment, half-way; docs/semantics.md §10) — or at its timeout.
            let heard = match closed.timeout {
                Some(t) => heard_at().min(Nanos(a.time.0.saturating_add(t.0))),
                None => heard_at(),
            };
            self.answered(&job, heard);
        }
        if self.backend.is_some() {
            let pass_at = match decision {
                Decision::Admitted => Some(decided_at),
                Decision::Delayed { delay } => Some(Nanos(decided_at.0.saturating_add(delay.0))),
                Decision::Rejected { .. } => None,
            };
            let e = self.entering_of(&job);
            match pass_at {
                Some(at) if at > decided_at => {
                    self.entering.push(Reverse((at.0, self.entered, e)));
                    self.entered += 1;
                }
                Some(at) => self.enter(at, e),
                None => {}
            }
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.record.rows += self.sink.is_some() as u64;
        }
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.record(&Attempt {
                arrival: a,
                traffic: self.traffic_of[job.source as usize],
                source: job.source,
                key,
                attempt: job.attempt,
                decision,
                by: self.by.take(),
                headers,
                event: self.recorder.event,
            })?;
        }
        if let Decision::Rejected { retry_after } = decision {
            let heard = a.time + latency;
            let retry = &self.retries[job.source as usize];
            let wait = retry.next_wait(
                job.attempt,
                retry_after,
                job.last_wait,
                &mut self.rng(&job, *b"rtry"),
            );
            match wait {
                None => {
                    match (&mut self.deferred, on_arrival) {
                        (Some(kept), Some(_)) if ASIDE => kept.gave_up(),
                        _ => self.record(Call::GaveUp {
                            client: a.client,
                            time: a.time,
                        }),
                    }
                    self.answered(&job, heard);
                }
                Some(w) if heard.0.saturating_add(w.0) > self.scenario.duration.0 => {
                    self.record(Call::PendingAtEnd)
                }
                Some(w) => {
                    let at = heard + w;
                    let next = Job {
                        arrival: Arrival { time: at, ..a },
                        attempt: job.attempt + 1,
                        last_wait: w,
                        ..job
                    };
                    self.schedule(at, Event::Arrive(next));
                }
            }
        }
        Ok(())
    }
}

/// A chain's members in its run (docs/semantics.md §13): on each gateway
/// instance a [`Chain`] of the members, and what each member is asked and
/// decides, recorded for the member's own row.
struct ChainLane {
    /// One per instance (the members' deployment is local); each
    /// instance's dense key ids are its run's (`Run::local_ids`), shared
    /// by the members.
    chains: Vec<Chain>,
    /// Per member: its index in the scenario, its key, the sources it
    /// sees, and its recorder.
    members: Vec<usize>,
    key_by: Vec<KeyBy>,
    sees: Vec<Vec<bool>>,
    recorders: Vec<Recorder>,
    /// Per member, for the request being decided: its key (`None`: not
    /// asked), that key on the instance, and its own decision.
    keys: Vec<Option<u32>>,
    local: Vec<Option<u32>>,
    own: Vec<Option<Decision>>,
}

impl ChainLane {
    fn new(scenario: &Scenario, spec: &crate::scenario::ChainSpec) -> ChainLane {
        let members: Vec<&crate::scenario::LimiterSpec> = spec
            .members
            .iter()
            .map(|&m| &scenario.limiters[m])
            .collect();
        let n = members.len();
        let instances = members[0].deployment.instances as usize;
        ChainLane {
            chains: (0..instances)
                .map(|_| {
                    Chain::new(
                        spec.mode,
                        members
                            .iter()
                            .map(|m| m.deployment.instance_algorithm(&m.algorithm).build())
                            .collect(),
                    )
                })
                .collect(),
            members: spec.members.clone(),
            key_by: members.iter().map(|m| m.key_by).collect(),
            sees: members.iter().map(|m| sees(scenario, m)).collect(),
            recorders: members
                .iter()
                .map(|m| recorder(scenario, m).for_member())
                .collect(),
            keys: vec![None; n],
            local: vec![None; n],
            own: vec![None; n],
        }
    }

    /// The header fields of instance `instance`'s chain at `now` for the
    /// request just decided: over the members asked about it.
    fn headers(&self, instance: u32, now: Nanos) -> Headers {
        self.chains[instance as usize].headers(&self.local, now)
    }

    /// The chain's decision on `job` at `now` on `instance`, and the
    /// member behind it. Each member asked records its own part: its
    /// decision when it rejected or the chain passed, else only that it
    /// was asked.
    fn decide(
        &mut self,
        job: &Job,
        now: Nanos,
        instance: u32,
        local_ids: &mut [HashMap<u32, u32>],
    ) -> (Decision, Option<u32>) {
        let a = job.arrival;
        for (i, key) in self.keys.iter_mut().enumerate() {
            *key = self.sees[i][job.source as usize].then(|| key_of(self.key_by[i], &a));
            self.local[i] = key.map(|k| local_key(local_ids, instance, k));
        }
        let decided =
            self.chains[instance as usize].decide(&self.local, now, a.cost, &mut self.own);
        let passed = decided.decision.passes();
        for (i, own) in self.own.iter().enumerate() {
            let (Some(own), Some(key)) = (*own, self.keys[i]) else {
                continue;
            };
            let r = &mut self.recorders[i];
            r.advance(now);
            let counted = (passed || !own.passes()).then_some(own);
            r.source(job.source, a.client, job.attempt == 1, a.cost, counted);
            match (counted, decided.decision) {
                // It passed when the chain let it: after the longest delay.
                (Some(own), Decision::Delayed { delay }) if own.passes() => {
                    r.record_passed_after(key, now, a.cost, own, delay)
                }
                (Some(own), _) => r.record(key, now, a.cost, own),
                (None, _) => r.asked(),
            }
        }
        (decided.decision, decided.by.map(|b| b as u32))
    }

    /// Each member's state over every instance, closed at `last`.
    fn close(&mut self, last: Nanos) -> Vec<Option<Footprint>> {
        let mut footprints: Vec<Option<Footprint>> = vec![None; self.members.len()];
        for chain in &mut self.chains {
            for (i, limiter) in chain.members_mut().iter_mut().enumerate() {
                let f = limiter.close(last);
                footprints[i] = Some(match footprints[i] {
                    Some(sum) => sum.combine(f),
                    None => f,
                });
            }
        }
        footprints
    }

    /// Each member's run, by its index in the scenario: its recorder, and
    /// its state over every instance (from [`ChainLane::close`]).
    fn into_runs(self, footprints: Vec<Option<Footprint>>) -> Vec<(usize, LimiterRun)> {
        self.recorders
            .into_iter()
            .zip(footprints)
            .zip(self.members)
            .map(|((mut recorder, footprint), index)| {
                recorder.finish();
                (
                    index,
                    LimiterRun {
                        recorder,
                        footprint: footprint.unwrap_or_default(),
                        backend: None,
                    },
                )
            })
            .collect()
    }
}

/// The key a limiter keyed `by` decides `a` on.
fn key_of(by: KeyBy, a: &Arrival) -> u32 {
    match by {
        KeyBy::Client => a.client,
        KeyBy::Ip => a.ip,
        KeyBy::Global => 0,
    }
}

/// `key` as instance `instance`'s state knows it: itself on a single
/// instance, else the instance's own dense id for it (`local_ids`, one map
/// per instance), so an instance's state grows with its own keys.
#[inline(always)]
fn local_key(local_ids: &mut [HashMap<u32, u32>], instance: u32, key: u32) -> u32 {
    if local_ids.len() <= 1 {
        return key;
    }
    let ids = &mut local_ids[instance as usize];
    let next = ids.len() as u32;
    *ids.entry(key).or_insert(next)
}

/// Which of `scenario`'s sources `spec` sees, by source id: those of the
/// `[[traffic]]` it sees.
fn sees(scenario: &Scenario, spec: &crate::scenario::LimiterSpec) -> Vec<bool> {
    scenario
        .sources()
        .map(|(t, _)| spec.traffic.contains(&t))
        .collect()
}

/// A fresh recorder for `spec`'s row, counting per source too (every
/// source of [`Scenario::sources`], by id).
fn recorder(scenario: &Scenario, spec: &crate::scenario::LimiterSpec) -> Recorder {
    Recorder::new(
        scenario.defaults.window,
        spec.policy.limit,
        scenario.output.resolution,
        scenario.duration,
        scenario.population.clients(),
    )
    .with_sources(scenario.sources().count())
}
