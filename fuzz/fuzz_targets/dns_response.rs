//! Fuzzes the DNS response checks (`parse_response`) with any bytes, for
//! each query type, UDP-only or not. They must never panic, and a valid
//! answer only holds records of the type asked.
#![no_main]

use fairlead_dns::wire::{message_id, parse_response, QueryType, Record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, buf)) = data.split_first() else {
        return;
    };
    let qtype = match sel % 3 {
        0 => QueryType::A,
        1 => QueryType::Aaaa,
        _ => QueryType::Srv,
    };
    let _ = message_id(buf);
    if let Ok(answer) = parse_response(buf, "_x._tcp.fuzz.example", qtype, sel & 0x80 != 0) {
        for r in &answer.records {
            match (qtype, r) {
                (QueryType::A, Record::Addr { ip, .. }) => assert!(ip.is_ipv4()),
                (QueryType::Aaaa, Record::Addr { ip, .. }) => assert!(ip.is_ipv6()),
                (QueryType::Srv, Record::Srv(_)) => {}
                _ => panic!("record of another type in the answer"),
            }
        }
    }
});
