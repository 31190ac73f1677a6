//! The `resolvers NAME` section: its model, its defaults and a parser for
//! each of its lines (HAProxy 2.6 `configuration.txt` section 5.3.2).
//!
//! Lines arrive already split into words, keyword first. Each parser returns
//! a message that names the offending word; the caller adds the file and the
//! line number.

use crate::time::parse_time;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default for [`ResolversSection::accepted_payload_size`]: 512 bytes
/// (the minimum EDNS0 size, RFC 6891).
pub const DEFAULT_ACCEPTED_PAYLOAD_SIZE: u16 = 512;
/// The smallest `accepted_payload_size` HAProxy accepts (a DNS header).
pub const MIN_ACCEPTED_PAYLOAD_SIZE: u16 = 12;
/// The largest `accepted_payload_size`: 65535 bytes.
pub const MAX_ACCEPTED_PAYLOAD_SIZE: u16 = 65535;
/// Where `parse-resolv-conf` reads its nameservers by default.
pub const DEFAULT_RESOLV_CONF: &str = "/etc/resolv.conf";

/// How queries reach a nameserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP first; a truncated answer is asked again over TCP to the same
    /// address and port. The form of an address without a prefix, or with
    /// `ipv4@`/`ipv6@`, and of `parse-resolv-conf` nameservers.
    Datagram,
    /// UDP only (`udp@`, `udp4@`, `udp6@`): a truncated answer is an error.
    DatagramOnly,
    /// TCP only (`tcp@`, `tcp4@`, `tcp6@`): one connection per query.
    Stream,
}

/// One `nameserver` line (or one nameserver found by `parse-resolv-conf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nameserver {
    /// Its name, unique in the section. `parse-resolv-conf` names a
    /// nameserver after its address as written in resolv.conf.
    pub name: String,
    /// Where queries are sent.
    pub addr: SocketAddr,
    /// UDP, UDP only, or TCP.
    pub transport: Transport,
}

/// The `hold` periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldPeriods {
    /// `hold nx`: how long the last valid answer stays in use after NXDOMAIN
    /// answers. Default is 30s.
    pub nx: Duration,
    /// `hold other`: the same after other errors. Default is 30s.
    pub other: Duration,
    /// `hold refused`: the same after REFUSED answers. Default is 30s.
    pub refused: Duration,
    /// `hold timeout`: the same when no nameserver answers. Default is 30s.
    pub timeout: Duration,
    /// `hold valid`: how long a `do-resolve` answer is reused before the
    /// name is asked again. It does not change how often servers are
    /// resolved (that is `timeout resolve`). Default is 10s.
    pub valid: Duration,
    /// `hold obsolete`: how long a record that vanished from the answers is
    /// still used. Default is 0s (dropped at once).
    pub obsolete: Duration,
}

impl Default for HoldPeriods {
    fn default() -> Self {
        HoldPeriods {
            nx: Duration::from_secs(30),
            other: Duration::from_secs(30),
            refused: Duration::from_secs(30),
            timeout: Duration::from_secs(30),
            valid: Duration::from_secs(10),
            obsolete: Duration::ZERO,
        }
    }
}

/// A `resolvers NAME` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolversSection {
    /// The section's name, used by the servers' `resolvers NAME`.
    pub name: String,
    /// The nameservers, in configuration order. All are asked at once.
    pub nameservers: Vec<Nameserver>,
    /// `accepted_payload_size N`: the EDNS0 UDP size announced, and the
    /// largest UDP answer read (a larger one counts as `too_big`). HAProxy
    /// accepts 12 to 65535; an announcement under 512 is sent as 512.
    /// Default is 512.
    pub accepted_payload_size: u16,
    /// `resolve_retries N`: how many queries of the preferred type are sent
    /// for one resolution before giving up. Default is 3.
    pub resolve_retries: u32,
    /// `timeout resolve T`: how often each server name is resolved again.
    /// Default is 1s.
    pub timeout_resolve: Duration,
    /// `timeout retry T`: how long to wait for an answer before sending the
    /// query again. Default is 1s.
    pub timeout_retry: Duration,
    /// The `hold` periods; see [`HoldPeriods`] for each default.
    pub hold: HoldPeriods,
    /// The file `parse-resolv-conf` reads. Default is `/etc/resolv.conf`;
    /// tests point it elsewhere.
    pub resolv_conf_path: PathBuf,
}

impl ResolversSection {
    /// A section with HAProxy's defaults and no nameserver.
    pub fn new(name: &str) -> Self {
        ResolversSection {
            name: name.to_string(),
            nameservers: Vec::new(),
            accepted_payload_size: DEFAULT_ACCEPTED_PAYLOAD_SIZE,
            resolve_retries: 3,
            timeout_resolve: Duration::from_secs(1),
            timeout_retry: Duration::from_secs(1),
            hold: HoldPeriods::default(),
            resolv_conf_path: PathBuf::from(DEFAULT_RESOLV_CONF),
        }
    }

    /// Parses the section header `resolvers NAME`.
    pub fn parse_header(words: &[&str]) -> Result<Self, String> {
        match words {
            ["resolvers", name] if !name.is_empty() => Ok(Self::new(name)),
            ["resolvers"] => Err("'resolvers' expects <name> as argument".to_string()),
            ["resolvers", _, extra, ..] => {
                Err(format!("'resolvers' expects only a name, got '{extra}'"))
            }
            _ => Err("expected 'resolvers <name>'".to_string()),
        }
    }

    /// HAProxy's implicit section named `default`: the nameservers of
    /// `resolv_conf` and the defaults. Warnings are returned with it.
    pub fn default_section(resolv_conf: &Path) -> Result<(Self, Vec<String>), String> {
        let mut section = Self::new("default");
        section.resolv_conf_path = resolv_conf.to_path_buf();
        let warnings = section.parse_line(&["parse-resolv-conf"])?;
        Ok((section, warnings))
    }

    /// Parses one line of the section (keyword first) into `self`. Returns
    /// warnings (from `parse-resolv-conf`), or an error naming the word.
    pub fn parse_line(&mut self, words: &[&str]) -> Result<Vec<String>, String> {
        let Some((&keyword, args)) = words.split_first() else {
            return Ok(Vec::new());
        };
        match keyword {
            "nameserver" => self.parse_nameserver(args).map(|()| Vec::new()),
            "parse-resolv-conf" => {
                no_extra(keyword, args, 0)?;
                self.parse_resolv_conf()
            }
            "accepted_payload_size" => {
                no_extra(keyword, args, 1)?;
                self.accepted_payload_size = parse_payload_size(arg(keyword, args, 0, "<nb>")?)?;
                Ok(Vec::new())
            }
            "resolve_retries" => {
                no_extra(keyword, args, 1)?;
                let value = arg(keyword, args, 0, "<nb>")?;
                self.resolve_retries = value
                    .parse()
                    .map_err(|_| format!("'resolve_retries' expects a number, got '{value}'"))?;
                Ok(Vec::new())
            }
            "timeout" => self.parse_timeout(args).map(|()| Vec::new()),
            "hold" => self.parse_hold(args).map(|()| Vec::new()),
            "resolution_pool_size" => Err(
                "'resolution_pool_size' directive is not supported anymore (it never appeared in a stable release)"
                    .to_string(),
            ),
            other => Err(format!("unknown keyword '{other}' in 'resolvers' section")),
        }
    }

    fn parse_nameserver(&mut self, args: &[&str]) -> Result<(), String> {
        let name = arg("nameserver", args, 0, "<name> and <address>")?;
        let addr = arg("nameserver", args, 1, "<address>")?;
        no_extra("nameserver", args, 2)?;
        if self.nameservers.iter().any(|ns| ns.name == name) {
            return Err(format!(
                "nameserver '{name}' is already defined in resolvers '{}'",
                self.name
            ));
        }
        let (transport, addr) = parse_nameserver_addr(addr)?;
        self.nameservers.push(Nameserver {
            name: name.to_string(),
            addr,
            transport,
        });
        Ok(())
    }

    fn parse_timeout(&mut self, args: &[&str]) -> Result<(), String> {
        let event = arg("timeout", args, 0, "'retry' or 'resolve' and <time>")?;
        let target = match event {
            "retry" => &mut self.timeout_retry,
            "resolve" => &mut self.timeout_resolve,
            other => {
                return Err(format!(
                    "'timeout' expects 'retry' or 'resolve' and <time> as arguments, got '{other}'"
                ))
            }
        };
        let value = args
            .get(1)
            .ok_or_else(|| format!("'timeout {event}' expects <time> as argument"))?;
        no_extra("timeout", args, 2)?;
        *target = parse_time(value).map_err(|e| format!("'timeout {event}': {e}"))?;
        Ok(())
    }

    fn parse_hold(&mut self, args: &[&str]) -> Result<(), String> {
        let (Some(status), Some(value)) = (args.first(), args.get(1)) else {
            return Err(
                "'hold' expects an <event> and a <time> as arguments (nx, other, refused, timeout, valid or obsolete)"
                    .to_string(),
            );
        };
        no_extra("hold", args, 2)?;
        let period = parse_time(value).map_err(|e| format!("'hold {status}': {e}"))?;
        let slot = match *status {
            "nx" => &mut self.hold.nx,
            "other" => &mut self.hold.other,
            "refused" => &mut self.hold.refused,
            "timeout" => &mut self.hold.timeout,
            "valid" => &mut self.hold.valid,
            "obsolete" => &mut self.hold.obsolete,
            other => {
                return Err(format!(
                    "'hold' unknown <event>: '{other}', expects either 'nx', 'refused', 'timeout', 'valid', 'obsolete' or 'other'"
                ))
            }
        };
        *slot = period;
        Ok(())
    }

    /// `parse-resolv-conf`: appends every `nameserver` of
    /// [`Self::resolv_conf_path`] (port 53, named after its address). A
    /// duplicate or unreadable entry is skipped with a warning; a missing
    /// file is an error.
    fn parse_resolv_conf(&mut self) -> Result<Vec<String>, String> {
        let path = self.resolv_conf_path.display().to_string();
        let text = std::fs::read_to_string(&self.resolv_conf_path)
            .map_err(|e| format!("failed to open {path}: {e}"))?;
        let mut warnings = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let lineno = index + 1;
            let mut words = line.split_whitespace();
            if words.next() != Some("nameserver") {
                continue;
            }
            let Some(address) = words.next() else {
                warnings.push(format!(
                    "parsing [{path}:{lineno}] : nameserver line is missing address."
                ));
                continue;
            };
            if self.nameservers.iter().any(|ns| ns.name == address) {
                warnings.push(format!(
                    "parsing [{path}:{lineno}] : generated name for {path} nameserver '{address}' conflicts with another nameserver, it appears to be a duplicate and will be excluded."
                ));
                continue;
            }
            let Ok(ip) = address.parse::<IpAddr>() else {
                warnings.push(format!(
                    "parsing [{path}:{lineno}] : address '{address}' could not be recognized, nameserver will be excluded."
                ));
                continue;
            };
            self.nameservers.push(Nameserver {
                name: address.to_string(),
                addr: SocketAddr::new(ip, 53),
                transport: Transport::Datagram,
            });
        }
        Ok(warnings)
    }

    /// Checks the finished section: it needs at least one nameserver.
    pub fn validate(&self) -> Result<(), String> {
        if self.nameservers.is_empty() {
            return Err(format!(
                "resolvers '{}' has no nameserver configured",
                self.name
            ));
        }
        Ok(())
    }
}

fn arg<'a>(keyword: &str, args: &[&'a str], index: usize, what: &str) -> Result<&'a str, String> {
    args.get(index)
        .copied()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("'{keyword}' expects {what} as argument"))
}

fn no_extra(keyword: &str, args: &[&str], expected: usize) -> Result<(), String> {
    match args.get(expected) {
        Some(extra) => Err(format!("'{keyword}': unexpected argument '{extra}'")),
        None => Ok(()),
    }
}

/// Parses an `accepted_payload_size` value (12 to 65535, as HAProxy).
pub fn parse_payload_size(value: &str) -> Result<u16, String> {
    let range = || {
        format!(
            "'accepted_payload_size' must be between {MIN_ACCEPTED_PAYLOAD_SIZE} and {MAX_ACCEPTED_PAYLOAD_SIZE} inclusive (was {value})"
        )
    };
    let n: u64 = value.parse().map_err(|_| range())?;
    u16::try_from(n)
        .ok()
        .filter(|n| *n >= MIN_ACCEPTED_PAYLOAD_SIZE)
        .ok_or_else(range)
}

/// Parses a nameserver address: `[PREFIX@]ADDR:PORT`, where ADDR is an IPv4
/// or IPv6 address (`[::1]:53` or `::1:53`, the port after the last colon)
/// and PREFIX one of `udp`, `udp4`, `udp6`, `tcp`, `tcp4`, `tcp6`, `ipv4`,
/// `ipv6`. The port is mandatory. Host names are not accepted.
pub fn parse_nameserver_addr(word: &str) -> Result<(Transport, SocketAddr), String> {
    let (prefix, rest) = match word.split_once('@') {
        Some((prefix, rest)) => (Some(prefix), rest),
        None => (None, word),
    };
    let (transport, family) = match prefix {
        None => (Transport::Datagram, None),
        Some("ipv4") => (Transport::Datagram, Some(4)),
        Some("ipv6") => (Transport::Datagram, Some(6)),
        Some("udp") => (Transport::DatagramOnly, None),
        Some("udp4") => (Transport::DatagramOnly, Some(4)),
        Some("udp6") => (Transport::DatagramOnly, Some(6)),
        Some("tcp") => (Transport::Stream, None),
        Some("tcp4") => (Transport::Stream, Some(4)),
        Some("tcp6") => (Transport::Stream, Some(6)),
        Some(other) => {
            return Err(format!(
                "unsupported address prefix '{other}@' in '{word}' (use udp@ or tcp@)"
            ))
        }
    };
    let (host, port) = split_host_port(rest)
        .ok_or_else(|| format!("missing port in nameserver address '{word}'"))?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let ip: IpAddr = host.parse().map_err(|_| {
        format!("invalid nameserver address '{word}' (an IPv4 or IPv6 address is expected)")
    })?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("invalid port '{port}' in nameserver address '{word}'"))?;
    match (family, ip) {
        (Some(4), IpAddr::V6(_)) | (Some(6), IpAddr::V4(_)) => Err(format!(
            "address family of '{word}' does not match its prefix"
        )),
        _ => Ok((transport, SocketAddr::new(ip, port))),
    }
}

fn split_host_port(s: &str) -> Option<(&str, &str)> {
    let (host, port) = s.rsplit_once(':')?;
    if host.is_empty() || port.is_empty() {
        return None;
    }
    Some((host, port))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
