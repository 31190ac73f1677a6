//! A peer that stops reading cannot hold the section up: the session whose
//! writes make no progress for 5 s is closed (the peer keeps sending
//! heartbeats, so it is the stalled writes that close it, not the receive
//! timeout), and a peer that connects afterwards gets the whole table.

use fairlead_peers::wire::{self, code, Message};
use fairlead_peers::{PeersSection, Setup};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Entries in the table.
const N: usize = 150_000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A free port on 127.0.0.77 (the listener is closed before use). The
/// kernel may hand a released port out again, so no address is returned
/// twice.
fn free_addr() -> SocketAddr {
    static GIVEN: std::sync::Mutex<Vec<SocketAddr>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let addr = TcpListener::bind("127.0.0.77:0")
            .unwrap()
            .local_addr()
            .unwrap();
        if !given.contains(&addr) {
            given.push(addr);
            return addr;
        }
    }
}

/// Connects as peer `slow` with a tiny receive buffer and completes the
/// handshake.
fn connect_as(me: SocketAddr, name: &str, rcvbuf: Option<usize>) -> TcpStream {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        if let Some(n) = rcvbuf {
            s.set_recv_buffer_size(n).unwrap();
        }
        if s.connect(&me.into()).is_ok() {
            let mut s: TcpStream = s.into();
            s.write_all(wire::hello("me", name, 4242).as_bytes())
                .unwrap();
            let mut status = [0u8; 4];
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.read_exact(&mut status).unwrap();
            assert_eq!(&status, b"200\n");
            return s;
        }
        assert!(Instant::now() < end, "the section never listened on {me}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_peer_that_stops_reading_is_dropped_and_later_peers_get_the_table() {
    let me = free_addr();
    let lines: Vec<(usize, Vec<String>)> = [
        format!("peer me {me}"),
        format!("peer slow {}", free_addr()),
        format!("peer late {}", free_addr()),
        "table t type string len 32 size 200k expire 60s store gpc0".to_string(),
    ]
    .iter()
    .enumerate()
    .map(|(i, l)| (i + 1, l.split_whitespace().map(String::from).collect()))
    .collect();
    let (section, _) = PeersSection::parse("mesh", &lines).unwrap();
    let table = fairlead_stick::Table::new(section.tables[0].clone());
    let setup = Setup {
        section,
        local: "me".into(),
        tables: vec![table.clone()],
        now: now_ms,
        quiet: true,
    };
    let _handle = fairlead_peers::start(setup).expect("the section starts");

    let mut slow = connect_as(me, "slow", Some(4096));
    // About 7 MB of updates: more than the socket buffers take (the
    // sender's grows up to 4 MiB), less than the 8 MiB queue cap, so it is
    // the write timeout that acts.
    for i in 0..N {
        let key = format!("key-{i:027}");
        let e = table.get_or_create(key.as_bytes(), now_ms()).unwrap();
        e.touch(now_ms());
        e.release(now_ms());
    }
    // Heartbeats keep the session's receive side alive; the writes stall.
    let started = Instant::now();
    let mut closed = false;
    while started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(500));
        if slow
            .write_all(&[code::CLASS_CONTROL, code::CTRL_HEARTBEAT])
            .is_err()
        {
            closed = true;
            break;
        }
    }
    assert!(closed, "the stalled session was never closed");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4),
        "closed after {waited:?}: before the write timeout"
    );

    // A peer that connects now is taught every entry.
    let mut late = connect_as(me, "late", None);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let mut updates = 0;
    let end = Instant::now() + Duration::from_secs(30);
    while updates < N && Instant::now() < end {
        let n = late.read(&mut chunk).unwrap();
        assert!(n > 0, "the section closed the late peer");
        buf.extend_from_slice(&chunk[..n]);
        while let Ok(Some((m, used))) = wire::decode(&buf) {
            buf.drain(..used);
            if matches!(m, Message::Update { .. }) {
                updates += 1;
            }
        }
    }
    assert_eq!(updates, N, "the late peer got the whole table");
}
