//! Sockets for the workers: SO_REUSEPORT listeners (one per worker and
//! address), outgoing connections, readiness-based I/O helpers, and the
//! per-thread buffer pool that keeps idle connections buffer-free.
//!
//! HAProxy's memory model applies: a connection that waits for data holds no
//! buffer. Code waits for readiness first, then takes a buffer from the
//! thread's pool ([`pool`]), reads, forwards, and gives the buffer back as soon
//! as it is drained ([`IoBuf::release_if_empty`]).
#![deny(unsafe_code)]

pub mod buf;
pub mod conn;
pub mod io;
pub mod pool;
pub mod profile;
pub mod reuse;
pub mod sock;
pub mod splice;
pub mod stop;
pub mod unix;
pub mod wait;

pub use buf::IoBuf;
pub use conn::{Conn, ProxyInfo, TlsInfo, TlsLayer};
pub use fairlead_uring::{
    lent as uring_lent, release_listeners as release_uring_listeners, unsent as uring_unsent,
    UringListener, UringSock,
};
pub use sock::{uring_worker, Sock};
pub use stop::Stop;

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::net::SocketAddr;

/// Listen backlog. Default is 1024, HAProxy's default for `backlog` when
/// maxconn is larger.
pub const DEFAULT_BACKLOG: i32 = 1024;

/// Opens a non-blocking listening socket with SO_REUSEADDR and SO_REUSEPORT,
/// so that every worker can own one for the same address and the kernel
/// spreads new connections among them.
pub fn bind_reuseport(
    addr: SocketAddr,
    v6only: Option<bool>,
    backlog: i32,
) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    if addr.is_ipv6() {
        if let Some(v6) = v6only {
            socket.set_only_v6(v6)?;
        }
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}

/// Prepares a listening TCP socket for the connections it will accept,
/// which inherit both settings on Linux (no system call per connection):
/// TCP_NODELAY, and TCP quick-ack mode off when `smart_accept` is set
/// (`option tcp-smart-accept`: the kernel holds the ACK of a request so
/// that it rides with the response, or sends it when its delayed-ACK
/// timer fires), on otherwise. Both are set explicitly, so a socket
/// inherited from a previous configuration takes the new setting.
pub fn tune_listener(l: &std::net::TcpListener, smart_accept: bool) -> std::io::Result<()> {
    let s = SockRef::from(l);
    s.set_nodelay(true)?;
    s.set_quickack(!smart_accept)
}

/// True for errors that mean the process (or system) ran out of file
/// descriptors: the listener must pause instead of spinning.
pub fn is_fd_exhaustion(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
        || matches!(err.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::ENOMEM))
}

/// Connects to `addr` with TCP_NODELAY. `timeout` of `None` waits as long as
/// the kernel does.
pub async fn connect(
    addr: SocketAddr,
    timeout: Option<std::time::Duration>,
) -> std::io::Result<tokio::net::TcpStream> {
    connect_with(addr, timeout, false).await
}

/// [`connect`], with TCP quick-ack mode off from the start when
/// `delay_ack` is set (`option tcp-smart-connect`, for a caller that
/// writes as soon as the connection is established): the last ACK of the
/// handshake then waits for the first data segment and rides with it.
/// TCP_NODELAY is set before the connection, as HAProxy does.
pub async fn connect_with(
    addr: SocketAddr,
    timeout: Option<std::time::Duration>,
    delay_ack: bool,
) -> std::io::Result<tokio::net::TcpStream> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    let s = SockRef::from(&socket);
    s.set_nodelay(true)?;
    if delay_ack {
        s.set_quickack(false)?;
    }
    io::with_timeout(timeout, "connect timeout", socket.connect(addr)).await
}

/// [`connect_with`] through this thread's io_uring ring when its worker
/// has one (the socket is made and set up the same way, then connected by
/// the ring), on the epoll loop otherwise.
pub async fn connect_sock(
    addr: SocketAddr,
    timeout: Option<std::time::Duration>,
    delay_ack: bool,
) -> std::io::Result<Sock> {
    if !uring_worker() {
        return Ok(Sock::Epoll(connect_with(addr, timeout, delay_ack).await?));
    }
    // Non-blocking and close-on-exec from the socket call itself.
    let ty = Type::STREAM.nonblocking().cloexec();
    let socket = Socket::new_raw(Domain::for_address(addr), ty, Some(Protocol::TCP))?;
    socket.set_nodelay(true)?;
    if delay_ack {
        socket.set_quickack(false)?;
    }
    let fut = fairlead_uring::UringSock::connect(socket, addr);
    let s = io::with_timeout(timeout, "connect timeout", fut).await?;
    Ok(Sock::Uring(s))
}

/// Starts this worker thread's io_uring ring (`io-uring on`): its receive
/// buffers come from the thread's pool ([`pool::lend`]), `recv_bufs` of
/// them. Call from inside the worker's runtime, after [`pool::init`].
pub fn start_uring(recv_bufs: u16) -> std::io::Result<()> {
    let cfg = fairlead_uring::Config {
        recv_bufs,
        ..fairlead_uring::Config::default()
    };
    let n = (recv_bufs as usize).next_power_of_two();
    fairlead_uring::Ring::start(&cfg, pool::lend(n)).map(drop)
}

/// Whether io_uring can be used here (see [`fairlead_uring::available`]).
pub fn uring_available() -> std::io::Result<()> {
    fairlead_uring::available()
}

/// Shuts down the write side of a stream (sends FIN) while reads continue.
pub fn shutdown_write(stream: &tokio::net::TcpStream) {
    let _ = SockRef::from(stream).shutdown(std::net::Shutdown::Write);
}
