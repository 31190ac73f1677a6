//! Delivery over real sockets: UDP syslog on loopback, a unix datagram
//! socket in a temporary directory, stdout (injected writer and a child
//! process), and the non-blocking drop behaviour of a full ring.

use std::io::{self, Write};
use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fairlead_log::*;

fn target(s: &str) -> TargetSpec {
    let w: Vec<String> = s.split_whitespace().map(String::from).collect();
    parse_target(&w).unwrap()
}

fn opts(tag: &str, hostname: Option<&str>) -> LoggerOptions {
    LoggerOptions {
        tag: tag.into(),
        hostname: hostname.map(String::from),
        ..LoggerOptions::default()
    }
}

fn recv(sock: &UdpSocket) -> String {
    let mut buf = [0u8; 70000];
    let n = sock.recv(&mut buf).expect("a datagram within the timeout");
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

/// A writer whose bytes the test can read.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn udp_syslog_rfc3164_rfc5424_and_levels() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let a = rx.local_addr().unwrap();
    let sinks = vec![
        Sink {
            targets: vec![target(&format!("{a} local0"))],
            tag: None,
        },
        Sink {
            targets: vec![target(&format!("{a} format rfc5424 local0 info"))],
            tag: Some("px".into()),
        },
        Sink {
            targets: vec![target(&format!("{a} local1 notice err"))],
            tag: None,
        },
    ];
    let pid = std::process::id();
    let log = Logger::start(opts("fl", Some("lb1")), sinks).unwrap();

    assert!(log.emit(SinkId(0), Level::Info, b"hello"));
    let m = recv(&rx);
    // <PRI>Mmm dd HH:MM:SS host tag[pid]: msg  (rfc3164 is the default
    // with log-send-hostname)
    assert!(m.starts_with("<134>"), "{m}");
    assert_eq!(&m[5 + 15..], format!(" lb1 fl[{pid}]: hello\n"), "{m}");

    assert!(log.emit(SinkId(1), Level::Info, b"five"));
    let m = recv(&rx);
    assert!(m.starts_with("<134>1 "), "{m}");
    let iso = &m[7..7 + 32];
    assert_eq!(
        (&iso[4..5], &iso[10..11], &iso[26..]),
        ("-", "T", "+00:00"),
        "{m}"
    );
    assert_eq!(&m[7 + 32..], format!(" lb1 px {pid} - - five\n"), "{m}");

    // Level filter (notice) and minimum level (err): info is filtered out
    // before it is even queued; emerg is capped to err (local1 = 17).
    assert!(!log.wants(SinkId(2), Level::Info));
    assert!(!log.emit(SinkId(2), Level::Info, b"nope"));
    assert!(log.emit(SinkId(2), Level::Emerg, b"capped"));
    let m = recv(&rx);
    assert!(m.starts_with("<139>"), "{m}");
    assert!(m.ends_with("]: capped\n"), "{m}");
    assert!(log.flush(Duration::from_secs(5)));
    assert_eq!((log.sent(), log.dropped()), (3, 0));
    log.stop();
    assert!(!log.emit(SinkId(0), Level::Info, b"late"));
    assert_eq!(log.dropped(), 1);
}

#[test]
fn unix_datagram_local_format_and_truncation() {
    let dir = std::env::temp_dir().join(format!(
        "fairlead-log-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("log.sock");
    let rx = UnixDatagram::bind(&path).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let sinks = vec![Sink {
        targets: vec![
            target(&format!("unix@{} daemon", path.display())),
            target(&format!("{} len 80 format raw daemon", path.display())),
        ],
        tag: None,
    }];
    let log = Logger::start(opts("fairlead", None), sinks).unwrap();
    let long = "x".repeat(200);
    assert!(log.emit(SinkId(0), Level::Info, long.as_bytes()));
    let mut buf = [0u8; 4096];
    let n = rx.recv(&mut buf).unwrap();
    let m = std::str::from_utf8(&buf[..n]).unwrap();
    // local: <PRI>Mmm dd HH:MM:SS tag[pid]: msg (no host name); daemon = 3.
    assert!(m.starts_with("<30>"), "{m}");
    assert!(
        m.ends_with(&format!(" fairlead[{}]: {long}\n", std::process::id())),
        "{m}"
    );
    let n = rx.recv(&mut buf).unwrap();
    assert_eq!(n, 80);
    assert_eq!(&buf[..n], format!("{}\n", &long[..79]).as_bytes());
    log.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdout_target_with_injected_writer_renders_records() {
    let out = Shared::default();
    let sinks = vec![Sink {
        targets: vec![target("stdout format raw daemon")],
        tag: None,
    }];
    let log = Logger::start_with_writers(
        opts("t", None),
        sinks,
        Box::new(out.clone()),
        Box::new(io::sink()),
    )
    .unwrap();
    let rec = LogRecord {
        client: Some("127.0.0.1:34082".parse().unwrap()),
        frontend: "fe",
        backend: "bk",
        server: Some("s1"),
        queue_done: Some(0),
        connect_done: Some(1),
        total: 12,
        bytes_out: 99,
        accept_date: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_316_295_123),
        ..LogRecord::default()
    };
    let f = compile(TCPLOG_FORMAT).unwrap();
    assert!(log.log(SinkId(0), Level::Info, &f, false, &rec));
    assert!(log.log(
        SinkId(0),
        Level::Info,
        &compile("%ci %B %ts").unwrap(),
        true,
        &rec
    ));
    assert!(log.flush(Duration::from_secs(5)));
    assert_eq!(
        out.text(),
        "127.0.0.1:34082 [22/Nov/2026:02:58:15.123] fe bk/s1 0/1/12 99 -- 0/0/0/0/0 0/0\n{\"ci\":\"127.0.0.1\",\"B\":99,\"ts\":\"--\"}\n"
    );
    log.stop();
}

/// Blocks in `write` until the test lets it go.
struct Gate {
    entered: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
    lines: Shared,
}

impl Write for Gate {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let _ = self.entered.send(());
        let _ = self.release.recv();
        self.lines.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn full_ring_drops_and_counts_without_blocking() {
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let lines = Shared::default();
    let gate = Gate {
        entered: entered_tx,
        release: release_rx,
        lines: lines.clone(),
    };
    let sinks = vec![Sink {
        targets: vec![target("stdout format raw daemon")],
        tag: None,
    }];
    let o = LoggerOptions {
        ring_bytes: 2048,
        ..opts("t", None)
    };
    let log = Logger::start_with_writers(o, sinks, Box::new(gate), Box::new(io::sink())).unwrap();
    let msg = [b'm'; 100];
    assert!(log.emit(SinkId(0), Level::Info, &msg));
    // The drain thread took the first message and is stuck in write().
    entered.recv_timeout(Duration::from_secs(5)).unwrap();
    let start = Instant::now();
    let mut accepted = 1;
    for _ in 0..1000 {
        if log.emit(SinkId(0), Level::Info, &msg) {
            accepted += 1;
        }
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "producers must not block"
    );
    // 2048 bytes of ring hold 16 records of 121 bytes.
    assert_eq!(accepted, 1 + 16);
    assert_eq!(log.dropped(), 1000 - 16);
    for _ in 0..accepted {
        release.send(()).unwrap();
    }
    assert!(log.flush(Duration::from_secs(5)));
    assert_eq!(lines.text().lines().count(), accepted);
    assert_eq!(log.sent(), accepted as u64);
    // Room again once drained.
    release.send(()).unwrap();
    assert!(log.emit(SinkId(0), Level::Info, b"again"));
    assert!(log.flush(Duration::from_secs(5)));
    assert!(lines.text().ends_with("again\n"));
    drop(release);
    log.stop();
}

/// The real stdout, through a child process running the test below.
#[test]
fn real_stdout_in_a_child_process() {
    if std::env::var_os("FAIRLEAD_LOG_CHILD").is_some() {
        let sinks = vec![Sink {
            targets: vec![target("stdout format short daemon")],
            tag: None,
        }];
        let log = Logger::start(opts("t", None), sinks).unwrap();
        log.emit(SinkId(0), Level::Notice, b"from the child");
        log.stop();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "real_stdout_in_a_child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FAIRLEAD_LOG_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("<5>from the child\n"), "{text}");
}

/// Starts a logger whose only target is a raw `stdout` into `out`.
fn raw_logger(out: &Shared, ring_bytes: usize) -> Logger {
    let sinks = vec![Sink {
        targets: vec![target("stdout format raw daemon")],
        tag: None,
    }];
    let o = LoggerOptions {
        ring_bytes,
        ..opts("t", None)
    };
    Logger::start_with_writers(o, sinks, Box::new(out.clone()), Box::new(io::sink())).unwrap()
}

/// `(thread, sequence)` of each `T<thread> <sequence>` line.
fn numbered(text: &str) -> Vec<(usize, usize)> {
    text.lines()
        .map(|l| {
            let (t, n) = l.trim_start_matches('T').split_once(' ').unwrap();
            (t.parse().unwrap(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn each_thread_keeps_its_order_and_stop_sends_everything() {
    let out = Shared::default();
    let log = raw_logger(&out, 1 << 20);
    const THREADS: usize = 6;
    const EACH: usize = 2000;
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for n in 0..EACH {
                    assert!(log.emit(SinkId(0), Level::Info, format!("T{t} {n}").as_bytes()));
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    // No flush: stop alone must send what was queued.
    log.stop();
    let lines = numbered(&out.text());
    assert_eq!(lines.len(), THREADS * EACH);
    assert_eq!((log.sent(), log.dropped()), ((THREADS * EACH) as u64, 0));
    for t in 0..THREADS {
        let seq: Vec<usize> = lines.iter().filter(|l| l.0 == t).map(|l| l.1).collect();
        assert_eq!(seq, (0..EACH).collect::<Vec<_>>(), "thread {t}");
    }
}

#[test]
fn messages_racing_stop_are_sent_or_counted() {
    let out = Shared::default();
    let log = raw_logger(&out, 1 << 20);
    let start = Arc::new(std::sync::Barrier::new(5));
    let hs: Vec<_> = (0..4)
        .map(|t| {
            let (log, start) = (log.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut accepted = 0u64;
                for n in 0..20_000 {
                    if log.emit(SinkId(0), Level::Info, format!("T{t} {n}").as_bytes()) {
                        accepted += 1;
                    }
                }
                accepted
            })
        })
        .collect();
    start.wait();
    // Stop while the producers are (most likely) still going.
    log.stop();
    let accepted: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let lines = numbered(&out.text());
    assert_eq!(
        lines.len() as u64,
        accepted,
        "every accepted message was sent"
    );
    assert_eq!(log.sent(), accepted);
    assert_eq!(log.sent() + log.dropped(), 80_000);
    for t in 0..4 {
        let seq: Vec<usize> = lines.iter().filter(|l| l.0 == t).map(|l| l.1).collect();
        assert!(seq.windows(2).all(|w| w[0] < w[1]), "thread {t} in order");
    }
}
