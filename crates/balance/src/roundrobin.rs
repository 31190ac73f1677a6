//! `balance roundrobin`: weighted, smooth round robin, exact across threads.
//!
//! The weights are expanded once into a schedule of `sum(weights)` slots in
//! which each server appears `weight` times, spread evenly (the "smooth"
//! weighted round-robin order: a server of weight 3 among weights 3,1,1 is
//! picked A B A C A, never A A A B C). All threads share one atomic cursor
//! into the schedule, so three equal servers served by four threads each get
//! exactly one third of the picks. Picking is O(1) while the scheduled server
//! is usable, and skips unusable ones.

use crate::Algorithm;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Smooth weighted round robin. Weight 0 servers never appear.
pub struct RoundRobin {
    schedule: Vec<u32>,
    cursor: AtomicUsize,
    servers: usize,
}

impl RoundRobin {
    /// Builds the schedule for these weights (index = server).
    pub fn new(weights: &[u32]) -> Self {
        let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
        let mut current: Vec<i64> = vec![0; weights.len()];
        let mut schedule = Vec::with_capacity(total as usize);
        for _ in 0..total {
            let mut best = 0;
            for (i, &w) in weights.iter().enumerate() {
                current[i] += i64::from(w);
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            schedule.push(best as u32);
        }
        RoundRobin {
            schedule,
            cursor: AtomicUsize::new(0),
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
        let len = self.schedule.len();
        if len == 0 {
            return None;
        }
        // Try at most one full turn of the schedule.
        for _ in 0..len.max(self.servers) {
            let slot = self.cursor.fetch_add(1, Ordering::Relaxed) % len;
            let s = self.schedule[slot] as usize;
            if usable(s) {
                return Some(s);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn smooth_order() {
        let rr = RoundRobin::new(&[3, 1, 1]);
        let names: String = rr
            .schedule()
            .iter()
            .map(|&i| (b'A' + i as u8) as char)
            .collect();
        assert_eq!(names, "ABACA");
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
}
