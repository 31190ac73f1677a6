//! An HTTP/1 client's request to an HTTP/2 server (`proto h2`, or `ssl
//! alpn h2`): h1 → h2, as a stream on a multiplexed, pooled server
//! connection ([`super::mux`]).
//!
//! The request head is the one the HTTP/1 path prepared for the server
//! (rules' edits, `Connection`, `option forwardfor` applied), parsed
//! again into the message model and encoded as HEADERS; its body is
//! de-framed (content-length or chunked, trailers included) into DATA
//! within the server's windows. The response becomes an HTTP/1.1
//! response: its `content-length` if it has one, else chunked (HTTP/1.1
//! clients, with the trailers) or close-delimited (HTTP/1.0). A client's
//! `TE: trailers` reaches the server as `te: trailers` (gRPC needs it).

use super::mux::{self, Got, Lease, Route};
use super::resp::{write_last_chunk, Dechunk};
use crate::logging::ReqLog;
use crate::session::{Outcome, Session};
use fairlead_backend::counters::C;
use fairlead_backend::{ProxyError, ServerSlot};
use fairlead_http::msg::{self, Head};
use fairlead_http::{BodyKind, ConnHeader, RequestHead};
use fairlead_log::{Phase, Who};
use fairlead_net::io::with_timeout;
use fairlead_net::pool;
use std::io::Write as _;

/// Immediate replays of a stream the server did not process.
const REPLAYS: u32 = 3;

/// How the exchange failed.
enum Fail {
    /// This side, before or after the response head.
    By(Who),
    /// The server did not process the stream: it may be opened again.
    Refused,
    /// No stream could be opened.
    Open(ProxyError),
}

/// How the response body goes to the HTTP/1 client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    /// As received (content-length, or no body).
    Plain,
    Chunked,
    /// Until the connection closes (HTTP/1.0 client).
    Close,
}

/// The request body still to come from the client.
enum ReqBody {
    Done,
    Left(u64),
    Chunked(Dechunk),
}

struct St {
    pend: Vec<u8>,
    /// Body bytes taken by the server's codec.
    given: u64,
    trailers_sent: bool,
    body: ReqBody,
    /// Trailers of a chunked request body, once decoded.
    trailers: Option<Head>,
    resp: Option<Out>,
    wrote: u64,
    done: bool,
}

/// What the response side of an exchange needs: the transaction's model
/// (response rules, stick stores) when rules run, and what the request
/// said about cookie persistence.
pub(crate) struct RespSide<'m> {
    pub model: Option<&'m mut crate::local::Model>,
    pub persist: crate::persist::Persist,
}

impl Session {
    /// Runs the exchange with an HTTP/2 server: on `lease`, else a pooled
    /// or new connection to the server of `slot`. `req` is the HTTP/1 head
    /// prepared for the server; `names` what a new connection needs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn exchange_h2_server(
        &mut self,
        head: &RequestHead,
        req: &[u8],
        lease: Lease,
        slot: ServerSlot,
        names: mux::Names,
        mut resp: RespSide<'_>,
        rl: &mut ReqLog,
    ) -> Option<Outcome> {
        if head.upgrade || head.is_connect {
            // A WebSocket upgrade or a CONNECT would need a tunnel over an
            // HTTP/2 stream (extended CONNECT toward the server): not
            // supported, as on the HTTP/2 client side.
            self.send_error(501, rl).await;
            return None;
        }
        let ctx = self.ctx.clone();
        let be = crate::process::backend(&ctx, rl.backend).clone();
        let srv = slot.server().clone();
        // The prepared head is this proxy's own output; a request the
        // lenient parser accepted must parse again the same way.
        let reparsed = if ctx.front.accept_invalid_http_request {
            fairlead_http::parse_request_lenient(req, req.len() + 1)
        } else {
            fairlead_http::parse_request(req, req.len() + 1)
        };
        let Ok(Some(rh)) = reparsed else {
            self.send_error(502, rl).await;
            return None;
        };
        let mut h = msg::take();
        h.fill_request(req, &rh);
        if head.te_trailers {
            // TE is hop-by-hop, so the HTTP/1 head prepared for the server
            // lost it; HTTP/2 allows `te: trailers` and gRPC servers
            // require it (RFC 9113 §8.2.2).
            h.append_field(b"te", b"trailers");
        }
        let mut st = St {
            pend: Vec::new(),
            given: 0,
            trailers_sent: false,
            body: match head.body {
                BodyKind::Length(n) if n > 0 => ReqBody::Left(n),
                BodyKind::Chunked => ReqBody::Chunked(Dechunk::new()),
                _ => ReqBody::Done,
            },
            trailers: None,
            resp: None,
            wrote: 0,
            done: false,
        };
        let end = matches!(st.body, ReqBody::Done);
        let route = Route::new(srv.clone(), &be, self.eff.reuse, self.first, names).tuned(&ctx);
        let mut lease = Some(lease);
        let mut tries = 0;
        let r = loop {
            let stream = match mux::open_stream(&route, lease.take(), &h, req, end).await {
                Ok(s) => s,
                Err(e) => break Err(Fail::Open(e)),
            };
            match self.drive_h2(&mut st, stream, head, &mut resp, rl).await {
                Err(Fail::Refused) if tries < REPLAYS && st.given == 0 && !st.trailers_sent => {
                    tries += 1;
                }
                r => break r,
            }
        };
        msg::give(h);
        drop(slot);
        if st.pend.capacity() > 0 {
            pool::give_out(std::mem::take(&mut st.pend));
        }
        if let Some(t) = st.trailers.take() {
            msg::give(t);
        }
        self.h2_outcome(r, &st, head, &be, &srv, rl).await
    }

    /// Counts and logs how the exchange ended; the session's outcome.
    async fn h2_outcome(
        &mut self,
        r: Result<(), Fail>,
        st: &St,
        head: &RequestHead,
        be: &fairlead_backend::Backend,
        srv: &fairlead_backend::Server,
        rl: &mut ReqLog,
    ) -> Option<Outcome> {
        let ctx = self.ctx.clone();
        let counters = [&ctx.front.counters, &be.counters, &srv.metrics.counters];
        rl.bytes_out = st.wrote;
        for c in counters {
            c.add(C::Bout, st.wrote);
        }
        let who = match r {
            Ok(()) => {
                srv.observe(
                    true,
                    !rl.status.is_some_and(crate::forward::is_server_error),
                );
                let keep = head.keep_alive
                    && matches!(st.body, ReqBody::Done)
                    && st.resp != Some(Out::Close)
                    && !self.stopping();
                if !keep {
                    self.client.shutdown_write();
                }
                return Some(Outcome {
                    client_keep: keep,
                    server_keep: false,
                });
            }
            Err(Fail::Open(e)) => {
                crate::forward::count_failure(&ctx.front.counters, be, srv, &e);
                let (who, phase) = e.termination();
                rl.end(who, phase);
                if let Some(status) = e.status() {
                    self.send_error(status, rl).await;
                }
                return None;
            }
            Err(Fail::Refused) => Who::Server,
            Err(Fail::By(who)) => who,
        };
        if st.resp.is_none() {
            srv.observe(true, false);
            be.counters.inc(C::Eresp);
            srv.metrics.counters.inc(C::Eresp);
            rl.end(who, Phase::Headers);
            self.send_error(502, rl).await;
            return None;
        }
        rl.end(who, Phase::Data);
        let c = if who == Who::Client {
            C::CliAbrt
        } else {
            C::SrvAbrt
        };
        for x in counters {
            x.inc(c);
        }
        None
    }

    /// The exchange loop on one server stream.
    async fn drive_h2(
        &mut self,
        st: &mut St,
        mut stream: mux::Stream,
        head: &RequestHead,
        resp: &mut RespSide<'_>,
        rl: &mut ReqLog,
    ) -> Result<(), Fail> {
        let be = crate::process::backend(&self.ctx, rl.backend).clone();
        let timeout = be.options.timeouts.server;
        let ct = self.ctx.front.timeouts.client;
        while !st.done {
            self.push_body(st, &stream).map_err(Fail::By)?;
            if let Some(got) = stream.next() {
                self.on_server_input(st, got, &stream, head, resp, rl)
                    .await?;
                continue;
            }
            let want_client =
                !matches!(st.body, ReqBody::Done) && st.pend.is_empty() && self.cbuf.is_empty();
            let client = &self.client;
            let cbuf = &mut self.cbuf;
            tokio::select! {
                r = with_timeout(timeout, "server timeout", async {
                    stream.changed().await;
                    Ok(())
                }) => {
                    if r.is_err() {
                        return Err(Fail::By(Who::Server));
                    }
                }
                r = with_timeout(ct, "client timeout", cbuf.read_from(client, usize::MAX)), if want_client => {
                    match r {
                        Ok(n) if n > 0 => {}
                        _ => return Err(Fail::By(Who::Client)),
                    }
                }
            }
        }
        stream.finish();
        Ok(())
    }

    /// De-frames what the client sent of the body and hands it to the
    /// server's codec within its windows.
    fn push_body(&mut self, st: &mut St, stream: &mux::Stream) -> Result<(), Who> {
        if st.pend.is_empty() && !self.cbuf.is_empty() {
            if st.pend.capacity() == 0 {
                st.pend = pool::take_out();
            }
            let input = self.cbuf.filled();
            match &mut st.body {
                ReqBody::Done => {}
                ReqBody::Left(n) => {
                    let k = input.len().min(usize::try_from(*n).unwrap_or(usize::MAX));
                    st.pend.extend_from_slice(&input[..k]);
                    *n -= k as u64;
                    self.cbuf.consume(k);
                }
                ReqBody::Chunked(d) => {
                    let (used, done) = d.feed(input, &mut st.pend).map_err(|_| Who::Client)?;
                    if done {
                        st.trailers = d.trailers();
                    }
                    self.cbuf.consume(used);
                    if done {
                        st.body = ReqBody::Left(0);
                    }
                }
            }
        }
        let complete = matches!(st.body, ReqBody::Left(0));
        if matches!(st.body, ReqBody::Done) {
            return Ok(());
        }
        let ends = complete && st.trailers.is_none();
        let n = stream.send_data(&st.pend, ends).unwrap_or(0);
        st.pend.drain(..n);
        st.given += n as u64;
        if complete && st.pend.is_empty() {
            if let Some(t) = st.trailers.take() {
                let _ = stream.send_trailers(&t);
                st.trailers_sent = true;
                msg::give(t);
            }
            st.body = ReqBody::Done;
            if st.pend.capacity() > 0 {
                pool::give_out(std::mem::take(&mut st.pend));
            }
        }
        Ok(())
    }

    /// The server's response head after the response rules (when rules
    /// run), the stick stores and the persistence cookie, as on the
    /// HTTP/1 server path; `None` when a rule answered instead (its reply
    /// was sent).
    async fn h2_response(
        &mut self,
        mut res: Head,
        resp: &mut RespSide<'_>,
        rl: &mut ReqLog,
    ) -> Option<Head> {
        let ctx = self.ctx.clone();
        let be = crate::process::backend(&ctx, rl.backend).clone();
        let srv = rl.server.clone();
        if let Some(m) = resp.model.as_deref_mut() {
            let rules = self.response_rules_head(m, res, rl);
            if let Some(s) = &srv {
                crate::process::stick_commit(&mut m.st.fx, s);
            }
            if let Err(local) = rules {
                let _ = self.send_local_bytes(local, m, rl).await;
                return None;
            }
            res = m.res.take()?;
        }
        if let (Some(c), Some(s)) = (&be.options.cookie, &srv) {
            crate::persist::edit_response_head(c, resp.persist, s, &mut res, &[]);
        }
        Some(res)
    }

    /// Relays one input of the server stream to the HTTP/1 client.
    async fn on_server_input(
        &mut self,
        st: &mut St,
        got: Got,
        stream: &mux::Stream,
        head: &RequestHead,
        resp: &mut RespSide<'_>,
        rl: &mut ReqLog,
    ) -> Result<(), Fail> {
        let ct = self.ctx.front.timeouts.client;
        let mut wire = pool::take_out();
        let mut release = 0;
        match got {
            Got::Head(res, end_stream) => {
                let status = res.view(&[]).status();
                rl.status = Some(status);
                rl.response_done = Some(tokio::time::Instant::now());
                let Some(res) = self.h2_response(res, resp, rl).await else {
                    // A response rule answered instead (sent): the
                    // exchange ends and the client connection closes.
                    pool::give_out(wire);
                    st.resp = Some(Out::Close);
                    st.done = true;
                    return Ok(());
                };
                self.ctx.front.counters.status(status);
                st.resp = Some(response_head(&res, end_stream, head, &mut wire));
                st.done = end_stream;
                msg::give(res);
            }
            Got::Data(data, end_stream) => {
                let chunked = st.resp == Some(Out::Chunked);
                if chunked && !data.is_empty() {
                    let _ = write!(wire, "{:x}\r\n", data.len());
                }
                wire.extend_from_slice(&data);
                if chunked && !data.is_empty() {
                    wire.extend_from_slice(b"\r\n");
                }
                if end_stream && chunked {
                    write_last_chunk(None, &mut wire);
                }
                st.wrote += data.len() as u64;
                release = data.len();
                st.done = end_stream;
            }
            Got::Trailers(t) => {
                if st.resp == Some(Out::Chunked) {
                    write_last_chunk(Some(&t), &mut wire);
                }
                msg::give(t);
                st.done = true;
            }
            Got::Gone { retryable } => {
                pool::give_out(wire);
                return Err(if retryable && st.resp.is_none() {
                    Fail::Refused
                } else {
                    Fail::By(Who::Server)
                });
            }
        }
        let w = if wire.is_empty() {
            Ok(())
        } else {
            self.client.write_all(&wire, ct).await
        };
        pool::give_out(wire);
        w.map_err(|_| Fail::By(Who::Client))?;
        // Forwarded: the server may send more.
        if release > 0 {
            stream.release(release);
        }
        Ok(())
    }
}

/// Writes the HTTP/1.1 head of an HTTP/2 response; returns how its body
/// is framed.
fn response_head(res: &Head, end_stream: bool, req: &RequestHead, out: &mut Vec<u8>) -> Out {
    let v = res.view(&[]);
    let status = v.status();
    let no_body = req.is_head || status == 204 || status == 304;
    let framing = if no_body || end_stream || v.has(b"content-length") {
        Out::Plain
    } else if req.minor_version >= 1 {
        Out::Chunked
    } else {
        Out::Close
    };
    let conn = if framing == Out::Close {
        ConnHeader::Close
    } else {
        ConnHeader::None
    };
    res.write_response_h1(&[], conn, out);
    // The head ends with CRLF CRLF: add the framing field before it.
    let extra: &[u8] = match framing {
        Out::Chunked => b"transfer-encoding: chunked\r\n",
        Out::Plain if end_stream && !no_body && !v.has(b"content-length") => {
            b"content-length: 0\r\n"
        }
        _ => b"",
    };
    if !extra.is_empty() && out.ends_with(b"\r\n\r\n") {
        let at = out.len() - 2;
        out.splice(at..at, extra.iter().copied());
    }
    framing
}
