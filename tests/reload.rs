//! Master-worker mode: seamless reloads under load.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    refused: AtomicU64,
    /// Keep-alive requests replayed on a new connection because the idle
    /// connection was closed by a stopping worker (what every HTTP client
    /// does for an idempotent request; not a failure).
    replayed: AtomicU64,
}

/// One request per new connection, until `stop`.
fn new_connections(bind: SocketAddr, stop: Arc<AtomicBool>, t: Arc<Tally>) {
    while !stop.load(Ordering::Relaxed) {
        let mut s = match TcpStream::connect_timeout(&bind, Duration::from_secs(2)) {
            Ok(s) => s,
            Err(_) => {
                t.refused.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        let ok = s
            .write_all(b"GET /?s=10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .is_ok()
            && read_response(&mut BufReader::new(s), false).is_some_and(|r| r.status == 200);
        let c = if ok { &t.ok } else { &t.failed };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// Keep-alive requests, reconnecting when the proxy closes.
fn keep_alive(bind: SocketAddr, stop: Arc<AtomicBool>, t: Arc<Tally>) {
    let mut conn: Option<(TcpStream, BufReader<TcpStream>)> = None;
    while !stop.load(Ordering::Relaxed) {
        let reused = conn.is_some();
        let (w, r) = match conn.as_mut() {
            Some(c) => c,
            None => match TcpStream::connect_timeout(&bind, Duration::from_secs(2)) {
                Ok(s) => {
                    s.set_read_timeout(Some(DEADLINE)).unwrap();
                    let r = BufReader::new(s.try_clone().unwrap());
                    conn.insert((s, r))
                }
                Err(_) => {
                    t.refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            },
        };
        let sent = w
            .write_all(b"GET /?s=20 HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_ok();
        match read_response(r, false).filter(|_| sent) {
            Some(resp) if resp.status == 200 => {
                t.ok.fetch_add(1, Ordering::Relaxed);
                if resp.header("connection") == Some("close") {
                    conn = None;
                }
            }
            Some(_) => {
                t.failed.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
            None if reused => {
                t.replayed.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
            None => {
                t.failed.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
        }
    }
}

#[test]
fn twenty_reloads_under_load_lose_nothing() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"))
        .replace("global\n", "global\n    hard-stop-after 1s\n");
    let p = Proxy::start_with(&cfg, &[bind], |c| c.arg("-W"));
    wait_until("worker started", || children(p.pid()).len() == 1);
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let mut load = Vec::new();
    for i in 0..4 {
        let (s, t) = (stop.clone(), tally.clone());
        load.push(std::thread::spawn(move || {
            if i % 2 == 0 {
                new_connections(bind, s, t)
            } else {
                keep_alive(bind, s, t)
            }
        }));
    }
    for n in 1..=20 {
        let before = tally.ok.load(Ordering::Relaxed);
        p.signal("USR2");
        let deadline = std::time::Instant::now() + DEADLINE;
        while p.stderr().matches("reload complete").count() < n {
            assert!(
                std::time::Instant::now() < deadline && !p.stderr().contains("reload aborted"),
                "reload {n} did not complete:\n{}",
                p.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Traffic keeps flowing between reloads.
        wait_until("requests served", || {
            tally.ok.load(Ordering::Relaxed) > before + 20
        });
    }
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.join().unwrap();
    }
    let (ok, failed, refused) = (
        tally.ok.load(Ordering::Relaxed),
        tally.failed.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "reload test: {ok} ok, {failed} failed, {refused} refused, {} replayed",
        tally.replayed.load(Ordering::Relaxed)
    );
    assert!(ok > 400, "too little traffic to mean anything: {ok}");
    assert_eq!(failed, 0, "failed requests during reloads:\n{}", p.stderr());
    assert_eq!(refused, 0, "refused connections during reloads");
    // After hard-stop-after, only the current worker is left.
    wait_until("old workers gone", || children(p.pid()).len() == 1);
    assert!(
        !p.stderr().contains("(master) current worker"),
        "{}",
        p.stderr()
    );
}

#[test]
fn bad_config_on_reload_keeps_the_running_worker() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"));
    let p = Proxy::start_with(&cfg, &[bind], |c| c.arg("-W"));
    wait_until("worker started", || children(p.pid()).len() == 1);
    // The worker serves the configuration the master checked, even if the
    // file changes under it.
    assert_eq!(get(bind, "/").status, 200);
    let worker = children(p.pid());
    std::fs::write(&p.cfg_path, format!("{cfg}    nonsense here\n")).unwrap();
    p.signal("USR2");
    let deadline = std::time::Instant::now() + DEADLINE;
    while !p.stderr().contains("reload aborted") {
        assert!(
            std::time::Instant::now() < deadline,
            "no refusal logged:\n{}",
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        p.stderr().contains("unknown keyword 'nonsense'"),
        "{}",
        p.stderr()
    );
    assert_eq!(children(p.pid()), worker);
    assert_eq!(get(bind, "/").status, 200);
}

#[test]
fn master_stops_its_workers() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"));
    let mut p = Proxy::start_with(&cfg, &[bind], |c| c.arg("-W"));
    wait_until("worker started", || children(p.pid()).len() == 1);
    let worker = children(p.pid())[0];
    p.signal("TERM");
    p.wait_exit();
    wait_until("worker gone", || {
        !std::path::Path::new(&format!("/proc/{worker}")).exists()
            || std::fs::read_to_string(format!("/proc/{worker}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
}

/// `master-worker` in `global` is `-W`: a master and one worker, and a
/// reload (SIGUSR2) starts a new worker, without `-W` on the command line.
#[test]
fn master_worker_keyword_is_dash_w() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"))
        .replace("global\n", "global\n    master-worker\n");
    let mut p = Proxy::start(&cfg, &[bind]);
    wait_until("worker started", || children(p.pid()).len() == 1);
    let first = children(p.pid())[0];
    assert_eq!(get(bind, "/").status, 200);
    p.signal("USR2");
    wait_until("new worker", || {
        children(p.pid()).iter().any(|&w| w != first)
    });
    assert_eq!(get(bind, "/").status, 200);
    p.signal("TERM");
    p.wait_exit();
}

#[test]
fn master_cli_shows_processes_and_reloads() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fairlead-master-{}.sock", std::process::id()));
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"));
    let s2 = sock.clone();
    let p = Proxy::start_with(&cfg, &[bind], |c| c.arg("-W").arg("-S").arg(s2));
    wait_until("worker started", || children(p.pid()).len() == 1);
    let ask = |cmd: &str| {
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s.write_all(format!("{cmd}\n").as_bytes()).unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(&mut s, &mut out).unwrap();
        out
    };
    let table = ask("show proc");
    assert!(
        table.starts_with(
            "#<PID>          <type>          <reloads>       <uptime>        <version>\n"
        ),
        "{table}"
    );
    assert!(
        table.contains(&format!("{:<15} master          0 [failed: 0]", p.pid())),
        "{table}"
    );
    let worker = children(p.pid())[0];
    assert!(
        table.contains(&format!("# workers\n{worker:<15} worker          0 ")),
        "{table}"
    );
    assert!(ask("reload").contains("Reloading"));
    wait_until("reload complete", || p.stderr().contains("reload complete"));
    let table = ask("show proc");
    assert!(table.contains("master          1 [failed: 0]"), "{table}");
    assert!(ask("frobnicate").contains("Unknown command"));
    let _ = std::fs::remove_file(&sock);
}

#[test]
fn sf_takes_over_the_listening_sockets_under_load() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"));
    let mut old = Proxy::start(&cfg, &[bind]);
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let mut load = Vec::new();
    for i in 0..4 {
        let (s, t) = (stop.clone(), tally.clone());
        load.push(std::thread::spawn(move || {
            if i % 2 == 0 {
                new_connections(bind, s, t)
            } else {
                keep_alive(bind, s, t)
            }
        }));
    }
    wait_until("traffic", || tally.ok.load(Ordering::Relaxed) > 50);
    // The new process takes the old one's sockets, then soft-stops it.
    let new = Proxy::start_with(&cfg, &[bind], |c| c.arg("-sf").arg(old.pid().to_string()));
    old.wait_exit();
    let before = tally.ok.load(Ordering::Relaxed);
    wait_until("traffic on the new process", || {
        tally.ok.load(Ordering::Relaxed) > before + 50
    });
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.join().unwrap();
    }
    assert!(!new.stderr().contains("cannot take"), "{}", new.stderr());
    assert_eq!(tally.failed.load(Ordering::Relaxed), 0, "failed requests");
    assert_eq!(
        tally.refused.load(Ordering::Relaxed),
        0,
        "refused connections"
    );
}

/// A worker whose parent is not the master that started it (the master
/// died before the worker asked to die with it) stops at once instead of
/// running orphaned.
#[test]
fn worker_without_its_master_stops() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", "    server s1 127.0.0.1:9");
    let path = write_cfg(&cfg);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(&path)
        // Started "by" process 1, whose child this is not.
        .env("FAIRLEAD_WORKER", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut p = Proxy::from_child(child, path);
    let st = p.wait_exit();
    assert_eq!(st.code(), Some(1));
    assert!(
        p.stderr().contains("exited before the worker started"),
        "{}",
        p.stderr()
    );
}
