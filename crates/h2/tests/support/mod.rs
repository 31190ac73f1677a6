//! A scripted raw peer for state-machine tests: builds frames by hand,
//! feeds them to a `Conn`, and reads back what it wrote.
#![allow(dead_code)]

use fairlead_h2::frame::{self, flag, kind, Frame};
use fairlead_h2::hpack::{Decoder, Encoder};
use fairlead_h2::{Config, Conn, ErrorCode, Event};
use fairlead_http::msg::Head;

/// An owned copy of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Head {
        stream: u32,
        fields: Vec<(String, String)>,
        end: bool,
    },
    Data {
        stream: u32,
        data: Vec<u8>,
        end: bool,
    },
    Trailers {
        stream: u32,
        fields: Vec<(String, String)>,
    },
    Reset {
        stream: u32,
        code: ErrorCode,
        remote: bool,
    },
    GoAway {
        last: u32,
        code: ErrorCode,
    },
    Window(u32),
    Settings,
    SettingsAcked,
    Pong([u8; 8]),
}

/// Start line and fields of a head, as (name, value) strings: pseudo
/// parts first (`:method`, `:path`... or `:status`).
pub fn describe(h: &Head) -> Vec<(String, String)> {
    let v = h.view(&[]);
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut out = Vec::new();
    if v.status() != 0 {
        out.push((":status".into(), v.status().to_string()));
    } else if !v.method().is_empty() {
        out.push((":method".into(), s(v.method())));
        out.push((":path".into(), s(v.target())));
    }
    for (_, n, val) in v.headers() {
        out.push((s(n), s(val)));
    }
    out
}

fn own(e: Event<'_>) -> Ev {
    match e {
        Event::Head {
            stream,
            head,
            end_stream,
        } => Ev::Head {
            stream,
            fields: describe(&head),
            end: end_stream,
        },
        Event::Data {
            stream,
            data,
            end_stream,
        } => Ev::Data {
            stream,
            data: data.to_vec(),
            end: end_stream,
        },
        Event::Trailers { stream, head } => Ev::Trailers {
            stream,
            fields: describe(&head),
        },
        Event::Reset {
            stream,
            code,
            remote,
        } => Ev::Reset {
            stream,
            code,
            remote,
        },
        Event::GoAway {
            last_stream, code, ..
        } => Ev::GoAway {
            last: last_stream,
            code,
        },
        Event::WindowUpdate { stream } => Ev::Window(stream),
        Event::Settings => Ev::Settings,
        Event::SettingsAcked => Ev::SettingsAcked,
        Event::Pong { data } => Ev::Pong(data),
    }
}

/// An owned frame the connection wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Out {
    pub fn code(&self) -> Option<ErrorCode> {
        let at = match self.kind {
            kind::RST_STREAM => 0,
            kind::GOAWAY => 4,
            _ => return None,
        };
        let b = self.payload.get(at..at + 4)?;
        Some(ErrorCode(u32::from_be_bytes(b.try_into().ok()?)))
    }
}

/// Splits written bytes into frames (a leading preface is skipped).
pub fn frames(mut b: &[u8]) -> Vec<Out> {
    if b.starts_with(frame::PREFACE) {
        b = &b[frame::PREFACE.len()..];
    }
    let mut v = Vec::new();
    while let Some(h) = frame::FrameHeader::read(b) {
        let end = 9 + h.len as usize;
        v.push(Out {
            kind: h.kind,
            flags: h.flags,
            stream: h.stream,
            payload: b[9..end].to_vec(),
        });
        b = &b[end..];
    }
    v
}

/// What one `feed` produced.
#[derive(Debug)]
pub struct Fed {
    pub events: Vec<Ev>,
    pub out: Vec<Out>,
    pub error: Option<fairlead_h2::Error>,
    /// Bytes left unconsumed.
    pub left: usize,
}

impl Fed {
    /// The GOAWAY's code, if one was written.
    pub fn goaway(&self) -> Option<ErrorCode> {
        self.out.iter().find(|f| f.kind == kind::GOAWAY)?.code()
    }

    /// The RST_STREAM frames written: (stream, code).
    pub fn resets(&self) -> Vec<(u32, ErrorCode)> {
        self.out
            .iter()
            .filter(|f| f.kind == kind::RST_STREAM)
            .map(|f| (f.stream, f.code().unwrap()))
            .collect()
    }

    pub fn kinds(&self) -> Vec<u8> {
        self.out.iter().map(|f| f.kind).collect()
    }
}

/// Feeds `bytes` to `conn` until it stops, collecting events and output.
pub fn feed(conn: &mut Conn, bytes: &[u8]) -> Fed {
    let mut buf = bytes.to_vec();
    let mut pos = 0;
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut error = None;
    loop {
        match conn.recv(&mut buf[pos..], &mut out) {
            Ok(r) => {
                let stop = r.consumed == 0 && r.event.is_none();
                pos += r.consumed;
                if let Some(e) = r.event {
                    events.push(own(e));
                }
                if stop {
                    break;
                }
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Fed {
        events,
        out: frames(&out),
        error,
        left: buf.len() - pos,
    }
}

/// A raw client (or server) writing frames.
pub struct Peer {
    pub enc: Encoder,
    pub dec: Decoder,
}

impl Default for Peer {
    /// A stateless encoder: its blocks suit any connection.
    fn default() -> Self {
        Peer {
            enc: Encoder::new(0),
            dec: Decoder::new(4096),
        }
    }
}

impl Peer {
    /// An encoder that indexes: its blocks depend on the connection's
    /// table being in step.
    pub fn indexing() -> Peer {
        Peer {
            enc: Encoder::new(4096),
            ..Peer::default()
        }
    }

    pub fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        self.enc.begin_block(&mut b);
        for (n, v) in fields {
            self.enc.field(n.as_bytes(), v.as_bytes(), false, &mut b);
        }
        b
    }

    pub fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
        let block = self.block(fields);
        let mut v = Vec::new();
        Frame::Headers {
            stream,
            block: &block,
            end_stream,
            end_headers: true,
            priority: None,
            pad: 0,
        }
        .encode(&mut v);
        v
    }

    /// Decodes a header block the connection wrote.
    pub fn decode(&mut self, block: &[u8]) -> Vec<(String, String)> {
        let mut v = Vec::new();
        self.dec
            .decode(block, &mut Vec::new(), |n, val, _| {
                v.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(val).into_owned(),
                ))
            })
            .unwrap();
        v
    }
}

pub const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "example.com"),
];

pub const POST: &[(&str, &str)] = &[
    (":method", "POST"),
    (":scheme", "http"),
    (":path", "/up"),
    (":authority", "example.com"),
];

pub fn data(stream: u32, d: &[u8], end: bool) -> Vec<u8> {
    let mut v = Vec::new();
    frame::write_data(&mut v, stream, d, end);
    v
}

pub fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::write_header(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

pub fn settings(values: &[(u16, u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::write_settings(&mut v, values);
    v
}

pub fn rst(stream: u32, code: ErrorCode) -> Vec<u8> {
    let mut v = Vec::new();
    frame::write_rst(&mut v, stream, code);
    v
}

pub fn window_update(stream: u32, inc: u32) -> Vec<u8> {
    let mut v = Vec::new();
    frame::write_window_update(&mut v, stream, inc);
    v
}

/// A server connection past the handshake (preface and empty SETTINGS
/// fed, its output discarded).
pub fn server_with(cfg: Config) -> Conn {
    let mut out = Vec::new();
    let mut c = Conn::server(cfg, &mut out);
    let mut hello = frame::PREFACE.to_vec();
    hello.extend(settings(&[]));
    let f = feed(&mut c, &hello);
    assert!(f.error.is_none(), "{f:?}");
    assert_eq!(f.events, vec![Ev::Settings]);
    c.flushed();
    c
}

pub fn server() -> Conn {
    server_with(Config::default())
}

pub fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

pub const END_HEADERS: u8 = flag::END_HEADERS;

/// A response head with `status`.
pub fn response(status: u16) -> Head {
    let mut h = Head::default();
    h.start_response(status, None, 20);
    h
}

/// Asserts a connection error with `code` and its GOAWAY.
pub fn conn_error(f: &Fed, code: ErrorCode) {
    assert_eq!(f.error.map(|e| e.code), Some(code), "{f:?}");
    assert_eq!(f.goaway(), Some(code), "{f:?}");
}

/// Asserts one RST_STREAM on `stream` with `code`, and no connection error.
pub fn stream_error(f: &Fed, stream: u32, code: ErrorCode) {
    assert!(f.error.is_none(), "{f:?}");
    assert_eq!(f.resets(), vec![(stream, code)], "{f:?}");
}
