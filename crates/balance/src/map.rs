//! `hash-type map-based`: the hash modulo the total weight indexes a table
//! in which each usable server appears `weight` times (the smooth
//! round-robin schedule, see [`crate::roundrobin`]).
//!
//! O(1) per lookup. As HAProxy warns, the table only holds the servers
//! usable at the moment, so a server going down or coming back changes the
//! modulo and moves most keys: use `consistent` when that matters. The
//! method is static: run-time weight changes other than to 0 (drain/down)
//! and back are ignored, as HAProxy does. When the designated server is not
//! usable at pick time (full, avoided), the next slots are tried in order.

/// The first server accepted by `ok` from slot `hash % len` on, trying at
/// most `limit` slots.
pub fn lookup(table: &[u32], hash: u32, limit: usize, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    let len = table.len();
    if len == 0 {
        return None;
    }
    let start = hash as usize % len;
    (0..limit.min(len))
        .map(|i| table[(start + i) % len] as usize)
        .find(|&s| ok(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulo_then_next_slot() {
        let table = [0, 1, 2, 0];
        assert_eq!(lookup(&table, 5, 4, &|_| true), Some(1));
        assert_eq!(lookup(&table, 5, 4, &|s| s != 1), Some(2));
        assert_eq!(lookup(&table, 7, 4, &|s| s == 2), Some(2));
        assert_eq!(lookup(&[], 7, 4, &|_| true), None);
    }
}
