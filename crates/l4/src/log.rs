//! Logging of TCP streams: a frontend's set-up ([`LogSetup`], shared with
//! the HTTP side) and the line of one stream.

/// A frontend's logging set-up, built once at start-up.
pub struct LogSetup {
    pub logger: fairlead_log::Logger,
    pub sink: fairlead_log::SinkId,
    pub format: fairlead_log::LogFormat,
    /// `option httplog-json`.
    pub json: bool,
    /// `option dontlognull`: no log for a connection that sent nothing.
    pub dontlognull: bool,
    /// `option dontlog-normal`: log only errors.
    pub dontlog_normal: bool,
    /// `option log-separate-errors`: errors at level `err`.
    pub separate_errors: bool,
    pub pid: u32,
    pub hostname: String,
    /// No log option: HAProxy's "Connect from" line at accept time instead
    /// of a line per request.
    pub connect_only: bool,
}

impl std::fmt::Debug for LogSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSetup")
            .field("sink", &self.sink)
            .field("format", &self.format.source())
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl LogSetup {
    /// Sends the line of a finished stream or request, honouring
    /// `option dontlog-normal` and `option log-separate-errors`.
    pub fn send(&self, rec: &fairlead_log::LogRecord<'_>, json: bool) {
        let error = rec.is_error();
        if self.dontlog_normal && !error {
            return;
        }
        let level = if self.separate_errors && error {
            fairlead_log::Level::Err
        } else {
            fairlead_log::Level::Info
        };
        self.logger.log(self.sink, level, &self.format, json, rec);
    }
}

/// The addresses of the connection to the server, for `%bi %bp %si %sp`.
/// As in HAProxy, both print `-` when no connection was attempted (a
/// denied request); a failed connection still has a server address.
#[derive(Debug, Default, Clone, Copy)]
pub struct ServerAddrs {
    /// The proxy's source address towards the server.
    pub src: Option<std::net::SocketAddr>,
    /// The server's address.
    pub dst: Option<std::net::SocketAddr>,
}

impl ServerAddrs {
    /// Records the addresses of `conn` when `setup`'s format prints them
    /// (each costs a system call).
    pub fn record(&mut self, setup: Option<&LogSetup>, conn: &fairlead_net::Conn) {
        let Some(f) = setup.map(|s| &s.format) else {
            return;
        };
        if f.uses_backend_src() {
            self.src = conn.local_addr().ok();
        }
        if f.uses_server_addr() {
            self.dst = conn.peer_addr().ok();
        }
    }

    /// Records the address of the server a connection is being attempted
    /// to (it stays when the attempt fails).
    pub fn target(&mut self, setup: Option<&LogSetup>, server: &fairlead_backend::Server) {
        self.src = None;
        if setup.is_some_and(|s| s.format.uses_server_addr()) {
            self.dst = Some(**server.admin.addr.load());
        }
    }
}

/// What every log line of one TCP stream shares.
pub(crate) struct StreamLog<'a> {
    pub front: &'a crate::Frontend,
    /// When the connection was accepted.
    pub accepted: std::time::SystemTime,
    /// The client's address (after `set-src`).
    pub client: std::net::SocketAddr,
    /// `%fi`/`%fp`: the address the client connected to (when the format
    /// prints it).
    pub local: Option<std::net::SocketAddr>,
    pub start: tokio::time::Instant,
    pub tls: Option<&'a fairlead_net::TlsInfo>,
    /// `set-log-level silent`.
    pub silent: bool,
    /// The values of the format's `%[...]` samples.
    pub samples: &'a [Option<&'a [u8]>],
    /// `%ID`: the stream's unique id, if one was made.
    pub unique_id: Option<&'a str>,
}

/// How one TCP stream ended, for its log line.
pub(crate) struct StreamEnd<'a> {
    /// `%b`: the backend chosen by `use_backend` (the frontend's name when
    /// the frontend's own rules ended the stream).
    pub backend: &'a str,
    pub be: Option<&'a fairlead_backend::Backend>,
    pub server: Option<&'a fairlead_backend::Server>,
    pub term: fairlead_log::TermState,
    /// ms since accept: inspection done, queue left, connected.
    pub t: [Option<u64>; 3],
    /// Bytes from the client, to the client.
    pub bytes: (u64, u64),
    pub retries: u32,
    /// `%bi %bp %si %sp`.
    pub server_conn: ServerAddrs,
}

impl StreamLog<'_> {
    fn counter(&self) -> u64 {
        use fairlead_backend::counters::C;
        self.front.counters.get(C::Stot).saturating_sub(1)
    }

    /// Sends the stream's line (`option tcplog`, `log-format`), unless the
    /// frontend only logs connections, `option dontlognull` applies, or a
    /// rule made the stream silent.
    pub fn emit(&self, e: &StreamEnd<'_>) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(setup) = self.front.log.as_deref().filter(|l| !l.connect_only) else {
            return;
        };
        if self.silent || (setup.dontlognull && e.bytes.0 == 0) {
            return;
        }
        let tls = self.tls;
        let rec = fairlead_log::LogRecord {
            client: Some(self.client),
            frontend_addr: self.local,
            backend_src: e.server_conn.src,
            server_addr: e.server_conn.dst,
            accept_date: self.accepted,
            frontend: &self.front.name,
            backend: e.backend,
            server: e.server.map(|s| s.conf.name.as_str()),
            request_done: e.t[0],
            queue_done: e.t[1],
            connect_done: e.t[2],
            total: self.start.elapsed().as_millis() as u64,
            bytes_in: e.bytes.0,
            bytes_out: e.bytes.1,
            term: e.term,
            actconn: self.front.actconn.load(Relaxed),
            feconn: self.front.feconn.load(Relaxed),
            beconn: e.be.map_or(0, |b| b.sessions.load(Relaxed)),
            srv_conn: e.server.map_or(0, |s| s.metrics.cur.load(Relaxed)),
            backend_queue: e.be.map_or(0, |b| b.queue.len() as u32),
            retries: e.retries,
            // `%rt`/`%lc`: the frontend's stream count, from 0 as HAProxy
            // (this stream is already counted).
            request_counter: self.counter(),
            log_counter: self.counter(),
            pid: setup.pid,
            hostname: &setup.hostname,
            ssl_version: tls.map(|t| t.version),
            ssl_cipher: tls.map(|t| t.cipher),
            ssl_sni: tls.and_then(|t| t.sni.as_deref()),
            ssl_resumed: tls.map(|t| t.resumed),
            ssl_c_used: tls.map(|t| t.peer_cert),
            samples: self.samples,
            unique_id: self.unique_id,
            ..Default::default()
        };
        setup.send(&rec, false);
    }
}
