//! `http-request do-resolve`: the process phase stops on the action
//! ([`crate::process::Decision::Resolve`]), the session resolves the name
//! here while the request waits, stores the address in the variable and
//! runs the rules again from the next one.
//!
//! The resolution itself belongs to the process: it installs a
//! [`Resolver`] once with [`set_resolver`] (the runtime wires its
//! `resolvers` sections). Without one, or when the resolution fails, the
//! variable stays unset, as HAProxy leaves it on any error.

use crate::txn::Vars;
use fairlead_rules::resolve::{ResolveFamily, Resolved};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

/// The answer of one resolution: an address, or none on any failure.
pub type ResolveFuture = Pin<Box<dyn Future<Output = Option<IpAddr>> + Send>>;

/// Resolves `name` with the `resolvers` section called `resolvers`,
/// asking `family` first. It must end on its own (the section's retries
/// and timeouts bound it).
pub type Resolver = Arc<dyn Fn(&str, &str, ResolveFamily) -> ResolveFuture + Send + Sync>;

static RESOLVER: OnceLock<Resolver> = OnceLock::new();

/// Installs the process's resolver (once; later calls are ignored).
/// Default is none: `do-resolve` leaves its variable unset.
pub fn set_resolver(r: Resolver) {
    let _ = RESOLVER.set(r);
}

/// Resolves `r.name` and stores the address in `r.var`.
pub(crate) async fn resolve_into(r: &Resolved, vars: &mut Vars) {
    let Some(resolver) = RESOLVER.get() else {
        return;
    };
    if let Some(ip) = resolver(&r.resolvers, &r.name, r.family).await {
        vars.set(&r.var, Resolved::sample(ip));
    }
}
