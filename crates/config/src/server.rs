//! `server` and `default-server` lines.
//!
//! Implemented options: `weight` (0..=256), `maxconn`, `backup`,
//! `no-backup`, `disabled`, `enabled`. Health-check options (`check`,
//! `inter`, `rise`, `fall`, `fastinter`, `downinter`, `port`, `addr`,
//! `check-*`, `agent-*`) are validated and accepted with one warning per
//! line, since checks are not implemented yet. TLS options give one "TLS is
//! not implemented yet" error per line; other known options are "not
//! implemented yet" errors; anything else is an unknown keyword.

use std::net::SocketAddr;

use crate::bind::{parse_ip, split_host_port, strip_family, Family};
use crate::diag::Diags;
use crate::keywords::Support;
use crate::model::{Location, Server, ServerAddr};

/// Settings a `default-server` line passes on to the following servers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerDefaults {
    pub weight: Option<u32>,
    pub maxconn: Option<u32>,
    pub backup: bool,
    pub disabled: bool,
    pub check: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Opt {
    Impl,
    Check,
    Tls,
    NotYet,
    Ignored,
}

/// (name, number of arguments, handling)
const SERVER_OPTIONS: &[(&str, usize, Opt)] = &[
    ("weight", 1, Opt::Impl),
    ("maxconn", 1, Opt::Impl),
    ("backup", 0, Opt::Impl),
    ("no-backup", 0, Opt::Impl),
    ("disabled", 0, Opt::Impl),
    ("enabled", 0, Opt::Impl),
    ("check", 0, Opt::Check),
    ("no-check", 0, Opt::Check),
    ("inter", 1, Opt::Check),
    ("fastinter", 1, Opt::Check),
    ("downinter", 1, Opt::Check),
    ("rise", 1, Opt::Check),
    ("fall", 1, Opt::Check),
    ("port", 1, Opt::Check),
    ("addr", 1, Opt::Check),
    ("check-send-proxy", 0, Opt::Check),
    ("check-ssl", 0, Opt::Check),
    ("no-check-ssl", 0, Opt::Check),
    ("check-sni", 1, Opt::Check),
    ("check-alpn", 1, Opt::Check),
    ("check-proto", 1, Opt::Check),
    ("check-via-socks4", 0, Opt::Check),
    ("agent-check", 0, Opt::Check),
    ("no-agent-check", 0, Opt::Check),
    ("agent-inter", 1, Opt::Check),
    ("agent-addr", 1, Opt::Check),
    ("agent-port", 1, Opt::Check),
    ("agent-send", 1, Opt::Check),
    ("id", 1, Opt::Ignored),
    ("ssl", 0, Opt::Tls),
    ("no-ssl", 0, Opt::Tls),
    ("alpn", 1, Opt::Tls),
    ("npn", 1, Opt::Tls),
    ("ca-file", 1, Opt::Tls),
    ("crl-file", 1, Opt::Tls),
    ("crt", 1, Opt::Tls),
    ("ciphers", 1, Opt::Tls),
    ("ciphersuites", 1, Opt::Tls),
    ("curves", 1, Opt::Tls),
    ("sigalgs", 1, Opt::Tls),
    ("client-sigalgs", 1, Opt::Tls),
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
    ("allow-0rtt", 0, Opt::Tls),
    ("cookie", 1, Opt::NotYet),
    ("error-limit", 1, Opt::NotYet),
    ("init-addr", 1, Opt::NotYet),
    ("log-proto", 1, Opt::NotYet),
    ("maxqueue", 1, Opt::NotYet),
    ("max-reuse", 1, Opt::NotYet),
    ("minconn", 1, Opt::NotYet),
    ("namespace", 1, Opt::NotYet),
    ("no-send-proxy", 0, Opt::NotYet),
    ("no-send-proxy-v2", 0, Opt::NotYet),
    ("no-send-proxy-v2-ssl", 0, Opt::NotYet),
    ("no-send-proxy-v2-ssl-cn", 0, Opt::NotYet),
    ("no-tfo", 0, Opt::NotYet),
    ("non-stick", 0, Opt::NotYet),
    ("observe", 1, Opt::NotYet),
    ("on-error", 1, Opt::NotYet),
    ("on-marked-down", 1, Opt::NotYet),
    ("on-marked-up", 1, Opt::NotYet),
    ("pool-conn-name", 1, Opt::NotYet),
    ("pool-low-conn", 1, Opt::NotYet),
    ("pool-max-conn", 1, Opt::NotYet),
    ("pool-purge-delay", 1, Opt::NotYet),
    ("proto", 1, Opt::NotYet),
    ("redir", 1, Opt::NotYet),
    ("resolve-net", 1, Opt::NotYet),
    ("resolve-opts", 1, Opt::NotYet),
    ("resolve-prefer", 1, Opt::NotYet),
    ("resolvers", 1, Opt::NotYet),
    ("send-proxy", 0, Opt::NotYet),
    ("send-proxy-v2", 0, Opt::NotYet),
    ("send-proxy-v2-ssl", 0, Opt::NotYet),
    ("send-proxy-v2-ssl-cn", 0, Opt::NotYet),
    ("set-proxy-v2-tlv-fmt", 1, Opt::NotYet),
    ("shard", 1, Opt::NotYet),
    ("slowstart", 1, Opt::NotYet),
    ("socks4", 1, Opt::NotYet),
    ("source", 1, Opt::NotYet),
    ("stick", 0, Opt::NotYet),
    ("tcp-ut", 1, Opt::NotYet),
    ("tfo", 0, Opt::NotYet),
    ("track", 1, Opt::NotYet),
    ("ws", 1, Opt::NotYet),
];

/// The server options for [`crate::keyword_support`].
pub(crate) fn server_option_support() -> Vec<(&'static str, Support, &'static str)> {
    SERVER_OPTIONS
        .iter()
        .map(|(name, _, opt)| match opt {
            Opt::Impl => (*name, Support::Implemented, ""),
            Opt::Check => (*name, Support::Warning, CHECK_WARNING),
            Opt::Ignored => (*name, Support::Warning, "only used by statistics; ignored"),
            Opt::Tls => (*name, Support::NotYet, "TLS is not implemented yet"),
            Opt::NotYet => (*name, Support::NotYet, ""),
        })
        .collect()
}

pub(crate) const CHECK_WARNING: &str =
    "health checks are not implemented yet; the server is considered up";

/// Parses a server address: `ip:port`, `[v6]:port`, `host:port`.
pub(crate) fn parse_server_addr(s: &str) -> Result<ServerAddr, String> {
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

/// Applies options from `words` to `tmpl`. Returns false on error.
fn apply_options(
    words: &[String],
    tmpl: &mut ServerDefaults,
    label: &str,
    loc: &Location,
    diags: &mut Diags,
) -> bool {
    let mut ok = true;
    let mut tls = Vec::new();
    let mut checks = false;
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
        let res: Result<(), String> = match (kind, name) {
            (Opt::Impl, "weight") => crate::units::parse_uint::<u32>(arg, "weight").and_then(|w| {
                if w > 256 {
                    Err(format!("weight {w} is out of range (0 to 256)"))
                } else {
                    tmpl.weight = Some(w);
                    Ok(())
                }
            }),
            (Opt::Impl, "maxconn") => {
                crate::units::parse_uint::<u32>(arg, "maxconn").map(|m| tmpl.maxconn = Some(m))
            }
            (Opt::Impl, "backup") => {
                tmpl.backup = true;
                Ok(())
            }
            (Opt::Impl, "no-backup") => {
                tmpl.backup = false;
                Ok(())
            }
            (Opt::Impl, "disabled") => {
                tmpl.disabled = true;
                Ok(())
            }
            (Opt::Impl, "enabled") => {
                tmpl.disabled = false;
                Ok(())
            }
            (Opt::Check, _) => {
                checks = true;
                match name {
                    "check" => tmpl.check = true,
                    "no-check" => tmpl.check = false,
                    _ => {}
                }
                match name {
                    "inter" | "fastinter" | "downinter" | "agent-inter" => {
                        crate::units::parse_time(arg).map(drop)
                    }
                    "rise" | "fall" => crate::units::parse_uint::<u32>(arg, name).and_then(|v| {
                        if v == 0 {
                            Err(format!("'{name}' must be greater than 0"))
                        } else {
                            Ok(())
                        }
                    }),
                    "port" | "agent-port" => crate::bind::parse_port(arg, arg).map(drop),
                    _ => Ok(()),
                }
            }
            (Opt::Ignored, _) => Ok(()),
            (Opt::Tls, _) => {
                tls.push(name);
                Ok(())
            }
            _ => Err(format!(
                "option '{name}' is not implemented yet in Fairlead"
            )),
        };
        if let Err(e) = res {
            diags.alert(loc, format!("{label}: {e}"));
            ok = false;
        }
        i += 1 + nargs;
    }
    if !tls.is_empty() {
        let names: Vec<String> = tls.iter().map(|n| format!("'{n}'")).collect();
        diags.alert(
            loc,
            format!(
                "{label}: TLS is not implemented yet in Fairlead ({})",
                names.join(", ")
            ),
        );
        ok = false;
    }
    if checks {
        diags.warn(loc, format!("{label}: {CHECK_WARNING}"));
    }
    ok
}

/// Parses `server <name> <addr> [options]`.
pub(crate) fn parse_server(
    words: &[String],
    defaults: &ServerDefaults,
    loc: &Location,
    diags: &mut Diags,
) -> Option<Server> {
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
    let ok = apply_options(&words[3..], &mut tmpl, &label, loc, diags);
    let addr = addr?;
    ok.then(|| Server {
        location: loc.clone(),
        weight: tmpl.weight.unwrap_or(1),
        maxconn: tmpl.maxconn.unwrap_or(0),
        backup: tmpl.backup,
        disabled: tmpl.disabled,
        check: tmpl.check,
        ..Server::new(name, addr)
    })
}

/// Parses `default-server [options]` into `defaults`.
pub(crate) fn parse_default_server(
    words: &[String],
    defaults: &mut ServerDefaults,
    loc: &Location,
    diags: &mut Diags,
) {
    let mut tmpl = defaults.clone();
    if apply_options(&words[1..], &mut tmpl, "'default-server'", loc, diags) {
        *defaults = tmpl;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(parse_server_addr("unix@/x")
            .unwrap_err()
            .contains("not implemented"));
    }
}
