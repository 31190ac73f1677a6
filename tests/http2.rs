//! HTTP/2 end to end against the real binary: h2c with prior knowledge
//! (`bind ... proto h2`), preface detection on a clear bind, ALPN `h2`
//! over TLS, streams forwarded to HTTP/1 origins with bodies, trailers,
//! rules and logs. The client is the `h2` crate (and curl where it has
//! HTTP/2).

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use bytes::Bytes;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, UdpSocket};

/// An origin that echoes each request's body, with the framing it came
/// with in `x-framing`, its request line in `x-line` and its trailers
/// in `x-trailers`. `/chunked` answers chunked with gRPC-like trailers.
fn echo_origin(ip: std::net::IpAddr) -> SocketAddr {
    let (addr, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            let line = head.lines().next().unwrap_or("").to_string();
            let (framing, body, trailers) = read_body(&mut r, &head);
            let trailers = trailers.trim_end().replace("\r\n", "|");
            let resp = if line.contains("/chunked") {
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ntransfer-encoding: chunked\r\nx-line: {line}\r\n\r\n"
                );
                for part in [&b"hello "[..], b"world"] {
                    out.push_str(&format!("{:x}\r\n", part.len()));
                    out.push_str(std::str::from_utf8(part).unwrap());
                    out.push_str("\r\n");
                }
                out.push_str("0\r\ngrpc-status: 0\r\ngrpc-message: fine\r\n\r\n");
                out.into_bytes()
            } else {
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nx-framing: {framing}\r\nx-line: {line}\r\nx-trailers: {trailers}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                out.extend_from_slice(&body);
                out
            };
            if w.write_all(&resp).is_err() {
                return;
            }
        }
    });
    addr
}

/// `bind ... proto h2`: h2c with prior knowledge, GET to fairlead-term,
/// and 1 MiB up (content-length and chunked framing) and down,
/// byte-exact, on one connection.
#[test]
fn h2c_prior_knowledge_to_http1_origins() {
    let ip = test_ip();
    let (_t, term_addr) = term(ip, "t1");
    let echo = echo_origin(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {term_addr}\nbackend echo\n    server e1 {echo}\n"),
        "    use_backend echo if { path_beg /echo }\n",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let direct = get(term_addr, "/?s=1m").body;
    assert_eq!(direct.len(), 1 << 20);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body, b"t1\n");
        assert_eq!(a.headers.get("x-served-by").unwrap(), "t1");
        // 1 MiB down, byte-exact.
        let a = exchange(&c, "GET", "/?s=1m", &[]).await;
        assert_eq!(a.status, 200);
        assert!(a.body == direct, "1 MiB body differs");
        // Chunked down too.
        let a = exchange(&c, "GET", "/?s=300k&k=1", &[]).await;
        assert_eq!(a.body.len(), 300 * 1024);
        // 1 MiB up without content-length: chunked to the origin.
        let up = pattern(1 << 20, 7);
        let a = exchange(&c, "POST", "/echo/up", &up).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers.get("x-framing").unwrap(), "chunked");
        assert_eq!(a.headers.get("x-line").unwrap(), "POST /echo/up HTTP/1.1");
        assert!(a.body == up, "1 MiB upload differs");
        // With the client's content-length: forwarded as is.
        let req = http::Request::builder()
            .method("PUT")
            .uri("http://test/echo/len")
            .header("content-length", "100000")
            .body(())
            .unwrap();
        let mut cl = c.clone().ready().await.unwrap();
        let (resp, mut send) = cl.send_request(req, false).unwrap();
        let up = pattern(100_000, 3);
        send_body(&mut send, &up).await;
        let a = read_answer(resp).await;
        assert_eq!(a.headers.get("x-framing").unwrap(), "length");
        assert!(a.body == up);
    });
}

/// Request trailers go to the server after a chunked body; response
/// trailers from a chunked response become HTTP/2 trailers.
#[test]
fn trailers_both_ways_grpc_status_survives() {
    let ip = test_ip();
    let echo = echo_origin(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server e1 {echo}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/chunked", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body, b"hello world");
        let t = a.trailers.expect("response trailers");
        assert_eq!(t.get("grpc-status").unwrap(), "0");
        assert_eq!(t.get("grpc-message").unwrap(), "fine");
        assert!(a.headers.get("transfer-encoding").is_none());
        // Request trailers.
        let req = http::Request::builder()
            .method("POST")
            .uri("http://test/up")
            .body(())
            .unwrap();
        let mut cl = c.clone().ready().await.unwrap();
        let (resp, mut send) = cl.send_request(req, false).unwrap();
        send.send_data(Bytes::from_static(b"abc"), false).unwrap();
        let mut t = http::HeaderMap::new();
        t.insert("x-checksum", "42".parse().unwrap());
        send.send_trailers(t).unwrap();
        let a = read_answer(resp).await;
        assert_eq!(a.body, b"abc");
        assert_eq!(a.headers.get("x-framing").unwrap(), "chunked");
        assert_eq!(a.headers.get("x-trailers").unwrap(), "x-checksum: 42");
    });
}

/// A clear bind without `proto`: HTTP/2 by its preface, HTTP/1 as ever.
#[test]
fn preface_detection_on_clear_bind() {
    let ip = test_ip();
    let (_t, term_addr) = term(ip, "pd");
    let bind = free_addr(ip);
    let cfg = h2_cfg(&bind.to_string(), &format!("    server s1 {term_addr}"), "");
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/?s=10", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body.len(), 10);
    });
    let r = get(bind, "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body_str(), "pd\n");
    // curl with prior knowledge, where curl has HTTP/2.
    let out = std::process::Command::new("curl")
        .args(["-s", "--http2-prior-knowledge", "-w", "##%{http_version}"])
        .arg(format!("http://{bind}/?s=5"))
        .output()
        .expect("curl");
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.ends_with("##2"), "{out}");
}

/// 100 concurrent streams on one connection, each answered right.
#[test]
fn hundred_concurrent_streams_one_connection() {
    let ip = test_ip();
    let (_t, term_addr) = term(ip, "cc");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {term_addr}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let mut pending = Vec::new();
        for i in 0..100usize {
            let req = http::Request::builder()
                .uri(format!("http://test/?s={}&t=20", 1000 + i))
                .body(())
                .unwrap();
            let mut cl = c.clone().ready().await.unwrap();
            let (resp, _) = cl.send_request(req, true).unwrap();
            // Read every stream at once, as a real client does: reading
            // them one by one would leave the connection window full of
            // the bodies of streams not read yet (a flow-control deadlock
            // on the client's side).
            pending.push((i, tokio::spawn(read_answer(resp))));
        }
        for (i, reading) in pending {
            let a = reading.await.expect("reader task");
            assert_eq!(a.status, 200);
            assert_eq!(a.body.len(), 1000 + i);
        }
    });
}

fn syslog(ip: std::net::IpAddr) -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// Logs show `HTTP/2.0`; `HTTP_2.0` and `req.ver` work in rules, and
/// `http-request return` answers on the stream.
#[test]
fn logs_acl_and_rules_see_http2() {
    let ip = test_ip();
    let (_t, term_addr) = term(ip, "lg");
    let (sink, sink_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {term_addr}"),
        &format!(
            "    log {sink_addr} local0\n    option httplog\n\
    http-request return status 203 content-type text/plain string denied-h1 if !HTTP_2.0\n\
    http-request return status 202 content-type text/plain string local if {{ path /local }}\n\
    http-response set-header x-ver %[req.ver]\n"
        ),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/x?s=3", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers.get("x-ver").unwrap(), "2.0");
        let a = exchange(&c, "GET", "/local", &[]).await;
        assert_eq!(a.status, 202);
        assert_eq!(a.body, b"local");
        // (CONNECT and extended CONNECT: tests/http2_tunnels.rs.)
        let a = exchange(&c, "GET", "/x?s=2", &[]).await;
        assert_eq!(a.status, 200);
    });
    let mut lines = Vec::new();
    let mut buf = [0u8; 8192];
    while lines.len() < 3 {
        let n = sink.recv(&mut buf).expect("a log line");
        lines.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert!(
        lines.iter().any(|l| l.contains("fe bk/s1 ")
            && l.contains(" 200 ")
            && l.contains("\"GET /x?s=3 HTTP/2.0\"")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" 202 ") && l.contains("\"GET /local HTTP/2.0\"")),
        "{lines:?}"
    );
}

/// The frame types in `bytes` (a server's output), in order.
fn frame_types(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 9 {
        let len = (usize::from(rest[0]) << 16) | (usize::from(rest[1]) << 8) | usize::from(rest[2]);
        if rest.len() < 9 + len {
            break;
        }
        out.push((rest[3], rest[9..9 + len].to_vec()));
        rest = &rest[9 + len..];
    }
    out
}

/// `bind ... ssl crt ... alpn h2,http/1.1`: curl gets HTTP/2 by ALPN,
/// and HTTP/1.1 when it asks for it.
#[test]
fn alpn_h2_over_tls_with_curl() {
    let ip = test_ip();
    let (_t, o) = term(ip, "tl");
    let bind = free_addr(ip);
    let pki = tls::Pki::new("h2alpn");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "h2.example");
    let cfg = h2_cfg(
        &format!("{bind} ssl crt {} alpn h2,http/1.1", pem.display()),
        &format!("    server s1 {o}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let res = tls::resolve("h2.example", bind);
    let url = tls::https_url("h2.example", bind, "/?s=70000");
    let cacert = ca.cert.display().to_string();
    for (flag, want) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let r = tls::curl(&[
            flag,
            "--cacert",
            &cacert,
            "--resolve",
            &res,
            &url,
            "-w",
            "##%{http_code} %{http_version}",
        ]);
        assert!(r.ok(), "{r:?}");
        let (body, w) = r.stdout.rsplit_once("##").unwrap();
        assert_eq!(w, format!("200 {want}"), "{r:?}");
        assert_eq!(body.len(), 70000);
    }
}

/// With no stream open, `timeout http-request` (before any request) and
/// `timeout http-keep-alive` (after one) close the connection with
/// GOAWAY NO_ERROR.
#[test]
fn idle_timeouts_close_with_goaway() {
    let ip = test_ip();
    let (_t, o) = term(ip, "to");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "    timeout http-request 300ms\n    timeout http-keep-alive 300ms\n",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // Before any request: the preface and SETTINGS, then nothing.
    let mut s = connect(bind);
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .unwrap();
    let start = std::time::Instant::now();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(start.elapsed() >= std::time::Duration::from_millis(250));
    let frames = frame_types(&got);
    let goaway = frames.iter().find(|(t, _)| *t == 7).expect("GOAWAY");
    assert_eq!(&goaway.1[4..8], &[0, 0, 0, 0], "NO_ERROR");
    // After a request: the connection ends gracefully on its own.
    run(async {
        let tcp = tokio::net::TcpStream::connect(bind).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(conn.await.map_err(|e| e.to_string()));
        });
        let a = exchange(&client, "GET", "/", &[]).await;
        assert_eq!(a.status, 200);
        let r = rx.await.unwrap();
        assert!(r.is_ok(), "{r:?}");
    });
}

/// A soft stop (reload) finishes the streams in flight, sends GOAWAY,
/// and the process exits once they are done.
#[test]
fn soft_stop_drains_streams_with_goaway() {
    let ip = test_ip();
    let (t, o) = term(ip, "ss");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "",
    );
    let mut p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let req = http::Request::builder()
            .uri("http://test/?t=1000&s=7")
            .body(())
            .unwrap();
        let mut cl = c.clone().ready().await.unwrap();
        let (slow, _) = cl.send_request(req, true).unwrap();
        let slow = tokio::spawn(read_answer(slow));
        let end = std::time::Instant::now() + DEADLINE;
        while t.requests() < 1 {
            assert!(std::time::Instant::now() < end, "request at the origin");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        p.signal("USR1");
        let a = slow.await.unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(a.body.len(), 7);
        // No new stream is served after the GOAWAY.
        let refused = match c.clone().ready().await {
            Err(_) => true,
            Ok(mut cl) => {
                let req = http::Request::builder()
                    .uri("http://test/")
                    .body(())
                    .unwrap();
                match cl.send_request(req, true) {
                    Err(_) => true,
                    Ok((r, _)) => r.await.is_err(),
                }
            }
        };
        assert!(refused);
    });
    assert!(p.wait_exit().success());
}

/// Idle HTTP/2 connections hold no I/O buffer (`show pools`).
#[test]
fn idle_h2_connections_hold_no_buffers() {
    let ip = test_ip();
    let (_t, o) = term(ip, "id");
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fl-h2-idle-{}.sock", std::process::id()));
    let cfg = format!(
        "global\n    nbthread 1\n    stats socket {} level admin\n{}",
        sock.display(),
        h2_cfg(
            &format!("{bind} proto h2"),
            &format!("    server s1 {o}"),
            ""
        )
        .trim_start_matches("global\n    nbthread 1\n")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("admin socket", || sock.exists());
    run(async {
        let mut clients = Vec::new();
        for _ in 0..20 {
            let c = h2c(bind).await;
            let a = exchange(&c, "GET", "/?s=20000", &[]).await;
            assert_eq!(a.body.len(), 20000);
            clients.push(c);
        }
        let end = std::time::Instant::now() + DEADLINE;
        loop {
            let pools = ask(&sock, "show pools");
            if tls::pool_used(&pools, "buffer").is_some_and(|u| u <= 2) {
                break;
            }
            assert!(std::time::Instant::now() < end, "{pools}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // The connections are still usable.
        let a = exchange(&clients[0], "GET", "/", &[]).await;
        assert_eq!(a.status, 200);
    });
    let _ = std::fs::remove_file(&sock);
}

/// A client that never opens its stream window cannot make the proxy
/// buffer the response: with a 64 MiB response stalled, the proxy's
/// peak memory stays far below the body's size, and another client is
/// served meanwhile.
#[test]
fn zero_window_client_is_backpressure() {
    let ip = test_ip();
    let (t, o) = term(ip, "zw");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "",
    );
    let p = Proxy::start(&cfg, &[bind]);
    let before = p.peak_rss_kib();
    run(async {
        let tcp = tokio::net::TcpStream::connect(bind).await.unwrap();
        let (client, conn) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let req = http::Request::builder()
            .uri("http://test/?s=64m")
            .body(())
            .unwrap();
        let mut cl = client.ready().await.unwrap();
        let (resp, _) = cl.send_request(req, true).unwrap();
        let resp = resp.await.expect("response head");
        assert_eq!(resp.status(), 200);
        // The origin got the request and is blocked on its socket.
        let end = std::time::Instant::now() + DEADLINE;
        while t.requests() < 1 {
            assert!(std::time::Instant::now() < end);
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // Another client meanwhile.
        let other = h2c(bind).await;
        let a = exchange(&other, "GET", "/?s=1000", &[]).await;
        assert_eq!(a.body.len(), 1000);
        // Backpressure engaged: the proxy stopped reading its server
        // connection, whose receive queue in the kernel holds bytes and no
        // longer moves (unchanged over 5 reads 20 ms apart). How full the
        // queue gets depends on the kernel's buffer autotuning (68 KiB to
        // 1.6 MiB seen here, with `tcp_rmem`'s default at 85 or 128 KiB), so
        // no fixed size is asked for; a proxy that kept reading would move
        // it, or empty it once the origin had sent the whole body.
        let end = std::time::Instant::now() + DEADLINE;
        let (mut last, mut same) = (0, 0);
        while same < 5 {
            assert!(
                std::time::Instant::now() < end,
                "the proxy kept reading (queue {last} bytes)"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let q = recv_queue_from(o);
            same = if q > 0 && q == last { same + 1 } else { 0 };
            last = q;
        }
        drop(resp);
    });
    let grew = p.peak_rss_kib().saturating_sub(before);
    assert!(
        grew < 16 * 1024,
        "proxy grew {grew} KiB for a stalled 64 MiB body"
    );
}

/// The largest receive queue (bytes the kernel holds, not yet read) of
/// the TCP sockets connected to `peer`, from `/proc/net/tcp`.
fn recv_queue_from(peer: SocketAddr) -> u64 {
    let std::net::IpAddr::V4(ip) = peer.ip() else {
        return 0;
    };
    let o = ip.octets();
    let want = format!(
        "{:02X}{:02X}{:02X}{:02X}:{:04X}",
        o[3],
        o[2],
        o[1],
        o[0],
        peer.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&want.as_str())).then(|| {
                let rx = f.get(4)?.split(':').nth(1)?;
                u64::from_str_radix(rx, 16).ok()
            })?
        })
        .max()
        .unwrap_or(0)
}

/// One raw HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The client preface and an empty SETTINGS.
fn preface() -> Vec<u8> {
    let mut v = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    v.extend(frame(4, 0, 0, &[]));
    v
}

/// Sends `bytes` raw, then reads until the proxy closes; returns the
/// error codes of the GOAWAY frames it sent.
fn goaway_codes(bind: SocketAddr, bytes: &[u8]) -> Vec<u32> {
    let mut s = connect(bind);
    let _ = s.write_all(bytes);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    frame_types(&got)
        .into_iter()
        .filter(|(t, p)| *t == 7 && p.len() >= 8)
        .map(|(_, p)| u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
        .collect()
}

/// Rapid reset (CVE-2023-44487) and a CONTINUATION flood each end with
/// GOAWAY ENHANCE_YOUR_CALM, and another client is served meanwhile.
#[test]
fn rapid_reset_and_continuation_flood_are_refused() {
    let ip = test_ip();
    let (_t, o) = term(ip, "rr");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // :method GET, :scheme http, :path /?t=2000, :authority x (literals
    // without indexing).
    let mut block = vec![0x82, 0x86, 0x04, 8];
    block.extend_from_slice(b"/?t=2000");
    block.extend_from_slice(&[0x01, 0x01, b'x']);
    let mut flood = preface();
    for i in 0..400u32 {
        let id = 2 * i + 1;
        flood.extend(frame(1, 0x5, id, &block));
        flood.extend(frame(3, 0, id, &8u32.to_be_bytes()));
    }
    let codes = goaway_codes(bind, &flood);
    assert_eq!(codes.last(), Some(&0xb), "{codes:?}");
    // CONTINUATION frames past the header block limit.
    let mut cont = preface();
    cont.extend(frame(1, 0x1, 1, &block));
    for _ in 0..10 {
        cont.extend(frame(9, 0, 1, &[0u8; 4000]));
    }
    let codes = goaway_codes(bind, &cont);
    assert_eq!(codes.last(), Some(&0xb), "{codes:?}");
    // Still serving.
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/?s=10", &[]).await;
        assert_eq!(a.body.len(), 10);
    });
}

/// A soft stop closes an idle connection whose client never answers the
/// shutdown PING within a short grace (not `timeout client`), with
/// GOAWAY NO_ERROR, and the process exits.
#[test]
fn soft_stop_closes_silent_idle_connections() {
    let ip = test_ip();
    let (_t, o) = term(ip, "sq");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "    timeout client 60s\n",
    );
    let mut p = Proxy::start(&cfg, &[bind]);
    let mut s = connect(bind);
    s.write_all(&preface()).unwrap();
    // The server's SETTINGS arrive: the connection is up and idle.
    let mut first = [0u8; 9];
    s.read_exact(&mut first).unwrap();
    assert_eq!(first[3], 4, "SETTINGS first");
    let len = (usize::from(first[0]) << 16) | (usize::from(first[1]) << 8) | usize::from(first[2]);
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    let start = std::time::Instant::now();
    p.signal("USR1");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(8),
        "closed after {:?}",
        start.elapsed()
    );
    let frames = frame_types(&got);
    let codes: Vec<u32> = frames
        .iter()
        .filter(|(t, p)| *t == 7 && p.len() >= 8)
        .map(|(_, p)| u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
        .collect();
    assert!(
        !codes.is_empty() && codes.iter().all(|&c| c == 0),
        "{codes:?}"
    );
    assert!(frames.iter().any(|(t, _)| *t == 6), "the shutdown PING");
    assert!(p.wait_exit().success());
}

/// Streams of a connection that goes away are logged as client aborts.
#[test]
fn streams_of_a_closed_connection_are_logged() {
    let ip = test_ip();
    let (t, o) = term(ip, "cl");
    let (sink, sink_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        &format!("    log {sink_addr} local0\n    option httplog\n"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let tcp = tokio::net::TcpStream::connect(bind).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        let req = http::Request::builder()
            .uri("http://test/?t=3000")
            .body(())
            .unwrap();
        let mut cl = client.ready().await.unwrap();
        let (_resp, _) = cl.send_request(req, true).unwrap();
        let end = std::time::Instant::now() + DEADLINE;
        while t.requests() < 1 {
            assert!(std::time::Instant::now() < end);
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // The connection goes away with the stream in flight.
        task.abort();
    });
    let mut buf = [0u8; 8192];
    let n = sink.recv(&mut buf).expect("a log line");
    let line = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(line.contains("\"GET /?t=3000 HTTP/2.0\""), "{line}");
    assert!(line.contains(" CD"), "{line}");
}
