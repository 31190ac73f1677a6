use super::*;
use crate::hpack::Decoder;

type F<'a> = &'a [(&'a str, &'a str)];

fn build(kind: BlockKind, fields: F<'_>) -> (Head, Result<Option<u64>, Reject>) {
    let mut head = Head::default();
    let mut b = Builder::new(&mut head, kind, 16384, 100);
    for (n, v) in fields {
        b.field(n.as_bytes(), v.as_bytes());
    }
    let r = b.finish();
    (head, r)
}

const REQ: F<'static> = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.com"),
    (":path", "/a?b"),
];

fn with(extra: F<'_>) -> Vec<(&str, &str)> {
    let mut v = REQ.to_vec();
    v.extend_from_slice(extra);
    v
}

fn headers(h: &Head) -> Vec<(String, String)> {
    h.view(&[])
        .headers()
        .map(|(_, n, v)| {
            (
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(v).into(),
            )
        })
        .collect()
}

#[test]
fn request_maps_pseudo_headers() {
    let (h, r) = build(
        BlockKind::Request,
        &with(&[
            ("content-length", "5"),
            ("te", "trailers"),
            ("cookie", "a=b"),
        ]),
    );
    assert_eq!(r, Ok(Some(5)));
    let v = h.view(&[]);
    assert_eq!(v.method(), b"GET");
    assert_eq!(v.scheme(), b"https");
    assert_eq!(v.authority(), b"example.com");
    assert_eq!(v.target(), b"/a?b");
    assert_eq!(v.path(), Some(&b"/a"[..]));
    assert_eq!(v.version(), 20);
    assert_eq!(
        headers(&h),
        [
            ("host".into(), "example.com".into()),
            ("content-length".into(), "5".into()),
            ("te".into(), "trailers".into()),
            ("cookie".into(), "a=b".into())
        ]
    );
}

#[test]
fn host_equal_to_authority_is_not_duplicated() {
    let (h, r) = build(BlockKind::Request, &with(&[("host", "EXAMPLE.com")]));
    assert_eq!(r, Ok(None));
    assert_eq!(h.view(&[]).count(b"host", true), 1);
    let (_, r) = build(BlockKind::Request, &with(&[("host", "other")]));
    assert_eq!(r, Err(Reject::Malformed("host differs from :authority")));
    // Without :authority, host is kept.
    let (h, r) = build(
        BlockKind::Request,
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("host", "h"),
        ],
    );
    assert_eq!(r, Ok(None));
    assert_eq!(h.view(&[]).get_last(b"host"), Some(&b"h"[..]));
}

#[test]
fn connect_targets_authority() {
    let (h, r) = build(
        BlockKind::Request,
        &[(":method", "CONNECT"), (":authority", "h:443")],
    );
    assert_eq!(r, Ok(None));
    assert_eq!(h.view(&[]).target(), b"h:443");
    let (_, r) = build(
        BlockKind::Request,
        &[
            (":method", "CONNECT"),
            (":authority", "h:443"),
            (":path", "/"),
        ],
    );
    assert!(matches!(r, Err(Reject::Malformed(_))));
}

fn build_ext(fields: F<'_>) -> (Head, Result<Option<u64>, Reject>) {
    let mut head = Head::default();
    let mut b = Builder::new(&mut head, BlockKind::Request, 16384, 100);
    b.allow_protocol();
    for (n, v) in fields {
        b.field(n.as_bytes(), v.as_bytes());
    }
    let r = b.finish();
    (head, r)
}

const WS: F<'static> = &[
    (":method", "CONNECT"),
    (":protocol", "websocket"),
    (":scheme", "https"),
    (":path", "/chat?room=1"),
    (":authority", "example.com"),
    ("sec-websocket-version", "13"),
];

/// Extended CONNECT (RFC 8441) becomes the HTTP/1 upgrade request.
#[test]
fn extended_connect_becomes_get_with_upgrade() {
    let (h, r) = build_ext(WS);
    assert_eq!(r, Ok(None));
    let v = h.view(&[]);
    assert_eq!(
        (v.method(), v.target()),
        (&b"GET"[..], &b"/chat?room=1"[..])
    );
    assert_eq!(v.get_last(b"upgrade"), Some(&b"websocket"[..]));
    assert_eq!(v.get_last(b"host"), Some(&b"example.com"[..]));
    assert_eq!(v.get_last(b"sec-websocket-version"), Some(&b"13"[..]));
    // Without the setting, :protocol is unknown: malformed.
    let (_, r) = build(BlockKind::Request, WS);
    assert_eq!(r, Err(Reject::Malformed("invalid pseudo-header")));
    // :protocol needs CONNECT, and CONNECT with :protocol needs all four.
    let mut get = WS.to_vec();
    get[0] = (":method", "GET");
    assert_eq!(
        build_ext(&get).1,
        Err(Reject::Malformed(":protocol without CONNECT"))
    );
    for drop in [":scheme", ":path", ":authority"] {
        let f: Vec<_> = WS.iter().copied().filter(|(n, _)| *n != drop).collect();
        assert!(
            matches!(build_ext(&f).1, Err(Reject::Malformed(_))),
            "{drop}"
        );
    }
    let mut empty = WS.to_vec();
    empty[1] = (":protocol", "");
    assert_eq!(
        build_ext(&empty).1,
        Err(Reject::Malformed("invalid :protocol"))
    );
    // Plain CONNECT is unchanged when :protocol is allowed.
    let (h, r) = build_ext(&[(":method", "CONNECT"), (":authority", "h:443")]);
    assert_eq!((r, h.view(&[]).method()), (Ok(None), &b"CONNECT"[..]));
}

#[test]
fn response_and_trailers() {
    let (h, r) = build(BlockKind::Response, &[(":status", "204"), ("server", "x")]);
    assert_eq!(r, Ok(None));
    assert_eq!(h.view(&[]).status(), 204);
    assert_eq!(headers(&h), [("server".into(), "x".into())]);
    let (h, r) = build(BlockKind::Trailers, &[("grpc-status", "0")]);
    assert_eq!(r, Ok(None));
    assert_eq!(headers(&h), [("grpc-status".into(), "0".into())]);
}

#[test]
fn malformed_requests() {
    let cases: &[(&str, Vec<(&str, &str)>)] = &[
        ("uppercase", with(&[("X-Foo", "1")])),
        ("empty name", with(&[("", "1")])),
        ("pseudo after regular", {
            let mut v = vec![(":method", "GET"), ("x", "1")];
            v.extend_from_slice(&REQ[1..]);
            v
        }),
        ("duplicated", with(&[(":path", "/")])),
        ("unknown pseudo", with(&[(":foo", "x")])),
        ("response pseudo", with(&[(":status", "200")])),
        ("connection", with(&[("connection", "keep-alive")])),
        ("keep-alive", with(&[("keep-alive", "1")])),
        (
            "transfer-encoding",
            with(&[("transfer-encoding", "chunked")]),
        ),
        ("upgrade", with(&[("upgrade", "h2c")])),
        ("te", with(&[("te", "gzip")])),
        ("content-length", with(&[("content-length", "x")])),
        (
            "conflict",
            with(&[("content-length", "1"), ("content-length", "2")]),
        ),
        ("value CR", with(&[("x", "a\rb")])),
        ("value lead space", with(&[("x", " a")])),
        ("missing method", REQ[1..].to_vec()),
        ("missing scheme", vec![REQ[0], REQ[2], REQ[3]]),
        ("missing path", REQ[..3].to_vec()),
        ("empty path", vec![REQ[0], REQ[1], (":path", "")]),
        ("relative path", vec![REQ[0], REQ[1], (":path", "a")]),
        ("star path", vec![REQ[0], REQ[1], (":path", "*")]),
    ];
    for (what, f) in cases {
        let (_, r) = build(BlockKind::Request, f);
        assert!(matches!(r, Err(Reject::Malformed(_))), "{what}: {r:?}");
    }
    let (_, r) = build(
        BlockKind::Request,
        &[(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")],
    );
    assert_eq!(r, Ok(None));
    for f in [
        vec![("x", "1")],
        vec![(":status", "2000")],
        vec![(":status", "101")],
        vec![(":status", "200"), (":status", "200")],
        vec![(":method", "GET")],
    ] {
        let (_, r) = build(BlockKind::Response, &f);
        assert!(matches!(r, Err(Reject::Malformed(_))), "{f:?}");
    }
    let (_, r) = build(BlockKind::Trailers, &[(":status", "200")]);
    assert!(matches!(r, Err(Reject::Malformed(_))));
}

#[test]
fn limits() {
    let mut head = Head::default();
    let mut b = Builder::new(&mut head, BlockKind::Trailers, 100, 100);
    b.field(b"a", &[b'x'; 70]);
    assert_eq!(b.finish(), Err(Reject::TooLarge));
    let mut b = Builder::new(&mut head, BlockKind::Trailers, 10000, 2);
    for _ in 0..3 {
        b.field(b"a", b"b");
    }
    assert_eq!(b.finish(), Err(Reject::TooLarge));
}

fn decode(block: &[u8], kind: BlockKind) -> Head {
    let mut head = Head::default();
    let mut b = Builder::new(&mut head, kind, 65536, 100);
    Decoder::new(4096)
        .decode(block, &mut Vec::new(), |n, v, _| b.field(n, v))
        .unwrap();
    b.finish().unwrap();
    head
}

#[test]
fn h1_request_round_trips_through_hpack() {
    let raw = b"POST http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive\r\nTE: trailers\r\nTransfer-Encoding: chunked\r\nX-Custom: Value\r\n\r\n";
    let parsed = fairlead_http::parse_request(raw, 4096).unwrap().unwrap();
    let h1 = Head::from_request(raw, &parsed);
    let mut out = Vec::new();
    encode_request(&mut Encoder::new(0), &h1, raw, &mut out);
    let h = decode(&out, BlockKind::Request);
    let v = h.view(&[]);
    assert_eq!(v.method(), b"POST");
    assert_eq!(v.scheme(), b"http");
    assert_eq!(v.authority(), b"example.com");
    assert_eq!(v.target(), b"/x?y");
    assert_eq!(
        headers(&h),
        [
            ("host".into(), "example.com".into()),
            ("te".into(), "trailers".into()),
            ("x-custom".into(), "Value".into())
        ]
    );
}

#[test]
fn response_round_trips() {
    let mut h = Head::default();
    h.start_response(404, None, 11);
    h.append_field(b"Content-Type", b"text/plain");
    h.append_field(b"Connection", b"close");
    let mut out = Vec::new();
    encode_response(&mut Encoder::new(4096), &h, &[], &mut out);
    let d = decode(&out, BlockKind::Response);
    assert_eq!(d.view(&[]).status(), 404);
    assert_eq!(headers(&d), [("content-type".into(), "text/plain".into())]);
}
