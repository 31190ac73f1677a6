//! DNS messages, through hickory-proto: queries (A, AAAA, SRV with an EDNS0
//! OPT record) and the checks HAProxy applies to a response (RCODE,
//! truncation, question, CNAME chain, SRV additional records).

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record as WireRecord, RecordType};
use std::net::IpAddr;

/// What is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryType {
    /// IPv4 addresses.
    A,
    /// IPv6 addresses.
    Aaaa,
    /// Service records (`_service._proto.name`).
    Srv,
}

impl QueryType {
    fn record_type(self) -> RecordType {
        match self {
            QueryType::A => RecordType::A,
            QueryType::Aaaa => RecordType::AAAA,
            QueryType::Srv => RecordType::SRV,
        }
    }
}

/// One SRV answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SrvRecord {
    /// The target host, lower case, without the final dot.
    pub target: String,
    /// The service port.
    pub port: u16,
    /// The DNS weight, 0 to 65535 (see [`crate::template::srv_weight`]).
    pub weight: u16,
    /// The DNS priority (not used by HAProxy 2.6 for balancing).
    pub priority: u16,
    /// The record's TTL in seconds.
    pub ttl: u32,
    /// The target's address, from the additional section, or resolved
    /// afterwards by the runtime.
    pub addr: Option<IpAddr>,
}

/// One usable answer record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Record {
    /// An A or AAAA record.
    Addr { ip: IpAddr, ttl: u32 },
    /// An SRV record.
    Srv(SrvRecord),
}

impl Record {
    /// The address of an A/AAAA record, or of an SRV record's target.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Record::Addr { ip, .. } => Some(*ip),
            Record::Srv(s) => s.addr,
        }
    }
}

/// A valid response, reduced to what resolution uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// A/AAAA or SRV records, in answer order.
    pub records: Vec<Record>,
    /// Whether a CNAME chain was followed.
    pub cname: bool,
}

/// Why a response is not a valid answer. Each maps to one counter of
/// `show resolvers` ([`ResponseError::counter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseError {
    /// Not a DNS response, a wrong question, or malformed records.
    Invalid,
    /// RCODE NXDOMAIN.
    NxDomain,
    /// RCODE REFUSED.
    Refused,
    /// Another non-zero RCODE.
    ServerError,
    /// No answer record.
    NoAnswer,
    /// A broken CNAME chain, or one ending without an address.
    CnameError,
    /// The TC bit is set: the answer did not fit.
    Truncated,
    /// Answers, but none of the type asked.
    NoExpectedRecord,
}

impl ResponseError {
    /// The `show resolvers` counter this error increments.
    pub fn counter(self) -> &'static str {
        match self {
            ResponseError::Invalid => "invalid",
            ResponseError::NxDomain => "nx",
            ResponseError::Refused => "refused",
            ResponseError::ServerError | ResponseError::NoExpectedRecord => "other",
            ResponseError::NoAnswer => "any_err",
            ResponseError::CnameError => "cname_error",
            ResponseError::Truncated => "truncated",
        }
    }
}

/// Lower case, without the final dot: the form names are compared in.
pub fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn name_string(name: &Name) -> String {
    normalize_name(&name.to_ascii())
}

/// Builds a query for `name` with an EDNS0 OPT record announcing
/// `payload_size` (at least 512, RFC 6891). Fails on a name that is not a
/// valid DNS name.
pub fn build_query(
    id: u16,
    name: &str,
    qtype: QueryType,
    payload_size: u16,
) -> Result<Vec<u8>, String> {
    let mut qname =
        Name::from_ascii(name).map_err(|e| format!("invalid DNS name '{name}': {e}"))?;
    qname.set_fqdn(true);
    let mut msg = Message::new();
    msg.set_id(id)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(qname, qtype.record_type()));
    let mut edns = Edns::new();
    edns.set_max_payload(payload_size);
    msg.set_edns(edns);
    msg.to_vec()
        .map_err(|e| format!("cannot encode a query for '{name}': {e}"))
}

/// The id of a message, if it has a header.
pub fn message_id(buf: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*buf.first()?, *buf.get(1)?]))
}

/// Checks a response to the query (`name`, `qtype`) and extracts its
/// records. With `accept_truncated`, a truncated SRV answer is used as it
/// is (HAProxy's behaviour for UDP-only nameservers); otherwise the TC bit
/// is [`ResponseError::Truncated`].
pub fn parse_response(
    buf: &[u8],
    name: &str,
    qtype: QueryType,
    accept_truncated: bool,
) -> Result<Answer, ResponseError> {
    let msg = Message::from_vec(buf).map_err(|_| ResponseError::Invalid)?;
    if msg.message_type() != MessageType::Response {
        return Err(ResponseError::Invalid);
    }
    match msg.response_code() {
        ResponseCode::NoError => {}
        ResponseCode::NXDomain => return Err(ResponseError::NxDomain),
        ResponseCode::Refused => return Err(ResponseError::Refused),
        _ => return Err(ResponseError::ServerError),
    }
    let [question] = msg.queries() else {
        return Err(ResponseError::Invalid);
    };
    if name_string(question.name()) != normalize_name(name)
        || question.query_type() != qtype.record_type()
    {
        return Err(ResponseError::Invalid);
    }
    if msg.truncated() && !(accept_truncated && qtype == QueryType::Srv) {
        return Err(ResponseError::Truncated);
    }
    if msg.answers().is_empty() {
        return Err(ResponseError::NoAnswer);
    }
    let mut answer = match qtype {
        QueryType::Srv => srv_answer(&msg),
        QueryType::A | QueryType::Aaaa => addr_answer(msg.answers(), name)?,
    };
    let expected = |r: &Record| match (qtype, r) {
        (QueryType::Srv, Record::Srv(_)) => true,
        (QueryType::A, Record::Addr { ip, .. }) => ip.is_ipv4(),
        (QueryType::Aaaa, Record::Addr { ip, .. }) => ip.is_ipv6(),
        _ => false,
    };
    if !answer.records.iter().any(expected) {
        return Err(ResponseError::NoExpectedRecord);
    }
    answer.records.retain(expected);
    Ok(answer)
}

/// A/AAAA answers: every record must belong to the queried name or to the
/// end of the CNAME chain seen so far.
fn addr_answer(records: &[WireRecord], name: &str) -> Result<Answer, ResponseError> {
    let mut current = normalize_name(name);
    let mut answer = Answer::default();
    let count = records.len();
    for (i, rec) in records.iter().enumerate() {
        if name_string(rec.name()) != current {
            return Err(if i == 0 {
                ResponseError::Invalid
            } else {
                ResponseError::CnameError
            });
        }
        match rec.data() {
            RData::A(a) => answer.records.push(Record::Addr {
                ip: IpAddr::V4(a.0),
                ttl: rec.ttl(),
            }),
            RData::AAAA(a) => answer.records.push(Record::Addr {
                ip: IpAddr::V6(a.0),
                ttl: rec.ttl(),
            }),
            RData::CNAME(target) => {
                if i + 1 == count {
                    return Err(ResponseError::CnameError);
                }
                answer.cname = true;
                current = name_string(&target.0);
            }
            _ => {}
        }
    }
    Ok(answer)
}

/// SRV answers, each with the address of its target from the additional
/// section when one is there (an A or AAAA record named after the target).
fn srv_answer(msg: &Message) -> Answer {
    let mut answer = Answer::default();
    for rec in msg.answers() {
        let RData::SRV(srv) = rec.data() else {
            continue;
        };
        let target = name_string(srv.target());
        let addr = msg.additionals().iter().find_map(|ar| {
            if name_string(ar.name()) != target {
                return None;
            }
            match ar.data() {
                RData::A(a) => Some(IpAddr::V4(a.0)),
                RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                _ => None,
            }
        });
        answer.records.push(Record::Srv(SrvRecord {
            target,
            port: srv.port(),
            weight: srv.weight(),
            priority: srv.priority(),
            ttl: rec.ttl(),
            addr,
        }));
    }
    answer
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
