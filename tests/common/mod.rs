//! Shared helpers for the integration tests: start the real `fairlead`
//! binary with a configuration, real origins on loopback, and raw HTTP
//! clients. Every test gets its own loopback address; nothing sleeps to
//! synchronise: readiness is polled with a deadline.
#![allow(dead_code)]

pub mod tls;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any test step may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(15);

static NEXT_IP: AtomicU32 = AtomicU32::new(1);

/// A loopback IP of its own for one test: 127.<a>.<b>.<c> derived from the
/// test binary's pid and a counter, so parallel tests and binaries do not
/// collide.
pub fn test_ip() -> IpAddr {
    let n = NEXT_IP.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    IpAddr::V4(Ipv4Addr::new(
        127,
        (10 + (pid % 200)) as u8,
        (n / 250) as u8,
        (n % 250 + 1) as u8,
    ))
}

/// A free port on `ip`, below the kernel's ephemeral range (32768 and up
/// by default), so that no `bind(port 0)` of an origin or listener in the
/// same test can be handed the port before Fairlead binds it. Ports come
/// from a counter, so one test binary never returns the same address
/// twice, and each is checked free by binding it once.
pub fn free_addr(ip: IpAddr) -> SocketAddr {
    const FIRST: u32 = 20000;
    const SPAN: u32 = 12000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % SPAN;
        let addr = SocketAddr::new(ip, (FIRST + n) as u16);
        if TcpListener::bind(addr).is_ok() {
            return addr;
        }
    }
    panic!("no free port on {ip} between {FIRST} and {}", FIRST + SPAN);
}

/// Polls `f` until it returns true or the deadline passes.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for: {what}");
}

/// A running `fairlead` process; killed on drop.
pub struct Proxy {
    pub child: Child,
    pub cfg_path: std::path::PathBuf,
    pub stderr: Arc<Mutex<String>>,
    /// Set once the stderr reader met the end of the pipe.
    stderr_eof: Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// Writes `cfg` to a temporary file, starts `fairlead -f` on it and
    /// waits until every address in `wait_for` accepts connections.
    pub fn start(cfg: &str, wait_for: &[SocketAddr]) -> Proxy {
        Self::start_with(cfg, wait_for, |c| c)
    }

    /// Like [`Proxy::start`] with a hook to adjust the command.
    pub fn start_with(
        cfg: &str,
        wait_for: &[SocketAddr],
        adjust: impl FnOnce(&mut Command) -> &mut Command,
    ) -> Proxy {
        let cfg_path = write_cfg(cfg);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fairlead"));
        cmd.arg("-f")
            .arg(&cfg_path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        adjust(&mut cmd);
        let mut p = Proxy::from_child(cmd.spawn().expect("spawn fairlead"), cfg_path);
        for &a in wait_for {
            let end = Instant::now() + DEADLINE;
            loop {
                if TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok() {
                    break;
                }
                if let Ok(Some(st)) = p.child.try_wait() {
                    p.settle_stderr();
                    panic!("fairlead exited ({st}) before listening:\n{}", p.stderr());
                }
                assert!(
                    Instant::now() < end,
                    "fairlead not listening on {a}:\n{}",
                    p.stderr()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        p
    }

    /// A started `fairlead` (its stderr piped) as a [`Proxy`]: a thread
    /// collects what it writes to stderr.
    pub fn from_child(mut child: Child, cfg_path: std::path::PathBuf) -> Proxy {
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let stderr_eof = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let eof = stderr_eof.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
            eof.store(true, std::sync::atomic::Ordering::Release);
        });
        Proxy {
            child,
            cfg_path,
            stderr,
            stderr_eof,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends a signal with the `kill` command.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(st.success());
    }

    /// Waits for the process to exit and returns its status; what it
    /// wrote to stderr is then all in [`Proxy::stderr`] (the reader met the
    /// end of the pipe, unless a process it started still holds it).
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                self.settle_stderr();
                return st;
            }
            assert!(
                Instant::now() < end,
                "fairlead did not exit:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Once the process exited: waits (2 s at most) until the stderr
    /// reader met the end of the pipe, so that [`Proxy::stderr`] has all
    /// of it (a process it started may still hold the pipe).
    pub fn settle_stderr(&self) {
        let drained = Instant::now() + Duration::from_secs(2);
        while !self.stderr_eof.load(std::sync::atomic::Ordering::Acquire)
            && Instant::now() < drained
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Peak resident memory (VmHWM) in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.cfg_path);
    }
}

/// Writes a configuration to a unique temporary file.
pub fn write_cfg(cfg: &str) -> std::path::PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let p = std::env::temp_dir().join(format!(
        "fairlead-test-{}-{}.cfg",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&p, cfg).unwrap();
    p
}

/// Starts a fairlead-term origin on `ip` (port chosen by the kernel).
pub fn term(ip: IpAddr, name: &str) -> (fairlead_term::TermHandle, SocketAddr) {
    let h = fairlead_term::start(
        &[SocketAddr::new(ip, 0)],
        fairlead_term::TermOptions {
            threads: 1,
            name: name.to_string(),
        },
    )
    .expect("start origin");
    let a = h.local_addrs()[0];
    (h, a)
}

/// Connects with a read timeout.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, DEADLINE).expect("connect to proxy");
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// One parsed HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_str(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response from `r` (Content-Length, chunked, or until EOF),
/// `head_request` telling whether it answers a HEAD. Returns `None` on a
/// clean EOF before any byte.
pub fn read_response(r: &mut impl BufRead, head_request: bool) -> Option<Response> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.splitn(3, ' ');
    let _version = parts.next()?;
    let status: u16 = parts.next()?.trim().parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':')?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let no_body = head_request || status == 204 || status == 304 || (100..200).contains(&status);
    if no_body {
        return Some(resp);
    }
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if n == 0 {
                // Trailers until the empty line.
                loop {
                    let mut t = String::new();
                    r.read_line(&mut t).ok()?;
                    if t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = resp.body.len();
            resp.body.resize(start + n, 0);
            r.read_exact(&mut resp.body[start..]).ok()?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).ok()?;
        }
    } else if let Some(len) = resp.header("content-length") {
        let n: usize = len.parse().ok()?;
        resp.body.resize(n, 0);
        r.read_exact(&mut resp.body).ok()?;
    } else {
        r.read_to_end(&mut resp.body).ok()?;
    }
    Some(resp)
}

/// Sends `req` on a new connection and reads one response.
pub fn request(addr: SocketAddr, req: &str) -> Response {
    let mut s = connect(addr);
    s.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    read_response(&mut r, req.starts_with("HEAD ")).expect("a response")
}

/// A GET with Host and `Connection: close`.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"),
    )
}

/// Reads everything until EOF (or the deadline) and returns it as text.
pub fn read_all(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A runtime API socket path in a directory of its own:
/// `<tmp>/fairlead-<prefix>-<pid>-<tag>/admin.sock`.
pub fn admin_sock(prefix: &str, tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fairlead-{prefix}-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("admin.sock")
}

/// `show stat`'s column `col` for `be/sv`; panics with the whole answer
/// when the column or the line is missing.
pub fn stat_of(sock: &std::path::Path, be: &str, sv: &str, col: &str) -> String {
    let csv = ask(sock, "show stat");
    tls::stat_field(&csv, be, sv, col).unwrap_or_else(|| panic!("{be}/{sv} {col} in {csv}"))
}

/// One runtime API command on a unix socket; returns the whole answer.
/// The socket may not exist yet right after a start (HAProxy can listen on
/// its TCP binds first): connecting is retried until the deadline.
pub fn ask(sock: &std::path::Path, cmd: &str) -> String {
    let end = Instant::now() + DEADLINE;
    let mut s = loop {
        match std::os::unix::net::UnixStream::connect(sock) {
            Ok(s) => break s,
            Err(e) if Instant::now() >= end => panic!("connect {}: {e}", sock.display()),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(format!("{cmd}\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The child processes of `pid` (a master's workers).
pub fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Standard HTTP frontend+backend configuration around `servers` lines.
pub fn http_cfg(bind: SocketAddr, extra_defaults: &str, servers: &str) -> String {
    format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n{extra_defaults}\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n{servers}\n"
    )
}

/// A hand-written origin for behaviours fairlead-term does not have: each
/// accepted connection runs `handler` in its own thread. Returns the
/// address and a counter of accepted connections.
pub fn raw_origin(
    ip: IpAddr,
    handler: impl Fn(TcpStream) + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU32>) {
    let l = TcpListener::bind((ip, 0)).expect("bind origin");
    let addr = l.local_addr().unwrap();
    let count = Arc::new(AtomicU32::new(0));
    let c = count.clone();
    let handler = Arc::new(handler);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            c.fetch_add(1, Ordering::SeqCst);
            let h = handler.clone();
            std::thread::spawn(move || h(s));
        }
    });
    (addr, count)
}

/// Reads a request head (up to the empty line) from a raw origin socket.
pub fn read_head(r: &mut impl BufRead) -> Option<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            return Some(head);
        }
    }
}

/// A fairlead-term origin on a fresh loopback address and a proxy in front
/// of it: `http_cfg(bind, extra_defaults, "server <server> <origin>")`.
pub fn one_origin(
    extra_defaults: &str,
    server: &str,
) -> (fairlead_term::TermHandle, SocketAddr, Proxy) {
    let ip = test_ip();
    let (t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let p = Proxy::start(
        &http_cfg(bind, extra_defaults, &format!("    server {server} {a}")),
        &[bind],
    );
    (t, bind, p)
}

/// A Python peer (a real protocol implementation from Debian's packages,
/// run by `/usr/bin/python3`, which has them; a pyenv `python3` on the
/// PATH may not) serving on `ip`: it prints its port on its first line and
/// stops when its stdin closes (on drop).
pub struct PythonPeer {
    child: Child,
    pub addr: SocketAddr,
}

impl PythonPeer {
    /// Starts `script` with `args` then the IP; `what` names it in errors.
    pub fn start(script: &str, args: &[&str], ip: IpAddr, what: &str) -> PythonPeer {
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .args(args)
            .arg(ip.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{what} did not start: {line:?}"));
        PythonPeer {
            child,
            addr: SocketAddr::new(ip, port),
        }
    }
}

impl Drop for PythonPeer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The HAProxy binary used as the oracle and as a peer: `$HAPROXY`, else
/// `haproxy` on the PATH or in /usr/sbin. `None` when it is not installed
/// (the tests that need it then say so and skip).
pub fn haproxy_bin() -> Option<std::path::PathBuf> {
    if let Ok(p) = std::env::var("HAPROXY") {
        return Some(p.into());
    }
    let out = Command::new("sh")
        .args(["-c", "command -v haproxy || ls /usr/sbin/haproxy"])
        .output()
        .ok()?;
    let p = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()?
        .trim()
        .to_string();
    (!p.is_empty()).then(|| p.into())
}

/// A running HAProxy, killed on drop.
pub struct Haproxy(pub Child, pub std::path::PathBuf);

impl Haproxy {
    /// Starts `bin -f <cfg> -db <args>` and waits until `bind` accepts
    /// connections; panics with HAProxy's stderr if it exits first.
    pub fn start(bin: &std::path::Path, cfg: &str, args: &[&str], bind: SocketAddr) -> Haproxy {
        let path = write_cfg(cfg);
        let child = Command::new(bin)
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start haproxy");
        let mut h = Haproxy(child, path);
        let end = Instant::now() + DEADLINE;
        while TcpStream::connect_timeout(&bind, Duration::from_millis(200)).is_err() {
            if let Ok(Some(st)) = h.0.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = h.0.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("haproxy exited ({st}):\n{err}\n{cfg}");
            }
            assert!(Instant::now() < end, "haproxy not listening");
            std::thread::sleep(Duration::from_millis(10));
        }
        h
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_file(&self.1);
    }
}
