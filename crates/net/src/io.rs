//! Readiness-based helpers on `&TcpStream`, so that both directions of a
//! connection can be driven from one task without splitting the stream.

use std::io::{Error, ErrorKind, Result};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Error used when a timeout fires.
pub fn timed_out(what: &'static str) -> Error {
    Error::new(ErrorKind::TimedOut, what)
}

/// Runs `fut` with an optional timeout. `None` never times out.
pub async fn with_timeout<T>(
    t: Option<Duration>,
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match t {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .map_err(|_| timed_out(what))?,
        None => fut.await,
    }
}

/// Runs `fut` until an optional deadline.
pub async fn until<T>(
    deadline: Option<Instant>,
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, fut)
            .await
            .map_err(|_| timed_out(what))?,
        None => fut.await,
    }
}

/// Writes all of `data`, trying the socket first and waiting for
/// writability only when it is full. Each wait is bounded by `idle`.
pub async fn write_all(stream: &TcpStream, mut data: &[u8], idle: Option<Duration>) -> Result<()> {
    while !data.is_empty() {
        match stream.try_write(data) {
            Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                with_timeout(idle, "write timeout", stream.writable()).await?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes `head` then `body` with vectored writes (one syscall when the
/// socket has room), so that a response head and its first body bytes go
/// out together without being copied into one buffer.
pub async fn write_all2(
    stream: &TcpStream,
    mut head: &[u8],
    mut body: &[u8],
    idle: Option<Duration>,
) -> Result<()> {
    while !head.is_empty() {
        let bufs = [std::io::IoSlice::new(head), std::io::IoSlice::new(body)];
        match stream.try_write_vectored(&bufs) {
            Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
            Ok(n) if n >= head.len() => {
                body = &body[n - head.len()..];
                head = &[];
            }
            Ok(n) => head = &head[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                with_timeout(idle, "write timeout", stream.writable()).await?;
            }
            Err(e) => return Err(e),
        }
    }
    write_all(stream, body, idle).await
}

/// Checks, without blocking, whether an idle pooled connection is still
/// usable: it must have nothing to read and not be closed by the peer.
pub fn idle_conn_alive(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(stream.try_read(&mut probe), Err(e) if e.kind() == ErrorKind::WouldBlock)
}

/// One non-blocking read that also tells tokio the socket is drained when
/// the read came back short, so the next wait goes straight to the poller
/// instead of paying a `read()` that returns EAGAIN. A short read on a
/// stream socket means the receive queue was emptied; tokio only clears
/// readiness if no new event arrived meanwhile, so no wake-up is lost.
pub fn try_read_drain(stream: &TcpStream, buf: &mut [u8]) -> Result<usize> {
    use std::io::Read;
    let mut got = 0;
    let r = stream.try_io(tokio::io::Interest::READABLE, || {
        let n = (&*socket2::SockRef::from(stream)).read(buf)?;
        got = n;
        if n > 0 && n < buf.len() {
            // Short read: report "would block" to clear the readiness.
            Err(Error::from(ErrorKind::WouldBlock))
        } else {
            Ok(n)
        }
    });
    match r {
        Err(e) if e.kind() == ErrorKind::WouldBlock && got > 0 => Ok(got),
        r => r,
    }
}
