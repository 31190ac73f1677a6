//! Server maxconn queues, retries and cookie persistence end to end.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::time::Duration;

#[test]
fn maxconn_queues_requests_then_serves_them() {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(
            bind,
            "    timeout queue 10s",
            &format!("    server s {a} maxconn 1"),
        ),
        &[bind],
    );
    // Five slow requests at once: the origin never sees more than one at a
    // time, and all are served.
    let clients: Vec<_> = (0..5)
        .map(|_| std::thread::spawn(move || get(bind, "/?t=100").status))
        .collect();
    for c in clients {
        assert_eq!(c.join().unwrap(), 200);
    }
    assert_eq!(t.requests(), 5);
}

#[test]
fn queue_timeout_gives_503() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(
            bind,
            "    timeout queue 200ms",
            &format!("    server s {a} maxconn 1"),
        ),
        &[bind],
    );
    let slow = std::thread::spawn(move || get(bind, "/?t=2000").status);
    // While the slow request holds the only slot, a request waits 200ms in
    // the queue and gets 503 (one sent before the slow one may succeed).
    let started = std::time::Instant::now();
    let mut statuses = Vec::new();
    while started.elapsed() < Duration::from_secs(5) {
        let r = get(bind, "/");
        statuses.push(r.status);
        if r.status == 503 {
            break;
        }
    }
    assert_eq!(statuses.last(), Some(&503), "{statuses:?}");
    assert_eq!(slow.join().unwrap(), 200);
}

#[test]
fn cookie_insert_sticks_then_fails_over() {
    let ip = test_ip();
    let (mut t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let bind = free_addr(ip);
    let servers = format!(
        "    cookie SRV insert indirect nocache\n    option redispatch\n    retries 1\n\
    server s1 {a1} cookie c1\n    server s2 {a2} cookie c2"
    );
    let _p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    // First visit: the proxy inserts a cookie naming the server.
    let r = get(bind, "/");
    let served = r.header("x-served-by").unwrap().to_string();
    let set = r.header("set-cookie").unwrap().to_string();
    let value = if served == "s1" { "c1" } else { "c2" };
    assert!(set.starts_with(&format!("SRV={value}; path=/")), "{set}");
    assert_eq!(r.header("cache-control"), Some("private"));
    // With the cookie, every request sticks, and no new cookie is set.
    for _ in 0..10 {
        let r = request(
            bind,
            &format!(
                "GET / HTTP/1.1\r\nHost: x\r\nCookie: SRV={value}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(r.header("x-served-by"), Some(served.as_str()));
        assert_eq!(r.header("set-cookie"), None);
    }
    // Sticky to s1 specifically; then s1 dies: the request goes to s2,
    // which gets the cookie instead.
    let r = request(
        bind,
        "GET / HTTP/1.1\r\nHost: x\r\nCookie: SRV=c1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.header("x-served-by"), Some("s1"));
    t1.stop();
    let r = request(
        bind,
        "GET / HTTP/1.1\r\nHost: x\r\nCookie: SRV=c1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-served-by"), Some("s2"));
    assert!(r.header("set-cookie").unwrap().starts_with("SRV=c2"));
}

#[test]
fn indirect_cookie_is_hidden_from_the_server() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        while let Some(head) = read_head(&mut r) {
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}",
                head.len()
            );
        }
    });
    let bind = free_addr(ip);
    let servers = format!("    cookie SRV insert indirect\n    server s1 {origin} cookie c1");
    let _p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    let r = request(
        bind,
        "GET / HTTP/1.1\r\nHost: x\r\nCookie: a=1; SRV=c1; b=2\r\nConnection: close\r\n\r\n",
    );
    let seen = r.body_str();
    assert!(seen.contains("Cookie: a=1; b=2\r\n"), "{seen}");
}

#[test]
fn prefix_and_rewrite_modes() {
    let ip = test_ip();
    // The application sets its own session cookie and echoes what it got.
    let (origin, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        while let Some(head) = read_head(&mut r) {
            let cookie = head
                .lines()
                .find(|l| l.starts_with("Cookie:"))
                .unwrap_or("none")
                .to_string();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nSet-Cookie: JSESSIONID=abc123; Path=/\r\nContent-Length: {}\r\n\r\n{cookie}",
                cookie.len()
            );
        }
    });
    let bind = free_addr(ip);
    let servers = format!("    cookie JSESSIONID prefix\n    server app1 {origin} cookie a1");
    let _p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    let r = get(bind, "/");
    assert_eq!(r.header("set-cookie"), Some("JSESSIONID=a1~abc123; Path=/"));
    let r = request(
        bind,
        "GET / HTTP/1.1\r\nHost: x\r\nCookie: JSESSIONID=a1~abc123\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.body_str(), "Cookie: JSESSIONID=abc123");

    let bind2 = free_addr(ip);
    let servers2 = format!("    cookie JSESSIONID rewrite\n    server app1 {origin} cookie a1");
    let _p2 = Proxy::start(&http_cfg(bind2, "", &servers2), &[bind2]);
    let r = get(bind2, "/");
    assert_eq!(r.header("set-cookie"), Some("JSESSIONID=a1; Path=/"));
}

#[test]
fn retry_on_503_goes_to_another_server() {
    let ip = test_ip();
    let (bad, _) = raw_origin(ip, |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        while read_head(&mut r).is_some() {
            let _ = s.write_all(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let (_t, good) = term(ip, "good");
    let bind = free_addr(ip);
    let servers = format!(
        "    retries 1\n    option redispatch\n    retry-on 503\n    server bad {bad}\n    server good {good}"
    );
    let _p = Proxy::start(&http_cfg(bind, "", &servers), &[bind]);
    for _ in 0..6 {
        let r = get(bind, "/");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-served-by"), Some("good"));
    }
    // A POST with a body is not replayed: the 503 reaches the client.
    let mut saw_503 = false;
    for _ in 0..4 {
        let r = request(
            bind,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
        );
        saw_503 |= r.status == 503;
    }
    assert!(saw_503);
}
