//! Table keys: converting a sample into a table's key (HAProxy's
//! `smp_to_stkey` after the implicit cast to the table type), printing a
//! key as `show table` does, and parsing a key given on the CLI.
//!
//! Keys are stored as HAProxy lays them out: IPv4 and IPv6 in network
//! order, integers as 4 bytes in host (little-endian) order so that the
//! `show table` order matches HAProxy's tree order, strings truncated to
//! `len` characters (and at the first NUL byte), binary keys padded with
//! zeroes or truncated to `len` bytes.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::spec::{KeyType, TableSpec};

/// A sample to use as a key, before the cast to the table's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyInput<'a> {
    /// A `sint` (or `bool`) sample.
    Sint(i64),
    /// An `ipv4` sample.
    Ipv4(Ipv4Addr),
    /// An `ipv6` sample.
    Ipv6(Ipv6Addr),
    /// A `str` (or `meth`) sample.
    Str(&'a [u8]),
    /// A `bin` sample.
    Bin(&'a [u8]),
}

/// A key in the table's stored form. Keys of ip, ipv6 and integer tables,
/// and string or long-enough binary keys, never allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableKey<'a> {
    /// Up to 16 bytes kept inline.
    Inline([u8; 16], u8),
    /// A slice of the sample.
    Borrowed(&'a [u8]),
    /// A padded or converted copy.
    Owned(Vec<u8>),
}

impl TableKey<'_> {
    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            TableKey::Inline(b, n) => b.get(..usize::from(*n)).unwrap_or(&[]),
            TableKey::Borrowed(b) => b,
            TableKey::Owned(v) => v,
        }
    }

    fn inline(b: &[u8]) -> TableKey<'static> {
        let mut a = [0u8; 16];
        let n = b.len().min(16);
        a[..n].copy_from_slice(&b[..n]);
        TableKey::Inline(a, n as u8)
    }
}

/// `read_int64` of HAProxy: optional sign and leading digits, saturating.
fn str_to_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add(u64::from(c - b'0'));
    }
    Some(if neg {
        if v > 1 << 63 {
            i64::MIN
        } else {
            (v as i64).wrapping_neg()
        }
    } else {
        i64::try_from(v).unwrap_or(i64::MAX)
    })
}

fn ipv4_to_mapped(a: Ipv4Addr) -> Ipv6Addr {
    a.to_ipv6_mapped()
}

/// `v6tov4`: only `::ffff:a.b.c.d` converts.
fn mapped_to_ipv4(a: &Ipv6Addr) -> Option<Ipv4Addr> {
    let o = a.octets();
    if o[..10].iter().all(|&b| b == 0) && o[10] == 0xff && o[11] == 0xff {
        Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
    } else {
        None
    }
}

fn int_key(v: u32) -> TableKey<'static> {
    TableKey::inline(&v.to_le_bytes())
}

/// Builds the key of `input` for a table of `spec`'s type, applying
/// HAProxy's implicit casts. `None` when the cast fails (an IPv6 address
/// that is not v4-mapped in an `ip` table, a string that is not an
/// address...): the track or lookup then does nothing.
pub fn make_key<'a>(spec: &TableSpec, input: &KeyInput<'a>) -> Option<TableKey<'a>> {
    match spec.key_type {
        KeyType::Ip => {
            let a = match *input {
                KeyInput::Ipv4(a) => a,
                KeyInput::Ipv6(a) => mapped_to_ipv4(&a)?,
                KeyInput::Sint(v) => Ipv4Addr::from(v as u32),
                KeyInput::Str(s) => std::str::from_utf8(s).ok()?.parse().ok()?,
                KeyInput::Bin(_) => return None,
            };
            Some(TableKey::inline(&a.octets()))
        }
        KeyType::Ipv6 => {
            let a = match *input {
                KeyInput::Ipv6(a) => a,
                KeyInput::Ipv4(a) => ipv4_to_mapped(a),
                KeyInput::Sint(v) => ipv4_to_mapped(Ipv4Addr::from(v as u32)),
                KeyInput::Str(s) => std::str::from_utf8(s).ok()?.parse().ok()?,
                KeyInput::Bin(_) => return None,
            };
            Some(TableKey::inline(&a.octets()))
        }
        KeyType::Integer => {
            let v = match *input {
                KeyInput::Sint(v) => v,
                KeyInput::Ipv4(a) => i64::from(u32::from(a)),
                KeyInput::Str(s) => str_to_int(s)?,
                KeyInput::Ipv6(_) | KeyInput::Bin(_) => return None,
            };
            Some(int_key(v as u32))
        }
        KeyType::String => {
            let owned;
            let s: &[u8] = match *input {
                KeyInput::Str(s) | KeyInput::Bin(s) => s,
                KeyInput::Sint(v) => {
                    owned = v.to_string().into_bytes();
                    return Some(TableKey::Owned(truncate_str(&owned, spec.key_len).to_vec()));
                }
                KeyInput::Ipv4(a) => {
                    owned = a.to_string().into_bytes();
                    return Some(TableKey::Owned(truncate_str(&owned, spec.key_len).to_vec()));
                }
                KeyInput::Ipv6(a) => {
                    owned = a.to_string().into_bytes();
                    return Some(TableKey::Owned(truncate_str(&owned, spec.key_len).to_vec()));
                }
            };
            Some(TableKey::Borrowed(truncate_str(s, spec.key_len)))
        }
        KeyType::Binary => {
            let len = spec.key_len;
            let conv;
            let b: &[u8] = match *input {
                KeyInput::Str(s) | KeyInput::Bin(s) => s,
                KeyInput::Sint(v) => {
                    conv = v.to_be_bytes();
                    &conv
                }
                KeyInput::Ipv4(a) => {
                    return Some(pad(&a.octets(), len));
                }
                KeyInput::Ipv6(a) => {
                    return Some(pad(&a.octets(), len));
                }
            };
            if b.len() >= len {
                // A borrowed input has the sample's lifetime only when it
                // comes from the input itself.
                return Some(match *input {
                    KeyInput::Str(s) | KeyInput::Bin(s) => TableKey::Borrowed(&s[..len]),
                    _ => TableKey::Owned(b[..len].to_vec()),
                });
            }
            Some(pad(b, len))
        }
    }
}

fn pad(b: &[u8], len: usize) -> TableKey<'static> {
    let mut v = b[..b.len().min(len)].to_vec();
    v.resize(len, 0);
    TableKey::Owned(v)
}

/// A string key stops at `len` characters and at the first NUL.
fn truncate_str(s: &[u8], len: usize) -> &[u8] {
    let s = &s[..s.len().min(len)];
    match s.iter().position(|&b| b == 0) {
        Some(p) => &s[..p],
        None => s,
    }
}

/// Parses a key given on the CLI (`show/clear/set table NAME key K`).
/// Binary tables are refused by HAProxy; the error is its message for the
/// action (`verb` is "Showing", "Removing" or "Inserting").
pub fn parse_cli_key(spec: &TableSpec, text: &str, verb: &str) -> Result<Vec<u8>, String> {
    match spec.key_type {
        // inetaddr_host(): lenient dotted quad parsing, never fails.
        KeyType::Ip => Ok(inetaddr_host(text).to_be_bytes().to_vec()),
        KeyType::Ipv6 => text
            .parse::<Ipv6Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| "Invalid key\n".to_string()),
        KeyType::Integer => {
            let b = text.as_bytes();
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            // strtoul() accepts leading blanks and a sign; HAProxy then
            // rejects values above 32 bits. Digits are required.
            let v: Option<u64> = if digits == 0 {
                None
            } else {
                text[..digits].parse().ok()
            };
            match v {
                Some(v) if v <= 0xffff_ffff => Ok((v as u32).to_le_bytes().to_vec()),
                _ => Err("Invalid key\n".to_string()),
            }
        }
        KeyType::String => Ok(truncate_str(text.as_bytes(), spec.key_len).to_vec()),
        KeyType::Binary => Err(format!(
            "{verb} keys {} tables of type other than ip, ipv6, string and integer is not supported\n",
            if verb == "Inserting" { "into" } else { "from" }
        )),
    }
}

/// HAProxy's `inetaddr_host`: up to four dot-separated groups of digits,
/// each keeping its last three digits; garbage stops the parse.
fn inetaddr_host(text: &str) -> u32 {
    let b = text.as_bytes();
    let mut out: u32 = 0;
    let mut pos = 0;
    let mut shift: i32 = 24;
    loop {
        let start = pos;
        while b.get(pos).is_some_and(|c| c.is_ascii_digit()) {
            pos += 1;
        }
        let group = &b[start..pos];
        let tail = &group[group.len().saturating_sub(3)..];
        let mut v: u32 = 0;
        for &d in tail {
            v = v * 10 + u32::from(d - b'0');
        }
        // Each group is added in its byte position (HAProxy adds digit
        // columns, so a group above 255 carries into the next byte).
        out = out.wrapping_add(v.wrapping_shl(shift as u32));
        if shift == 0 || b.get(pos) != Some(&b'.') {
            break;
        }
        shift -= 8;
        pos += 1;
    }
    out
}

/// Appends the key as `show table` prints it after `key=`.
pub fn format_key(spec: &TableSpec, key: &[u8], out: &mut String) {
    match spec.key_type {
        KeyType::Ip => {
            let mut a = [0u8; 4];
            let n = key.len().min(4);
            a[..n].copy_from_slice(&key[..n]);
            let _ = write!(out, "{}", Ipv4Addr::from(a));
        }
        KeyType::Ipv6 => {
            let mut a = [0u8; 16];
            let n = key.len().min(16);
            a[..n].copy_from_slice(&key[..n]);
            let _ = write!(out, "{}", Ipv6Addr::from(a));
        }
        KeyType::Integer => {
            let mut a = [0u8; 4];
            let n = key.len().min(4);
            a[..n].copy_from_slice(&key[..n]);
            let _ = write!(out, "{}", u32::from_le_bytes(a));
        }
        KeyType::String => dump_text(key, out),
        KeyType::Binary => {
            for b in key {
                let _ = write!(out, "{b:02X}");
            }
        }
    }
}

/// HAProxy's `dump_text`: printable ASCII as is, `\t \n \r \e \\ \  \=`
/// escaped, other bytes as `\xHH`; stops at NUL.
fn dump_text(key: &[u8], out: &mut String) {
    for &c in key {
        match c {
            0 => break,
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x1b => out.push_str("\\e"),
            b'\\' => out.push_str("\\\\"),
            b' ' => out.push_str("\\ "),
            b'=' => out.push_str("\\="),
            0x21..=0x7e => out.push(char::from(c)),
            _ => {
                let _ = write!(out, "\\x{c:02X}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kt: KeyType, len: usize) -> TableSpec {
        let mut s = TableSpec::new("t", kt, 10);
        s.key_len = len;
        s
    }

    #[test]
    fn ip_table_casts() {
        let s = spec(KeyType::Ip, 4);
        let k = make_key(&s, &KeyInput::Ipv4(Ipv4Addr::new(10, 0, 0, 1))).unwrap();
        assert_eq!(k.as_bytes(), &[10, 0, 0, 1]);
        let m = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(
            make_key(&s, &KeyInput::Ipv6(m)).unwrap().as_bytes(),
            &[10, 0, 0, 1]
        );
        let v6 = "2001:db8::1".parse().unwrap();
        assert_eq!(make_key(&s, &KeyInput::Ipv6(v6)), None);
        let k = make_key(&s, &KeyInput::Sint(0x0a000002)).unwrap();
        assert_eq!(k.as_bytes(), &[10, 0, 0, 2]);
        assert_eq!(
            make_key(&s, &KeyInput::Str(b"1.2.3.4")).unwrap().as_bytes(),
            &[1, 2, 3, 4]
        );
        assert_eq!(make_key(&s, &KeyInput::Str(b"nope")), None);
    }

    #[test]
    fn ipv6_maps_v4() {
        let s = spec(KeyType::Ipv6, 16);
        let k = make_key(&s, &KeyInput::Ipv4(Ipv4Addr::new(1, 2, 3, 4))).unwrap();
        let mut out = String::new();
        format_key(&s, k.as_bytes(), &mut out);
        assert_eq!(out, "::ffff:1.2.3.4");
    }

    #[test]
    fn integer_and_string_keys() {
        let s = spec(KeyType::Integer, 4);
        let k = make_key(&s, &KeyInput::Sint(-1)).unwrap();
        let mut out = String::new();
        format_key(&s, k.as_bytes(), &mut out);
        assert_eq!(out, "4294967295");
        assert_eq!(
            make_key(&s, &KeyInput::Str(b"+12abc")).unwrap().as_bytes(),
            &12u32.to_le_bytes()
        );
        let s = spec(KeyType::String, 4);
        let k = make_key(&s, &KeyInput::Str(b"abcdef")).unwrap();
        assert_eq!(k.as_bytes(), b"abcd");
        assert!(matches!(k, TableKey::Borrowed(_)));
        assert_eq!(
            make_key(&s, &KeyInput::Str(b"a\0b")).unwrap().as_bytes(),
            b"a"
        );
        let mut out = String::new();
        format_key(&s, b"a b=\\\x01", &mut out);
        assert_eq!(out, "a\\ b\\=\\\\\\x01");
    }

    #[test]
    fn binary_pads() {
        let s = spec(KeyType::Binary, 6);
        let k = make_key(&s, &KeyInput::Bin(b"ab")).unwrap();
        assert_eq!(k.as_bytes(), b"ab\0\0\0\0");
        let k = make_key(&s, &KeyInput::Bin(b"abcdefgh")).unwrap();
        assert_eq!(k.as_bytes(), b"abcdef");
        let mut out = String::new();
        format_key(&s, k.as_bytes(), &mut out);
        assert_eq!(out, "616263646566");
    }

    #[test]
    fn cli_keys() {
        let s = spec(KeyType::Ip, 4);
        assert_eq!(
            parse_cli_key(&s, "10.1.2.3", "Showing").unwrap(),
            vec![10, 1, 2, 3]
        );
        assert_eq!(
            parse_cli_key(&s, "junk", "Showing").unwrap(),
            vec![0, 0, 0, 0]
        );
        let s = spec(KeyType::Integer, 4);
        assert_eq!(
            parse_cli_key(&s, "7", "Showing").unwrap(),
            7u32.to_le_bytes().to_vec()
        );
        assert!(parse_cli_key(&s, "4294967296", "Showing").is_err());
        assert!(parse_cli_key(&s, "x", "Showing").is_err());
        let s = spec(KeyType::Binary, 4);
        assert_eq!(
            parse_cli_key(&s, "00", "Inserting").unwrap_err(),
            "Inserting keys into tables of type other than ip, ipv6, string and integer is not supported\n"
        );
    }
}
