//! Response head parsing and RFC 9112 §6.3 framing.

use fairlead_http::*;

const MAX: usize = 16 * 1024;

fn ok(resp: &[u8], head: bool) -> ResponseHead {
    match parse_response(resp, head, MAX) {
        Ok(Some(h)) => h,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(resp)),
    }
}

fn err(resp: &[u8]) -> HttpError {
    match parse_response(resp, false, MAX) {
        Err(e) => e,
        other => panic!(
            "expected error for {:?}: {other:?}",
            String::from_utf8_lossy(resp)
        ),
    }
}

#[test]
fn basic() {
    let b = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello world!";
    let h = ok(b, false);
    assert_eq!(h.head_len, b.len() - 12);
    assert_eq!(h.status, 200);
    assert_eq!(h.minor_version, 1);
    assert_eq!(h.body, BodyKind::Length(12));
    assert!(h.keep_alive);
}

#[test]
fn incomplete() {
    let b = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    for i in 0..b.len() {
        assert_eq!(parse_response(&b[..i], false, MAX), Ok(None), "prefix {i}");
    }
}

#[test]
fn no_body_statuses() {
    for st in [100u16, 101, 103, 204, 304] {
        let r = format!("HTTP/1.1 {st} X\r\nContent-Length: 10\r\n\r\n");
        assert_eq!(ok(r.as_bytes(), false).body, BodyKind::None, "{st}");
        let r = format!("HTTP/1.1 {st} X\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(ok(r.as_bytes(), false).body, BodyKind::None, "{st}");
        let r = format!("HTTP/1.1 {st} X\r\n\r\n");
        let h = ok(r.as_bytes(), false);
        assert_eq!(h.body, BodyKind::None, "{st}");
        assert!(h.keep_alive);
    }
}

#[test]
fn head_response() {
    let h = ok(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true);
    assert_eq!(h.body, BodyKind::None);
    assert!(h.keep_alive);
    let h = ok(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        true,
    );
    assert_eq!(h.body, BodyKind::None);
    let h = ok(b"HTTP/1.1 200 OK\r\n\r\n", true);
    assert_eq!(h.body, BodyKind::None);
    assert!(h.keep_alive);
}

#[test]
fn framing() {
    assert_eq!(
        ok(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            false
        )
        .body,
        BodyKind::Chunked
    );
    assert_eq!(
        ok(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            false
        )
        .body,
        BodyKind::Chunked
    );
    let h = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false);
    assert_eq!(h.body, BodyKind::CloseDelimited);
    assert!(!h.keep_alive);
    let h = ok(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, br\r\n\r\n",
        false,
    );
    assert_eq!(h.body, BodyKind::CloseDelimited);
    let h = ok(b"HTTP/1.1 200 OK\r\n\r\n", false);
    assert_eq!(h.body, BodyKind::CloseDelimited);
    assert!(!h.keep_alive);
    let h = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
        false,
    );
    assert_eq!(h.body, BodyKind::Length(3));
    let h = ok(
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    assert_eq!(h.body, BodyKind::Length(0));
    assert!(h.keep_alive);
}

#[test]
fn keep_alive_rules() {
    assert!(
        !ok(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false
        )
        .keep_alive
    );
    assert!(!ok(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false).keep_alive);
    let h = ok(
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    assert!(h.keep_alive && h.conn.keep_alive);
    assert!(!ok(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", false).keep_alive);
    let h = ok(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        false,
    );
    assert!(h.conn.upgrade);
    assert_eq!(h.status, 101);
}

#[test]
fn rejections() {
    let cases: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 099 Weird\r\n\r\n",
        b"HTTP/1.1 600 Weird\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/2.0 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: y\rZ: w\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        // Ambiguous framing is refused even when there is no body.
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    ];
    for r in cases {
        assert_eq!(err(r).status, 502, "{}", String::from_utf8_lossy(r));
    }
}

#[test]
fn limits() {
    let mut r = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    r.resize(500, b'a');
    assert_eq!(parse_response(&r, false, 100).unwrap_err().status, 502);
    let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    assert_eq!(parse_response(&r, false, 1 << 20).unwrap_err().status, 502);
}

#[test]
fn bare_lf_and_missing_reason() {
    let h = ok(b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", false);
    assert_eq!(h.body, BodyKind::Length(0));
    let h = ok(b"HTTP/1.1 204 \r\n\r\n", false);
    assert_eq!(h.status, 204);
}

#[test]
fn pipelined_responses() {
    let buf = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-T: 1\r\n\r\n";
    let mut pos = 0;
    let mut statuses = Vec::new();
    while pos < buf.len() {
        let h = ok(&buf[pos..], false);
        statuses.push(h.status);
        pos += h.head_len;
        match h.body {
            BodyKind::None => {}
            BodyKind::Length(n) => pos += n as usize,
            BodyKind::Chunked => match ChunkedState::new().feed(&buf[pos..]).unwrap() {
                ChunkProgress::Done(n) => pos += n,
                ChunkProgress::NeedMore => panic!("incomplete"),
            },
            BodyKind::CloseDelimited => unreachable!(),
        }
    }
    assert_eq!(statuses, [100, 200, 204, 200]);
}

#[test]
fn reason_range() {
    let reason = |b: &[u8]| {
        let h = parse_response(b, false, MAX).unwrap().unwrap();
        b[h.reason.0..h.reason.1].to_vec()
    };
    assert_eq!(reason(b"HTTP/1.1 200 OK\r\n\r\n"), b"OK");
    assert_eq!(
        reason(b"\r\nHTTP/1.1 503 Service  Unavailable\n\n"),
        b"Service  Unavailable"
    );
    assert_eq!(reason(b"HTTP/1.1 404\r\n\r\n"), b"");
    assert_eq!(reason(b"HTTP/1.1 404 \r\n\r\n"), b"");
    // httparse hides a reason with obs-text; the range still has it.
    assert_eq!(reason(b"HTTP/1.0 200 caf\xe9\r\n\r\n"), b"caf\xe9");
}

#[test]
fn start_line_errors_are_flagged() {
    let err = |b: &[u8]| parse_response(b, false, MAX).unwrap_err();
    assert!(err(b"SSH-2.0-OpenSSH\r\n").in_start_line());
    assert!(err(b"HTTP/1.1 2x0 OK\r\n\r\n").in_start_line());
    assert!(err(b"HTTP/1.1 600 Odd\r\n\r\n").in_start_line());
    assert!(!err(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").in_start_line());
    assert!(!err(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n").in_start_line());
    let req = parse_request(b"GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", MAX).unwrap_err();
    assert!(req.in_start_line());
}
