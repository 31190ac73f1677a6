//! Phases 3 and 4 of a request: **prepare** what goes to the server,
//! **connect** (balance, reuse or open a connection), **forward** the
//! request and read the response head.
//!
//! Every failure on the way is a [`ProxyError`] (which side, which phase,
//! whether replaying is safe). Whether to try again is the backend's one
//! retry policy ([`fairlead_backend::retry`]), shared with TCP mode; the
//! only retry outside it is the immediate replay of a request whose pooled
//! server connection turned out to be closed, which HAProxy does not count
//! either.

use crate::body::{self, BodyError, Framer};
use crate::h2::mux::{self, Lease, Names};
use crate::key::KeyData;
use crate::logging::ReqLog;
use crate::persist::{self, Persist};
use crate::session::{park, Attached, Outcome, Session};
use crate::splice::BodySplice;
use crate::Effective;
use fairlead_backend::counters::C;
use fairlead_backend::{
    connect_server, idle, proxy_v2_tlvs, Backend, Cause, ProxyError, RequestKey, Server, ServerId,
    ServerSlot, Side, TlsNames, Trigger, Verdict,
};
use fairlead_config::{HttpConnMode, HttpReuse};
use fairlead_http::{
    parse_response, BodyKind, ConnHeader, RequestHead, RequestRewrite, ResponseHead,
};
use fairlead_l4::{SpliceMode, TunnelSplice};
use fairlead_log::Phase;
use fairlead_net::io::with_timeout;
use fairlead_net::{pool, IoBuf};
use fairlead_rules::proxy::PersistMode;
use std::cell::Cell;
use std::io::ErrorKind;
use std::sync::Arc;
use tokio::time::Instant;

/// What the request needs on its way to a server, prepared once before
/// the first attempt; retries reuse it.
struct Prepared {
    /// The head to send, serialised (a pooled buffer).
    out: Vec<u8>,
    persist: Persist,
    /// The server a `stick match` rule designated (after `use-server` and
    /// the persistence cookie).
    stick: Option<ServerId>,
    key_data: KeyData,
    /// No request body: the request can be replayed at once when its
    /// pooled connection turns out to be closed.
    no_body: bool,
    /// Safe to send again after a failure or a `retry-on` status: no body,
    /// and an idempotent method.
    replayable: bool,
    /// The request's Host without port, when a server's SNI uses it.
    host: Option<String>,
    /// The client's SNI, when a server's SNI uses it.
    client_sni: Option<Box<str>>,
    /// The stream's unique id, when a server's PROXY v2 header carries it.
    unique_id: Option<Vec<u8>>,
    /// `force-persist` matched: the designated server may be down.
    force_persist: bool,
}

impl Prepared {
    fn names(&self) -> TlsNames<'_> {
        TlsNames {
            client_sni: self.client_sni.as_deref(),
            host: self.host.as_deref(),
            client_addrs: None,
            proxy_v2: None,
            has_data: true,
        }
    }
}

/// A server's response head, with the connection and slot it came on.
struct Answered {
    conn: Attached,
    slot: ServerSlot,
    resp: ResponseHead,
    sbuf: IoBuf,
}

/// What the attempts reached: an HTTP/1 server's response head, or an
/// HTTP/2 connection (nothing sent yet: the exchange is
/// `exchange_h2_server`'s).
enum Reached {
    H1(Answered),
    H2(Lease, ServerSlot),
}

/// A connection the connect phase found.
enum Found {
    H1(Attached),
    /// An HTTP/2 connection: pooled with room for a stream, or new.
    H2(Lease),
}

impl Session {
    /// Phases 3 to 6 for one parsed request. `None` means both sides must be
    /// closed now (an error response, if any, was already sent).
    pub(crate) async fn exchange(
        &mut self,
        head: &RequestHead,
        mut model: Option<&mut crate::local::Model>,
        prefer: Option<ServerId>,
        rl: &mut ReqLog,
    ) -> Option<Outcome> {
        let ctx = self.ctx.clone();
        let be = crate::process::backend(&ctx, rl.backend);
        self.eff = Effective {
            conn_mode: ctx.front.conn_mode.max(be.options.http_conn_mode),
            reuse: be.options.http_reuse,
        };
        let prep = self.prepare(head, model.as_deref_mut(), be, rl);
        self.cbuf.consume(head.head_len);
        let mut framer = Framer::new(head.body);
        let req_bytes = Cell::new(0u64);
        let answered = self
            .attempts(be, head, &prep, &mut framer, &req_bytes, prefer, rl)
            .await;
        let Prepared {
            out,
            persist,
            host,
            client_sni,
            unique_id,
            ..
        } = prep;
        let a = match answered {
            Ok(Reached::H2(lease, slot)) => {
                let server = slot.server();
                let client_addrs = (server.conf.send_proxy != 0)
                    .then(|| self.client.local_addr().ok().map(|d| (self.peer, d)))
                    .flatten();
                let proxy_v2 = (server.conf.send_proxy == 2)
                    .then(|| proxy_v2_tlvs(server, &self.client, unique_id.as_deref()));
                let names = Names {
                    client_sni,
                    host,
                    client_addrs,
                    proxy_v2,
                };
                let resp = super::h2::h1_up::RespSide {
                    model: model.as_deref_mut(),
                    persist,
                };
                let r = self
                    .exchange_h2_server(head, &out, lease, slot, names, resp, rl)
                    .await;
                pool::give_out(out);
                return r;
            }
            Ok(Reached::H1(a)) => {
                pool::give_out(out);
                a
            }
            Err(e) => {
                pool::give_out(out);
                let (who, phase) = e.termination();
                rl.end(who, phase);
                if let Some(status) = e.status() {
                    self.send_error(status, rl).await;
                }
                return None;
            }
        };
        // Request bytes: the head as received plus the body forwarded.
        let bin = head.head_len as u64 + req_bytes.get();
        rl.bytes_in = bin;
        let server = a.slot.server();
        for c in [&ctx.front.counters, &be.counters, &server.metrics.counters] {
            c.add(C::Bin, bin);
        }
        be.counters.inc(C::ReqTot);
        server.metrics.counters.inc(C::ReqTot);
        let request_done = framer.is_done();
        self.respond(
            head,
            a.conn,
            a.slot,
            a.resp,
            a.sbuf,
            request_done,
            persist,
            model,
            rl,
        )
        .await
    }

    /// Prepare: the head as the server gets it (rules' edits, connection
    /// header, `option forwardfor`, persistence cookie), the balancing key,
    /// and the names a TLS server connection may need.
    fn prepare(
        &self,
        head: &RequestHead,
        model: Option<&mut crate::local::Model>,
        be: &Backend,
        rl: &mut ReqLog,
    ) -> Prepared {
        let fe = &self.ctx.front;
        let buf = self.cbuf.filled();
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
            // No header for a UNIX socket client (0.0.0.0, see
            // `fairlead_net::unix`), as HAProxy adds none.
            let excepted = ff.except.is_some_and(|n| n.contains(ip))
                || fairlead_net::unix::is_unix_peer(&std::net::SocketAddr::new(ip, 0));
            let present = ff.if_none
                && match model.as_deref() {
                    Some(m) => m.head.view(buf).has(ff.header.as_bytes()),
                    None => fairlead_http::has_header(buf, head.head_len, &ff.header),
                };
            (!excepted && !present).then_some((ff.header.as_str(), ip))
        });
        let stick = model
            .as_deref()
            .and_then(|m| crate::process::stick_server(be, &m.st.fx));
        let persist_mode = model.as_deref().and_then(|m| m.st.fx.persist);
        let unique_id = be
            .proxy_v2_unique_id
            .then(|| {
                model
                    .as_deref()
                    .and_then(|m| m.st.fx.unique_id.get().cloned())
            })
            .flatten();
        let mut out = pool::take_out();
        match model {
            Some(m) => {
                m.head
                    .write_request_h1(buf, server_conn, forwarded_for, &mut out);
                m.keep_request(buf, head, crate::local::sections(&self.ctx, rl.backend));
            }
            None => fairlead_http::write_request_head(
                buf,
                head,
                &RequestRewrite {
                    conn: server_conn,
                    forwarded_for,
                },
                &mut out,
            ),
        }
        let cookie = be.options.cookie.as_ref();
        let persist = match persist_mode {
            Some(PersistMode::Ignore) => Persist::ignored(),
            _ => cookie
                .map(|c| persist::lookup(c, be, buf, head.head_len))
                .unwrap_or_default(),
        };
        if let Some(c) = cookie {
            persist::edit_request(c, persist, &mut out);
        }
        if fe.log.is_some() {
            rl.keep_line(&buf[head.method.0..head.head_len]);
        }
        // A request whose body was not started, with an idempotent method,
        // can be sent again on a new connection.
        let no_body = matches!(head.body, BodyKind::None | BodyKind::Length(0));
        let replayable = no_body && fairlead_http::method_is_idempotent(buf, head);
        let host = be
            .tls_host_sni
            .then(|| {
                fairlead_http::cookie::header_value(buf, head.head_len, "host")
                    .map(|h| String::from_utf8_lossy(host_without_port(h)).into_owned())
            })
            .flatten();
        let client_sni = if be.tls_sni_varies {
            self.client.tls_info_ref().and_then(|i| i.sni.clone())
        } else {
            None
        };
        Prepared {
            out,
            persist,
            stick,
            key_data: KeyData::new(be.lb_needs(), buf, head, ip),
            no_body,
            replayable,
            host,
            client_sni,
            unique_id,
            force_persist: persist_mode == Some(PersistMode::Force),
        }
    }

    /// Connect and forward until a response head arrives, retrying as the
    /// backend's policy says. Counts the failure it returns.
    #[allow(clippy::too_many_arguments)]
    async fn attempts(
        &mut self,
        be: &Arc<Backend>,
        head: &RequestHead,
        prep: &Prepared,
        framer: &mut Framer,
        req_bytes: &Cell<u64>,
        prefer: Option<ServerId>,
        rl: &mut ReqLog,
    ) -> Result<Reached, ProxyError> {
        let mut tries = Tries::default();
        loop {
            let key = prep.key_data.key();
            let target = Target {
                prefer: prefer.or(prep.persist.server).or(prep.stick),
                avoid: tries.avoid,
                names: prep.names(),
                unique_id: prep.unique_id.as_deref(),
                force: prep.force_persist,
            };
            let (found, slot, reused) = self
                .connect(be, &key, target, &mut tries.attempts, rl)
                .await?;
            rl.connect_done = Some(Instant::now());
            rl.set_server(slot.server());
            let conn = match found {
                Found::H2(lease) => {
                    rl.server_conn
                        .record(self.ctx.front.log.as_deref(), lease.conn());
                    if reused {
                        slot.server().metrics.counters.inc(C::ConnReused);
                    }
                    return Ok(Reached::H2(lease, slot));
                }
                Found::H1(a) => a,
            };
            rl.server_conn
                .record(self.ctx.front.log.as_deref(), &conn.stream);
            let server = slot.server().clone();
            if reused {
                server.metrics.counters.inc(C::ConnReused);
            }
            let mut sbuf = IoBuf::new();
            let result = self
                .forward_request(&conn, prep, framer, &mut sbuf, head, req_bytes, be)
                .await;
            let replay = Replay {
                no_body: prep.no_body,
                replayable: prep.replayable,
            };
            if tries.again(be, &server, &result, reused, replay, rl) {
                continue;
            }
            return match result {
                Ok(resp) => {
                    rl.response_done = Some(Instant::now());
                    Ok(Reached::H1(Answered {
                        conn,
                        slot,
                        resp,
                        sbuf,
                    }))
                }
                Err(e) => {
                    count_failure(&self.ctx.front.counters, be, &server, &e);
                    Err(e)
                }
            };
        }
    }

    /// Connect: get a server slot (balancing, persistence, queue), then a
    /// connection to that server: the session's own, an idle one from this
    /// thread's pool, or a new one. Returns the connection, its slot, and
    /// whether the connection was reused.
    async fn connect(
        &mut self,
        be: &Arc<Backend>,
        key: &RequestKey<'_>,
        target: Target<'_>,
        attempts: &mut u32,
        rl: &mut ReqLog,
    ) -> Result<(Found, ServerSlot, bool), ProxyError> {
        let slot = be
            .assign_with(key, target.prefer, target.avoid, target.force)
            .await?;
        rl.queue_done = Some(Instant::now());
        let server = slot.server();
        rl.set_server(server);
        let mut mark = None;
        if mux::may_speak_h2(server) {
            let connect = be.options.timeouts.connect;
            match mux::take_or_wait(server, self.eff.reuse, self.first, connect).await {
                Ok(m) => return Ok((Found::H2(Lease::Pooled(m)), slot, true)),
                Err(m) => mark = m,
            }
        }
        if let Some(mut a) = self.attached.take() {
            if a.srv == server.conf.id && a.stream.idle_alive() && server.admin.conn_fits(&a.stream)
            {
                a.reused = true;
                return Ok((Found::H1(*a), slot, true));
            }
            park(*a, self.eff);
        }
        if !server.conf.proto_h2 {
            if let Some(stream) = pooled(server, self.eff, self.first, target.names) {
                let srv = server.conf.id;
                let a = Attached {
                    srv,
                    stream,
                    reused: true,
                };
                return Ok((Found::H1(a), slot, true));
            }
        }
        let mut names = target.names;
        let tlvs;
        if server.conf.send_proxy != 0 {
            names.client_addrs = self.client.local_addr().ok().map(|d| (self.peer, d));
            if server.conf.send_proxy == 2 {
                tlvs = proxy_v2_tlvs(server, &self.client, target.unique_id);
                names.proxy_v2 = Some(&tlvs);
            }
        }
        rl.server_conn.target(self.ctx.front.log.as_deref(), server);
        let connected = connect_server(be, slot, key, attempts, names).await;
        rl.retries = *attempts;
        let c = connected?;
        if mux::speaks_h2(c.slot.server(), &c.stream) {
            return Ok((Found::H2(Lease::Fresh(c.stream, mark)), c.slot, false));
        }
        let a = Attached {
            srv: c.slot.id(),
            stream: c.stream,
            reused: false,
        };
        Ok((Found::H1(a), c.slot, false))
    }

    /// Forward: send the head, stream the body and read the response head
    /// concurrently, relaying interim 1xx responses.
    #[allow(clippy::too_many_arguments)]
    async fn forward_request(
        &mut self,
        conn: &Attached,
        prep: &Prepared,
        framer: &mut Framer,
        sbuf: &mut IoBuf,
        head: &RequestHead,
        req_bytes: &Cell<u64>,
        be: &Backend,
    ) -> Result<ResponseHead, ProxyError> {
        let bt = be.options.timeouts;
        let ct = self.ctx.front.timeouts.client;
        let max_head = self.ctx.front.max_head;
        let server = &conn.stream;
        let at_headers = |cause| ProxyError::new(cause, Phase::Headers, prep.replayable);
        if server.write_all(&prep.out, bt.server).await.is_err() {
            return Err(at_headers(Cause::EmptyResponse));
        }
        let client = &self.client;
        let cbuf = &mut self.cbuf;
        let body_fut = async {
            if framer.is_done() {
                return Ok(());
            }
            let no_delay = self.ctx.front.http_no_delay || be.options.http_no_delay;
            let mut sp = BodySplice::new(request_splice(&self.ctx, be), client, server);
            let timeouts = (ct, bt.server);
            let flags = (no_delay, false);
            body::forward(framer, (client, cbuf), server, timeouts, flags, &mut sp)
                .await
                .map(|m| req_bytes.set(req_bytes.get() + m.read))
        };
        let is_head = head.is_head;
        let lenient = be.options.accept_invalid_http_response;
        let client_11 = head.minor_version == 1;
        let resp_fut = async {
            let mut got_any = false;
            loop {
                let parsed = if lenient {
                    fairlead_http::parse_response_relaxed(sbuf.filled_mut(), is_head, max_head)
                } else {
                    parse_response(sbuf.filled(), is_head, max_head)
                };
                match parsed {
                    Ok(Some(r)) if (100..200).contains(&r.status) && r.status != 101 => {
                        // Interim response: relay to HTTP/1.1 clients.
                        if client_11 {
                            let _ = client.write_all(&sbuf.filled()[..r.head_len], ct).await;
                        }
                        sbuf.consume(r.head_len);
                        continue;
                    }
                    Ok(Some(r)) => return Ok(r),
                    Ok(None) if sbuf.is_full() => return Err(at_headers(Cause::BadResponse)),
                    Ok(None) => {}
                    Err(_) => return Err(at_headers(Cause::BadResponse)),
                }
                let r = with_timeout(bt.server, "server timeout", async {
                    sbuf.read_from(server, usize::MAX).await
                })
                .await;
                let closed = if got_any {
                    Cause::TruncatedResponse
                } else {
                    Cause::EmptyResponse
                };
                match r {
                    Ok(0) => return Err(at_headers(closed)),
                    Ok(_) => got_any = true,
                    Err(e) if e.kind() == ErrorKind::TimedOut => {
                        return Err(at_headers(Cause::ResponseTimeout))
                    }
                    Err(_) => return Err(at_headers(closed)),
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
                    if let Err(Some(e)) = r.map_err(request_body_error) {
                        return Err(e);
                    }
                }
                r = &mut resp_fut, if resp.is_none() => resp = Some(r?),
            }
        }
        resp.ok_or(at_headers(Cause::EmptyResponse))
    }
}

/// Where the connect phase may send the request.
#[derive(Clone, Copy)]
struct Target<'a> {
    /// A server to use if it can take it (`use-server`, persistence).
    prefer: Option<ServerId>,
    /// A server to avoid (redispatch after a failure on it).
    avoid: Option<ServerId>,
    names: TlsNames<'a>,
    /// The stream's unique id, for a PROXY v2 header that carries it.
    unique_id: Option<&'a [u8]>,
    /// `force-persist`: `prefer` is used even when down.
    force: bool,
}

/// Whether a failed request may be sent again: at once on a fresh
/// connection when its pooled one was stale (`no_body`), or as a retry
/// (`replayable`: no body and an idempotent method).
#[derive(Clone, Copy)]
pub(crate) struct Replay {
    pub no_body: bool,
    pub replayable: bool,
}

/// The attempt loop's state across tries, for HTTP/1 and HTTP/2 clients.
#[derive(Default)]
pub(crate) struct Tries {
    /// Immediate replays after a stale pooled connection (at most 3).
    stale: u32,
    /// Retries spent (the backend's `retries` budget).
    pub attempts: u32,
    /// A server to avoid after a redispatch.
    pub avoid: Option<ServerId>,
}

impl Tries {
    /// Judges one try on `server`: feeds its passive check, replays at once
    /// when a pooled connection turned out closed, else asks the backend's
    /// retry policy (noting the retry in the log record). `true`: try again.
    pub(crate) fn again(
        &mut self,
        be: &Backend,
        server: &Server,
        result: &Result<ResponseHead, ProxyError>,
        reused: bool,
        replay: Replay,
        rl: &mut ReqLog,
    ) -> bool {
        let trigger = match result {
            Ok(resp) => {
                server.observe(true, !is_server_error(resp.status));
                Trigger::Status {
                    status: resp.status,
                    replayable: replay.replayable,
                }
            }
            // A pooled connection closed under us: replay at once.
            Err(e) if e.cause == Cause::EmptyResponse && reused && self.stale < 3 => {
                if replay.no_body {
                    self.stale += 1;
                    return true;
                }
                Trigger::Error(e)
            }
            Err(e) => Trigger::Error(e),
        };
        if let Trigger::Error(e) = trigger {
            if e.side() == Side::Server || e.cause == Cause::BadResponse {
                server.observe(true, false);
            }
        }
        match be.retry(server, trigger, &mut self.attempts) {
            Verdict::Retry { redispatch } => {
                if redispatch {
                    self.avoid = Some(server.conf.id);
                    rl.redispatched = true;
                }
                rl.retries = self.attempts;
                true
            }
            Verdict::Stop => false,
        }
    }
}

/// An idle connection to `server` from this thread's pool, when the
/// `http-reuse` mode allows one for this request.
pub(crate) fn pooled(
    server: &Server,
    eff: Effective,
    first: bool,
    names: TlsNames<'_>,
) -> Option<fairlead_net::Conn> {
    // HAProxy: `safe` never sends a session's first request over an idle
    // connection; `aggressive` only over one reused at least once (which
    // proved that the server keeps connections open); `always` over any.
    let (may_pool, safe_only) = match eff.reuse {
        HttpReuse::Never => (false, false),
        HttpReuse::Safe => (!first, false),
        HttpReuse::Aggressive => (true, first),
        HttpReuse::Always => (true, false),
    };
    if !may_pool {
        return None;
    }
    // A connection that started with another client's PROXY header does
    // not fit either.
    if server.conf.send_proxy != 0 {
        return None;
    }
    // A connection made for another SNI does not fit.
    let name = match &server.conf.tls {
        Some(t) if server.conf.tls_sni_varies => {
            Some(t.server_name(names.client_sni, names.host, server.admin.addr.load().ip()))
        }
        _ => None,
    };
    let sni = match &name {
        Some(fairlead_tls::ServerName::DnsName(d)) => Some(d.as_ref()),
        _ => None,
    };
    idle::take_fitting(server.conf.id, sni, safe_only, |c| {
        server.admin.conn_fits(c)
    })
}

/// How a request body splices: as the frontend's and backend's `option
/// splice-*` ask, unless the rules read the body (`option
/// http-buffer-request`).
fn request_splice(ctx: &crate::HttpCtx, be: &Backend) -> SpliceMode {
    if crate::local::buffers_body(ctx) {
        return SpliceMode::Off;
    }
    TunnelSplice::from_options(ctx.front.splice.or(be.options.splice)).request
}

/// The request body's copy failed: the client's fault, or its framing's.
/// `None`: the server stopped reading, and its response says why.
fn request_body_error(e: BodyError) -> Option<ProxyError> {
    let (cause, phase) = match e {
        BodyError::Framing(e) => (Cause::BadRequest(e.status), Phase::Request),
        BodyError::Source(e) if e.kind() == ErrorKind::TimedOut => {
            (Cause::ClientTimeout, Phase::Data)
        }
        BodyError::Source(_) => (Cause::ClientAbort, Phase::Data),
        BodyError::Dest(_) => return None,
    };
    Some(ProxyError::new(cause, phase, false))
}

/// Counts a request's final failure once: response errors (`eresp`) on the
/// backend and server, client aborts (`cli_abrt`) on all three.
pub(crate) fn count_failure(
    fe: &fairlead_backend::counters::Counters,
    be: &Backend,
    server: &Server,
    e: &ProxyError,
) {
    match e.cause {
        Cause::ClientAbort | Cause::ClientTimeout => {
            for c in [fe, &be.counters, &server.metrics.counters] {
                c.inc(C::CliAbrt);
            }
        }
        Cause::EmptyResponse
        | Cause::TruncatedResponse
        | Cause::BadResponse
        | Cause::ResponseTimeout => {
            be.counters.inc(C::Eresp);
            server.metrics.counters.inc(C::Eresp);
        }
        _ => {}
    }
}

/// A Host header value without its port (`example.com:8443`,
/// `[::1]:8443`).
pub(crate) fn host_without_port(h: &[u8]) -> &[u8] {
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

/// Responses that count as errors for `observe layer7`: 5xx except 501
/// and 505, as HAProxy.
pub(crate) fn is_server_error(status: u16) -> bool {
    (500..600).contains(&status) && status != 501 && status != 505
}
