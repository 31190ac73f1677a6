//! What the balancing algorithm hashes, taken from a request: the client
//! address, the URI, a header value or a query parameter. The bytes are
//! copied into a pooled scratch vector (no allocation in steady state) so
//! that the request buffer can keep moving while retries re-balance.

use fairlead_balance::{Needs, RequestKey};
use fairlead_http::RequestHead;
use fairlead_net::pool;
use std::net::IpAddr;

type Range = Option<(usize, usize)>;

/// Key material of one request.
pub(crate) struct KeyData {
    buf: Option<Vec<u8>>,
    src: Option<IpAddr>,
    uri: Range,
    header: Range,
    param: Range,
}

fn push(buf: &mut Vec<u8>, v: &[u8]) -> Range {
    let start = buf.len();
    buf.extend_from_slice(v);
    Some((start, buf.len()))
}

/// The value of query parameter `name` in `uri`.
pub(crate) fn url_param<'a>(uri: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let q = uri.iter().position(|&b| b == b'?')?;
    uri[q + 1..].split(|&b| b == b'&').find_map(|kv| {
        let eq = kv.iter().position(|&b| b == b'=')?;
        (kv[..eq] == *name.as_bytes()).then_some(&kv[eq + 1..])
    })
}

impl KeyData {
    pub fn new(needs: &Needs, req: &[u8], head: &RequestHead, peer: IpAddr) -> KeyData {
        let mut k = KeyData {
            buf: None,
            src: needs.src.then_some(peer),
            uri: None,
            header: None,
            param: None,
        };
        let uri = &req[head.uri.0..head.uri.1];
        if needs.uri || needs.header.is_some() || needs.url_param.is_some() {
            let mut buf = pool::take_out();
            if needs.uri {
                k.uri = push(&mut buf, uri);
            }
            if let Some(name) = &needs.header {
                if let Some(v) = fairlead_http::cookie::header_value(req, head.head_len, name) {
                    k.header = push(&mut buf, v);
                }
            }
            if let Some(name) = &needs.url_param {
                if let Some(v) = url_param(uri, name) {
                    k.param = push(&mut buf, v);
                }
            }
            k.buf = Some(buf);
        }
        k
    }

    pub fn key(&self) -> RequestKey<'_> {
        let slice = |r: Range| r.and_then(|(a, b)| self.buf.as_ref().map(|buf| &buf[a..b]));
        RequestKey {
            src: self.src,
            uri: slice(self.uri),
            header: slice(self.header),
            url_param: slice(self.param),
            rdp_cookie: None,
        }
    }
}

impl Drop for KeyData {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            pool::give_out(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::url_param;

    #[test]
    fn finds_query_parameters() {
        assert_eq!(url_param(b"/a?x=1&user=bob&y", "user"), Some(&b"bob"[..]));
        assert_eq!(url_param(b"/a?user=", "user"), Some(&b""[..]));
        assert_eq!(url_param(b"/a?username=x", "user"), None);
        assert_eq!(url_param(b"/a", "user"), None);
    }
}
