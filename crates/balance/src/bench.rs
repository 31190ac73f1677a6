//! Contention micro-benchmark: picks per second with 1, 2 and 4 threads
//! sharing one balancer, for `roundrobin` and `leastconn`. Run it with
//! `cargo test -p fairlead-balance --release -- --ignored --nocapture
//! contention`. On a machine with few cores the numbers mostly show the
//! single-thread cost; the point of the per-thread design is that the
//! total grows with the threads on many cores.

use crate::{Lb, Pick, RequestKey, ServerSpec, ServerView};
use fairlead_config::{Balance, HashType};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// A view with no shared writes: every server up, never full.
struct Quiet;

impl ServerView for Quiet {
    fn up(&self, _: usize) -> bool {
        true
    }
    fn has_room(&self, _: usize) -> bool {
        true
    }
    fn load(&self, _: usize) -> u32 {
        0
    }
}

/// Picks per second over all threads, `picks` per thread, each pick of
/// `leastconn` followed by `taken` and `released` as a backend does.
fn rate(balance: &Balance, servers: usize, threads: usize, picks: usize) -> f64 {
    let specs: Vec<ServerSpec> = (0..servers)
        .map(|i| ServerSpec {
            weight: 1 + (i as u32 % 3),
            backup: false,
            id: i as u32 + 1,
        })
        .collect();
    let lb = Arc::new(Lb::new(balance, &HashType::default(), false, &specs));
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (lb, start) = (lb.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut sum = 0usize;
                for _ in 0..picks {
                    if let Pick::Server(s) = lb.pick(&RequestKey::default(), &Quiet) {
                        lb.taken(s);
                        lb.released(s);
                        sum += s;
                    }
                }
                sum
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    let mut check = 0;
    for h in handles {
        check += h.join().expect("bench thread");
    }
    let secs = t.elapsed().as_secs_f64();
    assert!(check > 0);
    (threads * picks) as f64 / secs
}

#[test]
#[ignore]
fn contention() {
    const PICKS: usize = 2_000_000;
    for (name, balance) in [
        ("roundrobin", Balance::RoundRobin),
        ("leastconn", Balance::LeastConn),
    ] {
        for servers in [4usize, 32] {
            for threads in [1usize, 2, 4] {
                // Best of three: the machine is shared.
                let best = (0..3)
                    .map(|_| rate(&balance, servers, threads, PICKS))
                    .fold(0.0f64, f64::max);
                println!(
                    "{name:10} servers={servers:3} threads={threads} {:7.2} M picks/s",
                    best / 1e6
                );
            }
        }
    }
}
