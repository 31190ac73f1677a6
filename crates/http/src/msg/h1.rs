//! HTTP/1 serialisation of a [`Head`] for forwarding: the one place where
//! hop-by-hop headers are dropped ([`crate::write_request_head`] and
//! [`crate::write_response_head`] are wrappers over it).
//!
//! Unmodified fields are copied byte for byte from the receive buffer,
//! always terminated by CRLF even when the peer used bare LF; edited and
//! added ones are written `name: value`. The version is forced to
//! HTTP/1.1. The only allocation is growth of the caller's `out`.

use std::io::Write as _;
use std::net::IpAddr;

use super::Head;
use crate::framing::{eq_ic, is_hop_by_hop, list_elems, names_other_headers};
use crate::ConnHeader;

fn write_conn(conn: ConnHeader, out: &mut Vec<u8>) {
    match conn {
        ConnHeader::None => {}
        ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnHeader::Upgrade => out.extend_from_slice(b"Connection: upgrade\r\n"),
    }
}

impl Head {
    /// Writes the request head to send to a server into `out`: the request
    /// line with the version forced to HTTP/1.1, every live field except
    /// hop-by-hop ones (Connection, Keep-Alive, Proxy-Connection, TE,
    /// Upgrade unless `conn` is `Upgrade`, and every header named in a
    /// Connection field), then `Connection: ...` per `conn`, then
    /// `<name>: <ip>` for `forwarded_for`, then CRLF.
    ///
    /// Content-Length, Transfer-Encoding and Host are never dropped, even
    /// when a Connection header names them (that would change framing or
    /// routing); `Trailer` is end-to-end and kept. With no edit, the output
    /// is exactly what [`crate::write_request_head`] always produced.
    pub fn write_request_h1(
        &self,
        buf: &[u8],
        conn: ConnHeader,
        forwarded_for: Option<(&str, IpAddr)>,
        out: &mut Vec<u8>,
    ) {
        out.reserve(self.head_len + self.arena.len() + 64);
        out.extend_from_slice(self.bytes(buf, self.method));
        out.push(b' ');
        out.extend_from_slice(self.bytes(buf, self.target));
        out.extend_from_slice(b" HTTP/1.1\r\n");
        self.write_fields(buf, conn, out);
        write_conn(conn, out);
        if let Some((name, ip)) = forwarded_for {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            // Writing into a Vec cannot fail; IpAddr's Display needs no heap.
            let _ = write!(out, "{ip}");
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Writes the response head to send to a client into `out`, with the
    /// same field handling as [`Head::write_request_h1`]. The status line
    /// is copied as received (or as set), the version forced to HTTP/1.1.
    pub fn write_response_h1(&self, buf: &[u8], conn: ConnHeader, out: &mut Vec<u8>) {
        out.reserve(self.head_len + self.arena.len() + 32);
        out.extend_from_slice(b"HTTP/1.1");
        out.extend_from_slice(self.bytes(buf, self.status_tail));
        out.extend_from_slice(b"\r\n");
        self.write_fields(buf, conn, out);
        write_conn(conn, out);
        out.extend_from_slice(b"\r\n");
    }

    /// Every live field but the hop-by-hop ones, each followed by CRLF.
    fn write_fields(&self, buf: &[u8], conn: ConnHeader, out: &mut Vec<u8>) {
        let keep_upgrade = conn == ConnHeader::Upgrade;
        let lookup = self.connection_values(buf).any(names_other_headers);
        for (_, f) in self.live_fields() {
            let name = self.bytes(buf, f.name);
            let listed = |n: &[u8]| {
                lookup
                    && self
                        .connection_values(buf)
                        .any(|v| list_elems(v).any(|tok| eq_ic(tok, n)))
            };
            if is_hop_by_hop(name, keep_upgrade, listed) {
                continue;
            }
            match buf.get(f.name.start as usize..f.line_end as usize) {
                Some(line) if f.raw => out.extend_from_slice(line),
                _ => {
                    out.extend_from_slice(name);
                    out.extend_from_slice(b": ");
                    out.extend_from_slice(self.bytes(buf, f.value));
                }
            }
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Values of the live Connection fields.
    fn connection_values<'a>(&'a self, buf: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.live_fields()
            .filter(move |(_, f)| eq_ic(self.bytes(buf, f.name), b"connection"))
            .map(move |(_, f)| self.bytes(buf, f.value))
    }
}
