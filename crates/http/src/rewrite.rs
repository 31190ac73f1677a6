//! Head rewriting for forwarding: [`write_request_head`] and
//! [`write_response_head`].
//!
//! Header lines are copied byte for byte from the parsed buffer (never
//! re-serialised), always terminated by CRLF even when the peer used bare
//! LF. Hop-by-hop headers are dropped; the proxy then appends its own
//! `Connection` and `X-Forwarded-For`-style headers. The only allocation is
//! growth of the caller's `out` vector.

use std::io::Write as _;

use crate::framing::{
    connection_names_other_headers, is_hop_by_hop, skip_leading_empty_lines, split_header_line,
    HeaderLines,
};
use crate::{ConnHeader, RequestHead, RequestRewrite, ResponseHead};

/// Copies the header lines of `buf[..end]` (start-line at `start`),
/// skipping hop-by-hop ones.
fn copy_headers(buf: &[u8], start: usize, end: usize, conn: ConnHeader, out: &mut Vec<u8>) {
    let keep_upgrade = conn == ConnHeader::Upgrade;
    let lookup = connection_names_other_headers(HeaderLines::new(buf, start, end));
    for line in HeaderLines::new(buf, start, end) {
        let (name, _) = split_header_line(line);
        let conn_lines = lookup.then(|| HeaderLines::new(buf, start, end));
        if is_hop_by_hop(name, keep_upgrade, conn_lines) {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
}

fn write_conn(conn: ConnHeader, out: &mut Vec<u8>) {
    match conn {
        ConnHeader::None => {}
        ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnHeader::Upgrade => out.extend_from_slice(b"Connection: upgrade\r\n"),
    }
}

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
    let end = head.head_len.min(buf.len());
    out.reserve(end + 64);
    out.extend_from_slice(&buf[head.method.0..head.method.1]);
    out.push(b' ');
    out.extend_from_slice(&buf[head.uri.0..head.uri.1]);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    copy_headers(buf, head.uri.1, end, rw.conn, out);
    write_conn(rw.conn, out);
    if let Some((name, ip)) = rw.forwarded_for {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        // Writing into a Vec cannot fail; IpAddr's Display needs no heap.
        let _ = write!(out, "{ip}");
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes the response head to send to the client into `out`, with the
/// same hop-by-hop handling as [`write_request_head`]. The status line is
/// copied as is, except that the version is forced to HTTP/1.1.
pub fn write_response_head(buf: &[u8], head: &ResponseHead, conn: ConnHeader, out: &mut Vec<u8>) {
    let end = head.head_len.min(buf.len());
    let start = skip_leading_empty_lines(&buf[..end]);
    let line_end = buf[start..end]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(end, |p| start + p);
    let mut line = &buf[start..line_end];
    line = line.strip_suffix(b"\r").unwrap_or(line);
    out.reserve(end + 32);
    out.extend_from_slice(b"HTTP/1.1");
    // "HTTP/1.x" is 8 bytes; the rest is " <code>[ <reason>]".
    out.extend_from_slice(line.get(8..).unwrap_or_default());
    out.extend_from_slice(b"\r\n");
    copy_headers(buf, start, end, conn, out);
    write_conn(conn, out);
    out.extend_from_slice(b"\r\n");
}
