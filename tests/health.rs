//! Active and passive health checks, agent checks, end to end.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

fn served_by(bind: SocketAddr) -> Option<String> {
    let r = get(bind, "/");
    (r.status == 200).then(|| r.header("x-served-by").unwrap().to_string())
}

#[test]
fn dead_server_is_marked_down_then_up_again() {
    let ip = test_ip();
    let (mut t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let bind = free_addr(ip);
    let servers = format!(
        "    retries 2\n    option redispatch\n\
    server s1 {a1} check inter 100ms fall 2 rise 2\n    server s2 {a2} check inter 100ms fall 2 rise 2"
    );
    let p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    assert!(served_by(bind).is_some());
    let killed_at = Instant::now();
    t1.stop();
    // No client error while s1 is dying: connection failures are retried
    // on s2.
    wait_until("s1 marked DOWN", || {
        assert_eq!(get(bind, "/").status, 200);
        p.stderr().contains("Server bk/s1 is DOWN")
    });
    assert!(
        killed_at.elapsed() < Duration::from_secs(5),
        "{:?}",
        killed_at.elapsed()
    );
    let line = p
        .stderr()
        .lines()
        .find(|l| l.contains("Server bk/s1 is DOWN"))
        .unwrap()
        .to_string();
    assert!(line.contains("reason: Layer4"), "{line}");
    for _ in 0..20 {
        assert_eq!(served_by(bind).as_deref(), Some("s2"));
    }
    // The server comes back: UP after `rise` checks, traffic returns.
    let back = fairlead_term::start(
        &[a1],
        fairlead_term::TermOptions {
            threads: 1,
            name: "s1".into(),
        },
    )
    .expect("restart s1 on its port");
    wait_until("s1 UP again", || p.stderr().contains("Server bk/s1 is UP"));
    wait_until("s1 serves again", || {
        served_by(bind).as_deref() == Some("s1")
    });
    drop(back);
}

#[test]
fn http_check_expects_status_and_string() {
    let ip = test_ip();
    let (_t, a) = term(ip, "alive");
    // The origin answers 503 on this URI: the check fails, the server is
    // down, clients get 503.
    let bind = free_addr(ip);
    let bk = format!(
        "    option httpchk GET /health?r=503\n    server s {a} check inter 100ms fall 1 rise 1"
    );
    let p = Proxy::start(&http_cfg(bind, "", &bk), &[bind]);
    wait_until("down by status", || {
        p.stderr().contains("Server bk/s is DOWN")
    });
    assert!(p.stderr().contains("Layer7"), "{}", p.stderr());
    assert_eq!(get(bind, "/").status, 503);
    // Expecting that status makes it healthy.
    let bind2 = free_addr(ip);
    let bk2 = format!(
        "    option httpchk GET /health?r=503\n    http-check expect status 503\n    server s {a} check inter 100ms fall 1 rise 1"
    );
    let p2 = Proxy::start(&http_cfg(bind2, "", &bk2), &[bind2]);
    // Give it several check periods; it must stay up.
    let until = Instant::now() + Duration::from_millis(600);
    while Instant::now() < until {
        assert_eq!(get(bind2, "/").status, 200);
    }
    assert!(!p2.stderr().contains("is DOWN"), "{}", p2.stderr());
    // String expectation against the body.
    let bind3 = free_addr(ip);
    let bk3 = format!(
        "    option httpchk GET /\n    http-check expect string not-there\n    server s {a} check inter 100ms fall 1 rise 1"
    );
    let p3 = Proxy::start(&http_cfg(bind3, "", &bk3), &[bind3]);
    wait_until("down by string", || {
        p3.stderr().contains("Server bk/s is DOWN")
    });
}

#[test]
fn tcp_check_send_expect() {
    let ip = test_ip();
    let (_t, a) = term(ip, "app");
    // A Redis-like responder on another port.
    let (redis, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            if line.trim() == "PING" {
                let _ = s.write_all(b"+PONG\r\n");
            }
            line.clear();
        }
    });
    let bind = free_addr(ip);
    let bk = format!(
        "    option tcp-check\n    tcp-check send PING\\r\\n\n    tcp-check expect string +PONG\n\
    server s {a} check port {} inter 100ms fall 1 rise 1",
        redis.port()
    );
    let p = Proxy::start(&http_cfg(bind, "", &bk), &[bind]);
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        assert_eq!(get(bind, "/").status, 200);
    }
    assert!(!p.stderr().contains("is DOWN"), "{}", p.stderr());
}

#[test]
fn agent_check_changes_weight_and_drains() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let reply = std::sync::Arc::new(std::sync::Mutex::new("50%\n".to_string()));
    let r2 = reply.clone();
    let (agent, _) = raw_origin(ip, move |mut s| {
        let msg = r2.lock().unwrap().clone();
        let _ = s.write_all(msg.as_bytes());
    });
    let bind = free_addr(ip);
    let bk = format!(
        "    server s1 {a1} weight 100 agent-check agent-port {} agent-inter 100ms\n    server s2 {a2} weight 100",
        agent.port()
    );
    let _p = Proxy::start(&http_cfg(bind, "", &bk), &[bind]);
    // At 50%, s1 gets a third of the traffic.
    wait_until("weight 50% applied", || {
        let mut s1 = 0;
        for _ in 0..300 {
            if served_by(bind).as_deref() == Some("s1") {
                s1 += 1;
            }
        }
        (90..=110).contains(&s1)
    });
    // `drain`: no new traffic to s1.
    *reply.lock().unwrap() = "drain\n".into();
    wait_until("drained", || {
        (0..50).all(|_| served_by(bind).as_deref() == Some("s2"))
    });
}

#[test]
fn passive_observe_marks_a_failing_server_down() {
    let ip = test_ip();
    let (bad, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        while read_head(&mut r).is_some() {
            let _ = s.write_all(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let (_t, good) = term(ip, "good");
    let bind = free_addr(ip);
    let bk = format!(
        "    server bad {bad} check inter 10s observe layer7 error-limit 3 on-error mark-down\n    server good {good}"
    );
    let p = Proxy::start(&http_cfg(bind, "", &bk), &[bind]);
    wait_until("bad marked down by observation", || {
        let _ = get(bind, "/");
        p.stderr().contains("Server bk/bad is DOWN")
    });
    for _ in 0..10 {
        assert_eq!(served_by(bind).as_deref(), Some("good"));
    }
}

/// `http-check disable-on-404`: a 404 from an UP server's check puts it in
/// NOLB (no new load-balanced traffic; the stats show `NOLB`, `L7OKC`,
/// the server's weight, and a backend weight without it), and a 2xx
/// brings it back. A DOWN server that answers 404 stays DOWN. Checked
/// against HAProxy 2.6.12 by hand with the same configuration.
#[test]
fn disable_on_404_puts_an_up_server_in_nolb() {
    use std::sync::atomic::{AtomicU16, AtomicU32, Ordering::SeqCst};
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let code = std::sync::Arc::new(AtomicU16::new(200));
    let checks = std::sync::Arc::new(AtomicU32::new(0));
    let (c2, n2) = (code.clone(), checks.clone());
    let (chk, _) = raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        if read_head(&mut r).is_none() {
            return;
        }
        let mut s = s;
        let c = c2.load(SeqCst);
        let _ = write!(s, "HTTP/1.0 {c} X\r\nContent-Length: 0\r\n\r\n");
        n2.fetch_add(1, SeqCst);
    });
    let (bind, sb) = (free_addr(ip), free_addr(ip));
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    option httpchk GET /h\n    http-check disable-on-404\n\
    server s1 {a1} check port {} inter 100ms fall 2 rise 1\n    server s2 {a2}\n\
listen stats\n    bind {sb}\n    stats enable\n    stats uri /stats\n",
        chk.port()
    );
    let p = Proxy::start(&cfg, &[bind, sb]);
    let csv = || get(sb, "/stats;csv").body_str();
    let stat = |sv: &str, f: &str| common::tls::stat_field(&csv(), "bk", sv, f);
    wait_until("s1 checked UP", || {
        stat("s1", "check_status").as_deref() == Some("L7OK")
    });
    wait_until("s1 serves", || {
        (0..20).any(|_| served_by(bind).as_deref() == Some("s1"))
    });
    code.store(404, SeqCst);
    wait_until("s1 NOLB", || {
        stat("s1", "status").as_deref() == Some("NOLB")
    });
    let c = csv();
    let f = |sv: &str, f: &str| common::tls::stat_field(&c, "bk", sv, f);
    assert_eq!(f("s1", "check_status").as_deref(), Some("L7OKC"), "{c}");
    assert_eq!(f("s1", "check_code").as_deref(), Some("404"), "{c}");
    assert_eq!(f("s1", "weight").as_deref(), Some("1"), "{c}");
    assert_eq!(f("BACKEND", "weight").as_deref(), Some("1"), "{c}");
    for _ in 0..30 {
        assert_eq!(served_by(bind).as_deref(), Some("s2"));
    }
    assert!(
        p.stderr().contains(
            "Server bk/s1 is stopping, reason: Layer7 check conditionally passed, code: 404, check duration: "
        ),
        "{}",
        p.stderr()
    );
    code.store(200, SeqCst);
    wait_until("s1 UP again", || {
        stat("s1", "status").as_deref() == Some("UP")
    });
    assert!(
        p.stderr().contains(
            "Server bk/s1 is UP, reason: Layer7 check passed, code: 200, check duration: "
        ),
        "{}",
        p.stderr()
    );
    wait_until("s1 serves again", || {
        (0..20).any(|_| served_by(bind).as_deref() == Some("s1"))
    });
    // A DOWN server stays DOWN on 404s.
    code.store(500, SeqCst);
    wait_until("s1 DOWN", || {
        stat("s1", "status").as_deref() == Some("DOWN")
    });
    code.store(404, SeqCst);
    let seen = checks.load(SeqCst);
    wait_until("three 404 checks", || checks.load(SeqCst) >= seen + 3);
    let c = csv();
    let f = |f: &str| common::tls::stat_field(&c, "bk", "s1", f);
    assert_eq!(f("status").as_deref(), Some("DOWN"), "{c}");
    assert_eq!(f("check_status").as_deref(), Some("L7STS"), "{c}");
    for _ in 0..10 {
        assert_eq!(served_by(bind).as_deref(), Some("s2"));
    }
}

/// A backend's own `http-check send` replaces a defaults section's
/// `option httpchk` request, and a backend's own `option httpchk` drops
/// the defaults' `http-check send`: the request lines HAProxy 2.6.12 sends
/// for the same configuration.
#[test]
fn httpchk_request_inheritance_as_haproxy() {
    let ip = test_ip();
    let origin = || {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let s2 = seen.clone();
        let (addr, _) = raw_origin(ip, move |s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            if let Some(head) = read_head(&mut r) {
                s2.lock()
                    .unwrap()
                    .push(head.lines().next().unwrap_or("").to_string());
                let mut w = &s;
                let _ = w.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        });
        (addr, seen)
    };
    let (a1, seen1) = origin();
    let (a2, seen2) = origin();
    let (a3, seen3) = origin();
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults d1\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n    option httpchk GET /health\n\
frontend fe\n    bind {bind}\n    default_backend own_uri\n\
backend own_uri\n    http-check send uri /b\n    server s {a1} check inter 100\n\
defaults d2\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n    option httpchk\n    http-check send meth POST uri /a hdr X-A 1\n\
backend own_option\n    option httpchk GET /own\n    server s {a2} check inter 100\n\
backend inherits\n    server s {a3} check inter 100\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let first = |seen: &std::sync::Arc<std::sync::Mutex<Vec<String>>>| {
        wait_until("a check", || !seen.lock().unwrap().is_empty());
        seen.lock().unwrap()[0].clone()
    };
    assert_eq!(first(&seen1), "OPTIONS /b HTTP/1.0");
    assert_eq!(first(&seen2), "GET /own HTTP/1.0");
    assert_eq!(first(&seen3), "POST /a HTTP/1.0");
}
