//! The section-level driver: walks every line of every source, tracks the
//! current section, resolves `defaults` inheritance, and builds the final
//! [`Config`] with the cross checks that need the whole file.

pub(crate) mod balance;
pub(crate) mod checks;
pub(crate) mod global;
pub(crate) mod proxy;
pub(crate) mod rules;

use std::collections::{HashMap, HashSet};

use crate::cond::{CondStack, Outcome};
use crate::diag::Diags;
use crate::lexer::split_line;
use crate::model::*;
use crate::server::ServerDefaults;
use crate::tls::{BindDraft, GlobalTls, ServerDraft};
use crate::{Parsed, Source};

/// Sections that are stored verbatim in [`Config::other_sections`].
pub(crate) const OTHER_SECTIONS: &[&str] = &[
    "userlist",
    "resolvers",
    "peers",
    "mailers",
    "cache",
    "ring",
    "http-errors",
    "program",
    "fcgi-app",
    "crt-store",
    "traces",
    "log-forward",
    "dynamic-update",
    "acme",
];

/// Which kind of proxy section a [`Draft`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Defaults,
    Frontend,
    Backend,
    Listen,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Defaults => "defaults",
            Kind::Frontend => "frontend",
            Kind::Backend => "backend",
            Kind::Listen => "listen",
        }
    }

    /// The catalog flag of this section.
    pub fn flag(self) -> u8 {
        use crate::keywords::{B, D, F, L};
        match self {
            Kind::Defaults => D,
            Kind::Frontend => F,
            Kind::Backend => B,
            Kind::Listen => L,
        }
    }

    pub fn is_frontend(self) -> bool {
        matches!(self, Kind::Frontend | Kind::Listen)
    }

    pub fn is_backend(self) -> bool {
        matches!(self, Kind::Backend | Kind::Listen)
    }
}

/// A proxy or defaults section being parsed.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub kind: Kind,
    pub name: String,
    pub loc: Location,
    pub opts: ProxyOptions,
    pub binds: Vec<Bind>,
    /// The TLS options of each bind line (same order as `binds`),
    /// resolved into `Bind::tls` when the configuration is built.
    pub bind_tls: Vec<BindDraft>,
    pub servers: Vec<Server>,
    /// The TLS options of each server (same order as `servers`),
    /// resolved into `Server::tls` when the configuration is built.
    pub server_tls: Vec<ServerDraft>,
    pub default_backend: Option<(String, Location)>,
    pub disabled: bool,
    pub server_defaults: ServerDefaults,
    /// A `bind` line (or a legacy address on the section line) was seen,
    /// even if it had errors: avoids a second "no bind" error.
    pub bind_seen: bool,
    /// Health check option and rules, resolved into `opts.health_check`
    /// when the configuration is built.
    pub checks: checks::CheckDraft,
    /// Where `balance` and `cookie` were set, for the mode cross checks.
    pub balance_loc: Option<Location>,
    pub cookie_loc: Option<Location>,
    /// Where the log format (`option httplog`, `log-format`, ...) was set.
    pub log_style_loc: Option<Location>,
    /// A `stats` line of this section was seen: the settings inherited
    /// from the defaults section have been discarded.
    pub stats_own: bool,
    /// Where the `stats` settings were first set (this section or its
    /// defaults), for the mode check.
    pub stats_loc: Option<Location>,
    /// Where `http-request use-service prometheus-exporter` was set.
    pub prometheus_loc: Option<Location>,
    /// Rule lines (`acl`, `http-request`, `use_backend`, ...) in file
    /// order, a named defaults section's first; compiled by
    /// [`rules::compile`] once the whole file is read.
    pub rule_lines: Vec<(Location, Vec<String>)>,
    /// Error page lines (`errorfile`, `errorloc`, `http-error`, ...).
    pub error_lines: Vec<(Location, Vec<String>)>,
    /// `stick-table`: this proxy's table, named after it.
    pub stick_table: Option<(Location, fairlead_stick::TableSpec)>,
}

impl Draft {
    fn new(kind: Kind, name: String, loc: Location) -> Draft {
        Draft {
            kind,
            name,
            loc,
            opts: ProxyOptions {
                retries: 3,
                redispatch_interval: -1,
                ..ProxyOptions::default()
            },
            binds: Vec::new(),
            bind_tls: Vec::new(),
            servers: Vec::new(),
            server_tls: Vec::new(),
            default_backend: None,
            disabled: false,
            server_defaults: ServerDefaults::default(),
            bind_seen: false,
            checks: checks::CheckDraft::default(),
            balance_loc: None,
            cookie_loc: None,
            log_style_loc: None,
            stats_own: false,
            stats_loc: None,
            prometheus_loc: None,
            rule_lines: Vec::new(),
            error_lines: Vec::new(),
            stick_table: None,
        }
    }

    /// Copies what a section inherits from a defaults section.
    fn inherit(&mut self, from: &Draft) {
        self.opts = from.opts.clone();
        self.default_backend = from.default_backend.clone();
        self.disabled = from.disabled;
        self.server_defaults = from.server_defaults.clone();
        self.checks = from.checks.inherited();
        self.balance_loc = from.balance_loc.clone();
        self.cookie_loc = from.cookie_loc.clone();
        self.log_style_loc = from.log_style_loc.clone();
        self.stats_loc = from.stats_loc.clone();
        self.prometheus_loc = from.prometheus_loc.clone();
        self.rule_lines = from.rule_lines.clone();
        self.error_lines = from.error_lines.clone();
    }
}

#[derive(Debug, Clone, Copy)]
enum Cur {
    None,
    Global,
    Defaults(usize),
    Proxy(usize),
    Other(usize),
}

/// Environment as modified by `setenv`, `presetenv`, `unsetenv` and
/// `resetenv` in the global section.
#[derive(Debug, Default)]
pub(crate) struct EnvOverrides {
    pub vars: HashMap<String, Option<String>>,
    /// After `resetenv`: the only variables of the real environment kept.
    pub keep: Option<HashSet<String>>,
}

impl EnvOverrides {
    pub fn get(&self, name: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        if let Some(keep) = &self.keep {
            if !keep.contains(name) {
                return None;
            }
        }
        env(name)
    }
}

pub(crate) struct Parser<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    pub env_over: EnvOverrides,
    pub diags: Diags,
    pub global: Global,
    /// `ssl-default-bind-*` and `ssl-default-server-*`.
    pub tls: GlobalTls,
    others: Vec<OtherSection>,
    proxies: Vec<Draft>,
    defaults: Vec<Draft>,
    cur: Cur,
    last_defaults: Option<usize>,
    /// Listening addresses `bind` lines may still expand to.
    listen_budget: usize,
}

impl<'a> Parser<'a> {
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Parser {
            env,
            env_over: EnvOverrides::default(),
            diags: Diags::default(),
            global: Global::default(),
            tls: GlobalTls::default(),
            others: Vec::new(),
            proxies: Vec::new(),
            defaults: Vec::new(),
            cur: Cur::None,
            last_defaults: None,
            listen_budget: crate::bind::MAX_LISTEN_ADDRS,
        }
    }

    /// Parses one source file.
    pub fn source(&mut self, src: &Source) {
        let mut cond = CondStack::default();
        let mut line_no = 0;
        for raw in src.text.split('\n') {
            line_no += 1;
            let loc = Location {
                file: src.name.clone(),
                line: line_no,
            };
            let words = {
                let over = &self.env_over;
                let env = self.env;
                let lookup = |name: &str| over.get(name, env);
                split_line(raw, &lookup)
            };
            let words = match words {
                Ok(w) => w,
                Err(e) => {
                    if cond.active() {
                        self.diags.alert(&loc, e);
                    }
                    continue;
                }
            };
            if words.is_empty() {
                continue;
            }
            if words[0].starts_with('.') {
                let over = &self.env_over;
                let env = self.env;
                let lookup = |name: &str| over.get(name, env);
                match cond.directive(&words, &loc, &lookup) {
                    Outcome::Nothing => {}
                    Outcome::Warning(m) => self.diags.warn(&loc, m),
                    Outcome::Alert(m) => self.diags.alert(&loc, m),
                }
                continue;
            }
            if cond.active() {
                self.line(words, &loc);
            }
        }
        for open in cond.finish() {
            self.diags.alert(
                &open,
                "'.if' block is not closed at the end of the file (missing '.endif')",
            );
        }
        if !src.text.is_empty() && !src.text.ends_with('\n') {
            let last = src.text.rsplit('\n').next().unwrap_or("");
            let loc = Location {
                file: src.name.clone(),
                line: line_no,
            };
            self.diags.alert(
                &loc,
                format!(
                    "missing LF on last line, file might have been truncated at position {}",
                    last.len() + 1
                ),
            );
        }
    }

    fn line(&mut self, words: Vec<String>, loc: &Location) {
        let kw = words[0].as_str();
        if matches!(
            kw,
            "global" | "defaults" | "frontend" | "backend" | "listen"
        ) || OTHER_SECTIONS.contains(&kw)
        {
            self.start_section(words, loc);
            return;
        }
        match self.cur {
            Cur::None => self
                .diags
                .alert(loc, format!("unknown keyword '{kw}' out of section")),
            Cur::Global => global::keyword(self, &words, loc),
            Cur::Defaults(i) => proxy::keyword(
                &mut self.defaults[i],
                &mut self.diags,
                &words,
                loc,
                &mut self.listen_budget,
            ),
            Cur::Proxy(i) => proxy::keyword(
                &mut self.proxies[i],
                &mut self.diags,
                &words,
                loc,
                &mut self.listen_budget,
            ),
            Cur::Other(i) => self.others[i].lines.push((loc.clone(), words)),
        }
    }

    fn start_section(&mut self, words: Vec<String>, loc: &Location) {
        let kw = words[0].as_str();
        match kw {
            "global" => {
                if words.len() > 1 {
                    self.diags.alert(loc, "'global' takes no argument");
                }
                self.cur = Cur::Global;
            }
            "defaults" | "frontend" | "backend" | "listen" => self.start_proxy(&words, loc),
            "userlist" | "http-errors" | "resolvers" | "peers" => {
                // Compiled with the rules (`resolvers`: by
                // `crate::dns::build_resolvers`, `peers`: by
                // `rules::build_peers`) once the whole file is read.
                self.others.push(OtherSection {
                    kind: kw.to_string(),
                    name: words.get(1).cloned().unwrap_or_default(),
                    location: loc.clone(),
                    lines: Vec::new(),
                });
                self.cur = Cur::Other(self.others.len() - 1);
            }
            _ => {
                let name = words.get(1).cloned().unwrap_or_default();
                self.diags.warn(
                    loc,
                    format!(
                        "'{kw}' section{} is stored but not used yet",
                        if name.is_empty() {
                            String::new()
                        } else {
                            format!(" '{name}'")
                        }
                    ),
                );
                self.others.push(OtherSection {
                    kind: kw.to_string(),
                    name,
                    location: loc.clone(),
                    lines: Vec::new(),
                });
                self.cur = Cur::Other(self.others.len() - 1);
            }
        }
    }

    fn start_proxy(&mut self, words: &[String], loc: &Location) {
        let kind = match words[0].as_str() {
            "defaults" => Kind::Defaults,
            "frontend" => Kind::Frontend,
            "backend" => Kind::Backend,
            _ => Kind::Listen,
        };
        let sec = kind.word();
        // Parse `<name> [from <defaults>]`.
        let mut name = String::new();
        let mut from: Option<String> = None;
        let mut legacy_addr = false;
        let mut rest = &words[1..];
        if let Some(first) = rest.first() {
            if first != "from" || kind != Kind::Defaults || rest.len() < 2 {
                name = first.clone();
                rest = &rest[1..];
            }
        }
        match rest {
            [] => {}
            [f, d] if f == "from" => from = Some(d.clone()),
            [f] if f == "from" => {
                self.diags.alert(
                    loc,
                    format!("'{sec} {name} from' expects the name of a defaults section"),
                );
            }
            _ if kind != Kind::Defaults => {
                legacy_addr = true;
                self.diags.alert(
                    loc,
                    "please use the 'bind' keyword for listening addresses.",
                );
            }
            _ => {
                self.diags
                    .alert(loc, format!("too many arguments for '{sec}'"));
            }
        }
        if name.is_empty() && kind != Kind::Defaults {
            self.diags.alert(loc, format!("'{sec}' expects a name"));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        {
            self.diags.alert(
                loc,
                format!("invalid character '{c}' in {sec} name '{name}'"),
            );
        }
        // Duplicate names.
        if kind == Kind::Defaults {
            if !name.is_empty() {
                if let Some(prev) = self.defaults.iter().find(|d| d.name == name) {
                    self.diags.alert(
                        loc,
                        format!("defaults section '{name}' has the same name as another defaults section declared at {}", prev.loc),
                    );
                }
            }
        } else if !name.is_empty() {
            if let Some(prev) = self.proxies.iter().find(|p| {
                p.name == name
                    && ((kind.is_frontend() && p.kind.is_frontend())
                        || (kind.is_backend() && p.kind.is_backend()))
            }) {
                self.diags.alert(
                    loc,
                    format!(
                        "{sec} '{name}' has the same name as {} '{name}' declared at {}",
                        prev.kind.word(),
                        prev.loc
                    ),
                );
            }
        }
        let mut draft = Draft::new(kind, name, loc.clone());
        draft.bind_seen = legacy_addr;
        // Inheritance.
        let base = match &from {
            Some(d) => match self.defaults.iter().rposition(|x| &x.name == d) {
                Some(i) => Some(i),
                None => {
                    self.diags.alert(
                        loc,
                        format!("{sec} '{}': defaults section '{d}' not found", draft.name),
                    );
                    None
                }
            },
            None if kind == Kind::Defaults => None,
            None => self.last_defaults,
        };
        if let Some(i) = base {
            let b = self.defaults[i].clone();
            draft.inherit(&b);
        }
        if kind == Kind::Defaults {
            self.defaults.push(draft);
            let i = self.defaults.len() - 1;
            self.last_defaults = Some(i);
            self.cur = Cur::Defaults(i);
        } else {
            self.proxies.push(draft);
            self.cur = Cur::Proxy(self.proxies.len() - 1);
        }
    }

    /// Builds the configuration and runs the whole-file checks.
    pub fn finish(mut self, files: &[String]) -> Result<Parsed, Vec<Diagnostic>> {
        for d in self.proxies.iter_mut().filter(|d| d.kind.is_backend()) {
            finish_backend(d, &mut self.diags);
        }
        for d in self.proxies.iter_mut() {
            finish_log(d, &self.global.logs, &mut self.diags);
            finish_http_only(d, &mut self.diags);
            finish_tls(d, &self.global, &self.tls, &mut self.diags);
        }
        let mut env = rules::build_env(&self.others, self.global.bufsize, &mut self.diags);
        let mut tables = rules::build_tables(&self.proxies, &mut env, &mut self.diags);
        let peers = rules::build_peers(
            &self.others,
            &self.proxies,
            &mut env,
            &mut tables,
            &mut self.diags,
        );
        // A defaults section's rules are checked once on their own (its
        // proxies compile copies of them; duplicates are merged below).
        for d in self.defaults.iter_mut() {
            rules::compile(d, &env, self.global.bufsize, &mut self.diags);
        }
        let compiled: Vec<_> = self
            .proxies
            .iter_mut()
            .map(|d| rules::compile(d, &env, self.global.bufsize, &mut self.diags))
            .collect();
        let modes: HashMap<&str, Mode> = self
            .proxies
            .iter()
            .filter(|d| d.kind.is_backend())
            .map(|d| (d.name.as_str(), d.opts.mode))
            .collect();
        for (d, r) in self.proxies.iter().zip(&compiled) {
            rules::check_switching(d, r, &modes, &mut self.diags);
        }
        let mut config = Config {
            global: self.global.clone(),
            patterns: env.patterns.clone(),
            tables,
            peers,
            other_sections: std::mem::take(&mut self.others),
            server_tls_defaults: self.tls.server.clone(),
            ..Config::default()
        };
        for (d, rules) in self.proxies.iter().zip(compiled) {
            if d.kind.is_backend() {
                config.backends.push(Backend {
                    rules: rules.clone(),
                    name: d.name.clone(),
                    location: d.loc.clone(),
                    options: d.opts.clone(),
                    servers: d.servers.clone(),
                    disabled: d.disabled,
                });
            }
            if d.kind.is_frontend() {
                let default_backend = match (&d.default_backend, d.kind) {
                    (Some((b, _)), _) => Some(b.clone()),
                    (None, Kind::Listen) => Some(d.name.clone()),
                    (None, _) => None,
                };
                config.frontends.push(Frontend {
                    rules,
                    name: d.name.clone(),
                    location: d.loc.clone(),
                    binds: d.binds.clone(),
                    options: d.opts.clone(),
                    default_backend,
                    disabled: d.disabled,
                });
            }
        }
        config.resolvers = crate::dns::build_resolvers(&config.other_sections, &mut self.diags);
        crate::dns::check_servers(&config.backends, &mut config.resolvers, &mut self.diags);
        // Cross checks.
        for d in &self.proxies {
            let sec = d.kind.word();
            if d.kind.is_frontend() {
                if d.binds.is_empty() && !d.bind_seen && !d.disabled {
                    self.diags.alert(
                        &d.loc,
                        format!("{sec} '{}' has no 'bind' directive. Please declare it as a backend if this was intended.", d.name),
                    );
                }
                if let Some((be, at)) = &d.default_backend {
                    match config.backend(be) {
                        None => self.diags.alert(
                            at,
                            format!("{sec} '{}': unable to find required default_backend: '{be}'.", d.name),
                        ),
                        Some(b) if d.opts.mode == Mode::Http && b.options.mode == Mode::Tcp => self.diags.alert(
                            at,
                            format!(
                                "{sec} '{}': unable to use backend '{be}' with wrong mode, required: http, has: tcp.",
                                d.name
                            ),
                        ),
                        Some(_) => {}
                    }
                }
            }
            let routes_to_self =
                d.kind == Kind::Backend || (d.kind == Kind::Listen && d.default_backend.is_none());
            // A proxy serving the statistics page or the Prometheus
            // exporter commonly has no server, as in HAProxy.
            let serves_itself = d.opts.stats.is_some() || d.opts.prometheus.is_some();
            if d.kind.is_backend()
                && d.servers.is_empty()
                && routes_to_self
                && !d.disabled
                && !serves_itself
            {
                self.diags.warn(
                    &d.loc,
                    format!(
                        "{sec} '{}' has no server; connections routed to it will fail",
                        d.name
                    ),
                );
            }
        }
        let failed = self.diags.has_alerts();
        let diags = self.diags.sorted(files);
        if failed {
            Err(diags)
        } else {
            Ok(Parsed {
                config,
                diagnostics: diags,
            })
        }
    }
}

/// Expands `log global` and applies the mode checks of the log format, as
/// HAProxy does once the file is read.
fn finish_log(d: &mut Draft, global: &[LogTarget], diags: &mut Diags) {
    let sec = d.kind.word();
    let l = &mut d.opts.log;
    if l.global {
        let own = std::mem::take(&mut l.targets);
        l.targets = global.to_vec();
        l.targets.extend(own);
    }
    if !d.kind.is_frontend() || d.opts.mode == Mode::Http {
        return;
    }
    let at = d.log_style_loc.as_ref().unwrap_or(&d.loc);
    match &l.style {
        LogStyle::Http | LogStyle::HttpClf | LogStyle::Https => {
            let opt = if l.json {
                "option httplog-json"
            } else if l.style == LogStyle::Https {
                "option httpslog"
            } else {
                "option httplog"
            };
            diags.warn(
                at,
                format!(
                    "'{opt}' not usable with {sec} '{}' (needs 'mode http'). Falling back to 'option tcplog'.",
                    d.name
                ),
            );
            l.style = LogStyle::Tcp;
        }
        LogStyle::Custom(f) => {
            let var = fairlead_log::compile(f)
                .ok()
                .and_then(|f| f.http_only_var());
            if let Some(v) = var {
                diags.alert(
                    at,
                    format!(
                        "{sec} '{}': 'log-format': format variable '{v}' is reserved for HTTP mode",
                        d.name
                    ),
                );
            }
        }
        LogStyle::Connect | LogStyle::Tcp => {}
    }
}

/// Warning for `max-reuse`, `pool-max-conn` and `pool-purge-delay` on a
/// server that never speaks HTTP/2.
const POOL_H1: &str = "'max-reuse', 'pool-max-conn' and 'pool-purge-delay' apply only to HTTP/2 server connections in Fairlead for now ('proto h2' or 'alpn h2'); this server's idle HTTP/1 connections keep the fixed pool (256 per thread, purged after 5s unused)";

/// Resolves the TLS settings of binds and servers with the global
/// defaults, and applies the checks that depend on the proxy's mode.
fn finish_tls(d: &mut Draft, g: &Global, defaults: &GlobalTls, diags: &mut Diags) {
    let http = d.opts.mode == Mode::Http;
    let sec = d.kind.word();
    for (b, t) in d.binds.iter_mut().zip(&d.bind_tls) {
        let mut out = Vec::new();
        b.tls = t.resolve(g, &defaults.bind, &mut out);
        let label = format!("'bind {}'", t.list);
        crate::tls::report(out, &label, &b.location, diags);
    }
    for (s, t) in d.servers.iter_mut().zip(&d.server_tls) {
        let mut out = Vec::new();
        s.tls = t.resolve(g, &defaults.server, &mut out);
        if let Some(tls) = &s.tls {
            if !http && tls.sni == Some(SniSource::HostHeader) {
                out.push((
                    false,
                    format!("'sni' uses the Host header, which {sec} '{}' never reads as it is not in 'mode http'; no SNI will be sent", d.name),
                ));
            }
        }
        let h2 = s.proto_h2
            || s.tls
                .as_ref()
                .is_some_and(|t| t.protocol.alpn.iter().any(|p| p == "h2"));
        if http && !h2 && s.pool != crate::ServerPool::default() {
            out.push((false, POOL_H1.to_string()));
        }
        let label = format!("server '{}/{}'", d.name, s.name);
        crate::tls::report(out, &label, &s.location, diags);
    }
}

/// Drops the HTTP-only services of a proxy that is not in `mode http`,
/// with HAProxy's warnings.
fn finish_http_only(d: &mut Draft, diags: &mut Diags) {
    if d.opts.mode == Mode::Http {
        return;
    }
    let sec = d.kind.word();
    if d.opts.stats.take().is_some() {
        diags.warn(
            d.stats_loc.as_ref().unwrap_or(&d.loc),
            format!(
                "'stats' statement ignored for {sec} '{}' as it requires HTTP mode.",
                d.name
            ),
        );
    }
    if d.opts.prometheus.take().is_some() {
        diags.warn(
            d.prometheus_loc.as_ref().unwrap_or(&d.loc),
            format!(
                "'http-request' rules ignored for {sec} '{}' as they require HTTP mode.",
                d.name
            ),
        );
    }
}

/// Resolves a backend's health check and applies the cross checks that
/// depend on its final mode, as HAProxy does once the file is read.
fn finish_backend(d: &mut Draft, diags: &mut Diags) {
    let sec = d.kind.word();
    let mut unused = Vec::new();
    d.opts.health_check = d.checks.build(&mut unused);
    for (loc, msg) in unused {
        diags.warn(&loc, format!("{sec} '{}' {msg}", d.name));
    }
    let o = &mut d.opts;
    if o.mode == Mode::Tcp {
        if matches!(
            o.balance,
            Balance::Uri { .. } | Balance::UrlParam { .. } | Balance::Hdr { .. }
        ) {
            o.balance = Balance::RoundRobin;
            diags.warn(
                d.balance_loc.as_ref().unwrap_or(&d.loc),
                format!(
                    "Layer 7 hash not possible for {sec} '{}' (needs 'mode http'). Falling back to round robin.",
                    d.name
                ),
            );
        }
        if o.cookie.take().is_some() {
            diags.warn(
                d.cookie_loc.as_ref().unwrap_or(&d.loc),
                format!(
                    "cookie will be ignored for {sec} '{}' (needs 'mode http').",
                    d.name
                ),
            );
        }
    }
    let http_check = matches!(o.health_check, HealthCheck::Http(_));
    for s in &mut d.servers {
        if s.check && s.check_proto.is_some_and(|p| p.is_http() != http_check) {
            diags.alert(
                &s.location,
                format!(
                    "{sec} '{}': server '{}' uses an incompatible MUX protocol for the selected check type",
                    d.name, s.name
                ),
            );
        }
        if o.mode == Mode::Tcp && s.observe == Some(Observe::Layer7) {
            diags.alert(
                &s.location,
                format!(
                    "'server {}': 'observe layer7' can only be used in http proxies ({sec} '{}' is in mode tcp).",
                    s.name, d.name
                ),
            );
        }
        if s.cookie.is_some() && o.mode == Mode::Tcp {
            s.cookie = None;
            diags.warn(
                &s.location,
                format!(
                    "{sec} '{}' : ignoring cookie for server '{}' as HTTP mode is disabled.",
                    d.name, s.name
                ),
            );
        } else if s.cookie.is_some() && o.cookie.is_none() {
            diags.warn(
                &s.location,
                format!(
                    "{sec} '{}' : server '{}' has a 'cookie' value but the {sec} has no 'cookie' directive; the server cookie is ignored.",
                    d.name, s.name
                ),
            );
        }
    }
}
