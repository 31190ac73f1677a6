//! One server at run time, in four parts that change for different
//! reasons:
//!
//! - [`ServerConf`]: what the configuration says, fixed for the server's
//!   life (name, ids, cookie, TLS context...);
//! - [`ServerAdmin`]: what operators change at run time (address, weight,
//!   `maxconn`, maintenance and drain), from the runtime API or the stats
//!   page;
//! - the operational state from health checks ([`ServerHealth`], shared
//!   with the checkers);
//! - [`ServerMetrics`]: what the traffic did. Every fact is counted once,
//!   in [`ServerMetrics::counters`] (new connections `ConnNew`, failed
//!   connects `Econ`, ...).
//!
//! A server's identity is its [`ServerId`] ([`ServerConf::id`]), unique in
//! the process and never reused while it runs. Everything outside this
//! crate names a server by that id or holds its `Arc<Server>`: idle
//! connection pools, attached connections, persistence (cookies,
//! `use-server`), redispatch, log records, runtime API commands and DNS.
//! The position in the backend's list is the balancer's and the queue's
//! private slot number, so that servers can later be added and removed
//! without renumbering anyone's references.

use crate::counters;
use fairlead_config as config;
use fairlead_health::ServerHealth;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// A server's stable identity: unique in the process, never reused while
/// it runs, independent of the server's position in its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerId(pub u32);

impl std::fmt::Display for ServerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Where the connections of a server that is not reached over TCP go.
#[derive(Debug, Clone)]
pub enum UnixTarget {
    /// A UNIX socket to connect to.
    Addr(std::os::unix::net::SocketAddr),
    /// `sockpair@<n>`: a new socket pair per connection, one end passed
    /// over inherited descriptor `n` (see [`crate::sockpair`]).
    Pair(i32),
}

/// What the configuration says about a server.
pub struct ServerConf {
    /// Process-wide unique id; keys the per-thread idle pools.
    pub id: ServerId,
    /// HAProxy's server id (`id` keyword, else position from 1).
    pub puid: u32,
    pub name: String,
    /// The weight from the configuration (HAProxy's `iweight`).
    pub initial_weight: u32,
    pub minconn: u32,
    /// 0 means unlimited.
    pub maxqueue: u32,
    pub backup: bool,
    /// Persistence cookie value.
    pub cookie: Option<String>,
    pub observe: Option<config::Observe>,
    /// `ssl`: the client-side TLS context for this server. Default is none.
    pub tls: Option<fairlead_tls::ServerContext>,
    /// The SNI sent to this server depends on the request (`sni ssl_fc_sni`
    /// or `sni req.hdr(host)`): pooled connections are matched by name.
    pub tls_sni_varies: bool,
    /// `send-proxy` (1) / `send-proxy-v2` (2): a PROXY protocol header
    /// goes first on each new connection. Default is 0 (none).
    pub send_proxy: u8,
    /// `proxy-v2-options` (and the `send-proxy-v2-ssl*` forms). Default
    /// is none.
    pub proxy_v2: config::ProxyV2Options,
    /// `non-stick`: stick rules never store this server. Default is
    /// false.
    pub non_stick: bool,
    /// `proto h2`: the server speaks clear-text HTTP/2 (h2c).
    pub proto_h2: bool,
    /// `max-reuse`, `pool-max-conn`, `pool-purge-delay`. Default is
    /// HAProxy's (unlimited, unlimited, 5s).
    pub pool: config::ServerPool,
    /// `check`: health checks are configured (the stats show their
    /// state). Default is false.
    pub check: bool,
    /// `unix@<path>`, `<path>` or `abns@<name>` (connections go to this
    /// UNIX socket) or `sockpair@<n>`; [`ServerAdmin::addr`] is then only
    /// a placeholder. Default is none (TCP).
    pub unix: Option<UnixTarget>,
    /// Added at run time (`add server`): HAProxy's dynamic server, which
    /// a reload does not keep. Default is false.
    pub dynamic: bool,
    /// Added at run time with a host name (`add server be/s NAME:PORT`):
    /// as in HAProxy 2.6, the name is kept and never resolved, and the
    /// server has no address: connecting to it fails at once (this is the
    /// name). Default is none.
    pub unresolved: Option<String>,
    /// `socks4 <addr>`: connections go through this SOCKS4 proxy, which
    /// is asked for the server's address. Default is none.
    pub socks4: Option<SocketAddr>,
}

/// What operators change at run time.
pub struct ServerAdmin {
    /// The address new connections go to (`set server addr` changes it).
    pub addr: arc_swap::ArcSwap<SocketAddr>,
    /// Configured weight (0..=256); the runtime API may change it.
    pub weight: AtomicU32,
    /// 0 means unlimited; `set maxconn server` changes it.
    pub maxconn: AtomicU32,
    /// Administratively in maintenance (`disabled`, `set server state maint`).
    pub maint: AtomicBool,
    /// Administratively draining (`set server state drain`): up, but no new
    /// traffic.
    pub drain: AtomicBool,
    /// In maintenance because of DNS (HAProxy's RMAINT): no address yet
    /// (`init-addr none`, a free `server-template` slot), or the name's
    /// resolution failed past its `hold` period. Kept apart from `maint`,
    /// which belongs to the operator. Default is false.
    pub dns_maint: AtomicBool,
    /// The address changed at least once since start-up (DNS or the
    /// runtime API): reused connections are checked against it. Default
    /// is false.
    pub addr_moved: AtomicBool,
}

impl ServerAdmin {
    /// Changes the address new connections go to. Connections in use
    /// finish where they are; pooled ones to the old address are no
    /// longer reused ([`Self::conn_fits`]).
    pub fn set_addr(&self, addr: SocketAddr) {
        self.addr.store(Arc::new(addr));
        self.addr_moved.store(true, Ordering::Release);
    }

    /// Whether an established connection may carry a new request: always
    /// while the address never changed (no system call), else when it
    /// goes to the current address.
    pub fn conn_fits(&self, conn: &fairlead_net::Conn) -> bool {
        !self.addr_moved.load(Ordering::Acquire)
            || conn.peer_addr().ok() == Some(**self.addr.load())
    }
}

/// What the traffic did.
#[derive(Default)]
pub struct ServerMetrics {
    /// Requests (HTTP) or streams (TCP) currently assigned.
    pub cur: AtomicU32,
    /// Traffic counters (per-thread slots).
    pub counters: counters::Counters,
    /// Latency histograms.
    pub latency: counters::Latencies,
    /// Requests waiting in this server's own queue (persistence), kept by
    /// the backend's [`crate::queue::Queue`].
    pub queued: std::sync::atomic::AtomicUsize,
}

/// One server's shared state.
pub struct Server {
    pub conf: ServerConf,
    pub admin: ServerAdmin,
    /// Operational state from health checks (always up without `check`).
    pub health: Arc<ServerHealth>,
    pub metrics: ServerMetrics,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("id", &self.conf.id)
            .field("name", &self.conf.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server of the configuration, at position `idx` in its backend,
    /// with process-wide id `id`.
    pub fn new(
        s: &config::Server,
        idx: usize,
        id: ServerId,
        addr: SocketAddr,
        tls: Option<fairlead_tls::ServerContext>,
    ) -> Server {
        let tls_sni_varies = s.tls.as_ref().is_some_and(|t| {
            matches!(
                t.sni,
                Some(config::SniSource::ClientSni | config::SniSource::HostHeader)
            )
        });
        Server {
            conf: ServerConf {
                id,
                puid: s.id.unwrap_or(idx as u32 + 1),
                name: s.name.clone(),
                initial_weight: s.weight,
                minconn: s.minconn,
                maxqueue: s.maxqueue,
                backup: s.backup,
                cookie: s.cookie.clone(),
                observe: s.observe,
                tls,
                tls_sni_varies,
                send_proxy: s.send_proxy,
                proxy_v2: s.proxy_v2,
                non_stick: s.non_stick,
                socks4: s.socks4,
                proto_h2: s.proto_h2,
                pool: s.pool,
                check: s.check,
                // The parser checked the path's length and bytes, the
                // only reasons this could fail.
                unix: match &s.addr {
                    config::ServerAddr::Unix(u) => u.socket_addr().ok().map(UnixTarget::Addr),
                    config::ServerAddr::SockPair(n) => Some(UnixTarget::Pair(*n)),
                    _ => None,
                },
                dynamic: false,
                unresolved: None,
            },
            admin: ServerAdmin {
                addr: arc_swap::ArcSwap::from_pointee(addr),
                weight: AtomicU32::new(s.weight),
                maxconn: AtomicU32::new(s.maxconn),
                maint: AtomicBool::new(s.disabled),
                drain: AtomicBool::new(false),
                dns_maint: AtomicBool::new(false),
                addr_moved: AtomicBool::new(false),
            },
            health: Arc::new(ServerHealth::new(true)),
            metrics: ServerMetrics::default(),
        }
    }

    /// Up and not in maintenance (the operator's or DNS's).
    pub fn is_up(&self) -> bool {
        !self.admin.maint.load(Ordering::Relaxed)
            && !self.admin.dns_maint.load(Ordering::Relaxed)
            && self.health.is_up()
    }

    /// Effective weight for the balancer: configured weight scaled by the
    /// agent's percentage and the slowstart ramp; 0 when down or draining.
    pub fn eweight(&self) -> u32 {
        if !self.is_up() || self.health.is_drain() || self.admin.drain.load(Ordering::Relaxed) {
            return 0;
        }
        let w = self.admin.weight.load(Ordering::Relaxed);
        let pct = self.health.weight_pct();
        if w == 0 || pct == 0 {
            return 0;
        }
        (w * pct / 100).clamp(1, 256)
    }

    /// Reports a passive-check observation (`observe layer4|layer7`).
    /// `layer7` tells whether the result is an HTTP response (else a
    /// connection attempt). In `layer7` mode connection failures count as
    /// errors too, but only responses count as successes.
    pub fn observe(&self, layer7: bool, ok: bool) {
        use config::Observe::{Layer4, Layer7};
        match (self.conf.observe, layer7) {
            (Some(Layer4), false) | (Some(Layer7), true) => self.health.observe(ok),
            (Some(Layer7), false) if !ok => self.health.observe(false),
            _ => {}
        }
    }
}
