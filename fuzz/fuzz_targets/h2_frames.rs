//! Feeds arbitrary bytes to a server-role HTTP/2 connection after a valid
//! preface and SETTINGS, in chunks whose sizes the first byte picks, and
//! answers every request so that the send paths run too. The connection
//! must never panic, must consume only what it was given, and must keep
//! failing once it failed.
#![no_main]

use fairlead_h2::frame::{self, PREFACE};
use fairlead_h2::{Config, Conn, Event};
use fairlead_http::msg::{self, Head};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, data)) = data.split_first() else {
        return;
    };
    let chunk = 1 + usize::from(sel & 0x3f) * 97;
    let cfg = Config {
        max_concurrent_streams: 4,
        encoder_table_size: if sel & 0x40 != 0 { 4096 } else { 0 },
        ..Config::default()
    };
    let mut out = Vec::new();
    let mut conn = Conn::server(cfg, &mut out);
    let mut input = PREFACE.to_vec();
    frame::write_settings(&mut input, &[]);
    input.extend_from_slice(data);
    let mut buf: Vec<u8> = Vec::new();
    let mut resp = Head::default();
    resp.start_response(200, None, 20);
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        let mut pos = 0;
        loop {
            out.clear();
            let before = buf.len() - pos;
            match conn.recv(&mut buf[pos..], &mut out) {
                Ok(r) => {
                    assert!(r.consumed <= before);
                    let stop = r.consumed == 0 && r.event.is_none();
                    pos += r.consumed;
                    match r.event {
                        Some(Event::Head { stream, head, end_stream }) => {
                            msg::give(head);
                            if end_stream {
                                let _ = conn.send_response(stream, &resp, &[], false, &mut out);
                                let _ = conn.send_data(stream, b"ok", true, &mut out);
                            }
                        }
                        Some(Event::Data { stream, data, .. }) => {
                            let n = data.len();
                            conn.release(stream, n, &mut out);
                        }
                        Some(Event::Trailers { head, .. }) => msg::give(head),
                        _ => {}
                    }
                    if stop {
                        break;
                    }
                }
                Err(e) => {
                    let again = conn.recv(&mut buf[pos..], &mut out);
                    assert_eq!(again.err(), Some(e));
                    return;
                }
            }
            conn.flushed();
        }
        buf.drain(..pos);
    }
});
