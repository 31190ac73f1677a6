//! Fairlead's HTTP/2 codec (RFC 9113, RFC 7541), sans-IO, for both
//! roles.
//!
//! # API
//!
//! A [`Conn`] is one connection. It never reads or writes a socket: the
//! caller owns the buffers.
//!
//! * [`Conn::server`] / [`Conn::client`] take a [`Config`] and append the
//!   opening bytes (client: the preface; both: SETTINGS and a connection
//!   WINDOW_UPDATE) to an output `Vec<u8>`.
//! * [`Conn::recv`]`(&mut input, &mut out)` processes the start of the
//!   received bytes and returns a [`Recv`]: how many bytes were consumed
//!   and at most one [`Event`]. Call it in a loop until it consumes
//!   nothing and reports nothing, then drop the consumed prefix, read
//!   more, and go on. Replies the protocol requires (SETTINGS and PING
//!   acknowledgements, WINDOW_UPDATE, RST_STREAM, GOAWAY) are appended to
//!   `out`. An `Err(`[`Error`]`)` is a connection error: a GOAWAY is in
//!   `out`; write it, then close with a linger.
//! * Events: [`Event::Head`] (a request, or a response, decoded straight
//!   into a pooled [`fairlead_http::msg::Head`]), [`Event::Data`] (body
//!   bytes borrowed from the input, delivered as they arrive, even before
//!   the DATA frame is complete), [`Event::Trailers`], [`Event::Reset`],
//!   [`Event::GoAway`], [`Event::WindowUpdate`], [`Event::Settings`],
//!   [`Event::SettingsAcked`], [`Event::Pong`].
//! * Sending: [`Conn::send_request`] (client; returns the stream id),
//!   [`Conn::send_response`] (server), [`Conn::send_data`] (takes what
//!   the windows allow, see [`Conn::send_capacity`]; the rest waits for an
//!   [`Event::WindowUpdate`]), [`Conn::send_trailers`], [`Conn::reset`],
//!   [`Conn::ping`], [`Conn::goaway`], [`Conn::shutdown`] (graceful, two
//!   steps), then [`Conn::is_done`].
//! * Flow control: received body bytes count against the windows until
//!   the caller calls [`Conn::release`] (once it forwarded them); a
//!   WINDOW_UPDATE goes out when half a window is released. So a slow
//!   consumer stops the peer: nothing buffers beyond the windows.
//! * [`Conn::flushed`] after the output was written (it restarts the
//!   control-frame flood count).
//!
//! Lower layers are public too: [`frame`] (parse and serialise every
//! frame type), [`hpack`] (Huffman, tables, [`hpack::Decoder`],
//! [`hpack::Encoder`]) and [`head`] (header blocks to and from `Head`,
//! with the RFC 9113 §8 checks).
//!
//! # Memory
//!
//! Between calls a connection holds no I/O buffer: `size_of::<Conn>()` is
//! under 512 bytes (a test keeps it there), plus one 32-byte record per
//! open stream (an idle connection keeps room for at most 8, 256 bytes,
//! so that sequential requests do not allocate; more is freed) and the
//! HPACK tables, which allocate only once used: the decoder's up to
//! [`Config::header_table_size`] (4 KiB), the encoder's none by default
//! (stateless, [`Config::encoder_table_size`] = 0).
//!
//! * A header block is decoded in place in the caller's buffer:
//!   CONTINUATION payloads are moved next to the HEADERS payload, so the
//!   whole block (at most [`Config::max_header_block`] bytes) must fit in
//!   the caller's receive buffer. Until it is complete nothing is
//!   consumed.
//! * Decoded fields go straight into the `Head`'s arena: no allocation per
//!   field once pooled heads have grown. Huffman-decoded strings use one
//!   scratch vector per thread.
//! * DATA is never copied: [`Event::Data`] borrows the input.
//!
//! # Defences (on by default)
//!
//! * Concurrency: [`Config::max_concurrent_streams`] (100); HEADERS past
//!   it get RST_STREAM REFUSED_STREAM.
//! * Rapid reset (CVE-2023-44487) and other misbehaviour: a budget of
//!   peer-reset, refused and malformed streams, earned back by completed
//!   ones ([`Config::reset_budget`], 200); past it GOAWAY
//!   ENHANCE_YOUR_CALM. A per-read-pass cap on new streams is the
//!   caller's, with [`Conn::opened_streams`].
//! * CONTINUATION flood: a block larger than [`Config::max_header_block`]
//!   (16 KiB) is a connection error ENHANCE_YOUR_CALM as soon as it
//!   passes the limit; empty CONTINUATION frames count as empty frames.
//! * Empty DATA flood: [`Config::max_empty_frames`] (32) in a row.
//! * SETTINGS / PING flood: [`Config::max_pending_control`] (1000)
//!   control replies queued between two [`Conn::flushed`].
//! * HPACK bombs and huge heads: [`Config::max_header_list_size`]
//!   (16 KiB decoded) and [`Config::max_header_fields`] (126) reset the
//!   stream, the table staying in step.
//! * Malformed messages (RFC 9113 §8.1.1: uppercase or empty names,
//!   pseudo-header misuse, connection-specific fields, `te` other than
//!   `trailers`, content-length mismatches...) reset the stream with
//!   PROTOCOL_ERROR; window overflows are FLOW_CONTROL_ERROR.
//! * Push is refused (client: SETTINGS_ENABLE_PUSH 0; a PUSH_PROMISE is a
//!   connection error in both roles).
//!
//! Not here (the caller's): timers (SETTINGS acknowledgement timeout,
//! idle and request timeouts), extended CONNECT (RFC 8441), priorities
//! (parsed and validated, otherwise ignored as RFC 9113 allows), and the
//! HTTP/1 translation details (joining split `cookie` fields, hop-by-hop
//! headers named in `Connection`).
#![forbid(unsafe_code)]

pub mod frame;
pub mod head;
pub mod hpack;

/// An HTTP/2 error code (RFC 9113 §7); unknown codes are kept as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The RFC's name for the code, or `UNKNOWN`.
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied().unwrap_or("UNKNOWN")
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub mod conn;
pub use conn::{Config, Conn, Error, Event, Recv, Role, SendError};
