//! Parsing one pattern (or one map value) for a match method, and matching
//! one compiled list pattern against a prepared sample.
//!
//! The parsers follow HAProxy 2.6's `pat_parse_*` functions: integer ranges
//! use `:` or `-` as separator, IPv4 networks go through `inet_pton` and,
//! when resolution is allowed, `gethostbyname` (which accepts inet_aton's
//! short forms such as `10.12`), IPv6 networks take a prefix length only.

use super::Method;
use regex::bytes::{Regex, RegexBuilder};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};
use std::sync::Arc;

/// What a user of a pattern reference does with its entries: the match
/// method and flags (`-i`, `-n`), and for maps the output type of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UserCfg {
    pub method: Method,
    pub icase: bool,
    pub no_dns: bool,
    /// Integer patterns are `major.minor` versions (`req.ssl_ver`).
    pub dotted: bool,
    /// For maps: how values are parsed.
    pub out: Option<OutKind>,
}

impl UserCfg {
    /// Whether keys and samples are lowercased (the byte-comparing methods
    /// under `-i`; `reg` uses a case-insensitive regex instead).
    pub fn lower(&self) -> bool {
        self.icase
            && matches!(
                self.method,
                Method::Str | Method::Beg | Method::Sub | Method::End | Method::Dir | Method::Dom
            )
    }
}

/// A map's output type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutKind {
    Str,
    Int,
    Ip,
}

/// A map value parsed for its output type (`Str` values are read from the
/// entry itself).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum OutVal {
    Raw,
    Sint(i64),
    Ip(IpAddr),
}

/// An integer range; `None` bounds are open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl Range {
    pub fn contains(&self, v: i64) -> bool {
        self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m)
    }
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub(crate) enum Key {
    /// `found` and `bool` ignore their patterns.
    Nothing,
    /// `str`, `beg` and `bin`: bytes to look up (lowercased under `-i`).
    Bytes(Arc<[u8]>),
    Sub(Arc<[u8]>),
    End(Arc<[u8]>),
    /// `dir`/`dom`, delimiters at both ends stripped.
    Dir(Arc<[u8]>),
    Dom(Arc<[u8]>),
    Int(Range),
    Len(Range),
    V4 {
        addr: u32,
        mask: u32,
    },
    V6 {
        addr: u128,
        len: u8,
    },
    Reg(Regex),
}

/// A sample prepared for a method: cast, and lowercased when needed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'a> {
    Int(i64),
    V4(u32),
    V6(u128),
    Bytes(&'a [u8]),
}

const DIR_DELIMS: &[u8] = b"/?";
const DOM_DELIMS: &[u8] = b"/?.:";

impl Key {
    /// Whether this list pattern matches `inp` (the tree-indexed forms are
    /// looked up by the index, never here, except non-contiguous IPv4
    /// masks).
    pub fn matches(&self, inp: &Input<'_>) -> bool {
        match (self, *inp) {
            (Key::Nothing, _) => true,
            (Key::Bytes(p), Input::Bytes(s)) => **p == *s,
            (Key::Sub(p), Input::Bytes(s)) => contains(s, p),
            (Key::End(p), Input::Bytes(s)) => s.ends_with(p),
            (Key::Dir(p), Input::Bytes(s)) => match_word(s, p, DIR_DELIMS),
            (Key::Dom(p), Input::Bytes(s)) => match_word(s, p, DOM_DELIMS),
            (Key::Int(r), Input::Int(v)) => r.contains(v),
            (Key::Len(r), Input::Bytes(s)) => r.contains(s.len() as i64),
            (Key::Reg(re), Input::Bytes(s)) => re.is_match(s),
            (Key::V4 { addr, mask }, inp) => match v4_of(inp) {
                Some(a) => (a ^ addr) & mask == 0,
                None => false,
            },
            (Key::V6 { addr, len }, Input::V6(a)) => a & mask6(*len) == *addr,
            _ => false,
        }
    }
}

/// The IPv4 address a sample stands for, for IPv4 patterns: the address
/// itself, or one embedded in an IPv6 address (`::ffff:a.b.c.d`,
/// `::a.b.c.d`, `2002:AABB:CCDD::`).
pub(crate) fn v4_of(inp: Input<'_>) -> Option<u32> {
    match inp {
        Input::V4(a) => Some(a),
        Input::V6(a) => {
            if a >> 64 == 0 && ((a >> 32) as u32 == 0 || (a >> 32) as u32 == 0xffff) {
                Some(a as u32)
            } else if a >> 112 == 0x2002 {
                Some((a >> 80) as u32)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The mask of an IPv6 prefix of `len` bits.
pub(crate) fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// The mask of an IPv4 prefix of `len` bits.
pub(crate) fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

fn contains(s: &[u8], p: &[u8]) -> bool {
    if p.is_empty() {
        return true;
    }
    if p.len() > s.len() {
        return false;
    }
    let first = p[0];
    (0..=s.len() - p.len()).any(|i| s[i] == first && &s[i..i + p.len()] == p)
}

/// HAProxy's `match_word`: `p` (already stripped of delimiters) must start
/// after a delimiter or at the start of `s`, and end before a delimiter or
/// at its end.
fn match_word(s: &[u8], p: &[u8], delims: &[u8]) -> bool {
    let pl = p.len();
    if pl == 0 || pl > s.len() {
        return false;
    }
    let end = s.len() - pl;
    let mut may_match = true;
    for c in 0..=end {
        if delims.contains(&s[c]) {
            may_match = true;
            continue;
        }
        if !may_match {
            continue;
        }
        if &s[c..c + pl] == p && (c == end || delims.contains(&s[c + pl])) {
            return true;
        }
        may_match = false;
    }
    false
}

fn strip_delims<'a>(mut p: &'a [u8], delims: &[u8]) -> &'a [u8] {
    while let [f, rest @ ..] = p {
        if !delims.contains(f) {
            break;
        }
        p = rest;
    }
    while let [rest @ .., l] = p {
        if !delims.contains(l) {
            break;
        }
        p = rest;
    }
    p
}

/// Compiles one pattern for `cfg`. `resolve`: host names in IPv4 patterns
/// may be resolved (configuration loading, without `-n`).
pub(crate) fn compile_key(cfg: &UserCfg, key: &[u8], resolve: bool) -> Result<Key, String> {
    let lowered;
    let k = if cfg.lower() && key.iter().any(u8::is_ascii_uppercase) {
        lowered = key.to_ascii_lowercase();
        &lowered[..]
    } else {
        key
    };
    Ok(match cfg.method {
        Method::Found | Method::Bool => Key::Nothing,
        Method::Str | Method::Beg => Key::Bytes(k.into()),
        Method::Sub => Key::Sub(k.into()),
        Method::End => Key::End(k.into()),
        Method::Dir => Key::Dir(strip_delims(k, DIR_DELIMS).into()),
        Method::Dom => Key::Dom(strip_delims(k, DOM_DELIMS).into()),
        Method::Bin => Key::Bytes(parse_hex(&text(key))?.into()),
        Method::Int if cfg.dotted => Key::Int(parse_range(&text(key), true)?),
        Method::Int => Key::Int(parse_range(&text(key), false)?),
        Method::Len => Key::Len(parse_range(&text(key), false)?),
        Method::Ip => parse_ip(&text(key), resolve && !cfg.no_dns)?,
        Method::Reg => Key::Reg(parse_regex(&text(key), cfg.icase)?),
    })
}

/// Parses a map value for its output type.
pub(crate) fn compile_out(out: Option<OutKind>, value: Option<&[u8]>) -> Result<OutVal, String> {
    let v = value.unwrap_or_default();
    match out {
        None | Some(OutKind::Str) => Ok(OutVal::Raw),
        Some(OutKind::Int) => parse_map_int(v)
            .map(OutVal::Sint)
            .ok_or_else(|| format!("'{}' is not a valid integer", text(v))),
        Some(OutKind::Ip) => parse_map_ip(v)
            .map(OutVal::Ip)
            .ok_or_else(|| format!("'{}' is not a valid IPv4 or IPv6 address", text(v))),
    }
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `map_parse_int`: an optional `-` and digits, nothing else (empty is 0).
fn parse_map_int(v: &[u8]) -> Option<i64> {
    let (neg, d) = match v {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, v),
    };
    let mut n: i64 = 0;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.wrapping_mul(10).wrapping_add((b - b'0') as i64);
    }
    Some(if neg { n.wrapping_neg() } else { n })
}

/// `map_parse_ip`: a dotted IPv4 address, else an IPv6 address.
fn parse_map_ip(v: &[u8]) -> Option<IpAddr> {
    let s = std::str::from_utf8(v).ok()?;
    s.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .or_else(|_| s.parse::<Ipv6Addr>().map(IpAddr::V6))
        .ok()
}

/// `strl2llrc`: an optional `-` and at least one digit, nothing else.
fn strl2llrc(s: &str) -> Option<i64> {
    let d = s.strip_prefix('-').unwrap_or(s);
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i64 = 0;
    for b in d.bytes() {
        n = n.wrapping_mul(10).wrapping_add((b - b'0') as i64);
    }
    Some(if s.starts_with('-') {
        n.wrapping_neg()
    } else {
        n
    })
}

/// `strl2llrc_dotted`: `major[.minor]`, each below 65536, as
/// `major << 16 | minor`.
fn strl2llrc_dotted(s: &str) -> Option<i64> {
    let (maj, min) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let maj = strl2llrc(maj)?;
    let min = match min {
        Some(m) => strl2llrc(m)?,
        None => 0,
    };
    if !(0..65536).contains(&maj) || !(0..65536).contains(&min) {
        return None;
    }
    Some(maj << 16 | min)
}

/// `pat_parse_int` / `pat_parse_dotted_ver`: `v`, `a:b`, `:b`, `a:` (`-`
/// works as the separator too).
pub(crate) fn parse_range(t: &str, dotted: bool) -> Result<Range, String> {
    let num = |s: &str| {
        if dotted {
            strl2llrc_dotted(s)
        } else {
            strl2llrc(s)
        }
    };
    let (bad_num, bad_range) = if dotted {
        (
            "is not a dotted number",
            "is not a valid dotted number range",
        )
    } else {
        ("is not a number", "is not a valid integer range")
    };
    let range_err = || format!("'{t}' {bad_range}");
    let Some(sep) = t.find([':', '-']) else {
        let v = num(t).ok_or_else(|| format!("'{t}' {bad_num}"))?;
        return Ok(Range {
            min: Some(v),
            max: Some(v),
        });
    };
    let (a, b) = (&t[..sep], &t[sep + 1..]);
    if a.is_empty() && !b.is_empty() {
        return Ok(Range {
            min: None,
            max: Some(num(b).ok_or_else(range_err)?),
        });
    }
    if b.is_empty() {
        return Ok(Range {
            min: Some(num(a).ok_or_else(range_err)?),
            max: None,
        });
    }
    let (a, b) = (num(a).ok_or_else(range_err)?, num(b).ok_or_else(range_err)?);
    if a > b {
        return Err(range_err());
    }
    Ok(Range {
        min: Some(a),
        max: Some(b),
    })
}

/// The comparison operators of ACL integer values (`gt 5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "eq" => Op::Eq,
            "ge" => Op::Ge,
            "gt" => Op::Gt,
            "le" => Op::Le,
            "lt" => Op::Lt,
            _ => return None,
        })
    }
}

/// Rewrites an ACL value that follows an operator into a range, as
/// HAProxy's ACL parser does (`gt 5` is `6:`; `lt 1.0` is `:0.65535` for
/// dotted versions). Values containing `:` or `-` are kept as they are.
pub(crate) fn apply_op(op: Op, v: &str, dotted: bool) -> Result<String, String> {
    if op == Op::Eq || v.contains([':', '-']) {
        return Ok(v.to_string());
    }
    let bad = || format!("'{v}' is neither a number nor a supported operator");
    let (maj, minor) = match v.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    let mut value = strl2llrc(maj).ok_or_else(bad)?;
    if dotted {
        let minor = match minor {
            Some(m) => strl2llrc(m).ok_or_else(bad)?,
            None => 0,
        };
        if minor >= 65536 {
            return Err(format!("'{v}' contains too large a minor value"));
        }
        if value >= 65536 {
            return Err(format!("'{v}' contains too large a major value"));
        }
        value = value << 16 | (minor & 0xffff);
    }
    let fmt = |n: i64| {
        if dotted {
            format!("{}.{}", n >> 16, n & 0xffff)
        } else {
            n.to_string()
        }
    };
    Ok(match op {
        Op::Gt => format!("{}:", fmt(value.wrapping_add(1))),
        Op::Ge => format!("{}:", fmt(value)),
        Op::Lt => format!(":{}", fmt(value.wrapping_sub(1))),
        Op::Le => format!(":{}", fmt(value)),
        Op::Eq => unreachable!(),
    })
}

/// Even-length hexadecimal (`bin` patterns).
pub(crate) fn parse_hex(t: &str) -> Result<Vec<u8>, String> {
    if !t.len().is_multiple_of(2) {
        return Err(format!("'{t}' is not a valid hex string: odd length"));
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    t.as_bytes()
        .chunks(2)
        .map(|p| match (nib(p[0]), nib(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!("'{t}' is not a valid hex string")),
        })
        .collect()
}

/// A regex pattern, on bytes, case-insensitive under `-i`.
pub(crate) fn parse_regex(t: &str, icase: bool) -> Result<Regex, String> {
    RegexBuilder::new(t)
        .case_insensitive(icase)
        .unicode(false)
        .build()
        .map_err(|e| format!("regex '{t}' is invalid: {e}"))
}

/// `pat_parse_ip`: an IPv4 network (`str2net`: a dotted address or, when
/// `resolve`, anything `gethostbyname` takes; a mask in prefix or dotted
/// form), else an IPv6 network with a prefix length.
pub(crate) fn parse_ip(t: &str, resolve: bool) -> Result<Key, String> {
    parse_net4(t, resolve)
        .or_else(|| parse_net6(t))
        .ok_or_else(|| format!("'{t}' is not a valid IPv4 or IPv6 address"))
}

fn parse_net4(t: &str, resolve: bool) -> Option<Key> {
    let (a, mask) = match t.rfind('/') {
        Some(i) => (&t[..i], str2mask(&t[i + 1..])?),
        None => (t, u32::MAX),
    };
    let addr = match a.parse::<Ipv4Addr>() {
        Ok(a) => a,
        Err(_) if resolve => host_v4(a)?,
        Err(_) => return None,
    };
    Some(Key::V4 {
        addr: u32::from(addr) & mask,
        mask,
    })
}

/// A mask in dotted form or as a prefix length.
fn str2mask(m: &str) -> Option<u32> {
    if m.contains('.') {
        return m.parse::<Ipv4Addr>().ok().map(u32::from);
    }
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: u32 = m.parse().ok()?;
    (len <= 32).then(|| mask4(len as u8))
}

/// What `gethostbyname` returns for a name: inet_aton's forms for numbers
/// (`10.12` is 10.0.0.12, `192.168.1` is 192.168.0.1), else the first
/// IPv4 address the resolver gives.
fn host_v4(h: &str) -> Option<Ipv4Addr> {
    if let Some(a) = inet_aton(h) {
        return Some(a);
    }
    if h.is_empty() || h.contains(':') || h.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    (h, 0u16)
        .to_socket_addrs()
        .ok()?
        .find_map(|sa| match sa.ip() {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        })
}

/// BSD `inet_aton`: one to four parts, each decimal, octal (leading `0`)
/// or hexadecimal (`0x`); the last part fills the remaining bytes.
pub(crate) fn inet_aton(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut vals = Vec::with_capacity(4);
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if p.is_empty() || (radix != 16 && digits.is_empty()) {
            return None;
        }
        let v = if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        vals.push(v);
    }
    let n = vals.len();
    let (head, last) = vals.split_at(n - 1);
    if head.iter().any(|&v| v > 255) || last[0] >= 1u64 << (8 * (5 - n)) {
        return None;
    }
    let mut a: u64 = 0;
    for (i, v) in head.iter().enumerate() {
        a |= v << (24 - 8 * i);
    }
    Some(Ipv4Addr::from((a | last[0]) as u32))
}

fn parse_net6(t: &str) -> Option<Key> {
    let (a, len) = match t.rfind('/') {
        Some(i) => {
            let l = &t[i + 1..];
            if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&t[..i], l.parse::<u8>().ok().filter(|&l| l <= 128)?)
        }
        None => (t, 128),
    };
    let addr = u128::from(a.parse::<Ipv6Addr>().ok()?);
    Some(Key::V6 {
        addr: addr & mask6(len),
        len,
    })
}

/// HAProxy's `exp_replace`: `\0`..`\9` insert capture groups, `\xHH` a
/// byte, `\c` the character `c`. `None` on a trailing backslash.
pub(crate) fn exp_replace(
    src: &[u8],
    tmpl: &[u8],
    caps: &regex::bytes::Captures<'_>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(tmpl.len() + src.len());
    let mut i = 0;
    while i < tmpl.len() {
        let c = tmpl[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let n = *tmpl.get(i)?;
        i += 1;
        if n.is_ascii_digit() {
            if let Some(m) = caps.get((n - b'0') as usize) {
                out.extend_from_slice(m.as_bytes());
            }
        } else if n == b'x' {
            let h = |c: u8| {
                let c = c.to_ascii_uppercase().wrapping_sub(b'0');
                if c > 9 {
                    c.wrapping_sub(b'A' - b'9' - 1)
                } else {
                    c
                }
            };
            let (a, b) = (*tmpl.get(i)?, *tmpl.get(i + 1)?);
            i += 2;
            out.push(h(a) << 4 | (h(b) & 0xf));
        } else {
            out.push(n);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inet_aton_forms() {
        assert_eq!(inet_aton("10.12"), Some(Ipv4Addr::new(10, 0, 0, 12)));
        assert_eq!(inet_aton("192.168.1"), Some(Ipv4Addr::new(192, 168, 0, 1)));
        assert_eq!(inet_aton("127.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(inet_aton("0x7f.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(inet_aton("010.0.0.1"), Some(Ipv4Addr::new(8, 0, 0, 1)));
        assert_eq!(inet_aton("16909060"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(inet_aton("256.1"), None);
        assert_eq!(inet_aton("1.2.3.4.5"), None);
        assert_eq!(inet_aton("1..2"), None);
        assert_eq!(inet_aton("08"), None);
    }

    #[test]
    fn ranges_and_operators() {
        let r = |s| parse_range(s, false).unwrap();
        assert_eq!(
            r("5"),
            Range {
                min: Some(5),
                max: Some(5)
            }
        );
        assert_eq!(
            r("1:3"),
            Range {
                min: Some(1),
                max: Some(3)
            }
        );
        assert_eq!(
            r("1-3"),
            Range {
                min: Some(1),
                max: Some(3)
            }
        );
        assert_eq!(
            r(":3"),
            Range {
                min: None,
                max: Some(3)
            }
        );
        assert_eq!(
            r("3:"),
            Range {
                min: Some(3),
                max: None
            }
        );
        assert!(parse_range("3:1", false).is_err());
        assert!(parse_range("x", false)
            .unwrap_err()
            .contains("'x' is not a number"));
        assert!(parse_range(":", false).is_err());
        assert_eq!(
            parse_range("1.1", true).unwrap(),
            Range {
                min: Some(0x10001),
                max: Some(0x10001)
            }
        );
        assert_eq!(apply_op(Op::Gt, "5", false).unwrap(), "6:");
        assert_eq!(apply_op(Op::Lt, "5", false).unwrap(), ":4");
        assert_eq!(apply_op(Op::Le, "5", false).unwrap(), ":5");
        assert_eq!(apply_op(Op::Ge, "5", false).unwrap(), "5:");
        assert_eq!(apply_op(Op::Lt, "1.0", true).unwrap(), ":0.65535");
        assert_eq!(apply_op(Op::Gt, "3.1", true).unwrap(), "3.2:");
        assert!(apply_op(Op::Gt, "abc", false).is_err());
    }

    #[test]
    fn words() {
        assert!(match_word(b"www.example.com", b"example.com", DOM_DELIMS));
        assert!(match_word(
            b"example.com.evil.org",
            b"example.com",
            DOM_DELIMS
        ));
        assert!(!match_word(b"notexample.com", b"example.com", DOM_DELIMS));
        assert!(match_word(b"/img/a.png", b"img", DIR_DELIMS));
        assert!(!match_word(b"/images/a.png", b"img", DIR_DELIMS));
        assert_eq!(strip_delims(b"/img/", DIR_DELIMS), b"img");
    }

    #[test]
    fn masks() {
        assert!(matches!(
            parse_ip("10.0.0.0/255.255.0.0", false),
            Ok(Key::V4 {
                mask: 0xffff0000,
                ..
            })
        ));
        assert!(matches!(
            parse_ip("10.0.0.0/8", false),
            Ok(Key::V4 {
                mask: 0xff000000,
                ..
            })
        ));
        assert!(parse_ip("10.0.0.0/33", false).is_err());
        assert!(parse_ip("10.12", false).is_err());
        assert!(parse_ip("somehost.invalid", false).is_err());
        assert!(matches!(
            parse_ip("10.12", true),
            Ok(Key::V4 {
                addr: 0x0a00000c,
                ..
            })
        ));
        assert!(matches!(
            parse_ip("192.168.1/22", true),
            Ok(Key::V4 {
                addr: 0xc0a80000,
                mask: 0xfffffc00
            })
        ));
        assert!(matches!(
            parse_ip("2001:db8::/32", false),
            Ok(Key::V6 { len: 32, .. })
        ));
        assert!(parse_ip("2001:db8::/129", false).is_err());
    }
}
