//! Prometheus text exposition (format 0.0.4) with the metric names, types
//! and labels of HAProxy's built-in exporter (`haproxy_process_*`,
//! `haproxy_frontend_*`, `haproxy_backend_*`, `haproxy_server_*`; labels
//! `proxy`, `server`, and `state` / `code` where HAProxy has them), plus
//! Fairlead's latency histograms:
//! `haproxy_{frontend,backend,server}_{queue,connect,response,total}_time_seconds`
//! (`_bucket{le}`, `_sum`, `_count`), present for the objects whose
//! [`crate::Latency`] fields are set.
//!
//! Families are grouped (one `# HELP` and `# TYPE` each, then all their
//! samples), in HAProxy's order. A value that HAProxy would print as an
//! empty CSV field (no check, no limit...) is left out rather than
//! printed as `NaN`; a family with no sample is left out entirely.
//! Content type: [`CONTENT_TYPE`].

use crate::histogram::{HistogramSnapshot, BUCKET_BOUNDS_MICROS};
use crate::model::{Mode, ProxyKind, ProxyStats, ServerStats, Snapshot};
use std::io::Write;

/// `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

#[derive(Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

#[derive(Clone, Copy)]
enum Ty {
    Gauge,
    Counter,
}

impl Ty {
    fn as_str(self) -> &'static str {
        match self {
            Ty::Gauge => "gauge",
            Ty::Counter => "counter",
        }
    }
}

use Num::U;
use Ty::{Counter, Gauge};

/// Sample getters. Every object is seen as a (proxy, server) pair; for
/// frontends and backends the server is an empty placeholder.
type G1 = fn(&ProxyStats, &ServerStats) -> Option<Num>;
type G2 = fn(&ProxyStats, &ServerStats, &str) -> Option<Num>;

/// How a family gets its samples from one object.
enum Get {
    /// One sample.
    One(G1),
    /// One sample per label value (`state="UP"`, `code="2xx"`...).
    Per(&'static str, &'static [&'static str], G2),
}

struct Fam {
    name: &'static str,
    help: &'static str,
    ty: Ty,
    get: Get,
}

const fn one(name: &'static str, ty: Ty, help: &'static str, g: G1) -> Fam {
    Fam {
        name,
        help,
        ty,
        get: Get::One(g),
    }
}

const fn per(
    name: &'static str,
    ty: Ty,
    help: &'static str,
    label: &'static str,
    values: &'static [&'static str],
    g: G2,
) -> Fam {
    Fam {
        name,
        help,
        ty,
        get: Get::Per(label, values, g),
    }
}

fn ms(v: u64) -> Option<Num> {
    Some(Num::F(v as f64 / 1000.0))
}

fn http(px: &ProxyStats, v: u64) -> Option<Num> {
    (px.mode == Mode::Http).then_some(U(v))
}

fn hrsp(c: &crate::Counters, code: &str) -> u64 {
    match code {
        "1xx" => c.hrsp_1xx,
        "2xx" => c.hrsp_2xx,
        "3xx" => c.hrsp_3xx,
        "4xx" => c.hrsp_4xx,
        "5xx" => c.hrsp_5xx,
        _ => c.hrsp_other,
    }
}

const CODES: &[&str] = &["1xx", "2xx", "3xx", "4xx", "5xx", "other"];
const PX_STATES: &[&str] = &["DOWN", "UP"];
const SRV_STATES: &[&str] = &["DOWN", "UP", "MAINT", "DRAIN", "NOLB"];
const CHECK_STATES: &[&str] = &[
    "HANA", "SOCKERR", "L4OK", "L4TOUT", "L4CON", "L6OK", "L6TOUT", "L6RSP", "L7TOUT", "L7RSP",
    "L7OK", "L7OKC", "L7STS", "PROCERR", "PROCTOUT", "PROCOK",
];

fn px_up(px: &ProxyStats) -> bool {
    matches!(px.status.as_str(), "UP" | "OPEN" | "FULL")
}

#[rustfmt::skip]
static FRONTEND: &[Fam] = &[
    one("current_sessions", Gauge, "Current sessions.", |p, _| Some(U(p.counters.scur))),
    one("max_sessions", Gauge, "Highest number of current sessions since start.", |p, _| Some(U(p.counters.smax))),
    one("limit_sessions", Gauge, "Configured session limit (maxconn).", |p, _| p.slim.map(U)),
    one("sessions_total", Counter, "Sessions since start.", |p, _| Some(U(p.counters.stot))),
    one("bytes_in_total", Counter, "Request bytes received since start.", |p, _| Some(U(p.counters.bin))),
    one("bytes_out_total", Counter, "Response bytes sent since start.", |p, _| Some(U(p.counters.bout))),
    one("requests_denied_total", Counter, "Requests denied by rules since start.", |p, _| Some(U(p.counters.dreq))),
    one("responses_denied_total", Counter, "Responses denied by rules since start.", |p, _| Some(U(p.counters.dresp))),
    one("request_errors_total", Counter, "Invalid or aborted requests since start.", |p, _| Some(U(p.counters.ereq))),
    per("status", Gauge, "Current status of the frontend, 1 for the state label that applies.", "state", PX_STATES, |p, _, s| Some(U(u64::from((s == "UP") == px_up(p))))),
    one("limit_session_rate", Gauge, "Configured limit of new sessions per second.", |p, _| Some(U(p.rate_lim))),
    one("max_session_rate", Gauge, "Highest number of new sessions per second since start.", |p, _| Some(U(p.counters.rate_max))),
    per("http_responses_total", Counter, "HTTP responses by status class since start.", "code", CODES, |p, _, c| http(p, hrsp(&p.counters, c))),
    one("http_requests_rate_max", Gauge, "Highest number of HTTP requests per second since start.", |p, _| http(p, p.counters.req_rate_max)),
    one("http_requests_total", Counter, "HTTP requests since start.", |p, _| http(p, p.counters.req_tot)),
    one("http_comp_bytes_in_total", Counter, "Bytes fed to the HTTP compressor since start.", |p, _| http(p, p.counters.comp_in)),
    one("http_comp_bytes_out_total", Counter, "Bytes produced by the HTTP compressor since start.", |p, _| http(p, p.counters.comp_out)),
    one("http_comp_bytes_bypassed_total", Counter, "Bytes that skipped the HTTP compressor since start.", |p, _| http(p, p.counters.comp_byp)),
    one("http_comp_responses_total", Counter, "HTTP responses compressed since start.", |p, _| http(p, p.counters.comp_rsp)),
    one("connections_rate_max", Gauge, "Highest number of new connections per second since start.", |p, _| Some(U(p.counters.conn_rate_max))),
    one("connections_total", Counter, "Connections accepted since start.", |p, _| Some(U(p.counters.conn_tot))),
    one("intercepted_requests_total", Counter, "Requests answered by the proxy itself (stats, redirects) since start.", |p, _| http(p, p.counters.intercepted)),
    one("denied_connections_total", Counter, "Connections denied by tcp-request connection rules since start.", |p, _| Some(U(p.counters.dcon))),
    one("denied_sessions_total", Counter, "Sessions denied by tcp-request session rules since start.", |p, _| Some(U(p.counters.dses))),
    one("failed_header_rewriting_total", Counter, "Failed HTTP header rewrites since start.", |p, _| Some(U(p.counters.wrew))),
    one("http_cache_lookups_total", Counter, "HTTP cache lookups since start.", |p, _| http(p, p.counters.cache_lookups)),
    one("http_cache_hits_total", Counter, "HTTP cache hits since start.", |p, _| http(p, p.counters.cache_hits)),
    one("internal_errors_total", Counter, "Internal errors since start.", |p, _| Some(U(p.counters.eint))),
];

#[rustfmt::skip]
static BACKEND: &[Fam] = &[
    one("current_queue", Gauge, "Requests waiting in the queue.", |p, _| Some(U(p.counters.qcur))),
    one("max_queue", Gauge, "Highest queue length since start.", |p, _| Some(U(p.counters.qmax))),
    one("current_sessions", Gauge, "Current sessions.", |p, _| Some(U(p.counters.scur))),
    one("max_sessions", Gauge, "Highest number of current sessions since start.", |p, _| Some(U(p.counters.smax))),
    one("limit_sessions", Gauge, "Configured session limit (fullconn).", |p, _| p.slim.map(U)),
    one("sessions_total", Counter, "Sessions since start.", |p, _| Some(U(p.counters.stot))),
    one("bytes_in_total", Counter, "Request bytes received since start.", |p, _| Some(U(p.counters.bin))),
    one("bytes_out_total", Counter, "Response bytes sent since start.", |p, _| Some(U(p.counters.bout))),
    one("requests_denied_total", Counter, "Requests denied by rules since start.", |p, _| Some(U(p.counters.dreq))),
    one("responses_denied_total", Counter, "Responses denied by rules since start.", |p, _| Some(U(p.counters.dresp))),
    one("connection_errors_total", Counter, "Failed connections to servers since start.", |p, _| Some(U(p.counters.econ))),
    one("response_errors_total", Counter, "Invalid or aborted responses since start.", |p, _| Some(U(p.counters.eresp))),
    one("retry_warnings_total", Counter, "Connection retries since start.", |p, _| Some(U(p.counters.wretr))),
    one("redispatch_warnings_total", Counter, "Redispatches to another server since start.", |p, _| Some(U(p.counters.wredis))),
    per("status", Gauge, "Current status of the backend, 1 for the state label that applies.", "state", PX_STATES, |p, _, s| Some(U(u64::from((s == "UP") == px_up(p))))),
    one("weight", Gauge, "Sum of the effective weights of the servers in use.", |p, _| Some(U(p.weight))),
    one("active_servers", Gauge, "Active servers UP.", |p, _| Some(U(p.act))),
    one("backup_servers", Gauge, "Backup servers UP.", |p, _| Some(U(p.bck))),
    one("check_up_down_total", Counter, "Transitions of the backend to DOWN since start.", |p, _| Some(U(p.chkdown))),
    one("check_last_change_seconds", Gauge, "Seconds since the last state change.", |p, _| Some(U(p.lastchg_secs))),
    one("downtime_seconds_total", Counter, "Seconds spent DOWN since start.", |p, _| p.downtime_secs.map(U)),
    one("loadbalanced_total", Counter, "Times a server was picked by the balancer since start.", |p, _| Some(U(p.counters.lbtot))),
    one("max_session_rate", Gauge, "Highest number of new sessions per second since start.", |p, _| Some(U(p.counters.rate_max))),
    per("http_responses_total", Counter, "HTTP responses by status class since start.", "code", CODES, |p, _, c| http(p, hrsp(&p.counters, c))),
    one("http_requests_total", Counter, "HTTP requests since start.", |p, _| http(p, p.counters.req_tot)),
    one("client_aborts_total", Counter, "Transfers aborted by the client since start.", |p, _| Some(U(p.counters.cli_abrt))),
    one("server_aborts_total", Counter, "Transfers aborted by the server since start.", |p, _| Some(U(p.counters.srv_abrt))),
    one("http_comp_bytes_in_total", Counter, "Bytes fed to the HTTP compressor since start.", |p, _| http(p, p.counters.comp_in)),
    one("http_comp_bytes_out_total", Counter, "Bytes produced by the HTTP compressor since start.", |p, _| http(p, p.counters.comp_out)),
    one("http_comp_bytes_bypassed_total", Counter, "Bytes that skipped the HTTP compressor since start.", |p, _| http(p, p.counters.comp_byp)),
    one("http_comp_responses_total", Counter, "HTTP responses compressed since start.", |p, _| http(p, p.counters.comp_rsp)),
    one("last_session_seconds", Gauge, "Seconds since a session was last assigned (-1: never).", |p, _| Some(Num::I(p.counters.last_sess_secs.map_or(-1, |s| s as i64)))),
    one("queue_time_average_seconds", Gauge, "Average queue time over recent requests.", |p, _| ms(p.counters.qtime_ms)),
    one("connect_time_average_seconds", Gauge, "Average connect time over recent requests.", |p, _| ms(p.counters.ctime_ms)),
    one("response_time_average_seconds", Gauge, "Average response time over recent requests.", |p, _| ms(p.counters.rtime_ms)),
    one("total_time_average_seconds", Gauge, "Average total time over recent requests.", |p, _| ms(p.counters.ttime_ms)),
    one("failed_header_rewriting_total", Counter, "Failed HTTP header rewrites since start.", |p, _| Some(U(p.counters.wrew))),
    one("connection_attempts_total", Counter, "Connection attempts to servers since start.", |p, _| Some(U(p.counters.connect))),
    one("connection_reuses_total", Counter, "Reused server connections since start.", |p, _| Some(U(p.counters.reuse))),
    one("http_cache_lookups_total", Counter, "HTTP cache lookups since start.", |p, _| http(p, p.counters.cache_lookups)),
    one("http_cache_hits_total", Counter, "HTTP cache hits since start.", |p, _| http(p, p.counters.cache_hits)),
    one("max_queue_time_seconds", Gauge, "Longest queue time seen.", |p, _| ms(p.counters.qtime_max_ms)),
    one("max_connect_time_seconds", Gauge, "Longest connect time seen.", |p, _| ms(p.counters.ctime_max_ms)),
    one("max_response_time_seconds", Gauge, "Longest response time seen.", |p, _| ms(p.counters.rtime_max_ms)),
    one("max_total_time_seconds", Gauge, "Longest total time seen.", |p, _| ms(p.counters.ttime_max_ms)),
    one("internal_errors_total", Counter, "Internal errors since start.", |p, _| Some(U(p.counters.eint))),
    one("uweight", Gauge, "Sum of the configured weights of the servers in use.", |p, _| Some(U(p.uweight))),
    per("agg_server_status", Gauge, "Servers of the backend per state.", "state", SRV_STATES, |p, _, s| { Some(U(p .servers .iter() .filter(|v| v.state.prom_state() == s) .count() as u64)) }),
    per("agg_server_check_status", Gauge, "Servers of the backend per state (deprecated name).", "state", SRV_STATES, |p, _, s| { Some(U(p .servers .iter() .filter(|v| v.state.prom_state() == s) .count() as u64)) }),
    per("agg_check_status", Gauge, "Servers of the backend per last check status.", "state", CHECK_STATES, |p, _, s| { Some(U(p .servers .iter() .filter(|v| v.check.as_ref().is_some_and(|c| c.status == s)) .count() as u64)) }),
];

#[rustfmt::skip]
static SERVER: &[Fam] = &[
    one("current_queue", Gauge, "Requests waiting in the server queue.", |_, s| Some(U(s.counters.qcur))),
    one("max_queue", Gauge, "Highest queue length since start.", |_, s| Some(U(s.counters.qmax))),
    one("current_sessions", Gauge, "Current sessions.", |_, s| Some(U(s.counters.scur))),
    one("max_sessions", Gauge, "Highest number of current sessions since start.", |_, s| Some(U(s.counters.smax))),
    one("limit_sessions", Gauge, "Configured session limit (maxconn).", |_, s| s.slim.map(U)),
    one("sessions_total", Counter, "Sessions since start.", |_, s| Some(U(s.counters.stot))),
    one("bytes_in_total", Counter, "Request bytes received since start.", |_, s| Some(U(s.counters.bin))),
    one("bytes_out_total", Counter, "Response bytes sent since start.", |_, s| Some(U(s.counters.bout))),
    one("responses_denied_total", Counter, "Responses denied by rules since start.", |_, s| Some(U(s.counters.dresp))),
    one("connection_errors_total", Counter, "Failed connections since start.", |_, s| Some(U(s.counters.econ))),
    one("response_errors_total", Counter, "Invalid or aborted responses since start.", |_, s| Some(U(s.counters.eresp))),
    one("retry_warnings_total", Counter, "Connection retries since start.", |_, s| Some(U(s.counters.wretr))),
    one("redispatch_warnings_total", Counter, "Redispatches away from this server since start.", |_, s| Some(U(s.counters.wredis))),
    per("status", Gauge, "Current status of the server, 1 for the state label that applies.", "state", SRV_STATES, |_, s, st| Some(U(u64::from(s.state.prom_state() == st)))),
    one("weight", Gauge, "Effective weight.", |_, s| Some(U(s.weight))),
    one("check_failures_total", Counter, "Failed health checks since start.", |_, s| s.check.as_ref().map(|_| U(s.chkfail))),
    one("check_up_down_total", Counter, "UP to DOWN transitions since start.", |_, s| s.check.as_ref().map(|_| U(s.chkdown))),
    one("check_last_change_seconds", Gauge, "Seconds since the last state change.", |_, s| Some(U(s.lastchg_secs))),
    one("downtime_seconds_total", Counter, "Seconds spent DOWN since start.", |_, s| s.downtime_secs.map(U)),
    one("queue_limit", Gauge, "Configured queue limit (maxqueue).", |_, s| s.qlimit.map(U)),
    one("current_throttle", Gauge, "Slowstart throttle, percent.", |_, s| s.throttle.map(U)),
    one("loadbalanced_total", Counter, "Times the server was picked by the balancer since start.", |_, s| Some(U(s.counters.lbtot))),
    one("max_session_rate", Gauge, "Highest number of new sessions per second since start.", |_, s| Some(U(s.counters.rate_max))),
    per("check_status", Gauge, "Status of the last health check, 1 for the state label that applies.", "state", CHECK_STATES, |_, s, st| s.check.as_ref().map(|c| U(u64::from(c.status == st)))),
    one("check_code", Gauge, "Layer 5-7 code of the last health check.", |_, s| s.check.as_ref().and_then(|c| c.code).map(|c| U(c.into()))),
    one("check_duration_seconds", Gauge, "Duration of the last health check.", |_, s| s.check.as_ref().and_then(|c| c.duration_ms).and_then(ms)),
    per("http_responses_total", Counter, "HTTP responses by status class since start.", "code", CODES, |p, s, c| http(p, hrsp(&s.counters, c))),
    one("client_aborts_total", Counter, "Transfers aborted by the client since start.", |_, s| Some(U(s.counters.cli_abrt))),
    one("server_aborts_total", Counter, "Transfers aborted by the server since start.", |_, s| Some(U(s.counters.srv_abrt))),
    one("last_session_seconds", Gauge, "Seconds since a session was last assigned (-1: never).", |_, s| Some(Num::I(s.counters.last_sess_secs.map_or(-1, |v| v as i64)))),
    one("queue_time_average_seconds", Gauge, "Average queue time over recent requests.", |_, s| ms(s.counters.qtime_ms)),
    one("connect_time_average_seconds", Gauge, "Average connect time over recent requests.", |_, s| ms(s.counters.ctime_ms)),
    one("response_time_average_seconds", Gauge, "Average response time over recent requests.", |_, s| ms(s.counters.rtime_ms)),
    one("total_time_average_seconds", Gauge, "Average total time over recent requests.", |_, s| ms(s.counters.ttime_ms)),
    one("failed_header_rewriting_total", Counter, "Failed HTTP header rewrites since start.", |_, s| Some(U(s.counters.wrew))),
    one("connection_attempts_total", Counter, "Connection attempts since start.", |_, s| Some(U(s.counters.connect))),
    one("connection_reuses_total", Counter, "Reused connections since start.", |_, s| Some(U(s.counters.reuse))),
    one("idle_connections_current", Gauge, "Idle connections available for reuse.", |_, s| Some(U(s.idle_cur))),
    one("idle_connections_limit", Gauge, "Limit of idle connections (pool-max-conn).", |_, s| s.idle_limit.map(U)),
    one("max_queue_time_seconds", Gauge, "Longest queue time seen.", |_, s| ms(s.counters.qtime_max_ms)),
    one("max_connect_time_seconds", Gauge, "Longest connect time seen.", |_, s| ms(s.counters.ctime_max_ms)),
    one("max_response_time_seconds", Gauge, "Longest response time seen.", |_, s| ms(s.counters.rtime_max_ms)),
    one("max_total_time_seconds", Gauge, "Longest total time seen.", |_, s| ms(s.counters.ttime_max_ms)),
    one("internal_errors_total", Counter, "Internal errors since start.", |_, s| Some(U(s.counters.eint))),
    one("unsafe_idle_connections_current", Gauge, "Unsafe idle connections.", |_, s| Some(U(s.idle_conn_cur))),
    one("safe_idle_connections_current", Gauge, "Safe idle connections.", |_, s| Some(U(s.safe_conn_cur))),
    one("used_connections_current", Gauge, "Connections in use.", |_, s| Some(U(s.used_conn_cur))),
    one("need_connections_current", Gauge, "Estimated connections needed.", |_, s| Some(U(s.need_conn_est))),
    one("uweight", Gauge, "Configured weight.", |_, s| Some(U(s.uweight))),
];

/// Latency histogram families: suffix, help, accessor.
type HistGet = fn(&crate::Counters) -> Option<&HistogramSnapshot>;
static HISTOGRAMS: [(&str, &str, HistGet); 4] = [
    ("queue_time_seconds", "Time spent in the queue.", |c| {
        c.latency.queue.as_ref()
    }),
    (
        "connect_time_seconds",
        "Time to establish the server connection.",
        |c| c.latency.connect.as_ref(),
    ),
    (
        "response_time_seconds",
        "Time from request sent to response head received.",
        |c| c.latency.response.as_ref(),
    ),
    (
        "total_time_seconds",
        "Total time of the request, accept to last byte.",
        |c| c.latency.total.as_ref(),
    ),
];

fn write_label_value(out: &mut Vec<u8>, v: &str) {
    for b in v.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b => out.push(b),
        }
    }
}

fn write_num(out: &mut Vec<u8>, n: Num) {
    let _ = match n {
        Num::U(v) => write!(out, "{v}"),
        Num::I(v) => write!(out, "{v}"),
        Num::F(v) => write!(out, "{v}"),
    };
}

/// Writes one sample line: `name{l1="v1",...} value`.
fn sample(out: &mut Vec<u8>, name: &str, suffix: &str, labels: &[(&str, &str)], n: Num) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(suffix.as_bytes());
    if !labels.is_empty() {
        out.push(b'{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b"=\"");
            write_label_value(out, v);
            out.push(b'"');
        }
        out.push(b'}');
    }
    out.push(b' ');
    write_num(out, n);
    out.push(b'\n');
}

fn header(out: &mut Vec<u8>, name: &str, help: &str, ty: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {ty}");
}

/// One object of a section: proxy, server (placeholder for proxies) and
/// its labels.
type ObjRef<'a> = (
    &'a ProxyStats,
    &'a ServerStats,
    Vec<(&'static str, &'a str)>,
);

/// Emits one section: each family with all its samples over `objs`.
fn section(out: &mut Vec<u8>, prefix: &str, fams: &[Fam], objs: &[ObjRef<'_>]) {
    let mut body = Vec::new();
    for fam in fams {
        body.clear();
        let name = format!("{prefix}{}", fam.name);
        for (p, s, labels) in objs {
            match &fam.get {
                Get::One(g) => {
                    if let Some(n) = g(p, s) {
                        sample(&mut body, &name, "", labels, n);
                    }
                }
                Get::Per(label, values, g) => {
                    for v in values.iter() {
                        if let Some(n) = g(p, s, v) {
                            let mut l = labels.clone();
                            l.push((label, v));
                            sample(&mut body, &name, "", &l, n);
                        }
                    }
                }
            }
        }
        if !body.is_empty() {
            header(out, &name, fam.help, fam.ty.as_str());
            out.extend_from_slice(&body);
        }
    }
}

fn histograms<'a>(
    out: &mut Vec<u8>,
    prefix: &str,
    objs: &[(&'a crate::Counters, Vec<(&'static str, &'a str)>)],
) {
    let les: Vec<String> = BUCKET_BOUNDS_MICROS
        .iter()
        .map(|&b| format!("{}", b as f64 / 1e6))
        .chain(std::iter::once("+Inf".to_string()))
        .collect();
    for (suffix, help, get) in HISTOGRAMS.iter() {
        let name = format!("{prefix}{suffix}");
        let mut body = Vec::new();
        for (c, labels) in objs {
            let Some(h) = get(c) else { continue };
            let cum = h.cumulative();
            for (le, n) in les.iter().zip(cum.iter()) {
                let mut l = labels.clone();
                l.push(("le", le));
                sample(&mut body, &name, "_bucket", &l, U(*n));
            }
            sample(
                &mut body,
                &name,
                "_sum",
                labels,
                Num::F(h.sum_micros as f64 / 1e6),
            );
            sample(&mut body, &name, "_count", labels, U(cum[cum.len() - 1]));
        }
        if !body.is_empty() {
            header(out, &name, help, "histogram");
            out.extend_from_slice(&body);
        }
    }
}

fn process(snap: &Snapshot, out: &mut Vec<u8>) {
    let p = &snap.process;
    let list: [(&str, Ty, &str, u64); 23] = [
        (
            "nbthread",
            Gauge,
            "Worker threads (nbthread).",
            p.nbthread.into(),
        ),
        ("nbproc", Gauge, "Worker processes (always 1).", 1),
        (
            "relative_process_id",
            Gauge,
            "Relative worker process number (1).",
            1,
        ),
        (
            "uptime_seconds",
            Gauge,
            "Seconds since the process started.",
            p.uptime_secs,
        ),
        (
            "pool_failures_total",
            Counter,
            "Failed pool allocations since start.",
            p.pool_failed,
        ),
        ("max_fds", Gauge, "File descriptor limit.", p.ulimit_n),
        ("max_sockets", Gauge, "Socket limit.", p.maxsock),
        (
            "max_connections",
            Gauge,
            "Connection limit (maxconn).",
            p.maxconn,
        ),
        (
            "hard_max_connections",
            Gauge,
            "Hard connection limit.",
            p.hard_maxconn,
        ),
        (
            "current_connections",
            Gauge,
            "Connections open now.",
            p.curr_conns,
        ),
        (
            "connections_total",
            Counter,
            "Connections accepted since start.",
            p.cum_conns,
        ),
        (
            "requests_total",
            Counter,
            "Requests since start.",
            p.cum_req,
        ),
        (
            "ssl_connections_total",
            Counter,
            "TLS handshakes completed on frontends since start.",
            p.cum_ssl_conns,
        ),
        (
            "current_connection_rate",
            Gauge,
            "Connections accepted over the last second.",
            p.conn_rate,
        ),
        (
            "limit_connection_rate",
            Gauge,
            "Connection rate limit (maxconnrate).",
            p.conn_rate_limit,
        ),
        (
            "max_connection_rate",
            Gauge,
            "Highest connection rate since start.",
            p.conn_rate_max,
        ),
        (
            "current_session_rate",
            Gauge,
            "Sessions created over the last second.",
            p.sess_rate,
        ),
        (
            "limit_session_rate",
            Gauge,
            "Session rate limit (maxsessrate).",
            p.sess_rate_limit,
        ),
        (
            "max_session_rate",
            Gauge,
            "Highest session rate since start.",
            p.sess_rate_max,
        ),
        ("current_tasks", Gauge, "Tasks alive.", p.tasks),
        (
            "current_run_queue",
            Gauge,
            "Tasks ready to run.",
            p.run_queue,
        ),
        (
            "idle_time_percent",
            Gauge,
            "Percentage of the last second spent idle.",
            p.idle_pct,
        ),
        (
            "stopping",
            Gauge,
            "1 during a soft stop, else 0.",
            u64::from(p.stopping),
        ),
    ];
    for (n, ty, help, v) in list {
        let name = format!("haproxy_process_{n}");
        header(out, &name, help, ty.as_str());
        sample(out, &name, "", &[], U(v));
    }
    let tail: [(&str, Ty, &str, u64); 8] = [
        (
            "jobs",
            Gauge,
            "Active jobs (connections and listeners).",
            p.jobs,
        ),
        ("listeners", Gauge, "Active listeners.", p.listeners),
        (
            "bytes_out_total",
            Counter,
            "Bytes sent since start.",
            p.bytes_out_total,
        ),
        (
            "bytes_out_rate",
            Gauge,
            "Bytes sent over the last second.",
            p.bytes_out_rate,
        ),
        (
            "max_memory_bytes",
            Gauge,
            "Memory limit in bytes (0: none).",
            p.memmax_bytes,
        ),
        (
            "pool_allocated_bytes",
            Gauge,
            "Bytes allocated in pools.",
            p.pool_alloc_bytes,
        ),
        (
            "pool_used_bytes",
            Gauge,
            "Bytes of pools in use.",
            p.pool_used_bytes,
        ),
        (
            "start_time_seconds",
            Gauge,
            "Start time, seconds since the Unix epoch.",
            p.start_time_secs,
        ),
    ];
    for (n, ty, help, v) in tail {
        let name = format!("haproxy_process_{n}");
        header(out, &name, help, ty.as_str());
        sample(out, &name, "", &[], U(v));
        if n == "listeners" {
            // HAProxy prints build_info among the process metrics.
            header(
                out,
                "haproxy_process_build_info",
                "Build information.",
                "gauge",
            );
            sample(
                out,
                "haproxy_process_build_info",
                "",
                &[("version", &p.version)],
                U(1),
            );
        }
    }
    // Fairlead's own: HAProxy only counts these per listener in its SSL
    // statistics module.
    let name = "fairlead_process_ssl_failed_handshakes_total";
    header(
        out,
        name,
        "TLS handshakes that failed on frontends since start.",
        Counter.as_str(),
    );
    sample(out, name, "", &[], U(p.ssl_failed_handshakes));
}

/// Appends the whole exposition for `snap` to `out`.
pub fn prometheus(snap: &Snapshot, out: &mut Vec<u8>) {
    process(snap, out);
    let none = ServerStats::default();
    let proxies = |kind: ProxyKind| -> Vec<ObjRef<'_>> {
        snap.proxies
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| (p, &none, vec![("proxy", p.name.as_str())]))
            .collect()
    };
    let fes = proxies(ProxyKind::Frontend);
    let bes = proxies(ProxyKind::Backend);
    let svs: Vec<ObjRef<'_>> = bes
        .iter()
        .flat_map(|(p, _, _)| {
            p.servers.iter().map(move |s| {
                let labels = vec![("proxy", p.name.as_str()), ("server", s.name.as_str())];
                (*p, s, labels)
            })
        })
        .collect();
    for (prefix, fams, objs, servers) in [
        ("haproxy_frontend_", FRONTEND, &fes, false),
        ("haproxy_backend_", BACKEND, &bes, false),
        ("haproxy_server_", SERVER, &svs, true),
    ] {
        section(out, prefix, fams, objs);
        let counters: Vec<_> = objs
            .iter()
            .map(|(p, s, l)| (if servers { &s.counters } else { &p.counters }, l.clone()))
            .collect();
        histograms(out, prefix, &counters);
    }
    sticktables(snap, out);
}

/// `haproxy_sticktable_size` and `haproxy_sticktable_used`, labelled with
/// the table's name and key type, as HAProxy 2.6's exporter writes them
/// (tables of size 0 left out).
fn sticktables(snap: &Snapshot, out: &mut Vec<u8>) {
    type Get = fn(&crate::model::TableStats) -> u32;
    let fams: [(&str, &str, Get); 2] = [
        ("size", "Stick table size.", |t| t.size),
        ("used", "Number of entries used in this stick table.", |t| {
            t.used
        }),
    ];
    let tables: Vec<_> = snap.tables.iter().filter(|t| t.size != 0).collect();
    if tables.is_empty() {
        return;
    }
    for (n, help, get) in fams {
        let name = format!("haproxy_sticktable_{n}");
        header(out, &name, help, Gauge.as_str());
        for t in &tables {
            let labels = [("name", t.name.as_str()), ("type", t.key_type.as_str())];
            sample(out, &name, "", &labels, U(u64::from(get(t))));
        }
    }
}
