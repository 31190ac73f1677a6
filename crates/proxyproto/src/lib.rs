//! The PROXY protocol (HAProxy's doc/proxy-protocol.txt), versions 1 and 2,
//! without I/O.
//!
//! * [`parse`] looks at the first bytes a client sent (for `accept-proxy`
//!   and `tcp-request connection expect-proxy layer4`): it returns
//!   [`Parsed::Incomplete`] while more bytes are needed,
//!   [`Parsed::Done`] with the [`Header`] and the number of bytes it used,
//!   or an [`Error`] (the connection must then be closed and logged).
//!   Versions are auto-detected; anything that cannot start a header is
//!   refused as soon as its first bytes are seen.
//! * [`encode_v1`] and [`encode_v2`] build what `send-proxy`,
//!   `send-proxy-v2`, `send-proxy-v2-ssl[-cn]` and `proxy-v2-options` send.
//!
//! Checks on receipt follow HAProxy 2.6 (`conn_recv_proxy`) where it is
//! stricter than the specification, and the specification elsewhere:
//! * v1: at most 107 bytes up to CRLF; TCP4 and TCP6 addresses in canonical
//!   form, ports 0..65535 without leading zeroes, single spaces; `UNKNOWN`
//!   may be followed by anything up to the CRLF (HAProxy 2.6 only takes
//!   `UNKNOWN\r\n`, the specification requires ignoring the rest);
//! * v2: version 2; command LOCAL (the header is skipped, TLVs are not
//!   examined, as in HAProxy) or PROXY; INET needs 12 address bytes, INET6
//!   36, UNIX 216; other families keep the local addresses; every TLV must
//!   fit in the header; CRC32C must be 4 bytes and match; AUTHORITY is at
//!   most 255 bytes and UNIQUE_ID at most 128.
#![forbid(unsafe_code)]

mod encode;
mod v1;
mod v2;

pub use encode::{encode_v1, encode_v2, SslInfo, V2Options};

use std::net::SocketAddr;

/// The 12-byte signature that starts a v2 header.
pub const V2_SIGNATURE: [u8; 12] = [
    0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
];

/// Longest v1 line, CRLF included.
pub const V1_MAX_LEN: usize = 107;

/// TLV types (`PP2_TYPE_*`).
pub mod tlv {
    pub const ALPN: u8 = 0x01;
    pub const AUTHORITY: u8 = 0x02;
    pub const CRC32C: u8 = 0x03;
    pub const NOOP: u8 = 0x04;
    pub const UNIQUE_ID: u8 = 0x05;
    pub const SSL: u8 = 0x20;
    pub const SSL_VERSION: u8 = 0x21;
    pub const SSL_CN: u8 = 0x22;
    pub const SSL_CIPHER: u8 = 0x23;
    pub const SSL_SIG_ALG: u8 = 0x24;
    pub const SSL_KEY_ALG: u8 = 0x25;
    pub const NETNS: u8 = 0x30;
    /// `client` bits of the SSL TLV.
    pub const CLIENT_SSL: u8 = 0x01;
    pub const CLIENT_CERT_CONN: u8 = 0x02;
    pub const CLIENT_CERT_SESS: u8 = 0x04;
    /// Largest AUTHORITY accepted (HAProxy's `PP2_AUTHORITY_MAX`).
    pub const AUTHORITY_MAX: usize = 255;
    /// Largest UNIQUE_ID accepted (HAProxy's `UNIQUEID_LEN`).
    pub const UNIQUE_ID_MAX: usize = 128;
}

/// Protocol version of a received header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// The v2 command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// The connection was made by the proxy itself (health check): the
    /// real endpoints are kept.
    Local,
    /// A relayed connection.
    Proxy,
}

/// The addresses a header carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addresses {
    /// v1 `UNKNOWN`, v2 `LOCAL`, or a family Fairlead does not use: keep
    /// the connection's own addresses.
    Unknown,
    /// TCP over IPv4 or IPv6.
    Inet { src: SocketAddr, dst: SocketAddr },
    /// v2 `AF_UNIX`: the two 108-byte paths, trailing NULs removed.
    Unix { src: Vec<u8>, dst: Vec<u8> },
}

/// One TLV of a v2 header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tlv {
    pub kind: u8,
    pub value: Vec<u8>,
}

/// A parsed header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: Version,
    pub command: Command,
    pub addresses: Addresses,
    /// TLVs in order (v2 PROXY only).
    pub tlvs: Vec<Tlv>,
}

/// The SSL TLV's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssl {
    /// `CLIENT_*` bits.
    pub client: u8,
    /// Certificate verification result (0 = success).
    pub verify: u32,
    /// Sub-TLVs (VERSION, CN, CIPHER, SIG_ALG, KEY_ALG...).
    pub subs: Vec<Tlv>,
}

impl Ssl {
    fn sub(&self, kind: u8) -> Option<&[u8]> {
        self.subs
            .iter()
            .find(|t| t.kind == kind)
            .map(|t| t.value.as_slice())
    }

    /// `PP2_SUBTYPE_SSL_VERSION`.
    pub fn version(&self) -> Option<&[u8]> {
        self.sub(tlv::SSL_VERSION)
    }

    /// `PP2_SUBTYPE_SSL_CN`.
    pub fn cn(&self) -> Option<&[u8]> {
        self.sub(tlv::SSL_CN)
    }

    /// `PP2_SUBTYPE_SSL_CIPHER`.
    pub fn cipher(&self) -> Option<&[u8]> {
        self.sub(tlv::SSL_CIPHER)
    }
}

impl Header {
    /// The first TLV of a type.
    pub fn tlv(&self, kind: u8) -> Option<&[u8]> {
        self.tlvs
            .iter()
            .find(|t| t.kind == kind)
            .map(|t| t.value.as_slice())
    }

    /// `PP2_TYPE_ALPN`.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.tlv(tlv::ALPN)
    }

    /// `PP2_TYPE_AUTHORITY` (`fc_pp_authority`).
    pub fn authority(&self) -> Option<&[u8]> {
        self.tlv(tlv::AUTHORITY)
    }

    /// `PP2_TYPE_UNIQUE_ID` (`fc_pp_unique_id`).
    pub fn unique_id(&self) -> Option<&[u8]> {
        self.tlv(tlv::UNIQUE_ID)
    }

    /// `PP2_TYPE_NETNS`.
    pub fn netns(&self) -> Option<&[u8]> {
        self.tlv(tlv::NETNS)
    }

    /// The SSL TLV, if present and well formed.
    pub fn ssl(&self) -> Option<Ssl> {
        let v = self.tlv(tlv::SSL)?;
        let client = *v.first()?;
        let verify = u32::from_be_bytes(v.get(1..5)?.try_into().ok()?);
        let subs = v2::parse_tlvs(v.get(5..)?).ok()?;
        Some(Ssl {
            client,
            verify,
            subs,
        })
    }

    /// The source address, when the header carries one.
    pub fn src(&self) -> Option<SocketAddr> {
        match self.addresses {
            Addresses::Inet { src, .. } => Some(src),
            _ => None,
        }
    }

    /// The destination address, when the header carries one.
    pub fn dst(&self) -> Option<SocketAddr> {
        match self.addresses {
            Addresses::Inet { dst, .. } => Some(dst),
            _ => None,
        }
    }
}

/// Outcome of [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed (only a prefix of a valid header was seen).
    Incomplete,
    /// A header, and how many bytes it took.
    Done(Header, usize),
}

/// Why a header was refused (HAProxy's `CO_ER_PRX_*` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Neither a v1 nor a v2 header (`CO_ER_PRX_NOT_HDR`).
    NotHeader,
    /// v1 with a protocol other than TCP4, TCP6, UNKNOWN
    /// (`CO_ER_PRX_BAD_PROTO`).
    BadProto,
    /// A malformed header (`CO_ER_PRX_BAD_HDR`).
    BadHeader,
}

impl Error {
    /// The message HAProxy logs for this error.
    pub fn message(self) -> &'static str {
        match self {
            Error::NotHeader => {
                "Received something which does not look like a PROXY protocol header"
            }
            Error::BadProto => "Received an unhandled protocol in the PROXY protocol header",
            Error::BadHeader => "Received an invalid PROXY protocol header",
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// The message HAProxy logs for a header cut short (`CO_ER_PRX_TRUNCATED`),
/// for callers that give up waiting after [`Parsed::Incomplete`].
pub const TRUNCATED_MESSAGE: &str = "Truncated PROXY protocol header received";

/// The message HAProxy logs when the client closes before sending a byte
/// (`CO_ER_PRX_EMPTY`).
pub const EMPTY_MESSAGE: &str = "Connection closed while waiting for PROXY protocol header";

/// The message HAProxy logs on a timeout (`CO_ER_PRX_TIMEOUT`).
pub const TIMEOUT_MESSAGE: &str = "Timeout while waiting for PROXY protocol header";

/// Parses the start of a connection's data. Never panics; reads at most
/// what the header declares.
pub fn parse(buf: &[u8]) -> Result<Parsed, Error> {
    let v1 = b"PROXY ";
    let n = buf.len().min(V2_SIGNATURE.len());
    if buf[..n] == V2_SIGNATURE[..n] {
        return v2::parse(buf);
    }
    let n = buf.len().min(v1.len());
    if buf[..n] == v1[..n] {
        return v1::parse(buf);
    }
    Err(Error::NotHeader)
}
