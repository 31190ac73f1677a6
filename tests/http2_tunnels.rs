//! Tunnels over HTTP/2 streams through the real binary: WebSocket over
//! HTTP/2 (extended CONNECT, RFC 8441) to a real HTTP/1 WebSocket server
//! (Python's websockets, Debian's python3-websockets, installed by
//! `.ci/run`), and CONNECT to an HTTP/1 server. The client is the `h2`
//! crate.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use bytes::Bytes;
use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr};

const WS_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/echo.py");

/// The WebSocket echo server (python3-websockets).
fn ws_server(ip: IpAddr) -> PythonPeer {
    PythonPeer::start(
        WS_SERVER,
        &[],
        ip,
        "the Python WebSocket server (python3-websockets)",
    )
}

/// An h2c connection on which the server enabled extended CONNECT.
async fn h2c_ext(addr: SocketAddr) -> Client {
    let c = h2c(addr).await;
    let mut c = c.ready().await.unwrap();
    // SETTINGS arrive with the connection's first reads.
    for _ in 0..500 {
        if c.is_extended_connect_protocol_enabled() {
            return c;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        c = c.ready().await.unwrap();
    }
    panic!("SETTINGS_ENABLE_CONNECT_PROTOCOL never came");
}

/// A masked client text frame (RFC 6455 §5.2).
fn ws_text(msg: &str) -> Bytes {
    let mask = [0x12u8, 0x34, 0x56, 0x78];
    let mut f = vec![0x81, 0x80 | msg.len() as u8];
    f.extend_from_slice(&mask);
    f.extend(msg.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    Bytes::from(f)
}

/// Reads DATA until one whole unmasked server text frame is in; returns
/// its payload.
async fn ws_read(body: &mut h2::RecvStream, buf: &mut Vec<u8>) -> String {
    loop {
        if buf.len() >= 2 && buf.len() >= 2 + usize::from(buf[1] & 0x7f) {
            assert_eq!(buf[0], 0x81, "a final text frame");
            let n = usize::from(buf[1] & 0x7f);
            let text = String::from_utf8(buf[2..2 + n].to_vec()).unwrap();
            buf.drain(..2 + n);
            return text;
        }
        let chunk = body.data().await.expect("more data").expect("data");
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
}

/// WebSocket over HTTP/2: extended CONNECT becomes an HTTP/1.1 upgrade
/// with a key the real server accepts; its 101 becomes a 200, then
/// messages flow both ways; the stream is logged as `GET ... HTTP/2.0`.
#[test]
fn websocket_over_h2_to_http1_server() {
    let ip = test_ip();
    let ws = ws_server(ip);
    let bind = free_addr(ip);
    let p = Proxy::start(
        &h2_cfg(
            &format!("{bind} proto h2"),
            &format!("    timeout tunnel 1m\n    server w1 {}", ws.addr),
            "",
        ),
        &[bind],
    );
    run(async {
        let mut c = h2c_ext(bind).await;
        let mut req = http::Request::builder()
            .method("CONNECT")
            .uri(format!("http://{bind}/chat?room=1"))
            .header("sec-websocket-version", "13")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(h2::ext::Protocol::from_static("websocket"));
        let (resp, mut send) = c.send_request(req, false).unwrap();
        let resp = resp.await.unwrap();
        assert_eq!(resp.status(), 200, "{}", p.stderr());
        let mut body = resp.into_body();
        let mut buf = Vec::new();
        for msg in ["hello", "over", "h2"] {
            send.send_data(ws_text(msg), false).unwrap();
            assert_eq!(
                ws_read(&mut body, &mut buf).await,
                format!("echo:/chat?room=1:{msg}")
            );
        }
        // Other streams go on beside the tunnel.
        let mut c2 = c.clone().ready().await.unwrap();
        let plain = http::Request::builder()
            .uri(format!("http://{bind}/plain"))
            .body(())
            .unwrap();
        let (r2, _) = c2.send_request(plain, true).unwrap();
        // The WebSocket server answers plain HTTP with 426.
        assert_eq!(r2.await.unwrap().status(), 426);
    });
}

/// An origin acting as an HTTP/1 forward proxy: answers CONNECT with
/// `answer`; after a 200, echoes the tunnel's bytes upper-cased until
/// the proxy half-closes, then closes.
fn connect_origin(ip: IpAddr, answer: &'static str) -> SocketAddr {
    let (addr, _) = raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let head = read_head(&mut r).unwrap();
        let first = head.lines().next().unwrap().to_string();
        let reply = answer.replace("{line}", &first);
        w.write_all(reply.as_bytes()).unwrap();
        if !answer.starts_with("HTTP/1.1 200") {
            return;
        }
        let mut b = [0u8; 1024];
        loop {
            match r.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => w.write_all(&b[..n].to_ascii_uppercase()).unwrap(),
            }
        }
    });
    addr
}

/// CONNECT host:port goes to an HTTP/1 server as `CONNECT host:port
/// HTTP/1.1`; its 200 opens a tunnel both ways; the client's END_STREAM
/// half-closes it and the server's close ends the stream.
#[test]
fn connect_tunnel_to_http1_server() {
    let ip = test_ip();
    let o = connect_origin(
        ip,
        "HTTP/1.1 200 Connection established\r\nx-line: {line}\r\n\r\n",
    );
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &h2_cfg(
            &format!("{bind} proto h2"),
            &format!("    server o {o}"),
            "",
        ),
        &[bind],
    );
    run(async {
        let mut c = h2c(bind).await.ready().await.unwrap();
        let req = http::Request::builder()
            .method("CONNECT")
            .uri("example.com:443")
            .body(())
            .unwrap();
        let (resp, mut send) = c.send_request(req, false).unwrap();
        let resp = resp.await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-line"], "CONNECT example.com:443 HTTP/1.1");
        let mut body = resp.into_body();
        let mut got = Vec::new();
        send.send_data(Bytes::from_static(b"tunnel bytes"), false)
            .unwrap();
        while got.len() < 12 {
            let d = body.data().await.unwrap().unwrap();
            let _ = body.flow_control().release_capacity(d.len());
            got.extend_from_slice(&d);
        }
        assert_eq!(got, b"TUNNEL BYTES");
        send.send_data(Bytes::new(), true).unwrap();
        // The server closes after our half-close: END_STREAM, no more data.
        // (The h2 crate hands the empty END_STREAM frame over as data.)
        while let Some(d) = body.data().await {
            assert_eq!(d.unwrap(), Bytes::new());
        }
        assert!(body.is_end_stream());
    });
}

/// A CONNECT the server refuses is an ordinary response.
#[test]
fn refused_connect_is_relayed() {
    let ip = test_ip();
    let o = connect_origin(
        ip,
        "HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 4\r\n\r\nnope",
    );
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &h2_cfg(
            &format!("{bind} proto h2"),
            &format!("    server o {o}"),
            "",
        ),
        &[bind],
    );
    run(async {
        let mut c = h2c(bind).await.ready().await.unwrap();
        let req = http::Request::builder()
            .method("CONNECT")
            .uri("example.com:443")
            .body(())
            .unwrap();
        let (resp, _send) = c.send_request(req, false).unwrap();
        let a = read_answer(resp).await;
        assert_eq!((a.status, a.body), (407, b"nope".to_vec()));
    });
}

/// A server whose 101 carries the wrong `Sec-WebSocket-Accept` did not
/// understand the key: 502. A tunnel toward an HTTP/2 server: 501.
#[test]
fn bad_accept_is_502_and_h2_servers_get_501() {
    let ip = test_ip();
    let o = connect_origin(
        ip,
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: wrong\r\n\r\n",
    );
    let (h2srv, _) = raw_origin(ip, |s| {
        let _ = (&s).read_to_end(&mut Vec::new());
    });
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    use-server h if {{ path_beg /h2 }}\n    server o {o}\n    server h {h2srv} proto h2"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c_ext(bind).await;
        for (path, want) in [("/ws", 502), ("/h2", 501)] {
            let mut c = c.clone().ready().await.unwrap();
            let mut req = http::Request::builder()
                .method("CONNECT")
                .uri(format!("http://{bind}{path}"))
                .body(())
                .unwrap();
            req.extensions_mut()
                .insert(h2::ext::Protocol::from_static("websocket"));
            let (resp, _send) = c.send_request(req, false).unwrap();
            assert_eq!(resp.await.unwrap().status(), want, "{path}");
        }
    });
}

/// An HTTP/1 WebSocket upgrade toward an HTTP/2 server cannot become a
/// tunnel: 501, as for HTTP/2 clients (instead of a plain request the
/// server would answer without switching).
#[test]
fn http1_upgrade_to_h2_server_is_501() {
    let ip = test_ip();
    let (h2srv, _) = raw_origin(ip, |s| {
        let _ = (&s).read_to_end(&mut Vec::new());
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server h {h2srv} proto h2")),
        &[bind],
    );
    let r = request(
        bind,
        "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    assert_eq!(r.status, 501);
}
