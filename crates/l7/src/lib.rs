//! HTTP mode (`mode http`): the HTTP/1.1 proxy session.
//!
//! One client connection is served by [`serve_http`] as a loop of named
//! phases, in the manner of Pingora's request phases:
//!
//! 1. **wait**: wait for the next request without holding a buffer
//!    (`timeout http-request` for the first, `timeout http-keep-alive` for
//!    the next ones; a soft stop closes idle connections here);
//! 2. **read_head**: parse the head in place (`fairlead-http`), bounded by
//!    `tune.bufsize` and `timeout http-request` (408);
//! 3. **connect**: balance, then reuse an idle server connection from this
//!    thread's pool or connect (`http-reuse safe`: a client's first request
//!    always gets a fresh or its own connection);
//! 4. **forward**: send the rewritten head, stream the request body while
//!    reading the response head (`Expect: 100-continue` and other 1xx are
//!    relayed);
//! 5. **respond**: send the response head and stream its body, or switch to
//!    a tunnel on `101 Switching Protocols`;
//! 6. **done**: keep or close each side, park the server connection.
//!
//! Bodies are never buffered whole: they move through one pooled buffer at
//! a time, and the framing bytes are forwarded unmodified.
#![forbid(unsafe_code)]

mod body;
mod key;
mod local;
pub mod logging;
mod persist;
mod process;
mod respond;
mod session;
mod txn;

pub use session::{serve_http, serve_http_with};

use fairlead_config::{ForwardFor, HttpConnMode, HttpReuse, Timeouts};

/// What an HTTP session needs from its frontend, resolved once at start-up.
#[derive(Debug, Clone)]
pub struct HttpFront {
    pub name: String,
    /// The frontend's timeouts (client side: client, http-request,
    /// http-keep-alive, client-fin).
    pub timeouts: Timeouts,
    pub conn_mode: HttpConnMode,
    pub forwardfor: Option<ForwardFor>,
    /// Largest request or response head, from `tune.bufsize`.
    pub max_head: usize,
    /// The frontend's traffic counters.
    pub counters: std::sync::Arc<fairlead_backend::counters::Counters>,
    /// Logging, when the frontend has log targets.
    pub log: Option<std::sync::Arc<logging::LogSetup>>,
    /// The last invalid request (`show errors`).
    pub errors: std::sync::Arc<ErrorCapture>,
    /// Connections of the process and of this frontend (`%ac`, `%fc`).
    pub actconn: std::sync::Arc<std::sync::atomic::AtomicU32>,
    pub feconn: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

/// The last invalid request a frontend received, for `show errors`.
#[derive(Debug, Default)]
pub struct ErrorCapture {
    pub total: std::sync::atomic::AtomicU32,
    pub last: std::sync::Mutex<Option<CapturedRequest>>,
}

/// One captured invalid request.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    pub when: std::time::SystemTime,
    pub client: std::net::SocketAddr,
    pub reason: &'static str,
    /// Where the parser stopped, within `bytes`.
    pub position: usize,
    /// The start of the request as received (at most 16 KiB).
    pub bytes: Vec<u8>,
}

impl ErrorCapture {
    /// Records an invalid request (error path only: takes a lock).
    pub fn capture(
        &self,
        client: std::net::SocketAddr,
        reason: &'static str,
        position: usize,
        buf: &[u8],
    ) {
        self.total
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let bytes = buf[..buf.len().min(16384)].to_vec();
        if let Ok(mut last) = self.last.lock() {
            *last = Some(CapturedRequest {
                when: std::time::SystemTime::now(),
                client,
                reason,
                position,
                bytes,
            });
        }
    }
}

/// A request a frontend answers itself (stats page, Prometheus exporter).
pub struct ServiceRequest<'a> {
    pub method: &'a [u8],
    pub uri: &'a [u8],
    pub authorization: Option<&'a [u8]>,
    pub client: std::net::IpAddr,
    /// The result of the proxy's `stats admin` conditions for this
    /// request (`None`: the section has none).
    pub admin: Option<bool>,
}

/// The response of a local service.
pub struct ServiceResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// Services answered by the proxy itself, provided by the runtime.
pub trait LocalService {
    /// `Some` when this request is for a local service.
    fn handle(&self, req: &ServiceRequest<'_>) -> Option<ServiceResponse>;
}

/// Everything a session needs, built once per worker and frontend and
/// shared by that worker's connections through an `Rc` (no atomic
/// reference counting on the request path).
pub struct HttpCtx {
    pub front: HttpFront,
    /// The frontend's own services (stats page, Prometheus), if any.
    pub service: Option<std::sync::Arc<dyn LocalService + Send + Sync>>,
    /// The default backend (`default_backend`, a listen section's own
    /// servers, or a backend without servers that answers 503).
    pub be: std::sync::Arc<fairlead_backend::Backend>,
    /// The frontend's rules and every backend it may switch to.
    pub routes: std::sync::Arc<Routes>,
    pub stop: std::rc::Rc<fairlead_net::Stop>,
}

/// What content switching needs: the frontend's rules and the backends
/// by name, built once at start-up and shared by every worker.
#[derive(Default)]
pub struct Routes {
    /// The frontend's compiled rules.
    pub fe_rules: std::sync::Arc<fairlead_rules::proxy::ProxyRules>,
    /// Every backend, in configuration order.
    pub backends: Vec<std::sync::Arc<fairlead_backend::Backend>>,
    /// Each backend's compiled rules (same order).
    pub be_rules: Vec<std::sync::Arc<fairlead_rules::proxy::ProxyRules>>,
    /// Backend index by name.
    pub by_name: std::collections::HashMap<String, usize>,
    /// The index of the default backend, if it is a configured one.
    pub default: Option<usize>,
    /// The machine's host name (`hostname`, `%H`).
    pub hostname: String,
}

impl Routes {
    /// Whether requests need the rule engine at all (otherwise the session
    /// takes the plain path: no message model, no routing).
    pub fn active(&self) -> bool {
        self.fe_rules.has_http_rules()
            || self
                .default
                .is_some_and(|i| self.be_rules[i].has_http_rules())
    }
}

/// The effective per-request settings once the backend is known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effective {
    pub conn_mode: HttpConnMode,
    pub reuse: HttpReuse,
}
