//! Stick tables in rules: the `sc_*`, `scN_*`, `src_*`, `table_avl` and
//! `table_cnt` fetches, and the clock every table call uses. The tables
//! themselves, the counters and the per-connection slots are
//! `fairlead-stick`'s; a stream exposes its slots through
//! [`crate::txn::Txn::trackers`] and [`crate::exec::Stream::trackers_mut`].

use crate::sample::Sample;
use fairlead_stick::fetch::{FetchArgs, Metric, StickFetch, StickSample};
use fairlead_stick::{KeyInput, Levels, Table};

/// Milliseconds on the process's monotonic clock: the `now` of every
/// stick table call (tracking, fetches, purge, runtime API).
pub fn now_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A sample as a table key input; `None` for a type no table takes.
pub fn key_input<'a>(s: &'a Sample<'_>) -> Option<KeyInput<'a>> {
    Some(match s {
        Sample::Bool(b) => KeyInput::Sint(i64::from(*b)),
        Sample::Sint(v) => KeyInput::Sint(*v),
        Sample::Ipv4(a) => KeyInput::Ipv4(*a),
        Sample::Ipv6(a) => KeyInput::Ipv6(*a),
        Sample::Str(b) | Sample::Meth(b) => KeyInput::Str(b),
        Sample::Bin(b) => KeyInput::Bin(b),
    })
}

/// A compiled stick table fetch.
#[derive(Debug, Clone)]
pub struct StickKind {
    f: StickFetch,
    slot: usize,
    idx: u32,
    table: Option<Table>,
    /// The proxy's own table (`src_*`, `table_avl` without argument).
    own: Option<Table>,
}

impl StickKind {
    /// Parses `name(args)` when `name` is a stick table fetch.
    pub(crate) fn parse(
        name: &str,
        args: &[String],
        env: &crate::Env,
    ) -> Option<Result<StickKind, String>> {
        let f = fairlead_stick::fetch::parse_fetch(name)?;
        Some(Self::compile(name, f, args, env))
    }

    fn compile(
        name: &str,
        f: StickFetch,
        args: &[String],
        env: &crate::Env,
    ) -> Result<StickKind, String> {
        let want = f.args(false);
        let mut it = args.iter();
        let mut int = |what: &str| -> Result<i64, String> {
            let a = it
                .next()
                .ok_or_else(|| format!("fetch method '{name}' expects {what}"))?;
            a.trim()
                .parse::<i64>()
                .map_err(|_| format!("fetch method '{name}': invalid {what} '{a}'"))
        };
        // The array index comes first: `sc_get_gpc(<idx>,<ctr>[,<table>])`.
        let idx = if want.idx {
            u32::try_from(int("an array index")?)
                .map_err(|_| format!("fetch method '{name}': invalid array index"))?
        } else {
            0
        };
        let slot = if want.slot {
            let n = int("a stick counter number")?;
            usize::try_from(n)
                .ok()
                .filter(|n| *n < fairlead_stick::track::DEFAULT_SLOTS)
                .ok_or_else(|| {
                    format!(
                        "fetch method '{name}': invalid stick counter number '{n}' (0 to {})",
                        fairlead_stick::track::DEFAULT_SLOTS - 1
                    )
                })?
        } else {
            0
        };
        let rest: Vec<&String> = args
            .iter()
            .skip(usize::from(want.slot) + usize::from(want.idx))
            .collect();
        let table = match rest.as_slice() {
            [] => None,
            [t] => Some(
                env.tables
                    .get(t.as_str())
                    .cloned()
                    .ok_or_else(|| format!("fetch method '{name}': unable to find table '{t}'"))?,
            ),
            _ => return Err(format!("fetch method '{name}': too many arguments")),
        };
        Ok(StickKind {
            f,
            slot,
            idx,
            table,
            own: env.own_table.clone(),
        })
    }

    /// The sample's type.
    pub(crate) fn out_type(&self) -> crate::SmpType {
        match self.f.metric {
            Metric::Tracked | Metric::InTable => crate::SmpType::Bool,
            _ => crate::SmpType::Sint,
        }
    }

    /// Evaluates against the stream's slots and source address.
    pub(crate) fn eval(&self, txn: &dyn crate::txn::Txn) -> Option<Sample<'static>> {
        let levels = Levels {
            stream: txn.trackers(),
            session: txn.sess_trackers(),
        };
        let args = FetchArgs {
            slot: self.slot,
            idx: self.idx,
            table: self.table.as_ref(),
            default_table: self.own.as_ref(),
        };
        let src = txn.src().map(|a| match a.ip() {
            std::net::IpAddr::V4(v) => KeyInput::Ipv4(v),
            std::net::IpAddr::V6(v) => KeyInput::Ipv6(v),
        });
        match fairlead_stick::fetch::eval_fetch(&self.f, &args, levels, src, now_ms())? {
            StickSample::Sint(v) => Some(Sample::Sint(v)),
            StickSample::Bool(b) => Some(Sample::Bool(b)),
        }
    }
}

/// A compiled `in_table(<table>)` or `table_*([<idx>,]<table>)`
/// converter (HAProxy 2.6: any input, converted to the table's key type;
/// a sample that does not convert fails, an absent key gives 0 or false,
/// data the table does not store fails).
#[derive(Debug, Clone)]
pub struct StickConv {
    f: StickFetch,
    idx: u32,
    table: Table,
}

impl StickConv {
    /// Parses `name(args)` when `name` is a stick table converter.
    pub(crate) fn parse(
        name: &str,
        args: &[String],
        env: &crate::Env,
    ) -> Option<Result<StickConv, String>> {
        let f = fairlead_stick::fetch::parse_converter(name)?;
        Some(Self::compile(name, f, args, env))
    }

    fn compile(
        name: &str,
        f: StickFetch,
        args: &[String],
        env: &crate::Env,
    ) -> Result<StickConv, String> {
        let want = f.args(true);
        let (idx, rest) = if want.idx {
            let a = args.first().ok_or_else(|| {
                format!("converter '{name}' expects <idx>,<table> (an array index, then a table)")
            })?;
            let idx = a
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("converter '{name}': invalid array index '{a}'"))?;
            (idx, args.get(1..).unwrap_or_default())
        } else {
            (0, args)
        };
        let t = match rest {
            [t] if !t.is_empty() => t,
            [] | [_] => return Err(format!("converter '{name}' expects a table name")),
            _ => return Err(format!("converter '{name}': too many arguments")),
        };
        let table = env
            .tables
            .get(t.as_str())
            .cloned()
            .ok_or_else(|| format!("converter '{name}': unable to find table '{t}'"))?;
        Ok(StickConv { f, idx, table })
    }

    /// The output type: a boolean for `in_table`, an integer otherwise.
    pub(crate) fn out_type(&self) -> crate::SmpType {
        match self.f.metric {
            Metric::InTable => crate::SmpType::Bool,
            _ => crate::SmpType::Sint,
        }
    }

    /// Looks the sample up in the table.
    pub(crate) fn apply(&self, s: &Sample<'_>) -> Option<Sample<'static>> {
        let k = key_input(s)?;
        let r =
            fairlead_stick::fetch::eval_converter(&self.f, &self.table, &k, self.idx, now_ms())?;
        Some(match r {
            StickSample::Sint(v) => Sample::Sint(v),
            StickSample::Bool(b) => Sample::Bool(b),
        })
    }
}
