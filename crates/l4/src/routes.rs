//! What the TCP side of the rule layer needs from the configuration
//! ([`Routes`]: the frontend's rules and every backend it may switch
//! to), the rule sets that decide whether a connection goes on at all
//! (`tcp-request connection` right after accept, `tcp-request session`
//! after the handshakes: [`connection_rules`], [`session_rules`]), and
//! content switching (`use_backend`, [`Routes::switch`]).

use crate::txn::{ConnFacts, SessState, TcpTxn};
use fairlead_backend::Backend;
use fairlead_rules::acl::Tri;
use fairlead_rules::action::Action;
use fairlead_rules::cond::Acls;
use fairlead_rules::exec::{run, Verdict};
use fairlead_rules::proxy::{BackendTarget, ProxyRules, Rule};
use std::collections::HashMap;
use std::sync::Arc;

/// A frontend's rules and the backends it may route to, built once at
/// start-up and shared by every worker; the same for TCP streams and HTTP
/// requests.
pub struct Routes {
    /// The frontend's compiled rules.
    pub fe_rules: Arc<ProxyRules>,
    /// Every backend, in configuration order.
    pub backends: Vec<Arc<Backend>>,
    /// Each backend's compiled rules (same order).
    pub be_rules: Vec<Arc<ProxyRules>>,
    /// Backend index by name.
    pub by_name: HashMap<String, usize>,
    /// The index of the default backend, if it is a configured one.
    pub default: Option<usize>,
    /// The default backend: `default_backend`, a listen section's own
    /// servers, or a backend without servers (the stream is closed).
    pub default_be: Arc<Backend>,
    /// The machine's host name (`hostname`).
    pub hostname: String,
    /// Most bytes content inspection buffers (`tune.bufsize` minus
    /// `tune.maxrewrite`, as HAProxy's "buffer full"): the rules then see
    /// a final buffer.
    pub inspect_max: usize,
}

impl Routes {
    /// Whether HTTP requests need the rule engine at all (otherwise the
    /// session takes the plain path: no message model, no routing).
    pub fn active(&self) -> bool {
        self.fe_rules.has_http_rules()
            || self
                .default
                .is_some_and(|i| self.be_rules[i].has_http_rules())
    }

    /// The backend at `idx` (`None`: the default one).
    pub fn backend(&self, idx: Option<usize>) -> &Arc<Backend> {
        idx.and_then(|i| self.backends.get(i))
            .unwrap_or(&self.default_be)
    }

    /// The rules of the backend at `idx` (`None`: the default one), unless
    /// they are the frontend's own (a `listen` section).
    pub fn be_rules(&self, idx: Option<usize>) -> Option<&Arc<ProxyRules>> {
        idx.or(self.default)
            .and_then(|i| self.be_rules.get(i))
            .filter(|r| !Arc::ptr_eq(r, &self.fe_rules))
    }

    /// The rules `tcp-response content` comes from: the backend's (a
    /// `listen` section's are its frontend's).
    pub fn res_rules(&self, idx: Option<usize>) -> Option<&Arc<ProxyRules>> {
        idx.or(self.default).and_then(|i| self.be_rules.get(i))
    }

    /// A backend by name.
    pub fn find(&self, name: &str) -> Option<&Arc<Backend>> {
        if name == self.default_be.name {
            return Some(&self.default_be);
        }
        self.by_name.get(name).map(|&i| &self.backends[i])
    }

    /// `use_backend` rules (first match), else the default backend. A
    /// dynamic name that names no backend falls back to the default, as
    /// HAProxy does.
    pub fn switch(&self, tx: &TcpTxn<'_>) -> Option<usize> {
        let fe = &self.fe_rules;
        for r in &fe.use_backend {
            if r.check(&fe.acls, tx) != Tri::Pass {
                continue;
            }
            let found = match &r.action {
                BackendTarget::Name(n) => self.by_name.get(n.as_str()).copied(),
                BackendTarget::Dynamic(f) => {
                    let name = f.render_vec(tx);
                    std::str::from_utf8(&name)
                        .ok()
                        .and_then(|n| self.by_name.get(n).copied())
                }
            };
            return found.or(self.default);
        }
        self.default
    }

    /// Whether any TCP rule may need the connection's local address.
    pub fn has_rules(&self) -> bool {
        let fe = &self.fe_rules;
        !fe.tcp_content.is_empty()
            || !fe.use_backend.is_empty()
            || self.be_rules.iter().any(|r| {
                !r.tcp_content.is_empty()
                    || !r.tcp_response.is_empty()
                    || !r.stick_req.is_empty()
                    || !r.stick_res.is_empty()
            })
    }
}

/// The outcome of `tcp-request connection` or `tcp-request session`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// No final rule matched, or `accept`: go on.
    Accept,
    /// `reject`: close at once (with a reset, as HAProxy does).
    Reject,
    /// `silent-drop`: close with a reset.
    SilentDrop,
}

/// Runs a connection-level rule set: nothing can be waited for, so a
/// condition that misses data (MISS) counts as no match, as in HAProxy.
fn gate(rules: &[Rule<Action>], acls: &Acls, tx: &mut TcpTxn<'_>) -> Gate {
    match run(rules, acls, tx, false) {
        Verdict::Reject | Verdict::Deny(_) | Verdict::Close => Gate::Reject,
        Verdict::SilentDrop => Gate::SilentDrop,
        _ => Gate::Accept,
    }
}

/// `tcp-request connection` rules, right after accept: L4 fetches (src,
/// dst, ports) and internal ones. `accept` stops the rule set.
pub fn connection_rules(rules: &ProxyRules, conn: &ConnFacts<'_>, sess: &mut SessState) -> Gate {
    let mut tx = TcpTxn::new(conn, sess);
    gate(&rules.tcp_connection, &rules.acls, &mut tx)
}

/// `tcp-request session` rules, once the handshakes are done: L5 fetches
/// (`ssl_fc_sni`, ...) as well.
pub fn session_rules(rules: &ProxyRules, conn: &ConnFacts<'_>, sess: &mut SessState) -> Gate {
    let mut tx = TcpTxn::new(conn, sess);
    gate(&rules.tcp_session, &rules.acls, &mut tx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairlead_rules::proxy::SectionInfo;

    fn rules(lines: &[&str]) -> Arc<ProxyRules> {
        let mut r = ProxyRules::default();
        let sec = SectionInfo {
            frontend: true,
            backend: false,
            http: false,
            max_reply: 16384,
        };
        let env = fairlead_rules::Env::default();
        for l in lines {
            let words: Vec<String> = l.split_whitespace().map(String::from).collect();
            r.add(&words, &sec, &env).unwrap();
        }
        Arc::new(r)
    }

    fn backend(name: &str) -> Arc<Backend> {
        let cfg = fairlead_config::Backend {
            name: name.to_string(),
            ..Default::default()
        };
        let resolve = |_: &fairlead_config::ServerAddr| -> std::io::Result<std::net::SocketAddr> {
            Err(std::io::ErrorKind::NotFound.into())
        };
        Arc::new(Backend::new(&cfg, &resolve, &mut 0, 1).unwrap())
    }

    fn routes(fe: Arc<ProxyRules>) -> Routes {
        let backends = vec![backend("be_abc"), backend("be_default")];
        Routes {
            fe_rules: fe,
            be_rules: vec![rules(&[]), rules(&[])],
            by_name: [("be_abc".to_string(), 0), ("be_default".to_string(), 1)].into(),
            default: Some(1),
            default_be: backends[1].clone(),
            backends,
            hostname: "h".into(),
            inspect_max: 15360,
        }
    }

    fn facts() -> ConnFacts<'static> {
        ConnFacts {
            src: "192.0.2.1:5000".parse().unwrap(),
            dst: Some("192.0.2.2:443".parse().unwrap()),
            tls: None,
            proxy: None,
            frontend: "fe",
            hostname: "h",
        }
    }

    #[test]
    fn connection_rules_accept_stops_and_reject_refuses() {
        let f = facts();
        let mut sess = SessState::default();
        let r = rules(&[
            "tcp-request connection accept if { src 192.0.2.1 }",
            "tcp-request connection reject",
        ]);
        assert_eq!(connection_rules(&r, &f, &mut sess), Gate::Accept);
        let r = rules(&[
            "tcp-request connection set-var(sess.seen) int(1)",
            "tcp-request connection silent-drop if { dst_port 443 }",
        ]);
        assert_eq!(connection_rules(&r, &f, &mut sess), Gate::SilentDrop);
        // Buffer contents never arrive at this stage: no match, no wait.
        let r = rules(&["tcp-request connection reject if { req.len gt 0 } || WAIT_END"]);
        assert_eq!(connection_rules(&r, &f, &mut sess), Gate::Reject);
    }

    #[test]
    fn content_rules_wait_while_data_may_change() {
        let f = facts();
        let mut sess = SessState::default();
        let r = rules(&["tcp-request content accept if { req.len ge 6 }"]);
        let eval = |sess: &mut SessState, p: &'static [u8], done: bool| {
            let mut tx = TcpTxn::new(&f, sess);
            tx.payload = Some(p);
            tx.done = done;
            match run(&r.tcp_content, &r.acls, &mut tx, false) {
                Verdict::Wait => "wait",
                Verdict::Allow => "accept",
                Verdict::Continue => "continue",
                _ => "other",
            }
        };
        assert_eq!(eval(&mut sess, b"HEL", false), "wait");
        assert_eq!(eval(&mut sess, b"HELLO ", false), "accept");
        assert_eq!(eval(&mut sess, b"HEL", true), "continue");
    }

    #[test]
    fn switching_static_dynamic_and_fallback() {
        let fe = rules(&[
            "use_backend be_abc if { req.payload(0,4) -m str ABCD }",
            "use_backend be_%[req.payload(0,3)]",
        ]);
        let rt = routes(fe);
        let f = facts();
        let mut sess = SessState::default();
        let mut pick = |p: &'static [u8]| {
            let mut tx = TcpTxn::new(&f, &mut sess);
            tx.payload = Some(p);
            rt.backend(rt.switch(&tx)).name.clone()
        };
        assert_eq!(pick(b"ABCD"), "be_abc");
        assert_eq!(pick(b"abc\n"), "be_abc");
        assert_eq!(pick(b"zzz\n"), "be_default", "unknown names fall back");
        assert!(rt.be_rules(Some(0)).is_some());
        let mut sess = SessState::default();
        let tx = TcpTxn {
            routes: Some(&rt),
            ..TcpTxn::new(&f, &mut sess)
        };
        use fairlead_rules::txn::Txn;
        assert_eq!(tx.nbsrv(Some("be_abc")), Some(0));
    }
}
