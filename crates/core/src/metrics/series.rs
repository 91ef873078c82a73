//! The time series: one bucket per `resolution` of the run, filled as
//! attempts arrive and requests pass.

use super::Recorder;

/// Counts in one time-series bucket. Attempts and outcomes count at arrival;
/// `passed` counts at the moment a request passes (a delayed request in the
/// bucket where it is released).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeriesBucket {
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub passed: u64,
    pub passed_cost: u64,
    /// Attempts after the first (retries), at arrival.
    pub retries: u64,
    /// Logical requests given up, at their last rejection.
    pub gave_up: u64,
    /// The most any one key had passed within `(t − W, t]` (W the policy
    /// window), over every pass at a time `t` in this bucket: the policy's
    /// own measure, per key, over time. 0 when nothing passed here.
    pub worst_key_in_window: u64,
    /// Passed cost beyond the limit, per key per aligned policy window,
    /// counted at the passes in this bucket (summed over keys): the series
    /// sums to `overshoot`.
    pub overshoot: u64,
}

impl Recorder {
    /// The bucket of time `t`. The series grows past `duration` to hold
    /// late passes (a shaper's releases, a store's answers), up to twice its
    /// planned length; anything later counts in the last bucket.
    #[inline(always)]
    pub(super) fn bucket(&mut self, t: u64) -> &mut SeriesBucket {
        let (start, last) = self.last_bucket;
        // Within `[start, start + resolution)`: the same bucket (the last
        // one, which holds every later time, is found anew).
        if t >= start && t - start < self.resolution && last < self.series.len() {
            return &mut self.series[last];
        }
        self.bucket_found(t)
    }

    /// [`Recorder::bucket`] of a time in another bucket than the last one
    /// asked for (or one not yet in the series).
    #[inline(never)]
    fn bucket_found(&mut self, t: u64) -> &mut SeriesBucket {
        let (start, last) = self.last_bucket;
        let i = if t >= start && t - start < self.resolution {
            last
        } else {
            let i = ((t / self.resolution) as usize).min(self.max_buckets.max(1) - 1);
            self.last_bucket = (i as u64 * self.resolution, i);
            i
        };
        if i >= self.series.len() {
            self.series.resize(i + 1, SeriesBucket::default());
        }
        &mut self.series[i]
    }
}
