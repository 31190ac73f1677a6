//! What servers added at run time inherit from the configuration.

use super::{Config, Global};

impl Config {
    /// What `add server` needs from this configuration: the global TLS
    /// settings servers inherit (`ssl-server-verify`, `ca-base`,
    /// `crt-base`, `ssl-default-server-*`). See
    /// [`crate::parse_dynamic_server`].
    pub fn dynamic_server_defaults(&self) -> DynamicServerDefaults {
        DynamicServerDefaults {
            global: Box::new(self.global.clone()),
            tls: self.server_tls_defaults.clone(),
        }
    }
}

/// The global settings a server added at run time inherits (see
/// [`Config::dynamic_server_defaults`]). Default is HAProxy's defaults
/// (`ssl-server-verify required`, no base directories, no
/// `ssl-default-server-*`).
#[derive(Debug, Clone, Default)]
pub struct DynamicServerDefaults {
    pub(crate) global: Box<Global>,
    pub(crate) tls: crate::tls::DefaultTls,
}
