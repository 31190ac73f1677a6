//! HAProxy configuration language: lexer, parser and typed model.
//!
//! This crate does no I/O. The caller reads the files and passes their text
//! as [`Source`]s; environment variables are looked up through a closure so
//! that tests can supply their own.
#![forbid(unsafe_code)]

pub mod model;
pub use model::*;

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
    let _ = (sources, env);
    todo!("config parser")
}
