//! Sockets handed in and UNIX sockets, end to end with the real binary:
//! `bind fd@<n>` (a socket inherited from the parent), systemd's socket
//! activation (`LISTEN_FDS`/`LISTEN_PID`) under the master, reloads that
//! keep those sockets, `bind unix@`/`abns@` in HTTP and TCP mode,
//! `server unix@`/`/path`/`abns@`, and `bind`/`server sockpair@<n>`
//! (connections passed over a socket pair with `SCM_RIGHTS`).

mod common;
use common::*;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixSocketAddr, UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A directory of its own for one test's socket files (short paths: a
/// socket path has at most 97 bytes).
fn sock_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("fl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An abstract address as HAProxy and Fairlead use it: the name padded
/// with NULs to the whole `sun_path`.
fn abns(name: &str) -> UnixSocketAddr {
    let mut b = name.as_bytes().to_vec();
    b.resize(107, 0);
    UnixSocketAddr::from_abstract_name(b).unwrap()
}

/// Makes `fd` the child's descriptor 3, inherited across `exec`.
fn pass_as_fd3(cmd: &mut Command, fd: RawFd) {
    pass_as(cmd, fd, 3);
}

/// Makes `fd` the child's descriptor `n`, inherited across `exec`.
fn pass_as(cmd: &mut Command, fd: RawFd, n: RawFd) {
    // SAFETY: runs in the forked child before exec and only calls the
    // async-signal-safe dup2/fcntl on descriptors the parent keeps open
    // until `spawn` returns. dup2 clears FD_CLOEXEC on the copy; when the
    // socket already is descriptor `n`, the flag is cleared directly.
    unsafe {
        cmd.pre_exec(move || {
            let r = if fd == n {
                libc::fcntl(n, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, n)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Starts `cmd` (a prepared `fairlead` or shell command line) as a
/// [`Proxy`], capturing stderr, and waits until `ready` holds.
fn start(mut cmd: Command, cfg_path: std::path::PathBuf, ready: impl Fn() -> bool) -> Proxy {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut p = Proxy::from_child(cmd.spawn().expect("spawn fairlead"), cfg_path);
    let end = Instant::now() + DEADLINE;
    while !ready() {
        if let Ok(Some(st)) = p.child.try_wait() {
            panic!("fairlead exited ({st}) before listening:\n{}", p.stderr());
        }
        assert!(Instant::now() < end, "fairlead not ready:\n{}", p.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    p
}

fn fairlead(cfg_path: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fairlead"));
    c.arg("-f").arg(cfg_path);
    c
}

/// One HTTP/1.1 exchange over any stream; returns the response.
fn exchange(mut s: impl Read + Write, path: &str) -> Response {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    read_response(&mut BufReader::new(s), false).expect("a response")
}

fn unix_get(addr: &UnixSocketAddr, path: &str) -> Response {
    let s = UnixStream::connect_addr(addr).expect("connect to the UNIX socket");
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    exchange(s, path)
}

fn unix_ready(addr: &UnixSocketAddr) -> bool {
    UnixStream::connect_addr(addr).is_ok()
}

/// A minimal HTTP origin on a UNIX socket (fairlead-term listens on TCP
/// only): answers each request with `body` and closes.
fn unix_origin(l: UnixListener, body: &'static str) {
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                if read_head(&mut r).is_some() {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
}

/// A UNIX socket origin that answers with the request head it received.
fn unix_echo_origin(l: UnixListener) {
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                if let Some(head) = read_head(&mut r) {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
                        head.len()
                    );
                }
            });
        }
    });
}

/// `option forwardfor` adds no header for a UNIX socket client (it has
/// no address), and the usual one for a TCP client of the same frontend.
#[test]
fn forwardfor_skips_unix_clients() {
    let ip = test_ip();
    let dir = sock_dir("xff");
    let file = dir.join("echo.sock");
    unix_echo_origin(UnixListener::bind(&file).unwrap());
    let tcp = free_addr(ip);
    let name = format!("fl-test-{}-xff", std::process::id());
    let cfg = format!(
        "defaults\n    mode http\n    option forwardfor\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {tcp}\n    bind abns@{name}\n    default_backend bk\n\
backend bk\n    server s1 {f}\n",
        f = file.display()
    );
    let p = Proxy::start(&cfg, &[tcp]);
    let via_tcp = get(tcp, "/").body_str().to_ascii_lowercase();
    assert!(
        via_tcp.contains("x-forwarded-for: 127.0.0.1\r\n"),
        "{via_tcp}\n{}",
        p.stderr()
    );
    let via_unix = unix_get(&abns(&name), "/").body_str().to_ascii_lowercase();
    assert!(via_unix.starts_with("get / http/1.1\r\n"), "{via_unix}");
    assert!(!via_unix.contains("x-forwarded-for"), "{via_unix}");
    drop(p);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `bind fd@3`: a socket bound by the parent, not yet listening, serves
/// HTTP; `src` and the log see the real TCP client.
#[test]
fn fd_listener_serves_http() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_reuse_address(true).unwrap();
    sock.bind(&bind.into()).unwrap();
    let cfg = http_cfg(bind, "", &format!("    server s1 {origin}"))
        .replace(&format!("bind {bind}"), "bind fd@3");
    let path = write_cfg(&cfg);
    let mut cmd = fairlead(&path);
    pass_as_fd3(&mut cmd, sock.as_raw_fd());
    let p = start(cmd, path, || {
        std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(200)).is_ok()
    });
    let r = get(bind, "/?s=3");
    assert_eq!(r.status, 200, "{}", p.stderr());
    assert_eq!(r.body.len(), 3);
    // Nothing listened before fairlead did.
    drop(sock);
    assert_eq!(get(bind, "/").status, 200);
}

/// Sends `fd` over `sock` as HAProxy does for `sockpair@`: one message of
/// two bytes carrying the descriptor (`SCM_RIGHTS`).
fn send_fd(sock: &UnixStream, fd: RawFd) -> std::io::Result<()> {
    let mut data = [0u8; 2];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: the message points to `iov`, `data` and `control`, alive for
    // the call; the control buffer (32 bytes, aligned) holds one header
    // and one descriptor.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(4) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), fd);
        libc::sendmsg(sock.as_raw_fd(), &msg, 0)
    };
    match sent {
        2 => Ok(()),
        -1 => Err(std::io::Error::last_os_error()),
        n => Err(std::io::Error::other(format!("sendmsg sent {n} bytes"))),
    }
}

/// `bind sockpair@3`: descriptor 3 is one end of a socket pair; each
/// connection the parent passes over it (here accepted TCP connections
/// and socket pair ends, as HAProxy's own test harness passes them) is
/// served (two worker threads read the pair); the descriptor that is not a socket
/// is skipped without harm; when the parent closes its end, connections
/// already passed still complete.
#[test]
fn sockpair_listener_serves_passed_connections() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let (ours, theirs) = UnixStream::pair().unwrap();
    let cfg = http_cfg(free_addr(ip), "", &format!("    server s1 {origin}"));
    let cfg = cfg
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("bind ") {
                "    bind sockpair@3"
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    let path = write_cfg(&cfg);
    let mut cmd = fairlead(&path);
    pass_as_fd3(&mut cmd, theirs.as_raw_fd());
    // Connections passed before fairlead reads them wait in the pair.
    let p = start(cmd, path, || true);
    drop(theirs);
    let send = |sock: &UnixStream, fd: RawFd| {
        send_fd(sock, fd).unwrap_or_else(|e| panic!("sendmsg: {e}\n{}", p.stderr()))
    };
    let front = TcpListener::bind(SocketAddr::new(ip, 0)).unwrap();
    let f = std::fs::File::open("/proc/self/stat").unwrap();
    send(&ours, f.as_raw_fd());
    for i in 0..20 {
        let client = if i % 2 == 0 {
            let c = std::net::TcpStream::connect(front.local_addr().unwrap()).unwrap();
            let (accepted, _) = front.accept().unwrap();
            send(&ours, accepted.as_raw_fd());
            // fairlead holds its own copy now.
            drop(accepted);
            c.set_read_timeout(Some(DEADLINE)).unwrap();
            exchange(c, &format!("/?s={i}"))
        } else {
            let (c, end) = UnixStream::pair().unwrap();
            send(&ours, end.as_raw_fd());
            drop(end);
            c.set_read_timeout(Some(DEADLINE)).unwrap();
            exchange(c, &format!("/?s={i}"))
        };
        assert_eq!(client.status, 200, "connection {i}:\n{}", p.stderr());
        assert_eq!(client.body.len(), i, "connection {i}");
    }
    // One passed last, then the parent's end closes.
    let c = std::net::TcpStream::connect(front.local_addr().unwrap()).unwrap();
    let (accepted, _) = front.accept().unwrap();
    send(&ours, accepted.as_raw_fd());
    drop((accepted, ours));
    c.set_read_timeout(Some(DEADLINE)).unwrap();
    assert_eq!(exchange(c, "/?s=7").body.len(), 7);
    let end = Instant::now() + DEADLINE;
    while !p.stderr().contains("closed the socket pair") {
        assert!(Instant::now() < end, "{}", p.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = p.stderr();
    assert!(err.contains("skipped a passed descriptor"), "{err}");
}

/// Receives one descriptor passed over `sock` (blocking); `None` at end
/// of stream.
fn recv_fd(sock: &UnixStream) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut data = [0u8; 2];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: the message points to `iov`, `data` and `control`, alive for
    // the call; the descriptor read from the control message is new to this
    // process and owned once.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(4) as usize;
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
            return None;
        }
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
        Some(std::os::fd::OwnedFd::from_raw_fd(fd))
    }
}

/// `server s1 sockpair@3`: each connection to the server is a new socket
/// pair, one end of which comes over descriptor 3 (two bytes and the
/// descriptor, as HAProxy sends it); the test serves each one. Five
/// requests, five passed connections.
#[test]
fn sockpair_server_gets_each_connection_over_the_pair() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let (ours, theirs) = UnixStream::pair().unwrap();
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        while let Some(fd) = recv_fd(&ours) {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut s = UnixStream::from(fd);
                let mut r = BufReader::new(s.try_clone().unwrap());
                if read_head(&mut r).is_some() {
                    let body = format!("pair {n}");
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
    let cfg = http_cfg(bind, "", "    server s1 sockpair@3");
    let path = write_cfg(&cfg);
    let mut cmd = fairlead(&path);
    pass_as_fd3(&mut cmd, theirs.as_raw_fd());
    let p = start(cmd, path, || {
        std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(200)).is_ok()
    });
    drop(theirs);
    for i in 0..5 {
        let r = get(bind, "/");
        assert_eq!(r.status, 200, "request {i}: {}", p.stderr());
        assert!(r.body_str().starts_with("pair "), "{}", r.body_str());
    }
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 5);
}

/// HAProxy 2.6, if installed, the reference: the test's HAProxy (no path
/// in `$HAPROXY` or the `PATH`: skipped).
fn haproxy_bin() -> Option<std::path::PathBuf> {
    if let Ok(p) = std::env::var("HAPROXY") {
        return Some(p.into());
    }
    let out = Command::new("sh")
        .args(["-c", "command -v haproxy || ls /usr/sbin/haproxy"])
        .output()
        .ok()?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!p.is_empty()).then(|| p.into())
}

/// A child process killed on drop.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Interop with HAProxy 2.6: HAProxy's `server s1 sockpair@4` passes each
/// connection over a socket pair whose other end is Fairlead's `bind
/// sockpair@3`, under its master (`-W`). Requests through HAProxy are
/// answered by Fairlead, and still are after a Fairlead reload (the master
/// keeps the pair end and hands it to the new worker).
#[test]
fn haproxy_server_sockpair_reaches_fairlead_bind_sockpair() {
    let Some(bin) = haproxy_bin() else {
        eprintln!("haproxy not installed; skipped");
        return;
    };
    let ip = test_ip();
    let front = free_addr(ip);
    let (hap_end, fl_end) = UnixStream::pair().unwrap();
    let times = "    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n";
    let fl_cfg = format!(
        "global\n    nbthread 2\ndefaults\n    mode http\n{times}\
frontend fe\n    bind sockpair@3\n\
    http-request return status 200 content-type text/plain string \"from fairlead\"\n"
    );
    let fl_path = write_cfg(&fl_cfg);
    let mut cmd = fairlead(&fl_path);
    cmd.arg("-W");
    pass_as_fd3(&mut cmd, fl_end.as_raw_fd());
    let p = start(cmd, fl_path, || true);
    let h_cfg = format!(
        "defaults\n    mode http\n{times}frontend fe\n    bind {front}\n    default_backend bk\n\
backend bk\n    server s1 sockpair@4\n"
    );
    let h_path = write_cfg(&h_cfg);
    let mut h = Command::new(bin);
    h.arg("-db").arg("-f").arg(&h_path);
    h.stdout(Stdio::null()).stderr(Stdio::null());
    pass_as(&mut h, hap_end.as_raw_fd(), 4);
    let _hap = Killed(h.spawn().expect("spawn haproxy"));
    drop((hap_end, fl_end));
    let end = Instant::now() + DEADLINE;
    while std::net::TcpStream::connect_timeout(&front, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < end, "haproxy not listening");
        std::thread::sleep(Duration::from_millis(10));
    }
    let check = |when: &str| {
        for i in 0..5 {
            let r = get(front, "/");
            assert_eq!(r.status, 200, "{when} {i}:\n{}", p.stderr());
            assert_eq!(r.body_str(), "from fairlead", "{when} {i}");
        }
    };
    check("before the reload");
    p.signal("USR2");
    let end = Instant::now() + DEADLINE;
    while !p.stderr().contains("reload complete") {
        assert!(Instant::now() < end, "no reload:\n{}", p.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    check("after the reload");
    let _ = std::fs::remove_file(h_path);
}

/// systemd's socket activation under the master (`-W`): the socket passed
/// as descriptor 3 with `LISTEN_FDS=1` and `LISTEN_PID` set to the process
/// serves `bind fd@3`; a reload (SIGUSR2) keeps it (the master's
/// descriptor 3 is the same socket, the new worker serves it) and the
/// workers never see the `LISTEN_*` variables.
#[test]
fn systemd_socket_activation_survives_reloads() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let l = TcpListener::bind(bind).unwrap();
    let cfg = http_cfg(bind, "", &format!("    server s1 {origin}"))
        .replace(&format!("bind {bind}"), "bind fd@3");
    let path = write_cfg(&cfg);
    // `exec` keeps the shell's pid: LISTEN_PID names fairlead itself.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("LISTEN_PID=$$ exec \"$0\" -W -f \"$1\"")
        .arg(env!("CARGO_BIN_EXE_fairlead"))
        .arg(&path)
        .env("LISTEN_FDS", "1");
    pass_as_fd3(&mut cmd, l.as_raw_fd());
    let p = start(cmd, path, || children_ready(bind));
    let master = p.pid();
    wait_until("one worker", || children(master).len() == 1);
    let first = children(master);
    assert_eq!(get(bind, "/?s=5").body.len(), 5, "{}", p.stderr());
    let env = std::fs::read(format!("/proc/{}/environ", first[0])).unwrap();
    let systemd_vars: Vec<&[u8]> = env
        .split(|&b| b == 0)
        .filter(|v| v.starts_with(b"LISTEN_"))
        .collect();
    assert!(systemd_vars.is_empty(), "{systemd_vars:?}");
    // The master hands the socket down as its own descriptor 3.
    assert!(env
        .split(|&b| b == 0)
        .any(|v| v == b"FAIRLEAD_LISTEN_SOCKETS=fd@3=3"));
    let inode = std::fs::read_link(format!("/proc/{master}/fd/3")).unwrap();
    assert!(inode.to_string_lossy().starts_with("socket:["), "{inode:?}");
    // The test's own copy goes: from now on only fairlead holds it.
    drop(l);
    let mut current = first;
    for round in 0..2 {
        p.signal("USR2");
        // The previous worker is stopped once the new one is ready.
        wait_until("the previous worker replaced", || {
            let now = children(master);
            now.len() == 1 && now != current
        });
        current = children(master);
        assert_eq!(
            get(bind, "/?s=7").body.len(),
            7,
            "round {round}: {}",
            p.stderr()
        );
    }
    assert_eq!(
        std::fs::read_link(format!("/proc/{master}/fd/3")).unwrap(),
        inode
    );
}

fn children_ready(bind: SocketAddr) -> bool {
    std::net::TcpStream::connect_timeout(&bind, Duration::from_millis(200)).is_ok_and(|mut s| {
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        exchange(&mut s, "/").status == 200
    })
}

/// `fd@<n>` that systemd did not pass is refused with the descriptors it
/// did pass.
#[test]
fn fd_outside_listen_fds_is_refused() {
    let l = TcpListener::bind((test_ip(), 0)).unwrap();
    let path = write_cfg(
        "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\n\
frontend fe\n    bind fd@5\n",
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("LISTEN_PID=$$ exec \"$0\" -c -f \"$1\"")
        .arg(env!("CARGO_BIN_EXE_fairlead"))
        .arg(&path)
        .env("LISTEN_FDS", "1");
    pass_as_fd3(&mut cmd, l.as_raw_fd());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let name = path.display();
    assert!(
        err.contains(&format!(
            "{name}:7: frontend 'fe': bind fd@5: cannot use file descriptor '5' : Bad file descriptor (os error 9) (systemd passed descriptors 3 to 3)"
        )),
        "{err}"
    );
    let _ = std::fs::remove_file(path);
}

/// `bind unix@<path> mode 600` (HTTP) and `bind <path>` (TCP mode): the
/// files are sockets with the asked mode; HTTP requests and a TCP stream
/// pass through them to a TCP origin; the log says `unix` and the
/// listener id for the client.
#[test]
fn unix_binds_serve_http_and_tcp() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let dir = sock_dir("bind");
    let (h, t) = (dir.join("h.sock"), dir.join("t.sock"));
    let log = std::net::UdpSocket::bind((ip, 0)).unwrap();
    log.set_read_timeout(Some(DEADLINE)).unwrap();
    let log_addr = log.local_addr().unwrap();
    let cfg = format!(
        "defaults\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend web\n    mode http\n    bind unix@{h} mode 600\n    log {log_addr} local0\n\
    log-format \"ci=%ci cp=%cp\"\n    default_backend bk\n\
frontend raw\n    mode tcp\n    bind {t}\n    default_backend bt\n\
backend bk\n    mode http\n    server s1 {origin}\n\
backend bt\n    mode tcp\n    server s1 {origin}\n",
        h = h.display(),
        t = t.display()
    );
    let path = write_cfg(&cfg);
    let (ha, ta) = (
        UnixSocketAddr::from_pathname(&h).unwrap(),
        UnixSocketAddr::from_pathname(&t).unwrap(),
    );
    let p = start(fairlead(&path), path, || unix_ready(&ha) && unix_ready(&ta));
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let meta = std::fs::metadata(&h).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let r = unix_get(&ha, "/?s=11");
    assert_eq!(r.status, 200, "{}", p.stderr());
    assert_eq!(r.body.len(), 11);
    let mut buf = [0u8; 512];
    let n = log.recv(&mut buf).expect("a log line");
    let line = String::from_utf8_lossy(&buf[..n]);
    assert!(
        line.ends_with("ci=unix cp=1\n") || line.ends_with("ci=unix cp=1"),
        "{line}"
    );
    assert_eq!(unix_get(&ta, "/?s=4").body.len(), 4);
    drop(p);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `bind abns@<name>`: reachable under HAProxy's padded abstract name;
/// `src` is empty for its clients.
#[test]
fn abstract_bind_serves_http() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let name = format!("fl-test-{}-abns", std::process::id());
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind abns@{name}\n    default_backend bk\n\
    http-request return status 200 content-type text/plain lf-string \"src=[%[src]]\" if {{ path /src }}\n\
backend bk\n    server s1 {origin}\n"
    );
    let path = write_cfg(&cfg);
    let addr = abns(&name);
    let p = start(fairlead(&path), path, || unix_ready(&addr));
    assert_eq!(unix_get(&addr, "/?s=9").body.len(), 9, "{}", p.stderr());
    // No client address: `src` has no value, as in HAProxy.
    assert_eq!(unix_get(&addr, "/src").body_str(), "src=[]");
}

/// `server unix@<path>`, `server <path>` and `server abns@<name>`, in
/// HTTP and TCP mode, to origins listening on UNIX sockets.
#[test]
fn unix_and_abstract_servers() {
    let ip = test_ip();
    let dir = sock_dir("srv");
    let file = dir.join("o.sock");
    unix_origin(UnixListener::bind(&file).unwrap(), "from-file");
    let name = format!("fl-test-{}-origin", std::process::id());
    unix_origin(UnixListener::bind_addr(&abns(&name)).unwrap(), "from-abns");
    let (a, b, c) = (free_addr(ip), free_addr(ip), free_addr(ip));
    let cfg = format!(
        "defaults\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fa\n    mode http\n    bind {a}\n    default_backend ba\n\
frontend fb\n    mode http\n    bind {b}\n    default_backend bb\n\
frontend fc\n    mode tcp\n    bind {c}\n    default_backend bc\n\
backend ba\n    mode http\n    server s1 unix@{f}\n\
backend bb\n    mode http\n    server s1 abns@{name}\n\
backend bc\n    mode tcp\n    server s1 {f}\n",
        f = file.display()
    );
    let p = Proxy::start(&cfg, &[a, b, c]);
    let r = get(a, "/");
    assert_eq!(
        (r.status, r.body_str()),
        (200, "from-file".into()),
        "{}",
        p.stderr()
    );
    assert_eq!(get(b, "/").body_str(), "from-abns");
    assert_eq!(get(c, "/").body_str(), "from-file");
    drop(p);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A reload under the master keeps a UNIX listener: the same socket (same
/// inode) serves before and after.
#[test]
fn reload_keeps_unix_listener() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let dir = sock_dir("reload");
    let h = dir.join("h.sock");
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {h}\n    default_backend bk\n\
backend bk\n    server s1 {origin}\n",
        h = h.display()
    );
    let path = write_cfg(&cfg);
    let addr = UnixSocketAddr::from_pathname(&h).unwrap();
    let mut cmd = fairlead(&path);
    cmd.arg("-W");
    let p = start(cmd, path, || unix_ready(&addr));
    let master = p.pid();
    wait_until("one worker", || children(master).len() == 1);
    let first = children(master);
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(&h).unwrap().ino();
    assert_eq!(unix_get(&addr, "/?s=2").body.len(), 2);
    p.signal("USR2");
    wait_until("the previous worker replaced", || {
        let now = children(master);
        now.len() == 1 && now != first
    });
    assert_eq!(unix_get(&addr, "/?s=6").body.len(), 6, "{}", p.stderr());
    assert_eq!(std::fs::metadata(&h).unwrap().ino(), ino);
    drop(p);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `fairlead -c` accepts the address forms and rejects bad ones with
/// `file:line`.
#[test]
fn check_mode_address_forms() {
    let check = |cfg: &str| {
        let path = write_cfg(cfg);
        let out = Command::new(env!("CARGO_BIN_EXE_fairlead"))
            .arg("-c")
            .arg("-f")
            .arg(&path)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "F"),
        )
    };
    let head = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\n";
    let (code, err) = check(&format!(
        "{head}frontend fe\n    bind unix@/run/fl/a.sock mode 660 uid 0 gid 0\n    bind /run/fl/b.sock\n\
    bind abns@fl\n    default_backend bk\nbackend bk\n    server s1 unix@/run/app.sock\n\
    server s2 /run/app.sock\n    server s3 abns@app\n"
    ));
    assert_eq!(code, Some(0), "{err}");
    let long = "a".repeat(93);
    let (code, err) = check(&format!(
        "{head}frontend fe\n    bind fd@abc\n    bind unix@/tmp/{long}\n    bind sockpair@x\n\
    default_backend bk\nbackend bk\n    server s1 fd@3\n    server s2 unix@/x check\n"
    ));
    assert_eq!(code, Some(1), "{err}");
    for want in [
        "F:7: 'bind fd@abc': file descriptor 'abc' is not a valid integer in 'fd@abc'",
        "(max 97)",
        "F:9: 'bind sockpair@x': file descriptor 'x' is not a valid integer in 'sockpair@x'",
        "F:12: 'server s1': a file descriptor is not acceptable here in 'fd@3'",
        "F:13: 'server s2': 'check' on a UNIX socket server ('unix@/x') is not implemented yet",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(err.contains(&format!("F:8: 'bind unix@/tmp/{long}': socket path")));
}
