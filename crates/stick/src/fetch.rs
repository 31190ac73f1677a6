//! The `sc_*`, `scN_*`, `src_*`, `table_avl`/`table_cnt` sample fetches and
//! the `in_table`/`table_*` converters, evaluated as HAProxy 2.6 does.
//!
//! Parse time: [`parse_fetch`] and [`parse_converter`] recognise a keyword
//! and say which arguments it takes ([`StickFetch::args`]). HAProxy does
//! not check at parse time that a table stores the data a fetch reads; such
//! a fetch simply fails at run time. [`StickFetch::data_types`] lists what a
//! keyword reads, for callers that want to warn.
//!
//! Run time, as in HAProxy:
//! * `scN_*`/`sc_*(N)`: the fetch fails when slot N is not tracked
//!   (`scN_tracked` then returns false). With a
//!   table argument, the tracked key is looked up in that table instead; an
//!   absent key there reads as 0.
//! * `src_*`: the source address is looked up in the table argument (the
//!   proxy's own table by default); an absent key reads as 0.
//!   `src_inc_gpc*` and `src_clr_gpc*` create the entry.
//! * Data that the table does not store makes the fetch fail (except
//!   `*_inc_gpc*`, which return 0).
//! * Converters: a sample that does not convert to the table's type fails;
//!   an absent key gives 0 (`in_table`: false); data not stored fails.
//! * `table_trackers` counts its own lookup, as HAProxy does (an entry
//!   tracked once reads 2); `sc_trackers` does not when called with a table
//!   argument and counts the slot itself otherwise.

use crate::data::{Gpc, Gpt};
use crate::key::KeyInput;
use crate::spec::DataType;
use crate::table::{EntryRef, Table};
use crate::track::Levels;

/// Where a fetch finds its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `scN_*`: slot N.
    Slot(u8),
    /// `sc_*`: the slot is the first argument.
    SlotArg,
    /// `src_*`: the source address in a table.
    Src,
    /// `table_avl`, `table_cnt`: the table itself.
    Table,
}

/// What a fetch or converter computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A stored counter or rate, read as is.
    Get(DataType),
    /// `bytes_in_cnt` / 1024.
    KbytesIn,
    /// `bytes_out_cnt` / 1024.
    KbytesOut,
    /// `get_gpc0`, `get_gpc1`, `get_gpc(idx)`.
    GetGpc(GpcSel),
    /// `gpc0_rate`, `gpc1_rate`, `gpc_rate(idx)`.
    GpcRate(GpcSel),
    /// `inc_gpc*`.
    IncGpc(GpcSel),
    /// `clr_gpc*`.
    ClrGpc(GpcSel),
    /// `get_gpt0`, `get_gpt(idx)`.
    GetGpt(GptSel),
    /// `scN_tracked`.
    Tracked,
    /// `scN_trackers`, `table_trackers`.
    Trackers,
    /// `src_updt_conn_cnt`.
    UpdtConnCnt,
    /// `table_avl`.
    TableAvl,
    /// `table_cnt`.
    TableCnt,
    /// `in_table`.
    InTable,
}

/// A general purpose counter named in a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpcSel {
    Gpc0,
    Gpc1,
    /// The index is an argument.
    Arg,
}

/// A general purpose tag named in a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GptSel {
    Gpt0,
    /// The index is an argument.
    Arg,
}

/// The arguments a keyword takes, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Args {
    /// A mandatory slot number first (`sc_*`).
    pub slot: bool,
    /// A mandatory array index (`*_gpc(idx)`, `*_gpt(idx)`...).
    pub idx: bool,
    /// Whether the table argument is mandatory (`table_*` converters,
    /// `in_table`); otherwise it is optional.
    pub table_required: bool,
}

/// A recognised stick-table fetch or converter keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StickFetch {
    pub scope: Scope,
    pub metric: Metric,
}

/// A fetch or converter result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StickSample {
    Sint(i64),
    Bool(bool),
}

/// Metric names shared by the `sc*_`/`src_` families, and whether the
/// `scN_` form exists (array forms only exist as `sc_` and `src_`).
const METRICS: &[(&str, Metric, bool)] = &[
    ("bytes_in_rate", Metric::Get(DataType::BytesInRate), true),
    ("bytes_out_rate", Metric::Get(DataType::BytesOutRate), true),
    ("clr_gpc", Metric::ClrGpc(GpcSel::Arg), false),
    ("clr_gpc0", Metric::ClrGpc(GpcSel::Gpc0), true),
    ("clr_gpc1", Metric::ClrGpc(GpcSel::Gpc1), true),
    ("conn_cnt", Metric::Get(DataType::ConnCnt), true),
    ("conn_cur", Metric::Get(DataType::ConnCur), true),
    ("conn_rate", Metric::Get(DataType::ConnRate), true),
    ("get_gpt", Metric::GetGpt(GptSel::Arg), false),
    ("get_gpt0", Metric::GetGpt(GptSel::Gpt0), true),
    ("get_gpc", Metric::GetGpc(GpcSel::Arg), false),
    ("get_gpc0", Metric::GetGpc(GpcSel::Gpc0), true),
    ("get_gpc1", Metric::GetGpc(GpcSel::Gpc1), true),
    ("gpc_rate", Metric::GpcRate(GpcSel::Arg), false),
    ("gpc0_rate", Metric::GpcRate(GpcSel::Gpc0), true),
    ("gpc1_rate", Metric::GpcRate(GpcSel::Gpc1), true),
    ("http_err_cnt", Metric::Get(DataType::HttpErrCnt), true),
    ("http_err_rate", Metric::Get(DataType::HttpErrRate), true),
    ("http_fail_cnt", Metric::Get(DataType::HttpFailCnt), true),
    ("http_fail_rate", Metric::Get(DataType::HttpFailRate), true),
    ("http_req_cnt", Metric::Get(DataType::HttpReqCnt), true),
    ("http_req_rate", Metric::Get(DataType::HttpReqRate), true),
    ("inc_gpc", Metric::IncGpc(GpcSel::Arg), false),
    ("inc_gpc0", Metric::IncGpc(GpcSel::Gpc0), true),
    ("inc_gpc1", Metric::IncGpc(GpcSel::Gpc1), true),
    ("kbytes_in", Metric::KbytesIn, true),
    ("kbytes_out", Metric::KbytesOut, true),
    ("sess_cnt", Metric::Get(DataType::SessCnt), true),
    ("sess_rate", Metric::Get(DataType::SessRate), true),
];

/// Converter names after `table_`.
const CONVERTERS: &[(&str, Metric)] = &[
    ("bytes_in_rate", Metric::Get(DataType::BytesInRate)),
    ("bytes_out_rate", Metric::Get(DataType::BytesOutRate)),
    ("conn_cnt", Metric::Get(DataType::ConnCnt)),
    ("conn_cur", Metric::Get(DataType::ConnCur)),
    ("conn_rate", Metric::Get(DataType::ConnRate)),
    ("gpt", Metric::GetGpt(GptSel::Arg)),
    ("gpt0", Metric::GetGpt(GptSel::Gpt0)),
    ("gpc", Metric::GetGpc(GpcSel::Arg)),
    ("gpc0", Metric::GetGpc(GpcSel::Gpc0)),
    ("gpc1", Metric::GetGpc(GpcSel::Gpc1)),
    ("gpc_rate", Metric::GpcRate(GpcSel::Arg)),
    ("gpc0_rate", Metric::GpcRate(GpcSel::Gpc0)),
    ("gpc1_rate", Metric::GpcRate(GpcSel::Gpc1)),
    ("http_err_cnt", Metric::Get(DataType::HttpErrCnt)),
    ("http_err_rate", Metric::Get(DataType::HttpErrRate)),
    ("http_fail_cnt", Metric::Get(DataType::HttpFailCnt)),
    ("http_fail_rate", Metric::Get(DataType::HttpFailRate)),
    ("http_req_cnt", Metric::Get(DataType::HttpReqCnt)),
    ("http_req_rate", Metric::Get(DataType::HttpReqRate)),
    ("kbytes_in", Metric::KbytesIn),
    ("kbytes_out", Metric::KbytesOut),
    ("server_id", Metric::Get(DataType::ServerId)),
    ("sess_cnt", Metric::Get(DataType::SessCnt)),
    ("sess_rate", Metric::Get(DataType::SessRate)),
    ("trackers", Metric::Trackers),
];

/// Recognises a sample fetch keyword of HAProxy 2.6's stick-table family
/// (`sc_http_req_rate`, `sc0_conn_cur`, `src_get_gpc0`, `table_avl`...).
pub fn parse_fetch(name: &str) -> Option<StickFetch> {
    let f = |scope, metric| Some(StickFetch { scope, metric });
    match name {
        "table_avl" => return f(Scope::Table, Metric::TableAvl),
        "table_cnt" => return f(Scope::Table, Metric::TableCnt),
        "src_updt_conn_cnt" => return f(Scope::Src, Metric::UpdtConnCnt),
        // HAProxy 2.6 registers this one array form for slot 1 only.
        "sc1_clr_gpc" => return f(Scope::Slot(1), Metric::ClrGpc(GpcSel::Arg)),
        _ => {}
    }
    let (scope, rest) = if let Some(r) = name.strip_prefix("sc_") {
        (Scope::SlotArg, r)
    } else if let Some(r) = name.strip_prefix("src_") {
        (Scope::Src, r)
    } else {
        let b = name.as_bytes();
        match (b.first(), b.get(1), b.get(2), b.get(3)) {
            (Some(b's'), Some(b'c'), Some(d @ b'0'..=b'2'), Some(b'_')) => {
                (Scope::Slot(d - b'0'), name.get(4..)?)
            }
            _ => return None,
        }
    };
    if matches!(rest, "tracked" | "trackers") && scope != Scope::Src {
        let m = if rest == "tracked" {
            Metric::Tracked
        } else {
            Metric::Trackers
        };
        return f(scope, m);
    }
    let &(_, metric, slot_form) = METRICS.iter().find(|(n, _, _)| *n == rest)?;
    if matches!(scope, Scope::Slot(_)) && !slot_form {
        return None;
    }
    f(scope, metric)
}

/// Recognises a converter keyword (`in_table`, `table_*`).
pub fn parse_converter(name: &str) -> Option<StickFetch> {
    if name == "in_table" {
        return Some(StickFetch {
            scope: Scope::Table,
            metric: Metric::InTable,
        });
    }
    let rest = name.strip_prefix("table_")?;
    let &(_, metric) = CONVERTERS.iter().find(|(n, _)| *n == rest)?;
    Some(StickFetch {
        scope: Scope::Table,
        metric,
    })
}

impl StickFetch {
    /// The arguments this keyword takes (for a converter, as parsed by
    /// [`parse_converter`], the table is mandatory).
    pub fn args(&self, converter: bool) -> Args {
        let idx = matches!(
            self.metric,
            Metric::GetGpc(GpcSel::Arg)
                | Metric::GpcRate(GpcSel::Arg)
                | Metric::IncGpc(GpcSel::Arg)
                | Metric::ClrGpc(GpcSel::Arg)
                | Metric::GetGpt(GptSel::Arg)
        );
        Args {
            slot: self.scope == Scope::SlotArg,
            idx,
            table_required: converter,
        }
    }

    /// The data types this keyword reads or writes (any one of them is
    /// enough for the `gpc0`/`gpc` array fallbacks).
    pub fn data_types(&self) -> Vec<DataType> {
        match self.metric {
            Metric::Get(dt) => vec![dt],
            Metric::KbytesIn => vec![DataType::BytesInCnt],
            Metric::KbytesOut => vec![DataType::BytesOutCnt],
            Metric::GetGpc(s) | Metric::ClrGpc(s) => match s {
                GpcSel::Gpc0 => vec![DataType::Gpc0, DataType::Gpc],
                GpcSel::Gpc1 => vec![DataType::Gpc1, DataType::Gpc],
                GpcSel::Arg => vec![DataType::Gpc],
            },
            Metric::GpcRate(s) => match s {
                GpcSel::Gpc0 => vec![DataType::Gpc0Rate, DataType::GpcRate],
                GpcSel::Gpc1 => vec![DataType::Gpc1Rate, DataType::GpcRate],
                GpcSel::Arg => vec![DataType::GpcRate],
            },
            Metric::IncGpc(s) => match s {
                GpcSel::Gpc0 => vec![
                    DataType::Gpc0,
                    DataType::Gpc0Rate,
                    DataType::Gpc,
                    DataType::GpcRate,
                ],
                GpcSel::Gpc1 => vec![
                    DataType::Gpc1,
                    DataType::Gpc1Rate,
                    DataType::Gpc,
                    DataType::GpcRate,
                ],
                GpcSel::Arg => vec![DataType::Gpc, DataType::GpcRate],
            },
            Metric::GetGpt(GptSel::Gpt0) => vec![DataType::Gpt0, DataType::Gpt],
            Metric::GetGpt(GptSel::Arg) => vec![DataType::Gpt],
            Metric::UpdtConnCnt => vec![DataType::ConnCnt],
            _ => vec![],
        }
    }
}

fn gpc(sel: GpcSel, idx: u32) -> Gpc {
    match sel {
        GpcSel::Gpc0 => Gpc::Gpc0,
        GpcSel::Gpc1 => Gpc::Gpc1,
        GpcSel::Arg => Gpc::Idx(idx),
    }
}

/// Run-time arguments of a fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchArgs<'a> {
    /// The slot number argument of `sc_*`.
    pub slot: usize,
    /// The array index argument.
    pub idx: u32,
    /// The table argument, if given (required by `src_*` unless
    /// `default_table` is set, and by `table_*`).
    pub table: Option<&'a Table>,
    /// The proxy's own table (used by `src_*`, `table_avl`, `table_cnt`
    /// without a table argument).
    pub default_table: Option<&'a Table>,
}

/// Evaluates a fetch. `trackers` are the stream's slots, or a stream's
/// and its session's ([`Levels`]); `src` is the client's source address
/// (for `src_*`). `None` means the fetch fails.
pub fn eval_fetch<'t>(
    f: &StickFetch,
    args: &FetchArgs<'_>,
    trackers: impl Into<Levels<'t>>,
    src: Option<KeyInput<'_>>,
    now: u64,
) -> Option<StickSample> {
    let trackers: Levels<'t> = trackers.into();
    let table = args.table.or(args.default_table);
    match f.scope {
        Scope::Table => {
            let t = table?;
            return Some(StickSample::Sint(match f.metric {
                Metric::TableCnt => i64::from(t.len()),
                _ => t.available(),
            }));
        }
        Scope::Src => {
            let t = table?;
            let key = t.key(&src?)?;
            let mut entry = t.lookup(key.as_bytes(), now);
            if entry.is_none()
                && matches!(
                    f.metric,
                    Metric::IncGpc(_) | Metric::ClrGpc(_) | Metric::UpdtConnCnt
                )
            {
                entry = t.get_or_create(key.as_bytes(), now);
            }
            return apply(f.metric, entry.as_ref(), true, args.idx, now);
        }
        Scope::Slot(_) | Scope::SlotArg => {}
    }
    let n = match f.scope {
        Scope::Slot(n) => usize::from(n),
        _ => args.slot,
    };
    // `scN_tracked` succeeds with false on an untracked slot.
    let Some(tracked) = trackers.entry(n) else {
        return (f.metric == Metric::Tracked).then_some(StickSample::Bool(false));
    };
    match args.table {
        Some(t) => {
            let other = t.lookup(tracked.key(), now);
            apply(f.metric, other.as_ref(), true, args.idx, now)
        }
        None => apply(f.metric, Some(tracked), false, args.idx, now),
    }
}

/// Evaluates a converter on `input` against `table`.
pub fn eval_converter(
    f: &StickFetch,
    table: &Table,
    input: &KeyInput<'_>,
    idx: u32,
    now: u64,
) -> Option<StickSample> {
    let key = table.key(input)?;
    let entry = table.lookup(key.as_bytes(), now);
    match f.metric {
        Metric::InTable => Some(StickSample::Bool(entry.is_some())),
        // The lookup's own reference is counted, as in HAProxy.
        Metric::Trackers => Some(StickSample::Sint(
            entry.map_or(0, |e| i64::from(e.ref_cnt())),
        )),
        m => apply(m, entry.as_ref(), false, idx, now),
    }
}

/// Computes a metric on an entry (`None` entry: the key is absent and most
/// metrics read 0). `temp` tells that the caller's reference is temporary
/// (not counted by `trackers`).
fn apply(m: Metric, e: Option<&EntryRef>, temp: bool, idx: u32, now: u64) -> Option<StickSample> {
    let int = |v: i64| Some(StickSample::Sint(v));
    if m == Metric::Tracked {
        return Some(StickSample::Bool(true));
    }
    let Some(e) = e else {
        return int(0);
    };
    match m {
        Metric::Get(dt) => int(e.get_int(dt, now)?),
        Metric::KbytesIn => int(e.get_int(DataType::BytesInCnt, now)? >> 10),
        Metric::KbytesOut => int(e.get_int(DataType::BytesOutCnt, now)? >> 10),
        Metric::GetGpc(s) => int(e.get_gpc(gpc(s, idx), now)?),
        Metric::GpcRate(s) => int(e.get_gpc_rate(gpc(s, idx), now)?),
        Metric::IncGpc(s) => int(e.inc_gpc(gpc(s, idx), now).unwrap_or(0)),
        Metric::ClrGpc(s) => int(e.clr_gpc(gpc(s, idx), now)?),
        Metric::GetGpt(s) => {
            let which = match s {
                GptSel::Gpt0 => Gpt::Gpt0,
                GptSel::Arg => Gpt::Idx(idx),
            };
            int(e.get_gpt(which, now)?)
        }
        Metric::Trackers => {
            let refs = i64::from(e.ref_cnt());
            int(if temp { refs - 1 } else { refs })
        }
        Metric::UpdtConnCnt => int(e.updt_conn_cnt(now)?),
        Metric::InTable => Some(StickSample::Bool(true)),
        Metric::TableAvl | Metric::TableCnt | Metric::Tracked => None,
    }
}
