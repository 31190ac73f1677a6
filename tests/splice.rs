//! Kernel splicing in TCP mode (`option splice-*`, `maxpipes`,
//! `nosplice`, `-dS`), end to end: multi-MiB transfers both ways arrive
//! byte for byte, the byte counters match, half-close still works, and
//! `show info`'s `Maxpipes`/`PipesUsed`/`PipesFree` tell whether pipes
//! were used.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Client to server bytes of one transfer.
const UP: usize = 3 << 20;
/// Server to client bytes of one transfer.
const DOWN: usize = 5 << 20;

/// Deterministic bytes, different for each `seed`.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 11) as u8
        })
        .collect()
}

/// What the origin received on each connection, in order of completion.
type Received = Arc<Mutex<Vec<Vec<u8>>>>;

/// An origin that, once the client's first byte arrived, sends `DOWN`
/// bytes (seed 2) and shuts its write side while it reads what the client
/// sends until EOF, then closes. A connection that sends nothing (the
/// readiness probe of `Proxy::start`) gets nothing and is not recorded.
fn origin(ip: IpAddr) -> (SocketAddr, Received) {
    let got: Received = Arc::default();
    let sink = got.clone();
    let (addr, _) = raw_origin(ip, move |s| {
        let mut r = s;
        let mut buf = vec![0u8; 1];
        if !matches!(r.read(&mut buf), Ok(1)) {
            return;
        }
        let mut w = r.try_clone().expect("clone");
        let writer = std::thread::spawn(move || {
            let data = pattern(DOWN, 2);
            w.write_all(&data).expect("origin write");
            w.shutdown(Shutdown::Write).expect("origin shutdown");
        });
        r.read_to_end(&mut buf).expect("origin read");
        writer.join().expect("origin writer");
        sink.lock().unwrap().push(buf);
    });
    (addr, got)
}

/// One client: sends `UP` bytes (seed 1), half-closes, reads until EOF.
/// Returns what it received.
fn transfer(bind: SocketAddr) -> Vec<u8> {
    let s = connect(bind);
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(&pattern(UP, 1)).expect("client write");
        w.shutdown(Shutdown::Write).expect("client shutdown");
    });
    let mut r = s;
    let mut got = Vec::new();
    r.read_to_end(&mut got).expect("client read");
    writer.join().expect("client writer");
    got
}

/// Checks what both sides received: every byte, in order.
fn check(got_client: &[u8], received: &Received, n: usize) {
    assert_eq!(got_client.len(), DOWN);
    assert!(
        got_client == pattern(DOWN, 2),
        "server to client bytes differ"
    );
    wait_until("the origin saw every connection end", || {
        received.lock().unwrap().len() == n
    });
    for r in received.lock().unwrap().iter() {
        assert_eq!(r.len(), UP);
        assert!(*r == pattern(UP, 1), "client to server bytes differ");
    }
}

struct Setup {
    bind: SocketAddr,
    sock: PathBuf,
    received: Received,
    _proxy: Proxy,
}

/// A TCP listen section in front of [`origin`] with a stats socket;
/// `global` and `proxy` lines are added to those sections.
fn setup(global: &str, proxy: &str, args: &[&str]) -> Setup {
    let ip = test_ip();
    let (o, received) = origin(ip);
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fl-splice-{}-{ip}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let cfg = format!(
        "global\n    nbthread 2\n    maxconn 1000\n    stats socket {}\n{global}\n\
defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
listen app\n    bind {bind}\n{proxy}\n    server o {o}\n",
        sock.display()
    );
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let p = Proxy::start_with(&cfg, &[bind], |c| c.args(&args));
    wait_until("the stats socket", || sock.exists());
    Setup {
        bind,
        sock,
        received,
        _proxy: p,
    }
}

/// A `show info` field.
fn info(sock: &Path, field: &str) -> u64 {
    let out = ask(sock, "show info");
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}: ")))
        .unwrap_or_else(|| panic!("no {field} in show info:\n{out}"));
    line.trim().parse().expect("a number")
}

/// The frontend's `bin` and `bout` in `show stat`.
fn frontend_bytes(sock: &Path) -> (u64, u64) {
    let out = ask(sock, "show stat");
    let mut lines = out.lines();
    let head: Vec<&str> = lines
        .next()
        .unwrap()
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let row: Vec<&str> = lines
        .find(|l| l.starts_with("app,FRONTEND,"))
        .expect("frontend row")
        .split(',')
        .collect();
    let num = |n: &str| row[col(n)].parse::<u64>().unwrap();
    (num("bin"), num("bout"))
}

/// Waits until the frontend counted `n` transfers' bytes both ways.
fn wait_counted(sock: &Path, n: u64) {
    let want = (n * UP as u64, n * DOWN as u64);
    let end = std::time::Instant::now() + DEADLINE;
    while frontend_bytes(sock) != want && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(frontend_bytes(sock), want, "(bin, bout) of the frontend");
}

#[test]
fn spliced_transfer_both_ways_is_byte_identical() {
    let s = setup(
        "",
        "    option splice-request\n    option splice-response",
        &[],
    );
    assert_eq!(info(&s.sock, "Maxpipes"), 250, "maxconn/4 by default");
    let got = transfer(s.bind);
    check(&got, &s.received, 1);
    wait_counted(&s.sock, 1);
    // The pipes went back to the pools: none held, at least one exists.
    wait_until("pipes given back", || info(&s.sock, "PipesUsed") == 0);
    let free = info(&s.sock, "PipesFree");
    assert!((1..=250).contains(&free), "PipesFree {free}");
}

#[test]
fn maxpipes_one_with_two_concurrent_streams_falls_back_to_copying() {
    let s = setup(
        "    maxpipes 1",
        "    option splice-request\n    option splice-response",
        &[],
    );
    assert_eq!(info(&s.sock, "Maxpipes"), 1);
    let bind = s.bind;
    let a = std::thread::spawn(move || transfer(bind));
    let b = std::thread::spawn(move || transfer(bind));
    let (ga, gb) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!(ga.len(), DOWN);
    assert!(ga == gb, "both clients got the same bytes");
    check(&ga, &s.received, 2);
    wait_counted(&s.sock, 2);
    wait_until("pipes given back", || info(&s.sock, "PipesUsed") == 0);
    assert_eq!(info(&s.sock, "PipesFree"), 1, "never more than maxpipes");
}

#[test]
fn nosplice_copies_through_buffers() {
    let s = setup(
        "    nosplice",
        "    option splice-request\n    option splice-response",
        &[],
    );
    let got = transfer(s.bind);
    check(&got, &s.received, 1);
    wait_counted(&s.sock, 1);
    assert_eq!(info(&s.sock, "PipesFree"), 0);
    assert_eq!(info(&s.sock, "PipesUsed"), 0);
}

#[test]
fn dash_ds_disables_splicing() {
    let s = setup("", "    option splice-auto", &["-dS"]);
    let got = transfer(s.bind);
    check(&got, &s.received, 1);
    wait_counted(&s.sock, 1);
    assert_eq!(info(&s.sock, "PipesFree"), 0);
}

#[test]
fn splice_auto_splices_bulk_data_only() {
    let s = setup("", "    option splice-auto", &[]);
    // A short exchange never fills a buffer: no pipe.
    let mut c = connect(s.bind);
    c.write_all(b"hello").unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), DOWN);
    wait_until("the origin saw the short stream", || {
        s.received.lock().unwrap().len() == 1
    });
    assert_eq!(s.received.lock().unwrap()[0], b"hello");
    let after_short = info(&s.sock, "PipesFree");
    // The origin's 5 MiB is bulk data: that direction switched to a
    // pipe in the short stream already; the client's 5 bytes did not.
    assert!(after_short >= 1, "the download spliced: {after_short}");
    let got = transfer(s.bind);
    assert!(got == pattern(DOWN, 2));
    wait_until("the origin saw both streams", || {
        s.received.lock().unwrap().len() == 2
    });
    assert!(s.received.lock().unwrap()[1] == pattern(UP, 1));
    let want = (5 + UP as u64, 2 * DOWN as u64);
    wait_until("byte counters", || frontend_bytes(&s.sock) == want);
}

#[test]
fn a_plain_tcp_stream_without_splice_options_uses_no_pipe() {
    let s = setup("", "", &[]);
    assert_eq!(info(&s.sock, "Maxpipes"), 0, "no proxy splices");
    let got = transfer(s.bind);
    check(&got, &s.received, 1);
    wait_counted(&s.sock, 1);
    assert_eq!(info(&s.sock, "PipesFree"), 0);
}
