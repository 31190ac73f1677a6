//! Tunnels over HTTP/2 streams toward HTTP/1 servers.
//!
//! * **Extended CONNECT** (RFC 8441): the codec turned it into `GET` with
//!   an `upgrade` field (see `fairlead_h2::head`); it goes to the server
//!   as an HTTP/1.1 upgrade (`Connection: upgrade`). For `websocket`, the
//!   proxy adds the `Sec-WebSocket-Key` an HTTP/2 client does not send
//!   (RFC 8441 §5 drops it) and checks the server's
//!   `Sec-WebSocket-Accept` against it, as an HTTP/1 client would. The
//!   server's `101` becomes a `200` on the stream.
//! * **CONNECT** `host:port`: sent as `CONNECT host:port HTTP/1.1`; a
//!   `2xx` answer opens the tunnel.
//!
//! Once open, the stream carries raw bytes both ways: client DATA are
//! written to the server as they are (no chunking), the server's bytes go
//! out as DATA until it closes (END_STREAM), and the client's END_STREAM
//! half-closes the server connection. `timeout tunnel` (else `timeout
//! server`) applies from then on. Any other answer is relayed as a normal
//! response. A tunnel to an HTTP/2 server (`proto h2`) is answered 501.

use base64::Engine as _;
use fairlead_http::msg::Head;
use sha1::{Digest, Sha1};
use std::hash::BuildHasher;
use std::time::Duration;

/// What kind of tunnel a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An ordinary request.
    No,
    /// `CONNECT host:port`.
    Connect,
    /// Extended CONNECT: an HTTP/1 protocol upgrade (WebSocket).
    Upgrade,
}

/// A stream's tunnel request: its kind, the WebSocket key sent, and the
/// timeout of an open tunnel.
#[derive(Debug, Clone)]
pub(crate) struct Tunnel {
    pub kind: Kind,
    key: Option<String>,
    pub timeout: Option<Duration>,
}

impl Tunnel {
    /// Reads the kind off a request head as the codec delivered it,
    /// before any rule ran (a rule adding `Upgrade` makes no tunnel).
    pub fn of(head: &Head) -> Kind {
        let v = head.view(&[]);
        if v.method() == b"CONNECT" {
            Kind::Connect
        } else if v.has(b"upgrade") {
            Kind::Upgrade
        } else {
            Kind::No
        }
    }

    /// Prepares the head for the HTTP/1 server: for a WebSocket upgrade,
    /// a fresh `Sec-WebSocket-Key` (and version 13) unless the client
    /// sent them.
    pub fn prepare(kind: Kind, head: &mut Head, timeout: Option<Duration>) -> Tunnel {
        let mut key = None;
        if kind == Kind::Upgrade {
            let v = head.view(&[]);
            let ws = v
                .get_last(b"upgrade")
                .is_some_and(|p| p.eq_ignore_ascii_case(b"websocket"));
            if ws && !v.has(b"sec-websocket-key") {
                let k = new_key();
                head.append_field(b"sec-websocket-key", k.as_bytes());
                key = Some(k);
            }
            if ws && !head.view(&[]).has(b"sec-websocket-version") {
                head.append_field(b"sec-websocket-version", b"13");
            }
        }
        Tunnel { kind, key, timeout }
    }

    /// Is `status` the answer that opens this tunnel?
    pub fn opens(&self, status: u16) -> bool {
        match self.kind {
            Kind::No => false,
            Kind::Connect => (200..300).contains(&status),
            Kind::Upgrade => status == 101,
        }
    }

    /// The server's opening answer as the client gets it: `101` becomes
    /// `200`. False when the server's `Sec-WebSocket-Accept` does not
    /// match the key the proxy sent (the server is then at fault: 502).
    pub fn answer(&self, res: &mut Head, buf: &[u8]) -> bool {
        if let Some(key) = &self.key {
            let want = accept_for(key);
            let got = res.view(buf).get_last(b"sec-websocket-accept");
            if got != Some(want.as_bytes()) {
                return false;
            }
        }
        if self.kind == Kind::Upgrade {
            res.set_status_for_codec(200);
        }
        true
    }
}

/// 16 random bytes, base64 (RFC 6455 §4.1). The nonce needs no secrecy,
/// only to differ per request: a randomly keyed SipHash of a counter.
fn new_key() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let s = std::collections::hash_map::RandomState::new();
    let n = N.fetch_add(1, Ordering::Relaxed);
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&s.hash_one(n).to_le_bytes());
    raw[8..].copy_from_slice(&s.hash_one(!n).to_le_bytes());
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// `Sec-WebSocket-Accept` for `key` (RFC 6455 §4.2.2).
fn accept_for(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matches_rfc6455_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn keys_are_16_bytes_and_differ() {
        let (a, b) = (new_key(), new_key());
        assert_ne!(a, b);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&a)
            .unwrap();
        assert_eq!(raw.len(), 16);
    }

    #[test]
    fn kinds_and_opening_statuses() {
        let mut h = Head::default();
        h.start_request(b"CONNECT", b"h:443", 20);
        assert_eq!(Tunnel::of(&h), Kind::Connect);
        let t = Tunnel::prepare(Kind::Connect, &mut h, None);
        assert!(t.opens(200) && t.opens(204) && !t.opens(101) && !t.opens(407));
        h.start_request(b"GET", b"/chat", 20);
        assert_eq!(Tunnel::of(&h), Kind::No);
        h.append_field(b"upgrade", b"websocket");
        assert_eq!(Tunnel::of(&h), Kind::Upgrade);
        let t = Tunnel::prepare(Kind::Upgrade, &mut h, None);
        let v = h.view(&[]);
        let key = std::str::from_utf8(v.get_last(b"sec-websocket-key").unwrap()).unwrap();
        assert_eq!(v.get_last(b"sec-websocket-version"), Some(&b"13"[..]));
        assert!(t.opens(101) && !t.opens(200));
        // The server's 101 with the right accept becomes 200.
        let mut res = Head::default();
        res.start_response(101, None, 11);
        res.append_field(b"sec-websocket-accept", accept_for(key).as_bytes());
        assert!(t.answer(&mut res, &[]));
        assert_eq!(res.view(&[]).status(), 200);
        let mut bad = Head::default();
        bad.start_response(101, None, 11);
        bad.append_field(b"sec-websocket-accept", b"wrong");
        assert!(!t.answer(&mut bad, &[]));
    }
}
