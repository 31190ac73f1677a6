//! The file-descriptor budget, computed as HAProxy 2.6 does.
//!
//! HAProxy needs, for a global `maxconn` M (its `maxsock`):
//! `2 M` (a client and a server socket per connection) + one per listening
//! address + one per server with health checks + three per thread (the
//! poller and a wake-up pipe) + the stats sockets (one each, plus `stats
//! maxconn`, 10 by default, for their connections) + 2 per pipe
//! (`maxpipes`: by default a quarter of maxconn when some proxy splices,
//! none otherwise; HAProxy 2.6.12 asks 25014 for maxconn 10000 with
//! `option splice-auto`) + a reserve of 10. The
//! formula was measured on HAProxy 2.6.12 (`Cannot raise FD limit to N`:
//! 20014 for maxconn 10000, one listener, one thread; +1 per listener, +1
//! per checked server, +3 per thread; the derived maxconn under a 1024
//! limit is 503 with two threads, 499 with one thread and a stats socket,
//! 494 with two stats sockets and `stats maxconn 20`).
//!
//! At start-up the soft `RLIMIT_NOFILE` is raised to that need, or to
//! `ulimit-n` when set (up to the hard limit, or beyond it when the process
//! may raise it). When that fails, `strict-limits` (HAProxy 2.6's default)
//! refuses to start; `no strict-limits` starts with a warning. Without a
//! global `maxconn`, it is derived from the limit in force.

/// What the configuration asks of the file-descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdPlan {
    /// Listening addresses of every frontend.
    pub listeners: u64,
    /// Servers with `check`.
    pub checks: u64,
    /// Worker threads.
    pub threads: u64,
    /// Stats sockets: one each plus their shared `stats maxconn` (none
    /// without a socket).
    pub stats: u64,
    /// Pipes for splicing (two descriptors each).
    pub pipes: PipeBudget,
}

/// How many pipes the process may open (`maxpipes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeBudget {
    /// No proxy splices, or `nosplice`.
    None,
    /// `maxpipes <n>`.
    Fixed(u64),
    /// The default when a proxy splices: a quarter of maxconn.
    Quarter,
}

impl PipeBudget {
    /// The pipes allowed for a global maxconn.
    pub fn pipes(self, maxconn: u32) -> u64 {
        match self {
            PipeBudget::None => 0,
            PipeBudget::Fixed(n) => n,
            PipeBudget::Quarter => u64::from(maxconn / 4),
        }
    }
}

/// Descriptors HAProxy keeps besides connections (standard streams,
/// logs, the master socket...).
pub const RESERVE: u64 = 10;

impl FdPlan {
    /// Descriptors needed besides the connections.
    pub fn overhead(&self) -> u64 {
        self.listeners + self.checks + 3 * self.threads + self.stats + RESERVE
    }

    /// Descriptors needed for `maxconn` connections (HAProxy's maxsock).
    pub fn need(&self, maxconn: u32) -> u64 {
        2 * u64::from(maxconn) + self.overhead() + 2 * self.pipes.pipes(maxconn)
    }

    /// The maxconn a limit of `limit` descriptors allows (at least 1).
    pub fn maxconn_for(&self, limit: u64) -> u32 {
        let room = limit.saturating_sub(self.overhead());
        let n = match self.pipes {
            PipeBudget::None => room / 2,
            PipeBudget::Fixed(p) => room.saturating_sub(2 * p) / 2,
            // 2 per connection and 2 per pipe, a pipe per 4 connections.
            PipeBudget::Quarter => room * 2 / 5,
        };
        u32::try_from(n).unwrap_or(u32::MAX).max(1)
    }
}

/// The outcome of [`plan`], before anything is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The global maxconn in force.
    pub maxconn: u32,
    /// A warning to print, if any.
    pub warning: Option<String>,
    /// A fatal error: the process must not start.
    pub fatal: Option<String>,
}

/// The largest descriptor table reserved at start-up (see
/// [`crate::os::reserve_fd_table`]): 1,048,576 descriptors, about 8.4 MiB
/// of kernel memory. Beyond it the table still grows on demand.
pub const MAX_RESERVED_FDS: u64 = 1 << 20;

/// How many descriptors to reserve in the kernel's table at start-up: what
/// `maxconn` needs (HAProxy's maxsock), within the limit in force and
/// [`MAX_RESERVED_FDS`].
pub fn table_reserve(fds: &FdPlan, maxconn: u32, limit: u64) -> u64 {
    fds.need(maxconn).min(limit).min(MAX_RESERVED_FDS)
}

/// Decides the limit. `raise(target)` tries to set the soft limit to
/// `target` and returns the soft limit in force afterwards; `current` is
/// the soft limit before.
pub fn plan(
    fds: FdPlan,
    maxconn: Option<u32>,
    ulimit_n: Option<u64>,
    strict: bool,
    current: u64,
    raise: impl FnOnce(u64) -> u64,
) -> Decision {
    let need = maxconn.map(|m| fds.need(m));
    let target = match (ulimit_n, need) {
        (Some(u), _) => Some(u),
        (None, n) => n,
    };
    let got = match target {
        Some(t) if t > current => raise(t),
        _ => current,
    };
    let mut d = Decision {
        maxconn: maxconn.unwrap_or_else(|| fds.maxconn_for(got)),
        warning: None,
        fatal: None,
    };
    if let Some(t) = target.filter(|&t| got < t) {
        let what = match (maxconn, need) {
            (Some(m), Some(n)) => format!(" (maxconn {m} needs {n} file descriptors)"),
            _ => String::new(),
        };
        let msg = format!(
            "Cannot raise FD limit to {t}, limit is {got}{what}; raise the hard limit \
             ('ulimit -Hn', LimitNOFILE= in systemd) or lower 'maxconn'/'ulimit-n'"
        );
        if strict {
            d.fatal = Some(format!("{msg}, or set 'no strict-limits' to start anyway."));
        } else {
            d.warning = Some(format!(
                "{msg}; connections beyond the limit will be refused."
            ));
        }
        return d;
    }
    if let (Some(u), Some(m), Some(n)) = (ulimit_n, maxconn, need) {
        if u < n {
            d.warning = Some(format!(
                "FD limit ({u}) too low for maxconn={m}/maxsock={n}. Please raise 'ulimit-n' to {n} or more to avoid any trouble."
            ));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: FdPlan = FdPlan {
        listeners: 1,
        checks: 0,
        threads: 1,
        stats: 0,
        pipes: PipeBudget::None,
    };

    #[test]
    fn table_reserve_is_the_need_within_the_limit() {
        // maxconn 4000, one listener, one thread: 8000 + 1 + 3 + 10.
        assert_eq!(table_reserve(&ONE, 4000, 20_000), 8014);
        assert_eq!(table_reserve(&ONE, 4000, 5000), 5000);
        assert_eq!(table_reserve(&ONE, 4_000_000, u64::MAX), MAX_RESERVED_FDS);
    }

    #[test]
    fn haproxy_numbers() {
        assert_eq!(ONE.need(10000), 20014);
        let two_listeners = FdPlan {
            listeners: 2,
            ..ONE
        };
        assert_eq!(two_listeners.need(10000), 20015);
        let checks = FdPlan { checks: 2, ..ONE };
        assert_eq!(checks.need(10000), 20016);
        let four = FdPlan { threads: 4, ..ONE };
        assert_eq!(four.need(10000), 20023);
        let two = FdPlan { threads: 2, ..ONE };
        assert_eq!(two.maxconn_for(1024), 503);
        let socket = FdPlan { stats: 11, ..ONE };
        assert_eq!(socket.maxconn_for(1024), 499);
        let sockets = FdPlan { stats: 22, ..ONE };
        assert_eq!(sockets.maxconn_for(1024), 494);
        // HAProxy 2.6.12 with `option splice-auto`: 25014 for 10000.
        let quarter = FdPlan {
            pipes: PipeBudget::Quarter,
            ..ONE
        };
        assert_eq!(quarter.need(10000), 25014);
        assert!(quarter.need(quarter.maxconn_for(25014)) <= 25014);
        let fixed = FdPlan {
            pipes: PipeBudget::Fixed(100),
            ..ONE
        };
        assert_eq!(fixed.need(10000), 20214);
        assert_eq!(fixed.maxconn_for(20214), 10000);
    }

    #[test]
    fn raised_within_hard_limit() {
        let d = plan(ONE, Some(10000), None, true, 1024, |t| t);
        assert_eq!(d.maxconn, 10000);
        assert_eq!((d.warning, d.fatal), (None, None));
    }

    #[test]
    fn strict_refuses_when_raise_fails() {
        let d = plan(ONE, Some(10000), None, true, 1024, |_| 1024);
        let f = d.fatal.unwrap();
        assert!(
            f.starts_with(
                "Cannot raise FD limit to 20014, limit is 1024 (maxconn 10000 needs 20014"
            ),
            "{f}"
        );
        assert!(f.contains("'no strict-limits'"), "{f}");
        let d = plan(ONE, Some(10000), None, false, 1024, |_| 2048);
        assert_eq!(d.fatal, None);
        assert!(d.warning.unwrap().contains("limit is 2048"));
        assert_eq!(d.maxconn, 10000);
    }

    #[test]
    fn ulimit_n_is_the_target() {
        let mut asked = 0;
        let d = plan(ONE, Some(10000), Some(5000), true, 1024, |t| {
            asked = t;
            t
        });
        assert_eq!(asked, 5000);
        assert_eq!(d.fatal, None);
        assert_eq!(
            d.warning.as_deref(),
            Some("FD limit (5000) too low for maxconn=10000/maxsock=20014. Please raise 'ulimit-n' to 20014 or more to avoid any trouble.")
        );
    }

    #[test]
    fn maxconn_derived_from_the_limit() {
        let d = plan(ONE, None, None, true, 1024, |_| unreachable!());
        assert_eq!(d.maxconn, 505);
        let d = plan(ONE, None, Some(4096), true, 1024, |t| t);
        assert_eq!(d.maxconn, (4096 - 14) / 2);
        let d = plan(ONE, None, None, true, 5, |_| 5);
        assert_eq!(d.maxconn, 1);
    }
}
