//! A connection's send: what its send queue holds, then its loans
//! ([`crate::loan`]), in one operation, and what its completion took.
//!
//! One piece (the queue alone, or one loan) leaves with `IORING_OP_SEND`;
//! several (the queue and loans, or several loans) with one
//! `IORING_OP_SENDMSG` over an array of pieces, so that lent chunks leave
//! as few and as large sends as copied bytes do (a send per 16 KiB
//! chunk cost about 4 times the operations and a third more packets).

use crate::driver::{Op, State};
use crate::loan::LOANS;
use io_uring::{opcode, squeue, types};

/// The header and pieces of a `sendmsg`. The kernel reads them while the
/// send is in flight: a slot's `Msg` is only written when none is.
pub(crate) struct Msg {
    hdr: libc::msghdr,
    iov: [libc::iovec; LOANS + 1],
}

impl Msg {
    fn new() -> Box<Msg> {
        // SAFETY: all-zero bytes are a valid `msghdr` and `iovec` (null
        // pointers and zero lengths): plain C structures.
        Box::new(unsafe { std::mem::zeroed() })
    }
}

impl State {
    /// The send of what `idx` has queued, its flight noted; `None` when
    /// nothing is queued.
    pub(crate) fn send_entry(&mut self, idx: u32) -> Option<squeue::Entry> {
        let bufs = &self.bufs;
        let s = &mut self.slots[idx as usize];
        let tx = s.tx.len().min(u32::MAX as usize);
        let mut flags = libc::MSG_NOSIGNAL;
        if s.more {
            flags |= libc::MSG_MORE;
        }
        let fd = types::Fd(s.fd);
        let pieces = usize::from(tx > 0) + s.loans.len().min(LOANS);
        let e = match pieces {
            0 => return None,
            1 if tx > 0 => opcode::Send::new(fd, s.tx.as_ptr(), tx as u32)
                .flags(flags)
                .build(),
            1 => {
                let c = s.loans.front().copied()?;
                let b = bufs.bytes(c.bid, c.off as usize, c.len as usize);
                opcode::Send::new(fd, b.as_ptr(), b.len() as u32)
                    .flags(flags)
                    .build()
            }
            _ => {
                let msg = s.msg.get_or_insert_with(Msg::new);
                let mut n = 0;
                if tx > 0 {
                    msg.iov[0] = libc::iovec {
                        iov_base: s.tx.as_mut_ptr().cast(),
                        iov_len: tx,
                    };
                    n = 1;
                }
                for c in s.loans.iter().take(LOANS) {
                    let b = bufs.bytes(c.bid, c.off as usize, c.len as usize);
                    msg.iov[n] = libc::iovec {
                        // The kernel only reads through it (a send).
                        iov_base: b.as_ptr().cast_mut().cast(),
                        iov_len: b.len(),
                    };
                    n += 1;
                }
                msg.hdr.msg_iov = msg.iov.as_mut_ptr();
                msg.hdr.msg_iovlen = n;
                opcode::SendMsg::new(fd, &msg.hdr)
                    .flags(flags as u32)
                    .build()
            }
        };
        s.flight_tx = tx;
        s.flight_loans = pieces - usize::from(tx > 0);
        let lent: usize = s
            .loans
            .iter()
            .take(s.flight_loans)
            .map(|c| c.len as usize)
            .sum();
        s.tx_flight = tx + lent;
        s.ops += 1;
        Some(e)
    }

    /// Waits for room in `idx`'s socket (a one-shot `POLLOUT` poll), then
    /// queues its send again.
    fn arm_pollout(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.pollout_armed || s.fd < 0 {
            return;
        }
        s.pollout_armed = true;
        s.ops += 1;
        let e = opcode::PollAdd::new(types::Fd(s.fd), libc::POLLOUT as u32);
        let ud = self.user_data(idx, Op::PollOut);
        self.push(&e.build().user_data(ud));
    }

    /// The send of `idx` completed with `res`: the bytes it took leave the
    /// queue, then the loans (whose buffers go back to the ring), and what
    /// is left is queued again.
    pub(crate) fn on_send(&mut self, idx: u32, res: i32) {
        let s = &mut self.slots[idx as usize];
        s.ops -= 1;
        s.tx_flight = 0;
        let flight_tx = std::mem::take(&mut s.flight_tx);
        s.flight_loans = 0;
        if res == -libc::EAGAIN {
            // No room after all (seen with `sendmsg`): nothing was sent.
            // The send is made again once the socket is writable.
            self.arm_pollout(idx);
            self.after_send(idx);
            return;
        }
        if res < 0 {
            if res != -libc::ECANCELED {
                s.tx_err = Some(res);
            }
            self.give_tx(idx);
            self.drop_loans(idx);
            self.after_send(idx);
            return;
        }
        let mut n = res as usize;
        let from_tx = n.min(flight_tx);
        n -= from_tx;
        // Within what is left: an aborted connection's queue was emptied
        // while this send was in flight.
        let drained = from_tx.min(s.tx.len());
        s.tx.drain(..drained);
        let (abort, owned, tx_empty) = (s.abort, s.owned, s.tx.is_empty());
        self.loans_sent(idx, n);
        if abort && !owned {
            self.drop_loans(idx);
        }
        if tx_empty {
            self.give_tx(idx);
        }
        let s = &self.slots[idx as usize];
        if !s.tx.is_empty() || !s.loans.is_empty() {
            self.queue_send(idx);
        }
        self.after_send(idx);
    }
}
