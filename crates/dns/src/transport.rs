//! One query to one nameserver: UDP (with the TCP retry on truncation) or
//! TCP, counting what happens in the nameserver's counters.

use crate::config::{Nameserver, Transport};
use crate::counters::NameserverCounters;
use crate::wire::{message_id, parse_response, Answer, QueryType, ResponseError};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::{timeout_at, Instant};

/// What one nameserver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NsOutcome {
    /// A valid answer.
    Valid(Answer),
    /// An answer that is an error.
    Error(ResponseError),
    /// Nothing usable before the deadline.
    NoResponse,
    /// The query could not be sent (counted as `snd_error`).
    SendFailed,
}

/// The query to send and how to check its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The encoded query.
    pub query: Vec<u8>,
    /// Its id.
    pub id: u16,
    /// The name asked.
    pub name: String,
    /// The type asked.
    pub qtype: QueryType,
    /// The largest UDP answer accepted.
    pub payload_size: u16,
}

/// Sends `ex` to `ns` and waits for its answer until `deadline`. A UDP
/// answer with the TC bit is asked again over TCP (same deadline) unless
/// the nameserver is UDP-only.
pub async fn exchange(
    ns: &Nameserver,
    counters: &NameserverCounters,
    ex: &Exchange,
    deadline: Instant,
) -> NsOutcome {
    match ns.transport {
        Transport::Stream => tcp_exchange(ns.addr, counters, ex, deadline).await,
        Transport::DatagramOnly => udp_exchange(ns.addr, counters, ex, deadline, true).await,
        Transport::Datagram => match udp_exchange(ns.addr, counters, ex, deadline, false).await {
            NsOutcome::Error(ResponseError::Truncated) => {
                tcp_exchange(ns.addr, counters, ex, deadline).await
            }
            other => other,
        },
    }
}

fn classify(result: Result<Answer, ResponseError>, counters: &NameserverCounters) -> NsOutcome {
    match result {
        Ok(answer) => {
            counters.bump("valid");
            if answer.cname {
                counters.bump("cname");
            }
            NsOutcome::Valid(answer)
        }
        Err(err) => {
            counters.bump(err.counter());
            NsOutcome::Error(err)
        }
    }
}

async fn udp_exchange(
    addr: SocketAddr,
    counters: &NameserverCounters,
    ex: &Exchange,
    deadline: Instant,
    udp_only: bool,
) -> NsOutcome {
    let local: SocketAddr = if addr.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = match UdpSocket::bind(local).await {
        Ok(s) => s,
        Err(_) => {
            counters.bump("snd_error");
            return NsOutcome::SendFailed;
        }
    };
    if sock.connect(addr).await.is_err() || sock.send(&ex.query).await.is_err() {
        counters.bump("snd_error");
        return NsOutcome::SendFailed;
    }
    counters.bump("sent");
    let mut buf = vec![0u8; 65536];
    loop {
        let n = match timeout_at(deadline, sock.recv(&mut buf)).await {
            Ok(Ok(n)) => n,
            // an ICMP error (port unreachable) or the deadline: no answer
            Ok(Err(_)) | Err(_) => return NsOutcome::NoResponse,
        };
        if n > usize::from(ex.payload_size) {
            counters.bump("too_big");
            continue;
        }
        let Some(data) = buf.get(..n) else { continue };
        match message_id(data) {
            None => {
                counters.bump("invalid");
                continue;
            }
            Some(id) if id != ex.id => {
                counters.bump("outdated");
                continue;
            }
            Some(_) => {}
        }
        return classify(parse_response(data, &ex.name, ex.qtype, udp_only), counters);
    }
}

async fn tcp_exchange(
    addr: SocketAddr,
    counters: &NameserverCounters,
    ex: &Exchange,
    deadline: Instant,
) -> NsOutcome {
    let Ok(len) = u16::try_from(ex.query.len()) else {
        counters.bump("snd_error");
        return NsOutcome::SendFailed;
    };
    let mut stream = match timeout_at(deadline, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => {
            counters.bump("snd_error");
            return NsOutcome::SendFailed;
        }
        Err(_) => return NsOutcome::NoResponse,
    };
    let mut frame = Vec::with_capacity(ex.query.len() + 2);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&ex.query);
    match timeout_at(deadline, stream.write_all(&frame)).await {
        Ok(Ok(())) => counters.bump("sent"),
        Ok(Err(_)) => {
            counters.bump("snd_error");
            return NsOutcome::SendFailed;
        }
        Err(_) => return NsOutcome::NoResponse,
    }
    loop {
        let response = timeout_at(deadline, async {
            let mut len = [0u8; 2];
            stream.read_exact(&mut len).await?;
            let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
            stream.read_exact(&mut body).await?;
            Ok::<_, std::io::Error>(body)
        })
        .await;
        let Ok(Ok(body)) = response else {
            return NsOutcome::NoResponse;
        };
        match message_id(&body) {
            None => {
                counters.bump("invalid");
                return NsOutcome::NoResponse;
            }
            Some(id) if id != ex.id => {
                counters.bump("outdated");
                continue;
            }
            Some(_) => return classify(parse_response(&body, &ex.name, ex.qtype, false), counters),
        }
    }
}
