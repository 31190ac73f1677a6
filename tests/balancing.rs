//! Balancing algorithms end to end: real origins, real proxy, counting
//! which origin served each request.

mod common;
use common::*;
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr};

/// Three named origins and a proxy with `balance_lines` in its backend.
fn setup(
    balance_lines: &str,
    server_opts: [&str; 3],
) -> (Vec<fairlead_term::TermHandle>, SocketAddr, Proxy) {
    let ip = test_ip();
    let mut handles = Vec::new();
    let mut lines = String::from(balance_lines);
    for (i, opts) in server_opts.iter().enumerate() {
        let (h, a) = term(ip, &format!("s{}", i + 1));
        lines.push_str(&format!("\n    server s{} {a} {opts}", i + 1));
        handles.push(h);
    }
    let bind = free_addr(ip);
    let p = Proxy::start(&http_cfg(bind, "", &lines), &[bind]);
    (handles, bind, p)
}

/// Sends `n` requests over one keep-alive connection (paths from `path`,
/// extra headers from `hdr`), counting the `x-served-by` values.
fn count(
    bind: SocketAddr,
    n: usize,
    path: impl Fn(usize) -> String,
    hdr: impl Fn(usize) -> String,
) -> HashMap<String, usize> {
    let s = connect(bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut counts = HashMap::new();
    for i in 0..n {
        write!(w, "GET {} HTTP/1.1\r\nHost: x\r\n{}\r\n", path(i), hdr(i)).unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, 200);
        *counts
            .entry(resp.header("x-served-by").unwrap().to_string())
            .or_insert(0) += 1;
    }
    counts
}

fn share(c: &HashMap<String, usize>, name: &str) -> usize {
    c.get(name).copied().unwrap_or(0)
}

#[test]
fn static_rr_follows_weights() {
    let (_h, bind, _p) = setup(
        "    balance static-rr",
        ["weight 2", "weight 1", "weight 1"],
    );
    let c = count(bind, 2000, |_| "/".into(), |_| String::new());
    assert_eq!(share(&c, "s1"), 1000, "{c:?}");
    assert_eq!(share(&c, "s2"), 500, "{c:?}");
}

#[test]
fn leastconn_spreads_sequential_requests() {
    let (_h, bind, _p) = setup("    balance leastconn", ["", "", ""]);
    let c = count(bind, 1500, |_| "/".into(), |_| String::new());
    for s in ["s1", "s2", "s3"] {
        let n = share(&c, s);
        assert!((450..=550).contains(&n), "ties must round-robin: {c:?}");
    }
}

#[test]
fn first_fills_the_first_server() {
    let (_h, bind, _p) = setup("    balance first", ["maxconn 10", "maxconn 10", ""]);
    let c = count(bind, 300, |_| "/".into(), |_| String::new());
    assert_eq!(share(&c, "s1"), 300, "{c:?}");
}

#[test]
fn uri_hash_is_sticky_per_uri_and_spreads() {
    let (_h, bind, _p) = setup("    balance uri", ["", "", ""]);
    // One URI always lands on one server.
    let c = count(bind, 200, |_| "/same/path".into(), |_| String::new());
    assert_eq!(c.len(), 1, "{c:?}");
    // The query string is not part of the key by default.
    let c = count(
        bind,
        200,
        |i| format!("/same/path?x={i}"),
        |_| String::new(),
    );
    assert_eq!(c.len(), 1, "{c:?}");
    // Many URIs spread over every server.
    let c = count(bind, 3000, |i| format!("/obj/{i}"), |_| String::new());
    for s in ["s1", "s2", "s3"] {
        assert!(share(&c, s) > 600, "{c:?}");
    }
}

#[test]
fn url_param_and_header_hashing() {
    let (_h, bind, _p) = setup("    balance url_param user", ["", "", ""]);
    let c = count(
        bind,
        200,
        |i| format!("/a?x={i}&user=alice"),
        |_| String::new(),
    );
    assert_eq!(c.len(), 1, "{c:?}");
    let c = count(bind, 3000, |i| format!("/a?user=u{i}"), |_| String::new());
    assert_eq!(c.len(), 3, "{c:?}");
    // Without the parameter: round robin.
    let c = count(bind, 300, |_| "/a".into(), |_| String::new());
    assert_eq!(share(&c, "s1"), 100, "{c:?}");

    let (_h2, bind2, _p2) = setup("    balance hdr(X-User)", ["", "", ""]);
    let c = count(bind2, 200, |_| "/".into(), |_| "X-User: bob\r\n".into());
    assert_eq!(c.len(), 1, "{c:?}");
    let c = count(bind2, 3000, |_| "/".into(), |i| format!("X-User: u{i}\r\n"));
    assert_eq!(c.len(), 3, "{c:?}");
}

#[test]
fn source_hash_is_sticky_per_client_address() {
    let (_h, bind, _p) = setup("    balance source\n    hash-type consistent", ["", "", ""]);
    let mut by_src: HashMap<IpAddr, String> = HashMap::new();
    let mut servers = std::collections::HashSet::new();
    for i in 0..60u8 {
        let src: IpAddr = format!("127.200.{}.{}", i / 250, i % 250 + 1)
            .parse()
            .unwrap();
        for _ in 0..3 {
            let sock =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            sock.bind(&SocketAddr::new(src, 0).into()).unwrap();
            sock.connect(&bind.into()).unwrap();
            let s: std::net::TcpStream = sock.into();
            s.set_read_timeout(Some(DEADLINE)).unwrap();
            let mut w = s.try_clone().unwrap();
            w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let resp = read_response(&mut BufReader::new(s), false).unwrap();
            let who = resp.header("x-served-by").unwrap().to_string();
            servers.insert(who.clone());
            let prev = by_src.entry(src).or_insert_with(|| who.clone());
            assert_eq!(*prev, who, "source {src} moved between servers");
        }
    }
    assert_eq!(servers.len(), 3, "60 sources should reach all servers");
}

#[test]
fn random_draws_spread_the_load() {
    let (_h, bind, _p) = setup("    balance random(2)", ["", "", ""]);
    let c = count(bind, 3000, |_| "/".into(), |_| String::new());
    // random(2) takes the less loaded of two draws: on a loaded machine a
    // server connection still closing skews the draws (one server got
    // 1315 of 3000 in a full-suite run), so the bound only checks that
    // every server gets a real share.
    for s in ["s1", "s2", "s3"] {
        let n = share(&c, s);
        assert!((500..=1500).contains(&n), "{c:?}");
    }
}

#[test]
fn roundrobin_is_exact_across_worker_threads() {
    let ip = test_ip();
    let mut lines = String::from("    balance roundrobin");
    let mut handles = Vec::new();
    for i in 1..=3 {
        let (h, a) = term(ip, &format!("s{i}"));
        lines.push_str(&format!("\n    server s{i} {a}"));
        handles.push(h);
    }
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &lines).replace("nbthread 2", "nbthread 4");
    let _p = Proxy::start(&cfg, &[bind]);
    // 8 clients in parallel, spread over the 4 workers by the kernel.
    let workers: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || count(bind, 300, |_| "/".into(), |_| String::new())))
        .collect();
    let mut total: HashMap<String, usize> = HashMap::new();
    for w in workers {
        for (k, v) in w.join().unwrap() {
            *total.entry(k).or_insert(0) += v;
        }
    }
    for s in ["s1", "s2", "s3"] {
        let n = share(&total, s);
        assert!(
            (776..=824).contains(&n),
            "each server within 3% of 1/3: {total:?}"
        );
    }
}
