//! Tests of the health check keywords' parsing.
use super::*;

fn w(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn expects() {
    let e = |s: &str, http| parse_expect(&w(s), http);
    assert_eq!(
        e("status 200", true),
        Ok(Expect::new(false, ExpectKind::Status(vec![(200, 200)])))
    );
    assert_eq!(
        e("! status 200-399,404", true).unwrap(),
        Expect::new(true, ExpectKind::Status(vec![(200, 399), (404, 404)]))
    );
    assert!(e("!rstatus ^5", true).unwrap().negate);
    assert_eq!(
        e("rstring <!--tag:[0-9a-f]*--></html>", true).unwrap().kind,
        ExpectKind::RString("<!--tag:[0-9a-f]*--></html>".into())
    );
    assert_eq!(
        e("comment hi string OK", true).unwrap().kind,
        ExpectKind::String("OK".into())
    );
    assert_eq!(
        e("binary 2b504f4e47", false).unwrap().kind,
        ExpectKind::Binary(b"+PONG".to_vec())
    );
    assert_eq!(
        e("! string ERR", false).unwrap(),
        Expect::new(true, ExpectKind::String("ERR".into()))
    );
    assert!(e("status 399-200", true)
        .unwrap_err()
        .contains("invalid range"));
    assert!(e("status 2xx", true)
        .unwrap_err()
        .contains("invalid status code"));
    assert!(e("status", true)
        .unwrap_err()
        .contains("expects a <pattern>"));
    assert!(e("rstring (a", true).unwrap_err().contains("invalid regex"));
    assert!(e("binary 0", false).unwrap_err().contains("even number"));
    assert!(e("binary zz", false)
        .unwrap_err()
        .contains("not hexadecimal"));
    assert!(e("binary 00", true).unwrap_err().contains("only supports"));
    assert!(e("status 200", false)
        .unwrap_err()
        .contains("only supports"));
    assert!(e("hdr name x", true)
        .unwrap_err()
        .contains("not implemented yet"));
    assert_eq!(e("min-recv 10 string x", false).unwrap().min_recv, Some(10));
    assert!(e("min-recv 10 string x", true)
        .unwrap_err()
        .contains("not implemented yet"));
    assert!(e("min-recv -2 string x", false)
        .unwrap_err()
        .contains("out of range"));
    assert!(e("string a string b", true)
        .unwrap_err()
        .contains("only one"));
    assert!(e("comment x", true)
        .unwrap_err()
        .contains("matching pattern"));
    assert!(e("bogus x", true).unwrap_err().contains("unknown argument"));
    assert!(e("", true).is_err());
}

#[test]
fn regexes() {
    assert!(check_regex("^5").is_ok());
    assert!(check_regex("a(b|c)*[)(]\\)").is_ok());
    assert!(check_regex("[]a]").is_ok());
    assert!(check_regex("(a").is_err());
    assert!(check_regex("a)").is_err());
    assert!(check_regex("[a").is_err());
    assert!(check_regex("a\\").is_err());
}

#[test]
fn http_send_and_order() {
    let mut cd = CheckDraft::default();
    let loc = Location::default();
    parse_http_check(&mut cd, &w("http-check connect port 8080"), &loc).unwrap();
    parse_http_check(
        &mut cd,
        &w("http-check send meth GET uri /h ver HTTP/1.1 hdr Host a.b hdr Content-Length 3 body x"),
        &loc,
    )
    .unwrap();
    parse_http_check(&mut cd, &w("http-check expect status 200"), &loc).unwrap();
    assert!(
        parse_http_check(&mut cd, &w("http-check expect string x"), &loc)
            .unwrap_err()
            .contains("several")
    );
    assert!(
        parse_http_check(&mut cd, &w("http-check send uri /x"), &loc)
            .unwrap_err()
            .contains("several")
    );
    assert!(parse_http_check(&mut cd, &w("http-check connect"), &loc)
        .unwrap_err()
        .contains("several"));
    cd.option = ChkOpt::Http(HttpReq::default());
    let HealthCheck::Http(hc) = cd.build(&mut Vec::new()) else {
        panic!()
    };
    assert_eq!(
        (hc.method.as_str(), hc.uri.as_str(), hc.version.as_str()),
        ("GET", "/h", "HTTP/1.1")
    );
    assert_eq!(hc.headers, [("Host".to_string(), "a.b".to_string())]);
    assert_eq!(hc.body.as_deref(), Some("x"));
    assert_eq!(hc.port, Some(8080));

    let mut cd = CheckDraft::default();
    parse_http_check(&mut cd, &w("http-check send uri /"), &loc).unwrap();
    assert!(parse_http_check(&mut cd, &w("http-check connect"), &loc)
        .unwrap_err()
        .contains("first step MUST"));
    assert!(
        parse_http_check(&mut cd, &w("http-check send hdr host a hdr Host b"), &loc)
            .unwrap_err()
            .contains("already defined")
    );
    assert!(parse_http_check(&mut cd, &w("http-check send hdr x"), &loc)
        .unwrap_err()
        .contains("<name> and <value>"));
    assert!(
        parse_http_check(&mut cd, &w("http-check send uri-lf /%[x]"), &loc)
            .unwrap_err()
            .contains("not implemented yet")
    );
    assert!(parse_http_check(&mut cd, &w("http-check bogus"), &loc)
        .unwrap_err()
        .contains("only supports"));
    assert!(
        parse_http_check(&mut cd, &w("http-check connect port x+1"), &loc)
            .unwrap_err()
            .contains("port expressions")
    );
    assert!(
        parse_http_check(&mut cd, &w("http-check connect ssl"), &loc)
            .unwrap_err()
            .contains("connect option 'ssl' of http-check is not implemented yet")
    );
}

#[test]
fn legacy_httpchk() {
    let mut cd = CheckDraft::default();
    let mut warns = Vec::new();
    let words: Vec<String> = [
        "option",
        "httpchk",
        "HEAD",
        "/",
        "HTTP/1.1\r\nHost: www\r\nX-A: b\r\n\r\nbody",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    parse_option(&mut cd, &words, &mut warns).unwrap();
    assert!(warns[0].contains("deprecated"));
    let HealthCheck::Http(hc) = cd.build(&mut Vec::new()) else {
        panic!()
    };
    assert_eq!(hc.method, "HEAD");
    assert_eq!(hc.version, "HTTP/1.1");
    assert_eq!(
        hc.headers,
        [
            ("Host".to_string(), "www".to_string()),
            ("X-A".to_string(), "b".to_string())
        ]
    );
    assert_eq!(hc.body.as_deref(), Some("body"));
    assert!(
        parse_option(&mut cd, &w("option httpchk a b c d"), &mut warns)
            .unwrap_err()
            .contains("more than 3")
    );
}

#[test]
fn tcp_rules() {
    let mut cd = CheckDraft::default();
    parse_tcp_check(&mut cd, &w("tcp-check comment hello")).unwrap();
    parse_tcp_check(&mut cd, &w("tcp-check connect port 6379 comment c")).unwrap();
    parse_tcp_check(&mut cd, &w("tcp-check send PING")).unwrap();
    parse_tcp_check(&mut cd, &w("tcp-check send-binary 0a0B comment x")).unwrap();
    parse_tcp_check(&mut cd, &w("tcp-check expect ! rstring ^-ERR")).unwrap();
    assert_eq!(
        cd.tcp,
        [
            TcpCheckRule::Comment("hello".into()),
            TcpCheckRule::Connect(TcpConnect {
                port: Some(6379),
                ..Default::default()
            }),
            TcpCheckRule::Send(b"PING".to_vec()),
            TcpCheckRule::Send(vec![0x0a, 0x0b]),
            TcpCheckRule::Expect(Expect::new(true, ExpectKind::RString("^-ERR".into()))),
        ]
    );
    parse_tcp_check(&mut cd, &w("tcp-check connect port 80")).unwrap();
    let mut cd = CheckDraft::default();
    parse_tcp_check(&mut cd, &w("tcp-check send x")).unwrap();
    assert!(parse_tcp_check(&mut cd, &w("tcp-check connect"))
        .unwrap_err()
        .contains("first step MUST"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check send"))
        .unwrap_err()
        .contains("expects a string"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check send a b"))
        .unwrap_err()
        .contains("expects 'comment'"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check send-binary xyz"))
        .unwrap_err()
        .contains("invalid binary"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check connect port 0"))
        .unwrap_err()
        .contains("valid TCP port"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check send-lf %[x]"))
        .unwrap_err()
        .contains("not implemented yet"));
    assert!(parse_tcp_check(&mut cd, &w("tcp-check frob"))
        .unwrap_err()
        .contains("only supports"));
    cd.option = ChkOpt::Redis;
    assert_eq!(
        cd.build(&mut Vec::new()),
        HealthCheck::TcpCheck(vec![
            TcpCheckRule::Send(b"*1\r\n$4\r\nPING\r\n".to_vec()),
            TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+PONG\r\n".into()))),
        ])
    );
}
