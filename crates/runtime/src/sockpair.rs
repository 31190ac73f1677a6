//! `bind sockpair@<n>`: client connections handed over a socket pair.
//!
//! Descriptor `n`, inherited from the parent process, is one end of a UNIX
//! stream socket pair. The parent sends each client connection, already
//! connected (a TCP socket it accepted, or one end of another socket
//! pair), as a descriptor attached to a message (`SCM_RIGHTS`); HAProxy
//! sends two data bytes with each, which are discarded. Each descriptor
//! received is one accepted connection of the listener.
//!
//! As in HAProxy, such a client has the address of a UNIX client whatever
//! the socket's real family: `%ci` is `unix` and `%cp` the listener id
//! (see [`fairlead_net::unix`]).
//!
//! Every worker thread receives from its own duplicate of the descriptor;
//! the kernel gives each message to exactly one reader. A descriptor that
//! is not a stream socket (a file, a datagram socket) is closed and
//! skipped. When the parent closes its end the listener stops receiving,
//! with a warning; connections in flight go on.

use crate::os;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use tokio::io::unix::AsyncFd;

/// The receiving side of a `sockpair@` listener in one worker.
pub(crate) struct PairAcceptor {
    fd: AsyncFd<UnixStream>,
    /// Descriptors received but not handed out yet (a message may carry
    /// several).
    pending: RefCell<VecDeque<OwnedFd>>,
    /// The parent closed its end.
    closed: Cell<bool>,
    /// The configuration's spelling, for the warning at end of stream.
    name: String,
}

impl PairAcceptor {
    /// Registers `s` (made non-blocking) with the current runtime.
    pub(crate) fn new(s: UnixStream, name: String) -> Result<PairAcceptor> {
        s.set_nonblocking(true)?;
        // `AsyncFd::new` is deprecated for types that merely borrow their
        // descriptor; a `UnixStream` owns its own.
        #[allow(deprecated)]
        let fd = AsyncFd::new(s)?;
        Ok(PairAcceptor {
            fd,
            pending: RefCell::new(VecDeque::new()),
            closed: Cell::new(false),
            name,
        })
    }

    /// Waits for the next connection passed over the pair.
    pub(crate) async fn accept(&self) -> Result<tokio::net::TcpStream> {
        loop {
            let next = self.pending.borrow_mut().pop_front();
            if let Some(fd) = next {
                match stream_of(fd) {
                    Ok(s) => return Ok(s),
                    Err(e) => {
                        eprintln!("[WARNING]  {}: skipped a passed descriptor: {e}", self.name);
                        continue;
                    }
                }
            }
            if self.closed.get() {
                std::future::pending::<()>().await;
            }
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|s| os::recv_fds(s.get_ref().as_fd())) {
                Ok(Ok(Some(fds))) => self.pending.borrow_mut().extend(fds),
                Ok(Ok(None)) => {
                    eprintln!(
                        "[WARNING]  {}: the peer closed the socket pair; no more connections come this way",
                        self.name
                    );
                    self.closed.set(true);
                }
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
    }
}

/// A received descriptor as a connection: it must be a stream socket of
/// the UNIX, IPv4 or IPv6 family.
fn stream_of(fd: OwnedFd) -> Result<tokio::net::TcpStream> {
    let sock = socket2::SockRef::from(&fd);
    let domain = sock.domain()?;
    if sock.r#type()? != socket2::Type::STREAM {
        return Err(Error::new(ErrorKind::InvalidInput, "not a stream socket"));
    }
    if domain != socket2::Domain::UNIX
        && domain != socket2::Domain::IPV4
        && domain != socket2::Domain::IPV6
    {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a UNIX, IPv4 or IPv6 socket",
        ));
    }
    sock.set_nonblocking(true)?;
    tokio::net::TcpStream::from_std(std::net::TcpStream::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stream_sockets_are_connections() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (a, _b) = UnixStream::pair().unwrap();
            assert!(stream_of(OwnedFd::from(a)).is_ok());
            let f = std::fs::File::open("/proc/self/stat").unwrap();
            assert!(stream_of(OwnedFd::from(f)).is_err());
            let d = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let e = stream_of(OwnedFd::from(d)).unwrap_err();
            assert_eq!(e.to_string(), "not a stream socket");
        });
    }
}
