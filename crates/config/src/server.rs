//! `server` and `default-server` lines.
//!
//! Implemented options: `weight` (0..=256), `maxconn`, `backup`,
//! `no-backup`, `disabled`, `enabled`, the health-check options (`check`,
//! `no-check`, `inter`, `fastinter`, `downinter`, `rise`, `fall`, `port`,
//! `addr`), the agent options (`agent-check`, `no-agent-check`,
//! `agent-port`, `agent-addr`, `agent-inter`, `agent-send`), `observe`,
//! `error-limit`, `on-error`, `slowstart`, `minconn`, `maxqueue`, `cookie`
//! `id`, `send-proxy`, `send-proxy-v2`, `send-proxy-v2-ssl`, `send-proxy-v2-ssl-cn` and
//! `proxy-v2-options`. A `default-server` line passes every one of them on to the
//! servers that follow (except `id`, which HAProxy refuses there). The TLS
//! options (`ssl`, `no-ssl`, `verify`, `ca-file`, `sni`, ...) are gathered
//! into a [`ServerDraft`], inherited from `default-server` the same way,
//! and resolved into [`Server::tls`] once the whole configuration is read
//! (see [`crate::tls`]). Other known options are "not implemented yet"
//! errors; anything else is an unknown keyword.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::bind::{parse_ip, split_host_port, strip_family, Family};
use crate::diag::Diags;
use crate::keywords::Support;
use crate::model::{AgentCheck, CheckProto, Location, Observe, OnError, Server, ServerAddr};
use crate::tls::ServerDraft;
use crate::units::{parse_time, parse_uint};

/// Agent settings as written; resolved into [`AgentCheck`] per server.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentDraft {
    pub enabled: bool,
    pub port: Option<u16>,
    pub addr: Option<IpAddr>,
    pub inter: Option<Duration>,
    pub send: Option<String>,
}

/// Settings a `default-server` line passes on to the following servers:
/// a template server (its name and address are unused), the agent and the
/// TLS options.
#[derive(Debug, Clone)]
pub(crate) struct ServerDefaults {
    pub srv: Server,
    pub agent: AgentDraft,
    pub tls: ServerDraft,
}

impl Default for ServerDefaults {
    fn default() -> Self {
        ServerDefaults {
            srv: Server::new("", ServerAddr::Name(String::new(), 0)),
            agent: AgentDraft::default(),
            tls: ServerDraft::default(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Opt {
    Impl,
    /// An implemented TLS option (see [`crate::tls::ServerDraft`]).
    Tls,
    /// A DNS option (see [`fairlead_dns::ServerDnsOptions`]).
    Dns,
    /// Accepted with this warning.
    Warn(&'static str),
    /// Rejected as not implemented yet (with a remark, or none).
    NotYet(&'static str),
}

const NY: Opt = Opt::NotYet("");

/// (name, number of arguments, handling)
const SERVER_OPTIONS: &[(&str, usize, Opt)] = &[
    ("weight", 1, Opt::Impl),
    ("maxconn", 1, Opt::Impl),
    ("backup", 0, Opt::Impl),
    ("no-backup", 0, Opt::Impl),
    ("disabled", 0, Opt::Impl),
    ("enabled", 0, Opt::Impl),
    ("check", 0, Opt::Impl),
    ("no-check", 0, Opt::Impl),
    ("inter", 1, Opt::Impl),
    ("fastinter", 1, Opt::Impl),
    ("downinter", 1, Opt::Impl),
    ("rise", 1, Opt::Impl),
    ("fall", 1, Opt::Impl),
    ("port", 1, Opt::Impl),
    ("addr", 1, Opt::Impl),
    ("agent-check", 0, Opt::Impl),
    ("no-agent-check", 0, Opt::Impl),
    ("agent-inter", 1, Opt::Impl),
    ("agent-addr", 1, Opt::Impl),
    ("agent-port", 1, Opt::Impl),
    ("agent-send", 1, Opt::Impl),
    ("observe", 1, Opt::Impl),
    ("error-limit", 1, Opt::Impl),
    ("on-error", 1, Opt::Impl),
    ("slowstart", 1, Opt::Impl),
    ("minconn", 1, Opt::Impl),
    ("maxqueue", 1, Opt::Impl),
    ("cookie", 1, Opt::Impl),
    ("id", 1, Opt::Impl),
    ("no-check-ssl", 0, Opt::Impl),
    ("check-ssl", 0, Opt::Impl),
    ("check-sni", 1, Opt::Impl),
    ("check-alpn", 1, Opt::Impl),
    ("check-send-proxy", 0, Opt::Impl),
    ("no-check-send-proxy", 0, Opt::Impl),
    ("check-proto", 1, Opt::Impl),
    ("check-via-socks4", 0, Opt::Impl),
    ("ssl", 0, Opt::Tls),
    ("no-ssl", 0, Opt::Tls),
    ("alpn", 1, Opt::Tls),
    ("npn", 1, Opt::Warn(crate::tls::NPN)),
    ("ca-file", 1, Opt::Tls),
    ("crl-file", 1, NY),
    ("crt", 1, Opt::Tls),
    ("ciphers", 1, Opt::Tls),
    ("ciphersuites", 1, Opt::Tls),
    ("curves", 1, NY),
    ("sigalgs", 1, NY),
    ("client-sigalgs", 1, NY),
    ("sni", 1, Opt::Tls),
    ("verify", 1, Opt::Tls),
    ("verifyhost", 1, Opt::Tls),
    ("no-verifyhost", 0, Opt::Tls),
    ("force-sslv3", 0, Opt::Tls),
    ("force-tlsv10", 0, Opt::Tls),
    ("force-tlsv11", 0, Opt::Tls),
    ("force-tlsv12", 0, Opt::Tls),
    ("force-tlsv13", 0, Opt::Tls),
    ("no-sslv3", 0, Opt::Tls),
    ("no-tlsv10", 0, Opt::Tls),
    ("no-tlsv11", 0, Opt::Tls),
    ("no-tlsv12", 0, Opt::Tls),
    ("no-tlsv13", 0, Opt::Tls),
    ("no-tls-tickets", 0, Opt::Tls),
    ("tls-tickets", 0, Opt::Tls),
    ("ssl-max-ver", 1, Opt::Tls),
    ("ssl-min-ver", 1, Opt::Tls),
    ("ssl-reuse", 0, Opt::Tls),
    ("no-ssl-reuse", 0, Opt::Tls),
    ("allow-0rtt", 0, NY),
    ("init-addr", 1, Opt::Dns),
    ("log-proto", 1, NY),
    ("max-reuse", 1, Opt::Impl),
    ("namespace", 1, NY),
    ("no-send-proxy", 0, Opt::Impl),
    ("no-send-proxy-v2", 0, Opt::Impl),
    ("no-send-proxy-v2-ssl", 0, Opt::Impl),
    ("no-send-proxy-v2-ssl-cn", 0, Opt::Impl),
    ("no-tfo", 0, NY),
    ("non-stick", 0, Opt::Impl),
    ("on-marked-down", 1, NY),
    ("on-marked-up", 1, NY),
    ("pool-conn-name", 1, NY),
    ("pool-low-conn", 1, NY),
    ("pool-max-conn", 1, Opt::Impl),
    ("pool-purge-delay", 1, Opt::Impl),
    ("proto", 1, Opt::Impl),
    ("redir", 1, NY),
    ("resolve-net", 1, Opt::Dns),
    ("resolve-opts", 1, Opt::Dns),
    ("resolve-prefer", 1, Opt::Dns),
    ("resolvers", 1, Opt::Dns),
    ("send-proxy", 0, Opt::Impl),
    ("send-proxy-v2", 0, Opt::Impl),
    ("send-proxy-v2-ssl", 0, Opt::Impl),
    ("send-proxy-v2-ssl-cn", 0, Opt::Impl),
    ("proxy-v2-options", 1, Opt::Impl),
    ("set-proxy-v2-tlv-fmt", 1, NY),
    ("shard", 1, NY),
    ("socks4", 1, Opt::Impl),
    ("source", 1, NY),
    ("stick", 0, NY),
    ("tcp-ut", 1, NY),
    ("tfo", 0, NY),
    ("track", 1, NY),
    ("ws", 1, NY),
];

/// The server options for [`crate::keyword_support`].
pub(crate) fn server_option_support() -> Vec<(&'static str, Support, &'static str)> {
    SERVER_OPTIONS
        .iter()
        .map(|(name, _, opt)| match (opt, *name) {
            (Opt::Impl | Opt::Tls | Opt::Dns, _) => (*name, Support::Implemented, ""),
            (Opt::Warn(note), _) => (*name, Support::Warning, *note),
            (Opt::NotYet(note), _) => (*name, Support::NotYet, *note),
        })
        .collect()
}

/// Parses a server address: `ip:port`, `[v6]:port`, `host:port`,
/// `unix@<path>`, `<path>`, `abns@<name>`.
pub(crate) fn parse_server_addr(s: &str) -> Result<ServerAddr, String> {
    match crate::bind::parse_special(s) {
        Some(Ok(crate::bind::Special::Unix(u))) => return Ok(ServerAddr::Unix(u)),
        Some(Ok(crate::bind::Special::Fd(_))) => {
            return Err(format!("a file descriptor is not acceptable here in '{s}'"))
        }
        Some(Ok(crate::bind::Special::SockPair(n))) => return Ok(ServerAddr::SockPair(n)),
        Some(Err(e)) => return Err(e),
        None => {}
    }
    let (fam, rest) = strip_family(s)?;
    let (host, port) = split_host_port(rest)?;
    let Some(port) = port else {
        return Err(format!(
            "server address '{s}' has no port; servers without a port (following the client's destination port) are not implemented yet in Fairlead"
        ));
    };
    if port.starts_with('+') || port.starts_with('-') {
        return Err(format!(
            "port offsets ('{s}') are not implemented yet in Fairlead"
        ));
    }
    let port = crate::bind::parse_port(port, s)?;
    if host.is_empty() || host == "*" {
        return Err(format!("missing host in server address '{s}'"));
    }
    if let Ok(ip) = parse_ip(host, fam, s) {
        return Ok(ServerAddr::Ip(SocketAddr::new(ip, port)));
    }
    if fam == Family::Any
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    {
        return Ok(ServerAddr::Name(host.to_string(), port));
    }
    Err(format!("invalid address '{host}' in '{s}'"))
}

/// A positive check interval (`inter`, `fastinter`, `downinter`,
/// `agent-inter`).
fn interval(arg: &str, name: &str, label: &str) -> Result<Duration, String> {
    let d = parse_time(arg).map_err(|e| format!("'{name}': {e}"))?;
    if d.is_zero() {
        return Err(format!("invalid value 0 for argument '{name}' of {label}"));
    }
    Ok(d)
}

/// A count where -1 means unlimited (`max-reuse`, `pool-max-conn`):
/// `None` for -1.
fn unlimited_or(arg: &str, name: &str) -> Result<Option<u32>, String> {
    if arg == "-1" {
        return Ok(None);
    }
    parse_uint(arg, name)
        .map(Some)
        .map_err(|_| format!("'{name}' expects -1 or a positive integer (got '{arg}')"))
}

/// A positive integer (`rise`, `fall`, `error-limit`, `id`).
fn positive(arg: &str, name: &str) -> Result<u32, String> {
    let v: u32 = parse_uint(arg, name)?;
    if v == 0 {
        return Err(format!("'{name}' has to be > 0"));
    }
    Ok(v)
}

/// A check or agent address: an IP address with an optional port (host
/// names are not implemented yet).
fn check_ip(arg: &str, name: &str) -> Result<(IpAddr, Option<u16>), String> {
    let bad = || {
        format!(
            "'{name}' expects an IPv4 or IPv6 address (got '{arg}'); host names are not implemented yet in Fairlead"
        )
    };
    let (fam, rest) = strip_family(arg)?;
    if let Ok(ip) = parse_ip(rest, fam, arg) {
        if !rest.is_empty() && rest != "*" {
            return Ok((ip, None));
        }
    }
    let (host, port) = split_host_port(rest).map_err(|_| bad())?;
    if host.is_empty() || host == "*" {
        return Err(bad());
    }
    let ip = parse_ip(host, fam, arg).map_err(|_| bad())?;
    let port = match port {
        Some(p) => Some(crate::bind::parse_port(p, arg)?),
        None => None,
    };
    Ok((ip, port))
}

/// `check-alpn`: a comma-separated list, as `alpn`.
fn alpn_list(arg: &str) -> Result<Vec<String>, String> {
    crate::tls::parse_alpn(arg).map_err(|e| e.replacen("'alpn'", "'check-alpn'", 1))
}

/// `socks4 <ip>:<port>`: the proxy's address, with its port.
fn socks4_addr(arg: &str) -> Result<SocketAddr, String> {
    match check_ip(arg, "socks4") {
        Ok((ip, Some(port))) if port > 0 => Ok(SocketAddr::new(ip, port)),
        Ok(_) => Err(format!("'socks4' : missing port number in '{arg}'")),
        Err(e) => Err(e),
    }
}

/// Applies one implemented option. `default_server` refuses `id`.
fn apply_one(
    name: &str,
    arg: &str,
    tmpl: &mut ServerDefaults,
    label: &str,
    default_server: bool,
) -> Result<(), String> {
    let s = &mut tmpl.srv;
    let agent = &mut tmpl.agent;
    match name {
        "weight" => {
            let w: u32 = parse_uint(arg, "weight")?;
            if w > 256 {
                return Err(format!("weight {w} is out of range (0 to 256)"));
            }
            s.weight = w;
        }
        "maxconn" => s.maxconn = parse_uint(arg, "maxconn")?,
        "backup" => s.backup = true,
        "no-backup" => s.backup = false,
        "disabled" => s.disabled = true,
        "enabled" => s.disabled = false,
        "check" => s.check = true,
        "no-check" => s.check = false,
        "no-check-ssl" => s.check_ssl = Some(false),
        "check-ssl" => s.check_ssl = Some(true),
        "check-sni" => s.check_sni = Some(arg.to_string()),
        "check-alpn" => s.check_alpn = Some(alpn_list(arg)?),
        "check-send-proxy" => s.check_send_proxy = true,
        "no-check-send-proxy" => s.check_send_proxy = false,
        "check-via-socks4" => s.check_via_socks4 = true,
        "check-proto" => {
            s.check_proto = Some(
                CheckProto::parse(arg).map_err(|e| match e.strip_prefix("unknown") {
                    Some(_) => format!("'check-proto' : {e}"),
                    None => format!("'check-proto {arg}': {e}"),
                })?,
            )
        }
        "socks4" => s.socks4 = Some(socks4_addr(arg)?),
        "send-proxy" => s.send_proxy = 1,
        "send-proxy-v2" => s.send_proxy = 2,
        "no-send-proxy" | "no-send-proxy-v2" => s.send_proxy = 0,
        "send-proxy-v2-ssl" => {
            s.send_proxy = 2;
            s.proxy_v2.ssl = true;
        }
        "send-proxy-v2-ssl-cn" => {
            s.send_proxy = 2;
            s.proxy_v2.ssl = true;
            s.proxy_v2.cert_cn = true;
        }
        "no-send-proxy-v2-ssl" | "no-send-proxy-v2-ssl-cn" => {
            s.send_proxy = 0;
            s.proxy_v2 = Default::default();
        }
        "proxy-v2-options" => s.proxy_v2.parse_into(arg)?,
        "non-stick" => s.non_stick = true,
        "proto" => {
            s.proto_h2 = match arg {
                "h2" => true,
                "h1" => false,
                _ => return Err(format!("unknown protocol '{arg}' (h1 and h2 are supported)")),
            }
        }
        "inter" => s.inter = interval(arg, name, label)?,
        "fastinter" => s.fastinter = Some(interval(arg, name, label)?),
        "downinter" => s.downinter = Some(interval(arg, name, label)?),
        "rise" => s.rise = positive(arg, name)?,
        "fall" => s.fall = positive(arg, name)?,
        "port" => s.check_port = Some(crate::bind::parse_port(arg, arg).map_err(|_| {
            format!("'port' expects a port number from 1 to 65535 (got '{arg}')")
        })?),
        "addr" => {
            // A port given with the address is the check port unless
            // `port` sets one.
            let (ip, port) = check_ip(arg, name)?;
            s.check_addr = Some(ip);
            if s.check_port.is_none() {
                s.check_port = port;
            }
        }
        "agent-check" => agent.enabled = true,
        "no-agent-check" => *agent = AgentDraft::default(),
        "agent-inter" => agent.inter = Some(interval(arg, name, label)?),
        "agent-addr" => agent.addr = Some(check_ip(arg, name)?.0),
        "agent-port" => agent.port = Some(crate::bind::parse_port(arg, arg).map_err(|_| {
            format!("'agent-port' expects a port number from 1 to 65535 (got '{arg}')")
        })?),
        "agent-send" => agent.send = Some(arg.to_string()),
        "observe" => {
            s.observe = match arg {
                "none" => None,
                "layer4" => Some(Observe::Layer4),
                "layer7" => Some(Observe::Layer7),
                _ => {
                    return Err(format!(
                        "'observe' expects one of 'none', 'layer4', 'layer7' but got '{arg}'"
                    ))
                }
            }
        }
        "error-limit" => s.error_limit = positive(arg, name)?,
        "on-error" => {
            s.on_error = match arg {
                "fastinter" => OnError::Fastinter,
                "fail-check" => OnError::FailCheck,
                "sudden-death" => OnError::SuddenDeath,
                "mark-down" => OnError::MarkDown,
                _ => return Err(format!(
                    "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got '{arg}'"
                )),
            }
        }
        "slowstart" => {
            let d = parse_time(arg).map_err(|e| format!("'slowstart': {e}"))?;
            s.slowstart = (!d.is_zero()).then_some(d);
        }
        "minconn" => s.minconn = parse_uint(arg, name)?,
        "max-reuse" => s.pool.max_reuse = unlimited_or(arg, name)?,
        "pool-max-conn" => s.pool.max_idle = unlimited_or(arg, name)?,
        "pool-purge-delay" => {
            s.pool.purge_delay = parse_time(arg).map_err(|e| format!("'{name}': {e}"))?;
        }
        "maxqueue" => s.maxqueue = parse_uint(arg, name)?,
        "cookie" => {
            if arg.is_empty() {
                return Err("'cookie' expects <value> as argument".into());
            }
            s.cookie = Some(arg.to_string());
        }
        "id" => {
            if default_server {
                return Err("'id' option is not accepted in default-server sections".into());
            }
            s.id = Some(positive(arg, name).map_err(|e| {
                if e.contains("> 0") {
                    "'id': custom id has to be > 0".to_string()
                } else {
                    e
                }
            })?);
        }
        _ => return Err(format!("option '{name}' is not implemented yet in Fairlead")),
    }
    Ok(())
}

/// Applies options from `words` to `tmpl`. Returns false on error.
fn apply_options(
    words: &[String],
    tmpl: &mut ServerDefaults,
    label: &str,
    default_server: bool,
    loc: &Location,
    diags: &mut Diags,
) -> bool {
    let mut ok = true;
    // TLS options of this line other than `ssl` / `no-ssl`, and whether
    // `no-ssl` was given, for the "ignored without 'ssl'" warning.
    let mut tls_opts = Vec::new();
    let mut no_ssl = false;
    let mut i = 0;
    while i < words.len() {
        let name = words[i].as_str();
        let Some(&(_, nargs, kind)) = SERVER_OPTIONS.iter().find(|(n, _, _)| *n == name) else {
            let hint = crate::keywords::suggest(name, SERVER_OPTIONS.iter().map(|(n, _, _)| *n))
                .map(|s| format!("; did you mean '{s}'?"))
                .unwrap_or_default();
            diags.alert(loc, format!("{label}: unknown keyword '{name}'{hint}"));
            ok = false;
            i += 1;
            continue;
        };
        if nargs > 0 && i + nargs >= words.len() {
            diags.alert(loc, format!("{label}: '{name}' expects an argument"));
            return false;
        }
        let arg = words.get(i + 1).map(String::as_str).unwrap_or("");
        let res = match kind {
            Opt::Impl => apply_one(name, arg, tmpl, label, default_server),
            Opt::Tls => {
                match name {
                    "ssl" => {}
                    "no-ssl" => no_ssl = true,
                    _ if !tls_opts.contains(&name) => tls_opts.push(name),
                    _ => {}
                }
                tmpl.tls.apply(name, arg)
            }
            Opt::Dns => tmpl.srv.dns.parse_keyword(name, Some(arg)).map(|_| ()),
            Opt::Warn(note) => {
                diags.warn(loc, format!("{label}: '{name}' {note}"));
                Ok(())
            }
            Opt::NotYet("") => Err(format!(
                "option '{name}' is not implemented yet in Fairlead"
            )),
            Opt::NotYet(note) => Err(format!("'{name}': {note} in Fairlead")),
        };
        if let Err(e) = res {
            diags.alert(loc, format!("{label}: {e}"));
            ok = false;
        }
        i += 1 + nargs;
    }
    if !default_server && !tmpl.tls.ssl && !no_ssl && !tls_opts.is_empty() {
        let names: Vec<String> = tls_opts.iter().map(|n| format!("'{n}'")).collect();
        diags.warn(
            loc,
            format!(
                "{label}: TLS options are ignored without 'ssl': {}",
                names.join(", ")
            ),
        );
    }
    ok
}

/// Parses `server <name> <addr> [options]`.
pub(crate) fn parse_server(
    words: &[String],
    defaults: &ServerDefaults,
    loc: &Location,
    diags: &mut Diags,
) -> Option<(Server, ServerDraft)> {
    if words.len() < 3 {
        diags.alert(
            loc,
            "'server' expects <name> and <addr>[:<port>] as arguments.",
        );
        return None;
    }
    let name = &words[1];
    let label = format!("'server {name}'");
    let addr = match parse_server_addr(&words[2]) {
        Ok(a) => Some(a),
        Err(e) => {
            diags.alert(loc, format!("{label}: {e}"));
            None
        }
    };
    let mut tmpl = defaults.clone();
    let mut ok = apply_options(&words[3..], &mut tmpl, &label, false, loc, diags);
    let agent = if tmpl.agent.enabled {
        // As in HAProxy, `port` and `addr` also apply to the agent unless
        // `agent-port` / `agent-addr` say otherwise.
        match tmpl.agent.port.or(tmpl.srv.check_port) {
            Some(port) => Some(AgentCheck {
                port,
                addr: tmpl.agent.addr.or(tmpl.srv.check_addr),
                inter: tmpl.agent.inter,
                send: tmpl.agent.send.clone(),
            }),
            None => {
                diags.alert(
                    loc,
                    format!("{label}: server {name} does not have agent port ('agent-check' needs 'agent-port' or 'port')."),
                );
                ok = false;
                None
            }
        }
    } else {
        None
    };
    let addr = addr?;
    let not_ip = match &addr {
        ServerAddr::Unix(u) => Some(format!("a UNIX socket server ('{u}')")),
        ServerAddr::SockPair(n) => Some(format!("a socket pair server ('sockpair@{n}')")),
        _ => None,
    };
    if let Some(what_server) = not_ip {
        for (on, what) in [(tmpl.srv.check, "check"), (agent.is_some(), "agent-check")] {
            if on {
                diags.alert(
                    loc,
                    format!(
                        "{label}: '{what}' on {what_server} is not implemented yet in Fairlead"
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then(|| {
        (
            Server {
                name: name.clone(),
                location: loc.clone(),
                addr,
                agent,
                ..tmpl.srv
            },
            tmpl.tls,
        )
    })
}

/// The options HAProxy 2.6 accepts on `add server` (management guide,
/// "add server"); any other known option is refused for a dynamic server.
const DYNAMIC_OPTIONS: &[&str] = &[
    "agent-addr",
    "agent-check",
    "agent-inter",
    "agent-port",
    "agent-send",
    "allow-0rtt",
    "alpn",
    "addr",
    "backup",
    "ca-file",
    "check",
    "check-alpn",
    "check-proto",
    "check-send-proxy",
    "check-sni",
    "check-ssl",
    "check-via-socks4",
    "ciphers",
    "ciphersuites",
    "crl-file",
    "crt",
    "disabled",
    "downinter",
    "enabled",
    "error-limit",
    "fall",
    "fastinter",
    "force-sslv3",
    "force-tlsv10",
    "force-tlsv11",
    "force-tlsv12",
    "force-tlsv13",
    "id",
    "inter",
    "maxconn",
    "maxqueue",
    "minconn",
    "no-ssl-reuse",
    "no-sslv3",
    "no-tlsv10",
    "no-tlsv11",
    "no-tlsv12",
    "no-tlsv13",
    "no-tls-tickets",
    "npn",
    "observe",
    "on-error",
    "on-marked-down",
    "on-marked-up",
    "pool-low-conn",
    "pool-max-conn",
    "pool-purge-delay",
    "port",
    "proto",
    "proxy-v2-options",
    "rise",
    "send-proxy",
    "send-proxy-v2",
    "send-proxy-v2-ssl",
    "send-proxy-v2-ssl-cn",
    "slowstart",
    "sni",
    "source",
    "ssl",
    "ssl-max-ver",
    "ssl-min-ver",
    "tfo",
    "tls-tickets",
    "track",
    "usesrc",
    "verify",
    "verifyhost",
    "weight",
    "ws",
];

/// Parses the arguments of the runtime API's `add server <be>/<name>
/// <addr>[:<port>] [options]` into a [`Server`], as HAProxy does for a
/// dynamic server: no `default-server` settings apply, only the options
/// of HAProxy's list are accepted (others give its "'X' option is not
/// accepted for dynamic server"). The address is an IP address, a UNIX
/// socket, or a host name that is kept as the server's FQDN and never
/// resolved (HAProxy 2.6 leaves such a server without an address:
/// dynamic servers support no `resolvers`). The TLS options
/// (`ssl`, `verify`, `ca-file`, `sni`, `alpn`, `crt`, ...) take the
/// global defaults of `defaults` ([`crate::Config::dynamic_server_defaults`])
/// as on a configuration line. Returns the error text to print.
pub fn parse_dynamic_server(
    name: &str,
    words: &[String],
    defaults: &crate::DynamicServerDefaults,
) -> Result<Server, String> {
    let Some(addr) = words.first() else {
        return Err("'server' expects <name> and <addr>[:<port>] as arguments.".into());
    };
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let Some(&(opt, nargs, _)) = SERVER_OPTIONS.iter().find(|o| o.0 == w.as_str()) else {
            break; // reported by the parser below
        };
        if !DYNAMIC_OPTIONS.contains(&opt) {
            return Err(format!("'{opt}' option is not accepted for dynamic server"));
        }
        i += 1 + nargs;
    }
    let mut line = vec!["server".to_string(), name.to_string(), addr.clone()];
    line.extend(words.iter().skip(1).cloned());
    let loc = Location::default();
    let mut diags = Diags::default();
    let parsed = parse_server(&line, &ServerDefaults::default(), &loc, &mut diags);
    let first_alert = diags
        .list
        .iter()
        .find(|d| d.level == crate::model::Level::Alert)
        .map(|d| {
            let label = format!("'server {name}': ");
            d.message
                .strip_prefix(&label)
                .unwrap_or(&d.message)
                .to_string()
        });
    match (parsed, first_alert) {
        (Some(_), Some(e)) | (None, Some(e)) => Err(e),
        (None, None) => Err("invalid server".into()),
        (Some((mut s, draft)), None) => {
            if let ServerAddr::SockPair(n) = s.addr {
                return Err(format!(
                    "'sockpair@{n}': servers added at run time cannot use an inherited descriptor"
                ));
            }
            let mut out = Vec::new();
            s.tls = draft.resolve(&defaults.global, &defaults.tls, &mut out);
            match out.into_iter().find(|(alert, _)| *alert) {
                Some((_, e)) => Err(e),
                None => Ok(s),
            }
        }
    }
}

/// Parses `default-server [options]` into `defaults`.
pub(crate) fn parse_default_server(
    words: &[String],
    defaults: &mut ServerDefaults,
    loc: &Location,
    diags: &mut Diags,
) {
    let mut tmpl = defaults.clone();
    if apply_options(&words[1..], &mut tmpl, "'default-server'", true, loc, diags) {
        *defaults = tmpl;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UnixAddr;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn dynamic_servers_as_haproxy() {
        let d = crate::DynamicServerDefaults::default();
        let s = parse_dynamic_server(
            "c",
            &words("127.0.0.1:8003 weight 7 check maxconn 5 id 9"),
            &d,
        )
        .unwrap();
        assert_eq!(s.name, "c");
        assert_eq!(
            s.addr,
            ServerAddr::Ip(SocketAddr::from(([127, 0, 0, 1], 8003)))
        );
        assert_eq!((s.weight, s.check, s.maxconn, s.id), (7, true, 5, Some(9)));
        let e = |w: &str| parse_dynamic_server("d", &words(w), &d).unwrap_err();
        assert_eq!(
            e("127.0.0.1:1 cookie x"),
            "'cookie' option is not accepted for dynamic server"
        );
        assert_eq!(
            e("127.0.0.1:1 init-addr last"),
            "'init-addr' option is not accepted for dynamic server"
        );
        assert!(
            e("127.0.0.1:1 foo").contains("unknown keyword 'foo'"),
            "{}",
            e("127.0.0.1:1 foo")
        );
        assert!(e("127.0.0.1:1 weight 300").contains("300"));
        // TLS takes the global defaults: `verify required` needs a CA.
        assert!(e("127.0.0.1:1 ssl").contains("no CA file specified"));
        let s = parse_dynamic_server(
            "t",
            &words("127.0.0.1:443 ssl verify none sni str(app.example) alpn h2,http/1.1"),
            &d,
        )
        .unwrap();
        let tls = s.tls.expect("tls");
        assert_eq!(tls.verify, crate::Verify::None);
        assert_eq!(tls.protocol.alpn, ["h2", "http/1.1"]);
        assert!(tls.sni.is_some());
        // A host name is kept, never resolved (HAProxy 2.6).
        let named = parse_dynamic_server("n", &words("app.example:80 check"), &d).unwrap();
        assert_eq!(named.addr, ServerAddr::Name("app.example".into(), 80));
        assert!(named.check);
        assert_eq!(
            parse_dynamic_server("d", &[], &d).unwrap_err(),
            "'server' expects <name> and <addr>[:<port>] as arguments."
        );
        // As on configuration lines, a server needs a port in Fairlead.
        assert!(e("127.0.0.1").contains("has no port"));
        let s = parse_dynamic_server("u", &words("unix@/run/app.sock"), &d).unwrap();
        assert!(matches!(s.addr, ServerAddr::Unix(_)));
    }

    #[test]
    fn addresses() {
        assert_eq!(
            parse_server_addr("10.0.0.1:80"),
            Ok(ServerAddr::Ip("10.0.0.1:80".parse().unwrap()))
        );
        assert_eq!(
            parse_server_addr("[::1]:80"),
            Ok(ServerAddr::Ip("[::1]:80".parse().unwrap()))
        );
        assert_eq!(
            parse_server_addr("ipv6@::1:80"),
            Ok(ServerAddr::Ip("[::1]:80".parse().unwrap()))
        );
        assert_eq!(
            parse_server_addr("web-1.example.com:8080"),
            Ok(ServerAddr::Name("web-1.example.com".into(), 8080))
        );
        assert_eq!(
            parse_server_addr("unix@/run/app.sock"),
            Ok(ServerAddr::Unix(UnixAddr::Path("/run/app.sock".into())))
        );
        assert_eq!(
            parse_server_addr("/run/app.sock"),
            Ok(ServerAddr::Unix(UnixAddr::Path("/run/app.sock".into())))
        );
        assert_eq!(
            parse_server_addr("abns@app"),
            Ok(ServerAddr::Unix(UnixAddr::Abstract("app".into())))
        );
        assert_eq!(
            parse_server_addr("fd@3").unwrap_err(),
            "a file descriptor is not acceptable here in 'fd@3'"
        );
        assert_eq!(parse_server_addr("sockpair@4"), Ok(ServerAddr::SockPair(4)));
        assert_eq!(
            parse_dynamic_server("p", &words("sockpair@4"), &Default::default()).unwrap_err(),
            "'sockpair@4': servers added at run time cannot use an inherited descriptor"
        );
        let long = format!("unix@/tmp/{}", "a".repeat(93));
        assert_eq!(
            parse_server_addr(&long).unwrap_err(),
            format!("socket path '{long}' too long (max 97)")
        );
        assert!(parse_server_addr("web")
            .unwrap_err()
            .contains("has no port"));
        assert!(parse_server_addr("web:+1")
            .unwrap_err()
            .contains("port offsets"));
        assert!(parse_server_addr("web:0")
            .unwrap_err()
            .contains("invalid port"));
        assert!(parse_server_addr(":80")
            .unwrap_err()
            .contains("missing host"));
        assert!(parse_server_addr("we/b:80")
            .unwrap_err()
            .contains("invalid address"));
        assert!(parse_server_addr("udp@1.2.3.4:80")
            .unwrap_err()
            .contains("not implemented"));
    }
}
