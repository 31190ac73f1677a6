//! [`Lb`]: the configured algorithm, the balancer's picture of the servers
//! and the read-only snapshot that picks use.
//!
//! Writers (`set_weight`, state changes) take the model mutex, recompute
//! the balanced group (actives, else backups) and rebuild what the
//! algorithm needs into a new [`Snap`], published with `arc-swap`; picks
//! only load the current snapshot (no lock) and move the calling thread's
//! own cursor; `leastconn` reads its per-server load atomics and its own
//! published group. No pick takes a lock or writes a shared cache line.

use crate::hash::{self, domain_part, fold_addr, uri_part};
use crate::leastconn::LeastConn;
use crate::local::Cursors;
use crate::static_rr::static_weight;
use crate::{chash, first, map, random, roundrobin};
use crate::{Needs, Pick, RequestKey, ServerSpec, ServerView};
use arc_swap::ArcSwap;
use fairlead_config::{Balance, HashFunction, HashMethod, HashType};
use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard};

/// Largest weight.
const MAX_WEIGHT: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Source,
    Uri {
        whole: bool,
        len: Option<usize>,
        depth: Option<usize>,
    },
    UrlParam,
    Hdr {
        domain_only: bool,
    },
    RdpCookie,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algo {
    RoundRobin,
    StaticRr,
    LeastConn,
    First,
    Random(u32),
    Hash {
        key: Key,
        consistent: bool,
        func: HashFunction,
        avalanche: bool,
    },
}

impl Algo {
    fn is_static(self) -> bool {
        matches!(
            self,
            Algo::StaticRr
                | Algo::Hash {
                    consistent: false,
                    ..
                }
        )
    }

    fn uses_schedule(self) -> bool {
        matches!(self, Algo::RoundRobin | Algo::StaticRr | Algo::Hash { .. })
    }

    fn uses_ring(self) -> bool {
        matches!(
            self,
            Algo::Random(_)
                | Algo::Hash {
                    consistent: true,
                    ..
                }
        )
    }

    /// The algorithm already tried every candidate when it found none.
    fn exhaustive(self) -> bool {
        matches!(self, Algo::LeastConn | Algo::First)
    }
}

/// The balancer's picture of the servers (writers only).
struct Model {
    up: Vec<bool>,
    eweight: Vec<u32>,
}

/// What picks read: derived from the model, never modified.
#[derive(Default)]
struct Snap {
    /// The model's up flags (to notice changes in the view).
    up: Vec<bool>,
    /// Weight of each server in the balanced group; 0 = not in it.
    weight: Vec<u32>,
    /// The balanced group sorted by (id, index).
    by_id: Vec<u32>,
    /// Smooth weighted schedule of the group (round robin, map-based
    /// table, round-robin fallback of the hashing algorithms).
    schedule: Vec<u32>,
    /// Consistent-hashing ring of the group.
    ring: Vec<u64>,
}

thread_local! {
    static TICK: Cell<usize> = const { Cell::new(0) };
}

/// A backend's load balancer: the configured algorithm over its servers.
///
/// `Send + Sync`; share it between worker threads with an `Arc`.
pub struct Lb {
    algo: Algo,
    needs: Needs,
    specs: Vec<ServerSpec>,
    /// Ids used to place ring points (the server ids, made unique).
    ring_ids: Vec<u32>,
    allbackups: bool,
    model: Mutex<Model>,
    snap: ArcSwap<Snap>,
    /// Each thread's position in the round-robin schedule (from
    /// [`crate::PER_THREAD_FROM`] worker threads on).
    cursors: Cursors,
    /// The process-wide position in the round-robin schedule (below
    /// [`crate::PER_THREAD_FROM`] threads): exact over the whole sequence,
    /// as HAProxy.
    shared_rr: std::sync::atomic::AtomicUsize,
    lc: Option<LeastConn>,
}

impl Lb {
    /// Builds the balancer for these settings and servers (index = server).
    /// All servers start up, with their configured weight as effective
    /// weight.
    pub fn new(
        balance: &Balance,
        hash_type: &HashType,
        allbackups: bool,
        servers: &[ServerSpec],
    ) -> Lb {
        let hashed = |key| Algo::Hash {
            key,
            consistent: hash_type.method == HashMethod::Consistent,
            func: hash_type.function,
            avalanche: hash_type.avalanche,
        };
        let mut needs = Needs::default();
        let algo = match balance {
            Balance::RoundRobin => Algo::RoundRobin,
            Balance::StaticRr => Algo::StaticRr,
            Balance::LeastConn => Algo::LeastConn,
            Balance::First => Algo::First,
            Balance::Random { draws } => Algo::Random((*draws).max(1)),
            Balance::Source => {
                needs.src = true;
                hashed(Key::Source)
            }
            Balance::Uri { whole, len, depth } => {
                needs.uri = true;
                hashed(Key::Uri {
                    whole: *whole,
                    len: *len,
                    depth: *depth,
                })
            }
            Balance::UrlParam { name } => {
                needs.url_param = Some(name.clone());
                hashed(Key::UrlParam)
            }
            Balance::Hdr {
                name,
                use_domain_only,
            } => {
                needs.header = Some(name.clone());
                needs.use_domain_only = *use_domain_only;
                hashed(Key::Hdr {
                    domain_only: *use_domain_only,
                })
            }
            Balance::RdpCookie { name } => {
                needs.rdp_cookie = Some(name.clone());
                hashed(Key::RdpCookie)
            }
        };
        let mut seen = std::collections::HashSet::new();
        let ring_ids = servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut id = s.id;
                while !seen.insert(id) {
                    // Duplicate id: move it somewhere stable but distinct.
                    id = id.wrapping_add(0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
                }
                id
            })
            .collect();
        let n = servers.len();
        let model = Model {
            up: vec![true; n],
            eweight: servers.iter().map(|s| s.weight.min(MAX_WEIGHT)).collect(),
        };
        let lb = Lb {
            algo,
            needs,
            specs: servers.to_vec(),
            ring_ids,
            allbackups,
            model: Mutex::new(model),
            snap: ArcSwap::from_pointee(Snap {
                weight: vec![0; n],
                ..Snap::default()
            }),
            cursors: Cursors::new(),
            shared_rr: std::sync::atomic::AtomicUsize::new(0),
            lc: (algo == Algo::LeastConn).then(|| LeastConn::new(n)),
        };
        {
            let m = lb.lock_model();
            lb.rebuild(&m);
        }
        lb
    }

    /// What the caller must put in each [`RequestKey`].
    pub fn needs(&self) -> &Needs {
        &self.needs
    }

    /// Picks a server for a request.
    pub fn pick(&self, key: &RequestKey, view: &dyn ServerView) -> Pick {
        self.choose(key, view, None)
    }

    /// Like [`Lb::pick`], but never returns `avoid` unless it is the only
    /// choice (redispatch after a failure on it).
    pub fn pick_avoiding(&self, key: &RequestKey, view: &dyn ServerView, avoid: usize) -> Pick {
        self.choose(key, view, Some(avoid))
    }

    /// The server's effective weight changed at run time (health, agent
    /// weight %, slowstart ramp, `set server weight`): 0..=256. Unchanged
    /// values cost one lock and a comparison; changes rebuild the
    /// structures (see the crate documentation for the costs). With a
    /// static algorithm only 0 and "not 0" matter.
    pub fn set_weight(&self, server: usize, eweight: u32) {
        let Some(spec) = self.specs.get(server) else {
            return;
        };
        let mut w = eweight.min(MAX_WEIGHT);
        if self.algo.is_static() {
            w = static_weight(spec.weight.min(MAX_WEIGHT), w);
        }
        let mut m = self.lock_model();
        if m.eweight[server] == w {
            return;
        }
        if m.eweight[server] == 0 && w > 0 {
            // Back from 0: the caller vouches for it being usable.
            m.up[server] = true;
        }
        m.eweight[server] = w;
        self.rebuild(&m);
    }

    /// The effective weight in force for `server` (after the static rule).
    pub fn weight(&self, server: usize) -> u32 {
        self.lock_model().eweight.get(server).copied().unwrap_or(0)
    }

    /// A request/connection was assigned to `server` (bookkeeping for
    /// `leastconn`; a no-op for the other algorithms, which read
    /// [`ServerView::load`]).
    pub fn taken(&self, server: usize) {
        if let Some(lc) = &self.lc {
            if server < self.specs.len() {
                lc.taken(server);
            }
        }
    }

    /// A request/connection was released from `server`.
    pub fn released(&self, server: usize) {
        if let Some(lc) = &self.lc {
            if server < self.specs.len() {
                lc.released(server);
            }
        }
    }

    /// Re-reads every server's up state from `view` now (O(n)); call it
    /// after a health transition to apply it at once. Without it, picks
    /// notice changes by themselves (see the crate documentation).
    pub fn refresh(&self, view: &dyn ServerView) {
        let mut m = self.lock_model();
        let mut changed = false;
        for (i, up) in m.up.iter_mut().enumerate() {
            let now = view.up(i);
            if *up != now {
                *up = now;
                changed = true;
            }
        }
        if changed {
            self.rebuild(&m);
        }
    }

    fn lock_model(&self) -> MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The balanced group's weights: usable actives, else usable backups
    /// (all with `allbackups`, otherwise the first by id).
    fn group(&self, m: &Model) -> Vec<u32> {
        let usable = |i: usize| m.up[i] && m.eweight[i] > 0;
        let n = self.specs.len();
        let mut weight = vec![0; n];
        let actives: Vec<usize> = (0..n)
            .filter(|&i| !self.specs[i].backup && usable(i))
            .collect();
        if !actives.is_empty() {
            for i in actives {
                weight[i] = m.eweight[i];
            }
            return weight;
        }
        let backups = (0..n).filter(|&i| self.specs[i].backup && usable(i));
        if self.allbackups {
            for i in backups {
                weight[i] = m.eweight[i];
            }
        } else if let Some(i) = backups.min_by_key(|&i| (self.specs[i].id, i)) {
            weight[i] = m.eweight[i];
        }
        weight
    }

    /// Publishes a new snapshot for model `m` (called with the model lock
    /// held, or before the model is shared).
    fn rebuild(&self, m: &Model) {
        let prev = self.snap.load_full();
        let weight = self.group(m);
        let mut by_id: Vec<u32> = (0..weight.len())
            .filter(|&i| weight[i] > 0)
            .map(|i| i as u32)
            .collect();
        by_id.sort_by_key(|&i| (self.specs[i as usize].id, i));
        let schedule = if self.algo.uses_schedule() {
            let pairs: Vec<(u32, u32)> = (0..weight.len())
                .filter(|&i| weight[i] > 0)
                .map(|i| (i as u32, weight[i]))
                .collect();
            roundrobin::smooth_schedule(&pairs)
        } else {
            Vec::new()
        };
        let ring = if self.algo.uses_ring() {
            chash::build(Some((&prev.ring, &prev.weight)), &weight, &self.ring_ids)
        } else {
            Vec::new()
        };
        if let Some(lc) = &self.lc {
            lc.rebuild(&weight);
        }
        self.snap.store(Arc::new(Snap {
            up: m.up.clone(),
            weight,
            by_id,
            schedule,
            ring,
        }));
    }

    /// The hash of the request's key, or `None` to fall back to round robin.
    fn key_hash(&self, key: &RequestKey) -> Option<u32> {
        let Algo::Hash {
            key: kind,
            func,
            avalanche,
            ..
        } = self.algo
        else {
            return None;
        };
        let h = |data: &[u8]| hash::hash(func, avalanche, data);
        match kind {
            Key::Source => key.src.map(|a| {
                let h = fold_addr(a);
                if avalanche {
                    hash::avalanche(h)
                } else {
                    h
                }
            }),
            Key::Uri { whole, len, depth } => key.uri.map(|u| h(uri_part(u, whole, len, depth))),
            Key::UrlParam => key.url_param.map(h),
            Key::RdpCookie => key.rdp_cookie.filter(|v| !v.is_empty()).map(h),
            Key::Hdr { domain_only } => key.header.filter(|v| !v.is_empty()).map(|v| {
                if domain_only {
                    h(domain_part(v))
                } else {
                    h(v)
                }
            }),
        }
    }

    fn choose(&self, key: &RequestKey, view: &dyn ServerView, avoid: Option<usize>) -> Pick {
        let n = self.specs.len();
        if n == 0 {
            return Pick::NoServer;
        }
        // Check one server per pick, in turn, for state changes the
        // balancer was not told about (servers coming back).
        let tick = TICK.with(|t| {
            let v = t.get().wrapping_add(1);
            t.set(v);
            v
        });
        for attempt in 0..3 {
            let mut snap = self.snap.load();
            if attempt == 0 && snap.up[tick % n] != view.up(tick % n) {
                self.refresh(view);
                snap = self.snap.load();
            }
            if snap.by_id.is_empty() {
                return Pick::NoServer;
            }
            let saw_down = Cell::new(false);
            let usable = |s: usize| {
                if view.up(s) {
                    view.has_room(s)
                } else {
                    saw_down.set(true);
                    false
                }
            };
            let ok = |s: usize| Some(s) != avoid && usable(s);
            let mut found = self.run_algo(&snap, key, view, &ok);
            if found.is_none() && !self.algo.exhaustive() {
                found = first::pick(&snap.by_id, &ok);
            }
            if found.is_none() {
                found = avoid.filter(|&a| snap.weight.get(a).is_some_and(|&w| w > 0) && usable(a));
            }
            if saw_down.get() {
                self.refresh(view);
            }
            if let Some(s) = found {
                return Pick::Server(s);
            }
            if snap.by_id.iter().any(|&s| view.up(s as usize)) {
                return Pick::Full;
            }
            if !saw_down.get() {
                self.refresh(view);
            }
        }
        Pick::NoServer
    }

    fn run_algo(
        &self,
        snap: &Snap,
        key: &RequestKey,
        view: &dyn ServerView,
        ok: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let members = snap.by_id.len();
        let steps = 2 * members + 8;
        let ring_steps = 8 * members + 16;
        match self.algo {
            Algo::RoundRobin | Algo::StaticRr => self.rr(&snap.schedule, steps, ok),
            Algo::LeastConn => self.lc.as_ref().and_then(|lc| lc.pick(ok)),
            Algo::First => first::pick(&snap.by_id, ok),
            Algo::Random(draws) => random::pick(
                &snap.ring,
                &snap.weight,
                draws,
                ring_steps,
                &|s| view.load(s),
                ok,
            ),
            Algo::Hash { consistent, .. } => match self.key_hash(key) {
                Some(h) if consistent => chash::lookup(&snap.ring, h, ring_steps, ok),
                Some(h) => map::lookup(&snap.schedule, h, steps, ok),
                None => self.rr(&snap.schedule, steps, ok),
            },
        }
    }

    /// The next server of the round-robin schedule: this thread's cursor
    /// with many threads, else the process-wide one.
    fn rr(&self, schedule: &[u32], steps: usize, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        if crate::per_thread_cursors() {
            roundrobin::next(schedule, &self.cursors, steps, ok)
        } else {
            roundrobin::next_shared(schedule, &self.shared_rr, steps, ok)
        }
    }
}
