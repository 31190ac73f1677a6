//! The protocol checks' wire format, as HAProxy 2.6 speaks them: the
//! requests of `option mysql-check`, `pgsql-check`, `smtpchk`,
//! `ldap-check`, `ssl-hello-chk` and `spop-check`, and the parsers of the
//! replies that a plain pattern cannot judge (MySQL packets, the LDAP bind
//! response, the SPOP AGENT-HELLO frame).
//!
//! Every parser works on untrusted bytes with checked access only.

use crate::event::CheckStatus;

/// What a reply parser concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// More bytes are needed (and may still come).
    Wait,
    /// The reply is good.
    Pass,
    /// The reply is bad: status, code, description.
    Fail(CheckStatus, Option<u16>, Option<String>),
}

/// The login packet of `option mysql-check user <name>` followed by
/// `COM_QUIT` (sequence 0), so that the server closes cleanly. `post41`
/// selects the MySQL >= 4.1 layout (32-bit capabilities with
/// `CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION`, 16 MiB max packet,
/// utf8 charset and 23 reserved bytes); otherwise the 4.0 layout (16-bit
/// capabilities with `CLIENT_SECURE_CONNECTION`, 3-byte max packet).
pub(crate) fn mysql_request(user: &str, post41: bool) -> Vec<u8> {
    let mut body = Vec::with_capacity(64);
    if post41 {
        body.extend_from_slice(&[0x00, 0x82, 0x00, 0x00]);
        body.extend_from_slice(&[0x00, 0x80, 0x00, 0x01]);
        body.push(0x21);
        body.extend_from_slice(&[0u8; 23]);
    } else {
        body.extend_from_slice(&[0x00, 0x80]);
        body.extend_from_slice(&[0x00, 0x00, 0x01]);
    }
    body.extend_from_slice(user.as_bytes());
    body.push(0);
    body.push(0); // empty auth response
    let len = body.len();
    let mut out = Vec::with_capacity(len + 9);
    out.extend_from_slice(&[
        (len & 0xff) as u8,
        ((len >> 8) & 0xff) as u8,
        ((len >> 16) & 0xff) as u8,
        1,
    ]);
    out.extend_from_slice(&body);
    out.extend_from_slice(&[0x01, 0x00, 0x00, 0x00, 0x01]);
    out
}

/// Checks the MySQL packet that starts at `offset` in `buf`: complete, and
/// not an error packet (0xff: `L7STS` with the error number as code and
/// the rest of the reply as description). `last`: no more bytes will come.
pub(crate) fn mysql_packet(buf: &[u8], offset: usize, last: bool) -> Verdict {
    let truncated = || {
        if last {
            Verdict::Fail(CheckStatus::L7Rsp, None, None)
        } else {
            Verdict::Wait
        }
    };
    let Some(hdr) = buf.get(offset..offset.saturating_add(4)) else {
        return truncated();
    };
    let plen = usize::from(hdr[0]) | usize::from(hdr[1]) << 8 | usize::from(hdr[2]) << 16;
    if buf.len() < offset + 4 + plen {
        return truncated();
    }
    if buf.get(offset + 4) == Some(&0xff) {
        let lo = buf.get(offset + 5).copied().unwrap_or(0);
        let hi = buf.get(offset + 6).copied().unwrap_or(0);
        let desc = buf.get(offset + 7..).unwrap_or_default();
        return Verdict::Fail(
            CheckStatus::L7Sts,
            Some(u16::from_le_bytes([lo, hi])),
            Some(String::from_utf8_lossy(desc).into_owned()),
        );
    }
    Verdict::Pass
}

/// Where the packet after the server's handshake starts (`None` while the
/// handshake's header is incomplete).
pub(crate) fn mysql_after_handshake(buf: &[u8]) -> Option<usize> {
    let h = buf.get(..3)?;
    Some(4 + (usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16))
}

/// The StartupMessage of `option pgsql-check user <name>` (protocol 3.0,
/// only the `user` parameter).
pub(crate) fn pgsql_request(user: &str) -> Vec<u8> {
    let len = u32::try_from(15 + user.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(15 + user.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&[0x00, 0x03, 0x00, 0x00]);
    out.extend_from_slice(b"user\0");
    out.extend_from_slice(user.as_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// The description HAProxy gives a PostgreSQL ErrorResponse: the reply
/// from byte 6 (the first field's value) up to its terminating NUL.
pub(crate) fn pgsql_error_text(buf: &[u8]) -> String {
    let rest = buf.get(6..).unwrap_or_default();
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).into_owned()
}

/// The anonymous LDAPv3 simple bind of `option ldap-check` (message 1).
pub(crate) const LDAP_BIND: [u8; 14] = [
    0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00,
];

/// Judges the reply to [`LDAP_BIND`]: an LDAPMessage with message ID 1
/// carrying a bindResponse whose resultCode is 0. A non-zero result is
/// `L7STS` with the result as code.
pub(crate) fn ldap_bind_response(buf: &[u8], last: bool) -> Verdict {
    let not_ldap = || Verdict::Fail(CheckStatus::L7Rsp, None, Some("Not LDAPv3 protocol".into()));
    let short = || {
        if last {
            Verdict::Fail(CheckStatus::L7Rsp, None, None)
        } else {
            Verdict::Wait
        }
    };
    let Some(&first) = buf.get(1) else {
        return short();
    };
    // The message length: short form, or the long form on 2 or 4 bytes.
    let (nbytes, msglen) = if first & 0x80 != 0 {
        let n = usize::from(first & 0x7f);
        let Some(len) = buf.get(2..2 + n) else {
            return short();
        };
        match n {
            2 | 4 => (n, len.iter().fold(0usize, |a, &b| a << 8 | usize::from(b))),
            _ => return not_ldap(),
        }
    } else {
        (0, usize::from(first))
    };
    if buf.len() < 2usize.saturating_add(nbytes).saturating_add(msglen) {
        return short();
    }
    let mut p = 2 + nbytes;
    if buf.get(p..p + 4) != Some(&[0x02, 0x01, 0x01, 0x61][..]) {
        return not_ldap();
    }
    p += 4;
    // The bindResponse's own length.
    let Some(&blen) = buf.get(p) else {
        return not_ldap();
    };
    p += 1 + if blen & 0x80 != 0 {
        usize::from(blen & 0x7f)
    } else {
        0
    };
    if buf.get(p..p + 2) != Some(&[0x0a, 0x01][..]) {
        return not_ldap();
    }
    match buf.get(p + 2) {
        Some(0) => Verdict::Pass,
        Some(&code) => Verdict::Fail(
            CheckStatus::L7Sts,
            Some(u16::from(code)),
            Some("See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9".into()),
        ),
        None => not_ldap(),
    }
}

/// The SSLv3 ClientHello of `option ssl-hello-chk`: `unix_time` in the
/// random's first 4 bytes, HAProxy's fixed 28 random bytes, 39 common
/// suites, null compression.
pub(crate) fn ssl_hello(unix_time: u32) -> Vec<u8> {
    let mut out = vec![
        0x16, 0x03, 0x00, 0x00, 0x79, 0x01, 0x00, 0x00, 0x75, 0x03, 0x00,
    ];
    out.extend_from_slice(&unix_time.to_be_bytes());
    out.extend_from_slice(b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n");
    out.push(0x00); // no session id
    out.extend_from_slice(&[0x00, 0x4e]);
    for suite in (0x01u16..=0x1b).chain(0x2f..=0x3a) {
        out.extend_from_slice(&suite.to_be_bytes());
    }
    out.extend_from_slice(&[0x01, 0x00]);
    out
}

/// Largest SPOP frame HAProxy announces (its buffer size less 4).
const SPOP_MAX_FRAME: u64 = 16380;
/// Smallest `max-frame-size` an agent may announce.
const SPOP_MIN_FRAME: u64 = 256;
const SPOP_HAPROXY_HELLO: u8 = 1;
const SPOP_AGENT_HELLO: u8 = 101;
const SPOP_AGENT_DISCON: u8 = 102;
const SPOP_FIN: u32 = 1;
const T_BOOL: u8 = 1;
const T_INT32: u8 = 2;
const T_UINT32: u8 = 3;
const T_INT64: u8 = 4;
const T_UINT64: u8 = 5;
const T_IPV4: u8 = 6;
const T_IPV6: u8 = 7;
const T_STR: u8 = 8;
const T_BIN: u8 = 9;
const FL_TRUE: u8 = 0x10;

/// SPOP's variable-length integer.
fn put_varint(mut i: u64, out: &mut Vec<u8>) {
    if i < 240 {
        out.push(i as u8);
        return;
    }
    out.push((i as u8) | 240);
    i = (i - 240) >> 4;
    while i >= 128 {
        out.push((i as u8) | 128);
        i = (i - 128) >> 7;
    }
    out.push(i as u8);
}

/// Reads a varint at `*p`; `None` when truncated or too long.
fn get_varint(buf: &[u8], p: &mut usize) -> Option<u64> {
    let first = *buf.get(*p)?;
    *p += 1;
    let mut i = u64::from(first);
    if i < 240 {
        return Some(i);
    }
    let mut shift = 4u32;
    loop {
        let b = *buf.get(*p)?;
        *p += 1;
        i = i.checked_add(u64::from(b).checked_shl(shift)?)?;
        shift += 7;
        if b < 128 {
            return Some(i);
        }
        if shift > 63 {
            return None;
        }
    }
}

fn put_str(s: &[u8], out: &mut Vec<u8>) {
    put_varint(s.len() as u64, out);
    out.extend_from_slice(s);
}

fn get_str<'a>(buf: &'a [u8], p: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(get_varint(buf, p)?).ok()?;
    let s = buf.get(*p..p.checked_add(len)?)?;
    *p += len;
    Some(s)
}

/// Skips one typed value; `None` when it is malformed.
fn skip_value(buf: &[u8], p: &mut usize, ty: u8) -> Option<()> {
    match ty & 0x0f {
        0 | T_BOOL => {}
        T_INT32 | T_UINT32 | T_INT64 | T_UINT64 => {
            get_varint(buf, p)?;
        }
        T_IPV4 => *p = p.checked_add(4).filter(|&e| e <= buf.len())?,
        T_IPV6 => *p = p.checked_add(16).filter(|&e| e <= buf.len())?,
        T_STR | T_BIN => {
            get_str(buf, p)?;
        }
        _ => return None,
    }
    Some(())
}

/// The HAPROXY-HELLO frame of `option spop-check`, with its 4-byte length:
/// supported version 2.0, HAProxy's max frame size, no capabilities, and
/// `healthcheck` set.
pub(crate) fn spop_hello() -> Vec<u8> {
    let mut f = vec![SPOP_HAPROXY_HELLO];
    f.extend_from_slice(&SPOP_FIN.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    put_str(b"supported-versions", &mut f);
    f.push(T_STR);
    put_str(b"2.0", &mut f);
    put_str(b"max-frame-size", &mut f);
    f.push(T_UINT32);
    put_varint(SPOP_MAX_FRAME, &mut f);
    put_str(b"capabilities", &mut f);
    f.push(T_STR);
    put_str(b"", &mut f);
    put_str(b"healthcheck", &mut f);
    f.push(T_BOOL | FL_TRUE);
    let mut out = (f.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&f);
    out
}

/// SPOP error reasons, by status code, as HAProxy words them.
fn spop_reason(code: u64) -> &'static str {
    match code {
        0 => "normal",
        1 => "I/O error",
        2 => "a timeout occurred",
        3 => "frame is too big",
        4 => "invalid frame received",
        5 => "version value not found",
        6 => "max-frame-size value not found",
        7 => "capabilities value not found",
        8 => "unsupported version",
        9 => "max-frame-size too big or too small",
        10 => "fragmentation not supported",
        11 => "invalid interlaced frames",
        12 => "frame-id not found",
        13 => "resource allocation error",
        _ => "an unknown error occurred",
    }
}

/// A SPOP version string `MAJOR.MINOR` as HAProxy reads it (major*1000 +
/// minor), surrounding spaces allowed.
fn spop_version(s: &[u8]) -> Option<u32> {
    let t = std::str::from_utf8(s).ok()?.trim();
    let (maj, min) = t.split_once('.')?;
    let all_digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(maj) || !all_digits(min) {
        return None;
    }
    let (maj, min): (u32, u32) = (maj.parse().ok()?, min.parse().ok()?);
    (maj > 0 && min <= 999).then(|| maj.saturating_mul(1000).saturating_add(min))
}

/// Judges the agent's reply to [`spop_hello`]: a complete AGENT-HELLO
/// frame announcing version 2.0 and a valid `max-frame-size`; an
/// AGENT-DISCONNECT gives its status code's reason.
pub(crate) fn spop_agent_hello(buf: &[u8], last: bool) -> Verdict {
    let Some(len) = buf.get(..4) else {
        return if last {
            Verdict::Fail(CheckStatus::L7Rsp, None, Some(spop_reason(4).into()))
        } else {
            Verdict::Wait
        };
    };
    let size = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let frame = match buf.get(4..4usize.saturating_add(size)) {
        Some(f) => f,
        None if !last => return Verdict::Wait,
        None => buf.get(4..).unwrap_or_default(),
    };
    let code = match frame.first() {
        Some(&SPOP_AGENT_DISCON) => spop_disconnect_code(frame),
        _ => match spop_hello_code(frame) {
            None => return Verdict::Pass,
            Some(c) => c,
        },
    };
    Verdict::Fail(CheckStatus::L7Rsp, None, Some(spop_reason(code).into()))
}

/// Frame type, FIN flag and empty stream/frame ids; the offset of the
/// first item, or the error code.
fn spop_meta(frame: &[u8], ty: u8) -> Result<usize, u64> {
    if frame.first() != Some(&ty) || frame.len() < 7 {
        return Err(4);
    }
    let flags = u32::from_be_bytes([frame[1], frame[2], frame[3], frame[4]]);
    if flags & SPOP_FIN == 0 {
        return Err(10);
    }
    if frame[5] != 0 || frame[6] != 0 {
        return Err(4);
    }
    Ok(7)
}

/// `None` when the AGENT-HELLO frame is valid, else HAProxy's status code.
fn spop_hello_code(frame: &[u8]) -> Option<u64> {
    let mut p = match spop_meta(frame, SPOP_AGENT_HELLO) {
        Ok(p) => p,
        Err(c) => return Some(c),
    };
    let (mut vsn, mut max_frame) = (None, None);
    while p < frame.len() {
        let key = match get_str(frame, &mut p) {
            Some(k) if !k.is_empty() => k,
            _ => return Some(4),
        };
        let Some(&ty) = frame.get(p) else {
            return Some(4);
        };
        p += 1;
        if key.starts_with(b"version") {
            let Some(s) = (ty & 0x0f == T_STR)
                .then(|| get_str(frame, &mut p))
                .flatten()
            else {
                return Some(4);
            };
            match spop_version(s) {
                Some(2000) => vsn = Some(2000),
                _ => return Some(8),
            }
        } else if key.starts_with(b"max-frame-size") {
            if !matches!(ty & 0x0f, T_INT32 | T_INT64 | T_UINT32 | T_UINT64) {
                return Some(4);
            }
            let Some(sz) = get_varint(frame, &mut p) else {
                return Some(4);
            };
            if !(SPOP_MIN_FRAME..=SPOP_MAX_FRAME).contains(&sz) {
                return Some(9);
            }
            max_frame = Some(sz);
        } else if key.starts_with(b"capabilities") {
            if ty & 0x0f != T_STR || get_str(frame, &mut p).is_none() {
                return Some(4);
            }
        } else if skip_value(frame, &mut p, ty).is_none() {
            return Some(4);
        }
    }
    if vsn.is_none() {
        return Some(5);
    }
    if max_frame.is_none() {
        return Some(6);
    }
    None
}

/// The status code an AGENT-DISCONNECT frame carries (invalid frame: 4;
/// none given: 99, "unknown").
fn spop_disconnect_code(frame: &[u8]) -> u64 {
    let mut p = match spop_meta(frame, SPOP_AGENT_DISCON) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let mut code = 99;
    while p < frame.len() {
        let Some(key) = get_str(frame, &mut p).filter(|k| !k.is_empty()) else {
            return 4;
        };
        let Some(&ty) = frame.get(p) else { return 4 };
        p += 1;
        if key.starts_with(b"status-code") {
            if !matches!(ty & 0x0f, T_INT32 | T_INT64 | T_UINT32 | T_UINT64) {
                return 4;
            }
            match get_varint(frame, &mut p) {
                Some(c) => code = c,
                None => return 4,
            }
        } else if skip_value(frame, &mut p, ty).is_none() {
            return 4;
        }
    }
    code
}

#[cfg(test)]
#[path = "proto_tests.rs"]
mod tests;
