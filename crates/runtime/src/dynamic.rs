//! Servers added and removed at run time through the runtime API (`add
//! server`, `del server`, `enable|disable health`), as HAProxy's dynamic
//! servers: the backend publishes a new server set (see
//! `fairlead_backend::set`), and this module keeps what the backend does
//! not: each added server's configuration and its health checker.
//!
//! A server added with a host name keeps the name (`srv_fqdn` in `show
//! servers state`) and gets no address, as in HAProxy 2.6, whose dynamic
//! servers cannot use `resolvers`: once enabled it is UP, and connections
//! to it fail (`set server addr` is refused for it).
//!
//! As in HAProxy 2.6, a server added here is not kept across a reload
//! (nor written to a server-state file the next process could restore
//! it from): it must also go into the configuration.

use crate::Shared;
use fairlead_backend::{Backend, ServerId};
use fairlead_config as config;
use fairlead_health::CheckerHandle;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

/// One server added at run time.
struct Added {
    cfg: config::Server,
    /// Its running checks, once `enable health` started them.
    checker: Option<CheckerHandle>,
}

fn registry() -> std::sync::MutexGuard<'static, HashMap<ServerId, Added>> {
    static REG: OnceLock<Mutex<HashMap<ServerId, Added>>> = OnceLock::new();
    REG.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The global settings added servers inherit (TLS defaults), set once
/// at start-up.
static DEFAULTS: OnceLock<config::DynamicServerDefaults> = OnceLock::new();

/// Keeps what `add server` needs from the configuration.
pub(crate) fn set_defaults(cfg: &config::Config) {
    let _ = DEFAULTS.set(cfg.dynamic_server_defaults());
}

/// `add server`: parses the options, adds the server (in maintenance).
pub(crate) fn add(
    shared: &Shared,
    bi: usize,
    name: &str,
    args: &[String],
) -> Result<String, String> {
    let be = shared.backends.get(bi).ok_or("No such backend.")?;
    let defaults = DEFAULTS.get().cloned().unwrap_or_default();
    let cfg = config::parse_dynamic_server(name, args, &defaults)?;
    let addr = match &cfg.addr {
        config::ServerAddr::Ip(a) => *a,
        // A name is kept, never resolved (HAProxy 2.6): the server has
        // no address, only the port.
        config::ServerAddr::Name(_, port) => SocketAddr::from(([0, 0, 0, 0], *port)),
        // Connections go to the socket; the IP address is a placeholder.
        _ => SocketAddr::from(([0, 0, 0, 0], 0)),
    };
    let srv = be.add_server(&cfg, addr).map_err(|e| e.to_string())?;
    registry().insert(srv.conf.id, Added { cfg, checker: None });
    Ok("New server registered.".into())
}

/// `del server`: removes a server in maintenance with nothing on it, and
/// stops its checks.
pub(crate) fn del(be: &Backend, name: &str) -> Result<String, String> {
    let srv = be.server_by_name(name).ok_or("No such server.")?;
    be.remove_server(srv.conf.id).map_err(|e| e.to_string())?;
    // Dropping the handle stops the checker thread.
    let gone = registry().remove(&srv.conf.id);
    drop(gone);
    Ok("Server deleted.".into())
}

/// `enable health` / `disable health`. Servers of the configuration run
/// their checks from start-up: enabling them is a no-op, pausing them is
/// not supported. A server added with `check` starts its checks on
/// `enable health` and stops them on `disable health`.
pub(crate) fn set_health(be: &Arc<Backend>, name: &str, on: bool) -> Result<(), String> {
    let srv = be.server_by_name(name).ok_or("No such server.")?;
    let not_configured = if on {
        "Health check was not configured on this server, cannot enable."
    } else {
        "Health check was not configured on this server, cannot disable."
    };
    let mut reg = registry();
    let Some(added) = reg.get_mut(&srv.conf.id) else {
        return match (srv.conf.check, on) {
            (false, _) => Err(not_configured.into()),
            (true, true) => Ok(()),
            (true, false) => Err(
                "Pausing the checks of a configured server is not supported by Fairlead yet."
                    .into(),
            ),
        };
    };
    if !added.cfg.check {
        return Err(not_configured.into());
    }
    if !on {
        added.checker = None;
        return Ok(());
    }
    if added.checker.is_none() {
        added.checker = crate::checks::start_dynamic(be, &added.cfg, &srv)
            .map_err(|e| format!("cannot start the checks: {e}"))?;
    }
    Ok(())
}

/// Whether the checks of the server with id `id` run: for a server added
/// at run time, once `enable health` started them; `None` for the
/// servers of the configuration.
pub(crate) fn checks_running(id: ServerId) -> Option<bool> {
    registry().get(&id).map(|a| a.checker.is_some())
}
