//! The stick counter actions: `track-sc0/1/2 <key> [table T]` in
//! `http-request` rules, and `sc-inc-gpc0(N)`, `sc-inc-gpc1(N)` and
//! `sc-set-gpt0(N) <expr>` in `http-request` and `http-response` rules.
//! In `tcp-request` rules they are still refused as not implemented (TCP
//! streams carry no slots yet).

use crate::action::{Action, ActionCtx, RuleSet};
use crate::expr::Expr;
use fairlead_stick::{Gpc, TrackFrom};

/// Parses a stick counter action; `None` when `name` is not one that is
/// implemented.
pub(crate) fn parse(
    name: &str,
    words: &[String],
    cx: &mut ActionCtx<'_>,
) -> Option<Result<Action, String>> {
    // Only HTTP transactions carry stick counter slots so far.
    let http = matches!(cx.set, RuleSet::HttpRequest | RuleSet::HttpResponse);
    if let Some(n) = name.strip_prefix("track-sc") {
        if cx.set != RuleSet::HttpRequest {
            return None;
        }
        return Some(track(n, words, cx, TrackFrom::HttpRequest));
    }
    let (base, arg) = match name.split_once('(') {
        Some((b, a)) => (b, a.strip_suffix(')')),
        None => (name, Some("0")),
    };
    let first = words.first().map(String::as_str).unwrap_or_default();
    let (base, arg) = if base == name && first.contains('(') {
        match first.split_once('(') {
            Some((b, a)) => (b, a.strip_suffix(')')),
            None => (base, arg),
        }
    } else {
        (base, arg)
    };
    if !http || !matches!(base, "sc-inc-gpc0" | "sc-inc-gpc1" | "sc-set-gpt0") {
        return None;
    }
    let slot = match arg.and_then(slot_number) {
        Some(s) => s,
        None => return Some(Err("invalid stick counter number (0 to 2)".into())),
    };
    Some(match base {
        "sc-inc-gpc0" | "sc-inc-gpc1" => {
            if words.len() != 1 {
                return Some(Err("expects no argument".into()));
            }
            let which = if base == "sc-inc-gpc0" {
                Gpc::Gpc0
            } else {
                Gpc::Gpc1
            };
            Ok(Action::ScIncGpc { slot, which })
        }
        _ => match words.get(1..) {
            Some([v]) => Expr::parse(v, cx.env, cx.set.usage(), cx.set.keyword())
                .map(|value| Action::ScSetGpt0 { slot, value }),
            _ => Err("expects exactly one argument: <expr>".into()),
        },
    })
}

fn slot_number(s: &str) -> Option<usize> {
    let n: usize = s.trim().parse().ok()?;
    (n < fairlead_stick::track::DEFAULT_SLOTS).then_some(n)
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
