//! Load-balancing algorithms: pure code, no I/O, no sockets.
//!
//! A backend builds one [`Lb`] from its `balance`, `hash-type` and
//! `option allbackups` settings and a [`ServerSpec`] per server, shares it
//! between its worker threads (it is `Send + Sync`), and asks it for a
//! server with [`Lb::pick`], passing the request's [`RequestKey`] (filled as
//! [`Lb::needs`] says) and a [`ServerView`] through which the balancer
//! reads each server's live state (up, room below `maxconn`, load).
//!
//! Each algorithm lives in its own module, as HAProxy keeps one file per
//! algorithm: [`roundrobin`], [`static_rr`], [`leastconn`], [`first`],
//! [`random`], and the hashing ones (`source`, `uri`, `url_param`,
//! `hdr`, `rdp-cookie`) over [`hash`] with [`map`]
//! (`hash-type map-based`) or [`chash`] (`hash-type consistent`).
//!
//! # Which servers are balanced
//!
//! A server is *usable* when it is up ([`ServerView::up`]) and its
//! effective weight ([`Lb::set_weight`]) is not 0. As in HAProxy, a server
//! of weight 0 does not count as available: when no active server is
//! usable, the backup servers take over, the first one (lowest id) alone,
//! or all of them balanced by the same algorithm with
//! `option allbackups`. When some usable server exists but none has room
//! ([`ServerView::has_room`]), the answer is [`Pick::Full`]: the request
//! waits in the backend queue and never spills to the backups. When nothing
//! is usable at all, the answer is [`Pick::NoServer`].
//!
//! The balancer keeps its own picture of which servers are up, rebuilt into
//! lock-free read-only structures (an `arc-swap` snapshot) whenever it
//! changes: a pick that meets a server its picture says is up but the view
//! says is down skips it and refreshes the picture; each pick also checks
//! one server (in turn) so that servers coming back are noticed within `n`
//! picks; [`Lb::refresh`] applies a change at once, and an effective weight
//! going from 0 to non-zero brings a server back immediately. Backends that
//! push an effective weight of 0 for down servers (as HAProxy's
//! `srv_currently_usable` implies) get exact transitions.
//!
//! # Weights
//!
//! Weights are 0..=256 (larger values are clamped). `roundrobin`,
//! `leastconn`, `first`, `random` and `hash-type consistent` are dynamic:
//! [`Lb::set_weight`] takes effect at once. `static-rr` and
//! `hash-type map-based` are static, as in HAProxy: a new effective weight
//! only matters when it is 0 (the server leaves) or comes back from 0 (it
//! returns with its configured weight).
//!
//! # Costs
//!
//! * `roundrobin`, `static-rr`, map-based hashing: O(1) per pick (the
//!   calling thread's own cursor or one modulo, one table read) while the
//!   chosen server is usable; each skipped server costs one more step.
//!   Threads never share a cursor: each one follows the schedule exactly
//!   from its own staggered start (see [`roundrobin`]).
//! * `leastconn`: O(n) relaxed loads per pick over the n servers of the
//!   group, no lock; `taken` and `released` are one atomic operation on
//!   the server's own cache line (see [`leastconn`]).
//! * consistent hashing and `random`: O(log P) binary search over the ring
//!   of P = 16 × total weight points.
//! * `first`: one check per full server before the chosen one.
//! * Weight and state changes rebuild the structures: O(W log W) for the
//!   schedule of total weight W, O(P) for a ring update, O(n log n) for the
//!   leastconn set.
//!
//! When every candidate is full, a pick tries a bounded number of steps
//! (about twice the number of servers) and then checks every server once
//! before answering [`Pick::Full`]: O(n) only when the backend is saturated.
#![forbid(unsafe_code)]

#[cfg(test)]
mod bench;
pub mod chash;
pub mod first;
pub mod hash;
mod lb;
pub mod leastconn;
mod local;
pub mod map;
pub mod random;
pub mod roundrobin;
pub mod static_rr;
#[cfg(test)]
mod tests;

pub use lb::Lb;

/// From this many worker threads on, round robin (and the round-robin
/// fallback of the hashing algorithms) uses a cursor per thread: no cache
/// line is written by every pick of every core, each thread is exact over
/// full turns of the schedule, and a sequence can differ from HAProxy's by
/// up to one turn per thread. Below it, one shared cursor keeps the whole
/// sequence exactly HAProxy's. Default is 8.
pub const PER_THREAD_FROM: usize = 8;

static PER_THREAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Chooses the round-robin cursors for a process of `threads` worker
/// threads (see [`PER_THREAD_FROM`]); called once at start. Default is the
/// shared cursor.
pub fn set_worker_threads(threads: usize) {
    PER_THREAD.store(
        threads >= PER_THREAD_FROM,
        std::sync::atomic::Ordering::Relaxed,
    );
}

fn per_thread_cursors() -> bool {
    PER_THREAD.load(std::sync::atomic::Ordering::Relaxed)
}
pub use roundrobin::RoundRobin;

/// Static description of one server for the balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSpec {
    /// Configured weight, 0..=256.
    pub weight: u32,
    /// `backup` server.
    pub backup: bool,
    /// HAProxy server id (`id`, by default the position in the backend):
    /// the order of `first` and of backup selection, and the seed of the
    /// server's points on the consistent-hashing ring.
    pub id: u32,
}

/// What the balancer needs to know about servers at pick time (implemented
/// by the backend with atomics). Indexes are positions in the slice given
/// to [`Lb::new`].
pub trait ServerView {
    /// Operational and not in maintenance (its weight may still be 0).
    fn up(&self, i: usize) -> bool;
    /// Below its (dynamic) `maxconn`.
    fn has_room(&self, i: usize) -> bool;
    /// Current requests/connections on it (used by `random`).
    fn load(&self, i: usize) -> u32;
}

/// Request data for the hashing algorithms; the caller fills only what
/// [`Lb::needs`] asks for. A missing key makes the hashing algorithms fall
/// back to (weighted, smooth) round robin, as HAProxy does.
#[derive(Debug, Default, Clone, Copy)]
pub struct RequestKey<'a> {
    /// Client address (`balance source`).
    pub src: Option<std::net::IpAddr>,
    /// Request URI as received (`balance uri`); the balancer cuts it as
    /// `len`, `depth` and `whole` say.
    pub uri: Option<&'a [u8]>,
    /// Value of the header named in [`Needs::header`] (`balance hdr`); an
    /// empty value counts as absent. HAProxy uses the first value of the
    /// header.
    pub header: Option<&'a [u8]>,
    /// Value of the query parameter named in [`Needs::url_param`]
    /// (`balance url_param`), i.e. what follows `name=` up to the next `&`.
    pub url_param: Option<&'a [u8]>,
    /// Value of the RDP cookie named in [`Needs::rdp_cookie`]
    /// (`balance rdp-cookie`), read from the client's first message (see
    /// `fairlead_rules::rdp`); an empty value counts as absent, as in
    /// HAProxy.
    pub rdp_cookie: Option<&'a [u8]>,
}

/// What the configured algorithm reads from each request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// The client address.
    pub src: bool,
    /// The request URI.
    pub uri: bool,
    /// The value of this header.
    pub header: Option<String>,
    /// The value of this query parameter.
    pub url_param: Option<String>,
    /// The value of this RDP cookie (`balance rdp-cookie`, TCP mode).
    pub rdp_cookie: Option<String>,
    /// Informational: `hdr(...) use_domain_only` is set (the balancer
    /// extracts the domain itself from the full header value).
    pub use_domain_only: bool,
}

/// The outcome of a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// Send the request to this server (index).
    Server(usize),
    /// Some eligible server is up but all are full: queue in the backend.
    Full,
    /// No eligible server is up (the caller answers 503 / closes).
    NoServer,
}

/// A server-selection algorithm over a fixed list of servers (indexes
/// `0..n`), for simple callers; backends use [`Lb`]. Implementations are
/// shared by all worker threads, so `pick` takes `&self` and must be exact
/// across threads.
pub trait Algorithm: Send + Sync {
    /// Picks a server among those for which `usable(i)` is true, or `None`
    /// when none is.
    fn pick(&self, usable: &dyn Fn(usize) -> bool) -> Option<usize>;
}
