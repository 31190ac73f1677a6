//! One frontend at run time, as every session sees it, whatever its mode:
//! [`Frontend`] is built once at start-up from the configuration and
//! shared (`Arc`) by the workers, the TCP streams ([`crate::serve_tcp`]),
//! the HTTP sessions (`fairlead-l7`) and the runtime API. What belongs to
//! the listening side only (addresses, TLS contexts, the `maxconn` gate)
//! stays in the runtime's listener registry.

use crate::log::LogSetup;
use crate::routes::Routes;
use fairlead_backend::counters::Counters;
use fairlead_config::{ForwardFor, HttpConnMode, Mode, Timeouts};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A frontend (or the frontend side of a `listen` section).
pub struct Frontend {
    pub name: Arc<str>,
    pub mode: Mode,
    /// The frontend's timeouts; sessions use the client side (`client`,
    /// `client-fin`, `http-request`, `http-keep-alive`).
    pub timeouts: Timeouts,
    /// `option http-keep-alive|httpclose|http-server-close`. Default is
    /// keep-alive.
    pub conn_mode: HttpConnMode,
    /// `option forwardfor`. Default is none.
    pub forwardfor: Option<ForwardFor>,
    /// `option accept-invalid-http-request`: requests go through the
    /// lenient parser (`fairlead_http::parse_request_relaxed`). Default
    /// is off.
    pub accept_invalid_http_request: bool,
    /// `option http-no-delay` in the frontend: body sends never carry
    /// `MSG_MORE` (a backend's own option counts too). Default is off.
    pub http_no_delay: bool,
    /// Largest request or response head, from `tune.bufsize` minus
    /// `tune.maxrewrite`.
    pub max_head: usize,
    /// The frontend's rules and every backend it may switch to.
    pub routes: Arc<Routes>,
    /// Traffic counters (per-thread slots).
    pub counters: Arc<Counters>,
    /// Logging, when the frontend has log targets.
    pub log: Option<Arc<LogSetup>>,
    /// The last invalid request (`show errors`).
    pub errors: Arc<ErrorCapture>,
    /// Connections of the process and of this frontend (`%ac`, `%fc`).
    pub actconn: Arc<AtomicU32>,
    pub feconn: Arc<AtomicU32>,
    /// Connections refused by `tcp-request connection` rules (`dcon`).
    pub denied_conn: AtomicU64,
    /// Sessions refused by `tcp-request session` rules (`dses`).
    pub denied_sess: AtomicU64,
    /// Listening addresses of `bind ... proto h2` lines: connections
    /// accepted there speak HTTP/2 only. Default is none.
    pub h2_only: Vec<std::net::SocketAddr>,
    /// `tune.h2.*` (global). Default is HAProxy's settings.
    pub h2: fairlead_config::H2Tune,
    /// `option splice-*` of the frontend; a stream splices what its
    /// frontend or its backend asks for. Default is none.
    pub splice: fairlead_config::Splice,
}

/// The last invalid request a frontend received, for `show errors`.
#[derive(Debug, Default)]
pub struct ErrorCapture {
    pub total: AtomicU32,
    pub last: Mutex<Option<CapturedRequest>>,
}

/// One captured invalid request.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    pub when: SystemTime,
    pub client: SocketAddr,
    pub reason: &'static str,
    /// Where the parser stopped, within `bytes`.
    pub position: usize,
    /// The start of the request as received (at most 16 KiB).
    pub bytes: Vec<u8>,
}

impl ErrorCapture {
    /// Records an invalid request (error path only: takes a lock).
    pub fn capture(&self, client: SocketAddr, reason: &'static str, position: usize, buf: &[u8]) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let bytes = buf[..buf.len().min(16384)].to_vec();
        if let Ok(mut last) = self.last.lock() {
            *last = Some(CapturedRequest {
                when: SystemTime::now(),
                client,
                reason,
                position,
                bytes,
            });
        }
    }
}
