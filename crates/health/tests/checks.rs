//! End-to-end checks against real sockets on loopback: fake servers run on
//! plain threads, the checker on its own thread; every wait polls with a
//! deadline.

use fairlead_config::{
    Expect, ExpectKind, HealthCheck, HttpCheck, Observe, OnError, TcpCheckRule, TcpConnect,
};
use fairlead_health::{start, CheckStatus, CheckTarget, CheckerHandle, HealthEvent, ServerHealth};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// A fake server: accepts until stopped (then closes its listening socket)
/// and gives each connection to `handler` on its own thread.
struct Fake {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    done: Option<thread::JoinHandle<()>>,
}

impl Fake {
    fn start<H>(addr: &str, handler: H) -> Fake
    where
        H: Fn(TcpStream) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(addr).unwrap();
        Fake::on(listener, handler)
    }

    fn on<H>(listener: TcpListener, handler: H) -> Fake
    where
        H: Fn(TcpStream) + Send + Sync + 'static,
    {
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handler = Arc::new(handler);
        let s = stop.clone();
        let done = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, _)) => {
                        c.set_nonblocking(false).unwrap();
                        let h = handler.clone();
                        thread::spawn(move || h(c));
                    }
                    Err(_) => thread::sleep(MS),
                }
            }
        });
        Fake {
            addr,
            stop,
            done: Some(done),
        }
    }

    fn close(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.done.take().unwrap().join().unwrap();
    }
}

/// Reads the request head, answers `response` and closes.
fn http_reply(response: &'static str) -> impl Fn(TcpStream) + Send + Sync {
    move |mut c| {
        let mut r = BufReader::new(c.try_clone().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            if line == "\r\n" {
                break;
            }
            line.clear();
        }
        let _ = c.write_all(response.as_bytes());
    }
}

fn target(addr: SocketAddr, check: HealthCheck, initially_up: bool) -> CheckTarget {
    let mut t = CheckTarget::new("bk", "s1", addr, Arc::new(ServerHealth::new(initially_up)));
    t.check = Some(check);
    t.inter = 50 * MS;
    t.fastinter = 50 * MS;
    t.downinter = 50 * MS;
    t
}

type Events = Arc<Mutex<Vec<HealthEvent>>>;

fn run(targets: Vec<CheckTarget>, spread: u32) -> (CheckerHandle, Events) {
    let events: Events = Arc::default();
    (run_into(targets, spread, &events), events)
}

fn run_into(targets: Vec<CheckTarget>, spread: u32, events: &Events) -> CheckerHandle {
    let e = events.clone();
    start(
        targets,
        spread,
        Arc::new(move |ev| e.lock().unwrap().push(ev)),
    )
    .unwrap()
}

#[test]
fn tcp_check_goes_down_and_up() {
    let server = Fake::start("127.0.0.1:0", |_c| {});
    let addr = server.addr;
    let mut t = target(addr, HealthCheck::Tcp, true);
    t.fall = 3;
    let changes = Arc::new(AtomicUsize::new(0));
    let c = changes.clone();
    t.on_change = Arc::new(move || {
        c.fetch_add(1, Ordering::Relaxed);
    });
    let h = t.health.clone();
    let (_checker, events) = run(vec![t], 0);
    assert!(wait_for(2000 * MS, || h
        .status_text()
        .starts_with("L4OK in ")));
    assert!(wait_for(2000 * MS, || h.check_health() == 4));
    // Stays up for several intervals.
    let stable = Instant::now() + 300 * MS;
    while Instant::now() < stable {
        assert!(h.is_up());
        thread::sleep(5 * MS);
    }
    // Listener gone: down after `fall` (3) failed checks of 50 ms.
    server.close();
    let t0 = Instant::now();
    assert!(wait_for(3000 * MS, || !h.is_up()));
    assert!(t0.elapsed() < 1000 * MS, "{:?}", t0.elapsed());
    assert!(
        h.status_text().starts_with("L4CON in "),
        "{}",
        h.status_text()
    );
    // Back: up after `rise` (2) good checks.
    let _server = Fake::on(TcpListener::bind(addr).unwrap(), |_c| {});
    assert!(wait_for(3000 * MS, || h.is_up()));
    assert_eq!(changes.load(Ordering::Relaxed), 2);
    let ev = events.lock().unwrap().clone();
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(!ev[0].up && ev[0].status == CheckStatus::L4Con);
    let line = ev[0].haproxy_line(0, 0);
    assert!(line.starts_with(
        "Server bk/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", \
         check duration: "
    ));
    assert!(line.ends_with(
        "ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in \
         queue."
    ));
    assert!(ev[1].up && ev[1].status == CheckStatus::L4Ok);
    assert!(ev[1]
        .haproxy_line(1, 0)
        .starts_with("Server bk/s1 is UP, reason: Layer4 check passed, check duration: "));
    assert!(h.last_change_secs() < 5);
}

#[test]
fn checks_follow_an_address_that_changes() {
    let first = Fake::start("127.0.0.5:0", |_c| {});
    let second = Fake::start("127.0.0.5:0", |_c| {});
    let current = Arc::new(Mutex::new(first.addr));
    let mut t = target(first.addr, HealthCheck::Tcp, true);
    let cur = current.clone();
    t.addr_source = Some(Arc::new(move || Some(*cur.lock().unwrap())));
    let h = t.health.clone();
    let (_checker, _events) = run(vec![t], 0);
    assert!(wait_for(2000 * MS, || h
        .status_text()
        .starts_with("L4OK in ")));
    // the server moved: checks go to the new address, and the old one
    // may disappear without the server going down
    *current.lock().unwrap() = second.addr;
    first.close();
    let stable = Instant::now() + 400 * MS;
    while Instant::now() < stable {
        assert!(h.is_up(), "{}", h.status_text());
        thread::sleep(5 * MS);
    }
    second.close();
    assert!(wait_for(3000 * MS, || !h.is_up()));
}

#[test]
fn timeout_check_marks_down_with_l7tout() {
    // Accepts and never answers.
    let server = Fake::start("127.0.0.1:0", |c| {
        let mut buf = [0u8; 64];
        let _ = (&c).read(&mut buf);
        thread::sleep(Duration::from_secs(2));
    });
    let mut t = target(server.addr, HealthCheck::Http(HttpCheck::default()), true);
    t.check_timeout = Some(100 * MS);
    let h = t.health.clone();
    let (_checker, events) = run(vec![t], 0);
    assert!(wait_for(3000 * MS, || !h.is_up()));
    assert!(
        h.status_text().starts_with("L7TOUT in "),
        "{}",
        h.status_text()
    );
    let line = events.lock().unwrap()[0].haproxy_line(0, 0);
    assert!(line.starts_with("Server bk/s1 is DOWN, reason: Layer7 timeout, check duration: 1"));
}

fn http_check(expect: Option<(bool, ExpectKind)>) -> HealthCheck {
    HealthCheck::Http(HttpCheck {
        method: "GET".into(),
        uri: "/health".into(),
        expect: expect.map(|(negate, kind)| Expect::new(negate, kind)),
        ..HttpCheck::default()
    })
}

#[test]
fn http_check_expectations() {
    let ok = Fake::start(
        "127.0.0.2:0",
        http_reply("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello world\n"),
    );
    let bad = Fake::start(
        "127.0.0.2:0",
        http_reply("HTTP/1.0 503 Service Unavailable\r\n\r\nmaintenance\n"),
    );
    let redirect = Fake::start("127.0.0.2:0", http_reply("HTTP/1.0 302 Found\r\n\r\n"));
    let junk = Fake::start("127.0.0.2:0", http_reply("SSH-2.0-OpenSSH_9.0\r\n"));
    // HTTP/1.1 with Content-Length and chunked, server keeps the connection.
    let keep = Fake::start("127.0.0.2:0", |c| {
        http_reply("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nstatus=")(c.try_clone().unwrap());
        thread::sleep(Duration::from_secs(3));
    });
    let chunked = Fake::start("127.0.0.2:0", |c| {
        http_reply(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nall \r\n4\r\ngood\r\n0\r\n\r\n",
        )(c.try_clone().unwrap());
        thread::sleep(Duration::from_secs(3));
    });
    let status = |r: &[(u16, u16)]| ExpectKind::Status(r.to_vec());
    let s = |x: &str| ExpectKind::String(x.into());
    let rs = |x: &str| ExpectKind::RString(x.into());
    type Case = (SocketAddr, Option<(bool, ExpectKind)>, bool, &'static str);
    let cases: Vec<Case> = vec![
        (ok.addr, None, true, "L7OK/200"),
        (redirect.addr, None, true, "L7OK/302"),
        (bad.addr, None, false, "L7STS/503"),
        (junk.addr, None, false, "L7RSP"),
        (
            ok.addr,
            Some((false, status(&[(200, 200)]))),
            true,
            "L7OK/200",
        ),
        (
            bad.addr,
            Some((false, status(&[(200, 399)]))),
            false,
            "L7STS/503",
        ),
        (
            bad.addr,
            Some((false, status(&[(200, 200), (503, 503)]))),
            true,
            "L7OK/503",
        ),
        (
            bad.addr,
            Some((true, status(&[(503, 503)]))),
            false,
            "L7STS/503",
        ),
        (
            ok.addr,
            Some((true, status(&[(503, 503)]))),
            true,
            "L7OK/200",
        ),
        (
            bad.addr,
            Some((false, ExpectKind::RStatus("^5".into()))),
            true,
            "L7OK/503",
        ),
        (
            ok.addr,
            Some((false, ExpectKind::RStatus("^5".into()))),
            false,
            "L7STS/200",
        ),
        (ok.addr, Some((false, s("world"))), true, "L7OK/200"),
        (bad.addr, Some((false, s("world"))), false, "L7RSP"),
        (bad.addr, Some((true, s("maintenance"))), false, "L7RSP"),
        (ok.addr, Some((true, s("maintenance"))), true, "L7OK/200"),
        (ok.addr, Some((false, rs("^hel+o w"))), true, "L7OK/200"),
        (ok.addr, Some((false, rs("^world"))), false, "L7RSP"),
        (ok.addr, Some((false, rs("("))), false, "L7RSP/200"),
        (keep.addr, Some((false, s("status="))), true, "L7OK/200"),
        (chunked.addr, Some((false, s("all good"))), true, "L7OK/200"),
    ];
    let mut targets = Vec::new();
    for (i, (addr, expect, _, _)) in cases.iter().enumerate() {
        let mut t = target(*addr, http_check(expect.clone()), true);
        t.server = format!("case{i}");
        t.rise = 1;
        t.fall = 1;
        t.inter = 500 * MS; // keep-alive servers must answer within one interval
        targets.push(t);
    }
    let healths: Vec<_> = targets.iter().map(|t| t.health.clone()).collect();
    let (_checker, _events) = run(targets, 0);
    for (i, (_, expect, up, status)) in cases.iter().enumerate() {
        let h = &healths[i];
        let done = wait_for(3000 * MS, || {
            h.status_text().starts_with(&format!("{status} in ")) && h.is_up() == *up
        });
        assert!(
            done,
            "case {i} {expect:?}: {} up={}",
            h.status_text(),
            h.is_up()
        );
    }
    // The keep-alive response was complete by Content-Length, not by timeout.
    let t = healths[18].status_text();
    let ms: u64 = t
        .trim_start_matches("L7OK/200 in ")
        .trim_end_matches("ms")
        .parse()
        .unwrap();
    assert!(ms < 400, "{t}");
}

#[test]
fn http_check_sends_request_line_headers_and_body() {
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    let server = Fake::start("127.0.0.3:0", move |mut c| {
        c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = vec![0u8; 1024];
        let mut got = Vec::new();
        while !got.ends_with(b"ping") {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        *s2.lock().unwrap() = String::from_utf8_lossy(&got).into_owned();
        let _ = c.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
    });
    let check = HealthCheck::Http(HttpCheck {
        method: "POST".into(),
        uri: "/check".into(),
        version: "HTTP/1.1".into(),
        headers: vec![("Host".into(), "svc.local".into())],
        body: Some("ping".into()),
        ..HttpCheck::default()
    });
    let t = target(server.addr, check, true);
    let h = t.health.clone();
    let (_checker, _events) = run(vec![t], 0);
    assert!(wait_for(3000 * MS, || h
        .status_text()
        .starts_with("L7OK/204")));
    assert_eq!(
        *seen.lock().unwrap(),
        "POST /check HTTP/1.1\r\nHost: svc.local\r\nConnection: close\r\nContent-Length: 4\r\n\r\nping"
    );
}

/// A Redis-like server: `PING` -> `+PONG`, `QUIT` -> `+OK` and close.
fn redis(c: TcpStream) {
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    let mut line = String::new();
    while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
        match line.trim_end() {
            "PING" => {
                let _ = w.write_all(b"+PONG\r\n");
            }
            "QUIT" => {
                let _ = w.write_all(b"+OK\r\n");
                return;
            }
            _ => {
                let _ = w.write_all(b"-ERR unknown command\r\n");
            }
        }
        line.clear();
    }
}

#[test]
fn tcp_check_redis_ping_pong() {
    let server = Fake::start("127.0.0.4:0", redis);
    let expect = |negate, kind| TcpCheckRule::Expect(Expect::new(negate, kind));
    let ping = |pattern: ExpectKind| {
        HealthCheck::TcpCheck(vec![
            TcpCheckRule::Send(b"PING\r\n".to_vec()),
            TcpCheckRule::Comment("ping".into()),
            expect(false, pattern),
            TcpCheckRule::Send(b"QUIT\r\n".to_vec()),
            expect(false, ExpectKind::String("+OK".into())),
        ])
    };
    let dead: SocketAddr = "127.0.0.4:1".parse().unwrap();
    let cases: Vec<(SocketAddr, HealthCheck, bool, &str)> = vec![
        (
            server.addr,
            ping(ExpectKind::String("+PONG".into())),
            true,
            "L7OK",
        ),
        (
            server.addr,
            ping(ExpectKind::RString("^\\+PO.G".into())),
            true,
            "L7OK",
        ),
        (
            server.addr,
            ping(ExpectKind::Binary(b"+PONG".to_vec())),
            true,
            "L7OK",
        ),
        (
            server.addr,
            ping(ExpectKind::String("+PANG".into())),
            false,
            "L7TOUT",
        ),
        (
            // `connect port` overrides the target's port.
            dead,
            HealthCheck::TcpCheck(vec![
                TcpCheckRule::Connect(TcpConnect {
                    port: Some(server.addr.port()),
                    ..TcpConnect::default()
                }),
                TcpCheckRule::Send(b"QUIT\r\n".to_vec()),
                expect(true, ExpectKind::String("-ERR".into())),
            ]),
            true,
            "L7OK",
        ),
        (
            server.addr,
            HealthCheck::TcpCheck(vec![
                TcpCheckRule::Send(b"HELLO\r\n".to_vec()),
                expect(true, ExpectKind::String("-ERR".into())),
            ]),
            false,
            "L7RSP",
        ),
        (
            dead,
            ping(ExpectKind::String("+PONG".into())),
            false,
            "L4CON",
        ),
        (server.addr, HealthCheck::TcpCheck(vec![]), true, "L4OK"),
    ];
    let mut targets = Vec::new();
    for (addr, check, _, _) in &cases {
        let mut t = target(*addr, check.clone(), true);
        t.check_timeout = Some(150 * MS);
        t.inter = 300 * MS;
        t.rise = 1;
        t.fall = 1;
        targets.push(t);
    }
    let healths: Vec<_> = targets.iter().map(|t| t.health.clone()).collect();
    let (_checker, events) = run(targets, 0);
    for (i, (_, check, up, status)) in cases.iter().enumerate() {
        let h = &healths[i];
        let done = wait_for(3000 * MS, || {
            h.status_text().starts_with(&format!("{status} in ")) && h.is_up() == *up
        });
        assert!(
            done,
            "case {i} {check:?}: {} up={}",
            h.status_text(),
            h.is_up()
        );
    }
    let ev = events.lock().unwrap().clone();
    let rsp = ev.iter().find(|e| e.status == CheckStatus::L7Rsp).unwrap();
    assert_eq!(
        rsp.info.as_deref(),
        Some("TCPCHK matched unwanted content '-ERR' at step 2")
    );
    let tout = ev.iter().find(|e| e.status == CheckStatus::L7Tout).unwrap();
    assert_eq!(tout.info.as_deref(), Some("ping"), "comment names the step");
}

#[test]
fn agent_weight_drain_down_up_maint() {
    let reply = Arc::new(Mutex::new(String::from("50%\n")));
    let received = Arc::new(Mutex::new(Vec::<u8>::new()));
    let (r2, rx2) = (reply.clone(), received.clone());
    let agent = Fake::start("127.0.0.5:0", move |mut c| {
        c.set_read_timeout(Some(50 * MS)).unwrap();
        let mut buf = [0u8; 64];
        if let Ok(n) = c.read(&mut buf) {
            rx2.lock().unwrap().extend_from_slice(&buf[..n]);
        }
        let _ = c.write_all(r2.lock().unwrap().as_bytes());
    });
    let dead: SocketAddr = "127.0.0.5:1".parse().unwrap();
    let mk = |agent_addr: SocketAddr, send: Option<String>| {
        let mut t = CheckTarget::new("bk", "a1", dead, Arc::new(ServerHealth::new(true)));
        t.check = None;
        t.agent = Some((agent_addr, 30 * MS, send));
        t.check_timeout = Some(500 * MS);
        t.rise = 2;
        t.fall = 2;
        t
    };
    let t = mk(agent.addr, Some("hello\n".into()));
    let unreachable = mk(dead, None);
    let (h, hu) = (t.health.clone(), unreachable.health.clone());
    let (_checker, events) = run(vec![t, unreachable], 0);
    let set = |s: &str| *reply.lock().unwrap() = s.to_string();

    assert!(wait_for(3000 * MS, || h.weight_pct() == 50));
    assert!(h.is_up() && !h.is_drain());
    assert!(received.lock().unwrap().starts_with(b"hello\n"));
    set("drain\n");
    assert!(wait_for(3000 * MS, || h.is_drain()));
    assert!(h.is_up());
    assert_eq!(h.weight_pct(), 0);
    set("READY,75%\n");
    assert!(wait_for(3000 * MS, || !h.is_drain() && h.weight_pct() == 75));
    set("down #overloaded\n");
    assert!(wait_for(3000 * MS, || !h.is_up()));
    set("up 100%\n");
    assert!(wait_for(3000 * MS, || h.is_up() && h.weight_pct() == 100));
    set("maint\n");
    assert!(wait_for(3000 * MS, || !h.is_up()));
    set("ready\n");
    assert!(wait_for(3000 * MS, || h.is_up()));
    // An agent that cannot be reached changes nothing.
    assert!(hu.is_up() && hu.weight_pct() == 100);
    assert_eq!(hu.status_text(), "no check");

    let ev = events.lock().unwrap().clone();
    let lines: Vec<String> = ev.iter().map(|e| e.haproxy_line(0, 0)).collect();
    assert_eq!(ev.len(), 4, "{lines:#?}");
    assert!(lines[0].starts_with(
        "Server bk/a1 is DOWN, reason: Layer7 wrong status, info: \"agent: down overloaded\""
    ));
    assert!(ev[1].up && !ev[1].maint);
    assert!(lines[2].starts_with("Server bk/a1 is going DOWN for maintenance (agent)."));
    assert!(lines[3].starts_with("Server bk/a1 is UP/READY (leaving forced maintenance)."));
}

fn passive(on_error: OnError) -> (CheckTarget, Arc<ServerHealth>) {
    let mut t = target(
        SocketAddr::from(([127, 0, 0, 6], 1)),
        HealthCheck::Tcp,
        true,
    );
    t.observe = Some(Observe::Layer7);
    t.error_limit = 3;
    t.on_error = on_error;
    t.rise = 2;
    t.fall = 3;
    // Long intervals: only the passive reports move the counter.
    t.inter = Duration::from_secs(30);
    t.fastinter = Duration::from_secs(30);
    let h = t.health.clone();
    (t, h)
}

#[test]
fn passive_checks_apply_on_error() {
    let server = Fake::start("127.0.0.6:0", |_c| {});
    // One checker each: first checks are spread over the (long) inter.
    let events: Events = Arc::default();
    let mut checkers = Vec::new();
    let mut hs = Vec::new();
    for on_error in [
        OnError::MarkDown,
        OnError::FailCheck,
        OnError::SuddenDeath,
        OnError::Fastinter,
    ] {
        let (mut t, h) = passive(on_error);
        t.addr = server.addr;
        checkers.push(run_into(vec![t], 0, &events));
        hs.push(h);
    }
    // The first check (at once) brings every counter to full health (4).
    assert!(wait_for(3000 * MS, || hs
        .iter()
        .all(|h| h.check_health() == 4)));
    let errors = |h: &ServerHealth, n| (0..n).for_each(|_| h.observe(false));

    // mark-down: down after error-limit (3) consecutive errors; a success
    // in between restarts the count.
    let h = &hs[0];
    errors(h, 2);
    h.observe(true);
    errors(h, 2);
    h.observe(true);
    assert!(h.is_up());
    errors(h, 3);
    assert!(wait_for(3000 * MS, || !h.is_up()));
    assert_eq!(h.status_text(), "HANA");

    // fail-check: each trigger is one failed check; fall = 3 from full.
    let h = &hs[1];
    errors(h, 3);
    assert!(wait_for(3000 * MS, || h.check_health() == 3));
    errors(h, 3);
    assert!(wait_for(3000 * MS, || h.check_health() == 2));
    assert!(h.is_up());
    errors(h, 3);
    assert!(wait_for(3000 * MS, || !h.is_up()));

    // sudden-death: one trigger leaves one step to down, whatever the health.
    let h = &hs[2];
    errors(h, 3);
    assert!(wait_for(3000 * MS, || h.check_health() == 2));
    assert!(h.is_up());
    errors(h, 3);
    assert!(wait_for(3000 * MS, || !h.is_up()));

    // fastinter: never marks down by itself.
    let h = &hs[3];
    errors(h, 9);
    let ev = events.lock().unwrap().clone();
    assert!(ev.iter().all(|e| e.status == CheckStatus::Hana && !e.up));
    assert_eq!(ev.len(), 3);
    assert!(ev[0].haproxy_line(0, 0).starts_with(
        "Server bk/s1 is DOWN, reason: Health analyze, info: \"Detected 3 consecutive errors\""
    ));
    assert!(h.is_up() && h.check_health() == 4);
}

#[test]
fn passive_mark_down_then_checks_bring_it_back() {
    let server = Fake::start("127.0.0.6:0", |_c| {});
    let (mut t, h) = passive(OnError::MarkDown);
    t.addr = server.addr;
    t.fastinter = 100 * MS; // the action brings the next check this close
    let (_checker, _events) = run(vec![t], 0);
    assert!(wait_for(3000 * MS, || h.check_health() == 4));
    (0..3).for_each(|_| h.observe(false));
    assert!(wait_for(3000 * MS, || !h.is_up()));
    // inter is 30s: only the forced fastinter check can revive it so soon.
    assert!(wait_for(3000 * MS, || h.is_up()));
}

#[test]
fn slowstart_ramps_weight_after_recovery() {
    let server = Fake::start("127.0.0.7:0", |_c| {});
    let mut t = target(server.addr, HealthCheck::Tcp, false);
    t.rise = 1;
    t.slowstart = Some(1000 * MS);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s2, h2) = (seen.clone(), t.health.clone());
    t.on_change = Arc::new(move || s2.lock().unwrap().push((h2.is_up(), h2.weight_pct())));
    let h = t.health.clone();
    // A server up from the start gets no slowstart.
    let mut t2 = target(server.addr, HealthCheck::Tcp, true);
    t2.slowstart = Some(1000 * MS);
    let h2 = t2.health.clone();
    let (_checker, _events) = run(vec![t, t2], 0);
    assert!(wait_for(3000 * MS, || h.is_up()));
    assert!(h.weight_pct() < 50, "{}", h.weight_pct());
    assert!(wait_for(3000 * MS, || h.weight_pct() == 100));
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 6, "{seen:?}");
    assert!(seen.iter().all(|&(up, _)| up));
    assert!(seen.windows(2).all(|w| w[0].1 < w[1].1), "{seen:?}");
    assert!(seen[0].1 >= 1 && seen[0].1 < 20, "{seen:?}");
    assert!(seen.iter().any(|&(_, p)| p > 30 && p < 80), "{seen:?}");
    assert_eq!(h2.weight_pct(), 100);
}

#[test]
fn first_checks_are_spread() {
    let accepts = Arc::new(Mutex::new(Vec::new()));
    let a2 = accepts.clone();
    let server = Fake::start("127.0.0.8:0", move |_c| {
        a2.lock().unwrap().push(Instant::now())
    });
    let mut targets = Vec::new();
    for i in 0..20 {
        let mut t = target(server.addr, HealthCheck::Tcp, true);
        t.server = format!("s{i}");
        t.inter = 400 * MS;
        t.fastinter = 400 * MS;
        targets.push(t);
    }
    let (_checker, _events) = run(targets, 20);
    assert!(wait_for(3000 * MS, || accepts.lock().unwrap().len() >= 20));
    let mut first: Vec<Instant> = accepts.lock().unwrap()[..20].to_vec();
    first.sort();
    let span = first[19] - first[0];
    // Evenly over 400 ms: about 380 ms between the first and the 20th.
    assert!(span >= 150 * MS, "{span:?}");
    let max_same = first.windows(2).filter(|w| w[1] - w[0] < MS).count();
    assert!(max_same < 10, "{first:?}");
}

#[test]
fn stop_ends_the_thread() {
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = count.clone();
    let server = Fake::start("127.0.0.9:0", move |_c| {
        c2.fetch_add(1, Ordering::Relaxed);
    });
    let t = target(server.addr, HealthCheck::Tcp, true);
    let (checker, _events) = run(vec![t], 0);
    assert!(wait_for(3000 * MS, || count.load(Ordering::Relaxed) >= 2));
    checker.stop();
    let n = count.load(Ordering::Relaxed);
    // No check can start after stop() returned; allow one accept in flight.
    let quiet = Instant::now() + 200 * MS;
    while Instant::now() < quiet {
        thread::sleep(10 * MS);
    }
    assert!(count.load(Ordering::Relaxed) <= n + 1);
}

/// HAProxy 2.6 asks the DNS again when a check cannot connect (L4CON,
/// L4TOUT), not when a connected check times out (L7TOUT).
#[test]
fn connect_failures_call_the_connect_failure_hook() {
    let counter = |t: &mut CheckTarget| {
        let n = Arc::new(AtomicUsize::new(0));
        let c = n.clone();
        t.on_connect_failure = Some(Arc::new(move || {
            c.fetch_add(1, Ordering::Relaxed);
        }));
        n
    };
    // Nothing listens: L4CON.
    let gone = TcpListener::bind("127.0.0.6:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut refused = target(gone, HealthCheck::Tcp, true);
    let on_refused = counter(&mut refused);
    let h_refused = refused.health.clone();
    // Accepts and never answers: L7TOUT.
    let server = Fake::start("127.0.0.6:0", |c| {
        let mut buf = [0u8; 64];
        let _ = (&c).read(&mut buf);
        thread::sleep(Duration::from_secs(2));
    });
    let mut silent = target(server.addr, HealthCheck::Http(HttpCheck::default()), true);
    silent.server = "s2".into();
    silent.check_timeout = Some(100 * MS);
    let on_silent = counter(&mut silent);
    let h_silent = silent.health.clone();
    let (_checker, _events) = run(vec![refused, silent], 0);
    assert!(wait_for(3000 * MS, || on_refused.load(Ordering::Relaxed) >= 2));
    assert!(h_refused.status_text().starts_with("L4CON"));
    assert!(wait_for(3000 * MS, || h_silent
        .status_text()
        .starts_with("L7TOUT")));
    assert_eq!(on_silent.load(Ordering::Relaxed), 0);
}
