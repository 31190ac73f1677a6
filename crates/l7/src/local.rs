//! The rule engine's side of a session: the message model kept for one
//! transaction ([`Model`]), the process phase, responses the proxy makes
//! itself (deny, return, redirect, auth, tarpit), and the response rules
//! (`http-response` backend then frontend, then `http-after-response`).

use crate::logging::ReqLog;
use crate::process::{self, backend, conn_facts, Decision, Local, TxnState};
use crate::session::{Next, Session};
use crate::txn::{HeadBuf, HttpTxn};
use fairlead_backend::counters::C;
use fairlead_http::msg::{self, Head};
use fairlead_http::{BodyKind, ConnHeader, RequestHead, ResponseHead};
use fairlead_log::{Phase, Who};
use fairlead_net::pool;
use fairlead_rules::exec::{run, Verdict};
use fairlead_rules::proxy::ProxyRules;
use std::sync::Arc;

/// One transaction's message model and rule state.
pub(crate) struct Model {
    pub head: Head,
    pub st: TxnState,
    /// A copy of the request head's bytes (the request model's text), kept
    /// once the receive buffer moves on, when response rules may read it.
    req_copy: Option<Vec<u8>>,
    pub(crate) res: Option<Head>,
    res_rules: bool,
    /// Set when the frontend's `log-format` has samples, so that a
    /// transaction ended by an error still gets them (see [`Model::finish`]).
    log_ctx: Option<(std::rc::Rc<crate::HttpCtx>, std::net::SocketAddr)>,
}

impl Model {
    /// Builds the request model from the parsed head (pooled vectors),
    /// with the connection's `sess` variables.
    pub fn take(buf: &[u8], head: &RequestHead, sess: crate::txn::SessVars) -> Model {
        let mut h = msg::take();
        h.fill_request(buf, head);
        Model {
            head: h,
            st: TxnState {
                vars: crate::txn::Vars::with_sess(sess),
                fx: Default::default(),
                resume: None,
            },
            req_copy: None,
            res: None,
            res_rules: false,
            log_ctx: None,
        }
    }

    /// Hands what rules captured to the log line, returns the pooled
    /// parts, and gives back the `sess` variables.
    pub fn finish(mut self, rl: &mut ReqLog) -> crate::txn::SessVars {
        if self.st.fx.log_samples.is_none() {
            self.late_log_samples(rl);
        }
        let fx = &mut self.st.fx;
        // The request's stick counters: its status counts as an error or
        // a failure, then the slots are released (end of the stream).
        fx.end_trackers(rl);
        keep_captures(fx, rl);
        let sess = std::mem::take(&mut self.st.vars).into_sess();
        self.give();
        sess
    }

    /// The log line's samples of a transaction that ended without a
    /// response the rules saw (an error the proxy answered, a client that
    /// left): the request, the variables and the connection's names.
    fn late_log_samples(&mut self, rl: &ReqLog) {
        let Some((ctx, peer)) = self.log_ctx.take() else {
            return;
        };
        let be = backend(&ctx, rl.backend);
        let src = match self.st.fx.src {
            Some(ip) => std::net::SocketAddr::new(ip, peer.port()),
            None => peer,
        };
        let tx = LateTxn {
            req: HeadBuf {
                head: &mut self.head,
                buf: self.req_copy.as_deref().unwrap_or_default(),
            },
            vars: &self.st.vars,
            src,
            frontend: &ctx.front.name,
            backend: &be.name,
            server: rl.server.as_ref().map(|s| s.conf.name.as_str()),
            hostname: &ctx.front.routes.hostname,
            unique_id: self.st.fx.unique_id.get().map(Vec::as_slice),
        };
        let v = log_samples(&ctx.front.routes.fe_rules, &tx);
        self.st.fx.log_samples = v;
    }

    /// Returns the pooled parts.
    pub fn give(self) {
        msg::give(self.head);
        if let Some(r) = self.res {
            msg::give(r);
        }
        if let Some(c) = self.req_copy {
            pool::give_out(c);
        }
    }

    /// Called before the request head leaves the receive buffer: keeps a
    /// copy of it when the response rules of `be` or the frontend exist.
    pub fn keep_request(
        &mut self,
        buf: &[u8],
        head: &RequestHead,
        rules: [Option<&Arc<ProxyRules>>; 2],
    ) {
        self.res_rules = has_response_work(rules);
        if self.res_rules && self.req_copy.is_none() {
            let mut c = pool::take_out();
            c.extend_from_slice(&buf[..head.head_len.min(buf.len())]);
            self.req_copy = Some(c);
        }
    }

    pub fn has_response_rules(&self) -> bool {
        self.res_rules
    }

    /// Serialises the (edited) response head.
    /// Removes the response's `Transfer-Encoding` (see
    /// [`fairlead_http::msg::HeadMut::drop_transfer_encoding`]).
    pub fn drop_transfer_encoding(&mut self, buf: &[u8]) {
        if let Some(r) = &mut self.res {
            r.edit(buf).drop_transfer_encoding();
        }
    }

    pub fn write_response(&self, buf: &[u8], conn: ConnHeader, out: &mut Vec<u8>) {
        if let Some(r) = &self.res {
            r.write_response_h1(buf, conn, out);
        }
    }
}

/// Whether the frontend or its default backend buffers request bodies.
pub(crate) fn buffers_body(ctx: &crate::HttpCtx) -> bool {
    let r = &ctx.front.routes;
    r.fe_rules.buffer_request || r.default.is_some_and(|i| r.be_rules[i].buffer_request)
}

/// The rules of the chosen backend and of the frontend, each once.
pub(crate) fn sections(ctx: &crate::HttpCtx, be: Option<usize>) -> [Option<&Arc<ProxyRules>>; 2] {
    let fe = &ctx.front.routes.fe_rules;
    let br = be
        .or(ctx.front.routes.default)
        .and_then(|i| ctx.front.routes.be_rules.get(i))
        .filter(|r| !Arc::ptr_eq(r, fe));
    [br, Some(fe)]
}

impl Session {
    /// The process phase on a parsed request (see [`process`]). With
    /// `option http-buffer-request`, the body is read first (as much as
    /// the buffer holds, within `timeout http-request`) so that `req.body`
    /// sees it; a chunked body is de-chunked for the fetch, as HAProxy
    /// does, while the bytes forwarded stay as received.
    pub(crate) async fn process(&mut self, head: &RequestHead, m: &mut Model) -> Decision {
        let ctx = self.ctx.clone();
        let mut dechunked = None;
        let body_len = match head.body {
            BodyKind::Length(n) if n > 0 && buffers_body(&ctx) => {
                Some(self.buffer_body(head.head_len, n).await)
            }
            BodyKind::Chunked if buffers_body(&ctx) => {
                dechunked = Some(self.buffer_chunked(head.head_len).await);
                None
            }
            _ => None,
        };
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let close = !matches!(head.body, BodyKind::None | BodyKind::Length(0))
            || !head.keep_alive
            || self.stopping();
        let buf = self.cbuf.filled();
        if !ctx.front.routes.fe_rules.log_samples.is_empty() && m.req_copy.is_none() {
            // The log line's samples read the request once it has left
            // the receive buffer.
            let mut c = pool::take_out();
            c.extend_from_slice(&buf[..head.head_len.min(buf.len())]);
            m.req_copy = Some(c);
            m.log_ctx = Some((ctx.clone(), self.peer));
        }
        let body = match &dechunked {
            Some(d) => Some(d.as_slice()),
            None => body_len.map(|n| &buf[head.head_len..head.head_len + n]),
        };
        let d = loop {
            let d =
                process::process_request(&ctx, &facts, &mut m.head, buf, body, &mut m.st, close);
            // `do-resolve`: the request waits for the answer.
            let Decision::Resolve(r) = d else { break d };
            crate::resolve::resolve_into(&r, &mut m.st.vars).await;
        };
        if let Some(v) = dechunked {
            pool::give_out(v);
        }
        d
    }

    /// Reads until the chunked body after the head (at `head_len`) is
    /// complete, the buffer is full, the framing is wrong (the forwarding
    /// reports it) or `timeout http-request` expires. Returns the data of
    /// the chunks received, without framing or trailers.
    async fn buffer_chunked(&mut self, head_len: usize) -> Vec<u8> {
        let t = &self.ctx.front.timeouts;
        let deadline = t.http_request.map(|d| tokio::time::Instant::now() + d);
        let mut st = fairlead_http::ChunkedState::new();
        let mut seen = head_len;
        loop {
            let fed = self.cbuf.filled().get(seen..).unwrap_or_default();
            seen += fed.len();
            match st.feed(fed) {
                Ok(fairlead_http::ChunkProgress::NeedMore) if !self.cbuf.is_full() => {}
                _ => break,
            }
            let r = fairlead_net::io::until(deadline, "http-request timeout", async {
                self.cbuf.read_from(&self.client, usize::MAX).await
            })
            .await;
            match r {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        let mut out = pool::take_out();
        let body = self.cbuf.filled().get(head_len..).unwrap_or_default();
        let _ = fairlead_http::ChunkedState::new().feed_with(body, |d| out.extend_from_slice(d));
        out
    }

    /// Reads until the body (`len` bytes after the head) is in the buffer,
    /// the buffer is full, or `timeout http-request` expires. Returns how
    /// many body bytes are available.
    async fn buffer_body(&mut self, head_len: usize, len: u64) -> usize {
        let want = head_len.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        let t = &self.ctx.front.timeouts;
        let deadline = t.http_request.map(|d| tokio::time::Instant::now() + d);
        while self.cbuf.len() < want && !self.cbuf.is_full() {
            let r = fairlead_net::io::until(deadline, "http-request timeout", async {
                self.cbuf.read_from(&self.client, usize::MAX).await
            })
            .await;
            match r {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        self.cbuf.len().min(want).saturating_sub(head_len)
    }

    /// The frontend's stats rules for this request ([`stats_decision`]).
    pub(crate) fn stats_rules(&self, m: &mut Model) -> crate::StatsDecision {
        let ctx = self.ctx.clone();
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        stats_decision(&ctx, &facts, &mut m.head, self.cbuf.filled(), &mut m.st)
    }

    /// Sends a response the proxy made itself, after `http-after-response`.
    pub(crate) async fn send_local(
        &mut self,
        l: Local,
        head: &RequestHead,
        m: &mut Model,
        rl: &mut ReqLog,
    ) -> Next {
        let fc = self.ctx.front.counters.clone();
        let Local::Send {
            bytes,
            status,
            close,
            tarpit,
            denied,
        } = l
        else {
            // reject / silent-drop: no response at all.
            fc.inc(C::Dreq);
            rl.end(Who::Proxy, Phase::Request);
            if matches!(l, Local::SilentDrop) {
                self.client.abort();
            }
            return Next::Close;
        };
        if tarpit {
            let t = &self.ctx.front.timeouts;
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
        let bytes = self.after_local(bytes, m, rl);
        self.local_log_samples(m, rl);
        rl.status = Some(status);
        // What the client sent: the head (a body left unread is not
        // counted; the connection closes).
        rl.bytes_in = head.head_len as u64;
        rl.bytes_out = bytes.len() as u64;
        fc.status(status);
        let wrote = self
            .client
            .write_all(&bytes, self.ctx.front.timeouts.client)
            .await;
        self.first = false;
        if close || wrote.is_err() {
            self.client.shutdown_write();
            return Next::Close;
        }
        self.cbuf.consume(head.head_len);
        self.cbuf.release_if_empty();
        Next::KeepGoing
    }

    /// Sends a response made by a response rule (the server's response
    /// is dropped), after the `http-after-response` rules as HAProxy
    /// does, and closes.
    pub(crate) async fn send_local_bytes(
        &mut self,
        l: Local,
        m: &mut Model,
        rl: &mut ReqLog,
    ) -> Next {
        let Local::Send { bytes, status, .. } = l else {
            rl.end(Who::Proxy, Phase::Headers);
            return Next::Close;
        };
        let ctx = self.ctx.clone();
        let secs = sections(&ctx, rl.backend);
        let req_copy = m.req_copy.take();
        let bytes = self.after_rules(
            bytes,
            secs,
            &mut m.head,
            req_copy.as_deref().unwrap_or(&[]),
            &mut m.st,
            rl,
        );
        m.req_copy = req_copy;
        rl.end(Who::Proxy, Phase::Headers);
        rl.status = Some(status);
        rl.bytes_out = bytes.len() as u64;
        self.ctx.front.counters.status(status);
        self.ctx.front.counters.inc(C::Dresp);
        let _ = self
            .client
            .write_all(&bytes, self.ctx.front.timeouts.client)
            .await;
        self.client.shutdown_write();
        Next::Close
    }

    /// `http-response` (backend, then frontend) and `http-after-response`
    /// rules on a server's response. `Err`: a rule answered instead.
    pub(crate) fn response_rules(
        &mut self,
        m: &mut Model,
        resp: &ResponseHead,
        sbuf: &[u8],
        rl: &mut ReqLog,
    ) -> Result<(), Local> {
        let res = m.res.get_or_insert_with(msg::take);
        res.fill_response(sbuf, resp);
        self.run_res_rules(m, sbuf, rl)
    }

    /// [`Session::response_rules`] on a response head already in the
    /// message model (an HTTP/2 server's): it becomes the model's
    /// response, edited in place.
    pub(crate) fn response_rules_head(
        &mut self,
        m: &mut Model,
        res: Head,
        rl: &mut ReqLog,
    ) -> Result<(), Local> {
        if let Some(old) = m.res.replace(res) {
            msg::give(old);
        }
        self.run_res_rules(m, &[], rl)
    }

    /// Runs the response rules on the model's response (`sbuf`: the bytes
    /// its fields point into, if any).
    fn run_res_rules(&mut self, m: &mut Model, sbuf: &[u8], rl: &mut ReqLog) -> Result<(), Local> {
        let ctx = self.ctx.clone();
        let be = backend(&ctx, rl.backend);
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let Some(res) = m.res.as_mut() else {
            return Ok(());
        };
        let nb = |_: Option<&str>| -> Option<i64> { None };
        let server = rl.server.as_ref().map(|s| s.conf.name.as_str());
        let mut tx = HttpTxn {
            req: HeadBuf {
                head: &mut m.head,
                buf: m.req_copy.as_deref().unwrap_or(&[]),
            },
            res: Some(HeadBuf {
                head: res,
                buf: sbuf,
            }),
            conn: &facts,
            vars: &mut m.st.vars,
            fx: &mut m.st.fx,
            backend: Some(&be.name),
            server,
            server_id: rl.server.as_ref().map(|s| i64::from(s.conf.puid)),
            nbsrv: &nb,
            req_body: None,
            uid_ctx: Some(&ctx),
        };
        run_response_rules(&ctx, rl.backend, &mut tx)
    }

    /// `http-after-response` on a response the proxy made: parsed into the
    /// model, edited, serialised again with its body.
    /// `http-after-response` on a response the proxy made while processing
    /// the request: the frontend's rules, and the backend's when the reply
    /// came from the backend's rules.
    fn after_local(&mut self, bytes: Vec<u8>, m: &mut Model, rl: &ReqLog) -> Vec<u8> {
        let ctx = self.ctx.clone();
        let secs = match m.st.fx.backend_stage {
            Some(be) => sections(&ctx, be),
            None => [None, Some(&ctx.front.routes.fe_rules)],
        };
        let buf = self.cbuf.filled();
        self.after_rules(bytes, secs, &mut m.head, buf, &mut m.st, rl)
    }

    /// The log line's samples for a response the proxy made itself. As
    /// in HAProxy, that response is gone at log time: `%[status]` prints
    /// `-` there (`%ST` has the status).
    fn local_log_samples(&self, m: &mut Model, rl: &ReqLog) {
        let ctx = self.ctx.clone();
        let fe = &ctx.front.routes.fe_rules;
        if fe.log_samples.is_empty() {
            return;
        }
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let nb = |_: Option<&str>| -> Option<i64> { None };
        let be = backend(&ctx, rl.backend);
        let tx = HttpTxn {
            req: HeadBuf {
                head: &mut m.head,
                buf: m.req_copy.as_deref().unwrap_or(self.cbuf.filled()),
            },
            res: None,
            conn: &facts,
            vars: &mut m.st.vars,
            fx: &mut m.st.fx,
            backend: Some(&be.name),
            server: None,
            server_id: None,
            nbsrv: &nb,
            req_body: None,
            uid_ctx: Some(&ctx),
        };
        let v = log_samples(fe, &tx);
        tx.fx.log_samples = v;
    }

    /// `http-after-response` on an error the proxy answers once the request
    /// was parsed (503 without a server, 502, 504...): HAProxy runs them on
    /// those too, not on the early 400/408 of an unparsed request.
    pub(crate) fn after_error(&self, bytes: Vec<u8>, rl: &ReqLog) -> Vec<u8> {
        if rl.head_done.is_none() {
            return bytes;
        }
        let ctx = self.ctx.clone();
        let secs = sections(&ctx, rl.backend);
        if !secs
            .iter()
            .flatten()
            .any(|r| !r.http_after_response.is_empty())
        {
            return bytes;
        }
        let mut req = msg::take();
        let mut st = TxnState::default();
        let out = self.after_rules(bytes, secs, &mut req, &[], &mut st, rl);
        msg::give(req);
        out
    }

    /// Parses a whole response the proxy made, runs `secs`'
    /// `http-after-response` rules on it and serialises it again.
    fn after_rules(
        &self,
        bytes: Vec<u8>,
        secs: [Option<&Arc<ProxyRules>>; 2],
        req: &mut Head,
        req_buf: &[u8],
        st: &mut TxnState,
        rl: &ReqLog,
    ) -> Vec<u8> {
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&self.ctx, self.peer, &self.client, tls.as_deref());
        let req = HeadBuf {
            head: req,
            buf: req_buf,
        };
        after_response_rules(&self.ctx, &facts, bytes, secs, req, st, rl)
    }
}

/// `http-after-response` of `secs` on a whole response the proxy made
/// (HTTP/1 text: parsed into the model, edited, serialised again with
/// its body), for HTTP/1 sessions and HTTP/2 streams alike.
pub(crate) fn after_response_rules(
    ctx: &crate::HttpCtx,
    facts: &crate::txn::ConnFacts<'_>,
    bytes: Vec<u8>,
    secs: [Option<&Arc<ProxyRules>>; 2],
    req: HeadBuf<'_>,
    st: &mut TxnState,
    rl: &ReqLog,
) -> Vec<u8> {
    if !secs
        .iter()
        .flatten()
        .any(|r| !r.http_after_response.is_empty())
    {
        return bytes;
    }
    let Ok(Some(resp)) = fairlead_http::parse_response(&bytes, false, bytes.len() + 1) else {
        return bytes;
    };
    let mut res = msg::take();
    res.fill_response(&bytes, &resp);
    let nb = |_: Option<&str>| -> Option<i64> { None };
    let be = backend(ctx, rl.backend);
    let mut tx = HttpTxn {
        req,
        res: Some(HeadBuf {
            head: &mut res,
            buf: &bytes,
        }),
        conn: facts,
        vars: &mut st.vars,
        fx: &mut st.fx,
        backend: Some(&be.name),
        server: None,
        server_id: None,
        nbsrv: &nb,
        req_body: None,
        uid_ctx: None,
    };
    for r in secs.iter().flatten() {
        let _ = run(&r.http_after_response, &r.acls, &mut tx, true);
    }
    let conn = if resp.conn.close {
        ConnHeader::Close
    } else {
        ConnHeader::None
    };
    let mut out = Vec::with_capacity(bytes.len() + 64);
    res.write_response_h1(&bytes, conn, &mut out);
    out.extend_from_slice(&bytes[resp.head_len..]);
    msg::give(res);
    out
}

/// The transaction as log samples see it once the connection's state is
/// out of reach ([`Model::finish`]): the request, the variables, the
/// addresses and names.
struct LateTxn<'a> {
    req: HeadBuf<'a>,
    vars: &'a crate::txn::Vars,
    src: std::net::SocketAddr,
    frontend: &'a str,
    backend: &'a str,
    server: Option<&'a str>,
    hostname: &'a str,
    unique_id: Option<&'a [u8]>,
}

impl fairlead_rules::txn::Txn for LateTxn<'_> {
    fn req(&self) -> Option<&dyn fairlead_rules::txn::Msg> {
        Some(&self.req)
    }
    fn src(&self) -> Option<std::net::SocketAddr> {
        Some(self.src)
    }
    fn var(&self, v: &fairlead_rules::txn::VarRef) -> Option<fairlead_rules::Sample<'_>> {
        self.vars.get(v)
    }
    fn frontend_name(&self) -> &str {
        self.frontend
    }
    fn backend_name(&self) -> Option<&str> {
        Some(self.backend)
    }
    fn server_name(&self) -> Option<&str> {
        self.server
    }
    fn hostname(&self) -> &str {
        self.hostname
    }
    fn unique_id(&self) -> Option<&[u8]> {
        self.unique_id
    }
}

/// The values of the frontend's `log-format` samples for this
/// transaction (`None` when it has none).
fn log_samples(fe: &ProxyRules, tx: &dyn fairlead_rules::txn::Txn) -> Option<Vec<Option<Vec<u8>>>> {
    if fe.log_samples.is_empty() {
        return None;
    }
    let v = fe.log_samples.iter().map(|e| {
        e.eval_str(tx)
            .and_then(|s| s.as_bytes().map(<[u8]>::to_vec))
    });
    Some(v.collect())
}

/// Whether a response needs the rule engine for these sections: response
/// rules, response captures, or `log-format` samples.
pub(crate) fn has_response_work(rules: [Option<&Arc<ProxyRules>>; 2]) -> bool {
    rules.iter().flatten().any(|r| {
        !r.log_samples.is_empty()
            || !r.http_response.is_empty()
            || !r.http_after_response.is_empty()
            || !r.res_captures.is_empty()
            || r.cookie_capture.is_some()
            || !r.stick_res.is_empty()
    })
}

/// The response phase's rules on `tx`, for HTTP/1 and HTTP/2 alike:
/// response header captures, `http-response` (backend, then frontend;
/// `Err` when a rule answers instead), `capture cookie`,
/// `http-after-response`, then the `log-format` samples.
pub(crate) fn run_response_rules(
    ctx: &crate::HttpCtx,
    be_idx: Option<usize>,
    tx: &mut HttpTxn<'_>,
) -> Result<(), Local> {
    let fe = &ctx.front.routes.fe_rules;
    let be = backend(ctx, be_idx);
    let secs = sections(ctx, be_idx);
    capture_response_headers(fe, tx);
    // `stick store-response` runs before `http-response`, as HAProxy's
    // store rules analyser.
    // Only backends and listen sections have stick rules.
    if let Some(br) = secs.iter().flatten().find(|r| !r.stick_res.is_empty()) {
        let mut st = std::mem::take(&mut tx.fx.stick);
        st.run_response(&br.stick_res, &br.acls, &*tx);
        tx.fx.stick = st;
    }
    for r in secs.iter().flatten() {
        let v = run(&r.http_response, &r.acls, tx, true);
        if let Verdict::Deny(a) = &v {
            if a.is_default && a.status() == 502 {
                return Err(Local::Send {
                    bytes: process::error_page(ctx, be_idx, 502),
                    status: 502,
                    close: true,
                    tarpit: false,
                    denied: true,
                });
            }
        }
        if let Some(l) = process::local_of(ctx, be_idx, &be.name, v, tx, true) {
            return Err(l);
        }
    }
    capture_response_cookie(fe, tx);
    for r in secs.iter().flatten() {
        let _ = run(&r.http_after_response, &r.acls, tx, true);
    }
    tx.fx.log_samples = log_samples(fe, tx);
    Ok(())
}

/// Hands what rules captured to the log line (HTTP/1 and HTTP/2 alike).
pub(crate) fn keep_captures(fx: &mut crate::txn::Effects, rl: &mut ReqLog) {
    let silent = fx.log_level == Some(None);
    if silent
        || fx.src.is_some()
        || !fx.req_captures.is_empty()
        || !fx.res_captures.is_empty()
        || fx.cookie_req.is_some()
        || fx.cookie_res.is_some()
        || fx.log_samples.is_some()
        || fx.unique_id.get().is_some()
    {
        let text = |c: Option<Vec<u8>>| c.map(|c| String::from_utf8_lossy(&c).into_owned());
        rl.captured = Some(Box::new(crate::logging::Captured {
            req: std::mem::take(&mut fx.req_captures),
            res: std::mem::take(&mut fx.res_captures),
            silent,
            src: fx.src,
            cookie_req: text(fx.cookie_req.take()),
            cookie_res: text(fx.cookie_res.take()),
            samples: fx.log_samples.take().unwrap_or_default(),
            unique_id: text(fx.unique_id.take()),
        }));
    }
}

/// `capture cookie` on the response: the first `Set-Cookie` whose name
/// starts with the captured name (`%CS`), after the `http-response` rules.
fn capture_response_cookie(fe: &ProxyRules, tx: &mut HttpTxn<'_>) {
    let Some(c) = &fe.cookie_capture else { return };
    let Some(res) = &tx.res else { return };
    let v = res.head.view(res.buf);
    let found = v.full_values(b"set-cookie").find_map(|h| {
        let first = h.split(|&b| b == b';').next().unwrap_or_default();
        process::capture_match(first, c)
    });
    tx.fx.cookie_res = found;
}

/// `capture response header` declarations fill the first response slots.
fn capture_response_headers(fe: &ProxyRules, tx: &mut HttpTxn<'_>) {
    if fe.res_captures.is_empty() {
        return;
    }
    let Some(res) = &tx.res else { return };
    let v = res.head.view(res.buf);
    tx.fx.res_captures = fe
        .res_captures
        .iter()
        .map(|c| {
            v.full_values(c.name.as_bytes())
                .next()
                .map(|x| x[..x.len().min(c.len)].to_vec())
        })
        .collect();
}

/// The frontend's `stats admin` conditions for this request (`None` when
/// it has none), and the first matching `stats http-request` rule (`None`:
/// no rule matched, or none exists), for HTTP/1 and HTTP/2 requests alike.
pub(crate) fn stats_decision(
    ctx: &crate::HttpCtx,
    facts: &crate::txn::ConnFacts<'_>,
    head: &mut Head,
    buf: &[u8],
    st: &mut TxnState,
) -> crate::StatsDecision {
    let fe = &ctx.front.routes.fe_rules;
    if fe.stats_admin.is_empty() && fe.stats_http.is_empty() {
        return crate::StatsDecision::default();
    }
    let nb = |_: Option<&str>| -> Option<i64> { None };
    let tx = HttpTxn {
        req: HeadBuf { head, buf },
        res: None,
        conn: facts,
        vars: &mut st.vars,
        fx: &mut st.fx,
        backend: None,
        server: None,
        server_id: None,
        nbsrv: &nb,
        req_body: None,
        uid_ctx: None,
    };
    let pass =
        |c: &fairlead_rules::cond::Cond| c.eval(&fe.acls, &tx) == fairlead_rules::acl::Tri::Pass;
    crate::StatsDecision {
        admin: (!fe.stats_admin.is_empty()).then(|| fe.stats_admin.iter().any(pass)),
        rule: fe
            .stats_http
            .iter()
            .find(|r| r.cond.as_ref().is_none_or(pass))
            .map(|r| r.action.clone()),
    }
}
