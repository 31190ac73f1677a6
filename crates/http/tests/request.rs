//! Request head parsing: framing rules, smuggling vectors, limits.

use fairlead_http::*;

const MAX: usize = 16 * 1024;

fn ok(req: &[u8]) -> RequestHead {
    match parse_request(req, MAX) {
        Ok(Some(h)) => h,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(req)),
    }
}

fn err(req: &[u8]) -> HttpError {
    match parse_request(req, MAX) {
        Err(e) => e,
        other => panic!(
            "expected error for {:?}: {other:?}",
            String::from_utf8_lossy(req)
        ),
    }
}

fn status(req: &[u8]) -> u16 {
    err(req).status
}

#[test]
fn simple_get() {
    let b = b"GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n";
    let h = ok(b);
    assert_eq!(h.head_len, b.len());
    assert_eq!(&b[h.method.0..h.method.1], b"GET");
    assert_eq!(&b[h.uri.0..h.uri.1], b"/index.html?x=1");
    assert_eq!(h.minor_version, 1);
    assert_eq!(h.body, BodyKind::None);
    assert!(h.keep_alive);
    assert!(!h.is_head && !h.is_connect && !h.upgrade && !h.expect_continue);
    assert_eq!(h.conn, ConnTokens::default());
}

#[test]
fn incomplete_returns_none() {
    let full = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
    let head_end = full.len() - 3;
    for i in 0..head_end {
        assert_eq!(parse_request(&full[..i], MAX), Ok(None), "prefix {i}");
    }
    let h = ok(&full[..head_end]);
    assert_eq!(h.head_len, head_end);
    assert_eq!(h.body, BodyKind::Length(3));
}

#[test]
fn bare_lf_head_accepted() {
    let b = b"GET / HTTP/1.1\nHost: h\nX: y\n\n";
    let h = ok(b);
    assert_eq!(h.head_len, b.len());
}

#[test]
fn leading_empty_lines_skipped() {
    let b = b"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
    let h = ok(b);
    assert_eq!(&b[h.method.0..h.method.1], b"GET");
    assert_eq!(h.head_len, b.len());
}

#[test]
fn http10() {
    let h = ok(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(h.minor_version, 0);
    assert!(!h.keep_alive);
    let h = ok(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    assert!(h.keep_alive);
    assert!(h.conn.keep_alive);
    let h = ok(b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n");
    assert!(!h.keep_alive);
}

#[test]
fn connection_tokens() {
    let h = ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: CLOSE\r\n\r\n");
    assert!(h.conn.close && !h.keep_alive);
    let h = ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, Upgrade\r\nConnection: keep-alive\r\nUpgrade: websocket\r\n\r\n");
    assert!(h.conn.upgrade && h.conn.keep_alive && !h.conn.close);
    assert!(h.upgrade);
    assert!(h.keep_alive);
    // Upgrade header without the connection token, and vice versa.
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n").upgrade);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n").upgrade);
    // Only WebSocket is an upgrade: h2c (smuggling) and others are not.
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n").upgrade);
    assert!(
        !ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: tls/1.0\r\n\r\n")
            .upgrade
    );
    assert!(
        ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: h2c, WebSocket\r\n\r\n")
            .upgrade
    );
    assert!(
        ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket/13\r\n\r\n")
            .upgrade
    );
    // HTTP/1.0 Upgrade is ignored.
    assert!(!ok(b"GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n").upgrade);
}

#[test]
fn expect_continue() {
    let h = ok(b"PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n");
    assert!(h.expect_continue);
    let h = ok(b"PUT /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    assert!(!h.expect_continue);
}

#[test]
fn head_and_connect() {
    let h = ok(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert!(h.is_head);
    let b = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    let h = ok(b);
    assert!(h.is_connect);
    assert_eq!(&b[h.uri.0..h.uri.1], b"example.com:443");
    // Methods are case-sensitive.
    assert!(!ok(b"head / HTTP/1.1\r\nHost: h\r\n\r\n").is_head);
}

#[test]
fn get_with_body_allowed() {
    let h = ok(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(4));
    let h = ok(b"HEAD / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.body, BodyKind::Chunked);
}

#[test]
fn content_length_forms() {
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(0));
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:   42  \r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(42));
    // Identical duplicates are merged (RFC 9112 §6.3 permits it).
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(7));
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 7\r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(7));
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n");
    assert_eq!(h.body, BodyKind::Length(u64::MAX));
}

#[test]
fn content_length_rejections() {
    for cl in [
        &b"Content-Length: 7\r\nContent-Length: 8"[..],
        b"Content-Length: 7, 8",
        b"Content-Length: 7,",
        b"Content-Length: ,7",
        b"Content-Length: ",
        b"Content-Length: -1",
        b"Content-Length: +1",
        b"Content-Length: 0x10",
        b"Content-Length: 1 2",
        b"Content-Length: 1.0",
        b"Content-Length: 18446744073709551616",
        b"Content-Length: 99999999999999999999999",
    ] {
        let mut r = b"POST / HTTP/1.1\r\nHost: h\r\n".to_vec();
        r.extend_from_slice(cl);
        r.extend_from_slice(b"\r\n\r\n");
        assert_eq!(status(&r), 400, "{}", String::from_utf8_lossy(cl));
    }
}

#[test]
fn chunked_request() {
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.body, BodyKind::Chunked);
    let h = ok(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n");
    assert_eq!(h.body, BodyKind::Chunked);
}

#[test]
fn smuggling_vectors() {
    let cases: &[(&[u8], u16)] = &[
        // CL + TE
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400),
        // TE: chunked, identity (chunked not final)
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        // chunked twice
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        // TE in HTTP/1.0
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        // Another coding before a final chunked: the proxy cannot decode
        // it, 422 as HAProxy (known and unknown codings alike)
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: foo, chunked\r\n\r\n", 422),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity, chunked\r\n\r\n", 422),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 422),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 422),
        // A fragment in the target (HAProxy: 400 without the option)
        (b"GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        // Malformed TE values
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chun ked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 400),
        // Space before colon
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length\t: 5\r\n\r\n", 400),
        // obs-fold
        (b"POST / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\n Host: h\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\n\tX: y\r\n\r\n", 400),
        // bare CR
        (b"POST / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400),
        (b"POST / HTTP/1.1\rHost: h\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\n\r\r\n", 400),
        (b"POST /a\rb HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        // NUL / control bytes
        (b"POST / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nX\0: ab\r\n\r\n", 400),
    ];
    for (req, st) in cases {
        assert_eq!(status(req), *st, "{}", String::from_utf8_lossy(req));
    }
}

#[test]
fn request_line_rejections() {
    let cases: &[&[u8]] = &[
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.2\r\nHost: h\r\n\r\n",
        b"GET / HTTP/0.9\r\n\r\n",
        b"GET / http/1.1\r\nHost: h\r\n\r\n",
        b"GET /\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / x HTTP/1.1\r\nHost: h\r\n\r\n",
        b" GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1 \r\nHost: h\r\n\r\n",
        b"GET /a\x7fb HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET /\x80 HTTP/1.1\r\nHost: h\r\n\r\n",
    ];
    for req in cases {
        assert_eq!(status(req), 400, "{}", String::from_utf8_lossy(req));
    }
    assert!(err(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .reason
        .contains("HTTP/2"));
    // The preface is recognised even before it is complete.
    assert_eq!(parse_request(b"PRI * HTTP/2", MAX).unwrap_err().status, 400);
}

#[test]
fn host_rules() {
    assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"), 400);
    ok(b"GET / HTTP/1.0\r\n\r\n");
    ok(b"GET / HTTP/1.1\r\nhOsT: a\r\n\r\n");
    // Empty Host is allowed by RFC 9112 §3.2 (no authority in the target).
    ok(b"GET / HTTP/1.1\r\nHost:\r\n\r\n");
}

#[test]
fn size_limits() {
    // Request line longer than the limit: 414.
    let mut r = b"GET /".to_vec();
    r.resize(200, b'a');
    assert_eq!(parse_request(&r, 100).unwrap_err().status, 414);
    // Exactly at the limit without LF is also too long.
    assert_eq!(parse_request(&r[..100], 100).unwrap_err().status, 414);
    // Below the limit: still waiting.
    assert_eq!(parse_request(&r[..99], 100), Ok(None));
    // Request line complete but headers go past the limit: 431.
    let mut r = b"GET / HTTP/1.1\r\nHost: h\r\nX: ".to_vec();
    r.resize(300, b'b');
    assert_eq!(parse_request(&r, 100).unwrap_err().status, 431);
    // A complete head that fits exactly is fine.
    let r = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    assert!(parse_request(r, r.len()).unwrap().is_some());
    assert_eq!(parse_request(r, r.len() - 1).unwrap_err().status, 431);
    // Body bytes beyond the limit do not matter once the head is complete.
    let mut r = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 500\r\n\r\n".to_vec();
    let hl = r.len();
    r.resize(hl + 500, b'z');
    assert_eq!(parse_request(&r, hl).unwrap().unwrap().head_len, hl);
}

#[test]
fn too_many_headers() {
    let mut r = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS {
        r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    assert_eq!(parse_request(&r, 1 << 20).unwrap_err().status, 431);
    // Room is left for the lines the rewriter adds (see MAX_HEADERS).
    let mut r = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS - REQUEST_REWRITE_HEADERS - 1 {
        r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    assert!(parse_request(&r, 1 << 20).unwrap().is_some());
    let mut r = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS - REQUEST_REWRITE_HEADERS {
        r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    assert_eq!(parse_request(&r, 1 << 20).unwrap_err().status, 431);
    let mut r = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS - 1 {
        r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    assert!(parse_request_with_limit(&r, 1 << 20, MAX_HEADERS)
        .unwrap()
        .is_some());
}

#[test]
fn pipelined_requests() {
    let buf = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: h\r\n\r\nPOST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /d HTTP/1.1\r\nHost: h\r\n\r\n";
    let mut pos = 0;
    let mut uris = Vec::new();
    while pos < buf.len() {
        let rest = &buf[pos..];
        let h = ok(rest);
        uris.push(String::from_utf8(rest[h.uri.0..h.uri.1].to_vec()).unwrap());
        pos += h.head_len;
        match h.body {
            BodyKind::None => {}
            BodyKind::Length(n) => pos += n as usize,
            BodyKind::Chunked => {
                let mut st = ChunkedState::new();
                match st.feed(&buf[pos..]).unwrap() {
                    ChunkProgress::Done(n) => pos += n,
                    ChunkProgress::NeedMore => panic!("chunked body incomplete"),
                }
            }
            BodyKind::CloseDelimited => unreachable!(),
        }
    }
    assert_eq!(uris, ["/a", "/b", "/c", "/d"]);
}

#[test]
fn idempotent_methods() {
    for (m, idem) in [
        ("GET", true),
        ("HEAD", true),
        ("PUT", true),
        ("DELETE", true),
        ("OPTIONS", true),
        ("TRACE", true),
        ("POST", false),
        ("PATCH", false),
        ("CONNECT", false),
        ("get", false),
    ] {
        let r = format!("{m} / HTTP/1.1\r\nHost: h\r\n\r\n");
        let h = ok(r.as_bytes());
        assert_eq!(method_is_idempotent(r.as_bytes(), &h), idem, "{m}");
    }
}

#[test]
fn has_header_helper() {
    let b =
        b"GET / HTTP/1.1\r\nHost: h\r\nx-forwarded-for: 1.2.3.4\nAccept: */*\r\n\r\nX-Real-IP: no";
    let h = ok(b);
    assert!(has_header(b, h.head_len, "X-Forwarded-For"));
    assert!(has_header(b, h.head_len, "accept"));
    assert!(has_header(b, h.head_len, "HOST"));
    assert!(!has_header(b, h.head_len, "X-Real-IP"));
    assert!(!has_header(b, h.head_len, "GET / HTTP/1.1"));
    assert!(!has_header(b, h.head_len, "X-Forwarded"));
}

#[test]
fn error_offsets_point_at_header() {
    let b =
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
    let e = err(b);
    assert!(b[e.offset..].starts_with(b"Transfer-Encoding"));
    let b = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
    let e = err(b);
    assert!(b[e.offset..].starts_with(b"Content-Length: 6"));
}
