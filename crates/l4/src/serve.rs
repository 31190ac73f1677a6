//! One TCP-mode stream, stage by stage (HAProxy's analysers in TCP mode):
//!
//! 1. the frontend's `tcp-request content` rules while client data
//!    arrives ([`crate::inspect`]);
//! 2. content switching: `use_backend` (static or `%[...]` names, a name
//!    that names no backend falls back to the default one);
//! 3. the chosen backend's `tcp-request content` rules (not again for a
//!    `listen` section, whose rules are its frontend's);
//! 4. balancing and connect (retries, redispatch); the inspected bytes go
//!    to the server first, byte for byte, and their buffer goes back to
//!    the pool;
//! 5. the backend's `tcp-response content` rules on the server's first
//!    bytes, while the client's already flow, then the tunnel;
//! 6. the log line, with the chosen backend (`%b`).
//!
//! `reject` closes the client connection with a reset and counts a denied
//! request (`dreq`); `tcp-response content reject` counts a denied
//! response (`dresp`) and resets the server connection.

use crate::front::Frontend;
use crate::inspect::{classify, inspect, Input, Outcome, Step};
use crate::log::{ServerAddrs, StreamEnd, StreamLog};
use crate::routes::Routes;
use crate::txn::{ConnFacts, SessState, TcpTxn};
use crate::uid::UidSource;
use crate::{tunnel_with, ResPrelude, TunnelEnd, TunnelSplice, TunnelTimeouts};
use fairlead_backend::counters::C;
use fairlead_backend::{connect_server, Backend, RequestKey, TlsNames};
use fairlead_log::{Phase, TermState, Who};
use fairlead_net::Conn;
use fairlead_rules::exec::{run, run_from, Stream, Verdict};
use fairlead_rules::proxy::ProxyRules;
use fairlead_rules::resolve::Resolved;
use fairlead_rules::sticking::Sticking;
use std::io::Result;
use std::sync::Arc;
use tokio::time::Instant;

/// The stream's state shared by its stages.
struct Ctx<'a> {
    routes: &'a Routes,
    front: &'a Frontend,
    /// When the connection was accepted (the log's date).
    accepted: std::time::SystemTime,
    facts: ConnFacts<'a>,
    start: Instant,
}

impl Ctx<'_> {
    fn ms(&self) -> Option<u64> {
        Some(self.start.elapsed().as_millis() as u64)
    }

    /// What the stream's unique id is made from.
    fn uid(&self) -> UidSource<'_> {
        UidSource {
            front: self.front,
            accepted: self.accepted,
        }
    }

    /// The stream as its rules see it (no buffered data yet).
    fn txn<'s>(&'s self, sess: &'s mut SessState) -> TcpTxn<'s> {
        let mut tx = TcpTxn::new(&self.facts, sess);
        tx.uid = Some(self.uid());
        tx
    }

    /// Sends the stream's log line (built here, so that nothing of it is
    /// held while the stream runs).
    fn emit(&self, sess: &SessState, end: &StreamEnd<'_>) {
        let tx = crate::txn::LogTxn {
            conn: &self.facts,
            sess,
            backend: end.backend,
            server: end.server.map(|s| s.conf.name.as_str()),
            uid: Some(self.uid()),
        };
        // The unique id, made now if nothing used it yet (as HAProxy does
        // before a log line), only when the stream is logged.
        let logs = self.front.log.as_ref().is_some_and(|l| !l.connect_only);
        let uid = logs
            .then(|| fairlead_rules::txn::Txn::unique_id(&tx))
            .flatten()
            .map(String::from_utf8_lossy);
        // `%[...]` of the log format, evaluated now (when the frontend logs).
        let exprs = &self.routes.fe_rules.log_samples;
        let values: Vec<Option<Vec<u8>>> = if exprs.is_empty() || self.front.log.is_none() {
            Vec::new()
        } else {
            exprs
                .iter()
                .map(|e| {
                    e.eval_str(&tx)
                        .and_then(|s| s.as_bytes().map(<[u8]>::to_vec))
                })
                .collect()
        };
        let samples: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        // The stream's bytes on its stick counters (HAProxy counts them
        // as they flow; the stream ends here).
        let levels = sess.levels();
        if levels.stream.is_some() || levels.session.is_some() {
            let now = fairlead_rules::stick::now_ms();
            levels.on_bytes_in(end.bytes.0, now);
            levels.on_bytes_out(end.bytes.1, now);
        }
        let log = StreamLog {
            front: self.front,
            accepted: self.accepted,
            client: sess.effective_src(self.facts.src),
            local: self.facts.dst.filter(|_| {
                self.front
                    .log
                    .as_ref()
                    .is_some_and(|l| l.format.uses_frontend_addr())
            }),
            start: self.start,
            tls: self.facts.tls,
            silent: sess.log_level == Some(None),
            samples: &samples,
            unique_id: uid.as_deref(),
        };
        log.emit(end);
    }
}

/// Serves one TCP-mode client: content rules and switching, then a server
/// of the chosen backend (with retries and redispatch) and the tunnel.
/// When no server can be reached the client is closed at once, as HAProxy
/// does in TCP mode. `sess` carries what the connection and session rules
/// set (variables, `set-src`).
pub async fn serve_tcp(
    client: Conn,
    peer: std::net::SocketAddr,
    front: &Frontend,
    accepted: std::time::SystemTime,
    mut sess: SessState,
) -> Result<()> {
    let routes = &*front.routes;
    // TCP_NODELAY comes from the listener (see fairlead_net::tune_listener).
    let start = Instant::now();
    // Copied once (the tunnel borrows the TLS layer mutably meanwhile);
    // the server's SNI may come from it too.
    let tls = client.tls_info();
    let log_dst = front
        .log
        .as_ref()
        .is_some_and(|l| l.format.uses_frontend_addr());
    let uid_dst = routes
        .fe_rules
        .unique_id
        .as_ref()
        .is_some_and(|u| u.format.uses_frontend_addr());
    let dst = if routes.has_rules() || log_dst || uid_dst {
        client.local_addr().ok()
    } else {
        None
    };
    let cx = Ctx {
        routes,
        front,
        accepted,
        facts: ConnFacts {
            src: peer,
            dst,
            tls: tls.as_ref(),
            proxy: client.proxy_info(),
            frontend: &front.name,
            hostname: &routes.hostname,
        },
        start,
    };
    let mut input = Input::new(&client, routes.inspect_max);
    let fe = &routes.fe_rules;
    sess.start_stream();
    if !fe.tcp_content.is_empty() {
        // Before switching, the frontend is the stream's backend.
        let o = content(&cx, &mut input, fe, &mut sess, &front.name).await;
        if o != Outcome::Accept {
            refuse(&cx, &input, o, &front.name, None, &sess);
            sess.end_trackers(fairlead_rules::stick::now_ms());
            return Ok(());
        }
    }
    let be_idx = {
        let mut tx = cx.txn(&mut sess);
        tx.payload = Some(input.buf.filled());
        tx.backend = Some(&front.name);
        tx.routes = Some(routes);
        routes.switch(&tx)
    };
    let be = routes.backend(be_idx);
    if let Some(br) = routes
        .be_rules(be_idx)
        .filter(|r| !r.tcp_content.is_empty())
    {
        let o = content(&cx, &mut input, br, &mut sess, &be.name).await;
        if o != Outcome::Accept {
            refuse(&cx, &input, o, &be.name, Some(be), &sess);
            sess.end_trackers(fairlead_rules::stick::now_ms());
            return Ok(());
        }
    }
    forward(&cx, &client, input, be, be_idx, &mut sess).await;
    sess.end_trackers(fairlead_rules::stick::now_ms());
    Ok(())
}

/// Runs one section's `tcp-request content` rules with its inspect-delay.
/// A `do-resolve` stops them: the stream waits for the answer, stores it
/// in the variable and the rules go on after the action (HAProxy 2.6),
/// within what is left of the inspect-delay. Without an inspect-delay,
/// or once it has passed, the action cannot wait and leaves its variable
/// unset, as in HAProxy.
async fn content(
    cx: &Ctx<'_>,
    input: &mut Input<'_>,
    rules: &ProxyRules,
    sess: &mut SessState,
    backend: &str,
) -> Outcome {
    let started = Instant::now();
    let mut from = 0;
    loop {
        let mut paused = None;
        let mut eval = |buf: &[u8], done: bool| -> Step {
            let mut tx = cx.txn(sess);
            tx.payload = Some(buf);
            tx.done = done;
            tx.backend = Some(backend);
            tx.routes = Some(cx.routes);
            match run_from(&rules.tcp_content, &rules.acls, &mut tx, false, from) {
                (Verdict::Resolve(r), at) => {
                    paused = Some((r, at));
                    Step::Done(Outcome::Accept)
                }
                (v, _) => classify(v),
            }
        };
        let delay = rules
            .inspect_delay
            .map(|d| d.saturating_sub(started.elapsed()));
        let o = inspect(input, delay, cx.front.timeouts.client, &mut eval).await;
        let Some((r, at)) = paused else {
            return o;
        };
        let waits = rules.inspect_delay.is_some_and(|d| started.elapsed() < d);
        if waits {
            if let Some(ip) = fairlead_rules::resolve::resolve(&r).await {
                cx.txn(sess).set_var(&r.var, Resolved::sample(ip));
            }
        }
        from = at.saturating_add(1);
    }
}

/// Ends a stream the request rules refused (or whose client failed or
/// timed out while they waited): counters, a reset, the log line.
fn refuse(
    cx: &Ctx<'_>,
    input: &Input<'_>,
    o: Outcome,
    backend: &str,
    be: Option<&Backend>,
    sess: &SessState,
) {
    let fc = &cx.front.counters;
    fc.add(C::Bin, input.read);
    let term = match o {
        Outcome::Timeout => {
            fc.inc(C::Ereq);
            TermState::new(Who::ClientTimeout, Phase::Request)
        }
        Outcome::Error => {
            fc.inc(C::CliAbrt);
            TermState::new(Who::Client, Phase::Request)
        }
        _ => {
            fc.inc(C::Dreq);
            // HAProxy kills the client connection: no FIN, a reset.
            input.conn.abort();
            TermState::new(Who::Proxy, Phase::Request)
        }
    };
    cx.emit(
        sess,
        &StreamEnd {
            backend,
            be,
            server: None,
            term,
            t: [None, None, None],
            bytes: (input.read, 0),
            retries: 0,
            server_conn: ServerAddrs::default(),
        },
    );
}

/// Balancing, connect, the inspected bytes, `tcp-response content` and
/// the tunnel; then counters and the log line.
async fn forward(
    cx: &Ctx<'_>,
    client: &Conn,
    mut input: Input<'_>,
    be: &Arc<Backend>,
    be_idx: Option<usize>,
    sess: &mut SessState,
) {
    // TCP mode hashes the source address or the RDP cookie.
    let inspected = input.buf.filled();
    let key = RequestKey {
        src: be
            .lb_needs()
            .src
            .then_some(sess.effective_src(cx.facts.src).ip()),
        rdp_cookie: be
            .lb_needs()
            .rdp_cookie
            .as_deref()
            .and_then(|n| rdp_cookie(inspected, n)),
        ..Default::default()
    };
    let mut t = [cx.ms(), None, None];
    let mut retries = 0;
    let mut addrs = ServerAddrs::default();
    let end = |server, term, t, bytes, retries, server_conn| StreamEnd {
        backend: &be.name,
        be: Some(be),
        server,
        term,
        t,
        bytes,
        retries,
        server_conn,
    };
    // A failure's termination state comes from the one error type: `SC`
    // refused, `sC` connect timeout, `sQ` queue timeout.
    let failed = |e: &fairlead_backend::ProxyError| {
        let (who, phase) = e.termination();
        TermState::new(who, phase)
    };
    cx.front.counters.add(C::Bin, input.read);
    let bytes = (input.read, 0);
    let stick_rules = cx.routes.res_rules(be_idx);
    let (mut stick, force) = stick_request(cx, &input, stick_rules, sess, be);
    // `persist rdp-cookie` comes first (HAProxy's analyser order); only
    // `option persist` lets it designate a down server.
    let (prefer, force) = match rdp_persist(be, inspected) {
        Some(id) => (Some(id), false),
        None => (stick_server(be, &stick), force),
    };
    let slot = match be.assign_with(&key, prefer, None, force).await {
        Ok(s) => s,
        Err(e) => {
            cx.emit(sess, &end(None, failed(&e), t, bytes, 0, addrs));
            return;
        }
    };
    t[1] = cx.ms();
    let server = slot.server().clone();
    let tlvs = (server.conf.send_proxy == 2).then(|| {
        // HAProxy sends the UNIQUE_ID TLV, empty without a format.
        let uid = server.conf.proxy_v2.unique_id.then(|| {
            let mut tx = cx.txn(sess);
            tx.payload = Some(&[]);
            tx.backend = Some(&be.name);
            tx.server = Some(&server.conf.name);
            tx.routes = Some(cx.routes);
            fairlead_rules::txn::Txn::unique_id(&tx)
                .map(<[u8]>::to_vec)
                .unwrap_or_default()
        });
        fairlead_backend::proxy_v2_tlvs(&server, client, uid.as_deref())
    });
    let names = TlsNames {
        client_sni: cx.facts.tls.and_then(|t| t.sni.as_deref()),
        host: None,
        client_addrs: if server.conf.send_proxy != 0 {
            client
                .local_addr()
                .ok()
                .map(|d| (sess.effective_src(cx.facts.src), d))
        } else {
            None
        },
        proxy_v2: tlvs.as_ref(),
        has_data: input.read > 0,
    };
    let log = cx.front.log.as_deref();
    addrs.target(log, &server);
    let conn = match connect_server(be, slot, &key, &mut retries, names).await {
        Ok(c) => c,
        Err(e) => {
            let term = failed(&e);
            cx.emit(sess, &end(Some(&server), term, t, bytes, retries, addrs));
            return;
        }
    };
    addrs.record(log, &conn.stream);
    t[2] = cx.ms();
    stick_commit(
        cx,
        stick_rules,
        sess,
        &mut stick,
        conn.slot.server(),
        &be.name,
    );
    let bt = &be.options.timeouts;
    let tt = TunnelTimeouts::new(
        cx.front.timeouts.client,
        bt.server,
        bt.tunnel,
        cx.front.timeouts.client_fin,
        bt.server_fin,
    );
    let srv = conn.slot.server();
    for c in [&be.counters, &srv.metrics.counters] {
        c.add(C::Bin, input.read);
    }
    if input.flush_to(&conn.stream, tt.server).await.is_err() {
        let term = TermState::new(Who::Server, Phase::Data);
        cx.emit(sess, &end(Some(&server), term, t, bytes, retries, addrs));
        return;
    }
    let res_rules = cx
        .routes
        .res_rules(be_idx)
        .filter(|r| !r.tcp_response.is_empty());
    let sp = TunnelSplice::from_options(cx.front.splice.or(be.options.splice));
    let stats = match res_rules {
        None => crate::tunnel_spliced(client, &conn.stream, &tt, sp).await,
        Some(r) => {
            // Boxed: only streams with response rules pay for its state.
            let pre = response(
                cx,
                client,
                &conn.stream,
                r,
                sess,
                &be.name,
                &srv.conf.name,
                &tt,
            );
            Box::pin(tunnel_with(client, &conn.stream, &tt, sp, Some(pre))).await
        }
    };
    let term = tunnel_done(cx, client, &conn.stream, be, srv, &stats);
    let bytes = (input.read + stats.client_to_server, stats.server_to_client);
    cx.emit(sess, &end(Some(&server), term, t, bytes, retries, addrs));
    drop(conn);
}

/// The backend's stick request rules (`stick match|on|store-request`),
/// on what the content rules saw.
fn stick_request(
    cx: &Ctx<'_>,
    input: &Input<'_>,
    rules: Option<&Arc<ProxyRules>>,
    sess: &mut SessState,
    be: &Backend,
) -> (Sticking, bool) {
    let mut st = Sticking::default();
    let mut force = false;
    if let Some(r) = rules.filter(|r| !r.stick_req.is_empty() || !r.persist.is_empty()) {
        let mut tx = cx.txn(sess);
        tx.payload = Some(input.buf.filled());
        tx.done = true;
        tx.backend = Some(&be.name);
        tx.routes = Some(cx.routes);
        // `force-persist` lets a `stick match` use a down server.
        force = r.persist_mode(&tx) == Some(fairlead_rules::proxy::PersistMode::Force);
        let now = fairlead_rules::stick::now_ms();
        st.run_request(&r.stick_req, &r.acls, &tx, false, now);
    }
    (st, force)
}

/// The value of the RDP cookie `name` in the inspected bytes; an empty
/// value counts as none.
fn rdp_cookie<'a>(buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
    match fairlead_rules::rdp::cookie(buf, name.as_bytes()) {
        fairlead_rules::rdp::RdpCookie::Found(v) if !v.is_empty() => Some(v),
        _ => None,
    }
}

/// The server `persist rdp-cookie` designates, when it is usable.
fn rdp_persist(be: &Backend, buf: &[u8]) -> Option<fairlead_backend::ServerId> {
    let name = be.options.rdp_persist.as_deref()?;
    let addr = fairlead_rules::rdp::persist_addr(rdp_cookie(buf, name)?)?;
    be.server_by_rdp_addr(addr)
}

/// The server a `stick match` rule designated (by its `id`).
fn stick_server(be: &Backend, st: &Sticking) -> Option<fairlead_backend::ServerId> {
    let puid = u32::try_from(st.matched?).ok()?;
    let set = be.servers();
    let id = set
        .as_slice()
        .iter()
        .find(|s| s.conf.puid == puid)
        .map(|s| s.conf.id);
    id
}

/// Once connected: the `stick store-response` rules (on what is known
/// without response data), then every pending store takes the server.
fn stick_commit(
    cx: &Ctx<'_>,
    rules: Option<&Arc<ProxyRules>>,
    sess: &mut SessState,
    st: &mut Sticking,
    server: &fairlead_backend::Server,
    backend: &str,
) {
    if let Some(r) = rules.filter(|r| !r.stick_res.is_empty()) {
        let mut tx = cx.txn(sess);
        tx.backend = Some(backend);
        tx.routes = Some(cx.routes);
        st.run_response(&r.stick_res, &r.acls, &tx);
    }
    if st.is_empty() {
        return;
    }
    if server.conf.non_stick {
        st.discard();
        return;
    }
    let addr = server.admin.addr.load().to_string();
    let now = fairlead_rules::stick::now_ms();
    st.commit(server.conf.puid, &server.conf.name, &addr, now);
}

/// Counters once the tunnel ended, the closes `tcp-response` rules ask
/// for, and the termination state to log.
fn tunnel_done(
    cx: &Ctx<'_>,
    client: &Conn,
    server: &Conn,
    be: &Backend,
    srv: &fairlead_backend::Server,
    stats: &crate::TunnelStats,
) -> TermState {
    for c in [&*cx.front.counters, &be.counters, &srv.metrics.counters] {
        c.add(C::Bin, stats.client_to_server);
        c.add(C::Bout, stats.server_to_client);
        match stats.end {
            TunnelEnd::ClientError => c.inc(C::CliAbrt),
            TunnelEnd::ServerError => c.inc(C::SrvAbrt),
            TunnelEnd::Denied => c.inc(C::Dresp),
            _ => {}
        }
    }
    if matches!(stats.end, TunnelEnd::Denied | TunnelEnd::RuleClosed) {
        // HAProxy kills the server connection and closes the client's.
        server.abort();
        client.shutdown_write();
    }
    match stats.end {
        TunnelEnd::Closed | TunnelEnd::RuleClosed => TermState::NORMAL,
        TunnelEnd::Timeout => TermState::new(Who::ClientTimeout, Phase::Data),
        TunnelEnd::ClientError => TermState::new(Who::Client, Phase::Data),
        TunnelEnd::ServerError => TermState::new(Who::Server, Phase::Data),
        TunnelEnd::Denied => TermState::new(Who::Proxy, Phase::Data),
    }
}

/// `tcp-response content` on the server's first bytes (the
/// server→client prelude of the tunnel): accepted bytes go to the client
/// first; `close` forwards them and ends the tunnel; `reject` ends it.
#[allow(clippy::too_many_arguments)]
async fn response(
    cx: &Ctx<'_>,
    client: &Conn,
    server: &Conn,
    rules: &ProxyRules,
    sess: &mut SessState,
    backend: &str,
    srv: &str,
    t: &TunnelTimeouts,
) -> ResPrelude {
    let mut input = Input::new(server, cx.routes.inspect_max);
    let mut eval = |buf: &[u8], done: bool| -> Step {
        let mut tx = cx.txn(sess);
        tx.res_payload = Some(buf);
        tx.done = done;
        tx.backend = Some(backend);
        tx.server = Some(srv);
        tx.routes = Some(cx.routes);
        classify(run(&rules.tcp_response, &rules.acls, &mut tx, true))
    };
    let o = inspect(&mut input, rules.res_inspect_delay, t.server, &mut eval).await;
    let stop = match o {
        Outcome::Accept => None,
        Outcome::Close => Some(TunnelEnd::RuleClosed),
        Outcome::Reject | Outcome::SilentDrop => return (0, Some(TunnelEnd::Denied)),
        Outcome::Error => return (0, Some(TunnelEnd::ServerError)),
        Outcome::Timeout => return (0, Some(TunnelEnd::Timeout)),
    };
    let n = input.read;
    if input.flush_to(client, t.client).await.is_err() {
        return (0, Some(TunnelEnd::ClientError));
    }
    (n, stop)
}
