//! The resolver against a real DNS server: dnsmasq on a loopback address of
//! its own (127.0.0.15x) and a free port, serving a hosts file.

mod common;

use common::{require_dnsmasq, wait_for, Dnsmasq};
use fairlead_dns::config::ResolversSection;
use fairlead_dns::events::{AddrPolicy, ServerId, ServerResolver};
use fairlead_dns::hold::{NameState, Status};
use fairlead_dns::runtime::{show_resolvers, NameKind, Resolvers};
use fairlead_dns::server::Family;
use fairlead_dns::template::TemplateSlots;
use fairlead_dns::wire::Record;
use std::net::IpAddr;
use std::time::Duration;
use tokio::sync::watch;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// One of big.test's addresses (dnsmasq rotates their order).
fn in_big(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V4(a) if a.octets()[..3] == [10, 2, 0] && (1..=60).contains(&a.octets()[3]))
}

fn section(dns: &Dnsmasq, extra: &[&[&str]]) -> ResolversSection {
    let mut s = ResolversSection::new("mydns");
    let addr = dns.addr.to_string();
    s.parse_line(&["nameserver", "dns1", &addr]).unwrap();
    s.parse_line(&["timeout", "retry", "300ms"]).unwrap();
    s.parse_line(&["timeout", "resolve", "100ms"]).unwrap();
    for line in extra {
        s.parse_line(line).unwrap();
    }
    s
}

/// Waits (5 s at most) for a valid state of the name.
async fn wait_valid(rx: &watch::Receiver<NameState>, what: &str) -> NameState {
    wait_for(Duration::from_secs(5), what, || {
        let s = rx.borrow().clone();
        (s.status == Status::Valid).then_some(s)
    })
    .await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_aaaa_nx_and_refused() {
    let Some(bin) = require_dnsmasq("a_aaaa_nx_and_refused") else {
        return;
    };
    let hosts = "10.0.0.1 a.test\nfd00::1 a.test\n10.0.0.7 v4only.test\n";
    let dns = Dnsmasq::start(&bin, "127.0.0.151", hosts, &["--cname=www.test,a.test"]);
    runtime().block_on(async {
        let r = Resolvers::new(section(&dns, &[&["resolve_retries", "2"]])).unwrap();
        assert_eq!(
            r.resolve_once("a.test", Family::Ipv4).await,
            Ok(ip("10.0.0.1"))
        );
        assert_eq!(
            r.resolve_once("A.Test.", Family::Ipv6).await,
            Ok(ip("fd00::1"))
        );
        // AAAA first, no AAAA record: the A query is asked at once
        assert_eq!(
            r.resolve_once("v4only.test", Family::Ipv6).await,
            Ok(ip("10.0.0.7"))
        );
        assert_eq!(
            r.resolve_once("missing.test", Family::Ipv4).await,
            Err(Status::Nx)
        );
        // a CNAME chain is followed
        assert_eq!(r.counter("dns1", "cname"), 0);
        assert_eq!(
            r.resolve_once("www.test", Family::Ipv4).await,
            Ok(ip("10.0.0.1"))
        );
        assert_eq!(r.counter("dns1", "cname"), 1);
        // outside the local domain, with no upstream, dnsmasq refuses
        assert_eq!(
            r.resolve_once("www.example.org", Family::Ipv4).await,
            Err(Status::Refused)
        );
        assert!(r.counter("dns1", "valid") >= 4);
        assert!(
            r.counter("dns1", "nx") >= 2,
            "NX for A then for AAAA, twice"
        );
        assert!(r.counter("dns1", "refused") >= 2);
        assert!(
            r.counter("dns1", "any_err") >= 1,
            "the empty AAAA answer of v4only.test"
        );
        assert_eq!(r.counter("dns1", "timeout"), 0);
        let text = show_resolvers(std::slice::from_ref(&r), Some("mydns")).unwrap();
        assert!(
            text.starts_with("Resolvers section mydns\n nameserver dns1:\n  sent:        "),
            "{text}"
        );
        assert!(
            text.contains(&format!("  valid:       {}\n", r.counter("dns1", "valid"))),
            "{text}"
        );
        assert_eq!(
            show_resolvers(&[r], Some("other")).unwrap_err(),
            "Can't find that resolvers section\n"
        );
    });
}

#[test]
fn changed_address_is_published_and_applied() {
    let Some(bin) = require_dnsmasq("changed_address_is_published_and_applied") else {
        return;
    };
    let dns = Dnsmasq::start(&bin, "127.0.0.152", "10.0.0.1 app.test\n", &[]);
    runtime().block_on(async {
        let r = Resolvers::new(section(&dns, &[])).unwrap();
        let rx = r
            .subscribe("app.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        tokio::spawn(r.clone().run());
        let policy = AddrPolicy {
            prefer: Family::Ipv4,
            ..AddrPolicy::default()
        };
        let mut srv = ServerResolver::new(
            ServerId::new("be", "s1"),
            policy,
            Some(ip("10.0.0.1")),
            false,
        );

        let state = wait_valid(&rx, "first answer").await;
        assert_eq!(
            state.records,
            vec![Record::Addr {
                ip: ip("10.0.0.1"),
                ttl: 0
            }]
        );
        assert!(srv.apply(&state, &[]).is_empty());

        dns.set_hosts("10.0.0.2 app.test\n");
        let state = wait_for(Duration::from_secs(5), "the new address", || {
            let s = rx.borrow().clone();
            (s.records.first().and_then(Record::ip) == Some(ip("10.0.0.2"))).then_some(s)
        })
        .await;
        let events: Vec<String> = srv
            .apply(&state, &[])
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            events,
            vec!["be/s1 changed its IP from 10.0.0.1 to 10.0.0.2 by mydns/dns1"]
        );
        assert!(
            r.counter("dns1", "update") >= 2,
            "first answer and the change"
        );
    });
}

#[test]
fn srv_records_fill_a_template() {
    let Some(bin) = require_dnsmasq("srv_records_fill_a_template") else {
        return;
    };
    let hosts = "10.1.0.1 node1.svc.test\n10.1.0.2 node2.svc.test\n";
    let dns = Dnsmasq::start(
        &bin,
        "127.0.0.153",
        hosts,
        &[
            "--srv-host=_http._tcp.svc.test,node1.svc.test,8080,0,512",
            "--srv-host=_http._tcp.svc.test,node2.svc.test,8081,0,1",
            "--srv-host=_http._tcp.svc.test,node3.svc.test,8082,0,1",
        ],
    );
    runtime().block_on(async {
        let r = Resolvers::new(section(&dns, &[])).unwrap();
        let rx = r
            .subscribe(
                "_http._tcp.svc.test",
                NameKind::for_name("_http._tcp.svc.test", Family::Ipv4),
            )
            .unwrap();
        tokio::spawn(r.clone().run());
        let policy = AddrPolicy {
            prefer: Family::Ipv4,
            ..AddrPolicy::default()
        };
        let mut slots = TemplateSlots::new(
            "be",
            "srv",
            (1, 4),
            "_http._tcp.svc.test",
            None,
            policy,
            false,
        );
        let state = wait_valid(&rx, "SRV answer").await;
        slots.apply(&state);
        let mut got: Vec<(String, u16, u32, Option<IpAddr>, bool)> = slots
            .slots()
            .iter()
            .filter_map(|s| Some((s.target.clone()?, s.port?, s.weight?, s.addr, s.maint)))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                (
                    "node1.svc.test".into(),
                    8080,
                    2,
                    Some(ip("10.1.0.1")),
                    false
                ),
                (
                    "node2.svc.test".into(),
                    8081,
                    1,
                    Some(ip("10.1.0.2")),
                    false
                ),
                // no address known for node3: bound but in maintenance
                ("node3.svc.test".into(), 8082, 1, None, true),
            ]
        );
        assert!(slots
            .slots()
            .iter()
            .filter(|s| s.target.is_none())
            .all(|s| s.maint && s.addr.is_none()));

        // node3 gets an address: its slot leaves maintenance, the others do not move
        let before: Vec<_> = slots.slots().iter().map(|s| s.target.clone()).collect();
        dns.set_hosts(&format!("{hosts}10.1.0.3 node3.svc.test\n"));
        let state = wait_for(Duration::from_secs(5), "node3's address", || {
            let s = rx.borrow().clone();
            let has = s
                .records
                .iter()
                .any(|r| matches!(r, Record::Srv(x) if x.addr == Some(ip("10.1.0.3"))));
            has.then_some(s)
        })
        .await;
        let events: Vec<String> = slots.apply(&state).iter().map(|e| e.to_string()).collect();
        let after: Vec<_> = slots.slots().iter().map(|s| s.target.clone()).collect();
        assert_eq!(before, after);
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(
            events[0].ends_with("changed its IP from (none) to 10.1.0.3 by mydns/dns1"),
            "{events:?}"
        );
        assert!(
            events[1].ends_with("administratively READY thanks to valid DNS answer"),
            "{events:?}"
        );
    });
}

#[test]
fn truncated_answer_is_asked_again_over_tcp() {
    let Some(bin) = require_dnsmasq("truncated_answer_is_asked_again_over_tcp") else {
        return;
    };
    let hosts: String = (1..=60).map(|i| format!("10.2.0.{i} big.test\n")).collect();
    let dns = Dnsmasq::start(&bin, "127.0.0.154", &hosts, &[]);
    runtime().block_on(async {
        // 60 A records (about 1000 bytes) do not fit in 512 bytes, but in dnsmasq's 1232
        let r = Resolvers::new(section(&dns, &[])).unwrap();
        let rx = r
            .subscribe("big.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        tokio::spawn(r.clone().run());
        let state = wait_valid(&rx, "the big answer").await;
        assert_eq!(state.records.len(), 60);
        assert!(r.counter("dns1", "truncated") >= 1);
        assert!(r.counter("dns1", "sent") >= 2, "UDP then TCP");

        // a UDP-only nameserver cannot get it
        let mut s = ResolversSection::new("udponly");
        s.parse_line(&["nameserver", "u", &format!("udp@{}", dns.addr)])
            .unwrap();
        s.parse_line(&["timeout", "retry", "200ms"]).unwrap();
        s.parse_line(&["resolve_retries", "1"]).unwrap();
        let u = Resolvers::new(s).unwrap();
        assert_eq!(
            u.resolve_once("big.test", Family::Ipv4).await,
            Err(Status::Other)
        );
        assert!(u.counter("u", "truncated") >= 1);

        // with a large accepted_payload_size, UDP carries it
        let mut s = ResolversSection::new("large");
        s.parse_line(&["nameserver", "l", &format!("udp@{}", dns.addr)])
            .unwrap();
        s.parse_line(&["accepted_payload_size", "4096"]).unwrap();
        let l = Resolvers::new(s).unwrap();
        let got = l.resolve_once("big.test", Family::Ipv4).await.unwrap();
        assert!(in_big(got), "{got}");
        assert_eq!(l.counter("l", "truncated"), 0);

        // and a tcp@ nameserver only uses TCP
        let mut s = ResolversSection::new("tcp");
        s.parse_line(&["nameserver", "t", &format!("tcp@{}", dns.addr)])
            .unwrap();
        let t = Resolvers::new(s).unwrap();
        let got = t.resolve_once("big.test", Family::Ipv4).await.unwrap();
        assert!(in_big(got), "{got}");
        assert_eq!(
            (t.counter("t", "sent"), t.counter("t", "truncated")),
            (1, 0)
        );
    });
}

#[test]
fn server_loss_is_held_then_reported() {
    let Some(bin) = require_dnsmasq("server_loss_is_held_then_reported") else {
        return;
    };
    let mut dns = Dnsmasq::start(&bin, "127.0.0.155", "10.3.0.1 app.test\n", &[]);
    runtime().block_on(async {
        let holds: &[&[&str]] = &[&["hold", "timeout", "1500ms"], &["resolve_retries", "1"]];
        let r = Resolvers::new(section(&dns, holds)).unwrap();
        let rx = r
            .subscribe("app.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        tokio::spawn(r.clone().run());
        let policy = AddrPolicy {
            prefer: Family::Ipv4,
            ..AddrPolicy::default()
        };
        let mut srv = ServerResolver::new(ServerId::new("be", "s1"), policy, None, true);
        let state = wait_valid(&rx, "first answer").await;
        srv.apply(&state, &[]);
        assert_eq!(srv.addr(), Some(ip("10.3.0.1")));
        assert!(!srv.in_maintenance());

        dns.stop();
        let stopped_at = std::time::Instant::now();
        // first the timeout is held: the address stays in use
        let held = wait_for(Duration::from_secs(5), "a held timeout", || {
            let s = rx.borrow().clone();
            s.is_held().then_some(s)
        })
        .await;
        assert_eq!(held.status, Status::Timeout);
        assert_eq!(held.records.len(), 1);
        assert!(srv.apply(&held, &[]).is_empty());
        assert_eq!(srv.addr(), Some(ip("10.3.0.1")));

        // then, 1.5 s after the last valid answer, the failure is reported
        let failed = wait_for(Duration::from_secs(6), "the reported timeout", || {
            let s = rx.borrow().clone();
            s.failure.is_some().then_some(s)
        })
        .await;
        assert!(
            stopped_at.elapsed() >= Duration::from_millis(1000),
            "reported too early"
        );
        assert_eq!(failed.failure, Some(Status::Timeout));
        let events: Vec<String> = srv
            .apply(&failed, &[])
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            events,
            vec!["Server be/s1 is going DOWN for maintenance (DNS timeout status)"]
        );
        assert!(r.counter("dns1", "timeout") >= 1);

        // the server comes back with the DNS server
        dns.restart();
        let state = wait_valid(&rx, "a valid answer again").await;
        let events: Vec<String> = srv
            .apply(&state, &[])
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            events,
            vec!["Server be/s1 administratively READY thanks to valid DNS answer"]
        );
    });
}

#[test]
fn first_valid_answer_wins_over_a_dead_nameserver() {
    let Some(bin) = require_dnsmasq("first_valid_answer_wins_over_a_dead_nameserver") else {
        return;
    };
    let dns = Dnsmasq::start(&bin, "127.0.0.156", "10.4.0.1 app.test\n", &[]);
    // a bound UDP socket that never answers plays the dead nameserver
    let dead = std::net::UdpSocket::bind("127.0.0.157:0").unwrap();
    runtime().block_on(async {
        let mut s = ResolversSection::new("two");
        s.parse_line(&[
            "nameserver",
            "dead",
            &dead.local_addr().unwrap().to_string(),
        ])
        .unwrap();
        s.parse_line(&["nameserver", "live", &dns.addr.to_string()])
            .unwrap();
        s.parse_line(&["timeout", "retry", "2s"]).unwrap();
        let r = Resolvers::new(s).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(
            r.resolve_once("app.test", Family::Ipv4).await,
            Ok(ip("10.4.0.1"))
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "did not wait for the dead one"
        );
        assert_eq!(r.counter("dead", "sent"), 1);
        assert_eq!(r.counter("live", "valid"), 1);
        // the cached answer (hold valid) serves the next call without a query
        assert_eq!(
            r.resolve_once("app.test", Family::Ipv4).await,
            Ok(ip("10.4.0.1"))
        );
        assert_eq!(r.counter("live", "sent"), 1);
    });
}

#[test]
fn names_live_while_subscribed() {
    let Some(bin) = require_dnsmasq("names_live_while_subscribed") else {
        return;
    };
    let dns = Dnsmasq::start(
        &bin,
        "127.0.0.158",
        "10.5.0.1 app.test\n10.5.0.2 other.test\n",
        &[],
    );
    runtime().block_on(async {
        let r = Resolvers::new(section(&dns, &[])).unwrap();
        let rx1 = r
            .subscribe("app.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        let rx2 = r
            .subscribe("APP.test.", NameKind::Addr(Family::Ipv4))
            .unwrap();
        let rx3 = r
            .subscribe("other.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        assert!(r
            .subscribe("bad..name", NameKind::Addr(Family::Ipv4))
            .is_err());
        assert_eq!(r.names().len(), 2, "one resolution per name and kind");
        tokio::spawn(r.clone().run());
        for rx in [&rx1, &rx2, &rx3] {
            wait_for(Duration::from_secs(5), "an answer", || {
                (rx.borrow().status == Status::Valid).then_some(())
            })
            .await;
        }
        assert_eq!(rx1.borrow().records, rx2.borrow().records);
        drop(rx1);
        drop(rx3);
        // other.test has no subscriber left: its loop ends and forgets it
        wait_for(Duration::from_secs(5), "other.test to be dropped", || {
            (r.names() == vec![("app.test".to_string(), NameKind::Addr(Family::Ipv4))])
                .then_some(())
        })
        .await;
        // a late subscriber is served by the running task
        let rx4 = r
            .subscribe("other.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        let state = wait_valid(&rx4, "other.test again").await;
        assert_eq!(
            state.records.first().and_then(Record::ip),
            Some(ip("10.5.0.2"))
        );
        drop(rx2);
    });
}

#[test]
fn a_record_template_is_stable_across_changes() {
    let Some(bin) = require_dnsmasq("a_record_template_is_stable_across_changes") else {
        return;
    };
    let dns = Dnsmasq::start(
        &bin,
        "127.0.0.159",
        "10.6.0.1 pool.test\n10.6.0.2 pool.test\n",
        &[],
    );
    runtime().block_on(async {
        let r = Resolvers::new(section(&dns, &[])).unwrap();
        let mut rx = r
            .subscribe("pool.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        tokio::spawn(r.clone().run());
        let policy = AddrPolicy {
            prefer: Family::Ipv4,
            ..AddrPolicy::default()
        };
        let mut slots =
            TemplateSlots::new("be", "web", (1, 3), "pool.test", Some(80), policy, false);
        let addrs = |t: &TemplateSlots| t.slots().iter().map(|s| s.addr).collect::<Vec<_>>();

        let state = wait_for(Duration::from_secs(5), "two addresses", || {
            let s = rx.borrow_and_update().clone();
            (s.records.len() == 2).then_some(s)
        })
        .await;
        slots.apply(&state);
        let first = addrs(&slots);
        let mut assigned: Vec<IpAddr> = first.iter().flatten().copied().collect();
        assigned.sort();
        assert_eq!(assigned, vec![ip("10.6.0.1"), ip("10.6.0.2")]);
        assert!(slots.slots()[2].maint && slots.slots()[2].addr.is_none());

        // dnsmasq rotates the order of its answers: several rounds move nothing
        for _ in 0..3 {
            tokio::time::timeout(Duration::from_secs(5), rx.changed())
                .await
                .unwrap()
                .unwrap();
            let state = rx.borrow_and_update().clone();
            assert!(slots.apply(&state).is_empty());
            assert_eq!(addrs(&slots), first);
        }

        // 10.6.0.1 leaves, 10.6.0.3 and 10.6.0.4 come: the slot of 10.6.0.2 keeps it
        dns.set_hosts("10.6.0.2 pool.test\n10.6.0.3 pool.test\n10.6.0.4 pool.test\n");
        let state = wait_for(Duration::from_secs(5), "the new pool", || {
            let s = rx.borrow_and_update().clone();
            (s.records.len() == 3).then_some(s)
        })
        .await;
        slots.apply(&state);
        let kept = first
            .iter()
            .position(|a| *a == Some(ip("10.6.0.2")))
            .unwrap();
        assert_eq!(slots.slots()[kept].addr, Some(ip("10.6.0.2")));
        let mut now: Vec<IpAddr> = addrs(&slots).into_iter().flatten().collect();
        now.sort();
        assert_eq!(now, vec![ip("10.6.0.2"), ip("10.6.0.3"), ip("10.6.0.4")]);
        assert!(slots.slots().iter().all(|s| !s.maint));
    });
}

#[test]
fn trigger_resolves_at_once() {
    let Some(bin) = require_dnsmasq("trigger_resolves_at_once") else {
        return;
    };
    let dns = Dnsmasq::start(&bin, "127.0.0.160", "10.7.0.1 app.test\n", &[]);
    runtime().block_on(async {
        // resolved once a minute: only a trigger can show the change in
        // time; a valid answer is kept for `hold valid` (1s) first.
        let r = Resolvers::new(section(
            &dns,
            &[&["timeout", "resolve", "60s"], &["hold", "valid", "1s"]],
        ))
        .unwrap();
        let mut rx = r
            .subscribe("app.test", NameKind::Addr(Family::Ipv4))
            .unwrap();
        tokio::spawn(r.clone().run());
        let state = wait_valid(&rx, "first answer").await;
        assert_eq!(
            state.records.first().and_then(Record::ip),
            Some(ip("10.7.0.1"))
        );
        rx.borrow_and_update();
        dns.set_hosts("10.7.0.9 app.test\n");
        assert!(!r.trigger("other.test", NameKind::Addr(Family::Ipv4)));
        // Within `hold valid` of the answer, a trigger does nothing.
        assert!(!r.trigger("app.test", NameKind::Addr(Family::Ipv4)));
        // SIGHUP is handled asynchronously by dnsmasq: trigger until it shows
        let state = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if !r.trigger("App.test", NameKind::Addr(Family::Ipv4)) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                rx.changed().await.unwrap();
                let s = rx.borrow_and_update().clone();
                if s.records.first().and_then(Record::ip) == Some(ip("10.7.0.9")) {
                    return s;
                }
            }
        })
        .await
        .expect("the triggered resolution sees the new address");
        assert_eq!(state.status, Status::Valid);
    });
}
