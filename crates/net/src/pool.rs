//! Per-thread pool of fixed-size I/O buffers.
//!
//! Every worker thread calls [`init`] with `tune.bufsize` before serving.
//! [`take`] pops a buffer (or allocates one when the pool is empty) and
//! [`give`] pushes it back. The pool is thread-local: no lock, no atomics.
//! In steady state no buffer is allocated: the pool holds as many buffers as
//! the peak number of connections that were moving data at the same time.

use std::cell::RefCell;

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
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { size: DEFAULT_BUFSIZE, free: Vec::new(), allocated: 0 }) };
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
        p.free.clear();
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
        match p.free.pop() {
            Some(b) => b,
            None => {
                p.allocated += 1;
                vec![0u8; p.size]
            }
        }
    })
}

/// Returns a buffer taken with [`take`].
pub fn give(buf: Vec<u8>) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if buf.len() == p.size && p.free.len() < MAX_POOLED {
            p.free.push(buf);
        }
    })
}

/// (buffers ever allocated, buffers currently free) for this thread.
pub fn stats() -> (usize, usize) {
    POOL.with(|p| {
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
