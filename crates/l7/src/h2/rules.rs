//! The response rules (`http-response` of the backend then the frontend,
//! then `http-after-response`) on an HTTP/2 stream's response, with the
//! request model kept from the process phase.

use super::conn::ConnCx;
use crate::logging::ReqLog;
use crate::process::{self, backend, conn_facts, Local, TxnState};
use crate::txn::{HeadBuf, HttpTxn};
use fairlead_http::msg::Head;
use fairlead_rules::exec::{run, Verdict};

/// Runs the response rules on `res` (read from `sbuf`). `Err`: a rule
/// answered instead (the server's response is dropped).
pub(crate) fn response_rules(
    cx: &ConnCx,
    res: &mut Head,
    sbuf: &[u8],
    req: &mut Head,
    st: &mut TxnState,
    rl: &ReqLog,
) -> Result<(), Local> {
    let ctx = cx.ctx.clone();
    let secs = crate::local::sections(&ctx, rl.backend);
    let fe = &ctx.front.routes.fe_rules;
    let any = secs
        .iter()
        .flatten()
        .any(|r| !r.http_response.is_empty() || !r.http_after_response.is_empty())
        || !fe.res_captures.is_empty();
    if !any {
        return Ok(());
    }
    let be = backend(&ctx, rl.backend);
    let tls = cx.client.tls_info_ref();
    let facts = conn_facts(&ctx, cx.peer, &cx.client, tls.as_deref());
    let nb = |_: Option<&str>| -> Option<i64> { None };
    let server = rl
        .server
        .and_then(|i| be.servers.get(i))
        .map(|s| s.conf.name.as_str());
    let server_id = rl
        .server
        .and_then(|i| be.servers.get(i))
        .map(|s| i64::from(s.conf.puid));
    let mut tx = HttpTxn {
        req: HeadBuf {
            head: req,
            buf: &[],
        },
        res: Some(HeadBuf {
            head: res,
            buf: sbuf,
        }),
        conn: &facts,
        vars: &mut st.vars,
        fx: &mut st.fx,
        backend: Some(&be.name),
        server,
        server_id,
        nbsrv: &nb,
        req_body: None,
        uid_ctx: None,
    };
    if !fe.res_captures.is_empty() {
        if let Some(r) = &tx.res {
            let v = r.head.view(r.buf);
            let caps = fe
                .res_captures
                .iter()
                .map(|c| {
                    v.full_values(c.name.as_bytes())
                        .next()
                        .map(|x| x[..x.len().min(c.len)].to_vec())
                })
                .collect();
            tx.fx.res_captures = caps;
        }
    }
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
