//! Idle keep-alive HTTP/1 connections parked without a task
//! (`fairlead_l7::park`): reused, timed out, closed at the soft stop, and
//! still counted and listed while parked.

mod common;
use common::*;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A proxy with a runtime API socket in front of one origin.
fn proxy(
    tag: &str,
    extra_defaults: &str,
) -> (
    fairlead_term::TermHandle,
    SocketAddr,
    std::path::PathBuf,
    Proxy,
) {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = admin_sock("idle", tag);
    let cfg = http_cfg(bind, extra_defaults, &format!("    server s1 {a}")).replace(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
    );
    let p = Proxy::start(&cfg, &[bind]);
    (t, bind, sock, p)
}

/// Sends one keep-alive request on `s` and reads its response.
fn exchange(s: &TcpStream, path: &str) -> Response {
    let mut w = s.try_clone().unwrap();
    w.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    read_response(&mut r, false).expect("response")
}

/// `show info`'s field `name`.
fn info_field(sock: &std::path::Path, name: &str) -> String {
    let info = ask(sock, "show info");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("{name} in {info}"))
        .trim()
        .to_string()
}

/// Waits for end of stream on `s` (the proxy closed it); returns when.
fn wait_eof(s: &mut TcpStream) -> Instant {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    let r = s.read_to_end(&mut rest);
    assert!(r.is_ok(), "{r:?}");
    assert!(rest.is_empty(), "unexpected bytes: {rest:?}");
    Instant::now()
}

#[test]
fn parked_connection_serves_its_next_requests() {
    let (t, bind, sock, _p) = proxy("reuse", "");
    // The start's readiness probe is one connection in `stot`; the worker
    // may accept it after `Proxy::start` returns, so wait for it.
    wait_until("the readiness probe counted", || {
        stat_of(&sock, "fe", "FRONTEND", "stot") == "1" && info_field(&sock, "CurrConns") == "0"
    });
    let stot = 1;
    let s = connect(bind);
    let local = s.local_addr().unwrap().to_string();
    let r = exchange(&s, "/?s=3");
    assert_eq!((r.status, r.body.len()), (200, 3));
    // Idle now: still one current connection, and listed by `show sess`.
    wait_until("idle connection listed", || {
        ask(&sock, "show sess").contains(&local)
    });
    assert_eq!(info_field(&sock, "CurrConns"), "1");
    assert_eq!(stat_of(&sock, "fe", "FRONTEND", "scur"), "1");
    // The same client socket gets its next requests served, on the same
    // proxy-side connection (one accepted by the proxy in all).
    for i in 0..3 {
        let r = exchange(&s, &format!("/?s={}", 10 + i));
        assert_eq!((r.status, r.body.len()), (200, 10 + i));
    }
    assert_eq!(t.requests(), 4);
    assert_eq!(
        stat_of(&sock, "fe", "FRONTEND", "stot"),
        (stot + 1).to_string()
    );
    assert_eq!(info_field(&sock, "CurrConns"), "1");
    drop(s);
    wait_until("connection gone", || info_field(&sock, "CurrConns") == "0");
    assert!(!ask(&sock, "show sess").contains(&local));
}

#[test]
fn parked_connection_closes_after_keep_alive_timeout() {
    let (_t, bind, sock, _p) = proxy("timeout", "    timeout http-keep-alive 300ms\n");
    let mut s = connect(bind);
    assert_eq!(exchange(&s, "/").status, 200);
    let idle_since = Instant::now();
    let closed = wait_eof(&mut s);
    let idle = closed - idle_since;
    assert!(idle >= Duration::from_millis(280), "closed after {idle:?}");
    assert!(idle < Duration::from_secs(5), "closed after {idle:?}");
    wait_until("connection gone", || info_field(&sock, "CurrConns") == "0");
}

#[test]
fn soft_stop_closes_parked_connections() {
    let (_t, bind, sock, mut p) = proxy("stop", "");
    let mut conns: Vec<TcpStream> = (0..3).map(|_| connect(bind)).collect();
    for s in &conns {
        assert_eq!(exchange(s, "/").status, 200);
    }
    assert_eq!(info_field(&sock, "CurrConns"), "3");
    p.signal("USR1");
    let started = Instant::now();
    for s in &mut conns {
        wait_eof(s);
    }
    // At once, not at the 10 s client timeout.
    assert!(started.elapsed() < Duration::from_secs(5));
    let st = p.wait_exit();
    assert!(st.success(), "{st}");
}

#[test]
fn many_parked_connections_are_all_served_again() {
    let (t, bind, sock, _p) = proxy("many", "");
    const N: usize = 500;
    // The start-up readiness probe is one connection: count from after it.
    wait_until("the readiness probe counted", || {
        stat_of(&sock, "fe", "FRONTEND", "stot") != "0" && info_field(&sock, "CurrConns") == "0"
    });
    let stot: usize = stat_of(&sock, "fe", "FRONTEND", "stot").parse().unwrap();
    let conns: Vec<TcpStream> = (0..N).map(|_| connect(bind)).collect();
    for s in &conns {
        assert_eq!(exchange(s, "/?s=1").status, 200);
    }
    wait_until("all connections counted", || {
        info_field(&sock, "CurrConns") == N.to_string()
    });
    // Every one of them, parked, gets its next request served; sent all
    // at once first, then read.
    for s in &conns {
        let mut w = s.try_clone().unwrap();
        w.write_all(b"GET /?s=2 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
    }
    for s in &conns {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let resp = read_response(&mut r, false).expect("second response");
        assert_eq!((resp.status, resp.body.len()), (200, 2));
    }
    assert_eq!(t.requests(), 2 * N as u64);
    assert_eq!(
        stat_of(&sock, "fe", "FRONTEND", "stot"),
        (stot + N).to_string()
    );
    drop(conns);
    wait_until("connections gone", || info_field(&sock, "CurrConns") == "0");
}
