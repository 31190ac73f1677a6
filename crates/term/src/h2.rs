//! HTTP/2 connections (h2c with prior knowledge on a plain port, or `h2`
//! over TLS), on Fairlead's sans-IO codec `fairlead-h2`.
//!
//! The query string means what it means over HTTP/1 (`s`, `t`, `r`, `R`,
//! `times`), except: `k=` changes nothing (HTTP/2 has no chunked
//! encoding), and `C=1` sends a GOAWAY (NO_ERROR) right after the
//! response head: streams already open finish, no new one is accepted,
//! and the connection closes once they are done.
//!
//! Every stream is independent: a `t=` wait or a `times=` trickle on one
//! stream does not hold the others. Request bodies are read and
//! discarded, their flow-control window released as they arrive. Response
//! bodies go out as the peer's windows allow.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fairlead_h2::{Config, Conn, ErrorCode, Event};
use fairlead_http::msg::{self, Head};
use tokio::time::Instant;

use crate::conn::{pattern_block, rand_below, Shared, BLOCK, DEFAULT_PART};
use crate::query::Params;
use crate::tls::Io;
use crate::Counter;

/// Receive buffer: a whole header block (16 KiB at most) must fit.
const READ_BUF: usize = 64 << 10;
/// Output written before the body pump goes on.
const OUT_HIGH: usize = 256 << 10;
/// Largest slice handed to one `send_data` call.
const SLICE: usize = 64 << 10;
/// How long a closing connection keeps draining input.
const LINGER: Duration = Duration::from_millis(500);

/// Where a stream's response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Receiving the request (head or body).
    Request,
    /// `t=`: the response head goes out at this time.
    Wait(Instant),
    /// Sending the body: `left` bytes of the current part from `off` in
    /// the block, `parts` more parts after it; `due`: the current part
    /// waits until then (`times=`).
    Body {
        left: u64,
        off: usize,
        parts: u32,
        due: Option<Instant>,
    },
}

/// One request being answered.
#[derive(Debug)]
struct Stream {
    id: u32,
    params: Params,
    head_method: bool,
    state: State,
}

/// One HTTP/2 connection's state besides the codec.
struct H2 {
    conn: Conn,
    out: Vec<u8>,
    streams: Vec<Stream>,
    shared: Arc<Shared>,
    counter: Arc<Counter>,
    /// Reused response head.
    resp: Head,
}

/// Serves one HTTP/2 connection. `initial`: bytes already read from the
/// socket (the client preface, when it was sniffed on a plain port).
pub(crate) async fn serve(mut io: Io, initial: &[u8], shared: Arc<Shared>, counter: Arc<Counter>) {
    let mut out = Vec::with_capacity(16 << 10);
    let conn = Conn::server(Config::default(), &mut out);
    let mut h = H2 {
        conn,
        out,
        streams: Vec::new(),
        shared,
        counter,
        resp: Head::default(),
    };
    let mut buf = vec![0u8; READ_BUF.max(initial.len())];
    buf[..initial.len()].copy_from_slice(initial);
    let mut len = initial.len();
    if run(&mut h, &mut io, &mut buf, &mut len).await {
        linger(&mut io).await;
    }
}

/// The connection loop. `true`: close gracefully (GOAWAY sent or
/// received and every stream done, or a connection error whose GOAWAY
/// was written); `false`: just drop the socket.
async fn run(h: &mut H2, io: &mut Io, buf: &mut [u8], len: &mut usize) -> bool {
    loop {
        let failed = !h.receive(buf, len);
        loop {
            h.pump();
            if h.out.is_empty() {
                break;
            }
            if io.write_all(&h.out).await.is_err() {
                return false;
            }
            h.out.clear();
            h.conn.flushed();
        }
        if failed || h.conn.is_done() {
            return true;
        }
        if *len == buf.len() {
            return false;
        }
        let next = h.streams.iter().filter_map(|s| s.due()).min();
        let got = match next {
            Some(t) => tokio::select! {
                r = io.read(&mut buf[*len..]) => Some(r),
                _ = tokio::time::sleep_until(t) => None,
            },
            None => Some(io.read(&mut buf[*len..]).await),
        };
        match got {
            None => {}
            Some(Ok(0)) | Some(Err(_)) => return false,
            Some(Ok(n)) => *len += n,
        }
    }
}

impl Stream {
    /// When this stream wants to be woken up.
    fn due(&self) -> Option<Instant> {
        match self.state {
            State::Wait(t) => Some(t),
            State::Body { due, .. } => due,
            State::Request => None,
        }
    }
}

impl H2 {
    /// Processes the buffered input; keeps the unconsumed rest at the
    /// front. `false` on a connection error (its GOAWAY is in `out`).
    fn receive(&mut self, buf: &mut [u8], len: &mut usize) -> bool {
        let mut pos = 0;
        let ok = loop {
            let Some(input) = buf.get_mut(pos..*len) else {
                break false;
            };
            match self.conn.recv(input, &mut self.out) {
                Ok(r) => {
                    let idle = r.consumed == 0 && r.event.is_none();
                    pos += r.consumed;
                    if let Some(e) = r.event {
                        self.on_event(e);
                    }
                    if idle {
                        break true;
                    }
                }
                Err(_) => break false,
            }
        };
        buf.copy_within(pos..*len, 0);
        *len -= pos;
        ok
    }

    fn on_event(&mut self, e: Event<'_>) {
        match e {
            Event::Head {
                stream,
                head,
                end_stream,
            } => {
                let v = head.view(&[]);
                let s = Stream {
                    id: stream,
                    params: Params::from_target(v.target()),
                    head_method: v.method() == b"HEAD",
                    state: State::Request,
                };
                msg::give(head);
                self.streams.push(s);
                if end_stream {
                    self.request_done(stream);
                }
            }
            Event::Data {
                stream,
                data,
                end_stream,
            } => {
                self.conn.release(stream, data.len(), &mut self.out);
                if end_stream {
                    self.request_done(stream);
                }
            }
            Event::Trailers { stream, head } => {
                msg::give(head);
                self.request_done(stream);
            }
            Event::Reset { stream, .. } => self.streams.retain(|s| s.id != stream),
            _ => {}
        }
    }

    /// The request on `id` is complete: answer now or after `t=`.
    fn request_done(&mut self, id: u32) {
        let Some(i) = self.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let p = self.streams[i].params;
        if p.wait_ms > 0 && p.times == 0 {
            self.streams[i].state = State::Wait(Instant::now() + Duration::from_millis(p.wait_ms));
        } else {
            self.respond(i);
        }
    }

    /// Sends the response head of stream `i` and sets up its body (or
    /// forgets it when there is none).
    fn respond(&mut self, i: usize) {
        let Some(s) = self.streams.get(i) else {
            return;
        };
        let (id, p, head_method) = (s.id, s.params, s.head_method);
        self.counter.requests.fetch_add(1, Ordering::Relaxed);
        let status = p.status();
        let no_body = status == 204 || status == 304;
        let len = p.size.unwrap_or(self.shared.default_body().len() as u64);
        let r = &mut self.resp;
        r.start_response(status, None, 20);
        if !no_body && p.times == 0 {
            r.append_field(b"content-length", len.to_string().as_bytes());
        }
        let ctype: &[u8] = if p.random {
            b"application/octet-stream"
        } else {
            b"text/plain"
        };
        r.append_field(b"content-type", ctype);
        if let Some(name) = self.shared.name() {
            r.append_field(b"x-served-by", name);
        }
        let body = if no_body || head_method {
            None
        } else if p.times > 0 {
            let part = p.size.unwrap_or(DEFAULT_PART);
            Some((part, p.times - 1, Some(self.part_due(&p))))
        } else if len > 0 {
            Some((len, 0, None))
        } else {
            None
        };
        let sent = self
            .conn
            .send_response(id, &self.resp, &[], body.is_none(), &mut self.out);
        if p.close {
            self.conn.goaway(ErrorCode::NO_ERROR, &mut self.out);
        }
        match (sent, body) {
            (Ok(()), Some((left, parts, due))) => {
                self.streams[i].state = State::Body {
                    left,
                    off: 0,
                    parts,
                    due,
                };
            }
            _ => {
                self.streams.swap_remove(i);
            }
        }
    }

    /// When the next `times=` part goes out.
    fn part_due(&self, p: &Params) -> Instant {
        Instant::now() + Duration::from_millis(rand_below(p.wait_ms.saturating_add(1)))
    }

    /// Sends what is due and what the windows allow, until `out` holds
    /// [`OUT_HIGH`] bytes.
    fn pump(&mut self) {
        let now = Instant::now();
        let mut i = 0;
        while i < self.streams.len() && self.out.len() < OUT_HIGH {
            match self.streams[i].state {
                State::Request => i += 1,
                State::Wait(t) if t > now => i += 1,
                // respond() keeps the stream at `i` (now sending its body)
                // or swaps another one there: look at `i` again.
                State::Wait(_) => self.respond(i),
                State::Body { .. } => {
                    if self.send_body(i, now) {
                        self.streams.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }

    /// Sends body bytes of stream `i`; `true` when its response is done
    /// (or it cannot go on).
    fn send_body(&mut self, i: usize, now: Instant) -> bool {
        let s = &mut self.streams[i];
        let p = s.params;
        let State::Body {
            mut left,
            mut off,
            mut parts,
            mut due,
        } = s.state
        else {
            return false;
        };
        let id = s.id;
        let done = loop {
            if due.is_some_and(|t| t > now) || self.out.len() >= OUT_HIGH {
                break false;
            }
            due = None;
            if left == 0 {
                if parts == 0 {
                    let _ = self.conn.send_data(id, &[], true, &mut self.out);
                    break true;
                }
                parts -= 1;
                left = p.size.unwrap_or(DEFAULT_PART);
                off = 0;
                due = Some(self.part_due(&p));
                continue;
            }
            let cap = self.conn.send_capacity(id);
            if cap == 0 {
                break false;
            }
            let src: &[u8] = match (p.size, p.random) {
                (None, _) => self.shared.default_body(),
                (Some(_), true) => crate::conn::random_block(),
                (Some(_), false) => pattern_block(),
            };
            let avail = src.len().saturating_sub(off);
            let n = (left.min(avail as u64) as usize).min(cap).min(SLICE);
            let Some(data) = src.get(off..off + n) else {
                break true;
            };
            let end = n as u64 == left && parts == 0;
            match self.conn.send_data(id, data, end, &mut self.out) {
                Ok(taken) => {
                    left -= taken as u64;
                    off = (off + taken) % src.len().clamp(1, BLOCK);
                    if end && taken == n {
                        break true;
                    }
                    if taken == 0 {
                        break false;
                    }
                }
                Err(_) => break true,
            }
        };
        if let Some(s) = self.streams.get_mut(i) {
            s.state = State::Body {
                left,
                off,
                parts,
                due,
            };
        }
        done
    }
}

/// Half-closes and drains input for a moment, so that unread bytes do not
/// turn the close into a reset.
async fn linger(io: &mut Io) {
    let _ = io.flush().await;
    let _ = io.shutdown().await;
    let _ = tokio::time::timeout(LINGER, async {
        let mut sink = [0u8; 4096];
        loop {
            match io.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
}
