//! Per-stream state (RFC 9113 §5.1), kept compact: one small record per
//! open or half-closed stream in a vector sorted by identifier. Idle and
//! closed streams have no record: they are told apart by the highest
//! identifiers seen so far.

/// The peer has ended its side (END_STREAM received).
pub(super) const REMOTE_CLOSED: u8 = 1;
/// This side has ended its side (END_STREAM sent).
pub(super) const LOCAL_CLOSED: u8 = 2;
/// The peer's final head was received (what follows is DATA or trailers).
pub(super) const REMOTE_HEAD: u8 = 4;
/// This side's final head was sent.
pub(super) const LOCAL_HEAD: u8 = 8;
/// This side's request was HEAD: the response has no body whatever its
/// content-length says.
pub(super) const HEAD_REQUEST: u8 = 16;

/// An open or half-closed stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stream {
    pub id: u32,
    pub flags: u8,
    /// What the peer may still send on this stream.
    pub recv_window: i32,
    /// Bytes released by the caller and not yet announced.
    pub recv_pending: u32,
    /// What this side may still send (may go negative after a SETTINGS
    /// change, RFC 9113 §6.9.2).
    pub send_window: i32,
    /// Content-length bytes still expected; `u64::MAX` when unknown.
    pub remaining: u64,
}

impl Stream {
    pub fn new(id: u32, recv_window: i32, send_window: i32) -> Stream {
        Stream {
            id,
            flags: 0,
            recv_window,
            recv_pending: 0,
            send_window,
            remaining: u64::MAX,
        }
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// Stream records an idle connection may keep room for (256 bytes).
const KEPT: usize = 8;

/// The open and half-closed streams, sorted by identifier.
#[derive(Debug, Default)]
pub(super) struct Streams {
    list: Vec<Stream>,
}

impl Streams {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    fn pos(&self, id: u32) -> Result<usize, usize> {
        self.list.binary_search_by_key(&id, |s| s.id)
    }

    pub fn get(&self, id: u32) -> Option<&Stream> {
        self.pos(id).ok().and_then(|i| self.list.get(i))
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut Stream> {
        let i = self.pos(id).ok()?;
        self.list.get_mut(i)
    }

    pub fn insert(&mut self, s: Stream) {
        if let Err(i) = self.pos(s.id) {
            self.list.insert(i, s);
        }
    }

    pub fn remove(&mut self, id: u32) -> Option<Stream> {
        let i = self.pos(id).ok()?;
        let s = self.list.remove(i);
        if self.list.is_empty() && self.list.capacity() > KEPT {
            // An idle connection keeps at most a few records' room: enough
            // for one-stream-at-a-time clients not to allocate per request.
            self.list = Vec::new();
        }
        Some(s)
    }

    pub fn allocated(&self) -> usize {
        self.list.capacity() * std::mem::size_of::<Stream>()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Stream> {
        self.list.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Stream> {
        self.list.iter_mut()
    }

    /// Removes every stream matching `f`.
    pub fn retain(&mut self, f: impl FnMut(&Stream) -> bool) {
        self.list.retain(f);
    }
}
