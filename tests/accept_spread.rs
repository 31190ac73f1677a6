//! `tune.listener.multi-queue`: a worker that accepts a connection while it
//! serves clearly more than another hands the connection to that one
//! (`show activity`: `accepted` per worker is the kernel's choice among
//! the workers' `SO_REUSEPORT` sockets, `accq_pushed` who was given the
//! connection, `curr_conns` who serves it now).
//!
//! The kernel's choice follows a hash of the addresses, so the tests make
//! the imbalance themselves: they keep only the connections that worker 1
//! accepted and close the others, which without spreading leaves worker 2
//! with nothing.

mod common;
use common::*;
use std::net::TcpStream;

/// `show activity`'s per-worker values of `name`.
fn per_worker(activity: &str, name: &str) -> Vec<u64> {
    let line = activity
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {activity}"));
    let inside = line
        .split_once('[')
        .and_then(|(_, r)| r.split_once(']'))
        .map(|(v, _)| v)
        .unwrap_or_else(|| panic!("{line}"));
    inside
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// Opens connections until worker 1 accepted `keep` of them, closing those
/// worker 2 accepted (once they are gone, so that only worker 1's stay).
/// Returns the kept connections and the last `show activity`.
fn keep_those_of_worker_1(
    bind: std::net::SocketAddr,
    sock: &std::path::Path,
    keep: usize,
) -> (Vec<TcpStream>, String) {
    let mut kept = Vec::new();
    let mut tries = 0;
    while kept.len() < keep {
        tries += 1;
        assert!(tries < 50 * keep, "the kernel kept choosing worker 2");
        let before = per_worker(&ask(sock, "show activity"), "accepted");
        let c = connect(bind);
        let mut now = before.clone();
        wait_until("the connection accepted", || {
            now = per_worker(&ask(sock, "show activity"), "accepted");
            now.iter().sum::<u64>() > before.iter().sum::<u64>()
        });
        if now[0] > before[0] {
            kept.push(c);
        } else {
            drop(c);
        }
        // The connection is served (counted) before the next one.
        wait_until("the connections counted", || {
            let a = ask(sock, "show activity");
            per_worker(&a, "curr_conns").iter().sum::<u64>() == kept.len() as u64
        });
    }
    (kept, ask(sock, "show activity"))
}

fn cfg(
    bind: std::net::SocketAddr,
    sock: &std::path::Path,
    multi_queue: &str,
    origin: std::net::SocketAddr,
) -> String {
    format!(
        "global\n    nbthread 2\n    stats socket {} level admin\n{multi_queue}\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n\
    timeout http-request 30s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    server s1 {origin}\n",
        sock.display()
    )
}

/// Connections the kernel gives to one worker end up served by both: the
/// loaded worker hands them over once it serves more than 3 more than the
/// other, so the two never differ by more than 4 (the margin stays 3
/// below 12 connections on the least loaded worker).
#[test]
fn a_loaded_worker_hands_new_connections_to_an_idle_one() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let sock = admin_sock("spread", "on");
    let (_t, origin) = term(ip, "spread");
    let _p = Proxy::start(&cfg(bind, &sock, "", origin), &[bind]);
    let (kept, a) = keep_those_of_worker_1(bind, &sock, 16);
    let conns = per_worker(&a, "curr_conns");
    assert_eq!(conns.iter().sum::<u64>(), 16, "{a}");
    assert!(
        conns[0].abs_diff(conns[1]) <= 4,
        "curr_conns {conns:?}: the workers should be within 4\n{a}"
    );
    assert!(conns[1] >= 6, "worker 2 was handed connections\n{a}");
    let (accepted, pushed) = (per_worker(&a, "accepted"), per_worker(&a, "accq_pushed"));
    assert_eq!(
        accepted.iter().sum::<u64>(),
        pushed.iter().sum::<u64>(),
        "each accepted connection is queued once\n{a}"
    );
    assert!(
        pushed[1] > accepted[1],
        "worker 2 was given more than it accepted\n{a}"
    );
    // The handed-over connections are served like the others.
    for mut c in kept {
        use std::io::Write;
        c.write_all(b"GET /?s=5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let r = read_all(&mut c);
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(
            r.to_ascii_lowercase().contains("\r\ncontent-length: 5\r\n"),
            "{r}"
        );
    }
}

/// `tune.listener.multi-queue off`: every connection stays on the worker
/// the kernel chose.
#[test]
fn multi_queue_off_keeps_connections_where_they_were_accepted() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let sock = admin_sock("spread", "off");
    let (_t, origin) = term(ip, "spread-off");
    let _p = Proxy::start(
        &cfg(bind, &sock, "    tune.listener.multi-queue off\n", origin),
        &[bind],
    );
    let (_kept, a) = keep_those_of_worker_1(bind, &sock, 12);
    assert_eq!(per_worker(&a, "curr_conns"), vec![12, 0], "{a}");
    assert_eq!(
        per_worker(&a, "accepted"),
        per_worker(&a, "accq_pushed"),
        "{a}"
    );
}
