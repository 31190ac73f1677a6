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
    lent: usize,
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
    /// Buffers lent for good to the thread's io_uring ring ([`lend`]),
    /// counted apart from `allocated`.
    pub lent: AtomicUsize,
}

/// Every thread's figures, per size class.
type Registry = Mutex<Vec<std::sync::Arc<Published>>>;
static REGISTRY: Registry = Mutex::new(Vec::new());
static REGISTRY_TLS: Registry = Mutex::new(Vec::new());

impl Pool {
    const fn new(size: usize) -> Pool {
        Pool {
            size,
            free: Vec::new(),
            allocated: 0,
            lent: 0,
            public: None,
        }
    }

    fn publish(&self) {
        if let Some(p) = &self.public {
            p.allocated.store(self.allocated, Ordering::Relaxed);
            p.free.store(self.free.len(), Ordering::Relaxed);
            p.lent.store(self.lent, Ordering::Relaxed);
        }
    }

    /// Sets the buffer size (dropping pooled buffers) and registers the
    /// thread's figures once.
    fn init(&mut self, size: usize, registry: &Registry) {
        self.size = size;
        self.allocated -= self.free.len().min(self.allocated);
        self.free.clear();
        let public = self.public.get_or_insert_with(|| {
            let public = std::sync::Arc::new(Published::default());
            registry
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(public.clone());
            public
        });
        public.size.store(size, Ordering::Relaxed);
        self.publish();
    }

    fn take(&mut self) -> Vec<u8> {
        let b = match self.free.pop() {
            Some(b) => b,
            None => {
                self.allocated += 1;
                vec![0u8; self.size]
            }
        };
        self.publish();
        b
    }

    fn give(&mut self, buf: Vec<u8>) {
        if buf.len() == self.size && self.free.len() < MAX_POOLED {
            self.free.push(buf);
        } else {
            self.allocated = self.allocated.saturating_sub(1);
        }
        self.publish();
    }
}

/// Sums the figures of every thread: (buffer size, buffers allocated,
/// buffers in use).
fn sum(registry: &Registry, default_size: usize) -> (usize, usize, usize) {
    let reg = registry.lock().unwrap_or_else(|e| e.into_inner());
    let size = reg
        .first()
        .map_or(default_size, |p| p.size.load(Ordering::Relaxed));
    let allocated: usize = reg
        .iter()
        .map(|p| p.allocated.load(Ordering::Relaxed))
        .sum();
    let free: usize = reg.iter().map(|p| p.free.load(Ordering::Relaxed)).sum();
    (size, allocated, allocated.saturating_sub(free))
}

/// The I/O buffer pools of every worker thread, summed: (buffer size,
/// buffers allocated, buffers in use).
pub fn totals() -> (usize, usize, usize) {
    sum(&REGISTRY, DEFAULT_BUFSIZE)
}

/// The same for the TLS size class ([`take_tls`]).
pub fn tls_totals() -> (usize, usize, usize) {
    sum(&REGISTRY_TLS, DEFAULT_BUFSIZE + TLS_OVERHEAD)
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool::new(DEFAULT_BUFSIZE)) };
    /// The TLS size class: buffers of [`bufsize`] + [`TLS_OVERHEAD`], so
    /// that one whole record fits, for ciphertext on TLS connections.
    static TLS_POOL: RefCell<Pool> = const { RefCell::new(Pool::new(DEFAULT_BUFSIZE + TLS_OVERHEAD)) };
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

/// Sets this thread's buffer size (and the TLS class's). Buffers already
/// pooled are dropped.
pub fn init(bufsize: usize) {
    let size = bufsize.max(1024);
    POOL.with(|p| p.borrow_mut().init(size, &REGISTRY));
    TLS_POOL.with(|p| p.borrow_mut().init(size + TLS_OVERHEAD, &REGISTRY_TLS));
}

/// This thread's buffer size.
pub fn bufsize() -> usize {
    POOL.with(|p| p.borrow().size)
}

/// Takes an empty buffer whose length is the pool's buffer size.
pub fn take() -> Vec<u8> {
    POOL.with(|p| p.borrow_mut().take())
}

/// Takes `n` buffers for good: the receive buffers of this thread's
/// io_uring ring. They are counted as lent (`show pools`: `uring_recv`),
/// not as buffers in use by connections.
pub fn lend(n: usize) -> Vec<Vec<u8>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let bufs: Vec<Vec<u8>> = (0..n).map(|_| p.take()).collect();
        p.allocated = p.allocated.saturating_sub(n);
        p.lent += n;
        p.publish();
        bufs
    })
}

/// The buffers lent to io_uring rings, every thread summed: (buffer size,
/// buffers).
pub fn lent_totals() -> (usize, usize) {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let size = reg
        .first()
        .map_or(DEFAULT_BUFSIZE, |p| p.size.load(Ordering::Relaxed));
    (
        size,
        reg.iter().map(|p| p.lent.load(Ordering::Relaxed)).sum(),
    )
}

/// Returns a buffer taken with [`take`].
pub fn give(buf: Vec<u8>) {
    POOL.with(|p| p.borrow_mut().give(buf))
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

/// Size of the buffers of [`take_tls`].
pub fn tls_bufsize() -> usize {
    TLS_POOL.with(|p| p.borrow().size)
}

/// Takes a ciphertext buffer (length [`tls_bufsize`]) from this thread's
/// TLS size class. The same pool mechanism as [`take`]: thread-local, no
/// lock, published for `show pools`.
pub fn take_tls() -> Vec<u8> {
    TLS_POOL.with(|p| p.borrow_mut().take())
}

/// Returns a buffer taken with [`take_tls`]. One that was grown (a long
/// handshake message) is freed instead.
pub fn give_tls(buf: Vec<u8>) {
    TLS_POOL.with(|p| p.borrow_mut().give(buf))
}

/// (TLS buffers that exist, TLS buffers free) for this thread.
pub fn tls_stats() -> (usize, usize) {
    TLS_POOL.with(|p| {
        let p = p.borrow();
        (p.allocated, p.free.len())
    })
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
