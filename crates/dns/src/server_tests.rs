use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn prefer() {
    assert_eq!(parse_resolve_prefer("ipv4").unwrap(), Family::Ipv4);
    assert_eq!(parse_resolve_prefer("ipv6").unwrap(), Family::Ipv6);
    assert_eq!(Family::default(), Family::Ipv6);
    assert_eq!(
        parse_resolve_prefer("ip4").unwrap_err(),
        "'resolve-prefer' expects 'ipv4' or 'ipv6' but got 'ip4'"
    );
    assert!(Family::Ipv4.matches(&ip("1.2.3.4")));
    assert!(!Family::Ipv4.matches(&ip("::1")));
    assert_eq!(Family::Ipv4.other(), Family::Ipv6);
}

#[test]
fn networks() {
    let nets = parse_resolve_net("10.0.0.0/8,192.168.1.77/255.255.255.0,2001:db8::/32,172.16.0.1")
        .unwrap();
    assert_eq!(
        nets[0],
        Cidr {
            addr: ip("10.0.0.0"),
            prefix: 8
        }
    );
    assert_eq!(
        nets[1],
        Cidr {
            addr: ip("192.168.1.0"),
            prefix: 24
        }
    );
    assert_eq!(
        nets[2],
        Cidr {
            addr: ip("2001:db8::"),
            prefix: 32
        }
    );
    assert_eq!(
        nets[3],
        Cidr {
            addr: ip("172.16.0.1"),
            prefix: 32
        }
    );
    assert!(nets[0].contains(&ip("10.200.3.4")));
    assert!(!nets[0].contains(&ip("11.0.0.1")));
    assert!(!nets[0].contains(&ip("::a00:1")));
    assert!(nets[1].contains(&ip("192.168.1.5")));
    assert!(nets[2].contains(&ip("2001:db8:ffff::1")));
    assert!(!nets[2].contains(&ip("2001:db9::1")));
    assert!(nets[3].contains(&ip("172.16.0.1")));
    assert!(!nets[3].contains(&ip("172.16.0.2")));
    let all = parse_cidr("0.0.0.0/0").unwrap();
    assert!(all.contains(&ip("203.0.113.9")));
    for bad in [
        "10.0.0.0/33",
        "10.0.0.0/255.0.255.0",
        "host/8",
        "::/129",
        "::/ffff::",
        "10.0.0.0/x",
    ] {
        assert_eq!(
            parse_resolve_net(bad).unwrap_err(),
            format!("'resolve-net': invalid network '{bad}'")
        );
    }
}

#[test]
fn opts() {
    assert_eq!(
        parse_resolve_opts("allow-dup-ip").unwrap(),
        ResolveOpts {
            allow_dup_ip: true,
            ignore_weight: false
        }
    );
    assert_eq!(
        parse_resolve_opts("allow-dup-ip,ignore-weight,prevent-dup-ip").unwrap(),
        ResolveOpts {
            allow_dup_ip: false,
            ignore_weight: true
        }
    );
    assert!(parse_resolve_opts("allow-dup")
        .unwrap_err()
        .contains("unknown resolve-opts option 'allow-dup'"));
}

#[test]
fn init_addr_parse() {
    assert_eq!(
        parse_init_addr("last,libc,none,10.0.0.9").unwrap(),
        vec![
            InitAddrMethod::Last,
            InitAddrMethod::Libc,
            InitAddrMethod::None,
            InitAddrMethod::Ip(ip("10.0.0.9"))
        ]
    );
    assert!(parse_init_addr("libc,dns")
        .unwrap_err()
        .contains("unknown init-addr method 'dns'"));
    assert!(parse_init_addr("10.0.0.1,::1")
        .unwrap_err()
        .contains("initial address already specified, cannot add '::1'"));
    assert!(parse_init_addr(&["none"; 11].join(","))
        .unwrap_err()
        .contains("too many init-addr methods"));
    assert_eq!(parse_init_addr(&["none"; 10].join(",")).unwrap().len(), 10);
}

#[test]
fn init_addr_defaults() {
    use InitAddrMethod::*;
    assert_eq!(effective_init_addr(Option::None, false), vec![Last, Libc]);
    assert_eq!(
        effective_init_addr(Option::None, true),
        vec![Last, Libc, None]
    );
    assert_eq!(effective_init_addr(Some(&[Libc]), true), vec![Libc]);
    let mut o = ServerDnsOptions::default();
    assert!(o.parse_keyword("resolvers", Some("mydns")).unwrap());
    assert_eq!(o.init_addr_methods(), vec![Last, Libc, None]);
    assert!(o.parse_keyword("init-addr", Some("none")).unwrap());
    assert_eq!(o.init_addr_methods(), vec![None]);
}

#[test]
fn init_addr_order() {
    use InitAddrMethod::*;
    let resolves = |n: &str| (n == "good.example").then(|| ip("192.0.2.1"));
    let last = Some(ip("192.0.2.99"));
    // last wins when the state file has an address
    assert_eq!(
        resolve_init_addr(&[Last, Libc], "good.example", last, resolves),
        InitAddrOutcome::Addr {
            ip: ip("192.0.2.99"),
            method: Last,
            warning: Option::None
        }
    );
    // no state: libc
    assert_eq!(
        resolve_init_addr(&[Last, Libc], "good.example", Option::None, resolves),
        InitAddrOutcome::Addr {
            ip: ip("192.0.2.1"),
            method: Libc,
            warning: Option::None
        }
    );
    // libc fails, none: maintenance with a warning
    assert_eq!(
        resolve_init_addr(&[Last, Libc, None], "bad.example", Option::None, resolves),
        InitAddrOutcome::Maintenance {
            warning: Some("could not resolve address 'bad.example', disabling server.".into())
        }
    );
    // none first: maintenance, libc never called
    let mut called = false;
    let out = resolve_init_addr(&[None, Libc], "good.example", Option::None, |_| {
        called = true;
        Some(ip("192.0.2.1"))
    });
    assert_eq!(
        out,
        InitAddrOutcome::Maintenance {
            warning: Option::None
        }
    );
    assert!(!called);
    // fixed address after a failure
    assert_eq!(
        resolve_init_addr(
            &[Libc, Ip(ip("10.9.9.9"))],
            "bad.example",
            Option::None,
            resolves
        ),
        InitAddrOutcome::Addr {
            ip: ip("10.9.9.9"),
            method: Ip(ip("10.9.9.9")),
            warning: Some(
                "could not resolve address 'bad.example', falling back to configured address."
                    .into()
            )
        }
    );
    assert_eq!(
        resolve_init_addr(&[Libc], "bad.example", Option::None, resolves),
        InitAddrOutcome::Failed("could not resolve address 'bad.example'.".into())
    );
    assert_eq!(
        resolve_init_addr(&[Last], "bad.example", Option::None, resolves),
        InitAddrOutcome::Failed("no method found to resolve address 'bad.example'.".into())
    );
}

#[test]
fn libc_resolves_localhost() {
    assert_eq!(
        libc_resolve("127.0.0.1", Family::Ipv6),
        Some(ip("127.0.0.1"))
    );
    assert_eq!(
        libc_resolve("no-such-host.invalid", Family::Ipv4),
        Option::None
    );
}

#[test]
fn keywords() {
    let mut o = ServerDnsOptions::default();
    assert!(!o.parse_keyword("check", Option::None).unwrap());
    assert!(o.parse_keyword("resolve-prefer", Some("ipv4")).unwrap());
    assert!(o.parse_keyword("resolve-net", Some("10.0.0.0/8")).unwrap());
    assert!(o
        .parse_keyword("resolve-opts", Some("ignore-weight"))
        .unwrap());
    assert_eq!(o.prefer, Family::Ipv4);
    assert_eq!(o.nets.len(), 1);
    assert!(o.opts.ignore_weight);
    assert_eq!(
        o.parse_keyword("resolvers", Option::None).unwrap_err(),
        "'resolvers' expects an argument"
    );
}
