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
//! The operational state is not restored: checked servers start as the
//! configuration says and their checks decide.

use crate::Shared;
use fairlead_backend::{AdminState, Backend, ServerCommand};
use fairlead_config::{Config, ServerAddr};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;

/// One server line of a state file (version 1), the fields Fairlead uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedServer {
    pub backend: String,
    pub server: String,
    pub addr: Option<IpAddr>,
    pub admin_state: u8,
    pub uweight: u32,
    pub iweight: u32,
    pub port: u16,
}

/// Parses a state file: the version line (`1`), then a server per line;
/// `#` lines are comments. Lines that do not parse are skipped.
pub(crate) fn parse(text: &str) -> Result<Vec<SavedServer>, String> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("1") => {}
        Some(v) => return Err(format!("unknown version '{v}'")),
        None => return Err("empty file".into()),
    }
    let mut out = Vec::new();
    for line in lines {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let (Ok(admin_state), Ok(uweight), Ok(iweight)) = (
            get(6).parse::<u8>(),
            get(7).parse::<u32>(),
            get(8).parse::<u32>(),
        ) else {
            continue;
        };
        out.push(SavedServer {
            backend: get(1).to_string(),
            server: get(3).to_string(),
            addr: get(4).parse().ok(),
            admin_state,
            uweight,
            iweight,
            port: get(18).parse().unwrap_or(0),
        });
    }
    Ok(out)
}

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
    } else if !scfg.disabled && srv.admin.maint.load(Ordering::Relaxed) {
        let _ = be.apply(id, ServerCommand::State(AdminState::Ready));
    }
    if s.iweight == scfg.weight {
        let _ = be.apply(id, ServerCommand::Weight(s.uweight));
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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n\
2 rr 1 a 127.0.0.9 2 0 1 1 4 1 0 2 0 0 0 0 - 9999 - 0 0 - - 0\n\
2 rr 2 b 127.0.0.1 2 8 3 5 1 1 0 2 0 0 0 0 - 8002 - 0 0 - - 0\n\
2 rr 6 h - 0 1 1 1 15 1 0 0 0 0 0 0 - 0 - 0 0 - - 0\n\
garbage\n";

    #[test]
    fn parses_haproxy_dumps() {
        let v = parse(FILE).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            SavedServer {
                backend: "rr".into(),
                server: "a".into(),
                addr: Some("127.0.0.9".parse().unwrap()),
                admin_state: 0,
                uweight: 1,
                iweight: 1,
                port: 9999,
            }
        );
        assert_eq!((v[1].admin_state, v[1].uweight, v[1].iweight), (8, 3, 5));
        assert_eq!((v[2].addr, v[2].port), (None, 0));
        assert_eq!(parse("2\n").unwrap_err(), "unknown version '2'");
        assert!(parse("").is_err());
    }

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
            admin_state: admin,
            uweight: uw,
            iweight: iw,
            port,
        };
        // An IP from the configuration stays; the port follows the file;
        // `disabled` was removed from the configuration: ready.
        let notes = apply_one(&cfg, &be, &saved("a", "127.0.0.9", 0x04, 1, 1, 9999));
        assert!(notes.is_empty(), "{notes:?}");
        let a = be.server_by_name("a").unwrap();
        assert_eq!(a.admin.addr.load().to_string(), "127.0.0.1:9999");
        assert!(!a.admin.maint.load(Ordering::Relaxed));
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
}
