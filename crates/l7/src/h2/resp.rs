//! Sending on a stream: body bytes within the client's window, whole
//! HTTP/1 responses the proxy made (error pages, rule replies), and the
//! de-framing of a chunked response body with its trailers.

use super::conn::{ConnCx, Signals};
use fairlead_http::msg::{self, Head};
use fairlead_net::pool;

/// The stream is gone (reset, or the connection failed).
#[derive(Debug)]
pub(crate) struct Gone;

/// Sends all of `data` on `stream`, waiting for the client's window as
/// needed; `end` ends the stream with the last byte.
pub(crate) async fn send_all(
    cx: &ConnCx,
    stream: u32,
    sig: &Signals,
    mut data: &[u8],
    end: bool,
) -> Result<(), Gone> {
    if data.is_empty() && !end {
        return Ok(());
    }
    loop {
        let n = cx
            .with(|c, o| c.send_data(stream, data, end, o))
            .map_err(|_| Gone)?;
        data = data.get(n..).unwrap_or_default();
        if data.is_empty() {
            return Ok(());
        }
        sig.window.notified().await;
    }
}

/// Sends a whole HTTP/1 response the proxy made (`bytes`: head and body)
/// as an HTTP/2 response; returns the body length sent.
pub(crate) async fn send_h1_bytes(
    cx: &ConnCx,
    stream: u32,
    sig: &Signals,
    bytes: &[u8],
) -> Result<usize, Gone> {
    let Ok(Some(r)) = fairlead_http::parse_response(bytes, false, bytes.len() + 1) else {
        cx.with(|c, o| c.reset(stream, fairlead_h2::ErrorCode::INTERNAL_ERROR, o));
        return Err(Gone);
    };
    let body = bytes.get(r.head_len..).unwrap_or_default();
    let mut head = msg::take();
    head.fill_response(bytes, &r);
    let sent = cx.with(|c, o| c.send_response(stream, &head, bytes, body.is_empty(), o));
    msg::give(head);
    sent.map_err(|_| Gone)?;
    send_all(cx, stream, sig, body, true).await?;
    Ok(body.len())
}

pub(crate) use crate::body::Dechunk;

/// The trailer fields of the framing that ends a chunked body (an
/// optional CRLF ending the last data, the last-chunk line, trailer
/// lines, the final CRLF). `None` when there are none.
pub(crate) fn parse_trailers(tail: &[u8]) -> Option<Head> {
    let rest = tail.strip_prefix(b"\r\n").unwrap_or(tail);
    let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
    let mut rest = rest.get(line_end + 2..)?;
    let mut head: Option<Head> = None;
    while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
        let line = &rest[..end];
        rest = &rest[end + 2..];
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let name = &line[..colon];
        let value = trim(&line[colon + 1..]);
        head.get_or_insert_with(msg::take)
            .append_field(&lower(name), value);
    }
    head
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(s, |i| i + 1);
    v.get(s..e).unwrap_or_default()
}

/// HTTP/2 field names are lowercase.
fn lower(name: &[u8]) -> Vec<u8> {
    name.to_ascii_lowercase()
}

/// Serialises the client's trailers after the last chunk of a request
/// body: `0\r\n`, `name: value\r\n` each, `\r\n`.
pub(crate) fn write_last_chunk(trailers: Option<&Head>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n");
    if let Some(t) = trailers {
        for (_, n, v) in t.view(&[]).headers() {
            out.extend_from_slice(n);
            out.extend_from_slice(b": ");
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// A pooled vector for decoded data.
pub(crate) fn scratch() -> Vec<u8> {
    pool::take_out()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(h: &Head) -> Vec<(String, String)> {
        h.view(&[])
            .headers()
            .map(|(_, n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn dechunks_in_pieces_and_keeps_trailers() {
        let body = b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nGrpc-Status: 0\r\ngrpc-message:  ok \r\n\r\nNEXT";
        for split in 1..body.len() {
            let mut d = Dechunk::new();
            let mut data = Vec::new();
            let (a, done_a) = d.feed(&body[..split], &mut data).unwrap();
            assert_eq!(a, split.min(body.len() - 4));
            let (b, done) = if done_a {
                (0, true)
            } else {
                d.feed(&body[split..], &mut data).unwrap()
            };
            assert!(done);
            assert_eq!(a + b, body.len() - 4, "split {split}");
            assert_eq!(data, b"hello world");
            let t = d.trailers().expect("trailers");
            assert_eq!(
                fields(&t),
                [
                    ("grpc-status".to_string(), "0".to_string()),
                    ("grpc-message".to_string(), "ok".to_string())
                ]
            );
            msg::give(t);
        }
    }

    #[test]
    fn no_trailers() {
        let mut d = Dechunk::new();
        let mut data = Vec::new();
        assert_eq!(
            d.feed(b"3\r\nabc\r\n0\r\n\r\n", &mut data).unwrap(),
            (13, true)
        );
        assert_eq!(data, b"abc");
        assert!(d.trailers().is_none());
        let mut d = Dechunk::new();
        assert_eq!(d.feed(b"0\r\n\r\n", &mut data).unwrap(), (5, true));
        assert!(d.trailers().is_none());
        assert!(Dechunk::new().feed(b"zz\r\n", &mut data).is_err());
    }

    #[test]
    fn last_chunk_with_trailers() {
        let mut t = msg::take();
        t.append_field(b"grpc-status", b"0");
        let mut out = Vec::new();
        write_last_chunk(Some(&t), &mut out);
        assert_eq!(out, b"0\r\ngrpc-status: 0\r\n\r\n");
        out.clear();
        write_last_chunk(None, &mut out);
        assert_eq!(out, b"0\r\n\r\n");
        msg::give(t);
    }
}
