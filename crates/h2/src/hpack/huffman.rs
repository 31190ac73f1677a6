//! HPACK Huffman coding (RFC 7541 §5.2, Appendix B).
//!
//! The code of Appendix B is canonical: codes of one length are
//! consecutive, in symbol order, and each length's first code follows the
//! previous length's last. So the table below holds only each symbol's
//! code *length* (the `len` column of Appendix B); codes, and the decoding
//! tables, are derived from it at compile time. Decoding walks the lengths
//! in order with a left-aligned 32-bit window: no 4 KiB lookup tables.

/// Code length in bits of each symbol, 0..=255 then EOS (256), as listed
/// in RFC 7541 Appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS: usize = 256;

/// Codes, right-aligned.
const CODES: [u32; 257] = codes();

/// Per length (5..=30): the first code, left-aligned in 32 bits; the
/// limit (first code of the next length at this length, left-aligned); and
/// where its symbols start in [`SORTED`].
struct Canon {
    first: [u32; 31],
    limit: [u64; 31],
    offset: [u16; 31],
}

/// Symbols sorted by (length, symbol).
const SORTED: [u16; 257] = sorted();
const CANON: Canon = canon();

const fn sorted() -> [u16; 257] {
    let mut out = [0u16; 257];
    let mut n = 0;
    let mut len = 1;
    while len <= 30 {
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                out[n] = s as u16;
                n += 1;
            }
            s += 1;
        }
        len += 1;
    }
    out
}

const fn codes() -> [u32; 257] {
    let sorted = sorted();
    let mut out = [0u32; 257];
    let mut code: u32 = 0;
    let mut prev = LENGTHS[sorted[0] as usize];
    let mut i = 0;
    while i < 257 {
        let s = sorted[i] as usize;
        if i > 0 {
            code = (code + 1) << (LENGTHS[s] - prev);
        }
        prev = LENGTHS[s];
        out[s] = code;
        i += 1;
    }
    out
}

const fn canon() -> Canon {
    let sorted = sorted();
    let codes = codes();
    let mut c = Canon {
        first: [0; 31],
        limit: [0; 31],
        offset: [0; 31],
    };
    let mut i = 0;
    let mut len = 1;
    while len <= 30 {
        c.offset[len] = i as u16;
        let start = i;
        while i < 257 && LENGTHS[sorted[i] as usize] as usize == len {
            i += 1;
        }
        if i > start {
            c.first[len] = codes[sorted[start] as usize] << (32 - len);
            // One past the last code of this length, left-aligned.
            c.limit[len] = ((codes[sorted[i - 1] as usize] as u64) + 1) << (32 - len);
        } else {
            c.limit[len] = if len > 1 { c.limit[len - 1] } else { 0 };
            c.first[len] = c.limit[len] as u32;
        }
        len += 1;
    }
    c
}

/// Why a Huffman string does not decode (a COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HuffmanError;

/// Decodes `src`, appending to `out`. Refuses the EOS symbol, padding
/// longer than 7 bits and padding that is not all ones (RFC 7541 §5.2).
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut iter = src.iter();
    loop {
        while bits <= 56 {
            match iter.next() {
                Some(&b) => {
                    acc |= u64::from(b) << (56 - bits);
                    bits += 8;
                }
                None => break,
            }
        }
        if bits == 0 {
            return Ok(());
        }
        // Left-aligned 32-bit window, padded with ones past the input.
        let pad = if bits >= 32 { 0 } else { u32::MAX >> bits };
        let w = ((acc >> 32) as u32) | pad;
        let len = code_len(w);
        if len as u32 > bits {
            // What is left is padding: at most 7 bits, all ones.
            return if bits <= 7 && w == u32::MAX {
                Ok(())
            } else {
                Err(HuffmanError)
            };
        }
        let idx = usize::from(CANON.offset[len]) + ((w - CANON.first[len]) >> (32 - len)) as usize;
        let sym = *SORTED.get(idx).ok_or(HuffmanError)? as usize;
        if sym == EOS {
            return Err(HuffmanError);
        }
        out.push(sym as u8);
        acc <<= len;
        bits -= len as u32;
    }
}

/// The length of the code at the top of `w` (5..=30).
fn code_len(w: u32) -> usize {
    let w = u64::from(w);
    let mut len = 5;
    while len < 30 && w >= CANON.limit[len] {
        len += 1;
    }
    len
}

/// Bytes `src` takes once Huffman-coded (`lower`: as if ASCII-lowercased).
pub fn encoded_len(src: &[u8], lower: bool) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| LENGTHS[usize::from(fold(b, lower))] as usize)
        .sum();
    bits.div_ceil(8)
}

fn fold(b: u8, lower: bool) -> u8 {
    if lower {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// Huffman-codes `src` (`lower`: ASCII-lowercased first), appending to
/// `out`, padded with ones.
pub fn encode(src: &[u8], lower: bool, out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    for &b in src {
        let s = usize::from(fold(b, lower));
        let len = u32::from(LENGTHS[s]);
        acc = (acc << len) | u64::from(CODES[s]);
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        let pad = 8 - bits;
        out.push(((acc << pad) as u8) | ((1u8 << pad) - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_appendix_b_samples() {
        // A few rows of RFC 7541 Appendix B (code as hex, len).
        assert_eq!((CODES[0], LENGTHS[0]), (0x1ff8, 13));
        assert_eq!((CODES[1], LENGTHS[1]), (0x7fffd8, 23));
        assert_eq!((CODES[10], LENGTHS[10]), (0x3ffffffc, 30));
        assert_eq!((CODES[b' ' as usize], LENGTHS[32]), (0x14, 6));
        assert_eq!((CODES[b'0' as usize], LENGTHS[48]), (0x0, 5));
        assert_eq!((CODES[b'e' as usize], LENGTHS[101]), (0x5, 5));
        assert_eq!((CODES[b'z' as usize], LENGTHS[122]), (0x7b, 7));
        assert_eq!((CODES[255], LENGTHS[255]), (0x3ffffee, 26));
        assert_eq!((CODES[EOS], LENGTHS[EOS]), (0x3fffffff, 30));
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        let mut enc = Vec::new();
        encode(&all, false, &mut enc);
        assert_eq!(enc.len(), encoded_len(&all, false));
        let mut dec = Vec::new();
        decode(&enc, &mut dec).unwrap();
        assert_eq!(dec, all);
    }

    #[test]
    fn rfc_7541_c4_strings() {
        let mut out = Vec::new();
        encode(b"www.example.com", false, &mut out);
        assert_eq!(
            out,
            [0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff]
        );
        out.clear();
        encode(b"no-cache", false, &mut out);
        assert_eq!(out, [0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]);
    }

    #[test]
    fn lowercasing_encode() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        encode(b"Content-Type", true, &mut a);
        encode(b"content-type", false, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn bad_padding_and_eos_refused() {
        let mut out = Vec::new();
        // '0' is 00000, then 3 zero bits of padding.
        assert_eq!(decode(&[0x00], &mut out), Err(HuffmanError));
        // A whole byte of ones is padding longer than 7 bits.
        out.clear();
        assert_eq!(decode(&[0x07, 0xff], &mut out), Err(HuffmanError));
        // EOS itself (30 ones), then 2 bits of padding.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
            Err(HuffmanError)
        );
        out.clear();
        // '0' + 3 ones of padding is fine.
        decode(&[0x07], &mut out).unwrap();
        assert_eq!(out, b"0");
        out.clear();
        decode(&[], &mut out).unwrap();
        assert!(out.is_empty());
    }
}
