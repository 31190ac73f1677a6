//! HAProxy's `freq_ctr` over a configurable period (`update_freq_ctr_period`
//! and `read_freq_ctr_period`), with the time passed in explicitly.
//!
//! A counter holds the start of the current period, the events counted in
//! it and those of the previous period. The period is anchored on the first
//! event, not on fixed boundaries. Reading gives
//! `(prev × remain + curr × P) / P` (integer division) where `remain` is the
//! part of the current period still to run; with no event in the current
//! period and a previous count of at most 1, the previous count is returned
//! unweighted (HAProxy's anti-flapping correction). After the last event
//! the rate reaches 0 between one and two periods later.
//!
//! Counts are 32-bit and wrap as in HAProxy; the read result is truncated
//! to 32 bits like `div64_32`. Times are milliseconds on the caller's
//! monotonic clock. A period of 0 (accepted by HAProxy's parser) is treated
//! as 1 ms so that nothing divides by zero.

/// One frequency counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FreqCtr {
    /// Start of the current period in ms; `None` until the first event.
    curr_tick: Option<u64>,
    curr: u32,
    prev: u32,
}

impl FreqCtr {
    /// Adds `inc` events at `now` and returns the current period's count.
    pub fn update(&mut self, period_ms: u32, inc: u32, now: u64) -> u32 {
        let period = u64::from(period_ms.max(1));
        let Some(tick) = self.curr_tick else {
            // A zeroed counter in HAProxy is far in the past: it rotates
            // twice, so the first event starts a period at `now`.
            self.prev = 0;
            self.curr = inc;
            self.curr_tick = Some(now);
            return inc;
        };
        let elapsed = now.saturating_sub(tick);
        if elapsed < period {
            self.curr = self.curr.wrapping_add(inc);
            return self.curr;
        }
        self.prev = self.curr;
        self.curr = inc;
        let mut tick = tick + period;
        if now.saturating_sub(tick) >= period {
            // At least two periods were missed.
            self.prev = 0;
            tick = now;
        }
        self.curr_tick = Some(tick);
        inc
    }

    /// The rate at `now`: events per period.
    pub fn read(&self, period_ms: u32, now: u64) -> u32 {
        let period = i64::from(period_ms.max(1));
        let Some(tick) = self.curr_tick else {
            return 0;
        };
        let mut curr = u64::from(self.curr);
        let mut past = u64::from(self.prev);
        let tick = i64::try_from(tick).unwrap_or(i64::MAX);
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let mut remain = tick.saturating_add(period).saturating_sub(now);
        if remain < 0 {
            remain += period;
            past = if remain >= 0 { curr } else { 0 };
            curr = 0;
        }
        if curr == 0 && past <= 1 {
            return past as u32;
        }
        let remain = remain.max(0) as u64;
        let period = period as u64;
        let total = past * remain + curr * period;
        (total / period) as u32
    }

    /// The current period's count (what `sc_inc_gpc0` returns for a
    /// `gpc0_rate`-only table).
    pub fn curr_ctr(&self) -> u32 {
        self.curr
    }

    /// Sets the counter as the CLI's `set table ... data.<rate> V` does:
    /// the current period starts at `now` (with its low bit cleared, as
    /// HAProxy reserves it for a lock) with `value` events and no past.
    pub fn set(&mut self, value: u32, now: u64) {
        self.curr_tick = Some(now & !1);
        self.prev = 0;
        self.curr = value;
    }

    /// A counter from its raw state (as received from a peer).
    pub fn from_raw(curr_tick: Option<u64>, curr: u32, prev: u32) -> FreqCtr {
        FreqCtr {
            curr_tick,
            curr,
            prev,
        }
    }

    /// Raw state `(curr_tick, curr, prev)`, for peers and tests.
    pub fn raw(&self) -> (Option<u64>, u32, u32) {
        (self.curr_tick, self.curr, self.prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_window() {
        let mut f = FreqCtr::default();
        let p = 10_000;
        for _ in 0..10 {
            f.update(p, 1, 1_000);
        }
        assert_eq!(f.read(p, 1_000), 10);
        assert_eq!(f.read(p, 10_999), 10);
        // Next period: remain = 1000 + 20000 - 12000 - ... weighted past.
        // now=13_000: remain = 1000+10000-13000 = -2000 -> +10000 = 8000,
        // past = 10, curr = 0 -> (10*8000)/10000 = 8.
        assert_eq!(f.read(p, 13_000), 8);
        // One event in the new period rotates: prev=10, curr=1, tick=11000.
        f.update(p, 1, 13_000);
        assert_eq!(f.raw(), (Some(11_000), 1, 10));
        // remain = 11000+10000-13000 = 8000 -> (10*8000 + 1*10000)/10000 = 9
        assert_eq!(f.read(p, 13_000), 9);
        // Exactly two periods after the last rotation, the last period's
        // single event still shows (anti-flapping); then 0.
        assert_eq!(f.read(p, 31_000), 1);
        assert_eq!(f.read(p, 31_001), 0);
    }

    #[test]
    fn anti_flapping_low_rate() {
        let mut f = FreqCtr::default();
        f.update(1000, 1, 5_000);
        // past <= 1 and no current: the past is returned unweighted.
        assert_eq!(f.read(1000, 6_500), 1);
        // remain reaches exactly 0 at 7000: still reported.
        assert_eq!(f.read(1000, 7_000), 1);
        assert_eq!(f.read(1000, 7_001), 0);
    }

    #[test]
    fn missed_two_periods_resets() {
        let mut f = FreqCtr::default();
        f.update(1000, 5, 0);
        f.update(1000, 1, 2_500);
        assert_eq!(f.raw(), (Some(2_500), 1, 0));
        f.update(1000, 2, 3_600);
        assert_eq!(f.raw(), (Some(3_500), 2, 1));
    }

    #[test]
    fn cli_set_and_zero_period() {
        let mut f = FreqCtr::default();
        f.set(42, 1001);
        assert_eq!(f.raw(), (Some(1000), 42, 0));
        assert_eq!(f.read(0, 1000), 42);
        assert_eq!(f.update(0, 1, 1000), 43);
    }
}
