//! `http-request do-resolve`: the process phase stops on the action
//! ([`crate::process::Decision::Resolve`]), the session resolves the name
//! here while the request waits, stores the address in the variable and
//! runs the rules again from the next one.
//!
//! The resolution itself belongs to the process: it installs its
//! resolver once with [`fairlead_rules::resolve::set_resolver`] (the
//! runtime wires its `resolvers` sections). Without one, or when the
//! resolution fails, the variable stays unset, as HAProxy leaves it on
//! any error.

use crate::txn::Vars;
use fairlead_rules::resolve::Resolved;

/// Resolves `r.name` and stores the address in `r.var`.
pub(crate) async fn resolve_into(r: &Resolved, vars: &mut Vars) {
    if let Some(ip) = fairlead_rules::resolve::resolve(r).await {
        vars.set(&r.var, Resolved::sample(ip));
    }
}
