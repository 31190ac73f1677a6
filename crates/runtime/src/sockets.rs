//! Listening sockets that are not IP addresses: UNIX sockets (`unix@`,
//! `/path`, `abns@`) and descriptors inherited from the parent process
//! (`fd@<n>`, systemd's socket activation; `sockpair@<n>`, see
//! [`crate::sockpair`]).
//!
//! A UNIX socket file is created as HAProxy does: bound under a temporary
//! name (`<path>.<pid>.tmp`), given its `mode` and owner, then renamed
//! over `<path>`. A stale file from a previous run never blocks a start,
//! and a process started with `-sf` takes the path over while the old one
//! finishes its connections. Files are left in place at exit, as HAProxy
//! leaves them.
//!
//! Each listening socket of this kind is one kernel socket; every worker
//! thread accepts from its own duplicate of it. Under a master
//! ([`crate::master`]) the master owns it for its whole life and passes it
//! to each worker generation, so reloads never close it; an `fd@` socket
//! is never closed by a reload even when the new configuration no longer
//! names it, since it could not be opened again.

use crate::os;
use fairlead_config::{ListenSocket, UnixAddr, UnixPerms};
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::OnceLock;

/// A listening socket of either family, or the socket pair end of a
/// `sockpair@` listener.
#[derive(Debug)]
pub enum Lsock {
    Tcp(std::net::TcpListener),
    Unix(UnixListener),
    Pair(UnixStream),
}

impl Lsock {
    /// Another descriptor for the same socket (one per worker thread).
    pub fn try_clone(&self) -> Result<Lsock> {
        Ok(match self {
            Lsock::Tcp(l) => Lsock::Tcp(l.try_clone()?),
            Lsock::Unix(l) => Lsock::Unix(l.try_clone()?),
            Lsock::Pair(s) => Lsock::Pair(s.try_clone()?),
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        match self {
            Lsock::Tcp(l) => l.as_raw_fd(),
            Lsock::Unix(l) => l.as_raw_fd(),
            Lsock::Pair(s) => s.as_raw_fd(),
        }
    }

    /// Makes the socket non-blocking.
    pub fn set_nonblocking(&self) -> Result<()> {
        match self {
            Lsock::Tcp(l) => l.set_nonblocking(true),
            Lsock::Unix(l) => l.set_nonblocking(true),
            Lsock::Pair(s) => s.set_nonblocking(true),
        }
    }
}

/// The descriptors systemd passed (`LISTEN_FDS`), as a range, when
/// `LISTEN_PID` named this process.
static SYSTEMD_FDS: OnceLock<Option<std::ops::Range<RawFd>>> = OnceLock::new();

/// systemd's socket activation protocol (`sd_listen_fds(3)`): when
/// `LISTEN_PID` is this process, descriptors 3 to 3 + `LISTEN_FDS` - 1 are
/// its listening sockets. They are marked close-on-exec (only those the
/// configuration names with `fd@` reach a worker) and the variables are
/// removed, so no child takes them for its own. Call it first thing in
/// `main`, while the process has one thread. Returns the range.
pub fn take_systemd_fds() -> Option<std::ops::Range<RawFd>> {
    SYSTEMD_FDS
        .get_or_init(|| {
            let pid: u32 = std::env::var("LISTEN_PID").ok()?.parse().ok()?;
            let n: RawFd = std::env::var("LISTEN_FDS").ok()?.parse().ok()?;
            for v in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
                std::env::remove_var(v);
            }
            if pid != std::process::id() || n <= 0 {
                return None;
            }
            let range = 3..3_i32.saturating_add(n);
            for fd in range.clone() {
                let _ = os::set_cloexec(fd, true);
            }
            Some(range)
        })
        .clone()
}

/// Why `fd@<n>` cannot be used, in HAProxy's words plus a hint.
fn fd_error(fd: RawFd, e: &Error) -> Error {
    let hint = match SYSTEMD_FDS.get().cloned().flatten() {
        Some(r) if !r.contains(&fd) => format!(
            " (systemd passed descriptors {} to {})",
            r.start,
            r.end.saturating_sub(1)
        ),
        Some(_) => String::new(),
        None if e.raw_os_error() == Some(libc::EBADF) => {
            " (no socket was passed as this descriptor)".to_string()
        }
        None => String::new(),
    };
    Error::new(
        e.kind(),
        format!("cannot use file descriptor '{fd}' : {e}{hint}"),
    )
}

/// Checks an `fd@<n>` without taking it (`-c`).
pub fn check_fd(fd: RawFd) -> Result<()> {
    os::inspect_socket(fd)
        .map(|_| ())
        .map_err(|e| fd_error(fd, &e))
}

/// What a `sockpair@<n>` descriptor must be: a connected UNIX stream
/// socket (one end of a socket pair), not a listening one.
fn pair_kind(fd: RawFd, kind: os::SocketKind) -> Result<()> {
    if !kind.unix || kind.listening {
        return Err(fd_error(
            fd,
            &Error::other("not a connected UNIX stream socket (one end of a socket pair)"),
        ));
    }
    Ok(())
}

/// Checks a `sockpair@<n>` without taking it (`-c`).
pub fn check_pair(fd: RawFd) -> Result<()> {
    let kind = os::inspect_socket(fd).map_err(|e| fd_error(fd, &e))?;
    pair_kind(fd, kind)
}

/// Takes the inherited socket pair end of `sockpair@<n>`.
pub fn adopt_pair(fd: RawFd) -> Result<Lsock> {
    check_pair(fd)?;
    let (owned, _) = os::adopt_socket(fd).map_err(|e| fd_error(fd, &e))?;
    Ok(Lsock::Pair(UnixStream::from(owned)))
}

/// Takes an inherited descriptor, calling `listen()` on it if its owner
/// did not (HAProxy accepts both).
pub fn adopt(fd: RawFd, backlog: i32) -> Result<Lsock> {
    let (owned, kind) = os::adopt_socket(fd).map_err(|e| fd_error(fd, &e))?;
    if !kind.listening {
        socket2::SockRef::from(&owned).listen(backlog)?;
    }
    Ok(if kind.unix {
        Lsock::Unix(UnixListener::from(owned))
    } else {
        Lsock::Tcp(std::net::TcpListener::from(owned))
    })
}

/// Numeric owner and group of a `bind` line's socket files, the names
/// resolved.
fn owner(perms: &UnixPerms) -> Result<(Option<u32>, Option<u32>)> {
    let uid = match &perms.user {
        Some(u) => Some(
            os::lookup_user(u)
                .map(|(uid, _)| uid)
                .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("unknown user '{u}'")))?,
        ),
        None => perms.uid,
    };
    let gid = match &perms.group {
        Some(g) => Some(
            os::lookup_group(g)
                .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("unknown group '{g}'")))?,
        ),
        None => perms.gid,
    };
    Ok((uid, gid))
}

/// Checks what a start would resolve for `perms` (`-c`).
pub fn check_perms(perms: &UnixPerms) -> Result<()> {
    owner(perms).map(|_| ())
}

/// Binds a UNIX socket (see the module docs for socket files).
pub fn bind_unix(addr: &UnixAddr, perms: &UnixPerms) -> Result<UnixListener> {
    let UnixAddr::Path(path) = addr else {
        return UnixListener::bind_addr(&addr.socket_addr()?);
    };
    let (uid, gid) = owner(perms)?;
    let tmp = format!("{path}.{}.tmp", std::process::id());
    let _ = std::fs::remove_file(&tmp);
    let l = UnixListener::bind(&tmp)?;
    let setup = || -> Result<()> {
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(&tmp, uid, gid)?;
        }
        if let Some(m) = perms.mode {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(m))?;
        }
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = setup() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(l)
}

/// Opens the socket of `sock`: binds a UNIX socket, or takes an `fd@`.
pub fn open(sock: &ListenSocket, perms: &UnixPerms) -> Result<Lsock> {
    match sock {
        ListenSocket::Unix(u) => bind_unix(u, perms)
            .map(Lsock::Unix)
            .map_err(|e| Error::new(e.kind(), format!("cannot bind {u}: {e}"))),
        ListenSocket::Fd(fd) => adopt(*fd, fairlead_net::DEFAULT_BACKLOG),
        ListenSocket::SockPair(fd) => adopt_pair(*fd),
    }
}

/// Takes a socket a master passed for `sock` (a socket pair end is the
/// one UNIX socket that is not listening).
pub fn from_master(fd: RawFd) -> Result<Lsock> {
    let (owned, kind): (OwnedFd, _) = os::adopt_socket(fd)?;
    Ok(if kind.unix && !kind.listening {
        Lsock::Pair(UnixStream::from(owned))
    } else if kind.unix {
        Lsock::Unix(UnixListener::from(owned))
    } else {
        Lsock::Tcp(std::net::TcpListener::from(owned))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_socket_files_with_mode_over_stale_ones() {
        let dir = std::env::temp_dir().join(format!("fl-sock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.sock").to_string_lossy().into_owned();
        std::fs::write(&path, b"stale").unwrap();
        let perms = UnixPerms {
            mode: Some(0o600),
            ..Default::default()
        };
        let l = bind_unix(&UnixAddr::Path(path.clone()), &perms).unwrap();
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let meta = std::fs::metadata(&path).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        let c = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let (s, _) = l.accept().unwrap();
        assert!(c.peer_addr().is_ok() && s.local_addr().is_ok());
        assert!(bind_unix(
            &UnixAddr::Path(path),
            &UnixPerms {
                user: Some("no-such-user-here".into()),
                ..Default::default()
            }
        )
        .unwrap_err()
        .to_string()
        .contains("unknown user"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn abstract_names_are_padded_like_haproxy() {
        let name = format!("fl-test-{}", std::process::id());
        let l = bind_unix(&UnixAddr::Abstract(name.clone()), &UnixPerms::default()).unwrap();
        use std::os::linux::net::SocketAddrExt;
        let got = l.local_addr().unwrap();
        let got = got.as_abstract_name().unwrap();
        assert_eq!(got.len(), 107);
        assert_eq!(&got[..name.len()], name.as_bytes());
        assert!(got[name.len()..].iter().all(|&b| b == 0));
        // The short name alone is another address.
        let short = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        assert!(std::os::unix::net::UnixStream::connect_addr(&short).is_err());
    }

    #[test]
    fn adopts_fds_and_reports_bad_ones() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = l.as_raw_fd();
        check_fd(fd).unwrap();
        let e = check_fd(987_654).unwrap_err().to_string();
        assert!(
            e.starts_with("cannot use file descriptor '987654' : "),
            "{e}"
        );
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let e = check_fd(f.as_raw_fd()).unwrap_err().to_string();
        assert!(
            e.contains("not a socket") || e.contains("non-socket"),
            "{e}"
        );
        // An unlistened bound socket gets listen().
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        let raw = std::os::fd::IntoRawFd::into_raw_fd(s);
        let Lsock::Tcp(t) = adopt(raw, 16).unwrap() else {
            panic!("a TCP socket")
        };
        let a = t.local_addr().unwrap();
        std::net::TcpStream::connect(a).unwrap();
        assert!(t.accept().is_ok());
    }
}
