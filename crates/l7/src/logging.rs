//! Per-request log data (`option httplog`, `log-format`), filled by the
//! session's phases and rendered by `fairlead-log` when the request ends.
//!
//! The data lives in the request phase's state (a pooled slot), not in the
//! idle connection. The request line is copied into a pooled vector only
//! when the frontend logs.

use fairlead_log::{LogRecord, Phase, TermState, Who};
use fairlead_net::pool;
use std::net::SocketAddr;
use std::time::SystemTime;
use tokio::time::Instant;

pub use fairlead_l4::{LogSetup, ServerAddrs};

/// Milliseconds between two instants.
fn ms(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_millis() as u64
}

/// What happened to one request, for its log line.
pub(crate) struct ReqLog {
    /// Accept time (first request) or end of the previous response.
    pub start: Instant,
    pub first_byte: Option<Instant>,
    pub head_done: Option<Instant>,
    pub queue_done: Option<Instant>,
    pub connect_done: Option<Instant>,
    pub response_done: Option<Instant>,
    pub status: Option<u16>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The server that took the request (held so that the log line can name
    /// it even if the server is removed meanwhile).
    pub server: Option<std::sync::Arc<fairlead_backend::Server>>,
    /// The backend content switching chose (`None`: the default one).
    pub backend: Option<usize>,
    pub retries: u32,
    pub redispatched: bool,
    /// `%bi`/`%bp` and `%si`/`%sp`: the server connection's addresses,
    /// kept only when the format prints them.
    pub server_conn: ServerAddrs,
    pub term: TermState,
    /// The request line, when the frontend logs.
    pub line: Option<Vec<u8>>,
    /// Captured headers and the log level rules set, when any rule did.
    pub captured: Option<Box<Captured>>,
}

/// What rules left for the log line: `capture` slots (`%hr`, `%hs`) and
/// `set-log-level`.
#[derive(Default)]
pub(crate) struct Captured {
    pub req: Vec<Option<Vec<u8>>>,
    pub res: Vec<Option<Vec<u8>>>,
    /// `set-log-level silent`.
    pub silent: bool,
    /// `http-request set-src`: the client address logged.
    pub src: Option<std::net::IpAddr>,
    /// `capture cookie` (`%CC`, `%CS`).
    pub cookie_req: Option<String>,
    pub cookie_res: Option<String>,
    /// The values of the `log-format` samples (`%[...]`).
    pub samples: Vec<Option<Vec<u8>>>,
    /// `%ID` (`unique-id-format`).
    pub unique_id: Option<String>,
}

impl ReqLog {
    /// A request whose connection became ready for it at `start`.
    pub fn new(start: Instant) -> ReqLog {
        ReqLog {
            start,
            first_byte: None,
            head_done: None,
            queue_done: None,
            connect_done: None,
            response_done: None,
            status: None,
            bytes_in: 0,
            bytes_out: 0,
            server: None,
            backend: None,
            retries: 0,
            redispatched: false,
            server_conn: ServerAddrs::default(),
            term: TermState::NORMAL,
            line: None,
            captured: None,
        }
    }

    /// Records the termination state unless one was already set (the
    /// first cause wins).
    pub fn end(&mut self, who: Who, phase: Phase) {
        if self.term == TermState::NORMAL {
            self.term = TermState::new(who, phase);
        }
    }

    /// Records the server that took the request (a no-op when it is the
    /// one already recorded: no reference count traffic).
    pub fn set_server(&mut self, server: &std::sync::Arc<fairlead_backend::Server>) {
        if self.server.as_ref().map(|s| s.conf.id) != Some(server.conf.id) {
            self.server = Some(server.clone());
        }
    }

    /// Feeds the backend's and the server's latency histograms (queue,
    /// connect, response, total), once the request is over.
    pub(crate) fn record_latency(&self, be: &fairlead_backend::Backend) {
        let Some(srv) = &self.server else { return };
        let us = |a: Option<Instant>, b: Option<Instant>| {
            Some(b?.saturating_duration_since(a?).as_micros() as u64)
        };
        let now = Some(Instant::now());
        let times = [
            us(self.head_done, self.queue_done),
            us(self.queue_done, self.connect_done),
            us(self.connect_done, self.response_done),
            self.response_done.and(us(self.first_byte, now)),
        ];
        for l in [&be.latency, &srv.metrics.latency] {
            let hs = [&l.queue, &l.connect, &l.response, &l.total];
            for (h, t) in hs.into_iter().zip(times) {
                if let Some(t) = t {
                    h.record(t);
                }
            }
        }
    }

    /// Keeps a copy of the request line (`buf` starts with it).
    pub fn keep_line(&mut self, buf: &[u8]) {
        let end = buf
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(buf.len());
        let mut v = pool::take_out();
        v.extend_from_slice(&buf[..end]);
        self.line = Some(v);
    }
}

impl Drop for ReqLog {
    fn drop(&mut self) {
        if let Some(v) = self.line.take() {
            pool::give_out(v);
        }
    }
}

/// Gauges sampled when the line is written.
pub(crate) struct Gauges {
    pub actconn: u32,
    pub feconn: u32,
    pub beconn: u32,
    pub srv_conn: u32,
    pub srv_queue: u32,
    pub backend_queue: u32,
}

impl Gauges {
    /// The gauges of request `rl` of frontend `front` on backend `be`, now.
    pub(crate) fn sample(
        front: &crate::Frontend,
        be: &fairlead_backend::Backend,
        rl: &ReqLog,
    ) -> Gauges {
        use std::sync::atomic::Ordering::Relaxed;
        let srv = rl.server.as_deref();
        Gauges {
            actconn: front.actconn.load(Relaxed),
            feconn: front.feconn.load(Relaxed),
            beconn: be.sessions.load(Relaxed),
            srv_conn: srv.map_or(0, |s| s.metrics.cur.load(Relaxed)),
            srv_queue: srv.map_or(0, |s| be.queue_len(s) as u32),
            backend_queue: be.queue.len() as u32,
        }
    }
}

fn refs(v: &[Option<Vec<u8>>]) -> Vec<Option<&[u8]>> {
    v.iter().map(|c| c.as_deref()).collect()
}

/// Writes the log line of a finished request.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit(
    setup: &LogSetup,
    rl: &ReqLog,
    client: SocketAddr,
    local: Option<&fairlead_net::Conn>,
    frontend: &str,
    backend: &str,
    server: Option<&str>,
    gauges: &Gauges,
    counter: u64,
    tls: Option<&fairlead_net::TlsInfo>,
) {
    if setup.connect_only {
        return;
    }
    let end = Instant::now();
    // dontlognull: a connection that never sent a request.
    if setup.dontlognull && rl.bytes_in == 0 && rl.first_byte.is_none() {
        return;
    }
    if rl.captured.as_ref().is_some_and(|c| c.silent) {
        return;
    }
    let (req_caps, res_caps, samples) = match &rl.captured {
        Some(c) => (refs(&c.req), refs(&c.res), refs(&c.samples)),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let since = |t: Option<Instant>| t.map(|t| ms(rl.start, t));
    let rec = LogRecord {
        req_captures: &req_caps,
        res_captures: &res_caps,
        samples: &samples,
        unique_id: rl.captured.as_ref().and_then(|c| c.unique_id.as_deref()),
        cookie_req: rl.captured.as_ref().and_then(|c| c.cookie_req.as_deref()),
        cookie_resp: rl.captured.as_ref().and_then(|c| c.cookie_res.as_deref()),
        client: Some(client),
        frontend_addr: local
            .filter(|_| setup.format.uses_frontend_addr())
            .and_then(|c| c.local_addr().ok()),
        backend_src: rl.server_conn.src,
        server_addr: rl.server_conn.dst,
        // The wall-clock date of `start`, from the monotonic clock: read
        // only when a line is written (two clock reads per request saved).
        accept_date: SystemTime::now() - rl.start.elapsed(),
        frontend,
        backend,
        server,
        idle: since(rl.first_byte),
        request_done: since(rl.head_done),
        queue_done: since(rl.queue_done),
        connect_done: since(rl.connect_done),
        response_done: since(rl.response_done),
        total: ms(rl.start, end),
        status: rl.status,
        bytes_in: rl.bytes_in,
        bytes_out: rl.bytes_out,
        term: rl.term,
        actconn: gauges.actconn,
        feconn: gauges.feconn,
        beconn: gauges.beconn,
        srv_conn: gauges.srv_conn,
        retries: rl.retries,
        redispatched: rl.redispatched,
        srv_queue: gauges.srv_queue,
        backend_queue: gauges.backend_queue,
        request_line: rl.line.as_deref(),
        pid: setup.pid,
        hostname: &setup.hostname,
        // HAProxy counts from 0: the first request logs `%rt` 0.
        request_counter: counter.saturating_sub(1),
        log_counter: counter.saturating_sub(1),
        ssl_version: tls.map(|t| t.version),
        ssl_cipher: tls.map(|t| t.cipher),
        ssl_sni: tls.and_then(|t| t.sni.as_deref()),
        ssl_resumed: tls.map(|t| t.resumed),
        ssl_c_used: tls.map(|t| t.peer_cert),
        http: true,
        ..Default::default()
    };
    setup.send(&rec, setup.json);
}

/// Writes HAProxy's "Connect from" line for a new connection (frontends
/// without a log option).
/// Logs a connection that failed before any request (a TLS handshake
/// failure), in HAProxy's connection error format:
/// `1.2.3.4:5678 [22/Nov/2026:10:00:00.123] fe/127.0.0.1:443: SSL handshake failure (reason)`.
/// Sent at level `err` when `option log-separate-errors` is set, else
/// `info`; `option dontlognull` does not hide it (HAProxy logs these too).
pub fn emit_conn_error(
    setup: &LogSetup,
    client: SocketAddr,
    local: Option<SocketAddr>,
    frontend: &str,
    reason: &str,
) {
    let level = if setup.separate_errors {
        fairlead_log::Level::Err
    } else {
        fairlead_log::Level::Info
    };
    if !setup.logger.wants(setup.sink, level) {
        return;
    }
    use std::io::Write as _;
    let mut msg = Vec::with_capacity(128);
    let _ = write!(msg, "{}:{} [", client.ip(), client.port());
    fairlead_log::write_log_date(&mut msg, SystemTime::now());
    let _ = write!(msg, "] {frontend}/");
    match local {
        Some(a) => {
            let _ = write!(msg, "{a}");
        }
        None => msg.push(b'-'),
    }
    let _ = write!(msg, ": {reason}");
    setup.logger.emit(setup.sink, level, &msg);
}

pub fn emit_connect(
    setup: &LogSetup,
    client: SocketAddr,
    local: Option<SocketAddr>,
    frontend: &str,
    http: bool,
) {
    if !setup.connect_only {
        return;
    }
    let rec = LogRecord {
        client: Some(client),
        frontend_addr: local,
        accept_date: SystemTime::now(),
        frontend,
        pid: setup.pid,
        hostname: &setup.hostname,
        http,
        ..Default::default()
    };
    setup.logger.log(
        setup.sink,
        fairlead_log::Level::Info,
        &setup.format,
        false,
        &rec,
    );
}
