//! fairlead-term: a fast HTTP/1.1 test origin whose responses are driven by
//! the request's query string (see the README).

use std::net::SocketAddr;

/// Options for [`start`].
#[derive(Debug, Clone)]
pub struct TermOptions {
    /// Worker threads. Default is 1.
    pub threads: usize,
    /// Text returned as body prefix identifying this origin (e.g. its name),
    /// and sent in an `x-served-by` response header. Default is empty.
    pub name: String,
}

/// A running origin.
pub struct TermHandle {
    _private: (),
}

impl TermHandle {
    /// Addresses actually bound (port 0 resolved).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        todo!()
    }
    /// Requests served so far, all listeners.
    pub fn requests(&self) -> u64 {
        todo!()
    }
    /// Connections accepted so far, all listeners.
    pub fn connections(&self) -> u64 {
        todo!()
    }
}

/// Starts serving on `addrs` in background threads and returns at once.
pub fn start(addrs: &[SocketAddr], opts: TermOptions) -> std::io::Result<TermHandle> {
    let _ = (addrs, opts);
    todo!()
}
