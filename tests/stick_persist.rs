//! Stick persistence on the real binary: `stick on src` in TCP mode,
//! `stick on hdr(...)` in HTTP mode, `stick store-response` with `stick
//! match`, a stuck server that refuses connections (redispatch, then the
//! new server is stored), and `show table` listing `server_id` and
//! `server_key` as HAProxy 2.6 does.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// An HTTP origin that answers every request with `x-srv: <name>` and
/// `x-session: <name>-sess`.
fn named(ip: IpAddr, name: &'static str) -> (SocketAddr, Arc<AtomicU32>) {
    raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while read_head(&mut r).is_some() {
            let resp = format!(
                "HTTP/1.1 200 OK\r\nx-srv: {name}\r\nx-session: {name}-sess\r\ncontent-length: 0\r\n\r\n"
            );
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    })
}

/// The server that answered a request with `headers`.
fn served_by(bind: SocketAddr, headers: &str) -> String {
    let r = request(
        bind,
        &format!("GET / HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"),
    );
    assert_eq!(r.status, 200);
    r.header("x-srv").expect("x-srv").to_string()
}

fn admin_sock(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fairlead-sp-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let _ = std::fs::remove_file(&sock);
    sock
}

fn defaults(mode: &str) -> String {
    format!(
        "defaults\n    mode {mode}\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n"
    )
}

#[test]
fn tcp_stick_on_src_keeps_one_server() {
    let ip = test_ip();
    let greet = |name: &'static str| {
        raw_origin(ip, move |mut s| {
            let _ = s.write_all(name.as_bytes());
        })
    };
    let (a, ca) = greet("A");
    let (b, cb) = greet("B");
    let bind = free_addr(ip);
    let sock = admin_sock("tcp");
    let cfg = format!(
        "global\n    stats socket {} level admin\n{}listen l\n    bind {bind}\n    balance roundrobin\n\
    stick-table type ip size 1k expire 1m\n    stick on src\n    server s1 {a}\n    server s2 {b}\n",
        sock.display(),
        defaults("tcp")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    // The readiness probe's connection must be over first: still being
    // assigned, it raced the first connection below for the entry.
    wait_until("the probe's session gone", || {
        common::tls::info(&sock, "CurrConns") == 0
    });
    let mut seen = Vec::new();
    for _ in 0..6 {
        let mut s = connect(bind);
        seen.push(read_all(&mut s));
    }
    assert!(seen.iter().all(|g| g == &seen[0]), "{seen:?}");
    assert!(seen[0] == "A" || seen[0] == "B", "{seen:?}");
    // Round robin alone would have alternated: one origin saw nothing
    // after the first connection (the readiness probe's, possibly).
    let (kept, other) = if seen[0] == "A" {
        (&ca, &cb)
    } else {
        (&cb, &ca)
    };
    assert!(kept.load(Ordering::SeqCst) >= 6);
    assert!(other.load(Ordering::SeqCst) <= 1);
    let id = if seen[0] == "A" { 1 } else { 2 };
    let table = ask(&sock, "show table l");
    assert!(
        table.contains(&format!("server_id={id} server_key=s{id}")),
        "{table}"
    );
}

#[test]
fn http_stick_on_header() {
    let ip = test_ip();
    let (a, _) = named(ip, "A");
    let (b, _) = named(ip, "B");
    let bind = free_addr(ip);
    let sock = admin_sock("hdr");
    let cfg = format!(
        "global\n    stats socket {} level admin\n{}frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    balance roundrobin\n    stick-table type string len 32 size 1k expire 1m\n\
    stick on hdr(x-user)\n    server s1 {a} id 7\n    server s2 {b} id 9\n",
        sock.display(),
        defaults("http")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let alice = served_by(bind, "x-user: alice\r\n");
    let bob = served_by(bind, "x-user: bob\r\n");
    // Round robin gave them different servers; each keeps its own.
    assert_ne!(alice, bob);
    for _ in 0..4 {
        assert_eq!(served_by(bind, "x-user: alice\r\n"), alice);
        assert_eq!(served_by(bind, "x-user: bob\r\n"), bob);
    }
    let (id, name) = if alice == "A" { (7, "s1") } else { (9, "s2") };
    let t = ask(&sock, "show table b key alice");
    assert!(
        t.contains(" key=alice use=0 exp=")
            && t.contains(&format!("server_id={id} server_key={name}")),
        "{t}"
    );
}

#[test]
fn store_response_then_match_request() {
    let ip = test_ip();
    let (a, _) = named(ip, "A");
    let (b, _) = named(ip, "B");
    let bind = free_addr(ip);
    let cfg = format!(
        "{}frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    balance roundrobin\n    stick-table type string len 32 size 1k expire 1m\n\
    stick store-response res.hdr(x-session)\n    stick match req.hdr(x-session)\n\
    server s1 {a}\n    server s2 {b}\n",
        defaults("http")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // Two requests without a session: both servers answer once and store
    // their session keys.
    let first = served_by(bind, "");
    let second = served_by(bind, "");
    assert_ne!(first, second);
    for _ in 0..4 {
        assert_eq!(served_by(bind, "x-session: A-sess\r\n"), "A");
        assert_eq!(served_by(bind, "x-session: B-sess\r\n"), "B");
    }
}

#[test]
fn refused_stuck_server_redispatches_and_stores_the_new_one() {
    let ip = test_ip();
    let (b, _) = named(ip, "B");
    // s1's port has no listener: connections are refused.
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let sock = admin_sock("redisp");
    let cfg = format!(
        "global\n    stats socket {} level admin\n{}    retries 1\n    option redispatch\n\
frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    balance roundrobin\n    stick-table type string len 32 size 1k expire 1m\n\
    stick on hdr(x-user)\n    server s1 {dead}\n    server s2 {b}\n",
        sock.display(),
        defaults("http")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    ask(&sock, "set table b key carol data.server_id 1");
    let t = ask(&sock, "show table b key carol");
    assert!(t.contains("server_id=1"), "{t}");
    assert_eq!(served_by(bind, "x-user: carol\r\n"), "B");
    let t = ask(&sock, "show table b key carol");
    assert!(t.contains("server_id=2 server_key=s2"), "{t}");
    // From now on the entry designates s2 directly.
    assert_eq!(served_by(bind, "x-user: carol\r\n"), "B");
}

/// A stored server that health checks marked down is not used (no
/// `option persist`): the request is balanced and the new server stored.
#[test]
fn down_server_is_not_used_and_is_replaced() {
    let ip = test_ip();
    let (b, _) = named(ip, "B");
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let sock = admin_sock("down");
    let cfg = format!(
        "global\n    stats socket {} level admin\n{}frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    balance roundrobin\n    stick-table type string len 32 size 1k expire 1m\n\
    stick on hdr(x-user)\n    server s1 {dead} check inter 100 fall 1\n    server s2 {b}\n",
        sock.display(),
        defaults("http")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    wait_until("s1 down", || {
        ask(&sock, "show stat")
            .lines()
            .any(|l| l.starts_with("b,s1,") && l.contains(",DOWN"))
    });
    ask(&sock, "set table b key dave data.server_id 1");
    assert_eq!(served_by(bind, "x-user: dave\r\n"), "B");
    let t = ask(&sock, "show table b key dave");
    assert!(t.contains("server_id=2 server_key=s2"), "{t}");
}

/// `force-persist`, `ignore-persist` and `non-stick`, as HAProxy defines
/// them: a forced request reaches the server its cookie names even in
/// maintenance; an ignored one is balanced and gets no cookie; a
/// `non-stick` server is never stored by stick rules.
#[test]
fn force_persist_ignore_persist_and_non_stick() {
    let ip = test_ip();
    let (a, _) = named(ip, "A");
    let (b, _) = named(ip, "B");
    let bind = free_addr(ip);
    let sock = admin_sock("forceignore");
    let cfg = format!(
        "global\n    stats socket {} level admin\n{}frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    balance roundrobin\n    cookie SRV insert indirect nocache\n\
    stick-table type string len 32 size 1k expire 1m\n    stick on hdr(x-user)\n\
    force-persist if {{ hdr(x-force) -m found }}\n    ignore-persist if {{ path_beg /static }}\n\
    server s1 {a} cookie a\n    server s2 {b} cookie b non-stick\n",
        sock.display(),
        defaults("http")
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let get = |path: &str, headers: &str| {
        request(
            bind,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"),
        )
    };
    // The cookie sticks to s1 for normal requests.
    for _ in 0..2 {
        let r = get("/", "Cookie: SRV=a\r\n");
        assert_eq!(r.header("x-srv"), Some("A"));
    }
    // ignore-persist: balanced over both servers, and no cookie set.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let r = get("/static/x.png", "Cookie: SRV=a\r\n");
        assert_eq!(
            r.header("set-cookie"),
            None,
            "no cookie on ignored requests"
        );
        seen.push(r.header("x-srv").unwrap().to_string());
    }
    seen.sort();
    assert_eq!(seen, ["A", "B"], "ignored requests are balanced");
    let r = get("/", "");
    assert!(
        r.header("set-cookie").is_some(),
        "a normal request gets its cookie"
    );
    // s1 in maintenance: the cookie no longer designates it...
    ask(&sock, "disable server b/s1");
    let r = get("/", "Cookie: SRV=a\r\n");
    assert_eq!(r.header("x-srv"), Some("B"));
    assert_eq!(
        r.header("set-cookie").map(|c| c.starts_with("SRV=b")),
        Some(true)
    );
    // ...unless force-persist matches.
    let r = get("/", "Cookie: SRV=a\r\nx-force: 1\r\n");
    assert_eq!(
        r.header("x-srv"),
        Some("A"),
        "forced to the server in maintenance"
    );
    // non-stick: s2 served eve, and nothing was stored.
    let r = get("/", "x-user: eve\r\n");
    assert_eq!(r.header("x-srv"), Some("B"));
    let t = ask(&sock, "show table b key eve");
    assert!(!t.contains("key=eve"), "non-stick server stored:\n{t}");
    // A stick match of a server in maintenance is forced too.
    ask(&sock, "set table b key carol data.server_id 1");
    let r = get("/", "x-user: carol\r\n");
    assert_eq!(
        r.header("x-srv"),
        Some("B"),
        "not forced: s1 is in maintenance"
    );
    let r = get("/", "x-user: carol\r\nx-force: 1\r\n");
    assert_eq!(r.header("x-srv"), Some("A"), "forced stick match");
}
