//! The hash functions of `hash-type` and the keys the hashing algorithms
//! (`source`, `uri`, `url_param`, `hdr`) feed them.
//!
//! The four functions follow their public definitions, as HAProxy uses them
//! (32-bit, wrapping arithmetic over the key's bytes):
//!
//! * `sdbm`: `h = c + (h << 6) + (h << 16) - h`, starting from 0;
//! * `djb2`: `h = h * 33 + c`, starting from 5381;
//! * `wt6`: Willy Tarreau's 6-operation hash over two 32-bit halves with
//!   data-dependent rotations, starting from `0xa53c965a` / `0x5ca6953a`
//!   with rotations 6 and 18;
//! * `crc32`: the IEEE 802.3 CRC-32 (reflected polynomial `0xEDB88320`,
//!   initial value and final XOR `0xFFFFFFFF`);
//!
//! and `avalanche` mixes the 32-bit result through Bob Jenkins' 6-shift
//! full-avalanche integer hash.
//!
//! Key rules (HAProxy's):
//! * `source` does **not** use the hash function: the address is folded by
//!   XOR-ing its big-endian 32-bit words (the IPv4 address itself, or the
//!   four words of an IPv6 one), then `avalanche` is applied if configured.
//!   HAProxy does exactly this for compatibility with older setups. With
//!   `hash-type consistent` and no `avalanche`, neighbouring addresses land
//!   on neighbouring points of the ring (hence mostly on the same server):
//!   add `avalanche` there.
//! * `uri`: the first `len` bytes at most, stopped before the `?` unless
//!   `whole`, and before the `(depth+1)`-th `/` when `depth` is set (so
//!   `depth 2` hashes `/a/b` of `/a/b/c`).
//! * `url_param`: the value as given (an empty value is hashed as such).
//! * `rdp-cookie`: the cookie's value; an empty value means "absent"
//!   (round robin).
//! * `hdr`: the value; an empty value means "absent" (round robin). With
//!   `use_domain_only`, only the label before the last dot is hashed
//!   (`1wt` of `haproxy.1wt.eu`, `example` of `www.example.com:8080`); a
//!   value without any dot is hashed whole.

use fairlead_config::HashFunction;
use std::net::IpAddr;

/// `sdbm` over `data`.
pub fn sdbm(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |h, &c| {
        u32::from(c)
            .wrapping_add(h << 6)
            .wrapping_add(h << 16)
            .wrapping_sub(h)
    })
}

/// `djb2` over `data`.
pub fn djb2(data: &[u8]) -> u32 {
    data.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
}

/// `wt6` over `data`.
pub fn wt6(data: &[u8]) -> u32 {
    let (mut h0, mut h1) = (0xa53c_965a_u32, 0x5ca6_953a_u32);
    let (mut r0, mut r1) = (6u32, 18u32);
    for &c in data {
        let c = u32::from(c);
        let a = !(h0 ^ c);
        let b = !(h1.wrapping_add(c));
        h0 = b.rotate_left(r0);
        h1 = a.rotate_left(r1);
        let t = ((h0 >> 16) ^ h1) & 0xffff;
        r0 = t & 0x1f;
        r1 = t >> 11;
    }
    h0 ^ h1
}

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// IEEE CRC-32 over `data`.
pub fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |crc, &c| {
        CRC_TABLE[((crc ^ u32::from(c)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// Full-avalanche mix of a 32-bit value (Jenkins' 6-shift integer hash).
pub fn avalanche(mut a: u32) -> u32 {
    a = a.wrapping_add(0x7ed5_5d16).wrapping_add(a << 12);
    a = (a ^ 0xc761_c23c) ^ (a >> 19);
    a = a.wrapping_add(0x1656_67b1).wrapping_add(a << 5);
    a = a.wrapping_add(0xd3a2_646c) ^ (a << 9);
    a = a.wrapping_add(0xfd70_46c5).wrapping_add(a << 3);
    a = (a ^ 0xb55a_4f09) ^ (a >> 16);
    a
}

/// The configured function, then `avalanche` if asked.
pub fn hash(func: HashFunction, avalanche_it: bool, data: &[u8]) -> u32 {
    let h = match func {
        HashFunction::Sdbm => sdbm(data),
        HashFunction::Djb2 => djb2(data),
        HashFunction::Wt6 => wt6(data),
        HashFunction::Crc32 => crc32(data),
    };
    if avalanche_it {
        avalanche(h)
    } else {
        h
    }
}

/// The `source` key: XOR of the address's big-endian 32-bit words.
pub fn fold_addr(addr: IpAddr) -> u32 {
    match addr {
        IpAddr::V4(a) => u32::from_be_bytes(a.octets()),
        IpAddr::V6(a) => a
            .octets()
            .chunks_exact(4)
            .fold(0, |h, w| h ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]])),
    }
}

/// The part of a URI that `balance uri [len N] [depth N] [whole]` hashes.
pub fn uri_part(uri: &[u8], whole: bool, len: Option<usize>, depth: Option<usize>) -> &[u8] {
    let uri = match len {
        Some(n) if n > 0 => &uri[..uri.len().min(n)],
        _ => uri,
    };
    let mut slashes = 0usize;
    for (i, &c) in uri.iter().enumerate() {
        if c == b'/' {
            slashes += 1;
            if matches!(depth, Some(d) if d > 0 && slashes == d + 1) {
                return &uri[..i];
            }
        } else if c == b'?' && !whole {
            return &uri[..i];
        }
    }
    uri
}

/// The part of a header value that `hdr(<name>) use_domain_only` hashes:
/// the label before the last dot (a dot in first position does not count),
/// or the whole value when there is no dot.
pub fn domain_part(value: &[u8]) -> &[u8] {
    let Some(end) = value
        .iter()
        .skip(1)
        .rposition(|&c| c == b'.')
        .map(|p| p + 1)
    else {
        return value;
    };
    // The label runs back to the previous dot; it keeps at least the byte
    // just before `end`.
    let start = value[..end - 1]
        .iter()
        .rposition(|&c| c == b'.')
        .map_or(0, |p| p + 1);
    &value[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors worked out from the formulas above:
    //   sdbm("a")  = 97
    //   sdbm("ab") = 98 + (97<<6) + (97<<16) - 97 = 98 + 6208 + 6356992 - 97
    //              = 6363201
    //   djb2("")   = 5381, djb2("a") = 5381*33 + 97 = 177670,
    //   djb2("ab") = 177670*33 + 98 = 5863208
    //   crc32("123456789") = 0xCBF43926 (the standard CRC-32 check value),
    //   crc32("") = 0, crc32("a") = 0xE8B7BE43.
    // wt6 and avalanche values were computed with an independent Python
    // transcription of the same formulas (32-bit masks after each step).
    #[test]
    fn sdbm_vectors() {
        assert_eq!(sdbm(b""), 0);
        assert_eq!(sdbm(b"a"), 97);
        assert_eq!(sdbm(b"ab"), 6_363_201);
    }

    #[test]
    fn djb2_vectors() {
        assert_eq!(djb2(b""), 5381);
        assert_eq!(djb2(b"a"), 177_670);
        assert_eq!(djb2(b"ab"), 5_863_208);
    }

    #[test]
    fn crc32_vectors() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"a"), 0xE8B7_BE43);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn wt6_vectors() {
        assert_eq!(wt6(b""), 0xa53c_965a ^ 0x5ca6_953a);
        assert_eq!(wt6(b"a"), WT6_A);
        assert_eq!(wt6(b"hello"), WT6_HELLO);
    }

    #[test]
    fn avalanche_vectors() {
        assert_eq!(avalanche(0), AVAL_0);
        assert_eq!(avalanche(1), AVAL_1);
        assert_ne!(avalanche(1), avalanche(2));
        assert_eq!(hash(HashFunction::Sdbm, true, b"a"), avalanche(97));
        assert_eq!(hash(HashFunction::Djb2, false, b"a"), 177_670);
    }

    // Filled in from the Python transcription (see above).
    const WT6_A: u32 = 0x714b_f225;
    const WT6_HELLO: u32 = 0xd2e6_e6b7;
    const AVAL_0: u32 = 0x6b4e_d927;
    const AVAL_1: u32 = 0xb486_81b6;

    #[test]
    fn source_fold() {
        assert_eq!(fold_addr("10.0.0.1".parse().unwrap()), 0x0a00_0001);
        // Words 0x20010db8, 0, 0, 1.
        assert_eq!(fold_addr("2001:db8::1".parse().unwrap()), 0x2001_0db9);
        assert_eq!(fold_addr("2001:db8::2001:db8".parse().unwrap()), 0);
    }

    #[test]
    fn uri_rules() {
        let u = b"/a/b/c?x=1";
        assert_eq!(uri_part(u, false, None, None), b"/a/b/c");
        assert_eq!(uri_part(u, true, None, None), u);
        assert_eq!(uri_part(u, false, Some(3), None), b"/a/");
        assert_eq!(uri_part(u, false, None, Some(1)), b"/a");
        assert_eq!(uri_part(u, false, None, Some(2)), b"/a/b");
        assert_eq!(uri_part(u, false, None, Some(9)), b"/a/b/c");
        assert_eq!(uri_part(u, true, Some(4), Some(2)), b"/a/b");
        assert_eq!(uri_part(u, true, Some(3), Some(2)), b"/a/");
        assert_eq!(uri_part(b"/a?b/c/d", false, None, Some(1)), b"/a");
        assert_eq!(uri_part(b"/a?b/c/d", true, None, Some(1)), b"/a?b");
    }

    #[test]
    fn domain_rules() {
        assert_eq!(domain_part(b"haproxy.1wt.eu"), b"1wt");
        assert_eq!(domain_part(b"www.example.com:8080"), b"example");
        assert_eq!(domain_part(b"example.com"), b"example");
        assert_eq!(domain_part(b"localhost"), b"localhost");
        assert_eq!(domain_part(b".com"), b".com");
        assert_eq!(domain_part(b"a..com"), b"a.");
    }
}
