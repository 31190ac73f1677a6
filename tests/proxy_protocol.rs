//! The PROXY protocol on the real binary: `bind ... accept-proxy` (v1 and
//! v2; the carried source reaches `X-Forwarded-For` and the log line, a
//! bad header closes the connection and is logged), `tcp-request
//! connection expect-proxy layer4`, and `server ... send-proxy` /
//! `send-proxy-v2`, alone against an origin that parses the header and
//! chained into a second instance with `accept-proxy`.

mod common;
use common::*;
use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};

fn syslog(ip: IpAddr) -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// The first log line that contains `needle` (the readiness probes of
/// `Proxy::start` log their own missing headers first).
fn log_with(s: &UdpSocket, needle: &str) -> String {
    let mut buf = [0u8; 8192];
    loop {
        let n = s.recv(&mut buf).expect("a log datagram");
        let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
        if line.contains(needle) {
            return line;
        }
    }
}

/// An origin that answers with the request head it received as the body.
fn echo(ip: IpAddr) -> SocketAddr {
    let (addr, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{head}",
                head.len()
            );
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    });
    addr
}

fn defaults() -> &'static str {
    "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n"
}

/// Sends `prefix` then a GET, returns the echoed request head.
fn get_with_prefix(bind: SocketAddr, prefix: &[u8]) -> String {
    let mut s = connect(bind);
    let mut req = prefix.to_vec();
    req.extend_from_slice(b"GET /pp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(&req).unwrap();
    let mut r = BufReader::new(s);
    let resp = read_response(&mut r, false).expect("a response");
    assert_eq!(resp.status, 200);
    resp.body_str()
}

#[test]
fn accept_proxy_v1_and_v2_set_the_client_address() {
    let ip = test_ip();
    let o = echo(ip);
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "{}frontend fe\n    bind {bind} accept-proxy\n    log {log_addr} local0\n    option httplog\n\
    option forwardfor\n    http-request set-header X-Src %[src]:%[src_port]\n\
    http-request set-header X-Dst %[dst]:%[dst_port]\n    default_backend b\n\
backend b\n    server s {o}\n",
        defaults()
    );
    let _p = Proxy::start(&cfg, &[bind]);

    let head = get_with_prefix(bind, b"PROXY TCP4 192.0.2.7 198.51.100.9 5555 8080\r\n");
    assert!(head.contains("X-Forwarded-For: 192.0.2.7\r\n"), "{head}");
    assert!(head.contains("X-Src: 192.0.2.7:5555\r\n"), "{head}");
    assert!(head.contains("X-Dst: 198.51.100.9:8080\r\n"), "{head}");
    let line = log_with(&sock, "GET /pp");
    assert!(line.contains("192.0.2.7:5555 ["), "{line}");

    let mut v2 = Vec::new();
    let src: SocketAddr = "[2001:db8::5]:4242".parse().unwrap();
    let dst: SocketAddr = "[2001:db8::80]:443".parse().unwrap();
    fairlead_proxyproto::encode_v2(
        fairlead_proxyproto::Command::Proxy,
        Some((src, dst)),
        &Default::default(),
        &mut v2,
    );
    let head = get_with_prefix(bind, &v2);
    assert!(head.contains("X-Forwarded-For: 2001:db8::5\r\n"), "{head}");
    assert!(head.contains("X-Dst: 2001:db8::80:443\r\n"), "{head}");
    let line = log_with(&sock, "GET /pp");
    assert!(line.contains("2001:db8::5:4242 ["), "{line}");

    // v2 LOCAL keeps the real addresses.
    let mut local = Vec::new();
    fairlead_proxyproto::encode_v2(
        fairlead_proxyproto::Command::Local,
        None,
        &Default::default(),
        &mut local,
    );
    let head = get_with_prefix(bind, &local);
    assert!(
        head.contains(&format!("X-Dst: {}:{}\r\n", bind.ip(), bind.port())),
        "{head}"
    );

    // No header: closed without a response, and logged.
    let mut s = connect(bind);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    let line = log_with(&sock, "does not look like a PROXY protocol header");
    assert!(line.contains(&format!("fe/{bind}")), "{line}");
}

#[test]
fn expect_proxy_layer4_only_when_the_rule_matches() {
    let ip = test_ip();
    let o = echo(ip);
    let bind = free_addr(ip);
    // Only clients from 127.0.0.1 must send a header; connections from
    // the test's own address are served as they are.
    let cfg = format!(
        "{}frontend fe\n    bind {bind}\n    option forwardfor\n\
    tcp-request connection expect-proxy layer4 if {{ src 127.0.0.1 }}\n    default_backend b\n\
backend b\n    server s {o}\n",
        defaults()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // From 127.0.0.1: the header is read.
    let head = get_with_prefix(bind, b"PROXY TCP4 203.0.113.4 198.51.100.9 1000 80\r\n");
    assert!(head.contains("X-Forwarded-For: 203.0.113.4\r\n"), "{head}");
    // From the test address: no header expected.
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(ip, 0).into()).unwrap();
    s.connect_timeout(&bind.into(), DEADLINE).unwrap();
    let mut s: TcpStream = s.into();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(b"GET /direct HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let resp = read_response(&mut BufReader::new(s), false).expect("a response");
    assert_eq!(resp.status, 200);
    assert!(
        resp.body_str()
            .contains(&format!("X-Forwarded-For: {ip}\r\n")),
        "{}",
        resp.body_str()
    );
}

/// An origin that records the PROXY header of each connection (parsed
/// with the crate under test's parser), then answers one request.
fn pp_origin(ip: IpAddr) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let (addr, _) = raw_origin(ip, move |mut s| {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        let used = loop {
            match fairlead_proxyproto::parse(&buf) {
                Ok(fairlead_proxyproto::Parsed::Done(_, used)) => break used,
                Ok(fairlead_proxyproto::Parsed::Incomplete) => {}
                Err(_) => return,
            }
            let n = s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        seen2.lock().unwrap().push(buf[..used].to_vec());
        let rest = buf[used..].to_vec();
        let mut r = BufReader::new(std::io::Cursor::new(rest).chain(s.try_clone().unwrap()));
        if read_head(&mut r).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        }
    });
    (addr, seen)
}

/// A client connection from `from` (any port).
fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(from, 0).into()).unwrap();
    s.connect_timeout(&to.into(), DEADLINE).unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s
}

#[test]
fn send_proxy_v1_and_v2_carry_the_client() {
    let ip = test_ip();
    let client_ip = test_ip();
    let (o, seen) = pp_origin(ip);
    let (b1, b2) = (free_addr(ip), free_addr(ip));
    let cfg = format!(
        "{}frontend f1\n    bind {b1}\n    default_backend v1\n\
frontend f2\n    bind {b2}\n    default_backend v2\n\
backend v1\n    server s {o} send-proxy\n\
backend v2\n    server s {o} send-proxy-v2\n",
        defaults()
    );
    let _p = Proxy::start(&cfg, &[b1, b2]);
    for (bind, v2) in [(b1, false), (b2, true)] {
        let mut s = connect_from(client_ip, bind);
        let cport = s.local_addr().unwrap().port();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let resp = read_response(&mut BufReader::new(s), false).expect("a response");
        assert_eq!(resp.status, 200);
        let hdr = seen.lock().unwrap().pop().expect("a header");
        let parsed = match fairlead_proxyproto::parse(&hdr).unwrap() {
            fairlead_proxyproto::Parsed::Done(h, n) => {
                assert_eq!(n, hdr.len());
                h
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(parsed.src(), Some(SocketAddr::new(client_ip, cport)));
        assert_eq!(parsed.dst(), Some(bind));
        if v2 {
            assert_eq!(parsed.version, fairlead_proxyproto::Version::V2);
        } else {
            let want = format!(
                "PROXY TCP4 {client_ip} {} {cport} {}\r\n",
                bind.ip(),
                bind.port()
            );
            assert_eq!(String::from_utf8_lossy(&hdr), want);
        }
    }
}

#[test]
fn send_proxy_into_accept_proxy_chain() {
    let ip = test_ip();
    let client_ip = test_ip();
    let o = echo(ip);
    let (edge, inner) = (free_addr(ip), free_addr(ip));
    let inner_cfg = format!(
        "{}frontend inner\n    bind {inner} accept-proxy\n    option forwardfor\n    default_backend b\n\
backend b\n    server s {o}\n",
        defaults()
    );
    let _i = Proxy::start(&inner_cfg, &[inner]);
    let edge_cfg = format!(
        "{}frontend edge\n    bind {edge}\n    default_backend b\n\
backend b\n    server s {inner} send-proxy-v2\n",
        defaults()
    );
    let _e = Proxy::start(&edge_cfg, &[edge]);
    let mut s = connect_from(client_ip, edge);
    s.write_all(b"GET /chain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let resp = read_response(&mut BufReader::new(s), false).expect("a response");
    assert_eq!(resp.status, 200);
    let body = resp.body_str();
    assert!(
        body.contains(&format!("X-Forwarded-For: {client_ip}\r\n")),
        "{body}"
    );
}

/// `fc_rcvd_proxy`, `fc_pp_authority` and `fc_pp_unique_id` read what the
/// received PROXY v2 header carried; a connection without one gives 0 and
/// nothing.
#[test]
fn fc_pp_fetches_read_the_received_tlvs() {
    let ip = test_ip();
    let (pp, plain) = (free_addr(ip), free_addr(ip));
    let rule = "    http-request return status 200 content-type text/plain lf-string \"%[fc_rcvd_proxy]|%[fc_pp_authority]|%[fc_pp_unique_id]\"\n";
    let cfg = format!(
        "{}frontend pp\n    bind {pp} accept-proxy\n{rule}frontend plain\n    bind {plain}\n{rule}",
        defaults()
    );
    let _p = Proxy::start(&cfg, &[plain]);
    let mut v2 = Vec::new();
    let opts = fairlead_proxyproto::V2Options {
        authority: Some(b"api.example".to_vec()),
        unique_id: Some(b"req-77".to_vec()),
        crc32c: true,
        ..Default::default()
    };
    let src: SocketAddr = "192.0.2.10:1000".parse().unwrap();
    let dst: SocketAddr = "192.0.2.20:80".parse().unwrap();
    let cmd = fairlead_proxyproto::Command::Proxy;
    fairlead_proxyproto::encode_v2(cmd, Some((src, dst)), &opts, &mut v2);
    assert_eq!(get_with_prefix(pp, &v2), "1|api.example|req-77");
    // v1 carries no TLV: received, but nothing to fetch.
    let v1 = b"PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n";
    assert_eq!(get_with_prefix(pp, v1), "1||");
    assert_eq!(get_with_prefix(plain, b""), "0||");
}

/// A TLS edge sends `send-proxy-v2-ssl-cn` with `proxy-v2-options
/// authority,unique-id,crc32c,ssl-cipher`: the header carries the ALPN,
/// the SNI as authority, the unique id, a valid CRC32C and the SSL TLV
/// (client flags, version, the client certificate's CN, the cipher).
#[test]
fn send_proxy_v2_ssl_cn_and_options_carry_the_tls_facts() {
    use common::tls::*;
    let ip = test_ip();
    let (o, seen) = pp_origin(ip);
    let edge = free_addr(ip);
    let pki = Pki::new("pp2");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let client = pki.leaf(&ca, "client", "pp client", &[], Key::Ec, true);
    let cfg = format!(
        "{}frontend edge\n    bind {edge} ssl crt {} ca-file {} verify optional alpn h2,http/1.1\n\
    unique-id-format uid-42\n    default_backend b\n\
backend b\n    server s {o} send-proxy-v2-ssl-cn proxy-v2-options authority,unique-id,crc32c,ssl-cipher\n",
        defaults(),
        p(&pem),
        p(&ca.cert)
    );
    let _p = Proxy::start(&cfg, &[edge]);
    let r = curl(&[
        "--http1.1",
        "--cacert",
        p(&ca.cert),
        "--cert",
        p(&client),
        "--resolve",
        &resolve("www.example", edge),
        &https_url("www.example", edge, "/"),
    ]);
    assert!(r.ok(), "{r:?}");
    let hdr = seen.lock().unwrap().pop().expect("a header");
    let h = match fairlead_proxyproto::parse(&hdr).unwrap() {
        fairlead_proxyproto::Parsed::Done(h, n) => {
            assert_eq!(n, hdr.len());
            h
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(h.alpn(), Some(&b"http/1.1"[..]));
    assert_eq!(h.authority(), Some(&b"www.example"[..]));
    assert_eq!(h.unique_id(), Some(&b"uid-42"[..]));
    assert!(
        h.tlv(0x03).is_some(),
        "a CRC32C TLV (checked by the parser)"
    );
    let ssl = h.ssl().expect("an SSL TLV");
    assert_eq!(ssl.client, 0x07, "PP2_CLIENT_SSL | CERT_CONN | CERT_SESS");
    assert_eq!(ssl.verify, 0);
    assert_eq!(ssl.version(), Some(&b"TLSv1.3"[..]));
    assert_eq!(ssl.cn(), Some(&b"pp client"[..]));
    let cipher = String::from_utf8_lossy(ssl.cipher().expect("a cipher")).to_string();
    assert!(cipher.starts_with("TLS_AES_"), "{cipher}");
}

/// HAProxy as the oracle, both ways: HAProxy reads the v2 TLVs Fairlead
/// sends (`fc_pp_authority`, `fc_pp_unique_id`, with a CRC32C it checks),
/// and Fairlead reads the ones HAProxy sends.
#[test]
fn proxy_v2_tlvs_interoperate_with_haproxy() {
    use common::tls::*;
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy not installed; skipped");
        return;
    };
    let ip = test_ip();
    let [fl_edge, hap_inner, hap_edge, fl_inner] = [(); 4].map(|_| free_addr(ip));
    let pki = Pki::new("pp2hap");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let answer = "    http-request return status 200 content-type text/plain lf-string \"%[fc_rcvd_proxy]|%[fc_pp_authority]|%[fc_pp_unique_id]\"\n";
    let hap_cfg = format!(
        "{}frontend inner\n    bind {hap_inner} accept-proxy\n{answer}\
frontend edge\n    bind {hap_edge} ssl crt {pem}\n    unique-id-format hap-uid\n    default_backend b\n\
backend b\n    server s {fl_inner} send-proxy-v2 proxy-v2-options authority,unique-id,crc32c\n",
        defaults(),
        pem = p(&pem)
    );
    let _h = Haproxy::start(&bin, &hap_cfg, &[], hap_inner);
    let fl_cfg = format!(
        "{}frontend inner\n    bind {fl_inner} accept-proxy\n{answer}\
frontend edge\n    bind {fl_edge} ssl crt {pem}\n    unique-id-format fl-uid\n    default_backend b\n\
backend b\n    server s {hap_inner} send-proxy-v2 proxy-v2-options authority,unique-id,crc32c\n",
        defaults(),
        pem = p(&pem)
    );
    let _f = Proxy::start(&fl_cfg, &[fl_edge, fl_inner]);
    for (edge, want) in [
        (fl_edge, "1|www.example|fl-uid"),
        (hap_edge, "1|www.example|hap-uid"),
    ] {
        let r = curl(&[
            "--cacert",
            p(&ca.cert),
            "--resolve",
            &resolve("www.example", edge),
            &https_url("www.example", edge, "/"),
        ]);
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.stdout, want, "through {edge}");
    }
}

/// The SSL TLV's client flags and its `cert-sig` (0x24) and `cert-key`
/// (0x25) sub-TLVs from a header an origin received.
fn cert_algs_seen(hdr: &[u8]) -> (u8, Option<String>, Option<String>) {
    let h = match fairlead_proxyproto::parse(hdr).unwrap() {
        fairlead_proxyproto::Parsed::Done(h, _) => h,
        other => panic!("{other:?}"),
    };
    let ssl = h
        .ssl()
        .expect("an SSL TLV (cert-sig and cert-key imply ssl)");
    let sub = |k: u8| {
        ssl.subs
            .iter()
            .find(|t| t.kind == k)
            .map(|t| String::from_utf8_lossy(&t.value).into_owned())
    };
    (ssl.client, sub(0x24), sub(0x25))
}

/// `proxy-v2-options cert-sig,cert-key` name the certificate the frontend
/// presented (not the client's): an EC key signed by an ECDSA CA, and a
/// self-signed RSA key. With HAProxy installed, its header carries the
/// same values.
#[test]
fn send_proxy_v2_cert_sig_and_cert_key_name_the_frontend_certificate() {
    use common::tls::*;
    let ip = test_ip();
    let pki = Pki::new("pp2algs");
    let ca = pki.ca("ca");
    let ec = pki.server(&ca, "ec", "www.example");
    let rsa_key = pki.path("rsa.key");
    let rsa_crt = pki.path("rsa.crt");
    pki.openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-sha256",
        "-nodes",
        "-keyout",
        p(&rsa_key),
        "-out",
        p(&rsa_crt),
        "-days",
        "30",
        "-subj",
        "/CN=www.example",
        "-addext",
        "subjectAltName=DNS:www.example",
    ]);
    let rsa = pki.path("rsa.pem");
    concat(&rsa, &[&rsa_crt, &rsa_key]);
    let hap = haproxy_bin();
    for (pem, want_sig, want_key) in [
        (&ec, "ecdsa-with-SHA256", "EC256"),
        (&rsa, "RSA-SHA256", "RSA2048"),
    ] {
        let (o, seen) = pp_origin(ip);
        let cfg = |edge: SocketAddr| {
            format!(
                "{}frontend edge\n    bind {edge} ssl crt {}\n    default_backend b\n\
backend b\n    server s {o} send-proxy-v2 proxy-v2-options cert-sig,cert-key\n",
                defaults(),
                p(pem)
            )
        };
        let fl_edge = free_addr(ip);
        let _p = Proxy::start(&cfg(fl_edge), &[fl_edge]);
        let mut edges = vec![fl_edge];
        let _h = hap.as_ref().map(|bin| {
            let e = free_addr(ip);
            edges.push(e);
            Haproxy::start(bin, &cfg(e), &[], e)
        });
        let mut got = Vec::new();
        for edge in edges {
            let r = curl(&[
                "--insecure",
                "--resolve",
                &resolve("www.example", edge),
                &https_url("www.example", edge, "/"),
            ]);
            assert!(r.ok(), "{r:?}");
            let hdr = seen.lock().unwrap().pop().expect("a header");
            got.push(cert_algs_seen(&hdr));
        }
        let want = (0x01, Some(want_sig.to_string()), Some(want_key.to_string()));
        assert_eq!(got[0], want, "Fairlead, {want_sig}");
        if let Some(h) = got.get(1) {
            assert_eq!(h, &want, "HAProxy, {want_sig}");
        }
    }
}

/// `proxy-v2-options unique-id` for an HTTP/2 client's stream: the
/// stream's unique id, as for HTTP/1 clients.
#[test]
fn send_proxy_v2_unique_id_for_http2_streams() {
    use common::tls::*;
    let ip = test_ip();
    let (o, seen) = pp_origin(ip);
    let edge = free_addr(ip);
    let pki = Pki::new("pp2h2uid");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "www.example");
    let cfg = format!(
        "{}frontend edge\n    bind {edge} ssl crt {} alpn h2,http/1.1\n\
    unique-id-format h2-%[path]\n    default_backend b\n\
backend b\n    server s {o} send-proxy-v2 proxy-v2-options unique-id\n",
        defaults(),
        p(&pem)
    );
    let _p = Proxy::start(&cfg, &[edge]);
    let r = curl(&[
        "--http2",
        "-w",
        "%{http_version}",
        "-o",
        "/dev/null",
        "--cacert",
        p(&ca.cert),
        "--resolve",
        &resolve("www.example", edge),
        &https_url("www.example", edge, "/stream7"),
    ]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "2", "an HTTP/2 exchange");
    let hdr = seen.lock().unwrap().pop().expect("a header");
    let h = match fairlead_proxyproto::parse(&hdr).unwrap() {
        fairlead_proxyproto::Parsed::Done(h, _) => h,
        other => panic!("{other:?}"),
    };
    assert_eq!(h.unique_id(), Some(&b"h2-/stream7"[..]));
    assert_eq!(h.alpn(), Some(&b"h2"[..]));
}

/// `proxy-v2-options unique-id` in HTTP mode as HAProxy 2.6: with no
/// `unique-id-format` the TLV is sent empty, and an id is cut at 127
/// bytes.
#[test]
fn send_proxy_v2_unique_id_empty_without_format_and_cut_at_127() {
    let ip = test_ip();
    let (o, seen) = pp_origin(ip);
    let (none, long) = (free_addr(ip), free_addr(ip));
    let id = "x".repeat(150);
    let cfg = format!(
        "{}frontend none\n    bind {none}\n    default_backend b\n\
frontend long\n    bind {long}\n    unique-id-format {id}\n    default_backend b\n\
backend b\n    server s {o} send-proxy-v2 proxy-v2-options unique-id\n",
        defaults(),
    );
    let _p = Proxy::start(&cfg, &[none, long]);
    for (bind, want) in [(none, String::new()), (long, "x".repeat(127))] {
        assert_eq!(get(bind, "/").status, 200);
        let hdr = seen.lock().unwrap().pop().expect("a header");
        let h = match fairlead_proxyproto::parse(&hdr).unwrap() {
            fairlead_proxyproto::Parsed::Done(h, _) => h,
            other => panic!("{other:?}"),
        };
        assert_eq!(h.unique_id(), Some(want.as_bytes()), "{bind}");
    }
}

/// A TCP origin that records the PROXY header of each connection and
/// the bytes after it (`want` of them), then says `hello` and closes.
type Seen = Arc<Mutex<Vec<(fairlead_proxyproto::Header, Vec<u8>)>>>;
fn tcp_pp_origin(ip: IpAddr, want: usize) -> (SocketAddr, Seen) {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let (addr, _) = raw_origin(ip, move |mut s| {
        let _ = s.set_read_timeout(Some(DEADLINE));
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        let (h, used) = loop {
            match fairlead_proxyproto::parse(&buf) {
                Ok(fairlead_proxyproto::Parsed::Done(h, used)) => break (h, used),
                Ok(fairlead_proxyproto::Parsed::Incomplete) => {}
                Err(_) => return,
            }
            let n = s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let mut rest = buf[used..].to_vec();
        while rest.len() < want {
            let n = s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        seen2.lock().unwrap().push((h, rest));
        let _ = s.write_all(b"hello\n");
    });
    (addr, seen)
}

/// One TCP connection from `from` to `bind` sending `data`; returns the
/// client port once the proxy closed it after the origin's `hello`.
fn tcp_exchange(from: IpAddr, bind: SocketAddr, data: &[u8]) -> u16 {
    let mut s = connect_from(from, bind);
    let port = s.local_addr().unwrap().port();
    s.write_all(data).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert_eq!(got, b"hello\n", "through {bind}");
    port
}

/// The header and payload the origin got from the client port `port`.
fn seen_from(seen: &Seen, from: IpAddr, port: u16) -> (fairlead_proxyproto::Header, Vec<u8>) {
    let src = Some(SocketAddr::new(from, port));
    let mut found = None;
    wait_until("the origin saw the connection", || {
        let mut v = seen.lock().unwrap();
        let i = v.iter().position(|(h, _)| h.src() == src);
        found = i.map(|i| v.remove(i));
        found.is_some()
    });
    found.unwrap()
}

/// The text after `key=` up to the next space in a log line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let at = line.find(&format!(" {key}=")).expect(key) + key.len() + 2;
    line[at..].split(' ').next().unwrap()
}

/// `unique-id-format` in TCP mode, on Fairlead and on HAProxy 2.6 with
/// the same configuration and connections: made once per stream on first
/// use, then the same value in a `tcp-request content` rule (`unique-id`
/// fetch, which sees the waiting bytes: `%[req.len]`), in the UNIQUE_ID
/// TLV of `send-proxy-v2` and in the log line (`%ID`). Made by the TLV
/// (at connect, the bytes no longer count), by the log line alone, and
/// without a format (an empty TLV, `%ID` is `-`).
#[test]
fn tcp_mode_unique_id_in_rules_tlv_and_log_as_haproxy() {
    let ip = test_ip();
    let client_ip = test_ip();
    let (o, seen) = tcp_pp_origin(ip, 10);
    // Without a PROXY header: reads the 10 bytes, says hello.
    let (plain, _) = raw_origin(ip, |mut s| {
        let mut buf = [0u8; 10];
        if s.read_exact(&mut buf).is_ok() {
            let _ = s.write_all(b"hello\n");
        }
    });
    let (log, log_addr) = syslog(ip);
    let cfg = |b: [SocketAddr; 4]| {
        format!(
            "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
    log {log_addr} local0\n    log-format \"fe=%f uid=%ID var=%[var(sess.x)] cp=%cp\"\n\
frontend rule\n    bind {}\n    unique-id-format ID-%ci-%fp-x_%[req.len]\n\
    tcp-request inspect-delay 3s\n    tcp-request content set-var(sess.x) unique-id if {{ req.len ge 10 }}\n\
    default_backend pp\n\
frontend tlv\n    bind {}\n    unique-id-format %b-%[req.len]-%s-%{{+Q}}ci\n    default_backend pp\n\
frontend logonly\n    bind {}\n    unique-id-format %b-%[req.len]-%s-%{{+Q}}ci\n    default_backend plain\n\
frontend none\n    bind {}\n    default_backend pp\n\
backend pp\n    server s {o} send-proxy-v2 proxy-v2-options unique-id\n\
backend plain\n    server s {plain}\n",
            b[0], b[1], b[2], b[3]
        )
    };
    let fl = [(); 4].map(|_| free_addr(ip));
    let _p = Proxy::start(&cfg(fl), &fl);
    let mut runs = vec![("fairlead", fl)];
    let hap = haproxy_bin().map(|bin| {
        let b = [(); 4].map(|_| free_addr(ip));
        runs.push(("haproxy", b));
        Haproxy::start(&bin, &cfg(b), &[], b[0])
    });
    if hap.is_none() {
        eprintln!("haproxy not installed; only Fairlead checked");
    }
    for (who, [rule, tlv, logonly, none]) in runs {
        let c = client_ip;
        // The rule makes it while the 10 bytes wait.
        let port = tcp_exchange(c, rule, b"0123456789");
        let want = format!("ID-{c}-{}-x_10", rule.port());
        let (h, rest) = seen_from(&seen, c, port);
        assert_eq!(rest, b"0123456789", "{who}");
        assert_eq!(h.unique_id(), Some(want.as_bytes()), "{who}");
        let line = log_with(&log, &format!("cp={port}"));
        assert_eq!(field(&line, "uid"), want, "{who}: {line}");
        assert_eq!(field(&line, "var"), want, "{who}: {line}");
        // The TLV makes it at connect: backend and server known, the
        // bytes already forwarded.
        let port = tcp_exchange(c, tlv, b"0123456789");
        let want = format!("pp-0-s-\"{c}\"");
        let (h, _) = seen_from(&seen, c, port);
        assert_eq!(h.unique_id(), Some(want.as_bytes()), "{who}");
        let line = log_with(&log, &format!("cp={port}"));
        assert_eq!(field(&line, "uid"), want, "{who}: {line}");
        assert_eq!(field(&line, "var"), "-", "{who}: {line}");
        // Only the log line uses it.
        let port = tcp_exchange(c, logonly, b"0123456789");
        let line = log_with(&log, &format!("cp={port}"));
        assert_eq!(
            field(&line, "uid"),
            format!("plain-0-s-\"{c}\""),
            "{who}: {line}"
        );
        // No format: an empty TLV, no id in the log.
        let port = tcp_exchange(c, none, b"0123456789");
        let (h, _) = seen_from(&seen, c, port);
        assert_eq!(h.unique_id(), Some(&b""[..]), "{who}");
        let line = log_with(&log, &format!("cp={port}"));
        assert_eq!(field(&line, "uid"), "-", "{who}: {line}");
    }
    drop(hap);
}
