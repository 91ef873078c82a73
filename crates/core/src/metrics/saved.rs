//! A finished recorder as a key partition writes it, read back and summed
//! with the other partitions' into the whole run's (docs/semantics.md §12).
//!
//! Everything the reports read is kept: the counts, the series, the
//! histograms (which merge exactly), and per id the client's and the key's
//! counts. A key's window of passes is not: the run is over. The peak is
//! the caller's to choose, as only the journals tell which partition's pass
//! came first.

use super::window::*;
use super::{DelayHistogram, Recorder, SeriesBucket, SourceCounts};
use crate::clock::Nanos;
use crate::error::InputError;
use crate::partition::wire::{Put, Take};

/// The counts of an id's slot, whole.
fn slot_counts(r: &Recorder, id: usize) -> [u64; 7] {
    let slot = &r.ids[id];
    let mut out = [0u64; 7];
    for (field, out) in out.iter_mut().enumerate() {
        *out = match field {
            PEAK => match slot.counts[PEAK] {
                u32::MAX => r.wide.peaks[&(id as u32)],
                peak => peak as u64,
            },
            _ => r.wide.count(id as u32, field, slot.counts[field]),
        };
    }
    out
}

fn put_histogram(p: &mut Put, h: &DelayHistogram) {
    let h = h.merged();
    p.u64(h.zeros);
    p.u64(h.count);
    p.u64(h.shift.into());
    p.u64(h.values.len() as u64);
    for &(v, n) in &h.values {
        p.u64(v);
        p.u64(n);
    }
}

fn take_histogram(t: &mut Take) -> Result<DelayHistogram, InputError> {
    let mut h = DelayHistogram {
        zeros: t.u64()?,
        count: t.u64()?,
        shift: t.u32()?,
        ..DelayHistogram::default()
    };
    let n = t.usize()?;
    for _ in 0..n {
        h.values.push((t.u64()?, t.u64()?));
    }
    Ok(h)
}

const BUCKET_FIELDS: usize = 10;

fn bucket_fields(b: &mut SeriesBucket) -> [&mut u64; BUCKET_FIELDS] {
    [
        &mut b.attempts,
        &mut b.admitted,
        &mut b.delayed,
        &mut b.rejected,
        &mut b.passed,
        &mut b.passed_cost,
        &mut b.retries,
        &mut b.gave_up,
        &mut b.worst_key_in_window,
        &mut b.overshoot,
    ]
}

/// The Recorder's scalar counts, in the order they are written: one list
/// for both [`Recorder::scalar_values`] and [`Recorder::scalars`], so that
/// a count added to one is in the other.
macro_rules! recorder_scalars {
    ($($amp:tt)*) => {
        |r| [
            $($amp)* r.attempts,
            $($amp)* r.admitted,
            $($amp)* r.delayed,
            $($amp)* r.rejected,
            $($amp)* r.overruled,
            $($amp)* r.logical,
            $($amp)* r.gave_up,
            $($amp)* r.pending_at_end,
            $($amp)* r.overshoot,
            $($amp)* r.store_ops,
            $($amp)* r.fault_open,
            $($amp)* r.fault_closed,
            $($amp)* r.fault_fallback,
            $($amp)* r.cache_rejections,
            $($amp)* r.rejected_cost,
            $($amp)* r.collateral,
            $($amp)* r.collateral_cost,
        ]
    };
}

impl Recorder {
    /// The scalar counts' values, in the order they are written.
    fn scalar_values(&self) -> [u64; 17] {
        let values: fn(&Recorder) -> [u64; 17] = recorder_scalars!();
        values(self)
    }

    /// The scalar counts, in the order they are written.
    fn scalars(&mut self) -> [&mut u64; 17] {
        let counts: fn(&mut Recorder) -> [&mut u64; 17] = recorder_scalars!(&mut);
        counts(self)
    }

    /// Writes a finished recorder (see the module documentation).
    pub fn save(&self, p: &mut Put) {
        for v in [
            self.window,
            self.limit,
            self.resolution,
            self.max_buckets as u64,
            self.clients as u64,
        ] {
            p.u64(v);
        }
        p.bool(self.member);
        for v in self.scalar_values() {
            p.u64(v);
        }
        p.u64(self.overshoot_max);
        p.u64(self.peak_in_window);
        p.opt(self.peak_at.map(|(t, _)| t.0));
        p.u64(self.peak_at.map_or(0, |(_, k)| k.into()));
        p.bool(self.peak_origin.0);
        p.u64(self.peak_origin.1);
        p.u64(self.series.len() as u64);
        for b in &self.series {
            for v in bucket_fields(&mut { *b }) {
                p.u64(*v);
            }
        }
        for h in [&self.delays, &self.time_to_success, &self.added_latency] {
            put_histogram(p, h);
        }
        p.u64(self.ids.len() as u64);
        let used: Vec<usize> = (0..self.ids.len())
            .filter(|&id| self.ids[id].counts.iter().any(|&c| c != 0) || self.wide_has(id))
            .collect();
        p.u64(used.len() as u64);
        for id in used {
            p.u64(id as u64);
            for c in slot_counts(self, id) {
                p.u64(c);
            }
        }
        p.u64(self.sources.len() as u64);
        for s in &self.sources {
            // Finished: no client bits left to copy.
            for v in s.clone().counts_mut() {
                p.u64(*v);
            }
        }
    }

    fn wide_has(&self, id: usize) -> bool {
        self.wide.peaks.contains_key(&(id as u32))
            || self
                .wide
                .carries
                .range((id as u32, 0)..=(id as u32, 7))
                .next()
                .is_some()
    }

    /// Reads back what [`Recorder::save`] wrote.
    pub fn load(t: &mut Take) -> Result<Recorder, InputError> {
        let mut r = Recorder {
            window: t.u64()?,
            limit: t.u64()?,
            resolution: t.u64()?,
            max_buckets: t.usize()?,
            clients: t.usize()?,
            member: t.bool()?,
            ..Recorder::default()
        };
        for v in r.scalars() {
            *v = t.u64()?;
        }
        r.overshoot_max = t.u64()?;
        r.peak_in_window = t.u64()?;
        let at = t.opt()?;
        let key = t.u32()?;
        r.peak_at = at.map(|at| (Nanos(at), key));
        r.peak_origin = (t.bool()?, t.u64()?);
        let n = t.usize()?;
        r.series = vec![SeriesBucket::default(); n];
        for b in &mut r.series {
            for v in bucket_fields(b) {
                *v = t.u64()?;
            }
        }
        r.delays = take_histogram(t)?;
        r.time_to_success = take_histogram(t)?;
        r.added_latency = take_histogram(t)?;
        let len = t.usize()?;
        crate::cache::grow_with(&mut r.ids, len, PerId::default);
        let used = t.usize()?;
        for _ in 0..used {
            let id = t.u32()?;
            if id as usize >= len {
                return Err(InputError::new(format!(
                    "a partition's recorder names id {id} of {len}: damaged; run the partition again"
                )));
            }
            let mut counts = [0u64; 7];
            for c in &mut counts {
                *c = t.u64()?;
            }
            r.add_counts(id, counts);
        }
        let n = t.usize()?;
        r.sources = (0..n)
            .map(|_| {
                let mut s = SourceCounts::default();
                for v in s.counts_mut() {
                    *v = t.u64()?;
                }
                Ok(s)
            })
            .collect::<Result<_, InputError>>()?;
        Ok(r)
    }

    /// Adds `counts` to id `id`'s slot (its peak: the larger).
    fn add_counts(&mut self, id: u32, counts: [u64; 7]) {
        let i = id as usize;
        if i >= self.ids.len() {
            crate::cache::grow_with(&mut self.ids, i + 1, PerId::default);
        }
        let now = slot_counts(self, i);
        for field in 0..7 {
            let v = match field {
                PEAK => now[PEAK].max(counts[PEAK]),
                _ => now[field] + counts[field],
            };
            self.ids[i].counts[field] = v.min(u32::MAX as u64) as u32;
            if field == PEAK {
                self.wide.peaks.remove(&id);
                if v >= u32::MAX as u64 {
                    self.wide.peaks.insert(id, v);
                }
            } else {
                self.ids[i].counts[field] = v as u32;
                self.wide.carries.remove(&(id, field));
                if v >> 32 > 0 {
                    self.wide.carries.insert((id, field), v >> 32);
                }
            }
        }
    }

    /// Adds a key partition's recorder of the same limiter: every count,
    /// bucket, histogram and id. The peak is left as it was (see the
    /// module documentation).
    pub fn absorb(&mut self, other: &Recorder) -> Result<(), InputError> {
        let shape = |r: &Recorder| (r.window, r.limit, r.resolution, r.max_buckets, r.clients);
        if shape(self) != shape(other) || self.sources.len() != other.sources.len() {
            return Err(InputError::new(
                "the partitions' recorders are of different limiters or runs".to_string(),
            ));
        }
        for (mine, theirs) in self.scalars().into_iter().zip(other.scalar_values()) {
            *mine += theirs;
        }
        self.overshoot_max = self.overshoot_max.max(other.overshoot_max);
        if self.series.len() < other.series.len() {
            self.series
                .resize(other.series.len(), SeriesBucket::default());
        }
        for (mine, theirs) in self.series.iter_mut().zip(&other.series) {
            let mut theirs = *theirs;
            for (j, (m, t)) in bucket_fields(mine)
                .into_iter()
                .zip(bucket_fields(&mut theirs))
                .enumerate()
            {
                // worst_key_in_window is the most of any key: the larger.
                *m = if j == 8 { (*m).max(*t) } else { *m + *t };
            }
        }
        self.delays.absorb(&other.delays);
        self.time_to_success.absorb(&other.time_to_success);
        self.added_latency.absorb(&other.added_latency);
        if self.ids.len() < other.ids.len() {
            crate::cache::grow_with(&mut self.ids, other.ids.len(), PerId::default);
        }
        for id in 0..other.ids.len() {
            if other.ids[id].counts.iter().any(|&c| c != 0) || other.wide_has(id) {
                self.add_counts(id as u32, slot_counts(other, id));
            }
        }
        for (mine, theirs) in self.sources.iter_mut().zip(&other.sources) {
            for (m, t) in mine
                .counts_mut()
                .into_iter()
                .zip(theirs.clone().counts_mut())
            {
                *m += *t;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Decision;

    const MS: u64 = 1_000_000;

    fn sample(keys: std::ops::Range<u32>, shift: u64) -> Recorder {
        let mut r = Recorder::new(Nanos(1000 * MS), 3, Nanos(100 * MS), Nanos(2000 * MS), 8)
            .with_sources(2);
        for (i, key) in keys.enumerate() {
            let t = Nanos((i as u64 * 37 + shift) * MS);
            let d = match i % 3 {
                0 => Decision::Admitted,
                1 => Decision::Delayed {
                    delay: Nanos((i as u64 + 1) * 7 * MS),
                },
                _ => Decision::Rejected {
                    retry_after: Some(Nanos(MS)),
                },
            };
            r.source(key % 2, key, true, 1, Some(d));
            r.attempt(key, key, t, t, Nanos(3), Nanos(0), 1, 1, d);
        }
        r.finish();
        r
    }

    /// Saved and read back, a recorder reports what it reported; two
    /// partitions' recorders sum to the one that saw both.
    #[test]
    fn saved_recorders_read_back_and_sum() {
        let whole = {
            let mut r = Recorder::new(Nanos(1000 * MS), 3, Nanos(100 * MS), Nanos(2000 * MS), 8)
                .with_sources(2);
            for (keys, shift) in [(0..4, 0), (4..8, 5)] {
                let part = sample(keys, shift);
                r.absorb(&part).unwrap();
            }
            r
        };
        let (a, b) = (sample(0..4, 0), sample(4..8, 5));
        let mut p = Put::default();
        a.save(&mut p);
        b.save(&mut p);
        let mut t = Take::new(&p.0, "test");
        let mut merged = Recorder::load(&mut t).unwrap();
        merged.absorb(&Recorder::load(&mut t).unwrap()).unwrap();
        assert!(t.is_empty());
        assert_eq!(merged.attempts, 8);
        assert_eq!(merged.attempts, whole.attempts);
        assert_eq!(merged.series, whole.series);
        assert_eq!(
            merged.clients().collect::<Vec<_>>(),
            whole.clients().collect::<Vec<_>>()
        );
        assert_eq!(
            merged.keys().collect::<Vec<_>>(),
            a.keys().chain(b.keys()).collect::<Vec<_>>()
        );
        assert_eq!(merged.delays.percentile(990), whole.delays.percentile(990));
        assert_eq!(merged.sources, whole.sources);
        assert_eq!(merged.sources[0].clients + merged.sources[1].clients, 8);
    }

    /// Counts past 32 bits and peaks past `u32::MAX` survive the trip.
    #[test]
    fn wide_counts_survive() {
        let mut r = Recorder::new(Nanos(1000 * MS), 3, Nanos(100 * MS), Nanos(2000 * MS), 2);
        r.add_counts(1, [5 << 32, 1, 2, 3 << 33, 4, 5, 7 << 32]);
        let mut p = Put::default();
        r.save(&mut p);
        let back = Recorder::load(&mut Take::new(&p.0, "test")).unwrap();
        assert_eq!(
            slot_counts(&back, 1),
            [5 << 32, 1, 2, 3 << 33, 4, 5, 7 << 32]
        );
        assert_eq!(back.keys().next().unwrap().1.peak_in_window, 7 << 32);
    }
}
