//! The HPACK encoder (RFC 7541 §6) and its indexing policy.
//!
//! Policy, in order, for each field:
//! 1. Sensitive fields (`authorization`, `proxy-authorization`, `cookie`,
//!    `set-cookie`) are sent as *never indexed* literals (RFC 7541 §6.2.3,
//!    §7.1.3): no table of any hop may keep them, which closes
//!    compression-ratio attacks (CRIME-style) on credentials. Short
//!    cookies are thereby sent in full each time; that is the price.
//! 2. A field equal to a static-table entry, then to a dynamic-table
//!    entry, is sent as its index.
//! 3. With a dynamic table (its size is the smaller of
//!    [`Encoder::new`]'s and the peer's SETTINGS_HEADER_TABLE_SIZE), a
//!    field whose entry takes at most a quarter of the table is added to
//!    it (incremental indexing), so repeated fields shrink to one byte
//!    without one large value flushing the table.
//! 4. Otherwise a literal without indexing, naming a table entry when one
//!    has that name.
//!
//! Strings are Huffman-coded when that is shorter. The default table size
//! in `fairlead-h2` is 0 (HAProxy's stateless encoder): no memory per
//! connection, and encoding costs little more than a copy.

use super::huffman;
use super::table::{find_static, Dynamic, ENTRY_OVERHEAD};

/// When to Huffman-code strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Huffman {
    /// When shorter (the default).
    Auto,
    Always,
    Never,
}

/// An HPACK encoder.
#[derive(Debug)]
pub struct Encoder {
    table: Dynamic,
    /// The largest table this side is willing to keep.
    limit: usize,
    /// A size update to send at the start of the next block.
    pending_update: Option<usize>,
    huffman: Huffman,
    /// Index every field (RFC 7541 Appendix C's examples do).
    index_all: bool,
}

/// Names never indexed (§7.1.3).
pub fn is_sensitive(name: &[u8]) -> bool {
    [
        &b"authorization"[..],
        b"proxy-authorization",
        b"cookie",
        b"set-cookie",
    ]
    .iter()
    .any(|s| s.eq_ignore_ascii_case(name))
}

impl Encoder {
    /// An encoder that keeps a dynamic table of at most `limit` bytes (0:
    /// stateless), until the peer's setting lowers it. HTTP/2 starts with
    /// the peer's default of 4096.
    pub fn new(limit: usize) -> Encoder {
        let size = limit.min(4096);
        Encoder {
            table: Dynamic::new(size),
            limit,
            pending_update: None,
            huffman: Huffman::Auto,
            index_all: false,
        }
    }

    /// The policy of RFC 7541 Appendix C's examples: every field is
    /// indexed, strings coded as `huffman` says.
    pub fn with_policy(limit: usize, huffman: Huffman, index_all: bool) -> Encoder {
        Encoder {
            huffman,
            index_all,
            ..Encoder::new(limit)
        }
    }

    /// The dynamic table.
    pub fn table(&self) -> &Dynamic {
        &self.table
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed: the table becomes
    /// the smaller of it and this side's limit, announced at the start of
    /// the next block.
    pub fn set_peer_max(&mut self, peer: usize) {
        let size = self.limit.min(peer);
        if size != self.table.max_size() {
            self.table.set_max_size(size);
            // Only the smallest size matters if several changes pile up,
            // then the final one (RFC 7541 §4.2); sending the final one is
            // enough as it is never above the peer's limit.
            self.pending_update = Some(size);
        }
    }

    /// Starts a header block: writes a pending table size update.
    pub fn begin_block(&mut self, out: &mut Vec<u8>) {
        if let Some(size) = self.pending_update.take() {
            encode_int(out, size, 5, 0x20);
        }
    }

    /// Encodes one field (`lower_name`: ASCII-lowercase the name on the
    /// way, as HTTP/2 requires lowercase names).
    pub fn field(&mut self, name: &[u8], value: &[u8], lower_name: bool, out: &mut Vec<u8>) {
        let mut lowered = [0u8; 64];
        let name: &[u8] = if lower_name && name.iter().any(u8::is_ascii_uppercase) {
            if name.len() <= lowered.len() {
                let l = &mut lowered[..name.len()];
                l.copy_from_slice(name);
                l.make_ascii_lowercase();
                &lowered[..name.len()]
            } else {
                return self.literal_owned_name(name, value, out);
            }
        } else {
            name
        };
        let never = !self.index_all && is_sensitive(name);
        let (s_exact, s_name) = find_static(name, value);
        if let (Some(i), false) = (s_exact, never) {
            return encode_int(out, i, 7, 0x80);
        }
        let (d_exact, d_name) = if self.table.is_empty() {
            (None, None)
        } else {
            self.table.find(name, value)
        };
        let dyn_index = |i: usize| i + 1 + super::table::STATIC.len();
        if let (Some(i), false) = (d_exact, never) {
            return encode_int(out, dyn_index(i), 7, 0x80);
        }
        let name_index = s_name.or(d_name.map(dyn_index));
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        let index = !never
            && self.table.max_size() > 0
            && (self.index_all || size <= self.table.max_size() / 4);
        let (prefix, flags) = match (never, index) {
            (true, _) => (4, 0x10),
            (false, true) => (6, 0x40),
            (false, false) => (4, 0x00),
        };
        match name_index {
            Some(i) => encode_int(out, i, prefix, flags),
            None => {
                out.push(flags);
                self.string(name, false, out);
            }
        }
        self.string(value, false, out);
        if index {
            self.table.insert(name, value);
        }
    }

    /// A literal without indexing for a long name with uppercase letters
    /// (lowercased while written).
    fn literal_owned_name(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        out.push(if is_sensitive(name) { 0x10 } else { 0x00 });
        self.string(name, true, out);
        self.string(value, false, out);
    }

    /// A string literal (RFC 7541 §5.2).
    fn string(&self, s: &[u8], lower: bool, out: &mut Vec<u8>) {
        let hlen = huffman::encoded_len(s, lower);
        let huff = match self.huffman {
            Huffman::Always => true,
            Huffman::Never => false,
            Huffman::Auto => hlen < s.len(),
        };
        if huff {
            encode_int(out, hlen, 7, 0x80);
            huffman::encode(s, lower, out);
        } else {
            encode_int(out, s.len(), 7, 0);
            if lower {
                out.extend(s.iter().map(u8::to_ascii_lowercase));
            } else {
                out.extend_from_slice(s);
            }
        }
    }
}

/// Appends an integer with an `n`-bit prefix (RFC 7541 §5.1), `flags` in
/// the bits above the prefix.
pub fn encode_int(out: &mut Vec<u8>, mut v: usize, n: u8, flags: u8) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::super::decoder::tests::{hex, C3, C4, C5, C6};
    use super::super::Decoder;
    use super::*;

    #[test]
    fn c_1_integers() {
        let mut out = Vec::new();
        encode_int(&mut out, 10, 5, 0);
        encode_int(&mut out, 1337, 5, 0);
        encode_int(&mut out, 42, 8, 0);
        assert_eq!(out, [10, 31, 154, 10, 42]);
    }

    type Fields = [&'static [(&'static str, &'static str)]; 3];

    const REQ: Fields = [
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
            ("cache-control", "no-cache"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ],
    ];

    const D1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
    const LOC: &str = "https://www.example.com";
    const RESP: Fields = [
        &[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", D1),
            ("location", LOC),
        ],
        &[
            (":status", "307"),
            ("cache-control", "private"),
            ("date", D1),
            ("location", LOC),
        ],
        &[
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ("location", LOC),
            ("content-encoding", "gzip"),
            (
                "set-cookie",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
        ],
    ];

    fn reproduce(size: usize, h: Huffman, fields: Fields, expect: [&str; 3]) {
        let mut e = Encoder::with_policy(size, h, true);
        e.table.set_max_size(size);
        for (f, x) in fields.iter().zip(expect) {
            let mut out = Vec::new();
            e.begin_block(&mut out);
            for (n, v) in f.iter() {
                e.field(n.as_bytes(), v.as_bytes(), false, &mut out);
            }
            assert_eq!(out, hex(x));
        }
    }

    #[test]
    fn c_3_to_c_6_byte_for_byte() {
        reproduce(4096, Huffman::Never, REQ, C3);
        reproduce(4096, Huffman::Always, REQ, C4);
        reproduce(256, Huffman::Never, RESP, C5);
        reproduce(256, Huffman::Always, RESP, C6);
    }

    fn round_trip(e: &mut Encoder, d: &mut Decoder, fields: &[(&[u8], &[u8])]) -> usize {
        let mut out = Vec::new();
        e.begin_block(&mut out);
        for (n, v) in fields {
            e.field(n, v, true, &mut out);
        }
        let mut got = Vec::new();
        d.decode(&out, &mut Vec::new(), |n, v, _| {
            got.push((n.to_vec(), v.to_vec()))
        })
        .unwrap();
        let want: Vec<_> = fields
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.to_vec()))
            .collect();
        assert_eq!(got, want);
        out.len()
    }

    #[test]
    fn default_policy_round_trips_and_indexes() {
        let fields: &[(&[u8], &[u8])] = &[
            (b":method", b"GET"),
            (b":path", b"/x"),
            (b"User-Agent", b"curl/8"),
            (b"cookie", b"a=b"),
            (b"authorization", b"Basic eA=="),
            (
                b"x-a-very-long-header-name-that-is-longer-than-sixty-four-bytes-Long",
                b"v",
            ),
        ];
        let mut e = Encoder::new(4096);
        let mut d = Decoder::new(4096);
        let first = round_trip(&mut e, &mut d, fields);
        let second = round_trip(&mut e, &mut d, fields);
        assert!(second < first, "{second} < {first}");
        // Sensitive fields never entered either table.
        for i in 0..d.table().len() {
            let (n, _) = d.table().get(i).unwrap();
            assert!(!is_sensitive(n));
        }
        // Stateless: nothing indexed.
        let mut e = Encoder::new(0);
        let mut d = Decoder::new(4096);
        let a = round_trip(&mut e, &mut d, fields);
        let b = round_trip(&mut e, &mut d, fields);
        assert_eq!(a, b);
        assert!(d.table().is_empty());
    }

    #[test]
    fn peer_size_change_sends_update() {
        let mut e = Encoder::new(4096);
        e.set_peer_max(100);
        let mut out = Vec::new();
        e.begin_block(&mut out);
        assert_eq!(out, [0x3f, 0x45]);
        out.clear();
        e.begin_block(&mut out);
        assert!(out.is_empty());
    }
}
