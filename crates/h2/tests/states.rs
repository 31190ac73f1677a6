//! Connection state machine: every RFC 9113 §5.1 transition and the
//! error cases h2spec checks (sections noted per test), server role
//! unless said otherwise.

mod support;

use fairlead_h2::frame::{self, flag, kind, setting, Frame};
use fairlead_h2::{Config, Conn, ErrorCode as E, SendError};
use fairlead_http::msg::Head;
use support::*;

#[test]
fn handshake_server() {
    let mut out = Vec::new();
    let mut c = Conn::server(Config::default(), &mut out);
    let ours = frames(&out);
    assert_eq!(ours[0].kind, kind::SETTINGS);
    let s: Vec<_> = frame::settings(&ours[0].payload).collect();
    assert!(s.contains(&(setting::MAX_CONCURRENT_STREAMS, 100)));
    assert!(s.contains(&(setting::MAX_HEADER_LIST_SIZE, 16384)));
    assert_eq!(ours[1].kind, kind::WINDOW_UPDATE);
    assert_eq!(ours[1].payload, ((1u32 << 20) - 65535).to_be_bytes());
    // The preface may arrive in pieces.
    let f = feed(&mut c, &frame::PREFACE[..10]);
    assert_eq!((f.left, f.error), (10, None));
    // Unconsumed bytes stay with the caller, who feeds them again.
    let mut rest = frame::PREFACE.to_vec();
    rest.extend(settings(&[(setting::MAX_CONCURRENT_STREAMS, 10)]));
    rest.extend(raw(kind::SETTINGS, flag::ACK, 0, &[]));
    let f = feed(&mut c, &rest);
    assert_eq!(f.events, vec![Ev::Settings, Ev::SettingsAcked]);
    assert_eq!(f.kinds(), vec![kind::SETTINGS]);
    assert_eq!(f.out[0].flags, flag::ACK);
}

#[test]
fn http2_3_5_invalid_preface() {
    let mut out = Vec::new();
    let mut c = Conn::server(Config::default(), &mut out);
    let f = feed(&mut c, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    conn_error(&f, E::PROTOCOL_ERROR);
    // Every later call fails the same way, writing nothing.
    let f = feed(&mut c, frame::PREFACE);
    assert_eq!(f.error.map(|e| e.code), Some(E::PROTOCOL_ERROR));
    assert!(f.out.is_empty());
}

#[test]
fn first_frame_must_be_settings() {
    let mut out = Vec::new();
    let mut c = Conn::server(Config::default(), &mut out);
    let mut b = frame::PREFACE.to_vec();
    b.extend(raw(kind::PING, 0, 0, &[0; 8]));
    conn_error(&feed(&mut c, &b), E::PROTOCOL_ERROR);
}

#[test]
fn idle_open_half_closed_closed_get() {
    let mut c = server();
    let mut p = Peer::default();
    // idle -> half-closed (remote) on HEADERS with END_STREAM.
    let f = feed(&mut c, &p.headers(1, GET, true));
    assert_eq!(
        f.events,
        vec![Ev::Head {
            stream: 1,
            fields: vec![
                (":method".into(), "GET".into()),
                (":path".into(), "/".into()),
                ("host".into(), "example.com".into())
            ],
            end: true
        }]
    );
    assert_eq!(c.active_streams(), 1);
    // half-closed (remote) -> closed when the response ends.
    let mut out = Vec::new();
    c.send_response(1, &response(200), &[], false, &mut out)
        .unwrap();
    assert_eq!(c.send_data(1, b"hello", true, &mut out), Ok(5));
    assert_eq!(c.active_streams(), 0);
    let w = frames(&out);
    assert_eq!(w[0].kind, kind::HEADERS);
    assert_eq!(w[0].flags, flag::END_HEADERS);
    assert_eq!(
        p.decode(&w[0].payload),
        vec![(":status".into(), "200".into())]
    );
    assert_eq!(
        (w[1].kind, w[1].flags, &w[1].payload[..]),
        (kind::DATA, flag::END_STREAM, &b"hello"[..])
    );
    // Sending on a closed stream is refused.
    assert_eq!(
        c.send_data(1, b"x", true, &mut out),
        Err(SendError::StreamClosed)
    );
}

#[test]
fn open_with_body_and_trailers_both_ways() {
    let mut c = server();
    let mut p = Peer::default();
    let b = cat(&[
        p.headers(3, &[POST, &[("content-length", "6")]].concat(), false),
        data(3, b"abc", false),
        data(3, b"def", false),
        p.headers(3, &[("x-checksum", "1")], true),
    ]);
    let f = feed(&mut c, &b);
    assert_eq!(f.events.len(), 4, "{f:?}");
    assert!(matches!(
        &f.events[0],
        Ev::Head {
            stream: 3,
            end: false,
            ..
        }
    ));
    assert_eq!(
        f.events[1],
        Ev::Data {
            stream: 3,
            data: b"abc".to_vec(),
            end: false
        }
    );
    assert_eq!(
        f.events[2],
        Ev::Data {
            stream: 3,
            data: b"def".to_vec(),
            end: false
        }
    );
    assert_eq!(
        f.events[3],
        Ev::Trailers {
            stream: 3,
            fields: vec![("x-checksum".into(), "1".into())]
        }
    );
    // Open (local side): response, data, trailers.
    let mut out = Vec::new();
    c.send_response(3, &response(200), &[], false, &mut out)
        .unwrap();
    c.send_data(3, b"ok", false, &mut out).unwrap();
    let mut t = Head::default();
    t.start_request(b"", b"", 20);
    t.append_field(b"grpc-status", b"0");
    c.send_trailers(3, &t, &[], &mut out).unwrap();
    assert_eq!(c.active_streams(), 0);
    let w = frames(&out);
    assert_eq!(w.len(), 3);
    assert_eq!(w[2].flags, flag::END_HEADERS | flag::END_STREAM);
    p.decode(&w[0].payload);
    assert_eq!(
        p.decode(&w[2].payload),
        vec![("grpc-status".into(), "0".into())]
    );
}

#[test]
fn half_closed_local_then_peer_ends() {
    let mut c = server();
    let mut p = Peer::default();
    feed(&mut c, &p.headers(1, POST, false));
    let mut out = Vec::new();
    c.send_response(1, &response(200), &[], true, &mut out)
        .unwrap();
    // half-closed (local): still receiving.
    assert_eq!(c.active_streams(), 1);
    let f = feed(&mut c, &data(1, b"late", true));
    assert_eq!(
        f.events,
        vec![Ev::Data {
            stream: 1,
            data: b"late".to_vec(),
            end: true
        }]
    );
    assert_eq!(c.active_streams(), 0);
}

#[test]
fn http2_5_1_idle_frames() {
    let mut p = Peer::default();
    conn_error(
        &feed(&mut server(), &data(1, b"test", true)),
        E::PROTOCOL_ERROR,
    );
    conn_error(&feed(&mut server(), &rst(1, E::CANCEL)), E::PROTOCOL_ERROR);
    conn_error(
        &feed(&mut server(), &window_update(1, 100)),
        E::PROTOCOL_ERROR,
    );
    let block = p.block(GET);
    let f = feed(
        &mut server(),
        &raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block),
    );
    conn_error(&f, E::PROTOCOL_ERROR);
    // PRIORITY on an idle stream is fine and opens nothing.
    let mut c = server();
    let f = feed(&mut c, &raw(kind::PRIORITY, 0, 9, &[0, 0, 0, 0, 15]));
    assert!(f.error.is_none() && f.out.is_empty() && f.events.is_empty());
    assert_eq!(c.active_streams(), 0);
}

#[test]
fn http2_5_1_half_closed_remote() {
    let mut p = Peer::default();
    let mut c = server();
    let f = feed(
        &mut c,
        &cat(&[p.headers(1, GET, true), data(1, b"test", true)]),
    );
    stream_error(&f, 1, E::STREAM_CLOSED);
    assert!(matches!(
        f.events[1],
        Ev::Reset {
            stream: 1,
            code: E::STREAM_CLOSED,
            remote: false
        }
    ));
    let mut p = Peer::indexing();
    let mut c = server();
    let f = feed(
        &mut c,
        &cat(&[p.headers(1, GET, true), p.headers(1, GET, true)]),
    );
    stream_error(&f, 1, E::STREAM_CLOSED);
    // The HPACK table stayed in step: a new stream decodes fine.
    let f = feed(&mut c, &p.headers(3, GET, true));
    assert!(matches!(f.events[0], Ev::Head { stream: 3, .. }), "{f:?}");
    // WINDOW_UPDATE, PRIORITY and RST_STREAM remain allowed.
    let f = feed(
        &mut c,
        &cat(&[
            window_update(3, 10),
            raw(kind::PRIORITY, 0, 3, &[0, 0, 0, 0, 1]),
        ]),
    );
    assert_eq!(f.events, vec![Ev::Window(3)]);
    let f = feed(&mut c, &rst(3, E::CANCEL));
    assert_eq!(
        f.events,
        vec![Ev::Reset {
            stream: 3,
            code: E::CANCEL,
            remote: true
        }]
    );
}

#[test]
fn http2_5_1_closed_after_peer_reset() {
    let mut p = Peer::default();
    let mut c = server();
    feed(
        &mut c,
        &cat(&[p.headers(1, POST, false), rst(1, E::CANCEL)]),
    );
    assert_eq!(c.active_streams(), 0);
    stream_error(&feed(&mut c, &data(1, b"test", true)), 1, E::STREAM_CLOSED);
    let mut c = server();
    feed(
        &mut c,
        &cat(&[p.headers(1, POST, false), rst(1, E::CANCEL)]),
    );
    stream_error(&feed(&mut c, &p.headers(1, GET, true)), 1, E::STREAM_CLOSED);
}

#[test]
fn http2_5_1_closed_after_end_stream() {
    let mut p = Peer::default();
    let mut out = Vec::new();
    let mut c = server();
    feed(&mut c, &p.headers(1, GET, true));
    c.send_response(1, &response(204), &[], true, &mut out)
        .unwrap();
    conn_error(&feed(&mut c, &data(1, b"test", true)), E::STREAM_CLOSED);
    let mut c = server();
    feed(&mut c, &p.headers(1, GET, true));
    c.send_response(1, &response(204), &[], true, &mut out)
        .unwrap();
    conn_error(&feed(&mut c, &p.headers(1, GET, true)), E::STREAM_CLOSED);
}

#[test]
fn frames_on_streams_we_reset_are_ignored() {
    let mut p = Peer::indexing();
    let mut c = server();
    feed(&mut c, &p.headers(1, POST, false));
    let mut out = Vec::new();
    c.reset(1, E::CANCEL, &mut out);
    assert_eq!(frames(&out)[0].code(), Some(E::CANCEL));
    let f = feed(
        &mut c,
        &cat(&[data(1, b"x", false), p.headers(1, &[("a", "b")], true)]),
    );
    assert!(
        f.error.is_none() && f.events.is_empty() && f.resets().is_empty(),
        "{f:?}"
    );
    // The HPACK table followed the ignored block.
    let f = feed(&mut c, &p.headers(3, GET, true));
    assert!(matches!(f.events[0], Ev::Head { stream: 3, .. }), "{f:?}");
}

#[test]
fn http2_5_1_1_stream_identifiers() {
    let mut p = Peer::default();
    conn_error(
        &feed(&mut server(), &p.headers(2, GET, true)),
        E::PROTOCOL_ERROR,
    );
    let mut c = server();
    let f = feed(
        &mut c,
        &cat(&[p.headers(5, GET, true), p.headers(3, GET, true)]),
    );
    conn_error(&f, E::PROTOCOL_ERROR);
}

#[test]
fn http2_5_1_2_concurrency_refused() {
    let mut p = Peer::indexing();
    let mut c = server_with(Config {
        max_concurrent_streams: 2,
        ..Config::default()
    });
    let f = feed(
        &mut c,
        &cat(&[
            p.headers(1, GET, true),
            p.headers(3, GET, true),
            p.headers(5, GET, true),
        ]),
    );
    stream_error(&f, 5, E::REFUSED_STREAM);
    assert_eq!(c.active_streams(), 2);
    // Once one ends, a new one is accepted (HPACK still in step).
    let mut out = Vec::new();
    c.send_response(1, &response(200), &[], true, &mut out)
        .unwrap();
    let f = feed(&mut c, &p.headers(7, GET, true));
    assert!(matches!(f.events[0], Ev::Head { stream: 7, .. }), "{f:?}");
}

#[test]
fn http2_5_3_1_self_dependency() {
    let mut p = Peer::default();
    let block = p.block(GET);
    let mut b = Vec::new();
    Frame::Headers {
        stream: 1,
        block: &block,
        end_stream: true,
        end_headers: true,
        priority: Some(frame::Priority {
            dependency: 1,
            exclusive: false,
            weight: 0,
        }),
        pad: 0,
    }
    .encode(&mut b);
    let mut c = server();
    stream_error(&feed(&mut c, &b), 1, E::PROTOCOL_ERROR);
    let mut c = server();
    stream_error(
        &feed(&mut c, &raw(kind::PRIORITY, 0, 3, &[0, 0, 0, 3, 0])),
        3,
        E::PROTOCOL_ERROR,
    );
}

#[test]
fn http2_5_5_unknown_frames() {
    let mut c = server();
    let f = feed(&mut c, &raw(0xfe, 0xff, 0, b"whatever"));
    assert!(f.error.is_none() && f.out.is_empty() && f.events.is_empty() && f.left == 0);
    // An unknown frame inside a header block is a connection error.
    let mut p = Peer::default();
    let block = p.block(GET);
    let b = cat(&[
        raw(kind::HEADERS, 0, 1, &block[..2]),
        raw(0xfe, 0, 1, b""),
        raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block[2..]),
    ]);
    conn_error(&feed(&mut server(), &b), E::PROTOCOL_ERROR);
}

#[test]
fn continuation_reassembled_in_place() {
    let mut p = Peer::default();
    let mut fields = GET.to_vec();
    let long = "v".repeat(50);
    fields.push(("x-long", &long));
    let block = p.block(&fields);
    let b = cat(&[
        raw(kind::HEADERS, flag::END_STREAM, 1, &block[..5]),
        raw(kind::CONTINUATION, 0, 1, &block[5..20]),
        raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block[20..]),
    ]);
    let mut c = server();
    // Incomplete: nothing consumed.
    let f = feed(&mut c, &b[..b.len() - 1]);
    assert_eq!((f.left, f.events.len()), (b.len() - 1, 0));
    let f = feed(&mut c, &b);
    assert_eq!(f.left, 0);
    match &f.events[0] {
        Ev::Head {
            fields, end: true, ..
        } => assert_eq!(fields.last().unwrap().1, long),
        e => panic!("{e:?}"),
    }
}

#[test]
fn http2_6_2_and_6_10_header_block_interleaving() {
    let mut p = Peer::default();
    let block = p.block(GET);
    // HEADERS without END_HEADERS then PRIORITY / DATA / other stream.
    for next in [
        raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 0]),
        data(1, b"x", true),
        raw(kind::CONTINUATION, flag::END_HEADERS, 3, &block),
    ] {
        let b = cat(&[raw(kind::HEADERS, 0, 1, &block), next]);
        conn_error(&feed(&mut server(), &b), E::PROTOCOL_ERROR);
    }
    // CONTINUATION after a complete HEADERS.
    let b = cat(&[
        p.headers(1, GET, false),
        raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block),
    ]);
    conn_error(&feed(&mut server(), &b), E::PROTOCOL_ERROR);
}

#[test]
fn http2_6_1_data_checks() {
    let mut p = Peer::default();
    conn_error(
        &feed(&mut server(), &raw(kind::DATA, 0, 0, b"x")),
        E::PROTOCOL_ERROR,
    );
    let b = cat(&[
        p.headers(1, POST, false),
        raw(kind::DATA, flag::PADDED, 1, &[4, 1, 2]),
    ]);
    conn_error(&feed(&mut server(), &b), E::PROTOCOL_ERROR);
    // Padding is stripped and its bytes are not delivered.
    let mut c = server();
    let b = cat(&[
        p.headers(1, POST, false),
        raw(
            kind::DATA,
            flag::PADDED | flag::END_STREAM,
            1,
            &[2, b'h', b'i', 0, 0],
        ),
    ]);
    let f = feed(&mut c, &b);
    assert_eq!(
        f.events[1],
        Ev::Data {
            stream: 1,
            data: b"hi".to_vec(),
            end: true
        }
    );
}

#[test]
fn data_delivered_as_it_arrives() {
    let mut p = Peer::default();
    let mut c = server();
    feed(&mut c, &p.headers(1, POST, false));
    let d = data(1, b"0123456789", true);
    let mut out = Vec::new();
    let mut buf = d[..13].to_vec();
    let r = c.recv(&mut buf, &mut out).unwrap();
    assert_eq!(r.consumed, 13);
    assert!(matches!(
        r.event,
        Some(fairlead_h2::Event::Data {
            data: b"0123",
            end_stream: false,
            ..
        })
    ));
    let mut buf = d[13..].to_vec();
    let r = c.recv(&mut buf, &mut out).unwrap();
    assert_eq!(r.consumed, 6);
    assert!(matches!(
        r.event,
        Some(fairlead_h2::Event::Data {
            data: b"456789",
            end_stream: true,
            ..
        })
    ));
}

#[test]
fn http2_6_4_and_6_7_and_6_8_control_frames() {
    conn_error(&feed(&mut server(), &rst(0, E::CANCEL)), E::PROTOCOL_ERROR);
    let mut p = Peer::default();
    let b = cat(&[
        p.headers(1, POST, false),
        raw(kind::RST_STREAM, 0, 1, &[0, 0, 0]),
    ]);
    conn_error(&feed(&mut server(), &b), E::FRAME_SIZE_ERROR);
    // PING: answered with the same payload; an ACK is not answered.
    let mut c = server();
    let f = feed(&mut c, &raw(kind::PING, 0, 0, b"pingdata"));
    assert_eq!(
        (f.out[0].flags, &f.out[0].payload[..]),
        (flag::ACK, &b"pingdata"[..])
    );
    let f = feed(&mut c, &raw(kind::PING, flag::ACK, 0, b"pongdata"));
    assert!(f.out.is_empty());
    assert_eq!(f.events, vec![Ev::Pong(*b"pongdata")]);
    conn_error(
        &feed(&mut server(), &raw(kind::PING, 0, 1, &[0; 8])),
        E::PROTOCOL_ERROR,
    );
    conn_error(
        &feed(&mut server(), &raw(kind::PING, 0, 0, &[0; 6])),
        E::FRAME_SIZE_ERROR,
    );
    conn_error(
        &feed(&mut server(), &raw(kind::GOAWAY, 0, 1, &[0; 8])),
        E::PROTOCOL_ERROR,
    );
    // PRIORITY of a wrong length: a stream error.
    stream_error(
        &feed(&mut server(), &raw(kind::PRIORITY, 0, 1, &[0; 4])),
        1,
        E::FRAME_SIZE_ERROR,
    );
    conn_error(
        &feed(&mut server(), &raw(kind::PRIORITY, 0, 0, &[0; 5])),
        E::PROTOCOL_ERROR,
    );
}

#[test]
fn http2_6_5_settings() {
    conn_error(
        &feed(&mut server(), &raw(kind::SETTINGS, flag::ACK, 0, &[0; 6])),
        E::FRAME_SIZE_ERROR,
    );
    conn_error(
        &feed(&mut server(), &raw(kind::SETTINGS, 0, 1, &[])),
        E::PROTOCOL_ERROR,
    );
    conn_error(
        &feed(&mut server(), &raw(kind::SETTINGS, 0, 0, &[0; 3])),
        E::FRAME_SIZE_ERROR,
    );
    conn_error(
        &feed(&mut server(), &settings(&[(setting::ENABLE_PUSH, 2)])),
        E::PROTOCOL_ERROR,
    );
    conn_error(
        &feed(
            &mut server(),
            &settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 31)]),
        ),
        E::FLOW_CONTROL_ERROR,
    );
    conn_error(
        &feed(
            &mut server(),
            &settings(&[(setting::MAX_FRAME_SIZE, 16383)]),
        ),
        E::PROTOCOL_ERROR,
    );
    conn_error(
        &feed(
            &mut server(),
            &settings(&[(setting::MAX_FRAME_SIZE, 1 << 24)]),
        ),
        E::PROTOCOL_ERROR,
    );
    // Unknown settings are ignored; the frame is acknowledged.
    let f = feed(&mut server(), &settings(&[(0xff, 1)]));
    assert_eq!((f.out[0].kind, f.out[0].flags), (kind::SETTINGS, flag::ACK));
}
