//! TCP mode end to end: half-close, retries, timeouts.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::time::{Duration, Instant};

fn tcp_cfg(bind: SocketAddr, defaults: &str, servers: &str) -> String {
    format!(
        "global\n    nbthread 2\ndefaults\n    mode tcp\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n{defaults}\n\
listen app\n    bind {bind}\n{servers}\n"
    )
}

/// An origin that reads until EOF, then answers with the byte count and
/// closes: it only answers once the client's FIN went through the proxy.
fn count_until_eof(ip: std::net::IpAddr) -> SocketAddr {
    raw_origin(ip, |mut s| {
        let mut total = 0usize;
        let mut buf = [0u8; 8192];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
        let _ = write!(s, "got {total}");
    })
    .0
}

#[test]
fn half_close_keeps_the_other_direction_open() {
    let ip = test_ip();
    let origin = count_until_eof(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &tcp_cfg(bind, "", &format!("    server o {origin}")),
        &[bind],
    );
    let mut s = connect(bind);
    let payload = vec![7u8; 300_000];
    s.write_all(&payload).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let reply = read_all(&mut s);
    assert_eq!(reply, "got 300000");
}

#[test]
fn connect_failure_redispatches_to_the_next_server() {
    let ip = test_ip();
    let origin = count_until_eof(ip);
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let cfg = tcp_cfg(
        bind,
        "    retries 1\n    option redispatch",
        &format!("    balance roundrobin\n    server dead {dead}\n    server live {origin}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for _ in 0..6 {
        let mut s = connect(bind);
        s.write_all(b"abc").unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        assert_eq!(read_all(&mut s), "got 3");
    }
}

#[test]
fn unreachable_backend_closes_the_client() {
    let ip = test_ip();
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &tcp_cfg(bind, "    retries 0", &format!("    server dead {dead}")),
        &[bind],
    );
    let mut s = connect(bind);
    assert_eq!(read_all(&mut s), "");
}

#[test]
fn idle_timeouts_close_the_stream() {
    let ip = test_ip();
    // An origin that never talks and never closes on its own.
    let (silent, _) = raw_origin(ip, |mut s| {
        let mut buf = [0u8; 64];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    for (name, defaults) in [
        (
            "timeout client/server",
            "    timeout client 300ms\n    timeout server 300ms",
        ),
        ("timeout tunnel", "    timeout tunnel 300ms"),
    ] {
        let bind = free_addr(ip);
        let _p = Proxy::start(
            &tcp_cfg(bind, defaults, &format!("    server o {silent}")),
            &[bind],
        );
        let mut s = connect(bind);
        let started = Instant::now();
        let mut buf = [0u8; 16];
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "{name}: expected the proxy to close the idle stream");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name}: closed only after the test deadline"
        );
    }
}

#[test]
fn bytes_flow_both_ways_interleaved() {
    let ip = test_ip();
    let (echo, _) = raw_origin(ip, |mut s| {
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(&tcp_cfg(bind, "", &format!("    server e {echo}")), &[bind]);
    let mut s = connect(bind);
    for i in 0..100u32 {
        let msg = format!("message {i};");
        s.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, msg.as_bytes());
    }
}

#[test]
fn a_one_way_download_outlives_the_idle_timeout_of_the_other_side() {
    let ip = test_ip();
    // Sends 12 pieces 100 ms apart (1.2 s, four times the 300 ms
    // timeouts) without reading anything, then closes.
    let (talker, _) = raw_origin(ip, |mut s| {
        for i in 0..12u8 {
            if s.write_all(&[b'a' + i; 100]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let bind = free_addr(ip);
    let cfg = tcp_cfg(
        bind,
        "    timeout client 300ms\n    timeout server 300ms",
        &format!("    server t {talker}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // The client never writes: its direction's deadline fires several
    // times and is pushed back by the server's data each time.
    let mut s = connect(bind);
    let got = read_all(&mut s);
    assert_eq!(got.len(), 1200, "{got:?}");
    assert!(got.starts_with(&"a".repeat(100)) && got.ends_with(&"l".repeat(100)));
}

#[test]
fn fin_timeouts_apply_once_one_side_closed() {
    let ip = test_ip();
    // Reads to EOF, then never answers nor closes.
    let (mute, _) = raw_origin(ip, |mut s| {
        let mut buf = [0u8; 64];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        std::thread::sleep(Duration::from_secs(30));
    });
    let bind = free_addr(ip);
    let cfg = tcp_cfg(
        bind,
        "    timeout client 20s\n    timeout server 20s\n    timeout server-fin 200ms\n    timeout client-fin 200ms",
        &format!("    server m {mute}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let mut s = connect(bind);
    s.write_all(b"bye").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let started = Instant::now();
    assert_eq!(read_all(&mut s), "");
    // server-fin (200ms), not the 20s server timeout, closed it.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn binds_port_ranges_and_several_addresses() {
    let ip = test_ip();
    let origin = count_until_eof(ip);
    let first = free_addr(ip);
    // Three consecutive ports starting at a free one, plus a second address.
    let base = first.port();
    let range: Vec<SocketAddr> = (0..3).map(|i| SocketAddr::new(ip, base + i)).collect();
    for a in &range[1..] {
        if std::net::TcpListener::bind(a).is_err() {
            eprintln!("port {a} busy, skipping");
            return;
        }
    }
    // On an address of its own: `free_addr` hands out consecutive ports.
    let other = free_addr(test_ip());
    let cfg = format!(
        "defaults\n    mode tcp\n    timeout client 5s\n    timeout server 5s\n    timeout connect 1s\n\
listen app\n    bind {ip}:{base}-{},{other}\n    server o {origin}\n",
        base + 2
    );
    let mut all = range.clone();
    all.push(other);
    let _p = Proxy::start(&cfg, &all);
    for a in all {
        let mut s = connect(a);
        s.write_all(b"hi").unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        assert_eq!(read_all(&mut s), "got 2");
    }
}

#[test]
fn ipv6_listener() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    }
    let ip = test_ip();
    let origin = count_until_eof(ip);
    let bind = free_addr("::1".parse().unwrap());
    let cfg = tcp_cfg(bind, "", &format!("    server o {origin}"));
    let _p = Proxy::start(&cfg, &[bind]);
    let mut s = connect(bind);
    s.write_all(b"v6").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_all(&mut s), "got 2");
}
