//! End-to-end tests of the TLS options: `bind ... ssl`, `server ... ssl`,
//! `default-server`, and the global TLS defaults.

#[allow(unused_imports)]
use crate::test_util::*;
use crate::*;

fn bind_tls(p: &Parsed, fe: usize, bind: usize) -> Option<BindTls> {
    p.config.frontends[fe].binds[bind].tls.clone()
}

fn srv_tls(p: &Parsed, name: &str) -> Option<ServerTls> {
    p.config
        .backends
        .iter()
        .flat_map(|b| &b.servers)
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
        .tls
        .clone()
}

#[test]
fn bind_options_map_onto_bind_tls() {
    let p = ok("\
global
    crt-base /etc/ssl/private
    ca-base /etc/ssl/certs
frontend f
    bind :443 ssl crt site.pem crt /abs/other.pem crt-list list.txt strict-sni alpn h2,http/1.1 ca-file clients.pem verify optional ciphers ECDHE-RSA-AES128-GCM-SHA256 ciphersuites TLS_AES_128_GCM_SHA256 no-tls-tickets ssl-min-ver TLSv1.2 ssl-max-ver TLSv1.3
    bind :8443 ssl crt-list /abs/list.txt
    bind :80
");
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    let g = &p.config.global;
    assert_eq!(g.crt_base.as_deref(), Some("/etc/ssl/private"));
    assert_eq!(g.ca_base.as_deref(), Some("/etc/ssl/certs"));
    let t = bind_tls(&p, 0, 0).unwrap();
    assert_eq!(
        t,
        BindTls {
            crt: vec!["/etc/ssl/private/site.pem".into(), "/abs/other.pem".into()],
            // As HAProxy: crt-base is not applied to the list's path.
            crt_list: vec!["list.txt".into()],
            crt_base: Some("/etc/ssl/private".into()),
            strict_sni: true,
            ca_file: Some("/etc/ssl/certs/clients.pem".into()),
            verify: Verify::Optional,
            protocol: TlsProtocol {
                min_ver: Some(TlsVersion::Tls12),
                max_ver: Some(TlsVersion::Tls13),
                ciphers: Some("ECDHE-RSA-AES128-GCM-SHA256".into()),
                ciphersuites: Some("TLS_AES_128_GCM_SHA256".into()),
                alpn: vec!["h2".into(), "http/1.1".into()],
                no_tickets: true,
            },
        }
    );
    let t = bind_tls(&p, 0, 1).unwrap();
    assert_eq!(t.crt_list, ["/abs/list.txt"]);
    assert!(t.crt.is_empty());
    assert_eq!(t.verify, Verify::None);
    assert_eq!(t.protocol, TlsProtocol::default());
    assert_eq!(bind_tls(&p, 0, 2), None);
}

#[test]
fn bind_defaults_without_bases() {
    let p = ok("frontend f\n bind :443 ssl crt site.pem ca-file ca.pem\n");
    let t = bind_tls(&p, 0, 0).unwrap();
    assert_eq!(t.crt, ["site.pem"]);
    assert_eq!(t.crt_base, None);
    assert_eq!(t.ca_file.as_deref(), Some("ca.pem"));
    assert_eq!(t.verify, Verify::None);
    assert!(!t.strict_sni);
    assert!(t.protocol.alpn.is_empty());
    let g = &p.config.global;
    assert_eq!(g.ssl_server_verify, Verify::Required);
    assert_eq!(g.ssl_cachesize, None);
    assert_eq!((g.ca_base.clone(), g.crt_base.clone()), (None, None));
}

#[test]
fn bind_version_options() {
    use TlsVersion::*;
    let cases: &[(&str, Option<TlsVersion>, Option<TlsVersion>)] = &[
        ("", None, None),
        ("no-sslv3 no-tlsv10 no-tlsv11", None, None),
        ("no-tlsv13", None, Some(Tls12)),
        ("no-sslv3 no-tlsv10 no-tlsv11 no-tlsv12", Some(Tls13), None),
        ("no-tlsv12", Some(Tls13), None),
        ("force-tlsv12", Some(Tls12), Some(Tls12)),
        ("force-tlsv13", Some(Tls13), Some(Tls13)),
        ("ssl-min-ver TLSv1.3", Some(Tls13), None),
        ("ssl-max-ver TLSv1.2", None, Some(Tls12)),
        ("ssl-min-ver TLSv1.2", Some(Tls12), None),
    ];
    for (opts, min, max) in cases {
        let p = ok(&format!("frontend f\n bind :443 ssl crt a.pem {opts}\n"));
        let t = bind_tls(&p, 0, 0).unwrap();
        assert_eq!(
            (t.protocol.min_ver, t.protocol.max_ver),
            (*min, *max),
            "{opts}"
        );
        assert!(p.diagnostics.is_empty(), "{opts}: {:?}", warns(&p));
    }
    // Below TLSv1.2: accepted, with a warning, never offered.
    let p = ok("frontend f\n bind :443 ssl crt a.pem ssl-min-ver TLSv1.0\n");
    assert_eq!(
        bind_tls(&p, 0, 0).unwrap().protocol.min_ver,
        Some(TlsVersion::Tls12)
    );
    assert!(has(&warns(&p), "[WARNING] t.cfg:2: 'bind :443': 'ssl-min-ver TLSv1.0': Fairlead never offers versions below TLSv1.2"));
    // no-* with a bound: ignored, as HAProxy, with its warning.
    let p = ok("frontend f\n bind :443 ssl crt a.pem ssl-min-ver TLSv1.2 no-tlsv13\n");
    assert_eq!(bind_tls(&p, 0, 0).unwrap().protocol.max_ver, None);
    assert!(has(
        &warns(&p),
        "t.cfg:2: 'bind :443': no-sslv3/no-tlsv1x are ignored"
    ));
}

#[test]
fn global_bind_defaults_apply() {
    // The global section may even come last: defaults apply once the
    // whole configuration is read.
    let p = ok("\
frontend early
    bind :1443 ssl crt a.pem
global
    ssl-default-bind-ciphers ECDHE-RSA-AES256-GCM-SHA384
    ssl-default-bind-ciphersuites TLS_AES_256_GCM_SHA384
    ssl-default-bind-options no-sslv3 no-tlsv10 no-tlsv11 no-tlsv13 no-tls-tickets
    ssl-default-server-ciphers SRV-CIPHERS
    ssl-default-server-options ssl-min-ver TLSv1.3
    ssl-server-verify none
frontend f
    bind :443 ssl crt a.pem
    bind :444 ssl crt a.pem ciphers OWN ciphersuites OWN13 ssl-max-ver TLSv1.3
    bind :80
backend b
    server s1 10.0.0.1:443 ssl
    server s2 10.0.0.2:443 ssl ciphers MINE ssl-min-ver TLSv1.2
    server s3 10.0.0.3:80
");
    // A bound on the line and no-* options from the global section: the
    // latter are ignored, with HAProxy's warning.
    assert_eq!(
        warns(&p),
        ["[WARNING] t.cfg:12: 'bind :444': no-sslv3/no-tlsv1x are ignored when 'ssl-min-ver', 'ssl-max-ver' or 'force-*' is set (as in HAProxy). Use only 'ssl-min-ver' and 'ssl-max-ver' to fix."]
    );
    for fe in 0..2 {
        let t = bind_tls(&p, fe, 0).unwrap().protocol;
        assert_eq!(t.ciphers.as_deref(), Some("ECDHE-RSA-AES256-GCM-SHA384"));
        assert_eq!(t.ciphersuites.as_deref(), Some("TLS_AES_256_GCM_SHA384"));
        assert!(t.no_tickets);
        assert_eq!((t.min_ver, t.max_ver), (None, Some(TlsVersion::Tls12)));
    }
    let t = bind_tls(&p, 1, 1).unwrap().protocol;
    assert_eq!(t.ciphers.as_deref(), Some("OWN"));
    assert_eq!(t.ciphersuites.as_deref(), Some("OWN13"));
    assert_eq!(t.max_ver, Some(TlsVersion::Tls13));
    assert_eq!(bind_tls(&p, 1, 2), None);
    let s1 = srv_tls(&p, "s1").unwrap();
    assert_eq!(s1.verify, Verify::None);
    assert_eq!(s1.protocol.ciphers.as_deref(), Some("SRV-CIPHERS"));
    assert_eq!(s1.protocol.min_ver, Some(TlsVersion::Tls13));
    let s2 = srv_tls(&p, "s2").unwrap();
    assert_eq!(s2.protocol.ciphers.as_deref(), Some("MINE"));
    assert_eq!(s2.protocol.min_ver, Some(TlsVersion::Tls12));
    assert_eq!(srv_tls(&p, "s3"), None);
}

#[test]
fn global_defaults_mixing_bounds_and_no_options_warn() {
    let p = ok("\
global
    ssl-default-bind-options ssl-min-ver TLSv1.2 no-sslv3
frontend f
    bind :443 ssl crt a.pem
");
    assert!(has(
        &warns(&p),
        "t.cfg:4: 'bind :443': no-sslv3/no-tlsv1x are ignored"
    ));
}

#[test]
fn alpn_h2_on_http_binds() {
    // HTTP/2 by ALPN on an HTTP bind is accepted.
    let p = ok("frontend f\n mode http\n bind :443 ssl crt a.pem alpn h2,http/1.1\n");
    assert_eq!(
        bind_tls(&p, 0, 0).unwrap().protocol.alpn,
        ["h2", "http/1.1"]
    );
    // `proto h2` (h2c prior knowledge), `proto h1`, and a bad name.
    let p = ok("frontend f\n mode http\n bind :80 proto h2\n bind :81 proto h1\n");
    assert!(p.config.frontends[0].binds[0].proto_h2);
    assert!(!p.config.frontends[0].binds[1].proto_h2);
    // `server ... proto h2`: clear-text h2c, or over TLS (see below).
    let p = ok("backend b\n mode http\n server s 1.1.1.1:80 proto h2\n server t 1.1.1.1:81\n");
    assert!(p.config.backends[0].servers[0].proto_h2);
    assert!(!p.config.backends[0].servers[1].proto_h2);
    let e = alerts("backend b\n mode http\n server s 1.1.1.1:80 proto h9\n");
    assert!(has(&e, "unknown protocol 'h9'"), "{e:?}");
    let e = alerts("frontend f\n mode http\n bind :80 proto h3\n");
    assert!(
        has(&e, "'bind :80': 'proto': unknown protocol 'h3'"),
        "{e:?}"
    );
    // Mode tcp: forwarded as is.
    let p = ok("frontend f\n mode tcp\n bind :443 ssl crt a.pem alpn h2,http/1.1\n");
    assert_eq!(
        bind_tls(&p, 0, 0).unwrap().protocol.alpn,
        ["h2", "http/1.1"]
    );
    let p = ok("frontend f\n mode http\n bind :443 ssl crt a.pem alpn http/1.1\n");
    assert_eq!(bind_tls(&p, 0, 0).unwrap().protocol.alpn, ["http/1.1"]);
    // Without ssl the list is ignored, with a warning.
    let p = ok("frontend f\n mode http\n bind :80 alpn h2,http/1.1\n");
    assert_eq!(bind_tls(&p, 0, 0), None);
    assert!(has(
        &warns(&p),
        "[WARNING] t.cfg:3: 'bind :80': TLS options are ignored without 'ssl': 'alpn'"
    ));
    // HTTP/2 over TLS to servers of an HTTP backend: by ALPN, or with
    // `proto h2` whatever ALPN says.
    let p = ok("backend b\n mode http\n server s 1.1.1.1:443 ssl verify none alpn h2\n");
    assert_eq!(srv_tls(&p, "s").unwrap().protocol.alpn, ["h2"]);
    let p = ok("backend b\n mode http\n server s 1.1.1.1:443 ssl verify none proto h2\n");
    assert!(p.config.backends[0].servers[0].proto_h2);
    let p = ok("backend b\n server s 1.1.1.1:443 ssl verify none alpn h2,http/1.1\n");
    assert_eq!(srv_tls(&p, "s").unwrap().protocol.alpn, ["h2", "http/1.1"]);
}

#[test]
fn bind_errors_name_the_line() {
    let cases = [
        ("frontend f\n bind :443 ssl\n", "t.cfg:2: 'bind :443': 'ssl' needs a certificate: add 'crt <file|dir>' or 'crt-list <file>'"),
        ("frontend f\n bind :443 ssl strict-sni\n", "'ssl' needs a certificate"),
        ("frontend f\n bind :443 ssl crt a.pem verify sometimes\n", "t.cfg:2: 'bind :443': 'verify': unknown verify method 'sometimes', only 'none', 'optional' and 'required' are supported"),
        ("frontend f\n bind :443 ssl crt a.pem ssl-min-ver TLSv1.4\n", "t.cfg:2: 'bind :443': 'ssl-min-ver': unknown ssl/tls version 'TLSv1.4'; expects one of 'SSLv3', 'TLSv1.0', 'TLSv1.1', 'TLSv1.2' or 'TLSv1.3'"),
        ("frontend f\n bind :443 ssl crt a.pem ssl-max-ver tls1.2\n", "'ssl-max-ver': unknown ssl/tls version 'tls1.2'"),
        ("frontend f\n bind :443 ssl crt a.pem verify required\n", "t.cfg:2: 'bind :443': verify is enabled but no CA file specified."),
        ("frontend f\n bind :443 ssl crt a.pem no-tlsv12 no-tlsv13\n", "t.cfg:2: 'bind :443': all SSL/TLS versions are disabled"),
        ("frontend f\n bind :443 ssl crt a.pem force-tlsv11\n", "t.cfg:2: 'bind :443': no TLS version left: only TLSv1.1 would be offered, and Fairlead supports TLSv1.2 and TLSv1.3 only"),
        ("global\n ssl-default-bind-options no-tlsv12 no-tlsv13\nfrontend f\n bind :443 ssl crt a.pem\n", "t.cfg:4: 'bind :443': all SSL/TLS versions are disabled"),
        ("frontend f\n bind :443 ssl crt a.pem alpn h2,,x\n", "t.cfg:2: 'bind :443': 'alpn': empty protocol name in 'h2,,x'"),
        ("frontend f\n bind :443 ssl crt\n", "'crt' expects an argument"),
        ("frontend f\n bind :443 ssl crt \"\"\n", "'crt': missing file path"),
        ("frontend f\n bind :443 ssl crt a.pem crl-file crl.pem\n", "t.cfg:2: 'bind :443': option 'crl-file' is not implemented yet in Fairlead"),
        ("frontend f\n bind :443 ssl crt a.pem ca-verify-file ca.pem\n", "option 'ca-verify-file' is not implemented yet"),
        ("frontend f\n bind :443 ssl crt a.pem tls-ticket-keys k\n", "option 'tls-ticket-keys' is not implemented yet"),
        ("frontend f\n bind :443 ssl crt a.pem allow-0rtt\n", "option 'allow-0rtt' is not implemented yet"),
        ("frontend f\n bind :443 ssl crt a.pem curves X25519\n", "option 'curves' is not implemented yet"),
        ("frontend f\n bind :443 ssl crt a.pem generate-certificates\n", "option 'generate-certificates' is not implemented yet"),
    ];
    for (cfg, want) in cases {
        let e = alerts(cfg);
        assert!(has(&e, want), "config {cfg:?}: wanted {want:?}, got {e:#?}");
    }
}

#[test]
fn bind_options_with_warnings() {
    let p = ok("frontend f\n bind :443 ssl crt a.pem npn http/1.1 no-ca-names prefer-client-ciphers\n bind :80 crt a.pem strict-sni\n");
    let w = warns(&p);
    assert!(
        has(
            &w,
            "t.cfg:2: 'bind :443': 'npn' NPN is obsolete and not supported; ignored"
        ),
        "{w:?}"
    );
    assert!(has(
        &w,
        "t.cfg:2: 'bind :443': 'no-ca-names' has no effect in Fairlead (rustls); ignored"
    ));
    assert!(has(
        &w,
        "t.cfg:2: 'bind :443': 'prefer-client-ciphers' has no effect in Fairlead (rustls); ignored"
    ));
    assert!(has(
        &w,
        "t.cfg:3: 'bind :80': TLS options are ignored without 'ssl': 'crt', 'strict-sni'"
    ));
    assert!(bind_tls(&p, 0, 0).is_some());
    assert_eq!(bind_tls(&p, 0, 1), None);
}

#[test]
fn server_options_map_onto_server_tls() {
    let p = ok("\
global
    ca-base /etc/ssl/certs
    crt-base /etc/ssl/private
backend b
    mode http
    server s1 10.0.0.1:443 ssl ca-file ca.pem verifyhost api.example.com sni str(api.example.com) crt client.pem no-ssl-reuse ciphers C12 ciphersuites C13 alpn http/1.1 no-tls-tickets ssl-max-ver TLSv1.2
    server s2 10.0.0.2:443 ssl verify none sni ssl_fc_sni
    server s3 10.0.0.3:443 ssl verify none sni req.hdr(host)
    server s4 10.0.0.4:443 ssl verify none sni hdr(Host) force-tlsv13
    server s5 10.0.0.5:443 ssl verify required ca-file /abs/ca.pem
    server s6 10.0.0.6:80
");
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    assert_eq!(
        srv_tls(&p, "s1").unwrap(),
        ServerTls {
            verify: Verify::Required,
            ca_file: Some("/etc/ssl/certs/ca.pem".into()),
            verifyhost: Some("api.example.com".into()),
            sni: Some(SniSource::Fixed("api.example.com".into())),
            crt: Some("/etc/ssl/private/client.pem".into()),
            no_reuse: true,
            protocol: TlsProtocol {
                min_ver: None,
                max_ver: Some(TlsVersion::Tls12),
                ciphers: Some("C12".into()),
                ciphersuites: Some("C13".into()),
                alpn: vec!["http/1.1".into()],
                no_tickets: true,
            },
        }
    );
    let s2 = srv_tls(&p, "s2").unwrap();
    assert_eq!(s2.verify, Verify::None);
    assert_eq!(s2.sni, Some(SniSource::ClientSni));
    assert_eq!(s2.ca_file, None);
    assert_eq!(s2.verifyhost, None);
    assert!(!s2.no_reuse);
    assert_eq!(s2.protocol, TlsProtocol::default());
    assert_eq!(srv_tls(&p, "s3").unwrap().sni, Some(SniSource::HostHeader));
    let s4 = srv_tls(&p, "s4").unwrap();
    assert_eq!(s4.sni, Some(SniSource::HostHeader));
    assert_eq!(
        (s4.protocol.min_ver, s4.protocol.max_ver),
        (Some(TlsVersion::Tls13), Some(TlsVersion::Tls13))
    );
    let s5 = srv_tls(&p, "s5").unwrap();
    assert_eq!(s5.verify, Verify::Required);
    assert_eq!(s5.ca_file.as_deref(), Some("/abs/ca.pem"));
    assert_eq!(srv_tls(&p, "s6"), None);
}

#[test]
fn server_verify_needs_a_ca_file() {
    let e = alerts("backend be\n server s1 10.0.0.1:443 ssl\n");
    assert_eq!(e, ["[ALERT] t.cfg:2: server 'be/s1': verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line, or use 'ssl-server-verify none' in the global section to disable server-side verifications by default."]);
    // HAProxy's wording depends on the global setting only.
    let e = alerts("backend be\n server s1 10.0.0.1:443 ssl verify required\n");
    assert!(has(
        &e,
        "verify is enabled by default but no CA file specified."
    ));
    let e = alerts("global\n ssl-server-verify none\nbackend be\n server s1 10.0.0.1:443 ssl verify required\n");
    assert_eq!(
        e,
        ["[ALERT] t.cfg:4: server 'be/s1': verify is enabled but no CA file specified."]
    );
    // Defaulted from the global section, wherever it is.
    let p = ok("backend be\n server s1 10.0.0.1:443 ssl\nglobal\n ssl-server-verify none\n");
    assert_eq!(srv_tls(&p, "s1").unwrap().verify, Verify::None);
    assert_eq!(p.config.global.ssl_server_verify, Verify::None);
    // Without ssl nothing is checked.
    ok("backend be\n server s1 10.0.0.1:80 verify required\n");
}

#[test]
fn server_errors_name_the_line() {
    let cases = [
        ("backend b\n server s 1.1.1.1:443 ssl verify optional\n", "t.cfg:2: 'server s': 'verify': unknown verify method 'optional', only 'none' and 'required' are supported"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none sni var(txn.host)\n", "t.cfg:2: 'server s': sni expression 'var(txn.host)' is not supported yet; use str(<name>), ssl_fc_sni or req.hdr(host)"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none sni str()\n", "sni expression 'str()' is not supported yet"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none ssl-min-ver 1.2\n", "t.cfg:2: 'server s': 'ssl-min-ver': unknown ssl/tls version '1.2'"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none force-tlsv10\n", "t.cfg:2: server 'b/s': no TLS version left: only TLSv1.0 would be offered"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none check-alpn h2,\n", "'check-alpn': empty protocol name in 'h2,'"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none crl-file x\n", "option 'crl-file' is not implemented yet in Fairlead"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none curves X25519\n", "option 'curves' is not implemented yet"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none sigalgs x\n", "option 'sigalgs' is not implemented yet"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none client-sigalgs x\n", "option 'client-sigalgs' is not implemented yet"),
        ("backend b\n server s 1.1.1.1:443 ssl verify none allow-0rtt\n", "option 'allow-0rtt' is not implemented yet"),
        ("backend b\n default-server verify optional\n", "t.cfg:2: 'default-server': 'verify': unknown verify method 'optional'"),
    ];
    for (cfg, want) in cases {
        let e = alerts(cfg);
        assert!(has(&e, want), "config {cfg:?}: wanted {want:?}, got {e:#?}");
    }
}

#[test]
fn default_server_tls_inheritance() {
    let p = ok("\
global
    ssl-default-server-options no-tls-tickets
defaults
    default-server ssl verify none alpn http/1.1
backend b
    server s1 10.0.0.1:443
    server s2 10.0.0.2:80 no-ssl
    server s3 10.0.0.3:443 tls-tickets sni str(x.example)
backend c
    default-server no-ssl
    server c1 10.0.0.4:80
    server c2 10.0.0.5:443 ssl
");
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    let s1 = srv_tls(&p, "s1").unwrap();
    assert_eq!(s1.verify, Verify::None);
    assert_eq!(s1.protocol.alpn, ["http/1.1"]);
    assert!(s1.protocol.no_tickets);
    assert_eq!(srv_tls(&p, "s2"), None);
    let s3 = srv_tls(&p, "s3").unwrap();
    assert!(!s3.protocol.no_tickets);
    assert_eq!(s3.sni, Some(SniSource::Fixed("x.example".into())));
    assert_eq!(srv_tls(&p, "c1"), None);
    // The settings given with `ssl` stay after `no-ssl`.
    assert_eq!(srv_tls(&p, "c2").unwrap().verify, Verify::None);
}

#[test]
fn server_warnings() {
    let p = ok("\
backend b
    server s1 10.0.0.1:80 verify none sni str(x) npn h2
    server s2 10.0.0.2:80 no-ssl verify none
backend t
    server s3 10.0.0.3:443 ssl verify none sni req.hdr(host)
");
    let w = warns(&p);
    assert!(has(&w, "[WARNING] t.cfg:2: 'server s1': TLS options are ignored without 'ssl': 'verify', 'sni'"), "{w:?}");
    assert!(has(
        &w,
        "t.cfg:2: 'server s1': 'npn' NPN is obsolete and not supported; ignored"
    ));
    assert!(!has(&w, "t.cfg:3:"));
    assert!(has(&w, "t.cfg:5: server 't/s3': 'sni' uses the Host header, which backend 't' never reads as it is not in 'mode http'; no SNI will be sent"));
}

#[test]
fn global_tls_keywords() {
    let p = ok("\
global
    tune.ssl.cachesize 100000
    tune.ssl.default-dh-param 2048
    ssl-dh-param-file /etc/dh.pem
    tune.ssl.lifetime 600
    tune.ssl.maxrecord 1400
    ssl-default-bind-options prefer-client-ciphers
    ssl-engine rdrand
");
    let g = &p.config.global;
    assert_eq!(g.ssl_cachesize, Some(100000));
    let w = warns(&p);
    assert!(!has(&w, "t.cfg:2:"));
    assert!(
        has(
            &w,
            "t.cfg:3: 'tune.ssl.default-dh-param': DHE is not used by rustls (ECDHE only); ignored"
        ),
        "{w:?}"
    );
    assert!(has(
        &w,
        "t.cfg:4: 'ssl-dh-param-file': DHE is not used by rustls"
    ));
    assert!(has(
        &w,
        "t.cfg:5: 'tune.ssl.lifetime': the TLS session lifetime is not configurable yet; ignored"
    ));
    assert!(has(&w, "t.cfg:6: 'tune.ssl.maxrecord'"));
    assert!(has(&w, "t.cfg:7: 'ssl-default-bind-options': 'prefer-client-ciphers' has no effect in Fairlead (rustls); ignored"));
    assert!(has(&w, "t.cfg:8: 'ssl-engine': an OpenSSL setting"));
    assert!(!w.iter().any(|l| l.contains("TLS is not implemented")));

    let cases = [
        ("global\n ca-base /a\n ca-base /b\n", "t.cfg:3: 'ca-base': 'ca-base' already specified."),
        ("global\n crt-base\n", "t.cfg:2: 'crt-base': expects one argument"),
        ("global\n crt-base /a /b\n", "'crt-base': expects one argument (got 2)"),
        ("global\n ssl-server-verify optional\n", "t.cfg:2: 'ssl-server-verify': expects 'none' or 'required' as argument."),
        ("global\n ssl-default-bind-options no-sslv2\n", "t.cfg:2: 'ssl-default-bind-options': unknown option 'no-sslv2' on global statement 'ssl-default-bind-options'."),
        ("global\n ssl-default-server-options ssl-min-ver TLSv9\n", "'ssl-default-server-options': 'ssl-min-ver': unknown ssl/tls version 'TLSv9'"),
        ("global\n ssl-default-bind-options\n", "global statement 'ssl-default-bind-options' expects an option as an argument."),
        ("global\n ssl-default-bind-ciphers A B\n", "t.cfg:2: 'ssl-default-bind-ciphers': expects one argument (got 2)"),
        ("global\n tune.ssl.cachesize lots\n", "t.cfg:2: 'tune.ssl.cachesize'"),
    ];
    for (cfg, want) in cases {
        let e = alerts(cfg);
        assert!(has(&e, want), "config {cfg:?}: wanted {want:?}, got {e:#?}");
    }
}

#[test]
fn catalog_statuses() {
    let all = keyword_support();
    let status = |sec: &str, kw: &str| {
        all.iter()
            .find(|k| k.section == sec && k.keyword == kw)
            .map(|k| k.status)
    };
    for kw in [
        "ca-base",
        "crt-base",
        "ssl-default-bind-ciphers",
        "ssl-default-bind-ciphersuites",
        "ssl-default-bind-options",
        "ssl-default-server-ciphers",
        "ssl-default-server-ciphersuites",
        "ssl-default-server-options",
        "ssl-server-verify",
        "tune.ssl.cachesize",
    ] {
        assert_eq!(status("global", kw), Some(Support::Implemented), "{kw}");
    }
    for kw in [
        "tune.ssl.default-dh-param",
        "ssl-dh-param-file",
        "tune.ssl.*",
    ] {
        assert_eq!(status("global", kw), Some(Support::Warning), "{kw}");
    }
    for kw in [
        "ssl",
        "crt",
        "crt-list",
        "alpn",
        "ca-file",
        "verify",
        "strict-sni",
        "ssl-min-ver",
        "ssl-max-ver",
        "ciphers",
        "ciphersuites",
        "no-tls-tickets",
        "no-tlsv13",
        "force-tlsv12",
    ] {
        assert_eq!(status("bind", kw), Some(Support::Implemented), "bind {kw}");
    }
    for kw in ["npn", "no-ca-names", "prefer-client-ciphers"] {
        assert_eq!(status("bind", kw), Some(Support::Warning), "bind {kw}");
    }
    for kw in [
        "crl-file",
        "ca-verify-file",
        "tls-ticket-keys",
        "allow-0rtt",
        "curves",
    ] {
        assert_eq!(status("bind", kw), Some(Support::NotYet), "bind {kw}");
    }
    for kw in [
        "ssl",
        "no-ssl",
        "verify",
        "verifyhost",
        "no-verifyhost",
        "sni",
        "ca-file",
        "crt",
        "alpn",
        "no-ssl-reuse",
        "ssl-reuse",
        "tls-tickets",
        "no-tls-tickets",
        "force-tlsv13",
    ] {
        assert_eq!(
            status("server", kw),
            Some(Support::Implemented),
            "server {kw}"
        );
    }
    for kw in ["check-ssl", "check-sni", "no-check-ssl", "check-alpn"] {
        assert_eq!(
            status("server", kw),
            Some(Support::Implemented),
            "server {kw}"
        );
    }
    for kw in ["crl-file", "curves", "allow-0rtt"] {
        assert_eq!(status("server", kw), Some(Support::NotYet), "server {kw}");
    }
    assert_eq!(status("server", "npn"), Some(Support::Warning));
    assert!(!all
        .iter()
        .any(|k| k.note.contains("TLS is not implemented")));
}

/// HAProxy's rule for the checks' transport: the server's own when no
/// check `port`/`addr` is set, `check-ssl` forces TLS, `no-check-ssl`
/// clear text; `check-sni` is kept.
#[test]
fn check_transport_follows_haproxy() {
    let cfg = crate::test_util::ok(
        "backend b
 server a 1.1.1.1:443 ssl verify none check
 server p 1.1.1.1:443 ssl verify none check port 8443
 server f 1.1.1.1:80 check check-ssl check-sni x.example
 server n 1.1.1.1:443 ssl verify none check no-check-ssl
 server c 1.1.1.1:80 check
",
    );
    let s = &cfg.config.backends[0].servers;
    let tls: Vec<bool> = s.iter().map(|s| s.check_uses_tls()).collect();
    assert_eq!(tls, [true, false, true, false, false]);
    assert_eq!(s[2].check_sni.as_deref(), Some("x.example"));
}

#[test]
fn server_pool_options() {
    let p = ok("backend b\n mode http\n default-server pool-purge-delay 2s\n server s 1.1.1.1:80 proto h2 max-reuse 3 pool-max-conn 0\n server t 1.1.1.2:80 max-reuse -1 pool-max-conn -1\n server u 1.1.1.3:80\n");
    let s = &p.config.backends[0].servers;
    assert_eq!(s[0].pool.max_reuse, Some(3));
    assert_eq!(s[0].pool.max_idle, Some(0));
    assert_eq!(s[0].pool.purge_delay, std::time::Duration::from_secs(2));
    assert_eq!(s[1].pool.max_reuse, None);
    assert_eq!(s[1].pool.max_idle, None);
    assert_eq!((s[2].pool.max_reuse, s[2].pool.max_idle), (None, None));
    assert_eq!(
        s[2].pool.purge_delay,
        std::time::Duration::from_secs(2),
        "default-server sets it for the servers after it"
    );
    let w = warns(&p);
    assert!(
        has(&w, "server 'b/t': 'max-reuse', 'pool-max-conn' and 'pool-purge-delay' apply only to HTTP/2"),
        "{w:?}"
    );
    assert!(!w.iter().any(|x| x.contains("server 'b/s'")), "{w:?}");
    let e = alerts("backend b\n server s 1.1.1.1:80 max-reuse lots\n");
    assert!(
        has(&e, "'max-reuse' expects -1 or a positive integer"),
        "{e:?}"
    );
}
