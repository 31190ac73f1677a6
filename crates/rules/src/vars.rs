//! Variable storage for the `set-var` family: one stream's `txn`, `req`,
//! `res` and `sess` variables, and the process-wide `proc` ones (shared by
//! HTTP and TCP streams alike).
//!
//! A variable is absent, set, or *created but unset*: HAProxy's `var_set`
//! creates the variable before it checks the `ifset`, `ifnotset`,
//! `ifempty`, `ifnotempty`, `ifgt` and `iflt` conditions, so a `set-var`
//! whose condition fails still makes a later `ifexists` hold, while the
//! variable reads as absent.

use crate::sample::Sample;
use crate::txn::{Scope, VarRef};

/// Variables of one transaction (`txn`, `req`, `res`), the connection's
/// `sess` ones (kept by the session between requests) and the
/// process-wide `proc` ones.
#[derive(Default)]
pub struct Vars {
    list: Vec<Entry>,
}

/// A variable and its value (`None`: created but unset).
type Entry = (VarRef, Option<Sample<'static>>);

/// The `sess` variables a connection keeps between its requests.
pub type SessVars = Option<Box<Vec<Entry>>>;

static PROC_VARS: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());

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

    /// The variable's value; `None` when absent or created but unset.
    pub fn get(&self, v: &VarRef) -> Option<Sample<'_>> {
        if v.scope == Scope::Proc {
            let p = PROC_VARS.lock().ok()?;
            return p.iter().find(|(k, _)| k == v).and_then(|(_, s)| s.clone());
        }
        self.list
            .iter()
            .find(|(k, _)| k == v)
            .and_then(|(_, s)| s.as_ref().map(Sample::reborrow))
    }

    /// Whether the variable exists, set or not (`ifexists`).
    pub fn exists(&self, v: &VarRef) -> bool {
        if v.scope == Scope::Proc {
            return PROC_VARS
                .lock()
                .is_ok_and(|p| p.iter().any(|(k, _)| k == v));
        }
        self.list.iter().any(|(k, _)| k == v)
    }

    pub fn set(&mut self, v: &VarRef, s: Sample<'static>) {
        self.put(v, Some(s));
    }

    /// Creates the variable without a value, unless it exists.
    pub fn create(&mut self, v: &VarRef) {
        if !self.exists(v) {
            self.put(v, None);
        }
    }

    fn put(&mut self, v: &VarRef, s: Option<Sample<'static>>) {
        if v.scope == Scope::Proc {
            if let Ok(mut p) = PROC_VARS.lock() {
                put(&mut p, v, s);
            }
            return;
        }
        put(&mut self.list, v, s);
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

fn put(list: &mut Vec<Entry>, v: &VarRef, s: Option<Sample<'static>>) {
    match list.iter_mut().find(|(k, _)| k == v) {
        Some(e) => e.1 = s,
        None => list.push((v.clone(), s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_variables_exist_unset() {
        let mut vars = Vars::default();
        let v = VarRef::parse("txn.x").unwrap();
        assert!(!vars.exists(&v));
        vars.create(&v);
        assert!(vars.exists(&v));
        assert!(vars.get(&v).is_none());
        vars.set(&v, Sample::Sint(4));
        vars.create(&v);
        assert!(matches!(vars.get(&v), Some(Sample::Sint(4))));
        vars.unset(&v);
        assert!(!vars.exists(&v));
        let s = VarRef::parse("sess.y").unwrap();
        vars.create(&s);
        let back = Vars::with_sess(vars.into_sess());
        assert!(back.exists(&s) && back.get(&s).is_none());
        assert!(!back.exists(&v));
    }
}
