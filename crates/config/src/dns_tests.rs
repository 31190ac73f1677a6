use crate::test_util::*;
use crate::*;
use fairlead_dns::{Family, InitAddrMethod};
use std::time::Duration;

const FRONT: &str = "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend fe\n    bind 127.0.0.1:8080\n    default_backend be\n";

#[test]
fn resolvers_section_and_server_options() {
    let p = ok(&format!(
        "resolvers mydns\n    nameserver dns1 127.0.0.53:5353\n    nameserver dns2 tcp@10.0.0.2:53\n    accepted_payload_size 8192\n    resolve_retries 5\n    timeout resolve 2s\n    timeout retry 500ms\n    hold timeout 7s\n    hold valid 1s\n{FRONT}backend be\n    server s1 app.test:8080 resolvers mydns resolve-prefer ipv4 resolve-net 10.0.0.0/8 resolve-opts allow-dup-ip init-addr none\n    server s2 10.0.0.9:80\n"
    ));
    let c = &p.config;
    assert_eq!(c.resolvers.len(), 1);
    let r = &c.resolvers[0];
    assert_eq!(r.name, "mydns");
    assert_eq!(r.nameservers.len(), 2);
    assert_eq!(r.nameservers[0].addr, "127.0.0.53:5353".parse().unwrap());
    assert_eq!(r.nameservers[1].transport, fairlead_dns::Transport::Stream);
    assert_eq!(r.accepted_payload_size, 8192);
    assert_eq!(r.resolve_retries, 5);
    assert_eq!(r.timeout_resolve, Duration::from_secs(2));
    assert_eq!(r.timeout_retry, Duration::from_millis(500));
    assert_eq!(r.hold.timeout, Duration::from_secs(7));
    assert_eq!(r.hold.valid, Duration::from_secs(1));
    // not stored as an unused section any more, and no warning about it
    assert!(!has(&warns(&p), "stored but not used"), "{:?}", warns(&p));
    let s1 = &c.backends[0].servers[0];
    assert_eq!(s1.addr, ServerAddr::Name("app.test".into(), 8080));
    assert_eq!(s1.dns.resolvers.as_deref(), Some("mydns"));
    assert_eq!(s1.dns.prefer, Family::Ipv4);
    assert_eq!(s1.dns.nets.len(), 1);
    assert!(s1.dns.opts.allow_dup_ip);
    assert_eq!(s1.dns.init_addr, Some(vec![InitAddrMethod::None]));
    let s2 = &c.backends[0].servers[1];
    assert_eq!(s2.dns, fairlead_dns::ServerDnsOptions::default());
}

#[test]
fn dns_options_inherit_from_default_server() {
    let p = ok(&format!(
        "resolvers r\n    nameserver a 127.0.0.1:53\n{FRONT}backend be\n    default-server resolvers r init-addr last,libc,none\n    server s1 a.test:80\n    server s2 b.test:80 resolve-prefer ipv4\n"
    ));
    let s = &p.config.backends[0].servers;
    assert_eq!(s[0].dns.resolvers.as_deref(), Some("r"));
    assert_eq!(
        s[1].dns.init_addr,
        Some(vec![
            InitAddrMethod::Last,
            InitAddrMethod::Libc,
            InitAddrMethod::None
        ])
    );
    assert_eq!(s[1].dns.prefer, Family::Ipv4);
    assert_eq!(s[0].dns.prefer, Family::Ipv6);
}

#[test]
fn errors_carry_file_and_line() {
    let e = alerts(&format!(
        "resolvers r\n    nameserver a 127.0.0.1\n    timeout resolve x\n    hold bogus 1s\n{FRONT}backend be\n    server s1 a.test:80 resolvers nope\n    server s2 b.test:80 resolvers r resolve-prefer ipv5\n    server s3 c.test:80 init-addr foo\n"
    ));
    assert!(has(&e, "t.cfg:2:"), "{e:?}");
    assert!(has(&e, "t.cfg:3:"), "{e:?}");
    assert!(has(&e, "t.cfg:4:"), "{e:?}");
    assert!(
        has(
            &e,
            "t.cfg:14: backend 'be', server 's1': unable to find required resolvers 'nope'"
        ),
        "{e:?}"
    );
    assert!(has(&e, "t.cfg:15:") && has(&e, "resolve-prefer"), "{e:?}");
    assert!(
        has(&e, "t.cfg:16:") && has(&e, "unknown init-addr method 'foo'"),
        "{e:?}"
    );
    // a section without nameserver
    let e = alerts(&format!(
        "resolvers empty\n{FRONT}backend be\n    server s1 1.2.3.4:80\n"
    ));
    assert!(
        has(
            &e,
            "t.cfg:1: resolvers 'empty' has no nameserver configured"
        ),
        "{e:?}"
    );
    // two sections with one name
    let e = alerts(&format!(
        "resolvers r\n    nameserver a 127.0.0.1:53\nresolvers r\n    nameserver a 127.0.0.1:53\n{FRONT}backend be\n    server s1 1.2.3.4:80\n"
    ));
    assert!(has(&e, "t.cfg:3:"), "{e:?}");
}

#[test]
fn server_template_slots() {
    let p = ok(&format!(
        "resolvers r\n    nameserver a 127.0.0.1:53\n{FRONT}backend be\n    server-template web 3 app.test:8080 resolvers r check\n    server-template srv 5-6 _http._tcp.app.test resolvers r resolve-opts ignore-weight\n"
    ));
    let s = &p.config.backends[0].servers;
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["web1", "web2", "web3", "srv5", "srv6"]);
    assert_eq!(s[0].addr, ServerAddr::Name("app.test".into(), 8080));
    assert!(s[2].check);
    let t = s[1].template.as_ref().unwrap();
    assert_eq!((t.prefix.as_str(), t.range, t.slot), ("web", (1, 3), 2));
    assert_eq!((t.fqdn.as_str(), t.port), ("app.test", Some(8080)));
    let t = s[4].template.as_ref().unwrap();
    assert_eq!(
        (t.fqdn.as_str(), t.port, t.slot),
        ("_http._tcp.app.test", None, 6)
    );
    assert!(s[4].dns.opts.ignore_weight);
    let e = alerts(&format!(
        "resolvers r\n    nameserver a 127.0.0.1:53\n{FRONT}backend be\n    server-template web 3 app.test:80\n    server-template x 4-2 app.test:80 resolvers r\n    server web2 1.2.3.4:80\n"
    ));
    assert!(
        has(&e, "t.cfg:12:") && has(&e, "'resolvers' is required"),
        "{e:?}"
    );
    assert!(
        has(&e, "t.cfg:13:") && has(&e, "invalid range '4-2'"),
        "{e:?}"
    );
    let e = alerts(&format!(
        "resolvers r\n    nameserver a 127.0.0.1:53\n{FRONT}backend be\n    server-template web 2 app.test:80 resolvers r\n    server web2 1.2.3.4:80\n"
    ));
    assert!(
        has(&e, "t.cfg:13:") && has(&e, "'web2' is already used"),
        "{e:?}"
    );
}

#[test]
fn catalog_marks_dns_keywords_implemented() {
    let all = keyword_support();
    for kw in [
        "resolvers",
        "resolve-prefer",
        "resolve-net",
        "resolve-opts",
        "init-addr",
    ] {
        let k = all
            .iter()
            .find(|k| k.section == "server" && k.keyword == kw)
            .unwrap();
        assert_eq!(k.status, Support::Implemented, "{kw}");
    }
    let k = all
        .iter()
        .find(|k| k.section == "backend" && k.keyword == "server-template")
        .unwrap();
    assert_eq!(k.status, Support::Implemented);
}
