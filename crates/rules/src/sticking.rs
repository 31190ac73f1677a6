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
