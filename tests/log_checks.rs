//! `option log-health-checks` against the real binary: a server that goes
//! away and comes back, and the lines HAProxy 2.6.12 sends for it (taken
//! from a run of HAProxy with the same settings): one per check whose
//! result or health changed, at `notice`, then the state change (`alert`
//! going down, `notice` coming up), and `emerg` when the backend has no
//! server left.

mod common;
use common::*;
use std::net::{TcpListener, UdpSocket};

/// The next datagram: priority and message.
fn recv(s: &UdpSocket) -> (u8, String) {
    let mut buf = [0u8; 4096];
    let n = s.recv(&mut buf).expect("a log datagram");
    let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
    let pri = line[1..line.find('>').unwrap()].parse().unwrap();
    let msg = line.split_once("]: ").unwrap().1.to_string();
    // Check durations vary; the rest must be exact.
    let msg = match msg.find("check duration: ") {
        Some(i) => {
            let rest = &msg[i + 16..];
            let end = rest.find("ms").unwrap();
            format!("{}check duration: Nms{}", &msg[..i], &rest[end + 2..])
        }
        None => msg,
    };
    (pri, msg)
}

#[test]
fn check_results_and_state_changes_are_logged() {
    let ip = test_ip();
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let log_addr = s.local_addr().unwrap();
    // A listener completes TCP handshakes by itself: L4 checks pass.
    let server = TcpListener::bind((ip, 0)).unwrap();
    let srv = server.local_addr().unwrap();
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    log {log_addr} local0\n    option log-health-checks\n\
    server s1 {srv} check inter 100 rise 2 fall 2\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let refused =
        "reason: Layer4 connection problem, info: \"Connection refused\", check duration: Nms";
    let passed = "reason: Layer4 check passed, check duration: Nms";
    // Start: up with health at `rise`; the first pass fills it (2/2 UP)
    // and is logged because the status left INI. Later passes are not.
    assert_eq!(
        recv(&s),
        (
            133,
            format!("Health check for server bk/s1 succeeded, {passed}, status: 2/2 UP.")
        )
    );
    drop(server);
    assert_eq!(
        recv(&s),
        (
            133,
            format!("Health check for server bk/s1 failed, {refused}, status: 1/2 UP.")
        )
    );
    assert_eq!(
        recv(&s),
        (
            133,
            format!("Health check for server bk/s1 failed, {refused}, status: 0/2 DOWN.")
        )
    );
    assert_eq!(
        recv(&s),
        (
            129,
            "Server bk/s1 is DOWN. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.".to_string()
        )
    );
    assert_eq!(
        recv(&s),
        (128, "backend bk has no server available!".to_string())
    );
    // Back: two passes (rise 2), then UP. Failures at 0/2 in between
    // changed nothing and were not logged.
    let _server = TcpListener::bind(srv).unwrap();
    assert_eq!(
        recv(&s),
        (
            133,
            format!("Health check for server bk/s1 succeeded, {passed}, status: 1/2 DOWN.")
        )
    );
    assert_eq!(
        recv(&s),
        (
            133,
            format!("Health check for server bk/s1 succeeded, {passed}, status: 2/2 UP.")
        )
    );
    assert_eq!(
        recv(&s),
        (
            133,
            "Server bk/s1 is UP. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.".to_string()
        )
    );
}

/// Without the option, only state changes are logged, with their reason.
#[test]
fn state_changes_only_without_the_option() {
    let ip = test_ip();
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let log_addr = s.local_addr().unwrap();
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    log {log_addr} local0\n    server s1 {dead} check inter 100 rise 2 fall 2\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    assert_eq!(
        recv(&s),
        (
            129,
            "Server bk/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: Nms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.".to_string()
        )
    );
}
