//! Byte-exact output of the head rewriters.

use fairlead_http::*;
use std::net::IpAddr;

fn req(input: &[u8], conn: ConnHeader, xff: Option<(&str, IpAddr)>) -> String {
    let h = parse_request(input, 1 << 16).unwrap().unwrap();
    let mut out = b"PREFIX".to_vec();
    write_request_head(
        input,
        &h,
        &RequestRewrite {
            conn,
            forwarded_for: xff,
        },
        &mut out,
    );
    assert!(out.starts_with(b"PREFIX"), "appends to out");
    String::from_utf8(out[6..].to_vec()).unwrap()
}

fn resp(input: &[u8], conn: ConnHeader) -> String {
    let h = parse_response(input, false, 1 << 16).unwrap().unwrap();
    let mut out = Vec::new();
    write_response_head(input, &h, conn, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn request_plain() {
    assert_eq!(
        req(
            b"GET /x?y HTTP/1.1\r\nHost: a\r\nAccept:  */*  \r\n\r\n",
            ConnHeader::None,
            None
        ),
        "GET /x?y HTTP/1.1\r\nHost: a\r\nAccept:  */*  \r\n\r\n"
    );
}

#[test]
fn request_http10_bare_lf_xff() {
    let ip: IpAddr = "10.0.0.1".parse().unwrap();
    assert_eq!(
        req(
            b"POST /p HTTP/1.0\nContent-Length: 3\nConnection: keep-alive\nKeep-Alive: timeout=5\n\nabc",
            ConnHeader::Close,
            Some(("X-Forwarded-For", ip))
        ),
        "POST /p HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n"
    );
    let ip6: IpAddr = "2001:db8::1".parse().unwrap();
    assert_eq!(
        req(
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            ConnHeader::KeepAlive,
            Some(("X-Client", ip6))
        ),
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nX-Client: 2001:db8::1\r\n\r\n"
    );
}

#[test]
fn request_hop_by_hop() {
    let input = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret, Content-Length\r\nX-Secret: s\r\nproxy-connection: x\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nx-secret: t\r\nKeep-Alive: 1\r\nContent-Length: 0\r\nX-Other: o\r\n\r\n";
    assert_eq!(
        req(input, ConnHeader::None, None),
        "GET / HTTP/1.1\r\nHost: a\r\nTrailer: X-T\r\nContent-Length: 0\r\nX-Other: o\r\n\r\n"
    );
}

#[test]
fn request_upgrade_kept() {
    let input = b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
    assert_eq!(
        req(input, ConnHeader::Upgrade, None),
        "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\nConnection: upgrade\r\n\r\n"
    );
    assert_eq!(
        req(input, ConnHeader::Close, None),
        "GET /ws HTTP/1.1\r\nHost: a\r\nSec-WebSocket-Key: k\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn request_leading_crlf_and_chunked_kept() {
    assert_eq!(
        req(
            b"\r\nPOST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            ConnHeader::None,
            None
        ),
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
}

#[test]
fn response_rewrite() {
    assert_eq!(
        resp(
            b"HTTP/1.0 200 Fine Thanks\r\nContent-Length: 2\r\nConnection: keep-alive, X-H\r\nX-H: 1\r\nServer: s\r\n\r\nhi",
            ConnHeader::None
        ),
        "HTTP/1.1 200 Fine Thanks\r\nContent-Length: 2\r\nServer: s\r\n\r\n"
    );
    assert_eq!(
        resp(b"HTTP/1.1 404\nX: y\n\n", ConnHeader::Close),
        "HTTP/1.1 404\r\nX: y\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        resp(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
            ConnHeader::Upgrade
        ),
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    );
}

#[test]
fn rewritten_heads_reparse() {
    let inputs: &[&[u8]] = &[
        b"GET / HTTP/1.0\nHost: a\nConnection: keep-alive\n\n",
        b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
    ];
    for i in inputs {
        let h = parse_request(i, 4096).unwrap().unwrap();
        let mut out = Vec::new();
        write_request_head(
            i,
            &h,
            &RequestRewrite {
                conn: ConnHeader::KeepAlive,
                forwarded_for: Some(("X-Forwarded-For", "1.2.3.4".parse().unwrap())),
            },
            &mut out,
        );
        let h2 = parse_request(&out, 4096).unwrap().unwrap();
        assert_eq!(h2.head_len, out.len());
        assert_eq!(h2.body, h.body);
        assert_eq!(h2.minor_version, 1);
        assert!(has_header(&out, h2.head_len, "x-forwarded-for"));
    }
}

#[test]
fn close_token_does_not_drop_a_close_header() {
    assert_eq!(
        req(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, x-a\r\nClose: 1\r\nX-A: 2\r\n\r\n",
            ConnHeader::None,
            None
        ),
        "GET / HTTP/1.1\r\nHost: a\r\nClose: 1\r\n\r\n"
    );
}

#[test]
fn response_leading_empty_line() {
    assert_eq!(
        resp(
            b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            ConnHeader::KeepAlive
        ),
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    );
}

#[test]
fn continue_constant_parses() {
    let h = parse_response(CONTINUE_100, false, 1024).unwrap().unwrap();
    assert_eq!(h.status, 100);
    assert_eq!(h.head_len, CONTINUE_100.len());
    assert_eq!(h.body, BodyKind::None);
}

#[test]
fn output_is_only_appended() {
    // The rewriter reserves once and never touches existing bytes.
    let input = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let h = parse_request(input, 1024).unwrap().unwrap();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"keep");
    let cap = out.capacity();
    write_request_head(
        input,
        &h,
        &RequestRewrite {
            conn: ConnHeader::Close,
            forwarded_for: None,
        },
        &mut out,
    );
    assert_eq!(
        out.capacity(),
        cap,
        "no reallocation when capacity suffices"
    );
    assert_eq!(&out[..4], b"keep");
}

#[test]
fn response_has_header() {
    let b = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=b\r\n\r\n";
    let h = parse_response(b, false, 1024).unwrap().unwrap();
    assert!(has_header(b, h.head_len, "set-cookie"));
    assert!(!has_header(b, h.head_len, "cookie"));
}

/// Found by the `http_request` / `http_response` fuzz targets: a head with
/// exactly `MAX_HEADERS` lines was accepted, and the rewriters' own
/// `Connection` / forwarded-for lines took the forwarded head past the
/// limit, so a next hop with the same limits (another Fairlead) answered
/// 431 / 502 for a message the proxy had accepted.
#[test]
fn rewritten_heads_stay_within_max_headers() {
    let head = |start: &str, n: usize| {
        let mut r = start.as_bytes().to_vec();
        for i in 0..n {
            r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        r.extend_from_slice(b"\r\n");
        r
    };
    // Request: Host plus as many lines as parse_request accepts.
    let r = head(
        "PUT /upload HTTP/1.1\r\nHost: h\r\n",
        MAX_HEADERS - REQUEST_REWRITE_HEADERS - 1,
    );
    let h = parse_request(&r, 1 << 20).unwrap().unwrap();
    let mut out = Vec::new();
    let rw = RequestRewrite {
        conn: ConnHeader::Close,
        forwarded_for: Some(("X-Forwarded-For", "192.0.2.7".parse().unwrap())),
    };
    write_request_head(&r, &h, &rw, &mut out);
    let again = parse_request_with_limit(&out, 1 << 20, MAX_HEADERS)
        .unwrap()
        .unwrap();
    assert_eq!(again.head_len, out.len());
    // One line more is refused up front instead of being forwarded.
    let r = head(
        "PUT /upload HTTP/1.1\r\nHost: h\r\n",
        MAX_HEADERS - REQUEST_REWRITE_HEADERS,
    );
    assert_eq!(parse_request(&r, 1 << 20).unwrap_err().status, 431);

    // Response: as many lines as parse_response accepts, plus Connection.
    let r = head(
        "HTTP/1.1 101 Switching Protocols\r\n",
        MAX_HEADERS - RESPONSE_REWRITE_HEADERS,
    );
    let h = parse_response(&r, false, 1 << 20).unwrap().unwrap();
    let mut out = Vec::new();
    write_response_head(&r, &h, ConnHeader::Upgrade, &mut out);
    let again = parse_response_with_limit(&out, false, 1 << 20, MAX_HEADERS)
        .unwrap()
        .unwrap();
    assert_eq!((again.head_len, again.status), (out.len(), 101));
    let r = head(
        "HTTP/1.1 200 OK\r\n",
        MAX_HEADERS - RESPONSE_REWRITE_HEADERS + 1,
    );
    assert_eq!(parse_response(&r, false, 1 << 20).unwrap_err().status, 502);
}
