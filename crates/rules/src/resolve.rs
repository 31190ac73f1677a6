//! `http-request|tcp-request content do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>`
//! (HAProxy 2.6 `configuration.txt` sections 4.2): resolves the name
//! `<expr>` gives with a `resolvers` section and stores the address in
//! `<var>`.
//!
//! The rule engine is synchronous, so the action does not resolve
//! anything itself: [`crate::exec::run_from`] stops on it with
//! [`crate::exec::Verdict::Resolve`] and the index of the rule, the proxy
//! resolves the name (the request waits, as in HAProxy), stores the
//! address with [`Resolved::store`] and runs the rules again from the
//! next one. On any failure the variable is left as it was (unset).
//!
//! The resolution itself belongs to the process: it installs a
//! [`Resolver`] once with [`set_resolver`] (the runtime wires its
//! `resolvers` sections); the proxies call [`resolve`]. Without one the
//! variable stays unset.

use crate::expr::{split_call, Expr};
use crate::sample::Sample;
use crate::txn::{Scope, VarRef};
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

/// Resolves what a `do-resolve` left ([`Resolved`]) with the installed
/// [`Resolver`]: the address, or none (no resolver, any failure).
pub async fn resolve(r: &Resolved) -> Option<IpAddr> {
    let resolver = RESOLVER.get()?;
    resolver(&r.resolvers, &r.name, r.family).await
}

/// The address family a `do-resolve` asks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveFamily {
    Ipv4,
    Ipv6,
}

/// One `do-resolve` action.
#[derive(Debug)]
pub struct DoResolve {
    /// Where the address goes.
    pub var: VarRef,
    /// The `resolvers` section's name.
    pub resolvers: String,
    /// The family asked first (the other one when it has no address).
    /// Default is `ipv6`, as HAProxy's `resolve-prefer`.
    pub family: ResolveFamily,
    /// The name to resolve.
    pub expr: Expr,
}

/// A name to resolve, as the rules left it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub var: VarRef,
    pub resolvers: String,
    pub family: ResolveFamily,
    pub name: String,
}

impl Resolved {
    /// The sample to store in [`Self::var`] for `ip`.
    pub fn sample(ip: IpAddr) -> Sample<'static> {
        match ip {
            IpAddr::V4(a) => Sample::Ipv4(a),
            IpAddr::V6(a) => Sample::Ipv6(a),
        }
    }
}

/// Parses `do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>` (the words
/// of the action). `known` says whether a `resolvers` section exists.
pub(crate) fn parse(
    words: &[String],
    known: impl Fn(&str) -> bool,
    expr: impl Fn(&str) -> Result<Expr, String>,
) -> Result<DoResolve, String> {
    let (_, args) = split_call(&words[0])?;
    let usage = "expects 'do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>'";
    let (var, resolvers, family) = match args.as_slice() {
        [v, r] => (v, r, ResolveFamily::Ipv6),
        [v, r, f] => {
            let family = match f.as_str() {
                "ipv4" => ResolveFamily::Ipv4,
                "ipv6" => ResolveFamily::Ipv6,
                other => {
                    return Err(format!(
                        "invalid resolution preference '{other}' (expects 'ipv4' or 'ipv6')"
                    ))
                }
            };
            (v, r, family)
        }
        _ => return Err(usage.into()),
    };
    let var = VarRef::parse(var)?;
    if var.scope == Scope::Res {
        return Err("variable scope 'res' is not available in 'http-request' rules".into());
    }
    if !known(resolvers) {
        return Err(format!("can't find resolvers section '{resolvers}'"));
    }
    let [_, e] = words else {
        return Err(usage.into());
    };
    Ok(DoResolve {
        var,
        resolvers: resolvers.clone(),
        family,
        expr: expr(e)?,
    })
}
