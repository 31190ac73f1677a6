//! End-to-end tests: the load generator's library against an in-process
//! fairlead-term (or a tiny hand-made server) on loopback. Loads are tiny and
//! no assertion depends on timing beyond loose upper/lower bounds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};

use fairlead_load::args::{self, Command, Options};
use fairlead_load::Summary;
use fairlead_term::{start, TermHandle, TermOptions};

fn term(ip: &str, name: &str) -> TermHandle {
    start(
        &[format!("{ip}:0").parse().unwrap()],
        TermOptions {
            threads: 1,
            name: name.into(),
        },
    )
    .unwrap()
}

fn opts(a: &str) -> Options {
    match args::parse(a.split_whitespace().map(String::from)).unwrap() {
        Command::Run(o) => *o,
        Command::Help => panic!("help"),
    }
}

fn run(a: &str) -> Summary {
    let o = opts(a);
    fairlead_load::run(&o, &mut std::io::sink()).unwrap()
}

fn url(t: &TermHandle, q: &str) -> String {
    format!("http://{}/{q}", t.local_addrs()[0])
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("fairlead-load-{}-{name}", std::process::id()))
}

#[test]
fn exact_request_count() {
    let t = term("127.0.0.41", "a");
    let s = run(&format!("-c 4 -t 2 -n 200 -q {}", url(&t, "")));
    assert_eq!(s.totals.responses, 200);
    assert_eq!(s.totals.sent, 200);
    assert_eq!(s.totals.error_count(), 0);
    assert_eq!(s.totals.status[2], 200);
    assert_eq!(s.hists.ttlb.len(), 200);
    assert_eq!(t.requests(), 200);
    // Keep-alive: at most one connection per -c.
    assert!(s.totals.opened <= 4, "{}", s.totals.opened);
    assert_eq!(t.connections(), s.totals.opened);
    assert_eq!(s.totals.open(), 0);
    // Bytes: each response has the body "a\n" plus a head.
    assert!(s.totals.bytes > 200 * 2);
}

#[test]
fn close_mode_one_connection_per_request() {
    let t = term("127.0.0.42", "");
    let s = run(&format!("-c 3 -t 1 -n 50 --close -q {}", url(&t, "?s=10")));
    assert_eq!(s.totals.responses, 50);
    assert_eq!(s.totals.opened, 50);
    assert_eq!(t.connections(), 50);
    assert_eq!(t.requests(), 50);
}

#[test]
fn rate_limited_open_loop() {
    let t = term("127.0.0.43", "");
    // 100 req/s for 1 s: roughly 100 requests; loosely bounded.
    let s = run(&format!("-c 4 -t 1 -R 100 -d 1 -q {}", url(&t, "")));
    assert!(s.totals.responses > 0);
    assert!(s.totals.responses < 200, "{}", s.totals.responses);
    assert_eq!(t.requests(), s.totals.responses);
    assert_eq!(s.rate, Some(100.0));
}

#[test]
fn status_classes_and_errors() {
    let t = term("127.0.0.44", "");
    let s = run(&format!("-c 2 -n 30 -q {}", url(&t, "?r=503")));
    assert_eq!(s.totals.status[5], 30);
    assert_eq!(s.totals.status[2], 0);
    assert_eq!(s.totals.error_count(), 0);

    // Nothing listening: connect errors.
    let port = {
        let l = TcpListener::bind("127.0.0.45:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = run(&format!("-c 1 -n 5 -q http://127.0.0.45:{port}/"));
    assert_eq!(s.totals.errors[0], 5);
    assert_eq!(s.totals.responses, 0);

    // Timeouts: the origin waits 3 s, the client gives up after 100 ms.
    let s = run(&format!(
        "-c 2 -n 2 --timeout 100 -q {}",
        url(&t, "?t=3000")
    ));
    assert_eq!(s.totals.errors[3], 2);
}

#[test]
fn bodies_chunked_and_post() {
    let t = term("127.0.0.46", "");
    let s = run(&format!(
        "-c 2 -n 20 -m POST --body hello -H X-Test:1 -q {}",
        url(&t, "?s=100k&k=1")
    ));
    assert_eq!(s.totals.responses, 20);
    assert_eq!(s.totals.error_count(), 0);
    assert!(s.totals.bytes >= 20 * 100 * 1024);
    assert!(s.totals.opened <= 2);
    // Random bodies, content-length, body from a file, streamed response.
    let f = tmp("body");
    std::fs::write(&f, vec![b'z'; 50_000]).unwrap();
    let s = run(&format!(
        "-c 2 -n 10 -m PUT --body-file {} -q {} {}",
        f.display(),
        url(&t, "?s=70k&R=1"),
        url(&t, "?times=3&t=1&s=5")
    ));
    std::fs::remove_file(&f).unwrap();
    assert_eq!(s.totals.responses, 10);
    assert_eq!(s.totals.error_count(), 0);
    // HEAD: no body read although content-length is announced.
    let s = run(&format!("-c 1 -n 5 -m HEAD -q {}", url(&t, "?s=1m")));
    assert_eq!((s.totals.responses, s.totals.error_count()), (5, 0));
    assert!(s.totals.bytes < 5000);
}

#[test]
fn round_robin_over_urls() {
    let a = term("127.0.0.47", "a");
    let b = term("127.0.0.48", "b");
    let s = run(&format!("-c 2 -n 40 -q {} {}", url(&a, ""), url(&b, "")));
    assert_eq!(s.totals.responses, 40);
    assert_eq!(a.requests(), 20);
    assert_eq!(b.requests(), 20);
}

#[test]
fn close_delimited_responses() {
    // A server answering with neither length nor chunking, then closing.
    let l = TcpListener::bind("127.0.0.49:0").unwrap();
    let addr: SocketAddr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..5 {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            c.write_all(b"HTTP/1.1 200 OK\r\n\r\n0123456789").unwrap();
        }
    });
    let s = run(&format!("-c 1 -n 5 -q http://{addr}/"));
    server.join().unwrap();
    assert_eq!(s.totals.responses, 5);
    assert_eq!(s.totals.error_count(), 0);
    assert_eq!(s.totals.opened, 5);
}

#[test]
fn rampup_excluded_and_duration() {
    let t = term("127.0.0.50", "");
    let s = run(&format!("-c 4 -t 2 -s 0.5 -d 1 -q {}", url(&t, "")));
    assert!(s.totals.responses > 0);
    assert!(s.hists.ttlb.len() < s.totals.responses);
    assert_eq!(t.requests(), s.totals.responses);
    assert!(!s.timeline.is_empty());
}

#[test]
fn stop_handle_ends_unbounded_run() {
    let t = term("127.0.0.51", "");
    let o = opts(&format!("-c 2 -q {}", url(&t, "")));
    let r = fairlead_load::prepare(&o).unwrap();
    r.stop_handle().stop();
    let s = r.execute(&mut std::io::sink()).unwrap();
    assert_eq!(s.totals.open(), 0);
    assert_eq!(s.totals.error_count(), 0);
}

/// Minimal JSON validator: returns the rest after one value.
fn value(s: &[u8]) -> Result<&[u8], String> {
    let s = ws(s);
    match s.first() {
        Some(b'{') => {
            let mut s = ws(&s[1..]);
            if s.first() == Some(&b'}') {
                return Ok(&s[1..]);
            }
            loop {
                s = string(ws(s))?;
                s = ws(s);
                s = s.strip_prefix(b":").ok_or("expected :")?;
                s = ws(value(s)?);
                match s.first() {
                    Some(b',') => s = &s[1..],
                    Some(b'}') => return Ok(&s[1..]),
                    _ => return Err("expected , or }".into()),
                }
            }
        }
        Some(b'[') => {
            let mut s = ws(&s[1..]);
            if s.first() == Some(&b']') {
                return Ok(&s[1..]);
            }
            loop {
                s = ws(value(s)?);
                match s.first() {
                    Some(b',') => s = &s[1..],
                    Some(b']') => return Ok(&s[1..]),
                    _ => return Err("expected , or ]".into()),
                }
            }
        }
        Some(b'"') => string(s),
        Some(b'n') => s.strip_prefix(b"null").ok_or_else(|| "bad null".into()),
        Some(c) if c.is_ascii_digit() || *c == b'-' => {
            let n = s
                .iter()
                .take_while(|c| c.is_ascii_digit() || b"-+.eE".contains(c))
                .count();
            std::str::from_utf8(&s[..n])
                .unwrap()
                .parse::<f64>()
                .map_err(|e| e.to_string())?;
            Ok(&s[n..])
        }
        _ => Err(format!(
            "unexpected {:?}",
            String::from_utf8_lossy(&s[..s.len().min(20)])
        )),
    }
}

fn ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &s[n..]
}

fn string(s: &[u8]) -> Result<&[u8], String> {
    let s = s.strip_prefix(b"\"").ok_or("expected string")?;
    let end = s.iter().position(|&c| c == b'"').ok_or("unterminated")?;
    Ok(&s[end + 1..])
}

#[test]
fn json_and_svg_outputs() {
    let t = term("127.0.0.52", "");
    let (j, p) = (tmp("out.json"), tmp("out.svg"));
    let s = run(&format!(
        "-c 2 -n 100 --json {} --plot {} {}",
        j.display(),
        p.display(),
        url(&t, "?r=404")
    ));
    assert_eq!(s.totals.status[4], 100);
    let json = std::fs::read(&j).unwrap();
    let rest = value(&json).unwrap();
    assert!(ws(rest).is_empty());
    let text = String::from_utf8(json).unwrap();
    assert!(text.contains("\"responses\": 100,"));
    assert!(text.contains("\"4xx\":100"));
    assert!(text.contains("\"99.9\":"));
    let svg = std::fs::read_to_string(&p).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("99%") && svg.contains("polyline"));
    std::fs::remove_file(j).unwrap();
    std::fs::remove_file(p).unwrap();
    // The text report names every percentile.
    let r = fairlead_load::report::text(&s);
    assert!(r.contains("99.9999%") && r.contains("4xx=100"));
}
