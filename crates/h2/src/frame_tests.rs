use super::*;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    write_header(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

fn one(b: &[u8]) -> Result<Frame<'_>, FrameError> {
    match parse(b, DEFAULT_MAX_FRAME_SIZE)? {
        Parsed::Frame(n, f) => {
            assert_eq!(n, b.len());
            Ok(f)
        }
        Parsed::Incomplete => panic!("incomplete"),
    }
}

fn roundtrip(f: Frame<'_>) {
    let mut out = Vec::new();
    f.encode(&mut out);
    assert_eq!(one(&out).unwrap(), f, "{out:?}");
}

#[test]
fn every_frame_type_round_trips() {
    let pr = Priority {
        dependency: 3,
        exclusive: true,
        weight: 15,
    };
    roundtrip(Frame::Data {
        stream: 1,
        data: b"hello",
        end_stream: true,
        pad: 0,
    });
    roundtrip(Frame::Data {
        stream: 1,
        data: b"hello",
        end_stream: false,
        pad: 4,
    });
    roundtrip(Frame::Headers {
        stream: 5,
        block: b"\x82\x86",
        end_stream: false,
        end_headers: true,
        priority: Some(pr),
        pad: 3,
    });
    roundtrip(Frame::Headers {
        stream: 5,
        block: b"\x82",
        end_stream: true,
        end_headers: false,
        priority: None,
        pad: 0,
    });
    roundtrip(Frame::Priority {
        stream: 7,
        priority: pr,
    });
    roundtrip(Frame::RstStream {
        stream: 7,
        code: ErrorCode::CANCEL,
    });
    roundtrip(Frame::Settings {
        ack: false,
        payload: &[0, 3, 0, 0, 0, 100],
    });
    roundtrip(Frame::Settings {
        ack: true,
        payload: &[],
    });
    roundtrip(Frame::PushPromise {
        stream: 1,
        promised: 2,
        block: b"\x82",
        end_headers: true,
        pad: 2,
    });
    roundtrip(Frame::Ping {
        ack: true,
        data: *b"12345678",
    });
    roundtrip(Frame::GoAway {
        last_stream: 9,
        code: ErrorCode::ENHANCE_YOUR_CALM,
        debug: b"bye",
    });
    roundtrip(Frame::WindowUpdate {
        stream: 0,
        increment: 1000,
    });
    roundtrip(Frame::Continuation {
        stream: 3,
        block: b"abc",
        end_headers: true,
    });
    roundtrip(Frame::Unknown {
        kind: 0xfa,
        stream: 3,
    });
}

#[test]
fn incomplete_until_whole_frame() {
    let f = frame(kind::PING, 0, 0, b"12345678");
    for n in 0..f.len() {
        assert_eq!(parse(&f[..n], 16384), Ok(Parsed::Incomplete), "{n}");
    }
    assert!(matches!(parse(&f, 16384), Ok(Parsed::Frame(17, _))));
}

#[test]
fn oversized_frame_refused_from_header_alone() {
    let mut h = Vec::new();
    write_header(&mut h, 16385, kind::DATA, 0, 1);
    let e = parse(&h, 16384).unwrap_err();
    assert_eq!(e.code, ErrorCode::FRAME_SIZE_ERROR);
    assert_eq!(e.stream, None);
    let mut h = Vec::new();
    write_header(&mut h, 16385, kind::DATA, 0, 1);
    assert_eq!(parse(&h, 20000), Ok(Parsed::Incomplete));
}

#[test]
fn reserved_bit_is_ignored() {
    let mut f = frame(kind::WINDOW_UPDATE, 0, 1, &[0x80, 0, 0, 5]);
    f[5] |= 0x80;
    assert_eq!(
        one(&f).unwrap(),
        Frame::WindowUpdate {
            stream: 1,
            increment: 5
        }
    );
}

fn err(b: &[u8]) -> (ErrorCode, Option<u32>) {
    let e = one(b).unwrap_err();
    (e.code, e.stream)
}

#[test]
fn malformed_frames() {
    use ErrorCode as E;
    let pe = (E::PROTOCOL_ERROR, None);
    let fs = (E::FRAME_SIZE_ERROR, None);
    assert_eq!(err(&frame(kind::DATA, 0, 0, b"x")), pe);
    // Padding as long as the payload.
    assert_eq!(err(&frame(kind::DATA, flag::PADDED, 1, &[3, 0, 0])), pe);
    assert_eq!(err(&frame(kind::DATA, flag::PADDED, 1, &[])), pe);
    assert_eq!(err(&frame(kind::HEADERS, flag::PADDED, 1, &[5, 1])), pe);
    assert_eq!(err(&frame(kind::HEADERS, 0, 0, b"\x82")), pe);
    assert_eq!(err(&frame(kind::HEADERS, flag::PRIORITY, 1, &[0; 4])), fs);
    assert_eq!(err(&frame(kind::PRIORITY, 0, 0, &[0; 5])), pe);
    assert_eq!(
        err(&frame(kind::PRIORITY, 0, 1, &[0; 4])),
        (E::FRAME_SIZE_ERROR, Some(1))
    );
    assert_eq!(
        err(&frame(kind::PRIORITY, 0, 1, &[0, 0, 0, 1, 0])),
        (E::PROTOCOL_ERROR, Some(1))
    );
    assert_eq!(err(&frame(kind::RST_STREAM, 0, 0, &[0; 4])), pe);
    assert_eq!(err(&frame(kind::RST_STREAM, 0, 1, &[0; 3])), fs);
    assert_eq!(err(&frame(kind::SETTINGS, 0, 1, &[])), pe);
    assert_eq!(err(&frame(kind::SETTINGS, flag::ACK, 0, &[0; 6])), fs);
    assert_eq!(err(&frame(kind::SETTINGS, 0, 0, &[0; 5])), fs);
    assert_eq!(err(&frame(kind::PUSH_PROMISE, 0, 1, &[0; 3])), fs);
    assert_eq!(err(&frame(kind::PING, 0, 1, &[0; 8])), pe);
    assert_eq!(err(&frame(kind::PING, 0, 0, &[0; 7])), fs);
    assert_eq!(err(&frame(kind::GOAWAY, 0, 1, &[0; 8])), pe);
    assert_eq!(err(&frame(kind::GOAWAY, 0, 0, &[0; 7])), fs);
    assert_eq!(err(&frame(kind::WINDOW_UPDATE, 0, 0, &[0; 5])), fs);
    assert_eq!(err(&frame(kind::CONTINUATION, 0, 0, b"")), pe);
}

#[test]
fn settings_pairs() {
    let p = [0, 1, 0, 0, 0x10, 0, 0, 4, 0, 1, 0, 0];
    let v: Vec<_> = settings(&p).collect();
    assert_eq!(v, vec![(1, 4096), (4, 65536)]);
}

#[test]
fn padded_data_reports_flow_controlled_length() {
    let f = frame(
        kind::DATA,
        flag::PADDED | flag::END_STREAM,
        1,
        &[2, b'a', 0, 0],
    );
    assert_eq!(
        one(&f).unwrap(),
        Frame::Data {
            stream: 1,
            data: b"a",
            end_stream: true,
            pad: 3
        }
    );
}
