//! The HPACK static table (RFC 7541 Appendix A) and dynamic table
//! (§2.3.2, §4).
//!
//! The dynamic table keeps its entries' bytes in one vector, oldest first:
//! inserting appends, evicting advances a start offset, and the evicted
//! prefix is dropped only when an insertion would otherwise grow the
//! vector past the table size. So the bytes never exceed the table's size
//! (entries count 32 bytes more each, RFC 7541 §4.1) and an empty table
//! holds no allocation.

use std::collections::VecDeque;

/// RFC 7541 Appendix A; index 1 is `STATIC[0]`.
pub const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Per-entry overhead in the table size (RFC 7541 §4.1).
pub const ENTRY_OVERHEAD: usize = 32;

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Absolute position of the name's first byte (see `Dynamic::base`).
    pos: usize,
    name_len: u32,
    value_len: u32,
}

impl Entry {
    fn size(&self) -> usize {
        self.name_len as usize + self.value_len as usize + ENTRY_OVERHEAD
    }
}

/// An HPACK dynamic table.
#[derive(Debug, Default)]
pub struct Dynamic {
    /// Newest first: dynamic index 0 is `entries[0]`.
    entries: VecDeque<Entry>,
    /// Entry bytes, oldest first, from `data[start..]` (the prefix is
    /// evicted).
    data: Vec<u8>,
    start: usize,
    /// Absolute position of `data[0]`.
    base: usize,
    /// RFC 7541 size of the entries.
    size: usize,
    max_size: usize,
}

impl Dynamic {
    /// An empty table of at most `max_size` bytes.
    pub fn new(max_size: usize) -> Dynamic {
        Dynamic {
            max_size,
            ..Dynamic::default()
        }
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// RFC 7541 size of the entries.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The current maximum size.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Bytes this table has allocated (entry bytes and descriptors).
    pub fn allocated(&self) -> usize {
        self.data.capacity() + self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    /// Entry `i` (0: newest) as (name, value).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let e = self.entries.get(i)?;
        let s = e.pos.checked_sub(self.base)?;
        let n = s + e.name_len as usize;
        let v = n + e.value_len as usize;
        Some((self.data.get(s..n)?, self.data.get(n..v)?))
    }

    /// Changes the maximum size, evicting as needed (a dynamic table size
    /// update, RFC 7541 §4.3). Frees the bytes when the table empties.
    pub fn set_max_size(&mut self, max: usize) {
        self.max_size = max;
        self.evict_to(max);
        if self.entries.is_empty() {
            self.data = Vec::new();
            self.entries = VecDeque::new();
            self.start = 0;
        }
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= e.size();
            self.start = (e.pos + e.name_len as usize + e.value_len as usize) - self.base;
        }
        if self.entries.is_empty() {
            self.base += self.data.len();
            self.data.clear();
            self.start = 0;
        }
    }

    /// Inserts (name, value) as the newest entry (RFC 7541 §4.4): an entry
    /// larger than the table empties it and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let need = name.len() + value.len() + ENTRY_OVERHEAD;
        if need > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - need);
        let bytes = name.len() + value.len();
        if self.data.len() + bytes > self.max_size {
            self.data.drain(..self.start);
            self.base += self.start;
            self.start = 0;
        }
        if self.data.capacity() == 0 {
            self.data.reserve_exact(self.max_size);
        }
        let pos = self.base + self.data.len();
        self.data.extend_from_slice(name);
        self.data.extend_from_slice(value);
        self.entries.push_front(Entry {
            pos,
            name_len: name.len() as u32,
            value_len: value.len() as u32,
        });
        self.size += need;
    }

    /// Index (0: newest) of an entry equal to (name, value), and of one
    /// with that name only.
    pub fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut by_name = None;
        for i in 0..self.entries.len() {
            if let Some((n, v)) = self.get(i) {
                if n == name {
                    if v == value {
                        return (Some(i), Some(i));
                    }
                    by_name.get_or_insert(i);
                }
            }
        }
        (None, by_name)
    }
}

/// Index (1-based) in the static table of (name, value), and of the name.
pub fn find_static(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut by_name = None;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if *n == name {
            if *v == value && !v.is_empty() {
                return (Some(i + 1), Some(i + 1));
            }
            by_name.get_or_insert(i + 1);
        }
    }
    (None, by_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_evict_and_compact() {
        let mut t = Dynamic::new(100);
        assert_eq!(t.allocated(), 0);
        t.insert(b"aaaa", b"1111"); // 40
        t.insert(b"bbbb", b"2222"); // 80
        assert_eq!(t.size(), 80);
        assert_eq!(t.get(0), Some((&b"bbbb"[..], &b"2222"[..])));
        assert_eq!(t.get(1), Some((&b"aaaa"[..], &b"1111"[..])));
        t.insert(b"cccc", b"3333"); // evicts aaaa
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(1), Some((&b"bbbb"[..], &b"2222"[..])));
        for i in 0..50u8 {
            t.insert(&[b'n', i], &[b'v'; 20]);
        }
        assert!(t.size() <= 100);
        assert_eq!(t.get(0), Some((&[b'n', 49][..], &[b'v'; 20][..])));
        assert!(t.data.capacity() <= 100, "{}", t.data.capacity());
    }

    #[test]
    fn too_large_entry_empties_the_table() {
        let mut t = Dynamic::new(64);
        t.insert(b"a", b"b");
        t.insert(&[b'x'; 40], b"");
        assert!(t.is_empty());
        assert_eq!(t.size(), 0);
    }

    #[test]
    fn size_update_evicts_and_frees() {
        let mut t = Dynamic::new(4096);
        t.insert(b"name", b"value");
        t.insert(b"name2", b"value2");
        t.set_max_size(45);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(0), Some((&b"name2"[..], &b"value2"[..])));
        t.set_max_size(0);
        assert!(t.is_empty());
        assert_eq!(t.allocated(), 0);
    }

    #[test]
    fn static_lookup() {
        assert_eq!(find_static(b":method", b"GET"), (Some(2), Some(2)));
        assert_eq!(find_static(b":method", b"PUT"), (None, Some(2)));
        assert_eq!(find_static(b"cookie", b""), (None, Some(32)));
        assert_eq!(find_static(b"x-foo", b"1"), (None, None));
    }
}
