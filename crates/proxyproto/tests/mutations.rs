//! Deterministic mutation run over valid headers: the parser never panics,
//! never consumes more than it was given, and accepts a header only whole.

use fairlead_proxyproto::{encode_v1, encode_v2, parse, Command, Parsed, SslInfo, V2Options};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let a = (
        "10.1.2.3:4567".parse().unwrap(),
        "[2001:db8::5]:443".parse().unwrap(),
    );
    let b = (
        "10.1.2.3:4567".parse().unwrap(),
        "10.9.9.9:80".parse().unwrap(),
    );
    let mut out = Vec::new();
    let mut v = Vec::new();
    encode_v1(Some(a), &mut v);
    out.push(v.clone());
    v.clear();
    encode_v1(Some(b), &mut v);
    out.push(v.clone());
    let opts = V2Options {
        crc32c: true,
        alpn: Some(b"http/1.1".to_vec()),
        authority: Some(b"a.example".to_vec()),
        unique_id: Some(b"id-1".to_vec()),
        ssl: Some(SslInfo {
            tls: true,
            version: Some("TLSv1.2".into()),
            cn: Some("cn".into()),
            ..SslInfo::default()
        }),
        netns: None,
    };
    for (cmd, addrs) in [
        (Command::Proxy, Some(a)),
        (Command::Proxy, Some(b)),
        (Command::Local, None),
    ] {
        v.clear();
        encode_v2(cmd, addrs, &opts, &mut v);
        out.push(v.clone());
    }
    out
}

#[test]
fn mutated_headers_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeds = seeds();
    let mut accepted = 0;
    for round in 0..30_000 {
        let mut buf = seeds[round % seeds.len()].clone();
        for _ in 0..(rng.next() % 4 + 1) {
            let r = rng.next();
            let pos = (r >> 8) as usize % (buf.len() + 1);
            match r % 4 {
                0 if pos < buf.len() => buf[pos] ^= 1 << ((r >> 40) % 8),
                1 => buf.insert(pos, (r >> 32) as u8),
                2 if pos < buf.len() => {
                    buf.remove(pos);
                }
                _ => buf.truncate(pos),
            }
        }
        if let Ok(Parsed::Done(_, n)) = parse(&buf) {
            assert!(n <= buf.len());
            assert!(!matches!(parse(&buf[..n - 1]), Ok(Parsed::Done(..))));
            accepted += 1;
        }
    }
    // Some mutations (in ports, TLV payloads of LOCAL...) stay valid.
    assert!(accepted > 100, "{accepted}");
}
