//! Backends and servers at run time: shared server state (atomics), server
//! selection with retries and redispatch, and the per-thread pool of idle
//! server connections.
//!
//! A [`Backend`] is built once from the configuration and shared by every
//! worker through an `Arc`. Nothing in it takes a lock: server counters are
//! atomics and balancing uses the lock-free algorithms of `fairlead-balance`.
#![forbid(unsafe_code)]

pub mod connect;
pub mod error;
pub mod idle;

pub use connect::{connect_server, ConnectFail, Connected};
pub use error::{ProxyError, Side};

use fairlead_balance::{Algorithm, RoundRobin};
use fairlead_config as config;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// One server's shared state.
#[derive(Debug)]
pub struct Server {
    /// Process-wide unique id (index into all servers of all backends); keys
    /// the per-thread idle pools.
    pub id: usize,
    pub name: String,
    pub addr: SocketAddr,
    pub weight: u32,
    /// 0 means unlimited.
    pub maxconn: u32,
    pub backup: bool,
    /// Administratively disabled (`disabled` keyword).
    pub disabled: AtomicBool,
    /// Operational state. Always true until health checks exist.
    pub up: AtomicBool,
    /// Requests currently assigned to this server.
    pub cur: AtomicU32,
    /// Requests (HTTP) or connections (TCP) ever assigned.
    pub total: AtomicU64,
    /// Failed connection attempts.
    pub connect_errors: AtomicU64,
    /// New TCP connections opened to this server.
    pub connects: AtomicU64,
}

impl Server {
    fn usable(&self) -> bool {
        self.up.load(Ordering::Relaxed)
            && !self.disabled.load(Ordering::Relaxed)
            && (self.maxconn == 0 || self.cur.load(Ordering::Relaxed) < self.maxconn)
    }
}

/// Holds one slot of a server's `cur` count; released on drop.
pub struct ServerSlot {
    server: Arc<Server>,
}

impl ServerSlot {
    pub fn server(&self) -> &Arc<Server> {
        &self.server
    }
}

impl Drop for ServerSlot {
    fn drop(&mut self) {
        self.server.cur.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A backend at run time.
pub struct Backend {
    pub name: String,
    pub options: config::ProxyOptions,
    pub servers: Vec<Arc<Server>>,
    active: Vec<usize>,
    backup: Vec<usize>,
    rr_active: RoundRobin,
    rr_backup: RoundRobin,
}

impl Backend {
    /// Builds the runtime backend. `resolve` turns a configured address into
    /// a socket address (DNS happens in the caller, at start-up);
    /// `next_id` hands out process-wide server ids.
    pub fn new(
        cfg: &config::Backend,
        resolve: &dyn Fn(&config::ServerAddr) -> std::io::Result<SocketAddr>,
        next_id: &mut usize,
    ) -> std::io::Result<Backend> {
        let mut servers = Vec::with_capacity(cfg.servers.len());
        for s in &cfg.servers {
            let addr = resolve(&s.addr).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{}: server {}/{}: {e}", s.location, cfg.name, s.name),
                )
            })?;
            servers.push(Arc::new(Server {
                id: *next_id,
                name: s.name.clone(),
                addr,
                weight: s.weight,
                maxconn: s.maxconn,
                backup: s.backup,
                disabled: AtomicBool::new(s.disabled),
                up: AtomicBool::new(true),
                cur: AtomicU32::new(0),
                total: AtomicU64::new(0),
                connect_errors: AtomicU64::new(0),
                connects: AtomicU64::new(0),
            }));
            *next_id += 1;
        }
        let active: Vec<usize> = (0..servers.len()).filter(|&i| !servers[i].backup).collect();
        let backup: Vec<usize> = (0..servers.len()).filter(|&i| servers[i].backup).collect();
        let weights = |idx: &[usize]| idx.iter().map(|&i| servers[i].weight).collect::<Vec<_>>();
        Ok(Backend {
            name: cfg.name.clone(),
            options: cfg.options.clone(),
            rr_active: RoundRobin::new(&weights(&active)),
            rr_backup: RoundRobin::new(&weights(&backup)),
            active,
            backup,
            servers,
        })
    }

    /// Picks a usable server, avoiding `avoid` when another one is usable.
    /// Backup servers are used only when no active server is up.
    pub fn pick(&self, avoid: Option<usize>) -> Option<usize> {
        self.pick_in(avoid)
            .or_else(|| avoid.and_then(|_| self.pick_in(None)))
    }

    fn pick_in(&self, avoid: Option<usize>) -> Option<usize> {
        let ok = |i: usize| Some(i) != avoid && self.servers[i].usable();
        if let Some(k) = self.rr_active.pick(&|k| ok(self.active[k])) {
            return Some(self.active[k]);
        }
        let any_active_up = self.active.iter().any(|&i| {
            let s = &self.servers[i];
            s.up.load(Ordering::Relaxed) && !s.disabled.load(Ordering::Relaxed) && s.weight > 0
        });
        if any_active_up {
            return None;
        }
        self.rr_backup
            .pick(&|k| ok(self.backup[k]))
            .map(|k| self.backup[k])
    }

    /// Counts a request (or TCP session) on server `idx`.
    pub fn acquire(&self, idx: usize) -> ServerSlot {
        let server = self.servers[idx].clone();
        server.cur.fetch_add(1, Ordering::Relaxed);
        server.total.fetch_add(1, Ordering::Relaxed);
        ServerSlot { server }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(spec: &[(u32, bool)]) -> Backend {
        let cfg = config::Backend {
            name: "bk".into(),
            servers: spec
                .iter()
                .enumerate()
                .map(|(i, &(weight, backup))| config::Server {
                    weight,
                    backup,
                    ..config::Server::new(
                        &format!("s{i}"),
                        config::ServerAddr::Ip(([127, 0, 0, 1], 1000 + i as u16).into()),
                    )
                })
                .collect(),
            ..Default::default()
        };
        let resolve = |a: &config::ServerAddr| match a {
            config::ServerAddr::Ip(a) => Ok(*a),
            _ => unreachable!(),
        };
        Backend::new(&cfg, &resolve, &mut 0).unwrap()
    }

    #[test]
    fn backup_only_when_no_active() {
        let b = backend(&[(1, false), (1, false), (1, true)]);
        for _ in 0..6 {
            assert_ne!(b.pick(None), Some(2));
        }
        b.servers[0].up.store(false, Ordering::Relaxed);
        b.servers[1].up.store(false, Ordering::Relaxed);
        assert_eq!(b.pick(None), Some(2));
    }

    #[test]
    fn avoid_prefers_another_server() {
        let b = backend(&[(1, false), (1, false)]);
        for _ in 0..5 {
            assert_eq!(b.pick(Some(0)), Some(1));
        }
        b.servers[1].up.store(false, Ordering::Relaxed);
        assert_eq!(b.pick(Some(0)), Some(0));
    }

    #[test]
    fn maxconn_full_server_is_skipped() {
        let mut b = backend(&[(1, false), (1, false)]);
        Arc::get_mut(&mut b.servers[0]).unwrap().maxconn = 1;
        let _slot = b.acquire(0);
        for _ in 0..4 {
            assert_eq!(b.pick(None), Some(1));
        }
    }
}
