//! Fairlead's traffic logs, compatible with HAProxy's.
//!
//! - [`LogRecord`]: what the proxy fills for one finished stream or
//!   request; [`TermState`]: the termination state codes.
//! - [`compile`] / [`LogFormat`]: the `log-format` language, the built-in
//!   formats ([`HTTPLOG_FORMAT`], [`HTTPLOG_CLF`], [`TCPLOG_FORMAT`],
//!   [`LogFormat::connect`]) and a JSON rendering.
//! - [`TargetSpec`] / [`parse_target`]: a `log` line (`stdout`, `stderr`,
//!   UDP syslog, unix datagram socket), with the syslog framings
//!   (`local`, `rfc3164`, `rfc5424`, `priority`, `short`, `timed`, `iso`,
//!   `raw`).
//! - [`Logger`]: bounded in-memory queues, one per producer thread, drained
//!   by one background thread that does the sends; producers never block
//!   and a full queue drops the message and counts it
//!   ([`Logger::dropped`]).
//!
//! This crate has no dependencies, so that `fairlead-config` can use it to
//! validate `log` lines and `log-format` strings while parsing (errors get
//! a `file:line`, and `fairlead -c` catches them).
//!
//! Dates are written in UTC (see the `time` module notes): HAProxy uses
//! local time, which is the same on UTC hosts.
#![forbid(unsafe_code)]

mod format;
mod logger;
mod record;
mod target;
mod time;

pub use format::{
    compile, compile_unique_id, LogFormat, DEFAULT_FORMAT, HTTPLOG_CLF, HTTPLOG_FORMAT,
    HTTPSLOG_FORMAT, TCPLOG_FORMAT,
};
pub use logger::{system_hostname, Logger, LoggerOptions, Sink, SinkId};
pub use record::{CookieReq, CookieResp, LogRecord, Phase, TermState, Who};
pub use target::{parse_target, Facility, Level, LogAddr, SyslogFormat, TargetSpec};
pub use time::write_log_date;
