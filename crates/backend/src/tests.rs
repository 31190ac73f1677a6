use super::*;
use std::sync::atomic::Ordering;

fn backend_with(spec: &[(u32, bool)], tweak: impl Fn(&mut config::Backend)) -> Arc<Backend> {
    let mut cfg = config::Backend {
        name: "bk".into(),
        servers: spec
            .iter()
            .enumerate()
            .map(|(i, &(weight, backup))| config::Server {
                weight,
                backup,
                ..config::Server::new(
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
        _ => unreachable!(),
    };
    Arc::new(Backend::new(&cfg, &resolve, &mut 0, 0).unwrap())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn backup_only_when_no_active_is_up() {
    let b = backend_with(&[(1, false), (1, false), (1, true)], |_| {});
    rt().block_on(async {
        for _ in 0..6 {
            let s = b.assign(&RequestKey::default(), None, None).await.unwrap();
            assert_ne!(s.idx(), 2);
        }
        b.servers()[0].admin.maint.store(true, Ordering::Relaxed);
        b.servers()[1].admin.maint.store(true, Ordering::Relaxed);
        b.refresh_weights();
        let s = b.assign(&RequestKey::default(), None, None).await.unwrap();
        assert_eq!(s.idx(), 2);
        b.servers()[2].admin.maint.store(true, Ordering::Relaxed);
        b.refresh_weights();
        drop(s);
        assert_eq!(
            b.assign(&RequestKey::default(), None, None)
                .await
                .err()
                .map(|e| e.cause),
            Some(Cause::NoServer)
        );
    });
}

#[test]
fn avoid_prefers_another_server() {
    let b = backend_with(&[(1, false), (1, false)], |_| {});
    rt().block_on(async {
        for _ in 0..5 {
            let s = b
                .assign(&RequestKey::default(), None, Some(b.servers()[0].conf.id))
                .await
                .unwrap();
            assert_eq!(s.idx(), 1);
        }
    });
}

#[test]
fn maxconn_queues_then_times_out() {
    let b = backend_with(&[(1, false)], |c| {
        c.servers[0].maxconn = 1;
        c.options.timeouts.queue = Some(Duration::from_millis(50));
    });
    rt().block_on(async {
        let first = b.assign(&RequestKey::default(), None, None).await.unwrap();
        assert_eq!(b.servers()[0].metrics.cur.load(Ordering::Relaxed), 1);
        // The second waits, then gets 503 at `timeout queue`.
        let second = b.assign(&RequestKey::default(), None, None).await;
        assert_eq!(second.err().map(|e| e.cause), Some(Cause::QueueTimeout));
        assert_eq!(b.queue.len(), 0);
        drop(first);
        assert_eq!(b.servers()[0].metrics.cur.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn released_slot_goes_to_the_queued_request() {
    let b = backend_with(&[(1, false)], |c| {
        c.servers[0].maxconn = 1;
        c.options.timeouts.queue = Some(Duration::from_secs(5));
    });
    let rt = rt();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let first = b.assign(&RequestKey::default(), None, None).await.unwrap();
        let b2 = b.clone();
        let waiter = tokio::task::spawn_local(async move {
            b2.assign(&RequestKey::default(), None, None)
                .await
                .map(|s| s.idx())
        });
        while b.queue.is_empty() {
            tokio::task::yield_now().await;
        }
        drop(first);
        assert_eq!(waiter.await.unwrap(), Ok(0));
        assert_eq!(b.servers()[0].metrics.cur.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn persistence_prefers_the_cookie_server() {
    let b = backend_with(&[(1, false), (1, false)], |c| {
        c.servers[1].cookie = Some("s2".into());
    });
    assert_eq!(b.server_by_cookie(b"s2"), Some(b.servers()[1].conf.id));
    assert_eq!(b.server_by_cookie(b"nope"), None);
    rt().block_on(async {
        for _ in 0..4 {
            let s = b
                .assign(&RequestKey::default(), Some(b.servers()[1].conf.id), None)
                .await
                .unwrap();
            assert_eq!(s.idx(), 1);
        }
        // Down server: balanced elsewhere unless `option persist`.
        b.servers()[1].admin.maint.store(true, Ordering::Relaxed);
        b.refresh_weights();
        let s = b
            .assign(&RequestKey::default(), Some(b.servers()[1].conf.id), None)
            .await
            .unwrap();
        assert_eq!(s.idx(), 0);
    });
}

#[test]
fn minconn_grows_with_backend_load() {
    let b = backend_with(&[(1, false)], |c| {
        c.servers[0].maxconn = 100;
        c.servers[0].minconn = 10;
        c.options.fullconn = Some(1000);
    });
    assert_eq!(b.dyn_maxconn(&b.servers()[0]), 10);
    b.sessions.store(500, Ordering::Relaxed);
    assert_eq!(b.dyn_maxconn(&b.servers()[0]), 50);
    b.sessions.store(5000, Ordering::Relaxed);
    assert_eq!(b.dyn_maxconn(&b.servers()[0]), 100);
}

#[test]
fn redispatch_interval_rules() {
    let b = backend_with(&[(1, false)], |c| {
        c.options.retries = 3;
        c.options.redispatch = true;
        c.options.redispatch_interval = -1;
    });
    assert_eq!(
        (1..=3).map(|r| b.redispatch_now(r)).collect::<Vec<_>>(),
        [false, false, true]
    );
    let b = backend_with(&[(1, false)], |c| {
        c.options.retries = 4;
        c.options.redispatch = true;
        c.options.redispatch_interval = 2;
    });
    assert_eq!(
        (1..=4).map(|r| b.redispatch_now(r)).collect::<Vec<_>>(),
        [false, true, false, true]
    );
    let b = backend_with(&[(1, false)], |c| c.options.retries = 3);
    assert!(!(1..=3).any(|r| b.redispatch_now(r)));
}

#[test]
fn purge_closes_only_connections_idle_for_a_whole_period() {
    let rt = rt();
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        let s1 = tokio::net::TcpStream::connect(a).await.unwrap();
        let _peer = l.accept().await.unwrap();
        idle::put(ServerId(9001), s1.into(), false);
        // Just parked: kept.
        assert_eq!(idle::purge(), 0);
        assert_eq!(idle::count(ServerId(9001)), 1);
        idle::clear();
    });
}

#[test]
fn commands_change_servers_by_stable_id() {
    use crate::command::{AdminState, CommandError, ServerCommand};
    let b = backend_with(&[(1, false), (1, false), (1, false)], |_| {});
    let id = b.servers()[1].conf.id;
    assert_eq!(
        b.apply(id, ServerCommand::State(AdminState::Maint)),
        Ok(true)
    );
    assert!(!b.servers()[1].is_up());
    assert_eq!(
        b.apply(id, ServerCommand::State(AdminState::Maint)),
        Ok(false)
    );
    assert_eq!(
        b.apply(id, ServerCommand::State(AdminState::Drain)),
        Ok(true)
    );
    assert!(b.servers()[1].is_up());
    assert_eq!(b.servers()[1].eweight(), 0, "draining takes no new traffic");
    assert_eq!(
        b.apply(id, ServerCommand::State(AdminState::Ready)),
        Ok(true)
    );
    assert_eq!(b.apply(id, ServerCommand::Weight(300)), Ok(true));
    assert_eq!(b.servers()[1].admin.weight.load(Ordering::Relaxed), 256);
    assert_eq!(b.apply(id, ServerCommand::Maxconn(7)), Ok(true));
    assert_eq!(b.servers()[1].admin.maxconn.load(Ordering::Relaxed), 7);
    let ip = "127.0.0.9".parse().unwrap();
    assert_eq!(
        b.apply(id, ServerCommand::Addr { ip, port: None }),
        Ok(true)
    );
    assert_eq!(b.servers()[1].admin.addr.load().ip(), ip);
    assert_eq!(
        b.apply(id, ServerCommand::ForceHealth),
        Err(CommandError::Unsupported(
            "Forcing the health or agent state"
        ))
    );
    assert_eq!(
        b.apply(ServerId(u32::MAX), ServerCommand::Weight(1)),
        Err(CommandError::NoSuchServer)
    );
}

#[test]
fn servers_are_named_by_id_not_position() {
    // Two backends built from one id counter: ids run on across them, so
    // an id is never a position, and one backend's ids mean nothing to
    // the other.
    let cfg = |name: &str| config::Backend {
        name: name.into(),
        servers: (0..3)
            .map(|i| {
                config::Server::new(
                    &format!("s{i}"),
                    config::ServerAddr::Ip(([127, 0, 0, 1], 1000 + i as u16).into()),
                )
            })
            .collect(),
        ..Default::default()
    };
    let resolve = |a: &config::ServerAddr| match a {
        config::ServerAddr::Ip(a) => Ok(*a),
        _ => unreachable!(),
    };
    let mut next = 0;
    let a = Arc::new(Backend::new(&cfg("a"), &resolve, &mut next, 0).unwrap());
    let b = Arc::new(Backend::new(&cfg("b"), &resolve, &mut next, 0).unwrap());
    let ids: Vec<ServerId> = b.servers().iter().map(|s| s.conf.id).collect();
    assert_eq!(ids, [ServerId(3), ServerId(4), ServerId(5)]);
    assert_eq!(b.server_by_id(ServerId(4)).unwrap().conf.name, "s1");
    assert!(b.server_by_id(ServerId(1)).is_none(), "a's id in b");
    assert_eq!(
        b.apply(ServerId(1), ServerCommand::Weight(7)),
        Err(CommandError::NoSuchServer)
    );
    assert_eq!(a.servers()[1].admin.weight.load(Ordering::Relaxed), 1);
    rt().block_on(async {
        // `prefer` by id; an id from another backend is ignored.
        let key = RequestKey::default();
        let s = b.assign(&key, Some(ServerId(5)), None).await.unwrap();
        assert_eq!((s.id(), s.server().conf.name.as_str()), (ServerId(5), "s2"));
        drop(s);
        let s = b.assign(&key, Some(ServerId(2)), None).await.unwrap();
        assert_ne!(s.id(), ServerId(2));
        // `avoid` by id.
        for _ in 0..6 {
            let s = b.assign(&key, None, Some(ServerId(4))).await.unwrap();
            assert_ne!(s.id(), ServerId(4));
        }
    });
}
