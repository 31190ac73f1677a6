//! [`ServerHealth`]: the per-server state shared between the checker thread
//! (writer) and the request path (reader, and reporter of passive checks).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use tokio::sync::Notify;

/// Monotonic origin for [`ServerHealth::last_change_secs`].
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Where the clock starts: far enough from zero that a change restored
/// from a state file (`now - seconds since the change`) is still a
/// positive time, as it is in the previous process. 2^40 ms is about 35
/// years.
const ORIGIN_MS: u64 = 1 << 40;

fn now_ms() -> u64 {
    ORIGIN_MS + base().elapsed().as_millis() as u64
}

/// Shared per-server health state, used as `Arc<ServerHealth>`.
///
/// Everything the request path calls ([`is_up`](Self::is_up),
/// [`is_drain`](Self::is_drain), [`weight_pct`](Self::weight_pct),
/// [`observe`](Self::observe)) is a relaxed atomic load or, on errors only,
/// an atomic increment. The checker thread is the only writer of the state.
#[derive(Debug)]
pub struct ServerHealth {
    up: AtomicBool,
    drain: AtomicBool,
    nolb: AtomicBool,
    weight_pct: AtomicU32,
    /// Milliseconds since [`base`] at the last change of `up`.
    last_change_ms: AtomicU64,
    status: Mutex<String>,
    /// `error-limit` while a checker applies `observe`; 0 = not observed.
    error_limit: AtomicU32,
    errors: AtomicU32,
    /// Times `error-limit` was reached; the checker takes them.
    pending: AtomicU32,
    check_health: AtomicU32,
    pub(crate) notify: Notify,
}

impl ServerHealth {
    /// A server starts up or down. Servers without `check` (and without an
    /// agent) are created up and stay up forever: nothing ever writes to
    /// them. For checked servers HAProxy's default start is up (`true`),
    /// and the first failed check then takes the server down at once.
    pub fn new(initially_up: bool) -> Self {
        ServerHealth {
            up: AtomicBool::new(initially_up),
            drain: AtomicBool::new(false),
            nolb: AtomicBool::new(false),
            weight_pct: AtomicU32::new(100),
            last_change_ms: AtomicU64::new(now_ms()),
            status: Mutex::new("no check".to_string()),
            error_limit: AtomicU32::new(0),
            errors: AtomicU32::new(0),
            pending: AtomicU32::new(0),
            check_health: AtomicU32::new(0),
            notify: Notify::new(),
        }
    }

    /// Restores what a previous process saved in a server-state file
    /// (`load-server-state-from-file`), before the checker starts: the
    /// operational state (a server saved DOWN starts down and needs `rise`
    /// successful checks; one saved stopping starts NOLB, drained until a
    /// check passes plainly) and the seconds since its last change.
    pub fn restore(&self, up: bool, stopping: bool, secs_since_change: u64) {
        self.up.store(up, Ordering::Relaxed);
        let nolb = up && stopping;
        self.nolb.store(nolb, Ordering::Relaxed);
        self.drain.store(nolb, Ordering::Relaxed);
        let ms = now_ms().saturating_sub(secs_since_change.saturating_mul(1000));
        self.last_change_ms.store(ms, Ordering::Relaxed);
    }

    /// Operational state: checks (and agent) say the server is usable.
    /// False as well while the agent keeps it in maintenance (`maint`).
    #[inline]
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// The agent said `drain`, or the server is NOLB
    /// ([`is_nolb`](Self::is_nolb)): the server stays up for persistent
    /// traffic but must get no new load-balanced traffic (weight 0). The
    /// agent's `ready` clears a drain.
    #[inline]
    pub fn is_drain(&self) -> bool {
        self.drain.load(Ordering::Relaxed)
    }

    /// NOLB: `http-check disable-on-404` got a 404 while the server was
    /// UP. Drained as [`is_drain`](Self::is_drain) says until a check
    /// passes with another status (or the server goes down); the stats
    /// show `NOLB`.
    #[inline]
    pub fn is_nolb(&self) -> bool {
        self.nolb.load(Ordering::Relaxed)
    }

    /// Percentage to apply to the configured weight: the agent's last
    /// percentage (default 100; the agent may announce up to 25600%, as
    /// HAProxy accepts, the caller caps the result at weight 256) times the
    /// slowstart ramp (from 1% to 100% after a recovery). 0 while draining.
    #[inline]
    pub fn weight_pct(&self) -> u32 {
        self.weight_pct.load(Ordering::Relaxed)
    }

    /// Reports one passive observation from the request path (`observe`):
    /// `ok == false` for a connection error (layer4) or, for layer7, an
    /// HTTP status for which [`is_http_error_status`] is true. The caller
    /// filters by the `observe` layer. A success resets the count of
    /// consecutive errors; `error-limit` consecutive errors trigger the
    /// `on-error` action, which the checker applies right away. Without an
    /// active check (`check`), observations are ignored.
    #[inline]
    pub fn observe(&self, ok: bool) {
        let limit = self.error_limit.load(Ordering::Relaxed);
        if limit == 0 {
            return;
        }
        if ok {
            if self.errors.load(Ordering::Relaxed) != 0 {
                self.errors.store(0, Ordering::Relaxed);
            }
            return;
        }
        let n = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= limit {
            self.errors.store(0, Ordering::Relaxed);
            self.pending.fetch_add(1, Ordering::AcqRel);
            self.notify.notify_one();
        }
    }

    /// Seconds since the last change of [`is_up`](Self::is_up) or
    /// [`is_nolb`](Self::is_nolb) (or since creation).
    pub fn last_change_secs(&self) -> u64 {
        now_ms().saturating_sub(self.last_change_ms.load(Ordering::Relaxed)) / 1000
    }

    /// Last check result as the stats page shows it: `L4OK in 0ms`,
    /// `L7STS/503 in 1ms`, `L4CON in 0ms`; `INI` before the first result,
    /// `no check` for unchecked servers.
    pub fn status_text(&self) -> String {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn set_status(&self, text: String) {
        if let Ok(mut s) = self.status.lock() {
            *s = text;
        }
    }

    pub(crate) fn enable_observe(&self, error_limit: u32) {
        self.error_limit
            .store(error_limit.max(1), Ordering::Relaxed);
    }

    /// Health counter of the active check, as HAProxy's `check_health`
    /// stats field: 0..=rise+fall-1, up from `rise`. 0 without `check`.
    pub fn check_health(&self) -> u32 {
        self.check_health.load(Ordering::Relaxed)
    }

    pub(crate) fn set_check_health(&self, h: u32) {
        self.check_health.store(h, Ordering::Relaxed);
    }

    /// How many times `error-limit` was reached since the last call.
    pub(crate) fn take_pending(&self) -> u32 {
        self.pending.swap(0, Ordering::AcqRel)
    }

    /// Publishes a new state; returns whether anything changed.
    pub(crate) fn publish(&self, up: bool, drain: bool, nolb: bool, pct: u32) -> bool {
        let was_up = self.up.swap(up, Ordering::Relaxed);
        let was_nolb = self.nolb.swap(nolb, Ordering::Relaxed);
        let drain = drain || nolb;
        let was_drain = self.drain.swap(drain, Ordering::Relaxed);
        let was_pct = self.weight_pct.swap(pct, Ordering::Relaxed);
        // Entering or leaving NOLB is a state change too (`lastchg`).
        if was_up != up || was_nolb != nolb {
            self.last_change_ms.store(now_ms(), Ordering::Relaxed);
        }
        was_up != up || was_drain != drain || was_nolb != nolb || was_pct != pct
    }
}

/// HAProxy's classification of an HTTP response status for `observe
/// layer7`: statuses below 100 or above 599 and 5xx except 501 (Not
/// Implemented) and 505 (HTTP Version Not Supported) are errors; every
/// other status is a success.
pub fn is_http_error_status(status: u16) -> bool {
    !(100..500).contains(&status) && status != 501 && status != 505
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_error_statuses() {
        for s in [200, 302, 404, 499, 501, 505, 100] {
            assert!(!is_http_error_status(s), "{s}");
        }
        for s in [500, 502, 503, 504, 599, 600, 99] {
            assert!(is_http_error_status(s), "{s}");
        }
    }

    /// A change restored from a state file keeps its age even when the
    /// process has just started (the clock used to start at zero, so the
    /// age was cut to the process's uptime).
    #[test]
    fn restored_change_keeps_its_age() {
        let h = ServerHealth::new(true);
        h.restore(false, false, 3600);
        assert!(!h.is_up());
        let age = h.last_change_secs();
        assert!((3600..3610).contains(&age), "{age}");
    }

    #[test]
    fn observe_counts_consecutive_errors() {
        let h = ServerHealth::new(true);
        h.observe(false); // not enabled: ignored
        assert_eq!(h.take_pending(), 0);
        h.enable_observe(3);
        h.observe(false);
        h.observe(false);
        h.observe(true);
        h.observe(false);
        h.observe(false);
        assert_eq!(h.take_pending(), 0);
        for _ in 0..7 {
            h.observe(false);
        }
        assert_eq!(h.take_pending(), 3); // 2 + 7 errors, limit 3
        assert_eq!(h.take_pending(), 0);
    }
}
