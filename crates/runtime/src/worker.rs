//! One worker thread: a tokio `current_thread` runtime with a `LocalSet`,
//! its own listening sockets, its own buffer and idle-connection pools.
//! Connections never leave the thread that serves them; a worker that
//! accepts a connection while clearly busier than another may hand it to
//! that one first (`tune.listener.multi-queue`, see [`crate::spread`]).
//!
//! Each accepted connection first goes through the frontend's
//! `tcp-request connection` rules (before any TLS handshake and before
//! anything is read; a refused connection is reset at once, counted in
//! `dcon` and not logged, as in HAProxy), then the PROXY protocol header
//! when the listener has `accept-proxy` or a rule asked for it (see
//! [`crate::proxy_accept`]), then the handshake, then the
//! `tcp-request session` rules (`dses`), and only then is it a session:
//! HAProxy's "Connect from" line, then the HTTP or TCP stream.

use crate::spread::Handed;
use crate::{FrontendRt, Shared};
use fairlead_config::Mode;
use fairlead_l4::{ConnFacts, Gate, SessState};
use fairlead_l7::{ConnHold, HttpCtx};
use fairlead_net::profile::{Profiled, TaskKind};
use fairlead_net::Sock;
use fairlead_net::Stop;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Pause after accept() fails for lack of file descriptors. Default is
/// 100 ms; a closing connection ends the pause earlier.
const FD_EXHAUSTION_PAUSE: Duration = Duration::from_millis(100);

/// How often expired stick table entries are purged. Default is 1 s (an
/// expired entry is never returned by a lookup meanwhile).
const STICK_PURGE_EVERY: Duration = Duration::from_secs(1);

/// A frontend's local services (stats page, Prometheus exporter).
pub(crate) type Service = Arc<dyn fairlead_l7::LocalService + Send + Sync>;

pub(crate) fn run(
    worker: usize,
    shared: Arc<Shared>,
    listeners: Vec<crate::FeListeners>,
    services: Vec<Option<Service>>,
    stop: watch::Receiver<bool>,
) {
    fairlead_net::pool::init(shared.bufsize);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("worker runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        if let Some(bufs) = shared.io_uring {
            if let Err(e) = fairlead_net::start_uring(bufs) {
                eprintln!(
                    "[WARNING]  worker {worker}: io_uring cannot be set up ({e}); this worker uses epoll"
                );
            }
        }
        // Bridge the process-wide stop request to this worker's own signal.
        let local_stop = Rc::new(Stop::new());
        let bridge = local_stop.clone();
        let mut global_stop = stop;
        tokio::task::spawn_local(async move {
            stopped(&mut global_stop).await;
            bridge.trigger();
        });
        // Trim idle server connections periodically.
        tokio::task::spawn_local(async {
            let mut tick = tokio::time::interval(fairlead_backend::idle::PURGE_DELAY);
            tick.tick().await;
            loop {
                tick.tick().await;
                fairlead_backend::idle::purge();
            }
        });
        // Expired stick table entries go away on the first worker's timer.
        if worker == 0 && !shared.tables.is_empty() {
            let tables = shared.tables.clone();
            tokio::task::spawn_local(async move {
                let mut tick = tokio::time::interval(STICK_PURGE_EVERY);
                loop {
                    tick.tick().await;
                    let now = crate::stick_now();
                    for t in &tables {
                        t.purge_expired(now);
                    }
                }
            });
        }
        let mut accepts = Vec::new();
        for (fe_idx, ls) in listeners.into_iter().enumerate() {
            let fe = shared.frontends[fe_idx].clone();
            let ctx = Rc::new(HttpCtx {
                service: services.get(fe_idx).cloned().flatten(),
                front: fe.front.clone(),
                stop: local_stop.clone(),
            });
            for lst in listeners_of(&fe, ls) {
                shared.listeners_open.fetch_add(1, Ordering::SeqCst);
                let (shared2, fe, ctx) = (shared.clone(), fe.clone(), ctx.clone());
                accepts.push(tokio::task::spawn_local(Profiled::new(
                    TaskKind::Accept,
                    async move {
                        accept_loop(shared2.clone(), fe, ctx, lst, worker, fe_idx).await;
                        // The listener is closed (dropped with the loop).
                        shared2.listeners_open.fetch_sub(1, Ordering::SeqCst);
                        shared2.freed.notify_waiters();
                    },
                )));
            }
        }
        for a in accepts {
            let _ = a.await;
        }
        // Listeners are closed; keep serving the connections in flight
        // until the main thread ends the process.
        std::future::pending::<()>().await;
    });
}

/// Registers a worker's listening sockets of one frontend with its event
/// loop, each with what its `bind` line asks.
fn listeners_of(fe: &FrontendRt, ls: crate::FeListeners) -> Vec<Listener> {
    let mut out = Vec::new();
    for l in ls.tcp {
        let addr = l.local_addr();
        let l = match tcp_acceptor(l) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("[ALERT]    cannot register listener: {e}");
                continue;
            }
        };
        let tls = addr.as_ref().ok().and_then(|a| fe.tls_for(*a));
        let accept_proxy = addr.is_ok_and(|a| fe.accept_proxy.contains(&a));
        out.push(Listener {
            tcp: l,
            tls,
            accept_proxy,
        });
    }
    for (i, l) in ls.socks {
        let Some(s) = fe.sockets.get(i) else { continue };
        let acceptor = match l {
            crate::sockets::Lsock::Tcp(l) => tcp_acceptor(l),
            crate::sockets::Lsock::Unix(l) => {
                fairlead_net::unix::UnixAcceptor::new(l).map(|u| Acceptor::Unix(u, s.id))
            }
            crate::sockets::Lsock::Pair(p) => {
                let name = format!("frontend '{}': bind {}", fe.front.name, s.sock);
                crate::sockpair::PairAcceptor::new(p, name).map(|p| Acceptor::Pair(p, s.id))
            }
        };
        match acceptor {
            Ok(a) => out.push(Listener {
                tcp: a,
                tls: s.tls.clone(),
                accept_proxy: s.accept_proxy,
            }),
            Err(e) => eprintln!("[ALERT]    cannot register listener {}: {e}", s.sock),
        }
    }
    out
}

/// A TCP listener on the worker's io_uring ring when it has one, on its
/// epoll loop otherwise.
fn tcp_acceptor(l: std::net::TcpListener) -> std::io::Result<Acceptor> {
    if fairlead_net::uring_worker() {
        return fairlead_net::UringListener::new(l).map(Acceptor::Uring);
    }
    TcpListener::from_std(l).map(Acceptor::Tcp)
}

/// A listening socket: TCP, UNIX, or a `sockpair@` socket pair end
/// (these two with their listener id, for the client address of their
/// connections, see [`fairlead_net::unix`]).
enum Acceptor {
    Tcp(TcpListener),
    /// A TCP listener on the worker's io_uring ring.
    Uring(fairlead_net::UringListener),
    Unix(fairlead_net::unix::UnixAcceptor, u16),
    Pair(crate::sockpair::PairAcceptor, u16),
}

impl Acceptor {
    /// The soft stop of an accept loop. An io_uring listener stops its
    /// accept and serves the connections the kernel already handed it
    /// (see [`fairlead_net::UringListener::stop_accepting`]); the others
    /// just stop, their unaccepted connections staying in the socket's
    /// queue for the next worker.
    async fn stop(&self, acc: &Accepted<'_>) {
        let Acceptor::Uring(l) = self else {
            return;
        };
        l.stop_accepting().await;
        while let Some(r) = l.try_accept() {
            if let Ok((s, peer)) = r {
                acc.serve(s.into(), peer);
            }
        }
    }

    /// [`Acceptor::accept`], or, with `plain` on an io_uring listener, the
    /// socket before it goes on the ring (it may still move to another
    /// worker, see [`crate::spread`]).
    async fn accept_new(&self, plain: bool) -> std::io::Result<(NewConn, std::net::SocketAddr)> {
        match self {
            Acceptor::Uring(l) if plain => {
                l.accept_std().await.map(|(s, a)| (NewConn::Plain(s), a))
            }
            _ => self.accept().await.map(|(s, a)| (NewConn::Ready(s), a)),
        }
    }

    async fn accept(&self) -> std::io::Result<(Sock, std::net::SocketAddr)> {
        match self {
            Acceptor::Tcp(l) => l.accept().await.map(|(s, a)| (s.into(), a)),
            Acceptor::Uring(l) => l.accept().await.map(|(s, a)| (s.into(), a)),
            Acceptor::Unix(l, id) => {
                Ok((l.accept().await?.into(), fairlead_net::unix::unix_peer(*id)))
            }
            Acceptor::Pair(p, id) => {
                // A connection handed over a socket pair did not come from
                // one of our listeners: TCP_NODELAY was not inherited (an
                // error on a UNIX socket is harmless).
                let s = p.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((s.into(), fairlead_net::unix::unix_peer(*id)))
            }
        }
    }
}

/// A socket just accepted: on this worker's event loop already, or plain
/// (an io_uring listener's, before it goes on the ring).
enum NewConn {
    Ready(Sock),
    Plain(std::net::TcpStream),
}

/// Wraps an accepted socket: clear, or TLS once the handshake completed.
/// A failed handshake is counted and logged (HAProxy's connection error
/// line, with the reason) and closes the connection; it never affects
/// other connections.
async fn handshake(
    tcp: Sock,
    peer: std::net::SocketAddr,
    fe: &FrontendRt,
    tls: Option<Arc<fairlead_tls::BindContext>>,
) -> Option<fairlead_net::Conn> {
    let Some(ctx) = tls else {
        return Some(fairlead_net::Conn::plain(tcp));
    };
    let local = tcp.local_addr().ok();
    let t = &fe.front.timeouts;
    let timeout = match fe.front.mode {
        Mode::Http => t.http_request.or(t.client),
        Mode::Tcp => t.client,
    };
    match fairlead_tls::stream::accept(tcp, ctx.config(), timeout).await {
        Ok(conn) => {
            let st = &fe.tls_stats;
            st.handshakes.fetch_add(1, Ordering::Relaxed);
            if conn.tls_info_ref().is_some_and(|i| i.resumed) {
                st.resumed.fetch_add(1, Ordering::Relaxed);
            }
            Some(conn)
        }
        Err(e) => {
            fe.tls_stats.failures.fetch_add(1, Ordering::Relaxed);
            if let Some(l) = fe.front.log.as_deref() {
                fairlead_l7::logging::emit_conn_error(
                    l,
                    peer,
                    local,
                    &fe.front.name,
                    &e.to_string(),
                );
            }
            None
        }
    }
}

/// Reads the PROXY protocol header when the listener has `accept-proxy`
/// or a `tcp-request connection expect-proxy layer4` rule matched. Returns
/// the client address from now on and what the header carried, or `None`
/// when the connection must be closed (the reason is logged).
async fn proxy_header(
    tcp: &Sock,
    peer: std::net::SocketAddr,
    fe: &FrontendRt,
    sess: &SessState,
) -> Option<(std::net::SocketAddr, Option<fairlead_net::ProxyInfo>)> {
    if !sess.expect_proxy {
        return Some((peer, None));
    }
    let t = &fe.front.timeouts;
    let timeout = match fe.front.mode {
        Mode::Http => t.http_request.or(t.client),
        Mode::Tcp => t.client,
    };
    match crate::proxy_accept::read_header(tcp, timeout).await {
        Ok(info) => Some((info.addrs.map_or(peer, |(src, _)| src), Some(info))),
        Err(reason) => {
            if let Some(l) = fe.front.log.as_deref() {
                let local = tcp.local_addr().ok();
                fairlead_l7::logging::emit_conn_error(l, peer, local, &fe.front.name, reason);
            }
            None
        }
    }
}

/// `tcp-request connection` rules, right after accept. A refused
/// connection is closed with a reset (SO_LINGER 0, as HAProxy does) when
/// the caller drops it, and counted in `dcon`.
fn admit(fe: &FrontendRt, stream: &Sock, peer: std::net::SocketAddr, sess: &mut SessState) -> bool {
    let rules = &fe.front.routes.fe_rules;
    if rules.tcp_connection.is_empty() {
        return true;
    }
    let facts = ConnFacts {
        src: peer,
        dst: stream.local_addr().ok(),
        tls: None,
        proxy: None,
        frontend: &fe.front.name,
        hostname: &fe.front.routes.hostname,
    };
    if fairlead_l4::connection_rules(rules, &facts, sess) == Gate::Accept {
        return true;
    }
    fe.front.denied_conn.fetch_add(1, Ordering::Relaxed);
    stream.set_abortive_close();
    sess.end_trackers(crate::stick_now());
    false
}

/// `tcp-request session` rules once the handshakes are done (a refused
/// session is reset and counted in `dses`), then HAProxy's "Connect from"
/// line for frontends without a log option: the connection is now a
/// session.
fn open_session(
    fe: &FrontendRt,
    conn: &fairlead_net::Conn,
    peer: std::net::SocketAddr,
    sess: &mut SessState,
) -> bool {
    let rules = &fe.front.routes.fe_rules;
    if !rules.tcp_session.is_empty() {
        let tls = conn.tls_info_ref();
        let facts = ConnFacts {
            src: peer,
            dst: conn.local_addr().ok(),
            tls: tls.as_deref(),
            proxy: conn.proxy_info(),
            frontend: &fe.front.name,
            hostname: &fe.front.routes.hostname,
        };
        let gate = fairlead_l4::session_rules(rules, &facts, sess);
        drop(tls);
        if gate != Gate::Accept {
            fe.front.denied_sess.fetch_add(1, Ordering::Relaxed);
            conn.abort();
            sess.end_trackers(crate::stick_now());
            return false;
        }
    }
    // The session counts on the slots its connection and session rules
    // tracked (HAProxy's session_count_new).
    if let Some(t) = &sess.trackers {
        t.on_session_accepted(crate::stick_now());
    }
    if let Some(l) = fe.front.log.as_deref() {
        let client = sess.effective_src(peer);
        let local = conn.local_addr().ok();
        fairlead_l7::logging::emit_connect(
            l,
            client,
            local,
            &fe.front.name,
            fe.front.mode == Mode::Http,
        );
    }
    true
}

/// Waits until a stop is requested.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One listening socket and what its `bind` line asks of each
/// connection.
struct Listener {
    tcp: Acceptor,
    tls: Option<Arc<fairlead_tls::BindContext>>,
    /// `accept-proxy`.
    accept_proxy: bool,
}

async fn accept_loop(
    shared: Arc<Shared>,
    fe: Arc<FrontendRt>,
    ctx: Rc<HttpCtx>,
    listener: Listener,
    worker: usize,
    fe_idx: usize,
) {
    let Listener {
        tcp: listener,
        tls,
        accept_proxy,
    } = listener;
    let stop = ctx.stop.clone();
    let account: Rc<dyn fairlead_l7::ConnAccount> = Rc::new(Account {
        shared: shared.clone(),
        fe: fe.clone(),
        worker,
    });
    let acc = Accepted {
        shared: &shared,
        fe: &fe,
        ctx: &ctx,
        tls: &tls,
        account: &account,
        worker,
        fe_idx,
        accept_proxy,
    };
    // Connections other workers hand to this listener, and where this one
    // hands its own (TCP listeners, epoll or io_uring, see `crate::spread`).
    let local = match (&listener, shared.spread.on()) {
        (Acceptor::Tcp(l), true) => l.local_addr().ok(),
        (Acceptor::Uring(l), true) => l.local_addr().ok(),
        _ => None,
    };
    let spread = local.map(|a| {
        let key = (fe_idx, a);
        (key, shared.spread.inbox(worker, key))
    });
    let inbox = spread.as_ref().map(|(_, i)| &**i);
    let finish = |acc: &Accepted<'_>| {
        if let Some(i) = inbox {
            acc.serve_handed(i.close());
        }
    };
    let mut burst = 0usize;
    loop {
        // Stop accepting while a limit is reached; wake when a connection
        // ends (no spinning).
        while shared.global.full() || fe.limit.full() {
            let freed = shared.freed.notified();
            if !(shared.global.full() || fe.limit.full()) {
                break;
            }
            tokio::select! {
                _ = freed => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.wait() => {
                    finish(&acc);
                    return listener.stop(&acc).await;
                }
            }
        }
        let accepted = tokio::select! {
            r = listener.accept_new(spread.is_some()) => r,
            _ = handed(inbox) => {
                acc.serve_handed(inbox.map(|i| i.take()).unwrap_or_default());
                continue;
            }
            _ = stop.wait() => {
                finish(&acc);
                return listener.stop(&acc).await;
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                shared.spread.accepted(worker);
                match &spread {
                    Some((key, _)) => acc.serve_or_hand(stream, peer, *key),
                    None => acc.serve_new(stream, peer),
                }
                burst += 1;
                if burst >= shared.maxaccept {
                    burst = 0;
                    tokio::task::yield_now().await;
                }
            }
            Err(e) if fairlead_net::is_fd_exhaustion(&e) => {
                eprintln!(
                    "[WARNING]  frontend '{}': accept(): {e}; pausing the listener (maxconn {} may be too high for the fd limit)",
                    fe.front.name, shared.global.max
                );
                let freed = shared.freed.notified();
                tokio::select! {
                    _ = freed => {}
                    _ = tokio::time::sleep(FD_EXHAUSTION_PAUSE) => {}
                    _ = stop.wait() => {
                        finish(&acc);
                        return listener.stop(&acc).await;
                    }
                }
            }
            Err(_) => {
                // ECONNABORTED and similar: the next accept will do.
            }
        }
    }
}

/// Waits until another worker handed connections to this listener;
/// forever when it takes none.
async fn handed(inbox: Option<&crate::spread::Inbox>) {
    match inbox {
        Some(i) => i.wake.notified().await,
        None => std::future::pending().await,
    }
}

/// What an accept loop needs to turn an accepted connection into a
/// session.
struct Accepted<'a> {
    shared: &'a Arc<Shared>,
    fe: &'a Arc<FrontendRt>,
    ctx: &'a Rc<HttpCtx>,
    tls: &'a Option<Arc<fairlead_tls::BindContext>>,
    account: &'a Rc<dyn fairlead_l7::ConnAccount>,
    worker: usize,
    fe_idx: usize,
    accept_proxy: bool,
}

impl Accepted<'_> {
    /// [`Accepted::serve`], unless this worker is clearly busier than
    /// another ([`crate::spread::Spread::pick`]): then the socket leaves
    /// this event loop for that worker's inbox of the same listener. Served
    /// here when that fails (the other listener stopped).
    fn serve_or_hand(
        &self,
        stream: NewConn,
        peer: std::net::SocketAddr,
        key: crate::spread::ListenerKey,
    ) {
        let spread = &self.shared.spread;
        let Some(to) = spread.pick(self.worker) else {
            return self.serve_new(stream, peer);
        };
        let stream = match stream {
            NewConn::Plain(s) => s,
            // Out of this event loop (an `epoll_ctl` that cannot fail on a
            // socket it registered; if it did, the socket is closed).
            NewConn::Ready(Sock::Epoll(tcp)) => match tcp.into_std() {
                Ok(s) => s,
                Err(_) => return,
            },
            NewConn::Ready(other) => return self.serve(other, peer),
        };
        if let Err(h) = spread.hand(to, key, Handed { stream, peer }) {
            self.serve_plain(h.stream, h.peer);
        }
    }

    /// Serves a connection this worker keeps.
    fn serve_new(&self, stream: NewConn, peer: std::net::SocketAddr) {
        match stream {
            NewConn::Ready(s) => self.serve(s, peer),
            NewConn::Plain(s) => self.serve_plain(s, peer),
        }
    }

    /// Serves connections another worker handed to this listener.
    fn serve_handed(&self, list: std::collections::VecDeque<Handed>) {
        for h in list {
            self.serve_plain(h.stream, h.peer);
        }
    }

    /// Serves a plain socket (handed over by another worker, or accepted
    /// here by an io_uring listener) once it is on this worker's event loop
    /// or ring.
    fn serve_plain(&self, stream: std::net::TcpStream, peer: std::net::SocketAddr) {
        let sock = if fairlead_net::uring_worker() {
            fairlead_net::UringSock::from_std(stream).map(Sock::from)
        } else {
            tokio::net::TcpStream::from_std(stream).map(Sock::Epoll)
        };
        if let Ok(sock) = sock {
            self.serve(sock, peer);
        }
    }

    /// `tcp-request connection` rules, then the session's task, counted
    /// and listed. A refused connection is dropped (reset) here.
    fn serve(&self, stream: Sock, peer: std::net::SocketAddr) {
        let (shared, fe) = (self.shared, self.fe);
        shared.spread.pushed(self.worker);
        let mut sess = SessState::default();
        if !admit(fe, &stream, peer, &mut sess) {
            return;
        }
        sess.expect_proxy |= self.accept_proxy;
        shared.spread.count(self.worker, true);
        shared.global.cur.fetch_add(1, Ordering::Relaxed);
        let cur = fe.limit.cur.fetch_add(1, Ordering::Relaxed) + 1;
        // A read first: the shared line is only written (fetch_max always
        // writes) when the peak moves.
        if cur > fe.smax.load(Ordering::Relaxed) {
            fe.smax.fetch_max(cur, Ordering::Relaxed);
        }
        fe.front.counters.inc(fairlead_backend::counters::C::Stot);
        let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
        let ctl = fairlead_l7::ConnCtl::new();
        let hold = fairlead_l7::ConnHold::new(self.account.clone(), id, ctl.clone());
        let task = spawn_session(fe, self.ctx, self.tls, stream, peer, hold, sess);
        ctl.set_task(task.abort_handle());
        if let Ok(mut reg) = shared.sessions[self.worker].lock() {
            reg.insert(
                id,
                crate::SessionEntry {
                    frontend: self.fe_idx,
                    client: peer,
                    since: std::time::Instant::now(),
                    ctl,
                },
            );
        }
    }
}

/// Spawns the task of an accepted connection: the handshake, the
/// session rules, then the HTTP or TCP stream. Each mode gets its own task
/// type, so an HTTP connection's task is only as large as the HTTP state
/// machine.
///
/// The opening (PROXY header, handshake, session rules) is made a boxed
/// future here, before the task: its inputs move into that one allocation
/// and are freed with it once the session starts. A future keeps room for
/// everything it captured for as long as it lives, so a task that captured
/// them directly carried them, and the handshake's state, through every
/// idle second of the connection.
fn spawn_session(
    fe: &Arc<FrontendRt>,
    ctx: &Rc<HttpCtx>,
    tls: &Option<Arc<fairlead_tls::BindContext>>,
    stream: Sock,
    peer: std::net::SocketAddr,
    hold: ConnHold,
    sess: SessState,
) -> tokio::task::JoinHandle<()> {
    let opening = Box::pin(open(fe.clone(), tls.clone(), stream, peer, sess));
    match fe.front.mode {
        Mode::Http => tokio::task::spawn_local(Profiled::new(
            TaskKind::HttpSession,
            http_session(opening, hold, ctx.clone()),
        )),
        Mode::Tcp => tokio::task::spawn_local(Profiled::new(
            TaskKind::TcpSession,
            tcp_session(opening, hold, fe.clone()),
        )),
    }
}

/// An opened session: the connection after its PROXY header, handshake
/// and session rules, with the client address they left.
struct Opened {
    conn: fairlead_net::Conn,
    peer: std::net::SocketAddr,
    sess: SessState,
}

/// The PROXY header, the handshake, then the `tcp-request session` rules;
/// `None` when the connection ends there.
async fn open(
    fe: Arc<FrontendRt>,
    tls: Option<Arc<fairlead_tls::BindContext>>,
    stream: Sock,
    peer: std::net::SocketAddr,
    mut sess: SessState,
) -> Option<Opened> {
    let (peer, proxied) = proxy_header(&stream, peer, &fe, &sess).await?;
    let mut conn = handshake(stream, peer, &fe, tls).await?;
    if let Some(info) = proxied {
        conn.set_proxy_info(info);
    }
    open_session(&fe, &conn, peer, &mut sess).then_some(Opened { conn, peer, sess })
}

/// An HTTP connection's task (a plain fn around an `async move` block, so
/// that what it captures is not held twice).
// Not an `async fn`, on purpose (see above).
#[allow(clippy::manual_async_fn)]
fn http_session(
    opening: std::pin::Pin<Box<impl std::future::Future<Output = Option<Opened>>>>,
    hold: ConnHold,
    ctx: Rc<HttpCtx>,
) -> impl std::future::Future<Output = ()> {
    async move {
        let Some(Opened { conn, peer, sess }) = opening.await else {
            drop(hold);
            return;
        };
        // `set-src` and the `sess` variables of the connection and session
        // rules reach the HTTP transactions.
        let peer = sess.effective_src(peer);
        let mut sess = sess;
        let trackers = sess.trackers.take();
        let carry = fairlead_l7::SessCarry::new(sess.into_sess_vars(), trackers);
        // The hold goes with the session: to the idle set while it is
        // parked, then to its next task.
        fairlead_l7::serve_http_held(conn, peer, ctx, carry, Some(hold)).await;
    }
}

/// A TCP connection's task.
async fn tcp_session(
    opening: std::pin::Pin<Box<impl std::future::Future<Output = Option<Opened>>>>,
    hold: ConnHold,
    fe: Arc<FrontendRt>,
) {
    let _hold = hold;
    let Some(Opened { conn, peer, sess }) = opening.await else {
        return;
    };
    let accepted = std::time::SystemTime::now();
    let _ = fairlead_l4::serve_tcp(conn, peer, &fe.front, accepted, sess).await;
}

/// The accounts of one listener's connections: each one counts against
/// the global and frontend limits, and is listed in the worker's session
/// list, until its [`ConnHold`] is dropped; listeners paused on a limit
/// are then woken.
struct Account {
    shared: Arc<Shared>,
    fe: Arc<FrontendRt>,
    worker: usize,
}

impl fairlead_l7::ConnAccount for Account {
    fn closed(&self, id: u64) {
        let (shared, fe) = (&self.shared, &self.fe);
        if let Ok(mut reg) = shared.sessions[self.worker].lock() {
            reg.remove(&id);
        }
        shared.spread.count(self.worker, false);
        let g = shared.global.cur.fetch_sub(1, Ordering::SeqCst);
        let f = fe.limit.cur.fetch_sub(1, Ordering::SeqCst);
        if g >= shared.global.max
            || f >= fe.limit.max
            || g == 1
            || shared.stopping.load(Ordering::Relaxed)
        {
            shared.freed.notify_waiters();
        }
    }
}
