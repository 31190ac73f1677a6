//! HTTP/2 toward servers (`server ... proto h2`, `ssl alpn h2`), against
//! the real binary and an HTTP/2 origin on the `h2` crate: h2 → h2 and
//! h1 → h2 with bodies and trailers, `TE: trailers` for gRPC, and the
//! multiplexed server connections: sharing, `max-reuse`, the server's
//! concurrency limit, its GOAWAY, `http-reuse never`, TLS with ALPN.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use bytes::Bytes;
use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// How the test origin behaves.
#[derive(Clone, Copy, Default)]
struct OriginOpts {
    /// SETTINGS_MAX_CONCURRENT_STREAMS it advertises (default: the `h2`
    /// crate's, unlimited).
    max_streams: Option<u32>,
    /// Starts a graceful GOAWAY on a connection once it accepted this many
    /// streams.
    goaway_after: Option<u32>,
    /// Waits this long before answering (so that streams overlap).
    delay_ms: u64,
}

/// What the origin saw.
#[derive(Clone, Default)]
struct Seen {
    /// TCP connections accepted.
    conns: Arc<AtomicU32>,
    /// Requests (streams) accepted.
    requests: Arc<AtomicU32>,
    /// The most streams open at once on one connection.
    max_streams: Arc<AtomicU32>,
    /// Connections ended.
    closed: Arc<AtomicU32>,
}

/// An HTTP/2 (h2c) origin built on the `h2` crate, on its own thread:
/// it answers each request with its body echoed, `x-path`, `x-method`
/// and `x-te` (the request's `te`, or `none`), then trailers
/// `grpc-status: 0`.
fn origin(ip: std::net::IpAddr, opts: OriginOpts) -> (SocketAddr, Seen) {
    let l = std::net::TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let seen = Seen::default();
    let s2 = seen.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            loop {
                let Ok((s, _)) = l.accept().await else {
                    continue;
                };
                s2.conns.fetch_add(1, SeqCst);
                let seen = s2.clone();
                tokio::spawn(async move {
                    serve_conn(s, opts, seen.clone()).await;
                    seen.closed.fetch_add(1, SeqCst);
                });
            }
        });
    });
    (addr, seen)
}

/// The clear origin with default options: its address and connection
/// count.
fn h2_origin(ip: std::net::IpAddr) -> (SocketAddr, Arc<AtomicU32>) {
    let (addr, seen) = origin(ip, OriginOpts::default());
    (addr, seen.conns)
}

/// One origin connection: streams are answered concurrently.
async fn serve_conn(s: tokio::net::TcpStream, opts: OriginOpts, seen: Seen) {
    let mut b = h2::server::Builder::new();
    if let Some(n) = opts.max_streams {
        b.max_concurrent_streams(n);
    }
    let Ok(mut conn) = b.handshake::<_, Bytes>(s).await else {
        return;
    };
    let open = Arc::new(AtomicU32::new(0));
    let mut accepted = 0;
    while let Some(Ok((req, respond))) = conn.accept().await {
        accepted += 1;
        seen.requests.fetch_add(1, SeqCst);
        let now = open.fetch_add(1, SeqCst) + 1;
        seen.max_streams.fetch_max(now, SeqCst);
        if opts.goaway_after == Some(accepted) {
            conn.graceful_shutdown();
        }
        let open = open.clone();
        tokio::spawn(async move {
            answer(req, respond, opts.delay_ms).await;
            open.fetch_sub(1, SeqCst);
        });
    }
}

/// Answers one request: the echo, then trailers.
async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    delay_ms: u64,
) {
    let path = req.uri().path().to_string();
    let method = req.method().to_string();
    let te = req
        .headers()
        .get("te")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_string();
    let ver = req.headers().get("x-ver").cloned();
    let mut body = req.into_body();
    let mut got = Vec::new();
    while let Some(Ok(c)) = body.data().await {
        let _ = body.flow_control().release_capacity(c.len());
        got.extend_from_slice(&c);
    }
    if delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    }
    let resp = http::Response::builder()
        .status(200)
        .header("x-path", path)
        .header("x-method", method)
        .header("x-te", te)
        .body(())
        .unwrap();
    let mut resp = resp;
    if let Some(v) = ver {
        resp.headers_mut().insert("x-ver", v);
    }
    let Ok(mut send) = respond.send_response(resp, false) else {
        return;
    };
    send_body_open(&mut send, &got).await;
    let mut t = http::HeaderMap::new();
    t.insert("grpc-status", "0".parse().unwrap());
    let _ = send.send_trailers(t);
}

/// Sends `body` within the windows without ending the stream.
async fn send_body_open(send: &mut h2::SendStream<Bytes>, body: &[u8]) {
    let mut rest = Bytes::copy_from_slice(body);
    while !rest.is_empty() {
        send.reserve_capacity(rest.len().min(64 * 1024));
        let Some(Ok(cap)) = std::future::poll_fn(|cx| send.poll_capacity(cx)).await else {
            return;
        };
        let chunk = rest.split_to(cap.min(rest.len()));
        if send.send_data(chunk, false).is_err() {
            return;
        }
    }
}

/// `server ... proto h2`: h2 → h2 with a 300 KiB body both ways and the
/// trailers; the second request goes on the first one's connection.
#[test]
fn h2_to_h2_server_proto_h2() {
    let ip = test_ip();
    let (origin, conns) = h2_origin(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/hello", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers.get("x-path").unwrap(), "/hello");
        assert_eq!(a.headers.get("x-method").unwrap(), "GET");
        assert!(a.body.is_empty());
        assert_eq!(a.trailers.unwrap().get("grpc-status").unwrap(), "0");
        let up = pattern(300 * 1024, 9);
        let a = exchange(&c, "POST", "/echo", &up).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers.get("x-method").unwrap(), "POST");
        assert!(a.body == up, "300 KiB echo differs");
        assert_eq!(a.trailers.unwrap().get("grpc-status").unwrap(), "0");
    });
    assert_eq!(conns.load(SeqCst), 1, "one multiplexed server connection");
}

/// `server ... proto h2` behind an HTTP/1 client (h1 → h2): bodies with
/// content-length and chunked (with trailers) go up as DATA; the
/// response comes back chunked with the server's trailers (HTTP/1.1),
/// close-delimited for HTTP/1.0; keep-alive works across requests.
#[test]
fn http1_client_to_h2_server() {
    let ip = test_ip();
    let (origin, conns) = h2_origin(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &bind.to_string(),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // Two requests on one keep-alive connection.
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    let a = read_response(&mut r, false).expect("first response");
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-path"), Some("/one"));
    assert_eq!(a.header("x-method"), Some("POST"));
    assert_eq!(a.header("transfer-encoding"), Some("chunked"));
    assert_eq!(a.body, b"hello");
    let up = pattern(200_000, 5);
    let mut req = b"PUT /two HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for part in up.chunks(70_000) {
        req.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        req.extend_from_slice(part);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\nx-sum: 1\r\n\r\n");
    w.write_all(&req).unwrap();
    let a = read_response(&mut r, false).expect("second response");
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-method"), Some("PUT"));
    assert!(a.body == up, "200 kB echo differs");
    // The trailers, as HTTP/1.1 chunked trailers.
    let mut s = connect(bind);
    s.write_all(b"GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let raw = read_all(&mut s);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with("0\r\ngrpc-status: 0\r\n\r\n"), "{raw:?}");
    // HTTP/1.0: close-delimited.
    let mut s = connect(bind);
    s.write_all(b"GET /old HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let raw = read_all(&mut s);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(
        !raw.to_ascii_lowercase().contains("transfer-encoding"),
        "{raw}"
    );
    assert!(raw.contains("x-path: /old"), "{raw}");
    // `http-reuse safe`: each client's first request opens its own
    // connection (3 clients); the keep-alive client's second request
    // shared the first one's.
    assert_eq!(conns.load(SeqCst), 3);
}

/// `TE: trailers` is hop-by-hop in HTTP/1, but HTTP/2 allows it and gRPC
/// servers need it: an HTTP/1 client's `TE` listing `trailers` reaches a
/// `proto h2` server as `te: trailers`; other TE values do not.
#[test]
fn te_trailers_reaches_h2_servers() {
    let ip = test_ip();
    let (origin, _) = h2_origin(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &bind.to_string(),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for (te, want) in [
        (Some("trailers"), "trailers"),
        (Some("trailers, deflate;q=0.5"), "trailers"),
        (Some("deflate"), "none"),
        (None, "none"),
    ] {
        let mut s = connect(bind);
        let line = te.map(|v| format!("TE: {v}\r\n")).unwrap_or_default();
        s.write_all(
            format!("GET /te HTTP/1.1\r\nHost: x\r\n{line}Connection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let raw = read_all(&mut s);
        assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
        assert!(
            raw.contains(&format!("x-te: {want}\r\n")),
            "TE {te:?}: {raw}"
        );
    }
    // From an HTTP/2 client too.
    let h2bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{h2bind} proto h2"),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p2 = Proxy::start(&cfg, &[h2bind]);
    run(async {
        let c = h2c(h2bind).await;
        let req = http::Request::builder()
            .method("GET")
            .uri("http://test/te")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let mut c = c.ready().await.expect("ready");
        let (resp, _) = c.send_request(req, true).expect("send_request");
        let a = read_answer(resp).await;
        assert_eq!(a.headers.get("x-te").unwrap(), "trailers");
    });
}

/// Sends `n` requests at once on one HTTP/2 client, each with its own
/// body, and checks every echo byte for byte.
async fn h2_burst(bind: SocketAddr, n: usize, seed: u8) {
    let c = h2c(bind).await;
    let mut tasks = Vec::new();
    for i in 0..n {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let body = pattern(1 + i * 997 % 40_000, seed.wrapping_add(i as u8));
            let path = format!("/b{seed}/{i}");
            let a = exchange(&c, "POST", &path, &body).await;
            assert_eq!(a.status, 200, "{path}");
            assert_eq!(a.headers.get("x-path").unwrap(), path.as_str());
            assert!(a.body == body, "{path}: echo differs");
            assert_eq!(a.trailers.unwrap().get("grpc-status").unwrap(), "0");
        }));
    }
    for t in tasks {
        t.await.expect("stream task");
    }
}

/// `n` keep-alive requests from one HTTP/1.1 client, bodies checked.
fn h1_keepalive(bind: SocketAddr, n: usize, seed: u8) {
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for i in 0..n {
        let body = pattern(100 + i * 1234, seed.wrapping_add(i as u8));
        let path = format!("/k{seed}/{i}");
        w.write_all(
            format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
        w.write_all(&body).unwrap();
        let a = read_response(&mut r, false).unwrap_or_else(|| panic!("{path}: no response"));
        assert_eq!(a.status, 200, "{path}");
        assert_eq!(a.header("x-path"), Some(path.as_str()));
        assert!(a.body == body, "{path}: echo differs");
    }
}

/// Many concurrent requests from several HTTP/2 and HTTP/1 clients share
/// a few multiplexed server connections; every response is byte-exact.
#[test]
fn many_clients_share_few_server_connections() {
    let ip = test_ip();
    let (origin, seen) = origin(
        ip,
        OriginOpts {
            delay_ms: 5,
            ..Default::default()
        },
    );
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &bind.to_string(),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let h1: Vec<_> = (0..3)
        .map(|k| std::thread::spawn(move || h1_keepalive(bind, 10, 100 + k)))
        .collect();
    run(async {
        let bursts: Vec<_> = (0..3)
            .map(|k| tokio::spawn(h2_burst(bind, 30, k * 40)))
            .collect();
        for b in bursts {
            b.await.expect("burst");
        }
    });
    for t in h1 {
        t.join().expect("HTTP/1 client");
    }
    let (conns, requests) = (seen.conns.load(SeqCst), seen.requests.load(SeqCst));
    let max = seen.max_streams.load(SeqCst);
    eprintln!(
        "{conns} server connections for {requests} requests, at most {max} streams at once on one"
    );
    assert_eq!(requests, 120);
    assert!(
        conns <= 8,
        "{conns} server connections for {requests} requests"
    );
    assert!(
        seen.max_streams.load(SeqCst) >= 2,
        "streams were multiplexed"
    );
}

/// `max-reuse 4`: a connection carries 5 streams, then is retired.
#[test]
fn max_reuse_retires_connections() {
    let ip = test_ip();
    let (origin, seen) = origin(ip, OriginOpts::default());
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fairlead-h2up-{}-{ip}.sock", std::process::id()));
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {origin} proto h2 max-reuse 4"),
        "",
    )
    .replace(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        for i in 0..20 {
            let a = exchange(&c, "GET", &format!("/r{i}"), &[]).await;
            assert_eq!(a.status, 200);
        }
    });
    assert_eq!(seen.requests.load(SeqCst), 20);
    assert_eq!(seen.conns.load(SeqCst), 4, "20 streams, 5 per connection");
    // Each stream placed on an existing connection counts as a reuse.
    let csv = ask(&sock, "show stat");
    let field = |f| common::tls::stat_field(&csv, "bk", "s1", f);
    assert_eq!(field("reuse").as_deref(), Some("16"), "{csv}");
    assert_eq!(field("connect").as_deref(), Some("4"), "{csv}");
    assert_eq!(field("stot").as_deref(), Some("20"), "{csv}");
    let _ = std::fs::remove_file(&sock);
}

/// A server advertising SETTINGS_MAX_CONCURRENT_STREAMS 2 never gets a
/// third stream on a connection: more connections are opened instead.
#[test]
fn server_concurrency_limit_is_respected() {
    let ip = test_ip();
    let (origin, seen) = origin(
        ip,
        OriginOpts {
            max_streams: Some(2),
            delay_ms: 30,
            ..Default::default()
        },
    );
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        // Warm up: the connection learns the limit.
        let c = h2c(bind).await;
        assert_eq!(exchange(&c, "GET", "/warm", &[]).await.status, 200);
        h2_burst(bind, 12, 7).await;
    });
    assert_eq!(seen.requests.load(SeqCst), 13);
    assert_eq!(seen.max_streams.load(SeqCst), 2);
    assert!(seen.conns.load(SeqCst) >= 2, "the excess went elsewhere");
}

/// A server's graceful GOAWAY after every 4 streams loses no request:
/// those it had not accepted are opened again on another connection.
#[test]
fn server_goaway_loses_no_request() {
    let ip = test_ip();
    let (origin, seen) = origin(
        ip,
        OriginOpts {
            goaway_after: Some(4),
            delay_ms: 5,
            ..Default::default()
        },
    );
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &bind.to_string(),
        &format!("    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        for k in 0..3 {
            h2_burst(bind, 10, 60 + k).await;
        }
    });
    let h1 = std::thread::spawn(move || h1_keepalive(bind, 6, 90)).join();
    assert!(h1.is_ok(), "HTTP/1 client failed: {}", _p.stderr());
    assert_eq!(seen.requests.load(SeqCst), 36);
    assert!(seen.conns.load(SeqCst) >= 2, "GOAWAY after 4 streams");
}

/// `http-reuse never`: every request has its own server connection.
#[test]
fn http_reuse_never_gives_one_connection_per_request() {
    let ip = test_ip();
    let (origin, seen) = origin(ip, OriginOpts::default());
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &bind.to_string(),
        &format!("    http-reuse never\n    server s1 {origin} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    h1_keepalive(bind, 3, 1);
    run(async {
        let c = h2c(bind).await;
        for i in 0..4 {
            assert_eq!(
                exchange(&c, "GET", &format!("/n{i}"), &[]).await.status,
                200
            );
        }
    });
    assert_eq!(seen.requests.load(SeqCst), 7);
    assert_eq!(seen.conns.load(SeqCst), 7);
}

/// `server ... ssl alpn h2`: TLS to the server, then HTTP/2 on it
/// (multiplexed); with `alpn h2,http/1.1` the server's choice decides,
/// and a server that picks http/1.1 gets HTTP/1.1. The servers are
/// Fairlead TLS frontends that pass on which version they received (as
/// `x-ver`, which the origin echoes).
#[test]
fn tls_alpn_h2_servers() {
    let ip = test_ip();
    let (origin, _) = origin(ip, OriginOpts::default());
    let pki = common::tls::Pki::new("h2up");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "origin", "origin.example");
    let pem = pem.to_str().unwrap();
    let [tls_h2, tls_h1, b_h2, b_mixed, b_h1] = [(); 5].map(|_| free_addr(ip));
    let cfg = format!(
        "global\n    nbthread 1\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend inner_h2\n    bind {tls_h2} ssl crt {pem} alpn h2,http/1.1\n\
    http-request set-header x-ver %[req.ver]\n    default_backend origin\n\
frontend inner_h1\n    bind {tls_h1} ssl crt {pem} alpn http/1.1\n\
    http-request set-header x-ver %[req.ver]\n    default_backend origin\n\
backend origin\n    server o {origin} proto h2\n\
frontend a\n    bind {b_h2}\n    default_backend to_h2\n\
backend to_h2\n    server t {tls_h2} ssl verify none alpn h2\n\
frontend b\n    bind {b_mixed}\n    default_backend to_mixed\n\
backend to_mixed\n    server t {tls_h2} ssl verify none alpn h2,http/1.1\n\
frontend c\n    bind {b_h1}\n    default_backend to_h1\n\
backend to_h1\n    server t {tls_h1} ssl verify none alpn h2,http/1.1\n"
    );
    let _p = Proxy::start(&cfg, &[tls_h2, tls_h1, b_h2, b_mixed, b_h1]);
    for (bind, want) in [(b_h2, "2.0"), (b_mixed, "2.0"), (b_h1, "1.1")] {
        let mut s = connect(bind);
        s.write_all(b"GET /v HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let raw = read_all(&mut s);
        assert!(raw.starts_with("HTTP/1.1 200"), "{bind}: {raw}");
        assert!(
            raw.to_ascii_lowercase()
                .contains(&format!("x-ver: {want}\r\n")),
            "{bind} wants {want}: {raw}"
        );
        h1_keepalive(bind, 4, 3);
        run(async {
            let c = h2c(bind).await;
            let a = exchange(&c, "GET", "/v2", &[]).await;
            assert_eq!(a.headers.get("x-ver").unwrap(), want, "{bind}");
            h2_burst(bind, 20, 11).await;
        });
    }
}

/// `pool-max-conn 0` keeps no idle connection: each of these sequential
/// requests has a new one. `pool-purge-delay` closes an idle connection
/// once it elapsed.
#[test]
fn idle_server_connections_follow_pool_settings() {
    let ip = test_ip();
    let (origin2, seen2) = origin(ip, OriginOpts::default());
    let (origin, seen) = origin(ip, OriginOpts::default());
    let bind = free_addr(ip);
    let bind2 = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {origin} proto h2 pool-max-conn 0"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let cfg2 = h2_cfg(
        &format!("{bind2} proto h2"),
        &format!("    server s1 {origin2} proto h2 pool-purge-delay 300ms"),
        "",
    );
    let _p2 = Proxy::start(&cfg2, &[bind2]);
    run(async {
        let c = h2c(bind).await;
        for i in 0..5 {
            assert_eq!(
                exchange(&c, "GET", &format!("/p{i}"), &[]).await.status,
                200
            );
        }
        let c2 = h2c(bind2).await;
        assert_eq!(exchange(&c2, "GET", "/a", &[]).await.status, 200);
        assert_eq!(exchange(&c2, "GET", "/b", &[]).await.status, 200);
    });
    assert_eq!(seen.conns.load(SeqCst), 5, "no idle connection kept");
    assert_eq!(seen2.conns.load(SeqCst), 1, "shared while used");
    wait_until("the idle connection is purged", || {
        seen2.closed.load(SeqCst) == 1
    });
    run(async {
        let c2 = h2c(bind2).await;
        assert_eq!(exchange(&c2, "GET", "/c", &[]).await.status, 200);
    });
    assert_eq!(seen2.conns.load(SeqCst), 2, "a new one after the purge");
}

/// An HTTP/1 client's requests to a `proto h2` server get the same
/// response processing as on the HTTP/1 server path: `http-response` and
/// `http-after-response` rules, a response rule's deny, the persistence
/// cookie, and `stick store-response`.
#[test]
fn http1_client_to_h2_server_runs_the_response_side() {
    let ip = test_ip();
    let (origin, _) = h2_origin(ip);
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fairlead-h1h2-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n    http-after-response set-header x-after yes\n    default_backend b\n\
backend b\n    cookie SRV insert indirect nocache\n\
    stick-table type string len 32 size 1k expire 1m\n    stick store-response res.hdr(x-path)\n\
    http-response set-header x-rule %[res.hdr(x-method)]-%[status]\n\
    http-response deny deny_status 403 if {{ res.hdr(x-path) /denied }}\n\
    server s1 {origin} proto h2 cookie c1\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let r = request(
        bind,
        "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-rule"), Some("GET-200"));
    assert_eq!(r.header("x-after"), Some("yes"));
    assert_eq!(
        r.header("set-cookie").map(|c| c.starts_with("SRV=c1")),
        Some(true),
        "the persistence cookie is inserted"
    );
    let t = ask(&sock, "show table b");
    assert!(t.contains("key=/ok ") && t.contains("server_id=1"), "{t}");
    let r = request(
        bind,
        "GET /denied HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 403, "a response rule's deny replaces the answer");
    // As HAProxy: http-after-response also edits a response rule's reply.
    assert_eq!(r.header("x-after"), Some("yes"));
}
