//! Counters and latency histograms.
//!
//! Every worker thread owns a [`ThreadCounters`] (atomics on their own cache
//! lines, summed by the reporting thread each second) and full-run
//! [`Hists`] that it returns when done. The per-second medians come from a
//! small mutex-protected interval histogram pair that the reporter swaps out
//! every second.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use hdrhistogram::Histogram;

/// Error kinds, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrKind {
    /// Connection could not be established.
    Connect = 0,
    /// Read failed, or the server closed before the response was complete.
    Read = 1,
    /// Sending the request failed.
    Write = 2,
    /// No complete response within `--timeout`.
    Timeout = 3,
    /// Unparsable response.
    Proto = 4,
    /// TLS failure: handshake (certificate, version, alert...) or a later
    /// TLS record-layer error.
    Tls = 5,
    /// HTTP/2: the server reset the stream (RST_STREAM) before the
    /// response was complete.
    Reset = 6,
}

/// Number of [`ErrKind`] values.
pub const ERR_KINDS: usize = 7;

/// Names of [`ErrKind`] values, by index.
pub const ERR_NAMES: [&str; ERR_KINDS] = [
    "connect", "read", "write", "timeout", "proto", "tls", "reset",
];

/// Largest recordable latency (1 hour, in ns); larger values saturate.
const MAX_NS: u64 = 3_600_000_000_000;

/// TTFB/TTLB histograms (and TLS handshake durations), values in
/// nanoseconds.
#[derive(Debug, Clone)]
pub struct Hists {
    pub ttfb: Histogram<u64>,
    pub ttlb: Histogram<u64>,
    /// TLS handshakes, from the end of the TCP connect to the end of the
    /// handshake (empty for plain http).
    pub handshake: Histogram<u64>,
}

impl Default for Hists {
    fn default() -> Self {
        Self::new()
    }
}

impl Hists {
    pub fn new() -> Hists {
        let h = || Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds");
        Hists {
            ttfb: h(),
            ttlb: h(),
            handshake: h(),
        }
    }

    pub fn record_handshake(&mut self, ns: u64) {
        self.handshake.saturating_record(ns.clamp(1, MAX_NS));
    }

    pub fn record(&mut self, ttfb_ns: u64, ttlb_ns: u64) {
        self.ttfb.saturating_record(ttfb_ns.clamp(1, MAX_NS));
        self.ttlb.saturating_record(ttlb_ns.clamp(1, MAX_NS));
    }

    pub fn add(&mut self, other: &Hists) {
        // Same bounds on both sides, cannot fail.
        let _ = self.ttfb.add(&other.ttfb);
        let _ = self.ttlb.add(&other.ttlb);
        let _ = self.handshake.add(&other.handshake);
    }

    pub fn reset(&mut self) {
        self.ttfb.reset();
        self.ttlb.reset();
        self.handshake.reset();
    }
}

/// One thread's live counters.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct ThreadCounters {
    /// Connections successfully opened.
    pub opened: AtomicU64,
    /// Connections closed (after being opened).
    pub closed: AtomicU64,
    /// Requests sent (written completely or not).
    pub sent: AtomicU64,
    /// Complete responses received.
    pub responses: AtomicU64,
    /// Bytes received.
    pub bytes: AtomicU64,
    /// Completed full TLS handshakes.
    pub tls_full: AtomicU64,
    /// Completed resumed TLS handshakes.
    pub tls_resumed: AtomicU64,
    /// By [`ErrKind`].
    pub errors: [AtomicU64; ERR_KINDS],
    /// By status class: index 1 to 5 for 1xx to 5xx, 0 for anything else.
    pub status: [AtomicU64; 6],
    /// Latencies of the current second (for the live medians).
    pub interval: Mutex<Hists>,
}

impl ThreadCounters {
    pub fn error(&self, k: ErrKind) {
        self.errors[k as usize].fetch_add(1, Relaxed);
    }

    pub fn status(&self, code: u16) {
        let class = match code / 100 {
            c @ 1..=5 => c as usize,
            _ => 0,
        };
        self.status[class].fetch_add(1, Relaxed);
    }
}

/// Sum of all threads' counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub opened: u64,
    pub closed: u64,
    pub sent: u64,
    pub responses: u64,
    pub bytes: u64,
    /// Completed full TLS handshakes.
    pub tls_full: u64,
    /// Completed resumed TLS handshakes.
    pub tls_resumed: u64,
    pub errors: [u64; ERR_KINDS],
    pub status: [u64; 6],
}

impl Totals {
    pub fn gather(threads: &[std::sync::Arc<ThreadCounters>]) -> Totals {
        let mut t = Totals::default();
        for c in threads {
            t.opened += c.opened.load(Relaxed);
            t.closed += c.closed.load(Relaxed);
            t.sent += c.sent.load(Relaxed);
            t.responses += c.responses.load(Relaxed);
            t.bytes += c.bytes.load(Relaxed);
            t.tls_full += c.tls_full.load(Relaxed);
            t.tls_resumed += c.tls_resumed.load(Relaxed);
            for i in 0..ERR_KINDS {
                t.errors[i] += c.errors[i].load(Relaxed);
            }
            for i in 0..6 {
                t.status[i] += c.status[i].load(Relaxed);
            }
        }
        t
    }

    /// All errors together.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Completed TLS handshakes, full and resumed.
    pub fn handshakes(&self) -> u64 {
        self.tls_full + self.tls_resumed
    }

    /// Connections currently open.
    pub fn open(&self) -> u64 {
        self.opened.saturating_sub(self.closed)
    }
}

/// One line of the per-second timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the start, at the end of this interval.
    pub time: f64,
    /// Interval length in seconds (1 except for the last one).
    pub span: f64,
    pub open: u64,
    pub total_conns: u64,
    pub total_reqs: u64,
    pub reqs_per_s: f64,
    pub conns_per_s: f64,
    pub bytes_per_s: f64,
    /// Cumulative errors.
    pub errors: u64,
    /// Medians over this interval, in ns (0 when no response).
    pub ttfb_p50: u64,
    pub ttlb_p50: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hists_merge() {
        let mut a = Hists::new();
        let mut b = Hists::new();
        for i in 1..=100u64 {
            a.record(i * 1000, i * 2000);
        }
        b.record(0, u64::MAX);
        b.record_handshake(5);
        a.add(&b);
        assert_eq!(a.ttfb.len(), 101);
        assert_eq!(a.handshake.len(), 1);
        assert_eq!(a.ttfb.min(), 1);
        assert!(a.ttlb.max() >= MAX_NS);
        let p50 = a.ttfb.value_at_quantile(0.5);
        assert!((49_000..=51_000).contains(&p50), "{p50}");
        a.reset();
        assert_eq!(a.ttfb.len(), 0);
    }

    #[test]
    fn status_classes() {
        let c = ThreadCounters::default();
        for s in [100, 200, 204, 302, 404, 503, 600] {
            c.status(s);
        }
        let t = Totals::gather(&[std::sync::Arc::new(c)]);
        assert_eq!(t.status, [1, 1, 2, 1, 1, 1]);
    }
}
