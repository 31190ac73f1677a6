//! Wire tests against bytes captured from HAProxy 2.6.12.

use crate::config::PeersSection;
use crate::wire::*;
use fairlead_stick::spec::DataType;
use fairlead_stick::{PeerVal, TableSpec};

/// HAProxy 2.6.12's messages for `table s type string len 20 size 100
/// expire 30s store http_req_cnt,http_req_rate(10s),conn_cur,gpc(2),
/// server_key` in `peers mesh`, after one request with key `abc`.
const DEF_S: &[u8] = b"\n\x82\x13\x02\x02/s\x06\x15\xf0\xd5\xff \xf0\xc4\r\n\xf0\xe2\x03\x17\x02";
const UPD_S: &[u8] = b"\n\x80\x10\x00\x00\x00\x03\x03abc\x00\x01\x00\x01\x00\x00\x00\x00";
/// `table i type integer size 100 store gpc0`, key 258, gpc0 = 1.
const DEF_I: &[u8] = b"\n\x82\x08\x01\x02/i\x02\x04\x04\x00";
const UPD_I: &[u8] = b"\n\x80\t\x00\x00\x00\x02\x00\x00\x01\x02\x01";

fn spec_s() -> TableSpec {
    let args = [
        "type",
        "string",
        "len",
        "20",
        "size",
        "100",
        "expire",
        "30s",
        "store",
        "http_req_cnt,http_req_rate(10s),conn_cur,gpc(2),server_key",
    ];
    TableSpec::parse("mesh/s", &args, true).unwrap().0
}

#[test]
fn uint_encoding_matches_haproxy() {
    for (v, bytes) in [
        (0u64, vec![0u8]),
        (239, vec![239]),
        (240, vec![0xf0, 0x00]),
        (30_000, vec![0xf0, 0xc4, 0x0d]),
        (10_000, vec![0xf0, 0xe2, 0x03]),
        (8_914_496, vec![0xf0, 0xd5, 0xff, 0x20]),
    ] {
        let mut out = Vec::new();
        put_uint(&mut out, v);
        assert_eq!(out, bytes, "{v}");
        let mut p = 0;
        assert_eq!(get_uint(&bytes, &mut p), Some(v));
        assert_eq!(p, bytes.len());
    }
    for v in [241u64, 2287, 2288, 1 << 32, u64::MAX] {
        let mut out = Vec::new();
        put_uint(&mut out, v);
        let mut p = 0;
        assert_eq!(get_uint(&out, &mut p), Some(v), "{v}");
    }
    // Truncated and overlong inputs.
    let mut p = 0;
    assert_eq!(get_uint(&[0xf0, 0x80], &mut p), None);
    let mut p = 0;
    assert_eq!(get_uint(&[0xff; 12], &mut p), None);
}

#[test]
fn definition_matches_haproxy_bytes() {
    let spec = spec_s();
    let schema = Schema::local(&spec);
    let mut out = Vec::new();
    encode_define(
        &mut out,
        2,
        &PeersSection::wire_name("mesh/s", "mesh"),
        &schema,
        &spec,
    );
    assert_eq!(out, DEF_S);
    let (m, used) = decode(DEF_S).unwrap().unwrap();
    assert_eq!(used, DEF_S.len());
    let Message::Define(d) = m else {
        panic!("{m:?}")
    };
    assert_eq!(d.name, b"/s");
    assert_eq!((d.id, d.key_type, d.key_len, d.expire), (2, 6, 21, 30_000));
    assert_eq!(d.params, vec![(10, 1, 10_000), (23, 2, 0)]);
    assert_eq!(Schema::remote(&d), Some(schema));
    let spec_i = TableSpec::parse(
        "mesh/i",
        &["type", "integer", "size", "100", "store", "gpc0"],
        true,
    )
    .unwrap()
    .0;
    let mut out = Vec::new();
    encode_define(&mut out, 1, "/i", &Schema::local(&spec_i), &spec_i);
    assert_eq!(out, DEF_I);
}

#[test]
fn updates_decode_and_reencode() {
    let spec = spec_s();
    let schema = Schema::local(&spec);
    let (m, _) = decode(UPD_S).unwrap().unwrap();
    let Message::Update { id, expire, body } = m else {
        panic!()
    };
    assert_eq!((id, expire), (Some(3), None));
    let mut dict = DictCache::default();
    let (key, vals) = decode_update(&schema, 20, &body, &mut dict).unwrap();
    assert_eq!(key, b"abc");
    let want = vec![
        (DataType::ConnCur, PeerVal::Int(0)),
        (DataType::HttpReqCnt, PeerVal::Int(1)),
        (
            DataType::HttpReqRate,
            PeerVal::Freq {
                age: 0,
                curr: 1,
                prev: 0,
            },
        ),
        (DataType::ServerKey, PeerVal::Dict(None)),
        (DataType::Gpc, PeerVal::Int(0)),
        (DataType::Gpc, PeerVal::Int(0)),
    ];
    assert_eq!(vals, want);
    let mut out = Vec::new();
    encode_update(&mut out, &schema, 3, None, &key, &vals);
    assert_eq!(out, UPD_S);
    // Integer keys: big-endian on the wire, little-endian in the table.
    let spec_i = TableSpec::parse(
        "mesh/i",
        &["type", "integer", "size", "9", "store", "gpc0"],
        true,
    )
    .unwrap()
    .0;
    let si = Schema::local(&spec_i);
    let (Message::Update { body, .. }, _) = decode(UPD_I).unwrap().unwrap() else {
        panic!()
    };
    let (key, vals) = decode_update(&si, 4, &body, &mut dict).unwrap();
    assert_eq!(key, 258u32.to_le_bytes());
    assert_eq!(vals, vec![(DataType::Gpc0, PeerVal::Int(1))]);
    let mut out = Vec::new();
    encode_update(&mut out, &si, 2, None, &key, &vals);
    assert_eq!(out, UPD_I);
}

#[test]
fn timed_update_and_dictionary() {
    let spec = spec_s();
    let schema = Schema::local(&spec);
    let vals = vec![
        (DataType::ConnCur, PeerVal::Int(1)),
        (DataType::HttpReqCnt, PeerVal::Int(300)),
        (
            DataType::HttpReqRate,
            PeerVal::Freq {
                age: 1234,
                curr: 7,
                prev: 9,
            },
        ),
        (DataType::ServerKey, PeerVal::Dict(Some("srv1".into()))),
        (DataType::Gpc, PeerVal::Int(5)),
        (DataType::Gpc, PeerVal::Int(6)),
    ];
    let mut out = Vec::new();
    encode_update(&mut out, &schema, 77, Some(12_000), b"key", &vals);
    assert_eq!(&out[..2], &[10, 0x85]);
    let (Message::Update { id, expire, body }, used) = decode(&out).unwrap().unwrap() else {
        panic!()
    };
    assert_eq!((id, expire, used), (Some(77), Some(12_000), out.len()));
    let mut dict = DictCache::default();
    let (key, got) = decode_update(&schema, 20, &body, &mut dict).unwrap();
    assert_eq!((key.as_slice(), &got), (&b"key"[..], &vals));
    // A later reference to cache id 1 alone resolves through the cache.
    let body = [&[1u8, b'k'][..], &[0, 0, 0, 0, 0], &[1, 1], &[0, 0]].concat();
    let (_, got) = decode_update(&schema, 20, &body, &mut dict).unwrap();
    assert_eq!(got[3].1, PeerVal::Dict(Some("srv1".into())));
}

#[test]
fn partial_and_bad_input() {
    assert_eq!(decode(&[]), Ok(None));
    assert_eq!(decode(&[0]), Ok(None));
    assert_eq!(decode(&DEF_S[..5]), Ok(None));
    assert_eq!(decode(&[0, 4]).unwrap().unwrap(), (Message::Control(4), 2));
    // A body too short for its message.
    assert_eq!(decode(&[10, 0x84, 1, 1]), Err(WireError::Proto));
    // A length beyond the limit.
    let mut big = vec![10, 0x80];
    put_uint(&mut big, (MAX_BODY + 1) as u64);
    assert_eq!(decode(&big), Err(WireError::Size));
    // Every prefix of a valid stream is either incomplete or valid.
    let stream = [DEF_S, UPD_S, DEF_I, UPD_I].concat();
    for n in 0..stream.len() {
        assert!(decode(&stream[..n]).is_ok());
    }
}

#[test]
fn hello_checks() {
    let ok = ["HAProxyS 2.1", "me", "you 12 1"];
    assert_eq!(check_hello(&ok, "me"), Ok("you".into()));
    assert_eq!(check_hello(&ok, "other"), Err(status::ERR_HOST));
    assert_eq!(
        check_hello(&["HAProxyS 3.0", "me", "you 1 1"], "me"),
        Err(status::ERR_VERSION)
    );
    assert_eq!(
        check_hello(&["HTTP/1.1", "me", "you"], "me"),
        Err(status::ERR_PROTO)
    );
    assert_eq!(hello("b", "a", 5), "HAProxyS 2.1\nb\na 5 1\n");
}

#[test]
fn section_parsing() {
    let lines: Vec<(usize, Vec<String>)> = [
        "peer a 127.0.0.1:1000",
        "peer b 127.0.0.2:1000",
        "table t type ip size 10 expire 1m store http_req_cnt",
        "log global",
    ]
    .iter()
    .enumerate()
    .map(|(i, l)| (i + 1, l.split(' ').map(String::from).collect()))
    .collect();
    let (s, warns) = PeersSection::parse("mesh", &lines).unwrap();
    assert_eq!(s.tables[0].name, "mesh/t");
    assert_eq!(s.tables[0].peers.as_deref(), Some("mesh"));
    assert_eq!(warns.len(), 1);
    assert_eq!(s.listen_addr("b"), Some("127.0.0.2:1000".parse().unwrap()));
    assert_eq!(s.listen_addr("c"), None);
    assert_eq!(
        s.remotes("a").map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    // 2.x form: bind + server without address for the local peer.
    let lines: Vec<(usize, Vec<String>)> = [
        "bind 127.0.0.3:2000",
        "server me",
        "server x 127.0.0.4:2000",
    ]
    .iter()
    .enumerate()
    .map(|(i, l)| (i + 1, l.split(' ').map(String::from).collect()))
    .collect();
    let (s, _) = PeersSection::parse("p", &lines).unwrap();
    assert_eq!(s.listen_addr("me"), Some("127.0.0.3:2000".parse().unwrap()));
    assert_eq!(s.remotes("me").count(), 1);
    let bad = vec![(1, vec!["peer".to_string(), "a".into(), "nope".into()])];
    assert!(PeersSection::parse("p", &bad).is_err());
    assert_eq!(PeersSection::wire_name("bk", "mesh"), "bk");
}
