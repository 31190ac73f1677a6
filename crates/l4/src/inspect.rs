//! Content inspection (`tcp-request content` with `tcp-request
//! inspect-delay`, `tcp-response content` with `tcp-response
//! inspect-delay`), as HAProxy runs it:
//!
//! - the rules run at once on what has arrived, then again each time more
//!   data arrives, until one decides (a final action, or the end of the
//!   rule set, which accepts);
//! - a condition that lacks data (MISS: `req.ssl_sni` on half a
//!   ClientHello, `req.len` below its bound) makes the rule set wait;
//! - once the delay expires, the side closes or the buffer is full
//!   (`tune.bufsize` minus `tune.maxrewrite`), the evaluation is *final*:
//!   a MISS then counts as no match. Without a delay the rules run once,
//!   final, on whatever is there.
//!
//! Data goes into an [`IoBuf`]: no buffer is held until bytes arrive, and
//! the caller gives it back as soon as the bytes were forwarded.

use crate::sleep_until;
use fairlead_net::{Conn, IoBuf};
use fairlead_rules::exec::Verdict;
use std::io::ErrorKind;
use std::time::Duration;
use tokio::time::Instant;

/// One side's bytes read during inspection.
pub(crate) struct Input<'c> {
    pub conn: &'c Conn,
    pub buf: IoBuf,
    /// The side sent its FIN (nothing more will come).
    pub eof: bool,
    /// Buffer size from which the inspection is final.
    pub max: usize,
    /// Bytes read so far (logs and counters).
    pub read: u64,
}

impl<'c> Input<'c> {
    pub fn new(conn: &'c Conn, max: usize) -> Self {
        Input {
            conn,
            buf: IoBuf::new(),
            eof: false,
            max: max.max(1),
            read: 0,
        }
    }

    /// Writes the inspected bytes to `dst` (byte for byte, before anything
    /// else) and gives the buffer back.
    pub async fn flush_to(&mut self, dst: &Conn, idle: Option<Duration>) -> std::io::Result<()> {
        let n = self.buf.len();
        let r = if n > 0 {
            dst.write_all(self.buf.filled(), idle).await
        } else {
            Ok(())
        };
        self.buf.consume(n);
        self.buf.release_if_empty();
        r
    }
}

/// How an inspection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `accept`, or no rule decided: go on.
    Accept,
    Reject,
    SilentDrop,
    /// `tcp-response content close`.
    Close,
    /// The side failed (reset) while the rules waited.
    Error,
    /// The side's inactivity timeout fired while the rules waited.
    Timeout,
}

/// One evaluation's answer.
pub(crate) enum Step {
    /// A condition lacks data.
    Wait,
    Done(Outcome),
}

/// What a rule set's verdict means for the stream.
pub(crate) fn classify(v: Verdict<'_>) -> Step {
    match v {
        Verdict::Wait => Step::Wait,
        Verdict::Reject | Verdict::Deny(_) | Verdict::Tarpit(_) => Step::Done(Outcome::Reject),
        Verdict::SilentDrop => Step::Done(Outcome::SilentDrop),
        Verdict::Close => Step::Done(Outcome::Close),
        _ => Step::Done(Outcome::Accept),
    }
}

/// Reads `input` and calls `eval(buffered, final)` until it decides.
/// `delay` is the inspect-delay, `idle` the side's inactivity timeout.
pub(crate) async fn inspect(
    input: &mut Input<'_>,
    delay: Option<Duration>,
    idle: Option<Duration>,
    eval: &mut dyn FnMut(&[u8], bool) -> Step,
) -> Outcome {
    let deadline = delay.map(|d| Instant::now() + d);
    let mut last = Instant::now();
    loop {
        let expired = deadline.is_none_or(|d| Instant::now() >= d);
        let done = input.eof || input.buf.len() >= input.max || expired;
        match eval(input.buf.filled(), done) {
            Step::Done(o) => return o,
            // Nothing can wait any more: the default verdict.
            Step::Wait if done => return Outcome::Accept,
            Step::Wait => {}
        }
        let idle_at = idle.map(|t| last + t);
        tokio::select! {
            r = input.conn.readable() => {
                if r.is_err() {
                    return Outcome::Error;
                }
            }
            _ = sleep_until(deadline) => continue,
            _ = sleep_until(idle_at) => return Outcome::Timeout,
        }
        let room = input.max - input.buf.len();
        match input.buf.try_read_from(input.conn, room) {
            Ok(0) => input.eof = true,
            Ok(n) => {
                input.read += n as u64;
                last = Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(_) => return Outcome::Error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Runs `f` on a current-thread runtime with a connected socket pair
    /// (the client side as a [`Conn`]).
    fn with_pair<F, Fut>(f: F)
    where
        F: FnOnce(Conn, tokio::net::TcpStream) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        fairlead_net::pool::init(4096);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let peer = tokio::net::TcpStream::connect(l.local_addr().unwrap())
                .await
                .unwrap();
            let (s, _) = l.accept().await.unwrap();
            f(Conn::plain(s), peer).await;
        });
    }

    #[test]
    fn waits_for_data_then_releases_the_buffer() {
        with_pair(|conn, mut peer| async move {
            let in_use = || {
                let (all, free) = fairlead_net::pool::stats();
                all - free
            };
            let before = in_use();
            let mut input = Input::new(&conn, 100);
            let writer = async {
                peer.write_all(b"abc").await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
                peer.write_all(b"def").await.unwrap();
                peer
            };
            let mut calls = 0;
            let mut eval = |buf: &[u8], _done: bool| {
                calls += 1;
                if buf.len() >= 6 {
                    Step::Done(Outcome::Accept)
                } else {
                    Step::Wait
                }
            };
            let delay = Some(Duration::from_secs(5));
            let (o, _peer) = tokio::join!(inspect(&mut input, delay, None, &mut eval), writer);
            assert_eq!(o, Outcome::Accept);
            assert_eq!(input.buf.filled(), b"abcdef");
            assert_eq!(input.read, 6);
            assert!(calls >= 2);
            assert_eq!(in_use(), before + 1, "one pooled buffer while inspecting");
            // Flushing gives the buffer back to the pool.
            input.flush_to(&conn, None).await.unwrap();
            assert!(input.buf.is_empty());
            assert_eq!(in_use(), before);
        });
    }

    #[test]
    fn the_delay_makes_the_evaluation_final() {
        with_pair(|conn, _peer| async move {
            let mut input = Input::new(&conn, 100);
            let mut finals = Vec::new();
            let mut eval = |_: &[u8], done: bool| {
                finals.push(done);
                if done {
                    Step::Done(Outcome::Reject)
                } else {
                    Step::Wait
                }
            };
            let delay = Some(Duration::from_millis(30));
            let o = inspect(&mut input, delay, None, &mut eval).await;
            assert_eq!(o, Outcome::Reject);
            assert_eq!(finals, [false, true]);
            // Without a delay: one final evaluation at once.
            let mut n = 0;
            let o = inspect(&mut input, None, None, &mut |_, done| {
                n += 1;
                assert!(done);
                Step::Wait
            })
            .await;
            assert_eq!((o, n), (Outcome::Accept, 1));
        });
    }
}
