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

/// Whether the proxy under test splices: not on the io_uring path
/// (`FAIRLEAD_IO_URING=1`, the second run in `.ci/run`), whose connections
/// never splice. There the same bodies and streams are sent from the
/// ring's receive buffers without a copy (docs/io-uring.md): every byte,
/// boundary and counter is checked the same, and no pipe may exist.
fn splices() -> bool {
    std::env::var("FAIRLEAD_IO_URING").map_or(true, |v| v != "1")
}

/// Once the pipes went back to the pools: at least one pipe was used and
/// nothing was lent (epoll), or no pipe exists and bytes were lent
/// (io_uring, `show info`'s `UringLentBytes`).
fn assert_spliced(sock: &Path, what: &str) {
    wait_until("pipes given back", || info(sock, "PipesUsed") == 0);
    let free = info(sock, "PipesFree");
    let lent = info(sock, "UringLentBytes");
    if splices() {
        assert!(free >= 1, "{what}: PipesFree {free}");
        assert_eq!(lent, 0, "{what}: nothing is lent on epoll");
    } else {
        assert_eq!(free, 0, "{what}: io_uring connections never splice");
        assert!(lent > 0, "{what}: the bytes went through loans");
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
    assert_spliced(&s.sock, "both directions spliced");
    let free = info(&s.sock, "PipesFree");
    assert!(free <= 250, "PipesFree {free}");
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
    assert_spliced(&s.sock, "the streams spliced");
    assert!(info(&s.sock, "PipesFree") <= 1, "never more than maxpipes");
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
    // The origin's 5 MiB is bulk data: that direction switched to a
    // pipe in the short stream already; the client's 5 bytes did not.
    assert_spliced(&s.sock, "the download spliced");
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

// ---------------------------------------------------------------------
// HTTP mode: bodies of known length and close-delimited responses are
// spliced once the head is forwarded; chunked bodies never are.
// ---------------------------------------------------------------------

/// A large response body (3 MiB and a few bytes, so that it ends inside
/// a pipe's worth).
const BIG: usize = (3 << 20) + 4321;

/// The request line's path, split on `/` (`/len/100/7` gives `["len",
/// "100", "7"]`).
fn route(head: &str) -> Vec<String> {
    let line = head.lines().next().unwrap_or_default();
    let path = line.split(' ').nth(1).unwrap_or_default();
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// A header's value in a raw head, by lower-case name.
fn head_value(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// An HTTP/1.1 keep-alive origin, driven by the path:
/// - `/len/N/S`: `N` bytes of `pattern(N, S)` with a content-length;
/// - `/chunked/N/S`: the same bytes, chunked in pieces of 64 KiB;
/// - `/close/N/S`: the same bytes, delimited by the close;
/// - `/stall/N/S`: announces `2N` bytes, sends `N`, then stalls (until
///   the peer closes or 30 s);
/// - `POST /check/S`: answers `<length> <true|false>` (whether the body
///   is `pattern(length, S)`).
///
/// Returns the address and the number of connections accepted.
fn http_origin(ip: IpAddr) -> (SocketAddr, Arc<std::sync::atomic::AtomicU32>) {
    raw_origin(ip, |s| {
        let mut r = std::io::BufReader::new(s.try_clone().expect("clone"));
        let mut w = s;
        while let Some(head) = read_head(&mut r) {
            let len: usize = head_value(&head, "content-length").map_or(0, |v| v.parse().unwrap());
            let mut body = vec![0u8; len];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            let p = route(&head);
            let num = |i: usize| p.get(i).and_then(|x| x.parse::<usize>().ok()).unwrap_or(0);
            let data = pattern(num(1), num(2) as u32);
            let ok = match p.first().map(String::as_str) {
                Some("len") => {
                    let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", data.len());
                    w.write_all(h.as_bytes()).and_then(|_| w.write_all(&data))
                }
                Some("chunked") => {
                    let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                    for c in data.chunks(65536) {
                        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                        out.extend_from_slice(c);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"0\r\n\r\n");
                    w.write_all(&out)
                }
                Some("close") => {
                    let h = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n";
                    let _ = w.write_all(h).and_then(|_| w.write_all(&data));
                    return;
                }
                Some("stall") => {
                    let h = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                        2 * data.len()
                    );
                    let _ = w.write_all(h.as_bytes()).and_then(|_| w.write_all(&data));
                    // Wait for the peer's close (a read returns 0 or fails).
                    w.set_read_timeout(Some(std::time::Duration::from_secs(30)))
                        .unwrap();
                    let _ = w.read(&mut [0u8; 1]);
                    return;
                }
                Some("check") => {
                    let seed = p.get(1).and_then(|x| x.parse().ok()).unwrap_or(0);
                    let text = format!("{} {}", body.len(), body == pattern(body.len(), seed));
                    let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", text.len());
                    w.write_all(h.as_bytes())
                        .and_then(|_| w.write_all(text.as_bytes()))
                }
                _ => w.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"),
            };
            if ok.is_err() {
                return;
            }
        }
    })
}

struct HttpSetup {
    bind: SocketAddr,
    sock: PathBuf,
    /// The syslog sink of the `log-format "%ST %B %U"` lines.
    log: std::net::UdpSocket,
    /// Connections the origin accepted.
    origin_conns: Arc<std::sync::atomic::AtomicU32>,
    _proxy: Proxy,
}

/// An HTTP listen section in front of [`http_origin`], with a stats
/// socket and a log line per request (status, bytes out, bytes in).
fn http_setup(global: &str, proxy: &str, args: &[&str]) -> HttpSetup {
    let ip = test_ip();
    let (o, origin_conns) = http_origin(ip);
    let log = std::net::UdpSocket::bind((ip, 0)).unwrap();
    log.set_read_timeout(Some(DEADLINE)).unwrap();
    let sink = log.local_addr().unwrap();
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fl-hsplice-{}-{ip}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let cfg = format!(
        "global\n    nbthread 2\n    maxconn 1000\n    stats socket {}\n{global}\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
listen app\n    bind {bind}\n    log {sink} local0\n    option dontlognull\n    log-format \"%ST %B %U\"\n{proxy}\n\
    server o {o}\n",
        sock.display()
    );
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let p = Proxy::start_with(&cfg, &[bind], |c| c.args(&args));
    wait_until("the stats socket", || sock.exists());
    HttpSetup {
        bind,
        sock,
        log,
        origin_conns,
        _proxy: p,
    }
}

/// The next log line's `(status, bytes out, bytes in)`.
fn logged(s: &HttpSetup) -> (u16, u64, u64) {
    let mut buf = [0u8; 2048];
    let n = s.log.recv(&mut buf).expect("a log line");
    let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
    let f: Vec<&str> = line.rsplitn(4, ' ').collect();
    let num = |i: usize| {
        f[i].parse::<u64>()
            .unwrap_or_else(|_| panic!("log line {line}"))
    };
    (num(2) as u16, num(1), num(0))
}

/// Reads one response from `r`: its head, its body (a content-length,
/// chunked or close-delimited one, decoded) and the bytes it took on the
/// wire.
fn read_one(r: &mut impl std::io::BufRead) -> (String, Vec<u8>, u64) {
    let head = read_head(r).expect("a response head");
    let mut body = Vec::new();
    let mut wire = head.len();
    if head_value(&head, "transfer-encoding").is_some() {
        loop {
            let mut line = String::new();
            r.read_line(&mut line).expect("a chunk size");
            let n = usize::from_str_radix(line.trim(), 16).expect("hex size");
            let mut chunk = vec![0u8; n + 2];
            r.read_exact(&mut chunk).expect("a chunk");
            wire += line.len() + chunk.len();
            body.extend_from_slice(&chunk[..n]);
            if n == 0 {
                break;
            }
        }
        return (head, body, wire as u64);
    }
    match head_value(&head, "content-length") {
        Some(n) => {
            body.resize(n.parse().unwrap(), 0);
            r.read_exact(&mut body).expect("the whole body");
        }
        None => {
            r.read_to_end(&mut body).expect("the body until the close");
        }
    }
    wire += body.len();
    (head, body, wire as u64)
}

/// One GET on a new connection: the response's head, body and wire size.
fn fetch(bind: SocketAddr, path: &str) -> (String, Vec<u8>, u64) {
    let mut c = connect(bind);
    c.write_all(format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n").as_bytes())
        .unwrap();
    read_one(&mut std::io::BufReader::new(c))
}

#[test]
fn http_keep_alive_responses_splice_with_exact_boundaries() {
    let s = http_setup("", "    option splice-response", &[]);
    let c = connect(s.bind);
    let mut w = c.try_clone().unwrap();
    // Two requests pipelined in one write: the first large body must end
    // exactly where the second response starts.
    let a = "GET /len/3149049/3 HTTP/1.1\r\nhost: t\r\n\r\n";
    let b = format!("GET /len/{BIG}/4 HTTP/1.1\r\nhost: t\r\n\r\n");
    w.write_all(format!("{a}{b}").as_bytes()).unwrap();
    let mut r = std::io::BufReader::new(c);
    let (h1, b1, wire1) = read_one(&mut r);
    assert!(h1.starts_with("HTTP/1.1 200"), "{h1}");
    assert_eq!(b1.len(), 3_149_049);
    assert!(b1 == pattern(3_149_049, 3), "first body differs");
    let (h2, b2, wire2) = read_one(&mut r);
    assert!(h2.starts_with("HTTP/1.1 200"), "{h2}");
    assert_eq!(b2.len(), BIG);
    assert!(b2 == pattern(BIG, 4), "second body differs");
    // A third, small one on the same connection still parses.
    w.write_all(b"GET /len/10/5 HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let (_, b3, _) = read_one(&mut r);
    assert_eq!(b3, pattern(10, 5));
    // The server connection was kept and reused: its framing held too.
    assert_eq!(s.origin_conns.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The log counts the bytes the client got, head and body.
    assert_eq!(logged(&s), (200, wire1, a.len() as u64));
    assert_eq!(logged(&s), (200, wire2, b.len() as u64));
    let _ = logged(&s);
    // Spliced: a pipe exists and went back to the pool.
    assert_spliced(&s.sock, "a pipe was used");
}

/// A POST of `len` bytes (`pattern(len, 6)`) followed, in the same write,
/// by a GET; returns the two responses' bodies and the POST's wire size.
fn post_then_get(bind: SocketAddr, len: usize) -> (String, Vec<u8>, u64) {
    let (checked, next, wire, _) = post_then_get_counted(bind, len);
    (checked, next, wire)
}

/// [`post_then_get`], with the bytes of both exchanges on the wire:
/// (requests, responses).
fn post_then_get_counted(bind: SocketAddr, len: usize) -> (String, Vec<u8>, u64, (u64, u64)) {
    let c = connect(bind);
    let mut w = c.try_clone().unwrap();
    let head = format!("POST /check/6 HTTP/1.1\r\nhost: t\r\ncontent-length: {len}\r\n\r\n");
    let get = "GET /len/1000/7 HTTP/1.1\r\nhost: t\r\n\r\n";
    let mut out = head.clone().into_bytes();
    out.extend_from_slice(&pattern(len, 6));
    out.extend_from_slice(get.as_bytes());
    let writer = std::thread::spawn(move || w.write_all(&out).expect("client write"));
    let mut r = std::io::BufReader::new(c);
    let (_, checked, wire1) = read_one(&mut r);
    let (_, next, wire2) = read_one(&mut r);
    writer.join().unwrap();
    let wire = (head.len() + len) as u64;
    let both = (wire + get.len() as u64, wire1 + wire2);
    (String::from_utf8(checked).unwrap(), next, wire, both)
}

#[test]
fn http_post_body_splices_exactly_up_to_the_next_request() {
    let s = http_setup("", "    option splice-request", &[]);
    let (checked, next, wire, both) = post_then_get_counted(s.bind, BIG);
    assert_eq!(checked, format!("{BIG} true"), "the origin got the body");
    assert!(next == pattern(1000, 7), "the pipelined GET was answered");
    let (status, _, bytes_in) = logged(&s);
    assert_eq!((status, bytes_in), (200, wire), "%U is the request's size");
    assert_spliced(&s.sock, "the request body spliced");
    // The frontend's bin and bout: every byte of both exchanges.
    wait_until("byte counters", || frontend_bytes(&s.sock) == both);
}

#[test]
fn http_dash_ds_copies_bodies() {
    let s = http_setup(
        "",
        "    option splice-request\n    option splice-response",
        &["-dS"],
    );
    let (checked, next, wire) = post_then_get(s.bind, BIG);
    assert_eq!(checked, format!("{BIG} true"));
    assert!(next == pattern(1000, 7));
    assert_eq!(logged(&s).2, wire);
    let _ = logged(&s); // the pipelined GET
    let (_, body, wire) = fetch(s.bind, &format!("/len/{BIG}/8"));
    assert!(body == pattern(BIG, 8));
    assert_eq!(logged(&s).1, wire, "%B is the response's size");
    assert_eq!(info(&s.sock, "PipesFree"), 0, "-dS: no pipe");
    assert_eq!(info(&s.sock, "PipesUsed"), 0);
}

#[test]
fn http_chunked_responses_are_never_spliced() {
    let s = http_setup("", "    option splice-response", &[]);
    let path = format!("/chunked/{BIG}/9");
    let (head, body, wire) = fetch(s.bind, &path);
    assert!(head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked"));
    assert!(body == pattern(BIG, 9), "chunked body differs");
    let req = format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n");
    assert_eq!(logged(&s), (200, wire, req.len() as u64));
    assert_eq!(info(&s.sock, "PipesUsed"), 0);
    assert_eq!(info(&s.sock, "PipesFree"), 0, "no pipe for a chunked body");
    // The same proxy splices a body of known length.
    let (_, body, wire) = fetch(s.bind, &format!("/len/{BIG}/9"));
    assert!(body == pattern(BIG, 9));
    assert_eq!(logged(&s).1, wire);
    assert_spliced(&s.sock, "the length body spliced");
}

#[test]
fn http_close_delimited_response_splices_until_the_close() {
    let s = http_setup("", "    option splice-response", &[]);
    let (head, body, wire) = fetch(s.bind, &format!("/close/{BIG}/10"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body == pattern(BIG, 10), "close-delimited body differs");
    assert_eq!(logged(&s).1, wire);
    assert_spliced(&s.sock, "the close-delimited body spliced");
}

#[test]
fn http_splice_auto_splices_bulk_bodies_only() {
    let s = http_setup("", "    option splice-auto", &[]);
    // Below one buffer (tune.bufsize 16384): copied.
    let (_, body, wire) = fetch(s.bind, "/len/12000/11");
    assert!(body == pattern(12000, 11));
    assert_eq!(logged(&s).1, wire);
    assert_eq!(info(&s.sock, "PipesFree"), 0, "a small body uses no pipe");
    let (checked, next, wire) = post_then_get(s.bind, BIG);
    assert_eq!(checked, format!("{BIG} true"));
    assert!(next == pattern(1000, 7));
    assert_eq!(logged(&s).2, wire);
    let (_, body, wire) = fetch(s.bind, &format!("/len/{BIG}/12"));
    assert!(body == pattern(BIG, 12));
    let _ = logged(&s); // the pipelined GET
    assert_eq!(logged(&s).1, wire);
    assert_spliced(&s.sock, "bulk bodies spliced");
}

#[test]
fn http_server_timeout_applies_while_splicing() {
    let s = http_setup(
        "",
        "    option splice-response\n    timeout server 500ms",
        &[],
    );
    let start = std::time::Instant::now();
    let (head, body, _) = {
        let mut c = connect(s.bind);
        c.write_all(b"GET /stall/1048576/13 HTTP/1.1\r\nhost: t\r\n\r\n")
            .unwrap();
        let mut r = std::io::BufReader::new(c);
        let head = read_head(&mut r).expect("a head");
        let mut body = Vec::new();
        // The proxy closes when the server times out mid-body.
        r.read_to_end(&mut body).expect("EOF before the deadline");
        (head, body, ())
    };
    assert!(head.contains("content-length: 2097152"), "{head}");
    assert_eq!(
        body.len(),
        1 << 20,
        "the first half arrived, then the close"
    );
    assert!(body == pattern(1 << 20, 13));
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(8), "took {took:?}");
    assert!(info(&s.sock, "PipesFree") + info(&s.sock, "PipesUsed") <= 1);
    wait_until("the pipe given back", || info(&s.sock, "PipesUsed") == 0);
}
