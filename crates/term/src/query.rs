//! Parsing of the request URI's query string into response [`Params`].
//!
//! Unknown keys and malformed values are ignored (the default applies), so a
//! typo never turns into an error response.

/// What the query string asks for. `Default` is a plain `200` with the
/// default body, sent at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Params {
    /// `s=SIZE`: body size in bytes (per part when `times` is set).
    pub size: Option<u64>,
    /// `t=MS`: wait before responding, or the maximum random wait between
    /// parts when `times` is set.
    pub wait_ms: u64,
    /// `r=STATUS`: status code, 200..=599; 0 means 200.
    pub status: u16,
    /// `k=1`: chunked transfer encoding.
    pub chunked: bool,
    /// `C=1`: close the connection after the response.
    pub close: bool,
    /// `R=1`: random (incompressible) body bytes.
    pub random: bool,
    /// `times=N`: stream the body as N chunks spaced by random waits.
    pub times: u32,
}

impl Params {
    /// Parses the query part of a request target (`/path?a=b&c=d`).
    pub fn from_target(target: &[u8]) -> Params {
        let mut p = Params::default();
        let Some(q) = target.iter().position(|&b| b == b'?') else {
            return p;
        };
        let mut query = &target[q + 1..];
        // A fragment never reaches a server, but be tolerant.
        if let Some(h) = query.iter().position(|&b| b == b'#') {
            query = &query[..h];
        }
        for pair in query.split(|&b| b == b'&') {
            let (key, val) = match pair.iter().position(|&b| b == b'=') {
                Some(e) => (&pair[..e], &pair[e + 1..]),
                None => (pair, &b""[..]),
            };
            match key {
                b"s" => {
                    if let Some(v) = parse_size(val) {
                        p.size = Some(v);
                    }
                }
                b"t" => {
                    if let Some(v) = parse_u64(val) {
                        p.wait_ms = v;
                    }
                }
                b"r" => {
                    if let Some(v) = parse_u64(val) {
                        if (200..=599).contains(&v) {
                            p.status = v as u16;
                        }
                    }
                }
                b"k" => p.chunked = flag(val),
                b"C" => p.close = flag(val),
                b"R" => p.random = flag(val),
                b"times" => {
                    if let Some(v) = parse_u64(val) {
                        p.times = v.min(u32::MAX as u64) as u32;
                    }
                }
                _ => {}
            }
        }
        p
    }

    /// Status code to send.
    pub fn status(&self) -> u16 {
        if self.status == 0 {
            200
        } else {
            self.status
        }
    }
}

/// `1` (or any non-zero number) enables a flag; an empty value too (`?C`).
fn flag(v: &[u8]) -> bool {
    v.is_empty() || parse_u64(v).is_some_and(|n| n != 0)
}

/// Plain decimal, saturating at `u64::MAX`.
pub fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add((b - b'0') as u64);
    }
    Some(n)
}

/// Decimal with an optional `k`, `m` or `g` suffix (either case), each a
/// factor of 1024. Saturates at `u64::MAX`.
pub fn parse_size(v: &[u8]) -> Option<u64> {
    let (digits, mult) = match v.last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&v[..v.len() - 1], 1u64 << 20),
        b'g' | b'G' => (&v[..v.len() - 1], 1u64 << 30),
        _ => (v, 1),
    };
    parse_u64(digits).map(|n| n.saturating_mul(mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"0"), Some(0));
        assert_eq!(parse_size(b"12"), Some(12));
        assert_eq!(parse_size(b"2k"), Some(2048));
        assert_eq!(parse_size(b"3M"), Some(3 << 20));
        assert_eq!(parse_size(b"1g"), Some(1 << 30));
        assert_eq!(parse_size(b"k"), None);
        assert_eq!(parse_size(b"1x"), None);
        assert_eq!(parse_size(b""), None);
    }

    #[test]
    fn query() {
        let p = Params::from_target(b"/a/b?s=1k&t=20&r=503&k=1&C=1&R=1&times=3&zz=9");
        assert_eq!(
            p,
            Params {
                size: Some(1024),
                wait_ms: 20,
                status: 503,
                chunked: true,
                close: true,
                random: true,
                times: 3,
            }
        );
        assert_eq!(Params::from_target(b"/"), Params::default());
        assert_eq!(Params::from_target(b"/?r=99&s=x").status(), 200);
        assert_eq!(Params::from_target(b"/?r=99&s=x").size, None);
        assert!(!Params::from_target(b"/?k=0").chunked);
        assert!(Params::from_target(b"/?C").close);
    }
}
