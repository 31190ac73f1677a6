//! The typed configuration model that the parser produces and the runtime
//! consumes. Everything here is plain data: no I/O, no sockets.
//!
//! `defaults` sections are resolved by the parser: every [`Frontend`] and
//! [`Backend`] carries its fully inherited settings, so the runtime never has
//! to look at a defaults section. A `listen` section produces one frontend and
//! one backend with the same name, the frontend's `default_backend` pointing
//! at that backend.

use std::net::SocketAddr;
use std::time::Duration;

mod balance;
mod checks;
mod dynamic;
mod h2;
mod log;
mod proxy_v2;
mod sockets;
mod tls;
pub use balance::*;
pub use checks::*;
pub use dynamic::DynamicServerDefaults;
pub use h2::H2Tune;
pub use log::*;
pub use proxy_v2::ProxyV2Options;
pub use sockets::*;
pub use tls::*;

pub use fairlead_log::{Facility, LogAddr, SyslogFormat, TargetSpec};

/// Where a keyword came from, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Location {
    /// File name as given on the command line (or `<embedded>`).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// The whole parsed configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub global: Global,
    /// Frontends in declaration order, `listen` sections included.
    pub frontends: Vec<Frontend>,
    /// Backends in declaration order, `listen` sections included.
    pub backends: Vec<Backend>,
    /// Sections that are parsed and stored but not implemented yet
    /// (`userlist`, `resolvers`, `peers`, `mailers`, `cache`, `ring`, ...).
    pub other_sections: Vec<OtherSection>,
    /// The pattern and map files the rules use, shared by path (the
    /// runtime API edits them).
    pub patterns: fairlead_rules::pattern::Registry,
    /// The stick tables (`stick-table` in frontends, backends and listen
    /// sections), one per declaration, shared by every worker. Default is
    /// none.
    pub tables: Vec<fairlead_stick::Table>,
    /// The `resolvers` sections, in configuration order (plus HAProxy's
    /// implicit `default` section when a server names it and none is
    /// configured). Default is none.
    pub resolvers: Vec<fairlead_dns::ResolversSection>,
    /// The `peers` sections, in configuration order; their `table` lines
    /// are also in [`Config::tables`] as `SECTION/NAME`. Default is none.
    pub peers: Vec<fairlead_peers::PeersSection>,
    /// The `ssl-default-server-*` settings, kept for servers added at run
    /// time ([`Config::dynamic_server_defaults`]). Default is none set.
    pub(crate) server_tls_defaults: crate::tls::DefaultTls,
}

impl Config {
    /// Looks up a backend by name.
    pub fn backend(&self, name: &str) -> Option<&Backend> {
        self.backends.iter().find(|b| b.name == name)
    }
}

/// A section that Fairlead stores verbatim for later use.
#[derive(Debug, Clone, Default)]
pub struct OtherSection {
    /// Section keyword: `userlist`, `resolvers`, `peers`, ...
    pub kind: String,
    pub name: String,
    pub location: Location,
    /// Each line already split into words (quotes and escapes resolved).
    pub lines: Vec<(Location, Vec<String>)>,
}

/// `cpu-map [auto:]<thread-set> <cpu-set>`, expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuMap {
    /// 1-based thread numbers this line applies to (the `1/` process prefix
    /// is accepted and dropped).
    pub threads: Vec<usize>,
    /// CPU ids.
    pub cpus: Vec<usize>,
    /// `auto:` form: thread N gets the Nth CPU of the set.
    pub auto: bool,
}

/// The `global` section.
#[derive(Debug, Clone)]
pub struct Global {
    /// `maxconn`: total concurrent connections for the process.
    /// Default is `None`, meaning derived from `ulimit-n` at start-up.
    pub maxconn: Option<u32>,
    /// `nbthread`. Default is `None`: one worker per CPU.
    pub nbthread: Option<usize>,
    pub cpu_map: Vec<CpuMap>,
    /// `daemon`. Default is false.
    pub daemon: bool,
    /// `master-worker`: run as a master and its worker, as `-W` does.
    /// Default is false.
    pub master_worker: bool,
    /// `pidfile`. Default is none.
    pub pidfile: Option<String>,
    /// `user` / `uid`. Default is none (stay as the starting user).
    pub user: Option<String>,
    pub uid: Option<u32>,
    /// `group` / `gid`.
    pub group: Option<String>,
    pub gid: Option<u32>,
    /// `ulimit-n`. Default is none: raised to what maxconn needs.
    pub ulimit_n: Option<u64>,
    /// `strict-limits` / `no strict-limits`: refuse to start when the
    /// file-descriptor limit cannot be raised to what is needed. Default
    /// is on (HAProxy 2.6's default).
    pub strict_limits: bool,
    /// `log` lines: the process's targets, used by proxies with `log
    /// global`. Default is none.
    pub logs: Vec<LogTarget>,
    /// `log-tag`: the tag in syslog headers. Default is none (the runtime
    /// uses the program name).
    pub log_tag: Option<String>,
    /// `log-send-hostname [<name>]`: the host name written in syslog
    /// headers; an empty string means the system's host name. Default is
    /// none (no host name; the default target format is then `local`,
    /// else `rfc3164`).
    pub log_send_hostname: Option<String>,
    /// `localpeer`: the local peer name of the `peers` sections (`-L`
    /// overrides it). Default is none: the host name.
    pub localpeer: Option<String>,
    /// `tune.bufsize`. Default is 16384.
    pub bufsize: usize,
    /// `tune.maxaccept`: connections accepted per wake-up per listener.
    /// Default is 64; -1 means unlimited.
    pub maxaccept: i32,
    /// `tune.listener.multi-queue on|off`: a worker that accepts a
    /// connection while it serves clearly more than the least loaded
    /// worker hands the connection to that one (HAProxy's accept spreading
    /// over its threads). Default is on.
    pub multi_queue: bool,
    /// `io-uring on|off` (Fairlead's own keyword): the workers serve their
    /// TCP listeners and connections with io_uring instead of epoll. The
    /// environment variable `FAIRLEAD_IO_URING=1` (or `0`) overrides it.
    /// Default is off.
    pub io_uring: bool,
    /// `tune.io-uring.recv-bufs`: receive buffers (of `tune.bufsize`) in
    /// each worker's provided buffer ring, rounded up to a power of two.
    /// Default is 256.
    pub uring_recv_bufs: u16,
    /// `hard-stop-after`. Default is none (wait for the longest timeout).
    pub hard_stop_after: Option<Duration>,
    /// `server-state-file`: the file `load-server-state-from-file global`
    /// reads (relative to `server-state-base` unless it starts with `/`).
    /// Default is none.
    pub server_state_file: Option<String>,
    /// `server-state-base`: directory of relative server-state file names.
    /// Default is none (the current directory).
    pub server_state_base: Option<String>,
    /// `spread-checks`: random +/- percentage on check intervals, 0..=50.
    /// Default is 0.
    pub spread_checks: u32,
    /// Each `stats socket` line: its location and the words after `stats
    /// socket` (address first, then bind-style options), parsed by the
    /// runtime API (`fairlead_admin::parse_stats_socket`). Default is none.
    pub stats_sockets: Vec<(Location, Vec<String>)>,
    /// `stats timeout`: idle timeout of a runtime API connection. Default
    /// is none (the runtime's default, 10s in HAProxy).
    pub stats_timeout: Option<Duration>,
    /// `stats maxconn`: concurrent runtime API connections. Default is
    /// none (the runtime's default, 10 in HAProxy).
    pub stats_maxconn: Option<u32>,
    /// `ca-base`: directory prefixed to relative `ca-file` paths of
    /// `bind` and `server` lines. Default is none. Already applied to the
    /// `ca_file` fields of the model.
    pub ca_base: Option<String>,
    /// `crt-base`: directory prefixed to relative `crt` paths (of `bind`
    /// and `server` lines, and inside crt-lists; not to the crt-list's own
    /// path, as in HAProxy). Default is none. Already applied to the `crt`
    /// fields of the model; also copied into [`BindTls::crt_base`] for the
    /// paths inside crt-lists.
    pub crt_base: Option<String>,
    /// `ssl-server-verify none|required`: the `verify` of servers that do
    /// not set one. Default is [`Verify::Required`]. Already applied to
    /// [`ServerTls::verify`].
    pub ssl_server_verify: Verify,
    /// `tune.ssl.cachesize`: entries of the TLS session cache (server
    /// side); 0 disables the cache. Default is none: 20000, as HAProxy.
    pub ssl_cachesize: Option<usize>,
    /// `tune.h2.*`: HTTP/2 settings. Default is [`H2Tune::default`].
    pub h2: H2Tune,
    /// `nosplice` (or `-dS` on the command line): never splice. Default
    /// is false.
    pub nosplice: bool,
    /// `maxpipes`: pipes that may exist at once for splicing. Default is
    /// none: a quarter of the global maxconn.
    pub maxpipes: Option<u32>,
    /// `tune.pipesize`: the size of the pipes, in bytes. Default is none:
    /// the kernel's (64 KiB on Linux).
    pub pipesize: Option<usize>,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            maxconn: None,
            nbthread: None,
            cpu_map: Vec::new(),
            daemon: false,
            master_worker: false,
            pidfile: None,
            user: None,
            uid: None,
            group: None,
            gid: None,
            ulimit_n: None,
            strict_limits: true,
            logs: Vec::new(),
            log_tag: None,
            log_send_hostname: None,
            localpeer: None,
            bufsize: 16384,
            maxaccept: 64,
            multi_queue: true,
            io_uring: false,
            uring_recv_bufs: 256,
            hard_stop_after: None,
            server_state_file: None,
            server_state_base: None,
            spread_checks: 0,
            stats_sockets: Vec::new(),
            stats_timeout: None,
            stats_maxconn: None,
            ca_base: None,
            crt_base: None,
            ssl_server_verify: Verify::Required,
            ssl_cachesize: None,
            h2: H2Tune::default(),
            nosplice: false,
            maxpipes: None,
            pipesize: None,
        }
    }
}

/// `mode tcp|http`. Default is `tcp`, as in HAProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Tcp,
    Http,
}

/// How HTTP connections are handled (`option http-keep-alive`,
/// `option http-server-close`, `option httpclose`).
/// Default is `KeepAlive`.
///
/// When a frontend and its backend disagree, the runtime uses the stronger
/// one: `Close` > `ServerClose` > `KeepAlive`, as HAProxy does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum HttpConnMode {
    #[default]
    KeepAlive,
    ServerClose,
    Close,
}

/// `http-reuse never|safe|aggressive|always`. Default is `Safe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpReuse {
    Never,
    #[default]
    Safe,
    Aggressive,
    Always,
}

/// All `timeout` values. `None` means not set (infinite), as in HAProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timeouts {
    pub connect: Option<Duration>,
    pub client: Option<Duration>,
    pub server: Option<Duration>,
    pub http_request: Option<Duration>,
    pub http_keep_alive: Option<Duration>,
    pub tunnel: Option<Duration>,
    pub client_fin: Option<Duration>,
    pub server_fin: Option<Duration>,
    pub queue: Option<Duration>,
    /// `timeout check`: read timeout of a check once connected. Default is
    /// none (`inter` bounds the check).
    pub check: Option<Duration>,
    /// `timeout tarpit`: how long `http-request tarpit` holds a request.
    /// Default is none: `timeout connect`, as HAProxy.
    pub tarpit: Option<Duration>,
}

/// `option forwardfor [except <net>] [header <name>] [if-none]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardFor {
    /// Header name. Default is `X-Forwarded-For`.
    pub header: String,
    /// Only add the header when the request has none.
    pub if_none: bool,
    /// `except <network>`: do not add the header for these sources.
    pub except: Option<IpNet>,
}

impl Default for ForwardFor {
    fn default() -> Self {
        ForwardFor {
            header: "X-Forwarded-For".to_string(),
            if_none: false,
            except: None,
        }
    }
}

/// An address with a prefix length, e.g. `127.0.0.0/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    pub addr: std::net::IpAddr,
    pub prefix: u8,
}

impl IpNet {
    /// True when `ip` is inside this network.
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr::*;
        match (self.addr, ip) {
            (V4(n), V4(a)) => {
                let bits = u32::from(self.prefix.min(32));
                let mask = if bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - bits)
                };
                u32::from(n) & mask == u32::from(a) & mask
            }
            (V6(n), V6(a)) => {
                let bits = u32::from(self.prefix.min(128));
                let mask = if bits == 0 {
                    0
                } else {
                    u128::MAX << (128 - bits)
                };
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// `load-server-state-from-file { global | local | none }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerStateLoad {
    /// No state is loaded (the default).
    #[default]
    None,
    /// From the global `server-state-file`.
    Global,
    /// From the backend's own file (`server-state-file-name`).
    Local,
}

impl Config {
    /// The server-state file backend `be` loads at start-up, as
    /// `load-server-state-from-file`, `server-state-file`,
    /// `server-state-file-name` and `server-state-base` say; `None` when
    /// it loads none.
    pub fn server_state_path(&self, be: &Backend) -> Option<String> {
        let g = &self.global;
        let name = match be.options.load_server_state {
            ServerStateLoad::None => return None,
            ServerStateLoad::Global => g.server_state_file.clone()?,
            ServerStateLoad::Local => be
                .options
                .server_state_file_name
                .clone()
                .unwrap_or_else(|| be.name.clone()),
        };
        Some(match &g.server_state_base {
            Some(base) if !name.starts_with('/') => {
                format!("{}/{name}", base.trim_end_matches('/'))
            }
            _ => name,
        })
    }
}

/// Settings shared by frontends and backends, after `defaults` inheritance.
#[derive(Debug, Clone, Default)]
pub struct ProxyOptions {
    pub mode: Mode,
    pub timeouts: Timeouts,
    pub http_conn_mode: HttpConnMode,
    pub http_reuse: HttpReuse,
    /// `option forwardfor`. Default is off.
    pub forwardfor: Option<ForwardFor>,
    /// `option accept-invalid-http-request` (frontends): the lenient
    /// request parser (docs/http.md, "Strictness and HAProxy's switches").
    /// Default is off.
    pub accept_invalid_http_request: bool,
    /// `option accept-invalid-http-response` (backends): the lenient
    /// response parser. Default is off.
    pub accept_invalid_http_response: bool,
    /// `option redispatch`. Default is off.
    pub redispatch: bool,
    /// `option redispatch <interval>`, only meaningful when `redispatch`
    /// is on: -1 (the default) redispatches on the last retry only, a
    /// positive P on every Pth retry, a negative -N on the Nth retry
    /// before the last one. `option redispatch 0` turns `redispatch` off.
    pub redispatch_interval: i32,
    /// `retries`. Default is 3.
    pub retries: u32,
    /// `maxconn`. Default is `None`: the global maxconn applies.
    pub maxconn: Option<u32>,
    pub balance: Balance,
    /// `hash-type`. Default is map-based sdbm.
    pub hash_type: HashType,
    /// `option allbackups`: use every backup server at once, not only the
    /// first. Default is off.
    pub allbackups: bool,
    /// `load-server-state-from-file`: where the backend's servers' saved
    /// state comes from at start-up. Default is `None` (no state loaded).
    pub load_server_state: ServerStateLoad,
    /// `server-state-file-name`: the file `load-server-state-from-file
    /// local` reads (relative to `server-state-base` unless it starts with
    /// `/`). Default is none: the backend's name (also
    /// `use-backend-name`).
    pub server_state_file_name: Option<String>,
    /// `fullconn`: backend load at which servers reach their `maxconn`
    /// when `minconn` is set. Default is `None` (10% of the sum of the
    /// frontends' maxconn, as HAProxy computes).
    pub fullconn: Option<u32>,
    /// `option persist`: keep sending a persistent request to its server
    /// even when that server is down. Default is off.
    pub persist: bool,
    /// `persist rdp-cookie[(<name>)]`: the name of the RDP cookie whose
    /// `<address>.<port>.` value designates the server (TCP mode). The
    /// name defaults to `msts` when the keyword has none. Default is
    /// `None` (no RDP cookie persistence).
    pub rdp_persist: Option<String>,
    /// `option http-no-delay`: body data goes out at once, never held
    /// with `MSG_MORE` for the rest of a body of known length (for
    /// interactive protocols over HTTP/1). Default is off.
    pub http_no_delay: bool,
    /// `option tcp-smart-accept` (frontends): the listening sockets are
    /// put out of TCP quick-ack mode, so the kernel does not acknowledge a
    /// request on its own but lets the ACK ride with the response (or
    /// sends it after its delayed-ACK timer, about 40 ms). `Some(true)`
    /// forces it on, `Some(false)` (`no option tcp-smart-accept`) off.
    /// Default is `None` (also `default option tcp-smart-accept`):
    /// automatic, on in `mode http` and off in `mode tcp`, as in HAProxy.
    pub tcp_smart_accept: Option<bool>,
    /// `option tcp-smart-connect` (backends): a server connection that has
    /// data to send as soon as it is established (an HTTP request, TCP data
    /// already read, a PROXY protocol header, a TLS hello) is opened out of
    /// quick-ack mode, so the last ACK of the handshake rides with the
    /// first data segment. Default is off, as in HAProxy.
    pub tcp_smart_connect: bool,
    /// `cookie ...` persistence. Default is none.
    pub cookie: Option<CookieConfig>,
    /// `retry-on`. Default is `conn-failure` only.
    pub retry_on: RetryOn,
    /// What active checks send (`option httpchk`, `http-check`,
    /// `tcp-check`). Default is a plain TCP connect.
    pub health_check: HealthCheck,
    /// Logging (`log`, `log-format`, `option httplog`, ...). Default is
    /// no logging.
    pub log: ProxyLog,
    /// The statistics page (`stats enable`, `stats uri`, ...). `None`
    /// unless a `stats` keyword appears in the proxy or in the defaults
    /// section it inherits from. As in HAProxy, the first `stats` keyword
    /// of a proxy discards the inherited settings instead of adding to
    /// them, and a proxy that is not in `mode http` drops them with a
    /// warning.
    pub stats: Option<StatsConfig>,
    /// `http-request use-service prometheus-exporter [if { path|path_beg
    /// <p> }]` in a frontend or listen section. Default is none. Dropped
    /// with a warning when the proxy is not in `mode http`.
    pub prometheus: Option<PrometheusService>,
    /// `option splice-auto|splice-request|splice-response`. Default is
    /// all off.
    pub splice: Splice,
}

impl ProxyOptions {
    /// Whether `option tcp-smart-accept` is in force for this proxy's
    /// listeners: as set, else on in `mode http` only.
    pub fn smart_accept(&self) -> bool {
        self.tcp_smart_accept.unwrap_or(self.mode == Mode::Http)
    }
}

/// Kernel splicing asked for by a proxy. A stream splices a direction
/// when its frontend or its backend asks for it (HAProxy ORs the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Splice {
    /// `option splice-auto`: splice a direction once it carries bulk
    /// data (reads fill the buffer). Default is off.
    pub auto: bool,
    /// `option splice-request`: always splice client to server. Default
    /// is off.
    pub request: bool,
    /// `option splice-response`: always splice server to client. Default
    /// is off.
    pub response: bool,
}

impl Splice {
    /// Any of the three options.
    pub fn any(&self) -> bool {
        self.auto || self.request || self.response
    }

    /// The options of a frontend and its backend together.
    pub fn or(self, other: Splice) -> Splice {
        Splice {
            auto: self.auto || other.auto,
            request: self.request || other.request,
            response: self.response || other.response,
        }
    }
}

/// `stats ...` in a frontend/backend/listen/defaults section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsConfig {
    /// Always true once parsed: `stats enable` or any other `stats`
    /// keyword enables the page, as in HAProxy.
    pub enabled: bool,
    /// `stats uri <prefix>`. Default is `/haproxy?stats`.
    pub uri: String,
    /// `stats realm <realm>` (spaces escaped with a backslash, as in
    /// HAProxy). Default is `HAProxy Statistics`.
    pub realm: String,
    /// `stats auth <user>:<password>` (repeatable), as (user, password).
    /// Default is none: no authentication.
    pub users: Vec<(String, String)>,
    /// `stats refresh <delay>` (default unit: seconds). Default is none;
    /// `stats refresh 0` is none too.
    pub refresh: Option<Duration>,
    /// Some `stats admin if|unless <cond>` line exists. Default is false.
    /// The conditions are compiled with the section's rules
    /// (`ProxyRules::stats_admin`) and decided for each request.
    pub admin: bool,
    /// `stats hide-version`. Default is false.
    pub hide_version: bool,
    /// `stats show-legends`. Default is false.
    pub show_legends: bool,
    /// `stats show-node [<name>]`. `Some("")` when no name is given: the
    /// global `node` name, else the host name. Default is none.
    pub show_node: Option<String>,
    /// `stats scope <proxy>` (repeatable; `.` is the proxy itself).
    /// Default is empty: every proxy is shown.
    pub scope: Vec<String>,
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            enabled: true,
            uri: "/haproxy?stats".into(),
            realm: "HAProxy Statistics".into(),
            users: Vec::new(),
            refresh: None,
            admin: false,
            hide_version: false,
            show_legends: false,
            show_node: None,
            scope: Vec::new(),
        }
    }
}

/// `http-request use-service prometheus-exporter [if { path|path_beg <p> }]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrometheusService {
    /// `None`: every request of the frontend is answered by the exporter.
    /// `Some(p)`: only requests whose path is `p` (`if { path <p> }`), or
    /// starts with `p` when `prefix` is set (`if { path_beg <p> }`).
    pub path: Option<String>,
    /// The condition was `path_beg`. Default is false.
    pub prefix: bool,
}

/// One `bind` line, expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Bind {
    /// Every address this line listens on (port ranges and comma lists
    /// expanded). `*:80` and `:80` become `0.0.0.0:80`; `:::80` becomes
    /// `[::]:80`.
    pub addrs: Vec<SocketAddr>,
    /// `v6only` / `v4v6`. Default is the system's setting.
    pub v6only: Option<bool>,
    /// `proto h2`: connections speak HTTP/2 only (prior knowledge, h2c,
    /// or over TLS whatever ALPN chose). Default is false: HTTP/1.1, or
    /// HTTP/2 when ALPN selects `h2` or the client sends the HTTP/2
    /// preface.
    pub proto_h2: bool,
    /// `ssl` and its options: this listener terminates TLS. Default is none.
    pub tls: Option<BindTls>,
    /// `accept-proxy`: every connection starts with a PROXY protocol
    /// header (v1 or v2), whose addresses replace the socket's. Default
    /// is off.
    pub accept_proxy: bool,
    /// `defer-accept`: the kernel completes the accept of a connection only
    /// once data arrived on it, or after one second at worst
    /// (`TCP_DEFER_ACCEPT` 1, as HAProxy sets it). Default is off (the
    /// option is set to 0, so an inherited listener loses it).
    pub defer_accept: bool,
    /// The line's listening sockets that are not an IP address and port:
    /// UNIX sockets (`unix@`, `/path`, `abns@`) and inherited descriptors
    /// (`fd@`). Default is none.
    pub sockets: Vec<ListenSocket>,
    /// `mode`, `user`, `group`, `uid`, `gid`: the permissions of the UNIX
    /// socket files this line creates. Default is none of them (the
    /// process's umask and owner).
    pub unix_perms: UnixPerms,
    pub location: Location,
}

/// A `frontend` (or the front half of a `listen`).
#[derive(Debug, Clone, Default)]
pub struct Frontend {
    pub name: String,
    pub location: Location,
    pub binds: Vec<Bind>,
    pub options: ProxyOptions,
    /// `default_backend`. A `listen` section points at itself.
    pub default_backend: Option<String>,
    /// `disabled`. Default is false.
    pub disabled: bool,
    /// The section's compiled rules (a `listen` section's frontend and
    /// backend share them). Default is none.
    pub rules: std::sync::Arc<fairlead_rules::proxy::ProxyRules>,
}

/// A `backend` (or the back half of a `listen`).
#[derive(Debug, Clone, Default)]
pub struct Backend {
    pub name: String,
    pub location: Location,
    pub options: ProxyOptions,
    pub servers: Vec<Server>,
    /// `disabled`. Default is false.
    pub disabled: bool,
    /// The section's compiled rules. Default is none.
    pub rules: std::sync::Arc<fairlead_rules::proxy::ProxyRules>,
}

/// Where a server lives. Names are resolved at start-up by the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    /// A literal IP address and port.
    Ip(SocketAddr),
    /// A host name and port, resolved when the runtime starts.
    Name(String, u16),
    /// `unix@<path>`, `<path>` or `abns@<name>`: a UNIX stream socket.
    Unix(UnixAddr),
    /// `sockpair@<n>`: each connection is a new socket pair, one end of
    /// which is passed (`SCM_RIGHTS`) over inherited descriptor `n`, as
    /// HAProxy does.
    SockPair(i32),
}

/// One `server` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub name: String,
    pub location: Location,
    pub addr: ServerAddr,
    /// `weight`, 0..=256. Default is 1.
    pub weight: u32,
    /// `maxconn`. Default is 0: unlimited.
    pub maxconn: u32,
    /// `backup`. Default is false.
    pub backup: bool,
    /// `disabled`. Default is false.
    pub disabled: bool,
    /// `check`: run active health checks. Default is off (always up).
    pub check: bool,
    /// `inter`. Default is 2s.
    pub inter: Duration,
    /// `fastinter`: interval while changing state. Default is `inter`.
    pub fastinter: Option<Duration>,
    /// `downinter`: interval while down. Default is `inter`.
    pub downinter: Option<Duration>,
    /// `rise`. Default is 2.
    pub rise: u32,
    /// `fall`. Default is 3.
    pub fall: u32,
    /// `port`: check port. Default is the server's port.
    pub check_port: Option<u16>,
    /// `addr`: check address. Default is the server's address.
    pub check_addr: Option<std::net::IpAddr>,
    /// `agent-check` (+ agent-port, agent-addr, agent-inter, agent-send).
    pub agent: Option<AgentCheck>,
    /// `observe`. Default is none.
    pub observe: Option<Observe>,
    /// `error-limit`. Default is 10.
    pub error_limit: u32,
    /// `on-error`. Default is `fail-check`.
    pub on_error: OnError,
    /// `slowstart`: ramp the weight up after recovery. Default is none.
    pub slowstart: Option<Duration>,
    /// `minconn`. Default is 0 (use `maxconn` as is).
    pub minconn: u32,
    /// `maxqueue`. Default is 0: unlimited queue.
    pub maxqueue: u32,
    /// `cookie <value>` for persistence. Default is none.
    pub cookie: Option<String>,
    /// `id`. Default is the position in the backend, from 1.
    pub id: Option<u32>,
    /// `ssl` and its options: connections to this server use TLS. Default
    /// is none (clear text).
    pub tls: Option<ServerTls>,
    /// `check-ssl` (true) / `no-check-ssl` (false). Default is none: checks
    /// use TLS when the server has `ssl` and neither `port` nor `addr` is
    /// set for checks (HAProxy's rule); see [`Server::check_uses_tls`].
    pub check_ssl: Option<bool>,
    /// `check-sni`: the SNI sent by TLS checks. Default is none (the
    /// server's fixed `sni`, if any).
    pub check_sni: Option<String>,
    /// `check-alpn`: the ALPN protocols offered by TLS checks, in order.
    /// Default is none (the server's `alpn` is not used for checks).
    pub check_alpn: Option<Vec<String>>,
    /// `check-proto`: the protocol of the server's checks (`h2`: HTTP
    /// checks speak HTTP/2; `h1`; `none` for non-HTTP checks). Default is
    /// none: HTTP checks speak HTTP/2 when `check-alpn` is set and TLS
    /// negotiates `h2`, HTTP/1 otherwise.
    pub check_proto: Option<CheckProto>,
    /// `check-send-proxy`: checks send a PROXY header (version of
    /// `send-proxy-v2`, else 1) even on a check `port`/`addr`. Default is
    /// off; see [`Server::check_proxy_header`].
    pub check_send_proxy: bool,
    /// `socks4 <ip:port>`: connections to this server (requests, and
    /// checks with `check-via-socks4`) go through this SOCKS4 proxy.
    /// Default is none.
    pub socks4: Option<std::net::SocketAddr>,
    /// `check-via-socks4`: checks go through the `socks4` proxy. Default
    /// is off.
    pub check_via_socks4: bool,
    /// `proto h2`: requests go to this server over clear-text HTTP/2
    /// (h2c, prior knowledge). Default is false (HTTP/1.1).
    pub proto_h2: bool,
    /// `max-reuse`, `pool-max-conn` and `pool-purge-delay`. Default is
    /// HAProxy's: unlimited, unlimited, 5s.
    pub pool: ServerPool,
    /// `send-proxy` (1) / `send-proxy-v2` (2): the PROXY protocol header
    /// written right after connecting, before TLS. Default is none (0).
    pub send_proxy: u8,
    /// `proxy-v2-options`, `send-proxy-v2-ssl`, `send-proxy-v2-ssl-cn`:
    /// the TLVs of the v2 header. Default is none.
    pub proxy_v2: ProxyV2Options,
    /// `non-stick`: stick rules never store this server. Default is
    /// false.
    pub non_stick: bool,
    /// `resolvers`, `resolve-prefer`, `resolve-net`, `resolve-opts` and
    /// `init-addr`. Default is none set (resolved once at start-up).
    pub dns: fairlead_dns::ServerDnsOptions,
    /// The `server-template` line this server is a slot of. Default is
    /// none (a `server` line).
    pub template: Option<ServerTemplate>,
}

/// How a server's connections are pooled and reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerPool {
    /// `max-reuse N`: requests (HTTP/2 streams) a connection carries at
    /// most before it is retired; `None` for -1. Default is none
    /// (unlimited).
    pub max_reuse: Option<u32>,
    /// `pool-max-conn N`: idle connections kept per server (and worker
    /// thread); `None` for -1. Default is none (unlimited, within Fairlead's
    /// fixed cap of 256 per thread).
    pub max_idle: Option<u32>,
    /// `pool-purge-delay`: how long an idle connection is kept unused
    /// before it is closed. Default is 5s.
    pub purge_delay: Duration,
}

impl Default for ServerPool {
    fn default() -> Self {
        ServerPool {
            max_reuse: None,
            max_idle: None,
            purge_delay: Duration::from_secs(5),
        }
    }
}

/// The `server-template PREFIX N[-M] FQDN[:PORT]` a server is a slot of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTemplate {
    /// The prefix of the slot names (`PREFIX1`, `PREFIX2`, ...).
    pub prefix: String,
    /// The first and last slot numbers.
    pub range: (u32, u32),
    /// The name resolved: an SRV label when it starts with `_`.
    pub fqdn: String,
    /// The port of A/AAAA slots; SRV slots take the records' ports.
    pub port: Option<u16>,
    /// This slot's number.
    pub slot: u32,
}

impl Server {
    /// Whether health checks run over TLS: `check-ssl`, or a server with
    /// `ssl` checked on its own address and port, unless `no-check-ssl`.
    pub fn check_uses_tls(&self) -> bool {
        self.check_ssl
            .unwrap_or(self.tls.is_some() && self.check_port.is_none() && self.check_addr.is_none())
    }

    /// The PROXY protocol version of the checks' connections (0: none):
    /// `check-send-proxy`, or a server with `send-proxy`/`send-proxy-v2`
    /// checked on its own address and port (HAProxy's rule). Version 2 with
    /// `send-proxy-v2`, else 1.
    pub fn check_proxy_header(&self) -> u8 {
        let own = self.check_port.is_none() && self.check_addr.is_none();
        if self.check_send_proxy || (own && self.send_proxy > 0) {
            self.send_proxy.max(1)
        } else {
            0
        }
    }
}

impl Server {
    /// A server with HAProxy's defaults for everything but its name and
    /// address.
    pub fn new(name: &str, addr: ServerAddr) -> Server {
        Server {
            name: name.to_string(),
            location: Location::default(),
            addr,
            weight: 1,
            maxconn: 0,
            backup: false,
            disabled: false,
            check: false,
            inter: Duration::from_secs(2),
            fastinter: None,
            downinter: None,
            rise: 2,
            fall: 3,
            check_port: None,
            check_addr: None,
            agent: None,
            observe: None,
            error_limit: 10,
            on_error: OnError::FailCheck,
            slowstart: None,
            minconn: 0,
            maxqueue: 0,
            cookie: None,
            id: None,
            tls: None,
            check_ssl: None,
            check_sni: None,
            check_alpn: None,
            check_proto: None,
            check_send_proxy: false,
            socks4: None,
            check_via_socks4: false,
            proto_h2: false,
            pool: ServerPool::default(),
            send_proxy: 0,
            proxy_v2: ProxyV2Options::default(),
            non_stick: false,
            dns: fairlead_dns::ServerDnsOptions::default(),
            template: None,
        }
    }
}

/// Severity of a configuration diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Fatal: the configuration is rejected.
    Alert,
    /// Accepted, but the operator should know.
    Warning,
}

/// One message about the configuration, printed as
/// `[ALERT] file:line: message` or `[WARNING] file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub level: Level,
    pub location: Location,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tag = match self.level {
            Level::Alert => "ALERT",
            Level::Warning => "WARNING",
        };
        write!(f, "[{tag}] {}: {}", self.location, self.message)
    }
}
