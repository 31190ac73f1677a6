//! Variable storage for the `set-var` family: one stream's `txn`, `req`,
//! `res` and `sess` variables, and the process-wide `proc` ones (shared by
//! HTTP and TCP streams alike).

use crate::sample::Sample;
use crate::txn::{Scope, VarRef};

/// Variables of one transaction (`txn`, `req`, `res`), the connection's
/// `sess` ones (kept by the session between requests) and the
/// process-wide `proc` ones.
#[derive(Default)]
pub struct Vars {
    list: Vec<(VarRef, Sample<'static>)>,
}

/// The `sess` variables a connection keeps between its requests.
pub type SessVars = Option<Box<Vec<(VarRef, Sample<'static>)>>>;

static PROC_VARS: std::sync::Mutex<Vec<(VarRef, Sample<'static>)>> =
    std::sync::Mutex::new(Vec::new());

impl Vars {
    /// Starts a transaction with the connection's `sess` variables.
    pub fn with_sess(sess: SessVars) -> Vars {
        Vars {
            list: sess.map(|b| *b).unwrap_or_default(),
        }
    }

    /// Ends a transaction: the `sess` variables go back to the connection.
    pub fn into_sess(self) -> SessVars {
        let sess: Vec<_> = self
            .list
            .into_iter()
            .filter(|(k, _)| k.scope == Scope::Sess)
            .collect();
        (!sess.is_empty()).then(|| Box::new(sess))
    }

    pub fn get(&self, v: &VarRef) -> Option<Sample<'_>> {
        if v.scope == Scope::Proc {
            let p = PROC_VARS.lock().ok()?;
            return p
                .iter()
                .find(|(k, _)| k == v)
                .map(|(_, s)| s.clone().into_owned());
        }
        self.list
            .iter()
            .find(|(k, _)| k == v)
            .map(|(_, s)| s.reborrow())
    }

    pub fn set(&mut self, v: &VarRef, s: Sample<'static>) {
        let list = &mut self.list;
        if v.scope == Scope::Proc {
            if let Ok(mut p) = PROC_VARS.lock() {
                put(&mut p, v, s);
            }
            return;
        }
        put(list, v, s);
    }

    pub fn unset(&mut self, v: &VarRef) {
        if v.scope == Scope::Proc {
            if let Ok(mut p) = PROC_VARS.lock() {
                p.retain(|(k, _)| k != v);
            }
            return;
        }
        self.list.retain(|(k, _)| k != v);
    }
}

fn put(list: &mut Vec<(VarRef, Sample<'static>)>, v: &VarRef, s: Sample<'static>) {
    match list.iter_mut().find(|(k, _)| k == v) {
        Some(e) => e.1 = s,
        None => list.push((v.clone(), s)),
    }
}
