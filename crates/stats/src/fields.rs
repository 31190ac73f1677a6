//! The `show stat` field list of HAProxy 2.6 and the conversion of a
//! [`Snapshot`] into lines of typed values, shared by CSV and JSON.
//!
//! The names and their order are HAProxy's (management guide, section
//! 9.1), including its spelling `src_ilim` for field 89. Only the static
//! fields (0 to 102) are produced; HAProxy appends a `-` column and
//! per-module counters (ssl, h1, h2) after them, whose presence and order
//! it does not guarantee.
//!
//! Each field also carries the tags of HAProxy's typed output (origin,
//! nature, scope, value type), used by the JSON output.

use crate::model::{CheckInfo, Counters, Mode, ProxyKind, ProxyStats, ServerStats, Snapshot};
use std::borrow::Cow;

/// One field: CSV name and typed-output tags.
pub(crate) struct FieldDef {
    pub name: &'static str,
    pub origin: &'static str,
    pub nature: &'static str,
    pub scope: &'static str,
    pub ty: &'static str,
}

const fn f(
    name: &'static str,
    origin: &'static str,
    nature: &'static str,
    scope: &'static str,
    ty: &'static str,
) -> FieldDef {
    FieldDef {
        name,
        origin,
        nature,
        scope,
        ty,
    }
}

// Origins, natures, scopes.
const KEY: &str = "Key";
const CFG: &str = "Config";
const MET: &str = "Metric";
const STS: &str = "Status";
const NAME: &str = "Name";
const GAUGE: &str = "Gauge";
const MAX: &str = "Max";
const LIMIT: &str = "Limit";
const CNT: &str = "Counter";
const AVG: &str = "Avg";
const AGE: &str = "Age";
const RATE: &str = "Rate";
const OUT: &str = "Output";
const DUR: &str = "Duration";
const SVC: &str = "Service";
const PROC: &str = "Process";

/// Number of static fields.
pub const NFIELDS: usize = 103;

/// Static fields of HAProxy 2.6, in order.
pub(crate) static FIELDS: [FieldDef; NFIELDS] = [
    f("pxname", KEY, NAME, SVC, "str"),
    f("svname", KEY, NAME, SVC, "str"),
    f("qcur", MET, GAUGE, PROC, "u32"),
    f("qmax", MET, MAX, PROC, "u32"),
    f("scur", MET, GAUGE, PROC, "u32"),
    f("smax", MET, MAX, PROC, "u32"),
    f("slim", CFG, LIMIT, PROC, "u32"),
    f("stot", MET, CNT, PROC, "u64"),
    f("bin", MET, CNT, PROC, "u64"),
    f("bout", MET, CNT, PROC, "u64"),
    f("dreq", MET, CNT, PROC, "u64"),
    f("dresp", MET, CNT, PROC, "u64"),
    f("ereq", MET, CNT, PROC, "u64"),
    f("econ", MET, CNT, PROC, "u64"),
    f("eresp", MET, CNT, PROC, "u64"),
    f("wretr", MET, CNT, PROC, "u64"),
    f("wredis", MET, CNT, PROC, "u64"),
    f("status", STS, GAUGE, PROC, "str"),
    f("weight", MET, AVG, PROC, "u32"),
    f("act", STS, GAUGE, PROC, "u32"),
    f("bck", STS, GAUGE, PROC, "u32"),
    f("chkfail", MET, CNT, PROC, "u64"),
    f("chkdown", MET, CNT, PROC, "u64"),
    f("lastchg", MET, AGE, PROC, "u32"),
    f("downtime", MET, CNT, PROC, "u32"),
    f("qlimit", CFG, GAUGE, SVC, "u32"),
    f("pid", KEY, GAUGE, PROC, "u32"),
    f("iid", KEY, GAUGE, SVC, "u32"),
    f("sid", KEY, GAUGE, SVC, "u32"),
    f("throttle", MET, AVG, PROC, "u32"),
    f("lbtot", MET, CNT, PROC, "u64"),
    f("tracked", CFG, NAME, SVC, "str"),
    f("type", CFG, GAUGE, SVC, "u32"),
    f("rate", MET, RATE, PROC, "u32"),
    f("rate_lim", CFG, LIMIT, PROC, "u32"),
    f("rate_max", MET, MAX, PROC, "u32"),
    f("check_status", MET, OUT, PROC, "str"),
    f("check_code", MET, OUT, PROC, "u32"),
    f("check_duration", MET, DUR, PROC, "u64"),
    f("hrsp_1xx", MET, CNT, PROC, "u64"),
    f("hrsp_2xx", MET, CNT, PROC, "u64"),
    f("hrsp_3xx", MET, CNT, PROC, "u64"),
    f("hrsp_4xx", MET, CNT, PROC, "u64"),
    f("hrsp_5xx", MET, CNT, PROC, "u64"),
    f("hrsp_other", MET, CNT, PROC, "u64"),
    f("hanafail", MET, CNT, PROC, "u64"),
    f("req_rate", MET, RATE, PROC, "u32"),
    f("req_rate_max", MET, MAX, PROC, "u32"),
    f("req_tot", MET, CNT, PROC, "u64"),
    f("cli_abrt", MET, CNT, PROC, "u64"),
    f("srv_abrt", MET, CNT, PROC, "u64"),
    f("comp_in", MET, CNT, PROC, "u64"),
    f("comp_out", MET, CNT, PROC, "u64"),
    f("comp_byp", MET, CNT, PROC, "u64"),
    f("comp_rsp", MET, CNT, PROC, "u64"),
    f("lastsess", MET, AGE, PROC, "s32"),
    f("last_chk", MET, OUT, PROC, "str"),
    f("last_agt", MET, OUT, PROC, "str"),
    f("qtime", MET, AVG, PROC, "u32"),
    f("ctime", MET, AVG, PROC, "u32"),
    f("rtime", MET, AVG, PROC, "u32"),
    f("ttime", MET, AVG, PROC, "u32"),
    f("agent_status", MET, OUT, PROC, "str"),
    f("agent_code", MET, OUT, PROC, "u32"),
    f("agent_duration", MET, DUR, PROC, "u64"),
    f("check_desc", MET, OUT, PROC, "str"),
    f("agent_desc", MET, OUT, PROC, "str"),
    f("check_rise", CFG, GAUGE, SVC, "u32"),
    f("check_fall", CFG, GAUGE, SVC, "u32"),
    f("check_health", CFG, GAUGE, SVC, "u32"),
    f("agent_rise", CFG, GAUGE, SVC, "u32"),
    f("agent_fall", CFG, GAUGE, SVC, "u32"),
    f("agent_health", CFG, GAUGE, SVC, "u32"),
    f("addr", CFG, GAUGE, SVC, "str"),
    f("cookie", CFG, NAME, SVC, "str"),
    f("mode", CFG, GAUGE, SVC, "str"),
    f("algo", CFG, GAUGE, SVC, "str"),
    f("conn_rate", MET, RATE, PROC, "u32"),
    f("conn_rate_max", MET, MAX, PROC, "u32"),
    f("conn_tot", MET, CNT, PROC, "u64"),
    f("intercepted", MET, CNT, PROC, "u64"),
    f("dcon", MET, CNT, PROC, "u64"),
    f("dses", MET, CNT, PROC, "u64"),
    f("wrew", MET, CNT, PROC, "u64"),
    f("connect", MET, CNT, PROC, "u64"),
    f("reuse", MET, CNT, PROC, "u64"),
    f("cache_lookups", MET, CNT, PROC, "u64"),
    f("cache_hits", MET, CNT, PROC, "u64"),
    f("srv_icur", MET, GAUGE, PROC, "u32"),
    f("src_ilim", CFG, LIMIT, PROC, "u32"),
    f("qtime_max", MET, MAX, PROC, "u32"),
    f("ctime_max", MET, MAX, PROC, "u32"),
    f("rtime_max", MET, MAX, PROC, "u32"),
    f("ttime_max", MET, MAX, PROC, "u32"),
    f("eint", MET, CNT, PROC, "u64"),
    f("idle_conn_cur", MET, GAUGE, PROC, "u32"),
    f("safe_conn_cur", MET, GAUGE, PROC, "u32"),
    f("used_conn_cur", MET, GAUGE, PROC, "u32"),
    f("need_conn_est", MET, GAUGE, PROC, "u32"),
    f("uweight", MET, AVG, PROC, "u32"),
    f("agg_server_status", MET, GAUGE, PROC, "u32"),
    f("agg_server_check_status", MET, GAUGE, PROC, "u32"),
    f("agg_check_status", MET, GAUGE, PROC, "u32"),
];

/// Positions of the fields, same order as [`FIELDS`].
#[allow(dead_code)]
#[derive(Clone, Copy)]
#[repr(usize)]
pub(crate) enum F {
    Pxname,
    Svname,
    Qcur,
    Qmax,
    Scur,
    Smax,
    Slim,
    Stot,
    Bin,
    Bout,
    Dreq,
    Dresp,
    Ereq,
    Econ,
    Eresp,
    Wretr,
    Wredis,
    Status,
    Weight,
    Act,
    Bck,
    Chkfail,
    Chkdown,
    Lastchg,
    Downtime,
    Qlimit,
    Pid,
    Iid,
    Sid,
    Throttle,
    Lbtot,
    Tracked,
    Type,
    Rate,
    RateLim,
    RateMax,
    CheckStatus,
    CheckCode,
    CheckDuration,
    Hrsp1xx,
    Hrsp2xx,
    Hrsp3xx,
    Hrsp4xx,
    Hrsp5xx,
    HrspOther,
    Hanafail,
    ReqRate,
    ReqRateMax,
    ReqTot,
    CliAbrt,
    SrvAbrt,
    CompIn,
    CompOut,
    CompByp,
    CompRsp,
    Lastsess,
    LastChk,
    LastAgt,
    Qtime,
    Ctime,
    Rtime,
    Ttime,
    AgentStatus,
    AgentCode,
    AgentDuration,
    CheckDesc,
    AgentDesc,
    CheckRise,
    CheckFall,
    CheckHealth,
    AgentRise,
    AgentFall,
    AgentHealth,
    Addr,
    Cookie,
    Mode,
    Algo,
    ConnRate,
    ConnRateMax,
    ConnTot,
    Intercepted,
    Dcon,
    Dses,
    Wrew,
    Connect,
    Reuse,
    CacheLookups,
    CacheHits,
    SrvIcur,
    SrvIlim,
    QtimeMax,
    CtimeMax,
    RtimeMax,
    TtimeMax,
    Eint,
    IdleConnCur,
    SafeConnCur,
    UsedConnCur,
    NeedConnEst,
    Uweight,
    AggServerStatus,
    AggServerCheckStatus,
    AggCheckStatus,
}

/// The CSV column names of the static fields, in order.
pub fn field_names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|f| f.name)
}

/// A field value; `Empty` prints nothing in CSV and is omitted in JSON.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val<'a> {
    Empty,
    Str(Cow<'a, str>),
    U(u64),
    I(i64),
}

/// Line type (CSV `type` column, JSON `objType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Obj {
    Frontend,
    Backend,
    Server,
}

impl Obj {
    pub fn name(self) -> &'static str {
        match self {
            Obj::Frontend => "Frontend",
            Obj::Backend => "Backend",
            Obj::Server => "Server",
        }
    }
}

/// One line of `show stat`.
pub(crate) struct Row<'a> {
    pub obj: Obj,
    pub iid: u32,
    pub sid: u32,
    pub vals: Vec<Val<'a>>,
}

impl<'a> Row<'a> {
    fn new(obj: Obj, px: &'a str, sv: &'a str, iid: u32, sid: u32) -> Self {
        let mut vals = vec![Val::Empty; NFIELDS];
        vals[F::Pxname as usize] = Val::Str(Cow::Borrowed(px));
        vals[F::Svname as usize] = Val::Str(Cow::Borrowed(sv));
        vals[F::Pid as usize] = Val::U(1);
        vals[F::Iid as usize] = Val::U(iid.into());
        vals[F::Sid as usize] = Val::U(sid.into());
        vals[F::Type as usize] = Val::U(match obj {
            Obj::Frontend => 0,
            Obj::Backend => 1,
            Obj::Server => 2,
        });
        Row {
            obj,
            iid,
            sid,
            vals,
        }
    }

    fn u(&mut self, f: F, v: u64) {
        self.vals[f as usize] = Val::U(v);
    }

    fn opt(&mut self, f: F, v: Option<u64>) {
        if let Some(v) = v {
            self.u(f, v);
        }
    }

    fn s(&mut self, f: F, v: &'a str) {
        self.vals[f as usize] = Val::Str(Cow::Borrowed(v));
    }

    fn owned(&mut self, f: F, v: String) {
        self.vals[f as usize] = Val::Str(Cow::Owned(v));
    }

    fn opt_s(&mut self, f: F, v: &'a Option<String>) {
        if let Some(v) = v {
            self.s(f, v);
        }
    }

    /// Non-empty string or nothing.
    fn nz_s(&mut self, f: F, v: &'a str) {
        if !v.is_empty() {
            self.s(f, v);
        }
    }

    /// Typed-output tags of field `i` on this line (HAProxy tags a few
    /// fields differently for backends).
    pub fn tags(&self, i: usize) -> (&'static str, &'static str, &'static str) {
        let d = &FIELDS[i];
        if self.obj == Obj::Backend {
            if i == F::Act as usize || i == F::Bck as usize {
                return (MET, GAUGE, d.scope);
            }
            if i == F::Rate as usize || i == F::RateMax as usize {
                return (MET, GAUGE, d.scope);
            }
        }
        (d.origin, d.nature, d.scope)
    }
}

/// Fields every line with sessions has: scur, smax, stot, bin, bout, rate,
/// rate_max, wrew, eint, mode.
fn common<'a>(r: &mut Row<'a>, c: &Counters, mode: Mode) {
    r.u(F::Scur, c.scur);
    r.u(F::Smax, c.smax);
    r.u(F::Stot, c.stot);
    r.u(F::Bin, c.bin);
    r.u(F::Bout, c.bout);
    r.u(F::Dresp, c.dresp);
    r.u(F::Rate, c.rate);
    r.u(F::RateMax, c.rate_max);
    r.u(F::Wrew, c.wrew);
    r.u(F::Eint, c.eint);
    r.s(F::Mode, mode.as_str());
}

fn http_responses(r: &mut Row<'_>, c: &Counters) {
    r.u(F::Hrsp1xx, c.hrsp_1xx);
    r.u(F::Hrsp2xx, c.hrsp_2xx);
    r.u(F::Hrsp3xx, c.hrsp_3xx);
    r.u(F::Hrsp4xx, c.hrsp_4xx);
    r.u(F::Hrsp5xx, c.hrsp_5xx);
    r.u(F::HrspOther, c.hrsp_other);
    r.u(F::ReqTot, c.req_tot);
}

/// Fields of backends and servers: queue, errors, warnings, timings.
fn server_side(r: &mut Row<'_>, c: &Counters) {
    r.u(F::Qcur, c.qcur);
    r.u(F::Qmax, c.qmax);
    r.u(F::Econ, c.econ);
    r.u(F::Eresp, c.eresp);
    r.u(F::Wretr, c.wretr);
    r.u(F::Wredis, c.wredis);
    r.u(F::Lbtot, c.lbtot);
    r.u(F::CliAbrt, c.cli_abrt);
    r.u(F::SrvAbrt, c.srv_abrt);
    r.vals[F::Lastsess as usize] = Val::I(c.last_sess_secs.map_or(-1, |s| s as i64));
    r.u(F::Qtime, c.qtime_ms);
    r.u(F::Ctime, c.ctime_ms);
    r.u(F::Rtime, c.rtime_ms);
    r.u(F::Ttime, c.ttime_ms);
    r.u(F::Connect, c.connect);
    r.u(F::Reuse, c.reuse);
    r.u(F::QtimeMax, c.qtime_max_ms);
    r.u(F::CtimeMax, c.ctime_max_ms);
    r.u(F::RtimeMax, c.rtime_max_ms);
    r.u(F::TtimeMax, c.ttime_max_ms);
}

fn compression(r: &mut Row<'_>, c: &Counters, mode: Mode) {
    r.u(F::CompIn, c.comp_in);
    r.u(F::CompOut, c.comp_out);
    r.u(F::CompByp, c.comp_byp);
    r.u(F::CompRsp, c.comp_rsp);
    if mode == Mode::Http {
        r.u(F::CacheLookups, c.cache_lookups);
        r.u(F::CacheHits, c.cache_hits);
    }
}

/// Check status as printed: `"* L7OK"` while a check runs.
fn check_status(c: &CheckInfo) -> Cow<'_, str> {
    if c.in_progress {
        Cow::Owned(format!("* {}", c.status))
    } else {
        Cow::Borrowed(&c.status)
    }
}

pub(crate) fn frontend_row(px: &ProxyStats) -> Row<'_> {
    let c = &px.counters;
    let mut r = Row::new(Obj::Frontend, &px.name, "FRONTEND", px.iid, 0);
    common(&mut r, c, px.mode);
    r.opt(F::Slim, px.slim);
    r.u(F::Dreq, c.dreq);
    r.u(F::Ereq, c.ereq);
    r.s(F::Status, &px.status);
    r.u(F::RateLim, px.rate_lim);
    compression(&mut r, c, px.mode);
    if px.mode == Mode::Http {
        http_responses(&mut r, c);
        r.u(F::ReqRate, c.req_rate);
        r.u(F::ReqRateMax, c.req_rate_max);
    }
    r.u(F::ConnRate, c.conn_rate);
    r.u(F::ConnRateMax, c.conn_rate_max);
    r.u(F::ConnTot, c.conn_tot);
    r.u(F::Intercepted, c.intercepted);
    r.u(F::Dcon, c.dcon);
    r.u(F::Dses, c.dses);
    r
}

pub(crate) fn server_row<'a>(px: &'a ProxyStats, sv: &'a ServerStats) -> Row<'a> {
    let c = &sv.counters;
    let mut r = Row::new(Obj::Server, &px.name, &sv.name, px.iid, sv.sid);
    common(&mut r, c, px.mode);
    server_side(&mut r, c);
    r.opt(F::Slim, sv.slim);
    r.owned(F::Status, sv.state.text());
    r.u(F::Weight, sv.weight);
    r.u(F::Uweight, sv.uweight);
    r.u(F::Act, u64::from(!sv.backup));
    r.u(F::Bck, u64::from(sv.backup));
    r.u(F::Lastchg, sv.lastchg_secs);
    r.opt(F::Downtime, sv.downtime_secs);
    r.opt(F::Qlimit, sv.qlimit);
    r.opt(F::Throttle, sv.throttle);
    r.opt(F::Hanafail, sv.hanafail);
    r.opt_s(F::Tracked, &sv.tracked);
    r.opt_s(F::Addr, &sv.addr);
    r.opt_s(F::Cookie, &sv.cookie);
    if px.mode == Mode::Http {
        http_responses(&mut r, c);
    }
    if let Some(ck) = &sv.check {
        r.u(F::Chkfail, sv.chkfail);
        r.u(F::Chkdown, sv.chkdown);
        r.vals[F::CheckStatus as usize] = Val::Str(check_status(ck));
        r.opt(F::CheckCode, ck.code.map(u64::from));
        r.opt(F::CheckDuration, ck.duration_ms);
        r.nz_s(F::LastChk, &ck.last);
        r.nz_s(F::CheckDesc, &ck.desc);
        r.u(F::CheckRise, ck.rise.into());
        r.u(F::CheckFall, ck.fall.into());
        r.u(F::CheckHealth, ck.health.into());
    }
    if let Some(ag) = &sv.agent {
        r.vals[F::AgentStatus as usize] = Val::Str(check_status(ag));
        r.opt(F::AgentCode, ag.code.map(u64::from));
        r.opt(F::AgentDuration, ag.duration_ms);
        r.nz_s(F::LastAgt, &ag.last);
        r.nz_s(F::AgentDesc, &ag.desc);
        r.u(F::AgentRise, ag.rise.into());
        r.u(F::AgentFall, ag.fall.into());
        r.u(F::AgentHealth, ag.health.into());
    }
    r.u(F::SrvIcur, sv.idle_cur);
    r.opt(F::SrvIlim, sv.idle_limit);
    r.u(F::IdleConnCur, sv.idle_conn_cur);
    r.u(F::SafeConnCur, sv.safe_conn_cur);
    r.u(F::UsedConnCur, sv.used_conn_cur);
    r.u(F::NeedConnEst, sv.need_conn_est);
    r
}

pub(crate) fn backend_row(px: &ProxyStats) -> Row<'_> {
    let c = &px.counters;
    let mut r = Row::new(Obj::Backend, &px.name, "BACKEND", px.iid, 0);
    common(&mut r, c, px.mode);
    server_side(&mut r, c);
    r.opt(F::Slim, px.slim);
    r.u(F::Dreq, c.dreq);
    r.s(F::Status, &px.status);
    r.u(F::Weight, px.weight);
    r.u(F::Uweight, px.uweight);
    r.u(F::Act, px.act);
    r.u(F::Bck, px.bck);
    r.u(F::Chkdown, px.chkdown);
    r.u(F::Lastchg, px.lastchg_secs);
    r.opt(F::Downtime, px.downtime_secs);
    r.opt_s(F::Cookie, &px.cookie);
    r.nz_s(F::Algo, &px.algo);
    compression(&mut r, c, px.mode);
    if px.mode == Mode::Http {
        http_responses(&mut r, c);
    }
    // HAProxy 2.6 prints 0 in the three aggregate columns of the CSV; the
    // per-state counts are in the Prometheus output.
    r.u(F::AggServerStatus, 0);
    r.u(F::AggServerCheckStatus, 0);
    r.u(F::AggCheckStatus, 0);
    r
}

/// All lines in HAProxy's order: for each proxy entry, its frontend line,
/// or its server lines followed by its backend line.
pub(crate) fn for_each_row<'a>(snap: &'a Snapshot, mut f: impl FnMut(Row<'a>)) {
    for px in &snap.proxies {
        match px.kind {
            ProxyKind::Frontend => f(frontend_row(px)),
            ProxyKind::Backend => {
                for sv in &px.servers {
                    f(server_row(px, sv));
                }
                f(backend_row(px));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_matches_table() {
        assert_eq!(FIELDS[F::Scur as usize].name, "scur");
        assert_eq!(FIELDS[F::Status as usize].name, "status");
        assert_eq!(FIELDS[F::SrvAbrt as usize].name, "srv_abrt");
        assert_eq!(FIELDS[F::Lastsess as usize].name, "lastsess");
        assert_eq!(FIELDS[F::Mode as usize].name, "mode");
        assert_eq!(FIELDS[F::SrvIlim as usize].name, "src_ilim");
        assert_eq!(FIELDS[F::Uweight as usize].name, "uweight");
        assert_eq!(F::AggCheckStatus as usize, NFIELDS - 1);
    }
}
