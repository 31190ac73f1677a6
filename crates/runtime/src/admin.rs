//! The runtime API (`stats socket`): `fairlead-admin`'s commands executed
//! against the live servers and counters.
//!
//! Supported: `show info`, `show stat`, `show servers state`, `get weight`,
//! `enable/disable server`, `set server ... state|weight|addr`,
//! `set maxconn server`, `show sess`, `shutdown session`, `show errors`
//! (the last invalid request of each frontend), `show pools` (the I/O
//! buffer pools of all workers), `set profiling tasks on|off|auto` and
//! `show profiling` (calls, CPU time and scheduling latency per task
//! kind). Not yet: forced health and agent states.

use crate::stats::Hub;
use fairlead_admin::{
    admin_flags, check_flags, AdminApi, AdminState, BackendInfo, ErrorReport, OpState,
    OutputFormat, PoolInfo, ProfilingReport, ServerChange, ServerInfo, ServerRef, SessionInfo,
    StatRequest, TasksProfiling, TasksProfilingState,
};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The process as the CLI sees it.
pub struct Admin {
    pub hub: Arc<Hub>,
}

impl Admin {
    /// Every `bind ... ssl` line's context once (one context serves all the
    /// addresses of its line), with its frontend's name and first address.
    fn tls_contexts(&self) -> Vec<(&str, SocketAddr, &Arc<fairlead_tls::BindContext>)> {
        let mut out: Vec<(&str, SocketAddr, &Arc<fairlead_tls::BindContext>)> = Vec::new();
        for fe in &self.hub.shared.frontends {
            for (addr, ctx) in &fe.tls {
                if !out.iter().any(|(_, _, c)| Arc::ptr_eq(c, ctx)) {
                    out.push((&fe.name, *addr, ctx));
                }
            }
        }
        out
    }
}

impl AdminApi for Admin {
    fn info(&self) -> Vec<(String, String)> {
        let snap = fairlead_stats::StatsSource::snapshot(&*self.hub);
        let p = &snap.process;
        let up = p.uptime_secs;
        let uptime = format!(
            "{}d {}h{:02}m{:02}s",
            up / 86400,
            up / 3600 % 24,
            up / 60 % 60,
            up % 60
        );
        [
            ("Name", "Fairlead".to_string()),
            ("Version", p.version.clone()),
            ("Release_date", String::new()),
            ("Nbthread", p.nbthread.to_string()),
            ("Nbproc", "1".into()),
            ("Process_num", "1".into()),
            ("Pid", p.pid.to_string()),
            ("Uptime", uptime),
            ("Uptime_sec", up.to_string()),
            ("Memmax_MB", "0".into()),
            ("PoolAlloc_MB", "0".into()),
            ("PoolUsed_MB", "0".into()),
            ("PoolFailed", "0".into()),
            ("Ulimit-n", p.ulimit_n.to_string()),
            ("Maxsock", p.maxsock.to_string()),
            ("Maxconn", p.maxconn.to_string()),
            ("Hard_maxconn", p.hard_maxconn.to_string()),
            ("CurrConns", p.curr_conns.to_string()),
            ("CumConns", p.cum_conns.to_string()),
            ("CumReq", p.cum_req.to_string()),
            (
                "Stopping",
                u8::from(self.hub.shared.stopping.load(Ordering::Relaxed)).to_string(),
            ),
            ("node", crate::stats::hostname()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    fn stat(&self, req: &StatRequest) -> Result<String, String> {
        let snap = fairlead_stats::StatsSource::snapshot(&*self.hub);
        let mut out = Vec::new();
        match req.format {
            OutputFormat::Json => fairlead_stats::json(&snap, &mut out),
            OutputFormat::Default => fairlead_stats::csv(&snap, &mut out),
            OutputFormat::Typed => return Err("'show stat typed' is not supported yet.".into()),
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn backends(&self) -> Vec<BackendInfo> {
        let checked = &self.hub.checked;
        self.hub
            .shared
            .backends
            .iter()
            .enumerate()
            .map(|(bi, be)| BackendInfo {
                id: bi as i32 + 1,
                name: be.name.clone(),
                forced_id: false,
                dynamic_weights: !matches!(be.options.balance, fairlead_config::Balance::StaticRr),
                servers: be
                    .servers
                    .iter()
                    .map(|s| {
                        let addr = **s.addr.load();
                        let chk = checked
                            .get(bi)
                            .and_then(|v| v.get(s.idx))
                            .copied()
                            .unwrap_or(false);
                        let mut admin = 0;
                        if s.maint.load(Ordering::Relaxed) {
                            admin |= admin_flags::FMAINT;
                        }
                        if s.drain.load(Ordering::Relaxed) {
                            admin |= admin_flags::FDRAIN;
                        }
                        ServerInfo {
                            id: s.puid,
                            name: s.name.clone(),
                            forced_id: false,
                            addr: Some(addr.ip()),
                            port: addr.port(),
                            op_state: if s.health.is_up() {
                                OpState::Running
                            } else {
                                OpState::Stopped
                            },
                            admin_state: admin,
                            uweight: s.weight.load(Ordering::Relaxed),
                            iweight: s.initial_weight,
                            since_last_change: Duration::from_secs(s.health.last_change_secs()),
                            check_status: 0,
                            check_result: 0,
                            check_health: s.health.check_health(),
                            check_state: if chk {
                                check_flags::CONFIGURED | check_flags::ENABLED
                            } else {
                                0
                            },
                            agent_state: 0,
                            fqdn: None,
                            use_ssl: false,
                            check_port: 0,
                            check_addr: None,
                            agent_addr: None,
                            agent_port: 0,
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    fn server_change(&self, target: &ServerRef, change: ServerChange) -> Result<(), String> {
        let be = self
            .hub
            .shared
            .backends
            .get(target.backend_idx)
            .ok_or("No such backend.")?;
        let s = be.servers.get(target.server_idx).ok_or("No such server.")?;
        match change {
            ServerChange::Admin(AdminState::Ready) => {
                s.maint.store(false, Ordering::Relaxed);
                s.drain.store(false, Ordering::Relaxed);
            }
            ServerChange::Admin(AdminState::Drain) => {
                s.maint.store(false, Ordering::Relaxed);
                s.drain.store(true, Ordering::Relaxed);
            }
            ServerChange::Admin(AdminState::Maint) => s.maint.store(true, Ordering::Relaxed),
            ServerChange::Weight(w) => s.weight.store(w.min(256), Ordering::Relaxed),
            ServerChange::Maxconn(n) => s.maxconn.store(n, Ordering::Relaxed),
            ServerChange::Addr { ip, port } => {
                let old = **s.addr.load();
                s.addr.store(Arc::new(std::net::SocketAddr::new(
                    ip,
                    port.unwrap_or(old.port()),
                )));
            }
            ServerChange::Health(_) | ServerChange::Agent { .. } => {
                return Err(
                    "Forcing the health or agent state is not supported by Fairlead yet.".into(),
                )
            }
        }
        be.refresh_weights();
        Ok(())
    }

    fn sessions(&self) -> Vec<SessionInfo> {
        let shared = &self.hub.shared;
        let mut out = Vec::new();
        for reg in &shared.sessions {
            let Ok(reg) = reg.lock() else { continue };
            for (&id, e) in reg.iter() {
                let fe = &shared.frontends[e.frontend];
                out.push(SessionInfo {
                    id,
                    proto: if e.client.is_ipv4() { "tcpv4" } else { "tcpv6" }.into(),
                    client: Some(e.client),
                    frontend: fe.name.clone(),
                    backend: Some(fe.backend.name.clone()),
                    server: None,
                    age: e.since.elapsed(),
                    state: "EST".into(),
                });
            }
        }
        out.sort_by_key(|s| s.id);
        out
    }

    fn shutdown_session(&self, id: u64) -> bool {
        for reg in &self.hub.shared.sessions {
            let Ok(reg) = reg.lock() else { continue };
            if let Some(e) = reg.get(&id) {
                e.abort.abort();
                return true;
            }
        }
        false
    }

    fn pools(&self) -> Vec<PoolInfo> {
        let info = |name: &str, (size, allocated, used): (usize, usize, usize)| PoolInfo {
            name: name.into(),
            size: size as u64,
            allocated: allocated as u64,
            used: used as u64,
            failed: 0,
        };
        vec![
            info("buffer", fairlead_net::pool::totals()),
            info("tls_buffer", fairlead_net::pool::tls_totals()),
        ]
    }

    fn errors(&self) -> ErrorReport {
        let mut report = ErrorReport::default();
        for (i, fe) in self.hub.shared.frontends.iter().enumerate() {
            let cap = &fe.http.errors;
            report.total += cap.total.load(Ordering::Relaxed);
            let Ok(last) = cap.last.lock() else { continue };
            if let Some(c) = last.as_ref() {
                report.errors.push(fairlead_admin::CapturedError {
                    when: c.when,
                    proxy: fe.name.clone(),
                    proxy_id: i as i32 + 1,
                    side: fairlead_admin::ErrorSide::Request,
                    other: Some((fe.backend.name.clone(), -1)),
                    server: None,
                    event: report.total,
                    client: Some(c.client),
                    offset: 0,
                    position: c.position,
                    reason: c.reason.to_string(),
                    bytes: c.bytes.clone(),
                });
            }
        }
        report
    }

    fn profiling(&self) -> ProfilingReport {
        use fairlead_net::profile;
        let on = profile::enabled();
        ProfilingReport {
            tasks: if on {
                TasksProfilingState::On
            } else {
                TasksProfilingState::Off
            },
            memory: false,
            measured: profile::started().map_or(Duration::ZERO, |s| s.elapsed()),
            stopped_ago: Duration::ZERO,
            rows: profile::report()
                .into_iter()
                .map(|(name, calls, cpu_ns, lat_ns)| fairlead_admin::TaskStat {
                    name: name.to_string(),
                    calls,
                    cpu_ns,
                    lat_ns,
                })
                .collect(),
        }
    }

    fn ssl_certs(&self) -> Vec<fairlead_admin::SslCertInfo> {
        let mut out: Vec<fairlead_admin::SslCertInfo> = Vec::new();
        for (_, _, ctx) in self.tls_contexts() {
            for d in ctx.certificates() {
                if out.iter().any(|c| c.file == d.file) {
                    continue;
                }
                out.push(fairlead_admin::SslCertInfo {
                    file: d.file,
                    serial: d.serial,
                    not_before: d.not_before,
                    not_after: d.not_after,
                    san: d.san,
                    algorithm: d.algorithm,
                    subject: d.subject,
                    issuer: d.issuer,
                });
            }
        }
        out
    }

    fn reload_ssl_certs(&self) -> Result<String, String> {
        let contexts = self.tls_contexts();
        if contexts.is_empty() {
            return Err("No TLS listener.".into());
        }
        let (mut certs, mut ok, mut failed) = (0, 0, Vec::new());
        for (fe, addr, ctx) in contexts {
            match ctx.reload() {
                Ok(n) => {
                    certs += n;
                    ok += 1;
                }
                Err(e) => failed.push(format!("frontend '{fe}' bind {addr}: {e}")),
            }
        }
        let mut out = format!("Reloaded {certs} certificate(s) on {ok} TLS listener(s).");
        if !failed.is_empty() {
            out.push_str(&format!(
                "\n{} listener(s) kept their previous certificates:\n{}",
                failed.len(),
                failed.join("\n")
            ));
            return Err(out);
        }
        Ok(out)
    }

    fn set_profiling_tasks(&self, mode: TasksProfiling) -> Result<(), String> {
        // `auto` (HAProxy turns it on under high latency) is treated as on.
        fairlead_net::profile::set_enabled(!matches!(mode, TasksProfiling::Off));
        Ok(())
    }
}
