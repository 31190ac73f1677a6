//! The io_uring I/O path of a worker (`io-uring on`, or
//! `FAIRLEAD_IO_URING=1` in the environment).
//!
//! One ring per worker thread, created by [`Ring::start`] inside the
//! worker's tokio `current_thread` runtime. Sockets served through it
//! ([`UringSock`], [`UringListener`]) do no `read`, `write`, `accept`,
//! `connect`, `shutdown` or `epoll_ctl` system call of their own: every
//! operation is a submission queue entry, and completions come back as
//! readiness for the layers above, which keep their non-blocking
//! `try_read` / `try_write` / "wait until ready" shape:
//!
//! - **multishot accept** on each listener, registered as a fixed file
//!   (one submission serves every connection until it is cancelled);
//! - **multishot receive with a provided buffer ring** per connection: the
//!   kernel picks a buffer of the ring when data arrives, so an idle
//!   connection holds none. The buffers are given by the caller (the
//!   worker's per-thread pool) and go back to the ring as soon as the
//!   proxy has copied their bytes out (or sent them, when they were lent
//!   to another connection). When the ring runs dry, a receive
//!   ends with `ENOBUFS`; the connection is noted and its receive re-armed
//!   when a buffer comes back;
//! - **sends from a per-connection send queue**: `try_write` copies into a
//!   queue (taken from a per-ring free list while it holds data, none when
//!   drained) and one send per connection is in flight at a time, so two
//!   sends can never reorder. Writes of one loop turn leave in one send;
//! - **forwarding without copies** between two connections of the ring
//!   ([`UringSock::lend_from`]): received chunks are sent from the very
//!   receive buffers the kernel filled (see `loan.rs`);
//! - **batched submission**: entries are only queued while tasks run; the
//!   ring's driver task, woken by the first entry of a turn, submits them
//!   all and reaps the completions with one `io_uring_enter` per turn;
//! - `IORING_SETUP_SINGLE_ISSUER` and `IORING_SETUP_DEFER_TASKRUN`
//!   (completions are processed when the worker asks, never by an
//!   interrupting task-work run), a registered ring descriptor
//!   (`IORING_REGISTER_RING_FDS`), and an eventfd on which the worker's
//!   event loop waits when nothing else is ready.
//!
//! Accepted and connected sockets stay ordinary descriptors (socket
//! options, `getpeername`, `SO_LINGER` work as before); only the listeners
//! are fixed files, because a per-connection registration would cost one
//! more system call per connection than it saves.
//!
//! A closed connection's queued bytes still leave, then its descriptor is
//! closed through the ring; a reset (`SO_LINGER` 0) drops them.

#![deny(unsafe_op_in_unsafe_fn)]

mod bufring;
mod driver;
mod listen;
mod loan;
mod send;
mod sock;

pub use listen::{release_listeners, UringListener};
pub use sock::UringSock;

use std::cell::{Cell, OnceCell, RefCell};
use std::io;
use std::rc::Rc;

/// Settings of a worker's ring.
#[derive(Debug, Clone)]
pub struct Config {
    /// Submission queue entries. Default is 1024 (the completion queue has
    /// four times as many).
    pub entries: u32,
    /// Receive buffers in the provided buffer ring (a power of two).
    /// Default is 256.
    pub recv_bufs: u16,
    /// Bytes queued for sending per connection before `try_write` says
    /// "would block". Default is 65536.
    pub send_queue: usize,
    /// How long a dropped connection may keep its queued bytes waiting for
    /// a peer that does not read: then they are dropped and the connection
    /// is reset. The kernel bounds an orphaned socket's unsent data the
    /// same way (`tcp_orphan_retries`). Default is 30 s.
    pub linger: std::time::Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            entries: 1024,
            recv_bufs: 256,
            send_queue: 65536,
            linger: std::time::Duration::from_secs(30),
        }
    }
}

/// One worker's ring. See the crate documentation.
pub struct Ring {
    st: RefCell<driver::State>,
    /// Entries were queued since the last submission: the driver task is
    /// already woken.
    dirty: Cell<bool>,
    /// The driver task's waker.
    driver: RefCell<Option<std::task::Waker>>,
    evfd: tokio::io::unix::AsyncFd<std::fs::File>,
}

thread_local! {
    static CURRENT: OnceCell<Rc<Ring>> = const { OnceCell::new() };
}

/// The ring of this thread, if its worker runs on io_uring.
pub fn current() -> Option<Rc<Ring>> {
    CURRENT.with(|c| c.get().cloned())
}

/// Keeps `cx`'s waker in `slot` (a clone only when it changed).
pub(crate) fn set_waker(slot: &mut Option<std::task::Waker>, cx: &std::task::Context<'_>) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        *slot = Some(cx.waker().clone());
    }
}

/// The counters of one ring that other threads read: summed over every
/// ring of the process by [`unsent`] and [`lent`].
#[derive(Default)]
pub(crate) struct Shared {
    /// Connections with bytes queued or in flight, live or dropped (a
    /// dropped one closes once they left): [`unsent`].
    pub(crate) unsent: std::sync::atomic::AtomicUsize,
    /// Bytes lent ([`UringSock::lend_from`]): [`lent`].
    pub(crate) lent: std::sync::atomic::AtomicU64,
}

/// The shared counters of every ring of the process.
static RINGS: std::sync::Mutex<Vec<std::sync::Arc<Shared>>> = std::sync::Mutex::new(Vec::new());

/// New counters for a ring, listed for [`unsent`] and [`lent`].
fn register_ring() -> std::sync::Arc<Shared> {
    let c = std::sync::Arc::new(Shared::default());
    if let Ok(mut l) = RINGS.lock() {
        l.push(c.clone());
    }
    c
}

/// The sum of one counter over every ring of the process.
fn sum_rings(f: impl Fn(&Shared) -> u64) -> u64 {
    RINGS.lock().map_or(0, |l| l.iter().map(|c| f(c)).sum())
}

/// Bytes every ring of the process forwarded without a copy since it
/// started ([`UringSock::lend_from`]): `show info`'s `UringLentBytes`.
pub fn lent() -> u64 {
    sum_rings(|c| c.lent.load(std::sync::atomic::Ordering::Relaxed))
}

/// Connections of every ring in the process with bytes still to send:
/// queued by a write, or in a send in flight. A write returns once its
/// bytes are queued, so a session can end (and its handle be dropped)
/// before they leave; a soft stop waits for this to reach 0 before the
/// process exits, or they would be lost with the ring. Read it after the
/// count of live sessions: a session's last write is counted here before
/// the session ends.
pub fn unsent() -> usize {
    sum_rings(|c| c.unsent.load(std::sync::atomic::Ordering::SeqCst) as u64) as usize
}

/// Whether this kernel and process can set up a ring as [`Ring::start`]
/// does (io_uring may be disabled by `kernel.io_uring_disabled` or a
/// seccomp filter).
pub fn available() -> io::Result<()> {
    driver::build(&Config {
        entries: 8,
        ..Config::default()
    })
    .map(drop)
}

impl Ring {
    /// Sets up this thread's ring with `bufs` as its receive buffers (each
    /// at least 1 KiB; `cfg.recv_bufs` of them are used), and spawns its
    /// driver task on the current `LocalSet`. Call once per worker thread,
    /// from inside its runtime.
    pub fn start(cfg: &Config, bufs: Vec<Vec<u8>>) -> io::Result<Rc<Ring>> {
        let st = driver::State::new(cfg, bufs)?;
        let evfd = st.eventfd()?;
        let ring = Rc::new(Ring {
            st: RefCell::new(st),
            dirty: Cell::new(false),
            driver: RefCell::new(None),
            // `with_interest` is deprecated because a `T` that merely
            // borrows its descriptor could close it while registered; a
            // `File` owns its descriptor, as the replacement (an unsafe fn)
            // asks callers to guarantee.
            #[allow(deprecated)]
            evfd: tokio::io::unix::AsyncFd::with_interest(evfd, tokio::io::Interest::READABLE)?,
        });
        if CURRENT.with(|c| c.set(ring.clone())).is_err() {
            return Err(io::Error::other("this thread already has a ring"));
        }
        tokio::task::spawn_local(driver::drive(ring.clone()));
        Ok(ring)
    }

    /// Wakes the driver task once per turn, when the first entry is queued.
    fn kick(&self) {
        if !self.dirty.replace(true) {
            if let Some(w) = self.driver.borrow().as_ref() {
                w.wake_by_ref();
            }
        }
    }

    /// This ring's connections with bytes still to send (see [`unsent`]).
    pub fn unsent(&self) -> usize {
        self.st.borrow().unsent()
    }

    /// Counters of this ring, for tests and `show info`-like output.
    pub fn stats(&self) -> Stats {
        let st = self.st.borrow();
        Stats {
            bufs_free: st.free_bufs as u64,
            ..st.stats
        }
    }
}

/// What a ring did since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// `io_uring_enter` calls.
    pub enters: u64,
    /// Driver turns (wake-ups of the driver task).
    pub turns: u64,
    /// Completions reaped.
    pub completions: u64,
    /// Receives that ended because the buffer ring was empty.
    pub starved: u64,
    /// Connections accepted through multishot accepts.
    pub accepted: u64,
    /// Receive buffers in the ring now (not holding received bytes).
    pub bufs_free: u64,
    /// Dropped connections reset because their queued bytes had not left
    /// after [`Config::linger`].
    pub linger_resets: u64,
    /// Bytes forwarded from one connection's receive buffers to another's
    /// send queue without a copy ([`UringSock::lend_from`]).
    pub lent: u64,
}
