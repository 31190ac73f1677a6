//! The peers protocol against a real HAProxy 2.6 and between two Fairlead
//! processes: entries created by traffic through one side appear in the
//! other side's `show table`. Each process has its own loopback address;
//! every check polls with a deadline.

mod common;

use common::*;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sock_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fairlead-peers-{}-{tag}.sock", std::process::id()))
}

/// The `peers` section every process shares, only `-L` differs.
fn peers_section(peers: &[(&str, SocketAddr)]) -> String {
    let mut s = String::from("peers mesh\n");
    for (n, a) in peers {
        s.push_str(&format!("    peer {n} {a}\n"));
    }
    s.push_str(
        "    table t type string len 32 size 1k expire 60s store http_req_cnt,http_req_rate(10s),gpc0\n",
    );
    s
}

fn proxy_cfg(sock: &Path, http: SocketAddr, section: &str) -> String {
    proxy_cfg_with(sock, http, section, "")
}

/// [`proxy_cfg`] with extra frontend lines and a backend `bk` holding a
/// proxy table synchronised through `peers mesh`.
fn proxy_cfg_with(sock: &Path, http: SocketAddr, section: &str, extra: &str) -> String {
    format!(
        "global\n    stats socket {} level admin\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
         {section}\
         frontend f\n    bind {http}\n\
         \x20   http-request track-sc0 req.hdr(x-k) table mesh/t\n\
         {extra}\
         \x20   http-request return status 200 content-type text/plain string ok\n\
         backend bk\n    stick-table type integer size 10 expire 60s peers mesh store gpc0\n",
        sock.display()
    )
}

fn hit(addr: SocketAddr, key: &str, n: usize) {
    for _ in 0..n {
        let r = request(
            addr,
            &format!("GET / HTTP/1.1\r\nHost: x\r\nx-k: {key}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(r.status, 200);
    }
}

/// Waits until `show table mesh/t` on `sock` has a line for `key` with
/// `http_req_cnt=<cnt>`.
fn wait_entry(sock: &Path, who: &str, key: &str, cnt: u32) {
    wait_value(sock, who, "mesh/t", key, &format!("http_req_cnt={cnt}"));
}

/// Waits until `show table <table>` on `sock` has a line for `key` with
/// the word `want`.
fn wait_value(sock: &Path, who: &str, table: &str, key: &str, want: &str) {
    let mut last = String::new();
    let end = Instant::now() + DEADLINE;
    while Instant::now() < end {
        last = ask(sock, &format!("show table {table}"));
        let found = last
            .lines()
            .any(|l| l.contains(&format!(" key={key} ")) && l.split(' ').any(|w| w == want));
        if found {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{who}: no entry {key} with {want}; last answer:\n{last}");
}

/// A Fairlead peer `fl` and a HAProxy peer `hap` in one `peers mesh`:
/// their peer and HTTP addresses and their stats sockets.
struct Mesh {
    peer_f: std::net::SocketAddr,
    http_f: std::net::SocketAddr,
    http_h: std::net::SocketAddr,
    section: String,
    sock_f: PathBuf,
    sock_h: PathBuf,
}

impl Mesh {
    /// Fresh addresses, and sockets named after `tag`.
    fn new(tag: &str) -> Mesh {
        let (ip_f, ip_h) = (test_ip(), test_ip());
        let (peer_f, peer_h) = (free_addr(ip_f), free_addr(ip_h));
        Mesh {
            peer_f,
            http_f: free_addr(ip_f),
            http_h: free_addr(ip_h),
            section: peers_section(&[("fl", peer_f), ("hap", peer_h)]),
            sock_f: sock_path(&format!("f-{tag}")),
            sock_h: sock_path(&format!("h-{tag}")),
        }
    }

    /// Starts Fairlead as `fl`, with `extra` frontend lines.
    fn fairlead(&self, extra: &str) -> Proxy {
        let cfg = proxy_cfg_with(&self.sock_f, self.http_f, &self.section, extra);
        Proxy::start_with(&cfg, &[self.http_f, self.peer_f], |c| c.args(["-L", "fl"]))
    }

    /// Starts HAProxy as `hap`, with the same `extra` lines.
    fn haproxy(&self, bin: &Path, extra: &str) -> Haproxy {
        let cfg = proxy_cfg_with(&self.sock_h, self.http_h, &self.section, extra);
        Haproxy::start(bin, &cfg, &["-L", "hap"], self.http_h)
    }
}

#[test]
fn fairlead_and_haproxy_share_a_table() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy not installed; skipped");
        return;
    };
    let m = Mesh::new("1");
    let (http_f, http_h) = (m.http_f, m.http_h);
    let (sock_f, sock_h) = (m.sock_f.clone(), m.sock_h.clone());
    let fl = m.fairlead("");
    let hap = m.haproxy(&bin, "");
    // Fairlead to HAProxy.
    hit(http_f, "from-fl", 3);
    wait_entry(&sock_h, "haproxy", "from-fl", 3);
    // HAProxy to Fairlead.
    hit(http_h, "from-hap", 2);
    wait_entry(&sock_f, "fairlead", "from-hap", 2);
    // Later updates of an existing entry, both ways (last writer wins).
    hit(http_f, "from-hap", 1);
    wait_entry(&sock_h, "haproxy", "from-hap", 3);
    hit(http_h, "from-fl", 1);
    wait_entry(&sock_f, "fairlead", "from-fl", 4);
    // A restarted HAProxy (empty table) gets Fairlead's entries again
    // when the session comes back.
    drop(hap);
    let _hap = m.haproxy(&bin, "");
    wait_entry(&sock_h, "restarted haproxy", "from-fl", 4);
    wait_entry(&sock_h, "restarted haproxy", "from-hap", 3);
    assert!(!fl.stderr().contains("refused"), "{}", fl.stderr());
}

#[test]
fn fairlead_to_fairlead_with_teach_on_connect() {
    let (ip1, ip2) = (test_ip(), test_ip());
    let (peer1, peer2) = (free_addr(ip1), free_addr(ip2));
    let (http1, http2) = (free_addr(ip1), free_addr(ip2));
    let section = peers_section(&[("one", peer1), ("two", peer2)]);
    let (sock1, sock2) = (sock_path("f2a"), sock_path("f2b"));
    let _one = Proxy::start_with(&proxy_cfg(&sock1, http1, &section), &[http1, peer1], |c| {
        c.args(["-L", "one"])
    });
    // An entry made while the other peer is down is taught on connect.
    hit(http1, "early", 2);
    let _two = Proxy::start_with(&proxy_cfg(&sock2, http2, &section), &[http2, peer2], |c| {
        c.args(["-L", "two"])
    });
    wait_entry(&sock2, "two", "early", 2);
    hit(http2, "late", 5);
    wait_entry(&sock1, "one", "late", 5);
    hit(http1, "late", 1);
    wait_entry(&sock2, "two", "late", 6);
}

/// The start of the definition of `/t` after its table id: name length,
/// name, key type (string), key size (32 + 1).
const T_DEF: [u8; 5] = [2, b'/', b't', 6, 33];

/// Sends a hello to `peer` and returns the status line and what follows
/// within a short read.
fn handshake(peer: SocketAddr, hello: &str) -> (String, Vec<u8>) {
    use std::io::Write;
    let mut s = TcpStream::connect(peer).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s.write_all(hello.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + DEADLINE;
    // Read until the status line and, for a success, the definition of
    // `/t` have arrived.
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        if let Some(i) = got.iter().position(|b| *b == b'\n') {
            let status = String::from_utf8_lossy(&got[..i]).to_string();
            let rest = got[i + 1..].to_vec();
            if status != "200" || rest.windows(5).any(|w| w == T_DEF) {
                return (status, rest);
            }
        }
    }
    panic!("no answer to the hello: {got:?}");
}

/// Encodes a definition of `/t` (table id 1) as HAProxy 2.6 sends it:
/// string key of 33 bytes, `gpc0`, `http_req_cnt`, `http_req_rate(10s)`,
/// expire 60 s.
fn define_t(out: &mut Vec<u8>) {
    use fairlead_peers::wire::{code, put_uint};
    let mut b = Vec::new();
    for v in [1, 2] {
        put_uint(&mut b, v);
    }
    b.extend_from_slice(b"/t");
    for v in [6, 33, (1 << 2) | (1 << 9) | (1 << 10), 60_000, 10, 10_000] {
        put_uint(&mut b, v);
    }
    out.extend_from_slice(&[code::CLASS_TABLE, code::DEFINE]);
    put_uint(out, b.len() as u64);
    out.extend_from_slice(&b);
}

/// Encodes an update of `/t` (update id `id`) for `key`: `gpc0` 0,
/// `http_req_cnt` `cnt`, a rate of `cnt` in the current period.
fn update_t(out: &mut Vec<u8>, id: u32, key: &str, cnt: u64) {
    use fairlead_peers::wire::{code, put_uint};
    let mut b = id.to_be_bytes().to_vec();
    put_uint(&mut b, key.len() as u64);
    b.extend_from_slice(key.as_bytes());
    for v in [0, cnt, 0, cnt, 0] {
        put_uint(&mut b, v);
    }
    out.extend_from_slice(&[code::CLASS_TABLE, code::UPDATE]);
    put_uint(out, b.len() as u64);
    out.extend_from_slice(&b);
}

/// Reads messages from `s` until one matches `want`; returns whether it
/// came before the deadline.
fn wait_message(s: &mut TcpStream, buf: &mut Vec<u8>, want: fairlead_peers::wire::Message) -> bool {
    let end = Instant::now() + DEADLINE;
    let mut chunk = [0u8; 4096];
    while Instant::now() < end {
        while let Ok(Some((m, used))) = fairlead_peers::wire::decode(buf) {
            buf.drain(..used);
            if m == want {
                return true;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }
    false
}

/// The teach that answers our resynchronisation request can carry values
/// older than local ones (HAProxy teaches back what it learned from us):
/// while it runs, an entry updated locally since the request keeps its
/// value; the other entries are learned, and once the teach finished,
/// updates apply again (last writer wins).
#[test]
fn resync_answer_does_not_overwrite_newer_local_entries() {
    use fairlead_peers::wire::{code, Message};
    use std::io::Write;
    let ip = test_ip();
    let (peer, http, other) = (free_addr(ip), free_addr(ip), free_addr(test_ip()));
    let section = peers_section(&[("me", peer), ("you", other)]);
    let sock = sock_path("resync");
    let _p = Proxy::start_with(&proxy_cfg(&sock, http, &section), &[http, peer], |c| {
        c.args(["-L", "me"])
    });
    hit(http, "old", 1);
    wait_entry(&sock, "me", "old", 1);
    // Play peer `you`: the session starts with the teach and a resync
    // request (Fairlead started less than 5 s ago).
    let mut s = TcpStream::connect(peer).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.write_all(b"HAProxyS 2.1\nme\nyou 1 1\n").unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.contains(&b'\n') {
        let n = s.read(&mut chunk).unwrap_or(0);
        buf.extend_from_slice(&chunk[..n]);
    }
    let at = buf.iter().position(|b| *b == b'\n').unwrap();
    assert_eq!(&buf[..at], b"200");
    buf.drain(..=at);
    assert!(
        wait_message(&mut s, &mut buf, Message::Control(code::CTRL_RESYNC_REQ)),
        "no resync request"
    );
    // A local update after the request, then our answer: a stale value
    // for it and a new entry.
    hit(http, "old", 1);
    wait_entry(&sock, "me", "old", 2);
    let mut out = Vec::new();
    define_t(&mut out);
    update_t(&mut out, 1, "old", 1);
    update_t(&mut out, 2, "fresh", 9);
    out.extend_from_slice(&[code::CLASS_CONTROL, code::CTRL_RESYNC_FINISHED]);
    s.write_all(&out).unwrap();
    assert!(
        wait_message(
            &mut s,
            &mut buf,
            Message::Control(code::CTRL_RESYNC_CONFIRM)
        ),
        "the finished teach was not confirmed"
    );
    wait_entry(&sock, "me", "fresh", 9);
    wait_entry(&sock, "me", "old", 2);
    // After the teach, a peer's update wins again.
    out.clear();
    update_t(&mut out, 3, "old", 7);
    s.write_all(&out).unwrap();
    wait_entry(&sock, "me", "old", 7);
}

#[test]
fn handshake_status_codes_and_teach() {
    let ip = test_ip();
    let (peer, http, other) = (free_addr(ip), free_addr(ip), free_addr(test_ip()));
    let section = peers_section(&[("me", peer), ("you", other)]);
    let sock = sock_path("f3");
    let _p = Proxy::start_with(&proxy_cfg(&sock, http, &section), &[http, peer], |c| {
        c.args(["-L", "me"])
    });
    hit(http, "k1", 1);
    wait_entry(&sock, "me", "k1", 1);
    assert_eq!(handshake(peer, "HAProxyS 2.1\nme\nstranger 1 1\n").0, "504");
    assert_eq!(handshake(peer, "HAProxyS 2.1\nnotme\nyou 1 1\n").0, "503");
    assert_eq!(handshake(peer, "HAProxyS 3.0\nme\nyou 1 1\n").0, "502");
    assert_eq!(
        handshake(peer, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").0,
        "501"
    );
    let (status, rest) = handshake(peer, "HAProxyS 2.1\nme\nyou 1 1\n");
    assert_eq!(status, "200");
    // The teach: the definitions of `bk` (integer key, 4 bytes) and `/t`.
    assert!(rest.windows(5).any(|w| w == T_DEF));
    assert!(rest.windows(5).any(|w| w == [2, b'b', b'k', 2, 4]));
}

#[test]
fn proxy_table_with_peers_keyword_syncs_with_haproxy() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy not installed; skipped");
        return;
    };
    let m = Mesh::new("4");
    let (http_f, http_h) = (m.http_f, m.http_h);
    let (sock_f, sock_h) = (m.sock_f.clone(), m.sock_h.clone());
    let extra = "    http-request track-sc1 int(7) table bk\n    http-request sc-inc-gpc0(1)\n";
    let _fl = m.fairlead(extra);
    let _hap = m.haproxy(&bin, extra);
    hit(http_f, "a", 2);
    wait_value(&sock_h, "haproxy", "bk", "7", "gpc0=2");
    // HAProxy increments what it learned; Fairlead learns the result.
    hit(http_h, "b", 1);
    wait_value(&sock_h, "haproxy", "bk", "7", "gpc0=3");
    wait_value(&sock_f, "fairlead", "bk", "7", "gpc0=3");
}

/// A master-worker reload hands the tables over: the stopping worker
/// teaches them to the new one through the local peer's address (a
/// `peers` section with only the local peer, HAProxy's way to keep tables
/// across reloads). Entries, counters and the proxy table survive, and the
/// old worker is gone.
#[test]
fn reload_hands_the_tables_over_to_the_new_worker() {
    let ip = test_ip();
    let (peer, http) = (free_addr(ip), free_addr(ip));
    let section = peers_section(&[("solo", peer)]);
    let sock = sock_path("reload");
    let extra = "    http-request track-sc1 int(7) table bk\n    http-request sc-inc-gpc0(1)\n";
    let cfg = proxy_cfg_with(&sock, http, &section, extra)
        .replace("global\n", "global\n    hard-stop-after 5s\n");
    let p = Proxy::start_with(&cfg, &[http], |c| c.args(["-W", "-L", "solo"]));
    wait_until("worker started", || children(p.pid()).len() == 1);
    let first = children(p.pid());
    hit(http, "kept", 3);
    wait_entry(&sock, "first worker", "kept", 3);
    wait_value(&sock, "first worker", "bk", "7", "gpc0=3");
    p.signal("USR2");
    wait_until("reload complete", || p.stderr().contains("reload complete"));
    wait_until("old worker gone", || {
        let now = children(p.pid());
        now.len() == 1 && now != first
    });
    wait_entry(&sock, "new worker", "kept", 3);
    wait_value(&sock, "new worker", "bk", "7", "gpc0=3");
    // The new worker goes on counting from there.
    hit(http, "kept", 1);
    wait_entry(&sock, "new worker", "kept", 4);
    assert!(!p.stderr().contains("not handed over"), "{}", p.stderr());
}

/// A restarted Fairlead asks its peers for a resynchronisation: HAProxy,
/// which only pushes new updates to a returning peer, teaches its whole
/// table on that request.
#[test]
fn restarted_fairlead_relearns_from_haproxy() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy not installed; skipped");
        return;
    };
    let m = Mesh::new("5");
    let (http_h, sock_f) = (m.http_h, m.sock_f.clone());
    let fl = m.fairlead("");
    let _hap = m.haproxy(&bin, "");
    hit(http_h, "from-hap", 2);
    wait_entry(&sock_f, "fairlead", "from-hap", 2);
    drop(fl);
    let _fl = m.fairlead("");
    wait_entry(&sock_f, "restarted fairlead", "from-hap", 2);
}
