//! `server ... proto h2` (or `ssl alpn h2`): an HTTP/2 client stream's
//! request sent as a stream on a multiplexed, pooled HTTP/2 server
//! connection ([`super::mux`]).
//!
//! The exchange is one loop over its server stream: the request head,
//! the body from the client stream's queue within the server's windows
//! (each byte released to the client once taken by the server's codec),
//! the response head (after the response rules), DATA relayed within the
//! client's window and only then released to the server's, trailers.
//! Waiting for the client's window stops taking the server's data: the
//! server's window closes, nothing buffers. A stream the server did not
//! process (REFUSED_STREAM, beyond its GOAWAY, or a connection lost
//! before the request left) is opened again elsewhere, up to 3 times,
//! while no body byte was consumed.

use super::conn::{ConnCx, Signals};
use super::mux::{self, Got, Lease, Route};
use super::resp::send_all;
use crate::logging::ReqLog;
use crate::process::TxnState;
use fairlead_backend::{Cause, ProxyError};
use fairlead_http::msg::{self, Head};
use fairlead_log::{Phase, Who};
use fairlead_net::io::with_timeout;
use fairlead_net::pool;
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

/// Immediate replays of a stream the server did not process.
const REPLAYS: u32 = 3;

/// The exchange's state.
struct Up<'a> {
    cx: &'a ConnCx,
    id: u32,
    sig: &'a Signals,
    timeout: Option<Duration>,
    /// Request body taken from the client stream, not yet taken by the
    /// server's codec.
    pend: Vec<u8>,
    req_done: bool,
    /// Trailers went to the server (the request cannot be replayed).
    trailers_sent: bool,
    got_head: bool,
    body_out: u64,
    sent: u64,
}

/// How one try on a server stream ended.
enum Try {
    Ended(Ended),
    /// Not processed by the server: may be opened again.
    Refused,
}

/// Runs one request as a stream to an HTTP/2 server: on `lease`, else
/// on a pooled or new connection of `route`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    cx: &ConnCx,
    id: u32,
    sig: &Signals,
    route: &Route,
    lease: Lease,
    head: &mut Head,
    end: bool,
    rl: &mut ReqLog,
    st: &mut TxnState,
) -> Ended {
    let mut up = Up {
        cx,
        id,
        sig,
        timeout: route.timeout,
        pend: Vec::new(),
        req_done: end,
        trailers_sent: false,
        got_head: false,
        body_out: 0,
        sent: 0,
    };
    let mut lease = Some(lease);
    let mut tries = 0;
    let r = loop {
        let stream = match mux::open_stream(route, lease.take(), head, &[], end).await {
            Ok(s) => s,
            Err(e) => break Ended::Early(e),
        };
        match up.drive(stream, head, rl, st).await {
            Try::Ended(e) => break e,
            Try::Refused if tries < REPLAYS && up.sent == 0 && !up.trailers_sent => {
                tries += 1;
                up.req_done = end;
            }
            Try::Refused => break Ended::Early(early(Cause::EmptyResponse)),
        }
    };
    if up.pend.capacity() > 0 {
        pool::give_out(std::mem::take(&mut up.pend));
    }
    r
}

fn early(cause: Cause) -> ProxyError {
    ProxyError::new(cause, Phase::Headers, false)
}

impl Up<'_> {
    async fn drive(
        &mut self,
        mut stream: mux::Stream,
        req: &mut Head,
        rl: &mut ReqLog,
        st: &mut TxnState,
    ) -> Try {
        loop {
            if !self.req_done {
                self.push_body(&stream);
            }
            while let Some(got) = stream.next() {
                if let Some(t) = self.on_input(got, &stream, req, rl, st).await {
                    if matches!(t, Try::Ended(Ended::Done { .. })) {
                        stream.finish();
                    }
                    return t;
                }
            }
            let wait_body = !self.req_done && self.pend.is_empty();
            tokio::select! {
                r = with_timeout(self.timeout, "server timeout", async {
                    stream.changed().await;
                    Ok(())
                }) => if r.is_err() {
                    return Try::Ended(self.failed(Cause::ResponseTimeout));
                },
                _ = self.sig.body.notified(), if wait_body => {}
            }
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
    fn push_body(&mut self, stream: &mux::Stream) {
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
        let taken = stream.send_data(&self.pend, ends_here).unwrap_or(0);
        if taken > 0 {
            self.pend.drain(..taken);
            self.sent += taken as u64;
            self.cx.with(|c, o| c.release(self.id, taken, o));
        }
        if end && self.pend.is_empty() {
            if let Some(t) = trailers {
                let _ = stream.send_trailers(&t);
                self.trailers_sent = true;
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

    /// Relays one input of the server stream. `Some`: the try ended.
    async fn on_input(
        &mut self,
        got: Got,
        stream: &mux::Stream,
        req: &mut Head,
        rl: &mut ReqLog,
        st: &mut TxnState,
    ) -> Option<Try> {
        match got {
            Got::Head(mut head, end_stream) => {
                let status = head.view(&[]).status();
                self.got_head = true;
                rl.status = Some(status);
                rl.response_done = Some(tokio::time::Instant::now());
                let rules = super::rules::response_rules(self.cx, &mut head, &[], req, st, rl);
                if let Some(srv) = rl.server.clone() {
                    crate::process::stick_commit(&mut st.fx, &srv);
                }
                if let Err(l) = rules {
                    msg::give(head);
                    self.cx
                        .ctx
                        .front
                        .counters
                        .inc(fairlead_backend::counters::C::Dresp);
                    rl.end(Who::Proxy, Phase::Headers);
                    if let crate::process::Local::Send { bytes, status, .. } = l {
                        rl.status = Some(status);
                        let bytes = super::rules::after_response_reply(self.cx, bytes, req, st, rl);
                        let _ =
                            super::resp::send_h1_bytes(self.cx, self.id, self.sig, &bytes).await;
                    }
                    return Some(Try::Ended(Ended::Answered));
                }
                let sent = self
                    .cx
                    .with(|c, o| c.send_response(self.id, &head, &[], end_stream, o));
                msg::give(head);
                if sent.is_err() {
                    return Some(Try::Ended(Ended::Cut(Who::Client)));
                }
                end_stream.then(|| Try::Ended(self.done()))
            }
            Got::Data(data, end_stream) => {
                let r = send_all(self.cx, self.id, self.sig, &data, end_stream).await;
                if r.is_err() {
                    return Some(Try::Ended(Ended::Cut(Who::Client)));
                }
                self.body_out += data.len() as u64;
                stream.release(data.len());
                end_stream.then(|| Try::Ended(self.done()))
            }
            Got::Trailers(head) => {
                let r = self.cx.with(|c, o| c.send_trailers(self.id, &head, &[], o));
                msg::give(head);
                Some(Try::Ended(if r.is_ok() {
                    self.done()
                } else {
                    Ended::Cut(Who::Client)
                }))
            }
            Got::Gone { retryable } if retryable && !self.got_head => Some(Try::Refused),
            Got::Gone { .. } => Some(Try::Ended(self.failed(Cause::EmptyResponse))),
        }
    }

    fn done(&self) -> Ended {
        Ended::Done {
            out: self.body_out,
            sent: self.sent,
        }
    }
}
