//! Connecting to a server with HAProxy's retry rules.
//!
//! - The balancer picks a server; a failed connection is retried up to
//!   `retries` times.
//! - Retries go to the same server after a turn-around delay of
//!   min(`timeout connect`, 1 s), as HAProxy does, so a restarting server is
//!   not hammered.
//! - With `option redispatch`, the last retry goes to another server (no
//!   delay), HAProxy's default redispatch interval of -1.

use crate::{Backend, ServerSlot};
use std::time::Duration;
use tokio::net::TcpStream;

/// A new connection to a server, with the server's request slot held.
pub struct Connected {
    pub idx: usize,
    pub stream: TcpStream,
    pub slot: ServerSlot,
}

/// Why no connection could be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectFail {
    /// No usable server (all down, disabled or full).
    NoServer,
    /// Every attempt failed; `timeout` tells whether the last one timed out.
    Failed { timeout: bool },
}

/// Connects to a server of `be`, trying `first` if given (a server chosen
/// earlier), else asking the balancer.
pub async fn connect_server(be: &Backend, first: Option<usize>) -> Result<Connected, ConnectFail> {
    let mut idx = match first {
        Some(i) => i,
        None => be.pick(None).ok_or(ConnectFail::NoServer)?,
    };
    let mut slot = be.acquire(idx);
    let retries = be.options.retries;
    let connect_timeout = be.options.timeouts.connect;
    let mut attempt = 0;
    loop {
        let server = &be.servers[idx];
        match fairlead_net::connect(server.addr, connect_timeout).await {
            Ok(stream) => {
                server
                    .connects
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(Connected { idx, stream, slot });
            }
            Err(e) => {
                server
                    .connect_errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if attempt >= retries {
                    return Err(ConnectFail::Failed {
                        timeout: e.kind() == std::io::ErrorKind::TimedOut,
                    });
                }
                attempt += 1;
                if be.options.redispatch && attempt == retries {
                    if let Some(other) = be.pick(Some(idx)) {
                        if other != idx {
                            drop(slot);
                            idx = other;
                            slot = be.acquire(idx);
                            continue;
                        }
                    }
                }
                let turnaround = connect_timeout
                    .unwrap_or(Duration::from_secs(1))
                    .min(Duration::from_secs(1));
                tokio::time::sleep(turnaround).await;
            }
        }
    }
}
