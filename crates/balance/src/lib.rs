//! Load-balancing algorithms: pure code, no I/O, no sockets.
//!
//! Each algorithm lives in its own module behind the [`Algorithm`] trait, as
//! HAProxy keeps one file per algorithm behind a small set of hooks. The
//! caller says which servers are usable through a predicate; the algorithm
//! returns a server index.
#![forbid(unsafe_code)]

pub mod roundrobin;

pub use roundrobin::RoundRobin;

/// A server-selection algorithm over a fixed list of servers (indexes
/// `0..n`). Implementations are shared by all worker threads, so `pick`
/// takes `&self` and must be exact across threads.
pub trait Algorithm: Send + Sync {
    /// Picks a server among those for which `usable(i)` is true, or `None`
    /// when none is.
    fn pick(&self, usable: &dyn Fn(usize) -> bool) -> Option<usize>;
}
