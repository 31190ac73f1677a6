//! Sample values and HAProxy 2.6's implicit casts (`sample_casts` in
//! `src/sample.c`).
//!
//! A [`Sample`] borrows from the stream where it can (a header value, the
//! path) and owns its bytes only when a converter produced new ones, so the
//! common fetch-and-compare path allocates nothing.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A sample's type. `Addr` is an input type only (converters that accept
/// either address family); `Any` accepts every type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpType {
    Bool,
    Sint,
    Addr,
    Ipv4,
    Ipv6,
    Str,
    Bin,
    Meth,
    Any,
}

impl SmpType {
    /// HAProxy's name for the type (used in error messages).
    pub fn name(self) -> &'static str {
        match self {
            SmpType::Bool => "bool",
            SmpType::Sint => "sint",
            SmpType::Addr => "addr",
            SmpType::Ipv4 => "ipv4",
            SmpType::Ipv6 => "ipv6",
            SmpType::Str => "str",
            SmpType::Bin => "bin",
            SmpType::Meth => "meth",
            SmpType::Any => "any",
        }
    }
}

/// One sample value.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample<'a> {
    Bool(bool),
    Sint(i64),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    Str(Cow<'a, [u8]>),
    Bin(Cow<'a, [u8]>),
    /// An HTTP method, by name (`GET`, or any token).
    Meth(Cow<'a, [u8]>),
}

impl<'a> Sample<'a> {
    /// A string sample borrowing `b`.
    pub fn str(b: &'a [u8]) -> Sample<'a> {
        Sample::Str(Cow::Borrowed(b))
    }

    /// A string sample owning `v`.
    pub fn owned_str(v: Vec<u8>) -> Sample<'static> {
        Sample::Str(Cow::Owned(v))
    }

    pub fn smp_type(&self) -> SmpType {
        match self {
            Sample::Bool(_) => SmpType::Bool,
            Sample::Sint(_) => SmpType::Sint,
            Sample::Ipv4(_) => SmpType::Ipv4,
            Sample::Ipv6(_) => SmpType::Ipv6,
            Sample::Str(_) => SmpType::Str,
            Sample::Bin(_) => SmpType::Bin,
            Sample::Meth(_) => SmpType::Meth,
        }
    }

    /// Detaches the sample from what it borrows.
    pub fn into_owned(self) -> Sample<'static> {
        match self {
            Sample::Bool(b) => Sample::Bool(b),
            Sample::Sint(i) => Sample::Sint(i),
            Sample::Ipv4(a) => Sample::Ipv4(a),
            Sample::Ipv6(a) => Sample::Ipv6(a),
            Sample::Str(s) => Sample::Str(Cow::Owned(s.into_owned())),
            Sample::Bin(s) => Sample::Bin(Cow::Owned(s.into_owned())),
            Sample::Meth(s) => Sample::Meth(Cow::Owned(s.into_owned())),
        }
    }

    /// A borrowed copy (no allocation).
    pub fn reborrow(&self) -> Sample<'_> {
        match self {
            Sample::Bool(b) => Sample::Bool(*b),
            Sample::Sint(i) => Sample::Sint(*i),
            Sample::Ipv4(a) => Sample::Ipv4(*a),
            Sample::Ipv6(a) => Sample::Ipv6(*a),
            Sample::Str(s) => Sample::Str(Cow::Borrowed(s)),
            Sample::Bin(s) => Sample::Bin(Cow::Borrowed(s)),
            Sample::Meth(s) => Sample::Meth(Cow::Borrowed(s)),
        }
    }

    /// The bytes of a `str`, `bin` or `meth` sample.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Sample::Str(s) | Sample::Bin(s) | Sample::Meth(s) => Some(s),
            _ => None,
        }
    }

    /// Casts to `to` following HAProxy's cast table. `None` when the cast
    /// does not exist or fails at run time (which counts as "no sample").
    pub fn cast(self, to: SmpType) -> Option<Sample<'a>> {
        use Sample as S;
        use SmpType as T;
        if to == T::Any || self.smp_type() == to {
            return Some(self);
        }
        match (self, to) {
            (S::Ipv4(a), T::Addr) => Some(S::Ipv4(a)),
            (S::Ipv6(a), T::Addr) => Some(S::Ipv6(a)),
            (S::Bool(b), T::Sint) => Some(S::Sint(b as i64)),
            (S::Bool(b), T::Str) => Some(S::str(if b { b"1" } else { b"0" })),
            (S::Bool(b), T::Bin) => Some(S::Bin(Cow::Owned((b as i64).to_be_bytes().to_vec()))),
            (S::Sint(i), T::Bool) => Some(S::Bool(i != 0)),
            (S::Sint(i), T::Ipv4 | T::Addr) => Some(S::Ipv4(Ipv4Addr::from(i as u32))),
            (S::Sint(i), T::Ipv6) => Some(S::Ipv6(Ipv4Addr::from(i as u32).to_ipv6_mapped())),
            (S::Sint(i), T::Str) => Some(S::owned_str(i.to_string().into_bytes())),
            (S::Sint(i), T::Bin) => Some(S::Bin(Cow::Owned(i.to_be_bytes().to_vec()))),
            (S::Ipv4(a), T::Sint) => Some(S::Sint(u32::from(a) as i64)),
            (S::Ipv4(a), T::Ipv6) => Some(S::Ipv6(a.to_ipv6_mapped())),
            (S::Ipv4(a), T::Str) => Some(S::owned_str(a.to_string().into_bytes())),
            (S::Ipv4(a), T::Bin) => Some(S::Bin(Cow::Owned(a.octets().to_vec()))),
            (S::Ipv6(a), T::Ipv4) => v6_to_v4(a).map(S::Ipv4),
            (S::Ipv6(a), T::Str) => Some(S::owned_str(a.to_string().into_bytes())),
            (S::Ipv6(a), T::Bin) => Some(S::Bin(Cow::Owned(a.octets().to_vec()))),
            (S::Str(s), T::Bool) => read_int64(&s).map(|i| S::Bool(i != 0)),
            (S::Str(s), T::Sint) => read_int64(&s).map(S::Sint),
            (S::Str(s), T::Ipv4) => parse_v4(&s).map(S::Ipv4),
            (S::Str(s), T::Ipv6) => parse_v6(&s).map(S::Ipv6),
            (S::Str(s), T::Addr) => parse_v4(&s)
                .map(S::Ipv4)
                .or_else(|| parse_v6(&s).map(S::Ipv6)),
            (S::Str(s), T::Bin) => Some(S::Bin(s)),
            (S::Str(s), T::Meth) => Some(S::Meth(s)),
            (S::Bin(s), T::Str) => Some(S::Str(cut_at_nul(s))),
            (S::Bin(s), T::Meth) => Some(S::Meth(cut_at_nul(s))),
            (S::Meth(s), T::Str) => Some(S::Str(s)),
            (S::Meth(s), T::Bin) => Some(S::Bin(s)),
            _ => None,
        }
    }
}

/// Whether a value of type `from` can be cast to `to` (the parse-time
/// check that refuses a converter whose input type cannot be reached).
pub fn can_cast(from: SmpType, to: SmpType) -> bool {
    use SmpType as T;
    if from == to || to == T::Any || from == T::Any {
        return true;
    }
    match from {
        T::Bool => matches!(to, T::Sint | T::Str | T::Bin),
        T::Sint => matches!(to, T::Bool | T::Ipv4 | T::Ipv6 | T::Addr | T::Str | T::Bin),
        T::Ipv4 => matches!(to, T::Sint | T::Ipv6 | T::Addr | T::Str | T::Bin),
        T::Ipv6 => matches!(to, T::Ipv4 | T::Addr | T::Str | T::Bin),
        T::Addr => matches!(to, T::Ipv4 | T::Ipv6 | T::Str | T::Bin | T::Sint),
        T::Str => true,
        T::Bin => matches!(to, T::Str | T::Meth),
        T::Meth => matches!(to, T::Str | T::Bin),
        T::Any => true,
    }
}

fn cut_at_nul(s: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    match s.iter().position(|&b| b == 0) {
        None => s,
        Some(n) => match s {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..n]),
            Cow::Owned(mut v) => {
                v.truncate(n);
                Cow::Owned(v)
            }
        },
    }
}

/// HAProxy's `read_int64`: an optional sign and the leading digits
/// (`"12ab"` is 12, `"ab"` is 0); an empty string fails. Saturates.
pub fn read_int64(s: &[u8]) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            break;
        }
        let d = (b - b'0') as i64;
        v = if neg {
            v.saturating_mul(10).saturating_sub(d)
        } else {
            v.saturating_mul(10).saturating_add(d)
        };
    }
    Some(v)
}

/// The IPv4 address an IPv6 one stands for: v4-mapped (`::ffff:a.b.c.d`),
/// v4-compatible (`::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::/48`).
pub fn v6_to_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    if let Some(v4) = a.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return Some(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// HAProxy's `buf2ip` (the string to IPv4 cast): four dotted decimal
/// octets, leading zeros allowed, read up to the first character that is
/// neither a digit nor a dot (`10.1.2.3:8080` is `10.1.2.3`).
fn parse_v4(s: &[u8]) -> Option<Ipv4Addr> {
    Some(Ipv4Addr::from(leading_v4(s)?.0))
}

/// The IPv4 address `s` starts with (HAProxy's `buf2ip`/`url2ipv4`) and
/// how many bytes it takes.
pub(crate) fn leading_v4(s: &[u8]) -> Option<([u8; 4], usize)> {
    let mut oct = [0u8; 4];
    let (mut n, mut cur, mut saw_digit) = (0usize, 0u32, false);
    let mut used = s.len();
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                cur = cur * 10 + u32::from(c - b'0');
                if cur > 255 {
                    return None;
                }
                if !saw_digit {
                    n += 1;
                    if n > 4 {
                        return None;
                    }
                    saw_digit = true;
                }
                oct[n - 1] = cur as u8;
            }
            b'.' if saw_digit => {
                if n == 4 {
                    return None;
                }
                cur = 0;
                saw_digit = false;
            }
            b'.' => return None,
            _ => {
                used = i;
                break;
            }
        }
    }
    (n == 4).then_some((oct, used))
}

fn parse_v6(s: &[u8]) -> Option<Ipv6Addr> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_to_int_reads_leading_digits() {
        assert_eq!(read_int64(b"12ab"), Some(12));
        assert_eq!(read_int64(b"ab"), Some(0));
        assert_eq!(read_int64(b"-7"), Some(-7));
        assert_eq!(read_int64(b""), None);
        assert_eq!(
            Sample::str(b"42").cast(SmpType::Sint),
            Some(Sample::Sint(42))
        );
    }

    /// HAProxy 2.6.12 (tests/scenarios/22_match_ip_bin_found_bool.scn):
    /// `buf2ip` stops at the first character that is not a digit or a dot.
    #[test]
    fn str_to_ipv4_as_buf2ip() {
        let v4 = |s: &'static str| Sample::str(s.as_bytes()).cast(SmpType::Ipv4);
        let a = Sample::Ipv4(Ipv4Addr::new(10, 1, 1, 1));
        assert_eq!(v4("10.1.1.1"), Some(a.clone()));
        assert_eq!(v4("10.1.1.1:8080"), Some(a.clone()));
        assert_eq!(v4("10.1.1.1x"), Some(a.clone()));
        assert_eq!(v4("010.001.1.1"), Some(a));
        assert_eq!(v4("10.1.1"), None);
        assert_eq!(v4("10.1.1.1.5"), None);
        assert_eq!(v4("10..1.1"), None);
        assert_eq!(v4("256.1.1.1"), None);
        assert_eq!(v4("x10.1.1.1"), None);
        assert_eq!(
            Sample::str(b"::1").cast(SmpType::Addr),
            Some(Sample::Ipv6(Ipv6Addr::LOCALHOST))
        );
    }

    #[test]
    fn address_casts() {
        let v4 = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(
            Sample::Ipv4(v4).cast(SmpType::Sint),
            Some(Sample::Sint(0x0a000001))
        );
        assert_eq!(
            Sample::Ipv6(v4.to_ipv6_mapped()).cast(SmpType::Ipv4),
            Some(Sample::Ipv4(v4))
        );
        assert_eq!(
            Sample::Ipv6("2002:0a00:0001::1".parse().unwrap()).cast(SmpType::Ipv4),
            Some(Sample::Ipv4(v4))
        );
        assert_eq!(
            Sample::Ipv6("2001:db8::1".parse().unwrap()).cast(SmpType::Ipv4),
            None
        );
        assert_eq!(
            Sample::str(b"10.0.0.1").cast(SmpType::Ipv4),
            Some(Sample::Ipv4(v4))
        );
    }

    #[test]
    fn bin_to_str_cuts_at_nul() {
        let s = Sample::Bin(Cow::Borrowed(b"ab\0cd")).cast(SmpType::Str);
        assert_eq!(s, Some(Sample::str(b"ab")));
        assert!(!can_cast(SmpType::Bin, SmpType::Sint));
        assert!(can_cast(SmpType::Str, SmpType::Ipv4));
    }
}
