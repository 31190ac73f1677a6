//! Starts the health checker for every server with `check` or
//! `agent-check`, feeding state changes back to the balancers and logging
//! them in HAProxy's format.

use crate::Shared;
use fairlead_backend::{Backend, Server};
use fairlead_config::Config;
use fairlead_health::{CheckTarget, CheckerHandle, HealthEvent, LogFn};
use fairlead_log::Level;
use std::sync::{Arc, OnceLock};

/// The log targets of the backends (`log` lines of the backend or of its
/// defaults section), where HAProxy sends its health check lines: server
/// state changes, and with `option log-health-checks` each check whose
/// result changed.
pub(crate) struct BackendLogs {
    logger: Option<fairlead_log::Logger>,
    /// Backend name and its sink.
    sinks: Vec<(String, fairlead_log::SinkId)>,
}

impl BackendLogs {
    /// Starts a logger for the backends that have checked servers and
    /// log targets; none when no backend has both.
    fn start(cfg: &Config) -> std::io::Result<BackendLogs> {
        Self::start_for(cfg, |b| {
            b.servers.iter().any(|s| s.check || s.agent.is_some())
        })
    }

    /// Starts a logger for the backends `wanted` picks that have log
    /// targets; none when there are none.
    pub(crate) fn start_for(
        cfg: &Config,
        wanted: impl Fn(&fairlead_config::Backend) -> bool,
    ) -> std::io::Result<BackendLogs> {
        let logging: Vec<&fairlead_config::Backend> = cfg
            .backends
            .iter()
            .filter(|b| !b.options.log.targets.is_empty())
            .filter(|b| wanted(b))
            .collect();
        if logging.is_empty() {
            return Ok(BackendLogs {
                logger: None,
                sinks: Vec::new(),
            });
        }
        let sinks = logging
            .iter()
            .map(|b| crate::log_sink(&b.options.log))
            .collect();
        let logger = fairlead_log::Logger::start(crate::logger_options(cfg), sinks)?;
        Ok(BackendLogs {
            logger: Some(logger),
            sinks: logging
                .iter()
                .enumerate()
                .map(|(i, b)| (b.name.clone(), fairlead_log::SinkId(i)))
                .collect(),
        })
    }

    /// Sends `line` to the log targets of `backend` (nothing when it has
    /// none).
    pub(crate) fn send(&self, backend: &str, level: Level, line: &str) {
        let Some(logger) = &self.logger else { return };
        if let Some((_, sink)) = self.sinks.iter().find(|(n, _)| n == backend) {
            logger.emit(*sink, level, line.as_bytes());
        }
    }
}

/// The TLS settings of a server's checks: the server's own context (its
/// verification, client certificate, session cache), or, for `check-ssl`
/// on a server without `ssl`, one that does not verify. The SNI is
/// `check-sni`, else the server's fixed `sni`; the ALPN `check-alpn`, else
/// the server's `alpn`.
fn check_tls(
    scfg: &fairlead_config::Server,
    srv: &fairlead_backend::Server,
) -> std::io::Result<fairlead_health::CheckTls> {
    let own;
    let ctx = match &srv.conf.tls {
        Some(c) => c,
        None => {
            let t = fairlead_config::ServerTls {
                verify: fairlead_config::Verify::None,
                ..Default::default()
            };
            own = fairlead_tls::ServerContext::build(&t).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
            })?;
            &own
        }
    };
    let ip = srv.admin.addr.load().ip();
    let name = scfg
        .check_sni
        .as_deref()
        .and_then(|n| fairlead_tls::ServerName::try_from(n.to_string()).ok())
        .unwrap_or_else(|| ctx.server_name(None, None, ip));
    let mut config = ctx.config();
    if let Some(protos) = &scfg.check_alpn {
        // `check-alpn` replaces the server's `alpn` for checks.
        let mut c = (*config).clone();
        c.alpn_protocols = protos.iter().map(|p| p.as_bytes().to_vec()).collect();
        config = Arc::new(c);
    }
    Ok(fairlead_health::CheckTls { config, name })
}

/// The health-check target of server `srv` of backend `be` (configured
/// as `scfg`); `None` when it has neither `check` nor `agent-check`.
fn target_for(
    be: &Arc<Backend>,
    scfg: &fairlead_config::Server,
    srv: &Arc<Server>,
) -> std::io::Result<Option<CheckTarget>> {
    let Some(mut t) = CheckTarget::from_server(
        &be.name,
        scfg,
        **srv.admin.addr.load(),
        &be.options,
        srv.health.clone(),
    ) else {
        return Ok(None);
    };
    if scfg.check_uses_tls() {
        t.tls = Some(check_tls(scfg, srv)?);
    } else if srv.conf.tls.is_some() {
        // For `tcp-check connect ssl` rules.
        t.rule_tls = Some(check_tls(scfg, srv)?);
    }
    // Checks follow the server's address (DNS, `set server addr`),
    // with `addr`/`port` still applied.
    let (srv_weak, check_ip, check_port) = (Arc::downgrade(srv), scfg.check_addr, scfg.check_port);
    let fixed = t.addr;
    t.addr_source = Some(Arc::new(move || {
        srv_weak.upgrade().map_or(Some(fixed), |s| {
            // No address (added by name): the check fails as `SOCKERR`
            // without connecting, as HAProxy's does.
            s.conf.unresolved.is_none().then(|| {
                let a = **s.admin.addr.load();
                std::net::SocketAddr::new(
                    check_ip.unwrap_or(a.ip()),
                    check_port.unwrap_or(a.port()),
                )
            })
        })
    }));
    // A check that cannot connect asks the DNS again (HAProxy 2.6).
    let id = srv.conf.id;
    t.on_connect_failure = Some(Arc::new(move || crate::dns::check_cannot_connect(id)));
    let weak = Arc::downgrade(be);
    t.on_change = Arc::new(move || {
        if let Some(b) = weak.upgrade() {
            b.refresh_weights();
        }
    });
    Ok(Some(t))
}

/// The state-change logger and `spread-checks` of the configuration's
/// checks, kept for the checks of servers added at run time.
static DYNAMIC: OnceLock<(LogFn, u32)> = OnceLock::new();

/// Starts the checks of a server added at run time (`enable health`), on
/// a checker thread of its own; `None` when it has no `check`. Dropping
/// the handle stops them.
pub(crate) fn start_dynamic(
    be: &Arc<Backend>,
    scfg: &fairlead_config::Server,
    srv: &Arc<Server>,
) -> std::io::Result<Option<CheckerHandle>> {
    let Some(t) = target_for(be, scfg, srv)? else {
        return Ok(None);
    };
    let (log, spread) = DYNAMIC.get().cloned().unwrap_or_else(|| {
        let log: LogFn =
            Arc::new(|ev: HealthEvent| eprintln!("[WARNING]  {}", ev.haproxy_line(0, 0)));
        (log, 0)
    });
    fairlead_health::start(vec![t], spread, log).map(Some)
}

/// Starts the checker thread; `None` when no server is checked.
pub(crate) fn start(cfg: &Config, shared: &Shared) -> std::io::Result<Option<CheckerHandle>> {
    let log = log_fn(cfg, shared)?;
    let _ = DYNAMIC.set((log.clone(), cfg.global.spread_checks));
    let mut targets = Vec::new();
    for (bcfg, be) in cfg.backends.iter().zip(&shared.backends) {
        for (scfg, srv) in bcfg.servers.iter().zip(be.servers().iter()) {
            targets.extend(target_for(be, scfg, srv)?);
        }
    }
    if targets.is_empty() {
        return Ok(None);
    }
    fairlead_health::start(targets, cfg.global.spread_checks, log).map(Some)
}

/// What a server's state change logs: HAProxy's line on stderr and to the
/// backend's log targets.
fn log_fn(cfg: &Config, shared: &Shared) -> std::io::Result<LogFn> {
    let backends = shared.backends.clone();
    let sinks = BackendLogs::start(cfg)?;
    Ok(Arc::new(move |ev: HealthEvent| {
        let Some(b) = backends.iter().find(|b| b.name == ev.backend) else {
            return;
        };
        let (active, backup) = b.usable_counts();
        let sessions = b.server_by_name(&ev.server).map_or(0, |s| {
            s.metrics.cur.load(std::sync::atomic::Ordering::Relaxed) as usize
        });
        let line = ev.haproxy_line_full(active, backup, sessions, 0, b.queue.len());
        let (tag, level) = match (ev.is_check_report(), ev.up) {
            (true, _) => ("[WARNING] ", Level::Notice),
            (false, true) => ("[WARNING] ", Level::Notice),
            (false, false) => ("[ALERT]   ", Level::Alert),
        };
        eprintln!("{tag} {line}");
        sinks.send(&ev.backend, level, &line);
        if !ev.is_check_report() && !ev.up && active + backup == 0 {
            eprintln!(
                "[ALERT]    backend '{}' has no server available!",
                ev.backend
            );
            let msg = format!("backend {} has no server available!", ev.backend);
            sinks.send(&ev.backend, Level::Emerg, &msg);
        }
    }))
}
