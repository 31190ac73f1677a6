//! Counter updates on an entry, one method per event, each doing what the
//! matching HAProxy 2.6 function does (named in each method's doc). An
//! update that changes something refreshes the entry's expiry, as
//! `stktable_touch_local` does; data the table does not store is skipped.

use std::sync::Arc;

use crate::data::{Gpc, Gpt};
use crate::spec::DataType;
use crate::table::EntryRef;

impl EntryRef {
    /// A tracker starts on this entry (`stream_start_counters`):
    /// `conn_cur` +1, `conn_cnt` +1, `conn_rate` +1, and the expiry is
    /// refreshed even if none of them is stored.
    pub fn start_counters(&self, now: u64) {
        self.with_data(|d| {
            d.add_uint(DataType::ConnCur, 0, 1);
            d.add_uint(DataType::ConnCnt, 0, 1);
            d.add_freq(DataType::ConnRate, 0, 1, now);
        });
        self.touch(now);
    }

    /// A tracker stops (`stream_store_counters`/`session_store_counters`):
    /// `conn_cur` −1 (never below 0) and the expiry refreshed when
    /// `conn_cur` is stored.
    pub fn stop_counters(&self, now: u64) {
        if self.with_data(|d| d.dec_conn_cur()).is_some() {
            self.touch(now);
        }
    }

    /// `conn_cur` −1 without refreshing the expiry.
    pub(crate) fn stop_counters_untimed(&self) {
        self.with_data(|d| d.dec_conn_cur());
    }

    /// A session was accepted (after `tcp-request session` rules):
    /// `sess_cnt` +1 and `sess_rate` +1. HAProxy does not refresh the
    /// expiry here.
    pub fn inc_sess(&self, now: u64) {
        self.with_data(|d| {
            d.add_uint(DataType::SessCnt, 0, 1);
            d.add_freq(DataType::SessRate, 0, 1, now);
        });
    }

    fn inc_pair(&self, cnt: DataType, rate: DataType, now: u64) -> bool {
        let changed = self.with_data(|d| {
            let a = d.add_uint(cnt, 0, 1).is_some();
            let b = d.add_freq(rate, 0, 1, now).is_some();
            a || b
        });
        if changed {
            self.touch(now);
        }
        changed
    }

    /// One HTTP request (`stkctr_inc_http_req_ctr`): `http_req_cnt` and
    /// `http_req_rate` +1.
    pub fn inc_http_req(&self, now: u64) -> bool {
        self.inc_pair(DataType::HttpReqCnt, DataType::HttpReqRate, now)
    }

    /// One HTTP error (`stkctr_inc_http_err_ctr`): `http_err_cnt` and
    /// `http_err_rate` +1.
    pub fn inc_http_err(&self, now: u64) -> bool {
        self.inc_pair(DataType::HttpErrCnt, DataType::HttpErrRate, now)
    }

    /// One HTTP failure (`stkctr_inc_http_fail_ctr`): `http_fail_cnt` and
    /// `http_fail_rate` +1.
    pub fn inc_http_fail(&self, now: u64) -> bool {
        self.inc_pair(DataType::HttpFailCnt, DataType::HttpFailRate, now)
    }

    fn add_bytes(&self, cnt: DataType, rate: DataType, n: u64, now: u64) -> bool {
        let changed = self.with_data(|d| {
            let a = d.add_ull(cnt, n).is_some();
            // The rate takes a 32-bit increment in HAProxy.
            let b = d.add_freq(rate, 0, n as u32, now).is_some();
            a || b
        });
        if changed {
            self.touch(now);
        }
        changed
    }

    /// `n` bytes received from the client (`stkctr_inc_bytes_in_ctr`);
    /// false when the table stores neither counter.
    pub fn add_bytes_in(&self, n: u64, now: u64) -> bool {
        self.add_bytes(DataType::BytesInCnt, DataType::BytesInRate, n, now)
    }

    /// `n` bytes sent to the client (`stkctr_inc_bytes_out_ctr`); false
    /// when the table stores neither counter.
    pub fn add_bytes_out(&self, n: u64, now: u64) -> bool {
        self.add_bytes(DataType::BytesOutCnt, DataType::BytesOutRate, n, now)
    }

    /// Increments a general purpose counter and its rate (the
    /// `sc-inc-gpc*` actions and `sc_inc_gpc*`/`src_inc_gpc*` fetches).
    /// Returns the counter's new value, or the rate's current period
    /// count when only the rate is stored; `None` when neither is stored.
    pub fn inc_gpc(&self, which: Gpc, now: u64) -> Option<i64> {
        let r = self.with_data(|d| {
            let rate = which.rate(d);
            let cnt = which.counter(d);
            let mut out = None;
            if let Some((dt, idx)) = rate {
                d.add_freq(dt, idx, 1, now);
                out = d.freq_curr(dt, idx).map(i64::from);
            }
            if let Some((dt, idx)) = cnt {
                out = d.add_uint(dt, idx, 1).map(i64::from);
            }
            out
        });
        if r.is_some() {
            self.touch(now);
        }
        r
    }

    /// Reads a general purpose counter (`sc_get_gpc*`); `None` when not
    /// stored.
    pub fn get_gpc(&self, which: Gpc, now: u64) -> Option<i64> {
        self.with_data(|d| {
            let (dt, idx) = which.counter(d)?;
            d.read(dt, idx, now).map(|v| v.as_int())
        })
    }

    /// Reads a general purpose counter's rate (`sc_gpc*_rate`).
    pub fn get_gpc_rate(&self, which: Gpc, now: u64) -> Option<i64> {
        self.with_data(|d| {
            let (dt, idx) = which.rate(d)?;
            d.read(dt, idx, now).map(|v| v.as_int())
        })
    }

    /// Returns a general purpose counter's value and sets it to 0
    /// (`sc_clr_gpc*`); `None` when not stored. The rate is kept.
    pub fn clr_gpc(&self, which: Gpc, now: u64) -> Option<i64> {
        let r = self.with_data(|d| {
            let (dt, idx) = which.counter(d)?;
            d.take_uint(dt, idx).map(i64::from)
        });
        if r.is_some() {
            self.touch(now);
        }
        r
    }

    /// Reads a general purpose tag (`sc_get_gpt*`).
    pub fn get_gpt(&self, which: Gpt, now: u64) -> Option<i64> {
        self.with_data(|d| {
            let (dt, idx) = which.counter(d)?;
            d.read(dt, idx, now).map(|v| v.as_int())
        })
    }

    /// Sets a general purpose tag (`sc-set-gpt0`, `sc-set-gpt(idx)`),
    /// truncated to 32 bits. Returns false when not stored.
    pub fn set_gpt(&self, which: Gpt, value: i64, now: u64) -> bool {
        let ok = self.with_data(|d| match which.counter(d) {
            Some((dt, idx)) => d.set_int(dt, idx, value, now),
            None => false,
        });
        if ok {
            self.touch(now);
        }
        ok
    }

    /// Sets a value as `set table NAME key K data.<type> V` does (rates
    /// restart at `now` with `value` events). Returns false when not
    /// stored. Does not refresh the expiry (the CLI does it once after all
    /// values).
    pub fn set_data(&self, dt: DataType, idx: u32, value: i64, now: u64) -> bool {
        self.with_data(|d| d.set_int(dt, idx, value, now))
    }

    /// Stores the server of a `stick store` rule: `server_id` and
    /// `server_key` (name or address per `srvkey`). Refreshes the expiry.
    pub fn set_server(&self, id: i32, key: Option<Arc<str>>, now: u64) {
        self.with_data(|d| {
            d.set_int(DataType::ServerId, 0, i64::from(id), now);
            d.set_dict(key);
        });
        self.touch(now);
    }

    /// `conn_cnt` +1, returning the new value (`src_updt_conn_cnt`).
    pub fn updt_conn_cnt(&self, now: u64) -> Option<i64> {
        let r = self.with_data(|d| d.add_uint(DataType::ConnCnt, 0, 1).map(i64::from));
        if r.is_some() {
            self.touch(now);
        }
        r
    }
}
