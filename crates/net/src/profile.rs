//! Task profiling (`set profiling tasks on`, `show profiling`).
//!
//! Each kind of task (HTTP session, TCP session, accept loop) is wrapped in
//! [`Profiled`]; while profiling is on, every poll of the task counts one
//! call and adds the thread CPU time it used and the time it waited since
//! it was last woken (its scheduling latency), as HAProxy's task profiler
//! reports them. When off, the cost is one relaxed atomic load per poll.
//! Figures are kept per worker thread and summed when read.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Kinds of task, as listed by `show profiling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    HttpSession = 0,
    TcpSession = 1,
    Accept = 2,
}

/// Names in `show profiling`.
pub const TASK_NAMES: [&str; 3] = ["http_session", "tcp_session", "accept_loop"];

const SLOTS: usize = 65;

#[derive(Default)]
struct Row {
    calls: AtomicU64,
    cpu_ns: AtomicU64,
    lat_ns: AtomicU64,
}

#[repr(align(128))]
#[derive(Default)]
struct Slot([Row; 3]);

struct Table {
    slots: Vec<Slot>,
}

static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
static STARTED: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

fn table() -> &'static Table {
    TABLE.get_or_init(|| Table {
        slots: (0..SLOTS).map(|_| Slot::default()).collect(),
    })
}

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(SLOTS - 1) };
}

/// Declares the calling thread as worker `i` for profiling.
pub fn set_thread_slot(i: usize) {
    SLOT.with(|s| s.set(i.min(SLOTS - 2)));
}

/// Turns profiling on (resetting the figures) or off.
pub fn set_enabled(on: bool) {
    if on && !ENABLED.load(Ordering::Relaxed) {
        for slot in &table().slots {
            for r in &slot.0 {
                r.calls.store(0, Ordering::Relaxed);
                r.cpu_ns.store(0, Ordering::Relaxed);
                r.lat_ns.store(0, Ordering::Relaxed);
            }
        }
        *STARTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
    ENABLED.store(on, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Since when profiling has been measuring.
pub fn started() -> Option<Instant> {
    *STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// (name, calls, cpu_ns, lat_ns) per task kind, all threads summed.
pub fn report() -> Vec<(&'static str, u64, u64, u64)> {
    (0..TASK_NAMES.len())
        .map(|k| {
            let sum = |f: fn(&Row) -> &AtomicU64| -> u64 {
                table()
                    .slots
                    .iter()
                    .map(|s| f(&s.0[k]).load(Ordering::Relaxed))
                    .sum()
            };
            (
                TASK_NAMES[k],
                sum(|r| &r.calls),
                sum(|r| &r.cpu_ns),
                sum(|r| &r.lat_ns),
            )
        })
        .collect()
}

/// CPU time consumed by the calling thread, in nanoseconds.
#[allow(unsafe_code)]
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Remembers when a task was woken, then wakes it.
struct Stamp {
    woken: std::sync::Mutex<Option<Instant>>,
    inner: Waker,
}

impl Wake for Stamp {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if let Ok(mut w) = self.woken.lock() {
            w.get_or_insert_with(Instant::now);
        }
        self.inner.wake_by_ref();
    }
}

pin_project_lite::pin_project! {
    /// A future whose polls are profiled while profiling is on.
    pub struct Profiled<F> {
        #[pin]
        inner: F,
        kind: TaskKind,
        stamp: Option<Arc<Stamp>>,
    }
}

impl<F> Profiled<F> {
    pub fn new(kind: TaskKind, inner: F) -> Self {
        Profiled {
            inner,
            kind,
            stamp: None,
        }
    }
}

impl<F: Future> Future for Profiled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !ENABLED.load(Ordering::Relaxed) {
            *this.stamp = None;
            return this.inner.poll(cx);
        }
        let now = Instant::now();
        // Latency: from the wake-up to this poll.
        let lat = this
            .stamp
            .as_ref()
            .and_then(|s| s.woken.lock().ok().and_then(|mut w| w.take()))
            .map_or(0, |w| now.duration_since(w).as_nanos() as u64);
        // Wake through a stamping waker (allocated only while profiling).
        let stamp = match this.stamp {
            Some(s) if s.inner.will_wake(cx.waker()) => s.clone(),
            _ => {
                let s = Arc::new(Stamp {
                    woken: std::sync::Mutex::new(None),
                    inner: cx.waker().clone(),
                });
                *this.stamp = Some(s.clone());
                s
            }
        };
        let waker = Waker::from(stamp);
        let mut cx2 = Context::from_waker(&waker);
        let cpu0 = thread_cpu_ns();
        let r = this.inner.poll(&mut cx2);
        let cpu = thread_cpu_ns().saturating_sub(cpu0);
        let row = &table().slots[SLOT.with(Cell::get)].0[*this.kind as usize];
        let add = |a: &AtomicU64, n: u64| a.fetch_add(n, Ordering::Relaxed);
        add(&row.calls, 1);
        add(&row.cpu_ns, cpu);
        add(&row.lat_ns, lat);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_polls_only_while_enabled() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        set_thread_slot(3);
        rt.block_on(Profiled::new(TaskKind::Accept, async {
            tokio::task::yield_now().await;
        }));
        let before = report()[2].1;
        set_enabled(true);
        rt.block_on(Profiled::new(TaskKind::Accept, async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
        }));
        set_enabled(false);
        let (name, calls, _cpu, _lat) = report()[2];
        assert_eq!(name, "accept_loop");
        assert!(calls >= 4 && calls > before, "{calls}");
    }
}
