//! The file-descriptor budget at start-up, as HAProxy 2.6 computes it:
//! `2 maxconn + listeners + checked servers + 3 per thread + 10`. The
//! process starts under a lowered RLIMIT_NOFILE (`prlimit`, which execs
//! the binary, so the pid is fairlead's) and its limit is read back from
//! `/proc/<pid>/limits`.

mod common;

use common::*;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `fairlead -f <cfg>` under `prlimit --nofile=soft:hard`.
fn spawn(cfg: &str, soft: u64, hard: u64) -> Child {
    let path = write_cfg(cfg);
    Command::new("prlimit")
        .arg(format!("--nofile={soft}:{hard}"))
        .arg(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prlimit fairlead")
}

/// A started process, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `addr` accepts connections; panics with stderr if the
/// process exits first.
fn listening(mut child: Child, addr: SocketAddr) -> Running {
    let end = Instant::now() + DEADLINE;
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("fairlead exited ({st}): {}", stderr_of(&mut child));
        }
        assert!(Instant::now() < end, "fairlead not listening on {addr}");
        std::thread::sleep(Duration::from_millis(10));
    }
    Running(child)
}

/// Waits for the process to exit: (exit code, stderr).
fn exited(mut child: Child) -> (Option<i32>, String) {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code(), stderr_of(&mut child));
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("fairlead still running: {}", stderr_of(&mut child));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// Everything the process wrote to stderr: the limit warnings come
/// before the listeners open, so once the port answers they are written;
/// the process is stopped and its stderr read to the end.
fn stderr_now(r: &mut Running) -> String {
    let _ = r.0.kill();
    let _ = r.0.wait();
    stderr_of(&mut r.0)
}

/// Word `nth` (from 0) of the first line of the `/proc` file `path` that
/// starts with `prefix`, as a number.
fn proc_field(path: &str, prefix: &str, nth: usize) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
    line.split_whitespace().nth(nth).unwrap().parse().unwrap()
}

/// The soft "Max open files" limit of `pid`.
fn soft_nofile(pid: u32) -> u64 {
    proc_field(&format!("/proc/{pid}/limits"), "Max open files", 3)
}

/// Whether this environment lets a process raise its hard limit (root
/// with CAP_SYS_RESOURCE): then "cannot raise" cannot be provoked.
fn can_raise_hard_limit() -> bool {
    Command::new("prlimit")
        .args(["--nofile=1024:1024", "sh", "-c", "ulimit -Hn 4096"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn cfg(global: &str, bind: SocketAddr) -> String {
    format!(
        "global\n    nbthread 1\n{global}defaults\n    mode http\n    timeout connect 1s\n    \
timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind {bind}\n    default_backend b\n\
backend b\n    server s 127.0.0.1:9\n"
    )
}

/// The hard limit this test process runs under (a child may keep it).
fn hard_nofile() -> u64 {
    let hard = proc_field("/proc/self/limits", "Max open files", 4);
    assert!(
        hard >= 4096,
        "these tests need a hard fd limit of 4096 or more"
    );
    hard
}

/// maxconn 1000 needs 2014 descriptors (one listener, one thread, no
/// check): the soft limit is raised to exactly that, within the hard one.
#[test]
fn soft_limit_raised_to_what_maxconn_needs() {
    let (pid, _r) = listening_with_maxconn_1000();
    assert_eq!(soft_nofile(pid), 2014);
}

/// Fairlead with `maxconn 1000`, started with a soft limit of 1024, once
/// it listens: its pid and its guard.
fn listening_with_maxconn_1000() -> (u32, Running) {
    let bind = free_addr(test_ip());
    let child = spawn(&cfg("    maxconn 1000\n", bind), 1024, hard_nofile());
    let pid = child.id();
    (pid, listening(child, bind))
}

/// The kernel's descriptor table of `pid` (`FDSize` in
/// `/proc/<pid>/status`: the entries it holds now, a power of two).
fn fd_table_size(pid: u32) -> u64 {
    proc_field(&format!("/proc/{pid}/status"), "FDSize:", 1)
}

/// The descriptor table is grown to what maxconn needs before any
/// connection comes (growing it later stalls a worker for an RCU grace
/// period): 2014 descriptors for maxconn 1000, so 2048 entries, where a
/// process that opened a dozen descriptors has 64.
#[test]
fn descriptor_table_reserved_for_maxconn() {
    let (pid, _r) = listening_with_maxconn_1000();
    assert_eq!(fd_table_size(pid), 2048);
}

/// `ulimit-n` is the target, whatever maxconn needs; below the need, the
/// warning is HAProxy's.
#[test]
fn ulimit_n_sets_the_limit() {
    let bind = free_addr(test_ip());
    let child = spawn(
        &cfg("    maxconn 1000\n    ulimit-n 1500\n", bind),
        1024,
        hard_nofile(),
    );
    let pid = child.id();
    let mut r = listening(child, bind);
    assert_eq!(soft_nofile(pid), 1500);
    let err = stderr_now(&mut r);
    assert!(
        err.contains(
            "[WARNING]  FD limit (1500) too low for maxconn=1000/maxsock=2014. \
             Please raise 'ulimit-n' to 2014 or more"
        ),
        "{err}"
    );
}

/// Without maxconn, it is derived from the limit: (1024 - 14 - 11) / 2,
/// the stats socket costing one descriptor plus its 10 connections (the
/// 499 HAProxy 2.6 derives from the same configuration).
#[test]
fn maxconn_derived_from_the_limit() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let sock = std::env::temp_dir().join(format!("fl-limits-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let global = format!("    stats socket {} level admin\n", sock.display());
    let child = spawn(&cfg(&global, bind), 1024, 1024);
    let _r = listening(child, bind);
    wait_until("stats socket", || {
        std::os::unix::net::UnixStream::connect(&sock).is_ok()
    });
    let info = ask(&sock, "show info");
    let _ = std::fs::remove_file(&sock);
    assert!(info.contains("\nMaxconn: 499\n"), "{info}");
}

/// When the hard limit is too low and cannot be raised, `strict-limits`
/// (the default, as in HAProxy 2.6) refuses to start and says what to
/// change; `no strict-limits` starts with a warning.
#[test]
fn too_low_hard_limit() {
    let bind = free_addr(test_ip());
    let child = spawn(&cfg("    maxconn 10000\n", bind), 1024, 1024);
    if can_raise_hard_limit() {
        // This environment may raise its hard limit: the start succeeds
        // with the full need.
        let pid = child.id();
        let _r = listening(child, bind);
        assert_eq!(soft_nofile(pid), 20014);
        return;
    }
    let (code, err) = exited(child);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("Cannot raise FD limit to 20014, limit is 1024 (maxconn 10000 needs 20014 file descriptors)"),
        "{err}"
    );
    assert!(err.contains("'no strict-limits'"), "{err}");
    assert!(
        TcpStream::connect_timeout(&bind, Duration::from_millis(200)).is_err(),
        "nothing listens"
    );

    let child = spawn(
        &cfg("    maxconn 10000\n    no strict-limits\n", bind),
        1024,
        1024,
    );
    let pid = child.id();
    let mut r = listening(child, bind);
    assert_eq!(soft_nofile(pid), 1024);
    let err = stderr_now(&mut r);
    assert!(
        err.contains("[WARNING]  Cannot raise FD limit to 20014, limit is 1024"),
        "{err}"
    );
}
