//! Streaming message bodies from one socket to another, through the
//! source's pooled input buffer, forwarding framing bytes unmodified.

use fairlead_http::{BodyKind, ChunkProgress, ChunkedState};
use fairlead_net::{Conn, IoBuf};
use std::io::{Error, ErrorKind};
use std::time::Duration;

/// Why a body transfer stopped early.
#[derive(Debug)]
#[allow(dead_code)] // the error values are kept for logging (operations issue)
pub(crate) enum BodyError {
    /// Reading the source failed, timed out or hit EOF too early.
    Source(Error),
    /// Writing the destination failed or timed out.
    Dest(Error),
    /// The chunked framing was invalid.
    Framing(fairlead_http::HttpError),
}

/// Tracks where a body ends while its bytes are forwarded.
pub(crate) enum Framer {
    Remaining(u64),
    Chunked(ChunkedState),
    UntilEof,
    Done,
}

impl Framer {
    pub fn new(kind: BodyKind) -> Framer {
        match kind {
            BodyKind::None | BodyKind::Length(0) => Framer::Done,
            BodyKind::Length(n) => Framer::Remaining(n),
            BodyKind::Chunked => Framer::Chunked(ChunkedState::new()),
            BodyKind::CloseDelimited => Framer::UntilEof,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, Framer::Done)
    }

    /// How many of `avail` bytes belong to the body; marks the framer done
    /// when the body ends inside them.
    pub fn take(&mut self, avail: &[u8]) -> Result<usize, fairlead_http::HttpError> {
        match self {
            Framer::Done => Ok(0),
            Framer::UntilEof => Ok(avail.len()),
            Framer::Remaining(n) => {
                let k = (*n).min(avail.len() as u64) as usize;
                *n -= k as u64;
                if *n == 0 {
                    *self = Framer::Done;
                }
                Ok(k)
            }
            Framer::Chunked(st) => match st.feed(avail)? {
                ChunkProgress::NeedMore => Ok(avail.len()),
                ChunkProgress::Done(k) => {
                    *self = Framer::Done;
                    Ok(k)
                }
            },
        }
    }

    /// Upper bound of bytes worth reading next (Content-Length bodies never
    /// read past their end, so pipelined data stays in the socket).
    fn read_limit(&self) -> usize {
        match self {
            Framer::Remaining(n) => (*n).min(usize::MAX as u64) as usize,
            _ => usize::MAX,
        }
    }
}

/// Forwards the rest of a body from `src` (with `buf` holding what was
/// already read past the head) to `dst`. Bytes after the body stay in `buf`.
/// `read_idle` bounds each wait for the source, `write_idle` each wait for
/// the destination. Returns the number of body bytes forwarded.
pub(crate) async fn forward(
    framer: &mut Framer,
    src: &Conn,
    buf: &mut IoBuf,
    dst: &Conn,
    read_idle: Option<Duration>,
    write_idle: Option<Duration>,
) -> Result<u64, BodyError> {
    let mut total = 0u64;
    loop {
        if !buf.is_empty() {
            let k = framer.take(buf.filled()).map_err(BodyError::Framing)?;
            if k > 0 {
                dst.write_all(&buf.filled()[..k], write_idle)
                    .await
                    .map_err(BodyError::Dest)?;
                buf.consume(k);
                total += k as u64;
            }
        }
        if framer.is_done() {
            buf.release_if_empty();
            return Ok(total);
        }
        let limit = framer.read_limit();
        let read = fairlead_net::io::with_timeout(read_idle, "body read timeout", async {
            buf.read_from(src, limit).await
        })
        .await;
        match read {
            Ok(0) => {
                if matches!(framer, Framer::UntilEof) {
                    *framer = Framer::Done;
                    return Ok(total);
                }
                return Err(BodyError::Source(Error::new(
                    ErrorKind::UnexpectedEof,
                    "connection closed inside the body",
                )));
            }
            Ok(_) => {}
            Err(e) => return Err(BodyError::Source(e)),
        }
    }
}
