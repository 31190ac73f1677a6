//! Unit tests of the protocol checks' wire format.

use super::*;

#[test]
fn mysql_login_packets() {
    let p = mysql_request("haproxy", true);
    // 4-byte header (length 41, sequence 1), 32 bytes of fixed fields,
    // "haproxy\0", an empty auth response, then COM_QUIT.
    assert_eq!(&p[..4], &[41, 0, 0, 1]);
    assert_eq!(
        &p[4..13],
        &[0x00, 0x82, 0x00, 0x00, 0x00, 0x80, 0x00, 0x01, 0x21]
    );
    assert_eq!(&p[13..36], &[0u8; 23]);
    assert_eq!(&p[36..45], b"haproxy\0\0");
    assert_eq!(&p[45..], &[1, 0, 0, 0, 1]);
    let p = mysql_request("u", false);
    assert_eq!(
        p,
        [8, 0, 0, 1, 0x00, 0x80, 0, 0, 1, b'u', 0, 0, 1, 0, 0, 0, 1]
    );
}

#[test]
fn mysql_replies() {
    let hs = [5, 0, 0, 0, 10, b'1', b'.', b'0', 0];
    assert_eq!(mysql_packet(&hs[..3], 0, false), Verdict::Wait);
    assert_eq!(mysql_packet(&hs[..6], 0, false), Verdict::Wait);
    assert_eq!(
        mysql_packet(&hs[..6], 0, true),
        Verdict::Fail(CheckStatus::L7Rsp, None, None)
    );
    assert_eq!(mysql_packet(&hs, 0, false), Verdict::Pass);
    assert_eq!(mysql_after_handshake(&hs), Some(9));
    let mut both = hs.to_vec();
    both.extend_from_slice(&[
        9, 0, 0, 2, 0xff, 0x15, 0x04, b'#', b'2', b'8', b'x', b'y', b'z',
    ]);
    assert_eq!(
        mysql_packet(&both, 9, false),
        Verdict::Fail(CheckStatus::L7Sts, Some(1045), Some("#28xyz".into()))
    );
    // A huge announced length never reads out of bounds.
    assert_eq!(
        mysql_packet(&[0xff, 0xff, 0xff, 0], 0, false),
        Verdict::Wait
    );
}

#[test]
fn pgsql_startup() {
    let p = pgsql_request("postgres");
    assert_eq!(&p[..8], &[0, 0, 0, 23, 0, 3, 0, 0]);
    assert_eq!(&p[8..], b"user\0postgres\0\0");
    assert_eq!(p.len(), 23);
    let err = b"E\0\0\0\x50SFATAL\0VFATAL\0C28000\0Mno\0\0";
    assert_eq!(pgsql_error_text(err), "FATAL");
    assert_eq!(pgsql_error_text(b"E"), "");
}

#[test]
fn ldap_replies() {
    let ok = [
        0x30, 0x0c, 0x02, 0x01, 0x01, 0x61, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00,
    ];
    assert_eq!(ldap_bind_response(&ok, false), Verdict::Pass);
    assert_eq!(ldap_bind_response(&ok[..8], false), Verdict::Wait);
    let mut bad = ok;
    bad[9] = 49;
    assert_eq!(
        ldap_bind_response(&bad, false),
        Verdict::Fail(
            CheckStatus::L7Sts,
            Some(49),
            Some("See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9".into())
        )
    );
    // Long-form length on 4 bytes (Active Directory).
    let ad = [
        0x30, 0x84, 0, 0, 0, 0x0c, 0x02, 0x01, 0x01, 0x61, 0x84, 0, 0, 0, 7, 0x0a, 0x01, 0x00,
        0x04, 0x00, 0x04, 0x00,
    ];
    assert_eq!(ldap_bind_response(&ad, false), Verdict::Pass);
    let not = Verdict::Fail(CheckStatus::L7Rsp, None, Some("Not LDAPv3 protocol".into()));
    assert_eq!(ldap_bind_response(&[0x30, 0x83, 0, 0, 0, 0, 0], false), not);
    let mut wrong_id = ok;
    wrong_id[4] = 2;
    assert_eq!(ldap_bind_response(&wrong_id, false), not);
}

#[test]
fn ssl_hello_layout() {
    let h = ssl_hello(0x01020304);
    assert_eq!(h.len(), 5 + 0x79);
    assert_eq!(&h[..11], &[0x16, 3, 0, 0, 0x79, 1, 0, 0, 0x75, 3, 0]);
    assert_eq!(&h[11..15], &[1, 2, 3, 4]);
    assert_eq!(&h[15..43], b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n");
    assert_eq!(&h[43..46], &[0, 0, 0x4e]);
    assert_eq!(&h[46..48], &[0, 1]);
    assert_eq!(&h[h.len() - 4..], &[0, 0x3a, 1, 0]);
}

fn agent_hello(items: &[(&str, u8, &[u8])], flags: u32) -> Vec<u8> {
    let mut f = vec![SPOP_AGENT_HELLO];
    f.extend_from_slice(&flags.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    for (k, ty, v) in items {
        put_str(k.as_bytes(), &mut f);
        f.push(*ty);
        f.extend_from_slice(v);
    }
    let mut out = (f.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&f);
    out
}

#[test]
fn spop_frames() {
    let mut v = Vec::new();
    put_varint(16380, &mut v);
    assert_eq!(v, [0xfc, 0xf0, 0x06]);
    let mut p = 0;
    assert_eq!(get_varint(&v, &mut p), Some(16380));
    assert_eq!(get_varint(&[0xff, 0xff], &mut 0), None);

    let hello = spop_hello();
    let len = u32::from_be_bytes([hello[0], hello[1], hello[2], hello[3]]) as usize;
    assert_eq!(len + 4, hello.len());
    assert_eq!(&hello[4..11], &[1, 0, 0, 0, 1, 0, 0]);
    assert!(hello.ends_with(b"\x0bhealthcheck\x11"));

    let mut vsn = Vec::new();
    put_str(b"2.0", &mut vsn);
    let mut mfs = Vec::new();
    put_varint(16380, &mut mfs);
    let mut caps = Vec::new();
    put_str(b"", &mut caps);
    let good = agent_hello(
        &[
            ("version", T_STR, &vsn),
            ("max-frame-size", T_UINT32, &mfs),
            ("capabilities", T_STR, &caps),
        ],
        1,
    );
    assert_eq!(spop_agent_hello(&good, false), Verdict::Pass);
    assert_eq!(
        spop_agent_hello(&good[..good.len() - 1], false),
        Verdict::Wait
    );
    let fail = |s: &str| Verdict::Fail(CheckStatus::L7Rsp, None, Some(s.into()));
    assert_eq!(
        spop_agent_hello(&good[..good.len() - 1], true),
        fail("invalid frame received")
    );
    let mut v1 = Vec::new();
    put_str(b"1.0", &mut v1);
    let old = agent_hello(
        &[("version", T_STR, &v1), ("max-frame-size", T_UINT32, &mfs)],
        1,
    );
    assert_eq!(spop_agent_hello(&old, false), fail("unsupported version"));
    let no_size = agent_hello(&[("version", T_STR, &vsn)], 1);
    assert_eq!(
        spop_agent_hello(&no_size, false),
        fail("max-frame-size value not found")
    );
    let frag = agent_hello(&[("version", T_STR, &vsn)], 0);
    assert_eq!(
        spop_agent_hello(&frag, false),
        fail("fragmentation not supported")
    );
    let mut small = Vec::new();
    put_varint(100, &mut small);
    let tiny = agent_hello(
        &[
            ("version", T_STR, &vsn),
            ("max-frame-size", T_UINT32, &small),
        ],
        1,
    );
    assert_eq!(
        spop_agent_hello(&tiny, false),
        fail("max-frame-size too big or too small")
    );
    // AGENT-DISCONNECT with status-code 2 and a message.
    let mut d = vec![SPOP_AGENT_DISCON, 0, 0, 0, 1, 0, 0];
    put_str(b"status-code", &mut d);
    d.push(T_UINT32);
    put_varint(2, &mut d);
    put_str(b"message", &mut d);
    d.push(T_STR);
    put_str(b"bye", &mut d);
    let mut framed = (d.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&d);
    assert_eq!(spop_agent_hello(&framed, false), fail("a timeout occurred"));
    assert_eq!(
        spop_agent_hello(b"HTTP/1.1 400 Bad", true),
        fail("invalid frame received")
    );
}

/// The parsers never panic nor read out of bounds on arbitrary replies
/// (what the fuzz target does, on a fixed pseudo-random set here).
#[test]
fn parsers_survive_arbitrary_replies() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut passed = 0;
    for i in 0..20_000usize {
        let len = i % 70;
        let data: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly small bytes, so that lengths and types line up.
                if x.is_multiple_of(3) {
                    (x >> 8) as u8
                } else {
                    (x >> 8) as u8 % 16
                }
            })
            .collect();
        passed += crate::fuzz_replies(&data);
    }
    // Some random replies are valid MySQL packets.
    assert!(passed > 0);
}
