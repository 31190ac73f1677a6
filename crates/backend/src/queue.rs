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
//! keeps the uncongested path lock-free). Server queues are keyed by the
//! server itself (its stable id), not by a position, so that servers can be
//! added and removed at run time while requests wait; each server's own
//! queue length is kept in [`crate::ServerMetrics::queued`].

use crate::{Server, ServerId};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

struct Waiter {
    seq: u64,
    tx: oneshot::Sender<Arc<Server>>,
}

#[derive(Default)]
struct Inner {
    seq: u64,
    any: VecDeque<Waiter>,
    /// Servers with waiters of their own (few: persistence only).
    per_server: Vec<(Arc<Server>, VecDeque<Waiter>)>,
}

/// The queues of one backend.
#[derive(Default)]
pub struct Queue {
    inner: Mutex<Inner>,
    len: AtomicUsize,
}

/// A place in a queue; resolves to the server whose slot was handed over.
pub type Ticket = oneshot::Receiver<Arc<Server>>;

/// [`Queue::dispatch`]'s way to reserve a slot: on the given server, or on
/// any for `None`; returns the server, or `None` when there is no room.
pub type Take<'a> = &'a dyn Fn(Option<&Arc<Server>>) -> Option<Arc<Server>>;

impl Queue {
    pub fn new() -> Queue {
        Queue::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Requests waiting in all queues of the backend.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues a request for server `target`, or for any server.
    pub fn push(&self, target: Option<&Arc<Server>>) -> Ticket {
        let (tx, rx) = oneshot::channel();
        let mut q = self.lock();
        q.seq += 1;
        let w = Waiter { seq: q.seq, tx };
        match target {
            Some(s) => {
                let id = s.conf.id;
                match q.per_server.iter_mut().find(|(x, _)| x.conf.id == id) {
                    Some((_, list)) => list.push_back(w),
                    None => q.per_server.push((s.clone(), VecDeque::from([w]))),
                }
                s.metrics.queued.fetch_add(1, Ordering::Relaxed);
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
    pub fn dispatch(&self, take: Take<'_>, give_back: &dyn Fn(&Arc<Server>)) {
        if self.is_empty() {
            return;
        }
        let mut q = self.lock();
        'outer: loop {
            // Candidates: the head of every queue, oldest first.
            let mut heads: Vec<(u64, Option<usize>)> = Vec::new();
            if let Some(w) = q.any.front() {
                heads.push((w.seq, None));
            }
            for (i, (_, sq)) in q.per_server.iter().enumerate() {
                if let Some(w) = sq.front() {
                    heads.push((w.seq, Some(i)));
                }
            }
            if heads.is_empty() {
                return;
            }
            heads.sort_unstable_by_key(|h| h.0);
            for (_, target) in heads {
                let srv = target
                    .and_then(|i| q.per_server.get(i))
                    .map(|e| e.0.clone());
                let Some(server) = take(srv.as_ref()) else {
                    continue;
                };
                let w = match target {
                    None => q.any.pop_front(),
                    Some(i) => q.per_server.get_mut(i).and_then(|(s, list)| {
                        s.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                        list.pop_front()
                    }),
                };
                q.per_server.retain(|(_, list)| !list.is_empty());
                let Some(w) = w else {
                    give_back(&server);
                    continue 'outer;
                };
                self.len.fetch_sub(1, Ordering::Relaxed);
                if let Err(server) = w.tx.send(server) {
                    // The waiter timed out or left meanwhile.
                    give_back(&server);
                }
                continue 'outer;
            }
            return;
        }
    }

    /// Drops waiters whose requests are gone (timed out), keeping the
    /// lengths exact. Called by a waiter after its own timeout.
    pub fn purge_cancelled(&self) {
        let mut q = self.lock();
        let before_any = q.any.len();
        q.any.retain(|w| !w.tx.is_closed());
        let mut removed = before_any - q.any.len();
        for (s, list) in q.per_server.iter_mut() {
            let before = list.len();
            list.retain(|w| !w.tx.is_closed());
            let r = before - list.len();
            s.metrics.queued.fetch_sub(r, Ordering::Relaxed);
            removed += r;
        }
        q.per_server.retain(|(_, list)| !list.is_empty());
        self.len.fetch_sub(removed, Ordering::Relaxed);
    }

    /// Whether server `id` has requests waiting for it in particular.
    pub fn has_waiters_for(&self, id: ServerId) -> bool {
        self.lock().per_server.iter().any(|(s, _)| s.conf.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairlead_config as config;
    use std::cell::Cell;

    fn server(i: u32) -> Arc<Server> {
        let c = config::Server::new(
            &format!("s{i}"),
            config::ServerAddr::Ip(([127, 0, 0, 1], 1000).into()),
        );
        let addr = ([127, 0, 0, 1], 1000).into();
        Arc::new(Server::new(&c, i as usize, ServerId(i), addr, None))
    }

    fn id(t: &mut Ticket) -> u32 {
        t.try_recv().map(|s| s.conf.id.0).unwrap_or(u32::MAX)
    }

    #[test]
    fn oldest_waiter_gets_the_slot_first() {
        let (s0, s1) = (server(0), server(1));
        let q = Queue::new();
        let mut a = q.push(None);
        let mut b = q.push(Some(&s1));
        let mut c = q.push(None);
        assert_eq!(q.len(), 3);
        assert_eq!(s1.metrics.queued.load(Ordering::Relaxed), 1);
        let room = Cell::new(1);
        let take = |t: Option<&Arc<Server>>| {
            (room.get() > 0).then(|| {
                room.set(room.get() - 1);
                t.cloned().unwrap_or_else(|| s0.clone())
            })
        };
        q.dispatch(&take, &|_| {});
        assert_eq!(id(&mut a), 0);
        assert!(b.try_recv().is_err());
        room.set(2);
        q.dispatch(&take, &|_| {});
        assert_eq!(id(&mut b), 1);
        assert_eq!(id(&mut c), 0);
        assert!(q.is_empty());
        assert_eq!(s1.metrics.queued.load(Ordering::Relaxed), 0);
        assert!(!q.has_waiters_for(ServerId(1)));
    }

    #[test]
    fn server_specific_waiters_do_not_block_others() {
        let (s0, s1) = (server(0), server(1));
        let q = Queue::new();
        let mut stuck = q.push(Some(&s0));
        let mut other = q.push(None);
        // Only server 1 has room.
        let take = |t: Option<&Arc<Server>>| match t {
            Some(_) => None,
            None => Some(s1.clone()),
        };
        q.dispatch(&take, &|_| {});
        assert!(stuck.try_recv().is_err());
        assert_eq!(id(&mut other), 1);
        assert_eq!(q.len(), 1);
        assert!(q.has_waiters_for(ServerId(0)));
    }

    #[test]
    fn slot_of_a_gone_waiter_is_given_back() {
        let s0 = server(0);
        let q = Queue::new();
        let gone = q.push(None);
        let mut next = q.push(None);
        drop(gone);
        let given_back = Cell::new(0);
        q.dispatch(&|_| Some(s0.clone()), &|_| {
            given_back.set(given_back.get() + 1)
        });
        assert_eq!(given_back.get(), 1);
        assert_eq!(id(&mut next), 0);
    }

    #[test]
    fn purge_keeps_lengths_exact() {
        let s0 = server(0);
        let q = Queue::new();
        let a = q.push(Some(&s0));
        let _b = q.push(None);
        drop(a);
        q.purge_cancelled();
        assert_eq!(q.len(), 1);
        assert_eq!(s0.metrics.queued.load(Ordering::Relaxed), 0);
        assert!(!q.has_waiters_for(ServerId(0)));
    }
}
