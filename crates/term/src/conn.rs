//! One client connection: parse requests (pipelining-safe, answered in
//! order), discard request bodies, write responses.
//!
//! Hot path: the read buffer, the output buffer and the header array are
//! reused for every request of a connection; responses to pipelined requests
//! are accumulated in the output buffer and flushed with one write when the
//! input runs dry. Bodies come from two pre-generated blocks (a compressible
//! pattern and random bytes) and are written from there, never built per
//! request.

use std::io::{self, IoSlice, Write as _};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::query::Params;
use crate::tls::Io;
use crate::Counter;

/// Size of each pre-generated body block; longer bodies repeat it.
pub(crate) const BLOCK: usize = 1 << 20;
/// Bodies up to this size are copied into the output buffer so that head
/// and body leave in one write; longer ones are written from the block.
const SMALL: u64 = 16 << 10;
/// Chunk size used for long chunked bodies.
const CHUNK: usize = 64 << 10;
/// Initial read buffer size; grows up to [`MAX_HEAD`] for big request heads.
const READ_BUF: usize = 16 << 10;
/// Largest accepted request head.
const MAX_HEAD: usize = 64 << 10;
/// Headers parsed per request; more is answered with 431.
const MAX_HEADERS: usize = 64;
/// Part size of streamed (`times=N`) responses when `s` is absent.
pub(crate) const DEFAULT_PART: u64 = 16;
/// How long a closing connection keeps draining input after its last
/// response, so unread request bytes do not turn the close into a reset.
const LINGER: Duration = Duration::from_millis(500);

/// Per-origin data shared by every connection.
pub(crate) struct Shared {
    /// `x-served-by: NAME\r\n`, or empty.
    name_hdr: Box<[u8]>,
    /// `NAME\n`, or empty.
    default_body: Box<[u8]>,
    /// Full response to a query-less HTTP/1.1 keep-alive GET.
    default_resp: Box<[u8]>,
}

impl Shared {
    pub(crate) fn new(name: &str) -> Shared {
        let (name_hdr, default_body) = if name.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            (
                format!("x-served-by: {name}\r\n").into_bytes(),
                format!("{name}\n").into_bytes(),
            )
        };
        let mut s = Shared {
            name_hdr: name_hdr.into(),
            default_body: default_body.into(),
            default_resp: Box::new([]),
        };
        let mut resp = Vec::new();
        s.put_head(
            &mut resp,
            200,
            Framing::Length(s.default_body.len() as u64),
            ConnHdr::None,
            false,
        );
        resp.extend_from_slice(&s.default_body);
        s.default_resp = resp.into();
        // Generate the blocks now rather than on the first request.
        pattern_block();
        random_block();
        s
    }

    /// The default body (`NAME\n`, or empty).
    pub(crate) fn default_body(&self) -> &[u8] {
        &self.default_body
    }

    /// The origin's name, if one is set.
    pub(crate) fn name(&self) -> Option<&[u8]> {
        self.default_body.strip_suffix(b"\n")
    }

    fn put_head(
        &self,
        out: &mut Vec<u8>,
        status: u16,
        framing: Framing,
        conn: ConnHdr,
        random: bool,
    ) {
        out.extend_from_slice(b"HTTP/1.1 ");
        let _ = write!(out, "{status} ");
        out.extend_from_slice(reason(status).as_bytes());
        out.extend_from_slice(b"\r\n");
        match framing {
            Framing::Length(n) => {
                let _ = write!(out, "content-length: {n}\r\n");
            }
            Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
            Framing::None => {}
        }
        if random {
            out.extend_from_slice(b"content-type: application/octet-stream\r\n");
        } else {
            out.extend_from_slice(b"content-type: text/plain\r\n");
        }
        out.extend_from_slice(&self.name_hdr);
        match conn {
            ConnHdr::None => {}
            ConnHdr::Close => out.extend_from_slice(b"connection: close\r\n"),
            ConnHdr::KeepAlive => out.extend_from_slice(b"connection: keep-alive\r\n"),
        }
        out.extend_from_slice(b"\r\n");
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    /// No body (204/304) or close-delimited body.
    None,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ConnHdr {
    None,
    Close,
    KeepAlive,
}

/// Compressible printable block: lines of 63 characters and a newline.
pub(crate) fn pattern_block() -> &'static [u8] {
    static B: OnceLock<Box<[u8]>> = OnceLock::new();
    B.get_or_init(|| {
        const LINE: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-";
        let mut v = Vec::with_capacity(BLOCK);
        while v.len() < BLOCK {
            v.extend_from_slice(LINE);
            v.push(b'\n');
        }
        v.truncate(BLOCK);
        v.into()
    })
}

/// Incompressible block (xorshift output), generated once per process.
pub(crate) fn random_block() -> &'static [u8] {
    static B: OnceLock<Box<[u8]>> = OnceLock::new();
    B.get_or_init(|| {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut v = Vec::with_capacity(BLOCK);
        while v.len() < BLOCK {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.into()
    })
}

/// Cheap per-thread random numbers for the streaming waits.
pub(crate) fn rand_below(n: u64) -> u64 {
    use std::cell::Cell;
    thread_local!(static S: Cell<u64> = Cell::new({
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        t | 1
    }));
    if n == 0 {
        return 0;
    }
    S.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x % n
    })
}

/// How the request body is delimited.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ReqBody {
    None,
    Length(u64),
    Chunked,
}

/// What we need from a parsed request head (owned, so the read buffer can be
/// reused while we answer).
struct ReqInfo {
    params: Params,
    http11: bool,
    keep_alive: bool,
    head_method: bool,
    body: ReqBody,
    expect_continue: bool,
}

/// Error answers; the connection is closed after them.
const RESP_400: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const RESP_431: &[u8] =
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const RESP_501: &[u8] =
    b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

fn token_list_has(v: &[u8], tok: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(tok))
}

/// Extracts [`ReqInfo`]; `Err(response)` for requests we refuse.
fn analyze(req: &httparse::Request<'_, '_>) -> Result<ReqInfo, &'static [u8]> {
    let http11 = req.version == Some(1);
    let mut conn_close = false;
    let mut conn_ka = false;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let n = h.name.as_bytes();
        if n.eq_ignore_ascii_case(b"content-length") {
            let v = crate::query::parse_u64(h.value.trim_ascii()).ok_or(RESP_400)?;
            if length.is_some_and(|l| l != v) {
                return Err(RESP_400);
            }
            length = Some(v);
        } else if n.eq_ignore_ascii_case(b"transfer-encoding") {
            // Only "chunked" (possibly after other codings we do not decode
            // but just skip) can delimit a request body.
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Err(RESP_501);
            }
            chunked = true;
        } else if n.eq_ignore_ascii_case(b"connection") {
            conn_close |= token_list_has(h.value, b"close");
            conn_ka |= token_list_has(h.value, b"keep-alive");
        } else if n.eq_ignore_ascii_case(b"expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    let params = Params::from_target(req.path.unwrap_or("/").as_bytes());
    let keep_alive = !params.close && !conn_close && (http11 || conn_ka);
    let body = if chunked {
        ReqBody::Chunked
    } else {
        match length {
            Some(0) | None => ReqBody::None,
            Some(n) => ReqBody::Length(n),
        }
    };
    Ok(ReqInfo {
        params,
        http11,
        // Both TE and CL: TE wins, and the connection must not be reused.
        keep_alive: keep_alive && !(chunked && length.is_some()),
        head_method: req.method == Some("HEAD"),
        body,
        expect_continue,
    })
}

/// Incremental discarding decoder for a chunked request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// Expecting a chunk-size line.
    Size,
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one.
    Trailer,
    Done,
}

impl Chunked {
    /// Consumes what it can of `data`; returns the bytes used.
    /// `Err` on malformed input.
    fn feed(&mut self, data: &[u8]) -> Result<usize, ()> {
        let mut pos = 0;
        loop {
            let rest = &data[pos..];
            match *self {
                Chunked::Done => return Ok(pos),
                Chunked::Data(n) => {
                    let take = (rest.len() as u64).min(n);
                    pos += take as usize;
                    *self = if take == n {
                        Chunked::DataEnd
                    } else {
                        Chunked::Data(n - take)
                    };
                    if take < n {
                        return Ok(pos);
                    }
                }
                Chunked::Size | Chunked::DataEnd | Chunked::Trailer => {
                    let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                        return Ok(pos);
                    };
                    let mut line = &rest[..nl];
                    if let Some(l) = line.strip_suffix(b"\r") {
                        line = l;
                    }
                    pos += nl + 1;
                    *self = match *self {
                        Chunked::Size => {
                            let hex = line.split(|&b| b == b';').next().unwrap_or(b"");
                            let hex = hex.trim_ascii();
                            if hex.is_empty() || hex.len() > 15 {
                                return Err(());
                            }
                            let mut n: u64 = 0;
                            for &b in hex {
                                let d = (b as char).to_digit(16).ok_or(())?;
                                n = n * 16 + d as u64;
                            }
                            if n == 0 {
                                Chunked::Trailer
                            } else {
                                Chunked::Data(n)
                            }
                        }
                        Chunked::DataEnd => {
                            if !line.is_empty() {
                                return Err(());
                            }
                            Chunked::Size
                        }
                        _ => {
                            if line.is_empty() {
                                Chunked::Done
                            } else {
                                Chunked::Trailer
                            }
                        }
                    };
                }
            }
        }
    }
}

/// Writes every byte of `bufs`, with as few syscalls as the kernel allows.
async fn write_all_v(sock: &mut TcpStream, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        let n = sock.write_vectored(bufs).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut bufs, n);
    }
    Ok(())
}

/// Formats `n` as a chunk-size line (`HEX\r\n`) into `buf`; returns its length.
fn chunk_line(buf: &mut [u8; 20], n: u64) -> usize {
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    let mut v = n;
    loop {
        i -= 1;
        tmp[i] = b"0123456789abcdef"[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    let l = tmp.len() - i;
    buf[..l].copy_from_slice(&tmp[i..]);
    buf[l] = b'\r';
    buf[l + 1] = b'\n';
    l + 2
}

enum Next {
    /// Incomplete head: read more.
    Need,
    Req(ReqInfo),
    /// Refused: send this and close.
    Bad(&'static [u8]),
}

struct Conn {
    sock: TcpStream,
    shared: Arc<Shared>,
    counter: Arc<Counter>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
}

/// Serves one accepted connection until the client closes it, an error
/// occurs, or a response requires closing.
pub(crate) async fn serve(sock: TcpStream, shared: Arc<Shared>, counter: Arc<Counter>) {
    let mut c = Conn {
        sock,
        shared,
        counter,
        buf: vec![0; READ_BUF],
        start: 0,
        end: 0,
        out: Vec::with_capacity(READ_BUF),
    };
    match c.sniff_h2().await {
        Ok(false) => {}
        Ok(true) => {
            let Conn {
                sock,
                shared,
                counter,
                buf,
                end,
                ..
            } = c;
            let initial = buf.get(..end).unwrap_or_default();
            return crate::h2::serve(Io::Plain(sock), initial, shared, counter).await;
        }
        Err(_) => return,
    }
    if let Ok(true) = c.run().await {
        // Orderly close: flush, half-close, drain a little.
        let _ = c.flush().await;
        let _ = c.sock.shutdown().await;
        let _ = tokio::time::timeout(LINGER, async {
            let mut sink = [0u8; 4096];
            loop {
                match c.sock.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
    }
}

impl Conn {
    async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.sock.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads until the input is known to be, or not to be, the HTTP/2
    /// client preface (h2c with prior knowledge, detected on the plain
    /// port as HAProxy does). The bytes stay in the buffer.
    async fn sniff_h2(&mut self) -> io::Result<bool> {
        let preface = fairlead_h2::frame::PREFACE;
        loop {
            let have = self.buf.get(..self.end).unwrap_or_default();
            let k = have.len().min(preface.len());
            if have.get(..k) != preface.get(..k) {
                return Ok(false);
            }
            if k == preface.len() {
                return Ok(true);
            }
            if !self.fill().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// Moves unparsed bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Reads more input after the buffered bytes. `Ok(false)` on EOF.
    async fn fill(&mut self) -> io::Result<bool> {
        self.compact();
        if self.end == self.buf.len() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let n = self.sock.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n > 0)
    }

    /// Parses the next buffered request head (kept out of the async code so
    /// the header array never lives in the connection's future).
    fn parse_next(&mut self) -> Next {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&self.buf[self.start..self.end]) {
            Ok(httparse::Status::Complete(n)) => {
                let info = analyze(&req);
                self.start += n;
                match info {
                    Ok(i) => Next::Req(i),
                    Err(r) => Next::Bad(r),
                }
            }
            Ok(httparse::Status::Partial) => {
                if self.start == 0 && self.end == self.buf.len() {
                    if self.buf.len() >= MAX_HEAD {
                        return Next::Bad(RESP_431);
                    }
                    self.buf.resize(MAX_HEAD, 0);
                }
                Next::Need
            }
            Err(httparse::Error::TooManyHeaders) => Next::Bad(RESP_431),
            Err(_) => Next::Bad(RESP_400),
        }
    }

    /// The request loop. `Ok(true)`: close gracefully (after a response
    /// that asked for it); `Ok(false)`/`Err`: just drop the socket.
    async fn run(&mut self) -> io::Result<bool> {
        loop {
            // Answer every complete request already buffered.
            while self.start < self.end {
                let info = match self.parse_next() {
                    Next::Need => break,
                    Next::Req(i) => i,
                    Next::Bad(resp) => {
                        self.out.extend_from_slice(resp);
                        return Ok(true);
                    }
                };
                if !self.discard_body(&info).await? {
                    return Ok(false);
                }
                self.respond(&info).await?;
                if !info.keep_alive || (info.params.times > 0 && !info.http11) {
                    return Ok(true);
                }
                if self.out.len() >= READ_BUF {
                    self.flush().await?;
                }
            }
            self.flush().await?;
            if !self.fill().await? {
                return Ok(false);
            }
        }
    }

    /// Skips the request body. `Ok(false)` if the client went away or sent
    /// a malformed body (nothing more can be answered then).
    async fn discard_body(&mut self, info: &ReqInfo) -> io::Result<bool> {
        if info.body == ReqBody::None {
            return Ok(true);
        }
        if info.expect_continue && self.start == self.end {
            self.out.extend_from_slice(CONTINUE);
            self.flush().await?;
        }
        match info.body {
            ReqBody::None => Ok(true),
            ReqBody::Length(mut left) => {
                loop {
                    let take = ((self.end - self.start) as u64).min(left);
                    self.start += take as usize;
                    left -= take;
                    if left == 0 {
                        return Ok(true);
                    }
                    // Buffer empty: read straight over it.
                    self.start = 0;
                    self.end = 0;
                    if !self.fill().await? {
                        return Ok(false);
                    }
                }
            }
            ReqBody::Chunked => {
                let mut dec = Chunked::Size;
                loop {
                    match dec.feed(&self.buf[self.start..self.end]) {
                        Ok(n) => self.start += n,
                        Err(()) => return Ok(false),
                    }
                    if dec == Chunked::Done {
                        return Ok(true);
                    }
                    match self.fill().await {
                        Ok(true) => {}
                        // EOF, or a chunk line longer than the buffer.
                        _ => return Ok(false),
                    }
                }
            }
        }
    }

    /// Appends (and writes when needed) the response to one request.
    async fn respond(&mut self, info: &ReqInfo) -> io::Result<()> {
        let p = &info.params;
        self.counter.requests.fetch_add(1, Ordering::Relaxed);
        if *p == Params::default() && info.http11 && info.keep_alive && !info.head_method {
            self.out.extend_from_slice(&self.shared.default_resp);
            return Ok(());
        }
        let status = p.status();
        let no_body = status == 204 || status == 304;
        let conn = if !info.keep_alive || (p.times > 0 && !info.http11 && !no_body) {
            ConnHdr::Close
        } else if !info.http11 {
            ConnHdr::KeepAlive
        } else {
            ConnHdr::None
        };
        if p.times > 0 && !no_body {
            return self.stream(info, conn).await;
        }
        if p.wait_ms > 0 {
            self.flush().await?;
            tokio::time::sleep(Duration::from_millis(p.wait_ms)).await;
        }
        let shared = self.shared.clone();
        if no_body {
            shared.put_head(&mut self.out, status, Framing::None, conn, p.random);
            return Ok(());
        }
        let len = match p.size {
            Some(s) => s,
            None => shared.default_body.len() as u64,
        };
        let chunked = p.chunked && info.http11;
        let framing = if chunked {
            Framing::Chunked
        } else {
            Framing::Length(len)
        };
        shared.put_head(&mut self.out, status, framing, conn, p.random);
        if info.head_method {
            return Ok(());
        }
        if p.size.is_none() {
            // The default body is always small.
            let body = &shared.default_body;
            if chunked && !body.is_empty() {
                let mut line = [0u8; 20];
                let l = chunk_line(&mut line, body.len() as u64);
                self.out.extend_from_slice(&line[..l]);
                self.out.extend_from_slice(body);
                self.out.extend_from_slice(b"\r\n");
            } else if !chunked {
                self.out.extend_from_slice(body);
            }
        } else {
            self.body(len, p.random, chunked).await?;
        }
        if chunked {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
        Ok(())
    }

    /// Appends or writes `len` body bytes from a block, as chunks when
    /// `chunked` (without the final zero-size chunk). The bytes may stay
    /// in the output buffer.
    async fn body(&mut self, len: u64, random: bool, chunked: bool) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let block = if random {
            random_block()
        } else {
            pattern_block()
        };
        let mut line = [0u8; 20];
        if len <= SMALL {
            let b = &block[..len as usize];
            if chunked {
                let l = chunk_line(&mut line, len);
                self.out.extend_from_slice(&line[..l]);
                self.out.extend_from_slice(b);
                self.out.extend_from_slice(b"\r\n");
            } else {
                self.out.extend_from_slice(b);
            }
            return Ok(());
        }
        let mut left = len;
        let mut off = 0usize;
        while left > 0 {
            let piece = if chunked { CHUNK } else { BLOCK };
            let n = (left.min(piece as u64) as usize).min(BLOCK - off);
            let data = &block[off..off + n];
            if chunked {
                let l = chunk_line(&mut line, n as u64);
                let mut v = [
                    IoSlice::new(&self.out),
                    IoSlice::new(&line[..l]),
                    IoSlice::new(data),
                    IoSlice::new(b"\r\n"),
                ];
                write_all_v(&mut self.sock, &mut v).await?;
            } else {
                let mut v = [IoSlice::new(&self.out), IoSlice::new(data)];
                write_all_v(&mut self.sock, &mut v).await?;
            }
            self.out.clear();
            off = (off + n) % BLOCK;
            left -= n as u64;
        }
        Ok(())
    }

    /// `times=N`: head now, then N parts each after a random wait of
    /// 0..=t ms. Chunked for HTTP/1.1, close-delimited for HTTP/1.0.
    async fn stream(&mut self, info: &ReqInfo, conn: ConnHdr) -> io::Result<()> {
        let p = &info.params;
        let chunked = info.http11;
        let framing = if chunked {
            Framing::Chunked
        } else {
            Framing::None
        };
        let shared = self.shared.clone();
        shared.put_head(&mut self.out, p.status(), framing, conn, p.random);
        if info.head_method {
            return Ok(());
        }
        self.flush().await?;
        let part = p.size.unwrap_or(DEFAULT_PART);
        for _ in 0..p.times {
            let wait = rand_below(p.wait_ms.saturating_add(1));
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            self.body(part, p.random, chunked).await?;
            self.flush().await?;
        }
        if chunked {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_lines() {
        let mut b = [0u8; 20];
        let l = chunk_line(&mut b, 0);
        assert_eq!(&b[..l], b"0\r\n");
        let l = chunk_line(&mut b, 0x1a2f);
        assert_eq!(&b[..l], b"1a2f\r\n");
    }

    #[test]
    fn chunked_decoder() {
        let body = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        // Whole at once.
        let mut d = Chunked::Size;
        let n = d.feed(body).unwrap();
        assert_eq!(d, Chunked::Done);
        assert_eq!(&body[n..], b"NEXT");
        // Byte by byte (feeding only what was not consumed).
        let mut d = Chunked::Size;
        let mut consumed = 0;
        for end in 1..=body.len() {
            consumed += d.feed(&body[consumed..end]).unwrap();
            if d == Chunked::Done {
                break;
            }
        }
        assert_eq!(d, Chunked::Done);
        assert_eq!(&body[consumed..], b"NEXT");
        assert!(Chunked::Size.feed(b"zz\r\n").is_err());
        assert!(Chunked::Size.feed(b"1\r\nab\r\n").is_err());
    }

    #[test]
    fn blocks() {
        assert_eq!(pattern_block().len(), BLOCK);
        assert_eq!(random_block().len(), BLOCK);
        assert_ne!(&random_block()[..64], &random_block()[64..128]);
    }
}
