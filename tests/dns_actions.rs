//! `do-resolve` (`http-request`, `tcp-request content`) and the DNS
//! events sent to the `log` targets, against the real binary and a real
//! dnsmasq on loopback.
//!
//! - do-resolve: the request waits for the answer and its rules go on
//!   with the address in the variable (frontend and backend rules); an
//!   unknown name or a silent nameserver leaves the variable unset.
//! - logs: the lines and syslog levels HAProxy 2.6.12 sends for the same
//!   sequence (taken from a run of HAProxy against dnsmasq).

mod common;
#[path = "../crates/dns/tests/common/dnsmasq.rs"]
mod dnsmasq;

use common::*;
use dnsmasq::{require_dnsmasq, Dnsmasq};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn resolve_cfg(dns: SocketAddr, bind: SocketAddr, h2: SocketAddr) -> String {
    format!(
        "global\n    nbthread 2\n\
resolvers mydns\n    nameserver dns1 {dns}\n    timeout retry 300ms\n    resolve_retries 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    bind {h2} proto h2\n\
    http-request do-resolve(txn.a,mydns,ipv4) req.hdr(x-host),lower\n\
    http-request set-var(txn.after) str(yes)\n\
    default_backend bk\n\
backend bk\n\
    http-request set-var(txn.be) str(on)\n\
    http-request do-resolve(txn.b,mydns) req.hdr(x-other)\n\
    http-request return status 200 content-type text/plain lf-string \"a=%[var(txn.a)] b=%[var(txn.b)] after=%[var(txn.after)] be=%[var(txn.be)]\"\n\
    server s1 127.0.0.1:9\n"
    )
}

fn ask_with(bind: SocketAddr, headers: &str) -> String {
    let r = request(
        bind,
        &format!("GET / HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"),
    );
    assert_eq!(r.status, 200, "{}", r.body_str());
    r.body_str()
}

#[test]
fn do_resolve_stores_the_address_and_the_rules_go_on() {
    let Some(bin) = require_dnsmasq("do_resolve_stores_the_address_and_the_rules_go_on") else {
        return;
    };
    let ip = test_ip();
    let mut dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        "10.20.30.40 app.test\n10.20.30.41 other.test\nfd00::7 other.test\n",
        &[],
    );
    let bind = free_addr(ip);
    let h2 = free_addr(ip);
    let p = Proxy::start(&resolve_cfg(dns.addr, bind, h2), &[bind, h2]);
    // Both stages resolve; `ipv4` asks A first, the default asks AAAA.
    assert_eq!(
        ask_with(bind, "x-host: APP.test\r\nx-other: other.test\r\n"),
        "a=10.20.30.40 b=fd00::7 after=yes be=on",
        "{}",
        p.stderr()
    );
    // An AAAA-less name falls back to its A record.
    assert_eq!(
        ask_with(bind, "x-host: app.test\r\nx-other: app.test\r\n"),
        "a=10.20.30.40 b=10.20.30.40 after=yes be=on"
    );
    // No name, or a name the server does not know: unset, the rules go on.
    assert_eq!(ask_with(bind, ""), "a= b= after=yes be=on");
    assert_eq!(
        ask_with(bind, "x-host: nowhere.test\r\n"),
        "a= b= after=yes be=on"
    );
    // A keep-alive connection: each request resolves its own name.
    let mut c = connect(bind);
    let mut r = std::io::BufReader::new(c.try_clone().unwrap());
    for (host, want) in [("app.test", "10.20.30.40"), ("other.test", "10.20.30.41")] {
        use std::io::Write;
        write!(c, "GET / HTTP/1.1\r\nHost: x\r\nx-host: {host}\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false).expect("response");
        assert!(
            resp.body_str().starts_with(&format!("a={want} ")),
            "{}",
            resp.body_str()
        );
    }
    // An HTTP/2 stream waits the same way.
    let r = common::tls::curl(&[
        "--http2-prior-knowledge",
        "-H",
        "x-host: app.test",
        "-H",
        "x-other: other.test",
        &format!("http://{h2}/"),
    ]);
    assert_eq!(
        r.stdout,
        "a=10.20.30.40 b=fd00::7 after=yes be=on",
        "{}",
        r.all()
    );
    // The nameserver is gone: the request waits for the retries (a
    // refused query is retried after `timeout retry`, 2 sends in all),
    // then goes on without the address. (A name not asked before:
    // valid answers are reused for `hold valid`.)
    dns.stop();
    let t = Instant::now();
    assert_eq!(
        ask_with(bind, "x-host: late.test\r\n"),
        "a= b= after=yes be=on"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
}

/// A TCP origin that sends `tag` and closes.
fn tag_origin(ip: std::net::IpAddr, tag: &'static str) -> SocketAddr {
    raw_origin(ip, move |mut s| {
        let _ = std::io::Write::write_all(&mut s, tag.as_bytes());
    })
    .0
}

/// Sends `parts` (one write each) and reads the reply until the close.
fn tcp_exchange(bind: SocketAddr, parts: &[&str]) -> String {
    use std::io::{Read, Write};
    let mut c = connect(bind);
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            // Two segments: the rules see the first one alone.
            std::thread::sleep(Duration::from_millis(100));
        }
        c.write_all(p.as_bytes()).unwrap();
    }
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

/// `tcp-request content do-resolve` in a TCP frontend (with an
/// inspect-delay) and in an HTTP one, frontend and backend rules. The
/// replies are HAProxy 2.6.12's for the same configuration against
/// dnsmasq: "A", "B", "A"; `t=10.20.30.40 after=yes` and `t=10.20.30.40
/// b=10.20.30.41 after=yes`; without an inspect-delay the action cannot
/// wait and the variables stay unset (`t= b= after=yes`).
#[test]
fn tcp_request_content_do_resolve() {
    let Some(bin) = require_dnsmasq("tcp_request_content_do_resolve") else {
        return;
    };
    let ip = test_ip();
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        "10.20.30.40 app.test\n10.20.30.41 other.test\n",
        &[],
    );
    let (a, b) = (tag_origin(ip, "A"), tag_origin(ip, "B"));
    let (tcp, http, nodelay) = (free_addr(ip), free_addr(ip), free_addr(ip));
    let http_section = |name: &str, bind: SocketAddr, delay: &str| {
        format!(
            "frontend {name}\n    mode http\n    bind {bind}\n{delay}\
    tcp-request content do-resolve(txn.t,mydns,ipv4) str(app.test)\n\
    tcp-request content set-var(txn.after) str(yes)\n\
    http-request return status 200 content-type text/plain lf-string \"t=%[var(txn.t)] after=%[var(txn.after)]\" if {{ path /fe }}\n\
    default_backend {name}_bk\n\
backend {name}_bk\n    mode http\n{delay}\
    tcp-request content do-resolve(txn.b,mydns) str(other.test)\n\
    http-request return status 200 content-type text/plain lf-string \"t=%[var(txn.t)] b=%[var(txn.b)] after=%[var(txn.after)]\"\n"
        )
    };
    let cfg = format!(
        "global\n    nbthread 2\n\
resolvers mydns\n    nameserver dns1 {}\n    timeout retry 300ms\n    resolve_retries 2\n\
defaults\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend ft\n    mode tcp\n    bind {tcp}\n    tcp-request inspect-delay 5s\n\
    tcp-request content do-resolve(sess.ip,mydns,ipv4) req.payload(0,8) if {{ req.len ge 8 }}\n\
    tcp-request content set-var(sess.after) str(yes)\n\
    tcp-request content reject if !{{ var(sess.after) -m found }}\n\
    use_backend bk_a if {{ var(sess.ip) -m ip 10.20.30.40 }}\n\
    default_backend bk_b\n\
backend bk_a\n    mode tcp\n    server a {a}\n\
backend bk_b\n    mode tcp\n    server b {b}\n\
{}{}",
        dns.addr,
        http_section("fh", http, "    tcp-request inspect-delay 5s\n"),
        http_section("fn", nodelay, ""),
    );
    let p = Proxy::start(&cfg, &[tcp, http, nodelay]);
    assert_eq!(tcp_exchange(tcp, &["app.test"]), "A", "{}", p.stderr());
    assert_eq!(tcp_exchange(tcp, &["zzz.test"]), "B");
    assert_eq!(tcp_exchange(tcp, &["app", ".test"]), "A");
    let body = |bind: SocketAddr, path: &str| {
        let r = request(
            bind,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(r.status, 200, "{}", r.body_str());
        r.body_str()
    };
    assert_eq!(body(http, "/fe"), "t=10.20.30.40 after=yes");
    assert_eq!(body(http, "/x"), "t=10.20.30.40 b=10.20.30.41 after=yes");
    assert_eq!(body(nodelay, "/fe"), "t= after=yes");
    assert_eq!(body(nodelay, "/x"), "t= b= after=yes");
}

#[test]
fn do_resolve_needs_a_known_resolvers_section() {
    let bind = free_addr(test_ip());
    let cfg = resolve_cfg("127.0.0.1:53".parse().unwrap(), bind, free_addr(test_ip())).replace(
        "do-resolve(txn.a,mydns,ipv4)",
        "do-resolve(txn.a,nodns,ipv4)",
    );
    let path = write_cfg(&cfg);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .args(["-c", "-f"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("can't find resolvers section 'nodns'"),
        "{err}"
    );
}

/// The next datagram: priority and message.
fn recv(s: &UdpSocket) -> (u8, String) {
    let mut buf = [0u8; 4096];
    let n = s.recv(&mut buf).expect("a log datagram");
    let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
    let pri = line[1..line.find('>').unwrap()].parse().unwrap();
    let msg = line.split_once("]: ").unwrap().1.to_string();
    (pri, msg)
}

#[test]
fn dns_events_go_to_the_backend_log_targets() {
    let Some(bin) = require_dnsmasq("dns_events_go_to_the_backend_log_targets") else {
        return;
    };
    let ip = test_ip();
    let dns = Dnsmasq::start(&bin, &test_ip().to_string(), "127.0.0.51 app.test\n", &[]);
    let syslog = UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
    syslog
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    log {} local0\n\
resolvers mydns\n    nameserver dns1 {}\n    timeout resolve 100ms\n    timeout retry 200ms\n    resolve_retries 1\n    hold nx 500ms\n    hold valid 1s\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    log global\n    server s1 app.test:80 resolvers mydns resolve-prefer ipv4 init-addr none\n",
        syslog.local_addr().unwrap(),
        dns.addr
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // local0 (16): notice is 133, alert 129, emerg 128.
    let n = |m: &str| (133u8, m.to_string());
    assert_eq!(
        recv(&syslog),
        n("bk/s1 changed its IP from (none) to 127.0.0.51 by mydns/dns1.")
    );
    assert_eq!(
        recv(&syslog),
        n("Server bk/s1 ('app.test') is UP/READY (resolves again).")
    );
    assert_eq!(
        recv(&syslog),
        n("Server bk/s1 administratively READY thanks to valid DNS answer.")
    );
    dns.set_hosts("127.0.0.52 app.test\n");
    assert_eq!(
        recv(&syslog),
        n("bk/s1 changed its IP from 127.0.0.51 to 127.0.0.52 by mydns/dns1.")
    );
    dns.set_hosts("");
    assert_eq!(
        recv(&syslog),
        (
            129,
            "Server bk/s1 is going DOWN for maintenance (DNS NX status). 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.".to_string()
        )
    );
    assert_eq!(
        recv(&syslog),
        (128, "backend bk has no server available!".to_string())
    );
}
