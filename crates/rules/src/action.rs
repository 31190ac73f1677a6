//! Rule actions: `http-request`, `http-response`, `http-after-response`,
//! `tcp-request` and `tcp-response`, parsed into one enum each rule set
//! draws from. What each action does to a stream is in [`crate::exec`].

use crate::answer::Answer;
use crate::cond::Acls;
use crate::expr::{split_call, Expr};
use crate::fmt::LogFmt;
use crate::pattern::PatRef;
use crate::redirect::Redirect;
use crate::txn::VarRef;
use regex::bytes::Regex;
use std::sync::Arc;

/// The rule sets, for error messages and validity checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSet {
    TcpConnection,
    TcpSession,
    TcpContent,
    TcpResponse,
    HttpRequest,
    HttpResponse,
    HttpAfterResponse,
}

impl RuleSet {
    pub fn keyword(self) -> &'static str {
        match self {
            RuleSet::TcpConnection => "tcp-request connection",
            RuleSet::TcpSession => "tcp-request session",
            RuleSet::TcpContent => "tcp-request content",
            RuleSet::TcpResponse => "tcp-response content",
            RuleSet::HttpRequest => "http-request",
            RuleSet::HttpResponse => "http-response",
            RuleSet::HttpAfterResponse => "http-after-response",
        }
    }

    /// The fetch classes this rule set can read.
    pub fn usage(self) -> u8 {
        use crate::fetch::usage::*;
        match self {
            RuleSet::TcpConnection => TCP_CONNECTION,
            RuleSet::TcpSession => TCP_SESSION,
            RuleSet::TcpContent => TCP_CONTENT,
            RuleSet::HttpRequest => HTTP_REQUEST,
            RuleSet::TcpResponse | RuleSet::HttpResponse | RuleSet::HttpAfterResponse => {
                HTTP_RESPONSE
            }
        }
    }

    fn is_response(self) -> bool {
        matches!(
            self,
            RuleSet::TcpResponse | RuleSet::HttpResponse | RuleSet::HttpAfterResponse
        )
    }
}

/// `set-var` conditions (`set-var(txn.x,ifnotset,ifgt)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct VarConds {
    pub ifexists: bool,
    pub ifnotexists: bool,
    pub ifempty: bool,
    pub ifnotempty: bool,
    pub ifset: bool,
    pub ifnotset: bool,
    pub ifgt: bool,
    pub iflt: bool,
}

/// What `replace-header`/`replace-path`/`replace-uri` edit.
#[derive(Debug)]
pub struct Replace {
    pub re: Regex,
    pub with: LogFmt,
}

/// Which part of the request line an URL action sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlPart {
    Path,
    PathQ,
    Query,
    Uri,
    Method,
}

/// Runtime pattern edits (`set-map`, `del-map`, `add-acl`, `del-acl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefEdit {
    SetMap,
    DelMap,
    AddAcl,
    DelAcl,
}

/// One action.
#[derive(Debug)]
pub enum Action {
    AddHeader(String, LogFmt),
    SetHeader(String, LogFmt),
    DelHeader(String),
    /// `replace-header` (whole value) or `replace-value` (each
    /// comma-separated value).
    ReplaceHeader {
        name: String,
        rep: Replace,
        each_value: bool,
    },
    SetUrl(UrlPart, LogFmt),
    ReplaceUrl(UrlPart, Replace),
    SetStatus(u16, Option<String>),
    SetVar(VarRef, Expr, VarConds),
    SetVarFmt(VarRef, LogFmt, VarConds),
    UnsetVar(VarRef),
    Capture {
        expr: Expr,
        len: usize,
        id: Option<usize>,
    },
    SetLogLevel(Option<u8>),
    SetSrc(Expr),
    /// `tcp-request connection expect-proxy layer4`: a PROXY protocol
    /// header must start the connection.
    ExpectProxy,
    /// `track-scN <key> [table T]`.
    TrackSc {
        slot: usize,
        key: Expr,
        table: fairlead_stick::Table,
        from: fairlead_stick::TrackFrom,
    },
    /// `sc-inc-gpc0(N)`, `sc-inc-gpc1(N)`, `sc-inc-gpc(idx,N)`.
    ScIncGpc {
        slot: usize,
        which: fairlead_stick::Gpc,
    },
    /// `sc-set-gpt0(N) <value>`, `sc-set-gpt(idx,N) <value>`.
    ScSetGpt {
        slot: usize,
        which: fairlead_stick::Gpt,
        value: crate::stick_actions::GptValue,
    },
    RefEdit {
        op: RefEdit,
        target: Arc<PatRef>,
        path: String,
        key: LogFmt,
        value: Option<LogFmt>,
    },
    // Final actions.
    Allow,
    Deny(Box<Answer>),
    Tarpit(Box<Answer>),
    Reject,
    SilentDrop,
    Close,
    Auth(Option<String>),
    Redirect(Box<Redirect>),
    Return(Box<Answer>),
    UseService(String),
    /// `do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>` (see
    /// [`crate::resolve`]).
    DoResolve(Box<crate::resolve::DoResolve>),
}

impl Action {
    /// Whether the action ends the rule set (in its section).
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            Action::Allow
                | Action::Deny(_)
                | Action::Tarpit(_)
                | Action::Reject
                | Action::SilentDrop
                | Action::Close
                | Action::Auth(_)
                | Action::Redirect(_)
                | Action::Return(_)
                | Action::UseService(_)
        )
    }
}

/// What parsing an action needs besides the words.
pub struct ActionCtx<'a> {
    pub env: &'a crate::Env,
    pub set: RuleSet,
    pub acls: &'a mut Acls,
    /// `tune.bufsize`, the largest reply a file may hold.
    pub max_reply: usize,
    /// Slots declared with `capture request|response header` and
    /// `declare capture`, for `capture ... id N`.
    pub capture_slots: usize,
}

/// The actions each rule set accepts (for messages and docs).
pub const HTTP_REQUEST_ACTIONS: &[&str] = &[
    "add-header",
    "set-header",
    "del-header",
    "replace-header",
    "replace-value",
    "set-path",
    "set-pathq",
    "replace-path",
    "replace-pathq",
    "set-query",
    "set-uri",
    "replace-uri",
    "set-method",
    "set-var",
    "set-var-fmt",
    "unset-var",
    "allow",
    "deny",
    "reject",
    "tarpit",
    "silent-drop",
    "auth",
    "redirect",
    "return",
    "capture",
    "set-log-level",
    "set-src",
    "use-service",
    "set-map",
    "del-map",
    "add-acl",
    "del-acl",
    "do-resolve",
];
pub const HTTP_RESPONSE_ACTIONS: &[&str] = &[
    "add-header",
    "set-header",
    "del-header",
    "replace-header",
    "replace-value",
    "set-status",
    "allow",
    "deny",
    "redirect",
    "return",
    "set-var",
    "set-var-fmt",
    "unset-var",
    "capture",
    "set-log-level",
    "silent-drop",
    "set-map",
    "del-map",
    "add-acl",
    "del-acl",
];
pub const HTTP_AFTER_RESPONSE_ACTIONS: &[&str] = &[
    "add-header",
    "set-header",
    "del-header",
    "replace-header",
    "replace-value",
    "set-status",
    "allow",
    "set-var",
    "set-var-fmt",
    "unset-var",
];
pub const TCP_ACTIONS: &[&str] = &[
    "accept",
    "reject",
    "silent-drop",
    "set-var",
    "set-var-fmt",
    "unset-var",
];

/// `set-src` in `tcp-request connection|session|content` (not in
/// `tcp-response`): the address later rules, the HTTP transactions and
/// the logs see. `do-resolve` in `tcp-request content` (HAProxy 2.6 has
/// it there too, in TCP and HTTP mode): the rules wait for the answer.
pub(crate) fn tcp_request_set_src(set: RuleSet, name: &str) -> bool {
    (name == "set-src"
        && matches!(
            set,
            RuleSet::TcpConnection | RuleSet::TcpSession | RuleSet::TcpContent
        ))
        || (name == "do-resolve" && set == RuleSet::TcpContent)
}

fn allowed(set: RuleSet) -> &'static [&'static str] {
    match set {
        RuleSet::HttpRequest => HTTP_REQUEST_ACTIONS,
        RuleSet::HttpResponse => HTTP_RESPONSE_ACTIONS,
        RuleSet::HttpAfterResponse => HTTP_AFTER_RESPONSE_ACTIONS,
        _ => TCP_ACTIONS,
    }
}

/// Actions HAProxy has that Fairlead does not implement yet, so the error
/// says "not implemented" rather than "unknown".
pub(crate) const KNOWN_NOT_YET: &[&str] = &[
    "sc-add-gpc",
    "wait-for-body",
    "wait-for-handshake",
    "cache-use",
    "cache-store",
    "set-timeout",
    "set-nice",
    "set-tos",
    "set-mark",
    "set-dst",
    "set-dst-port",
    "set-src-port",
    "early-hint",
    "normalize-uri",
    "lua",
    "send-spoe-group",
    "set-bandwidth-limit",
    "strict-mode",
    "disable-l7-retry",
    "set-priority-class",
    "set-priority-offset",
    "expect-netscaler-cip",
    "switch-mode",
    "set-fc-mark",
    "set-fc-tos",
    "sc-add-gpc",
    "set-retries",
    "attach-srv",
    "set-bc-mark",
    "set-bc-tos",
    "close",
];

fn is_protected_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding")
}

fn one_arg<'w>(words: &'w [String], name: &str, what: &str) -> Result<&'w str, String> {
    words
        .get(1)
        .map(String::as_str)
        .ok_or_else(|| format!("'{name}' expects {what}"))
}

/// Parses the action words (before `if`/`unless`).
pub fn parse(words: &[String], cx: &mut ActionCtx<'_>) -> Result<Action, String> {
    let set = cx.set;
    let kw = set.keyword();
    let Some(first) = words.first() else {
        return Err(format!("'{kw}' expects an action"));
    };
    let (name, _) = split_call(first).unwrap_or((first.as_str(), Vec::new()));
    let full = format!("{kw} {name}");
    if let Some(a) = crate::stick_actions::parse(name, words, cx) {
        return a.map_err(|e| format!("'{full}': {e}"));
    }
    if name == "expect-proxy" {
        if set != RuleSet::TcpConnection {
            return Err(format!(
                "'{full}': this action is only valid in 'tcp-request connection' rules"
            ));
        }
        if words.len() != 2 || words[1] != "layer4" {
            return Err(format!("'{full}': expects 'layer4'"));
        }
        return Ok(Action::ExpectProxy);
    }
    if !allowed(set).contains(&name) && !tcp_request_set_src(set, name) {
        if allowed(RuleSet::HttpRequest).contains(&name)
            || allowed(RuleSet::HttpResponse).contains(&name)
            || TCP_ACTIONS.contains(&name)
            || matches!(name, "close")
        {
            if !(set == RuleSet::TcpResponse && name == "close") {
                return Err(format!(
                    "'{full}': this action is not valid in '{kw}' rules"
                ));
            }
        } else if KNOWN_NOT_YET.contains(&name) || name.starts_with("lua.") {
            return Err(format!("'{full}' is not implemented yet in Fairlead"));
        } else {
            return Err(format!(
                "'{kw}' expects one of {}, but got '{name}'",
                allowed(set).join(", ")
            ));
        }
    }
    parse_known(name, words, cx).map_err(|e| format!("'{full}': {e}"))
}

fn fmt(s: &str, cx: &ActionCtx<'_>) -> Result<LogFmt, String> {
    LogFmt::parse(s, cx.env, cx.set.usage(), cx.set.keyword())
}

fn expr(s: &str, cx: &ActionCtx<'_>) -> Result<Expr, String> {
    Expr::parse(s, cx.env, cx.set.usage(), cx.set.keyword())
}

fn parse_known(name: &str, words: &[String], cx: &mut ActionCtx<'_>) -> Result<Action, String> {
    let n = words.len();
    let header_pair = |what: &str| -> Result<(String, &String), String> {
        if n != 3 {
            return Err(format!("expects exactly 2 arguments: <name> <{what}>"));
        }
        Ok((words[1].clone(), &words[2]))
    };
    Ok(match name {
        "add-header" | "set-header" => {
            let (h, v) = header_pair("fmt")?;
            if is_protected_header(&h) {
                return Err(format!(
                    "editing '{h}' would change the message framing and is refused"
                ));
            }
            let f = fmt(v, cx)?;
            if name == "add-header" {
                Action::AddHeader(h, f)
            } else {
                Action::SetHeader(h, f)
            }
        }
        "del-header" => {
            let h = one_arg(words, name, "a header name")?;
            if n > 2 && !(n == 4 && words[2] == "-m" && words[3] == "str") {
                return Err(
                    "only '-m str' (the default) is supported after the header name".into(),
                );
            }
            if is_protected_header(h) {
                return Err(format!(
                    "deleting '{h}' would change the message framing and is refused"
                ));
            }
            Action::DelHeader(h.to_string())
        }
        "replace-header" | "replace-value" => {
            if n != 4 {
                return Err(
                    "expects exactly 3 arguments: <name> <match-regex> <replace-fmt>".into(),
                );
            }
            if is_protected_header(&words[1]) {
                return Err(format!(
                    "editing '{}' would change the message framing and is refused",
                    words[1]
                ));
            }
            Action::ReplaceHeader {
                name: words[1].clone(),
                rep: replace(&words[2], &words[3], cx)?,
                each_value: name == "replace-value",
            }
        }
        "set-path" | "set-pathq" | "set-query" | "set-uri" | "set-method" => {
            if n != 2 {
                return Err("expects exactly 1 argument: <fmt>".into());
            }
            Action::SetUrl(url_part(name), fmt(&words[1], cx)?)
        }
        "replace-path" | "replace-pathq" | "replace-uri" => {
            if n != 3 {
                return Err("expects exactly 2 arguments: <match-regex> <replace-fmt>".into());
            }
            Action::ReplaceUrl(url_part(name), replace(&words[1], &words[2], cx)?)
        }
        "set-status" => {
            let code: u16 = one_arg(words, name, "a status code")?
                .parse()
                .ok()
                .filter(|c| (100..=999).contains(c))
                .ok_or("expects a status code between 100 and 999")?;
            let reason = match &words[2..] {
                [] => None,
                [r, v] if r == "reason" => Some(v.clone()),
                _ => return Err("expects '<code> [reason <str>]'".into()),
            };
            Action::SetStatus(code, reason)
        }
        "do-resolve" => Action::DoResolve(Box::new(crate::resolve::parse(
            words,
            |r| cx.env.resolvers.contains(r),
            |e| expr(e, cx),
        )?)),
        _ if name.starts_with("set-var") || name.starts_with("unset-var") => set_var(words, cx)?,
        "capture" => capture(words, cx)?,
        "set-log-level" => {
            let l = one_arg(words, name, "a log level")?;
            let lvl = match l {
                "silent" => None,
                _ => Some(
                    [
                        "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
                    ]
                    .iter()
                    .position(|x| *x == l)
                    .ok_or_else(|| format!("unknown log level '{l}'"))? as u8,
                ),
            };
            Action::SetLogLevel(lvl)
        }
        "set-src" => {
            let e = expr(one_arg(words, name, "a sample expression")?, cx)?;
            Action::SetSrc(e)
        }
        "allow" | "accept" => Action::Allow,
        "reject" => Action::Reject,
        "silent-drop" => Action::SilentDrop,
        "close" => Action::Close,
        "deny" | "tarpit" => {
            // HAProxy's defaults: 403 for `deny`, 500 for `tarpit`, 502 in
            // response rules.
            let default = match (cx.set.is_response(), name) {
                (true, _) => 502,
                (false, "tarpit") => 500,
                (false, _) => 403,
            };
            let (mut reply, used) = deny_reply(&words[1..], default, cx)?;
            if 1 + used != n {
                return Err(format!("unexpected argument '{}'", words[1 + used]));
            }
            reply.is_error = true;
            if name == "deny" {
                Action::Deny(Box::new(reply))
            } else {
                Action::Tarpit(Box::new(reply))
            }
        }
        "auth" => match &words[1..] {
            [] => Action::Auth(None),
            [r, realm] if r == "realm" => Action::Auth(Some(realm.clone())),
            _ => return Err("expects '[realm <realm>]'".into()),
        },
        "redirect" => Action::Redirect(Box::new(Redirect::parse(
            &words[1..],
            cx.env,
            cx.set.usage(),
            true,
        )?)),
        "return" => {
            let (reply, used) =
                Answer::parse(&words[1..], 200, true, cx.max_reply, cx.env, cx.set.usage())?;
            if 1 + used != n {
                return Err(format!("unexpected argument '{}'", words[1 + used]));
            }
            Action::Return(Box::new(reply))
        }
        "use-service" => {
            let svc = one_arg(words, name, "a service name")?;
            return Err(format!(
                "service '{svc}' is not implemented yet in Fairlead (only 'prometheus-exporter', unconditionally or with a path condition)"
            ));
        }
        _ => ref_edit(name, words, cx)?,
    })
}

fn url_part(name: &str) -> UrlPart {
    match name {
        "set-path" | "replace-path" => UrlPart::Path,
        "set-pathq" | "replace-pathq" => UrlPart::PathQ,
        "set-query" => UrlPart::Query,
        "set-method" => UrlPart::Method,
        _ => UrlPart::Uri,
    }
}

fn replace(re: &str, with: &str, cx: &ActionCtx<'_>) -> Result<Replace, String> {
    Ok(Replace {
        re: Regex::new(re).map_err(|e| format!("invalid regex '{re}': {e}"))?,
        with: fmt(with, cx)?,
    })
}

/// `deny`/`tarpit` options: `[deny_status <code>]` then the reply
/// options shared with `return`.
fn deny_reply(
    words: &[String],
    default: u16,
    cx: &ActionCtx<'_>,
) -> Result<(Answer, usize), String> {
    let mut status = default;
    let mut used = 0;
    if words.first().is_some_and(|w| w == "deny_status") {
        status = words
            .get(1)
            .and_then(|s| s.parse().ok())
            .filter(|c| (200..=599).contains(c))
            .ok_or("'deny_status' expects a status code between 200 and 599")?;
        used = 2;
    }
    // `deny` options: without a payload option the reply is the proxy's
    // error page for the status (HAProxy's `default-errorfiles`).
    let (mut r, n) = Answer::parse(
        &words[used..],
        status,
        false,
        cx.max_reply,
        cx.env,
        cx.set.usage(),
    )?;
    if used > 0 {
        r.set_status(status);
    }
    Ok((r, used + n))
}

fn set_var(words: &[String], cx: &ActionCtx<'_>) -> Result<Action, String> {
    let (name, args) = split_call(&words[0])?;
    let var = VarRef::parse(
        args.first()
            .ok_or("expects a variable name in parentheses")?,
    )?;
    if cx.set.is_response() && var.scope == crate::txn::Scope::Req {
        return Err(format!(
            "variable scope 'req' is not available in '{}' rules",
            cx.set.keyword()
        ));
    }
    if matches!(
        cx.set,
        RuleSet::HttpRequest | RuleSet::TcpContent | RuleSet::TcpConnection | RuleSet::TcpSession
    ) && var.scope == crate::txn::Scope::Res
    {
        return Err(format!(
            "variable scope 'res' is not available in '{}' rules",
            cx.set.keyword()
        ));
    }
    match name {
        "unset-var" => {
            if words.len() != 1 {
                return Err("expects no argument after the variable".into());
            }
            Ok(Action::UnsetVar(var))
        }
        "set-var-fmt" | "set-var" => {
            if words.len() != 2 {
                return Err(if name == "set-var" {
                    "expects exactly 1 argument: <expr>".into()
                } else {
                    "expects exactly 1 argument: <fmt>".into()
                });
            }
            // Both take conditions (HAProxy's `parse_store`).
            let mut c = VarConds::default();
            for a in &args[1..] {
                match a.as_str() {
                    "ifexists" => c.ifexists = true,
                    "ifnotexists" => c.ifnotexists = true,
                    "ifempty" => c.ifempty = true,
                    "ifnotempty" => c.ifnotempty = true,
                    "ifset" => c.ifset = true,
                    "ifnotset" => c.ifnotset = true,
                    "ifgt" => c.ifgt = true,
                    "iflt" => c.iflt = true,
                    o => return Err(format!("unknown set-var condition '{o}'")),
                }
            }
            if name == "set-var" {
                Ok(Action::SetVar(var, expr(&words[1], cx)?, c))
            } else {
                Ok(Action::SetVarFmt(var, fmt(&words[1], cx)?, c))
            }
        }
        _ => Err(format!("unknown action '{name}'")),
    }
}

fn capture(words: &[String], cx: &ActionCtx<'_>) -> Result<Action, String> {
    let e = expr(
        one_arg(words, "capture", "<expr> len <length> | id <id>")?,
        cx,
    )?;
    match &words[2..] {
        [k, v] if k == "len" && matches!(cx.set, RuleSet::HttpRequest | RuleSet::TcpContent) => {
            let len = v.parse().map_err(|_| format!("invalid length '{v}'"))?;
            Ok(Action::Capture {
                expr: e,
                len,
                id: None,
            })
        }
        [k, v] if k == "id" => {
            let id: usize = v.parse().map_err(|_| format!("invalid capture id '{v}'"))?;
            if id >= cx.capture_slots {
                return Err(format!("capture id {id} does not exist (declare it with 'capture request|response header' or 'declare capture')"));
            }
            Ok(Action::Capture {
                expr: e,
                len: 0,
                id: Some(id),
            })
        }
        _ => Err("expects '<expr> len <length>' or '<expr> id <id>'".into()),
    }
}

fn ref_edit(name: &str, words: &[String], cx: &ActionCtx<'_>) -> Result<Action, String> {
    let (base, args) = split_call(&words[0])?;
    let op = match base {
        "set-map" => RefEdit::SetMap,
        "del-map" => RefEdit::DelMap,
        "add-acl" => RefEdit::AddAcl,
        "del-acl" => RefEdit::DelAcl,
        _ => return Err(format!("unknown action '{name}'")),
    };
    let path = args.first().ok_or("expects a file name in parentheses")?;
    let want = if op == RefEdit::SetMap { 3 } else { 2 };
    if words.len() != want {
        return Err(if op == RefEdit::SetMap {
            "expects exactly 2 arguments: <key fmt> <value fmt>".into()
        } else {
            "expects exactly 1 argument: <key fmt>".into()
        });
    }
    let target = cx
        .env
        .patterns
        .load_file(path, matches!(op, RefEdit::SetMap | RefEdit::DelMap))?;
    Ok(Action::RefEdit {
        op,
        target,
        path: path.clone(),
        key: fmt(&words[1], cx)?,
        value: if op == RefEdit::SetMap {
            Some(fmt(&words[2], cx)?)
        } else {
            None
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in(set: RuleSet, line: &str) -> Result<Action, String> {
        let env = crate::Env::default();
        let mut acls = Acls::default();
        let mut cx = ActionCtx {
            env: &env,
            set,
            acls: &mut acls,
            max_reply: 16384,
            capture_slots: 0,
        };
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        parse(&words, &mut cx)
    }

    /// Regression (checked against HAProxy 2.6.12): `deny` and `tarpit`
    /// without a payload option send the proxy's error page for their
    /// status: 403 for `deny`, 500 for `tarpit`, 502 in response rules.
    #[test]
    fn deny_and_tarpit_send_the_error_page() {
        use RuleSet::{HttpRequest, HttpResponse};
        for (set, line, status) in [
            (HttpRequest, "deny", 403),
            (HttpRequest, "tarpit", 500),
            (HttpResponse, "deny", 502),
            (HttpRequest, "deny deny_status 429", 429),
            (HttpRequest, "tarpit deny_status 503", 503),
        ] {
            let a = match parse_in(set, line) {
                Ok(Action::Deny(a) | Action::Tarpit(a)) => a,
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(a.status(), status, "{line}");
            assert!(a.is_default && a.is_error, "{line}");
        }
        let a = match parse_in(HttpRequest, "deny content-type text/plain string nope") {
            Ok(Action::Deny(a)) => a,
            other => panic!("{other:?}"),
        };
        assert_eq!(a.status(), 403);
        assert!(!a.is_default);
    }

    #[test]
    fn expect_proxy_only_in_connection_rules() {
        assert!(matches!(
            parse_in(RuleSet::TcpConnection, "expect-proxy layer4"),
            Ok(Action::ExpectProxy)
        ));
        let e = parse_in(RuleSet::TcpConnection, "expect-proxy").unwrap_err();
        assert!(e.contains("expects 'layer4'"), "{e}");
        let e = parse_in(RuleSet::TcpConnection, "expect-proxy layer7").unwrap_err();
        assert!(e.contains("expects 'layer4'"), "{e}");
        let e = parse_in(RuleSet::TcpContent, "expect-proxy layer4").unwrap_err();
        assert!(e.contains("only valid in 'tcp-request connection'"), "{e}");
    }
}
