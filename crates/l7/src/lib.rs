//! HTTP mode (`mode http`): the HTTP/1.1 proxy session.
//!
//! One client connection is served by [`serve_http`] as a loop of named
//! phases, in the manner of Pingora's request phases:
//!
//! 1. **wait**: wait for the next request without holding a buffer
//!    (`timeout http-request` for the first, `timeout http-keep-alive` for
//!    the next ones; a soft stop closes idle connections here). A
//!    keep-alive connection served with a runtime hold
//!    ([`serve_http_held`]) waits without a task: it is parked in the
//!    worker's idle set ([`park`]) until its next request arrives;
//! 2. **read_head**: parse the head in place (`fairlead-http`), bounded by
//!    `tune.bufsize` and `timeout http-request` (408);
//! 3. **prepare** and **connect** (`forward.rs`): the head as the server
//!    gets it, then balance, then reuse an idle server connection from this
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
//! a time, and the framing bytes are forwarded unmodified. With `option
//! splice-*`, clear-text content-length and close-delimited bodies move
//! socket to pipe to socket instead (`splice.rs`).
//!
//! HTTP/2 client connections (ALPN `h2`, `bind ... proto h2`, or the
//! HTTP/2 preface on a clear bind) are served by [`h2`]: one task per
//! connection multiplexing its streams, each forwarded with the same
//! rules, balancing, retries and logs.
//!
//! Requests to HTTP/2 servers (`server ... proto h2`, or `ssl alpn h2`
//! when the server picks `h2`), from HTTP/1 and HTTP/2 clients alike, are
//! streams on multiplexed server connections pooled per worker thread
//! (`h2::mux`), shared as `http-reuse` allows.
#![forbid(unsafe_code)]

mod body;
mod forward;
pub mod h2;
mod key;
mod local;
pub mod logging;
pub mod park;
mod persist;
mod process;
pub mod resolve;
mod respond;
mod session;
mod splice;
mod txn;

pub use park::{ConnAccount, ConnCtl, ConnHold};
pub use session::{serve_http, serve_http_held, serve_http_with, SessCarry};

pub use fairlead_l4::{CapturedRequest, ErrorCapture, Frontend, Routes};

use fairlead_config::{HttpConnMode, HttpReuse};

/// A request a frontend answers itself (stats page, Prometheus exporter).
pub struct ServiceRequest<'a> {
    pub method: &'a [u8],
    pub uri: &'a [u8],
    pub authorization: Option<&'a [u8]>,
    pub client: std::net::IpAddr,
    /// What the proxy's `stats admin` and `stats http-request` rules
    /// decided for this request.
    pub stats: StatsDecision,
    /// The request body, when it has a `Content-Length` and fits in the
    /// buffer with the head (the stats page's admin form); else empty.
    pub body: &'a [u8],
}

/// What a proxy's stats rules decided for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDecision {
    /// The `stats admin` conditions' result (`None`: the section has
    /// none).
    pub admin: Option<bool>,
    /// The first matching `stats http-request` rule, if any.
    pub rule: Option<fairlead_rules::proxy::StatsRule>,
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
    /// The frontend, shared with the runtime and TCP mode; its routes hold
    /// the default backend and every backend it may switch to.
    pub front: std::sync::Arc<Frontend>,
    /// The frontend's own services (stats page, Prometheus), if any.
    pub service: Option<std::sync::Arc<dyn LocalService + Send + Sync>>,
    pub stop: std::rc::Rc<fairlead_net::Stop>,
}

/// The effective per-request settings once the backend is known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effective {
    pub conn_mode: HttpConnMode,
    pub reuse: HttpReuse,
}
