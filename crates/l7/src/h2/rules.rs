//! The response rules (`http-response` of the backend then the frontend,
//! then `http-after-response`) on an HTTP/2 stream's response, with the
//! request model kept from the process phase.

use super::conn::ConnCx;
use crate::logging::ReqLog;
use crate::process::{backend, conn_facts, Local, TxnState};
use crate::txn::{HeadBuf, HttpTxn};
use fairlead_http::msg::Head;

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
    if !crate::local::has_response_work(secs) {
        return Ok(());
    }
    let be = backend(&ctx, rl.backend);
    let tls = cx.client.tls_info_ref();
    let facts = conn_facts(&ctx, cx.peer, &cx.client, tls.as_deref());
    let nb = |_: Option<&str>| -> Option<i64> { None };
    let server = rl.server.as_ref().map(|s| s.conf.name.as_str());
    let server_id = rl.server.as_ref().map(|s| i64::from(s.conf.puid));
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
    crate::local::run_response_rules(&ctx, rl.backend, &mut tx)
}

/// `http-after-response` on a response the proxy made for a stream
/// (HTTP/1 text, as the rules and error pages make them), as on HTTP/1:
/// a rule's answer while processing the request runs the frontend's
/// rules, and the backend's when the backend's rules answered.
pub(crate) fn after_local(
    cx: &ConnCx,
    bytes: Vec<u8>,
    req: &mut Head,
    st: &mut TxnState,
    rl: &ReqLog,
) -> Vec<u8> {
    let ctx = cx.ctx.clone();
    let secs = match st.fx.backend_stage {
        Some(be) => crate::local::sections(&ctx, be),
        None => [None, Some(&ctx.front.routes.fe_rules)],
    };
    after_with(cx, bytes, secs, req, st, rl)
}

/// `http-after-response` on the reply of a response rule (`http-response
/// deny`...): the backend's and the frontend's rules, as HAProxy does.
pub(crate) fn after_response_reply(
    cx: &ConnCx,
    bytes: Vec<u8>,
    req: &mut Head,
    st: &mut TxnState,
    rl: &ReqLog,
) -> Vec<u8> {
    let ctx = cx.ctx.clone();
    let secs = crate::local::sections(&ctx, rl.backend);
    after_with(cx, bytes, secs, req, st, rl)
}

/// Runs the `http-after-response` rules of `secs` on a reply made for a
/// stream.
fn after_with(
    cx: &ConnCx,
    bytes: Vec<u8>,
    secs: [Option<&std::sync::Arc<fairlead_rules::proxy::ProxyRules>>; 2],
    req: &mut Head,
    st: &mut TxnState,
    rl: &ReqLog,
) -> Vec<u8> {
    let tls = cx.client.tls_info_ref();
    let facts = conn_facts(&cx.ctx, cx.peer, &cx.client, tls.as_deref());
    let req = HeadBuf {
        head: req,
        buf: &[],
    };
    crate::local::after_response_rules(&cx.ctx, &facts, bytes, secs, req, st, rl)
}

/// `http-after-response` on an error the proxy answers for a stream
/// (503 without a server, 502, 504...): the backend's and the frontend's
/// rules, without the request's variables (as on HTTP/1).
pub(crate) fn after_error(cx: &ConnCx, bytes: Vec<u8>, rl: &ReqLog) -> Vec<u8> {
    let ctx = cx.ctx.clone();
    let secs = crate::local::sections(&ctx, rl.backend);
    let tls = cx.client.tls_info_ref();
    let facts = conn_facts(&ctx, cx.peer, &cx.client, tls.as_deref());
    let mut head = fairlead_http::msg::take();
    let mut st = TxnState::default();
    let req = HeadBuf {
        head: &mut head,
        buf: &[],
    };
    let out = crate::local::after_response_rules(&ctx, &facts, bytes, secs, req, &mut st, rl);
    fairlead_http::msg::give(head);
    out
}
