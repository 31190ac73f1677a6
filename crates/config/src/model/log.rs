//! Logging settings: `log` targets, the line format a proxy logs with,
//! and a proxy's traffic logging options.

use super::*;

/// One `log` target (global section or proxy).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogTarget {
    /// The words after `log`, e.g. `["127.0.0.1:514", "local0", "info"]`.
    pub args: Vec<String>,
    pub location: Location,
    /// The parsed target: address, `len`, `format`, facility, levels.
    pub spec: TargetSpec,
}

/// Which line format a proxy logs with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LogStyle {
    /// No log option: HAProxy's "Connect from ..." line, emitted when a
    /// connection is accepted. The default.
    #[default]
    Connect,
    /// `option tcplog`.
    Tcp,
    /// `option httplog`.
    Http,
    /// `option httplog clf`.
    HttpClf,
    /// `option httpslog`.
    Https,
    /// `log-format <string>` (validated while parsing).
    Custom(String),
}

impl LogStyle {
    /// The log-format string, `None` for [`LogStyle::Connect`].
    pub fn format_string(&self) -> Option<&str> {
        match self {
            LogStyle::Connect => None,
            LogStyle::Tcp => Some(fairlead_log::TCPLOG_FORMAT),
            LogStyle::Http => Some(fairlead_log::HTTPLOG_FORMAT),
            LogStyle::HttpClf => Some(fairlead_log::HTTPLOG_CLF),
            LogStyle::Https => Some(fairlead_log::HTTPSLOG_FORMAT),
            LogStyle::Custom(s) => Some(s),
        }
    }

    /// The compiled format (emitted at the end of a stream, except
    /// `Connect`, emitted at accept time).
    pub fn compile(&self) -> fairlead_log::LogFormat {
        self.format_string()
            .and_then(|s| fairlead_log::compile(s).ok())
            .unwrap_or_else(fairlead_log::LogFormat::connect)
    }
}

/// Traffic logging settings of a proxy. The frontend's settings decide
/// what is logged for a stream; a backend's targets are for its own events
/// (servers going up or down).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProxyLog {
    /// `log` targets, in order, with the global section's targets first
    /// when `log global` is used. `no log` empties the list. Default is
    /// none: nothing is logged.
    pub targets: Vec<LogTarget>,
    /// `log global` was used. Default is false.
    pub global: bool,
    /// `option tcplog`, `option httplog [clf]`, `log-format`. The last one
    /// wins. Default is [`LogStyle::Connect`]. In a TCP frontend, `option
    /// httplog` falls back to `option tcplog` with a warning, as HAProxy.
    pub style: LogStyle,
    /// `option httplog-json`, a Fairlead extension: the `option httplog`
    /// fields rendered as one JSON object per line, keyed by variable
    /// name (see `fairlead_log::LogFormat::render_json`). Default is off.
    pub json: bool,
    /// `option dontlognull`: do not log streams on which the client sent
    /// nothing. Default is off.
    pub dontlognull: bool,
    /// `option dontlog-normal`: log only streams with an error, a retry or
    /// (HTTP) a 5xx status. Default is off.
    pub dontlog_normal: bool,
    /// `option log-separate-errors`: such streams are logged at level
    /// `err` instead of `info`. Default is off.
    pub separate_errors: bool,
    /// `option log-health-checks` (backends): a line for every health
    /// check whose result or health counter changed, as HAProxy logs
    /// them. Default is off.
    pub health_checks: bool,
    /// `log-tag`. Default is none: the global `log-tag`.
    pub tag: Option<String>,
}
