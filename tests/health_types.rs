//! The protocol health checks end to end: the real `fairlead` binary
//! checks real MariaDB, PostgreSQL, Exim, slapd and `openssl s_server`
//! instances (and a SPOP agent written here), and `show stat` shows each
//! server UP with HAProxy's status, or DOWN when a check type meets a
//! server that does not speak its protocol. A server with `socks4` is
//! reached, for requests and checks, through Dante.
//!
//! Loopback addresses 127.0.0.91 to 127.0.0.97 are this file's.

mod common;
#[path = "../crates/health/tests/servers/mod.rs"]
mod servers;

use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;

fn sock_path(tag: &str) -> PathBuf {
    admin_sock("ht", tag)
}

/// Polls `show stat` until `be/sv` has `status` and its check status
/// (`check_status`, then `/check_code` when there is one) starts with
/// `check`.
fn wait_stat(p: &Proxy, sock: &std::path::Path, be: &str, sv: &str, status: &str, check: &str) {
    let end = std::time::Instant::now() + DEADLINE;
    loop {
        let (st, mut chk) = (
            stat_of(sock, be, sv, "status"),
            stat_of(sock, be, sv, "check_status"),
        );
        let code = stat_of(sock, be, sv, "check_code");
        if !code.is_empty() {
            chk = format!("{chk}/{code}");
        }
        if st == status && chk.starts_with(check) {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "{be}/{sv}: {st} {chk}, wanted {status} {check}\n{}",
            p.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A SPOP agent answering AGENT-HELLO (version 2.0) to any HELLO.
fn spop_agent(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut len = [0u8; 4];
                if c.read_exact(&mut len).is_err() {
                    return;
                }
                let mut f = vec![0u8; u32::from_be_bytes(len) as usize];
                if c.read_exact(&mut f).is_err() {
                    return;
                }
                let mut r = vec![101, 0, 0, 0, 1, 0, 0, 7];
                r.extend_from_slice(b"version");
                r.extend_from_slice(&[8, 3]);
                r.extend_from_slice(b"2.0");
                r.push(14);
                r.extend_from_slice(b"max-frame-size");
                r.extend_from_slice(&[3, 0xfc, 0xf0, 0x06]);
                let mut out = (r.len() as u32).to_be_bytes().to_vec();
                out.extend_from_slice(&r);
                let _ = c.write_all(&out);
                let _ = c.read(&mut [0u8; 8]);
            });
        }
    });
    addr
}

/// Each protocol check on its real server is UP with HAProxy's status
/// (`L7OK`, `L7OK/221` for SMTP, `L6OK` for the SSL hello), and DOWN on a
/// server of another protocol.
#[test]
fn protocol_checks_show_in_stats() {
    let db = servers::mariadb("127.0.0.91");
    let pg = servers::postgres("127.0.0.92");
    let mta = servers::exim("127.0.0.93");
    let ldap = servers::slapd("127.0.0.94", false);
    let tls = servers::tls_server("127.0.0.95");
    let spop = spop_agent("127.0.0.95");
    let sock = sock_path("proto");
    let stats_bind = servers::free_port("127.0.0.91");
    let backend = |name: &str, option: &str, good: SocketAddr, bad: SocketAddr| {
        format!(
            "backend {name}\n    mode tcp\n    option {option}\n\
    server good {good} check inter 100ms rise 1 fall 1\n\
    server bad {bad} check inter 100ms rise 1 fall 1\n"
        )
    };
    let cfg = format!(
        "global\n    nbthread 1\n    stats socket {} level admin\n\
defaults\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n    timeout check 2s\n\
frontend fe\n    mode tcp\n    bind {stats_bind}\n    default_backend mysql\n\
{}{}{}{}{}{}",
        sock.display(),
        backend("mysql", "mysql-check user haproxy", db.addr, pg.addr),
        backend("pgsql", "pgsql-check user postgres", pg.addr, mta.addr),
        backend("smtp", "smtpchk EHLO fairlead.test", mta.addr, ldap.addr),
        backend("ldap", "ldap-check", ldap.addr, mta.addr),
        backend("sslhello", "ssl-hello-chk", tls.addr, mta.addr),
        backend("spop", "spop-check", spop, db.addr),
    );
    let p = Proxy::start(&cfg, &[stats_bind]);
    wait_until("cli socket", || {
        std::os::unix::net::UnixStream::connect(&sock).is_ok()
    });
    for (be, ok) in [
        ("mysql", "L7OK"),
        ("pgsql", "L7OK"),
        ("smtp", "L7OK/221"),
        ("ldap", "L7OK"),
        ("sslhello", "L6OK"),
        ("spop", "L7OK"),
    ] {
        wait_stat(&p, &sock, be, "good", "UP", ok);
    }
    // MySQL's check on PostgreSQL: no valid MySQL packet; pgsql on Exim:
    // the greeting is no authentication reply; SMTP on slapd: no banner
    // (slapd waits, the check times out); LDAP on Exim: not LDAPv3; the
    // SSL hello on Exim: no TLS record; SPOP on MariaDB: no AGENT-HELLO.
    for (be, bad) in [
        ("mysql", "L7"),
        ("pgsql", "L7STS"),
        ("smtp", "L7TOUT"),
        ("ldap", "L7RSP"),
        ("sslhello", "L6RSP"),
        ("spop", "L7RSP"),
    ] {
        wait_stat(&p, &sock, be, "bad", "DOWN", bad);
    }
    assert!(p.stderr().contains("Server ldap/bad is DOWN, reason: Layer7 invalid response, info: \"Not LDAPv3 protocol\""), "{}", p.stderr());
}

/// A server with `socks4` and `check-via-socks4`: requests and checks go
/// through Dante (the origin sees Dante's address); a destination Dante
/// refuses is DOWN with "SOCKS4 Proxy deny the request".
#[test]
fn socks4_server_through_dante() {
    let ip: IpAddr = "127.0.0.96".parse().unwrap();
    let (_t, origin) = term(ip, "behind-socks");
    let refused = servers::free_port("127.0.0.96");
    let proxy = servers::dante("127.0.0.97", refused);
    let sock = sock_path("socks");
    let bind = servers::free_port("127.0.0.97");
    let cfg = format!(
        "global\n    nbthread 1\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n\
    server s {origin} socks4 {} check-via-socks4 check inter 100ms rise 1 fall 1\n\
    server r {refused} socks4 {} check-via-socks4 check inter 100ms rise 1 fall 1\n",
        sock.display(),
        proxy.addr,
        proxy.addr
    );
    let p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || {
        std::os::unix::net::UnixStream::connect(&sock).is_ok()
    });
    wait_stat(&p, &sock, "bk", "s", "UP", "L4OK");
    wait_stat(&p, &sock, "bk", "r", "DOWN", "L4CON");
    assert!(
        p.stderr().contains("Server bk/r is DOWN, reason: Layer4 connection problem, info: \"SOCKS4 Proxy deny the request\""),
        "{}",
        p.stderr()
    );
    let r = get(bind, "/");
    assert_eq!(r.status, 200, "{}", p.stderr());
    assert_eq!(r.header("x-served-by"), Some("behind-socks"));
}
