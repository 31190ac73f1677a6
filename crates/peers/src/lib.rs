//! HAProxy's peers protocol ("HAProxyS 2.1"), wire-compatible, so that
//! Fairlead synchronises stick tables with HAProxy and other Fairlead
//! processes.
//!
//! * [`config`]: the `peers` section ([`PeersSection::parse`]);
//! * [`wire`]: the message format (encoded integers, table definitions,
//!   updates, acknowledgements, control messages, the handshake);
//! * [`sync`]: the task that pushes local updates, applies received ones
//!   and keeps sessions up ([`sync::start`]);
//! * [`handover`]: on a soft stop, the tables go to the new process.
#![forbid(unsafe_code)]

pub mod config;
pub mod handover;
pub mod sync;
pub mod wire;

pub use config::{PeerDef, PeersSection};
pub use sync::{start, Handle, Setup};

/// The default local peer name: the host name (as HAProxy).
pub fn default_local_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests;
