//! TCP mode (`mode tcp`): the TCP side of HAProxy's rule layer, then a
//! server connection and bytes forwarded both ways.
//!
//! A TCP stream ([`serve_tcp`]) goes through HAProxy's stages in order:
//! `tcp-request content` rules of the frontend while data arrives (up to
//! `tcp-request inspect-delay`, [`inspect`]), content switching
//! (`use_backend`, [`routes`]), the backend's `tcp-request content` rules,
//! balancing and connect; the inspected bytes go to the server first, byte
//! for byte; then `tcp-response content` rules on the server's first bytes
//! (while the client's keep flowing) and the tunnel. The rule sets that
//! run before a stream exists (`tcp-request connection` right after
//! accept, `tcp-request session` after the handshakes) are
//! [`connection_rules`] and [`session_rules`], called by the runtime's
//! accept loop in both modes. [`txn`] is the rule layer's view of it all.
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
//!   when the bytes are written;
//! - with `option splice-*` ([`TunnelSplice`]), a clear-text direction
//!   moves its bytes socket to pipe to socket with `splice(2)`, a pipe
//!   taken from the pool for the occasion in the same way
//!   ([`fairlead_net::splice`]).
#![forbid(unsafe_code)]

pub mod front;
mod inspect;
mod log;
pub mod routes;
mod serve;
mod splice;
pub mod txn;
mod uid;

pub use front::{CapturedRequest, ErrorCapture, Frontend};
pub use log::{LogSetup, ServerAddrs};
pub use routes::{connection_rules, session_rules, Gate, Routes};
pub use serve::serve_tcp;
pub use splice::{SpliceMode, TunnelSplice};
pub use txn::{ConnFacts, SessState};

use fairlead_net::Conn;
use std::cell::Cell;
use std::future::Future;
use std::io::ErrorKind;
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
    /// `tcp-response content reject`.
    Denied,
    /// `tcp-response content close`: the server connection was closed,
    /// what it had sent was forwarded.
    RuleClosed,
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
    /// The server→client prelude ended the tunnel.
    Stop(TunnelEnd),
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// One direction of a tunnel: where bytes come from and go, its
/// timeouts, its byte counter and whether it may splice.
pub(crate) struct Dir<'a> {
    pub src: &'a Conn,
    pub dst: &'a Conn,
    /// Inactivity timeout before and after the other direction closed.
    pub read_idle: Option<Duration>,
    pub read_fin: Option<Duration>,
    /// How long a write may wait for room.
    pub write_idle: Option<Duration>,
    pub count: &'a Cell<u64>,
    pub splice: SpliceMode,
}

/// Forwards `src` to `dst` until EOF, then shuts `dst`'s write side
/// (half-close) and tells the other direction.
///
/// When the other direction already ended at its EOF, `dst` has been read
/// to its end and the tunnel closes both sockets next: `close()` sends the
/// FIN itself, so the `shutdown()` call is skipped (HAProxy does not shut
/// a socket whose read side is already shut either). TLS still sends its
/// `close_notify` first.
async fn pump(dir: Dir<'_>, shared: &Shared) -> PumpEnd {
    let end = copy(&dir, shared).await;
    if matches!(end, PumpEnd::Eof) {
        if !shared.half_closed.get() || dir.dst.is_tls() {
            dir.dst.shutdown_write();
        }
        shared.close_one();
    }
    end
}

/// The copy loop of [`pump`].
///
/// One deadline per direction, armed once and moved only when it fires:
/// forwarding a chunk only records the time of the activity, and a deadline
/// that fires after activity is pushed back to the last activity plus the
/// timeout. No timer, `Notify` future or selection state is built per chunk
/// (HAProxy's expiry dates work the same way: updated on activity, checked
/// when the task wakes).
///
/// Each time the source is readable, the bytes go through a pipe when the
/// direction splices and a pipe is free ([`splice::forward_spliced`]),
/// else through a pooled buffer ([`forward_ready`]).
async fn copy(dir: &Dir<'_>, shared: &Shared) -> PumpEnd {
    // Created before the flag is read: a close of the other direction from
    // here on wakes it even before its first poll.
    let mut half_close = std::pin::pin!(shared.closed_one.notified());
    let mut fin = shared.half_closed.get();
    let idle_for = |fin: bool| {
        if fin {
            dir.read_fin.or(dir.read_idle)
        } else {
            dir.read_idle
        }
    };
    let mut idle = idle_for(fin);
    let first = shared.last_activity.get() + idle.unwrap_or_default();
    let mut deadline = std::pin::pin!(tokio::time::sleep_until(first));
    let mut streamer = splice::Streamer::new(dir.splice);
    loop {
        let ready = tokio::select! {
            biased;
            r = dir.src.readable() => r.map(|_| true),
            _ = deadline.as_mut(), if idle.is_some() => Ok(false),
            // The other direction closed: re-arm with the -fin timeout.
            _ = half_close.as_mut(), if !fin => {
                fin = true;
                idle = idle_for(true);
                if let Some(d) = idle {
                    deadline.as_mut().reset(shared.last_activity.get() + d);
                }
                continue;
            }
        };
        match ready {
            Err(_) => return PumpEnd::ReadError,
            Ok(false) => {
                // Fired: a timeout unless either direction moved since the
                // deadline was set; then it moves to the new expiry.
                let due = shared.last_activity.get() + idle.unwrap_or_default();
                if Instant::now() >= due {
                    return PumpEnd::Timeout;
                }
                deadline.as_mut().reset(due);
                continue;
            }
            Ok(true) => {}
        }
        let pipe = streamer
            .splicing()
            .then(fairlead_net::splice::take)
            .flatten();
        let end = match pipe {
            Some(mut p) => {
                let end = splice::forward_spliced(dir, shared, &mut p).await;
                fairlead_net::splice::give(p);
                end
            }
            None => match forward_lent(dir, shared).await {
                Some(end) => end,
                None => forward_ready(dir, shared, &mut streamer).await,
            },
        };
        if let Some(end) = end {
            return end;
        }
    }
}

/// On the io_uring path, forwards what `src` received without copying it
/// ([`fairlead_net::UringSock::lend_from`]). `None` when nothing could be
/// lent: the caller reads and writes through a buffer, which also deals
/// with the end of the stream and errors.
async fn forward_lent(dir: &Dir<'_>, shared: &Shared) -> Option<Option<PumpEnd>> {
    let (src, dst) = dir.src.ring_pair(dir.dst)?;
    let room = fairlead_net::io::lend_room(dst, dir.write_idle, "write timeout");
    if room.await.is_err() {
        return Some(Some(PumpEnd::WriteError));
    }
    // The peer's FIN is queued behind these bytes: they leave with
    // `MSG_MORE`, and the FIN the pump sends next (once the following read
    // returns 0) goes in the same segment. Not when no shutdown follows.
    let fin = src.eof_received() && !shared.half_closed.get();
    let n = dst.lend_from(src, usize::MAX, (fin, fin));
    if n == 0 {
        return None;
    }
    shared.last_activity.set(Instant::now());
    dir.count.set(dir.count.get() + n as u64);
    Some(None)
}

/// Reads what `src` holds and writes it to `dst`, through one pooled
/// buffer taken for the occasion. `Some(end)` when the direction ended.
async fn forward_ready(
    dir: &Dir<'_>,
    shared: &Shared,
    streamer: &mut splice::Streamer,
) -> Option<PumpEnd> {
    let (src, dst, count) = (dir.src, dir.dst, dir.count);
    let mut buf = fairlead_net::pool::take();
    let end = loop {
        match src.try_read_fin(&mut buf) {
            Ok((0, _)) => break Some(PumpEnd::Eof),
            Ok((n, fin)) => {
                shared.last_activity.set(Instant::now());
                count.set(count.get() + n as u64);
                let data = buf.get(..n).unwrap_or_default();
                // The last bytes before the peer's FIN: they go out held
                // (`MSG_MORE`) and the pump's shutdown sends them with the
                // FIN in one segment, as HAProxy does when `EPOLLRDHUP`
                // comes with the data. Not when no shutdown follows.
                let more = fin && !shared.half_closed.get();
                if dst
                    .write_all_more(data, dir.write_idle, more)
                    .await
                    .is_err()
                {
                    break Some(PumpEnd::WriteError);
                }
                shared.last_activity.set(Instant::now());
                if fin {
                    break Some(PumpEnd::Eof);
                }
                streamer.record_read(n == buf.len());
                if n < buf.len() {
                    break None;
                }
                if streamer.splicing() {
                    // Bulk data: the next bytes go through a pipe.
                    break None;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break None,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break Some(PumpEnd::ReadError),
        }
    };
    fairlead_net::pool::give(buf);
    end
}

/// Forwards both directions between `client` and `server` until both are
/// closed, an error occurs, or the inactivity timeout fires.
pub async fn tunnel(client: &Conn, server: &Conn, t: &TunnelTimeouts) -> TunnelStats {
    let none = None::<std::future::Ready<ResPrelude>>;
    tunnel_with(client, server, t, TunnelSplice::default(), none).await
}

/// [`tunnel`], splicing the directions `sp` asks for (when splicing is on
/// for the process and both connections are clear text).
pub async fn tunnel_spliced(
    client: &Conn,
    server: &Conn,
    t: &TunnelTimeouts,
    sp: TunnelSplice,
) -> TunnelStats {
    let none = None::<std::future::Ready<ResPrelude>>;
    tunnel_with(client, server, t, sp, none).await
}

/// What the server→client direction did before forwarding
/// (`tcp-response content` rules): bytes it sent to the client, and
/// `Some(end)` when the tunnel must stop there.
pub(crate) type ResPrelude = (u64, Option<TunnelEnd>);

/// [`tunnel`], with `prelude` running first on the server→client
/// direction while the client→server one already forwards.
pub(crate) async fn tunnel_with<P: Future<Output = ResPrelude>>(
    client: &Conn,
    server: &Conn,
    t: &TunnelTimeouts,
    sp: TunnelSplice,
    prelude: Option<P>,
) -> TunnelStats {
    let shared = Shared {
        last_activity: Cell::new(Instant::now()),
        half_closed: Cell::new(false),
        closed_one: tokio::sync::Notify::new(),
    };
    let up = Cell::new(0u64);
    let down = Cell::new(0u64);
    // Never splice TLS (the kernel would move ciphertext), nor sockets on
    // the io_uring path (their bytes arrive in the ring's buffers).
    let epoll = client.tcp().is_some() && server.tcp().is_some();
    let sp = if client.is_tls() || server.is_tls() || !epoll {
        TunnelSplice::default()
    } else {
        sp
    };
    let c2s = pump(
        Dir {
            src: client,
            dst: server,
            read_idle: t.client,
            read_fin: t.client_fin,
            write_idle: t.server,
            count: &up,
            splice: sp.request,
        },
        &shared,
    );
    let s2c = async {
        if let Some(p) = prelude {
            let (n, end) = p.await;
            down.set(down.get() + n);
            shared.last_activity.set(Instant::now());
            if let Some(e) = end {
                return PumpEnd::Stop(e);
            }
        }
        let dir = Dir {
            src: server,
            dst: client,
            read_idle: t.server,
            read_fin: t.server_fin,
            write_idle: t.client,
            count: &down,
            splice: sp.response,
        };
        pump(dir, &shared).await
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
        (_, Some(PumpEnd::Stop(e))) => e,
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
