//! What the peers protocol needs from a table: a queue of locally updated
//! entries ([`Table::subscribe`]), the values of an entry in wire order
//! ([`EntryRef::peer_values`]) and applying a received entry
//! ([`Table::apply_peer`]).
//!
//! The queue costs nothing until a peers task subscribes. After that, the
//! first update of an entry since the task last read it sends one message
//! on a lock-free channel (an entry is queued at most once until it is
//! drained); no lock is shared between the request path and the sync task.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Weak};

use crate::data::Val;
use crate::freq::FreqCtr;
use crate::spec::{DataType, StdType};
use crate::table::{Entry, EntryRef, Table};

/// One value as the peers protocol carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerVal {
    /// `server_id` (signed), the `*_cnt`, `gpt*`, `gpc*`, `conn_cur` and
    /// `bytes_*_cnt` counters.
    Int(u64),
    /// A rate: milliseconds since the current period started, the current
    /// and the previous period's counts.
    Freq { age: u32, curr: u32, prev: u32 },
    /// `server_key`.
    Dict(Option<Arc<str>>),
}

/// A locally updated entry waiting to be pushed to the peers.
pub struct Pending(pub(crate) Weak<Entry>);

impl Pending {
    /// The entry, with a reference taken, unless it is gone. Clears the
    /// entry's queued mark, so its next update queues it again.
    pub fn take(self) -> Option<EntryRef> {
        let e = self.0.upgrade()?;
        e.queued.store(false, Ordering::Release);
        e.ref_cnt.fetch_add(1, Ordering::AcqRel);
        Some(EntryRef { entry: e })
    }
}

impl Table {
    /// Starts queueing local updates: every entry touched from now on is
    /// sent once on the returned channel until it is taken. `None` when a
    /// subscriber already exists.
    pub fn subscribe(&self) -> Option<Receiver<Pending>> {
        let (tx, rx) = channel();
        self.inner.common.updates.set(tx).ok()?;
        Some(rx)
    }

    /// Applies an entry received from a peer: creates it if needed,
    /// overwrites the stored values of the types present in `vals`
    /// (`conn_cur` excepted, as HAProxy never learns it), and sets the
    /// expiry to `expire_ms` from `now` (capped by the table's `expire`).
    /// The entry is not queued for the peers. Returns false when the table
    /// is full.
    pub fn apply_peer(
        &self,
        key: &[u8],
        vals: &[(DataType, PeerVal)],
        expire_ms: Option<u32>,
        now: u64,
    ) -> bool {
        let Some(e) = self.get_or_create(key, now) else {
            return false;
        };
        e.with_data(|d| {
            let mut idx_of = [0u32; crate::spec::DATA_TYPES];
            for (dt, v) in vals {
                let Some(idx) = idx_of.get_mut(dt.index()) else {
                    continue;
                };
                let i = *idx;
                *idx += 1;
                if *dt == DataType::ConnCur {
                    continue;
                }
                let Some(slot) = d.layout.slot(*dt, i) else {
                    continue;
                };
                let Some(cur) = d.vals.get_mut(slot) else {
                    continue;
                };
                *cur = match (dt.std_type(), v) {
                    (StdType::Sint, PeerVal::Int(n)) => Val::Sint(*n as i32),
                    (StdType::Uint, PeerVal::Int(n)) => Val::Uint(*n as u32),
                    (StdType::Ull, PeerVal::Int(n)) => Val::Ull(*n),
                    (StdType::Freq, PeerVal::Freq { age, curr, prev }) => {
                        let tick = now.saturating_sub(u64::from(*age)) & !1;
                        Val::Freq(FreqCtr::from_raw(Some(tick), *curr, *prev))
                    }
                    (StdType::Dict, PeerVal::Dict(s)) => Val::Dict(s.clone()),
                    _ => continue,
                };
            }
        });
        let table_exp = self.spec().expire_ms;
        let ms = match (expire_ms, table_exp) {
            (Some(m), Some(t)) => m.min(t),
            (None, Some(t)) => t,
            (_, None) => 0,
        };
        e.entry.expire.store(now + u64::from(ms), Ordering::Relaxed);
        e.release(now);
        true
    }
}

impl EntryRef {
    /// The stored values in the peers protocol's order: data types in
    /// HAProxy's order, array elements in index order.
    pub fn peer_values(&self, now: u64) -> Vec<(DataType, PeerVal)> {
        self.with_data(|d| {
            let mut out = Vec::with_capacity(d.vals.len());
            for dt in DataType::ALL {
                for i in 0..d.layout.nbelem(dt) {
                    let Some(v) = d.layout.slot(dt, i).and_then(|s| d.vals.get(s)) else {
                        continue;
                    };
                    let pv = match v {
                        Val::Sint(n) => PeerVal::Int(*n as u32 as u64),
                        Val::Uint(n) => PeerVal::Int(u64::from(*n)),
                        Val::Ull(n) => PeerVal::Int(*n),
                        Val::Freq(f) => {
                            let (tick, curr, prev) = f.raw();
                            let age = tick.map_or(0, |t| now.saturating_sub(t));
                            PeerVal::Freq {
                                age: u32::try_from(age).unwrap_or(u32::MAX),
                                curr,
                                prev,
                            }
                        }
                        Val::Dict(s) => PeerVal::Dict(s.clone()),
                    };
                    out.push((dt, pv));
                }
            }
            out
        })
    }

    /// Milliseconds the entry still has to live, `None` for a table
    /// without `expire`.
    pub fn peer_expire(&self, now: u64) -> Option<u32> {
        self.spec().expire_ms?;
        Some(u32::try_from(self.expires_in(now)).unwrap_or(u32::MAX))
    }

    /// Queues the entry for the peers if a sync task subscribed and it is
    /// not queued yet.
    pub(crate) fn notify_peers(&self) {
        if let Some(tx) = self.entry.common.updates.get() {
            if !self.entry.queued.swap(true, Ordering::AcqRel) {
                let _ = tx.send(Pending(Arc::downgrade(&self.entry)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TableSpec;

    fn table() -> Table {
        let args = [
            "type",
            "ip",
            "size",
            "10",
            "expire",
            "30s",
            "store",
            "conn_cur,http_req_cnt,http_req_rate(10s)",
        ];
        Table::new(TableSpec::parse("t", &args, false).unwrap().0)
    }

    #[test]
    fn updates_are_queued_once_until_taken() {
        let t = table();
        let rx = t.subscribe().unwrap();
        assert!(t.subscribe().is_none());
        let e = t.get_or_create(&[10, 0, 0, 1], 1000).unwrap();
        e.inc_http_req(1000);
        e.inc_http_req(1100);
        let first = rx.try_recv().unwrap();
        assert!(rx.try_recv().is_err());
        let got = first.take().unwrap();
        assert_eq!(got.key(), &[10, 0, 0, 1]);
        let vals = got.peer_values(1600);
        assert_eq!(
            vals,
            vec![
                (DataType::ConnCur, PeerVal::Int(0)),
                (DataType::HttpReqCnt, PeerVal::Int(2)),
                (
                    DataType::HttpReqRate,
                    PeerVal::Freq {
                        age: 600,
                        curr: 2,
                        prev: 0
                    }
                ),
            ]
        );
        assert_eq!(got.peer_expire(1600), Some(29_500));
        e.inc_http_req(1200);
        assert!(rx.try_recv().is_ok());
    }

    #[test]
    fn apply_overwrites_but_not_conn_cur_and_is_not_queued() {
        let t = table();
        let rx = t.subscribe().unwrap();
        let e = t.get_or_create(&[10, 0, 0, 2], 1000).unwrap();
        e.start_counters(1000);
        drop(rx.try_recv());
        let vals = vec![
            (DataType::ConnCur, PeerVal::Int(9)),
            (DataType::HttpReqCnt, PeerVal::Int(7)),
            (
                DataType::HttpReqRate,
                PeerVal::Freq {
                    age: 2000,
                    curr: 5,
                    prev: 3,
                },
            ),
        ];
        assert!(t.apply_peer(&[10, 0, 0, 2], &vals, Some(5000), 10_000));
        assert!(t.apply_peer(&[10, 0, 0, 3], &vals, Some(99_000), 10_000));
        assert!(rx.try_recv().is_err());
        assert_eq!(e.get_int(DataType::ConnCur, 10_000), Some(1));
        assert_eq!(e.get_int(DataType::HttpReqCnt, 10_000), Some(7));
        assert_eq!(e.expires_in(10_000), 5000);
        let n = t.lookup(&[10, 0, 0, 3], 10_000).unwrap();
        assert_eq!(n.expires_in(10_000), 30_000);
        assert_eq!(
            n.peer_values(10_000)[2].1,
            PeerVal::Freq {
                age: 2000,
                curr: 5,
                prev: 3
            }
        );
    }
}
