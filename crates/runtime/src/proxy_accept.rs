//! Receiving the PROXY protocol on accepted connections (`bind ...
//! accept-proxy`, `tcp-request connection expect-proxy layer4`).
//!
//! The header is read before anything else (before the TLS handshake),
//! and never more than the header: the bytes are first peeked, then only
//! the header's are consumed, so the data after it stays in the socket
//! for the TLS layer or the HTTP/TCP stream. As in HAProxy, the
//! addresses it carries become the connection's source and destination
//! everywhere except in `tcp-request connection` rules, which ran before
//! and saw the real ones. A malformed header, a connection closed before
//! the end of the header, or a header not complete in time closes the
//! connection, and the reason is logged.

use fairlead_net::ProxyInfo;
use fairlead_net::Sock;
use fairlead_proxyproto::{Addresses, Parsed};
use std::time::Duration;

/// Largest header accepted: a v2 header with TLVs must fit in it. Default
/// is 4096 bytes (HAProxy reads it into one buffer; headers seen in
/// practice are well under 600 bytes).
pub(crate) const MAX_HEADER: usize = 4096;

/// Reads one PROXY protocol header: what it carried (no addresses for
/// `LOCAL`/`UNKNOWN`: the socket's stay), or `Err(reason)` (HAProxy's
/// message) when the connection must be closed.
pub(crate) async fn read_header(
    tcp: &Sock,
    timeout: Option<Duration>,
) -> Result<ProxyInfo, &'static str> {
    let fut = read_header_inner(tcp);
    match timeout {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .unwrap_or(Err(fairlead_proxyproto::TIMEOUT_MESSAGE)),
        None => fut.await,
    }
}

async fn read_header_inner(tcp: &Sock) -> Result<ProxyInfo, &'static str> {
    // Header bytes already consumed, and a window for peeking.
    let mut got: Vec<u8> = Vec::new();
    let mut peek = vec![0u8; 512];
    loop {
        let n = tcp
            .peek(&mut peek)
            .await
            .map_err(|_| fairlead_proxyproto::TRUNCATED_MESSAGE)?;
        if n == 0 {
            return Err(if got.is_empty() {
                fairlead_proxyproto::EMPTY_MESSAGE
            } else {
                fairlead_proxyproto::TRUNCATED_MESSAGE
            });
        }
        let seen = peek.get(..n).unwrap_or_default();
        let mut all = Vec::with_capacity(got.len() + n);
        all.extend_from_slice(&got);
        all.extend_from_slice(seen);
        match fairlead_proxyproto::parse(&all) {
            Err(e) => return Err(e.message()),
            Ok(Parsed::Done(h, used)) => {
                // Consume only the header's part of what was peeked.
                let rest = used.saturating_sub(got.len());
                consume(tcp, rest).await?;
                return Ok(ProxyInfo {
                    addrs: match h.addresses {
                        Addresses::Inet { src, dst } => Some((src, dst)),
                        _ => None,
                    },
                    authority: h.authority().map(Box::from),
                    unique_id: h.unique_id().map(Box::from),
                });
            }
            Ok(Parsed::Incomplete) => {
                // Everything peeked belongs to the header: take it, so the
                // next peek waits for new bytes instead of spinning.
                if all.len() >= MAX_HEADER {
                    return Err(fairlead_proxyproto::Error::BadHeader.message());
                }
                consume(tcp, n).await?;
                got = all;
            }
        }
    }
}

/// Reads and drops exactly `n` bytes that a peek already showed.
async fn consume(tcp: &Sock, mut n: usize) -> Result<(), &'static str> {
    let mut sink = [0u8; 512];
    while n > 0 {
        let want = n.min(sink.len());
        tcp.readable()
            .await
            .map_err(|_| fairlead_proxyproto::TRUNCATED_MESSAGE)?;
        match tcp.try_read(sink.get_mut(..want).unwrap_or_default()) {
            Ok(0) => return Err(fairlead_proxyproto::TRUNCATED_MESSAGE),
            Ok(k) => n = n.saturating_sub(k),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return Err(fairlead_proxyproto::TRUNCATED_MESSAGE),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;

    async fn pair() -> (TcpStream, Sock) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        (c, s.into())
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn v1_in_pieces_leaves_the_payload() {
        rt().block_on(async {
            let (mut c, s) = pair().await;
            // The socket (a `Sock`) stays on this task; the writer moves.
            let writer = tokio::spawn(async move {
                c.write_all(b"PROXY TCP4 192.0.2.1 ").await.unwrap();
                c.flush().await.unwrap();
                tokio::task::yield_now().await;
                c.write_all(b"198.51.100.2 4000 80\r\nGET").await.unwrap();
                c
            });
            let r = read_header(&s, Some(Duration::from_secs(5))).await;
            let mut rest = [0u8; 16];
            s.readable().await.unwrap();
            let n = s.try_read(&mut rest).unwrap();
            let rest = rest[..n].to_vec();
            let _c = writer.await.unwrap();
            let (src, dst) = r.unwrap().addrs.unwrap();
            assert_eq!(src.to_string(), "192.0.2.1:4000");
            assert_eq!(dst.to_string(), "198.51.100.2:80");
            assert_eq!(rest, b"GET");
        });
    }

    #[test]
    fn v2_and_errors() {
        rt().block_on(async {
            let (mut c, s) = pair().await;
            let mut hdr = Vec::new();
            let a: SocketAddr = "[2001:db8::1]:1234".parse().unwrap();
            let b: SocketAddr = "[2001:db8::2]:443".parse().unwrap();
            let tlvs = fairlead_proxyproto::V2Options {
                authority: Some(b"example.com".to_vec()),
                unique_id: Some(b"id-1".to_vec()),
                ..Default::default()
            };
            fairlead_proxyproto::encode_v2(
                fairlead_proxyproto::Command::Proxy,
                Some((a, b)),
                &tlvs,
                &mut hdr,
            );
            hdr.extend_from_slice(b"xyz");
            c.write_all(&hdr).await.unwrap();
            let r = read_header(&s, None).await.unwrap();
            assert_eq!(r.addrs, Some((a, b)));
            assert_eq!(r.authority.as_deref(), Some(&b"example.com"[..]));
            assert_eq!(r.unique_id.as_deref(), Some(&b"id-1"[..]));
            let mut rest = [0u8; 8];
            s.readable().await.unwrap();
            assert_eq!(s.try_read(&mut rest).unwrap(), 3);

            let (mut c, s) = pair().await;
            c.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
            let e = read_header(&s, None).await.unwrap_err();
            assert_eq!(e, fairlead_proxyproto::Error::NotHeader.message());

            let (mut c, s) = pair().await;
            c.write_all(b"PROXY TCP4 1.2.3.4").await.unwrap();
            let e = read_header(&s, Some(Duration::from_millis(50))).await;
            assert_eq!(e.unwrap_err(), fairlead_proxyproto::TIMEOUT_MESSAGE);
            drop(c);
        });
    }
}
