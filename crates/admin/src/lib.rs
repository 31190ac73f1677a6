//! Fairlead's runtime API: HAProxy's stats socket CLI.
//!
//! - [`parse_stats_socket`] reads a `stats socket` line into a
//!   [`CliListen`]; [`start_cli`] serves it (UNIX socket with the requested
//!   mode and owner, or TCP) on its own threads.
//! - Each connection is a [`Session`]: `;`-separated commands, the
//!   non-interactive default (one line, then close), `prompt` for the
//!   interactive modes, an empty line after each command's output, levels
//!   `user` < `operator` < `admin` with HAProxy's "Permission denied".
//! - Commands act on the process through the [`AdminApi`] trait, which the
//!   process implements over its live state; this crate parses, validates
//!   and renders HAProxy's formats (`show servers state`, `show errors`,
//!   the tasks activity table...).
//! - `add server`, `del server`, `enable|disable health` manage servers
//!   at run time (HAProxy's dynamic servers) through the same trait.
//! - The map and ACL commands (`show|get|add|set|del|clear|prepare|commit
//!   map|acl`, payloads with `<<`) act on the configuration's pattern files
//!   through the same trait.
//!
//! Command syntax, messages and output formats follow HAProxy's management
//! guide (section 9.3); dates are printed in UTC.
#![forbid(unsafe_code)]

pub mod api;
mod commands;
mod dns;
mod listen;
mod maps;
pub mod render;
mod servers;
mod session;
mod tables;

pub use api::*;
pub use listen::{
    parse_cli_addr, parse_stats_socket, parse_stats_timeout, start_cli, CliAddr, CliHandle,
    CliListen,
};
pub use session::{Mode, Reply, Session};

/// CLI access level, from least to most privileged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Non-sensitive statistics only; no change.
    User,
    /// All data readable, non-sensitive changes (HAProxy's default).
    Operator,
    /// Everything.
    Admin,
}

impl Level {
    /// `user`, `operator` or `admin`.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "user" => Some(Level::User),
            "operator" => Some(Level::Operator),
            "admin" => Some(Level::Admin),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Operator => "operator",
            Level::Admin => "admin",
        }
    }
}
