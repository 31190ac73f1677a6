//! `balance roundrobin`: weighted, smooth, dynamic round robin, exact across
//! threads.
//!
//! The weights are expanded into a schedule of `sum(weights)` slots (after
//! dividing by their GCD) in which each server appears `weight` times,
//! spread evenly. Each server's turns sit at evenly spaced "virtual times":
//! the k-th turn of a server of weight `w` is at `(k + φ) / w`, where the
//! phase `φ` staggers servers of equal weight (`(j + ½) / m` for the j-th of
//! `m` servers sharing that weight) so that they interleave instead of
//! colliding. Sorting the turns by time gives the schedule: weights 3,1,1
//! give `A B A C A`, weights 5,1,1 give `A B A A A C A` (never more than
//! three A in a row, even across the wrap), equal weights give `A B C`.
//! Building costs O(W log W) for a total weight W, so run-time weight
//! changes (slowstart ramps, agent weights, `set server weight`) simply
//! rebuild it.
//!
//! Each thread walks the schedule with its own cursor (the crate's
//! thread-private cursors): nothing is shared between cores on a pick, which is
//! two thread-local accesses and one table read while the scheduled server
//! is usable. A thread alone sees exactly the smooth sequence above, from
//! its start. The threads start staggered (the n-th thread to use the
//! balancer at `n × 0.618…` of the schedule, modulo 1) so that they do not
//! all send their first requests to the same server; each thread's picks
//! follow the weights exactly over every full turn of the schedule, so
//! over N threads × W picks each (W = total weight) the distribution is
//! exact, and in general each server is within one turn per thread of its
//! share. Unusable servers (full, avoided) are skipped, which keeps the
//! ratio between the others.

use crate::local::{stagger, Cursors};
use crate::Algorithm;
use std::cmp::Ordering as CmpOrdering;

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The smooth schedule for `(server, weight)` pairs: server numbers, each
/// appearing `weight / gcd` times. Servers of weight 0 never appear.
pub fn smooth_schedule(servers: &[(u32, u32)]) -> Vec<u32> {
    let g = servers.iter().fold(0, |g, &(_, w)| gcd(g, w));
    if g == 0 {
        return Vec::new();
    }
    // Number of servers per (reduced) weight, and each server's rank among
    // them.
    let mut by_weight: std::collections::HashMap<u32, u64> = Default::default();
    let mut turns: Vec<(u64, u64, u32)> = Vec::new(); // (numerator, denominator, server)
    let mut ranks = Vec::with_capacity(servers.len());
    for &(_, w) in servers {
        let w = w / g;
        let r = by_weight.entry(w).or_insert(0);
        ranks.push(*r);
        *r += 1;
    }
    for (&(s, w), &j) in servers.iter().zip(&ranks) {
        let w = u64::from(w / g);
        if w == 0 {
            continue;
        }
        let m = by_weight[&(w as u32)];
        // Turn k at (k + (j + 1/2) / m) / w = (2mk + 2j + 1) / (2mw).
        for k in 0..w {
            turns.push((2 * m * k + 2 * j + 1, 2 * m * w, s));
        }
    }
    turns.sort_unstable_by(|a, b| match (a.0 * b.1).cmp(&(b.0 * a.1)) {
        CmpOrdering::Equal => a.2.cmp(&b.2),
        o => o,
    });
    turns.into_iter().map(|t| t.2).collect()
}

/// Steps the calling thread's cursor through `schedule` until `ok` accepts
/// a server, trying at most `limit` slots.
pub(crate) fn next(
    schedule: &[u32],
    cursors: &Cursors,
    limit: usize,
    ok: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let len = schedule.len();
    if len == 0 {
        return None;
    }
    let start = cursors.get(|k| stagger(k, len));
    let steps = limit.min(len);
    for i in 0..steps {
        let pos = start.wrapping_add(i);
        let Some(&s) = schedule.get(pos % len) else {
            break;
        };
        if ok(s as usize) {
            cursors.set(pos.wrapping_add(1));
            return Some(s as usize);
        }
    }
    cursors.set(start.wrapping_add(steps));
    None
}

/// Steps the process-wide `cursor` through `schedule` until `ok` accepts a
/// server, trying at most `limit` slots: every pick of every thread takes
/// the next slot, so the whole sequence is exact (HAProxy's behaviour).
pub(crate) fn next_shared(
    schedule: &[u32],
    cursor: &std::sync::atomic::AtomicUsize,
    limit: usize,
    ok: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let len = schedule.len();
    if len == 0 {
        return None;
    }
    for _ in 0..limit.min(len) {
        let slot = cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % len;
        let s = *schedule.get(slot)? as usize;
        if ok(s) {
            return Some(s);
        }
    }
    None
}

/// Standalone smooth weighted round robin over fixed weights (index =
/// server). [`crate::Lb`] is what backends use; this is kept for simple
/// callers. Weight 0 servers never appear.
pub struct RoundRobin {
    schedule: Vec<u32>,
    cursors: Cursors,
    servers: usize,
}

impl RoundRobin {
    /// Builds the schedule for these weights (index = server).
    pub fn new(weights: &[u32]) -> Self {
        let pairs: Vec<(u32, u32)> = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| (i as u32, w))
            .collect();
        RoundRobin {
            schedule: smooth_schedule(&pairs),
            cursors: Cursors::new(),
            servers: weights.len(),
        }
    }

    /// The schedule, for tests and diagnostics.
    pub fn schedule(&self) -> &[u32] {
        &self.schedule
    }
}

impl Algorithm for RoundRobin {
    fn pick(&self, usable: &dyn Fn(usize) -> bool) -> Option<usize> {
        let limit = self.schedule.len().max(self.servers);
        next(&self.schedule, &self.cursors, limit, usable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn names(weights: &[u32]) -> String {
        RoundRobin::new(weights)
            .schedule()
            .iter()
            .map(|&i| (b'A' + i as u8) as char)
            .collect()
    }

    /// Longest run of `s` in the schedule repeated twice (runs across the
    /// wrap count).
    fn longest_run(schedule: &[u32], s: u32) -> usize {
        let (mut best, mut cur) = (0, 0);
        for &x in schedule.iter().chain(schedule) {
            cur = if x == s { cur + 1 } else { 0 };
            best = best.max(cur);
        }
        best.min(schedule.len())
    }

    #[test]
    fn smooth_order() {
        assert_eq!(names(&[3, 1, 1]), "ABACA");
        assert_eq!(names(&[5, 1, 1]), "ABAAACA");
        assert_eq!(names(&[1, 1, 1]), "ABC");
        assert_eq!(names(&[2, 2]), "AB");
        assert_eq!(names(&[6, 3]), "ABA");
    }

    #[test]
    fn heavy_server_never_bursts() {
        let rr = RoundRobin::new(&[5, 1, 1]);
        assert!(longest_run(rr.schedule(), 0) <= 3);
        // More generally the heavy server's runs stay within twice its
        // ideal run length w/(W-w) (plus two).
        for weights in [[10u32, 1, 1], [100, 3, 7], [256, 1, 1], [7, 5, 3]] {
            let rr = RoundRobin::new(&weights);
            let total: u32 = weights.iter().sum();
            let bound = (2 * weights[0] / (total - weights[0])) as usize + 2;
            assert!(
                longest_run(rr.schedule(), 0) <= bound,
                "{weights:?}: {}",
                longest_run(rr.schedule(), 0)
            );
        }
    }

    #[test]
    fn equal_weights_alternate() {
        let rr = RoundRobin::new(&[1, 1, 1]);
        let picks: Vec<usize> = (0..6).map(|_| rr.pick(&|_| true).unwrap()).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn skips_unusable_and_zero_weight() {
        let rr = RoundRobin::new(&[1, 0, 1]);
        for _ in 0..10 {
            assert_eq!(rr.pick(&|i| i != 0), Some(2));
        }
        assert_eq!(rr.pick(&|_| false), None);
        assert_eq!(RoundRobin::new(&[0, 0]).pick(&|_| true), None);
    }

    #[test]
    fn exact_across_threads() {
        let rr = Arc::new(RoundRobin::new(&[1, 1, 1]));
        let counts: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let rr = rr.clone();
                let counts = counts.clone();
                std::thread::spawn(move || {
                    for _ in 0..3000 {
                        let s = rr.pick(&|_| true).unwrap();
                        counts[s].fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for c in &counts {
            assert_eq!(c.load(Ordering::Relaxed), 4000);
        }
    }

    #[test]
    fn weighted_shares() {
        let rr = RoundRobin::new(&[5, 2, 1]);
        let mut counts = [0usize; 3];
        for _ in 0..800 {
            counts[rr.pick(&|_| true).unwrap()] += 1;
        }
        assert_eq!(counts, [500, 200, 100]);
    }

    #[test]
    fn gcd_reduction_keeps_the_order() {
        assert_eq!(names(&[256, 256, 128]), "ABCAB");
        let big = RoundRobin::new(&[200, 100]);
        assert_eq!(big.schedule(), &[0, 1, 0]);
        let sched = smooth_schedule(&[(0, 0), (1, 0)]);
        assert!(sched.is_empty());
    }
}
