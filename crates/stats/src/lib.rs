//! HAProxy-compatible statistics for Fairlead: `show stat` CSV and typed
//! JSON, `show info`, the HTML stats page, the Prometheus exporter
//! format, and the HTTP glue of the stats page (URI options, `stats auth`,
//! admin actions).
//!
//! This crate is pure: no sockets, no threads, no clock. The runtime
//! copies its counters into a [`Snapshot`] (plain data) and hands it to
//! one of the writers below, which append to a `Vec<u8>`; the runtime
//! serves the bytes. The one shared-state type is [`LatencyHistogram`],
//! which the runtime owns (one per frontend, backend or server) and
//! records into lock-free; its [`HistogramSnapshot`] goes into
//! [`Counters::latency`].
//!
//! # API
//!
//! ```text
//! pub fn csv(snap: &Snapshot, out: &mut Vec<u8>)            // ;csv, show stat
//! pub fn json(snap: &Snapshot, out: &mut Vec<u8>)           // ;json, show stat json
//! pub fn info(snap: &Snapshot, out: &mut Vec<u8>)           // show info
//! pub fn html(snap: &Snapshot, opts: &HtmlOptions, out: &mut Vec<u8>)
//! pub fn prometheus(snap: &Snapshot, out: &mut Vec<u8>)     // CONTENT_TYPE
//! pub fn handle_stats_request<S: StatsSource + ?Sized>(
//!     req: &StatsRequest<'_>, cfg: &StatsConfig, src: &S) -> Option<StatsResponse>
//! pub fn check_basic_auth(header_value: Option<&[u8]>, users: &[(String, String)]) -> bool
//! pub fn parse_stats_uri(uri: &[u8], stats_uri: &str) -> Option<StatsQuery>
//! pub fn parse_admin_post(body: &[u8]) -> Result<AdminRequest, AdminResult>
//! LatencyHistogram::new() / record(&self, micros: u64) / snapshot(&self)
//! ```
//!
//! # Formats
//!
//! - **CSV**: the 103 static fields of HAProxy 2.6 (`pxname` ..
//!   `agg_check_status`), names and order as HAProxy prints them, each
//!   field followed by a comma; lines in HAProxy's order (per proxy:
//!   frontend, servers, backend). Fields that do not apply to a line type
//!   (`[LFBS]` in HAProxy's management guide, section 9.1) are empty, and
//!   HTTP-only fields are empty in TCP mode. HAProxy's `-` column and the
//!   per-module counters after it are not produced.
//! - **JSON**: HAProxy's typed layout (array of lines, each an array of
//!   `{objType, proxyId, id, field{pos,name}, processNum, tags{origin,
//!   nature, scope}, value{type, value}}`), empty fields left out. See
//!   [`json`].
//! - **Prometheus**: HAProxy exporter names (`haproxy_process_*`,
//!   `haproxy_frontend_*`, `haproxy_backend_*`, `haproxy_server_*`),
//!   types and labels (`proxy`, `server`, `state`, `code`); HELP texts are
//!   Fairlead's own wording. Adds histograms
//!   `haproxy_<obj>_{queue,connect,response,total}_time_seconds`. See
//!   [`prometheus()`].
//! - **HTML**: a self-contained page, see [`html()`].
//!
//! # What the runtime fills in
//!
//! Everything defaults to zero or empty, so an unfilled counter prints 0;
//! every field's doc says which line types use it (`[FBS]`).
//!
//! - [`ProcessInfo`]: `version`, `pid`, `nbthread`, `uptime_secs`,
//!   `start_time_secs`, `node`, `maxconn`, `ulimit_n`, `maxsock`,
//!   `curr_conns`, `cum_conns`, `cum_req`, rates if tracked, `stopping`.
//! - Per frontend ([`ProxyKind::Frontend`]): `name`, `iid`, `mode`,
//!   `status` (`OPEN`/`FULL`/`STOP`), `slim` (maxconn), and counters
//!   `scur smax stot bin bout dreq ereq rate rate_max req_rate
//!   req_rate_max req_tot hrsp_* conn_rate conn_rate_max conn_tot
//!   intercepted`.
//! - Per backend ([`ProxyKind::Backend`]): `name`, `iid` (same as the
//!   frontend for a `listen`), `mode`, `status` (`UP`/`DOWN`), `slim`
//!   (fullconn), `algo`, `cookie`, `weight`/`uweight`/`act`/`bck` (sums and
//!   counts over servers UP), `chkdown`, `lastchg_secs`, `downtime_secs`,
//!   and counters `qcur qmax scur smax stot bin bout econ eresp wretr
//!   wredis lbtot rate rate_max req_tot hrsp_* cli_abrt srv_abrt connect
//!   reuse last_sess_secs [qcrt]time_ms [qcrt]time_max_ms`, plus
//!   `latency` histograms.
//! - Per server ([`ServerStats`]): `name`, `sid`, `state`, `weight`,
//!   `uweight`, `backup`, `check`/`agent` (when configured), `chkfail`,
//!   `chkdown`, `lastchg_secs`, `downtime_secs`, `slim` (maxconn), `qlimit`
//!   (maxqueue), `throttle` (slowstart), `tracked`, `addr`, `cookie`, idle
//!   connection gauges, and the same counters as the backend.
//!
//! # Example
//!
//! ```
//! use fairlead_stats::*;
//!
//! let response_time = LatencyHistogram::new(); // held by the runtime
//! response_time.record(1_250); // microseconds
//! let snap = Snapshot {
//!     proxies: vec![ProxyStats {
//!         name: "app".into(),
//!         kind: ProxyKind::Backend,
//!         status: "UP".into(),
//!         counters: Counters {
//!             stot: 1,
//!             latency: Latency { response: Some(response_time.snapshot()), ..Default::default() },
//!             ..Default::default()
//!         },
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let mut out = Vec::new();
//! csv(&snap, &mut out);
//! assert!(out.starts_with(b"# pxname,svname,qcur,"));
//! out.clear();
//! prometheus(&snap, &mut out);
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.contains("haproxy_backend_response_time_seconds_bucket{proxy=\"app\",le=\"0.0025\"} 1\n"));
//! ```

pub mod fields;
pub mod histogram;
pub mod html;
pub mod http;
pub mod model;
pub mod prometheus;
pub mod stat;
pub mod typed;

pub use fields::field_names;
pub use histogram::{HistogramSnapshot, LatencyHistogram, BUCKETS, BUCKET_BOUNDS_MICROS};
pub use html::{html, HtmlOptions};
pub use http::{
    base64_decode, check_basic_auth, handle_stats_request, matches_stats_uri, parse_admin_post,
    parse_stats_uri, unauthorized, AdminAction, AdminRequest, AdminResult, BackendRef, StatsConfig,
    StatsFormat, StatsQuery, StatsRequest, StatsResponse, StatsSource,
};
pub use model::{
    CheckInfo, Counters, Latency, Mode, ProcessInfo, ProxyKind, ProxyStats, ServerState,
    ServerStats, Snapshot, TableStats,
};
pub use prometheus::{prometheus, CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE};
pub use stat::{csv, info, json};
pub use typed::{info_typed, stat_typed};
