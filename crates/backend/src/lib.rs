//! Backends and servers at run time: shared server state (atomics), server
//! assignment (balancing, persistence, `maxconn` and queues), connecting
//! with retries and redispatch, and the per-thread pool of idle server
//! connections.
//!
//! A [`Backend`] is built once from the configuration and shared by every
//! worker through an `Arc`. Server counters are atomics, health is read from
//! `fairlead-health`'s shared state, balancing uses `fairlead-balance`; the
//! queues take a short per-backend lock only while something is queued.
#![forbid(unsafe_code)]

pub mod command;
pub mod connect;
pub mod counters;
pub mod error;
pub mod idle;
pub mod queue;
pub mod retry;
pub mod server;

pub use command::{AdminState, CommandError, ServerCommand};
pub use connect::{connect_server, Connected, TlsNames};
pub use error::{Cause, ProxyError, Side};
pub use fairlead_balance::RequestKey;
pub use retry::{Trigger, Verdict};
pub use server::{Server, ServerAdmin, ServerConf, ServerId, ServerMetrics};

use fairlead_balance::{Lb, Pick, ServerSpec, ServerView};
use fairlead_config as config;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One request's (or TCP stream's) hold on a server: counted in `cur`
/// until dropped, when the slot goes to the oldest queued request.
pub struct ServerSlot {
    backend: Arc<Backend>,
    idx: usize,
}

impl ServerSlot {
    /// The server's stable id.
    pub fn id(&self) -> ServerId {
        self.server().conf.id
    }

    pub fn server(&self) -> &Arc<Server> {
        &self.backend.servers[self.idx]
    }
}

impl Drop for ServerSlot {
    fn drop(&mut self) {
        self.backend.release(self.idx);
    }
}

/// A backend at run time.
pub struct Backend {
    pub name: String,
    pub options: config::ProxyOptions,
    /// The servers, in configuration order. Name them by [`ServerId`]
    /// ([`Backend::server_by_id`]), never by position.
    pub servers: Vec<Arc<Server>>,
    /// Stable id → balancer slot (position in `servers`).
    slots: std::collections::HashMap<ServerId, usize>,
    lb: Lb,
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
}

struct View<'a>(&'a Backend);

impl ServerView for View<'_> {
    fn up(&self, i: usize) -> bool {
        self.0.servers[i].is_up()
    }
    fn has_room(&self, i: usize) -> bool {
        self.0.has_room(i)
    }
    fn load(&self, i: usize) -> u32 {
        self.0.servers[i].metrics.cur.load(Ordering::Relaxed)
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
            let tls = match &s.tls {
                Some(t) => Some(fairlead_tls::ServerContext::build(t).map_err(|e| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("{}: server {}/{}: {e}", s.location, cfg.name, s.name),
                    )
                })?),
                None => None,
            };
            let id = ServerId(u32::try_from(*next_id).unwrap_or(u32::MAX));
            servers.push(Arc::new(Server::new(s, idx, id, addr, tls)));
            *next_id += 1;
        }
        let specs: Vec<ServerSpec> = servers
            .iter()
            .map(|s| ServerSpec {
                weight: s.admin.weight.load(Ordering::Relaxed),
                backup: s.conf.backup,
                id: s.conf.puid,
            })
            .collect();
        let o = &cfg.options;
        let lb = Lb::new(&o.balance, &o.hash_type, o.allbackups, &specs);
        let tls_sni_varies = servers.iter().any(|s| s.conf.tls_sni_varies);
        let backend = Backend {
            name: cfg.name.clone(),
            options: cfg.options.clone(),
            lb,
            queue: queue::Queue::new(servers.len()),
            slots: servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.conf.id, i))
                .collect(),
            servers,
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
        };
        backend.refresh_weights();
        Ok(backend)
    }

    /// What the balancing algorithm needs from each request.
    pub fn lb_needs(&self) -> &fairlead_balance::Needs {
        self.lb.needs()
    }

    /// Pushes every server's effective weight to the balancer (after a
    /// health change, an agent report, a slowstart step or an admin change),
    /// then lets queued requests use any capacity that appeared.
    pub fn refresh_weights(&self) {
        for (i, s) in self.servers.iter().enumerate() {
            self.lb.set_weight(i, s.eweight());
        }
        self.dispatch();
    }

    /// The balancer slot of the server with id `id`, if it is in this
    /// backend.
    fn slot_of(&self, id: ServerId) -> Option<usize> {
        self.slots.get(&id).copied()
    }

    /// Requests queued for this server in particular (persistence).
    pub fn queue_len(&self, server: &Server) -> usize {
        self.slot_of(server.conf.id)
            .map_or(0, |i| self.queue.server_len(i))
    }

    /// The server's `maxconn` in force (see [`Self::dyn_maxconn_at`]).
    pub fn dyn_maxconn(&self, server: &Server) -> u32 {
        self.slot_of(server.conf.id)
            .map_or(0, |i| self.dyn_maxconn_at(i))
    }

    /// The `maxconn` in force of the server in slot `i`: with `minconn`,
    /// it grows from `minconn` to `maxconn` as the backend's load
    /// approaches `fullconn`, as HAProxy does. 0 means unlimited.
    fn dyn_maxconn_at(&self, i: usize) -> u32 {
        let s = &self.servers[i];
        let maxconn = s.admin.maxconn.load(Ordering::Relaxed);
        if maxconn == 0 || s.conf.minconn == 0 || self.fullconn == 0 {
            return maxconn;
        }
        let load = u64::from(self.sessions.load(Ordering::Relaxed));
        let dynamic = (u64::from(maxconn) * load / u64::from(self.fullconn)) as u32;
        dynamic.clamp(s.conf.minconn.min(maxconn), maxconn)
    }

    fn has_room(&self, i: usize) -> bool {
        let m = self.dyn_maxconn_at(i);
        m == 0 || self.servers[i].metrics.cur.load(Ordering::Relaxed) < m
    }

    /// Reserves a slot on server `i` if it has room.
    fn try_take(&self, i: usize) -> bool {
        let s = &self.servers[i];
        let max = self.dyn_maxconn_at(i);
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
            s.metrics.total.fetch_add(1, Ordering::Relaxed);
            s.metrics.counters.inc(counters::C::Stot);
            s.metrics.counters.inc(counters::C::Lbtot);
            self.counters.inc(counters::C::Stot);
            self.sessions.fetch_add(1, Ordering::Relaxed);
            self.lb.taken(i);
        }
        ok
    }

    fn release(&self, i: usize) {
        self.servers[i].metrics.cur.fetch_sub(1, Ordering::AcqRel);
        self.sessions.fetch_sub(1, Ordering::Relaxed);
        self.lb.released(i);
        self.dispatch();
    }

    /// Hands free slots to queued requests, oldest first.
    fn dispatch(&self) {
        if self.queue.is_empty() {
            return;
        }
        let take = |target: Option<usize>| match target {
            Some(i) => self.try_take(i).then_some(i),
            None => match self.lb.pick(&RequestKey::default(), &View(self)) {
                Pick::Server(i) => self.try_take(i).then_some(i),
                _ => None,
            },
        };
        let give_back = |i: usize| {
            self.servers[i].metrics.cur.fetch_sub(1, Ordering::AcqRel);
            self.sessions.fetch_sub(1, Ordering::Relaxed);
            self.lb.released(i);
        };
        self.queue.dispatch(&take, &give_back);
    }

    /// True when some server is up (for the 503-vs-queue decision).
    pub fn any_up(&self) -> bool {
        self.servers.iter().any(|s| s.is_up())
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
        let slot = |idx| ServerSlot {
            backend: self.clone(),
            idx,
        };
        let prefer = prefer.and_then(|id| self.slot_of(id));
        let avoid = avoid.and_then(|id| self.slot_of(id));
        if let Some(i) = prefer {
            let s = &self.servers[i];
            if s.is_up() || self.options.persist {
                if self.queue.server_len(i) == 0 && self.try_take(i) {
                    return Ok(slot(i));
                }
                if s.conf.maxqueue == 0 || (self.queue.server_len(i) as u32) < s.conf.maxqueue {
                    return self.wait_in_queue(Some(i)).await.map(slot);
                }
                // Its queue is full: balance instead (HAProxy redispatches).
            }
        }
        for _ in 0..4 {
            let pick = match avoid {
                Some(a) => self.lb.pick_avoiding(key, &View(self), a),
                None => self.lb.pick(key, &View(self)),
            };
            match pick {
                Pick::NoServer => return Err(ProxyError::connect(Cause::NoServer)),
                Pick::Full => break,
                Pick::Server(i) => {
                    // Queued requests go first: a newcomer does not overtake.
                    if self.queue.is_empty() && self.try_take(i) {
                        return Ok(slot(i));
                    }
                    if !self.queue.is_empty() {
                        break;
                    }
                }
            }
        }
        self.wait_in_queue(None).await.map(slot)
    }

    async fn wait_in_queue(&self, target: Option<usize>) -> Result<usize, ProxyError> {
        let ticket = self.queue.push(target);
        // A slot may have freed up between the failed attempt and the push.
        self.dispatch();
        let r = match self.queue_timeout() {
            Some(t) => tokio::time::timeout(t, ticket).await.ok(),
            None => Some(ticket.await),
        };
        match r {
            Some(Ok(i)) => Ok(i),
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
        self.servers
            .iter()
            .find(|s| {
                s.conf
                    .cookie
                    .as_deref()
                    .is_some_and(|c| c.as_bytes() == value)
            })
            .map(|s| s.conf.id)
    }

    /// Number of usable active and backup servers, for state-change logs.
    pub fn usable_counts(&self) -> (usize, usize) {
        let up = |b: bool| {
            self.servers
                .iter()
                .filter(|s| s.conf.backup == b && s.eweight() > 0)
                .count()
        };
        (up(false), up(true))
    }
}

#[cfg(test)]
mod tests;
