//! No-panic and consistency properties over pseudo-random and mutated
//! messages (deterministic xorshift PRNG, no extra dependencies).

use fairlead_http::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, s: &'a [T]) -> &'a T {
        &s[self.below(s.len())]
    }
    fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
}

const METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "CONNECT", "PATCH", "X-CUSTOM",
];
const URIS: &[&str] = &[
    "/",
    "/a/b?c=d",
    "*",
    "http://h/x",
    "h:443",
    "/%20~!$&'()*+,;=:@",
];
const EXTRA: &[&str] = &[
    "Accept: */*",
    "User-Agent: x/1.0",
    "Connection: close",
    "Connection: keep-alive",
    "Connection: Upgrade, X-Foo",
    "Upgrade: websocket",
    "X-Foo: bar",
    "Expect: 100-continue",
    "Keep-Alive: timeout=5",
    "TE: trailers",
    "Trailer: X-T",
    "Proxy-Connection: close",
    "Cookie: a=b; c=d",
    "X-Empty:",
    "X-Obs: caf\u{e9}",
];
const INTERESTING: &[u8] = b"\r\n\t :;,=0123456789abcdefABCDEFxX-\"\0\x7f\x80\xff";

fn chunked_body(r: &mut Rng) -> Vec<u8> {
    let mut b = Vec::new();
    for _ in 0..r.below(4) {
        let n = 1 + r.below(40);
        if r.chance(30) {
            b.extend_from_slice(format!("{n:X}").as_bytes());
        } else {
            b.extend_from_slice(format!("{n:x}").as_bytes());
        }
        if r.chance(20) {
            b.extend_from_slice(b";name=\"v a\"");
        }
        b.extend_from_slice(b"\r\n");
        for _ in 0..n {
            b.push(*r.pick(INTERESTING));
        }
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(b"0\r\n");
    if r.chance(30) {
        b.extend_from_slice(b"X-T: done\r\n");
    }
    b.extend_from_slice(b"\r\n");
    b
}

fn eol(r: &mut Rng, lf_ok: bool) -> &'static [u8] {
    if lf_ok && r.chance(10) {
        b"\n"
    } else {
        b"\r\n"
    }
}

/// A valid message (head + body); `request` chooses the start line.
fn gen_message(r: &mut Rng, request: bool) -> Vec<u8> {
    let mut m = Vec::new();
    let http10 = r.chance(15);
    if request {
        m.extend_from_slice(
            format!(
                "{} {} HTTP/1.{}",
                r.pick(METHODS),
                r.pick(URIS),
                u8::from(!http10)
            )
            .as_bytes(),
        );
    } else {
        let st = *r.pick(&[100u16, 101, 200, 204, 206, 301, 304, 404, 500, 503]);
        m.extend_from_slice(format!("HTTP/1.{} {st} Reason Phrase", u8::from(!http10)).as_bytes());
    }
    m.extend_from_slice(eol(r, true));
    if request && (!http10 || r.chance(50)) {
        m.extend_from_slice(b"Host: example.com");
        m.extend_from_slice(eol(r, true));
    }
    for _ in 0..r.below(6) {
        m.extend_from_slice(r.pick(EXTRA).as_bytes());
        m.extend_from_slice(eol(r, true));
    }
    let body = match r.below(3) {
        0 => Vec::new(),
        1 => {
            let n = r.below(30);
            m.extend_from_slice(format!("Content-Length: {n}").as_bytes());
            m.extend_from_slice(eol(r, true));
            (0..n).map(|_| *r.pick(INTERESTING)).collect()
        }
        _ if !http10 => {
            m.extend_from_slice(b"Transfer-Encoding: chunked");
            m.extend_from_slice(eol(r, true));
            chunked_body(r)
        }
        _ => Vec::new(),
    };
    m.extend_from_slice(eol(r, true));
    m.extend_from_slice(&body);
    m
}

fn mutate(r: &mut Rng, m: &mut Vec<u8>) {
    for _ in 0..1 + r.below(3) {
        let len = m.len();
        match r.below(6) {
            0 if len > 0 => {
                let i = r.below(len);
                m[i] = *r.pick(INTERESTING);
            }
            1 => {
                let i = r.below(len + 1);
                m.insert(i, *r.pick(INTERESTING));
            }
            2 if len > 0 => {
                let i = r.below(len);
                m.remove(i);
            }
            3 if len > 0 => {
                let i = r.below(len);
                m.truncate(i);
            }
            4 if len > 0 => {
                let i = r.below(len);
                let j = (i + r.below(20)).min(len);
                let seg = m[i..j].to_vec();
                let k = r.below(m.len() + 1);
                m.splice(k..k, seg);
            }
            _ if len > 0 => {
                let i = r.below(len);
                m[i] = r.next() as u8;
            }
            _ => {}
        }
    }
}

fn check_request(r: &mut Rng, m: &[u8]) {
    let max = if r.chance(20) {
        r.below(m.len() + 2)
    } else {
        1 << 16
    };
    let res = parse_request(m, max);
    match &res {
        Ok(Some(h)) => {
            assert!(h.head_len <= m.len() && h.head_len <= max);
            assert!(h.method.0 < h.method.1 && h.method.1 <= h.head_len);
            assert!(h.uri.0 < h.uri.1 && h.uri.1 <= h.head_len);
            let _ = method_is_idempotent(m, h);
            let _ = has_header(m, h.head_len, "host");
            let conn = *r.pick(&[
                ConnHeader::None,
                ConnHeader::Close,
                ConnHeader::KeepAlive,
                ConnHeader::Upgrade,
            ]);
            let mut out = Vec::new();
            write_request_head(
                m,
                h,
                &RequestRewrite {
                    conn,
                    forwarded_for: Some(("X-Forwarded-For", "192.0.2.1".parse().unwrap())),
                },
                &mut out,
            );
            if h.minor_version == 1 {
                // What we emit must itself be a valid, equally framed head.
                match parse_request(&out, 1 << 20) {
                    Ok(Some(h2)) => {
                        assert_eq!(h2.head_len, out.len());
                        assert_eq!(h2.body, h.body, "{}", String::from_utf8_lossy(&out));
                    }
                    other => panic!(
                        "rewrite of {:?} reparsed as {other:?}",
                        String::from_utf8_lossy(m)
                    ),
                }
            }
            if h.body == BodyKind::Chunked {
                check_chunked(r, &m[h.head_len..]);
            }
        }
        Ok(None) => assert!(m.len() < max),
        Err(e) => assert!(matches!(e.status, 400 | 414 | 422 | 431), "{e:?}"),
    }
    // Incremental consistency: a prefix never yields a different head.
    if let Ok(Some(h)) = &res {
        let cut = r.below(m.len() + 1);
        match parse_request(&m[..cut], max) {
            Ok(None) => assert!(cut < h.head_len),
            Ok(Some(h2)) => assert_eq!(&h2, h),
            Err(e) => panic!("prefix {cut} failed {e:?} but whole parsed"),
        }
    }
}

fn check_response(r: &mut Rng, m: &[u8]) {
    let max = if r.chance(20) {
        r.below(m.len() + 2)
    } else {
        1 << 16
    };
    let head = r.chance(20);
    match parse_response(m, head, max) {
        Ok(Some(h)) => {
            assert!(h.head_len <= m.len() && (100..=599).contains(&h.status));
            if head {
                assert_eq!(h.body, BodyKind::None);
            }
            let mut out = Vec::new();
            write_response_head(m, &h, ConnHeader::Close, &mut out);
            match parse_response(&out, head, 1 << 20) {
                Ok(Some(h2)) => {
                    assert_eq!(h2.head_len, out.len());
                    assert_eq!(h2.status, h.status);
                    if h.minor_version == 1 {
                        assert_eq!(h2.body, h.body);
                    }
                }
                other => panic!(
                    "rewrite of {:?} reparsed as {other:?}",
                    String::from_utf8_lossy(m)
                ),
            }
            if h.body == BodyKind::Chunked {
                check_chunked(r, &m[h.head_len..]);
            }
        }
        Ok(None) => assert!(m.len() < max),
        Err(e) => assert_eq!(e.status, 502),
    }
}

/// Whole-feed and random-split feeds must agree.
fn check_chunked(r: &mut Rng, body: &[u8]) {
    let mut st = ChunkedState::new();
    let whole = st.feed(body);
    let mut st = ChunkedState::new();
    let mut pos = 0;
    let split = loop {
        let left = body.len() - pos;
        let n = if r.chance(30) {
            left.min(1)
        } else {
            r.below(left + 1)
        };
        let end = pos + n;
        match st.feed(&body[pos..end]) {
            Ok(ChunkProgress::Done(k)) => {
                assert!(k <= n);
                break Ok(ChunkProgress::Done(pos + k));
            }
            Ok(ChunkProgress::NeedMore) if end == body.len() => break Ok(ChunkProgress::NeedMore),
            Ok(ChunkProgress::NeedMore) => pos = end,
            Err(e) => break Err(e),
        }
    };
    assert_eq!(whole, split, "{:?}", String::from_utf8_lossy(body));
}

#[test]
fn valid_generated_messages_parse() {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let m = gen_message(&mut r, true);
        let h = parse_request(&m, 1 << 16)
            .unwrap_or_else(|e| panic!("{e:?}: {:?}", String::from_utf8_lossy(&m)))
            .unwrap();
        if h.body == BodyKind::Chunked {
            let mut st = ChunkedState::new();
            assert_eq!(
                st.feed(&m[h.head_len..]),
                Ok(ChunkProgress::Done(m.len() - h.head_len))
            );
        }
        check_request(&mut r, &m);
        let m = gen_message(&mut r, false);
        let h = parse_response(&m, false, 1 << 16)
            .unwrap_or_else(|e| panic!("{e:?}: {:?}", String::from_utf8_lossy(&m)))
            .unwrap();
        if h.body == BodyKind::Chunked {
            let mut st = ChunkedState::new();
            assert_eq!(
                st.feed(&m[h.head_len..]),
                Ok(ChunkProgress::Done(m.len() - h.head_len))
            );
        }
        check_response(&mut r, &m);
    }
}

#[test]
fn mutated_messages_never_panic() {
    let mut r = Rng(0xDEAD_BEEF_CAFE_F00D);
    for _ in 0..8000 {
        let mut m = gen_message(&mut r, true);
        mutate(&mut r, &mut m);
        check_request(&mut r, &m);
        let mut m = gen_message(&mut r, false);
        mutate(&mut r, &mut m);
        check_response(&mut r, &m);
        let mut b = chunked_body(&mut r);
        mutate(&mut r, &mut b);
        check_chunked(&mut r, &b);
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut r = Rng(12345);
    for _ in 0..5000 {
        let len = r.below(200);
        let m: Vec<u8> = (0..len)
            .map(|_| {
                if r.chance(50) {
                    *r.pick(INTERESTING)
                } else {
                    r.next() as u8
                }
            })
            .collect();
        check_request(&mut r, &m);
        check_response(&mut r, &m);
        check_chunked(&mut r, &m);
    }
}
