//! `balance leastconn`: the usable server with the lowest load for its
//! weight gets the request; servers with equal ratios take turns.
//!
//! A server's key is `(load + 1) / weight` (the `+ 1` counts the request
//! about to be assigned, so that a server of weight 2 takes two concurrent
//! requests for each one of a server of weight 1), as in HAProxy, compared
//! exactly as fractions (HAProxy's integer key rounds it). The load is the balancer's own count of taken minus released
//! requests ([`crate::Lb::taken`], [`crate::Lb::released`]), one atomic per
//! server, each on its own cache line: `taken` and `released` are one
//! atomic add or subtract on the server's line and nothing else.
//!
//! A pick scans the balanced group (a read-only list, replaced as a whole
//! when weights or states change) for the lowest key, starting just after
//! the group position of the calling thread's previous pick and keeping
//! the first lowest it meets: servers with equal keys therefore take turns
//! (HAProxy re-queues a server behind its equals when its load changes,
//! which gives the same turns for short requests). Each thread keeps its
//! own turn position (the crate's thread-private cursors), so no lock and
//! no shared write is on the pick path. Only the chosen server is shown to
//! the caller's check; when it is full or avoided, the others are tried in
//! order of key.
//!
//! The scan is O(n) loads for n servers in the group (HAProxy's tree is
//! O(log n) under the backend's lock): for the usual backends of a few to
//! a few dozen servers it is cheaper than any lock on many cores, and it
//! stays below a microsecond for a thousand servers.

use crate::local::{stagger, Cursors};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// One server's load, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Load(AtomicU32);

/// The leastconn state of one backend.
pub struct LeastConn {
    load: Box<[Load]>,
    /// The balanced group in server order: (server, weight), weight > 0.
    group: ArcSwap<Vec<(u32, u32)>>,
    /// Each thread's position after its previous pick in `group`.
    turn: Cursors,
}

/// A server's load ratio `(load + 1) / weight` as a fraction, compared
/// by cross-multiplication (no division on the scan): `(load + 1, weight)`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ratio(u64, u64);

impl Ratio {
    /// Not below any real ratio (for a server missing from the loads).
    const WORST: Ratio = Ratio(1 << 32, 1);

    fn new(load: u32, weight: u32) -> Ratio {
        Ratio(u64::from(load) + 1, u64::from(weight.max(1)))
    }

    /// Strictly lower load for the weight. Numerators are at most 2^32
    /// and weights below 2^32, so the products fit in a u64.
    fn below(self, o: Ratio) -> bool {
        self.0 * o.1 < o.0 * self.1
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, o: &Ratio) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Ratio {
    fn cmp(&self, o: &Ratio) -> std::cmp::Ordering {
        (self.0 * o.1).cmp(&(o.0 * self.1))
    }
}

impl LeastConn {
    /// State for `servers` servers, none in the group yet.
    pub fn new(servers: usize) -> LeastConn {
        LeastConn {
            load: (0..servers).map(|_| Load::default()).collect(),
            group: ArcSwap::from_pointee(Vec::new()),
            turn: Cursors::new(),
        }
    }

    /// Puts exactly the servers with a non-zero `weight` in the group
    /// (index = server); loads are kept.
    pub fn rebuild(&self, weight: &[u32]) {
        let group = weight
            .iter()
            .enumerate()
            .take(self.load.len())
            .filter(|&(_, &w)| w > 0)
            .map(|(s, &w)| (s as u32, w))
            .collect();
        self.group.store(Arc::new(group));
    }

    /// A request was assigned to server `s`.
    pub fn taken(&self, s: usize) {
        if let Some(l) = self.load.get(s) {
            // Wrapping is out of reach: 4 billion requests on one server.
            l.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request left server `s` (never below 0).
    pub fn released(&self, s: usize) {
        if let Some(l) = self.load.get(s) {
            let _ =
                l.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    fn key_at(&self, (s, w): (u32, u32)) -> Ratio {
        self.load
            .get(s as usize)
            .map_or(Ratio::WORST, |l| Ratio::new(l.0.load(Ordering::Relaxed), w))
    }

    /// The least loaded server accepted by `ok`.
    pub fn pick(&self, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        let group = self.group.load();
        let n = group.len();
        if n == 0 {
            return None;
        }
        let start = self.turn.get(|k| stagger(k, n)) % n;
        // The first lowest key from `start` on, in turn order.
        let mut best: Option<(Ratio, usize)> = None;
        let (before, after) = group.split_at(start.min(n));
        let in_turn = after.iter().zip(start..).chain(before.iter().zip(0..));
        for (&e, pos) in in_turn {
            let k = self.key_at(e);
            if best.is_none_or(|(bk, _)| k.below(bk)) {
                best = Some((k, pos));
            }
        }
        let (_, pos) = best?;
        let s = group.get(pos)?.0 as usize;
        if ok(s) {
            self.turn.set(pos + 1);
            return Some(s);
        }
        // Full or avoided: the others by key, then turn order.
        let mut rest: Vec<(Ratio, usize, usize)> = (1..n)
            .map(|i| {
                let p = (pos + i) % n;
                let k = group.get(p).map_or(Ratio::WORST, |&e| self.key_at(e));
                (k, i, p)
            })
            .collect();
        rest.sort_unstable();
        let (_, _, p) = rest
            .into_iter()
            .find(|&(_, _, p)| group.get(p).is_some_and(|e| ok(e.0 as usize)))?;
        self.turn.set(p + 1);
        group.get(p).map(|e| e.0 as usize)
    }

    /// The balancer's load count of server `s`.
    pub fn load(&self, s: usize) -> u32 {
        self.load.get(s).map_or(0, |l| l.0.load(Ordering::Relaxed))
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

#[cfg(test)]
mod thread_tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn loads_stay_exact_across_threads() {
        let lc = Arc::new(LeastConn::new(4));
        lc.rebuild(&[1, 2, 1, 4]);
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let lc = lc.clone();
                std::thread::spawn(move || {
                    let mut held = Vec::new();
                    let mut got = [0usize; 4];
                    for i in 0..4000 {
                        let s = lc.pick(&|_| true).unwrap();
                        lc.taken(s);
                        got[s] += 1;
                        held.push(s);
                        if i % 3 == 2 {
                            // Release the oldest: loads go up and down.
                            lc.released(held.remove(0));
                        }
                    }
                    for s in held {
                        lc.released(s);
                    }
                    got
                })
            })
            .collect();
        let mut total = [0usize; 4];
        for h in hs {
            for (t, g) in total.iter_mut().zip(h.join().unwrap()) {
                *t += g;
            }
        }
        assert_eq!((0..4).map(|s| lc.load(s)).collect::<Vec<_>>(), [0; 4]);
        assert_eq!(total.iter().sum::<usize>(), 16000);
        // The heaviest server took the most, the light ones the least.
        assert!(total[3] > total[1] && total[1] > total[0], "{total:?}");
        assert!(total[1] > total[2], "{total:?}");
        // Released below zero stays at zero.
        lc.released(0);
        assert_eq!(lc.load(0), 0);
    }
}
