//! Health check settings: `option httpchk`/`http-check`, `tcp-check`
//! rules, agent checks, `observe` and `on-error`.

use super::*;

/// Active health check of a backend's servers (those with `check`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HealthCheck {
    /// Connect only. The default.
    #[default]
    Tcp,
    /// `option httpchk` (+ `http-check send`/`expect`).
    Http(HttpCheck),
    /// `option tcp-check` with `tcp-check` rules.
    TcpCheck(Vec<TcpCheckRule>),
    /// `option mysql-check [user <name> [post-41|pre-41]]`: without a
    /// user, the server's handshake packet is read; with one, a login
    /// packet and `COM_QUIT` are sent and an OK packet expected.
    Mysql(Option<MysqlUser>),
    /// `option pgsql-check user <name>`: a StartupMessage, then an
    /// AuthenticationOk (or a password request) is expected.
    Pgsql { user: String },
    /// `option smtpchk [HELO|EHLO <domain>]`: a 2xx greeting, then the
    /// command (default `HELO localhost`) must get a 2xx reply.
    Smtp { command: String },
    /// `option ldap-check`: an anonymous LDAPv3 simple bind must succeed.
    Ldap,
    /// `option ssl-hello-chk`: an SSLv3 ClientHello must be answered with
    /// a TLS handshake or alert record.
    SslHello,
    /// `option spop-check`: a SPOP HAPROXY-HELLO frame with `healthcheck`
    /// must be answered with a valid AGENT-HELLO frame.
    Spop,
}

/// The user of `option mysql-check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlUser {
    pub name: String,
    /// `post-41` (MySQL >= 4.1 login packet) rather than `pre-41`.
    /// Default is true, as HAProxy 2.6.
    pub post41: bool,
}

/// `option httpchk [<method>] [<uri>] [<version>]` and `http-check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCheck {
    /// Default is `OPTIONS`.
    pub method: String,
    /// Default is `/`.
    pub uri: String,
    /// Default is `HTTP/1.0`.
    pub version: String,
    /// `http-check send hdr <name> <value>` (and the legacy form with
    /// `\r\n` in the version string).
    pub headers: Vec<(String, String)>,
    /// `http-check send body <string>`.
    pub body: Option<String>,
    /// `http-check expect`. Default (`None`) accepts any 2xx or 3xx.
    pub expect: Option<Expect>,
    /// `http-check connect port <N>`. Default is none: the server's
    /// check port (`port`), else its own port.
    pub port: Option<u16>,
    /// `http-check disable-on-404`: a 404 puts an UP server in NOLB
    /// (no new load-balanced traffic). Default is off.
    pub disable_on_404: bool,
    /// `http-check connect proto <h1|h2>`: the protocol the check speaks,
    /// over the server's `check-proto`. Default is none: the server's
    /// `check-proto`, else what TLS ALPN negotiated (`h2`: HTTP/2), else
    /// HTTP/1.
    pub proto: Option<CheckProto>,
    /// An `http-check connect` rule without `default`: as in HAProxy, the
    /// check uses only what the rule names, none of the server's check
    /// transport settings (`check-ssl`, `check-proto`, `check-alpn`,
    /// `check-send-proxy`, `check-via-socks4`). Default is false.
    pub own_connect: bool,
}

/// The protocol of a server's checks (`check-proto`, `http-check connect
/// proto`): HAProxy's multiplexer names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckProto {
    /// `none`: raw bytes (TCP checks, tcp-check rules); not usable by HTTP
    /// checks.
    None,
    /// `h1`: HTTP/1.x.
    H1,
    /// `h2`: HTTP/2, with prior knowledge in clear text, or over TLS.
    H2,
}

impl CheckProto {
    /// The protocol of a multiplexer name; `Err` with HAProxy's reason for
    /// an unknown one, or for `fcgi` (not implemented in Fairlead).
    pub fn parse(name: &str) -> Result<CheckProto, String> {
        match name {
            "none" => Ok(CheckProto::None),
            "h1" => Ok(CheckProto::H1),
            "h2" => Ok(CheckProto::H2),
            "fcgi" => Err("fcgi health checks are not implemented yet in Fairlead (HTTP checks speak HTTP/1.1 or HTTP/2)".into()),
            _ => Err(format!("unknown MUX protocol '{name}'")),
        }
    }

    /// The HTTP protocols (`h1`, `h2`) are what HTTP checks use; `none`
    /// is for the other check types.
    pub fn is_http(self) -> bool {
        self != CheckProto::None
    }
}

impl Default for HttpCheck {
    fn default() -> Self {
        HttpCheck {
            method: "OPTIONS".into(),
            uri: "/".into(),
            version: "HTTP/1.0".into(),
            headers: Vec::new(),
            body: None,
            expect: None,
            port: None,
            disable_on_404: false,
            proto: None,
            own_connect: false,
        }
    }
}

/// One `expect` of `http-check` or `tcp-check`, with `!` negation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub negate: bool,
    pub kind: ExpectKind,
    /// `min-recv <N>` (tcp-check): no verdict before N bytes are received
    /// (or the peer closed), and once they are, a pattern not found is a
    /// failure without waiting for more. Default is none: wait for the
    /// pattern until the peer closes, the buffer is full or time runs out.
    pub min_recv: Option<usize>,
}

impl Expect {
    /// An expect without `min-recv`.
    pub fn new(negate: bool, kind: ExpectKind) -> Expect {
        Expect {
            negate,
            kind,
            min_recv: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectKind {
    /// `status <code>[,<code>...]` (ranges `200-399` allowed).
    Status(Vec<(u16, u16)>),
    /// `rstatus <regex>`.
    RStatus(String),
    /// `string <text>`.
    String(String),
    /// `rstring <regex>`.
    RString(String),
    /// `binary <hex>` (tcp-check).
    Binary(Vec<u8>),
    /// `rbinary <regex>` (tcp-check): matched against the uppercase
    /// hexadecimal dump of the reply.
    RBinary(String),
}

/// One `tcp-check` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpCheckRule {
    /// `tcp-check connect [default] [port N] [addr IP] [ssl] [sni X]
    /// [alpn X] [send-proxy] [via-socks4] [linger]`.
    Connect(TcpConnect),
    /// `tcp-check send <string>` / `send-binary <hex>` (bytes to send;
    /// `\r\n` escapes already resolved by the lexer).
    Send(Vec<u8>),
    /// `tcp-check expect ...`.
    Expect(Expect),
    /// `tcp-check comment <text>`.
    Comment(String),
}

/// The options of a `tcp-check connect` rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpConnect {
    /// `port`. Default is none: the server's check port, else its port.
    pub port: Option<u16>,
    /// `addr`. Default is none: the server's check address.
    pub addr: Option<std::net::IpAddr>,
    /// `default`: TLS, PROXY header and SOCKS4 as the server's own checks
    /// (`check-ssl`, `check-send-proxy`, `check-via-socks4`). Default is
    /// false: only what this rule names.
    pub default: bool,
    /// `ssl`. Default is off.
    pub ssl: bool,
    /// `sni`. Default is none (the server's check SNI).
    pub sni: Option<String>,
    /// `alpn` protocols, in order. Default is none.
    pub alpn: Option<Vec<String>>,
    /// `send-proxy`: a PROXY header (the server's `send-proxy-v2` picks
    /// version 2) describing no client (`UNKNOWN` / `LOCAL`). Default is
    /// off.
    pub send_proxy: bool,
    /// `via-socks4`: through the server's `socks4` proxy. Default is off.
    pub via_socks4: bool,
    /// `linger`: close with a FIN rather than a reset. Default is off.
    pub linger: bool,
}

/// `agent-check` settings of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCheck {
    /// `agent-port`. Required by HAProxy.
    pub port: u16,
    /// `agent-addr`. Default is the server's address.
    pub addr: Option<std::net::IpAddr>,
    /// `agent-inter`. Default is the server's `inter`.
    pub inter: Option<Duration>,
    /// `agent-send`. Default is nothing.
    pub send: Option<String>,
}

/// `observe layer4|layer7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observe {
    Layer4,
    Layer7,
}

/// `on-error`. Default is `FailCheck`, as HAProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    Fastinter,
    #[default]
    FailCheck,
    SuddenDeath,
    MarkDown,
}
