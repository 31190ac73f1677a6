//! Server-state files (`server-state-file`, `server-state-base`,
//! `load-server-state-from-file`, `server-state-file-name`): at start-up,
//! before serving, a backend that loads a state file takes back what the
//! previous process saved with `show servers state`, as HAProxy 2.6 does:
//!
//! - the administrative state: forced maintenance (`0x01`) and forced
//!   drain (`0x08`) are restored; a server no longer in forced maintenance
//!   leaves it; the configuration's `disabled` (`0x04`) follows the new
//!   configuration;
//! - the weight, unless the configured weight changed in between (the
//!   file's `srv_iweight` differs from the new one);
//! - the port, and the IP address of a server configured by name (an
//!   address written in the configuration wins, as in HAProxy);
//! - servers the new configuration does not have (those added at run time
//!   included) are ignored: HAProxy does not re-create them either.
//!
//! - the operational state: a server saved DOWN starts DOWN; a checked
//!   one then needs `rise` successful checks, an unchecked one stays DOWN
//!   (nothing brings it back but a reload with another state file, as in
//!   HAProxy 2.6.12), and the time since the last state change.
//!
//! In master-worker mode Fairlead also writes the files itself before a
//! reload ([`dump_for_reload`]): the master asks the running worker for
//! `show servers state` on the configuration's first `stats socket` and
//! writes every backend's state file, so the operator's `show servers
//! state > file` step (HAProxy's documented procedure, which still works)
//! is not needed.

use crate::Shared;
use fairlead_backend::{AdminState, Backend, ServerCommand};
use fairlead_config::server_state::{parse, SavedServer};
use fairlead_config::{Config, ServerAddr};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Loads the state files of every backend that asks for one and applies
/// them. Problems are warnings, never fatal (as HAProxy).
pub(crate) fn apply_all(cfg: &Config, shared: &Shared, quiet: bool) {
    let warn = |m: String| {
        if !quiet {
            eprintln!("[WARNING]  config : {m}");
        }
    };
    let mut files: HashMap<String, Option<Vec<SavedServer>>> = HashMap::new();
    for (bcfg, be) in cfg.backends.iter().zip(&shared.backends) {
        let Some(path) = cfg.server_state_path(bcfg) else {
            continue;
        };
        let global = bcfg.options.load_server_state == fairlead_config::ServerStateLoad::Global;
        let saved = files.entry(path.clone()).or_insert_with(|| {
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => {
                    let what = if global { "global " } else { "" };
                    let err = fairlead_log_err(&e);
                    warn(format!(
                        "Can't open {what}server state file '{path}': {err}"
                    ));
                    return None;
                }
            };
            match parse(&text) {
                Ok(v) => Some(v),
                Err(e) => {
                    warn(format!("Can't load server state file '{path}': {e}"));
                    None
                }
            }
        });
        let Some(saved) = saved else { continue };
        for s in saved.iter().filter(|s| s.backend == be.name) {
            for m in apply_one(bcfg, be, s) {
                warn(m);
            }
        }
    }
}

/// The IP addresses the state files saved, by backend and server name:
/// what `init-addr last` takes. The files are read quietly
/// ([`apply_all`] reports their problems later).
pub(crate) fn saved_addrs(cfg: &Config) -> HashMap<(String, String), std::net::IpAddr> {
    let mut files: HashMap<String, Vec<SavedServer>> = HashMap::new();
    let mut out = HashMap::new();
    for b in &cfg.backends {
        let Some(path) = cfg.server_state_path(b) else {
            continue;
        };
        let saved = files.entry(path.clone()).or_insert_with(|| {
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| parse(&t).ok())
                .unwrap_or_default()
        });
        for s in saved.iter().filter(|s| s.backend == b.name) {
            if let Some(ip) = s.addr.filter(|ip| !ip.is_unspecified()) {
                out.insert((s.backend.clone(), s.server.clone()), ip);
            }
        }
    }
    out
}

/// `std::io::Error`'s text without the `(os error N)` suffix, as C's
/// `strerror`.
fn fairlead_log_err(e: &std::io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

/// Applies one saved server to the backend; returns the notices to print.
pub(crate) fn apply_one(
    bcfg: &fairlead_config::Backend,
    be: &Backend,
    s: &SavedServer,
) -> Vec<String> {
    const FMAINT: u8 = 0x01;
    const FDRAIN: u8 = 0x08;
    let mut notes = Vec::new();
    let (Some(srv), Some(scfg)) = (
        be.server_by_name(&s.server),
        bcfg.servers.iter().find(|c| c.name == s.server),
    ) else {
        return notes; // not in this configuration (or added at run time)
    };
    let id = srv.conf.id;
    let name = format!("{}/{}", be.name, s.server);
    if s.admin_state & FMAINT != 0 {
        let _ = be.apply(id, ServerCommand::State(AdminState::Maint));
        notes.push(format!("Server {name} remains in forced maintenance mode."));
    } else if s.admin_state & FDRAIN != 0 {
        let _ = be.apply(id, ServerCommand::State(AdminState::Drain));
        notes.push(format!("Server {name} remains in forced drain mode."));
    } else {
        // Neither forced state any more: the configuration's `disabled`
        // alone decides.
        let state = if scfg.disabled {
            AdminState::Maint
        } else {
            AdminState::Ready
        };
        if srv.admin.drain.load(Ordering::Relaxed) {
            let _ = be.apply(id, ServerCommand::State(AdminState::Ready));
        }
        let _ = be.apply(id, ServerCommand::State(state));
    }
    if s.iweight == scfg.weight {
        let _ = be.apply(id, ServerCommand::Weight(s.uweight));
    }
    if let Some(note) = restore_op_state(be, scfg, &srv, s, &name) {
        notes.push(note);
    }
    if srv.conf.unix.is_none() {
        let port = (s.port != 0).then_some(s.port);
        let by_name = matches!(scfg.addr, ServerAddr::Name(..));
        let cur = **srv.admin.addr.load();
        let ip = match s.addr {
            Some(ip) if by_name => ip,
            _ => cur.ip(),
        };
        if ip != cur.ip() || port.is_some_and(|p| p != cur.port()) {
            let _ = be.apply(id, ServerCommand::Addr { ip, port });
        }
    }
    notes
}

/// The operational state of a server, as HAProxy restores it: a server
/// saved DOWN (`srv_op_state` 0) starts DOWN, checked or not (HAProxy
/// 2.6.12 keeps an unchecked one DOWN: no check brings it back); a
/// checked one needs `rise` successful checks. The time since its last
/// change carries over. Returns HAProxy's notice for a server that
/// starts DOWN.
///
/// A server in maintenance is saved with `srv_op_state` 0 too: for an
/// unchecked one that is not a DOWN state (HAProxy makes it UP when it
/// leaves maintenance, which Fairlead's unchecked servers cannot be
/// brought back from), so it is not restored DOWN.
fn restore_op_state(
    be: &Backend,
    scfg: &fairlead_config::Server,
    srv: &fairlead_backend::Server,
    s: &SavedServer,
    name: &str,
) -> Option<String> {
    // FMAINT, IMAINT, CMAINT, RMAINT (DNS), HMAINT.
    const ANY_MAINT: u8 = 0x01 | 0x02 | 0x04 | 0x20 | 0x40;
    let checked = scfg.check || scfg.agent.is_some();
    if !checked && s.admin_state & ANY_MAINT != 0 {
        return None;
    }
    let up = s.op_state != 0;
    // SRV_ST_STOPPING: restored NOLB (up, no new balanced traffic), as
    // HAProxy does.
    let stopping = s.op_state == 3;
    srv.health.restore(up, stopping, s.since_change);
    if up {
        if stopping {
            be.refresh_weights();
        }
        return None;
    }
    be.refresh_weights();
    let (active, backup) = be.usable_counts();
    Some(format!(
        "Server {name} is DOWN, changed from server-state after a reload. {active} active and {backup} backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."
    ))
}

/// Before a reload in master-worker mode: asks the running worker for
/// `show servers state` through the first `stats socket` of `cfg` (the new
/// configuration; the old worker still owns its sockets at this point)
/// and writes the state file of every backend that loads one: the whole
/// dump for the global file, the backend's own lines for a local one.
/// Problems are warnings: the reload goes on with whatever the files hold.
pub(crate) fn dump_for_reload(cfg: &Config, quiet: bool) {
    let paths: Vec<(String, String, bool)> = cfg
        .backends
        .iter()
        .filter_map(|b| {
            let global = b.options.load_server_state == fairlead_config::ServerStateLoad::Global;
            cfg.server_state_path(b)
                .map(|p| (p, b.name.clone(), global))
        })
        .collect();
    if paths.is_empty() {
        return;
    }
    let warn = |m: String| {
        if !quiet {
            eprintln!("[WARNING]  (master) {m}");
        }
    };
    let dump = match ask_worker(cfg) {
        Ok(d) if d.starts_with("1\n") => d,
        Ok(d) => return warn(format!("unexpected 'show servers state' answer: {d:?}")),
        Err(e) => return warn(format!("cannot save the servers' state before reload: {e}")),
    };
    let mut files: HashMap<String, String> = HashMap::new();
    for (path, backend, global) in paths {
        let text = files.entry(path).or_insert_with(|| {
            dump.lines()
                .take(2)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        });
        for line in dump.lines().skip(2) {
            let be = line.split_whitespace().nth(1);
            if (global || be == Some(backend.as_str())) && !line.trim().is_empty() {
                let entry = format!("{line}\n");
                if !text.contains(&entry) {
                    text.push_str(&entry);
                }
            }
        }
    }
    for (path, text) in files {
        let tmp = format!("{path}.tmp-{}", std::process::id());
        let r = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path));
        if let Err(e) = r {
            let _ = std::fs::remove_file(&tmp);
            warn(format!("cannot write server state file '{path}': {e}"));
        }
    }
}

/// `show servers state` on the first `stats socket` of `cfg`.
fn ask_worker(cfg: &Config) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let words = cfg
        .global
        .stats_sockets
        .first()
        .map(|(_, w)| w.clone())
        .ok_or_else(|| std::io::Error::other("no 'stats socket' to ask"))?;
    let listen = fairlead_admin::parse_stats_socket(&words).map_err(std::io::Error::other)?;
    let limit = Some(std::time::Duration::from_secs(2));
    let mut out = String::new();
    match listen.addr {
        fairlead_admin::CliAddr::Unix(p) => {
            let mut s = std::os::unix::net::UnixStream::connect(p)?;
            s.set_read_timeout(limit)?;
            s.set_write_timeout(limit)?;
            s.write_all(b"show servers state\n")?;
            s.read_to_string(&mut out)?;
        }
        fairlead_admin::CliAddr::Tcp(a) => {
            let mut s =
                std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(2))?;
            s.set_read_timeout(limit)?;
            s.set_write_timeout(limit)?;
            s.write_all(b"show servers state\n")?;
            s.read_to_string(&mut out)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(cfg: &fairlead_config::Backend) -> Backend {
        let resolve = |a: &ServerAddr| match a {
            ServerAddr::Ip(a) => Ok(*a),
            _ => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], 80))),
        };
        Backend::new(cfg, &resolve, &mut 0, 1).unwrap()
    }

    #[test]
    fn applies_as_haproxy() {
        let mut cfg = fairlead_config::Backend {
            name: "rr".into(),
            ..Default::default()
        };
        let ip = |p: u16| ServerAddr::Ip(([127, 0, 0, 1], p).into());
        let mut a = fairlead_config::Server::new("a", ip(8001));
        a.disabled = true;
        let mut b = fairlead_config::Server::new("b", ip(8002));
        b.weight = 5;
        let c = fairlead_config::Server::new("c", ServerAddr::Name("app.test".into(), 80));
        cfg.servers = vec![a, b, c];
        let be = backend(&cfg);
        let saved = |srv: &str, addr: &str, admin: u8, uw: u32, iw: u32, port: u16| SavedServer {
            backend: "rr".into(),
            server: srv.into(),
            addr: addr.parse().ok(),
            op_state: 2,
            since_change: 0,
            admin_state: admin,
            uweight: uw,
            iweight: iw,
            port,
        };
        // An IP from the configuration stays; the port follows the file;
        // the configuration's `disabled` (0x04) stays in force.
        let notes = apply_one(&cfg, &be, &saved("a", "127.0.0.9", 0x04, 1, 1, 9999));
        assert!(notes.is_empty(), "{notes:?}");
        let a = be.server_by_name("a").unwrap();
        assert_eq!(a.admin.addr.load().to_string(), "127.0.0.1:9999");
        assert!(a.admin.maint.load(Ordering::Relaxed));
        // Forced drain and the weight survive.
        let notes = apply_one(&cfg, &be, &saved("b", "127.0.0.1", 0x08, 3, 5, 8002));
        assert_eq!(notes, ["Server rr/b remains in forced drain mode."]);
        let b = be.server_by_name("b").unwrap();
        assert!(b.admin.drain.load(Ordering::Relaxed));
        assert_eq!(b.admin.weight.load(Ordering::Relaxed), 3);
        // A weight changed in the configuration wins.
        apply_one(&cfg, &be, &saved("b", "127.0.0.1", 0, 9, 4, 8002));
        assert_eq!(b.admin.weight.load(Ordering::Relaxed), 3);
        assert!(!b.admin.drain.load(Ordering::Relaxed));
        // A server configured by name takes the saved address; forced
        // maintenance survives.
        let notes = apply_one(&cfg, &be, &saved("c", "10.1.2.3", 0x01, 1, 1, 80));
        assert_eq!(notes, ["Server rr/c remains in forced maintenance mode."]);
        let c = be.server_by_name("c").unwrap();
        assert_eq!(c.admin.addr.load().to_string(), "10.1.2.3:80");
        assert!(c.admin.maint.load(Ordering::Relaxed));
        // Unknown servers are ignored.
        assert!(apply_one(&cfg, &be, &saved("zz", "10.0.0.1", 1, 1, 1, 1)).is_empty());
    }

    /// HAProxy 2.6.12 restores DOWN on a server without checks too, which
    /// then stays DOWN (`set server bk/s1 health down`, saved, reloaded:
    /// `show stat` says DOWN, traffic goes to the other servers).
    #[test]
    fn unchecked_server_saved_down_stays_down() {
        let mut cfg = fairlead_config::Backend {
            name: "bk".into(),
            ..Default::default()
        };
        let ip = |p: u16| ServerAddr::Ip(([127, 0, 0, 1], p).into());
        cfg.servers = vec![
            fairlead_config::Server::new("s1", ip(8001)),
            fairlead_config::Server::new("s2", ip(8002)),
        ];
        let be = backend(&cfg);
        let saved = |srv: &str, op_state: u8| SavedServer {
            backend: "bk".into(),
            server: srv.into(),
            addr: None,
            op_state,
            since_change: 7,
            admin_state: 0,
            uweight: 1,
            iweight: 1,
            port: 0,
        };
        let notes = apply_one(&cfg, &be, &saved("s1", 0));
        assert_eq!(
            notes,
            ["Server bk/s1 is DOWN, changed from server-state after a reload. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."]
        );
        let s1 = be.server_by_name("s1").unwrap();
        assert!(!s1.is_up());
        // The saved time since the change carries over.
        assert!(s1.health.last_change_secs() >= 7);
        assert_eq!(be.usable_counts(), (1, 0));
        // Saved UP: up, no notice.
        assert!(apply_one(&cfg, &be, &saved("s2", 2)).is_empty());
        assert!(be.server_by_name("s2").unwrap().is_up());
        // Saved in maintenance (op state 0 as well): not DOWN once it
        // leaves maintenance.
        let mut maint = saved("s2", 0);
        maint.admin_state = 0x01;
        let notes = apply_one(&cfg, &be, &maint);
        assert_eq!(notes, ["Server bk/s2 remains in forced maintenance mode."]);
        let s2 = be.server_by_name("s2").unwrap();
        assert!(s2.health.is_up());
        let _ = be.apply(s2.conf.id, ServerCommand::State(AdminState::Ready));
        assert!(s2.is_up());
        // Saved stopping (op state 3): up but NOLB, out of the balancing.
        assert!(apply_one(&cfg, &be, &saved("s1", 3)).is_empty());
        let s1 = be.server_by_name("s1").unwrap();
        assert!(s1.is_up() && s1.health.is_nolb());
        assert_eq!(s1.eweight(), 0);
        assert_eq!(be.usable_counts(), (1, 0));
    }
}
