//! Process lifecycle: soft stop draining, maxconn, fd exhaustion, pidfile.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::time::Duration;

#[test]
fn sigusr1_drains_in_flight_requests() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let mut p = Proxy::start(&http_cfg(bind, "", &format!("    server s1 {a}")), &[bind]);
    // An idle keep-alive connection and a slow request in flight.
    let idle = connect(bind);
    let mut idle_w = idle.try_clone().unwrap();
    idle_w
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut idle_r = BufReader::new(idle);
    assert_eq!(read_response(&mut idle_r, false).unwrap().status, 200);

    let slow = connect(bind);
    let mut slow_w = slow.try_clone().unwrap();
    slow_w
        .write_all(b"GET /?t=1500&s=5 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    // Make sure the slow request reached the origin before the signal.
    wait_until("slow request at the origin", || _t.requests() >= 2);
    p.signal("USR1");
    // The idle connection is closed by the proxy.
    assert!(read_response(&mut idle_r, false).is_none());
    // The in-flight request completes, and says the connection closes.
    let mut slow_r = BufReader::new(slow);
    let resp = read_response(&mut slow_r, false).expect("in-flight response");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body.len(), 5);
    assert_eq!(resp.header("connection"), Some("close"));
    // New connections are refused, and the process exits by itself.
    let st = p.wait_exit();
    assert!(st.success(), "{st}");
    assert!(std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(500)).is_err());
}

#[test]
fn sigterm_stops_immediately() {
    let (_t, bind, mut p) = one_origin("", "s1");
    let _held = connect(bind);
    p.signal("TERM");
    p.wait_exit();
}

#[test]
fn global_maxconn_pauses_accepting() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    maxconn 2\n    nbthread 1\ndefaults\n    mode http\n    timeout client 10s\n    timeout server 10s\n    timeout connect 2s\n\
frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    server s1 {a}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let mut held = Vec::new();
    for _ in 0..2 {
        let s = connect(bind);
        let mut w = s.try_clone().unwrap();
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut r = BufReader::new(s);
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        held.push((w, r));
    }
    // The third connection waits in the kernel backlog: no answer while two
    // are open.
    let third = connect(bind);
    third
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut tw = third.try_clone().unwrap();
    tw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut tr = BufReader::new(third);
    let mut line = String::new();
    let r = std::io::BufRead::read_line(&mut tr, &mut line);
    assert!(
        r.is_err(),
        "third connection was served beyond maxconn: {line}"
    );
    // Closing one held connection lets the third one in.
    drop(held.pop());
    tr.get_ref().set_read_timeout(Some(DEADLINE)).unwrap();
    let mut rest = String::new();
    std::io::BufRead::read_line(&mut tr, &mut rest).unwrap();
    assert!(rest.starts_with("HTTP/1.1 200"), "{rest}");
}

#[test]
fn fd_exhaustion_pauses_then_recovers() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    // maxconn above what 64 descriptors allow, so accept() hits EMFILE.
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}")).replace(
        "global\n",
        "global\n    maxconn 1000\n    no strict-limits\n",
    );
    // 64 descriptors: a few dozen clients exhaust them.
    let p = Proxy::start_with(&cfg, &[bind], |c| {
        let exe = c.get_program().to_owned();
        let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
            .arg(exe)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        *c = sh;
        c
    });
    let mut flood = Vec::new();
    for _ in 0..120 {
        if let Ok(s) = std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(500)) {
            flood.push(s);
        }
    }
    wait_until("accept() error logged", || p.stderr().contains("accept()"));
    drop(flood);
    // Once descriptors are free again, requests are served.
    wait_until("served after recovery", || {
        std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(500))
            .ok()
            .and_then(|mut s| {
                s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
                s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .ok()?;
                Some(read_all(&mut s).starts_with("HTTP/1.1 200"))
            })
            .unwrap_or(false)
    });
}

#[test]
fn pidfile_is_written() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let pidfile = std::env::temp_dir().join(format!("fairlead-pid-{}", std::process::id()));
    let pf = pidfile.clone();
    let p = Proxy::start_with(
        &http_cfg(bind, "", &format!("    server s1 {a}")),
        &[bind],
        |c| c.arg("-p").arg(pf),
    );
    let written = std::fs::read_to_string(&pidfile).unwrap();
    assert_eq!(written.trim(), p.pid().to_string());
    let _ = std::fs::remove_file(pidfile);
}

#[test]
fn port_already_in_use_is_an_error() {
    let ip = test_ip();
    let taken = std::net::TcpListener::bind((ip, 0)).unwrap();
    let bind = taken.local_addr().unwrap();
    let cfg = http_cfg(bind, "", "    server s1 127.0.0.1:9");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(write_cfg(&cfg))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot bind"), "{err}");
}

/// A port freed within the start-up's retry (a predecessor killed with
/// SIGKILL on io_uring frees its ports a few milliseconds late) does not
/// stop the start-up.
#[test]
fn port_freed_soon_after_start_is_taken() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let taken = std::net::TcpListener::bind(bind).unwrap();
    let path = write_cfg(&http_cfg(bind, "", "    server s1 127.0.0.1:9"));
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut p = Proxy::from_child(child, path);
    // Busy when Fairlead first looks (it gets there within a few ms),
    // free well within its 1 s of retries.
    std::thread::sleep(Duration::from_millis(200));
    drop(taken);
    wait_until("fairlead listening, or gone", || {
        std::net::TcpStream::connect(bind).is_ok() || !matches!(p.child.try_wait(), Ok(None))
    });
    assert!(matches!(p.child.try_wait(), Ok(None)), "{}", p.stderr());
}

#[test]
fn hard_stop_after_bounds_the_soft_stop() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"))
        .replace("global\n", "global\n    hard-stop-after 300ms\n");
    let mut p = Proxy::start(&cfg, &[bind]);
    let slow = connect(bind);
    let mut w = slow.try_clone().unwrap();
    w.write_all(b"GET /?t=8000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    wait_until("slow request at the origin", || _t.requests() >= 1);
    let started = std::time::Instant::now();
    p.signal("USR1");
    p.wait_exit();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(p.stderr().contains("hard stop"), "{}", p.stderr());
}

#[test]
fn drops_privileges_to_user() {
    // Only root can switch users.
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    {
        eprintln!("not root; skipping");
        return;
    }
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}"))
        .replace("global\n", "global\n    user nobody\n    group nogroup\n");
    let p = Proxy::start(&cfg, &[bind]);
    assert_eq!(get(bind, "/").status, 200);
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.pid())).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(uid.split_whitespace().nth(1), Some("65534"), "{uid}");
}
