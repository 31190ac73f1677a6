//! Worker threads and the HTTP/1.1 client side.
//!
//! Each worker thread runs a single-threaded tokio runtime with a `LocalSet`
//! holding one task per connection it owns. A task loops: claim a request
//! ticket (global, so `-n` is exact and `-R` is a global schedule), wait for
//! the ticket's intended send time when rate-limited, send the precomputed
//! request bytes, read and measure the response, record it.
//!
//! `https://` connections run the TLS handshake right after the TCP connect
//! and then go through [`crate::tls::TlsConn`]; the HTTP side is the same.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use crate::args::Options;
use crate::stats::{ErrKind, Hists, ThreadCounters};
use crate::tls::{self, Got, TlsConn};

/// How long in-flight requests may still complete after a stop.
const GRACE: Duration = Duration::from_secs(1);
/// Read buffer per connection; also the largest accepted response head.
const READ_BUF: usize = 64 << 10;
/// Headers parsed per response.
const MAX_HEADERS: usize = 100;

/// One URL's request, built once.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub bytes: Box<[u8]>,
    pub addr: SocketAddr,
    /// HEAD request: the response has no body.
    pub head: bool,
    /// TLS server name for `https://`, `None` for plain TCP.
    pub tls: Option<ServerName<'static>>,
}

impl Prepared {
    pub(crate) fn build(o: &Options) -> io::Result<Vec<Prepared>> {
        o.urls
            .iter()
            .map(|t| {
                let mut r = format!("{} {} HTTP/1.1\r\n", o.method, t.path);
                let has = |n: &str| o.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
                if !has("host") {
                    r.push_str(&format!("Host: {}\r\n", t.host));
                }
                for (n, v) in &o.headers {
                    r.push_str(&format!("{n}: {v}\r\n"));
                }
                if let Some(b) = &o.body {
                    if !has("content-length") && !has("transfer-encoding") {
                        r.push_str(&format!("Content-Length: {}\r\n", b.len()));
                    }
                }
                if o.close && !has("connection") {
                    r.push_str("Connection: close\r\n");
                }
                r.push_str("\r\n");
                let mut bytes = r.into_bytes();
                if let Some(b) = &o.body {
                    bytes.extend_from_slice(b);
                }
                Ok(Prepared {
                    bytes: bytes.into(),
                    addr: t.addr,
                    head: o.method.eq_ignore_ascii_case("HEAD"),
                    tls: if t.tls {
                        Some(tls::server_name(&o.tls, &t.hostname)?)
                    } else {
                        None
                    },
                })
            })
            .collect()
    }
}

/// State shared by all workers.
pub(crate) struct Shared {
    pub opts: Options,
    pub reqs: Vec<Prepared>,
    /// The same requests as HTTP/2 heads (`--h2`; empty otherwise).
    pub h2: Vec<crate::h2::H2Request>,
    /// Base TLS configuration when some URL is `https://`.
    pub tls: Option<ClientConfig>,
    pub start: Instant,
    /// Next request ticket.
    pub tickets: AtomicU64,
    /// Set (with `stop_rx` changing to true) when the run must end.
    pub stop: AtomicBool,
    pub stop_rx: watch::Receiver<bool>,
}

impl Shared {
    /// Claims the next request ticket; `None` when done.
    pub(crate) fn ticket(&self) -> Option<u64> {
        if self.stop.load(Relaxed) {
            return None;
        }
        let k = self.tickets.fetch_add(1, Relaxed);
        match self.opts.requests {
            Some(n) if k >= n => None,
            _ => Some(k),
        }
    }

    /// Intended send time of ticket `k` under `-R`.
    fn intended(&self, k: u64) -> Option<Instant> {
        let rate = self.opts.rate?;
        let off = schedule(k, rate, self.opts.rampup.as_secs_f64());
        Some(self.start + Duration::from_secs_f64(off))
    }

    /// Whether a request sent at `t` counts in the percentiles.
    pub(crate) fn after_rampup(&self, t: Instant) -> bool {
        t >= self.start + self.opts.rampup
    }
}

/// Seconds after the start at which request `k` is due, for a total `rate`
/// that ramps up linearly from 0 over `ramp` seconds: during the ramp the
/// cumulative count is `rate·t²/(2·ramp)`, then `rate·(t − ramp/2)`.
pub(crate) fn schedule(k: u64, rate: f64, ramp: f64) -> f64 {
    let k = k as f64;
    let in_ramp = rate * ramp / 2.0;
    if ramp > 0.0 && k < in_ramp {
        (2.0 * ramp * k / rate).sqrt()
    } else {
        ramp + (k - in_ramp) / rate
    }
}

/// Messages to the reporting thread.
pub(crate) enum Event {
    WorkerDone,
    Stop,
}

/// Starts one worker thread driving connections `conn_ids` (global
/// indices, used for the ramp-up and URL rotation). It returns its
/// full-run histograms.
pub(crate) fn spawn_worker(
    id: usize,
    sh: Arc<Shared>,
    tc: Arc<ThreadCounters>,
    conn_ids: Vec<usize>,
    done: mpsc::Sender<Event>,
) -> io::Result<std::thread::JoinHandle<Hists>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name(format!("load-{id}"))
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            let hists = Rc::new(RefCell::new(Hists::new()));
            local.block_on(&rt, async {
                let tls = sh
                    .tls
                    .as_ref()
                    .map(|c| tls::thread_config(c, sh.opts.tls.resume));
                let handles: Vec<_> = conn_ids
                    .into_iter()
                    .map(|i| {
                        let (sh, tc, hists, tls) =
                            (sh.clone(), tc.clone(), hists.clone(), tls.clone());
                        if sh.opts.h2 {
                            tokio::task::spawn_local(crate::h2::conn_task(sh, tc, hists, tls, i))
                        } else {
                            tokio::task::spawn_local(conn_task(sh, tc, hists, tls, i))
                        }
                    })
                    .collect();
                let all = async {
                    for h in handles {
                        let _ = h.await;
                    }
                };
                tokio::pin!(all);
                let mut stop = sh.stop_rx.clone();
                tokio::select! {
                    _ = &mut all => {}
                    _ = stop.wait_for(|s| *s) => {
                        let _ = tokio::time::timeout(GRACE, &mut all).await;
                    }
                }
            });
            // Cancel whatever is left before reading the histograms.
            drop(local);
            drop(rt);
            let h = hists.borrow().clone();
            let _ = done.send(Event::WorkerDone);
            h
        })
}

/// A completed exchange.
struct Done {
    status: u16,
    first_byte: Instant,
    keep_alive: bool,
}

/// One connection's request loop.
async fn conn_task(
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
    let mut conn: Option<Conn> = None;
    let mut seq = idx;
    while let Some(k) = sh.ticket() {
        let mut intended = sh.intended(k);
        if let Some(t) = intended {
            if t > Instant::now() {
                tokio::select! {
                    _ = tokio::time::sleep_until(t.into()) => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
                // This connection was idle and waited for the slot: any
                // lateness now is timer granularity (1 ms), not the
                // server's doing, so measure from the actual send time.
                // A slot already past when claimed keeps its intended time.
                intended = None;
            }
        }
        let req = &sh.reqs[seq % sh.reqs.len()];
        seq = seq.wrapping_add(1);
        let now = Instant::now();
        let begin = intended.unwrap_or(now);
        let fut = exchange(
            &mut conn,
            req,
            &tc,
            Handshake {
                config: tls.as_ref(),
                hists: &hists,
                record: sh.after_rampup(begin),
            },
        );
        let res = match sh.opts.timeout {
            Some(d) => match tokio::time::timeout_at((now + d).into(), fut).await {
                Ok(r) => r,
                Err(_) => Err(ErrKind::Timeout),
            },
            None => fut.await,
        };
        match res {
            Ok(d) => {
                let end = Instant::now();
                tc.responses.fetch_add(1, Relaxed);
                tc.status(d.status);
                let ttfb = d.first_byte.saturating_duration_since(begin).as_nanos() as u64;
                let ttlb = end.saturating_duration_since(begin).as_nanos() as u64;
                if let Ok(mut h) = tc.interval.lock() {
                    h.record(ttfb, ttlb);
                }
                if sh.after_rampup(begin) {
                    hists.borrow_mut().record(ttfb, ttlb);
                }
                if !d.keep_alive || sh.opts.close {
                    conn = None;
                }
            }
            Err(e) => {
                tc.error(e);
                conn = None;
            }
        }
    }
}

/// What a new `https://` connection needs for its handshake.
struct Handshake<'a> {
    config: Option<&'a Arc<ClientConfig>>,
    hists: &'a RefCell<Hists>,
    /// Record the handshake time (the request is after the ramp-up).
    record: bool,
}

/// Sends `req` on the connection in `slot` (opening one, with its TLS
/// handshake, if needed) and reads the whole response.
async fn exchange(
    slot: &mut Option<Conn>,
    req: &Prepared,
    tc: &Arc<ThreadCounters>,
    hs: Handshake<'_>,
) -> Result<Done, ErrKind> {
    if slot
        .as_ref()
        .is_some_and(|c| c.addr != req.addr || c.server_name != req.tls)
    {
        *slot = None;
    }
    let c = match slot {
        Some(c) => c,
        None => {
            let sock = TcpStream::connect(req.addr)
                .await
                .map_err(|_| ErrKind::Connect)?;
            let _ = sock.set_nodelay(true);
            tc.opened.fetch_add(1, Relaxed);
            let c = slot.insert(Conn {
                sock,
                tls: None,
                server_name: req.tls.clone(),
                addr: req.addr,
                tc: tc.clone(),
                buf: vec![0; READ_BUF].into_boxed_slice(),
                start: 0,
                end: 0,
            });
            if let (Some(name), Some(config)) = (&req.tls, hs.config) {
                let t0 = Instant::now();
                let t = TlsConn::handshake(config.clone(), name.clone(), &mut c.sock).await?;
                let ns = t0.elapsed().as_nanos() as u64;
                if t.resumed() {
                    tc.tls_resumed.fetch_add(1, Relaxed);
                } else {
                    tc.tls_full.fetch_add(1, Relaxed);
                }
                if hs.record {
                    hs.hists.borrow_mut().record_handshake(ns);
                }
                c.tls = Some(Box::new(t));
            }
            c
        }
    };
    tc.sent.fetch_add(1, Relaxed);
    c.send(&req.bytes).await?;
    c.response(req.head).await
}

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

/// A parsed response head.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    Partial,
    Bad,
    Complete {
        len: usize,
        status: u16,
        framing: Framing,
        keep_alive: bool,
    },
}

fn has_token(v: &[u8], tok: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(tok))
}

/// Parses a response head at the start of `buf`.
fn parse_head(buf: &[u8], head_req: bool) -> Head {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut hs);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(_) => return Head::Bad,
    };
    let status = r.code.unwrap_or(0);
    let mut chunked = false;
    let mut length = None;
    let mut close = false;
    let mut ka = false;
    for h in r.headers.iter() {
        let n = h.name.as_bytes();
        if n.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = has_token(h.value, b"chunked");
        } else if n.eq_ignore_ascii_case(b"content-length") {
            match std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
            {
                Some(v) => length = Some(v),
                None => return Head::Bad,
            }
        } else if n.eq_ignore_ascii_case(b"connection") {
            close |= has_token(h.value, b"close");
            ka |= has_token(h.value, b"keep-alive");
        }
    }
    let framing = if head_req || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::None
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let keep_alive = framing != Framing::Close && !close && (r.version == Some(1) || ka);
    Head::Complete {
        len,
        status,
        framing,
        keep_alive,
    }
}

/// Incremental chunked-body skipper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunks {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

impl Chunks {
    /// Consumes what it can of `data`; returns the bytes used.
    fn feed(&mut self, data: &[u8]) -> Result<usize, ErrKind> {
        let mut pos = 0;
        while *self != Chunks::Done {
            let rest = &data[pos..];
            if let Chunks::Data(n) = *self {
                let take = n.min(rest.len() as u64);
                pos += take as usize;
                if take < n {
                    *self = Chunks::Data(n - take);
                    break;
                }
                *self = Chunks::DataEnd;
                continue;
            }
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                break;
            };
            let line = rest[..nl].strip_suffix(b"\r").unwrap_or(&rest[..nl]);
            pos += nl + 1;
            *self = match *self {
                Chunks::Size => {
                    let hex = line
                        .split(|&b| b == b';')
                        .next()
                        .unwrap_or(b"")
                        .trim_ascii();
                    let s = std::str::from_utf8(hex).map_err(|_| ErrKind::Proto)?;
                    match u64::from_str_radix(s, 16) {
                        Ok(0) => Chunks::Trailer,
                        Ok(n) => Chunks::Data(n),
                        Err(_) => return Err(ErrKind::Proto),
                    }
                }
                Chunks::DataEnd if line.is_empty() => Chunks::Size,
                Chunks::DataEnd => return Err(ErrKind::Proto),
                _ if line.is_empty() => Chunks::Done,
                _ => Chunks::Trailer,
            };
        }
        Ok(pos)
    }
}

/// An open connection with its read buffer.
struct Conn {
    sock: TcpStream,
    /// TLS state (`https://`, once the handshake is done).
    tls: Option<Box<TlsConn>>,
    /// The TLS server name it was opened for (`None`: plain TCP).
    server_name: Option<ServerName<'static>>,
    addr: SocketAddr,
    tc: Arc<ThreadCounters>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.tc.closed.fetch_add(1, Relaxed);
    }
}

impl Conn {
    /// Sends a whole request.
    async fn send(&mut self, data: &[u8]) -> Result<(), ErrKind> {
        let Some(t) = &mut self.tls else {
            return self.sock.write_all(data).await.map_err(|_| ErrKind::Write);
        };
        loop {
            match t
                .send(&mut self.sock, data, &mut self.buf[self.end..])
                .await?
            {
                Got::Done => return Ok(()),
                // Early bytes from the server: kept for the response.
                Got::Plain(n) => {
                    self.end += n;
                    self.tc.bytes.fetch_add(n as u64, Relaxed);
                }
                Got::Eof => return Err(ErrKind::Write),
            }
        }
    }

    /// Reads more after the unconsumed bytes. `Ok(false)` on EOF.
    async fn fill(&mut self) -> Result<bool, ErrKind> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(ErrKind::Proto);
        }
        let n = match &mut self.tls {
            None => self
                .sock
                .read(&mut self.buf[self.end..])
                .await
                .map_err(|_| ErrKind::Read)?,
            Some(t) => match t.read(&mut self.sock, &mut self.buf[self.end..]).await? {
                Got::Plain(n) => n,
                _ => 0,
            },
        };
        self.end += n;
        self.tc.bytes.fetch_add(n as u64, Relaxed);
        Ok(n > 0)
    }

    /// Reads one complete response (skipping interim 1xx ones).
    async fn response(&mut self, head_req: bool) -> Result<Done, ErrKind> {
        let mut first_byte = (self.start < self.end).then(Instant::now);
        let (status, framing, keep_alive) = loop {
            match parse_head(&self.buf[self.start..self.end], head_req) {
                Head::Complete {
                    len,
                    status,
                    framing,
                    keep_alive,
                } => {
                    self.start += len;
                    if status == 101 {
                        return Err(ErrKind::Proto);
                    }
                    if (100..200).contains(&status) {
                        continue;
                    }
                    break (status, framing, keep_alive);
                }
                Head::Bad => return Err(ErrKind::Proto),
                Head::Partial => {
                    if !self.fill().await? {
                        return Err(ErrKind::Read);
                    }
                    first_byte.get_or_insert_with(Instant::now);
                }
            }
        };
        let first_byte = first_byte.unwrap_or_else(Instant::now);
        match framing {
            Framing::None => {}
            Framing::Length(mut left) => loop {
                let take = left.min((self.end - self.start) as u64);
                self.start += take as usize;
                left -= take;
                if left == 0 {
                    break;
                }
                if !self.fill().await? {
                    return Err(ErrKind::Read);
                }
            },
            Framing::Chunked => {
                let mut dec = Chunks::Size;
                loop {
                    self.start += dec.feed(&self.buf[self.start..self.end])?;
                    if dec == Chunks::Done {
                        break;
                    }
                    if !self.fill().await? {
                        return Err(ErrKind::Read);
                    }
                }
            }
            Framing::Close => {
                self.start = self.end;
                while self.fill().await? {
                    self.start = self.end;
                }
            }
        }
        Ok(Done {
            status,
            first_byte,
            keep_alive,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
        assert_eq!(
            h,
            Head::Complete {
                len: 38,
                status: 200,
                framing: Framing::Length(5),
                keep_alive: true
            }
        );
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true);
        assert!(matches!(
            h,
            Head::Complete {
                framing: Framing::None,
                ..
            }
        ));
        let h = parse_head(
            b"HTTP/1.0 503 X\r\nTransfer-Encoding: chunked\r\n\r\n",
            false,
        );
        assert!(matches!(
            h,
            Head::Complete {
                status: 503,
                framing: Framing::Chunked,
                keep_alive: false,
                ..
            }
        ));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false);
        assert!(matches!(
            h,
            Head::Complete {
                framing: Framing::Close,
                keep_alive: false,
                ..
            }
        ));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\n", false), Head::Partial);
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Head::Bad
        );
        assert_eq!(parse_head(b"garbage\r\n\r\n", false), Head::Bad);
    }

    #[test]
    fn chunks() {
        let body = b"3\r\nabc\r\n10;x\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\nREST";
        let mut d = Chunks::Size;
        let mut used = 0;
        for end in 1..=body.len() {
            used += d.feed(&body[used..end]).unwrap();
        }
        assert_eq!(d, Chunks::Done);
        assert_eq!(&body[used..], b"REST");
        assert!(Chunks::Size.feed(b"xyz\r\n").is_err());
    }

    #[test]
    fn rate_schedule() {
        // No ramp: evenly spaced.
        assert_eq!(schedule(0, 100.0, 0.0), 0.0);
        assert!((schedule(50, 100.0, 0.0) - 0.5).abs() < 1e-9);
        // Ramp of 2 s at 100/s: 100 requests during the ramp, then 100/s.
        assert!((schedule(100, 100.0, 2.0) - 2.0).abs() < 1e-9);
        assert!((schedule(25, 100.0, 2.0) - 1.0).abs() < 1e-9);
        assert!((schedule(200, 100.0, 2.0) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn prepared_request() {
        let mut o = Options {
            urls: vec![crate::args::Target::parse("http://127.0.0.1:1/p?q").unwrap()],
            method: "POST".into(),
            body: Some(b"xyz".to_vec()),
            close: true,
            ..Options::default()
        };
        o.headers.push(("X-A".into(), "1".into()));
        let p = Prepared::build(&o).unwrap();
        assert!(p[0].tls.is_none());
        assert_eq!(
            &*p[0].bytes,
            &b"POST /p?q HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-A: 1\r\nContent-Length: 3\r\n\
               Connection: close\r\n\r\nxyz"[..]
        );
    }
}
