//! The stick counter actions, with HAProxy 2.6's syntax and rule sets:
//!
//! * `track-sc0/1/2 <key> [table T]` in `tcp-request connection`,
//!   `tcp-request session`, `tcp-request content`, `http-request` and
//!   `http-response` rules;
//! * `sc-inc-gpc(<idx>,<sc>)`, `sc-inc-gpc0[(<sc>)]`,
//!   `sc-inc-gpc1[(<sc>)]`, `sc-set-gpt(<idx>,<sc>) <int|expr>` and
//!   `sc-set-gpt0[(<sc>)] <int|expr>` in every `tcp-request`,
//!   `tcp-response content`, `http-request` and `http-response` rule set.
//!
//! Where the tracked slots live (the session's for connection and
//! session rules, the stream's otherwise) is the caller's
//! ([`crate::exec::Stream::trackers_mut`]).

use crate::action::{Action, ActionCtx, RuleSet};
use crate::expr::Expr;
use fairlead_stick::{Gpc, Gpt, TrackFrom};

/// The value of `sc-set-gpt*`: an integer, or an expression evaluated at
/// run time.
#[derive(Debug)]
pub enum GptValue {
    Int(i64),
    Expr(Expr),
}

/// Parses a stick counter action; `None` when `name` is not one.
pub(crate) fn parse(
    name: &str,
    words: &[String],
    cx: &mut ActionCtx<'_>,
) -> Option<Result<Action, String>> {
    if let Some(n) = name.strip_prefix("track-sc") {
        let from = match cx.set {
            RuleSet::TcpConnection => TrackFrom::TcpConnection,
            RuleSet::TcpSession => TrackFrom::TcpSession,
            RuleSet::TcpContent => TrackFrom::TcpContent,
            RuleSet::HttpRequest => TrackFrom::HttpRequest,
            // The status is the response's, known at run time.
            RuleSet::HttpResponse => TrackFrom::HttpResponse(0),
            _ => return None,
        };
        return Some(track(n, words, cx, from));
    }
    if cx.set == RuleSet::HttpAfterResponse {
        return None;
    }
    // The whole first word: `sc-inc-gpc(1,0)`, `sc-set-gpt0(2)`.
    let first = words.first().map(String::as_str).unwrap_or(name);
    if let Some(rest) = first.strip_prefix("sc-inc-gpc") {
        return Some(inc_gpc(first, rest, words));
    }
    if let Some(rest) = first.strip_prefix("sc-set-gpt") {
        return Some(set_gpt(first, rest, words, cx));
    }
    None
}

fn max_sc() -> usize {
    fairlead_stick::track::DEFAULT_SLOTS - 1
}

fn slot_number(s: &str) -> Option<usize> {
    let n: usize = s.trim().parse().ok()?;
    (n < fairlead_stick::track::DEFAULT_SLOTS).then_some(n)
}

/// `(<idx>,<sc>)` of the array forms.
fn idx_sc(word: &str, rest: &str, what: &str) -> Result<(u32, usize), String> {
    let expects = format!("Expects sc-{what}(<{} ID>,<Track ID>)", what_id(what));
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("invalid {} ID '{word}'. {expects}", what_id(what)))?;
    let (idx, sc) = inner
        .split_once(',')
        .ok_or_else(|| format!("Missing {} ID '{word}'. {expects}", what_id(what)))?;
    let idx: u32 = idx
        .trim()
        .parse()
        .map_err(|_| format!("Missing {} ID '{word}'. {expects}", what_id(what)))?;
    let sc: i64 = sc
        .trim()
        .parse()
        .map_err(|_| format!("invalid stick table track ID '{word}'. {expects}"))?;
    let sc = usize::try_from(sc)
        .ok()
        .filter(|n| *n <= max_sc())
        .ok_or_else(|| {
            format!(
                "invalid stick table track ID '{word}'. The max allowed ID is {}",
                max_sc()
            )
        })?;
    Ok((idx, sc))
}

fn what_id(what: &str) -> &'static str {
    if what.starts_with("inc") {
        "GPC"
    } else {
        "GPT"
    }
}

/// `[(<sc>)]` of the `gpc0`/`gpc1`/`gpt0` forms; slot 0 without it.
fn opt_sc(word: &str, rest: &str) -> Result<usize, String> {
    if rest.is_empty() {
        return Ok(0);
    }
    rest.strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .and_then(slot_number)
        .ok_or_else(|| {
            format!(
                "invalid stick table track ID '{word}'. Expects <action>(<Track ID>) with an ID from 0 to {}",
                max_sc()
            )
        })
}

fn inc_gpc(word: &str, rest: &str, words: &[String]) -> Result<Action, String> {
    let (slot, which) = match rest.as_bytes().first() {
        Some(b'(') => {
            let (idx, sc) = idx_sc(word, rest, "inc-gpc")?;
            (sc, Gpc::Idx(idx))
        }
        Some(b'0') => (opt_sc(word, &rest[1..])?, Gpc::Gpc0),
        Some(b'1') => (opt_sc(word, &rest[1..])?, Gpc::Gpc1),
        _ => {
            return Err(format!(
                "invalid gpc ID '{word}'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)"
            ))
        }
    };
    if words.len() != 1 {
        return Err("expects no argument".into());
    }
    Ok(Action::ScIncGpc { slot, which })
}

fn set_gpt(
    word: &str,
    rest: &str,
    words: &[String],
    cx: &mut ActionCtx<'_>,
) -> Result<Action, String> {
    let (slot, which) = match rest.as_bytes().first() {
        Some(b'(') => {
            let (idx, sc) = idx_sc(word, rest, "set-gpt")?;
            (sc, Gpt::Idx(idx))
        }
        Some(b'0') => (opt_sc(word, &rest[1..])?, Gpt::Gpt0),
        _ => {
            return Err(format!(
                "invalid gpt ID '{word}'. Expects sc-set-gpt(<GPT ID>,<Track ID>)"
            ))
        }
    };
    let v = match words.get(1..) {
        Some([v]) => v,
        _ => return Err("expects exactly one argument: <integer|expression>".into()),
    };
    let value = match v.parse::<i64>() {
        Ok(i) => GptValue::Int(i),
        // HAProxy has no fetch valid in `tcp-request connection` for
        // this action: only an integer is accepted there.
        Err(_) if cx.set == RuleSet::TcpConnection => {
            return Err(format!(
                "expects an integer in 'tcp-request connection' rules, got '{v}'"
            ))
        }
        Err(_) => GptValue::Expr(Expr::parse(v, cx.env, cx.set.usage(), cx.set.keyword())?),
    };
    Ok(Action::ScSetGpt { slot, which, value })
}

fn track(
    n: &str,
    words: &[String],
    cx: &mut ActionCtx<'_>,
    from: TrackFrom,
) -> Result<Action, String> {
    let slot = slot_number(n).ok_or("invalid stick counter number (0 to 2)")?;
    let (key, table) = match words.get(1..) {
        Some([k]) => (k, None),
        Some([k, t, name]) if t == "table" => (k, Some(name)),
        _ => return Err("expects <key> [table <table>]".into()),
    };
    let key = Expr::parse(key, cx.env, cx.set.usage(), cx.set.keyword())?;
    let table =
        match table {
            Some(t) => cx
                .env
                .tables
                .get(t.as_str())
                .cloned()
                .ok_or_else(|| format!("unable to find table '{t}'"))?,
            None => cx.env.own_table.clone().ok_or(
                "no table declared in this section; add 'table <name>' or a 'stick-table'",
            )?,
        };
    Ok(Action::TrackSc {
        slot,
        key,
        table,
        from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cond::Acls;

    fn parse_in(set: RuleSet, line: &str) -> Result<Action, String> {
        let mut env = crate::Env::default();
        let spec = fairlead_stick::TableSpec::parse("t", &["type", "ip", "size", "10"], false)
            .unwrap()
            .0;
        env.own_table = Some(fairlead_stick::Table::new(spec));
        let mut acls = Acls::default();
        let mut cx = ActionCtx {
            env: &env,
            set,
            acls: &mut acls,
            max_reply: 16384,
            capture_slots: 0,
        };
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        crate::action::parse(&words, &mut cx)
    }

    #[test]
    fn track_sc_in_every_request_rule_set() {
        use RuleSet::*;
        for (set, from) in [
            (TcpConnection, TrackFrom::TcpConnection),
            (TcpSession, TrackFrom::TcpSession),
            (TcpContent, TrackFrom::TcpContent),
            (HttpRequest, TrackFrom::HttpRequest),
            (HttpResponse, TrackFrom::HttpResponse(0)),
        ] {
            match parse_in(set, "track-sc2 src") {
                Ok(Action::TrackSc {
                    slot: 2, from: f, ..
                }) => assert_eq!(f, from),
                other => panic!("{set:?}: {other:?}"),
            }
        }
        let e = parse_in(TcpResponse, "track-sc0 src").unwrap_err();
        assert!(e.contains("but got 'track-sc0'"), "{e}");
        let e = parse_in(TcpConnection, "track-sc3 src").unwrap_err();
        assert!(e.contains("invalid stick counter number"), "{e}");
    }

    #[test]
    fn gpc_and_gpt_action_forms() {
        let inc = |line: &str| match parse_in(RuleSet::TcpContent, line) {
            Ok(Action::ScIncGpc { slot, which }) => (slot, which),
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(inc("sc-inc-gpc0"), (0, Gpc::Gpc0));
        assert_eq!(inc("sc-inc-gpc1(2)"), (2, Gpc::Gpc1));
        assert_eq!(inc("sc-inc-gpc(7,1)"), (1, Gpc::Idx(7)));
        match parse_in(RuleSet::TcpConnection, "sc-set-gpt(1,2) 42") {
            Ok(Action::ScSetGpt {
                slot: 2,
                which: Gpt::Idx(1),
                value: GptValue::Int(42),
            }) => {}
            other => panic!("{other:?}"),
        }
        match parse_in(RuleSet::HttpRequest, "sc-set-gpt0 path,length") {
            Ok(Action::ScSetGpt {
                slot: 0,
                which: Gpt::Gpt0,
                value: GptValue::Expr(_),
            }) => {}
            other => panic!("{other:?}"),
        }
        for (line, want) in [
            ("sc-inc-gpc(1)", "Missing GPC ID 'sc-inc-gpc(1)'"),
            ("sc-inc-gpc(1,3)", "The max allowed ID is 2"),
            ("sc-inc-gpc2", "invalid gpc ID 'sc-inc-gpc2'"),
            ("sc-set-gpt0(0)", "expects exactly one argument"),
            ("sc-inc-gpc0 x", "expects no argument"),
        ] {
            let e = parse_in(RuleSet::HttpRequest, line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
        }
        let e = parse_in(RuleSet::TcpConnection, "sc-set-gpt0 src").unwrap_err();
        assert!(e.contains("expects an integer"), "{e}");
    }
}
