//! The 32-bit hash functions behind the `sdbm`, `djb2`, `wt6`, `crc32` and
//! `crc32c` converters, and HAProxy's `full_hash` ("avalanche").
//!
//! These give the same results as `crates/balance/src/hash.rs` (the
//! `hash-type` functions): HAProxy documents that the converters "use the
//! same functions as used by the various hash-based load balancing
//! algorithms", so a converter's value and a balancing key agree. They are
//! repeated here rather than shared because `fairlead-balance` depends
//! (through the configuration crate) on this crate. Keep the two in step;
//! the tests below check the vectors that `balance`'s tests check.
//!
//! * `sdbm`: `h = c + (h << 6) + (h << 16) - h`, starting from 0;
//! * `djb2`: `h = h * 33 + c`, starting from 5381;
//! * `wt6`: Willy Tarreau's 6-operation hash over two 32-bit halves with
//!   data-dependent rotations;
//! * `crc32`: the IEEE 802.3 CRC-32 (as in Ethernet, gzip, PNG);
//! * `crc32c`: the Castagnoli CRC-32C (RFC 4960, appendix B);
//! * `avalanche`: Bob Jenkins' 6-shift full-avalanche integer hash, which
//!   is what HAProxy's `full_hash` is.
//!
//! All arithmetic wraps at 32 bits.

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

/// IEEE CRC-32 over `data`.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

const fn crc32c_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0x82F6_3B78 ^ (c >> 1)
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

static CRC32C_TABLE: [u32; 256] = crc32c_table();

/// Castagnoli CRC-32C over `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |crc, &c| {
        CRC32C_TABLE[((crc ^ u32::from(c)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// HAProxy's `full_hash`: Bob Jenkins' full-avalanche mix of a 32-bit value.
pub fn avalanche(mut a: u32) -> u32 {
    a = a.wrapping_add(0x7ed5_5d16).wrapping_add(a << 12);
    a = (a ^ 0xc761_c23c) ^ (a >> 19);
    a = a.wrapping_add(0x1656_67b1).wrapping_add(a << 5);
    a = a.wrapping_add(0xd3a2_646c) ^ (a << 9);
    a = a.wrapping_add(0xfd70_46c5).wrapping_add(a << 3);
    a = (a ^ 0xb55a_4f09) ^ (a >> 16);
    // HAProxy's `__full_hash` (intops.h) then multiplies by a large prime
    // close to 3/4 of the 32-bit space.
    a.wrapping_mul(3_221_225_473)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The vectors of crates/balance/src/hash.rs, plus "hello" (computed with
    // an independent Python transcription of the same formulas; crc32 with
    // zlib.crc32, crc32c with a bitwise Castagnoli loop).
    #[test]
    fn same_as_balance() {
        assert_eq!(sdbm(b""), 0);
        assert_eq!(sdbm(b"a"), 97);
        assert_eq!(sdbm(b"ab"), 6_363_201);
        assert_eq!(djb2(b""), 5381);
        assert_eq!(djb2(b"a"), 177_670);
        assert_eq!(djb2(b"ab"), 5_863_208);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"a"), 0xE8B7_BE43);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(wt6(b""), 0xa53c_965a ^ 0x5ca6_953a);
        assert_eq!(wt6(b"a"), 0x714b_f225);
        assert_eq!(wt6(b"hello"), 0xd2e6_e6b7);
        // With the final multiplication by 3221225473 (HAProxy's
        // `__full_hash`); `balance`'s copy lacks it (0x6b4e_d927, ...).
        assert_eq!(avalanche(0), 0xab4e_d927);
        assert_eq!(avalanche(1), 0x3486_81b6);
    }

    #[test]
    fn hello() {
        assert_eq!(sdbm(b"hello"), 684_824_882);
        assert_eq!(djb2(b"hello"), 261_238_937);
        assert_eq!(crc32(b"hello"), 0x3610_a686);
        // HAProxy 2.6.12: `str(hello),sdbm(1)` (tests/scenarios/42_conv_hashes.scn).
        assert_eq!(avalanche(sdbm(b"hello")), 2_061_535_398);
        assert_eq!(avalanche(djb2(b"hello")), 1_119_739_105);
        assert_eq!(avalanche(wt6(b"hello")), 140_457_739);
        assert_eq!(avalanche(crc32(b"hello")), 3_902_247_103);
    }

    #[test]
    fn crc32c_vectors() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b"hello"), 2_591_144_780);
    }
}
