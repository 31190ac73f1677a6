//! The rule layer's view of a TCP-mode stream: [`TcpTxn`] implements
//! `fairlead_rules`' `Txn` (what fetches read: addresses, TLS facts, the
//! bytes buffered by content inspection, variables) and `Stream` (what
//! actions change: variables, `set-src`, the log level).
//!
//! [`SessState`] is what a session carries from one rule set to the next
//! (`tcp-request connection` → `session` → `content` → `tcp-response`):
//! in TCP mode a session has exactly one stream, so the `sess`, `txn`,
//! `req` and `res` variables live in one small list for the whole
//! connection.

use crate::routes::Routes;
use fairlead_rules::exec::{Edit, Stream};
use fairlead_rules::txn::{TlsFacts, Txn, VarRef};
use fairlead_rules::Sample;
use std::net::{IpAddr, SocketAddr};

/// Variables, `set-src` and `set-log-level` of one session.
#[derive(Default)]
pub struct SessState {
    vars: fairlead_rules::vars::Vars,
    /// `set-src`: the client address rules and logs see from now on.
    pub src: Option<IpAddr>,
    /// `set-log-level`: `Some(None)` is `silent`.
    pub log_level: Option<Option<u8>>,
    /// `tcp-request connection expect-proxy layer4` matched: read a PROXY
    /// protocol header first. Default is false.
    pub expect_proxy: bool,
    /// The session's stick counter slots (`tcp-request connection` and
    /// `tcp-request session` `track-scN`), created at the first one.
    /// Default is none.
    pub trackers: Option<fairlead_stick::Trackers>,
    /// The stream's slots (`tcp-request content` `track-scN`), once the
    /// stream started ([`SessState::start_stream`]). Default is none.
    strm_trackers: Option<fairlead_stick::Trackers>,
    /// Rules now run on the stream (content rules), not the session.
    in_stream: bool,
    /// The stream's unique id (`unique-id-format`), made on first use.
    /// Default is none (one pointer, no allocation).
    uid: std::cell::OnceCell<Box<crate::uid::Id>>,
    /// The unique id is being made.
    uid_busy: std::cell::Cell<bool>,
}

impl SessState {
    fn get(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.vars.get(v)
    }

    fn set(&mut self, v: &VarRef, s: Sample<'static>) {
        self.vars.set(v, s);
    }

    fn unset(&mut self, v: &VarRef) {
        self.vars.unset(v);
    }

    /// Ends the connection-level rules of an HTTP connection: the `sess`
    /// variables they set, which the HTTP transactions inherit.
    pub fn into_sess_vars(self) -> fairlead_rules::vars::SessVars {
        self.vars.into_sess()
    }

    /// From now on, rules run on the stream: `track-scN` fills the
    /// stream's slots (TCP mode, before `tcp-request content`).
    pub fn start_stream(&mut self) {
        self.in_stream = true;
    }

    /// The stream's and the session's slots, as `sc_*` fetches and counter
    /// events see them.
    pub fn levels(&self) -> fairlead_stick::Levels<'_> {
        fairlead_stick::Levels {
            stream: self.strm_trackers.as_ref(),
            session: self.trackers.as_ref(),
        }
    }

    /// The end of the TCP stream and of its session: the stream's slots,
    /// then the session's, give their `conn_cur` back and are released.
    pub fn end_trackers(&mut self, now: u64) {
        if let Some(mut t) = self.strm_trackers.take() {
            t.end_connection(now);
        }
        if let Some(mut t) = self.trackers.take() {
            t.end_connection(now);
        }
    }

    /// The stream's unique id: the one made already, else one made now
    /// from `src`'s format for the stream `from` sees.
    pub(crate) fn unique_id(
        &self,
        src: Option<&crate::uid::UidSource<'_>>,
        from: &dyn Txn,
    ) -> Option<&[u8]> {
        crate::uid::get_or_make(&self.uid, &self.uid_busy, || crate::uid::make(src, from))
    }

    /// The client address after `set-src`.
    pub fn effective_src(&self, peer: SocketAddr) -> SocketAddr {
        match self.src {
            Some(ip) => SocketAddr::new(ip, peer.port()),
            None => peer,
        }
    }
}

/// What the TLS layer negotiated, as rules see it.
pub(crate) fn tls_facts(i: &fairlead_net::TlsInfo) -> TlsFacts<'_> {
    TlsFacts {
        sni: i.sni.as_deref(),
        alpn: i.alpn.as_deref(),
        protocol: Some(i.version),
        cipher: Some(i.cipher),
        resumed: i.resumed,
        c_used: i.peer_cert,
        c_verify: 0,
        c_s_dn: i.peer_subject.as_deref(),
    }
}

/// Facts about the client connection, gathered once.
#[derive(Clone, Copy)]
pub struct ConnFacts<'a> {
    /// The client's address as accepted (before `set-src`).
    pub src: SocketAddr,
    /// The address the client connected to (only looked up when rules
    /// exist).
    pub dst: Option<SocketAddr>,
    /// `None` in clear and in `tcp-request connection` rules (before the
    /// handshake).
    pub tls: Option<&'a fairlead_net::TlsInfo>,
    /// The PROXY protocol header received (`fc_pp_*`); `None` without one
    /// and in `tcp-request connection` rules (before it is read).
    pub proxy: Option<&'a fairlead_net::ProxyInfo>,
    pub frontend: &'a str,
    pub hostname: &'a str,
}

/// One evaluation's view of the stream.
pub struct TcpTxn<'a> {
    pub conn: &'a ConnFacts<'a>,
    pub sess: &'a mut SessState,
    /// The client bytes buffered so far (content inspection).
    pub payload: Option<&'a [u8]>,
    /// The server bytes buffered so far (`tcp-response content`).
    pub res_payload: Option<&'a [u8]>,
    /// No more data can arrive for this inspection.
    pub done: bool,
    pub backend: Option<&'a str>,
    pub server: Option<&'a str>,
    /// The backends, for `nbsrv(name)`.
    pub routes: Option<&'a Routes>,
    /// What making the stream's unique id needs; `None` before the
    /// stream exists (connection and session rules: the `unique-id`
    /// fetch finds nothing there, as in HAProxy).
    pub uid: Option<crate::uid::UidSource<'a>>,
}

impl<'a> TcpTxn<'a> {
    /// A view with no buffered data (connection and session rules).
    pub fn new(conn: &'a ConnFacts<'a>, sess: &'a mut SessState) -> Self {
        TcpTxn {
            conn,
            sess,
            payload: None,
            res_payload: None,
            done: true,
            backend: None,
            server: None,
            routes: None,
            uid: None,
        }
    }
}

impl Txn for TcpTxn<'_> {
    fn payload(&self) -> Option<&[u8]> {
        self.payload
    }
    fn res_payload(&self) -> Option<&[u8]> {
        self.res_payload
    }
    fn payload_final(&self) -> bool {
        self.done
    }
    fn src(&self) -> Option<SocketAddr> {
        Some(self.sess.effective_src(self.conn.src))
    }
    fn dst(&self) -> Option<SocketAddr> {
        self.conn.dst
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        self.conn.tls.map(tls_facts)
    }
    fn proxy(&self) -> Option<fairlead_rules::txn::ProxyFacts<'_>> {
        self.conn.proxy.map(|p| fairlead_rules::txn::ProxyFacts {
            authority: p.authority.as_deref(),
            unique_id: p.unique_id.as_deref(),
        })
    }
    fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.sess.get(v)
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
    fn nbsrv(&self, backend: Option<&str>) -> Option<i64> {
        let routes = self.routes?;
        let be = routes.find(backend.or(self.backend)?)?;
        let (active, backup) = be.usable_counts();
        Some(if active > 0 { active } else { backup } as i64)
    }
    fn hostname(&self) -> &str {
        self.conn.hostname
    }
    fn trackers(&self) -> Option<&fairlead_stick::Trackers> {
        self.sess.strm_trackers.as_ref()
    }
    fn unique_id(&self) -> Option<&[u8]> {
        self.sess.unique_id(self.uid.as_ref(), self)
    }
    fn sess_trackers(&self) -> Option<&fairlead_stick::Trackers> {
        self.sess.trackers.as_ref()
    }
}

impl Stream for TcpTxn<'_> {
    fn trackers_mut(&mut self) -> Option<&mut fairlead_stick::Trackers> {
        let t = if self.sess.in_stream {
            &mut self.sess.strm_trackers
        } else {
            &mut self.sess.trackers
        };
        Some(t.get_or_insert_with(Default::default))
    }
    fn edit(&mut self, _res: bool) -> Option<&mut dyn Edit> {
        None
    }
    fn set_var(&mut self, v: &VarRef, s: Sample<'static>) {
        self.sess.set(v, s);
    }
    fn unset_var(&mut self, v: &VarRef) {
        self.sess.unset(v);
    }
    fn var_exists(&self, v: &VarRef) -> bool {
        self.sess.vars.exists(v)
    }
    fn create_var(&mut self, v: &VarRef) {
        self.sess.vars.create(v);
    }
    fn set_src(&mut self, ip: IpAddr) {
        self.sess.src = Some(ip);
    }
    fn set_log_level(&mut self, level: Option<u8>) {
        self.sess.log_level = Some(level);
    }
    fn expect_proxy(&mut self) {
        self.sess.expect_proxy = true;
    }
}

/// The stream as the log line's samples see it (`%[...]` in
/// `log-format`): addresses, TLS, variables and names, read-only.
pub(crate) struct LogTxn<'a> {
    pub conn: &'a ConnFacts<'a>,
    pub sess: &'a SessState,
    pub backend: &'a str,
    pub server: Option<&'a str>,
    /// For a unique id made at log time (`%ID`, `%[unique-id]`).
    pub uid: Option<crate::uid::UidSource<'a>>,
}

impl Txn for LogTxn<'_> {
    /// The request's bytes were all forwarded: as in HAProxy, contents
    /// fetches see an empty buffer (`req.len` is 0).
    fn payload(&self) -> Option<&[u8]> {
        Some(&[])
    }
    fn unique_id(&self) -> Option<&[u8]> {
        self.sess.unique_id(self.uid.as_ref(), self)
    }
    fn src(&self) -> Option<SocketAddr> {
        Some(self.sess.effective_src(self.conn.src))
    }
    fn dst(&self) -> Option<SocketAddr> {
        self.conn.dst
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        self.conn.tls.map(tls_facts)
    }
    fn proxy(&self) -> Option<fairlead_rules::txn::ProxyFacts<'_>> {
        self.conn.proxy.map(|p| fairlead_rules::txn::ProxyFacts {
            authority: p.authority.as_deref(),
            unique_id: p.unique_id.as_deref(),
        })
    }
    fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.sess.get(v)
    }
    fn frontend_name(&self) -> &str {
        self.conn.frontend
    }
    fn backend_name(&self) -> Option<&str> {
        Some(self.backend)
    }
    fn server_name(&self) -> Option<&str> {
        self.server
    }
    fn hostname(&self) -> &str {
        self.conn.hostname
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_scopes_and_set_src() {
        let conn = ConnFacts {
            src: "10.0.0.1:1234".parse().unwrap(),
            dst: None,
            tls: None,
            proxy: None,
            frontend: "fe",
            hostname: "h",
        };
        let mut sess = SessState::default();
        let v = VarRef::parse("sess.x").unwrap();
        let p = VarRef::parse("proc.l4_test_counter").unwrap();
        {
            let mut tx = TcpTxn::new(&conn, &mut sess);
            tx.set_var(&v, Sample::Sint(3));
            tx.set_var(&p, Sample::Sint(7));
            tx.set_src("192.0.2.9".parse().unwrap());
            assert!(matches!(tx.var(&v), Some(Sample::Sint(3))));
            assert_eq!(tx.src().unwrap().to_string(), "192.0.2.9:1234");
        }
        let mut other = SessState::default();
        let tx = TcpTxn::new(&conn, &mut other);
        assert!(tx.var(&v).is_none(), "sess variables are per session");
        assert!(matches!(tx.var(&p), Some(Sample::Sint(7))));
    }
}
