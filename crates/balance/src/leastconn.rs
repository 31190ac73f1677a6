//! `balance leastconn`: the usable server with the lowest load for its
//! weight gets the request; servers with equal ratios take turns.
//!
//! Servers sit in an ordered set keyed by `((load + 1) << 20) / weight`
//! (the `+ 1` counts the request about to be assigned, so that a server of
//! weight 2 takes two concurrent requests for each one of a server of
//! weight 1) and then by a sequence number: each time a server's load
//! changes ([`crate::Lb::taken`], [`crate::Lb::released`]) it is re-queued
//! behind the servers of equal key, which makes ties round robin. The load
//! is the balancer's own count of taken minus released requests.
//!
//! Picking reads the first entry of the set (O(log n)), walking on only
//! past servers that are full or avoided; `taken`/`released` are one removal
//! and one insertion (O(log n)). The set sits behind a short per-backend
//! mutex, as HAProxy's leastconn tree sits behind the backend's lock.

use std::collections::BTreeSet;
use std::sync::Mutex;

#[derive(Default)]
struct Inner {
    /// (key, sequence, server)
    set: BTreeSet<(u64, u64, u32)>,
    /// Each server's current entry, if it is in the set.
    entry: Vec<Option<(u64, u64)>>,
    load: Vec<u32>,
    weight: Vec<u32>,
    seq: u64,
}

impl Inner {
    fn key(&self, s: usize) -> u64 {
        ((u64::from(self.load[s]) + 1) << 20) / u64::from(self.weight[s].max(1))
    }

    fn requeue(&mut self, s: usize) {
        if let Some((k, q)) = self.entry[s].take() {
            self.set.remove(&(k, q, s as u32));
            self.insert(s);
        }
    }

    fn insert(&mut self, s: usize) {
        let k = self.key(s);
        self.seq += 1;
        self.set.insert((k, self.seq, s as u32));
        self.entry[s] = Some((k, self.seq));
    }
}

/// The leastconn state of one backend.
pub struct LeastConn {
    inner: Mutex<Inner>,
}

impl LeastConn {
    pub fn new(servers: usize) -> LeastConn {
        LeastConn {
            inner: Mutex::new(Inner {
                entry: vec![None; servers],
                load: vec![0; servers],
                weight: vec![0; servers],
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts exactly the servers with a non-zero `weight` in the set.
    pub fn rebuild(&self, weight: &[u32]) {
        let mut g = self.lock();
        g.set.clear();
        g.entry.iter_mut().for_each(|e| *e = None);
        g.weight.copy_from_slice(weight);
        for (s, &w) in weight.iter().enumerate() {
            if w > 0 {
                g.insert(s);
            }
        }
    }

    pub fn taken(&self, s: usize) {
        let mut g = self.lock();
        g.load[s] = g.load[s].saturating_add(1);
        g.requeue(s);
    }

    pub fn released(&self, s: usize) {
        let mut g = self.lock();
        g.load[s] = g.load[s].saturating_sub(1);
        g.requeue(s);
    }

    /// The least loaded server accepted by `ok`.
    pub fn pick(&self, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        let g = self.lock();
        g.set.iter().map(|e| e.2 as usize).find(|&s| ok(s))
    }

    /// The balancer's load count of server `s`.
    pub fn load(&self, s: usize) -> u32 {
        self.lock().load[s]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_loaded_then_turns() {
        let lc = LeastConn::new(3);
        lc.rebuild(&[1, 1, 1]);
        // Ties: in order, each re-queued behind the others once used.
        let mut seen = Vec::new();
        for _ in 0..6 {
            let s = lc.pick(&|_| true).unwrap();
            lc.taken(s);
            lc.released(s);
            seen.push(s);
        }
        assert_eq!(seen, [0, 1, 2, 0, 1, 2]);
        lc.taken(0);
        lc.taken(1);
        assert_eq!(lc.pick(&|_| true), Some(2));
        lc.taken(2);
        lc.taken(2);
        assert_eq!(lc.pick(&|_| true), Some(0));
        assert_eq!(lc.pick(&|s| s != 0 && s != 1), Some(2));
        assert_eq!(lc.load(2), 2);
    }

    #[test]
    fn weight_scales_the_load() {
        let lc = LeastConn::new(2);
        lc.rebuild(&[2, 1]);
        let mut counts = [0; 2];
        for _ in 0..30 {
            let s = lc.pick(&|_| true).unwrap();
            lc.taken(s);
            counts[s] += 1;
        }
        assert_eq!(counts, [20, 10]);
    }

    #[test]
    fn zero_weight_is_left_out() {
        let lc = LeastConn::new(2);
        lc.rebuild(&[0, 1]);
        lc.taken(1);
        lc.taken(1);
        assert_eq!(lc.pick(&|_| true), Some(1));
        lc.rebuild(&[0, 0]);
        assert_eq!(lc.pick(&|_| true), None);
    }
}
