//! Resolution state and the `hold` rules, with time passed in so that they
//! can be tested without waiting.
//!
//! After a failed resolution (NXDOMAIN, REFUSED, timeout, other error) the
//! last valid answer stays in use while the last valid answer is younger
//! than the hold period of that failure (`hold nx`, `hold refused`,
//! `hold timeout`, `hold other`); after that the failure is reported. The
//! "last valid" time starts when the name is registered, as in HAProxy, so
//! a name failing from the start is reported after one hold period.
//!
//! Records that vanish from a valid answer stay for `hold obsolete`.

use crate::config::HoldPeriods;
use crate::wire::{Answer, Record, ResponseError};
use std::time::{Duration, Instant};

/// The status of the last resolution of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Not resolved yet.
    None,
    /// A valid answer.
    Valid,
    /// NXDOMAIN.
    Nx,
    /// REFUSED.
    Refused,
    /// No nameserver answered.
    Timeout,
    /// Any other error (server failure, invalid answer, no record...).
    Other,
}

impl Status {
    /// The status a response error leads to.
    pub fn from_error(err: ResponseError) -> Status {
        match err {
            ResponseError::NxDomain => Status::Nx,
            ResponseError::Refused => Status::Refused,
            _ => Status::Other,
        }
    }

    /// Whether this is an error status.
    pub fn is_error(self) -> bool {
        !matches!(self, Status::None | Status::Valid)
    }

    /// HAProxy's words for a failure, as put in "is going DOWN for
    /// maintenance (...)".
    pub fn maintenance_reason(self) -> &'static str {
        match self {
            Status::Nx => "DNS NX status",
            Status::Timeout => "DNS timeout status",
            Status::Refused => "DNS refused status",
            _ => "unspecified DNS error",
        }
    }
}

/// The hold period of an error status (zero for `None` and `Valid`).
pub fn hold_for(holds: &HoldPeriods, status: Status) -> Duration {
    match status {
        Status::Nx => holds.nx,
        Status::Refused => holds.refused,
        Status::Timeout => holds.timeout,
        Status::Other => holds.other,
        Status::None | Status::Valid => Duration::ZERO,
    }
}

/// What a name resolves to now, as published to its subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameState {
    /// The status of the last resolution.
    pub status: Status,
    /// The records in use: the last valid answer plus records kept by
    /// `hold obsolete`. Kept while an error is within its hold period;
    /// empty once the failure is reported.
    pub records: Vec<Record>,
    /// Set when the last resolution failed and the hold period of that
    /// failure has run out: the failure to report.
    pub failure: Option<Status>,
    /// `resolvers/nameserver` that gave the last valid answer.
    pub by: Option<String>,
    /// When the last valid answer came (at first, the registration time).
    pub last_valid: Instant,
    /// Increases with each published change.
    pub seq: u64,
}

impl NameState {
    /// The state of a name registered at `now`, never resolved.
    pub fn new(now: Instant) -> Self {
        NameState {
            status: Status::None,
            records: Vec::new(),
            failure: None,
            by: None,
            last_valid: now,
            seq: 0,
        }
    }

    /// Whether an error is being held (the last valid records are used).
    pub fn is_held(&self) -> bool {
        self.status.is_error() && self.failure.is_none()
    }
}

/// The records of past answers with when each was last seen.
#[derive(Debug, Clone, Default)]
pub struct AnswerCache {
    items: Vec<(Record, Instant)>,
}

fn same_item(a: &Record, b: &Record) -> bool {
    match (a, b) {
        (Record::Addr { ip: x, .. }, Record::Addr { ip: y, .. }) => x == y,
        (Record::Srv(x), Record::Srv(y)) => x.target == y.target && x.port == y.port,
        _ => false,
    }
}

impl AnswerCache {
    /// Merges a fresh answer: its records, in its order, then the records
    /// that vanished less than `obsolete` ago. Returns the merged list.
    pub fn update(&mut self, fresh: &[Record], now: Instant, obsolete: Duration) -> Vec<Record> {
        let mut items: Vec<(Record, Instant)> = fresh.iter().map(|r| (r.clone(), now)).collect();
        for (old, seen) in self.items.drain(..) {
            let fresh_has = items.iter().any(|(r, _)| same_item(r, &old));
            let expired = seen.checked_add(obsolete).is_none_or(|until| until < now);
            if !fresh_has && !expired {
                items.push((old, seen));
            }
        }
        self.items = items;
        self.records()
    }

    /// The records held now.
    pub fn records(&self) -> Vec<Record> {
        self.items.iter().map(|(r, _)| r.clone()).collect()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// The resolution of one name: applies results and the hold rules and
/// keeps the state to publish.
#[derive(Debug, Clone)]
pub struct Resolution {
    cache: AnswerCache,
    state: NameState,
}

impl Resolution {
    /// A resolution registered at `now`.
    pub fn new(now: Instant) -> Self {
        Resolution {
            cache: AnswerCache::default(),
            state: NameState::new(now),
        }
    }

    /// The current state.
    pub fn state(&self) -> &NameState {
        &self.state
    }

    /// Applies a valid answer from `by`. Returns true when the records in
    /// use changed (HAProxy's `update` counter).
    pub fn on_valid(
        &mut self,
        answer: &Answer,
        by: &str,
        now: Instant,
        holds: &HoldPeriods,
    ) -> bool {
        let before = std::mem::take(&mut self.state.records);
        let merged = self.cache.update(&answer.records, now, holds.obsolete);
        let changed = merged != before;
        self.state.records = merged;
        self.state.status = Status::Valid;
        self.state.failure = None;
        self.state.by = Some(by.to_string());
        self.state.last_valid = now;
        self.state.seq += 1;
        changed
    }

    /// Applies a failed resolution. The records stay while the last valid
    /// answer is younger than the status's hold period; then they are
    /// dropped and the failure is set.
    pub fn on_error(&mut self, status: Status, now: Instant, holds: &HoldPeriods) {
        let hold = hold_for(holds, status);
        let expired = self
            .state
            .last_valid
            .checked_add(hold)
            .is_none_or(|until| until <= now);
        self.state.status = status;
        if expired {
            self.state.failure = Some(status);
            self.state.records.clear();
            self.cache.clear();
        } else {
            self.state.failure = None;
        }
        self.state.seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SrvRecord;

    fn addr(s: &str) -> Record {
        Record::Addr {
            ip: s.parse().unwrap(),
            ttl: 60,
        }
    }

    fn answer(ips: &[&str]) -> Answer {
        Answer {
            records: ips.iter().map(|s| addr(s)).collect(),
            cname: false,
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn valid_then_errors_are_held_then_reported() {
        let holds = HoldPeriods {
            nx: secs(30),
            timeout: secs(10),
            ..HoldPeriods::default()
        };
        let t0 = Instant::now();
        let mut r = Resolution::new(t0);
        assert_eq!(r.state().status, Status::None);
        assert!(r.on_valid(&answer(&["10.0.0.1"]), "dns/ns1", t0 + secs(1), &holds));
        assert_eq!(r.state().records, vec![addr("10.0.0.1")]);
        assert_eq!(r.state().by.as_deref(), Some("dns/ns1"));

        // a timeout 9 s after the last valid answer: held
        r.on_error(Status::Timeout, t0 + secs(10), &holds);
        assert!(r.state().is_held());
        assert_eq!(r.state().failure, None);
        assert_eq!(r.state().records, vec![addr("10.0.0.1")]);
        // exactly 10 s after: reported, records dropped
        r.on_error(Status::Timeout, t0 + secs(11), &holds);
        assert_eq!(r.state().failure, Some(Status::Timeout));
        assert!(r.state().records.is_empty());
        assert!(!r.state().is_held());
        // a valid answer clears the failure
        assert!(r.on_valid(&answer(&["10.0.0.2"]), "dns/ns2", t0 + secs(12), &holds));
        assert_eq!(r.state().failure, None);
        assert_eq!(r.state().status, Status::Valid);
        // NX uses its own (longer) hold
        r.on_error(Status::Nx, t0 + secs(40), &holds);
        assert!(r.state().is_held());
        r.on_error(Status::Nx, t0 + secs(42), &holds);
        assert_eq!(r.state().failure, Some(Status::Nx));
    }

    #[test]
    fn hold_counts_from_registration() {
        let holds = HoldPeriods {
            refused: secs(5),
            ..HoldPeriods::default()
        };
        let t0 = Instant::now();
        let mut r = Resolution::new(t0);
        r.on_error(Status::Refused, t0 + secs(4), &holds);
        assert!(r.state().is_held());
        r.on_error(Status::Refused, t0 + secs(5), &holds);
        assert_eq!(r.state().failure, Some(Status::Refused));
        let zero = HoldPeriods {
            other: Duration::ZERO,
            ..HoldPeriods::default()
        };
        let mut r = Resolution::new(t0);
        r.on_error(Status::Other, t0, &zero);
        assert_eq!(r.state().failure, Some(Status::Other));
    }

    #[test]
    fn unchanged_answer_is_not_an_update() {
        let holds = HoldPeriods::default();
        let t0 = Instant::now();
        let mut r = Resolution::new(t0);
        assert!(r.on_valid(&answer(&["10.0.0.1", "10.0.0.2"]), "d/n", t0, &holds));
        assert!(!r.on_valid(
            &answer(&["10.0.0.1", "10.0.0.2"]),
            "d/n",
            t0 + secs(1),
            &holds
        ));
        assert!(r.on_valid(&answer(&["10.0.0.2"]), "d/n", t0 + secs(2), &holds));
        assert_eq!(r.state().records, vec![addr("10.0.0.2")]);
    }

    #[test]
    fn obsolete_records_are_kept_for_hold_obsolete() {
        let holds = HoldPeriods {
            obsolete: secs(5),
            ..HoldPeriods::default()
        };
        let t0 = Instant::now();
        let mut r = Resolution::new(t0);
        r.on_valid(&answer(&["10.0.0.1", "10.0.0.2"]), "d/n", t0, &holds);
        r.on_valid(&answer(&["10.0.0.3"]), "d/n", t0 + secs(3), &holds);
        assert_eq!(
            r.state().records,
            vec![addr("10.0.0.3"), addr("10.0.0.1"), addr("10.0.0.2")]
        );
        r.on_valid(
            &answer(&["10.0.0.3", "10.0.0.2"]),
            "d/n",
            t0 + secs(5),
            &holds,
        );
        assert_eq!(
            r.state().records,
            vec![addr("10.0.0.3"), addr("10.0.0.2"), addr("10.0.0.1")]
        );
        // 10.0.0.1 last seen at t0: gone once more than 5 s passed
        r.on_valid(&answer(&["10.0.0.3"]), "d/n", t0 + secs(6), &holds);
        assert_eq!(r.state().records, vec![addr("10.0.0.3"), addr("10.0.0.2")]);
    }

    #[test]
    fn obsolete_zero_drops_at_once_and_srv_identity_is_target_port() {
        let mut cache = AnswerCache::default();
        let t0 = Instant::now();
        let srv = |target: &str, port, weight| {
            Record::Srv(SrvRecord {
                target: target.into(),
                port,
                weight,
                priority: 0,
                ttl: 1,
                addr: None,
            })
        };
        cache.update(&[srv("a", 80, 1), srv("b", 80, 1)], t0, Duration::ZERO);
        let out = cache.update(
            &[srv("a", 80, 9)],
            t0 + Duration::from_millis(1),
            Duration::ZERO,
        );
        assert_eq!(out, vec![srv("a", 80, 9)]);
        // same instant: not older than zero, kept
        let mut cache = AnswerCache::default();
        cache.update(&[addr("10.0.0.1")], t0, Duration::ZERO);
        assert_eq!(
            cache.update(&[addr("10.0.0.2")], t0, Duration::ZERO).len(),
            2
        );
    }

    #[test]
    fn reasons_use_haproxy_words() {
        assert_eq!(Status::Nx.maintenance_reason(), "DNS NX status");
        assert_eq!(Status::Timeout.maintenance_reason(), "DNS timeout status");
        assert_eq!(Status::Refused.maintenance_reason(), "DNS refused status");
        assert_eq!(Status::Other.maintenance_reason(), "unspecified DNS error");
        assert_eq!(Status::from_error(ResponseError::Truncated), Status::Other);
        assert_eq!(
            hold_for(&HoldPeriods::default(), Status::Valid),
            Duration::ZERO
        );
    }
}
