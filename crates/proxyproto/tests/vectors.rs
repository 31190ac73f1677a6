//! Byte-exact vectors: the specification's examples, and headers captured
//! from HAProxy 2.6.12 (`send-proxy`, `send-proxy-v2` with
//! `proxy-v2-options crc32c,unique-id`, `send-proxy-v2-ssl-cn` without
//! TLS) for a client 127.0.0.77:4000N connecting to 127.0.0.77:1700N.

use std::net::SocketAddr;

use fairlead_proxyproto::{
    encode_v1, encode_v2, parse, tlv, Addresses, Command, Error, Parsed, SslInfo, V2Options,
    Version,
};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn done(buf: &[u8]) -> (fairlead_proxyproto::Header, usize) {
    match parse(buf) {
        Ok(Parsed::Done(h, n)) => (h, n),
        other => panic!("{other:?}"),
    }
}

const HAPROXY_V2_CRC_UID: &str = "0d0a0d0a000d0a515549540a211100237f00004d7f00004d9c414269030004910b665505000d6162633132372e302e302e3737";
const HAPROXY_V2_SSL_NO_TLS: &str =
    "0d0a0d0a000d0a515549540a211100147f00004d7f00004d9c44426c2000050000000000";

#[test]
fn haproxy_send_proxy_v1() {
    let mut out = Vec::new();
    encode_v1(
        Some((sa("127.0.0.77:40003"), sa("127.0.0.77:17003"))),
        &mut out,
    );
    assert_eq!(out, b"PROXY TCP4 127.0.0.77 127.0.0.77 40003 17003\r\n");
    let (h, n) = done(&out);
    assert_eq!(n, out.len());
    assert_eq!(
        (h.version, h.src(), h.dst()),
        (
            Version::V1,
            Some(sa("127.0.0.77:40003")),
            Some(sa("127.0.0.77:17003"))
        )
    );
}

#[test]
fn haproxy_send_proxy_v2_crc32c_unique_id() {
    let want = hex(HAPROXY_V2_CRC_UID);
    let opts = V2Options {
        crc32c: true,
        unique_id: Some(b"abc127.0.0.77".to_vec()),
        ..V2Options::default()
    };
    let mut out = Vec::new();
    encode_v2(
        Command::Proxy,
        Some((sa("127.0.0.77:40001"), sa("127.0.0.77:17001"))),
        &opts,
        &mut out,
    );
    assert_eq!(out, want);
    let (h, n) = done(&want);
    assert_eq!(n, want.len());
    assert_eq!(h.command, Command::Proxy);
    assert_eq!(h.src(), Some(sa("127.0.0.77:40001")));
    assert_eq!(h.unique_id(), Some(&b"abc127.0.0.77"[..]));
    assert_eq!(h.tlv(tlv::CRC32C), Some(&[0x91, 0x0b, 0x66, 0x55][..]));
    // A flipped bit anywhere breaks the CRC.
    let mut bad = want.clone();
    bad[20] ^= 1;
    assert_eq!(parse(&bad), Err(Error::BadHeader));
}

#[test]
fn haproxy_send_proxy_v2_ssl_without_tls() {
    let want = hex(HAPROXY_V2_SSL_NO_TLS);
    let opts = V2Options {
        ssl: Some(SslInfo {
            cn: Some("ignored without TLS".into()),
            ..SslInfo::default()
        }),
        ..V2Options::default()
    };
    let mut out = Vec::new();
    encode_v2(
        Command::Proxy,
        Some((sa("127.0.0.77:40004"), sa("127.0.0.77:17004"))),
        &opts,
        &mut out,
    );
    assert_eq!(out, want);
    let ssl = done(&want).0.ssl().unwrap();
    assert_eq!((ssl.client, ssl.verify, ssl.subs.len()), (0, 0, 0));
}

#[test]
fn ssl_tlv_with_sub_tlvs_round_trip() {
    let opts = V2Options {
        alpn: Some(b"h2".to_vec()),
        authority: Some(b"example.com".to_vec()),
        ssl: Some(SslInfo {
            tls: true,
            cert_sess: true,
            cert_conn: true,
            verify: 0,
            version: Some("TLSv1.3".into()),
            cn: Some("client".into()),
            key_alg: Some("RSA2048".into()),
            sig_alg: Some("SHA256".into()),
            cipher: Some("TLS_AES_128_GCM_SHA256".into()),
        }),
        netns: Some(b"blue".to_vec()),
        crc32c: true,
        ..V2Options::default()
    };
    let mut out = Vec::new();
    encode_v2(
        Command::Proxy,
        Some((sa("[2001:db8::1]:1234"), sa("192.0.2.1:443"))),
        &opts,
        &mut out,
    );
    let (h, n) = done(&out);
    assert_eq!(n, out.len());
    assert_eq!(h.src(), Some(sa("[2001:db8::1]:1234")));
    assert_eq!(h.dst(), Some(sa("[::ffff:192.0.2.1]:443")));
    let kinds: Vec<u8> = h.tlvs.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        vec![tlv::CRC32C, tlv::ALPN, tlv::AUTHORITY, tlv::SSL, tlv::NETNS]
    );
    assert_eq!(h.alpn(), Some(&b"h2"[..]));
    assert_eq!(h.authority(), Some(&b"example.com"[..]));
    assert_eq!(h.netns(), Some(&b"blue"[..]));
    let ssl = h.ssl().unwrap();
    assert_eq!(
        ssl.client,
        tlv::CLIENT_SSL | tlv::CLIENT_CERT_SESS | tlv::CLIENT_CERT_CONN
    );
    assert_eq!(ssl.version(), Some(&b"TLSv1.3"[..]));
    assert_eq!(ssl.cn(), Some(&b"client"[..]));
    assert_eq!(ssl.cipher(), Some(&b"TLS_AES_128_GCM_SHA256"[..]));
    let sub_kinds: Vec<u8> = ssl.subs.iter().map(|t| t.kind).collect();
    assert_eq!(sub_kinds, vec![0x21, 0x22, 0x25, 0x24, 0x23]);
}

#[test]
fn spec_examples_v1() {
    for (line, src, dst) in [
        ("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n", "255.255.255.255:65535", "255.255.255.255:65535"),
        ("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", "192.168.0.1:56324", "192.168.0.11:443"),
        ("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"),
    ] {
        let (h, n) = done(format!("{line}GET / HTTP/1.1\r\n").as_bytes());
        assert_eq!(n, line.len());
        assert_eq!(h.addresses, Addresses::Inet { src: sa(src), dst: sa(dst) });
    }
    // The longest line is 107 bytes.
    let longest = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_eq!(longest.len(), 107);
    let (h, n) = done(longest.as_bytes());
    assert_eq!((h.addresses, n), (Addresses::Unknown, 107));
    let (h, n) = done(b"PROXY UNKNOWN\r\n");
    assert_eq!((h.addresses, n), (Addresses::Unknown, 15));
}

#[test]
fn v1_errors_and_incomplete() {
    let bad = [
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX",
        "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",
        "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
        "PROXY TCP4 ::1 ::1 1 2\r\n",
        "PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
    ];
    for b in bad {
        assert_eq!(parse(b.as_bytes()), Err(Error::BadHeader), "{b:?}");
    }
    assert_eq!(
        parse(b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"),
        Err(Error::BadProto)
    );
    assert_eq!(parse(b"PROXY UD"), Err(Error::BadProto));
    assert_eq!(parse(b"PROXY UNKNOWNX\r\n"), Err(Error::BadProto));
    assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Err(Error::NotHeader));
    assert_eq!(parse(b"PROXX"), Err(Error::NotHeader));
    let line = b"PROXY TCP4 127.0.0.77 127.0.0.77 40003 17003\r\n";
    for n in 0..line.len() {
        assert_eq!(parse(&line[..n]), Ok(Parsed::Incomplete), "{n}");
    }
    let long = format!("PROXY UNKNOWN {}", "a".repeat(100));
    assert_eq!(parse(long.as_bytes()), Err(Error::BadHeader));
}

#[test]
fn v2_local_unix_and_errors() {
    // LOCAL (health check), as HAProxy sends it: TLVs are not examined.
    let mut out = Vec::new();
    encode_v2(Command::Local, None, &V2Options::default(), &mut out);
    assert_eq!(out, hex("0d0a0d0a000d0a515549540a20000000"));
    let (h, n) = done(&out);
    assert_eq!(
        (h.command, h.addresses, n),
        (Command::Local, Addresses::Unknown, 16)
    );
    let mut local_junk = hex("0d0a0d0a000d0a515549540a20000003ffffff");
    local_junk.extend_from_slice(b"data");
    assert_eq!(done(&local_junk).1, 19);
    // AF_UNIX stream.
    let mut u = hex("0d0a0d0a000d0a515549540a213100d8");
    let mut p = vec![0u8; 216];
    p[..8].copy_from_slice(b"/tmp/src");
    p[108..116].copy_from_slice(b"/tmp/dst");
    u.extend_from_slice(&p);
    let (h, _) = done(&u);
    assert_eq!(
        h.addresses,
        Addresses::Unix {
            src: b"/tmp/src".to_vec(),
            dst: b"/tmp/dst".to_vec()
        }
    );
    // UDP over IPv4: accepted, local addresses kept.
    let mut d = hex("0d0a0d0a000d0a515549540a2112000c");
    d.extend_from_slice(&[0; 12]);
    assert_eq!(done(&d).0.addresses, Addresses::Unknown);
    // Errors.
    let cases = [
        (
            "0d0a0d0a000d0a515549540a1111000c000000000000000000000000",
            Error::NotHeader,
        ),
        (
            "0d0a0d0a000d0a515549540a2211000c000000000000000000000000",
            Error::BadHeader,
        ),
        (
            "0d0a0d0a000d0a515549540a2111000b0000000000000000000000",
            Error::BadHeader,
        ),
        (
            "0d0a0d0a000d0a515549540a2111000e00000000000000000000000001ff",
            Error::BadHeader,
        ),
        (
            "0d0a0d0a000d0a515549540a21110012000000000000000000000000030003000000",
            Error::BadHeader,
        ),
    ];
    for (h, e) in cases {
        assert_eq!(parse(&hex(h)), Err(e), "{h}");
    }
    // AUTHORITY at most 255, UNIQUE_ID at most 128.
    for (kind, max) in [(tlv::AUTHORITY, 255usize), (tlv::UNIQUE_ID, 128)] {
        for (len, ok) in [(max, true), (max + 1, false)] {
            let opts = V2Options {
                authority: (kind == tlv::AUTHORITY).then(|| vec![b'a'; len]),
                unique_id: (kind == tlv::UNIQUE_ID).then(|| vec![b'u'; len]),
                ..V2Options::default()
            };
            let mut out = Vec::new();
            encode_v2(
                Command::Proxy,
                Some((sa("1.2.3.4:1"), sa("5.6.7.8:2"))),
                &opts,
                &mut out,
            );
            assert_eq!(parse(&out).is_ok(), ok, "{kind} {len}");
        }
    }
    // Every prefix of a valid header is incomplete.
    let full = hex(HAPROXY_V2_CRC_UID);
    for n in 0..full.len() {
        assert_eq!(parse(&full[..n]), Ok(Parsed::Incomplete), "{n}");
    }
}

#[test]
fn v1_unknown_and_mixed_families() {
    let mut out = Vec::new();
    encode_v1(None, &mut out);
    assert_eq!(out, b"PROXY UNKNOWN\r\n");
    out.clear();
    encode_v1(Some((sa("10.0.0.1:1"), sa("[2001:db8::2]:2"))), &mut out);
    assert_eq!(out, b"PROXY TCP6 ::ffff:10.0.0.1 2001:db8::2 1 2\r\n");
    assert_eq!(done(&out).0.src(), Some(sa("[::ffff:10.0.0.1]:1")));
}
