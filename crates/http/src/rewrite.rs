//! Head rewriting for forwarding: [`write_request_head`] and
//! [`write_response_head`], for callers that do not edit the head. Both
//! describe the parsed head with a pooled [`crate::msg::Head`] and
//! serialise it: the hop-by-hop rules live in one place,
//! [`crate::msg::Head::write_request_h1`]. Header lines are copied byte
//! for byte from the parsed buffer (never re-serialised), always terminated
//! by CRLF even when the peer used bare LF. The only allocation is growth
//! of the caller's `out` vector (the pooled head keeps its capacity).

use crate::{msg, ConnHeader, RequestHead, RequestRewrite, ResponseHead};

/// Writes the request head to send to the server into `out`: the request
/// line with the version forced to HTTP/1.1, every header line copied byte
/// for byte except hop-by-hop ones (Connection, Keep-Alive,
/// Proxy-Connection, TE, Upgrade unless `conn` is `Upgrade`, and every
/// header named in Connection), then the proxy's own headers, then CRLF.
/// Transfer-Encoding and Content-Length are kept: the body is forwarded
/// unchanged.
///
/// Content-Length, Transfer-Encoding and Host are never dropped even if a
/// Connection header names them (that would change framing / routing).
/// `Trailer` is end-to-end and kept. Header order: copied headers, then
/// `Connection: ...` (per `rw.conn`), then the forwarded-for header.
pub fn write_request_head(
    buf: &[u8],
    head: &RequestHead,
    rw: &RequestRewrite<'_>,
    out: &mut Vec<u8>,
) {
    let mut h = msg::take();
    h.fill_request(buf, head);
    h.write_request_h1(buf, rw.conn, rw.forwarded_for, out);
    msg::give(h);
}

/// Writes the response head to send to the client into `out`, with the
/// same hop-by-hop handling as [`write_request_head`]. The status line is
/// copied as is, except that the version is forced to HTTP/1.1.
pub fn write_response_head(buf: &[u8], head: &ResponseHead, conn: ConnHeader, out: &mut Vec<u8>) {
    let mut h = msg::take();
    h.fill_response(buf, head);
    h.write_response_h1(buf, conn, out);
    msg::give(h);
}

/// Like [`write_response_head`], without `Transfer-Encoding`: for a
/// chunked body sent to an HTTP/1.0 client as bare data until close.
pub fn write_response_head_unchunked(
    buf: &[u8],
    head: &ResponseHead,
    conn: ConnHeader,
    out: &mut Vec<u8>,
) {
    let mut h = msg::take();
    h.fill_response(buf, head);
    h.edit(buf).drop_transfer_encoding();
    h.write_response_h1(buf, conn, out);
    msg::give(h);
}
