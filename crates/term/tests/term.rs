//! Real-socket tests of fairlead-term: every query parameter, keep-alive,
//! pipelining, request bodies, HTTP/1.0 and counters.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use fairlead_term::{start, TermHandle, TermOptions};

fn term(ip: &str, name: &str, threads: usize) -> TermHandle {
    let addr: SocketAddr = format!("{ip}:0").parse().unwrap();
    start(
        &[addr],
        TermOptions {
            threads,
            name: name.into(),
        },
    )
    .unwrap()
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Body was chunked; number of data chunks.
    chunks: Option<usize>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Minimal blocking HTTP/1.1 client keeping leftover bytes between
/// responses, so pipelined answers are split correctly.
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { s, buf: Vec::new() }
    }

    fn send(&mut self, data: &[u8]) {
        self.s.write_all(data).unwrap();
    }

    /// Reads more; false on EOF.
    fn more(&mut self) -> bool {
        let mut tmp = [0u8; 65536];
        let n = self.s.read(&mut tmp).unwrap();
        self.buf.extend_from_slice(&tmp[..n]);
        n > 0
    }

    fn line(&mut self) -> Vec<u8> {
        loop {
            if let Some(p) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = self.buf[..p].to_vec();
                self.buf.drain(..p + 2);
                return l;
            }
            assert!(self.more(), "EOF in line");
        }
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.more(), "EOF in body");
        }
        self.buf.drain(..n).collect()
    }

    fn response(&mut self, head_req: bool) -> Resp {
        let (status, headers, hl) = loop {
            let mut hs = [httparse::EMPTY_HEADER; 64];
            let mut r = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) = r.parse(&self.buf).unwrap() {
                let h = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8(h.value.to_vec()).unwrap(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (r.code.unwrap(), h, n);
            }
            assert!(self.more(), "EOF in head");
        };
        self.buf.drain(..hl);
        let mut resp = Resp {
            status,
            headers,
            body: Vec::new(),
            chunks: None,
        };
        if head_req || status == 204 || status == 304 || status < 200 {
            return resp;
        }
        if resp
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            let mut chunks = 0;
            loop {
                let l = self.line();
                let n = usize::from_str_radix(std::str::from_utf8(&l).unwrap(), 16).unwrap();
                if n == 0 {
                    assert_eq!(self.line(), b"");
                    break;
                }
                chunks += 1;
                let d = self.take(n);
                resp.body.extend_from_slice(&d);
                assert_eq!(self.line(), b"");
            }
            resp.chunks = Some(chunks);
        } else if let Some(cl) = resp.header("content-length") {
            let n = cl.parse().unwrap();
            resp.body = self.take(n);
        } else {
            while self.more() {}
            resp.body = std::mem::take(&mut self.buf);
        }
        resp
    }

    fn get(&mut self, path: &str) -> Resp {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        self.response(false)
    }

    /// True when the server closed the connection (EOF with nothing left).
    fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.more()
    }
}

/// Polls `f` until true or a 5 s deadline.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::yield_now();
        std::thread::sleep(Duration::from_millis(2));
    }
    f()
}

#[test]
fn default_body_name_and_counters() {
    let t = term("127.0.0.11", "s1", 1);
    let addr = t.local_addrs()[0];
    assert_ne!(addr.port(), 0);
    let mut c = Client::connect(addr);
    let r = c.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"s1\n");
    assert_eq!(r.header("x-served-by"), Some("s1"));
    assert_eq!(t.requests(), 1);
    assert_eq!(t.connections(), 1);
    assert_eq!(t.requests_on(addr), 1);
    assert_eq!(t.connections_on(addr), 1);

    // No name: empty body, no header.
    let t2 = term("127.0.0.11", "", 1);
    let mut c = Client::connect(t2.local_addrs()[0]);
    let r = c.get("/x?unknown=1");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("content-length"), Some("0"));
    assert_eq!(r.header("x-served-by"), None);
}

#[test]
fn size_parameter() {
    let t = term("127.0.0.12", "n", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    for (q, n) in [
        ("0", 0),
        ("1", 1),
        ("100", 100),
        ("1k", 1024),
        ("20k", 20 << 10),
        ("3m", 3 << 20),
    ] {
        let r = c.get(&format!("/?s={q}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), n, "s={q}");
        assert_eq!(r.header("content-length"), Some(n.to_string().as_str()));
        assert!(r.body.iter().all(|b| b.is_ascii()), "pattern is text");
    }
    assert_eq!(t.connections(), 1);
    assert_eq!(t.requests(), 6);
}

#[test]
fn random_body() {
    let t = term("127.0.0.13", "", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    let r = c.get("/?s=4k&R=1");
    assert_eq!(r.body.len(), 4096);
    assert!(
        !r.body.iter().all(|b| b.is_ascii()),
        "random bytes expected"
    );
    // Distinct byte values: a text pattern has < 70.
    let mut seen = [false; 256];
    r.body.iter().for_each(|&b| seen[b as usize] = true);
    assert!(seen.iter().filter(|&&s| s).count() > 200);
    let r = c.get("/?s=1500k&R=1");
    assert_eq!(r.body.len(), 1500 << 10);
}

#[test]
fn status_parameter() {
    let t = term("127.0.0.14", "x", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    assert_eq!(c.get("/?r=503").status, 503);
    assert_eq!(c.get("/?r=404&s=10").body.len(), 10);
    let r = c.get("/?r=204");
    assert_eq!(r.status, 204);
    assert_eq!(r.header("content-length"), None);
    // Out of range: ignored.
    assert_eq!(c.get("/?r=99").status, 200);
    assert_eq!(c.get("/?r=302").status, 302);
}

#[test]
fn chunked_parameter() {
    let t = term("127.0.0.15", "chunky", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    let r = c.get("/?k=1");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body, b"chunky\n");
    let r = c.get("/?k=1&s=0");
    assert_eq!(r.chunks, Some(0));
    let r = c.get("/?k=1&s=100");
    assert_eq!((r.body.len(), r.chunks), (100, Some(1)));
    let r = c.get("/?k=1&s=200k");
    assert_eq!(r.body.len(), 200 << 10);
    assert!(r.chunks.unwrap() > 1);
    // Still usable afterwards.
    assert_eq!(c.get("/").body, b"chunky\n");
}

#[test]
fn close_parameter_and_connection_close() {
    let t = term("127.0.0.16", "", 1);
    let addr = t.local_addrs()[0];
    let mut c = Client::connect(addr);
    let r = c.get("/?C=1");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed());

    let mut c = Client::connect(addr);
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed());
    assert_eq!(t.connections(), 2);
}

#[test]
fn http10() {
    let t = term("127.0.0.17", "old", 1);
    let addr = t.local_addrs()[0];
    let mut c = Client::connect(addr);
    c.send(b"GET /?s=5 HTTP/1.0\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.body.len(), 5);
    assert!(c.closed());

    // Keep-alive requested: kept open, advertised.
    let mut c = Client::connect(addr);
    for _ in 0..3 {
        c.send(b"GET /?k=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let r = c.response(false);
        assert_eq!(r.header("connection"), Some("keep-alive"));
        // No chunking towards HTTP/1.0.
        assert_eq!(r.header("content-length"), Some("4"));
        assert_eq!(r.body, b"old\n");
    }
    assert_eq!(t.connections(), 2);
    assert_eq!(t.requests(), 4);
}

#[test]
fn wait_parameter() {
    let t = term("127.0.0.18", "", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    let t0 = Instant::now();
    let r = c.get("/?t=120&s=3");
    assert!(t0.elapsed() >= Duration::from_millis(120));
    assert_eq!(r.body.len(), 3);
}

#[test]
fn streaming_times() {
    let t = term("127.0.0.19", "", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    let r = c.get("/?times=4&t=10&s=10");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!((r.body.len(), r.chunks), (40, Some(4)));
    let r = c.get("/?times=2&t=0");
    assert_eq!((r.body.len(), r.chunks), (32, Some(2)));
    let r = c.get("/?times=2&s=100k&R=1");
    assert_eq!(r.body.len(), 200 << 10);
    // HTTP/1.0: close-delimited.
    c.send(b"GET /?times=3&s=7 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.body.len(), 21);
}

#[test]
fn keep_alive_many_requests() {
    let t = term("127.0.0.20", "ka", 2);
    let mut c = Client::connect(t.local_addrs()[0]);
    for i in 0..20 {
        let r = c.get(&format!("/?s={i}"));
        assert_eq!(r.body.len(), i);
    }
    assert_eq!(t.connections(), 1);
    assert_eq!(t.requests(), 20);
}

#[test]
fn pipelined_burst_in_order() {
    let t = term("127.0.0.21", "p", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    let sizes = [0usize, 5, 17000, 1, 300, 70000, 2, 9, 0, 33];
    let mut burst = Vec::new();
    for _round in 0..5 {
        for (i, s) in sizes.iter().enumerate() {
            let k = if i % 3 == 0 { "&k=1" } else { "" };
            burst.extend_from_slice(
                format!("GET /?s={s}{k} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            );
        }
    }
    // Includes a POST with a body in the middle of the burst.
    burst.extend_from_slice(b"POST /?s=4 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    burst.extend_from_slice(b"HEAD /?s=1234 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    c.send(&burst);
    for _round in 0..5 {
        for s in sizes {
            assert_eq!(c.response(false).body.len(), s);
        }
    }
    assert_eq!(c.response(false).body.len(), 4);
    let r = c.response(true);
    assert_eq!(r.header("content-length"), Some("1234"));
    assert_eq!(c.response(false).body, b"p\n");
    assert_eq!(t.requests(), 53);
    assert_eq!(t.connections(), 1);
}

#[test]
fn request_bodies_are_discarded() {
    let t = term("127.0.0.22", "b", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    // Content-Length body, sent in two parts, larger than the read buffer.
    let body = vec![b'x'; 100_000];
    c.send(
        format!(
            "POST /?s=2 HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    c.send(&body[..1000]);
    c.send(&body[1000..]);
    assert_eq!(c.response(false).body.len(), 2);
    // Chunked body with extension and trailer.
    c.send(
        b"POST /?s=3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n1;e=x\r\n!\r\n0\r\nTrailer: y\r\n\r\n",
    );
    assert_eq!(c.response(false).body.len(), 3);
    // Big chunked body in pieces.
    c.send(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    for _ in 0..10 {
        c.send(b"2710\r\n");
        c.send(&body[..10_000]);
        c.send(b"\r\n");
    }
    c.send(b"0\r\n\r\n");
    assert_eq!(c.response(false).body, b"b\n");
    // Expect: 100-continue gets an interim response first.
    c.send(b"POST /?s=1 HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    let interim = c.response(false);
    assert_eq!(interim.status, 100);
    c.send(b"data");
    assert_eq!(c.response(false).body.len(), 1);
    assert_eq!(c.get("/?s=7").body.len(), 7);
    assert_eq!(t.connections(), 1);
    assert_eq!(t.requests(), 5);
}

#[test]
fn bad_request_closes() {
    let t = term("127.0.0.23", "", 1);
    let mut c = Client::connect(t.local_addrs()[0]);
    c.send(b"GARBAGE\0 / HTTP/1.1\r\n\r\n");
    assert_eq!(c.response(false).status, 400);
    assert!(c.closed());
    let mut c = Client::connect(t.local_addrs()[0]);
    c.send(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n");
    assert_eq!(c.response(false).status, 501);
}

#[test]
fn several_addresses_threads_and_stop() {
    let addrs: Vec<SocketAddr> = vec![
        "127.0.0.24:0".parse().unwrap(),
        "127.0.0.25:0".parse().unwrap(),
    ];
    let mut t = start(
        &addrs,
        TermOptions {
            threads: 2,
            name: "multi".into(),
        },
    )
    .unwrap();
    let bound = t.local_addrs();
    assert_eq!(bound.len(), 2);
    assert_eq!(bound[0].ip(), addrs[0].ip());
    for _ in 0..6 {
        let mut c = Client::connect(bound[0]);
        assert_eq!(c.get("/").body, b"multi\n");
    }
    for _ in 0..3 {
        let mut c = Client::connect(bound[1]);
        c.get("/");
        c.get("/");
    }
    assert_eq!(t.requests_on(bound[0]), 6);
    assert_eq!(t.requests_on(bound[1]), 6);
    assert_eq!(t.connections_on(bound[1]), 3);
    assert_eq!(t.requests(), 12);
    assert!(eventually(|| t.connections() == 9));
    t.stop();
    assert!(TcpStream::connect(bound[0]).is_err());
}

#[test]
fn handle_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<TermHandle>();
    let o = TermOptions::default();
    assert_eq!((o.threads, o.name.as_str()), (1, ""));
}
