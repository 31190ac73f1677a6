//! TLS end to end against the real binary: termination (`bind ... ssl`),
//! certificate selection, client certificates, resumption, origination
//! (`server ... ssl`), TCP mode, certificate reload and the idle memory
//! model. Certificates are made per test with the `openssl` command line;
//! the clients are `curl`, `openssl s_client` and `sslscan`.

mod common;
use common::tls::*;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `global` (two threads, plus `global_extra`), `defaults` in mode http,
/// then `body`.
fn cfg(global_extra: &str, body: &str) -> String {
    format!(
        "global\n    nbthread 2\n{global_extra}\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
{body}"
    )
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A UDP syslog sink for one test.
struct Syslog {
    sock: UdpSocket,
    addr: SocketAddr,
    lines: Vec<String>,
}

impl Syslog {
    fn new(ip: std::net::IpAddr) -> Syslog {
        let sock = UdpSocket::bind((ip, 0)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        Syslog {
            sock,
            addr,
            lines: Vec::new(),
        }
    }

    /// Waits for a received line containing every one of `needles`.
    fn wait_for(&mut self, needles: &[&str]) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(l) = self
                .lines
                .iter()
                .find(|l| needles.iter().all(|n| l.contains(n)))
            {
                return l.clone();
            }
            assert!(
                Instant::now() < end,
                "no log line with {needles:?}; got:\n{}",
                self.lines.join("\n")
            );
            let mut buf = [0u8; 8192];
            if let Ok(n) = self.sock.recv(&mut buf) {
                self.lines
                    .push(String::from_utf8_lossy(&buf[..n]).trim_end().to_string());
            }
        }
    }
}

/// Splits curl's stdout at the `-w` marker `##`: (body, write-out).
fn split_w(out: &str) -> (&str, &str) {
    out.rsplit_once("##").expect("curl write-out marker")
}

/// A Prometheus sample's value from `/metrics` on `addr`.
fn metric(addr: SocketAddr, name: &str) -> Option<f64> {
    let body = get(addr, "/metrics").body_str();
    body.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// `show info`'s value for `key`.
fn info(sock: &Path, key: &str) -> u64 {
    let out = ask(sock, "show info");
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in show info:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

/// Waits for the admin socket.
fn wait_sock(sock: &Path) {
    wait_until("stats socket", || {
        std::os::unix::net::UnixStream::connect(sock).is_ok()
    });
}

// 1 -------------------------------------------------------------------------

/// curl through `bind ... ssl crt ... alpn http/1.1`: status, body, HTTP
/// version, certificate verification, negotiated ALPN, and two URLs on one
/// connection.
#[test]
fn curl_https_status_body_alpn_keepalive() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let mut log = Syslog::new(ip);
    let pki = Pki::new("curl");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {} alpn http/1.1\n    log {} local0\n\
    log-format \"tls %sslv %sslc %HU\"\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                p(&pem),
                log.addr
            ),
        ),
        &[bind],
    );
    let res = resolve("www.example", bind);
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        &https_url("www.example", bind, "/?s=100"),
        "-w",
        "##%{http_code} %{http_version} %{ssl_verify_result}",
    ]);
    assert!(r.ok(), "{r:?}");
    let (body, w) = split_w(&r.stdout);
    assert_eq!(w, "200 1.1 0", "{r:?}");
    assert_eq!(body.len(), 100, "{body:?}");

    // ALPN and verification as curl reports them.
    let r = curl(&[
        "-v",
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        &https_url("www.example", bind, "/"),
    ]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "o\n");
    assert!(
        r.stderr.contains("ALPN: server accepted http/1.1"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("SSL certificate verify ok"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("subject: CN=www.example"), "{}", r.stderr);

    // Two URLs on one command: the second reuses the connection.
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        &https_url("www.example", bind, "/?s=10"),
        &https_url("www.example", bind, "/?s=20"),
        "-w",
        "##%{num_connects}\n",
    ]);
    assert!(r.ok(), "{r:?}");
    // stdout: body1 ##num_connects1 \n body2 ##num_connects2 \n
    let parts: Vec<&str> = r.stdout.split("##").collect();
    assert_eq!(parts.len(), 3, "{r:?}");
    assert_eq!(parts[0].len(), 10, "{r:?}");
    let (n1, body2) = parts[1].split_once('\n').unwrap();
    assert_eq!(n1, "1", "first transfer connects: {r:?}");
    assert_eq!(body2.len(), 20, "{r:?}");
    assert_eq!(
        parts[2], "0\n",
        "second transfer reuses the connection: {r:?}"
    );

    // %sslv and %sslc in log-format: version and OpenSSL suite name.
    log.wait_for(&["tls TLSv1.3 TLS_AES_128_GCM_SHA256 /?s=100"]);
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        "--tls-max",
        "1.2",
        "--ciphers",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        &https_url("www.example", bind, "/?tls12"),
    ]);
    assert!(r.ok(), "{r:?}");
    log.wait_for(&["tls TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 /?tls12"]);
}

/// `option httpslog`: HAProxy's line, ending with the error codes,
/// resumption, SNI, version and cipher; `%[ssl_c_used]` and
/// `%[ssl_c_verify]` give the client certificate's result.
#[test]
fn httpslog_and_tls_log_fetches() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let [b1, b2] = [(); 2].map(|_| free_addr(ip));
    let mut log = Syslog::new(ip);
    let pki = Pki::new("httpslog");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let client = pki.leaf(&ca, "client", "fairlead client", &[], Key::Ec, true);
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {b1} ssl crt {pem}\n    log {sink} local0\n    option httpslog\n    default_backend bk\n\
frontend fe_cc\n    bind {b2} ssl crt {pem} ca-file {ca} verify optional\n    log {sink} local0\n\
    log-format \"cc %[ssl_c_used] %[ssl_c_verify] %[ssl_fc_sni] %HU\"\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                pem = p(&pem),
                ca = p(&ca.cert),
                sink = log.addr
            ),
        ),
        &[b1, b2],
    );
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &resolve("www.example", b1),
        &https_url("www.example", b1, "/?httpslog"),
    ]);
    assert!(r.ok(), "{r:?}");
    let l = log.wait_for(&["\"GET /?httpslog HTTP/1.1\""]);
    assert!(
        l.ends_with("\" 0/0/0/0/0 www.example/TLSv1.3/TLS_AES_128_GCM_SHA256"),
        "{l}"
    );
    let url = https_url("www.example", b2, "/?cc");
    let res = resolve("www.example", b2);
    let r = curl(&["--cacert", p(&ca.cert), "--resolve", &res, &url]);
    assert!(r.ok(), "{r:?}");
    log.wait_for(&["cc 0 0 www.example /?cc"]);
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &res,
        "--cert",
        p(&client),
        &https_url("www.example", b2, "/?cert"),
    ]);
    assert!(r.ok(), "{r:?}");
    log.wait_for(&["cc 1 0 www.example /?cert"]);
}

// 2 -------------------------------------------------------------------------

/// Certificate selection by SNI: exact names, a wildcard (one label only,
/// case-insensitive), and the first certificate as the default for unknown
/// names and clients without SNI; the same from a `crt <directory>` (files
/// in name order, `.key` companions used, `.ocsp` skipped).
#[test]
fn sni_selects_certificate_wildcard_and_default() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let bind_dir = free_addr(ip);
    let pki = Pki::new("sni");
    let ca = pki.ca("ca");
    let def = pki.server(&ca, "default", "default.example");
    let a = pki.server(&ca, "a", "a.example");
    let b = pki.server(&ca, "b", "*.b.example");
    // The directory: a.pem (chain+key), c.pem (certificate only, key in
    // c.pem.key), a garbage a.pem.ocsp that must be skipped.
    let dir = pki.path("certs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&a, dir.join("a.pem")).unwrap();
    pki.server(&ca, "c", "c.example");
    std::fs::copy(pki.path("c.crt"), dir.join("c.pem")).unwrap();
    std::fs::copy(pki.path("c.key"), dir.join("c.pem.key")).unwrap();
    std::fs::write(dir.join("a.pem.ocsp"), b"not an OCSP response").unwrap();

    // A crt-list with relative paths (crt-base applies to them) and SNI
    // filters that replace the certificates' own names.
    let bind_list = free_addr(ip);
    let list = pki.path("list.txt");
    std::fs::write(
        &list,
        "# comment\n\ndefault.pem\na.pem alias.example\nb.pem *.b.example !no.b.example\n",
    )
    .unwrap();

    let p_ = Proxy::start(
        &cfg(
            &format!("    crt-base {}\n", p(&pki.dir)),
            &format!(
                "frontend fe\n    bind {bind} ssl crt {} crt {} crt {} alpn http/1.1\n\
    bind {bind_dir} ssl crt {}\n    bind {bind_list} ssl crt-list {}\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                p(&def),
                p(&a),
                p(&b),
                p(&dir),
                p(&list)
            ),
        ),
        &[bind, bind_dir, bind_list],
    );
    let cafile = p(&ca.cert).to_string();
    let check = |addr: SocketAddr, sni: Option<&str>, want: &str| {
        let mut args = vec!["-CAfile", cafile.as_str(), "-alpn", "http/1.1"];
        match sni {
            Some(n) => args.extend(["-servername", n]),
            None => args.push("-noservername"),
        }
        let r = s_client(addr, &args, b"");
        assert_eq!(
            subject(&r.stdout).as_deref(),
            Some(want),
            "SNI {sni:?} on {addr}: {}\n{}",
            r.stdout,
            p_.stderr()
        );
        r
    };
    let r = check(bind, Some("a.example"), "CN = a.example");
    assert!(
        r.stdout.contains("Verify return code: 0 (ok)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("ALPN protocol: http/1.1"), "{}", r.stdout);
    check(bind, Some("A.Example"), "CN = a.example");
    let r = check(bind, Some("x.b.example"), "CN = *.b.example");
    assert!(
        r.stdout.contains("Verify return code: 0 (ok)"),
        "{}",
        r.stdout
    );
    check(bind, Some("b.example"), "CN = default.example");
    check(bind, Some("deep.x.b.example"), "CN = default.example");
    check(bind, Some("unknown.example"), "CN = default.example");
    check(bind, None, "CN = default.example");

    // The directory listener.
    check(bind_dir, Some("a.example"), "CN = a.example");
    check(bind_dir, Some("c.example"), "CN = c.example");
    check(bind_dir, Some("unknown.example"), "CN = a.example");
    check(bind_dir, None, "CN = a.example");

    // The crt-list listener.
    check(bind_list, Some("alias.example"), "CN = a.example");
    check(bind_list, Some("a.example"), "CN = default.example");
    check(bind_list, Some("x.b.example"), "CN = *.b.example");
    check(bind_list, Some("no.b.example"), "CN = default.example");
    check(bind_list, None, "CN = default.example");

    // And a request through it, with hostname verification.
    let r = s_client(
        bind,
        &[
            "-CAfile",
            &cafile,
            "-servername",
            "x.b.example",
            "-verify_hostname",
            "x.b.example",
            "-verify_return_error",
            "-ign_eof",
        ],
        CLOSE_REQUEST,
    );
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("HTTP/1.1 200 OK"), "{}", r.stdout);
}

// 3 -------------------------------------------------------------------------

/// `strict-sni`: a ClientHello with an unknown name, or without SNI, is
/// refused with an alert; a known name works. The failure is logged in
/// HAProxy's connection error format and counted.
#[test]
fn strict_sni_refuses_unknown_and_missing_names() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let metrics = free_addr(ip);
    let mut log = Syslog::new(ip);
    let pki = Pki::new("strict");
    let ca = pki.ca("ca");
    let a = pki.server(&ca, "a", "a.example");
    let p_ = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {} strict-sni\n    log {} local0\n    option httplog\n\
    default_backend bk\n\
backend bk\n    server s1 {o}\n\
frontend metrics\n    bind {metrics}\n    http-request use-service prometheus-exporter if {{ path /metrics }}\n",
                p(&a),
                log.addr
            ),
        ),
        &[bind, metrics],
    );
    let cafile = p(&ca.cert).to_string();
    let ok = s_client(
        bind,
        &["-CAfile", &cafile, "-servername", "a.example", "-ign_eof"],
        CLOSE_REQUEST,
    );
    assert!(ok.ok(), "{ok:?}");
    assert_eq!(subject(&ok.stdout).as_deref(), Some("CN = a.example"));
    assert!(ok.stdout.contains("HTTP/1.1 200 OK"), "{}", ok.stdout);

    for args in [
        vec!["-servername", "nope.example"],
        vec!["-noservername"],
        vec!["-servername", "nope.example", "-tls1_2"],
    ] {
        let mut all = vec!["-CAfile", cafile.as_str()];
        all.extend(args.iter().copied());
        let r = s_client(bind, &all, b"");
        assert!(!r.ok(), "{args:?} must fail: {r:?}");
        assert!(
            r.all().contains("alert"),
            "{args:?}: no alert in the output: {r:?}"
        );
        assert_eq!(subject(&r.stdout), None, "{args:?}: {}", r.stdout);
    }
    let line = log.wait_for(&[&format!("] fe/{bind}: SSL handshake failure")]);
    assert!(line.contains(&format!("{}:", ip)), "{line}");
    // Counted (three refused handshakes).
    wait_until("failed handshakes counted", || {
        metric(metrics, "fairlead_process_ssl_failed_handshakes_total").unwrap_or(0.0) >= 3.0
    });
    // And the listener still serves.
    let again = s_client(bind, &["-servername", "a.example"], b"");
    assert_eq!(
        subject(&again.stdout).as_deref(),
        Some("CN = a.example"),
        "{}",
        p_.stderr()
    );
}

// 4 -------------------------------------------------------------------------

/// An RSA and an ECDSA certificate for the same name: a client that only
/// accepts RSA signatures gets the RSA one, an ECDSA-only client the ECDSA
/// one, in TLS 1.3 and 1.2.
#[test]
fn rsa_and_ecdsa_certificates_for_one_name() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("dual");
    let ca = pki.ca("ca");
    let rsa = pki.leaf(&ca, "rsa", "dual.example", &[], Key::Rsa, false);
    let ec = pki.leaf(&ca, "ec", "dual.example", &[], Key::Ec, false);
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {} crt {}\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                p(&rsa),
                p(&ec)
            ),
        ),
        &[bind],
    );
    let cafile = p(&ca.cert).to_string();
    // (client, its signature algorithms, key size and type it must get)
    let clients = [
        (
            "RSA-only",
            "rsa_pss_rsae_sha256:rsa_pkcs1_sha256",
            "2048",
            "RSA",
        ),
        ("ECDSA-only", "ECDSA+SHA256", "256", "ECDSA"),
    ];
    for version in ["-tls1_3", "-tls1_2"] {
        for (who, sigalgs, bits, kind) in clients {
            let r = s_client(
                bind,
                &[
                    "-CAfile",
                    &cafile,
                    "-servername",
                    "dual.example",
                    version,
                    "-sigalgs",
                    sigalgs,
                ],
                b"",
            );
            assert!(r.ok(), "{version} {who}: {r:?}");
            assert!(
                r.stdout
                    .contains(&format!("Server public key is {bits} bit")),
                "{version} {who}: {}",
                r.stdout
            );
            assert!(
                r.stdout.contains(&format!("Peer signature type: {kind}")),
                "{version} {who}: {}",
                r.stdout
            );
            assert!(
                r.stdout.contains("Verify return code: 0 (ok)"),
                "{}",
                r.stdout
            );
        }
    }
}

/// `ssl-min-ver`, `ssl-max-ver`, `ciphers`, `ciphersuites` on a bind line,
/// and `ssl-default-bind-options` for a bind line without its own.
#[test]
fn protocol_and_cipher_options() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let [only13, only12, dflt] = [(); 3].map(|_| free_addr(ip));
    let pki = Pki::new("suites");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let _p = Proxy::start(
        &cfg(
            "    ssl-default-bind-options ssl-min-ver TLSv1.3\n",
            &format!(
                "frontend fe\n\
    bind {only13} ssl crt {pem} ssl-min-ver TLSv1.3 ciphersuites TLS_CHACHA20_POLY1305_SHA256\n\
    bind {only12} ssl crt {pem} ssl-min-ver TLSv1.2 ssl-max-ver TLSv1.2 ciphers ECDHE-ECDSA-CHACHA20-POLY1305\n\
    bind {dflt} ssl crt {pem}\n\
    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                pem = p(&pem)
            ),
        ),
        &[only13, only12, dflt],
    );
    let hs = |addr: SocketAddr, args: &[&str]| {
        let mut all = vec!["-servername", "www.example"];
        all.extend_from_slice(args);
        s_client(addr, &all, b"")
    };
    let r = hs(only13, &["-tls1_3"]);
    assert!(r.ok(), "{r:?}");
    assert!(
        r.stdout
            .contains("New, TLSv1.3, Cipher is TLS_CHACHA20_POLY1305_SHA256"),
        "{}",
        r.stdout
    );
    let r = hs(only13, &["-tls1_2"]);
    assert!(!r.ok(), "TLS 1.2 on a TLS 1.3-only bind: {r:?}");
    let r = hs(
        only13,
        &["-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"],
    );
    assert!(!r.ok(), "a TLS 1.3 suite not configured: {r:?}");

    let r = hs(only12, &[]);
    assert!(r.ok(), "{r:?}");
    assert!(
        r.stdout
            .contains("New, TLSv1.2, Cipher is ECDHE-ECDSA-CHACHA20-POLY1305"),
        "{}",
        r.stdout
    );
    let r = hs(only12, &["-tls1_3"]);
    assert!(!r.ok(), "TLS 1.3 on a TLS 1.2-only bind: {r:?}");
    let r = hs(
        only12,
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"],
    );
    assert!(!r.ok(), "a TLS 1.2 suite not configured: {r:?}");

    // The global default (ssl-min-ver TLSv1.3) applies to the plain bind.
    assert!(hs(dflt, &["-tls1_3"]).ok());
    let r = hs(dflt, &["-tls1_2"]);
    assert!(
        !r.ok(),
        "ssl-default-bind-options ssl-min-ver TLSv1.3 ignored: {r:?}"
    );
}

// 5 -------------------------------------------------------------------------

/// Client certificates: `verify required` refuses a client without a
/// certificate or with one from another CA and serves one signed by the
/// CA; `verify optional` serves clients without a certificate and with a
/// good one, and refuses a bad one.
#[test]
fn client_certificates_required_and_optional() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let req = free_addr(ip);
    let opt = free_addr(ip);
    let pki = Pki::new("mtls");
    let ca = pki.ca("ca");
    let other = pki.ca("other");
    let srv = pki.server(&ca, "srv", "mtls.example");
    pki.leaf(&ca, "good", "good client", &[], Key::Ec, true);
    pki.leaf(&other, "bad", "bad client", &[], Key::Ec, true);
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe_req\n    bind {req} ssl crt {srv} ca-file {ca} verify required\n    default_backend bk\n\
frontend fe_opt\n    bind {opt} ssl crt {srv} ca-file {ca} verify optional\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                srv = p(&srv),
                ca = p(&ca.cert)
            ),
        ),
        &[req, opt],
    );
    let cafile = p(&ca.cert).to_string();
    let (good_crt, good_key) = (pki.path("good.crt"), pki.path("good.key"));
    let (bad_crt, bad_key) = (pki.path("bad.crt"), pki.path("bad.key"));
    let go = |addr: SocketAddr, cert: Option<(&Path, &Path)>, extra: &[&str]| {
        let res = resolve("mtls.example", addr);
        let url = https_url("mtls.example", addr, "/");
        let mut args = vec![
            "--cacert",
            cafile.as_str(),
            "--resolve",
            res.as_str(),
            "-w",
            "##%{http_code}",
        ];
        if let Some((c, k)) = cert {
            args.extend(["--cert", p(c), "--key", p(k)]);
        }
        args.extend_from_slice(extra);
        args.push(url.as_str());
        curl(&args)
    };
    let good = Some((good_crt.as_path(), good_key.as_path()));
    let bad = Some((bad_crt.as_path(), bad_key.as_path()));
    for extra in [&[][..], &["--tls-max", "1.2"][..]] {
        // required
        let r = go(req, None, extra);
        assert!(!r.ok(), "required, no certificate {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout), ("", "000"), "{r:?}");
        let r = go(req, good, extra);
        assert!(r.ok(), "required, good certificate {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout), ("o\n", "200"), "{r:?}");
        let r = go(req, bad, extra);
        assert!(!r.ok(), "required, other CA {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout).1, "000", "{r:?}");
        // optional
        let r = go(opt, None, extra);
        assert!(r.ok(), "optional, no certificate {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout), ("o\n", "200"), "{r:?}");
        let r = go(opt, good, extra);
        assert!(r.ok(), "optional, good certificate {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout), ("o\n", "200"), "{r:?}");
        let r = go(opt, bad, extra);
        assert!(!r.ok(), "optional, other CA {extra:?}: {r:?}");
        assert_eq!(split_w(&r.stdout).1, "000", "{r:?}");
    }
    // TLS 1.3 without a certificate: the client's handshake completes, the
    // refusal arrives as an alert at the first read; no response.
    let r = s_client(
        req,
        &[
            "-CAfile",
            &cafile,
            "-servername",
            "mtls.example",
            "-tls1_3",
            "-ign_eof",
        ],
        CLOSE_REQUEST,
    );
    assert!(!r.stdout.contains("HTTP/1.1"), "{}", r.stdout);
    assert!(r.all().contains("alert"), "{r:?}");
}

// 6, 7 ----------------------------------------------------------------------

/// An expired certificate is loaded, as HAProxy does, with a `[WARNING]`
/// naming the file and the expiry date; `show ssl cert` lists it and
/// handshakes still get it (the client decides what to do with it).
#[test]
fn expired_certificate_loads_with_warning() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let (_t, o) = term(ip, "o");
    let pki = Pki::new("expired");
    let ca = pki.ca("ca");
    let old = pki.expired(&ca, "old", "old.example");
    let sock = pki.path("admin.sock");
    let c = cfg(
        &format!("    stats socket {} level admin\n", p(&sock)),
        &format!(
            "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
            p(&old)
        ),
    );
    let px = Proxy::start(&c, &[bind]);
    wait_sock(&sock);
    let err = px.stderr();
    let warning = err
        .lines()
        .find(|l| l.contains("[WARNING]") && l.contains(p(&old)))
        .unwrap_or_else(|| panic!("no warning naming {}: {err}", p(&old)));
    assert!(
        warning.contains("certificate expired on 2020-01-01 00:00:00 UTC"),
        "{warning}"
    );
    let list = ask(&sock, "show ssl cert");
    assert!(list.contains(p(&old)), "{list}");
    let detail = ask(&sock, &format!("show ssl cert {}", p(&old)));
    assert!(
        detail.contains("notAfter: Jan  1 00:00:00 2020 GMT"),
        "{detail}"
    );
    // The handshake serves it; a verifying client reports the expiry.
    let r = s_client(
        bind,
        &["-CAfile", p(&ca.cert), "-servername", "old.example"],
        b"",
    );
    assert_eq!(
        subject(&r.stdout).as_deref(),
        Some("CN = old.example"),
        "{r:?}"
    );
    assert!(r.stdout.contains("certificate has expired"), "{}", r.stdout);
}

/// `fairlead -c` loads the certificates as HAProxy's `-c` does: a bad one
/// fails the check, an expired one passes it with the warning.
#[test]
fn check_mode_loads_certificates() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let pki = Pki::new("check");
    let ca = pki.ca("ca");
    let old = pki.expired(&ca, "old", "old.example");
    let good = pki.server(&ca, "good", "good.example");
    let broken = pki.path("broken.pem");
    std::fs::write(&broken, "not a certificate\n").unwrap();
    let body = |pem: &Path| {
        cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 127.0.0.1:9\n",
                p(pem)
            ),
        )
    };
    let (code, out) = start_fails(&body(&good), &["-c"]);
    assert_eq!(code, Some(0), "a good certificate passes -c: {out}");
    let (code, out) = start_fails(&body(&old), &["-c"]);
    assert_eq!(code, Some(0), "an expired certificate passes -c: {out}");
    assert!(
        out.lines().any(|l| l.contains("[WARNING]")
            && l.contains(p(&old))
            && l.contains("expired on 2020-01-01")),
        "{out}"
    );
    let (code, out) = start_fails(&body(&broken), &["-c"]);
    assert_ne!(
        code,
        Some(0),
        "-c accepted a file without certificate: {out}"
    );
    assert!(out.contains(p(&broken)), "{out}");
}

/// A certificate whose key is not its own stops the start-up, naming the
/// file and the mismatch.
#[test]
fn key_mismatch_refuses_start() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let (_t, o) = term(ip, "o");
    let pki = Pki::new("mismatch");
    let ca = pki.ca("ca");
    pki.server(&ca, "one", "one.example");
    pki.server(&ca, "two", "two.example");
    let mixed = pki.path("mixed.pem");
    concat(&mixed, &[&pki.path("one.crt"), &pki.path("two.key")]);
    let c = cfg(
        "",
        &format!(
            "frontend fe\n    bind {bind} ssl crt {}\n    default_backend bk\nbackend bk\n    server s1 {o}\n",
            p(&mixed)
        ),
    );
    let (code, err) = start_fails(&c, &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains(p(&mixed)),
        "stderr does not name the file: {err}"
    );
    assert!(
        err.contains("private key does not match"),
        "stderr does not tell the mismatch: {err}"
    );
}

// 8 -------------------------------------------------------------------------

/// One `s_client` session that sends a request and reads the response so
/// that TLS 1.3 tickets arrive; returns the output.
fn resume_once(
    addr: SocketAddr,
    extra: &[&str],
    sess_in: Option<&Path>,
    sess_out: &Path,
) -> String {
    let mut args = vec![
        "-servername",
        "www.example",
        "-ign_eof",
        "-sess_out",
        p(sess_out),
    ];
    if let Some(i) = sess_in {
        args.extend(["-sess_in", p(i)]);
    }
    args.extend_from_slice(extra);
    let r = s_client(addr, &args, CLOSE_REQUEST);
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("HTTP/1.1 200 OK"), "{}", r.stdout);
    r.stdout
}

/// Session resumption from the client side: TLS 1.3 tickets, TLS 1.2
/// tickets, TLS 1.2 session IDs and TLS 1.3 without tickets
/// (`no-tls-tickets`), and with two threads, every reconnect resumes
/// (tickets and the session cache are shared by all threads).
#[test]
fn session_resumption() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let nt = free_addr(ip);
    let pki = Pki::new("resume");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let _p = Proxy::start(
        &cfg(
            "",
            &format!(
                "frontend fe\n    bind {bind} ssl crt {pem}\n    bind {nt} ssl crt {pem} no-tls-tickets\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
                pem = p(&pem)
            ),
        ),
        &[bind, nt],
    );
    for (addr, version, tag) in [
        (bind, "-tls1_3", "TLSv1.3"),
        (bind, "-tls1_2", "TLSv1.2"),
        (nt, "-tls1_2", "TLSv1.2"),
        (nt, "-tls1_3", "TLSv1.3"),
    ] {
        let s0 = pki.path("s0.pem");
        let s1 = pki.path("s1.pem");
        let first = resume_once(addr, &[version], None, &s0);
        assert!(first.contains(&format!("New, {tag}")), "{first}");
        let mut cur = s0.clone();
        let mut next = s1.clone();
        // Several reconnects, from new source ports, spread over the two
        // threads' listeners by the kernel: all resume. TLS 1.3 uses the
        // ticket of the previous connection each time (stateful tickets
        // are single-use); TLS 1.2 resumes the first session again and
        // again (s_client writes no -sess_out for a resumed 1.2 session).
        for i in 0..8 {
            let out = resume_once(addr, &[version], Some(&cur), &next);
            assert!(
                out.contains(&format!("Reused, {tag}")),
                "{addr} {version} reconnect {i} did not resume:\n{out}"
            );
            if tag == "TLSv1.3" {
                std::mem::swap(&mut cur, &mut next);
            }
        }
        if addr == nt && tag == "TLSv1.2" {
            // Without tickets, TLS 1.2 resumes by session ID and gets no
            // ticket.
            assert!(!first.contains("TLS session ticket:"), "{first}");
        }
    }
}

// 9 -------------------------------------------------------------------------

/// Origination: a clear frontend forwards to a second Fairlead frontend
/// that terminates TLS. `verify none` works; `verify required` with the
/// right CA and SNI works; a wrong CA or a wrong verified name gives 503
/// and counts a connection error; `sni req.hdr(host)` verifies against the
/// request's Host. Twenty keep-alive requests cross one or two TLS
/// connections.
#[test]
fn backend_tls_origination() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let tls = free_addr(ip);
    let [b_none, b_ok, b_badca, b_host, b_name] = [(); 5].map(|_| free_addr(ip));
    let pki = Pki::new("origin");
    let ca = pki.ca("ca");
    let other = pki.ca("other");
    let opem = pki.server(&ca, "origin", "origin.example");
    let sock = pki.path("admin.sock");
    let fe = |name: &str, bind: SocketAddr, server: &str| {
        format!("frontend fe_{name}\n    bind {bind}\n    default_backend bk_{name}\nbackend bk_{name}\n    retries 0\n    server s1 {tls} ssl {server}\n")
    };
    // A second TLS origin that requires a client certificate, and a TLS
    // frontend whose server gets the client's SNI.
    let tls_m = free_addr(ip);
    let [b_cc, b_nocc, b_nocc12, b_fc] = [(); 4].map(|_| free_addr(ip));
    let client = pki.leaf(&ca, "client", "fairlead client", &[], Key::Ec, true);
    let extra = format!(
        "frontend tls_mtls\n    bind {tls_m} ssl crt {opem} ca-file {ca} verify required\n    default_backend to_term\n\
frontend fe_cc\n    bind {b_cc}\n    default_backend bk_cc\n\
backend bk_cc\n    retries 0\n    server s1 {tls_m} ssl verify none crt {client}\n\
frontend fe_nocc\n    bind {b_nocc}\n    default_backend bk_nocc\n\
backend bk_nocc\n    retries 0\n    server s1 {tls_m} ssl verify none\n\
frontend fe_nocc12\n    bind {b_nocc12}\n    default_backend bk_nocc12\n\
backend bk_nocc12\n    retries 0\n    server s1 {tls_m} ssl verify none ssl-max-ver TLSv1.2\n\
frontend fe_fc\n    bind {b_fc} ssl crt {opem}\n    default_backend bk_fc\n\
backend bk_fc\n    retries 0\n    server s1 {tls} ssl verify required ca-file {ca} sni ssl_fc_sni\n",
        opem = p(&opem),
        ca = p(&ca.cert),
        client = p(&client),
    );
    let body = format!(
        "frontend tls_origin\n    bind {tls} ssl crt {}\n    default_backend to_term\n\
backend to_term\n    server t {o}\n{extra}{}{}{}{}{}",
        p(&opem),
        fe("none", b_none, "verify none"),
        fe(
            "ok",
            b_ok,
            &format!(
                "verify required ca-file {} sni str(origin.example)",
                p(&ca.cert)
            )
        ),
        fe(
            "badca",
            b_badca,
            &format!(
                "verify required ca-file {} sni str(origin.example)",
                p(&other.cert)
            )
        ),
        fe(
            "host",
            b_host,
            &format!("verify required ca-file {} sni req.hdr(host)", p(&ca.cert))
        ),
        fe(
            "name",
            b_name,
            &format!(
                "verify required ca-file {} sni str(origin.example) verifyhost wrong.example",
                p(&ca.cert)
            )
        ),
    );
    let c = cfg(
        &format!("    stats socket {} level admin\n", p(&sock)),
        &body,
    );
    let px = Proxy::start(
        &c,
        &[
            tls, b_none, b_ok, b_badca, b_host, b_name, tls_m, b_cc, b_nocc, b_nocc12, b_fc,
        ],
    );
    wait_sock(&sock);

    // Pooling first, on fresh counters: 20 keep-alive requests.
    let mut s = connect(b_none);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..20 {
        s.write_all(b"GET /?s=1k HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let resp = read_response(&mut r, false).expect("a response");
        assert_eq!(resp.status, 200, "request {i}: {}", px.stderr());
        assert_eq!(resp.body.len(), 1024);
    }
    let stot: u64 = stat_field(&ask(&sock, "show stat"), "tls_origin", "FRONTEND", "stot")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=2).contains(&stot),
        "20 keep-alive requests opened {stot} TLS connections"
    );
    drop(r);
    drop(s);

    assert_eq!(get(b_ok, "/").status, 200, "{}", px.stderr());
    assert_eq!(get(b_ok, "/").body_str(), "o\n");
    let bad = get(b_badca, "/");
    assert_eq!(bad.status, 503, "wrong CA");
    let wrong = get(b_name, "/");
    assert_eq!(wrong.status, 503, "verifyhost mismatch");
    let host_ok = request(
        b_host,
        "GET / HTTP/1.1\r\nHost: origin.example\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(host_ok.status, 200, "sni req.hdr(host) = origin.example");
    let host_bad = request(
        b_host,
        "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(host_bad.status, 503, "sni req.hdr(host) = evil.example");
    // A client certificate presented to a server that requires one.
    assert_eq!(get(b_cc, "/").status, 200, "server ... crt client.pem");
    // Without one: in TLS 1.2 the handshake fails (503, a connection
    // error); in TLS 1.3 the client's side of the handshake completes and
    // the server's refusal arrives when the response is read (502, as
    // HAProxy answers in that case).
    assert_eq!(
        get(b_nocc12, "/").status,
        503,
        "no client certificate, TLS 1.2"
    );
    assert_eq!(
        get(b_nocc, "/").status,
        502,
        "no client certificate, TLS 1.3"
    );
    // `sni ssl_fc_sni`: TLS in, TLS out with the client's name, verified.
    let r = curl(&[
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &resolve("origin.example", b_fc),
        "-w",
        "##%{http_code}",
        &https_url("origin.example", b_fc, "/"),
    ]);
    assert_eq!(split_w(&r.stdout), ("o\n", "200"), "{r:?}");
    let r = curl(&[
        "-k",
        "--resolve",
        &resolve("evil.example", b_fc),
        "-w",
        "##%{http_code}",
        &https_url("evil.example", b_fc, "/"),
    ]);
    assert_eq!(
        split_w(&r.stdout).1,
        "503",
        "ssl_fc_sni = evil.example: {r:?}"
    );

    // The failures are counted as connection errors.
    wait_until("econ counted", || {
        let csv = ask(&sock, "show stat");
        ["bk_badca", "bk_name", "bk_nocc12", "bk_fc", "bk_host"]
            .iter()
            .all(|b| {
                stat_field(&csv, b, "s1", "econ")
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|n| n >= 1)
            })
    });
}

/// Health checks of a `ssl` server run over TLS (HAProxy's rule: the
/// server's transport when no check `port`/`addr` is set): an HTTP check
/// against a TLS origin passes, and reports L7OK; with `no-check-ssl` the
/// clear request to the TLS port fails and the server goes down;
/// `check-ssl` with a check `port` ciphers the check too, and a plain
/// connect check over TLS reports L6OK.
#[test]
fn health_checks_over_tls() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let tls = free_addr(ip);
    let fe = free_addr(ip);
    let pki = Pki::new("checks");
    let ca = pki.ca("ca");
    let opem = pki.server(&ca, "origin", "origin.example");
    let sock = pki.path("admin.sock");
    let body = format!(
        "frontend tls_origin\n    bind {tls} ssl crt {opem}\n    default_backend to_term\n\
backend to_term\n    server t {o}\n\
frontend fe\n    bind {fe}\n    default_backend bk_http\n\
backend bk_http\n    option httpchk GET /\n\
    server tls_ok {tls} ssl verify required ca-file {ca} sni str(origin.example) check inter 100ms\n\
    server clear_check {tls} ssl verify none no-check-ssl check inter 100ms rise 1 fall 1\n\
    server port_check {tls} ssl verify none check-ssl check-sni origin.example port {port} check inter 100ms\n\
backend bk_tcp\n\
    server l6 {tls} ssl verify none check inter 100ms\n",
        opem = p(&opem),
        ca = p(&ca.cert),
        port = tls.port(),
    );
    let c = cfg(
        &format!("    stats socket {} level admin\n", p(&sock)),
        &body,
    );
    let px = Proxy::start(&c, &[tls, fe]);
    wait_sock(&sock);
    let status = |bk: &str, sv: &str| {
        let csv = ask(&sock, "show stat");
        (
            stat_field(&csv, bk, sv, "status").unwrap_or_default(),
            stat_field(&csv, bk, sv, "check_status").unwrap_or_default(),
        )
    };
    wait_until("TLS checks pass, the clear one fails", || {
        status("bk_http", "tls_ok") == ("UP".into(), "L7OK".into())
            && status("bk_http", "port_check") == ("UP".into(), "L7OK".into())
            && status("bk_http", "clear_check").0 == "DOWN"
            && status("bk_tcp", "l6") == ("UP".into(), "L6OK".into())
    });
    assert_eq!(get(fe, "/").status, 200, "{}", px.stderr());
}

/// `server ... ssl verify required` without a CA file is a configuration
/// error, unless `ssl-server-verify none` changes the default.
#[test]
fn server_verify_required_needs_ca_file() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let (_t, o) = term(ip, "o");
    let body = format!(
        "frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    server s1 {o} ssl verify required\n"
    );
    let (code, err) = start_fails(&cfg("", &body), &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("s1"), "{err}");
    // With ssl-server-verify none and no explicit verify, it starts.
    let body = format!(
        "frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    server s1 {o} ssl\n"
    );
    let (code, err) = start_fails(&cfg("", &body), &["-c"]);
    assert_ne!(
        code,
        Some(0),
        "ssl with the default verify required and no ca-file: {err}"
    );
    let (code, err) = start_fails(&cfg("    ssl-server-verify none\n", &body), &["-c"]);
    assert_eq!(code, Some(0), "{err}");
}

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
