//! The rule layer's keywords (`acl`, `http-request`, `use_backend`,
//! `errorfile`, ...): stored in file order while the sections are read,
//! then compiled by `fairlead-rules` once the whole configuration is known
//! (userlists, `http-errors` sections and backends may come later in the
//! file than the rules that name them).

use super::{Draft, Kind};
use crate::diag::Diags;
use crate::model::{Location, Mode, OtherSection};
use fairlead_rules::proxy::{BackendTarget, ProxyRules, SectionInfo};
use fairlead_rules::Env;
use std::collections::HashMap;
use std::sync::Arc;

/// One shared [`fairlead_stick::Table`] per `stick-table` declaration,
/// named after its proxy, in declaration order; also registered in `env`
/// so that rules find them by name.
pub(crate) fn build_tables(
    proxies: &[Draft],
    env: &mut Env,
    diags: &mut Diags,
) -> Vec<fairlead_stick::Table> {
    let mut tables = Vec::new();
    let sticky = sticky_tables(proxies);
    for d in proxies {
        let Some((loc, spec)) = &d.stick_table else {
            continue;
        };
        let spec = with_server_data(spec.clone(), &sticky);
        if env.tables.contains_key(&spec.name) {
            diags.alert(
                loc,
                format!(
                    "'stick-table': a table named '{}' is already declared",
                    spec.name
                ),
            );
            continue;
        }
        let t = fairlead_stick::Table::new(spec.clone());
        env.tables.insert(spec.name.clone(), t.clone());
        tables.push(t);
    }
    tables
}

/// As HAProxy: a table that stick rules use stores the server
/// (`server_id` and `server_key`), whatever its `store` list says.
fn with_server_data(
    mut spec: fairlead_stick::TableSpec,
    sticky: &[String],
) -> fairlead_stick::TableSpec {
    if sticky.contains(&spec.name) {
        for dt in [
            fairlead_stick::DataType::ServerId,
            fairlead_stick::DataType::ServerKey,
        ] {
            if !spec.stores(dt) {
                spec = spec.with(dt, 1, 0);
            }
        }
    }
    spec
}

/// The names of the tables that `stick` rules of any section use.
fn sticky_tables(proxies: &[Draft]) -> Vec<String> {
    let mut out = Vec::new();
    for d in proxies {
        let lines: Vec<Vec<String>> = d.rule_lines.iter().map(|(_, w)| w.clone()).collect();
        let own = d.stick_table.as_ref().map(|(_, s)| s.name.as_str());
        for t in fairlead_rules::sticking::tables_needing_server(&lines, own) {
            if !out.iter().any(|o: &String| o == t) {
                out.push(t.to_string());
            }
        }
    }
    out
}

/// Parses the `peers` sections, registers their `table` lines (named
/// `SECTION/NAME`) with the other tables, and checks that every table's
/// `peers` names a section.
pub(crate) fn build_peers(
    others: &[OtherSection],
    proxies: &[Draft],
    env: &mut Env,
    tables: &mut Vec<fairlead_stick::Table>,
    diags: &mut Diags,
) -> Vec<fairlead_peers::PeersSection> {
    let mut out: Vec<fairlead_peers::PeersSection> = Vec::new();
    let sticky = sticky_tables(proxies);
    for s in others.iter().filter(|s| s.kind == "peers") {
        let at = |line: usize| Location {
            file: s.location.file.clone(),
            line,
        };
        if out.iter().any(|p| p.name == s.name) {
            diags.alert(
                &s.location,
                format!("peers section '{}' is declared twice", s.name),
            );
            continue;
        }
        let lines: Vec<(usize, Vec<String>)> =
            s.lines.iter().map(|(l, w)| (l.line, w.clone())).collect();
        match fairlead_peers::PeersSection::parse(&s.name, &lines) {
            Ok((sec, warns)) => {
                for (line, w) in warns {
                    diags.warn(&at(line), w);
                }
                for spec in &sec.tables {
                    if env.tables.contains_key(&spec.name) {
                        diags.alert(
                            &s.location,
                            format!("'table': a table named '{}' is already declared", spec.name),
                        );
                        continue;
                    }
                    let spec = with_server_data(spec.clone(), &sticky);
                    let t = fairlead_stick::Table::new(spec.clone());
                    env.tables.insert(spec.name.clone(), t.clone());
                    tables.push(t);
                }
                out.push(sec);
            }
            Err(errs) => {
                for (line, e) in errs {
                    diags.alert(&at(line), e);
                }
            }
        }
    }
    for t in tables.iter() {
        if let Some(p) = &t.spec().peers {
            if !out.iter().any(|s| &s.name == p) {
                diags.alert(
                    &Location::default(),
                    format!("stick-table '{}': unable to find peers '{p}'", t.name()),
                );
            }
        }
    }
    out
}

/// Keywords whose lines go to [`ProxyRules::add`].
pub(crate) fn is_rule_keyword(name: &str) -> bool {
    fairlead_rules::proxy::KEYWORDS.contains(&name)
}

/// Keywords that set error pages.
pub(crate) fn is_error_keyword(name: &str) -> bool {
    matches!(
        name,
        "errorfile" | "errorfiles" | "errorloc" | "errorloc302" | "errorloc303" | "http-error"
    )
}

/// Builds the environment rules compile against: userlists and
/// `http-errors` sections.
pub(crate) fn build_env(others: &[OtherSection], max_reply: usize, diags: &mut Diags) -> Env {
    let mut env = Env::default();
    for s in others {
        let lines: Vec<(usize, Vec<String>)> =
            s.lines.iter().map(|(l, w)| (l.line, w.clone())).collect();
        let at = |line: usize| Location {
            file: s.location.file.clone(),
            line,
        };
        match s.kind.as_str() {
            "userlist" => match fairlead_rules::userlist::Userlist::parse(&s.name, &lines) {
                Ok(ul) => {
                    env.userlists.insert(s.name.clone(), Arc::new(ul));
                }
                Err(errs) => {
                    for (line, e) in errs {
                        diags.alert(&at(line), e);
                    }
                }
            },
            "http-errors" => {
                match fairlead_rules::reply::parse_http_errors_section(&s.name, &lines, max_reply) {
                    Ok(map) => {
                        env.http_errors.insert(s.name.clone(), map);
                    }
                    Err(errs) => {
                        for (line, e) in errs {
                            diags.alert(&at(line), e);
                        }
                    }
                }
            }
            "resolvers" => {
                env.resolvers.insert(s.name.clone());
            }
            _ => {}
        }
    }
    env
}

/// Compiles a section's rule lines and error pages.
pub(crate) fn compile(
    d: &mut Draft,
    env: &Env,
    max_reply: usize,
    diags: &mut Diags,
) -> Arc<ProxyRules> {
    // The section's own table is the default of `track-sc` and `src_*`.
    let with_own;
    let env = match &d.stick_table {
        Some((_, spec)) => {
            let mut e = env.clone();
            e.own_table = env.tables.get(&spec.name).cloned();
            with_own = e;
            &with_own
        }
        None => env,
    };
    let sec = SectionInfo {
        frontend: d.kind.is_frontend() || d.kind == Kind::Defaults,
        backend: d.kind.is_backend() || d.kind == Kind::Defaults,
        http: d.opts.mode == Mode::Http,
        max_reply,
    };
    let mut rules = ProxyRules::default();
    for (loc, words) in &d.rule_lines {
        match rules.add(words, &sec, env) {
            Ok(warnings) => {
                for w in warnings {
                    diags.warn(loc, format!("'{}': {w}", words[0]));
                }
            }
            Err(e) => diags.alert(loc, prefixed(&words[0], e)),
        }
    }
    let mut pages = fairlead_rules::reply::ErrorPages::default();
    for (loc, words) in &d.error_lines {
        let res = if words[0] == "http-error" {
            fairlead_rules::reply::Reply::parse_http_error(&words[1..], max_reply, &env.http_errors)
                .map(|r| {
                    let w = r.warnings.clone();
                    pages.set_reply(r);
                    Some(w)
                })
        } else {
            pages.apply_line(words, max_reply, &env.http_errors)
        };
        match res {
            Ok(warnings) => {
                for w in warnings.unwrap_or_default() {
                    diags.warn(loc, w);
                }
            }
            Err(e) => diags.alert(loc, prefixed(&words[0], e)),
        }
    }
    rules.errors = pages;
    if d.kind.is_frontend() {
        compile_log_samples(d, env, &mut rules, diags);
        check_unique_id(d, &rules, diags);
    }
    Arc::new(rules)
}

/// The sample expressions of the frontend's `log-format` (other than the
/// TLS fetches `fairlead-log` renders itself), compiled for the proxy to
/// evaluate when the line is emitted. As HAProxy 2.6, header values and
/// bodies are refused there (they are gone at log time; log them through
/// a variable or a capture); the request method and the status are not.
fn compile_log_samples(d: &Draft, env: &Env, rules: &mut ProxyRules, diags: &mut Diags) {
    let Some(f) = d.opts.log.style.format_string() else {
        return;
    };
    let Ok(lf) = fairlead_log::compile(f) else {
        return;
    };
    let at = d.log_style_loc.as_ref().unwrap_or(&d.loc);
    for src in lf.samples() {
        match fairlead_rules::expr::Expr::parse(src, env, u8::MAX, "log-format") {
            Ok(e) => {
                if let Some(what) = unavailable_at_log_time(src, &e) {
                    diags.alert(
                        at,
                        format!(
                            "failed to parse log-format : sample fetch <{src}> may not be reliably used here because it needs '{what}' which is not available here."
                        ),
                    );
                }
                rules.log_samples.push(e)
            }
            Err(e) => diags.alert(
                at,
                format!("'log-format': failed to parse sample expression '%[{src}]': {e}"),
            ),
        }
    }
}

/// HAProxy's checks of a frontend's `unique-id-format`, made with the
/// proxy's mode (not in a `defaults` section on its own): a variable of
/// HTTP mode in a TCP frontend is refused; a fetch of TCP request or
/// response contents is warned about in any mode ("ignored", though
/// HAProxy, and Fairlead, still evaluate it: it sees an empty buffer
/// unless a `tcp-request content` rule makes the id while data waits).
/// As HAProxy, the warning names the rest of the format from the fetch.
fn check_unique_id(d: &Draft, rules: &ProxyRules, diags: &mut Diags) {
    let Some(u) = &rules.unique_id else {
        return;
    };
    let Some((loc, words)) = d
        .rule_lines
        .iter()
        .rev()
        .find(|(_, w)| w[0] == "unique-id-format")
    else {
        return;
    };
    if d.opts.mode != Mode::Http {
        if let Some(v) = u.format.http_only_var() {
            diags.alert(
                loc,
                format!(
                    "'unique-id-format': failed to parse unique-id : format variable '{v}' is reserved for HTTP mode."
                ),
            );
            return;
        }
    }
    let fmt = words.get(1).map_or("", String::as_str);
    let mut at = 0;
    for (src, e) in u.format.samples().iter().zip(&u.samples) {
        let Some(found) = fmt.get(at..).and_then(|rest| rest.find(src.as_str())) else {
            continue;
        };
        let from = at + found;
        at = from + src.len();
        use fairlead_rules::fetch::usage;
        if e.fetch.usage() & (usage::L6REQ | usage::L6RES) != 0 {
            let text = fmt.get(from..).unwrap_or(src);
            diags.warn(
                loc,
                format!("L6 sample fetch <{text}> ignored in HTTP log-format string."),
            );
        }
    }
}

fn prefixed(kw: &str, e: String) -> String {
    if e.starts_with('\'') || e.starts_with("error detected") {
        e
    } else {
        format!("'{kw}': {e}")
    }
}

/// What a log-format sample needs that HAProxy does not keep until the
/// log line: message contents other than the request method and the
/// status (`None` when usable).
fn unavailable_at_log_time(src: &str, e: &fairlead_rules::expr::Expr) -> Option<&'static str> {
    use fairlead_rules::fetch::usage;
    let name = src.split(['(', ',']).next().unwrap_or(src).trim();
    if matches!(name, "method" | "status") {
        return None;
    }
    let u = e.fetch.usage();
    let contents = usage::L6REQ | usage::L7REQ | usage::L7RES | usage::L6RES;
    (u & contents != 0).then(|| usage::describe(u))
}

/// Checks that every static `use_backend` names a backend with a
/// compatible mode, as HAProxy does when it resolves them.
pub(crate) fn check_switching(
    d: &Draft,
    rules: &ProxyRules,
    backends: &HashMap<&str, Mode>,
    diags: &mut Diags,
) {
    let sec = d.kind.word();
    for r in &rules.use_backend {
        let BackendTarget::Name(be) = &r.action else {
            continue;
        };
        let loc = d
            .rule_lines
            .iter()
            .find(|(_, w)| w[0] == "use_backend" && w.get(1) == Some(be))
            .map_or(&d.loc, |(l, _)| l);
        match backends.get(be.as_str()) {
            None => diags.alert(
                loc,
                format!("{sec} '{}': unable to find required use_backend: '{be}'.", d.name),
            ),
            Some(Mode::Tcp) if d.opts.mode == Mode::Http => diags.alert(
                loc,
                format!(
                    "{sec} '{}': unable to use backend '{be}' with wrong mode, required: http, has: tcp.",
                    d.name
                ),
            ),
            Some(_) => {}
        }
    }
}
