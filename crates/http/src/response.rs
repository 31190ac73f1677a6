//! Response head parsing ([`parse_response`]): status validation and
//! message-body length rules of RFC 9112 §6.3 from the proxy's side.

use crate::framing::{self, skip_leading_empty_lines, Te};
use crate::request::syntax_error;
use crate::{BodyKind, HttpError, ResponseHead, MAX_HEADERS, RESPONSE_REWRITE_HEADERS};

/// Parses a response head. `req_is_head` tells whether the request was
/// HEAD, which decides framing. Errors carry status 502.
///
/// Framing: responses to HEAD, 1xx, 204 and 304 have no body; otherwise a
/// final `chunked` coding gives [`BodyKind::Chunked`], another final coding
/// [`BodyKind::CloseDelimited`], a Content-Length [`BodyKind::Length`], and
/// nothing at all [`BodyKind::CloseDelimited`]. Rejected (502) as ambiguous:
/// Transfer-Encoding together with Content-Length, differing
/// Content-Length values, `chunked` twice, and Transfer-Encoding in an
/// HTTP/1.0 response (RFC 9112 §6.1 calls that framing faulty). These are
/// checked even when the response has no body (HEAD, 204, 304).
///
/// `keep_alive` is false for `Connection: close`, for HTTP/1.0 without
/// `keep-alive`, and whenever the body is close-delimited.
///
/// At most `MAX_HEADERS - RESPONSE_REWRITE_HEADERS` header lines are
/// accepted, so that the head [`crate::write_response_head`] makes of it
/// stays within [`MAX_HEADERS`].
pub fn parse_response(
    buf: &[u8],
    req_is_head: bool,
    max_head: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    parse_response_with_limit(
        buf,
        req_is_head,
        max_head,
        MAX_HEADERS - RESPONSE_REWRITE_HEADERS,
    )
}

/// [`parse_response`] with another limit on the number of header lines
/// (capped at [`MAX_HEADERS`]); with `MAX_HEADERS` it accepts what the
/// proxy forwards.
pub fn parse_response_with_limit(
    buf: &[u8],
    req_is_head: bool,
    max_head: usize,
    max_headers: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    parse_resp(buf, req_is_head, max_head, max_headers, false)
}

/// The parser for `option accept-invalid-http-response`: repairs obs-fold
/// and NUL bytes in place ([`crate::unfold_head`]), then parses as
/// [`parse_response_lenient`].
pub fn parse_response_relaxed(
    buf: &mut [u8],
    req_is_head: bool,
    max_head: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    crate::lenient::unfold_head(buf, max_head);
    parse_response_lenient(buf, req_is_head, max_head)
}

/// [`parse_response`] accepting, as `option accept-invalid-http-response`:
/// any byte but whitespace in header names (what HAProxy's option
/// relaxes), control characters (not NUL, CR or LF) in header values,
/// Transfer-Encoding in HTTP/1.0 and Transfer-Encoding with
/// Content-Length (what HAProxy accepts even without it). The latter is
/// framed as chunked and its Content-Length is not forwarded
/// ([`ResponseHead::drop_content_length`]); either repair makes
/// `keep_alive` false. Obs-fold is still an error here: repair it first
/// ([`parse_response_relaxed`]).
pub fn parse_response_lenient(
    buf: &[u8],
    req_is_head: bool,
    max_head: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    parse_resp(
        buf,
        req_is_head,
        max_head,
        MAX_HEADERS - RESPONSE_REWRITE_HEADERS,
        true,
    )
}

fn parse_resp(
    buf: &[u8],
    req_is_head: bool,
    max_head: usize,
    max_headers: usize,
    lenient: bool,
) -> Result<Option<ResponseHead>, HttpError> {
    let view = &buf[..buf.len().min(max_head)];
    let full = buf.len() >= max_head;
    let go = |base: &[u8]| finish(base, full, req_is_head, max_headers, lenient);
    match go(view) {
        Err(e) if lenient && crate::request::maskable(&e) => crate::lenient::with_masked(view, go),
        r => r,
    }
}

/// Tokenises `base` (received bytes or their masked copy) and applies the
/// framing rules.
fn finish(
    base: &[u8],
    full: bool,
    req_is_head: bool,
    max_headers: usize,
    lenient: bool,
) -> Result<Option<ResponseHead>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers[..max_headers.min(MAX_HEADERS)]);
    let head_len = match resp.parse(base) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if full {
                return Err(HttpError::new(502, "response head too large", base.len()));
            }
            return Ok(None);
        }
        Err(e) => return Err(syntax_error(e, base, 502)),
    };
    let (Some(status), Some(minor)) = (resp.code, resp.version) else {
        return Err(HttpError::new(502, "incomplete status line", 0));
    };
    if !(100..=599).contains(&status) {
        return Err(HttpError::new(502, "invalid status code", 0));
    }
    let a = framing::analyze(base, resp.headers)
        .map_err(|e| HttpError::new(502, e.reason, e.offset))?;
    let mut repaired = false;
    if a.te.is_some() {
        if a.content_length.is_some() {
            if !lenient {
                return Err(HttpError::new(
                    502,
                    "both Transfer-Encoding and Content-Length",
                    a.te_offset,
                ));
            }
            repaired = true;
        }
        if minor == 0 {
            if !lenient {
                return Err(HttpError::new(
                    502,
                    "Transfer-Encoding in HTTP/1.0 response",
                    a.te_offset,
                ));
            }
            repaired = true;
        }
    }
    let no_body = req_is_head || status < 200 || status == 204 || status == 304;
    let body = if no_body {
        BodyKind::None
    } else {
        match (a.te, a.content_length) {
            (Some(Te::Chunked), _) => BodyKind::Chunked,
            (Some(Te::NotChunkedFinal), _) => BodyKind::CloseDelimited,
            (None, Some(n)) => BodyKind::Length(n),
            (None, None) => BodyKind::CloseDelimited,
        }
    };
    let keep_alive = !repaired
        && !a.conn.close
        && (minor == 1 || a.conn.keep_alive)
        && body != BodyKind::CloseDelimited;
    Ok(Some(ResponseHead {
        head_len,
        status,
        reason: reason_range(base, head_len),
        minor_version: minor,
        body,
        conn: a.conn,
        keep_alive,
        drop_content_length: a.te.is_some() && a.content_length.is_some(),
    }))
}

/// Where the reason phrase of a status line that httparse accepted lies:
/// `HTTP/1.x SP 3DIGIT` is 12 bytes, then either SP and the reason, or the
/// line end (httparse, without its lenient options, allows exactly one
/// space between the parts). Computed from positions because httparse
/// replaces a reason containing obs-text with a static empty string.
fn reason_range(buf: &[u8], head_len: usize) -> (usize, usize) {
    let end = head_len.min(buf.len());
    let start = skip_leading_empty_lines(&buf[..end]);
    let eol = buf[start..end]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(end, |p| start + p);
    let eol = if eol > start && buf[eol - 1] == b'\r' {
        eol - 1
    } else {
        eol
    };
    let code_end = (start + 12).min(eol);
    match buf.get(code_end) {
        Some(b' ') if code_end < eol => (code_end + 1, eol),
        _ => (code_end, code_end),
    }
}
