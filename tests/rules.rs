//! Rule-layer behaviours that need more than one request per connection or
//! a look at the logs (the single-request cases are data files in
//! `tests/scenarios/`): `sess` variables across keep-alive requests,
//! captures and `set-log-level` in log lines, `tarpit`, `reject`,
//! `silent-drop`, and `-c` diagnostics.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::net::UdpSocket;

fn syslog(ip: std::net::IpAddr) -> (UdpSocket, std::net::SocketAddr) {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

fn recv(s: &UdpSocket) -> String {
    let mut buf = [0u8; 8192];
    let n = s.recv(&mut buf).expect("a log datagram");
    String::from_utf8_lossy(&buf[..n]).trim_end().to_string()
}

/// An origin that answers with the request head it received as the body.
fn echo(ip: std::net::IpAddr) -> std::net::SocketAddr {
    let (addr, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            let resp = format!(
                "HTTP/1.1 200 OK\r\nx-seen: yes\r\ncontent-length: {}\r\n\r\n{head}",
                head.len()
            );
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    });
    addr
}

fn cfg(bind: std::net::SocketAddr, origin: std::net::SocketAddr, fe: &str) -> String {
    format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n{fe}\n    default_backend b\n\
backend b\n    server s {origin}\n"
    )
}

#[test]
fn sess_variables_last_for_the_connection() {
    let ip = test_ip();
    let o = echo(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &cfg(
            bind,
            o,
            "    http-request set-var(sess.first) path if { path /one }\n\
    http-request set-var(txn.t) str(x) if { path /one }\n\
    http-request set-header X-First %[var(sess.first)]\n\
    http-request set-header X-T %[var(txn.t)]",
        ),
        &[bind],
    );
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let a = read_response(&mut r, false).unwrap();
    assert!(a.body_str().contains("X-First: /one"), "{}", a.body_str());
    assert!(a.body_str().contains("X-T: x"), "{}", a.body_str());
    // Same connection: the sess variable is still set, the txn one is not.
    w.write_all(b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let b = read_response(&mut r, false).unwrap();
    assert!(b.body_str().contains("X-First: /one"), "{}", b.body_str());
    assert!(b.body_str().contains("X-T: \r\n"), "{}", b.body_str());
    // A new connection starts without it.
    let c = get(bind, "/three");
    assert!(c.body_str().contains("X-First: \r\n"), "{}", c.body_str());
}

#[test]
fn captures_reach_the_log_line() {
    let ip = test_ip();
    let o = echo(ip);
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &cfg(
            bind,
            o,
            &format!(
                "    log {log_addr} local0\n    option httplog\n    option dontlognull\n\
    capture request header Host len 20\n\
    capture request header User-Agent len 5\n\
    capture response header X-Seen len 10\n\
    http-request set-log-level silent if {{ path /quiet }}"
            ),
        ),
        &[bind],
    );
    let r = request(
        bind,
        "GET /quiet HTTP/1.1\r\nHost: q\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let r = request(
        bind,
        "GET /a HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    // The silenced request wrote nothing: the first line is /a's.
    let line = recv(&sock);
    assert!(line.contains("{example.com|curl/} {yes}"), "{line}");
    assert!(line.ends_with("\"GET /a HTTP/1.1\""), "{line}");
}

#[test]
fn reject_tarpit_and_silent_drop() {
    let ip = test_ip();
    let o = echo(ip);
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &cfg(
            bind,
            o,
            "    timeout tarpit 100ms\n\
    http-request reject if { path /reject }\n\
    http-request silent-drop if { path /drop }\n\
    http-request tarpit deny_status 429 if { path /tarpit }",
        ),
        &[bind],
    );
    for path in ["/reject", "/drop"] {
        let mut s = connect(bind);
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        assert_eq!(read_all(&mut s), "", "{path} must close without a response");
    }
    let r = get(bind, "/tarpit");
    assert_eq!(r.status, 429);
    assert_eq!(get(bind, "/ok").status, 200);
}

#[test]
fn check_mode_names_rule_errors() {
    let p = write_cfg(
        "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\n\
frontend fe\n    bind 127.0.0.1:1\n\
    http-request deny if no_such_acl\n\
    acl empty path_beg\n\
    tcp-request connection reject if { hdr(host) x }\n\
    http-request set-header X %[res.hdr(y)]\n\
    use_backend missing if { path /x }\n\
    default_backend b\n\
backend b\n    server s 127.0.0.1:2\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-c")
        .arg("-f")
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let path = p.to_str().unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{path}:8: 'http-request deny': no such ACL : 'no_such_acl'"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("[WARNING] {path}:9:")) && err.contains("no pattern to match"),
        "{err}"
    );
    // A fetch that is not available in a condition: a warning.
    assert!(
        err.contains(&format!("[WARNING] {path}:10:")) && err.contains("will never match"),
        "{err}"
    );
    // In an action, the same is fatal.
    assert!(
        err.contains(&format!("[ALERT] {path}:11:"))
            && err.contains("none of which is available here"),
        "{err}"
    );
    assert!(
        err.contains("unable to find required use_backend: 'missing'"),
        "{err}"
    );
}
