use super::*;
use crate::config::HoldPeriods;
use crate::hold::Resolution;
use crate::server::parse_resolve_net;
use crate::wire::{Answer, Record};
use std::time::{Duration, Instant};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| ip(s)).collect()
}

fn answer(list: &[&str]) -> Answer {
    Answer {
        records: list
            .iter()
            .map(|s| Record::Addr { ip: ip(s), ttl: 1 })
            .collect(),
        cname: false,
    }
}

#[test]
fn scoring_prefers_family_then_network_then_unused_then_current() {
    let v6 = AddrPolicy::default();
    let v4 = AddrPolicy {
        prefer: Family::Ipv4,
        ..AddrPolicy::default()
    };
    let both = ips(&["192.0.2.1", "2001:db8::1"]);
    assert_eq!(
        select_address(&both, &v6, None, &[]),
        Some(ip("2001:db8::1"))
    );
    assert_eq!(select_address(&both, &v4, None, &[]), Some(ip("192.0.2.1")));
    // the family wins over the current address
    assert_eq!(
        select_address(&both, &v6, Some(ip("192.0.2.1")), &[]),
        Some(ip("2001:db8::1"))
    );
    // the current address wins a tie
    let two = ips(&["10.0.0.1", "10.0.0.2"]);
    assert_eq!(
        select_address(&two, &v4, Some(ip("10.0.0.2")), &[]),
        Some(ip("10.0.0.2"))
    );
    assert_eq!(select_address(&two, &v4, None, &[]), Some(ip("10.0.0.1")));
    // resolve-net beats the current address
    let net = AddrPolicy {
        prefer: Family::Ipv4,
        nets: parse_resolve_net("10.0.0.2/32").unwrap(),
        allow_dup_ip: false,
    };
    assert_eq!(
        select_address(&two, &net, Some(ip("10.0.0.1")), &[]),
        Some(ip("10.0.0.2"))
    );
    // resolve-net is a preference: other addresses still serve
    let far = AddrPolicy {
        nets: parse_resolve_net("172.16.0.0/12").unwrap(),
        ..v4.clone()
    };
    assert_eq!(select_address(&two, &far, None, &[]), Some(ip("10.0.0.1")));
    // duplicates: skipped unless allowed, and then only as a last resort
    assert_eq!(
        select_address(&two, &v4, None, &ips(&["10.0.0.1"])),
        Some(ip("10.0.0.2"))
    );
    assert_eq!(
        select_address(&two, &v4, None, &ips(&["10.0.0.1", "10.0.0.2"])),
        None
    );
    let dup = AddrPolicy {
        allow_dup_ip: true,
        ..v4.clone()
    };
    assert_eq!(
        select_address(&two, &dup, None, &ips(&["10.0.0.1"])),
        Some(ip("10.0.0.2"))
    );
    assert_eq!(
        select_address(&two, &dup, None, &ips(&["10.0.0.1", "10.0.0.2"])),
        Some(ip("10.0.0.1"))
    );
    assert_eq!(select_address(&[], &dup, None, &[]), None);
}

#[test]
fn server_follows_answers_and_holds() {
    let holds = HoldPeriods {
        timeout: Duration::from_secs(10),
        ..HoldPeriods::default()
    };
    let t0 = Instant::now();
    let id = ServerId::new("be", "s1");
    let policy = AddrPolicy {
        prefer: Family::Ipv4,
        ..AddrPolicy::default()
    };
    let mut srv = ServerResolver::new(id.clone(), policy, Some(ip("10.0.0.1")), false);
    let mut res = Resolution::new(t0);

    // not resolved yet: nothing
    assert!(srv.apply(res.state(), &[]).is_empty());

    res.on_valid(&answer(&["10.0.0.1"]), "mydns/ns1", t0, &holds);
    assert!(srv.apply(res.state(), &[]).is_empty());

    res.on_valid(
        &answer(&["10.0.0.9"]),
        "mydns/ns2",
        t0 + Duration::from_secs(1),
        &holds,
    );
    let ev = srv.apply(res.state(), &[]);
    assert_eq!(ev.len(), 1);
    assert_eq!(
        ev[0].to_string(),
        "be/s1 changed its IP from 10.0.0.1 to 10.0.0.9 by mydns/ns2"
    );
    assert_eq!(srv.addr(), Some(ip("10.0.0.9")));

    // timeouts within the hold: the address stays, nothing is logged
    res.on_error(Status::Timeout, t0 + Duration::from_secs(5), &holds);
    assert!(srv.apply(res.state(), &[]).is_empty());
    assert_eq!(srv.addr(), Some(ip("10.0.0.9")));
    assert!(!srv.in_maintenance());

    // the hold runs out: maintenance, once
    res.on_error(Status::Timeout, t0 + Duration::from_secs(11), &holds);
    let ev = srv.apply(res.state(), &[]);
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["Server be/s1 is going DOWN for maintenance (DNS timeout status)"]
    );
    assert!(srv.in_maintenance());
    res.on_error(Status::Timeout, t0 + Duration::from_secs(12), &holds);
    assert!(srv.apply(res.state(), &[]).is_empty());

    // back: ready again, same address, no address change logged
    res.on_valid(
        &answer(&["10.0.0.9"]),
        "mydns/ns1",
        t0 + Duration::from_secs(13),
        &holds,
    );
    let ev = srv.apply(res.state(), &[]);
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["Server be/s1 administratively READY thanks to valid DNS answer"]
    );
    assert!(!srv.in_maintenance());
}

#[test]
fn init_addr_none_then_first_answer() {
    let holds = HoldPeriods::default();
    let t0 = Instant::now();
    let mut srv = ServerResolver::new(ServerId::new("be", "s"), AddrPolicy::default(), None, true);
    let mut res = Resolution::new(t0);
    res.on_valid(&answer(&["2001:db8::5"]), "r/ns", t0, &holds);
    let ev: Vec<String> = srv
        .apply(res.state(), &[])
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        ev,
        vec![
            "be/s changed its IP from (none) to 2001:db8::5 by r/ns",
            "Server be/s administratively READY thanks to valid DNS answer"
        ]
    );
}

#[test]
fn no_usable_address_is_maintenance() {
    let holds = HoldPeriods::default();
    let t0 = Instant::now();
    let policy = AddrPolicy {
        prefer: Family::Ipv4,
        ..AddrPolicy::default()
    };
    let mut srv = ServerResolver::new(
        ServerId::new("be", "s2"),
        policy,
        Some(ip("10.0.0.5")),
        false,
    );
    let mut res = Resolution::new(t0);
    res.on_valid(&answer(&["10.0.0.1"]), "r/ns", t0, &holds);
    // the only address belongs to another server of the backend
    let ev = srv.apply(res.state(), &ips(&["10.0.0.1"]));
    assert_eq!(ev.len(), 1);
    assert_eq!(
        ev[0].to_string(),
        "Server be/s2 is going DOWN for maintenance (No IP for server )"
    );
    assert_eq!(srv.addr(), None);
}

#[test]
fn event_wording() {
    let s = ServerId::new("b", "t1");
    let e = DnsEvent::FqdnChanged {
        server: s.clone(),
        from: None,
        to: "node1.example".into(),
    };
    assert_eq!(
        e.to_string(),
        "b/t1 changed its FQDN from (null) to node1.example"
    );
    let e = DnsEvent::PortChanged {
        server: s.clone(),
        from: Some(80),
        to: 8080,
    };
    assert_eq!(
        e.to_string(),
        "b/t1 changed its port from 80 to 8080 by DNS SRV record"
    );
    let e = DnsEvent::WeightChanged {
        server: s.clone(),
        from: None,
        to: 4,
    };
    assert_eq!(
        e.to_string(),
        "b/t1 changed its weight from (none) to 4 by DNS SRV record"
    );
    let e = DnsEvent::Maintenance {
        server: s,
        reason: MaintReason::Failure(Status::Nx),
    };
    assert_eq!(
        e.to_string(),
        "Server b/t1 is going DOWN for maintenance (DNS NX status)"
    );
}
