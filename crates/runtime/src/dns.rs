//! Run-time DNS resolution of servers (`resolvers`, `server-template`,
//! `init-addr`), wired to the [`fairlead_dns`] engine.
//!
//! - [`prepare`], before the backends are built: applies `init-addr` to
//!   each server named by a host name that has `resolvers` or `init-addr`
//!   (`last` has no state file yet, `libc` asks the system resolver,
//!   `none` starts it without an address, in DNS maintenance), and gives
//!   `server-template` slots a placeholder address, in DNS maintenance.
//! - [`start`], once the process is set up: one thread, `fairlead-dns`,
//!   with its own tokio runtime, runs one [`Resolvers`] task per section
//!   and one task per server (or template) following its name's
//!   [`fairlead_dns::NameState`]. The events change the server's
//!   `admin.addr` (new connections go there; requests in flight finish on
//!   their connection; idle pooled connections to the old address are
//!   closed when met, see `fairlead_backend::idle::take_fitting`), its port and
//!   weight (SRV), and its DNS maintenance flag (`admin.dns_maint`, apart
//!   from the operator's `maint`), and are logged on stderr in HAProxy's
//!   words.
//! - The runtime API reads the sections (`show resolvers`) and changes a
//!   server's name (`set server be/s fqdn NAME`) through [`show`] and
//!   [`set_fqdn`].

use crate::checks::BackendLogs;
use crate::Shared;
use fairlead_backend::{Backend, ServerId as SrvId};
use fairlead_config::{Config, ServerAddr, ServerTemplate};
use fairlead_dns::server::libc_resolve;
use fairlead_dns::{
    AddrPolicy, DnsEvent, InitAddrOutcome, NameKind, NameState, Resolvers, ServerDnsOptions,
    ServerId, ServerResolver, TemplateSlots,
};
use fairlead_log::Level;
use std::collections::HashMap;
use std::io::{Error, Result};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::watch;

/// A server followed by DNS: `server NAME FQDN:PORT ... resolvers R`.
#[derive(Debug, Clone)]
pub(crate) struct DnsServer {
    be: usize,
    idx: usize,
    fqdn: String,
    opts: ServerDnsOptions,
    /// `init-addr` left it without an address.
    maint: bool,
    /// The address `init-addr` gave it.
    addr: Option<IpAddr>,
}

/// One `server-template` line of backend `be`.
#[derive(Debug, Clone)]
pub(crate) struct DnsTemplate {
    be: usize,
    template: ServerTemplate,
    opts: ServerDnsOptions,
}

/// What [`prepare`] found, for [`start`].
#[derive(Debug, Default)]
pub(crate) struct Plan {
    servers: Vec<DnsServer>,
    templates: Vec<DnsTemplate>,
    /// Servers that start in DNS maintenance: (backend, server).
    maint: Vec<(usize, usize)>,
}

/// Applies `init-addr` and gives template slots their placeholder address
/// (in place, in `cfg`), and lists what DNS follows. Fails as HAProxy does
/// when no `init-addr` method gives an address.
pub(crate) fn prepare(cfg: &mut Config, quiet: bool) -> Result<Plan> {
    let mut plan = Plan::default();
    // `init-addr last`: the addresses of the server-state files.
    let saved = crate::state_file::saved_addrs(cfg);
    for (bi, be) in cfg.backends.iter_mut().enumerate() {
        let be_name = be.name.clone();
        for (si, s) in be.servers.iter_mut().enumerate() {
            if let Some(t) = &s.template {
                s.addr = ServerAddr::Ip(SocketAddr::new(unspecified(), t.port.unwrap_or(0)));
                plan.maint.push((bi, si));
                let new_group = plan.templates.last().is_none_or(|g| {
                    g.be != bi
                        || g.template.prefix != t.prefix
                        || g.template.range != t.range
                        || g.template.fqdn != t.fqdn
                });
                if new_group {
                    plan.templates.push(DnsTemplate {
                        be: bi,
                        template: t.clone(),
                        opts: s.dns.clone(),
                    });
                }
                continue;
            }
            let ServerAddr::Name(host, port) = &s.addr else {
                continue;
            };
            if s.dns.resolvers.is_none() && s.dns.init_addr.is_none() {
                continue; // resolved once by the runtime, as before
            }
            let (host, port) = (host.clone(), *port);
            let at = format!("{}: server {be_name}/{}", s.location, s.name);
            let prefer = s.dns.prefer;
            let last = saved.get(&(be_name.clone(), s.name.clone())).copied();
            let outcome = fairlead_dns::server::resolve_init_addr(
                &s.dns.init_addr_methods(),
                &host,
                last,
                |n| libc_resolve(n, prefer),
            );
            let (addr, maint) = match outcome {
                InitAddrOutcome::Addr { ip, warning, .. } => {
                    warn(quiet, &at, warning);
                    (Some(ip), false)
                }
                InitAddrOutcome::Maintenance { warning } => {
                    warn(quiet, &at, warning);
                    (None, true)
                }
                InitAddrOutcome::Failed(e) => return Err(Error::other(format!("{at}: {e}"))),
            };
            s.addr = ServerAddr::Ip(SocketAddr::new(addr.unwrap_or_else(unspecified), port));
            if maint {
                plan.maint.push((bi, si));
            }
            if s.dns.resolvers.is_some() {
                plan.servers.push(DnsServer {
                    be: bi,
                    idx: si,
                    fqdn: host,
                    opts: s.dns.clone(),
                    maint,
                    addr,
                });
            }
        }
    }
    Ok(plan)
}

fn unspecified() -> IpAddr {
    IpAddr::V4(Ipv4Addr::UNSPECIFIED)
}

fn warn(quiet: bool, at: &str, warning: Option<String>) {
    if let (false, Some(w)) = (quiet, warning) {
        eprintln!("[WARNING]  {at}: {w}");
    }
}

/// Per followed server (backend, server): the name it resolves, and how
/// to change it.
type Names = HashMap<SrvId, (String, watch::Sender<String>)>;

/// Where a followed server's name is resolved: its section, the kind of
/// name, and the name itself for a template slot (a `server` line's name
/// is in [`Names`], as `set server fqdn` changes it).
type Follow = (Resolvers, NameKind, Option<String>);

/// The DNS state the runtime API reads.
struct DnsState {
    resolvers: Vec<Resolvers>,
    /// The name each followed server resolves, and how to change it.
    names: Mutex<Names>,
    /// Where each followed server (template slots included) resolves.
    follows: HashMap<SrvId, Follow>,
}

static STATE: OnceLock<Arc<DnsState>> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `show resolvers [NAME]`.
pub(crate) fn show(name: Option<&str>) -> std::result::Result<String, String> {
    let empty = Vec::new();
    let sections = STATE.get().map_or(&empty, |s| &s.resolvers);
    fairlead_dns::show_resolvers(sections, name)
}

/// The name a followed server resolves (`show servers state`'s
/// `srv_fqdn`); none for other servers.
pub(crate) fn fqdn_of(id: SrvId) -> Option<String> {
    let state = STATE.get()?;
    let names = lock(&state.names);
    names.get(&id).map(|(name, _)| name.clone())
}

/// A health check of server `id` could not connect (`L4CON`, `L4TOUT`):
/// as HAProxy 2.6, its name is resolved again at once unless the last
/// answer is valid and younger than `hold valid`
/// ([`Resolvers::trigger`]). Nothing for a server DNS does not follow.
pub(crate) fn check_cannot_connect(id: SrvId) {
    let Some(state) = STATE.get() else { return };
    let Some((res, kind, fixed)) = state.follows.get(&id) else {
        return;
    };
    let name = match fixed {
        Some(n) => Some(n.clone()),
        None => lock(&state.names).get(&id).map(|(n, _)| n.clone()),
    };
    if let Some(name) = name {
        res.trigger(&name, *kind);
    }
}

/// `set server be/s fqdn NAME`: the server resolves `fqdn` from now on.
/// Returns HAProxy's reply ("be/s changed its FQDN from A to B").
pub(crate) fn set_fqdn(
    shared: &Shared,
    be: usize,
    server: &str,
    fqdn: &str,
) -> std::result::Result<String, String> {
    let (Some(state), Some(b)) = (STATE.get(), shared.backends.get(be)) else {
        return Err("set server <b>/<s> fqdn failed because no resolution is configured.".into());
    };
    let srv = b.server_by_name(server).ok_or("No such server.")?;
    let valid = !fqdn.is_empty()
        && fqdn.len() <= 255
        && fqdn
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-' || c == b'_');
    if !valid {
        return Err(format!("Invalid FQDN '{fqdn}'."));
    }
    let mut names = lock(&state.names);
    let Some((name, tx)) = names.get_mut(&srv.conf.id) else {
        // HAProxy 2.6.12 prints `<b>/<s>` as is.
        return Err("set server <b>/<s> fqdn failed because no resolution is configured.".into());
    };
    let msg = format!(
        "{}/{} changed its FQDN from {name} to {fqdn}",
        b.name, srv.conf.name
    );
    *name = fqdn.to_string();
    tx.send_replace(fqdn.to_string());
    drop(names);
    eprintln!("[WARNING]  {msg}.");
    Ok(msg)
}

/// Marks the servers that start in DNS maintenance, then starts the
/// `fairlead-dns` thread when some server is followed.
pub(crate) fn start(cfg: &Config, shared: &Arc<Shared>, plan: Plan) -> Result<()> {
    // The plan names servers by their place in the configuration, which
    // is their place in the freshly built backends: from here on they are
    // named by their stable ids.
    let id_at = |bi: usize, si: usize| {
        let s = shared.backends.get(bi)?.servers().get(si)?.conf.id;
        Some(s)
    };
    for &(bi, si) in &plan.maint {
        if let Some(s) = shared
            .backends
            .get(bi)
            .and_then(|b| b.servers().get(si).cloned())
        {
            s.admin.dns_maint.store(true, Ordering::Relaxed);
        }
    }
    for b in &shared.backends {
        b.refresh_weights();
    }
    let mut resolvers = Vec::new();
    for section in &cfg.resolvers {
        resolvers.push(Resolvers::new(section.clone()).map_err(Error::other)?);
    }
    let mut names = HashMap::new();
    let mut receivers = Vec::new();
    for s in &plan.servers {
        // One entry per planned server, in order (`None`: not built).
        receivers.push(id_at(s.be, s.idx).map(|id| {
            let (tx, rx) = watch::channel(s.fqdn.clone());
            names.insert(id, (s.fqdn.clone(), tx));
            (id, rx)
        }));
    }
    let follows = follows(cfg, &plan, &resolvers, id_at);
    let state = Arc::new(DnsState {
        resolvers: resolvers.clone(),
        names: Mutex::new(names),
        follows,
    });
    if STATE.set(state.clone()).is_err() {
        return Err(Error::other("DNS runtime started twice"));
    }
    if !resolvers.is_empty() {
        install_do_resolve(resolvers);
    }
    if plan.servers.is_empty() && plan.templates.is_empty() {
        return Ok(());
    }
    // HAProxy sends the DNS events to the backend's `log` targets too.
    let followed: Vec<usize> = plan
        .servers
        .iter()
        .map(|s| s.be)
        .chain(plan.templates.iter().map(|t| t.be))
        .collect();
    let names: Vec<&str> = followed
        .iter()
        .filter_map(|&i| cfg.backends.get(i).map(|b| b.name.as_str()))
        .collect();
    let logs = Arc::new(BackendLogs::start_for(cfg, |b| {
        names.contains(&b.name.as_str())
    })?);
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("fairlead-dns".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("[ALERT]    DNS resolution cannot start: {e}");
                    return;
                }
            };
            rt.block_on(run(shared, state, plan, receivers, logs));
        })?;
    Ok(())
}

/// Where each followed server resolves: the servers of the plan, and
/// each slot of its templates (found by the template's name).
fn follows(
    cfg: &Config,
    plan: &Plan,
    sections: &[Resolvers],
    id_at: impl Fn(usize, usize) -> Option<SrvId>,
) -> HashMap<SrvId, Follow> {
    let section = |opts: &ServerDnsOptions| {
        let name = opts.resolvers.as_deref()?;
        sections.iter().find(|r| r.name() == name).cloned()
    };
    let mut out = HashMap::new();
    for s in &plan.servers {
        if let (Some(id), Some(res)) = (id_at(s.be, s.idx), section(&s.opts)) {
            out.insert(id, (res, NameKind::Addr(s.opts.prefer), None));
        }
    }
    for t in &plan.templates {
        let Some(res) = section(&t.opts) else {
            continue;
        };
        let tp = &t.template;
        let kind = NameKind::for_name(&tp.fqdn, t.opts.prefer);
        let Some(be) = cfg.backends.get(t.be) else {
            continue;
        };
        for (si, s) in be.servers.iter().enumerate() {
            let mine = s.template.as_ref().is_some_and(|st| {
                st.prefix == tp.prefix && st.range == tp.range && st.fqdn == tp.fqdn
            });
            if let (true, Some(id)) = (mine, id_at(t.be, si)) {
                out.insert(id, (res.clone(), kind, Some(tp.fqdn.clone())));
            }
        }
    }
    out
}

/// `do-resolve` (`http-request`, `tcp-request content`): the stream's
/// own worker resolves the name with the section's nameservers (its
/// retries and timeouts bound the wait); any failure leaves the variable
/// unset.
fn install_do_resolve(sections: Vec<Resolvers>) {
    fairlead_rules::resolve::set_resolver(Arc::new(move |section, name, family| {
        let res = sections.iter().find(|r| r.name() == section).cloned();
        let name = name.to_string();
        let family = match family {
            fairlead_rules::resolve::ResolveFamily::Ipv4 => fairlead_dns::Family::Ipv4,
            fairlead_rules::resolve::ResolveFamily::Ipv6 => fairlead_dns::Family::Ipv6,
        };
        Box::pin(async move { res?.resolve_once(&name, family).await.ok() })
    }));
}

fn section_of(state: &DnsState, opts: &ServerDnsOptions) -> Option<Resolvers> {
    let name = opts.resolvers.as_deref()?;
    state.resolvers.iter().find(|r| r.name() == name).cloned()
}

fn policy_of(opts: &ServerDnsOptions) -> AddrPolicy {
    AddrPolicy {
        prefer: opts.prefer,
        nets: opts.nets.clone(),
        allow_dup_ip: opts.opts.allow_dup_ip,
    }
}

async fn run(
    shared: Arc<Shared>,
    state: Arc<DnsState>,
    plan: Plan,
    receivers: Vec<Option<(SrvId, watch::Receiver<String>)>>,
    logs: Arc<BackendLogs>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for r in &state.resolvers {
        tasks.spawn(r.clone().run());
    }
    for (s, rx) in plan.servers.into_iter().zip(receivers) {
        let Some((me, rx)) = rx else {
            continue;
        };
        let (Some(res), Some(be)) = (section_of(&state, &s.opts), shared.backends.get(s.be)) else {
            continue;
        };
        let logs = logs.clone();
        tasks.spawn(follow_server(
            res,
            be.clone(),
            state.clone(),
            s,
            me,
            rx,
            logs,
        ));
    }
    for t in plan.templates {
        let (Some(res), Some(be)) = (section_of(&state, &t.opts), shared.backends.get(t.be)) else {
            continue;
        };
        tasks.spawn(follow_template(res, be.clone(), t, logs.clone()));
    }
    while tasks.join_next().await.is_some() {}
}

/// The addresses other servers of backend `be` resolving `name` use (the
/// duplicate-address rule).
fn used_by_others(state: &DnsState, backend: &Backend, me: SrvId, name: &str) -> Vec<IpAddr> {
    let names = lock(&state.names);
    names
        .iter()
        .filter(|(id, (n, _))| **id != me && n == name)
        .filter_map(|(id, _)| backend.server_by_id(*id))
        .filter(|s| !s.admin.dns_maint.load(Ordering::Relaxed))
        .map(|s| s.admin.addr.load().ip())
        .collect()
}

/// Follows one server's name; a new name (`set server fqdn`) starts over
/// from the server's current address.
async fn follow_server(
    res: Resolvers,
    be: Arc<Backend>,
    state: Arc<DnsState>,
    s: DnsServer,
    me: SrvId,
    mut fqdn: watch::Receiver<String>,
    logs: Arc<BackendLogs>,
) {
    let Some(srv) = be.server_by_id(me) else {
        return;
    };
    let id = ServerId::new(&be.name, &srv.conf.name);
    let mut resolver = ServerResolver::new(id, policy_of(&s.opts), s.addr, s.maint);
    loop {
        let name = fqdn.borrow_and_update().clone();
        let kind = NameKind::Addr(s.opts.prefer);
        let mut rx = match res.subscribe(&name, kind) {
            Ok(rx) => rx,
            Err(e) => {
                eprintln!(
                    "[ALERT]    {}/{}: cannot resolve '{name}': {e}",
                    be.name, srv.conf.name
                );
                if fqdn.changed().await.is_err() {
                    return;
                }
                continue;
            }
        };
        loop {
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let st: NameState = rx.borrow_and_update().clone();
                    let used = used_by_others(&state, &be, me, &name);
                    let events = resolver.apply(&st, &used);
                    apply_events(&be, events, &logs, Some(&name));
                }
                changed = fqdn.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
            }
        }
    }
}

/// Fills one template's slots from its name's answers.
async fn follow_template(res: Resolvers, be: Arc<Backend>, t: DnsTemplate, logs: Arc<BackendLogs>) {
    let tp = &t.template;
    let kind = NameKind::for_name(&tp.fqdn, t.opts.prefer);
    let mut rx = match res.subscribe(&tp.fqdn, kind) {
        Ok(rx) => rx,
        Err(e) => {
            eprintln!(
                "[ALERT]    {}/{}: cannot resolve '{}': {e}",
                be.name, tp.prefix, tp.fqdn
            );
            return;
        }
    };
    let mut slots = TemplateSlots::new(
        &be.name,
        &tp.prefix,
        tp.range,
        &tp.fqdn,
        tp.port,
        policy_of(&t.opts),
        t.opts.opts.ignore_weight,
    );
    while rx.changed().await.is_ok() {
        let st: NameState = rx.borrow_and_update().clone();
        let events = slots.apply(&st);
        // The slots of an SRV template each have their own target name.
        let name = (!matches!(kind, NameKind::Srv(_))).then_some(tp.fqdn.as_str());
        apply_events(&be, events, &logs, name);
    }
}

fn server_of(be: &Backend, id: &ServerId) -> Option<Arc<fairlead_backend::Server>> {
    be.server_by_name(&id.server)
}

/// Applies DNS events to the backend's servers and logs them, on stderr
/// and to the backend's `log` targets, with HAProxy 2.6's lines and
/// levels. `fqdn`: the name the servers resolve, when they share one.
fn apply_events(be: &Backend, events: Vec<DnsEvent>, logs: &BackendLogs, fqdn: Option<&str>) {
    let mut weights_changed = false;
    let log = |tag: &str, level: Level, line: &str| {
        eprintln!("{tag} {line}");
        logs.send(&be.name, level, line);
    };
    for ev in events {
        let (DnsEvent::AddrChanged { server, .. }
        | DnsEvent::FqdnChanged { server, .. }
        | DnsEvent::PortChanged { server, .. }
        | DnsEvent::WeightChanged { server, .. }
        | DnsEvent::Maintenance { server, .. }
        | DnsEvent::Ready { server }) = &ev;
        let Some(s) = server_of(be, server) else {
            continue;
        };
        let line = format!("{ev}.");
        match &ev {
            DnsEvent::AddrChanged { to, .. } => {
                let port = s.admin.addr.load().port();
                s.admin.set_addr(SocketAddr::new(*to, port));
            }
            DnsEvent::PortChanged { to, .. } => {
                let ip = s.admin.addr.load().ip();
                s.admin.set_addr(SocketAddr::new(ip, *to));
            }
            DnsEvent::WeightChanged { to, .. } => {
                s.admin.weight.store((*to).min(256), Ordering::Relaxed);
                weights_changed = true;
            }
            DnsEvent::FqdnChanged { .. } => {}
            DnsEvent::Maintenance { .. } => {
                s.admin.dns_maint.store(true, Ordering::Relaxed);
                be.refresh_weights();
                let (active, backup) = be.usable_counts();
                let cur = s.metrics.cur.load(Ordering::Relaxed);
                let line = format!(
                    "{ev}. {active} active and {backup} backup servers left. {cur} sessions active, 0 requeued, {} remaining in queue.",
                    be.queue.len()
                );
                log("[WARNING] ", Level::Alert, &line);
                if active + backup == 0 {
                    eprintln!("[ALERT]    backend '{}' has no server available!", be.name);
                    let msg = format!("backend {} has no server available!", be.name);
                    logs.send(&be.name, Level::Emerg, &msg);
                }
                continue;
            }
            DnsEvent::Ready { .. } => {
                s.admin.dns_maint.store(false, Ordering::Relaxed);
                weights_changed = true;
                if let Some(name) = fqdn {
                    let up = format!("Server {server} ('{name}') is UP/READY (resolves again).");
                    log("[WARNING] ", Level::Notice, &up);
                }
            }
        }
        log("[WARNING] ", Level::Notice, &line);
    }
    if weights_changed {
        be.refresh_weights();
    }
}
