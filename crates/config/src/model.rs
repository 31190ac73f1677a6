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

/// Where a keyword came from, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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

/// One `log` target. Stored only; logging comes with the operations issue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogTarget {
    /// The words after `log`, e.g. `["127.0.0.1:514", "local0", "info"]`.
    pub args: Vec<String>,
    pub location: Location,
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
    pub logs: Vec<LogTarget>,
    /// `tune.bufsize`. Default is 16384.
    pub bufsize: usize,
    /// `tune.maxaccept`: connections accepted per wake-up per listener.
    /// Default is 64; -1 means unlimited.
    pub maxaccept: i32,
    /// `hard-stop-after`. Default is none (wait for the longest timeout).
    pub hard_stop_after: Option<Duration>,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            maxconn: None,
            nbthread: None,
            cpu_map: Vec::new(),
            daemon: false,
            pidfile: None,
            user: None,
            uid: None,
            group: None,
            gid: None,
            ulimit_n: None,
            logs: Vec::new(),
            bufsize: 16384,
            maxaccept: 64,
            hard_stop_after: None,
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

/// Settings shared by frontends and backends, after `defaults` inheritance.
#[derive(Debug, Clone, Default)]
pub struct ProxyOptions {
    pub mode: Mode,
    pub timeouts: Timeouts,
    pub http_conn_mode: HttpConnMode,
    pub http_reuse: HttpReuse,
    /// `option forwardfor`. Default is off.
    pub forwardfor: Option<ForwardFor>,
    /// `option redispatch`. Default is off.
    pub redispatch: bool,
    /// `retries`. Default is 3.
    pub retries: u32,
    /// `maxconn`. Default is `None`: the global maxconn applies.
    pub maxconn: Option<u32>,
    pub balance: Balance,
}

/// `balance <algorithm>`. Only the algorithms the runtime implements are
/// represented; the parser reports the others as not implemented yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    #[default]
    RoundRobin,
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
}

/// Where a server lives. Names are resolved at start-up by the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    /// A literal IP address and port.
    Ip(SocketAddr),
    /// A host name and port, resolved when the runtime starts.
    Name(String, u16),
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
    /// `check` was given. Stored; active checks come with the balancing
    /// issue, until then the server is considered up.
    pub check: bool,
}

/// Severity of a configuration diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
