//! Thread-private cursors: one position per (balancer, thread) that only
//! its thread reads and writes, so that picks on many cores share no
//! cache line.
//!
//! Each [`Cursors`] owns a small slot number, reused after it is dropped,
//! and a unique 64-bit stamp. Every thread keeps a vector indexed by slot
//! of `(stamp, position)`; an entry whose stamp is not the owner's (the
//! thread's first pick on this balancer, or a slot left by a dropped one)
//! is started afresh from the thread's *join order*: the n-th thread to
//! use a balancer gets `n` (one shared `fetch_add` per thread and
//! balancer, never again). The first thread therefore starts at position 0
//! and, alone, sees exactly the sequence a single shared cursor would give.
//!
//! The thread-local vector is only borrowed inside [`Cursors::get`] and
//! [`Cursors::set`], never while caller code runs, so nothing re-entrant
//! can find it borrowed. During thread teardown, when the thread-local is
//! gone, `get` answers a fresh position and `set` does nothing.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Stamps handed out; 0 marks an unused thread-local entry.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);
/// Next never-used slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// Slots of dropped [`Cursors`], for reuse (taken when a balancer is
/// built, given back when it is dropped: never on the pick path).
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

thread_local! {
    static POSITIONS: RefCell<Vec<(u64, usize)>> = const { RefCell::new(Vec::new()) };
}

/// One position per thread for one balancer.
pub(crate) struct Cursors {
    slot: usize,
    stamp: u64,
    joined: AtomicUsize,
}

impl Cursors {
    pub(crate) fn new() -> Cursors {
        let reused = FREE_SLOTS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Cursors {
            slot: reused.unwrap_or_else(|| NEXT_SLOT.fetch_add(1, Ordering::Relaxed)),
            stamp: NEXT_STAMP.fetch_add(1, Ordering::Relaxed),
            joined: AtomicUsize::new(0),
        }
    }

    /// The calling thread's position; on its first call for this balancer,
    /// `fresh(join_order)` (0 for the first thread, 1 for the next...).
    pub(crate) fn get(&self, fresh: impl FnOnce(usize) -> usize) -> usize {
        let known = POSITIONS
            .try_with(|p| {
                let p = p.borrow();
                match p.get(self.slot) {
                    Some(&(stamp, pos)) if stamp == self.stamp => Some(pos),
                    _ => None,
                }
            })
            .ok()
            .flatten();
        if let Some(pos) = known {
            return pos;
        }
        let pos = fresh(self.joined.fetch_add(1, Ordering::Relaxed));
        self.set(pos);
        pos
    }

    /// Stores the calling thread's position.
    pub(crate) fn set(&self, pos: usize) {
        let _ = POSITIONS.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() <= self.slot {
                p.resize(self.slot + 1, (0, 0));
            }
            if let Some(e) = p.get_mut(self.slot) {
                *e = (self.stamp, pos);
            }
        });
    }
}

impl Drop for Cursors {
    fn drop(&mut self) {
        FREE_SLOTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.slot);
    }
}

/// Where the thread of join order `k` starts in a sequence of `len`:
/// `k` times the golden ratio, modulo 1, scaled to `len`, which spreads
/// any number of threads evenly (0 for the first thread).
pub(crate) fn stagger(k: usize, len: usize) -> usize {
    let frac = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((u128::from(frac) * len as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn per_thread_positions_start_staggered() {
        let c = Arc::new(Cursors::new());
        assert_eq!(c.get(|k| 100 + k), 100);
        c.set(7);
        assert_eq!(c.get(|_| unreachable!()), 7);
        let c2 = c.clone();
        let other = std::thread::spawn(move || {
            let first = c2.get(|k| 100 + k);
            c2.set(first + 1);
            (first, c2.get(|_| 0))
        })
        .join()
        .unwrap();
        assert_eq!(other, (101, 102));
        // The other thread's writes did not touch this thread's position.
        assert_eq!(c.get(|_| unreachable!()), 7);
    }

    #[test]
    fn a_reused_slot_starts_afresh() {
        let a = Cursors::new();
        a.set(42);
        let slot = a.slot;
        drop(a);
        // Another test thread may take the freed slot first; build until
        // this one gets it or a fresh one.
        let b = Cursors::new();
        if b.slot == slot {
            assert_eq!(b.get(|k| 1000 + k), 1000);
        } else {
            assert_eq!(b.get(|k| 2000 + k), 2000);
        }
    }

    #[test]
    fn stagger_spreads_threads() {
        assert_eq!(stagger(0, 12), 0);
        let mut starts: Vec<usize> = (0..4).map(|k| stagger(k, 1000)).collect();
        starts.sort_unstable();
        assert_eq!(starts, [0, 236, 618, 854]);
        for k in 0..100 {
            assert!(stagger(k, 7) < 7);
        }
        assert_eq!(stagger(5, 0), 0);
    }
}
