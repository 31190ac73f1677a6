//! The client side of a SOCKS4 CONNECT, as HAProxy sends it for servers
//! with `socks4 <addr>` (requests, and checks with `check-via-socks4` or
//! `tcp-check connect via-socks4`): `04 01 <port> <ipv4> "HAProxy" 00`,
//! then an 8-byte reply whose second byte must be 90 (granted).

use std::io::{Error, ErrorKind};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Length of the proxy's reply.
pub const REPLY_LEN: usize = 8;

/// The CONNECT request for `dst`; `None` for an IPv6 destination, which
/// SOCKS4 cannot name.
pub fn request(dst: SocketAddr) -> Option<[u8; 16]> {
    let SocketAddr::V4(v4) = dst else {
        return None;
    };
    let mut r = [0u8; 16];
    r[0] = 4;
    r[1] = 1;
    r[2..4].copy_from_slice(&v4.port().to_be_bytes());
    r[4..8].copy_from_slice(&v4.ip().octets());
    r[8..16].copy_from_slice(b"HAProxy\0");
    Some(r)
}

/// Asks the SOCKS4 proxy `stream` is connected to for a tunnel to `dst`
/// and reads its reply. Errors carry HAProxy's texts: "SOCKS4 Proxy write
/// error during handshake", "SOCKS4 Proxy read error during handshake"
/// (the proxy closed before replying) and "SOCKS4 Proxy deny the request"
/// (any code but 90). The caller bounds the time.
pub async fn connect(stream: &mut TcpStream, dst: SocketAddr) -> std::io::Result<()> {
    let Some(req) = request(dst) else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "SOCKS4 cannot reach an IPv6 address",
        ));
    };
    stream.write_all(&req).await.map_err(|_| {
        Error::new(
            ErrorKind::BrokenPipe,
            "SOCKS4 Proxy write error during handshake",
        )
    })?;
    let mut reply = [0u8; REPLY_LEN];
    stream.read_exact(&mut reply).await.map_err(|_| {
        Error::new(
            ErrorKind::UnexpectedEof,
            "SOCKS4 Proxy read error during handshake",
        )
    })?;
    if reply[1] != 90 {
        return Err(Error::new(
            ErrorKind::ConnectionRefused,
            "SOCKS4 Proxy deny the request",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let r = request("10.1.2.3:8080".parse().unwrap()).unwrap();
        assert_eq!(
            r,
            [4, 1, 0x1f, 0x90, 10, 1, 2, 3, b'H', b'A', b'P', b'r', b'o', b'x', b'y', 0]
        );
        assert!(request("[::1]:80".parse().unwrap()).is_none());
    }
}
