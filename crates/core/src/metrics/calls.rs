//! A run's calls to its [`Recorder`], as values: made at once, or kept in
//! order and made later, on another thread or after a chunk's decisions
//! (the engine's `aside.rs`, which
//! also keeps the moment each was made at, to release the passes due by
//! then first). The recorder gets the same calls in the same order, after
//! the same releases, either way, so it counts the same.

use super::Recorder;
use crate::clock::Nanos;
use crate::limiter::Decision;

/// A decision on an attempt: `source`'s attempt number `attempt` of a
/// request first sent at `first`, from `client`, keyed on `key`, arriving
/// at `time`, decided `decided_at` (where the limiter is: the instance, or
/// the store), heard by the client `latency` after it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub source: u32,
    pub client: u32,
    pub key: u32,
    pub attempt: u32,
    pub time: Nanos,
    pub decided_at: Nanos,
    pub latency: Nanos,
    pub first: Nanos,
    pub cost: u64,
    pub decision: Decision,
}

/// One call of the engine's to its recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// [`Recorder::decided`].
    Decided(Decided),
    /// [`Recorder::collateral_rejection`].
    Collateral { cost: u64 },
    /// [`Recorder::gave_up`].
    GaveUp { client: u32, time: Nanos },
    /// [`Recorder::pending_at_end`].
    PendingAtEnd,
    /// [`Recorder::store_op`].
    StoreOp,
    /// [`Recorder::cache_rejection`].
    CacheRejection,
    /// [`Recorder::fault_open`].
    FaultOpen,
    /// [`Recorder::fault_closed`].
    FaultClosed,
    /// [`Recorder::fault_fallback`].
    FaultFallback,
}

impl Recorder {
    /// A decision: [`Recorder::source`] with it, then
    /// [`Recorder::attempt`].
    #[inline(always)]
    pub fn decided(&mut self, d: Decided) {
        let first_attempt = d.attempt == 1;
        self.source(d.source, d.client, first_attempt, d.cost, Some(d.decision));
        self.attempt(
            d.key,
            d.client,
            d.time,
            d.decided_at,
            d.latency,
            d.first,
            d.attempt,
            d.cost,
            d.decision,
        );
    }

    /// Makes `call`.
    #[inline(always)]
    pub fn apply(&mut self, call: Call) {
        match call {
            Call::Decided(d) => self.decided(d),
            Call::Collateral { cost } => self.collateral_rejection(cost),
            Call::GaveUp { client, time } => self.gave_up(client, time),
            Call::PendingAtEnd => self.pending_at_end(),
            Call::StoreOp => self.store_op(),
            Call::CacheRejection => self.cache_rejection(),
            Call::FaultOpen => self.fault_open(),
            Call::FaultClosed => self.fault_closed(),
            Call::FaultFallback => self.fault_fallback(),
        }
    }
}
