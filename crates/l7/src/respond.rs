//! Phases 5 and 6 of the session: relay the response (after the
//! response rules) and decide what each side keeps, or switch to a tunnel
//! on `101 Switching Protocols`.

use crate::body::{self, BodyError, Framer, Out};
use crate::logging::ReqLog;
use crate::persist::{self, Persist};
use crate::session::{park, Attached, Outcome, Session};
use crate::splice::BodySplice;
use fairlead_backend::counters::C;
use fairlead_backend::ServerSlot;
use fairlead_config::{HttpConnMode, HttpReuse};
use fairlead_http::{BodyKind, ConnHeader, RequestHead, ResponseHead};
use fairlead_l4::TunnelSplice;
use fairlead_log::{Phase, Who};
use fairlead_net::{pool, IoBuf};

impl Session {
    /// Phases 5 and 6: relay the response and decide what to keep.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn respond(
        &mut self,
        head: &RequestHead,
        conn: Attached,
        slot: ServerSlot,
        resp: ResponseHead,
        mut sbuf: IoBuf,
        request_done: bool,
        persist: Persist,
        mut model: Option<&mut crate::local::Model>,
        rl: &mut ReqLog,
    ) -> Option<Outcome> {
        rl.status = Some(resp.status);
        let ctx = self.ctx.clone();
        let ct = ctx.front.timeouts.client;
        let be = crate::process::backend(&ctx, rl.backend);
        let bt = &be.options.timeouts;
        if resp.status == 101 && head.upgrade {
            if let Some(m) = model {
                crate::process::stick_commit(&mut m.st.fx, slot.server());
            }
            return self.upgrade(conn, slot, sbuf, bt).await;
        }
        // An HTTP/1.0 client cannot take chunked encoding: it gets the bare
        // data, delimited by the connection's close (as HAProxy does).
        let unchunk = resp.body == BodyKind::Chunked && head.minor_version == 0;
        let client_keep = head.keep_alive
            && !unchunk
            && request_done
            && self.eff.conn_mode != HttpConnMode::Close
            && resp.body != BodyKind::CloseDelimited
            && !self.stopping();
        let conn_hdr = if !client_keep {
            ConnHeader::Close
        } else if head.minor_version == 0 {
            ConnHeader::KeepAlive
        } else {
            ConnHeader::None
        };
        let mut out = pool::take_out();
        match model.as_deref_mut().filter(|m| m.has_response_rules()) {
            Some(m) => {
                let rules = self.response_rules(m, &resp, sbuf.filled(), rl);
                crate::process::stick_commit(&mut m.st.fx, slot.server());
                if let Err(local) = rules {
                    pool::give_out(out);
                    let _ = self.send_local_bytes(local, m, rl).await;
                    return None;
                }
                if unchunk {
                    m.drop_transfer_encoding(sbuf.filled());
                }
                m.write_response(sbuf.filled(), conn_hdr, &mut out);
            }
            None if unchunk => fairlead_http::write_response_head_unchunked(
                sbuf.filled(),
                &resp,
                conn_hdr,
                &mut out,
            ),
            None => fairlead_http::write_response_head(sbuf.filled(), &resp, conn_hdr, &mut out),
        }
        if let Some(m) = model {
            // Without response rules, the request's stores (committed
            // above otherwise; a second commit finds nothing pending).
            crate::process::stick_commit(&mut m.st.fx, slot.server());
        }
        if let Some(c) = &be.options.cookie {
            persist::edit_response(c, persist, slot.server(), &mut out);
        }
        sbuf.consume(resp.head_len);
        // Send the head together with the body bytes already received.
        let to = if unchunk { Out::Raw } else { Out::Chunked };
        let mut framer = Framer::to(resp.body, to);
        let first = match framer.frame(sbuf.filled()) {
            Ok(f) => f,
            Err(_) => {
                pool::give_out(out);
                return None;
            }
        };
        let srv = slot.server().clone();
        let (fc, bc, sc) = (&ctx.front.counters, &be.counters, &srv.metrics.counters);
        for c in [fc, bc, sc] {
            c.status(resp.status);
        }
        let head_bytes = out.len() as u64;
        // Closing after this response: its last bytes are held with
        // `MSG_MORE` and the FIN sent right after them pushes them out,
        // data and FIN in one segment (HAProxy sends them in two).
        let closing = !client_keep;
        let more = framer.more_due() || (closing && framer.is_done());
        let wrote = self
            .client
            .write_all2_more(&out, first.bytes(sbuf.filled()), ct, more)
            .await;
        let first_sent = first.bytes(sbuf.filled()).len() as u64;
        sbuf.consume(first.used);
        first.release();
        pool::give_out(out);
        if wrote.is_err() {
            for c in [fc, bc, sc] {
                c.inc(C::CliAbrt);
            }
            return None;
        }
        let no_delay = ctx.front.http_no_delay || be.options.http_no_delay;
        let mode = TunnelSplice::from_options(ctx.front.splice.or(be.options.splice)).response;
        let mut sp = BodySplice::new(mode, &conn.stream, &self.client);
        let body_res = body::forward(
            &mut framer,
            (&conn.stream, &mut sbuf),
            &self.client,
            (bt.server, ct),
            (no_delay, closing),
            &mut sp,
        )
        .await;
        if closing && body_res.is_ok() {
            // The FIN leaves now, before the server connection is closed.
            self.client.shutdown_write();
        }
        drop(slot);
        let sent = head_bytes + first_sent + body_res.as_ref().map_or(0, |m| m.written);
        rl.bytes_out = sent;
        for c in [fc, bc, sc] {
            c.add(C::Bout, sent);
        }
        if let Err(e) = body_res {
            // Who cut the transfer: reading the server or writing the client.
            let who = match e {
                BodyError::Dest(_) => C::CliAbrt,
                _ => C::SrvAbrt,
            };
            rl.end(
                if who == C::CliAbrt {
                    Who::Client
                } else {
                    Who::Server
                },
                Phase::Data,
            );
            for c in [fc, bc, sc] {
                c.inc(who);
            }
            return None;
        }
        let server_keep = resp.keep_alive
            && request_done
            && sbuf.is_empty()
            && self.eff.conn_mode == HttpConnMode::KeepAlive;
        if server_keep {
            if self.eff.reuse == HttpReuse::Never {
                // Private to this client until it leaves.
                self.attached = Some(Box::new(conn));
            } else {
                // Shared: an idle client holds no server connection.
                park(conn, self.eff);
            }
        }
        Some(Outcome {
            client_keep,
            server_keep,
        })
    }

    /// `101 Switching Protocols`: relay the head and whatever each side
    /// already sent, then tunnel under `timeout tunnel`.
    async fn upgrade(
        &mut self,
        conn: Attached,
        slot: ServerSlot,
        mut sbuf: IoBuf,
        bt: &fairlead_config::Timeouts,
    ) -> Option<Outcome> {
        let ctx = self.ctx.clone();
        let ct = ctx.front.timeouts.client;
        if self.client.write_all(sbuf.filled(), ct).await.is_err() {
            return None;
        }
        sbuf.consume(sbuf.len());
        if !self.cbuf.is_empty() {
            if conn
                .stream
                .write_all(self.cbuf.filled(), bt.server)
                .await
                .is_err()
            {
                return None;
            }
            let n = self.cbuf.len();
            self.cbuf.consume(n);
        }
        self.cbuf.release_if_empty();
        drop(sbuf);
        let t = fairlead_l4::TunnelTimeouts::new(
            self.ctx.front.timeouts.client,
            bt.server,
            bt.tunnel,
            self.ctx.front.timeouts.client_fin,
            bt.server_fin,
        );
        fairlead_l4::tunnel(&self.client, &conn.stream, &t).await;
        drop(slot);
        None
    }
}
