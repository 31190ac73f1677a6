use super::*;
use hickory_proto::rr::rdata::{A, AAAA, CNAME, SRV};
use std::net::{Ipv4Addr, Ipv6Addr};

fn n(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn response(qname: &str, qtype: RecordType) -> Message {
    let mut m = Message::new();
    m.set_id(7)
        .set_message_type(MessageType::Response)
        .add_query(Query::query(n(qname), qtype));
    m
}

fn a(name: &str, ip: [u8; 4]) -> WireRecord {
    WireRecord::from_rdata(n(name), 60, RData::A(A(Ipv4Addr::from(ip))))
}

fn bytes(m: &Message) -> Vec<u8> {
    m.to_vec().unwrap()
}

#[test]
fn query_has_edns_and_question() {
    let q = build_query(0x1234, "App.Example.com", QueryType::Aaaa, 1232).unwrap();
    assert_eq!(message_id(&q), Some(0x1234));
    let m = Message::from_vec(&q).unwrap();
    assert_eq!(m.message_type(), MessageType::Query);
    assert!(m.recursion_desired());
    assert_eq!(m.queries().len(), 1);
    assert_eq!(m.queries()[0].query_type(), RecordType::AAAA);
    assert_eq!(m.queries()[0].name().to_ascii(), "App.Example.com.");
    assert_eq!(m.extensions().as_ref().unwrap().max_payload(), 1232);
    // under 512 is announced as 512
    let q = build_query(1, "x.example", QueryType::Srv, 100).unwrap();
    assert_eq!(
        Message::from_vec(&q)
            .unwrap()
            .extensions()
            .as_ref()
            .unwrap()
            .max_payload(),
        512
    );
    assert!(build_query(1, "bad..name", QueryType::A, 512).is_err());
    assert_eq!(message_id(&[1]), None);
}

#[test]
fn a_answer_with_cname_chain() {
    let mut m = response("www.example.com.", RecordType::A);
    m.add_answer(WireRecord::from_rdata(
        n("www.example.com."),
        30,
        RData::CNAME(CNAME(n("Edge.example.net."))),
    ));
    m.add_answer(a("edge.example.net.", [192, 0, 2, 1]));
    m.add_answer(a("edge.example.net.", [192, 0, 2, 2]));
    let ans = parse_response(&bytes(&m), "www.example.com", QueryType::A, false).unwrap();
    assert!(ans.cname);
    assert_eq!(
        ans.records,
        vec![
            Record::Addr {
                ip: "192.0.2.1".parse().unwrap(),
                ttl: 60
            },
            Record::Addr {
                ip: "192.0.2.2".parse().unwrap(),
                ttl: 60
            }
        ]
    );
}

#[test]
fn rcodes_and_flags() {
    let mut m = response("x.example.", RecordType::A);
    m.set_response_code(ResponseCode::NXDomain);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::NxDomain)
    );
    m.set_response_code(ResponseCode::Refused);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::Refused)
    );
    m.set_response_code(ResponseCode::ServFail);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::ServerError)
    );
    m.set_response_code(ResponseCode::NoError);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::NoAnswer)
    );
    m.add_answer(a("x.example.", [10, 0, 0, 1]));
    m.set_truncated(true);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, true),
        Err(ResponseError::Truncated)
    );
    m.set_truncated(false);
    assert!(parse_response(&bytes(&m), "X.Example.", QueryType::A, false).is_ok());
    // a query is not a response
    m.set_message_type(MessageType::Query);
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::Invalid)
    );
}

#[test]
fn wrong_question_or_records() {
    let mut m = response("other.example.", RecordType::A);
    m.add_answer(a("other.example.", [10, 0, 0, 1]));
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::Invalid)
    );
    assert_eq!(
        parse_response(&bytes(&m), "other.example", QueryType::Aaaa, false),
        Err(ResponseError::Invalid)
    );
    // first record for another name: invalid; a later one: CNAME error
    let mut m = response("x.example.", RecordType::A);
    m.add_answer(a("y.example.", [10, 0, 0, 1]));
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::Invalid)
    );
    let mut m = response("x.example.", RecordType::A);
    m.add_answer(a("x.example.", [10, 0, 0, 1]));
    m.add_answer(a("y.example.", [10, 0, 0, 2]));
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::CnameError)
    );
    // a chain ending on a CNAME
    let mut m = response("x.example.", RecordType::A);
    m.add_answer(WireRecord::from_rdata(
        n("x.example."),
        30,
        RData::CNAME(CNAME(n("y.example."))),
    ));
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::A, false),
        Err(ResponseError::CnameError)
    );
    // AAAA asked, only A given
    let mut m = response("x.example.", RecordType::AAAA);
    m.add_answer(a("x.example.", [10, 0, 0, 1]));
    assert_eq!(
        parse_response(&bytes(&m), "x.example", QueryType::Aaaa, false),
        Err(ResponseError::NoExpectedRecord)
    );
    // garbage
    assert_eq!(
        parse_response(&[0, 7, 0x80], "x.example", QueryType::A, false),
        Err(ResponseError::Invalid)
    );
    assert_eq!(
        parse_response(&[], "x.example", QueryType::A, false),
        Err(ResponseError::Invalid)
    );
}

#[test]
fn srv_with_additional_records() {
    let mut m = response("_http._tcp.svc.example.", RecordType::SRV);
    m.add_answer(WireRecord::from_rdata(
        n("_http._tcp.svc.example."),
        20,
        RData::SRV(SRV::new(10, 100, 8080, n("Node1.svc.example."))),
    ));
    m.add_answer(WireRecord::from_rdata(
        n("_http._tcp.svc.example."),
        20,
        RData::SRV(SRV::new(10, 0, 8081, n("node2.svc.example."))),
    ));
    m.add_additional(a("node1.svc.example.", [10, 1, 0, 1]));
    m.add_additional(WireRecord::from_rdata(
        n("node9.svc.example."),
        20,
        RData::AAAA(AAAA(Ipv6Addr::LOCALHOST)),
    ));
    let ans = parse_response(&bytes(&m), "_http._tcp.svc.example", QueryType::Srv, false).unwrap();
    assert_eq!(
        ans.records,
        vec![
            Record::Srv(SrvRecord {
                target: "node1.svc.example".into(),
                port: 8080,
                weight: 100,
                priority: 10,
                ttl: 20,
                addr: Some("10.1.0.1".parse().unwrap())
            }),
            Record::Srv(SrvRecord {
                target: "node2.svc.example".into(),
                port: 8081,
                weight: 0,
                priority: 10,
                ttl: 20,
                addr: None
            }),
        ]
    );
    assert_eq!(ans.records[0].ip(), Some("10.1.0.1".parse().unwrap()));
    // a truncated SRV answer is used only when allowed
    m.set_truncated(true);
    assert!(parse_response(&bytes(&m), "_http._tcp.svc.example", QueryType::Srv, true).is_ok());
    assert_eq!(
        parse_response(&bytes(&m), "_http._tcp.svc.example", QueryType::Srv, false),
        Err(ResponseError::Truncated)
    );
}

#[test]
fn counters_named_like_haproxy() {
    assert_eq!(ResponseError::NoAnswer.counter(), "any_err");
    assert_eq!(ResponseError::NoExpectedRecord.counter(), "other");
    assert_eq!(ResponseError::CnameError.counter(), "cname_error");
}
