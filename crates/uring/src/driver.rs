//! The ring's state and its driver task: submission of the queued
//! entries, completions turned into slot state and wake-ups.

use crate::bufring::{BufRing, GROUP};
use crate::{Config, Ring, Stats};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Poll, Waker};

/// `IORING_ENTER_GETEVENTS`: also run deferred completions.
const ENTER_GETEVENTS: u32 = 1;
/// User data of operations whose completion needs nothing (cancels,
/// closes).
pub(crate) const IGNORE: u64 = u64::MAX;
/// Accepted connections waiting for the accept loop before the multishot
/// accept is cancelled (re-armed when the loop asks again). Default is 128.
const ACCEPT_QUEUE: usize = 128;
/// Received chunks a connection holds before its receive is cancelled
/// (re-armed when the proxy has read them): a reader that stops reading
/// lets the kernel's window push back instead of emptying the buffer ring.
/// Default is 4.
pub(crate) const RX_CHUNKS: usize = 4;
/// Rounds of submit-and-reap per turn at most, so that one turn ends.
const ROUNDS: usize = 8;

/// Operation kinds, in the low byte of an entry's user data.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Op {
    Recv = 1,
    Send = 2,
    Accept = 3,
    Connect = 4,
    Poll = 6,
    PollOut = 7,
}

/// A received chunk waiting in a provided buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub(crate) bid: u16,
    pub(crate) off: u32,
    pub(crate) len: u32,
}

/// The shutdown of the write side.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Shut {
    #[default]
    No,
    /// Asked while bytes were queued: sent once they left.
    Wanted,
    Sent,
}

/// One socket's state (connection or listener). A slot is reused only
/// once its handle is gone and every operation on it has completed.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) gen: u32,
    /// The descriptor, -1 once closed.
    pub(crate) fd: RawFd,
    /// The handle ([`crate::UringSock`], [`crate::UringListener`]) lives.
    pub(crate) owned: bool,
    /// Operations in flight.
    pub(crate) ops: u8,
    /// Queued bytes are dropped at close (`SO_LINGER` 0 was set).
    pub(crate) abort: bool,
    pub(crate) rx: VecDeque<Chunk>,
    /// 0 at end of stream, a negative errno after an error.
    pub(crate) rx_end: Option<i32>,
    pub(crate) recv_armed: bool,
    /// A cancel of the receive was asked (the connection holds
    /// [`RX_CHUNKS`] chunks).
    pub(crate) recv_cancelled: bool,
    /// A readiness poll is in flight (receive buffers were short).
    pub(crate) poll_armed: bool,
    /// A send found no room (`EAGAIN`): a one-shot `POLLOUT` poll is in
    /// flight, after which the send is made again.
    pub(crate) pollout_armed: bool,
    /// The poll said readable: the next read is a direct `recv`.
    pub(crate) pollin: bool,
    pub(crate) rwaker: Option<Waker>,
    pub(crate) tx: Vec<u8>,
    /// Bytes of the send in flight (0: none): of `tx`, then of loans.
    pub(crate) tx_flight: usize,
    /// Of those, the bytes of `tx`.
    pub(crate) flight_tx: usize,
    /// Received chunks of another connection lent to this one's send
    /// queue, sent after `tx` ([`crate::loan`]).
    pub(crate) loans: VecDeque<Chunk>,
    /// Loans the send in flight reads (the first ones).
    pub(crate) flight_loans: usize,
    /// The `sendmsg` header of a send of several pieces (kept while the
    /// send is in flight; boxed, so that it stays put when slots move).
    pub(crate) msg: Option<Box<crate::send::Msg>>,
    /// In [`State::to_send`].
    pub(crate) tx_queued: bool,
    /// `MSG_MORE` on the next send.
    pub(crate) more: bool,
    pub(crate) tx_err: Option<i32>,
    pub(crate) wwaker: Option<Waker>,
    pub(crate) shut: Shut,
    /// A connect is in flight; its result once done.
    pub(crate) connecting: bool,
    pub(crate) connected: Option<i32>,
    pub(crate) peer: Option<Box<socket2::SockAddr>>,
    /// Accepted descriptors not yet taken (listeners).
    pub(crate) acc: VecDeque<OwnedFd>,
    pub(crate) acc_err: Option<i32>,
    pub(crate) acc_armed: bool,
    /// The listener's index in the registered file table.
    pub(crate) fixed: Option<u32>,
    /// Counted in the ring's [`State::unsent`]: bytes are queued or in
    /// flight.
    pub(crate) unsent: bool,
}

pub(crate) struct State {
    /// Dropped before `bufs`, whose memory it may still reference.
    pub(crate) uring: IoUring,
    pub(crate) bufs: BufRing,
    pub(crate) slots: Vec<Slot>,
    free: Vec<u32>,
    /// Connections with bytes queued and no send in flight.
    to_send: Vec<u32>,
    /// Receive buffers the kernel may still pick.
    pub(crate) free_bufs: usize,
    /// Receive buffers in all.
    pub(crate) nbufs: usize,
    /// Send queues not in use.
    tx_free: Vec<Vec<u8>>,
    pub(crate) send_queue: usize,
    /// Free entries of the registered file table (listeners).
    fixed_free: Vec<u32>,
    /// The registered ring descriptor's index, and the enter flag that
    /// says so; the ring's own descriptor and 0 without one.
    enter_fd: (i32, u32),
    pub(crate) stats: Stats,
    /// The counters other threads read: connections with bytes queued or
    /// in flight ([`crate::unsent`]: a soft stop must not end the process
    /// before they left), and bytes lent ([`crate::lent`]).
    pub(crate) shared: std::sync::Arc<crate::Shared>,
    /// Dropped connections waiting for their queued bytes to leave, with
    /// their slot's generation and deadline, oldest first.
    lingering: VecDeque<(u32, u32, std::time::Instant)>,
    linger: std::time::Duration,
}

/// `IORING_REGISTER_RING_FDS`.
const REGISTER_RING_FDS: libc::c_uint = 20;
/// `IORING_ENTER_REGISTERED_RING`.
const ENTER_REGISTERED_RING: u32 = 1 << 4;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// Registers the ring's descriptor with itself, so that each enter skips
/// the descriptor lookup (Linux 5.18+). The `io-uring` crate keeps the
/// index in a `Submitter` made per call, so the enter is made here.
fn register_ring_fd(uring: &IoUring) -> (i32, u32) {
    use std::os::fd::AsRawFd;
    let fd = uring.as_raw_fd();
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    // SAFETY: io_uring_register with one valid rsrc_update, as the ABI
    // defines; the result is checked.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1,
        )
    };
    if r == 1 {
        (up.offset as i32, ENTER_REGISTERED_RING)
    } else {
        (fd, 0)
    }
}

/// The listeners' registered file table size.
const FIXED_FILES: u32 = 64;

pub(crate) fn build(cfg: &Config) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(cfg.entries.saturating_mul(4))
        .build(cfg.entries)
}

impl State {
    pub(crate) fn new(cfg: &Config, mut bufs: Vec<Vec<u8>>) -> io::Result<State> {
        let uring = build(cfg)?;
        let n = (cfg.recv_bufs as usize).next_power_of_two().min(32768);
        bufs.truncate(n);
        if bufs.len() < n || bufs.iter().any(|b| b.len() < 1024) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "too few or too small receive buffers",
            ));
        }
        let ring = BufRing::new(bufs)?;
        ring.register(&uring)?;
        // Both are optimisations: the ring works without them.
        let enter_fd = register_ring_fd(&uring);
        let fixed_free = match uring.submitter().register_files_sparse(FIXED_FILES) {
            Ok(()) => (0..FIXED_FILES).rev().collect(),
            Err(_) => Vec::new(),
        };
        Ok(State {
            shared: crate::register_ring(),
            lingering: VecDeque::new(),
            linger: cfg.linger,
            uring,
            bufs: ring,
            slots: Vec::new(),
            free: Vec::new(),
            to_send: Vec::new(),
            free_bufs: n,
            nbufs: n,
            tx_free: Vec::new(),
            send_queue: cfg.send_queue.max(1024),
            fixed_free,
            enter_fd,
            stats: Stats::default(),
        })
    }

    /// An eventfd registered with the ring: readable when completions
    /// wait to be processed.
    pub(crate) fn eventfd(&self) -> io::Result<std::fs::File> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        self.uring.submitter().register_eventfd(fd)?;
        Ok(file)
    }

    /// A slot for descriptor `fd`, owned by a new handle.
    pub(crate) fn alloc(&mut self, fd: RawFd) -> u32 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.fd = fd;
        s.owned = true;
        idx
    }

    pub(crate) fn slot(&mut self, idx: u32) -> &mut Slot {
        &mut self.slots[idx as usize]
    }

    pub(crate) fn user_data(&self, idx: u32, op: Op) -> u64 {
        let gen = self.slots[idx as usize].gen & 0x00ff_ffff;
        (u64::from(idx) << 32) | (u64::from(gen) << 8) | op as u64
    }

    /// Queues one entry, submitting first when the queue is full.
    pub(crate) fn push(&mut self, e: &squeue::Entry) {
        // SAFETY: every entry's buffers (send queues, receive buffers,
        // addresses) live in slots or the buffer ring, which outlive the
        // operation: a slot is reused only after its operations completed.
        while unsafe { self.uring.submission().push(e) }.is_err() {
            self.enter();
        }
    }

    /// Submits what is queued and runs deferred completions.
    fn enter(&mut self) {
        let n = self.uring.submission().len() as u32;
        loop {
            self.stats.enters += 1;
            let (fd, reg) = self.enter_fd;
            // SAFETY: io_uring_enter without an argument; the descriptor
            // (or registered index) is this ring's.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_uring_enter,
                    fd,
                    n,
                    0u32,
                    ENTER_GETEVENTS | reg,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                )
            };
            match r {
                -1 if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => continue,
                // EBUSY/EAGAIN: completions must be reaped first; any
                // other error leaves the entries queued for the next turn.
                _ => return,
            }
        }
    }

    /// Arms the connection's multishot receive, or, when receive buffers
    /// are short, a one-shot readiness poll after which the proxy's read
    /// is a direct `recv` into its own buffer (so that connections that
    /// hold buffers can never starve the others for good).
    pub(crate) fn arm_read(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        if s.recv_armed || s.poll_armed || s.pollin || s.rx_end.is_some() || s.fd < 0 {
            return;
        }
        if self.free_bufs > 0 {
            self.arm_recv(idx);
            return;
        }
        let s = &mut self.slots[idx as usize];
        s.poll_armed = true;
        s.ops += 1;
        let e = opcode::PollAdd::new(types::Fd(s.fd), libc::POLLIN as u32);
        let ud = self.user_data(idx, Op::Poll);
        self.push(&e.build().user_data(ud));
    }

    pub(crate) fn arm_recv(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.recv_armed || s.rx_end.is_some() || s.fd < 0 {
            return;
        }
        s.recv_cancelled = false;
        s.recv_armed = true;
        s.ops += 1;
        let fd = s.fd;
        let ud = self.user_data(idx, Op::Recv);
        let e = opcode::RecvMulti::new(types::Fd(fd), GROUP)
            .build()
            .user_data(ud);
        self.push(&e);
    }

    pub(crate) fn arm_accept(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.acc_armed || s.fd < 0 {
            return;
        }
        s.acc_armed = true;
        s.ops += 1;
        let flags = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        let e = match s.fixed {
            Some(f) => opcode::AcceptMulti::new(types::Fixed(f)).flags(flags),
            None => opcode::AcceptMulti::new(types::Fd(s.fd)).flags(flags),
        };
        let ud = self.user_data(idx, Op::Accept);
        self.push(&e.build().user_data(ud));
    }

    pub(crate) fn connect(&mut self, idx: u32, addr: socket2::SockAddr) {
        let s = &mut self.slots[idx as usize];
        let addr = s.peer.insert(Box::new(addr));
        let e = opcode::Connect::new(types::Fd(s.fd), addr.as_ptr(), addr.len());
        s.connecting = true;
        s.connected = None;
        s.ops += 1;
        let ud = self.user_data(idx, Op::Connect);
        self.push(&e.build().user_data(ud));
    }

    pub(crate) fn cancel(&mut self, idx: u32, op: Op) {
        let ud = self.user_data(idx, op);
        self.push(&opcode::AsyncCancel::new(ud).build().user_data(IGNORE));
    }

    /// Notes bytes to send: they leave with the turn's submission.
    pub(crate) fn queue_send(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if !s.unsent {
            s.unsent = true;
            // SeqCst: a soft stop reads the sessions' count, then this one
            // (see `crate::unsent`).
            self.shared
                .unsent
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if !s.tx_queued && s.tx_flight == 0 {
            s.tx_queued = true;
            self.to_send.push(idx);
        }
    }

    /// A send queue for a slot that has none.
    pub(crate) fn tx_buf(&mut self) -> Vec<u8> {
        self.tx_free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.send_queue))
    }

    pub(crate) fn give_tx(&mut self, idx: u32) {
        let mut tx = std::mem::take(&mut self.slots[idx as usize].tx);
        if tx.capacity() == self.send_queue && self.tx_free.len() < 1024 {
            tx.clear();
            self.tx_free.push(tx);
        }
    }

    /// Submits the sends of the connections with queued bytes.
    pub(crate) fn flush_sends(&mut self) {
        let list = std::mem::take(&mut self.to_send);
        for &idx in &list {
            let s = &mut self.slots[idx as usize];
            s.tx_queued = false;
            if s.tx_flight > 0 || s.fd < 0 || s.pollout_armed {
                continue;
            }
            let Some(e) = self.send_entry(idx) else {
                continue;
            };
            let ud = self.user_data(idx, Op::Send);
            self.push(&e.user_data(ud));
        }
        // Keep the list's allocation.
        let mut list = list;
        list.clear();
        if self.to_send.is_empty() {
            self.to_send = list;
        }
    }

    /// Closes the descriptor through the ring.
    pub(crate) fn close(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.fd < 0 {
            return;
        }
        let fd = std::mem::replace(&mut s.fd, -1);
        self.push(&opcode::Close::new(types::Fd(fd)).build().user_data(IGNORE));
    }

    /// Forgets the descriptor of a slot whose owner closes it itself
    /// (listeners), emptying its fixed file entry.
    pub(crate) fn forget_fd(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        s.fd = -1;
        if let Some(f) = s.fixed.take() {
            let _ = self.uring.submitter().register_files_update(f, &[-1]);
            self.fixed_free.push(f);
        }
    }

    /// Registers a listener in the fixed file table, if there is room.
    pub(crate) fn fix(&mut self, idx: u32) {
        let Some(f) = self.fixed_free.pop() else {
            return;
        };
        let fd = self.slots[idx as usize].fd;
        match self.uring.submitter().register_files_update(f, &[fd]) {
            Ok(_) => self.slots[idx as usize].fixed = Some(f),
            Err(_) => self.fixed_free.push(f),
        }
    }

    /// Notes a dropped connection whose queued bytes have not left yet:
    /// [`State::expire_lingering`] resets it if they are still there after
    /// the ring's linger time.
    pub(crate) fn linger(&mut self, idx: u32) {
        let gen = self.slots[idx as usize].gen;
        let until = std::time::Instant::now() + self.linger;
        self.lingering.push_back((idx, gen, until));
    }

    /// Resets the dropped connections whose bytes are still queued at
    /// their deadline (their peer stopped reading); forgets those that
    /// closed. Returns the next deadline.
    pub(crate) fn expire_lingering(
        &mut self,
        now: std::time::Instant,
    ) -> Option<std::time::Instant> {
        while let Some(&(idx, gen, until)) = self.lingering.front() {
            let s = &self.slots[idx as usize];
            let live = s.gen == gen && !s.owned && s.fd >= 0 && s.unsent;
            if live && until > now {
                return Some(until);
            }
            self.lingering.pop_front();
            if live {
                self.stats.linger_resets += 1;
                self.reset(idx);
            }
        }
        None
    }

    /// Drops a dropped connection's queued bytes and closes it with a
    /// reset (`SO_LINGER` 0).
    fn reset(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: plain system call on this slot's open descriptor, with
        // a valid option value and its size.
        unsafe {
            libc::setsockopt(
                s.fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        s.abort = true;
        // The allocation stays: a send in flight may still read it.
        s.tx.clear();
        self.drop_loans(idx);
        if self.slots[idx as usize].pollout_armed {
            self.cancel(idx, Op::PollOut);
        }
        if self.slots[idx as usize].tx_flight > 0 {
            // Closed once the send is cancelled (see `after_send`).
            self.cancel(idx, Op::Send);
            return;
        }
        self.sent(idx);
        self.finish(idx);
        self.maybe_free(idx);
    }

    /// Whether dropped connections wait for their bytes to leave.
    pub(crate) fn has_lingering(&self) -> bool {
        !self.lingering.is_empty()
    }

    /// Connections of this ring with bytes still to send.
    pub(crate) fn unsent(&self) -> usize {
        self.shared.unsent.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The slot has no bytes left to send (they left, or were dropped).
    pub(crate) fn sent(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if std::mem::take(&mut s.unsent) {
            self.shared
                .unsent
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Frees the slot once its handle is gone and nothing is in flight.
    pub(crate) fn maybe_free(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.owned || s.ops > 0 || s.fd >= 0 {
            return;
        }
        self.sent(idx);
        let s = &mut self.slots[idx as usize];
        let gen = s.gen.wrapping_add(1);
        let mut rx = std::mem::take(&mut s.rx);
        let mut acc = std::mem::take(&mut s.acc);
        let mut loans = std::mem::take(&mut s.loans);
        // Kept for the slot's next connection, as the queues' allocations.
        let msg = s.msg.take();
        rx.clear();
        acc.clear();
        // Empty by now (given back when their send completed or the
        // connection was reset); cleared to keep the allocation only.
        loans.clear();
        *s = Slot {
            gen,
            fd: -1,
            rx,
            acc,
            loans,
            msg,
            ..Slot::default()
        };
        self.free.push(idx);
    }

    /// Gives a receive buffer back.
    pub(crate) fn recycle(&mut self, bid: u16) {
        self.bufs.put(bid);
        self.free_bufs += 1;
    }

    fn complete(&mut self, cqe: &cqueue::Entry) {
        let ud = cqe.user_data();
        if ud == IGNORE {
            return;
        }
        self.stats.completions += 1;
        let idx = (ud >> 32) as u32;
        let gen = ((ud >> 8) & 0x00ff_ffff) as u32;
        let (res, flags) = (cqe.result(), cqe.flags());
        let live = self
            .slots
            .get(idx as usize)
            .is_some_and(|s| s.gen & 0x00ff_ffff == gen);
        if !live {
            // Not expected (a slot outlives its operations); a buffer the
            // kernel picked still goes back.
            if let Some(bid) = cqueue::buffer_select(flags) {
                self.free_bufs -= 1;
                self.recycle(bid);
            }
            return;
        }
        match ud as u8 {
            1 => self.on_recv(idx, res, flags),
            2 => self.on_send(idx, res),
            3 => self.on_accept(idx, res, flags),
            4 => {
                let s = &mut self.slots[idx as usize];
                s.ops -= 1;
                s.connecting = false;
                s.connected = Some(res);
                if let Some(w) = s.wwaker.take() {
                    w.wake();
                }
            }
            7 => {
                let s = &mut self.slots[idx as usize];
                s.ops -= 1;
                s.pollout_armed = false;
                if res != -libc::ECANCELED && (!s.tx.is_empty() || !s.loans.is_empty()) {
                    self.queue_send(idx);
                }
            }
            6 => {
                let s = &mut self.slots[idx as usize];
                s.ops -= 1;
                s.poll_armed = false;
                if res != -libc::ECANCELED {
                    s.pollin = true;
                }
                if let Some(w) = s.rwaker.take() {
                    w.wake();
                }
            }
            _ => self.slots[idx as usize].ops -= 1,
        }
        self.maybe_free(idx);
    }

    fn on_recv(&mut self, idx: u32, res: i32, flags: u32) {
        let bid = cqueue::buffer_select(flags);
        let s = &mut self.slots[idx as usize];
        if !cqueue::more(flags) {
            s.recv_armed = false;
            s.ops -= 1;
        }
        if let Some(bid) = bid {
            self.free_bufs -= 1;
            if res > 0 && s.owned {
                s.rx.push_back(Chunk {
                    bid,
                    off: 0,
                    len: res as u32,
                });
                if s.rx.len() >= RX_CHUNKS && s.recv_armed && !s.recv_cancelled {
                    s.recv_cancelled = true;
                    self.cancel(idx, Op::Recv);
                }
            } else {
                self.recycle(bid);
            }
        }
        let s = &mut self.slots[idx as usize];
        if res == 0 {
            s.rx_end = Some(0);
        } else if res == -libc::ENOBUFS {
            self.stats.starved += 1;
        } else if res < 0 && res != -libc::ECANCELED {
            s.rx_end = Some(res);
        }
        let s = &mut self.slots[idx as usize];
        if let Some(w) = s.rwaker.take() {
            w.wake();
        }
    }

    /// Once a connection's queue is empty: the pending shutdown, and the
    /// close of a dropped handle. Wakes a writer.
    pub(crate) fn after_send(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if let Some(w) = s.wwaker.take() {
            w.wake();
        }
        if !s.tx.is_empty() || s.tx_flight > 0 || !s.loans.is_empty() {
            return;
        }
        self.sent(idx);
        let s = &mut self.slots[idx as usize];
        if s.shut == Shut::Wanted && !s.abort {
            self.shutdown(idx);
        }
        if !self.slots[idx as usize].owned {
            self.finish(idx);
        }
    }

    /// Ends a dropped connection whose queued bytes have left: its
    /// receive (kept armed until now, so that bytes arriving meanwhile are
    /// consumed rather than left to turn the close into a reset) is
    /// cancelled, and its descriptor closed, in the same batch.
    pub(crate) fn finish(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        if s.recv_armed {
            self.cancel(idx, Op::Recv);
        }
        self.close(idx);
    }

    pub(crate) fn shutdown(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.fd < 0 {
            return;
        }
        s.shut = Shut::Sent;
        // A direct call, not IORING_OP_SHUTDOWN: the kernel runs that one
        // on a worker thread (it cannot be issued non-blocking), so a close
        // of the same batch could overtake it.
        // SAFETY: plain system call on this slot's open descriptor.
        unsafe { libc::shutdown(s.fd, libc::SHUT_WR) };
    }

    fn on_accept(&mut self, idx: u32, res: i32, flags: u32) {
        let s = &mut self.slots[idx as usize];
        let more = cqueue::more(flags);
        if !more {
            s.acc_armed = false;
            s.ops -= 1;
        }
        if res >= 0 {
            self.stats.accepted += 1;
            // SAFETY: the kernel just created this descriptor for us.
            let fd = unsafe { OwnedFd::from_raw_fd(res) };
            if s.owned {
                s.acc.push_back(fd);
            }
        } else if res != -libc::ECANCELED {
            s.acc_err = Some(res);
        }
        let s = &mut self.slots[idx as usize];
        if more && s.acc.len() >= ACCEPT_QUEUE {
            self.cancel(idx, Op::Accept);
        }
        let s = &mut self.slots[idx as usize];
        if let Some(w) = s.rwaker.take() {
            w.wake();
        }
    }

    /// Reaps every completion.
    fn reap(&mut self) {
        loop {
            let cqe = self.uring.completion().next();
            let Some(cqe) = cqe else {
                return;
            };
            self.complete(&cqe);
        }
    }
}

/// One turn: the queued sends and entries go to the kernel and the
/// completions come back, with one `io_uring_enter` per round, as long
/// as completions queue new entries (a few rounds at most). `events`: the
/// eventfd said completions wait, so the first round enters even with
/// nothing to submit.
fn turn(ring: &Ring, mut events: bool) {
    let mut st = ring.st.borrow_mut();
    ring.dirty.set(false);
    st.stats.turns += 1;
    for _ in 0..ROUNDS {
        st.flush_sends();
        if st.uring.submission().is_empty() && !events {
            break;
        }
        events = false;
        st.enter();
        st.reap();
    }
}

/// Resets the lingering connections that are due, and keeps a timer for
/// the next deadline (none once nothing lingers).
fn watch_lingering(
    ring: &Ring,
    timer: &mut Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    cx: &mut std::task::Context<'_>,
) {
    loop {
        let next = ring
            .st
            .borrow_mut()
            .expire_lingering(std::time::Instant::now());
        let Some(next) = next else {
            *timer = None;
            break;
        };
        let next = tokio::time::Instant::from_std(next);
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(next)));
        if t.deadline() != next {
            t.as_mut().reset(next);
        }
        if std::future::Future::poll(t.as_mut(), cx).is_pending() {
            break;
        }
    }
    // The resets' cancels and closes leave now.
    turn(ring, false);
}

/// The driver task: a turn whenever entries were queued or the eventfd
/// says completions are waiting. The eventfd's counter is never read:
/// its readiness is edge-triggered, and each signal is a new edge.
pub(crate) async fn drive(ring: Rc<Ring>) {
    let mut linger: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        {
            let mut d = ring.driver.borrow_mut();
            if !d.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *d = Some(cx.waker().clone());
            }
        }
        turn(&ring, false);
        if ring.st.borrow().has_lingering() || linger.is_some() {
            watch_lingering(&ring, &mut linger, cx);
        }
        loop {
            match ring.evfd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    ready.clear_ready();
                    turn(&ring, true);
                }
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}
