//! The HTTP/1.1 client session: the phase loop described in the crate docs.

use crate::logging::{self, Gauges, ReqLog};
use crate::{Effective, HttpCtx};
use fairlead_backend::counters::C;
use fairlead_backend::{idle, Cause, ProxyError};
use fairlead_config::{HttpConnMode, HttpReuse};
use fairlead_http::{parse_request, parse_request_relaxed, BodyKind, RequestHead};
use fairlead_log::{Phase, Who};
use fairlead_net::io::{timed_out, until, with_timeout};
use fairlead_net::wait::{IdleWait, Woken};
use fairlead_net::{pool, Conn, IoBuf};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use tokio::time::Instant;

/// A server connection attached to the session between requests.
pub(crate) struct Attached {
    /// The server's stable id.
    pub(crate) srv: fairlead_backend::ServerId,
    pub(crate) stream: Conn,
    /// The request it serves is not its first (taken from the idle pool,
    /// or kept from the session's previous request): it parks as safe
    /// (`http-reuse aggressive`).
    pub(crate) reused: bool,
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
    /// thread's idle pool after each response. Boxed: most sessions never
    /// have one, and every idle session carries the field.
    pub(crate) attached: Option<Box<Attached>>,
    /// What the connection keeps between requests, boxed (most
    /// connections have none): its `sess` variables and stick counters.
    pub(crate) sess: Option<Box<SessCarry>>,
    pub(crate) first: bool,
    accepted_at: Instant,
    /// End of the previous request (or accept), for the next log line.
    last_end: Instant,
    /// When the current request's first byte arrived.
    first_byte: Instant,
    /// The connection's place in the runtime's accounts; a session with
    /// one is parked without a task while idle ([`crate::park`]).
    pub(crate) hold: Option<crate::park::ConnHold>,
}

/// What a connection keeps between its requests: what its
/// `tcp-request connection|session` rules left ([`SessCarry::new`]), then
/// what its transactions leave.
#[derive(Default)]
pub struct SessCarry {
    /// The `sess` variables.
    pub(crate) vars: crate::txn::SessVars,
    /// The stick counter slots of `tcp-request connection|session`
    /// `track-scN`; released when the connection ends.
    pub(crate) trk: Option<Rc<fairlead_stick::Trackers>>,
}

impl SessCarry {
    /// The `sess` variables and the stick counter slots that the
    /// connection's `tcp-request connection|session` rules set; `None`
    /// when there are neither (no allocation).
    pub fn new(
        vars: fairlead_rules::vars::SessVars,
        trackers: Option<fairlead_stick::Trackers>,
    ) -> Option<Box<SessCarry>> {
        (vars.is_some() || trackers.is_some()).then(|| {
            Box::new(SessCarry {
                vars,
                trk: trackers.map(Rc::new),
            })
        })
    }
}

impl Session {
    /// The `sess` variables, for a transaction.
    fn take_vars(&mut self) -> crate::txn::SessVars {
        self.sess.as_mut().and_then(|c| c.vars.take())
    }

    /// The `sess` variables back from a transaction.
    fn put_vars(&mut self, vars: crate::txn::SessVars) {
        if vars.is_some() || self.sess.is_some() {
            self.sess.get_or_insert_with(Default::default).vars = vars;
        }
    }

    /// The connection's stick counter slots.
    fn trk(&self) -> Option<&Rc<fairlead_stick::Trackers>> {
        self.sess.as_ref().and_then(|c| c.trk.as_ref())
    }

    fn take_trk(&mut self) -> Option<Rc<fairlead_stick::Trackers>> {
        self.sess.as_mut().and_then(|c| c.trk.take())
    }
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
/// rules already ran: `sess` ([`SessCarry::new`]) holds the `sess`
/// variables they set (`peer` is the address after their `set-src`) and
/// the stick counter slots they tracked (counted by every request of the
/// connection and released when it ends).
pub fn serve_http_with(
    client: Conn,
    peer: SocketAddr,
    ctx: Rc<HttpCtx>,
    sess: Option<Box<SessCarry>>,
) -> impl std::future::Future<Output = ()> {
    serve_http_held(client, peer, ctx, sess, None)
}

/// [`serve_http_with`] for a connection counted in the runtime's accounts
/// by `hold` (dropped when the connection ends). Such a connection has no
/// task while it is idle between requests: it is parked in the worker's
/// idle set ([`crate::park`]) and gets a new task when its next request
/// arrives; the future returned then ends early.
pub fn serve_http_held(
    client: Conn,
    peer: SocketAddr,
    ctx: Rc<HttpCtx>,
    sess: Option<Box<SessCarry>>,
    hold: Option<crate::park::ConnHold>,
) -> impl std::future::Future<Output = ()> {
    let eff = Effective {
        conn_mode: ctx
            .front
            .conn_mode
            .max(ctx.front.routes.default_be.options.http_conn_mode),
        reuse: ctx.front.routes.default_be.options.http_reuse,
    };
    // Built here, outside the future: an async fn would keep its
    // arguments in the task next to the session made of them.
    serve_session(Session {
        client,
        peer,
        ctx,
        eff,
        cbuf: IoBuf::new(),
        attached: None,
        sess,
        first: true,
        accepted_at: Instant::now(),
        last_end: Instant::now(),
        first_byte: Instant::now(),
        hold,
    })
}

/// The connection's task: requests until the connection closes.
///
/// A plain fn around an `async move` block that uses `s` in place: an
/// `async fn` would hold its argument and its own copy of it.
// Not an `async fn`, on purpose (see above).
#[allow(clippy::manual_async_fn)]
fn serve_session(s: Session) -> impl std::future::Future<Output = ()> {
    session_loop(s, false)
}

/// The task of a parked session that became readable.
pub(crate) fn serve_resumed(s: Session) -> impl std::future::Future<Output = ()> {
    session_loop(s, true)
}

/// The phase loop; `resumed`: a parked session whose socket was readable
/// (it waits for its request at once instead of parking again).
// Not an `async fn`, on purpose (see `serve_session`).
#[allow(clippy::manual_async_fn)]
fn session_loop(mut s: Session, resumed: bool) -> impl std::future::Future<Output = ()> {
    async move {
        if !resumed && crate::h2::selected(&s.client, &s.ctx) {
            return into_h2(s).await;
        }
        // TCP_NODELAY comes from the listener (see
        // fairlead_net::tune_listener): no system call per connection.
        let mut may_park = !resumed;
        loop {
            if may_park && s.can_park() {
                match crate::park::park(s) {
                    None => return,
                    Some(back) => s = back,
                }
            }
            may_park = true;
            match s.wait().await {
                Wait::Request => {}
                Wait::Idle => continue,
                Wait::Close => break,
            }
            // HTTP/2 preface detection; boxed, so that this rare wait stays
            // out of every idle connection's task.
            if s.first
                && crate::h2::preface_state(s.cbuf.filled()) != Some(false)
                && Box::pin(crate::h2::sniff(
                    &mut s.cbuf,
                    &s.client,
                    s.accepted_at,
                    &s.ctx,
                ))
                .await
            {
                return into_h2(s).await;
            }
            let (back, next) = fairlead_net::reuse::run_pooled(|| request_phase(s)).await;
            s = back;
            if let Next::Close = next {
                break;
            }
        }
        finish(s);
    }
}

/// The end of a session, with or without a task.
pub(crate) fn finish(mut s: Session) {
    // The client is gone: its server connection may serve other clients.
    if let Some(a) = s.attached.take() {
        park(*a, s.eff);
    }
    end_sess_trackers(s.take_trk());
}

/// What [`Session::wait`] saw.
enum Wait {
    /// The next request's first bytes are in the buffer.
    Request,
    /// Nothing yet after all (the readiness was spurious): park again.
    Idle,
    /// The connection must close.
    Close,
}

/// The end of the connection: its stick counter slots give their
/// `conn_cur` back and are released.
pub(crate) fn end_sess_trackers(t: Option<Rc<fairlead_stick::Trackers>>) {
    if let Some(Ok(mut t)) = t.map(Rc::try_unwrap) {
        t.end_connection(fairlead_rules::stick::now_ms());
    }
}

/// The connection turned out to be HTTP/2: its task goes on as the
/// HTTP/2 connection task (boxed: only its pointer stays in this task).
fn into_h2(s: Session) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
    let mut s = s;
    let sess_trk = s.take_trk();
    let Session {
        client,
        peer,
        cbuf,
        ctx,
        hold,
        ..
    } = s;
    Box::pin(async move {
        crate::h2::serve_h2(client, peer, ctx, cbuf, sess_trk).await;
        // The connection counts as open until here.
        drop(hold);
    })
}

/// Phases 2 to 6 of one request, owning the session meanwhile.
async fn request_phase(mut s: Session) -> (Session, Next) {
    let next = s.one_request().await;
    (s, next)
}

/// Puts a server connection back in this thread's idle pool.
pub(crate) fn park(a: Attached, eff: Effective) {
    if eff.reuse != HttpReuse::Never && eff.conn_mode == HttpConnMode::KeepAlive {
        idle::put(a.srv, a.stream, a.reused);
    }
}

/// How the response phase ended, for the keep-alive decision.
pub(crate) struct Outcome {
    /// The client connection stays open for the next request; when false,
    /// whoever made the outcome has already shut its write side down.
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

    /// True when the session, idle between requests, may be parked
    /// without a task: a keep-alive connection with a [`Self::hold`],
    /// nothing buffered, and no soft stop.
    pub(crate) fn can_park(&self) -> bool {
        !self.first && self.hold.is_some() && self.cbuf.is_empty() && !self.stopping()
    }

    /// When the idle wait for the next request ends: `timeout
    /// http-request` (or `client`) from the accept for the first request,
    /// `timeout http-keep-alive` (or `http-request`, or `client`) from the
    /// end of the previous one for the others. `None`: no timeout.
    pub(crate) fn idle_deadline(&self) -> Option<Instant> {
        let t = &self.ctx.front.timeouts;
        if self.first {
            t.http_request.or(t.client).map(|d| self.accepted_at + d)
        } else {
            t.http_keep_alive
                .or(t.http_request)
                .or(t.client)
                .map(|d| self.last_end + d)
        }
    }

    /// Phase 1: wait for the first byte of the next request, holding no
    /// buffer.
    async fn wait(&mut self) -> Wait {
        if !self.cbuf.is_empty() {
            return Wait::Request;
        }
        let deadline = self.idle_deadline();
        if !self.first && self.stopping() {
            return Wait::Close;
        }
        // A soft stop closes idle keep-alive connections; a new connection
        // still gets its first request served.
        let ctx = self.ctx.clone();
        let stop = (!self.first).then_some(&*ctx.stop);
        let r = loop {
            match IdleWait::new(&self.client, deadline, stop).await {
                Woken::Readable(Ok(())) => {}
                Woken::Readable(Err(e)) => break Err(e),
                Woken::TimedOut => break Err(timed_out("http-request timeout")),
                Woken::Stopped => return Wait::Close,
            }
            match self.cbuf.try_read_from(&self.client, usize::MAX) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if self.can_park() {
                        return Wait::Idle;
                    }
                }
                r => break r,
            }
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
                Wait::Close
            }
            Ok(_) => {
                self.first_byte = Instant::now();
                Wait::Request
            }
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                if self.first {
                    // Boxed: this rare path's state (log record, page)
                    // stays out of every idle connection's task.
                    Box::pin(self.first_request_timeout()).await;
                }
                Wait::Close
            }
            Err(_) => Wait::Close,
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
    async fn read_head(&mut self) -> Result<RequestHead, ProxyError> {
        let started = if self.first {
            self.accepted_at
        } else {
            Instant::now()
        };
        let deadline = self.ctx.front.timeouts.http_request.map(|d| started + d);
        let refused = |cause| ProxyError::new(cause, Phase::Request, false);
        loop {
            let max_head = self.ctx.front.max_head;
            let parsed = if self.ctx.front.accept_invalid_http_request {
                parse_request_relaxed(self.cbuf.filled_mut(), max_head)
            } else {
                parse_request(self.cbuf.filled(), max_head)
            };
            match parsed {
                Ok(Some(h)) => return Ok(h),
                Ok(None) => {}
                Err(e) => {
                    self.ctx.front.errors.capture(
                        self.peer,
                        e.reason,
                        e.offset,
                        self.cbuf.filled(),
                    );
                    return Err(refused(Cause::BadRequest(e.status)));
                }
            }
            if self.cbuf.is_full() {
                return Err(refused(Cause::BadRequest(431)));
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
                Ok(0) => return Err(refused(Cause::ClientAbort)),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::TimedOut => {
                    return Err(refused(Cause::ClientTimeout))
                }
                Err(_) => return Err(refused(Cause::ClientAbort)),
            }
        }
    }

    /// The connection's stick counters for a request the rules did not
    /// see (no rules, or a request that failed to parse): one request,
    /// and its status as an error or a failure.
    fn count_plain(&self, rl: &ReqLog) {
        let Some(t) = self.trk().map(|t| &**t) else {
            return;
        };
        let modelled = rl.head_done.is_some() && self.ctx.front.routes.active();
        if modelled || (rl.head_done.is_none() && rl.status.is_none()) {
            return;
        }
        let levels = fairlead_stick::Levels {
            stream: None,
            session: Some(t),
        };
        let now = fairlead_rules::stick::now_ms();
        levels.on_http_request(now);
        if let Some(status) = rl.status {
            levels.on_response_status(status, now);
        }
    }

    /// One request/response exchange, logged when it ends.
    async fn one_request(&mut self) -> Next {
        let mut rl = ReqLog::new(self.last_end);
        rl.first_byte = Some(self.first_byte);
        let next = self.one_request_inner(&mut rl).await;
        self.count_plain(&rl);
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
            Err(e) => {
                let (who, phase) = e.termination();
                rl.end(who, phase);
                if let Some(status) = e.status() {
                    self.send_error(status, rl).await;
                }
                return Next::Close;
            }
        };
        let mut model = None;
        let mut prefer = None;
        if self.ctx.front.routes.active() {
            let vars = self.take_vars();
            let mut m = crate::local::Model::take(self.cbuf.filled(), &head, vars);
            m.st.fx.sess_trackers = self.trk().cloned();
            match self.process(&head, &mut m).await {
                crate::process::Decision::Local(l) => {
                    rl.backend = m.st.fx.backend_stage.flatten();
                    let next = self.send_local(l, &head, &mut m, rl).await;
                    let v = m.finish(rl);
                    self.put_vars(v);
                    return next;
                }
                crate::process::Decision::Forward { be, server } => {
                    rl.backend = be;
                    prefer = server;
                }
                // `process` resolves and goes on: never returned.
                crate::process::Decision::Resolve(_) => {}
            }
            model = Some(m);
        }
        if let Some(next) = self.local_service(&head, model.as_mut(), rl).await {
            if let Some(m) = model {
                let v = m.finish(rl);
                self.put_vars(v);
            }
            return next;
        }
        let outcome = self.exchange(&head, model.as_mut(), prefer, rl).await;
        if let Some(m) = model {
            let v = m.finish(rl);
            self.put_vars(v);
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
            // The response's sender already shut the write side down,
            // right after the last bytes.
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
        let stats = model.map(|m| self.stats_rules(m)).unwrap_or_default();
        // A small body with a length (an admin form) is read and passed
        // on; any other body is not used: close afterwards rather than
        // parse it.
        let body_len = match head.body {
            BodyKind::Length(n) => self.read_small_body(head.head_len, n).await,
            BodyKind::None => Some(0),
            _ => None,
        };
        let buf = self.cbuf.filled();
        let body = body_len.map_or(&[][..], |n| &buf[head.head_len..head.head_len + n]);
        let req = crate::ServiceRequest {
            method: &buf[head.method.0..head.method.1],
            uri: &buf[head.uri.0..head.uri.1],
            authorization: fairlead_http::cookie::header_value(buf, head.head_len, "authorization"),
            client: self.peer.ip(),
            stats,
            body,
        };
        let resp = svc.handle(&req)?;
        let keep = head.keep_alive && body_len.is_some() && !self.stopping();
        self.cbuf.consume(head.head_len + body_len.unwrap_or(0));
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

    /// Reads a `Content-Length: n` body that fits in the buffer after the
    /// head, within `timeout client`. `None`: too large, or the client
    /// went away or was too slow.
    async fn read_small_body(&mut self, head_len: usize, n: u64) -> Option<usize> {
        let n = usize::try_from(n).ok()?;
        let idle = self.ctx.front.timeouts.client;
        while self.cbuf.len() < head_len + n {
            if self.cbuf.is_full() {
                return None;
            }
            let r = with_timeout(idle, "client timeout", async {
                self.cbuf.read_from(&self.client, usize::MAX).await
            })
            .await;
            if !matches!(r, Ok(k) if k > 0) {
                return None;
            }
        }
        Some(n)
    }

    /// Feeds the backend's and server's latency histograms.
    fn record_latency(&self, rl: &ReqLog) {
        rl.record_latency(crate::process::backend(&self.ctx, rl.backend));
    }

    /// Writes the log line of a request, if the frontend logs.
    fn log(&self, rl: &ReqLog) {
        let Some(setup) = self.ctx.front.log.as_deref() else {
            return;
        };
        let be = crate::process::backend(&self.ctx, rl.backend);
        let gauges = Gauges::sample(&self.ctx.front, be, rl);
        let client = match rl.captured.as_ref().and_then(|c| c.src) {
            Some(ip) => SocketAddr::new(ip, self.peer.port()),
            None => self.peer,
        };
        logging::emit(
            setup,
            rl,
            client,
            Some(&self.client),
            &self.ctx.front.name,
            &be.name,
            rl.server.as_ref().map(|s| s.conf.name.as_str()),
            &gauges,
            self.ctx.front.counters.get(C::ReqTot),
            self.client.tls_info_ref().as_deref(),
        );
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

#[cfg(test)]
#[path = "session_tests.rs"]
pub(crate) mod tests;
