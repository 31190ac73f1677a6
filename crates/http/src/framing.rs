//! Header-level analysis shared by the request and response parsers:
//! `Content-Length` / `Transfer-Encoding` framing, `Connection` tokens,
//! `Host` counting, plus small byte helpers (list splitting, tokens,
//! case-insensitive comparison) and a raw header-line iterator used by the
//! rewriters.
//!
//! Duplicate `Content-Length` policy (RFC 9112 §6.3 point 5): identical
//! values, whether repeated in several headers or as a comma list
//! (`Content-Length: 5, 5`), are merged into one length; any difference, an
//! empty element or a non-digit is an error. This is HAProxy's behaviour.

use crate::ConnTokens;

/// Optional whitespace (SP / HTAB) trimmed on both sides.
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// RFC 9110 `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        | b'^' | b'_' | b'`' | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// Non-empty sequence of `tchar`.
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// ASCII case-insensitive equality.
pub(crate) fn eq_ic(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Elements of a comma-separated list, OWS-trimmed (empty ones included).
pub(crate) fn list_elems(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',').map(trim_ows)
}

/// Offset of `part` inside `buf` (both must come from the same slice).
pub(crate) fn offset_in(buf: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize)
        .saturating_sub(buf.as_ptr() as usize)
        .min(buf.len())
}

/// Skips the empty lines (CRLF or LF) a client may send before a message,
/// exactly as httparse does. Returns the start of the start-line.
pub(crate) fn skip_leading_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    loop {
        match buf.get(i..) {
            Some([b'\r', b'\n', ..]) => i += 2,
            Some([b'\n', ..]) => i += 1,
            _ => return i,
        }
    }
}

/// Iterates the header lines of a validated head: yields each line without
/// its terminator (CRLF or bare LF), stopping at the empty line or `end`.
pub(crate) struct HeaderLines<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> HeaderLines<'a> {
    /// `first_line_start`: where the start-line begins; it is skipped.
    pub(crate) fn new(buf: &'a [u8], first_line_start: usize, end: usize) -> Self {
        let end = end.min(buf.len());
        let pos = match buf[first_line_start.min(end)..end]
            .iter()
            .position(|&b| b == b'\n')
        {
            Some(p) => first_line_start + p + 1,
            None => end,
        };
        HeaderLines { buf, pos, end }
    }
}

impl<'a> Iterator for HeaderLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.pos >= self.end {
            return None;
        }
        let rest = &self.buf[self.pos..self.end];
        let (line, adv) = match rest.iter().position(|&b| b == b'\n') {
            Some(p) => (&rest[..p], p + 1),
            None => (rest, rest.len()),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.pos = self.end;
            return None;
        }
        self.pos += adv;
        Some(line)
    }
}

/// Splits a raw header line into name and (OWS-trimmed) value.
pub(crate) fn split_header_line(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b':') {
        Some(c) => (&line[..c], trim_ows(&line[c + 1..])),
        None => (line, &[]),
    }
}

/// Outcome of the `Transfer-Encoding` analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Te {
    /// `chunked` is the final (and only once) coding.
    Chunked,
    /// The final coding is something else (possibly an unknown one).
    NotChunkedFinal,
}

/// Framing-related problem; the caller chooses the status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FramingError {
    pub reason: &'static str,
    pub offset: usize,
}

impl FramingError {
    fn bad(reason: &'static str, offset: usize) -> Self {
        FramingError { reason, offset }
    }
}

/// Everything the parsers need from the header list.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    pub content_length: Option<u64>,
    pub te: Option<Te>,
    /// A transfer-coding other than `chunked` was listed (known or not):
    /// the proxy cannot decode it, so a request carrying one is refused.
    pub te_other: bool,
    /// Offset of the first Transfer-Encoding header.
    pub te_offset: usize,
    pub conn: ConnTokens,
    pub host_count: usize,
    pub host_offset: usize,
    pub expect_continue: bool,
    pub upgrade_header: bool,
    /// An `Upgrade` header lists `websocket` (the only upgrade a request
    /// may ask a server for).
    pub upgrade_websocket: bool,
    /// A `TE` header lists `trailers` (kept toward HTTP/2 servers).
    pub te_trailers: bool,
}

/// Parses one `Content-Length` field value into `acc`.
fn merge_content_length(
    value: &[u8],
    acc: &mut Option<u64>,
    offset: usize,
) -> Result<(), FramingError> {
    for elem in list_elems(value) {
        if elem.is_empty() || !elem.iter().all(u8::is_ascii_digit) {
            return Err(FramingError::bad("invalid Content-Length", offset));
        }
        let mut n: u64 = 0;
        for &d in elem {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or(FramingError::bad("Content-Length overflow", offset))?;
        }
        match *acc {
            Some(prev) if prev != n => {
                return Err(FramingError::bad("differing Content-Length values", offset))
            }
            _ => *acc = Some(n),
        }
    }
    Ok(())
}

/// State accumulated over all `Transfer-Encoding` fields.
#[derive(Default)]
struct TeAcc {
    any: bool,
    chunked_count: u32,
    last_chunked: bool,
    other: bool,
}

fn merge_transfer_encoding(
    value: &[u8],
    acc: &mut TeAcc,
    offset: usize,
) -> Result<(), FramingError> {
    for elem in list_elems(value) {
        if elem.is_empty() {
            continue; // RFC 9110 §5.6.1: empty list elements are ignored
        }
        acc.any = true;
        let (name, has_params) = match elem.iter().position(|&b| b == b';') {
            Some(p) => (trim_ows(&elem[..p]), true),
            None => (elem, false),
        };
        if !is_token(name) {
            return Err(FramingError::bad("invalid Transfer-Encoding", offset));
        }
        if eq_ic(name, b"chunked") {
            if has_params {
                return Err(FramingError::bad("parameters on chunked coding", offset));
            }
            acc.chunked_count += 1;
            if acc.chunked_count > 1 {
                return Err(FramingError::bad("chunked applied twice", offset));
            }
            acc.last_chunked = true;
        } else {
            acc.last_chunked = false;
            acc.other = true;
        }
    }
    Ok(())
}

/// Walks the parsed headers once. `buf` is the whole input (for offsets).
pub(crate) fn analyze(
    buf: &[u8],
    headers: &[httparse::Header<'_>],
) -> Result<Analysis, FramingError> {
    let mut a = Analysis::default();
    let mut te = TeAcc::default();
    let mut te_seen = false;
    for h in headers {
        let name = h.name.as_bytes();
        let off = offset_in(buf, name);
        let value = trim_ows(h.value);
        match name.len() {
            14 if eq_ic(name, b"content-length") => {
                merge_content_length(value, &mut a.content_length, off)?;
            }
            17 if eq_ic(name, b"transfer-encoding") => {
                if !te_seen {
                    te_seen = true;
                    a.te_offset = off;
                }
                merge_transfer_encoding(value, &mut te, off)?;
            }
            10 if eq_ic(name, b"connection") => {
                for tok in list_elems(value) {
                    if eq_ic(tok, b"close") {
                        a.conn.close = true;
                    } else if eq_ic(tok, b"keep-alive") {
                        a.conn.keep_alive = true;
                    } else if eq_ic(tok, b"upgrade") {
                        a.conn.upgrade = true;
                    }
                }
            }
            4 if eq_ic(name, b"host") => {
                if a.host_count == 0 {
                    a.host_offset = off;
                }
                a.host_count += 1;
            }
            6 if eq_ic(name, b"expect") && eq_ic(value, b"100-continue") => {
                a.expect_continue = true;
            }
            7 if eq_ic(name, b"upgrade") && !value.is_empty() => {
                a.upgrade_header = true;
                a.upgrade_websocket |= list_elems(value).any(is_websocket);
            }
            2 if eq_ic(name, b"te") => {
                a.te_trailers |= list_elems(value).any(|t| eq_ic(t, b"trailers"));
            }
            _ => {}
        }
    }
    if te_seen {
        if !te.any {
            return Err(FramingError::bad("empty Transfer-Encoding", a.te_offset));
        }
        a.te = Some(if te.last_chunked {
            Te::Chunked
        } else {
            Te::NotChunkedFinal
        });
        a.te_other = te.other;
    }
    Ok(a)
}

/// Is `name` a hop-by-hop header that a proxy must not forward?
/// `keep_upgrade` keeps the Upgrade header; `listed_in_connection` tells
/// whether some Connection header of the same head lists `name` (only
/// called when that matters). Framing headers and Host are never dropped,
/// even when a peer lists them in Connection, and `close` is a connection
/// option, not a header name.
pub(crate) fn is_hop_by_hop(
    name: &[u8],
    keep_upgrade: bool,
    listed_in_connection: impl FnOnce(&[u8]) -> bool,
) -> bool {
    // HTTP2-Settings goes with `Upgrade: h2c`, which never passes.
    const FIXED: &[&[u8]] = &[
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"http2-settings",
    ];
    if FIXED.iter().any(|f| eq_ic(name, f)) {
        return true;
    }
    if eq_ic(name, b"upgrade") {
        return !keep_upgrade;
    }
    const PROTECTED: &[&[u8]] = &[b"content-length", b"transfer-encoding", b"host"];
    if PROTECTED.iter().any(|p| eq_ic(name, p)) || eq_ic(name, b"close") {
        return false;
    }
    listed_in_connection(name)
}

/// `websocket`, or `websocket/<version>`, in an Upgrade list.
fn is_websocket(token: &[u8]) -> bool {
    let proto = token.split(|&b| b == b'/').next().unwrap_or(token);
    eq_ic(trim_ows(proto), b"websocket")
}

/// True when a Connection header value lists a token other than
/// close/keep-alive/upgrade (so per-header lookups are needed).
pub(crate) fn names_other_headers(connection_value: &[u8]) -> bool {
    list_elems(connection_value).any(|t| {
        !t.is_empty() && !eq_ic(t, b"close") && !eq_ic(t, b"keep-alive") && !eq_ic(t, b"upgrade")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_and_list() {
        assert_eq!(trim_ows(b" \t a b\t "), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
        let v: Vec<&[u8]> = list_elems(b" a ,b,, c").collect();
        assert_eq!(v, vec![&b"a"[..], b"b", b"", b"c"]);
    }

    #[test]
    fn content_length_merge() {
        let mut acc = None;
        merge_content_length(b"5, 5", &mut acc, 0).unwrap();
        merge_content_length(b"5", &mut acc, 0).unwrap();
        assert_eq!(acc, Some(5));
        assert!(merge_content_length(b"6", &mut acc, 0).is_err());
        let mut acc = None;
        assert!(merge_content_length(b"", &mut acc, 0).is_err());
        assert!(merge_content_length(b"5,", &mut acc, 0).is_err());
        assert!(merge_content_length(b"+5", &mut acc, 0).is_err());
        assert!(merge_content_length(b"0x5", &mut acc, 0).is_err());
        assert!(merge_content_length(b"99999999999999999999", &mut acc, 0).is_err());
        let mut acc = None;
        merge_content_length(b"18446744073709551615", &mut acc, 0).unwrap();
        assert_eq!(acc, Some(u64::MAX));
    }

    #[test]
    fn header_lines_mixed_terminators() {
        let b = b"GET / HTTP/1.1\r\nA: 1\nB: 2\r\n\r\nbody";
        let v: Vec<&[u8]> = HeaderLines::new(b, 0, b.len() - 4).collect();
        assert_eq!(v, vec![&b"A: 1"[..], b"B: 2"]);
    }
}
