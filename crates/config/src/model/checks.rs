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
        }
    }
}

/// One `expect` of `http-check` or `tcp-check`, with `!` negation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub negate: bool,
    pub kind: ExpectKind,
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
}

/// One `tcp-check` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpCheckRule {
    /// `tcp-check connect [port N]`.
    Connect { port: Option<u16> },
    /// `tcp-check send <string>` / `send-binary <hex>` (bytes to send;
    /// `\r\n` escapes already resolved by the lexer).
    Send(Vec<u8>),
    /// `tcp-check expect ...`.
    Expect(Expect),
    /// `tcp-check comment <text>`.
    Comment(String),
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
