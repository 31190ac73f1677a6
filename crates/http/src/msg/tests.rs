//! Unit tests of the head model: accessors, every edit with its exact
//! output, equivalence with the rewriter it replaced, pooling, and a
//! randomized no-panic / re-parse run.

use super::*;
use crate::{parse_request, parse_response, BodyKind, ConnHeader};
use std::net::IpAddr;

fn req(input: &[u8]) -> (RequestHead, Head) {
    let h = parse_request(input, 1 << 16).unwrap().unwrap();
    let head = Head::from_request(input, &h);
    (h, head)
}

fn resp(input: &[u8]) -> (ResponseHead, Head) {
    let h = parse_response(input, false, 1 << 16).unwrap().unwrap();
    let head = Head::from_response(input, &h);
    (h, head)
}

fn out_req(head: &Head, buf: &[u8], conn: ConnHeader) -> String {
    let mut out = Vec::new();
    head.write_request_h1(buf, conn, None, &mut out);
    String::from_utf8(out).unwrap()
}

fn out_resp(head: &Head, buf: &[u8], conn: ConnHeader) -> String {
    let mut out = Vec::new();
    head.write_response_h1(buf, conn, &mut out);
    String::from_utf8(out).unwrap()
}

/// The rewriter as it was before the model (frozen here as the reference
/// the model must reproduce byte for byte).
mod oracle {
    use crate::framing::{
        eq_ic, list_elems, skip_leading_empty_lines, split_header_line, HeaderLines,
    };
    use crate::{ConnHeader, RequestHead, ResponseHead};
    use std::io::Write as _;

    fn hop(name: &[u8], keep_upgrade: bool, conn_lines: Option<HeaderLines<'_>>) -> bool {
        const FIXED: &[&[u8]] = &[
            b"connection",
            b"keep-alive",
            b"proxy-connection",
            b"te",
            b"http2-settings",
        ];
        if FIXED.iter().any(|f| eq_ic(name, f)) {
            return true;
        }
        if eq_ic(name, b"upgrade") {
            return !keep_upgrade;
        }
        const PROTECTED: &[&[u8]] = &[b"content-length", b"transfer-encoding", b"host"];
        if PROTECTED.iter().any(|p| eq_ic(name, p)) {
            return false;
        }
        let Some(lines) = conn_lines else {
            return false;
        };
        for line in lines {
            let (n, v) = split_header_line(line);
            if eq_ic(n, b"connection")
                && !eq_ic(name, b"close")
                && list_elems(v).any(|tok| eq_ic(tok, name))
            {
                return true;
            }
        }
        false
    }

    fn others(lines: HeaderLines<'_>) -> bool {
        for line in lines {
            let (n, v) = split_header_line(line);
            if eq_ic(n, b"connection")
                && list_elems(v).any(|t| {
                    !t.is_empty()
                        && !eq_ic(t, b"close")
                        && !eq_ic(t, b"keep-alive")
                        && !eq_ic(t, b"upgrade")
                })
            {
                return true;
            }
        }
        false
    }

    fn copy(buf: &[u8], start: usize, end: usize, conn: ConnHeader, out: &mut Vec<u8>) {
        let keep_upgrade = conn == ConnHeader::Upgrade;
        let lookup = others(HeaderLines::new(buf, start, end));
        for line in HeaderLines::new(buf, start, end) {
            let (name, _) = split_header_line(line);
            let conn_lines = lookup.then(|| HeaderLines::new(buf, start, end));
            if hop(name, keep_upgrade, conn_lines) {
                continue;
            }
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
    }

    fn conn_line(conn: ConnHeader, out: &mut Vec<u8>) {
        match conn {
            ConnHeader::None => {}
            ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
            ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            ConnHeader::Upgrade => out.extend_from_slice(b"Connection: upgrade\r\n"),
        }
    }

    pub fn request(
        buf: &[u8],
        head: &RequestHead,
        conn: ConnHeader,
        ff: Option<(&str, std::net::IpAddr)>,
        out: &mut Vec<u8>,
    ) {
        let end = head.head_len.min(buf.len());
        out.extend_from_slice(&buf[head.method.0..head.method.1]);
        out.push(b' ');
        out.extend_from_slice(&buf[head.uri.0..head.uri.1]);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        copy(buf, head.uri.1, end, conn, out);
        conn_line(conn, out);
        if let Some((name, ip)) = ff {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            let _ = write!(out, "{ip}");
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    pub fn response(buf: &[u8], head: &ResponseHead, conn: ConnHeader, out: &mut Vec<u8>) {
        let end = head.head_len.min(buf.len());
        let start = skip_leading_empty_lines(&buf[..end]);
        let line_end = buf[start..end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(end, |p| start + p);
        let mut line = &buf[start..line_end];
        line = line.strip_suffix(b"\r").unwrap_or(line);
        out.extend_from_slice(b"HTTP/1.1");
        out.extend_from_slice(line.get(8..).unwrap_or_default());
        out.extend_from_slice(b"\r\n");
        copy(buf, start, end, conn, out);
        conn_line(conn, out);
        out.extend_from_slice(b"\r\n");
    }
}

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
    fn pick<T: Copy>(&mut self, s: &[T]) -> T {
        s[self.below(s.len())]
    }
}

const CONNS: [ConnHeader; 4] = [
    ConnHeader::None,
    ConnHeader::Close,
    ConnHeader::KeepAlive,
    ConnHeader::Upgrade,
];

const LINES: &[&str] = &[
    "Accept:  */*  ",
    "Connection: close",
    "Connection: keep-alive, X-Foo",
    "connection: Upgrade, x-bar, Content-Length, Host, close",
    "Upgrade: websocket",
    "X-Foo: 1",
    "x-bar:2",
    "X-Bar:\t3\t",
    "Keep-Alive: timeout=5",
    "TE: trailers",
    "Trailer: X-T",
    "Proxy-Connection: close",
    "Close: 1",
    "Cookie: a=b; c=d",
    "X-Empty:",
    "X-List: a, \"b,c\" ,,d",
    "Set-Cookie: id=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
];

/// A random valid head (request or response), bare LF now and then.
fn gen_head(r: &mut Rng, request: bool) -> Vec<u8> {
    let eol = |r: &mut Rng| if r.below(8) == 0 { "\n" } else { "\r\n" };
    let mut m = String::new();
    if r.below(10) == 0 {
        m.push_str("\r\n");
    }
    let minor = r.below(2);
    if request {
        let meth = r.pick(&["GET", "POST", "HEAD", "PUT", "X-CUSTOM"]);
        let uri = r.pick(&["/", "/a/b?c=d", "*", "http://h/x?q", "http://h", "/p?"]);
        m += &format!("{meth} {uri} HTTP/1.{minor}{}Host: h{}", eol(r), eol(r));
    } else {
        let st = r.pick(&["200 OK", "404", "503 Service  Unavailable", "200 "]);
        m += &format!("HTTP/1.{minor} {st}{}", eol(r));
    }
    for _ in 0..r.below(8) {
        m += r.pick(LINES);
        m += eol(r);
    }
    if r.below(2) == 0 {
        m += &format!("Content-Length: {}{}", r.below(100), eol(r));
    }
    m += eol(r);
    m.into_bytes()
}

#[test]
fn same_output_as_the_old_rewriter() {
    let fixed: &[&[u8]] = &[
        b"GET /x?y HTTP/1.1\r\nHost: a\r\nAccept:  */*  \r\n\r\n",
        b"POST /p HTTP/1.0\nContent-Length: 3\nConnection: keep-alive\nKeep-Alive: timeout=5\n\nabc",
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret, Content-Length\r\nX-Secret: s\r\nproxy-connection: x\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nx-secret: t\r\nKeep-Alive: 1\r\nContent-Length: 0\r\nX-Other: o\r\n\r\n",
        b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n",
        b"\r\nPOST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, x-a\r\nClose: 1\r\nX-A: 2\r\n\r\n",
    ];
    let fixed_resp: &[&[u8]] = &[
        b"HTTP/1.0 200 Fine Thanks\r\nContent-Length: 2\r\nConnection: keep-alive, X-H\r\nX-H: 1\r\nServer: s\r\n\r\nhi",
        b"HTTP/1.1 404\nX: y\n\n",
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 caf\xc3\xa9 \xff\r\n\r\n",
    ];
    let ip: IpAddr = "192.0.2.9".parse().unwrap();
    let check_req = |m: &[u8]| {
        let h = parse_request(m, 1 << 16).unwrap().unwrap();
        let mut head = take();
        head.fill_request(m, &h);
        for conn in CONNS {
            for ff in [None, Some(("X-Forwarded-For", ip))] {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                oracle::request(m, &h, conn, ff, &mut a);
                head.write_request_h1(m, conn, ff, &mut b);
                assert_eq!(a, b, "{:?}", String::from_utf8_lossy(m));
            }
        }
        give(head);
    };
    let check_resp = |m: &[u8]| {
        let h = parse_response(m, false, 1 << 16).unwrap().unwrap();
        let mut head = take();
        head.fill_response(m, &h);
        for conn in CONNS {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            oracle::response(m, &h, conn, &mut a);
            head.write_response_h1(m, conn, &mut b);
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(m));
        }
        give(head);
    };
    fixed.iter().for_each(|m| check_req(m));
    fixed_resp.iter().for_each(|m| check_resp(m));
    let mut r = Rng(0x5DEE_CE66_D1CE_4E5B);
    for _ in 0..3000 {
        check_req(&gen_head(&mut r, true));
        check_resp(&gen_head(&mut r, false));
    }
}

#[test]
fn request_accessors() {
    let b = b"\r\nGET http://ex.com/a/b?x=1&y HTTP/1.0\r\nHost: ex.com\nAccept:  text/html , \"a,b\"\\, x \r\nX-Empty:\r\naccept: last\r\n\r\n";
    let (_, head) = req(b);
    let v = head.view(b);
    assert_eq!(v.kind(), Kind::Request);
    assert_eq!(v.method(), b"GET");
    assert_eq!(v.target(), b"http://ex.com/a/b?x=1&y");
    assert_eq!(v.path(), Some(&b"/a/b"[..]));
    assert_eq!(v.query(), Some(&b"x=1&y"[..]));
    assert_eq!((v.version(), v.status(), v.reason()), (10, 0, &b""[..]));
    assert_eq!(v.header_count(), 4);
    assert_eq!(v.header(0), Some((&b"Host"[..], &b"ex.com"[..])));
    assert_eq!(
        v.header(1),
        Some((&b"Accept"[..], &b"text/html , \"a,b\"\\, x"[..]))
    );
    assert_eq!(v.header(4), None);
    assert_eq!(v.field(2), Some((&b"X-Empty"[..], &b""[..])));
    let full: Vec<&[u8]> = v.full_values(b"ACCEPT").collect();
    assert_eq!(full, [&b"text/html , \"a,b\"\\, x"[..], b"last"]);
    let split: Vec<&[u8]> = v.values(b"accept").collect();
    assert_eq!(split, [&b"text/html"[..], b"\"a,b\"\\", b"x", b"last"]);
    assert_eq!(v.values(b"x-empty").collect::<Vec<_>>(), [b""]);
    assert_eq!(v.get_last(b"accept"), Some(&b"last"[..]));
    assert_eq!(v.get_last(b"nope"), None);
    assert!(v.has(b"x-EMPTY") && !v.has(b"x-emp"));
    assert_eq!(v.count(b"accept", false), 4);
    assert_eq!(v.count(b"accept", true), 2);
    assert_eq!(v.occurrence(b"accept", 1, false), Some(&b"text/html"[..]));
    assert_eq!(v.occurrence(b"accept", 0, false), Some(&b"text/html"[..]));
    assert_eq!(v.occurrence(b"accept", -2, false), Some(&b"x"[..]));
    assert_eq!(v.occurrence(b"accept", -1, true), Some(&b"last"[..]));
    assert_eq!(v.occurrence(b"accept", -5, false), None);
    assert_eq!(v.occurrence(b"accept", 3, true), None);
    assert_eq!(v.slots_of(b"accept").collect::<Vec<_>>(), [1, 3]);
}

#[test]
fn comma_lists_as_haproxy() {
    fn split(s: &[u8]) -> Vec<&[u8]> {
        ListValues::new(s).collect()
    }
    assert_eq!(split(b"a,"), [&b"a"[..], b""]);
    assert_eq!(split(b",a"), [&b""[..], b"a"]);
    assert_eq!(split(b" a , b "), [&b"a"[..], b"b"]);
    assert_eq!(split(b"\"x\\\",y\",z"), [&b"\"x\\\",y\""[..], b"z"]);
    assert_eq!(split(b""), [b""]);
}

#[test]
fn path_forms() {
    let path = |t: &[u8]| {
        let mut h = Head::default();
        h.start_request(b"GET", t, 11);
        h.view(&[]).path().map(<[u8]>::to_vec)
    };
    assert_eq!(path(b"/a?b"), Some(b"/a".to_vec()));
    assert_eq!(path(b"/"), Some(b"/".to_vec()));
    assert_eq!(path(b"https://u@h:1/p/q?x"), Some(b"/p/q".to_vec()));
    assert_eq!(path(b"http://h"), None);
    assert_eq!(path(b"http://h?x"), None);
    assert_eq!(path(b"*"), None);
    assert_eq!(path(b"h:443"), None);
}

#[test]
fn response_accessors_and_status() {
    let b = b"HTTP/1.1 503 Service  Unavailable\r\nServer: s\r\n\r\n";
    let (h, mut head) = resp(b);
    assert_eq!(&b[h.reason.0..h.reason.1], b"Service  Unavailable");
    let v = head.view(b);
    assert_eq!(
        (v.status(), v.reason(), v.version()),
        (503, &b"Service  Unavailable"[..], 11)
    );
    assert_eq!(v.method(), b"");
    let mut e = head.edit(b);
    assert_eq!(e.set_status(200, None), Ok(()));
    assert_eq!(e.view().reason(), b"OK");
    assert_eq!(
        out_resp(&head, b, ConnHeader::None),
        "HTTP/1.1 200 OK\r\nServer: s\r\n\r\n"
    );
    let mut e = head.edit(b);
    assert_eq!(e.set_status(299, Some(b"Fine")), Ok(()));
    assert_eq!(e.set_status(599, None), Ok(()));
    assert_eq!(e.view().reason(), b"Server Error");
    assert_eq!(e.set_status(204, None), Err(EditError::ChangesFraming));
    assert_eq!(e.set_status(99, None), Err(EditError::InvalidStatus));
    assert_eq!(e.set_status(600, None), Err(EditError::InvalidStatus));
    assert_eq!(
        e.set_status(200, Some(b"a\r\nb")),
        Err(EditError::InvalidReason)
    );
    assert_eq!(e.set_method(b"GET"), Err(EditError::WrongKind));
    assert_eq!(
        out_resp(&head, b, ConnHeader::Close),
        "HTTP/1.1 599 Server Error\r\nServer: s\r\nConnection: close\r\n\r\n"
    );
    // No reason at all, obs-text reason: read as sent.
    let (_, head) = resp(b"HTTP/1.1 404\r\n\r\n");
    assert_eq!(head.view(b"HTTP/1.1 404\r\n\r\n").reason(), b"");
    let b = b"HTTP/1.0 200 caf\xe9\r\n\r\n";
    let (_, head) = resp(b);
    assert_eq!(head.view(b).reason(), b"caf\xe9");
}

#[test]
fn header_edits() {
    let b =
        b"GET / HTTP/1.1\r\nHost: a\r\nX-A:  1 \r\nx-b: 2\r\nX-a: 3\r\nContent-Length: 0\r\n\r\n";
    let (_, mut head) = req(b);
    let mut e = head.edit(b);
    assert_eq!(e.add_header(b"X-New", b"v"), Ok(5));
    assert_eq!(e.del_header(b"x-a"), Ok(2));
    assert_eq!(e.del_header(b"x-a"), Ok(0));
    assert_eq!(e.set_header(b"X-B", b"two"), Ok(6));
    assert_eq!(e.view().header_count(), 4);
    assert_eq!(e.view().field(1), None);
    assert_eq!(e.view().get_last(b"x-b"), Some(&b"two"[..]));
    assert_eq!(
        out_req(&head, b, ConnHeader::None),
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nX-New: v\r\nX-B: two\r\n\r\n"
    );
    let mut e = head.edit(b);
    assert_eq!(e.replace_field_value(0, b"b.example"), Ok(()));
    assert_eq!(e.replace_field_value(1, b"x"), Err(EditError::NoSuchField));
    assert_eq!(e.replace_field_value(99, b"x"), Err(EditError::NoSuchField));
    assert_eq!(e.replace_field_value(4, b"x"), Err(EditError::Protected));
    assert_eq!(e.remove_field(4), Err(EditError::Protected));
    assert_eq!(e.remove_field(5), Ok(()));
    assert_eq!(e.remove_field(5), Err(EditError::NoSuchField));
    assert_eq!(e.del_header(b"Content-Length"), Err(EditError::Protected));
    assert_eq!(
        e.set_header(b"transfer-encoding", b"chunked"),
        Err(EditError::Protected)
    );
    assert_eq!(e.add_header(b"Bad Name", b"v"), Err(EditError::InvalidName));
    assert_eq!(
        e.add_header(b"X", b"a\r\nInjected: 1"),
        Err(EditError::InvalidValue)
    );
    assert_eq!(e.add_header(b"X", b"a\0"), Err(EditError::InvalidValue));
    assert_eq!(
        out_req(&head, b, ConnHeader::Close),
        "GET / HTTP/1.1\r\nHost: b.example\r\nContent-Length: 0\r\nX-B: two\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn added_headers_follow_hop_by_hop_rules() {
    let b = b"GET / HTTP/1.1\r\nHost: a\r\nX-Secret: s\r\n\r\n";
    let (_, mut head) = req(b);
    let mut e = head.edit(b);
    e.add_header(b"Connection", b"x-secret").unwrap();
    e.add_header(b"Upgrade", b"h2c").unwrap();
    assert_eq!(
        out_req(&head, b, ConnHeader::None),
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    );
    assert_eq!(
        out_req(&head, b, ConnHeader::Upgrade),
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n"
    );
}

#[test]
fn start_line_edits() {
    let b = b"GET /a/b?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
    let (_, mut head) = req(b);
    let mut e = head.edit(b);
    e.set_path(b"/c").unwrap();
    assert_eq!(e.view().target(), b"/c?x=1");
    e.set_query(Some(b"y=2")).unwrap();
    assert_eq!(e.view().target(), b"/c?y=2");
    e.set_query(Some(b"")).unwrap();
    assert_eq!(e.view().target(), b"/c?");
    e.set_query(None).unwrap();
    assert_eq!(e.view().target(), b"/c");
    e.set_query(Some(b"")).unwrap();
    assert_eq!(e.view().target(), b"/c");
    e.set_query(Some(b"z")).unwrap();
    assert_eq!(e.view().target(), b"/c?z");
    e.set_method(b"POST").unwrap();
    assert_eq!(e.set_method(b"HEAD"), Err(EditError::ChangesFraming));
    assert_eq!(e.set_method(b"CONNECT"), Err(EditError::ChangesFraming));
    assert_eq!(e.set_method(b"G T"), Err(EditError::InvalidMethod));
    assert_eq!(e.set_status(200, None), Err(EditError::WrongKind));
    assert_eq!(
        out_req(&head, b, ConnHeader::None),
        "POST /c?z HTTP/1.1\r\nHost: a\r\n\r\n"
    );
    let mut e = head.edit(b);
    e.set_target(b"http://h/x?q").unwrap();
    e.set_path(b"/new/p").unwrap();
    assert_eq!(e.view().target(), b"http://h/new/p?q");
    assert_eq!(e.view().path(), Some(&b"/new/p"[..]));
    assert_eq!(e.set_target(b""), Err(EditError::InvalidTarget));
    assert_eq!(e.set_target(b"/a b"), Err(EditError::InvalidTarget));
    assert_eq!(e.set_path(b"/\xff"), Err(EditError::InvalidTarget));
    e.set_target(b"*").unwrap();
    e.set_path(b"/s").unwrap();
    assert_eq!(e.view().target(), b"/s");
    assert_eq!(e.set_path(b""), Err(EditError::InvalidTarget));
    e.set_target(b"http://h").unwrap();
    e.set_query(Some(b"k")).unwrap();
    assert_eq!(e.view().target(), b"http://h?k");
    e.set_path(b"/p").unwrap();
    assert_eq!(e.view().target(), b"/p?k");
}

#[test]
fn head_request_method_is_kept() {
    let b = b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n";
    let (_, mut head) = req(b);
    let mut e = head.edit(b);
    assert_eq!(e.set_method(b"GET"), Err(EditError::ChangesFraming));
    assert_eq!(e.set_method(b"HEAD"), Ok(()));
}

#[test]
fn field_limit_is_the_parser_limit() {
    let mut b = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS - crate::REQUEST_REWRITE_HEADERS - 2 {
        b.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    b.extend_from_slice(b"\r\n");
    let (_, mut head) = req(&b);
    let mut e = head.edit(&b);
    assert!(e.add_header(b"Y", b"1").is_ok());
    assert_eq!(e.add_header(b"Y", b"2"), Err(EditError::TooManyHeaders));
    assert!(e.set_header(b"Y", b"3").is_ok());
    let mut out = Vec::new();
    let ip = "192.0.2.1".parse().unwrap();
    head.write_request_h1(&b, ConnHeader::Close, Some(("X-FF", ip)), &mut out);
    let again = crate::parse_request_with_limit(&out, 1 << 20, MAX_HEADERS);
    assert_eq!(again.unwrap().unwrap().head_len, out.len());
}

#[test]
fn built_heads_without_a_buffer() {
    let mut h = Head::default();
    h.start_response(302, None, 20);
    let mut e = h.edit(&[]);
    e.add_header(b"Location", b"/x").unwrap();
    assert_eq!(e.view().version(), 20);
    assert_eq!(
        out_resp(&h, &[], ConnHeader::None),
        "HTTP/1.1 302 Moved Temporarily\r\nLocation: /x\r\n\r\n"
    );
    h.start_request(b"OPTIONS", b"*", 20);
    h.edit(&[]).add_header(b"Host", b"h").unwrap();
    assert_eq!(
        out_req(&h, &[], ConnHeader::None),
        "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"
    );
}

#[test]
fn wrong_buffer_reads_empty_without_panic() {
    let b = b"GET /abc HTTP/1.1\r\nHost: a\r\n\r\n";
    let (_, head) = req(b);
    let v = head.view(b"GET");
    assert_eq!(v.target(), b"");
    assert_eq!(v.header(0), Some((&b""[..], &b""[..])));
    let mut out = Vec::new();
    head.write_request_h1(b"", ConnHeader::None, None, &mut out);
}

#[test]
fn pooled_head_keeps_its_capacity() {
    let mut big = b"POST /upload HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..100 {
        big.extend_from_slice(format!("X-Header-{i}: value {i}\r\n").as_bytes());
    }
    big.extend_from_slice(b"\r\n");
    let h = parse_request(&big, 1 << 20).unwrap().unwrap();
    // Drain this thread's pool so that the next take() is ours.
    while pooled() > 0 {
        drop(take());
    }
    let mut head = take();
    head.fill_request(&big, &h);
    for i in 0..10 {
        head.edit(&big)
            .set_header(format!("X-Header-{i}").as_bytes(), b"rewritten value")
            .unwrap();
    }
    let cap = head.capacity();
    assert!(cap.0 >= 110 && cap.1 > 0);
    give(head);
    let mut again = take();
    assert_eq!(again.capacity(), cap, "pooled head kept its vectors");
    again.fill_request(&big, &h);
    for i in 0..10 {
        again
            .edit(&big)
            .set_header(format!("X-Header-{i}").as_bytes(), b"rewritten value")
            .unwrap();
    }
    assert_eq!(again.capacity(), cap, "same-size request: no growth");
    // An oversized arena is not kept.
    again
        .edit(&big)
        .add_header(b"X-Huge", &vec![b'a'; MAX_POOLED_ARENA + 1])
        .unwrap();
    give(again);
    assert_eq!(pooled(), 0);
}

/// Random heads, random edits: nothing panics, and what is written is a
/// head the parser accepts with the same framing.
#[test]
fn random_edits_never_panic_and_reparse() {
    let mut r = Rng(0x0123_4567_89AB_CDEF);
    let names: &[&[u8]] = &[
        b"X-Foo",
        b"x-bar",
        b"Host",
        b"Connection",
        b"Content-Length",
        b"Bad Name",
        b"Upgrade",
    ];
    let values: &[&[u8]] = &[b"", b"v", b"a, \"b,c\"", b"x\r\ny", b"\xff\t", b"close"];
    let uris: &[&[u8]] = &[
        b"/",
        b"/n?q",
        b"",
        b"http://h/p",
        b"*",
        b"a b",
        b"?",
        b"/\x01",
    ];
    let mut head = take();
    let mut applied = 0;
    for _ in 0..4000 {
        let request = r.below(2) == 0;
        let m = gen_head(&mut r, request);
        let body = if request {
            let h = parse_request(&m, 1 << 16).unwrap().unwrap();
            head.fill_request(&m, &h);
            h.body
        } else {
            let h = parse_response(&m, false, 1 << 16).unwrap().unwrap();
            head.fill_response(&m, &h);
            h.body
        };
        for _ in 0..r.below(12) {
            let slot = r.below(head.view(&m).slots() + 2);
            let mut e = head.edit(&m);
            let res = match r.below(11) {
                0 => e.add_header(r.pick(names), r.pick(values)).map(|_| ()),
                1 => e.set_header(r.pick(names), r.pick(values)).map(|_| ()),
                2 => e.del_header(r.pick(names)).map(|_| ()),
                3 => e.replace_field_value(slot, r.pick(values)),
                4 => e.remove_field(slot),
                5 => e.set_method(r.pick(&[&b"GET"[..], b"HEAD", b"PATCH", b""])),
                6 => e.set_target(r.pick(uris)),
                7 => e.set_path(r.pick(uris)),
                8 => e.set_query(r.pick(&[None, Some(&b"a=1"[..]), Some(b"")])),
                9 => e.set_status(r.pick(&[100, 200, 204, 404, 999, 0]), None),
                _ => {
                    let v = e.view();
                    let _ = (v.path(), v.query(), v.values(b"x-foo").count());
                    let _ = v.occurrence(b"x-list", -2, false);
                    Ok(())
                }
            };
            applied += usize::from(res.is_ok());
        }
        let conn = r.pick(&CONNS);
        let mut out = Vec::new();
        if request {
            head.write_request_h1(&m, conn, None, &mut out);
            match crate::parse_request_with_limit(&out, 1 << 20, MAX_HEADERS) {
                Ok(Some(h2)) => assert_eq!((h2.head_len, h2.body), (out.len(), body)),
                // Rules may delete or duplicate Host, as HAProxy's do.
                Err(e) if e.reason.contains("Host") => {}
                other => panic!("{other:?}: {:?}", String::from_utf8_lossy(&out)),
            }
        } else {
            head.write_response_h1(&m, conn, &mut out);
            let h2 = crate::parse_response_with_limit(&out, false, 1 << 20, MAX_HEADERS)
                .unwrap_or_else(|e| panic!("{e:?}: {:?}", String::from_utf8_lossy(&out)))
                .unwrap();
            assert_eq!(h2.head_len, out.len());
            if body != BodyKind::CloseDelimited {
                assert_eq!(h2.body, body, "{:?}", String::from_utf8_lossy(&out));
            }
        }
    }
    give(head);
    assert!(applied > 8000, "edits applied: {applied}");
}

#[test]
fn codec_parts_and_fields() {
    let mut h = Head::default();
    h.start_request(b"", b"", 20);
    h.set_part(Part::Method, b"POST");
    h.set_part(Part::Scheme, b"https");
    h.set_part(Part::Authority, b"example.com");
    h.set_part(Part::Target, b"/a?b");
    // Protected names are accepted from a codec (the codec validates).
    h.append_field(b"content-length", b"3");
    h.append_field(b"x", b"y");
    let v = h.view(&[]);
    assert_eq!(v.method(), b"POST");
    assert_eq!(v.scheme(), b"https");
    assert_eq!(v.authority(), b"example.com");
    assert_eq!(v.target(), b"/a?b");
    assert_eq!(v.version(), 20);
    assert_eq!(v.header_count(), 2);
    assert_eq!(v.get_last(b"content-length"), Some(&b"3"[..]));
    // HTTP/1 heads have neither.
    h.clear();
    assert_eq!(h.view(&[]).scheme(), b"");
    assert_eq!(h.view(&[]).authority(), b"");
}
