//! The CLI over real sockets (UNIX sockets in a temporary directory, TCP on
//! 127.0.0.x port 0), driven against an in-test [`AdminApi`] holding a few
//! fake backends and servers.

use fairlead_admin::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

struct Fake {
    backends: Mutex<Vec<BackendInfo>>,
    changes: Mutex<Vec<(ServerRef, ServerChange)>>,
    stat_requests: Mutex<Vec<StatRequest>>,
    killed: Mutex<Vec<u64>>,
    profiling: Mutex<Option<TasksProfiling>>,
}

fn server(id: u32, name: &str, ip: &str, weight: u32) -> ServerInfo {
    ServerInfo {
        id,
        name: name.into(),
        forced_id: false,
        addr: Some(ip.parse().unwrap()),
        port: 8080,
        op_state: OpState::Running,
        admin_state: 0,
        uweight: weight,
        iweight: weight,
        since_last_change: Duration::from_secs(42),
        check_status: 6,
        check_result: 3,
        check_health: 4,
        check_state: check_flags::CONFIGURED | check_flags::ENABLED,
        agent_state: 0,
        fqdn: None,
        use_ssl: false,
        check_port: 0,
        check_addr: None,
        agent_addr: None,
        agent_port: 0,
    }
}

impl Fake {
    fn new() -> Arc<Fake> {
        let app = BackendInfo {
            id: 3,
            name: "app".into(),
            forced_id: false,
            dynamic_weights: true,
            servers: vec![
                server(1, "app1", "10.0.0.11", 2),
                server(2, "app2", "10.0.0.12", 10),
            ],
        };
        let stat = BackendInfo {
            id: 4,
            name: "static".into(),
            forced_id: true,
            dynamic_weights: false,
            servers: vec![server(7, "s1", "10.0.1.1", 10)],
        };
        Arc::new(Fake {
            backends: Mutex::new(vec![app, stat]),
            changes: Mutex::new(Vec::new()),
            stat_requests: Mutex::new(Vec::new()),
            killed: Mutex::new(Vec::new()),
            profiling: Mutex::new(None),
        })
    }
}

impl AdminApi for Fake {
    fn info(&self) -> Vec<(String, String)> {
        [
            ("Name", "Fairlead"),
            ("Version", "0.1.0"),
            ("Release_date", "2025/01/01"),
            ("Nbthread", "4"),
            ("Nbproc", "1"),
            ("Process_num", "1"),
            ("Pid", "1234"),
            ("Uptime", "0d 0h01m05s"),
            ("Uptime_sec", "65"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
    fn version(&self) -> String {
        "0.1.0".into()
    }
    fn stat(&self, req: &StatRequest) -> Result<String, String> {
        self.stat_requests.lock().unwrap().push(req.clone());
        if req.filter.as_ref().is_some_and(|f| f.proxy == "nope") {
            return Err("No such proxy.".into());
        }
        Ok("# pxname,svname\napp,BACKEND\n\n".into())
    }
    fn backends(&self) -> Vec<BackendInfo> {
        self.backends.lock().unwrap().clone()
    }
    fn server_change(&self, t: &ServerRef, c: ServerChange) -> Result<(), String> {
        self.changes.lock().unwrap().push((t.clone(), c));
        let mut b = self.backends.lock().unwrap();
        let s = &mut b[t.backend_idx].servers[t.server_idx];
        match c {
            ServerChange::Weight(w) => s.uweight = w,
            ServerChange::Admin(AdminState::Maint) => s.admin_state |= admin_flags::FMAINT,
            ServerChange::Admin(AdminState::Drain) => s.admin_state |= admin_flags::FDRAIN,
            ServerChange::Admin(AdminState::Ready) => s.admin_state = 0,
            ServerChange::Addr { ip, port } => {
                s.addr = Some(ip);
                s.port = port.unwrap_or(s.port);
            }
            ServerChange::Maxconn(0) => return Err("refused".into()),
            _ => {}
        }
        Ok(())
    }
    fn sessions(&self) -> Vec<SessionInfo> {
        vec![
            SessionInfo {
                id: 0x1a2b,
                proto: "tcpv4".into(),
                client: Some("127.0.0.1:40000".parse().unwrap()),
                frontend: "www".into(),
                backend: Some("app".into()),
                server: Some("app1".into()),
                age: Duration::from_secs(65),
                state: "forward".into(),
            },
            SessionInfo {
                id: 0x1a2c,
                proto: "tcpv4".into(),
                client: Some("127.0.0.2:40001".parse().unwrap()),
                frontend: "www".into(),
                backend: None,
                server: None,
                age: Duration::from_secs(0),
                state: "wait".into(),
            },
        ]
    }
    fn shutdown_session(&self, id: u64) -> bool {
        self.killed.lock().unwrap().push(id);
        id == 0x1a2b
    }
    fn pools(&self) -> Vec<PoolInfo> {
        vec![
            PoolInfo {
                name: "buffer".into(),
                size: 16384,
                allocated: 4,
                used: 1,
                failed: 0,
            },
            PoolInfo {
                name: "conn".into(),
                size: 256,
                allocated: 10,
                used: 10,
                failed: 2,
            },
        ]
    }
    fn errors(&self) -> ErrorReport {
        ErrorReport {
            total: 2,
            errors: vec![CapturedError {
                when: UNIX_EPOCH + Duration::from_millis(1_236_181_616_081),
                proxy: "http-in".into(),
                proxy_id: 2,
                side: ErrorSide::Response,
                other: Some(("fe-eth0".into(), 1)),
                server: Some(("s2".into(), 1)),
                event: 54,
                client: Some("127.0.0.1:5000".parse().unwrap()),
                offset: 0,
                position: 23,
                reason: "invalid character in header name".into(),
                bytes: b"HTTP/1.0 200 OK\r\nheader/bizarre:blah\r\n\r\n".to_vec(),
            }],
        }
    }
    fn profiling(&self) -> ProfilingReport {
        ProfilingReport {
            tasks: TasksProfilingState::On,
            memory: false,
            measured: Duration::from_millis(12_345),
            stopped_ago: Duration::ZERO,
            rows: vec![
                TaskStat {
                    name: "h1_io_cb".into(),
                    calls: 100,
                    cpu_ns: 2_000_000,
                    lat_ns: 150_000,
                },
                TaskStat {
                    name: "process_stream".into(),
                    calls: 1234,
                    cpu_ns: 12_340_000,
                    lat_ns: 0,
                },
            ],
        }
    }
    fn set_profiling_tasks(&self, mode: TasksProfiling) -> Result<(), String> {
        *self.profiling.lock().unwrap() = Some(mode);
        Ok(())
    }
}

static DIRS: AtomicUsize = AtomicUsize::new(0);

fn tmpdir() -> PathBuf {
    let n = DIRS.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("fl-admin-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn unix_cli(level: &str) -> (CliHandle, Arc<Fake>, PathBuf) {
    let path = tmpdir().join("cli.sock");
    let words: Vec<String> = format!("stats socket {} level {level}", path.display())
        .split(' ')
        .map(String::from)
        .collect();
    let fake = Fake::new();
    let h = start_cli(parse_stats_socket(&words).unwrap(), fake.clone()).unwrap();
    (h, fake, path)
}

fn tcp_cli(ip: &str, level: Level) -> (CliHandle, Arc<Fake>, SocketAddr) {
    let mut cfg = CliListen::new(CliAddr::Tcp(format!("{ip}:0").parse().unwrap()));
    cfg.level = level;
    let fake = Fake::new();
    let h = start_cli(cfg, fake.clone()).unwrap();
    let CliAddr::Tcp(a) = *h.local_addr() else {
        unreachable!()
    };
    assert_ne!(a.port(), 0);
    (h, fake, a)
}

/// What `echo "<input>" | socat stdio <path>` prints.
fn socat_unix(path: &Path, input: &str) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(input.as_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn socat_tcp(addr: SocketAddr, input: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(input.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Reads until the output ends with `suffix`.
fn read_until(s: &mut UnixStream, suffix: &str) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1024];
    while !out.ends_with(suffix.as_bytes()) {
        let n = s.read(&mut b).unwrap();
        assert!(
            n > 0,
            "closed early after {:?}",
            String::from_utf8_lossy(&out)
        );
        out.extend_from_slice(&b[..n]);
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn non_interactive_show_info_then_close() {
    let (_h, _f, path) = unix_cli("operator");
    let out = socat_unix(&path, "show info\n");
    assert!(
        out.starts_with("Name: Fairlead\nVersion: 0.1.0\nRelease_date: 2025/01/01\nNbthread: 4\n")
    );
    assert!(out.ends_with("Uptime_sec: 65\n\n"), "{out:?}");
    // Without closing our side: the server closes after the line.
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"show version\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert_eq!(out, "0.1.0\n\n");
}

#[test]
fn prompt_mode_keeps_the_connection_until_quit() {
    let (_h, _f, path) = unix_cli("admin");
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"prompt\n").unwrap();
    assert_eq!(read_until(&mut s, "> "), "\n> ");
    s.write_all(b"show version\n").unwrap();
    assert_eq!(read_until(&mut s, "> "), "0.1.0\n\n> ");
    s.write_all(b"get weight app/app1\n").unwrap();
    assert_eq!(read_until(&mut s, "> "), "2 (initial 2)\n\n> ");
    s.write_all(b"\n").unwrap();
    assert_eq!(read_until(&mut s, "> "), "\n> ");
    // Pipelined commands: a bare empty line between them, the prompt last.
    s.write_all(b"show version;show cli level\n").unwrap();
    assert_eq!(read_until(&mut s, "> "), "0.1.0\n\nadmin\n\n> ");
    s.write_all(b"quit\n").unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "");
    // All at once, as a script would send it.
    let out = socat_unix(&path, "prompt\nshow version\nquit\nshow info\n");
    assert_eq!(out, "\n> 0.1.0\n\n> ");
    // `prompt i`: interactive without prompt; `prompt n` closes after the line.
    let out = socat_unix(
        &path,
        "prompt i\nshow version\nprompt n;show cli level\nshow version\n",
    );
    assert_eq!(out, "\n0.1.0\n\n\nadmin\n\n");
}

#[test]
fn semicolon_separated_commands() {
    let (_h, f, path) = unix_cli("admin");
    let out = socat_unix(&path, "show version;get weight app/app1 ; show cli level\n");
    assert_eq!(out, "0.1.0\n\n2 (initial 2)\n\nadmin\n\n");
    let out = socat_unix(
        &path,
        "set server app/app1 weight 1;get weight app/app1\r\n",
    );
    assert_eq!(out, "\n1 (initial 2)\n\n");
    assert_eq!(f.changes.lock().unwrap().len(), 1);
    // Empty commands between separators are skipped; quit stops the line.
    let out = socat_unix(&path, ";show version;;quit;show version\n");
    assert_eq!(out, "0.1.0\n\n");
}

#[test]
fn permission_denied_below_the_required_level() {
    let (_h, f, addr) = tcp_cli("127.0.0.7", Level::User);
    for cmd in [
        "set server app/app1 state maint",
        "disable server app/app1",
        "set weight app/app1 1",
        "show sess",
        "show errors",
        "shutdown session 0x1a2b",
        "set profiling tasks on",
        "operator",
    ] {
        assert_eq!(
            socat_tcp(addr, &format!("{cmd}\n")),
            "Permission denied\n\n",
            "{cmd}"
        );
    }
    assert!(f.changes.lock().unwrap().is_empty());
    assert!(f.killed.lock().unwrap().is_empty());
    assert_eq!(
        socat_tcp(addr, "get weight app/app2\n"),
        "10 (initial 10)\n\n"
    );
    let help = socat_tcp(addr, "help\n");
    assert!(help.starts_with("The following commands are valid at this level:\n"));
    assert!(help.contains(&format!(
        "  {:<40}: report information",
        "show info [desc|json|typed]*"
    )));
    assert!(!help.contains("set server"), "{help}");
    assert!(!help.contains("show sess"));
    assert!(help.ends_with("  quit                                    : disconnect\n\n"));
}

#[test]
fn levels_only_go_down() {
    let (_h, f, path) = unix_cli("admin");
    let out = socat_unix(
        &path,
        "operator;set server app/app1 state maint;show sess;user;operator;show cli level\n",
    );
    assert_eq!(
        out,
        "\nPermission denied\n\n0x1a2b: proto=tcpv4 src=127.0.0.1:40000 fe=www be=app srv=app1 age=1m5s state=forward\n\
         0x1a2c: proto=tcpv4 src=127.0.0.2:40001 fe=www be=<NONE> srv=<none> age=0s state=wait\n\n\
         \nPermission denied\n\nuser\n\n"
    );
    assert!(f.changes.lock().unwrap().is_empty());
    let help = socat_unix(&path, "help\n");
    assert!(help.contains("  set server <bk>/<srv> [opts]            : change a server's"));
}

#[test]
fn socket_file_mode_and_stale_file() {
    let dir = tmpdir();
    let path = dir.join("admin.sock");
    // A stale socket: bound, then its listener gone.
    drop(UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let words: Vec<String> = [
        "stats",
        "socket",
        path.to_str().unwrap(),
        "mode",
        "600",
        "level",
        "admin",
    ]
    .map(String::from)
    .to_vec();
    let cfg = parse_stats_socket(&words).unwrap();
    let h = start_cli(cfg.clone(), Fake::new()).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(socat_unix(&path, "show cli level\n"), "admin\n\n");
    // A live listener on the path: refused, and the socket keeps working.
    let err = start_cli(cfg.clone(), Fake::new()).err().expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(socat_unix(&path, "show version\n"), "0.1.0\n\n");
    // No temporary file left behind; stop removes the socket.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    h.stop();
    assert!(!path.exists());
    // A regular file is never replaced.
    std::fs::write(&path, "data").unwrap();
    let err = start_cli(cfg, Fake::new()).err().expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
}

#[test]
fn mode_and_owner_applied() {
    let dir = tmpdir();
    let path = dir.join("a.sock");
    let mut cfg = CliListen::new(CliAddr::Unix(path.clone()));
    cfg.mode = Some(0o660);
    // Our own ids, so that chown works without privileges.
    let dir_meta = std::fs::metadata(&dir).unwrap();
    cfg.uid = Some(dir_meta.uid());
    cfg.gid = Some(dir_meta.gid());
    let _h = start_cli(cfg, Fake::new()).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o660);
    assert_eq!((meta.uid(), meta.gid()), (dir_meta.uid(), dir_meta.gid()));
}

#[test]
fn unknown_commands() {
    let (_h, _f, path) = unix_cli("admin");
    let out = socat_unix(&path, "foo bar\n");
    assert!(out.starts_with(
        "Unknown command: 'foo', but maybe one of the following ones is a better match:\n"
    ));
    assert!(out.contains("  show servers state [<backend>]          : dump"));
    assert!(out.ends_with(
        "  help [<command>]                        : list matching or all commands\n  \
         prompt [help | n | i | p | timed]*      : toggle interactive mode with prompt\n  \
         quit                                    : disconnect\n\n"
    ));
    let out = socat_unix(&path, "show infos\n");
    assert!(out.starts_with("Unknown command: 'show', but maybe"));
    assert!(out.contains("  show info "));
    assert!(!out.contains("set server"), "{out}");
    let out = socat_unix(&path, "help set\n");
    assert!(
        out.contains("set maxconn server")
            && out.contains("set weight")
            && !out.contains("show info")
    );
}

#[test]
fn servers_state_format() {
    let (_h, f, path) = unix_cli("admin");
    f.backends.lock().unwrap()[1].servers[0].admin_state = admin_flags::CMAINT;
    let out = socat_unix(&path, "show servers state\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1");
    assert_eq!(
        lines[1],
        "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port"
    );
    assert_eq!(
        lines[2],
        "3 app 1 app1 10.0.0.11 2 0 2 2 42 6 3 4 6 0 0 0 - 8080 - 0 0 - - 0"
    );
    assert_eq!(
        lines[4],
        "4 static 7 s1 10.0.1.1 2 4 10 10 42 6 3 4 6 0 1 0 - 8080 - 0 0 - - 0"
    );
    assert_eq!(lines.len(), 6);
    assert!(out.ends_with("\n\n"));
    let out = socat_unix(&path, "show servers state static\n");
    assert_eq!(out.lines().count(), 4);
    assert_eq!(
        socat_unix(&path, "show servers state #3\n").lines().count(),
        5
    );
    assert_eq!(
        socat_unix(&path, "show servers state nope\n"),
        "Can't find backend.\n\n"
    );
}

#[test]
fn show_errors_dump() {
    let (_h, _f, path) = unix_cli("operator");
    let out = socat_unix(&path, "show errors\n");
    let (first, rest) = out.split_once('\n').unwrap();
    assert!(first.starts_with("Total events captured on ["), "{first}");
    assert!(first.ends_with("] : 2"));
    assert_eq!(
        rest,
        " \n\
         [04/Mar/2009:15:46:56.081] backend http-in (#2): invalid response\n\
         \x20 frontend fe-eth0 (#1), server s2 (#1), event #54, src 127.0.0.1:5000\n\
         \x20 buffer starts at 0, len 40, error at position 23\n\
         \x20 reason: invalid character in header name\n\
         \x20 \n\
         \x20 00000  HTTP/1.0 200 OK\\r\\n\n\
         \x20 00017  header/bizarre:blah\\r\\n\n\
         \x20 00038  \\r\\n\n\
         \n"
    );
    // Filters: by side and by proxy.
    assert_eq!(
        socat_unix(&path, "show errors -1 request\n")
            .lines()
            .count(),
        2
    );
    assert_eq!(
        socat_unix(&path, "show errors fe-eth0 response\n")
            .lines()
            .count(),
        11
    );
    assert_eq!(socat_unix(&path, "show errors 2\n").lines().count(), 11);
    assert_eq!(socat_unix(&path, "show errors other\n").lines().count(), 2);
}

#[test]
fn weights() {
    let (_h, f, path) = unix_cli("admin");
    assert_eq!(socat_unix(&path, "set server app/app2 weight 50%\n"), "\n");
    assert_eq!(
        socat_unix(&path, "get weight app/app2\n"),
        "5 (initial 10)\n\n"
    );
    assert_eq!(socat_unix(&path, "set weight app/#1 200%\n"), "\n");
    assert_eq!(
        socat_unix(&path, "get weight #3/app1\n"),
        "4 (initial 2)\n\n"
    );
    let ch = f.changes.lock().unwrap().clone();
    assert_eq!(ch[0].1, ServerChange::Weight(5));
    assert_eq!(
        (
            ch[0].0.backend_idx,
            ch[0].0.server_idx,
            ch[0].0.server.as_str()
        ),
        (0, 1, "app2")
    );
    assert_eq!(ch[1].1, ServerChange::Weight(4));
    assert_eq!(
        socat_unix(&path, "set server static/s1 weight 50%\n"),
        "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.\n\n"
    );
    assert_eq!(socat_unix(&path, "set server static/s1 weight 0%\n"), "\n");
    assert_eq!(
        socat_unix(&path, "set server app/app1 weight 300\n"),
        "Absolute weight can only be between 0 and 256 inclusive.\n\n"
    );
    assert_eq!(
        socat_unix(&path, "set server app/app1 weight\n"),
        "Require <weight> or <weight%>.\n\n"
    );
}

#[test]
fn disable_enable_and_set_server() {
    let (_h, f, path) = unix_cli("admin");
    assert_eq!(socat_unix(&path, "disable server app/app1\n"), "\n");
    assert_eq!(
        f.backends.lock().unwrap()[0].servers[0].admin_state,
        admin_flags::FMAINT
    );
    assert_eq!(socat_unix(&path, "enable server app/app1\n"), "\n");
    assert_eq!(socat_unix(&path, "set server app/app2 state drain\n"), "\n");
    assert_eq!(
        socat_unix(&path, "set server app/app2 health stopping\n"),
        "\n"
    );
    assert_eq!(socat_unix(&path, "set maxconn server app/app2 100\n"), "\n");
    assert_eq!(
        socat_unix(&path, "set maxconn server app/app2 0\n"),
        "refused\n\n"
    );
    let ch: Vec<ServerChange> = f.changes.lock().unwrap().iter().map(|c| c.1).collect();
    assert_eq!(
        ch,
        [
            ServerChange::Admin(AdminState::Maint),
            ServerChange::Admin(AdminState::Ready),
            ServerChange::Admin(AdminState::Drain),
            ServerChange::Health(ForcedHealth::Stopping),
            ServerChange::Maxconn(100),
            ServerChange::Maxconn(0),
        ]
    );
    for (cmd, want) in [
        ("disable server nope/app1", "No such backend.\n"),
        ("enable server app/nope", "No such server.\n"),
        ("disable server app", "Require 'backend/server'.\n"),
        ("set server app/app1 state up", "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n"),
        ("set server app/app1 health sick", "'set server <srv> health' expects 'up', 'stopping', or 'down'.\n"),
        ("set server app/app1 agent up", "agent checks are not enabled on this server.\n"),
        ("set server app/app1 fqdn a.example", "set server <b>/<s> fqdn failed because no resolution is configured.\n"),
        ("set server app/app1 fqdn", "set server <b>/<s> fqdn requires a FQDN.\n"),
        ("set server app/app1 ssl on", "'set server <srv> ssl' is not supported by Fairlead.\n"),
        ("set server app/app1 frob", "usage: set server <backend>/<server> addr | agent | health | state | weight\n"),
        ("set maxconn server app/app1 x", "maxconn string empty or preceded by garbage\n"),
        ("set maxconn server app/app1 5x", "Trailing garbage in maxconn string\n"),
        ("set server app/app1 addr 10.0.0.11", "nothing changed\n"),
        ("set server app/app1 addr 10.0.0.99 port 81", "IP changed from '10.0.0.11' to '10.0.0.99', port changed from '8080' to '81' by 'stats socket command'\n"),
        ("set server app/app1 addr 10.0.0.99 port 82", "port changed from '81' to '82' by 'stats socket command'\n"),
        ("set server app/app1 addr bogus", "Invalid addr 'bogus'\n"),
        ("set server app/app1 addr", "set server <b>/<s> addr requires an address and optionally a port.\n"),
    ] {
        assert_eq!(socat_unix(&path, &format!("{cmd}\n")), format!("{want}\n"), "{cmd}");
    }
    assert_eq!(f.changes.lock().unwrap().len(), 8);
}

#[test]
fn sessions_pools_profiling_stat() {
    let (_h, f, addr) = tcp_cli("127.0.0.9", Level::Admin);
    assert_eq!(
        socat_tcp(addr, "show sess backend app\n"),
        "0x1a2b: proto=tcpv4 src=127.0.0.1:40000 fe=www be=app srv=app1 age=1m5s state=forward\n\n"
    );
    assert_eq!(
        socat_tcp(addr, "show sess 0x99\n"),
        "Session not found.\n\n"
    );
    assert_eq!(socat_tcp(addr, "show sess older 10\n").lines().count(), 2);
    assert_eq!(socat_tcp(addr, "shutdown session 0x1a2b\n"), "\n");
    assert_eq!(
        socat_tcp(addr, "shutdown session 0x77\n"),
        "No such session (use 'show sess').\n\n"
    );
    assert_eq!(
        socat_tcp(addr, "shutdown session\n"),
        "Session pointer expected (use 'show sess').\n\n"
    );
    assert_eq!(*f.killed.lock().unwrap(), [0x1a2b, 0x77]);

    assert_eq!(
        socat_tcp(addr, "show pools byusage\n"),
        "Dumping pools usage. Use SIGQUIT to flush them.\n\
         \x20 - Pool buffer (16384 bytes) : 4 allocated (65536 bytes), 1 used, 0 failures\n\
         \x20 - Pool conn (256 bytes) : 10 allocated (2560 bytes), 10 used, 2 failures\n\
         Total: 2 pools, 68096 bytes allocated, 18944 used, 2 failures.\n\n"
    );

    assert_eq!(
        socat_tcp(addr, "show profiling\n"),
        "Per-task CPU profiling              : on            # set profiling tasks {on|auto|off}\n\
         Memory usage profiling              : off           # set profiling memory {on|off}\n\
         Tasks activity over 12.345 sec till 0.000 sec ago:\n\
         \x20 function                      calls   cpu_tot   cpu_avg   lat_tot   lat_avg\n\
         \x20 process_stream                 1234   12.34ms   10.00us      -         -   \n\
         \x20 h1_io_cb                        100   2.000ms   20.00us   150.0us   1.500us\n\n"
    );
    assert_eq!(
        socat_tcp(addr, "show profiling tasks bytime 1\n")
            .lines()
            .count(),
        4
    );
    assert_eq!(socat_tcp(addr, "set profiling tasks auto\n"), "\n");
    assert_eq!(*f.profiling.lock().unwrap(), Some(TasksProfiling::Auto));
    assert_eq!(
        socat_tcp(addr, "set profiling memory on\n"),
        "Memory profiling not compiled in.\n\n"
    );

    // show stat: delegated; blank lines in the text never end the output early.
    assert_eq!(
        socat_tcp(addr, "show stat\n"),
        "# pxname,svname\napp,BACKEND\n\n"
    );
    assert_eq!(
        socat_tcp(addr, "show stat app -1 -1 typed up\n")
            .lines()
            .count(),
        3
    );
    assert_eq!(
        socat_tcp(addr, "show stat nope 2 -1\n"),
        "No such proxy.\n\n"
    );
    assert_eq!(
        socat_tcp(addr, "show stat domain dns\n"),
        "Invalid statistics domain.\n\n"
    );
    let reqs = f.stat_requests.lock().unwrap().clone();
    assert_eq!(reqs[0].format, OutputFormat::Default);
    assert_eq!(reqs[1].format, OutputFormat::Typed);
    assert!(reqs[1].up && !reqs[1].no_maint);
    assert_eq!(
        reqs[1].filter,
        Some(StatFilter {
            proxy: "app".into(),
            kinds: -1,
            sid: -1
        })
    );
    assert_eq!(
        socat_tcp(addr, "show info json\n"),
        "'show info json' is not supported yet.\n\n"
    );
}

#[test]
fn concurrent_connections_beyond_maxconn_wait() {
    let dir = tmpdir();
    let mut cfg = CliListen::new(CliAddr::Unix(dir.join("c.sock")));
    cfg.maxconn = 1;
    let h = start_cli(cfg, Fake::new()).unwrap();
    let CliAddr::Unix(path) = h.local_addr().clone() else {
        unreachable!()
    };
    let mut a = UnixStream::connect(&path).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    a.write_all(b"prompt\n").unwrap();
    assert_eq!(read_until(&mut a, "> "), "\n> ");
    // The second one is served once the first leaves.
    let t = std::thread::spawn(move || socat_unix(&path, "show version\n"));
    std::thread::sleep(Duration::from_millis(100));
    a.write_all(b"quit\n").unwrap();
    assert_eq!(t.join().unwrap(), "0.1.0\n\n");
}

#[test]
fn idle_timeout_and_stop_close_connections() {
    let dir = tmpdir();
    let mut cfg = CliListen::new(CliAddr::Unix(dir.join("t.sock")));
    cfg.timeout = Duration::from_millis(200);
    let h = start_cli(cfg, Fake::new()).unwrap();
    let CliAddr::Unix(path) = h.local_addr().clone() else {
        unreachable!()
    };
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    assert_eq!(s.read_to_end(&mut out).unwrap(), 0);
    // stop() ends an interactive session in progress.
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"prompt i\n").unwrap();
    assert_eq!(read_until(&mut s, "\n"), "\n");
    h.stop();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
    assert!(!path.exists());
}
