//! Check results ([`CheckStatus`], [`Outcome`]) and state-change events
//! ([`HealthEvent`]) with HAProxy's log line format.

use std::fmt::Write as _;
use std::time::Duration;

/// Result code of one check, named as HAProxy's stats page names them
/// (`check_status` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    /// No check has completed yet.
    Ini,
    /// A socket could not be created.
    SockErr,
    /// TCP connection established (plain `check`).
    L4Ok,
    /// TCP connection not established in time.
    L4Tout,
    /// TCP connection refused, reset or unreachable.
    L4Con,
    /// TLS handshake completed (plain `check` over TLS).
    L6Ok,
    /// TLS handshake not completed in time.
    L6Tout,
    /// TLS handshake failed.
    L6Rsp,
    /// HTTP, tcp-check or agent check passed.
    L7Ok,
    /// A 404 with `http-check disable-on-404` on an UP server: passed,
    /// but the server leaves load balancing (NOLB).
    L7OkCd,
    /// No (complete) response in time.
    L7Tout,
    /// Response not understood or content expectation failed.
    L7Rsp,
    /// Unexpected HTTP status (or agent said down/fail/stopped).
    L7Sts,
    /// Passive health analysis (`observe`) reached `error-limit`.
    Hana,
}

impl CheckStatus {
    /// Short name: `L4OK`, `L7STS`, ...
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Ini => "INI",
            CheckStatus::SockErr => "SOCKERR",
            CheckStatus::L4Ok => "L4OK",
            CheckStatus::L4Tout => "L4TOUT",
            CheckStatus::L4Con => "L4CON",
            CheckStatus::L6Ok => "L6OK",
            CheckStatus::L6Tout => "L6TOUT",
            CheckStatus::L6Rsp => "L6RSP",
            CheckStatus::L7Ok => "L7OK",
            CheckStatus::L7OkCd => "L7OKC",
            CheckStatus::L7Tout => "L7TOUT",
            CheckStatus::L7Rsp => "L7RSP",
            CheckStatus::L7Sts => "L7STS",
            CheckStatus::Hana => "HANA",
        }
    }

    /// Long description used in logs after `reason:`.
    pub fn description(self) -> &'static str {
        match self {
            CheckStatus::Ini => "Initializing",
            CheckStatus::SockErr => "Socket error",
            CheckStatus::L4Ok => "Layer4 check passed",
            CheckStatus::L4Tout => "Layer4 timeout",
            CheckStatus::L4Con => "Layer4 connection problem",
            CheckStatus::L6Ok => "Layer6 check passed",
            CheckStatus::L6Tout => "Layer6 timeout",
            CheckStatus::L6Rsp => "Layer6 invalid response",
            CheckStatus::L7Ok => "Layer7 check passed",
            CheckStatus::L7OkCd => "Layer7 check conditionally passed",
            CheckStatus::L7Tout => "Layer7 timeout",
            CheckStatus::L7Rsp => "Layer7 invalid response",
            CheckStatus::L7Sts => "Layer7 wrong status",
            CheckStatus::Hana => "Health analyze",
        }
    }

    /// Whether this status counts as a successful check.
    pub fn is_ok(self) -> bool {
        matches!(
            self,
            CheckStatus::L4Ok | CheckStatus::L6Ok | CheckStatus::L7Ok | CheckStatus::L7OkCd
        )
    }
}

/// Result of one check (or of one passive-analysis trigger).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: CheckStatus,
    /// HTTP status of an HTTP check.
    pub code: Option<u16>,
    /// Details: the error text, the reason phrase, what did not match.
    pub info: Option<String>,
    /// Time from the start of the check to its result.
    pub duration: Duration,
}

impl Outcome {
    pub(crate) fn new(status: CheckStatus, duration: Duration) -> Self {
        Outcome {
            status,
            code: None,
            info: None,
            duration,
        }
    }

    pub(crate) fn info(mut self, info: impl Into<String>) -> Self {
        self.info = Some(info.into());
        self
    }

    pub(crate) fn code(mut self, code: u16) -> Self {
        self.code = Some(code);
        self
    }

    /// Stats-page text: `L4OK in 0ms`, `L7STS/503 in 1ms`.
    pub fn status_text(&self) -> String {
        let mut s = self.status.name().to_string();
        if self.status == CheckStatus::Ini || self.status == CheckStatus::Hana {
            return s;
        }
        if let Some(code) = self.code {
            let _ = write!(s, "/{code}");
        }
        let _ = write!(s, " in {}ms", self.duration.as_millis());
        s
    }
}

/// A change of a server's operational state, given to the `log` callback of
/// [`crate::start`]. The server counts of HAProxy's line are only known to
/// the backend, so the caller formats the line with
/// [`HealthEvent::haproxy_line`] once it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthEvent {
    pub backend: String,
    pub server: String,
    /// New operational state.
    pub up: bool,
    /// The agent put the server in maintenance (`up == false`) or took it
    /// out of maintenance with `ready` (`up == true`).
    pub maint: bool,
    /// The server stays up but enters NOLB (`http-check disable-on-404`):
    /// HAProxy's "is stopping" line. Leaving NOLB is an `up` event.
    pub stopping: bool,
    /// The result that caused the change.
    pub status: CheckStatus,
    /// `status.description()`, e.g. "Layer4 connection problem".
    pub reason: String,
    /// HTTP status of an HTTP check (printed for Layer7 results only).
    pub code: Option<u16>,
    /// E.g. "Connection refused", the reason phrase, the agent's words.
    pub info: Option<String>,
    /// Duration of the check that caused the change.
    pub duration: Duration,
    /// The server is a `backup` one: the lines say `backup server` /
    /// `Backup Server`, as HAProxy's do.
    pub backup: bool,
    /// `option log-health-checks`: the state-change line leaves out the
    /// reason and check duration (the check's own line gave them), as
    /// HAProxy does.
    pub brief: bool,
    /// Not a state change but the result of one check, logged with
    /// `option log-health-checks` when the check's status or health
    /// counter changed: `Health check for server bk/s1 failed, reason:
    /// ..., check duration: 0ms, status: 0/2 DOWN.`
    pub report: Option<CheckReport>,
}

/// The end of a per-check line (`option log-health-checks`): `status:
/// <shown.0>/<shown.1> <state>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckReport {
    /// While up: the failures left before going down plus one, over
    /// `fall`; while down: the successes so far, over `rise` (HAProxy's
    /// numbers).
    pub shown: (u32, u32),
    /// `UP`, `DRAIN` (up with weight 0) or `DOWN`.
    pub state: &'static str,
}

impl HealthEvent {
    pub(crate) fn new(backend: &str, server: &str, up: bool, maint: bool, o: &Outcome) -> Self {
        HealthEvent {
            backend: backend.to_string(),
            server: server.to_string(),
            up,
            maint,
            stopping: false,
            status: o.status,
            reason: o.status.description().to_string(),
            code: o.code,
            info: o.info.clone(),
            duration: o.duration,
            backup: false,
            brief: false,
            report: None,
        }
    }

    /// A per-check line (`option log-health-checks`).
    pub(crate) fn check(backend: &str, server: &str, o: &Outcome, report: CheckReport) -> Self {
        let mut e = HealthEvent::new(backend, server, report.state != "DOWN", false, o);
        e.report = Some(report);
        e
    }

    /// `, reason: ..., code: ..., info: "...", check duration: Nms`.
    fn append_status(&self, s: &mut String) {
        let _ = write!(s, ", reason: {}", self.reason);
        if let (Some(code), true) = (self.code, self.is_layer7()) {
            let _ = write!(s, ", code: {code}");
        }
        if let Some(info) = self.info.as_deref().filter(|i| !i.is_empty()) {
            let _ = write!(s, ", info: \"{}\"", escape(info));
        }
        let _ = write!(s, ", check duration: {}ms", self.duration.as_millis());
    }

    /// The per-check line, when this event is one.
    fn report_line(&self, r: &CheckReport) -> String {
        let mut s = format!(
            "Health check for {}server {}/{} {}{}",
            if self.backup { "backup " } else { "" },
            self.backend,
            self.server,
            if self.status == CheckStatus::L7OkCd {
                "conditionally "
            } else {
                ""
            },
            if self.status.is_ok() {
                "succeeded"
            } else {
                "failed"
            }
        );
        self.append_status(&mut s);
        let _ = write!(s, ", status: {}/{} {}.", r.shown.0, r.shown.1, r.state);
        s
    }

    /// A per-check line ([`HealthEvent::report`]) rather than a change of
    /// the server's state.
    pub fn is_check_report(&self) -> bool {
        self.report.is_some()
    }

    /// HAProxy's log line with no sessions, requeues or queue, e.g.
    /// `Server bk/s1 is DOWN, reason: Layer4 connection problem, info:
    /// "Connection refused", check duration: 0ms. 0 active and 0 backup
    /// servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`
    pub fn haproxy_line(&self, active_left: usize, backup_left: usize) -> String {
        self.haproxy_line_full(active_left, backup_left, 0, 0, 0)
    }

    /// HAProxy's log line. `active`/`backup`: usable servers of the backend
    /// after the change; `sessions`: sessions still on the server (DOWN
    /// only); `requeued`: sessions moved away from (DOWN) or picked up from
    /// the backend queue by (UP) this server; `queued`: requests left in
    /// the queue.
    pub fn haproxy_line_full(
        &self,
        active: usize,
        backup: usize,
        sessions: usize,
        requeued: usize,
        queued: usize,
    ) -> String {
        if let Some(r) = &self.report {
            return self.report_line(r);
        }
        let kind = if self.backup {
            "Backup Server"
        } else {
            "Server"
        };
        let mut s = format!("{kind} {}/{} is ", self.backend, self.server);
        match (self.up, self.maint) {
            (false, true) => s.push_str("going DOWN for maintenance (agent)"),
            (true, true) => s.push_str("UP/READY (leaving forced maintenance)"),
            (up, false) => {
                s.push_str(match (up, self.stopping) {
                    (true, true) => "stopping",
                    (true, false) => "UP",
                    (false, _) => "DOWN",
                });
                if !self.brief {
                    self.append_status(&mut s);
                }
            }
        }
        let on_backup = if backup > 0 && active == 0 {
            " Running on backup."
        } else {
            ""
        };
        if self.up {
            let _ = write!(
                s,
                ". {active} active and {backup} backup servers online.{on_backup} \
                 {requeued} sessions requeued, {queued} total in queue."
            );
        } else {
            let _ = write!(
                s,
                ". {active} active and {backup} backup servers left.{on_backup} \
                 {sessions} sessions active, {requeued} requeued, {queued} remaining in queue."
            );
        }
        s
    }

    fn is_layer7(&self) -> bool {
        matches!(
            self.status,
            CheckStatus::L7Ok
                | CheckStatus::L7OkCd
                | CheckStatus::L7Rsp
                | CheckStatus::L7Sts
                | CheckStatus::L7Tout
        )
    }
}

/// Keeps a log line on one line and its quotes balanced.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_formats() {
        let o = Outcome::new(CheckStatus::L7Sts, Duration::from_millis(3)).code(503);
        assert_eq!(o.status_text(), "L7STS/503 in 3ms");
        let o = Outcome::new(CheckStatus::L4Ok, Duration::ZERO);
        assert_eq!(o.status_text(), "L4OK in 0ms");
    }

    fn event(up: bool, maint: bool, o: &Outcome) -> HealthEvent {
        HealthEvent::new("bk", "s1", up, maint, o)
    }

    #[test]
    fn haproxy_lines() {
        let o = Outcome::new(CheckStatus::L4Con, Duration::ZERO).info("Connection refused");
        assert_eq!(
            event(false, false, &o).haproxy_line(1, 0),
            "Server bk/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection \
             refused\", check duration: 0ms. 1 active and 0 backup servers left. 0 sessions \
             active, 0 requeued, 0 remaining in queue."
        );
        let o = Outcome::new(CheckStatus::L7Ok, Duration::from_millis(1))
            .code(200)
            .info("OK");
        assert_eq!(
            event(true, false, &o).haproxy_line_full(2, 1, 0, 3, 4),
            "Server bk/s1 is UP, reason: Layer7 check passed, code: 200, info: \"OK\", check \
             duration: 1ms. 2 active and 1 backup servers online. 3 sessions requeued, 4 total \
             in queue."
        );
        let o = Outcome::new(CheckStatus::L4Tout, Duration::from_millis(2001));
        assert_eq!(
            event(false, false, &o).haproxy_line_full(0, 1, 5, 2, 0),
            "Server bk/s1 is DOWN, reason: Layer4 timeout, check duration: 2001ms. 0 active \
             and 1 backup servers left. Running on backup. 5 sessions active, 2 requeued, 0 \
             remaining in queue."
        );
        let o = Outcome::new(CheckStatus::L7Ok, Duration::ZERO).info("agent: maint");
        assert_eq!(
            event(false, true, &o).haproxy_line(0, 0),
            "Server bk/s1 is going DOWN for maintenance (agent). 0 active and 0 backup servers \
             left. 0 sessions active, 0 requeued, 0 remaining in queue."
        );
        assert_eq!(
            event(true, true, &o).haproxy_line(1, 0),
            "Server bk/s1 is UP/READY (leaving forced maintenance). 1 active and 0 backup \
             servers online. 0 sessions requeued, 0 total in queue."
        );
        // `http-check disable-on-404` (HAProxy 2.6.12's line).
        let o = Outcome::new(CheckStatus::L7OkCd, Duration::ZERO).code(404);
        let mut e = event(true, false, &o);
        e.stopping = true;
        assert_eq!(
            e.haproxy_line(1, 0),
            "Server bk/s1 is stopping, reason: Layer7 check conditionally passed, code: 404, \
             check duration: 0ms. 1 active and 0 backup servers online. 0 sessions requeued, 0 \
             total in queue."
        );
    }

    #[test]
    fn log_health_checks_lines() {
        // HAProxy 2.6.12's lines, taken from a run with `inter 200 rise 2
        // fall 2` and a server that went away and came back.
        let o = Outcome::new(CheckStatus::L4Con, Duration::ZERO).info("Connection refused");
        let down = CheckReport {
            shown: (0, 2),
            state: "DOWN",
        };
        let e = HealthEvent::check("bk", "s1", &o, down);
        assert!(e.is_check_report() && !e.up);
        assert_eq!(
            e.haproxy_line(0, 0),
            "Health check for server bk/s1 failed, reason: Layer4 connection problem, info: \
             \"Connection refused\", check duration: 0ms, status: 0/2 DOWN."
        );
        let o = Outcome::new(CheckStatus::L4Ok, Duration::from_millis(1));
        let up = CheckReport {
            shown: (2, 2),
            state: "UP",
        };
        let mut e = HealthEvent::check("bk", "s1", &o, up);
        e.backup = true;
        assert_eq!(
            e.haproxy_line(1, 0),
            "Health check for backup server bk/s1 succeeded, reason: Layer4 check passed, \
             check duration: 1ms, status: 2/2 UP."
        );
        let o = Outcome::new(CheckStatus::L7Sts, Duration::from_millis(3))
            .code(503)
            .info("Service Unavailable");
        let e = HealthEvent::check(
            "bk",
            "s1",
            &o,
            CheckReport {
                shown: (1, 3),
                state: "UP",
            },
        );
        assert_eq!(
            e.haproxy_line(1, 0),
            "Health check for server bk/s1 failed, reason: Layer7 wrong status, code: 503, \
             info: \"Service Unavailable\", check duration: 3ms, status: 1/3 UP."
        );
        // The state change that follows leaves the reason out.
        let o = Outcome::new(CheckStatus::L4Con, Duration::ZERO).info("Connection refused");
        let mut e = event(false, false, &o);
        e.brief = true;
        assert_eq!(
            e.haproxy_line(1, 0),
            "Server bk/s1 is DOWN. 1 active and 0 backup servers left. 0 sessions active, 0 \
             requeued, 0 remaining in queue."
        );
        let mut e = event(true, false, &o);
        e.brief = true;
        e.backup = true;
        assert_eq!(
            e.haproxy_line(1, 0),
            "Backup Server bk/s1 is UP. 1 active and 0 backup servers online. 0 sessions \
             requeued, 0 total in queue."
        );
    }

    #[test]
    fn escape_quotes() {
        assert_eq!(escape("a\"b\r\n"), "a\\\"b\\x0d\\x0a");
    }
}
