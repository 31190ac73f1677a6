//! One HTTP/2 stream forwarded to an HTTP/1 server: rules on the message
//! model, balancing, connect and retries (the backend's one policy),
//! the request body pump, the response relay, the log line.

use super::conn::{ConnCx, Signals};
use super::flow::{pump, relay_body, Link};
use super::mux;
use super::resp::{send_all, send_h1_bytes, Gone};
use super::tunnel::{Kind as TunnelKind, Tunnel};
use crate::forward::{count_failure, host_without_port, is_server_error, pooled, Replay, Tries};
use crate::logging::{self, Gauges, ReqLog};
use crate::persist::{self, Persist};
use crate::process::{self, conn_facts, Decision, Local, TxnState};
use crate::Effective;
use fairlead_backend::counters::C;
use fairlead_backend::{
    connect_server, idle, Backend, Cause, ProxyError, RequestKey, ServerSlot, TlsNames,
};
use fairlead_config::{HttpConnMode, HttpReuse};
use fairlead_h2::ErrorCode;
use fairlead_http::msg::{self, Head};
use fairlead_http::{parse_response, BodyKind, ConnHeader, ResponseHead};
use fairlead_log::{Phase, Who};
use fairlead_net::io::with_timeout;
use fairlead_net::{pool, Conn, IoBuf};
use fairlead_rules::proxy::PersistMode;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use tokio::time::Instant;

/// Runs one stream to its end, logs it and forgets it.
pub(crate) async fn run(cx: Rc<ConnCx>, id: u32, mut head: Head, end: bool, sig: Rc<Signals>) {
    let now = Instant::now();
    let mut rec = Record {
        cx: cx.clone(),
        rl: ReqLog::new(now),
        st: TxnState::default(),
        logged: false,
    };
    rec.rl.first_byte = Some(now);
    rec.rl.head_done = Some(now);
    rec.st.fx.sess_trackers = cx.sess_trk.borrow().clone();
    let completed = {
        let ex = exchange(&cx, id, &mut head, end, &sig, &mut rec.rl, &mut rec.st);
        tokio::select! {
            c = ex => c,
            _ = sig.cancel.notified() => {
                rec.rl.end(Who::Client, Phase::Data);
                cx.ctx.front.counters.inc(C::CliAbrt);
                false
            }
        }
    };
    msg::give(head);
    rec.emit();
    finish(&cx, id, completed);
}

/// A stream's log record: written when the stream ends, or when its
/// future is dropped because the connection went away (then as a client
/// abort, as HAProxy logs the streams of a closed connection).
struct Record {
    cx: Rc<ConnCx>,
    rl: ReqLog,
    st: TxnState,
    logged: bool,
}

impl Record {
    fn emit(&mut self) {
        self.logged = true;
        // The stream's stick counters: its status, then its slots are
        // released (also for a stream dropped with its connection).
        self.st.fx.end_trackers(&self.rl);
        crate::local::keep_captures(&mut self.st.fx, &mut self.rl);
        record_latency(&self.cx, &self.rl);
        log(&self.cx, &self.rl);
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if !self.logged {
            self.rl.end(Who::Client, Phase::Data);
            self.cx.ctx.front.counters.inc(C::CliAbrt);
            self.emit();
        }
    }
}

/// Forgets the stream: releases the body bytes it did not forward, and
/// resets it if it is still open (NO_ERROR once the response was sent:
/// the client may stop sending its body).
fn finish(cx: &ConnCx, id: u32, completed: bool) {
    let mut sh = cx.sh.borrow_mut();
    let sh = &mut *sh;
    sh.out_ready();
    if let Some(pos) = sh.streams.iter().position(|s| s.id == id) {
        let s = sh.streams.swap_remove(pos);
        if !s.body.is_empty() {
            sh.codec.release(id, s.body.len(), &mut sh.out);
        }
        if s.body.capacity() > 0 {
            pool::give_out(s.body);
        }
        if let Some(t) = s.trailers {
            msg::give(t);
        }
    }
    let code = if completed {
        ErrorCode::NO_ERROR
    } else {
        ErrorCode::INTERNAL_ERROR
    };
    sh.codec.reset(id, code, &mut sh.out);
    if sh.streams.is_empty() {
        cx.idle_since.set(Instant::now());
    }
    if sh.out_settle() {
        cx.wr.notify_one();
    }
    cx.ev.notify_one();
}

/// The request line logged: `METHOD target HTTP/2.0`.
fn request_line(head: &Head) -> Vec<u8> {
    let v = head.view(&[]);
    let mut line = pool::take_out();
    line.extend_from_slice(v.method());
    line.push(b' ');
    line.extend_from_slice(v.target());
    line.extend_from_slice(b" HTTP/2.0");
    line
}

/// Rules, local answers, then forwarding. True: a response was sent.
async fn exchange(
    cx: &Rc<ConnCx>,
    id: u32,
    head: &mut Head,
    end: bool,
    sig: &Signals,
    rl: &mut ReqLog,
    st: &mut TxnState,
) -> bool {
    let ctx = cx.ctx.clone();
    ctx.front.counters.inc(C::ReqTot);
    if ctx.front.log.is_some() {
        rl.line = Some(request_line(head));
    }
    // Read before the rules: a rule adding `Upgrade` makes no tunnel.
    let tunnel = Tunnel::of(head);
    // `option http-buffer-request`: rules see the body (`req.body`).
    let mut body = if !end && crate::local::buffers_body(&ctx) {
        Some(super::buffered::wait_body(cx, id, sig, content_length(head)).await)
    } else {
        None
    };
    let sent = decide_and_forward(cx, id, head, end, sig, rl, st, tunnel, &mut body).await;
    if let Some(b) = body {
        pool::give_out(b);
    }
    sent
}

/// The declared `content-length` of a request head.
fn content_length(head: &Head) -> Option<u64> {
    let v = head.view(&[]).get_last(b"content-length")?;
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// The request rules, local answers and services, then forwarding.
#[allow(clippy::too_many_arguments)]
async fn decide_and_forward(
    cx: &Rc<ConnCx>,
    id: u32,
    head: &mut Head,
    end: bool,
    sig: &Signals,
    rl: &mut ReqLog,
    st: &mut TxnState,
    tunnel: TunnelKind,
    body: &mut Option<Vec<u8>>,
) -> bool {
    let ctx = cx.ctx.clone();
    let mut prefer = None;
    if !ctx.front.routes.active() {
        // No rules: the request counts on the connection's slots here.
        st.fx.count_request();
    }
    if ctx.front.routes.active() {
        let d = loop {
            let d = {
                let tls = cx.client.tls_info_ref();
                let facts = conn_facts(&ctx, cx.peer, &cx.client, tls.as_deref());
                process::process_request(&ctx, &facts, head, &[], body.as_deref(), st, false)
            };
            // `do-resolve`: the stream waits for the answer.
            let Decision::Resolve(r) = d else { break d };
            crate::resolve::resolve_into(&r, &mut st.vars).await;
        };
        match d {
            Decision::Local(l) => {
                rl.backend = st.fx.backend_stage.flatten();
                let l = match l {
                    Local::Send {
                        bytes,
                        status,
                        close,
                        tarpit,
                        denied,
                    } => Local::Send {
                        bytes: super::rules::after_local(cx, bytes, head, st, rl),
                        status,
                        close,
                        tarpit,
                        denied,
                    },
                    other => other,
                };
                return send_local(cx, id, sig, l, rl).await;
            }
            Decision::Forward { be, server } => {
                rl.backend = be;
                prefer = server;
            }
            // Resolved in the loop above.
            Decision::Resolve(_) => {}
        }
    }
    if let Some(sent) = local_service(cx, id, sig, head, end, st, rl, body).await {
        return sent;
    }
    // The copy is not needed any more: the queue holds the bytes.
    if let Some(b) = body.take() {
        pool::give_out(b);
    }
    forward(cx, id, head, end, sig, prefer, rl, st, tunnel).await
}

/// A tunnel request toward an HTTP/2 server: not supported (501).
async fn no_h2_tunnel(cx: &ConnCx, id: u32, sig: &Signals, rl: &mut ReqLog) -> bool {
    let page = process::error_page(&cx.ctx, rl.backend, 501);
    let l = Local::Send {
        bytes: page,
        status: 501,
        close: false,
        tarpit: false,
        denied: false,
    };
    send_local(cx, id, sig, l, rl).await
}

/// A response the proxy makes itself (deny, return, redirect, auth...).
async fn send_local(cx: &ConnCx, id: u32, sig: &Signals, l: Local, rl: &mut ReqLog) -> bool {
    let fc = &cx.ctx.front.counters;
    let Local::Send {
        bytes,
        status,
        tarpit,
        denied,
        ..
    } = l
    else {
        fc.inc(C::Dreq);
        rl.end(Who::Proxy, Phase::Request);
        if matches!(l, Local::SilentDrop) {
            // As HAProxy: the whole connection goes, silently.
            cx.client.abort();
        } else {
            cx.with(|c, o| c.reset(id, ErrorCode::REFUSED_STREAM, o));
        }
        return false;
    };
    if tarpit {
        let t = &cx.ctx.front.timeouts;
        if let Some(d) = t.tarpit.or(t.connect) {
            tokio::time::sleep(d).await;
        }
        rl.end(Who::Proxy, Phase::Tarpit);
    } else if denied {
        rl.end(Who::Proxy, Phase::Request);
    } else {
        rl.end(Who::Local, Phase::None);
    }
    if denied {
        fc.inc(C::Dreq);
    }
    rl.status = Some(status);
    fc.status(status);
    match send_h1_bytes(cx, id, sig, &bytes).await {
        Ok(n) => {
            rl.bytes_out = n as u64;
            true
        }
        Err(Gone) => false,
    }
}

/// The frontend's own services (stats page, Prometheus exporter).
#[allow(clippy::too_many_arguments)]
async fn local_service(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    head: &mut Head,
    end: bool,
    st: &mut TxnState,
    rl: &mut ReqLog,
    body: &mut Option<Vec<u8>>,
) -> Option<bool> {
    let svc = cx.ctx.service.clone()?;
    if body.is_none() && !end && head.view(&[]).method() == b"POST" {
        // A form posted to a service (the stats page's admin actions).
        *body = Some(super::buffered::wait_body(cx, id, sig, content_length(head)).await);
    }
    let stats = {
        let tls = cx.client.tls_info_ref();
        let facts = conn_facts(&cx.ctx, cx.peer, &cx.client, tls.as_deref());
        crate::local::stats_decision(&cx.ctx, &facts, head, &[], st)
    };
    let v = head.view(&[]);
    let req = crate::ServiceRequest {
        method: v.method(),
        uri: v.target(),
        authorization: v.get_last(b"authorization"),
        client: cx.peer.ip(),
        stats,
        body: body.as_deref().unwrap_or_default(),
    };
    let r = svc.handle(&req)?;
    let mut h = msg::take();
    h.start_response(r.status, None, 20);
    let len = r.body.len().to_string();
    h.append_field(b"content-type", r.content_type.as_bytes());
    h.append_field(b"content-length", len.as_bytes());
    if !r
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
    {
        h.append_field(b"cache-control", b"no-cache");
    }
    for (n, val) in &r.headers {
        h.append_field(n.to_ascii_lowercase().as_bytes(), val.as_bytes());
    }
    rl.status = Some(r.status);
    rl.bytes_out = r.body.len() as u64;
    cx.ctx.front.counters.status(r.status);
    let sent = cx.with(|c, o| c.send_response(id, &h, &[], r.body.is_empty(), o));
    msg::give(h);
    if sent.is_err() {
        return Some(false);
    }
    Some(send_all(cx, id, sig, &r.body, true).await.is_ok())
}

/// What the request needs on its way to a server.
struct Prepared<'a> {
    out: Vec<u8>,
    key: RequestKey<'a>,
    names: TlsNames<'a>,
    replayable: bool,
    no_body: bool,
    is_head: bool,
    tunnel: Tunnel,
    /// `force-persist` matched: `prefer` is used even when down.
    force_persist: bool,
    /// The stream's unique id, for `proxy-v2-options unique-id`.
    unique_id: Option<Vec<u8>>,
}

/// Forward to a server and relay its response.
#[allow(clippy::too_many_arguments)]
async fn forward(
    cx: &Rc<ConnCx>,
    id: u32,
    head: &mut Head,
    end: bool,
    sig: &Signals,
    prefer: Option<fairlead_backend::ServerId>,
    rl: &mut ReqLog,
    st: &mut TxnState,
    tunnel: TunnelKind,
) -> bool {
    let ctx = cx.ctx.clone();
    let be = process::backend(&ctx, rl.backend).clone();
    let eff = Effective {
        conn_mode: ctx.front.conn_mode.max(be.options.http_conn_mode),
        reuse: be.options.http_reuse,
    };
    let ip = st.fx.src.unwrap_or(cx.peer.ip());
    let bt = be.options.timeouts;
    let tunnel = Tunnel::prepare(tunnel, head, bt.tunnel.or(bt.server));
    let cookie = be.options.cookie.as_ref();
    let mode = st.fx.persist;
    let persist = match mode {
        Some(PersistMode::Ignore) => Persist::ignored(),
        _ => cookie
            .map(|c| persist::lookup_head(c, &be, head))
            .unwrap_or_default(),
    };
    let (mut out, chunked) = serialise(cx, head, end, eff, ip, tunnel.kind);
    if let Some(c) = cookie {
        persist::edit_request(c, persist, &mut out);
    }
    let prefer = prefer
        .or(persist.server)
        .or_else(|| process::stick_server(&be, &st.fx));
    let mut prep = prepared(head, out, &be, ip, end, tunnel);
    prep.force_persist = mode == Some(PersistMode::Force);
    prep.unique_id = be
        .proxy_v2_unique_id
        .then(|| st.fx.unique_id.get().cloned())
        .flatten();
    let link = Link::default();
    link.done.set(end);
    let pump_timeout = if prep.tunnel.kind == TunnelKind::No {
        bt.server
    } else {
        prep.tunnel.timeout
    };
    let tunneling = prep.tunnel.kind != TunnelKind::No;
    let pump = pump(cx, id, sig, &link, chunked, pump_timeout, tunneling);
    tokio::pin!(pump);
    let mut pumping = !end;
    let answered = {
        let main = attempts(cx, &be, &prep, prefer, &link, rl, eff);
        tokio::pin!(main);
        loop {
            tokio::select! {
                r = &mut main => break r,
                _ = &mut pump, if pumping => pumping = false,
            }
        }
    };
    let names = mux::Names::of(prep.names);
    let Prepared {
        out,
        tunnel,
        unique_id,
        ..
    } = prep;
    pool::give_out(out);
    let (conn, slot, resp, sbuf, reused) = match answered {
        Ok(Answered::H1(conn, slot, resp, sbuf, reused)) => (conn, slot, resp, sbuf, reused),
        Ok(Answered::H2(_, _)) if tunnel.kind != TunnelKind::No => {
            return no_h2_tunnel(cx, id, sig, rl).await;
        }
        Ok(Answered::H2(lease, slot)) => {
            let mut names = names;
            if slot.server().conf.send_proxy != 0 {
                names.client_addrs = cx.client.local_addr().ok().map(|d| (cx.peer, d));
                if slot.server().conf.send_proxy == 2 {
                    let tlvs = fairlead_backend::proxy_v2_tlvs(
                        slot.server(),
                        &cx.client,
                        unique_id.as_deref(),
                    );
                    names.proxy_v2 = Some(tlvs);
                }
            }
            // HTTP/2 client streams are never a session's first request
            // for `http-reuse safe` (see `mux`).
            let route =
                mux::Route::new(slot.server().clone(), &be, eff.reuse, false, names).tuned(&ctx);
            let r = super::upstream::run(cx, id, sig, &route, lease, head, end, rl, st).await;
            return upstream_end(cx, id, sig, &be, slot, r, rl).await;
        }
        Err(e) => return fail(cx, id, sig, &be, e, rl).await,
    };
    let server = slot.server().clone();
    for c in [&ctx.front.counters, &be.counters, &server.metrics.counters] {
        c.add(C::Bin, link.sent.get());
    }
    be.counters.inc(C::ReqTot);
    server.metrics.counters.inc(C::ReqTot);
    let keep = {
        let relay = relay(
            cx, id, sig, &be, &conn, slot, resp, sbuf, rl, st, head, &tunnel, persist,
        );
        tokio::pin!(relay);
        loop {
            tokio::select! {
                r = &mut relay => break r,
                _ = &mut pump, if pumping => pumping = false,
            }
        }
    };
    rl.bytes_in = link.sent.get();
    let Some(server_keep) = keep else {
        return rl.status.is_some() && rl.term == fairlead_log::TermState::NORMAL;
    };
    let body_done = !pumping && link.done.get();
    *link.server.borrow_mut() = None;
    if server_keep && body_done && eff.conn_mode == HttpConnMode::KeepAlive {
        if let Ok(c) = Rc::try_unwrap(conn) {
            if eff.reuse != HttpReuse::Never {
                idle::put(server.conf.id, c, reused);
            }
        }
    }
    true
}

/// Counts and logs how an exchange with an HTTP/2 server ended.
async fn upstream_end(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    be: &Arc<Backend>,
    slot: ServerSlot,
    r: super::upstream::Ended,
    rl: &mut ReqLog,
) -> bool {
    use super::upstream::Ended;
    let srv = slot.server().clone();
    drop(slot);
    let counters = [&cx.ctx.front.counters, &be.counters, &srv.metrics.counters];
    match r {
        Ended::Done { out, sent } => {
            srv.observe(true, !rl.status.is_some_and(is_server_error));
            be.counters.inc(C::ReqTot);
            srv.metrics.counters.inc(C::ReqTot);
            rl.bytes_in = sent;
            rl.bytes_out = out;
            for c in counters {
                c.add(C::Bin, sent);
                c.add(C::Bout, out);
                if let Some(st) = rl.status {
                    c.status(st);
                }
            }
            true
        }
        Ended::Early(e) => {
            srv.observe(true, false);
            count_failure(&cx.ctx.front.counters, be, &srv, &e);
            fail(cx, id, sig, be, e, rl).await
        }
        Ended::Cut(who) => {
            rl.end(who, Phase::Data);
            let c = if who == Who::Client {
                C::CliAbrt
            } else {
                C::SrvAbrt
            };
            for x in counters {
                x.inc(c);
            }
            false
        }
        Ended::Answered => true,
    }
}

/// The HTTP/1 head sent to the server (framing, `Connection`, `option
/// forwardfor`); whether the body goes chunked.
fn serialise(
    cx: &ConnCx,
    head: &mut Head,
    end: bool,
    eff: Effective,
    ip: std::net::IpAddr,
    tunnel: TunnelKind,
) -> (Vec<u8>, bool) {
    // A tunnel's bytes go as they are, without framing.
    let chunked = tunnel == TunnelKind::No && !end && !head.view(&[]).has(b"content-length");
    if chunked {
        // The codec's own call: rules may not add framing fields.
        head.append_field(b"transfer-encoding", b"chunked");
    }
    let mut out = pool::take_out();
    let ff = cx.ctx.front.forwardfor.as_ref().and_then(|ff| {
        // None for a UNIX socket client, as on HTTP/1 (`forward.rs`).
        let excepted = ff.except.is_some_and(|n| n.contains(ip))
            || fairlead_net::unix::is_unix_peer(&std::net::SocketAddr::new(ip, 0));
        let present = ff.if_none && head.view(&[]).has(ff.header.as_bytes());
        (!excepted && !present).then_some((ff.header.as_str(), ip))
    });
    let conn_hdr = if tunnel == TunnelKind::Upgrade {
        ConnHeader::Upgrade
    } else if eff.conn_mode == HttpConnMode::KeepAlive {
        ConnHeader::None
    } else {
        ConnHeader::Close
    };
    head.write_request_h1(&[], conn_hdr, ff, &mut out);
    (out, chunked)
}

/// The balancing key and TLS names of a request, and whether it may be
/// replayed.
fn prepared<'h>(
    head: &'h Head,
    out: Vec<u8>,
    be: &'h Backend,
    ip: std::net::IpAddr,
    end: bool,
    tunnel: Tunnel,
) -> Prepared<'h> {
    let v = head.view(&[]);
    let needs = be.lb_needs();
    let host = be
        .tls_host_sni
        .then(|| std::str::from_utf8(host_without_port(v.authority())).ok())
        .flatten();
    Prepared {
        out,
        key: RequestKey {
            src: needs.src.then_some(ip),
            uri: needs.uri.then_some(v.target()),
            header: needs
                .header
                .as_ref()
                .and_then(|h| v.get_last(h.as_bytes()))
                .filter(|x| !x.is_empty()),
            url_param: needs
                .url_param
                .as_ref()
                .and_then(|p| crate::key::url_param(v.target(), p)),
            rdp_cookie: None,
        },
        names: TlsNames {
            client_sni: None,
            host,
            client_addrs: None,
            proxy_v2: None,
            has_data: true,
        },
        replayable: end && idempotent(v.method()),
        no_body: end,
        is_head: v.method() == b"HEAD",
        tunnel,
        force_persist: false,
        unique_id: None,
    }
}

fn idempotent(method: &[u8]) -> bool {
    matches!(
        method,
        b"GET" | b"HEAD" | b"PUT" | b"DELETE" | b"OPTIONS" | b"TRACE"
    )
}

/// An error the proxy answers (503, 502, 504...), counted and logged.
async fn fail(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    be: &Backend,
    e: ProxyError,
    rl: &mut ReqLog,
) -> bool {
    let (who, phase) = e.termination();
    rl.end(who, phase);
    let Some(status) = e.status() else {
        return false;
    };
    let _ = be;
    rl.status = Some(status);
    let fc = &cx.ctx.front.counters;
    fc.status(status);
    if status < 500 {
        fc.inc(C::Ereq);
    }
    let page = process::error_page(&cx.ctx, rl.backend, status);
    let page = super::rules::after_error(cx, page, rl);
    match send_h1_bytes(cx, id, sig, &page).await {
        Ok(n) => {
            rl.bytes_out = n as u64;
            true
        }
        Err(Gone) => false,
    }
}

/// What the connect phase found: an HTTP/1 server connection, its slot,
/// and the response head with the buffer it is in; or an HTTP/2
/// connection to open the stream on (nothing sent yet).
enum Answered {
    /// The last field: the connection came from the idle pool (this
    /// request is not its first).
    H1(Rc<Conn>, ServerSlot, ResponseHead, IoBuf, bool),
    H2(mux::Lease, ServerSlot),
}

/// Connect and send the head until a response head arrives, retrying as
/// the backend's policy says.
async fn attempts(
    cx: &ConnCx,
    be: &Arc<Backend>,
    prep: &Prepared<'_>,
    prefer: Option<fairlead_backend::ServerId>,
    link: &Link,
    rl: &mut ReqLog,
    eff: Effective,
) -> Result<Answered, ProxyError> {
    let mut tries = Tries::default();
    loop {
        let slot = be
            .assign_with(&prep.key, prefer, tries.avoid, prep.force_persist)
            .await?;
        rl.queue_done = Some(Instant::now());
        let chosen = slot.server().clone();
        rl.set_server(&chosen);
        let mut mark = None;
        if mux::may_speak_h2(&chosen) {
            let connect = be.options.timeouts.connect;
            match mux::take_or_wait(&chosen, eff.reuse, false, connect).await {
                Ok(m) => {
                    rl.connect_done = Some(Instant::now());
                    rl.server_conn.record(cx.ctx.front.log.as_deref(), m.conn());
                    chosen.metrics.counters.inc(C::ConnReused);
                    return Ok(Answered::H2(mux::Lease::Pooled(m), slot));
                }
                Err(m) => mark = m,
            }
        }
        let idle = if chosen.conf.proto_h2 {
            None
        } else {
            pooled(&chosen, eff, false, prep.names)
        };
        let (conn, slot, reused) = match idle {
            Some(c) => (c, slot, true),
            None => {
                let mut names = prep.names;
                let tlvs;
                if chosen.conf.send_proxy != 0 {
                    // `send-proxy`: the server learns the client's addresses.
                    names.client_addrs = cx.client.local_addr().ok().map(|d| (cx.peer, d));
                    if chosen.conf.send_proxy == 2 {
                        tlvs = fairlead_backend::proxy_v2_tlvs(
                            &chosen,
                            &cx.client,
                            prep.unique_id.as_deref(),
                        );
                        names.proxy_v2 = Some(&tlvs);
                    }
                }
                rl.server_conn.target(cx.ctx.front.log.as_deref(), &chosen);
                let c = connect_server(be, slot, &prep.key, &mut tries.attempts, names).await;
                rl.retries = tries.attempts;
                let c = c?;
                (c.stream, c.slot, false)
            }
        };
        rl.connect_done = Some(Instant::now());
        rl.set_server(slot.server());
        rl.server_conn.record(cx.ctx.front.log.as_deref(), &conn);
        let server = slot.server().clone();
        if reused {
            server.metrics.counters.inc(C::ConnReused);
        }
        if mux::speaks_h2(slot.server(), &conn) {
            // HTTP/2 server: the whole exchange is the upstream loop's.
            return Ok(Answered::H2(mux::Lease::Fresh(conn, mark), slot));
        }
        // HTTP/1 after all (ALPN): nobody should wait for this one.
        drop(mark);
        let conn = Rc::new(conn);
        let mut sbuf = IoBuf::new();
        let result = send_and_read(cx, &conn, prep, link, &mut sbuf, be).await;
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
                Ok(Answered::H1(conn, slot, resp, sbuf, reused))
            }
            Err(e) => {
                count_failure(&cx.ctx.front.counters, be, &server, &e);
                Err(e)
            }
        };
    }
}

/// Sends the head, hands the connection to the body pump, and reads the
/// response head (interim 1xx responses are dropped).
async fn send_and_read(
    cx: &ConnCx,
    conn: &Rc<Conn>,
    prep: &Prepared<'_>,
    link: &Link,
    sbuf: &mut IoBuf,
    be: &Backend,
) -> Result<ResponseHead, ProxyError> {
    let bt = be.options.timeouts;
    let at_headers = |cause| ProxyError::new(cause, Phase::Headers, prep.replayable);
    if conn.write_all(&prep.out, bt.server).await.is_err() {
        return Err(at_headers(Cause::EmptyResponse));
    }
    if !prep.no_body {
        *link.server.borrow_mut() = Some(conn.clone());
        link.ready.notify_one();
    }
    let max_head = cx.ctx.front.max_head;
    let mut got_any = false;
    loop {
        let parsed = if be.options.accept_invalid_http_response {
            fairlead_http::parse_response_relaxed(sbuf.filled_mut(), prep.is_head, max_head)
        } else {
            parse_response(sbuf.filled(), prep.is_head, max_head)
        };
        match parsed {
            Ok(Some(r)) if r.status == 101 && prep.tunnel.opens(101) => return Ok(r),
            Ok(Some(r)) if r.status == 101 => return Err(at_headers(Cause::BadResponse)),
            Ok(Some(r)) if (100..200).contains(&r.status) => {
                sbuf.consume(r.head_len);
                continue;
            }
            Ok(Some(r)) => return Ok(r),
            Ok(None) if sbuf.is_full() => return Err(at_headers(Cause::BadResponse)),
            Ok(None) => {}
            Err(_) => return Err(at_headers(Cause::BadResponse)),
        }
        let r = with_timeout(bt.server, "server timeout", async {
            sbuf.read_from(conn, usize::MAX).await
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
}

/// Sends the response head (after the response rules) and its body as
/// DATA frames, then the trailers. `Some(keep)`: the response was
/// relayed whole, and whether the server connection may be reused.
#[allow(clippy::too_many_arguments)]
async fn relay(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    be: &Arc<Backend>,
    conn: &Conn,
    slot: ServerSlot,
    resp: ResponseHead,
    mut sbuf: IoBuf,
    rl: &mut ReqLog,
    st: &mut TxnState,
    req: &mut Head,
    tunnel: &Tunnel,
    persist: Persist,
) -> Option<bool> {
    rl.status = Some(resp.status);
    let ctx = cx.ctx.clone();
    let srv = slot.server().clone();
    let counters = [&ctx.front.counters, &be.counters, &srv.metrics.counters];
    let mut res = msg::take();
    res.fill_response(sbuf.filled(), &resp);
    let rules = super::rules::response_rules(cx, &mut res, sbuf.filled(), req, st, rl);
    process::stick_commit(&mut st.fx, &srv);
    if let Err(l) = rules {
        msg::give(res);
        ctx.front.counters.inc(C::Dresp);
        rl.end(Who::Proxy, Phase::Headers);
        if let Local::Send { bytes, status, .. } = l {
            rl.status = Some(status);
            let bytes = super::rules::after_response_reply(cx, bytes, req, st, rl);
            let _ = send_h1_bytes(cx, id, sig, &bytes).await;
        }
        return None;
    }
    let opens = tunnel.opens(resp.status);
    if opens && !tunnel.answer(&mut res, sbuf.filled()) {
        msg::give(res);
        rl.end(Who::Server, Phase::Headers);
        rl.status = Some(502);
        let page = process::error_page(&ctx, rl.backend, 502);
        let _ = send_h1_bytes(cx, id, sig, &page).await;
        return None;
    }
    if let Some(c) = &be.options.cookie {
        persist::edit_response_head(c, persist, &srv, &mut res, sbuf.filled());
    }
    let (kind, timeout) = if opens {
        (BodyKind::CloseDelimited, tunnel.timeout)
    } else {
        (resp.body, be.options.timeouts.server)
    };
    let no_body = matches!(kind, BodyKind::None | BodyKind::Length(0));
    let sent = cx.with(|c, o| c.send_response(id, &res, sbuf.filled(), no_body, o));
    msg::give(res);
    for c in counters {
        c.status(resp.status);
    }
    if sent.is_err() {
        return None;
    }
    sbuf.consume(resp.head_len);
    let body = relay_body(cx, id, sig, conn, &mut sbuf, kind, timeout).await;
    drop(slot);
    let n = body.as_ref().map_or(0, |n| *n);
    rl.bytes_out = n;
    for c in counters {
        c.add(C::Bout, n);
    }
    if let Err(who) = body {
        rl.end(who, Phase::Data);
        let c = if who == Who::Client {
            C::CliAbrt
        } else {
            C::SrvAbrt
        };
        for x in counters {
            x.inc(c);
        }
        return None;
    }
    Some(!opens && resp.keep_alive && sbuf.is_empty())
}

/// Feeds the backend's and server's latency histograms.
fn record_latency(cx: &ConnCx, rl: &ReqLog) {
    rl.record_latency(process::backend(&cx.ctx, rl.backend));
}

/// Writes the stream's log line, if the frontend logs.
fn log(cx: &ConnCx, rl: &ReqLog) {
    let ctx = &cx.ctx;
    let Some(setup) = ctx.front.log.as_deref() else {
        return;
    };
    let be = process::backend(ctx, rl.backend);
    let srv = rl.server.as_deref();
    let gauges = Gauges::sample(&ctx.front, be, rl);
    let client = match rl.captured.as_ref().and_then(|c| c.src) {
        Some(ip) => SocketAddr::new(ip, cx.peer.port()),
        None => cx.peer,
    };
    logging::emit(
        setup,
        rl,
        client,
        Some(&cx.client),
        &ctx.front.name,
        &be.name,
        srv.map(|s| s.conf.name.as_str()),
        &gauges,
        ctx.front.counters.get(C::ReqTot),
        cx.client.tls_info_ref().as_deref(),
    );
}
