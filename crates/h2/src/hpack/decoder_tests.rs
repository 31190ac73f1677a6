//! RFC 7541 Appendix C, byte for byte, plus malformed blocks.

use super::*;

pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String, bool)>, HpackError> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    d.decode(block, &mut scratch, |n, v, ni| {
        out.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
            ni,
        ))
    })?;
    Ok(out)
}

fn fields(v: &[(&str, &str)]) -> Vec<(String, String, bool)> {
    v.iter()
        .map(|(n, v)| (n.to_string(), v.to_string(), false))
        .collect()
}

fn table(d: &Decoder) -> Vec<(String, String)> {
    (0..d.table().len())
        .map(|i| {
            let (n, v) = d.table().get(i).unwrap();
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn c_1_integers() {
    let mut pos = 0;
    assert_eq!(decode_int(&[0b01010], &mut pos, 5), Ok(10));
    pos = 0;
    assert_eq!(
        decode_int(&[0b11111, 0b10011010, 0b00001010], &mut pos, 5),
        Ok(1337)
    );
    assert_eq!(pos, 3);
    pos = 0;
    assert_eq!(decode_int(&[42], &mut pos, 8), Ok(42));
}

#[test]
fn c_2_literals_and_indexed() {
    let mut d = Decoder::new(4096);
    let b = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    assert_eq!(
        decode_all(&mut d, &b).unwrap(),
        fields(&[("custom-key", "custom-header")])
    );
    assert_eq!(table(&d), pairs(&[("custom-key", "custom-header")]));
    assert_eq!(d.table().size(), 55);

    let mut d = Decoder::new(4096);
    let b = hex("040c 2f73 616d 706c 652f 7061 7468");
    assert_eq!(
        decode_all(&mut d, &b).unwrap(),
        fields(&[(":path", "/sample/path")])
    );
    assert!(d.table().is_empty());

    let b = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
    assert_eq!(
        decode_all(&mut d, &b).unwrap(),
        vec![("password".into(), "secret".into(), true)]
    );
    assert!(d.table().is_empty());

    assert_eq!(
        decode_all(&mut d, &[0x82]).unwrap(),
        fields(&[(":method", "GET")])
    );
    assert!(d.table().is_empty());
}

fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::new(4096);
    let r1 = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ];
    assert_eq!(decode_all(&mut d, &hex(blocks[0])).unwrap(), fields(&r1));
    assert_eq!(table(&d), pairs(&[(":authority", "www.example.com")]));
    assert_eq!(d.table().size(), 57);
    let mut r2 = r1.to_vec();
    r2.push(("cache-control", "no-cache"));
    assert_eq!(decode_all(&mut d, &hex(blocks[1])).unwrap(), fields(&r2));
    assert_eq!(
        table(&d),
        pairs(&[
            ("cache-control", "no-cache"),
            (":authority", "www.example.com")
        ])
    );
    assert_eq!(d.table().size(), 110);
    let r3 = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    assert_eq!(decode_all(&mut d, &hex(blocks[2])).unwrap(), fields(&r3));
    assert_eq!(
        table(&d),
        pairs(&[
            ("custom-key", "custom-value"),
            ("cache-control", "no-cache"),
            (":authority", "www.example.com")
        ])
    );
    assert_eq!(d.table().size(), 164);
}

pub(crate) const C3: [&str; 3] = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
];
pub(crate) const C4: [&str; 3] = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
];
pub(crate) const C5: [&str; 3] = [
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "4803 3330 37c1 c0bf",
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
];
pub(crate) const C6: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
];

#[test]
fn c_3_requests_without_huffman() {
    requests(C3);
}

#[test]
fn c_4_requests_with_huffman() {
    requests(C4);
}

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const LOC: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new(256);
    let r1 = [
        (":status", "302"),
        ("cache-control", "private"),
        ("date", DATE1),
        ("location", LOC),
    ];
    assert_eq!(decode_all(&mut d, &hex(blocks[0])).unwrap(), fields(&r1));
    assert_eq!(
        table(&d),
        pairs(&[
            ("location", LOC),
            ("date", DATE1),
            ("cache-control", "private"),
            (":status", "302")
        ])
    );
    assert_eq!(d.table().size(), 222);
    let r2 = [
        (":status", "307"),
        ("cache-control", "private"),
        ("date", DATE1),
        ("location", LOC),
    ];
    assert_eq!(decode_all(&mut d, &hex(blocks[1])).unwrap(), fields(&r2));
    assert_eq!(
        table(&d),
        pairs(&[
            (":status", "307"),
            ("location", LOC),
            ("date", DATE1),
            ("cache-control", "private")
        ])
    );
    assert_eq!(d.table().size(), 222);
    let date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
    let r3 = [
        (":status", "200"),
        ("cache-control", "private"),
        ("date", date2),
        ("location", LOC),
        ("content-encoding", "gzip"),
        ("set-cookie", COOKIE),
    ];
    assert_eq!(decode_all(&mut d, &hex(blocks[2])).unwrap(), fields(&r3));
    assert_eq!(
        table(&d),
        pairs(&[
            ("set-cookie", COOKIE),
            ("content-encoding", "gzip"),
            ("date", date2)
        ])
    );
    assert_eq!(d.table().size(), 215);
}

#[test]
fn c_5_responses_without_huffman() {
    responses(C5);
}

#[test]
fn c_6_responses_with_huffman() {
    responses(C6);
}

#[test]
fn malformed_blocks_are_compression_errors() {
    let mut d = Decoder::new(4096);
    // Index 0, index past the tables.
    assert_eq!(decode_all(&mut d, &[0x80]), Err(HpackError::BadIndex));
    assert_eq!(decode_all(&mut d, &[0xbe]), Err(HpackError::BadIndex));
    assert_eq!(decode_all(&mut d, &[0x7f, 0x00]), Err(HpackError::BadIndex));
    // Truncated: a literal whose string runs past the end.
    assert_eq!(
        decode_all(&mut d, &[0x40, 0x05, b'a']),
        Err(HpackError::Truncated)
    );
    assert_eq!(decode_all(&mut d, &[0x3f]), Err(HpackError::Truncated));
    // Integer overflow.
    assert_eq!(
        decode_all(&mut d, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        Err(HpackError::IntegerOverflow)
    );
    // Size update above the setting, and after a field.
    assert_eq!(
        decode_all(&mut d, &[0x3f, 0xe2, 0x1f]),
        Err(HpackError::BadSizeUpdate)
    );
    assert_eq!(
        decode_all(&mut d, &[0x82, 0x20]),
        Err(HpackError::BadSizeUpdate)
    );
    // Huffman string with EOS / bad padding.
    assert_eq!(
        decode_all(&mut d, &[0x00, 0x81, 0x00, 0x00]),
        Err(HpackError::Huffman)
    );
    // A size update at the start is fine.
    assert_eq!(
        decode_all(&mut d, &[0x20, 0x82]).unwrap(),
        fields(&[(":method", "GET")])
    );
    assert_eq!(d.table().max_size(), 0);
}

#[test]
fn indexed_dynamic_name_survives_its_own_eviction() {
    // Table of 60 bytes: one entry; a literal with incremental indexing
    // whose name is that entry evicts it while being inserted.
    let mut d = Decoder::new(60);
    let mut b = vec![0x40, 3];
    b.extend_from_slice(b"abc");
    b.extend_from_slice(&[5]);
    b.extend_from_slice(b"12345");
    decode_all(&mut d, &b).unwrap();
    // 0x7e = literal with indexing, name index 62 (dynamic 0).
    let b = [0x7e, 3, b'x', b'y', b'z'];
    assert_eq!(decode_all(&mut d, &b).unwrap(), fields(&[("abc", "xyz")]));
    assert_eq!(table(&d), pairs(&[("abc", "xyz")]));
}
