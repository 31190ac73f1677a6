//! `bind` lines: address lists, port ranges, address family prefixes and
//! bind options.
//!
//! Accepted address forms: `1.2.3.4:80`, `*:80`, `:80` (both IPv4 any),
//! `[::]:80`, `:::80` (the last colon separates the port), `ipv4@...`,
//! `ipv6@...` (an empty or `*` host then means `::`), several addresses
//! separated by commas, and port ranges `8000-8010`; UNIX sockets
//! (`unix@<path>`, a path starting with `/`, `abns@<name>`) and inherited
//! descriptors (`fd@<n>`, a listening socket; `sockpair@<n>`, a socket
//! pair end connections are passed over). Host names and other address
//! families (`udp@`, ...) are reported as not implemented yet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::diag::Diags;
use crate::keywords::Support;
use crate::model::{Bind, ListenSocket, Location, UnixAddr, UnixPerms};
use crate::tls::BindDraft;

/// How a bind option is handled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opt {
    Impl,
    /// An implemented TLS option (see [`crate::tls::BindDraft`]).
    Tls,
    /// A UNIX socket file option (`mode`, `user`, `group`, `uid`, `gid`).
    Unix,
    /// Accepted with this warning.
    Warn(&'static str),
    /// Rejected as not implemented yet (with a remark, or none).
    NotYet(&'static str),
}

const NY: Opt = Opt::NotYet("");

/// (name, takes an argument, handling)
const BIND_OPTIONS: &[(&str, bool, Opt)] = &[
    ("v4v6", false, Opt::Impl),
    ("v6only", false, Opt::Impl),
    ("ssl", false, Opt::Tls),
    ("crt", true, Opt::Tls),
    ("crt-list", true, Opt::Tls),
    ("alpn", true, Opt::Tls),
    ("npn", true, Opt::Warn(crate::tls::NPN)),
    ("ca-file", true, Opt::Tls),
    ("ca-ignore-err", true, NY),
    ("ca-sign-file", true, NY),
    ("ca-sign-pass", true, NY),
    ("ca-verify-file", true, NY),
    ("ciphers", true, Opt::Tls),
    ("ciphersuites", true, Opt::Tls),
    ("crl-file", true, NY),
    ("crt-ignore-err", true, NY),
    ("curves", true, NY),
    ("ecdhe", true, NY),
    ("sigalgs", true, NY),
    ("client-sigalgs", true, NY),
    ("force-sslv3", false, Opt::Tls),
    ("force-tlsv10", false, Opt::Tls),
    ("force-tlsv11", false, Opt::Tls),
    ("force-tlsv12", false, Opt::Tls),
    ("force-tlsv13", false, Opt::Tls),
    ("generate-certificates", false, NY),
    ("no-ca-names", false, Opt::Warn(crate::tls::NO_EFFECT)),
    ("no-sslv3", false, Opt::Tls),
    ("no-tls-tickets", false, Opt::Tls),
    ("no-tlsv10", false, Opt::Tls),
    ("no-tlsv11", false, Opt::Tls),
    ("no-tlsv12", false, Opt::Tls),
    ("no-tlsv13", false, Opt::Tls),
    (
        "prefer-client-ciphers",
        false,
        Opt::Warn(crate::tls::NO_EFFECT),
    ),
    ("ssl-max-ver", true, Opt::Tls),
    ("ssl-min-ver", true, Opt::Tls),
    ("strict-sni", false, Opt::Tls),
    ("tls-ticket-keys", true, NY),
    ("verify", true, Opt::Tls),
    ("allow-0rtt", false, NY),
    ("accept-netscaler-cip", true, NY),
    ("accept-proxy", false, Opt::Impl),
    ("backlog", true, NY),
    ("defer-accept", false, Opt::Impl),
    ("expose-fd", true, NY),
    ("gid", true, Opt::Unix),
    ("group", true, Opt::Unix),
    ("id", true, NY),
    ("interface", true, NY),
    ("level", true, NY),
    ("severity-output", true, NY),
    ("maxconn", true, NY),
    ("mode", true, Opt::Unix),
    ("mss", true, NY),
    ("name", true, NY),
    ("namespace", true, NY),
    ("nice", true, NY),
    ("process", true, NY),
    ("proto", true, Opt::Impl),
    ("quic-cc-algo", true, NY),
    ("quic-force-retry", false, NY),
    ("shards", true, NY),
    ("tcp-ut", true, NY),
    ("tfo", false, NY),
    ("thread", true, NY),
    ("transparent", false, NY),
    ("uid", true, Opt::Unix),
    ("user", true, Opt::Unix),
];

/// The bind options for [`crate::keyword_support`].
pub(crate) fn bind_option_support() -> Vec<(&'static str, Support, &'static str)> {
    BIND_OPTIONS
        .iter()
        .map(|(name, _, opt)| match opt {
            Opt::Impl | Opt::Tls | Opt::Unix => (*name, Support::Implemented, ""),
            Opt::Warn(note) => (*name, Support::Warning, *note),
            Opt::NotYet(note) => (*name, Support::NotYet, *note),
        })
        .collect()
}

/// Splits `host:port` at the last colon, honouring `[v6]:port`. Returns
/// `(host, Some(port))` or `(host, None)` when there is no port part.
pub(crate) fn split_host_port(s: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = s.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err(format!("missing ']' in address '{s}'"));
        };
        let host = &rest[..end];
        let after = &rest[end + 1..];
        if after.is_empty() {
            return Ok((host, None));
        }
        let Some(port) = after.strip_prefix(':') else {
            return Err(format!("unexpected '{after}' after ']' in address '{s}'"));
        };
        return Ok((host, Some(port)));
    }
    match s.rfind(':') {
        Some(i) => Ok((&s[..i], Some(&s[i + 1..]))),
        None => Ok((s, None)),
    }
}

/// Parses a port number 1..=65535.
pub(crate) fn parse_port(s: &str, addr: &str) -> Result<u16, String> {
    match s.parse::<u16>() {
        Ok(p) if p > 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(format!("invalid port '{s}' in address '{addr}'")),
    }
}

/// Address family forced by a prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Any,
    V4,
    V6,
}

/// Longest socket file path, as HAProxy: `sun_path` (108 bytes) less the
/// final NUL and room for the temporary name a bind creates first
/// (`<path>.<pid>.tmp`).
pub const MAX_UNIX_PATH: usize = 97;
/// Longest abstract socket name: `sun_path` less the leading NUL.
pub const MAX_ABNS_NAME: usize = 107;

/// An address that is not an IP address: a UNIX socket or an inherited
/// descriptor.
pub(crate) enum Special {
    Unix(UnixAddr),
    Fd(i32),
    SockPair(i32),
}

/// Recognizes `unix@<path>`, `<path>` starting with `/`, `abns@<name>`,
/// `fd@<n>` and `sockpair@<n>`. `None`: an IP form.
pub(crate) fn parse_special(item: &str) -> Option<Result<Special, String>> {
    if let Some(path) = item
        .strip_prefix("unix@")
        .or(item.starts_with('/').then_some(item))
    {
        return Some(unix_path(path, item).map(Special::Unix));
    }
    if let Some(name) = item.strip_prefix("abns@") {
        if name.is_empty() {
            return Some(Err(format!("missing socket name in '{item}'")));
        }
        if name.len() > MAX_ABNS_NAME {
            return Some(Err(format!(
                "socket path '{item}' too long (max {MAX_ABNS_NAME})"
            )));
        }
        return Some(Ok(Special::Unix(UnixAddr::Abstract(name.to_string()))));
    }
    if let Some(n) = item.strip_prefix("fd@") {
        return Some(fd_number(n, item).map(Special::Fd));
    }
    if let Some(n) = item.strip_prefix("sockpair@") {
        return Some(fd_number(n, item).map(Special::SockPair));
    }
    None
}

fn unix_path(path: &str, item: &str) -> Result<UnixAddr, String> {
    if path.is_empty() {
        return Err(format!("missing socket path in '{item}'"));
    }
    if path.len() > MAX_UNIX_PATH {
        return Err(format!(
            "socket path '{item}' too long (max {MAX_UNIX_PATH})"
        ));
    }
    if path.contains('\0') {
        return Err(format!("socket path '{item}' contains a NUL byte"));
    }
    Ok(UnixAddr::Path(path.to_string()))
}

/// A descriptor number: decimal digits only, as HAProxy.
fn fd_number(n: &str, item: &str) -> Result<i32, String> {
    match n.parse::<i32>() {
        Ok(fd) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Ok(fd),
        _ => Err(format!(
            "file descriptor '{n}' is not a valid integer in '{item}'"
        )),
    }
}

/// Strips an `ipv4@` / `ipv6@` prefix; other prefixes are not implemented.
pub(crate) fn strip_family(s: &str) -> Result<(Family, &str), String> {
    if let Some(rest) = s.strip_prefix("ipv4@") {
        return Ok((Family::V4, rest));
    }
    if let Some(rest) = s.strip_prefix("ipv6@") {
        return Ok((Family::V6, rest));
    }
    if let Some(at) = s.find('@') {
        let prefix = &s[..=at];
        if prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'@' || b == b'+')
        {
            return Err(format!(
                "address family '{prefix}' in '{s}' is not implemented yet in Fairlead (only ipv4@ and ipv6@ are)"
            ));
        }
    }
    if s.starts_with('/') {
        return Err(format!(
            "UNIX socket addresses ('{s}') are not implemented yet in Fairlead"
        ));
    }
    Ok((Family::Any, s))
}

/// Parses a literal IP host for the given family; `""`/`*` mean "any".
pub(crate) fn parse_ip(host: &str, fam: Family, addr: &str) -> Result<IpAddr, String> {
    if host.is_empty() || host == "*" {
        return Ok(match fam {
            Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        });
    }
    let ip: IpAddr = host
        .parse()
        .map_err(|_| format!("host names in 'bind' ('{host}' in '{addr}') are not implemented yet in Fairlead; use an IP address"))?;
    match (fam, ip) {
        (Family::V4, IpAddr::V6(_)) => Err(format!("'{addr}' is not an IPv4 address")),
        (Family::V6, IpAddr::V4(v4)) => Ok(IpAddr::V6(v4.to_ipv6_mapped())),
        _ => Ok(ip),
    }
}

/// Expands one comma-separated address list.
/// Most listening addresses (one socket each) the `bind` lines of a whole
/// configuration may expand to, port ranges and comma lists included. It
/// bounds the memory a short line such as `bind :1-65535,:1-65535,...`
/// would otherwise take.
pub(crate) const MAX_LISTEN_ADDRS: usize = 65536;

/// `budget`: addresses still allowed in the configuration; decreased by
/// what the list expands to, checked before anything is expanded.
/// The addresses of one `bind` line: IP ones, then the others.
type AddrList = (Vec<SocketAddr>, Vec<ListenSocket>);

fn parse_addr_list(list: &str, budget: &mut usize) -> Result<AddrList, Vec<String>> {
    let (mut out, mut sockets) = (Vec::new(), Vec::new());
    let mut errs = Vec::new();
    for item in list.split(',') {
        if item.is_empty() {
            errs.push(format!("empty address in '{list}'"));
            continue;
        }
        match parse_special(item) {
            Some(Ok(Special::Unix(u))) => sockets.push(ListenSocket::Unix(u)),
            Some(Ok(Special::Fd(n))) => sockets.push(ListenSocket::Fd(n)),
            Some(Ok(Special::SockPair(n))) => sockets.push(ListenSocket::SockPair(n)),
            Some(Err(e)) => errs.push(e),
            None => match parse_one(item, budget) {
                Ok(mut v) => out.append(&mut v),
                Err(e) => errs.push(e),
            },
        }
    }
    if errs.is_empty() {
        Ok((out, sockets))
    } else {
        Err(errs)
    }
}

fn parse_one(item: &str, budget: &mut usize) -> Result<Vec<SocketAddr>, String> {
    let (fam, rest) = strip_family(item)?;
    let (host, port) = split_host_port(rest)?;
    let Some(port) = port else {
        return Err(format!("missing port number in '{item}'"));
    };
    let ip = parse_ip(host, fam, item)?;
    let (lo, hi) = match port.split_once('-') {
        Some((a, b)) => {
            let (lo, hi) = (parse_port(a, item)?, parse_port(b, item)?);
            if lo > hi {
                return Err(format!(
                    "invalid port range '{port}' in '{item}' (start is above end)"
                ));
            }
            (lo, hi)
        }
        None => {
            let p = parse_port(port, item)?;
            (p, p)
        }
    };
    let count = usize::from(hi - lo) + 1;
    if count > *budget {
        return Err(format!(
            "'{item}' exceeds the limit of {MAX_LISTEN_ADDRS} listening addresses for the whole configuration"
        ));
    }
    *budget -= count;
    Ok((lo..=hi).map(|p| SocketAddr::new(ip, p)).collect())
}

/// Parses `bind <addr>[,<addr>...] [options]` (words include `bind`).
/// `listen_budget`: listening addresses still allowed in the whole
/// configuration (see [`MAX_LISTEN_ADDRS`]). The TLS options come back as
/// a draft, resolved into [`Bind::tls`] once the whole configuration is
/// read (see [`crate::tls`]).
pub(crate) fn parse_bind(
    words: &[String],
    loc: &Location,
    diags: &mut Diags,
    listen_budget: &mut usize,
) -> Option<(Bind, BindDraft)> {
    let Some(list) = words.get(1) else {
        diags.alert(
            loc,
            "'bind' expects {<path>|[addr1]:port1[-end1]}{,[addr]:port[-end]}... as arguments.",
        );
        return None;
    };
    let mut ok = true;
    let (addrs, sockets) = match parse_addr_list(list, listen_budget) {
        Ok(a) => a,
        Err(errs) => {
            for e in errs {
                diags.alert(loc, format!("'bind {list}': {e}"));
            }
            ok = false;
            (Vec::new(), Vec::new())
        }
    };
    let mut unix_perms = UnixPerms::default();
    let mut unix_opts = Vec::new();
    let mut v6only = None;
    let mut accept_proxy = false;
    let mut defer_accept = false;
    let mut proto_h2 = false;
    let mut tls = BindDraft {
        list: list.clone(),
        ..BindDraft::default()
    };
    // TLS options other than `ssl`, for the "ignored without 'ssl'" warning.
    let mut tls_opts = Vec::new();
    let mut i = 2;
    while i < words.len() {
        let name = words[i].as_str();
        let Some(&(_, takes_arg, kind)) = BIND_OPTIONS.iter().find(|(n, _, _)| *n == name) else {
            let hint = crate::keywords::suggest(name, BIND_OPTIONS.iter().map(|(n, _, _)| *n))
                .map(|s| format!("; did you mean '{s}'?"))
                .unwrap_or_default();
            diags.alert(
                loc,
                format!("'bind {list}': unknown keyword '{name}'{hint}"),
            );
            ok = false;
            i += 1;
            continue;
        };
        if takes_arg && i + 1 >= words.len() {
            diags.alert(loc, format!("'bind {list}': '{name}' expects an argument"));
            ok = false;
            break;
        }
        let arg = if takes_arg { words[i + 1].as_str() } else { "" };
        match kind {
            Opt::Impl if name == "accept-proxy" => accept_proxy = true,
            Opt::Impl if name == "defer-accept" => defer_accept = true,
            Opt::Impl if name == "proto" => match arg {
                "h2" => proto_h2 = true,
                "h1" => proto_h2 = false,
                _ => {
                    diags.alert(
                        loc,
                        format!("'bind {list}': 'proto': unknown protocol '{arg}' (h1 and h2 are supported)"),
                    );
                    ok = false;
                }
            },
            Opt::Impl => v6only = Some(name == "v6only"),
            Opt::Unix => {
                if let Err(e) = unix_option(&mut unix_perms, name, arg) {
                    diags.alert(loc, format!("'bind {list}': {e}"));
                    ok = false;
                }
                unix_opts.push(name);
            }
            Opt::Tls => {
                if let Err(e) = tls.apply(name, arg) {
                    diags.alert(loc, format!("'bind {list}': {e}"));
                    ok = false;
                }
                if name != "ssl" && !tls_opts.contains(&name) {
                    tls_opts.push(name);
                }
            }
            Opt::Warn(note) => diags.warn(loc, format!("'bind {list}': '{name}' {note}")),
            Opt::NotYet(note) => {
                let note = if note.is_empty() {
                    String::new()
                } else {
                    format!(" ({note})")
                };
                diags.alert(
                    loc,
                    format!(
                        "'bind {list}': option '{name}' is not implemented yet in Fairlead{note}"
                    ),
                );
                ok = false;
            }
        }
        i += if takes_arg { 2 } else { 1 };
    }
    if tls.ssl && tls.crt.is_empty() && tls.crt_list.is_empty() {
        diags.alert(
            loc,
            format!("'bind {list}': 'ssl' needs a certificate: add 'crt <file|dir>' or 'crt-list <file>'"),
        );
        ok = false;
    }
    if proto_h2 && !sockets.is_empty() {
        diags.alert(
            loc,
            format!("'bind {list}': 'proto h2' on UNIX, 'fd@' and 'sockpair@' sockets is not implemented yet in Fairlead"),
        );
        ok = false;
    }
    let has_unix = sockets.iter().any(|s| matches!(s, ListenSocket::Unix(_)));
    if !has_unix && !unix_opts.is_empty() {
        let names: Vec<String> = unix_opts.iter().map(|n| format!("'{n}'")).collect();
        diags.warn(
            loc,
            format!(
                "'bind {list}': ignored: these options only apply to the UNIX socket files a line creates: {}",
                names.join(", ")
            ),
        );
    }
    if !tls.ssl && !tls_opts.is_empty() {
        let names: Vec<String> = tls_opts.iter().map(|n| format!("'{n}'")).collect();
        diags.warn(
            loc,
            format!(
                "'bind {list}': TLS options are ignored without 'ssl': {}",
                names.join(", ")
            ),
        );
    }
    ok.then(|| {
        (
            Bind {
                addrs,
                v6only,
                proto_h2,
                tls: None,
                accept_proxy,
                defer_accept,
                sockets,
                unix_perms,
                location: loc.clone(),
            },
            tls,
        )
    })
}

/// One of `mode`, `user`, `group`, `uid`, `gid`.
fn unix_option(p: &mut UnixPerms, name: &str, arg: &str) -> Result<(), String> {
    let number = |what: &str| {
        arg.parse::<u32>()
            .ok()
            .filter(|_| arg.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| format!("'{name}' expects {what}, got '{arg}'"))
    };
    match name {
        "mode" => {
            let m = u32::from_str_radix(arg, 8)
                .ok()
                .filter(|m| *m <= 0o7777 && !arg.is_empty())
                .ok_or_else(|| format!("'mode' expects an octal mode such as 660, got '{arg}'"))?;
            p.mode = Some(m);
        }
        "uid" => p.uid = Some(number("a numeric user id")?),
        "gid" => p.gid = Some(number("a numeric group id")?),
        "user" => p.user = Some(arg.to_string()),
        _ => p.group = Some(arg.to_string()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(s: &str) -> Vec<String> {
        parse_addr_list(s, &mut { MAX_LISTEN_ADDRS })
            .unwrap()
            .0
            .iter()
            .map(|a| a.to_string())
            .collect()
    }

    fn err(s: &str) -> String {
        parse_addr_list(s, &mut { MAX_LISTEN_ADDRS })
            .unwrap_err()
            .join("|")
    }

    #[test]
    fn address_forms() {
        assert_eq!(addrs("1.2.3.4:80"), ["1.2.3.4:80"]);
        assert_eq!(addrs("*:80"), ["0.0.0.0:80"]);
        assert_eq!(addrs(":80"), ["0.0.0.0:80"]);
        assert_eq!(addrs("[::]:80"), ["[::]:80"]);
        assert_eq!(addrs(":::80"), ["[::]:80"]);
        assert_eq!(addrs("[::1]:8443"), ["[::1]:8443"]);
        assert_eq!(addrs("::1:80"), ["[::1]:80"]);
        assert_eq!(addrs("ipv4@:80"), ["0.0.0.0:80"]);
        assert_eq!(addrs("ipv6@:80"), ["[::]:80"]);
        assert_eq!(addrs("ipv6@*:80"), ["[::]:80"]);
        assert_eq!(addrs("ipv6@::1:80"), ["[::1]:80"]);
        assert_eq!(addrs(":80,:443"), ["0.0.0.0:80", "0.0.0.0:443"]);
        assert_eq!(
            addrs("10.0.0.1:8000-8002"),
            ["10.0.0.1:8000", "10.0.0.1:8001", "10.0.0.1:8002"]
        );
        assert_eq!(addrs("[::]:80,1.2.3.4:81-82").len(), 3);
    }

    #[test]
    fn address_errors() {
        assert!(err("1.2.3.4").contains("missing port"));
        assert!(err(":0").contains("invalid port '0'"));
        assert!(err(":65536").contains("invalid port"));
        assert!(err(":8010-8000").contains("start is above end"));
        assert!(err(":http").contains("invalid port 'http'"));
        assert!(err("example.com:80").contains("host names"));
        assert!(err("ipv4@[::]:80").contains("not an IPv4"));
        assert_eq!(sockets("sockpair@3"), ["sockpair@3"]);
        assert_eq!(
            err("sockpair@x"),
            "file descriptor 'x' is not a valid integer in 'sockpair@x'"
        );
        assert!(err("udp@:53").contains("not implemented yet"));
        assert!(err(":80,").contains("empty address"));
        assert!(err("[::1:80").contains("missing ']'"));
    }

    fn sockets(s: &str) -> Vec<String> {
        parse_addr_list(s, &mut { MAX_LISTEN_ADDRS })
            .unwrap()
            .1
            .iter()
            .map(|a| a.to_string())
            .collect()
    }

    #[test]
    fn unix_and_fd_forms() {
        assert_eq!(sockets("unix@/run/a.sock"), ["unix@/run/a.sock"]);
        assert_eq!(sockets("/run/a.sock"), ["unix@/run/a.sock"]);
        assert_eq!(sockets("abns@lb"), ["abns@lb"]);
        assert_eq!(sockets("fd@3"), ["fd@3"]);
        assert_eq!(sockets("fd@3,/a,:80"), ["fd@3", "unix@/a"]);
        assert_eq!(addrs("fd@3,/a,:80"), ["0.0.0.0:80"]);
        // HAProxy's messages.
        assert_eq!(
            err("fd@abc"),
            "file descriptor 'abc' is not a valid integer in 'fd@abc'"
        );
        assert_eq!(
            err("fd@"),
            "file descriptor '' is not a valid integer in 'fd@'"
        );
        assert_eq!(
            err("fd@-1"),
            "file descriptor '-1' is not a valid integer in 'fd@-1'"
        );
        let p = format!("/tmp/{}", "a".repeat(93));
        assert_eq!(sockets(&p[..97]).len(), 1);
        assert_eq!(err(&p), format!("socket path '{p}' too long (max 97)"));
        let n = format!("abns@{}", "a".repeat(108));
        assert_eq!(err(&n), format!("socket path '{n}' too long (max 107)"));
        assert_eq!(sockets(&n[..112]).len(), 1);
        assert!(err("unix@").contains("missing socket path"));
        assert!(err("abns@").contains("missing socket name"));
    }

    #[test]
    fn unix_options() {
        let mut p = UnixPerms::default();
        unix_option(&mut p, "mode", "660").unwrap();
        unix_option(&mut p, "uid", "0").unwrap();
        unix_option(&mut p, "gid", "42").unwrap();
        unix_option(&mut p, "user", "www").unwrap();
        unix_option(&mut p, "group", "web").unwrap();
        assert_eq!(
            p,
            UnixPerms {
                mode: Some(0o660),
                uid: Some(0),
                user: Some("www".into()),
                gid: Some(42),
                group: Some("web".into()),
            }
        );
        assert!(unix_option(&mut p, "mode", "689").is_err());
        assert!(unix_option(&mut p, "mode", "77777").is_err());
        assert!(unix_option(&mut p, "uid", "-1").is_err());
        assert!(unix_option(&mut p, "gid", "x").is_err());
    }

    /// Found by the `config_parse` fuzz target's memory limit: a short
    /// line of full port ranges expanded to millions of addresses.
    #[test]
    fn address_budget() {
        let mut budget = 10;
        assert_eq!(
            parse_addr_list(":1-4,:5-10", &mut budget).unwrap().0.len(),
            10
        );
        assert_eq!(budget, 0);
        assert!(parse_addr_list(":80", &mut budget).unwrap_err()[0].contains("limit of"));
        let mut budget = MAX_LISTEN_ADDRS;
        assert_eq!(
            parse_addr_list(":1-65535", &mut budget).unwrap().0.len(),
            65535
        );
        assert_eq!(budget, 1);
        let errs = parse_addr_list(":1-65535,:2-3", &mut { MAX_LISTEN_ADDRS }).unwrap_err();
        assert!(errs[0].contains("':2-3' exceeds the limit of 65536 listening addresses"));
    }

    /// The whole-configuration form of the input above: 5 KB of `bind`
    /// lines used to take over 2 GB. The budget is shared by all frontends.
    #[test]
    fn bind_port_range_flood_is_rejected() {
        let parse = |text: String| {
            crate::parse(
                &[crate::Source {
                    name: "t.cfg".into(),
                    text,
                }],
                &|_| None,
            )
        };
        let line = format!("    bind {}\n", vec![":1-65535"; 200].join(","));
        let errs = parse(format!("frontend f\n{}", line.repeat(3))).unwrap_err();
        assert!(errs.iter().any(|d| d
            .message
            .contains("exceeds the limit of 65536 listening addresses")));
        let errs = parse("frontend a\n bind :1-65535\nfrontend b\n bind :1-65535\n".to_string())
            .unwrap_err();
        assert!(errs
            .iter()
            .any(|d| d.location.line == 4 && d.message.contains("exceeds the limit")));
    }
}
