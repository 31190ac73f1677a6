//! The map and ACL commands (`show|get|add|set|del|clear|prepare|commit
//! map|acl`): arguments, checks, messages and output formats as HAProxy
//! 2.6's management guide (section 9.3) and CLI print them.
//!
//! References are named `#<id>` (the id `show map` lists, read as `atoi`
//! reads it) or by file path; entries by key or `#0x<ref>` (the id printed
//! in front of each entry). Reading (`show`, `get`) takes the `operator`
//! level, changing anything `admin` (HAProxy 2.6 checked no level at all;
//! later versions require `admin` for every one of them).

use crate::api::{PatEdit, PatError, PatLookup, PatRefInfo, PatTarget};
use crate::commands::Command;
use crate::session::Session;
use crate::Level;
use std::fmt::Write;

macro_rules! cmd {
    ($words:expr, $usage:expr, $help:expr, $level:ident, $run:expr) => {
        Command {
            words: $words,
            usage: $usage,
            help: $help,
            level: Level::$level,
            run: $run,
        }
    };
}

/// The map and ACL commands.
pub(crate) static COMMANDS: &[Command] = &[
    cmd!(
        &["add", "acl"],
        "add acl [@<ver>] <acl> <pattern>",
        "add an acl entry",
        Admin,
        add
    ),
    cmd!(
        &["clear", "acl"],
        "clear acl [@<ver>] <acl>",
        "clear the contents of this acl",
        Admin,
        clear
    ),
    cmd!(
        &["commit", "acl"],
        "commit acl @<ver> <acl>",
        "commit the ACL at this version",
        Admin,
        commit
    ),
    cmd!(
        &["del", "acl"],
        "del acl <acl> [<key>|#<ref>]",
        "delete acl entries matching <key>",
        Admin,
        del
    ),
    cmd!(
        &["get", "acl"],
        "get acl <acl> <value>",
        "report the patterns matching a sample for an ACL",
        Operator,
        get
    ),
    cmd!(
        &["prepare", "acl"],
        "prepare acl <acl>",
        "prepare a new version for atomic ACL replacement",
        Admin,
        prepare
    ),
    cmd!(
        &["show", "acl"],
        "show acl [[@<ver>] <acl>]",
        "report available acls or dump an acl's contents",
        Operator,
        show
    ),
    cmd!(
        &["add", "map"],
        "add map [@<ver>] <map> <key> <val>",
        "add a map entry (payload supported instead of key/val)",
        Admin,
        add
    ),
    cmd!(
        &["clear", "map"],
        "clear map [@<ver>] <map>",
        "clear the contents of this map",
        Admin,
        clear
    ),
    cmd!(
        &["commit", "map"],
        "commit map @<ver> <map>",
        "commit the map at this version",
        Admin,
        commit
    ),
    cmd!(
        &["del", "map"],
        "del map <map> [<key>|#<ref>]",
        "delete map entries matching <key>",
        Admin,
        del
    ),
    cmd!(
        &["get", "map"],
        "get map <map> <value>",
        "report the keys and values matching a sample for a map",
        Operator,
        get
    ),
    cmd!(
        &["prepare", "map"],
        "prepare map <map>",
        "prepare a new version for atomic map replacement",
        Admin,
        prepare
    ),
    cmd!(
        &["set", "map"],
        "set map <map> [<key>|#<ref>] <value>",
        "modify a map entry",
        Admin,
        set
    ),
    cmd!(
        &["show", "map"],
        "show map [[@<ver>] <map>]",
        "report available maps or dump a map's contents",
        Operator,
        show
    ),
];

fn arg(w: &[String], i: usize) -> &str {
    w.get(i).map_or("", String::as_str)
}

/// `atoi`: optional blanks and sign, then digits; 0 when there are none.
fn atoi(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |v, d| {
            v.wrapping_mul(10).wrapping_add(i64::from(d - b'0'))
        });
    if neg {
        -v
    } else {
        v
    }
}

/// HAProxy's `str2uic`: the leading digits as an unsigned 32-bit number
/// (wrapping), 0 when there are none.
pub(crate) fn str2uic(s: &str) -> u32 {
    s.bytes().take_while(u8::is_ascii_digit).fold(0u32, |v, d| {
        v.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))
    })
}

fn is_map(w: &[String]) -> bool {
    arg(w, 1) == "map"
}

fn unknown(map: bool) -> String {
    if map {
        "Unknown map identifier. Please use #<id> or <file>.\n".into()
    } else {
        "Unknown ACL identifier. Please use #<id> or <file>.\n".into()
    }
}

/// The reference `name` designates: `#<id>` or a file path.
fn find_ref(s: &Session, name: &str) -> Option<PatRefInfo> {
    let refs = s.api.pattern_refs();
    match name.strip_prefix('#') {
        Some(id) => {
            let id = atoi(id);
            refs.into_iter().find(|r| r.id == id)
        }
        None => refs.into_iter().find(|r| r.path == name),
    }
}

/// Like [`find_ref`], for a reference listed by `show map` (or `show
/// acl`).
fn find_kind(s: &Session, name: &str, map: bool) -> Option<PatRefInfo> {
    find_ref(s, name).filter(|r| if map { r.map } else { r.acl })
}

/// An entry designation: `#0x<hex>` is an entry id, anything else a key.
pub(crate) fn parse_target(t: &str) -> Result<PatTarget, String> {
    let Some(hex) = t.strip_prefix("#0x") else {
        return Ok(PatTarget::Key(t.to_string()));
    };
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("Malformed identifier. Please use #<id> or <file>.\n".into());
    }
    u64::from_str_radix(hex, 16)
        .map(PatTarget::Id)
        .map_err(|_| "Malformed identifier. Please use #<id> or <file>.\n".into())
}

/// The description `show map` prints after the file name.
fn description(r: &PatRefInfo) -> String {
    let (first, other) = if r.two_column {
        ("map", "acl")
    } else {
        ("acl", "map")
    };
    let mut d = format!("pattern loaded from file '{}' used by {first}", r.path);
    if r.map && r.acl {
        let _ = write!(d, ", by {other}");
    }
    d
}

/// `show map|acl` without argument.
pub(crate) fn render_list(refs: &[PatRefInfo], map: bool) -> String {
    let mut out = String::from("# id (file) description\n");
    for r in refs.iter().filter(|r| if map { r.map } else { r.acl }) {
        let _ = writeln!(
            out,
            "{} ({}) {}. curr_ver={} next_ver={} entry_cnt={}",
            r.id,
            r.path,
            description(r),
            r.curr_ver,
            r.next_ver,
            r.entry_cnt
        );
    }
    out
}

fn show(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    if arg(w, 2).is_empty() {
        return render_list(&s.api.pattern_refs(), map);
    }
    let (version, name) = match arg(w, 2).strip_prefix('@') {
        Some(v) => (Some(str2uic(v)), arg(w, 3)),
        None => (None, arg(w, 2)),
    };
    let Some(r) = find_kind(s, name, map) else {
        return unknown(map);
    };
    let mut out = String::new();
    for e in s.api.pattern_entries(&r.path, version) {
        let _ = match &e.value {
            Some(v) => writeln!(out, "{:#x} {} {v}", e.id, e.key),
            None => writeln!(out, "{:#x} {}", e.id, e.key),
        };
    }
    out
}

/// One line of `get map|acl`.
pub(crate) fn render_lookup(l: &PatLookup, map: bool) -> String {
    let case = if l.icase { "insensitive" } else { "sensitive" };
    let mut out = format!("type={}, case={case}", l.method);
    let what = if map { "found" } else { "match" };
    let Some(h) = &l.hit else {
        let _ = writeln!(out, ", {what}=no");
        return out;
    };
    let idx = if h.tree { "tree" } else { "list" };
    let _ = write!(out, ", {what}=yes, idx={idx}");
    if map {
        let _ = write!(out, ", key=\"{}\"", h.key);
        let _ = match &h.value {
            Some((v, t)) => write!(out, ", value=\"{v}\", type=\"{t}\""),
            None => write!(out, ", value=none"),
        };
    } else {
        let _ = write!(out, ", pattern=\"{}\"", h.key);
    }
    out.push('\n');
    out
}

fn get(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    if arg(w, 2).is_empty() || arg(w, 3).is_empty() {
        return if map {
            "Missing map identifier and/or key.\n".into()
        } else {
            "Missing ACL identifier and/or key.\n".into()
        };
    }
    let Some(r) = find_ref(s, arg(w, 2)) else {
        return unknown(map);
    };
    s.api
        .pattern_lookup(&r.path, arg(w, 3))
        .iter()
        .map(|l| render_lookup(l, map))
        .collect()
}

/// Runs an edit; `Ok` is the new version of a `prepare`.
fn edit(s: &Session, r: &PatRefInfo, e: &PatEdit) -> Result<u32, PatError> {
    s.api.pattern_edit(&r.path, e)
}

fn invalid(msg: &str) -> String {
    format!("{}.\n", msg.trim_end_matches(['.', '\n']))
}

fn prepare(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    let Some(r) = find_kind(s, arg(w, 2), map) else {
        return unknown(map);
    };
    match edit(s, &r, &PatEdit::Prepare) {
        Ok(v) => format!("New version created: {v}\n"),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(_) => unknown(map),
    }
}

fn set(s: &mut Session, w: &[String]) -> String {
    if arg(w, 2).is_empty() || arg(w, 3).is_empty() || arg(w, 4).is_empty() {
        return "'set map' expects three parameters: map identifier, key and value.\n".into();
    }
    let Some(r) = find_ref(s, arg(w, 2)) else {
        return unknown(true);
    };
    let target = match parse_target(arg(w, 3)) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let by_id = matches!(target, PatTarget::Id(_));
    let e = PatEdit::Set {
        target,
        value: arg(w, 4).to_string(),
    };
    match edit(s, &r, &e) {
        Ok(_) => String::new(),
        Err(PatError::NotFound) if by_id => "key or pattern not found.\n".into(),
        Err(PatError::NotFound) => "entry not found.\n".into(),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(PatError::UnknownRef) => unknown(true),
    }
}

/// The rows of an `add map` payload: one entry per line, the key up to
/// the first blank, the value the rest of the line after the blanks.
pub(crate) fn payload_rows(
    payload: &str,
    map: bool,
) -> Result<Vec<(String, Option<String>)>, String> {
    let mut rows = Vec::new();
    for line in payload.split('\n').filter(|l| !l.is_empty()) {
        let (key, value) = match line.find([' ', '\t']) {
            Some(p) => (&line[..p], line[p + 1..].trim_start_matches([' ', '\t'])),
            None if map => return Err(format!("Missing value for key '{line}'.\n")),
            None => (line, ""),
        };
        rows.push((key.to_string(), map.then(|| value.to_string())));
    }
    Ok(rows)
}

fn add(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    let payload = s.payload.take();
    let (version, a) = match arg(w, 2).strip_prefix('@') {
        Some(v) => (Some(str2uic(v)), 3),
        None => (None, 2),
    };
    let missing = |i: usize| arg(w, a + i).is_empty();
    if map {
        if (payload.is_none() && (missing(0) || missing(1) || missing(2)))
            || (payload.is_some() && missing(0))
        {
            return "'add map' expects three parameters (map identifier, key and value) \
or one parameter (map identifier) and a payload\n"
                .into();
        }
    } else if missing(0) || missing(1) {
        return "'add acl' expects two parameters: ACL identifier and pattern.\n".into();
    }
    let Some(r) = find_ref(s, arg(w, a)) else {
        return unknown(map);
    };
    if version.is_some_and(|v| v.wrapping_sub(r.next_ver) as i32 > 0) {
        let kind = if map { "map" } else { "acl" };
        return format!("Version number in the future, please use 'prepare {kind}' before.\n");
    }
    if !map && r.two_column {
        return "This ACL is shared with a map containing samples. \
You must use the command 'add map' to add values.\n"
            .into();
    }
    let rows = match payload {
        Some(p) => match payload_rows(&p, map) {
            Ok(rows) => rows,
            Err(e) => return e,
        },
        None => vec![(
            arg(w, a + 1).to_string(),
            map.then(|| arg(w, a + 2).to_string()),
        )],
    };
    if rows.is_empty() {
        return String::new();
    }
    match edit(s, &r, &PatEdit::Add { version, rows }) {
        Ok(_) => String::new(),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(PatError::UnknownRef) => unknown(map),
        Err(PatError::NotFound) => "Failed to add a key.\n".into(),
    }
}

fn del(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    if arg(w, 2).is_empty() || arg(w, 3).is_empty() {
        return if map {
            "This command expects two parameters: map identifier and key.\n".into()
        } else {
            "This command expects two parameters: ACL identifier and key.\n".into()
        };
    }
    // HAProxy names maps in this message for both kinds.
    let Some(r) = find_kind(s, arg(w, 2), map) else {
        return unknown(true);
    };
    let target = match parse_target(arg(w, 3)) {
        Ok(t) => t,
        Err(e) => return e,
    };
    match edit(s, &r, &PatEdit::Del { target }) {
        Ok(_) => String::new(),
        Err(PatError::NotFound) => "Key not found.\n".into(),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(PatError::UnknownRef) => unknown(true),
    }
}

fn missing_ref(map: bool) -> String {
    if map {
        "Missing map identifier.\n".into()
    } else {
        "Missing ACL identifier.\n".into()
    }
}

fn clear(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    let (version, name) = match arg(w, 2).strip_prefix('@') {
        Some(v) => (Some(str2uic(v)), arg(w, 3)),
        None => (None, arg(w, 2)),
    };
    if name.is_empty() {
        return missing_ref(map);
    }
    let Some(r) = find_kind(s, name, map) else {
        return unknown(map);
    };
    match edit(s, &r, &PatEdit::Clear { version }) {
        Ok(_) => String::new(),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(_) => unknown(map),
    }
}

/// Whether `ver` is one `commit` accepts: after the current version, up to
/// the last prepared one (HAProxy's wrapping comparison).
pub(crate) fn commit_in_range(ver: u32, curr: u32, next: u32) -> bool {
    ver.wrapping_sub(curr.wrapping_add(1)) < next.wrapping_sub(curr)
}

fn commit(s: &mut Session, w: &[String]) -> String {
    let map = is_map(w);
    let Some(v) = arg(w, 2).strip_prefix('@') else {
        return "Missing version number.\n".into();
    };
    let version = str2uic(v);
    if arg(w, 3).is_empty() {
        return missing_ref(map);
    }
    let Some(r) = find_kind(s, arg(w, 3), map) else {
        return unknown(map);
    };
    if !commit_in_range(version, r.curr_ver, r.next_ver) {
        return "Version number out of range.\n".into();
    }
    match edit(s, &r, &PatEdit::Commit { version }) {
        Ok(_) => String::new(),
        Err(PatError::Invalid(m)) => invalid(&m),
        Err(_) => unknown(map),
    }
}

#[cfg(test)]
#[path = "maps_tests.rs"]
mod tests;
