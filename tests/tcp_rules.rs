//! The TCP side of the rule layer end to end (HAProxy 2.6's section 4.2):
//! `tcp-request connection` by source address, `tcp-request session` on
//! the SNI of a terminated TLS connection, `tcp-request content` with
//! `tcp-request inspect-delay` (TLS SNI routing with real ClientHellos,
//! `req.len` / `req.payload` on a plaintext line, expiry of the delay,
//! `reject`), static and dynamic `use_backend`, `tcp-response content`,
//! and the chosen backend in the log line.
//!
//! Each configuration also runs through HAProxy when it is installed
//! (`haproxy` on PATH, or `$HAPROXY`), with the same assertions.

mod common;
use common::tls::{s_client, Pki};
use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A `global`/`defaults` preamble for TCP mode, then `body`.
fn tcp_cfg(body: &str) -> String {
    format!(
        "global\n    nbthread 2\n\
defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\n{body}\n"
    )
}

/// Runs `check` against Fairlead, then against HAProxy when installed,
/// each on a fresh address of `ip`; `cfg` makes the configuration for a
/// bind address. `check` gets the bind address and the proxy's name.
fn on_both(ip: IpAddr, cfg: impl Fn(SocketAddr) -> String, check: impl Fn(SocketAddr, &str)) {
    let bind = free_addr(ip);
    let p = Proxy::start(&cfg(bind), &[bind]);
    check(bind, "fairlead");
    drop(p);
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy is not installed: the oracle comparison is skipped");
        return;
    };
    let bind = free_addr(ip);
    let _h = Haproxy::start(&bin, &cfg(bind), &[], bind);
    check(bind, "haproxy");
}

/// Everything a socket delivers until EOF, a reset or the deadline.
fn read_bytes(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Connects to `addr`, sends `parts` (pausing briefly between them so
/// that the proxy is likely to see a partial message; the outcome must
/// not depend on it), and returns everything received.
fn exchange(addr: SocketAddr, parts: &[&[u8]]) -> Vec<u8> {
    let mut s = connect(addr);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(30));
        }
        if s.write_all(p).is_err() {
            break;
        }
    }
    read_bytes(&mut s)
}

/// An origin that reads one line, answers `<name>: <line>` and closes.
/// The counter counts the lines it served (not bare connections such as
/// the readiness probes of the test harness).
fn line_origin(ip: IpAddr, name: &'static str) -> (SocketAddr, Arc<AtomicU32>) {
    let served = Arc::new(AtomicU32::new(0));
    let count = served.clone();
    let (addr, _) = raw_origin(ip, move |mut s| {
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while let Ok(1) = s.read(&mut b) {
            line.push(b[0]);
            if b[0] == b'\n' {
                break;
            }
        }
        if line.is_empty() {
            return;
        }
        count.fetch_add(1, Ordering::SeqCst);
        let mut reply = format!("{name}: ").into_bytes();
        reply.extend_from_slice(&line);
        let _ = s.write_all(&reply);
    });
    (addr, served)
}

/// Reads one TLS record (a ClientHello): header, then its length.
fn read_record(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut rec = vec![0u8; 5];
    s.read_exact(&mut rec).ok()?;
    let len = u16::from_be_bytes([rec[3], rec[4]]) as usize;
    rec.resize(5 + len, 0);
    s.read_exact(&mut rec[5..]).ok()?;
    Some(rec)
}

/// An origin that reads one TLS record and answers `<name>\n` followed by
/// the record exactly as it arrived, then closes.
fn hello_origin(ip: IpAddr, name: &'static str) -> (SocketAddr, Arc<AtomicU32>) {
    raw_origin(ip, move |mut s| {
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        let rec = read_record(&mut s).unwrap_or_default();
        let mut reply = format!("{name}\n").into_bytes();
        reply.extend_from_slice(&rec);
        let _ = s.write_all(&reply);
    })
}

/// A real ClientHello for `sni`: `openssl s_client` connects to a
/// listener of the test, which keeps the first record and hangs up.
fn capture_hello(ip: IpAddr, sni: &str) -> Vec<u8> {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    let sni = sni.to_string();
    let client = std::thread::spawn(move || s_client(addr, &["-servername", &sni], b""));
    let (mut s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let rec = read_record(&mut s).expect("a ClientHello");
    assert_eq!(rec[0], 22, "a handshake record");
    assert_eq!(rec[5], 1, "a ClientHello");
    drop(s);
    let _ = client.join();
    rec
}

/// Splits an origin's answer into its first line and the rest.
fn split_reply(r: &[u8]) -> (String, &[u8]) {
    let i = r.iter().position(|&b| b == b'\n').unwrap_or(r.len());
    let rest = if i < r.len() { &r[i + 1..] } else { &[][..] };
    (String::from_utf8_lossy(&r[..i]).into_owned(), rest)
}

/// A client socket bound to the source address `src` before connecting.
/// A connection the proxy resets at once may fail in connect itself.
fn connect_from(src: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(src, 0).into())?;
    s.connect_timeout(&addr.into(), DEADLINE)?;
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(DEADLINE))?;
    Ok(s)
}

#[test]
fn connection_rules_reject_by_source_address() {
    let ip = test_ip();
    let other = test_ip();
    let (origin, count) = line_origin(ip, "be");
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request connection reject if {{ src {ip} }}\n    default_backend be\n\
backend be\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let before = count.load(Ordering::SeqCst);
        // From the refused address: reset at once, nothing delivered.
        if let Ok(mut s) = connect_from(ip, bind) {
            let _ = s.write_all(b"hello\n");
            let got = read_bytes(&mut s);
            assert!(got.is_empty(), "{who}: refused source got data");
        }
        // From another address: served.
        let mut s = connect_from(other, bind).unwrap();
        s.write_all(b"hello\n").unwrap();
        assert_eq!(read_bytes(&mut s), b"be: hello\n", "{who}");
        assert_eq!(
            count.load(Ordering::SeqCst),
            before + 1,
            "{who}: one stream"
        );
    });
}

/// The classic SNI router, in front of two backends that check they got
/// the ClientHello byte for byte.
fn sni_cfg(bind: SocketAddr, a: SocketAddr, b: SocketAddr, d: SocketAddr, log: &str) -> String {
    tcp_cfg(&format!(
        "frontend fe\n    bind {bind}\n{log}    tcp-request inspect-delay 5s\n    tcp-request content accept if {{ req_ssl_hello_type 1 }}\n\
    use_backend be_a if {{ req.ssl_sni -i a.example.com }}\n    use_backend be_b if {{ req.ssl_sni -i b.example.com }}\n    default_backend be_default\n\
backend be_a\n    server a {a}\nbackend be_b\n    server b {b}\nbackend be_default\n    server d {d}"
    ))
}

#[test]
fn sni_routing_with_real_client_hellos() {
    let ip = test_ip();
    let (a, ca) = hello_origin(ip, "be_a");
    let (b, cb) = hello_origin(ip, "be_b");
    let (d, _) = hello_origin(ip, "be_default");
    let hellos = [
        ("a.example.com", capture_hello(ip, "a.example.com"), "be_a"),
        ("B.Example.com", capture_hello(ip, "B.Example.com"), "be_b"),
        (
            "c.example.com",
            capture_hello(ip, "c.example.com"),
            "be_default",
        ),
    ];
    on_both(
        ip,
        |bind| sni_cfg(bind, a, b, d, ""),
        |bind, who| {
            for (sni, hello, want) in &hellos {
                // Split inside the record: the rules must wait for the rest.
                let reply = exchange(bind, &[&hello[..9], &hello[9..]]);
                let (name, echoed) = split_reply(&reply);
                assert_eq!(&name, want, "{who}: {sni}");
                assert!(
                    echoed == &hello[..],
                    "{who}: {sni}: the server got other bytes"
                );
            }
            // A live TLS client: its handshake goes to be_a (which answers
            // garbage, so the handshake itself fails).
            let (na, nb) = (ca.load(Ordering::SeqCst), cb.load(Ordering::SeqCst));
            let _ = s_client(bind, &["-servername", "a.example.com"], b"");
            assert_eq!(
                ca.load(Ordering::SeqCst),
                na + 1,
                "{who}: be_a got the client"
            );
            assert_eq!(cb.load(Ordering::SeqCst), nb, "{who}");
        },
    );
}

#[test]
fn payload_and_length_switch_a_plaintext_protocol() {
    let ip = test_ip();
    let (hello, _) = line_origin(ip, "be_hello");
    let (other, _) = line_origin(ip, "be_other");
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content accept if {{ req.len ge 6 }}\n\
    use_backend be_hello if {{ req.payload(0,6) -m bin 48454c4c4f20 }}\n    default_backend be_other\n\
backend be_hello\n    server h {hello}\nbackend be_other\n    server o {other}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        // "HEL" alone is too short: `req.len ge 6` waits for more.
        let r = exchange(bind, &[b"HEL", b"LO world\n"]);
        assert_eq!(r, b"be_hello: HELLO world\n", "{who}");
        let r = exchange(bind, &[b"QUIT", b" now\n"]);
        assert_eq!(r, b"be_other: QUIT now\n", "{who}");
        // The client closes before the length is reached: the evaluation
        // is final at once, and the server gets the bytes and the close.
        let mut s = connect(bind);
        s.write_all(b"HEL").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(read_bytes(&mut s), b"be_other: HEL", "{who}");
    });
}

#[test]
fn inspect_delay_expiry_routes_a_silent_client_to_the_default() {
    let ip = test_ip();
    let (tls, tls_count) = hello_origin(ip, "be_tls");
    // A server that speaks first.
    let (greeter, _) = raw_origin(ip, |mut s| {
        let _ = s.write_all(b"be_default greets\n");
    });
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request inspect-delay 200ms\n    tcp-request content accept if {{ req.ssl_hello_type 1 }}\n\
    use_backend be_tls if {{ req.ssl_hello_type 1 }}\n    default_backend be_default\n\
backend be_tls\n    server t {tls}\nbackend be_default\n    server d {greeter}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let before = tls_count.load(Ordering::SeqCst);
        let mut s = connect(bind);
        assert_eq!(read_bytes(&mut s), b"be_default greets\n", "{who}");
        assert_eq!(tls_count.load(Ordering::SeqCst), before, "{who}");
    });
}

#[test]
fn content_reject_closes_without_reaching_a_server() {
    let ip = test_ip();
    let (origin, count) = line_origin(ip, "be");
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content reject if {{ req.payload(0,4) -m str EVIL }}\n\
    tcp-request content accept if {{ req.len gt 0 }}\n    default_backend be\n\
backend be\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let before = count.load(Ordering::SeqCst);
        assert!(exchange(bind, &[b"EVIL plan\n"]).is_empty(), "{who}");
        assert_eq!(count.load(Ordering::SeqCst), before, "{who}");
        assert_eq!(
            exchange(bind, &[b"GOOD plan\n"]),
            b"be: GOOD plan\n",
            "{who}"
        );
    });
}

#[test]
fn backend_content_rules_run_after_switching() {
    let ip = test_ip();
    let (origin, count) = line_origin(ip, "be_x");
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content accept if {{ req.len ge 2 }}\n    default_backend be_x\n\
backend be_x\n    tcp-request inspect-delay 5s\n    tcp-request content reject if {{ req.payload(0,2) -m str no }}\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let before = count.load(Ordering::SeqCst);
        assert!(exchange(bind, &[b"no thanks\n"]).is_empty(), "{who}");
        assert_eq!(count.load(Ordering::SeqCst), before, "{who}");
        assert_eq!(exchange(bind, &[b"yes\n"]), b"be_x: yes\n", "{who}");
    });
}

#[test]
fn dynamic_use_backend_falls_back_to_the_default() {
    let ip = test_ip();
    let (abc, _) = line_origin(ip, "be_abc");
    let (dflt, _) = line_origin(ip, "be_default");
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content accept if {{ req.len ge 4 }}\n\
    use_backend be_%[req.payload(0,3)]\n    default_backend be_default\n\
backend be_abc\n    server a {abc}\nbackend be_default\n    server d {dflt}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        assert_eq!(exchange(bind, &[b"abc\n"]), b"be_abc: abc\n", "{who}");
        assert_eq!(exchange(bind, &[b"zzz\n"]), b"be_default: zzz\n", "{who}");
    });
}

#[test]
fn response_rules_inspect_the_server_data() {
    let ip = test_ip();
    // Client speaks first, then the server answers with the line's first
    // word: the client's bytes must flow while the response rules wait.
    let (origin, _) = raw_origin(ip, |mut s| {
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while let Ok(1) = s.read(&mut b) {
            if b[0] == b'\n' {
                break;
            }
            line.push(b[0]);
        }
        let _ = s.write_all(&line);
        let _ = s.write_all(b" from server\n");
    });
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "listen app\n    bind {bind}\n    tcp-response inspect-delay 5s\n    tcp-response content reject if {{ res.payload(0,3) -m str BAD }}\n\
    tcp-response content accept if {{ res.len gt 0 }}\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        assert_eq!(exchange(bind, &[b"OK\n"]), b"OK from server\n", "{who}");
        assert!(exchange(bind, &[b"BAD\n"]).is_empty(), "{who}");
    });
}

#[test]
fn session_rules_see_the_tls_sni() {
    let ip = test_ip();
    let pki = Pki::new("tcp-rules");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "srv", "good.example.com");
    let (origin, count) = line_origin(ip, "be");
    let pem = pem.display().to_string();
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind} ssl crt {pem}\n    tcp-request session reject if {{ ssl_fc_sni -i bad.example.com }}\n    default_backend be\n\
backend be\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let before = count.load(Ordering::SeqCst);
        let ok = s_client(
            bind,
            &["-servername", "good.example.com", "-quiet"],
            b"ping\n",
        );
        assert!(ok.stdout.contains("be: ping"), "{who}: {}", ok.all());
        let bad = s_client(
            bind,
            &["-servername", "bad.example.com", "-quiet"],
            b"ping\n",
        );
        assert!(!bad.stdout.contains("be:"), "{who}: {}", bad.all());
        assert_eq!(count.load(Ordering::SeqCst), before + 1, "{who}");
    });
}

#[test]
fn the_log_line_names_the_chosen_backend() {
    let ip = test_ip();
    let (b, _) = hello_origin(ip, "be_b");
    let (a, _) = hello_origin(ip, "be_a");
    let (d, _) = hello_origin(ip, "be_default");
    let (log, log_addr) = syslog(ip);
    let extra = format!("    log {log_addr} local0\n    option tcplog\n    option dontlognull\n");
    let hello_b = capture_hello(ip, "b.example.com");
    let hello_z = capture_hello(ip, "z.example.com");
    on_both(
        ip,
        |bind| sni_cfg(bind, a, b, d, &extra),
        |bind, who| {
            let reply = exchange(bind, &[&hello_b]);
            assert_eq!(split_reply(&reply).0, "be_b", "{who}");
            // 127.0.0.1:40000 [date] fe be_b/b 0/0/5 1234 -- 1/1/0/0/0 0/0
            let msg = recv_log(&log);
            let f: Vec<&str> = msg.split(' ').collect();
            assert_eq!((f[2], f[3], f[6]), ("fe", "be_b/b", "--"), "{who}: {msg}");
            // No SNI match: the default backend, named as such.
            assert_eq!(split_reply(&exchange(bind, &[&hello_z])).0, "be_default");
            let msg = recv_log(&log);
            let f: Vec<&str> = msg.split(' ').collect();
            assert_eq!(f[3], "be_default/d", "{who}: {msg}");
        },
    );
}

fn syslog(ip: IpAddr) -> (std::net::UdpSocket, SocketAddr) {
    let s = std::net::UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// The message of the next syslog datagram (after `... name[pid]: `).
fn recv_log(s: &std::net::UdpSocket) -> String {
    let mut buf = [0u8; 8192];
    let n = s.recv(&mut buf).expect("a log datagram");
    let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
    line.split_once("]: ")
        .map_or(line.clone(), |(_, m)| m.to_string())
}

#[test]
fn refused_streams_are_logged_with_the_section_that_refused() {
    let ip = test_ip();
    let (origin, _) = line_origin(ip, "be");
    let (log, log_addr) = syslog(ip);
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option tcplog\n    option dontlognull\n\
    tcp-request inspect-delay 5s\n    tcp-request content reject if {{ req.payload(0,4) -m str EVIL }}\n\
    tcp-request content accept if {{ req.len ge 4 }}\n    use_backend be_b if {{ req.payload(0,1) -m str b }}\n    default_backend be\n\
backend be\n    server s {origin}\n\
backend be_b\n    tcp-request content reject if {{ req.payload(0,2) -m str bx }}\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        // The frontend refuses: the frontend is the stream's backend.
        assert!(exchange(bind, &[b"EVIL\n"]).is_empty(), "{who}");
        let msg = recv_log(&log);
        let f: Vec<&str> = msg.split(' ').collect();
        assert_eq!((f[2], f[3]), ("fe", "fe/<NOSRV>"), "{who}: {msg}");
        // Tw/Tc are -1 (no queue, no connect); Tt is whatever time it took.
        let t: Vec<&str> = f[4].split('/').collect();
        assert_eq!((t[0], t[1]), ("-1", "-1"), "{who}: {msg}");
        assert!(t[2].parse::<u64>().is_ok(), "{who}: {msg}");
        assert_eq!(f[6], "PR", "{who}: {msg}");
        // The backend refuses after switching.
        assert!(exchange(bind, &[b"bxyz\n"]).is_empty(), "{who}");
        let msg = recv_log(&log);
        let f: Vec<&str> = msg.split(' ').collect();
        assert_eq!((f[3], f[6]), ("be_b/<NOSRV>", "PR"), "{who}: {msg}");
    });
}

/// `dcon` and `dses`: connections refused by `tcp-request connection`
/// rules and sessions refused by `tcp-request session` rules, in the
/// stats CSV (and Prometheus for Fairlead).
#[test]
fn denied_connections_and_sessions_are_counted_in_the_stats() {
    let ip = test_ip();
    let (refused_conn, refused_sess) = (test_ip(), test_ip());
    let (origin, count) = line_origin(ip, "be");
    let cfg = |bind: SocketAddr, sb: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    tcp-request connection reject if {{ src {refused_conn} }}\n\
    tcp-request session reject if {{ src {refused_sess} }}\n    default_backend be\n\
backend be\n    server s {origin}\n\
listen stats\n    mode http\n    bind {sb}\n    stats enable\n    stats uri /stats\n\
    http-request use-service prometheus-exporter if {{ path /metrics }}"
        ))
    };
    let check = |bind: SocketAddr, sb: SocketAddr, who: &str| {
        for src in [refused_conn, refused_conn, refused_sess] {
            if let Ok(mut s) = connect_from(src, bind) {
                let _ = s.write_all(b"hello\n");
                assert!(read_bytes(&mut s).is_empty(), "{who}: {src} was served");
            }
        }
        let mut s = connect_from(ip, bind).unwrap();
        s.write_all(b"hi\n").unwrap();
        assert_eq!(read_bytes(&mut s), b"be: hi\n", "{who}");
        let csv = get(sb, "/stats;csv").body_str();
        let field = |f: &str| common::tls::stat_field(&csv, "fe", "FRONTEND", f);
        assert_eq!(field("dcon").as_deref(), Some("2"), "{who}: {csv}");
        assert_eq!(field("dses").as_deref(), Some("1"), "{who}: {csv}");
    };
    let (bind, sb) = (free_addr(ip), free_addr(ip));
    let p = Proxy::start(&cfg(bind, sb), &[bind, sb]);
    let before = count.load(Ordering::SeqCst);
    check(bind, sb, "fairlead");
    assert_eq!(
        count.load(Ordering::SeqCst),
        before + 1,
        "one stream served"
    );
    let metrics = get(sb, "/metrics").body_str();
    for line in [
        "haproxy_frontend_denied_connections_total{proxy=\"fe\"} 2",
        "haproxy_frontend_denied_sessions_total{proxy=\"fe\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    drop(p);
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy is not installed: the oracle comparison is skipped");
        return;
    };
    let (bind, sb) = (free_addr(ip), free_addr(ip));
    let _h = Haproxy::start(&bin, &cfg(bind, sb), &[], bind);
    check(bind, sb, "haproxy");
}

/// `%[expr]` in a TCP frontend's `log-format`: variables set by the
/// connection and content rules, the client address and the backend's
/// name, evaluated when the stream's line is written.
#[test]
fn tcp_log_format_samples() {
    let ip = test_ip();
    let (origin, _) = line_origin(ip, "be");
    let (log, log_addr) = syslog(ip);
    let cfg = |bind: SocketAddr| {
        tcp_cfg(&format!(
            "frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n\
    log-format \"%[var(sess.s)] %[var(txn.x),upper] %[src] %[be_name] %[var(txn.none)]\"\n\
    tcp-request connection set-var(sess.s) str(conn)\n\
    tcp-request content set-var(txn.x) str(abc)\n    default_backend be\n\
backend be\n    server s {origin}"
        ))
    };
    on_both(ip, cfg, |bind, who| {
        let mut s = connect_from(ip, bind).unwrap();
        s.write_all(b"hi\n").unwrap();
        assert_eq!(read_bytes(&mut s), b"be: hi\n", "{who}");
        // The stream ends (and is logged) once the client closes too.
        drop(s);
        // HAProxy may log the harness's readiness probe (from 127.0.0.1,
        // no data) despite dontlognull: skip it.
        let line = std::iter::repeat_with(|| recv_log(&log))
            .find(|l| !l.contains(" 127.0.0.1 "))
            .unwrap();
        assert_eq!(line, format!("conn ABC {ip} be -"), "{who}");
    });
}
