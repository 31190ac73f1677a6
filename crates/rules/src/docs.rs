//! The reference tables of `docs/rules.md`, generated from the catalogs
//! the parsers use (fetches, converters, match methods, predefined ACLs,
//! actions per rule set, log-format variables, casts), so the guide cannot
//! drift from the code.
//!
//! Each table is a named block of the document, between
//! `<!-- rules:<name>:begin -->` and `<!-- rules:<name>:end -->`.
//! [`update`] rewrites the blocks of a document; the test of this module
//! fails when `docs/rules.md` is stale, and
//! `UPDATE_DOCS=1 cargo test -p fairlead-rules docs` rewrites it.

use crate::action::{self, RuleSet};
use crate::fetch::{self, usage};
use crate::pattern::{method_for_suffix, Method};
use crate::sample::{can_cast, SmpType};
use std::fmt::Write as _;

/// Every rule set, in HAProxy's evaluation order.
pub const RULE_SETS: [RuleSet; 7] = [
    RuleSet::TcpConnection,
    RuleSet::TcpSession,
    RuleSet::TcpContent,
    RuleSet::HttpRequest,
    RuleSet::TcpResponse,
    RuleSet::HttpResponse,
    RuleSet::HttpAfterResponse,
];

/// Every match method, in the order of the manual.
pub const METHODS: [Method; 13] = [
    Method::Found,
    Method::Bool,
    Method::Int,
    Method::Ip,
    Method::Bin,
    Method::Len,
    Method::Str,
    Method::Sub,
    Method::Reg,
    Method::Beg,
    Method::End,
    Method::Dir,
    Method::Dom,
];

/// The sample types a fetch or converter can produce (the rows and
/// columns of the cast table).
const TYPES: [SmpType; 7] = [
    SmpType::Bool,
    SmpType::Sint,
    SmpType::Ipv4,
    SmpType::Ipv6,
    SmpType::Str,
    SmpType::Bin,
    SmpType::Meth,
];

/// Every generated block: its name in the document and its content.
pub fn docs_tables() -> Vec<(&'static str, String)> {
    vec![
        ("fetches", fetches_table()),
        ("converters", converters_table()),
        ("casts", casts_table()),
        ("methods", methods_table()),
        ("predefined", predefined_table()),
        ("actions", actions_table()),
        ("logformat", logformat_table()),
        ("error-codes", error_codes()),
    ]
}

/// Replaces every generated block of `doc` with its current content.
/// Errors name a block whose markers are missing.
pub fn update(doc: &str) -> Result<String, String> {
    let mut out = doc.to_string();
    for (name, body) in docs_tables() {
        let begin = format!("<!-- rules:{name}:begin -->");
        let end = format!("<!-- rules:{name}:end -->");
        let b = out.find(&begin).ok_or_else(|| format!("missing {begin}"))? + begin.len();
        let e = b + out[b..]
            .find(&end)
            .ok_or_else(|| format!("missing {end}"))?;
        out = format!("{}\n{}{}", &out[..b], body, &out[e..]);
    }
    Ok(out)
}

/// Text for a table cell: `|` escaped, `<` and `>` as entities (so
/// `<match>` is not read as an HTML tag), newlines flattened.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

/// A code span for a table cell (only `|` needs escaping there).
fn code(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("`{}`", s.replace('|', "\\|").replace('\n', " "))
    }
}

fn codes<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().map(code).collect::<Vec<_>>().join(", ")
}

/// The data classes (`fetch::usage` bits) in increasing order, each with
/// a title; a class added to the catalog without a title here gets
/// HAProxy's wording for it.
fn classes() -> Vec<(u8, String)> {
    let mut bits: Vec<u8> = fetch::FETCHES.iter().map(|f| f.2).collect();
    bits.sort_unstable();
    bits.dedup();
    bits.into_iter()
        .map(|b| {
            let title = match b {
                usage::INTERNAL => "Internal: constants, variables, process state".to_string(),
                usage::L4 => "Connection (layer 4)".to_string(),
                usage::L5 => "TLS (layer 5)".to_string(),
                usage::L6REQ => "TCP request contents (layer 6)".to_string(),
                usage::L7REQ => "HTTP request (layer 7)".to_string(),
                usage::L7RES => "HTTP response (layer 7)".to_string(),
                _ => {
                    let d = usage::describe(b);
                    let mut t = d[..1].to_ascii_uppercase();
                    t.push_str(&d[1..]);
                    t
                }
            };
            (b, title)
        })
        .collect()
}

/// Where data of class `bits` can be read, in words.
fn usable_in(bits: u8) -> String {
    let ok: Vec<RuleSet> = RULE_SETS
        .iter()
        .copied()
        .filter(|s| s.usage() & bits != 0)
        .collect();
    let not: Vec<RuleSet> = RULE_SETS
        .iter()
        .copied()
        .filter(|s| s.usage() & bits == 0)
        .collect();
    let names = |v: &[RuleSet]| codes(v.iter().map(|s| s.keyword()));
    if not.is_empty() {
        "every rule set".to_string()
    } else if ok.is_empty() {
        "no rule set".to_string()
    } else if not.len() < ok.len() {
        format!("every rule set but {}", names(&not))
    } else {
        names(&ok)
    }
}

/// The ACL match method used without `-m` for a sample type.
fn default_method(t: SmpType) -> String {
    match crate::acl::default_method(t) {
        Some(m) => code(m.name()),
        None => "none: `-m` required".to_string(),
    }
}

/// The supported sample fetches, one table per data class.
pub fn fetches_table() -> String {
    let mut out = String::new();
    for (bits, title) in classes() {
        let _ = writeln!(out, "**{title}**: usable in {}.\n", usable_in(bits));
        out.push_str("| fetch | aliases | type | ACL default `-m` | description |\n");
        out.push_str("| --- | --- | --- | --- | --- |\n");
        for (name, t, _, desc) in fetch::FETCHES.iter().filter(|f| f.2 == bits) {
            let aliases = fetch::ALIASES
                .iter()
                .filter(|(_, c)| c == name)
                .map(|(a, _)| *a);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                code(name),
                codes(aliases),
                t.name(),
                default_method(*t),
                cell(desc)
            );
        }
        out.push('\n');
    }
    let suffixed: Vec<&str> = METHODS
        .iter()
        .filter(|m| method_for_suffix(m.name()).is_some())
        .map(|m| m.name())
        .collect();
    let _ = writeln!(
        out,
        "In ACLs, any fetch name may take a match-method suffix: `<fetch>_<m>` for `<m>` in {} \
(`path_beg`, `hdr_dom(host)`, `ssl_fc_sni_end`); an explicit `-m` replaces the suffix's method. \
These also take `_val` (the value as an integer, `-m int`) and `_ip` (as an address, `-m ip`): {}.",
        codes(suffixed.iter().copied()),
        codes(crate::acl::VALUE_SUFFIX_BASES.iter().copied())
    );
    out
}

/// The supported converters.
pub fn converters_table() -> String {
    let mut out = String::new();
    out.push_str("| converter | arguments | input | output | description |\n");
    out.push_str("| --- | --- | --- | --- | --- |\n");
    let (map_name, map_desc) = crate::conv::CONVERTERS[0];
    let _ = writeln!(
        out,
        "| {} | `(<file>[,<default>])` | per `<match>` | per `<out>` | {} |",
        codes(map_name.split(", ")),
        cell(map_desc)
    );
    for (name, args, input, output, desc) in crate::conv::signatures() {
        let args = if args.is_empty() {
            String::new()
        } else {
            code(&format!("({args})"))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            code(name),
            args,
            input.name(),
            output.name(),
            cell(desc)
        );
    }
    out
}

/// Which implicit casts exist (`can_cast`).
pub fn casts_table() -> String {
    let mut out = String::from("| from \\ to |");
    for t in TYPES {
        let _ = write!(out, " {} |", t.name());
    }
    out.push_str("\n| --- |");
    for _ in TYPES {
        out.push_str(" --- |");
    }
    out.push('\n');
    for from in TYPES {
        let _ = write!(out, "| **{}** |", from.name());
        for to in TYPES {
            let mark = if from == to {
                "="
            } else if can_cast(from, to) {
                "yes"
            } else {
                "–"
            };
            let _ = write!(out, " {mark} |");
        }
        out.push('\n');
    }
    out
}

/// How each method is indexed and which entry wins (HAProxy 2.6's
/// structures; see `pattern` for how Fairlead builds the same answers).
fn method_index(m: Method) -> (&'static str, &'static str) {
    match m {
        Method::Found => ("–", "the sample exists; patterns are ignored"),
        Method::Bool => (
            "–",
            "the sample, as an integer, is not 0; patterns are ignored",
        ),
        Method::Int => ("list", "the first range that contains the value"),
        Method::Ip => (
            "prefix tree per family",
            "the most specific network (longest prefix), whatever the order",
        ),
        Method::Bin => ("list", "the first equal pattern (hex in the configuration)"),
        Method::Len => ("list", "the first range that contains the length"),
        Method::Str => (
            "tree; list with `-i`",
            "exact match; with `-i` the first equal pattern in order",
        ),
        Method::Sub => ("list", "the first pattern found inside the sample"),
        Method::Reg => ("list", "the first regex that matches"),
        Method::Beg => (
            "prefix tree; list with `-i`",
            "the **longest** prefix; with `-i` the **first** prefix in order",
        ),
        Method::End => ("list", "the first suffix in order"),
        Method::Dir => (
            "list",
            "the first pattern found between `/` or `?` delimiters (or the ends)",
        ),
        Method::Dom => (
            "list",
            "the first pattern found between `/`, `?`, `.` or `:` delimiters (or the ends)",
        ),
    }
}

/// The match methods.
pub fn methods_table() -> String {
    let mut out = String::new();
    out.push_str(
        "| `-m` | sample cast to | `-i` applies | ACL suffix | index | which entry wins |\n",
    );
    out.push_str("| --- | --- | --- | --- | --- | --- |\n");
    for m in METHODS {
        let (index, wins) = method_index(m);
        let suffix = if method_for_suffix(m.name()).is_some() {
            code(&format!("_{}", m.name()))
        } else {
            "–".to_string()
        };
        let cast = match m.in_type() {
            SmpType::Any => "(any)".to_string(),
            t => t.name().to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            m.name(),
            cast,
            if m.honours_case_flag() { "yes" } else { "no" },
            suffix,
            index,
            wins
        );
    }
    out
}

/// HAProxy's predefined ACLs and what each stands for.
pub fn predefined_table() -> String {
    let mut out = String::new();
    out.push_str("| ACL | same as |\n| --- | --- |\n");
    for (name, def) in crate::acl::PREDEFINED {
        let _ = writeln!(
            out,
            "| `{}` | {} |",
            name,
            code(&format!("acl {name} {}", def.join(" ")))
        );
    }
    out
}

/// Whether an action ends its rule set (checked against
/// `Action::is_final` by this module's tests).
fn is_final(name: &str) -> bool {
    matches!(
        name,
        "allow"
            | "accept"
            | "deny"
            | "tarpit"
            | "reject"
            | "silent-drop"
            | "close"
            | "auth"
            | "redirect"
            | "return"
            | "use-service"
    )
}

/// Whether `name` is accepted in `set` (the lists `action::parse` checks,
/// and `close`, which only `tcp-response content` takes).
fn accepted(name: &str, set: RuleSet) -> bool {
    let list = match set {
        RuleSet::HttpRequest => action::HTTP_REQUEST_ACTIONS,
        RuleSet::HttpResponse => action::HTTP_RESPONSE_ACTIONS,
        RuleSet::HttpAfterResponse => action::HTTP_AFTER_RESPONSE_ACTIONS,
        RuleSet::TcpConnection
        | RuleSet::TcpSession
        | RuleSet::TcpContent
        | RuleSet::TcpResponse => action::TCP_ACTIONS,
    };
    list.contains(&name)
        || (name == "close" && set == RuleSet::TcpResponse)
        || action::tcp_request_set_src(set, name)
        || (name == "expect-proxy" && set == RuleSet::TcpConnection)
}

/// Every supported action name, in catalog order.
fn action_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for list in [
        action::HTTP_REQUEST_ACTIONS,
        action::HTTP_RESPONSE_ACTIONS,
        action::HTTP_AFTER_RESPONSE_ACTIONS,
        action::TCP_ACTIONS,
        &["close"],
    ] {
        for &n in list {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// The actions each rule set accepts.
pub fn actions_table() -> String {
    let cols: [(&str, &[RuleSet]); 5] = [
        ("`http-request`", &[RuleSet::HttpRequest]),
        ("`http-response`", &[RuleSet::HttpResponse]),
        ("`http-after-response`", &[RuleSet::HttpAfterResponse]),
        (
            "`tcp-request` (connection, session, content)",
            &[
                RuleSet::TcpConnection,
                RuleSet::TcpSession,
                RuleSet::TcpContent,
            ],
        ),
        ("`tcp-response content`", &[RuleSet::TcpResponse]),
    ];
    let mut out = String::from("| action |");
    for (title, _) in &cols {
        let _ = write!(out, " {title} |");
    }
    out.push_str(" final |\n| --- |");
    for _ in &cols {
        out.push_str(" :-: |");
    }
    out.push_str(" :-: |\n");
    for name in action_names() {
        let _ = write!(out, "| `{name}` |");
        for (_, sets) in &cols {
            // All the sets of the column, or the ones that take it.
            let some: Vec<&str> = sets
                .iter()
                .filter(|s| accepted(name, **s))
                .filter_map(|s| s.keyword().rsplit(' ').next())
                .collect();
            let mark = if some.len() == sets.len() {
                "✓".to_string()
            } else {
                some.join(", ")
            };
            let _ = write!(out, " {mark} |");
        }
        let _ = writeln!(out, " {} |", if is_final(name) { "final" } else { "" });
    }
    let mut later: Vec<&str> = action::KNOWN_NOT_YET
        .iter()
        .copied()
        .filter(|n| !action_names().contains(n))
        .collect();
    later.sort_unstable();
    later.dedup();
    let _ = writeln!(
        out,
        "\nKnown HAProxy actions refused with \"not implemented yet in Fairlead\": {} \
(and every `lua.*` action).",
        codes(later)
    );
    out
}

/// The statuses whose error page can be replaced.
pub fn error_codes() -> String {
    let list: Vec<String> = crate::reply::ERROR_CODES
        .iter()
        .map(|c| format!("`{c}`"))
        .collect();
    format!("{}.\n", list.join(", "))
}

/// What a log-format variable of a rule argument gives.
fn logformat_var(name: &str) -> Option<&'static str> {
    Some(match name {
        "ci" => "client address (after `set-src`)",
        "cp" => "client port",
        "fi" => "address the client connected to",
        "fp" => "port the client connected to",
        "f" | "ft" => "frontend name",
        "b" => "backend name (`-` before switching)",
        "s" => "server name (`<NOSRV>` before one is chosen)",
        "H" => "host name of the machine",
        "pid" => "process id",
        "Ts" => "current time, seconds since the epoch",
        "HM" => "request method",
        "HU" => "request target as received (edits included)",
        "HP" => "request path",
        "HQ" => "query string with its `?` (empty without one)",
        "HV" => "HTTP version (`HTTP/1.1`)",
        "ST" => "response status (empty before the response)",
        _ => return None,
    })
}

/// The `%` variables accepted in rule arguments.
pub fn logformat_table() -> String {
    let mut out = String::from("| variable | value |\n| --- | --- |\n");
    for n in crate::fmt::var_names() {
        let _ = writeln!(
            out,
            "| `%{n}` | {} |",
            logformat_var(n).unwrap_or("(undocumented)")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Action, ActionCtx};
    use crate::cond::Acls;

    /// The guide's generated blocks match the catalogs; `UPDATE_DOCS=1`
    /// rewrites them.
    #[test]
    fn docs_rules_md_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rules.md");
        let doc = std::fs::read_to_string(path).expect("docs/rules.md");
        let new = update(&doc).unwrap();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            if new != doc {
                std::fs::write(path, &new).unwrap();
            }
            return;
        }
        assert!(
            doc == new,
            "docs/rules.md generated tables are stale: run `UPDATE_DOCS=1 cargo test -p fairlead-rules docs`"
        );
    }

    #[test]
    fn every_variable_and_class_is_described() {
        for n in crate::fmt::var_names() {
            assert!(logformat_var(n).is_some(), "%{n} needs a description");
        }
        for m in METHODS {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        let mut all = METHODS.map(Method::name).to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), METHODS.len());
        assert!(fetches_table().contains("`req.hdr` | `hdr`"));
    }

    fn tmp_map() -> String {
        let p = std::env::temp_dir().join(format!("fairlead-docs-{}.map", std::process::id()));
        std::fs::write(&p, "k v\n").unwrap();
        p.to_string_lossy().into_owned()
    }

    /// An argument list that makes `name` valid in `set`.
    fn example(name: &str, set: RuleSet, map: &str) -> Vec<String> {
        let w: Vec<String> = match name {
            "add-header" | "set-header" => vec![name.into(), "X-A".into(), "v".into()],
            "del-header" => vec![name.into(), "X-A".into()],
            "replace-header" | "replace-value" => {
                vec![name.into(), "X-A".into(), "^a$".into(), "b".into()]
            }
            "set-path" | "set-pathq" | "set-query" | "set-uri" | "set-method" => {
                vec![name.into(), "/x".into()]
            }
            "replace-path" | "replace-pathq" | "replace-uri" => {
                vec![name.into(), "^/a(.*)".into(), "/b\\1".into()]
            }
            "set-status" => vec![name.into(), "503".into()],
            "set-var" => vec!["set-var(txn.x)".into(), "str(a)".into()],
            "set-var-fmt" => vec!["set-var-fmt(txn.x)".into(), "a".into()],
            "unset-var" => vec!["unset-var(txn.x)".into()],
            "capture" if set == RuleSet::HttpRequest || set == RuleSet::TcpContent => {
                vec![name.into(), "path".into(), "len".into(), "10".into()]
            }
            "capture" => vec![name.into(), "str(a)".into(), "id".into(), "0".into()],
            "set-log-level" => vec![name.into(), "silent".into()],
            "set-src" => vec![name.into(), "src".into()],
            "expect-proxy" => vec![name.into(), "layer4".into()],
            "redirect" => vec![name.into(), "location".into(), "/".into()],
            "use-service" => vec![name.into(), "prometheus-exporter".into()],
            "do-resolve" => vec!["do-resolve(txn.ip,dns)".into(), "str(app.test)".into()],
            "set-map" => vec![format!("set-map({map})"), "k".into(), "v".into()],
            "del-map" | "add-acl" | "del-acl" => {
                let file = if name == "del-map" {
                    map.to_string()
                } else {
                    format!("{map}.acl")
                };
                vec![format!("{name}({file})"), "k".into()]
            }
            _ => vec![name.into()],
        };
        w
    }

    /// Every action the table lists parses in the rule sets it is listed
    /// for, is refused in the others, and the "final" column agrees with
    /// `Action::is_final`.
    #[test]
    fn actions_table_matches_the_parser() {
        let map = tmp_map();
        std::fs::write(format!("{map}.acl"), "k\n").unwrap();
        let mut env = crate::Env::default();
        env.resolvers.insert("dns".into());
        for name in action_names() {
            for set in RULE_SETS {
                let mut acls = Acls::default();
                let mut cx = ActionCtx {
                    env: &env,
                    set,
                    acls: &mut acls,
                    max_reply: 16384,
                    capture_slots: 1,
                };
                let words = example(name, set, &map);
                let r = action::parse(&words, &mut cx);
                if name == "use-service" {
                    // The configuration layer runs `prometheus-exporter`,
                    // the only service; the rule layer refuses the rest.
                    assert!(r.is_err(), "{name}");
                    continue;
                }
                if accepted(name, set) {
                    let a: Action = r.unwrap_or_else(|e| panic!("{name} in {set:?}: {e}"));
                    assert_eq!(a.is_final(), is_final(name), "{name}");
                } else {
                    assert!(r.is_err(), "{name} should be refused in {set:?}");
                }
            }
        }
    }
}
