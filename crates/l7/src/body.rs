//! Streaming message bodies from one socket to another, through the
//! source's pooled input buffer.
//!
//! The output side decides the framing, as in HAProxy's HTX: a
//! content-length or close-delimited body is forwarded as it is (its bytes
//! are the data), while a chunked body is decoded and framed again
//! ([`Dechunk`]): one chunk per read with an upper-case hex size, chunk
//! extensions dropped, trailers kept ([`Out::Chunked`]), or no framing at
//! all for an HTTP/1.0 client, which cannot receive chunked encoding and
//! gets the data until the connection closes ([`Out::Raw`]).

use crate::splice::{splice_burst, BodySplice};
use fairlead_http::msg::Head;
use fairlead_http::{BodyKind, ChunkProgress, ChunkedState, HttpError};
use fairlead_net::{pool, Conn, IoBuf};
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
    /// A chunked body, decoded and framed again as `Out` says.
    Chunked(Box<Dechunk>, Out),
    UntilEof,
    Done,
}

/// How the output frames a chunked input body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Out {
    /// Chunked again, with the trailers.
    Chunked,
    /// The bare data (HTTP/1.0 client; the connection closes after it).
    Raw,
}

/// What to send for some body input: the input bytes themselves, or the
/// re-framed bytes of a chunked body (a pooled vector, sent from `start`).
pub(crate) struct Framed {
    /// Input bytes used.
    pub used: usize,
    out: Option<(Vec<u8>, usize)>,
}

impl Framed {
    /// The bytes to send for `input[..used]`.
    pub fn bytes<'a>(&'a self, input: &'a [u8]) -> &'a [u8] {
        match &self.out {
            Some((v, start)) => v.get(*start..).unwrap_or_default(),
            None => input.get(..self.used).unwrap_or_default(),
        }
    }

    /// Gives the re-framed bytes' vector back to the pool.
    pub fn release(self) {
        if let Some((v, _)) = self.out {
            pool::give_out(v);
        }
    }
}

/// Body bytes a transfer moved: read from the source (with the input's
/// framing) and written to the destination (with the output's).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Moved {
    pub read: u64,
    pub written: u64,
}

/// Room kept in front of a chunk's data for its size line: 16 hex digits
/// and CRLF.
const SIZE_LINE_ROOM: usize = 18;

impl Framer {
    /// The framer of a body of `kind` going to an output that takes
    /// chunked encoding.
    pub fn new(kind: BodyKind) -> Framer {
        Framer::to(kind, Out::Chunked)
    }

    /// The framer of a body of `kind`; a chunked one is framed as `out`.
    pub fn to(kind: BodyKind, out: Out) -> Framer {
        match kind {
            BodyKind::None | BodyKind::Length(0) => Framer::Done,
            BodyKind::Length(n) => Framer::Remaining(n),
            BodyKind::Chunked => Framer::Chunked(Box::new(Dechunk::new()), out),
            BodyKind::CloseDelimited => Framer::UntilEof,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, Framer::Done)
    }

    /// Uses the body bytes at the start of `input` (marking the framer
    /// done when the body ends inside them) and says what to send for
    /// them.
    pub fn frame(&mut self, input: &[u8]) -> Result<Framed, HttpError> {
        let used = match self {
            Framer::Done => 0,
            Framer::UntilEof => input.len(),
            Framer::Remaining(n) => {
                let k = (*n).min(input.len() as u64) as usize;
                *n -= k as u64;
                if *n == 0 {
                    *self = Framer::Done;
                }
                k
            }
            Framer::Chunked(d, out) => {
                let (framed, done) = reframe(d, *out, input)?;
                if done {
                    *self = Framer::Done;
                }
                return Ok(framed);
            }
        };
        Ok(Framed { used, out: None })
    }

    /// Whether body bytes of known length are still due after what was
    /// framed: the sends of such a body carry `MSG_MORE` (see
    /// [`Conn::write_all_more`]) until its last bytes. Chunked and
    /// close-delimited bodies do not: their sender may pause between
    /// pieces (a stream of events), and a held partial segment would wait
    /// for the next one.
    pub fn more_due(&self) -> bool {
        matches!(self, Framer::Remaining(n) if *n > 0)
    }

    /// The bytes a pipe may still move for this body: the rest of a
    /// content-length body, or any number until the close of a
    /// close-delimited one. `None`: the body cannot be spliced (chunked,
    /// its framing is decoded and written again) or is over.
    pub fn splice_limit(&self) -> Option<u64> {
        match self {
            Framer::Remaining(n) if *n > 0 => Some(*n),
            Framer::UntilEof => Some(u64::MAX),
            _ => None,
        }
    }

    /// Accounts for `n` body bytes moved through a pipe (at most
    /// [`Framer::splice_limit`]).
    pub fn spliced(&mut self, n: u64) {
        if let Framer::Remaining(left) = self {
            *left = left.saturating_sub(n);
            if *left == 0 {
                *self = Framer::Done;
            }
        }
    }

    /// A body that ends with the connection.
    pub fn until_eof(&self) -> bool {
        matches!(self, Framer::UntilEof)
    }

    /// The source closed: a close-delimited body is complete.
    pub fn end_at_eof(&mut self) {
        if self.until_eof() {
            *self = Framer::Done;
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

/// Decodes the chunked `input` and frames its data as `out` says. True
/// when the body ended.
fn reframe(d: &mut Dechunk, out: Out, input: &[u8]) -> Result<(Framed, bool), HttpError> {
    let mut v = pool::take_out();
    let room = if out == Out::Chunked {
        SIZE_LINE_ROOM
    } else {
        0
    };
    v.resize(room, 0);
    let (used, done) = match d.feed(input, &mut v) {
        Ok(r) => r,
        Err(e) => {
            pool::give_out(v);
            return Err(e);
        }
    };
    let mut start = room;
    let data = v.len() - room;
    if out == Out::Chunked {
        if data > 0 {
            let mut line = [0u8; SIZE_LINE_ROOM];
            let n = size_line(data, &mut line);
            start = room - n;
            v[start..room].copy_from_slice(&line[..n]);
            v.extend_from_slice(b"\r\n");
        }
        if done {
            v.extend_from_slice(b"0\r\n");
            v.extend_from_slice(d.trailer_section());
        }
    }
    Ok((
        Framed {
            used,
            out: Some((v, start)),
        },
        done,
    ))
}

/// Writes `n` in upper-case hex followed by CRLF (as HAProxy frames
/// chunks); returns the length.
fn size_line(n: usize, line: &mut [u8; SIZE_LINE_ROOM]) -> usize {
    let digits = (usize::BITS - n.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, b) in line.iter_mut().take(digits).enumerate() {
        let shift = 4 * (digits - 1 - i);
        *b = b"0123456789ABCDEF"[(n >> shift) & 0xf];
    }
    line[digits] = b'\r';
    line[digits + 1] = b'\n';
    digits + 2
}

/// Forwards the rest of a body from `src` (with `buf` holding what was
/// already read past the head) to `dst`. Bytes after the body stay in `buf`.
/// `read_idle` bounds each wait for the source, `write_idle` each wait for
/// the destination; `no_delay` (`option http-no-delay`) never holds a
/// send with `MSG_MORE`. `closing`: the caller shuts the write side down
/// right after the body, so its last bytes are held with `MSG_MORE` too
/// and leave with the FIN, in one segment. When `sp` asks for it and a
/// pipe is free, the rest of the body (after what `buf` held) is spliced
/// ([`crate::splice`]). Returns the body bytes read and written.
pub(crate) async fn forward(
    framer: &mut Framer,
    (src, buf): (&Conn, &mut IoBuf),
    dst: &Conn,
    (read_idle, write_idle): (Option<Duration>, Option<Duration>),
    (no_delay, closing): (bool, bool),
    sp: &mut BodySplice,
) -> Result<Moved, BodyError> {
    let mut total = Moved::default();
    loop {
        if !buf.is_empty() {
            let f = framer.frame(buf.filled()).map_err(BodyError::Framing)?;
            let bytes = f.bytes(buf.filled());
            let wrote = if bytes.is_empty() {
                Ok(())
            } else {
                let more = (framer.more_due() && !no_delay) || (closing && framer.is_done());
                dst.write_all_more(bytes, write_idle, more).await
            };
            let (used, sent) = (f.used, bytes.len());
            f.release();
            wrote.map_err(BodyError::Dest)?;
            buf.consume(used);
            total.read += used as u64;
            total.written += sent as u64;
        }
        if framer.is_done() {
            buf.release_if_empty();
            return Ok(total);
        }
        if let Some(pair) = src.ring_pair(dst) {
            let idle = (read_idle, write_idle);
            if lend(framer, pair, idle, (no_delay, closing), &mut total).await? {
                continue;
            }
        }
        if sp.wants(framer) {
            buf.release_if_empty();
            let ready =
                fairlead_net::io::with_timeout(read_idle, "body read timeout", src.readable());
            ready.await.map_err(BodyError::Source)?;
            // No pipe free: this burst is copied through the buffer.
            if let Some(mut pipe) = fairlead_net::splice::take() {
                let r = splice_burst(framer, (src, dst), &mut pipe, write_idle, &mut total).await;
                fairlead_net::splice::give(pipe);
                r?;
                continue;
            }
        }
        let limit = framer.read_limit();
        let read = fairlead_net::io::with_timeout(read_idle, "body read timeout", async {
            buf.read_from(src, limit).await
        })
        .await;
        // The buffer was empty before the read (a spliceable body's bytes
        // are all used): a full one means the read filled it.
        if let Ok(n) = read {
            sp.record_read(n > 0 && buf.is_full());
        }
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

/// On the io_uring path, forwards what `src` received of a body whose
/// bytes pass unchanged (see [`Framer::splice_limit`]) without copying
/// them ([`fairlead_net::UringSock::lend_from`]). False when nothing
/// could be lent: the caller reads and writes through its buffer, which
/// also deals with the end of the stream and errors.
async fn lend(
    framer: &mut Framer,
    (src, dst): (&fairlead_net::UringSock, &fairlead_net::UringSock),
    (read_idle, write_idle): (Option<Duration>, Option<Duration>),
    (no_delay, closing): (bool, bool),
    total: &mut Moved,
) -> Result<bool, BodyError> {
    let Some(due) = framer.splice_limit() else {
        return Ok(false);
    };
    let room = fairlead_net::io::lend_room(dst, write_idle, "body write timeout");
    room.await.map_err(BodyError::Dest)?;
    let ready = fairlead_net::io::with_timeout(read_idle, "body read timeout", src.readable());
    ready.await.map_err(BodyError::Source)?;
    let max = usize::try_from(due).unwrap_or(usize::MAX);
    // MSG_MORE while more of the body is due, and after its last bytes
    // when the FIN follows them.
    let n = dst.lend_from(src, max, (!no_delay, closing));
    if n == 0 {
        return Ok(false);
    }
    framer.spliced(n as u64);
    total.read += n as u64;
    total.written += n as u64;
    Ok(true)
}

/// A chunked body turned into its data and trailers.
pub(crate) struct Dechunk {
    state: ChunkedState,
    /// Framing bytes since the last data byte: at the end, the last-chunk
    /// line and the trailer section (bounded by the validator's limits).
    tail: Vec<u8>,
}

impl Dechunk {
    pub fn new() -> Dechunk {
        Dechunk {
            state: ChunkedState::new(),
            tail: Vec::new(),
        }
    }

    /// Decodes `input`, appending its data to `data`. Returns how many
    /// bytes of `input` were used and whether the body ended.
    pub fn feed(&mut self, input: &[u8], data: &mut Vec<u8>) -> Result<(usize, bool), HttpError> {
        let base = input.as_ptr() as usize;
        let mut last_end = None;
        let p = self.state.feed_with(input, |run| {
            data.extend_from_slice(run);
            let off = (run.as_ptr() as usize).saturating_sub(base);
            last_end = Some(off + run.len());
        })?;
        let (used, done) = match p {
            ChunkProgress::NeedMore => (input.len(), false),
            ChunkProgress::Done(n) => (n, true),
        };
        let from = match last_end {
            Some(e) => {
                self.tail.clear();
                e
            }
            None => 0,
        };
        if let Some(framing) = input.get(from..used) {
            self.tail.extend_from_slice(framing);
        }
        Ok((used, done))
    }

    /// The trailers of a finished body, if it had any (a pooled head).
    pub fn trailers(&self) -> Option<Head> {
        crate::h2::parse_trailers(&self.tail)
    }

    /// The trailer section of a finished body as received (validated by
    /// the decoder): the trailer lines and the final CRLF, without the
    /// last-chunk line.
    pub fn trailer_section(&self) -> &[u8] {
        let t = self.tail.strip_prefix(b"\r\n").unwrap_or(&self.tail);
        match t.windows(2).position(|w| w == b"\r\n") {
            Some(i) => t.get(i + 2..).unwrap_or(b"\r\n"),
            None => b"\r\n",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], out: Out, split: usize) -> (Vec<u8>, usize, bool) {
        let mut f = Framer::to(BodyKind::Chunked, out);
        let mut sent = Vec::new();
        let mut used = 0;
        for part in [&input[..split], &input[split..]] {
            let framed = f.frame(part).unwrap();
            sent.extend_from_slice(framed.bytes(part));
            used += framed.used;
            framed.release();
        }
        (sent, used, f.is_done())
    }

    #[test]
    fn chunked_bodies_are_framed_again_whatever_the_split() {
        let input = b"3;ext=1\r\nabc\r\n00A\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\nNEXT";
        let body_len = input.len() - 4;
        let (whole, used, done) = run(input, Out::Chunked, input.len());
        assert_eq!(whole, b"D\r\nabc0123456789\r\n0\r\nx-t: 1\r\n\r\n");
        assert_eq!((used, done), (body_len, true));
        for split in 0..=input.len() {
            let (sent, used, done) = run(input, Out::Chunked, split);
            assert_eq!((used, done), (body_len, true), "split {split}");
            // Any split gives a valid chunked body with the same data and
            // trailers.
            let mut d = Dechunk::new();
            let mut data = Vec::new();
            assert_eq!(d.feed(&sent, &mut data).unwrap(), (sent.len(), true));
            assert_eq!(data, b"abc0123456789", "split {split}");
            assert_eq!(d.trailer_section(), b"x-t: 1\r\n\r\n");
            let (raw, _, _) = run(input, Out::Raw, split);
            assert_eq!(raw, b"abc0123456789", "split {split}");
        }
    }

    #[test]
    fn more_is_due_only_inside_a_body_of_known_length() {
        let mut f = Framer::new(BodyKind::Length(10));
        assert!(f.more_due());
        assert_eq!(f.frame(b"abcd").map(|x| x.used).ok(), Some(4));
        assert!(f.more_due(), "6 bytes still due");
        assert_eq!(f.frame(b"efghijXX").map(|x| x.used).ok(), Some(6));
        assert!(!f.more_due(), "the last send pushes");
        assert!(f.is_done());
        // Chunked and close-delimited bodies may pause between pieces.
        assert!(!Framer::new(BodyKind::Chunked).more_due());
        assert!(!Framer::new(BodyKind::CloseDelimited).more_due());
        assert!(!Framer::new(BodyKind::None).more_due());
    }

    #[test]
    fn size_lines_are_upper_case_hex() {
        let mut line = [0u8; SIZE_LINE_ROOM];
        for (n, want) in [
            (1usize, &b"1\r\n"[..]),
            (0x1a, b"1A\r\n"),
            (0x10000, b"10000\r\n"),
            (usize::MAX, b"FFFFFFFFFFFFFFFF\r\n"),
        ] {
            let k = size_line(n, &mut line);
            assert_eq!(&line[..k], want);
        }
    }

    #[test]
    fn bad_chunked_framing_is_an_error() {
        let mut f = Framer::new(BodyKind::Chunked);
        assert!(f.frame(b"zz\r\n").is_err());
    }
}
