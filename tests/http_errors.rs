//! Proxy-generated errors and request-smuggling defences, seen from a
//! real client.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::net::SocketAddr;

/// Sends raw bytes and returns the status of the first response, checking
/// that the proxy then closes the connection.
fn status_and_close(bind: SocketAddr, raw: &[u8]) -> u16 {
    let mut s = connect(bind);
    s.write_all(raw).unwrap();
    let all = read_all(&mut s);
    let status = all
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {all:?}"));
    status
}

#[test]
fn bad_requests_get_400_in_haproxy_style() {
    let (t, bind, _p) = one_origin("", "s1");
    let mut s = connect(bind);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        .unwrap();
    let all = read_all(&mut s);
    assert!(all.starts_with("HTTP/1.1 400 Bad request\r\n"), "{all}");
    assert!(all.contains("<h1>400 Bad request</h1>"), "{all}");
    assert!(all.to_ascii_lowercase().contains("connection: close"));
    assert_eq!(t.requests(), 0, "a bad request must not reach the server");
    for raw in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n continued\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    ] {
        assert_eq!(
            status_and_close(bind, raw),
            400,
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
    assert_eq!(t.requests(), 0);
}

#[test]
fn smuggling_vectors_are_rejected() {
    let (t, bind, _p) = one_origin("", "s1");
    let vectors: [&[u8]; 5] = [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    ];
    for v in vectors {
        assert_eq!(
            status_and_close(bind, v),
            400,
            "{}",
            String::from_utf8_lossy(v)
        );
    }
    assert_eq!(t.requests(), 0, "no smuggled request may reach the server");
    // Invalid chunk framing is caught while streaming: 400 and close.
    for v in [
        &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n",
    ] {
        assert_eq!(status_and_close(bind, v), 400, "{}", String::from_utf8_lossy(v));
    }
}

#[test]
fn oversized_heads_get_414_or_431() {
    let (_t, bind, _p) = one_origin("", "s1");
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(20000));
    assert_eq!(status_and_close(bind, long_uri.as_bytes()), 414);
    let many = format!(
        "GET / HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..400)
            .map(|i| format!("X-H{i}: {}\r\n", "v".repeat(40)))
            .collect::<String>()
    );
    assert_eq!(status_and_close(bind, many.as_bytes()), 431);
}

#[test]
fn slow_request_gets_408() {
    let (_t, bind, _p) = one_origin("    timeout http-request 300ms", "s1");
    let mut s = connect(bind);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let all = read_all(&mut s);
    assert!(all.starts_with("HTTP/1.1 408"), "{all}");
}

/// `timeout http-request` counts from the accept, so from the client's
/// side (clock started before `connect`) the 408 never comes before the
/// timeout: a handful of concurrent connections, silent or trickling
/// bytes (which must not extend it either).
#[test]
fn http_request_timeout_never_fires_early() {
    use std::io::Read;
    use std::time::{Duration, Instant};
    const T: Duration = Duration::from_millis(400);
    let (_t, bind, _p) = one_origin("    timeout http-request 400ms", "s1");
    let clients: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut s = connect(bind);
                s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let mut got = Vec::new();
                let mut sent = 0;
                let head = b"GET / HTTP/1.1\r\nHost: x\r\n";
                loop {
                    // Odd clients trickle one byte per read timeout.
                    if i % 2 == 1 && sent < head.len() {
                        let _ = s.write_all(&head[sent..=sent]);
                        sent += 1;
                    }
                    let mut b = [0u8; 512];
                    match s.read(&mut b) {
                        Ok(0) => break,
                        Ok(n) => got.extend_from_slice(&b[..n]),
                        Err(e)
                            if e.kind() == std::io::ErrorKind::WouldBlock
                                || e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(e) => panic!("client {i}: {e}"),
                    }
                    assert!(start.elapsed() < DEADLINE, "client {i}: no 408");
                }
                (start.elapsed(), String::from_utf8_lossy(&got).into_owned())
            })
        })
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let (elapsed, resp) = c.join().unwrap();
        assert!(resp.starts_with("HTTP/1.1 408"), "client {i}: {resp}");
        assert!(
            elapsed >= T,
            "client {i}: 408 after {elapsed:?}, before {T:?}"
        );
    }
}

/// The case: a burst of 2,000 silent connections opened at once.
/// Each client's clock starts before its `connect()` is issued, so the
/// kernel's handshake and Fairlead's accept come after it: every 408 must
/// come at least `timeout http-request` after that start, however late
/// the burst makes the accepts.
#[test]
fn http_request_timeout_never_fires_early_in_a_burst() {
    use std::time::{Duration, Instant};
    use tokio::io::AsyncReadExt;
    const T: Duration = Duration::from_millis(1000);
    const N: usize = 2000;
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        "    timeout http-request 1s",
        &format!("    server s1 {origin}"),
    )
    .replace("global\n", "global\n    maxconn 5000\n");
    let p = Proxy::start(&cfg, &[bind]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(async move {
        let tasks: Vec<_> = (0..N)
            .map(|_| {
                tokio::spawn(async move {
                    let start = Instant::now();
                    let mut s = tokio::net::TcpStream::connect(bind).await?;
                    let mut got = Vec::new();
                    tokio::time::timeout(DEADLINE, s.read_to_end(&mut got)).await??;
                    Ok::<_, std::io::Error>((start.elapsed(), got))
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    let mut shortest = Duration::MAX;
    for (i, r) in results.into_iter().enumerate() {
        let (elapsed, got) = r.unwrap_or_else(|e| panic!("client {i}: {e}\n{}", p.stderr()));
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 408"), "client {i}: {text}");
        assert!(
            elapsed >= T,
            "client {i}: 408 after {elapsed:?}, before {T:?}"
        );
        shortest = shortest.min(elapsed);
    }
    assert!(shortest < T + Duration::from_secs(5), "{shortest:?}");
}

#[test]
fn no_server_gives_503_and_connect_failure_503() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let dead = free_addr(ip);
    let cfg = http_cfg(bind, "    retries 1", &format!("    server dead {dead}"));
    let _p = Proxy::start(&cfg, &[bind]);
    let r = get(bind, "/");
    assert_eq!(r.status, 503);
    assert!(r.body_str().contains("No server is available"));
    // All servers disabled: 503 without trying.
    let bind2 = free_addr(ip);
    let cfg2 = http_cfg(bind2, "", &format!("    server s {dead} disabled"));
    let _p2 = Proxy::start(&cfg2, &[bind2]);
    assert_eq!(get(bind2, "/").status, 503);
}

#[test]
fn bad_or_missing_response_gives_502() {
    let ip = test_ip();
    let (closer, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let _ = read_head(&mut r);
        drop(s);
    });
    let (garbage, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let _ = read_head(&mut r);
        let mut s = s;
        let _ = s.write_all(b"NOT HTTP AT ALL\r\n\r\n");
    });
    for origin in [closer, garbage] {
        let bind = free_addr(ip);
        let _p = Proxy::start(
            &http_cfg(bind, "", &format!("    server o {origin}")),
            &[bind],
        );
        let r = get(bind, "/");
        assert_eq!(r.status, 502);
        assert!(r.body_str().contains("502 Bad Gateway"));
    }
}

#[test]
fn silent_server_gives_504() {
    let ip = test_ip();
    let (silent, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let _ = read_head(&mut r);
        // Never answer; hold the socket until the proxy gives up.
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut r, &mut sink);
    });
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 300ms\n\
frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    server o {silent}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let r = get(bind, "/");
    assert_eq!(r.status, 504);
}
