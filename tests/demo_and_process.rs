//! `fairlead demo`, worker threads, CPU pinning and daemon mode.

mod common;
use common::*;
use std::process::{Command, Stdio};

#[test]
fn demo_balances_over_three_origins() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .args(["demo", "--bind", &bind.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("demo listening", || {
        std::net::TcpStream::connect(bind).is_ok()
    });
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..6 {
        let r = get(bind, "/");
        assert_eq!(r.status, 200);
        seen.insert(r.header("x-served-by").unwrap().to_string());
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(get(bind, "/?s=10k").body.len(), 10240);
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("curl -si http://{bind}/")), "{text}");
}

fn task_names(pid: i32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let t = t.unwrap().path();
        let comm = std::fs::read_to_string(t.join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
            .unwrap_or_default();
        out.push((comm.trim().to_string(), cpus));
    }
    out
}

#[test]
fn nbthread_workers_and_cpu_map() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 3\n    cpu-map 1/1 0\n    cpu-map 1/2-3 1\n\
defaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 1s\n\
frontend fe\n    bind {bind}\n    default_backend bk\nbackend bk\n    server s {a}\n"
    );
    let p = Proxy::start(&cfg, &[bind]);
    assert_eq!(get(bind, "/").status, 200);
    let pinned = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let want = [
        ("fairlead-w1", "0"),
        ("fairlead-w2", "1"),
        ("fairlead-w3", "1"),
    ];
    // Sockets are bound before the workers start, and each worker pins
    // itself as it starts: poll until all three are there.
    wait_until("three pinned workers", || {
        let tasks = task_names(p.pid());
        want.iter().all(|(name, cpu)| {
            tasks
                .iter()
                .any(|(n, c)| n == name && (!pinned || c == cpu))
        }) && tasks
            .iter()
            .filter(|(n, _)| n.starts_with("fairlead-w"))
            .count()
            == 3
    });
}

#[test]
fn daemon_mode_forks_and_writes_pidfile() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let pidfile = std::env::temp_dir().join(format!("fairlead-daemon-{}.pid", std::process::id()));
    let cfg = write_cfg(&http_cfg(bind, "", &format!("    server s {a}")));
    let st = Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-D")
        .arg("-p")
        .arg(&pidfile)
        .arg("-f")
        .arg(&cfg)
        .status()
        .unwrap();
    assert!(st.success(), "the foreground parent exits 0 once forked");
    wait_until("pidfile", || pidfile.exists());
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until("daemon listening", || {
        std::net::TcpStream::connect(bind).is_ok()
    });
    assert_eq!(get(bind, "/").status, 200);
    let _ = Command::new("kill").arg(pid.to_string()).status();
    wait_until("daemon gone", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
    let _ = std::fs::remove_file(pidfile);
}
