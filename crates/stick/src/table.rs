//! The shared table: entries indexed by key, expiry, purging when full and
//! reference counting for trackers.
//!
//! # Concurrency
//!
//! One [`Table`] is shared by every worker thread (it is an `Arc`).
//! Entries are spread over [`SHARDS`] shards by a keyed hash of their key;
//! each shard is a mutex over a hash map (key to entry) and an expiry index
//! ordered by (expiry date, entry id). A lookup locks one shard and never
//! allocates (string keys included: the map is searched by `&[u8]`). An
//! entry's values sit behind the entry's own mutex (HAProxy's per-entry
//! lock), so counter updates on different keys never contend, and updates
//! on one key contend only with each other.
//!
//! Refreshing an entry's expiry is a single atomic store: as in HAProxy,
//! the expiry index is updated lazily. An entry stays queued at the date it
//! was queued with; when the purge reaches it and finds a later date, it is
//! queued again at that date.
//!
//! Making room in a full table needs the global order of expiry dates, so
//! that path locks all shards (in index order) and evicts a batch of
//! `size/256 + 1` entries in expiry order, skipping referenced ones, and
//! giving up after twice that many candidates, like HAProxy's
//! `stktable_trash_oldest`. Since a batch frees room for many inserts, the
//! all-shard lock is taken once every `size/256` new keys at worst.
//!
//! # Time
//!
//! Every operation that depends on time takes `now` in milliseconds on the
//! caller's monotonic clock (never 0 in practice; the table never reads a
//! clock itself). An entry expires when `now >= expire` and nothing
//! references it; expired entries are invisible to lookups even before
//! [`Table::purge_expired`] frees them.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use crate::data::{Data, Layout, Val, Value};
use crate::key::{make_key, KeyInput, TableKey};
use crate::spec::{DataType, TableSpec};

/// Number of shards of a table.
pub const SHARDS: usize = 16;

/// What entries need from their table without holding it.
pub(crate) struct Common {
    pub(crate) spec: TableSpec,
    pub(crate) layout: Layout,
    /// The peers sync task's queue (see [`Table::subscribe`]).
    pub(crate) updates: OnceLock<Sender<crate::peer::Pending>>,
}

impl Common {
    /// The expiry date of an entry touched at `now`.
    fn expire_at(&self, now: u64) -> u64 {
        now + u64::from(self.spec.expire_ms.unwrap_or(0))
    }
}

pub(crate) struct Entry {
    pub(crate) id: u64,
    pub(crate) common: Arc<Common>,
    owner: Weak<Inner>,
    pub(crate) key: Box<[u8]>,
    shard: usize,
    pub(crate) ref_cnt: AtomicU32,
    /// Current expiry date (ms); for tables without `expire`, the date of
    /// the last update (the purge order).
    pub(crate) expire: AtomicU64,
    /// The date the entry is queued at in its shard's expiry index
    /// (changed only under the shard lock).
    exp_key: AtomicU64,
    pub(crate) data: Mutex<Box<[Val]>>,
    /// Whether the entry waits in the peers queue.
    pub(crate) queued: AtomicBool,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Box<[u8]>, Arc<Entry>>,
    exps: BTreeMap<(u64, u64), Arc<Entry>>,
}

pub(crate) struct Inner {
    pub(crate) common: Arc<Common>,
    hasher: RandomState,
    shards: Box<[Mutex<Shard>]>,
    current: AtomicU32,
    next_id: AtomicU64,
}

/// A stick table, cheap to clone (all clones are the same table).
#[derive(Clone)]
pub struct Table {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.inner.common.spec.name)
            .field("used", &self.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Table {
    /// Creates an empty table.
    pub fn new(spec: TableSpec) -> Table {
        let layout = Layout::new(&spec);
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        Table {
            inner: Arc::new(Inner {
                common: Arc::new(Common {
                    spec,
                    layout,
                    updates: OnceLock::new(),
                }),
                hasher: RandomState::new(),
                shards,
                current: AtomicU32::new(0),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// The declaration.
    pub fn spec(&self) -> &TableSpec {
        &self.inner.common.spec
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.inner.common.spec.name
    }

    /// Number of entries (`table_cnt`, `used:` in `show table`).
    pub fn len(&self) -> u32 {
        self.inner.current.load(Ordering::Relaxed)
    }

    /// Whether the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Free entries (`table_avl`): size minus used.
    pub fn available(&self) -> i64 {
        i64::from(self.spec().size) - i64::from(self.len())
    }

    /// Whether two handles designate the same table.
    pub fn same(&self, other: &Table) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Converts a sample into this table's key (see [`make_key`]).
    pub fn key<'a>(&self, input: &KeyInput<'a>) -> Option<TableKey<'a>> {
        make_key(self.spec(), input)
    }

    fn shard_of(&self, key: &[u8]) -> usize {
        (self.inner.hasher.hash_one(key) as usize) % SHARDS
    }

    fn is_expired(&self, e: &Entry, now: u64) -> bool {
        self.spec().expire_ms.is_some() && e.expire.load(Ordering::Relaxed) <= now
    }

    /// Removes an unreferenced entry from its shard (locked by the caller).
    fn kill_locked(&self, shard: &mut Shard, e: &Arc<Entry>) -> bool {
        if e.ref_cnt.load(Ordering::Acquire) != 0 {
            return false;
        }
        if shard.map.remove(&e.key).is_some() {
            shard
                .exps
                .remove(&(e.exp_key.load(Ordering::Relaxed), e.id));
            self.inner.current.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    /// Looks a key up and takes a reference on the entry (`use=` counts
    /// it until the handle is dropped). Does not refresh the expiry.
    pub fn lookup(&self, key: &[u8], now: u64) -> Option<EntryRef> {
        let si = self.shard_of(key);
        let mut shard = lock(&self.inner.shards[si]);
        let e = shard.map.get(key)?.clone();
        if self.is_expired(&e, now) && e.ref_cnt.load(Ordering::Acquire) == 0 {
            self.kill_locked(&mut shard, &e);
            return None;
        }
        e.ref_cnt.fetch_add(1, Ordering::AcqRel);
        drop(shard);
        Some(EntryRef { entry: e })
    }

    /// Whether a live entry exists for `key` (`in_table`).
    pub fn contains(&self, key: &[u8], now: u64) -> bool {
        self.lookup(key, now).is_some()
    }

    /// Returns the entry for `key`, creating it if needed, with a
    /// reference taken. `None` when the table is full and nothing can be
    /// purged (or it has `nopurge`): HAProxy then silently does nothing.
    pub fn get_or_create(&self, key: &[u8], now: u64) -> Option<EntryRef> {
        let si = self.shard_of(key);
        // Two rounds: the second after purging room.
        for round in 0..2 {
            let mut shard = lock(&self.inner.shards[si]);
            if let Some(e) = shard.map.get(key).cloned() {
                if !(self.is_expired(&e, now) && e.ref_cnt.load(Ordering::Acquire) == 0) {
                    e.ref_cnt.fetch_add(1, Ordering::AcqRel);
                    drop(shard);
                    return Some(EntryRef { entry: e });
                }
                // Expired: replace it with a fresh entry.
                self.kill_locked(&mut shard, &e);
            }
            if self.reserve() {
                let e = self.insert_locked(&mut shard, si, key, now);
                return Some(EntryRef { entry: e });
            }
            drop(shard);
            if self.spec().nopurge || round == 1 {
                return None;
            }
            let batch = (self.spec().size >> 8) + 1;
            if self.purge_oldest(batch as usize, now) == 0 {
                return None;
            }
        }
        None
    }

    /// Takes one unit of room if the table is not full.
    fn reserve(&self) -> bool {
        let size = self.spec().size;
        self.inner
            .current
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                (c < size).then_some(c + 1)
            })
            .is_ok()
    }

    fn insert_locked(&self, shard: &mut Shard, si: usize, key: &[u8], now: u64) -> Arc<Entry> {
        let exp = self.inner.common.expire_at(now);
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let e = Arc::new(Entry {
            id,
            common: self.inner.common.clone(),
            owner: Arc::downgrade(&self.inner),
            key: key.into(),
            shard: si,
            ref_cnt: AtomicU32::new(1),
            expire: AtomicU64::new(exp),
            exp_key: AtomicU64::new(exp),
            data: Mutex::new(self.inner.common.layout.fresh()),
            queued: AtomicBool::new(false),
        });
        shard.map.insert(e.key.clone(), e.clone());
        shard.exps.insert((exp, id), e.clone());
        e
    }

    /// Evicts up to `batch` unreferenced entries in expiry order (expired
    /// ones first by construction), inspecting at most `2 × batch`
    /// candidates. Returns how many were evicted.
    pub fn purge_oldest(&self, batch: usize, now: u64) -> usize {
        let _ = now;
        let mut guards: Vec<MutexGuard<'_, Shard>> =
            self.inner.shards.iter().map(|m| lock(m)).collect();
        let mut cursors: Vec<Option<(u64, u64)>> = vec![None; SHARDS];
        let mut max_search = batch.saturating_mul(2);
        let mut evicted = 0;
        while evicted < batch {
            // The smallest queued key after each shard's cursor.
            let mut best: Option<(usize, (u64, u64))> = None;
            for (i, g) in guards.iter().enumerate() {
                let next = match cursors[i] {
                    None => g.exps.keys().next().copied(),
                    Some(c) => g
                        .exps
                        .range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                        .next()
                        .map(|(k, _)| *k),
                };
                if let Some(k) = next {
                    if best.is_none_or(|(_, b)| k < b) {
                        best = Some((i, k));
                    }
                }
            }
            let Some((si, k)) = best else { break };
            if max_search == 0 {
                break;
            }
            max_search -= 1;
            cursors[si] = Some(k);
            let shard = &mut *guards[si];
            let Some(e) = shard.exps.get(&k).cloned() else {
                continue;
            };
            if e.ref_cnt.load(Ordering::Acquire) != 0 {
                continue;
            }
            let exp = e.expire.load(Ordering::Relaxed);
            if exp != k.0 {
                // Queued at an old date: requeue at the current one.
                shard.exps.remove(&k);
                e.exp_key.store(exp, Ordering::Relaxed);
                shard.exps.insert((exp, e.id), e.clone());
                continue;
            }
            if self.kill_locked(shard, &e) {
                evicted += 1;
            }
        }
        evicted
    }

    /// Frees every expired, unreferenced entry (HAProxy's expiry task).
    /// Returns the next date at which an entry may expire, if any. Does
    /// nothing for tables without `expire`.
    pub fn purge_expired(&self, now: u64) -> Option<u64> {
        self.spec().expire_ms?;
        let mut next: Option<u64> = None;
        for m in self.inner.shards.iter() {
            let mut shard = lock(m);
            let mut cursor: Option<(u64, u64)> = None;
            loop {
                let k = match cursor {
                    None => shard.exps.keys().next().copied(),
                    Some(c) => shard
                        .exps
                        .range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                        .next()
                        .map(|(k, _)| *k),
                };
                let Some(k) = k else { break };
                if k.0 > now {
                    next = Some(next.map_or(k.0, |n| n.min(k.0)));
                    break;
                }
                cursor = Some(k);
                let Some(e) = shard.exps.get(&k).cloned() else {
                    continue;
                };
                if e.ref_cnt.load(Ordering::Acquire) != 0 {
                    continue;
                }
                let exp = e.expire.load(Ordering::Relaxed);
                if exp > now {
                    shard.exps.remove(&k);
                    e.exp_key.store(exp, Ordering::Relaxed);
                    shard.exps.insert((exp, e.id), e.clone());
                    continue;
                }
                self.kill_locked(&mut shard, &e);
            }
        }
        next
    }

    /// Removes the entry for `key` (`clear table NAME key K`). `Ok(false)`
    /// when absent, `Err` when it is referenced.
    pub fn remove(&self, key: &[u8]) -> Result<bool, InUse> {
        let si = self.shard_of(key);
        let mut shard = lock(&self.inner.shards[si]);
        let Some(e) = shard.map.get(key).cloned() else {
            return Ok(false);
        };
        if self.kill_locked(&mut shard, &e) {
            Ok(true)
        } else {
            Err(InUse)
        }
    }

    /// All live entries sorted by key bytes (HAProxy's tree order), each
    /// with a reference taken. Expired unreferenced entries are freed.
    pub fn entries(&self, now: u64) -> Vec<EntryRef> {
        let mut out = Vec::new();
        for m in self.inner.shards.iter() {
            let mut shard = lock(m);
            let all: Vec<Arc<Entry>> = shard.map.values().cloned().collect();
            for e in all {
                if self.is_expired(&e, now) && e.ref_cnt.load(Ordering::Acquire) == 0 {
                    self.kill_locked(&mut shard, &e);
                    continue;
                }
                e.ref_cnt.fetch_add(1, Ordering::AcqRel);
                out.push(EntryRef { entry: e });
            }
        }
        out.sort_by(|a, b| a.entry.key.cmp(&b.entry.key));
        out
    }

    /// Kills `e` if it is expired and unreferenced (after a tracker let it
    /// go).
    fn kill_if_expired(&self, e: &Arc<Entry>, now: u64) {
        if !self.is_expired(e, now) {
            return;
        }
        let mut shard = lock(&self.inner.shards[e.shard]);
        if shard.map.get(&e.key).is_some_and(|x| Arc::ptr_eq(x, e)) {
            self.kill_locked(&mut shard, e);
        }
    }
}

/// The entry is referenced by a tracker and cannot be removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InUse;

/// A referenced entry: while it lives, the entry cannot be purged or
/// removed. Dropping it releases the reference without refreshing the
/// expiry (HAProxy's `stktable_release`).
pub struct EntryRef {
    pub(crate) entry: Arc<Entry>,
}

impl std::fmt::Debug for EntryRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryRef")
            .field("table", &self.entry.common.spec.name)
            .field("id", &self.entry.id)
            .finish()
    }
}

impl Drop for EntryRef {
    fn drop(&mut self) {
        self.entry.ref_cnt.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EntryRef {
    /// The table of the entry (`None` once the table is gone).
    pub fn table(&self) -> Option<Table> {
        self.entry.owner.upgrade().map(|inner| Table { inner })
    }

    /// The declaration of the entry's table.
    pub fn spec(&self) -> &TableSpec {
        &self.entry.common.spec
    }

    /// The stored key bytes.
    pub fn key(&self) -> &[u8] {
        &self.entry.key
    }

    /// A stable id for the entry (printed in place of HAProxy's pointer).
    pub fn id(&self) -> u64 {
        self.entry.id
    }

    /// The reference count, this handle included (HAProxy's `ref_cnt`).
    pub fn ref_cnt(&self) -> u32 {
        self.entry.ref_cnt.load(Ordering::Acquire)
    }

    /// Milliseconds until expiry (`exp=` of `show table`), 0 when due.
    pub fn expires_in(&self, now: u64) -> u64 {
        self.entry
            .expire
            .load(Ordering::Relaxed)
            .saturating_sub(now)
    }

    /// Refreshes the expiry: `expire` after `now` (HAProxy's
    /// `stktable_touch_local`).
    pub fn touch(&self, now: u64) {
        self.entry
            .expire
            .store(self.entry.common.expire_at(now), Ordering::Relaxed);
        self.notify_peers();
    }

    pub(crate) fn with_data<R>(&self, f: impl FnOnce(&mut Data<'_>) -> R) -> R {
        let mut vals = lock(&self.entry.data);
        let mut d = Data {
            layout: &self.entry.common.layout,
            vals: &mut vals,
        };
        f(&mut d)
    }

    /// Reads element `idx` of `dt` (rates at `now`); `None` when the table
    /// does not store it.
    pub fn get(&self, dt: DataType, idx: u32, now: u64) -> Option<Value> {
        self.with_data(|d| d.read(dt, idx, now))
    }

    /// Reads an integer value; `None` when not stored.
    pub fn get_int(&self, dt: DataType, now: u64) -> Option<i64> {
        self.get(dt, 0, now).map(|v| v.as_int())
    }

    /// Element count of `dt` in this table (0 when not stored).
    pub fn nbelem(&self, dt: DataType) -> u32 {
        self.entry.common.layout.nbelem(dt)
    }

    /// Releases the reference and frees the entry if it has expired and
    /// nothing else references it (`stksess_kill_if_expired`).
    pub fn release(self, now: u64) {
        let e = self.entry.clone();
        drop(self);
        // Only reach the table (a shared counter) when there is work.
        let expired = e.common.spec.expire_ms.is_some() && e.expire.load(Ordering::Relaxed) <= now;
        if expired && e.ref_cnt.load(Ordering::Acquire) == 0 {
            if let Some(table) = e.owner.upgrade().map(|inner| Table { inner }) {
                table.kill_if_expired(&e, now);
            }
        }
    }
}
