//! Per-thread pool of fixed-size I/O buffers.
//!
//! Every worker thread calls [`init`] with `tune.bufsize` before serving.
//! [`take`] pops a buffer (or allocates one when the pool is empty) and
//! [`give`] pushes it back. The pool is thread-local: no lock, no atomics.
//! In steady state no buffer is allocated: the pool holds as many buffers as
//! the peak number of connections that were moving data at the same time.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Default buffer size when [`init`] was not called. Default is 16384, as
/// HAProxy's `tune.bufsize`.
pub const DEFAULT_BUFSIZE: usize = 16384;

/// Buffers kept in one thread's pool at most; beyond, they are freed.
/// Default is 4096.
pub const MAX_POOLED: usize = 4096;

struct Pool {
    size: usize,
    free: Vec<Vec<u8>>,
    allocated: usize,
    /// This thread's figures as other threads may read them (`show pools`).
    public: Option<std::sync::Arc<Published>>,
}

/// A thread's pool figures, written only by that thread.
#[derive(Debug, Default)]
pub struct Published {
    pub size: AtomicUsize,
    /// Buffers that exist (in use or free).
    pub allocated: AtomicUsize,
    /// Buffers waiting in the pool.
    pub free: AtomicUsize,
}

static REGISTRY: Mutex<Vec<std::sync::Arc<Published>>> = Mutex::new(Vec::new());

impl Pool {
    fn publish(&self) {
        if let Some(p) = &self.public {
            p.allocated.store(self.allocated, Ordering::Relaxed);
            p.free.store(self.free.len(), Ordering::Relaxed);
        }
    }
}

/// The buffer pools of every worker thread, summed: (buffer size,
/// buffers allocated, buffers in use).
pub fn totals() -> (usize, usize, usize) {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let size = reg
        .first()
        .map_or(DEFAULT_BUFSIZE, |p| p.size.load(Ordering::Relaxed));
    let allocated: usize = reg
        .iter()
        .map(|p| p.allocated.load(Ordering::Relaxed))
        .sum();
    let free: usize = reg.iter().map(|p| p.free.load(Ordering::Relaxed)).sum();
    (size, allocated, allocated.saturating_sub(free))
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { size: DEFAULT_BUFSIZE, free: Vec::new(), allocated: 0, public: None }) };
    static OUT: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Takes an empty output vector for building a rewritten head.
pub fn take_out() -> Vec<u8> {
    OUT.with(|o| o.borrow_mut().pop())
        .unwrap_or_else(|| Vec::with_capacity(OUT_INITIAL))
}

/// Initial capacity of output vectors: most rewritten heads fit. Default
/// is 1024 bytes; a vector grows when a head needs more.
pub const OUT_INITIAL: usize = 1024;

/// Returns a vector taken with [`take_out`].
pub fn give_out(mut v: Vec<u8>) {
    // A vector grown by an unusually large head is not kept.
    if v.capacity() > bufsize() + 1024 {
        return;
    }
    v.clear();
    OUT.with(|o| {
        let mut o = o.borrow_mut();
        if o.len() < MAX_POOLED {
            o.push(v);
        }
    })
}

/// Sets this thread's buffer size. Buffers already pooled are dropped.
pub fn init(bufsize: usize) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.size = bufsize.max(1024);
        p.allocated -= p.free.len().min(p.allocated);
        p.free.clear();
        if p.public.is_none() {
            let public = std::sync::Arc::new(Published::default());
            REGISTRY
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(public.clone());
            p.public = Some(public);
        }
        if let Some(public) = &p.public {
            public.size.store(p.size, Ordering::Relaxed);
        }
        p.publish();
    });
}

/// This thread's buffer size.
pub fn bufsize() -> usize {
    POOL.with(|p| p.borrow().size)
}

/// Takes an empty buffer whose length is the pool's buffer size.
pub fn take() -> Vec<u8> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let b = match p.free.pop() {
            Some(b) => b,
            None => {
                p.allocated += 1;
                vec![0u8; p.size]
            }
        };
        p.publish();
        b
    })
}

/// Returns a buffer taken with [`take`].
pub fn give(buf: Vec<u8>) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if buf.len() == p.size && p.free.len() < MAX_POOLED {
            p.free.push(buf);
        } else {
            p.allocated = p.allocated.saturating_sub(1);
        }
        p.publish();
    })
}

/// (buffers ever allocated, buffers currently free) for this thread.
pub fn stats() -> (usize, usize) {
    POOL.with(|p| {
        let p = p.borrow();
        (p.allocated, p.free.len())
    })
}

/// Room a TLS record needs beyond its plaintext: header, explicit nonce,
/// tag and padding (TLS 1.2 allows 2048 bytes of expansion), rounded up.
pub const TLS_OVERHEAD: usize = 2560;

thread_local! {
    /// The TLS size class: buffers of [`bufsize`] + [`TLS_OVERHEAD`], so
    /// that one whole record fits, for ciphertext on TLS connections.
    static TLS_FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static TLS_ALLOCATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Size of the buffers of [`take_tls`].
pub fn tls_bufsize() -> usize {
    bufsize() + TLS_OVERHEAD
}

/// Takes a ciphertext buffer (length [`tls_bufsize`]) from this thread's
/// TLS size class.
pub fn take_tls() -> Vec<u8> {
    TLS_FREE
        .with(|f| f.borrow_mut().pop())
        .unwrap_or_else(|| {
            TLS_ALLOCATED.with(|a| a.set(a.get() + 1));
            vec![0u8; tls_bufsize()]
        })
}

/// Returns a buffer taken with [`take_tls`]. One that was grown (a long
/// handshake message) is freed instead.
pub fn give_tls(buf: Vec<u8>) {
    let keep = buf.len() == tls_bufsize()
        && TLS_FREE.with(|f| {
            let mut f = f.borrow_mut();
            let room = f.len() < MAX_POOLED;
            if room {
                f.push(buf);
            }
            room
        });
    if !keep {
        TLS_ALLOCATED.with(|a| a.set(a.get().saturating_sub(1)));
    }
}

/// (TLS buffers that exist, TLS buffers free) for this thread.
pub fn tls_stats() -> (usize, usize) {
    (
        TLS_ALLOCATED.with(|a| a.get()),
        TLS_FREE.with(|f| f.borrow().len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_buffers() {
        init(4096);
        let a = take();
        assert_eq!(a.len(), 4096);
        give(a);
        let _b = take();
        assert_eq!(stats().0, 1);
    }
}
