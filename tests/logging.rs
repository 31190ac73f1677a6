//! Logs end to end: the real binary sends syslog datagrams to a UDP socket
//! of the test, in HAProxy's formats.

mod common;
use common::*;
use std::net::UdpSocket;
use std::time::Duration;

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

/// The message part after the syslog header (`... fairlead[pid]: `).
fn message(line: &str) -> &str {
    line.split_once("]: ").map_or(line, |(_, m)| m)
}

#[test]
fn httplog_line_has_haproxy_fields() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        &format!("    log {log_addr} local0\n    option httplog\n    option dontlognull"),
        &format!("    server s1 {a}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let s = connect(bind);
    let client_port = s.local_addr().unwrap().port();
    let client_ip = s.local_addr().unwrap().ip();
    let mut w = s.try_clone().unwrap();
    std::io::Write::write_all(
        &mut w,
        b"GET /?s=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
    assert_eq!(r.status, 200);
    let line = recv(&sock);
    assert!(line.starts_with("<134>"), "local0.info priority: {line}");
    let msg = message(&line);
    // 127.0.0.1:34082 [22/Nov/2026:02:58:15.123] fe bk/s1 0/0/1/2/3 200 123 - - ---- 1/1/0/0/0 0/0 "GET /?s=3 HTTP/1.1"
    let f: Vec<&str> = msg.split(' ').collect();
    assert_eq!(f[0], format!("{client_ip}:{client_port}"), "{msg}");
    assert!(
        f[1].starts_with('[') && f[1].ends_with(']') && f[1].len() == 26,
        "{msg}"
    );
    assert_eq!(f[2], "fe");
    assert_eq!(f[3], "bk/s1");
    let timers: Vec<i64> = f[4].split('/').map(|t| t.parse().unwrap()).collect();
    assert_eq!(timers.len(), 5, "{msg}");
    assert!(timers.iter().all(|&t| t >= 0), "{msg}");
    assert_eq!(f[5], "200");
    assert!(f[6].parse::<u64>().unwrap() > 3, "bytes: {msg}");
    assert_eq!((f[7], f[8], f[9]), ("-", "-", "----"), "{msg}");
    // %ac/%fc/%bc/%sc/%rc: the logging connection itself is counted.
    let conns: Vec<u32> = f[10].split('/').map(|c| c.parse().unwrap()).collect();
    assert_eq!(conns.len(), 5, "{msg}");
    assert!(conns[0] >= 1 && conns[1] >= 1, "actconn/feconn: {msg}");
    assert!(msg.ends_with("\"GET /?s=3 HTTP/1.1\""), "{msg}");
}

#[test]
fn errors_are_logged_with_termination_state() {
    let ip = test_ip();
    let (sock, log_addr) = syslog(ip);
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        &format!(
            "    log {log_addr} local0\n    option httplog\n    option dontlognull\n    retries 0"
        ),
        &format!("    server s1 {dead}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    assert_eq!(get(bind, "/x").status, 503);
    let msg = recv(&sock);
    assert!(msg.contains(" fe bk/s1 "), "{msg}");
    assert!(msg.contains(" 503 "), "{msg}");
    assert!(msg.contains(" SC-- "), "connection refused = SC: {msg}");
    // A bad request: PR-- and <BADREQ>-style request field.
    let mut s = connect(bind);
    std::io::Write::write_all(&mut s, b"NOT A REQUEST\r\n\r\n").unwrap();
    let _ = read_all(&mut s);
    let msg = recv(&sock);
    assert!(msg.contains(" 400 "), "{msg}");
    assert!(msg.contains(" PR-- "), "{msg}");
}

#[test]
fn tcplog_and_json_formats() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        &format!("    log {log_addr} local0\n    option httplog-json\n    option dontlognull"),
        &format!("    server s1 {a}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    assert_eq!(get(bind, "/j").status, 200);
    let msg = recv(&sock);
    let json = message(&msg);
    assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
    assert!(
        json.contains("\"status_code\":200") || json.contains("200"),
        "{json}"
    );
    // dontlognull: a connection that sends nothing leaves no line.
    let bind2 = free_addr(ip);
    let cfg2 = http_cfg(
        bind2,
        &format!("    log {log_addr} local0\n    option httplog\n    option dontlognull\n    timeout http-request 100ms"),
        &format!("    server s1 {a}"),
    );
    let _p2 = Proxy::start(&cfg2, &[bind2]);
    let mut empty = connect(bind2);
    let _ = read_all(&mut empty);
    assert_eq!(get(bind2, "/after").status, 200);
    let msg = recv(&sock);
    assert!(
        msg.contains("/after"),
        "the empty connection was logged first: {msg}"
    );
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 512];
    assert!(sock.recv(&mut buf).is_err(), "one line per request only");
}

#[test]
fn tcplog_line() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n    log {log_addr} local0\n    option tcplog\n    option dontlognull\n\
listen app\n    bind {bind}\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    assert_eq!(get(bind, "/?s=10").status, 200);
    let msg = recv(&sock);
    let m = message(&msg);
    // 127.0.0.1:38920 [22/Nov/2026:03:30:00.123] app app/s1 0/0/5 123 -- 0/0/0/0/0 0/0
    let f: Vec<&str> = m.split(' ').collect();
    assert!(f[0].contains(':'), "{m}");
    assert!(f[1].starts_with('[') && f[1].ends_with(']'), "{m}");
    assert_eq!(f[2], "app", "{m}");
    assert_eq!(f[3], "app/s1", "{m}");
    assert_eq!(f[4].split('/').count(), 3, "{m}");
    assert!(f[5].parse::<u64>().unwrap() > 10, "{m}");
    assert_eq!(f[6], "--", "{m}");
}

#[test]
fn empty_connections_are_logged_unless_dontlognull() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = http_cfg(
        bind,
        &format!("    log {log_addr} local0\n    option httplog"),
        &format!("    server s1 {a}"),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // The harness's readiness probe, then ours: connect and close.
    drop(connect(bind));
    let msg = recv(&sock);
    assert!(msg.contains(" CR-- "), "{msg}");
    assert!(msg.contains("<BADREQ>"), "{msg}");
}

/// Server-side failures end with HAProxy's status and termination state,
/// and `retry-on` retries are counted in the log's retries field (`%rc`,
/// the last of the five connection counts): junk head `502 PH--`, a
/// connection closed before any byte `502 SH--` (after the two retries
/// `retry-on empty-response` allows), a head cut short `502 SH--`, and a
/// response slower than `timeout server` `504 sH--`.
#[test]
fn server_failures_have_haproxys_termination_states() {
    use std::io::{BufReader, Write};
    let ip = test_ip();
    let (sock, log_addr) = syslog(ip);
    let origin = |reply: &'static [u8], delay_ms: u64| {
        raw_origin(ip, move |s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            if read_head(&mut r).is_some() {
                std::thread::sleep(Duration::from_millis(delay_ms));
                let _ = (&s).write_all(reply);
            }
        })
    };
    // (origin reply, its delay in ms, extra defaults, status, state, retries)
    type Case = (
        &'static [u8],
        u64,
        &'static str,
        u16,
        &'static str,
        &'static str,
    );
    let cases: [Case; 4] = [
        (b"HTTP/1.1 2x0 what\r\n\r\n", 0, "", 502, "PH--", "0"),
        (b"", 0, "    retry-on empty-response\n", 502, "SH--", "2"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", 0, "", 502, "SH--", "0"),
        (
            b"HTTP/1.1 200 OK\r\n\r\n",
            1500,
            "    timeout server 300ms\n",
            504,
            "sH--",
            "0",
        ),
    ];
    for (reply, delay, extra, status, term, retries) in cases {
        let (o, accepted) = origin(reply, delay);
        let bind = free_addr(ip);
        let cfg = http_cfg(
            bind,
            &format!(
                "    log {log_addr} local0\n    option httplog\n    option dontlognull\n    retries 2\n{extra}"
            ),
            &format!("    server s1 {o}"),
        );
        let _p = Proxy::start(&cfg, &[bind]);
        assert_eq!(get(bind, "/f").status, status, "{term}");
        let msg = recv(&sock);
        let f: Vec<&str> = message(&msg).split(' ').collect();
        assert_eq!((f[5], f[9]), (status.to_string().as_str(), term), "{msg}");
        assert_eq!(f[10].rsplit('/').next(), Some(retries), "retries: {msg}");
        let tries = retries.parse::<u32>().unwrap() + 1;
        wait_until("every attempt reached the origin", || {
            accepted.load(std::sync::atomic::Ordering::SeqCst) == tries
        });
    }
}

/// `capture cookie NAME len N`: `%CC` is the first request cookie whose
/// name starts with NAME, `%CS` the first such `Set-Cookie` of the
/// response (after the `http-response` rules, as in HAProxy), each as
/// `name=value` cut to N bytes; `-` without one.
#[test]
fn capture_cookie_fills_cc_and_cs() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option httplog\n    option dontlognull\n\
    capture cookie SESSIONID len 20\n    default_backend bk\n\
backend bk\n    http-response add-header Set-Cookie \"other=1; Path=/\"\n\
    http-response add-header Set-Cookie \"SESSIONIDsrv=abc; Path=/\" if {{ path /set }}\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let r = request(
        bind,
        "GET /set HTTP/1.1\r\nHost: x\r\nCookie: other=1; SESSIONID_x=verylongvalue123; SESSIONID=2\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let line = recv(&sock);
    let f: Vec<&str> = message(&line).split(' ').collect();
    assert_eq!(
        (f[7], f[8]),
        ("SESSIONID_x=verylong", "SESSIONIDsrv=abc"),
        "{line}"
    );
    // Neither side has one.
    let r = request(
        bind,
        "GET /no HTTP/1.1\r\nHost: x\r\nCookie: SESSION=1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let line = recv(&sock);
    let f: Vec<&str> = message(&line).split(' ').collect();
    assert_eq!((f[7], f[8]), ("-", "-"), "{line}");
}

/// `%[expr]` in `log-format`: fetches and converters evaluated for the
/// log line against the transaction (variables rules set, the method, the
/// status; header values go through a variable, since HAProxy 2.6 refuses
/// them at log time), for a forwarded request and for a response the
/// proxy made itself. The expected lines are HAProxy 2.6.12's for the
/// same configuration and requests.
#[test]
fn log_format_sample_expressions() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n\
    log-format \"%ST %[var(txn.host),lower] %{{+Q}}[var(txn.x)] %[status] %[method,lower] %[var(txn.none)] %[var(txn.srv)]\"\n\
    http-request set-var(txn.host) req.hdr(host)\n    http-request set-var(txn.x) str(from-rule)\n\
    http-request return status 404 if {{ path /local }}\n    use_backend empty if {{ path /none }}\n    default_backend bk\n\
backend bk\n    http-response set-var(txn.srv) res.hdr(x-served-by)\n    server s1 {a}\n\
backend empty\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let r = request(
        bind,
        "GET /a/b HTTP/1.1\r\nHost: WWW.Example.COM\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let line = recv(&sock);
    assert_eq!(
        message(&line),
        "200 www.example.com \"from-rule\" 200 get - o",
        "{line}"
    );
    let r = request(
        bind,
        "POST /local HTTP/1.1\r\nHost: Local.Test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 404);
    let line = recv(&sock);
    assert_eq!(
        message(&line),
        // The reply is gone at log time: `%[status]` is `-` (HAProxy too).
        "404 local.test \"from-rule\" - post - -",
        "{line}"
    );
    // An error the proxy answers (no server): the same.
    let r = request(
        bind,
        "GET /none HTTP/1.1\r\nHost: None.Test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 503);
    let line = recv(&sock);
    assert_eq!(
        message(&line),
        "503 none.test \"from-rule\" - get - -",
        "{line}"
    );
}

/// `unique-id-format` in the log line (`%ID`, `%[unique-id]`): made when
/// the request goes to a backend, or, for a reply the proxy made, at log
/// time once the request's headers are gone. The expected lines are
/// HAProxy 2.6.12's for the same configuration and requests.
#[test]
fn unique_id_in_the_log_line() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n\
    unique-id-format %[req.hdr(x-req),lower]-%HM\n    log-format \"%ID %[unique-id] %ST\"\n\
    http-request return status 404 if {{ path /local }}\n    default_backend bk\n\
backend bk\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for (path, status, want) in [
        ("/a", 200, "abc-GET abc-GET 200"),
        ("/local", 404, "-GET -GET 404"),
    ] {
        let r = request(
            bind,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\nX-Req: ABC\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(r.status, status);
        let line = recv(&sock);
        assert_eq!(message(&line), want, "{line}");
    }
}
