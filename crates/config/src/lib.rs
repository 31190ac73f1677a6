//! HAProxy configuration language: lexer, parser and typed model.
//!
//! This crate does no I/O. The caller reads the files and passes their text
//! as [`Source`]s; environment variables are looked up through a closure so
//! that tests can supply their own.
//!
//! Modules: [`lexer`] (words, quotes, escapes, variables), `cond`
//! (`.if` blocks), [`units`] (times and sizes), `keywords` (the catalog of
//! HAProxy 2.6 keywords and what Fairlead does with each), `sections`
//! (section driver, `global`, proxies), `bind`, `server` and `tls` (TLS
//! options of both, and the global TLS defaults), `dns` (`resolvers`
//! sections and `server-template`, through `fairlead-dns`; its
//! `parse-resolv-conf` reads `/etc/resolv.conf`, the one exception to the
//! no-I/O rule).
#![forbid(unsafe_code)]

mod bind;
mod cond;
mod diag;
mod dns;
mod keywords;
pub mod lexer;
pub mod model;
mod sections;
mod server;
pub mod server_state;
mod tls;
pub mod units;

pub use cond::COMPAT_VERSION;
pub use dns::MAX_TEMPLATE_SLOTS;
pub use keywords::{keyword_support, KeywordInfo, Support};
pub use model::*;
pub use server::parse_dynamic_server;
pub use units::{parse_size, parse_time};

/// One configuration file's text.
#[derive(Debug, Clone)]
pub struct Source {
    /// Name used in diagnostics (the path as given).
    pub name: String,
    pub text: String,
}

/// A successful parse: the model plus any warnings.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub config: Config,
    /// Only `Level::Warning` entries.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses all sources in order, as if concatenated. Returns every error found
/// (not only the first) when the configuration is rejected; the error list
/// also carries the warnings.
pub fn parse(
    sources: &[Source],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed, Vec<Diagnostic>> {
    let mut parser = sections::Parser::new(env);
    for src in sources {
        parser.source(src);
    }
    let files: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    parser.finish(&files)
}

#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_lb;
#[cfg(test)]
mod tests_log;
#[cfg(test)]
mod tests_peers;
#[cfg(test)]
mod tests_splice;
#[cfg(test)]
mod tests_stats;
#[cfg(test)]
mod tests_tls;
