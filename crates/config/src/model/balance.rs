//! Balancing, retries and cookie persistence settings of a backend
//! (`balance`, `hash-type`, `retry-on`, `cookie`).

use super::*;

/// `balance <algorithm>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Balance {
    /// `roundrobin`: weighted, dynamic (weights change at run time).
    #[default]
    RoundRobin,
    /// `static-rr`.
    StaticRr,
    /// `leastconn`.
    LeastConn,
    /// `first`.
    First,
    /// `source`: hash of the client address.
    Source,
    /// `uri [len N] [depth N] [whole]`.
    Uri {
        whole: bool,
        len: Option<usize>,
        depth: Option<usize>,
    },
    /// `url_param <name>`.
    UrlParam { name: String },
    /// `hdr(<name>) [use_domain_only]`.
    Hdr { name: String, use_domain_only: bool },
    /// `random[(<draws>)]`. Default draws is 2.
    Random { draws: u32 },
    /// `rdp-cookie[(<name>)]`: hash of the RDP cookie `name` of the
    /// client's first message (TCP mode, after `tcp-request content`
    /// inspection); round robin without it. Default name is `mstshash`.
    RdpCookie { name: String },
}

/// `hash-type <method> <function> [avalanche]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HashType {
    pub method: HashMethod,
    pub function: HashFunction,
    pub avalanche: bool,
}

/// Default is `MapBased`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashMethod {
    #[default]
    MapBased,
    Consistent,
}

/// Default is `Sdbm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashFunction {
    #[default]
    Sdbm,
    Djb2,
    Wt6,
    Crc32,
}

/// `retry-on` keywords. Default is `conn_failure` only, as HAProxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryOn {
    pub conn_failure: bool,
    pub empty_response: bool,
    pub junk_response: bool,
    pub response_timeout: bool,
    /// Response statuses that trigger a retry (`404`, `503`, ...).
    pub statuses: Vec<u16>,
}

impl Default for RetryOn {
    fn default() -> Self {
        RetryOn {
            conn_failure: true,
            empty_response: false,
            junk_response: false,
            response_timeout: false,
            statuses: Vec::new(),
        }
    }
}

/// `cookie <name> [rewrite|insert|prefix] ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieConfig {
    pub name: String,
    pub mode: CookieMode,
    pub indirect: bool,
    pub nocache: bool,
    pub postonly: bool,
    pub preserve: bool,
    pub httponly: bool,
    pub secure: bool,
    /// `domain` (repeatable).
    pub domains: Vec<String>,
    pub maxidle: Option<Duration>,
    pub maxlife: Option<Duration>,
}

impl CookieConfig {
    /// `cookie <name>` with no option: rewrite mode, every flag off, no
    /// domain, no date limits.
    pub fn new(name: &str) -> CookieConfig {
        CookieConfig {
            name: name.to_string(),
            mode: CookieMode::Rewrite,
            indirect: false,
            nocache: false,
            postonly: false,
            preserve: false,
            httponly: false,
            secure: false,
            domains: Vec::new(),
            maxidle: None,
            maxlife: None,
        }
    }
}

/// Default is `Rewrite` when no mode is given, as HAProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieMode {
    #[default]
    Rewrite,
    Insert,
    Prefix,
}
