//! Request bodies read before forwarding, on HTTP/2 streams: `option
//! http-buffer-request` (so that `req.body` and friends see the body) and
//! the body of a POST to a local service (the stats page's admin form).
//!
//! The bytes are copied from the stream's queue, not taken from it: the
//! queue still holds them for the server, and they keep counting against
//! the client's window until forwarded. As on HTTP/1, the wait ends with
//! the body, or once a buffer's worth arrived (`tune.bufsize` less the
//! rewrite reserve), or when `timeout http-request` (else `timeout
//! client`) expires; rules then see what arrived.

use super::conn::{ConnCx, Signals};
use fairlead_net::pool;
use tokio::time::Instant;

/// Waits for the request body of stream `id` as described above; returns
/// a copy (a pooled vector: give it back with `pool::give_out`).
/// `content_length` bounds the wait when the request declared one.
pub(crate) async fn wait_body(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    content_length: Option<u64>,
) -> Vec<u8> {
    let max = cx.ctx.front.max_head;
    let want = content_length.map_or(max, |n| usize::try_from(n).unwrap_or(max).min(max));
    let t = &cx.ctx.front.timeouts;
    let deadline = t.http_request.or(t.client).map(|d| Instant::now() + d);
    loop {
        let ready = {
            let mut sh = cx.sh.borrow_mut();
            match sh.stream(id) {
                Some(s) if !s.reset => s.end || s.body.len() >= want,
                _ => true,
            }
        };
        if ready {
            break;
        }
        let waited = fairlead_net::io::until(deadline, "http-request timeout", async {
            sig.body.notified().await;
            Ok(())
        })
        .await;
        if waited.is_err() {
            break;
        }
    }
    let mut out = pool::take_out();
    let mut sh = cx.sh.borrow_mut();
    if let Some(s) = sh.stream(id) {
        let n = s.body.len().min(want);
        out.extend_from_slice(s.body.get(..n).unwrap_or_default());
    }
    out
}
