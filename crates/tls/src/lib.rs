//! TLS for Fairlead, on rustls with the aws-lc-rs provider.
//!
//! - [`certs`]: loading `crt` files, directories and `crt-list`s, with
//!   HAProxy's conventions (chain and key in one PEM, `.key` companions).
//! - [`resolver`]: picking the certificate for a ClientHello (SNI, exact
//!   and wildcard names, RSA and ECDSA for the same name, `strict-sni`).
//! - [`suites`]: `ssl-min-ver`/`ssl-max-ver`, `ciphers`, `ciphersuites`.
//! - [`bind`]: a listener's reloadable server-side context.
//! - [`origin`]: a server's client-side context (`server ... ssl`).
//! - [`stream`]: the per-connection driver over rustls' unbuffered API.

pub mod bind;
pub mod cert_algs;
pub mod certs;
pub mod origin;
pub mod resolver;
pub mod stream;
pub mod suites;

pub use bind::BindContext;
pub use origin::ServerContext;

pub use rustls::pki_types::ServerName;

/// A TLS set-up error: which file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    /// The file at fault, if one is.
    pub file: Option<String>,
    pub message: String,
}

impl TlsError {
    pub fn new(file: Option<&str>, message: impl Into<String>) -> TlsError {
        TlsError {
            file: file.map(str::to_string),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "'{file}': {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TlsError {}
