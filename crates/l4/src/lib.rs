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

use fairlead_backend::{connect_server, Backend, RequestKey};
use fairlead_net::io::write_all;
use std::cell::Cell;
use std::io::{ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
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

/// Forwards `src` to `dst` until EOF. `read_idle` and `fin_idle` pick the
/// inactivity timeout before and after the other direction closed.
async fn pump(
    src: &TcpStream,
    dst: &TcpStream,
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
            match fairlead_net::io::try_read_drain(src, &mut buf) {
                Ok(0) => break Some(PumpEnd::Eof),
                Ok(n) => {
                    shared.last_activity.set(Instant::now());
                    count.set(count.get() + n as u64);
                    if write_all(dst, &buf[..n], write_idle).await.is_err() {
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
pub async fn tunnel(client: &TcpStream, server: &TcpStream, t: &TunnelTimeouts) -> TunnelStats {
    let shared = Shared {
        last_activity: Cell::new(Instant::now()),
        half_closed: Cell::new(false),
        closed_one: tokio::sync::Notify::new(),
    };
    let up = Cell::new(0u64);
    let down = Cell::new(0u64);
    let c2s = async {
        let end = pump(
            client,
            server,
            t.client,
            t.client_fin,
            t.server,
            &shared,
            &up,
        )
        .await;
        if matches!(end, PumpEnd::Eof) {
            fairlead_net::shutdown_write(server);
            shared.close_one();
        }
        end
    };
    let s2c = async {
        let end = pump(
            server,
            client,
            t.server,
            t.server_fin,
            t.client,
            &shared,
            &down,
        )
        .await;
        if matches!(end, PumpEnd::Eof) {
            fairlead_net::shutdown_write(client);
            shared.close_one();
        }
        end
    };
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

/// What a TCP stream needs from the frontend that accepted it.
#[derive(Debug, Clone)]
pub struct FrontTimeouts {
    pub client: Option<Duration>,
    pub client_fin: Option<Duration>,
    /// The frontend's traffic counters.
    pub counters: Arc<fairlead_backend::counters::Counters>,
}

/// Serves one TCP-mode client: connect to a server of `be` (with retries
/// and redispatch), then tunnel. When no server can be reached the client
/// is closed at once, as HAProxy does in TCP mode.
pub async fn serve_tcp(
    client: TcpStream,
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
    let Ok(slot) = be.assign(&key, None, None).await else {
        return Ok(());
    };
    let mut attempts = 0;
    let conn = match connect_server(be, slot, &key, &mut attempts).await {
        Ok(c) => c,
        Err(_) => return Ok(()),
    };
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
    drop(conn);
    Ok(())
}
