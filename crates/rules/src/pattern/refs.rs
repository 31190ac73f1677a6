//! Shared pattern references: `-f` files and map files, identified by
//! path, and editable at run time (`add map`, `set-map`, `prepare map`...).
//!
//! A [`PatRef`] holds its entries in order. Each user (an ACL's pattern
//! set, a map converter) registers its match method and flags once and
//! gets its own [`Index`]; an edit compiles the change for every user
//! first (so an entry that one user cannot parse is refused as a whole)
//! and then publishes each user's new index with an atomic pointer swap.
//! Lookups read the published index without taking any lock.

use super::index::{compile_entry, locate_key, Index, Item};
use super::parse::{compile_key, compile_out, Input, UserCfg};
use super::{input_of, lowered, Method};
use crate::sample::Sample;
use arc_swap::ArcSwap;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Entry ids are unique in the process (HAProxy prints element pointers).
static NEXT_ENTRY_ID: AtomicU64 = AtomicU64::new(0x1_0000);

/// One entry of a pattern reference: a key and, in maps, a value.
#[derive(Debug)]
pub struct Entry {
    pub(crate) id: u64,
    pub(crate) key: Arc<[u8]>,
    pub(crate) value: Option<Arc<[u8]>>,
    pub(crate) line: u32,
}

impl Entry {
    fn new(key: &[u8], value: Option<&[u8]>, line: u32) -> Entry {
        Entry {
            id: NEXT_ENTRY_ID.fetch_add(1, Ordering::Relaxed),
            key: key.into(),
            value: value.map(Into::into),
            line,
        }
    }

    /// The entry's unique id (what `show map` prints and `#<id>` names).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id as `show map` prints it (`0x...`).
    pub fn id_hex(&self) -> String {
        format!("{:#x}", self.id)
    }

    /// The key (pattern) bytes.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The value bytes (maps).
    pub fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }

    /// The key as text (invalid UTF-8 replaced).
    pub fn key_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.key)
    }

    /// The value as text (invalid UTF-8 replaced).
    pub fn value_str(&self) -> Option<Cow<'_, str>> {
        self.value.as_deref().map(String::from_utf8_lossy)
    }

    /// The line of the file it was read from (0: added at run time).
    pub fn line(&self) -> u32 {
        self.line
    }
}

/// One user of a reference: its method and flags, and its index.
pub(crate) struct RefUser {
    pub cfg: UserCfg,
    pub index: ArcSwap<Index>,
}

impl fmt::Debug for RefUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefUser")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// A row to load: key, value, line.
type Row = (Vec<u8>, Option<Vec<u8>>, u32);

#[derive(Default)]
struct RefState {
    /// The current version's entries, by id (which is insertion order).
    entries: BTreeMap<u64, Arc<Entry>>,
    by_key: HashMap<Arc<[u8]>, Vec<u64>>,
    curr_ver: u32,
    next_ver: u32,
    /// Entries of prepared versions, not visible until committed.
    pending: BTreeMap<u32, Vec<Arc<Entry>>>,
    users: Vec<Weak<RefUser>>,
}

impl RefState {
    fn live_users(&mut self) -> Vec<Arc<RefUser>> {
        self.users.retain(|w| w.strong_count() > 0);
        self.users.iter().filter_map(Weak::upgrade).collect()
    }

    fn insert(&mut self, e: Arc<Entry>) {
        self.by_key.entry(e.key.clone()).or_default().push(e.id);
        self.entries.insert(e.id, e);
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Entry>> {
        let e = self.entries.remove(&id)?;
        if let Some(ids) = self.by_key.get_mut(&e.key) {
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                self.by_key.remove(&e.key);
            }
        }
        Some(e)
    }

    /// The ids a CLI target names: `#<id>` (hex, as printed), else a key.
    fn targets(&self, target: &str) -> Vec<u64> {
        if let Some(h) = target.strip_prefix('#') {
            let h = h
                .strip_prefix("0x")
                .or_else(|| h.strip_prefix("0X"))
                .unwrap_or(h);
            return u64::from_str_radix(h, 16)
                .ok()
                .filter(|id| self.entries.contains_key(id))
                .into_iter()
                .collect();
        }
        self.by_key
            .get(target.as_bytes())
            .cloned()
            .unwrap_or_default()
    }

    fn set_entries(&mut self, entries: Vec<Arc<Entry>>) {
        self.entries.clear();
        self.by_key.clear();
        for e in entries {
            self.insert(e);
        }
    }
}

/// One pattern reference (a file, or an inline list), editable at run
/// time. Every pattern set and map using it sees edits at once.
pub struct PatRef {
    id: u32,
    path: String,
    two_col: bool,
    acl: AtomicBool,
    map: AtomicBool,
    generation: AtomicU64,
    st: Mutex<RefState>,
}

impl fmt::Debug for PatRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PatRef")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("entries", &self.len())
            .finish()
    }
}

impl Default for PatRef {
    fn default() -> Self {
        PatRef::new(0, String::new(), false, Vec::new())
    }
}

impl PatRef {
    pub(crate) fn new(id: u32, path: String, two_col: bool, rows: Vec<Row>) -> PatRef {
        let mut st = RefState::default();
        for (k, v, line) in rows {
            st.insert(Arc::new(Entry::new(&k, v.as_deref(), line)));
        }
        PatRef {
            id,
            path,
            two_col,
            acl: AtomicBool::new(false),
            map: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            st: Mutex::new(st),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RefState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The reference's numeric id (`#<id>` on the CLI).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The file path (or the display name of an inline reference).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether entries have values (a map file, or `-M`).
    pub fn is_two_column(&self) -> bool {
        self.two_col
    }

    /// Whether an ACL uses it (`show acl` lists it).
    pub fn used_by_acl(&self) -> bool {
        self.acl.load(Ordering::Relaxed)
    }

    /// Whether a map converter uses it (`show map` lists it).
    pub fn used_by_map(&self) -> bool {
        self.map.load(Ordering::Relaxed)
    }

    /// Bumped by every change of the visible entries.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many entries the current version has.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the current version has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(curr_ver, next_ver)` as `show map` prints them.
    pub fn versions(&self) -> (u32, u32) {
        let st = self.lock();
        (st.curr_ver, st.next_ver)
    }

    /// The current entries, in order.
    pub fn entries(&self) -> Vec<Arc<Entry>> {
        self.lock().entries.values().cloned().collect()
    }

    /// The entries of version `ver` (current or prepared).
    pub fn version_entries(&self, ver: u32) -> Option<Vec<Arc<Entry>>> {
        let st = self.lock();
        if ver == st.curr_ver {
            return Some(st.entries.values().cloned().collect());
        }
        st.pending.get(&ver).cloned()
    }

    /// Registers a user and builds its index (users with the same method
    /// and flags share one). Runs at configuration time: host names in IP
    /// patterns are resolved unless `-n`.
    pub(crate) fn attach(&self, cfg: UserCfg, as_map: bool) -> Result<Arc<RefUser>, String> {
        let mut st = self.lock();
        if as_map {
            self.map.store(true, Ordering::Relaxed);
        } else {
            self.acl.store(true, Ordering::Relaxed);
        }
        if let Some(u) = st.live_users().into_iter().find(|u| u.cfg == cfg) {
            return Ok(u);
        }
        let idx = Index::build(&cfg, st.entries.values(), true, &self.path)?;
        let u = Arc::new(RefUser {
            cfg,
            index: ArcSwap::from_pointee(idx),
        });
        st.users.push(Arc::downgrade(&u));
        Ok(u)
    }

    /// A reference for inline values with one user whose keys are already
    /// compiled (so names are resolved once).
    pub(crate) fn inline(
        display: String,
        cfg: UserCfg,
        rows: Vec<(Vec<u8>, super::parse::Key)>,
    ) -> (Arc<PatRef>, Arc<RefUser>) {
        let r = PatRef::new(0, display, false, Vec::new());
        r.acl.store(true, Ordering::Relaxed);
        let mut idx = Index::new(&cfg, rows.len());
        let mut st = r.lock();
        for (k, key) in rows {
            let e = Arc::new(Entry::new(&k, None, 0));
            idx.insert(
                key,
                Item {
                    e: e.clone(),
                    out: super::parse::OutVal::Raw,
                },
            );
            st.insert(e);
        }
        let u = Arc::new(RefUser {
            cfg,
            index: ArcSwap::from_pointee(idx),
        });
        st.users.push(Arc::downgrade(&u));
        drop(st);
        (Arc::new(r), u)
    }

    /// Adds entries at the end, for every user, or none of them if one
    /// user cannot parse one of them. Returns their ids.
    pub fn add_many(&self, rows: &[(&str, Option<&str>)]) -> Result<Vec<u64>, String> {
        let mut st = self.lock();
        self.add_locked(&mut st, rows)
    }

    fn add_locked(
        &self,
        st: &mut RefState,
        rows: &[(&str, Option<&str>)],
    ) -> Result<Vec<u64>, String> {
        let users = st.live_users();
        let entries: Vec<Arc<Entry>> = rows
            .iter()
            .map(|(k, v)| Arc::new(Entry::new(k.as_bytes(), v.map(str::as_bytes), 0)))
            .collect();
        let mut compiled = Vec::with_capacity(users.len());
        for u in &users {
            let items = entries
                .iter()
                .map(|e| compile_entry(&u.cfg, e, false, &self.path))
                .collect::<Result<Vec<_>, _>>()?;
            compiled.push(items);
        }
        for (u, items) in users.iter().zip(compiled) {
            let mut idx = Index::clone(&u.index.load());
            for (e, (k, out)) in entries.iter().zip(items) {
                idx.insert(k, Item { e: e.clone(), out });
            }
            u.index.store(Arc::new(idx));
        }
        let ids = entries.iter().map(|e| e.id).collect();
        for e in entries {
            st.insert(e);
        }
        self.bump();
        Ok(ids)
    }

    /// `add map`/`add acl`: adds one entry at the end.
    pub fn add(&self, key: &str, value: Option<&str>) -> Result<u64, String> {
        Ok(self.add_many(&[(key, value)])?[0])
    }

    /// `add map @<ver>`: adds an entry to a prepared version (to the
    /// current one when `ver` is the current version).
    pub fn add_versioned(&self, ver: u32, key: &str, value: Option<&str>) -> Result<u64, String> {
        let mut st = self.lock();
        if ver == st.curr_ver {
            return Ok(self.add_locked(&mut st, &[(key, value)])?[0]);
        }
        if ver < st.curr_ver {
            return Err(format!(
                "version {ver} is older than the current version {}",
                st.curr_ver
            ));
        }
        let e = Arc::new(Entry::new(key.as_bytes(), value.map(str::as_bytes), 0));
        for u in st.live_users() {
            compile_entry(&u.cfg, &e, false, &self.path)?;
        }
        st.next_ver = st.next_ver.max(ver);
        let id = e.id;
        st.pending.entry(ver).or_default().push(e);
        Ok(id)
    }

    /// `set map <ref> <key>|#<id> <value>`: replaces the value of every
    /// entry with that key (or of the one entry). Returns how many changed.
    pub fn set(&self, target: &str, value: &str) -> Result<usize, String> {
        let mut st = self.lock();
        let ids = st.targets(target);
        self.set_ids(&mut st, &ids, value)
    }

    fn set_ids(&self, st: &mut RefState, ids: &[u64], value: &str) -> Result<usize, String> {
        if ids.is_empty() {
            return Err("entry not found".into());
        }
        let users = st.live_users();
        let v = value.as_bytes();
        let mut outs = Vec::with_capacity(users.len());
        for u in &users {
            outs.push(compile_out(u.cfg.out, Some(v))?);
        }
        let new: Vec<Arc<Entry>> = ids
            .iter()
            .filter_map(|id| st.entries.get(id))
            .map(|old| {
                Arc::new(Entry {
                    id: old.id,
                    key: old.key.clone(),
                    value: Some(v.into()),
                    line: old.line,
                })
            })
            .collect();
        for (u, out) in users.iter().zip(outs) {
            let mut idx = Index::clone(&u.index.load());
            for e in &new {
                let loc = locate_key(&u.cfg, &e.key);
                idx.replace(loc.as_ref(), Item { e: e.clone(), out });
            }
            u.index.store(Arc::new(idx));
        }
        let n = new.len();
        for e in new {
            st.entries.insert(e.id, e);
        }
        self.bump();
        Ok(n)
    }

    /// `del map <ref> <key>|#<id>`: deletes every entry with that key (or
    /// the one entry). Returns how many were deleted.
    pub fn del(&self, target: &str) -> Result<usize, String> {
        let mut st = self.lock();
        let ids = st.targets(target);
        self.del_ids(&mut st, &ids)
    }

    fn del_ids(&self, st: &mut RefState, ids: &[u64]) -> Result<usize, String> {
        if ids.is_empty() {
            return Err("entry not found".into());
        }
        let keys: Vec<Arc<[u8]>> = ids
            .iter()
            .filter_map(|id| st.entries.get(id))
            .map(|e| e.key.clone())
            .collect();
        for u in st.live_users() {
            let mut idx = Index::clone(&u.index.load());
            for (&id, key) in ids.iter().zip(&keys) {
                let loc = locate_key(&u.cfg, key);
                idx.remove(loc.as_ref(), id);
            }
            u.index.store(Arc::new(idx));
        }
        for &id in ids {
            st.remove(id);
        }
        self.bump();
        Ok(ids.len())
    }

    /// Replaces all current entries (a commit, a restore): every user's
    /// index is rebuilt first, and nothing changes if one fails.
    fn swap_entries(
        &self,
        st: &mut RefState,
        entries: Vec<Arc<Entry>>,
        resolve: bool,
    ) -> Result<(), String> {
        let users = st.live_users();
        let mut built = Vec::with_capacity(users.len());
        for u in &users {
            built.push(Index::build(&u.cfg, entries.iter(), resolve, &self.path)?);
        }
        for (u, idx) in users.iter().zip(built) {
            u.index.store(Arc::new(idx));
        }
        st.set_entries(entries);
        self.bump();
        Ok(())
    }

    /// `clear map <ref>`: deletes every entry of the current version.
    pub fn clear(&self) {
        let mut st = self.lock();
        let _ = self.swap_entries(&mut st, Vec::new(), false);
    }

    /// `clear map @<ver> <ref>`: deletes the entries of version `ver`.
    pub fn clear_version(&self, ver: u32) {
        let mut st = self.lock();
        if ver == st.curr_ver {
            let _ = self.swap_entries(&mut st, Vec::new(), false);
        } else if let Some(p) = st.pending.get_mut(&ver) {
            p.clear();
        }
    }

    /// `prepare map <ref>`: allocates a new, empty version and returns it.
    pub fn prepare(&self) -> u32 {
        let mut st = self.lock();
        let ver = st.next_ver.max(st.curr_ver) + 1;
        st.next_ver = ver;
        st.pending.insert(ver, Vec::new());
        ver
    }

    /// `commit map @<ver> <ref>`: makes version `ver` the current one in
    /// one step, dropping the previous entries and older versions.
    pub fn commit(&self, ver: u32) -> Result<(), String> {
        let mut st = self.lock();
        if ver == st.curr_ver {
            return Ok(());
        }
        if ver < st.curr_ver {
            return Err(format!(
                "version {ver} is older than the current version {}",
                st.curr_ver
            ));
        }
        let Some(entries) = st.pending.get(&ver).cloned() else {
            return Err(format!("version {ver} was not prepared"));
        };
        self.swap_entries(&mut st, entries, false)?;
        st.pending = st.pending.split_off(&(ver + 1));
        st.curr_ver = ver;
        Ok(())
    }

    /// Replaces every entry (a restore after a reload).
    pub fn replace_all(&self, rows: &[(String, Option<String>)]) -> Result<(), String> {
        let entries = rows
            .iter()
            .map(|(k, v)| Arc::new(Entry::new(k.as_bytes(), v.as_deref().map(str::as_bytes), 0)))
            .collect();
        let mut st = self.lock();
        self.swap_entries(&mut st, entries, true)
    }

    /// `get map <ref> <sample>`: the entry the first user's lookup returns
    /// for `sample` (an exact match when nothing uses the reference).
    pub fn get(&self, sample: &str) -> Option<Arc<Entry>> {
        let mut st = self.lock();
        let Some(u) = st.live_users().into_iter().next() else {
            let id = *st.by_key.get(sample.as_bytes())?.first()?;
            return st.entries.get(&id).cloned();
        };
        drop(st);
        let s = Sample::str(sample.as_bytes()).cast(u.cfg.method.in_type())?;
        let raw = input_of(&s)?;
        let low;
        let inp = match raw {
            Input::Bytes(b) if u.cfg.lower() => {
                low = lowered(b);
                Input::Bytes(&low)
            }
            other => other,
        };
        let idx = u.index.load();
        idx.lookup(&inp).map(|(it, _)| it.e.clone())
    }

    /// The `set-map` action: sets the value of the entries with that key,
    /// or adds one. False when a user cannot parse the value.
    pub fn set_or_add(&self, key: &str, value: &str) -> bool {
        let mut st = self.lock();
        match st.by_key.get(key.as_bytes()).cloned() {
            Some(ids) => {
                let same = ids.iter().all(|id| {
                    st.entries.get(id).and_then(|e| e.value.as_deref()) == Some(value.as_bytes())
                });
                same || self.set_ids(&mut st, &ids, value).is_ok()
            }
            None => self.add_locked(&mut st, &[(key, Some(value))]).is_ok(),
        }
    }

    /// The `add-acl` action: adds the key unless it is already there.
    pub fn add_unique(&self, key: &str) -> bool {
        let mut st = self.lock();
        st.by_key.contains_key(key.as_bytes()) || self.add_locked(&mut st, &[(key, None)]).is_ok()
    }

    /// The `del-map` and `del-acl` actions: deletes the entries with that
    /// key. False when there was none.
    pub fn delete_key(&self, key: &str) -> bool {
        let mut st = self.lock();
        let ids = st.by_key.get(key.as_bytes()).cloned().unwrap_or_default();
        self.del_ids(&mut st, &ids).is_ok()
    }

    /// Checks that `key` (and `value`) would be accepted by every user,
    /// without adding it.
    pub fn validate(&self, key: &str, value: Option<&str>) -> Result<(), String> {
        let mut st = self.lock();
        for u in st.live_users() {
            compile_key(&u.cfg, key.as_bytes(), false)?;
            compile_out(u.cfg.out, value.map(str::as_bytes))?;
        }
        Ok(())
    }

    /// The match method of the first user (what `get map` uses).
    pub fn method(&self) -> Option<Method> {
        self.lock().live_users().first().map(|u| u.cfg.method)
    }
}

/// What one user of a reference (one match method and set of flags)
/// returns for a sample: a line of `get map` / `get acl`.
#[derive(Debug, Clone)]
pub struct UserLookup {
    /// The user's match method.
    pub method: Method,
    /// `-i` is in force.
    pub icase: bool,
    /// HAProxy indexes the winning entry in a tree (`str`/`beg` without
    /// `-i`, `ip` networks), not a list.
    pub tree: bool,
    /// The winning entry, if any.
    pub entry: Option<Arc<Entry>>,
    /// For a map user, the type of the value it returns (`str`, `sint`,
    /// `ipv4`, `ipv6`).
    pub out_type: Option<&'static str>,
}

impl PatRef {
    /// `get map` / `get acl`: what each user (in the order they were
    /// attached) returns for `sample`, given as text.
    pub fn lookup_users(&self, sample: &str) -> Vec<UserLookup> {
        let users = self.lock().live_users();
        users
            .iter()
            .map(|u| {
                let mut out = UserLookup {
                    method: u.cfg.method,
                    icase: u.cfg.icase,
                    tree: false,
                    entry: None,
                    out_type: None,
                };
                let Some(s) = Sample::str(sample.as_bytes()).cast(u.cfg.method.in_type()) else {
                    return out;
                };
                let Some(raw) = input_of(&s) else {
                    return out;
                };
                let low;
                let inp = match raw {
                    Input::Bytes(b) if u.cfg.lower() => {
                        low = lowered(b);
                        Input::Bytes(&low)
                    }
                    other => other,
                };
                let idx = u.index.load();
                if let Some((it, key)) = idx.lookup(&inp) {
                    out.tree = match u.cfg.method {
                        Method::Ip => key.is_none(),
                        Method::Str | Method::Beg => !u.cfg.icase,
                        _ => false,
                    };
                    out.entry = Some(it.e.clone());
                    out.out_type = u.cfg.out.map(|k| match (k, it.out) {
                        (super::OutKind::Int, _) => "sint",
                        (super::OutKind::Ip, super::parse::OutVal::Ip(a)) if a.is_ipv6() => "ipv6",
                        (super::OutKind::Ip, _) => "ipv4",
                        (super::OutKind::Str, _) => "str",
                    });
                }
                out
            })
            .collect()
    }

    /// Entries of every version, current and prepared (`entry_cnt`).
    pub fn entry_count(&self) -> usize {
        let st = self.lock();
        st.entries.len() + st.pending.values().map(Vec::len).sum::<usize>()
    }
}

/// What `show map` / `show acl` list about one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefInfo {
    /// The numeric id (`#<id>`).
    pub id: u32,
    /// The file path.
    pub path: String,
    /// Entries have values (map file, or `-M`).
    pub two_column: bool,
    /// Used by an ACL (listed by `show acl`).
    pub acl: bool,
    /// Used by a map converter (listed by `show map`).
    pub map: bool,
    /// Entries in the current version.
    pub count: usize,
    /// The current version.
    pub curr_ver: u32,
    /// The last prepared version.
    pub next_ver: u32,
}

/// The shared pattern references (`-f` files and map files) of one
/// configuration, identified by path. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    inner: Arc<Mutex<Vec<Arc<PatRef>>>>,
}

/// The current entries of every reference: path, then `(key, value)`s.
pub type Snapshot = Vec<(String, Rows)>;

/// `(key, value)` rows of one reference.
pub type Rows = Vec<(String, Option<String>)>;

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<PatRef>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The reference for file `path`, read on first use. ACL files hold one
    /// pattern per line (lines starting with `#` and empty lines skipped,
    /// leading blanks stripped); map files (`is_map`) hold
    /// `key<blanks>value`, the value running to the end of the line with
    /// trailing blanks trimmed. A file is one or the other.
    pub fn load_file(&self, path: &str, is_map: bool) -> Result<Arc<PatRef>, String> {
        let mut refs = self.lock();
        if let Some(r) = refs.iter().find(|r| r.path == path) {
            return match (r.two_col, is_map) {
                (false, true) => Err(format!(
                    "The file \"{path}\" is already used as one column file and cannot be used by as two column file."
                )),
                (true, false) => Err(format!(
                    "The file \"{path}\" is already used as two column file and cannot be used by as one column file."
                )),
                _ => Ok(r.clone()),
            };
        }
        let rows = read_rows(path, is_map)?;
        let id = refs.iter().map(|r| r.id + 1).max().unwrap_or(0);
        let r = Arc::new(PatRef::new(id, path.to_string(), is_map, rows));
        refs.push(r.clone());
        Ok(r)
    }

    /// The reference a CLI argument names: `#<id>`, else a file path.
    pub fn find(&self, name: &str) -> Option<Arc<PatRef>> {
        let refs = self.lock();
        if let Some(id) = name.strip_prefix('#') {
            let id: u32 = id.parse().ok()?;
            return refs.iter().find(|r| r.id == id).cloned();
        }
        refs.iter().find(|r| r.path == name).cloned()
    }

    fn get_ref(&self, name: &str) -> Result<Arc<PatRef>, String> {
        self.find(name).ok_or_else(|| {
            format!("Unknown pattern reference '{name}'. Please use #<id> or <file>.")
        })
    }

    /// Every reference, in load order.
    pub fn refs(&self) -> Vec<Arc<PatRef>> {
        self.lock().clone()
    }

    /// `show map` / `show acl` without argument.
    pub fn list(&self) -> Vec<RefInfo> {
        self.refs()
            .iter()
            .map(|r| {
                let (curr_ver, next_ver) = r.versions();
                RefInfo {
                    id: r.id,
                    path: r.path.clone(),
                    two_column: r.two_col,
                    acl: r.used_by_acl(),
                    map: r.used_by_map(),
                    count: r.len(),
                    curr_ver,
                    next_ver,
                }
            })
            .collect()
    }

    /// `show map <ref>`: `(id, key, value)` of the current entries.
    pub fn entries(&self, name: &str) -> Result<Vec<(u64, String, Option<String>)>, String> {
        Ok(self
            .get_ref(name)?
            .entries()
            .iter()
            .map(|e| {
                (
                    e.id,
                    e.key_str().into_owned(),
                    e.value_str().map(Cow::into_owned),
                )
            })
            .collect())
    }

    /// `add map <ref> <key> <value>` / `add acl <ref> <pattern>`.
    pub fn add(&self, name: &str, key: &str, value: Option<&str>) -> Result<u64, String> {
        self.get_ref(name)?.add(key, value)
    }

    /// `set map <ref> <key>|#<id> <value>`.
    pub fn set(&self, name: &str, target: &str, value: &str) -> Result<usize, String> {
        self.get_ref(name)?.set(target, value)
    }

    /// `del map <ref> <key>|#<id>`.
    pub fn del(&self, name: &str, target: &str) -> Result<usize, String> {
        self.get_ref(name)?.del(target)
    }

    /// `clear map [@<ver>] <ref>`.
    pub fn clear(&self, name: &str, version: Option<u32>) -> Result<(), String> {
        let r = self.get_ref(name)?;
        match version {
            Some(v) => r.clear_version(v),
            None => r.clear(),
        }
        Ok(())
    }

    /// `prepare map <ref>`: the new version.
    pub fn prepare(&self, name: &str) -> Result<u32, String> {
        Ok(self.get_ref(name)?.prepare())
    }

    /// `add map @<ver> <ref> <key> <value>`.
    pub fn add_versioned(
        &self,
        name: &str,
        version: u32,
        key: &str,
        value: Option<&str>,
    ) -> Result<u64, String> {
        self.get_ref(name)?.add_versioned(version, key, value)
    }

    /// `commit map @<ver> <ref>`.
    pub fn commit(&self, name: &str, version: u32) -> Result<(), String> {
        self.get_ref(name)?.commit(version)
    }

    /// `get map <ref> <sample>`: the winning `(key, value)`, if any.
    pub fn get(
        &self,
        name: &str,
        sample: &str,
    ) -> Result<Option<(String, Option<String>)>, String> {
        Ok(self
            .get_ref(name)?
            .get(sample)
            .map(|e| (e.key_str().into_owned(), e.value_str().map(Cow::into_owned))))
    }

    /// The current entries of every file reference, to carry run-time
    /// changes over a reload ([`Registry::restore`]).
    pub fn snapshot(&self) -> Snapshot {
        self.refs()
            .iter()
            .map(|r| {
                let rows = r
                    .entries()
                    .iter()
                    .map(|e| (e.key_str().into_owned(), e.value_str().map(Cow::into_owned)))
                    .collect();
                (r.path.clone(), rows)
            })
            .collect()
    }

    /// Replaces the entries of the references named in `snap` (others are
    /// left alone, unknown paths ignored). Returns one message per
    /// reference that could not be restored (it keeps its file's entries).
    pub fn restore(&self, snap: &[(String, Rows)]) -> Vec<String> {
        let mut errs = Vec::new();
        for (path, rows) in snap {
            let found = self.lock().iter().find(|r| &r.path == path).cloned();
            if let Some(r) = found {
                if let Err(e) = r.replace_all(rows) {
                    errs.push(format!("cannot restore '{path}': {e}"));
                }
            }
        }
        errs
    }
}

/// Reads a pattern or map file as HAProxy does.
fn read_rows(path: &str, two_col: bool) -> Result<Vec<Row>, String> {
    let kind = if two_col { "map" } else { "pattern" };
    let data =
        std::fs::read(path).map_err(|e| format!("failed to open {kind} file <{path}>: {e}"))?;
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let mut rows = Vec::new();
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        if line.first() == Some(&b'#') {
            continue;
        }
        let mut l = &line[line.iter().position(|b| !blank(b)).unwrap_or(line.len())..];
        if let Some(p) = l.iter().position(|&b| b == b'\r') {
            l = &l[..p];
        }
        if l.is_empty() {
            continue;
        }
        let line_no = n as u32 + 1;
        if !two_col {
            rows.push((l.to_vec(), None, line_no));
            continue;
        }
        let kend = l.iter().position(blank).unwrap_or(l.len());
        let rest = &l[kend..];
        let v = &rest[rest.iter().position(|b| !blank(b)).unwrap_or(rest.len())..];
        let v = &v[..v.iter().rposition(|b| !blank(b)).map_or(0, |p| p + 1)];
        rows.push((l[..kend].to_vec(), Some(v.to_vec()), line_no));
    }
    Ok(rows)
}
