//! Process-level operating-system calls: CPU pinning, file-descriptor
//! limits, daemonizing, dropping privileges, pid files, descriptors
//! received over a socket pair. The only module of
//! the runtime with `unsafe` code: each call is a plain libc call with its
//! arguments checked here.
#![allow(unsafe_code)]

use std::io::{Error, Result};

/// Pins the calling thread to `cpus`.
pub fn pin_thread(cpus: &[usize]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, CPU_SET
    // is bounds-checked by the filter below, and the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// Current (soft, hard) RLIMIT_NOFILE.
pub fn nofile_limit() -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
    }
    (rl.rlim_cur, rl.rlim_max)
}

/// Raises the soft RLIMIT_NOFILE to `want` (the hard limit too when
/// allowed). Returns the limit in force afterwards.
pub fn raise_nofile(want: u64) -> u64 {
    let (cur, max) = nofile_limit();
    if want <= cur {
        return cur;
    }
    for target in [(want, want.max(max)), (want.min(max), max)] {
        let rl = libc::rlimit {
            rlim_cur: target.0,
            rlim_max: target.1,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } == 0 {
            return target.0;
        }
    }
    cur
}

/// Grows the kernel's descriptor table of this process so that it holds
/// descriptors `0..n` (rounded up to a power of two by the kernel), by
/// duplicating a descriptor to number `n - 1` and closing it again.
///
/// The table never shrinks. Growing it later, once worker threads exist,
/// makes the kernel wait for an RCU grace period (`expand_files` calls
/// `synchronize_rcu` when the table is shared by several threads): the
/// thread whose `socket()` or `accept()` crossed a power of two stops for
/// 10 to 40 ms, and with it every connection it serves. `n` must not be
/// above the soft `RLIMIT_NOFILE`.
pub fn reserve_fd_table(n: u64) -> Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let Some(top) = n.checked_sub(1).and_then(|t| libc::c_int::try_from(t).ok()) else {
        return Ok(());
    };
    let probe = std::os::unix::net::UnixDatagram::unbound()?;
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own into the
    // lowest free number >= top; it only reads its arguments.
    let fd = unsafe { libc::fcntl(probe.as_raw_fd(), libc::F_DUPFD_CLOEXEC, top) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: fcntl returned a new descriptor that nothing else owns; the
    // OwnedFd closes it when dropped.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
    Ok(())
}

/// Forks into the background (`-D` / `daemon`): the parent exits, the child
/// starts a new session and points stdin/stdout/stderr at /dev/null. Must be
/// called before any thread is started.
pub fn daemonize() -> Result<()> {
    // SAFETY: called while the process is single-threaded; the parent only
    // calls _exit after fork.
    unsafe {
        match libc::fork() {
            -1 => return Err(Error::last_os_error()),
            0 => {}
            _ => libc::_exit(0),
        }
        if libc::setsid() < 0 {
            return Err(Error::last_os_error());
        }
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if fd >= 0 {
            libc::dup2(fd, 0);
            libc::dup2(fd, 1);
            libc::dup2(fd, 2);
            if fd > 2 {
                libc::close(fd);
            }
        }
    }
    Ok(())
}

/// Resolves a user name to its uid and primary gid.
pub fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// Resolves a group name to its gid.
pub fn lookup_group(name: &str) -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[0] == name).then(|| f[2].parse().ok())?
    })
}

/// Drops privileges to `gid` then `uid` (either may be absent).
pub fn drop_privileges(uid: Option<u32>, gid: Option<u32>) -> Result<()> {
    // SAFETY: plain syscalls on integers.
    unsafe {
        if let Some(g) = gid {
            if libc::setgroups(0, std::ptr::null()) != 0 && libc::getuid() == 0 {
                return Err(Error::last_os_error());
            }
            if libc::setgid(g) != 0 {
                return Err(Error::last_os_error());
            }
        }
        if let Some(u) = uid {
            if libc::setuid(u) != 0 {
                return Err(Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Sends `sig` to each pid (`-sf` / `-st`). Errors are reported, not fatal.
pub fn signal_pids(pids: &[i32], sig: i32) {
    for &p in pids {
        // SAFETY: kill() with a pid and signal number has no memory effects.
        if unsafe { libc::kill(p, sig) } != 0 {
            eprintln!(
                "[WARNING]  cannot signal old process {p}: {}",
                Error::last_os_error()
            );
        }
    }
}

/// Sets or clears FD_CLOEXEC on `fd` (inherited across exec when cleared).
pub fn set_cloexec(fd: std::os::fd::RawFd, cloexec: bool) -> Result<()> {
    // SAFETY: fcntl on an fd we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags < 0 {
            return Err(Error::last_os_error());
        }
        let new = if cloexec {
            flags | libc::FD_CLOEXEC
        } else {
            flags & !libc::FD_CLOEXEC
        };
        if libc::fcntl(fd, libc::F_SETFD, new) < 0 {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// Takes ownership of an inherited listening socket, after checking that
/// `fd` really is a listening TCP socket bound to `expect`.
pub fn listener_from_fd(
    fd: std::os::fd::RawFd,
    expect: std::net::SocketAddr,
) -> Result<std::net::TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl(F_GETFD) only checks that the descriptor is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the descriptor is open and was handed to this process by its
    // master for this purpose; nothing else in the process owns it. It is
    // checked below and closed on mismatch.
    let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    let got = l.local_addr()?;
    let is_listener = socket2::SockRef::from(&l).is_listener().unwrap_or(false);
    if got != expect || !is_listener {
        return Err(Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("inherited fd {fd} is {got}, expected a listener on {expect}"),
        ));
    }
    Ok(l)
}

/// What [`inspect_socket`] found behind a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketKind {
    /// `AF_UNIX` (else IPv4 or IPv6).
    pub unix: bool,
    /// `listen()` was called on it.
    pub listening: bool,
}

/// Checks, without taking ownership, that `fd` is an open stream socket
/// of the UNIX, IPv4 or IPv6 family (`fd@<n>`). The error says what it is
/// instead, in the words of `strerror`, as HAProxy reports it.
pub fn inspect_socket(fd: std::os::fd::RawFd) -> Result<SocketKind> {
    // SAFETY: F_GETFD only checks that the descriptor is open.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: the descriptor is open (checked above) and only borrowed for
    // the getsockopt calls below, within this function.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let sock = socket2::SockRef::from(&borrowed);
    let domain = sock.domain()?;
    if sock.r#type()? != socket2::Type::STREAM {
        return Err(Error::other("not a stream socket"));
    }
    let unix = domain == socket2::Domain::UNIX;
    if !unix && domain != socket2::Domain::IPV4 && domain != socket2::Domain::IPV6 {
        return Err(Error::other("not a UNIX, IPv4 or IPv6 socket"));
    }
    Ok(SocketKind {
        unix,
        listening: sock.is_listener()?,
    })
}

/// Takes ownership of an inherited socket after [`inspect_socket`]
/// accepted it. The caller must make sure that nothing else in the process
/// owns `fd` (each inherited descriptor is adopted once).
pub fn adopt_socket(fd: std::os::fd::RawFd) -> Result<(std::os::fd::OwnedFd, SocketKind)> {
    use std::os::fd::FromRawFd;
    let kind = inspect_socket(fd)?;
    // SAFETY: the descriptor is an open socket (checked above), handed to
    // this process by its parent for this purpose, and adopted once.
    Ok((unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, kind))
}

/// Takes ownership of an inherited stream socket (the readiness channel to
/// the master).
pub fn unix_stream_from_fd(fd: std::os::fd::RawFd) -> Result<std::os::unix::net::UnixStream> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only checks that the descriptor is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the master passed this descriptor for this single use.
    Ok(unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) })
}

/// Asks the kernel to send SIGTERM to this process when its parent (the
/// master) dies, so that no worker outlives a killed master. Returns false
/// when the parent is no longer `master` (it died before the request was
/// made, so the signal will never come): the worker must stop.
pub fn die_with_parent(master: Option<i32>) -> bool {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    }
    // SAFETY: getppid has no arguments and cannot fail.
    let parent = unsafe { libc::getppid() };
    master.is_none_or(|m| m == parent)
}

/// Parses a `/proc/net/tcp{,6}` local address (`0100007F:1F90`).
fn proc_net_addr(s: &str) -> Option<std::net::SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip: std::net::IpAddr = match ip.len() {
        8 => {
            let v = u32::from_str_radix(ip, 16).ok()?;
            std::net::Ipv4Addr::from(v.swap_bytes()).into()
        }
        32 => {
            let mut b = [0u8; 16];
            for w in 0..4 {
                let word = u32::from_str_radix(&ip[w * 8..w * 8 + 8], 16).ok()?;
                b[w * 4..w * 4 + 4].copy_from_slice(&word.to_le_bytes());
            }
            std::net::Ipv6Addr::from(b).into()
        }
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

/// Duplicates into this process the listening sockets that process `pid`
/// has on `addrs` (`-sf`/`-st`), using pidfd_getfd(2): the same kernel
/// sockets keep accepting, so a reload refuses and resets nothing.
/// Needs the right to ptrace `pid` (same user, or CAP_SYS_PTRACE).
pub fn take_listeners(
    pid: i32,
    addrs: &[std::net::SocketAddr],
) -> Result<std::collections::HashMap<std::net::SocketAddr, Vec<std::os::fd::RawFd>>> {
    use std::collections::HashMap;
    // Listening sockets of the process's network namespace, by inode.
    let mut by_inode: HashMap<u64, std::net::SocketAddr> = HashMap::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" {
                if let (Some(a), Ok(inode)) = (proc_net_addr(f[1]), f[9].parse()) {
                    if addrs.contains(&a) {
                        by_inode.insert(inode, a);
                    }
                }
            }
        }
    }
    let mut found: Vec<(std::net::SocketAddr, i32)> = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))?.flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        let t = target.to_string_lossy();
        let Some(inode) = t
            .strip_prefix("socket:[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        if let (Some(a), Ok(fd)) = (
            by_inode.get(&inode),
            e.file_name().to_string_lossy().parse(),
        ) {
            found.push((*a, fd));
        }
    }
    let mut out: HashMap<std::net::SocketAddr, Vec<std::os::fd::RawFd>> = HashMap::new();
    if found.is_empty() {
        return Ok(out);
    }
    // SAFETY: raw syscalls with integer arguments; the returned descriptors
    // are new and owned by this process.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if pidfd < 0 {
            return Err(Error::last_os_error());
        }
        for (addr, fd) in found {
            let ours = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as i32;
            if ours < 0 {
                let e = Error::last_os_error();
                libc::close(pidfd);
                return Err(e);
            }
            out.entry(addr).or_default().push(ours);
        }
        libc::close(pidfd);
    }
    for fds in out.values_mut() {
        fds.sort_unstable();
    }
    Ok(out)
}

/// Most descriptors taken from one `SCM_RIGHTS` message by [`recv_fds`];
/// the kernel closes any beyond (HAProxy sends one per message).
const MAX_FDS_PER_MSG: usize = 16;

/// Receives from a connected UNIX stream socket (`sockpair@`) the
/// descriptors passed with `SCM_RIGHTS`, without blocking. The data bytes
/// that carry them are discarded (HAProxy sends two with each). `Ok(None)`:
/// the peer closed the socket and sent nothing more. `Ok(Some(v))` with an
/// empty `v`: data came without descriptors. The descriptors are
/// close-on-exec.
pub fn recv_fds(sock: std::os::fd::BorrowedFd<'_>) -> Result<Option<Vec<std::os::fd::OwnedFd>>> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut data = [0u8; 64];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // u64 words: the control buffer must be aligned for `cmsghdr`.
    let mut control = [0u64; 16];
    let fd_bytes = (MAX_FDS_PER_MSG * std::mem::size_of::<libc::c_int>()) as u32;
    // SAFETY: CMSG_SPACE is arithmetic on its argument.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    debug_assert!(space <= std::mem::size_of_val(&control));
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space.min(std::mem::size_of_val(&control));
    // SAFETY: `msg` points to `iov`, `data` and `control`, which outlive
    // the call, with their true lengths.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled,
    // bounded by `msg.msg_controllen`; each SCM_RIGHTS payload holds
    // descriptors now owned by this process, each taken exactly once.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_RIGHTS {
                let len = (h.cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                let p = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for i in 0..len / std::mem::size_of::<libc::c_int>() {
                    let fd = std::ptr::read_unaligned(p.add(i));
                    fds.push(std::os::fd::OwnedFd::from_raw_fd(fd));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some(fds))
}

/// Passes `passed` over the UNIX stream socket `sock` (`server ...
/// sockpair@<n>`) as HAProxy does: one message of two zero bytes carrying
/// the descriptor (`SCM_RIGHTS`). Never blocks (a full socket is an
/// error) and never raises SIGPIPE. `passed` is closed here once sent:
/// the receiver has its own copy.
pub fn send_fd(sock: std::os::fd::RawFd, passed: std::os::fd::OwnedFd) -> Result<()> {
    use std::os::fd::AsRawFd;
    let mut data = [0u8; 2];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: CMSG_SPACE/CMSG_LEN are arithmetic; the message points to
    // `iov`, `data` and `control` (32 bytes, aligned, room for one header
    // and one descriptor), which outlive the call; CMSG_FIRSTHDR is not
    // null since `msg_controllen` covers one header. `sock` is a number:
    // sendmsg on a descriptor that is not a socket only fails.
    let n = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), passed.as_raw_fd());
        libc::sendmsg(sock, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
    };
    match n {
        2 => Ok(()),
        n if n < 0 => Err(Error::last_os_error()),
        n => Err(Error::other(format!("sendmsg sent {n} of 2 bytes"))),
    }
}

/// `TCP_DEFER_ACCEPT` on a listening socket: `secs` seconds (0: off).
pub fn set_defer_accept(l: &std::net::TcpListener, secs: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let v = libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with a valid descriptor and a c_int option value.
    let r = unsafe {
        libc::setsockopt(
            l.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_net_addresses() {
        assert_eq!(
            proc_net_addr("0100007F:1F90"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            proc_net_addr("00000000:0050"),
            Some("0.0.0.0:80".parse().unwrap())
        );
        assert_eq!(
            proc_net_addr("00000000000000000000000001000000:01BB"),
            Some("[::1]:443".parse().unwrap())
        );
        assert_eq!(proc_net_addr("zz:1"), None);
    }

    #[test]
    fn takes_own_listeners() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let got = take_listeners(std::process::id() as i32, &[a]).unwrap();
        let fds = &got[&a];
        assert_eq!(fds.len(), 1);
        let dup = listener_from_fd(fds[0], a).unwrap();
        assert_eq!(dup.local_addr().unwrap(), a);
    }

    /// A descriptor sent with SCM_RIGHTS as HAProxy sends it (two data
    /// bytes, one control message) arrives owned and usable; end of stream
    /// is `None`; nothing to read is WouldBlock.
    #[test]
    fn receives_passed_descriptors() {
        use std::io::{Read, Write};
        use std::os::fd::AsFd;
        use std::os::unix::net::UnixStream;
        let (a, b) = UnixStream::pair().unwrap();
        let e = recv_fds(b.as_fd()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        let (mut x, y) = UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd;
        send_fd(a.as_raw_fd(), std::os::fd::OwnedFd::from(y)).unwrap();
        let fds = recv_fds(b.as_fd()).unwrap().unwrap();
        assert_eq!(fds.len(), 1);
        let mut got = UnixStream::from(fds.into_iter().next().unwrap());
        x.write_all(b"hi").unwrap();
        let mut buf = [0u8; 2];
        got.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hi");
        drop(a);
        assert!(recv_fds(b.as_fd()).unwrap().is_none());
        // Sending to a closed peer is an error, not a signal.
        let (c, d) = UnixStream::pair().unwrap();
        drop(d);
        let (e, _f) = UnixStream::pair().unwrap();
        let err = send_fd(c.as_raw_fd(), std::os::fd::OwnedFd::from(e)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPIPE));
    }
}
