//! TLS operations against the real binary: TCP mode termination,
//! certificate reload under load and on error, the idle memory model,
//! the protocols and suites offered (sslscan), and garbage on a TLS port.
//! Certificates are made per test with the `openssl` command line.

mod common;
use common::tls::*;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// 10 ------------------------------------------------------------------------

/// `mode tcp` with `bind ... ssl`: TLS is terminated and the clear stream
/// forwarded; 1 MiB responses and uploads cross intact.
#[test]
fn tcp_mode_tls_termination() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("tcp");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "tcp.example");
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "listen tcp_tls\n    mode tcp\n    bind {bind} ssl crt {}\n    server s1 {o}\n",
                p(&pem)
            ),
        ),
        &[bind],
    );
    let res = resolve("tcp.example", bind);
    let body = pki.path("body.bin");
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        "-o",
        p(&body),
        "-w",
        "%{http_code} %{size_download}",
        &https_url("tcp.example", bind, "/?s=1m&R=1"),
    ]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "200 1048576");
    let direct = get(o, "/?s=1m&R=1");
    assert_eq!(direct.body.len(), 1 << 20);
    assert!(
        std::fs::read(&body).unwrap() == direct.body,
        "the body through TLS differs from the origin's"
    );
    // Text body, keep-alive over the TLS tunnel, then an upload.
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{size_download} %{num_connects}\n",
        &https_url("tcp.example", bind, "/?s=1m"),
        &https_url("tcp.example", bind, "/?s=1m&k=1"),
    ]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "200 1048576 1\n200 1048576 0\n");
    std::fs::write(pki.path("up.bin"), vec![b'u'; 1 << 20]).unwrap();
    let up = format!("@{}", p(&pki.path("up.bin")));
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        "--data-binary",
        &up,
        "-w",
        "##%{http_code} %{size_upload}",
        &https_url("tcp.example", bind, "/"),
    ]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(split_w(&r.stdout), ("o\n", "200 1048576"));
}

// 11 ------------------------------------------------------------------------

/// A persistent `s_client` session for raw HTTP/1.1 exchanges.
struct Session {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Session {
    fn open(addr: SocketAddr, sni: &str, cafile: &Path) -> Session {
        let mut child = Command::new("timeout")
            .args(["30", "openssl", "s_client", "-quiet", "-connect"])
            .arg(addr.to_string())
            .args(["-servername", sni, "-CAfile"])
            .arg(cafile)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Session { child, out }
    }

    fn get(&mut self, req: &str) -> Response {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(req.as_bytes()).unwrap();
        stdin.flush().unwrap();
        read_response(&mut self.out, false).expect("a response on the session")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `reload ssl certs` while a load runs: the PEM file is replaced on disk
/// (certificate A, then B for the same name), no request fails, a new
/// handshake gets B, and a keep-alive connection opened before the reload
/// keeps working.
#[test]
fn reload_ssl_certs_under_load() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("reload");
    let ca = pki.ca("ca");
    let a = pki.leaf(&ca, "a", "reload-A", &["reload.example"], Key::Ec, false);
    let b = pki.leaf(&ca, "b", "reload-B", &["reload.example"], Key::Ec, false);
    let live = pki.path("live.pem");
    std::fs::copy(&a, &live).unwrap();
    let sock = pki.path("admin.sock");
    let px = Proxy::start(
        &cfg(
            &format!("    stats socket {} level admin\n", p(&sock)),
            &format!(
                "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
                p(&live)
            ),
        ),
        &[bind],
    );
    wait_sock(&sock);
    let subject_now = || {
        let r = s_client(bind, &["-servername", "reload.example"], b"");
        subject(&r.stdout)
    };
    assert_eq!(subject_now().as_deref(), Some("CN = reload-A"));

    // A TLS session (ticket) from before the reload.
    let pre = pki.path("pre.sess");
    let out = s_client(
        bind,
        &[
            "-servername",
            "reload.example",
            "-ign_eof",
            "-sess_out",
            p(&pre),
        ],
        CLOSE_REQUEST,
    );
    assert!(out.stdout.contains("HTTP/1.1 200 OK"), "{out:?}");

    // A keep-alive session from before the reload.
    let mut held = Session::open(bind, "reload.example", &ca.cert);
    let r = held.get("GET /?s=10 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (200, 10));

    // The load: two curl processes, 60 requests each at 20/s, each on a
    // new connection (`Connection: close`) with a full handshake
    // (`--no-sessionid`), verifying the certificate.
    let res = resolve("reload.example", bind);
    let url = https_url("reload.example", bind, "/?n=[1-60]");
    let loaders: Vec<Child> = (0..2)
        .map(|_| {
            Command::new("timeout")
                .args(["20", "curl", "-s", "--no-sessionid", "--rate", "20/s"])
                .args(["-H", "Connection: close", "--cacert"])
                .arg(&ca.cert)
                .args(["--resolve", &res, "-w", "##%{http_code}\n", &url])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let start = info(&sock, "CumConns");
    wait_until("load under way", || info(&sock, "CumConns") >= start + 20);

    // `show ssl cert`: the file, then its details.
    let list = ask(&sock, "show ssl cert");
    assert!(list.contains(p(&live)), "{list}");
    let detail = ask(&sock, &format!("show ssl cert {}", p(&live)));
    assert!(detail.contains("Subject: /CN=reload-A"), "{detail}");
    assert!(detail.contains("DNS:reload.example"), "{detail}");
    assert!(detail.contains("Algorithm: EC256"), "{detail}");

    // Replace the file (atomically) and reload.
    let tmp = pki.path("live.pem.new");
    std::fs::copy(&b, &tmp).unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    let out = ask(&sock, "reload ssl certs");
    assert!(
        out.contains("Reloaded 1 certificate(s) on 1 TLS listener(s)"),
        "reload ssl certs answered: {out:?}"
    );
    let detail = ask(&sock, &format!("show ssl cert {}", p(&live)));
    assert!(detail.contains("Subject: /CN=reload-B"), "{detail}");
    wait_until("new handshakes get certificate B", || {
        subject_now().as_deref() == Some("CN = reload-B")
    });
    // The ticket from before the reload still resumes.
    let out = s_client(
        bind,
        &[
            "-servername",
            "reload.example",
            "-ign_eof",
            "-sess_in",
            p(&pre),
        ],
        CLOSE_REQUEST,
    );
    assert!(out.stdout.contains("Reused, TLSv1.3"), "{}", out.stdout);
    // The session from before still works.
    let r = held.get("GET /?s=20 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (200, 20));

    let mut still_running = 0;
    for mut l in loaders {
        if l.try_wait().unwrap().is_none() {
            still_running += 1;
        }
        let out = l.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let codes: Vec<&str> = text
            .split("##")
            .skip(1)
            .map(|c| c.lines().next().unwrap_or(""))
            .collect();
        assert_eq!(codes.len(), 60, "{text}");
        assert!(
            codes.iter().all(|c| *c == "200"),
            "failed requests across the reload: {codes:?}\n{}",
            px.stderr()
        );
        assert!(out.status.success(), "{out:?}");
    }
    assert!(
        still_running > 0,
        "the load ended before the reload was over"
    );
    drop(held);
    let _ = px;
}

/// A reload that finds a broken file keeps the previous certificates.
#[test]
fn reload_ssl_certs_keeps_old_on_error() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("reload-bad");
    let ca = pki.ca("ca");
    let a = pki.leaf(&ca, "a", "reload-A", &["reload.example"], Key::Ec, false);
    let live = pki.path("live.pem");
    std::fs::copy(&a, &live).unwrap();
    let sock = pki.path("admin.sock");
    let _px = Proxy::start(
        &cfg(
            &format!("    stats socket {} level admin\n", p(&sock)),
            &format!(
                "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
                p(&live)
            ),
        ),
        &[bind],
    );
    wait_sock(&sock);
    std::fs::write(&live, b"-----BEGIN CERTIFICATE-----\ngarbage\n").unwrap();
    let out = ask(&sock, "reload ssl certs");
    assert!(out.contains(p(&live)), "the error names the file: {out}");
    let r = s_client(bind, &["-servername", "reload.example"], b"");
    assert_eq!(
        subject(&r.stdout).as_deref(),
        Some("CN = reload-A"),
        "{r:?}"
    );
}

// 12 ------------------------------------------------------------------------

/// Fifty idle TLS connections that completed their handshake hold no
/// buffer: `show pools` shows the TLS and I/O buffers in use back near
/// zero while they are still open.
#[test]
fn idle_tls_connections_hold_no_buffers() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("idle");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "idle.example");
    let sock = pki.path("admin.sock");
    let _px = Proxy::start(
        &cfg(
            &format!("    stats socket {} level admin\n", p(&sock)),
            &format!(
                "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
                p(&pem)
            ),
        ),
        &[bind],
    );
    wait_sock(&sock);
    let n = 50;
    let mut clients = Vec::new();
    for _ in 0..n {
        let mut child = Command::new("timeout")
            .args(["30", "openssl", "s_client", "-connect"])
            .arg(bind.to_string())
            .args(["-servername", "idle.example", "-CAfile"])
            .arg(&ca.cert)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        clients.push((child, BufReader::new(out)));
    }
    // Every handshake completed (s_client prints its summary after it).
    for (_, out) in clients.iter_mut() {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "s_client ended");
            if line.starts_with("Verify return code: 0 (ok)") {
                break;
            }
        }
    }
    assert!(info(&sock, "CurrConns") >= n);
    let mut pools = String::new();
    wait_until("no buffer held by idle TLS connections", || {
        pools = ask(&sock, "show pools");
        pool_used(&pools, "tls_buffer").is_some_and(|u| u <= 2)
            && pool_used(&pools, "buffer").is_some_and(|u| u <= 2)
    });
    // Still open: the measure was taken with the connections idle, not
    // gone.
    assert!(info(&sock, "CurrConns") >= n, "{pools}");
    for (mut c, _) in clients {
        let _ = c.kill();
        let _ = c.wait();
    }
}

// 13 ------------------------------------------------------------------------

/// The Mozilla "intermediate" cipher suites (TLS 1.2 with ECDHE or DHE,
/// AES-GCM or ChaCha20-Poly1305; the three TLS 1.3 suites).
const MOZILLA_INTERMEDIATE: &[&str] = &[
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-AES256-GCM-SHA384",
    "DHE-RSA-CHACHA20-POLY1305",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// sslscan against a default `bind ... ssl crt` listener (RSA and ECDSA
/// certificates): no SSLv3, TLS 1.0 or 1.1; every accepted suite is in
/// Mozilla's intermediate set. Skipped (with a note) without sslscan.
#[test]
fn sslscan_mozilla_intermediate() {
    if Command::new("sslscan").arg("--version").output().is_err() {
        eprintln!("NOTE: sslscan is not installed; sslscan_mozilla_intermediate skipped");
        return;
    }
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("sslscan");
    let ca = pki.ca("ca");
    let rsa = pki.leaf(&ca, "rsa", "scan.example", &[], Key::Rsa, false);
    let ec = pki.leaf(&ca, "ec", "scan.example", &[], Key::Ec, false);
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {} crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
                p(&rsa),
                p(&ec)
            ),
        ),
        &[bind],
    );
    // --no-groups: sslscan 2.0.7's TLS 1.2 group probe expects the
    // ServerKeyExchange in a record of its own and waits 3 s per group when
    // the server (rustls) coalesces the handshake messages into one record.
    let r = run_limited(
        "sslscan",
        &[
            "--no-colour",
            "--no-groups",
            "--no-heartbleed",
            "--sni-name=scan.example",
            &bind.to_string(),
        ],
        b"",
        None,
    );
    assert!(r.ok(), "{r:?}");
    let out = r.stdout;
    for proto in ["SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{proto} ")))
            .unwrap_or_else(|| panic!("no {proto} line:\n{out}"));
        assert!(line.ends_with("disabled"), "{line}\n{out}");
    }
    for proto in ["TLSv1.2", "TLSv1.3"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{proto} ")))
            .unwrap();
        assert!(line.ends_with("enabled"), "{line}\n{out}");
    }
    let accepted: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Accepted") || l.starts_with("Preferred"))
        .collect();
    assert!(accepted.len() >= 5, "{out}");
    for l in &accepted {
        let suite = l.split_whitespace().nth(4).unwrap();
        assert!(
            MOZILLA_INTERMEDIATE.contains(&suite),
            "{suite} is not in Mozilla's intermediate set: {l}"
        );
    }
    // With both certificate kinds, both ECDHE-ECDSA and ECDHE-RSA suites.
    assert!(accepted.iter().any(|l| l.contains("ECDHE-ECDSA-")), "{out}");
    assert!(accepted.iter().any(|l| l.contains("ECDHE-RSA-")), "{out}");
}

// 14 ------------------------------------------------------------------------

/// A ClientHello record header claiming 512 bytes, followed by only the
/// start of the message.
const TRUNCATED_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x02, 0x00, // handshake record, 512 bytes
    0x01, 0x00, 0x01, 0xfc, // ClientHello, 508 bytes
    0x03, 0x03, // TLS 1.2
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, // random...
];

/// Sends `bytes` on a new connection (then half-closes if `shut`) and
/// waits for the proxy to close; returns what it sent back.
fn poke(addr: SocketAddr, bytes: &[u8], shut: bool) -> Vec<u8> {
    let mut s = connect(addr);
    let _ = s.write_all(bytes);
    if shut {
        let _ = s.shutdown(Shutdown::Write);
    }
    let mut back = Vec::new();
    // EOF or a reset are both a close; only the read timeout is not.
    if let Err(e) = s.read_to_end(&mut back) {
        assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the proxy kept the connection open after {bytes:?}"
        );
    }
    back
}

/// Garbage on a TLS port (random bytes, clear HTTP, a truncated
/// ClientHello, an oversized record, a silent client) is refused and
/// logged, and the worker still serves a normal request.
#[test]
fn garbage_does_not_kill_the_worker() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let slow = free_addr(ip);
    let mut log = Syslog::new(ip);
    let pki = Pki::new("garbage");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let px = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {pem}\n    log {log} local0\n    option httplog\n    default_backend bk\n\
frontend fe_slow\n    bind {slow} ssl crt {pem}\n    log {log} local0\n    option httplog\n    timeout client 300ms\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                pem = p(&pem),
                log = log.addr
            ),
        ),
        &[bind, slow],
    );
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut threads = Vec::new();
    for i in 0..4 {
        let noise = noise.clone();
        threads.push(std::thread::spawn(move || {
            let back = poke(bind, &noise[i * 100..], false);
            assert!(!back.starts_with(b"HTTP/"), "{back:?}");
            let back = poke(bind, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false);
            assert!(!back.starts_with(b"HTTP/1.1 200"), "{back:?}");
            poke(bind, TRUNCATED_HELLO, true);
            poke(bind, &[0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00], false);
            poke(bind, &[0x16, 0x03], true);
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    // A silent client is dropped at `timeout client`.
    let t0 = Instant::now();
    let back = poke(slow, b"", false);
    assert!(back.is_empty() || back[0] == 0x15, "{back:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

    // Still serving, on both threads.
    let res = resolve("www.example", bind);
    for _ in 0..4 {
        let r = curl(&[
            "--cacert",
            p(&ca.cert),
            "--resolve",
            &res,
            "-w",
            "##%{http_code}",
            &https_url("www.example", bind, "/"),
        ]);
        assert_eq!(split_w(&r.stdout), ("o\n", "200"), "{r:?}\n{}", px.stderr());
    }
    assert!(!px.stderr().contains("panic"), "{}", px.stderr());
    log.wait_for(&[&format!("] fe/{bind}: SSL handshake failure (")]);
    log.wait_for(&[&format!(
        "] fe/{bind}: connection closed during SSL handshake"
    )]);
    log.wait_for(&[&format!("] fe_slow/{slow}: timeout during SSL handshake")]);
}
