//! `tcp-check connect` options and the server's check transport options
//! against fake servers: the PROXY header (server `send-proxy` on its own
//! port, `connect send-proxy` with the server's version), `connect addr`
//! and `port`, and `min-recv`.
//!
//! Loopback address 127.0.0.89 is this file's.

use fairlead_config::{Expect, ExpectKind, HealthCheck, TcpCheckRule, TcpConnect};
use fairlead_health::{start, CheckTarget, ServerHealth};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// A server that records the first bytes of each connection, then
/// answers `reply` and keeps the connection open for `hold`.
fn recorder(reply: &'static [u8]) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    recorder_holding(reply, 50 * MS)
}

fn recorder_holding(
    reply: &'static [u8],
    hold: Duration,
) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let l = TcpListener::bind("127.0.0.89:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let s = seen.clone();
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            let s = s.clone();
            thread::spawn(move || handle(c, reply, &s, hold));
        }
    });
    (addr, seen)
}

fn handle(mut c: TcpStream, reply: &[u8], seen: &Mutex<Vec<Vec<u8>>>, hold: Duration) {
    c.set_read_timeout(Some(200 * MS)).unwrap();
    let mut buf = vec![0u8; 256];
    let n = c.read(&mut buf).unwrap_or(0);
    buf.truncate(n);
    seen.lock().unwrap().push(buf);
    let _ = c.write_all(reply);
    // Holding the connection open, as a slow server would.
    thread::sleep(hold);
}

fn target(addr: SocketAddr, check: HealthCheck) -> CheckTarget {
    let mut t = CheckTarget::new("bk", "s1", addr, Arc::new(ServerHealth::new(false)));
    t.check = Some(check);
    t.inter = 100 * MS;
    t.fastinter = 100 * MS;
    t.downinter = 100 * MS;
    t.rise = 1;
    t.fall = 1;
    t.check_timeout = Some(Duration::from_secs(1));
    t
}

/// Polls until the server's status text starts with `status` (and
/// `up` holds).
fn wait_status(h: &ServerHealth, up: bool, status: &str) {
    let end = Instant::now() + Duration::from_secs(10);
    while !(h.is_up() == up && h.status_text().starts_with(status)) {
        assert!(
            Instant::now() < end,
            "wanted {status}, got {}",
            h.status_text()
        );
        thread::sleep(10 * MS);
    }
}

#[test]
fn proxy_header_on_check_connections() {
    // A plain check of a `send-proxy` server on its own port: v1 UNKNOWN.
    let (addr, seen) = recorder(b"");
    let mut t = target(addr, HealthCheck::Tcp);
    t.send_proxy = 1;
    let h = t.health.clone();
    let _c = start(vec![t], 0, Arc::new(|_| {})).unwrap();
    wait_status(&h, true, "L4OK");
    let end = Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < end);
        thread::sleep(10 * MS);
    }
    assert_eq!(seen.lock().unwrap()[0], b"PROXY UNKNOWN\r\n");

    // `connect send-proxy` with a `send-proxy-v2` server: v2 LOCAL, then
    // the rule's data; `+OK` expected back.
    let (addr, seen) = recorder(b"+OK\r\n");
    let rules = vec![
        TcpCheckRule::Connect(TcpConnect {
            send_proxy: true,
            ..TcpConnect::default()
        }),
        TcpCheckRule::Send(b"PING\r\n".to_vec()),
        TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+OK".into()))),
    ];
    let mut t = target(addr, HealthCheck::TcpCheck(rules));
    t.proxy_version = 2;
    let h = t.health.clone();
    let _c2 = start(vec![t], 0, Arc::new(|_| {})).unwrap();
    wait_status(&h, true, "L7OK");
    let first = seen.lock().unwrap()[0].clone();
    let sig = b"\r\n\r\n\0\r\nQUIT\n";
    assert_eq!(&first[..12], sig);
    // Version 2, LOCAL; family unspecified, no address.
    assert_eq!(&first[12..16], &[0x20, 0x00, 0x00, 0x00]);
    assert!(
        first[16..].starts_with(b"PING\r\n") || first.len() == 16,
        "{first:?}"
    );
}

#[test]
fn connect_addr_port_and_min_recv() {
    let (elsewhere, _) = recorder(b"+PONG\r\n");
    let dead: SocketAddr = {
        let l = TcpListener::bind("127.0.0.89:0").unwrap();
        l.local_addr().unwrap()
    };
    // The target's own address is dead; the rule goes elsewhere.
    let rules = vec![
        TcpCheckRule::Connect(TcpConnect {
            addr: Some(elsewhere.ip()),
            port: Some(elsewhere.port()),
            ..TcpConnect::default()
        }),
        TcpCheckRule::Send(b"PING\r\n".to_vec()),
        TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+PONG".into()))),
    ];
    let t = target(dead, HealthCheck::TcpCheck(rules));
    let h = t.health.clone();
    let c = start(vec![t], 0, Arc::new(|_| {})).unwrap();
    wait_status(&h, true, "L7OK");
    drop(c);

    // `min-recv 3` on a pattern that is not in the first bytes: the
    // verdict comes once 3 bytes are in, without waiting for more (the
    // server holds the connection open 4 s; without min-recv the check
    // would wait for its 5 s timeout).
    let mut e = Expect::new(false, ExpectKind::String("NEVER".into()));
    e.min_recv = Some(3);
    let rules = vec![
        TcpCheckRule::Send(b"PING\r\n".to_vec()),
        TcpCheckRule::Expect(e),
    ];
    let (slow, _) = recorder_holding(b"+PONG\r\n", Duration::from_secs(4));
    let mut t = target(slow, HealthCheck::TcpCheck(rules.clone()));
    t.check_timeout = Some(Duration::from_secs(5));
    let h = t.health.clone();
    let _c = start(vec![t], 0, Arc::new(|_| {})).unwrap();
    let begun = Instant::now();
    wait_status(&h, false, "L7RSP");
    assert!(
        begun.elapsed() < Duration::from_secs(3),
        "{:?}",
        begun.elapsed()
    );
}
