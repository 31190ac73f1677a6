//! `hash-type consistent`: a ring of points, binary-searched.
//!
//! Each server in the balanced group owns 16 points per unit of effective
//! weight (as HAProxy), placed at `avalanche(id * 4096 + k)` for
//! `k = 0..16 * weight`: the positions depend only on the server's id, so
//! they survive restarts and reordering of the configuration, and a weight
//! change only adds or removes that server's last points. A key's hash maps
//! to the first point at or after it (wrapping around); when that server is
//! not usable (full, avoided, down), the walk moves on to the following
//! points, i.e. to the next candidate on the ring, so keys of other servers
//! never move when one server leaves. Lookups are O(log P) for P points.
//!
//! The ring is a sorted `Vec<u64>`: hash in the high 32 bits, then the
//! server index (20 bits) and the point number (12 bits). Updating one
//! server's weight filters and merges in O(P); a change of the whole group
//! (actives to backups) rebuilds it in O(P log P).

use crate::hash::avalanche;

/// Points per unit of weight.
pub const POINTS_PER_WEIGHT: u32 = 16;

fn node(id: u32, srv: usize, k: u32) -> u64 {
    let h = avalanche(id.wrapping_mul(4096).wrapping_add(k));
    (u64::from(h) << 32) | ((srv as u64 & 0xF_FFFF) << 12) | u64::from(k)
}

/// The server index of a ring node.
pub fn srv_of(n: u64) -> usize {
    ((n >> 12) & 0xF_FFFF) as usize
}

fn point_of(n: u64) -> u32 {
    (n & 0xFFF) as u32
}

fn points(w: u32) -> u32 {
    w.min(256) * POINTS_PER_WEIGHT
}

/// Builds the ring for `weights` (per server; 0 = not on the ring), reusing
/// `prev` (the previous ring and the weights it was built for) when only a
/// few servers changed.
pub fn build(prev: Option<(&[u64], &[u32])>, weights: &[u32], ids: &[u32]) -> Vec<u64> {
    if let Some((ring, old)) = prev {
        if old.len() == weights.len() {
            let changed: Vec<usize> = (0..weights.len())
                .filter(|&i| old[i] != weights[i])
                .collect();
            if changed.len() <= 4 {
                let mut out: Option<Vec<u64>> = None;
                for i in changed {
                    let from = out.as_deref().unwrap_or(ring);
                    out = Some(update(from, i, ids[i], points(old[i]), points(weights[i])));
                }
                return out.unwrap_or_else(|| ring.to_vec());
            }
        }
    }
    let mut ring = Vec::with_capacity(weights.iter().map(|&w| points(w) as usize).sum());
    for (i, &w) in weights.iter().enumerate() {
        ring.extend((0..points(w)).map(|k| node(ids[i], i, k)));
    }
    ring.sort_unstable();
    ring
}

/// Moves server `srv` from `from` points to `to` points: one pass over
/// the ring.
fn update(ring: &[u64], srv: usize, id: u32, from: u32, to: u32) -> Vec<u64> {
    if to < from {
        return ring
            .iter()
            .copied()
            .filter(|&n| srv_of(n) != srv || point_of(n) < to)
            .collect();
    }
    let mut add: Vec<u64> = (from..to).map(|k| node(id, srv, k)).collect();
    add.sort_unstable();
    let mut out = Vec::with_capacity(ring.len() + add.len());
    let mut rest = ring;
    for y in add {
        let cut = rest.partition_point(|&x| x < y);
        out.extend_from_slice(&rest[..cut]);
        out.push(y);
        rest = &rest[cut..];
    }
    out.extend_from_slice(rest);
    out
}

/// The first server accepted by `ok` walking the ring from `hash`, trying at
/// most `limit` points.
pub fn lookup(ring: &[u64], hash: u32, limit: usize, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    if ring.is_empty() {
        return None;
    }
    let start = ring.partition_point(|&n| ((n >> 32) as u32) < hash);
    let mut last = usize::MAX;
    for i in 0..limit.min(ring.len()) {
        let s = srv_of(ring[(start + i) % ring.len()]);
        if s == last {
            continue;
        }
        if ok(s) {
            return Some(s);
        }
        last = s;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_follow_weights() {
        let ring = build(None, &[1, 3, 0], &[1, 2, 3]);
        assert_eq!(ring.len(), 64);
        assert!(ring.windows(2).all(|w| w[0] <= w[1]));
        let count = |s| ring.iter().filter(|&&n| srv_of(n) == s).count();
        assert_eq!((count(0), count(1), count(2)), (16, 48, 0));
    }

    #[test]
    fn incremental_equals_full_build() {
        let ids = [5, 9, 13, 21];
        let w0 = [3, 1, 2, 4];
        let ring0 = build(None, &w0, &ids);
        for w1 in [[3, 0, 2, 4], [3, 7, 2, 4], [1, 1, 2, 4], [3, 1, 2, 256]] {
            let inc = build(Some((&ring0, &w0)), &w1, &ids);
            assert_eq!(inc, build(None, &w1, &ids), "{w1:?}");
        }
    }

    #[test]
    fn lookup_wraps_and_skips() {
        let ring = build(None, &[1, 1], &[1, 2]);
        let top = (ring[ring.len() - 1] >> 32) as u32;
        if top < u32::MAX {
            // Past the last point: wraps to the first.
            assert_eq!(lookup(&ring, top + 1, 8, &|_| true), Some(srv_of(ring[0])));
        }
        assert_eq!(lookup(&ring, 0, 64, &|s| s == 1), Some(1));
        assert_eq!(lookup(&ring, 0, 64, &|_| false), None);
    }
}
