//! Flow control, malformed messages, GOAWAY and shutdown, and the client
//! role: the rest of the RFC 9113 state-machine tests (sections noted per
//! test), server role unless said otherwise.

mod support;

use fairlead_h2::frame::{self, flag, kind, setting};
use fairlead_h2::{Config, Conn, ErrorCode as E, Role, SendError};
use fairlead_http::msg::Head;
use support::*;

#[test]
fn http2_6_9_window_update() {
    let mut p = Peer::default();
    conn_error(
        &feed(&mut server(), &window_update(0, 0)),
        E::PROTOCOL_ERROR,
    );
    let b = cat(&[p.headers(1, GET, false), window_update(1, 0)]);
    stream_error(&feed(&mut server(), &b), 1, E::PROTOCOL_ERROR);
    conn_error(
        &feed(&mut server(), &raw(kind::WINDOW_UPDATE, 0, 0, &[0; 3])),
        E::FRAME_SIZE_ERROR,
    );
    // 6.9.1: overflow.
    conn_error(
        &feed(&mut server(), &window_update(0, (1 << 31) - 1)),
        E::FLOW_CONTROL_ERROR,
    );
    let b = cat(&[p.headers(1, GET, false), window_update(1, (1 << 31) - 1)]);
    stream_error(&feed(&mut server(), &b), 1, E::FLOW_CONTROL_ERROR);
}

#[test]
fn send_windows_and_initial_window_changes() {
    let mut p = Peer::default();
    let mut c = server();
    feed(
        &mut c,
        &cat(&[
            settings(&[(setting::INITIAL_WINDOW_SIZE, 10)]),
            p.headers(1, GET, true),
        ]),
    );
    let mut out = Vec::new();
    c.send_response(1, &response(200), &[], false, &mut out)
        .unwrap();
    assert_eq!(c.send_capacity(1), 10);
    assert_eq!(c.send_data(1, &[7; 25], true, &mut out), Ok(10));
    assert_eq!(c.send_capacity(1), 0);
    // 6.9.2: the window may go negative, then the peer reopens it.
    feed(&mut c, &settings(&[(setting::INITIAL_WINDOW_SIZE, 5)]));
    assert_eq!(c.send_capacity(1), 0);
    let f = feed(&mut c, &window_update(1, 8));
    assert_eq!(f.events, vec![Ev::Window(1)]);
    assert_eq!(c.send_capacity(1), 3);
    feed(&mut c, &window_update(1, 100));
    // Overflow through SETTINGS.
    let f = feed(
        &mut c,
        &settings(&[(setting::INITIAL_WINDOW_SIZE, (1 << 31) - 1)]),
    );
    conn_error(&f, E::FLOW_CONTROL_ERROR);
}

#[test]
fn data_frames_split_at_peer_frame_size_and_conn_window() {
    let mut p = Peer::default();
    let mut c = server();
    feed(
        &mut c,
        &cat(&[
            settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 20)]),
            p.headers(1, GET, true),
        ]),
    );
    let mut out = Vec::new();
    c.send_response(1, &response(200), &[], false, &mut out)
        .unwrap();
    out.clear();
    // The connection window is still 65535.
    let body = vec![1u8; 100_000];
    assert_eq!(c.send_data(1, &body, true, &mut out), Ok(65535));
    let w = frames(&out);
    assert_eq!(w.len(), 4);
    assert!(w
        .iter()
        .all(|f| f.kind == kind::DATA && f.flags == 0 && f.payload.len() <= 16384));
    feed(&mut c, &window_update(0, 100_000));
    out.clear();
    assert_eq!(c.send_data(1, &body[65535..], true, &mut out), Ok(34465));
    assert_eq!(frames(&out).last().unwrap().flags, flag::END_STREAM);
}

#[test]
fn receive_flow_control_and_window_updates() {
    let mut p = Peer::default();
    let mut c = server();
    feed(&mut c, &p.headers(1, POST, false));
    let chunk = vec![0u8; 16384];
    let mut b = Vec::new();
    for _ in 0..3 {
        b.extend(data(1, &chunk, false));
    }
    let f = feed(&mut c, &b);
    assert_eq!(f.events.len(), 3);
    assert!(f.out.is_empty());
    // Releasing half the stream window sends a stream WINDOW_UPDATE.
    let mut out = Vec::new();
    c.release(1, 32768, &mut out);
    let w = frames(&out);
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].kind, w[0].stream), (kind::WINDOW_UPDATE, 1));
    assert_eq!(w[0].payload, 32768u32.to_be_bytes());
    // Past the stream window: FLOW_CONTROL_ERROR on the stream.
    let mut c = server();
    feed(&mut c, &p.headers(1, POST, false));
    let mut b = Vec::new();
    for _ in 0..4 {
        b.extend(data(1, &chunk, false));
    }
    b.extend(data(1, &[0; 5], false));
    let f = feed(&mut c, &b);
    stream_error(&f, 1, E::FLOW_CONTROL_ERROR);
}

#[test]
fn connection_window_overflow_is_a_connection_error() {
    let mut p = Peer::default();
    let mut c = server_with(Config {
        connection_window_size: 65535,
        initial_window_size: 1 << 20,
        ..Config::default()
    });
    feed(
        &mut c,
        &cat(&[
            raw(kind::SETTINGS, flag::ACK, 0, &[]),
            p.headers(1, POST, false),
        ]),
    );
    let chunk = vec![0u8; 16384];
    let mut b = Vec::new();
    for _ in 0..4 {
        b.extend(data(1, &chunk, false));
    }
    b.extend(data(1, &[0; 5], false));
    conn_error(&feed(&mut c, &b), E::FLOW_CONTROL_ERROR);
}

#[test]
fn http2_8_1_malformed_requests_reset_the_stream() {
    let mut p = Peer::default();
    let cases: Vec<Vec<(&str, &str)>> = vec![
        [GET, &[("Upper", "x")]].concat(),
        [GET, &[("connection", "close")]].concat(),
        [GET, &[("te", "gzip")]].concat(),
        GET[1..].to_vec(),
        vec![(":method", "GET"), (":scheme", "http"), (":path", "")],
        [GET, &[(":path", "/")]].concat(),
        [&[("x", "1")], GET].concat(),
    ];
    for f in cases {
        let mut p = Peer::indexing();
        let mut c = server();
        let r = feed(&mut c, &p.headers(1, &f, true));
        stream_error(&r, 1, E::PROTOCOL_ERROR);
        assert!(r.events.is_empty(), "{r:?}");
        // HPACK stays in step.
        let r = feed(&mut c, &p.headers(3, GET, true));
        assert!(matches!(r.events[0], Ev::Head { stream: 3, .. }), "{r:?}");
    }
    // A second HEADERS without END_STREAM (8.1).
    let mut c = server();
    let r = feed(
        &mut c,
        &cat(&[
            p.headers(1, POST, false),
            p.headers(1, &[("x", "1")], false),
        ]),
    );
    stream_error(&r, 1, E::PROTOCOL_ERROR);
    // Trailers with a pseudo-header.
    let mut c = server();
    let r = feed(
        &mut c,
        &cat(&[
            p.headers(1, POST, false),
            p.headers(1, &[(":path", "/")], true),
        ]),
    );
    stream_error(&r, 1, E::PROTOCOL_ERROR);
}

#[test]
fn http2_8_1_2_6_content_length_mismatch() {
    let mut p = Peer::default();
    let post = [POST, &[("content-length", "4")]].concat();
    let r = feed(
        &mut server(),
        &cat(&[p.headers(1, &post, false), data(1, b"abc", true)]),
    );
    stream_error(&r, 1, E::PROTOCOL_ERROR);
    let r = feed(
        &mut server(),
        &cat(&[
            p.headers(1, &post, false),
            data(1, b"abc", false),
            data(1, b"de", true),
        ]),
    );
    stream_error(&r, 1, E::PROTOCOL_ERROR);
    let r = feed(&mut server(), &p.headers(1, &post, true));
    stream_error(&r, 1, E::PROTOCOL_ERROR);
}

#[test]
fn http2_8_2_push_promise_refused() {
    let b = raw(
        kind::PUSH_PROMISE,
        flag::END_HEADERS,
        1,
        &[0, 0, 0, 2, 0x82],
    );
    conn_error(&feed(&mut server(), &b), E::PROTOCOL_ERROR);
}

#[test]
fn hpack_errors_are_compression_errors() {
    let b = raw(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &[0xbf],
    );
    conn_error(&feed(&mut server(), &b), E::COMPRESSION_ERROR);
    let b = raw(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &[0x82, 0x3f, 0xe1, 0x1f],
    );
    conn_error(&feed(&mut server(), &b), E::COMPRESSION_ERROR);
}

#[test]
fn goaway_received_stops_new_streams() {
    let mut out = Vec::new();
    let mut c = Conn::client(Config::default(), &mut out);
    feed(&mut c, &settings(&[]));
    let mut req = Head::default();
    req.start_request(b"GET", b"/", 20);
    let s1 = c.send_request(&req, &[], true, &mut out).unwrap();
    let s3 = c.send_request(&req, &[], true, &mut out).unwrap();
    assert_eq!((s1, s3), (1, 3));
    let mut g = Vec::new();
    frame::write_goaway(&mut g, 1, E::NO_ERROR, b"bye");
    let f = feed(&mut c, &g);
    assert_eq!(
        f.events,
        vec![Ev::GoAway {
            last: 1,
            code: E::NO_ERROR
        }]
    );
    // Stream 3 was not processed: forgotten.
    assert_eq!(c.active_streams(), 1);
    assert_eq!(
        c.send_request(&req, &[], true, &mut out),
        Err(SendError::GoingAway)
    );
    assert_eq!(c.role(), Role::Client);
}

#[test]
fn graceful_shutdown_two_steps() {
    let mut p = Peer::default();
    let mut c = server();
    feed(&mut c, &p.headers(1, GET, true));
    let mut out = Vec::new();
    c.shutdown(&mut out);
    let w = frames(&out);
    assert_eq!(
        (w[0].kind, &w[0].payload[..4]),
        (kind::GOAWAY, &[0x7f, 0xff, 0xff, 0xff][..])
    );
    assert_eq!(w[1].kind, kind::PING);
    // A stream opened meanwhile is still served.
    let f = feed(&mut c, &p.headers(3, GET, true));
    assert!(matches!(f.events[0], Ev::Head { stream: 3, .. }));
    let f = feed(&mut c, &raw(kind::PING, flag::ACK, 0, &w[1].payload));
    assert_eq!(f.out.len(), 1);
    assert_eq!(f.out[0].payload[..8], [0, 0, 0, 3, 0, 0, 0, 0]);
    assert!(!c.is_done());
    // Later streams are ignored.
    let f = feed(&mut c, &p.headers(5, GET, true));
    assert!(f.events.is_empty() && f.out.is_empty());
    out.clear();
    c.send_response(1, &response(200), &[], true, &mut out)
        .unwrap();
    c.send_response(3, &response(200), &[], true, &mut out)
        .unwrap();
    assert!(c.is_done());
}

#[test]
fn client_role_with_informational_and_trailers() {
    let mut out = Vec::new();
    let mut c = Conn::client(Config::default(), &mut out);
    assert!(out.starts_with(frame::PREFACE));
    let s = frames(&out);
    assert!(frame::settings(&s[0].payload).any(|x| x == (setting::ENABLE_PUSH, 0)));
    feed(&mut c, &settings(&[]));
    let mut req = Head::default();
    req.start_request(b"POST", b"/x", 20);
    req.set_part(fairlead_http::Part::Authority, b"example.com");
    out.clear();
    let id = c.send_request(&req, &[], false, &mut out).unwrap();
    assert_eq!(c.send_data(id, b"body", true, &mut out), Ok(4));
    let mut p = Peer::default();
    let w = frames(&out);
    assert_eq!(
        p.decode(&w[0].payload),
        vec![
            (":method".into(), "POST".into()),
            (":scheme".into(), "http".into()),
            (":path".into(), "/x".into()),
            (":authority".into(), "example.com".into())
        ]
    );
    let b = cat(&[
        p.headers(id, &[(":status", "100")], false),
        p.headers(id, &[(":status", "200")], false),
        data(id, b"resp", false),
        p.headers(id, &[("grpc-status", "0")], true),
    ]);
    let f = feed(&mut c, &b);
    assert_eq!(f.events.len(), 4, "{f:?}");
    assert!(matches!(&f.events[0], Ev::Head { fields, end: false, .. } if fields[0].1 == "100"));
    assert!(matches!(&f.events[1], Ev::Head { fields, end: false, .. } if fields[0].1 == "200"));
    assert!(matches!(&f.events[3], Ev::Trailers { .. }));
    assert_eq!(c.active_streams(), 0);
    // Even stream ids (push) are refused.
    let f = feed(&mut c, &p.headers(2, &[(":status", "200")], true));
    conn_error(&f, E::PROTOCOL_ERROR);
}

#[test]
fn client_respects_peer_max_concurrent_streams() {
    let mut out = Vec::new();
    let mut c = Conn::client(Config::default(), &mut out);
    feed(&mut c, &settings(&[(setting::MAX_CONCURRENT_STREAMS, 1)]));
    let mut req = Head::default();
    req.start_request(b"GET", b"/", 20);
    c.send_request(&req, &[], true, &mut out).unwrap();
    assert_eq!(
        c.send_request(&req, &[], true, &mut out),
        Err(SendError::TooManyStreams)
    );
}

#[test]
fn large_header_block_split_into_continuation() {
    let mut p = Peer::default();
    let mut c = server();
    feed(&mut c, &p.headers(1, GET, true));
    let mut h = response(200);
    let big = "x".repeat(20_000);
    h.append_field(b"x-big", big.as_bytes());
    let mut out = Vec::new();
    c.send_response(1, &h, &[], true, &mut out).unwrap();
    let w = frames(&out);
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].kind, w[0].flags), (kind::HEADERS, flag::END_STREAM));
    assert_eq!(
        (w[1].kind, w[1].flags),
        (kind::CONTINUATION, flag::END_HEADERS)
    );
    let block = [w[0].payload.clone(), w[1].payload.clone()].concat();
    let fields = p.decode(&block);
    assert_eq!(fields[1].0, "x-big");
    assert_eq!(fields[1].1.len(), 20_000);
}

#[test]
fn can_open_stream_follows_the_peer_limit_and_goaway() {
    let mut out = Vec::new();
    let mut c = Conn::client(Config::default(), &mut out);
    assert!(c.can_open_stream(), "before the peer's SETTINGS");
    feed(&mut c, &settings(&[(setting::MAX_CONCURRENT_STREAMS, 2)]));
    let mut req = Head::default();
    req.start_request(b"GET", b"/", 20);
    let s1 = c.send_request(&req, &[], true, &mut out).unwrap();
    assert!(c.can_open_stream());
    c.send_request(&req, &[], true, &mut out).unwrap();
    assert!(!c.can_open_stream(), "two streams open, the limit");
    assert_eq!(
        c.send_request(&req, &[], true, &mut out),
        Err(SendError::TooManyStreams)
    );
    let mut p = Peer::default();
    feed(&mut c, &p.headers(s1, &[(":status", "200")], true));
    assert!(c.can_open_stream(), "one closed");
    let mut g = Vec::new();
    frame::write_goaway(&mut g, 3, E::NO_ERROR, b"");
    feed(&mut c, &g);
    assert!(!c.can_open_stream(), "going away");
    let s = Conn::server(Config::default(), &mut out);
    assert!(!s.can_open_stream(), "servers open no stream");
}
