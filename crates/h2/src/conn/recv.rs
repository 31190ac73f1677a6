//! Receiving: the preface, frames, header blocks (reassembled in place
//! from HEADERS and CONTINUATION), DATA delivered as it arrives, and every
//! error case of RFC 9113 §5–6.

use std::cell::RefCell;

use fairlead_http::msg::{self, Head};

use super::stream::{Stream, HEAD_REQUEST, LOCAL_CLOSED, REMOTE_CLOSED, REMOTE_HEAD};
use super::{Closed, Conn, Error, Event, Phase, Recv, Role, Run, Shutdown, SHUTDOWN_PING};
use crate::frame::{self, flag, kind, Frame, FrameHeader, HEADER_LEN, MAX_WINDOW};
use crate::head::{BlockKind, Builder, Reject};
use crate::ErrorCode as E;

thread_local! {
    /// Huffman-decoded strings of the block being decoded: one per
    /// thread, not per connection.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Above this the scratch vector is freed after use.
const MAX_SCRATCH_KEPT: usize = 64 * 1024;

fn nothing<'a>() -> Recv<'a> {
    Recv {
        consumed: 0,
        event: None,
    }
}

fn done<'a>(consumed: usize, event: Option<Event<'a>>) -> Recv<'a> {
    Recv { consumed, event }
}

/// A decoded head and the outcome of its checks (the content length).
type Decoded = (Head, Result<Option<u64>, Reject>);

/// How a header block is used.
enum Use {
    /// Decoded for the table only.
    Ignore,
    Decode(BlockKind),
}

impl Conn {
    /// Processes the start of `input`: at most one frame or header block.
    /// See [`Recv`] and [`Event`]. `input` is mutable because
    /// CONTINUATION payloads are moved next to their HEADERS payload to
    /// decode the block in place. After an error every call returns it.
    pub fn recv<'a>(&mut self, input: &'a mut [u8], out: &mut Vec<u8>) -> Result<Recv<'a>, Error> {
        match self.phase {
            Phase::Failed(e) => return Err(e),
            Phase::Preface => return self.recv_preface(input, out),
            _ => {}
        }
        if self.run.is_some() {
            return self.continue_run(input, out);
        }
        let Some(h) = FrameHeader::read(input) else {
            return Ok(nothing());
        };
        if h.len > self.cfg.max_frame_size {
            return Err(self.fail(E::FRAME_SIZE_ERROR, "frame too large", out));
        }
        if self.phase == Phase::FirstSettings {
            if h.kind != kind::SETTINGS || h.flags & flag::ACK != 0 {
                return Err(self.fail(E::PROTOCOL_ERROR, "expected SETTINGS first", out));
            }
            self.phase = Phase::Open;
        }
        match h.kind {
            kind::HEADERS => self.recv_headers(h, input, out),
            kind::DATA => self.start_data(h, input, out),
            kind::PUSH_PROMISE => Err(self.fail(E::PROTOCOL_ERROR, "PUSH_PROMISE refused", out)),
            kind::CONTINUATION => {
                Err(self.fail(E::PROTOCOL_ERROR, "CONTINUATION without HEADERS", out))
            }
            kind::PRIORITY
            | kind::RST_STREAM
            | kind::SETTINGS
            | kind::PING
            | kind::GOAWAY
            | kind::WINDOW_UPDATE => self.recv_control(h, input, out),
            _ => {
                self.run = Some(Run {
                    stream: 0,
                    data_left: 0,
                    pad_left: h.len,
                    end_stream: false,
                    deliver: false,
                });
                let r = self.continue_run(&input[HEADER_LEN..], out)?;
                Ok(done(HEADER_LEN + r.consumed, None))
            }
        }
    }

    fn recv_preface<'a>(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Recv<'a>, Error> {
        let n = input.len().min(frame::PREFACE.len());
        if input[..n] != frame::PREFACE[..n] {
            return Err(self.fail(E::PROTOCOL_ERROR, "invalid connection preface", out));
        }
        if n < frame::PREFACE.len() {
            return Ok(nothing());
        }
        self.phase = Phase::FirstSettings;
        Ok(done(n, None))
    }

    /// A connection error: GOAWAY, then every call fails.
    pub(super) fn fail(&mut self, code: E, reason: &'static str, out: &mut Vec<u8>) -> Error {
        let e = Error { code, reason };
        if !matches!(self.phase, Phase::Failed(_)) {
            frame::write_goaway(out, self.last_peer_stream, code, reason.as_bytes());
            self.goaway_sent = Some(self.last_peer_stream);
            self.phase = Phase::Failed(e);
        }
        e
    }

    /// Counts one protocol glitch; past the budget, a connection error.
    fn glitch(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.glitches += 1;
        if self.cfg.reset_budget > 0 && self.glitches > self.cfg.reset_budget {
            return Err(self.fail(E::ENHANCE_YOUR_CALM, "too many reset streams", out));
        }
        Ok(())
    }

    /// Counts one queued control frame.
    fn control(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.pending_control += 1;
        if self.pending_control > self.cfg.max_pending_control {
            return Err(self.fail(E::ENHANCE_YOUR_CALM, "control frame flood", out));
        }
        Ok(())
    }

    fn empty_frame(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.empty_frames += 1;
        if self.empty_frames > self.cfg.max_empty_frames {
            return Err(self.fail(E::ENHANCE_YOUR_CALM, "empty frame flood", out));
        }
        Ok(())
    }

    /// A stream error: RST_STREAM, the stream forgotten. Returns the event
    /// to report when the caller knew the stream.
    pub(super) fn stream_error(
        &mut self,
        id: u32,
        code: E,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        frame::write_rst(out, id, code);
        self.control(out)?;
        self.remember(id, Closed::Local);
        self.glitch(out)?;
        Ok(self.streams.remove(id).map(|_| Event::Reset {
            stream: id,
            code,
            remote: false,
        }))
    }

    /// The peer ended its side of `id`: the stream closes when this side
    /// has ended too.
    fn remote_ended(&mut self, id: u32) {
        if let Some(s) = self.streams.get_mut(id) {
            s.flags |= REMOTE_CLOSED;
            if s.has(LOCAL_CLOSED) {
                self.close_stream(id);
            }
        }
    }

    /// A stream completed normally: forgotten, and one glitch forgiven.
    pub(super) fn close_stream(&mut self, id: u32) {
        if self.streams.remove(id).is_some() {
            self.glitches = self.glitches.saturating_sub(1);
            self.remember(id, Closed::Normal);
        }
    }

    fn start_data<'a>(
        &mut self,
        h: FrameHeader,
        input: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<Recv<'a>, Error> {
        if h.stream == 0 {
            return Err(self.fail(E::PROTOCOL_ERROR, "DATA on stream 0", out));
        }
        let (mut hdr, mut pad) = (HEADER_LEN, 0);
        if h.flags & flag::PADDED != 0 {
            let Some(&p) = input.get(HEADER_LEN) else {
                return Ok(nothing());
            };
            if u32::from(p) >= h.len {
                return Err(self.fail(E::PROTOCOL_ERROR, "padding too long", out));
            }
            (hdr, pad) = (HEADER_LEN + 1, u32::from(p));
        }
        let data_len = h.len - (hdr - HEADER_LEN) as u32 - pad;
        let end = h.flags & flag::END_STREAM != 0;
        if h.len as i64 > i64::from(self.conn_recv_window) {
            return Err(self.fail(E::FLOW_CONTROL_ERROR, "connection window exceeded", out));
        }
        self.conn_recv_window -= h.len as i32;
        if data_len == 0 && !end {
            self.empty_frame(out)?;
        } else if data_len > 0 {
            self.empty_frames = 0;
        }
        let (deliver, event) = self.check_data(h.stream, h.len, data_len, end, out)?;
        if !deliver {
            self.release_conn(h.len, out);
        } else if h.len > data_len {
            self.release(h.stream, (h.len - data_len) as usize, out);
        }
        self.run = Some(Run {
            stream: h.stream,
            data_left: data_len,
            pad_left: pad,
            end_stream: end,
            deliver,
        });
        if event.is_some() {
            return Ok(done(hdr, event));
        }
        let r = self.continue_run(&input[hdr..], out)?;
        Ok(done(hdr + r.consumed, r.event))
    }

    /// Stream checks for a DATA frame: whether to deliver it, and the
    /// event of a stream error.
    fn check_data(
        &mut self,
        id: u32,
        flow: u32,
        data_len: u32,
        end: bool,
        out: &mut Vec<u8>,
    ) -> Result<(bool, Option<Event<'static>>), Error> {
        let Some(s) = self.streams.get_mut(id) else {
            if self.is_idle(id) {
                return Err(self.fail(E::PROTOCOL_ERROR, "DATA on idle stream", out));
            }
            return match self.closed_how(id) {
                Some(Closed::Local) => Ok((false, None)),
                Some(Closed::Remote) => Ok((false, self.stream_error(id, E::STREAM_CLOSED, out)?)),
                _ => Err(self.fail(E::STREAM_CLOSED, "DATA on closed stream", out)),
            };
        };
        let code = if s.has(REMOTE_CLOSED) {
            Some(E::STREAM_CLOSED)
        } else if !s.has(REMOTE_HEAD) {
            Some(E::PROTOCOL_ERROR)
        } else if flow as i64 > i64::from(s.recv_window) {
            Some(E::FLOW_CONTROL_ERROR)
        } else {
            s.recv_window -= flow as i32;
            if s.remaining != u64::MAX {
                match s.remaining.checked_sub(u64::from(data_len)) {
                    Some(r) if !end || r == 0 => s.remaining = r,
                    _ => s.remaining = u64::MAX - 1,
                }
            }
            (s.remaining == u64::MAX - 1).then_some(E::PROTOCOL_ERROR)
        };
        match code {
            Some(c) => Ok((false, self.stream_error(id, c, out)?)),
            None => Ok((true, None)),
        }
    }

    /// Goes on with the DATA (or skipped) frame being received.
    fn continue_run<'a>(&mut self, input: &'a [u8], out: &mut Vec<u8>) -> Result<Recv<'a>, Error> {
        let _ = out;
        let Some(mut run) = self.run else {
            return Ok(nothing());
        };
        let take = (run.data_left as usize).min(input.len());
        let data = &input[..take];
        run.data_left -= take as u32;
        let mut consumed = take;
        if run.data_left == 0 {
            let p = (run.pad_left as usize).min(input.len() - take);
            consumed += p;
            run.pad_left -= p as u32;
        }
        let finished = run.data_left == 0 && run.pad_left == 0;
        self.run = (!finished).then_some(run);
        let deliver = run.deliver && self.streams.get(run.stream).is_some();
        if !deliver {
            return Ok(done(consumed, None));
        }
        let end = finished && run.end_stream;
        if end {
            self.remote_ended(run.stream);
        }
        if take == 0 && !end {
            return Ok(done(consumed, None));
        }
        Ok(done(
            consumed,
            Some(Event::Data {
                stream: run.stream,
                data,
                end_stream: end,
            }),
        ))
    }

    /// HEADERS and its CONTINUATION frames, once all are in `input`.
    fn recv_headers<'a>(
        &mut self,
        h: FrameHeader,
        input: &mut [u8],
        out: &mut Vec<u8>,
    ) -> Result<Recv<'a>, Error> {
        let limit = self.cfg.max_header_block as usize;
        let first = HEADER_LEN + h.len as usize;
        if first > limit {
            return Err(self.fail(E::ENHANCE_YOUR_CALM, "header block too large", out));
        }
        let Some(payload) = input.get(HEADER_LEN..first) else {
            return Ok(nothing());
        };
        let (block_len, end_stream, end_headers, priority) = match frame::parse_payload(h, payload)
        {
            Ok(Frame::Headers {
                block,
                end_stream,
                end_headers,
                priority,
                ..
            }) => (block.len(), end_stream, end_headers, priority),
            Ok(_) => return Err(self.fail(E::INTERNAL_ERROR, "not HEADERS", out)),
            Err(e) => return Err(self.fail(e.code, e.reason, out)),
        };
        let pad_len = if h.flags & flag::PADDED != 0 { 1 } else { 0 };
        let prio_len = if priority.is_some() { 5 } else { 0 };
        let block_start = HEADER_LEN + pad_len + prio_len;
        // First pass: are all CONTINUATION frames here?
        let mut pos = first;
        let mut more = !end_headers;
        while more {
            let Some(c) = FrameHeader::read(input.get(pos..).unwrap_or_default()) else {
                if pos + HEADER_LEN > limit {
                    return Err(self.fail(E::ENHANCE_YOUR_CALM, "header block too large", out));
                }
                return Ok(nothing());
            };
            if c.kind != kind::CONTINUATION || c.stream != h.stream {
                return Err(self.fail(E::PROTOCOL_ERROR, "expected CONTINUATION", out));
            }
            if c.len > self.cfg.max_frame_size {
                return Err(self.fail(E::FRAME_SIZE_ERROR, "frame too large", out));
            }
            more = c.flags & flag::END_HEADERS == 0;
            if c.len == 0 && more {
                self.empty_frame(out)?;
            }
            pos += HEADER_LEN + c.len as usize;
            if pos > limit {
                return Err(self.fail(E::ENHANCE_YOUR_CALM, "header block too large", out));
            }
            if input.len() < pos {
                return Ok(nothing());
            }
        }
        // Second pass: move the fragments after the first one.
        let mut write = block_start + block_len;
        let mut at = first;
        while at < pos {
            let Some(c) = FrameHeader::read(&input[at..]) else {
                break;
            };
            let from = at + HEADER_LEN;
            let to = from + c.len as usize;
            input.copy_within(from..to, write);
            write += c.len as usize;
            at = to;
        }
        let block = &input[block_start..write];
        let self_dep = priority.is_some_and(|p| p.dependency == h.stream);
        let event = self.header_block(h.stream, block, end_stream, self_dep, out)?;
        Ok(done(pos, event))
    }

    /// Decodes `block` (for the table only when `use_` says so).
    fn decode(
        &mut self,
        block: &[u8],
        use_: Use,
        out: &mut Vec<u8>,
    ) -> Result<Option<Decoded>, Error> {
        let max_list = self.cfg.max_header_list_size as usize;
        let max_fields = self.cfg.max_header_fields as usize;
        let protocol_ok = self.cfg.enable_connect_protocol && self.role == Role::Server;
        let decoder = &mut self.decoder;
        let r = SCRATCH.with(|s| {
            let mut scratch = s.borrow_mut();
            let r = match use_ {
                Use::Ignore => decoder
                    .decode(block, &mut scratch, |_, _, _| {})
                    .map(|_| None),
                Use::Decode(kind) => {
                    let mut head = msg::take();
                    let mut b = Builder::new(&mut head, kind, max_list, max_fields);
                    if protocol_ok {
                        b.allow_protocol();
                    }
                    let r = decoder.decode(block, &mut scratch, |n, v, _| b.field(n, v));
                    let res = b.finish();
                    r.map(|_| Some((head, res)))
                }
            };
            if scratch.capacity() > MAX_SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            r
        });
        r.map_err(|e| {
            let _ = e;
            self.fail(E::COMPRESSION_ERROR, "header block does not decode", out)
        })
    }

    /// A whole header block on stream `id`.
    fn header_block(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        self_dep: bool,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        // Even streams are server-initiated, i.e. pushed: never accepted.
        if id.is_multiple_of(2) {
            return Err(self.fail(E::PROTOCOL_ERROR, "HEADERS on an even stream", out));
        }
        let existing = self.streams.get(id).copied();
        let kind = match existing {
            Some(s) if s.has(REMOTE_CLOSED) => {
                self.decode(block, Use::Ignore, out)?;
                return self.stream_error(id, E::STREAM_CLOSED, out);
            }
            Some(s) if s.has(REMOTE_HEAD) => {
                if !end_stream {
                    self.decode(block, Use::Ignore, out)?;
                    return self.stream_error(id, E::PROTOCOL_ERROR, out);
                }
                BlockKind::Trailers
            }
            Some(_) => BlockKind::Response,
            None if self.is_idle(id) && self.role == Role::Server => {
                return self.new_stream(id, block, end_stream, self_dep, out);
            }
            None if self.is_idle(id) => {
                return Err(self.fail(E::PROTOCOL_ERROR, "HEADERS on idle stream", out));
            }
            None => return self.headers_on_closed(id, block, out),
        };
        let Some((head, res)) = self.decode(block, Use::Decode(kind), out)? else {
            return Ok(None);
        };
        if self_dep {
            msg::give(head);
            return self.stream_error(id, E::PROTOCOL_ERROR, out);
        }
        self.deliver_head(id, kind, head, res, end_stream, out)
    }

    /// HEADERS on a stream that is neither open nor idle.
    fn headers_on_closed(
        &mut self,
        id: u32,
        block: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        match self.closed_how(id) {
            Some(Closed::Local) => {
                self.decode(block, Use::Ignore, out)?;
                Ok(None)
            }
            Some(Closed::Remote) => {
                self.decode(block, Use::Ignore, out)?;
                self.stream_error(id, E::STREAM_CLOSED, out)
            }
            Some(Closed::Normal) => {
                Err(self.fail(E::STREAM_CLOSED, "HEADERS on closed stream", out))
            }
            // Never opened, or closed long ago: a stream identifier that
            // does not increase (RFC 9113 §5.1.1).
            None => Err(self.fail(E::PROTOCOL_ERROR, "stream identifier not increasing", out)),
        }
    }

    /// HEADERS opening a stream (server role).
    fn new_stream(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        self_dep: bool,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        self.last_peer_stream = id;
        self.opened += 1;
        if self.goaway_sent.is_some_and(|last| id > last) {
            self.decode(block, Use::Ignore, out)?;
            return Ok(None);
        }
        if self.streams.len() >= self.cfg.max_concurrent_streams as usize {
            self.decode(block, Use::Ignore, out)?;
            return self.stream_error(id, E::REFUSED_STREAM, out);
        }
        let Some((head, res)) = self.decode(block, Use::Decode(BlockKind::Request), out)? else {
            return Ok(None);
        };
        if self_dep || res.is_err() {
            msg::give(head);
            self.stream_error(id, E::PROTOCOL_ERROR, out)?;
            return Ok(None);
        }
        let send = i32::try_from(self.peer.initial_window).unwrap_or(i32::MAX);
        self.streams
            .insert(Stream::new(id, self.recv_initial as i32, send));
        self.deliver_head(id, BlockKind::Request, head, res, end_stream, out)
    }

    /// Records a decoded head on its stream and reports it.
    fn deliver_head(
        &mut self,
        id: u32,
        kind: BlockKind,
        head: Head,
        res: Result<Option<u64>, Reject>,
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        let Ok(len) = res else {
            msg::give(head);
            return self.stream_error(id, E::PROTOCOL_ERROR, out);
        };
        let status = head.view(&[]).status();
        let informational = kind == BlockKind::Response && status < 200;
        let Some(s) = self.streams.get_mut(id) else {
            msg::give(head);
            return Ok(None);
        };
        let no_body = s.has(HEAD_REQUEST) || status == 204 || status == 304;
        let bad = match kind {
            _ if informational => end_stream,
            BlockKind::Trailers => s.remaining != u64::MAX && s.remaining != 0,
            _ => {
                s.flags |= REMOTE_HEAD;
                if let (Some(n), false) = (len, no_body) {
                    s.remaining = n;
                }
                end_stream && s.remaining != u64::MAX && s.remaining != 0
            }
        };
        if bad {
            msg::give(head);
            return self.stream_error(id, E::PROTOCOL_ERROR, out);
        }
        if end_stream {
            self.remote_ended(id);
        }
        Ok(Some(match kind {
            BlockKind::Trailers => Event::Trailers { stream: id, head },
            _ => Event::Head {
                stream: id,
                head,
                end_stream,
            },
        }))
    }

    /// PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE.
    fn recv_control<'a>(
        &mut self,
        h: FrameHeader,
        input: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<Recv<'a>, Error> {
        let fixed = match h.kind {
            kind::PING => Some(8),
            kind::RST_STREAM | kind::WINDOW_UPDATE => Some(4),
            _ => None,
        };
        if fixed.is_some_and(|n| n != h.len) {
            return Err(self.fail(E::FRAME_SIZE_ERROR, "wrong frame length", out));
        }
        let total = HEADER_LEN + h.len as usize;
        if total > self.cfg.max_header_block as usize {
            return Err(self.fail(E::ENHANCE_YOUR_CALM, "control frame too large", out));
        }
        let Some(payload) = input.get(HEADER_LEN..total) else {
            return Ok(nothing());
        };
        let f = match frame::parse_payload(h, payload) {
            Ok(f) => f,
            Err(e) => match e.stream {
                Some(id) => return Ok(done(total, self.stream_error(id, e.code, out)?)),
                None => return Err(self.fail(e.code, e.reason, out)),
            },
        };
        let event = match f {
            Frame::Priority { .. } => None,
            Frame::RstStream { stream, code } => self.recv_rst(stream, code, out)?,
            Frame::Settings { ack, payload } => self.recv_settings(ack, payload, out)?,
            Frame::Ping { ack, data } => self.recv_ping(ack, data, out)?,
            Frame::GoAway {
                last_stream,
                code,
                debug,
            } => {
                self.recv_goaway(last_stream);
                Some(Event::GoAway {
                    last_stream,
                    code,
                    debug,
                })
            }
            Frame::WindowUpdate { stream, increment } => {
                self.recv_window_update(stream, increment, out)?
            }
            _ => None,
        };
        Ok(done(total, event))
    }

    fn recv_rst(
        &mut self,
        id: u32,
        code: E,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        if self.is_idle(id) {
            return Err(self.fail(E::PROTOCOL_ERROR, "RST_STREAM on idle stream", out));
        }
        let Some(s) = self.streams.remove(id) else {
            return Ok(None);
        };
        self.remember(id, Closed::Remote);
        if self.role == Role::Server && !s.has(LOCAL_CLOSED) {
            self.glitch(out)?;
        }
        Ok(Some(Event::Reset {
            stream: id,
            code,
            remote: true,
        }))
    }

    fn recv_settings(
        &mut self,
        ack: bool,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        if ack {
            if self.settings_unacked == 0 {
                return Ok(None);
            }
            self.settings_unacked -= 1;
            self.our_settings_acked();
            return Ok(Some(Event::SettingsAcked));
        }
        for (id, v) in frame::settings(payload) {
            self.apply_setting(id, v, out)?;
        }
        frame::write_settings_ack(out);
        self.control(out)?;
        Ok(Some(Event::Settings))
    }

    /// This side's settings now bind the peer.
    fn our_settings_acked(&mut self) {
        let new = self.cfg.initial_window_size;
        let delta = i64::from(new) - i64::from(self.recv_initial);
        if delta != 0 {
            for s in self.streams.iter_mut() {
                let w = (i64::from(s.recv_window) + delta)
                    .clamp(i64::from(i32::MIN), i64::from(i32::MAX));
                s.recv_window = w as i32;
            }
            self.recv_initial = new;
        }
        self.decoder
            .set_max_allowed(self.cfg.header_table_size as usize);
    }

    fn apply_setting(&mut self, id: u16, v: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        use frame::setting as s;
        match id {
            s::HEADER_TABLE_SIZE => self.encoder.set_peer_max(v as usize),
            s::ENABLE_PUSH if v > 1 || (v == 1 && self.role == Role::Client) => {
                return Err(self.fail(E::PROTOCOL_ERROR, "invalid SETTINGS_ENABLE_PUSH", out));
            }
            s::MAX_CONCURRENT_STREAMS => self.peer.max_concurrent = v,
            s::INITIAL_WINDOW_SIZE => {
                if v > MAX_WINDOW {
                    return Err(self.fail(E::FLOW_CONTROL_ERROR, "initial window too large", out));
                }
                let delta = i64::from(v) - i64::from(self.peer.initial_window);
                let max = self
                    .streams
                    .iter()
                    .map(|st| i64::from(st.send_window))
                    .max();
                if max.is_some_and(|m| m + delta > i64::from(MAX_WINDOW)) {
                    return Err(self.fail(E::FLOW_CONTROL_ERROR, "window overflow", out));
                }
                for st in self.streams.iter_mut() {
                    let w = i64::from(st.send_window) + delta;
                    st.send_window = w.max(i64::from(i32::MIN)) as i32;
                }
                self.peer.initial_window = v;
            }
            s::MAX_FRAME_SIZE => {
                if !(frame::DEFAULT_MAX_FRAME_SIZE..=frame::MAX_MAX_FRAME_SIZE).contains(&v) {
                    return Err(self.fail(
                        E::PROTOCOL_ERROR,
                        "invalid SETTINGS_MAX_FRAME_SIZE",
                        out,
                    ));
                }
                self.peer.max_frame_size = v;
            }
            s::ENABLE_CONNECT_PROTOCOL => {
                if v > 1 {
                    return Err(self.fail(
                        E::PROTOCOL_ERROR,
                        "invalid ENABLE_CONNECT_PROTOCOL",
                        out,
                    ));
                }
                self.peer.enable_connect_protocol = v == 1;
            }
            _ => {}
        }
        Ok(())
    }

    fn recv_ping(
        &mut self,
        ack: bool,
        data: [u8; 8],
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        if !ack {
            frame::write_ping(out, data, true);
            self.control(out)?;
            return Ok(None);
        }
        if self.shutdown == Shutdown::Pinged && data == SHUTDOWN_PING {
            self.shutdown = Shutdown::Done;
            frame::write_goaway(out, self.last_peer_stream, E::NO_ERROR, b"");
            self.goaway_sent = Some(self.last_peer_stream);
            return Ok(None);
        }
        Ok(Some(Event::Pong { data }))
    }

    fn recv_goaway(&mut self, last: u32) {
        let last = self.goaway_recv.map_or(last, |l| l.min(last));
        self.goaway_recv = Some(last);
        let role = self.role;
        // Streams this side opened above `last` were not processed.
        self.streams
            .retain(|s| !((s.id % 2 == 1) == (role == Role::Client) && s.id > last));
    }

    fn recv_window_update(
        &mut self,
        id: u32,
        inc: u32,
        out: &mut Vec<u8>,
    ) -> Result<Option<Event<'static>>, Error> {
        if id == 0 {
            if inc == 0 {
                return Err(self.fail(E::PROTOCOL_ERROR, "WINDOW_UPDATE of 0", out));
            }
            let w = i64::from(self.conn_send_window) + i64::from(inc);
            if w > i64::from(MAX_WINDOW) {
                return Err(self.fail(E::FLOW_CONTROL_ERROR, "connection window overflow", out));
            }
            self.conn_send_window = w as i32;
            return Ok(Some(Event::WindowUpdate { stream: 0 }));
        }
        if self.is_idle(id) {
            return Err(self.fail(E::PROTOCOL_ERROR, "WINDOW_UPDATE on idle stream", out));
        }
        let Some(s) = self.streams.get_mut(id) else {
            return Ok(None);
        };
        if inc == 0 {
            return self.stream_error(id, E::PROTOCOL_ERROR, out);
        }
        let w = i64::from(s.send_window) + i64::from(inc);
        if w > i64::from(MAX_WINDOW) {
            return self.stream_error(id, E::FLOW_CONTROL_ERROR, out);
        }
        s.send_window = w as i32;
        Ok(Some(Event::WindowUpdate { stream: id }))
    }
}
