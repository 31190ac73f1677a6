//! The connection state machine, sans-IO, for both roles.
//!
//! The caller owns every buffer. It reads bytes into its own (pooled)
//! buffer and calls [`Conn::recv`] on the unread part until it returns
//! nothing; each call consumes at most one frame (or one whole header
//! block) and reports at most one [`Event`]. Bytes to send (SETTINGS
//! acknowledgements, PING answers, WINDOW_UPDATE, RST_STREAM, GOAWAY, and
//! whatever the caller sends with the `send_*` methods) are appended to a
//! `Vec<u8>` the caller passes in and writes out. Between calls the
//! connection holds no I/O buffer, only its HPACK tables and one small
//! record per open stream.

mod recv;
mod send;
mod stream;

use fairlead_http::msg::Head;

use crate::frame::{self, setting, MAX_WINDOW};
use crate::hpack::{Decoder, Encoder};
use crate::ErrorCode;
use stream::Streams;

/// Which side of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Accepts the client preface; streams are opened by the peer.
    Server,
    /// Sends the preface; opens streams with [`Conn::send_request`].
    Client,
}

/// Settings and defences. Every field documents its default.
#[derive(Debug, Clone)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS this side advertises and enforces
    /// (HEADERS past it are refused with REFUSED_STREAM). Default is 100,
    /// HAProxy's `tune.h2.max-concurrent-streams`.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send on a stream
    /// before this side releases it. Default is 65535, HAProxy's
    /// `tune.h2.initial-window-size`.
    pub initial_window_size: u32,
    /// The connection receive window, raised from 65535 by a WINDOW_UPDATE
    /// right after SETTINGS. Default is 1 MiB (1048576): with 100 streams,
    /// per-stream windows do the backpressure.
    pub connection_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE. Default is 16384 (the protocol's minimum).
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK decoder's table. Default is
    /// 4096, HAProxy's `tune.h2.header-table-size`.
    pub header_table_size: u32,
    /// The HPACK encoder's own table limit (the peer's setting may lower
    /// it). Default is 0: a stateless encoder as HAProxy's, no memory per
    /// connection; see [`crate::hpack::encoder`].
    pub encoder_table_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE, advertised and enforced on decoded
    /// blocks (names + values + 32 per field, RFC 9113 §6.5.2); a larger
    /// block resets its stream (PROTOCOL_ERROR). It also bounds HPACK
    /// "bombs" (small blocks that expand from the table). Default is
    /// 16384, one `tune.bufsize`.
    pub max_header_list_size: u32,
    /// Fields in one block at most (as the HTTP/1 parser's limit); past
    /// it the stream is reset. Default is 126 (`MAX_HEADERS` less the
    /// request rewrite reserve).
    pub max_header_fields: u32,
    /// The bytes one header block may take in the receive buffer, frame
    /// headers, padding and CONTINUATION frames included. The whole block
    /// must be in the caller's buffer to be decoded, so this must not
    /// exceed its size; a block growing past it is a connection error
    /// ENHANCE_YOUR_CALM, which makes CONTINUATION floods harmless.
    /// Default is 16384.
    pub max_header_block: u32,
    /// Rapid-reset budget (CVE-2023-44487): each stream the peer resets
    /// before this side ended it, each stream refused or reset for a
    /// protocol error counts 1, each stream completed normally takes 1
    /// back. Past the budget: GOAWAY ENHANCE_YOUR_CALM. Default is 200.
    /// 0 disables the check.
    pub reset_budget: u32,
    /// Consecutive DATA frames with no payload and no END_STREAM (and
    /// CONTINUATION frames with no payload) accepted; past it: GOAWAY
    /// ENHANCE_YOUR_CALM. Default is 32.
    pub max_empty_frames: u32,
    /// Control frames (SETTINGS and PING acknowledgements, RST_STREAM)
    /// this side may queue since the caller last called
    /// [`Conn::flushed`]; past it (a SETTINGS or PING flood from a peer
    /// that does not read): GOAWAY ENHANCE_YOUR_CALM. Default is 1000.
    pub max_pending_control: u32,
    /// Advertise SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441) and, as a
    /// server, accept `:protocol` (see [`crate::head`]). Default is false.
    pub enable_connect_protocol: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_concurrent_streams: 100,
            initial_window_size: 65_535,
            connection_window_size: 1 << 20,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            header_table_size: 4096,
            encoder_table_size: 0,
            max_header_list_size: 16_384,
            max_header_fields: 126,
            max_header_block: 16_384,
            reset_budget: 200,
            max_empty_frames: 32,
            max_pending_control: 1000,
            enable_connect_protocol: false,
        }
    }
}

/// What [`Conn::recv`] found.
#[derive(Debug)]
pub enum Event<'a> {
    /// A request head (server role), or a response head (client role;
    /// 1xx heads come first, then the final one). The head comes from the
    /// thread's pool ([`fairlead_http::msg::take`]): give it back with
    /// [`fairlead_http::msg::give`]. Its bytes are all in its arena (read
    /// it with `head.view(&[])`).
    Head {
        stream: u32,
        head: Head,
        end_stream: bool,
    },
    /// Body bytes, borrowed from the input (a DATA frame may come in
    /// several pieces as it arrives). Call [`Conn::release`] once they are
    /// forwarded, or the peer's window closes.
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
    },
    /// Trailers (always the end of the stream's input): a head with
    /// fields only.
    Trailers { stream: u32, head: Head },
    /// The stream is gone: the peer reset it (`remote`), or this side did
    /// because the peer broke the protocol on it (an RST_STREAM is
    /// queued). Forget the stream.
    Reset {
        stream: u32,
        code: ErrorCode,
        remote: bool,
    },
    /// The peer is going away: streams above `last_stream` that this side
    /// opened were not processed (they are forgotten; retry them
    /// elsewhere), no new stream may be opened.
    GoAway {
        last_stream: u32,
        code: ErrorCode,
        debug: &'a [u8],
    },
    /// Send windows grew: on `stream`, or on all streams when 0.
    WindowUpdate { stream: u32 },
    /// The peer's settings changed (concurrency, windows, frame size).
    Settings,
    /// The peer acknowledged this side's settings.
    SettingsAcked,
    /// The answer to one of this side's PINGs.
    Pong { data: [u8; 8] },
}

/// One step of [`Conn::recv`]: `consumed` bytes of the input are done
/// with (the caller drops them), and maybe an event. Nothing consumed and
/// no event: more input is needed.
#[derive(Debug)]
pub struct Recv<'a> {
    pub consumed: usize,
    pub event: Option<Event<'a>>,
}

/// A connection error. A GOAWAY with this code was appended to the output
/// (when the peer may still read it): write the output, then close (with
/// a linger, so that unread input does not turn the close into a reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub reason: &'static str,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP/2 connection error {}: {}", self.code, self.reason)
    }
}

impl std::error::Error for Error {}

/// Why a `send_*` call was refused (nothing was written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// No such open stream, or its sending side is closed.
    StreamClosed,
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS is reached.
    TooManyStreams,
    /// GOAWAY was sent or received, or the connection failed: no new
    /// stream.
    GoingAway,
    /// The call does not fit this role or stream state (a request from a
    /// server, trailers before a head...).
    Invalid,
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SendError::StreamClosed => "stream closed",
            SendError::TooManyStreams => "too many streams",
            SendError::GoingAway => "connection going away",
            SendError::Invalid => "invalid in this state",
        })
    }
}

impl std::error::Error for SendError {}

/// The peer's settings.
#[derive(Debug, Clone, Copy)]
struct PeerSettings {
    initial_window: u32,
    max_frame_size: u32,
    max_concurrent: u32,
    enable_connect_protocol: bool,
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Server: waiting for the client preface.
    Preface,
    /// Waiting for the peer's first SETTINGS.
    FirstSettings,
    Open,
    /// A connection error happened.
    Failed(Error),
}

/// The rest of a DATA (or skipped unknown) frame being received.
#[derive(Debug, Clone, Copy)]
struct Run {
    stream: u32,
    data_left: u32,
    pad_left: u32,
    end_stream: bool,
    /// Deliver the data (false: skip it).
    deliver: bool,
}

/// Two-step graceful shutdown (RFC 9113 §6.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shutdown {
    None,
    /// GOAWAY with the largest identifier sent, with a PING.
    Pinged,
    /// The final GOAWAY is sent.
    Done,
}

const SHUTDOWN_PING: [u8; 8] = *b"fl-drain";
/// Recently closed streams remembered (to answer late frames right).
const RECENT: usize = 8;

/// How a recently closed stream was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    /// Both sides ended it: late frames are a connection error
    /// STREAM_CLOSED.
    Normal,
    /// The peer reset it: late frames are a stream error STREAM_CLOSED.
    Remote,
    /// This side reset it: late frames are ignored (RFC 9113 §5.1).
    Local,
}

/// An HTTP/2 connection; see the [module](self) docs.
#[derive(Debug)]
pub struct Conn {
    role: Role,
    phase: Phase,
    cfg: Config,
    peer: PeerSettings,
    decoder: Decoder,
    encoder: Encoder,
    streams: Streams,
    run: Option<Run>,
    /// Our SETTINGS not acknowledged yet.
    settings_unacked: u8,
    /// The receive window a new stream starts with (the default until our
    /// settings are acknowledged, if ours is smaller).
    recv_initial: u32,
    conn_recv_window: i32,
    conn_recv_pending: u32,
    conn_send_window: i32,
    /// Highest stream identifier the peer opened.
    last_peer_stream: u32,
    /// Next identifier this side opens (client: odd).
    next_local_stream: u32,
    goaway_sent: Option<u32>,
    goaway_recv: Option<u32>,
    shutdown: Shutdown,
    recent: [(u32, Closed); RECENT],
    recent_pos: u8,
    glitches: u32,
    empty_frames: u32,
    pending_control: u32,
    opened: u64,
}

const DEFAULT_WINDOW: u32 = 65_535;

impl Conn {
    /// A server connection. Appends this side's SETTINGS (and the
    /// connection WINDOW_UPDATE) to `out`; the client's preface is
    /// expected first in the input.
    pub fn server(cfg: Config, out: &mut Vec<u8>) -> Conn {
        let mut c = Conn::new(Role::Server, cfg);
        c.start(out);
        c
    }

    /// A client connection. Appends the preface and this side's SETTINGS
    /// to `out`.
    pub fn client(cfg: Config, out: &mut Vec<u8>) -> Conn {
        let mut c = Conn::new(Role::Client, cfg);
        out.extend_from_slice(frame::PREFACE);
        c.start(out);
        c
    }

    fn new(role: Role, mut cfg: Config) -> Conn {
        cfg.max_frame_size = cfg
            .max_frame_size
            .clamp(frame::DEFAULT_MAX_FRAME_SIZE, frame::MAX_MAX_FRAME_SIZE);
        cfg.initial_window_size = cfg.initial_window_size.min(MAX_WINDOW);
        cfg.connection_window_size = cfg.connection_window_size.clamp(DEFAULT_WINDOW, MAX_WINDOW);
        let table = cfg.header_table_size.max(4096) as usize;
        Conn {
            role,
            phase: match role {
                Role::Server => Phase::Preface,
                Role::Client => Phase::FirstSettings,
            },
            peer: PeerSettings {
                initial_window: DEFAULT_WINDOW,
                max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
                max_concurrent: u32::MAX,
                enable_connect_protocol: false,
            },
            decoder: Decoder::new(table),
            encoder: Encoder::new(cfg.encoder_table_size as usize),
            streams: Streams::default(),
            run: None,
            settings_unacked: 0,
            recv_initial: cfg.initial_window_size.max(DEFAULT_WINDOW),
            conn_recv_window: cfg.connection_window_size as i32,
            conn_recv_pending: 0,
            conn_send_window: DEFAULT_WINDOW as i32,
            last_peer_stream: 0,
            next_local_stream: match role {
                Role::Server => 2,
                Role::Client => 1,
            },
            goaway_sent: None,
            goaway_recv: None,
            shutdown: Shutdown::None,
            recent: [(0, Closed::Normal); RECENT],
            recent_pos: 0,
            glitches: 0,
            empty_frames: 0,
            pending_control: 0,
            opened: 0,
            cfg,
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        let c = &self.cfg;
        let mut s: [(u16, u32); 7] = [(0, 0); 7];
        let mut n = 0;
        let mut push = |id, v| {
            s[n] = (id, v);
            n += 1;
        };
        if self.role == Role::Client {
            push(setting::ENABLE_PUSH, 0);
        }
        push(setting::MAX_CONCURRENT_STREAMS, c.max_concurrent_streams);
        if c.initial_window_size != DEFAULT_WINDOW {
            push(setting::INITIAL_WINDOW_SIZE, c.initial_window_size);
        }
        if c.max_frame_size != frame::DEFAULT_MAX_FRAME_SIZE {
            push(setting::MAX_FRAME_SIZE, c.max_frame_size);
        }
        if c.header_table_size != 4096 {
            push(setting::HEADER_TABLE_SIZE, c.header_table_size);
        }
        push(setting::MAX_HEADER_LIST_SIZE, c.max_header_list_size);
        if c.enable_connect_protocol {
            push(setting::ENABLE_CONNECT_PROTOCOL, 1);
        }
        frame::write_settings(out, &s[..n]);
        self.settings_unacked = 1;
        let extra = c.connection_window_size - DEFAULT_WINDOW;
        if extra > 0 {
            frame::write_window_update(out, 0, extra);
        }
    }

    /// This side's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Open and half-closed streams.
    pub fn active_streams(&self) -> usize {
        self.streams.len()
    }

    /// Streams the peer opened so far (for a per-read-pass cap on new
    /// streams, which the caller drives).
    pub fn opened_streams(&self) -> u64 {
        self.opened
    }

    /// The current rapid-reset / glitch count (see
    /// [`Config::reset_budget`]).
    pub fn glitches(&self) -> u32 {
        self.glitches
    }

    /// Highest stream identifier the peer opened.
    pub fn last_peer_stream(&self) -> u32 {
        self.last_peer_stream
    }

    /// Client role: whether [`Conn::send_request`] may open a stream now
    /// (not failed or going away, identifiers left, and under the peer's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    pub fn can_open_stream(&self) -> bool {
        self.role == Role::Client
            && !matches!(self.phase, Phase::Failed(_))
            && !self.is_going_away()
            && self.next_local_stream <= frame::MAX_WINDOW
            && self.streams.len() < self.peer.max_concurrent as usize
    }

    /// Whether GOAWAY was sent or received (no new streams).
    pub fn is_going_away(&self) -> bool {
        self.goaway_sent.is_some() || self.goaway_recv.is_some()
    }

    /// Whether the connection may be closed now: it failed, or it is
    /// going away and no stream is left.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Failed(_))
            || (self.is_going_away()
                && self.streams.len() == 0
                && self.shutdown != Shutdown::Pinged)
    }

    /// The HPACK tables' allocated bytes (what an idle connection holds).
    pub fn table_bytes(&self) -> usize {
        self.decoder.table().allocated() + self.encoder.table().allocated()
    }

    /// Bytes held on the heap besides the tables: the stream records.
    pub fn stream_bytes(&self) -> usize {
        self.streams.allocated()
    }

    /// The caller has written out everything queued: the count of pending
    /// control frames (see [`Config::max_pending_control`]) restarts.
    pub fn flushed(&mut self) {
        self.pending_control = 0;
    }

    /// Remembers how a stream was closed.
    fn remember(&mut self, id: u32, how: Closed) {
        let i = usize::from(self.recent_pos) % RECENT;
        self.recent[i] = (id, how);
        self.recent_pos = ((i + 1) % RECENT) as u8;
    }

    /// How `id` was closed, if it was recently.
    fn closed_how(&self, id: u32) -> Option<Closed> {
        let hit = self.recent.iter().find(|(i, _)| *i == id && id != 0);
        hit.map(|(_, how)| *how)
    }

    /// Whether `id` is opened by the peer.
    fn peer_initiated(&self, id: u32) -> bool {
        (id % 2 == 1) == (self.role == Role::Server)
    }

    /// Whether `id` is still idle (never opened).
    fn is_idle(&self, id: u32) -> bool {
        if self.peer_initiated(id) {
            id > self.last_peer_stream
        } else {
            id >= self.next_local_stream
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// An idle connection's struct stays small (its tables allocate
    /// nothing until used). The bound documented in the crate docs.
    pub const MAX_CONN_SIZE: usize = 512;

    #[test]
    fn conn_struct_stays_small() {
        let size = std::mem::size_of::<Conn>();
        eprintln!(
            "size_of::<Conn>() = {size}, Stream = {}",
            std::mem::size_of::<stream::Stream>()
        );
        assert!(size <= MAX_CONN_SIZE, "size_of::<Conn>() = {size}");
        let mut out = Vec::new();
        let c = Conn::server(Config::default(), &mut out);
        assert_eq!(c.table_bytes(), 0);
    }
}
