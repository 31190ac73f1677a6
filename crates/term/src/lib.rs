//! fairlead-term: a fast HTTP/1.1 and HTTP/2 test origin whose responses
//! are driven by the request's query string.
//!
//! Plain listeners serve HTTP/1.x, and HTTP/2 (h2c) to connections that
//! open with the client preface; [`start_tls`] listeners serve HTTP/2 over
//! TLS (ALPN `h2`, see [`tls`]). The HTTP/2 side runs on Fairlead's
//! sans-IO codec `fairlead-h2`; there `k=` does nothing and `C=1` sends a
//! GOAWAY.
//!
//! [`start`] binds every address synchronously (so a client may connect as
//! soon as it returns), then serves from `threads` background OS threads,
//! each running its own single-threaded tokio runtime with its own
//! `SO_REUSEPORT` listener per address; the kernel spreads connections across
//! the threads. See `crates/term/README.md` for the full behaviour; in short:
//!
//! | query       | effect                                                          |
//! |-------------|-----------------------------------------------------------------|
//! | `s=SIZE`    | body of SIZE bytes (`k`, `m`, `g` suffixes, 1024-based)         |
//! | `t=MS`      | wait MS milliseconds before responding                          |
//! | `r=STATUS`  | status code (200..=599)                                         |
//! | `k=1`       | chunked transfer encoding                                       |
//! | `C=1`       | `connection: close`, close after the response                   |
//! | `R=1`       | random (incompressible) body bytes                              |
//! | `times=N`   | stream N chunks of `s` bytes (default 16), each after a random wait of 0..=`t` ms |
//!
//! Without `s`, the body is `<name>\n` when a name is set, else empty.
//!
//! ```no_run
//! let h = fairlead_term::start(
//!     &["127.0.0.1:0".parse().unwrap()],
//!     fairlead_term::TermOptions { threads: 1, name: "s1".into() },
//! )
//! .unwrap();
//! println!("serving on {:?}", h.local_addrs());
//! ```

mod conn;
mod h2;
pub mod query;
pub mod tls;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::watch;

/// Listen backlog of each listener.
const BACKLOG: i32 = 1024;
/// Longest TLS handshake accepted.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Options for [`start`].
#[derive(Debug, Clone)]
pub struct TermOptions {
    /// Worker threads (0 is taken as 1). Default is 1.
    pub threads: usize,
    /// Text returned as the default body (followed by `\n`) identifying this
    /// origin, and sent in an `x-served-by` response header when non-empty.
    /// Default is empty.
    pub name: String,
}

impl Default for TermOptions {
    fn default() -> Self {
        TermOptions {
            threads: 1,
            name: String::new(),
        }
    }
}

/// Counters of one (listener address, worker thread) pair, on their own
/// cache line so threads never share one.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Counter {
    pub(crate) requests: AtomicU64,
    pub(crate) connections: AtomicU64,
}

/// A running origin. Dropping it stops the worker threads (like
/// [`TermHandle::stop`]).
pub struct TermHandle {
    addrs: Vec<SocketAddr>,
    /// `(bound address, counter)` for every listener of every thread.
    counters: Vec<(SocketAddr, Arc<Counter>)>,
    /// Dropping it tells every worker to stop.
    stop_tx: Option<watch::Sender<bool>>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for TermHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermHandle")
            .field("addrs", &self.addrs)
            .field("requests", &self.requests())
            .field("connections", &self.connections())
            .finish()
    }
}

impl TermHandle {
    /// Addresses actually bound (port 0 resolved), in the order given to
    /// [`start`].
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.addrs.clone()
    }

    /// Requests served so far, all listeners. A request is counted just
    /// before its response is written, so a client that got a response sees
    /// it counted.
    pub fn requests(&self) -> u64 {
        self.sum(None, |c| &c.requests)
    }

    /// Connections accepted so far, all listeners.
    pub fn connections(&self) -> u64 {
        self.sum(None, |c| &c.connections)
    }

    /// Requests served so far on the listener bound to `addr` (one of
    /// [`TermHandle::local_addrs`]); 0 for an unknown address.
    pub fn requests_on(&self, addr: SocketAddr) -> u64 {
        self.sum(Some(addr), |c| &c.requests)
    }

    /// Connections accepted so far on the listener bound to `addr`.
    pub fn connections_on(&self, addr: SocketAddr) -> u64 {
        self.sum(Some(addr), |c| &c.connections)
    }

    fn sum(&self, addr: Option<SocketAddr>, f: impl Fn(&Counter) -> &AtomicU64) -> u64 {
        self.counters
            .iter()
            .filter(|(a, _)| addr.is_none_or(|x| x == *a))
            .map(|(_, c)| f(c).load(Ordering::Relaxed))
            .sum()
    }

    /// Stops accepting, drops every open connection and joins the worker
    /// threads. Idempotent; also done on drop.
    pub fn stop(&mut self) {
        self.stop_tx.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for TermHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Creates one non-blocking `SO_REUSEPORT` listener bound to `addr`.
fn bind(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&addr.into())?;
    s.listen(BACKLOG)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Starts serving on `addrs` in background threads and returns at once.
///
/// Every listener is bound and listening before this returns (port 0 is
/// resolved once per address, the other threads bind the same port), so
/// connecting right away succeeds. Errors: any bind/listen failure, or
/// failing to create a runtime or thread.
pub fn start(addrs: &[SocketAddr], opts: TermOptions) -> io::Result<TermHandle> {
    start_inner(addrs, opts, None)
}

/// Like [`start`], but every listener speaks TLS with `config` (see
/// [`tls::server_config`], which offers ALPN `h2` only) and serves
/// HTTP/2 behind it, with the same query-string protocol.
pub fn start_tls(
    addrs: &[SocketAddr],
    opts: TermOptions,
    config: Arc<rustls::ServerConfig>,
) -> io::Result<TermHandle> {
    start_inner(addrs, opts, Some(config))
}

fn start_inner(
    addrs: &[SocketAddr],
    opts: TermOptions,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<TermHandle> {
    let threads = opts.threads.max(1);
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no address to listen on",
        ));
    }
    // listeners[thread][addr]
    let mut listeners: Vec<Vec<std::net::TcpListener>> = (0..threads).map(|_| Vec::new()).collect();
    let mut bound = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        let first = bind(addr)?;
        let local = first.local_addr()?;
        bound.push(local);
        listeners[0].push(first);
        for l in listeners.iter_mut().skip(1) {
            l.push(bind(local)?);
        }
    }
    let shared = Arc::new(conn::Shared::new(&opts.name));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut handle = TermHandle {
        addrs: bound.clone(),
        counters: Vec::new(),
        stop_tx: Some(stop_tx),
        threads: Vec::new(),
    };
    for (i, ls) in listeners.into_iter().enumerate() {
        let mut work = Vec::with_capacity(ls.len());
        for (l, &addr) in ls.into_iter().zip(&bound) {
            let counter = Arc::new(Counter::default());
            handle.counters.push((addr, counter.clone()));
            work.push((l, counter));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = shared.clone();
        let stop_rx = stop_rx.clone();
        let tls = tls.clone();
        let t = std::thread::Builder::new()
            .name(format!("term-{i}"))
            .spawn(move || worker(rt, work, shared, tls, stop_rx))?;
        handle.threads.push(t);
    }
    Ok(handle)
}

/// One worker thread: accept on each listener, one task per connection,
/// until the stop channel's sender is dropped.
fn worker(
    rt: tokio::runtime::Runtime,
    listeners: Vec<(std::net::TcpListener, Arc<Counter>)>,
    shared: Arc<conn::Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut stop_rx: watch::Receiver<bool>,
) {
    rt.block_on(async move {
        for (l, counter) in listeners {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => {
                    tokio::spawn(accept_loop(l, counter, shared.clone(), tls.clone()));
                }
                Err(e) => eprintln!("fairlead-term: cannot register listener: {e}"),
            }
        }
        // Returns when the value changes or the sender is dropped.
        let _ = stop_rx.wait_for(|&stop| stop).await;
    });
    // Dropping the runtime cancels the accept loops and all connections.
    drop(rt);
}

async fn accept_loop(
    l: tokio::net::TcpListener,
    counter: Arc<Counter>,
    shared: Arc<conn::Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    loop {
        match l.accept().await {
            Ok((sock, _)) => {
                counter.connections.fetch_add(1, Ordering::Relaxed);
                let _ = sock.set_nodelay(true);
                match &tls {
                    None => {
                        tokio::spawn(conn::serve(sock, shared.clone(), counter.clone()));
                    }
                    Some(cfg) => {
                        tokio::spawn(serve_tls(
                            sock,
                            cfg.clone(),
                            shared.clone(),
                            counter.clone(),
                        ));
                    }
                }
            }
            Err(_) => {
                // EMFILE/ENFILE/ENOBUFS and the like: back off briefly
                // instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// A TLS connection: handshake (bounded by [`HANDSHAKE_TIMEOUT`]), then
/// HTTP/2.
async fn serve_tls(
    sock: tokio::net::TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    shared: Arc<conn::Shared>,
    counter: Arc<Counter>,
) {
    let hs = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls::TlsStream::accept(sock, cfg)).await;
    if let Ok(Ok(t)) = hs {
        h2::serve(tls::Io::Tls(Box::new(t)), &[], shared, counter).await;
    }
}
