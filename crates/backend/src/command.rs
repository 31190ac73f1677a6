//! One command model for changes to servers at run time (Sozu's idea):
//! the runtime API (`set server`, `enable`/`disable server`), the stats
//! page's admin form (`stats admin if ...`) and, later, DNS discovery all
//! express a change as a [`ServerCommand`], and [`Backend::apply`] is the
//! one place that carries it out, then republishes the balancing weights.
//! Commands name a server by its stable id ([`crate::ServerConf::id`]),
//! not by a position that could move.

use crate::{Backend, Server, ServerId};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The administrative state an operator asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminState {
    /// Leaves maintenance and drain.
    Ready,
    /// Up and checked, but no new non-persistent traffic.
    Drain,
    /// No traffic.
    Maint,
}

/// One change to one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerCommand {
    State(AdminState),
    /// A new user weight, clamped to 0..=256.
    Weight(u32),
    /// A new `maxconn` (0: unlimited).
    Maxconn(u32),
    /// A new address for new connections; the port only when given.
    Addr {
        ip: IpAddr,
        port: Option<u16>,
    },
    /// Forces the health-check or agent state. Not supported yet: the
    /// checks own that state.
    ForceHealth,
}

/// Why a command was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// No server with that id in this backend.
    NoSuchServer,
    /// Fairlead does not do this yet.
    Unsupported(&'static str),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::NoSuchServer => f.write_str("No such server."),
            CommandError::Unsupported(what) => {
                write!(f, "{what} is not supported by Fairlead yet.")
            }
        }
    }
}

impl Backend {
    /// The server with stable id `id`, in the current set.
    pub fn server_by_id(&self, id: ServerId) -> Option<Arc<Server>> {
        self.servers().by_id(id).cloned()
    }

    /// The server named `name`, in the current set.
    pub fn server_by_name(&self, name: &str) -> Option<Arc<Server>> {
        self.servers().by_name(name).cloned()
    }

    /// Applies `cmd` to the server with stable id `id`, then republishes
    /// the balancing weights. Returns whether anything changed.
    pub fn apply(&self, id: ServerId, cmd: ServerCommand) -> Result<bool, CommandError> {
        let s = self.server_by_id(id).ok_or(CommandError::NoSuchServer)?;
        let a = &s.admin;
        let swap_bool =
            |b: &std::sync::atomic::AtomicBool, v: bool| b.swap(v, Ordering::Relaxed) != v;
        let changed = match cmd {
            ServerCommand::State(AdminState::Ready) => {
                swap_bool(&a.maint, false) | swap_bool(&a.drain, false)
            }
            ServerCommand::State(AdminState::Drain) => {
                swap_bool(&a.maint, false) | swap_bool(&a.drain, true)
            }
            ServerCommand::State(AdminState::Maint) => swap_bool(&a.maint, true),
            ServerCommand::Weight(w) => a.weight.swap(w.min(256), Ordering::Relaxed) != w.min(256),
            ServerCommand::Maxconn(n) => a.maxconn.swap(n, Ordering::Relaxed) != n,
            ServerCommand::Addr { ip, port } => {
                let old = **a.addr.load();
                let new = std::net::SocketAddr::new(ip, port.unwrap_or(old.port()));
                a.set_addr(new);
                new != old
            }
            ServerCommand::ForceHealth => {
                return Err(CommandError::Unsupported(
                    "Forcing the health or agent state",
                ))
            }
        };
        if changed {
            self.refresh_weights();
        }
        Ok(changed)
    }
}
