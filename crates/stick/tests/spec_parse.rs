//! `stick-table` argument parsing against HAProxy 2.6.12's own messages
//! (collected with `haproxy -c` on one-line tables).

use fairlead_stick::spec::{DataType, KeyType, SrvKey, TableSpec};

fn parse(line: &str) -> Result<(TableSpec, Vec<String>), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    TableSpec::parse("b", &words, false)
}

fn err(line: &str) -> String {
    parse(line).expect_err(line)
}

#[test]
fn errors_match_haproxy() {
    let cases = [
        ("type ip", "stick-table: missing size."),
        ("size 10", "stick-table: missing type."),
        ("type ip size 10 store foo", "stick-table: unknown store option 'foo'."),
        ("type ip size 10 store conn_rate", "stick-table: missing argument to store option 'conn_rate'."),
        ("type ip size 10 store gpc0(5)", "stick-table: unexpected argument to store option 'gpc0'."),
        ("type ip size 10 store gpc(0)", "stick-table: array size is out of allowed range (1-100) for store option 'gpc'."),
        ("type ip size 10 store gpc(101)", "stick-table: array size is out of allowed range (1-100) for store option 'gpc'."),
        ("type ip size 1x", "stick-table: unexpected character 'x' in argument of 'size'."),
        ("type ip size 10 expire 1y", "stick-table: unexpected character 'y' in argument of 'expire'."),
        ("type ip size 10 expire 30d", "stick-table: timer overflow in argument <30d> to <expire>, maximum value is 2147483647 ms (~24.8 days)."),
        ("type ip size 10 expire", "stick-table: missing argument after 'expire'."),
        ("type str size 10", "stick-table: unknown type 'str'."),
        ("type string len 0 size 10", "stick-table: unknown type '0'."),
        ("type string len abc size 10", "stick-table: unknown type 'abc'."),
        ("type ip size 10 bogus", "stick-table: unknown argument 'bogus'."),
        ("type ip size 10 srvkey foo", "stick-table : unknown server key type 'foo'."),
        ("type ip size 10 store conn_rate(10s", "stick-table: missing closing parenthesis after store option 'conn_rate'."),
        ("type ip size 10 store gpt0,gpt(2)", "stick-table: simultaneous usage of 'gpt' and 'gpt0' in a same table is not permitted as 'gpt' overrides 'gpt0'."),
        ("type ip size 10 store gpc_rate(2,1s),gpc0_rate(1s)", "stick-table: simultaneous usage of 'gpc_rate' and 'gpc[0/1]_rate' in a same table is not permitted as 'gpc_rate' overrides 'gpc[0/1]_rate'."),
        ("type ip size 10 store gpc(2),gpc1", "stick-table: simultaneous usage of 'gpc' and 'gpc[0/1]' in a same table is not permitted as 'gpc' overrides 'gpc[0/1]'."),
        ("type ip size 10 store conn_rate(1x)", "stick-table: error when processing store option 'conn_rate'."),
        ("type ip size 0", "stick-table: missing size."),
    ];
    for (line, want) in cases {
        assert_eq!(err(line), want, "{line}");
    }
}

#[test]
fn warnings_match_haproxy() {
    let (_, w) = parse("type ip size 10 store gpc0,gpc0").unwrap();
    assert_eq!(
        w,
        vec!["stick-table: store option 'gpc0' already enabled, ignored.".to_string()]
    );
    let (s, w) = parse("type ip size 10 expire 10sx").unwrap();
    assert_eq!(s.expire_ms, Some(10_000));
    assert_eq!(w, vec!["unexpected character 'x' after the timer value '10sx', only (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. This will be reported as an error in next versions.".to_string()]);
}

#[test]
fn full_declaration() {
    let (s, w) = parse(
        "type ip size 100k expire 30s nopurge peers mypeers srvkey addr store gpc0_rate(5s),conn_rate(10s),http_req_rate(1m),gpc(3),gpt(2),server_name",
    )
    .unwrap();
    assert!(w.is_empty());
    assert_eq!(s.key_type, KeyType::Ip);
    assert_eq!(s.key_len, 4);
    assert_eq!(s.size, 102_400);
    assert_eq!(s.expire_ms, Some(30_000));
    assert!(s.nopurge);
    assert_eq!(s.peers.as_deref(), Some("mypeers"));
    assert_eq!(s.srvkey, SrvKey::Addr);
    assert_eq!(s.period(DataType::ConnRate), Some(10_000));
    assert_eq!(s.period(DataType::HttpReqRate), Some(60_000));
    assert_eq!(s.stored(DataType::Gpc).unwrap().nbelem, 3);
    assert_eq!(s.stored(DataType::Gpt).unwrap().nbelem, 2);
    assert!(s.stores(DataType::ServerKey));
    assert!(!s.stores(DataType::ConnCur));
}

#[test]
fn key_lengths_and_defaults() {
    let (s, _) = parse("type string size 10").unwrap();
    assert_eq!(
        (s.key_type, s.key_len, s.expire_ms, s.nopurge, s.srvkey),
        (KeyType::String, 32, None, false, SrvKey::Name)
    );
    let (s, _) = parse("type string len 64 size 10").unwrap();
    assert_eq!(s.key_len, 64);
    let (s, _) = parse("type binary len 20 size 10").unwrap();
    assert_eq!((s.key_type, s.key_len), (KeyType::Binary, 20));
    let (s, _) = parse("type ipv6 size 1m").unwrap();
    assert_eq!(
        (s.key_type, s.key_len, s.size),
        (KeyType::Ipv6, 16, 1 << 20)
    );
    let (s, _) = parse("type integer size 1 expire 0").unwrap();
    assert_eq!((s.key_type, s.expire_ms), (KeyType::Integer, None));
    // `len` only applies to string and binary.
    assert_eq!(
        err("type ip len 4 size 10"),
        "stick-table: unknown argument 'len'."
    );
}

#[test]
fn peers_section_and_write_to() {
    // `peers` is not a keyword of `table` lines in a peers section.
    let words = ["type", "ip", "size", "10", "peers", "x"];
    assert_eq!(
        TableSpec::parse("p/t", &words, true).unwrap_err(),
        "stick-table: unknown argument 'peers'."
    );
    // `write-to` is HAProxy 3.x: accepted as a superset.
    let (s, _) = parse("type ip size 10 write-to other").unwrap();
    assert_eq!(s.write_to.as_deref(), Some("other"));
    assert_eq!(
        TableSpec::parse("", &["type", "ip"], false).unwrap_err(),
        "stick-table: ID not provided."
    );
}
