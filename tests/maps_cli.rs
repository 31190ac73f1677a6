//! The map and ACL commands of the runtime API against the real binary:
//! edits on the stats socket change routing and deny decisions on the next
//! request, versions swap atomically, and in master-worker mode the edits
//! survive reloads.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A directory of its own for one test's files, removed on drop.
struct TestDir(PathBuf);

impl TestDir {
    fn new() -> TestDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "fairlead-maps-cli-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        TestDir(d)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sends one CLI line; `None` when the socket does not answer.
fn try_ask(sock: &Path, input: &str) -> Option<String> {
    let mut s = UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(input.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn ask(sock: &Path, cmd: &str) -> String {
    try_ask(sock, &format!("{cmd}\n")).expect("CLI answers")
}

/// The origin that served a request for `host`.
fn route(bind: SocketAddr, host: &str) -> String {
    let r = request(
        bind,
        &format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    );
    r.header("x-served-by").unwrap_or("none").to_string()
}

/// The status of a request sent as user `user` (`x-user` header).
fn status_as(bind: SocketAddr, user: &str) -> u16 {
    request(
        bind,
        &format!("GET / HTTP/1.1\r\nHost: x\r\nx-user: {user}\r\nConnection: close\r\n\r\n"),
    )
    .status
}

/// A frontend routing on `map` by Host (default `be_d`), three backends
/// on origins named `a`, `b` and `d`, and an admin stats socket.
struct MapSetup {
    _origins: Vec<fairlead_term::TermHandle>,
    bind: SocketAddr,
    map: PathBuf,
    sock: PathBuf,
    cfg: String,
    _dir: TestDir,
}

fn map_setup(extra_global: &str) -> MapSetup {
    let ip = test_ip();
    let (ta, a) = term(ip, "a");
    let (tb, b) = term(ip, "b");
    let (td, d) = term(ip, "d");
    let bind = free_addr(ip);
    let dir = TestDir::new();
    let map = dir.join("hosts.map");
    std::fs::write(&map, "# host to backend\na.example be_a\n").unwrap();
    let sock = dir.join("admin.sock");
    let cfg = format!(
        "global\n    nbthread 2\n    stats socket {} level admin\n{extra_global}\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    use_backend %[req.hdr(host),lower,map({},be_d)]\n    default_backend be_d\n\
backend be_a\n    server s {a}\nbackend be_b\n    server s {b}\nbackend be_d\n    server s {d}\n",
        sock.display(),
        map.display()
    );
    MapSetup {
        _origins: vec![ta, tb, td],
        bind,
        map,
        sock,
        cfg,
        _dir: dir,
    }
}

#[test]
fn map_edits_change_routing() {
    let m = map_setup("");
    let _p = Proxy::start(&m.cfg, &[m.bind]);
    wait_until("cli socket", || UnixStream::connect(&m.sock).is_ok());
    let (bind, sock, file) = (m.bind, &m.sock, m.map.display().to_string());
    assert_eq!(route(bind, "A.example"), "a");
    assert_eq!(route(bind, "b.example"), "d");

    assert_eq!(
        ask(sock, "show map"),
        format!(
            "# id (file) description\n0 ({file}) pattern loaded from file '{file}' used by map. \
curr_ver=0 next_ver=0 entry_cnt=1\n\n"
        )
    );
    assert_eq!(ask(sock, "show acl"), "# id (file) description\n\n");
    assert_eq!(ask(sock, &format!("set map {file} a.example be_b")), "\n");
    assert_eq!(route(bind, "a.example"), "b");
    assert_eq!(ask(sock, "add map #0 b.example be_a"), "\n");
    assert_eq!(route(bind, "b.example"), "a");
    let dump = ask(sock, "show map #0");
    let lines: Vec<&str> = dump.trim_end().lines().collect();
    assert_eq!(lines.len(), 2, "{dump}");
    assert!(
        lines[0].starts_with("0x") && lines[0].ends_with(" a.example be_b"),
        "{dump}"
    );
    assert!(lines[1].ends_with(" b.example be_a"), "{dump}");
    assert_eq!(
        ask(sock, "get map #0 b.example"),
        "type=str, case=sensitive, found=yes, idx=tree, key=\"b.example\", value=\"be_a\", \
type=\"str\"\n\n"
    );
    assert_eq!(
        ask(sock, "get map #0 c.example"),
        "type=str, case=sensitive, found=no\n\n"
    );

    // By entry id, then by key.
    let id = lines[1].split(' ').next().unwrap();
    assert_eq!(ask(sock, &format!("set map #0 #{id} be_b")), "\n");
    assert_eq!(route(bind, "b.example"), "b");
    assert_eq!(ask(sock, "del map #0 b.example"), "\n");
    assert_eq!(route(bind, "b.example"), "d");
    assert_eq!(ask(sock, "del map #0 b.example"), "Key not found.\n\n");
    assert_eq!(
        ask(sock, "show map #7"),
        "Unknown map identifier. Please use #<id> or <file>.\n\n"
    );

    // Several entries at once with a payload.
    let out = try_ask(sock, "add map #0 <<\nc.example be_a\nd.example be_b\n\n").unwrap();
    assert_eq!(out, "\n");
    assert_eq!(route(bind, "c.example"), "a");
    assert_eq!(route(bind, "d.example"), "b");
    assert_eq!(ask(sock, "clear map #0"), "\n");
    assert_eq!(route(bind, "a.example"), "d");
}

#[test]
fn versions_swap_atomically() {
    let m = map_setup("");
    let _p = Proxy::start(&m.cfg, &[m.bind]);
    wait_until("cli socket", || UnixStream::connect(&m.sock).is_ok());
    let (bind, sock) = (m.bind, &m.sock);
    assert_eq!(ask(sock, "prepare map #0"), "New version created: 1\n\n");
    assert_eq!(ask(sock, "add map @1 #0 b.example be_a"), "\n");
    assert_eq!(ask(sock, "add map @1 #0 c.example be_b"), "\n");
    assert_eq!(
        ask(sock, "add map @2 #0 x y"),
        "Version number in the future, please use 'prepare map' before.\n\n"
    );
    // Nothing changes before the commit.
    assert_eq!(route(bind, "a.example"), "a");
    assert_eq!(route(bind, "b.example"), "d");
    assert_eq!(ask(sock, "show map @1 #0").trim_end().lines().count(), 2);
    assert!(
        ask(sock, "show map").contains("curr_ver=0 next_ver=1 entry_cnt=3"),
        "{}",
        ask(sock, "show map")
    );
    assert_eq!(
        ask(sock, "commit map @2 #0"),
        "Version number out of range.\n\n"
    );
    assert_eq!(ask(sock, "commit map @1 #0"), "\n");
    assert_eq!(route(bind, "a.example"), "d", "version 0 is gone");
    assert_eq!(route(bind, "b.example"), "a");
    assert_eq!(route(bind, "c.example"), "b");
    assert!(ask(sock, "show map").contains("curr_ver=1 next_ver=1 entry_cnt=2"));
    assert_eq!(
        ask(sock, "commit map @1 #0"),
        "Version number out of range.\n\n"
    );
}

#[test]
fn acl_edits_change_deny() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let dir = TestDir::new();
    let acl = dir.join("blocked.lst");
    std::fs::write(&acl, "mallory\n").unwrap();
    let sock = dir.join("admin.sock");
    let op_sock = dir.join("operator.sock");
    let cfg = http_cfg(bind, "", &format!("    server s {o}"))
        .replace(
            "global\n",
            &format!(
                "global\n    stats socket {} level admin\n    stats socket {}\n",
                sock.display(),
                op_sock.display()
            ),
        )
        .replace(
            "    default_backend bk\n",
            &format!(
                "    acl blocked req.hdr(x-user) -f {}\n    http-request deny if blocked\n    default_backend bk\n",
                acl.display()
            ),
        );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let file = acl.display().to_string();
    assert_eq!(status_as(bind, "mallory"), 403);
    assert_eq!(status_as(bind, "bob"), 200);
    assert_eq!(
        ask(&sock, "show acl"),
        format!(
            "# id (file) description\n0 ({file}) pattern loaded from file '{file}' used by acl. \
curr_ver=0 next_ver=0 entry_cnt=1\n\n"
        )
    );
    // The default level (operator) reads but does not change.
    assert_eq!(ask(&op_sock, "add acl #0 bob"), "Permission denied\n\n");
    assert!(ask(&op_sock, "show acl #0").ends_with(" mallory\n\n"));

    assert_eq!(ask(&sock, &format!("add acl {file} bob")), "\n");
    assert_eq!(status_as(bind, "bob"), 403);
    assert_eq!(
        ask(&sock, "get acl #0 bob"),
        "type=str, case=sensitive, match=yes, idx=tree, pattern=\"bob\"\n\n"
    );
    assert_eq!(ask(&sock, "del acl #0 mallory"), "\n");
    assert_eq!(status_as(bind, "mallory"), 200);
    assert_eq!(status_as(bind, "bob"), 403);
    assert_eq!(ask(&sock, "del acl #0 bob"), "\n");
    assert_eq!(status_as(bind, "bob"), 200);
    assert_eq!(ask(&sock, "show acl #0"), "\n");
}

/// The pid `show info` reports, if the socket answers.
fn cli_pid(sock: &Path) -> Option<i32> {
    let info = try_ask(sock, "show info\n")?;
    info.lines()
        .find_map(|l| l.strip_prefix("Pid: "))
        .and_then(|p| p.trim().parse().ok())
}

/// Reloads the master and waits until a new worker alone serves, CLI
/// included. Returns its pid.
fn reload(p: &Proxy, sock: &Path, old: i32) -> i32 {
    p.signal("USR2");
    let mut new = 0;
    wait_until("a new worker alone", || {
        let c = children(p.pid());
        if let [w] = c[..] {
            new = w;
        }
        c.len() == 1 && new != old && cli_pid(sock) == Some(new)
    });
    new
}

/// The master's state directory (`$TMPDIR/fairlead-<pid>-*`), if any.
fn state_dirs(master: i32) -> Vec<PathBuf> {
    let prefix = format!("fairlead-{master}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[test]
fn map_edits_survive_master_worker_reloads() {
    // What a killed master left behind is removed by the next one.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let stale = std::env::temp_dir().join(format!("fairlead-{}-5a1e", gone.id()));
    std::fs::create_dir_all(stale.join("x")).unwrap();
    let m = map_setup("    hard-stop-after 2s\n");
    let mut p = Proxy::start_with(&m.cfg, &[m.bind], |c| c.arg("-W"));
    let (bind, sock, file) = (m.bind, &m.sock, m.map.display().to_string());
    let mut worker = 0;
    wait_until("worker serving the CLI", || {
        worker = children(p.pid()).first().copied().unwrap_or(0);
        worker != 0 && cli_pid(sock) == Some(worker)
    });
    assert_eq!(ask(sock, &format!("set map {file} a.example be_b")), "\n");
    assert_eq!(ask(sock, "add map #0 b.example be_a"), "\n");
    assert_eq!(route(bind, "a.example"), "b");

    // Twice: the second worker carries what the first restored.
    for _ in 0..2 {
        worker = reload(&p, sock, worker);
        assert_eq!(route(bind, "a.example"), "b");
        assert_eq!(route(bind, "b.example"), "a");
        let dump = ask(sock, "show map #0");
        assert!(dump.contains(" a.example be_b\n") && dump.contains(" b.example be_a\n"));
    }
    assert_eq!(state_dirs(p.pid()).len(), 1);
    assert!(!stale.exists());

    // A configuration that no longer uses the file drops the changes.
    let without = m.cfg.replace(
        &format!("    use_backend %[req.hdr(host),lower,map({file},be_d)]\n"),
        "",
    );
    std::fs::write(&p.cfg_path, &without).unwrap();
    worker = reload(&p, sock, worker);
    assert_eq!(route(bind, "a.example"), "d");
    assert!(p.stderr().contains(&format!(
        "runtime changes to '{file}' are dropped: the new configuration does not use this file"
    )));
    std::fs::write(&p.cfg_path, &m.cfg).unwrap();
    reload(&p, sock, worker);
    assert_eq!(route(bind, "a.example"), "a", "the file's entries again");
    assert_eq!(route(bind, "b.example"), "d");

    // The master removes its state when it stops.
    p.signal("TERM");
    p.wait_exit();
    assert!(state_dirs(p.pid()).is_empty());
}
