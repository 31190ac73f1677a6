//! Request head parsing ([`parse_request`]) and request-side helpers.
//!
//! The head is tokenised in place by httparse (no allocation: a stack array
//! of [`MAX_HEADERS`] headers); this module then applies the stricter
//! proxy rules that stop request smuggling: one unambiguous framing, a
//! final `chunked` coding, no Transfer-Encoding in HTTP/1.0, exactly one
//! Host in HTTP/1.1. The lenient variants (`option
//! accept-invalid-http-request`) are described at [`parse_request_lenient`].

use crate::framing::{self, eq_ic, offset_in, skip_leading_empty_lines, Te};
use crate::{BodyKind, HttpError, RequestHead, MAX_HEADERS, REQUEST_REWRITE_HEADERS};

/// The HTTP/2 connection preface start, answered with a specific reason.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// Reasons of the errors found in the start line itself (request line or
/// status line): see [`HttpError::in_start_line`].
pub(crate) const START_LINE_REASONS: &[&str] = &[
    "invalid status code",
    "invalid method or request target",
    "HTTP/2 preface on HTTP/1 port",
    "unsupported HTTP version",
    "incomplete request line",
    "incomplete status line",
    "non-ASCII byte in request target",
    "fragment in request target",
];

/// Reason for an httparse header-name error.
pub(crate) const BAD_NAME: &str = "invalid header name (space before colon or obs-fold)";
/// Reason for an httparse header-value error.
pub(crate) const BAD_VALUE: &str = "invalid byte in header value";

/// Whether the lenient parsers retry `e` on a masked copy.
pub(crate) fn maskable(e: &HttpError) -> bool {
    e.reason == BAD_NAME || e.reason == BAD_VALUE
}

/// Maps an httparse syntax error to our error (status given by the caller).
pub(crate) fn syntax_error(e: httparse::Error, buf: &[u8], status: u16) -> HttpError {
    use httparse::Error as E;
    let start = skip_leading_empty_lines(buf);
    let reason = match e {
        E::HeaderName => BAD_NAME,
        E::HeaderValue => BAD_VALUE,
        E::NewLine => "invalid line terminator (bare CR)",
        E::Status => "invalid status code",
        E::Token => "invalid method or request target",
        E::TooManyHeaders => "too many headers",
        E::Version if buf[start..].starts_with(H2_PREFACE) => "HTTP/2 preface on HTTP/1 port",
        E::Version => "unsupported HTTP version",
    };
    HttpError::new(status, reason, start)
}

/// The error for a head that did not complete within the limit: 414 when
/// even the request line has no end, 431 otherwise.
fn too_large(view: &[u8]) -> HttpError {
    let start = skip_leading_empty_lines(view);
    if view[start..].contains(&b'\n') {
        HttpError::new(431, "request header section too large", view.len())
    } else {
        HttpError::new(414, "request line too long", view.len())
    }
}

/// Parses a request head from the start of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed. Rejects ambiguous framing
/// (Transfer-Encoding with Content-Length, several differing or duplicate
/// Content-Length, Transfer-Encoding other than a final `chunked`,
/// non-numeric lengths), bare CR, invalid tokens, HTTP/2 preface or versions
/// other than 1.0/1.1, each with a 400 (or 422 for a transfer-coding other
/// than `chunked`). `max_head` is the size limit (tune.bufsize minus the
/// rewrite reserve): a head not complete within it gives 414 when the
/// request line alone is too long, 431 otherwise.
///
/// Details of the policy (docs/http.md, "Strictness and HAProxy's
/// switches", compares it with HAProxy's):
/// * identical duplicate Content-Length values (several headers or a comma
///   list) are merged; differing ones are rejected (400);
/// * a final coding other than `chunked` gives 400; any other coding
///   before a final `chunked` (`gzip, chunked`) gives 422, as HAProxy: the
///   proxy cannot decode it, so the request is not forwarded;
/// * HTTP/1.1 without Host, obs-fold, control characters in header values
///   and invalid bytes in header names give 400 (RFC 9112 §3.2, §5.2,
///   RFC 9110 §5.5); [`parse_request_relaxed`] accepts them;
/// * `expect_continue` and `upgrade` are only honoured for HTTP/1.1
///   (RFC 9110 says HTTP/1.0 Expect/Upgrade must be ignored);
/// * the request target must be ASCII and carry no fragment (`#`), as
///   HAProxy without `option accept-invalid-http-request`;
/// * leading empty lines before the request line are skipped (RFC 9112
///   §2.2) and `method` / `uri` offsets account for them;
/// * at most `MAX_HEADERS - REQUEST_REWRITE_HEADERS` header lines (431
///   past it), so that the head [`crate::write_request_head`] makes of it
///   stays within [`MAX_HEADERS`].
pub fn parse_request(buf: &[u8], max_head: usize) -> Result<Option<RequestHead>, HttpError> {
    parse_req(buf, max_head, MAX_HEADERS - REQUEST_REWRITE_HEADERS, false)
}

/// [`parse_request`] with another limit on the number of header lines
/// (capped at [`MAX_HEADERS`]); with `MAX_HEADERS` it accepts what the
/// proxy forwards.
pub fn parse_request_with_limit(
    buf: &[u8],
    max_head: usize,
    max_headers: usize,
) -> Result<Option<RequestHead>, HttpError> {
    parse_req(buf, max_head, max_headers, false)
}

/// The parser for `option accept-invalid-http-request`: first repairs
/// obs-fold and NUL bytes in place ([`crate::unfold_head`]), then parses
/// as [`parse_request_lenient`].
pub fn parse_request_relaxed(
    buf: &mut [u8],
    max_head: usize,
) -> Result<Option<RequestHead>, HttpError> {
    crate::lenient::unfold_head(buf, max_head);
    parse_request_lenient(buf, max_head)
}

/// [`parse_request`] accepting, as `option accept-invalid-http-request`:
/// any byte but whitespace in header names, control characters (not NUL,
/// CR or LF) in header values, non-ASCII bytes and fragments in the
/// target (what HAProxy's option relaxes); and, where HAProxy is lenient
/// even without the option, a missing Host, Transfer-Encoding in
/// HTTP/1.0 and Transfer-Encoding with Content-Length. The last two are
/// made safe: framed as chunked, Content-Length not forwarded
/// ([`RequestHead::drop_content_length`]), and `keep_alive` false so the
/// connection closes after the response (RFC 9112 §6.1). Obs-fold is still
/// an error here: repair it first ([`parse_request_relaxed`]).
pub fn parse_request_lenient(
    buf: &[u8],
    max_head: usize,
) -> Result<Option<RequestHead>, HttpError> {
    parse_req(buf, max_head, MAX_HEADERS - REQUEST_REWRITE_HEADERS, true)
}

/// httparse's verdict on `view`, with offsets relative to `view`.
enum Tokens<'h> {
    Done(httparse::Request<'h, 'h>, usize),
    Partial,
}

fn parse_req(
    buf: &[u8],
    max_head: usize,
    max_headers: usize,
    lenient: bool,
) -> Result<Option<RequestHead>, HttpError> {
    let view = &buf[..buf.len().min(max_head)];
    let full = buf.len() >= max_head;
    match finish(view, full, max_headers, lenient) {
        Err(e) if lenient && maskable(&e) => {
            crate::lenient::with_masked(view, |masked| finish(masked, full, max_headers, true))
        }
        r => r,
    }
}

/// Tokenises `base` (the received bytes, or their masked copy: offsets are
/// the same) and applies the framing policy.
fn finish(
    base: &[u8],
    full: bool,
    max_headers: usize,
    lenient: bool,
) -> Result<Option<RequestHead>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let (req, head_len) = match tokenise(base, &mut headers[..max_headers.min(MAX_HEADERS)])? {
        Tokens::Done(r, n) => (r, n),
        Tokens::Partial if full => return Err(too_large(base)),
        Tokens::Partial => return Ok(None),
    };
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HttpError::new(400, "incomplete request line", 0));
    };
    // httparse lets obs-text (0x80-0xFF) and `#` through in the target;
    // HAProxy rejects them unless `accept-invalid-http-request`.
    if !lenient {
        if let Some(p) = path.bytes().position(|b| b >= 0x80 || b == b'#') {
            let at = offset_in(base, path.as_bytes()) + p;
            let reason = if path.as_bytes()[p] == b'#' {
                "fragment in request target"
            } else {
                "non-ASCII byte in request target"
            };
            return Err(HttpError::new(400, reason, at));
        }
    }
    let method_off = offset_in(base, method.as_bytes());
    let uri_off = offset_in(base, path.as_bytes());
    let a =
        framing::analyze(base, req.headers).map_err(|e| HttpError::new(400, e.reason, e.offset))?;
    let (body, repaired) = request_body(&a, minor, lenient)?;
    if a.host_count > 1 {
        return Err(HttpError::new(400, "several Host headers", a.host_offset));
    }
    if minor == 1 && a.host_count == 0 && !lenient {
        return Err(HttpError::new(400, "missing Host header", method_off));
    }

    let m = method.as_bytes();
    let http11 = minor == 1;
    Ok(Some(RequestHead {
        head_len,
        method: (method_off, method_off + m.len()),
        uri: (uri_off, uri_off + path.len()),
        minor_version: minor,
        body,
        conn: a.conn,
        expect_continue: http11 && a.expect_continue,
        is_head: m == b"HEAD",
        is_connect: m == b"CONNECT",
        // Only WebSocket upgrades pass: `Upgrade: h2c` (and any other
        // protocol) is dropped with the Connection header's `upgrade`, so
        // a server is never switched to HTTP/2 behind the proxy's back
        // (h2c smuggling).
        upgrade: http11 && a.upgrade_websocket && a.conn.upgrade,
        keep_alive: !repaired && !a.conn.close && (http11 || a.conn.keep_alive),
        drop_content_length: repaired && a.content_length.is_some(),
        te_trailers: a.te_trailers,
    }))
}

fn tokenise<'h>(
    base: &'h [u8],
    headers: &'h mut [httparse::Header<'h>],
) -> Result<Tokens<'h>, HttpError> {
    let mut req = httparse::Request::new(headers);
    match req.parse(base) {
        Ok(httparse::Status::Complete(n)) => Ok(Tokens::Done(req, n)),
        Ok(httparse::Status::Partial) => Ok(Tokens::Partial),
        Err(httparse::Error::TooManyHeaders) => Err(HttpError::new(431, "too many headers", 0)),
        Err(e) => Err(syntax_error(e, base, 400)),
    }
}

/// The request's framing; `true` with it when lenient parsing repaired an
/// ambiguous one (the connection must close after this request).
fn request_body(
    a: &framing::Analysis,
    minor: u8,
    lenient: bool,
) -> Result<(BodyKind, bool), HttpError> {
    let Some(te) = a.te else {
        let body = match a.content_length {
            Some(n) => BodyKind::Length(n),
            None => BodyKind::None,
        };
        return Ok((body, false));
    };
    let off = a.te_offset;
    if a.content_length.is_some() && !lenient {
        return Err(HttpError::new(
            400,
            "both Transfer-Encoding and Content-Length",
            off,
        ));
    }
    if minor == 0 && !lenient {
        return Err(HttpError::new(
            400,
            "Transfer-Encoding in HTTP/1.0 request",
            off,
        ));
    }
    if te != Te::Chunked {
        return Err(HttpError::new(
            400,
            "final transfer-coding is not chunked",
            off,
        ));
    }
    if a.te_other {
        return Err(HttpError::new(
            422,
            "transfer-coding other than chunked",
            off,
        ));
    }
    Ok((BodyKind::Chunked, a.content_length.is_some() || minor == 0))
}

/// Whether the request's method is idempotent (RFC 9110 §9.2.2: GET, HEAD,
/// PUT, DELETE, OPTIONS, TRACE), i.e. safe to retry on another server.
/// Methods are case-sensitive.
pub fn method_is_idempotent(buf: &[u8], head: &RequestHead) -> bool {
    const IDEMPOTENT: &[&[u8]] = &[b"GET", b"HEAD", b"PUT", b"DELETE", b"OPTIONS", b"TRACE"];
    let m = buf.get(head.method.0..head.method.1).unwrap_or_default();
    IDEMPOTENT.contains(&m)
}

/// Whether the head (`buf[..head_len]`, request or response) contains a
/// header called `name` (case-insensitive). Used e.g. for
/// `option forwardfor if-none`.
pub fn has_header(buf: &[u8], head_len: usize, name: &str) -> bool {
    let end = head_len.min(buf.len());
    let start = skip_leading_empty_lines(&buf[..end]);
    framing::HeaderLines::new(buf, start, end)
        .any(|line| eq_ic(framing::split_header_line(line).0, name.as_bytes()))
}
