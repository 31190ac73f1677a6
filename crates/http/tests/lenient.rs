//! The lenient parsers (`option accept-invalid-http-request` /
//! `option accept-invalid-http-response`) against the strict ones: what
//! each accepts, what stays refused, and how repaired framing is marked.

use fairlead_http::msg::Head;
use fairlead_http::{
    parse_request, parse_request_lenient, parse_request_relaxed, parse_response,
    parse_response_relaxed, BodyKind, ConnHeader, RequestRewrite,
};

fn strict_status(req: &[u8]) -> u16 {
    parse_request(req, 8192).unwrap_err().status
}

fn relaxed(req: &[u8]) -> (Vec<u8>, fairlead_http::RequestHead) {
    let mut b = req.to_vec();
    let h = parse_request_relaxed(&mut b, 8192).unwrap().unwrap();
    (b, h)
}

fn forwarded(buf: &[u8], h: &fairlead_http::RequestHead) -> String {
    let mut out = Vec::new();
    let rw = RequestRewrite {
        conn: ConnHeader::None,
        forwarded_for: None,
    };
    fairlead_http::write_request_head(buf, h, &rw, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn te_with_content_length_becomes_chunked_and_closes() {
    let req =
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(strict_status(req), 400);
    let (b, h) = relaxed(req);
    assert_eq!(h.body, BodyKind::Chunked);
    assert!(h.drop_content_length);
    assert!(!h.keep_alive, "the connection closes after (RFC 9112 6.1)");
    let out = forwarded(&b, &h);
    assert!(
        !out.to_ascii_lowercase().contains("content-length"),
        "{out}"
    );
    assert!(out.contains("Transfer-Encoding: chunked"), "{out}");
    // The rule-layer view agrees: no Content-Length left.
    let head = Head::from_request(&b, &h);
    assert!(!head.view(&b).has(b"content-length"));
}

#[test]
fn te_in_http10_is_chunked_and_closes() {
    let req = b"POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(strict_status(req), 400);
    let (_, h) = relaxed(req);
    assert_eq!(h.body, BodyKind::Chunked);
    assert!(!h.keep_alive);
    assert!(!h.drop_content_length);
}

#[test]
fn missing_host_accepted_only_when_lenient() {
    let req = b"GET / HTTP/1.1\r\n\r\n";
    assert_eq!(strict_status(req), 400);
    let (_, h) = relaxed(req);
    assert!(h.keep_alive);
    // Several Host headers stay an error.
    let mut b = b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec();
    assert_eq!(parse_request_relaxed(&mut b, 8192).unwrap_err().status, 400);
}

#[test]
fn obs_fold_is_replaced_by_spaces() {
    let req = b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n";
    assert_eq!(strict_status(req), 400);
    // Without the in-place repair, the lenient parser still refuses it.
    assert_eq!(parse_request_lenient(req, 8192).unwrap_err().status, 400);
    let (b, h) = relaxed(req);
    assert_eq!(&b[..], b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a   b\r\n\r\n");
    assert!(forwarded(&b, &h).contains("X-A: a   b\r\n"));
}

#[test]
fn control_characters_and_odd_names() {
    for req in [
        &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX(A): 1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX\xc3\xa9: 1\r\n\r\n",
        b"GET /a\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        assert_eq!(strict_status(req), 400, "{req:?}");
        let (b, h) = relaxed(req);
        // Forwarded unchanged.
        assert_eq!(&b[..], req);
        assert_eq!(h.head_len, req.len());
    }
    // NUL becomes SP (RFC 9110 5.5).
    let (b, _) = relaxed(b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n");
    assert_eq!(&b[..], b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a b\r\n\r\n");
}

#[test]
fn lenient_still_refuses_smuggling_vectors() {
    let cases: &[(&[u8], u16)] = &[
        // Bare CR in a value.
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400),
        // Space before the colon.
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n",
            400,
        ),
        // A control character hidden in a framing header's value.
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\x01\r\n\r\n",
            400,
        ),
        // Codings the proxy cannot decode.
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            422,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: cow\r\n\r\n",
            400,
        ),
        // Differing lengths.
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
    ];
    for (req, status) in cases {
        let mut b = req.to_vec();
        let e = parse_request_relaxed(&mut b, 8192).unwrap_err();
        assert_eq!(e.status, *status, "{:?}: {e}", String::from_utf8_lossy(req));
    }
    // A masked name is never a framing header: `Content-Length\x01` is
    // just another field, the request has no body.
    let (_, h) = relaxed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length\x01: 5\r\n\r\n");
    assert_eq!(h.body, BodyKind::None);
}

#[test]
fn responses() {
    let both = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n";
    assert_eq!(parse_response(both, false, 8192).unwrap_err().status, 502);
    let mut b = both.to_vec();
    let h = parse_response_relaxed(&mut b, false, 8192)
        .unwrap()
        .unwrap();
    assert_eq!(h.body, BodyKind::Chunked);
    assert!(h.drop_content_length);
    assert!(!h.keep_alive);
    let mut out = Vec::new();
    fairlead_http::write_response_head(&b, &h, ConnHeader::None, &mut out);
    let out = String::from_utf8_lossy(&out).to_ascii_lowercase();
    assert!(!out.contains("content-length"), "{out}");

    let old = b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(parse_response(old, false, 8192).unwrap_err().status, 502);
    let mut b = old.to_vec();
    let h = parse_response_relaxed(&mut b, false, 8192)
        .unwrap()
        .unwrap();
    assert_eq!(h.body, BodyKind::Chunked);
    assert!(!h.keep_alive);

    let folded = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a\r\n b\r\nX(B): \x01\r\n\r\nok";
    assert_eq!(parse_response(folded, false, 8192).unwrap_err().status, 502);
    let mut b = folded.to_vec();
    let h = parse_response_relaxed(&mut b, false, 8192)
        .unwrap()
        .unwrap();
    assert_eq!(h.body, BodyKind::Length(2));
    assert!(h.keep_alive);
    assert_eq!(
        &b[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a   b\r\nX(B): \x01\r\n\r\nok"
    );
}

#[test]
fn te_trailers_is_reported() {
    let h = parse_request(b"POST / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n", 8192)
        .unwrap()
        .unwrap();
    assert!(h.te_trailers);
    let h = parse_request(b"POST / HTTP/1.1\r\nHost: x\r\nTE: deflate\r\n\r\n", 8192)
        .unwrap()
        .unwrap();
    assert!(!h.te_trailers);
}
