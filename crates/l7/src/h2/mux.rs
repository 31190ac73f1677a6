//! Multiplexed HTTP/2 server connections, pooled per worker thread.
//!
//! A connection to an HTTP/2 server (`proto h2`, or TLS whose ALPN chose
//! `h2`) is driven by one local task ([`start`]) that owns the socket and
//! the client codec: it reads, feeds the codec, files each event under
//! its stream's [`Slot`], and writes what the codec and the streams
//! queued. Request exchanges (from HTTP/2 client streams or HTTP/1
//! clients) hold a [`Stream`]: they queue their head and body through it
//! (within the server's windows) and take the response head, body and
//! trailers from it, releasing body bytes to the server's window only
//! once forwarded. Nothing buffers beyond the windows: a stream's slot
//! holds at most its receive window (64 KiB).
//!
//! # Pooling and reuse
//!
//! Each worker thread keeps, per server, its open connections
//! ([`open_pooled`] looks there first). A connection takes new streams
//! while its codec may open one (the peer's
//! SETTINGS_MAX_CONCURRENT_STREAMS, no GOAWAY, stream identifiers left),
//! and until `max-reuse` + 1 streams were opened on it. Before the
//! server's first SETTINGS a new connection carries only the stream that
//! opened it. `http-reuse` (HAProxy 2.6):
//!
//! * `never`: a private connection per request, closed after it;
//! * `safe` (default): a client's first request opens its own connection
//!   (which then serves other requests); later requests share;
//! * `aggressive`: a first request may share a connection that already
//!   completed a stream;
//! * `always`: any connection with room.
//!
//! A connection with no stream closes after `timeout server` or
//! `pool-purge-delay`, whichever is shorter, and at once when more than
//! `pool-max-conn` of the server's connections are idle. It closes with
//! GOAWAY NO_ERROR once retired (`max-reuse` reached, server GOAWAY) and
//! empty.

use fairlead_backend::{Server, ServerId, TlsNames};
use fairlead_config::HttpReuse;
use fairlead_h2::{Conn as Codec, ErrorCode, Event, Recv, SendError};
use fairlead_http::msg::{self, Head};
use fairlead_net::{Conn, IoBuf};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

thread_local! {
    /// Per server: this thread's shareable HTTP/2 connections.
    static POOL: RefCell<HashMap<ServerId, Vec<Rc<Mux>>>> = RefCell::new(HashMap::new());
    /// Per server: a shareable HTTP/2 connection being opened, which
    /// other requests wait for rather than each opening its own.
    static CONNECTING: RefCell<HashMap<ServerId, Rc<Notify>>> = RefCell::new(HashMap::new());
    /// Servers whose connections negotiated HTTP/2 on this thread (an
    /// `ssl alpn h2` server is only known to speak it once one did).
    static SPOKE_H2: RefCell<std::collections::HashSet<ServerId>> = RefCell::new(Default::default());
}

/// Streams a connection takes before the server's first SETTINGS tell
/// its real limit (RFC 9113 §6.5.2 recommends allowing at least 100; a
/// lower limit refuses the excess, which is then opened elsewhere).
const ASSUMED_STREAMS: u32 = 100;

/// How long a connection's final GOAWAY may take to be written.
const CLOSE_WRITE: Duration = Duration::from_secs(1);

/// Whether `conn` to `server` speaks HTTP/2: `proto h2`, or ALPN `h2`.
pub(crate) fn speaks_h2(server: &Server, conn: &Conn) -> bool {
    server.conf.proto_h2
        || conn
            .tls_info_ref()
            .is_some_and(|i| i.alpn.as_deref() == Some(b"h2".as_slice()))
}

/// Whether requests to `server` may go over HTTP/2 (so its pool of
/// HTTP/2 connections is worth a look).
pub(crate) fn may_speak_h2(server: &Server) -> bool {
    server.conf.proto_h2 || server.conf.tls.is_some()
}

/// The connection an HTTP/2 exchange starts on, found by the connect
/// phase.
pub(crate) enum Lease {
    /// A pooled connection that had room.
    Pooled(Rc<Mux>),
    /// A new connection that negotiated HTTP/2 (with the mark that makes
    /// other requests wait for it, if this one set it).
    Fresh(Conn, Option<Connecting>),
}

impl Lease {
    /// The socket, for the log's connection fields.
    pub(crate) fn conn(&self) -> &Conn {
        match self {
            Lease::Pooled(m) => &m.conn,
            Lease::Fresh(c, _) => c,
        }
    }
}

/// The mark of a shareable HTTP/2 connection being opened to a server;
/// dropping it (once the connection is pooled, or failed) wakes the
/// requests waiting for it.
pub(crate) struct Connecting {
    srv: ServerId,
    done: Rc<Notify>,
}

impl Drop for Connecting {
    fn drop(&mut self) {
        CONNECTING.with(|c| {
            let mut c = c.borrow_mut();
            if c.get(&self.srv).is_some_and(|n| Rc::ptr_eq(n, &self.done)) {
                c.remove(&self.srv);
            }
        });
        self.done.notify_waiters();
    }
}

/// The connect phase's first step for a server that may speak HTTP/2: a
/// pooled connection with room (`Ok`), else, when another request of
/// this thread is opening a shareable one, that one once it is up
/// (waiting at most `limit`); else `Err` with the mark to hold while
/// connecting (none when this request's connection will not be shared or
/// the server is not known to speak HTTP/2).
pub(crate) async fn take_or_wait(
    server: &Server,
    reuse: HttpReuse,
    first: bool,
    limit: Option<Duration>,
) -> Result<Rc<Mux>, Option<Connecting>> {
    let known = server.conf.proto_h2 || SPOKE_H2.with(|s| s.borrow().contains(&server.conf.id));
    let mut waited = false;
    loop {
        if let Some(m) = take_for(server, reuse, first) {
            return Ok(m);
        }
        if !known || reuse == HttpReuse::Never {
            return Err(None);
        }
        let id = server.conf.id;
        let pending = CONNECTING.with(|c| c.borrow().get(&id).cloned());
        let may_wait = !first || matches!(reuse, HttpReuse::Always | HttpReuse::Aggressive);
        let Some(done) = pending.filter(|_| may_wait && !waited) else {
            let done = Rc::new(Notify::new());
            CONNECTING.with(|c| c.borrow_mut().insert(id, done.clone()));
            return Err(Some(Connecting { srv: id, done }));
        };
        let n = done.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        let r = fairlead_net::io::with_timeout(limit, "connect", async {
            n.await;
            Ok(())
        })
        .await;
        waited = true;
        if r.is_err() {
            return Err(None);
        }
    }
}

/// The names a new connection needs (owned: the exchange may need
/// another connection after the request head was borrowed mutably).
#[derive(Default)]
pub(crate) struct Names {
    pub client_sni: Option<Box<str>>,
    pub host: Option<String>,
    pub client_addrs: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    pub proxy_v2: Option<fairlead_proxyproto::V2Options>,
}

impl Names {
    pub(crate) fn of(n: TlsNames<'_>) -> Names {
        Names {
            client_sni: n.client_sni.map(Into::into),
            host: n.host.map(Into::into),
            client_addrs: n.client_addrs,
            proxy_v2: n.proxy_v2.cloned(),
        }
    }

    fn get(&self) -> TlsNames<'_> {
        TlsNames {
            client_sni: self.client_sni.as_deref(),
            host: self.host.as_deref(),
            client_addrs: self.client_addrs,
            proxy_v2: self.proxy_v2.as_ref(),
            has_data: true,
        }
    }
}

/// Where an exchange's streams go and how to reach that server again.
pub(crate) struct Route {
    pub server: std::sync::Arc<Server>,
    pub reuse: HttpReuse,
    /// The client's first request (`http-reuse safe`/`aggressive`).
    pub first: bool,
    pub names: Names,
    pub connect_timeout: Option<Duration>,
    /// `timeout server`: writes, and the idle limit.
    pub timeout: Option<Duration>,
    /// Codec settings of a new connection (`tune.h2.be.*`). Default is
    /// the codec's own; see [`Route::tuned`].
    pub codec: fairlead_h2::Config,
    /// Streams this side opens at once on one connection
    /// (`tune.h2.be.max-concurrent-streams`; the server's own limit
    /// applies too). Default is no limit of ours.
    pub max_concurrent: u32,
}

impl Route {
    pub(crate) fn new(
        server: std::sync::Arc<Server>,
        be: &fairlead_backend::Backend,
        reuse: HttpReuse,
        first: bool,
        names: Names,
    ) -> Route {
        Route {
            server,
            reuse,
            first,
            names,
            connect_timeout: be.options.timeouts.connect,
            timeout: be.options.timeouts.server,
            codec: fairlead_h2::Config::default(),
            max_concurrent: u32::MAX,
        }
    }

    /// With the codec settings of `tune.h2.*` for server connections.
    pub(crate) fn tuned(mut self, ctx: &crate::HttpCtx) -> Route {
        self.codec = super::conn::codec_config(ctx, false);
        self.max_concurrent = match ctx.front.h2.max_concurrent_streams(false) {
            0 => u32::MAX,
            n => n,
        };
        self
    }
}

/// What happened to a stream, as its exchange sees it.
pub(crate) enum Got {
    /// The final response head (1xx are dropped); true: no body follows.
    Head(Head, bool),
    /// Body bytes (release them once forwarded); true: the end.
    Data(Vec<u8>, bool),
    /// Trailers (the end).
    Trailers(Head),
    /// The stream is gone. `retryable`: the server did not process it
    /// (REFUSED_STREAM, beyond a GOAWAY's last stream, or the connection
    /// failed before any byte of the request was written).
    Gone { retryable: bool },
}

/// Why a stream is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    Refused,
    Reset,
    Failed,
}

/// A stream's received input, waiting for its exchange.
struct Slot {
    sid: u32,
    wake: Rc<Notify>,
    /// Output bytes queued before this stream's head.
    before: u64,
    head: Option<(Head, bool)>,
    data: Vec<u8>,
    /// END_STREAM seen (the data may still be waiting).
    end: bool,
    /// The end was handed to the exchange.
    delivered: bool,
    trailers: Option<Head>,
    gone: Option<Gone>,
}

struct Core {
    codec: Codec,
    out: Vec<u8>,
    /// Output bytes handed to the writer so far, and written.
    taken: u64,
    written: u64,
    streams: Vec<Slot>,
    /// The server's first SETTINGS arrived.
    settings: bool,
    /// Streams waiting for those SETTINGS to open.
    waiting: u32,
    failed: bool,
    /// No new stream (`max-reuse`, GOAWAY, too many idle, `never`).
    retiring: bool,
    opened: u32,
    completed: u32,
    /// Streams this connection may carry in all.
    max_streams: Option<u32>,
    /// [`Route::max_concurrent`].
    max_concurrent: u32,
    idle_since: Instant,
}

/// One HTTP/2 server connection; see the [module](self) docs.
pub(crate) struct Mux {
    conn: Conn,
    core: RefCell<Core>,
    /// Output was queued (the writer's wake-up).
    write: Notify,
    /// The stream set or the state changed (the closer's wake-up).
    tick: Notify,
    /// The server's first SETTINGS arrived, or the connection failed.
    settled: Notify,
    srv: ServerId,
    max_idle: Option<u32>,
}

/// Starts the task of a new HTTP/2 connection `conn` to `server`.
pub(crate) fn start(route: &Route, conn: Conn) -> Rc<Mux> {
    let mut out = Vec::new();
    let codec = Codec::client(route.codec.clone(), &mut out);
    let pool = route.server.conf.pool;
    let private = route.reuse == HttpReuse::Never;
    let max_streams = if private {
        Some(1)
    } else {
        pool.max_reuse.map(|n| n.saturating_add(1))
    };
    let m = Rc::new(Mux {
        conn,
        core: RefCell::new(Core {
            codec,
            out,
            taken: 0,
            written: 0,
            streams: Vec::new(),
            settings: false,
            waiting: 0,
            failed: false,
            retiring: false,
            opened: 0,
            completed: 0,
            max_streams,
            max_concurrent: route.max_concurrent,
            idle_since: Instant::now(),
        }),
        write: Notify::new(),
        tick: Notify::new(),
        settled: Notify::new(),
        srv: route.server.conf.id,
        max_idle: pool.max_idle,
    });
    if !private {
        POOL.with(|p| p.borrow_mut().entry(m.srv).or_default().push(m.clone()));
    }
    SPOKE_H2.with(|s| s.borrow_mut().insert(m.srv));
    let idle = match route.timeout {
        Some(t) => t.min(pool.purge_delay),
        None => pool.purge_delay,
    };
    tokio::task::spawn_local(drive(m.clone(), route.timeout, idle));
    m.write.notify_one();
    m
}

/// A pooled connection to `route`'s server that may take one more stream
/// of this request, per `http-reuse`.
pub(crate) fn take(route: &Route) -> Option<Rc<Mux>> {
    take_for(&route.server, route.reuse, route.first)
}

/// A pooled connection to `server` with room for a stream, per `reuse`
/// (`first`: the client's first request).
pub(crate) fn take_for(server: &Server, reuse: HttpReuse, first: bool) -> Option<Rc<Mux>> {
    let first_ok = |m: &Mux| match reuse {
        HttpReuse::Never => false,
        HttpReuse::Safe => !first,
        HttpReuse::Aggressive => !first || m.core.borrow().completed > 0,
        HttpReuse::Always => true,
    };
    POOL.with(|p| {
        let p = p.borrow();
        let list = p.get(&server.conf.id)?;
        // The busiest first: idle ones may then age and close.
        list.iter()
            .filter(|m| m.has_room() && first_ok(m) && server.admin.conn_fits(&m.conn))
            .max_by_key(|m| m.core.borrow().streams.len())
            .cloned()
    })
}

/// This thread's HTTP/2 connections to server `id` (for tests and
/// stats): (open, idle).
#[allow(dead_code)]
pub(crate) fn count(id: ServerId) -> (usize, usize) {
    POOL.with(|p| {
        let p = p.borrow();
        let list = p.get(&id).map(Vec::as_slice).unwrap_or_default();
        let idle = list.iter().filter(|m| m.is_idle()).count();
        (list.len(), idle)
    })
}

/// Opens a stream with `head` for `route`: on `lease` if given, else on
/// a pooled connection with room, else on a new connection. `Err`: the
/// request never left (safe to answer with an error page).
pub(crate) async fn open_stream(
    route: &Route,
    lease: Option<Lease>,
    head: &Head,
    buf: &[u8],
    end: bool,
) -> Result<Stream, fairlead_backend::ProxyError> {
    use fairlead_backend::counters::C;
    use fairlead_backend::{Cause, ProxyError};
    let m = match lease {
        Some(Lease::Pooled(m)) => Some(m),
        Some(Lease::Fresh(c, mark)) => {
            let m = start(route, c);
            drop(mark);
            Some(m)
        }
        None => None,
    };
    if let Some(m) = m {
        // A new connection's first stream does not wait for SETTINGS.
        let fresh = m.core.borrow().opened == 0 && m.core.borrow().waiting == 0;
        if fresh || m.settle(route.connect_timeout).await {
            if let Ok(s) = m.open(head, buf, end) {
                return Ok(s);
            }
        }
    }
    while let Some(m) = take(route) {
        if !m.settle(route.connect_timeout).await {
            m.core.borrow_mut().retiring = true;
            continue;
        }
        match m.open(head, buf, end) {
            Ok(s) => {
                route.server.metrics.counters.inc(C::ConnReused);
                return Ok(s);
            }
            // Full since it was taken: `take` no longer offers it.
            Err(SendError::TooManyStreams) => {}
            Err(_) => m.core.borrow_mut().retiring = true,
        }
    }
    let server = &route.server;
    let c = fairlead_backend::connect::open(server, route.connect_timeout, route.names.get())
        .await
        .map_err(|e| {
            ProxyError::connect(if e.kind() == std::io::ErrorKind::TimedOut {
                Cause::ConnectTimeout
            } else {
                Cause::ConnectFailed
            })
        })?;
    server.metrics.counters.inc(C::ConnNew);
    if !speaks_h2(server, &c) {
        return Err(ProxyError::connect(Cause::ConnectFailed));
    }
    start(route, c)
        .open(head, buf, end)
        .map_err(|_| ProxyError::connect(Cause::ConnectFailed))
}

impl Mux {
    /// The socket (for log fields).
    pub(crate) fn conn(&self) -> &Conn {
        &self.conn
    }

    fn has_room(&self) -> bool {
        let c = self.core.borrow();
        let unsettled = c.streams.len() as u32 + c.waiting;
        !c.failed
            && !c.retiring
            && (c.settings || unsettled < ASSUMED_STREAMS)
            && c.max_streams.is_none_or(|m| c.opened + c.waiting < m)
            && unsettled < c.max_concurrent
            && c.codec.can_open_stream()
    }

    /// Waits for the server's first SETTINGS (so that its concurrency
    /// limit is known) within `limit`. False: failed or too slow.
    async fn settle(&self, limit: Option<Duration>) -> bool {
        let n = self.settled.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        {
            let c = self.core.borrow();
            if c.settings || c.failed {
                return !c.failed;
            }
        }
        self.core.borrow_mut().waiting += 1;
        let r = fairlead_net::io::with_timeout(limit, "settings", async {
            n.await;
            Ok(())
        })
        .await;
        let mut c = self.core.borrow_mut();
        c.waiting = c.waiting.saturating_sub(1);
        r.is_ok() && c.settings && !c.failed
    }

    fn is_idle(&self) -> bool {
        self.core.borrow().streams.is_empty()
    }

    /// Opens a stream with this request head.
    pub(crate) fn open(
        self: &Rc<Self>,
        head: &Head,
        buf: &[u8],
        end: bool,
    ) -> Result<Stream, SendError> {
        if !self.has_room() {
            return Err(SendError::TooManyStreams);
        }
        let mut c = self.core.borrow_mut();
        let c = &mut *c;
        let before = c.taken + c.out.len() as u64;
        let sid = match c.codec.send_request(head, buf, end, &mut c.out) {
            Ok(s) => s,
            Err(e) => {
                if e == SendError::GoingAway {
                    c.retiring = true;
                }
                return Err(e);
            }
        };
        c.opened += 1;
        if c.max_streams.is_some_and(|m| c.opened >= m) {
            c.retiring = true;
        }
        let wake = Rc::new(Notify::new());
        c.streams.push(Slot {
            sid,
            wake: wake.clone(),
            before,
            head: None,
            data: Vec::new(),
            end: false,
            delivered: false,
            trailers: None,
            gone: None,
        });
        self.poke();
        Ok(Stream {
            mux: self.clone(),
            sid,
            wake,
            done: false,
        })
    }

    /// Wakes the writer and the closer.
    fn poke(&self) {
        self.write.notify_one();
        self.tick.notify_one();
    }

    /// Feeds the received bytes to the codec and files the events. False:
    /// a connection error.
    fn feed(&self, rbuf: &mut IoBuf) -> bool {
        let mut guard = self.core.borrow_mut();
        let c = &mut *guard;
        let ok = loop {
            let (consumed, event) = match c.codec.recv(rbuf.filled_mut(), &mut c.out) {
                Err(_) => break false,
                Ok(Recv {
                    consumed: 0,
                    event: None,
                }) => break true,
                Ok(Recv { consumed, event }) => (consumed, event),
            };
            if let Some(e) = event {
                c.dispatch(e);
            }
            rbuf.consume(consumed);
        };
        if !ok {
            c.fail();
        }
        let settled = c.settings || c.failed;
        drop(guard);
        if settled {
            self.settled.notify_waiters();
        }
        self.poke();
        ok
    }
}

impl Core {
    fn slot(&mut self, sid: u32) -> Option<&mut Slot> {
        self.streams.iter_mut().find(|s| s.sid == sid)
    }

    /// Files one event under its stream.
    fn dispatch(&mut self, e: Event<'_>) {
        match e {
            Event::Head {
                stream,
                head,
                end_stream,
            } => match self.slot(stream) {
                Some(s) if head.view(&[]).status() >= 200 => {
                    s.head = Some((head, end_stream));
                    s.end |= end_stream;
                    s.wake.notify_one();
                }
                _ => msg::give(head),
            },
            Event::Data {
                stream,
                data,
                end_stream,
            } => match self.slot(stream) {
                Some(s) => {
                    s.data.extend_from_slice(data);
                    s.end |= end_stream;
                    s.wake.notify_one();
                }
                None => self.codec.release(stream, data.len(), &mut self.out),
            },
            Event::Trailers { stream, head } => match self.slot(stream) {
                Some(s) => {
                    if let Some(old) = s.trailers.replace(head) {
                        msg::give(old);
                    }
                    s.end = true;
                    s.wake.notify_one();
                }
                None => msg::give(head),
            },
            Event::Reset { stream, code, .. } => {
                if let Some(s) = self.slot(stream) {
                    s.gone = Some(if code == ErrorCode::REFUSED_STREAM {
                        Gone::Refused
                    } else {
                        Gone::Reset
                    });
                    s.wake.notify_one();
                }
            }
            Event::GoAway { last_stream, .. } => {
                self.retiring = true;
                for s in self.streams.iter_mut().filter(|s| s.sid > last_stream) {
                    s.gone.get_or_insert(Gone::Refused);
                    s.wake.notify_one();
                }
            }
            Event::Settings => {
                self.settings = true;
                for s in &self.streams {
                    s.wake.notify_one();
                }
            }
            Event::WindowUpdate { stream: 0 } => {
                for s in &self.streams {
                    s.wake.notify_one();
                }
            }
            Event::WindowUpdate { stream } => {
                if let Some(s) = self.slot(stream) {
                    s.wake.notify_one();
                }
            }
            _ => {}
        }
    }

    /// The connection is unusable: every stream learns it.
    fn fail(&mut self) {
        self.failed = true;
        self.retiring = true;
        for s in &mut self.streams {
            s.gone.get_or_insert(Gone::Failed);
            s.wake.notify_one();
        }
    }
}

/// The connection task: reader, writer and closer until one ends.
async fn drive(m: Rc<Mux>, timeout: Option<Duration>, idle: Duration) {
    tokio::select! {
        _ = read_loop(&m) => {}
        _ = write_loop(&m, timeout) => {}
        _ = close_when_done(&m, idle) => {}
    }
    let out = {
        let mut c = m.core.borrow_mut();
        c.fail();
        std::mem::take(&mut c.out)
    };
    m.settled.notify_waiters();
    POOL.with(|p| {
        if let Some(list) = p.borrow_mut().get_mut(&m.srv) {
            list.retain(|x| !Rc::ptr_eq(x, &m));
        }
    });
    if !out.is_empty() {
        let _ = m.conn.write_all(&out, Some(CLOSE_WRITE)).await;
    }
    m.conn.shutdown_write();
}

async fn read_loop(m: &Mux) {
    let mut rbuf = IoBuf::new();
    loop {
        match rbuf.read_from(&m.conn, usize::MAX).await {
            Ok(n) if n > 0 => {}
            _ => return,
        }
        if !m.feed(&mut rbuf) {
            return;
        }
        rbuf.release_if_empty();
    }
}

async fn write_loop(m: &Mux, timeout: Option<Duration>) {
    let mut batch = Vec::new();
    loop {
        let queued = {
            let mut c = m.core.borrow_mut();
            std::mem::swap(&mut c.out, &mut batch);
            c.taken += batch.len() as u64;
            !batch.is_empty()
        };
        if !queued {
            m.write.notified().await;
            continue;
        }
        if m.conn.write_all(&batch, timeout).await.is_err() {
            return;
        }
        let mut c = m.core.borrow_mut();
        c.written += batch.len() as u64;
        c.codec.flushed();
        batch.clear();
    }
}

/// Returns once the connection should close (its GOAWAY queued when it
/// is a graceful close).
async fn close_when_done(m: &Mux, idle: Duration) {
    loop {
        let (empty, since) = {
            let mut c = m.core.borrow_mut();
            let c = &mut *c;
            if c.failed || c.codec.is_done() {
                return;
            }
            let empty = c.streams.is_empty();
            if empty && (c.retiring || c.codec.is_going_away()) {
                c.codec.goaway(ErrorCode::NO_ERROR, &mut c.out);
                return;
            }
            (empty, c.idle_since)
        };
        if !empty {
            m.tick.notified().await;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(since + idle) => {
                let mut c = m.core.borrow_mut();
                let c = &mut *c;
                if c.streams.is_empty() {
                    c.codec.goaway(ErrorCode::NO_ERROR, &mut c.out);
                    return;
                }
            }
            _ = m.tick.notified() => {}
        }
    }
}

/// One request's stream on a [`Mux`]. Dropping it before the exchange
/// ended resets the stream (CANCEL).
pub(crate) struct Stream {
    mux: Rc<Mux>,
    sid: u32,
    wake: Rc<Notify>,
    done: bool,
}

impl Stream {
    /// Queues body bytes within the windows; returns how many were taken
    /// (0: wait for [`Stream::changed`]).
    pub(crate) fn send_data(&self, data: &[u8], end: bool) -> Result<usize, SendError> {
        let mut c = self.mux.core.borrow_mut();
        let c = &mut *c;
        let n = c.codec.send_data(self.sid, data, end, &mut c.out)?;
        if n > 0 || end {
            self.mux.write.notify_one();
        }
        Ok(n)
    }

    /// Queues the request's trailers (ends the request).
    pub(crate) fn send_trailers(&self, head: &Head) -> Result<(), SendError> {
        let mut c = self.mux.core.borrow_mut();
        let c = &mut *c;
        c.codec.send_trailers(self.sid, head, &[], &mut c.out)?;
        self.mux.write.notify_one();
        Ok(())
    }

    /// The stream's next input, if any.
    pub(crate) fn next(&self) -> Option<Got> {
        let mut c = self.mux.core.borrow_mut();
        let written = c.written;
        let s = c.slot(self.sid)?;
        if let Some(g) = s.gone {
            let retryable = match g {
                Gone::Refused => true,
                Gone::Failed => written <= s.before,
                Gone::Reset => false,
            };
            // A response that arrived whole before the failure is still
            // delivered.
            if g != Gone::Failed || !s.end {
                return Some(Got::Gone { retryable });
            }
        }
        if let Some((h, end)) = s.head.take() {
            s.delivered |= end;
            return Some(Got::Head(h, end));
        }
        // An empty DATA frame with END_STREAM ends the stream too.
        if !s.data.is_empty() || (s.end && s.trailers.is_none() && !s.delivered) {
            let end = s.end && s.trailers.is_none();
            s.delivered |= end;
            return Some(Got::Data(std::mem::take(&mut s.data), end));
        }
        if let Some(t) = s.trailers.take() {
            return Some(Got::Trailers(t));
        }
        None
    }

    /// Waits until something changed for this stream (input, windows,
    /// the connection's state).
    pub(crate) async fn changed(&self) {
        self.wake.notified().await
    }

    /// The exchange forwarded `n` body bytes: they leave the windows.
    pub(crate) fn release(&self, n: usize) {
        let mut c = self.mux.core.borrow_mut();
        let c = &mut *c;
        c.codec.release(self.sid, n, &mut c.out);
        if !c.out.is_empty() {
            self.mux.write.notify_one();
        }
    }

    /// The exchange ended normally (both directions are complete).
    pub(crate) fn finish(&mut self) {
        self.done = true;
    }

    /// The connection carrying the stream.
    #[allow(dead_code)]
    pub(crate) fn mux(&self) -> &Rc<Mux> {
        &self.mux
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let retire_if_idle = {
            let mut c = self.mux.core.borrow_mut();
            let c = &mut *c;
            if let Some(i) = c.streams.iter().position(|s| s.sid == self.sid) {
                let s = c.streams.swap_remove(i);
                if !s.data.is_empty() {
                    c.codec.release(self.sid, s.data.len(), &mut c.out);
                }
                if let Some((h, _)) = s.head {
                    msg::give(h);
                }
                if let Some(t) = s.trailers {
                    msg::give(t);
                }
            }
            // A no-op once the codec closed the stream on both sides.
            c.codec.reset(self.sid, ErrorCode::CANCEL, &mut c.out);
            if self.done {
                c.completed += 1;
            }
            let idle = c.streams.is_empty();
            if idle {
                c.idle_since = Instant::now();
            }
            idle && !c.retiring
        };
        if retire_if_idle {
            if let Some(max) = self.mux.max_idle {
                let (_, idle) = count(self.mux.srv);
                if idle > max as usize {
                    self.mux.core.borrow_mut().retiring = true;
                }
            }
        }
        self.mux.poke();
    }
}
