//! The plain-data snapshot that every output format reads.
//!
//! The runtime copies its atomics into these structures (one snapshot per
//! request to the stats page or the exporter) and hands it to
//! [`crate::csv`], [`crate::json`], [`crate::html()`], [`crate::prometheus()`]
//! or [`crate::info`]. Nothing here is shared or atomic; every struct
//! implements `Default` so that the runtime fills in only what it tracks.

use crate::histogram::HistogramSnapshot;

/// Everything a stats output needs, taken at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Process-wide values (`show info`, `haproxy_process_*`).
    pub process: ProcessInfo,
    /// Proxies in configuration order. A `listen` section is two entries
    /// with the same name and `iid`: its [`ProxyKind::Frontend`] first, then
    /// its [`ProxyKind::Backend`] carrying the servers. That gives
    /// HAProxy's line order: frontend, servers, backend.
    pub proxies: Vec<ProxyStats>,
    /// Stick tables, in HAProxy's order (reverse declaration order, as
    /// `show table` lists them), for `haproxy_sticktable_*`. Default is
    /// none.
    pub tables: Vec<TableStats>,
}

/// One stick table's size and use (`haproxy_sticktable_size`,
/// `haproxy_sticktable_used`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// The table's name (its proxy's).
    pub name: String,
    /// The key type keyword (`ip`, `ipv6`, `integer`, `string`,
    /// `binary`).
    pub key_type: String,
    /// `size`: most entries.
    pub size: u32,
    /// Entries in use.
    pub used: u32,
}

/// Process-wide information, as in HAProxy's `show info`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessInfo {
    /// Product name shown in `show info` (`Name:`). Default is `"Fairlead"`.
    pub name: String,
    /// Version string (`Version:`, `haproxy_process_build_info{version}`).
    pub version: String,
    /// Release date, free text (`Release_date:`). Default is empty.
    pub release_date: String,
    /// Operating system process id.
    pub pid: u32,
    /// Worker threads (`nbthread`). Default is 1.
    pub nbthread: u32,
    /// Seconds since the process started.
    pub uptime_secs: u64,
    /// Start time, seconds since the Unix epoch.
    pub start_time_secs: u64,
    /// `node` from the global section (default: host name). Default is empty.
    pub node: String,
    /// `description` from the global section. Default is empty.
    pub description: String,
    /// File descriptor limit (`ulimit-n`).
    pub ulimit_n: u64,
    /// Maximum sockets (`Maxsock:`).
    pub maxsock: u64,
    /// Global `maxconn`.
    pub maxconn: u64,
    /// Hard connection limit (`Hard_maxconn:`).
    pub hard_maxconn: u64,
    /// Memory limit in bytes (`-m`); 0 means unlimited. Default is 0.
    pub memmax_bytes: u64,
    /// Bytes held by the buffer pools.
    pub pool_alloc_bytes: u64,
    /// Bytes of the pools in use.
    pub pool_used_bytes: u64,
    /// Failed pool allocations.
    pub pool_failed: u64,
    /// Connections currently open on the client side.
    pub curr_conns: u64,
    /// Connections accepted since start.
    pub cum_conns: u64,
    /// HTTP requests since start.
    pub cum_req: u64,
    /// TLS handshakes completed on frontends since start (`CumSslConns`).
    pub cum_ssl_conns: u64,
    /// Of those, resumed ones in percent (`SslFrontendSessionReuse_pct`).
    pub ssl_reuse_pct: u64,
    /// TLS handshakes that failed on frontends since start (Fairlead
    /// extension: `fairlead_process_ssl_failed_handshakes_total`).
    pub ssl_failed_handshakes: u64,
    /// `maxpipes` in force (`Maxpipes`). Default is 0.
    pub maxpipes: u64,
    /// Pipes held by streams now (`PipesUsed`). Default is 0.
    pub pipes_used: u64,
    /// Pipes that exist and wait in the pools (`PipesFree`). Default is 0.
    pub pipes_free: u64,
    /// Connections accepted over the last second.
    pub conn_rate: u64,
    /// Global `maxconnrate`; 0 when unset. Default is 0.
    pub conn_rate_limit: u64,
    /// Highest `conn_rate` seen.
    pub conn_rate_max: u64,
    /// Sessions created over the last second.
    pub sess_rate: u64,
    /// Global `maxsessrate`; 0 when unset. Default is 0.
    pub sess_rate_limit: u64,
    /// Highest `sess_rate` seen.
    pub sess_rate_max: u64,
    /// Tasks (connections, checks...) alive.
    pub tasks: u64,
    /// Tasks ready to run.
    pub run_queue: u64,
    /// Percentage of the last second spent idle. Default is 100.
    pub idle_pct: u64,
    /// True during a soft stop.
    pub stopping: bool,
    /// Active jobs (connections and listeners).
    pub jobs: u64,
    /// Active listeners.
    pub listeners: u64,
    /// Bytes sent since start, both sides.
    pub bytes_out_total: u64,
    /// Bytes sent over the last second.
    pub bytes_out_rate: u64,
}

impl Default for ProcessInfo {
    fn default() -> Self {
        ProcessInfo {
            name: "Fairlead".to_string(),
            version: String::new(),
            release_date: String::new(),
            pid: 0,
            nbthread: 1,
            uptime_secs: 0,
            start_time_secs: 0,
            node: String::new(),
            description: String::new(),
            ulimit_n: 0,
            maxsock: 0,
            maxconn: 0,
            hard_maxconn: 0,
            memmax_bytes: 0,
            pool_alloc_bytes: 0,
            pool_used_bytes: 0,
            pool_failed: 0,
            curr_conns: 0,
            cum_conns: 0,
            cum_req: 0,
            cum_ssl_conns: 0,
            maxpipes: 0,
            pipes_used: 0,
            pipes_free: 0,
            ssl_reuse_pct: 0,
            ssl_failed_handshakes: 0,
            conn_rate: 0,
            conn_rate_limit: 0,
            conn_rate_max: 0,
            sess_rate: 0,
            sess_rate_limit: 0,
            sess_rate_max: 0,
            tasks: 0,
            run_queue: 0,
            idle_pct: 100,
            stopping: false,
            jobs: 0,
            listeners: 0,
            bytes_out_total: 0,
            bytes_out_rate: 0,
        }
    }
}

/// Which half of a proxy a [`ProxyStats`] entry describes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProxyKind {
    /// The listening side (`svname` FRONTEND, CSV `type` 0).
    #[default]
    Frontend,
    /// The server side (`svname` BACKEND, CSV `type` 1), with its servers.
    Backend,
}

/// Proxy mode: HTTP-only fields (`hrsp_*`, `req_tot`...) are empty in TCP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// `mode http`. Default.
    #[default]
    Http,
    /// `mode tcp`.
    Tcp,
}

impl Mode {
    /// `"http"` or `"tcp"`, as in the CSV `mode` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Http => "http",
            Mode::Tcp => "tcp",
        }
    }
}

/// One frontend or one backend (with its servers).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProxyStats {
    /// Proxy name (`pxname`).
    pub name: String,
    /// Proxy id (`iid`): the `id` keyword or its position, starting at 1
    /// in HAProxy's numbering (the stats socket pseudo-proxy often takes 1).
    pub iid: u32,
    /// Frontend or backend line.
    pub kind: ProxyKind,
    /// `mode http` or `mode tcp`.
    pub mode: Mode,
    /// Status column. Frontend: `"OPEN"`, `"FULL"` or `"STOP"`. Backend:
    /// `"UP"` or `"DOWN"` (DOWN when no server can take traffic).
    pub status: String,
    /// Frontend: `maxconn`. Backend: `fullconn` (HAProxy prints the
    /// computed value). `None` prints an empty field.
    pub slim: Option<u64>,
    /// Frontend: `rate-limit sessions`, 0 when unset. Unused for backends.
    pub rate_lim: u64,
    /// Backend: sum of the effective weights of the servers in use.
    pub weight: u64,
    /// Backend: sum of the configured (user) weights of those servers.
    pub uweight: u64,
    /// Backend: number of active servers UP.
    pub act: u64,
    /// Backend: number of backup servers UP.
    pub bck: u64,
    /// Backend: transitions of the whole backend to DOWN.
    pub chkdown: u64,
    /// Backend: seconds since the backend last changed state.
    pub lastchg_secs: u64,
    /// Backend: seconds spent with no server available; `None` when the
    /// backend has no server at all (HAProxy prints nothing then).
    pub downtime_secs: Option<u64>,
    /// Backend: `cookie` name when cookie persistence is configured.
    pub cookie: Option<String>,
    /// Backend: balancing algorithm (`"roundrobin"`, `"leastconn"`...).
    pub algo: String,
    /// Traffic counters.
    pub counters: Counters,
    /// Backend: servers in configuration order. Empty for frontends.
    pub servers: Vec<ServerStats>,
}

/// Traffic counters shared by frontends, backends and servers. Which ones
/// are printed depends on the line type, as in HAProxy (see the CSV
/// field list in `management.txt` section 9.1: `[LFBS]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    /// Requests queued now (backend: not yet assigned to a server). `[BS]`
    pub qcur: u64,
    /// Highest `qcur`. `[BS]`
    pub qmax: u64,
    /// Current sessions. `[FBS]`
    pub scur: u64,
    /// Highest `scur`. `[FBS]`
    pub smax: u64,
    /// Cumulated sessions. `[FBS]`
    pub stot: u64,
    /// Bytes received from clients. `[FBS]`
    pub bin: u64,
    /// Bytes sent to clients. `[FBS]`
    pub bout: u64,
    /// Requests denied by rules. `[FB]`
    pub dreq: u64,
    /// Responses denied by rules. `[FBS]`
    pub dresp: u64,
    /// Request errors (bad request, client timeout or abort before the
    /// request was complete). `[F]`
    pub ereq: u64,
    /// Connection errors to servers. `[BS]`
    pub econ: u64,
    /// Response errors (invalid response, server abort, includes
    /// `srv_abrt`). `[BS]`
    pub eresp: u64,
    /// Connection retries. `[BS]`
    pub wretr: u64,
    /// Redispatches. `[BS]`
    pub wredis: u64,
    /// Times a server was picked by the balancer. `[BS]`
    pub lbtot: u64,
    /// Sessions over the last second. `[FBS]`
    pub rate: u64,
    /// Highest `rate`. `[FBS]`
    pub rate_max: u64,
    /// HTTP requests over the last second. `[F]`
    pub req_rate: u64,
    /// Highest `req_rate`. `[F]`
    pub req_rate_max: u64,
    /// HTTP requests. `[FBS]` (HTTP mode only)
    pub req_tot: u64,
    /// HTTP responses 1xx. `[FBS]` (HTTP mode only)
    pub hrsp_1xx: u64,
    /// HTTP responses 2xx.
    pub hrsp_2xx: u64,
    /// HTTP responses 3xx.
    pub hrsp_3xx: u64,
    /// HTTP responses 4xx.
    pub hrsp_4xx: u64,
    /// HTTP responses 5xx.
    pub hrsp_5xx: u64,
    /// HTTP responses with another code.
    pub hrsp_other: u64,
    /// Transfers aborted by the client. `[BS]`
    pub cli_abrt: u64,
    /// Transfers aborted by the server. `[BS]`
    pub srv_abrt: u64,
    /// Bytes fed to the compressor. `[FB]`
    pub comp_in: u64,
    /// Bytes out of the compressor. `[FB]`
    pub comp_out: u64,
    /// Bytes that bypassed the compressor. `[FB]`
    pub comp_byp: u64,
    /// Responses compressed. `[FB]`
    pub comp_rsp: u64,
    /// Connections over the last second. `[F]`
    pub conn_rate: u64,
    /// Highest `conn_rate`. `[F]`
    pub conn_rate_max: u64,
    /// Connections accepted. `[F]`
    pub conn_tot: u64,
    /// Requests answered by the proxy itself (stats, redirects...). `[F]`
    pub intercepted: u64,
    /// Connections denied by `tcp-request connection`. `[F]`
    pub dcon: u64,
    /// Sessions denied by `tcp-request session`. `[F]`
    pub dses: u64,
    /// Failed header rewrites. `[FBS]`
    pub wrew: u64,
    /// Connection attempts to servers. `[BS]`
    pub connect: u64,
    /// Reused server connections. `[BS]`
    pub reuse: u64,
    /// Cache lookups. `[FB]` (HTTP mode only)
    pub cache_lookups: u64,
    /// Cache hits. `[FB]` (HTTP mode only)
    pub cache_hits: u64,
    /// Internal errors. `[FBS]`
    pub eint: u64,
    /// Seconds since the last session was assigned; `None` when never
    /// (printed as -1, as HAProxy does). `[BS]`
    pub last_sess_secs: Option<u64>,
    /// Average queue time in ms (HAProxy: over the last 1024 requests). `[BS]`
    pub qtime_ms: u64,
    /// Average connect time in ms. `[BS]`
    pub ctime_ms: u64,
    /// Average response time in ms (0 for TCP). `[BS]`
    pub rtime_ms: u64,
    /// Average total time in ms. `[BS]`
    pub ttime_ms: u64,
    /// Highest queue time in ms. `[BS]`
    pub qtime_max_ms: u64,
    /// Highest connect time in ms. `[BS]`
    pub ctime_max_ms: u64,
    /// Highest response time in ms. `[BS]`
    pub rtime_max_ms: u64,
    /// Highest total time in ms. `[BS]`
    pub ttime_max_ms: u64,
    /// Latency histograms, exported to Prometheus only (Fairlead
    /// addition). `None` leaves the metric family out for this object.
    pub latency: Latency,
}

/// Latency histograms of one frontend, backend or server (snapshots of
/// [`crate::LatencyHistogram`]). Each maps to
/// `haproxy_<obj>_<name>_seconds_{bucket,sum,count}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latency {
    /// Time spent in the queue (`queue_time`).
    pub queue: Option<HistogramSnapshot>,
    /// Time to establish the server connection (`connect_time`).
    pub connect: Option<HistogramSnapshot>,
    /// Time from request sent to response head received (`response_time`).
    pub response: Option<HistogramSnapshot>,
    /// Whole request, accept to last byte (`total_time`).
    pub total: Option<HistogramSnapshot>,
}

/// Operational state of a server, rendered as HAProxy's status strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServerState {
    /// `"UP"`.
    #[default]
    Up,
    /// `"DOWN"`.
    Down,
    /// Running and not checked: `"no check"`.
    NoCheck,
    /// Administrative maintenance: `"MAINT"`.
    Maint,
    /// Maintenance inherited from a tracked server: `"MAINT (via px/srv)"`.
    MaintVia(String),
    /// Draining (weight 0 set by the admin): `"DRAIN"`.
    Drain,
    /// Up but excluded from balancing (agent or 404 check): `"NOLB"`.
    NoLb,
    /// Up with failing checks: `"UP done/of"` (e.g. `UP 1/3`: one failure
    /// out of `fall` 3 before DOWN).
    GoingDown {
        /// Failed checks so far.
        done: u32,
        /// Checks needed to change state (`fall`).
        of: u32,
    },
    /// Down with passing checks: `"DOWN done/of"` (`rise`).
    GoingUp {
        /// Passed checks so far.
        done: u32,
        /// Checks needed to change state (`rise`).
        of: u32,
    },
}

impl ServerState {
    /// The CSV/HTML status text.
    pub fn text(&self) -> String {
        match self {
            ServerState::Up => "UP".into(),
            ServerState::Down => "DOWN".into(),
            ServerState::NoCheck => "no check".into(),
            ServerState::Maint => "MAINT".into(),
            ServerState::MaintVia(t) => format!("MAINT (via {t})"),
            ServerState::Drain => "DRAIN".into(),
            ServerState::NoLb => "NOLB".into(),
            ServerState::GoingDown { done, of } => format!("UP {done}/{of}"),
            ServerState::GoingUp { done, of } => format!("DOWN {done}/{of}"),
        }
    }

    /// The Prometheus `state` label this state counts under
    /// (`DOWN`, `UP`, `MAINT`, `DRAIN`, `NOLB`).
    pub fn prom_state(&self) -> &'static str {
        match self {
            ServerState::Up | ServerState::NoCheck | ServerState::GoingDown { .. } => "UP",
            ServerState::Down | ServerState::GoingUp { .. } => "DOWN",
            ServerState::Maint | ServerState::MaintVia(_) => "MAINT",
            ServerState::Drain => "DRAIN",
            ServerState::NoLb => "NOLB",
        }
    }
}

/// Result of the last health or agent check of a server.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckInfo {
    /// Status code: `UNK`, `INI`, `SOCKERR`, `L4OK`, `L4TOUT`, `L4CON`,
    /// `L6OK`, `L6TOUT`, `L6RSP`, `L7OK`, `L7OKC`, `L7TOUT`, `L7RSP`,
    /// `L7STS`, `PROCERR`, `PROCTOUT`, `PROCOK`.
    pub status: String,
    /// A check is running now: the status prints as `"* L7OK"`.
    pub in_progress: bool,
    /// Layer 5-7 code (HTTP status) when there is one.
    pub code: Option<u32>,
    /// Duration of the last check in ms; `None` when it did not complete.
    pub duration_ms: Option<u64>,
    /// Short description (`"Layer7 check passed"`).
    pub desc: String,
    /// Text of the last check (`last_chk`: response reason or error).
    pub last: String,
    /// `rise` parameter.
    pub rise: u32,
    /// `fall` parameter.
    pub fall: u32,
    /// Health counter, 0 ..= rise+fall-1.
    pub health: u32,
}

/// One server of a backend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerStats {
    /// Server name (`svname`).
    pub name: String,
    /// Server id (`sid`): the `id` keyword or its position from 1.
    pub sid: u32,
    /// State shown in the status column.
    pub state: ServerState,
    /// Effective weight (after slowstart and drain).
    pub weight: u64,
    /// Configured weight (`uweight`).
    pub uweight: u64,
    /// Backup server (`bck` 1, `act` 0).
    pub backup: bool,
    /// Health check; `None` without `check` (check fields print empty).
    pub check: Option<CheckInfo>,
    /// Agent check; `None` without `agent-check`.
    pub agent: Option<CheckInfo>,
    /// Failed checks while UP (`chkfail`).
    pub chkfail: u64,
    /// UP to DOWN transitions (`chkdown`).
    pub chkdown: u64,
    /// Seconds since the last state change (`lastchg`).
    pub lastchg_secs: u64,
    /// Seconds spent DOWN; `None` prints empty (servers without checks).
    pub downtime_secs: Option<u64>,
    /// Server `maxconn`; `None` when unlimited.
    pub slim: Option<u64>,
    /// Server `maxqueue`; `None` when unlimited.
    pub qlimit: Option<u64>,
    /// Slowstart throttle percentage while ramping up; `None` otherwise.
    pub throttle: Option<u64>,
    /// Failed checks details with `observe` (`hanafail`); `None` without.
    pub hanafail: Option<u64>,
    /// Tracked server, `"proxy/server"`.
    pub tracked: Option<String>,
    /// `address:port` (IPv6 in brackets).
    pub addr: Option<String>,
    /// Persistence cookie value.
    pub cookie: Option<String>,
    /// Idle connections available for reuse (`srv_icur`).
    pub idle_cur: u64,
    /// Idle connection limit (`pool-max-conn`); `None` when unset.
    pub idle_limit: Option<u64>,
    /// Unsafe idle connections.
    pub idle_conn_cur: u64,
    /// Safe idle connections.
    pub safe_conn_cur: u64,
    /// Connections in use.
    pub used_conn_cur: u64,
    /// Estimated connections needed.
    pub need_conn_est: u64,
    /// Traffic counters.
    pub counters: Counters,
}
