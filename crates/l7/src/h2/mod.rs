//! HTTP/2 on the client side: one connection task multiplexes its
//! streams, each forwarded to an HTTP/1 server like an HTTP/1 request.
//! Toward HTTP/2 servers, `mux` keeps multiplexed connections pooled
//! per worker thread; `upstream` (HTTP/2 clients) and `h1_up` (HTTP/1
//! clients) run one request as a stream on them.
//!
//! # When a connection is HTTP/2
//!
//! * `bind ... ssl ... alpn h2,http/1.1` and the client chose `h2`;
//! * `bind ... proto h2` (prior knowledge, h2c, or TLS whatever ALPN
//!   chose): such a connection is never read as HTTP/1;
//! * on a clear bind without `proto`, the connection starts with the
//!   HTTP/2 preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`), as HAProxy
//!   detects it.
//!
//! # One task, many streams
//!
//! The connection task ([`serve_h2`]) runs three futures joined in one
//! `select!`: the **reader** (reads the socket into a pooled buffer and
//! feeds the sans-IO codec `fairlead-h2`, dispatching its events), the
//! **writer** (writes what the codec and the streams queued) and the
//! **driver** of a `FuturesUnordered` set of stream futures. A stream is
//! a future in that set, not a task: it owns the exchange with its
//! HTTP/1 server (rules, balancing, retries, log line) and shares the
//! codec with the others through an `Rc<RefCell<..>>` borrowed only for
//! synchronous steps.
//!
//! Why a set of futures rather than a hand-written state machine per
//! stream: each stream's exchange is the same sequence of awaits as an
//! HTTP/1 request (balance and queue, connect with retries, forward the
//! body while reading the response head, relay the body), and writing it
//! as a future reuses the backend's async API unchanged. `FuturesUnordered`
//! polls only the streams whose wakers fired, so a connection with 100
//! streams does not poll 100 futures per event, and dropping a stream's
//! future (client reset) drops its server connection at once.
//!
//! # Flow control is backpressure
//!
//! * Request body: DATA bytes are copied into the stream's queue and
//!   released to the codec (which then opens the client's window) only
//!   once written to the server. A stream's queue is therefore bounded by
//!   its receive window (`SETTINGS_INITIAL_WINDOW_SIZE`, 65535).
//! * Response body: a stream reads at most one pooled buffer from its
//!   server, and reads again only once the client's send window took what
//!   it had. A client that does not open its window stalls the server
//!   connection, not Fairlead's memory.
//! * Framing: request bodies go out with the client's `content-length`,
//!   else chunked (with the client's trailers); response bodies
//!   (content-length, chunked, close-delimited) become DATA frames, and
//!   chunked trailers become HTTP/2 trailers (gRPC's `grpc-status`).
//!
//! # Memory
//!
//! Between reads the connection holds no I/O buffer: the read buffer and
//! the output vector go back to `fairlead_net::pool` once empty. What
//! stays is the codec (its HPACK decoder table) and the small shared
//! record.
//!
//! # Timeouts and stopping
//!
//! With no stream open, the connection waits at most `timeout
//! http-keep-alive` (before the first request: `timeout http-request`),
//! else `timeout client`; then it closes with GOAWAY NO_ERROR. Writes use
//! `timeout client`. A soft stop (reload) starts the graceful GOAWAY
//! (last-stream 2^31-1 and a PING, then the real last stream): streams in
//! flight finish, no request is lost, and the connection closes when the
//! last one is done.

mod buffered;
mod conn;
mod flow;
pub(crate) mod h1_up;
pub(crate) mod mux;
mod resp;
mod rules;
mod stream;
mod tunnel;
mod upstream;

pub use conn::serve_h2;
pub(crate) use resp::parse_trailers;

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `buf` (the first bytes of a connection) may be the HTTP/2
/// preface: `Some(true)` when it is, `Some(false)` when it cannot be,
/// `None` when more bytes are needed to tell.
pub fn preface_state(buf: &[u8]) -> Option<bool> {
    let n = buf.len().min(PREFACE.len());
    if buf[..n] != PREFACE[..n] {
        return Some(false);
    }
    if n == PREFACE.len() {
        Some(true)
    } else {
        None
    }
}

/// Whether a new connection speaks HTTP/2 from the start: TLS with ALPN
/// `h2`, or a `bind ... proto h2` address.
pub(crate) fn selected(client: &fairlead_net::Conn, ctx: &crate::HttpCtx) -> bool {
    if client
        .tls_info_ref()
        .is_some_and(|i| i.alpn.as_deref() == Some(b"h2".as_slice()))
    {
        return true;
    }
    !ctx.front.h2_only.is_empty()
        && client
            .local_addr()
            .is_ok_and(|a| ctx.front.h2_only.iter().any(|b| bind_matches(*b, a)))
}

/// Whether the local address `a` of an accepted connection belongs to the
/// listening address `b` (a wildcard host matches any).
fn bind_matches(b: std::net::SocketAddr, a: std::net::SocketAddr) -> bool {
    b.port() == a.port() && (b.ip().is_unspecified() || b.ip() == a.ip())
}

/// On the first bytes of a connection: reads until they are known to be
/// the HTTP/2 preface or not (within `timeout http-request`). True: the
/// connection is HTTP/2.
pub(crate) async fn sniff(
    cbuf: &mut fairlead_net::IoBuf,
    client: &fairlead_net::Conn,
    accepted: tokio::time::Instant,
    ctx: &crate::HttpCtx,
) -> bool {
    let t = &ctx.front.timeouts;
    let deadline = t.http_request.or(t.client).map(|d| accepted + d);
    loop {
        match preface_state(cbuf.filled()) {
            Some(h2) => return h2,
            None if cbuf.is_full() => return false,
            None => {}
        }
        let r = fairlead_net::io::until(deadline, "http-request timeout", async {
            cbuf.read_from(client, usize::MAX).await
        })
        .await;
        if !matches!(r, Ok(n) if n > 0) {
            // Let the HTTP/1 path answer what it got.
            return false;
        }
    }
}

/// For the fuzz target (`fuzz/fuzz_targets/h2_dechunk.rs`): de-frames a
/// chunked response `body` as the HTTP/2 relay does, in one piece and
/// split at `split`, and checks both give the same data, end and
/// trailers (never panics on any input).
#[doc(hidden)]
pub fn dechunk_split_invariant(body: &[u8], split: usize) {
    /// Data, bytes used (`usize::MAX`: not ended), trailer fields.
    type Decoded = (Vec<u8>, usize, Vec<(Vec<u8>, Vec<u8>)>);
    fn once(parts: &[&[u8]]) -> Option<Decoded> {
        let mut d = resp::Dechunk::new();
        let mut data = Vec::new();
        let mut used = 0;
        for p in parts {
            let (n, done) = d.feed(p, &mut data).ok()?;
            used += n;
            if done {
                let t = d.trailers();
                let fields = t.as_ref().map_or(Vec::new(), |t| {
                    t.view(&[])
                        .headers()
                        .map(|(_, n, v)| (n.to_vec(), v.to_vec()))
                        .collect()
                });
                if let Some(t) = t {
                    fairlead_http::msg::give(t);
                }
                return Some((data, used, fields));
            }
        }
        Some((data, usize::MAX, Vec::new()))
    }
    let at = split.min(body.len());
    let whole = once(&[body]);
    let split = once(&[&body[..at], &body[at..]]);
    assert_eq!(
        whole, split,
        "de-chunking depends on how the input is split"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunking_does_not_depend_on_splits() {
        let inputs: [&[u8]; 5] = [
            b"5\r\nhello\r\n0\r\ngrpc-status: 0\r\n\r\nrest",
            b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
            b"zz\r\n",
            b"5\r\nhel",
            b"0\r\nbad trailer\r\n\r\n",
        ];
        for body in inputs {
            for split in 0..=body.len() {
                dechunk_split_invariant(body, split);
            }
        }
    }

    #[test]
    fn preface_detection() {
        assert_eq!(preface_state(b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(preface_state(b"PRI * HTTP/2.0\r\n"), None);
        assert_eq!(preface_state(b""), None);
        assert_eq!(preface_state(PREFACE), Some(true));
        let mut more = PREFACE.to_vec();
        more.extend_from_slice(b"\x00\x00\x00\x04");
        assert_eq!(preface_state(&more), Some(true));
        assert_eq!(preface_state(b"PRI * HTTP/1.1"), Some(false));
    }
}
