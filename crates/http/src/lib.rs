//! HTTP/1.x codec: in-place head parsing, message framing, chunked-body
//! tracking, header rewriting and HAProxy-style error responses.
//!
//! Nothing here allocates per request except into the caller's output
//! buffer; parsing works on the caller's bytes (httparse) and bodies are
//! never copied, only measured, so the proxy forwards them unmodified.
//! Heads that rules edit are described by [`msg::Head`] (HAProxy's HTX
//! idea): spans into the receive buffer plus an arena for edited bytes,
//! pooled per thread.
#![forbid(unsafe_code)]

mod chunked;
pub mod cookie;
mod errors;
mod framing;
mod lenient;
pub mod msg;
mod request;
mod response;
mod rewrite;

pub use chunked::{MAX_CHUNK_LINE, MAX_TRAILERS};
pub use errors::error_response;
pub use lenient::unfold_head;
pub use msg::{EditError, Head, HeadMut, Part, View};
pub use request::{
    has_header, method_is_idempotent, parse_request, parse_request_lenient, parse_request_relaxed,
    parse_request_with_limit,
};
pub use response::{
    parse_response, parse_response_lenient, parse_response_relaxed, parse_response_with_limit,
};
pub use rewrite::{write_request_head, write_response_head, write_response_head_unchunked};

/// Maximum number of header lines in any head Fairlead emits, and in a head
/// parsed with [`parse_request_with_limit`] / [`parse_response_with_limit`]
/// at this limit (what a next hop with Fairlead's limits accepts).
///
/// Heads the proxy receives are rewritten before being forwarded, and the
/// rewriters add header lines, so [`parse_request`] accepts at most
/// `MAX_HEADERS - REQUEST_REWRITE_HEADERS` (past it: 431) and
/// [`parse_response`] `MAX_HEADERS - RESPONSE_REWRITE_HEADERS` (past it:
/// 502): a forwarded head never has more than `MAX_HEADERS`, as HAProxy
/// reserves `tune.maxrewrite` bytes for the same reason.
pub const MAX_HEADERS: usize = 128;
/// Header lines [`write_request_head`] may add (`Connection` and the
/// forwarded-for header).
pub const REQUEST_REWRITE_HEADERS: usize = 2;
/// Header lines [`write_response_head`] may add (`Connection`).
pub const RESPONSE_REWRITE_HEADERS: usize = 1;

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
    /// A WebSocket upgrade: `Upgrade` lists `websocket` (and
    /// `Connection: upgrade`, HTTP/1.1). Other upgrades (`h2c`) are not
    /// one: their Upgrade header is dropped.
    pub upgrade: bool,
    /// The client wants the connection kept after this request: HTTP/1.1
    /// without `close`, or HTTP/1.0 with `keep-alive`. Always false when
    /// lenient parsing repaired the framing (RFC 9112 §6.1: close after).
    pub keep_alive: bool,
    /// Lenient parsing only (`option accept-invalid-http-request`): the
    /// request had both Transfer-Encoding and Content-Length; it is framed
    /// as chunked and its Content-Length lines are not forwarded
    /// ([`msg::Head::fill_request`] marks them removed).
    pub drop_content_length: bool,
    /// A `TE` header lists `trailers`: HTTP/2 servers get `te: trailers`
    /// (gRPC needs it); toward HTTP/1 servers TE stays hop-by-hop.
    pub te_trailers: bool,
}

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub head_len: usize,
    pub status: u16,
    /// Reason phrase as an offset range into the buffer (after the single
    /// space that follows the status code; empty, at the end of the status
    /// line, when the server sent none). Bytes as received, obs-text
    /// included.
    pub reason: (usize, usize),
    pub minor_version: u8,
    /// Framing, already taking into account the request method (HEAD),
    /// 1xx, 204 and 304 (no body).
    pub body: BodyKind,
    pub conn: ConnTokens,
    /// The server allows reusing the connection after this response.
    pub keep_alive: bool,
    /// Lenient parsing only (`option accept-invalid-http-response`): the
    /// response had both Transfer-Encoding and Content-Length; it is
    /// framed as chunked and its Content-Length lines are not forwarded.
    pub drop_content_length: bool,
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
    st: chunked::St,
    /// Chunk size being parsed, then data bytes left in the chunk.
    size: u64,
    digits: u32,
    line_len: u32,
    trailer_len: u32,
    /// Body bytes consumed so far, all feeds together.
    pos: u64,
    err: Option<HttpError>,
}

/// `HTTP/1.1 100 Continue\r\n\r\n`.
pub const CONTINUE_100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
