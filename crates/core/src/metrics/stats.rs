//! What is derived from a recorder's counts when the run ends: each key's
//! and each client's counts, the spread and fairness of the clients' pass
//! ratios, collateral rejections and what well-behaved clients paid.

use super::window::*;
use super::Recorder;
use crate::clock::Nanos;

/// One key's attempts and outcomes, and the most it passed in one policy
/// window (`top_keys.csv`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCounts {
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub peak_in_window: u64,
}

/// One client's logical requests, passes and rejected attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounts {
    pub logical: u64,
    pub passed: u64,
    pub rejected: u64,
}

impl Recorder {
    /// What each client of the population asked for and got, in client
    /// order.
    pub fn clients(&self) -> impl Iterator<Item = ClientCounts> + '_ {
        let n = self.clients.min(self.ids.len());
        self.ids[..n].iter().enumerate().map(|(id, slot)| {
            let c = |field: usize| self.wide.count(id as u32, field, slot.counts[field]);
            ClientCounts {
                logical: c(LOGICAL),
                passed: c(CLIENT_PASSED),
                rejected: c(CLIENT_REJECTED),
            }
        })
    }

    /// Every key that had an attempt, by id, with its counts.
    pub fn keys(&self) -> impl Iterator<Item = (usize, KeyCounts)> + '_ {
        self.ids.iter().enumerate().filter_map(|(id, slot)| {
            let c = |field: usize| self.wide.count(id as u32, field, slot.counts[field]);
            let (admitted, delayed, rejected) = (c(ADMITTED), c(DELAYED), c(KEY_REJECTED));
            let attempts = admitted + delayed + rejected;
            let peak_in_window = match slot.counts[PEAK] {
                u32::MAX => self.wide.peaks[&(id as u32)],
                peak => peak as u64,
            };
            (attempts > 0).then_some((
                id,
                KeyCounts {
                    attempts,
                    admitted,
                    delayed,
                    rejected,
                    peak_in_window,
                },
            ))
        })
    }

    pub fn passed(&self) -> u64 {
        self.admitted + self.delayed
    }

    /// Jain's fairness index of the clients' pass ratios (passed / logical
    /// requests) over clients that sent anything: `(Σx)² / (n·Σx²)`, 1 when
    /// every client got the same share, `1/n` when one got everything.
    /// `None` when no client sent anything or none passed.
    /// (Summed in client order as the ratios come, not listed first.)
    pub fn fairness(&self) -> Option<f64> {
        let (mut n, mut sum, mut squares) = (0u64, 0.0f64, 0.0f64);
        for c in self.clients().filter(|c| c.logical > 0) {
            let x = c.passed as f64 / c.logical as f64;
            n += 1;
            sum += x;
            squares += x * x;
        }
        let n = n as f64;
        (n > 0.0 && squares > 0.0).then(|| sum * sum / (n * squares))
    }

    /// The spread of the clients' pass ratios: min, p10, p50, p90 and max
    /// (nearest rank), each an exact fraction `(passed, logical)`.
    pub fn pass_ratio_spread(&self) -> Option<[(u64, u64); 5]> {
        let mut ratios: Vec<(u64, u64)> = self
            .clients()
            .filter(|c| c.logical > 0)
            .map(|c| (c.passed, c.logical))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(|a, b| (a.0 as u128 * b.1 as u128).cmp(&(b.0 as u128 * a.1 as u128)));
        let n = ratios.len() as u64;
        let rank = |per_mille: u64| {
            let r = (per_mille * n).div_ceil(1000).max(1);
            ratios[(r - 1) as usize]
        };
        Some([
            ratios[0],
            rank(100),
            rank(500),
            rank(900),
            ratios[n as usize - 1],
        ])
    }

    /// Collateral rejections of all rejected attempts, counted as
    /// attempts: `(collateral, rejected)`, `None` without rejections.
    pub fn collateral(&self) -> Option<(u64, u64)> {
        (self.rejected > 0).then_some((self.collateral, self.rejected))
    }

    /// The same weighted by cost: `(collateral cost, rejected cost)`.
    pub fn collateral_cost(&self) -> Option<(u64, u64)> {
        (self.rejected > 0).then_some((self.collateral_cost, self.rejected_cost))
    }

    /// Of the attempts of the clients whose offered rate over the run was
    /// within the policy — `logical · window ≤ limit · duration` — how many
    /// were rejected: `(rejected, attempts)`; `None` when no such client
    /// sent anything. What well-behaved clients pay for a limit.
    pub fn within_limit_rejected(&self, limit: u64, duration: Nanos) -> Option<(u64, u64)> {
        let (mut rejected, mut attempts) = (0u64, 0u64);
        for c in self.clients() {
            let within =
                c.logical as u128 * self.window as u128 <= limit as u128 * duration.0 as u128;
            if within && c.logical > 0 {
                rejected += c.rejected;
                attempts += c.rejected + c.passed;
            }
        }
        (attempts > 0).then_some((rejected, attempts))
    }
}
