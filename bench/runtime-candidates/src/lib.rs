//! Shared helpers for the event-loop candidates.
//!
//! Every candidate is a single-threaded TCP forwarder:
//! accept a client on a SO_REUSEPORT listener, connect to one fixed backend,
//! copy bytes both ways through buffers taken from a per-thread pool, and
//! propagate EOF as a half-close (shutdown(SHUT_WR)) on the other side.

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{FromRawFd, RawFd};

/// Size of one copy buffer (same as HAProxy's default tune.bufsize).
pub const BUF_SIZE: usize = 16 * 1024;

/// Command line: `<listen addr> <backend addr>`, both IPv4 `ip:port`.
pub struct Args {
    pub listen: SocketAddrV4,
    pub backend: SocketAddrV4,
}

pub fn args() -> Args {
    let v: Vec<String> = std::env::args().collect();
    if v.len() != 3 {
        eprintln!("usage: {} <listen ip:port> <backend ip:port>", v[0]);
        std::process::exit(2);
    }
    let p = |s: &str| -> SocketAddrV4 {
        match s.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) => a,
            _ => {
                eprintln!("bad IPv4 address: {s}");
                std::process::exit(2)
            }
        }
    };
    Args { listen: p(&v[1]), backend: p(&v[2]) }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub fn sockaddr_in(a: &SocketAddrV4) -> libc::sockaddr_in {
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = a.port().to_be();
    sa.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
    sa
}

fn set_int_opt(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    cvt(unsafe { libc::setsockopt(fd, level, opt, &v as *const _ as *const libc::c_void, len) })?;
    Ok(())
}

pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
}

/// A listening socket with SO_REUSEADDR + SO_REUSEPORT (one per worker in the
/// real design). `nonblocking` selects O_NONBLOCK (epoll/tokio) or blocking
/// (io_uring, where the ring does the waiting).
pub fn reuseport_listener(addr: &SocketAddrV4, nonblocking: bool) -> io::Result<std::net::TcpListener> {
    let mut ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    if nonblocking {
        ty |= libc::SOCK_NONBLOCK;
    }
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, ty, 0) })?;
    let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    set_int_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    set_int_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    let sa = sockaddr_in(addr);
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    cvt(unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len) })?;
    cvt(unsafe { libc::listen(fd, 4096) })?;
    Ok(l)
}

/// Per-thread pool of fixed-size copy buffers. Not `Sync`: each worker owns one.
#[derive(Default)]
pub struct BufPool {
    free: Vec<Box<[u8]>>,
}

impl BufPool {
    pub fn get(&mut self) -> Box<[u8]> {
        self.free.pop().unwrap_or_else(|| vec![0u8; BUF_SIZE].into_boxed_slice())
    }
    pub fn put(&mut self, b: Box<[u8]>) {
        // Keep a bounded number of idle buffers (64 MiB worth).
        if self.free.len() < 4096 {
            self.free.push(b);
        }
    }
}

/// Minimal slab: stable indices, O(1) insert/remove, no extra dependency.
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slab<T> {
    pub fn insert(&mut self, v: T) -> usize {
        if let Some(i) = self.free.pop() {
            self.items[i] = Some(v);
            i
        } else {
            self.items.push(Some(v));
            self.items.len() - 1
        }
    }
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.items.get_mut(i).and_then(|x| x.as_mut())
    }
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.items.get_mut(i)?.take();
        if v.is_some() {
            self.free.push(i);
        }
        v
    }
}
