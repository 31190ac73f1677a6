//! `tune.h2.*` end to end, read off the wire: the SETTINGS frame the
//! real binary sends, the concurrency limit it enforces
//! (REFUSED_STREAM) and `tune.h2.fe.max-total-streams` (GOAWAY after the
//! last stream). Frames are written and read raw, so that nothing a
//! client library does hides what the proxy sent.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const SETTINGS: u8 = 4;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const GOAWAY: u8 = 7;

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// `GET /?s=4 HTTP/2` for authority `a`, in HPACK without the dynamic
/// table.
fn get_block() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x04, 0x05];
    b.extend_from_slice(b"/?s=4");
    b.extend_from_slice(&[0x01, 0x01, b'a']);
    b
}

/// Reads whole frames `(type, flags, stream, payload)` until `stop` says
/// enough.
fn read_frames(
    s: &mut TcpStream,
    mut stop: impl FnMut(&[(u8, u8, u32, Vec<u8>)]) -> bool,
) -> Vec<(u8, u8, u32, Vec<u8>)> {
    read_frames_or(s, &mut stop, &|| String::new())
}

/// A frame: type, flags, stream, payload.
type Frame = (u8, u8, u32, Vec<u8>);

/// [`read_frames`], with `why` (the proxy's stderr) in a failure.
fn read_frames_or(
    s: &mut TcpStream,
    stop: &mut dyn FnMut(&[Frame]) -> bool,
    why: &dyn Fn() -> String,
) -> Vec<Frame> {
    let mut buf = Vec::new();
    let mut frames = Vec::new();
    let mut chunk = [0u8; 16384];
    while !stop(&frames) {
        let n = s
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("read frames: {e}\nproxy stderr:\n{}", why()));
        assert!(n > 0, "connection closed after {frames:?}");
        buf.extend_from_slice(&chunk[..n]);
        while buf.len() >= 9 {
            let len =
                (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            frames.push((buf[3], buf[4], id, buf[9..9 + len].to_vec()));
            buf.drain(..9 + len);
        }
    }
    frames
}

/// Opens an h2c connection; returns it with the server's first SETTINGS
/// as a map of identifier to value.
fn open(bind: std::net::SocketAddr, p: &Proxy) -> (TcpStream, HashMap<u16, u32>) {
    let mut s = connect(bind);
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &[]));
    s.write_all(&hello).unwrap();
    let mut first = |f: &[(u8, u8, u32, Vec<u8>)]| f.iter().any(|f| f.0 == SETTINGS && f.1 == 0);
    let frames = read_frames_or(&mut s, &mut first, &|| {
        p.settle_stderr();
        p.stderr()
    });
    let (_, _, _, p) = frames.iter().find(|f| f.0 == SETTINGS && f.1 == 0).unwrap();
    let settings = p
        .chunks_exact(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect();
    s.write_all(&frame(SETTINGS, 1, 0, &[])).unwrap();
    (s, settings)
}

/// Without `tune.h2.*`, HAProxy's defaults: 100 streams, and the
/// protocol's own window, frame size and table size (not sent).
#[test]
fn default_settings_are_haproxys() {
    let ip = test_ip();
    let (_t, o) = term(ip, "st");
    let bind = free_addr(ip);
    let p = Proxy::start(
        &h2_cfg(
            &format!("{bind} proto h2"),
            &format!("    server s1 {o}"),
            "",
        ),
        &[bind],
    );
    let (_s, set) = open(bind, &p);
    assert_eq!(set.get(&3), Some(&100), "{set:?}");
    for absent in [1u16, 4, 5] {
        assert_eq!(set.get(&absent), None, "{set:?}");
    }
}

/// `tune.h2.*` values are advertised, and the concurrency limit is
/// enforced: the sixth open stream of five allowed is refused.
#[test]
fn tuned_settings_are_sent_and_enforced() {
    let ip = test_ip();
    let (_t, o) = term(ip, "st");
    let bind = free_addr(ip);
    let cfg = h2_cfg(&format!("{bind} proto h2"), &format!("    server s1 {o}"), "").replace(
        "global\n",
        "global\n    tune.h2.max-concurrent-streams 5\n    tune.h2.fe.initial-window-size 1000000\n    \
         tune.h2.max-frame-size 32768\n    tune.h2.header-table-size 8192\n",
    );
    let p = Proxy::start(&cfg, &[bind]);
    let (mut s, set) = open(bind, &p);
    assert_eq!(set.get(&3), Some(&5), "{set:?}");
    assert_eq!(set.get(&4), Some(&1_000_000), "{set:?}");
    assert_eq!(set.get(&5), Some(&32_768), "{set:?}");
    assert_eq!(set.get(&1), Some(&8192), "{set:?}");
    // Six requests whose bodies never come (no END_STREAM): five stay
    // open, the sixth is refused (REFUSED_STREAM, 7).
    let mut out = Vec::new();
    for i in 0..6u32 {
        out.extend(frame(HEADERS, 0x4, 2 * i + 1, &get_block()));
    }
    s.write_all(&out).unwrap();
    let frames = read_frames(&mut s, |f| f.iter().any(|f| f.0 == RST_STREAM));
    let rst: Vec<_> = frames.iter().filter(|f| f.0 == RST_STREAM).collect();
    assert_eq!(rst.len(), 1, "{frames:?}");
    assert_eq!((rst[0].2, rst[0].3.clone()), (11, vec![0, 0, 0, 7]));
}

/// `tune.h2.fe.max-total-streams 3`: the third stream is answered, and
/// followed by GOAWAY NO_ERROR naming it as the last one.
#[test]
fn max_total_streams_ends_with_goaway() {
    let ip = test_ip();
    let (_t, o) = term(ip, "st");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "",
    )
    .replace("global\n", "global\n    tune.h2.fe.max-total-streams 3\n");
    let p = Proxy::start(&cfg, &[bind]);
    let (mut s, _) = open(bind, &p);
    let mut goaway = None;
    for i in 0..3u32 {
        let id = 2 * i + 1;
        s.write_all(&frame(HEADERS, 0x5, id, &get_block())).unwrap();
        // The response ends with a DATA frame carrying END_STREAM.
        let frames = read_frames(&mut s, |f| {
            f.iter().any(|f| f.0 == 0 && f.1 & 1 == 1 && f.2 == id)
        });
        let seen = frames.iter().find(|f| f.0 == GOAWAY).cloned();
        assert!(
            i == 2 || seen.is_none(),
            "GOAWAY after stream {id}: {frames:?}"
        );
        goaway = goaway.or(seen);
    }
    let goaway = goaway.unwrap_or_else(|| {
        let f = read_frames(&mut s, |f| f.iter().any(|f| f.0 == GOAWAY));
        f.into_iter().find(|f| f.0 == GOAWAY).unwrap()
    });
    assert_eq!(
        goaway.3[..8],
        [0, 0, 0, 5, 0, 0, 0, 0],
        "last stream 5, NO_ERROR"
    );
}
