//! HTTP/2 health checks against an independent HTTP/2 server (the `h2`
//! crate) on loopback: results, the request the server saw, and failures
//! (a server that only speaks HTTP/1, a reset stream, no answer in time).
//!
//! Loopback addresses 127.0.0.231 to 127.0.0.235 are this file's.

use bytes::Bytes;
use fairlead_config::{CheckProto, Expect, ExpectKind, HealthCheck, HttpCheck};
use fairlead_health::{start, CheckTarget, HealthEvent, ServerHealth};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// Polls `cond` every 5 ms until it holds or `limit` passes.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(5 * MS);
    }
}

/// What the fake server does with each request.
#[derive(Clone)]
enum Behaviour {
    Reply(u16, &'static str),
    Reset,
    Silent,
}

/// One request the server saw: method, path, authority, scheme, the
/// `x-custom` header, the body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    method: String,
    path: String,
    authority: String,
    scheme: String,
    custom: Option<String>,
    body: Vec<u8>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// An h2c (prior knowledge) server on its own thread and runtime.
fn h2_server(ip: &str, what: Behaviour) -> (SocketAddr, Log) {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((tcp, _)) = l.accept().await {
                tokio::spawn(serve(tcp, what.clone(), seen.clone()));
            }
        });
    });
    (addr, log)
}

async fn serve(tcp: tokio::net::TcpStream, what: Behaviour, log: Log) {
    let Ok(mut conn) = h2::server::handshake(tcp).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        let (parts, mut body) = req.into_parts();
        let mut data = Vec::new();
        while let Some(Ok(chunk)) = body.data().await {
            let _ = body.flow_control().release_capacity(chunk.len());
            data.extend_from_slice(&chunk);
        }
        log.lock().unwrap().push(Seen {
            method: parts.method.to_string(),
            path: parts
                .uri
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            authority: parts
                .uri
                .authority()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            scheme: parts.uri.scheme_str().unwrap_or_default().to_string(),
            custom: parts
                .headers
                .get("x-custom")
                .map(|v| v.to_str().unwrap_or_default().to_string()),
            body: data,
        });
        match &what {
            Behaviour::Reply(status, text) => {
                let resp = http::Response::builder().status(*status).body(()).unwrap();
                let end = text.is_empty();
                if let Ok(mut send) = respond.send_response(resp, end) {
                    if !end {
                        let _ = send.send_data(Bytes::from_static(text.as_bytes()), true);
                    }
                }
            }
            Behaviour::Reset => respond.send_reset(h2::Reason::REFUSED_STREAM),
            Behaviour::Silent => {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A server that only speaks HTTP/1: reads, answers a 400, closes.
fn h1_server(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.read(&mut [0u8; 1024]);
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    addr
}

fn check(expect: Option<ExpectKind>, body: Option<&str>) -> HealthCheck {
    HealthCheck::Http(HttpCheck {
        method: "GET".into(),
        uri: "/x?full=1".into(),
        version: "HTTP/1.1".into(),
        headers: vec![
            ("Host".into(), "example.org".into()),
            ("X-Custom".into(), "yes".into()),
        ],
        body: body.map(Into::into),
        expect: expect.map(|k| Expect::new(false, k)),
        ..HttpCheck::default()
    })
}

fn target(name: &str, addr: SocketAddr, hc: HealthCheck) -> CheckTarget {
    let mut t = CheckTarget::new("bk", name, addr, Arc::new(ServerHealth::new(true)));
    t.check = Some(hc);
    t.check_proto = Some(CheckProto::H2);
    t.inter = 200 * MS;
    t.fastinter = 200 * MS;
    t.downinter = 200 * MS;
    t.rise = 1;
    t.fall = 1;
    t
}

type Events = Arc<Mutex<Vec<HealthEvent>>>;

/// Runs `targets`, waits until each has its `(status prefix, up)`, and
/// returns the events.
fn expect_results(targets: Vec<CheckTarget>, want: &[(&str, bool)]) -> Events {
    let healths: Vec<_> = targets.iter().map(|t| t.health.clone()).collect();
    let names: Vec<_> = targets.iter().map(|t| t.server.clone()).collect();
    let events: Events = Arc::default();
    let e = events.clone();
    let _checker = start(targets, 0, Arc::new(move |ev| e.lock().unwrap().push(ev))).unwrap();
    for (i, (status, up)) in want.iter().enumerate() {
        let h = &healths[i];
        let done = wait_for(5000 * MS, || {
            h.status_text().starts_with(&format!("{status} in ")) && h.is_up() == *up
        });
        assert!(done, "{}: {} up={}", names[i], h.status_text(), h.is_up());
    }
    events
}

fn info_of(events: &Events, server: &str) -> Option<Option<String>> {
    let ev = events.lock().unwrap();
    ev.iter()
        .rev()
        .find(|e| e.server == server)
        .map(|e| e.info.clone())
}

/// 200 is L7OK, 503 L7STS (no reason phrase in HTTP/2); the server saw the
/// request of `option httpchk` / `http-check send` in HTTP/2 form.
#[test]
fn h2_check_status_and_request() {
    let (ok, ok_log) = h2_server("127.0.0.231", Behaviour::Reply(200, "alive"));
    let (bad, _) = h2_server("127.0.0.231", Behaviour::Reply(503, ""));
    let posted = target("post", ok, check(None, Some("ping")));
    let events = expect_results(
        vec![
            target("ok", ok, check(None, None)),
            target("bad", bad, check(None, None)),
            posted,
        ],
        &[("L7OK/200", true), ("L7STS/503", false), ("L7OK/200", true)],
    );
    assert_eq!(info_of(&events, "bad"), Some(None));
    let seen = ok_log.lock().unwrap().clone();
    let get = Seen {
        method: "GET".into(),
        path: "/x?full=1".into(),
        authority: "example.org".into(),
        scheme: "http".into(),
        custom: Some("yes".into()),
        body: Vec::new(),
    };
    assert!(seen.contains(&get), "{seen:?}");
    let post = Seen {
        body: b"ping".to_vec(),
        ..get
    };
    assert!(seen.contains(&post), "{seen:?}");
}

/// Content rules read the body from DATA frames; failures are L7RSP with
/// HAProxy's texts.
#[test]
fn h2_check_content_rules() {
    let (ok, _) = h2_server("127.0.0.232", Behaviour::Reply(200, "alive and well"));
    let (empty, _) = h2_server("127.0.0.232", Behaviour::Reply(200, ""));
    let s = |x: &str| Some(ExpectKind::String(x.into()));
    let events = expect_results(
        vec![
            target("match", ok, check(s("and well"), None)),
            target("nomatch", ok, check(s("dead"), None)),
            target("empty", empty, check(s("alive"), None)),
            target(
                "status",
                ok,
                check(Some(ExpectKind::Status(vec![(300, 399)])), None),
            ),
        ],
        &[
            ("L7OK/200", true),
            ("L7RSP", false),
            ("L7RSP", false),
            ("L7STS/200", false),
        ],
    );
    assert_eq!(
        info_of(&events, "nomatch"),
        Some(Some("HTTP content check did not match".into()))
    );
    assert_eq!(
        info_of(&events, "empty"),
        Some(Some(
            "HTTP content check could not find a response body".into()
        ))
    );
}

/// A server that does not speak HTTP/2 and a reset stream are SOCKERR,
/// as in HAProxy; silence is L7TOUT; no `check-proto`, `http-check
/// connect proto h1`, or a connect rule without `default` on an
/// HTTP/2-only server fail as HTTP/1 checks.
#[test]
fn h2_check_failures() {
    let h1 = h1_server("127.0.0.233");
    let (reset, _) = h2_server("127.0.0.233", Behaviour::Reset);
    let (silent, _) = h2_server("127.0.0.233", Behaviour::Silent);
    let (ok, _) = h2_server("127.0.0.233", Behaviour::Reply(200, "alive"));
    let mut h1_check = target("h1", ok, check(None, None));
    h1_check.check_proto = None;
    let mut timed = target("silent", silent, check(None, None));
    timed.check_timeout = Some(100 * MS);
    // `http-check connect proto h1` wins over the server's `check-proto h2`.
    let mut forced = check(None, None);
    if let HealthCheck::Http(h) = &mut forced {
        h.proto = Some(CheckProto::H1);
    }
    // `http-check connect` without `default` ignores the server's
    // `check-proto h2` (HAProxy): HTTP/1 to the HTTP/2 server.
    let mut own = check(None, None);
    if let HealthCheck::Http(h) = &mut own {
        h.own_connect = true;
    }
    expect_results(
        vec![
            target("h1only", h1, check(None, None)),
            target("reset", reset, check(None, None)),
            timed,
            h1_check,
            target("forced", ok, forced),
            target("own", ok, own),
        ],
        &[
            ("SOCKERR", false),
            ("SOCKERR", false),
            ("L7TOUT", false),
            ("L7RSP", false),
            ("L7RSP", false),
            ("L7RSP", false),
        ],
    );
}
