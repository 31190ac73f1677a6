//! The keyword catalog: every keyword HAProxy 2.6 knows in the `global`
//! section and in proxy sections, with the sections it is valid in and what
//! Fairlead does with it. A keyword that is not in this catalog is reported
//! as unknown, with a suggestion when it is close to a known one.

/// What Fairlead does with a keyword (public view for documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Parsed into the model and honoured by the runtime.
    Implemented,
    /// Accepted with a warning: it does not change how traffic is handled
    /// (or the feature it configures is not implemented and harmlessly off).
    Warning,
    /// Rejected: "not implemented yet in Fairlead".
    NotYet,
}

/// One line of [`keyword_support`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordInfo {
    /// `global`, `defaults`, `frontend`, `listen`, `backend`, `bind` (bind
    /// options) or `server` (server options).
    pub section: &'static str,
    pub keyword: &'static str,
    pub status: Support,
    /// For warnings, the warning text; otherwise a short remark.
    pub note: &'static str,
}

/// Internal status; `Removed` keywords give a specific error (`note`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Implemented,
    Warning,
    NotYet,
    Removed,
}

pub(crate) const G: u8 = 1;
pub(crate) const D: u8 = 2;
pub(crate) const F: u8 = 4;
pub(crate) const L: u8 = 8;
pub(crate) const B: u8 = 16;
const P: u8 = D | F | L | B;
const DFL: u8 = D | F | L;
const DLB: u8 = D | L | B;
const FL: u8 = F | L;
const LB: u8 = L | B;
const FLB: u8 = F | L | B;

/// A catalog entry. Names ending in `*` match any keyword with that prefix.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kw {
    pub name: &'static str,
    pub secs: u8,
    pub status: Status,
    pub note: &'static str,
}

use Status::{Implemented as I, NotYet as N, Removed as R, Warning as W};

pub(crate) const LOG: &str = "this logging option is not implemented yet; ignored";
const OPENSSL: &str =
    "an OpenSSL setting that does not apply to rustls, Fairlead's TLS stack; ignored";
const DHE: &str = "DHE is not used by rustls (ECDHE only); ignored";
const CURVES: &str = "curve lists are not implemented yet (rustls' defaults are used); ignored";
const SIGALGS: &str =
    "signature algorithm lists are not implemented yet (rustls' defaults are used); ignored";
const PERF: &str = "a low-level tuning that Fairlead does not apply; ignored";
const UNUSED: &str = "applies to a feature Fairlead does not implement yet; ignored";
const KA: &str = "TCP keep-alive settings are not applied yet; ignored";

macro_rules! kw {
    ($name:expr, $secs:expr, $st:expr) => {
        Kw {
            name: $name,
            secs: $secs,
            status: $st,
            note: "",
        }
    };
    ($name:expr, $secs:expr, $st:expr, $note:expr) => {
        Kw {
            name: $name,
            secs: $secs,
            status: $st,
            note: $note,
        }
    };
}

/// Every known keyword. Two-word names (`option httplog`, `timeout
/// connect`, `stats socket`) are matched before one-word names.
pub(crate) static CATALOG: &[Kw] = &[
    // ---- global: implemented ----
    kw!("maxconn", G | DFL, I),
    kw!("nbthread", G, I),
    kw!("cpu-map", G, I),
    kw!("daemon", G, I),
    kw!("pidfile", G, I),
    kw!("user", G, I),
    kw!("group", G, I),
    kw!("uid", G, I),
    kw!("gid", G, I),
    kw!("ulimit-n", G, I),
    kw!("tune.bufsize", G, I),
    kw!("tune.maxaccept", G, I),
    kw!("io-uring", G, I, "Fairlead's own: HAProxy has no such keyword"),
    kw!("tune.io-uring.recv-bufs", G, I, "Fairlead's own: HAProxy has no such keyword"),
    kw!("hard-stop-after", G, I),
    kw!("setenv", G, I, "takes effect on the lines that follow"),
    kw!("presetenv", G, I, "takes effect on the lines that follow"),
    kw!("unsetenv", G, I, "takes effect on the lines that follow"),
    kw!("resetenv", G, I, "takes effect on the lines that follow"),
    kw!("log", G, I, "stdout, stderr, UDP syslog and unix datagram targets; 'ring@', 'tcp@' and 'sample' are not implemented yet"),
    // ---- global: warnings ----
    kw!("chroot", G, W, "chroot is not applied yet"),
    kw!("stats socket", G, I, "the runtime API; parsed by the admin crate"),
    kw!("stats timeout", G, I),
    kw!("stats maxconn", G, I),
    kw!("stats bind-process", G, W, "Fairlead runs a single process; 'stats bind-process' is ignored"),
    kw!("master-worker", G, I, "the same as -W"),
    kw!("log-send-hostname", G, I),
    kw!("log-tag", G | P, I),
    kw!("description", G | FLB, I, "accepted; only informative"),
    kw!("node", G, W, "only shown by the statistics page, which is not implemented yet; ignored"),
    kw!("ca-base", G, I),
    kw!("crt-base", G, I),
    kw!("key-base", G, W, "separate key files are not implemented yet; ignored"),
    kw!("ssl-default-bind-ciphers", G, I),
    kw!("ssl-default-bind-ciphersuites", G, I),
    kw!("ssl-default-bind-curves", G, W, CURVES),
    kw!("ssl-default-bind-options", G, I, "'prefer-client-ciphers' has no effect"),
    kw!("ssl-default-bind-sigalgs", G, W, SIGALGS),
    kw!("ssl-default-bind-client-sigalgs", G, W, SIGALGS),
    kw!("ssl-default-server-ciphers", G, I),
    kw!("ssl-default-server-ciphersuites", G, I),
    kw!("ssl-default-server-curves", G, W, CURVES),
    kw!("ssl-default-server-options", G, I),
    kw!("ssl-default-server-sigalgs", G, W, SIGALGS),
    kw!("ssl-default-server-client-sigalgs", G, W, SIGALGS),
    kw!("ssl-dh-param-file", G, W, DHE),
    kw!("ssl-server-verify", G, I),
    kw!("ssl-engine", G, W, OPENSSL),
    kw!("ssl-mode-async", G, W, OPENSSL),
    kw!("ssl-load-extra-files", G, W, "extra certificate files (.key, .ocsp, .issuer, .sctl) are not loaded yet; ignored"),
    kw!("ssl-load-extra-del-ext", G, W, "extra certificate files are not loaded yet; ignored"),
    kw!("ssl-skip-self-issued-ca", G, W, "not implemented yet; ignored"),
    kw!("ssl-propquery", G, W, OPENSSL),
    kw!("ssl-provider", G, W, OPENSSL),
    kw!("ssl-provider-path", G, W, OPENSSL),
    kw!("ssl-security-level", G, W, OPENSSL),
    kw!("issuers-chain-path", G, W, "completing certificate chains from a directory is not implemented yet; ignored"),
    kw!("tune.ssl.cachesize", G, I, "size of the TLS session cache"),
    kw!("tune.ssl.default-dh-param", G, W, DHE),
    kw!("tune.ssl.lifetime", G, W, "the TLS session lifetime is not configurable yet; ignored"),
    kw!("tune.ssl.maxrecord", G, W, "TLS record sizes are not configurable yet; ignored"),
    kw!("tune.ssl.force-private-cache", G, W, "the TLS session cache is never shared between processes; ignored"),
    kw!("tune.ssl.ssl-ctx-cache-size", G, W, "certificates are never generated on the fly ('generate-certificates' is not implemented yet); ignored"),
    kw!("tune.ssl.capture-buffer-size", G, W, "ClientHello capture is not implemented yet; ignored"),
    kw!("tune.ssl.capture-cipherlist-size", G, W, "ClientHello capture is not implemented yet; ignored"),
    kw!("tune.ssl.keylog", G, W, "TLS key logging is not implemented yet; ignored"),
    kw!("tune.ssl.*", G, W, OPENSSL),
    kw!("spread-checks", G, I),
    kw!("max-spread-checks", G, W, "the first checks are spread over one check interval; ignored"),
    kw!("noepoll", G, W, PERF),
    kw!("nokqueue", G, W, PERF),
    kw!("noevports", G, W, PERF),
    kw!("nopoll", G, W, PERF),
    kw!("nosplice", G, I),
    kw!("noreuseport", G, W, PERF),
    kw!("nogetaddrinfo", G, W, PERF),
    kw!("busy-polling", G, W, PERF),
    kw!("no-memory-trimming", G, W, PERF),
    kw!("numa-cpu-mapping", G, W, PERF),
    kw!("profiling.tasks", G, W, PERF),
    kw!("profiling.memory", G, W, PERF),
    kw!("tune.maxpollevents", G, W, PERF),
    kw!("tune.runqueue-depth", G, W, PERF),
    kw!("tune.sched.low-latency", G, W, PERF),
    kw!("tune.idle-pool.shared", G, W, PERF),
    kw!("tune.fd.edge-triggered", G, W, PERF),
    kw!("tune.rcvbuf.client", G, W, PERF),
    kw!("tune.rcvbuf.server", G, W, PERF),
    kw!("tune.sndbuf.client", G, W, PERF),
    kw!("tune.sndbuf.server", G, W, PERF),
    kw!("tune.pipesize", G, I),
    kw!("tune.recv_enough", G, W, PERF),
    kw!("tune.pool-high-fd-ratio", G, W, PERF),
    kw!("tune.pool-low-fd-ratio", G, W, PERF),
    kw!("tune.buffers.limit", G, W, PERF),
    kw!("tune.buffers.reserve", G, W, PERF),
    kw!("tune.pattern.cache-size", G, W, PERF),
    kw!("tune.listener.multi-queue", G, I),
    kw!("tune.h2.header-table-size", G, I),
    kw!("tune.h2.initial-window-size", G, I),
    kw!("tune.h2.fe.initial-window-size", G, I),
    kw!("tune.h2.be.initial-window-size", G, I),
    kw!("tune.h2.max-concurrent-streams", G, I),
    kw!("tune.h2.fe.max-concurrent-streams", G, I),
    kw!("tune.h2.be.max-concurrent-streams", G, I),
    kw!("tune.h2.max-frame-size", G, I),
    kw!("tune.h2.fe.max-total-streams", G, I),
    kw!("tune.h2.fe.glitches-threshold", G, I),
    kw!("tune.h2.be.glitches-threshold", G, I),
    kw!("tune.h2.zero-copy-fwd-send", G, W, PERF),
    kw!("tune.lua.*", G, W, UNUSED),
    kw!("tune.vars.*", G, W, UNUSED),
    kw!("tune.quic.*", G, W, UNUSED),
    kw!("tune.comp.maxlevel", G, W, UNUSED),
    kw!("tune.zlib.memlevel", G, W, UNUSED),
    kw!("tune.zlib.windowsize", G, W, UNUSED),
    kw!("tune.http.logurilen", G, W, "the request line is logged whole, up to the target's 'len'; ignored"),
    kw!("quiet", G, W, "only affects start-up messages; ignored"),
    kw!("expose-experimental-directives", G, W, "Fairlead has no experimental directives; ignored"),
    kw!("insecure-fork-wanted", G, W, "Fairlead never forks; ignored"),
    kw!("insecure-setuid-wanted", G, W, "Fairlead never runs setuid programs; ignored"),
    kw!("set-dumpable", G, W, "not applied; ignored"),
    kw!("strict-limits", G, I),
    kw!("localpeer", G, I),
    // ---- global: not implemented ----
    kw!("lua-load", G, N),
    kw!("lua-load-per-thread", G, N),
    kw!("lua-prepend-path", G, N),
    kw!("maxconnrate", G, N),
    kw!("maxsessrate", G, N),
    kw!("maxsslrate", G, N),
    kw!("maxcomprate", G, N),
    kw!("maxcompcpuusage", G, N),
    kw!("maxpipes", G, I),
    kw!("maxsslconn", G, N),
    kw!("maxzlibmem", G, N),
    kw!("grace", G, N),
    kw!("unix-bind", G, N),
    kw!("external-check", G, N),
    kw!("default-path", G, N),
    kw!("server-state-file", G, I),
    kw!("server-state-base", G, I),
    kw!("tune.http.maxhdr", G, N),
    kw!("tune.http.cookielen", G, N),
    kw!("tune.maxrewrite", G, N),
    kw!("tune.idletimer", G, N),
    kw!("tune.fail-alloc", G, N),
    kw!("zero-warning", G, N),
    kw!("thread-groups", G, N),
    kw!("thread-group", G, N),
    kw!("51degrees-*", G, N),
    kw!("deviceatlas-*", G, N),
    kw!("wurfl-*", G, N),
    kw!("httpclient.*", G, N),
    kw!("cluster-secret", G, N),
    kw!("pp2-never-send-local", G, N),
    kw!("set-var", G, N),
    kw!("set-var-fmt", G, N),
    kw!("mworker-max-reloads", G, N),
    kw!("h1-case-adjust", G, N),
    kw!("h1-case-adjust-file", G, N),
    kw!("h2-workaround-bogus-websocket-clients", G, N),
    kw!("fd-hard-limit", G, N),
    kw!("anonkey", G, N),
    kw!("trace", G, N),
    kw!("nbproc", G, R, "nbproc is not supported any more since HAProxy 2.5. Threads will automatically be used on multi-processor machines if available."),
    kw!("bind-process", G | P, W, "'bind-process' has no effect since HAProxy 2.5 (processes were removed); ignored"),
    // ---- proxies: implemented ----
    kw!("mode", P, I),
    kw!("bind", FL, I),
    kw!("server", LB, I),
    kw!("default-server", DLB, I),
    kw!("default_backend", DFL, I),
    kw!("balance", DLB, I, "'hash' and 'url_param ... check_post' are not implemented yet"),
    kw!("hash-type", DLB, I),
    kw!("fullconn", DLB, I),
    kw!("cookie", DLB, I, "'dynamic' and 'attr' are not implemented yet"),
    kw!("retry-on", DLB, I),
    kw!("option allbackups", DLB, I),
    kw!("option persist", DLB, I),
    kw!("option httpchk", DLB, I),
    kw!("option tcp-check", DLB, I),
    kw!("option redis-check", DLB, I),
    kw!("http-check", DLB, I, "one request per check; 'send-state' and log-format arguments are not implemented yet"),
    kw!("tcp-check", DLB, I, "log-format arguments, 'set-var', 'unset-var' and the expect status options are not implemented yet"),
    kw!("timeout check", DLB, I),
    kw!("retries", DLB, I),
    kw!("timeout connect", DLB, I),
    kw!("timeout client", DFL, I),
    kw!("timeout server", DLB, I),
    kw!("timeout http-request", P, I),
    kw!("timeout http-keep-alive", P, I),
    kw!("timeout tunnel", DLB, I),
    kw!("timeout client-fin", DFL, I),
    kw!("timeout server-fin", DLB, I),
    kw!("timeout queue", DLB, I),
    kw!("option http-keep-alive", P, I),
    kw!("option httpclose", P, I),
    kw!("option http-server-close", P, I),
    kw!("option forwardfor", P, I),
    kw!("option redispatch", DLB, I),
    kw!("http-reuse", DLB, I),
    kw!("disabled", P, I),
    kw!("enabled", P, I),
    kw!("stats enable", P, I),
    kw!("stats uri", P, I),
    kw!("stats realm", P, I),
    kw!("stats auth", P, I),
    kw!("stats refresh", P, I),
    kw!("stats admin", FLB, I),
    kw!("stats hide-version", P, I),
    kw!("stats show-legends", P, I),
    kw!("stats show-node", P, I),
    kw!("stats scope", P, I),
    kw!("http-request use-service", FL, I, "only 'prometheus-exporter', unconditionally or 'if { path <p> }' / 'if { path_beg <p> }'; other actions are not implemented yet"),
    // ---- proxies: warnings ----
    kw!("log", P, I, "stdout, stderr, UDP syslog and unix datagram targets; 'ring@', 'tcp@' and 'sample' are not implemented yet"),
    kw!("log-format", DFL, I),
    kw!("log-format-sd", DFL, W, "RFC 5424 structured data is not implemented yet ('-' is sent); ignored"),
    kw!("error-log-format", DFL, W, "connection error logs (TLS, PROXY protocol) are not implemented yet; ignored"),
    kw!("option httplog", DFL, I),
    kw!("option httplog-json", DFL, I, "Fairlead extension: the 'option httplog' fields as one JSON object per line"),
    kw!("option httpslog", DFL, I),
    kw!("option tcplog", DFL, I),
    kw!("option dontlognull", DFL, I),
    kw!("option dontlog-normal", DFL, I),
    kw!("option log-separate-errors", DFL, I),
    kw!("option logasap", DFL, W, "logs are emitted at the end of each stream; ignored"),
    kw!("option log-health-checks", DLB, I),
    kw!("option http-ignore-probes", DFL, W, LOG),
    kw!("option contstats", DFL, W, "statistics are not implemented yet; ignored"),
    kw!("option socket-stats", DFL, W, "statistics are not implemented yet; ignored"),
    kw!("timeout tarpit", P, I),
    kw!("option tcpka", P, W, KA),
    kw!("option clitcpka", DFL, W, KA),
    kw!("option srvtcpka", DLB, W, KA),
    kw!("clitcpka-cnt", DFL, W, KA),
    kw!("clitcpka-idle", DFL, W, KA),
    kw!("clitcpka-intvl", DFL, W, KA),
    kw!("srvtcpka-cnt", DLB, W, KA),
    kw!("srvtcpka-idle", DLB, W, KA),
    kw!("srvtcpka-intvl", DLB, W, KA),
    kw!("option splice-auto", P, I),
    kw!("option splice-request", P, I),
    kw!("option splice-response", P, I),
    kw!("option tcp-smart-accept", DFL, I, "automatic: on in mode http, off in mode tcp"),
    kw!("option tcp-smart-connect", DLB, I, "default is off"),
    kw!("option http-no-delay", P, I, "body data is sent at once, never held with MSG_MORE"),
    kw!("backlog", DFL, W, "the listen backlog is left to the system default; ignored"),
    kw!("option prefer-last-server", DLB, W, "only a hint to reuse the last server; ignored"),
    kw!("hash-balance-factor", DLB, W, "bounded-load consistent hashing is not implemented yet; ignored"),
    kw!("id", FLB, W, "numeric proxy ids are only used by statistics; ignored"),
    // ---- proxies: not implemented ----
    kw!("acl", P, I),
    kw!("use_backend", FL, I),
    kw!("use-server", LB, I),
    kw!("use-fcgi-app", LB, N),
    kw!("http-request", P, I),
    kw!("http-response", P, I),
    kw!("http-after-response", P, I),
    kw!("http-error", P, I),
    kw!("http-send-name-header", DLB, N),
    kw!("tcp-request", P, I),
    kw!("tcp-response", DLB, I),
    kw!("stick-table", FLB, I, "the 2.x form"),
    kw!("stick", LB, I, "'match', 'on', 'store-request' and 'store-response'; the table stores 'server_id' and 'server_key'"),
    kw!("stats http-request", FLB, I),
    kw!("stats show-desc", P, N),
    kw!("stats show-modules", P, N),
    kw!("dynamic-cookie-key", DLB, N),
    kw!("capture", FL, I),
    kw!("declare", FL, I),
    kw!("compression", P, N),
    kw!("errorfile", P, I),
    kw!("errorfiles", P, I),
    kw!("errorloc", P, I),
    kw!("errorloc302", P, I),
    kw!("errorloc303", P, I),
    kw!("monitor-uri", DFL, I),
    kw!("monitor", FL, I),
    kw!("redirect", FLB, I),
    kw!("filter", FLB, N),
    kw!("force-persist", LB, I, "the persistence cookie or a stick match may designate a down server"),
    kw!("ignore-persist", LB, I, "the persistence cookie is neither read nor set"),
    kw!("persist", DLB, I, "'persist rdp-cookie' (TCP mode)"),
    kw!("dispatch", LB, N),
    kw!("source", DLB, N),
    kw!("rate-limit", DFL, N),
    kw!("email-alert", P, N),
    kw!("server-template", LB, I),
    kw!("server-state-file-name", DLB, I),
    kw!("load-server-state-from-file", DLB, I),
    kw!("unique-id-format", DFL, I, "HTTP and TCP modes"),
    kw!("unique-id-header", DFL, I),
    kw!("max-keep-alive-queue", DLB, N),
    kw!("max-session-srv-conns", DFL, N),
    kw!("guid", FLB, N),
    kw!("option abortonclose", DLB, N),
    kw!("option accept-invalid-http-request", DFL, I),
    kw!("option accept-invalid-http-response", DLB, I),
    kw!("option checkcache", DLB, N),
    kw!("option disable-h2-upgrade", DFL, N),
    kw!("option h1-case-adjust-bogus-client", DFL, N),
    kw!("option h1-case-adjust-bogus-server", DLB, N),
    kw!("option http-buffer-request", P, I),
    kw!("option http-pretend-keepalive", DLB, N),
    kw!("option http-restrict-req-hdr-names", P, N),
    kw!("option http-use-proxy-header", DFL, N),
    kw!("option idle-close-on-response", DFL, N),
    kw!("option independent-streams", P, N),
    kw!("option nolinger", P, N),
    kw!("option originalto", P, N),
    kw!("option transparent", DLB, N),
    kw!("option ssl-hello-chk", DLB, I),
    kw!("option smtpchk", DLB, I),
    kw!("option ldap-check", DLB, I),
    kw!("option mysql-check", DLB, I),
    kw!("option pgsql-check", DLB, I),
    kw!("option spop-check", DLB, I),
    kw!("option external-check", DLB, N),
    kw!("external-check", DLB, N),
    kw!("transparent", DLB, N),
    // ---- removed keywords ----
    kw!("option forceclose", P, R, "option 'forceclose' is not supported any more since HAProxy 2.0; use 'option httpclose' instead."),
    kw!("option http-tunnel", P, R, "option 'http-tunnel' is not supported any more since HAProxy 2.1; the tunnel mode is the default once a request is upgraded."),
    kw!("option http-use-htx", P, W, "deprecated and ignored since HAProxy 2.1; HTX is the only mode"),
    kw!("option independant-streams", P, R, "option 'independant-streams' is not supported any more; use 'option independent-streams'."),
    kw!("contimeout", DLB, R, "the 'contimeout' directive is not supported any more since HAProxy 2.1; use 'timeout connect' instead."),
    kw!("clitimeout", DFL, R, "the 'clitimeout' directive is not supported any more since HAProxy 2.1; use 'timeout client' instead."),
    kw!("srvtimeout", DLB, R, "the 'srvtimeout' directive is not supported any more since HAProxy 2.1; use 'timeout server' instead."),
    kw!("redispatch", DLB, R, "the 'redispatch' directive is not supported any more since HAProxy 2.1; use 'option redispatch' instead."),
    kw!("monitor-net", DFL, R, "the 'monitor-net' directive is not supported any more since HAProxy 2.4; use 'http-request return status 200 if { src ... }' instead."),
    kw!("appsession", P, R, "the 'appsession' directive is not supported any more since HAProxy 1.6; use stick tables instead."),
    kw!("block", P, R, "the 'block' directive is not supported any more since HAProxy 2.1; use 'http-request deny' instead."),
    kw!("reqadd", P, R, "the 'reqadd' directive is not supported any more since HAProxy 2.1; use 'http-request add-header' instead."),
    kw!("reqrep", P, R, "the 'reqrep' directive is not supported any more since HAProxy 2.1; use 'http-request replace-path', 'http-request replace-uri' or 'http-request replace-header' instead."),
    kw!("reqirep", P, R, "the 'reqirep' directive is not supported any more since HAProxy 2.1; use 'http-request replace-path', 'http-request replace-uri' or 'http-request replace-header' instead."),
    kw!("reqdel", P, R, "the 'reqdel' directive is not supported any more since HAProxy 2.1; use 'http-request del-header' instead."),
    kw!("reqidel", P, R, "the 'reqidel' directive is not supported any more since HAProxy 2.1; use 'http-request del-header' instead."),
    kw!("reqdeny", P, R, "the 'reqdeny' directive is not supported any more since HAProxy 2.1; use 'http-request deny' instead."),
    kw!("reqideny", P, R, "the 'reqideny' directive is not supported any more since HAProxy 2.1; use 'http-request deny' instead."),
    kw!("reqallow", P, R, "the 'reqallow' directive is not supported any more since HAProxy 2.1; use 'http-request allow' instead."),
    kw!("reqiallow", P, R, "the 'reqiallow' directive is not supported any more since HAProxy 2.1; use 'http-request allow' instead."),
    kw!("reqpass", P, R, "the 'reqpass' directive is not supported any more since HAProxy 2.1; use 'http-request' rules instead."),
    kw!("reqipass", P, R, "the 'reqipass' directive is not supported any more since HAProxy 2.1; use 'http-request' rules instead."),
    kw!("reqtarpit", P, R, "the 'reqtarpit' directive is not supported any more since HAProxy 2.1; use 'http-request tarpit' instead."),
    kw!("reqitarpit", P, R, "the 'reqitarpit' directive is not supported any more since HAProxy 2.1; use 'http-request tarpit' instead."),
    kw!("reqsetbe", P, R, "the 'reqsetbe' directive is not supported any more since HAProxy 2.1; use 'use_backend' instead."),
    kw!("reqisetbe", P, R, "the 'reqisetbe' directive is not supported any more since HAProxy 2.1; use 'use_backend' instead."),
    kw!("rspadd", P, R, "the 'rspadd' directive is not supported any more since HAProxy 2.1; use 'http-response add-header' instead."),
    kw!("rsprep", P, R, "the 'rsprep' directive is not supported any more since HAProxy 2.1; use 'http-response replace-header' instead."),
    kw!("rspirep", P, R, "the 'rspirep' directive is not supported any more since HAProxy 2.1; use 'http-response replace-header' instead."),
    kw!("rspdel", P, R, "the 'rspdel' directive is not supported any more since HAProxy 2.1; use 'http-response del-header' instead."),
    kw!("rspidel", P, R, "the 'rspidel' directive is not supported any more since HAProxy 2.1; use 'http-response del-header' instead."),
    kw!("rspdeny", P, R, "the 'rspdeny' directive is not supported any more since HAProxy 2.1; use 'http-response deny' instead."),
    kw!("rspideny", P, R, "the 'rspideny' directive is not supported any more since HAProxy 2.1; use 'http-response deny' instead."),
];

fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix) && name.len() > prefix.len(),
        None => pattern == name,
    }
}

/// Keywords whose second word is part of their name.
pub(crate) fn is_two_word(first: &str) -> bool {
    matches!(first, "option" | "timeout" | "stats" | "http-request")
}

/// Finds the catalog entry for a line's words, preferring two-word names.
/// `global` selects between the global and the proxy entries.
pub(crate) fn lookup(words: &[String], global: bool) -> Option<&'static Kw> {
    let want = |k: &&Kw| {
        if global {
            k.secs & G != 0
        } else {
            k.secs & !G != 0
        }
    };
    if words.len() >= 2 && is_two_word(&words[0]) {
        let two = format!("{} {}", words[0], words[1]);
        if let Some(k) = CATALOG
            .iter()
            .filter(want)
            .find(|k| name_matches(k.name, &two))
        {
            return Some(k);
        }
        if words[0] == "option" || words[0] == "timeout" || words[0] == "stats" {
            return None;
        }
    }
    CATALOG
        .iter()
        .filter(want)
        .find(|k| !k.name.contains(' ') && name_matches(k.name, &words[0]))
}

/// Edit distance between two short strings.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest known name among `candidates`, if close enough.
pub(crate) fn suggest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.len() / 4).max(2);
    // The edit distance is at least the difference in length, so a
    // candidate whose length is further than `limit` away can never be
    // suggested: skip it rather than compute a distance that costs
    // len(word) x len(candidate) (a long unknown word on every line made a
    // 1 MB file take seconds to parse).
    let chars = word.chars().count();
    let (best, d) = candidates
        .filter(|c| !c.ends_with('*'))
        .filter(|c| c.chars().count().abs_diff(chars) <= limit)
        .map(|c| (c, distance(word, c)))
        .min_by_key(|(_, d)| *d)?;
    (d > 0 && d <= limit && d < word.len()).then_some(best)
}

/// Suggestion for an unknown keyword in a section (`secs` is the section
/// flag), only among keywords valid there.
pub(crate) fn suggest_keyword(words: &[String], secs: u8) -> Option<String> {
    if words.len() >= 2 && (words[0] == "option" || words[0] == "timeout") {
        let prefix = format!("{} ", words[0]);
        return suggest(
            &words[1],
            CATALOG
                .iter()
                .filter(|k| k.secs & secs != 0)
                .filter_map(|k| k.name.strip_prefix(prefix.as_str())),
        )
        .map(|s| format!("{prefix}{s}"));
    }
    suggest(
        &words[0],
        CATALOG
            .iter()
            .filter(|k| k.secs & secs != 0)
            .map(|k| k.name.split(' ').next().unwrap_or(k.name)),
    )
    .map(str::to_string)
}

/// Lists what Fairlead does with every keyword it implements or accepts
/// with a warning, and the ones it knows but rejects as not implemented
/// yet. Proxy keywords are listed once per section they are valid in.
pub fn keyword_support() -> Vec<KeywordInfo> {
    let mut out = Vec::new();
    let secs = [
        (G, "global"),
        (D, "defaults"),
        (F, "frontend"),
        (L, "listen"),
        (B, "backend"),
    ];
    for (flag, section) in secs {
        for k in CATALOG.iter().filter(|k| k.secs & flag != 0) {
            let status = match k.status {
                Status::Implemented => Support::Implemented,
                Status::Warning => Support::Warning,
                Status::NotYet => Support::NotYet,
                Status::Removed => continue,
            };
            out.push(KeywordInfo {
                section,
                keyword: k.name,
                status,
                note: k.note,
            });
        }
    }
    for (keyword, status, note) in crate::bind::bind_option_support() {
        out.push(KeywordInfo {
            section: "bind",
            keyword,
            status,
            note,
        });
    }
    for (keyword, status, note) in crate::server::server_option_support() {
        out.push(KeywordInfo {
            section: "server",
            keyword,
            status,
            note,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn lookups() {
        assert_eq!(lookup(&w("maxconn 10"), true).unwrap().name, "maxconn");
        assert_eq!(
            lookup(&w("option httplog"), false).unwrap().name,
            "option httplog"
        );
        assert_eq!(
            lookup(&w("timeout connect 5s"), false).unwrap().name,
            "timeout connect"
        );
        assert_eq!(
            lookup(&w("stats socket /x"), true).unwrap().status,
            Status::Implemented
        );
        assert_eq!(
            lookup(&w("stats bind-process 1"), true).unwrap().status,
            Status::Warning
        );
        assert_eq!(
            lookup(&w("stats enable"), false).unwrap().status,
            Status::Implemented
        );
        assert!(lookup(&w("stats enable"), true).is_none());
        assert!(lookup(&w("stats nope"), false).is_none());
        assert_eq!(
            lookup(&w("stats show-desc x"), false).unwrap().status,
            Status::NotYet
        );
        assert_eq!(
            lookup(&w("http-request use-service prometheus-exporter"), false)
                .unwrap()
                .name,
            "http-request use-service"
        );
        assert_eq!(
            lookup(&w("http-request deny"), false).unwrap().name,
            "http-request"
        );
        assert_eq!(
            lookup(&w("tune.ssl.cachesize 1"), true).unwrap().status,
            Status::Implemented
        );
        assert_eq!(
            lookup(&w("tune.ssl.lifetime 1"), true).unwrap().name,
            "tune.ssl.lifetime"
        );
        assert_eq!(
            lookup(&w("tune.ssl.hard-maxrecord 1"), true).unwrap().name,
            "tune.ssl.*"
        );
        assert!(lookup(&w("option nope"), false).is_none());
        assert!(lookup(&w("debug"), true).is_none());
        assert!(lookup(&w("bind :80"), true).is_none());
        assert!(lookup(&w("tune.ssl."), true).is_none());
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            suggest_keyword(&w("maxconns 1"), G).as_deref(),
            Some("maxconn")
        );
        assert_eq!(
            suggest_keyword(&w("option httplogg"), F).as_deref(),
            Some("option httplog")
        );
        assert_eq!(suggest_keyword(&w("debug"), G), None);
        assert_eq!(
            suggest_keyword(&w("defualt_backend x"), F).as_deref(),
            Some("default_backend")
        );
    }

    #[test]
    fn suggestions_skip_candidates_by_length() {
        let c = ["abcdefgh", "abcdefghi", "x"];
        // 12 bytes: limit 3; "abcdefghi" is 3 edits away, "abcdefgh" 4.
        assert_eq!(suggest("abcdefghijkl", c.into_iter()), Some("abcdefghi"));
        assert_eq!(suggest("abcdefghijkl", c[..1].iter().copied()), None);
        // Ties still go to the first candidate.
        assert_eq!(suggest("abcd", ["abce", "abcf"].into_iter()), Some("abce"));
        assert_eq!(suggest("", ["ab", "abc"].into_iter()), None);
    }

    /// Found by the `config_parse` fuzz target (slowest units): every
    /// unknown 2000-character word was compared with the whole catalog,
    /// 15 s for this 4 KB input under the fuzzer, seconds for 1 MB in a
    /// release build.
    #[test]
    fn long_unknown_words_are_cheap() {
        let text = format!(
            "frontend f\n{}",
            format!("{}\n", "a".repeat(2040)).repeat(2)
        );
        let errs = crate::parse(
            &[crate::Source {
                name: "t.cfg".into(),
                text,
            }],
            &|_| None,
        )
        .unwrap_err();
        let unknown: Vec<_> = errs
            .iter()
            .filter(|d| d.message.starts_with("unknown keyword 'aaaa"))
            .collect();
        assert_eq!(unknown.len(), 2);
        assert!(unknown.iter().all(|d| !d.message.contains("did you mean")));
        assert_eq!(
            suggest(&"maxconn".repeat(300), CATALOG.iter().map(|k| k.name)),
            None
        );
    }

    #[test]
    fn support_list() {
        let all = keyword_support();
        assert!(all.iter().any(|k| k.section == "global"
            && k.keyword == "maxconn"
            && k.status == Support::Implemented));
        assert!(all
            .iter()
            .any(|k| k.section == "frontend" && k.keyword == "bind"));
        assert!(!all
            .iter()
            .any(|k| k.section == "backend" && k.keyword == "bind"));
        assert!(all
            .iter()
            .any(|k| k.section == "bind" && k.keyword == "v6only"));
        assert!(all
            .iter()
            .any(|k| k.section == "server" && k.keyword == "weight"));
        assert!(!all.iter().any(|k| k.keyword == "reqadd"));
    }
}
