//! `balance first`: the usable server with the lowest id that has room gets
//! the request; once it reaches its `maxconn`, the next one (by id) is used.
//!
//! The order comes from the server ids (`id`, which default to the position
//! in the backend). A server without `maxconn` (unlimited) always has room,
//! so it takes everything and the servers after it get nothing, as in
//! HAProxy: this algorithm only makes sense with `maxconn` set. Servers of
//! effective weight 0 are left out; the weights play no other part. The
//! cost is one check per full server skipped.

/// The first server of `by_id` (the group sorted by id) accepted by `ok`.
pub fn pick(by_id: &[u32], ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    by_id.iter().map(|&s| s as usize).find(|&s| ok(s))
}
