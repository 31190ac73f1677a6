//! UNIX stream sockets (`unix@`, `abns@`, and `fd@` descriptors of the
//! UNIX family), carried in the same [`tokio::net::TcpStream`] type as TCP
//! connections.
//!
//! Everything above this module reads and writes through a `TcpStream`
//! (inside [`crate::Conn`]). The calls it makes on one are the generic
//! stream-socket calls (`recv`, `send`, `writev`, `shutdown`, readiness),
//! which behave the same on an `AF_UNIX` stream socket; only the address
//! calls differ: `peer_addr()` and `local_addr()` return an error, which
//! callers already handle (TCP options such as `TCP_NODELAY` fail and are
//! ignored). Wrapping keeps the TCP path exactly as it was (no enum
//! dispatch per read or write) and costs a UNIX connection one extra
//! `epoll_ctl` when it is converted.
//!
//! A UNIX client has no IP address. Sessions still carry a
//! `std::net::SocketAddr` for the client, so a UNIX client's is
//! [`unix_peer`]: `0.0.0.0` and, as port, the listener's id (HAProxy logs
//! `unix` for `%ci` and the listener id for `%cp`). No TCP peer can have
//! the unspecified address.

use std::io::Result;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixListener, UnixStream};
use tokio::io::unix::AsyncFd;

/// The client address given to connections accepted on the UNIX listener
/// whose id is `listener_id` (see the module docs).
pub fn unix_peer(listener_id: u16) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), listener_id)
}

/// True when `addr` is a [`unix_peer`] address.
pub fn is_unix_peer(addr: &SocketAddr) -> bool {
    addr.ip().is_unspecified()
}

/// Carries a connected UNIX stream socket as a `TcpStream` registered
/// with the current runtime (see the module docs).
pub fn stream_from_unix(s: UnixStream) -> Result<tokio::net::TcpStream> {
    s.set_nonblocking(true)?;
    let fd = OwnedFd::from(s);
    tokio::net::TcpStream::from_std(std::net::TcpStream::from(fd))
}

/// Connects to a UNIX socket. `timeout` of `None` waits as long as the
/// kernel does (a UNIX connect only waits while the listener's backlog is
/// full).
pub async fn connect_unix(
    addr: &UnixAddr,
    timeout: Option<std::time::Duration>,
) -> Result<tokio::net::TcpStream> {
    let addr = tokio::net::unix::SocketAddr::from(addr.clone());
    let fut = tokio::net::UnixStream::connect_addr(&addr);
    let stream = crate::io::with_timeout(timeout, "connect timeout", fut).await?;
    stream_from_unix(stream.into_std()?)
}

/// An accepting UNIX listener of a worker.
pub struct UnixAcceptor {
    fd: AsyncFd<UnixListener>,
}

impl UnixAcceptor {
    /// Registers `l` with the current runtime (it is made non-blocking).
    pub fn new(l: UnixListener) -> Result<UnixAcceptor> {
        l.set_nonblocking(true)?;
        // `AsyncFd::new` is deprecated because a `T` that merely borrows
        // its descriptor could close it while registered; a `UnixListener`
        // owns its descriptor, which is the case the replacement
        // (`register`, an unsafe fn) asks callers to guarantee.
        #[allow(deprecated)]
        let fd = AsyncFd::new(l)?;
        Ok(UnixAcceptor { fd })
    }

    /// Waits for the next connection.
    pub async fn accept(&self) -> Result<tokio::net::TcpStream> {
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|l| l.get_ref().accept()) {
                Ok(r) => return stream_from_unix(r?.0),
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::linux::net::SocketAddrExt;

    #[test]
    fn unix_peers_are_recognized() {
        let p = unix_peer(3);
        assert_eq!(p.to_string(), "0.0.0.0:3");
        assert!(is_unix_peer(&p));
        assert!(!is_unix_peer(&"127.0.0.1:3".parse().unwrap()));
    }

    /// A connection accepted and made through the UNIX helpers carries
    /// bytes both ways as a `TcpStream`; its address calls fail.
    #[test]
    fn accept_and_connect_carry_bytes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let name = format!("fl-net-test-{}", std::process::id());
            let addr = UnixAddr::from_abstract_name(name.as_bytes()).unwrap();
            let acceptor = UnixAcceptor::new(UnixListener::bind_addr(&addr).unwrap()).unwrap();
            let client = connect_unix(&addr, Some(std::time::Duration::from_secs(5)))
                .await
                .unwrap();
            let server = acceptor.accept().await.unwrap();
            assert!(server.peer_addr().is_err() && client.local_addr().is_err());
            client.writable().await.unwrap();
            assert_eq!(client.try_write(b"ping").unwrap(), 4);
            let mut buf = [0u8; 8];
            server.readable().await.unwrap();
            let n = server.try_read(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"ping");
            let missing = UnixAddr::from_abstract_name(b"fl-net-test-nobody").unwrap();
            assert!(connect_unix(&missing, None).await.is_err());
        });
    }
}
