//! Fewer packets per connection: `option tcp-smart-accept`,
//! `option tcp-smart-connect`, and the FIN that leaves with the last bytes
//! of a response on a connection that closes.
//!
//! What the kernel did is read back from the sockets of this process
//! (`TCP_INFO`: segments received, when the last data left and when the
//! last ACK came) and from `/proc/net/tcp` (the quick-ack state of the
//! proxy's listening sockets), so each assertion is about packets.

mod common;
use common::*;
use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;

/// What `TCP_INFO` says of a socket (the offsets of `struct tcp_info` in
/// `linux/tcp.h`, stable since Linux 4.2).
#[derive(Debug, Clone, Copy)]
struct TcpInfo {
    /// Milliseconds since the last data was sent.
    last_data_sent: u32,
    /// Milliseconds since the last ACK was received.
    last_ack_recv: u32,
    /// Segments received, the SYN (or SYN-ACK) included.
    segs_in: u32,
    /// Everything sent was acknowledged.
    all_acked: bool,
}

fn tcp_info(s: &TcpStream) -> TcpInfo {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes and `len` is a valid
    // in/out length for the call; the descriptor is open (borrowed).
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(
        r,
        0,
        "getsockopt(TCP_INFO): {}",
        std::io::Error::last_os_error()
    );
    assert!(len >= 144, "TCP_INFO too short: {len} bytes");
    let u32_at = |o: usize| u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap());
    TcpInfo {
        // tcpi_unacked (24) counts segments; what matters is zero or not.
        all_acked: u32_at(24) == 0,
        last_data_sent: u32_at(44),
        last_ack_recv: u32_at(56),
        segs_in: u32_at(140),
    }
}

/// `/proc/net/tcp` form of an IPv4 socket address.
fn proc_addr(a: SocketAddr) -> String {
    let IpAddr::V4(ip) = a.ip() else {
        panic!("IPv4 only")
    };
    let o = ip.octets();
    format!(
        "{:02X}{:02X}{:02X}{:02X}:{:04X}",
        o[3],
        o[2],
        o[1],
        o[0],
        a.port()
    )
}

/// The quick-ack field of every listening socket on `addr` (one per
/// worker): bit 0 is the kernel's "ping-pong" (delayed ACK) mode, what
/// `TCP_QUICKACK` 0 sets.
fn listener_pingpong(addr: SocketAddr) -> Vec<u32> {
    let want = proc_addr(addr);
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let listening = f.get(3) == Some(&"0A");
            (f.get(1) == Some(&want.as_str()) && listening)
                .then(|| f.get(14)?.parse::<u32>().ok().map(|v| v & 1))?
        })
        .collect()
}

/// An origin answering every request at once with a small body, and
/// keeping the connection open afterwards (it never closes first). Sends
/// the number of segments its side had received once the request was
/// read (`segs_in`, the SYN included) on `segs`.
fn quick_origin(ip: IpAddr, segs: mpsc::Sender<u32>) -> SocketAddr {
    let segs = std::sync::Mutex::new(segs);
    raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        while read_head(&mut r).is_some() {
            let n = tcp_info(&s).segs_in;
            let _ = segs.lock().unwrap().send(n);
            let mut w = &s;
            let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        }
        // Hold the connection until the proxy closes it.
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
    })
    .0
}

/// An origin that holds its answer until told to send it on `release`.
fn held_origin(ip: IpAddr, release: mpsc::Receiver<()>) -> SocketAddr {
    let release = std::sync::Mutex::new(release);
    raw_origin(ip, move |s| {
        let mut r = BufReader::new(s.try_clone().unwrap());
        if read_head(&mut r).is_none() {
            return;
        }
        let _ = release.lock().unwrap().recv();
        let mut w = &s;
        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    })
    .0
}

const DEFAULTS: &str = "global\n    nbthread 2\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 10s\n    timeout server 10s\n";

/// The listening sockets of an HTTP frontend are out of quick-ack mode by
/// default, those of a TCP frontend are not; `no option` and `option`
/// reverse that, on every worker's socket.
#[test]
fn listeners_follow_tcp_smart_accept() {
    let ip = test_ip();
    let (origin, _) = raw_origin(ip, |_| {});
    let b: Vec<SocketAddr> = (0..4).map(|_| free_addr(ip)).collect();
    let cfg = format!(
        "{DEFAULTS}\
frontend http_auto\n    bind {}\n    default_backend h\n\
frontend http_off\n    no option tcp-smart-accept\n    bind {}\n    default_backend h\n\
frontend tcp_auto\n    mode tcp\n    bind {}\n    default_backend t\n\
frontend tcp_on\n    mode tcp\n    option tcp-smart-accept\n    bind {}\n    default_backend t\n\
backend h\n    server o {origin}\n\
backend t\n    mode tcp\n    server o {origin}\n",
        b[0], b[1], b[2], b[3]
    );
    let _p = Proxy::start(&cfg, &b);
    let got: Vec<Vec<u32>> = b.iter().map(|a| listener_pingpong(*a)).collect();
    assert_eq!(got, [vec![1, 1], vec![0, 0], vec![0, 0], vec![1, 1]]);
}

/// With `option tcp-smart-accept` (the default in HTTP mode) the proxy's
/// kernel does not acknowledge the request on its own at once: the ACK
/// waits for the response, or for the delayed-ACK timer (40 ms or more)
/// when the response takes longer. Without it, the ACK comes at once.
/// The delay is measured by the client's kernel (`TCP_INFO`), not by this
/// thread's clock.
#[test]
fn smart_accept_delays_the_ack_of_the_request() {
    let ip = test_ip();
    let (release_tx, release_rx) = mpsc::channel();
    let origin = held_origin(ip, release_rx);
    let (smart, plain) = (free_addr(ip), free_addr(ip));
    let cfg = format!(
        "{DEFAULTS}\
frontend smart\n    bind {smart}\n    default_backend h\n\
frontend plain\n    no option tcp-smart-accept\n    bind {plain}\n    default_backend h\n\
backend h\n    server o {origin}\n"
    );
    let _p = Proxy::start(&cfg, &[smart, plain]);
    let mut ack_delay = Vec::new();
    for addr in [smart, plain] {
        let mut c = connect(addr);
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // The origin holds the response: only a pure ACK can acknowledge
        // the request meanwhile.
        wait_until("the request is acknowledged", || tcp_info(&c).all_acked);
        let i = tcp_info(&c);
        ack_delay.push(i.last_data_sent.saturating_sub(i.last_ack_recv));
        release_tx.send(()).unwrap();
        let mut r = BufReader::new(c);
        let resp = read_response(&mut r, false).expect("response");
        assert_eq!(resp.status, 200);
    }
    assert!(
        ack_delay[0] >= 30,
        "smart accept: ACK after {} ms",
        ack_delay[0]
    );
    assert!(
        ack_delay[1] <= 10,
        "quick ACK: ACK after {} ms",
        ack_delay[1]
    );
}

/// With `option tcp-smart-connect` the last ACK of the handshake with the
/// server rides with the request: the origin's side receives the SYN and
/// one segment (2), against SYN, ACK and request (3) without it.
#[test]
fn smart_connect_sends_the_request_with_the_handshake_ack() {
    let ip = test_ip();
    let (segs_tx, segs_rx) = mpsc::channel();
    let origin = quick_origin(ip, segs_tx);
    let (smart, plain) = (free_addr(ip), free_addr(ip));
    let cfg = format!(
        "{DEFAULTS}    option httpclose\n\
frontend smart\n    bind {smart}\n    default_backend s\n\
frontend plain\n    bind {plain}\n    default_backend p\n\
backend s\n    option tcp-smart-connect\n    server o {origin}\n\
backend p\n    server o {origin}\n"
    );
    let _p = Proxy::start(&cfg, &[smart, plain]);
    let mut seen = Vec::new();
    for addr in [smart, plain] {
        let resp = request(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(resp.body_str(), "hello");
        seen.push(
            segs_rx
                .recv_timeout(DEADLINE)
                .expect("origin saw the request"),
        );
    }
    assert_eq!(
        seen,
        [2, 3],
        "origin segments at the request, smart then plain"
    );
}

/// A response on a connection that closes leaves with the FIN in the same
/// segment, and at once: the client reads the body then the end of the
/// stream although the server keeps its connection open. The client's
/// kernel counts SYN-ACK, the quick ACK of the request and one segment
/// for the response and the FIN (4 when the FIN followed on its own).
#[test]
fn fin_leaves_with_the_last_bytes_in_close_mode() {
    let ip = test_ip();
    let (segs_tx, _segs_rx) = mpsc::channel();
    let origin = quick_origin(ip, segs_tx);
    let bind = free_addr(ip);
    let cfg = format!(
        "{DEFAULTS}    option httpclose\n    no option tcp-smart-accept\n\
frontend f\n    bind {bind}\n    default_backend h\n\
backend h\n    server o {origin}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for _ in 0..3 {
        let mut c = connect(bind);
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).expect("the proxy closes");
        let text = String::from_utf8_lossy(&all);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.to_ascii_lowercase()
                .contains("\r\nconnection: close\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\nhello"), "{text}");
        assert_eq!(tcp_info(&c).segs_in, 3, "SYN-ACK, ACK, response with FIN");
    }
}

/// In TCP mode, bytes that arrive with the peer's FIN leave with the FIN:
/// the origin sends its answer and its FIN in one segment (`MSG_MORE`,
/// then `shutdown`), and the client receives them in one segment too, as
/// HAProxy forwards them when `EPOLLRDHUP` comes with the data (without
/// this, the proxy's FIN followed in a segment of its own). Both ways: the
/// client's request and FIN reach the origin in one segment as well.
#[test]
fn fin_leaves_with_the_last_bytes_in_tcp_mode() {
    let ip = test_ip();
    let (segs_tx, segs_rx) = mpsc::channel();
    let segs_tx = std::sync::Mutex::new(segs_tx);
    let (origin, _) = raw_origin(ip, move |mut s| {
        let mut req = Vec::new();
        let _ = s.read_to_end(&mut req);
        if req.is_empty() {
            // The start-up probe's connection, forwarded in TCP mode.
            return;
        }
        let _ = segs_tx.lock().unwrap().send((req, tcp_info(&s).segs_in));
        let answer = b"pong, then the end";
        // SAFETY: `answer` is readable for its length; the descriptor is
        // this connection's, open while `s` lives.
        let r = unsafe {
            libc::send(
                s.as_raw_fd(),
                answer.as_ptr().cast(),
                answer.len(),
                libc::MSG_MORE,
            )
        };
        assert_eq!(r, answer.len() as isize);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    let bind = free_addr(ip);
    let cfg = format!(
        "{DEFAULTS}    mode tcp\nfrontend f\n    bind {bind}\n    default_backend t\n\
backend t\n    server o {origin}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    for _ in 0..3 {
        let mut c = connect(bind);
        let fd = c.as_raw_fd();
        let req = b"ping and the end";
        // SAFETY: as above, on the client's own descriptor.
        let r = unsafe { libc::send(fd, req.as_ptr().cast(), req.len(), libc::MSG_MORE) };
        assert_eq!(r, req.len() as isize);
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let (got, origin_segs) = segs_rx.recv_timeout(DEADLINE).expect("the origin read");
        assert_eq!(got, req, "the request reached the origin whole");
        // SYN, handshake ACK or the request, request with FIN.
        assert!(
            origin_segs <= 3,
            "the origin received {origin_segs} segments up to the FIN: the request and the FIN came apart"
        );
        let mut all = Vec::new();
        c.read_to_end(&mut all).expect("the proxy closes");
        assert_eq!(all, b"pong, then the end");
        // SYN-ACK, the ACK of the request (with the proxy's FIN when it
        // came first), the answer with the FIN.
        let segs = tcp_info(&c).segs_in;
        assert!(
            segs <= 3,
            "the client received {segs} segments: the answer and the FIN came apart"
        );
    }
}

/// `bind ... defer-accept` (`TCP_DEFER_ACCEPT`): the kernel hands a
/// connection to the proxy only once data arrived on it, so a silent
/// client is not a current connection of its frontend, while on a plain
/// `bind` it is at once; the deferred one is served as soon as it sends.
#[test]
fn defer_accept_hands_over_connections_once_data_arrived() {
    use std::time::{Duration, Instant};
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let (plain, deferred) = (free_addr(ip), free_addr(ip));
    let sock = admin_sock("smart", "defer");
    let cfg = format!(
        "global\n    nbthread 1\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 5s\n    timeout client 10s\n    timeout server 10s\n\
frontend plain\n    bind {plain}\n    default_backend b\n\
frontend deferred\n    bind {deferred} defer-accept\n    default_backend b\n\
backend b\n    server o {origin}\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[plain, deferred]);
    let scur = |fe: &str| stat_of(&sock, fe, "FRONTEND", "scur");
    let _silent = connect(plain);
    wait_until("the plain frontend's silent client counted", || {
        scur("plain") == "1"
    });
    let mut d = connect(deferred);
    // A bounded window (the kernel's deferral lasts about a second): the
    // silent client stays unknown to the proxy.
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        assert_eq!(scur("deferred"), "0", "a silent client was accepted");
        std::thread::sleep(Duration::from_millis(20));
    }
    d.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = read_response(&mut BufReader::new(d), false).expect("response");
    assert_eq!(r.status, 200);
}

/// A server connection the proxy closes first (the response said
/// `Connection: close`, but the server keeps its end open) is closed with
/// a reset, as HAProxy 2.6 does (its "linger risk" on server connections:
/// checked with the same origin behind it), so that the proxy's ports do
/// not pile up in TIME_WAIT.
#[test]
fn server_connections_closed_first_by_the_proxy_are_reset() {
    use std::time::Duration;
    let ip = test_ip();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let (origin, _) = raw_origin(ip, move |mut s| {
        let mut b = [0u8; 4096];
        let _ = s.read(&mut b);
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let seen = match s.read(&mut b) {
            Ok(0) => "fin",
            Ok(_) => "data",
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => "reset",
            Err(_) => "nothing",
        };
        let _ = tx.lock().unwrap().send(seen);
    });
    let bind = free_addr(ip);
    let _p = Proxy::start(
        &http_cfg(bind, "", &format!("    server s1 {origin}")),
        &[bind],
    );
    let mut c = connect(bind);
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = read_response(&mut BufReader::new(c.try_clone().unwrap()), false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    assert_eq!(rx.recv_timeout(DEADLINE).unwrap(), "reset");
}
