//! Just enough of a TLS ClientHello to answer `req.ssl_sni` and
//! `req.ssl_hello_type` in TCP mode, on the bytes buffered so far.

/// What the request buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello<'a> {
    /// Not a TLS handshake record, or a malformed one.
    Other,
    /// The start of a ClientHello: more bytes are needed.
    Incomplete,
    /// A whole ClientHello, with its server name if it sent one.
    Complete { sni: Option<&'a [u8]> },
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos + n)?;
        self.pos += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|s| s[0] as usize)
    }
    fn u16(&mut self) -> Option<usize> {
        self.take(2).map(|s| (s[0] as usize) << 8 | s[1] as usize)
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(n)
    }
}

/// Parses the first TLS record of `buf` as a ClientHello.
pub fn parse(buf: &[u8]) -> Hello<'_> {
    if buf.is_empty() {
        return Hello::Incomplete;
    }
    if buf[0] != 0x16 {
        return Hello::Other;
    }
    if buf.len() < 5 {
        return Hello::Incomplete;
    }
    if buf[1] != 3 {
        return Hello::Other;
    }
    let rec_len = (buf[3] as usize) << 8 | buf[4] as usize;
    if buf.len() < 5 + rec_len {
        return Hello::Incomplete;
    }
    let rec = &buf[5..5 + rec_len];
    if rec.len() < 4 || rec[0] != 1 {
        return Hello::Other;
    }
    match client_hello(&rec[4..]) {
        Some(sni) => Hello::Complete { sni },
        None => Hello::Other,
    }
}

fn client_hello(b: &[u8]) -> Option<Option<&[u8]>> {
    let mut r = Reader { b, pos: 0 };
    r.take(2 + 32)?;
    r.vec8()?;
    r.vec16()?;
    r.vec8()?;
    if r.pos == b.len() {
        return Some(None);
    }
    let exts = r.vec16()?;
    let mut e = Reader { b: exts, pos: 0 };
    while e.pos < exts.len() {
        let ty = e.u16()?;
        let data = e.vec16()?;
        if ty != 0 {
            continue;
        }
        let mut s = Reader { b: data, pos: 0 };
        let list = s.vec16()?;
        let mut l = Reader { b: list, pos: 0 };
        while l.pos < list.len() {
            let kind = l.u8()?;
            let name = l.vec16()?;
            if kind == 0 {
                return Some(Some(name));
            }
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(sni: &[u8]) -> Vec<u8> {
        let mut ext = vec![0, 0];
        let list_len = 3 + sni.len();
        let data_len = 2 + list_len;
        ext.extend_from_slice(&(data_len as u16).to_be_bytes());
        ext.extend_from_slice(&(list_len as u16).to_be_bytes());
        ext.push(0);
        ext.extend_from_slice(&(sni.len() as u16).to_be_bytes());
        ext.extend_from_slice(sni);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![1, 0];
        hs.extend_from_slice(&(body.len() as u16).to_be_bytes());
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    #[test]
    fn finds_the_server_name() {
        let h = hello(b"example.com");
        assert_eq!(
            parse(&h),
            Hello::Complete {
                sni: Some(b"example.com")
            }
        );
        assert_eq!(parse(&h[..20]), Hello::Incomplete);
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Hello::Other);
        for n in 0..h.len() {
            let _ = parse(&h[..n]);
        }
    }
}
