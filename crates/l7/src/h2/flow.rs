//! The two body flows of a stream forwarded to an HTTP/1 server: the
//! request body pump (client DATA written to the server, each byte
//! released to the client's window once written) and the response body
//! relay (the server's body de-framed into DATA frames within the
//! client's window). Tunnels use both with raw bytes.

use super::conn::{ConnCx, Signals};
use super::resp::{self, send_all, Dechunk};
use fairlead_http::msg;
use fairlead_http::BodyKind;
use fairlead_log::Who;
use fairlead_net::io::with_timeout;
use fairlead_net::{pool, Conn, IoBuf};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tokio::sync::Notify;

/// The server side of a stream: where the body pump writes, once the
/// request head went out on it.
#[derive(Default)]
pub(crate) struct Link {
    pub server: RefCell<Option<Rc<Conn>>>,
    pub ready: Notify,
    /// The whole request body was written.
    pub done: Cell<bool>,
    /// Body bytes written.
    pub sent: Cell<u64>,
}

/// Writes the request body to the server as it arrives, releasing each
/// byte to the client's window once written.
pub(crate) async fn pump(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    link: &Link,
    chunked: bool,
    timeout: Option<std::time::Duration>,
    tunnel: bool,
) {
    let server = loop {
        let s = link.server.borrow().clone();
        match s {
            Some(s) => break s,
            None => link.ready.notified().await,
        }
    };
    let mut spare = Vec::new();
    let mut framed = pool::take_out();
    loop {
        let (end, trailers) = {
            let mut sh = cx.sh.borrow_mut();
            let Some(s) = sh.stream(id) else { break };
            if s.reset {
                break;
            }
            std::mem::swap(&mut s.body, &mut spare);
            (s.end, if s.end { s.trailers.take() } else { None })
        };
        let n = spare.len();
        if n > 0 {
            framed.clear();
            if chunked {
                use std::io::Write as _;
                let _ = write!(framed, "{n:x}\r\n");
                framed.extend_from_slice(&spare);
                framed.extend_from_slice(b"\r\n");
            } else {
                framed.extend_from_slice(&spare);
            }
            spare.clear();
            if server.write_all(&framed, timeout).await.is_err() {
                break;
            }
            link.sent.set(link.sent.get() + n as u64);
            cx.with(|c, o| c.release(id, n, o));
        }
        if end {
            let mut ok = true;
            if chunked {
                framed.clear();
                resp::write_last_chunk(trailers.as_ref(), &mut framed);
                ok = server.write_all(&framed, timeout).await.is_ok();
            }
            if let Some(t) = trailers {
                msg::give(t);
            }
            if tunnel {
                // The client's END_STREAM half-closes the tunnel.
                server.shutdown_write();
            }
            link.done.set(ok);
            break;
        }
        if n == 0 {
            sig.body.notified().await;
        }
    }
    pool::give_out(framed);
    if spare.capacity() > 0 {
        pool::give_out(spare);
    }
}

/// The response body, de-framed into DATA frames within the client's
/// window. Returns the body bytes sent, or who cut the transfer.
pub(crate) async fn relay_body(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    conn: &Conn,
    sbuf: &mut IoBuf,
    kind: BodyKind,
    timeout: Option<std::time::Duration>,
) -> Result<u64, Who> {
    let mut left = match kind {
        BodyKind::None | BodyKind::Length(0) => return Ok(0),
        BodyKind::Length(n) => Some(n),
        _ => None,
    };
    let mut dechunk = (kind == BodyKind::Chunked).then(Dechunk::new);
    let mut data = resp::scratch();
    let mut total = 0u64;
    let r = loop {
        if sbuf.is_empty() {
            let r = with_timeout(timeout, "server timeout", async {
                sbuf.read_from(conn, usize::MAX).await
            })
            .await;
            match r {
                Ok(0) if kind == BodyKind::CloseDelimited => {
                    break send_all(cx, id, sig, &[], true)
                        .await
                        .map_err(|_| Who::Client);
                }
                Ok(0) | Err(_) => break Err(Who::Server),
                Ok(_) => {}
            }
        }
        let input = sbuf.filled();
        if let Some(d) = &mut dechunk {
            data.clear();
            let Ok((used, done)) = d.feed(input, &mut data) else {
                break Err(Who::Server);
            };
            sbuf.consume(used);
            let trailers = if done { d.trailers() } else { None };
            let end_now = done && trailers.is_none();
            if send_all(cx, id, sig, &data, end_now).await.is_err() {
                break Err(Who::Client);
            }
            total += data.len() as u64;
            if let Some(t) = trailers {
                let r = cx.with(|c, o| c.send_trailers(id, &t, &[], o));
                msg::give(t);
                if r.is_err() {
                    break Err(Who::Client);
                }
            }
            if done {
                break Ok(());
            }
            continue;
        }
        let n = match left {
            Some(l) => input.len().min(usize::try_from(l).unwrap_or(usize::MAX)),
            None => input.len(),
        };
        let end = left.is_some_and(|l| l == n as u64);
        let chunk = input.get(..n).unwrap_or_default();
        if send_all(cx, id, sig, chunk, end).await.is_err() {
            break Err(Who::Client);
        }
        sbuf.consume(n);
        total += n as u64;
        if let Some(l) = &mut left {
            *l -= n as u64;
            if *l == 0 {
                break Ok(());
            }
        }
    };
    pool::give_out(data);
    r.map(|()| total)
}
