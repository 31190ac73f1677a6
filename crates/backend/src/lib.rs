//! Backends and servers at run time: shared server state (atomics), server
//! assignment (balancing, persistence, `maxconn` and queues), connecting
//! with retries and redispatch, and the per-thread pool of idle server
//! connections.
//!
//! A [`Backend`] is built once from the configuration and shared by every
//! worker through an `Arc`. Server counters are atomics, health is read from
//! `fairlead-health`'s shared state, balancing uses `fairlead-balance`; the
//! queues take a short per-backend lock only while something is queued.
//!
//! The server list is a published snapshot ([`ServerSet`], see [`set`]):
//! servers are added and removed at run time ([`Backend::add_server`],
//! [`Backend::remove_server`]) by publishing a new set, without blocking
//! traffic.
#![forbid(unsafe_code)]

pub mod command;
pub mod connect;
pub mod counters;
pub mod error;
pub mod idle;
pub mod queue;
pub mod retry;
pub mod server;
pub mod set;
pub mod sockpair;

pub use command::{AdminState, CommandError, ServerCommand};
pub use connect::{connect_server, proxy_v2_tlvs, Connected, TlsNames};
pub use error::{Cause, ProxyError, Side};
pub use fairlead_balance::RequestKey;
pub use retry::{Trigger, Verdict};
pub use server::{Server, ServerAdmin, ServerConf, ServerId, ServerMetrics};
pub use set::{fresh_server_id, AddError, RemoveError, ServerSet};

use arc_swap::ArcSwap;
use fairlead_balance::{Pick, ServerView};
use fairlead_config as config;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request's (or TCP stream's) hold on a server: counted in `cur`
/// until dropped, when the slot goes to the oldest queued request.
pub struct ServerSlot {
    backend: Arc<Backend>,
    server: Arc<Server>,
}

impl ServerSlot {
    /// The server's stable id.
    pub fn id(&self) -> ServerId {
        self.server.conf.id
    }

    pub fn server(&self) -> &Arc<Server> {
        &self.server
    }

    /// The server's position in the backend's current set.
    #[cfg(test)]
    fn idx(&self) -> usize {
        let set = self.backend.servers();
        set.slot_of(self.id()).unwrap_or(usize::MAX)
    }
}

impl Drop for ServerSlot {
    fn drop(&mut self) {
        self.backend.release(&self.server);
    }
}

/// A backend at run time.
pub struct Backend {
    pub name: String,
    pub options: config::ProxyOptions,
    /// The servers: configuration order, then those added at run time.
    /// Read it with [`Backend::servers`]; name servers by [`ServerId`]
    /// ([`Backend::server_by_id`]), never by position.
    set: ArcSwap<ServerSet>,
    /// Serialises the writers of `set` and of its balancer's weights.
    edit: Mutex<()>,
    needs: fairlead_balance::Needs,
    pub queue: queue::Queue,
    /// Requests or streams currently assigned to any server.
    pub sessions: AtomicU32,
    /// `fullconn` in force (for `minconn`).
    fullconn: u32,
    /// Traffic counters (per-thread slots).
    pub counters: counters::Counters,
    /// Latency histograms.
    pub latency: counters::Latencies,
    /// Some server sends the request's Host as SNI (`sni req.hdr(host)`):
    /// sessions must keep the Host value for the connection step.
    pub tls_host_sni: bool,
    /// Some server's SNI depends on the request (see [`Server::tls_sni_varies`]).
    pub tls_sni_varies: bool,
    /// Some server sends the stream's unique id in its PROXY v2 header
    /// (`proxy-v2-options unique-id`): requests keep the id for the
    /// connection step.
    pub proxy_v2_unique_id: bool,
}

struct View<'a> {
    be: &'a Backend,
    set: &'a ServerSet,
}

impl ServerView for View<'_> {
    fn up(&self, i: usize) -> bool {
        self.set.get(i).is_some_and(|s| s.is_up())
    }
    fn has_room(&self, i: usize) -> bool {
        self.set.get(i).is_some_and(|s| self.be.has_room(s))
    }
    fn load(&self, i: usize) -> u32 {
        self.set
            .get(i)
            .map_or(0, |s| s.metrics.cur.load(Ordering::Relaxed))
    }
}

impl Backend {
    /// Builds the runtime backend. `resolve` turns a configured address into
    /// a socket address (DNS happens in the caller, at start-up);
    /// `next_id` hands out process-wide server ids; `fullconn` is the
    /// backend's `fullconn` or the value HAProxy derives from the
    /// frontends' maxconn.
    pub fn new(
        cfg: &config::Backend,
        resolve: &dyn Fn(&config::ServerAddr) -> std::io::Result<SocketAddr>,
        next_id: &mut usize,
        fullconn: u32,
    ) -> std::io::Result<Backend> {
        let mut servers = Vec::with_capacity(cfg.servers.len());
        for (idx, s) in cfg.servers.iter().enumerate() {
            let addr = resolve(&s.addr).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{}: server {}/{}: {e}", s.location, cfg.name, s.name),
                )
            })?;
            let tls = server_tls(s).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{}: server {}/{}: {e}", s.location, cfg.name, s.name),
                )
            })?;
            let id = ServerId(u32::try_from(*next_id).unwrap_or(u32::MAX));
            servers.push(Arc::new(Server::new(s, idx, id, addr, tls)));
            *next_id += 1;
        }
        let o = &cfg.options;
        let set = ServerSet::build(o, servers);
        let needs = set.lb.needs().clone();
        let tls_sni_varies = set.iter().any(|s| s.conf.tls_sni_varies);
        let backend = Backend {
            name: cfg.name.clone(),
            options: cfg.options.clone(),
            set: ArcSwap::from_pointee(set),
            edit: Mutex::new(()),
            needs,
            queue: queue::Queue::new(),
            sessions: AtomicU32::new(0),
            fullconn: o.fullconn.unwrap_or(fullconn),
            counters: counters::Counters::new(),
            latency: Default::default(),
            tls_host_sni: cfg.servers.iter().any(|s| {
                s.tls
                    .as_ref()
                    .is_some_and(|t| t.sni == Some(config::SniSource::HostHeader))
            }),
            tls_sni_varies,
            proxy_v2_unique_id: cfg
                .servers
                .iter()
                .any(|s| s.send_proxy == 2 && s.proxy_v2.unique_id),
        };
        backend.refresh_weights();
        Ok(backend)
    }

    /// The current set of servers (a snapshot: later changes publish a
    /// new set and leave this one as it is).
    pub fn servers(&self) -> Arc<ServerSet> {
        self.set.load_full()
    }

    /// What the balancing algorithm needs from each request.
    pub fn lb_needs(&self) -> &fairlead_balance::Needs {
        &self.needs
    }

    fn lock_edit(&self) -> std::sync::MutexGuard<'_, ()> {
        self.edit.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pushes every server's effective weight to the balancer (after a
    /// health change, an agent report, a slowstart step or an admin change),
    /// then lets queued requests use any capacity that appeared.
    pub fn refresh_weights(&self) {
        {
            let _edit = self.lock_edit();
            let set = self.set.load();
            for (i, s) in set.iter().enumerate() {
                set.lb.set_weight(i, s.eweight());
            }
        }
        self.dispatch();
    }

    /// Adds a server at run time (`add server`), as HAProxy does for a
    /// dynamic server: the backend's algorithm must be dynamic, the name
    /// and the `id` (when `cfg.id` is set) free. Without `id` the server
    /// gets the lowest free one. The server starts in maintenance (the
    /// operator's, HAProxy's `FMAINT`): `enable server` makes it serve.
    /// Traffic is not blocked: the new set is built aside and published.
    pub fn add_server(
        &self,
        cfg: &config::Server,
        addr: SocketAddr,
    ) -> Result<Arc<Server>, AddError> {
        if !set::dynamic_algorithm(&self.options) {
            return Err(AddError::StaticAlgorithm);
        }
        let tls = server_tls(cfg).map_err(AddError::Invalid)?;
        let _edit = self.lock_edit();
        let cur = self.set.load_full();
        if cur.by_name(&cfg.name).is_some() {
            return Err(AddError::DuplicateName);
        }
        if let Some(id) = cfg.id {
            if let Some(other) = cur.iter().find(|s| s.conf.puid == id) {
                return Err(AddError::DuplicateId {
                    id,
                    other: other.conf.name.clone(),
                });
            }
        }
        let puid = cfg.id.unwrap_or_else(|| cur.free_puid());
        let idx = puid.saturating_sub(1) as usize;
        let mut server = Server::new(cfg, idx, set::fresh_server_id(), addr, tls);
        server.conf.puid = puid;
        server.conf.dynamic = true;
        if let config::ServerAddr::Name(host, _) = &cfg.addr {
            server.conf.unresolved = Some(host.clone());
        }
        server.admin.maint.store(true, Ordering::Relaxed);
        let server = Arc::new(server);
        let mut list = cur.to_vec();
        list.push(server.clone());
        self.set
            .store(Arc::new(ServerSet::build(&self.options, list)));
        Ok(server)
    }

    /// Removes a server at run time (`del server`): it must be in
    /// maintenance, with nothing on it or queued for it (HAProxy's rules
    /// and messages). Idle pooled connections to it are not reused any
    /// more and close with their idle timeout. Returns the server.
    pub fn remove_server(&self, id: ServerId) -> Result<Arc<Server>, RemoveError> {
        let _edit = self.lock_edit();
        let cur = self.set.load_full();
        let s = cur.by_id(id).ok_or(RemoveError::NoSuchServer)?.clone();
        if !s.admin.maint.load(Ordering::Relaxed) {
            return Err(RemoveError::NotInMaintenance);
        }
        if s.metrics.cur.load(Ordering::Acquire) > 0
            || s.metrics.queued.load(Ordering::Acquire) > 0
            || self.queue.has_waiters_for(id)
        {
            return Err(RemoveError::InUse);
        }
        let list: Vec<Arc<Server>> = cur.iter().filter(|x| x.conf.id != id).cloned().collect();
        self.set
            .store(Arc::new(ServerSet::build(&self.options, list)));
        Ok(s)
    }

    /// Requests queued for this server in particular (persistence).
    pub fn queue_len(&self, server: &Server) -> usize {
        server.metrics.queued.load(Ordering::Relaxed)
    }

    /// The server's `maxconn` in force: with `minconn`, it grows from
    /// `minconn` to `maxconn` as the backend's load approaches `fullconn`,
    /// as HAProxy does. 0 means unlimited.
    pub fn dyn_maxconn(&self, s: &Server) -> u32 {
        let maxconn = s.admin.maxconn.load(Ordering::Relaxed);
        if maxconn == 0 || s.conf.minconn == 0 || self.fullconn == 0 {
            return maxconn;
        }
        let load = u64::from(self.sessions.load(Ordering::Relaxed));
        let dynamic = (u64::from(maxconn) * load / u64::from(self.fullconn)) as u32;
        dynamic.clamp(s.conf.minconn.min(maxconn), maxconn)
    }

    fn has_room(&self, s: &Server) -> bool {
        let m = self.dyn_maxconn(s);
        m == 0 || s.metrics.cur.load(Ordering::Relaxed) < m
    }

    /// Reserves a slot on server `s` if it has room; `set` is the set the
    /// pick was made on (for the balancer's bookkeeping).
    fn try_take(&self, set: &ServerSet, s: &Arc<Server>) -> bool {
        let max = self.dyn_maxconn(s);
        let ok = if max == 0 {
            s.metrics.cur.fetch_add(1, Ordering::Relaxed);
            true
        } else {
            s.metrics
                .cur
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                    (c < max).then_some(c + 1)
                })
                .is_ok()
        };
        if ok {
            s.metrics.counters.inc(counters::C::Stot);
            s.metrics.counters.inc(counters::C::Lbtot);
            self.counters.inc(counters::C::Stot);
            self.sessions.fetch_add(1, Ordering::Relaxed);
            if let Some(i) = set.slot_of(s.conf.id) {
                set.lb.taken(i);
            }
        }
        ok
    }

    /// Undoes a reservation: the counts, and the balancer's bookkeeping in
    /// the current set (the server may have left it).
    fn untake(&self, s: &Server) {
        s.metrics.cur.fetch_sub(1, Ordering::AcqRel);
        self.sessions.fetch_sub(1, Ordering::Relaxed);
        let set = self.set.load();
        if let Some(i) = set.slot_of(s.conf.id) {
            set.lb.released(i);
        }
    }

    fn release(&self, s: &Server) {
        self.untake(s);
        self.dispatch();
    }

    /// Hands free slots to queued requests, oldest first.
    fn dispatch(&self) {
        if self.queue.is_empty() {
            return;
        }
        let set = self.set.load_full();
        let take = |target: Option<&Arc<Server>>| match target {
            Some(s) => self.try_take(&set, s).then(|| s.clone()),
            None => match set.lb.pick(&RequestKey::default(), &self.view(&set)) {
                Pick::Server(i) => {
                    let s = set.get(i)?;
                    self.try_take(&set, s).then(|| s.clone())
                }
                _ => None,
            },
        };
        let give_back = |s: &Arc<Server>| self.untake(s);
        self.queue.dispatch(&take, &give_back);
    }

    fn view<'a>(&'a self, set: &'a ServerSet) -> View<'a> {
        View { be: self, set }
    }

    /// True when some server is up (for the 503-vs-queue decision).
    pub fn any_up(&self) -> bool {
        self.set.load().iter().any(|s| s.is_up())
    }

    /// How long a request may wait in a queue: `timeout queue`, else
    /// `timeout connect`, as HAProxy.
    fn queue_timeout(&self) -> Option<Duration> {
        let t = &self.options.timeouts;
        t.queue.or(t.connect)
    }

    /// Assigns a server slot to a request. `prefer` is the server
    /// persistence designates (a cookie, `use-server`); `avoid` is a
    /// server to leave out (redispatch after a failure). Either may name a
    /// server this backend no longer has: it is then ignored. Waits in a
    /// queue when every eligible server is at its `maxconn`.
    pub async fn assign(
        self: &Arc<Self>,
        key: &RequestKey<'_>,
        prefer: Option<ServerId>,
        avoid: Option<ServerId>,
    ) -> Result<ServerSlot, ProxyError> {
        self.assign_with(key, prefer, avoid, false).await
    }

    /// [`Backend::assign`]; with `force` (`force-persist`), `prefer` is
    /// taken even when it is down or in maintenance, as `option persist`
    /// does for every request.
    pub async fn assign_with(
        self: &Arc<Self>,
        key: &RequestKey<'_>,
        prefer: Option<ServerId>,
        avoid: Option<ServerId>,
        force: bool,
    ) -> Result<ServerSlot, ProxyError> {
        let slot = |server| ServerSlot {
            backend: self.clone(),
            server,
        };
        let set = self.set.load_full();
        if let Some(s) = prefer.and_then(|id| set.by_id(id)) {
            if s.is_up() || self.options.persist || force {
                let queued = s.metrics.queued.load(Ordering::Relaxed);
                if queued == 0 && self.try_take(&set, s) {
                    return Ok(slot(s.clone()));
                }
                if s.conf.maxqueue == 0 || (queued as u32) < s.conf.maxqueue {
                    let s = s.clone();
                    drop(set);
                    return self.wait_in_queue(Some(&s)).await.map(slot);
                }
                // Its queue is full: balance instead (HAProxy redispatches).
            }
        }
        let avoid = avoid.and_then(|id| set.slot_of(id));
        let view = self.view(&set);
        for _ in 0..4 {
            let pick = match avoid {
                Some(a) => set.lb.pick_avoiding(key, &view, a),
                None => set.lb.pick(key, &view),
            };
            match pick {
                Pick::NoServer => return Err(ProxyError::connect(Cause::NoServer)),
                Pick::Full => break,
                Pick::Server(i) => {
                    let Some(s) = set.get(i) else { break };
                    // Queued requests go first: a newcomer does not overtake.
                    if self.queue.is_empty() && self.try_take(&set, s) {
                        return Ok(slot(s.clone()));
                    }
                    if !self.queue.is_empty() {
                        break;
                    }
                }
            }
        }
        drop(set);
        self.wait_in_queue(None).await.map(slot)
    }

    async fn wait_in_queue(&self, target: Option<&Arc<Server>>) -> Result<Arc<Server>, ProxyError> {
        let ticket = self.queue.push(target);
        // A slot may have freed up between the failed attempt and the push.
        self.dispatch();
        let r = match self.queue_timeout() {
            Some(t) => tokio::time::timeout(t, ticket).await.ok(),
            None => Some(ticket.await),
        };
        match r {
            Some(Ok(s)) => Ok(s),
            _ => {
                self.queue.purge_cancelled();
                Err(ProxyError::connect(Cause::QueueTimeout))
            }
        }
    }

    /// Whether retry number `retry` (1-based) goes to another server:
    /// `option redispatch <interval>` redispatches every Pth retry for a
    /// positive P, and on the Nth retry before the last for a negative one
    /// (the default -1 is the last retry), as HAProxy.
    pub fn redispatch_now(&self, retry: u32) -> bool {
        let o = &self.options;
        if !o.redispatch {
            return false;
        }
        match o.redispatch_interval {
            0 => false,
            p if p > 0 => retry.is_multiple_of(p as u32),
            n => i64::from(retry) == i64::from(o.retries) + 1 + i64::from(n),
        }
    }

    /// The server whose persistence cookie value is `value`.
    pub fn server_by_cookie(&self, value: &[u8]) -> Option<ServerId> {
        self.set
            .load()
            .iter()
            .find(|s| {
                s.conf
                    .cookie
                    .as_deref()
                    .is_some_and(|c| c.as_bytes() == value)
            })
            .map(|s| s.conf.id)
    }

    /// The server `persist rdp-cookie` designates: the first one whose
    /// IPv4 address and port are `addr` (see `fairlead_rules::rdp`) and
    /// that is up, or any state with `option persist`, as HAProxy's
    /// `tcp_persist_rdp_cookie`. UNIX-socket servers never match.
    pub fn server_by_rdp_addr(&self, addr: std::net::SocketAddrV4) -> Option<ServerId> {
        let want = std::net::SocketAddr::V4(addr);
        self.set
            .load()
            .iter()
            .find(|s| {
                s.conf.unix.is_none()
                    && **s.admin.addr.load() == want
                    && (s.is_up() || self.options.persist)
            })
            .map(|s| s.conf.id)
    }

    /// Number of usable active and backup servers, for state-change logs.
    pub fn usable_counts(&self) -> (usize, usize) {
        let set = self.set.load();
        let up = |b: bool| {
            set.iter()
                .filter(|s| s.conf.backup == b && s.eweight() > 0)
                .count()
        };
        (up(false), up(true))
    }
}

/// The server's TLS context, if it has `ssl`.
fn server_tls(s: &config::Server) -> Result<Option<fairlead_tls::ServerContext>, String> {
    s.tls
        .as_ref()
        .map(|t| fairlead_tls::ServerContext::build(t).map_err(|e| e.to_string()))
        .transpose()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dynamic;
