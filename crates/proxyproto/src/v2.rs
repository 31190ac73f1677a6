//! Version 2: the binary header.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::{tlv, Addresses, Command, Error, Header, Parsed, Tlv, Version};

/// Fixed part: signature, version/command, family, length.
pub(crate) const FIXED_LEN: usize = 16;

/// `buf` starts with (a prefix of) the signature.
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed, Error> {
    let Some(&ver_cmd) = buf.get(12) else {
        return Ok(Parsed::Incomplete);
    };
    if ver_cmd & 0xF0 != 0x20 {
        return Err(Error::NotHeader);
    }
    let (Some(&fam), Some(len)) = (buf.get(13), buf.get(14..16)) else {
        return Ok(Parsed::Incomplete);
    };
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    let total = FIXED_LEN + len;
    let Some(hdr) = buf.get(..total) else {
        return Ok(Parsed::Incomplete);
    };
    let body = &hdr[FIXED_LEN..];
    let header = match ver_cmd & 0x0F {
        0x00 => Header {
            version: Version::V2,
            command: Command::Local,
            addresses: Addresses::Unknown,
            tlvs: Vec::new(),
        },
        0x01 => proxy(hdr, fam, body)?,
        _ => return Err(Error::BadHeader),
    };
    debug_assert_eq!(hdr.len(), total);
    Ok(Parsed::Done(header, total))
}

fn addr_len(fam: u8) -> usize {
    match fam >> 4 {
        1 => 12,
        2 => 36,
        3 => 216,
        _ => 0,
    }
}

fn proxy(hdr: &[u8], fam: u8, body: &[u8]) -> Result<Header, Error> {
    let alen = addr_len(fam);
    let Some(a) = body.get(..alen) else {
        return Err(Error::BadHeader);
    };
    let be16 = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    let addresses = match fam {
        0x11 => {
            let s = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            let d = Ipv4Addr::new(a[4], a[5], a[6], a[7]);
            Addresses::Inet {
                src: SocketAddr::new(s.into(), be16(&a[8..10])),
                dst: SocketAddr::new(d.into(), be16(&a[10..12])),
            }
        }
        0x21 => {
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&a[..16]);
            d.copy_from_slice(&a[16..32]);
            Addresses::Inet {
                src: SocketAddr::new(Ipv6Addr::from(s).into(), be16(&a[32..34])),
                dst: SocketAddr::new(Ipv6Addr::from(d).into(), be16(&a[34..36])),
            }
        }
        0x31 | 0x32 => {
            let trim = |p: &[u8]| {
                let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                p[..end].to_vec()
            };
            Addresses::Unix {
                src: trim(&a[..108]),
                dst: trim(&a[108..216]),
            }
        }
        // UDP and unspecified families: keep the local addresses.
        _ => Addresses::Unknown,
    };
    let tlvs = parse_tlvs(&body[alen..])?;
    check_tlvs(hdr, &tlvs, alen)?;
    Ok(Header {
        version: Version::V2,
        command: Command::Proxy,
        addresses,
        tlvs,
    })
}

/// Splits a TLV area; every TLV must fit.
pub(crate) fn parse_tlvs(mut b: &[u8]) -> Result<Vec<Tlv>, Error> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (Some(&kind), Some(l)) = (b.first(), b.get(1..3)) else {
            return Err(Error::BadHeader);
        };
        let len = usize::from(u16::from_be_bytes([l[0], l[1]]));
        let value = b.get(3..3 + len).ok_or(Error::BadHeader)?;
        out.push(Tlv {
            kind,
            value: value.to_vec(),
        });
        b = &b[3 + len..];
    }
    Ok(out)
}

/// HAProxy's per-TLV checks: CRC32C, AUTHORITY and UNIQUE_ID sizes.
fn check_tlvs(hdr: &[u8], tlvs: &[Tlv], alen: usize) -> Result<(), Error> {
    let mut offset = FIXED_LEN + alen;
    for t in tlvs {
        match t.kind {
            tlv::CRC32C => {
                let Ok(want) = <[u8; 4]>::try_from(t.value.as_slice()) else {
                    return Err(Error::BadHeader);
                };
                let mut copy = hdr.to_vec();
                if let Some(field) = copy.get_mut(offset + 3..offset + 7) {
                    field.fill(0);
                }
                if crc32c::crc32c(&copy) != u32::from_be_bytes(want) {
                    return Err(Error::BadHeader);
                }
            }
            tlv::AUTHORITY if t.value.len() > tlv::AUTHORITY_MAX => return Err(Error::BadHeader),
            tlv::UNIQUE_ID if t.value.len() > tlv::UNIQUE_ID_MAX => return Err(Error::BadHeader),
            _ => {}
        }
        offset += 3 + t.value.len();
    }
    Ok(())
}
