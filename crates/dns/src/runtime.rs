//! The resolver runtime of one `resolvers` section.
//!
//! [`Resolvers::subscribe`] registers a name (a server's FQDN, or a
//! server-template's SRV label) and returns a `tokio::sync::watch` receiver
//! of its [`NameState`]. [`Resolvers::run`] is the section's task: it
//! resolves every registered name every `timeout resolve` and publishes each
//! result, with the `hold` rules applied. It only needs a tokio runtime
//! (current-thread is fine): spawn it with `tokio::spawn` or run it on any
//! runtime. Names registered later are picked up at once.
//!
//! One resolution follows HAProxy 2.6: the query is sent to all nameservers
//! at once and the first valid answer wins. When every nameserver that
//! answered gave an error, the other address type is asked at once (AAAA
//! after A, or A after AAAA; not for SRV). Without a valid answer, the
//! preferred type is asked again after `timeout retry`, up to
//! `resolve_retries` times; then the resolution fails with the last error,
//! or `timeout` when no nameserver answered the last query.
//!
//! For an SRV name, the targets without an address in the additional
//! section are resolved (A/AAAA, with the same procedure) before the state
//! is published, so that template slots get their addresses at once.

use crate::config::ResolversSection;
use crate::counters::{write_section, NameserverCounters};
use crate::events::{select_address, AddrPolicy};
use crate::hold::{NameState, Resolution, Status};
use crate::server::Family;
use crate::transport::{exchange, Exchange, NsOutcome};
use crate::wire::{build_query, normalize_name, Answer, QueryType, Record, ResponseError};
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio::time::{sleep, sleep_until, timeout_at, Instant};

/// What a registered name is resolved as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// An address name: AAAA or A first, per the family.
    Addr(Family),
    /// An SRV label; targets are resolved with this family first.
    Srv(Family),
}

impl NameKind {
    /// The kind a server name needs: SRV when it starts with `_`.
    pub fn for_name(name: &str, prefer: Family) -> NameKind {
        if crate::template::is_srv_name(name) {
            NameKind::Srv(prefer)
        } else {
            NameKind::Addr(prefer)
        }
    }
}

fn qtype_of(family: Family) -> QueryType {
    match family {
        Family::Ipv4 => QueryType::A,
        Family::Ipv6 => QueryType::Aaaa,
    }
}

type Key = (String, NameKind);

/// The most `do-resolve` answers kept (names come from requests).
pub const MAX_CACHED_NAMES: usize = 4096;

/// `do-resolve` answers: when they came and their addresses.
type Cache = HashMap<(String, Family), (std::time::Instant, Vec<IpAddr>)>;

struct Entry {
    tx: watch::Sender<NameState>,
    resolution: Resolution,
    wake: Arc<Notify>,
}

struct Inner {
    section: ResolversSection,
    counters: Vec<NameserverCounters>,
    entries: Mutex<HashMap<Key, Entry>>,
    cache: Mutex<Cache>,
    notify: Notify,
    next_id: AtomicU64,
}

/// A handle on one `resolvers` section's runtime. Cloning is cheap; all
/// clones share the counters, the names and the cache.
#[derive(Clone)]
pub struct Resolvers {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Resolvers {
    /// The runtime of `section` (checked with
    /// [`ResolversSection::validate`]). Nothing runs until [`Self::run`].
    pub fn new(section: ResolversSection) -> Result<Self, String> {
        section.validate()?;
        let counters = section
            .nameservers
            .iter()
            .map(|_| NameserverCounters::default())
            .collect();
        Ok(Resolvers {
            inner: Arc::new(Inner {
                section,
                counters,
                entries: Mutex::new(HashMap::new()),
                cache: Mutex::new(HashMap::new()),
                notify: Notify::new(),
                next_id: AtomicU64::new(0),
            }),
        })
    }

    /// The section's name.
    pub fn name(&self) -> &str {
        &self.inner.section.name
    }

    /// The section's configuration.
    pub fn section(&self) -> &ResolversSection {
        &self.inner.section
    }

    /// Registers `name` (once per name and kind; later calls share it) and
    /// returns a receiver of its state. The state starts as
    /// [`Status::None`]; each resolution publishes a new one. The name is
    /// resolved while at least one receiver lives.
    pub fn subscribe(
        &self,
        name: &str,
        kind: NameKind,
    ) -> Result<watch::Receiver<NameState>, String> {
        let name = normalize_name(name);
        build_query(0, &name, QueryType::A, 512)?;
        let mut entries = lock(&self.inner.entries);
        let key = (name, kind);
        if let Some(entry) = entries.get(&key) {
            if !entry.tx.is_closed() {
                return Ok(entry.tx.subscribe());
            }
        }
        let now = std::time::Instant::now();
        let resolution = Resolution::new(now);
        let (tx, rx) = watch::channel(resolution.state().clone());
        let wake = Arc::new(Notify::new());
        entries.insert(
            key,
            Entry {
                tx,
                resolution,
                wake,
            },
        );
        drop(entries);
        self.inner.notify.notify_one();
        Ok(rx)
    }

    /// Resolves a registered name again now instead of at its next
    /// `timeout resolve`, as HAProxy 2.6 does when a server's health check
    /// cannot connect (the server may have moved): only when the last
    /// answer is not a valid one, or is older than `hold valid`; a valid
    /// answer younger than that is used as it is. Returns whether a
    /// resolution starts (false too when the name is not registered).
    pub fn trigger(&self, name: &str, kind: NameKind) -> bool {
        let entries = lock(&self.inner.entries);
        let Some(entry) = entries.get(&(normalize_name(name), kind)) else {
            return false;
        };
        let state = entry.resolution.state();
        let fresh = state.status == Status::Valid
            && state.last_valid.elapsed() < self.inner.section.hold.valid;
        if !fresh {
            entry.wake.notify_one();
        }
        !fresh
    }

    /// The names being resolved (registered and still subscribed to),
    /// sorted.
    pub fn names(&self) -> Vec<(String, NameKind)> {
        let entries = lock(&self.inner.entries);
        let mut names: Vec<(String, NameKind)> = entries
            .iter()
            .filter(|(_, e)| !e.tx.is_closed())
            .map(|(k, _)| k.clone())
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        names
    }

    /// The section's task: resolves the registered names every
    /// `timeout resolve` until dropped. Spawn it once per section.
    pub async fn run(self) {
        let mut running: HashMap<Key, tokio::task::Id> = HashMap::new();
        let mut tasks = JoinSet::new();
        loop {
            let keys: Vec<Key> = lock(&self.inner.entries).keys().cloned().collect();
            for key in keys {
                if let std::collections::hash_map::Entry::Vacant(slot) = running.entry(key) {
                    let handle = tasks.spawn(name_loop(self.inner.clone(), slot.key().clone()));
                    slot.insert(handle.id());
                }
            }
            tokio::select! {
                _ = self.inner.notify.notified() => {}
                Some(done) = tasks.join_next_with_id() => {
                    let id = match done {
                        Ok((id, _)) => id,
                        Err(e) => e.id(),
                    };
                    running.retain(|_, task| *task != id);
                }
            }
        }
    }

    /// Resolves `name` once now (the `do-resolve` action): the address of
    /// `family` first (the other family when none), with the usual
    /// retries. A valid answer is reused for `hold valid`. Failures are
    /// not cached.
    pub async fn resolve_once(&self, name: &str, family: Family) -> Result<IpAddr, Status> {
        let name = normalize_name(name);
        if build_query(0, &name, qtype_of(family), 512).is_err() {
            return Err(Status::Other);
        }
        let hold = self.inner.section.hold.valid;
        let key = (name, family);
        let cached = lock(&self.inner.cache).get(&key).cloned();
        let ips = match cached {
            Some((at, ips)) if at.elapsed() < hold => ips,
            _ => {
                let (answer, _) = resolve_query(&self.inner, &key.0, qtype_of(family)).await?;
                let ips: Vec<IpAddr> = answer.records.iter().filter_map(Record::ip).collect();
                if !hold.is_zero() {
                    let mut cache = lock(&self.inner.cache);
                    cache.retain(|_, (at, _)| at.elapsed() < hold);
                    if cache.len() >= MAX_CACHED_NAMES {
                        let oldest = cache
                            .iter()
                            .min_by_key(|(_, (at, _))| *at)
                            .map(|(k, _)| k.clone());
                        if let Some(oldest) = oldest {
                            cache.remove(&oldest);
                        }
                    }
                    cache.insert(key, (std::time::Instant::now(), ips.clone()));
                }
                ips
            }
        };
        let policy = AddrPolicy {
            prefer: family,
            ..AddrPolicy::default()
        };
        select_address(&ips, &policy, None, &[]).ok_or(Status::Other)
    }

    /// The counters of each nameserver, in configuration order: name and
    /// values in [`crate::counters::COUNTER_NAMES`] order.
    pub fn counters(&self) -> Vec<(String, [u64; 15])> {
        self.inner
            .section
            .nameservers
            .iter()
            .zip(&self.inner.counters)
            .map(|(ns, c)| (ns.name.clone(), c.snapshot()))
            .collect()
    }

    /// One counter of one nameserver (0 when unknown).
    pub fn counter(&self, nameserver: &str, counter: &str) -> u64 {
        let ns = self
            .inner
            .section
            .nameservers
            .iter()
            .position(|ns| ns.name == nameserver);
        ns.and_then(|i| self.inner.counters.get(i))
            .map_or(0, |c| c.get(counter))
    }
}

/// `show resolvers [NAME]`: the counters of every section, or of the one
/// named. An unknown name is an error ("Can't find that resolvers
/// section").
pub fn show_resolvers(sections: &[Resolvers], filter: Option<&str>) -> Result<String, String> {
    if sections.is_empty() {
        return Ok("No resolvers found\n".to_string());
    }
    if let Some(name) = filter {
        if !sections.iter().any(|s| s.name() == name) {
            return Err("Can't find that resolvers section\n".to_string());
        }
    }
    let mut out = String::new();
    for s in sections
        .iter()
        .filter(|s| filter.is_none_or(|f| f == s.name()))
    {
        write_section(&mut out, s.name(), &s.counters());
    }
    Ok(out)
}

/// Resolves one name forever, publishing each result; ends when every
/// receiver is gone.
async fn name_loop(inner: Arc<Inner>, key: Key) -> Key {
    loop {
        let closed = lock(&inner.entries)
            .get(&key)
            .is_none_or(|e| e.tx.is_closed());
        if closed {
            let mut entries = lock(&inner.entries);
            if entries.get(&key).is_some_and(|e| e.tx.is_closed()) {
                entries.remove(&key);
            }
            return key;
        }
        let result = resolve_key(&inner, &key).await;
        let now = std::time::Instant::now();
        if let Some(entry) = lock(&inner.entries).get_mut(&key) {
            match result {
                Ok((answer, ns)) => {
                    let by = inner
                        .section
                        .nameservers
                        .get(ns)
                        .map_or("", |n| n.name.as_str());
                    let by = format!("{}/{}", inner.section.name, by);
                    if entry
                        .resolution
                        .on_valid(&answer, &by, now, &inner.section.hold)
                    {
                        if let Some(c) = inner.counters.get(ns) {
                            c.bump("update");
                        }
                    }
                }
                Err(status) => entry.resolution.on_error(status, now, &inner.section.hold),
            }
            entry.tx.send_replace(entry.resolution.state().clone());
        }
        let wake = lock(&inner.entries).get(&key).map(|e| e.wake.clone());
        match wake {
            Some(wake) => {
                tokio::select! {
                    _ = sleep(inner.section.timeout_resolve) => {}
                    _ = wake.notified() => {}
                }
            }
            None => sleep(inner.section.timeout_resolve).await,
        }
    }
}

async fn resolve_key(inner: &Arc<Inner>, key: &Key) -> Result<(Answer, usize), Status> {
    match key.1 {
        NameKind::Addr(family) => resolve_query(inner, &key.0, qtype_of(family)).await,
        NameKind::Srv(family) => {
            let (mut answer, ns) = resolve_query(inner, &key.0, QueryType::Srv).await?;
            let targets = srv_target_addrs(inner, &answer, family).await;
            for rec in &mut answer.records {
                if let Record::Srv(srv) = rec {
                    if srv.addr.is_none() {
                        srv.addr = targets.get(&srv.target).copied().flatten();
                    }
                }
            }
            Ok((answer, ns))
        }
    }
}

/// Resolves, all at once, the SRV targets that came without an address.
async fn srv_target_addrs(
    inner: &Arc<Inner>,
    answer: &Answer,
    family: Family,
) -> HashMap<String, Option<IpAddr>> {
    let targets: HashSet<String> = answer
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Srv(srv) if srv.addr.is_none() => Some(srv.target.clone()),
            _ => None,
        })
        .collect();
    let mut set = JoinSet::new();
    for target in targets {
        let inner = inner.clone();
        set.spawn(async move {
            let policy = AddrPolicy {
                prefer: family,
                ..AddrPolicy::default()
            };
            let ip = match resolve_query(&inner, &target, qtype_of(family)).await {
                Ok((a, _)) => {
                    let ips: Vec<IpAddr> = a.records.iter().filter_map(Record::ip).collect();
                    select_address(&ips, &policy, None, &[])
                }
                Err(_) => None,
            };
            (target, ip)
        });
    }
    let mut out = HashMap::new();
    while let Some(joined) = set.join_next().await {
        if let Ok((target, ip)) = joined {
            out.insert(target, ip);
        }
    }
    out
}

/// The outcome of one query sent to all nameservers.
enum Attempt {
    Valid(Answer, usize),
    Errors(ResponseError),
    NoResponse,
}

/// HAProxy's resolution procedure for one name and preferred type.
async fn resolve_query(
    inner: &Arc<Inner>,
    name: &str,
    preferred: QueryType,
) -> Result<(Answer, usize), Status> {
    let mut sends_left = inner.section.resolve_retries.max(1);
    let mut qtype = preferred;
    loop {
        if qtype == preferred {
            sends_left = sends_left.saturating_sub(1);
        }
        let deadline = Instant::now() + inner.section.timeout_retry;
        let status = match attempt(inner, name, qtype, deadline).await {
            Attempt::Valid(answer, ns) => return Ok((answer, ns)),
            Attempt::Errors(err) => {
                let fallback = match qtype {
                    QueryType::A if preferred == QueryType::A => Some(QueryType::Aaaa),
                    QueryType::Aaaa if preferred == QueryType::Aaaa => Some(QueryType::A),
                    _ => None,
                };
                if let Some(other) = fallback {
                    qtype = other;
                    continue;
                }
                Status::from_error(err)
            }
            Attempt::NoResponse => Status::Timeout,
        };
        if sends_left == 0 {
            return Err(status);
        }
        qtype = preferred;
        sleep_until(deadline).await;
    }
}

fn random_id(inner: &Inner) -> u16 {
    let n = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let h = std::collections::hash_map::RandomState::new().hash_one(n);
    (h & 0xffff) as u16
}

async fn attempt(inner: &Arc<Inner>, name: &str, qtype: QueryType, deadline: Instant) -> Attempt {
    let id = random_id(inner);
    let Ok(query) = build_query(id, name, qtype, inner.section.accepted_payload_size) else {
        return Attempt::Errors(ResponseError::Invalid);
    };
    let ex = Arc::new(Exchange {
        query,
        id,
        name: name.to_string(),
        qtype,
        payload_size: inner.section.accepted_payload_size,
    });
    let mut set = JoinSet::new();
    let mut pending: HashSet<usize> = HashSet::new();
    for (i, ns) in inner.section.nameservers.iter().enumerate() {
        let (ns, ex) = (ns.clone(), ex.clone());
        let inner = inner.clone();
        pending.insert(i);
        set.spawn(async move {
            let outcome = match inner.counters.get(i) {
                Some(counters) => exchange(&ns, counters, &ex, deadline).await,
                None => NsOutcome::SendFailed,
            };
            (i, outcome)
        });
    }
    let mut last_error = None;
    while let Ok(Some(joined)) = timeout_at(deadline, set.join_next()).await {
        let Ok((i, outcome)) = joined else { continue };
        match outcome {
            NsOutcome::Valid(answer) => return Attempt::Valid(answer, i),
            NsOutcome::Error(err) => {
                pending.remove(&i);
                last_error = Some(err);
            }
            NsOutcome::SendFailed => {
                pending.remove(&i);
            }
            NsOutcome::NoResponse => {}
        }
    }
    for i in pending {
        if let Some(c) = inner.counters.get(i) {
            c.bump("timeout");
        }
    }
    match last_error {
        Some(err) => Attempt::Errors(err),
        None => Attempt::NoResponse,
    }
}
