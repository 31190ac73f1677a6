//! The servers of a backend as one immutable, published set: the list,
//! the id → slot map and the balancer built over them.
//!
//! Picks read the current [`ServerSet`] without a lock (an `arc-swap`
//! load). A change of membership (`add server`, `del server`) builds a
//! whole new set, balancer included, from the servers' live state, and
//! publishes it in one store: requests in flight keep the set they
//! started with (their [`crate::ServerSlot`] holds the server itself), new
//! picks see the new one, and no request ever waits for the rebuild.
//!
//! Rebuilding rather than patching works for every algorithm: the
//! schedules of `roundrobin` and `static-rr` and the map-based table are
//! rebuilt anyway on any weight change, the consistent-hashing ring places
//! each server's points by its HAProxy id (`puid`), so the keys of the
//! servers that stay keep their server, and `leastconn` is seeded with
//! each server's current load. A release whose server left the set, or
//! that was taken on the previous set after the new one was seeded, only
//! makes the new balancer's count lag by one for a moment (it saturates
//! at 0).

use crate::{Server, ServerId};
use fairlead_balance::{Lb, ServerSpec};
use fairlead_config as config;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Stable ids of servers added at run time come from this counter, apart
/// from those of the configuration (numbered from 0 at start-up), so that
/// they never collide and are never reused while the process runs.
static NEXT_DYNAMIC_ID: AtomicU32 = AtomicU32::new(0x8000_0000);

/// A fresh process-wide [`ServerId`] for a server added at run time.
pub fn fresh_server_id() -> ServerId {
    ServerId(NEXT_DYNAMIC_ID.fetch_add(1, Ordering::Relaxed))
}

/// One published set of servers. Dereferences to the servers, in
/// configuration order then in the order they were added.
pub struct ServerSet {
    servers: Vec<Arc<Server>>,
    /// Stable id → balancer slot (position in `servers`).
    slots: HashMap<ServerId, usize>,
    pub(crate) lb: Lb,
}

impl std::ops::Deref for ServerSet {
    type Target = [Arc<Server>];
    fn deref(&self) -> &[Arc<Server>] {
        &self.servers
    }
}

impl ServerSet {
    /// Builds the set and its balancer: effective weights from the
    /// servers' live state, `leastconn` loads from their current use.
    pub(crate) fn build(o: &config::ProxyOptions, servers: Vec<Arc<Server>>) -> ServerSet {
        let specs: Vec<ServerSpec> = servers
            .iter()
            .map(|s| ServerSpec {
                weight: s.admin.weight.load(Ordering::Relaxed),
                backup: s.conf.backup,
                id: s.conf.puid,
            })
            .collect();
        let lb = Lb::new(&o.balance, &o.hash_type, o.allbackups, &specs);
        for (i, s) in servers.iter().enumerate() {
            lb.set_weight(i, s.eweight());
            for _ in 0..s.metrics.cur.load(Ordering::Relaxed) {
                lb.taken(i);
            }
        }
        ServerSet {
            slots: servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.conf.id, i))
                .collect(),
            servers,
            lb,
        }
    }

    /// The balancer slot of the server with id `id`, if it is in the set.
    pub(crate) fn slot_of(&self, id: ServerId) -> Option<usize> {
        self.slots.get(&id).copied()
    }

    /// The server with stable id `id`.
    pub fn by_id(&self, id: ServerId) -> Option<&Arc<Server>> {
        self.servers.get(self.slot_of(id)?)
    }

    /// The server named `name`.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.conf.name == name)
    }

    /// The servers as a slice.
    pub fn as_slice(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// The lowest HAProxy server id (`puid`) not in use, from 1: what
    /// HAProxy gives a server added without `id`.
    pub fn free_puid(&self) -> u32 {
        let used: std::collections::HashSet<u32> =
            self.servers.iter().map(|s| s.conf.puid).collect();
        (1..=u32::MAX)
            .find(|n| !used.contains(n))
            .unwrap_or(u32::MAX)
    }
}

/// Why `add server` was refused (HAProxy's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddError {
    /// The backend's algorithm is static (`static-rr`, map-based hashing).
    StaticAlgorithm,
    /// Another server has that name.
    DuplicateName,
    /// Another server has that `id`.
    DuplicateId { id: u32, other: String },
    /// Something the server needs cannot be set up (its TLS context...).
    Invalid(String),
}

impl std::fmt::Display for AddError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddError::StaticAlgorithm => {
                f.write_str("Backend must use a dynamic load balancing to support dynamic servers.")
            }
            AddError::DuplicateName => {
                f.write_str("Already exists a server with the same name in backend.")
            }
            AddError::DuplicateId { id, other } => write!(
                f,
                "'id' : custom id {id} already used at (null):0 ('server {other}')."
            ),
            AddError::Invalid(m) => f.write_str(m),
        }
    }
}

/// Why `del server` was refused (HAProxy's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveError {
    NoSuchServer,
    /// The operator did not put it in maintenance first.
    NotInMaintenance,
    /// Requests or streams are still on it, or waiting for it.
    InUse,
}

impl std::fmt::Display for RemoveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RemoveError::NoSuchServer => "No such server.",
            RemoveError::NotInMaintenance => "Only servers in maintenance mode can be deleted.",
            RemoveError::InUse => "Server still has connections attached to it, cannot remove it.",
        })
    }
}

/// Whether the algorithm accepts servers at run time: HAProxy refuses
/// the static ones (`static-rr`, hashing with `hash-type map-based`).
pub fn dynamic_algorithm(o: &config::ProxyOptions) -> bool {
    use config::Balance as B;
    match o.balance {
        B::StaticRr => false,
        B::Source | B::Uri { .. } | B::UrlParam { .. } | B::Hdr { .. } => {
            o.hash_type.method == config::HashMethod::Consistent
        }
        _ => true,
    }
}
