//! HTTP/2 health checks end to end, with HAProxy 2.6 as the oracle: the
//! same checking configuration (`check-proto h2`, `http-check connect
//! proto h2`, TLS with ALPN `h2` from `alpn` or `check-alpn`) runs in the
//! real `fairlead` binary and in HAProxy, against HAProxy HTTP/2 servers
//! (clear and TLS), `h2` crate servers that reset the stream or send a
//! GOAWAY, and a server that only speaks HTTP/1; `show stat` must
//! give both the same status, check status and code, and the values
//! written here.
//!
//! Loopback addresses 127.0.0.236 to 127.0.0.238 are this file's.

mod common;

use common::tls::Pki;
use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

fn sock_path(tag: &str) -> PathBuf {
    admin_sock("hh2", tag)
}

/// `status check_status[/check_code]` of `be/sv`.
fn state(sock: &Path, be: &str, sv: &str) -> String {
    let code = stat_of(sock, be, sv, "check_code");
    // HAProxy marks a check in progress with "* ".
    let chk = stat_of(sock, be, sv, "check_status");
    let mut s = format!(
        "{} {}",
        stat_of(sock, be, sv, "status"),
        chk.trim_start_matches("* ")
    );
    if !code.is_empty() {
        s = format!("{s}/{code}");
    }
    s
}

/// A server that only speaks HTTP/1: reads, answers a 400, closes.
fn h1_server(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.read(&mut [0u8; 1024]);
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    addr
}

/// An HTTP/2 server (the `h2` crate) that resets every stream
/// (`goaway` false: RST_STREAM REFUSED_STREAM) or sends a GOAWAY that
/// leaves the request out (last stream 0) and closes.
fn h2_refusing(ip: &str, goaway: bool) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((tcp, _)) = l.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    if goaway {
                        conn.abrupt_shutdown(h2::Reason::NO_ERROR);
                    }
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                    }
                });
            }
        });
    });
    addr
}

/// The HTTP/2 servers: `ok` answers 200 only to the check's request in
/// HTTP/2 (GET /x, Host example.org, X-Custom yes), `bad` 503, `tls`
/// (ALPN h2 or http/1.1) 200 to HTTP/2 and 426 to HTTP/1, `tls_h2` the
/// same in HTTP/2 only, without ALPN.
fn peer_cfg(s: &Servers, pem: &Path) -> String {
    let (ok, bad, tls, tls_h2) = (s.ok, s.bad, s.tls, s.tls_h2);
    format!(
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
frontend ok\n    bind {ok} proto h2\n\
    http-request return status 200 content-type text/plain string \"alive and well\" if {{ method GET }} {{ path /x }} {{ req.hdr(host) example.org }} {{ req.hdr(x-custom) yes }} {{ req.ver 2.0 }}\n\
    http-request return status 404\n\
frontend bad\n    bind {bad} proto h2\n    http-request return status 503\n\
frontend tls\n    bind {tls} ssl crt {} alpn h2,http/1.1\n\
    http-request return status 200 if {{ req.ver 2.0 }} {{ path /x }}\n\
    http-request return status 426\n\
frontend tls_h2\n    bind {tls_h2} ssl crt {} proto h2\n\
    http-request return status 200 if {{ req.ver 2.0 }} {{ path /x }}\n",
        pem.display(),
        pem.display()
    )
}

/// The checking configuration, the same for Fairlead and HAProxy.
fn checker_cfg(bind: SocketAddr, sock: &Path, s: &Servers) -> String {
    let opts = "check inter 100ms rise 1 fall 1";
    let tls = s.tls;
    format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n    timeout check 1s\n\
frontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    option httpchk GET /x\n    http-check send hdr Host example.org hdr X-Custom yes\n\
    server ok {} {opts} check-proto h2\n\
    server bad {} {opts} check-proto h2\n\
    server h1only {} {opts} check-proto h2\n\
    server h1check {} {opts}\n\
    server reset {} {opts} check-proto h2\n\
    server goaway {} {opts} check-proto h2\n\
    server tls_alpn {tls} {opts} ssl verify none alpn h2\n\
    server tls_check_alpn {tls} {opts} ssl verify none check-alpn h2\n\
    server tls_proto {tls} {opts} ssl verify none check-proto h2\n\
    server tls_h1 {tls} {opts} ssl verify none alpn h2 check-alpn http/1.1\n\
    server tls_forced_h1 {tls} {opts} ssl verify none check-alpn h2 check-proto h1\n\
    server tls_h2 {} {opts} ssl verify none check-proto h2\n\
backend content\n    option httpchk GET /x\n    http-check send hdr Host example.org hdr X-Custom yes\n\
    http-check expect string well\n\
    server ok {} {opts} check-proto h2\n\
backend nomatch\n    option httpchk GET /x\n    http-check send hdr Host example.org hdr X-Custom yes\n\
    http-check expect string sick\n\
    server ok {} {opts} check-proto h2\n\
backend connect\n    option httpchk GET /x\n    http-check connect proto h2\n\
    http-check send hdr Host example.org hdr X-Custom yes\n\
    server ok {} {opts}\n",
        sock.display(),
        s.ok,
        s.bad,
        s.h1,
        s.ok,
        s.reset,
        s.goaway,
        s.tls_h2,
        s.ok,
        s.ok,
        s.ok,
    )
}

struct Servers {
    ok: SocketAddr,
    bad: SocketAddr,
    h1: SocketAddr,
    tls: SocketAddr,
    tls_h2: SocketAddr,
    reset: SocketAddr,
    goaway: SocketAddr,
}

/// Every server's expected `status check_status[/code]`, in Fairlead and
/// in HAProxy 2.6.12.
const WANT: [(&str, &str, &str, &str); 15] = [
    ("b", "ok", "UP L7OK/200", "UP L7OK/200"),
    ("b", "bad", "DOWN L7STS/503", "DOWN L7STS/503"),
    // HTTP/2 to a server that answers in HTTP/1: the codec fails.
    ("b", "h1only", "DOWN SOCKERR", "DOWN SOCKERR"),
    // HTTP/1 to an HTTP/2-only listener.
    ("b", "h1check", "DOWN L7RSP", "DOWN L7RSP"),
    // The stream reset, or left out by a GOAWAY.
    ("b", "reset", "DOWN SOCKERR", "DOWN SOCKERR"),
    ("b", "goaway", "DOWN SOCKERR", "DOWN SOCKERR"),
    // The server's own `alpn h2` is offered and negotiated, but only
    // `check-alpn` lets ALPN choose the protocol: HTTP/1 to an HTTP/2
    // server.
    ("b", "tls_alpn", "DOWN L7RSP", "DOWN L7RSP"),
    ("b", "tls_check_alpn", "UP L7OK/200", "UP L7OK/200"),
    // `check-proto h2` over TLS: HTTP/2 with prior knowledge, which both
    // TLS listeners accept (curl --http2-prior-knowledge gets its 200).
    // HAProxy 2.6.12 installs its HTTP/2 layer before the TLS handshake
    // and never sends the request: every such check times out, whatever
    // the server (a defect Fairlead does not copy).
    ("b", "tls_proto", "UP L7OK/200", "DOWN L7TOUT"),
    ("b", "tls_h1", "DOWN L7STS/426", "DOWN L7STS/426"),
    // `check-proto h1` wins over the negotiated `h2`.
    ("b", "tls_forced_h1", "DOWN L7RSP", "DOWN L7RSP"),
    ("b", "tls_h2", "UP L7OK/200", "DOWN L7TOUT"),
    ("content", "ok", "UP L7OK/200", "UP L7OK/200"),
    ("nomatch", "ok", "DOWN L7RSP", "DOWN L7RSP"),
    ("connect", "ok", "UP L7OK/200", "UP L7OK/200"),
];

/// Polls until every server shows its expected state (`haproxy`: the
/// HAProxy column); returns the states seen.
fn wait_all(sock: &Path, haproxy: bool, log: impl Fn() -> String) -> Vec<String> {
    let end = std::time::Instant::now() + DEADLINE;
    let want: Vec<String> = WANT
        .iter()
        .map(|w| if haproxy { w.3 } else { w.2 }.to_string())
        .collect();
    loop {
        let seen: Vec<String> = WANT
            .iter()
            .map(|(be, sv, _, _)| state(sock, be, sv))
            .collect();
        if seen == want {
            return seen;
        }
        assert!(
            std::time::Instant::now() < end,
            "haproxy={haproxy}: got {seen:#?}\nwanted {want:#?}\n{}",
            log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn h2_checks_match_haproxy() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("skipped: haproxy is not installed (set HAPROXY=/path/to/haproxy)");
        return;
    };
    let pki = Pki::new("h2chk");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "srv", "h2.test");
    let servers = Servers {
        ok: free_addr("127.0.0.236".parse().unwrap()),
        bad: free_addr("127.0.0.236".parse().unwrap()),
        h1: h1_server("127.0.0.236"),
        tls: free_addr("127.0.0.236".parse().unwrap()),
        tls_h2: free_addr("127.0.0.236".parse().unwrap()),
        reset: h2_refusing("127.0.0.236", false),
        goaway: h2_refusing("127.0.0.236", true),
    };
    let _peer = Haproxy::start(&bin, &peer_cfg(&servers, &pem), &[], servers.tls_h2);
    // Fairlead.
    let fsock = sock_path("fairlead");
    let fbind = free_addr("127.0.0.237".parse().unwrap());
    let p = Proxy::start(&checker_cfg(fbind, &fsock, &servers), &[fbind]);
    wait_until("fairlead cli socket", || {
        std::os::unix::net::UnixStream::connect(&fsock).is_ok()
    });
    let fairlead = wait_all(&fsock, false, || p.stderr());
    assert!(
        p.stderr().contains(
            "Server b/bad is DOWN, reason: Layer7 wrong status, code: 503, check duration"
        ),
        "{}",
        p.stderr()
    );
    assert!(
        p.stderr().contains("Server nomatch/ok is DOWN, reason: Layer7 invalid response, info: \"HTTP content check did not match\""),
        "{}",
        p.stderr()
    );
    drop(p);
    // HAProxy, same configuration.
    let hsock = sock_path("haproxy");
    let hbind = free_addr("127.0.0.238".parse().unwrap());
    let _h = Haproxy::start(&bin, &checker_cfg(hbind, &hsock, &servers), &[], hbind);
    // HAProxy may listen on its TCP bind before its stats socket.
    wait_until("haproxy cli socket", || {
        std::os::unix::net::UnixStream::connect(&hsock).is_ok()
    });
    let haproxy = wait_all(&hsock, true, String::new);
    // Same results but where HAProxy times out over TLS (see WANT).
    let differ: Vec<&str> = WANT
        .iter()
        .zip(fairlead.iter().zip(&haproxy))
        .filter(|(_, (f, h))| f != h)
        .map(|(w, _)| w.1)
        .collect();
    assert_eq!(differ, ["tls_proto", "tls_h2"]);
}
