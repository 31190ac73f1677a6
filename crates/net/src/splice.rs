//! Kernel splicing: bytes go from one socket to a pipe and from the pipe
//! to the other socket with `splice(2)`, without being copied to user
//! space, as HAProxy does with `option splice-*`.
//!
//! Pipes come from a pool: each thread keeps the pipes it gave back (up to
//! [`LOCAL_KEEP`]), further ones go to a small shared list, and the number
//! of pipes that exist (in use or free) is capped by `maxpipes`
//! ([`configure`]). A stream takes a pipe only while it has bytes to move
//! and gives it back once the pipe is empty, as HAProxy does, so an idle
//! connection holds no pipe. When no pipe can be had (cap reached, the
//! system refused one, or the per-user pipe page budget shrank new pipes
//! below [`MIN_CAPACITY`]), [`take`] returns `None` and the caller copies
//! through a buffer instead.
//!
//! The wrappers ([`Pipe::fill_from`], [`Pipe::drain_to`]) are
//! non-blocking and go through tokio's readiness (`try_io`), so that
//! "would block" clears the socket's readiness and the caller waits with
//! `readable()`/`writable()` as it does for `read`/`write`. The system
//! calls come from `rustix` (safe bindings); this module has no `unsafe`.

use rustix::pipe::{fcntl_getpipe_size, fcntl_setpipe_size, pipe_with, splice};
use rustix::pipe::{PipeFlags, SpliceFlags};
use std::cell::RefCell;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Free pipes one thread keeps for itself; more go to the shared list.
/// Default is 16.
pub const LOCAL_KEEP: usize = 16;

/// Smallest pipe worth splicing through. A user over the kernel's
/// `pipe-user-pages-soft` budget gets one-page pipes, where a buffer copy
/// is cheaper; such pipes are closed at once. Default is 16384 bytes.
pub const MIN_CAPACITY: usize = 16384;

/// The pool's settings, process-wide.
static ENABLED: AtomicBool = AtomicBool::new(false);
static MAXPIPES: AtomicUsize = AtomicUsize::new(0);
/// `tune.pipesize`; 0 keeps the kernel's default size.
static PIPESIZE: AtomicUsize = AtomicUsize::new(0);
/// Pipes handed out and not given back (HAProxy's `PipesUsed`).
static USED: AtomicUsize = AtomicUsize::new(0);
/// Pipes that exist and wait in a pool (HAProxy's `PipesFree`).
static FREE: AtomicUsize = AtomicUsize::new(0);
/// Pipes that exist, used or free: the one counter the cap is checked
/// against (`USED + FREE` read as two counters could miss a pipe moving
/// from one to the other on another thread).
static EXISTING: AtomicUsize = AtomicUsize::new(0);
/// Bytes moved with `splice` into pipes since start (a Fairlead figure,
/// for tests and benchmarks).
static SPLICED: AtomicUsize = AtomicUsize::new(0);
/// Pipes over [`LOCAL_KEEP`] given back on some thread.
static SHARED: Mutex<Vec<Pipe>> = Mutex::new(Vec::new());
static SHARED_LEN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static LOCAL: RefCell<Vec<Pipe>> = const { RefCell::new(Vec::new()) };
}

/// Sets up splicing for the process, before any worker serves.
/// `enabled` false (`nosplice`, `-dS`, or no proxy asking for it) makes
/// [`take`] always return `None`. `maxpipes` caps the pipes that exist at
/// once; `pipesize` (`tune.pipesize`) resizes new pipes when set (Default
/// is none: the kernel's size, 64 KiB on Linux).
pub fn configure(enabled: bool, maxpipes: usize, pipesize: Option<usize>) {
    MAXPIPES.store(maxpipes, Ordering::Relaxed);
    PIPESIZE.store(pipesize.unwrap_or(0), Ordering::Relaxed);
    ENABLED.store(enabled && maxpipes > 0, Ordering::Relaxed);
}

/// Whether splicing is on for the process (see [`configure`]).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The pool's figures, for `show info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PipeStats {
    /// `Maxpipes`: the cap.
    pub max: usize,
    /// `PipesUsed`: pipes held by streams now.
    pub used: usize,
    /// `PipesFree`: pipes that exist and wait in a pool.
    pub free: usize,
    /// Bytes moved through pipes since start.
    pub spliced_bytes: usize,
}

/// The pool's figures now.
pub fn stats() -> PipeStats {
    PipeStats {
        max: MAXPIPES.load(Ordering::Relaxed),
        used: USED.load(Ordering::Relaxed),
        free: FREE.load(Ordering::Relaxed),
        spliced_bytes: SPLICED.load(Ordering::Relaxed),
    }
}

/// A pipe: its two ends, its capacity and the bytes it holds.
#[derive(Debug)]
pub struct Pipe {
    rd: OwnedFd,
    wr: OwnedFd,
    capacity: usize,
    held: usize,
}

/// Takes a pipe from this thread's pool, else from the shared list, else
/// creates one if the cap allows. `None`: copy through a buffer instead.
pub fn take() -> Option<Pipe> {
    if !enabled() {
        return None;
    }
    let p = LOCAL
        .with(|l| l.borrow_mut().pop())
        .or_else(take_shared)
        .inspect(|_| {
            FREE.fetch_sub(1, Ordering::Relaxed);
        });
    match p {
        Some(p) => {
            USED.fetch_add(1, Ordering::Relaxed);
            Some(p)
        }
        None => create(),
    }
}

fn take_shared() -> Option<Pipe> {
    if SHARED_LEN.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let p = s.pop();
    SHARED_LEN.store(s.len(), Ordering::Relaxed);
    p
}

/// A new pipe, counted as used, if the cap and the system allow one of a
/// useful size.
fn create() -> Option<Pipe> {
    let max = MAXPIPES.load(Ordering::Relaxed);
    // The slot is reserved first, so that threads racing for the last
    // one cannot both get it.
    let before = EXISTING.fetch_add(1, Ordering::Relaxed);
    let pipe = if before >= max { None } else { open() };
    match pipe {
        Some(_) => {
            USED.fetch_add(1, Ordering::Relaxed);
        }
        None => {
            EXISTING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    pipe
}

fn open() -> Option<Pipe> {
    let (rd, wr) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).ok()?;
    let want = PIPESIZE.load(Ordering::Relaxed);
    if want > 0 {
        // Beyond /proc/sys/fs/pipe-max-size (unprivileged) the kernel
        // refuses: the default size stays.
        let _ = fcntl_setpipe_size(&wr, want);
    }
    let capacity = fcntl_getpipe_size(&wr).ok()?;
    if capacity < MIN_CAPACITY {
        return None;
    }
    Some(Pipe {
        rd,
        wr,
        capacity,
        held: 0,
    })
}

/// Gives a pipe back. One that still holds bytes (its stream ended before
/// they left) is closed: its bytes must not reach another stream.
pub fn give(p: Pipe) {
    USED.fetch_sub(1, Ordering::Relaxed);
    if p.held > 0 {
        drop(p);
        EXISTING.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    FREE.fetch_add(1, Ordering::Relaxed);
    let rest = LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.len() < LOCAL_KEEP {
            l.push(p);
            None
        } else {
            Some(p)
        }
    });
    if let Some(p) = rest {
        let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        s.push(p);
        SHARED_LEN.store(s.len(), Ordering::Relaxed);
    }
}

/// `splice` with the flags every call here uses: move pages when the
/// kernel can, never block.
fn flags() -> SpliceFlags {
    SpliceFlags::MOVE | SpliceFlags::NONBLOCK
}

impl Pipe {
    /// Bytes waiting in the pipe.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The pipe's size in bytes (`tune.pipesize` or the kernel's).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Moves what `src` holds into the pipe, up to the room left. `Ok(0)`:
    /// the peer closed. `WouldBlock`: nothing to read (the readiness is
    /// cleared, wait with `readable()`), or the pipe is full (drain it
    /// first; only possible when [`Pipe::held`] is not zero).
    pub fn fill_from(&mut self, src: &TcpStream) -> Result<usize> {
        self.fill_from_at_most(src, usize::MAX)
    }

    /// [`Pipe::fill_from`], moving at most `max` bytes: the rest stays in
    /// the socket (an HTTP body of known length, followed by the next
    /// pipelined message). `max` 0 reads nothing and returns `Ok(0)`.
    pub fn fill_from_at_most(&mut self, src: &TcpStream, max: usize) -> Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        let room = self.capacity.saturating_sub(self.held).min(max);
        if room == 0 {
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = src.try_io(Interest::READABLE, || {
            splice(src, None, &self.wr, None, room, flags()).map_err(Error::from)
        })?;
        self.held += n;
        SPLICED.fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }

    /// Moves bytes of the pipe to `dst`. `WouldBlock`: the socket's send
    /// buffer is full (the readiness is cleared, wait with `writable()`).
    pub fn drain_to(&mut self, dst: &TcpStream) -> Result<usize> {
        if self.held == 0 {
            return Ok(0);
        }
        let n = dst.try_io(Interest::WRITABLE, || {
            splice(&self.rd, None, dst, None, self.held, flags()).map_err(Error::from)
        })?;
        if n == 0 {
            return Err(Error::new(ErrorKind::WriteZero, "splice wrote nothing"));
        }
        self.held = self.held.saturating_sub(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test owns the process-wide settings (tests run in parallel).
    #[test]
    fn pool_caps_reuses_and_splices() {
        // Two threads racing to take and give back the only pipe allowed:
        // never a second one (a pipe moving between used and free on one
        // thread once let the other create another).
        configure(true, 1, None);
        let race = || {
            std::thread::spawn(|| {
                for _ in 0..20_000 {
                    if let Some(p) = take() {
                        give(p);
                    }
                }
                // This thread's pooled pipe closes with it.
                LOCAL.with(|l| l.borrow_mut().clear());
            })
        };
        let (a, b) = (race(), race());
        a.join().expect("racer a");
        b.join().expect("racer b");
        // At rest: no pipe used, at most one ever made.
        let st = stats();
        assert!(st.used == 0 && st.free <= 1, "{st:?}");
        // Start the rest from an empty pool.
        FREE.store(0, Ordering::Relaxed);
        EXISTING.store(0, Ordering::Relaxed);
        configure(true, 2, Some(131072));
        let a = take().expect("first pipe");
        let b = take().expect("second pipe");
        assert_eq!(a.capacity(), 131072, "tune.pipesize applied");
        assert!(take().is_none(), "the cap of 2 is reached");
        assert_eq!(stats().used, 2);
        give(a);
        assert_eq!((stats().used, stats().free), (1, 1));
        let c = take().expect("the pooled pipe again");
        assert_eq!((stats().used, stats().free), (2, 0));
        give(b);
        give(c);
        assert_eq!((stats().used, stats().free), (0, 2));

        // Bytes through a pipe, socket to socket, unchanged.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.92:0")
                .await
                .expect("bind");
            let addr = l.local_addr().expect("addr");
            let (a, b) = tokio::join!(TcpStream::connect(addr), l.accept());
            let (mut tx, rx) = (a.expect("connect"), b.expect("accept").0);
            let l2 = tokio::net::TcpListener::bind("127.0.0.92:0")
                .await
                .expect("bind");
            let addr2 = l2.local_addr().expect("addr");
            let (c, d) = tokio::join!(TcpStream::connect(addr2), l2.accept());
            let (out, mut end) = (c.expect("connect"), d.expect("accept").0);
            let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
            let send = async {
                tokio::io::AsyncWriteExt::write_all(&mut tx, &data)
                    .await
                    .expect("send");
                drop(tx);
            };
            let relay = async {
                let mut p = take().expect("pipe");
                loop {
                    rx.readable().await.expect("readable");
                    match p.fill_from(&rx) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                        Err(e) => panic!("splice in: {e}"),
                    }
                    while p.held() > 0 {
                        match p.drain_to(&out) {
                            Ok(_) => {}
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                out.writable().await.expect("writable")
                            }
                            Err(e) => panic!("splice out: {e}"),
                        }
                    }
                }
                give(p);
                drop(out);
            };
            let recv = async {
                let mut got = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut end, &mut got)
                    .await
                    .expect("read");
                got
            };
            let deadline = std::time::Duration::from_secs(10);
            let ((), (), got) =
                tokio::time::timeout(deadline, async { tokio::join!(send, relay, recv) })
                    .await
                    .expect("the transfer ends before the deadline");
            assert_eq!(got.len(), data.len());
            assert!(got == data, "bytes differ");
        });
        assert!(stats().spliced_bytes >= 200_000);
        configure(false, 2, None);
        assert!(take().is_none(), "disabled");
    }
}
