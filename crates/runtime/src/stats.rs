//! Statistics: a snapshot of the live state for `fairlead-stats` (CSV, JSON,
//! HTML, Prometheus), and the frontends' own services (stats page,
//! Prometheus exporter).

use crate::Shared;
use fairlead_backend::counters::{Counters as Live, C};
use fairlead_backend::{Backend, Server};
use fairlead_config::PrometheusService;
use fairlead_l7::{LocalService, ServiceRequest, ServiceResponse};
use fairlead_stats::{
    CheckInfo, Counters, Mode, ProcessInfo, ProxyKind, ProxyStats, ServerState, ServerStats,
    Snapshot,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// Process facts that do not change while running.
pub struct ProcessFacts {
    pub started: Instant,
    pub started_wall: SystemTime,
    pub nbthread: u32,
    pub ulimit_n: u64,
}

fn counters(c: &Live) -> Counters {
    Counters {
        stot: c.get(C::Stot),
        bin: c.get(C::Bin),
        bout: c.get(C::Bout),
        dreq: c.get(C::Dreq),
        dresp: c.get(C::Dresp),
        ereq: c.get(C::Ereq),
        econ: c.get(C::Econ),
        eresp: c.get(C::Eresp),
        wretr: c.get(C::Wretr),
        wredis: c.get(C::Wredis),
        lbtot: c.get(C::Lbtot),
        req_tot: c.get(C::ReqTot),
        hrsp_1xx: c.get(C::Hrsp1xx),
        hrsp_2xx: c.get(C::Hrsp2xx),
        hrsp_3xx: c.get(C::Hrsp3xx),
        hrsp_4xx: c.get(C::Hrsp4xx),
        hrsp_5xx: c.get(C::Hrsp5xx),
        hrsp_other: c.get(C::HrspOther),
        cli_abrt: c.get(C::CliAbrt),
        srv_abrt: c.get(C::SrvAbrt),
        connect: c.get(C::ConnNew),
        reuse: c.get(C::ConnReused),
        ..Default::default()
    }
}

fn latency(l: &fairlead_backend::counters::Latencies) -> fairlead_stats::Latency {
    fairlead_stats::Latency {
        queue: Some(l.queue.snapshot()),
        connect: Some(l.connect.snapshot()),
        response: Some(l.response.snapshot()),
        total: Some(l.total.snapshot()),
    }
}

/// Splits the checker's `L7STS/503 in 3ms` into the CSV's separate
/// `check_status` (`L7STS`), `check_code` (503) and `check_duration` (3).
fn check_info(text: &str) -> CheckInfo {
    let (head, ms) = match text.split_once(" in ") {
        Some((h, d)) => (h, d.strip_suffix("ms").and_then(|d| d.parse().ok())),
        None => (text, None),
    };
    let (status, code) = match head.split_once('/') {
        Some((st, c)) => (st, c.parse().ok()),
        None => (head, None),
    };
    CheckInfo {
        status: status.to_string(),
        code,
        duration_ms: ms,
        ..Default::default()
    }
}

fn server_stats(be: &Backend, s: &Server) -> ServerStats {
    let checked = s.conf.check;
    // the operator's maintenance or DNS's
    let maint = s.admin.maint.load(Ordering::Relaxed) || s.admin.dns_maint.load(Ordering::Relaxed);
    let state = if maint {
        ServerState::Maint
    } else if s.health.is_nolb() && !s.admin.drain.load(Ordering::Relaxed) {
        ServerState::NoLb
    } else if s.admin.drain.load(Ordering::Relaxed) || s.health.is_drain() {
        ServerState::Drain
    } else if !checked && s.health.is_up() {
        // An unchecked server is DOWN only as a state file restored it.
        ServerState::NoCheck
    } else if s.health.is_up() {
        ServerState::Up
    } else {
        ServerState::Down
    };
    let mut c = counters(&s.metrics.counters);
    c.scur = u64::from(s.metrics.cur.load(Ordering::Relaxed));
    c.qcur = be.queue_len(s) as u64;
    c.latency = latency(&s.metrics.latency);
    let maxconn = s.admin.maxconn.load(Ordering::Relaxed);
    // NOLB leaves the server's own weight shown (HAProxy keeps its
    // effective weight; only the backend's total drops it).
    let weight = if state == ServerState::NoLb {
        u64::from(s.admin.weight.load(Ordering::Relaxed))
    } else {
        u64::from(s.eweight())
    };
    ServerStats {
        name: s.conf.name.clone(),
        sid: s.conf.puid,
        state,
        weight,
        uweight: u64::from(s.admin.weight.load(Ordering::Relaxed)),
        backup: s.conf.backup,
        check: checked.then(|| check_info(&s.health.status_text())),
        lastchg_secs: s.health.last_change_secs(),
        slim: (maxconn > 0).then_some(u64::from(maxconn)),
        qlimit: (s.conf.maxqueue > 0).then_some(u64::from(s.conf.maxqueue)),
        // HAProxy shows `unix` for a UNIX socket server, nothing for one
        // without an address (added by name).
        addr: match (&s.conf.unix, &s.conf.unresolved) {
            (Some(_), _) => Some("unix".to_string()),
            (None, Some(_)) => None,
            (None, None) => Some(s.admin.addr.load().to_string()),
        },
        cookie: s.conf.cookie.clone(),
        counters: c,
        ..Default::default()
    }
}

/// Takes a snapshot of every frontend, backend and server.
pub fn snapshot(shared: &Shared, facts: &ProcessFacts, rates: &Rates) -> Snapshot {
    let mut proxies = Vec::new();
    let mut iid = 0u32;
    let mut cum_conns = 0;
    let mut cum_req = 0;
    let (mut ssl_hs, mut ssl_resumed, mut ssl_failed) = (0, 0, 0);
    for fe in &shared.frontends {
        ssl_hs += fe.tls_stats.handshakes.load(Ordering::Relaxed);
        ssl_resumed += fe.tls_stats.resumed.load(Ordering::Relaxed);
        ssl_failed += fe.tls_stats.failures.load(Ordering::Relaxed);
        iid += 1;
        let live = &fe.front.counters;
        cum_conns += live.get(C::Stot);
        cum_req += live.get(C::ReqTot);
        let mut c = counters(live);
        c.scur = u64::from(fe.limit.cur.load(Ordering::Relaxed));
        c.smax = u64::from(fe.smax.load(Ordering::Relaxed));
        c.conn_tot = c.stot;
        c.dcon = fe.front.denied_conn.load(Ordering::Relaxed);
        c.dses = fe.front.denied_sess.load(Ordering::Relaxed);
        if let Some(r) = rates.frontends.get(iid as usize - 1) {
            r.fill(&mut c);
        }
        proxies.push(ProxyStats {
            name: fe.front.name.to_string(),
            iid,
            kind: ProxyKind::Frontend,
            mode: match fe.front.mode {
                fairlead_config::Mode::Http => Mode::Http,
                fairlead_config::Mode::Tcp => Mode::Tcp,
            },
            status: if fe.limit.full() { "FULL" } else { "OPEN" }.into(),
            slim: Some(u64::from(fe.limit.max)),
            counters: c,
            ..Default::default()
        });
    }
    for (bi, be) in shared.backends.iter().enumerate() {
        let id = proxies
            .iter()
            .find(|p| p.name == be.name)
            .map(|p| p.iid)
            .unwrap_or_else(|| {
                iid += 1;
                iid
            });
        let servers: Vec<ServerStats> = be.servers().iter().map(|s| server_stats(be, s)).collect();
        let (act, bck) = be.usable_counts();
        let mut c = counters(&be.counters);
        c.scur = u64::from(be.sessions.load(Ordering::Relaxed));
        c.qcur = be.queue.len() as u64;
        c.latency = latency(&be.latency);
        if let Some(r) = rates.backends.get(bi) {
            r.fill(&mut c);
        }
        proxies.push(ProxyStats {
            name: be.name.clone(),
            iid: id,
            kind: ProxyKind::Backend,
            mode: match be.options.mode {
                fairlead_config::Mode::Http => Mode::Http,
                fairlead_config::Mode::Tcp => Mode::Tcp,
            },
            status: if act + bck > 0 { "UP" } else { "DOWN" }.into(),
            weight: servers
                .iter()
                .filter(|s| s.weight > 0 && s.state != ServerState::NoLb)
                .map(|s| s.weight)
                .sum(),
            uweight: servers.iter().map(|s| s.uweight).sum(),
            act: act as u64,
            bck: bck as u64,
            algo: format!("{:?}", be.options.balance).to_lowercase(),
            cookie: be.options.cookie.as_ref().map(|c| c.name.clone()),
            counters: c,
            servers,
            ..Default::default()
        });
    }
    let up = facts.started.elapsed().as_secs();
    let pipes = fairlead_net::splice::stats();
    Snapshot {
        process: ProcessInfo {
            name: "Fairlead".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            nbthread: facts.nbthread,
            uptime_secs: up,
            start_time_secs: facts
                .started_wall
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ulimit_n: facts.ulimit_n,
            maxsock: facts.ulimit_n,
            maxconn: u64::from(shared.global.max),
            hard_maxconn: u64::from(shared.global.max),
            curr_conns: u64::from(shared.global.cur.load(Ordering::Relaxed)),
            cum_conns,
            cum_req,
            cum_ssl_conns: ssl_hs,
            maxpipes: pipes.max as u64,
            pipes_used: pipes.used as u64,
            pipes_free: pipes.free as u64,
            ssl_reuse_pct: (ssl_resumed * 100).checked_div(ssl_hs).unwrap_or(0),
            ssl_failed_handshakes: ssl_failed,
            ..Default::default()
        },
        proxies,
        // HAProxy lists its tables in reverse declaration order.
        tables: shared
            .tables
            .iter()
            .rev()
            .map(|t| fairlead_stats::TableStats {
                name: t.name().to_string(),
                key_type: t.spec().key_type.name().to_string(),
                size: t.spec().size,
                used: t.len(),
            })
            .collect(),
    }
}

/// Which servers run active checks, per backend (for `no check` states).
/// Per-second rates of one frontend, backend or server.
#[derive(Default)]
pub struct Rate {
    pub sess: std::sync::atomic::AtomicU64,
    pub sess_max: std::sync::atomic::AtomicU64,
    pub req: std::sync::atomic::AtomicU64,
    pub req_max: std::sync::atomic::AtomicU64,
}

impl Rate {
    fn fill(&self, c: &mut Counters) {
        c.rate = self.sess.load(Ordering::Relaxed);
        c.rate_max = self.sess_max.load(Ordering::Relaxed);
        c.req_rate = self.req.load(Ordering::Relaxed);
        c.req_rate_max = self.req_max.load(Ordering::Relaxed);
        c.conn_rate = c.rate;
        c.conn_rate_max = c.rate_max;
    }
}

/// Rates of every object, in snapshot order: frontends, then backends,
/// each followed by nothing; servers are in `servers[backend][server]`.
#[derive(Default)]
pub struct Rates {
    pub frontends: Vec<Rate>,
    pub backends: Vec<Rate>,
    pub servers: Vec<Vec<Rate>>,
}

impl Rates {
    pub fn for_shared(shared: &Shared) -> Rates {
        Rates {
            frontends: shared.frontends.iter().map(|_| Rate::default()).collect(),
            backends: shared.backends.iter().map(|_| Rate::default()).collect(),
            servers: shared
                .backends
                .iter()
                .map(|b| b.servers().iter().map(|_| Rate::default()).collect())
                .collect(),
        }
    }
}

/// Updates the rates once per second from the counters' totals, on its own
/// thread (HAProxy's rates are events over the last second).
pub fn start_rate_ticker(hub: Arc<Hub>) {
    let _ = std::thread::Builder::new()
        .name("fairlead-rates".into())
        .spawn(move || {
            let sh = &hub.shared;
            let totals = |c: &Live| (c.get(C::Stot), c.get(C::ReqTot));
            let all = || -> Vec<(u64, u64)> {
                let mut v: Vec<(u64, u64)> = sh
                    .frontends
                    .iter()
                    .map(|f| totals(&f.front.counters))
                    .collect();
                v.extend(sh.backends.iter().map(|b| totals(&b.counters)));
                for b in &sh.backends {
                    v.extend(b.servers().iter().map(|s| totals(&s.metrics.counters)));
                }
                v
            };
            // Counters start at zero with the process, and traffic may be
            // counted before this thread first runs: the first second's
            // rate counts from zero, not from a late first sample.
            let mut prev = vec![(0, 0); all().len()];
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let now = all();
                let rates = hub
                    .rates
                    .frontends
                    .iter()
                    .chain(hub.rates.backends.iter())
                    .chain(hub.rates.servers.iter().flatten());
                for ((r, n), p) in rates.zip(&now).zip(&prev) {
                    let (s, q) = (n.0.saturating_sub(p.0), n.1.saturating_sub(p.1));
                    r.sess.store(s, Ordering::Relaxed);
                    r.sess_max.fetch_max(s, Ordering::Relaxed);
                    r.req.store(q, Ordering::Relaxed);
                    r.req_max.fetch_max(q, Ordering::Relaxed);
                }
                prev = now;
            }
        });
}

/// Snapshot source shared by the stats page, the exporter and the CLI.
pub struct Hub {
    pub shared: Arc<Shared>,
    pub facts: ProcessFacts,
    pub rates: Rates,
}

impl fairlead_stats::StatsSource for Hub {
    fn snapshot(&self) -> Snapshot {
        snapshot(&self.shared, &self.facts, &self.rates)
    }

    /// The stats page's admin form, through the same server commands as
    /// the runtime API ([`fairlead_backend::command`]). The health and
    /// agent actions and `shutdown` are not supported yet: they change
    /// nothing (`NONE`).
    fn apply(&self, req: &fairlead_stats::AdminRequest) -> fairlead_stats::AdminResult {
        use fairlead_backend::{AdminState as A, ServerCommand as Cmd};
        use fairlead_stats::{AdminAction, AdminResult, BackendRef};
        let name = match &req.backend {
            BackendRef::Name(n) => n.clone(),
            // The page names backends by their `iid`, as in the snapshot.
            BackendRef::Id(id) => match self
                .snapshot()
                .proxies
                .iter()
                .find(|p| p.iid == *id && p.kind == fairlead_stats::ProxyKind::Backend)
            {
                Some(p) => p.name.clone(),
                None => return AdminResult::BadParams,
            },
        };
        let Some(be) = self.shared.backends.iter().find(|b| b.name == name) else {
            return AdminResult::BadParams;
        };
        let cmd = match req.action {
            AdminAction::Ready => Cmd::State(A::Ready),
            AdminAction::Drain => Cmd::State(A::Drain),
            AdminAction::Maint => Cmd::State(A::Maint),
            _ => return AdminResult::None,
        };
        let mut applied = 0;
        for srv in &req.servers {
            let done = be
                .server_by_name(srv)
                .is_some_and(|s| be.apply(s.conf.id, cmd).is_ok());
            applied += usize::from(done);
        }
        match applied {
            0 => AdminResult::None,
            n if n == req.servers.len() => AdminResult::Done,
            _ => AdminResult::Partial,
        }
    }
}

/// A frontend's local services.
pub struct Services {
    pub hub: Arc<Hub>,
    pub stats: Option<fairlead_stats::StatsConfig>,
    pub prometheus: Option<PrometheusService>,
}

impl Services {
    pub fn new(hub: Arc<Hub>, o: &fairlead_config::ProxyOptions) -> Option<Services> {
        let stats = o
            .stats
            .as_ref()
            .filter(|s| s.enabled)
            .map(|s| fairlead_stats::StatsConfig {
                uri: s.uri.clone(),
                realm: s.realm.clone(),
                users: s.users.clone(),
                refresh: s.refresh.map(|r| r.as_secs() as u32),
                admin: false,
                show_legends: s.show_legends,
                hide_version: s.hide_version,
            });
        if stats.is_none() && o.prometheus.is_none() {
            return None;
        }
        Some(Services {
            hub,
            stats,
            prometheus: o.prometheus.clone(),
        })
    }
}

fn path_of(uri: &[u8]) -> &[u8] {
    let end = uri.iter().position(|&b| b == b'?').unwrap_or(uri.len());
    &uri[..end]
}

impl LocalService for Services {
    fn handle(&self, req: &ServiceRequest<'_>) -> Option<ServiceResponse> {
        if let Some(p) = &self.prometheus {
            let path = path_of(req.uri);
            let hit = match &p.path {
                None => true,
                Some(want) if p.prefix => path.starts_with(want.as_bytes()),
                Some(want) => path == want.as_bytes(),
            };
            if hit {
                let snap = fairlead_stats::StatsSource::snapshot(&*self.hub);
                let mut body = Vec::with_capacity(16 * 1024);
                fairlead_stats::prometheus(&snap, &mut body);
                return Some(ServiceResponse {
                    status: 200,
                    content_type: fairlead_stats::PROMETHEUS_CONTENT_TYPE,
                    headers: Vec::new(),
                    body,
                });
            }
        }
        let base = self.stats.as_ref()?;
        if !fairlead_stats::matches_stats_uri(req.uri, &base.uri) {
            return None;
        }
        // `stats http-request` (first matching rule), then `stats admin if
        // <cond>`: decided per request by the rules.
        use fairlead_rules::proxy::StatsRule;
        let mut cfg = std::borrow::Cow::Borrowed(base);
        match &req.stats.rule {
            Some(StatsRule::Deny) => return Some(forbidden()),
            Some(StatsRule::Auth { realm }) => {
                let r = fairlead_stats::unauthorized(realm.as_deref().unwrap_or(&base.realm));
                return Some(ServiceResponse {
                    status: r.status,
                    content_type: r.content_type,
                    headers: r.headers,
                    body: r.body,
                });
            }
            // `allow` skips `stats auth`, HAProxy's implicit last rule.
            Some(StatsRule::Allow) => cfg.to_mut().users.clear(),
            None => {}
        }
        if let Some(a) = req.stats.admin.filter(|&a| a != base.admin) {
            cfg.to_mut().admin = a;
        }
        let cfg = &*cfg;
        let r = fairlead_stats::handle_stats_request(
            &fairlead_stats::StatsRequest {
                method: req.method,
                uri: req.uri,
                authorization: req.authorization,
                body: req.body,
            },
            cfg,
            &*self.hub,
        )?;
        Some(ServiceResponse {
            status: r.status,
            content_type: r.content_type,
            headers: r.headers,
            body: r.body,
        })
    }
}

/// The 403 a `stats http-request deny` rule answers.
fn forbidden() -> ServiceResponse {
    ServiceResponse {
        status: 403,
        content_type: "text/html",
        headers: vec![("Cache-Control", "no-cache".into())],
        body: b"<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n".to_vec(),
    }
}

/// The host name (`node` in `show info` and the stats page).
pub fn hostname() -> String {
    fairlead_log::system_hostname()
}
