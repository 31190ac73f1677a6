//! The RDP cookie of a Remote Desktop client's first message, for
//! `req.rdp_cookie`, `req.rdp_cookie_cnt`, `balance rdp-cookie` and
//! `persist rdp-cookie`.
//!
//! An RDP client opens with a TPKT header (4 bytes) and an X.224
//! Connection Request (7 bytes), followed by an optional routing token
//! such as `Cookie: mstshash=alice\r\n`. The parser reads it the way
//! HAProxy 2.6 does (`fetch_rdp_cookie_name`), behaviour checked against
//! HAProxy 2.6.12 in `tests/rdp_cookie.rs`:
//!
//! * the first 11 bytes are skipped without being checked;
//! * then `Cookie:` must follow (any case), then any number of spaces;
//! * with a name, `<name>=` must follow (the name in any case); without
//!   one, any name up to the first `=` (a CR or LF before it means no
//!   cookie);
//! * the value runs up to the first CR, which must be followed by LF.
//!
//! Only that first cookie is looked at. A buffer that ends before the
//! answer is known is [`RdpCookie::Incomplete`]: rules wait for more data
//! until their inspect-delay ends.
//!
//! [`persist_addr`] decodes the load-balancing cookie (`msts`) a Windows
//! terminal server hands out in token redirection mode:
//! `<address>.<port>.<rest>`, where `<address>` is the decimal value of
//! the IPv4 address's four bytes read as a little-endian 32-bit integer
//! and `<port>` the decimal value of the port's two bytes in network order
//! read as a little-endian 16-bit integer (`3389` is written `15629`).
//! HAProxy compares those raw numbers with the `sockaddr_in` fields of a
//! little-endian host, which gives this reading.

use std::net::{Ipv4Addr, SocketAddrV4};

/// What the start of a request buffer says about its RDP cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdpCookie<'a> {
    /// The (first) cookie's value, possibly empty.
    Found(&'a [u8]),
    /// The buffer is not an RDP request carrying that cookie.
    Absent,
    /// More data is needed to tell.
    Incomplete,
}

/// Length of the TPKT header and of the X.224 Connection Request header.
const HEADERS: usize = 11;

/// The value of the cookie named `name` (any case) in `buf`, or of the
/// first cookie whatever its name when `name` is empty.
pub fn cookie<'a>(buf: &'a [u8], name: &[u8]) -> RdpCookie<'a> {
    // HAProxy needs strictly more than the headers, then strictly more
    // than "Cookie:".
    let Some(data) = buf.get(HEADERS..).filter(|d| !d.is_empty()) else {
        return RdpCookie::Incomplete;
    };
    const TAG: &[u8] = b"Cookie:";
    if data.len() <= TAG.len() {
        return RdpCookie::Incomplete;
    }
    if !data[..TAG.len()].eq_ignore_ascii_case(TAG) {
        return RdpCookie::Absent;
    }
    let mut rest = &data[TAG.len()..];
    while let Some((b' ', tail)) = rest.split_first() {
        rest = tail;
    }
    if name.is_empty() {
        match rest.iter().position(|&c| matches!(c, b'=' | b'\r' | b'\n')) {
            None => return RdpCookie::Incomplete,
            Some(i) if rest[i] != b'=' => return RdpCookie::Absent,
            Some(i) => rest = &rest[i + 1..],
        }
    } else {
        if rest.len() <= name.len() {
            return RdpCookie::Incomplete;
        }
        if rest[name.len()] != b'=' || !rest[..name.len()].eq_ignore_ascii_case(name) {
            return RdpCookie::Absent;
        }
        rest = &rest[name.len() + 1..];
    }
    let Some(end) = rest.iter().position(|&c| c == b'\r') else {
        return RdpCookie::Incomplete;
    };
    match rest.get(end + 1) {
        None => RdpCookie::Incomplete,
        Some(b'\n') => RdpCookie::Found(&rest[..end]),
        Some(_) => RdpCookie::Absent,
    }
}

/// Reads an unsigned decimal number the way C's `strtoul` does on a
/// 64-bit host (leading blanks, an optional sign, saturation at the
/// largest value, a `-` negating modulo 2^64); no digits read as 0.
/// Returns the value and the bytes after it.
fn strtoul(s: &[u8]) -> (u64, &[u8]) {
    let start = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .unwrap_or(s.len());
    let mut rest = &s[start..];
    let mut negative = false;
    if let Some((&c @ (b'+' | b'-'), tail)) = rest.split_first() {
        if tail.first().is_some_and(u8::is_ascii_digit) {
            negative = c == b'-';
            rest = tail;
        }
    }
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        // Nothing converted: strtoul points back at the start.
        return (0, s);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &c in &rest[..digits] {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(c - b'0')))
        {
            Some(n) => v = n,
            None => overflow = true,
        }
    }
    let v = if overflow {
        u64::MAX
    } else if negative {
        v.wrapping_neg()
    } else {
        v
    };
    (v, &rest[digits..])
}

/// The server address a `persist rdp-cookie` cookie value designates, or
/// `None` when the value does not have the `<address>.<port>.` form.
pub fn persist_addr(value: &[u8]) -> Option<SocketAddrV4> {
    let (addr, rest) = strtoul(value);
    let rest = rest.strip_prefix(b".")?;
    let (port, rest) = strtoul(rest);
    if rest.first() != Some(&b'.') {
        return None;
    }
    // C truncates to the field sizes: 32 bits of address, 16 of port.
    let ip = Ipv4Addr::from((addr as u32).to_le_bytes());
    let port = (port as u16).swap_bytes();
    Some(SocketAddrV4::new(ip, port))
}

/// The `persist rdp-cookie` value for `addr` (the inverse of
/// [`persist_addr`]), as a terminal server writes it.
pub fn persist_value(addr: SocketAddrV4) -> String {
    let a = u32::from_le_bytes(addr.ip().octets());
    let p = addr.port().swap_bytes();
    format!("{a}.{p}.0000")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TPKT + X.224 Connection Request carrying `token`.
    fn cr(token: &[u8]) -> Vec<u8> {
        let len = (HEADERS + token.len()) as u16;
        let mut v = vec![3, 0];
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&[(len - 5) as u8, 0xe0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(token);
        v
    }

    #[test]
    fn named_cookie_any_case() {
        let b = cr(b"Cookie: mstshash=alice\r\n\x01\x00\x08\x00\x03\x00\x00\x00");
        assert_eq!(cookie(&b, b"mstshash"), RdpCookie::Found(b"alice"));
        assert_eq!(cookie(&b, b"MSTSHash"), RdpCookie::Found(b"alice"));
        assert_eq!(cookie(&b, b"msts"), RdpCookie::Absent);
        assert_eq!(cookie(&b, b""), RdpCookie::Found(b"alice"));
        let b = cr(b"cOOKIE:mstshash=bob\r\n");
        assert_eq!(cookie(&b, b"mstshash"), RdpCookie::Found(b"bob"));
        let b = cr(b"Cookie:    msts=1.2.0000\r\n");
        assert_eq!(cookie(&b, b"msts"), RdpCookie::Found(b"1.2.0000"));
    }

    #[test]
    fn empty_values_and_malformed_ends() {
        assert_eq!(
            cookie(&cr(b"Cookie: mstshash=\r\n"), b"mstshash"),
            RdpCookie::Found(b"")
        );
        assert_eq!(
            cookie(&cr(b"Cookie: mstshash=a\rb\r\n"), b"mstshash"),
            RdpCookie::Absent
        );
        assert_eq!(
            cookie(&cr(b"Cookie: mstshash\r\n=a\r\n"), b""),
            RdpCookie::Absent
        );
        assert_eq!(
            cookie(&cr(b"Cookies mstshash=a\r\n"), b""),
            RdpCookie::Absent
        );
    }

    #[test]
    fn short_buffers_are_incomplete() {
        let full = cr(b"Cookie: mstshash=alice\r\n");
        for n in 0..full.len() {
            assert_eq!(
                cookie(&full[..n], b"mstshash"),
                RdpCookie::Incomplete,
                "{n} bytes"
            );
        }
        assert_eq!(cookie(&full, b"mstshash"), RdpCookie::Found(b"alice"));
        // A wrong tag is known as soon as 8 bytes follow the headers.
        assert_eq!(cookie(&cr(b"Cookiez:"), b""), RdpCookie::Absent);
        assert_eq!(cookie(&cr(b"Cookiez"), b""), RdpCookie::Incomplete);
    }

    #[test]
    fn persistence_cookie_decodes_little_endian_fields() {
        // 172.16.248.216:3389 (values computed independently with Python's
        // struct.unpack("<I", ...) and ("<H", pack(">H", 3389))).
        let a = persist_addr(b"3640135852.15629.0000").unwrap();
        assert_eq!(a, "172.16.248.216:3389".parse().unwrap());
        assert_eq!(persist_value(a), "3640135852.15629.0000");
        let lo: SocketAddrV4 = "127.0.0.2:40001".parse().unwrap();
        assert_eq!(persist_addr(persist_value(lo).as_bytes()), Some(lo));
        assert_eq!(persist_addr(b"16777343.15629"), None);
        assert_eq!(persist_addr(b"abc.15629.0"), None);
        // strtoul reads nothing as 0, truncates and wraps.
        assert_eq!(persist_addr(b".0."), Some("0.0.0.0:0".parse().unwrap()));
        assert_eq!(
            persist_addr(b"4294967297.65536."),
            Some("1.0.0.0:0".parse().unwrap())
        );
        assert_eq!(
            persist_addr(b"99999999999999999999999.1."),
            Some(SocketAddrV4::new(Ipv4Addr::BROADCAST, 256))
        );
    }

    struct Buf(&'static [u8], bool);

    impl crate::txn::Txn for Buf {
        fn payload(&self) -> Option<&[u8]> {
            Some(self.0)
        }
        fn payload_final(&self) -> bool {
            self.1
        }
    }

    /// The fetches wait while the buffer is too short, give the value or
    /// a count once known, and nothing once final.
    #[test]
    fn fetches_wait_then_answer() {
        use crate::fetch::{Fetch, Wait};
        use crate::sample::Sample;
        let env = crate::Env::default();
        let f = |n: &str, a: &[&str]| {
            let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            Fetch::parse(n, &a, &env).unwrap()
        };
        let (val, cnt) = (f("rdp_cookie", &["MSTSHASH"]), f("req.rdp_cookie_cnt", &[]));
        let full: &'static [u8] =
            b"\x03\x00\x00\x23\x1e\xe0\x00\x00\x00\x00\x00Cookie: mstshash=alice\r\n";
        let short = &full[..full.len() - 1];
        assert_eq!(val.one(&Buf(short, false)).err(), Some(Wait));
        assert_eq!(cnt.one(&Buf(short, false)).err(), Some(Wait));
        assert!(matches!(val.one(&Buf(short, true)), Ok(None)));
        assert!(matches!(cnt.one(&Buf(short, true)), Ok(None)));
        let b = Buf(full, false);
        let v = val.one(&b).unwrap().unwrap();
        assert_eq!(v.as_bytes(), Some(&b"alice"[..]));
        assert!(matches!(
            cnt.one(&Buf(full, false)),
            Ok(Some(Sample::Sint(1)))
        ));
        let other: &'static [u8] =
            b"\x03\x00\x00\x13\x0e\xe0\x00\x00\x00\x00\x00GET / HTTP/1.0\r\n";
        assert!(matches!(val.one(&Buf(other, false)), Ok(None)));
        assert!(matches!(
            cnt.one(&Buf(other, false)),
            Ok(Some(Sample::Sint(0)))
        ));
        let named = f("req.rdp_cookie_cnt", &["msts"]);
        assert!(matches!(
            named.one(&Buf(full, false)),
            Ok(Some(Sample::Sint(0)))
        ));
    }
}
