//! Request queues of a backend, HAProxy's way.
//!
//! When every eligible server is at its `maxconn`, a request waits in the
//! backend's queue (any server will do) or, when it must go to one server
//! (persistence), in that server's queue. Whenever a slot frees up, the
//! oldest waiter that can use it gets it: the slot is handed over, not
//! released and re-acquired, so a newcomer cannot overtake the queue.
//!
//! Waiters may sit on any worker thread, so the queues are shared: one short
//! lock per backend, taken only when something is queued (an atomic length
//! keeps the uncongested path lock-free).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::oneshot;

struct Waiter {
    seq: u64,
    tx: oneshot::Sender<usize>,
}

#[derive(Default)]
struct Inner {
    seq: u64,
    any: VecDeque<Waiter>,
    per_server: Vec<VecDeque<Waiter>>,
}

/// The queues of one backend.
pub struct Queue {
    inner: Mutex<Inner>,
    len: AtomicUsize,
    server_len: Vec<AtomicUsize>,
}

/// A place in a queue; resolves to the server whose slot was handed over.
pub type Ticket = oneshot::Receiver<usize>;

impl Queue {
    pub fn new(servers: usize) -> Queue {
        Queue {
            inner: Mutex::new(Inner {
                per_server: (0..servers).map(|_| VecDeque::new()).collect(),
                ..Default::default()
            }),
            len: AtomicUsize::new(0),
            server_len: (0..servers).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Requests waiting in all queues of the backend.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests waiting for server `i` specifically.
    pub fn server_len(&self, i: usize) -> usize {
        self.server_len[i].load(Ordering::Relaxed)
    }

    /// Queues a request for server `target`, or for any server.
    pub fn push(&self, target: Option<usize>) -> Ticket {
        let (tx, rx) = oneshot::channel();
        let mut q = self.inner.lock().expect("queue lock");
        q.seq += 1;
        let w = Waiter { seq: q.seq, tx };
        match target {
            Some(i) => {
                q.per_server[i].push_back(w);
                self.server_len[i].fetch_add(1, Ordering::Relaxed);
            }
            None => q.any.push_back(w),
        }
        self.len.fetch_add(1, Ordering::Relaxed);
        rx
    }

    /// Hands free slots to the oldest waiters that can use them.
    /// `take(target)` reserves a slot on `target` (or on any server for
    /// `None`) and returns the server, or `None` when there is no room;
    /// `give_back(server)` undoes a reservation whose waiter went away.
    pub fn dispatch(
        &self,
        take: &dyn Fn(Option<usize>) -> Option<usize>,
        give_back: &dyn Fn(usize),
    ) {
        if self.is_empty() {
            return;
        }
        let mut q = self.inner.lock().expect("queue lock");
        'outer: loop {
            // Candidates: the head of every queue, oldest first.
            let mut heads: Vec<(u64, Option<usize>)> = Vec::new();
            if let Some(w) = q.any.front() {
                heads.push((w.seq, None));
            }
            for (i, sq) in q.per_server.iter().enumerate() {
                if let Some(w) = sq.front() {
                    heads.push((w.seq, Some(i)));
                }
            }
            if heads.is_empty() {
                return;
            }
            heads.sort_unstable_by_key(|h| h.0);
            for (_, target) in heads {
                let Some(server) = take(target) else { continue };
                let w = match target {
                    None => q.any.pop_front(),
                    Some(i) => {
                        self.server_len[i].fetch_sub(1, Ordering::Relaxed);
                        q.per_server[i].pop_front()
                    }
                }
                .expect("head exists");
                self.len.fetch_sub(1, Ordering::Relaxed);
                if w.tx.send(server).is_err() {
                    // The waiter timed out or left meanwhile.
                    give_back(server);
                }
                continue 'outer;
            }
            return;
        }
    }

    /// Drops waiters whose requests are gone (timed out), keeping the
    /// lengths exact. Called by a waiter after its own timeout.
    pub fn purge_cancelled(&self) {
        let mut q = self.inner.lock().expect("queue lock");
        let before_any = q.any.len();
        q.any.retain(|w| !w.tx.is_closed());
        let mut removed = before_any - q.any.len();
        for i in 0..q.per_server.len() {
            let before = q.per_server[i].len();
            q.per_server[i].retain(|w| !w.tx.is_closed());
            let r = before - q.per_server[i].len();
            self.server_len[i].fetch_sub(r, Ordering::Relaxed);
            removed += r;
        }
        self.len.fetch_sub(removed, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn oldest_waiter_gets_the_slot_first() {
        let q = Queue::new(2);
        let mut a = q.push(None);
        let mut b = q.push(Some(1));
        let mut c = q.push(None);
        assert_eq!(q.len(), 3);
        assert_eq!(q.server_len(1), 1);
        let room = Cell::new(1);
        let take = |t: Option<usize>| {
            (room.get() > 0).then(|| {
                room.set(room.get() - 1);
                t.unwrap_or(0)
            })
        };
        q.dispatch(&take, &|_| {});
        assert_eq!(a.try_recv().unwrap(), 0);
        assert!(b.try_recv().is_err());
        room.set(2);
        q.dispatch(&take, &|_| {});
        assert_eq!(b.try_recv().unwrap(), 1);
        assert_eq!(c.try_recv().unwrap(), 0);
        assert!(q.is_empty());
    }

    #[test]
    fn server_specific_waiters_do_not_block_others() {
        let q = Queue::new(2);
        let mut stuck = q.push(Some(0));
        let mut other = q.push(None);
        // Only server 1 has room.
        let take = |t: Option<usize>| match t {
            Some(0) => None,
            _ => Some(1),
        };
        q.dispatch(&take, &|_| {});
        assert!(stuck.try_recv().is_err());
        assert_eq!(other.try_recv().unwrap(), 1);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn slot_of_a_gone_waiter_is_given_back() {
        let q = Queue::new(1);
        let gone = q.push(None);
        let mut next = q.push(None);
        drop(gone);
        let given_back = Cell::new(0);
        q.dispatch(&|_| Some(0), &|_| given_back.set(given_back.get() + 1));
        assert_eq!(given_back.get(), 1);
        assert_eq!(next.try_recv().unwrap(), 0);
    }

    #[test]
    fn purge_keeps_lengths_exact() {
        let q = Queue::new(1);
        let a = q.push(Some(0));
        let _b = q.push(None);
        drop(a);
        q.purge_cancelled();
        assert_eq!(q.len(), 1);
        assert_eq!(q.server_len(0), 0);
    }
}
