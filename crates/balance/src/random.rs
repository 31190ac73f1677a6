//! `balance random[(<draws>)]`: power of N choices over the consistent ring.
//!
//! Each draw takes a random point on the ring of [`crate::chash`] (so a
//! server is drawn in proportion to its effective weight, and weight
//! changes take effect at once) and keeps the usable server found there;
//! after `draws` draws (2 by default) the least loaded of them for its
//! weight (`load / weight`, compared by cross-multiplication; the later draw
//! wins ties) gets the request. Drawing only servers that have room, it
//! returns a full server only when none has room. The load is the caller's
//! [`crate::ServerView::load`].
//!
//! Random numbers come from a per-thread xorshift64* generator seeded from a
//! process-wide counter through splitmix64: no system call, no shared
//! state, and no dependency (the quality needed here is modest).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static SEED: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);

thread_local! {
    static STATE: Cell<u64> = const { Cell::new(0) };
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random 64-bit number from this thread's generator.
pub fn next_u64() -> u64 {
    STATE.with(|st| {
        let mut x = st.get();
        if x == 0 {
            let base = SEED.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
            x = splitmix64(base ^ (st as *const Cell<u64> as u64)) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        st.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// Draws `draws` servers from `ring` (each accepted by `ok`) and keeps the
/// least loaded for its weight.
pub fn pick(
    ring: &[u64],
    weight: &[u32],
    draws: u32,
    limit: usize,
    load: &dyn Fn(usize) -> u32,
    ok: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let mut best: Option<(usize, u64)> = None;
    for _ in 0..draws.max(1) {
        let h = (next_u64() >> 32) as u32;
        let Some(s) = crate::chash::lookup(ring, h, limit, ok) else {
            break;
        };
        let l = u64::from(load(s));
        best = match best {
            Some((b, bl)) if b != s && l * u64::from(weight[b]) > bl * u64::from(weight[s]) => {
                Some((b, bl))
            }
            _ => Some((s, l)),
        };
    }
    best.map(|b| b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_moves_and_spreads() {
        let a = next_u64();
        let b = next_u64();
        assert_ne!(a, b);
        let mut buckets = [0u32; 8];
        for _ in 0..8000 {
            buckets[(next_u64() >> 61) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&c| (800..1200).contains(&c)),
            "{buckets:?}"
        );
    }

    #[test]
    fn keeps_the_least_loaded_draw() {
        let ring = crate::chash::build(None, &[1, 1], &[1, 2]);
        let load = |s: usize| if s == 0 { 100 } else { 0 };
        let mut ones = 0;
        for _ in 0..1000 {
            if pick(&ring, &[1, 1], 2, 64, &load, &|_| true) == Some(1) {
                ones += 1;
            }
        }
        // Server 1 wins unless both draws hit server 0: with server 0's
        // ring share p (about 1/2, not exactly), 1000 * (1 - p^2) of the
        // picks, well above the ~500 a single draw would give, and below
        // 1000 since both draws sometimes land on server 0.
        assert!((600..990).contains(&ones), "{ones}");
    }
}
