//! Proxy errors that say which side failed and whether a retry is safe.

use std::fmt;

/// Which side of the proxy caused an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
    Internal,
}

/// An error while proxying one stream or request.
#[derive(Debug)]
pub struct ProxyError {
    pub side: Side,
    /// True when nothing irreversible reached the server, so the request
    /// can be sent again (to the same or another server).
    pub retry_safe: bool,
    pub kind: std::io::ErrorKind,
    pub what: &'static str,
}

impl ProxyError {
    pub fn new(side: Side, retry_safe: bool, what: &'static str, err: &std::io::Error) -> Self {
        ProxyError {
            side,
            retry_safe,
            kind: err.kind(),
            what,
        }
    }

    pub fn is_timeout(&self) -> bool {
        self.kind == std::io::ErrorKind::TimedOut
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.side {
            Side::Client => "client",
            Side::Server => "server",
            Side::Internal => "internal",
        };
        write!(
            f,
            "{side} side: {} ({:?}){}",
            self.what,
            self.kind,
            if self.retry_safe { ", retry safe" } else { "" }
        )
    }
}

impl std::error::Error for ProxyError {}
