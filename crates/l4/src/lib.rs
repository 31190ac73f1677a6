//! TCP mode (`mode tcp`): connect to a server and forward bytes both ways.
//!
//! [`tunnel`] is also what HTTP uses after an Upgrade (WebSocket). It keeps
//! HAProxy's semantics:
//! - half-close: when one side sends FIN, the proxy shuts the other side's
//!   write direction and keeps forwarding the opposite direction;
//! - `timeout client` / `timeout server` are inactivity timeouts; a stream
//!   is closed when neither direction moved for that long (a one-way
//!   download is not cut by the idle client side);
//! - `timeout tunnel` supersedes both once set;
//! - once one direction is closed, `timeout client-fin` / `server-fin`
//!   replace the client and server timeouts when set;
//! - no buffer is held while a direction waits for data: a buffer is taken
//!   from the thread pool when the socket becomes readable and given back
//!   when the bytes are written.
#![forbid(unsafe_code)]

use fairlead_backend::{connect_server, Backend, RequestKey, TlsNames};
use fairlead_net::Conn;
use std::cell::Cell;
use std::io::{ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Timeouts of a tunnel, already resolved from frontend and backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct TunnelTimeouts {
    pub client: Option<Duration>,
    pub server: Option<Duration>,
    pub client_fin: Option<Duration>,
    pub server_fin: Option<Duration>,
}

impl TunnelTimeouts {
    /// Timeouts for a TCP-mode stream or an HTTP tunnel: `tunnel`, when
    /// set, replaces both client and server timeouts.
    pub fn new(
        client: Option<Duration>,
        server: Option<Duration>,
        tunnel: Option<Duration>,
        client_fin: Option<Duration>,
        server_fin: Option<Duration>,
    ) -> Self {
        TunnelTimeouts {
            client: tunnel.or(client),
            server: tunnel.or(server),
            client_fin,
            server_fin,
        }
    }
}

/// How a tunnel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelEnd {
    /// Both sides closed cleanly.
    Closed,
    /// Inactivity timeout.
    Timeout,
    /// The client reset or failed.
    ClientError,
    /// The server reset or failed.
    ServerError,
}

/// Bytes moved and how the tunnel ended.
#[derive(Debug, Clone, Copy)]
pub struct TunnelStats {
    pub client_to_server: u64,
    pub server_to_client: u64,
    pub end: TunnelEnd,
}

struct Shared {
    last_activity: Cell<Instant>,
    half_closed: Cell<bool>,
    /// Wakes the other direction when one closes, so that it switches to
    /// the `-fin` timeout at once.
    closed_one: tokio::sync::Notify,
}

impl Shared {
    fn close_one(&self) {
        self.half_closed.set(true);
        self.last_activity.set(Instant::now());
        self.closed_one.notify_waiters();
    }
}

enum PumpEnd {
    Eof,
    Timeout,
    ReadError,
    WriteError,
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Forwards `src` to `dst` until EOF, then shuts `dst`'s write side
/// (half-close) and tells the other direction. `read_idle` and `read_fin`
/// pick the inactivity timeout before and after the other direction closed.
async fn pump(
    src: &Conn,
    dst: &Conn,
    read_idle: Option<Duration>,
    read_fin: Option<Duration>,
    write_idle: Option<Duration>,
    shared: &Shared,
    count: &Cell<u64>,
) -> PumpEnd {
    let end = copy(src, dst, read_idle, read_fin, write_idle, shared, count).await;
    if matches!(end, PumpEnd::Eof) {
        dst.shutdown_write();
        shared.close_one();
    }
    end
}

/// The copy loop of [`pump`].
async fn copy(
    src: &Conn,
    dst: &Conn,
    read_idle: Option<Duration>,
    read_fin: Option<Duration>,
    write_idle: Option<Duration>,
    shared: &Shared,
    count: &Cell<u64>,
) -> PumpEnd {
    loop {
        let idle = if shared.half_closed.get() {
            read_fin.or(read_idle)
        } else {
            read_idle
        };
        let half_close = shared.closed_one.notified();
        let was_half_closed = shared.half_closed.get();
        let deadline = idle.map(|d| shared.last_activity.get() + d);
        let ready = tokio::select! {
            r = src.readable() => r.map(|_| true),
            _ = sleep_until(deadline) => Ok(false),
            // The other direction closed: re-arm with the -fin timeout.
            _ = half_close, if !was_half_closed => continue,
        };
        match ready {
            Err(_) => return PumpEnd::ReadError,
            Ok(false) => {
                // Timed out, unless the other direction moved meanwhile.
                let d = idle.unwrap_or_default();
                if Instant::now() >= shared.last_activity.get() + d {
                    return PumpEnd::Timeout;
                }
                continue;
            }
            Ok(true) => {}
        }
        let mut buf = fairlead_net::pool::take();
        let end = loop {
            match src.try_read(&mut buf) {
                Ok(0) => break Some(PumpEnd::Eof),
                Ok(n) => {
                    shared.last_activity.set(Instant::now());
                    count.set(count.get() + n as u64);
                    if dst.write_all(&buf[..n], write_idle).await.is_err() {
                        break Some(PumpEnd::WriteError);
                    }
                    shared.last_activity.set(Instant::now());
                    if n < buf.len() {
                        break None;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break None,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break Some(PumpEnd::ReadError),
            }
        };
        fairlead_net::pool::give(buf);
        if let Some(end) = end {
            return end;
        }
    }
}

/// Forwards both directions between `client` and `server` until both are
/// closed, an error occurs, or the inactivity timeout fires.
pub async fn tunnel(client: &Conn, server: &Conn, t: &TunnelTimeouts) -> TunnelStats {
    let shared = Shared {
        last_activity: Cell::new(Instant::now()),
        half_closed: Cell::new(false),
        closed_one: tokio::sync::Notify::new(),
    };
    let up = Cell::new(0u64);
    let down = Cell::new(0u64);
    let c2s = pump(
        client,
        server,
        t.client,
        t.client_fin,
        t.server,
        &shared,
        &up,
    );
    let s2c = pump(
        server,
        client,
        t.server,
        t.server_fin,
        t.client,
        &shared,
        &down,
    );
    // Both directions run until each finishes; an error on one side ends
    // the whole tunnel at once.
    tokio::pin!(c2s);
    tokio::pin!(s2c);
    let (mut a, mut b) = (None, None);
    while a.is_none() || b.is_none() {
        tokio::select! {
            r = &mut c2s, if a.is_none() => {
                if !matches!(r, PumpEnd::Eof) { a = Some(r); break; }
                a = Some(r);
            }
            r = &mut s2c, if b.is_none() => {
                if !matches!(r, PumpEnd::Eof) { b = Some(r); break; }
                b = Some(r);
            }
        }
    }
    let end = match (a, b) {
        (Some(PumpEnd::Timeout), _) | (_, Some(PumpEnd::Timeout)) => TunnelEnd::Timeout,
        (Some(PumpEnd::ReadError), _) | (_, Some(PumpEnd::WriteError)) => TunnelEnd::ClientError,
        (_, Some(PumpEnd::ReadError)) | (Some(PumpEnd::WriteError), _) => TunnelEnd::ServerError,
        _ => TunnelEnd::Closed,
    };
    TunnelStats {
        client_to_server: up.get(),
        server_to_client: down.get(),
        end,
    }
}

/// A frontend's logging set-up, built once at start-up.
pub struct LogSetup {
    pub logger: fairlead_log::Logger,
    pub sink: fairlead_log::SinkId,
    pub format: fairlead_log::LogFormat,
    /// `option httplog-json`.
    pub json: bool,
    /// `option dontlognull`: no log for a connection that sent nothing.
    pub dontlognull: bool,
    /// `option dontlog-normal`: log only errors.
    pub dontlog_normal: bool,
    /// `option log-separate-errors`: errors at level `err`.
    pub separate_errors: bool,
    pub pid: u32,
    pub hostname: String,
    /// No log option: HAProxy's "Connect from" line at accept time instead
    /// of a line per request.
    pub connect_only: bool,
}

impl std::fmt::Debug for LogSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSetup")
            .field("sink", &self.sink)
            .field("format", &self.format.source())
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl LogSetup {
    /// Sends the line of a finished stream or request, honouring
    /// `option dontlog-normal` and `option log-separate-errors`.
    pub fn send(&self, rec: &fairlead_log::LogRecord<'_>, json: bool) {
        let error = rec.is_error();
        if self.dontlog_normal && !error {
            return;
        }
        let level = if self.separate_errors && error {
            fairlead_log::Level::Err
        } else {
            fairlead_log::Level::Info
        };
        self.logger.log(self.sink, level, &self.format, json, rec);
    }
}

/// What a TCP stream needs from the frontend that accepted it.
#[derive(Debug, Clone)]
pub struct FrontTimeouts {
    pub client: Option<Duration>,
    pub client_fin: Option<Duration>,
    /// The frontend's traffic counters.
    pub counters: Arc<fairlead_backend::counters::Counters>,
    /// The frontend's name (logs).
    pub name: Arc<str>,
    /// Logging, when the frontend has log targets.
    pub log: Option<Arc<LogSetup>>,
    /// When the connection was accepted.
    pub accepted: std::time::SystemTime,
    /// Connections of the process and of this frontend (`%ac`, `%fc`).
    pub actconn: Arc<std::sync::atomic::AtomicU32>,
    pub feconn: Arc<std::sync::atomic::AtomicU32>,
}

/// Serves one TCP-mode client: connect to a server of `be` (with retries
/// and redispatch), then tunnel. When no server can be reached the client
/// is closed at once, as HAProxy does in TCP mode.
pub async fn serve_tcp(
    client: Conn,
    peer: std::net::SocketAddr,
    be: &Arc<Backend>,
    front: FrontTimeouts,
) -> Result<()> {
    let _ = client.set_nodelay(true);
    // TCP mode can only hash the source address.
    let key = RequestKey {
        src: be.lb_needs().src.then_some(peer.ip()),
        ..Default::default()
    };
    let start = Instant::now();
    // Copied once (the log is written after the tunnel, which borrows the
    // TLS layer mutably meanwhile); the server's SNI may come from it too.
    let tls = client.tls_info();
    let log = |term: fairlead_log::TermState,
               server: Option<&fairlead_backend::Server>,
               t: [Option<u64>; 2],
               bytes: (u64, u64),
               retries: u32| {
        let Some(setup) = front.log.as_deref().filter(|l| !l.connect_only) else {
            return;
        };
        let ms = |d: Duration| d.as_millis() as u64;
        let rec = fairlead_log::LogRecord {
            client: Some(peer),
            accept_date: front.accepted,
            frontend: &front.name,
            backend: &be.name,
            server: server.map(|s| s.name.as_str()),
            request_done: Some(0),
            queue_done: t[0],
            connect_done: t[1],
            total: ms(start.elapsed()),
            bytes_in: bytes.0,
            bytes_out: bytes.1,
            term,
            actconn: front.actconn.load(std::sync::atomic::Ordering::Relaxed),
            feconn: front.feconn.load(std::sync::atomic::Ordering::Relaxed),
            beconn: be.sessions.load(std::sync::atomic::Ordering::Relaxed),
            srv_conn: server.map_or(0, |s| s.cur.load(std::sync::atomic::Ordering::Relaxed)),
            backend_queue: be.queue.len() as u32,
            retries,
            pid: setup.pid,
            hostname: &setup.hostname,
            ssl_version: tls.as_ref().map(|t| t.version),
            ssl_cipher: tls.as_ref().map(|t| t.cipher),
            ssl_sni: tls.as_ref().and_then(|t| t.sni.as_deref()),
            ssl_resumed: tls.as_ref().map(|t| t.resumed),
            ssl_c_used: tls.as_ref().map(|t| t.peer_cert),
            ..Default::default()
        };
        if setup.dontlognull && bytes.0 == 0 {
            return;
        }
        setup.send(&rec, false);
    };
    use fairlead_log::{Phase, TermState, Who};
    let slot = match be.assign(&key, None, None).await {
        Ok(s) => s,
        Err(_) => {
            log(
                TermState::new(Who::Server, Phase::Connect),
                None,
                [None, None],
                (0, 0),
                0,
            );
            return Ok(());
        }
    };
    let queued = Some(start.elapsed().as_millis() as u64);
    let server = slot.server().clone();
    let mut attempts = 0;
    let names = TlsNames {
        client_sni: tls.as_ref().and_then(|t| t.sni.as_deref()),
        host: None,
    };
    let conn = match connect_server(be, slot, &key, &mut attempts, names).await {
        Ok(c) => c,
        Err(_) => {
            log(
                TermState::new(Who::Server, Phase::Connect),
                Some(&server),
                [queued, None],
                (0, 0),
                attempts,
            );
            return Ok(());
        }
    };
    let connected = Some(start.elapsed().as_millis() as u64);
    let bt = &be.options.timeouts;
    let t = TunnelTimeouts::new(
        front.client,
        bt.server,
        bt.tunnel,
        front.client_fin,
        bt.server_fin,
    );
    let stats = tunnel(&client, &conn.stream, &t).await;
    use fairlead_backend::counters::C;
    let srv = conn.slot.server();
    for c in [&*front.counters, &be.counters, &srv.counters] {
        c.add(C::Bin, stats.client_to_server);
        c.add(C::Bout, stats.server_to_client);
        match stats.end {
            TunnelEnd::ClientError => c.inc(C::CliAbrt),
            TunnelEnd::ServerError => c.inc(C::SrvAbrt),
            _ => {}
        }
    }
    let term = match stats.end {
        TunnelEnd::Closed => TermState::NORMAL,
        TunnelEnd::Timeout => TermState::new(Who::ClientTimeout, Phase::Data),
        TunnelEnd::ClientError => TermState::new(Who::Client, Phase::Data),
        TunnelEnd::ServerError => TermState::new(Who::Server, Phase::Data),
    };
    log(
        term,
        Some(&server),
        [queued, connected],
        (stats.client_to_server, stats.server_to_client),
        attempts,
    );
    drop(conn);
    Ok(())
}
