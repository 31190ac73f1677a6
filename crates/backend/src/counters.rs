//! Traffic counters of frontends, backends and servers, per worker thread.
//!
//! Every worker thread writes only its own cache-line-aligned slot (a
//! relaxed load and store, no read-modify-write shared with other cores);
//! readers (stats, Prometheus, the runtime API) add the slots up. Counting
//! a request therefore costs the same on 2 cores as on 64.
//!
//! The latency histograms ([`Latencies`]) are per thread the same way.
//!
//! Gauges that must be exact across threads and are read on the hot path
//! (current sessions and connections, which `maxconn`, `minconn` and the
//! queues compare against their limits at each request, queue lengths)
//! live elsewhere as shared atomics: summing per-thread slots at every
//! such read would cost more than the shared update it saves, and a
//! per-thread quota could not be exact at the limit.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Worker slots. Workers 0 to `MAX_THREADS - 2` each own a slot; the last
/// slot is shared, with atomic adds, by the workers beyond them and by
/// every other thread, so counts stay exact for any thread count.
/// Default is 64.
pub const MAX_THREADS: usize = 64;

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(MAX_THREADS - 1) };
}

/// Declares the calling thread as worker `i` (0-based) for counting.
/// Workers from `MAX_THREADS - 1` on share the last slot, where adds are
/// atomic: a single-writer slot is never written by two threads.
pub fn set_thread_slot(i: usize) {
    SLOT.with(|s| s.set(i.min(MAX_THREADS - 1)));
}

/// The counters HAProxy reports, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum C {
    /// Sessions (frontends: accepted connections; backends/servers:
    /// assigned requests or TCP streams). HAProxy's `stot`.
    Stot,
    /// HTTP requests. `req_tot`.
    ReqTot,
    /// Bytes received from the client (frontend/backend: request bytes).
    Bin,
    /// Bytes sent to the client.
    Bout,
    /// Denied requests / responses.
    Dreq,
    Dresp,
    /// Request errors (bad request, timeout, client abort while reading).
    Ereq,
    /// Connection errors to servers.
    Econ,
    /// Response errors (invalid response, server abort, server timeout).
    Eresp,
    /// Retries and redispatches.
    Wretr,
    Wredis,
    /// Data transfers aborted by the client / the server.
    CliAbrt,
    SrvAbrt,
    /// Responses by status class.
    Hrsp1xx,
    Hrsp2xx,
    Hrsp3xx,
    Hrsp4xx,
    Hrsp5xx,
    HrspOther,
    /// Times a server was chosen by the balancer. `lbtot`.
    Lbtot,
    /// New connections opened to servers / reused idle ones.
    ConnNew,
    ConnReused,
}

/// Number of counters in [`C`].
pub const COUNT: usize = C::ConnReused as usize + 1;

#[repr(align(128))]
struct Slot([AtomicU64; COUNT]);

impl Default for Slot {
    fn default() -> Self {
        Slot(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// One set of counters (a frontend, a backend or a server).
pub struct Counters {
    slots: Box<[Slot]>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            slots: (0..MAX_THREADS).map(|_| Slot::default()).collect(),
        }
    }
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("stot", &self.get(C::Stot))
            .field("req_tot", &self.get(C::ReqTot))
            .finish_non_exhaustive()
    }
}

impl Counters {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `n` to counter `c` in the calling thread's slot.
    #[inline]
    pub fn add(&self, c: C, n: u64) {
        let slot = SLOT.with(Cell::get);
        let a = &self.slots[slot].0[c as usize];
        if slot == MAX_THREADS - 1 {
            // The shared slot of non-worker threads.
            a.fetch_add(n, Ordering::Relaxed);
        } else {
            // Single writer: no read-modify-write needed.
            a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }

    #[inline]
    pub fn inc(&self, c: C) {
        self.add(c, 1);
    }

    /// Counts a response status in its class.
    pub fn status(&self, status: u16) {
        let c = match status {
            100..=199 => C::Hrsp1xx,
            200..=299 => C::Hrsp2xx,
            300..=399 => C::Hrsp3xx,
            400..=499 => C::Hrsp4xx,
            500..=599 => C::Hrsp5xx,
            _ => C::HrspOther,
        };
        self.inc(c);
    }

    /// The total of counter `c` over all threads.
    pub fn get(&self, c: C) -> u64 {
        self.slots
            .iter()
            .map(|s| s.0[c as usize].load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sums_every_thread() {
        let c = Arc::new(Counters::new());
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let c = c.clone();
                std::thread::spawn(move || {
                    set_thread_slot(i);
                    for _ in 0..1000 {
                        c.inc(C::ReqTot);
                        c.status(204);
                    }
                    c.add(C::Bin, 10);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        // Non-worker threads share the last slot.
        c.inc(C::ReqTot);
        assert_eq!(c.get(C::ReqTot), 4001);
        assert_eq!(c.get(C::Hrsp2xx), 4000);
        assert_eq!(c.get(C::Bin), 40);
        assert_eq!(c.get(C::Hrsp5xx), 0);
    }

    #[test]
    fn more_workers_than_slots_count_exactly() {
        // The workers past the owned slots count a lot, at the same time:
        // with a single-writer store in a shared slot, updates get lost.
        let c = Arc::new(Counters::new());
        let workers = MAX_THREADS + 10;
        let many = |i: usize| if i >= MAX_THREADS - 2 { 500_000 } else { 1_000 };
        let barrier = Arc::new(std::sync::Barrier::new(workers));
        let hs: Vec<_> = (0..workers)
            .map(|i| {
                let (c, barrier) = (c.clone(), barrier.clone());
                std::thread::spawn(move || {
                    set_thread_slot(i);
                    barrier.wait();
                    for _ in 0..many(i) {
                        c.inc(C::ReqTot);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let want: u64 = (0..workers).map(|i| many(i) as u64).sum();
        assert_eq!(c.get(C::ReqTot), want);
    }
}

/// Latency histograms of a backend or server, for the Prometheus
/// `_bucket` series HAProxy lacks.
#[derive(Default)]
pub struct Latencies {
    /// Time in the queue (HAProxy's %Tw).
    pub queue: Histogram,
    /// Time to connect (or reuse) a server connection (%Tc).
    pub connect: Histogram,
    /// Request sent to response head received (%Tr).
    pub response: Histogram,
    /// First request byte to last response byte (%Ta).
    pub total: Histogram,
}

impl std::fmt::Debug for Latencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Latencies")
    }
}

/// One thread's histogram, alone on its cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Padded(fairlead_stats::LatencyHistogram);

/// A latency histogram recorded per worker thread (the slots of
/// [`set_thread_slot`]) and summed by [`Histogram::snapshot`]: recording
/// touches only the calling thread's histogram, made on its first record
/// (threads that never record cost one empty pointer each). The last slot
/// is shared by the threads beyond the owned slots and by non-worker
/// threads; its adds are atomic, so every observation counts.
pub struct Histogram {
    slots: Box<[OnceLock<Box<Padded>>]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            slots: (0..MAX_THREADS).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl Histogram {
    /// Counts one observation of `micros` microseconds.
    #[inline]
    pub fn record(&self, micros: u64) {
        let slot = SLOT.with(Cell::get);
        if let Some(s) = self.slots.get(slot) {
            s.get_or_init(Box::default).0.record(micros);
        }
    }

    /// The sum of every thread's histogram.
    pub fn snapshot(&self) -> fairlead_stats::HistogramSnapshot {
        let mut total = fairlead_stats::HistogramSnapshot::default();
        for h in self.slots.iter().filter_map(OnceLock::get) {
            total.merge(&h.0.snapshot());
        }
        total
    }
}

#[cfg(test)]
mod histogram_tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn per_thread_histograms_sum_up() {
        let h = Arc::new(Histogram::default());
        let workers = MAX_THREADS + 2;
        let hs: Vec<_> = (0..workers)
            .map(|i| {
                let h = h.clone();
                std::thread::spawn(move || {
                    set_thread_slot(i);
                    for _ in 0..100 {
                        h.record(700);
                    }
                    h.record(2_000_000);
                })
            })
            .collect();
        for t in hs {
            t.join().unwrap();
        }
        h.record(10);
        let s = h.snapshot();
        let n = workers as u64;
        assert_eq!(s.count(), 101 * n + 1);
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[1], 100 * n);
        assert_eq!(s.sum_micros, n * (70_000 + 2_000_000) + 10);
    }
}
