//! [`IoBuf`]: an input buffer that exists only while it holds data.
//!
//! It owns a pooled buffer with a read window `[start, end)`. Reading into it
//! takes a buffer from the thread pool if it has none; when everything has
//! been consumed, [`IoBuf::release_if_empty`] gives the buffer back, so a
//! connection that waits holds no memory besides this small struct.

use crate::pool;
use crate::Conn;

/// A lazily allocated input buffer.
#[derive(Default)]
pub struct IoBuf {
    data: Option<Vec<u8>>,
    start: usize,
    end: usize,
}

impl IoBuf {
    pub fn new() -> Self {
        IoBuf::default()
    }

    /// The unconsumed bytes.
    pub fn filled(&self) -> &[u8] {
        match &self.data {
            Some(d) => &d[self.start..self.end],
            None => &[],
        }
    }

    /// The unconsumed bytes, writable (a decoder that works in place, such
    /// as the HTTP/2 header block reassembly).
    pub fn filled_mut(&mut self) -> &mut [u8] {
        match &mut self.data {
            Some(d) => &mut d[self.start..self.end],
            None => &mut [],
        }
    }

    /// Number of unconsumed bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// True when there is no room left to read even after compaction.
    pub fn is_full(&self) -> bool {
        match &self.data {
            Some(d) => self.len() == d.len(),
            None => false,
        }
    }

    /// Marks `n` bytes as consumed.
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n.min(self.len());
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Gives the buffer back to the pool when it holds no data.
    pub fn release_if_empty(&mut self) {
        if self.is_empty() {
            if let Some(d) = self.data.take() {
                pool::give(d);
            }
            self.start = 0;
            self.end = 0;
        }
    }

    /// Makes sure a buffer is present and that free space follows the data,
    /// moving the data to the front if needed. Returns the free space.
    fn spare(&mut self) -> &mut [u8] {
        let d = self.data.get_or_insert_with(pool::take);
        if self.end == d.len() && self.start > 0 {
            d.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut d[self.end..]
    }

    /// One non-blocking read from `stream` into the free space, at most
    /// `limit` bytes. Returns `Ok(0)` at EOF, or when the buffer is full,
    /// `Err(WouldBlock)` when nothing is ready.
    pub fn try_read_from(&mut self, stream: &Conn, limit: usize) -> std::io::Result<usize> {
        let spare = self.spare();
        let max = spare.len().min(limit);
        if max == 0 {
            return Ok(0);
        }
        let n = stream.try_read(&mut spare[..max]);
        if let Ok(n) = n {
            self.end += n;
        }
        if self.is_empty() {
            self.release_if_empty();
        }
        n
    }

    /// Waits until `stream` is readable, then reads once (see
    /// [`IoBuf::try_read_from`]). No buffer is held while waiting.
    pub async fn read_from(&mut self, stream: &Conn, limit: usize) -> std::io::Result<usize> {
        loop {
            self.release_if_empty();
            stream.readable().await?;
            match self.try_read_from(stream, limit) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        if let Some(d) = self.data.take() {
            pool::give(d);
        }
    }
}
