//! TLS toward servers against the real binary: origination
//! (`server ... ssl`, verification, SNI), health checks over TLS, and
//! `verify required` without a CA. Certificates are made per test with
//! the `openssl` command line.

mod common;
use common::tls::*;
use common::*;
use std::io::{BufReader, Write};
use std::net::SocketAddr;

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
/// connect check over TLS reports L6OK. The agent of a `ssl check-ssl`
/// server speaks clear text, as in HAProxy 2.6 (its agent check always
/// uses the raw transport; no keyword asks for TLS): the agent reads the
/// plain `agent-send` string and its `50%` applies. `check-alpn` sets the
/// ALPN the check offers.
#[test]
fn health_checks_over_tls() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let h2 = heard.clone();
    let (agent, _) = raw_origin(ip, move |mut s| {
        use std::io::Read;
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut b = [0u8; 64];
        let n = s.read(&mut b).unwrap_or(0);
        h2.lock().unwrap().push(b[..n].to_vec());
        let _ = s.write_all(b"50%\n");
    });
    let tls = free_addr(ip);
    let tls_h2 = free_addr(ip);
    let fe = free_addr(ip);
    let pki = Pki::new("checks");
    let ca = pki.ca("ca");
    let opem = pki.server(&ca, "origin", "origin.example");
    let sock = pki.path("admin.sock");
    let body = format!(
        "frontend tls_origin\n    bind {tls} ssl crt {opem}\n    default_backend to_term\n\
backend to_term\n    server t {o}\n\
frontend h2_only\n    bind {tls_h2} ssl crt {opem} alpn h2\n    default_backend to_term\n\
frontend fe\n    bind {fe}\n    default_backend bk_http\n\
backend bk_http\n    option httpchk GET /\n\
    server tls_ok {tls} ssl verify required ca-file {ca} sni str(origin.example) check inter 100ms\n\
    server clear_check {tls} ssl verify none no-check-ssl check inter 100ms rise 1 fall 1\n\
    server port_check {tls} ssl verify none check-ssl check-sni origin.example port {port} check inter 100ms\n\
backend bk_tcp\n\
    server l6 {tls} ssl verify none check inter 100ms\n\
    server agent_clear {tls} ssl verify none check-ssl check inter 100ms weight 100 \
agent-check agent-addr {aip} agent-port {aport} agent-inter 100ms agent-send \"ping\\n\"\n\
backend bk_alpn\n\
    server alpn_h2 {tls_h2} ssl verify none check inter 100ms check-alpn h2\n\
    server alpn_h1 {tls_h2} ssl verify none check inter 100ms rise 1 fall 1 check-alpn http/1.1\n",
        opem = p(&opem),
        ca = p(&ca.cert),
        port = tls.port(),
        aip = agent.ip(),
        aport = agent.port(),
    );
    let c = cfg(
        &format!("    stats socket {} level admin\n", p(&sock)),
        &body,
    );
    let px = Proxy::start(&c, &[tls, tls_h2, fe]);
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
    // `check-alpn` is what the check offers: the h2-only listener takes
    // `h2` and refuses the handshake that offers only `http/1.1`.
    wait_until("check-alpn h2 passes, check-alpn http/1.1 fails", || {
        status("bk_alpn", "alpn_h2") == ("UP".into(), "L6OK".into())
            && status("bk_alpn", "alpn_h1").0 == "DOWN"
    });
    assert_eq!(get(fe, "/").status, 200, "{}", px.stderr());
    wait_until("the clear agent's 50% applies", || {
        stat_field(&ask(&sock, "show stat"), "bk_tcp", "agent_clear", "weight").as_deref()
            == Some("50")
    });
    let heard = heard.lock().unwrap();
    assert!(!heard.is_empty());
    for msg in heard.iter() {
        assert_eq!(
            msg.as_slice(),
            b"ping\n",
            "{}",
            String::from_utf8_lossy(msg)
        );
    }
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
