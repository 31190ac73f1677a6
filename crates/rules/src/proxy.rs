//! The compiled rules of one proxy section: every rule set, in HAProxy's
//! evaluation order, with its ACLs, captures, error pages and switching
//! rules. [`ProxyRules::add`] takes one configuration line at a time, in
//! file order, so an ACL is only visible to the lines after it.

use crate::acl::Tri;
use crate::action::{self, Action, ActionCtx, RuleSet};
use crate::cond::{split_cond, Acls, Cond};
use crate::fmt::LogFmt;
use crate::redirect::Redirect;
use crate::txn::Txn;
use std::time::Duration;

/// What a `stats http-request` rule does to a stats page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsRule {
    /// Serve the page, without `stats auth`.
    Allow,
    /// Answer 403.
    Deny,
    /// Ask for credentials (401) in `realm` (default: `stats realm`).
    Auth { realm: Option<String> },
}

/// A rule: something to do and an optional condition.
#[derive(Debug)]
pub struct Rule<A> {
    pub action: A,
    pub cond: Option<Cond>,
}

impl<A> Rule<A> {
    /// Evaluates the rule's condition (`Pass` without one).
    pub fn check(&self, acls: &Acls, txn: &dyn Txn) -> Tri {
        match &self.cond {
            None => Tri::Pass,
            Some(c) => c.eval(acls, txn),
        }
    }
}

/// Where `use_backend` sends a request.
#[derive(Debug)]
pub enum BackendTarget {
    /// A backend name, checked when the configuration is built.
    Name(String),
    /// `use_backend %[...]`: a name computed per request; one that names
    /// no backend falls back to `default_backend`.
    Dynamic(LogFmt),
}

/// `capture request|response header <name> len <n>`.
#[derive(Debug, Clone)]
pub struct HeaderCapture {
    pub name: String,
    pub len: usize,
}

/// `capture cookie <name> len <n>`.
#[derive(Debug, Clone)]
pub struct CookieCapture {
    pub name: String,
    pub len: usize,
}

/// All the rules of one proxy section.
#[derive(Debug, Default)]
pub struct ProxyRules {
    pub acls: Acls,
    pub tcp_connection: Vec<Rule<Action>>,
    pub tcp_session: Vec<Rule<Action>>,
    pub tcp_content: Vec<Rule<Action>>,
    pub tcp_response: Vec<Rule<Action>>,
    /// `tcp-request inspect-delay`. Default is none: content rules run
    /// once on what has arrived.
    pub inspect_delay: Option<Duration>,
    /// `tcp-response inspect-delay`.
    pub res_inspect_delay: Option<Duration>,
    pub http_request: Vec<Rule<Action>>,
    pub http_response: Vec<Rule<Action>>,
    pub http_after_response: Vec<Rule<Action>>,
    /// The `redirect` keyword's rules (after `http-request`).
    pub redirects: Vec<Rule<Redirect>>,
    pub use_backend: Vec<Rule<BackendTarget>>,
    pub use_server: Vec<Rule<String>>,
    pub req_captures: Vec<HeaderCapture>,
    pub res_captures: Vec<HeaderCapture>,
    pub cookie_capture: Option<CookieCapture>,
    /// `declare capture request|response len <n>` slots (after the
    /// header captures).
    pub declared_req: Vec<usize>,
    pub declared_res: Vec<usize>,
    /// `monitor-uri`. Default is none.
    pub monitor_uri: Option<String>,
    /// `monitor fail` conditions.
    pub monitor_fail: Vec<Cond>,
    /// `option http-buffer-request`. Default is off.
    pub buffer_request: bool,
    /// `stats admin if|unless <cond>`: the stats page's admin actions are
    /// allowed when any holds.
    pub stats_admin: Vec<Cond>,
    /// `stats http-request allow|deny|auth [realm R] [if|unless <cond>]`:
    /// the first matching rule decides a stats page request; `stats auth`
    /// applies after them, as HAProxy's implicit last rule.
    pub stats_http: Vec<Rule<StatsRule>>,
    /// Error pages (`errorfile`, `errorloc`, `errorfiles`, `http-error`).
    pub errors: crate::reply::ErrorPages,
    /// The `%[...]` sample expressions of the frontend's `log-format`
    /// that the proxy evaluates (in `fairlead_log::LogFormat::samples`
    /// order). Default is none.
    pub log_samples: Vec<crate::expr::Expr>,
    /// `unique-id-format`. Default is none (no unique id).
    pub unique_id: Option<crate::uniqueid::UniqueId>,
    /// `unique-id-header`: the request header carrying the unique id to
    /// the server. Default is none.
    pub unique_id_header: Option<String>,
    /// `stick match|on|store-request` rules, in file order.
    pub stick_req: Vec<crate::sticking::StickRule>,
    /// `stick store-response` rules, in file order.
    pub stick_res: Vec<crate::sticking::StickRule>,
    /// `force-persist` and `ignore-persist` rules, in file order: the
    /// first whose condition holds decides ([`ProxyRules::persist_mode`]).
    /// Default is none.
    pub persist: Vec<(PersistMode, Cond)>,
    /// Highest rank of rule kind seen so far, for HAProxy's ordering
    /// warnings.
    last_rank: u8,
}

/// What a `force-persist` or `ignore-persist` rule decides for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistMode {
    /// `force-persist`: the server the persistence cookie or a `stick
    /// match` designates is used even when it is down or in maintenance.
    Force,
    /// `ignore-persist`: the persistence cookie is neither read nor set
    /// (the request is balanced).
    Ignore,
}

/// What the section is, for validity checks.
#[derive(Debug, Clone, Copy)]
pub struct SectionInfo {
    pub frontend: bool,
    pub backend: bool,
    pub http: bool,
    /// `tune.bufsize`.
    pub max_reply: usize,
}

/// HAProxy's fixed evaluation order (for the "will still be processed
/// before" warnings).
fn rank(kw: &str, sub: Option<&str>) -> Option<(u8, &'static str)> {
    Some(match (kw, sub) {
        ("tcp-request", Some("connection")) => (1, "tcp-request connection"),
        ("tcp-request", Some("session")) => (2, "tcp-request session"),
        ("tcp-request", Some("content")) => (3, "tcp-request content"),
        ("monitor", _) => (4, "monitor fail"),
        ("http-request", _) => (5, "http-request"),
        ("redirect", _) => (6, "redirect"),
        ("use_backend", _) => (7, "use_backend"),
        ("use-server", _) => (8, "use-server"),
        _ => return None,
    })
}

fn rank_name(r: u8) -> &'static str {
    match r {
        1 => "tcp-request connection",
        2 => "tcp-request session",
        3 => "tcp-request content",
        4 => "monitor fail",
        5 => "http-request",
        6 => "redirect",
        7 => "use_backend",
        _ => "use-server",
    }
}

/// The keywords [`ProxyRules::add`] handles.
pub const KEYWORDS: &[&str] = &[
    "acl",
    "http-request",
    "http-response",
    "http-after-response",
    "tcp-request",
    "tcp-response",
    "redirect",
    "use_backend",
    "use-server",
    "capture",
    "declare",
    "monitor-uri",
    "monitor",
    "unique-id-format",
    "unique-id-header",
    "option http-buffer-request",
    "stick",
    "force-persist",
    "ignore-persist",
];

impl ProxyRules {
    /// Compiles one line (`words[0]` is the keyword). Returns warnings.
    pub fn add(
        &mut self,
        words: &[String],
        sec: &SectionInfo,
        env: &crate::Env,
    ) -> Result<Vec<String>, String> {
        let kw = words[0].as_str();
        let mut warnings = Vec::new();
        if let Some((r, name)) = rank(kw, words.get(1).map(String::as_str)) {
            if r < self.last_rank {
                warnings.push(format!(
                    "a '{name}' rule placed after a '{}' rule will still be processed before.",
                    rank_name(self.last_rank)
                ));
            }
            self.last_rank = self.last_rank.max(r);
        }
        match kw {
            "acl" => {
                let name = words.get(1).ok_or("'acl' expects an ACL name")?;
                if words.len() < 3 {
                    return Err(format!("'acl {name}' expects a fetch method"));
                }
                warnings.extend(
                    self.acls
                        .add_line(name, &words[2..], env)
                        .map_err(|e| format!("error detected while parsing ACL '{name}' : {e}"))?,
                );
            }
            "http-request" | "http-response" | "http-after-response" => {
                if !sec.http && kw != "http-request" {
                    warnings.push(format!("'{kw}' rules ignored for proxy in TCP mode"));
                }
                let set = match kw {
                    "http-request" => RuleSet::HttpRequest,
                    "http-response" => RuleSet::HttpResponse,
                    _ => RuleSet::HttpAfterResponse,
                };
                let rule = self.action_rule(set, &words[1..], sec, env, &mut warnings)?;
                self.list(set).push(rule);
            }
            "tcp-request" | "tcp-response" => self.tcp(words, sec, env, &mut warnings)?,
            "redirect" => {
                let (body, cond) = split_cond(&words[1..]);
                let r = Redirect::parse(body, env, RuleSet::HttpRequest.usage(), false)
                    .map_err(|e| format!("'redirect': {e}"))?;
                let cond = self.cond(cond, RuleSet::HttpRequest, &mut warnings, env)?;
                self.redirects.push(Rule { action: r, cond });
            }
            "use_backend" => {
                let (body, cond) = split_cond(&words[1..]);
                let [name] = body else {
                    return Err(
                        "'use_backend' expects a backend name (and an optional condition)".into(),
                    );
                };
                let target = if name.contains('%') {
                    BackendTarget::Dynamic(LogFmt::parse(
                        name,
                        env,
                        RuleSet::HttpRequest.usage(),
                        "use_backend",
                    )?)
                } else {
                    BackendTarget::Name(name.clone())
                };
                let cond = self.cond(cond, RuleSet::HttpRequest, &mut warnings, env)?;
                self.use_backend.push(Rule {
                    action: target,
                    cond,
                });
            }
            "use-server" => {
                let (body, cond) = split_cond(&words[1..]);
                let [name] = body else {
                    return Err(
                        "'use-server' expects a server name (and an optional condition)".into(),
                    );
                };
                let cond = self.cond(cond, RuleSet::HttpRequest, &mut warnings, env)?;
                self.use_server.push(Rule {
                    action: name.clone(),
                    cond,
                });
            }
            "option" if words.get(1).map(String::as_str) == Some("http-buffer-request") => {
                if words.len() > 2 {
                    return Err("'option http-buffer-request' takes no argument".into());
                }
                self.buffer_request = true;
            }
            "stats" if words.get(1).map(String::as_str) == Some("http-request") => {
                let (body, cond) = split_cond(&words[2..]);
                let action = match body {
                    [a] if a == "allow" => StatsRule::Allow,
                    [a] if a == "deny" => StatsRule::Deny,
                    [a] if a == "auth" => StatsRule::Auth { realm: None },
                    [a, r, realm] if a == "auth" && r == "realm" => StatsRule::Auth {
                        realm: Some(realm.clone()),
                    },
                    _ => {
                        return Err(
                            "'stats http-request' expects 'allow', 'deny' or 'auth [realm <realm>]', then an optional condition".into(),
                        )
                    }
                };
                let cond = self.cond(cond, RuleSet::HttpRequest, &mut warnings, env)?;
                self.stats_http.push(Rule { action, cond });
            }
            "stats" if words.get(1).map(String::as_str) == Some("admin") => {
                let (_, cond) = split_cond(&words[2..]);
                let c = self
                    .cond(cond, RuleSet::HttpRequest, &mut warnings, env)?
                    .ok_or(
                        "'stats admin' requires either 'if' or 'unless' followed by a condition.",
                    )?;
                self.stats_admin.push(c);
            }
            "stick" => self.stick(words, env, &mut warnings)?,
            "force-persist" | "ignore-persist" => {
                let mode = match kw {
                    "force-persist" => PersistMode::Force,
                    _ => PersistMode::Ignore,
                };
                let (body, cond) = split_cond(&words[1..]);
                let c = match body {
                    [] => self.cond(cond, RuleSet::HttpRequest, &mut warnings, env)?,
                    _ => None,
                }
                .ok_or_else(|| {
                    format!("'{kw}' requires either 'if' or 'unless' followed by a condition.")
                })?;
                self.persist.push((mode, c));
            }
            "capture" => self.capture(words, &mut warnings)?,
            "declare" => self.declare(words)?,
            "monitor-uri" => {
                let uri = words.get(1).ok_or("'monitor-uri' expects an URI")?;
                self.monitor_uri = Some(uri.clone());
            }
            "monitor" => {
                if words.get(1).map(String::as_str) != Some("fail") {
                    return Err("'monitor' expects 'fail'".into());
                }
                let (_, cond) = split_cond(&words[2..]);
                let c = self
                    .cond(cond, RuleSet::HttpRequest, &mut warnings, env)?
                    .ok_or("'monitor fail' expects a condition ('if' or 'unless')")?;
                self.monitor_fail.push(c);
            }
            "unique-id-format" => {
                self.unique_id = Some(crate::uniqueid::UniqueId::parse(words, env)?);
            }
            "unique-id-header" => {
                self.unique_id_header = Some(crate::uniqueid::parse_header(words)?);
            }
            other => return Err(format!("'{other}' is not a rule keyword")),
        }
        Ok(warnings)
    }

    fn list(&mut self, set: RuleSet) -> &mut Vec<Rule<Action>> {
        match set {
            RuleSet::TcpConnection => &mut self.tcp_connection,
            RuleSet::TcpSession => &mut self.tcp_session,
            RuleSet::TcpContent => &mut self.tcp_content,
            RuleSet::TcpResponse => &mut self.tcp_response,
            RuleSet::HttpRequest => &mut self.http_request,
            RuleSet::HttpResponse => &mut self.http_response,
            RuleSet::HttpAfterResponse => &mut self.http_after_response,
        }
    }

    fn cond(
        &mut self,
        words: Option<&[String]>,
        set: RuleSet,
        warnings: &mut Vec<String>,
        env: &crate::Env,
    ) -> Result<Option<Cond>, String> {
        let Some(words) = words else {
            return Ok(None);
        };
        let (c, w) = Cond::parse(words, &mut self.acls, env)?;
        warnings.extend(w);
        let used = c.usage(&self.acls);
        if used & set.usage() == 0 && used != 0 {
            let names: Vec<&str> = c
                .acl_names(&self.acls)
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect();
            let which = if names.is_empty() {
                "anonymous acl".to_string()
            } else {
                format!("acl '{}'", names.join(" "))
            };
            warnings.push(format!(
                "{which} will never match because it only involves keywords that are incompatible with '{}'",
                set.keyword()
            ));
        }
        Ok(Some(c))
    }

    fn action_rule(
        &mut self,
        set: RuleSet,
        words: &[String],
        sec: &SectionInfo,
        env: &crate::Env,
        warnings: &mut Vec<String>,
    ) -> Result<Rule<Action>, String> {
        let (body, cond) = split_cond(words);
        let capture_slots = self.req_captures.len() + self.declared_req.len();
        let capture_slots = if matches!(set, RuleSet::HttpResponse | RuleSet::TcpResponse) {
            self.res_captures.len() + self.declared_res.len()
        } else {
            capture_slots
        };
        let action = {
            let mut cx = ActionCtx {
                env,
                set,
                acls: &mut self.acls,
                max_reply: sec.max_reply,
                capture_slots,
            };
            action::parse(body, &mut cx)?
        };
        let cond = self.cond(cond, set, warnings, env).map_err(|e| {
            format!(
                "'{} {}': {e}",
                set.keyword(),
                body.first().map_or("", |s| s.as_str())
            )
        })?;
        Ok(Rule { action, cond })
    }

    fn tcp(
        &mut self,
        words: &[String],
        sec: &SectionInfo,
        env: &crate::Env,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        let kw = words[0].as_str();
        let sub = words.get(1).map(String::as_str).unwrap_or("");
        let set = match (kw, sub) {
            ("tcp-request", "inspect-delay") | ("tcp-response", "inspect-delay") => {
                let v = words
                    .get(2)
                    .ok_or_else(|| format!("'{kw} inspect-delay' expects a time"))?;
                let d = parse_time(v)
                    .ok_or_else(|| format!("'{kw} inspect-delay': invalid time '{v}'"))?;
                if kw == "tcp-request" {
                    self.inspect_delay = Some(d);
                } else {
                    self.res_inspect_delay = Some(d);
                }
                return Ok(());
            }
            ("tcp-request", "connection") => RuleSet::TcpConnection,
            ("tcp-request", "session") => RuleSet::TcpSession,
            ("tcp-request", "content") => RuleSet::TcpContent,
            ("tcp-response", "content") => RuleSet::TcpResponse,
            _ => {
                return Err(format!(
                    "'{kw}' expects {}, but got '{sub}'",
                    if kw == "tcp-request" {
                        "'inspect-delay', 'connection', 'session' or 'content'"
                    } else {
                        "'inspect-delay' or 'content'"
                    }
                ))
            }
        };
        if matches!(set, RuleSet::TcpConnection | RuleSet::TcpSession) && !sec.frontend {
            return Err(format!(
                "'{kw} {sub}' is only allowed in 'frontend' and 'listen' sections"
            ));
        }
        let rule = self.action_rule(set, &words[2..], sec, env, warnings)?;
        self.list(set).push(rule);
        Ok(())
    }

    fn capture(&mut self, words: &[String], warnings: &mut Vec<String>) -> Result<(), String> {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w.as_slice() {
            ["capture", "request", "header", name, "len", n] | ["capture", "response", "header", name, "len", n] => {
                let len = n.parse().map_err(|_| format!("'capture': invalid length '{n}'"))?;
                let c = HeaderCapture { name: name.to_string(), len };
                if w[1] == "request" {
                    self.req_captures.push(c);
                } else {
                    self.res_captures.push(c);
                }
                Ok(())
            }
            ["capture", "cookie", name, "len", n] => {
                let mut len = n.parse().map_err(|_| format!("'capture cookie': invalid length '{n}'"))?;
                // HAProxy's capture pool holds 64 bytes with the final NUL.
                if len >= 64 {
                    warnings.push("truncating capture length to 63 bytes.".into());
                    len = 63;
                }
                self.cookie_capture = Some(CookieCapture { name: name.to_string(), len });
                Ok(())
            }
            _ => Err("'capture' expects 'cookie <name> len <n>', 'request header <name> len <n>' or 'response header <name> len <n>'".into()),
        }
    }

    /// `stick match|on|store-request|store-response <pattern> [table T]
    /// [if|unless <cond>]`.
    fn stick(
        &mut self,
        words: &[String],
        env: &crate::Env,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        use crate::sticking::{StickOp, StickRule};
        let l = crate::sticking::split_line(&words[1..])?;
        let set = if l.op == StickOp::StoreResponse {
            RuleSet::HttpResponse
        } else {
            RuleSet::HttpRequest
        };
        let ctx = format!("stick {}", words.get(1).map_or("", String::as_str));
        let expr = crate::expr::Expr::parse(l.pattern, env, set.usage(), &ctx)
            .map_err(|e| format!("'{ctx}': {e}"))?;
        let table = match l.table {
            Some(t) => env
                .tables
                .get(t)
                .cloned()
                .ok_or_else(|| format!("'{ctx}': unable to find stick-table '{t}'."))?,
            None => env.own_table.clone().ok_or_else(|| {
                format!("'{ctx}': no stick-table declared in this section; add 'table <name>' or a 'stick-table'.")
            })?,
        };
        let cond = self.cond(l.cond, set, warnings, env)?;
        let rule = StickRule {
            op: l.op,
            expr,
            table,
            cond,
        };
        if l.op == StickOp::StoreResponse {
            self.stick_res.push(rule);
        } else {
            self.stick_req.push(rule);
        }
        Ok(())
    }

    fn declare(&mut self, words: &[String]) -> Result<(), String> {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w.as_slice() {
            ["declare", "capture", dir @ ("request" | "response"), "len", n] => {
                let len = n
                    .parse()
                    .map_err(|_| format!("'declare capture': invalid length '{n}'"))?;
                if *dir == "request" {
                    self.declared_req.push(len);
                } else {
                    self.declared_res.push(len);
                }
                Ok(())
            }
            _ => Err("'declare' expects 'capture request|response len <length>'".into()),
        }
    }

    /// What the first `force-persist`/`ignore-persist` rule whose
    /// condition holds decides; `None` when none does.
    pub fn persist_mode(&self, txn: &dyn crate::txn::Txn) -> Option<PersistMode> {
        self.persist
            .iter()
            .find(|(_, c)| c.eval(&self.acls, txn) == crate::acl::Tri::Pass)
            .map(|(m, _)| *m)
    }

    /// Whether the section has any rule the HTTP path must run.
    pub fn has_http_rules(&self) -> bool {
        !self.http_request.is_empty()
            || !self.http_response.is_empty()
            || !self.http_after_response.is_empty()
            || !self.redirects.is_empty()
            || !self.use_backend.is_empty()
            || !self.use_server.is_empty()
            || !self.stick_req.is_empty()
            || !self.stick_res.is_empty()
            || !self.persist.is_empty()
            || !self.tcp_content.is_empty()
            || !self.req_captures.is_empty()
            || !self.res_captures.is_empty()
            || self.cookie_capture.is_some()
            || !self.log_samples.is_empty()
            || self.unique_id.is_some()
            || self.monitor_uri.is_some()
            || !self.stats_admin.is_empty()
            || !self.stats_http.is_empty()
    }
}

/// The longest time HAProxy accepts: 2147483647 ms (about 24.8 days).
const MAX_TIME_MS: u64 = i32::MAX as u64;

/// A HAProxy time (`10s`, `500ms`, `1m`; plain numbers are milliseconds).
/// Longer than [`MAX_TIME_MS`] is refused, as HAProxy refuses it ("timer
/// overflow").
pub fn parse_time(s: &str) -> Option<Duration> {
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let mult: u64 = match &s[i..] {
        "" | "ms" => 1,
        "us" => return (n <= MAX_TIME_MS * 1000).then(|| Duration::from_micros(n)),
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    let ms = n.checked_mul(mult).filter(|&ms| ms <= MAX_TIME_MS)?;
    Some(Duration::from_millis(ms))
}

#[cfg(test)]
mod time_tests {
    use super::*;

    /// Regression (found while fuzzing `rule_parse`): a huge
    /// `inspect-delay` overflowed (a panic in debug builds, a wrong delay
    /// otherwise); it is refused, as HAProxy refuses it.
    #[test]
    fn huge_times_are_refused() {
        assert_eq!(parse_time("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_time("250"), Some(Duration::from_millis(250)));
        assert_eq!(parse_time("1500us"), Some(Duration::from_micros(1500)));
        assert_eq!(parse_time("24d"), Some(Duration::from_secs(24 * 86_400)));
        assert_eq!(
            parse_time("2147483647"),
            Some(Duration::from_millis(2_147_483_647))
        );
        for s in [
            "25d",
            "2147483648",
            "999999999999999d",
            "18446744073709551615s",
            "99999999999999999h",
        ] {
            assert_eq!(parse_time(s), None, "{s}");
        }
        let mut r = ProxyRules::default();
        let sec = SectionInfo {
            frontend: true,
            backend: true,
            http: true,
            max_reply: 16384,
        };
        let words: Vec<String> = "tcp-request inspect-delay 999999999999999d"
            .split(' ')
            .map(String::from)
            .collect();
        assert!(r.add(&words, &sec, &crate::Env::default()).is_err());
    }
}
