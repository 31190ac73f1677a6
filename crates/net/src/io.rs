//! Timeout helpers, and the readiness-clearing read used by [`crate::Conn`].

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

/// Waits until `dst` may lend more ([`fairlead_uring::UringSock::lend_ready`]),
/// each wait bounded by `idle`; no timer at all when it already may (as
/// [`crate::Conn::write_all`] waits only when the socket is full).
pub async fn lend_room(
    dst: &fairlead_uring::UringSock,
    idle: Option<Duration>,
    what: &'static str,
) -> Result<()> {
    if dst.lend_room() {
        return Ok(());
    }
    with_timeout(idle, what, dst.lend_ready()).await
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
