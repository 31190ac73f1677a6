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
