//! Fixed-bucket latency histograms, recorded lock-free.
//!
//! HAProxy only exports averages over the last 1024 requests
//! (`qtime`/`ctime`/`rtime`/`ttime`) and maxima; Fairlead adds Prometheus
//! histograms so that percentiles can be computed server-side
//! (`histogram_quantile`). The bucket bounds are fixed for every histogram
//! so that series from different backends, servers and processes can be
//! summed.
//!
//! Recording is one relaxed `fetch_add` on the bucket plus one on the sum:
//! no lock, no allocation. The counters are shared cache lines; a runtime
//! that records from many threads at very high rates may keep one
//! histogram per thread and [`HistogramSnapshot::merge`] their snapshots.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of the buckets in microseconds (Prometheus `le`, inclusive),
/// 0.5 ms to 60 s. A last implicit bucket (`+Inf`) takes everything above.
pub const BUCKET_BOUNDS_MICROS: [u64; 20] = [
    500, 1_000, 2_500, 5_000, 7_500, 10_000, 25_000, 50_000, 75_000, 100_000, 250_000, 500_000,
    750_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 20_000_000, 30_000_000, 60_000_000,
];

/// Number of buckets including `+Inf`.
pub const BUCKETS: usize = BUCKET_BOUNDS_MICROS.len() + 1;

/// Index of the bucket that counts `micros`.
fn bucket_index(micros: u64) -> usize {
    BUCKET_BOUNDS_MICROS.partition_point(|&b| b < micros)
}

/// A latency histogram that many threads record into at once.
#[derive(Debug)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; BUCKETS],
    sum_micros: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        LatencyHistogram {
            buckets: [ZERO; BUCKETS],
            sum_micros: AtomicU64::new(0),
        }
    }

    /// Counts one observation of `micros` microseconds.
    #[inline]
    pub fn record(&self, micros: u64) {
        self.buckets[bucket_index(micros)].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Copies the counters. Concurrent recordings may land in some buckets
    /// and not others; `count` is always the sum of the buckets read.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut s = HistogramSnapshot::default();
        for (dst, src) in s.buckets.iter_mut().zip(self.buckets.iter()) {
            *dst = src.load(Ordering::Relaxed);
        }
        s.sum_micros = self.sum_micros.load(Ordering::Relaxed);
        s
    }
}

/// Plain copy of a [`LatencyHistogram`]: per-bucket (not cumulative)
/// counts, the last one being `+Inf`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Observations per bucket, aligned with [`BUCKET_BOUNDS_MICROS`] plus
    /// `+Inf` at the end.
    pub buckets: [u64; BUCKETS],
    /// Sum of all observations, in microseconds.
    pub sum_micros: u64,
}

impl HistogramSnapshot {
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Cumulative counts, as Prometheus `_bucket{le}` wants them.
    pub fn cumulative(&self) -> [u64; BUCKETS] {
        let mut out = [0u64; BUCKETS];
        let mut acc = 0u64;
        for (o, b) in out.iter_mut().zip(self.buckets.iter()) {
            acc = acc.wrapping_add(*b);
            *o = acc;
        }
        out
    }

    /// Adds another snapshot (per-thread histograms, or servers into
    /// their backend).
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a = a.wrapping_add(*b);
        }
        self.sum_micros = self.sum_micros.wrapping_add(other.sum_micros);
    }

    /// Upper bound in microseconds of the bucket holding quantile `q`
    /// (0.0..=1.0); `None` when empty or when it falls in `+Inf`.
    pub fn quantile_upper_micros(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let cum = self.cumulative();
        let i = cum.iter().position(|&c| c >= rank)?;
        BUCKET_BOUNDS_MICROS.get(i).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_increasing_and_inclusive() {
        assert!(BUCKET_BOUNDS_MICROS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(500), 0);
        assert_eq!(bucket_index(501), 1);
        assert_eq!(bucket_index(60_000_000), BUCKETS - 2);
        assert_eq!(bucket_index(60_000_001), BUCKETS - 1);
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn record_snapshot_cumulative() {
        let h = LatencyHistogram::new();
        for us in [100, 700, 700, 3_000, 90_000_000] {
            h.record(us);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.sum_micros, 100 + 700 + 700 + 3_000 + 90_000_000);
        let c = s.cumulative();
        assert_eq!(c[0], 1);
        assert_eq!(c[1], 3);
        assert_eq!(c[2], 3);
        assert_eq!(c[3], 4);
        assert_eq!(c[BUCKETS - 2], 4);
        assert_eq!(c[BUCKETS - 1], 5);
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(s.quantile_upper_micros(0.5), Some(1_000));
        assert_eq!(s.quantile_upper_micros(1.0), None);
    }

    #[test]
    fn concurrent_recording_loses_nothing() {
        let h = std::sync::Arc::new(LatencyHistogram::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        h.record((i * 37 + t) % 2_000_000);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(h.snapshot().count(), 40_000);
    }

    #[test]
    fn merge_adds() {
        let a = LatencyHistogram::new();
        let b = LatencyHistogram::new();
        a.record(1);
        b.record(2_000_000);
        let mut s = a.snapshot();
        s.merge(&b.snapshot());
        assert_eq!(s.count(), 2);
        assert_eq!(s.sum_micros, 2_000_001);
    }
}
