//! The HTTP/2 client side (`--h2`), on Fairlead's sans-IO codec
//! `fairlead-h2`.
//!
//! Each connection task keeps up to `--h2-streams` requests in flight on
//! its connection: whenever a response completes, the next ticket is
//! claimed and sent on a new stream (closed loop per stream, as h2load
//! does). `https://` negotiates `h2` in ALPN; `http://` speaks h2c with
//! prior knowledge.
//!
//! * Flow control: received body bytes are released as they arrive, so
//!   WINDOW_UPDATE frames go out as soon as half a window was read. The
//!   windows this side advertises are [`STREAM_WINDOW`] and
//!   [`CONN_WINDOW`].
//! * RST_STREAM from the server: the request counts as a `reset` error.
//! * GOAWAY: streams above its last stream were not processed; they are
//!   sent again, first thing, on the next connection (their latency still
//!   counts from the first send). Streams below it finish; then the
//!   connection is closed and a new one opened.
//! * `--timeout`: when no stream completes for that long, every request in
//!   flight counts as a `timeout` error and the connection is closed.
//! * The request (and body, if any) of a stream is written whole before
//!   the connection reads again; request bodies larger than the server's
//!   window wait for its WINDOW_UPDATE.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use fairlead_h2::{Config, Conn, Event, SendError};
use fairlead_http::msg::{self, Head, Part};
use rustls::ClientConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::args::Options;
use crate::client::Shared;
use crate::stats::{ErrKind, Hists, ThreadCounters};
use crate::tls::{Got, TlsConn};

/// SETTINGS_INITIAL_WINDOW_SIZE advertised: 1 MiB per stream.
pub const STREAM_WINDOW: u32 = 1 << 20;
/// The connection receive window: 16 MiB.
pub const CONN_WINDOW: u32 = 16 << 20;
/// Receive buffer per connection (a header block of up to 16 KiB and a
/// TLS record must fit with room to spare).
const READ_BUF: usize = 128 << 10;

/// One URL's request as an HTTP/2 head, built once.
#[derive(Debug)]
pub(crate) struct H2Request {
    pub head: Head,
    pub body: Option<Arc<[u8]>>,
}

/// Builds the request heads: `:method`, `:scheme`, `:authority` (the
/// `Host` given with `-H`, else the URL's), `:path`, then the `-H`
/// headers with lowercase names (`host` and connection-specific fields
/// left out), and `content-length` with a body.
pub(crate) fn build(o: &Options) -> Vec<H2Request> {
    let body: Option<Arc<[u8]>> = o.body.as_deref().map(Arc::from);
    o.urls
        .iter()
        .map(|t| {
            let mut h = Head::default();
            h.start_request(o.method.as_bytes(), t.path.as_bytes(), 20);
            h.set_part(Part::Scheme, if t.tls { b"https" } else { b"http" });
            let host = o
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("host"))
                .map_or(t.host.as_str(), |(_, v)| v.as_str());
            h.set_part(Part::Authority, host.as_bytes());
            let mut has_len = false;
            for (n, v) in &o.headers {
                let n = n.to_ascii_lowercase();
                if matches!(
                    n.as_str(),
                    "host" | "connection" | "keep-alive" | "proxy-connection" | "upgrade"
                ) || n == "transfer-encoding"
                {
                    continue;
                }
                has_len |= n == "content-length";
                h.append_field(n.as_bytes(), v.as_bytes());
            }
            if let (Some(b), false) = (&body, has_len) {
                h.append_field(b"content-length", b.len().to_string().as_bytes());
            }
            H2Request {
                head: h,
                body: body.clone(),
            }
        })
        .collect()
}

/// A request sent and not answered yet.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    stream: u32,
    /// Which URL (index into the requests).
    req: usize,
    /// Latency counts from here.
    begin: Instant,
    first_byte: Option<Instant>,
    status: u16,
    /// Request body bytes sent.
    body_sent: usize,
    /// The request is sent whole (END_STREAM).
    body_done: bool,
}

/// The byte stream under the codec.
struct Link {
    sock: TcpStream,
    tls: Option<Box<TlsConn>>,
    tc: Arc<ThreadCounters>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.tc.closed.fetch_add(1, Relaxed);
    }
}

/// How a connection ended.
enum End {
    /// No ticket left and nothing in flight.
    Finished,
    /// Open a new connection and go on (GOAWAY, or an error already
    /// counted against the requests in flight).
    Reconnect,
}

/// One connection slot's loop: connect, run streams, reconnect after a
/// GOAWAY or an error, until no ticket is left.
pub(crate) async fn conn_task(
    sh: Arc<Shared>,
    tc: Arc<ThreadCounters>,
    hists: Rc<RefCell<Hists>>,
    tls: Option<Arc<ClientConfig>>,
    idx: usize,
) {
    let mut stop = sh.stop_rx.clone();
    let total = sh.opts.conns.max(1) as u32;
    let ramp_at = sh.start + sh.opts.rampup * idx as u32 / total;
    if ramp_at > Instant::now() {
        tokio::select! {
            _ = tokio::time::sleep_until(ramp_at.into()) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
    let mut c = Client {
        sh: &sh,
        tc: &tc,
        hists: &hists,
        seq: idx,
        pending: Vec::new(),
    };
    loop {
        let link = match c.connect(tls.as_ref()).await {
            Ok(l) => l,
            Err(e) => {
                // The request that would have gone first fails.
                if c.pending.pop().is_some() || c.sh.ticket().is_some() {
                    tc.error(e);
                    continue;
                }
                return;
            }
        };
        match c.run(link).await {
            End::Finished => return,
            End::Reconnect => {}
        }
    }
}

/// A connection slot's state across connections.
struct Client<'a> {
    sh: &'a Shared,
    tc: &'a Arc<ThreadCounters>,
    hists: &'a RefCell<Hists>,
    /// Next URL (round-robin).
    seq: usize,
    /// Requests claimed but not (or not successfully) sent: a GOAWAY
    /// left them unprocessed, or the server's stream limit was reached.
    /// `(URL index, latency start)`; sent first.
    pending: Vec<(usize, Instant)>,
}

impl Client<'_> {
    /// TCP connect, then the TLS handshake for `https://`.
    async fn connect(&mut self, tls: Option<&Arc<ClientConfig>>) -> Result<Link, ErrKind> {
        let req = &self.sh.reqs[0];
        let sock = TcpStream::connect(req.addr)
            .await
            .map_err(|_| ErrKind::Connect)?;
        let _ = sock.set_nodelay(true);
        self.tc.opened.fetch_add(1, Relaxed);
        let mut link = Link {
            sock,
            tls: None,
            tc: self.tc.clone(),
        };
        if let (Some(name), Some(config)) = (&req.tls, tls) {
            let t0 = Instant::now();
            let t = TlsConn::handshake(config.clone(), name.clone(), &mut link.sock).await?;
            if t.alpn().is_some_and(|p| p != b"h2") {
                return Err(ErrKind::Proto);
            }
            if t.resumed() {
                self.tc.tls_resumed.fetch_add(1, Relaxed);
            } else {
                self.tc.tls_full.fetch_add(1, Relaxed);
            }
            if self.sh.after_rampup(t0) {
                self.hists
                    .borrow_mut()
                    .record_handshake(t0.elapsed().as_nanos() as u64);
            }
            link.tls = Some(Box::new(t));
        }
        Ok(link)
    }

    /// Runs one connection until it is done with.
    async fn run(&mut self, mut link: Link) -> End {
        let mut out = Vec::with_capacity(4096);
        let cfg = Config {
            initial_window_size: STREAM_WINDOW,
            connection_window_size: CONN_WINDOW,
            ..Config::default()
        };
        let mut conn = Conn::client(cfg, &mut out);
        let mut buf = vec![0u8; READ_BUF];
        let mut len = 0;
        let mut flight: Vec<InFlight> = Vec::new();
        let mut last_done = Instant::now();
        let mut no_more = false;
        loop {
            if !conn.is_going_away() && !no_more {
                no_more = !self.fill(&mut conn, &mut flight, &mut out);
            }
            pump_bodies(&self.sh.h2, &mut conn, &mut flight, &mut out);
            if !out.is_empty() {
                let before = len;
                if let Err(e) = link.write(&out, &mut buf, &mut len).await {
                    return self.fail(&mut flight, e);
                }
                out.clear();
                conn.flushed();
                if len > before {
                    // Plaintext arrived while writing (TLS): process it
                    // before waiting for more.
                    match self.receive(&mut conn, &mut buf, &mut len, &mut flight, &mut out) {
                        Ok(0) => {}
                        Ok(_) => last_done = Instant::now(),
                        Err(e) => return self.fail(&mut flight, e),
                    }
                    continue;
                }
            }
            if flight.is_empty() && (no_more || conn.is_going_away()) {
                return if no_more && self.pending.is_empty() {
                    End::Finished
                } else {
                    End::Reconnect
                };
            }
            let read = link.read(&mut buf, &mut len);
            let n = match self.sh.opts.timeout {
                Some(d) => match tokio::time::timeout_at((last_done + d).into(), read).await {
                    Ok(r) => r,
                    Err(_) => Err(ErrKind::Timeout),
                },
                None => read.await,
            };
            match n {
                Ok(0) => return self.fail(&mut flight, ErrKind::Read),
                Ok(_) => {}
                Err(e) => return self.fail(&mut flight, e),
            }
            match self.receive(&mut conn, &mut buf, &mut len, &mut flight, &mut out) {
                Ok(0) => {}
                Ok(_) => last_done = Instant::now(),
                Err(e) => {
                    // The GOAWAY the codec queued, if it can be sent.
                    let _ = link.write(&out, &mut buf, &mut len).await;
                    return self.fail(&mut flight, e);
                }
            }
        }
    }

    /// Counts every request in flight as failed with `e`.
    fn fail(&mut self, flight: &mut Vec<InFlight>, e: ErrKind) -> End {
        for _ in flight.drain(..) {
            self.tc.error(e);
        }
        End::Reconnect
    }

    /// Opens streams up to `--h2-streams`. `false` when no ticket is left.
    fn fill(&mut self, conn: &mut Conn, flight: &mut Vec<InFlight>, out: &mut Vec<u8>) -> bool {
        let reqs = &self.sh.h2;
        while flight.len() < self.sh.opts.h2_streams {
            let (req, begin) = if let Some(p) = self.pending.pop() {
                p
            } else if self.sh.ticket().is_some() {
                self.seq = self.seq.wrapping_add(1);
                (self.seq.wrapping_sub(1) % reqs.len(), Instant::now())
            } else {
                return false;
            };
            let Some(r) = reqs.get(req) else {
                return false;
            };
            match conn.send_request(&r.head, &[], r.body.is_none(), out) {
                Ok(stream) => {
                    self.tc.sent.fetch_add(1, Relaxed);
                    flight.push(InFlight {
                        stream,
                        req,
                        begin,
                        first_byte: None,
                        status: 0,
                        body_sent: 0,
                        body_done: r.body.is_none(),
                    });
                }
                Err(SendError::TooManyStreams) | Err(SendError::GoingAway) => {
                    // The server's limit: sent when a stream completes.
                    self.pending.push((req, begin));
                    return true;
                }
                Err(_) => self.tc.error(ErrKind::Proto),
            }
        }
        true
    }

    /// Processes the buffered input. Returns the requests completed, or a
    /// connection error.
    fn receive(
        &mut self,
        conn: &mut Conn,
        buf: &mut [u8],
        len: &mut usize,
        flight: &mut Vec<InFlight>,
        out: &mut Vec<u8>,
    ) -> Result<usize, ErrKind> {
        let mut pos = 0;
        let mut done = 0;
        let res = loop {
            let Some(input) = buf.get_mut(pos..*len) else {
                break Err(ErrKind::Proto);
            };
            let r = match conn.recv(input, out) {
                Ok(r) => r,
                Err(_) => break Err(ErrKind::Proto),
            };
            let idle = r.consumed == 0 && r.event.is_none();
            pos += r.consumed;
            if let Some(e) = r.event {
                done += self.on_event(conn, e, flight, out);
            }
            if idle {
                break Ok(done);
            }
        };
        buf.copy_within(pos..*len, 0);
        *len -= pos;
        res
    }

    /// Handles one event; returns 1 when it completed a request.
    fn on_event(
        &mut self,
        conn: &mut Conn,
        e: Event<'_>,
        flight: &mut Vec<InFlight>,
        out: &mut Vec<u8>,
    ) -> usize {
        let find = |flight: &mut Vec<InFlight>, id: u32| flight.iter().position(|f| f.stream == id);
        let (id, end) = match e {
            Event::Head {
                stream,
                head,
                end_stream,
            } => {
                let status = head.view(&[]).status();
                msg::give(head);
                if let Some(f) = find(flight, stream).and_then(|i| flight.get_mut(i)) {
                    f.first_byte.get_or_insert_with(Instant::now);
                    if status >= 200 {
                        f.status = status;
                    }
                }
                (stream, end_stream)
            }
            Event::Data {
                stream,
                data,
                end_stream,
            } => {
                conn.release(stream, data.len(), out);
                (stream, end_stream)
            }
            Event::Trailers { stream, head } => {
                msg::give(head);
                (stream, true)
            }
            Event::Reset { stream, .. } => {
                if let Some(i) = find(flight, stream) {
                    flight.swap_remove(i);
                    self.tc.error(ErrKind::Reset);
                }
                return 0;
            }
            Event::GoAway { last_stream, .. } => {
                // Unprocessed: sent again on the next connection.
                let mut i = 0;
                while i < flight.len() {
                    if flight[i].stream > last_stream {
                        let f = flight.swap_remove(i);
                        self.pending.push((f.req, f.begin));
                    } else {
                        i += 1;
                    }
                }
                return 0;
            }
            _ => return 0,
        };
        if !end {
            return 0;
        }
        let Some(i) = find(flight, id) else {
            return 0;
        };
        let f = flight.swap_remove(i);
        self.complete(&f);
        1
    }

    /// Records a complete response.
    fn complete(&self, f: &InFlight) {
        let end = Instant::now();
        self.tc.responses.fetch_add(1, Relaxed);
        self.tc.status(f.status);
        let first = f.first_byte.unwrap_or(end);
        let ttfb = first.saturating_duration_since(f.begin).as_nanos() as u64;
        let ttlb = end.saturating_duration_since(f.begin).as_nanos() as u64;
        if let Ok(mut h) = self.tc.interval.lock() {
            h.record(ttfb, ttlb);
        }
        if self.sh.after_rampup(f.begin) {
            self.hists.borrow_mut().record(ttfb, ttlb);
        }
    }
}

/// Sends request body bytes the windows allow.
fn pump_bodies(reqs: &[H2Request], conn: &mut Conn, flight: &mut [InFlight], out: &mut Vec<u8>) {
    for f in flight.iter_mut().filter(|f| !f.body_done) {
        let body = reqs.get(f.req).and_then(|r| r.body.as_deref());
        let rest = body.and_then(|b| b.get(f.body_sent..)).unwrap_or_default();
        match conn.send_data(f.stream, rest, true, out) {
            Ok(n) => {
                f.body_sent += n;
                f.body_done = n == rest.len();
            }
            Err(_) => f.body_done = true,
        }
    }
}

impl Link {
    /// Writes `data`; plaintext arriving meanwhile (TLS) is appended to
    /// `buf`.
    async fn write(&mut self, data: &[u8], buf: &mut [u8], len: &mut usize) -> Result<(), ErrKind> {
        let Some(t) = &mut self.tls else {
            return self.sock.write_all(data).await.map_err(|_| ErrKind::Write);
        };
        loop {
            let dst = buf.get_mut(*len..).unwrap_or_default();
            match t.send(&mut self.sock, data, dst).await? {
                Got::Done => return Ok(()),
                Got::Plain(n) => {
                    *len += n;
                    self.tc.bytes.fetch_add(n as u64, Relaxed);
                }
                Got::Eof => return Err(ErrKind::Write),
            }
        }
    }

    /// Reads more after the buffered bytes; `Ok(0)` at the end of the
    /// stream.
    async fn read(&mut self, buf: &mut [u8], len: &mut usize) -> Result<usize, ErrKind> {
        let dst = buf.get_mut(*len..).unwrap_or_default();
        if dst.is_empty() {
            return Err(ErrKind::Proto);
        }
        let n = match &mut self.tls {
            None => self.sock.read(dst).await.map_err(|_| ErrKind::Read)?,
            Some(t) => match t.read(&mut self.sock, dst).await? {
                Got::Plain(n) => n,
                _ => 0,
            },
        };
        *len += n;
        self.tc.bytes.fetch_add(n as u64, Relaxed);
        Ok(n)
    }
}

/// Checks that `--h2` can run these options.
pub(crate) fn validate(o: &Options) -> io::Result<()> {
    let bad = |m: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, m.to_string()));
    if o.rate.is_some() {
        return bad("--h2 does not support -R (open loop) yet");
    }
    if o.close {
        return bad("--h2 does not support --close");
    }
    if o.h2_streams == 0 {
        return bad("--h2-streams must be at least 1");
    }
    let first = &o.urls[0];
    if o.urls
        .iter()
        .any(|u| u.addr != first.addr || u.tls != first.tls || u.hostname != first.hostname)
    {
        return bad("--h2: every URL must use the same scheme, host and port");
    }
    Ok(())
}
