//! [`Sock`]: the TCP socket under a [`crate::Conn`], served by the
//! worker's epoll loop (tokio) or by its io_uring ring
//! ([`fairlead_uring`]), with the same non-blocking calls either way.

use std::future::Future;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};
use tokio::net::TcpStream;

/// A connection's socket. See the module documentation.
pub enum Sock {
    /// Registered with the worker's epoll loop.
    Epoll(TcpStream),
    /// Served by the worker's io_uring ring.
    Uring(fairlead_uring::UringSock),
}

impl From<TcpStream> for Sock {
    fn from(s: TcpStream) -> Sock {
        Sock::Epoll(s)
    }
}

impl From<fairlead_uring::UringSock> for Sock {
    fn from(s: fairlead_uring::UringSock) -> Sock {
        Sock::Uring(s)
    }
}

impl Sock {
    /// The tokio stream, on the epoll path (splicing needs it).
    pub fn epoll(&self) -> Option<&TcpStream> {
        match self {
            Sock::Epoll(s) => Some(s),
            Sock::Uring(_) => None,
        }
    }

    /// The ring's socket, on the io_uring path.
    pub fn uring(&self) -> Option<&fairlead_uring::UringSock> {
        match self {
            Sock::Epoll(_) => None,
            Sock::Uring(s) => Some(s),
        }
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        match self {
            Sock::Epoll(s) => s.poll_read_ready(cx),
            Sock::Uring(s) => s.poll_read_ready(cx),
        }
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        match self {
            Sock::Epoll(s) => s.poll_write_ready(cx),
            Sock::Uring(s) => s.poll_write_ready(cx),
        }
    }

    /// Waits until a read may make progress.
    pub async fn readable(&self) -> Result<()> {
        match self {
            Sock::Epoll(s) => s.readable().await,
            Sock::Uring(s) => s.readable().await,
        }
    }

    /// Waits until a write may make progress.
    pub async fn writable(&self) -> Result<()> {
        match self {
            Sock::Epoll(s) => s.writable().await,
            Sock::Uring(s) => s.writable().await,
        }
    }

    /// One non-blocking read (see [`crate::io::try_read_drain`] for the
    /// epoll path's readiness clearing).
    pub fn try_read(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            Sock::Epoll(s) => crate::io::try_read_drain(s, buf),
            Sock::Uring(s) => s.try_read(buf),
        }
    }

    /// [`Sock::try_read`] that also tells whether the read took the last
    /// bytes before the peer's end of stream (`true`: its FIN had arrived
    /// before this read, which drained what preceded it, so the next read
    /// returns 0). The caller may then forward the bytes and the FIN
    /// together, as HAProxy does when it sees `EPOLLRDHUP` with the data.
    /// `false` when not known: the next read tells.
    pub fn try_read_fin(&self, buf: &mut [u8]) -> Result<(usize, bool)> {
        match self {
            Sock::Epoll(s) => {
                // Read before the data: a FIN seen after it could follow
                // bytes that arrived meanwhile.
                let closed = read_closed(s);
                let n = crate::io::try_read_drain(s, buf)?;
                Ok((n, closed && n > 0 && n < buf.len()))
            }
            Sock::Uring(s) => {
                let n = s.try_read(buf)?;
                Ok((n, n > 0 && s.at_eof()))
            }
        }
    }

    /// Waits for data and copies it without consuming it.
    pub async fn peek(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            Sock::Epoll(s) => s.peek(buf).await,
            Sock::Uring(s) => loop {
                s.readable().await?;
                match s.try_peek(buf) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    r => return r,
                }
            },
        }
    }

    /// One non-blocking write.
    pub fn try_write(&self, data: &[u8]) -> Result<usize> {
        self.try_send(data, false)
    }

    /// One non-blocking send, with `MSG_MORE` when `more` is set.
    pub fn try_send(&self, data: &[u8], more: bool) -> Result<usize> {
        match self {
            Sock::Epoll(s) if !more => s.try_write(data),
            Sock::Epoll(s) => s.try_io(tokio::io::Interest::WRITABLE, || {
                socket2::SockRef::from(s).send_with_flags(data, libc::MSG_MORE | libc::MSG_NOSIGNAL)
            }),
            Sock::Uring(s) => s.try_write(data, more),
        }
    }

    /// One non-blocking send of `head` then `body` (vectored on the epoll
    /// path; both queued on the ring).
    pub fn try_send2(&self, head: &[u8], body: &[u8], more: bool) -> Result<usize> {
        match self {
            Sock::Epoll(s) => {
                let bufs = [std::io::IoSlice::new(head), std::io::IoSlice::new(body)];
                // MSG_NOSIGNAL as tokio's own sends (SIGPIPE is ignored
                // anyway: a closed peer is an EPIPE error either way).
                let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
                s.try_io(tokio::io::Interest::WRITABLE, || {
                    socket2::SockRef::from(s).send_vectored_with_flags(&bufs, flags)
                })
            }
            Sock::Uring(s) => {
                let n = s.try_write(head, more || !body.is_empty())?;
                if n < head.len() || body.is_empty() {
                    return Ok(n);
                }
                match s.try_write(body, more) {
                    Ok(m) => Ok(n + m),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(n),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Closes the write side (FIN) once what was written has left.
    pub fn shutdown_write(&self) {
        match self {
            Sock::Epoll(s) => crate::shutdown_write(s),
            Sock::Uring(s) => s.shutdown_write(),
        }
    }

    /// Makes the close a reset (`SO_LINGER` 0); bytes still queued on the
    /// ring are dropped.
    pub fn set_abortive_close(&self) {
        let _ = socket2::SockRef::from(self).set_linger(Some(std::time::Duration::ZERO));
        if let Sock::Uring(s) = self {
            s.abort();
        }
    }

    pub fn set_nodelay(&self, on: bool) -> Result<()> {
        socket2::SockRef::from(self).set_nodelay(on)
    }

    pub fn peer_addr(&self) -> Result<std::net::SocketAddr> {
        match self {
            Sock::Epoll(s) => s.peer_addr(),
            Sock::Uring(_) => inet(socket2::SockRef::from(self).peer_addr()?),
        }
    }

    pub fn local_addr(&self) -> Result<std::net::SocketAddr> {
        match self {
            Sock::Epoll(s) => s.local_addr(),
            Sock::Uring(_) => inet(socket2::SockRef::from(self).local_addr()?),
        }
    }
}

fn inet(a: socket2::SockAddr) -> Result<std::net::SocketAddr> {
    a.as_socket()
        .ok_or_else(|| Error::new(ErrorKind::Unsupported, "not an inet socket"))
}

impl AsFd for Sock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Sock::Epoll(s) => s.as_fd(),
            Sock::Uring(s) => s.as_fd(),
        }
    }
}

/// Whether this thread's worker serves its sockets with io_uring.
pub fn uring_worker() -> bool {
    fairlead_uring::current().is_some()
}

/// Whether tokio has seen the peer's FIN on `s` (`EPOLLRDHUP` or
/// `EPOLLHUP` in an event already processed), without waiting: the
/// readiness is read once with a waker that does nothing. Tokio never
/// clears this state once set.
fn read_closed(s: &TcpStream) -> bool {
    let fut = std::pin::pin!(s.ready(tokio::io::Interest::READABLE));
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match fut.poll(&mut cx) {
        Poll::Ready(Ok(r)) => r.is_read_closed(),
        _ => false,
    }
}
