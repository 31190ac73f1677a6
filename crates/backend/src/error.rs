//! The one error type of a proxied stream or request: which side failed,
//! in which phase, whether sending the request again is safe, and what the
//! client and the log see.
//!
//! Every failure that ends a request or a TCP stream on the way to or from
//! a server is a [`ProxyError`]: server assignment ([`crate::Backend::assign`]),
//! connecting ([`crate::connect_server`]), sending the request, reading the
//! response head, and the client going away meanwhile. The retry policy
//! ([`crate::retry`]) decides from it alone; the HTTP session turns it into
//! the client's status ([`ProxyError::status`]) and the log's termination
//! state ([`ProxyError::termination`], HAProxy's two first characters).

use fairlead_log::{Phase, Who};
use std::fmt;

/// Which side of the proxy caused an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
    /// The proxy itself: a limit, a refused message, no server to use.
    Proxy,
}

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// No usable server in the backend (all down, in maintenance or full
    /// without a queue).
    NoServer,
    /// The request waited in the queue until `timeout queue`.
    QueueTimeout,
    /// The connection to the server failed (refused, reset, unreachable,
    /// TLS handshake failed).
    ConnectFailed,
    /// `timeout connect` expired.
    ConnectTimeout,
    /// The server closed (or reset) the connection before sending any
    /// response byte, or the request could not be sent at all.
    EmptyResponse,
    /// The server closed the connection in the middle of its response head.
    TruncatedResponse,
    /// The response head was invalid or too large.
    BadResponse,
    /// `timeout server` expired while waiting for the response head.
    ResponseTimeout,
    /// The client closed or reset its connection.
    ClientAbort,
    /// `timeout client` (or `timeout http-request`) expired on the client.
    ClientTimeout,
    /// The client's message was refused with this status (invalid head or
    /// body framing, head too large).
    BadRequest(u16),
}

impl Cause {
    /// The side the cause belongs to.
    pub const fn side(self) -> Side {
        match self {
            Cause::NoServer | Cause::QueueTimeout | Cause::BadResponse | Cause::BadRequest(_) => {
                Side::Proxy
            }
            Cause::ConnectFailed
            | Cause::ConnectTimeout
            | Cause::EmptyResponse
            | Cause::TruncatedResponse
            | Cause::ResponseTimeout => Side::Server,
            Cause::ClientAbort | Cause::ClientTimeout => Side::Client,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Cause::NoServer => "no server available",
            Cause::QueueTimeout => "queue timeout",
            Cause::ConnectFailed => "connection to the server failed",
            Cause::ConnectTimeout => "connect timeout",
            Cause::EmptyResponse => "server closed before responding",
            Cause::TruncatedResponse => "server closed in the middle of the response head",
            Cause::BadResponse => "invalid response from the server",
            Cause::ResponseTimeout => "server timeout waiting for the response",
            Cause::ClientAbort => "client closed the connection",
            Cause::ClientTimeout => "client timeout",
            Cause::BadRequest(_) => "invalid request",
        }
    }
}

/// An error while proxying one stream or request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyError {
    pub cause: Cause,
    /// The session phase the error ended, as the log's second termination
    /// character shows it.
    pub phase: Phase,
    /// True when nothing irreversible reached the server, so the request
    /// can be sent again (to the same or another server).
    pub retry_safe: bool,
}

impl ProxyError {
    pub const fn new(cause: Cause, phase: Phase, retry_safe: bool) -> Self {
        ProxyError {
            cause,
            phase,
            retry_safe,
        }
    }

    /// A failure to get a server or a connection: always safe to retry,
    /// nothing was sent.
    pub const fn connect(cause: Cause) -> Self {
        let phase = match cause {
            Cause::QueueTimeout => Phase::Queue,
            _ => Phase::Connect,
        };
        ProxyError::new(cause, phase, true)
    }

    pub const fn side(&self) -> Side {
        self.cause.side()
    }

    pub fn is_timeout(&self) -> bool {
        matches!(
            self.cause,
            Cause::QueueTimeout
                | Cause::ConnectTimeout
                | Cause::ResponseTimeout
                | Cause::ClientTimeout
        )
    }

    /// The status an HTTP client gets, if it gets an answer at all: 503
    /// when no server could be reached, 502 for a bad or missing response,
    /// 504 for a response timeout, 408 for a client too slow to send its
    /// request head; nothing when the client went away.
    pub fn status(&self) -> Option<u16> {
        match self.cause {
            Cause::NoServer
            | Cause::QueueTimeout
            | Cause::ConnectFailed
            | Cause::ConnectTimeout => Some(503),
            Cause::EmptyResponse | Cause::TruncatedResponse | Cause::BadResponse => Some(502),
            Cause::ResponseTimeout => Some(504),
            Cause::ClientTimeout if self.phase == Phase::Request => Some(408),
            Cause::ClientAbort | Cause::ClientTimeout => None,
            Cause::BadRequest(s) => Some(s),
        }
    }

    /// The log's termination state (who ended the session, in which phase),
    /// as HAProxy reports the same failure: `SC` refused connect, `sC`
    /// connect timeout, `sQ` queue timeout, `SH` server closed before its
    /// head was complete, `PH` invalid response, `sH` response timeout,
    /// `CR`/`CD` client aborts, `cR`/`cD` client timeouts, `PR` refused
    /// request.
    pub fn termination(&self) -> (Who, Phase) {
        let who = match self.cause {
            Cause::NoServer | Cause::ConnectFailed => Who::Server,
            Cause::EmptyResponse | Cause::TruncatedResponse => Who::Server,
            Cause::QueueTimeout | Cause::ConnectTimeout | Cause::ResponseTimeout => {
                Who::ServerTimeout
            }
            Cause::BadResponse | Cause::BadRequest(_) => Who::Proxy,
            Cause::ClientAbort => Who::Client,
            Cause::ClientTimeout => Who::ClientTimeout,
        };
        (who, self.phase)
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.side() {
            Side::Client => "client",
            Side::Server => "server",
            Side::Proxy => "proxy",
        };
        write!(f, "{side} side: {}", self.cause.what())?;
        if let Cause::BadRequest(s) = self.cause {
            write!(f, " ({s})")?;
        }
        f.write_str(if self.retry_safe {
            ", retry safe"
        } else {
            ", not retryable"
        })
    }
}

impl std::error::Error for ProxyError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(e: ProxyError) -> String {
        let (w, p) = e.termination();
        String::from_utf8(vec![w.code(), p.code()]).unwrap()
    }

    #[test]
    fn termination_codes_are_haproxys() {
        let c = ProxyError::connect;
        assert_eq!(codes(c(Cause::ConnectFailed)), "SC");
        assert_eq!(codes(c(Cause::ConnectTimeout)), "sC");
        assert_eq!(codes(c(Cause::QueueTimeout)), "sQ");
        assert_eq!(codes(c(Cause::NoServer)), "SC");
        let h = |cause| ProxyError::new(cause, Phase::Headers, false);
        assert_eq!(codes(h(Cause::EmptyResponse)), "SH");
        assert_eq!(codes(h(Cause::TruncatedResponse)), "SH");
        assert_eq!(codes(h(Cause::BadResponse)), "PH");
        assert_eq!(codes(h(Cause::ResponseTimeout)), "sH");
        let d = |cause| ProxyError::new(cause, Phase::Data, false);
        assert_eq!(codes(d(Cause::ClientAbort)), "CD");
        assert_eq!(codes(d(Cause::ClientTimeout)), "cD");
        let r = |cause| ProxyError::new(cause, Phase::Request, false);
        assert_eq!(codes(r(Cause::BadRequest(400))), "PR");
        assert_eq!(codes(r(Cause::ClientTimeout)), "cR");
    }

    #[test]
    fn statuses_follow_the_cause_and_phase() {
        assert_eq!(ProxyError::connect(Cause::NoServer).status(), Some(503));
        assert_eq!(
            ProxyError::connect(Cause::ConnectTimeout).status(),
            Some(503)
        );
        let h = |cause| ProxyError::new(cause, Phase::Headers, false).status();
        assert_eq!(h(Cause::EmptyResponse), Some(502));
        assert_eq!(h(Cause::BadResponse), Some(502));
        assert_eq!(h(Cause::ResponseTimeout), Some(504));
        let r = ProxyError::new(Cause::ClientTimeout, Phase::Request, false);
        assert_eq!(r.status(), Some(408));
        let d = ProxyError::new(Cause::ClientTimeout, Phase::Data, false);
        assert_eq!(d.status(), None);
        assert_eq!(h(Cause::BadRequest(413)), Some(413));
    }

    #[test]
    fn display_names_side_and_retry_safety() {
        let e = ProxyError::connect(Cause::ConnectFailed);
        assert_eq!(
            e.to_string(),
            "server side: connection to the server failed, retry safe"
        );
        let e = ProxyError::new(Cause::BadRequest(400), Phase::Request, false);
        assert_eq!(
            e.to_string(),
            "proxy side: invalid request (400), not retryable"
        );
        assert_eq!(e.side(), Side::Proxy);
    }
}
