//! What the CLI needs from the running process: the [`AdminApi`] trait and
//! the plain data it exchanges. The process implements the trait over its
//! live backends, servers and counters; this crate only parses commands,
//! checks levels and arguments, and renders HAProxy's output formats.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

/// Output flavour of `show stat` and `show info` (management guide 9.1/9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `show stat`: CSV; `show info`: `Name: value` lines.
    Default,
    /// `typed`: one field per line, `<pos>.<name>.<proc>:<tags>:<type>:<value>`.
    Typed,
    /// `json`.
    Json,
}

/// Which statistics `show stat` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatDomain {
    Proxy,
    Resolvers,
}

/// `{<iid>|<proxy>} <type> <sid>` of `show stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFilter {
    /// Proxy name or numeric id as typed; `-1` means every proxy.
    pub proxy: String,
    /// Bit mask: 1 frontends, 2 backends, 4 servers; -1 everything.
    pub kinds: i32,
    /// Server id, or -1 for every server.
    pub sid: i32,
}

/// A parsed `show stat` request, handed as is to [`AdminApi::stat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatRequest {
    pub domain: StatDomain,
    pub filter: Option<StatFilter>,
    pub format: OutputFormat,
    /// `desc`: add field descriptions.
    pub desc: bool,
    /// `up`: only servers that are up.
    pub up: bool,
    /// `no-maint`: leave out servers in maintenance.
    pub no_maint: bool,
}

/// HAProxy's operational server state (`srv_op_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpState {
    Stopped = 0,
    Starting = 1,
    Running = 2,
    Stopping = 3,
}

/// `srv_admin_state` bits (management guide, `show servers state`).
pub mod admin_flags {
    /// Forced into maintenance (CLI, `disabled`).
    pub const FMAINT: u8 = 0x01;
    /// Maintenance inherited from a tracked server.
    pub const IMAINT: u8 = 0x02;
    /// Maintenance from the configuration (`disabled`).
    pub const CMAINT: u8 = 0x04;
    /// Forced into drain.
    pub const FDRAIN: u8 = 0x08;
    /// Drain inherited from a tracked server.
    pub const IDRAIN: u8 = 0x10;
    /// Maintenance after a resolution failure.
    pub const RMAINT: u8 = 0x20;
    /// FQDN set from the CLI.
    pub const HMAINT: u8 = 0x40;
}

/// `srv_check_state` / `srv_agent_state` bits.
pub mod check_flags {
    pub const INPROGRESS: u8 = 0x01;
    pub const CONFIGURED: u8 = 0x02;
    pub const ENABLED: u8 = 0x04;
    pub const PAUSED: u8 = 0x08;
    /// Set on the agent's state.
    pub const AGENT: u8 = 0x10;
}

/// One server as the CLI sees it (a snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// HAProxy's server id (`id` keyword, else position from 1).
    pub id: u32,
    pub name: String,
    /// Whether `id` was set in the configuration.
    pub forced_id: bool,
    /// `None` when the server has no address yet.
    pub addr: Option<IpAddr>,
    pub port: u16,
    pub op_state: OpState,
    /// [`admin_flags`] mask.
    pub admin_state: u8,
    /// Current (user-visible) weight.
    pub uweight: u32,
    /// Initial (configured) weight.
    pub iweight: u32,
    /// Time since the last operational state change.
    pub since_last_change: Duration,
    /// HAProxy's numeric last check status (`HCHK_STATUS_*`, 0 = unknown).
    pub check_status: u32,
    /// 0 unknown, 1 neutral, 2 failed, 3 passed, 4 conditionally passed.
    pub check_result: u32,
    /// Rise/fall counter of the health check.
    pub check_health: u32,
    /// [`check_flags`] mask of the health check.
    pub check_state: u8,
    /// [`check_flags`] mask of the agent check (with [`check_flags::AGENT`]).
    pub agent_state: u8,
    pub fqdn: Option<String>,
    pub use_ssl: bool,
    pub check_port: u16,
    pub check_addr: Option<IpAddr>,
    pub agent_addr: Option<IpAddr>,
    pub agent_port: u16,
}

/// One backend as the CLI sees it (a snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// HAProxy's proxy id (`id` keyword, else the automatic one).
    pub id: i32,
    pub name: String,
    /// Whether `id` was set in the configuration.
    pub forced_id: bool,
    /// False for static algorithms (static-rr, hashing with `hash-type map-based`...):
    /// their weights only take 0 or the initial weight.
    pub dynamic_weights: bool,
    pub servers: Vec<ServerInfo>,
}

/// The server a change applies to: positions in [`AdminApi::backends`]'s
/// list (configuration order) and the names, for convenience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRef {
    pub backend_idx: usize,
    pub server_idx: usize,
    pub backend: String,
    pub server: String,
}

/// Administrative state requested by `set server ... state` or
/// `enable`/`disable server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminState {
    /// Leaves maintenance and drain.
    Ready,
    /// Out of load balancing, still checked, persistent traffic accepted.
    Drain,
    /// No traffic, no checks.
    Maint,
}

/// Operational state forced by `set server ... health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForcedHealth {
    Up,
    Stopping,
    Down,
}

/// A change to one server. Arguments are validated before the call
/// (weights are absolute, within 0..=256 and allowed by the algorithm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerChange {
    Admin(AdminState),
    /// New user weight (absolute).
    Weight(u32),
    /// New `maxconn` (0 = unlimited).
    Maxconn(u32),
    /// New address; the port only when given.
    Addr {
        ip: IpAddr,
        port: Option<u16>,
    },
    Health(ForcedHealth),
    /// `set server ... agent up|down` (only asked when the agent is enabled).
    Agent {
        up: bool,
    },
}

/// One stream for `show sess`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Identifier used by `shutdown session` (shown in hexadecimal).
    pub id: u64,
    /// e.g. `tcpv4`, `tcpv6`.
    pub proto: String,
    pub client: Option<SocketAddr>,
    pub frontend: String,
    pub backend: Option<String>,
    pub server: Option<String>,
    pub age: Duration,
    /// Short free-form state (e.g. the HTTP phase).
    pub state: String,
}

/// One memory pool for `show pools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolInfo {
    pub name: String,
    /// Size of one item in bytes.
    pub size: u64,
    /// Items allocated (in use or cached).
    pub allocated: u64,
    /// Items in use.
    pub used: u64,
    /// Failed allocations.
    pub failed: u64,
}

/// Which direction an error was captured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSide {
    /// Invalid request, captured by a frontend.
    Request,
    /// Invalid response, captured by a backend.
    Response,
}

/// The last invalid request or response seen by a proxy (`show errors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedError {
    pub when: SystemTime,
    /// The proxy that captured it: a frontend for a request, a backend for
    /// a response.
    pub proxy: String,
    pub proxy_id: i32,
    pub side: ErrorSide,
    /// The other proxy and its id (the backend for a request, the frontend
    /// for a response), when known.
    pub other: Option<(String, i32)>,
    /// The server and its id, when known.
    pub server: Option<(String, u32)>,
    /// Event number (process-wide capture counter).
    pub event: u32,
    pub client: Option<SocketAddr>,
    /// Stream offset of the first captured byte.
    pub offset: u64,
    /// Offset of the faulty byte in `bytes`.
    pub position: usize,
    /// Short explanation.
    pub reason: String,
    /// What was captured.
    pub bytes: Vec<u8>,
}

/// `set profiling tasks` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TasksProfiling {
    On,
    Off,
    Auto,
}

/// Tasks profiling state shown by `show profiling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TasksProfilingState {
    Off,
    On,
    AutoOff,
    AutoOn,
}

/// One row of the "Tasks activity" table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    pub name: String,
    pub calls: u64,
    /// Total CPU time, nanoseconds.
    pub cpu_ns: u64,
    /// Total scheduling latency, nanoseconds.
    pub lat_ns: u64,
}

/// What `show profiling` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilingReport {
    pub tasks: TasksProfilingState,
    pub memory: bool,
    /// How long the measurement ran.
    pub measured: Duration,
    /// How long ago it stopped (zero while running).
    pub stopped_ago: Duration,
    pub rows: Vec<TaskStat>,
}

/// What `show errors` reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorReport {
    /// Errors captured since start (all proxies).
    pub total: u32,
    /// The last request and response error of each proxy, in proxy order.
    pub errors: Vec<CapturedError>,
}

/// A certificate in use, for `show ssl cert <file>` (HAProxy's fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslCertInfo {
    pub file: String,
    pub serial: String,
    pub not_before: String,
    pub not_after: String,
    pub san: String,
    pub algorithm: String,
    pub subject: String,
    pub issuer: String,
}

/// A pattern reference (an ACL `-f` file or a map file), as `show map` and
/// `show acl` list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatRefInfo {
    /// The numeric id (`#<id>`).
    pub id: i64,
    /// The file path (what names it on the CLI besides `#<id>`).
    pub path: String,
    /// Listed by `show map` (used by a map converter, or a two-column
    /// file only actions use).
    pub map: bool,
    /// Listed by `show acl`.
    pub acl: bool,
    /// Entries carry values (a map file).
    pub two_column: bool,
    /// The version lookups see.
    pub curr_ver: u32,
    /// The last version `prepare` allocated.
    pub next_ver: u32,
    /// Entries of every version, current and prepared.
    pub entry_cnt: u64,
}

/// One entry of a pattern reference (`show map <map>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatEntry {
    /// Unique id, printed in hexadecimal and used as `#<ref>`.
    pub id: u64,
    pub key: String,
    pub value: Option<String>,
}

/// What one user of a reference (a match method with its flags) returns
/// for a sample: one line of `get map` / `get acl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatLookup {
    /// The match method's name (`str`, `beg`, `ip`...).
    pub method: String,
    /// `-i` is in force.
    pub icase: bool,
    /// The winning entry, if one matched.
    pub hit: Option<PatHit>,
}

/// The entry a lookup returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatHit {
    /// Indexed in a tree (else a list).
    pub tree: bool,
    pub key: String,
    /// For map users: the value and its sample type (`str`, `sint`,
    /// `ipv4`, `ipv6`).
    pub value: Option<(String, String)>,
}

/// The entries an edit designates: every entry with a key, or one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatTarget {
    Key(String),
    /// `#<ref>`: the id `show map` prints.
    Id(u64),
}

/// A change to a pattern reference. Arguments are checked before the
/// call (versions in range, the reference of the right kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatEdit {
    /// `add map|acl [@<ver>]`: rows of key and value (`None` for ACLs).
    Add {
        version: Option<u32>,
        rows: Vec<(String, Option<String>)>,
    },
    /// `set map`: the new value.
    Set { target: PatTarget, value: String },
    /// `del map|acl`.
    Del { target: PatTarget },
    /// `clear map|acl [@<ver>]`.
    Clear { version: Option<u32> },
    /// `prepare map|acl`: returns the new version.
    Prepare,
    /// `commit map|acl @<ver>`.
    Commit { version: u32 },
}

/// Why a pattern edit failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatError {
    /// The reference does not exist (any more).
    UnknownRef,
    /// No entry has that key or id.
    NotFound,
    /// Refused, with the reason (printed followed by a period).
    Invalid(String),
}

/// The running process, as the CLI drives it. Implemented by the process
/// over its live state; every method is called from a CLI thread, never
/// from a worker.
///
/// Methods returning `Err(String)` have their message printed as is (a
/// trailing newline is added when missing).
pub trait AdminApi: Send + Sync {
    /// `show info`: the fields in HAProxy's order (`Name`, `Version`,
    /// `Release_date`, `Nbthread`, `Nbproc`, `Process_num`, `Pid`, `Uptime`,
    /// `Uptime_sec`, ... `Idle_pct`, `node`, ...).
    /// `show table`, `clear table`, `set table`: `words` is the whole
    /// command. `None` when the process has no stick tables support;
    /// `Err` holds HAProxy's error text. Default is `None`.
    fn table_command(&self, words: &[&str]) -> Option<Result<String, String>> {
        let _ = words;
        None
    }

    fn info(&self) -> Vec<(String, String)>;

    /// `show info typed|json [desc]`. `None` when the format is not
    /// available (the CLI then says so).
    fn info_formatted(&self, format: OutputFormat, desc: bool) -> Option<String> {
        let _ = (format, desc);
        None
    }

    /// `show version`: the version string, without newline.
    fn version(&self) -> String;

    /// Process uptime, for `prompt timed`. By default from `Uptime_sec`.
    fn uptime(&self) -> Duration {
        let secs = self
            .info()
            .into_iter()
            .find(|(k, _)| k == "Uptime_sec")
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        Duration::from_secs(secs)
    }

    /// `show stat ...`: the whole output (CSV, typed or JSON). `Err` for
    /// an unknown proxy ("No such proxy.") and the like.
    fn stat(&self, req: &StatRequest) -> Result<String, String>;

    /// Every backend with its servers, in configuration order.
    fn backends(&self) -> Vec<BackendInfo>;

    /// Applies one server change.
    fn server_change(&self, target: &ServerRef, change: ServerChange) -> Result<(), String>;

    /// Current streams.
    fn sessions(&self) -> Vec<SessionInfo>;

    /// Kills the stream `id`; false when there is none.
    fn shutdown_session(&self, id: u64) -> bool;

    /// Memory pools.
    fn pools(&self) -> Vec<PoolInfo>;

    /// `show activity`: per-worker counters, each a name and one value per
    /// worker, in worker order (HAProxy's `accepted` and `accq_pushed`,
    /// Fairlead's `curr_conns`). Default is none.
    fn activity(&self) -> Vec<(String, Vec<u64>)> {
        Vec::new()
    }

    /// Captured protocol errors.
    fn errors(&self) -> ErrorReport;

    /// Profiling state and per-task statistics.
    fn profiling(&self) -> ProfilingReport;

    /// `set profiling tasks on|off|auto`.
    fn set_profiling_tasks(&self, mode: TasksProfiling) -> Result<(), String>;

    /// `reload ssl certs` (a Fairlead command): re-reads the certificate
    /// files of every `bind ... ssl` line. `Ok` holds the reply.
    fn reload_ssl_certs(&self) -> Result<String, String> {
        Err("No TLS listener.".into())
    }

    /// `show ssl cert`: the certificates in use, one per file, in
    /// configuration order. Default is none.
    fn ssl_certs(&self) -> Vec<SslCertInfo> {
        Vec::new()
    }

    /// `show resolvers [NAME]`: the counters of every `resolvers` section
    /// (or of the one named); `Err` holds the reply for an unknown name.
    /// Default is "No resolvers found".
    fn show_resolvers(&self, name: Option<&str>) -> Result<String, String> {
        let _ = name;
        Ok("No resolvers found\n".into())
    }

    /// `set server be/s fqdn NAME`: the server resolves NAME from now on.
    /// `Ok` holds the reply. Default is an error: no resolution.
    fn set_server_fqdn(&self, target: &ServerRef, fqdn: &str) -> Result<String, String> {
        let _ = (target, fqdn);
        // HAProxy 2.6.12 prints `<b>/<s>` as is.
        Err("set server <b>/<s> fqdn failed because no resolution is configured.".into())
    }

    /// `add server <backend>/<server> <addr>[:<port>] [options]`: adds a
    /// server at run time, in maintenance. `backend_idx` is its backend's
    /// position in [`AdminApi::backends`]; `args` are the words after the
    /// server's name. `Ok` holds the reply. Default is an error: not
    /// supported.
    fn add_server(
        &self,
        backend_idx: usize,
        server: &str,
        args: &[String],
    ) -> Result<String, String> {
        let _ = (backend_idx, server, args);
        Err("Adding servers is not supported.".into())
    }

    /// `del server <backend>/<server>`: removes a server in maintenance
    /// with nothing on it. `Ok` holds the reply. Default is an error.
    fn del_server(&self, target: &ServerRef) -> Result<String, String> {
        let _ = target;
        Err("Deleting servers is not supported.".into())
    }

    /// `enable health` (`on`) / `disable health`: starts or pauses the
    /// server's health checks. Default is HAProxy's answer for a server
    /// without `check`.
    fn set_health_checks(&self, target: &ServerRef, on: bool) -> Result<(), String> {
        let _ = (target, on);
        Err("Health check was not configured on this server, cannot enable.".into())
    }

    /// Every pattern reference (ACL `-f` files, map files), in id order.
    /// Default is none.
    fn pattern_refs(&self) -> Vec<PatRefInfo> {
        Vec::new()
    }

    /// The entries of reference `path` at `version` (the current one when
    /// `None`); empty for a version that does not exist.
    fn pattern_entries(&self, path: &str, version: Option<u32>) -> Vec<PatEntry> {
        let _ = (path, version);
        Vec::new()
    }

    /// `get map|acl`: what each user of reference `path` returns for
    /// `sample`, in the order they were set up.
    fn pattern_lookup(&self, path: &str, sample: &str) -> Vec<PatLookup> {
        let _ = (path, sample);
        Vec::new()
    }

    /// Applies one edit to reference `path`. `Ok` holds the new version
    /// for [`PatEdit::Prepare`], 0 otherwise.
    fn pattern_edit(&self, path: &str, edit: &PatEdit) -> Result<u32, PatError> {
        let _ = (path, edit);
        Err(PatError::UnknownRef)
    }
}
