//! `tune.listener.multi-queue`: accepted connections spread over the
//! workers.
//!
//! Each worker has its own `SO_REUSEPORT` socket per `bind` address, and
//! the kernel picks one by a hash of the connection's addresses, whatever
//! the workers' load: a worker that falls behind keeps its backlog while
//! another idles. On 16 cores, one request per connection through 4
//! workers gave Fairlead p50 1–2 ms but p90 27–31 ms, against HAProxy's 8
//! and 8 (`bench/results/round2-notes.md`, *Session 14: on 16 cores*).
//! HAProxy accepts on one socket per `bind` and queues each connection to
//! a lightly loaded thread.
//!
//! Here the worker that accepted a connection keeps it unless it serves
//! clearly more connections than the least loaded worker
//! ([`Spread::pick`]): then the socket leaves its event loop and goes to
//! that worker's inbox for the same listener, whose accept loop serves it
//! as its own. A hand-over costs two `epoll_ctl` and a cross-thread wake-up,
//! so balanced workers never pay it.
//!
//! TCP listeners of both kinds hand connections over: an epoll worker
//! takes the socket out of its event loop, an io_uring worker accepts it
//! as a plain socket and puts it on its ring only when it keeps it (the
//! receiving worker does the same with its own). UNIX and socket-pair
//! listeners keep theirs. Default is on, as in HAProxy;
//! `tune.listener.multi-queue off` keeps every connection on the worker
//! the kernel chose.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// A worker's listener: its frontend and local address, the same on every
/// worker (each binds the same addresses).
pub(crate) type ListenerKey = (usize, SocketAddr);

/// A connection handed over: the socket, out of the accepting worker's
/// event loop, and its peer.
pub(crate) struct Handed {
    pub(crate) stream: std::net::TcpStream,
    pub(crate) peer: SocketAddr,
}

/// One worker's inbox for one listener.
pub(crate) struct Inbox {
    queue: Mutex<VecDeque<Handed>>,
    /// Cleared when the listener stops: nothing more is handed to it.
    open: AtomicBool,
    /// Wakes the listener's accept loop (one stored permit, so that a
    /// hand-over while the loop is busy is not missed).
    pub(crate) wake: Notify,
}

impl Inbox {
    /// The connections waiting, taken out.
    pub(crate) fn take(&self) -> VecDeque<Handed> {
        self.queue
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default()
    }

    /// Stops taking hand-overs and returns those still waiting (the
    /// listener's last act, so none is left behind).
    pub(crate) fn close(&self) -> VecDeque<Handed> {
        let Ok(mut q) = self.queue.lock() else {
            return VecDeque::new();
        };
        self.open.store(false, Ordering::SeqCst);
        std::mem::take(&mut *q)
    }
}

/// A worker's counters, alone on their cache line (every accept reads all
/// the loads; each worker writes its own line, except `pushed` on a
/// hand-over).
#[repr(align(64))]
#[derive(Default)]
struct Load {
    /// Connections served now.
    conns: AtomicU32,
    /// Connections this worker's listeners accepted (`show activity`'s
    /// `accepted`).
    accepted: AtomicU64,
    /// Connections queued for this worker to serve, its own or handed
    /// over (`accq_pushed`).
    pushed: AtomicU64,
}

/// The workers' loads and inboxes.
pub struct Spread {
    on: bool,
    load: Vec<Load>,
    inboxes: Mutex<HashMap<(usize, ListenerKey), Arc<Inbox>>>,
}

/// `show activity`'s per-worker counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Activity {
    pub(crate) accepted: Vec<u64>,
    pub(crate) pushed: Vec<u64>,
    pub(crate) conns: Vec<u64>,
}

impl Spread {
    /// `on`: `tune.listener.multi-queue`; with one worker it stays off.
    pub(crate) fn new(workers: usize, on: bool) -> Spread {
        Spread {
            on: on && workers > 1,
            load: (0..workers).map(|_| Load::default()).collect(),
            inboxes: Mutex::new(HashMap::new()),
        }
    }

    /// Whether connections may move between workers.
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// The inbox of `worker`'s listener `key`, created open.
    pub(crate) fn inbox(&self, worker: usize, key: ListenerKey) -> Arc<Inbox> {
        let mut all = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        all.entry((worker, key))
            .or_insert_with(|| {
                Arc::new(Inbox {
                    queue: Mutex::new(VecDeque::new()),
                    open: AtomicBool::new(true),
                    wake: Notify::new(),
                })
            })
            .clone()
    }

    /// A connection starts (`up`) or ends on `worker`.
    pub(crate) fn count(&self, worker: usize, up: bool) {
        if let Some(l) = self.load.get(worker) {
            if up {
                l.conns.fetch_add(1, Ordering::Relaxed);
            } else {
                l.conns.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// `worker`'s listener accepted a connection.
    pub(crate) fn accepted(&self, worker: usize) {
        if let Some(l) = self.load.get(worker) {
            l.accepted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection is queued for `worker` to serve.
    pub(crate) fn pushed(&self, worker: usize) {
        if let Some(l) = self.load.get(worker) {
            l.pushed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The connections `worker` serves now.
    pub(crate) fn load(&self, worker: usize) -> u32 {
        self.load
            .get(worker)
            .map_or(0, |l| l.conns.load(Ordering::Relaxed))
    }

    /// The per-worker counters, in worker order.
    pub(crate) fn activity(&self) -> Activity {
        let read = |f: fn(&Load) -> u64| self.load.iter().map(f).collect();
        Activity {
            accepted: read(|l| l.accepted.load(Ordering::Relaxed)),
            pushed: read(|l| l.pushed.load(Ordering::Relaxed)),
            conns: read(|l| u64::from(l.conns.load(Ordering::Relaxed))),
        }
    }

    /// Where a connection `worker` just accepted should go: `None` to keep
    /// it, else the least loaded worker, when `worker` serves more than it
    /// by a margin (3, or a quarter of the smaller load: workers within it
    /// count as balanced, so long-lived connections spread by the kernel's
    /// hash do not move).
    pub(crate) fn pick(&self, worker: usize) -> Option<usize> {
        if !self.on {
            return None;
        }
        let mine = self.load(worker);
        let (least, at) = (0..self.load.len())
            .filter(|&w| w != worker)
            .map(|w| (self.load(w), w))
            .min()?;
        (mine > least + (least / 4).max(3)).then_some(at)
    }

    /// Queues `h` in the inbox of `worker`'s listener `key` and wakes it.
    /// `Err(h)` when that listener does not take hand-overs (absent or
    /// stopped): the caller serves the connection itself.
    pub(crate) fn hand(&self, worker: usize, key: ListenerKey, h: Handed) -> Result<(), Handed> {
        let inbox = {
            let all = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
            all.get(&(worker, key)).cloned()
        };
        let Some(inbox) = inbox else {
            return Err(h);
        };
        {
            let Ok(mut q) = inbox.queue.lock() else {
                return Err(h);
            };
            if !inbox.open.load(Ordering::SeqCst) {
                return Err(h);
            }
            q.push_back(h);
        }
        inbox.wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (std::net::TcpStream, SocketAddr) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, peer) = l.accept().unwrap();
        (c, peer)
    }

    #[test]
    fn picks_the_least_loaded_worker_past_the_margin() {
        let s = Spread::new(3, true);
        for _ in 0..3 {
            s.count(0, true);
        }
        assert_eq!(s.pick(0), None, "3 more than the others: balanced");
        s.count(0, true);
        assert_eq!(s.pick(0), Some(1), "4 more: to the first least loaded");
        s.count(1, true);
        assert_eq!(s.pick(0), Some(2));
        for _ in 0..40 {
            s.count(1, true);
            s.count(2, true);
        }
        for _ in 0..46 {
            s.count(0, true);
        }
        // 50 against 41 and 40: within a quarter of 40.
        assert_eq!(s.pick(0), None);
        s.count(0, true);
        assert_eq!(s.pick(0), Some(2), "51 > 40 + 10");
        s.count(0, false);
        assert_eq!(s.load(0), 50);
        assert_eq!(Spread::new(3, false).pick(0), None, "off");
        let one = Spread::new(1, true);
        for _ in 0..10 {
            one.count(0, true);
        }
        assert!(!one.on());
        assert_eq!(one.pick(0), None, "one worker");
    }

    #[test]
    fn hand_overs_reach_open_inboxes_only() {
        let s = Spread::new(2, true);
        let key = (0, "127.0.0.1:80".parse().unwrap());
        let (stream, peer) = pair();
        let back = s.hand(1, key, Handed { stream, peer });
        assert!(back.is_err(), "no such inbox");
        let inbox = s.inbox(1, key);
        let (stream, peer) = pair();
        assert!(s.hand(1, key, Handed { stream, peer }).is_ok());
        let got = inbox.take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].peer, peer);
        let (stream, peer) = pair();
        assert!(s.hand(1, key, Handed { stream, peer }).is_ok());
        assert_eq!(inbox.close().len(), 1, "closing returns the waiting ones");
        let (stream, peer) = pair();
        assert!(s.hand(1, key, Handed { stream, peer }).is_err(), "closed");
        assert!(inbox.take().is_empty());
    }
}
