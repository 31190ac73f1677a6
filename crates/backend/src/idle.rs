//! Per-thread pool of idle server connections (HAProxy's idle/safe
//! connection lists). Connections are keyed by server id and never cross
//! threads, so taking and returning one costs no lock.

use crate::ServerId;
use fairlead_net::Conn;
use std::cell::RefCell;
use std::collections::HashMap;

/// Idle connections kept per server and thread at most. Default is 256.
pub const MAX_IDLE_PER_SERVER: usize = 256;

thread_local! {
    /// Per server: idle connections and when each was parked. Taking pops
    /// the most recently parked one, so under steady load the same few
    /// connections cycle and the others age.
    static IDLE: RefCell<HashMap<ServerId, Vec<(Conn, std::time::Instant)>>> = RefCell::new(HashMap::new());
}

/// Takes a live idle connection to server `id`, discarding dead ones.
/// `sni`: for a TLS server whose SNI varies per request, only a
/// connection made with that name fits (`None`: any).
pub fn take(id: ServerId, sni: Option<&str>) -> Option<Conn> {
    IDLE.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.get_mut(&id)?;
        if let Some(want) = sni {
            let fits = |c: &Conn| {
                c.tls_info_ref()
                    .is_some_and(|i| i.sni.as_deref() == Some(want))
            };
            while let Some(pos) = list.iter().rposition(|(c, _)| fits(c)) {
                let (c, _) = list.remove(pos);
                if c.idle_alive() {
                    return Some(c);
                }
            }
            return None;
        }
        while let Some((s, _)) = list.pop() {
            if s.idle_alive() {
                return Some(s);
            }
        }
        None
    })
}

/// Like [`take`], keeping only a connection that `fits` (for a server whose
/// address changed: one made to its current address, see
/// [`crate::ServerAdmin::conn_fits`]); the others are closed as they are
/// met, never reused.
pub fn take_fitting(id: ServerId, sni: Option<&str>, fits: impl Fn(&Conn) -> bool) -> Option<Conn> {
    loop {
        let c = take(id, sni)?;
        if fits(&c) {
            return Some(c);
        }
    }
}

/// Returns a connection to the idle pool of server `id`.
pub fn put(id: ServerId, stream: Conn) {
    IDLE.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.entry(id).or_default();
        if list.len() < MAX_IDLE_PER_SERVER {
            list.push((stream, std::time::Instant::now()));
        }
    })
}

/// Number of idle connections this thread holds for server `id`.
pub fn count(id: ServerId) -> usize {
    IDLE.with(|m| m.borrow().get(&id).map_or(0, Vec::len))
}

/// How often idle pools are trimmed. Default is 5s, HAProxy's
/// `pool-purge-delay`.
pub const PURGE_DELAY: std::time::Duration = std::time::Duration::from_secs(5);

/// Closes the idle connections that nobody reused for a whole purge
/// period (HAProxy's periodic purge of unused idle connections); busy ones
/// keep cycling. Returns how many were closed.
pub fn purge() -> usize {
    let now = std::time::Instant::now();
    IDLE.with(|m| {
        let mut m = m.borrow_mut();
        let mut closed = 0;
        for list in m.values_mut() {
            let before = list.len();
            list.retain(|(_, parked)| now.duration_since(*parked) < PURGE_DELAY);
            closed += before - list.len();
        }
        m.retain(|_, l| !l.is_empty());
        closed
    })
}

/// Drops every idle connection of this thread (used at soft stop).
pub fn clear() {
    IDLE.with(|m| m.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_to_an_old_address_are_dropped_when_taken() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let old = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let new = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let (a_old, a_new) = (old.local_addr().unwrap(), new.local_addr().unwrap());
            let c_old = tokio::net::TcpStream::connect(a_old).await.unwrap();
            let _s_old = old.accept().await.unwrap();
            let c_new = tokio::net::TcpStream::connect(a_new).await.unwrap();
            let _s_new = new.accept().await.unwrap();
            // most recently parked first: the old one is met first
            put(ServerId(9101), Conn::plain(c_new));
            put(ServerId(9101), Conn::plain(c_old));
            assert_eq!(count(ServerId(9101)), 2);
            let got = take_fitting(ServerId(9101), None, |c| c.peer_addr().ok() == Some(a_new))
                .expect("the connection to the new address");
            assert_eq!(got.peer_addr().unwrap(), a_new);
            assert_eq!(count(ServerId(9101)), 0, "the stale connection was closed");
            put(ServerId(9101), got);
            assert!(
                take_fitting(ServerId(9101), None, |c| c.peer_addr().ok() == Some(a_old)).is_none()
            );
            assert_eq!(count(ServerId(9101)), 0);
        });
    }
}
