//! HTTP/2 toward servers (`server ... proto h2`), against the real
//! binary and an HTTP/2 origin on the `h2` crate: h2 → h2 and h1 → h2
//! with bodies and trailers, and `TE: trailers` for gRPC.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use bytes::Bytes;
use std::io::{BufReader, Write};
use std::net::SocketAddr;

/// An HTTP/2 (h2c) origin built on the `h2` crate, on its own thread:
/// it answers each request with its body echoed, `x-path`, `x-method`
/// and `x-te` (the request's `te`, or `none`), then trailers
/// `grpc-status: 0`. Returns its address and
/// a count of the connections it accepted.
fn h2_origin(ip: std::net::IpAddr) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    let l = std::net::TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let conns = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = conns.clone();
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
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(s).await else {
                        return;
                    };
                    while let Some(Ok((req, mut respond))) = conn.accept().await {
                        tokio::spawn(async move {
                            let path = req.uri().path().to_string();
                            let method = req.method().to_string();
                            let te = req
                                .headers()
                                .get("te")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("none")
                                .to_string();
                            let mut body = req.into_body();
                            let mut got = Vec::new();
                            while let Some(Ok(c)) = body.data().await {
                                let _ = body.flow_control().release_capacity(c.len());
                                got.extend_from_slice(&c);
                            }
                            let resp = http::Response::builder()
                                .status(200)
                                .header("x-path", path)
                                .header("x-method", method)
                                .header("x-te", te)
                                .body(())
                                .unwrap();
                            let Ok(mut send) = respond.send_response(resp, false) else {
                                return;
                            };
                            send_body_open(&mut send, &got).await;
                            let mut t = http::HeaderMap::new();
                            t.insert("grpc-status", "0".parse().unwrap());
                            let _ = send.send_trailers(t);
                        });
                    }
                });
            }
        });
    });
    (addr, conns)
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
/// trailers, one server connection per request.
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
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 2);
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
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 4);
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
