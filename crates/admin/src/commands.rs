//! The command table (words, usage, minimum level) and each command's
//! argument parsing, error wording and output, after HAProxy's management
//! guide, section 9.3.

use crate::api::{
    check_flags, AdminState, BackendInfo, ForcedHealth, OutputFormat, ServerChange, ServerRef,
    StatDomain, StatFilter, StatRequest, TasksProfiling,
};
use crate::render;
use crate::session::Session;
use crate::Level;
use std::net::IpAddr;
use std::time::SystemTime;

/// One CLI command.
pub(crate) struct Command {
    /// The keywords that select it.
    pub words: &'static [&'static str],
    /// Syntax shown by `help`.
    pub usage: &'static str,
    /// One-line description shown by `help`.
    pub help: &'static str,
    /// Minimum level.
    pub level: Level,
    /// Runs it; receives every word, keywords included.
    pub run: fn(&mut Session, &[String]) -> String,
}

macro_rules! cmd {
    ($words:expr, $usage:expr, $help:expr, $level:ident, $run:expr) => {
        Command {
            words: $words,
            usage: $usage,
            help: $help,
            level: Level::$level,
            run: $run,
        }
    };
}

/// Every command but `help`, `prompt` and `quit`.
pub(crate) static COMMANDS: &[Command] = &[
    cmd!(
        &["operator"],
        "operator",
        "lower the level of the current CLI session to operator",
        Operator,
        lower_level
    ),
    cmd!(
        &["user"],
        "user",
        "lower the level of the current CLI session to user",
        User,
        lower_level
    ),
    cmd!(
        &["show", "cli", "level"],
        "show cli level",
        "display the level of the current CLI session",
        User,
        show_cli_level
    ),
    cmd!(
        &["show", "version"],
        "show version",
        "show version of the current process",
        User,
        show_version
    ),
    cmd!(
        &["show", "info"],
        "show info [desc|json|typed]*",
        "report information about the running process",
        User,
        show_info
    ),
    cmd!(
        &["show", "stat"],
        "show stat [desc|json|no-maint|typed|up]*",
        "report counters for each proxy and server",
        User,
        show_stat
    ),
    cmd!(
        &["show", "resolvers"],
        "show resolvers [<id>]",
        "dumps counters from all resolvers section and associated name servers",
        User,
        crate::dns::show_resolvers
    ),
    cmd!(
        &["show", "servers", "state"],
        "show servers state [<backend>]",
        "dump volatile server information (all or for a single backend)",
        User,
        show_servers_state
    ),
    cmd!(
        &["show", "sess"],
        "show sess [<id>|all|help] [opts...]",
        "report the list of current streams",
        Operator,
        show_sess
    ),
    cmd!(
        &["shutdown", "session"],
        "shutdown session <id>",
        "kill a specific session",
        Admin,
        shutdown_session
    ),
    cmd!(
        &["show", "activity"],
        "show activity",
        "show per-thread activity stats (for support/developers)",
        User,
        show_activity
    ),
    cmd!(
        &["show", "pools"],
        "show pools [by*] [match <pfx>] [nb]",
        "report information about the memory pools usage",
        User,
        show_pools
    ),
    cmd!(
        &["show", "errors"],
        "show errors [<px>] [request|response]",
        "report last request and/or response errors for each proxy",
        Operator,
        show_errors
    ),
    cmd!(
        &["disable", "server"],
        "disable server <bk>/<srv>",
        "disable a server for maintenance",
        Admin,
        disable_server
    ),
    cmd!(
        &["enable", "server"],
        "enable server <bk>/<srv>",
        "enable a disabled server",
        Admin,
        enable_server
    ),
    cmd!(
        &["set", "server"],
        "set server <bk>/<srv> [opts]",
        "change a server's state, weight, address or health",
        Admin,
        set_server
    ),
    cmd!(
        &["set", "weight"],
        "set weight <bk>/<srv> <weight>[%]",
        "change a server's weight",
        Admin,
        set_weight
    ),
    cmd!(
        &["get", "weight"],
        "get weight <bk>/<srv>",
        "report a server's current weight",
        User,
        get_weight
    ),
    cmd!(
        &["set", "maxconn", "server"],
        "set maxconn server <bk>/<srv> <n>",
        "change a server's maxconn setting",
        Admin,
        set_maxconn_server
    ),
    cmd!(
        &["show", "profiling"],
        "show profiling [<what>|<#lines>|<opts>]*",
        "show profiling state (all,status,tasks,memory)",
        Admin,
        show_profiling
    ),
    cmd!(
        &["set", "profiling"],
        "set profiling tasks {on|off|auto}",
        "enable/disable tasks profiling",
        Admin,
        set_profiling
    ),
    cmd!(
        &["show", "ssl", "cert"],
        "show ssl cert [<certfile>]",
        "display the SSL certificates used in memory, or the details of a file",
        Operator,
        show_ssl_cert
    ),
    cmd!(
        &["reload", "ssl", "certs"],
        "reload ssl certs",
        "re-read the certificate files of every 'bind ... ssl' line",
        Admin,
        reload_ssl_certs
    ),
];

/// Every command: [`COMMANDS`], then the map and ACL commands, the stick
/// table commands and the dynamic server commands.
pub(crate) fn all_commands() -> impl Iterator<Item = &'static Command> {
    COMMANDS
        .iter()
        .chain(crate::maps::COMMANDS)
        .chain(crate::tables::COMMANDS)
        .chain(crate::servers::COMMANDS)
}

fn arg(w: &[String], i: usize) -> &str {
    w.get(i).map_or("", String::as_str)
}

fn lower_level(s: &mut Session, w: &[String]) -> String {
    s.level = if w[0] == "user" {
        Level::User
    } else {
        Level::Operator
    };
    String::new()
}

fn show_cli_level(s: &mut Session, _: &[String]) -> String {
    format!("{}\n", s.level.name())
}

fn show_version(s: &mut Session, _: &[String]) -> String {
    format!("{}\n", s.api.version())
}

fn show_info(s: &mut Session, w: &[String]) -> String {
    let mut format = OutputFormat::Default;
    let mut desc = false;
    for a in &w[2..] {
        match a.as_str() {
            "typed" => format = OutputFormat::Typed,
            "json" => format = OutputFormat::Json,
            "desc" => desc = true,
            _ => {}
        }
    }
    if format != OutputFormat::Default {
        return s.api.info_formatted(format, desc).unwrap_or_else(|| {
            let f = if format == OutputFormat::Typed {
                "typed"
            } else {
                "json"
            };
            format!("'show info {f}' is not supported yet.\n")
        });
    }
    s.api
        .info()
        .into_iter()
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect()
}

fn show_stat(s: &mut Session, w: &[String]) -> String {
    const FLAGS: [&str; 5] = ["typed", "json", "desc", "no-maint", "up"];
    let mut req = StatRequest {
        domain: StatDomain::Proxy,
        filter: None,
        format: OutputFormat::Default,
        desc: false,
        up: false,
        no_maint: false,
    };
    let mut i = 2;
    if arg(w, i) == "domain" {
        req.domain = match arg(w, i + 1) {
            "proxy" => StatDomain::Proxy,
            "resolvers" => StatDomain::Resolvers,
            _ => return "Invalid statistics domain.\n".into(),
        };
        i += 2;
    }
    if req.domain == StatDomain::Proxy && w.len() >= i + 3 && !FLAGS.contains(&arg(w, i)) {
        req.filter = Some(StatFilter {
            proxy: w[i].clone(),
            kinds: arg(w, i + 1).parse().unwrap_or(0),
            sid: arg(w, i + 2).parse().unwrap_or(0),
        });
        i += 3;
    }
    for a in &w[i.min(w.len())..] {
        match a.as_str() {
            "typed" => req.format = OutputFormat::Typed,
            "json" => req.format = OutputFormat::Json,
            "desc" => req.desc = true,
            "no-maint" => req.no_maint = true,
            "up" => req.up = true,
            _ => {}
        }
    }
    s.api.stat(&req).unwrap_or_else(with_newline)
}

pub(crate) fn with_newline(mut msg: String) -> String {
    if !msg.ends_with('\n') {
        msg.push('\n');
    }
    msg
}

/// Finds a backend by name or `#id`.
pub(crate) fn find_backend<'a>(
    list: &'a [BackendInfo],
    name: &str,
) -> Option<(usize, &'a BackendInfo)> {
    let id = name.strip_prefix('#').and_then(|n| n.parse::<i32>().ok());
    list.iter().enumerate().find(|(_, b)| match id {
        Some(id) => b.id == id,
        None => b.name == name,
    })
}

/// A server designated as `<backend>/<server>` (names or `#id`s).
pub(crate) struct Found {
    pub target: ServerRef,
    pub backend: BackendInfo,
}

impl Found {
    pub(crate) fn server(&self) -> &crate::api::ServerInfo {
        &self.backend.servers[self.target.server_idx]
    }
}

pub(crate) fn find_server(s: &Session, spec: &str) -> Result<Found, String> {
    let Some((be, srv)) = spec.split_once('/').filter(|(_, s)| !s.is_empty()) else {
        return Err("Require 'backend/server'.\n".into());
    };
    let list = s.api.backends();
    let Some((bi, b)) = find_backend(&list, be) else {
        return Err("No such backend.\n".into());
    };
    let id = srv.strip_prefix('#').and_then(|n| n.parse::<u32>().ok());
    let Some(si) = b.servers.iter().position(|x| match id {
        Some(id) => x.id == id,
        None => x.name == srv,
    }) else {
        return Err("No such server.\n".into());
    };
    let target = ServerRef {
        backend_idx: bi,
        server_idx: si,
        backend: b.name.clone(),
        server: b.servers[si].name.clone(),
    };
    Ok(Found {
        target,
        backend: list.into_iter().nth(bi).expect("index from the same list"),
    })
}

fn change(s: &Session, f: &Found, c: ServerChange) -> String {
    match s.api.server_change(&f.target, c) {
        Ok(()) => String::new(),
        Err(e) => with_newline(e),
    }
}

fn show_servers_state(s: &mut Session, w: &[String]) -> String {
    let list = s.api.backends();
    let selected: Vec<&BackendInfo> = match w.get(3) {
        Some(name) => match find_backend(&list, name) {
            Some((_, b)) => vec![b],
            None => return "Can't find backend.\n".into(),
        },
        None => list.iter().collect(),
    };
    let mut out = format!("1\n{}\n", render::SERVERS_STATE_HEADER);
    for b in selected {
        for srv in &b.servers {
            out.push_str(&render::server_state_line(b, srv));
        }
    }
    out
}

const SESS_USAGE: &str = "Usage: show sess [<id> | all | help] [<options>*]\n\
Options:\n\
\x20 backend <b>   only display streams attached to this backend\n\
\x20 frontend <f>  only display streams attached to this frontend\n\
\x20 older <age>   only display streams older than <age> seconds\n\
\x20 server <b/s>  only display streams attached to this backend+server\n";

/// `strtoul(s, NULL, 0)`: `0x` hexadecimal, leading `0` octal, else decimal.
fn parse_id(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

fn show_sess(s: &mut Session, w: &[String]) -> String {
    let (mut id, mut be, mut fe, mut srv, mut older) = (None, None, None, None, None);
    let mut i = 2;
    while i < w.len() {
        let next = w.get(i + 1).map(String::as_str);
        match (w[i].as_str(), next) {
            ("help", _) => return SESS_USAGE.into(),
            ("all", _) => {}
            ("backend", Some(v)) => (be, i) = (Some(v), i + 1),
            ("frontend", Some(v)) => (fe, i) = (Some(v), i + 1),
            ("server", Some(v)) => (srv, i) = (Some(v), i + 1),
            ("older", Some(v)) => match v.parse::<u64>() {
                Ok(n) => (older, i) = (Some(n), i + 1),
                Err(_) => return format!("Invalid age '{v}' for 'older'.\n"),
            },
            ("show-uri" | "susp", _) => {}
            (x, _) if i == 2 && parse_id(x).is_some() => id = parse_id(x),
            (x, _) => return format!("Unsupported option '{x}'.\n{SESS_USAGE}"),
        }
        i += 1;
    }
    let srv = srv.map(|v| v.split_once('/').unwrap_or((v, "")));
    let mut out = String::new();
    for x in s.api.sessions() {
        let keep = id.is_none_or(|id| x.id == id)
            && be.is_none_or(|b| x.backend.as_deref() == Some(b))
            && fe.is_none_or(|f| x.frontend == f)
            && srv.is_none_or(|(b, n)| {
                x.backend.as_deref() == Some(b) && x.server.as_deref() == Some(n)
            })
            && older.is_none_or(|o| x.age.as_secs() > o);
        if keep {
            out.push_str(&render::session_line(&x));
        }
    }
    if id.is_some() && out.is_empty() {
        return "Session not found.\n".into();
    }
    out
}

fn shutdown_session(s: &mut Session, w: &[String]) -> String {
    match parse_id(arg(w, 2)).filter(|&id| id != 0) {
        None => "Session pointer expected (use 'show sess').\n".into(),
        Some(id) if s.api.shutdown_session(id) => String::new(),
        Some(_) => "No such session (use 'show sess').\n".into(),
    }
}

/// `show activity`: `date_now`, then one line per counter, HAProxy's
/// layout: `name: total [ worker1 worker2 ... ]`.
fn show_activity(s: &mut Session, _w: &[String]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!("date_now: {}.{:06}\n", now.as_secs(), now.subsec_micros());
    for (name, per) in s.api.activity() {
        let each: Vec<String> = per.iter().map(u64::to_string).collect();
        let total: u64 = per.iter().sum();
        out += &format!("{name}: {total} [ {} ]\n", each.join(" "));
    }
    out
}

fn show_pools(s: &mut Session, w: &[String]) -> String {
    let mut list = s.api.pools();
    let mut limit = usize::MAX;
    let mut i = 2;
    while i < w.len() {
        match w[i].as_str() {
            "byname" => list.sort_by(|a, b| a.name.cmp(&b.name)),
            "bysize" => list.sort_by_key(|p| std::cmp::Reverse(p.size)),
            "byusage" => {
                list.retain(|p| p.allocated > 0);
                list.sort_by_key(|p| std::cmp::Reverse(p.allocated.saturating_mul(p.size)));
            }
            "detailed" => {}
            "match" if i + 1 < w.len() => {
                let pfx = w[i + 1].clone();
                list.retain(|p| p.name.starts_with(&pfx));
                i += 1;
            }
            n => match n.parse() {
                Ok(n) => limit = n,
                Err(_) => {
                    return "show pools: expects [byname|bysize|byusage] [detailed] [match <pfx>] [<nb>]\n"
                        .into()
                }
            },
        }
        i += 1;
    }
    list.truncate(limit);
    render::pools(&list)
}

fn show_errors(s: &mut Session, w: &[String]) -> String {
    let mut proxy: Option<&str> = None;
    let (mut req, mut resp) = (true, true);
    for a in &w[2..] {
        match a.as_str() {
            "request" => resp = false,
            "response" => req = false,
            p if proxy.is_none() => proxy = Some(p),
            _ => {}
        }
    }
    let report = s.api.errors();
    let mut out = format!(
        "Total events captured on [{}] : {}\n",
        render::log_date(SystemTime::now()),
        report.total
    );
    let iid = proxy.and_then(|p| p.parse::<i32>().ok());
    for e in &report.errors {
        let side_ok = match e.side {
            crate::api::ErrorSide::Request => req,
            crate::api::ErrorSide::Response => resp,
        };
        let proxy_ok = match (proxy, iid) {
            (None, _) | (_, Some(-1)) => true,
            (_, Some(id)) => e.proxy_id == id || e.other.as_ref().is_some_and(|o| o.1 == id),
            (Some(name), None) => e.proxy == name || e.other.as_ref().is_some_and(|o| o.0 == name),
        };
        if side_ok && proxy_ok {
            out.push_str(&render::captured_error(e));
        }
    }
    out
}

fn disable_server(s: &mut Session, w: &[String]) -> String {
    match find_server(s, arg(w, 2)) {
        Ok(f) => change(s, &f, ServerChange::Admin(AdminState::Maint)),
        Err(e) => e,
    }
}

fn enable_server(s: &mut Session, w: &[String]) -> String {
    match find_server(s, arg(w, 2)) {
        Ok(f) => change(s, &f, ServerChange::Admin(AdminState::Ready)),
        Err(e) => e,
    }
}

/// Leading integer as `strtol` reads it, and what follows.
fn strtol(s: &str) -> (Option<i64>, &str) {
    let t = s.trim_start();
    let digits_at = usize::from(t.starts_with(['+', '-']));
    let n = t[digits_at..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if n == 0 {
        return (None, s);
    }
    let end = digits_at + n;
    let v = t[..end].parse::<i64>().unwrap_or(if t.starts_with('-') {
        i64::MIN
    } else {
        i64::MAX
    });
    (Some(v), &t[end..])
}

/// A weight argument (`<w>` or `<w>%` of the initial weight), as HAProxy
/// checks it. Returns the absolute weight.
pub(crate) fn parse_weight(text: &str, iweight: u32, dynamic: bool) -> Result<u32, &'static str> {
    if text.is_empty() {
        return Err("Require <weight> or <weight%>.\n");
    }
    let (v, rest) = strtol(text);
    let Some(mut w) = v else {
        return Err("Empty weight string empty or preceded by garbage\n");
    };
    if rest == "%" {
        if w < 0 {
            return Err("Relative weight must be positive.\n");
        }
        w = (i64::from(iweight) * w.min(25600) / 100).min(256);
    } else if !(0..=256).contains(&w) {
        return Err("Absolute weight can only be between 0 and 256 inclusive.\n");
    } else if !rest.is_empty() {
        return Err("Trailing garbage in weight string\n");
    }
    let w = w as u32;
    if w != 0 && w != iweight && !dynamic {
        return Err(
            "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.\n",
        );
    }
    Ok(w)
}

fn weight_change(s: &Session, f: &Found, text: &str) -> String {
    match parse_weight(text, f.server().iweight, f.backend.dynamic_weights) {
        Ok(w) => change(s, f, ServerChange::Weight(w)),
        Err(e) => e.into(),
    }
}

fn set_weight(s: &mut Session, w: &[String]) -> String {
    match find_server(s, arg(w, 2)) {
        Ok(f) => weight_change(s, &f, arg(w, 3)),
        Err(e) => e,
    }
}

fn get_weight(s: &mut Session, w: &[String]) -> String {
    match find_server(s, arg(w, 2)) {
        Ok(f) => format!("{} (initial {})\n", f.server().uweight, f.server().iweight),
        Err(e) => e,
    }
}

fn set_maxconn_server(s: &mut Session, w: &[String]) -> String {
    let f = match find_server(s, arg(w, 3)) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let text = arg(w, 4);
    if text.is_empty() {
        return "Require <maxconn>.\n".into();
    }
    match strtol(text) {
        (None, _) => "maxconn string empty or preceded by garbage\n".into(),
        (Some(_), rest) if !rest.is_empty() => "Trailing garbage in maxconn string\n".into(),
        (Some(v), _) => match u32::try_from(v) {
            Ok(v) => change(s, &f, ServerChange::Maxconn(v)),
            Err(_) => "maxconn must be between 0 and 4294967295.\n".into(),
        },
    }
}

fn set_addr(s: &Session, f: &Found, w: &[String]) -> String {
    let addr = arg(w, 4);
    if addr.is_empty() {
        return "set server <b>/<s> addr requires an address and optionally a port.\n".into();
    }
    let Ok(ip) = addr.parse::<IpAddr>() else {
        return format!("Invalid addr '{addr}'\n");
    };
    let port = if arg(w, 5) == "port" {
        let p = arg(w, 6);
        match p.parse::<u16>() {
            Ok(p) => Some(p),
            Err(_) => return format!("problem converting port '{p}' to an int\n"),
        }
    } else {
        None
    };
    let srv = f.server();
    if srv.addr.is_none() {
        // A UNIX socket, or a dynamic server added by name (no address).
        return "Update for the current server address family is only supported through configuration file by 'stats socket command'\n".into();
    }
    let mut msg = String::new();
    if srv.addr != Some(ip) {
        let old = srv.addr.map_or_else(|| "(none)".into(), |a| a.to_string());
        msg = format!("IP changed from '{old}' to '{ip}'");
    }
    if let Some(p) = port.filter(|&p| p != srv.port) {
        if !msg.is_empty() {
            msg.push_str(", ");
        }
        msg.push_str(&format!("port changed from '{}' to '{p}'", srv.port));
    }
    if msg.is_empty() {
        return "nothing changed\n".into();
    }
    match s
        .api
        .server_change(&f.target, ServerChange::Addr { ip, port })
    {
        Ok(()) => format!("{msg} by 'stats socket command'\n"),
        Err(e) => with_newline(e),
    }
}

fn set_server(s: &mut Session, w: &[String]) -> String {
    let f = match find_server(s, arg(w, 2)) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let value = arg(w, 4);
    match arg(w, 3) {
        "weight" => weight_change(s, &f, value),
        "state" => {
            let st = match value {
                "ready" => AdminState::Ready,
                "drain" => AdminState::Drain,
                "maint" => AdminState::Maint,
                _ => {
                    return "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n"
                        .into()
                }
            };
            change(s, &f, ServerChange::Admin(st))
        }
        "health" => {
            let h = match value {
                "up" => ForcedHealth::Up,
                "stopping" => ForcedHealth::Stopping,
                "down" => ForcedHealth::Down,
                _ => {
                    return "'set server <srv> health' expects 'up', 'stopping', or 'down'.\n"
                        .into()
                }
            };
            change(s, &f, ServerChange::Health(h))
        }
        "agent" => {
            if f.server().agent_state & check_flags::ENABLED == 0 {
                return "agent checks are not enabled on this server.\n".into();
            }
            match value {
                "up" => change(s, &f, ServerChange::Agent { up: true }),
                "down" => change(s, &f, ServerChange::Agent { up: false }),
                _ => "'set server <srv> agent' expects 'up' or 'down'.\n".into(),
            }
        }
        "addr" => set_addr(s, &f, w),
        "fqdn" => crate::dns::set_fqdn(s, &f.target, value),
        sub @ ("agent-addr" | "agent-port" | "agent-send" | "check-addr" | "check-port"
        | "name" | "ssl") => {
            format!("'set server <srv> {sub}' is not supported by Fairlead.\n")
        }
        _ => "usage: set server <backend>/<server> addr | agent | health | state | weight\n".into(),
    }
}

const PROFILING_USAGE: &str = "Expects either 'all', 'status', 'tasks', 'memory', 'byaddr', \
'bytime', 'aggr' or a max number of output lines.\n";

fn show_profiling(s: &mut Session, w: &[String]) -> String {
    let (mut status, mut tasks) = (true, true);
    let mut by_time = false;
    let mut by_name = false;
    let mut max = usize::MAX;
    for a in &w[2..] {
        match a.as_str() {
            "all" => (status, tasks) = (true, true),
            "status" => (status, tasks) = (true, false),
            "tasks" => (status, tasks) = (false, true),
            "memory" => (status, tasks) = (false, false),
            "bytime" => by_time = true,
            "byaddr" | "byctx" => by_name = true,
            "aggr" => {}
            n => match n.parse() {
                Ok(n) => max = n,
                Err(_) => return PROFILING_USAGE.into(),
            },
        }
    }
    let r = s.api.profiling();
    let mut out = String::new();
    if status {
        out.push_str(&render::profiling_status(&r));
    }
    if tasks {
        let mut rows = r.rows.clone();
        if by_time {
            rows.sort_by_key(|t| std::cmp::Reverse(t.cpu_ns));
        } else if by_name {
            rows.sort_by(|a, b| a.name.cmp(&b.name));
        } else {
            rows.sort_by_key(|t| std::cmp::Reverse(t.calls));
        }
        rows.truncate(max);
        out.push_str(&render::tasks_activity(&r, &rows));
    }
    out
}

fn set_profiling(s: &mut Session, w: &[String]) -> String {
    match arg(w, 2) {
        "memory" => return "Memory profiling not compiled in.\n".into(),
        "tasks" => {}
        _ => return "Expects either 'tasks' or 'memory'.\n".into(),
    }
    let mode = match arg(w, 3) {
        "on" => TasksProfiling::On,
        "off" => TasksProfiling::Off,
        "auto" => TasksProfiling::Auto,
        _ => return "Expects either 'on', 'auto' or 'off'.\n".into(),
    };
    match s.api.set_profiling_tasks(mode) {
        Ok(()) => String::new(),
        Err(e) => with_newline(e),
    }
}

fn show_ssl_cert(s: &mut Session, w: &[String]) -> String {
    let certs = s.api.ssl_certs();
    let want = arg(w, 3);
    if want.is_empty() {
        let mut out = String::from("# transaction\n# filename\n");
        for c in &certs {
            out.push_str(&c.file);
            out.push('\n');
        }
        return out;
    }
    let Some(c) = certs.iter().find(|c| c.file == want) else {
        return "Can't display the certificate: Not found or the certificate is a bundle!\n".into();
    };
    format!(
        "Filename: {}\nStatus: Used\nSerial: {}\nnotBefore: {}\nnotAfter: {}\n\
Subject Alternative Name: {}\nAlgorithm: {}\nSubject: {}\nIssuer: {}\n",
        c.file, c.serial, c.not_before, c.not_after, c.san, c.algorithm, c.subject, c.issuer
    )
}

fn reload_ssl_certs(s: &mut Session, _: &[String]) -> String {
    match s.api.reload_ssl_certs() {
        Ok(m) | Err(m) => with_newline(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_as_haproxy() {
        assert_eq!(parse_weight("50%", 10, true), Ok(5));
        assert_eq!(parse_weight("100%", 10, false), Ok(10));
        assert_eq!(parse_weight("0%", 10, false), Ok(0));
        assert_eq!(parse_weight("300%", 100, true), Ok(256));
        assert_eq!(parse_weight("999999%", 1, true), Ok(256));
        assert_eq!(parse_weight("256", 1, true), Ok(256));
        assert_eq!(
            parse_weight("257", 1, true),
            Err("Absolute weight can only be between 0 and 256 inclusive.\n")
        );
        assert_eq!(
            parse_weight("-5%", 1, true),
            Err("Relative weight must be positive.\n")
        );
        assert_eq!(
            parse_weight("12x", 1, true),
            Err("Trailing garbage in weight string\n")
        );
        assert_eq!(
            parse_weight("x", 1, true),
            Err("Empty weight string empty or preceded by garbage\n")
        );
        assert_eq!(
            parse_weight("", 1, true),
            Err("Require <weight> or <weight%>.\n")
        );
        assert!(parse_weight("50%", 10, false)
            .unwrap_err()
            .contains("static LB"));
    }

    #[test]
    fn ids_as_strtoul() {
        assert_eq!(parse_id("0x1f"), Some(31));
        assert_eq!(parse_id("017"), Some(15));
        assert_eq!(parse_id("42"), Some(42));
        assert_eq!(parse_id("zz"), None);
    }

    #[test]
    fn table_is_consistent() {
        for c in all_commands() {
            assert!(c.usage.starts_with(&c.words.join(" ")), "{}", c.usage);
        }
    }
}
