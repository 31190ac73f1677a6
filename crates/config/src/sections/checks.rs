//! Active health check keywords of proxy sections: `option httpchk`,
//! `option tcp-check`, `option redis-check`, the protocol checks (`option
//! mysql-check`, `pgsql-check`, `smtpchk`, `ldap-check`, `ssl-hello-chk`,
//! `spop-check`), `http-check` and `tcp-check`.
//!
//! As in HAProxy 2.6, the check type (`option ...`) and the rule lists
//! are kept apart while parsing: `http-check` rules only count once
//! `option httpchk` is set, `tcp-check` rules once `option tcp-check` is.
//! A section inherits its defaults section's active rule list; its own
//! first rule of a kind starts a fresh list instead of appending to the
//! inherited one. HTTP checks are limited to one request: at most one
//! `connect`, one `send` and one `expect`.

use crate::model::*;

use super::balance::Warnings;

/// The `option` that selects the check type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum ChkOpt {
    #[default]
    None,
    Http(HttpReq),
    Tcp,
    Redis,
    /// A protocol check (`mysql-check`, `pgsql-check`, ...), complete.
    Proto(HealthCheck),
}

/// The request of `option httpchk` or of an `http-check send` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HttpReq {
    pub method: Option<String>,
    pub uri: Option<String>,
    pub version: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HttpRule {
    Connect {
        port: Option<u16>,
        proto: Option<CheckProto>,
        default: bool,
    },
    Send(HttpReq),
    Expect(Expect),
    Comment,
}

/// Check settings of a section being parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckDraft {
    pub option: ChkOpt,
    pub http: Vec<(Location, HttpRule)>,
    /// The `http` rules were written in this section (not inherited).
    pub http_own: bool,
    pub tcp: Vec<TcpCheckRule>,
    pub tcp_own: bool,
    /// `http-check disable-on-404` (a proxy option, inherited from the
    /// defaults section whatever the rule lists do).
    pub disable_404: bool,
    /// Where `option httpchk`'s request applies among the `http` rules:
    /// the number of rules written before it. As in HAProxy, whichever of
    /// the option and an `http-check send` comes later overrides the
    /// fields it sets.
    pub option_at: usize,
}

impl CheckDraft {
    /// What a section inherits from a defaults section: the option, and
    /// the rule list that option uses (tcp-check rules are also reachable
    /// by a later `option tcp-check`).
    pub fn inherited(&self) -> CheckDraft {
        CheckDraft {
            option: self.option.clone(),
            http: if matches!(self.option, ChkOpt::Http(_)) {
                self.http.clone()
            } else {
                Vec::new()
            },
            http_own: false,
            tcp: self.tcp.clone(),
            tcp_own: false,
            disable_404: self.disable_404,
            option_at: self.option_at,
        }
    }

    /// The final check of a backend. Warns about ignored rules.
    pub fn build(&self, unused: &mut Vec<(Location, String)>) -> HealthCheck {
        match &self.option {
            ChkOpt::None | ChkOpt::Tcp | ChkOpt::Redis | ChkOpt::Proto(_) if self.http_own => {
                if let Some((loc, _)) = self.http.first() {
                    unused.push((
                        loc.clone(),
                        "uses http-check rules without 'option httpchk', so the rules are ignored."
                            .into(),
                    ));
                }
            }
            _ => {}
        }
        match &self.option {
            ChkOpt::None => HealthCheck::Tcp,
            ChkOpt::Proto(hc) => hc.clone(),
            ChkOpt::Tcp => HealthCheck::TcpCheck(self.tcp.clone()),
            ChkOpt::Redis => HealthCheck::TcpCheck(vec![
                TcpCheckRule::Send(b"*1\r\n$4\r\nPING\r\n".to_vec()),
                TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+PONG\r\n".into()))),
            ]),
            ChkOpt::Http(req) => {
                let mut hc = HttpCheck {
                    disable_on_404: self.disable_404,
                    ..HttpCheck::default()
                };
                for (i, (_, rule)) in self.http.iter().enumerate() {
                    if i == self.option_at {
                        apply_req(&mut hc, req);
                    }
                    match rule {
                        HttpRule::Connect {
                            port,
                            proto,
                            default,
                        } => {
                            hc.port = *port;
                            hc.proto = *proto;
                            hc.own_connect = !default;
                        }
                        HttpRule::Send(r) => apply_req(&mut hc, r),
                        HttpRule::Expect(e) => hc.expect = Some(e.clone()),
                        HttpRule::Comment => {}
                    }
                }
                if self.option_at >= self.http.len() {
                    apply_req(&mut hc, req);
                }
                HealthCheck::Http(hc)
            }
        }
    }
}

/// Merges a request into the check: given parts override, headers are
/// replaced.
fn apply_req(hc: &mut HttpCheck, r: &HttpReq) {
    if let Some(m) = &r.method {
        hc.method = m.clone();
    }
    if let Some(u) = &r.uri {
        hc.uri = u.clone();
    }
    if let Some(v) = &r.version {
        hc.version = v.clone();
    }
    hc.headers = r.headers.clone();
    if let Some(b) = &r.body {
        hc.body = Some(b.clone());
    }
}

/// `option httpchk`, `option tcp-check`, `option redis-check` (`words`
/// starts with `option`).
pub(crate) fn parse_option(
    cd: &mut CheckDraft,
    words: &[String],
    warns: &mut Warnings,
) -> Result<(), String> {
    let args = &words[2..];
    match words[1].as_str() {
        "httpchk" => {
            if args.len() > 3 {
                return Err("cannot handle more than 3 arguments.".into());
            }
            let mut req = HttpReq::default();
            match args {
                [] => {}
                [uri] => req.uri = Some(uri.clone()),
                [m, uri, rest @ ..] => {
                    req.method = Some(m.clone());
                    req.uri = Some(uri.clone());
                    if let Some(v) = rest.first() {
                        legacy_version(&mut req, v, warns)?;
                    }
                }
            }
            if !cd.http_own {
                cd.http.clear();
                cd.http_own = true;
            }
            cd.option_at = cd.http.len();
            cd.option = ChkOpt::Http(req);
        }
        "tcp-check" => {
            if !args.is_empty() {
                return Err("takes no argument".into());
            }
            cd.option = ChkOpt::Tcp;
        }
        "redis-check" => {
            if !args.is_empty() {
                return Err("takes no argument".into());
            }
            cd.option = ChkOpt::Redis;
        }
        other => cd.option = ChkOpt::Proto(parse_proto_option(other, args)?),
    }
    Ok(())
}

/// The protocol checks' options: `mysql-check`, `pgsql-check`, `smtpchk`,
/// `ldap-check`, `ssl-hello-chk` and `spop-check` (`args` after the name).
fn parse_proto_option(name: &str, args: &[String]) -> Result<HealthCheck, String> {
    let none = |hc: HealthCheck| match args.first() {
        Some(a) => Err(format!("cannot handle unexpected argument '{a}'.")),
        None => Ok(hc),
    };
    match name {
        "mysql-check" => {
            let user = match args {
                [] => None,
                [u, ..] if u != "user" => {
                    return Err(format!(
                        "only supports optional values: 'user' (got '{u}')."
                    ))
                }
                [_] => return Err("'user' expects <username> as argument.".into()),
                [_, name] => Some(MysqlUser {
                    name: name.clone(),
                    post41: true,
                }),
                [_, name, v] if v == "post-41" || v == "pre-41" => Some(MysqlUser {
                    name: name.clone(),
                    post41: v == "post-41",
                }),
                [_, _, v] => {
                    return Err(format!(
                        "'user' only supports optional values: 'post-41' and 'pre-41' (got '{v}')."
                    ))
                }
                [_, _, _, extra, ..] => {
                    return Err(format!("cannot handle unexpected argument '{extra}'."))
                }
            };
            if user.as_ref().is_some_and(|u| u.name.is_empty()) {
                return Err("'user' expects <username> as argument.".into());
            }
            Ok(HealthCheck::Mysql(user))
        }
        "pgsql-check" => match args {
            [u, name] if u == "user" && !name.is_empty() => {
                Ok(HealthCheck::Pgsql { user: name.clone() })
            }
            [u, _] | [u] if u != "user" => Err(format!(
                "only supports optional values: 'user' (got '{u}')."
            )),
            [_, _, extra, ..] => Err(format!("cannot handle unexpected argument '{extra}'.")),
            _ => Err("'user' expects <username> as argument.".into()),
        },
        "smtpchk" => {
            if let Some(extra) = args.get(2) {
                return Err(format!("cannot handle unexpected argument '{extra}'."));
            }
            // As HAProxy: anything but `HELO|EHLO <domain>` falls back to
            // the default command.
            let command = match args {
                [verb, domain] if (verb == "HELO" || verb == "EHLO") && !domain.is_empty() => {
                    format!("{verb} {domain}")
                }
                _ => "HELO localhost".to_string(),
            };
            Ok(HealthCheck::Smtp { command })
        }
        "ldap-check" => none(HealthCheck::Ldap),
        "ssl-hello-chk" => none(HealthCheck::SslHello),
        _ => none(HealthCheck::Spop),
    }
}

/// The version argument of `option httpchk`, with the deprecated
/// `\r\n`-separated headers and body after it.
fn legacy_version(req: &mut HttpReq, v: &str, warns: &mut Warnings) -> Result<(), String> {
    let (head, body) = match v.find("\r\n\r\n") {
        Some(i) => (&v[..i], Some(&v[i + 4..])),
        None => (v, None),
    };
    let (version, hdrs) = match head.find("\r\n") {
        Some(i) => (&head[..i], Some(&head[i + 2..])),
        None => (head, None),
    };
    req.version = Some(version.to_string());
    if hdrs.is_some() || body.is_some() {
        warns.push("hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead.".into());
    }
    for line in hdrs.into_iter().flat_map(|h| h.split("\r\n")) {
        let Some((n, val)) = line.split_once(':') else {
            return Err(format!("unable to parse the request header '{line}'."));
        };
        if n.is_empty() || n.contains(char::is_whitespace) {
            return Err(format!("unable to parse the request header '{line}'."));
        }
        req.headers.push((n.to_string(), val.trim().to_string()));
    }
    if let Some(b) = body {
        req.body = Some(b.to_string());
    }
    Ok(())
}

fn value<'a>(a: &'a [String], i: usize, what: &str) -> Result<&'a str, String> {
    match a.get(i + 1) {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("'{}' expects {what} as argument.", a[i])),
    }
}

/// A `port` value of `connect`: a number from 1 to 65535.
fn connect_port(v: &str) -> Result<u16, String> {
    if !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "port expressions ('{v}') are not implemented yet in Fairlead; use a port number"
        ));
    }
    match v.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!(
            "expects a valid TCP port (from range 1 to 65535) or a sample expression, got {v}."
        )),
    }
}

/// `connect [default] [port <N>] [addr <ip>] [ssl] [sni <name>] [alpn
/// <list>] [send-proxy] [via-socks4] [linger] [proto <name>] [comment
/// <msg>]` arguments, and the `proto` given. `http` refuses what the HTTP
/// check does not do (all but `default`, `port`, `proto` and `comment`).
/// As in HAProxy, `proto` must be `h1` or `h2` for an HTTP check and
/// `none` for a tcp-check.
fn parse_connect(a: &[String], http: bool) -> Result<(TcpConnect, Option<CheckProto>), String> {
    let mut c = TcpConnect::default();
    let mut proto = None;
    let mut i = 0;
    while i < a.len() {
        let w = a[i].as_str();
        if http
            && !matches!(w, "default" | "port" | "proto" | "comment")
            && KNOWN_CONNECT.contains(&w)
        {
            return Err(format!(
                "connect option '{w}' of http-check is not implemented yet in Fairlead"
            ));
        }
        match w {
            "default" => c.default = true,
            "port" => {
                c.port = Some(connect_port(value(a, i, "a port number")?)?);
                i += 1;
            }
            "addr" => {
                let v = value(a, i, "<ipv4|ipv6>")?;
                let ip = v
                    .parse::<std::net::IpAddr>()
                    .map_err(|_| format!("'addr' expects an IPv4 or IPv6 address (got '{v}')"))?;
                c.addr = Some(ip);
                i += 1;
            }
            "comment" => {
                value(a, i, "a string")?;
                i += 1;
            }
            "ssl" => c.ssl = true,
            "sni" => {
                c.sni = Some(value(a, i, "a string")?.to_string());
                i += 1;
            }
            "alpn" => {
                let v = value(a, i, "a string")?;
                c.alpn = Some(crate::tls::parse_alpn(v)?);
                i += 1;
            }
            "send-proxy" => c.send_proxy = true,
            "via-socks4" => c.via_socks4 = true,
            "linger" => c.linger = true,
            "proto" => {
                let v = value(a, i, "a MUX protocol")?;
                // `fcgi` is an HTTP protocol Fairlead's checks do not speak.
                let p = match CheckProto::parse(v) {
                    Ok(p) => Ok(p),
                    Err(e) if v == "fcgi" => Err(e),
                    Err(e) => return Err(format!("'proto' : {e}.")),
                };
                if matches!(p, Ok(CheckProto::None)) == http {
                    let kind = if http { "http-check" } else { "tcp-check" };
                    return Err(format!("'proto' : invalid MUX protocol '{v}' for {kind}."));
                }
                proto = Some(p.map_err(|e| format!("'proto' : {e}."))?);
                i += 1;
            }
            other => {
                return Err(format!("expects 'comment', 'port', 'addr', 'send-proxy', 'via-socks4', 'ssl', 'sni', 'alpn', 'proto' or 'linger' but got '{other}' as argument."))
            }
        }
        i += 1;
    }
    Ok((c, proto))
}

const KNOWN_CONNECT: [&str; 9] = [
    "addr",
    "ssl",
    "sni",
    "alpn",
    "send-proxy",
    "via-socks4",
    "linger",
    "proto",
    "comment",
];

/// `http-check <rule> ...`.
pub(crate) fn parse_http_check(
    cd: &mut CheckDraft,
    words: &[String],
    loc: &Location,
) -> Result<(), String> {
    let Some(kind) = words.get(1) else {
        return Err(
            "expects 'disable-on-404', 'send-state', 'comment', 'connect', 'send' or 'expect'"
                .into(),
        );
    };
    let a = &words[2..];
    let rule = match kind.as_str() {
        "disable-on-404" => {
            if let Some(extra) = a.first() {
                return Err(format!("cannot handle unexpected argument '{extra}'."));
            }
            cd.disable_404 = true;
            return Ok(());
        }
        "send-state" | "set-var" | "unset-var" => {
            return Err("is not implemented yet in Fairlead".into())
        }
        "comment" => {
            value(words, 1, "a string")?;
            HttpRule::Comment
        }
        "connect" => {
            let (c, proto) = parse_connect(a, true)?;
            HttpRule::Connect {
                port: c.port,
                proto,
                default: c.default,
            }
        }
        "send" => HttpRule::Send(parse_http_send(a)?),
        "expect" => HttpRule::Expect(parse_expect(a, true)?),
        other => {
            return Err(format!(
                "'http-check' only supports 'disable-on-404', 'send-state', 'comment', 'connect', 'send', 'expect' but got '{other}'"
            ))
        }
    };
    if !cd.http_own {
        cd.http.clear();
        cd.http_own = true;
        // An inherited `option httpchk`'s request is part of the inherited
        // rules (HAProxy's implicit send rule): a section's own rules
        // replace it too, so `http-check send uri /x` under a defaults
        // `option httpchk GET /health` sends `OPTIONS /x`.
        if let ChkOpt::Http(r) = &mut cd.option {
            *r = HttpReq::default();
        }
        cd.option_at = 0;
    }
    let has = |f: fn(&HttpRule) -> bool| cd.http.iter().any(|(_, r)| f(r));
    match &rule {
        HttpRule::Connect { .. } if has(|r| matches!(r, HttpRule::Connect { .. })) => {
            return Err("several 'http-check connect' rules (multi-step checks) are not implemented yet in Fairlead".into())
        }
        HttpRule::Connect { .. } if has(|r| !matches!(r, HttpRule::Comment)) => {
            return Err("first step MUST also be a 'connect', optionally preceded by a 'set-var', an 'unset-var' or a 'comment', when there is a 'connect' step in the tcp-check ruleset".into())
        }
        HttpRule::Send(_) if has(|r| matches!(r, HttpRule::Send(_))) => {
            return Err("several 'http-check send' rules (multi-step checks) are not implemented yet in Fairlead".into())
        }
        HttpRule::Send(_) if has(|r| matches!(r, HttpRule::Expect(_))) => {
            return Err("unable to add http-check send rule after an expect rule (missing connect rule).".into())
        }
        HttpRule::Expect(_) if has(|r| matches!(r, HttpRule::Expect(_))) => {
            return Err("several 'http-check expect' rules are not implemented yet in Fairlead".into())
        }
        _ => {}
    }
    cd.http.push((loc.clone(), rule));
    Ok(())
}

/// `http-check send` arguments.
fn parse_http_send(a: &[String]) -> Result<HttpReq, String> {
    let mut r = HttpReq::default();
    let mut i = 0;
    while i < a.len() {
        match a[i].as_str() {
            "meth" => r.method = Some(value(a, i, "a string")?.to_string()),
            "uri" => r.uri = Some(value(a, i, "a string")?.to_string()),
            "ver" => r.version = Some(value(a, i, "a string")?.to_string()),
            "body" => r.body = Some(value(a, i, "a string")?.to_string()),
            "comment" => {
                value(a, i, "a string")?;
            }
            "hdr" => {
                let (Some(n), Some(v)) = (a.get(i + 1), a.get(i + 2)) else {
                    return Err("'hdr' expects <name> and <value> as arguments".into());
                };
                if n.is_empty() || v.is_empty() {
                    return Err("'hdr' expects <name> and <value> as arguments".into());
                }
                if n.eq_ignore_ascii_case("host") {
                    if let Some((_, prev)) =
                        r.headers.iter().find(|(h, _)| h.eq_ignore_ascii_case("host"))
                    {
                        return Err(format!(
                            "'{n}' header already defined (previous value is '{prev}')"
                        ));
                    }
                }
                // Content-Length and Transfer-Encoding are computed, as in
                // HAProxy.
                if !n.eq_ignore_ascii_case("content-length")
                    && !n.eq_ignore_ascii_case("transfer-encoding")
                {
                    r.headers.push((n.clone(), v.clone()));
                }
                i += 1;
            }
            "uri-lf" | "body-lf" => {
                return Err(format!(
                    "'{}' (log-format strings) is not implemented yet in Fairlead",
                    a[i]
                ))
            }
            other => {
                return Err(format!("expects 'comment', 'meth', 'uri', 'uri-lf', 'ver', 'hdr', 'body' or 'body-lf' but got '{other}' as argument."))
            }
        }
        i += 2;
    }
    Ok(r)
}

/// `tcp-check <rule> ...`.
pub(crate) fn parse_tcp_check(cd: &mut CheckDraft, words: &[String]) -> Result<(), String> {
    let Some(kind) = words.get(1) else {
        return Err("expects 'comment', 'connect', 'send', 'send-binary' or 'expect'".into());
    };
    let a = &words[2..];
    let rule = match kind.as_str() {
        "comment" => TcpCheckRule::Comment(value(words, 1, "a string")?.to_string()),
        "connect" => TcpCheckRule::Connect(parse_connect(a, false)?.0),
        "send" | "send-binary" => {
            let Some(data) = a.first().filter(|d| !d.is_empty()) else {
                return Err(format!(
                    "'{kind}' expects a {} as argument",
                    if kind == "send" { "string" } else { "binary string" }
                ));
            };
            match a.get(1).map(String::as_str) {
                None => {}
                Some("comment") => {
                    value(a, 1, "a string")?;
                    if a.len() > 3 {
                        return Err(format!("expects 'comment' but got '{}' as argument.", a[3]));
                    }
                }
                Some(other) => {
                    return Err(format!("expects 'comment' but got '{other}' as argument."))
                }
            }
            TcpCheckRule::Send(if kind == "send" {
                data.as_bytes().to_vec()
            } else {
                parse_hex(data)?
            })
        }
        "expect" => TcpCheckRule::Expect(parse_expect(a, false)?),
        "send-lf" | "send-binary-lf" | "set-var" | "unset-var" => {
            return Err("is not implemented yet in Fairlead".into())
        }
        other => {
            return Err(format!(
                "'tcp-check' only supports 'comment', 'connect', 'send', 'send-binary', 'expect' but got '{other}'"
            ))
        }
    };
    if !cd.tcp_own {
        cd.tcp.clear();
        cd.tcp_own = true;
    }
    if matches!(rule, TcpCheckRule::Connect(_)) {
        // HAProxy: when a ruleset has a connect, it must be the first
        // step (comments aside).
        if let Some(first) = cd
            .tcp
            .iter()
            .find(|r| !matches!(r, TcpCheckRule::Comment(_)))
        {
            if !matches!(first, TcpCheckRule::Connect(_)) {
                return Err("first step MUST also be a 'connect', optionally preceded by a 'set-var', an 'unset-var' or a 'comment', when there is a 'connect' step in the tcp-check ruleset".into());
            }
        }
    }
    cd.tcp.push(rule);
    Ok(())
}

/// A hexadecimal string (`send-binary`, `expect binary`).
pub(crate) fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!(
            "'{s}' invalid binary string (an hexadecimal string must have an even number of digits)."
        ));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .filter(|_| s.as_bytes()[i..i + 2].iter().all(u8::is_ascii_hexdigit))
                .ok_or_else(|| format!("'{s}' invalid binary string (not hexadecimal)."))
        })
        .collect()
}

/// A light syntax check of a regular expression: balanced parentheses and
/// brackets, no dangling backslash.
pub(crate) fn check_regex(re: &str) -> Result<(), String> {
    let mut depth = 0i32;
    let mut chars = re.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            // The guard also skips the escaped character.
            '\\' if chars.next().is_none() => {
                return Err(format!("invalid regex '{re}': trailing backslash"));
            }
            '[' if !in_class => {
                in_class = true;
                // A ']' right after '[' or '[^' is literal.
                if chars.peek() == Some(&'^') {
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                }
            }
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("invalid regex '{re}': unmatched ')'"));
                }
            }
            _ => {}
        }
    }
    if in_class {
        return Err(format!("invalid regex '{re}': missing ']'"));
    }
    if depth != 0 {
        return Err(format!("invalid regex '{re}': missing ')'"));
    }
    Ok(())
}

/// `status` codes: `200`, `200-399`, `200,301-303`.
fn parse_statuses(p: &str) -> Result<Vec<(u16, u16)>, String> {
    p.split(',')
        .map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let num = |s: &str| {
                s.parse::<u16>()
                    .ok()
                    .filter(|_| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| {
                        format!("invalid status code '{s}' in the list of status codes '{p}'")
                    })
            };
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("invalid range of status codes '{p}'"));
            }
            Ok((a, b))
        })
        .collect()
}

/// The arguments of `http-check expect` (`http`) or `tcp-check expect`.
pub(crate) fn parse_expect(a: &[String], http: bool) -> Result<Expect, String> {
    if a.is_empty() {
        return Err("expects at least a matching pattern as arguments".into());
    }
    let mut negate = false;
    let mut kind: Option<ExpectKind> = None;
    let mut min_recv = None;
    let mut i = 0;
    while i < a.len() {
        let mut w = a[i].as_str();
        let mut bang = false;
        while let Some(rest) = w.strip_prefix('!') {
            negate = !negate;
            bang = true;
            w = rest;
        }
        if w.is_empty() {
            i += 1;
            if i == a.len() {
                return Err("'!' must be followed by a match keyword".into());
            }
            continue;
        }
        let tcp_only = matches!(w, "binary" | "rbinary" | "binary-lf");
        let http_only = matches!(w, "status" | "rstatus" | "hdr" | "fhdr");
        if (http && tcp_only) || (!http && http_only) {
            return Err(if http {
                format!("'only supports min-recv, [!]string', '[!]rstring', '[!]string-lf', '[!]status', '[!]rstatus', [!]hdr, [!]fhdr or comment but got '{w}' as argument.")
            } else {
                format!("'only supports min-recv, '[!]binary', '[!]string', '[!]rstring', '[!]string-lf''[!]rbinary', '[!]binary-lf' or comment but got '{w}' as argument.")
            });
        }
        match w {
            "string" | "rstring" | "binary" | "rbinary" | "status" | "rstatus" => {
                if kind.is_some() {
                    return Err("only one pattern expected".into());
                }
                let Some(p) = a.get(i + 1).filter(|p| !p.is_empty()) else {
                    return Err(format!("'{w}' expects a <pattern> as argument"));
                };
                kind = Some(match w {
                    "string" => ExpectKind::String(p.clone()),
                    "rstring" => {
                        check_regex(p)?;
                        ExpectKind::RString(p.clone())
                    }
                    "binary" => ExpectKind::Binary(parse_hex(p)?),
                    "rbinary" => {
                        check_regex(p)?;
                        ExpectKind::RBinary(p.clone())
                    }
                    "status" => ExpectKind::Status(parse_statuses(p)?),
                    _ => {
                        check_regex(p)?;
                        ExpectKind::RStatus(p.clone())
                    }
                });
                i += 1;
            }
            "string-lf" | "binary-lf" | "hdr" | "fhdr" | "custom" => {
                return Err(format!("'{w}' matching is not implemented yet in Fairlead"))
            }
            _ if bang => {
                return Err(format!("[!] not supported with '{w}'"));
            }
            "comment" | "on-success" | "on-error" => {
                value(a, i, "a string")?;
                i += 1;
            }
            "min-recv" if !http => {
                let v = value(a, i, "an integer")?;
                let n: i64 = v.parse().map_err(|_| {
                    format!("'min-recv' expects an integer as argument (got '{v}').")
                })?;
                if !(-1..=i64::from(i32::MAX)).contains(&n) {
                    return Err(format!("'min-recv' value '{v}' is out of range."));
                }
                // -1 is HAProxy's "unset".
                min_recv = usize::try_from(n).ok();
                i += 1;
            }
            "min-recv" | "ok-status" | "error-status" | "tout-status" | "status-code" => {
                return Err(format!(
                    "expect option '{w}' is not implemented yet in Fairlead"
                ))
            }
            _ => {
                return Err(format!(
                    "unknown argument '{w}' (expected {} <pattern>)",
                    if http {
                        "[!] status|rstatus|string|rstring"
                    } else {
                        "[!] string|rstring|binary"
                    }
                ))
            }
        }
        i += 1;
    }
    let Some(kind) = kind else {
        return Err("expects at least a matching pattern as arguments".into());
    };
    Ok(Expect {
        negate,
        kind,
        min_recv,
    })
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
