//! What DNS resolution does to one server, as events worded like HAProxy's
//! logs, and the address choice HAProxy makes among several answers.

use crate::hold::{NameState, Status};
use crate::server::{Cidr, Family};
use std::fmt;
use std::net::IpAddr;

/// A server's identity, shown as `backend/server`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerId {
    /// The backend (proxy) name.
    pub backend: String,
    /// The server name.
    pub server: String,
}

impl ServerId {
    /// `backend/server`.
    pub fn new(backend: &str, server: &str) -> Self {
        ServerId {
            backend: backend.to_string(),
            server: server.to_string(),
        }
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.backend, self.server)
    }
}

/// Why DNS put a server in maintenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintReason {
    /// A valid answer without a usable address for this server.
    NoIp,
    /// The failure of the name's resolution, once its hold ran out.
    Failure(Status),
}

impl MaintReason {
    /// HAProxy's words: "No IP for server ", "DNS NX status"...
    pub fn text(self) -> &'static str {
        match self {
            MaintReason::NoIp => "No IP for server ",
            MaintReason::Failure(status) => status.maintenance_reason(),
        }
    }
}

/// A change DNS made to a server. `Display` gives the log line without the
/// final dot and, for `Maintenance`, without HAProxy's tail (". N active
/// and M backup servers left. ..."), which the caller appends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsEvent {
    /// "be/s changed its IP from A to B by resolvers/nameserver" (A is
    /// "(none)" for a server without an address). Apply the new address:
    /// new connections go there, idle connections to the old one close.
    AddrChanged {
        server: ServerId,
        from: Option<IpAddr>,
        to: IpAddr,
        by: String,
    },
    /// "be/s changed its FQDN from A to B" (a server-template slot taking
    /// another SRV target; A is "(null)" for a free slot).
    FqdnChanged {
        server: ServerId,
        from: Option<String>,
        to: String,
    },
    /// "be/s changed its port from A to B by DNS SRV record" (Fairlead's
    /// wording; HAProxy logs no line for it).
    PortChanged {
        server: ServerId,
        from: Option<u16>,
        to: u16,
    },
    /// "be/s changed its weight from A to B by DNS SRV record" (Fairlead's
    /// wording). The weight is already scaled ([`crate::template::srv_weight`]).
    WeightChanged {
        server: ServerId,
        from: Option<u32>,
        to: u32,
    },
    /// "Server be/s is going DOWN for maintenance (REASON)".
    Maintenance {
        server: ServerId,
        reason: MaintReason,
    },
    /// "Server be/s administratively READY thanks to valid DNS answer".
    Ready { server: ServerId },
}

impl fmt::Display for DnsEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnsEvent::AddrChanged {
                server,
                from,
                to,
                by,
            } => {
                let from = from.map_or_else(|| "(none)".to_string(), |ip| ip.to_string());
                write!(f, "{server} changed its IP from {from} to {to} by {by}")
            }
            DnsEvent::FqdnChanged { server, from, to } => {
                write!(
                    f,
                    "{server} changed its FQDN from {} to {to}",
                    from.as_deref().unwrap_or("(null)")
                )
            }
            DnsEvent::PortChanged { server, from, to } => {
                let from = from.map_or_else(|| "(none)".to_string(), |p| p.to_string());
                write!(
                    f,
                    "{server} changed its port from {from} to {to} by DNS SRV record"
                )
            }
            DnsEvent::WeightChanged { server, from, to } => {
                let from = from.map_or_else(|| "(none)".to_string(), |w| w.to_string());
                write!(
                    f,
                    "{server} changed its weight from {from} to {to} by DNS SRV record"
                )
            }
            DnsEvent::Maintenance { server, reason } => {
                write!(
                    f,
                    "Server {server} is going DOWN for maintenance ({})",
                    reason.text()
                )
            }
            DnsEvent::Ready { server } => {
                write!(
                    f,
                    "Server {server} administratively READY thanks to valid DNS answer"
                )
            }
        }
    }
}

/// How a server picks its address among the answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddrPolicy {
    /// `resolve-prefer`. Default is ipv6.
    pub prefer: Family,
    /// `resolve-net`. Default is none.
    pub nets: Vec<Cidr>,
    /// `resolve-opts allow-dup-ip`. Default is false.
    pub allow_dup_ip: bool,
}

/// HAProxy's choice of an address for one server. Each candidate scores 8
/// for the preferred family, 4 for a preferred network, 2 when no other
/// server of the backend uses it, 1 when it is the server's current
/// address; the highest score wins, the first one on a tie. An address
/// used by another server is skipped unless `allow_dup_ip`.
pub fn select_address(
    candidates: &[IpAddr],
    policy: &AddrPolicy,
    current: Option<IpAddr>,
    used_by_others: &[IpAddr],
) -> Option<IpAddr> {
    let mut best: Option<(u8, IpAddr)> = None;
    for ip in candidates {
        let used = used_by_others.contains(ip);
        if used && !policy.allow_dup_ip {
            continue;
        }
        let mut score = 0;
        if policy.prefer.matches(ip) {
            score += 8;
        }
        if policy.nets.iter().any(|n| n.contains(ip)) {
            score += 4;
        }
        if !used {
            score += 2;
        }
        if current == Some(*ip) {
            score += 1;
        }
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, *ip));
        }
    }
    best.map(|(_, ip)| ip)
}

/// The DNS side of one `server NAME FQDN:PORT ... resolvers R`: its
/// address and whether DNS put it in maintenance.
#[derive(Debug, Clone)]
pub struct ServerResolver {
    id: ServerId,
    policy: AddrPolicy,
    addr: Option<IpAddr>,
    maint: bool,
}

impl ServerResolver {
    /// A server starting with `addr` (from `init-addr`), in maintenance
    /// when `init-addr none` left it without one.
    pub fn new(id: ServerId, policy: AddrPolicy, addr: Option<IpAddr>, maint: bool) -> Self {
        ServerResolver {
            id,
            policy,
            addr,
            maint,
        }
    }

    /// The address in use.
    pub fn addr(&self) -> Option<IpAddr> {
        self.addr
    }

    /// Whether DNS holds the server in maintenance.
    pub fn in_maintenance(&self) -> bool {
        self.maint
    }

    /// Applies the name's new state. `used_by_others` are the addresses of
    /// the other servers of the backend resolving the same name (for the
    /// duplicate rule). Returns the events, in order.
    pub fn apply(&mut self, state: &NameState, used_by_others: &[IpAddr]) -> Vec<DnsEvent> {
        let mut events = Vec::new();
        if let Some(failure) = state.failure {
            self.enter_maint(MaintReason::Failure(failure), &mut events);
            return events;
        }
        if state.status != Status::Valid {
            // not resolved yet, or an error within its hold period
            return events;
        }
        let candidates: Vec<IpAddr> = state.records.iter().filter_map(|r| r.ip()).collect();
        match select_address(&candidates, &self.policy, self.addr, used_by_others) {
            None => {
                self.addr = None;
                self.enter_maint(MaintReason::NoIp, &mut events);
            }
            Some(ip) => {
                if self.addr != Some(ip) {
                    let by = state.by.clone().unwrap_or_else(|| "DNS cache".to_string());
                    events.push(DnsEvent::AddrChanged {
                        server: self.id.clone(),
                        from: self.addr,
                        to: ip,
                        by,
                    });
                    self.addr = Some(ip);
                }
                if self.maint {
                    self.maint = false;
                    events.push(DnsEvent::Ready {
                        server: self.id.clone(),
                    });
                }
            }
        }
        events
    }

    fn enter_maint(&mut self, reason: MaintReason, events: &mut Vec<DnsEvent>) {
        if !self.maint {
            self.maint = true;
            events.push(DnsEvent::Maintenance {
                server: self.id.clone(),
                reason,
            });
        }
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
