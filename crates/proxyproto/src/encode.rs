//! Building headers to send to servers (`send-proxy`, `send-proxy-v2`,
//! `send-proxy-v2-ssl`, `send-proxy-v2-ssl-cn`, `proxy-v2-options`), in
//! HAProxy 2.6's layout (`make_proxy_line_v1`, `make_proxy_line_v2`).

use std::net::{IpAddr, SocketAddr};

use crate::{tlv, Command, V2_SIGNATURE};

/// Appends a v1 line. With no addresses, or when HAProxy would not know
/// them, `PROXY UNKNOWN\r\n`; mixed families are sent as TCP6 with the
/// IPv4 side mapped (`::ffff:a.b.c.d`).
pub fn encode_v1(addrs: Option<(SocketAddr, SocketAddr)>, out: &mut Vec<u8>) {
    let Some((src, dst)) = addrs else {
        out.extend_from_slice(b"PROXY UNKNOWN\r\n");
        return;
    };
    let line = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            format!("PROXY TCP4 {s} {d} {} {}\r\n", src.port(), dst.port())
        }
        (s, d) => format!(
            "PROXY TCP6 {} {} {} {}\r\n",
            v6(s),
            v6(d),
            src.port(),
            dst.port()
        ),
    };
    out.extend_from_slice(line.as_bytes());
}

fn v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// What `send-proxy-v2-ssl` reports about the client's TLS connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslInfo {
    /// Whether the client connection used TLS (`PP2_CLIENT_SSL`). Without
    /// TLS the TLV is still sent, with no flags and no sub-TLV.
    pub tls: bool,
    /// Whether a client certificate was presented during the session
    /// (`PP2_CLIENT_CERT_SESS`), and on this connection
    /// (`PP2_CLIENT_CERT_CONN`).
    pub cert_sess: bool,
    pub cert_conn: bool,
    /// Verification result; sent only with a certificate. Default 0.
    pub verify: u32,
    /// `PP2_SUBTYPE_SSL_VERSION` (e.g. `TLSv1.3`).
    pub version: Option<String>,
    /// `PP2_SUBTYPE_SSL_CN` (`send-proxy-v2-ssl-cn`, `cert-cn`).
    pub cn: Option<String>,
    /// `PP2_SUBTYPE_SSL_KEY_ALG` (`cert-key`).
    pub key_alg: Option<String>,
    /// `PP2_SUBTYPE_SSL_SIG_ALG` (`cert-sig`).
    pub sig_alg: Option<String>,
    /// `PP2_SUBTYPE_SSL_CIPHER` (`ssl-cipher`).
    pub cipher: Option<String>,
}

/// The TLVs to add to a v2 header, each `None` (or false) by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct V2Options {
    /// `proxy-v2-options crc32c`.
    pub crc32c: bool,
    /// The ALPN negotiated with the client (sent by `send-proxy-v2`
    /// whenever there is one).
    pub alpn: Option<Vec<u8>>,
    /// `proxy-v2-options authority`: the received AUTHORITY, else the SNI.
    pub authority: Option<Vec<u8>>,
    /// `proxy-v2-options unique-id`: the stream's unique id.
    pub unique_id: Option<Vec<u8>>,
    /// `send-proxy-v2-ssl` / `proxy-v2-options ssl`.
    pub ssl: Option<SslInfo>,
    /// The network namespace of the client connection.
    pub netns: Option<Vec<u8>>,
}

fn push_tlv(out: &mut Vec<u8>, kind: u8, value: &[u8]) {
    // Values longer than 65535 bytes cannot be expressed; cut them.
    let len = value.len().min(usize::from(u16::MAX));
    out.push(kind);
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&value[..len]);
}

/// Appends a v2 header. `Command::Local` (health checks), or no
/// addresses, sends LOCAL with an unspecified family; otherwise PROXY with
/// INET when both ends are IPv4, INET6 (IPv4 mapped) otherwise. TLVs are
/// appended in HAProxy's order: CRC32C, ALPN, AUTHORITY, UNIQUE_ID, SSL,
/// NETNS; the CRC32C is computed last over the whole header.
pub fn encode_v2(
    command: Command,
    addrs: Option<(SocketAddr, SocketAddr)>,
    opts: &V2Options,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.extend_from_slice(&V2_SIGNATURE);
    match (command, addrs) {
        (Command::Proxy, Some((src, dst))) => {
            out.push(0x21);
            match (src.ip(), dst.ip()) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    out.extend_from_slice(&[0x11, 0, 12]);
                    out.extend_from_slice(&s.octets());
                    out.extend_from_slice(&d.octets());
                }
                (s, d) => {
                    out.extend_from_slice(&[0x21, 0, 36]);
                    out.extend_from_slice(&v6(s).octets());
                    out.extend_from_slice(&v6(d).octets());
                }
            }
            out.extend_from_slice(&src.port().to_be_bytes());
            out.extend_from_slice(&dst.port().to_be_bytes());
        }
        _ => out.extend_from_slice(&[0x20, 0x00, 0, 0]),
    }
    let crc_at = opts.crc32c.then(|| {
        push_tlv(out, tlv::CRC32C, &[0; 4]);
        out.len() - 4
    });
    if let Some(v) = &opts.alpn {
        push_tlv(out, tlv::ALPN, v);
    }
    if let Some(v) = &opts.authority {
        push_tlv(out, tlv::AUTHORITY, v);
    }
    if let Some(v) = &opts.unique_id {
        push_tlv(out, tlv::UNIQUE_ID, v);
    }
    if let Some(ssl) = &opts.ssl {
        push_tlv(out, tlv::SSL, &ssl_value(ssl));
    }
    if let Some(v) = &opts.netns {
        push_tlv(out, tlv::NETNS, v);
    }
    let len = (out.len() - start - 16).min(usize::from(u16::MAX)) as u16;
    out[start + 14..start + 16].copy_from_slice(&len.to_be_bytes());
    if let Some(at) = crc_at {
        let crc = crc32c::crc32c(&out[start..]);
        out[at..at + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

/// The SSL TLV's value: client flags, verify, then sub-TLVs in HAProxy's
/// order (VERSION, CN, KEY_ALG, SIG_ALG, CIPHER).
fn ssl_value(ssl: &SslInfo) -> Vec<u8> {
    let mut client = 0u8;
    let mut verify = 0u32;
    let mut subs = Vec::new();
    if ssl.tls {
        client |= tlv::CLIENT_SSL;
        if let Some(v) = &ssl.version {
            push_tlv(&mut subs, tlv::SSL_VERSION, v.as_bytes());
        }
        if ssl.cert_sess {
            client |= tlv::CLIENT_CERT_SESS;
            verify = ssl.verify;
            if ssl.cert_conn {
                client |= tlv::CLIENT_CERT_CONN;
            }
        }
        let rest = [
            (tlv::SSL_CN, &ssl.cn),
            (tlv::SSL_KEY_ALG, &ssl.key_alg),
            (tlv::SSL_SIG_ALG, &ssl.sig_alg),
            (tlv::SSL_CIPHER, &ssl.cipher),
        ];
        for (kind, v) in rest {
            if let Some(v) = v {
                push_tlv(&mut subs, kind, v.as_bytes());
            }
        }
    }
    let mut out = Vec::with_capacity(5 + subs.len());
    out.push(client);
    out.extend_from_slice(&verify.to_be_bytes());
    out.extend_from_slice(&subs);
    out
}
