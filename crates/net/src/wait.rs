//! [`IdleWait`]: what an idle connection waits on, in one small future.
//!
//! An idle keep-alive connection waits for three things at once: its
//! socket becoming readable, its idle timeout, and the worker's soft stop.
//! Composed from tokio's futures (`readable()` inside `timeout_at()`,
//! raced with `Stop::wait()` in a `select!`), that wait took 888 bytes of
//! every idle connection's task, mostly nested copies of the same state.
//! This future holds only the timer entry, the stop notification's waiter
//! and two references, and asks the socket for readiness with
//! [`Conn::poll_read_ready`], which keeps its waker in the socket's own
//! registration.

use crate::conn::Conn;
use crate::stop::Stop;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::futures::Notified;
use tokio::time::{Instant, Sleep};

/// How an [`IdleWait`] ended.
#[derive(Debug)]
pub enum Woken {
    /// The connection is readable (or the readiness check failed).
    Readable(std::io::Result<()>),
    /// The deadline passed first.
    TimedOut,
    /// The soft stop was requested first.
    Stopped,
}

pin_project_lite::pin_project! {
    /// Waits until `conn` is readable, `deadline` passes, or `stop` is
    /// requested, whichever comes first. Readiness wins over a deadline
    /// or a stop that happen in the same poll.
    pub struct IdleWait<'a> {
        conn: &'a Conn,
        #[pin]
        sleep: Option<Sleep>,
        #[pin]
        stop: Option<Notified<'a>>,
        stop_flag: Option<&'a Stop>,
    }
}

impl<'a> IdleWait<'a> {
    /// A wait on `conn`, bounded by `deadline` (none: no bound) and ended
    /// by `stop` when given (none: a soft stop does not end it).
    pub fn new(conn: &'a Conn, deadline: Option<Instant>, stop: Option<&'a Stop>) -> Self {
        IdleWait {
            conn,
            sleep: deadline.map(tokio::time::sleep_until),
            stop: stop.map(Stop::notified),
            stop_flag: stop,
        }
    }
}

impl Future for IdleWait<'_> {
    type Output = Woken;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Woken> {
        let mut this = self.project();
        if let Poll::Ready(r) = this.conn.poll_read_ready(cx) {
            return Poll::Ready(Woken::Readable(r));
        }
        if let Some(sleep) = this.sleep.as_mut().as_pin_mut() {
            if sleep.poll(cx).is_ready() {
                return Poll::Ready(Woken::TimedOut);
            }
        }
        if let Some(mut n) = this.stop.as_mut().as_pin_mut() {
            // Registered before the flag is read, so a trigger between the
            // two is not lost.
            n.as_mut().enable();
            if this.stop_flag.is_some_and(Stop::is_set) || n.poll(cx).is_ready() {
                return Poll::Ready(Woken::Stopped);
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    async fn pair() -> (Conn, tokio::net::TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = tokio::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = l.accept().await.unwrap();
        (Conn::plain(s), c)
    }

    /// Waits as a session does: readiness can be spurious (a read then
    /// finds nothing), so it reads and waits again.
    async fn wait_for(conn: &Conn, deadline: Option<Instant>, stop: Option<&Stop>) -> Woken {
        loop {
            match IdleWait::new(conn, deadline, stop).await {
                Woken::Readable(Ok(())) => {
                    let mut b = [0u8; 8];
                    match conn.try_read(&mut b) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                        Ok(n) => {
                            return Woken::Readable(if n == 3 {
                                Ok(())
                            } else {
                                Err(std::io::Error::other(format!("read {n}")))
                            })
                        }
                        Err(e) => return Woken::Readable(Err(e)),
                    }
                }
                other => return other,
            }
        }
    }

    #[test]
    fn readable_timeout_and_stop() {
        rt().block_on(async {
            let (conn, mut peer) = pair().await;
            // Nothing sent: the deadline ends it.
            let d = Instant::now() + Duration::from_millis(30);
            let w = wait_for(&conn, Some(d), None).await;
            assert!(matches!(w, Woken::TimedOut), "{w:?}");
            assert!(Instant::now() >= d, "a timer must never fire early");
            // A stop requested while waiting ends it.
            let stop = Stop::new();
            let wait = wait_for(&conn, None, Some(&stop));
            let trigger = async {
                tokio::task::yield_now().await;
                stop.trigger();
            };
            let (w, ()) = tokio::join!(wait, trigger);
            assert!(matches!(w, Woken::Stopped), "{w:?}");
            // A stop already requested ends it at once.
            let w = wait_for(&conn, None, Some(&stop)).await;
            assert!(matches!(w, Woken::Stopped), "{w:?}");
            // Without a stop to watch, readiness ends it.
            peer.write_all(b"GET").await.unwrap();
            let w = wait_for(&conn, Some(Instant::now() + Duration::from_secs(5)), None).await;
            // The three bytes sent were read.
            assert!(matches!(w, Woken::Readable(Ok(()))), "{w:?}");
        });
    }

    #[test]
    fn small_enough_for_every_idle_connection() {
        rt().block_on(async {
            let (conn, _peer) = pair().await;
            let stop = Stop::new();
            let w = IdleWait::new(&conn, Some(Instant::now()), Some(&stop));
            let size = std::mem::size_of_val(&w);
            assert!(size <= 256, "IdleWait is {size} bytes");
        });
    }
}
