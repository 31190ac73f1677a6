//! Per-connection tracking slots (`track-sc0..2`, HAProxy's `stkctr`).
//!
//! One [`Trackers`] lives with each client connection. Which counters are
//! updated when, as in HAProxy 2.6 (the integrator calls the methods named):
//!
//! | event | method | counters of every tracked slot |
//! |---|---|---|
//! | `track-scN` succeeds | [`Trackers::track`] | `conn_cur`+1, `conn_cnt`+1, `conn_rate`+1 on the new slot; with [`TrackFrom::HttpRequest`] also `http_req_*`+1 (the current request); with [`TrackFrom::HttpResponse`] also `http_err_*` for a 4xx status and `http_fail_*` for a 5xx other than 501/505 |
//! | session accepted (after `tcp-request session`) | [`Trackers::on_session_accepted`] | `sess_cnt`, `sess_rate` of slots tracked at connection/session level |
//! | each HTTP request parsed (after `tcp-request content`, before `http-request` rules; also for a request that fails to parse) | [`Trackers::on_http_request`] | `http_req_cnt`, `http_req_rate` |
//! | backend `http-request` rules start | [`Trackers::on_backend_http_request`] | `http_req_*` of slots tracked by backend rules |
//! | bad request (parse error, also counted as a request), `deny`, `tarpit`, `auth` challenge, server 4xx (every 4xx, 401 and 404 included) | [`Trackers::on_http_error`] or [`Trackers::on_response_status`] | `http_err_cnt`, `http_err_rate` |
//! | server 5xx except 501 and 505, bad or truncated response, server error/timeout | [`Trackers::on_http_fail`] or [`Trackers::on_response_status`] | `http_fail_cnt`, `http_fail_rate` |
//! | bytes forwarded | [`Trackers::on_bytes_in`] / [`Trackers::on_bytes_out`] | `bytes_*_cnt`, `bytes_*_rate` |
//! | end of an HTTP transaction / TCP stream | [`Trackers::end_stream`] | slots tracked at content level: `conn_cur`−1, released |
//! | end of the connection | [`Trackers::end_connection`] | every slot: `conn_cur`−1, released |
//!
//! The first `track-scN` on a slot wins: a later one on a busy slot does
//! nothing, whatever its table or key. Slots tracked by `tcp-request
//! connection` or `tcp-request session` last for the connection; slots
//! tracked by `tcp-request content`, `http-request` or `http-response` are
//! released at the end of each stream (each HTTP request).

use crate::data::{Gpc, Gpt};
use crate::key::KeyInput;
use crate::table::{EntryRef, Table};

/// Default number of slots (HAProxy's `MAX_SESS_STKCTR`,
/// `tune.stick-counters`).
pub const DEFAULT_SLOTS: usize = 3;

/// Which rule set runs the `track-sc` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackFrom {
    /// `tcp-request connection`: kept for the whole connection.
    TcpConnection,
    /// `tcp-request session`: kept for the whole connection.
    TcpSession,
    /// `tcp-request content`: released at the end of the stream.
    TcpContent,
    /// `http-request`: released at the end of the request; counts the
    /// current request.
    HttpRequest,
    /// `http-response` with the response status: counts the request and
    /// the status as an error or failure.
    HttpResponse(u16),
}

impl TrackFrom {
    fn content_level(self) -> bool {
        !matches!(self, TrackFrom::TcpConnection | TrackFrom::TcpSession)
    }
}

struct Slot {
    entry: EntryRef,
    content: bool,
    backend: bool,
}

/// The tracking slots of one connection.
pub struct Trackers {
    slots: Vec<Option<Slot>>,
}

impl Default for Trackers {
    fn default() -> Self {
        Trackers::new(DEFAULT_SLOTS)
    }
}

impl std::fmt::Debug for Trackers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v: Vec<Option<&EntryRef>> = self
            .slots
            .iter()
            .map(|s| s.as_ref().map(|s| &s.entry))
            .collect();
        f.debug_list().entries(v).finish()
    }
}

/// A connection dropped without [`Trackers::end_connection`] still gives
/// back its `conn_cur` (without refreshing the expiry: no time is known).
impl Drop for Trackers {
    fn drop(&mut self) {
        for s in self.slots.iter().flatten() {
            s.entry.stop_counters_untimed();
        }
    }
}

/// Whether a response status counts as an HTTP error (every 4xx).
pub fn status_is_http_err(status: u16) -> bool {
    (400..500).contains(&status)
}

/// Whether a response status counts as an HTTP failure (5xx except 501
/// and 505).
pub fn status_is_http_fail(status: u16) -> bool {
    (500..600).contains(&status) && status != 501 && status != 505
}

impl Trackers {
    /// `n` slots (`tune.stick-counters`; 3 by default).
    pub fn new(n: usize) -> Trackers {
        Trackers {
            slots: (0..n).map(|_| None).collect(),
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Whether slot `n` is tracked.
    pub fn is_tracked(&self, n: usize) -> bool {
        matches!(self.slots.get(n), Some(Some(_)))
    }

    /// The entry tracked by slot `n`.
    pub fn entry(&self, n: usize) -> Option<&EntryRef> {
        self.slots.get(n)?.as_ref().map(|s| &s.entry)
    }

    /// `track-scN <key> [table T]` in rule set `from`; `backend` is true
    /// when the rule belongs to a backend other than the frontend. Does
    /// nothing (returns false) when the slot is busy, the key does not
    /// convert to the table's type, or the table is full.
    pub fn track(
        &mut self,
        n: usize,
        table: &Table,
        key: &KeyInput<'_>,
        from: TrackFrom,
        backend: bool,
        now: u64,
    ) -> bool {
        if !matches!(self.slots.get(n), Some(None)) {
            return false;
        }
        let Some(k) = table.key(key) else {
            return false;
        };
        let Some(entry) = table.get_or_create(k.as_bytes(), now) else {
            return false;
        };
        entry.start_counters(now);
        match from {
            TrackFrom::HttpRequest => {
                entry.inc_http_req(now);
            }
            TrackFrom::HttpResponse(status) => {
                entry.inc_http_req(now);
                if status_is_http_err(status) {
                    entry.inc_http_err(now);
                }
                if status_is_http_fail(status) {
                    entry.inc_http_fail(now);
                }
            }
            _ => {}
        }
        if let Some(slot) = self.slots.get_mut(n) {
            *slot = Some(Slot {
                entry,
                content: from.content_level(),
                backend: backend && from.content_level(),
            });
        }
        true
    }

    fn each(&self, f: impl Fn(&EntryRef)) {
        for s in self.slots.iter().flatten() {
            f(&s.entry);
        }
    }

    /// `sess_cnt`/`sess_rate` of the slots tracked at connection level.
    pub fn on_session_accepted(&self, now: u64) {
        for s in self.slots.iter().flatten().filter(|s| !s.content) {
            s.entry.inc_sess(now);
        }
    }

    /// One HTTP request on every tracked slot.
    pub fn on_http_request(&self, now: u64) {
        self.each(|e| {
            e.inc_http_req(now);
        });
    }

    /// One HTTP request on the slots tracked by backend rules.
    pub fn on_backend_http_request(&self, now: u64) {
        for s in self.slots.iter().flatten().filter(|s| s.backend) {
            s.entry.inc_http_req(now);
        }
    }

    /// One HTTP error on every tracked slot.
    pub fn on_http_error(&self, now: u64) {
        self.each(|e| {
            e.inc_http_err(now);
        });
    }

    /// One HTTP failure on every tracked slot.
    pub fn on_http_fail(&self, now: u64) {
        self.each(|e| {
            e.inc_http_fail(now);
        });
    }

    /// A server response status: 4xx counts an error, 5xx other than 501
    /// and 505 a failure.
    pub fn on_response_status(&self, status: u16, now: u64) {
        if status_is_http_err(status) {
            self.on_http_error(now);
        }
        if status_is_http_fail(status) {
            self.on_http_fail(now);
        }
    }

    /// `n` bytes from the client.
    pub fn on_bytes_in(&self, n: u64, now: u64) {
        if n != 0 {
            self.each(|e| {
                e.add_bytes_in(n, now);
            });
        }
    }

    /// `n` bytes to the client.
    pub fn on_bytes_out(&self, n: u64, now: u64) {
        if n != 0 {
            self.each(|e| {
                e.add_bytes_out(n, now);
            });
        }
    }

    fn release_where(&mut self, now: u64, pred: impl Fn(&Slot) -> bool) {
        for slot in self.slots.iter_mut() {
            if slot.as_ref().is_some_and(&pred) {
                if let Some(s) = slot.take() {
                    s.entry.stop_counters(now);
                    s.entry.release(now);
                }
            }
        }
    }

    /// End of a stream (an HTTP transaction, or a TCP stream): releases
    /// the slots tracked at content level.
    pub fn end_stream(&mut self, now: u64) {
        self.release_where(now, |s| s.content);
    }

    /// `sc-inc-gpc0(N)`, `sc-inc-gpc1(N)`, `sc-inc-gpc(idx,N)`: increments
    /// the counter and its rate on slot `n`'s entry; nothing when the slot
    /// is not tracked or the table stores neither.
    pub fn inc_gpc(&self, n: usize, which: Gpc, now: u64) {
        if let Some(e) = self.entry(n) {
            e.inc_gpc(which, now);
        }
    }

    /// `sc-set-gpt0(N) <value>`, `sc-set-gpt(idx,N) <value>`.
    pub fn set_gpt(&self, n: usize, which: Gpt, value: i64, now: u64) {
        if let Some(e) = self.entry(n) {
            e.set_gpt(which, value, now);
        }
    }

    /// End of the connection: releases every slot.
    pub fn end_connection(&mut self, now: u64) {
        self.release_where(now, |_| true);
    }
}

/// A stream's slots and its session's, looked up as HAProxy 2.6 does
/// (`smp_fetch_sc_stkctr`, `stream_inc_http_req_ctr`...): slot N is the
/// stream's when the stream tracks it, else the session's.
///
/// The session's slots are those of `tcp-request connection` and
/// `tcp-request session` rules (kept for the connection); the stream's
/// those of `tcp-request content`, `http-request` and `http-response`
/// rules (released at the end of each stream: each HTTP request, or the
/// TCP stream). Each level has its own "first `track-scN` wins": a slot
/// the session tracks does not stop a stream from tracking the same slot
/// number. A counter event goes to the stream's slot, or to the session's
/// when the stream's slot is free or its table stores no such counter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Levels<'a> {
    /// The stream's slots (`None`: no stream, or none tracked).
    pub stream: Option<&'a Trackers>,
    /// The session's slots.
    pub session: Option<&'a Trackers>,
}

impl<'a> From<&'a Trackers> for Levels<'a> {
    fn from(t: &'a Trackers) -> Levels<'a> {
        Levels {
            stream: Some(t),
            session: None,
        }
    }
}

impl<'a> Levels<'a> {
    /// The entry of slot `n`: the stream's, else the session's.
    pub fn entry(&self, n: usize) -> Option<&'a EntryRef> {
        self.stream
            .and_then(|t| t.entry(n))
            .or_else(|| self.session.and_then(|t| t.entry(n)))
    }

    fn slots(&self) -> usize {
        let a = self.stream.map_or(0, Trackers::slots);
        let b = self.session.map_or(0, Trackers::slots);
        a.max(b)
    }

    /// For each slot, `f` on the stream's entry; when it reports nothing
    /// done (untracked, or not stored), on the session's.
    fn each(&self, f: impl Fn(&EntryRef) -> bool) {
        for n in 0..self.slots() {
            let done = self.stream.and_then(|t| t.entry(n)).is_some_and(&f);
            if !done {
                if let Some(e) = self.session.and_then(|t| t.entry(n)) {
                    f(e);
                }
            }
        }
    }

    /// One HTTP request (`stream_inc_http_req_ctr`).
    pub fn on_http_request(&self, now: u64) {
        self.each(|e| e.inc_http_req(now));
    }

    /// One HTTP error (`stream_inc_http_err_ctr`).
    pub fn on_http_error(&self, now: u64) {
        self.each(|e| e.inc_http_err(now));
    }

    /// One HTTP failure (`stream_inc_http_fail_ctr`).
    pub fn on_http_fail(&self, now: u64) {
        self.each(|e| e.inc_http_fail(now));
    }

    /// A response status: 4xx counts an error, 5xx other than 501 and 505
    /// a failure.
    pub fn on_response_status(&self, status: u16, now: u64) {
        if status_is_http_err(status) {
            self.on_http_error(now);
        }
        if status_is_http_fail(status) {
            self.on_http_fail(now);
        }
    }

    /// `n` bytes from the client (`stream_process_counters`).
    pub fn on_bytes_in(&self, n: u64, now: u64) {
        if n != 0 {
            self.each(|e| e.add_bytes_in(n, now));
        }
    }

    /// `n` bytes to the client.
    pub fn on_bytes_out(&self, n: u64, now: u64) {
        if n != 0 {
            self.each(|e| e.add_bytes_out(n, now));
        }
    }
}
