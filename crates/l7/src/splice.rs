//! Kernel splicing of HTTP/1 message bodies (`option splice-request`,
//! `splice-response`, `splice-auto`), as HAProxy does: once the head is
//! parsed and forwarded, the bytes of a body whose framing is a
//! content-length, or a response delimited by the server's close, go
//! socket to pipe to socket with `splice(2)` ([`fairlead_net::splice`])
//! instead of through a buffer.
//!
//! Never spliced: chunked bodies (their framing is decoded and written
//! again), TLS on either side (the kernel would move ciphertext), HTTP/2
//! (its streams never come here), and request bodies that a rule reads
//! (`option http-buffer-request`).
//!
//! The body bytes that arrived with the head are copied first (the normal
//! path); the rest of a content-length body is spliced exactly, never
//! past its end, so that the next pipelined message stays in the socket
//! for the codec. Each wait for the source is bounded by its read
//! timeout, each wait for room on the destination by its write timeout,
//! and the byte counts are those of the copy path (a spliced body's input
//! and output bytes are the same).

use crate::body::{BodyError, Framer, Moved};
use fairlead_l4::SpliceMode;
use fairlead_net::io::with_timeout;
use fairlead_net::splice::Pipe;
use fairlead_net::Conn;
use std::io::{Error, ErrorKind};
use std::time::Duration;

/// Reads in a row that must fill the buffer before `splice-auto` splices
/// the rest of a body: the same "fast streamer" rule as TCP mode's
/// (`fairlead_l4`'s `STREAMER_READS`). Default is 3.
pub(crate) const STREAMER_READS: u8 = 3;

/// Bytes spliced before the stream lets the other tasks of its thread
/// run, as a TCP-mode burst. Default is 256 KiB.
pub(crate) const BURST_MAX: u64 = 256 * 1024;

/// Whether, and from when, one body splices. Default is never.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BodySplice {
    mode: SpliceMode,
    full_reads: u8,
}

impl BodySplice {
    /// The splicing of a body going from `src` to `dst` as `mode` asks
    /// (`SpliceMode::Off` when either connection is TLS or on the
    /// io_uring path, whose bytes arrive in the ring's buffers).
    pub(crate) fn new(mode: SpliceMode, src: &Conn, dst: &Conn) -> BodySplice {
        let epoll = src.tcp().is_some() && dst.tcp().is_some();
        let mode = if src.is_tls() || dst.is_tls() || !epoll {
            SpliceMode::Off
        } else {
            mode
        };
        BodySplice {
            mode,
            full_reads: 0,
        }
    }

    /// The rest of the body described by `framer` should go through a
    /// pipe now: its framing allows it and the mode asks for it (for
    /// `splice-auto`, after [`STREAMER_READS`] full reads in a row).
    pub(crate) fn wants(&self, framer: &Framer) -> bool {
        if framer.splice_limit().is_none() {
            return false;
        }
        match self.mode {
            SpliceMode::Off => false,
            SpliceMode::Always => true,
            SpliceMode::Auto => self.full_reads >= STREAMER_READS,
        }
    }

    /// Records one buffered read of the body: `full` when it filled the
    /// buffer. A short read restarts the count.
    pub(crate) fn record_read(&mut self, full: bool) {
        self.full_reads = if full {
            self.full_reads.saturating_add(1)
        } else {
            0
        };
    }
}

/// Moves what `src` holds of the body `framer` describes to `dst` through
/// `pipe`, adding the bytes to `total`, until the source has nothing more
/// for now, [`BURST_MAX`] bytes moved (the thread's other tasks then get
/// their turn), or the body ended: a content-length body at its last byte,
/// a close-delimited one at the source's end of stream (the framer is then
/// done). The caller waits for the source's readiness before, without a
/// pipe: a stream holds one only while it moves bytes. The pipe is empty
/// when this returns `Ok`; after an error it may hold bytes (the pool
/// closes it).
pub(crate) async fn splice_burst(
    framer: &mut Framer,
    (src, dst): (&Conn, &Conn),
    pipe: &mut Pipe,
    write_idle: Option<Duration>,
    total: &mut Moved,
) -> Result<(), BodyError> {
    let (Some(src_tcp), Some(dst_tcp)) = (src.tcp(), dst.tcp()) else {
        // Not reached: only epoll sockets splice (see `BodySplice::new`).
        return Err(BodyError::Source(ErrorKind::Unsupported.into()));
    };
    let mut moved = 0u64;
    while let Some(due) = framer.splice_limit() {
        if moved >= BURST_MAX {
            tokio::task::yield_now().await;
            return Ok(());
        }
        let max = usize::try_from(due).unwrap_or(usize::MAX);
        let n = match pipe.fill_from_at_most(src_tcp, max) {
            Ok(0) if framer.until_eof() => {
                framer.end_at_eof();
                return Ok(());
            }
            Ok(0) => {
                return Err(BodyError::Source(Error::new(
                    ErrorKind::UnexpectedEof,
                    "connection closed inside the body",
                )))
            }
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(BodyError::Source(e)),
        };
        framer.spliced(n as u64);
        total.read += n as u64;
        moved += n as u64;
        drain(pipe, dst_tcp, write_idle, total).await?;
    }
    Ok(())
}

/// Empties `pipe` into `dst`, each wait for room bounded by `write_idle`.
async fn drain(
    pipe: &mut Pipe,
    dst: &tokio::net::TcpStream,
    write_idle: Option<Duration>,
    total: &mut Moved,
) -> Result<(), BodyError> {
    while pipe.held() > 0 {
        match pipe.drain_to(dst) {
            Ok(n) => total.written += n as u64,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                with_timeout(write_idle, "write timeout", dst.writable())
                    .await
                    .map_err(BodyError::Dest)?;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(BodyError::Dest(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairlead_http::BodyKind;

    fn auto() -> BodySplice {
        BodySplice {
            mode: SpliceMode::Auto,
            full_reads: 0,
        }
    }

    #[test]
    fn only_length_and_close_delimited_bodies_splice() {
        let always = BodySplice {
            mode: SpliceMode::Always,
            full_reads: 0,
        };
        assert!(always.wants(&Framer::new(BodyKind::Length(5))));
        assert!(always.wants(&Framer::new(BodyKind::CloseDelimited)));
        assert!(!always.wants(&Framer::new(BodyKind::Chunked)));
        assert!(!always.wants(&Framer::new(BodyKind::None)));
        assert!(!always.wants(&Framer::new(BodyKind::Length(0))));
        assert!(!BodySplice::default().wants(&Framer::new(BodyKind::Length(5))));
    }

    #[test]
    fn auto_splices_after_three_full_reads_in_a_row() {
        let body = Framer::new(BodyKind::Length(1 << 20));
        let mut s = auto();
        s.record_read(true);
        s.record_read(true);
        s.record_read(false);
        assert!(!s.wants(&body), "a short read restarts the count");
        s.record_read(true);
        s.record_read(true);
        assert!(!s.wants(&body));
        s.record_read(true);
        assert!(s.wants(&body));
        assert!(!s.wants(&Framer::new(BodyKind::Chunked)), "never chunked");
    }
}
