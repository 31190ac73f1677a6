//! The rule layer's view of an HTTP transaction: [`HttpTxn`] implements
//! `fairlead_rules`' `Txn` (what fetches read) and `Stream` (what actions
//! change) over the message model of `fairlead-http`.

use fairlead_http::msg::Head;
use fairlead_rules::action::UrlPart;
use fairlead_rules::exec::{Edit, Stream};
use fairlead_rules::txn::{Msg, TlsFacts, Txn, VarRef};
use fairlead_rules::Sample;
use std::net::{IpAddr, SocketAddr};

/// A message head and the receive buffer its text lives in.
pub(crate) struct HeadBuf<'a> {
    pub head: &'a mut Head,
    pub buf: &'a [u8],
}

impl Msg for HeadBuf<'_> {
    fn method(&self) -> &[u8] {
        self.head.view(self.buf).method()
    }
    fn target(&self) -> &[u8] {
        self.head.view(self.buf).target()
    }
    fn version(&self) -> u8 {
        self.head.view(self.buf).version()
    }
    fn status(&self) -> u16 {
        self.head.view(self.buf).status()
    }
    fn header_count(&self) -> usize {
        self.head.view(self.buf).header_count()
    }
    fn header(&self, i: usize) -> (&[u8], &[u8]) {
        self.head.view(self.buf).header(i).unwrap_or((b"", b""))
    }
}

impl Edit for HeadBuf<'_> {
    fn add_header(&mut self, name: &[u8], value: &[u8]) {
        let _ = self.head.edit(self.buf).add_header(name, value);
    }
    fn del_header(&mut self, name: &[u8]) {
        let _ = self.head.edit(self.buf).del_header(name);
    }
    fn set_header_value(&mut self, i: usize, value: &[u8]) {
        let slot = self.head.view(self.buf).headers().nth(i).map(|(s, _, _)| s);
        if let Some(slot) = slot {
            let _ = self.head.edit(self.buf).replace_field_value(slot, value);
        }
    }
    fn set_url(&mut self, part: UrlPart, value: &[u8]) {
        let mut e = self.head.edit(self.buf);
        let _ = match part {
            UrlPart::Path => e.set_path(value),
            UrlPart::Query => e.set_query(Some(value)),
            UrlPart::Method => e.set_method(value),
            UrlPart::Uri | UrlPart::PathQ => e.set_target(value),
        };
    }
    fn set_status(&mut self, code: u16, reason: Option<&[u8]>) {
        let _ = self.head.edit(self.buf).set_status(code, reason);
    }
}

pub(crate) use fairlead_rules::vars::{SessVars, Vars};

/// Facts about the connection a transaction came on.
pub(crate) struct ConnFacts<'a> {
    pub src: SocketAddr,
    /// The client connection, for the address it reached (`dst`): asked
    /// of the kernel only when a rule reads it.
    pub client: &'a fairlead_net::Conn,
    pub tls: Option<TlsFacts<'a>>,
    pub frontend: &'a str,
    pub hostname: &'a str,
}

/// What the client connection's PROXY protocol header carried.
pub(crate) fn proxy_facts(
    conn: &fairlead_net::Conn,
) -> Option<fairlead_rules::txn::ProxyFacts<'_>> {
    conn.proxy_info().map(|p| fairlead_rules::txn::ProxyFacts {
        authority: p.authority.as_deref(),
        unique_id: p.unique_id.as_deref(),
    })
}

/// What rules captured or changed besides the message.
#[derive(Default)]
pub(crate) struct Effects {
    pub src: Option<IpAddr>,
    pub req_captures: Vec<Option<Vec<u8>>>,
    pub res_captures: Vec<Option<Vec<u8>>>,
    /// `capture cookie`: the request's and the response's (`%CC`, `%CS`).
    pub cookie_req: Option<Vec<u8>>,
    pub cookie_res: Option<Vec<u8>>,
    /// The values of the `log-format` samples, once evaluated.
    pub log_samples: Option<Vec<Option<Vec<u8>>>>,
    /// Stick persistence: the server a `stick match` designated and the
    /// stores waiting for the server that answers.
    pub stick: fairlead_rules::sticking::Sticking,
    /// What a `force-persist`/`ignore-persist` rule decided.
    pub persist: Option<fairlead_rules::proxy::PersistMode>,
    /// The unique id (`unique-id-format`), once generated.
    pub unique_id: std::cell::OnceCell<Vec<u8>>,
    /// The unique id is being generated (a `%[unique-id]` inside its own
    /// format reads as absent).
    pub uid_busy: std::cell::Cell<bool>,
    /// `set-log-level`: `Some(None)` is `silent`.
    pub log_level: Option<Option<u8>>,
    /// A reply made by the backend's rules (`Some(backend)`), not the
    /// frontend's (`None`): decides whose `http-after-response` rules run.
    pub backend_stage: Option<Option<usize>>,
    /// The stick counter slots tracked by this request's rules
    /// (`tcp-request content`, `http-request`, `http-response`
    /// `track-scN`), created at the first `track-sc`; released when the
    /// request ends. Default is none.
    pub trackers: Option<fairlead_stick::Trackers>,
    /// The connection's slots (`tcp-request connection|session`
    /// `track-scN`), shared by its requests. Default is none.
    pub sess_trackers: Option<std::rc::Rc<fairlead_stick::Trackers>>,
}

impl Effects {
    /// The request's slots and the connection's, as `sc_*` fetches and
    /// counter events see them.
    pub(crate) fn levels(&self) -> fairlead_stick::Levels<'_> {
        fairlead_stick::Levels {
            stream: self.trackers.as_ref(),
            session: self.sess_trackers.as_deref(),
        }
    }

    /// One HTTP request on the stick counters (after the frontend's
    /// `tcp-request content` rules, before its `http-request` rules).
    pub(crate) fn count_request(&self) {
        if self.trackers.is_some() || self.sess_trackers.is_some() {
            self.levels()
                .on_http_request(fairlead_rules::stick::now_ms());
        }
    }

    /// The end of the request: its status counts as an error or a failure
    /// on the stick counters, then the request's slots are released.
    pub(crate) fn end_trackers(&mut self, rl: &crate::logging::ReqLog) {
        if self.trackers.is_none() && self.sess_trackers.is_none() {
            return;
        }
        let now = fairlead_rules::stick::now_ms();
        let levels = self.levels();
        if let Some(status) = rl.status {
            levels.on_response_status(status, now);
        }
        // The stream's bytes (HAProxy counts them as they flow; the
        // request ends here): from the client, and to it.
        levels.on_bytes_in(rl.bytes_in, now);
        levels.on_bytes_out(rl.bytes_out, now);
        if let Some(mut t) = self.trackers.take() {
            t.end_connection(now);
        }
        self.sess_trackers = None;
    }
}

/// The transaction as rules see it.
pub(crate) struct HttpTxn<'a> {
    pub req: HeadBuf<'a>,
    pub res: Option<HeadBuf<'a>>,
    pub conn: &'a ConnFacts<'a>,
    pub vars: &'a mut Vars,
    pub fx: &'a mut Effects,
    pub backend: Option<&'a str>,
    pub server: Option<&'a str>,
    pub server_id: Option<i64>,
    pub nbsrv: &'a dyn Fn(Option<&str>) -> Option<i64>,
    /// Slots of `http-request capture ... len` rules are numbered after
    /// the declared ones.
    pub req_body: Option<&'a [u8]>,
    /// Where the unique id's format and counters are, when it may be
    /// generated here (`None`: the `unique-id` fetch only reads an id
    /// generated before).
    pub uid_ctx: Option<&'a crate::HttpCtx>,
}

impl Txn for HttpTxn<'_> {
    fn req(&self) -> Option<&dyn Msg> {
        Some(&self.req)
    }
    fn res(&self) -> Option<&dyn Msg> {
        self.res.as_ref().map(|r| r as &dyn Msg)
    }
    fn req_body(&self) -> Option<&[u8]> {
        self.req_body
    }
    fn src(&self) -> Option<SocketAddr> {
        Some(match self.fx.src {
            Some(ip) => SocketAddr::new(ip, self.conn.src.port()),
            None => self.conn.src,
        })
    }
    fn dst(&self) -> Option<SocketAddr> {
        self.conn.client.local_addr().ok()
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        self.conn.tls
    }
    fn proxy(&self) -> Option<fairlead_rules::txn::ProxyFacts<'_>> {
        proxy_facts(self.conn.client)
    }
    fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.vars.get(v)
    }
    fn frontend_name(&self) -> &str {
        self.conn.frontend
    }
    fn backend_name(&self) -> Option<&str> {
        self.backend
    }
    fn server_name(&self) -> Option<&str> {
        self.server
    }
    fn server_id(&self) -> Option<i64> {
        self.server_id
    }
    fn nbsrv(&self, backend: Option<&str>) -> Option<i64> {
        (self.nbsrv)(backend.or(self.backend))
    }
    fn hostname(&self) -> &str {
        self.conn.hostname
    }
    fn unique_id(&self) -> Option<&[u8]> {
        if let Some(v) = self.fx.unique_id.get() {
            return Some(v);
        }
        let ctx = self.uid_ctx?;
        let u = ctx.front.routes.fe_rules.unique_id.as_ref()?;
        if self.fx.uid_busy.replace(true) {
            return None;
        }
        let v = crate::process::render_unique_id(ctx, u, self, self);
        self.fx.uid_busy.set(false);
        let _ = self.fx.unique_id.set(v);
        self.fx.unique_id.get().map(Vec::as_slice)
    }

    fn trackers(&self) -> Option<&fairlead_stick::Trackers> {
        self.fx.trackers.as_ref()
    }
    fn sess_trackers(&self) -> Option<&fairlead_stick::Trackers> {
        self.fx.sess_trackers.as_deref()
    }
}

impl Stream for HttpTxn<'_> {
    fn edit(&mut self, res: bool) -> Option<&mut dyn Edit> {
        if res {
            self.res.as_mut().map(|r| r as &mut dyn Edit)
        } else {
            Some(&mut self.req)
        }
    }
    fn trackers_mut(&mut self) -> Option<&mut fairlead_stick::Trackers> {
        Some(self.fx.trackers.get_or_insert_with(Default::default))
    }
    fn set_var(&mut self, v: &VarRef, s: Sample<'static>) {
        self.vars.set(v, s);
    }
    fn unset_var(&mut self, v: &VarRef) {
        self.vars.unset(v);
    }
    fn var_exists(&self, v: &VarRef) -> bool {
        self.vars.exists(v)
    }
    fn create_var(&mut self, v: &VarRef) {
        self.vars.create(v);
    }
    fn set_src(&mut self, ip: IpAddr) {
        self.fx.src = Some(ip);
    }
    fn capture(&mut self, res: bool, id: Option<usize>, value: Vec<u8>) {
        let list = if res {
            &mut self.fx.res_captures
        } else {
            &mut self.fx.req_captures
        };
        let i = id.unwrap_or(list.len());
        if list.len() <= i {
            list.resize(i + 1, None);
        }
        list[i] = Some(value);
    }
    fn set_log_level(&mut self, level: Option<u8>) {
        self.fx.log_level = Some(level);
    }
}
