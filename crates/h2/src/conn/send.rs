//! Sending: heads, trailers and body within the flow-control windows,
//! window releases, resets, PING and GOAWAY (immediate or graceful).

use fairlead_http::msg::Head;

use super::stream::{Stream, HEAD_REQUEST, LOCAL_CLOSED, LOCAL_HEAD, REMOTE_CLOSED};
use super::{Closed, Conn, Phase, Role, SendError, Shutdown, SHUTDOWN_PING};
use crate::frame::{self, flag, kind, HEADER_LEN, MAX_WINDOW};
use crate::head::{encode_request, encode_response, encode_trailers};
use crate::ErrorCode;

/// A stream's pending releases are announced once they reach this share
/// of its window (1/2: HAProxy's and h2's policy).
const UPDATE_DIVISOR: u32 = 2;

impl Conn {
    fn usable(&self) -> Result<(), SendError> {
        match self.phase {
            Phase::Failed(_) => Err(SendError::GoingAway),
            _ => Ok(()),
        }
    }

    /// Client role: opens a stream with this request head (`buf`: the
    /// buffer the head was filled from, `&[]` for an arena-only head).
    /// Returns the new stream's identifier.
    pub fn send_request(
        &mut self,
        head: &Head,
        buf: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<u32, SendError> {
        self.usable()?;
        if self.role != Role::Client {
            return Err(SendError::Invalid);
        }
        if self.is_going_away() || self.next_local_stream > MAX_WINDOW {
            return Err(SendError::GoingAway);
        }
        if self.streams.len() >= self.peer.max_concurrent as usize {
            return Err(SendError::TooManyStreams);
        }
        let id = self.next_local_stream;
        self.next_local_stream += 2;
        let send = i32::try_from(self.peer.initial_window).unwrap_or(i32::MAX);
        let mut s = Stream::new(id, self.recv_initial as i32, send);
        s.flags = LOCAL_HEAD;
        if head.view(buf).method() == b"HEAD" {
            s.flags |= HEAD_REQUEST;
        }
        self.streams.insert(s);
        let at = out.len();
        encode_request(&mut self.encoder, head, buf, reserve_header(out));
        self.frame_block(out, at, id, end_stream);
        if end_stream {
            self.local_ended(id);
        }
        Ok(id)
    }

    /// Server role: sends a response head on `stream` (1xx heads may come
    /// before the final one).
    pub fn send_response(
        &mut self,
        stream: u32,
        head: &Head,
        buf: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        self.usable()?;
        if self.role != Role::Server {
            return Err(SendError::Invalid);
        }
        let s = self.sendable(stream)?;
        if s.has(LOCAL_HEAD) {
            return Err(SendError::Invalid);
        }
        let informational = head.view(buf).status() < 200;
        if informational && end_stream {
            return Err(SendError::Invalid);
        }
        if !informational {
            if let Some(s) = self.streams.get_mut(stream) {
                s.flags |= LOCAL_HEAD;
            }
        }
        let at = out.len();
        encode_response(&mut self.encoder, head, buf, reserve_header(out));
        self.frame_block(out, at, stream, end_stream);
        if end_stream {
            self.local_ended(stream);
        }
        Ok(())
    }

    /// Sends trailers on `stream` (ends this side of it): the head's
    /// fields only.
    pub fn send_trailers(
        &mut self,
        stream: u32,
        head: &Head,
        buf: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        self.usable()?;
        if !self.sendable(stream)?.has(LOCAL_HEAD) {
            return Err(SendError::Invalid);
        }
        let at = out.len();
        encode_trailers(&mut self.encoder, head, buf, reserve_header(out));
        self.frame_block(out, at, stream, true);
        self.local_ended(stream);
        Ok(())
    }

    /// The body bytes this side may send on `stream` now: the smaller of
    /// the stream's and the connection's send windows (0 for a stream that
    /// cannot send).
    pub fn send_capacity(&self, stream: u32) -> usize {
        match self.streams.get(stream) {
            Some(s) if !s.has(LOCAL_CLOSED) && s.has(LOCAL_HEAD) => {
                s.send_window.min(self.conn_send_window).max(0) as usize
            }
            _ => 0,
        }
    }

    /// Sends as much of `data` as the windows allow, in frames of the
    /// peer's maximum size; returns how much was taken. `end_stream` ends
    /// the stream only if all of `data` was taken (an empty `data` with
    /// `end_stream` sends an empty DATA frame with END_STREAM).
    pub fn send_data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<usize, SendError> {
        self.usable()?;
        if !self.sendable(stream)?.has(LOCAL_HEAD) {
            return Err(SendError::Invalid);
        }
        let n = self.send_capacity(stream).min(data.len());
        let max = self.peer.max_frame_size as usize;
        let all = n == data.len();
        let mut chunks = data[..n].chunks(max).peekable();
        if n == 0 && all && end_stream {
            frame::write_data(out, stream, &[], true);
        }
        while let Some(c) = chunks.next() {
            let last = chunks.peek().is_none();
            frame::write_data(out, stream, c, last && all && end_stream);
        }
        self.conn_send_window -= n as i32;
        if let Some(s) = self.streams.get_mut(stream) {
            s.send_window -= n as i32;
        }
        if all && end_stream {
            self.local_ended(stream);
        }
        Ok(n)
    }

    /// The caller is done with `n` received body bytes of `stream` (it
    /// forwarded them): once half a window is released, WINDOW_UPDATE
    /// frames go out for the stream and the connection. A stream that is
    /// gone only releases the connection window.
    pub fn release(&mut self, stream: u32, n: usize, out: &mut Vec<u8>) {
        let n = u32::try_from(n).unwrap_or(MAX_WINDOW).min(MAX_WINDOW);
        if let Some(s) = self.streams.get_mut(stream) {
            if !s.has(REMOTE_CLOSED) {
                s.recv_pending = s.recv_pending.saturating_add(n);
                let room = (MAX_WINDOW as i64 - i64::from(s.recv_window)).max(0) as u32;
                let pending = s.recv_pending.min(room);
                if pending > 0 && pending >= self.recv_initial / UPDATE_DIVISOR {
                    frame::write_window_update(out, stream, pending);
                    s.recv_window += pending as i32;
                    s.recv_pending = 0;
                }
            }
        }
        self.release_conn(n, out);
    }

    pub(super) fn release_conn(&mut self, n: u32, out: &mut Vec<u8>) {
        if matches!(self.phase, Phase::Failed(_)) {
            return;
        }
        self.conn_recv_pending = self.conn_recv_pending.saturating_add(n);
        let room = (MAX_WINDOW as i64 - i64::from(self.conn_recv_window)).max(0) as u32;
        let pending = self.conn_recv_pending.min(room);
        if pending > 0 && pending >= self.cfg.connection_window_size / UPDATE_DIVISOR {
            frame::write_window_update(out, 0, pending);
            self.conn_recv_window += pending as i32;
            self.conn_recv_pending = 0;
        }
    }

    /// Resets `stream` (RST_STREAM with `code`) and forgets it; its late
    /// frames are ignored.
    pub fn reset(&mut self, stream: u32, code: ErrorCode, out: &mut Vec<u8>) {
        if matches!(self.phase, Phase::Failed(_)) || self.is_idle(stream) || stream == 0 {
            return;
        }
        if self.streams.remove(stream).is_some() {
            frame::write_rst(out, stream, code);
            self.remember(stream, Closed::Local);
        }
    }

    /// Sends a PING; its answer comes as [`super::Event::Pong`].
    pub fn ping(&mut self, data: [u8; 8], out: &mut Vec<u8>) {
        if !matches!(self.phase, Phase::Failed(_)) {
            frame::write_ping(out, data, false);
        }
    }

    /// Sends GOAWAY at once with the last stream the peer opened: streams
    /// up to it go on, no new one is accepted.
    pub fn goaway(&mut self, code: ErrorCode, out: &mut Vec<u8>) {
        if matches!(self.phase, Phase::Failed(_)) {
            return;
        }
        let last = self.last_peer_stream;
        frame::write_goaway(out, last, code, b"");
        self.goaway_sent = Some(self.goaway_sent.map_or(last, |l| l.min(last)));
        self.shutdown = Shutdown::Done;
    }

    /// Graceful shutdown in two steps (RFC 9113 §6.8): a GOAWAY with the
    /// largest stream identifier and a PING now; when the PING's answer
    /// arrives, the final GOAWAY with the last stream the peer opened
    /// (streams that were in flight are not lost). [`Conn::is_done`]
    /// tells when to close.
    pub fn shutdown(&mut self, out: &mut Vec<u8>) {
        if matches!(self.phase, Phase::Failed(_)) || self.shutdown != Shutdown::None {
            return;
        }
        frame::write_goaway(out, MAX_WINDOW, ErrorCode::NO_ERROR, b"");
        frame::write_ping(out, SHUTDOWN_PING, false);
        self.goaway_sent = Some(MAX_WINDOW);
        self.shutdown = Shutdown::Pinged;
    }

    /// The stream, if this side may still send on it.
    fn sendable(&self, stream: u32) -> Result<Stream, SendError> {
        match self.streams.get(stream) {
            Some(s) if !s.has(LOCAL_CLOSED) => Ok(*s),
            _ => Err(SendError::StreamClosed),
        }
    }

    /// This side ended `id`.
    fn local_ended(&mut self, id: u32) {
        if let Some(s) = self.streams.get_mut(id) {
            s.flags |= LOCAL_CLOSED;
            if s.has(REMOTE_CLOSED) {
                self.close_stream(id);
            }
        }
    }

    /// Turns the block encoded after the reserved header at `at` into a
    /// HEADERS frame and, past the peer's frame size, CONTINUATION
    /// frames.
    fn frame_block(&self, out: &mut Vec<u8>, at: usize, stream: u32, end_stream: bool) {
        let max = self.peer.max_frame_size as usize;
        let len = out.len() - at - HEADER_LEN;
        let es = if end_stream { flag::END_STREAM } else { 0 };
        if len <= max {
            set_header(out, at, len, kind::HEADERS, es | flag::END_HEADERS, stream);
            return;
        }
        // Rare: split. The tail is copied once.
        let tail = out.split_off(at + HEADER_LEN + max);
        set_header(out, at, max, kind::HEADERS, es, stream);
        let mut chunks = tail.chunks(max).peekable();
        while let Some(c) = chunks.next() {
            let f = if chunks.peek().is_none() {
                flag::END_HEADERS
            } else {
                0
            };
            frame::write_header(out, c.len(), kind::CONTINUATION, f, stream);
            out.extend_from_slice(c);
        }
    }
}

fn reserve_header(out: &mut Vec<u8>) -> &mut Vec<u8> {
    out.extend_from_slice(&[0; HEADER_LEN]);
    out
}

fn set_header(out: &mut [u8], at: usize, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    let s = (stream & MAX_WINDOW).to_be_bytes();
    let bytes = [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]];
    if let Some(dst) = out.get_mut(at..at + HEADER_LEN) {
        dst.copy_from_slice(&bytes);
    }
}
