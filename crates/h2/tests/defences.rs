//! Abuse defences, on by default: rapid reset, CONTINUATION flood, empty
//! DATA flood, SETTINGS / PING floods, HPACK bombs, oversized blocks.

mod support;

use fairlead_h2::frame::{flag, kind};
use fairlead_h2::{Config, ErrorCode as E};
use support::*;

#[test]
fn rapid_reset_budget_closes_with_enhance_your_calm() {
    let mut c = server();
    let mut p = Peer::default();
    let mut b = Vec::new();
    // 200 streams opened and reset at once are within the budget...
    for i in 0..200u32 {
        let id = 1 + 2 * i;
        b.extend(p.headers(id, GET, false));
        b.extend(rst(id, E::CANCEL));
    }
    let f = feed(&mut c, &b);
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(c.glitches(), 200);
    // ...the next one is not.
    let f = feed(
        &mut c,
        &cat(&[p.headers(401, GET, false), rst(401, E::CANCEL)]),
    );
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
    assert_eq!(f.goaway(), Some(E::ENHANCE_YOUR_CALM));
}

#[test]
fn completed_streams_earn_budget_back() {
    let mut c = server_with(Config {
        reset_budget: 5,
        ..Config::default()
    });
    let mut p = Peer::default();
    let mut out = Vec::new();
    let mut resp = fairlead_http::msg::Head::default();
    resp.start_response(200, None, 20);
    for i in 0..50u32 {
        let id = 1 + 4 * i;
        // One reset stream, one completed stream: the count stays low.
        let f = feed(
            &mut c,
            &cat(&[p.headers(id, GET, false), rst(id, E::CANCEL)]),
        );
        assert!(f.error.is_none(), "{i}");
        feed(&mut c, &p.headers(id + 2, GET, true));
        c.send_response(id + 2, &resp, &[], true, &mut out).unwrap();
    }
    assert!(c.glitches() <= 1);
}

#[test]
fn refused_streams_count_too() {
    let mut c = server_with(Config {
        max_concurrent_streams: 1,
        reset_budget: 10,
        ..Config::default()
    });
    let mut p = Peer::default();
    let mut b = p.headers(1, GET, false);
    for i in 1..=11u32 {
        b.extend(p.headers(1 + 2 * i, GET, false));
    }
    let f = feed(&mut c, &b);
    // The 11th refusal is written, then the budget trips.
    assert_eq!(f.resets().len(), 11);
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
}

#[test]
fn continuation_flood_is_bounded_by_the_block_limit() {
    let mut c = server();
    let mut b = raw(kind::HEADERS, 0, 1, &[0x82]);
    // Empty CONTINUATION frames: the empty-frame budget trips first.
    for _ in 0..100 {
        b.extend(raw(kind::CONTINUATION, 0, 1, &[]));
    }
    let f = feed(&mut c, &b);
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
    // Non-empty ones: the whole block limit (16 KiB) trips, without
    // waiting for END_HEADERS.
    let mut c = server();
    let mut b = raw(kind::HEADERS, 0, 1, &[0x82]);
    for _ in 0..2000 {
        b.extend(raw(kind::CONTINUATION, 0, 1, &[0x82]));
    }
    let f = feed(&mut c, &b);
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
    assert_eq!(f.error.map(|e| e.reason), Some("header block too large"));
}

#[test]
fn empty_data_flood() {
    let mut c = server();
    let mut p = Peer::default();
    let mut b = p.headers(1, POST, false);
    for _ in 0..33 {
        b.extend(data(1, b"", false));
    }
    let f = feed(&mut c, &b);
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
    // Non-empty frames in between reset the count.
    let mut c = server();
    let mut b = p.headers(1, POST, false);
    for _ in 0..100 {
        b.extend(data(1, b"", false));
        b.extend(data(1, b"x", false));
        if b.len() > 60_000 {
            break;
        }
    }
    assert!(feed(&mut c, &b).error.is_none());
}

#[test]
fn ping_and_settings_floods_without_flush() {
    let mut c = server_with(Config {
        max_pending_control: 50,
        ..Config::default()
    });
    let mut b = Vec::new();
    for _ in 0..50 {
        b.extend(raw(kind::PING, 0, 0, &[1; 8]));
    }
    let f = feed(&mut c, &b);
    assert!(f.error.is_none());
    assert_eq!(f.out.len(), 50);
    // The caller wrote its output: the count restarts.
    c.flushed();
    let f = feed(&mut c, &b);
    assert!(f.error.is_none());
    let f = feed(&mut c, &settings(&[]));
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
}

#[test]
fn hpack_bomb_hits_the_header_list_limit() {
    // One 4000-byte field indexed once, then referenced 100 times: 400 KB
    // decoded from a 4 KiB block. The stream is reset, the connection
    // lives and its table stays in step.
    let mut c = server();
    let mut p = Peer {
        enc: fairlead_h2::hpack::Encoder::with_policy(
            4096,
            fairlead_h2::hpack::encoder::Huffman::Auto,
            true,
        ),
        ..Peer::default()
    };
    let big = "a".repeat(4000);
    let first = p.headers(1, &[GET, &[("x-bomb", big.as_str())]].concat(), true);
    let f = feed(&mut c, &first);
    assert!(matches!(f.events[0], Ev::Head { stream: 1, .. }), "{f:?}");
    let mut fields = GET.to_vec();
    for _ in 0..100 {
        fields.push(("x-bomb", big.as_str()));
    }
    let bomb = p.headers(3, &fields, true);
    assert!(bomb.len() < 1000, "{}", bomb.len());
    let f = feed(&mut c, &bomb);
    assert!(f.error.is_none());
    assert_eq!(f.resets(), vec![(3, E::PROTOCOL_ERROR)]);
    let f = feed(&mut c, &p.headers(5, GET, true));
    assert!(matches!(f.events[0], Ev::Head { stream: 5, .. }), "{f:?}");
}

#[test]
fn too_many_fields() {
    let mut c = server();
    let mut p = Peer::default();
    let mut fields = GET.to_vec();
    for _ in 0..130 {
        fields.push(("x", "1"));
    }
    let f = feed(&mut c, &p.headers(1, &fields, true));
    assert_eq!(f.resets(), vec![(1, E::PROTOCOL_ERROR)]);
}

#[test]
fn oversized_frame_and_control_frame() {
    let mut c = server();
    let f = feed(&mut c, &raw(kind::DATA, 0, 1, &[0; 16385]));
    assert_eq!(f.error.map(|e| e.code), Some(E::FRAME_SIZE_ERROR));
    let mut c = server_with(Config {
        max_frame_size: 1 << 20,
        ..Config::default()
    });
    let f = feed(&mut c, &raw(kind::GOAWAY, 0, 0, &[0; 20_000]));
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
    let f = feed(
        &mut server(),
        &raw(kind::HEADERS, flag::END_HEADERS, 1, &[0x82; 16380]),
    );
    assert_eq!(f.error.map(|e| e.code), Some(E::ENHANCE_YOUR_CALM));
}

#[test]
fn idle_connection_holds_no_buffers() {
    let mut c = server();
    let mut p = Peer::default();
    feed(&mut c, &p.headers(1, GET, true));
    let mut out = Vec::new();
    let mut resp = fairlead_http::msg::Head::default();
    resp.start_response(200, None, 20);
    c.send_response(1, &resp, &[], true, &mut out).unwrap();
    assert_eq!(c.active_streams(), 0);
    // No table was used by a stateless peer; room for a few stream
    // records is kept.
    assert_eq!(c.table_bytes(), 0);
    assert!(c.stream_bytes() <= 256, "{}", c.stream_bytes());
    // After many concurrent streams, the room is given back.
    let mut fields_out = Vec::new();
    for i in 0..50u32 {
        feed(&mut c, &p.headers(3 + 2 * i, GET, true));
    }
    for i in 0..50u32 {
        c.send_response(3 + 2 * i, &resp, &[], true, &mut fields_out)
            .unwrap();
    }
    assert_eq!(c.active_streams(), 0);
    assert_eq!(c.stream_bytes(), 0);
}

#[test]
fn steady_state_decoding_reuses_pooled_heads() {
    // 41 fields, as h2#887's allocation count; after the first request
    // the pooled head's vectors have room, and later requests decoded
    // into it do not grow them (no allocation per field).
    let mut c = server();
    let mut p = Peer::indexing();
    let names: Vec<String> = (0..37).map(|i| format!("x-field-{i}")).collect();
    let mut fields = GET.to_vec();
    for n in &names {
        fields.push((n.as_str(), "some value of moderate length"));
    }
    let mut caps = Vec::new();
    let mut out = Vec::new();
    for i in 0..5u32 {
        let mut buf = p.headers(1 + 2 * i, &fields, true);
        let r = c.recv(&mut buf, &mut out).unwrap();
        let Some(fairlead_h2::Event::Head { head, .. }) = r.event else {
            panic!("{:?}", r.event);
        };
        assert_eq!(head.view(&[]).header_count(), 38);
        caps.push(head.capacity());
        fairlead_http::msg::give(head);
    }
    assert!(caps[1..].iter().all(|c| *c == caps[1]), "{caps:?}");
}
