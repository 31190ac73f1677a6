//! Running a rule set against a stream.
//!
//! The proxy implements [`Stream`] (reads through [`Txn`], edits through
//! [`Edit`]); [`run`] walks one rule set in order and returns the verdict
//! of the first final action, or [`Verdict::Continue`]. Values are
//! rendered before anything is edited, so a rule sees the edits of the
//! rules before it, as in HAProxy.

use crate::acl::Tri;
use crate::action::{Action, RefEdit, UrlPart, VarConds};
use crate::answer::Answer;
use crate::cond::Acls;
use crate::proxy::Rule;
use crate::redirect::Redirect;
use crate::sample::{Sample, SmpType};
use crate::txn::{Txn, VarRef};
use std::net::IpAddr;

/// Edits of one message head.
pub trait Edit {
    fn add_header(&mut self, name: &[u8], value: &[u8]);
    /// Removes every field called `name`.
    fn del_header(&mut self, name: &[u8]);
    /// Replaces the value of the `i`th field (as [`crate::txn::Msg::header`]
    /// numbers them).
    fn set_header_value(&mut self, i: usize, value: &[u8]);
    fn set_url(&mut self, part: UrlPart, value: &[u8]);
    fn set_status(&mut self, code: u16, reason: Option<&[u8]>);
}

/// A stream that rules may change.
pub trait Stream: Txn {
    /// The request (`false`) or response (`true`) head to edit.
    fn edit(&mut self, res: bool) -> Option<&mut dyn Edit>;
    fn set_var(&mut self, v: &VarRef, s: Sample<'static>);
    fn unset_var(&mut self, v: &VarRef);
    /// Whether the variable exists, even created but unset (`ifexists`).
    /// Default is "it has a value".
    fn var_exists(&self, v: &VarRef) -> bool {
        self.var(v).is_some()
    }
    /// Creates the variable without a value (a `set-var` whose condition
    /// failed, as HAProxy's `var_set`). Default does nothing.
    fn create_var(&mut self, _v: &VarRef) {}
    fn set_src(&mut self, _ip: IpAddr) {}
    /// Stores a capture: `id` is the slot (`capture ... id N` or a
    /// `http-request capture ... len` slot given by the caller).
    fn capture(&mut self, _res: bool, _id: Option<usize>, _value: Vec<u8>) {}
    fn set_log_level(&mut self, _level: Option<u8>) {}
    /// `expect-proxy layer4`: a PROXY protocol header must be read before
    /// anything else.
    fn expect_proxy(&mut self) {}
    /// The stick counter slots `track-scN` and the `sc-*` actions use:
    /// the stream's when the rules run on a stream (`tcp-request content`,
    /// `tcp-response content`, HTTP rules), else the session's
    /// (`tcp-request connection|session`), as HAProxy 2.6 does; `None`
    /// where tracking is not wired (nothing happens).
    fn trackers_mut(&mut self) -> Option<&mut fairlead_stick::Trackers> {
        None
    }
}

/// What a rule set decided.
#[derive(Debug)]
pub enum Verdict<'r> {
    /// No final action matched: go on.
    Continue,
    /// `allow`/`accept`: stop this rule set, go on.
    Allow,
    Deny(&'r Answer),
    Tarpit(&'r Answer),
    Reject,
    SilentDrop,
    Close,
    Auth(Option<&'r str>),
    Redirect(&'r Redirect, Vec<u8>),
    Return(&'r Answer),
    UseService(&'r str),
    /// A condition needs data that has not arrived (MISS).
    Wait,
    /// `do-resolve`: the name to resolve before the rules go on (from
    /// the rule after the one [`run_from`] names).
    Resolve(crate::resolve::Resolved),
}

/// Runs `rules` in order. `res` says which message header actions edit.
pub fn run<'r>(
    rules: &'r [Rule<Action>],
    acls: &Acls,
    s: &mut dyn Stream,
    res: bool,
) -> Verdict<'r> {
    run_from(rules, acls, s, res, 0).0
}

/// Runs `rules` in order from the one at index `start` (after a
/// [`Verdict::Resolve`], the index after the one it came from). Returns
/// the verdict and the index of the rule that gave it (`rules.len()` for
/// [`Verdict::Continue`]).
pub fn run_from<'r>(
    rules: &'r [Rule<Action>],
    acls: &Acls,
    s: &mut dyn Stream,
    res: bool,
    start: usize,
) -> (Verdict<'r>, usize) {
    for (i, rule) in rules.iter().enumerate().skip(start) {
        match rule.check(acls, s) {
            Tri::Fail => continue,
            Tri::Miss => return (Verdict::Wait, i),
            Tri::Pass => {}
        }
        match apply(&rule.action, s, res) {
            Verdict::Continue => {}
            v => return (v, i),
        }
    }
    (Verdict::Continue, rules.len())
}

fn apply<'r>(a: &'r Action, s: &mut dyn Stream, res: bool) -> Verdict<'r> {
    match a {
        Action::AddHeader(name, f) | Action::SetHeader(name, f) => {
            let set = matches!(a, Action::SetHeader(..));
            match f.as_literal() {
                // Constant values: no rendering, no allocation.
                Some(v) => {
                    if let Some(e) = s.edit(res) {
                        put_header(e, set, name, v);
                    }
                }
                None => with_scratch(|buf| {
                    f.render(s, buf);
                    if let Some(e) = s.edit(res) {
                        put_header(e, set, name, buf);
                    }
                }),
            }
        }
        Action::DelHeader(name) => {
            if let Some(e) = s.edit(res) {
                e.del_header(name.as_bytes());
            }
        }
        Action::ReplaceHeader {
            name,
            rep,
            each_value,
        } => {
            let edits = replace_header(s, res, name, rep, *each_value);
            if let Some(e) = s.edit(res) {
                for (i, v) in edits {
                    e.set_header_value(i, &v);
                }
            }
        }
        Action::SetUrl(part, f) => {
            let v = f.render_vec(s);
            if let Some(e) = s.edit(false) {
                e.set_url(*part, &v);
            }
        }
        Action::ReplaceUrl(part, rep) => {
            if let Some(v) = replace_url(s, *part, rep) {
                if let Some(e) = s.edit(false) {
                    e.set_url(*part, &v);
                }
            }
        }
        Action::SetStatus(code, reason) => {
            if let Some(e) = s.edit(true) {
                e.set_status(*code, reason.as_deref().map(str::as_bytes));
            }
        }
        Action::SetVar(v, e, c) => {
            let val = e.eval(s).ok().flatten().map(Sample::into_owned);
            if let Some(val) = val {
                if var_conds_allow(s, v, &val, c) {
                    s.set_var(v, val);
                }
            }
        }
        Action::SetVarFmt(v, f, c) => {
            let val = Sample::owned_str(f.render_vec(s));
            if var_conds_allow(s, v, &val, c) {
                s.set_var(v, val);
            }
        }
        Action::UnsetVar(v) => s.unset_var(v),
        Action::Capture { expr, len, id } => {
            let val = expr
                .eval_str(s)
                .and_then(|v| v.as_bytes().map(<[u8]>::to_vec));
            if let Some(mut v) = val {
                if *len > 0 {
                    v.truncate(*len);
                }
                s.capture(res, *id, v);
            }
        }
        Action::SetLogLevel(l) => s.set_log_level(*l),
        Action::ExpectProxy => s.expect_proxy(),
        Action::TrackSc {
            slot,
            key,
            table,
            from,
        } => {
            let v = key.eval(s).ok().flatten().map(Sample::into_owned);
            // `http-response track-scN` counts the response's status.
            let from = match from {
                fairlead_stick::TrackFrom::HttpResponse(_) => {
                    fairlead_stick::TrackFrom::HttpResponse(s.res().map_or(0, |r| r.status()))
                }
                f => *f,
            };
            if let Some(v) = v {
                if let (Some(k), Some(t)) = (crate::stick::key_input(&v), s.trackers_mut()) {
                    t.track(*slot, table, &k, from, false, crate::stick::now_ms());
                }
            }
        }
        Action::ScIncGpc { slot, which } => {
            if let Some(t) = s.trackers_mut() {
                t.inc_gpc(*slot, *which, crate::stick::now_ms());
            }
        }
        Action::ScSetGpt { slot, which, value } => {
            let v = match value {
                crate::stick_actions::GptValue::Int(i) => Some(*i),
                crate::stick_actions::GptValue::Expr(e) => {
                    match e.eval(s).ok().flatten().and_then(|v| v.cast(SmpType::Sint)) {
                        Some(Sample::Sint(v)) => Some(v),
                        _ => None,
                    }
                }
            };
            if let (Some(v), Some(t)) = (v, s.trackers_mut()) {
                t.set_gpt(*slot, *which, v, crate::stick::now_ms());
            }
        }
        Action::SetSrc(e) => {
            let ip = e.eval(s).ok().flatten().and_then(|v| v.cast(SmpType::Addr));
            match ip {
                Some(Sample::Ipv4(a)) => s.set_src(IpAddr::V4(a)),
                Some(Sample::Ipv6(a)) => s.set_src(IpAddr::V6(a)),
                _ => {}
            }
        }
        Action::RefEdit {
            op,
            target,
            key,
            value,
            ..
        } => {
            let k = key.render_vec(s);
            let v = value.as_ref().map(|f| f.render_vec(s));
            let k = String::from_utf8_lossy(&k).into_owned();
            match op {
                RefEdit::SetMap => {
                    let v = String::from_utf8_lossy(&v.unwrap_or_default()).into_owned();
                    target.set_or_add(&k, &v);
                }
                RefEdit::AddAcl => {
                    target.add_unique(&k);
                }
                RefEdit::DelMap | RefEdit::DelAcl => {
                    target.delete_key(&k);
                }
            }
        }
        Action::DoResolve(d) => {
            // An empty or missing name leaves the variable unset.
            let name = d
                .expr
                .eval_str(s)
                .and_then(|v| v.as_bytes().map(<[u8]>::to_vec))
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|n| !n.is_empty());
            if let Some(name) = name {
                return Verdict::Resolve(crate::resolve::Resolved {
                    var: d.var.clone(),
                    resolvers: d.resolvers.clone(),
                    family: d.family,
                    name,
                });
            }
        }
        Action::Allow => return Verdict::Allow,
        Action::Deny(r) => return Verdict::Deny(r),
        Action::Tarpit(r) => return Verdict::Tarpit(r),
        Action::Reject => return Verdict::Reject,
        Action::SilentDrop => return Verdict::SilentDrop,
        Action::Close => return Verdict::Close,
        Action::Auth(realm) => return Verdict::Auth(realm.as_deref()),
        Action::Redirect(r) => {
            if let Some(loc) = r.location(s) {
                return Verdict::Redirect(r, loc);
            }
        }
        Action::Return(r) => return Verdict::Return(r),
        Action::UseService(n) => return Verdict::UseService(n),
    }
    Verdict::Continue
}

fn put_header(e: &mut dyn Edit, set: bool, name: &str, v: &[u8]) {
    if set {
        e.del_header(name.as_bytes());
    }
    e.add_header(name.as_bytes(), v);
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's rendering buffer, emptied (it keeps its
/// capacity, so rendering a header value does not allocate).
fn with_scratch(f: impl FnOnce(&mut Vec<u8>)) {
    SCRATCH.with(|c| match c.try_borrow_mut() {
        Ok(mut b) => {
            b.clear();
            f(&mut b);
        }
        Err(_) => f(&mut Vec::new()),
    });
}

/// HAProxy's `set-var` conditions, all of which must hold. As in its
/// `var_set`, `ifexists`/`ifnotexists` are checked first; past them the
/// variable is created (unset) even when a later condition fails.
fn var_conds_allow(s: &mut dyn Stream, v: &VarRef, new: &Sample<'_>, c: &VarConds) -> bool {
    let exists = s.var_exists(v);
    if (c.ifexists && !exists) || (c.ifnotexists && exists) {
        return false;
    }
    if !exists {
        s.create_var(v);
    }
    let cur = s.var(v);
    if (c.ifset && cur.is_none()) || (c.ifnotset && cur.is_some()) {
        return false;
    }
    let empty = |x: &Sample<'_>| x.as_bytes().is_some_and(<[u8]>::is_empty);
    if c.ifempty && !empty(new) {
        return false;
    }
    if c.ifnotempty && empty(new) {
        return false;
    }
    // `ifgt`/`iflt` compare only two integers (the variable's value and
    // the new one); with any other types, or no value yet, they hold
    // (HAProxy's `var_set`).
    if let (Some(Sample::Sint(old)), Sample::Sint(n)) = (cur, new) {
        if c.ifgt && old <= *n {
            return false;
        }
        if c.iflt && old >= *n {
            return false;
        }
    }
    true
}

/// Expands `\1`..`\9` in a rendered replacement with the captures.
fn expand(caps: &regex::bytes::Captures<'_>, with: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < with.len() {
        if with[i] == b'\\' && i + 1 < with.len() && with[i + 1].is_ascii_digit() {
            let n = (with[i + 1] - b'0') as usize;
            if let Some(m) = caps.get(n) {
                out.extend_from_slice(m.as_bytes());
            }
            i += 2;
            continue;
        }
        out.push(with[i]);
        i += 1;
    }
}

/// HAProxy's regex replace (`regex_exec_match2` then `exp_replace`): when
/// the regex matches anywhere in the input, the whole input is replaced
/// by the expanded replacement; the text around the match is not kept
/// (anchor the regex, or capture it, to keep it). `None`: no match.
fn regex_replace(re: &regex::bytes::Regex, input: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    let caps = re.captures(input)?;
    let mut out = Vec::with_capacity(input.len() + with.len());
    expand(&caps, with, &mut out);
    Some(out)
}

fn replace_header(
    s: &dyn Stream,
    res: bool,
    name: &str,
    rep: &crate::action::Replace,
    each_value: bool,
) -> Vec<(usize, Vec<u8>)> {
    let with = rep.with.render_vec(s);
    let msg = if res { s.res() } else { s.req() };
    let Some(m) = msg else {
        return Vec::new();
    };
    let mut edits = Vec::new();
    for i in 0..m.header_count() {
        let (n, v) = m.header(i);
        if !n.eq_ignore_ascii_case(name.as_bytes()) {
            continue;
        }
        if !each_value {
            if let Some(nv) = regex_replace(&rep.re, v, &with) {
                edits.push((i, nv));
            }
            continue;
        }
        // HAProxy (`http_replace_header_value`) replaces a matching value
        // together with the blanks around it, and leaves the others as
        // they were: "a, b" with b replaced by c gives "a,c".
        let mut out = Vec::with_capacity(v.len());
        let mut changed = false;
        for (k, raw) in raw_values(v).into_iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            match regex_replace(&rep.re, raw.trim_ascii(), &with) {
                Some(nv) => {
                    changed = true;
                    out.extend_from_slice(&nv);
                }
                None => out.extend_from_slice(raw),
            }
        }
        if changed {
            edits.push((i, out));
        }
    }
    edits
}

/// The comma-separated parts of a header value, blanks included (commas
/// inside double quotes do not separate, as in
/// [`crate::fetch::split_values`]).
fn raw_values(v: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut i) = (0, false, 0);
    while i < v.len() {
        match v[i] {
            b'"' => quoted = !quoted,
            b'\\' if quoted => i += 1,
            b',' if !quoted => {
                parts.push(&v[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&v[start.min(v.len())..]);
    parts
}

fn replace_url(s: &dyn Stream, part: UrlPart, rep: &crate::action::Replace) -> Option<Vec<u8>> {
    let with = rep.with.render_vec(s);
    let m = s.req()?;
    let t = m.target();
    let input = match part {
        UrlPart::Path => crate::fetch::path_of(t),
        _ => t,
    };
    regex_replace(&rep.re, input, &with)
}

#[cfg(test)]
mod tests {
    use super::regex_replace;
    use regex::bytes::Regex;

    /// Regression: HAProxy replaces the whole value, not only the part the
    /// regex matched (HAProxy 2.6.12: `replace-header X-A foo bar` turns
    /// `xfooy` into `bar`, `replace-path /foo /bar` turns `/foo/x` into
    /// `/bar`).
    #[test]
    fn replace_takes_the_whole_value() {
        let r = |re: &str, input: &str, with: &str| {
            regex_replace(&Regex::new(re).unwrap(), input.as_bytes(), with.as_bytes())
                .map(|v| String::from_utf8(v).unwrap())
        };
        assert_eq!(r("foo", "xfooy", "bar").as_deref(), Some("bar"));
        assert_eq!(r("/foo", "/foo/x", "/bar").as_deref(), Some("/bar"));
        assert_eq!(
            r("^/v1/(.*)", "/v1/users/7", "/api/\\1").as_deref(),
            Some("/api/users/7")
        );
        assert_eq!(r("(.*)", "/p", "/pre\\1").as_deref(), Some("/pre/p"));
        assert_eq!(r("zzz", "/p", "x"), None);
    }
}

/// `set-var`/`set-var-fmt` conditions, checked against HAProxy 2.6.12
/// (tests/scenarios/32_set_var_conditions.scn).
#[cfg(test)]
mod set_var_tests {
    use super::*;
    use crate::action::{ActionCtx, RuleSet};
    use crate::cond::Acls;
    use crate::resolve::Resolved;
    use crate::txn::Scope;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Vars(
        HashMap<(Scope, String), Sample<'static>>,
        Vec<(Vec<u8>, Vec<u8>)>,
    );

    impl crate::txn::Msg for Vars {
        fn method(&self) -> &[u8] {
            b"GET"
        }
        fn target(&self) -> &[u8] {
            b"/"
        }
        fn version(&self) -> u8 {
            11
        }
        fn status(&self) -> u16 {
            0
        }
        fn header_count(&self) -> usize {
            self.1.len()
        }
        fn header(&self, i: usize) -> (&[u8], &[u8]) {
            (&self.1[i].0, &self.1[i].1)
        }
    }

    impl Txn for Vars {
        fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
            self.0.get(&(v.scope, v.name.clone())).map(Sample::reborrow)
        }
        fn req(&self) -> Option<&dyn crate::txn::Msg> {
            Some(self)
        }
    }

    impl Stream for Vars {
        fn edit(&mut self, _res: bool) -> Option<&mut dyn Edit> {
            None
        }
        fn set_var(&mut self, v: &VarRef, s: Sample<'static>) {
            self.0.insert((v.scope, v.name.clone()), s);
        }
        fn unset_var(&mut self, v: &VarRef) {
            self.0.remove(&(v.scope, v.name.clone()));
        }
    }

    /// Parses one `http-request` action line against `env`.
    fn parse_action(env: &crate::Env, acls: &mut Acls, line: &str) -> Result<Action, String> {
        let mut cx = ActionCtx {
            env,
            set: RuleSet::HttpRequest,
            acls,
            max_reply: 16384,
            capture_slots: 0,
        };
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        crate::action::parse(&words, &mut cx)
    }

    /// Runs `http-request` actions in order; returns `txn.v`.
    fn run_actions(lines: &[&str]) -> Option<Sample<'static>> {
        let env = crate::Env::default();
        let mut acls = Acls::default();
        let mut s = Vars::default();
        for line in lines {
            let a = parse_action(&env, &mut acls, line).unwrap();
            apply(&a, &mut s, false);
        }
        s.var(&VarRef::parse("txn.v").unwrap())
            .map(Sample::into_owned)
    }

    fn text(s: Option<Sample<'static>>) -> Option<String> {
        s.map(|s| match s {
            Sample::Sint(i) => i.to_string(),
            o => String::from_utf8_lossy(o.as_bytes().unwrap()).into_owned(),
        })
    }

    #[test]
    fn ifgt_and_iflt_compare_only_integers() {
        let t = |l: &[&str]| text(run_actions(l));
        // Two integers: ifgt keeps the smaller, iflt the larger.
        assert_eq!(
            t(&["set-var(txn.v) int(10)", "set-var(txn.v,ifgt) int(5)"]).as_deref(),
            Some("5")
        );
        assert_eq!(
            t(&["set-var(txn.v) int(10)", "set-var(txn.v,ifgt) int(15)"]).as_deref(),
            Some("10")
        );
        assert_eq!(
            t(&["set-var(txn.v) int(10)", "set-var(txn.v,iflt) int(20)"]).as_deref(),
            Some("20")
        );
        // Other types, or no value yet: the condition holds.
        assert_eq!(
            t(&["set-var(txn.v) str(text)", "set-var(txn.v,ifgt) int(1)"]).as_deref(),
            Some("1")
        );
        assert_eq!(t(&["set-var(txn.v,iflt) int(3)"]).as_deref(), Some("3"));
    }

    #[test]
    fn set_var_fmt_honours_conditions() {
        let t = |l: &[&str]| text(run_actions(l));
        assert_eq!(
            t(&["set-var-fmt(txn.v) a", "set-var-fmt(txn.v,ifnotset) b"]).as_deref(),
            Some("a")
        );
        assert_eq!(t(&["set-var-fmt(txn.v,ifset) b"]), None);
        assert_eq!(t(&["set-var-fmt(txn.v,ifnotempty) %[var(txn.none)]"]), None);
    }

    /// Regression (HAProxy 2.6.12): replace-value replaces a matching value
    /// with the blanks around it and keeps the others as they are.
    #[test]
    fn replace_value_drops_the_blanks_of_replaced_values() {
        let env = crate::Env::default();
        let mut acls = Acls::default();
        let line = r"replace-value x-fwd ^192\.168\.(.*)$ 172.16.\1";
        let Action::ReplaceHeader { name, rep, .. } = parse_action(&env, &mut acls, line).unwrap()
        else {
            panic!("not a replace-value");
        };
        let mut s = Vars::default();
        s.1.push((
            b"x-fwd".to_vec(),
            b"192.168.10.1, 192.168.13.24, 10.0.0.1".to_vec(),
        ));
        s.1.push((
            b"x-fwd".to_vec(),
            b"\"192.168.1.1, x\" , 192.168.0.2 ".to_vec(),
        ));
        let edits = replace_header(&s, false, &name, &rep, true);
        assert_eq!(
            edits,
            vec![
                (0, b"172.16.10.1,172.16.13.24, 10.0.0.1".to_vec()),
                (1, b"\"192.168.1.1, x\" ,172.16.0.2".to_vec()),
            ]
        );
    }

    /// `do-resolve` stops the rules with the name to resolve; the caller
    /// stores the answer and resumes after the rule, which then sees it.
    #[test]
    fn do_resolve_pauses_and_resumes_after_its_rule() {
        let mut env = crate::Env::default();
        env.resolvers.insert("mydns".into());
        let mut acls = Acls::default();
        let mut rules = Vec::new();
        for line in [
            "set-var(txn.before) str(x)",
            "do-resolve(txn.ip,mydns,ipv4) req.hdr(x-host)",
            "set-var(txn.v) var(txn.ip)",
        ] {
            let action = parse_action(&env, &mut acls, line).unwrap();
            rules.push(Rule { action, cond: None });
        }
        let mut s = Vars::default();
        s.1.push((b"x-host".to_vec(), b"app.example".to_vec()));
        let (v, at) = run_from(&rules, &acls, &mut s, false, 0);
        let Verdict::Resolve(r) = v else {
            panic!("no resolution: {v:?}");
        };
        assert_eq!(at, 1);
        assert_eq!(
            (r.name.as_str(), r.resolvers.as_str(), r.family),
            ("app.example", "mydns", crate::resolve::ResolveFamily::Ipv4)
        );
        s.set_var(&r.var, Resolved::sample("10.1.2.3".parse().unwrap()));
        let (v, at) = run_from(&rules, &acls, &mut s, false, at + 1);
        assert!(matches!(v, Verdict::Continue), "{v:?}");
        assert_eq!(at, 3);
        let got = s
            .var(&VarRef::parse("txn.v").unwrap())
            .map(Sample::into_owned);
        assert_eq!(got, Some(Sample::Ipv4("10.1.2.3".parse().unwrap())));
        // No name: nothing to resolve, the variable stays unset.
        let mut s = Vars::default();
        let (v, _) = run_from(&rules, &acls, &mut s, false, 0);
        assert!(matches!(v, Verdict::Continue), "{v:?}");
        assert_eq!(s.var(&VarRef::parse("txn.v").unwrap()), None);
    }

    #[test]
    fn do_resolve_checks_its_arguments() {
        let mut env = crate::Env::default();
        env.resolvers.insert("mydns".into());
        let mut acls = Acls::default();
        let mut parse = |line: &str| parse_action(&env, &mut acls, line);
        let Ok(Action::DoResolve(d)) = parse("do-resolve(txn.ip,mydns) hdr(host)") else {
            panic!("not parsed");
        };
        assert_eq!(d.family, crate::resolve::ResolveFamily::Ipv6);
        let e = parse("do-resolve(txn.ip,other) hdr(host)").unwrap_err();
        assert!(e.contains("can't find resolvers section 'other'"), "{e}");
        let e = parse("do-resolve(txn.ip,mydns,ipv5) hdr(host)").unwrap_err();
        assert!(e.contains("'ipv5'"), "{e}");
        assert!(parse("do-resolve(txn.ip,mydns)").is_err());
        assert!(parse("do-resolve(txn.ip) hdr(host)").is_err());
    }
}
