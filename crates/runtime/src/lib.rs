//! The process: builds the runtime state from a [`Config`], binds the
//! listeners, starts one worker thread per `nbthread` (each with its own
//! tokio `current_thread` event loop and its own SO_REUSEPORT listening
//! sockets), and handles signals:
//!
//! - SIGTERM / SIGINT: immediate stop;
//! - SIGUSR1: soft stop. Listeners close at once, idle keep-alive
//!   connections close, requests in flight finish (their responses carry
//!   `Connection: close`), then the process exits; after `hard-stop-after`
//!   (or, when unset, the longest configured timeout) it exits regardless.
//!
//! Limits: the global `maxconn` and each frontend's `maxconn` are atomics
//! shared by all workers; a worker that reaches a limit stops accepting
//! (it waits for a connection to end, it never spins). When accept() fails
//! for lack of file descriptors the listener pauses and retries.
#![deny(unsafe_code)]

pub mod admin;
mod checks;
mod dns;
mod dynamic;
pub mod inherit;
pub mod limits;
mod listeners;
pub mod master;
pub mod os;
mod peers;
mod proxy_accept;
pub mod sockets;
mod sockpair;
mod soft_stop;
mod spread;
mod state_file;
pub mod stats;
mod worker;

use fairlead_backend::Backend;
use fairlead_config::Config;
use fairlead_l4::Frontend;
use std::io::{Error, ErrorKind, Result};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

pub(crate) use listeners::FeListeners;

/// Bytes of `tune.bufsize` kept free for header rewriting, like HAProxy's
/// `tune.maxrewrite`. Default is 1024.
pub const MAXREWRITE: usize = 1024;

/// Options from the command line that affect the run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `-D` or `daemon`.
    pub daemon: bool,
    /// `-p` or `pidfile`.
    pub pidfile: Option<String>,
    /// `-q`: no notices on stderr.
    pub quiet: bool,
    /// `-sf PID...` (SIGUSR1, soft stop) or `-st PID...` (SIGTERM): old
    /// processes to stop once this one listens. Their ports are shared
    /// through SO_REUSEPORT during the overlap.
    pub old_pids: Vec<i32>,
    /// True for `-st` (hard stop of the old processes).
    pub old_terminate: bool,
}

/// A connection limit shared by all workers.
pub struct Limit {
    /// Shared with the sessions (`%ac`/`%fc` in logs).
    pub cur: Arc<AtomicU32>,
    pub max: u32,
}

impl Limit {
    fn new(max: u32) -> Limit {
        Limit {
            cur: Arc::new(AtomicU32::new(0)),
            max,
        }
    }

    fn full(&self) -> bool {
        self.cur.load(Ordering::Relaxed) >= self.max
    }
}

/// One frontend at run time: the [`Frontend`] its sessions share (name,
/// mode, timeouts, routes, counters, logging), and what only the listening
/// side needs.
pub struct FrontendRt {
    pub front: Arc<Frontend>,
    pub addrs: Vec<(SocketAddr, Option<bool>)>,
    /// The frontend's `maxconn` gate.
    pub limit: Limit,
    /// Highest number of concurrent connections seen (`smax`).
    pub smax: AtomicU32,
    /// The TLS context of each listening address of a `bind ... ssl` line.
    pub tls: Vec<(SocketAddr, Arc<fairlead_tls::BindContext>)>,
    /// TLS handshake outcomes on this frontend.
    pub tls_stats: TlsStats,
    /// Listening addresses of `bind ... accept-proxy` lines.
    pub accept_proxy: Vec<SocketAddr>,
    /// Listening addresses of `bind ... defer-accept` lines.
    pub defer_accept: Vec<SocketAddr>,
    /// The listening sockets that are not IP addresses (UNIX, `fd@`),
    /// with what their `bind` line asks.
    pub sockets: Vec<SockRt>,
    /// `option tcp-smart-accept` in force (automatic: on in `mode
    /// http`): the TCP listeners are put out of quick-ack mode.
    pub smart_accept: bool,
}

/// A UNIX or `fd@` listening socket of a frontend.
pub struct SockRt {
    pub sock: fairlead_config::ListenSocket,
    pub perms: fairlead_config::UnixPerms,
    pub tls: Option<Arc<fairlead_tls::BindContext>>,
    pub accept_proxy: bool,
    /// The listener's id in its frontend (1-based, in the order of the
    /// `bind` lines and their addresses): HAProxy's `%cp` for UNIX
    /// clients.
    pub id: u16,
}

/// TLS handshake counters of a frontend.
#[derive(Debug, Default)]
pub struct TlsStats {
    /// Handshakes completed (full and resumed).
    pub handshakes: std::sync::atomic::AtomicU64,
    /// Of which resumed a session.
    pub resumed: std::sync::atomic::AtomicU64,
    /// Handshakes that failed (bad client, unknown SNI, timeout...).
    pub failures: std::sync::atomic::AtomicU64,
}

impl FrontendRt {
    /// The TLS context of the listener bound to `addr`, if it has `ssl`.
    pub fn tls_for(&self, addr: SocketAddr) -> Option<Arc<fairlead_tls::BindContext>> {
        self.tls
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, c)| c.clone())
    }
}

/// One open client connection, for the runtime API.
pub struct SessionEntry {
    pub frontend: usize,
    pub client: SocketAddr,
    pub since: std::time::Instant,
    /// Closes the connection, whether it has a task or is parked idle
    /// (`shutdown session`).
    pub ctl: std::sync::Arc<fairlead_l7::ConnCtl>,
}

/// State shared by every worker.
pub struct Shared {
    pub frontends: Vec<Arc<FrontendRt>>,
    pub backends: Vec<Arc<Backend>>,
    pub global: Limit,
    /// Woken whenever a connection ends, for listeners paused on a limit.
    pub freed: Notify,
    pub stopping: AtomicBool,
    /// Accept loops still running; a soft stop completes only once every
    /// listener is closed (so no connection is accepted after the drain
    /// check) and every connection has ended.
    pub listeners_open: std::sync::atomic::AtomicUsize,
    /// Open connections per worker (`show sess`, `shutdown session`).
    pub sessions: Vec<std::sync::Mutex<std::collections::HashMap<u64, SessionEntry>>>,
    pub next_session: std::sync::atomic::AtomicU64,
    pub quiet: bool,
    pub bufsize: usize,
    pub maxaccept: usize,
    /// `tune.listener.multi-queue`: the workers' loads, and the inboxes
    /// through which a loaded worker hands new connections to an idle one
    /// (see [`spread`]).
    pub(crate) spread: spread::Spread,
    /// Workers serve their TCP sockets with io_uring (`io-uring on`, or
    /// `FAIRLEAD_IO_URING=1`); `None`: epoll. The value is the receive
    /// buffer count of each worker's ring.
    pub io_uring: Option<u16>,
    /// The configuration's map and ACL files (the runtime API edits them).
    pub patterns: fairlead_rules::pattern::Registry,
    /// Where CLI edits of those files are saved for the next worker.
    pub pattern_state: admin::PatternState,
    /// The stick tables, shared by every worker.
    pub tables: Vec<fairlead_stick::Table>,
}

/// The clock of every stick table call (tracking, fetches, purge, CLI):
/// milliseconds since the first call, monotonic.
pub fn stick_now() -> u64 {
    fairlead_rules::stick::now_ms()
}

impl Shared {
    pub(crate) fn notice(&self, msg: &str) {
        if !self.quiet {
            eprintln!("[NOTICE]   {msg}");
        }
    }
}

fn resolve(addr: &fairlead_config::ServerAddr) -> Result<SocketAddr> {
    match addr {
        fairlead_config::ServerAddr::Ip(a) => Ok(*a),
        // Connections go to the socket (`ServerConf::unix`); the IP
        // address is a placeholder.
        fairlead_config::ServerAddr::Unix(_) => Ok(SocketAddr::from(([0, 0, 0, 0], 0))),
        // The descriptor must be a socket pair end (it stays open for the
        // life of the process: nothing closes it).
        fairlead_config::ServerAddr::SockPair(fd) => {
            sockets::check_pair(*fd).map(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
        }
        fairlead_config::ServerAddr::Name(host, port) => (host.as_str(), *port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("cannot resolve '{host}'"))),
    }
}

/// What `-c` checks beyond the parser, as HAProxy does: the files the
/// configuration names (certificates, keys, CA files) are loaded as a
/// start would load them. Returns (warnings, errors), each prefixed with
/// the line's `file:line`.
pub fn check_files(cfg: &Config) -> (Vec<String>, Vec<String>) {
    let (mut warnings, mut errors) = (Vec::new(), Vec::new());
    for f in &cfg.frontends {
        for b in &f.binds {
            for sock in &b.sockets {
                let r = match sock {
                    fairlead_config::ListenSocket::Fd(fd) => sockets::check_fd(*fd),
                    fairlead_config::ListenSocket::SockPair(fd) => sockets::check_pair(*fd),
                    fairlead_config::ListenSocket::Unix(_) => sockets::check_perms(&b.unix_perms),
                };
                if let Err(e) = r {
                    errors.push(format!(
                        "{}: frontend '{}': bind {sock}: {e}",
                        b.location, f.name
                    ));
                }
            }
        }
        for b in &f.binds {
            let Some(t) = &b.tls else { continue };
            match fairlead_tls::BindContext::build(t) {
                Ok(ctx) => warnings.extend(
                    ctx.warnings()
                        .iter()
                        .map(|w| format!("{}: frontend '{}': bind: {w}", b.location, f.name)),
                ),
                Err(e) => errors.push(format!("{}: frontend '{}': bind: {e}", b.location, f.name)),
            }
        }
    }
    for be in &cfg.backends {
        for s in &be.servers {
            if let fairlead_config::ServerAddr::SockPair(fd) = s.addr {
                if let Err(e) = sockets::check_pair(fd) {
                    errors.push(format!(
                        "{}: server {}/{}: {e}",
                        s.location, be.name, s.name
                    ));
                }
            }
            let Some(t) = &s.tls else { continue };
            let at = format!("{}: server {}/{}", s.location, be.name, s.name);
            match fairlead_tls::ServerContext::build(t) {
                Ok(ctx) => warnings.extend(ctx.warnings().iter().map(|w| format!("{at}: {w}"))),
                Err(e) => errors.push(format!("{at}: {e}")),
            }
        }
    }
    (warnings, errors)
}

/// Builds the shared run-time state (resolves server names, computes
/// limits). Does not bind anything.
pub fn build(cfg: &Config, quiet: bool, maxconn: u32) -> Result<Shared> {
    fairlead_backend::sockpair::set_sender(os::send_fd);
    let workers = worker_count(cfg);
    let mut next_id = 0;
    let mut backends = Vec::new();
    for b in &cfg.backends {
        // HAProxy's default fullconn: 10% of the maxconn of the frontends
        // that use this backend.
        let fe_sum: u64 = cfg
            .frontends
            .iter()
            .filter(|f| f.default_backend.as_deref() == Some(b.name.as_str()))
            .map(|f| u64::from(f.options.maxconn.unwrap_or(maxconn).min(maxconn)))
            .sum();
        let fullconn = (fe_sum / 10).clamp(1, u64::from(u32::MAX)) as u32;
        let backend = Backend::new(b, &resolve, &mut next_id, fullconn)?;
        if !quiet {
            for (s, cfg_s) in backend.servers().iter().zip(&b.servers) {
                for w in s.conf.tls.iter().flat_map(|t| t.warnings()) {
                    eprintln!(
                        "[WARNING]  {}: server {}/{}: {w}",
                        cfg_s.location, b.name, s.conf.name
                    );
                }
            }
        }
        backends.push(Arc::new(backend));
    }
    let bufsize = cfg.global.bufsize.max(2048);
    let logs = start_logging(cfg)?;
    let global = Limit::new(maxconn);
    let mut frontends = Vec::new();
    for f in cfg.frontends.iter().filter(|f| !f.disabled) {
        let backend = match &f.default_backend {
            Some(name) => backends
                .iter()
                .find(|b| &b.name == name)
                .cloned()
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "{}: frontend '{}': unknown backend '{name}'",
                            f.location, f.name
                        ),
                    )
                })?,
            // No backend: every request gets 503, TCP streams are closed.
            None => Arc::new(Backend::new(
                &fairlead_config::Backend {
                    name: format!("{}-nobackend", f.name),
                    options: f.options.clone(),
                    ..Default::default()
                },
                &resolve,
                &mut next_id,
                1,
            )?),
        };
        let addrs = f
            .binds
            .iter()
            .flat_map(|b| b.addrs.iter().map(move |a| (*a, b.v6only)))
            .collect();
        // The addresses of the `bind` lines with a flag set.
        let addrs_with = |flag: fn(&fairlead_config::Bind) -> bool| {
            f.binds
                .iter()
                .filter(|b| flag(b))
                .flat_map(|b| b.addrs.iter().copied())
                .collect()
        };
        let accept_proxy = addrs_with(|b| b.accept_proxy);
        let defer_accept = addrs_with(|b| b.defer_accept);
        let mut tls = Vec::new();
        let mut bind_tls = Vec::new();
        for b in &f.binds {
            let Some(t) = &b.tls else { continue };
            let cache = cfg.global.ssl_cachesize.unwrap_or(20000);
            let ctx =
                fairlead_tls::BindContext::build_with_session_cache(t, cache).map_err(|e| {
                    Error::new(
                        ErrorKind::InvalidInput,
                        format!("{}: frontend '{}': bind: {e}", b.location, f.name),
                    )
                })?;
            if !quiet {
                for w in ctx.warnings() {
                    eprintln!(
                        "[WARNING]  {}: frontend '{}': bind: {w}",
                        b.location, f.name
                    );
                }
            }
            let ctx = Arc::new(ctx);
            tls.extend(b.addrs.iter().map(|a| (*a, ctx.clone())));
            bind_tls.push(ctx);
        }
        let sockets = front_sockets(f, &bind_tls);
        let routes = Arc::new(fairlead_l4::Routes {
            fe_rules: f.rules.clone(),
            backends: backends.clone(),
            be_rules: cfg.backends.iter().map(|b| b.rules.clone()).collect(),
            by_name: cfg
                .backends
                .iter()
                .enumerate()
                .map(|(i, b)| (b.name.clone(), i))
                .collect(),
            default: f
                .default_backend
                .as_ref()
                .and_then(|n| cfg.backends.iter().position(|b| &b.name == n)),
            default_be: backend,
            hostname: fairlead_log::system_hostname(),
            inspect_max: bufsize - MAXREWRITE,
        });
        let limit = Limit::new(f.options.maxconn.unwrap_or(maxconn).min(maxconn));
        let front = Arc::new(Frontend {
            name: f.name.as_str().into(),
            mode: f.options.mode,
            timeouts: f.options.timeouts,
            conn_mode: f.options.http_conn_mode,
            forwardfor: f.options.forwardfor.clone(),
            accept_invalid_http_request: f.options.accept_invalid_http_request,
            http_no_delay: f.options.http_no_delay,
            max_head: bufsize - MAXREWRITE,
            routes,
            counters: Arc::new(fairlead_backend::counters::Counters::new()),
            log: logs
                .iter()
                .find(|(n, _)| n == &f.name)
                .map(|(_, l)| l.clone()),
            errors: Default::default(),
            actconn: global.cur.clone(),
            feconn: limit.cur.clone(),
            denied_conn: Default::default(),
            denied_sess: Default::default(),
            h2_only: f
                .binds
                .iter()
                .filter(|b| b.proto_h2)
                .flat_map(|b| b.addrs.iter().copied())
                .collect(),
            h2: cfg.global.h2,
            splice: f.options.splice,
        });
        frontends.push(Arc::new(FrontendRt {
            front,
            addrs,
            limit,
            smax: AtomicU32::new(0),
            tls,
            tls_stats: TlsStats::default(),
            accept_proxy,
            defer_accept,
            sockets,
            smart_accept: f.options.smart_accept(),
        }));
    }
    Ok(Shared {
        frontends,
        backends,
        global,
        freed: Notify::new(),
        stopping: AtomicBool::new(false),
        listeners_open: std::sync::atomic::AtomicUsize::new(0),
        sessions: (0..workers).map(|_| Default::default()).collect(),
        next_session: std::sync::atomic::AtomicU64::new(1),
        quiet,
        bufsize,
        maxaccept: match cfg.global.maxaccept {
            n if n <= 0 => usize::MAX,
            n => n as usize,
        },
        spread: spread::Spread::new(workers, cfg.global.multi_queue),
        io_uring: io_uring_wanted(cfg.global.io_uring).then_some(cfg.global.uring_recv_bufs),
        patterns: cfg.patterns.clone(),
        pattern_state: admin::PatternState::default(),
        tables: cfg.tables.clone(),
    })
}

/// The log sink of a proxy's `log` lines and `log-tag`.
pub(crate) fn log_sink(log: &fairlead_config::ProxyLog) -> fairlead_log::Sink {
    fairlead_log::Sink {
        targets: log.targets.iter().map(|t| t.spec.clone()).collect(),
        tag: log.tag.clone(),
    }
}

/// The global logging settings (`log-tag`, `log-send-hostname`).
pub(crate) fn logger_options(cfg: &Config) -> fairlead_log::LoggerOptions {
    let send_hostname = cfg.global.log_send_hostname.as_ref().map(|h| {
        if h.is_empty() {
            fairlead_log::system_hostname()
        } else {
            h.clone()
        }
    });
    fairlead_log::LoggerOptions {
        tag: cfg
            .global
            .log_tag
            .clone()
            .unwrap_or_else(|| "fairlead".to_string()),
        hostname: send_hostname,
        ..Default::default()
    }
}

/// The UNIX and `fd@` listening sockets of `f`, with their listener ids.
/// `bind_tls`: the TLS context of each `bind ... ssl` line, in order.
fn front_sockets(
    f: &fairlead_config::Frontend,
    bind_tls: &[Arc<fairlead_tls::BindContext>],
) -> Vec<SockRt> {
    let mut out = Vec::new();
    let (mut id, mut ssl_lines) = (0usize, 0usize);
    for b in &f.binds {
        let tls = b
            .tls
            .as_ref()
            .and_then(|_| bind_tls.get(ssl_lines).cloned());
        ssl_lines += usize::from(b.tls.is_some());
        id += b.addrs.len();
        for sock in &b.sockets {
            id += 1;
            out.push(SockRt {
                sock: sock.clone(),
                perms: b.unix_perms.clone(),
                tls: tls.clone(),
                accept_proxy: b.accept_proxy,
                id: u16::try_from(id).unwrap_or(u16::MAX),
            });
        }
    }
    out
}

/// Starts the logger when some frontend has log targets, and returns each
/// such frontend's logging set-up.
fn start_logging(cfg: &Config) -> Result<Vec<(String, Arc<fairlead_l7::logging::LogSetup>)>> {
    let logging: Vec<&fairlead_config::Frontend> = cfg
        .frontends
        .iter()
        .filter(|f| !f.disabled && !f.options.log.targets.is_empty())
        .collect();
    if logging.is_empty() {
        return Ok(Vec::new());
    }
    let sinks = logging.iter().map(|f| log_sink(&f.options.log)).collect();
    let logger = fairlead_log::Logger::start(logger_options(cfg), sinks)?;
    let hostname = fairlead_log::system_hostname();
    Ok(logging
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let l = &f.options.log;
            let setup = fairlead_l7::logging::LogSetup {
                logger: logger.clone(),
                sink: fairlead_log::SinkId(i),
                format: l.style.compile(),
                json: l.json,
                dontlognull: l.dontlognull,
                dontlog_normal: l.dontlog_normal,
                separate_errors: l.separate_errors,
                pid: std::process::id(),
                hostname: hostname.clone(),
                connect_only: matches!(l.style, fairlead_config::LogStyle::Connect),
            };
            (f.name.clone(), Arc::new(setup))
        })
        .collect())
}

/// The longest timeout in the configuration, used to bound a soft stop
/// when `hard-stop-after` is not set.
fn longest_timeout(cfg: &Config) -> Option<Duration> {
    let all = cfg
        .frontends
        .iter()
        .map(|f| f.options.timeouts)
        .chain(cfg.backends.iter().map(|b| b.options.timeouts));
    all.flat_map(|t| {
        [
            t.connect,
            t.client,
            t.server,
            t.http_request,
            t.http_keep_alive,
            t.tunnel,
            t.client_fin,
            t.server_fin,
            t.queue,
        ]
    })
    .flatten()
    .max()
}

/// Number of workers: `nbthread`, else one per CPU.
pub fn worker_count(cfg: &Config) -> usize {
    cfg.global
        .nbthread
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// The global maxconn in force, after fitting RLIMIT_NOFILE to what it
/// needs as HAProxy 2.6 does (see [`limits`]): raised to the need (or to
/// `ulimit-n`); an error when that fails under `strict-limits` (the
/// default), a warning otherwise; without `maxconn`, derived from the
/// limit.
pub fn setup_limits(cfg: &Config) -> Result<u32> {
    let fds = fd_plan(cfg);
    let g = &cfg.global;
    let d = limits::plan(
        fds,
        g.maxconn,
        g.ulimit_n,
        g.strict_limits,
        os::nofile_limit().0,
        os::raise_nofile,
    );
    if let Some(f) = d.fatal {
        return Err(Error::other(f));
    }
    if let Some(w) = d.warning {
        eprintln!("[WARNING]  {w}");
    }
    Ok(d.maxconn)
}

/// Grows the kernel's descriptor table to what `maxconn` needs, before
/// the worker threads start: growing it later stalls the worker that
/// crossed the size for an RCU grace period (see
/// [`os::reserve_fd_table`]). A failure only costs that stall later.
fn reserve_fd_table(cfg: &Config, maxconn: u32) {
    let n = limits::table_reserve(&fd_plan(cfg), maxconn, os::nofile_limit().0);
    if let Err(e) = os::reserve_fd_table(n) {
        eprintln!("[WARNING]  cannot reserve a descriptor table of {n} entries: {e}");
    }
}

/// What the configuration asks of the file-descriptor limit.
fn fd_plan(cfg: &Config) -> limits::FdPlan {
    limits::FdPlan {
        listeners: cfg
            .frontends
            .iter()
            .flat_map(|f| &f.binds)
            .map(|b| b.addrs.len() as u64)
            .sum(),
        checks: cfg
            .backends
            .iter()
            .flat_map(|b| &b.servers)
            .filter(|s| s.check)
            .count() as u64,
        threads: worker_count(cfg) as u64,
        stats: match cfg.global.stats_sockets.len() as u64 {
            0 => 0,
            n => n + u64::from(cfg.global.stats_maxconn.unwrap_or(10)),
        },
        pipes: pipe_budget(cfg),
    }
}

/// The pipes splicing may open: `maxpipes` when set, else a quarter of
/// maxconn when some proxy splices, else none (HAProxy 2.6's `Maxpipes`).
fn pipe_budget(cfg: &Config) -> limits::PipeBudget {
    if let Some(n) = cfg.global.maxpipes {
        return limits::PipeBudget::Fixed(u64::from(n));
    }
    if cfg.global.nosplice || !splices(cfg) {
        return limits::PipeBudget::None;
    }
    limits::PipeBudget::Quarter
}

/// Some proxy has an `option splice-*`.
fn splices(cfg: &Config) -> bool {
    let fe = cfg.frontends.iter().map(|f| &f.options.splice);
    let mut all = fe.chain(cfg.backends.iter().map(|b| &b.options.splice));
    all.any(|s| s.any())
}

/// Runs the proxy until it is stopped. Returns when a soft stop completed;
/// SIGTERM exits the process directly.
pub fn run(mut cfg: Config, opts: RunOptions) -> Result<()> {
    let maxconn = setup_limits(&cfg)?;
    reserve_fd_table(&cfg, maxconn);
    let pipes = pipe_budget(&cfg).pipes(maxconn);
    let pipes = usize::try_from(pipes).unwrap_or(usize::MAX);
    let on = !cfg.global.nosplice && splices(&cfg);
    fairlead_net::splice::configure(on, pipes, cfg.global.pipesize);
    // `init-addr` and server-template slots: the start-up addresses.
    let dns_plan = dns::prepare(&mut cfg, opts.quiet)?;
    let mut shared = build(&cfg, opts.quiet, maxconn)?;
    // A worker of a reload starts with the map and ACL edits of the
    // previous one, before it serves anything.
    shared.pattern_state = admin::PatternState::from_env(&shared.patterns, opts.quiet);
    // `load-server-state-from-file`: what the previous process saved.
    state_file::apply_all(&cfg, &shared, opts.quiet);
    let shared = Arc::new(shared);
    let workers = worker_count(&cfg);
    fairlead_balance::set_worker_threads(workers);
    let mut inherited = inherit::FdMap::from_env().map_err(Error::other)?;
    // `-sf`/`-st`: take over the old process's listening sockets themselves.
    if inherited.is_none() {
        if let Some(&old) = opts.old_pids.first() {
            let addrs: Vec<SocketAddr> = shared
                .frontends
                .iter()
                .flat_map(|f| f.addrs.iter().map(|(a, _)| *a))
                .collect();
            match os::take_listeners(old, &addrs) {
                Ok(m) if !m.is_empty() => inherited = Some(inherit::FdMap(m, Default::default())),
                Ok(_) => {}
                Err(e) => eprintln!(
                    "[WARNING]  cannot take the listening sockets of process {old} ({e}); \
                     sharing the ports with SO_REUSEPORT instead"
                ),
            }
        }
    }
    let is_worker = std::env::var_os(inherit::WORKER_ENV).is_some();
    if is_worker {
        let master = std::env::var(inherit::WORKER_ENV).ok();
        if !os::die_with_parent(master.as_deref().and_then(|m| m.parse().ok())) {
            return Err(std::io::Error::other(format!(
                "this worker's master (pid {}) exited before the worker started; stopping",
                master.as_deref().unwrap_or("?")
            )));
        }
    }
    let listeners = listeners::bind_all(
        &shared,
        workers,
        opts.old_pids.is_empty() && inherited.is_none(),
        inherited.as_ref(),
    )?;
    // A worker's master handles daemon mode and the pid file.
    if !is_worker && (opts.daemon || cfg.global.daemon) {
        os::daemonize()?;
    }
    let pidfile = opts.pidfile.as_ref().or(cfg.global.pidfile.as_ref());
    if let Some(p) = pidfile.filter(|_| !is_worker) {
        write_pidfile(p)?;
    }
    let uid = cfg.global.uid.or_else(|| {
        cfg.global
            .user
            .as_deref()
            .and_then(os::lookup_user)
            .map(|u| u.0)
    });
    let gid = cfg
        .global
        .gid
        .or_else(|| cfg.global.group.as_deref().and_then(os::lookup_group));
    if uid.is_some() || gid.is_some() {
        os::drop_privileges(uid, gid)?;
    }
    dynamic::set_defaults(&cfg);
    let _checker = checks::start(&cfg, &shared)?;
    dns::start(&cfg, &shared, dns_plan)?;
    let peers = peers::start(&cfg, &shared, opts.quiet);
    let hub = Arc::new(stats::Hub {
        shared: shared.clone(),
        facts: stats::ProcessFacts {
            started: std::time::Instant::now(),
            started_wall: std::time::SystemTime::now(),
            nbthread: workers as u32,
            ulimit_n: os::nofile_limit().0,
        },
        rates: stats::Rates::for_shared(&shared),
    });
    stats::start_rate_ticker(hub.clone());
    let services: Vec<Option<worker::Service>> = cfg
        .frontends
        .iter()
        .filter(|f| !f.disabled)
        .map(|f| {
            stats::Services::new(hub.clone(), &f.options).map(|s| Arc::new(s) as worker::Service)
        })
        .collect();
    let _cli = start_cli(&cfg, &hub, is_worker)?;
    let signals = soft_stop::Signals::install()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut handles = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        let shared = shared.clone();
        let services = services.clone();
        let stop = stop_rx.clone();
        let cpus = cpus_for_thread(&cfg, i + 1);
        let h = std::thread::Builder::new()
            .name(format!("fairlead-w{}", i + 1))
            .spawn(move || {
                if let Some(c) = cpus {
                    if let Err(e) = os::pin_thread(&c) {
                        eprintln!("[WARNING]  thread {}: cpu-map failed: {e}", i + 1);
                    }
                }
                fairlead_backend::counters::set_thread_slot(i);
                fairlead_net::profile::set_thread_slot(i);
                worker::run(i, shared, l, services, stop)
            })?;
        handles.push(h);
    }
    // The I/O path is named only when it is not the default.
    let io = match shared.io_uring {
        Some(_) if fairlead_net::uring_available().is_ok() => ", io_uring",
        Some(_) => ", epoll (io_uring unavailable)",
        None => "",
    };
    shared.notice(&format!(
        "fairlead {} started: {} worker(s), {} frontend(s), {} backend(s), maxconn {}{io}",
        env!("CARGO_PKG_VERSION"),
        workers,
        shared.frontends.len(),
        shared.backends.len(),
        maxconn
    ));
    // Tell the master (if any) that this worker is serving.
    if let Some(fd) = std::env::var(inherit::READY_FD_ENV)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    {
        use std::io::Write;
        if let Ok(mut ch) = os::unix_stream_from_fd(fd) {
            let _ = ch.write_all(b"R");
        }
    }
    if !opts.old_pids.is_empty() {
        let sig = if opts.old_terminate {
            libc::SIGTERM
        } else {
            libc::SIGUSR1
        };
        os::signal_pids(&opts.old_pids, sig);
    }
    let grace = cfg.global.hard_stop_after.or_else(|| longest_timeout(&cfg));
    soft_stop::wait_for_signals(signals, &shared, stop_tx, grace, peers);
    for h in handles {
        let _ = h.join();
    }
    Ok(())
}

/// Opens the runtime API sockets (`stats socket`).
fn start_cli(
    cfg: &Config,
    hub: &Arc<stats::Hub>,
    is_worker: bool,
) -> Result<Vec<fairlead_admin::CliHandle>> {
    let mut handles = Vec::new();
    for (loc, words) in &cfg.global.stats_sockets {
        let mut listen = fairlead_admin::parse_stats_socket(words)
            .map_err(|e| Error::other(format!("{loc}: stats socket: {e}")))?;
        if let Some(t) = cfg.global.stats_timeout {
            listen.timeout = t;
        }
        if let Some(m) = cfg.global.stats_maxconn {
            listen.maxconn = m;
        }
        // A new worker of a reload takes the path over; the previous one
        // keeps serving the CLI connections it already has.
        if let (true, fairlead_admin::CliAddr::Unix(path)) = (is_worker, &listen.addr) {
            let _ = std::fs::remove_file(path);
        }
        let api = Arc::new(admin::Admin { hub: hub.clone() });
        let h = fairlead_admin::start_cli(listen, api)
            .map_err(|e| Error::new(e.kind(), format!("{loc}: stats socket: {e}")))?;
        handles.push(h);
    }
    Ok(handles)
}

/// The CPUs of thread `n` (1-based) according to `cpu-map`.
fn cpus_for_thread(cfg: &Config, n: usize) -> Option<Vec<usize>> {
    cfg.global.cpu_map.iter().rev().find_map(|m| {
        let pos = m.threads.iter().position(|&t| t == n)?;
        if m.auto {
            m.cpus.get(pos).map(|&c| vec![c])
        } else {
            Some(m.cpus.clone())
        }
    })
}

/// Writes this process's pid to `path`, whole: a temporary file next to
/// it renamed over it, so that a supervisor never reads an empty or
/// partial pid file.
pub(crate) fn write_pidfile(path: &str) -> std::io::Result<()> {
    let err = |e: Error| Error::new(e.kind(), format!("cannot write pidfile '{path}': {e}"));
    let tmp = format!("{path}.{}.tmp", std::process::id());
    std::fs::write(&tmp, format!("{}\n", std::process::id())).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

/// `io-uring on|off`, unless the environment says otherwise
/// (`FAIRLEAD_IO_URING=1` or `0`).
fn io_uring_wanted(configured: bool) -> bool {
    match std::env::var("FAIRLEAD_IO_URING").as_deref() {
        Ok("1") | Ok("on") => true,
        Ok("0") | Ok("off") => false,
        _ => configured,
    }
}
