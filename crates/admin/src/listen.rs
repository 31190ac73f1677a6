//! The stats socket: `stats socket` / `stats timeout` parsing, the listener
//! (a UNIX socket with the requested mode and owner, or TCP) and the
//! per-connection loop. Blocking std threads: one accepting, one per
//! connection (at most `maxconn`); the CLI is never on the hot path.

use crate::api::AdminApi;
use crate::session::Session;
use crate::Level;
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest command line accepted (HAProxy's default `tune.bufsize`).
const MAX_LINE: usize = 16384;
/// HAProxy's default `stats maxconn`.
const DEFAULT_MAXCONN: u32 = 10;
/// HAProxy's default `stats timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest UNIX socket path (`sun_path` less its NUL).
const MAX_UNIX_PATH: usize = 107;

/// Where the CLI listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliAddr {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

/// One `stats socket` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliListen {
    pub addr: CliAddr,
    /// `level`; HAProxy's default is `operator`.
    pub level: Level,
    /// `mode` (octal in the configuration), UNIX sockets only.
    pub mode: Option<u32>,
    /// `uid` or `user`, UNIX sockets only.
    pub uid: Option<u32>,
    /// `gid` or `group`, UNIX sockets only.
    pub gid: Option<u32>,
    /// `expose-fd listeners` was given (accepted; no file descriptors are
    /// passed: Fairlead hands listeners over with `SO_REUSEPORT`).
    pub expose_fd_listeners: bool,
    /// Connections served at once (`maxconn`, default 10); more wait in
    /// the backlog.
    pub maxconn: u32,
    /// Idle timeout of a connection (`stats timeout`, default 10 s).
    pub timeout: Duration,
}

impl CliListen {
    /// Defaults as HAProxy: level operator, 10 connections, 10 s timeout.
    pub fn new(addr: CliAddr) -> CliListen {
        CliListen {
            addr,
            level: Level::Operator,
            mode: None,
            uid: None,
            gid: None,
            expose_fd_listeners: false,
            maxconn: DEFAULT_MAXCONN,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Looks a name up in an `/etc/passwd`-style file: the third field.
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    let text = fs::read_to_string(file).ok()?;
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == name).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

/// Parses a `stats socket` address: a path (`/run/x.sock`,
/// `unix@path`) or `[ipv4@|ipv6@|tcp@|tcp4@|tcp6@]<addr>:<port>`, where
/// the address may be empty or `*` (any IPv4 address).
pub fn parse_cli_addr(text: &str) -> Result<CliAddr, String> {
    if let Some(p) = text.strip_prefix("unix@") {
        return if p.is_empty() {
            Err("missing UNIX socket path".into())
        } else {
            Ok(CliAddr::Unix(p.into()))
        };
    }
    if text.starts_with('/') {
        return Ok(CliAddr::Unix(text.into()));
    }
    for p in [
        "abns@",
        "abnsz@",
        "fd@",
        "sockpair@",
        "udp@",
        "udp4@",
        "udp6@",
        "quic4@",
        "quic6@",
        "uxst@",
        "uxdg@",
    ] {
        if text.starts_with(p) {
            return Err(format!(
                "address family '{}' is not supported for the stats socket",
                &p[..p.len() - 1]
            ));
        }
    }
    let (v6, rest) = if let Some(r) = text
        .strip_prefix("ipv6@")
        .or_else(|| text.strip_prefix("tcp6@"))
    {
        (Some(true), r)
    } else if let Some(r) = text
        .strip_prefix("ipv4@")
        .or_else(|| text.strip_prefix("tcp4@"))
    {
        (Some(false), r)
    } else {
        (None, text.strip_prefix("tcp@").unwrap_or(text))
    };
    let Some((host, port)) = rest.rsplit_once(':') else {
        return Err(format!("missing port in address '{text}'"));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid port '{port}' in address '{text}'"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = match host {
        "" | "*" if v6 == Some(true) => "::".parse().expect("valid"),
        "" | "*" => "0.0.0.0".parse().expect("valid"),
        h => match h.parse::<std::net::IpAddr>() {
            Ok(ip) => ip,
            Err(_) => (h, port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.find(|a| v6.is_none_or(|v6| a.is_ipv6() == v6)))
                .map(|a| a.ip())
                .ok_or_else(|| format!("invalid address '{h}' in '{text}'"))?,
        },
    };
    if v6.is_some_and(|v6| ip.is_ipv6() != v6) {
        return Err(format!("address '{host}' does not match its family prefix"));
    }
    Ok(CliAddr::Tcp(SocketAddr::new(ip, port)))
}

/// Parses a `stats socket` line, with or without its two keywords:
/// `[stats socket] <path|addr:port> [level user|operator|admin] [mode <octal>]
/// [uid <n>] [gid <n>] [user <name>] [group <name>] [expose-fd listeners]
/// [maxconn <n>]` (`name`, `id`, `process` and `thread` are accepted and
/// ignored).
pub fn parse_stats_socket(words: &[String]) -> Result<CliListen, String> {
    let words = match words {
        [a, b, rest @ ..] if a == "stats" && b == "socket" => rest,
        _ => words,
    };
    let Some((addr, mut rest)) = words.split_first() else {
        return Err("'stats socket' expects a path or an address:port".into());
    };
    let mut cfg = CliListen::new(parse_cli_addr(addr)?);
    while let Some((kw, tail)) = rest.split_first() {
        let kw = kw.as_str();
        let Some((val, tail)) = tail.split_first() else {
            return Err(format!("'{kw}' expects an argument"));
        };
        let val = val.as_str();
        match kw {
            "level" => {
                cfg.level = Level::parse(val).ok_or_else(|| {
                    format!("'level' only supports 'user', 'operator', and 'admin' (got '{val}')")
                })?
            }
            "mode" => {
                cfg.mode = Some(u32::from_str_radix(val, 8).map_err(|_| {
                    format!("'mode' expects an octal permission mask (got '{val}')")
                })?)
            }
            "uid" | "gid" => {
                let n: u32 = val
                    .parse()
                    .map_err(|_| format!("'{kw}' expects a numeric id (got '{val}')"))?;
                if kw == "uid" {
                    cfg.uid = Some(n);
                } else {
                    cfg.gid = Some(n);
                }
            }
            "user" => {
                cfg.uid = Some(
                    lookup_id("/etc/passwd", val).ok_or_else(|| format!("unknown user '{val}'"))?,
                )
            }
            "group" => {
                cfg.gid = Some(
                    lookup_id("/etc/group", val).ok_or_else(|| format!("unknown group '{val}'"))?,
                )
            }
            "expose-fd" => {
                if val != "listeners" {
                    return Err(format!(
                        "'expose-fd' only supports 'listeners' (got '{val}')"
                    ));
                }
                cfg.expose_fd_listeners = true;
            }
            "maxconn" => {
                cfg.maxconn =
                    val.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("'maxconn' expects a positive integer (got '{val}')")
                    })?
            }
            "name" | "id" | "process" | "thread" => {}
            _ => return Err(format!("'{kw}' is not supported on 'stats socket' lines")),
        }
        rest = tail;
    }
    Ok(cfg)
}

/// Parses a `stats timeout` value: a number of milliseconds, or with a
/// unit among `us`, `ms`, `s`, `m`, `h`, `d`.
pub fn parse_stats_timeout(text: &str) -> Result<Duration, String> {
    let n = text.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = text.split_at(n);
    let v: u64 = num
        .parse()
        .map_err(|_| format!("'stats timeout' expects a time (got '{text}')"))?;
    let d = match unit {
        "us" => Duration::from_micros(v),
        "" | "ms" => Duration::from_millis(v),
        "s" => Duration::from_secs(v),
        "m" => Duration::from_secs(v.saturating_mul(60)),
        "h" => Duration::from_secs(v.saturating_mul(3600)),
        "d" => Duration::from_secs(v.saturating_mul(86400)),
        _ => {
            return Err(format!(
                "'stats timeout': unknown unit '{unit}' in '{text}'"
            ))
        }
    };
    if d.is_zero() {
        return Err("'stats timeout' must be positive".into());
    }
    Ok(d)
}

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.shutdown(how),
            Conn::Tcp(s) => s.shutdown(how),
        }
    }

    fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        match self {
            Conn::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Conn::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Listener {
    fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Unix(l) => l.accept().map(|(s, _)| Conn::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Conn::Tcp(s)),
        }
    }

    fn sock(&self) -> socket2::SockRef<'_> {
        match self {
            Listener::Unix(l) => socket2::SockRef::from(l),
            Listener::Tcp(l) => socket2::SockRef::from(l),
        }
    }
}

struct Shared {
    stop: AtomicBool,
    /// Open connections, to shut them down on stop.
    conns: Mutex<HashMap<u64, Conn>>,
    active: Mutex<u32>,
    freed: Condvar,
    next_id: AtomicU64,
}

/// A running CLI listener. Dropping it stops it.
pub struct CliHandle {
    addr: CliAddr,
    shared: Arc<Shared>,
    listener: Option<Arc<Listener>>,
    thread: Option<JoinHandle<()>>,
    /// Inode of the socket file we created, to remove only our own.
    inode: Option<u64>,
}

impl CliHandle {
    /// The bound address (a TCP port 0 resolved to the real one).
    pub fn local_addr(&self) -> &CliAddr {
        &self.addr
    }

    /// Stops accepting, closes open CLI connections and removes the socket
    /// file (when it is still ours).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes a blocked accept() on Linux; connecting covers the rest.
        let _ = listener.sock().shutdown(Shutdown::Both);
        match &self.addr {
            CliAddr::Unix(p) => drop(UnixStream::connect(p)),
            CliAddr::Tcp(a) => {
                let _ = TcpStream::connect_timeout(a, Duration::from_millis(200));
            }
        }
        self.shared.freed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for c in self.shared.conns.lock().expect("conns").values() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let (CliAddr::Unix(p), Some(ino)) = (&self.addr, self.inode) {
            if fs::symlink_metadata(p).is_ok_and(|m| m.ino() == ino) {
                let _ = fs::remove_file(p);
            }
        }
    }
}

impl Drop for CliHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn set_owner_mode(path: &Path, cfg: &CliListen) -> io::Result<()> {
    if cfg.uid.is_some() || cfg.gid.is_some() {
        std::os::unix::fs::chown(path, cfg.uid, cfg.gid)?;
    }
    if let Some(mode) = cfg.mode {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Binds the UNIX socket: refuses when a live process answers on the path,
/// replaces a stale socket file, and applies mode and owner before the
/// socket appears under its name (bound under a temporary name, then
/// renamed over the final one).
fn bind_unix(path: &Path, cfg: &CliListen) -> io::Result<UnixListener> {
    let ctx = |e: io::Error, what: &str| {
        io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
    };
    if let Ok(meta) = fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: exists and is not a socket", path.display()),
            ));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "{}: another process is listening on this socket",
                    path.display()
                ),
            ));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    if tmp.as_os_str().len() > MAX_UNIX_PATH {
        // No room for a temporary name: replace in place.
        let _ = fs::remove_file(path);
        let l = UnixListener::bind(path).map_err(|e| ctx(e, "bind"))?;
        set_owner_mode(path, cfg).map_err(|e| ctx(e, "permissions"))?;
        return Ok(l);
    }
    let _ = fs::remove_file(&tmp);
    let l = UnixListener::bind(&tmp).map_err(|e| ctx(e, "bind"))?;
    let done = set_owner_mode(&tmp, cfg)
        .map_err(|e| ctx(e, "permissions"))
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| ctx(e, "rename")));
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(l)
}

/// Starts the CLI on `cfg.addr`, served by its own threads.
pub fn start_cli(cfg: CliListen, backend: Arc<dyn AdminApi>) -> io::Result<CliHandle> {
    let (listener, addr, inode) = match &cfg.addr {
        CliAddr::Unix(p) => {
            let l = bind_unix(p, &cfg)?;
            let ino = fs::symlink_metadata(p)?.ino();
            (Listener::Unix(l), cfg.addr.clone(), Some(ino))
        }
        CliAddr::Tcp(a) => {
            let l = TcpListener::bind(a)?;
            let bound = l.local_addr()?;
            (Listener::Tcp(l), CliAddr::Tcp(bound), None)
        }
    };
    let listener = Arc::new(listener);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        conns: Mutex::new(HashMap::new()),
        active: Mutex::new(0),
        freed: Condvar::new(),
        next_id: AtomicU64::new(0),
    });
    let thread = {
        let (listener, shared) = (listener.clone(), shared.clone());
        std::thread::Builder::new()
            .name("fairlead-cli".into())
            .spawn(move || accept_loop(&listener, &shared, &cfg, &backend))?
    };
    Ok(CliHandle {
        addr,
        shared,
        listener: Some(listener),
        thread: Some(thread),
        inode,
    })
}

fn accept_loop(
    listener: &Listener,
    shared: &Arc<Shared>,
    cfg: &CliListen,
    api: &Arc<dyn AdminApi>,
) {
    loop {
        {
            let mut active = shared.active.lock().expect("active");
            while *active >= cfg.maxconn && !shared.stop.load(Ordering::SeqCst) {
                active = shared
                    .freed
                    .wait_timeout(active, Duration::from_millis(200))
                    .expect("active")
                    .0;
            }
        }
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(_) if shared.stop.load(Ordering::SeqCst) => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // Out of descriptors or similar: back off.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(c) = conn.try_clone() {
            shared.conns.lock().expect("conns").insert(id, c);
        }
        *shared.active.lock().expect("active") += 1;
        let (shared2, api, level, timeout) = (shared.clone(), api.clone(), cfg.level, cfg.timeout);
        let spawned = std::thread::Builder::new()
            .name("fairlead-cli-conn".into())
            .spawn(move || {
                serve(conn, api, level, timeout);
                shared2.conns.lock().expect("conns").remove(&id);
                *shared2.active.lock().expect("active") -= 1;
                shared2.freed.notify_all();
            });
        if spawned.is_err() {
            shared.conns.lock().expect("conns").remove(&id);
            *shared.active.lock().expect("active") -= 1;
        }
    }
}

/// Serves one connection: lines in, replies out, until `quit`, the end of
/// a non-interactive line, end of input or the idle timeout.
fn serve(mut conn: Conn, api: Arc<dyn AdminApi>, level: Level, timeout: Duration) {
    if conn.set_timeouts(timeout).is_err() {
        return;
    }
    let mut session = Session::new(api, level);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut eof = false;
    loop {
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let reply = session.handle_line(&String::from_utf8_lossy(&line[..pos]));
            if conn.write_all(reply.output.as_bytes()).is_err() {
                return;
            }
            if reply.close {
                return finish(conn);
            }
        }
        if buf.len() > MAX_LINE {
            let _ = conn.write_all(b"Command line too long.\n\n");
            return finish(conn);
        }
        if eof {
            if !buf.is_empty() {
                let reply = session.handle_line(&String::from_utf8_lossy(&buf));
                let _ = conn.write_all(reply.output.as_bytes());
            }
            return finish(conn);
        }
        match conn.read(&mut chunk) {
            Ok(0) => eof = true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Closes after the reply: shuts the write side, then drains what the
/// client still sends for a moment, so that unread input does not turn
/// the close into a reset that could discard the reply.
fn finish(mut conn: Conn) {
    let _ = conn.shutdown(Shutdown::Write);
    let _ = conn.set_timeouts(Duration::from_millis(200));
    let mut sink = [0u8; 4096];
    let mut drained = 0usize;
    while drained < 1 << 20 {
        match conn.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn stats_socket_lines() {
        let c = parse_stats_socket(&w(
            "stats socket /run/f.sock mode 600 level admin uid 0 gid 0 expose-fd listeners",
        ))
        .unwrap();
        assert_eq!(c.addr, CliAddr::Unix("/run/f.sock".into()));
        assert_eq!(
            (c.mode, c.level, c.uid, c.gid),
            (Some(0o600), Level::Admin, Some(0), Some(0))
        );
        assert!(c.expose_fd_listeners);
        let c = parse_stats_socket(&w("ipv4@127.0.0.1:9999 level user")).unwrap();
        assert_eq!(c.addr, CliAddr::Tcp("127.0.0.1:9999".parse().unwrap()));
        assert_eq!(c.level, Level::User);
        let c = parse_stats_socket(&w("unix@/tmp/x.sock")).unwrap();
        assert_eq!(
            (c.addr, c.level),
            (CliAddr::Unix("/tmp/x.sock".into()), Level::Operator)
        );
        let c = parse_stats_socket(&w("ipv6@::1:9999 user root group root")).unwrap();
        assert_eq!(c.addr, CliAddr::Tcp("[::1]:9999".parse().unwrap()));
        assert_eq!((c.uid, c.gid), (Some(0), Some(0)));
        assert_eq!(
            parse_stats_socket(&w("*:9999")).unwrap().addr,
            CliAddr::Tcp("0.0.0.0:9999".parse().unwrap())
        );
        assert!(parse_stats_socket(&w("/x level root"))
            .unwrap_err()
            .contains("'level' only supports"));
        assert!(parse_stats_socket(&w("/x mode 9")).is_err());
        assert!(parse_stats_socket(&w("/x mode")).is_err());
        assert!(parse_stats_socket(&w("/x expose-fd all")).is_err());
        assert!(parse_stats_socket(&w("/x bogus 1")).is_err());
        assert!(parse_stats_socket(&w("abns@foo")).is_err());
        assert!(parse_stats_socket(&w("127.0.0.1")).is_err());
        assert!(parse_stats_socket(&w("stats socket")).is_err());
    }

    #[test]
    fn stats_timeouts() {
        assert_eq!(parse_stats_timeout("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_stats_timeout("1500"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_stats_timeout("10s"), Ok(Duration::from_secs(10)));
        assert!(parse_stats_timeout("0").is_err());
        assert!(parse_stats_timeout("5x").is_err());
        assert!(parse_stats_timeout("").is_err());
    }
}
