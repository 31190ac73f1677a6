//! The index one user (an ACL's `-f` file, a map converter) keeps over a
//! pattern reference, for its match method and flags.
//!
//! * `str` and `bin`: a hash of the keys (lowercased under `-i`, where the
//!   first entry in order among equal keys is also what HAProxy's list
//!   gives);
//! * `beg`: a hash of the keys and the set of key lengths; the sample's
//!   prefixes are probed from the longest length down (the tree's longest
//!   match), or at every length keeping the first entry in order (`-i`);
//! * `ip`: a hash per address family of `(prefix length, network)` probed
//!   from the longest prefix down, and a list for non-contiguous masks;
//! * everything else: a list, searched in order.
//!
//! Lookups are lock-free reads of an immutable value. Edits are applied to
//! a copy that shares everything but the shard or chunk that changes
//! ([`Arc::make_mut`]), so a single `add map` costs a few hundred entries'
//! worth of copying however large the map is.

use super::parse::{compile_key, compile_out, mask4, mask6, v4_of, Input, Key, OutVal, UserCfg};
use super::refs::Entry;
use super::Method;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

/// An entry as one user sees it: the shared entry and its parsed value.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub e: Arc<Entry>,
    pub out: OutVal,
}

/// A list entry: its compiled pattern and the entry.
#[derive(Debug, Clone)]
pub(crate) struct ListItem {
    pub key: Key,
    pub item: Item,
}

/// A fast multiplicative hasher. Keys come from the configuration or the
/// management socket, never from clients, so flooding is not a concern.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn mix(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let r = chunks.remainder();
        if !r.is_empty() {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(r);
            self.mix(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.mix(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.mix(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
    fn write_u128(&mut self, i: u128) {
        self.mix(i as u64);
        self.mix((i >> 64) as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

type Fast = BuildHasherDefault<FastHasher>;
type Shard<K> = HashMap<K, Vec<Item>, Fast>;

/// Entries per shard when an index is built, and the load past which the
/// shard count grows.
const SHARD_TARGET: usize = 256;
const SHARD_MAX: usize = 1024;
/// Entries per list chunk.
const CHUNK: usize = 512;

/// A hash map split into copy-on-write shards. Each key holds its entries
/// in entry order; the first one wins.
#[derive(Debug, Clone)]
pub(crate) struct Sharded<K> {
    shards: Vec<Arc<Shard<K>>>,
    len: usize,
}

impl<K: Hash + Eq + Clone> Sharded<K> {
    fn new(n: usize) -> Self {
        let count = (n / SHARD_TARGET).max(1).next_power_of_two().min(1 << 14);
        Sharded {
            shards: (0..count).map(|_| Arc::new(Shard::default())).collect(),
            len: 0,
        }
    }

    fn shard<Q: Hash + ?Sized>(&self, k: &Q) -> usize {
        let mut h = FastHasher::default();
        k.hash(&mut h);
        (h.finish() >> 40) as usize & (self.shards.len() - 1)
    }

    /// The winning entry for `k`.
    #[inline]
    fn get<Q>(&self, k: &Q) -> Option<&Item>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shards[self.shard(k)].get(k).and_then(|b| b.first())
    }

    fn insert(&mut self, k: K, it: Item) {
        if self.len >= self.shards.len() * SHARD_MAX {
            self.regrow();
        }
        let i = self.shard(&k);
        let b = Arc::make_mut(&mut self.shards[i]).entry(k).or_default();
        let pos = b.partition_point(|x| x.e.id < it.e.id);
        b.insert(pos, it);
        self.len += 1;
    }

    fn remove<Q>(&mut self, k: &Q, id: u64) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.shard(k);
        if !self.shards[i]
            .get(k)
            .is_some_and(|b| b.iter().any(|x| x.e.id == id))
        {
            return false;
        }
        let m = Arc::make_mut(&mut self.shards[i]);
        if let Some(b) = m.get_mut(k) {
            b.retain(|x| x.e.id != id);
            if b.is_empty() {
                m.remove(k);
            }
        }
        self.len -= 1;
        true
    }

    fn replace<Q>(&mut self, k: &Q, it: Item) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.shard(k);
        if !self.shards[i]
            .get(k)
            .is_some_and(|b| b.iter().any(|x| x.e.id == it.e.id))
        {
            return false;
        }
        let m = Arc::make_mut(&mut self.shards[i]);
        if let Some(x) = m
            .get_mut(k)
            .and_then(|b| b.iter_mut().find(|x| x.e.id == it.e.id))
        {
            *x = it;
        }
        true
    }

    /// The key holding entry `id` (a scan: only when the key cannot be
    /// recomputed from the entry).
    fn find_key(&self, id: u64) -> Option<K> {
        self.shards.iter().find_map(|s| {
            s.iter()
                .find(|(_, b)| b.iter().any(|x| x.e.id == id))
                .map(|(k, _)| k.clone())
        })
    }

    fn regrow(&mut self) {
        let mut new = Sharded::new(self.len * 4);
        if new.shards.len() <= self.shards.len() {
            return;
        }
        for s in &self.shards {
            for (k, b) in s.iter() {
                let i = new.shard(k);
                Arc::make_mut(&mut new.shards[i]).insert(k.clone(), b.clone());
            }
        }
        new.len = self.len;
        *self = new;
    }
}

/// The distinct key lengths of a prefix index, longest first, with how
/// many entries have each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lens(Vec<(u32, u32)>);

impl Lens {
    fn add(&mut self, l: u32) {
        match self.0.binary_search_by(|p| l.cmp(&p.0)) {
            Ok(i) => self.0[i].1 += 1,
            Err(i) => self.0.insert(i, (l, 1)),
        }
    }

    fn sub(&mut self, l: u32) {
        if let Ok(i) = self.0.binary_search_by(|p| l.cmp(&p.0)) {
            self.0[i].1 -= 1;
            if self.0[i].1 == 0 {
                self.0.remove(i);
            }
        }
    }

    /// Lengths up to `max`, longest first.
    #[inline]
    fn upto(&self, max: usize) -> impl Iterator<Item = u32> + '_ {
        let start = self.0.partition_point(|p| p.0 as usize > max);
        self.0[start..].iter().map(|p| p.0)
    }
}

/// A list in entry order, split into copy-on-write chunks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chunks(Vec<Arc<Vec<ListItem>>>);

impl Chunks {
    fn push(&mut self, li: ListItem) {
        let id = li.item.e.id;
        let last = self.0.last().and_then(|c| c.last()).map(|l| l.item.e.id);
        if last.is_none_or(|l| l < id) {
            match self.0.last_mut() {
                Some(c) if c.len() < CHUNK => Arc::make_mut(c).push(li),
                _ => self.0.push(Arc::new(vec![li])),
            }
            return;
        }
        // Out of order (not produced by the reference): insert in place.
        let ci = self
            .0
            .partition_point(|c| c.last().is_some_and(|l| l.item.e.id < id));
        let ci = ci.min(self.0.len() - 1);
        let c = Arc::make_mut(&mut self.0[ci]);
        let p = c.partition_point(|l| l.item.e.id < id);
        c.insert(p, li);
    }

    fn locate(&self, id: u64) -> Option<(usize, usize)> {
        let ci = self
            .0
            .partition_point(|c| c.last().is_some_and(|l| l.item.e.id < id));
        let c = self.0.get(ci)?;
        c.binary_search_by_key(&id, |l| l.item.e.id)
            .ok()
            .map(|p| (ci, p))
    }

    fn remove(&mut self, id: u64) -> bool {
        let Some((ci, p)) = self.locate(id) else {
            return false;
        };
        let c = Arc::make_mut(&mut self.0[ci]);
        c.remove(p);
        if c.is_empty() {
            self.0.remove(ci);
        }
        true
    }

    fn replace(&mut self, it: Item) -> bool {
        let Some((ci, p)) = self.locate(it.e.id) else {
            return false;
        };
        Arc::make_mut(&mut self.0[ci])[p].item = it;
        true
    }

    #[inline]
    fn find(&self, inp: &Input<'_>) -> Option<&ListItem> {
        self.0
            .iter()
            .flat_map(|c| c.iter())
            .find(|li| li.key.matches(inp))
    }
}

/// The IPv4 and IPv6 prefix indexes, and the list of non-contiguous masks.
#[derive(Debug, Clone)]
pub(crate) struct IpIndex {
    v4: Sharded<(u8, u32)>,
    v4l: Lens,
    v6: Sharded<(u8, u128)>,
    v6l: Lens,
    list: Chunks,
}

impl IpIndex {
    #[inline]
    fn lpm4(&self, a: u32) -> Option<&Item> {
        self.v4l
            .upto(32)
            .find_map(|l| self.v4.get(&(l as u8, a & mask4(l as u8))))
    }

    #[inline]
    fn lpm6(&self, a: u128) -> Option<&Item> {
        self.v6l
            .upto(128)
            .find_map(|l| self.v6.get(&(l as u8, a & mask6(l as u8))))
    }

    /// HAProxy's `pat_match_ip`: the sample's own family tree first, then
    /// the other family's (a v4 sample as `::ffff:a.b.c.d`; a v6 sample
    /// only when it embeds a v4 address), then the list.
    fn lookup<'i>(&'i self, inp: &Input<'_>) -> Option<(&'i Item, Option<&'i Key>)> {
        let tree = match *inp {
            Input::V4(a) => self
                .lpm4(a)
                .or_else(|| self.lpm6(0xffff_u128 << 32 | a as u128)),
            Input::V6(a) => self
                .lpm6(a)
                .or_else(|| v4_of(*inp).and_then(|v4| self.lpm4(v4))),
            _ => return None,
        };
        if let Some(it) = tree {
            return Some((it, None));
        }
        self.list.find(inp).map(|li| (&li.item, Some(&li.key)))
    }
}

/// One user's index over a reference's entries.
#[derive(Debug, Clone)]
pub(crate) enum Index {
    /// `found` and `bool`: patterns are ignored.
    Nothing,
    Exact(Sharded<Arc<[u8]>>),
    Prefix {
        map: Sharded<Arc<[u8]>>,
        lens: Lens,
        /// The tree's longest match, else the first entry in order (`-i`).
        longest: bool,
    },
    Ip(Box<IpIndex>),
    List(Chunks),
}

fn contiguous(mask: u32) -> bool {
    mask.leading_ones() + mask.trailing_zeros() == 32
}

impl Index {
    /// An empty index for `cfg`, sized for `n` entries.
    pub fn new(cfg: &UserCfg, n: usize) -> Index {
        match cfg.method {
            Method::Found | Method::Bool => Index::Nothing,
            Method::Str | Method::Bin => Index::Exact(Sharded::new(n)),
            Method::Beg => Index::Prefix {
                map: Sharded::new(n),
                lens: Lens::default(),
                longest: !cfg.icase,
            },
            Method::Ip => Index::Ip(Box::new(IpIndex {
                v4: Sharded::new(n),
                v4l: Lens::default(),
                v6: Sharded::new(n),
                v6l: Lens::default(),
                list: Chunks::default(),
            })),
            _ => Index::List(Chunks::default()),
        }
    }

    /// Compiles every entry for `cfg`. Errors name the entry's line and
    /// the reference's file when it came from one.
    pub fn build<'a>(
        cfg: &UserCfg,
        entries: impl ExactSizeIterator<Item = &'a Arc<Entry>>,
        resolve: bool,
        path: &str,
    ) -> Result<Index, String> {
        let mut idx = Index::new(cfg, entries.len());
        for e in entries {
            let (k, o) = compile_entry(cfg, e, resolve, path)?;
            idx.insert(
                k,
                Item {
                    e: e.clone(),
                    out: o,
                },
            );
        }
        Ok(idx)
    }

    /// Adds a compiled entry.
    pub fn insert(&mut self, key: Key, item: Item) {
        // Share the entry's own key bytes when the compiled key is the same.
        let share = |b: Arc<[u8]>, it: &Item| if *b == *it.e.key { it.e.key.clone() } else { b };
        match (self, key) {
            (Index::Nothing, _) => {}
            (Index::Exact(m), Key::Bytes(b)) => {
                let b = share(b, &item);
                m.insert(b, item)
            }
            (Index::Prefix { map, lens, .. }, Key::Bytes(b)) => {
                lens.add(b.len() as u32);
                let b = share(b, &item);
                map.insert(b, item)
            }
            (Index::Ip(ip), Key::V4 { addr, mask }) if contiguous(mask) => {
                let l = mask.leading_ones() as u8;
                ip.v4l.add(l as u32);
                ip.v4.insert((l, addr & mask), item)
            }
            (Index::Ip(ip), Key::V6 { addr, len }) => {
                ip.v6l.add(len as u32);
                ip.v6.insert((len, addr), item)
            }
            (Index::Ip(ip), key) => ip.list.push(ListItem { key, item }),
            (Index::List(c), key) => c.push(ListItem { key, item }),
            (_, key) => debug_assert!(false, "key {key:?} does not fit the index"),
        }
    }

    /// Removes entry `id`; `key` is its compiled key when it could be
    /// recomputed (else the hash indexes are scanned).
    pub fn remove(&mut self, key: Option<&Key>, id: u64) {
        match self {
            Index::Nothing => {}
            Index::Exact(m) => {
                let done = matches!(key, Some(Key::Bytes(b)) if m.remove(&**b, id));
                if !done {
                    if let Some(k) = m.find_key(id) {
                        m.remove(&*k, id);
                    }
                }
            }
            Index::Prefix { map, lens, .. } => {
                let len = match key {
                    Some(Key::Bytes(b)) if map.remove(&**b, id) => Some(b.len()),
                    _ => map.find_key(id).map(|k| {
                        map.remove(&*k, id);
                        k.len()
                    }),
                };
                if let Some(l) = len {
                    lens.sub(l as u32);
                }
            }
            Index::Ip(ip) => {
                if ip.list.remove(id) {
                    return;
                }
                if let Some(Key::V4 { addr, mask }) = key {
                    let l = mask.leading_ones() as u8;
                    if contiguous(*mask) && ip.v4.remove(&(l, addr & mask), id) {
                        ip.v4l.sub(l as u32);
                        return;
                    }
                }
                if let Some(Key::V6 { addr, len }) = key {
                    if ip.v6.remove(&(*len, *addr), id) {
                        ip.v6l.sub(*len as u32);
                        return;
                    }
                }
                if let Some(k) = ip.v4.find_key(id) {
                    ip.v4.remove(&k, id);
                    ip.v4l.sub(k.0 as u32);
                } else if let Some(k) = ip.v6.find_key(id) {
                    ip.v6.remove(&k, id);
                    ip.v6l.sub(k.0 as u32);
                }
            }
            Index::List(c) => {
                c.remove(id);
            }
        }
    }

    /// Replaces the item of an entry (a new value), keeping its place.
    pub fn replace(&mut self, key: Option<&Key>, it: Item) {
        let id = it.e.id;
        match self {
            Index::Nothing => {}
            Index::Exact(m) | Index::Prefix { map: m, .. } => {
                let done = matches!(key, Some(Key::Bytes(b)) if m.replace(&**b, it.clone()));
                if !done {
                    if let Some(k) = m.find_key(id) {
                        m.replace(&*k, it);
                    }
                }
            }
            Index::Ip(ip) => {
                if ip.list.replace(it.clone()) {
                    return;
                }
                let done = match key {
                    Some(Key::V4 { addr, mask }) if contiguous(*mask) => {
                        let l = mask.leading_ones() as u8;
                        ip.v4.replace(&(l, addr & mask), it.clone())
                    }
                    Some(Key::V6 { addr, len }) => ip.v6.replace(&(*len, *addr), it.clone()),
                    _ => false,
                };
                if done {
                    return;
                }
                if let Some(k) = ip.v4.find_key(id) {
                    ip.v4.replace(&k, it);
                } else if let Some(k) = ip.v6.find_key(id) {
                    ip.v6.replace(&k, it);
                }
            }
            Index::List(c) => {
                c.replace(it);
            }
        }
    }

    /// The winning entry for a prepared sample, and its compiled pattern
    /// when it came from a list (`regm` needs the regex).
    #[inline]
    pub fn lookup<'i>(&'i self, inp: &Input<'_>) -> Option<(&'i Item, Option<&'i Key>)> {
        match self {
            Index::Nothing => None,
            Index::Exact(m) => match inp {
                Input::Bytes(b) => m.get(*b).map(|i| (i, None)),
                _ => None,
            },
            Index::Prefix { map, lens, longest } => {
                let Input::Bytes(b) = *inp else {
                    return None;
                };
                let mut hits = lens.upto(b.len()).filter_map(|l| map.get(&b[..l as usize]));
                let it = if *longest {
                    hits.next()
                } else {
                    hits.min_by_key(|i| i.e.id)
                };
                it.map(|i| (i, None))
            }
            Index::Ip(ip) => ip.lookup(inp),
            Index::List(c) => c.find(inp).map(|li| (&li.item, Some(&li.key))),
        }
    }
}

/// Compiles an entry's key and value for `cfg`, naming the file and line
/// on error when the entry came from a file.
pub(crate) fn compile_entry(
    cfg: &UserCfg,
    e: &Entry,
    resolve: bool,
    path: &str,
) -> Result<(Key, OutVal), String> {
    let r = compile_key(cfg, &e.key, resolve)
        .and_then(|k| compile_out(cfg.out, e.value.as_deref()).map(|o| (k, o)));
    r.map_err(|m| {
        if e.line > 0 {
            format!("{m} at line {} of file '{path}'", e.line)
        } else {
            m
        }
    })
}

/// The compiled key of an existing entry, to find it in an index, when it
/// can be recomputed cheaply and without name resolution.
pub(crate) fn locate_key(cfg: &UserCfg, key: &[u8]) -> Option<Key> {
    match cfg.method {
        Method::Str | Method::Beg | Method::Bin | Method::Ip => compile_key(cfg, key, false).ok(),
        _ => None,
    }
}
