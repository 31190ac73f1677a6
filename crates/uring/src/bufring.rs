//! The provided buffer ring of a worker's receives: the kernel takes a
//! buffer from it for each received chunk, and the proxy gives the buffer
//! back once it has copied the chunk out.

use io_uring::types::BufRingEntry;
use std::alloc::Layout;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

/// The buffer group id of the receive ring.
pub(crate) const GROUP: u16 = 0;

pub(crate) struct BufRing {
    /// The ring of entries the kernel reads (page-aligned, `len` entries).
    entries: *mut BufRingEntry,
    layout: Layout,
    mask: u16,
    /// Our copy of the tail the kernel sees.
    tail: u16,
    /// The buffers; an entry's buffer id is its index here. Their heap
    /// blocks never move: the vectors are never grown.
    bufs: Vec<Vec<u8>>,
}

impl BufRing {
    /// A ring of `bufs.len()` buffers (a power of two, at most 32768), all
    /// given to the kernel once [`BufRing::register`] ran.
    pub(crate) fn new(bufs: Vec<Vec<u8>>) -> io::Result<BufRing> {
        let n = bufs.len();
        if n == 0 || !n.is_power_of_two() || n > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the receive buffer count must be a power of two up to 32768",
            ));
        }
        let size = n * std::mem::size_of::<BufRingEntry>();
        let layout = Layout::from_size_align(size, 4096).map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut ring = BufRing {
            entries,
            layout,
            mask: (n - 1) as u16,
            tail: 0,
            bufs,
        };
        for bid in 0..n {
            ring.put(bid as u16);
        }
        Ok(ring)
    }

    /// Registers the ring with `uring` as buffer group [`GROUP`].
    pub(crate) fn register(&self, uring: &io_uring::IoUring) -> io::Result<()> {
        // SAFETY: `entries` holds `mask + 1` entries and lives as long as
        // the ring (BufRing is dropped after the IoUring in State).
        unsafe {
            uring.submitter().register_buf_ring_with_flags(
                self.entries as u64,
                self.mask + 1,
                GROUP,
                0,
            )
        }
    }

    /// Gives buffer `bid` back to the kernel.
    pub(crate) fn put(&mut self, bid: u16) {
        let Some(buf) = self.bufs.get_mut(bid as usize) else {
            return;
        };
        let slot = (self.tail & self.mask) as usize;
        // SAFETY: `slot` is below the entry count; the kernel only reads
        // entries between its head and our published tail, and this one
        // is past the tail until the store below.
        let e = unsafe { &mut *self.entries.add(slot) };
        e.set_addr(buf.as_mut_ptr() as u64);
        e.set_len(buf.len() as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field overlays the first entry's reserved field,
        // a u16 aligned for atomic access, shared with the kernel.
        let tail = unsafe { &*BufRingEntry::tail(self.entries).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }

    /// The first `len` bytes of buffer `bid`, from `off`.
    pub(crate) fn bytes(&self, bid: u16, off: usize, len: usize) -> &[u8] {
        self.bufs
            .get(bid as usize)
            .and_then(|b| b.get(off..off + len))
            .unwrap_or_default()
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the ring that used it
        // is gone (State drops the IoUring first).
        unsafe { std::alloc::dealloc(self.entries.cast(), self.layout) }
    }
}
