//! HTTP/2 header blocks to and from Fairlead's message model
//! ([`fairlead_http::msg::Head`]), with the checks of RFC 9113 §8.2–8.3.
//!
//! Decoding: [`Builder`] receives the decoded fields one by one and writes
//! them straight into a (pooled) `Head`'s arena: pseudo-headers become the
//! method, target, scheme and authority ([`Part`]) or the status, other
//! fields are appended in order. A request with `:authority` and no
//! `host` gets a `host` field with the authority (as HAProxy does), so
//! rules reading `hdr(host)` work unchanged; `host` differing from
//! `:authority` is malformed (RFC 9113 §8.3.1). `cookie` fields are kept
//! as sent (HTTP/2 may split them: an HTTP/1 serialiser joins them with
//! `; `, RFC 9113 §8.2.3).
//!
//! Extended CONNECT (RFC 8441), when the connection advertised
//! SETTINGS_ENABLE_CONNECT_PROTOCOL ([`Builder::allow_protocol`]): a
//! request with `:protocol` (which needs `:method CONNECT`, `:scheme`,
//! `:path` and `:authority`) becomes what an HTTP/1 client would have
//! sent, as HAProxy converts it: method `GET`, target `:path`, and an
//! `upgrade` field with the protocol (a field an HTTP/2 request cannot
//! otherwise carry, so its presence marks the conversion).
//!
//! A message breaking any rule is *malformed*: the stream is reset with
//! PROTOCOL_ERROR. Once an error is recorded, later fields are only
//! counted: the HPACK block is still decoded to the end so that the
//! connection's table stays in step.
//!
//! Encoding: [`encode_request`], [`encode_response`] and
//! [`encode_trailers`] turn a `Head` into fields for the HPACK encoder,
//! leaving out HTTP/1 connection-specific fields.

use fairlead_http::msg::{Head, Part};

use crate::hpack::Encoder;

/// What a header block carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Request,
    Response,
    Trailers,
}

/// Why a header block was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Malformed (RFC 9113 §8.1.1): reset with PROTOCOL_ERROR.
    Malformed(&'static str),
    /// Past the header list size or field count limits.
    TooLarge,
}

const METHOD: u8 = 1;
const SCHEME: u8 = 2;
const AUTHORITY: u8 = 4;
const PATH: u8 = 8;
const STATUS: u8 = 16;
const PROTOCOL: u8 = 32;

/// Fills a `Head` from decoded fields; see the module docs.
#[derive(Debug)]
pub struct Builder<'h> {
    head: &'h mut Head,
    kind: BlockKind,
    max_list_size: usize,
    max_fields: usize,
    list_size: usize,
    fields: usize,
    pseudo: u8,
    regular: bool,
    connect: bool,
    /// `:protocol` is allowed (extended CONNECT).
    protocol_ok: bool,
    /// The parsed `content-length`, if any.
    pub content_length: Option<u64>,
    error: Option<Reject>,
}

/// Connection-specific fields (RFC 9113 §8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// tchar without uppercase letters (RFC 9110 §5.6.2, RFC 9113 §8.2.1).
fn is_name_char(b: u8) -> bool {
    b.is_ascii_lowercase()
        || b.is_ascii_digit()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// RFC 9113 §8.2.1: no NUL, CR or LF; no leading or trailing SP / HTAB.
fn valid_value(v: &[u8]) -> bool {
    let ws = |b: &u8| *b == b' ' || *b == b'\t';
    !v.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n')
        && !v.first().is_some_and(ws)
        && !v.last().is_some_and(ws)
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

impl<'h> Builder<'h> {
    /// Starts filling `head` (cleared) with a block of this kind.
    pub fn new(
        head: &'h mut Head,
        kind: BlockKind,
        max_list_size: usize,
        max_fields: usize,
    ) -> Self {
        if kind != BlockKind::Response {
            head.start_request(b"", b"", 20);
        } else {
            head.clear();
        }
        Builder {
            head,
            kind,
            max_list_size,
            max_fields,
            list_size: 0,
            fields: 0,
            pseudo: 0,
            regular: false,
            connect: false,
            protocol_ok: false,
            content_length: None,
            error: None,
        }
    }

    /// Accepts `:protocol` (extended CONNECT, RFC 8441): for a server
    /// connection that advertised SETTINGS_ENABLE_CONNECT_PROTOCOL.
    pub fn allow_protocol(&mut self) {
        self.protocol_ok = true;
    }

    /// One decoded field.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.list_size += name.len() + value.len() + 32;
        self.fields += 1;
        if self.error.is_some() {
            return;
        }
        if self.list_size > self.max_list_size || self.fields > self.max_fields {
            self.error = Some(Reject::TooLarge);
            return;
        }
        if let Err(e) = self.check(name, value) {
            self.error = Some(Reject::Malformed(e));
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), &'static str> {
        let Some((&first, rest)) = name.split_first() else {
            return Err("empty field name");
        };
        if !valid_value(value) {
            return Err("invalid field value");
        }
        if first == b':' {
            return self.pseudo(rest, value);
        }
        if !name.iter().all(|&b| is_name_char(b)) {
            return Err("invalid field name");
        }
        if self.kind == BlockKind::Response && self.pseudo & STATUS == 0 {
            return Err("missing :status");
        }
        self.regular = true;
        if connection_specific(name) {
            return Err("connection-specific field");
        }
        match name {
            b"te" if !value.eq_ignore_ascii_case(b"trailers") => {
                return Err("te other than trailers")
            }
            b"content-length" => {
                let n = parse_u64(value).ok_or("invalid content-length")?;
                if self.content_length.is_some_and(|c| c != n) {
                    return Err("conflicting content-length");
                }
                self.content_length = Some(n);
            }
            b"host" if self.pseudo & AUTHORITY != 0 => {
                // Already added from :authority; it must be the same.
                if !value.eq_ignore_ascii_case(self.head.view(&[]).authority()) {
                    return Err("host differs from :authority");
                }
                return Ok(());
            }
            _ => {}
        }
        self.head.append_field(name, value);
        Ok(())
    }

    fn pseudo(&mut self, name: &[u8], value: &[u8]) -> Result<(), &'static str> {
        if self.regular {
            return Err("pseudo-header after regular field");
        }
        let (bit, part) = match (self.kind, name) {
            (BlockKind::Request, b"method") => (METHOD, Part::Method),
            (BlockKind::Request, b"scheme") => (SCHEME, Part::Scheme),
            (BlockKind::Request, b"authority") => (AUTHORITY, Part::Authority),
            (BlockKind::Request, b"path") => (PATH, Part::Target),
            (BlockKind::Request, b"protocol") if self.protocol_ok => (PROTOCOL, Part::Method),
            (BlockKind::Response, b"status") => (STATUS, Part::Target),
            _ => return Err("invalid pseudo-header"),
        };
        if self.pseudo & bit != 0 {
            return Err("duplicated pseudo-header");
        }
        self.pseudo |= bit;
        match bit {
            STATUS => {
                let s = (value.len() == 3)
                    .then(|| parse_u64(value))
                    .flatten()
                    .filter(|s| (100..=999).contains(s))
                    .ok_or("invalid :status")?;
                self.head.start_response(s as u16, None, 20);
                return Ok(());
            }
            METHOD => {
                if value.is_empty() || !value.iter().all(|&b| is_name_char(b.to_ascii_lowercase()))
                {
                    return Err("invalid :method");
                }
                self.connect = value == b"CONNECT";
            }
            PATH if value.is_empty() => return Err("empty :path"),
            PROTOCOL => {
                if value.is_empty() || !value.iter().all(|&b| b > b' ' && b != 0x7f) {
                    return Err("invalid :protocol");
                }
                self.head.append_field(b"upgrade", value);
                return Ok(());
            }
            _ => {}
        }
        if value.iter().any(|&b| b <= b' ' || b == 0x7f) && bit != AUTHORITY {
            return Err("invalid pseudo-header value");
        }
        self.head.set_part(part, value);
        if bit == AUTHORITY {
            // The target of CONNECT, until a :path replaces it; and the
            // `host` field HTTP/1 rules read.
            if self.pseudo & PATH == 0 {
                self.head.set_part(Part::Target, value);
            }
            self.head.append_field(b"host", value);
        }
        Ok(())
    }

    /// Ends the block: the final checks. Returns the content length.
    pub fn finish(self) -> Result<Option<u64>, Reject> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let bad = |r| Err(Reject::Malformed(r));
        match self.kind {
            BlockKind::Trailers => {}
            BlockKind::Response => {
                if self.pseudo & STATUS == 0 {
                    return bad("missing :status");
                }
                if self.head.view(&[]).status() == 101 {
                    return bad("101 in HTTP/2");
                }
            }
            BlockKind::Request => return self.finish_request(),
        }
        Ok(self.content_length)
    }

    fn finish_request(self) -> Result<Option<u64>, Reject> {
        let bad = |r| Err(Reject::Malformed(r));
        if self.pseudo & METHOD == 0 {
            return bad("missing :method");
        }
        if self.pseudo & PROTOCOL != 0 {
            if !self.connect {
                return bad(":protocol without CONNECT");
            }
            if self.pseudo != METHOD | SCHEME | AUTHORITY | PATH | PROTOCOL
                || !self.head.view(&[]).target().starts_with(b"/")
            {
                return bad("extended CONNECT needs :scheme, :path and :authority");
            }
            self.head.set_part(Part::Method, b"GET");
            return Ok(self.content_length);
        }
        let v = self.head.view(&[]);
        if self.connect {
            if self.pseudo != METHOD | AUTHORITY {
                return bad("CONNECT needs :authority only");
            }
        } else {
            if self.pseudo & (SCHEME | PATH) != SCHEME | PATH {
                return bad("missing :scheme or :path");
            }
            let p = v.target();
            if !(p.starts_with(b"/") || (p == b"*" && v.method() == b"OPTIONS")) {
                return bad("invalid :path");
            }
        }
        Ok(self.content_length)
    }
}

/// Fields never sent in HTTP/2 (RFC 9113 §8.2.2), `host` (sent as
/// `:authority`) and `http2-settings`.
fn skip_field(name: &[u8], value: &[u8]) -> bool {
    let is = |s: &[u8]| name.eq_ignore_ascii_case(s);
    is(b"connection")
        || is(b"keep-alive")
        || is(b"proxy-connection")
        || is(b"transfer-encoding")
        || is(b"upgrade")
        || is(b"http2-settings")
        || is(b"host")
        || (is(b"te") && !value.eq_ignore_ascii_case(b"trailers"))
}

fn encode_fields(enc: &mut Encoder, head: &Head, buf: &[u8], out: &mut Vec<u8>) {
    for (_, n, v) in head.view(buf).headers() {
        if !skip_field(n, v) {
            enc.field(n, v, true, out);
        }
    }
}

/// Splits an absolute-form target into (scheme, authority, path).
fn split_absolute(t: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let colon = t.iter().position(|&b| b == b':')?;
    let (scheme, rest) = t.split_at(colon);
    if scheme.is_empty()
        || !scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
    {
        return None;
    }
    let rest = rest.strip_prefix(b"://")?;
    let end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    Some((scheme, &rest[..end], &rest[end..]))
}

/// Encodes a request head. The scheme is the head's ([`Part::Scheme`]),
/// else an absolute-form target's, else `http`; the authority is the
/// head's, else an absolute-form target's, else the `Host` field's.
pub fn encode_request(enc: &mut Encoder, head: &Head, buf: &[u8], out: &mut Vec<u8>) {
    let v = head.view(buf);
    enc.begin_block(out);
    let method = v.method();
    enc.field(b":method", method, false, out);
    let target = v.target();
    let abs = split_absolute(target);
    let mut authority = v.authority();
    if authority.is_empty() {
        authority = abs.map(|a| a.1).unwrap_or_default();
    }
    if authority.is_empty() {
        authority = v.get_last(b"host").unwrap_or_default();
    }
    if method == b"CONNECT" {
        let a = if authority.is_empty() {
            target
        } else {
            authority
        };
        enc.field(b":authority", a, false, out);
    } else {
        let mut scheme = v.scheme();
        if scheme.is_empty() {
            scheme = abs.map_or(&b"http"[..], |a| a.0);
        }
        let path = match abs {
            Some((_, _, b"")) => &b"/"[..],
            Some((_, _, p)) => p,
            None => target,
        };
        enc.field(b":scheme", scheme, false, out);
        enc.field(b":path", path, false, out);
        if !authority.is_empty() {
            enc.field(b":authority", authority, false, out);
        }
    }
    encode_fields(enc, head, buf, out);
}

/// Encodes a response head (its status; the reason is not sent).
pub fn encode_response(enc: &mut Encoder, head: &Head, buf: &[u8], out: &mut Vec<u8>) {
    let s = head.view(buf).status();
    let digits = [
        b'0' + (s / 100 % 10) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ];
    enc.begin_block(out);
    enc.field(b":status", &digits, false, out);
    encode_fields(enc, head, buf, out);
}

/// Encodes trailers: the head's fields only.
pub fn encode_trailers(enc: &mut Encoder, head: &Head, buf: &[u8], out: &mut Vec<u8>) {
    enc.begin_block(out);
    encode_fields(enc, head, buf, out);
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
