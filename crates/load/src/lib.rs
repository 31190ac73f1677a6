//! fairlead-load: an HTTP/1.1 and HTTP/2 load generator in the spirit of h1load and
//! wrk2.
//!
//! * [`args`]: command line ([`args::USAGE`] documents every option).
//! * `client` (private): worker threads, connections, response parsing.
//! * [`h2`]: the HTTP/2 client side (`--h2`), on `fairlead-h2`.
//! * `tls` (private): rustls configuration and the TLS connection driver.
//! * [`stats`]: counters, HDR histograms, per-second samples.
//! * [`report`]: live lines, final text report, JSON.
//! * [`plot`]: the SVG charts.
//!
//! [`run`] executes a whole test and returns its [`Summary`]; the binary is
//! a thin wrapper around [`prepare`] / [`Run::execute`] adding Ctrl-C.
//!
//! ```no_run
//! let opts = match fairlead_load::args::parse(
//!     ["-n", "100", "-q", "http://127.0.0.1:8000/"].map(String::from),
//! ).unwrap() {
//!     fairlead_load::args::Command::Run(o) => *o,
//!     _ => unreachable!(),
//! };
//! let s = fairlead_load::run(&opts, &mut std::io::sink()).unwrap();
//! assert_eq!(s.totals.responses, 100);
//! ```

pub mod args;
mod client;
pub mod h2;
pub mod plot;
pub mod report;
pub mod stats;
mod tls;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use args::Options;
use client::{Event, Shared};
use stats::{Hists, Sample, ThreadCounters, Totals};

/// Everything measured by one run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Wall time from start to the end of the last response.
    pub elapsed: Duration,
    /// Ramp-up time (left out of the percentiles).
    pub rampup: Duration,
    /// Threads used.
    pub threads: usize,
    /// Target connection count.
    pub conns: usize,
    /// Final counters.
    pub totals: Totals,
    /// Latencies of requests sent after the ramp-up, in ns.
    pub hists: Hists,
    /// Per-second timeline.
    pub timeline: Vec<Sample>,
    /// Requested rate (`-R`), if any.
    pub rate: Option<f64>,
}

/// A prepared run: threads not started yet.
pub struct Run {
    opts: Options,
    tx: mpsc::Sender<Event>,
    rx: mpsc::Receiver<Event>,
}

/// Ends a run early (as at the end of `-d`); cloneable and sendable, e.g.
/// to a signal-handling thread.
#[derive(Clone)]
pub struct StopHandle(mpsc::Sender<Event>);

impl StopHandle {
    pub fn stop(&self) {
        let _ = self.0.send(Event::Stop);
    }
}

/// Validates `opts` and prepares a run.
pub fn prepare(opts: &Options) -> io::Result<Run> {
    if opts.urls.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no URL"));
    }
    if opts.h2 {
        h2::validate(opts)?;
    }
    let (tx, rx) = mpsc::channel();
    Ok(Run {
        opts: opts.clone(),
        tx,
        rx,
    })
}

/// Runs a whole test: prints live lines to `out` (unless quiet), writes the
/// `--json` and `--plot` files, returns the summary. The final text report
/// is left to the caller ([`report::text`]).
pub fn run(opts: &Options, out: &mut dyn Write) -> io::Result<Summary> {
    prepare(opts)?.execute(out)
}

impl Run {
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.tx.clone())
    }

    /// Starts the threads and reports every second until they are done.
    pub fn execute(self, out: &mut dyn Write) -> io::Result<Summary> {
        let o = &self.opts;
        let threads = o.effective_threads();
        let (stop_tx, stop_rx) = watch::channel(false);
        let reqs = client::Prepared::build(o)?;
        let tls = if o.urls.iter().any(|u| u.tls) {
            Some(tls::client_config(&o.tls)?)
        } else {
            None
        };
        let start = Instant::now();
        let sh = Arc::new(Shared {
            opts: o.clone(),
            reqs,
            h2: if o.h2 { h2::build(o) } else { Vec::new() },
            tls,
            start,
            tickets: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stop_rx,
        });
        let counters: Vec<Arc<ThreadCounters>> = (0..threads)
            .map(|_| Arc::new(ThreadCounters::default()))
            .collect();
        let mut joins = Vec::with_capacity(threads);
        for (t, tc) in counters.iter().enumerate() {
            // Connections interleaved across threads so the ramp-up is
            // spread over all of them.
            let ids: Vec<usize> = (t..o.conns).step_by(threads).collect();
            match client::spawn_worker(t, sh.clone(), tc.clone(), ids, self.tx.clone()) {
                Ok(j) => joins.push(j),
                Err(e) => {
                    sh.stop.store(true, Relaxed);
                    let _ = stop_tx.send(true);
                    for j in joins {
                        let _ = j.join();
                    }
                    return Err(e);
                }
            }
        }
        let stop = |sh: &Shared| {
            sh.stop.store(true, Relaxed);
            let _ = stop_tx.send(true);
        };
        if !o.quiet {
            writeln!(out, "{}", report::LIVE_HEADER)?;
        }
        let deadline = o.duration.map(|d| start + d);
        let mut timeline = Vec::new();
        let mut prev = Totals::default();
        let mut prev_t = start;
        let mut tick = 1u32;
        let mut done = 0;
        let mut interval = Hists::new();
        while done < threads {
            let next = start + Duration::from_secs(tick as u64);
            let wake = match deadline {
                Some(d) if !sh.stop.load(Relaxed) => next.min(d),
                _ => next,
            };
            match self
                .rx
                .recv_timeout(wake.saturating_duration_since(Instant::now()))
            {
                Ok(Event::WorkerDone) => done += 1,
                Ok(Event::Stop) => stop(&sh),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) && !sh.stop.load(Relaxed) {
                stop(&sh);
            }
            if now >= next {
                tick += 1;
                let s = sample(&counters, &mut interval, start, &mut prev, &mut prev_t, now);
                if !o.quiet {
                    writeln!(out, "{}", report::live_line(&s))?;
                }
                timeline.push(s);
            }
        }
        let mut hists = Hists::new();
        for j in joins {
            match j.join() {
                Ok(h) => hists.add(&h),
                Err(_) => return Err(io::Error::other("worker thread panicked")),
            }
        }
        let end = Instant::now();
        // Last partial second, if it saw anything.
        if end.duration_since(prev_t) >= Duration::from_millis(50) {
            let s = sample(&counters, &mut interval, start, &mut prev, &mut prev_t, end);
            if !o.quiet {
                writeln!(out, "{}", report::live_line(&s))?;
            }
            timeline.push(s);
        }
        let summary = Summary {
            elapsed: end.duration_since(start),
            rampup: o.rampup,
            threads,
            conns: o.conns,
            totals: Totals::gather(&counters),
            hists,
            timeline,
            rate: o.rate,
        };
        if let Some(p) = &o.json {
            std::fs::write(p, report::json(&summary))?;
        }
        if let Some(p) = &o.plot {
            std::fs::write(p, plot::svg(&summary))?;
        }
        Ok(summary)
    }
}

/// Builds the sample for the interval `(prev_t, now]` and moves the
/// "previous" markers forward.
fn sample(
    counters: &[Arc<ThreadCounters>],
    interval: &mut Hists,
    start: Instant,
    prev: &mut Totals,
    prev_t: &mut Instant,
    now: Instant,
) -> Sample {
    let t = Totals::gather(counters);
    interval.reset();
    for c in counters {
        if let Ok(mut h) = c.interval.lock() {
            interval.add(&h);
            h.reset();
        }
    }
    let span = now.duration_since(*prev_t).as_secs_f64().max(1e-9);
    let p50 = |h: &hdrhistogram::Histogram<u64>| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(0.5)
        }
    };
    let s = Sample {
        time: now.duration_since(start).as_secs_f64(),
        span,
        open: t.open(),
        total_conns: t.opened,
        total_reqs: t.responses,
        reqs_per_s: (t.responses - prev.responses) as f64 / span,
        conns_per_s: (t.opened - prev.opened) as f64 / span,
        bytes_per_s: (t.bytes - prev.bytes) as f64 / span,
        errors: t.error_count(),
        ttfb_p50: p50(&interval.ttfb),
        ttlb_p50: p50(&interval.ttlb),
    };
    *prev = t;
    *prev_t = now;
    s
}
