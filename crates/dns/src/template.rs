//! `server-template PREFIX N[-M] FQDN[:PORT]`: how the answers of one name
//! fill the template's slots (servers PREFIX N to PREFIX M).
//!
//! With an address name (A/AAAA), each slot picks an address in order with
//! HAProxy's scoring ([`crate::events::select_address`]): a slot keeps its
//! address while it stays in the answers, a free slot takes an address no
//! other slot uses (unless `allow-dup-ip`), extra addresses are ignored and
//! a slot left without one is in maintenance.
//!
//! With an SRV name (starting with `_`), each SRV record (target, port)
//! binds one slot: a slot keeps its record while it stays in the answers,
//! a record that vanished frees its slot (after `hold obsolete`, which the
//! resolution applies), freed slots are reused first-freed-first, extra
//! records are ignored. The slot takes the record's port, its weight scaled
//! like HAProxy ([`srv_weight`]) unless `ignore-weight`, and the target's
//! address (from the additional section, or resolved by the runtime).
//! The SRV priority is not used, as in HAProxy 2.6.

use crate::events::{select_address, AddrPolicy, DnsEvent, MaintReason, ServerId};
use crate::hold::{NameState, Status};
use crate::wire::{normalize_name, Record, SrvRecord};
use std::collections::VecDeque;
use std::net::IpAddr;

/// Whether a server name is an SRV label (it starts with an underscore).
pub fn is_srv_name(name: &str) -> bool {
    name.starts_with('_')
}

/// HAProxy's mapping of an SRV weight (0 to 65535) to a server weight (0 to
/// 256): `(weight + 255) / 256`, so that 0 stays 0 and 1 becomes 1.
pub fn srv_weight(weight: u16) -> u32 {
    u32::from(weight).div_ceil(256)
}

/// Parses the `N` or `N-M` of a server-template: the first and last slot
/// numbers (from 1).
pub fn parse_template_range(word: &str) -> Result<(u32, u32), String> {
    let num = |s: &str| -> Result<u32, String> {
        s.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
            format!(
                "'server-template': invalid range '{word}' (expects <num> or <num_low>-<num_high>)"
            )
        })
    };
    let (low, high) = match word.split_once('-') {
        Some((l, h)) => (num(l)?, num(h)?),
        None => (1, num(word)?),
    };
    if low > high {
        return Err(format!(
            "'server-template': invalid range '{word}' (<num_low> must not exceed <num_high>)"
        ));
    }
    Ok((low, high))
}

/// Parses the `FQDN[:PORT]` of a server-template.
pub fn parse_template_fqdn(word: &str) -> Result<(String, Option<u16>), String> {
    let (name, port) = match word.rsplit_once(':') {
        Some((n, p)) => {
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("'server-template': invalid port '{p}' in '{word}'"))?;
            (n, Some(port))
        }
        None => (word, None),
    };
    if name.is_empty() {
        return Err(format!("'server-template': missing FQDN in '{word}'"));
    }
    Ok((normalize_name(name), port))
}

/// One server of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// `backend/PREFIXn`.
    pub id: ServerId,
    /// Its address; none while free.
    pub addr: Option<IpAddr>,
    /// Its port: the template's, or the SRV record's.
    pub port: Option<u16>,
    /// The weight set from SRV records; none when never set (the
    /// configured weight applies) or with `ignore-weight`.
    pub weight: Option<u32>,
    /// The SRV target it is bound to.
    pub target: Option<String>,
    /// In maintenance: no address, or the resolution failed.
    pub maint: bool,
}

/// The slots of one server-template and their assignment.
#[derive(Debug, Clone)]
pub struct TemplateSlots {
    slots: Vec<Slot>,
    policy: AddrPolicy,
    ignore_weight: bool,
    srv: bool,
    free: VecDeque<usize>,
}

impl TemplateSlots {
    /// The slots `prefix{low}` to `prefix{high}` of `backend`, resolving
    /// `fqdn` (SRV when it starts with `_`). All start free, in
    /// maintenance, without an address.
    pub fn new(
        backend: &str,
        prefix: &str,
        range: (u32, u32),
        fqdn: &str,
        port: Option<u16>,
        policy: AddrPolicy,
        ignore_weight: bool,
    ) -> Self {
        let srv = is_srv_name(fqdn);
        let slots: Vec<Slot> = (range.0..=range.1)
            .map(|n| Slot {
                id: ServerId::new(backend, &format!("{prefix}{n}")),
                addr: None,
                port: if srv { None } else { port },
                weight: None,
                target: None,
                maint: true,
            })
            .collect();
        let free = (0..slots.len()).collect();
        TemplateSlots {
            slots,
            policy,
            ignore_weight,
            srv,
            free,
        }
    }

    /// The slots, in order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Applies the name's new state; returns the events in slot order.
    pub fn apply(&mut self, state: &NameState) -> Vec<DnsEvent> {
        let mut events = Vec::new();
        if let Some(failure) = state.failure {
            for slot in &mut self.slots {
                if !slot.maint && slot.addr.is_some() {
                    slot.maint = true;
                    let reason = MaintReason::Failure(failure);
                    events.push(DnsEvent::Maintenance {
                        server: slot.id.clone(),
                        reason,
                    });
                }
            }
            return events;
        }
        if state.status != Status::Valid {
            return events;
        }
        let by = state.by.clone().unwrap_or_else(|| "DNS cache".to_string());
        if self.srv {
            self.apply_srv(&state.records, &by, &mut events);
        } else {
            self.apply_addrs(&state.records, &by, &mut events);
        }
        events
    }

    fn apply_addrs(&mut self, records: &[Record], by: &str, events: &mut Vec<DnsEvent>) {
        let candidates: Vec<IpAddr> = records.iter().filter_map(Record::ip).collect();
        for i in 0..self.slots.len() {
            let used: Vec<IpAddr> = self
                .slots
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, s)| s.addr)
                .filter(|ip| candidates.contains(ip))
                .collect();
            let current = self.slots.get(i).and_then(|s| s.addr);
            let choice = select_address(&candidates, &self.policy, current, &used);
            if let Some(slot) = self.slots.get_mut(i) {
                set_addr(slot, choice, by, events);
            }
        }
    }

    fn apply_srv(&mut self, records: &[Record], by: &str, events: &mut Vec<DnsEvent>) {
        let srvs: Vec<&SrvRecord> = records
            .iter()
            .filter_map(|r| match r {
                Record::Srv(s) => Some(s),
                Record::Addr { .. } => None,
            })
            .collect();
        // free the slots whose record is gone
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(target) = &slot.target else { continue };
            if srvs
                .iter()
                .any(|s| &s.target == target && Some(s.port) == slot.port)
            {
                continue;
            }
            slot.target = None;
            slot.port = None;
            set_addr(slot, None, by, events);
            self.free.push_back(i);
        }
        for rec in srvs {
            let bound = self.slots.iter().position(|s| {
                s.target.as_deref() == Some(rec.target.as_str()) && s.port == Some(rec.port)
            });
            let Some(i) = bound.or_else(|| self.free.pop_front()) else {
                continue; // more records than slots
            };
            let Some(slot) = self.slots.get_mut(i) else {
                continue;
            };
            update_srv_slot(slot, rec, self.ignore_weight, by, events);
        }
    }
}

fn update_srv_slot(
    slot: &mut Slot,
    rec: &SrvRecord,
    ignore_weight: bool,
    by: &str,
    events: &mut Vec<DnsEvent>,
) {
    if slot.target.as_deref() != Some(rec.target.as_str()) {
        let from = slot.target.replace(rec.target.clone());
        events.push(DnsEvent::FqdnChanged {
            server: slot.id.clone(),
            from,
            to: rec.target.clone(),
        });
    }
    if slot.port != Some(rec.port) {
        let from = slot.port.replace(rec.port);
        events.push(DnsEvent::PortChanged {
            server: slot.id.clone(),
            from,
            to: rec.port,
        });
    }
    if !ignore_weight {
        let weight = srv_weight(rec.weight);
        if slot.weight != Some(weight) {
            let from = slot.weight.replace(weight);
            events.push(DnsEvent::WeightChanged {
                server: slot.id.clone(),
                from,
                to: weight,
            });
        }
    }
    set_addr(slot, rec.addr, by, events);
}

fn set_addr(slot: &mut Slot, addr: Option<IpAddr>, by: &str, events: &mut Vec<DnsEvent>) {
    match addr {
        None => {
            slot.addr = None;
            if !slot.maint {
                slot.maint = true;
                events.push(DnsEvent::Maintenance {
                    server: slot.id.clone(),
                    reason: MaintReason::NoIp,
                });
            }
        }
        Some(ip) => {
            if slot.addr != Some(ip) {
                let from = slot.addr.replace(ip);
                events.push(DnsEvent::AddrChanged {
                    server: slot.id.clone(),
                    from,
                    to: ip,
                    by: by.to_string(),
                });
            }
            if slot.maint {
                slot.maint = false;
                events.push(DnsEvent::Ready {
                    server: slot.id.clone(),
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
