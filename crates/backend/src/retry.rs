//! The one retry policy, for TCP streams and HTTP requests alike.
//!
//! HAProxy's rules, as `retries`, `retry-on` and `option redispatch`
//! define them:
//! - A failure is retried only when it is safe ([`ProxyError::retry_safe`]:
//!   nothing irreversible reached the server) and `retry-on` names its
//!   kind: `conn-failure` (the default) for failed or timed-out connects,
//!   `empty-response`, `junk-response` (invalid or truncated head),
//!   `response-timeout`, or one of the listed response statuses.
//! - At most `retries` retries per request or stream (default 3), shared
//!   by connect and response retries.
//! - With `option redispatch`, the retry [`Backend::redispatch_now`] picks
//!   goes to another server.
//! - Each retry counts once in `wretr`, each redispatch once in `wredis`,
//!   on the backend and on the server that failed.

use crate::counters::C;
use crate::error::{Cause, ProxyError};
use crate::{Backend, Server};
use fairlead_config::RetryOn;

/// What failed: an error, or a response whose status `retry-on` lists.
#[derive(Debug, Clone, Copy)]
pub enum Trigger<'a> {
    Error(&'a ProxyError),
    /// A complete response with this status; `replayable` tells whether
    /// the request can be sent again (no body started, idempotent).
    Status {
        status: u16,
        replayable: bool,
    },
}

impl Trigger<'_> {
    /// Whether `retry-on` asks for a retry on this trigger.
    pub fn wanted(&self, on: &RetryOn) -> bool {
        match *self {
            Trigger::Error(e) => {
                e.retry_safe
                    && match e.cause {
                        Cause::ConnectFailed | Cause::ConnectTimeout => on.conn_failure,
                        Cause::EmptyResponse => on.empty_response,
                        Cause::TruncatedResponse | Cause::BadResponse => on.junk_response,
                        Cause::ResponseTimeout => on.response_timeout,
                        Cause::NoServer
                        | Cause::QueueTimeout
                        | Cause::ClientAbort
                        | Cause::ClientTimeout
                        | Cause::BadRequest(_) => false,
                    }
            }
            Trigger::Status { status, replayable } => replayable && on.statuses.contains(&status),
        }
    }
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Try again; on another server when `redispatch` is set.
    Retry { redispatch: bool },
    /// Give up: the failure stands.
    Stop,
}

impl Backend {
    /// Decides whether to retry after `trigger` on `server`, spending one
    /// of the request's retries (`attempts` counts those already spent)
    /// and counting it.
    pub fn retry(&self, server: &Server, trigger: Trigger<'_>, attempts: &mut u32) -> Verdict {
        if !trigger.wanted(&self.options.retry_on) || *attempts >= self.options.retries {
            return Verdict::Stop;
        }
        *attempts += 1;
        server.metrics.counters.inc(C::Wretr);
        self.counters.inc(C::Wretr);
        let redispatch = self.redispatch_now(*attempts);
        if redispatch {
            server.metrics.counters.inc(C::Wredis);
            self.counters.inc(C::Wredis);
        }
        Verdict::Retry { redispatch }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairlead_log::Phase;

    #[test]
    fn retry_on_selects_the_failure_kinds() {
        let on = RetryOn::default();
        let conn = ProxyError::connect(Cause::ConnectFailed);
        assert!(Trigger::Error(&conn).wanted(&on));
        let empty = ProxyError::new(Cause::EmptyResponse, Phase::Headers, true);
        assert!(!Trigger::Error(&empty).wanted(&on));
        let on = RetryOn {
            conn_failure: false,
            empty_response: true,
            junk_response: true,
            response_timeout: false,
            statuses: vec![503],
        };
        assert!(!Trigger::Error(&conn).wanted(&on));
        assert!(Trigger::Error(&empty).wanted(&on));
        let unsafe_empty = ProxyError::new(Cause::EmptyResponse, Phase::Headers, false);
        assert!(!Trigger::Error(&unsafe_empty).wanted(&on));
        let junk = ProxyError::new(Cause::BadResponse, Phase::Headers, true);
        assert!(Trigger::Error(&junk).wanted(&on));
        let slow = ProxyError::new(Cause::ResponseTimeout, Phase::Headers, true);
        assert!(!Trigger::Error(&slow).wanted(&on));
        let s = |status, replayable| Trigger::Status { status, replayable }.wanted(&on);
        assert!(s(503, true));
        assert!(!s(503, false));
        assert!(!s(500, true));
    }
}
