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
    res: Option<Head>,
    res_rules: bool,
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
            },
            req_copy: None,
            res: None,
            res_rules: false,
        }
    }

    /// Hands what rules captured to the log line, returns the pooled
    /// parts, and gives back the `sess` variables.
    pub fn finish(mut self, rl: &mut ReqLog) -> crate::txn::SessVars {
        let fx = &mut self.st.fx;
        // The request's stick counters: its status counts as an error or
        // a failure, then the slots are released (end of the stream).
        if let Some(mut t) = fx.trackers.take() {
            let now = fairlead_rules::stick::now_ms();
            if let Some(status) = rl.status {
                t.on_response_status(status, now);
            }
            t.end_stream(now);
        }
        let silent = fx.log_level == Some(None);
        if silent || fx.src.is_some() || !fx.req_captures.is_empty() || !fx.res_captures.is_empty()
        {
            rl.captured = Some(Box::new(crate::logging::Captured {
                req: std::mem::take(&mut fx.req_captures),
                res: std::mem::take(&mut fx.res_captures),
                silent,
                src: fx.src,
            }));
        }
        let sess = std::mem::take(&mut self.st.vars).into_sess();
        self.give();
        sess
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
        self.res_rules = rules.iter().flatten().any(|r| {
            !r.http_response.is_empty()
                || !r.http_after_response.is_empty()
                || !r.res_captures.is_empty()
        });
        if self.res_rules {
            let mut c = pool::take_out();
            c.extend_from_slice(&buf[..head.head_len.min(buf.len())]);
            self.req_copy = Some(c);
        }
    }

    pub fn has_response_rules(&self) -> bool {
        self.res_rules
    }

    /// Serialises the (edited) response head.
    pub fn write_response(&self, buf: &[u8], conn: ConnHeader, out: &mut Vec<u8>) {
        if let Some(r) = &self.res {
            r.write_response_h1(buf, conn, out);
        }
    }
}

/// Whether the frontend or its default backend buffers request bodies.
fn buffers_body(ctx: &crate::HttpCtx) -> bool {
    let r = &ctx.routes;
    r.fe_rules.buffer_request || r.default.is_some_and(|i| r.be_rules[i].buffer_request)
}

/// The rules of the chosen backend and of the frontend, each once.
pub(crate) fn sections(ctx: &crate::HttpCtx, be: Option<usize>) -> [Option<&Arc<ProxyRules>>; 2] {
    let fe = &ctx.routes.fe_rules;
    let br = be
        .or(ctx.routes.default)
        .and_then(|i| ctx.routes.be_rules.get(i))
        .filter(|r| !Arc::ptr_eq(r, fe));
    [br, Some(fe)]
}

impl Session {
    /// The process phase on a parsed request (see [`process`]). With
    /// `option http-buffer-request`, a `Content-Length` body is read first
    /// (as much as the buffer holds, within `timeout http-request`) so
    /// that `req.body` sees it.
    pub(crate) async fn process(&mut self, head: &RequestHead, m: &mut Model) -> Decision {
        let ctx = self.ctx.clone();
        let body_len = match head.body {
            BodyKind::Length(n) if n > 0 && buffers_body(&ctx) => {
                Some(self.buffer_body(head.head_len, n).await)
            }
            _ => None,
        };
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let close = !matches!(head.body, BodyKind::None | BodyKind::Length(0))
            || !head.keep_alive
            || self.stopping();
        let buf = self.cbuf.filled();
        let body = body_len.map(|n| &buf[head.head_len..head.head_len + n]);
        process::process_request(&ctx, &facts, &mut m.head, buf, body, &mut m.st, close)
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

    /// The frontend's `stats admin` conditions for this request (`None`
    /// when it has none).
    pub(crate) fn stats_admin(&self, m: &mut Model) -> Option<bool> {
        let ctx = self.ctx.clone();
        let fe = &ctx.routes.fe_rules;
        if fe.stats_admin.is_empty() {
            return None;
        }
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let nb = |_: Option<&str>| -> Option<i64> { None };
        let tx = HttpTxn {
            req: HeadBuf {
                head: &mut m.head,
                buf: self.cbuf.filled(),
            },
            res: None,
            conn: &facts,
            vars: &mut m.st.vars,
            fx: &mut m.st.fx,
            backend: None,
            server: None,
            server_id: None,
            nbsrv: &nb,
            req_body: None,
        };
        Some(
            fe.stats_admin
                .iter()
                .any(|c| c.eval(&fe.acls, &tx) == fairlead_rules::acl::Tri::Pass),
        )
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
        rl.status = Some(status);
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
    /// is dropped) and closes.
    pub(crate) async fn send_local_bytes(&mut self, l: Local, rl: &mut ReqLog) -> Next {
        let Local::Send { bytes, status, .. } = l else {
            rl.end(Who::Proxy, Phase::Headers);
            return Next::Close;
        };
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
        let ctx = self.ctx.clone();
        let be = backend(&ctx, rl.backend);
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let res = m.res.get_or_insert_with(msg::take);
        res.fill_response(sbuf, resp);
        let nb = |_: Option<&str>| -> Option<i64> { None };
        let server = rl.server.map(|i| be.servers[i].conf.name.as_str());
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
            server_id: rl.server.map(|i| i64::from(be.servers[i].conf.puid)),
            nbsrv: &nb,
            req_body: None,
        };
        let secs = sections(&ctx, rl.backend);
        capture_response_headers(&ctx.routes.fe_rules, &mut tx);
        for r in secs.iter().flatten() {
            let v = run(&r.http_response, &r.acls, &mut tx, true);
            if let Verdict::Deny(a) = &v {
                if a.is_default && a.status() == 502 {
                    return Err(Local::Send {
                        bytes: process::error_page(&ctx, rl.backend, 502),
                        status: 502,
                        close: true,
                        tarpit: false,
                        denied: true,
                    });
                }
            }
            if let Some(l) = process::local_of(&ctx, rl.backend, &be.name, v, &tx, true) {
                return Err(l);
            }
        }
        for r in secs.iter().flatten() {
            let _ = run(&r.http_after_response, &r.acls, &mut tx, true);
        }
        Ok(())
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
            None => [None, Some(&ctx.routes.fe_rules)],
        };
        let buf = self.cbuf.filled();
        self.after_rules(bytes, secs, &mut m.head, buf, &mut m.st, rl)
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
        let ctx = self.ctx.clone();
        let tls = self.client.tls_info_ref();
        let facts = conn_facts(&ctx, self.peer, &self.client, tls.as_deref());
        let mut res = msg::take();
        res.fill_response(&bytes, &resp);
        let nb = |_: Option<&str>| -> Option<i64> { None };
        let be = backend(&ctx, rl.backend);
        let mut tx = HttpTxn {
            req: HeadBuf {
                head: req,
                buf: req_buf,
            },
            res: Some(HeadBuf {
                head: &mut res,
                buf: &bytes,
            }),
            conn: &facts,
            vars: &mut st.vars,
            fx: &mut st.fx,
            backend: Some(&be.name),
            server: None,
            server_id: None,
            nbsrv: &nb,
            req_body: None,
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
