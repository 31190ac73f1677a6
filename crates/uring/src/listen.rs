//! [`UringListener`]: a listening socket served by a multishot accept.

use crate::driver::Op;
use crate::{set_waker, Ring, UringSock};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::Mutex;
use std::task::{Context, Poll};

/// Every listener on a ring in this process, for [`release_listeners`].
static OPEN: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Stops every listener on a ring at once (`shutdown`), so that their
/// ports are free when the process exits: a ring is torn down by the
/// kernel after the process is gone, and until then its pending accepts
/// (and fixed file table) keep the listening sockets open. Called before a
/// hard stop's exit.
pub fn release_listeners() {
    if let Ok(open) = OPEN.lock() {
        for &fd in open.iter() {
            // SAFETY: plain system call; the descriptor is open (it leaves
            // the list before its owner closes it).
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
    }
}

/// A listener on the worker's ring. One multishot accept, on the
/// listener's fixed file, serves every connection; accepted descriptors
/// wait in a short queue until [`UringListener::accept`] takes them (past
/// 128 waiting, the accept is cancelled until the next call).
pub struct UringListener {
    ring: Rc<Ring>,
    idx: u32,
    /// Owns the listening descriptor; the ring's fixed file table holds a
    /// second reference until the drop below empties its entry.
    _sock: OwnedFd,
    /// [`UringListener::stop_accepting`] was called: the accept is never
    /// armed again.
    stopped: std::cell::Cell<bool>,
}

impl UringListener {
    /// Takes `l` (a listening socket) onto this thread's ring.
    pub fn new(l: std::net::TcpListener) -> io::Result<UringListener> {
        let ring = crate::current().ok_or_else(|| io::Error::other("no io_uring ring"))?;
        let fd = OwnedFd::from(l);
        let mut st = ring.st.borrow_mut();
        let idx = st.alloc(fd.as_raw_fd());
        st.fix(idx);
        drop(st);
        if let Ok(mut open) = OPEN.lock() {
            open.push(fd.as_raw_fd());
        }
        Ok(UringListener {
            ring,
            idx,
            _sock: fd,
            stopped: std::cell::Cell::new(false),
        })
    }

    /// The next accepted connection and its peer's address.
    pub fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(UringSock, std::net::SocketAddr)>> {
        self.poll_accept_fd(cx)
            .map_ok(|(fd, peer)| (UringSock::adopt(&self.ring, fd, true), peer))
    }

    /// Waits for the next connection and returns it as a plain socket, not
    /// yet on the ring: the caller may hand it to another thread, or take
    /// it onto this one with [`UringSock::from_std`].
    pub async fn accept_std(&self) -> io::Result<(std::net::TcpStream, std::net::SocketAddr)> {
        std::future::poll_fn(|cx| self.poll_accept_fd(cx))
            .await
            .map(|(fd, peer)| (std::net::TcpStream::from(fd), peer))
    }

    /// The listening socket's local address.
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        socket2::SockRef::from(&self._sock)
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an inet socket"))
    }

    fn poll_accept_fd(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(OwnedFd, std::net::SocketAddr)>> {
        if let Some(r) = self.try_accept_fd() {
            return Poll::Ready(r);
        }
        if self.stopped.get() {
            // Nothing more comes: the caller's soft stop drains with
            // `try_accept`.
            return Poll::Pending;
        }
        let mut st = self.ring.st.borrow_mut();
        if !st.slot(self.idx).acc_armed {
            st.arm_accept(self.idx);
            drop(st);
            self.ring.kick();
            st = self.ring.st.borrow_mut();
        }
        set_waker(&mut st.slot(self.idx).rwaker, cx);
        Poll::Pending
    }

    /// Waits for the next connection.
    pub async fn accept(&self) -> io::Result<(UringSock, std::net::SocketAddr)> {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Stops accepting (a soft stop): cancels the multishot accept and
    /// waits for its last completion, so that nothing is accepted after
    /// this returns. The kernel takes connections off the listening
    /// socket's queue as they come, before the accept loop asks for them:
    /// those already taken wait in this listener's queue, and the caller
    /// must serve them ([`UringListener::try_accept`]). Left in the
    /// socket's own queue, as on the epoll path, they would have gone to
    /// the next worker sharing the socket; dropped, they would be lost.
    pub async fn stop_accepting(&self) {
        self.stopped.set(true);
        let armed = {
            let mut st = self.ring.st.borrow_mut();
            let armed = st.slot(self.idx).acc_armed;
            if armed {
                st.cancel(self.idx, Op::Accept);
            }
            armed
        };
        if armed {
            self.ring.kick();
        }
        std::future::poll_fn(|cx| {
            let mut st = self.ring.st.borrow_mut();
            let s = st.slot(self.idx);
            if !s.acc_armed {
                return Poll::Ready(());
            }
            set_waker(&mut s.rwaker, cx);
            Poll::Pending
        })
        .await
    }

    /// A connection already accepted and waiting in this listener's queue
    /// (or the accept's error), without waiting; `None` when there is
    /// neither.
    pub fn try_accept(&self) -> Option<io::Result<(UringSock, std::net::SocketAddr)>> {
        self.try_accept_fd()
            .map(|r| r.map(|(fd, peer)| (UringSock::adopt(&self.ring, fd, true), peer)))
    }

    /// [`UringListener::try_accept`] before the socket goes on the ring.
    fn try_accept_fd(&self) -> Option<io::Result<(OwnedFd, std::net::SocketAddr)>> {
        let mut st = self.ring.st.borrow_mut();
        let s = st.slot(self.idx);
        if let Some(fd) = s.acc.pop_front() {
            drop(st);
            let peer = socket2::SockRef::from(&fd).peer_addr().and_then(|a| {
                a.as_socket()
                    .ok_or_else(|| io::Error::other("not an inet socket"))
            });
            // The client may already be gone (ENOTCONN): the caller goes on.
            return Some(peer.map(|peer| (fd, peer)));
        }
        s.acc_err
            .take()
            .map(|e| Err(io::Error::from_raw_os_error(-e)))
    }
}

impl Drop for UringListener {
    fn drop(&mut self) {
        if let Ok(mut open) = OPEN.lock() {
            let fd = self._sock.as_raw_fd();
            open.retain(|&f| f != fd);
        }
        let Ok(mut st) = self.ring.st.try_borrow_mut() else {
            return;
        };
        let idx = self.idx;
        let s = st.slot(idx);
        s.owned = false;
        s.rwaker = None;
        s.acc.clear();
        if s.acc_armed {
            st.cancel(idx, Op::Accept);
        }
        // Empties the fixed file entry; the descriptor itself is closed by
        // `_sock` (the ring's close of the raw number is skipped).
        st.forget_fd(idx);
        st.maybe_free(idx);
        drop(st);
        self.ring.kick();
    }
}
