use super::*;
use std::io::Write;

fn section(lines: &[&[&str]]) -> Result<ResolversSection, String> {
    let mut s = ResolversSection::new("mydns");
    for line in lines {
        s.parse_line(line)?;
    }
    Ok(s)
}

#[test]
fn defaults_match_haproxy() {
    let s = ResolversSection::new("mydns");
    assert_eq!(s.accepted_payload_size, 512);
    assert_eq!(s.resolve_retries, 3);
    assert_eq!(s.timeout_resolve, Duration::from_secs(1));
    assert_eq!(s.timeout_retry, Duration::from_secs(1));
    assert_eq!(s.hold.nx, Duration::from_secs(30));
    assert_eq!(s.hold.other, Duration::from_secs(30));
    assert_eq!(s.hold.refused, Duration::from_secs(30));
    assert_eq!(s.hold.timeout, Duration::from_secs(30));
    assert_eq!(s.hold.valid, Duration::from_secs(10));
    assert_eq!(s.hold.obsolete, Duration::ZERO);
    assert_eq!(s.resolv_conf_path, PathBuf::from("/etc/resolv.conf"));
    assert_eq!(
        s.validate().unwrap_err(),
        "resolvers 'mydns' has no nameserver configured"
    );
}

#[test]
fn header() {
    assert_eq!(
        ResolversSection::parse_header(&["resolvers", "dns"])
            .unwrap()
            .name,
        "dns"
    );
    assert!(ResolversSection::parse_header(&["resolvers"])
        .unwrap_err()
        .contains("<name>"));
    assert!(ResolversSection::parse_header(&["resolvers", "a", "b"])
        .unwrap_err()
        .contains("'b'"));
}

#[test]
fn full_section() {
    let s = section(&[
        &["nameserver", "dns1", "10.0.0.1:53"],
        &["nameserver", "dns2", "udp@10.0.0.2:5353"],
        &["nameserver", "dns3", "tcp@10.0.0.3:53"],
        &["nameserver", "dns4", "[2001:db8::1]:53"],
        &["nameserver", "dns5", "ipv6@2001:db8::2:54"],
        &["accepted_payload_size", "8192"],
        &["resolve_retries", "5"],
        &["timeout", "resolve", "2s"],
        &["timeout", "retry", "300"],
        &["hold", "nx", "1m"],
        &["hold", "other", "31s"],
        &["hold", "refused", "32s"],
        &["hold", "timeout", "33s"],
        &["hold", "valid", "5s"],
        &["hold", "obsolete", "40s"],
    ])
    .unwrap();
    s.validate().unwrap();
    let ns: Vec<_> = s
        .nameservers
        .iter()
        .map(|n| (n.name.as_str(), n.addr.to_string(), n.transport))
        .collect();
    assert_eq!(
        ns,
        vec![
            ("dns1", "10.0.0.1:53".to_string(), Transport::Datagram),
            ("dns2", "10.0.0.2:5353".to_string(), Transport::DatagramOnly),
            ("dns3", "10.0.0.3:53".to_string(), Transport::Stream),
            ("dns4", "[2001:db8::1]:53".to_string(), Transport::Datagram),
            ("dns5", "[2001:db8::2]:54".to_string(), Transport::Datagram),
        ]
    );
    assert_eq!(s.accepted_payload_size, 8192);
    assert_eq!(s.resolve_retries, 5);
    assert_eq!(s.timeout_resolve, Duration::from_secs(2));
    assert_eq!(s.timeout_retry, Duration::from_millis(300));
    assert_eq!(s.hold.nx, Duration::from_secs(60));
    assert_eq!(s.hold.other, Duration::from_secs(31));
    assert_eq!(s.hold.refused, Duration::from_secs(32));
    assert_eq!(s.hold.timeout, Duration::from_secs(33));
    assert_eq!(s.hold.valid, Duration::from_secs(5));
    assert_eq!(s.hold.obsolete, Duration::from_secs(40));
}

#[test]
fn errors_name_the_word() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["nameserver"],
            "'nameserver' expects <name> and <address> as argument",
        ),
        (
            &["nameserver", "a"],
            "'nameserver' expects <address> as argument",
        ),
        (
            &["nameserver", "a", "10.0.0.1"],
            "missing port in nameserver address '10.0.0.1'",
        ),
        (&["nameserver", "a", "10.0.0.1:0"], "invalid port '0'"),
        (
            &["nameserver", "a", "10.0.0.1:99999"],
            "invalid port '99999'",
        ),
        (
            &["nameserver", "a", "dns.example:53"],
            "invalid nameserver address 'dns.example:53'",
        ),
        (
            &["nameserver", "a", "quic@10.0.0.1:53"],
            "unsupported address prefix 'quic@'",
        ),
        (
            &["nameserver", "a", "ipv6@10.0.0.1:53"],
            "does not match its prefix",
        ),
        (
            &["nameserver", "a", "10.0.0.1:53", "check"],
            "unexpected argument 'check'",
        ),
        (
            &["accepted_payload_size"],
            "'accepted_payload_size' expects <nb> as argument",
        ),
        (
            &["accepted_payload_size", "11"],
            "between 12 and 65535 inclusive (was 11)",
        ),
        (
            &["accepted_payload_size", "65536"],
            "between 12 and 65535 inclusive (was 65536)",
        ),
        (&["accepted_payload_size", "big"], "(was big)"),
        (
            &["resolve_retries", "x"],
            "'resolve_retries' expects a number, got 'x'",
        ),
        (&["timeout", "connect", "1s"], "got 'connect'"),
        (
            &["timeout", "retry"],
            "'timeout retry' expects <time> as argument",
        ),
        (
            &["timeout", "retry", "1q"],
            "'timeout retry': unexpected unit 'q'",
        ),
        (&["hold", "valid"], "'hold' expects an <event> and a <time>"),
        (&["hold", "bogus", "1s"], "unknown <event>: 'bogus'"),
        (&["hold", "nx", "30z"], "'hold nx': unexpected unit 'z'"),
        (&["parse-resolv-conf", "x"], "unexpected argument 'x'"),
        (&["resolution_pool_size", "10"], "not supported anymore"),
        (
            &["frobnicate"],
            "unknown keyword 'frobnicate' in 'resolvers' section",
        ),
    ];
    for (line, expected) in cases {
        let err = section(&[line]).unwrap_err();
        assert!(
            err.contains(expected),
            "{line:?}: got '{err}', expected '{expected}'"
        );
    }
    let dup = section(&[
        &["nameserver", "a", "10.0.0.1:53"],
        &["nameserver", "a", "10.0.0.2:53"],
    ])
    .unwrap_err();
    assert_eq!(
        dup,
        "nameserver 'a' is already defined in resolvers 'mydns'"
    );
}

#[test]
fn payload_size_bounds() {
    assert_eq!(parse_payload_size("12").unwrap(), 12);
    assert_eq!(parse_payload_size("512").unwrap(), 512);
    assert_eq!(parse_payload_size("65535").unwrap(), 65535);
    assert!(parse_payload_size("-1").is_err());
}

#[test]
fn resolv_conf_is_read_in_place() {
    let dir = std::env::temp_dir().join(format!("fairlead-dns-resolvconf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("resolv.conf");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "# comment\nsearch example.com\nnameserver 127.0.0.53\nnameserver\nnameserver ::1\nnameserver bogus\nnameserver 127.0.0.53\noptions edns0").unwrap();
    drop(f);
    let mut s = ResolversSection::new("r");
    s.resolv_conf_path = path.clone();
    s.parse_line(&["nameserver", "first", "10.1.1.1:53"])
        .unwrap();
    let warnings = s.parse_line(&["parse-resolv-conf"]).unwrap();
    s.parse_line(&["nameserver", "last", "10.1.1.2:53"])
        .unwrap();
    let names: Vec<_> = s
        .nameservers
        .iter()
        .map(|n| (n.name.clone(), n.addr.to_string()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("first".to_string(), "10.1.1.1:53".to_string()),
            ("127.0.0.53".to_string(), "127.0.0.53:53".to_string()),
            ("::1".to_string(), "[::1]:53".to_string()),
            ("last".to_string(), "10.1.1.2:53".to_string()),
        ]
    );
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].contains(":4] : nameserver line is missing address"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("address 'bogus' could not be recognized"),
        "{}",
        warnings[1]
    );
    assert!(
        warnings[2].contains("'127.0.0.53' conflicts"),
        "{}",
        warnings[2]
    );

    let (default, w) = ResolversSection::default_section(&path).unwrap();
    assert_eq!(default.name, "default");
    assert_eq!(default.nameservers.len(), 2);
    assert_eq!(w.len(), 3);

    s.resolv_conf_path = dir.join("missing.conf");
    let err = s.parse_line(&["parse-resolv-conf"]).unwrap_err();
    assert!(err.starts_with("failed to open "), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
