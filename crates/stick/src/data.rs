//! The values stored in one entry and the operations on them (HAProxy's
//! `stktable_data_ptr` accessors, the `stkctr_inc_*` updates and the
//! general purpose counter actions).
//!
//! [`Layout`] maps each stored data type to its first slot in a flat
//! array; an entry's values are `Box<[Val]>` guarded by the entry's mutex.

use std::sync::Arc;

use crate::freq::FreqCtr;
use crate::spec::{DataType, StdType, TableSpec, DATA_TYPES};

/// One stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    Sint(i32),
    Uint(u32),
    Ull(u64),
    Freq(FreqCtr),
    Dict(Option<Arc<str>>),
}

/// Where each stored type lives in an entry's value array.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// First slot and element count per data type.
    slots: [Option<(u16, u16)>; DATA_TYPES],
    /// Periods per data type (0 when not a rate).
    periods: [u32; DATA_TYPES],
    total: usize,
}

impl Layout {
    pub(crate) fn new(spec: &TableSpec) -> Layout {
        let mut slots = [None; DATA_TYPES];
        let mut periods = [0; DATA_TYPES];
        let mut total = 0usize;
        for dt in DataType::ALL {
            if let Some(st) = spec.stored(dt) {
                let n = st.nbelem.clamp(1, crate::spec::MAX_ARRAY_SIZE) as u16;
                slots[dt.index()] = Some((total as u16, n));
                periods[dt.index()] = st.period_ms;
                total += usize::from(n);
            }
        }
        Layout {
            slots,
            periods,
            total,
        }
    }

    /// Fresh zeroed values for a new entry.
    pub(crate) fn fresh(&self) -> Box<[Val]> {
        let mut v = Vec::with_capacity(self.total);
        for dt in DataType::ALL {
            if let Some((_, n)) = self.slots[dt.index()] {
                for _ in 0..n {
                    v.push(match dt.std_type() {
                        StdType::Sint => Val::Sint(0),
                        StdType::Uint => Val::Uint(0),
                        StdType::Ull => Val::Ull(0),
                        StdType::Freq => Val::Freq(FreqCtr::default()),
                        StdType::Dict => Val::Dict(None),
                    });
                }
            }
        }
        v.into_boxed_slice()
    }

    /// Slot index of element `idx` of `dt`, if stored.
    pub(crate) fn slot(&self, dt: DataType, idx: u32) -> Option<usize> {
        let (first, n) = self.slots[dt.index()]?;
        (idx < u32::from(n)).then(|| usize::from(first) + idx as usize)
    }

    /// Element count of `dt` (0 when not stored).
    pub(crate) fn nbelem(&self, dt: DataType) -> u32 {
        self.slots[dt.index()].map_or(0, |(_, n)| u32::from(n))
    }

    pub(crate) fn period(&self, dt: DataType) -> u32 {
        self.periods[dt.index()]
    }
}

/// A read of one value: integers as HAProxy returns them in a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Any 32-bit integer type or a rate read at the given time.
    Int(i64),
    /// A 64-bit byte counter.
    Ull(u64),
    /// `server_key`, or `None` when unset (`-` in `show table`).
    Str(Option<Arc<str>>),
}

impl Value {
    /// The integer, or 0 for a string.
    pub fn as_int(&self) -> i64 {
        match self {
            Value::Int(v) => *v,
            // HAProxy casts the 64-bit counters to a signed sample.
            Value::Ull(v) => *v as i64,
            Value::Str(_) => 0,
        }
    }
}

/// The values of one entry with its table's layout; all methods return
/// `None` (or do nothing) for data that the table does not store.
pub(crate) struct Data<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) vals: &'a mut [Val],
}

impl Data<'_> {
    fn slot_mut(&mut self, dt: DataType, idx: u32) -> Option<&mut Val> {
        let s = self.layout.slot(dt, idx)?;
        self.vals.get_mut(s)
    }

    pub(crate) fn has(&self, dt: DataType) -> bool {
        self.layout.slot(dt, 0).is_some()
    }

    /// Reads element `idx` of `dt` at `now`.
    pub(crate) fn read(&self, dt: DataType, idx: u32, now: u64) -> Option<Value> {
        let s = self.layout.slot(dt, idx)?;
        Some(match self.vals.get(s)? {
            Val::Sint(v) => Value::Int(i64::from(*v)),
            Val::Uint(v) => Value::Int(i64::from(*v)),
            Val::Ull(v) => Value::Ull(*v),
            Val::Freq(f) => Value::Int(i64::from(f.read(self.layout.period(dt), now))),
            Val::Dict(d) => Value::Str(d.clone()),
        })
    }

    /// Adds `n` to a u32 counter (wrapping); returns the new value.
    pub(crate) fn add_uint(&mut self, dt: DataType, idx: u32, n: u32) -> Option<u32> {
        match self.slot_mut(dt, idx)? {
            Val::Uint(v) => {
                *v = v.wrapping_add(n);
                Some(*v)
            }
            _ => None,
        }
    }

    pub(crate) fn add_ull(&mut self, dt: DataType, n: u64) -> Option<u64> {
        match self.slot_mut(dt, 0)? {
            Val::Ull(v) => {
                *v = v.wrapping_add(n);
                Some(*v)
            }
            _ => None,
        }
    }

    /// Updates a rate; returns the current period's count.
    pub(crate) fn add_freq(&mut self, dt: DataType, idx: u32, n: u32, now: u64) -> Option<u32> {
        let period = self.layout.period(dt);
        match self.slot_mut(dt, idx)? {
            Val::Freq(f) => Some(f.update(period, n, now)),
            _ => None,
        }
    }

    /// Decrements `conn_cur` if above 0; `Some` when stored.
    pub(crate) fn dec_conn_cur(&mut self) -> Option<()> {
        match self.slot_mut(DataType::ConnCur, 0)? {
            Val::Uint(v) => {
                *v = v.saturating_sub(1);
                Some(())
            }
            _ => None,
        }
    }

    /// Sets an integer value as the CLI and the `sc-set-gpt*` actions do:
    /// truncated to the type's width; a rate restarts at `now` with
    /// `value` events. Returns false when `dt` is not stored or is a
    /// string.
    pub(crate) fn set_int(&mut self, dt: DataType, idx: u32, value: i64, now: u64) -> bool {
        match self.slot_mut(dt, idx) {
            Some(Val::Sint(v)) => *v = value as i32,
            Some(Val::Uint(v)) => *v = value as u32,
            Some(Val::Ull(v)) => *v = value as u64,
            Some(Val::Freq(f)) => f.set(value as u32, now),
            Some(Val::Dict(_)) | None => return false,
        }
        true
    }

    pub(crate) fn set_dict(&mut self, value: Option<Arc<str>>) -> bool {
        match self.slot_mut(DataType::ServerKey, 0) {
            Some(Val::Dict(d)) => {
                *d = value;
                true
            }
            _ => false,
        }
    }

    /// Returns a u32 counter's value and sets it to 0.
    pub(crate) fn take_uint(&mut self, dt: DataType, idx: u32) -> Option<u32> {
        match self.slot_mut(dt, idx)? {
            Val::Uint(v) => Some(std::mem::take(v)),
            _ => None,
        }
    }

    pub(crate) fn freq_curr(&self, dt: DataType, idx: u32) -> Option<u32> {
        let s = self.layout.slot(dt, idx)?;
        match self.vals.get(s)? {
            Val::Freq(f) => Some(f.curr_ctr()),
            _ => None,
        }
    }
}

/// Which general purpose counter a fetch or action designates: `gpc0`
/// and `gpc1` fall back on element 0 or 1 of the `gpc` array when the
/// table stores the array instead (HAProxy 2.5+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gpc {
    /// `gpc0` (falls back on `gpc[0]`).
    Gpc0,
    /// `gpc1` (falls back on `gpc[1]`).
    Gpc1,
    /// `gpc[idx]` of the array.
    Idx(u32),
}

impl Gpc {
    /// The counter's (type, index) as stored in a table.
    pub(crate) fn counter(self, d: &Data<'_>) -> Option<(DataType, u32)> {
        let (named, idx) = match self {
            Gpc::Gpc0 => (Some(DataType::Gpc0), 0),
            Gpc::Gpc1 => (Some(DataType::Gpc1), 1),
            Gpc::Idx(i) => (None, i),
        };
        if let Some(n) = named.filter(|n| d.has(*n)) {
            return Some((n, 0));
        }
        d.layout
            .slot(DataType::Gpc, idx)
            .map(|_| (DataType::Gpc, idx))
    }

    /// The matching rate's (type, index).
    pub(crate) fn rate(self, d: &Data<'_>) -> Option<(DataType, u32)> {
        let (named, idx) = match self {
            Gpc::Gpc0 => (Some(DataType::Gpc0Rate), 0),
            Gpc::Gpc1 => (Some(DataType::Gpc1Rate), 1),
            Gpc::Idx(i) => (None, i),
        };
        if let Some(n) = named.filter(|n| d.has(*n)) {
            return Some((n, 0));
        }
        d.layout
            .slot(DataType::GpcRate, idx)
            .map(|_| (DataType::GpcRate, idx))
    }
}

/// `gpt0` or `gpt[idx]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gpt {
    /// `gpt0` (falls back on `gpt[0]`).
    Gpt0,
    /// `gpt[idx]`.
    Idx(u32),
}

impl Gpt {
    pub(crate) fn counter(self, d: &Data<'_>) -> Option<(DataType, u32)> {
        match self {
            Gpt::Gpt0 if d.has(DataType::Gpt0) => Some((DataType::Gpt0, 0)),
            Gpt::Gpt0 => d.layout.slot(DataType::Gpt, 0).map(|_| (DataType::Gpt, 0)),
            Gpt::Idx(i) => d.layout.slot(DataType::Gpt, i).map(|_| (DataType::Gpt, i)),
        }
    }
}
