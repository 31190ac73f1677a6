//! `log` targets: where messages go and how they are framed
//! (configuration manual, `log` keyword of sections 3.1 and 4.2).
//!
//! ```text
//! log <address> [len <length>] [format <format>] [sample <ranges>:<size>]
//!     <facility> [<level> [<minlevel>]]
//! ```

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::time::{self, Civil};

/// The 24 syslog facilities, in code order.
const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2",
    "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

/// A syslog facility (`kern` = 0 ... `local7` = 23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facility(pub u8);

impl Facility {
    pub fn parse(s: &str) -> Option<Facility> {
        FACILITIES
            .iter()
            .position(|f| *f == s)
            .map(|i| Facility(i as u8))
    }
    pub fn name(self) -> &'static str {
        FACILITIES.get(usize::from(self.0)).copied().unwrap_or("?")
    }
}

/// A syslog severity. Lower is more severe; traffic logs are `Info`
/// (`Err` for errors with `option log-separate-errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Emerg = 0,
    Alert = 1,
    Crit = 2,
    Err = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
    Debug = 7,
}

const LEVELS: [(&str, Level); 8] = [
    ("emerg", Level::Emerg),
    ("alert", Level::Alert),
    ("crit", Level::Crit),
    ("err", Level::Err),
    ("warning", Level::Warning),
    ("notice", Level::Notice),
    ("info", Level::Info),
    ("debug", Level::Debug),
];

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        LEVELS.iter().find(|(n, _)| *n == s).map(|(_, l)| *l)
    }
    pub fn name(self) -> &'static str {
        LEVELS[self as usize].0
    }
    pub(crate) fn from_u8(n: u8) -> Level {
        LEVELS[usize::from(n.min(7))].1
    }
}

/// The header written before each message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyslogFormat {
    /// `<PRI>Mmm dd HH:MM:SS tag[pid]: msg` (RFC 3164 without the host
    /// name). The default, unless `log-send-hostname` is set.
    #[default]
    Local,
    /// `<PRI>Mmm dd HH:MM:SS host tag[pid]: msg` (host `localhost` when
    /// `log-send-hostname` is not set). The default with
    /// `log-send-hostname`.
    Rfc3164,
    /// `<PRI>1 2026-11-22T02:58:15.123456+00:00 host tag pid - - msg`
    /// (host `-` when `log-send-hostname` is not set).
    Rfc5424,
    /// `<PRI>msg`.
    Priority,
    /// `<level>msg` (systemd's format).
    Short,
    /// `<level>ISO-date msg`.
    Timed,
    /// `ISO-date msg`.
    Iso,
    /// `msg` only.
    Raw,
}

impl SyslogFormat {
    pub fn parse(s: &str) -> Option<SyslogFormat> {
        Some(match s {
            "local" => SyslogFormat::Local,
            "rfc3164" => SyslogFormat::Rfc3164,
            "rfc5424" => SyslogFormat::Rfc5424,
            "priority" => SyslogFormat::Priority,
            "short" => SyslogFormat::Short,
            "timed" => SyslogFormat::Timed,
            "iso" => SyslogFormat::Iso,
            "raw" => SyslogFormat::Raw,
            _ => return None,
        })
    }
}

/// Where messages are sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogAddr {
    /// `stdout` / `fd@1`: one line per message.
    Stdout,
    /// `stderr` / `fd@2`.
    Stderr,
    /// A UDP syslog server (`ip[:port]`, `udp@`, `udp4@`, `udp6@`,
    /// `ipv4@`, `ipv6@` prefixes; port 514 by default).
    Udp(SocketAddr),
    /// A UDP syslog server by host name, resolved when the logger starts.
    UdpName(String, u16),
    /// A unix datagram socket (`/dev/log`, `unix@/path`, `uxdg@/path`).
    Unix(PathBuf),
}

/// One parsed `log` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    pub addr: LogAddr,
    /// `len`: the longest line sent, header and final line feed included;
    /// 80..=65535. Default is 1024.
    pub len: usize,
    /// `format`. Default is `None`: `local`, or `rfc3164` when
    /// `log-send-hostname` is set (see [`TargetSpec::effective_format`]).
    pub format: Option<SyslogFormat>,
    pub facility: Facility,
    /// Only messages at least this severe are sent. Default is `Debug`
    /// (everything).
    pub level: Level,
    /// More severe messages are sent with this level instead. Default is
    /// `Emerg` (no capping).
    pub minlevel: Level,
}

impl Default for TargetSpec {
    /// `stderr format raw daemon`, used only as a placeholder.
    fn default() -> Self {
        TargetSpec {
            addr: LogAddr::Stderr,
            len: 1024,
            format: Some(SyslogFormat::Raw),
            facility: Facility(3),
            level: Level::Debug,
            minlevel: Level::Emerg,
        }
    }
}

impl TargetSpec {
    /// The format in effect: the explicit one, else `rfc3164` when a
    /// host name is sent, else `local`.
    pub fn effective_format(&self, send_hostname: bool) -> SyslogFormat {
        self.format.unwrap_or(if send_hostname {
            SyslogFormat::Rfc3164
        } else {
            SyslogFormat::Local
        })
    }

    /// The level a message is sent with, or `None` when filtered out.
    pub fn accepts(&self, level: Level) -> Option<Level> {
        (level <= self.level).then(|| level.max(self.minlevel))
    }
}

/// Parses the words after `log` (not `log global`).
pub fn parse_target(args: &[String]) -> Result<TargetSpec, String> {
    let Some(first) = args.first() else {
        return Err(
            "expects <address> [len <length>] [format <format>] <facility> [<level> [<minlevel>]]"
                .into(),
        );
    };
    let addr = parse_addr(first)?;
    let mut spec = TargetSpec {
        addr,
        len: 1024,
        format: None,
        ..TargetSpec::default()
    };
    let mut i = 1;
    loop {
        match args.get(i).map(String::as_str) {
            Some("len") => {
                let v = args.get(i + 1).ok_or("'len' expects a length")?;
                let n: usize = v
                    .parse()
                    .map_err(|_| format!("'len' expects an integer (got '{v}')"))?;
                if !(80..=65535).contains(&n) {
                    return Err(format!("'len' must be between 80 and 65535 (got {n})"));
                }
                spec.len = n;
            }
            Some("format") => {
                let v = args.get(i + 1).ok_or("'format' expects a format name")?;
                spec.format = Some(SyslogFormat::parse(v).ok_or_else(|| {
                    format!("unknown log format '{v}' (expected local, rfc3164, rfc5424, priority, short, timed, iso or raw)")
                })?);
            }
            Some("sample") => {
                return Err("log sampling ('sample') is not implemented yet in Fairlead".into())
            }
            _ => break,
        }
        i += 2;
    }
    let rest = &args[i..];
    let Some(fac) = rest.first() else {
        return Err(format!(
            "'{first}' expects a facility (local0 ... local7, daemon, user, ...)"
        ));
    };
    spec.facility = Facility::parse(fac).ok_or_else(|| format!("unknown log facility '{fac}'"))?;
    let level = |w: &String| Level::parse(w).ok_or_else(|| format!("unknown log level '{w}'"));
    if let Some(l) = rest.get(1) {
        spec.level = level(l)?;
    }
    if let Some(l) = rest.get(2) {
        spec.minlevel = level(l)?;
    }
    if let Some(extra) = rest.get(3) {
        return Err(format!("unexpected argument '{extra}' after the levels"));
    }
    Ok(spec)
}

fn parse_addr(s: &str) -> Result<LogAddr, String> {
    match s {
        "stdout" | "fd@1" => return Ok(LogAddr::Stdout),
        "stderr" | "fd@2" => return Ok(LogAddr::Stderr),
        _ => {}
    }
    if let Some((proto, rest)) = s.split_once('@') {
        match proto {
            "unix" | "uxdg" => return unix_path(rest),
            "udp" | "udp4" | "udp6" | "ipv4" | "ipv6" => return inet(rest),
            "fd" => {
                return Err(format!(
                    "'{s}': only fd@1 (stdout) and fd@2 (stderr) are supported"
                ))
            }
            "ring" | "tcp" | "tcp4" | "tcp6" | "uxst" => {
                return Err(format!(
                    "'{proto}@' log targets are not implemented yet in Fairlead"
                ))
            }
            _ => return Err(format!("unknown address family '{proto}@' in '{s}'")),
        }
    }
    if s.starts_with('/') {
        return unix_path(s);
    }
    inet(s)
}

fn unix_path(p: &str) -> Result<LogAddr, String> {
    if p.is_empty() {
        return Err("expects a unix socket path".into());
    }
    Ok(LogAddr::Unix(PathBuf::from(p)))
}

/// `ip`, `ip:port`, `[v6]:port`, `v6` (the port defaults to 514), or
/// `host[:port]`.
fn inet(s: &str) -> Result<LogAddr, String> {
    if s.is_empty() {
        return Err("expects an address".into());
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        if a.port() == 0 {
            return Err(format!("invalid port '0' in '{s}'"));
        }
        return Ok(LogAddr::Udp(a));
    }
    if let Ok(ip) = s
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(LogAddr::Udp(SocketAddr::new(ip, 514)));
    }
    let port = |p: &str| -> Result<u16, String> {
        match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("invalid port '{p}' in '{s}'")),
        }
    };
    if let Some((h, p)) = s.rsplit_once(':') {
        if let Ok(ip) = h.parse::<IpAddr>() {
            return Ok(LogAddr::Udp(SocketAddr::new(ip, port(p)?)));
        }
        if !h.contains(':') && valid_host(h) {
            return Ok(LogAddr::UdpName(h.to_string(), port(p)?));
        }
    } else if valid_host(s) {
        return Ok(LogAddr::UdpName(s.to_string(), 514));
    }
    Err(format!("invalid log address '{s}'"))
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
}

/// What a header needs besides the message.
pub(crate) struct Header<'a> {
    pub format: SyslogFormat,
    pub facility: Facility,
    pub level: Level,
    pub date: &'a Civil,
    pub hostname: Option<&'a str>,
    pub tag: &'a str,
    pub pid: u32,
}

/// Writes the header of one message.
pub(crate) fn write_header(out: &mut Vec<u8>, h: &Header) {
    use SyslogFormat::*;
    let pri = match h.format {
        Local | Rfc3164 | Rfc5424 | Priority => Some(u64::from(h.facility.0) * 8 + h.level as u64),
        Short | Timed => Some(h.level as u64),
        Iso | Raw => None,
    };
    if let Some(p) = pri {
        out.push(b'<');
        time::pad(out, p, 1);
        out.push(b'>');
    }
    match h.format {
        Local | Rfc3164 => {
            time::legacy_date(out, h.date);
            out.push(b' ');
            if h.format == Rfc3164 {
                out.extend_from_slice(h.hostname.unwrap_or("localhost").as_bytes());
                out.push(b' ');
            }
            out.extend_from_slice(h.tag.as_bytes());
            out.push(b'[');
            time::pad(out, h.pid.into(), 1);
            out.extend_from_slice(b"]: ");
        }
        Rfc5424 => {
            out.extend_from_slice(b"1 ");
            time::iso_date(out, h.date);
            out.push(b' ');
            out.extend_from_slice(h.hostname.unwrap_or("-").as_bytes());
            out.push(b' ');
            out.extend_from_slice(if h.tag.is_empty() { "-" } else { h.tag }.as_bytes());
            out.push(b' ');
            time::pad(out, h.pid.into(), 1);
            out.extend_from_slice(b" - - ");
        }
        Timed | Iso => {
            time::iso_date(out, h.date);
            out.push(b' ');
        }
        Priority | Short | Raw => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<TargetSpec, String> {
        let w: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_target(&w)
    }

    #[test]
    fn targets() {
        let t = p("127.0.0.1:514 local0").unwrap();
        assert_eq!(t.addr, LogAddr::Udp("127.0.0.1:514".parse().unwrap()));
        assert_eq!(
            (t.facility.name(), t.level, t.minlevel),
            ("local0", Level::Debug, Level::Emerg)
        );
        assert_eq!(t.format, None);
        assert_eq!(
            p("10.0.0.1 local7 notice").unwrap().addr,
            LogAddr::Udp("10.0.0.1:514".parse().unwrap())
        );
        let t = p("stdout format raw daemon").unwrap();
        assert_eq!(
            (t.addr.clone(), t.format),
            (LogAddr::Stdout, Some(SyslogFormat::Raw))
        );
        let t = p("stderr format short daemon notice err").unwrap();
        assert_eq!((t.level, t.minlevel), (Level::Notice, Level::Err));
        assert_eq!(
            p("/dev/log local0").unwrap().addr,
            LogAddr::Unix("/dev/log".into())
        );
        assert_eq!(
            p("unix@/run/l.sock user").unwrap().addr,
            LogAddr::Unix("/run/l.sock".into())
        );
        assert_eq!(p("fd@1 user").unwrap().addr, LogAddr::Stdout);
        assert_eq!(
            p("[::1]:1514 user").unwrap().addr,
            LogAddr::Udp("[::1]:1514".parse().unwrap())
        );
        assert_eq!(
            p("::1 user").unwrap().addr,
            LogAddr::Udp("[::1]:514".parse().unwrap())
        );
        assert_eq!(
            p("udp@10.1.1.1:600 user").unwrap().addr,
            LogAddr::Udp("10.1.1.1:600".parse().unwrap())
        );
        assert_eq!(
            p("logs.example:515 user").unwrap().addr,
            LogAddr::UdpName("logs.example".into(), 515)
        );
        assert_eq!(
            p("logs user").unwrap().addr,
            LogAddr::UdpName("logs".into(), 514)
        );
        let t = p("127.0.0.1 len 4096 format rfc5424 local1 info").unwrap();
        assert_eq!(
            (t.len, t.format, t.level),
            (4096, Some(SyslogFormat::Rfc5424), Level::Info)
        );
    }

    #[test]
    fn target_errors() {
        assert!(p("").unwrap_err().contains("expects <address>"));
        assert!(p("127.0.0.1").unwrap_err().contains("expects a facility"));
        assert!(p("127.0.0.1 local9")
            .unwrap_err()
            .contains("unknown log facility 'local9'"));
        assert!(p("127.0.0.1 local0 loud")
            .unwrap_err()
            .contains("unknown log level 'loud'"));
        assert!(p("127.0.0.1 local0 info err x")
            .unwrap_err()
            .contains("unexpected argument 'x'"));
        assert!(p("127.0.0.1 len 10 local0")
            .unwrap_err()
            .contains("between 80 and 65535"));
        assert!(p("127.0.0.1 format json local0")
            .unwrap_err()
            .contains("unknown log format 'json'"));
        assert!(p("127.0.0.1 sample 1:2 local0")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(p("ring@buf local0")
            .unwrap_err()
            .contains("'ring@' log targets are not implemented yet"));
        assert!(p("tcp@127.0.0.1:514 local0")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(p("fd@3 local0").unwrap_err().contains("only fd@1"));
        assert!(p("1.2.3.4:0 local0").unwrap_err().contains("invalid port"));
        assert!(p("bad_host! local0")
            .unwrap_err()
            .contains("invalid log address"));
    }

    #[test]
    fn levels() {
        let t = p("stdout daemon warning err").unwrap();
        assert_eq!(t.accepts(Level::Info), None);
        assert_eq!(t.accepts(Level::Warning), Some(Level::Warning));
        assert_eq!(t.accepts(Level::Emerg), Some(Level::Err));
        assert_eq!(Level::parse("debug"), Some(Level::Debug));
        assert_eq!(Level::from_u8(6).name(), "info");
        assert_eq!(Facility::parse("local7"), Some(Facility(23)));
    }

    #[test]
    fn headers() {
        let date = Civil::from_unix(1_795_316_295, 123_456);
        let h = |format, hostname| {
            let mut out = Vec::new();
            write_header(
                &mut out,
                &Header {
                    format,
                    facility: Facility(16),
                    level: Level::Info,
                    date: &date,
                    hostname,
                    tag: "fairlead",
                    pid: 42,
                },
            );
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            h(SyslogFormat::Local, None),
            "<134>Nov 22 02:58:15 fairlead[42]: "
        );
        assert_eq!(
            h(SyslogFormat::Rfc3164, Some("lb1")),
            "<134>Nov 22 02:58:15 lb1 fairlead[42]: "
        );
        assert_eq!(
            h(SyslogFormat::Rfc3164, None),
            "<134>Nov 22 02:58:15 localhost fairlead[42]: "
        );
        assert_eq!(
            h(SyslogFormat::Rfc5424, Some("lb1")),
            "<134>1 2026-11-22T02:58:15.123456+00:00 lb1 fairlead 42 - - "
        );
        assert_eq!(
            h(SyslogFormat::Rfc5424, None),
            "<134>1 2026-11-22T02:58:15.123456+00:00 - fairlead 42 - - "
        );
        assert_eq!(h(SyslogFormat::Priority, None), "<134>");
        assert_eq!(h(SyslogFormat::Short, None), "<6>");
        assert_eq!(
            h(SyslogFormat::Timed, None),
            "<6>2026-11-22T02:58:15.123456+00:00 "
        );
        assert_eq!(
            h(SyslogFormat::Iso, None),
            "2026-11-22T02:58:15.123456+00:00 "
        );
        assert_eq!(h(SyslogFormat::Raw, None), "");
    }
}
