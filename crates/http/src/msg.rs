//! A protocol-neutral, editable message head ([`Head`]): HAProxy's HTX idea
//! without copying the received text.
//!
//! A `Head` describes a request or response head whose bytes mostly stay in
//! the receive buffer they were parsed from: the start-line parts (method,
//! target, status, reason, version) and an ordered list of header fields
//! are *spans*, each either a range into that buffer or a range into the
//! head's own byte arena, which holds only what rules edited or added.
//!
//! * A field that was never touched keeps the range of its whole received
//!   line, so the HTTP/1 serialiser copies it byte for byte (spacing, case
//!   and all), exactly as [`crate::write_request_head`] always did.
//! * Editing a field writes the new bytes into the arena; removing one only
//!   marks it removed (nothing shifts: field *slots* stay valid).
//! * The receive buffer is not stored: every reading or editing call gets it
//!   again, through the [`View`] (`head.view(buf)`, read-only, `Copy`) and
//!   [`HeadMut`] (`head.edit(buf)`, reads and edits) wrappers. `buf` must
//!   hold the same bytes, at the same offsets, as when the head was filled:
//!   use the head before the buffer is consumed or compacted. A wrong
//!   buffer never panics, the affected parts just read as empty.
//!
//! Building is one walk over the header lines ([`Head::fill_request`],
//! [`Head::fill_response`]) into vectors that keep their capacity: with
//! the per-thread pool ([`take`] / [`give`]) a steady stream of requests
//! allocates nothing. Heads that do not come from HTTP/1 text (HTTP/2, local
//! replies) start with [`Head::start_request`] / [`Head::start_response`],
//! every part then lives in the arena.
//!
//! Framing stays the parser's: the proxy frames bodies from the parsed
//! [`crate::RequestHead`] / [`crate::ResponseHead`], so edits that would
//! change framing are refused ([`EditError::Protected`],
//! [`EditError::ChangesFraming`]); see [`is_protected`].

mod edit;
mod h1;
#[cfg(test)]
mod tests;
mod view;

use std::cell::RefCell;

use crate::framing::{offset_in, skip_leading_empty_lines, trim_ows, HeaderLines};
use crate::{RequestHead, ResponseHead, MAX_HEADERS};

pub use edit::{EditError, HeadMut};
pub use view::{ListValues, View};

/// Where one piece of text lives: `start..end` in the receive buffer, or in
/// the head's arena.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
    arena: bool,
}

/// Offsets are stored as `u32` (heads are at most a few tens of KiB); an
/// offset past that reads as empty instead of wrapping.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Span {
    fn buf(start: usize, end: usize) -> Span {
        Span {
            start: to_u32(start),
            end: to_u32(end.max(start)),
            arena: false,
        }
    }

    fn arena(start: usize, end: usize) -> Span {
        Span {
            arena: true,
            ..Span::buf(start, end)
        }
    }

    fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// The part `from..to` of this span (offsets relative to its start).
    fn sub(self, from: usize, to: usize) -> Span {
        let s = self.start as usize;
        Span {
            start: to_u32(s + from),
            end: to_u32(s + to.max(from)),
            arena: self.arena,
        }
    }
}

/// One header field.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Field {
    name: Span,
    value: Span,
    /// End of the received line (terminator excluded) when `raw`: the line
    /// is `buf[name.start..line_end]`.
    line_end: u32,
    /// Unmodified received line: serialised byte for byte.
    raw: bool,
    removed: bool,
}

/// Request or response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Request,
    Response,
}

/// A part of a head that [`Head::set_part`] sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The method (HTTP/2 `:method`).
    Method,
    /// The request-target (HTTP/2 `:path`, or `:authority` for CONNECT).
    Target,
    /// HTTP/2 `:scheme`.
    Scheme,
    /// HTTP/2 `:authority`.
    Authority,
}

/// An editable request or response head; see the [module](self) docs.
#[derive(Debug, Clone, Default)]
pub struct Head {
    kind: Kind,
    method: Span,
    target: Span,
    /// HTTP/2 `:scheme` and `:authority` (empty for HTTP/1 heads).
    scheme: Span,
    authority: Span,
    /// 10, 11 or 20 (HTTP/1.0, HTTP/1.1, HTTP/2).
    version: u8,
    status: u16,
    reason: Span,
    /// What follows `HTTP/1.x` on the status line (` 200 OK`), as received
    /// or as rewritten by `set_status`.
    status_tail: Span,
    fields: Vec<Field>,
    /// Fields not marked removed.
    live: usize,
    arena: Vec<u8>,
    /// Bytes of the received head: a size hint for the serialiser.
    head_len: usize,
}

impl Head {
    /// A head describing `buf`'s parsed request (allocates; prefer a pooled
    /// head and [`Head::fill_request`]).
    pub fn from_request(buf: &[u8], h: &RequestHead) -> Head {
        let mut head = Head::default();
        head.fill_request(buf, h);
        head
    }

    /// A head describing `buf`'s parsed response (allocates; prefer a pooled
    /// head and [`Head::fill_response`]).
    pub fn from_response(buf: &[u8], h: &ResponseHead) -> Head {
        let mut head = Head::default();
        head.fill_response(buf, h);
        head
    }

    /// Forgets everything, keeping the vectors' capacity.
    pub fn clear(&mut self) {
        let mut fields = std::mem::take(&mut self.fields);
        let mut arena = std::mem::take(&mut self.arena);
        fields.clear();
        arena.clear();
        *self = Head {
            fields,
            arena,
            ..Head::default()
        };
    }

    /// Describes the request parsed by [`crate::parse_request`] from `buf`,
    /// reusing this head's vectors: one walk over the header lines.
    pub fn fill_request(&mut self, buf: &[u8], h: &RequestHead) {
        self.clear();
        self.kind = Kind::Request;
        self.method = Span::buf(h.method.0, h.method.1);
        self.target = Span::buf(h.uri.0, h.uri.1);
        self.version = 10 + h.minor_version.min(1);
        let end = h.head_len.min(buf.len());
        self.head_len = end;
        self.fill_fields(buf, h.uri.1.min(end), end);
        if h.drop_content_length {
            self.remove_content_length(buf);
        }
    }

    /// Describes the response parsed by [`crate::parse_response`] from
    /// `buf`, reusing this head's vectors.
    pub fn fill_response(&mut self, buf: &[u8], h: &ResponseHead) {
        self.clear();
        self.kind = Kind::Response;
        self.status = h.status;
        self.version = 10 + h.minor_version.min(1);
        let end = h.head_len.min(buf.len());
        self.head_len = end;
        let start = skip_leading_empty_lines(&buf[..end]);
        self.reason = Span::buf(h.reason.0, h.reason.1);
        // `HTTP/1.x` is 8 bytes; the tail runs to the end of the line.
        self.status_tail = Span::buf((start + 8).min(h.reason.1), h.reason.1);
        self.fill_fields(buf, start, end);
        if h.drop_content_length {
            self.remove_content_length(buf);
        }
    }

    /// Marks the Content-Length fields removed: the parser framed the
    /// message by its Transfer-Encoding (lenient parsing of both).
    fn remove_content_length(&mut self, buf: &[u8]) {
        for i in 0..self.fields.len() {
            let name = self.fields[i].name;
            if !self.fields[i].removed
                && self
                    .bytes(buf, name)
                    .eq_ignore_ascii_case(b"content-length")
            {
                self.fields[i].removed = true;
                self.live -= 1;
            }
        }
    }

    /// Starts a request head that does not come from HTTP/1 text: every
    /// part goes to the arena. `version`: 10, 11 or 20. Add fields with
    /// [`Head::edit`] and an empty buffer.
    pub fn start_request(&mut self, method: &[u8], target: &[u8], version: u8) {
        self.clear();
        self.kind = Kind::Request;
        self.version = version;
        self.method = self.push(&[method]);
        self.target = self.push(&[target]);
    }

    /// Starts a response head that does not come from HTTP/1 text; with no
    /// reason, HAProxy's default one for the status ([`reason_phrase`]).
    pub fn start_response(&mut self, status: u16, reason: Option<&[u8]>, version: u8) {
        self.clear();
        self.kind = Kind::Response;
        self.version = version;
        self.write_status(status, reason);
    }

    /// For protocol conversions (a tunnel's `101` answered as HTTP/2's
    /// `200`): sets the status, with HAProxy's default reason, without
    /// the rule layer's framing check of [`HeadMut::set_status`].
    pub fn set_status_for_codec(&mut self, status: u16) {
        self.write_status(status, None);
    }

    /// For codecs building a head from HTTP/2 (`fairlead-h2`): sets one
    /// start-line part or pseudo-header without the rule-layer checks of
    /// [`HeadMut`] (the codec validates on its own). The bytes go to the
    /// arena.
    pub fn set_part(&mut self, part: Part, value: &[u8]) {
        let span = self.push(&[value]);
        match part {
            Part::Method => self.method = span,
            Part::Target => self.target = span,
            Part::Scheme => self.scheme = span,
            Part::Authority => self.authority = span,
        }
    }

    /// For codecs building a head from HTTP/2: appends a header field
    /// without the rule-layer checks of [`HeadMut::add_header`] (protected
    /// names such as `content-length` are accepted, and there is no
    /// field-count limit: the codec applies its own). Bytes go to the arena.
    pub fn append_field(&mut self, name: &[u8], value: &[u8]) {
        let name = self.push(&[name]);
        let value = self.push(&[value]);
        self.fields.push(Field {
            name,
            value,
            ..Field::default()
        });
        self.live += 1;
    }

    /// Read-only access with the buffer the head was filled from.
    pub fn view<'a>(&'a self, buf: &'a [u8]) -> View<'a> {
        View::new(self, buf)
    }

    /// Reading and editing access with the buffer the head was filled from.
    pub fn edit<'a>(&'a mut self, buf: &'a [u8]) -> HeadMut<'a> {
        HeadMut::new(self, buf)
    }

    /// Request or response.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Bytes the arena holds (edited and added text).
    pub fn arena_len(&self) -> usize {
        self.arena.len()
    }

    /// (field slots, arena bytes) this head can hold without allocating.
    pub fn capacity(&self) -> (usize, usize) {
        (self.fields.capacity(), self.arena.capacity())
    }

    /// One entry per received header line, spans into `buf`.
    fn fill_fields(&mut self, buf: &[u8], start: usize, end: usize) {
        for line in HeaderLines::new(buf, start, end) {
            let off = offset_in(buf, line);
            let line_end = off + line.len();
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(c) => {
                    let raw = &line[c + 1..];
                    let v = trim_ows(raw);
                    let lead = raw.len() - trim_ows_start(raw).len();
                    let vs = off + c + 1 + lead;
                    (Span::buf(off, off + c), Span::buf(vs, vs + v.len()))
                }
                None => (Span::buf(off, line_end), Span::buf(line_end, line_end)),
            };
            self.fields.push(Field {
                name,
                value,
                line_end: to_u32(line_end),
                raw: true,
                removed: false,
            });
        }
        self.live = self.fields.len();
    }

    /// The bytes of `s`.
    fn bytes<'a>(&'a self, buf: &'a [u8], s: Span) -> &'a [u8] {
        let src: &[u8] = if s.arena { &self.arena } else { buf };
        src.get(s.start as usize..s.end as usize)
            .unwrap_or_default()
    }

    /// Appends the concatenation of `parts` to the arena.
    fn push(&mut self, parts: &[&[u8]]) -> Span {
        let start = self.arena.len();
        for p in parts {
            self.arena.extend_from_slice(p);
        }
        Span::arena(start, self.arena.len())
    }

    /// Appends the bytes of `s` (from `buf` or from the arena itself).
    fn push_span(&mut self, buf: &[u8], s: Span) {
        if s.arena {
            let r = s.start as usize..s.end as usize;
            if r.end <= self.arena.len() {
                self.arena.extend_from_within(r);
            }
        } else if let Some(b) = buf.get(s.start as usize..s.end as usize) {
            self.arena.extend_from_slice(b);
        }
    }

    /// Writes ` <status> <reason>` into the arena as the new status.
    fn write_status(&mut self, status: u16, reason: Option<&[u8]>) {
        let reason = reason.unwrap_or(reason_phrase(status).as_bytes());
        let digits = [
            b'0' + (status / 100 % 10) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        self.status = status;
        self.status_tail = self.push(&[b" ", &digits, b" ", reason]);
        let end = self.status_tail.end as usize;
        self.reason = Span::arena(end - reason.len(), end);
    }

    /// Live fields with their slot numbers.
    fn live_fields(&self) -> impl Iterator<Item = (usize, &Field)> + '_ {
        self.fields.iter().enumerate().filter(|(_, f)| !f.removed)
    }
}

/// Leading SP / HTAB removed.
fn trim_ows_start(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}

/// Whether header actions (`add-header`, `set-header`, `del-header`,
/// `replace-header`, `replace-value`) must refuse this header name:
/// `Content-Length` and `Transfer-Encoding` frame the body, and the proxy
/// forwards the body by the framing it parsed, so editing them would make
/// the next hop read the body differently (request smuggling / response
/// desynchronisation). HAProxy 2.6 lets such rules through and re-derives
/// the output framing from the edited headers; Fairlead refuses them,
/// which the rule layer reports at configuration time. [`HeadMut`]
/// enforces it again at run time ([`EditError::Protected`]).
pub fn is_protected(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"transfer-encoding")
}

/// HAProxy's default reason phrase for a status (`http_get_reason`), used
/// by `set-status` without `reason`.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        210 => "Content Different",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Moved Temporarily",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        310 => "Too many Redirects",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Time-out",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested range unsatisfiable",
        417 => "Expectation failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable entity",
        423 => "Locked",
        424 => "Method failure",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        449 => "Retry With",
        450 => "Blocked by Windows Parental Controls",
        451 => "Unavailable For Legal Reasons",
        456 => "Unrecoverable Error",
        499 => "client has closed connection",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway or Proxy Error",
        503 => "Service Unavailable",
        504 => "Gateway Time-out",
        505 => "HTTP Version not supported",
        506 => "Variant also negociate",
        507 => "Insufficient storage",
        508 => "Loop detected",
        509 => "Bandwidth Limit Exceeded",
        510 => "Not extended",
        511 => "Network authentication required",
        520 => "Web server is returning an unknown error",
        _ => match status / 100 {
            1 => "Informational",
            2 => "Success",
            3 => "Redirection",
            4 => "Client Error",
            5 => "Server Error",
            _ => "Other",
        },
    }
}

/// Heads kept in one thread's pool at most; beyond, they are freed.
pub const MAX_POOLED_HEADS: usize = 1024;
/// A head whose arena grew past this many bytes is freed, not pooled.
pub const MAX_POOLED_ARENA: usize = 64 * 1024;
/// A head with more field slots than this is freed, not pooled.
const MAX_POOLED_FIELDS: usize = 4 * MAX_HEADERS;

thread_local! {
    static POOL: RefCell<Vec<Head>> = const { RefCell::new(Vec::new()) };
}

/// Takes an empty head from this thread's pool (or a new one). Its vectors
/// keep the capacity earlier requests gave them.
pub fn take() -> Head {
    POOL.try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Returns a head taken with [`take`]. Heads grown by unusually large
/// messages (see [`MAX_POOLED_ARENA`]) are freed instead, and at most
/// [`MAX_POOLED_HEADS`] are kept.
pub fn give(mut head: Head) {
    if head.arena.capacity() > MAX_POOLED_ARENA || head.fields.capacity() > MAX_POOLED_FIELDS {
        return;
    }
    head.clear();
    let _ = POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < MAX_POOLED_HEADS {
            p.push(head);
        }
    });
}

/// Heads waiting in this thread's pool.
pub fn pooled() -> usize {
    POOL.try_with(|p| p.borrow().len()).unwrap_or(0)
}
