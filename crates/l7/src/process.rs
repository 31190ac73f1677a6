//! The **process** phase (HAProxy's HTTP_PROCESS_FE → SWITCHING_RULES →
//! HTTP_PROCESS_BE → SRV_RULES): the frontend's `http-request` rules and
//! `redirect`s, `monitor-uri`, content switching (`use_backend`), the
//! backend's rules, then `use-server`. Everything here is synchronous: it
//! runs on the parsed head, and its outcome is either a backend (and maybe
//! a server) to forward to, or a response the proxy makes itself.
//!
//! The response side (`http-response` backend then frontend, then
//! `http-after-response`) is in [`respond_rules`].

use crate::txn::{ConnFacts, Effects, HeadBuf, HttpTxn, Vars};
use crate::{HttpCtx, Routes};
use fairlead_backend::Backend;
use fairlead_http::msg::Head;
use fairlead_rules::acl::Tri;
use fairlead_rules::answer::Answer;
use fairlead_rules::exec::{run_from, Verdict};
use fairlead_rules::proxy::{BackendTarget, ProxyRules};
use fairlead_rules::resolve::Resolved;
use fairlead_rules::txn::TlsFacts;
use std::sync::Arc;

/// A response the proxy makes itself, and how the connection ends.
pub(crate) enum Local {
    /// Send these bytes (a whole response). `tarpit`: wait `timeout
    /// tarpit` first.
    Send {
        bytes: Vec<u8>,
        status: u16,
        close: bool,
        tarpit: bool,
        /// A `deny`/`tarpit`/error: counted as a denied request.
        denied: bool,
    },
    /// `reject`: close without a response.
    Reject,
    /// `silent-drop`: close without a response or a FIN the client sees
    /// (reset).
    SilentDrop,
}

/// The outcome of the process phase.
pub(crate) enum Decision {
    /// Forward to this backend (`None`: the default one) and, with
    /// `use-server`, preferably this server.
    Forward {
        be: Option<usize>,
        server: Option<fairlead_backend::ServerId>,
    },
    Local(Local),
    /// `do-resolve`: resolve this name into its variable (see
    /// [`crate::resolve`]), then process the request again; the rules go
    /// on after the action.
    Resolve(Resolved),
}

/// Per-transaction rule state, kept from the request to the response.
#[derive(Default)]
pub(crate) struct TxnState {
    pub vars: Vars,
    pub fx: Effects,
    /// Where the request rules go on after a `do-resolve`.
    pub resume: Option<Resume>,
}

/// The request rule after a `do-resolve` action: in the frontend's or
/// the backend's rules, in its `tcp-request content` or `http-request`
/// rules, and its index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resume {
    be_stage: bool,
    at: RulePos,
}

/// A place in one section's request rules: its `tcp-request content`
/// rules (`content`), then its `http-request` rules, from index `next`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RulePos {
    content: bool,
    next: usize,
}

/// The first of a section's request rules.
const FIRST_RULE: RulePos = RulePos {
    content: true,
    next: 0,
};

/// The server a `stick match` rule designated (by its `id`), when the
/// backend has it.
pub(crate) fn stick_server(be: &Backend, fx: &Effects) -> Option<fairlead_backend::ServerId> {
    let puid = u32::try_from(fx.stick.matched?).ok()?;
    let set = be.servers();
    let id = set
        .as_slice()
        .iter()
        .find(|s| s.conf.puid == puid)
        .map(|s| s.conf.id);
    id
}

/// Stores the server that answered in the entries the stick rules
/// prepared (`stick on`, `store-request`, `store-response`).
pub(crate) fn stick_commit(fx: &mut Effects, server: &fairlead_backend::Server) {
    if server.conf.non_stick {
        fx.stick.discard();
        return;
    }
    let addr = server.admin.addr.load().to_string();
    let now = fairlead_rules::stick::now_ms();
    fx.stick
        .commit(server.conf.puid, &server.conf.name, &addr, now);
}

/// The backend a request goes to.
pub(crate) fn backend(ctx: &HttpCtx, idx: Option<usize>) -> &Arc<Backend> {
    idx.and_then(|i| ctx.front.routes.backends.get(i))
        .unwrap_or(&ctx.front.routes.default_be)
}

/// The rules of a backend (none for the synthetic no-backend one).
fn be_rules(routes: &Routes, idx: Option<usize>) -> Option<&Arc<ProxyRules>> {
    idx.or(routes.default).and_then(|i| routes.be_rules.get(i))
}

/// Usable servers of a backend (`nbsrv`).
fn nbsrv(routes: &Routes, current: &Backend, name: Option<&str>) -> Option<i64> {
    let be = match name {
        Some(n) if n != current.name => routes.by_name.get(n).map(|&i| &*routes.backends[i])?,
        _ => current,
    };
    let (active, backup) = be.usable_counts();
    Some(if active > 0 { active } else { backup } as i64)
}

/// The error page of `status` for a request on `be`: the backend's
/// `errorfile`, the frontend's, else the built-in page.
pub(crate) fn error_page(ctx: &HttpCtx, be: Option<usize>, status: u16) -> Vec<u8> {
    let routes = &ctx.front.routes;
    let none = fairlead_rules::reply::ErrorPages::default();
    let be_pages = be_rules(routes, be).map_or(&none, |r| &r.errors);
    match fairlead_rules::reply::ErrorPages::lookup(be_pages, &routes.fe_rules.errors, status) {
        Some(r) => {
            let mut out = Vec::new();
            fairlead_rules::answer::render_static(r, &mut out);
            out
        }
        None => fairlead_http::error_response(status).to_vec(),
    }
}

/// Facts about the client connection, gathered once per request that
/// runs rules.
pub(crate) fn conn_facts<'a>(
    ctx: &'a HttpCtx,
    peer: std::net::SocketAddr,
    client: &'a fairlead_net::Conn,
    tls: Option<&'a fairlead_net::TlsInfo>,
) -> ConnFacts<'a> {
    ConnFacts {
        src: peer,
        client,
        tls: tls.map(|i| TlsFacts {
            sni: i.sni.as_deref(),
            alpn: i.alpn.as_deref(),
            protocol: Some(i.version),
            cipher: Some(i.cipher),
            resumed: i.resumed,
            c_used: i.peer_cert,
            c_verify: 0,
            c_s_dn: i.peer_subject.as_deref(),
        }),
        frontend: &ctx.front.name,
        hostname: &ctx.front.routes.hostname,
    }
}

/// Runs the request side of the rules. `close` is whether a local reply
/// must close the connection (the request has a body that was not read,
/// or the client asked for it).
pub(crate) fn process_request(
    ctx: &HttpCtx,
    facts: &ConnFacts<'_>,
    msg: &mut Head,
    buf: &[u8],
    body: Option<&[u8]>,
    st: &mut TxnState,
    close: bool,
) -> Decision {
    let routes = &ctx.front.routes;
    let fe = &routes.fe_rules;
    let resume = st.resume.take();
    let nb = |name: Option<&str>| nbsrv(routes, &ctx.front.routes.default_be, name);
    let mut tx = HttpTxn {
        req: HeadBuf { head: msg, buf },
        res: None,
        conn: facts,
        vars: &mut st.vars,
        fx: &mut st.fx,
        backend: None,
        server: None,
        server_id: None,
        nbsrv: &nb,
        req_body: body,
        uid_ctx: Some(ctx),
    };
    let d = match decide(ctx, &mut tx, close, resume) {
        Ok(d) => d,
        Err((r, at)) => {
            st.resume = Some(at);
            return Decision::Resolve(r);
        }
    };
    if let Some(u) = &fe.unique_id {
        if let Decision::Forward { .. } = d {
            // Made now if no rule used it yet, as HAProxy does when the
            // request goes to a backend; `unique-id-header` carries it.
            let id = fairlead_rules::txn::Txn::unique_id(&tx).map(<[u8]>::to_vec);
            if let (Some(h), Some(id)) = (&fe.unique_id_header, id) {
                fairlead_rules::exec::Edit::add_header(&mut tx.req, h.as_bytes(), &id);
            }
        } else if tx.fx.unique_id.get().is_none() {
            // A reply made here: HAProxy makes the id for the log line,
            // once the request's contents are gone (its samples only see
            // the connection, the variables and the names).
            let v = render_unique_id(ctx, u, &tx, &Contentless(&tx));
            let _ = tx.fx.unique_id.set(v);
        }
    }
    d
}

/// A transaction without its messages: what log-time samples see.
struct Contentless<'t, 'a>(&'t HttpTxn<'a>);

impl fairlead_rules::txn::Txn for Contentless<'_, '_> {
    fn src(&self) -> Option<std::net::SocketAddr> {
        self.0.src()
    }
    fn dst(&self) -> Option<std::net::SocketAddr> {
        self.0.dst()
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        self.0.tls()
    }
    fn proxy(&self) -> Option<fairlead_rules::txn::ProxyFacts<'_>> {
        self.0.proxy()
    }
    fn var(&self, v: &fairlead_rules::txn::VarRef) -> Option<fairlead_rules::Sample<'_>> {
        self.0.var(v)
    }
    fn frontend_name(&self) -> &str {
        self.0.frontend_name()
    }
    fn backend_name(&self) -> Option<&str> {
        self.0.backend_name()
    }
    fn hostname(&self) -> &str {
        self.0.hostname()
    }
}

/// A `do-resolve` to run before the rules go on at the [`Resume`] point.
type Pause = (Resolved, Resume);

/// The request rules' decision (see [`process_request`]), from the start
/// or from where a `do-resolve` paused them.
fn decide<'a>(
    ctx: &'a HttpCtx,
    tx: &mut HttpTxn<'a>,
    close: bool,
    resume: Option<Resume>,
) -> Result<Decision, Pause> {
    let routes = &ctx.front.routes;
    let fe = &routes.fe_rules;
    let (fe_from, be_from) = match resume {
        None => (Some(FIRST_RULE), FIRST_RULE),
        Some(r) if !r.be_stage => (Some(r.at), FIRST_RULE),
        Some(r) => (None, r.at),
    };
    if fe_from == Some(FIRST_RULE) {
        capture_headers(fe, tx);
        if let Some(d) = monitor(fe, tx, close) {
            return Ok(d);
        }
    }
    if let Some(from) = fe_from {
        if let Some(d) = section_rules(ctx, fe, None, tx, close, from)? {
            return Ok(d);
        }
    }
    let be_idx = switch(routes, tx);
    let be = backend(ctx, be_idx);
    tx.backend = Some(&be.name);
    let own = be_rules(routes, be_idx);
    if let Some(br) = own.filter(|r| !Arc::ptr_eq(r, fe)) {
        if let Some(d) = section_rules(ctx, br, be_idx, tx, close, be_from)? {
            tx.fx.backend_stage = Some(be_idx);
            return Ok(d);
        }
    }
    tx.fx.persist = own.and_then(|br| br.persist_mode(&*tx));
    let server = own.and_then(|br| {
        br.use_server.iter().find_map(|r| {
            (r.check(&br.acls, tx) == Tri::Pass)
                .then(|| be.server_by_name(&r.action).map(|s| s.conf.id))
                .flatten()
        })
    });
    if let Some(br) = own.filter(|r| !r.stick_req.is_empty()) {
        let mut st = std::mem::take(&mut tx.fx.stick);
        let now = fairlead_rules::stick::now_ms();
        st.run_request(&br.stick_req, &br.acls, &*tx, server.is_some(), now);
        tx.fx.stick = st;
    }
    capture_cookie(fe, tx);
    Ok(Decision::Forward { be: be_idx, server })
}

/// Renders the frontend's `unique-id-format` for this transaction: its
/// `%` variables from the request and the connection, its samples from
/// the rule engine against `from` (the transaction itself, or what is
/// left of it at log time).
pub(crate) fn render_unique_id(
    ctx: &HttpCtx,
    u: &fairlead_rules::uniqueid::UniqueId,
    tx: &HttpTxn<'_>,
    from: &dyn fairlead_rules::txn::Txn,
) -> Vec<u8> {
    use fairlead_rules::txn::{Msg, Txn};
    let values = u.sample_values(from);
    let samples: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    let mut line = Vec::with_capacity(64);
    line.extend_from_slice(tx.req.method());
    line.push(b' ');
    line.extend_from_slice(tx.req.target());
    line.extend_from_slice(match tx.req.version() {
        10 => b" HTTP/1.0",
        20 => b" HTTP/2.0",
        _ => b" HTTP/1.1",
    });
    let tls = tx.conn.tls;
    // From 0, as HAProxy's `%rt` (this request is already counted).
    let counter = ctx
        .front
        .counters
        .get(fairlead_backend::counters::C::ReqTot)
        .saturating_sub(1);
    let rec = fairlead_log::LogRecord {
        client: tx.src(),
        frontend_addr: tx.dst(),
        accept_date: std::time::SystemTime::now(),
        frontend: &ctx.front.name,
        tls: tls.is_some(),
        backend: tx.backend.unwrap_or(&ctx.front.name),
        request_line: Some(&line),
        request_counter: counter,
        log_counter: counter,
        pid: std::process::id(),
        hostname: &ctx.front.routes.hostname,
        ssl_version: tls.and_then(|t| t.protocol),
        ssl_cipher: tls.and_then(|t| t.cipher),
        ssl_sni: tls.and_then(|t| t.sni),
        http: true,
        samples: &samples,
        ..Default::default()
    };
    let mut out = Vec::with_capacity(64);
    u.format.render(&rec, &mut out);
    out
}

/// `capture cookie <name> len <n>` (the frontend's): the first request
/// cookie whose name starts with `name`, as `name=value`, cut to `n`
/// bytes (`%CC`). As in HAProxy, after the rules, on forwarded requests.
fn capture_cookie(fe: &ProxyRules, tx: &mut HttpTxn<'_>) {
    let Some(c) = &fe.cookie_capture else { return };
    let v = tx.req.head.view(tx.req.buf);
    let found = v
        .full_values(b"cookie")
        .flat_map(|h| h.split(|&b| b == b';'))
        .find_map(|p| capture_match(p, c));
    tx.fx.cookie_req = found;
}

/// `name=value` of one cookie (spaces around it trimmed) when its name
/// starts with the captured name, cut to the capture's length.
pub(crate) fn capture_match(
    part: &[u8],
    c: &fairlead_rules::proxy::CookieCapture,
) -> Option<Vec<u8>> {
    let t = part.trim_ascii();
    (t.len() >= c.name.len() && t.starts_with(c.name.as_bytes()))
        .then(|| t[..t.len().min(c.len)].to_vec())
}

/// `capture request header` declarations fill the first capture slots.
fn capture_headers(fe: &ProxyRules, tx: &mut HttpTxn<'_>) {
    if fe.req_captures.is_empty() {
        return;
    }
    let v = tx.req.head.view(tx.req.buf);
    let caps: Vec<Option<Vec<u8>>> = fe
        .req_captures
        .iter()
        .map(|c| {
            v.full_values(c.name.as_bytes())
                .next()
                .map(|x| x[..x.len().min(c.len)].to_vec())
        })
        .collect();
    tx.fx.req_captures = caps;
}

/// `monitor-uri`: 200, or 503 when a `monitor fail` condition holds.
fn monitor(fe: &ProxyRules, tx: &HttpTxn<'_>, close: bool) -> Option<Decision> {
    let uri = fe.monitor_uri.as_deref()?;
    if tx.req.head.view(tx.req.buf).target() != uri.as_bytes() {
        return None;
    }
    let failing = fe
        .monitor_fail
        .iter()
        .any(|c| c.eval(&fe.acls, tx) == Tri::Pass);
    let status = if failing { 503 } else { 200 };
    let bytes = if failing {
        fairlead_http::error_response(503).to_vec()
    } else {
        b"HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n".to_vec()
    };
    Some(Decision::Local(Local::Send {
        bytes,
        status,
        close: close || failing,
        tarpit: false,
        denied: false,
    }))
}

/// One section's `tcp-request content` and `http-request` rules from
/// `from` on, then its `redirect` rules.
fn section_rules(
    ctx: &HttpCtx,
    rules: &ProxyRules,
    be: Option<usize>,
    tx: &mut HttpTxn<'_>,
    close: bool,
    from: RulePos,
) -> Result<Option<Decision>, Pause> {
    let fe_stage = std::ptr::eq(rules, &*ctx.front.routes.fe_rules);
    // `tcp-request content` rules of an HTTP proxy run once per request,
    // before its `http-request` rules, on the parsed request.
    // `auth` without a realm uses the section's name, as HAProxy.
    let realm = if std::ptr::eq(rules, &*ctx.front.routes.fe_rules) {
        &*ctx.front.name
    } else {
        backend(ctx, be).name.as_str()
    };
    let pause = |r: Resolved, content: bool, at: usize| -> Result<Option<Decision>, Pause> {
        let at = RulePos {
            content,
            next: at.saturating_add(1),
        };
        let be_stage = !fe_stage;
        Err((r, Resume { be_stage, at }))
    };
    if from.content {
        // `do-resolve` waits for its answer only with an inspect-delay
        // (HAProxy 2.6: without one the action cannot yield and leaves
        // its variable unset).
        let waits = rules.inspect_delay.is_some_and(|d| !d.is_zero());
        let mut next = from.next;
        loop {
            match run_from(&rules.tcp_content, &rules.acls, tx, false, next) {
                (Verdict::Resolve(r), at) if waits => return pause(r, true, at),
                (Verdict::Resolve(_), at) => next = at.saturating_add(1),
                (v @ (Verdict::Reject | Verdict::SilentDrop | Verdict::Close), _) => {
                    return Ok(local_of(ctx, be, realm, v, tx, close).map(Decision::Local));
                }
                _ => break,
            }
        }
        if fe_stage {
            // The request counts on the stick counters once the
            // frontend's content rules tracked theirs (HAProxy's
            // http_wait_for_request).
            tx.fx.count_request();
        }
    }
    let http_from = if from.content { 0 } else { from.next };
    let (v, at) = run_from(&rules.http_request, &rules.acls, tx, false, http_from);
    if let Verdict::Resolve(r) = v {
        return pause(r, false, at);
    }
    if let Some(l) = local_of(ctx, be, realm, v, tx, close) {
        return Ok(Some(Decision::Local(l)));
    }
    for r in &rules.redirects {
        if r.check(&rules.acls, tx) != Tri::Pass {
            continue;
        }
        if let Some(loc) = r.action.location(tx) {
            return Ok(Some(Decision::Local(Local::Send {
                bytes: r.action.response(&loc, close),
                status: r.action.code,
                close,
                tarpit: false,
                denied: false,
            })));
        }
    }
    Ok(None)
}

/// Turns a rule set's verdict into a local response (`None`: go on).
pub(crate) fn local_of(
    ctx: &HttpCtx,
    be: Option<usize>,
    realm: &str,
    v: Verdict<'_>,
    tx: &HttpTxn<'_>,
    close: bool,
) -> Option<Local> {
    let answer = |a: &Answer, close: bool| -> Vec<u8> {
        if a.is_default {
            error_page(ctx, be, a.status())
        } else {
            let mut out = Vec::new();
            a.render(tx, close, &mut out);
            out
        }
    };
    Some(match v {
        Verdict::Continue | Verdict::Allow | Verdict::Wait | Verdict::Resolve(_) => return None,
        Verdict::Deny(a) => Local::Send {
            bytes: answer(a, true),
            status: a.status(),
            close: true,
            tarpit: false,
            denied: true,
        },
        Verdict::Tarpit(a) => Local::Send {
            bytes: answer(a, true),
            status: a.status(),
            close: true,
            tarpit: true,
            denied: true,
        },
        Verdict::Return(a) => Local::Send {
            bytes: answer(a, close),
            status: a.status(),
            close,
            tarpit: false,
            denied: false,
        },
        Verdict::Redirect(r, loc) => Local::Send {
            bytes: r.response(&loc, close),
            status: r.code,
            close,
            tarpit: false,
            denied: false,
        },
        Verdict::Auth(r) => Local::Send {
            bytes: auth_page(r.unwrap_or(realm)),
            status: 401,
            close,
            tarpit: false,
            denied: false,
        },
        Verdict::Reject => Local::Reject,
        Verdict::SilentDrop => Local::SilentDrop,
        Verdict::Close => Local::Reject,
        // Services other than the stats page and the exporter are refused
        // when the configuration is loaded.
        Verdict::UseService(_) => Local::Send {
            bytes: error_page(ctx, be, 503),
            status: 503,
            close: true,
            tarpit: false,
            denied: false,
        },
    })
}

/// HAProxy's 401 page with a `WWW-Authenticate` challenge.
fn auth_page(realm: &str) -> Vec<u8> {
    let body = "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n";
    format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-length: {}\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nwww-authenticate: Basic realm=\"{}\"\r\n\r\n{body}",
        body.len(),
        realm.replace('"', "")
    )
    .into_bytes()
}

/// `use_backend` rules (first match), else the default backend. A
/// dynamic name that names no backend falls back to the default.
fn switch(routes: &Routes, tx: &HttpTxn<'_>) -> Option<usize> {
    let fe = &routes.fe_rules;
    for r in &fe.use_backend {
        if r.check(&fe.acls, tx) != Tri::Pass {
            continue;
        }
        let found = match &r.action {
            BackendTarget::Name(n) => routes.by_name.get(n.as_str()).copied(),
            BackendTarget::Dynamic(f) => {
                let name = f.render_vec(tx);
                std::str::from_utf8(&name)
                    .ok()
                    .and_then(|n| routes.by_name.get(n).copied())
            }
        };
        return found.or(routes.default);
    }
    routes.default
}
