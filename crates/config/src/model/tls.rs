//! TLS settings of binds (`ssl crt ...`) and servers (`ssl verify ...`).

/// A TLS protocol version, as spelt in `ssl-min-ver` / `ssl-max-ver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// `SSLv3`: never offered by Fairlead (rustls has TLS 1.2 and 1.3 only).
    Ssl3,
    /// `TLSv1.0`: never offered by Fairlead.
    Tls10,
    /// `TLSv1.1`: never offered by Fairlead.
    Tls11,
    /// `TLSv1.2`.
    Tls12,
    /// `TLSv1.3`.
    Tls13,
}

/// `verify none|optional|required`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verify {
    /// No verification (bind: no client certificate is asked for).
    #[default]
    None,
    /// Bind only: a client certificate is asked for; one that is presented
    /// must be valid, but none is needed.
    Optional,
    /// A valid peer certificate is required.
    Required,
}

/// Protocol settings shared by both directions, after `ssl-default-*`
/// options were applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsProtocol {
    /// `ssl-min-ver` (or derived from `no-tlsv12`, `force-tlsv13`...).
    /// Default is none: TLS 1.2 (Mozilla "intermediate").
    pub min_ver: Option<TlsVersion>,
    /// `ssl-max-ver` (or derived from `no-tlsv13`, `force-tlsv12`...).
    /// Default is none: TLS 1.3.
    pub max_ver: Option<TlsVersion>,
    /// `ciphers`: OpenSSL-style TLS 1.2 cipher list (`ECDHE-RSA-AES128-GCM-SHA256:...`).
    /// Default is none: the intermediate profile's suites.
    pub ciphers: Option<String>,
    /// `ciphersuites`: TLS 1.3 suites (`TLS_AES_128_GCM_SHA256:...`).
    /// Default is none: all of rustls' TLS 1.3 suites.
    pub ciphersuites: Option<String>,
    /// `alpn`: protocols in preference order (`h2,http/1.1` gives
    /// `["h2", "http/1.1"]`). Default is none (no ALPN).
    pub alpn: Vec<String>,
    /// `no-tls-tickets`: no TLS session tickets (TLS 1.2 still resumes
    /// through the session cache). Default is tickets on.
    pub no_tickets: bool,
}

/// The TLS settings of a `bind ... ssl` line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BindTls {
    /// `crt` arguments in order: PEM files or directories, with `crt-base`
    /// applied. The first certificate loaded is the default one.
    pub crt: Vec<String>,
    /// `crt-list` files, as written: as in HAProxy, `crt-base` does not
    /// apply to the list's own path; the paths inside are resolved by the
    /// TLS loader against `crt_base`.
    pub crt_list: Vec<String>,
    /// `crt-base` from `global`, for paths inside crt-lists. Default is none.
    pub crt_base: Option<String>,
    /// `strict-sni`: refuse handshakes whose SNI matches no certificate
    /// (and those without SNI). Default is off.
    pub strict_sni: bool,
    /// `ca-file` (with `ca-base`): CAs for client certificates.
    pub ca_file: Option<String>,
    /// `verify`. Default is none: no client certificate is asked for,
    /// even with `ca-file` (as in HAProxy).
    pub verify: Verify,
    pub protocol: TlsProtocol,
}

/// Where the SNI sent to a server comes from (`sni <expr>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SniSource {
    /// `sni str(<name>)`: a fixed name.
    Fixed(String),
    /// `sni ssl_fc_sni`: the SNI the client sent to the frontend.
    ClientSni,
    /// `sni req.hdr(host)` / `hdr(host)`: the request's Host header
    /// (without a port).
    HostHeader,
}

/// The TLS settings of a `server ... ssl` line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerTls {
    /// `verify`. Default is `required` (HAProxy's `ssl-server-verify`
    /// default); `none` skips certificate checks.
    pub verify: Verify,
    /// `ca-file` (with `ca-base`). Needed when `verify` is `required`.
    pub ca_file: Option<String>,
    /// `verifyhost`: the name the certificate must match. Default is the
    /// SNI sent, if any.
    pub verifyhost: Option<String>,
    /// `sni`. Default is none: no SNI is sent.
    pub sni: Option<SniSource>,
    /// `crt` (with `crt-base`): client certificate and key (one PEM).
    pub crt: Option<String>,
    /// `no-ssl-reuse`: do not resume TLS sessions with this server.
    /// Default is reuse on.
    pub no_reuse: bool,
    pub protocol: TlsProtocol,
}
