//! Stick persistence: the `stick match`, `stick on`, `stick store-request`
//! and `stick store-response` rules of a backend, as HAProxy 2.6 runs
//! them.
//!
//! * Request rules run once the backend is known (after `use-server`):
//!   a `match` (or `on`) rule looks its key up and, when the stream has no
//!   server yet (`use-server`, a persistence cookie), designates the
//!   stored `server_id`; a found entry's expiry is refreshed either way.
//!   A `store-request` (or `on`) rule remembers its key for later.
//! * Only the first rule that applies stores into a given table; a rule
//!   whose table already has a pending store is skipped, matches
//!   included (HAProxy's "we don't want to run twice the same table").
//! * Response rules (`store-response`) run on the response head; at most
//!   one request store and one response store per table.
//! * The pending stores are committed with the server that answered
//!   ([`Sticking::commit`]): an entry's `server_id` (and `server_key`) are
//!   set, replacing what it held, and its expiry refreshed. At most 8
//!   stores per stream, as HAProxy.
//!
//! A table named by a stick rule stores `server_id` and `server_key`
//! even when its `stick-table` line does not say so: the configuration
//! adds them ([`tables_needing_server`]).

use crate::cond::{split_cond, Cond};
use crate::expr::Expr;
use crate::txn::Txn;
use fairlead_stick::Table;
use std::sync::Arc;

/// Largest number of pending stores per stream (HAProxy's `s->store[8]`).
pub const MAX_STORES: usize = 8;

/// Which stick rule a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StickOp {
    /// `stick match`: look up only.
    Match,
    /// `stick on`: look up, then store on the request.
    On,
    /// `stick store-request`.
    StoreRequest,
    /// `stick store-response`.
    StoreResponse,
}

impl StickOp {
    fn parse(s: &str) -> Option<StickOp> {
        Some(match s {
            "match" => StickOp::Match,
            "on" => StickOp::On,
            "store-request" => StickOp::StoreRequest,
            "store-response" => StickOp::StoreResponse,
            _ => return None,
        })
    }

    fn matches(self) -> bool {
        matches!(self, StickOp::Match | StickOp::On)
    }

    fn stores(self) -> bool {
        !matches!(self, StickOp::Match)
    }
}

/// One compiled stick rule.
#[derive(Debug)]
pub struct StickRule {
    pub op: StickOp,
    /// The key: a sample expression.
    pub expr: Expr,
    /// `table T`, or the backend's own table.
    pub table: Table,
    pub cond: Option<Cond>,
}

/// The words after `stick`: the operation, the pattern, an optional
/// `table <name>` and an optional condition. Returns the operation, the
/// pattern, the table name (`None`: the section's own) and the condition.
pub fn split_line(words: &[String]) -> Result<StickLine<'_>, String> {
    let op = words
        .first()
        .and_then(|w| StickOp::parse(w))
        .ok_or("'stick' expects 'match', 'on', 'store-request' or 'store-response'")?;
    let (body, cond) = split_cond(&words[1..]);
    let (pattern, table) = match body {
        [p] => (p.as_str(), None),
        [p, t, name] if t == "table" => (p.as_str(), Some(name.as_str())),
        [] => return Err(format!("'stick {}' expects a fetch method", words[0])),
        _ => {
            return Err(format!(
                "'stick {}' expects a pattern, then an optional 'table <name>' and an optional condition",
                words[0]
            ))
        }
    };
    Ok(StickLine {
        op,
        pattern,
        table,
        cond,
    })
}

/// A `stick` line split into its parts (see [`split_line`]).
#[derive(Debug)]
pub struct StickLine<'a> {
    pub op: StickOp,
    pub pattern: &'a str,
    pub table: Option<&'a str>,
    pub cond: Option<&'a [String]>,
}

/// The names of the tables (as in `Env::tables`) that stick lines of a
/// section name: `own` is the section's own table name, the default.
/// Lines that do not parse are left out (compiling reports them).
pub fn tables_needing_server<'a>(lines: &'a [Vec<String>], own: Option<&'a str>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for w in lines {
        if w.first().map(String::as_str) != Some("stick") {
            continue;
        }
        if let Ok(l) = split_line(&w[1..]) {
            if let Some(t) = l.table.or(own) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// A stream's stick state: the server a `match` rule designated and the
/// stores waiting for a server.
#[derive(Debug, Default)]
pub struct Sticking {
    /// The `server_id` (HAProxy's server `id`, `puid`) an entry designated.
    pub matched: Option<i32>,
    pending: Vec<(Table, Vec<u8>)>,
    /// How many of `pending` come from request rules.
    nb_req: usize,
}

impl Sticking {
    /// Whether nothing was matched and nothing waits to be stored.
    pub fn is_empty(&self) -> bool {
        self.matched.is_none() && self.pending.is_empty()
    }

    /// Runs the request rules. `assigned`: the stream already has its
    /// server (then a match only refreshes the entry).
    pub fn run_request(
        &mut self,
        rules: &[StickRule],
        acls: &crate::cond::Acls,
        txn: &dyn Txn,
        assigned: bool,
        now: u64,
    ) {
        for r in rules {
            if self.pending.iter().any(|(t, _)| t.same(&r.table)) {
                continue;
            }
            if !passes(r, acls, txn) {
                continue;
            }
            let Some(key) = key_of(r, txn) else { continue };
            if r.op.matches() {
                if let Some(e) = r.table.lookup(&key, now) {
                    if !assigned && self.matched.is_none() {
                        self.matched = e
                            .get_int(fairlead_stick::DataType::ServerId, now)
                            .and_then(|v| i32::try_from(v).ok())
                            .filter(|v| *v > 0);
                    }
                    e.touch(now);
                }
            }
            if r.op.stores() && self.pending.len() < MAX_STORES {
                self.pending.push((r.table.clone(), key));
                self.nb_req = self.pending.len();
            }
        }
    }

    /// Runs the `store-response` rules on the response.
    pub fn run_response(&mut self, rules: &[StickRule], acls: &crate::cond::Acls, txn: &dyn Txn) {
        for r in rules {
            let from_res = self.pending.get(self.nb_req..).unwrap_or(&[]);
            if from_res.iter().any(|(t, _)| t.same(&r.table)) {
                continue;
            }
            if !passes(r, acls, txn) {
                continue;
            }
            let Some(key) = key_of(r, txn) else { continue };
            if self.pending.len() < MAX_STORES {
                self.pending.push((r.table.clone(), key));
            }
        }
    }

    /// Stores the server (`puid`, and `key` for `server_key`: its name or
    /// address per the table's `srvkey`) in every pending entry.
    pub fn commit(&mut self, puid: u32, name: &str, addr: &str, now: u64) {
        let id = i32::try_from(puid).unwrap_or(i32::MAX);
        for (t, key) in self.pending.drain(..) {
            let Some(e) = t.get_or_create(&key, now) else {
                continue;
            };
            let sk: Arc<str> = match t.spec().srvkey {
                fairlead_stick::SrvKey::Name => Arc::from(name),
                fairlead_stick::SrvKey::Addr => Arc::from(addr),
            };
            e.set_server(id, Some(sk), now);
            e.release(now);
        }
        self.nb_req = 0;
    }

    /// Drops the pending stores (no server was reached).
    pub fn discard(&mut self) {
        self.pending.clear();
        self.nb_req = 0;
    }
}

fn passes(r: &StickRule, acls: &crate::cond::Acls, txn: &dyn Txn) -> bool {
    match &r.cond {
        None => true,
        Some(c) => c.eval(acls, txn) == crate::acl::Tri::Pass,
    }
}

/// The rule's key in its table's format; `None` when the sample is
/// missing or does not convert.
fn key_of(r: &StickRule, txn: &dyn Txn) -> Option<Vec<u8>> {
    let s = r.expr.eval(txn).ok().flatten()?;
    let input = crate::stick::key_input(&s)?;
    r.table.key(&input).map(|k| k.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::{ProxyRules, SectionInfo};
    use std::net::SocketAddr;

    struct Src(SocketAddr);
    impl Txn for Src {
        fn src(&self) -> Option<SocketAddr> {
            Some(self.0)
        }
    }

    fn env() -> crate::Env {
        let mut env = crate::Env::default();
        for name in ["b", "other"] {
            let spec = fairlead_stick::TableSpec::parse(name, &["type", "ip", "size", "10"], false)
                .unwrap()
                .0
                .with(fairlead_stick::DataType::ServerId, 1, 0)
                .with(fairlead_stick::DataType::ServerKey, 1, 0);
            env.tables
                .insert(name.into(), fairlead_stick::Table::new(spec));
        }
        env.own_table = env.tables.get("b").cloned();
        env
    }

    fn add(r: &mut ProxyRules, env: &crate::Env, line: &str) -> Result<Vec<String>, String> {
        let sec = SectionInfo {
            frontend: false,
            backend: true,
            http: true,
            max_reply: 16384,
        };
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        r.add(&words, &sec, env)
    }

    #[test]
    fn stick_lines_compile() {
        let env = env();
        let mut r = ProxyRules::default();
        add(&mut r, &env, "stick on src").unwrap();
        add(&mut r, &env, "stick match src table other if TRUE").unwrap();
        add(&mut r, &env, "stick store-request src unless FALSE").unwrap();
        add(&mut r, &env, "stick store-response res.hdr(x-s)").unwrap();
        assert_eq!(r.stick_req.len(), 3);
        assert_eq!(r.stick_res.len(), 1);
        assert_eq!(r.stick_req[0].op, StickOp::On);
        assert_eq!(r.stick_req[1].op, StickOp::Match);
        assert!(r.stick_req[1].table.same(env.tables.get("other").unwrap()));
        assert!(r.stick_req[1].cond.is_some());
        assert_eq!(r.stick_res[0].op, StickOp::StoreResponse);
        assert!(r.has_http_rules());
        let bad = |line: &str| add(&mut ProxyRules::default(), &env, line).unwrap_err();
        assert!(bad("stick foo src").contains("expects 'match', 'on'"));
        assert!(bad("stick on").contains("expects a fetch method"));
        assert!(bad("stick on src table nope").contains("unable to find stick-table 'nope'"));
        assert!(bad("stick on src extra").contains("expects a pattern"));
        // A response fetch cannot key a request rule.
        assert!(bad("stick on res.hdr(x)").contains("none of which is available here"));
        let mut no_own = env.clone();
        no_own.own_table = None;
        let e = add(&mut ProxyRules::default(), &no_own, "stick on src").unwrap_err();
        assert!(e.contains("no stick-table declared"), "{e}");
    }

    #[test]
    fn tables_named_by_stick_lines() {
        let lines: Vec<Vec<String>> = [
            "stick on src",
            "stick match src table t2",
            "http-request deny",
            "stick store-request src table t2",
            "stick bogus",
        ]
        .iter()
        .map(|l| l.split(' ').map(String::from).collect())
        .collect();
        assert_eq!(tables_needing_server(&lines, Some("own")), ["own", "t2"]);
        assert_eq!(tables_needing_server(&lines, None), ["t2"]);
    }

    #[test]
    fn match_store_and_commit() {
        let env = env();
        let mut r = ProxyRules::default();
        add(&mut r, &env, "stick on src").unwrap();
        // Same table again: skipped while `stick on` has a pending store.
        add(&mut r, &env, "stick store-request src").unwrap();
        add(&mut r, &env, "stick match src table other").unwrap();
        let tx = Src("192.0.2.1:5000".parse().unwrap());
        let mut st = Sticking::default();
        st.run_request(&r.stick_req, &r.acls, &tx, false, 1000);
        assert_eq!(st.matched, None);
        assert_eq!(st.pending.len(), 1);
        st.commit(3, "s3", "192.0.2.9:80", 1000);
        assert!(st.is_empty());
        let b = env.tables.get("b").unwrap();
        let key = [192, 0, 2, 1];
        let e = b.lookup(&key, 1000).expect("stored");
        assert_eq!(e.get_int(fairlead_stick::DataType::ServerId, 1000), Some(3));
        assert_eq!(
            e.get(fairlead_stick::DataType::ServerKey, 0, 1000),
            Some(fairlead_stick::data::Value::Str(Some(Arc::from("s3"))))
        );
        drop(e);
        assert!(env
            .tables
            .get("other")
            .unwrap()
            .lookup(&key, 1000)
            .is_none());

        let mut st = Sticking::default();
        st.run_request(&r.stick_req, &r.acls, &tx, false, 2000);
        assert_eq!(st.matched, Some(3));
        // Already assigned (use-server, a cookie): the entry is not used.
        let mut st = Sticking::default();
        st.run_request(&r.stick_req, &r.acls, &tx, true, 2000);
        assert_eq!(st.matched, None);
        // Nothing reached a server: nothing is stored.
        st.discard();
        st.commit(4, "s4", "", 2000);
        let e = b.lookup(&key, 2000).unwrap();
        assert_eq!(e.get_int(fairlead_stick::DataType::ServerId, 2000), Some(3));
    }

    #[test]
    fn response_stores_one_per_table() {
        let env = env();
        let mut r = ProxyRules::default();
        add(&mut r, &env, "stick store-request src").unwrap();
        add(&mut r, &env, "stick store-response src").unwrap();
        add(&mut r, &env, "stick store-response src table other").unwrap();
        add(&mut r, &env, "stick store-response src").unwrap();
        let tx = Src("192.0.2.2:5000".parse().unwrap());
        let mut st = Sticking::default();
        st.run_request(&r.stick_req, &r.acls, &tx, false, 10);
        st.run_response(&r.stick_res, &r.acls, &tx);
        // One request store, then one response store per table.
        assert_eq!(st.pending.len(), 3);
        st.commit(5, "s5", "", 10);
        for t in ["b", "other"] {
            let e = env
                .tables
                .get(t)
                .unwrap()
                .lookup(&[192, 0, 2, 2], 10)
                .unwrap();
            assert_eq!(e.get_int(fairlead_stick::DataType::ServerId, 10), Some(5));
        }
    }
}
