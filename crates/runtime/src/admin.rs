//! The runtime API (`stats socket`): `fairlead-admin`'s commands executed
//! against the live servers and counters.
//!
//! Supported: `show info`, `show stat`, `show servers state`, `get weight`,
//! `enable/disable server`, `set server ... state|weight|addr`,
//! `set maxconn server`, `show sess`, `shutdown session`, `show errors`
//! (the last invalid request of each frontend), `show pools` (the I/O
//! buffer pools of all workers), `set profiling tasks on|off|auto` and
//! `show profiling` (calls, CPU time and scheduling latency per task
//! kind), and the map and ACL commands over the configuration's pattern
//! registry (`show|get|add|set|del|clear|prepare|commit map|acl`), and
//! `add server`, `del server`, `enable|disable health` for servers managed
//! at run time (see `crate::dynamic`). Not yet: forced health and agent
//! states.
//!
//! CLI edits of maps and ACL files survive a master-worker reload: after
//! each one the worker saves the current entries of every file edited on
//! the CLI to the file the master named ([`PatternState`]), and the next
//! worker restores them before it serves (files the new configuration
//! still uses, with a warning for the others).

use crate::stats::Hub;
use fairlead_admin::{
    admin_flags, check_flags, AdminApi, AdminState, BackendInfo, ErrorReport, OpState,
    OutputFormat, PatEdit, PatEntry, PatError, PatHit, PatLookup, PatRefInfo, PatTarget, PoolInfo,
    ProfilingReport, ServerChange, ServerInfo, ServerRef, SessionInfo, StatRequest, TasksProfiling,
    TasksProfilingState,
};
use fairlead_rules::pattern::{PatRef, Registry};
use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
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
                    out.push((&fe.front.name, *addr, ctx));
                }
            }
        }
        out
    }

    /// The reference with file name `path`.
    fn pattern(&self, path: &str) -> Option<Arc<PatRef>> {
        self.hub
            .shared
            .patterns
            .refs()
            .into_iter()
            .find(|r| r.path() == path)
    }
}

/// Applies a CLI edit to one reference. `Ok` holds the new version of a
/// `prepare`, 0 otherwise.
fn apply_edit(r: &PatRef, edit: &PatEdit) -> Result<u32, PatError> {
    let target = |t: &PatTarget| match t {
        PatTarget::Key(k) => k.clone(),
        PatTarget::Id(id) => format!("#{id:x}"),
    };
    match edit {
        PatEdit::Add {
            version: None,
            rows,
        } => {
            let rows: Vec<(&str, Option<&str>)> = rows
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref()))
                .collect();
            r.add_many(&rows).map_err(PatError::Invalid)?;
        }
        PatEdit::Add {
            version: Some(ver),
            rows,
        } => {
            for (k, v) in rows {
                r.add_versioned(*ver, k, v.as_deref())
                    .map_err(PatError::Invalid)?;
            }
        }
        PatEdit::Set { target: t, value } => {
            // The registry refuses an edit for one reason besides a value
            // that does not parse: no entry is designated.
            if let Err(e) = r.set(&target(t), value) {
                return Err(if e == "entry not found" {
                    PatError::NotFound
                } else {
                    PatError::Invalid(format!("unable to parse '{value}'"))
                });
            }
        }
        PatEdit::Del { target: t } => {
            r.del(&target(t)).map_err(|_| PatError::NotFound)?;
        }
        PatEdit::Clear { version: None } => r.clear(),
        PatEdit::Clear { version: Some(v) } => r.clear_version(*v),
        PatEdit::Prepare => return Ok(r.prepare()),
        PatEdit::Commit { version } => r.commit(*version).map_err(PatError::Invalid)?,
    }
    Ok(0)
}

/// One server as `show servers state` and the CLI's checks see it.
fn server_info(s: &fairlead_backend::Server) -> ServerInfo {
    let addr = **s.admin.addr.load();
    let mut admin = 0;
    let maint = s.admin.maint.load(Ordering::Relaxed);
    if maint {
        admin |= admin_flags::FMAINT;
    }
    if s.admin.drain.load(Ordering::Relaxed) {
        admin |= admin_flags::FDRAIN;
    }
    let dns_maint = s.admin.dns_maint.load(Ordering::Relaxed);
    if dns_maint {
        admin |= admin_flags::RMAINT;
    }
    // Configured servers check from start-up; added ones once `enable
    // health` started their checks.
    let running = crate::dynamic::checks_running(s.conf.id).unwrap_or(true);
    let check_state = match (s.conf.check, running) {
        (false, _) => 0,
        (true, false) => check_flags::CONFIGURED,
        (true, true) => check_flags::CONFIGURED | check_flags::ENABLED,
    };
    ServerInfo {
        id: s.conf.puid,
        name: s.conf.name.clone(),
        forced_id: false,
        // A UNIX socket server, or one added by name, has no IP address
        // (HAProxy prints `-`).
        addr: (s.conf.unix.is_none() && s.conf.unresolved.is_none()).then(|| addr.ip()),
        port: addr.port(),
        // HAProxy's operational state is STOPPED in maintenance.
        op_state: if !maint && !dns_maint && s.health.is_up() {
            OpState::Running
        } else {
            OpState::Stopped
        },
        admin_state: admin,
        uweight: s.admin.weight.load(Ordering::Relaxed),
        iweight: s.conf.initial_weight,
        since_last_change: Duration::from_secs(s.health.last_change_secs()),
        check_status: 0,
        check_result: 0,
        check_health: s.health.check_health(),
        check_state,
        agent_state: 0,
        fqdn: crate::dns::fqdn_of(s.conf.id).or_else(|| s.conf.unresolved.clone()),
        use_ssl: false,
        check_port: 0,
        check_addr: None,
        agent_addr: None,
        agent_port: 0,
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
            ("Maxpipes", p.maxpipes.to_string()),
            ("PipesUsed", p.pipes_used.to_string()),
            ("PipesFree", p.pipes_free.to_string()),
            (
                "Stopping",
                u8::from(self.hub.shared.stopping.load(Ordering::Relaxed)).to_string(),
            ),
            ("node", crate::stats::hostname()),
            // Fairlead's own: bytes the io_uring workers forwarded
            // without a copy (docs/io-uring.md); 0 on epoll.
            ("UringLentBytes", fairlead_net::uring_lent().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    /// `show info typed` (HAProxy's positions, tags and types); `json`
    /// and `desc` are not supported yet.
    fn info_formatted(&self, format: OutputFormat, desc: bool) -> Option<String> {
        if format != OutputFormat::Typed || desc {
            return None;
        }
        let snap = fairlead_stats::StatsSource::snapshot(&*self.hub);
        let mut out = Vec::new();
        fairlead_stats::info_typed(&snap, &mut out);
        Some(String::from_utf8_lossy(&out).into_owned())
    }

    fn stat(&self, req: &StatRequest) -> Result<String, String> {
        let snap = fairlead_stats::StatsSource::snapshot(&*self.hub);
        let mut out = Vec::new();
        match req.format {
            OutputFormat::Json => fairlead_stats::json(&snap, &mut out),
            OutputFormat::Default => fairlead_stats::csv(&snap, &mut out),
            OutputFormat::Typed => fairlead_stats::stat_typed(&snap, &mut out),
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn backends(&self) -> Vec<BackendInfo> {
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
                servers: be.servers().iter().map(|s| server_info(s)).collect(),
            })
            .collect()
    }

    fn server_change(&self, target: &ServerRef, change: ServerChange) -> Result<(), String> {
        use fairlead_backend::{AdminState as A, ServerCommand as Cmd};
        let be = self
            .hub
            .shared
            .backends
            .get(target.backend_idx)
            .ok_or("No such backend.")?;
        // By name: the stable identity a position in the list is not.
        let s = be.server_by_name(&target.server).ok_or("No such server.")?;
        let cmd = match change {
            ServerChange::Admin(AdminState::Ready) => Cmd::State(A::Ready),
            ServerChange::Admin(AdminState::Drain) => Cmd::State(A::Drain),
            ServerChange::Admin(AdminState::Maint) => Cmd::State(A::Maint),
            ServerChange::Weight(w) => Cmd::Weight(w),
            ServerChange::Maxconn(n) => Cmd::Maxconn(n),
            ServerChange::Addr { ip, port } => Cmd::Addr { ip, port },
            ServerChange::Health(_) | ServerChange::Agent { .. } => Cmd::ForceHealth,
        };
        be.apply(s.conf.id, cmd)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn add_server(
        &self,
        backend_idx: usize,
        server: &str,
        args: &[String],
    ) -> Result<String, String> {
        crate::dynamic::add(&self.hub.shared, backend_idx, server, args)
    }

    fn del_server(&self, target: &ServerRef) -> Result<String, String> {
        let be = self
            .hub
            .shared
            .backends
            .get(target.backend_idx)
            .ok_or("No such backend.")?;
        crate::dynamic::del(be, &target.server)
    }

    fn set_health_checks(&self, target: &ServerRef, on: bool) -> Result<(), String> {
        let be = self
            .hub
            .shared
            .backends
            .get(target.backend_idx)
            .ok_or("No such backend.")?;
        crate::dynamic::set_health(be, &target.server, on)
    }

    fn show_resolvers(&self, name: Option<&str>) -> Result<String, String> {
        crate::dns::show(name)
    }

    fn set_server_fqdn(&self, target: &ServerRef, fqdn: &str) -> Result<String, String> {
        crate::dns::set_fqdn(&self.hub.shared, target.backend_idx, &target.server, fqdn)
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
                    frontend: fe.front.name.to_string(),
                    backend: Some(fe.front.routes.default_be.name.clone()),
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
                e.ctl.shutdown();
                return true;
            }
        }
        false
    }

    fn activity(&self) -> Vec<(String, Vec<u64>)> {
        let a = self.hub.shared.spread.activity();
        vec![
            ("accepted".into(), a.accepted),
            ("accq_pushed".into(), a.pushed),
            ("curr_conns".into(), a.conns),
        ]
    }

    fn pools(&self) -> Vec<PoolInfo> {
        let info = |name: &str, (size, allocated, used): (usize, usize, usize)| PoolInfo {
            name: name.into(),
            size: size as u64,
            allocated: allocated as u64,
            used: used as u64,
            failed: 0,
        };
        let mut out = vec![
            info("buffer", fairlead_net::pool::totals()),
            info("tls_buffer", fairlead_net::pool::tls_totals()),
        ];
        // The io_uring rings' receive buffers, all in the rings' hands.
        let (size, lent) = fairlead_net::pool::lent_totals();
        if lent > 0 {
            out.push(info("uring_recv", (size, lent, lent)));
        }
        out
    }

    fn errors(&self) -> ErrorReport {
        let mut report = ErrorReport::default();
        for (i, fe) in self.hub.shared.frontends.iter().enumerate() {
            let cap = &fe.front.errors;
            report.total += cap.total.load(Ordering::Relaxed);
            let Ok(last) = cap.last.lock() else { continue };
            if let Some(c) = last.as_ref() {
                report.errors.push(fairlead_admin::CapturedError {
                    when: c.when,
                    proxy: fe.front.name.to_string(),
                    proxy_id: i as i32 + 1,
                    side: fairlead_admin::ErrorSide::Request,
                    other: Some((fe.front.routes.default_be.name.clone(), -1)),
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

    fn table_command(&self, words: &[&str]) -> Option<Result<String, String>> {
        // HAProxy lists its tables in reverse declaration order.
        let tables: Vec<fairlead_stick::Table> =
            self.hub.shared.tables.iter().rev().cloned().collect();
        fairlead_stick::cli::table_command(&tables, words, crate::stick_now())
    }

    fn pattern_refs(&self) -> Vec<PatRefInfo> {
        self.hub
            .shared
            .patterns
            .refs()
            .iter()
            .map(|r| {
                let (curr_ver, next_ver) = r.versions();
                let (acl, map, two) = (r.used_by_acl(), r.used_by_map(), r.is_two_column());
                // A file only actions use (`set-map`, `add-acl`...) is
                // listed by its number of columns.
                let unused = !acl && !map;
                PatRefInfo {
                    id: i64::from(r.id()),
                    path: r.path().to_string(),
                    map: map || (unused && two),
                    acl: acl || (unused && !two),
                    two_column: two,
                    curr_ver,
                    next_ver,
                    entry_cnt: r.entry_count() as u64,
                }
            })
            .collect()
    }

    fn pattern_entries(&self, path: &str, version: Option<u32>) -> Vec<PatEntry> {
        let Some(r) = self.pattern(path) else {
            return Vec::new();
        };
        let entries = match version {
            None => r.entries(),
            Some(v) => r.version_entries(v).unwrap_or_default(),
        };
        entries
            .iter()
            .map(|e| PatEntry {
                id: e.id(),
                key: e.key_str().into_owned(),
                value: e.value_str().map(|v| v.into_owned()),
            })
            .collect()
    }

    fn pattern_lookup(&self, path: &str, sample: &str) -> Vec<PatLookup> {
        let Some(r) = self.pattern(path) else {
            return Vec::new();
        };
        r.lookup_users(sample)
            .into_iter()
            .map(|u| PatLookup {
                method: u.method.name().to_string(),
                icase: u.icase,
                hit: u.entry.map(|e| PatHit {
                    tree: u.tree,
                    key: e.key_str().into_owned(),
                    value: u
                        .out_type
                        .zip(e.value_str())
                        .map(|(t, v)| (v.into_owned(), t.to_string())),
                }),
            })
            .collect()
    }

    fn pattern_edit(&self, path: &str, edit: &PatEdit) -> Result<u32, PatError> {
        let r = self.pattern(path).ok_or(PatError::UnknownRef)?;
        let out = apply_edit(&r, edit)?;
        if *edit != PatEdit::Prepare {
            let shared = &self.hub.shared;
            shared.pattern_state.edited(path, &shared.patterns);
        }
        Ok(out)
    }
}

/// The CLI edits of map and ACL files this process carries over a reload:
/// which files were edited, and the file their entries are saved to (set
/// by the master, [`crate::master::PATTERN_STATE_ENV`]).
#[derive(Debug, Default)]
pub struct PatternState {
    save_to: Option<PathBuf>,
    /// Paths of the references edited on the CLI (or restored). Held while
    /// saving, so saves happen in the order of the edits.
    edited: Mutex<BTreeSet<String>>,
}

/// First line of a saved state.
const STATE_HEADER: &str = "fairlead-patterns 1";

impl PatternState {
    /// The state of a worker started by a master: restores the entries
    /// the previous worker saved ([`crate::master::PATTERN_RESTORE_ENV`])
    /// into `reg`, and saves to the file the master named.
    pub fn from_env(reg: &Registry, quiet: bool) -> PatternState {
        let st = PatternState {
            save_to: std::env::var_os(crate::master::PATTERN_STATE_ENV).map(PathBuf::from),
            edited: Mutex::default(),
        };
        if let Some(src) = std::env::var_os(crate::master::PATTERN_RESTORE_ENV) {
            st.restore(Path::new(&src), reg, quiet);
        }
        st
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.edited.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the entries of the files saved in `src` that `reg` still
    /// uses (as files of the same kind); warns about the others.
    fn restore(&self, src: &Path, reg: &Registry, quiet: bool) {
        let text = match std::fs::read_to_string(src) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                eprintln!(
                    "[WARNING]  cannot read the map/ACL changes of the previous worker ({}): {e}",
                    src.display()
                );
                return;
            }
        };
        let snap = match decode_state(&text) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "[WARNING]  ignoring the map/ACL changes of the previous worker ({}): {e}",
                    src.display()
                );
                return;
            }
        };
        let refs = reg.refs();
        let mut edited = self.lock();
        for (path, rows) in snap {
            let two = rows.iter().any(|(_, v)| v.is_some());
            let Some(r) = refs.iter().find(|r| r.path() == path) else {
                eprintln!(
                    "[WARNING]  runtime changes to '{path}' are dropped: the new configuration does not use this file"
                );
                continue;
            };
            if two && !r.is_two_column() {
                eprintln!(
                    "[WARNING]  runtime changes to map '{path}' are dropped: the new configuration uses it as an ACL file"
                );
                continue;
            }
            match r.replace_all(&rows) {
                Ok(()) => {
                    edited.insert(path);
                }
                Err(e) => eprintln!(
                    "[WARNING]  runtime changes to '{path}' are dropped ({e}); it keeps the file's entries"
                ),
            }
        }
        if !edited.is_empty() {
            if !quiet {
                eprintln!(
                    "[NOTICE]   restored the runtime changes of {} map/ACL file(s)",
                    edited.len()
                );
            }
            self.save(&edited, reg);
        }
    }

    /// Records a CLI edit of `path` and saves every edited file's entries.
    pub fn edited(&self, path: &str, reg: &Registry) {
        if self.save_to.is_none() {
            return;
        }
        let mut edited = self.lock();
        edited.insert(path.to_string());
        self.save(&edited, reg);
    }

    /// Writes the current entries of the `edited` references, atomically
    /// (a temporary file renamed over the previous state).
    fn save(&self, edited: &BTreeSet<String>, reg: &Registry) {
        let Some(to) = &self.save_to else { return };
        let refs = reg.refs();
        let chosen: Vec<&Arc<PatRef>> = refs.iter().filter(|r| edited.contains(r.path())).collect();
        let text = encode_state(&chosen);
        let mut tmp = to.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let written = (|| {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, to)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            eprintln!(
                "[WARNING]  cannot save the map/ACL changes to {} ({e}); a reload will lose them",
                to.display()
            );
        }
    }
}

/// `s` with backslashes, blanks and control characters written `\HH`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || c == ' ' || c.is_ascii_control() {
            out.push_str(&format!("\\{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let hex = s.get(i + 1..i + 3).ok_or("truncated escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape '\\{hex}'"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// The saved state of `refs`: a header, then per reference a `file` line
/// and one `k <key>` (ACL) or `v <key> <value>` (map) line per entry.
fn encode_state(refs: &[&Arc<PatRef>]) -> String {
    let mut out = format!("{STATE_HEADER}\n");
    for r in refs {
        out.push_str(&format!("file {}\n", escape(r.path())));
        for e in r.entries() {
            let key = escape(&e.key_str());
            match e.value_str() {
                Some(v) => out.push_str(&format!("v {key} {}\n", escape(&v))),
                None => out.push_str(&format!("k {key}\n")),
            }
        }
    }
    out
}

/// A saved state as `(path, rows)`.
fn decode_state(text: &str) -> Result<fairlead_rules::pattern::Snapshot, String> {
    let mut lines = text.lines();
    if lines.next() != Some(STATE_HEADER) {
        return Err("not a saved map/ACL state".into());
    }
    let mut snap: fairlead_rules::pattern::Snapshot = Vec::new();
    for (n, line) in lines.enumerate() {
        let bad = || format!("line {}: malformed", n + 2);
        let mut w = line.split(' ');
        match (w.next(), w.next(), w.next(), w.next()) {
            (Some("file"), Some(p), None, None) => snap.push((unescape(p)?, Vec::new())),
            (Some("k"), Some(k), None, None) => {
                let rows = &mut snap.last_mut().ok_or_else(bad)?.1;
                rows.push((unescape(k)?, None));
            }
            (Some("v"), Some(k), Some(v), None) => {
                let rows = &mut snap.last_mut().ok_or_else(bad)?.1;
                rows.push((unescape(k)?, Some(unescape(v)?)));
            }
            _ => return Err(bad()),
        }
    }
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trip() {
        let dir = std::env::temp_dir().join(format!("fairlead-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hosts map");
        std::fs::write(&path, "a.example be_a\nb.example be_b\n").unwrap();
        let reg = Registry::default();
        let r = reg.load_file(path.to_str().unwrap(), true).unwrap();
        r.add("we ird\\key", Some("value with\ttab")).unwrap();
        r.add("empty", Some("")).unwrap();
        let text = encode_state(&[&r]);
        assert!(
            text.contains("v we\\20ird\\5ckey value\\20with\\09tab\n"),
            "{text}"
        );
        let snap = decode_state(&text).unwrap();
        assert_eq!(snap, reg.snapshot());
        assert!(decode_state("garbage\n").is_err());
        assert!(decode_state(&format!("{STATE_HEADER}\nk orphan\n")).is_err());
        assert!(decode_state(&format!("{STATE_HEADER}\nfile x\nv a\\4 b\n")).is_err());

        let st = PatternState {
            save_to: Some(dir.join("state")),
            edited: Mutex::default(),
        };
        st.edited(r.path(), &reg);
        r.clear();
        assert!(r.is_empty());
        let fresh = PatternState::default();
        fresh.restore(&dir.join("state"), &reg, true);
        assert_eq!(r.len(), 4);
        assert_eq!(fresh.lock().len(), 1, "restored files count as edited");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
