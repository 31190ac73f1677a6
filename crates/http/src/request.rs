//! Request head parsing ([`parse_request`]) and request-side helpers.
//!
//! The head is tokenised in place by httparse (no allocation: a stack array
//! of [`MAX_HEADERS`] headers); this module then applies the stricter
//! proxy rules that stop request smuggling: one unambiguous framing, a
//! final `chunked` coding, no Transfer-Encoding in HTTP/1.0, exactly one
//! Host in HTTP/1.1.

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
];

/// Maps an httparse syntax error to our error (status given by the caller).
pub(crate) fn syntax_error(e: httparse::Error, buf: &[u8], status: u16) -> HttpError {
    use httparse::Error as E;
    let start = skip_leading_empty_lines(buf);
    let reason = match e {
        E::HeaderName => "invalid header name (space before colon or obs-fold)",
        E::HeaderValue => "invalid byte in header value",
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
/// other than 1.0/1.1, each with a 400 (or 501 for an unknown
/// transfer-coding). `max_head` is the size limit (tune.bufsize minus the
/// rewrite reserve): a head not complete within it gives 414 when the
/// request line alone is too long, 431 otherwise.
///
/// Details of the policy:
/// * identical duplicate Content-Length values (several headers or a comma
///   list) are merged; differing ones are rejected (400);
/// * `Transfer-Encoding: gzip, chunked` is accepted (body framed as chunked,
///   codings forwarded untouched); an unknown coding before a final
///   `chunked` gives 501; a final coding other than `chunked` gives 400;
/// * `expect_continue` and `upgrade` are only honoured for HTTP/1.1
///   (RFC 9110 says HTTP/1.0 Expect/Upgrade must be ignored);
/// * the request target must be ASCII (as HAProxy without
///   `option accept-invalid-http-request`);
/// * leading empty lines before the request line are skipped (RFC 9112
///   §2.2) and `method` / `uri` offsets account for them;
/// * at most `MAX_HEADERS - REQUEST_REWRITE_HEADERS` header lines (431
///   past it), so that the head [`crate::write_request_head`] makes of it
///   stays within [`MAX_HEADERS`].
pub fn parse_request(buf: &[u8], max_head: usize) -> Result<Option<RequestHead>, HttpError> {
    parse_request_with_limit(buf, max_head, MAX_HEADERS - REQUEST_REWRITE_HEADERS)
}

/// [`parse_request`] with another limit on the number of header lines
/// (capped at [`MAX_HEADERS`]); with `MAX_HEADERS` it accepts what the
/// proxy forwards.
pub fn parse_request_with_limit(
    buf: &[u8],
    max_head: usize,
    max_headers: usize,
) -> Result<Option<RequestHead>, HttpError> {
    let view = &buf[..buf.len().min(max_head)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers[..max_headers.min(MAX_HEADERS)]);
    let head_len = match req.parse(view) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= max_head {
                return Err(too_large(view));
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::new(431, "too many headers", 0));
        }
        Err(e) => return Err(syntax_error(e, view, 400)),
    };
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HttpError::new(400, "incomplete request line", 0));
    };
    // httparse lets obs-text (0x80-0xFF) through in the target; HAProxy
    // rejects non-ASCII URIs unless `accept-invalid-http-request`.
    if let Some(p) = path.bytes().position(|b| b >= 0x80) {
        let at = offset_in(buf, path.as_bytes()) + p;
        return Err(HttpError::new(400, "non-ASCII byte in request target", at));
    }
    let method_off = offset_in(buf, method.as_bytes());
    let uri_off = offset_in(buf, path.as_bytes());
    let a =
        framing::analyze(buf, req.headers).map_err(|e| HttpError::new(400, e.reason, e.offset))?;

    let body = match a.te {
        Some(te) => {
            let off = a.te_offset;
            if a.content_length.is_some() {
                return Err(HttpError::new(
                    400,
                    "both Transfer-Encoding and Content-Length",
                    off,
                ));
            }
            if minor == 0 {
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
            if a.te_unknown {
                return Err(HttpError::new(501, "unknown transfer-coding", off));
            }
            BodyKind::Chunked
        }
        None => match a.content_length {
            Some(n) => BodyKind::Length(n),
            None => BodyKind::None,
        },
    };
    if a.host_count > 1 {
        return Err(HttpError::new(400, "several Host headers", a.host_offset));
    }
    if minor == 1 && a.host_count == 0 {
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
        upgrade: http11 && a.upgrade_header && a.conn.upgrade,
        keep_alive: !a.conn.close && (http11 || a.conn.keep_alive),
    }))
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
