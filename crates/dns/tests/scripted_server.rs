//! Behaviours a real DNS server will not show on demand (stale ids,
//! oversized datagrams, SERVFAIL, silence), played by a small UDP server
//! built with hickory-proto on its own loopback address (127.0.0.16x). It
//! checks the retry procedure query by query.

use fairlead_dns::config::ResolversSection;
use fairlead_dns::hold::Status;
use fairlead_dns::runtime::Resolvers;
use fairlead_dns::server::Family;
use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record, RecordType};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Script = dyn Fn(&Message, usize) -> Vec<Vec<u8>> + Send + Sync;

/// Answers each query with the datagrams `script(query, n)` returns (n
/// counts queries from 0) and records the types asked.
struct Scripted {
    addr: SocketAddr,
    asked: Arc<Mutex<Vec<RecordType>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Scripted {
    fn start(ip: &str, script: Box<Script>) -> Scripted {
        let sock = UdpSocket::bind((ip, 0)).expect("bind the scripted server");
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (asked2, stop2) = (asked.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut n = 0;
            while !stop2.load(Ordering::Relaxed) {
                let Ok((len, peer)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let Ok(query) = Message::from_vec(&buf[..len]) else {
                    continue;
                };
                asked2.lock().unwrap().push(query.queries()[0].query_type());
                for datagram in script(&query, n) {
                    sock.send_to(&datagram, peer).unwrap();
                }
                n += 1;
            }
        });
        Scripted {
            addr,
            asked,
            stop,
            thread: Some(thread),
        }
    }

    fn asked(&self) -> Vec<RecordType> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn reply(query: &Message, rcode: ResponseCode, ip: Option<[u8; 4]>) -> Message {
    let mut m = Message::new();
    m.set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_response_code(rcode);
    m.add_query(query.queries()[0].clone());
    if let Some(ip) = ip {
        let name = query.queries()[0].name().clone();
        m.add_answer(Record::from_rdata(name, 5, RData::A(A(ip.into()))));
    }
    m
}

fn resolvers(addr: SocketAddr, retries: &str) -> Resolvers {
    let mut s = ResolversSection::new("scripted");
    s.parse_line(&["nameserver", "ns", &addr.to_string()])
        .unwrap();
    s.parse_line(&["timeout", "retry", "150ms"]).unwrap();
    s.parse_line(&["resolve_retries", retries]).unwrap();
    Resolvers::new(s).unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn stale_and_oversized_datagrams_are_skipped() {
    let server = Scripted::start(
        "127.0.0.161",
        Box::new(|q, _| {
            let mut stale = reply(q, ResponseCode::NoError, Some([10, 9, 9, 9]));
            stale.set_id(q.id().wrapping_add(1));
            let mut big = reply(q, ResponseCode::NoError, Some([10, 9, 9, 8]))
                .to_vec()
                .unwrap();
            big.resize(600, 0); // over accepted_payload_size (512)
            let good = reply(q, ResponseCode::NoError, Some([10, 0, 0, 42]));
            vec![
                stale.to_vec().unwrap(),
                big,
                vec![0x01],
                good.to_vec().unwrap(),
            ]
        }),
    );
    let r = resolvers(server.addr, "3");
    let got = block_on(r.resolve_once("app.test", Family::Ipv4));
    assert_eq!(got, Ok("10.0.0.42".parse::<IpAddr>().unwrap()));
    assert_eq!(r.counter("ns", "outdated"), 1);
    assert_eq!(r.counter("ns", "too_big"), 1);
    assert_eq!(r.counter("ns", "invalid"), 1, "a 1-byte datagram has no id");
    assert_eq!(r.counter("ns", "valid"), 1);
    assert_eq!(server.asked(), vec![RecordType::A]);
}

#[test]
fn errors_fall_back_to_the_other_type_then_retry() {
    let server = Scripted::start(
        "127.0.0.162",
        Box::new(|q, _| vec![reply(q, ResponseCode::ServFail, None).to_vec().unwrap()]),
    );
    let r = resolvers(server.addr, "2");
    let got = block_on(r.resolve_once("app.test", Family::Ipv6));
    assert_eq!(got, Err(Status::Other));
    use RecordType::{A, AAAA};
    assert_eq!(server.asked(), vec![AAAA, A, AAAA, A]);
    assert_eq!(r.counter("ns", "other"), 4);
    assert_eq!(r.counter("ns", "sent"), 4);
}

#[test]
fn fallback_answer_is_used() {
    // REFUSED for AAAA, an address for A
    let server = Scripted::start(
        "127.0.0.163",
        Box::new(|q, _| {
            let m = if q.queries()[0].query_type() == RecordType::AAAA {
                reply(q, ResponseCode::Refused, None)
            } else {
                reply(q, ResponseCode::NoError, Some([10, 0, 0, 5]))
            };
            vec![m.to_vec().unwrap()]
        }),
    );
    let r = resolvers(server.addr, "3");
    assert_eq!(
        block_on(r.resolve_once("app.test", Family::Ipv6)),
        Ok("10.0.0.5".parse::<IpAddr>().unwrap())
    );
    assert_eq!(server.asked(), vec![RecordType::AAAA, RecordType::A]);
    assert_eq!(r.counter("ns", "refused"), 1);
}

#[test]
fn silence_is_a_timeout_after_resolve_retries_queries() {
    let server = Scripted::start("127.0.0.164", Box::new(|_, _| Vec::new()));
    let r = resolvers(server.addr, "3");
    let started = std::time::Instant::now();
    assert_eq!(
        block_on(r.resolve_once("app.test", Family::Ipv4)),
        Err(Status::Timeout)
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450),
        "3 x timeout retry (150ms), took {took:?}"
    );
    assert_eq!(
        server.asked(),
        vec![RecordType::A; 3],
        "no type fallback on timeouts"
    );
    assert_eq!(r.counter("ns", "timeout"), 3);
}

#[test]
fn answer_on_the_second_try() {
    let server = Scripted::start(
        "127.0.0.165",
        Box::new(|q, n| {
            if n == 0 {
                Vec::new()
            } else {
                vec![reply(q, ResponseCode::NoError, Some([10, 0, 0, 6]))
                    .to_vec()
                    .unwrap()]
            }
        }),
    );
    let r = resolvers(server.addr, "3");
    assert_eq!(
        block_on(r.resolve_once("app.test", Family::Ipv4)),
        Ok("10.0.0.6".parse::<IpAddr>().unwrap())
    );
    assert_eq!(server.asked(), vec![RecordType::A, RecordType::A]);
    assert_eq!(
        (r.counter("ns", "timeout"), r.counter("ns", "valid")),
        (1, 1)
    );
}

#[test]
fn invalid_name_fails_without_a_query() {
    let server = Scripted::start("127.0.0.166", Box::new(|_, _| Vec::new()));
    let r = resolvers(server.addr, "3");
    let started = std::time::Instant::now();
    assert_eq!(
        block_on(r.resolve_once("bad..name", Family::Ipv4)),
        Err(Status::Other)
    );
    assert!(started.elapsed() < Duration::from_millis(150));
    assert_eq!(r.counter("ns", "sent"), 0);
    assert!(server.asked().is_empty());
}
