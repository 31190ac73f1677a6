//! [`UringSock`]: a TCP connection served by the worker's ring, with the
//! readiness-style calls of a non-blocking socket.

use crate::driver::{Op, Shut};
use crate::{set_waker, Ring};
use std::io::{self, Error, ErrorKind};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll};

/// A connection on the worker's ring. Dropping it closes the connection
/// once its queued bytes have left (at once after [`UringSock::abort`]).
pub struct UringSock {
    ring: Rc<Ring>,
    idx: u32,
    /// The descriptor, for socket options and addresses; closed by the
    /// ring after the handle is gone.
    fd: RawFd,
}

fn os_err(neg: i32) -> Error {
    Error::from_raw_os_error(-neg)
}

impl UringSock {
    /// Takes `fd` (a connected stream socket) onto `ring`; its receive is
    /// armed with the next submission when `recv` is set.
    pub(crate) fn adopt(ring: &Rc<Ring>, fd: OwnedFd, recv: bool) -> UringSock {
        let fd = fd.into_raw_fd();
        let mut st = ring.st.borrow_mut();
        let idx = st.alloc(fd);
        if recv {
            st.arm_read(idx);
        }
        drop(st);
        if recv {
            ring.kick();
        }
        UringSock {
            ring: ring.clone(),
            idx,
            fd,
        }
    }

    /// Takes an accepted or connected socket onto this thread's ring.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<UringSock> {
        let ring = crate::current().ok_or_else(no_ring)?;
        Ok(UringSock::adopt(&ring, OwnedFd::from(stream), true))
    }

    /// Connects `socket` (a new stream socket, options already set) to
    /// `addr` through this thread's ring.
    pub async fn connect(
        socket: socket2::Socket,
        addr: std::net::SocketAddr,
    ) -> io::Result<UringSock> {
        let ring = crate::current().ok_or_else(no_ring)?;
        let sock = UringSock::adopt(&ring, OwnedFd::from(socket), false);
        ring.st.borrow_mut().connect(sock.idx, addr.into());
        ring.kick();
        std::future::poll_fn(|cx| {
            let mut st = ring.st.borrow_mut();
            let s = st.slot(sock.idx);
            match s.connected.take() {
                Some(r) if r < 0 => Poll::Ready(Err(os_err(r))),
                Some(_) => Poll::Ready(Ok(())),
                None => {
                    set_waker(&mut s.wwaker, cx);
                    Poll::Pending
                }
            }
        })
        .await?;
        ring.st.borrow_mut().arm_read(sock.idx);
        ring.kick();
        Ok(sock)
    }

    /// Ready when [`UringSock::try_read`] has bytes, the end of the
    /// stream or an error to return.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.ring.st.borrow_mut();
        let s = st.slot(self.idx);
        if !s.rx.is_empty() || s.rx_end.is_some() || s.pollin {
            return Poll::Ready(Ok(()));
        }
        set_waker(&mut s.rwaker, cx);
        if !s.recv_armed && !s.poll_armed {
            st.arm_read(self.idx);
            drop(st);
            self.ring.kick();
        }
        Poll::Pending
    }

    /// Waits until [`UringSock::try_read`] may make progress.
    pub async fn readable(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_read_ready(cx)).await
    }

    /// Copies received bytes into `buf`: `Ok(0)` at the end of the
    /// stream, `WouldBlock` when nothing has arrived.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.copy_out(buf, true)
    }

    /// Whether the peer's end of stream has arrived (its FIN), whatever
    /// received bytes still wait before it: no more bytes can come.
    pub fn eof_received(&self) -> bool {
        self.ring.st.borrow_mut().slot(self.idx).rx_end == Some(0)
    }

    /// Whether every received byte was read and the end of stream is next
    /// ([`UringSock::try_read`] would return 0).
    pub fn at_eof(&self) -> bool {
        let mut st = self.ring.st.borrow_mut();
        let s = st.slot(self.idx);
        s.rx.is_empty() && s.rx_end == Some(0)
    }

    /// [`UringSock::try_read`] without consuming.
    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.copy_out(buf, false)
    }

    fn copy_out(&self, buf: &mut [u8], consume: bool) -> io::Result<usize> {
        let mut st = self.ring.st.borrow_mut();
        let mut n = 0;
        let mut i = 0;
        while n < buf.len() {
            let s = st.slot(self.idx);
            let Some(c) = s.rx.get(i).copied() else {
                break;
            };
            let take = (c.len as usize).min(buf.len() - n);
            let src = st.bufs.bytes(c.bid, c.off as usize, take);
            buf[n..n + take].copy_from_slice(src);
            n += take;
            if !consume {
                i += 1;
                continue;
            }
            let s = st.slot(self.idx);
            if take == c.len as usize {
                s.rx.pop_front();
                st.recycle(c.bid);
            } else if let Some(front) = s.rx.front_mut() {
                front.off += take as u32;
                front.len -= take as u32;
            }
        }
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        let s = st.slot(self.idx);
        match s.rx_end {
            Some(0) => Ok(0),
            Some(e) => Err(os_err(e)),
            None if s.pollin && !s.recv_armed => {
                // Buffers were short: a direct read into the caller's.
                let flags = libc::MSG_DONTWAIT | if consume { 0 } else { libc::MSG_PEEK };
                // SAFETY: `buf` is valid for writes of its length; the
                // descriptor is this connection's.
                let r = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
                if r > 0 {
                    return Ok(r as usize);
                }
                s.pollin = false;
                if r == 0 {
                    s.rx_end = Some(0);
                    return Ok(0);
                }
                let e = Error::last_os_error();
                if e.kind() != ErrorKind::WouldBlock {
                    s.rx_end = Some(-e.raw_os_error().unwrap_or(libc::EIO));
                }
                Err(e)
            }
            None => Err(ErrorKind::WouldBlock.into()),
        }
    }

    /// Ready when the send queue has room (or the connection failed).
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.ring.st.borrow_mut();
        let cap = st.send_queue;
        let s = st.slot(self.idx);
        if s.tx_err.is_some() || s.shut != Shut::No || (s.tx.len() < cap && s.loans.is_empty()) {
            return Poll::Ready(Ok(()));
        }
        set_waker(&mut s.wwaker, cx);
        Poll::Pending
    }

    /// Whether [`UringSock::lend_from`] may lend more (or the connection
    /// failed): no need to wait for [`UringSock::lend_ready`].
    pub fn lend_room(&self) -> bool {
        let mut st = self.ring.st.borrow_mut();
        let s = st.slot(self.idx);
        s.tx_err.is_some() || s.shut != Shut::No || s.loans.len() < crate::loan::LOANS
    }

    /// Ready when [`UringSock::lend_from`] may lend more (or the
    /// connection failed).
    pub fn poll_lend_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.lend_room() {
            return Poll::Ready(Ok(()));
        }
        let mut st = self.ring.st.borrow_mut();
        set_waker(&mut st.slot(self.idx).wwaker, cx);
        Poll::Pending
    }

    /// Waits until [`UringSock::lend_from`] may lend more.
    pub async fn lend_ready(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_lend_ready(cx)).await
    }

    /// Forwards received bytes of `src` to this connection without copying
    /// them: whole chunks move from `src`'s receive queue to the end of
    /// this one's send queue, at most `max` bytes (see `loan.rs`).
    /// `more`: `MSG_MORE` after the moved bytes, `.0` when fewer than `max`
    /// were moved, `.1` when `max` were.
    ///
    /// Returns the bytes moved. 0 asks the caller to use
    /// [`UringSock::try_read`] and [`UringSock::try_write`] instead: the
    /// two sockets are on different rings, nothing is received, the next
    /// chunk is longer than `max`, the end of the stream or an error is
    /// next, the send queue is full or failed, or receive buffers are
    /// short.
    pub fn lend_from(&self, src: &UringSock, max: usize, more: (bool, bool)) -> usize {
        if !Rc::ptr_eq(&self.ring, &src.ring) || src.idx == self.idx {
            return 0;
        }
        let n = self.ring.st.borrow_mut().lend(src.idx, self.idx, max, more);
        if n > 0 {
            self.ring.kick();
        }
        n
    }

    /// Waits until the send queue has room.
    pub async fn writable(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_write_ready(cx)).await
    }

    /// Queues what fits of `data` for sending (`WouldBlock` when the
    /// queue is full). `more`: the message goes on (`MSG_MORE` on its
    /// send); the last piece of a message must pass `false`.
    pub fn try_write(&self, data: &[u8], more: bool) -> io::Result<usize> {
        let mut st = self.ring.st.borrow_mut();
        let cap = st.send_queue;
        let s = st.slot(self.idx);
        if let Some(e) = s.tx_err {
            return Err(os_err(e));
        }
        if s.shut != Shut::No {
            return Err(ErrorKind::BrokenPipe.into());
        }
        if data.is_empty() {
            return Ok(0);
        }
        let room = cap.saturating_sub(s.tx.len());
        // Lent chunks leave first (see `loan.rs`).
        if room == 0 || !s.loans.is_empty() {
            return Err(ErrorKind::WouldBlock.into());
        }
        if s.tx.capacity() == 0 {
            let tx = st.tx_buf();
            st.slot(self.idx).tx = tx;
        }
        let s = st.slot(self.idx);
        let n = room.min(data.len());
        // Within the capacity: the queue's memory never moves while a send
        // of its head is in flight.
        s.tx.extend_from_slice(&data[..n]);
        s.more = more && n == data.len();
        st.queue_send(self.idx);
        drop(st);
        self.ring.kick();
        Ok(n)
    }

    /// Closes the write side once the queued bytes have left.
    pub fn shutdown_write(&self) {
        let mut st = self.ring.st.borrow_mut();
        let s = st.slot(self.idx);
        if s.shut != Shut::No {
            return;
        }
        if s.tx.is_empty() && s.tx_flight == 0 && s.loans.is_empty() {
            st.shutdown(self.idx);
        } else {
            s.shut = Shut::Wanted;
        }
        drop(st);
        self.ring.kick();
    }

    /// Drops the queued bytes when the handle is dropped (the caller set
    /// `SO_LINGER` 0 for a reset).
    pub fn abort(&self) {
        self.ring.st.borrow_mut().slot(self.idx).abort = true;
    }
}

fn no_ring() -> Error {
    Error::other("this thread has no io_uring ring")
}

impl AsRawFd for UringSock {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl AsFd for UringSock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor stays open while the handle lives (the
        // ring closes it only after the drop below).
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }
}

impl Drop for UringSock {
    fn drop(&mut self) {
        let Ok(mut st) = self.ring.st.try_borrow_mut() else {
            // Never expected: nothing drops a socket during a turn.
            return;
        };
        let idx = self.idx;
        let s = st.slot(idx);
        s.owned = false;
        s.rwaker = None;
        s.wwaker = None;
        let (connecting, abort) = (s.connecting, s.abort);
        if s.poll_armed {
            st.cancel(idx, Op::Poll);
        }
        let sending = st.slot(idx).tx_flight > 0;
        while let Some(c) = st.slot(idx).rx.pop_front() {
            st.recycle(c.bid);
        }
        if connecting {
            st.cancel(idx, Op::Connect);
        }
        if abort {
            if sending {
                st.cancel(idx, Op::Send);
            }
            if st.slot(idx).pollout_armed {
                st.cancel(idx, Op::PollOut);
            }
            st.slot(idx).tx.clear();
            st.drop_loans(idx);
            if !sending {
                st.sent(idx);
            }
        }
        let s = st.slot(idx);
        if s.tx.is_empty() && s.tx_flight == 0 && s.loans.is_empty() {
            // Otherwise once the queue has left (see `after_send`).
            if s.shut == Shut::Wanted {
                st.shutdown(idx);
            }
            st.finish(idx);
        } else if !abort {
            // Bounded: a peer that stops reading gets a reset.
            st.linger(idx);
        }
        st.maybe_free(idx);
        drop(st);
        self.ring.kick();
    }
}
