//! Servers added and removed at run time: the published set is rebuilt
//! for every algorithm, traffic in flight and queued keeps working.

use super::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

fn backend(n: usize, tweak: impl Fn(&mut config::Backend)) -> Arc<Backend> {
    let mut cfg = config::Backend {
        name: "bk".into(),
        servers: (0..n)
            .map(|i| {
                config::Server::new(
                    &format!("s{i}"),
                    config::ServerAddr::Ip(([127, 0, 0, 1], 1000 + i as u16).into()),
                )
            })
            .collect(),
        ..Default::default()
    };
    tweak(&mut cfg);
    let resolve = |a: &config::ServerAddr| match a {
        config::ServerAddr::Ip(a) => Ok(*a),
        _ => Err(std::io::Error::other("no name here")),
    };
    Arc::new(Backend::new(&cfg, &resolve, &mut 0, 0).unwrap())
}

fn spec(name: &str, port: u16) -> config::Server {
    config::Server::new(name, config::ServerAddr::Ip(([127, 0, 0, 1], port).into()))
}

fn add(b: &Backend, name: &str, port: u16) -> Arc<Server> {
    b.add_server(&spec(name, port), ([127, 0, 0, 1], port).into())
        .unwrap()
}

fn enable(b: &Backend, s: &Server) {
    b.apply(s.conf.id, ServerCommand::State(AdminState::Ready))
        .unwrap();
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Names of the servers `n` picks go to (each slot released at once).
fn picks(b: &Arc<Backend>, n: usize, key: impl Fn(usize) -> RequestKey<'static>) -> Vec<String> {
    rt().block_on(async {
        let mut out = Vec::new();
        for i in 0..n {
            let s = b.assign(&key(i), None, None).await.unwrap();
            out.push(s.server().conf.name.clone());
        }
        out
    })
}

fn src_key(i: usize) -> RequestKey<'static> {
    RequestKey {
        src: Some(std::net::IpAddr::from([
            10,
            0,
            (i / 256) as u8,
            (i % 256) as u8,
        ])),
        ..Default::default()
    }
}

#[test]
fn added_server_starts_in_maintenance_then_serves() {
    let b = backend(2, |_| {});
    let c = add(&b, "c", 2000);
    assert!(c.conf.dynamic);
    assert_eq!(c.conf.puid, 3, "lowest free id");
    assert!(c.admin.maint.load(Ordering::Relaxed));
    assert_eq!(b.servers().len(), 3);
    assert_eq!(b.servers()[2].conf.name, "c", "added at the end");
    let before = picks(&b, 12, |_| RequestKey::default());
    assert!(!before.contains(&"c".to_string()), "{before:?}");
    enable(&b, &c);
    let after = picks(&b, 12, |_| RequestKey::default());
    assert_eq!(after.iter().filter(|n| *n == "c").count(), 4, "{after:?}");
    assert_eq!(b.server_by_name("c").unwrap().conf.id, c.conf.id);
    assert_eq!(b.server_by_id(c.conf.id).unwrap().conf.name, "c");
}

#[test]
fn every_dynamic_algorithm_picks_up_an_added_server() {
    use config::{Balance, HashMethod};
    type Tweak = Box<dyn Fn(&mut config::Backend)>;
    let algos: Vec<(&str, Tweak)> = vec![
        ("roundrobin", Box::new(|_| {})),
        (
            "leastconn",
            Box::new(|c| c.options.balance = Balance::LeastConn),
        ),
        ("first", Box::new(|c| c.options.balance = Balance::First)),
        (
            "random",
            Box::new(|c| c.options.balance = Balance::Random { draws: 2 }),
        ),
        (
            "source consistent",
            Box::new(|c| {
                c.options.balance = Balance::Source;
                c.options.hash_type.method = HashMethod::Consistent;
            }),
        ),
    ];
    for (name, tweak) in algos {
        let b = backend(2, |c| tweak(c));
        let n = add(&b, "new", 2000);
        enable(&b, &n);
        // With the others in maintenance, only the new one can serve.
        for s in b.servers().iter().filter(|s| s.conf.name != "new") {
            b.apply(s.conf.id, ServerCommand::State(AdminState::Maint))
                .unwrap();
        }
        let got = picks(&b, 20, src_key);
        assert!(got.iter().all(|s| s == "new"), "{name}: {got:?}");
    }
}

#[test]
fn static_algorithms_refuse_added_servers() {
    use config::{Balance, HashMethod};
    let st = backend(1, |c| c.options.balance = Balance::StaticRr);
    let map = backend(1, |c| c.options.balance = Balance::Source);
    for b in [st, map] {
        let e = b
            .add_server(&spec("x", 1), ([127, 0, 0, 1], 1).into())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Backend must use a dynamic load balancing to support dynamic servers."
        );
        assert_eq!(b.servers().len(), 1);
    }
    let ok = backend(1, |c| {
        c.options.balance = Balance::Source;
        c.options.hash_type.method = HashMethod::Consistent;
    });
    assert!(ok
        .add_server(&spec("x", 1), ([127, 0, 0, 1], 1).into())
        .is_ok());
}

#[test]
fn duplicate_names_and_ids_are_refused() {
    let b = backend(2, |_| {});
    let e = b
        .add_server(&spec("s1", 1), ([127, 0, 0, 1], 1).into())
        .unwrap_err();
    assert_eq!(e, AddError::DuplicateName);
    let mut with_id = spec("x", 1);
    with_id.id = Some(2);
    let e = b
        .add_server(&with_id, ([127, 0, 0, 1], 1).into())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "'id' : custom id 2 already used at (null):0 ('server s1')."
    );
    with_id.id = Some(10);
    let x = b.add_server(&with_id, ([127, 0, 0, 1], 1).into()).unwrap();
    assert_eq!(x.conf.puid, 10);
    // The next one without `id` takes the lowest free id.
    assert_eq!(add(&b, "y", 1).conf.puid, 3);
}

#[test]
fn consistent_hashing_keeps_the_keys_of_the_servers_that_stay() {
    let b = backend(4, |c| {
        c.options.balance = config::Balance::Source;
        c.options.hash_type.method = config::HashMethod::Consistent;
        // Spreads the test's neighbouring addresses over the ring.
        c.options.hash_type.avalanche = true;
    });
    let before = picks(&b, 400, src_key);
    let n = add(&b, "new", 2000);
    enable(&b, &n);
    let after = picks(&b, 400, src_key);
    let mut moved = 0;
    for (x, y) in before.iter().zip(&after) {
        if x != y {
            assert_eq!(y, "new", "a key moved between two old servers");
            moved += 1;
        }
    }
    // About a fifth of the keys go to the new server.
    assert!((30..=160).contains(&moved), "{moved} keys moved");
    // Removing it again gives every key back to its old server.
    b.apply(n.conf.id, ServerCommand::State(AdminState::Maint))
        .unwrap();
    b.remove_server(n.conf.id).unwrap();
    assert_eq!(picks(&b, 400, src_key), before);
}

#[test]
fn removal_needs_maintenance_and_no_traffic() {
    let b = backend(2, |_| {});
    let s1 = b.servers()[1].clone();
    assert_eq!(
        b.remove_server(s1.conf.id).unwrap_err().to_string(),
        "Only servers in maintenance mode can be deleted."
    );
    rt().block_on(async {
        let held = b
            .assign(&RequestKey::default(), Some(s1.conf.id), None)
            .await
            .unwrap();
        assert_eq!(held.id(), s1.conf.id);
        b.apply(s1.conf.id, ServerCommand::State(AdminState::Maint))
            .unwrap();
        assert_eq!(
            b.remove_server(s1.conf.id).unwrap_err().to_string(),
            "Server still has connections attached to it, cannot remove it."
        );
        drop(held);
    });
    let gone = b.remove_server(s1.conf.id).unwrap();
    assert_eq!(gone.conf.name, "s1");
    assert_eq!(b.servers().len(), 1);
    assert!(b.server_by_id(s1.conf.id).is_none());
    assert_eq!(
        b.remove_server(s1.conf.id).unwrap_err(),
        RemoveError::NoSuchServer
    );
    assert!(picks(&b, 5, |_| RequestKey::default())
        .iter()
        .all(|n| n == "s0"));
}

#[test]
fn slots_taken_before_a_rebuild_are_released_after_it() {
    let b = backend(2, |c| c.options.balance = config::Balance::LeastConn);
    rt().block_on(async {
        let key = RequestKey::default();
        let a = b.assign(&key, None, None).await.unwrap();
        let c = b.assign(&key, None, None).await.unwrap();
        let old_set = b.servers();
        let n = add(&b, "n", 2000);
        enable(&b, &n);
        assert!(
            !Arc::ptr_eq(&old_set, &b.servers()),
            "a new set is published"
        );
        assert_eq!(old_set.len(), 2, "the old set is left as it was");
        // leastconn was seeded with the loads: the idle new server wins.
        let x = b.assign(&key, None, None).await.unwrap();
        assert_eq!(x.server().conf.name, "n");
        drop((a, c, x));
        assert_eq!(b.sessions.load(Ordering::Relaxed), 0);
        for s in b.servers().iter() {
            assert_eq!(s.metrics.cur.load(Ordering::Relaxed), 0, "{}", s.conf.name);
        }
        // Loads are even again: three picks visit the three servers.
        let mut seen = HashSet::new();
        let mut held = Vec::new();
        for _ in 0..3 {
            let s = b.assign(&key, None, None).await.unwrap();
            seen.insert(s.server().conf.name.clone());
            held.push(s);
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
    });
}

#[test]
fn a_queued_request_gets_an_added_server() {
    let b = backend(1, |c| {
        c.servers[0].maxconn = 1;
        c.options.timeouts.queue = Some(Duration::from_secs(5));
    });
    rt().block_on(async {
        let key = RequestKey::default();
        let busy = b.assign(&key, None, None).await.unwrap();
        let b2 = b.clone();
        let waiter = tokio::spawn(async move {
            let s = b2.assign(&RequestKey::default(), None, None).await.unwrap();
            s.server().conf.name.clone()
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while b.queue.is_empty() {
            assert!(std::time::Instant::now() < deadline, "never queued");
            tokio::task::yield_now().await;
        }
        let n = add(&b, "n", 2000);
        enable(&b, &n);
        assert_eq!(waiter.await.unwrap(), "n");
        assert!(b.queue.is_empty());
        drop(busy);
    });
}

#[test]
fn many_picks_race_with_membership_changes() {
    // Worker threads pick and release while another thread adds, enables,
    // disables and removes servers: counts end exact, nothing panics.
    let b = backend(2, |c| c.options.balance = config::Balance::LeastConn);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (b, stop) = (b.clone(), stop.clone());
        workers.push(std::thread::spawn(move || {
            let mut seen: HashMap<String, usize> = HashMap::new();
            rt().block_on(async {
                while !stop.load(Ordering::Relaxed) {
                    let s = b.assign(&RequestKey::default(), None, None).await.unwrap();
                    *seen.entry(s.server().conf.name.clone()).or_default() += 1;
                }
            });
            seen
        }));
    }
    for round in 0..50 {
        let name = format!("d{round}");
        let n = add(&b, &name, 3000);
        enable(&b, &n);
        std::thread::yield_now();
        b.apply(n.conf.id, ServerCommand::State(AdminState::Maint))
            .unwrap();
        // It may still be in use for a moment: retry until it is free.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while b.remove_server(n.conf.id).is_err() {
            assert!(std::time::Instant::now() < deadline, "{name} never freed");
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total: HashMap<String, usize> = HashMap::new();
    for w in workers {
        for (k, v) in w.join().unwrap() {
            *total.entry(k).or_default() += v;
        }
    }
    assert!(total.get("s0").copied().unwrap_or(0) > 0);
    assert_eq!(b.sessions.load(Ordering::Relaxed), 0);
    assert_eq!(b.servers().len(), 2);
}
