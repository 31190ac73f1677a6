//! One HTTP/2 stream forwarded to an HTTP/1 server: rules on the message
//! model, balancing, connect and retries (the backend's one policy),
//! the request body pump, the response relay, the log line.

use super::conn::{ConnCx, Signals};
use super::mux;
use super::resp::{self, send_all, send_h1_bytes, Dechunk, Gone};
use crate::forward::{count_failure, host_without_port, is_server_error, pooled, Replay, Tries};
use crate::logging::{self, Gauges, ReqLog};
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
use std::cell::{Cell, RefCell};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::Notify;
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
        self.st.fx.end_trackers(self.rl.status);
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
    let mut prefer = None;
    if !ctx.front.routes.active() {
        // No rules: the request counts on the connection's slots here.
        st.fx.count_request();
    }
    if ctx.front.routes.active() {
        let d = {
            let tls = cx.client.tls_info_ref();
            let facts = conn_facts(&ctx, cx.peer, &cx.client, tls.as_deref());
            process::process_request(&ctx, &facts, head, &[], None, st, false)
        };
        match d {
            Decision::Local(l) => {
                rl.backend = st.fx.backend_stage.flatten();
                return send_local(cx, id, sig, l, rl).await;
            }
            Decision::Forward { be, server } => {
                rl.backend = be;
                prefer = server;
            }
        }
    }
    if let Some(sent) = local_service(cx, id, sig, head, st, rl).await {
        return sent;
    }
    if head.view(&[]).method() == b"CONNECT" {
        // Tunnels over HTTP/2 (CONNECT, RFC 8441) are not supported yet.
        let page = process::error_page(&ctx, rl.backend, 501);
        return send_local(
            cx,
            id,
            sig,
            Local::Send {
                bytes: page,
                status: 501,
                close: false,
                tarpit: false,
                denied: false,
            },
            rl,
        )
        .await;
    }
    forward(cx, id, head, end, sig, prefer, rl, st).await
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
async fn local_service(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    head: &mut Head,
    st: &mut TxnState,
    rl: &mut ReqLog,
) -> Option<bool> {
    let svc = cx.ctx.service.clone()?;
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
        // Request bodies of local services are not read on HTTP/2 yet
        // (the stats page's admin form answers NONE).
        body: &[],
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

/// The server side of a stream: where the body pump writes, once the
/// request head went out on it.
#[derive(Default)]
struct Link {
    server: RefCell<Option<Rc<Conn>>>,
    ready: Notify,
    /// The whole request body was written.
    done: Cell<bool>,
    /// Body bytes written.
    sent: Cell<u64>,
}

/// What the request needs on its way to a server.
struct Prepared<'a> {
    out: Vec<u8>,
    key: RequestKey<'a>,
    names: TlsNames<'a>,
    replayable: bool,
    no_body: bool,
    is_head: bool,
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
) -> bool {
    let ctx = cx.ctx.clone();
    let be = process::backend(&ctx, rl.backend).clone();
    let eff = Effective {
        conn_mode: ctx.front.conn_mode.max(be.options.http_conn_mode),
        reuse: be.options.http_reuse,
    };
    let ip = st.fx.src.unwrap_or(cx.peer.ip());
    let (out, chunked) = serialise(cx, head, end, eff, ip);
    let prep = prepared(head, out, &be, ip, end);
    let link = Link::default();
    link.done.set(end);
    let pump = pump(cx, id, sig, &link, chunked, be.options.timeouts.server);
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
    let Prepared { out, .. } = prep;
    pool::give_out(out);
    let (conn, slot, resp, sbuf) = match answered {
        Ok(Answered::H1(conn, slot, resp, sbuf)) => (conn, slot, resp, sbuf),
        Ok(Answered::H2(lease, slot)) => {
            let mut names = names;
            if slot.server().conf.send_proxy != 0 {
                names.client_addrs = cx.client.local_addr().ok().map(|d| (cx.peer, d));
            }
            // HTTP/2 client streams are never a session's first request
            // for `http-reuse safe` (see `mux`).
            let route = mux::Route::new(slot.server().clone(), &be, eff.reuse, false, names);
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
        let relay = relay(cx, id, sig, &be, &conn, slot, resp, sbuf, rl, st, head);
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
                idle::put(server.conf.id, c);
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
) -> (Vec<u8>, bool) {
    let chunked = !end && !head.view(&[]).has(b"content-length");
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
    let conn_hdr = if eff.conn_mode == HttpConnMode::KeepAlive {
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
        },
        names: TlsNames {
            client_sni: None,
            host,
            client_addrs: None,
        },
        replayable: end && idempotent(v.method()),
        no_body: end,
        is_head: v.method() == b"HEAD",
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
    match send_h1_bytes(cx, id, sig, &page).await {
        Ok(n) => {
            rl.bytes_out = n as u64;
            true
        }
        Err(Gone) => false,
    }
}

/// Writes the request body to the server as it arrives, releasing each
/// byte to the client's window once written.
async fn pump(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    link: &Link,
    chunked: bool,
    timeout: Option<std::time::Duration>,
) {
    let server = loop {
        let s = link.server.borrow().clone();
        match s {
            Some(s) => break s,
            None => link.ready.notified().await,
        }
    };
    let mut spare = Vec::new();
    let mut framed = pool::take_out();
    loop {
        let (end, trailers) = {
            let mut sh = cx.sh.borrow_mut();
            let Some(s) = sh.stream(id) else { break };
            if s.reset {
                break;
            }
            std::mem::swap(&mut s.body, &mut spare);
            (s.end, if s.end { s.trailers.take() } else { None })
        };
        let n = spare.len();
        if n > 0 {
            framed.clear();
            if chunked {
                use std::io::Write as _;
                let _ = write!(framed, "{n:x}\r\n");
                framed.extend_from_slice(&spare);
                framed.extend_from_slice(b"\r\n");
            } else {
                framed.extend_from_slice(&spare);
            }
            spare.clear();
            if server.write_all(&framed, timeout).await.is_err() {
                break;
            }
            link.sent.set(link.sent.get() + n as u64);
            cx.with(|c, o| c.release(id, n, o));
        }
        if end {
            let mut ok = true;
            if chunked {
                framed.clear();
                resp::write_last_chunk(trailers.as_ref(), &mut framed);
                ok = server.write_all(&framed, timeout).await.is_ok();
            }
            if let Some(t) = trailers {
                msg::give(t);
            }
            link.done.set(ok);
            break;
        }
        if n == 0 {
            sig.body.notified().await;
        }
    }
    pool::give_out(framed);
    if spare.capacity() > 0 {
        pool::give_out(spare);
    }
}

/// What the connect phase found: an HTTP/1 server connection, its slot,
/// and the response head with the buffer it is in; or an HTTP/2
/// connection to open the stream on (nothing sent yet).
enum Answered {
    H1(Rc<Conn>, ServerSlot, ResponseHead, IoBuf),
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
        let slot = be.assign(&prep.key, prefer, tries.avoid).await?;
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
                if chosen.conf.send_proxy != 0 {
                    // `send-proxy`: the server learns the client's addresses.
                    names.client_addrs = cx.client.local_addr().ok().map(|d| (cx.peer, d));
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
                Ok(Answered::H1(conn, slot, resp, sbuf))
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
) -> Option<bool> {
    rl.status = Some(resp.status);
    let ctx = cx.ctx.clone();
    let srv = slot.server().clone();
    let counters = [&ctx.front.counters, &be.counters, &srv.metrics.counters];
    let mut res = msg::take();
    res.fill_response(sbuf.filled(), &resp);
    if let Err(l) = super::rules::response_rules(cx, &mut res, sbuf.filled(), req, st, rl) {
        msg::give(res);
        ctx.front.counters.inc(C::Dresp);
        rl.end(Who::Proxy, Phase::Headers);
        if let Local::Send { bytes, status, .. } = l {
            rl.status = Some(status);
            let _ = send_h1_bytes(cx, id, sig, &bytes).await;
        }
        return None;
    }
    let no_body = matches!(resp.body, BodyKind::None | BodyKind::Length(0));
    let sent = cx.with(|c, o| c.send_response(id, &res, sbuf.filled(), no_body, o));
    msg::give(res);
    for c in counters {
        c.status(resp.status);
    }
    if sent.is_err() {
        return None;
    }
    sbuf.consume(resp.head_len);
    let body = relay_body(cx, id, sig, conn, &mut sbuf, resp.body, be).await;
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
    Some(resp.keep_alive && sbuf.is_empty())
}

/// The response body, de-framed into DATA frames within the client's
/// window. Returns the body bytes sent, or who cut the transfer.
async fn relay_body(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    conn: &Conn,
    sbuf: &mut IoBuf,
    kind: BodyKind,
    be: &Backend,
) -> Result<u64, Who> {
    let timeout = be.options.timeouts.server;
    let mut left = match kind {
        BodyKind::None | BodyKind::Length(0) => return Ok(0),
        BodyKind::Length(n) => Some(n),
        _ => None,
    };
    let mut dechunk = (kind == BodyKind::Chunked).then(Dechunk::new);
    let mut data = resp::scratch();
    let mut total = 0u64;
    let r = loop {
        if sbuf.is_empty() {
            let r = with_timeout(timeout, "server timeout", async {
                sbuf.read_from(conn, usize::MAX).await
            })
            .await;
            match r {
                Ok(0) if kind == BodyKind::CloseDelimited => {
                    break send_all(cx, id, sig, &[], true)
                        .await
                        .map_err(|_| Who::Client);
                }
                Ok(0) | Err(_) => break Err(Who::Server),
                Ok(_) => {}
            }
        }
        let input = sbuf.filled();
        if let Some(d) = &mut dechunk {
            data.clear();
            let Ok((used, done)) = d.feed(input, &mut data) else {
                break Err(Who::Server);
            };
            sbuf.consume(used);
            let trailers = if done { d.trailers() } else { None };
            let end_now = done && trailers.is_none();
            if send_all(cx, id, sig, &data, end_now).await.is_err() {
                break Err(Who::Client);
            }
            total += data.len() as u64;
            if let Some(t) = trailers {
                let r = cx.with(|c, o| c.send_trailers(id, &t, &[], o));
                msg::give(t);
                if r.is_err() {
                    break Err(Who::Client);
                }
            }
            if done {
                break Ok(());
            }
            continue;
        }
        let n = match left {
            Some(l) => input.len().min(usize::try_from(l).unwrap_or(usize::MAX)),
            None => input.len(),
        };
        let end = left.is_some_and(|l| l == n as u64);
        let chunk = input.get(..n).unwrap_or_default();
        if send_all(cx, id, sig, chunk, end).await.is_err() {
            break Err(Who::Client);
        }
        sbuf.consume(n);
        total += n as u64;
        if let Some(l) = &mut left {
            *l -= n as u64;
            if *l == 0 {
                break Ok(());
            }
        }
    };
    pool::give_out(data);
    r.map(|()| total)
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
