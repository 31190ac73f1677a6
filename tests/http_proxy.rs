//! HTTP/1.1 mode end to end: the real binary between a real client and
//! real origins on loopback.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};

#[test]
fn balances_roundrobin_and_adds_forwarded_for() {
    let ip = test_ip();
    let (t1, a1) = term(ip, "one");
    let (t2, a2) = term(ip, "two");
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        "    option forwardfor",
        &format!("    balance roundrobin\n    server s1 {a1}\n    server s2 {a2}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let mut served = Vec::new();
    for _ in 0..10 {
        let r = get(bind, "/");
        assert_eq!(r.status, 200);
        served.push(r.header("x-served-by").unwrap().to_string());
    }
    assert_eq!(
        served.iter().filter(|s| *s == "one").count(),
        5,
        "{served:?}"
    );
    assert_eq!(t1.requests() + t2.requests(), 10);
    // forwardfor: an origin that echoes the header it got.
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let head = read_head(&mut r).unwrap();
        let xff = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("x-forwarded-for:"))
            .unwrap_or("none")
            .to_string();
        let mut s = s;
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{xff}",
            xff.len()
        );
    });
    let bind2 = free_addr(ip);
    let cfg2 = http_cfg(
        bind2,
        "    option forwardfor",
        &format!("    server o {origin}"),
    );
    let _p2 = Proxy::start(&cfg2, &[bind2]);
    let s = connect(bind2);
    let client_ip = s.local_addr().unwrap().ip();
    let mut w = s.try_clone().unwrap();
    w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut BufReader::new(s), false).unwrap();
    assert_eq!(r.body_str(), format!("X-Forwarded-For: {client_ip}"));
}

#[test]
fn keep_alive_reuses_one_server_connection() {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"));
    let _p = Proxy::start(&cfg, &[bind]);
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for i in 0..20 {
        write!(w, "GET /?s={i} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body.len(), i);
    }
    assert_eq!(t.requests(), 20);
    assert_eq!(
        t.connections(),
        1,
        "20 keep-alive requests must share one server connection"
    );
}

#[test]
fn idle_server_connections_are_reused_across_clients() {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 1\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    http-reuse always\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for _ in 0..10 {
        let r = get(bind, "/");
        assert_eq!(r.status, 200);
        // The server connection is parked once the client is gone: wait for
        // it before the next client so that the count is deterministic.
    }
    assert_eq!(t.requests(), 10);
    assert!(
        t.connections() <= 2,
        "10 sequential clients should reuse pooled server connections, got {}",
        t.connections()
    );
}

/// `http-reuse` and a client's first request, as HAProxy 2.6 defines the
/// modes: `safe` never sends it over an idle connection, `aggressive` only
/// over one that was reused at least once, `always` over any. Clients send
/// `Connection: close`, so each server connection is parked before the
/// next client is accepted (one thread).
#[test]
fn first_requests_and_http_reuse_modes() {
    // (mode, connections after two one-request clients, after a client of
    // two requests and then two more one-request clients)
    for (mode, after_two, after_all) in [("safe", 2, 5), ("aggressive", 2, 3), ("always", 1, 1)] {
        let ip = test_ip();
        let (t, a) = term(ip, "o");
        let bind = free_addr(ip);
        let cfg = format!(
            "global\n    nbthread 1\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    http-reuse {mode}\n    server s1 {a}\n"
        );
        let _p = Proxy::start(&cfg, &[bind]);
        for _ in 0..2 {
            assert_eq!(get(bind, "/").status, 200);
        }
        assert_eq!(t.connections(), after_two, "{mode}: two first requests");
        // A client with two requests: its second one reuses its server
        // connection, which then parks as safe.
        let s = connect(bind);
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        for _ in 0..2 {
            assert_eq!(get(bind, "/").status, 200);
        }
        assert_eq!(t.requests(), 6, "{mode}");
        assert_eq!(
            t.connections(),
            after_all,
            "{mode}: after a reused connection"
        );
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_t, bind, _p) = one_origin("", "s1");
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut burst = String::new();
    for i in 0..50 {
        burst.push_str(&format!("GET /?s={} HTTP/1.1\r\nHost: x\r\n\r\n", i * 7));
    }
    w.write_all(burst.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    for i in 0..50 {
        let resp = read_response(&mut r, false).expect("response");
        assert_eq!(resp.body.len(), i * 7, "response {i} out of order");
    }
}

#[test]
fn chunked_bodies_stream_without_buffering() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    // An origin that counts a chunked request body it reads to the end.
    let (counter, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let _ = read_head(&mut r).unwrap();
        let mut total = 0usize;
        loop {
            let mut size = String::new();
            r.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0u8; n + 2];
            r.read_exact(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            total += n;
        }
        let body = total.to_string();
        let mut s = s;
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    });
    let bind = free_addr(ip);
    let up_bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 1\n    tune.bufsize 16384\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 20s\n    timeout server 20s\n\
frontend down\n    bind {bind}\n    default_backend down\n\
backend down\n    server s1 {a}\n\
frontend up\n    bind {up_bind}\n    default_backend up\n\
backend up\n    server c {counter}\n"
    );
    let p = Proxy::start(&cfg, &[bind, up_bind]);

    // Response direction: 64 MiB chunked through a 16 KiB-buffer proxy.
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    write!(
        w,
        "GET /?s=64m&k=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let resp = read_response(&mut r, false).unwrap();
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert_eq!(resp.body.len(), 64 << 20);

    // Request direction: 32 MiB chunked upload, counted by the origin.
    let mut s = connect(up_bind);
    write!(
        s,
        "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    let chunk = vec![b'z'; 8192];
    for _ in 0..4096 {
        write!(s, "2000\r\n").unwrap();
        s.write_all(&chunk).unwrap();
        s.write_all(b"\r\n").unwrap();
    }
    s.write_all(b"0\r\n\r\n").unwrap();
    let mut r = BufReader::new(s);
    let resp = read_response(&mut r, false).unwrap();
    assert_eq!(resp.body_str(), (32usize << 20).to_string());
    let peak = p.peak_rss_kib();
    assert!(
        peak < 32 * 1024,
        "proxy peak RSS {peak} KiB: bodies must stream, not buffer"
    );
}

#[test]
fn expect_100_continue_is_relayed() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let head = read_head(&mut r).unwrap();
        assert!(head.to_ascii_lowercase().contains("expect: 100-continue"));
        let mut s = s;
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        let mut body = [0u8; 5];
        r.read_exact(&mut body).unwrap();
        let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        let _ = s.write_all(&body);
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server o {origin}")),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    write!(
        w,
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let interim = read_response(&mut r, false).unwrap();
    assert_eq!(interim.status, 100);
    w.write_all(b"hello").unwrap();
    let fin = read_response(&mut r, false).unwrap();
    assert_eq!(fin.status, 200);
    assert_eq!(fin.body_str(), "hello");
}

#[test]
fn websocket_upgrade_becomes_a_tunnel() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let head = read_head(&mut r).unwrap();
        assert!(head.to_ascii_lowercase().contains("upgrade: websocket"));
        let mut s = s;
        s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n").unwrap();
        let mut buf = [0u8; 1024];
        loop {
            let n = r.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            s.write_all(&buf[..n]).unwrap();
        }
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(
            bind,
            "    timeout tunnel 1h",
            &format!("    server o {origin}"),
        ),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    write!(
        w,
        "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let resp = read_response(&mut r, true).unwrap();
    assert_eq!(resp.status, 101);
    for msg in ["hello", "world", "again"] {
        w.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        r.read_exact(&mut got).unwrap();
        assert_eq!(got, msg.as_bytes());
    }
}

/// h2c upgrade smuggling: `Upgrade: h2c` and `HTTP2-Settings` never reach
/// the server (HAProxy 2.6 forwards them), so the server cannot switch
/// the connection to HTTP/2 behind the proxy; the request is served as
/// plain HTTP/1.1 and the connection stays usable. WebSocket still
/// passes (see above).
#[test]
fn h2c_upgrade_is_stripped() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            let body = head.to_ascii_lowercase();
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server o {origin}")),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..2 {
        w.write_all(
            b"GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n\
Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
        )
        .unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, 200);
        let seen = resp.body_str();
        assert!(seen.starts_with("get /up http/1.1\r\n"), "{seen}");
        for gone in ["upgrade", "h2c", "http2-settings"] {
            assert!(!seen.contains(gone), "{gone} reached the server: {seen}");
        }
    }
}

/// The output side frames a chunked response: an HTTP/1.1 client gets it
/// chunked again (upper-case hex sizes, as HAProxy writes them), an
/// HTTP/1.0 client, which cannot take chunked encoding, the bare data
/// until the connection closes, even when it asked for keep-alive.
#[test]
fn chunked_responses_are_framed_for_the_client() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let _p = Proxy::start(&http_cfg(bind, "", &format!("    server s1 {a}")), &[bind]);
    // 26 bytes: size 0x1a, written `1A`.
    let mut s = connect(bind);
    s.write_all(b"GET /?s=26&k=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let all = read_all(&mut s);
    let (head, body) = all.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let mut data = String::new();
    let mut rest = body;
    loop {
        let (size, after) = rest.split_once("\r\n").expect("size line");
        assert!(
            !size.chars().any(|c| c.is_ascii_lowercase()),
            "size line {size:?}"
        );
        let n = usize::from_str_radix(size, 16).unwrap();
        if n == 0 {
            assert_eq!(after, "\r\n", "no trailers, then the end");
            break;
        }
        data.push_str(&after[..n]);
        rest = after[n..]
            .strip_prefix("\r\n")
            .expect("CRLF after the data");
    }
    assert_eq!(data, "0123456789abcdefghijklmnop");
    for req in [
        &b"GET /?s=26&k=1 HTTP/1.0\r\n\r\n"[..],
        b"GET /?s=26&k=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ] {
        let mut s = connect(bind);
        s.write_all(req).unwrap();
        // read_all returns once the proxy closed the connection.
        let all = read_all(&mut s);
        let (head, body) = all.split_once("\r\n\r\n").unwrap();
        let lower = head.to_ascii_lowercase();
        assert!(!lower.contains("transfer-encoding"), "{head}");
        assert!(lower.contains("connection: close"), "{head}");
        assert_eq!(body, "0123456789abcdefghijklmnop");
    }
}

#[test]
fn http10_head_204_304_and_close() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let _p = Proxy::start(&http_cfg(bind, "", &format!("    server s1 {a}")), &[bind]);
    // HTTP/1.0 without keep-alive: the proxy closes after the response.
    let mut s = connect(bind);
    s.write_all(b"GET /?s=10 HTTP/1.0\r\n\r\n").unwrap();
    let all = read_all(&mut s);
    assert!(all.starts_with("HTTP/1.1 200"), "{all}");
    assert!(all.ends_with("\r\n\r\n") || all.len() > 10);
    // HTTP/1.0 with keep-alive stays open and says so.
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..2 {
        w.write_all(b"GET /?s=3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.body.len(), 3);
        assert_eq!(
            resp.header("connection")
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("keep-alive")
        );
    }
    // HEAD, 204 and 304 carry no body even if the length says otherwise.
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"HEAD /?s=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let resp = read_response(&mut r, true).unwrap();
    assert_eq!(resp.status, 200);
    for code in [204, 304] {
        write!(w, "GET /?r={code} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, code);
    }
    // Still in sync: a normal request works on the same connection.
    w.write_all(b"GET /?s=4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let resp = read_response(&mut r, false).unwrap();
    assert_eq!(resp.body.len(), 4);
    assert_eq!(resp.header("connection"), Some("close"));
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(
        rest.is_empty(),
        "connection must close after Connection: close"
    );
}

#[test]
fn server_connection_close_is_honoured() {
    let ip = test_ip();
    // An origin that answers one request per connection and says so.
    let (origin, conns) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        if read_head(&mut r).is_some() {
            let mut s = s;
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server o {origin}")),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..3 {
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.body_str(), "ok");
        // The client side stays keep-alive: the close was the server's.
        assert_eq!(resp.header("connection"), None);
    }
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn keep_alive_timeout_closes_idle_clients() {
    let (_t, bind, _p) = one_origin("    timeout http-keep-alive 200ms", "s");
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    // Idle past the keep-alive timeout: closed silently, no 408.
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

#[test]
fn upgraded_tunnel_obeys_timeout_tunnel() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let _ = read_head(&mut r);
        let mut s = s;
        let _ = s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
        let mut sink = Vec::new();
        let _ = r.read_to_end(&mut sink);
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(
            bind,
            "    timeout tunnel 300ms",
            &format!("    server o {origin}"),
        ),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, true).unwrap().status, 101);
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn frontend_maxconn_limits_that_frontend() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 1\ndefaults\n    mode http\n    timeout client 10s\n    timeout server 10s\n    timeout connect 2s\n\
frontend fe\n    bind {bind}\n    maxconn 1\n    default_backend bk\nbackend bk\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let first = connect(bind);
    let mut fw = first.try_clone().unwrap();
    fw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut fr = BufReader::new(first);
    assert_eq!(read_response(&mut fr, false).unwrap().status, 200);
    let second = connect(bind);
    second
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut sw = second.try_clone().unwrap();
    sw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1];
    assert!(
        second.peek(&mut buf).is_err(),
        "served beyond the frontend's maxconn"
    );
    drop(fw);
    drop(fr);
    second.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut sr = BufReader::new(second);
    assert_eq!(read_response(&mut sr, false).unwrap().status, 200);
}

/// An origin that answers with the request head it received as body.
fn echo_head_origin(ip: std::net::IpAddr) -> std::net::SocketAddr {
    raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        while let Some(head) = read_head(&mut r) {
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}",
                head.len()
            );
        }
    })
    .0
}

#[test]
fn hop_by_hop_headers_are_not_forwarded() {
    let ip = test_ip();
    let origin = echo_head_origin(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server o {origin}")),
        &[bind],
    );
    let r = request(
        bind,
        "GET /p?q=1 HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: timeout=5\r\n\
X-Secret: drop me\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nX-Kept:  spaced value \r\n\r\n",
    );
    let seen = r.body_str();
    assert!(seen.starts_with("GET /p?q=1 HTTP/1.1\r\n"), "{seen}");
    for gone in ["X-Secret", "Keep-Alive", "Proxy-Connection", "TE:"] {
        assert!(!seen.contains(gone), "{gone} forwarded:\n{seen}");
    }
    // End-to-end headers keep their exact bytes.
    assert!(seen.contains("\r\nX-Kept:  spaced value \r\n"), "{seen}");
    assert!(seen.contains("\r\nHost: h\r\n"), "{seen}");
}

#[test]
fn server_close_and_httpclose_modes() {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    // http-server-close: client kept alive, one server connection per request.
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(
            bind,
            "    option http-server-close",
            &format!("    server s {a}"),
        ),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..4 {
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.header("connection"), None);
    }
    assert_eq!(t.connections(), 4);
    // httpclose: the client connection closes after one response.
    let bind2 = free_addr(ip);
    let _p2 = Proxy::start(
        &http_cfg(bind2, "    option httpclose", &format!("    server s {a}")),
        &[bind2],
    );
    let s = connect(bind2);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let resp = read_response(&mut r, false).unwrap();
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(read_response(&mut r, false).is_none());
}

#[test]
fn weights_and_backup_servers() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "heavy");
    let (_t2, a2) = term(ip, "light");
    let (_t3, a3) = term(ip, "spare");
    let bind = free_addr(ip);
    let servers = format!(
        "    server heavy {a1} weight 3\n    server light {a2} weight 1\n    server spare {a3} backup"
    );
    let _p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    let mut counts = std::collections::HashMap::new();
    for _ in 0..40 {
        let r = get(bind, "/");
        *counts
            .entry(r.header("x-served-by").unwrap().to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(counts.get("heavy"), Some(&30), "{counts:?}");
    assert_eq!(counts.get("light"), Some(&10), "{counts:?}");
    assert_eq!(counts.get("spare"), None, "{counts:?}");
    // With every active server disabled, the backup takes the traffic.
    let bind2 = free_addr(ip);
    let servers2 = format!("    server heavy {a1} disabled\n    server spare {a3} backup");
    let _p2 = Proxy::start(&http_cfg(bind2, "", &servers2), &[bind2]);
    assert_eq!(get(bind2, "/").header("x-served-by"), Some("spare"));
}
