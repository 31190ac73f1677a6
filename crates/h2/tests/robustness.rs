//! Deterministic pseudo-random inputs (what the fuzz targets do, on a
//! fixed budget so that it runs in `cargo test`): no panic, consumption
//! within the input, errors that stick, and an HPACK round-trip property.

mod support;

use fairlead_h2::frame::{self, kind, PREFACE};
use fairlead_h2::head::{BlockKind, Builder};
use fairlead_h2::hpack::{Decoder, Encoder};
use fairlead_h2::{Config, Conn, Event};
use fairlead_http::msg::{self, Head};
use support::Peer;

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A plausible frame: a random type (mostly known ones), flags, a small
/// stream id and a payload that is random or a valid header block.
fn random_frame(r: &mut Rng, p: &mut Peer) -> Vec<u8> {
    let kind = if r.below(10) == 0 {
        r.next() as u8
    } else {
        r.below(10) as u8
    };
    let flags = r.next() as u8;
    let stream = if r.below(8) == 0 {
        0
    } else {
        r.below(12) as u32
    };
    let payload = match (kind, r.below(3)) {
        (kind::HEADERS | kind::CONTINUATION, 0) => p.block(support::GET),
        (kind::PING, _) => r.bytes(8),
        (kind::RST_STREAM | kind::WINDOW_UPDATE, 0 | 1) => r.bytes(4),
        (kind::PRIORITY, 0 | 1) => r.bytes(5),
        _ => {
            let n = r.below(40) as usize;
            r.bytes(n)
        }
    };
    let mut v = Vec::new();
    frame::write_header(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(&payload);
    v
}

/// Feeds `input` in chunks, answering requests; checks the invariants.
fn drive(conn: &mut Conn, input: &[u8], chunk: usize) {
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut resp = Head::default();
    resp.start_response(200, None, 20);
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        let mut pos = 0;
        loop {
            let before = buf.len() - pos;
            match conn.recv(&mut buf[pos..], &mut out) {
                Ok(r) => {
                    assert!(r.consumed <= before);
                    let stop = r.consumed == 0 && r.event.is_none();
                    pos += r.consumed;
                    match r.event {
                        Some(Event::Head { stream, head, .. }) => {
                            msg::give(head);
                            let _ = conn.send_response(stream, &resp, &[], false, &mut out);
                            let _ = conn.send_data(stream, b"ok", true, &mut out);
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
                    assert_eq!(conn.recv(&mut buf[pos..], &mut out).err(), Some(e));
                    return;
                }
            }
            conn.flushed();
        }
        buf.drain(..pos);
        out.clear();
    }
}

#[test]
fn random_frame_sequences_never_panic() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut failed = 0;
    for round in 0..3000 {
        let mut p = Peer::indexing();
        let mut input = PREFACE.to_vec();
        frame::write_settings(&mut input, &[]);
        for _ in 0..(1 + r.below(12)) {
            input.extend(random_frame(&mut r, &mut p));
        }
        if round % 7 == 0 {
            // Raw noise too.
            let n = r.below(200) as usize;
            input.extend(r.bytes(n));
        }
        let mut out = Vec::new();
        let cfg = Config {
            max_concurrent_streams: 3,
            encoder_table_size: (round % 2) as u32 * 4096,
            ..Config::default()
        };
        let mut conn = Conn::server(cfg, &mut out);
        drive(&mut conn, &input, 1 + r.below(64) as usize);
        failed += usize::from(conn.is_done());
    }
    // Most random sequences break the protocol somewhere.
    assert!(failed > 1000, "{failed}");
}

#[test]
fn random_header_blocks_decode_or_fail_cleanly() {
    let mut r = Rng(42);
    let mut decoded = 0;
    for _ in 0..20_000 {
        let n = r.below(30) as usize;
        let mut block = r.bytes(n);
        // Bias towards valid prefixes: indexed fields and literals.
        if r.below(2) == 0 {
            block.insert(0, 0x80 | r.below(62) as u8);
        }
        let mut dec = Decoder::new(4096);
        let mut head = Head::default();
        let mut b = Builder::new(&mut head, BlockKind::Request, 16384, 100);
        let mut fields = Vec::new();
        let ok = dec
            .decode(&block, &mut Vec::new(), |n, v, _| {
                b.field(n, v);
                fields.push((n.to_vec(), v.to_vec()));
            })
            .is_ok();
        let _ = b.finish();
        if !ok {
            continue;
        }
        decoded += 1;
        let mut enc = Encoder::new(4096);
        let mut wire = Vec::new();
        enc.begin_block(&mut wire);
        for (n, v) in &fields {
            enc.field(n, v, false, &mut wire);
        }
        let mut back = Vec::new();
        Decoder::new(4096)
            .decode(&wire, &mut Vec::new(), |n, v, _| {
                back.push((n.to_vec(), v.to_vec()))
            })
            .unwrap();
        assert_eq!(back, fields);
    }
    assert!(decoded > 500, "{decoded}");
}
