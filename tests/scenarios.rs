//! HTTP conformance cases as data (VTest's idea): every file in
//! `tests/scenarios/*.scn` holds a configuration, raw client requests and
//! what the client and the origin must see. One runner executes them all
//! against the real `fairlead` binary and, where HAProxy is installed
//! (`haproxy` on the PATH, or `HAPROXY=/path`), against HAProxy with the
//! same configuration and the same expectations: HAProxy is the oracle,
//! and the expectations are concrete values, so the files say something
//! without it too.
//!
//! Format (see `tests/scenarios/README.md`):
//!
//! ```text
//! # what the case shows
//! --- config
//! frontend fe
//!     bind ${BIND}
//!     ...
//!     server s1 ${O1}
//! --- request
//! GET /x HTTP/1.1
//! Host: example.com
//! --- expect
//! status 200
//! header x-a: 1
//! origin o1
//! origin-header x-b: 2
//! ```
//!
//! Request lines are sent with CRLF endings followed by an empty line;
//! `\r`, `\n`, `\t` and `\\` escapes are expanded, and a line `<body>`
//! starts a body sent as is. `${BIND}`, `${O1}`, `${O2}`, `${O3}` are
//! replaced by the proxy's listening address and three echo origins that
//! answer `200` with `x-origin: oN` and the request head they received as
//! the body. Files named in `--- only fairlead` skip HAProxy.
//!
//! A `--- origin-response` section (lines, then `<body>` and a raw body,
//! as requests) is what the `${R1}` origin answers to every request,
//! for cases about malformed responses. `\xHH` (ASCII) writes a control
//! character; `then-closed` expects the proxy to close the connection
//! after the response.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One request and its expectations.
struct Step {
    request: Vec<u8>,
    expect: Vec<String>,
}

struct Scenario {
    name: String,
    config: String,
    steps: Vec<Step>,
    fairlead_only: bool,
    /// `--- origin-response`: what the `${R1}` origin answers, raw.
    raw_response: Option<Vec<u8>>,
}

/// Lines sent with CRLF endings and an empty line, then the raw body.
fn message(lines: &[String], body: Option<String>) -> Vec<u8> {
    let mut r = String::new();
    for l in lines {
        r.push_str(&unescape(l));
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    if let Some(b) = body {
        r.push_str(&unescape(&b));
    }
    r.into_bytes()
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            // `\xHH`: one ASCII byte (control characters in heads).
            Some('x') => {
                let hex: String = it.by_ref().take(2).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) if b < 0x80 => out.push(char::from(b)),
                    _ => panic!("bad escape \\x{hex}: two hex digits below 80"),
                }
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Only the `\xHH` escapes of `s` expanded (`origin-header` values may
/// hold other backslashes literally, e.g. JSON escapes).
fn unescape_hex(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\\x") {
        out.push_str(&rest[..i]);
        let hex = rest.get(i + 2..i + 4).unwrap_or("");
        match u8::from_str_radix(hex, 16) {
            Ok(b) if b < 0x80 && hex.len() == 2 => {
                out.push(char::from(b));
                rest = &rest[i + 4..];
            }
            _ => {
                out.push_str("\\x");
                rest = &rest[i + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn parse(path: &Path) -> Scenario {
    let text = std::fs::read_to_string(path).unwrap();
    let mut sc = Scenario {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        config: String::new(),
        steps: Vec::new(),
        fairlead_only: false,
        raw_response: None,
    };
    let mut section = String::new();
    let mut req: Vec<String> = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("--- ") {
            if section == "origin-response" {
                sc.raw_response = Some(message(&req, body.take()));
            }
            section = s.trim().to_string();
            match section.as_str() {
                "request" | "origin-response" => {
                    req.clear();
                    body = None;
                }
                "expect" => {
                    sc.steps.push(Step {
                        request: message(&req, body.take()),
                        expect: Vec::new(),
                    });
                }
                "only fairlead" => sc.fairlead_only = true,
                _ => {}
            }
            continue;
        }
        match section.as_str() {
            "config" => {
                sc.config.push_str(line);
                sc.config.push('\n');
            }
            "request" | "origin-response" => match &mut body {
                Some(b) => b.push_str(line),
                None if line == "<body>" => body = Some(String::new()),
                None => req.push(line.to_string()),
            },
            "expect" => {
                let l = line.trim();
                if !l.is_empty() && !l.starts_with('#') {
                    sc.steps.last_mut().unwrap().expect.push(l.to_string());
                }
            }
            _ => {}
        }
    }
    if section == "origin-response" {
        sc.raw_response = Some(message(&req, body.take()));
    }
    assert!(!sc.steps.is_empty(), "{}: no request", sc.name);
    sc
}

/// Reads a chunked body with its trailers, appending its bytes as
/// received (framing included) to `raw`; false on a read error.
fn read_chunks(r: &mut impl BufRead, raw: &mut Vec<u8>) -> bool {
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        raw.extend_from_slice(line.as_bytes());
        let hex = line.trim_end().split(';').next().unwrap_or("");
        let Ok(size) = usize::from_str_radix(hex, 16) else {
            return false;
        };
        if size == 0 {
            // Trailer lines, then the final empty line.
            loop {
                let mut t = String::new();
                if r.read_line(&mut t).unwrap_or(0) == 0 {
                    return false;
                }
                raw.extend_from_slice(t.as_bytes());
                if t == "\r\n" {
                    return true;
                }
            }
        }
        // The data and its CRLF.
        let mut data = vec![0; size + 2];
        if r.read_exact(&mut data).is_err() {
            return false;
        }
        raw.extend_from_slice(&data);
    }
}

/// `raw` with CR, LF and backslash written as `\r`, `\n`, `\\` (the
/// escapes of scenario files), for the `x-origin-body` header.
fn escape(raw: &[u8]) -> String {
    let mut s = String::new();
    for &b in raw {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            b if b.is_ascii_graphic() || b == b' ' => s.push(b as char),
            b => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// An origin that echoes the request head it received, and the request
/// body as received (framing included) escaped in `x-origin-body` when
/// there was one.
fn echo_origin(ip: IpAddr, name: &'static str) -> SocketAddr {
    let (addr, _) = raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            // Skip a Content-Length body.
            let len = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            let mut b = vec![0; len];
            if r.read_exact(&mut b).is_err() {
                return;
            }
            let chunked = head.lines().any(|l| {
                l.split_once(':').is_some_and(|(n, v)| {
                    n.eq_ignore_ascii_case("transfer-encoding") && v.trim() == "chunked"
                })
            });
            if chunked && !read_chunks(&mut r, &mut b) {
                return;
            }
            let body = if b.is_empty() {
                String::new()
            } else {
                format!("x-origin-body: {}\r\n", escape(&b))
            };
            let resp = format!(
                "HTTP/1.1 200 OK\r\nx-origin: {name}\r\n{body}content-type: text/plain\r\ncontent-length: {}\r\n\r\n{head}",
                head.len()
            );
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    });
    addr
}

/// An origin that answers every request with `resp`, then closes.
fn scripted_origin(ip: IpAddr, resp: Vec<u8>) -> SocketAddr {
    let (addr, _) = raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        if read_head(&mut r).is_some() {
            let _ = w.write_all(&resp);
        }
    });
    addr
}

/// What came back for one request.
struct Got {
    closed_without_response: bool,
    resp: Option<Response>,
    /// The status line, without its line ending.
    status_line: String,
    /// After the response, the proxy closed the connection (checked only
    /// for `then-closed`).
    closed_after: bool,
}

/// Keeps a copy of the bytes read, so the status line (which
/// `read_response` parses and drops) can be checked too.
struct Tee<R> {
    inner: R,
    seen: Vec<u8>,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.seen.len() < 4096 {
            self.seen.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}

fn send(addr: SocketAddr, req: &[u8], read_timeout: Duration, check_close: bool) -> Got {
    let mut s = TcpStream::connect_timeout(&addr, DEADLINE).unwrap();
    s.set_read_timeout(Some(read_timeout)).unwrap();
    let _ = s.write_all(req);
    let head_req = req.starts_with(b"HEAD ");
    let mut r = BufReader::new(Tee {
        inner: s,
        seen: Vec::new(),
    });
    let resp = read_response(&mut r, head_req);
    // `then-closed`: the next read must see the end of the stream (a kept
    // connection would make it wait for the read timeout instead).
    let closed_after = check_close && resp.is_some() && matches!(r.read(&mut [0u8; 1]), Ok(0));
    let seen = &r.get_ref().seen;
    let first = seen.split(|&b| b == b'\n').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(first).trim_end().to_string();
    Got {
        closed_without_response: resp.is_none(),
        resp,
        status_line,
        closed_after,
    }
}

/// Checks one expectation; `Err` says what differed.
fn check(e: &str, got: &Got) -> Result<(), String> {
    let (kw, arg) = e.split_once(' ').unwrap_or((e, ""));
    if kw == "silent" {
        // No response within a second: closed, or held open without a
        // word (HAProxy's silent-drop with TCP_REPAIR).
        return match &got.resp {
            None => Ok(()),
            Some(r) => Err(format!("expected no response, got {}", r.status)),
        };
    }
    if kw == "closed" {
        return if got.closed_without_response {
            Ok(())
        } else {
            Err(format!(
                "expected no response, got {:?}",
                got.resp.as_ref().map(|r| r.status)
            ))
        };
    }
    let Some(r) = &got.resp else {
        return Err("the connection closed without a response".into());
    };
    if kw == "then-closed" {
        return if got.closed_after {
            Ok(())
        } else {
            Err("the connection stayed open after the response".into())
        };
    }
    let body = r.body_str();
    let origin_lines: Vec<&str> = if r.header("x-origin").is_some() {
        body.lines().collect()
    } else {
        Vec::new()
    };
    let origin_has = |line: &str| {
        origin_lines
            .iter()
            .any(|l| match (l.split_once(':'), line.split_once(':')) {
                (Some((n1, v1)), Some((n2, v2))) => {
                    n1.eq_ignore_ascii_case(n2) && v1.trim() == v2.trim()
                }
                _ => *l == line,
            })
    };
    let count = |lines: Vec<&str>, arg: &str| -> Result<bool, String> {
        let (n, want) = arg.rsplit_once(' ').ok_or("a count expects: name N")?;
        let want: usize = want.parse().map_err(|_| "a count expects: name N")?;
        Ok(lines
            .iter()
            .filter(|l| {
                l.split_once(':')
                    .is_some_and(|(ln, _)| ln.trim().eq_ignore_ascii_case(n.trim()))
            })
            .count()
            == want)
    };
    let ok = match kw {
        "status" => r.status.to_string() == arg,
        "status-line" => got.status_line == arg,
        "header-count" => {
            let names: Vec<String> = r.headers.iter().map(|(n, _)| format!("{n}:")).collect();
            count(names.iter().map(String::as_str).collect(), arg)?
        }
        "origin-header-count" => count(origin_lines.iter().skip(1).copied().collect(), arg)?,
        "body" => body == unescape(arg),
        "header" => {
            let (n, v) = arg.split_once(':').ok_or("header expects name: value")?;
            r.headers
                .iter()
                .any(|(hn, hv)| hn.eq_ignore_ascii_case(n.trim()) && hv.trim() == v.trim())
        }
        "no-header" => r.header(arg).is_none(),
        "body-contains" => body.contains(&unescape(arg)),
        "body-lacks" => !body.contains(&unescape(arg)),
        "origin" => r.header("x-origin") == Some(arg),
        "origin-line" => origin_lines.first() == Some(&arg),
        "origin-header" => origin_has(&unescape_hex(arg)),
        "origin-no-header" => !origin_lines.iter().any(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| n.eq_ignore_ascii_case(arg))
        }),
        other => return Err(format!("unknown expectation '{other}'")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "expectation '{e}' failed; got {:?} headers {:?} body {:?}",
            got.status_line, r.headers, body
        ))
    }
}

/// Runs one scenario against a proxy started by `start`; returns the
/// failures.
fn run(sc: &Scenario, start: &dyn Fn(&str, SocketAddr) -> Box<dyn std::any::Any>) -> Vec<String> {
    let ip = test_ip();
    let o = [
        echo_origin(ip, "o1"),
        echo_origin(ip, "o2"),
        echo_origin(ip, "o3"),
    ];
    // Every origin listens before the proxy's port is picked, so that the
    // port released by `free_addr` cannot be handed to an origin.
    let r1 = sc
        .raw_response
        .clone()
        .map(|resp| scripted_origin(ip, resp).to_string())
        .unwrap_or_default();
    let bind = free_addr(ip);
    let cfg = sc
        .config
        .replace("${BIND}", &bind.to_string())
        .replace("${O1}", &o[0].to_string())
        .replace("${O2}", &o[1].to_string())
        .replace("${O3}", &o[2].to_string())
        .replace("${R1}", &r1)
        .replace("${DIR}", env!("CARGO_MANIFEST_DIR"));
    let _proxy = start(&cfg, bind);
    let mut failures = Vec::new();
    for (i, step) in sc.steps.iter().enumerate() {
        let silent = step.expect.iter().any(|e| e == "silent");
        let wait = if silent {
            Duration::from_secs(1)
        } else {
            DEADLINE
        };
        let check_close = step.expect.iter().any(|e| e == "then-closed");
        let wait = if check_close {
            Duration::from_secs(3)
        } else {
            wait
        };
        let got = send(bind, &step.request, wait, check_close);
        for e in &step.expect {
            if let Err(msg) = check(e, &got) {
                failures.push(format!("{} request {}: {msg}", sc.name, i + 1));
            }
        }
    }
    failures
}

fn scenarios() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .collect();
    // `SCENARIO=text` runs only the files whose name contains `text`.
    if let Ok(only) = std::env::var("SCENARIO") {
        files.retain(|p| p.file_name().unwrap().to_string_lossy().contains(&only));
    }
    files.sort();
    files.iter().map(|p| parse(p)).collect()
}

#[test]
fn scenarios_through_fairlead() {
    let mut failures = Vec::new();
    let all = scenarios();
    assert!(
        all.len() >= 10 || std::env::var_os("SCENARIO").is_some(),
        "too few scenario files"
    );
    for sc in &all {
        failures.extend(run(sc, &|cfg, bind| {
            Box::new(Proxy::start(cfg, &[bind])) as Box<dyn std::any::Any>
        }));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scenarios_through_haproxy() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy is not installed: the oracle comparison is skipped");
        return;
    };
    let mut failures = Vec::new();
    for sc in scenarios().iter().filter(|s| !s.fairlead_only) {
        failures.extend(run(sc, &|cfg, bind| {
            Box::new(Haproxy::start(&bin, cfg, &[], bind)) as Box<dyn std::any::Any>
        }));
    }
    assert!(
        failures.is_empty(),
        "HAProxy disagrees with the expectations:\n{}",
        failures.join("\n")
    );
}

#[allow(dead_code)]
fn lines(r: &mut impl BufRead) -> Vec<String> {
    r.lines().map_while(Result::ok).collect()
}
