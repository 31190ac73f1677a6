//! `server ... proto h2`: an HTTP/2 client stream's request sent to a
//! clear-text HTTP/2 server (h2c, prior knowledge), one server
//! connection per request.
//!
//! The exchange is one loop over the server connection and its own
//! client codec: the request head, the body from the client stream's
//! queue within the server's windows (each byte released to the client
//! once taken by the server's codec), the response head (after the
//! response rules), DATA relayed within the client's window, trailers.
//! Waiting for the client's window stops reading the server: the
//! server's window closes, nothing buffers.

use super::conn::{ConnCx, Signals};
use super::resp::send_all;
use crate::logging::ReqLog;
use crate::process::TxnState;
use fairlead_backend::{Cause, ProxyError};
use fairlead_h2::{Conn as Codec, Event, Recv};
use fairlead_http::msg::{self, Head};
use fairlead_log::{Phase, Who};
use fairlead_net::io::with_timeout;
use fairlead_net::{pool, Conn, IoBuf};
use std::time::Duration;

/// How an upstream exchange ended.
pub(crate) enum Ended {
    /// The response was relayed whole: body bytes sent to the client and
    /// request body bytes sent to the server.
    Done { out: u64, sent: u64 },
    /// Failed before a response head: the request may be answered with
    /// an error page.
    Early(ProxyError),
    /// Cut during the response body, by this side.
    Cut(Who),
    /// A response rule answered instead (already sent).
    Answered,
}

/// The exchange's state.
struct Up<'a> {
    cx: &'a ConnCx,
    id: u32,
    sig: &'a Signals,
    server: &'a Conn,
    timeout: Option<Duration>,
    codec: Codec,
    sid: u32,
    out: Vec<u8>,
    /// Request body taken from the client stream, not yet taken by the
    /// server's codec.
    pend: Vec<u8>,
    req_done: bool,
    got_head: bool,
    body_out: u64,
    sent: u64,
}

/// Runs one request over a new HTTP/2 connection `server`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    server: &Conn,
    head: &mut Head,
    end: bool,
    timeout: Option<Duration>,
    rl: &mut ReqLog,
    st: &mut TxnState,
) -> Ended {
    let mut out = pool::take_out();
    let mut codec = Codec::client(super::conn::codec_config(&cx.ctx, false), &mut out);
    let sid = match codec.send_request(head, &[], end, &mut out) {
        Ok(s) => s,
        Err(_) => {
            pool::give_out(out);
            return Ended::Early(early(Cause::BadResponse));
        }
    };
    let mut up = Up {
        cx,
        id,
        sig,
        server,
        timeout,
        codec,
        sid,
        out,
        pend: Vec::new(),
        req_done: end,
        got_head: false,
        body_out: 0,
        sent: 0,
    };
    let r = up.drive(head, rl, st).await;
    pool::give_out(std::mem::take(&mut up.out));
    if up.pend.capacity() > 0 {
        pool::give_out(std::mem::take(&mut up.pend));
    }
    r
}

fn early(cause: Cause) -> ProxyError {
    ProxyError::new(cause, Phase::Headers, false)
}

impl Up<'_> {
    async fn drive(&mut self, req: &mut Head, rl: &mut ReqLog, st: &mut TxnState) -> Ended {
        let mut rbuf = IoBuf::new();
        loop {
            if !self.req_done {
                self.push_body();
            }
            if !self.out.is_empty() {
                let w = self.server.write_all(&self.out, self.timeout).await;
                self.out.clear();
                self.codec.flushed();
                if w.is_err() {
                    return self.failed(Cause::EmptyResponse);
                }
                continue;
            }
            let wait_body = !self.req_done && self.pend.is_empty();
            let read = with_timeout(self.timeout, "server timeout", async {
                rbuf.read_from(self.server, usize::MAX).await
            });
            tokio::select! {
                r = read => match r {
                    Ok(n) if n > 0 => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        return self.failed(Cause::ResponseTimeout)
                    }
                    _ => return self.failed(Cause::TruncatedResponse),
                },
                _ = self.sig.body.notified(), if wait_body => continue,
            }
            if let Some(end) = self.on_input(&mut rbuf, req, rl, st).await {
                return end;
            }
            rbuf.release_if_empty();
        }
    }

    /// A failure: early (before the response head) or a cut.
    fn failed(&self, cause: Cause) -> Ended {
        if self.got_head {
            Ended::Cut(Who::Server)
        } else {
            Ended::Early(early(cause))
        }
    }

    /// Moves client body bytes into the server's codec, within its
    /// windows; releases what it took to the client.
    fn push_body(&mut self) {
        let (end, trailers) = {
            let mut sh = self.cx.sh.borrow_mut();
            let Some(s) = sh.stream(self.id) else {
                self.req_done = true;
                return;
            };
            if self.pend.is_empty() {
                std::mem::swap(&mut s.body, &mut self.pend);
            }
            let end = s.end && s.body.is_empty();
            (end, if end { s.trailers.take() } else { None })
        };
        let ends_here = end && trailers.is_none();
        let taken = self
            .codec
            .send_data(self.sid, &self.pend, ends_here, &mut self.out)
            .unwrap_or(0);
        if taken > 0 {
            self.pend.drain(..taken);
            self.sent += taken as u64;
            self.cx.with(|c, o| c.release(self.id, taken, o));
        }
        if end && self.pend.is_empty() {
            if let Some(t) = trailers {
                let _ = self.codec.send_trailers(self.sid, &t, &[], &mut self.out);
                msg::give(t);
            }
            self.req_done = true;
        } else if let Some(t) = trailers {
            // Not all sent yet: keep the trailers for the next pass.
            if let Some(s) = self.cx.sh.borrow_mut().stream(self.id) {
                s.trailers = Some(t);
            }
        }
    }

    /// Feeds what the server sent to the codec and relays our stream's
    /// events. `Some`: the exchange ended.
    async fn on_input(
        &mut self,
        rbuf: &mut IoBuf,
        req: &mut Head,
        rl: &mut ReqLog,
        st: &mut TxnState,
    ) -> Option<Ended> {
        loop {
            let r = self.codec.recv(rbuf.filled_mut(), &mut self.out);
            let (consumed, event) = match r {
                Err(_) => return Some(self.failed(Cause::BadResponse)),
                Ok(Recv {
                    consumed: 0,
                    event: None,
                }) => return None,
                Ok(Recv { consumed, event }) => (consumed, event),
            };
            let ended = match event {
                Some(e) => self.on_event(e, req, rl, st).await,
                None => None,
            };
            rbuf.consume(consumed);
            if ended.is_some() {
                return ended;
            }
        }
    }

    async fn on_event(
        &mut self,
        e: Event<'_>,
        req: &mut Head,
        rl: &mut ReqLog,
        st: &mut TxnState,
    ) -> Option<Ended> {
        match e {
            Event::Head {
                stream,
                mut head,
                end_stream,
            } if stream == self.sid => {
                let status = head.view(&[]).status();
                if status < 200 {
                    msg::give(head);
                    return None;
                }
                self.got_head = true;
                rl.status = Some(status);
                rl.response_done = Some(tokio::time::Instant::now());
                if let Err(l) = super::rules::response_rules(self.cx, &mut head, &[], req, st, rl) {
                    msg::give(head);
                    self.cx
                        .ctx
                        .front
                        .counters
                        .inc(fairlead_backend::counters::C::Dresp);
                    rl.end(Who::Proxy, Phase::Headers);
                    if let crate::process::Local::Send { bytes, status, .. } = l {
                        rl.status = Some(status);
                        let _ =
                            super::resp::send_h1_bytes(self.cx, self.id, self.sig, &bytes).await;
                    }
                    return Some(Ended::Answered);
                }
                let sent = self
                    .cx
                    .with(|c, o| c.send_response(self.id, &head, &[], end_stream, o));
                msg::give(head);
                if sent.is_err() {
                    return Some(Ended::Cut(Who::Client));
                }
                end_stream.then(|| self.done())
            }
            Event::Data {
                stream,
                data,
                end_stream,
            } if stream == self.sid => {
                if send_all(self.cx, self.id, self.sig, data, end_stream)
                    .await
                    .is_err()
                {
                    return Some(Ended::Cut(Who::Client));
                }
                self.body_out += data.len() as u64;
                self.codec.release(self.sid, data.len(), &mut self.out);
                end_stream.then(|| self.done())
            }
            Event::Trailers { stream, head } if stream == self.sid => {
                let r = self.cx.with(|c, o| c.send_trailers(self.id, &head, &[], o));
                msg::give(head);
                Some(if r.is_ok() {
                    self.done()
                } else {
                    Ended::Cut(Who::Client)
                })
            }
            Event::Reset { stream, .. } if stream == self.sid => {
                Some(self.failed(Cause::TruncatedResponse))
            }
            Event::GoAway { last_stream, .. } if last_stream < self.sid => {
                Some(self.failed(Cause::EmptyResponse))
            }
            Event::Head { head, .. } | Event::Trailers { head, .. } => {
                msg::give(head);
                None
            }
            _ => None,
        }
    }

    fn done(&self) -> Ended {
        Ended::Done {
            out: self.body_out,
            sent: self.sent,
        }
    }
}
