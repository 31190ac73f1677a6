//! [`LogRecord`]: what the proxy knows about one finished TCP stream or
//! HTTP request, and [`TermState`], HAProxy's termination state codes
//! (configuration manual, section 8.5 "Session state at disconnection").

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Plain data for one log line. Every field says which log-format
/// variable(s) it feeds. Borrowed strings keep filling it free of
/// allocation: the proxy points at its own names and buffers.
///
/// Timers follow HAProxy's internal model: the proxy records **when** each
/// event happened, in milliseconds since [`accept_date`](Self::accept_date)
/// (`None` when it never happened), and the rendering derives `%TR`, `%Tw`,
/// `%Tc`, `%Tr`, ... from them exactly as HAProxy does, printing `-1` for
/// an event that was not reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// `%ci`, `%cp`: the client's address. `None` prints `-`.
    pub client: Option<SocketAddr>,
    /// `%fi`, `%fp`: the address the client connected to.
    pub frontend_addr: Option<SocketAddr>,
    /// `%bi`, `%bp`: the proxy's source address towards the server.
    pub backend_src: Option<SocketAddr>,
    /// `%si`, `%sp`: the server's address.
    pub server_addr: Option<SocketAddr>,
    /// `%t`, `%T`, `%Tl`, `%Ts`, `%ms`: when the connection was accepted
    /// (for a second request on a keep-alive connection: when the
    /// connection became ready for it, the end of the previous response).
    /// `%tr`, `%trg`, `%trl` add `Th + Ti`.
    pub accept_date: SystemTime,
    /// `%f`, `%ft`: the frontend's name.
    pub frontend: &'a str,
    /// `%ft` appends `~` when the connection came in over TLS.
    pub tls: bool,
    /// `%b`: the backend's name.
    pub backend: &'a str,
    /// `%s`: the server's name; `None` prints `<NOSRV>`.
    pub server: Option<&'a str>,
    /// `%Th`: handshake time (PROXY protocol, TLS) in ms; 0 after the first
    /// request of a connection.
    pub handshake: u64,
    /// `%Ti`: idle time before the first byte of the request, in ms;
    /// `None` (printed -1) when nothing was received.
    pub idle: Option<u64>,
    /// End of the request headers, ms since accept (`%Tq`; `%TR` is this
    /// minus `Th + Ti`). `None` when no complete request was read (and in
    /// TCP mode).
    pub request_done: Option<u64>,
    /// Leaving the queues, ms since accept (`%Tw` is this minus the end of
    /// the request). `None` when the stream never reached the queue.
    pub queue_done: Option<u64>,
    /// Connection to the server established, ms since accept (`%Tc` is this
    /// minus the end of queueing).
    pub connect_done: Option<u64>,
    /// Complete response headers received, ms since accept (`%Tr` is this
    /// minus the connection time). HTTP only.
    pub response_done: Option<u64>,
    /// `%Tt`: total time, accept to close, ms. `%Ta` = `Tt - (Th + Ti)`,
    /// `%Tu` = `Tt - Ti`, `%Td` = `Tt` minus the response (HTTP) or connect
    /// (TCP) time.
    pub total: u64,
    /// `option logasap`: the line is emitted before the end, and `%Ta`,
    /// `%Tt`, `%Tu` and `%B` are prefixed with `+`.
    pub logasap: bool,
    /// `%ST`: the status sent to the client; `None` prints -1.
    pub status: Option<u16>,
    /// `%B`: bytes sent to the client (headers included).
    pub bytes_out: u64,
    /// `%U`: bytes received from the client.
    pub bytes_in: u64,
    /// `%CC`: captured request cookie (`capture cookie`); `None` prints `-`.
    pub cookie_req: Option<&'a str>,
    /// `%CS`: captured response cookie; `None` prints `-`.
    pub cookie_resp: Option<&'a str>,
    /// `%ts` (first 2 characters), `%tsc` (all 4).
    pub term: TermState,
    /// `%ac`: connections on the process.
    pub actconn: u32,
    /// `%fc`: connections on the frontend.
    pub feconn: u32,
    /// `%bc`: connections on the backend (queued ones included).
    pub beconn: u32,
    /// `%sc`: connections on the server (0 without a server).
    pub srv_conn: u32,
    /// `%rc`: connection retries.
    pub retries: u32,
    /// `%rc` is prefixed with `+` when the stream was redispatched.
    pub redispatched: bool,
    /// `%sq`: position in the server queue (0 when not queued).
    pub srv_queue: u32,
    /// `%bq`: position in the backend queue (0 when not queued).
    pub backend_queue: u32,
    /// `%r`: the request line as received (`METHOD URI VERSION`); `None`
    /// prints `<BADREQ>`. `%HM`, `%HU`, `%HP`, `%HPO`, `%HQ` and `%HV` are
    /// cut from it, as HAProxy does. Non-printable bytes, `"` and `#` are
    /// written as `#XX`.
    pub request_line: Option<&'a [u8]>,
    /// `%hr`, `%hrl`: captured request headers (`capture request header`),
    /// one entry per capture slot. Empty: `%hr` prints nothing.
    pub req_captures: &'a [Option<&'a [u8]>],
    /// `%hs`, `%hsl`: captured response headers.
    pub res_captures: &'a [Option<&'a [u8]>],
    /// `%[expr]`: the values of the format's sample expressions
    /// ([`crate::LogFormat::samples`]), in order; a missing or `None`
    /// entry prints `-`.
    pub samples: &'a [Option<&'a [u8]>],
    /// `%ID`: the unique id; `None` prints `-`.
    pub unique_id: Option<&'a str>,
    /// `%pid`.
    pub pid: u32,
    /// `%H`: the host name.
    pub hostname: &'a str,
    /// `%sslv`: the client connection's TLS version (`TLSv1.3`); `None`
    /// (printed `-`) in clear.
    pub ssl_version: Option<&'a str>,
    /// `%sslc`: the client connection's cipher suite, OpenSSL's name.
    pub ssl_cipher: Option<&'a str>,
    /// `%[ssl_fc_sni]`: the SNI the client sent.
    pub ssl_sni: Option<&'a str>,
    /// `%[ssl_fc_is_resumed]`; `None` in clear.
    pub ssl_resumed: Option<bool>,
    /// `%[ssl_c_used]`: the client presented a (verified) certificate;
    /// `None` in clear.
    pub ssl_c_used: Option<bool>,
    /// `%rt`: request counter (HTTP request or TCP stream number).
    pub request_counter: u64,
    /// `%lc`: the frontend's log counter.
    pub log_counter: u64,
    /// HTTP mode (the default "Connect from" format prints `HTTP`/`TCP`;
    /// `%Td` depends on it).
    pub http: bool,
}

impl Default for LogRecord<'_> {
    fn default() -> Self {
        LogRecord {
            client: None,
            frontend_addr: None,
            backend_src: None,
            server_addr: None,
            accept_date: UNIX_EPOCH,
            frontend: "",
            tls: false,
            backend: "",
            server: None,
            handshake: 0,
            idle: None,
            request_done: None,
            queue_done: None,
            connect_done: None,
            response_done: None,
            total: 0,
            logasap: false,
            status: None,
            bytes_out: 0,
            bytes_in: 0,
            cookie_req: None,
            cookie_resp: None,
            term: TermState::NORMAL,
            actconn: 0,
            feconn: 0,
            beconn: 0,
            srv_conn: 0,
            retries: 0,
            redispatched: false,
            srv_queue: 0,
            backend_queue: 0,
            request_line: None,
            req_captures: &[],
            res_captures: &[],
            samples: &[],
            unique_id: None,
            pid: 0,
            hostname: "",
            ssl_version: None,
            ssl_cipher: None,
            ssl_sni: None,
            ssl_resumed: None,
            ssl_c_used: None,
            request_counter: 0,
            log_counter: 0,
            http: false,
        }
    }
}

fn since(base: Option<u64>, t: Option<u64>) -> i64 {
    match t {
        Some(t) => t as i64 - base.unwrap_or(0) as i64,
        None => -1,
    }
}

impl LogRecord<'_> {
    /// `%Th`.
    pub fn th(&self) -> i64 {
        self.handshake as i64
    }
    /// `%Ti` (-1: nothing received).
    pub fn ti(&self) -> i64 {
        self.idle.map_or(-1, |v| v as i64)
    }
    /// `%Tq` = Th + Ti + TR (-1 when the request was not complete).
    pub fn tq(&self) -> i64 {
        self.request_done.map_or(-1, |v| v as i64)
    }
    /// `%TR`: from the first byte of the request to the end of its headers.
    pub fn t_request(&self) -> i64 {
        match self.request_done {
            Some(t) => t as i64 - self.idle_and_handshake(),
            None => -1,
        }
    }
    /// `%Tw`: time spent in queues.
    pub fn tw(&self) -> i64 {
        since(self.request_done, self.queue_done)
    }
    /// `%Tc`: time to connect to the server.
    pub fn tc(&self) -> i64 {
        match self.queue_done {
            Some(_) => since(self.queue_done, self.connect_done),
            None => -1,
        }
    }
    /// `%Tr`: server response time (headers).
    pub fn tr(&self) -> i64 {
        match self.connect_done {
            Some(_) => since(self.connect_done, self.response_done),
            None => -1,
        }
    }
    /// `%Td`: data transmission time.
    pub fn td(&self) -> i64 {
        let from = if self.http {
            self.response_done
        } else {
            self.connect_done
        };
        match from {
            Some(f) => self.total as i64 - f as i64,
            None => -1,
        }
    }
    /// `%Ta`: active time (Tt minus handshake and idle time).
    pub fn ta(&self) -> i64 {
        self.total as i64 - self.idle_and_handshake()
    }
    /// `%Tt`: total time.
    pub fn tt(&self) -> i64 {
        self.total as i64
    }
    /// `%Tu`: total time minus idle time.
    pub fn tu(&self) -> i64 {
        self.total as i64 - self.idle.map_or(0, |v| v as i64)
    }
    /// `Th + Ti`, or 0 when nothing was received (HAProxy's rule).
    fn idle_and_handshake(&self) -> i64 {
        match self.idle {
            Some(i) => (i + self.handshake) as i64,
            None => 0,
        }
    }
    /// Date of the start of the request (`%tr`): accept date + Th + Ti.
    pub fn request_date(&self) -> SystemTime {
        self.accept_date + Duration::from_millis(self.idle_and_handshake() as u64)
    }

    /// True for a stream HAProxy considers not "normal" (for `option
    /// dontlog-normal` and `option log-separate-errors`): an abnormal
    /// termination, a retry or redispatch, or (HTTP) a 5xx status.
    pub fn is_error(&self) -> bool {
        self.term.who != Who::None
            || self.retries > 0
            || self.redispatched
            || (self.http && self.status.is_some_and(|s| s >= 500))
    }
}

/// First character of the termination state: the first event that ended
/// the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Who {
    /// `-`: normal completion, both sides closed with nothing left.
    #[default]
    None,
    /// `C`: aborted by the client.
    Client,
    /// `S`: aborted or refused by the server.
    Server,
    /// `P`: aborted by the proxy (limit, deny, invalid message).
    Proxy,
    /// `L`: handled locally, not passed to a server (redirects, stats).
    Local,
    /// `R`: a resource of the proxy was exhausted (memory, sockets, ports).
    Resource,
    /// `I`: internal error (a bug).
    Internal,
    /// `D`: killed because the server went down (`on-marked-down
    /// shutdown-sessions`).
    Down,
    /// `U`: killed on a backup server because an active one came back up.
    Up,
    /// `K`: killed by an administrator.
    Killed,
    /// `c`: the client-side timeout expired.
    ClientTimeout,
    /// `s`: the server-side timeout expired.
    ServerTimeout,
}

impl Who {
    pub const fn code(self) -> u8 {
        match self {
            Who::None => b'-',
            Who::Client => b'C',
            Who::Server => b'S',
            Who::Proxy => b'P',
            Who::Local => b'L',
            Who::Resource => b'R',
            Who::Internal => b'I',
            Who::Down => b'D',
            Who::Up => b'U',
            Who::Killed => b'K',
            Who::ClientTimeout => b'c',
            Who::ServerTimeout => b's',
        }
    }
}

/// Second character: what the stream was doing when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// `-`: normal completion after the data phase.
    #[default]
    None,
    /// `R`: waiting for a complete, valid request (HTTP).
    Request,
    /// `Q`: waiting in a queue for a connection slot.
    Queue,
    /// `C`: waiting for the connection to the server.
    Connect,
    /// `H`: waiting for complete, valid response headers (HTTP).
    Headers,
    /// `D`: data phase.
    Data,
    /// `L`: sending the last data to the client after the server finished.
    Last,
    /// `T`: the request was tarpitted.
    Tarpit,
}

impl Phase {
    pub const fn code(self) -> u8 {
        match self {
            Phase::None => b'-',
            Phase::Request => b'R',
            Phase::Queue => b'Q',
            Phase::Connect => b'C',
            Phase::Headers => b'H',
            Phase::Data => b'D',
            Phase::Last => b'L',
            Phase::Tarpit => b'T',
        }
    }
}

/// Third character: the persistence cookie the client sent (HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieReq {
    /// `-`: no persistence cookie configured.
    #[default]
    NotApplicable,
    /// `N`: the client sent no cookie.
    None,
    /// `I`: the cookie matched no known server.
    Invalid,
    /// `D`: the cookie designated a server that was down.
    Down,
    /// `V`: a valid cookie; the client went to that server.
    Valid,
    /// `E`: valid but expired (`maxidle`), ignored.
    Expired,
    /// `O`: valid but too old (`maxlife`), ignored.
    Old,
    /// `U`: present but not used (another selection rule applied).
    Unused,
}

impl CookieReq {
    pub const fn code(self) -> u8 {
        match self {
            CookieReq::NotApplicable => b'-',
            CookieReq::None => b'N',
            CookieReq::Invalid => b'I',
            CookieReq::Down => b'D',
            CookieReq::Valid => b'V',
            CookieReq::Expired => b'E',
            CookieReq::Old => b'O',
            CookieReq::Unused => b'U',
        }
    }
}

/// Fourth character: what happened to the persistence cookie in the
/// response (HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieResp {
    /// `-`: no persistence cookie configured.
    #[default]
    NotApplicable,
    /// `N`: the server sent none and none was inserted.
    None,
    /// `I`: the proxy inserted one.
    Inserted,
    /// `U`: the proxy updated the date of the client's cookie (`maxidle`).
    Updated,
    /// `P`: the server's cookie was passed as is.
    Provided,
    /// `R`: the server's cookie was rewritten (rewrite, prefix modes).
    Rewritten,
    /// `D`: the server's cookie was deleted.
    Deleted,
}

impl CookieResp {
    pub const fn code(self) -> u8 {
        match self {
            CookieResp::NotApplicable => b'-',
            CookieResp::None => b'N',
            CookieResp::Inserted => b'I',
            CookieResp::Updated => b'U',
            CookieResp::Provided => b'P',
            CookieResp::Rewritten => b'R',
            CookieResp::Deleted => b'D',
        }
    }
}

/// HAProxy's termination state: `%ts` prints the first two characters,
/// `%tsc` all four. The common pairs (section 8.5): `--` normal; `CD`
/// client aborted during data; `cD` client timeout; `CH`/`cH` client gone
/// or timed out while waiting for the response; `CQ` aborted while queued;
/// `CR`/`cR` incomplete request (aborted / `timeout http-request`); `LR`
/// handled locally; `SC` connection refused; `sC` `timeout connect`; `SD`
/// server died during data; `sD` `timeout server` during data; `SH`/`sH`
/// server aborted / timed out before its headers; `sQ` `timeout queue`;
/// `PC` process socket limit; `PD`/`PH`/`PR` invalid data, response or
/// request blocked by the proxy; `PT` tarpitted; `RC` resource exhausted
/// while connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TermState {
    pub who: Who,
    pub phase: Phase,
    pub cookie_req: CookieReq,
    pub cookie_resp: CookieResp,
}

impl TermState {
    /// `----`: normal completion, no persistence cookie configured.
    pub const NORMAL: TermState = TermState {
        who: Who::None,
        phase: Phase::None,
        cookie_req: CookieReq::NotApplicable,
        cookie_resp: CookieResp::NotApplicable,
    };

    /// A state without cookie information (`--` in the last two places).
    pub const fn new(who: Who, phase: Phase) -> TermState {
        TermState {
            who,
            phase,
            cookie_req: CookieReq::NotApplicable,
            cookie_resp: CookieResp::NotApplicable,
        }
    }

    /// The same state with the persistence cookie flags set.
    pub const fn with_cookie(self, req: CookieReq, resp: CookieResp) -> TermState {
        TermState {
            cookie_req: req,
            cookie_resp: resp,
            ..self
        }
    }

    /// The four characters, e.g. `*b"sH--"`.
    pub const fn as_bytes(&self) -> [u8; 4] {
        [
            self.who.code(),
            self.phase.code(),
            self.cookie_req.code(),
            self.cookie_resp.code(),
        ]
    }
}

impl std::fmt::Display for TermState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.as_bytes();
        f.write_str(std::str::from_utf8(&b).unwrap_or("????"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_codes() {
        assert_eq!(&TermState::NORMAL.as_bytes(), b"----");
        assert_eq!(
            &TermState::new(Who::ServerTimeout, Phase::Headers).as_bytes(),
            b"sH--"
        );
        let t = TermState::new(Who::None, Phase::None)
            .with_cookie(CookieReq::None, CookieResp::Inserted);
        assert_eq!(t.to_string(), "--NI");
        assert_eq!(
            TermState::new(Who::Client, Phase::Request)
                .with_cookie(CookieReq::Valid, CookieResp::Updated)
                .to_string(),
            "CRVU"
        );
        let all_who = [
            Who::Client,
            Who::Server,
            Who::Proxy,
            Who::Local,
            Who::Resource,
            Who::Internal,
            Who::Down,
            Who::Up,
            Who::Killed,
            Who::ClientTimeout,
            Who::ServerTimeout,
        ];
        let codes: Vec<u8> = all_who.iter().map(|w| w.code()).collect();
        assert_eq!(codes, b"CSPLRIDUKcs");
        let phases = [
            Phase::Request,
            Phase::Queue,
            Phase::Connect,
            Phase::Headers,
            Phase::Data,
            Phase::Last,
            Phase::Tarpit,
        ];
        assert_eq!(
            phases.iter().map(|p| p.code()).collect::<Vec<_>>(),
            b"RQCHDLT"
        );
        let req = [
            CookieReq::None,
            CookieReq::Invalid,
            CookieReq::Down,
            CookieReq::Valid,
            CookieReq::Expired,
            CookieReq::Old,
            CookieReq::Unused,
        ];
        assert_eq!(req.iter().map(|p| p.code()).collect::<Vec<_>>(), b"NIDVEOU");
        let resp = [
            CookieResp::None,
            CookieResp::Inserted,
            CookieResp::Updated,
            CookieResp::Provided,
            CookieResp::Rewritten,
            CookieResp::Deleted,
        ];
        assert_eq!(resp.iter().map(|p| p.code()).collect::<Vec<_>>(), b"NIUPRD");
    }

    #[test]
    fn derived_timers() {
        // The documentation's example: 10/0/30/69/109.
        let r = LogRecord {
            http: true,
            handshake: 0,
            idle: Some(0),
            request_done: Some(10),
            queue_done: Some(10),
            connect_done: Some(40),
            response_done: Some(109),
            total: 109,
            ..LogRecord::default()
        };
        assert_eq!(
            (r.t_request(), r.tw(), r.tc(), r.tr(), r.ta()),
            (10, 0, 30, 69, 109)
        );
        assert_eq!(
            (r.tq(), r.tt(), r.td(), r.tu(), r.th(), r.ti()),
            (10, 109, 0, 109, 0, 0)
        );
        // Aborted before the request completed: -1/-1/-1/-1/8490.
        let r = LogRecord {
            http: true,
            idle: Some(0),
            total: 8490,
            ..LogRecord::default()
        };
        assert_eq!(
            (r.t_request(), r.tw(), r.tc(), r.tr(), r.ta()),
            (-1, -1, -1, -1, 8490)
        );
        // TCP: Tw/Tc/Tt = 0/0/5007.
        let r = LogRecord {
            queue_done: Some(0),
            connect_done: Some(0),
            total: 5007,
            ..LogRecord::default()
        };
        assert_eq!((r.tw(), r.tc(), r.tt(), r.td()), (0, 0, 5007, 5007));
        // Keep-alive request with idle time: Ta excludes Th + Ti.
        let r = LogRecord {
            handshake: 5,
            idle: Some(100),
            request_done: Some(107),
            total: 200,
            ..LogRecord::default()
        };
        assert_eq!((r.t_request(), r.ta(), r.tu(), r.tq()), (2, 95, 100, 107));
        assert_eq!(r.request_date(), UNIX_EPOCH + Duration::from_millis(105));
    }

    #[test]
    fn errors() {
        let mut r = LogRecord {
            http: true,
            status: Some(200),
            ..LogRecord::default()
        };
        assert!(!r.is_error());
        r.status = Some(503);
        assert!(r.is_error());
        r.status = Some(200);
        r.retries = 1;
        assert!(r.is_error());
        r.retries = 0;
        r.term = TermState::new(Who::Client, Phase::Data);
        assert!(r.is_error());
    }
}
