//! Tests of [`Lb`] through its public API, with a fake [`ServerView`].

use crate::{Lb, Pick, RequestKey, ServerSpec, ServerView};
use fairlead_config::{Balance, HashFunction, HashMethod, HashType};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

/// Servers with an up flag, a current load and a maxconn (0 = unlimited);
/// counts how many times the balancer looks at them.
struct View {
    up: Vec<AtomicBool>,
    load: Vec<AtomicU32>,
    maxconn: Vec<AtomicU32>,
    calls: AtomicUsize,
}

impl View {
    fn new(n: usize) -> View {
        View {
            up: (0..n).map(|_| AtomicBool::new(true)).collect(),
            load: (0..n).map(|_| AtomicU32::new(0)).collect(),
            maxconn: (0..n).map(|_| AtomicU32::new(0)).collect(),
            calls: AtomicUsize::new(0),
        }
    }
    fn set_up(&self, i: usize, up: bool) {
        self.up[i].store(up, Ordering::Relaxed);
    }
    fn set_maxconn(&self, i: usize, m: u32) {
        self.maxconn[i].store(m, Ordering::Relaxed);
    }
    fn add_load(&self, i: usize) {
        self.load[i].fetch_add(1, Ordering::Relaxed);
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

impl ServerView for View {
    fn up(&self, i: usize) -> bool {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.up[i].load(Ordering::Relaxed)
    }
    fn has_room(&self, i: usize) -> bool {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let m = self.maxconn[i].load(Ordering::Relaxed);
        m == 0 || self.load[i].load(Ordering::Relaxed) < m
    }
    fn load(&self, i: usize) -> u32 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.load[i].load(Ordering::Relaxed)
    }
}

fn specs(weights: &[u32]) -> Vec<ServerSpec> {
    weights
        .iter()
        .enumerate()
        .map(|(i, &weight)| ServerSpec {
            weight,
            backup: false,
            id: i as u32 + 1,
        })
        .collect()
}

fn lb(balance: Balance, weights: &[u32]) -> Lb {
    Lb::new(&balance, &HashType::default(), false, &specs(weights))
}

fn hashed(balance: Balance, method: HashMethod, weights: &[u32]) -> Lb {
    let ht = HashType {
        method,
        function: HashFunction::Sdbm,
        avalanche: true,
    };
    Lb::new(&balance, &ht, false, &specs(weights))
}

fn server(p: Pick) -> usize {
    match p {
        Pick::Server(s) => s,
        other => panic!("expected a server, got {other:?}"),
    }
}

fn none() -> RequestKey<'static> {
    RequestKey::default()
}

fn uri_key(u: &[u8]) -> RequestKey<'_> {
    RequestKey {
        uri: Some(u),
        ..RequestKey::default()
    }
}

fn count(lb: &Lb, view: &View, picks: usize, n: usize) -> Vec<usize> {
    let mut c = vec![0; n];
    for _ in 0..picks {
        c[server(lb.pick(&none(), view))] += 1;
    }
    c
}

fn uri_bal() -> Balance {
    Balance::Uri {
        whole: false,
        len: None,
        depth: None,
    }
}

// ---------------------------------------------------------------- roundrobin

#[test]
fn roundrobin_exact_weights() {
    let lb = lb(Balance::RoundRobin, &[5, 2, 1]);
    let view = View::new(3);
    assert_eq!(count(&lb, &view, 800, 3), [500, 200, 100]);
    assert!(!lb.needs().uri && lb.needs().header.is_none());
}

#[test]
fn roundrobin_smooth_sequence() {
    let lb = lb(Balance::RoundRobin, &[5, 1, 1]);
    let view = View::new(3);
    let seq: Vec<usize> = (0..70).map(|_| server(lb.pick(&none(), &view))).collect();
    let mut run = 0;
    for &s in &seq {
        run = if s == 0 { run + 1 } else { 0 };
        assert!(run < 4, "{seq:?}");
    }
}

#[test]
fn roundrobin_exact_across_threads() {
    let lb = Arc::new(lb(Balance::RoundRobin, &[1, 1, 1]));
    let view = Arc::new(View::new(3));
    let counts: Arc<Vec<AtomicUsize>> = Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (lb, view, counts) = (lb.clone(), view.clone(), counts.clone());
            std::thread::spawn(move || {
                for _ in 0..3000 {
                    let s = server(lb.pick(&none(), &*view));
                    counts[s].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for c in counts.iter() {
        assert_eq!(c.load(Ordering::Relaxed), 4000);
    }
}

#[test]
fn roundrobin_weight_change_mid_run() {
    let lb = lb(Balance::RoundRobin, &[1, 1, 1]);
    let view = View::new(3);
    assert_eq!(count(&lb, &view, 300, 3), [100, 100, 100]);
    lb.set_weight(0, 3);
    let c = count(&lb, &view, 500, 3);
    // One schedule turn may be cut where the change happened.
    assert!(
        (295..=305).contains(&c[0]) && (95..=105).contains(&c[1]),
        "{c:?}"
    );
    lb.set_weight(1, 0);
    let c = count(&lb, &view, 400, 3);
    assert_eq!(c[1], 0);
    assert!((295..=305).contains(&c[0]), "{c:?}");
}

#[test]
fn roundrobin_slowstart_ramp() {
    let lb = lb(Balance::RoundRobin, &[100, 100]);
    let view = View::new(2);
    lb.set_weight(1, 0);
    let mut got = [0usize; 2];
    for step in 1..=100u32 {
        lb.set_weight(1, step);
        for _ in 0..20 {
            got[server(lb.pick(&none(), &view))] += 1;
        }
    }
    // Server 1 ramped from 1% to 50% of the traffic: about a third overall.
    let share = got[1] as f64 / 2000.0;
    assert!((0.28..0.39).contains(&share), "{got:?}");
    assert_eq!(lb.weight(1), 100);
    assert_eq!(count(&lb, &view, 200, 2), [100, 100]);
}

#[test]
fn roundrobin_skips_full_servers() {
    let lb = lb(Balance::RoundRobin, &[1, 1, 1]);
    let view = View::new(3);
    view.set_maxconn(1, 1);
    view.add_load(1);
    let c = count(&lb, &view, 300, 3);
    assert_eq!(c[1], 0);
    assert_eq!(c[0] + c[2], 300);
    assert!(c[0].abs_diff(c[2]) <= 2, "{c:?}");
}

// ---------------------------------------------------------------- static-rr

#[test]
fn static_rr_ignores_weight_changes_but_not_zero() {
    let lb = lb(Balance::StaticRr, &[2, 1]);
    let view = View::new(2);
    lb.set_weight(0, 50);
    assert_eq!(lb.weight(0), 2);
    assert_eq!(count(&lb, &view, 300, 2), [200, 100]);
    lb.set_weight(0, 0);
    assert_eq!(count(&lb, &view, 10, 2), [0, 10]);
    lb.set_weight(0, 7);
    assert_eq!(lb.weight(0), 2);
    assert_eq!(count(&lb, &view, 300, 2), [200, 100]);
}

// ---------------------------------------------------------------- leastconn

#[test]
fn leastconn_least_loaded_and_ties_round_robin() {
    let lb = lb(Balance::LeastConn, &[1, 1, 1]);
    let view = View::new(3);
    // Short requests: each released before the next: ties take turns.
    let seq: Vec<usize> = (0..6)
        .map(|_| {
            let s = server(lb.pick(&none(), &view));
            lb.taken(s);
            lb.released(s);
            s
        })
        .collect();
    assert_eq!(seq, [0, 1, 2, 0, 1, 2]);
    // Long requests: the least loaded gets the next one.
    lb.taken(0);
    lb.taken(0);
    lb.taken(1);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(2));
    lb.taken(2);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(1));
    lb.released(0);
    lb.released(0);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(0));
}

#[test]
fn leastconn_weighted_concurrency() {
    let lb = lb(Balance::LeastConn, &[3, 1]);
    let view = View::new(2);
    let mut c = [0; 2];
    for _ in 0..400 {
        let s = server(lb.pick(&none(), &view));
        lb.taken(s);
        c[s] += 1;
    }
    assert_eq!(c, [300, 100]);
    // Weight change re-keys the servers: server 1 (load 100, now weight 3)
    // catches up with server 0 (load 300, weight 3).
    lb.set_weight(1, 3);
    for _ in 0..200 {
        let s = server(lb.pick(&none(), &view));
        lb.taken(s);
        c[s] += 1;
    }
    assert_eq!(c, [300, 300]);
}

#[test]
fn leastconn_skips_full_and_avoided() {
    let lb = lb(Balance::LeastConn, &[1, 1]);
    let view = View::new(2);
    view.set_maxconn(0, 1);
    view.add_load(0);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(1));
    assert_eq!(lb.pick_avoiding(&none(), &view, 1), Pick::Server(1));
    view.set_maxconn(1, 1);
    view.add_load(1);
    assert_eq!(lb.pick(&none(), &view), Pick::Full);
}

// ---------------------------------------------------------------- first

#[test]
fn first_fills_in_id_order() {
    let mut s = specs(&[1, 1, 1]);
    s[0].id = 30;
    s[1].id = 10;
    s[2].id = 20;
    let lb = Lb::new(&Balance::First, &HashType::default(), false, &s);
    let view = View::new(3);
    for i in 0..3 {
        view.set_maxconn(i, 2);
    }
    let mut order = Vec::new();
    for _ in 0..6 {
        let s = server(lb.pick(&none(), &view));
        view.add_load(s);
        order.push(s);
    }
    assert_eq!(order, [1, 1, 2, 2, 0, 0]);
    assert_eq!(lb.pick(&none(), &view), Pick::Full);
    // Unlimited server takes everything.
    view.set_maxconn(2, 0);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(2));
    assert_eq!(lb.pick(&none(), &view), Pick::Server(2));
}

// ---------------------------------------------------------------- hashing

fn keys(n: usize) -> Vec<Vec<u8>> {
    let mut x = 0x1234_5678_9abc_def0u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("/item/{x:x}?q=1").into_bytes()
        })
        .collect()
}

fn assignment(lb: &Lb, view: &View, keys: &[Vec<u8>]) -> Vec<usize> {
    keys.iter()
        .map(|k| server(lb.pick(&uri_key(k), view)))
        .collect()
}

#[test]
fn consistent_hashing_moves_only_the_removed_servers_keys() {
    const N: usize = 10;
    let keys = keys(10_000);
    for by_health in [false, true] {
        let lb = hashed(uri_bal(), HashMethod::Consistent, &[1; N]);
        let view = View::new(N);
        let before = assignment(&lb, &view, &keys);
        let mut per = [0usize; N];
        before.iter().for_each(|&s| per[s] += 1);
        assert!(per.iter().all(|&c| c > 300), "{per:?}");
        if by_health {
            view.set_up(3, false);
        } else {
            lb.set_weight(3, 0);
        }
        let after = assignment(&lb, &view, &keys);
        let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        for (a, b) in before.iter().zip(&after) {
            assert_ne!(*b, 3);
            if *a != 3 {
                assert_eq!(a, b, "a key not on the removed server moved");
            }
        }
        assert_eq!(moved, per[3]);
        assert!(moved < 2 * keys.len() / N, "moved {moved}");
        // Back again: the original assignment returns.
        if by_health {
            view.set_up(3, true);
            lb.refresh(&view);
        } else {
            lb.set_weight(3, 1);
        }
        assert_eq!(assignment(&lb, &view, &keys), before);
    }
}

#[test]
fn map_based_moves_many_keys() {
    const N: usize = 10;
    let keys = keys(10_000);
    let lb = hashed(uri_bal(), HashMethod::MapBased, &[1; N]);
    let view = View::new(N);
    let before = assignment(&lb, &view, &keys);
    lb.set_weight(3, 0);
    let after = assignment(&lb, &view, &keys);
    let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert!(moved > keys.len() / 2, "moved {moved}");
    assert!(after.iter().all(|&s| s != 3));
}

#[test]
fn hashing_follows_weights() {
    let keys = keys(20_000);
    for method in [HashMethod::MapBased, HashMethod::Consistent] {
        let lb = hashed(uri_bal(), method, &[3, 1]);
        let view = View::new(2);
        let a = assignment(&lb, &view, &keys);
        let share = a.iter().filter(|&&s| s == 0).count() as f64 / a.len() as f64;
        // map-based is exact up to the hash's spread; the ring's arcs vary.
        let tol = if method == HashMethod::MapBased {
            0.03
        } else {
            0.10
        };
        assert!((share - 0.75).abs() < tol, "{method:?}: {share}");
    }
}

#[test]
fn uri_options_change_what_is_hashed() {
    let lb = hashed(uri_bal(), HashMethod::Consistent, &[1; 16]);
    let view = View::new(16);
    let pick = |lb: &Lb, u: &[u8]| server(lb.pick(&uri_key(u), &view));
    // Query ignored by default.
    for u in keys(50) {
        let path = u.split(|&c| c == b'?').next().unwrap().to_vec();
        assert_eq!(pick(&lb, &u), pick(&lb, &path));
    }
    let depth1 = hashed(
        Balance::Uri {
            whole: false,
            len: None,
            depth: Some(1),
        },
        HashMethod::Consistent,
        &[1; 16],
    );
    let first = pick(&depth1, b"/item/a");
    for u in keys(50) {
        assert_eq!(pick(&depth1, &u), first);
    }
    let whole = hashed(
        Balance::Uri {
            whole: true,
            len: None,
            depth: None,
        },
        HashMethod::Consistent,
        &[1; 16],
    );
    let distinct: std::collections::HashSet<usize> = (0..64)
        .map(|i| pick(&whole, format!("/same?v={i}").as_bytes()))
        .collect();
    assert!(distinct.len() > 4);
}

#[test]
fn missing_keys_fall_back_to_round_robin() {
    let url = hashed(
        Balance::UrlParam {
            name: "user".into(),
        },
        HashMethod::MapBased,
        &[1, 1],
    );
    assert_eq!(url.needs().url_param.as_deref(), Some("user"));
    let view = View::new(2);
    assert_eq!(count(&url, &view, 100, 2), [50, 50]);
    let k = RequestKey {
        url_param: Some(b"bob"),
        ..RequestKey::default()
    };
    let s = server(url.pick(&k, &view));
    assert!((0..20).all(|_| url.pick(&k, &view) == Pick::Server(s)));

    let hdr = hashed(
        Balance::Hdr {
            name: "Host".into(),
            use_domain_only: true,
        },
        HashMethod::Consistent,
        &[1; 8],
    );
    assert!(hdr.needs().use_domain_only);
    assert_eq!(hdr.needs().header.as_deref(), Some("Host"));
    let view = View::new(8);
    let empty = RequestKey {
        header: Some(b""),
        ..RequestKey::default()
    };
    let c = (0..80).fold([0usize; 8], |mut c, _| {
        c[server(hdr.pick(&empty, &view))] += 1;
        c
    });
    assert_eq!(c, [10; 8]);
    let host = |h: &'static [u8]| {
        server(hdr.pick(
            &RequestKey {
                header: Some(h),
                ..RequestKey::default()
            },
            &view,
        ))
    };
    assert_eq!(host(b"www.example.com"), host(b"api.example.org:8443"));
}

#[test]
fn source_hashing_is_sticky() {
    let lb = hashed(Balance::Source, HashMethod::MapBased, &[1; 5]);
    assert!(lb.needs().src);
    let view = View::new(5);
    let mut seen = std::collections::HashSet::new();
    for i in 0..200u32 {
        let ip: IpAddr = if i % 2 == 0 {
            std::net::Ipv4Addr::from(0x0a00_0000 + i).into()
        } else {
            std::net::Ipv6Addr::from(0x2001_0db8_u128 << 96 | u128::from(i)).into()
        };
        let k = RequestKey {
            src: Some(ip),
            ..RequestKey::default()
        };
        let s = server(lb.pick(&k, &view));
        assert_eq!(lb.pick(&k, &view), Pick::Server(s));
        seen.insert(s);
    }
    assert_eq!(seen.len(), 5);
}

#[test]
fn hashing_moves_on_when_the_server_is_full_or_avoided() {
    for method in [HashMethod::MapBased, HashMethod::Consistent] {
        let lb = hashed(uri_bal(), method, &[1; 4]);
        let view = View::new(4);
        let k = uri_key(b"/x");
        let s = server(lb.pick(&k, &view));
        let other = server(lb.pick_avoiding(&k, &view, s));
        assert_ne!(other, s);
        view.set_maxconn(s, 1);
        view.add_load(s);
        assert_eq!(lb.pick(&k, &view), Pick::Server(other));
    }
}

// ---------------------------------------------------------------- random

#[test]
fn random_balances_load_by_weight() {
    let lb = lb(Balance::Random { draws: 2 }, &[3, 1, 2]);
    let view = View::new(3);
    // Long-lived connections: the load accumulates, power of two choices
    // keeps load/weight level.
    for _ in 0..6000 {
        let s = server(lb.pick(&none(), &view));
        view.add_load(s);
    }
    let l: Vec<u32> = view
        .load
        .iter()
        .map(|l| l.load(Ordering::Relaxed))
        .collect();
    for (i, w) in [3.0, 1.0, 2.0].iter().enumerate() {
        let share = f64::from(l[i]) / 6000.0;
        assert!((share - w / 6.0).abs() < 0.03, "{l:?}");
    }
}

#[test]
fn random_without_load_follows_weights_loosely() {
    let lb = lb(Balance::Random { draws: 1 }, &[3, 1]);
    let view = View::new(2);
    let c = count(&lb, &view, 20_000, 2);
    let share = c[0] as f64 / 20_000.0;
    assert!((0.6..0.9).contains(&share), "{c:?}");
}

// ---------------------------------------------------------------- backups

fn with_backups(balance: Balance, allbackups: bool) -> Lb {
    // 0, 1: actives; 2 (id 9), 3 (id 5), 4 (id 7): backups.
    let mut s = specs(&[1, 1, 1, 1, 1]);
    for (i, id) in [(2, 9), (3, 5), (4, 7)] {
        s[i].backup = true;
        s[i].id = id;
    }
    Lb::new(&balance, &HashType::default(), allbackups, &s)
}

#[test]
fn backups_only_when_no_active_is_usable() {
    for balance in [Balance::RoundRobin, Balance::LeastConn, Balance::First] {
        let lb = with_backups(balance.clone(), false);
        let view = View::new(5);
        let c = count(&lb, &view, 100, 5);
        assert_eq!(c[2] + c[3] + c[4], 0, "{balance:?}");
        // Actives full: queue, never spill.
        view.set_maxconn(0, 1);
        view.set_maxconn(1, 1);
        view.add_load(0);
        view.add_load(1);
        assert_eq!(lb.pick(&none(), &view), Pick::Full, "{balance:?}");
        // Actives down: the first backup by id (index 3) alone.
        view.set_up(0, false);
        view.set_up(1, false);
        assert_eq!(count(&lb, &view, 20, 5), [0, 0, 0, 20, 0], "{balance:?}");
        // Weight 0 does not count as available either.
        view.set_up(0, true);
        lb.refresh(&view);
        lb.set_weight(0, 0);
        assert_eq!(count(&lb, &view, 5, 5)[3], 5, "{balance:?}");
        // An active back with a weight takes over again.
        lb.set_weight(0, 1);
        view.load[0].store(0, Ordering::Relaxed);
        assert_eq!(count(&lb, &view, 5, 5)[0], 5, "{balance:?}");
    }
}

#[test]
fn allbackups_balances_all_backups() {
    let lb = with_backups(Balance::RoundRobin, true);
    let view = View::new(5);
    view.set_up(0, false);
    view.set_up(1, false);
    lb.refresh(&view);
    assert_eq!(count(&lb, &view, 30, 5), [0, 0, 10, 10, 10]);
}

#[test]
fn full_versus_no_server() {
    let lb = with_backups(Balance::RoundRobin, false);
    let view = View::new(5);
    for i in 0..5 {
        view.set_up(i, false);
    }
    assert_eq!(lb.pick(&none(), &view), Pick::NoServer);
    view.set_up(4, true);
    lb.refresh(&view);
    assert_eq!(lb.pick(&none(), &view), Pick::Server(4));
    view.set_maxconn(4, 1);
    view.add_load(4);
    assert_eq!(lb.pick(&none(), &view), Pick::Full);
    let empty = Lb::new(&Balance::RoundRobin, &HashType::default(), false, &[]);
    assert_eq!(empty.pick(&none(), &view), Pick::NoServer);
}

#[test]
fn down_servers_are_noticed_without_being_told() {
    let lb = lb(Balance::RoundRobin, &[1, 1, 1]);
    let view = View::new(3);
    view.set_up(1, false);
    let c = count(&lb, &view, 300, 3);
    assert_eq!(c[1], 0);
    assert_eq!(c[0], 150);
    // Coming back is noticed by the per-pick check within a few picks.
    view.set_up(1, true);
    let c = count(&lb, &view, 300, 3);
    assert!(c[1] >= 95, "{c:?}");
}

#[test]
fn avoid_unless_only_choice() {
    for balance in [
        Balance::RoundRobin,
        Balance::StaticRr,
        Balance::LeastConn,
        Balance::First,
        Balance::Random { draws: 2 },
    ] {
        let lb = lb(balance.clone(), &[1, 1]);
        let view = View::new(2);
        for _ in 0..20 {
            assert_eq!(
                lb.pick_avoiding(&none(), &view, 0),
                Pick::Server(1),
                "{balance:?}"
            );
        }
        view.set_up(1, false);
        assert_eq!(
            lb.pick_avoiding(&none(), &view, 0),
            Pick::Server(0),
            "{balance:?}"
        );
    }
}

// ---------------------------------------------------------------- costs

/// The number of server checks a pick makes does not grow with the number
/// of servers: O(1) for roundrobin and hashing, O(log n) for leastconn (the
/// ordered set's first entry; the check count itself is constant).
#[test]
fn pick_cost_does_not_grow_with_servers() {
    let per_pick = |balance: Balance, n: usize| {
        let lb = Lb::new(&balance, &HashType::default(), false, &specs(&vec![1; n]));
        let view = View::new(n);
        let keys = keys(1000);
        let before = view.calls();
        for k in &keys {
            let s = server(lb.pick(&uri_key(k), &view));
            lb.taken(s);
            lb.released(s);
        }
        (view.calls() - before) as f64 / 1000.0
    };
    for balance in [
        Balance::RoundRobin,
        Balance::LeastConn,
        Balance::StaticRr,
        uri_bal(),
    ] {
        let small = per_pick(balance.clone(), 10);
        let large = per_pick(balance.clone(), 100);
        assert!(small <= 3.0 && large <= 3.0, "{balance:?}: {small} {large}");
    }
}

/// Timings, for information: `cargo test -p fairlead-balance --release --
/// --ignored --nocapture timings`.
#[test]
#[ignore]
fn timings() {
    use std::time::Instant;
    let key = uri_key(b"/some/path?x=1");
    for n in [10usize, 100, 1000] {
        let view = View::new(n);
        let weights = vec![256; n];
        let ht = |method| HashType {
            method,
            function: HashFunction::Sdbm,
            avalanche: false,
        };
        for (name, balance, h) in [
            ("roundrobin", Balance::RoundRobin, ht(HashMethod::MapBased)),
            ("leastconn", Balance::LeastConn, ht(HashMethod::MapBased)),
            (
                "random",
                Balance::Random { draws: 2 },
                ht(HashMethod::MapBased),
            ),
            ("uri map", uri_bal(), ht(HashMethod::MapBased)),
            ("uri consistent", uri_bal(), ht(HashMethod::Consistent)),
        ] {
            let lb = Lb::new(&balance, &h, false, &specs(&weights));
            let t = Instant::now();
            const PICKS: u32 = 200_000;
            for _ in 0..PICKS {
                let s = server(lb.pick(&key, &view));
                lb.taken(s);
                lb.released(s);
            }
            let pick_ns = t.elapsed().as_nanos() as f64 / f64::from(PICKS);
            let t = Instant::now();
            for w in 1..=20 {
                lb.set_weight(0, w * 12);
            }
            let rebuild_us = t.elapsed().as_micros() as f64 / 20.0;
            println!("n={n:5} {name:15} pick {pick_ns:7.1} ns  set_weight {rebuild_us:9.1} us");
        }
    }
}

#[test]
fn rdp_cookie_hashes_the_value_like_the_other_keys() {
    let rdp = hashed(
        Balance::RdpCookie {
            name: "mstshash".into(),
        },
        HashMethod::MapBased,
        &[1; 5],
    );
    assert_eq!(rdp.needs().rdp_cookie.as_deref(), Some("mstshash"));
    let url = hashed(
        Balance::UrlParam { name: "u".into() },
        HashMethod::MapBased,
        &[1; 5],
    );
    let view = View::new(5);
    for user in [&b"alice"[..], b"bob", b"carol", b"dave", b"eve", b"x"] {
        let k = RequestKey {
            rdp_cookie: Some(user),
            ..RequestKey::default()
        };
        let s = server(rdp.pick(&k, &view));
        assert!((0..10).all(|_| rdp.pick(&k, &view) == Pick::Server(s)));
        // The same hash function and map as every hashing key.
        let u = RequestKey {
            url_param: Some(user),
            ..RequestKey::default()
        };
        assert_eq!(s, server(url.pick(&u, &view)), "{user:?}");
    }
    // An empty value or none: round robin.
    let empty = RequestKey {
        rdp_cookie: Some(b""),
        ..RequestKey::default()
    };
    let c = (0..50).fold([0usize; 5], |mut c, _| {
        c[server(rdp.pick(&empty, &view))] += 1;
        c
    });
    assert_eq!(c, [10; 5]);
    assert_eq!(count(&rdp, &view, 50, 5), [10; 5]);
}
