//! Forwarding without copies: received chunks of one connection lent to
//! another connection's send queue.
//!
//! When the proxy forwards a body or a tunnel between two sockets of the
//! same ring, the bytes the kernel wrote into a provided receive buffer
//! can be sent from that very buffer: the chunk moves from the source's
//! receive queue to the destination's *loans*, the send reads it where it
//! lies, and the buffer goes back to the buffer ring once the send has
//! taken all of it. No byte is copied in user space (the copy path copies
//! twice: out of the receive buffer, then into the send queue).
//!
//! Order: a connection's loans always follow its send queue. Chunks are
//! lent behind whatever the queue holds, and a write to the queue waits
//! until the loans have left ([`crate::UringSock::try_write`] answers
//! `WouldBlock` meanwhile), so bytes leave in the order they were given.
//!
//! Bounds: a connection holds at most [`LOANS`] lent chunks, and nothing is
//! lent while fewer than a sixteenth of the ring's receive buffers are free,
//! so connections whose peers read slowly cannot empty the buffer ring for
//! the others; the caller then copies, as without loans.

use crate::driver::{Shut, State};

/// Lent chunks a connection's send queue holds at most (each a receive
/// buffer). Default is 4, as many as a connection may hold received
/// ([`crate::driver::RX_CHUNKS`]).
pub(crate) const LOANS: usize = 4;
/// Nothing is lent while fewer than this fraction (1/16) of the ring's
/// receive buffers are free. With a quarter, 20 connections receiving
/// 1 MiB responses kept the ring below it most of the time (a multishot
/// receive takes a burst of buffers before its cancel takes effect), and
/// most bytes were copied after all.
const RESERVE_DIV: usize = 16;

impl State {
    /// Moves whole received chunks of `src` behind `dst`'s send queue, at
    /// most `max` bytes. Returns the bytes moved: 0 when none could be
    /// (nothing received, the next chunk is longer than `max`, the queue
    /// is full of loans or failed, or receive buffers are short). `more`
    /// is the `MSG_MORE` wish after the moved bytes: `.0` when fewer than
    /// `max` were moved, `.1` when all of them were.
    pub(crate) fn lend(&mut self, src: u32, dst: u32, max: usize, more: (bool, bool)) -> usize {
        let d = &self.slots[dst as usize];
        if d.tx_err.is_some() || d.shut != Shut::No || d.fd < 0 || d.abort {
            return 0;
        }
        if self.free_bufs < self.nbufs / RESERVE_DIV {
            return 0;
        }
        let mut n = 0usize;
        while self.slots[dst as usize].loans.len() < LOANS {
            let Some(c) = self.slots[src as usize].rx.front().copied() else {
                break;
            };
            if n + c.len as usize > max {
                break;
            }
            self.slots[src as usize].rx.pop_front();
            self.slots[dst as usize].loans.push_back(c);
            n += c.len as usize;
        }
        if n > 0 {
            self.slots[dst as usize].more = if n < max { more.0 } else { more.1 };
            self.stats.lent += n as u64;
            self.shared
                .lent
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            self.queue_send(dst);
        }
        n
    }

    /// Gives the buffers of `idx`'s loans back to the buffer ring, but
    /// those a send in flight still reads (given back when it completes).
    pub(crate) fn drop_loans(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        let keep = s.flight_loans;
        let mut loans = std::mem::take(&mut s.loans);
        while loans.len() > keep {
            if let Some(c) = loans.pop_back() {
                self.recycle(c.bid);
            }
        }
        self.slots[idx as usize].loans = loans;
    }

    /// A send took `n` bytes of `idx`'s loans, from the first: the chunks
    /// sent whole go back to the buffer ring.
    pub(crate) fn loans_sent(&mut self, idx: u32, mut n: usize) {
        while n > 0 {
            let s = &mut self.slots[idx as usize];
            let Some(front) = s.loans.front_mut() else {
                return;
            };
            let take = n.min(front.len as usize);
            front.off += take as u32;
            front.len -= take as u32;
            n -= take;
            if front.len == 0 {
                if let Some(c) = s.loans.pop_front() {
                    self.recycle(c.bid);
                }
            }
        }
    }
}
