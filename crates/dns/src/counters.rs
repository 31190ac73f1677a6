//! Per-nameserver counters and the `show resolvers` text of the runtime
//! API, in HAProxy 2.6's format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counter names, in `show resolvers` order.
pub const COUNTER_NAMES: [&str; 15] = [
    "sent",
    "snd_error",
    "valid",
    "update",
    "cname",
    "cname_error",
    "any_err",
    "nx",
    "timeout",
    "refused",
    "other",
    "invalid",
    "too_big",
    "truncated",
    "outdated",
];

/// The live counters of one nameserver. Each index follows
/// [`COUNTER_NAMES`]: queries `sent` (UDP or TCP), `snd_error` (send or
/// connect failures), `valid` answers, `update` (valid answers that changed
/// the records in use), `cname` (valid answers through a CNAME),
/// `cname_error`, `any_err` (no answer record), `nx`, `timeout` (no answer
/// within `timeout retry`), `refused`, `other`, `invalid`, `too_big` (UDP
/// answers over `accepted_payload_size`), `truncated` (TC bit) and
/// `outdated` (answers to no pending query).
#[derive(Debug, Default)]
pub struct NameserverCounters {
    values: [AtomicU64; 15],
}

impl NameserverCounters {
    /// Adds one to the counter `name` (one of [`COUNTER_NAMES`]; others
    /// are ignored).
    pub fn bump(&self, name: &str) {
        if let Some(i) = COUNTER_NAMES.iter().position(|n| *n == name) {
            if let Some(v) = self.values.get(i) {
                v.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The value of counter `name` (0 for an unknown name).
    pub fn get(&self, name: &str) -> u64 {
        COUNTER_NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|i| self.values.get(i))
            .map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// All values, in [`COUNTER_NAMES`] order.
    pub fn snapshot(&self) -> [u64; 15] {
        let mut out = [0; 15];
        for (o, v) in out.iter_mut().zip(&self.values) {
            *o = v.load(Ordering::Relaxed);
        }
        out
    }
}

/// Appends one section to a `show resolvers` dump:
///
/// ```text
/// Resolvers section mydns
///  nameserver dns1:
///   sent:        8
///   snd_error:   0
///   ...
/// ```
pub fn write_section(out: &mut String, section: &str, nameservers: &[(String, [u64; 15])]) {
    let _ = writeln!(out, "Resolvers section {section}");
    for (name, values) in nameservers {
        let _ = writeln!(out, " nameserver {name}:");
        for (label, value) in COUNTER_NAMES.iter().zip(values) {
            let label = format!("{label}:");
            let _ = writeln!(out, "  {label:<12} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_matches_haproxy() {
        let c = NameserverCounters::default();
        c.bump("sent");
        c.bump("sent");
        c.bump("outdated");
        c.bump("no-such-counter");
        assert_eq!(c.get("sent"), 2);
        assert_eq!(c.get("nope"), 0);
        let mut out = String::new();
        write_section(&mut out, "mydns", &[("dns1".to_string(), c.snapshot())]);
        let expected = "Resolvers section mydns\n nameserver dns1:\n  sent:        2\n  snd_error:   0\n  valid:       0\n  update:      0\n  cname:       0\n  cname_error: 0\n  any_err:     0\n  nx:          0\n  timeout:     0\n  refused:     0\n  other:       0\n  invalid:     0\n  too_big:     0\n  truncated:   0\n  outdated:    1\n";
        assert_eq!(out, expected);
    }
}
