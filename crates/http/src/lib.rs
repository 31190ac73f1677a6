//! HTTP/1.x codec: in-place head parsing, message framing, chunked-body
//! tracking, header rewriting and HAProxy-style error responses.
//!
//! Nothing here allocates per request except into the caller's output
//! buffer; parsing works on the caller's bytes (httparse) and bodies are
//! never copied, only measured, so the proxy forwards them unmodified.
#![forbid(unsafe_code)]

/// Maximum number of headers in one message. Past it: 431 (request) or
/// 502 (response).
pub const MAX_HEADERS: usize = 128;

/// Why a message was rejected. `status` is what the proxy answers the client
/// with (400, 414, 431, 501 for requests; responses use 502).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    /// Short human reason, e.g. "both Transfer-Encoding and Content-Length".
    pub reason: &'static str,
    /// Byte offset in the input where the problem was detected.
    pub offset: usize,
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body at all.
    None,
    /// `Content-Length: n` (n may be 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`; track it with [`ChunkedState`].
    Chunked,
    /// Responses only: body runs until the server closes.
    CloseDelimited,
}

/// Connection-related tokens seen in the `Connection` header(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnTokens {
    pub close: bool,
    pub keep_alive: bool,
    pub upgrade: bool,
}

/// A parsed request head. Offsets point into the buffer given to
/// [`parse_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// Bytes from the start of the buffer to the end of the empty line.
    pub head_len: usize,
    /// Method as an offset range into the buffer.
    pub method: (usize, usize),
    /// Request target (URI) as an offset range into the buffer.
    pub uri: (usize, usize),
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    pub body: BodyKind,
    pub conn: ConnTokens,
    /// `Expect: 100-continue` present.
    pub expect_continue: bool,
    /// Method is HEAD (the response has no body).
    pub is_head: bool,
    /// Method is CONNECT.
    pub is_connect: bool,
    /// An `Upgrade` header is present (and `Connection: upgrade`).
    pub upgrade: bool,
    /// The client wants the connection kept after this request: HTTP/1.1
    /// without `close`, or HTTP/1.0 with `keep-alive`.
    pub keep_alive: bool,
}

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub head_len: usize,
    pub status: u16,
    pub minor_version: u8,
    /// Framing, already taking into account the request method (HEAD),
    /// 1xx, 204 and 304 (no body).
    pub body: BodyKind,
    pub conn: ConnTokens,
    /// The server allows reusing the connection after this response.
    pub keep_alive: bool,
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
pub fn parse_request(buf: &[u8], max_head: usize) -> Result<Option<RequestHead>, HttpError> {
    let _ = (buf, max_head);
    todo!()
}

/// Parses a response head. `req_is_head` tells whether the request was
/// HEAD, which decides framing. Errors carry status 502.
pub fn parse_response(
    buf: &[u8],
    req_is_head: bool,
    max_head: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    let _ = (buf, req_is_head, max_head);
    todo!()
}

/// What the proxy wants in the `Connection` header it emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnHeader {
    /// Emit no Connection header (HTTP/1.1 default keep-alive).
    None,
    /// `Connection: close`.
    Close,
    /// `Connection: keep-alive` (for HTTP/1.0 peers).
    KeepAlive,
    /// `Connection: upgrade` (keep the Upgrade header too).
    Upgrade,
}

/// Options for [`write_request_head`].
#[derive(Debug, Clone, Copy)]
pub struct RequestRewrite<'a> {
    pub conn: ConnHeader,
    /// Add `<name>: <ip>` (option forwardfor). `None` adds nothing.
    pub forwarded_for: Option<(&'a str, std::net::IpAddr)>,
}

/// Writes the request head to send to the server into `out`: the request
/// line with the version forced to HTTP/1.1, every header line copied byte
/// for byte except hop-by-hop ones (Connection, Keep-Alive,
/// Proxy-Connection, TE, Upgrade unless `conn` is `Upgrade`, and every
/// header named in Connection), then the proxy's own headers, then CRLF.
/// Transfer-Encoding and Content-Length are kept: the body is forwarded
/// unchanged.
pub fn write_request_head(
    buf: &[u8],
    head: &RequestHead,
    rw: &RequestRewrite<'_>,
    out: &mut Vec<u8>,
) {
    let _ = (buf, head, rw, out);
    todo!()
}

/// Writes the response head to send to the client into `out`, with the
/// same hop-by-hop handling as [`write_request_head`]. The status line is
/// copied as is, except that the version is forced to HTTP/1.1.
pub fn write_response_head(buf: &[u8], head: &ResponseHead, conn: ConnHeader, out: &mut Vec<u8>) {
    let _ = (buf, head, conn, out);
    todo!()
}

/// Progress reported by [`ChunkedState::feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkProgress {
    /// All input consumed; the body continues.
    NeedMore,
    /// The body (last chunk and trailers included) ends after this many
    /// bytes of the input; the rest belongs to the next message.
    Done(usize),
}

/// Incremental validator for a chunked body. It never copies: the caller
/// forwards the very bytes it fed, up to the end the state reports.
#[derive(Debug, Clone, Default)]
pub struct ChunkedState {
    _private: (),
}

impl ChunkedState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the body. Rejects invalid chunk sizes
    /// (non-hex, overflow, empty), a missing CRLF after chunk data, bare LF
    /// in framing lines, and oversized chunk-size/extension lines, with
    /// status 400.
    pub fn feed(&mut self, data: &[u8]) -> Result<ChunkProgress, HttpError> {
        let _ = data;
        todo!()
    }
}

/// The complete HAProxy-style error response for `status` (400, 403, 408,
/// 413, 414, 421, 425, 429, 431, 500, 501, 502, 503, 504; others map to 500).
/// Each carries `content-length`, `cache-control: no-cache`,
/// `content-type: text/html` and `connection: close`, and HAProxy's HTML
/// body, e.g. `<html><body><h1>503 Service Unavailable</h1>\nNo server is
/// available to handle this request.\n</body></html>\n`.
pub fn error_response(status: u16) -> &'static [u8] {
    let _ = status;
    todo!()
}

/// `HTTP/1.1 100 Continue\r\n\r\n`.
pub const CONTINUE_100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
