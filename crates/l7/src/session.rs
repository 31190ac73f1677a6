//! The HTTP/1.1 client session: the phase loop described in the crate docs.

use crate::body::{self, BodyError, Framer};
use crate::key::KeyData;
use crate::logging::{self, Gauges, ReqLog};
use crate::persist;
use crate::{Effective, HttpCtx};
use fairlead_backend::counters::C;
use fairlead_backend::{connect_server, idle, Backend, RequestKey, ServerSlot, TlsNames};
use fairlead_config::{HttpConnMode, HttpReuse};
use fairlead_http::{
    parse_request, parse_response, BodyKind, ConnHeader, RequestHead, RequestRewrite, ResponseHead,
};
use fairlead_log::{Phase, Who};
use fairlead_net::io::{until, with_timeout};
use fairlead_net::{pool, Conn, IoBuf};
use std::cell::Cell;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use tokio::time::Instant;

/// A server connection attached to the session between requests.
pub(crate) struct Attached {
    /// The server's index in its backend (u32 keeps the idle state small).
    pub(crate) idx: u32,
    /// The server's process-wide id (the index is per backend).
    pub(crate) srv_id: u32,
    pub(crate) stream: Conn,
}

/// What the phase loop does next.
pub(crate) enum Next {
    KeepGoing,
    Close,
}

/// One client connection's state. It owns everything (no borrows), so that
/// the request phase can run as a `'static` future in a pooled slot
/// ([`fairlead_net::reuse`]) while the idle phase stays small.
pub(crate) struct Session {
    pub(crate) client: Conn,
    pub(crate) peer: SocketAddr,
    pub(crate) ctx: Rc<HttpCtx>,
    pub(crate) eff: Effective,
    pub(crate) cbuf: IoBuf,
    /// A server connection kept private to this client between requests
    /// (`http-reuse never`); with the other modes it goes back to the
    /// thread's idle pool after each response.
    pub(crate) attached: Option<Attached>,
    /// The connection's `sess` variables between requests.
    pub(crate) sess_vars: crate::txn::SessVars,
    pub(crate) first: bool,
    accepted_at: Instant,
    /// End of the previous request (or accept), for the next log line.
    last_end: Instant,
    /// When the current request's first byte arrived.
    first_byte: Instant,
}

/// Serves one HTTP client connection until it closes.
///
/// While the connection waits for a request, its task holds only the small
/// [`Session`] and the wait state; the request phase runs in a pooled slot.
pub fn serve_http(
    client: Conn,
    peer: SocketAddr,
    ctx: Rc<HttpCtx>,
) -> impl std::future::Future<Output = ()> {
    serve_http_with(client, peer, ctx, None)
}

/// [`serve_http`] for a connection whose `tcp-request connection|session`
/// rules already ran: `sess` holds the `sess` variables they set (`peer`
/// is the address after their `set-src`).
pub async fn serve_http_with(
    client: Conn,
    peer: SocketAddr,
    ctx: Rc<HttpCtx>,
    sess: fairlead_rules::vars::SessVars,
) {
    let _ = client.set_nodelay(true);
    let eff = Effective {
        conn_mode: ctx.front.conn_mode.max(ctx.be.options.http_conn_mode),
        reuse: ctx.be.options.http_reuse,
    };
    let mut s = Session {
        client,
        peer,
        ctx,
        eff,
        cbuf: IoBuf::new(),
        attached: None,
        sess_vars: sess,
        first: true,
        accepted_at: Instant::now(),
        last_end: Instant::now(),
        first_byte: Instant::now(),
    };
    loop {
        if !s.wait().await {
            break;
        }
        let (back, next) = fairlead_net::reuse::run_pooled(|| request_phase(s)).await;
        s = back;
        if let Next::Close = next {
            break;
        }
    }
    // The client is gone: its server connection may serve other clients.
    if let Some(a) = s.attached.take() {
        park(a, s.eff);
    }
}

/// Phases 2 to 6 of one request, owning the session meanwhile.
async fn request_phase(mut s: Session) -> (Session, Next) {
    let next = s.one_request().await;
    (s, next)
}

/// Puts a server connection back in this thread's idle pool.
pub(crate) fn park(a: Attached, eff: Effective) {
    if eff.reuse != HttpReuse::Never && eff.conn_mode == HttpConnMode::KeepAlive {
        idle::put(a.srv_id as usize, a.stream);
    }
}

/// How the response phase ended, for the keep-alive decision.
pub(crate) struct Outcome {
    pub(crate) client_keep: bool,
    pub(crate) server_keep: bool,
}

impl Session {
    pub(crate) async fn send_error(&self, status: u16, rl: &mut ReqLog) {
        rl.status = Some(status);
        let page = crate::process::error_page(&self.ctx, rl.backend, status);
        let page = self.after_error(page, rl);
        rl.bytes_out += page.len() as u64;
        let fc = &self.ctx.front.counters;
        fc.status(status);
        if status < 500 {
            fc.inc(C::Ereq);
        }
        let _ = self
            .client
            .write_all(&page, self.ctx.front.timeouts.client)
            .await;
        self.client.shutdown_write();
    }

    pub(crate) fn stopping(&self) -> bool {
        self.ctx.stop.is_set()
    }

    /// Phase 1: wait for the first byte of the next request, holding no
    /// buffer. Returns false when the connection must close.
    async fn wait(&mut self) -> bool {
        if !self.cbuf.is_empty() {
            return true;
        }
        let t = &self.ctx.front.timeouts;
        let idle = if self.first {
            t.http_request.or(t.client)
        } else {
            t.http_keep_alive.or(t.http_request).or(t.client)
        };
        let deadline = idle.map(|d| {
            if self.first {
                self.accepted_at + d
            } else {
                Instant::now() + d
            }
        });
        if !self.first && self.stopping() {
            return false;
        }
        let stop_first = self.first;
        let ctx = self.ctx.clone();
        let stop = &ctx.stop;
        let read = async {
            until(deadline, "http-request timeout", async {
                self.cbuf.read_from(&self.client, usize::MAX).await
            })
            .await
        };
        // A soft stop closes idle keep-alive connections; a new connection
        // still gets its first request served.
        let stopped = async {
            if stop_first {
                std::future::pending::<()>().await;
            }
            stop.wait().await
        };
        let r = tokio::select! {
            r = read => r,
            _ = stopped => return false,
        };
        match r {
            Ok(0) => {
                // A connection closed before sending anything: HAProxy logs
                // it (`CR--`) unless `option dontlognull`.
                if self.first {
                    let mut rl = ReqLog::new(self.last_end);
                    rl.end(Who::Client, Phase::Request);
                    self.log(&rl);
                }
                false
            }
            Ok(_) => {
                self.first_byte = Instant::now();
                true
            }
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                if self.first {
                    // Boxed: this rare path's state (log record, page)
                    // stays out of every idle connection's task.
                    Box::pin(self.first_request_timeout()).await;
                }
                false
            }
            Err(_) => false,
        }
    }

    /// `timeout http-request` before the first request: 408, logged.
    async fn first_request_timeout(&mut self) {
        let mut rl = ReqLog::new(self.last_end);
        rl.end(Who::ClientTimeout, Phase::Request);
        self.send_error(408, &mut rl).await;
        self.log(&rl);
    }

    /// Phase 2: read until a complete head is parsed.
    async fn read_head(&mut self) -> Result<RequestHead, Option<u16>> {
        let started = if self.first {
            self.accepted_at
        } else {
            Instant::now()
        };
        let deadline = self.ctx.front.timeouts.http_request.map(|d| started + d);
        loop {
            match parse_request(self.cbuf.filled(), self.ctx.front.max_head) {
                Ok(Some(h)) => return Ok(h),
                Ok(None) => {}
                Err(e) => {
                    self.ctx.front.errors.capture(
                        self.peer,
                        e.reason,
                        e.offset,
                        self.cbuf.filled(),
                    );
                    return Err(Some(e.status));
                }
            }
            if self.cbuf.is_full() {
                return Err(Some(431));
            }
            let idle = self.ctx.front.timeouts.client;
            let r = until(deadline, "http-request timeout", async {
                with_timeout(idle, "client timeout", async {
                    self.cbuf.read_from(&self.client, usize::MAX).await
                })
                .await
            })
            .await;
            match r {
                Ok(0) => return Err(None),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::TimedOut => return Err(Some(408)),
                Err(_) => return Err(None),
            }
        }
    }

    /// One request/response exchange, logged when it ends.
    async fn one_request(&mut self) -> Next {
        let mut rl = ReqLog::new(self.last_end);
        rl.first_byte = Some(self.first_byte);
        let next = self.one_request_inner(&mut rl).await;
        self.record_latency(&rl);
        self.log(&rl);
        self.last_end = Instant::now();
        next
    }

    async fn one_request_inner(&mut self, rl: &mut ReqLog) -> Next {
        let head = match self.read_head().await {
            Ok(h) => {
                rl.head_done = Some(Instant::now());
                self.ctx.front.counters.inc(C::ReqTot);
                h
            }
            Err(Some(status)) => {
                match status {
                    408 => rl.end(Who::ClientTimeout, Phase::Request),
                    _ => rl.end(Who::Proxy, Phase::Request),
                }
                self.send_error(status, rl).await;
                return Next::Close;
            }
            Err(None) => {
                rl.end(Who::Client, Phase::Request);
                return Next::Close;
            }
        };
        let mut model = None;
        let mut prefer = None;
        if self.ctx.routes.active() {
            let mut m = crate::local::Model::take(self.cbuf.filled(), &head, self.sess_vars.take());
            match self.process(&head, &mut m).await {
                crate::process::Decision::Local(l) => {
                    rl.backend = m.st.fx.backend_stage.flatten();
                    let next = self.send_local(l, &head, &mut m, rl).await;
                    self.sess_vars = m.finish(rl);
                    return next;
                }
                crate::process::Decision::Forward { be, server } => {
                    rl.backend = be;
                    prefer = server;
                }
            }
            model = Some(m);
        }
        if let Some(next) = self.local_service(&head, model.as_mut(), rl).await {
            if let Some(m) = model {
                self.sess_vars = m.finish(rl);
            }
            return next;
        }
        let outcome = self.exchange(&head, model.as_mut(), prefer, rl).await;
        if let Some(m) = model {
            self.sess_vars = m.finish(rl);
        }
        let Some(outcome) = outcome else {
            return Next::Close;
        };
        if !outcome.server_keep {
            self.attached = None;
        }
        self.first = false;
        self.cbuf.release_if_empty();
        if outcome.client_keep {
            Next::KeepGoing
        } else {
            self.client.shutdown_write();
            Next::Close
        }
    }

    /// Answers a request for one of the frontend's own services (stats
    /// page, Prometheus exporter). `None`: not for a local service.
    async fn local_service(
        &mut self,
        head: &RequestHead,
        model: Option<&mut crate::local::Model>,
        rl: &mut ReqLog,
    ) -> Option<Next> {
        let svc = self.ctx.service.clone()?;
        let admin = model.and_then(|m| self.stats_admin(m));
        let buf = self.cbuf.filled();
        let req = crate::ServiceRequest {
            method: &buf[head.method.0..head.method.1],
            uri: &buf[head.uri.0..head.uri.1],
            authorization: fairlead_http::cookie::header_value(buf, head.head_len, "authorization"),
            client: self.peer.ip(),
            admin,
        };
        let resp = svc.handle(&req)?;
        // A request body is not used by these services: close afterwards
        // rather than parse it.
        let keep = head.keep_alive && head.body == BodyKind::None && !self.stopping();
        self.cbuf.consume(head.head_len);
        let mut out = pool::take_out();
        use std::io::Write as _;
        let _ = write!(
            out,
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
            resp.status,
            reason(resp.status),
            resp.content_type,
            resp.body.len()
        );
        // The services' own headers include their Cache-Control, if any.
        if !resp
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
        {
            out.extend_from_slice(b"cache-control: no-cache\r\n");
        }
        for (n, v) in &resp.headers {
            let _ = write!(out, "{n}: {v}\r\n");
        }
        out.extend_from_slice(if keep {
            b"\r\n"
        } else {
            b"connection: close\r\n\r\n"
        });
        rl.status = Some(resp.status);
        rl.bytes_out = (out.len() + resp.body.len()) as u64;
        self.ctx.front.counters.status(resp.status);
        let ct = self.ctx.front.timeouts.client;
        let wrote = self.client.write_all2(&out, &resp.body, ct).await;
        pool::give_out(out);
        self.first = false;
        Some(if wrote.is_ok() && keep {
            Next::KeepGoing
        } else {
            self.client.shutdown_write();
            Next::Close
        })
    }

    /// Feeds the backend's and server's latency histograms.
    fn record_latency(&self, rl: &ReqLog) {
        let Some(i) = rl.server else { return };
        let be = crate::process::backend(&self.ctx, rl.backend);
        let us = |a: Option<Instant>, b: Option<Instant>| {
            Some(b?.saturating_duration_since(a?).as_micros() as u64)
        };
        let now = Some(Instant::now());
        let times = [
            us(rl.head_done, rl.queue_done),
            us(rl.queue_done, rl.connect_done),
            us(rl.connect_done, rl.response_done),
            rl.response_done.and(us(rl.first_byte, now)),
        ];
        for l in [&be.latency, &be.servers[i].latency] {
            let hs = [&l.queue, &l.connect, &l.response, &l.total];
            for (h, t) in hs.into_iter().zip(times) {
                if let Some(t) = t {
                    h.record(t);
                }
            }
        }
    }

    /// Writes the log line of a request, if the frontend logs.
    fn log(&self, rl: &ReqLog) {
        let Some(setup) = self.ctx.front.log.as_deref() else {
            return;
        };
        let be = crate::process::backend(&self.ctx, rl.backend);
        let srv = rl.server.map(|i| &be.servers[i]);
        let gauges = Gauges {
            actconn: self
                .ctx
                .front
                .actconn
                .load(std::sync::atomic::Ordering::Relaxed),
            feconn: self
                .ctx
                .front
                .feconn
                .load(std::sync::atomic::Ordering::Relaxed),
            beconn: be.sessions.load(std::sync::atomic::Ordering::Relaxed),
            srv_conn: srv.map_or(0, |s| s.cur.load(std::sync::atomic::Ordering::Relaxed)),
            srv_queue: rl.server.map_or(0, |i| be.queue.server_len(i) as u32),
            backend_queue: be.queue.len() as u32,
        };
        let client = match rl.captured.as_ref().and_then(|c| c.src) {
            Some(ip) => SocketAddr::new(ip, self.peer.port()),
            None => self.peer,
        };
        logging::emit(
            setup,
            rl,
            client,
            &self.ctx.front.name,
            &be.name,
            srv.map(|s| s.name.as_str()),
            &gauges,
            self.ctx.front.counters.get(C::ReqTot),
            self.client.tls_info_ref().as_deref(),
        );
    }

    /// Phase 3: get a server slot (balancing, persistence, queue), then a
    /// connection to that server: the session's own, an idle one from this
    /// thread's pool, or a new one. Returns the connection, its slot, and
    /// whether the connection was reused.
    #[allow(clippy::too_many_arguments)]
    async fn connect(
        be: &Arc<Backend>,
        eff: Effective,
        first: bool,
        attached: &mut Option<Attached>,
        key: &RequestKey<'_>,
        prefer: Option<usize>,
        avoid: Option<usize>,
        attempts: &mut u32,
        names: TlsNames<'_>,
        rl: &mut ReqLog,
    ) -> Result<(Attached, ServerSlot, bool), u16> {
        let slot = match be.assign(key, prefer, avoid).await {
            Ok(s) => s,
            Err(fairlead_backend::AssignError::QueueTimeout) => {
                rl.end(Who::ServerTimeout, Phase::Queue);
                return Err(503);
            }
            Err(fairlead_backend::AssignError::NoServer) => {
                rl.end(Who::Server, Phase::Connect);
                return Err(503);
            }
        };
        rl.queue_done = Some(Instant::now());
        let idx = slot.idx();
        rl.server = Some(idx);
        if let Some(a) = attached.take() {
            if a.idx as usize == idx
                && a.srv_id as usize == be.servers[idx].id
                && a.stream.idle_alive()
            {
                return Ok((a, slot, true));
            }
            park(a, eff);
        }
        let may_pool = match eff.reuse {
            HttpReuse::Never => false,
            HttpReuse::Safe => !first,
            HttpReuse::Aggressive | HttpReuse::Always => true,
        };
        if may_pool {
            let server = &be.servers[idx];
            // A connection made for another SNI does not fit.
            let name = match &server.tls {
                Some(t) if server.tls_sni_varies => {
                    Some(t.server_name(names.client_sni, names.host, server.addr.load().ip()))
                }
                _ => None,
            };
            let sni = match &name {
                Some(fairlead_tls::ServerName::DnsName(d)) => Some(d.as_ref()),
                _ => None,
            };
            if let Some(stream) = idle::take(server.id, sni) {
                let srv_id = server.id as u32;
                return Ok((
                    Attached {
                        idx: idx as u32,
                        srv_id,
                        stream,
                    },
                    slot,
                    true,
                ));
            }
        }
        let connected = connect_server(be, slot, key, attempts, names).await;
        rl.retries = *attempts;
        match connected {
            Ok(c) => Ok((
                Attached {
                    idx: c.slot.idx() as u32,
                    srv_id: c.slot.server().id as u32,
                    stream: c.stream,
                },
                c.slot,
                false,
            )),
            Err(_) => {
                rl.end(Who::Server, Phase::Connect);
                Err(503)
            }
        }
    }

    /// Phases 3 to 6 for one parsed request. `None` means both sides must be
    /// closed now (an error response, if any, was already sent).
    async fn exchange(
        &mut self,
        head: &RequestHead,
        mut model: Option<&mut crate::local::Model>,
        prefer: Option<usize>,
        rl: &mut ReqLog,
    ) -> Option<Outcome> {
        let ctx = self.ctx.clone();
        let fe = &ctx.front;
        let be = crate::process::backend(&ctx, rl.backend);
        self.eff = Effective {
            conn_mode: fe.conn_mode.max(be.options.http_conn_mode),
            reuse: be.options.http_reuse,
        };
        let bt = &be.options.timeouts;
        let server_conn = if head.upgrade {
            ConnHeader::Upgrade
        } else if self.eff.conn_mode == HttpConnMode::KeepAlive {
            ConnHeader::None
        } else {
            ConnHeader::Close
        };
        // `http-request set-src` changes the address servers and logs see.
        let ip = model
            .as_deref()
            .and_then(|m| m.st.fx.src)
            .unwrap_or(self.peer.ip());
        let forwarded_for = fe.forwardfor.as_ref().and_then(|ff| {
            let excepted = ff.except.is_some_and(|n| n.contains(ip));
            let present = ff.if_none
                && match model.as_deref() {
                    Some(m) => m.head.view(self.cbuf.filled()).has(ff.header.as_bytes()),
                    None => {
                        fairlead_http::has_header(self.cbuf.filled(), head.head_len, &ff.header)
                    }
                };
            (!excepted && !present).then_some((ff.header.as_str(), ip))
        });
        let mut out = pool::take_out();
        match model.as_deref_mut() {
            Some(m) => {
                m.head
                    .write_request_h1(self.cbuf.filled(), server_conn, forwarded_for, &mut out);
                m.keep_request(
                    self.cbuf.filled(),
                    head,
                    crate::local::sections(&ctx, rl.backend),
                );
            }
            None => fairlead_http::write_request_head(
                self.cbuf.filled(),
                head,
                &RequestRewrite {
                    conn: server_conn,
                    forwarded_for,
                },
                &mut out,
            ),
        }
        let cookie = be.options.cookie.as_ref();
        let persist = cookie
            .map(|c| persist::lookup(c, be, self.cbuf.filled(), head.head_len))
            .unwrap_or_default();
        if let Some(c) = cookie {
            persist::edit_request(c, persist, &mut out);
        }
        let key_data = KeyData::new(be.lb_needs(), self.cbuf.filled(), head, ip);
        if fe.log.is_some() {
            rl.keep_line(&self.cbuf.filled()[head.method.0..head.head_len]);
        }
        let idempotent = fairlead_http::method_is_idempotent(self.cbuf.filled(), head);
        // What a TLS server's SNI may be made of (`sni req.hdr(host)`,
        // `sni ssl_fc_sni`); only kept when some server needs it.
        let host = be
            .tls_host_sni
            .then(|| {
                fairlead_http::cookie::header_value(self.cbuf.filled(), head.head_len, "host")
                    .map(|h| String::from_utf8_lossy(host_without_port(h)).into_owned())
            })
            .flatten();
        let client_sni = if be.tls_sni_varies {
            self.client.tls_info_ref().and_then(|i| i.sni.clone())
        } else {
            None
        };
        let names = TlsNames {
            client_sni: client_sni.as_deref(),
            host: host.as_deref(),
        };
        self.cbuf.consume(head.head_len);
        // A request whose body was not started can be sent again on a new
        // connection when a reused one turns out to be dead, or when
        // `retry-on` asks for it.
        let replayable = matches!(head.body, BodyKind::None | BodyKind::Length(0));
        let retry_on = &be.options.retry_on;
        let mut framer = Framer::new(head.body);
        let req_bytes = Cell::new(0u64);
        let mut sbuf = IoBuf::new();
        let mut stale_tries = 0;
        let mut attempts = 0u32;
        let mut avoid = None;
        let (conn, slot, resp) = loop {
            let key = key_data.key();
            let connected = Self::connect(
                be,
                self.eff,
                self.first,
                &mut self.attached,
                &key,
                prefer.or(persist.server),
                avoid,
                &mut attempts,
                names,
                rl,
            )
            .await;
            let (conn, slot, reused) = match connected {
                Ok(c) => c,
                Err(status) => {
                    pool::give_out(out);
                    self.send_error(status, rl).await;
                    return None;
                }
            };
            rl.connect_done = Some(Instant::now());
            rl.server = Some(slot.idx());
            let server = slot.server().clone();
            if reused {
                server.counters.inc(C::ConnReused);
            }
            let result = self
                .forward_request(&conn, &out, &mut framer, &mut sbuf, head, &req_bytes, *bt)
                .await;
            // Can this failure be retried on another attempt?
            let may_retry = |wanted: bool, attempts: u32| {
                wanted && replayable && idempotent && attempts < be.options.retries
            };
            let retry_reason = match &result {
                Ok(resp) => {
                    server.observe(true, !is_server_error(resp.status));
                    retry_on.statuses.contains(&resp.status)
                }
                // A pooled connection closed under us: replay at once.
                Err(Fail::Retry) if reused && replayable && stale_tries < 3 => {
                    stale_tries += 1;
                    sbuf = IoBuf::new();
                    continue;
                }
                Err(Fail::Retry) => {
                    server.observe(true, false);
                    retry_on.empty_response
                }
                Err(Fail::Status(502)) => {
                    server.observe(true, false);
                    retry_on.junk_response
                }
                Err(Fail::Status(504)) => {
                    server.observe(true, false);
                    retry_on.response_timeout
                }
                Err(_) => false,
            };
            if may_retry(retry_reason, attempts) {
                attempts += 1;
                if be.redispatch_now(attempts) {
                    avoid = Some(slot.idx());
                    rl.redispatched = true;
                }
                rl.retries = attempts;
                sbuf = IoBuf::new();
                continue;
            }
            if !matches!(result, Ok(_) | Err(Fail::Abort)) {
                be.counters.inc(C::Eresp);
                server.counters.inc(C::Eresp);
            }
            if matches!(result, Err(Fail::Abort)) {
                be.counters.inc(C::CliAbrt);
                server.counters.inc(C::CliAbrt);
                fe.counters.inc(C::CliAbrt);
            }
            match result {
                Ok(resp) => {
                    rl.response_done = Some(Instant::now());
                    break (conn, slot, resp);
                }
                Err(Fail::Retry) | Err(Fail::Status(502)) => {
                    rl.end(Who::Server, Phase::Headers);
                    pool::give_out(out);
                    self.send_error(502, rl).await;
                    return None;
                }
                Err(Fail::Status(s)) => {
                    match s {
                        504 => rl.end(Who::ServerTimeout, Phase::Headers),
                        _ => rl.end(Who::Proxy, Phase::Request),
                    }
                    pool::give_out(out);
                    self.send_error(s, rl).await;
                    return None;
                }
                Err(Fail::Abort) => {
                    rl.end(Who::Client, Phase::Data);
                    pool::give_out(out);
                    return None;
                }
            }
        };
        drop(key_data);
        // Request bytes: the head as received plus the body forwarded.
        let bin = head.head_len as u64 + req_bytes.get();
        rl.bytes_in = bin;
        fe.counters.add(C::Bin, bin);
        be.counters.add(C::Bin, bin);
        slot.server().counters.add(C::Bin, bin);
        be.counters.inc(C::ReqTot);
        slot.server().counters.inc(C::ReqTot);
        pool::give_out(out);
        let request_done = framer.is_done();
        self.respond(
            head,
            conn,
            slot,
            resp,
            sbuf,
            request_done,
            persist,
            model,
            rl,
        )
        .await
    }

    /// Phase 4: send the head, stream the body and read the response head
    /// concurrently, relaying interim 1xx responses.
    #[allow(clippy::too_many_arguments)]
    async fn forward_request(
        &mut self,
        conn: &Attached,
        out: &[u8],
        framer: &mut Framer,
        sbuf: &mut IoBuf,
        head: &RequestHead,
        req_bytes: &Cell<u64>,
        bt: fairlead_config::Timeouts,
    ) -> Result<ResponseHead, Fail> {
        let ctx = self.ctx.clone();
        let ct = ctx.front.timeouts.client;
        let server = &conn.stream;
        if server.write_all(out, bt.server).await.is_err() {
            return Err(Fail::Retry);
        }
        let client = &self.client;
        let cbuf = &mut self.cbuf;
        let body_fut = async {
            if framer.is_done() {
                return Ok(());
            }
            body::forward(framer, client, cbuf, server, ct, bt.server)
                .await
                .map(|n| req_bytes.set(req_bytes.get() + n))
        };
        let max_head = ctx.front.max_head;
        let is_head = head.is_head;
        let client_11 = head.minor_version == 1;
        let resp_fut = async {
            let mut got_any = false;
            loop {
                match parse_response(sbuf.filled(), is_head, max_head) {
                    Ok(Some(r)) if (100..200).contains(&r.status) && r.status != 101 => {
                        // Interim response: relay to HTTP/1.1 clients.
                        if client_11 {
                            let _ = client.write_all(&sbuf.filled()[..r.head_len], ct).await;
                        }
                        sbuf.consume(r.head_len);
                        continue;
                    }
                    Ok(Some(r)) => return Ok(r),
                    Ok(None) => {}
                    Err(_) => return Err(Fail::Status(502)),
                }
                if sbuf.is_full() {
                    return Err(Fail::Status(502));
                }
                let r = with_timeout(bt.server, "server timeout", async {
                    sbuf.read_from(server, usize::MAX).await
                })
                .await;
                match r {
                    Ok(0) if !got_any => return Err(Fail::Retry),
                    Ok(0) => return Err(Fail::Status(502)),
                    Ok(_) => got_any = true,
                    Err(e) if e.kind() == ErrorKind::TimedOut => return Err(Fail::Status(504)),
                    Err(_) if !got_any => return Err(Fail::Retry),
                    Err(_) => return Err(Fail::Status(502)),
                }
            }
        };
        // Run both until each is done, except that a client-side or framing
        // error in the body ends the exchange at once (the server would
        // otherwise wait for the rest of the body until `timeout server`).
        tokio::pin!(body_fut);
        tokio::pin!(resp_fut);
        let mut body_done = false;
        let mut resp: Option<ResponseHead> = None;
        while !body_done || resp.is_none() {
            tokio::select! {
                r = &mut body_fut, if !body_done => {
                    body_done = true;
                    match r {
                        Err(BodyError::Framing(e)) => return Err(Fail::Status(e.status)),
                        Err(BodyError::Source(_)) => return Err(Fail::Abort),
                        // The server stopped reading: its response says why.
                        Err(BodyError::Dest(_)) | Ok(()) => {}
                    }
                }
                r = &mut resp_fut, if resp.is_none() => resp = Some(r?),
            }
        }
        Ok(resp.expect("loop ends with a response"))
    }
}

/// A Host header value without its port (`example.com:8443`,
/// `[::1]:8443`).
fn host_without_port(h: &[u8]) -> &[u8] {
    if h.first() == Some(&b'[') {
        return match h.iter().position(|&b| b == b']') {
            Some(i) => &h[1..i],
            None => h,
        };
    }
    match h.iter().rposition(|&b| b == b':') {
        Some(i) => &h[..i],
        None => h,
    }
}

/// Reason phrases of the statuses local services answer with.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Unknown",
    }
}

/// Responses that count as errors for `observe layer7`: 5xx except 501
/// and 505, as HAProxy.
fn is_server_error(status: u16) -> bool {
    (500..600).contains(&status) && status != 501 && status != 505
}

/// Why forwarding a request failed.
enum Fail {
    /// The server connection died before any response byte: the request
    /// may be replayed on a new connection.
    Retry,
    /// Answer the client with this status and close.
    Status(u16),
    /// The client went away: close silently.
    Abort,
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
