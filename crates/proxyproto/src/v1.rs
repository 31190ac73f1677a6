//! Version 1: `PROXY TCP4|TCP6|UNKNOWN <src> <dst> <sport> <dport>\r\n`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::{Addresses, Command, Error, Header, Parsed, Version, V1_MAX_LEN};

/// `buf` starts with (a prefix of) `PROXY `.
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed, Error> {
    let window = &buf[..buf.len().min(V1_MAX_LEN)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        // A bare LF is invalid; otherwise wait for the CR within the limit.
        if window.contains(&b'\n') {
            return Err(Error::BadHeader);
        }
        return if buf.len() >= V1_MAX_LEN {
            Err(Error::BadHeader)
        } else {
            // Refuse an unknown protocol as soon as it is visible.
            check_proto_prefix(window)?;
            Ok(Parsed::Incomplete)
        };
    };
    match buf.get(cr + 1) {
        None => return Ok(Parsed::Incomplete),
        Some(b'\n') => {}
        Some(_) => return Err(Error::BadHeader),
    }
    let line = &buf[6..cr];
    if line.contains(&b'\n') {
        return Err(Error::BadHeader);
    }
    let header = parse_line(line)?;
    Ok(Parsed::Done(header, cr + 2))
}

const PROTOS: [&[u8]; 3] = [b"TCP4 ", b"TCP6 ", b"UNKNOWN"];

fn check_proto_prefix(window: &[u8]) -> Result<(), Error> {
    let p = window.get(6..).unwrap_or(&[]);
    let ok = PROTOS.iter().any(|proto| {
        let n = p.len().min(proto.len());
        p[..n] == proto[..n]
    });
    if ok {
        Ok(())
    } else {
        Err(Error::BadProto)
    }
}

fn parse_line(line: &[u8]) -> Result<Header, Error> {
    let unknown = |rest: &[u8]| rest.is_empty() || rest.first() == Some(&b' ');
    if let Some(rest) = line.strip_prefix(b"UNKNOWN") {
        if !unknown(rest) {
            return Err(Error::BadProto);
        }
        return Ok(Header {
            version: Version::V1,
            command: Command::Proxy,
            addresses: Addresses::Unknown,
            tlvs: Vec::new(),
        });
    }
    let (v6, rest) = if let Some(r) = line.strip_prefix(b"TCP4 ") {
        (false, r)
    } else if let Some(r) = line.strip_prefix(b"TCP6 ") {
        (true, r)
    } else {
        return Err(Error::BadProto);
    };
    let text = std::str::from_utf8(rest).map_err(|_| Error::BadHeader)?;
    let mut f = text.split(' ');
    let (Some(s), Some(d), Some(sp), Some(dp), None) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(Error::BadHeader);
    };
    let (src, dst) = if v6 {
        let s: Ipv6Addr = s.parse().map_err(|_| Error::BadHeader)?;
        let d: Ipv6Addr = d.parse().map_err(|_| Error::BadHeader)?;
        (IpAddr::V6(s), IpAddr::V6(d))
    } else {
        let s: Ipv4Addr = s.parse().map_err(|_| Error::BadHeader)?;
        let d: Ipv4Addr = d.parse().map_err(|_| Error::BadHeader)?;
        (IpAddr::V4(s), IpAddr::V4(d))
    };
    Ok(Header {
        version: Version::V1,
        command: Command::Proxy,
        addresses: Addresses::Inet {
            src: SocketAddr::new(src, port(sp)?),
            dst: SocketAddr::new(dst, port(dp)?),
        },
        tlvs: Vec::new(),
    })
}

/// A port: 1 to 5 digits, no leading zero, at most 65535.
fn port(s: &str) -> Result<u16, Error> {
    let b = s.as_bytes();
    if b.is_empty()
        || b.len() > 5
        || !b.iter().all(u8::is_ascii_digit)
        || (b.len() > 1 && b[0] == b'0')
    {
        return Err(Error::BadHeader);
    }
    s.parse().map_err(|_| Error::BadHeader)
}
