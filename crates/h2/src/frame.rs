//! HTTP/2 frames (RFC 9113 §4 and §6): the 9-byte frame header, parsing
//! of every frame type from a byte slice, and serialisation.
//!
//! [`parse`] never panics and never allocates: it returns
//! [`Parsed::Incomplete`] when the slice does not hold a whole frame yet,
//! a [`Frame`] borrowing its payload from the slice, or a [`FrameError`]
//! saying whether the problem is a connection error or a stream error
//! (RFC 9113 §5.4). A frame longer than the receiver's
//! `SETTINGS_MAX_FRAME_SIZE` is refused from its header alone, before its
//! payload arrives. Checks that need connection state (stream states, a
//! WINDOW_UPDATE of 0, a self-dependent HEADERS, whose header block must
//! still be decoded) are left to [`crate::Conn`].

use crate::ErrorCode;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes of a frame header.
pub const HEADER_LEN: usize = 9;
/// The smallest and default `SETTINGS_MAX_FRAME_SIZE`.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest `SETTINGS_MAX_FRAME_SIZE`.
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// The largest flow-control window and stream identifier.
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame type codes.
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Setting identifiers (RFC 9113 §6.5.2, RFC 8441).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload length (24 bits).
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// Stream identifier, reserved bit cleared.
    pub stream: u32,
}

impl FrameHeader {
    /// Reads a frame header from the first 9 bytes of `b`.
    pub fn read(b: &[u8]) -> Option<FrameHeader> {
        let h = b.get(..HEADER_LEN)?;
        Some(FrameHeader {
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_WINDOW,
        })
    }

    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// Stream dependency of a HEADERS or PRIORITY frame (RFC 9113 §5.3.2;
/// parsed and validated, otherwise ignored as RFC 9113 deprecates it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    pub dependency: u32,
    pub exclusive: bool,
    /// Weight minus one, as sent.
    pub weight: u8,
}

/// One parsed frame; payloads borrow from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
        /// Padding bytes plus the pad-length byte (0 when not padded): the
        /// frame's flow-controlled length is `data.len() + pad`.
        pad: u32,
    },
    Headers {
        stream: u32,
        block: &'a [u8],
        end_stream: bool,
        end_headers: bool,
        priority: Option<Priority>,
        pad: u32,
    },
    Priority {
        stream: u32,
        priority: Priority,
    },
    RstStream {
        stream: u32,
        code: ErrorCode,
    },
    Settings {
        ack: bool,
        /// A multiple of 6 bytes; read it with [`settings`].
        payload: &'a [u8],
    },
    PushPromise {
        stream: u32,
        promised: u32,
        block: &'a [u8],
        end_headers: bool,
        pad: u32,
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: ErrorCode,
        debug: &'a [u8],
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    Continuation {
        stream: u32,
        block: &'a [u8],
        end_headers: bool,
    },
    /// An extension frame type: ignored (RFC 9113 §4.1, §5.5).
    Unknown {
        kind: u8,
        stream: u32,
    },
}

/// A frame that breaks the protocol. `stream` is `Some` for a stream
/// error (the frame is skipped, the stream reset), `None` for a connection
/// error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError {
    pub code: ErrorCode,
    pub stream: Option<u32>,
    pub reason: &'static str,
}

impl FrameError {
    pub(crate) fn conn(code: ErrorCode, reason: &'static str) -> FrameError {
        FrameError {
            code,
            stream: None,
            reason,
        }
    }

    pub(crate) fn stream(id: u32, code: ErrorCode, reason: &'static str) -> FrameError {
        FrameError {
            code,
            stream: Some(id),
            reason,
        }
    }
}

/// What [`parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Not a whole frame yet.
    Incomplete,
    /// A frame, and the bytes it took (header included).
    Frame(usize, Frame<'a>),
}

/// Parses one frame from the start of `input`. `max_frame_size` is this
/// side's `SETTINGS_MAX_FRAME_SIZE`. A stream error's frame is
/// `HEADER_LEN + len` bytes long (see [`FrameHeader::read`]).
pub fn parse(input: &[u8], max_frame_size: u32) -> Result<Parsed<'_>, FrameError> {
    let Some(h) = FrameHeader::read(input) else {
        return Ok(Parsed::Incomplete);
    };
    if h.len > max_frame_size {
        return Err(FrameError::conn(
            ErrorCode::FRAME_SIZE_ERROR,
            "frame too large",
        ));
    }
    let total = HEADER_LEN + h.len as usize;
    let Some(payload) = input.get(HEADER_LEN..total) else {
        return Ok(Parsed::Incomplete);
    };
    Ok(Parsed::Frame(total, parse_payload(h, payload)?))
}

/// Parses a frame whose header and whole payload are known.
pub fn parse_payload(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    match h.kind {
        kind::DATA => {
            need_stream(h, "DATA on stream 0")?;
            let (data, pad) = unpad(h, p)?;
            Ok(Frame::Data {
                stream: h.stream,
                data,
                end_stream: h.has(flag::END_STREAM),
                pad,
            })
        }
        kind::HEADERS => parse_headers(h, p),
        kind::PRIORITY => parse_priority(h, p),
        kind::RST_STREAM => {
            need_stream(h, "RST_STREAM on stream 0")?;
            let code = read_u32(p)
                .filter(|_| p.len() == 4)
                .ok_or(FrameError::conn(
                    ErrorCode::FRAME_SIZE_ERROR,
                    "RST_STREAM length is not 4",
                ))?;
            Ok(Frame::RstStream {
                stream: h.stream,
                code: ErrorCode(code),
            })
        }
        kind::SETTINGS => parse_settings(h, p),
        kind::PUSH_PROMISE => parse_push_promise(h, p),
        kind::PING => {
            no_stream(h, "PING on a stream")?;
            let data: [u8; 8] = p.try_into().map_err(|_| {
                FrameError::conn(ErrorCode::FRAME_SIZE_ERROR, "PING length is not 8")
            })?;
            Ok(Frame::Ping {
                ack: h.has(flag::ACK),
                data,
            })
        }
        kind::GOAWAY => parse_goaway(h, p),
        kind::WINDOW_UPDATE => {
            let inc = read_u32(p)
                .filter(|_| p.len() == 4)
                .ok_or(FrameError::conn(
                    ErrorCode::FRAME_SIZE_ERROR,
                    "WINDOW_UPDATE length is not 4",
                ))?;
            Ok(Frame::WindowUpdate {
                stream: h.stream,
                increment: inc & MAX_WINDOW,
            })
        }
        kind::CONTINUATION => {
            need_stream(h, "CONTINUATION on stream 0")?;
            Ok(Frame::Continuation {
                stream: h.stream,
                block: p,
                end_headers: h.has(flag::END_HEADERS),
            })
        }
        other => Ok(Frame::Unknown {
            kind: other,
            stream: h.stream,
        }),
    }
}

fn need_stream(h: FrameHeader, what: &'static str) -> Result<(), FrameError> {
    if h.stream == 0 {
        return Err(FrameError::conn(ErrorCode::PROTOCOL_ERROR, what));
    }
    Ok(())
}

fn no_stream(h: FrameHeader, what: &'static str) -> Result<(), FrameError> {
    if h.stream != 0 {
        return Err(FrameError::conn(ErrorCode::PROTOCOL_ERROR, what));
    }
    Ok(())
}

fn parse_headers(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    need_stream(h, "HEADERS on stream 0")?;
    let (mut block, pad) = unpad(h, p)?;
    let mut priority = None;
    if h.has(flag::PRIORITY) {
        let pr = block.get(..5).ok_or(FrameError::conn(
            ErrorCode::FRAME_SIZE_ERROR,
            "HEADERS too short for priority",
        ))?;
        priority = Some(read_priority(pr));
        block = &block[5..];
    }
    Ok(Frame::Headers {
        stream: h.stream,
        block,
        end_stream: h.has(flag::END_STREAM),
        end_headers: h.has(flag::END_HEADERS),
        priority,
        pad,
    })
}

fn parse_priority(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    need_stream(h, "PRIORITY on stream 0")?;
    if p.len() != 5 {
        return Err(FrameError::stream(
            h.stream,
            ErrorCode::FRAME_SIZE_ERROR,
            "PRIORITY length is not 5",
        ));
    }
    let priority = read_priority(p);
    if priority.dependency == h.stream {
        return Err(FrameError::stream(
            h.stream,
            ErrorCode::PROTOCOL_ERROR,
            "stream depends on itself",
        ));
    }
    Ok(Frame::Priority {
        stream: h.stream,
        priority,
    })
}

fn parse_settings(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    no_stream(h, "SETTINGS on a stream")?;
    let ack = h.has(flag::ACK);
    let size = |r| Err(FrameError::conn(ErrorCode::FRAME_SIZE_ERROR, r));
    if ack && !p.is_empty() {
        return size("SETTINGS ack with payload");
    }
    if !p.len().is_multiple_of(6) {
        return size("SETTINGS length not a multiple of 6");
    }
    Ok(Frame::Settings { ack, payload: p })
}

fn parse_push_promise(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    need_stream(h, "PUSH_PROMISE on stream 0")?;
    let (block, pad) = unpad(h, p)?;
    let promised = read_u32(block).ok_or(FrameError::conn(
        ErrorCode::FRAME_SIZE_ERROR,
        "PUSH_PROMISE too short",
    ))? & MAX_WINDOW;
    Ok(Frame::PushPromise {
        stream: h.stream,
        promised,
        block: &block[4..],
        end_headers: h.has(flag::END_HEADERS),
        pad,
    })
}

fn parse_goaway(h: FrameHeader, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    no_stream(h, "GOAWAY on a stream")?;
    let (Some(last), Some(code)) = (read_u32(p), p.get(4..).and_then(read_u32)) else {
        return Err(FrameError::conn(
            ErrorCode::FRAME_SIZE_ERROR,
            "GOAWAY too short",
        ));
    };
    Ok(Frame::GoAway {
        last_stream: last & MAX_WINDOW,
        code: ErrorCode(code),
        debug: &p[8..],
    })
}

/// The payload without padding, and the padding overhead (pad length byte
/// included) when PADDED is set.
fn unpad(h: FrameHeader, p: &[u8]) -> Result<(&[u8], u32), FrameError> {
    if !h.has(flag::PADDED) {
        return Ok((p, 0));
    }
    let err = || FrameError::conn(ErrorCode::PROTOCOL_ERROR, "padding too long");
    let (&n, rest) = p.split_first().ok_or_else(err)?;
    let end = rest.len().checked_sub(usize::from(n)).ok_or_else(err)?;
    Ok((&rest[..end], u32::from(n) + 1))
}

fn read_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

fn read_priority(b: &[u8]) -> Priority {
    let d = read_u32(b).unwrap_or(0);
    Priority {
        dependency: d & MAX_WINDOW,
        exclusive: d & !MAX_WINDOW != 0,
        weight: b.get(4).copied().unwrap_or(0),
    }
}

/// The (identifier, value) pairs of a SETTINGS payload.
pub fn settings(payload: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    payload.chunks_exact(6).map(|c| {
        (
            u16::from_be_bytes([c[0], c[1]]),
            u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
        )
    })
}

/// Appends a frame header.
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a DATA frame (no padding). `data` must fit the peer's frame
/// size.
pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    write_header(out, data.len(), kind::DATA, flags, stream);
    out.extend_from_slice(data);
}

/// Appends a SETTINGS frame with these (identifier, value) pairs.
pub fn write_settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    write_header(out, values.len() * 6, kind::SETTINGS, 0, 0);
    for (id, v) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends a SETTINGS acknowledgement.
pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_header(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a PING (or its acknowledgement).
pub fn write_ping(out: &mut Vec<u8>, data: [u8; 8], ack: bool) {
    write_header(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(&data);
}

/// Appends a GOAWAY.
pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    write_header(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.0.to_be_bytes());
    out.extend_from_slice(debug);
}

/// Appends an RST_STREAM.
pub fn write_rst(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_header(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.0.to_be_bytes());
}

/// Appends a WINDOW_UPDATE.
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

impl Frame<'_> {
    /// Serialises this frame (any type, padding included: `pad` counts the
    /// pad-length byte, so `pad: 1` is PADDED with no padding bytes).
    /// Payloads are written as given; the caller keeps them within the
    /// peer's frame size. `Unknown` frames are written with an empty
    /// payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Frame::Data {
                stream,
                data,
                end_stream,
                pad,
            } => {
                let f = if end_stream { flag::END_STREAM } else { 0 };
                write_padded(out, kind::DATA, f, stream, pad, &[], data);
            }
            Frame::Headers {
                stream,
                block,
                end_stream,
                end_headers,
                priority,
                pad,
            } => {
                let mut f = 0;
                if end_stream {
                    f |= flag::END_STREAM;
                }
                if end_headers {
                    f |= flag::END_HEADERS;
                }
                let pr = priority.map(priority_bytes);
                if pr.is_some() {
                    f |= flag::PRIORITY;
                }
                let pre: &[u8] = pr.as_ref().map_or(&[], |p| &p[..]);
                write_padded(out, kind::HEADERS, f, stream, pad, pre, block);
            }
            Frame::Priority { stream, priority } => {
                write_header(out, 5, kind::PRIORITY, 0, stream);
                out.extend_from_slice(&priority_bytes(priority));
            }
            Frame::RstStream { stream, code } => write_rst(out, stream, code),
            Frame::Settings { ack, payload } => {
                write_header(out, payload.len(), kind::SETTINGS, u8::from(ack), 0);
                out.extend_from_slice(payload);
            }
            Frame::PushPromise {
                stream,
                promised,
                block,
                end_headers,
                pad,
            } => {
                let f = if end_headers { flag::END_HEADERS } else { 0 };
                let pre = (promised & MAX_WINDOW).to_be_bytes();
                write_padded(out, kind::PUSH_PROMISE, f, stream, pad, &pre, block);
            }
            Frame::Ping { ack, data } => write_ping(out, data, ack),
            Frame::GoAway {
                last_stream,
                code,
                debug,
            } => write_goaway(out, last_stream, code, debug),
            Frame::WindowUpdate { stream, increment } => {
                write_window_update(out, stream, increment)
            }
            Frame::Continuation {
                stream,
                block,
                end_headers,
            } => {
                let f = if end_headers { flag::END_HEADERS } else { 0 };
                write_header(out, block.len(), kind::CONTINUATION, f, stream);
                out.extend_from_slice(block);
            }
            Frame::Unknown { kind, stream } => write_header(out, 0, kind, 0, stream),
        }
    }
}

fn priority_bytes(p: Priority) -> [u8; 5] {
    let d = (p.dependency & MAX_WINDOW) | if p.exclusive { 1 << 31 } else { 0 };
    let b = d.to_be_bytes();
    [b[0], b[1], b[2], b[3], p.weight]
}

fn write_padded(
    out: &mut Vec<u8>,
    kind: u8,
    mut flags: u8,
    stream: u32,
    pad: u32,
    pre: &[u8],
    body: &[u8],
) {
    let pad_bytes = pad.saturating_sub(1).min(255) as usize;
    let overhead = if pad > 0 { 1 + pad_bytes } else { 0 };
    if pad > 0 {
        flags |= flag::PADDED;
    }
    write_header(out, overhead + pre.len() + body.len(), kind, flags, stream);
    if pad > 0 {
        out.push(pad_bytes as u8);
    }
    out.extend_from_slice(pre);
    out.extend_from_slice(body);
    out.resize(out.len() + pad_bytes, 0);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
