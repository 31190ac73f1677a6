use super::*;
use crate::config::HoldPeriods;
use crate::hold::Resolution;
use crate::server::{parse_resolve_net, Family};
use crate::wire::Answer;
use std::time::{Duration, Instant};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn addrs(list: &[&str]) -> Answer {
    Answer {
        records: list
            .iter()
            .map(|s| Record::Addr { ip: ip(s), ttl: 1 })
            .collect(),
        cname: false,
    }
}

fn srv(target: &str, port: u16, weight: u16, addr: Option<&str>) -> Record {
    Record::Srv(SrvRecord {
        target: target.into(),
        port,
        weight,
        priority: 0,
        ttl: 1,
        addr: addr.map(ip),
    })
}

fn v4() -> AddrPolicy {
    AddrPolicy {
        prefer: Family::Ipv4,
        ..AddrPolicy::default()
    }
}

/// Feeds answers one after the other, one second apart.
struct Feed {
    res: Resolution,
    t: Instant,
    holds: HoldPeriods,
}

impl Feed {
    fn new() -> Self {
        let t = Instant::now();
        Feed {
            res: Resolution::new(t),
            t,
            holds: HoldPeriods::default(),
        }
    }
    fn valid(&mut self, a: Answer) -> NameState {
        self.t += Duration::from_secs(1);
        self.res.on_valid(&a, "dns/ns1", self.t, &self.holds);
        self.res.state().clone()
    }
}

fn slot_addrs(t: &TemplateSlots) -> Vec<Option<String>> {
    t.slots()
        .iter()
        .map(|s| s.addr.map(|a| a.to_string()))
        .collect()
}

#[test]
fn parse_range_and_fqdn() {
    assert_eq!(parse_template_range("3").unwrap(), (1, 3));
    assert_eq!(parse_template_range("5-7").unwrap(), (5, 7));
    assert!(parse_template_range("0").is_err());
    assert!(parse_template_range("7-5")
        .unwrap_err()
        .contains("must not exceed"));
    assert!(parse_template_range("a-b")
        .unwrap_err()
        .contains("invalid range 'a-b'"));
    assert_eq!(
        parse_template_fqdn("App.Example.com:8080").unwrap(),
        ("app.example.com".into(), Some(8080))
    );
    assert_eq!(
        parse_template_fqdn("_http._tcp.svc.local").unwrap(),
        ("_http._tcp.svc.local".into(), None)
    );
    assert!(parse_template_fqdn("x:0").is_err());
    assert!(parse_template_fqdn(":80").is_err());
    assert!(is_srv_name("_http._tcp.x"));
    assert!(!is_srv_name("x._tcp"));
}

#[test]
fn weight_mapping() {
    assert_eq!(srv_weight(0), 0);
    assert_eq!(srv_weight(1), 1);
    assert_eq!(srv_weight(256), 1);
    assert_eq!(srv_weight(257), 2);
    assert_eq!(srv_weight(65535), 256);
}

#[test]
fn a_records_fill_slots_stably() {
    let mut t = TemplateSlots::new("be", "web", (1, 3), "app.example", Some(80), v4(), false);
    assert_eq!(t.slots()[2].id.to_string(), "be/web3");
    assert!(t.slots().iter().all(|s| s.maint && s.port == Some(80)));
    let mut f = Feed::new();

    let ev = t.apply(&f.valid(addrs(&["10.0.0.1", "10.0.0.2"])));
    assert_eq!(
        slot_addrs(&t),
        vec![Some("10.0.0.1".into()), Some("10.0.0.2".into()), None]
    );
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec![
            "be/web1 changed its IP from (none) to 10.0.0.1 by dns/ns1",
            "Server be/web1 administratively READY thanks to valid DNS answer",
            "be/web2 changed its IP from (none) to 10.0.0.2 by dns/ns1",
            "Server be/web2 administratively READY thanks to valid DNS answer",
        ]
    );
    assert!(t.slots()[2].maint);

    // order changes and a new address: kept slots stay, the new one goes to the free slot
    let ev = t.apply(&f.valid(addrs(&["10.0.0.3", "10.0.0.2", "10.0.0.1"])));
    assert_eq!(
        slot_addrs(&t),
        vec![
            Some("10.0.0.1".into()),
            Some("10.0.0.2".into()),
            Some("10.0.0.3".into())
        ]
    );
    assert_eq!(ev.len(), 2);

    // 10.0.0.1 vanishes, 10.0.0.4 appears: only web1 moves
    let ev = t.apply(&f.valid(addrs(&["10.0.0.2", "10.0.0.3", "10.0.0.4"])));
    assert_eq!(
        slot_addrs(&t),
        vec![
            Some("10.0.0.4".into()),
            Some("10.0.0.2".into()),
            Some("10.0.0.3".into())
        ]
    );
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["be/web1 changed its IP from 10.0.0.1 to 10.0.0.4 by dns/ns1"]
    );

    // extra records are ignored
    let ev = t.apply(&f.valid(addrs(&[
        "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6",
    ])));
    assert!(ev.is_empty());

    // shrinking: a slot without an address goes to maintenance
    let ev = t.apply(&f.valid(addrs(&["10.0.0.3"])));
    assert_eq!(slot_addrs(&t), vec![None, None, Some("10.0.0.3".into())]);
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec![
            "Server be/web1 is going DOWN for maintenance (No IP for server )",
            "Server be/web2 is going DOWN for maintenance (No IP for server )",
        ]
    );
}

#[test]
fn a_records_with_allow_dup_ip_share() {
    let policy = AddrPolicy {
        allow_dup_ip: true,
        ..v4()
    };
    let mut t = TemplateSlots::new("be", "s", (1, 3), "app.example", Some(80), policy, false);
    let mut f = Feed::new();
    t.apply(&f.valid(addrs(&["10.0.0.1", "10.0.0.2"])));
    // unused addresses first, then duplicates
    assert_eq!(
        slot_addrs(&t),
        vec![
            Some("10.0.0.1".into()),
            Some("10.0.0.2".into()),
            Some("10.0.0.1".into())
        ]
    );
    assert!(t.slots().iter().all(|s| !s.maint));
}

#[test]
fn a_records_prefer_family_and_network() {
    let policy = AddrPolicy {
        prefer: Family::Ipv6,
        nets: parse_resolve_net("2001:db8:1::/48").unwrap(),
        allow_dup_ip: false,
    };
    let mut t = TemplateSlots::new("be", "s", (1, 3), "app.example", Some(80), policy, false);
    let mut f = Feed::new();
    t.apply(&f.valid(addrs(&["192.0.2.1", "2001:db8:2::1", "2001:db8:1::1"])));
    assert_eq!(
        slot_addrs(&t),
        vec![
            Some("2001:db8:1::1".into()),
            Some("2001:db8:2::1".into()),
            Some("192.0.2.1".into())
        ]
    );
}

#[test]
fn failure_puts_assigned_slots_in_maintenance_after_hold() {
    let mut t = TemplateSlots::new("be", "s", (1, 2), "app.example", Some(80), v4(), false);
    let mut f = Feed::new();
    f.holds.nx = Duration::from_secs(2);
    t.apply(&f.valid(addrs(&["10.0.0.1"])));
    f.res
        .on_error(Status::Nx, f.t + Duration::from_secs(1), &f.holds);
    assert!(t.apply(f.res.state()).is_empty());
    f.res
        .on_error(Status::Nx, f.t + Duration::from_secs(2), &f.holds);
    let ev = t.apply(f.res.state());
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["Server be/s1 is going DOWN for maintenance (DNS NX status)"]
    );
    let ev = t.apply(&f.valid(addrs(&["10.0.0.1"])));
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["Server be/s1 administratively READY thanks to valid DNS answer"]
    );
}

#[test]
fn srv_records_bind_slots() {
    let mut t = TemplateSlots::new(
        "be",
        "srv",
        (1, 2),
        "_http._tcp.svc.example",
        None,
        v4(),
        false,
    );
    let mut f = Feed::new();
    let a = Answer {
        records: vec![
            srv("node1", 8080, 512, Some("10.1.0.1")),
            srv("node2", 8081, 0, None),
        ],
        cname: false,
    };
    let ev = t.apply(&f.valid(a));
    let s = t.slots();
    assert_eq!(
        (s[0].target.as_deref(), s[0].port, s[0].weight, s[0].maint),
        (Some("node1"), Some(8080), Some(2), false)
    );
    assert_eq!(
        (s[1].target.as_deref(), s[1].port, s[1].weight, s[1].maint),
        (Some("node2"), Some(8081), Some(0), true)
    );
    assert_eq!(s[0].addr, Some(ip("10.1.0.1")));
    assert_eq!(s[1].addr, None);
    assert_eq!(
        ev.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec![
            "be/srv1 changed its FQDN from (null) to node1",
            "be/srv1 changed its port from (none) to 8080 by DNS SRV record",
            "be/srv1 changed its weight from (none) to 2 by DNS SRV record",
            "be/srv1 changed its IP from (none) to 10.1.0.1 by dns/ns1",
            "Server be/srv1 administratively READY thanks to valid DNS answer",
            "be/srv2 changed its FQDN from (null) to node2",
            "be/srv2 changed its port from (none) to 8081 by DNS SRV record",
            "be/srv2 changed its weight from (none) to 0 by DNS SRV record",
        ]
    );

    // node1 goes, node3 comes (its address known): node3 takes the freed slot 1,
    // node2 gets an address and a new weight
    let a = Answer {
        records: vec![
            srv("node2", 8081, 65535, Some("10.1.0.2")),
            srv("node3", 9000, 1, Some("10.1.0.3")),
            srv("node4", 9000, 1, Some("10.1.0.4")),
        ],
        cname: false,
    };
    let ev = t.apply(&f.valid(a));
    let s = t.slots();
    assert_eq!(
        (s[0].target.as_deref(), s[0].port, s[0].addr),
        (Some("node3"), Some(9000), Some(ip("10.1.0.3")))
    );
    assert_eq!(
        (s[1].target.as_deref(), s[1].weight, s[1].addr),
        (Some("node2"), Some(256), Some(ip("10.1.0.2")))
    );
    let text: Vec<String> = ev.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        text[0],
        "Server be/srv1 is going DOWN for maintenance (No IP for server )"
    );
    assert!(
        text.contains(&"be/srv1 changed its FQDN from (null) to node3".to_string()),
        "{text:?}"
    );
    assert!(
        text.contains(&"be/srv2 changed its weight from 0 to 256 by DNS SRV record".to_string()),
        "{text:?}"
    );
    assert!(
        !text.iter().any(|l| l.contains("node4")),
        "extra record ignored: {text:?}"
    );
}

#[test]
fn srv_ignore_weight_and_port_change_rebinds() {
    let mut t = TemplateSlots::new("be", "s", (1, 2), "_x._tcp.example", Some(1), v4(), true);
    assert_eq!(t.slots()[0].port, None, "the SRV record gives the port");
    let mut f = Feed::new();
    t.apply(&f.valid(Answer {
        records: vec![srv("a", 80, 100, Some("10.0.0.1"))],
        cname: false,
    }));
    assert_eq!(t.slots()[0].weight, None);
    // the same target on another port is another record: slot 1 is freed, then reused
    let ev = t.apply(&f.valid(Answer {
        records: vec![srv("a", 81, 100, Some("10.0.0.1"))],
        cname: false,
    }));
    assert_eq!(t.slots()[1].target.as_deref(), Some("a"));
    assert_eq!(t.slots()[1].port, Some(81));
    assert_eq!(t.slots()[0].target, None);
    assert!(t.slots()[0].maint);
    assert_eq!(ev.len(), 5, "{ev:?}");
    assert_eq!(
        ev[0].to_string(),
        "Server be/s1 is going DOWN for maintenance (No IP for server )"
    );
    assert!(!ev
        .iter()
        .any(|e| matches!(e, DnsEvent::WeightChanged { .. })));
}
