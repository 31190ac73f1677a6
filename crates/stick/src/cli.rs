//! The runtime API commands on tables, producing HAProxy 2.6's exact text:
//! `show table`, `show table NAME [data.<type> <op> <value>]... | [key K]`,
//! `clear table NAME [data... | key K]` and `set table NAME key K
//! [data.<type> V]...`.
//!
//! [`table_command`] takes the command's words and returns the response
//! body (without the blank line the CLI appends after each response).
//! Entries are printed as `0x<id>: key=... use=N exp=MS type=V ...` where
//! `<id>` is a stable entry id in place of HAProxy's pointer. Tables are
//! listed in the order given; HAProxy lists them in reverse declaration
//! order.

use std::fmt::Write as _;

use crate::data::Value;
use crate::key::{format_key, parse_cli_key};
use crate::spec::{DataType, StdType};
use crate::table::{EntryRef, Table};

/// Maximum number of `data.` filters (HAProxy's `STKTABLE_FILTER_LEN`).
pub const FILTER_LEN: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Show,
    Clear,
    Set,
}

/// A comparison operator of a data filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Le,
    Ge,
    Lt,
    Gt,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "le" => Op::Le,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "gt" => Op::Gt,
            _ => return None,
        })
    }

    fn test(self, data: i64, value: i64) -> bool {
        match self {
            Op::Eq => data == value,
            Op::Ne => data != value,
            Op::Le => data <= value,
            Op::Ge => data >= value,
            Op::Lt => data < value,
            Op::Gt => data > value,
        }
    }
}

/// HAProxy's `strl2llrc`: an optional `-` and at least one digit, nothing
/// else, within 64 bits.
fn parse_ll(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

/// Runs a table command. `words` is the whole command split on spaces,
/// e.g. `["show", "table", "t", "key", "10.0.0.1"]`. Returns `None` when
/// the words are not a table command. `Err` holds HAProxy's error text.
pub fn table_command(tables: &[Table], words: &[&str], now: u64) -> Option<Result<String, String>> {
    let action = match (words.first().copied(), words.get(1).copied()) {
        (Some("show"), Some("table")) => Action::Show,
        (Some("clear"), Some("table")) => Action::Clear,
        (Some("set"), Some("table")) => Action::Set,
        _ => return None,
    };
    let arg = |i: usize| words.get(i).copied().unwrap_or("");
    let name = arg(2);
    if name.is_empty() {
        if action != Action::Show {
            return Some(Err(err_args(action)));
        }
        return Some(Ok(show_tables(tables)));
    }
    let Some(t) = tables.iter().find(|t| t.name() == name) else {
        return Some(Err("No such table\n".to_string()));
    };
    let r = if arg(3) == "key" {
        per_key(t, action, words, now)
    } else if arg(3).starts_with("data.") {
        match parse_filters(t, action, words) {
            Ok(f) => Ok(walk(t, action, &f, now)),
            Err(e) => Err(e),
        }
    } else if !arg(3).is_empty() {
        Err(err_args(action))
    } else {
        Ok(walk(t, action, &[], now))
    };
    Some(r)
}

fn err_args(action: Action) -> String {
    match action {
        Action::Show => "Optional argument only supports \"data.<store_data_type>\" <operator> <value> and key <key>\n",
        Action::Clear => "Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>\n",
        Action::Set => "Required arguments: <table> key <key> [data.<store_data_type> <value>]*\n",
    }
    .to_string()
}

/// `show table`: one header line per table.
pub fn show_tables(tables: &[Table]) -> String {
    let mut out = String::new();
    for t in tables {
        head(t, &mut out);
    }
    out
}

fn head(t: &Table, out: &mut String) {
    let _ = writeln!(
        out,
        "# table: {}, type: {}, size:{}, used:{}",
        t.name(),
        t.spec().key_type.name(),
        t.spec().size,
        t.len()
    );
}

/// Appends one entry line; `own_refs` is the number of references the
/// caller holds (not counted in `use=`).
pub fn format_entry(t: &Table, e: &EntryRef, own_refs: u32, now: u64, out: &mut String) {
    let _ = write!(out, "0x{:x}: key=", e.id());
    format_key(t.spec(), e.key(), out);
    let _ = write!(
        out,
        " use={} exp={}",
        i64::from(e.ref_cnt()) - i64::from(own_refs),
        e.expires_in(now)
    );
    let spec = t.spec();
    for dt in DataType::ALL {
        let Some(st) = spec.stored(dt) else { continue };
        if dt.is_array() {
            // "gpc_rate" prints as "gpc<i>_rate(P)", "gpt" as "gpt<i>".
            let (pfx, sfx) = match dt.name().split_once('_') {
                Some((p, s)) => (p, format!("_{s}")),
                None => (dt.name(), String::new()),
            };
            for i in 0..e.nbelem(dt) {
                let _ = write!(out, " {pfx}{i}{sfx}");
                if dt.has_period() {
                    let _ = write!(out, "({})", st.period_ms);
                }
                out.push('=');
                value(e.get(dt, i, now), out);
            }
            continue;
        }
        if dt.has_period() {
            let _ = write!(out, " {}({})=", dt.name(), st.period_ms);
        } else {
            let _ = write!(out, " {}=", dt.name());
        }
        value(e.get(dt, 0, now), out);
    }
    out.push('\n');
}

fn value(v: Option<Value>, out: &mut String) {
    match v {
        Some(Value::Int(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::Ull(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::Str(Some(s))) => out.push_str(&s),
        Some(Value::Str(None)) | None => out.push('-'),
    }
}

type Filter = (DataType, Op, i64);

fn parse_filters(t: &Table, action: Action, words: &[&str]) -> Result<Vec<Filter>, String> {
    if action == Action::Set {
        return Err(
            "content-based lookup is only supported with the \"show\" and \"clear\" actions\n"
                .to_string(),
        );
    }
    let arg = |i: usize| words.get(i).copied().unwrap_or("");
    let mut out = Vec::new();
    let mut i = 0;
    while i < FILTER_LEN {
        let w = arg(3 + 3 * i);
        if i > 0 && w.is_empty() {
            break;
        }
        let n = i + 1;
        let dt = w
            .get(5..)
            .and_then(DataType::from_name)
            .ok_or_else(|| format!("Filter entry #{n}: Unknown data type\n"))?;
        if !t.spec().stores(dt) {
            return Err(format!(
                "Filter entry #{n}: Data type not stored in this table\n"
            ));
        }
        let op = Op::parse(arg(4 + 3 * i)).ok_or_else(|| {
            format!("Filter entry #{n}: Require and operator among \"eq\", \"ne\", \"le\", \"ge\", \"lt\", \"gt\"\n")
        })?;
        let v = parse_ll(arg(5 + 3 * i)).ok_or_else(|| {
            format!("Filter entry #{n}: Require a valid integer value to compare against\n")
        })?;
        out.push((dt, op, v));
        i += 1;
    }
    if !arg(3 + 3 * i).is_empty() {
        return Err(format!(
            "Detected extra data in filter, {}th word of input, after '{}'\n",
            3 + 3 * i + 1,
            arg(2 + 3 * i)
        ));
    }
    Ok(out)
}

/// The value a filter compares: element 0 for arrays, strings as 0.
fn filter_value(e: &EntryRef, dt: DataType, now: u64) -> i64 {
    match dt.std_type() {
        StdType::Dict => 0,
        _ => e.get(dt, 0, now).map_or(0, |v| v.as_int()),
    }
}

/// Dumps (show) or removes (clear, and set without arguments, as HAProxy
/// 2.6 does) every entry matching all filters.
fn walk(t: &Table, action: Action, filters: &[Filter], now: u64) -> String {
    let mut out = String::new();
    if action == Action::Show {
        head(t, &mut out);
    }
    for e in t.entries(now) {
        let keep = filters
            .iter()
            .all(|&(dt, op, v)| op.test(filter_value(&e, dt, now), v));
        if !keep {
            continue;
        }
        if action == Action::Show {
            format_entry(t, &e, 1, now, &mut out);
        } else {
            let key: Box<[u8]> = e.key().into();
            drop(e);
            // Referenced entries are skipped silently.
            let _ = t.remove(&key);
        }
    }
    out
}

fn per_key(t: &Table, action: Action, words: &[&str], now: u64) -> Result<String, String> {
    let arg = |i: usize| words.get(i).copied().unwrap_or("");
    if arg(4).is_empty() {
        return Err("Key value expected\n".to_string());
    }
    let verb = match action {
        Action::Show => "Showing",
        Action::Clear => "Removing",
        Action::Set => "Inserting",
    };
    let key = parse_cli_key(t.spec(), arg(4), verb)?;
    match action {
        Action::Show => {
            let Some(e) = t.lookup(&key, now) else {
                return Ok(String::new());
            };
            let mut out = String::new();
            head(t, &mut out);
            format_entry(t, &e, 1, now, &mut out);
            Ok(out)
        }
        Action::Clear => match t.remove(&key) {
            Ok(_) => Ok(String::new()),
            Err(_) => Err("Entry currently in use, cannot remove\n".to_string()),
        },
        Action::Set => {
            let e = t
                .get_or_create(&key, now)
                .ok_or_else(|| "Unable to allocate a new entry\n".to_string())?;
            let r = set_values(t, &e, &words[5.min(words.len())..], now);
            e.touch(now);
            r.map(|_| String::new())
        }
    }
}

/// Applies `data.<type> <value>` pairs in order, stopping at the first
/// error (values set before it stay set, as in HAProxy).
fn set_values(t: &Table, e: &EntryRef, pairs: &[&str], now: u64) -> Result<(), String> {
    let mut i = 0;
    while let Some(&w) = pairs.get(i) {
        let Some(name) = w.strip_prefix("data.") else {
            return Err("\"data.<type>\" followed by a value expected\n".to_string());
        };
        let dt = DataType::from_name(name).ok_or_else(|| "Unknown data type\n".to_string())?;
        if !t.spec().stores(dt) {
            return Err("Data type not stored in this table\n".to_string());
        }
        let v = pairs
            .get(i + 1)
            .and_then(|s| parse_ll(s))
            .ok_or_else(|| "Require a valid integer value to store\n".to_string())?;
        // HAProxy writes element 0 of arrays; a string type is ignored.
        e.set_data(dt, 0, v, now);
        i += 2;
    }
    Ok(())
}
