//! TLS end to end against the real binary: termination (`bind ... ssl`),
//! certificate selection, client certificates and resumption
//! (origination, `server ... ssl`, is in `tls_servers.rs`; TCP mode,
//! certificate reload, idle memory and sslscan in `tls_ops.rs`). Certificates are made per test with the `openssl` command line;
//! the clients are `curl`, `openssl s_client` and `sslscan`.

mod common;
use common::tls::*;
use common::*;
use std::net::SocketAddr;
use std::path::Path;

/// A Prometheus sample's value from `/metrics` on `addr`.
fn metric(addr: SocketAddr, name: &str) -> Option<f64> {
    let body = get(addr, "/metrics").body_str();
    body.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
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

/// Two handshakes interleaved on one worker: client A's ClientHello is
/// answered, then client B connects and makes a request before A sends
/// its Finished. Each connection's `ssl_fc_sni` is its own SNI (it used to
/// be read from a per-thread note after the whole handshake, so A got
/// nothing or B's name).
#[test]
fn interleaved_handshakes_keep_their_own_sni() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let pki = Pki::new("interleave");
    let ca = pki.ca("ca");
    let a = pki.server(&ca, "a", "a.example");
    let b = pki.server(&ca, "b", "b.example");
    // One worker, so that both handshakes run on the same thread.
    let _p = Proxy::start(
        &format!(
            "global\n    nbthread 1\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind} ssl crt {} crt {} alpn http/1.1\n\
    http-response set-header x-sni %[ssl_fc_sni]\n    default_backend bk\n\
backend bk\n    server s1 {o}\n",
            p(&a),
            p(&b)
        ),
        &[bind],
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tls/interleave.py");
    let r = run_limited(
        "/usr/bin/python3",
        &[
            script,
            &bind.ip().to_string(),
            &bind.port().to_string(),
            p(&ca.cert),
        ],
        b"",
        None,
    );
    assert_eq!(r.stdout, "B b.example\nA a.example\n", "{r:?}");
}
