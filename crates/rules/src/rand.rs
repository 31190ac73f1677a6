//! A small per-thread pseudo-random generator (xorshift64*) for `rand`,
//! `uuid` and the like: not for cryptography.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let here = &t as *const u64 as u64;
    (t ^ here.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15) | 1
}

/// The next 64 random bits of this thread's generator.
pub fn next_u64() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// The next 32 random bits.
pub fn next_u32() -> u32 {
    (next_u64() >> 32) as u32
}
