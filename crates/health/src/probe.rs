//! The checks' network side: connecting (SOCKS4, PROXY header, TLS),
//! plain TCP connect, `option httpchk` and the agent protocol; rule lists
//! run in [`crate::tcpcheck`].

use crate::core::{parse_agent_line, AgentReply};
use crate::event::{CheckStatus, Outcome};
use crate::h2check;
use crate::tcpcheck::Program;
use fairlead_config::{CheckProto, Expect, ExpectKind, HealthCheck, HttpCheck};
use fairlead_http::{BodyKind, ChunkProgress, ChunkedState, MAX_HEADERS};
use fairlead_net::Conn;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

/// TLS for checks (`check-ssl`, or a server with `ssl` checked on its own
/// address and port): the client configuration and the name to send.
#[derive(Debug, Clone)]
pub struct CheckTls {
    pub config: std::sync::Arc<rustls::ClientConfig>,
    pub name: rustls::pki_types::ServerName<'static>,
}

/// How a check connects: TLS, PROXY header, SOCKS4, closing.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnOpts {
    /// TLS on top of the connection.
    pub tls: Option<CheckTls>,
    /// TLS settings of `connect ssl` rules when `tls` is none.
    pub rule_tls: Option<CheckTls>,
    /// PROXY header version sent (0: none).
    pub proxy: u8,
    /// The version a `send-proxy` rule uses (the server's).
    pub proxy_version: u8,
    /// The SOCKS4 proxy to go through.
    pub socks4: Option<SocketAddr>,
    /// The server's `socks4` proxy (for `via-socks4` rules).
    pub socks4_server: Option<SocketAddr>,
    /// Close with a FIN rather than a reset.
    pub linger: bool,
    /// The server's `check-proto`, for HTTP checks.
    pub proto: Option<CheckProto>,
    /// `check-alpn` is set: without `proto`, HTTP checks speak what TLS
    /// negotiated.
    pub alpn_proto: bool,
}

/// The TLS of a `tcp-check connect ssl` rule: the server's check TLS
/// settings (or, without any, a context that does not verify, as a
/// server with no `ssl` options), with the rule's SNI and ALPN.
pub(crate) fn rule_tls(
    base: Option<&CheckTls>,
    sni: Option<&str>,
    alpn: Option<&[String]>,
) -> CheckTls {
    let mut t = match base {
        Some(b) => b.clone(),
        None => CheckTls {
            config: insecure_config(),
            name: rustls::pki_types::ServerName::IpAddress(
                std::net::IpAddr::from([127, 0, 0, 1]).into(),
            ),
        },
    };
    if let Some(name) =
        sni.and_then(|n| rustls::pki_types::ServerName::try_from(n.to_string()).ok())
    {
        t.name = name;
    }
    if let Some(protos) = alpn {
        let mut c = (*t.config).clone();
        c.alpn_protocols = protos.iter().map(|p| p.as_bytes().to_vec()).collect();
        t.config = std::sync::Arc::new(c);
    }
    t
}

/// A client context that does not verify the server (`verify none`).
fn insecure_config() -> std::sync::Arc<rustls::ClientConfig> {
    static CFG: std::sync::OnceLock<std::sync::Arc<rustls::ClientConfig>> =
        std::sync::OnceLock::new();
    CFG.get_or_init(|| {
        let t = fairlead_config::ServerTls {
            verify: fairlead_config::Verify::None,
            ..Default::default()
        };
        match fairlead_tls::ServerContext::build(&t) {
            Ok(c) => c.config(),
            // Building a context without files cannot fail; an empty
            // client configuration keeps this path panic-free regardless.
            Err(_) => std::sync::Arc::new(
                rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                    rustls::crypto::aws_lc_rs::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .map(|b| {
                    b.with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth()
                })
                .unwrap_or_else(|_| unreachable!("default protocol versions are valid")),
            ),
        }
    })
    .clone()
}

/// Most response bytes a check looks at (HAProxy's default buffer size);
/// content beyond it is not read.
pub(crate) const MAX_RESPONSE: usize = 16384;
/// Longest agent line read.
const MAX_AGENT_LINE: usize = 1024;

/// Time limits of one check, as HAProxy applies them: without `timeout
/// check` the whole check (connect and response) must end within `inter`;
/// with it, the connection gets min(`timeout connect`, `inter`) and the
/// response `timeout check` more.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub inter: Duration,
    pub connect: Option<Duration>,
    pub check: Option<Duration>,
}

impl Limits {
    pub(crate) fn connect_deadline(&self, start: Instant) -> Instant {
        let c = self.connect.unwrap_or(self.inter).min(self.inter);
        start + c
    }

    pub(crate) fn read_deadline(&self, start: Instant, connected: Instant) -> Instant {
        match self.check {
            Some(t) => connected + t,
            None => start + self.inter,
        }
    }
}

/// A compiled `expect`.
#[derive(Debug)]
pub(crate) struct Matcher {
    negate: bool,
    /// A `binary` pattern (named "(binary)" in messages).
    binary: bool,
    kind: MatchKind,
    /// The pattern as configured, for messages.
    label: String,
}

#[derive(Debug)]
enum MatchKind {
    Status(Vec<(u16, u16)>),
    RStatus(regex::Regex),
    Bytes(Vec<u8>),
    Regex(regex::bytes::Regex),
    /// `rbinary`: a regex over the reply's uppercase hex dump.
    HexRegex(regex::Regex),
    /// A regex that does not compile: never matches.
    Invalid(String),
}

impl Matcher {
    pub(crate) fn compile(e: &Expect) -> Matcher {
        let (kind, label) = match &e.kind {
            ExpectKind::Status(r) => (MatchKind::Status(r.clone()), format!("{r:?}")),
            ExpectKind::RStatus(re) => (
                match regex::Regex::new(re) {
                    Ok(r) => MatchKind::RStatus(r),
                    Err(err) => MatchKind::Invalid(format!("invalid rstatus regex: {err}")),
                },
                re.clone(),
            ),
            ExpectKind::String(s) => (MatchKind::Bytes(s.as_bytes().to_vec()), s.clone()),
            ExpectKind::Binary(b) => (
                MatchKind::Bytes(b.clone()),
                b.iter().map(|x| format!("{x:02X}")).collect(),
            ),
            ExpectKind::RBinary(re) => (
                match regex::Regex::new(re) {
                    Ok(r) => MatchKind::HexRegex(r),
                    Err(err) => MatchKind::Invalid(format!("invalid rbinary regex: {err}")),
                },
                re.clone(),
            ),
            ExpectKind::RString(re) => (
                match regex::bytes::Regex::new(re) {
                    Ok(r) => MatchKind::Regex(r),
                    Err(err) => MatchKind::Invalid(format!("invalid rstring regex: {err}")),
                },
                re.clone(),
            ),
        };
        Matcher {
            negate: e.negate,
            binary: matches!(e.kind, ExpectKind::Binary(_)),
            kind,
            label,
        }
    }

    /// A regex expect of a protocol check (`rstring`, or `rbinary` over
    /// the hex dump when `hex`).
    pub(crate) fn regex(negate: bool, re: &str, hex: bool) -> Matcher {
        let kind = if hex {
            regex::Regex::new(re).map(MatchKind::HexRegex)
        } else {
            regex::bytes::Regex::new(re).map(MatchKind::Regex)
        };
        Matcher {
            negate,
            binary: false,
            kind: kind.unwrap_or_else(|e| MatchKind::Invalid(format!("invalid regex: {e}"))),
            label: re.to_string(),
        }
    }

    pub(crate) fn negate(&self) -> bool {
        self.negate
    }

    /// The length of a literal pattern (an expect waits for that many
    /// bytes before judging).
    pub(crate) fn literal_len(&self) -> Option<usize> {
        match &self.kind {
            MatchKind::Bytes(b) => Some(b.len()),
            _ => None,
        }
    }

    /// The pattern as HAProxy names it in a failed tcp-check expect.
    pub(crate) fn describe(&self) -> String {
        match (&self.kind, self.binary) {
            (MatchKind::Bytes(_), false) => format!("'{}'", self.label),
            (MatchKind::Bytes(_), true) => "(binary)".into(),
            (MatchKind::HexRegex(_), _) => "(binary regex)".into(),
            _ => "(regex)".into(),
        }
    }

    fn is_status(&self) -> bool {
        matches!(self.kind, MatchKind::Status(_) | MatchKind::RStatus(_))
    }

    /// Whether the pattern is found (before negation); `None` when this
    /// kind cannot apply to content.
    pub(crate) fn find(&self, data: &[u8]) -> Option<bool> {
        match &self.kind {
            MatchKind::Bytes(b) => Some(contains(data, b)),
            MatchKind::Regex(r) => Some(r.is_match(data)),
            MatchKind::HexRegex(r) => {
                let hex: String = data.iter().map(|b| format!("{b:02X}")).collect();
                Some(r.is_match(&hex))
            }
            _ => None,
        }
    }

    fn status_matches(&self, code: u16) -> Option<bool> {
        match &self.kind {
            MatchKind::Status(ranges) => Some(ranges.iter().any(|&(a, b)| a <= code && code <= b)),
            MatchKind::RStatus(r) => Some(r.is_match(&code.to_string())),
            _ => None,
        }
    }

    pub(crate) fn invalid(&self) -> Option<&str> {
        match &self.kind {
            MatchKind::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// A compiled active check.
#[derive(Debug)]
pub(crate) enum Probe {
    Tcp,
    Http {
        request: Vec<u8>,
        /// The same request for HTTP/2.
        h2: h2check::Request,
        /// `http-check connect proto`.
        proto: Option<CheckProto>,
        /// `http-check connect` without `default`.
        own_connect: bool,
        expect: Option<Matcher>,
        head: bool,
        /// `http-check connect port`.
        port: Option<u16>,
        /// `http-check disable-on-404`.
        disable_404: bool,
    },
    /// `tcp-check` rules and the protocol checks.
    TcpCheck(Program),
}

/// Builds the request of `option httpchk`: request line, configured
/// headers, `Content-Length` when there is a body, and `Connection: close`
/// for HTTP/1.1 unless a `Connection` header is configured.
pub(crate) fn http_request(h: &HttpCheck) -> Vec<u8> {
    let mut r = format!("{} {} {}\r\n", h.method, h.uri, h.version);
    for (n, v) in &h.headers {
        r.push_str(&format!("{n}: {v}\r\n"));
    }
    let has = |name: &str| h.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if h.version.eq_ignore_ascii_case("HTTP/1.1") && !has("connection") {
        r.push_str("Connection: close\r\n");
    }
    if let Some(body) = &h.body {
        if !has("content-length") {
            r.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        r.push_str("\r\n");
        r.push_str(body);
    } else {
        r.push_str("\r\n");
    }
    r.into_bytes()
}

impl Probe {
    pub(crate) fn compile(c: &HealthCheck) -> Probe {
        match c {
            HealthCheck::Tcp => Probe::Tcp,
            HealthCheck::Http(h) => Probe::Http {
                request: http_request(h),
                h2: h2check::Request::new(h),
                proto: h.proto,
                own_connect: h.own_connect,
                expect: h.expect.as_ref().map(Matcher::compile),
                head: h.method.eq_ignore_ascii_case("HEAD"),
                port: h.port,
                disable_404: h.disable_on_404,
            },
            other => match Program::compile(other) {
                Some(p) => Probe::TcpCheck(p),
                None => Probe::Tcp,
            },
        }
    }

    /// Whether a 404 means NOLB rather than a failure for an UP server
    /// (`http-check disable-on-404`, which takes precedence over
    /// `http-check expect`).
    pub(crate) fn disable_404(&self) -> bool {
        matches!(
            self,
            Probe::Http {
                disable_404: true,
                ..
            }
        )
    }

    pub(crate) async fn run(&self, addr: SocketAddr, limits: &Limits, opts: &ConnOpts) -> Outcome {
        let start = Instant::now();
        match self {
            Probe::Tcp => match connect(addr, limits.connect_deadline(start), start, opts).await {
                Ok(s) => {
                    close(s);
                    let ok = if opts.tls.is_some() {
                        CheckStatus::L6Ok
                    } else {
                        CheckStatus::L4Ok
                    };
                    Outcome::new(ok, start.elapsed())
                }
                Err(o) => o,
            },
            Probe::Http {
                request,
                h2,
                proto,
                own_connect,
                expect,
                head,
                port,
                ..
            } => {
                let addr = port.map_or(addr, |p| SocketAddr::new(addr.ip(), p));
                // Without `default`, a connect rule uses none of the
                // server's check transport settings (HAProxy).
                let own;
                let opts = if *own_connect {
                    own = ConnOpts {
                        proxy_version: opts.proxy_version,
                        socks4_server: opts.socks4_server,
                        rule_tls: opts.rule_tls.clone(),
                        ..ConnOpts::default()
                    };
                    &own
                } else {
                    opts
                };
                let req = HttpReq {
                    h1: request,
                    h2,
                    proto: proto.or(opts.proto),
                    head_method: *head,
                };
                http_check(addr, limits, start, &req, expect.as_ref(), opts).await
            }
            Probe::TcpCheck(p) => p.run(addr, limits, start, opts).await,
        }
    }
}

/// Connects (to the SOCKS4 proxy, which then connects to `addr`), sends
/// the PROXY header, then completes the TLS handshake, all within
/// `deadline`. A SOCKS4 refusal is a layer 4 error; a TLS failure a layer
/// 6 one, as in HAProxy.
pub(crate) async fn connect(
    addr: SocketAddr,
    deadline: Instant,
    start: Instant,
    opts: &ConnOpts,
) -> Result<Conn, Outcome> {
    let l4 =
        |e: &std::io::Error| Outcome::new(CheckStatus::L4Con, start.elapsed()).info(err_text(e));
    let first = opts.socks4.unwrap_or(addr);
    let mut tcp = match timeout_at(deadline, TcpStream::connect(first)).await {
        Err(_) => return Err(Outcome::new(CheckStatus::L4Tout, start.elapsed())),
        Ok(Err(e)) => return Err(l4(&e)),
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    if opts.socks4.is_some() {
        match timeout_at(deadline, crate::socks4::connect(&mut tcp, addr)).await {
            Err(_) => return Err(Outcome::new(CheckStatus::L4Tout, start.elapsed())),
            Ok(Err(e)) => return Err(l4(&e)),
            Ok(Ok(())) => {}
        }
    }
    if opts.proxy > 0 {
        let mut hdr = Vec::new();
        if opts.proxy >= 2 {
            fairlead_proxyproto::encode_v2(
                fairlead_proxyproto::Command::Local,
                None,
                &fairlead_proxyproto::V2Options::default(),
                &mut hdr,
            );
        } else {
            fairlead_proxyproto::encode_v1(None, &mut hdr);
        }
        match timeout_at(
            deadline,
            tokio::io::AsyncWriteExt::write_all(&mut tcp, &hdr),
        )
        .await
        {
            Err(_) => return Err(Outcome::new(CheckStatus::L4Tout, start.elapsed())),
            Ok(Err(e)) => return Err(l4(&e)),
            Ok(Ok(())) => {}
        }
    }
    let Some(t) = &opts.tls else {
        return Ok(Conn::plain(tcp));
    };
    let _ = socket2::SockRef::from(&tcp).set_linger(Some(Duration::ZERO));
    let left = deadline.saturating_duration_since(Instant::now());
    match fairlead_tls::stream::connect(tcp, t.config.clone(), t.name.clone(), Some(left)).await {
        Ok(c) => Ok(c),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            Err(Outcome::new(CheckStatus::L6Tout, start.elapsed()))
        }
        Err(e) => Err(Outcome::new(CheckStatus::L6Rsp, start.elapsed()).info(err_text(&e))),
    }
}

/// Closes with a reset, as HAProxy ends its checks, so that checks leave
/// no TIME_WAIT sockets behind.
pub(crate) fn close(s: Conn) {
    let _ = socket2::SockRef::from(s.sock()).set_linger(Some(Duration::ZERO));
    drop(s);
}

/// Closes with a FIN (`linger`), so that the server reads everything sent
/// (a MySQL `COM_QUIT`) and sees a clean end.
pub(crate) fn close_linger(s: Conn) {
    let _ = socket2::SockRef::from(s.sock()).set_linger(None);
    drop(s);
}

/// "Connection refused" rather than "Connection refused (os error 111)".
pub(crate) fn err_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

pub(crate) async fn write_all(
    s: &mut Conn,
    data: &[u8],
    deadline: Instant,
    start: Instant,
) -> Result<(), Outcome> {
    match timeout_at(deadline, s.write_all(data, None)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Outcome::new(CheckStatus::L7Rsp, start.elapsed()).info(err_text(&e))),
        Err(_) => Err(Outcome::new(CheckStatus::L7Tout, start.elapsed())),
    }
}

pub(crate) enum Read {
    Data,
    Eof,
    Timeout,
    Error(String),
}

pub(crate) async fn read_more(s: &mut Conn, buf: &mut Vec<u8>, deadline: Instant) -> Read {
    let mut chunk = [0u8; 4096];
    let room = (MAX_RESPONSE - buf.len().min(MAX_RESPONSE)).min(chunk.len());
    if room == 0 {
        return Read::Eof;
    }
    match timeout_at(deadline, s.read(&mut chunk[..room])).await {
        Err(_) => Read::Timeout,
        Ok(Ok(0)) => Read::Eof,
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            Read::Data
        }
        Ok(Err(e)) => Read::Error(err_text(&e)),
    }
}

/// The parts of an HTTP response head a check needs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub code: u16,
    pub reason: String,
    pub len: usize,
    /// Framing, the request method (HEAD), 1xx, 204 and 304 accounted for.
    pub body: BodyKind,
}

/// Parses the response head with the proxy's own parser
/// ([`fairlead_http::parse_response_with_limit`]). `Ok(None)`: incomplete;
/// `Err`: the check's failure text, "Non-HTTP response" when the status
/// line itself is not HTTP/1.x, the parser's reason otherwise (e.g.
/// ambiguous framing). The check's own size limit ([`MAX_RESPONSE`]) is
/// applied by the caller.
pub(crate) fn parse_head(buf: &[u8], head_method: bool) -> Result<Option<Head>, &'static str> {
    match fairlead_http::parse_response_with_limit(buf, head_method, usize::MAX, MAX_HEADERS) {
        Ok(Some(h)) => Ok(Some(Head {
            code: h.status,
            reason: String::from_utf8_lossy(&buf[h.reason.0..h.reason.1])
                .trim()
                .to_string(),
            len: h.head_len,
            body: h.body,
        })),
        Ok(None) => Ok(None),
        Err(e) if e.in_start_line() => Err("Non-HTTP response"),
        Err(e) => Err(e.reason),
    }
}

/// Decodes a chunked body with the proxy's chunked parser; `None` while
/// the body is incomplete (or not valid chunked framing).
pub(crate) fn dechunk(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match ChunkedState::new().feed_with(data, |d| out.extend_from_slice(d)) {
        Ok(ChunkProgress::Done(_)) => Some(out),
        _ => None,
    }
}

/// The request of an HTTP check, in both protocols.
struct HttpReq<'a> {
    h1: &'a [u8],
    h2: &'a h2check::Request,
    /// `http-check connect proto`, else the server's `check-proto`.
    proto: Option<CheckProto>,
    head_method: bool,
}

/// Whether an HTTP check on `s` speaks HTTP/2: `proto h2`, or no `proto`,
/// `check-alpn` set (`alpn`) and TLS whose ALPN negotiated `h2`. As in
/// HAProxy 2.6, the multiplexer follows the negotiated ALPN only with
/// `check-alpn`; without it (the server's own `alpn` offered) the check
/// speaks HTTP/1.
fn speaks_h2(s: &Conn, proto: Option<CheckProto>, alpn: bool) -> bool {
    match proto {
        Some(p) => p == CheckProto::H2,
        None => {
            alpn && s
                .tls_info_ref()
                .is_some_and(|i| i.alpn.as_deref() == Some(&b"h2"[..]))
        }
    }
}

async fn http_check(
    addr: SocketAddr,
    limits: &Limits,
    start: Instant,
    req: &HttpReq<'_>,
    expect: Option<&Matcher>,
    opts: &ConnOpts,
) -> Outcome {
    let mut s = match connect(addr, limits.connect_deadline(start), start, opts).await {
        Ok(s) => s,
        Err(o) => return o,
    };
    let deadline = limits.read_deadline(start, Instant::now());
    let need_body = expect.is_some_and(|m| !m.is_status());
    let result = if speaks_h2(&s, req.proto, opts.alpn_proto) {
        h2check::exchange(&mut s, req.h2, need_body, deadline, start)
            .await
            .map(|r| (r.code, None, r.body))
    } else {
        h1_exchange(&mut s, req.h1, need_body, req.head_method, deadline, start)
            .await
            .map(|(h, body)| (h.code, Some(h.reason), body))
    };
    close(s);
    match result {
        Ok((code, reason, body)) => judge(code, reason, &body, expect, start.elapsed()),
        Err(o) => o,
    }
}

/// Sends the HTTP/1 request and reads the response head, and its body
/// when `need_body`.
async fn h1_exchange(
    s: &mut Conn,
    request: &[u8],
    need_body: bool,
    head_method: bool,
    deadline: Instant,
    start: Instant,
) -> Result<(Head, Vec<u8>), Outcome> {
    write_all(s, request, deadline, start).await?;
    let mut buf = Vec::with_capacity(1024);
    let mut eof = false;
    loop {
        match parse_head(&buf, head_method) {
            Err(e) => return Err(Outcome::new(CheckStatus::L7Rsp, start.elapsed()).info(e)),
            Ok(Some(h)) => {
                let body = &buf[h.len..];
                let done = !need_body
                    || eof
                    || buf.len() >= MAX_RESPONSE
                    || match h.body {
                        BodyKind::None => true,
                        BodyKind::Chunked => dechunk(body).is_some(),
                        BodyKind::Length(n) => body.len() as u64 >= n,
                        BodyKind::CloseDelimited => false,
                    };
                if done {
                    let body = match h.body {
                        BodyKind::None => Vec::new(),
                        BodyKind::Chunked => dechunk(body).unwrap_or_else(|| body.to_vec()),
                        BodyKind::Length(n) => body
                            [..usize::try_from(n).unwrap_or(usize::MAX).min(body.len())]
                            .to_vec(),
                        BodyKind::CloseDelimited => body.to_vec(),
                    };
                    return Ok((h, body));
                }
            }
            Ok(None) if eof || buf.len() >= MAX_RESPONSE => {
                let info = if buf.is_empty() {
                    "Empty response"
                } else {
                    "Incomplete response"
                };
                return Err(Outcome::new(CheckStatus::L7Rsp, start.elapsed()).info(info));
            }
            Ok(None) => {}
        }
        match read_more(s, &mut buf, deadline).await {
            Read::Data => {}
            Read::Eof => eof = true,
            Read::Timeout => return Err(Outcome::new(CheckStatus::L7Tout, start.elapsed())),
            Read::Error(e) if buf.is_empty() => {
                return Err(Outcome::new(CheckStatus::L7Rsp, start.elapsed()).info(e))
            }
            Read::Error(_) => eof = true,
        }
    }
}

/// Judges a response as HAProxy 2.6 does: without `expect`, 2xx and 3xx
/// pass; a status rule that fails is `L7STS` (with the reason phrase, which
/// HTTP/2 has not); a content rule that fails, or meets an empty body, is
/// `L7RSP`.
fn judge(
    code: u16,
    reason: Option<String>,
    body: &[u8],
    expect: Option<&Matcher>,
    d: Duration,
) -> Outcome {
    // HAProxy logs no reason phrase for a passed check ("is UP, reason:
    // Layer7 check passed, code: 200, check duration: 1ms").
    let passed = || Outcome::new(CheckStatus::L7Ok, d).code(code);
    let wrong_status = || {
        let o = Outcome::new(CheckStatus::L7Sts, d).code(code);
        match reason.as_ref().filter(|r| !r.is_empty()) {
            Some(r) => o.info(r.clone()),
            None => o,
        }
    };
    let Some(m) = expect else {
        return if (200..400).contains(&code) {
            passed()
        } else {
            wrong_status()
        };
    };
    if let Some(e) = m.invalid() {
        return Outcome::new(CheckStatus::L7Rsp, d).code(code).info(e);
    }
    if let Some(found) = m.status_matches(code) {
        return if found != m.negate {
            passed()
        } else {
            wrong_status()
        };
    }
    // HAProxy gives a content failure no code.
    let fail = |info: &str| Outcome::new(CheckStatus::L7Rsp, d).info(info);
    if body.is_empty() {
        return fail("HTTP content check could not find a response body");
    }
    let found = m.find(body).unwrap_or(false);
    if found != m.negate {
        passed()
    } else if m.negate {
        fail("HTTP check matched unwanted content")
    } else {
        fail("HTTP content check did not match")
    }
}

/// Runs one agent check: connect, send `agent-send` if any, read one line.
/// `Err` when the agent could not be reached or said nothing (neutral for
/// the server's state).
pub(crate) async fn agent_check(
    addr: SocketAddr,
    send: Option<&[u8]>,
    limits: &Limits,
) -> Result<AgentReply, Outcome> {
    let start = Instant::now();
    let plain = ConnOpts::default();
    let mut s = connect(addr, limits.connect_deadline(start), start, &plain).await?;
    let deadline = limits.read_deadline(start, Instant::now());
    if let Some(data) = send {
        if let Err(o) = write_all(&mut s, data, deadline, start).await {
            close(s);
            return Err(o);
        }
    }
    let mut buf = Vec::new();
    let res = loop {
        if buf.contains(&b'\n') || buf.len() >= MAX_AGENT_LINE {
            break Ok(());
        }
        match read_more(&mut s, &mut buf, deadline).await {
            Read::Data => {}
            Read::Eof | Read::Error(_) => break Ok(()),
            Read::Timeout if !buf.is_empty() => break Ok(()),
            Read::Timeout => break Err(Outcome::new(CheckStatus::L7Tout, start.elapsed())),
        }
    };
    close(s);
    res?;
    if buf.is_empty() {
        return Err(Outcome::new(CheckStatus::L7Rsp, start.elapsed()).info("empty agent reply"));
    }
    buf.truncate(MAX_AGENT_LINE);
    Ok(parse_agent_line(&String::from_utf8_lossy(&buf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_format() {
        let h = HttpCheck {
            method: "GET".into(),
            uri: "/health".into(),
            version: "HTTP/1.1".into(),
            headers: vec![("Host".into(), "example".into())],
            body: Some("abc".into()),
            ..HttpCheck::default()
        };
        assert_eq!(
            String::from_utf8(http_request(&h)).unwrap(),
            "GET /health HTTP/1.1\r\nHost: example\r\nConnection: close\r\n\
             Content-Length: 3\r\n\r\nabc"
        );
        let d = String::from_utf8(http_request(&HttpCheck::default())).unwrap();
        assert_eq!(d, "OPTIONS / HTTP/1.0\r\n\r\n");
    }

    #[test]
    fn head_parsing() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        assert_eq!(parse_head(b"HTT", false), Ok(None));
        let h = parse_head(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbody",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (h.code, h.reason.as_str(), h.body),
            (503, "Service Unavailable", BodyKind::Length(4))
        );
        assert_eq!(h.len, 55);
        let h = parse_head(b"HTTP/1.0 200 OK\r\n\r\nall of it", false)
            .unwrap()
            .unwrap();
        assert_eq!(h.body, BodyKind::CloseDelimited);
        let h = parse_head(
            b"HTTP/1.1 200  Fine \xff \r\ncontent-length: 4\r\n\r\n",
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (h.reason.as_str(), h.body),
            ("Fine \u{fffd}", BodyKind::None)
        );
        let h = parse_head(b"HTTP/1.1 404\nTransfer-Encoding: chunked\n\n", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.code, h.reason.as_str(), h.body),
            (404, "", BodyKind::Chunked)
        );
        for bad in [
            &b"SSH-2.0-OpenSSH\r\n"[..],
            b"+PONG",
            b"HTTP/1.0 2x0 OK\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
        ] {
            assert_eq!(parse_head(bad, false), Err("Non-HTTP response"));
        }
        assert_eq!(
            parse_head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false
            ),
            Err("differing Content-Length values")
        );
    }

    #[test]
    fn chunked() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"),
            Some(b"abcde".to_vec())
        );
        assert_eq!(dechunk(b"3\r\nabc\r\n"), None);
    }

    #[test]
    fn matchers() {
        let m = Matcher::compile(&Expect::new(
            false,
            ExpectKind::RString("^\\+PO[N]G".into()),
        ));
        assert_eq!(m.find(b"+PONG\r\n"), Some(true));
        let m = Matcher::compile(&Expect::new(
            false,
            ExpectKind::Status(vec![(200, 299), (404, 404)]),
        ));
        assert_eq!(m.status_matches(404), Some(true));
        assert_eq!(m.status_matches(500), Some(false));
        let m = Matcher::compile(&Expect::new(false, ExpectKind::RString("(".into())));
        assert!(m.invalid().is_some());
    }
}
