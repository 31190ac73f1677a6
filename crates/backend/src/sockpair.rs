//! `server ... sockpair@<n>`: as HAProxy does, each connection to such a
//! server is a new UNIX socket pair; one end is passed over inherited
//! descriptor `n` (`SCM_RIGHTS`, with two data bytes) to the process at
//! the other end of `n`, which serves it; the other end is the server
//! connection.
//!
//! Passing a descriptor is an OS call this crate does not make itself
//! (it has no `unsafe` code): the runtime installs the sender once at
//! start-up ([`set_sender`]). The sender must not block: when the peer
//! does not read and the pair's buffer is full, the connection fails (a
//! connection error, retried as the backend's `retries` say).

use std::io::{Error, Result};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;

/// Passes the descriptor (second argument) over descriptor `n` (first).
pub type Sender = fn(i32, OwnedFd) -> Result<()>;

static SENDER: OnceLock<Sender> = OnceLock::new();

/// Installs the sender; the first one installed stays.
pub fn set_sender(f: Sender) {
    let _ = SENDER.set(f);
}

/// Opens a connection to the `sockpair@<fd>` server.
pub(crate) fn connect(fd: i32) -> Result<tokio::net::TcpStream> {
    let send = SENDER
        .get()
        .ok_or_else(|| Error::other("no descriptor sender installed for 'sockpair@' servers"))?;
    let (ours, theirs) = UnixStream::pair()?;
    send(fd, OwnedFd::from(theirs))?;
    fairlead_net::unix::stream_from_unix(ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_a_sender() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            if SENDER.get().is_none() {
                let e = connect(3).unwrap_err();
                assert!(e.to_string().contains("no descriptor sender"), "{e}");
            }
            // A sender that refuses: its error is the connection's.
            set_sender(|_, _| Err(Error::other("refused by test sender")));
            let e = connect(3).unwrap_err();
            assert_eq!(e.to_string(), "refused by test sender");
        });
    }
}
