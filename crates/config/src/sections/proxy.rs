//! Keywords of `defaults`, `frontend`, `backend` and `listen` sections.
//!
//! Validity per section follows HAProxy's keyword matrix: a keyword that is
//! not allowed in `defaults` is an error there; in a frontend or backend
//! lacking the needed capability it is ignored with a warning, as HAProxy
//! does, except `bind`, `server` and `default-server`, which are errors.

use super::{balance, checks, Draft, Kind};
use crate::diag::Diags;
use crate::keywords::{lookup, suggest_keyword, Status, CATALOG};
use crate::model::*;
use crate::units::{parse_time, parse_uint};

/// `listen_budget`: listening addresses the `bind` lines of the rest of
/// the configuration may still expand to (see `bind::MAX_LISTEN_ADDRS`).
pub(crate) fn keyword(
    d: &mut Draft,
    diags: &mut Diags,
    all: &[String],
    loc: &Location,
    listen_budget: &mut usize,
) {
    let (prefix, words) = match all[0].as_str() {
        "no" | "default" => (Some(all[0].as_str()), &all[1..]),
        _ => (None, all),
    };
    let sec = d.kind.word();
    if words.is_empty() {
        diags.alert(loc, format!("'{}' expects a keyword to apply to", all[0]));
        return;
    }
    let kw = words[0].as_str();
    let k = match lookup(words, false) {
        // Only frontends and listen sections run the one implemented
        // `http-request` action; elsewhere every action is "not yet".
        Some(k) if k.name == "http-request use-service" && k.secs & d.kind.flag() == 0 => {
            lookup(&words[..1], false)
        }
        k => k,
    };
    let Some(k) = k else {
        let hint = suggest_keyword(words, d.kind.flag())
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        match kw {
            "stats" => diags.alert(
                loc,
                match words.get(1) {
                    Some(p) => format!("unknown stats parameter '{p}', expects {STATS_KEYWORDS}."),
                    None => format!("missing keyword in 'stats', expects {STATS_KEYWORDS}."),
                },
            ),
            "option" if words.len() < 2 => diags.alert(loc, "'option' expects an option name"),
            "option" => diags.alert(
                loc,
                format!("unknown option '{}' in '{sec}' section{hint}", words[1]),
            ),
            "timeout" => {
                let got = words.get(1).map(String::as_str).unwrap_or("");
                diags.alert(
                    loc,
                    format!(
                        "'timeout' supports 'client', 'server', 'connect', 'check', 'queue', 'http-keep-alive', 'http-request', 'tarpit', 'tunnel', 'client-fin' and 'server-fin' (got '{got}')"
                    ),
                );
            }
            _ => diags.alert(
                loc,
                format!("unknown keyword '{kw}' in '{sec}' section{hint}"),
            ),
        }
        return;
    };
    let name = k.name;
    if let Some(pfx) = prefix {
        if !name.starts_with("option ") && name != "log" {
            diags.alert(loc, format!("'{pfx}' is not supported for '{name}'"));
            return;
        }
    }
    if k.secs & d.kind.flag() == 0 {
        let cap = if CATALOG
            .iter()
            .any(|c| c.name == name && c.secs & crate::keywords::F != 0)
        {
            "frontend"
        } else {
            "backend"
        };
        if d.kind == Kind::Defaults
            || matches!(name, "bind" | "server" | "default-server" | "retry-on")
        {
            diags.alert(loc, format!("'{name}' not allowed in '{sec}' section."));
        } else {
            diags.warn(
                loc,
                format!(
                    "'{name}' ignored because {sec} '{}' has no {cap} capability.",
                    d.name
                ),
            );
        }
        return;
    }
    let shown = match prefix {
        Some(p) => format!("{p} {name}"),
        None => name.to_string(),
    };
    match k.status {
        Status::Removed => diags.alert(loc, k.note),
        Status::NotYet if prefix.is_some() => diags.warn(
            loc,
            format!("'{shown}' keeps HAProxy's default behaviour, which is what Fairlead does; accepted"),
        ),
        Status::NotYet => diags.alert(loc, format!("'{shown}' is not implemented yet in Fairlead")),
        Status::Warning => diags.warn(loc, format!("'{shown}': {}", k.note)),
        Status::Implemented => {
            if let Err(e) = implemented(d, diags, name, words, prefix, loc, listen_budget) {
                diags.alert(loc, format!("'{shown}': {e}"));
            }
        }
    }
}

/// Checks that `words` (keyword included, `n_kw` words long) has exactly
/// `n` arguments.
fn args(words: &[String], n_kw: usize, n: usize) -> Result<&[String], String> {
    let a = &words[n_kw.min(words.len())..];
    if a.len() == n {
        Ok(a)
    } else if n == 0 {
        Err("takes no argument".into())
    } else if n == 1 {
        Err(format!("expects exactly one argument (got {})", a.len()))
    } else {
        Err(format!("expects exactly {n} arguments (got {})", a.len()))
    }
}

fn implemented(
    d: &mut Draft,
    diags: &mut Diags,
    name: &str,
    words: &[String],
    prefix: Option<&str>,
    loc: &Location,
    listen_budget: &mut usize,
) -> Result<(), String> {
    if super::rules::is_rule_keyword(name) {
        let setting = matches!(
            name,
            "option http-buffer-request" | "unique-id-format" | "unique-id-header"
        );
        if d.kind == Kind::Defaults && d.name.is_empty() && !setting {
            // As HAProxy 2.6: rules need a named defaults section.
            diags.alert(
                loc,
                format!(
                    "'{}' not allowed in anonymous 'defaults' section.",
                    words[0]
                ),
            );
            return Ok(());
        }
        d.rule_lines.push((loc.clone(), words.to_vec()));
        return Ok(());
    }
    if super::rules::is_error_keyword(name) {
        d.error_lines.push((loc.clone(), words.to_vec()));
        return Ok(());
    }
    if name == "stick-table" {
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let (spec, warnings) = fairlead_stick::TableSpec::parse(&d.name, &args, false)?;
        for w in warnings {
            diags.warn(loc, w);
        }
        if d.stick_table.is_some() {
            return Err("only one stick-table per proxy section".into());
        }
        d.stick_table = Some((loc.clone(), spec));
        return Ok(());
    }
    let o = &mut d.opts;
    match name {
        "mode" => match args(words, 1, 1)?[0].as_str() {
            "tcp" => o.mode = Mode::Tcp,
            "http" => o.mode = Mode::Http,
            "health" => {
                return Err("'mode health' doesn't exist anymore. Please use 'http-request return status 200' instead.".into())
            }
            m => return Err(format!("unknown proxy mode '{m}'.")),
        },
        "bind" => {
            d.bind_seen = true;
            if let Some((b, tls)) = crate::bind::parse_bind(words, loc, diags, listen_budget) {
                d.binds.push(b);
                d.bind_tls.push(tls);
            }
        }
        "server" => {
            if let Some((s, tls)) = crate::server::parse_server(words, &d.server_defaults, loc, diags) {
                if let Some(prev) = d.servers.iter().find(|x| x.name == s.name) {
                    return Err(format!(
                        "server name '{}' is already used by the server declared at {}",
                        s.name, prev.location
                    ));
                }
                if let Some(prev) = d.servers.iter().find(|x| s.id.is_some() && x.id == s.id) {
                    return Err(format!(
                        "'id' : custom id {} already used at {} ('server {}')",
                        s.id.unwrap_or(0),
                        prev.location,
                        prev.name
                    ));
                }
                d.servers.push(s);
                d.server_tls.push(tls);
            }
        }
        "server-template" => {
            if let Some(slots) = crate::dns::parse_template(words, &d.server_defaults, loc, diags) {
                for (s, tls) in slots {
                    if let Some(prev) = d.servers.iter().find(|x| x.name == s.name) {
                        return Err(format!(
                            "server name '{}' is already used by the server declared at {}",
                            s.name, prev.location
                        ));
                    }
                    d.servers.push(s);
                    d.server_tls.push(tls);
                }
            }
        }
        "default-server" => crate::server::parse_default_server(words, &mut d.server_defaults, loc, diags),
        "default_backend" => {
            let b = &args(words, 1, 1)?[0];
            d.default_backend = Some((b.clone(), loc.clone()));
        }
        "balance" | "cookie" | "retry-on" => {
            let mut warns = Vec::new();
            match name {
                "balance" => {
                    o.balance = balance::parse_balance(words, &mut warns)?;
                    d.balance_loc = Some(loc.clone());
                }
                "cookie" => {
                    o.cookie = Some(balance::parse_cookie(words, &mut warns)?);
                    d.cookie_loc = Some(loc.clone());
                }
                _ => o.retry_on = balance::parse_retry_on(words, &mut warns)?,
            }
            for w in warns {
                diags.warn(loc, format!("'{name}': {w}"));
            }
        }
        "hash-type" => o.hash_type = balance::parse_hash_type(words)?,
        "persist" => o.rdp_persist = Some(balance::parse_persist(words)?),
        "load-server-state-from-file" => {
            o.load_server_state = match args(words, 1, 1)?[0].as_str() {
                "global" => crate::model::ServerStateLoad::Global,
                "local" => crate::model::ServerStateLoad::Local,
                "none" => crate::model::ServerStateLoad::None,
                a => {
                    return Err(format!(
                        "expects 'global', 'local' or 'none'. Got '{a}'"
                    ))
                }
            };
        }
        "server-state-file-name" => {
            o.server_state_file_name = match words.get(1).map(String::as_str) {
                None | Some("use-backend-name") => None,
                Some(f) => Some(f.to_string()),
            };
        }
        "fullconn" => {
            let n: u32 = parse_uint(&args(words, 1, 1)?[0], "fullconn")?;
            o.fullconn = (n > 0).then_some(n);
        }
        "option splice-auto" | "option splice-request" | "option splice-response" => {
            args(words, 2, 0)?;
            let on = prefix.is_none();
            match name {
                "option splice-auto" => o.splice.auto = on,
                "option splice-request" => o.splice.request = on,
                _ => o.splice.response = on,
            }
        }
        "option allbackups" | "option persist" | "option http-no-delay" => {
            args(words, 2, 0)?;
            let on = prefix.is_none();
            match name {
                "option allbackups" => o.allbackups = on,
                "option persist" => o.persist = on,
                _ => o.http_no_delay = on,
            }
        }
        "option tcp-smart-accept" => {
            args(words, 2, 0)?;
            o.tcp_smart_accept = match prefix {
                None => Some(true),
                Some("no") => Some(false),
                // `default option ...`: back to the automatic setting.
                Some(_) => None,
            };
        }
        "option tcp-smart-connect" => {
            args(words, 2, 0)?;
            o.tcp_smart_connect = prefix.is_none();
        }
        "option httpchk" | "option tcp-check" | "option redis-check" | "option mysql-check"
        | "option pgsql-check" | "option smtpchk" | "option ldap-check" | "option ssl-hello-chk"
        | "option spop-check" => {
            if let Some(p) = prefix {
                return Err(format!("'{p}' is not supported for this option"));
            }
            let mut warns = Vec::new();
            checks::parse_option(&mut d.checks, words, &mut warns)?;
            for w in warns {
                diags.warn(loc, format!("'{name}': {w}"));
            }
        }
        "http-check" => checks::parse_http_check(&mut d.checks, words, loc).map_err(|e| {
            match words.get(1) {
                Some(k) if !e.starts_with("'http-check'") => format!("'{k}': {e}"),
                _ => e,
            }
        })?,
        "tcp-check" => checks::parse_tcp_check(&mut d.checks, words).map_err(|e| {
            match words.get(1) {
                Some(k) if !e.starts_with("'tcp-check'") => format!("'{k}': {e}"),
                _ => e,
            }
        })?,
        "retries" => o.retries = parse_uint(&args(words, 1, 1)?[0], "retries")?,
        "maxconn" => o.maxconn = Some(parse_uint(&args(words, 1, 1)?[0], "maxconn")?),
        "http-reuse" => {
            o.http_reuse = match args(words, 1, 1)?[0].as_str() {
                "never" => HttpReuse::Never,
                "safe" => HttpReuse::Safe,
                "aggressive" => HttpReuse::Aggressive,
                "always" => HttpReuse::Always,
                m => return Err(format!("expects 'never', 'safe', 'aggressive' or 'always' (got '{m}')")),
            }
        }
        "disabled" => {
            args(words, 1, 0)?;
            d.disabled = true;
        }
        "enabled" => {
            args(words, 1, 0)?;
            d.disabled = false;
        }
        "description" => {}
        s if s.starts_with("stats ") => {
            if d.kind != Kind::Defaults && !d.stats_own {
                // As HAProxy: the first `stats` line of a proxy detaches it
                // from the defaults section's settings.
                d.stats_own = true;
                o.stats = None;
            }
            if d.stats_loc.is_none() || o.stats.is_none() {
                d.stats_loc = Some(loc.clone());
            }
            let st = o.stats.get_or_insert_with(StatsConfig::default);
            for w in parse_stats(st, words)? {
                diags.warn(loc, format!("'{name}': {w}"));
            }
            if name == "stats admin" || name == "stats http-request" {
                // The condition is compiled with the section's ACLs.
                d.rule_lines.push((loc.clone(), words.to_vec()));
            }
        }
        "http-request use-service" => {
            let svc = parse_use_service(words)?;
            if let Some(prev) = &d.prometheus_loc {
                return Err(format!(
                    "more than one 'http-request use-service' rule per proxy is not implemented yet in Fairlead (previous one at {prev})"
                ));
            }
            o.prometheus = Some(svc);
            d.prometheus_loc = Some(loc.clone());
        }
        t if t.starts_with("timeout ") => {
            let v = parse_time(&args(words, 2, 1)?[0])?;
            let tm = &mut o.timeouts;
            let slot = match t {
                "timeout connect" => &mut tm.connect,
                "timeout client" => &mut tm.client,
                "timeout server" => &mut tm.server,
                "timeout http-request" => &mut tm.http_request,
                "timeout http-keep-alive" => &mut tm.http_keep_alive,
                "timeout tunnel" => &mut tm.tunnel,
                "timeout client-fin" => &mut tm.client_fin,
                "timeout server-fin" => &mut tm.server_fin,
                "timeout check" => &mut tm.check,
                "timeout tarpit" => &mut tm.tarpit,
                _ => &mut tm.queue,
            };
            *slot = Some(v);
        }
        "option http-keep-alive" | "option httpclose" | "option http-server-close" => {
            args(words, 2, 0)?;
            let mode = match name {
                "option http-keep-alive" => HttpConnMode::KeepAlive,
                "option httpclose" => HttpConnMode::Close,
                _ => HttpConnMode::ServerClose,
            };
            match prefix {
                None => o.http_conn_mode = mode,
                Some(_) if o.http_conn_mode == mode => o.http_conn_mode = HttpConnMode::KeepAlive,
                Some(_) => {}
            }
        }
        "option redispatch" => {
            if prefix.is_some() {
                args(words, 2, 0)?;
                o.redispatch = false;
                o.redispatch_interval = 0;
            } else {
                let interval = match words.get(2) {
                    None => -1,
                    Some(v) => v.parse::<i32>().map_err(|_| {
                        format!("expects an integer interval (got '{v}')")
                    })?,
                };
                if words.len() > 3 {
                    return Err(format!("too many arguments (got '{}')", words[3]));
                }
                o.redispatch = interval != 0;
                o.redispatch_interval = interval;
            }
        }
        "option accept-invalid-http-request" => {
            args(words, 2, 0)?;
            o.accept_invalid_http_request = prefix.is_none();
        }
        "option accept-invalid-http-response" => {
            args(words, 2, 0)?;
            o.accept_invalid_http_response = prefix.is_none();
        }
        "option forwardfor" => {
            if prefix.is_some() {
                args(words, 2, 0)?;
                o.forwardfor = None;
            } else {
                o.forwardfor = Some(parse_forwardfor(&words[2..])?);
            }
        }
        "log" => {
            let l = &mut o.log;
            let a = &words[1..];
            if prefix.is_some() {
                if !a.is_empty() {
                    return Err("'no log' does not expect arguments".into());
                }
                l.targets.clear();
                l.global = false;
            } else if a.first().map(String::as_str) == Some("global") {
                if a.len() > 1 {
                    return Err("'log global' takes no other parameter".into());
                }
                l.global = true;
            } else {
                let spec = fairlead_log::parse_target(a)?;
                l.targets.push(LogTarget {
                    args: a.to_vec(),
                    location: loc.clone(),
                    spec,
                });
            }
        }
        "log-tag" => {
            let t = &args(words, 1, 1)?[0];
            if t.is_empty() {
                return Err("expects a non-empty tag".into());
            }
            o.log.tag = Some(t.clone());
        }
        "log-format" => {
            if words.len() > 2 {
                return Err("expects only one argument, don't forget to escape spaces!".into());
            }
            let f = &args(words, 1, 1)?[0];
            fairlead_log::compile(f)?;
            o.log.style = LogStyle::Custom(f.clone());
            o.log.json = false;
            d.log_style_loc = Some(loc.clone());
        }
        "option httplog" | "option tcplog" | "option httplog-json" | "option httpslog" => {
            let style = match (name, words.get(2).map(String::as_str)) {
                ("option httplog", Some("clf")) if words.len() == 3 => LogStyle::HttpClf,
                ("option httplog", Some(_)) => {
                    let bad = words[2..].iter().find(|w| *w != "clf").unwrap_or(&words[2]);
                    return Err(format!("expects no argument or 'clf' (got '{bad}')"));
                }
                ("option tcplog", _) => {
                    args(words, 2, 0)?;
                    LogStyle::Tcp
                }
                ("option httpslog", _) => {
                    args(words, 2, 0)?;
                    LogStyle::Https
                }
                _ => {
                    args(words, 2, 0)?;
                    LogStyle::Http
                }
            };
            let json = name == "option httplog-json";
            let l = &mut o.log;
            if prefix.is_some() {
                if json {
                    l.json = false;
                } else if l.style == style || (style == LogStyle::Http && l.style == LogStyle::HttpClf) {
                    l.style = LogStyle::Connect;
                }
            } else {
                l.style = style;
                l.json = json;
                d.log_style_loc = Some(loc.clone());
            }
        }
        "option dontlognull"
        | "option dontlog-normal"
        | "option log-separate-errors"
        | "option log-health-checks" => {
            args(words, 2, 0)?;
            let on = prefix.is_none();
            let l = &mut o.log;
            match name {
                "option dontlognull" => l.dontlognull = on,
                "option dontlog-normal" => l.dontlog_normal = on,
                "option log-health-checks" => l.health_checks = on,
                _ => l.separate_errors = on,
            }
        }
        _ => return Err("is not implemented yet in Fairlead".into()),
    }
    Ok(())
}

/// The `stats` parameters, as HAProxy lists them in its error message.
const STATS_KEYWORDS: &str = "'admin', 'uri', 'realm', 'auth', 'scope', 'enable', 'hide-version', 'show-node', 'show-desc' or 'show-legends'";

/// Applies one `stats <param> ...` line (`words[0]` is `stats`). Returns
/// warnings.
fn parse_stats(st: &mut StatsConfig, words: &[String]) -> Result<Vec<String>, String> {
    let mut warns = Vec::new();
    st.enabled = true;
    match words[1].as_str() {
        "enable" => {
            args(words, 2, 0)?;
        }
        "hide-version" => {
            args(words, 2, 0)?;
            st.hide_version = true;
        }
        "show-legends" => {
            args(words, 2, 0)?;
            st.show_legends = true;
        }
        "uri" => {
            let u = &args(words, 2, 1)?[0];
            if u.is_empty() {
                return Err("'uri' needs an URI prefix.".into());
            }
            st.uri = u.clone();
        }
        "realm" => {
            let Some(r) = words.get(2).filter(|r| !r.is_empty()) else {
                return Err("'realm' needs an realm name.".into());
            };
            if words.len() > 3 {
                warns.push(format!(
                    "only the first word ('{r}') is used as the realm; escape spaces with a backslash ('\\ ')"
                ));
            }
            st.realm = r.clone();
        }
        "auth" => {
            let a = &args(words, 2, 1)
                .map_err(|_| "'auth' needs a user:password account.".to_string())?[0];
            let Some((user, pass)) = a.split_once(':') else {
                return Err(format!(
                    "expects <user>:<password> (got '{a}', without ':')"
                ));
            };
            if user.is_empty() {
                return Err(format!(
                    "expects <user>:<password> (got '{a}', an empty user name)"
                ));
            }
            st.users.push((user.to_string(), pass.to_string()));
        }
        "refresh" => {
            let a = &args(words, 2, 1)?[0];
            let t = crate::units::parse_time_secs(a)
                .map_err(|e| format!("invalid stats refresh interval: {e}"))?;
            st.refresh = (!t.is_zero()).then_some(t);
        }
        "admin" => {
            match words.get(2).map(String::as_str) {
                Some("if" | "unless") => {}
                _ => {
                    return Err(
                        "'stats admin' requires either 'if' or 'unless' followed by a condition."
                            .into(),
                    )
                }
            }
            // The condition (`if LOCALHOST`, `if { src 10.0.0.0/8 }`, any
            // ACL) is compiled with the rules and decided per request.
            st.admin = true;
        }
        "http-request" => {
            // The rule is compiled with the section's ACLs.
            if !matches!(
                words.get(2).map(String::as_str),
                Some("allow" | "deny" | "auth")
            ) {
                return Err("'stats http-request' expects 'allow', 'deny' or 'auth'".into());
            }
        }
        "show-node" => {
            let node = match words.len() {
                2 => String::new(),
                3 => {
                    let n = &words[2];
                    if n.is_empty()
                        || !n
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    {
                        return Err(format!(
                            "invalid node name '{n}': should be a string with digits (0-9), letters (A-Z, a-z), hyphen (-), dot (.) or underscore (_)"
                        ));
                    }
                    n.clone()
                }
                n => return Err(format!("expects at most one argument (got {})", n - 2)),
            };
            st.show_node = Some(node);
        }
        "scope" => {
            let s = &args(words, 2, 1).map_err(|_| "'scope' needs a proxy name.".to_string())?[0];
            if s.is_empty() {
                return Err("'scope' needs a proxy name.".into());
            }
            st.scope.push(s.clone());
        }
        other => return Err(format!("unknown stats parameter '{other}'")),
    }
    Ok(warns)
}

/// `http-request use-service prometheus-exporter [if { path|path_beg <p> }]`
/// (`words[0]` is `http-request`).
fn parse_use_service(words: &[String]) -> Result<PrometheusService, String> {
    let unsupported = || {
        format!(
            "'{}' is not implemented yet in Fairlead; only 'prometheus-exporter', unconditionally or followed by 'if {{ path <path> }}' or 'if {{ path_beg <path> }}', is",
            words[2..].join(" ")
        )
    };
    match words.get(2).map(String::as_str) {
        Some("prometheus-exporter") => {}
        Some(_) => return Err(unsupported()),
        None => return Err("expects a service name".into()),
    }
    let rest: Vec<&str> = words[3..].iter().map(String::as_str).collect();
    match rest.as_slice() {
        [] => Ok(PrometheusService::default()),
        ["if", "{", fetch @ ("path" | "path_beg"), p, "}"] if !p.is_empty() => {
            Ok(PrometheusService {
                path: Some(p.to_string()),
                prefix: *fetch == "path_beg",
            })
        }
        _ => Err(unsupported()),
    }
}

fn parse_forwardfor(a: &[String]) -> Result<ForwardFor, String> {
    let mut ff = ForwardFor::default();
    let mut i = 0;
    while i < a.len() {
        match a[i].as_str() {
            "if-none" => ff.if_none = true,
            "except" | "header" => {
                let Some(v) = a.get(i + 1) else {
                    return Err(format!("'{}' expects an argument", a[i]));
                };
                if a[i] == "except" {
                    ff.except = Some(parse_net(v)?);
                } else {
                    if v.is_empty() {
                        return Err("'header' expects a header name".into());
                    }
                    ff.header = v.clone();
                }
                i += 1;
            }
            other => {
                return Err(format!(
                    "unknown parameter '{other}' (expected 'except', 'header' or 'if-none')"
                ))
            }
        }
        i += 1;
    }
    Ok(ff)
}

/// Parses `addr[/prefix]` or `addr/dotted-mask`.
pub(crate) fn parse_net(s: &str) -> Result<IpNet, String> {
    let (addr, pfx) = s.split_once('/').unwrap_or((s, ""));
    let ip: std::net::IpAddr = addr.parse().map_err(|_| format!("invalid network '{s}'"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = if pfx.is_empty() {
        max
    } else if let Ok(n) = pfx.parse::<u8>() {
        if n > max {
            return Err(format!("invalid prefix length in '{s}'"));
        }
        n
    } else if let (true, Ok(mask)) = (ip.is_ipv4(), pfx.parse::<std::net::Ipv4Addr>()) {
        let m = u32::from(mask);
        if m.leading_ones() + m.trailing_zeros() != 32 {
            return Err(format!("non-contiguous netmask in '{s}'"));
        }
        m.leading_ones() as u8
    } else {
        return Err(format!("invalid network '{s}'"));
    };
    Ok(IpNet { addr: ip, prefix })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nets() {
        let n = parse_net("127.0.0.0/8").unwrap();
        assert_eq!(n.prefix, 8);
        assert!(n.contains("127.1.2.3".parse().unwrap()));
        assert_eq!(parse_net("10.0.0.0/255.0.0.0").unwrap().prefix, 8);
        assert_eq!(parse_net("10.0.0.1").unwrap().prefix, 32);
        assert_eq!(parse_net("::1").unwrap().prefix, 128);
        assert_eq!(parse_net("fd00::/8").unwrap().prefix, 8);
        assert!(parse_net("10.0.0.0/33").is_err());
        assert!(parse_net("10.0.0.0/255.0.255.0").is_err());
        assert!(parse_net("nope").is_err());
    }
}
