//! Per-thread pool of idle server connections (HAProxy's idle/safe
//! connection lists). Connections are keyed by server id and never cross
//! threads, so taking and returning one costs no lock.
//!
//! A connection parked after a request that was not its first is *safe*
//! (it has been reused at least once, proving that the server keeps
//! connections open): `http-reuse aggressive` only sends a session's
//! first request over such a connection.

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
    static IDLE: RefCell<HashMap<ServerId, Vec<Parked>>> = RefCell::new(HashMap::new());
}

/// An idle connection, when it was parked, and whether it is safe
/// (reused at least once).
struct Parked {
    conn: Conn,
    at: std::time::Instant,
    safe: bool,
}

/// Takes a live idle connection to server `id`, discarding dead ones.
/// `sni`: for a TLS server whose SNI varies per request, only a
/// connection made with that name fits (`None`: any). `safe_only`: only
/// a safe one.
fn take(id: ServerId, sni: Option<&str>, safe_only: bool) -> Option<Conn> {
    IDLE.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.get_mut(&id)?;
        let fits = |p: &Parked| {
            (p.safe || !safe_only)
                && sni.is_none_or(|want| {
                    p.conn
                        .tls_info_ref()
                        .is_some_and(|i| i.sni.as_deref() == Some(want))
                })
        };
        while let Some(pos) = list.iter().rposition(fits) {
            let p = list.remove(pos);
            if p.conn.idle_alive() {
                return Some(p.conn);
            }
        }
        None
    })
}

/// Takes a live idle connection to server `id` that `fits` (for a server
/// whose address changed: one made to its current address, see
/// [`crate::ServerAdmin::conn_fits`]); dead ones and the others are closed
/// as they are met, never reused. `sni`: for a TLS server whose SNI varies
/// per request, only a connection made with that name fits (`None`: any).
/// `safe_only`: only a connection reused at least once (`http-reuse
/// aggressive`, a session's first request).
pub fn take_fitting(
    id: ServerId,
    sni: Option<&str>,
    safe_only: bool,
    fits: impl Fn(&Conn) -> bool,
) -> Option<Conn> {
    loop {
        let c = take(id, sni, safe_only)?;
        if fits(&c) {
            return Some(c);
        }
    }
}

/// Returns a connection to the idle pool of server `id`. `reused`: the
/// request it just served was not its first (the connection is safe).
pub fn put(id: ServerId, stream: Conn, reused: bool) {
    IDLE.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.entry(id).or_default();
        if list.len() < MAX_IDLE_PER_SERVER {
            list.push(Parked {
                conn: stream,
                at: std::time::Instant::now(),
                safe: reused,
            });
        }
    })
}

/// Number of safe idle connections (reused at least once) this thread
/// holds for server `id`.
pub fn count_safe(id: ServerId) -> usize {
    IDLE.with(|m| {
        m.borrow()
            .get(&id)
            .map_or(0, |l| l.iter().filter(|p| p.safe).count())
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
            list.retain(|p| now.duration_since(p.at) < PURGE_DELAY);
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
            put(ServerId(9101), Conn::plain(c_new), false);
            put(ServerId(9101), Conn::plain(c_old), false);
            assert_eq!(count(ServerId(9101)), 2);
            let got = take_fitting(ServerId(9101), None, false, |c| {
                c.peer_addr().ok() == Some(a_new)
            })
            .expect("the connection to the new address");
            assert_eq!(got.peer_addr().unwrap(), a_new);
            assert_eq!(count(ServerId(9101)), 0, "the stale connection was closed");
            put(ServerId(9101), got, false);
            assert!(take_fitting(ServerId(9101), None, false, |c| {
                c.peer_addr().ok() == Some(a_old)
            })
            .is_none());
            assert_eq!(count(ServerId(9101)), 0);
        });
    }

    #[test]
    fn safe_only_takes_connections_reused_at_least_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let a = l.local_addr().unwrap();
            let once = tokio::net::TcpStream::connect(a).await.unwrap();
            let _s1 = l.accept().await.unwrap();
            let twice = tokio::net::TcpStream::connect(a).await.unwrap();
            let _s2 = l.accept().await.unwrap();
            let twice_port = twice.local_addr().unwrap().port();
            let id = ServerId(9102);
            put(id, Conn::plain(twice), true);
            put(id, Conn::plain(once), false);
            assert_eq!((count(id), count_safe(id)), (2, 1));
            // The most recent one is not safe: skipped, and kept.
            let got = take_fitting(id, None, true, |_| true).expect("the safe one");
            assert_eq!(got.local_addr().unwrap().port(), twice_port);
            assert_eq!((count(id), count_safe(id)), (1, 0));
            assert!(take_fitting(id, None, true, |_| true).is_none());
            assert!(take_fitting(id, None, false, |_| true).is_some());
            assert_eq!(count(id), 0);
        });
    }
}
