//! Addresses of UNIX sockets and inherited descriptors (`unix@`, `abns@`,
//! `fd@`, `sockpair@`), and the file options of the `bind` lines that create them.

/// A UNIX stream socket address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UnixAddr {
    /// `unix@<path>` or `<path>` starting with `/`: a socket file.
    Path(String),
    /// `abns@<name>`: Linux's abstract namespace. As HAProxy does, the
    /// name is padded with NUL bytes to the whole `sun_path` (107 bytes),
    /// so both reach each other by the same name.
    Abstract(String),
}

impl UnixAddr {
    /// The socket address to bind or connect to (no I/O). An abstract name
    /// is padded with NULs to 107 bytes, as HAProxy does.
    pub fn socket_addr(&self) -> std::io::Result<std::os::unix::net::SocketAddr> {
        match self {
            UnixAddr::Path(p) => std::os::unix::net::SocketAddr::from_pathname(p),
            UnixAddr::Abstract(n) => {
                use std::os::linux::net::SocketAddrExt;
                let mut name = n.as_bytes().to_vec();
                name.resize(crate::bind::MAX_ABNS_NAME.max(name.len()), 0);
                std::os::unix::net::SocketAddr::from_abstract_name(name)
            }
        }
    }
}

impl std::fmt::Display for UnixAddr {
    /// HAProxy's spelling: `unix@/path` or `abns@name`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnixAddr::Path(p) => write!(f, "unix@{p}"),
            UnixAddr::Abstract(n) => write!(f, "abns@{n}"),
        }
    }
}

/// A listening socket that is not an IP address and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListenSocket {
    /// A UNIX socket this process binds.
    Unix(UnixAddr),
    /// `fd@<n>`: a socket inherited from the parent process (systemd
    /// socket activation, a supervisor), TCP or UNIX.
    Fd(i32),
    /// `sockpair@<n>`: an inherited connected UNIX stream socket (one end
    /// of a socket pair) over which the parent passes each client
    /// connection as a descriptor (`SCM_RIGHTS`), as HAProxy's
    /// `sockpair@` listeners receive them.
    SockPair(i32),
}

impl std::fmt::Display for ListenSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenSocket::Unix(u) => u.fmt(f),
            ListenSocket::Fd(n) => write!(f, "fd@{n}"),
            ListenSocket::SockPair(n) => write!(f, "sockpair@{n}"),
        }
    }
}

/// Owner and mode of the UNIX socket files of a `bind` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnixPerms {
    /// `mode`, octal. Default is none: what the umask leaves.
    pub mode: Option<u32>,
    /// `uid`, or `user` resolved at start-up. Default is none.
    pub uid: Option<u32>,
    /// `user`: a user name, resolved at start-up. Default is none.
    pub user: Option<String>,
    /// `gid`. Default is none.
    pub gid: Option<u32>,
    /// `group`: a group name, resolved at start-up. Default is none.
    pub group: Option<String>,
}
