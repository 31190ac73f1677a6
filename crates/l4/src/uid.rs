//! `unique-id-format` in TCP mode: one id per stream, made on first use
//! from the frontend's format, as HAProxy 2.6 does: by the `unique-id`
//! fetch in a `tcp-request content` rule (it then sees the bytes waiting
//! there), by the UNIQUE_ID TLV of a `send-proxy-v2` header
//! (`proxy-v2-options unique-id`), or by the log line (`%ID`). All three
//! then see the same value. A session without a format pays nothing: the
//! id lives in one pointer of [`crate::SessState`], allocated only once
//! an id is made.

use crate::front::Frontend;
use fairlead_rules::txn::Txn;
use fairlead_rules::uniqueid::UniqueId;
use std::time::SystemTime;

/// HAProxy's `UNIQUEID_LEN` (128) less its terminating NUL: longer ids
/// are cut there.
pub const MAX_LEN: usize = 127;

/// What making the id needs besides the stream's view: the frontend
/// (its format, name and stream counter) and when the connection was
/// accepted (`%t`, `%Ts`).
#[derive(Clone, Copy)]
pub struct UidSource<'a> {
    pub front: &'a Frontend,
    pub accepted: SystemTime,
}

impl<'a> UidSource<'a> {
    /// The frontend's `unique-id-format`, if it has one.
    pub fn format(&self) -> Option<&'a UniqueId> {
        self.front.routes.fe_rules.unique_id.as_ref()
    }
}

/// Renders `u` for the stream `from` sees: its `%` variables from the
/// connection and the names, its samples from the rule engine.
pub fn render(src: &UidSource<'_>, u: &UniqueId, from: &dyn Txn) -> Vec<u8> {
    let values = u.sample_values(from);
    let samples: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    let tls = from.tls();
    let front = src.front;
    // `%rt`: the frontend's stream count, from 0 (as the TCP log line).
    let counter = front
        .counters
        .get(fairlead_backend::counters::C::Stot)
        .saturating_sub(1);
    let rec = fairlead_log::LogRecord {
        client: from.src(),
        frontend_addr: from.dst(),
        accept_date: src.accepted,
        frontend: &front.name,
        tls: tls.is_some(),
        backend: from.backend_name().unwrap_or(&front.name),
        server: from.server_name(),
        request_counter: counter,
        log_counter: counter,
        pid: std::process::id(),
        hostname: from.hostname(),
        ssl_version: tls.as_ref().and_then(|t| t.protocol),
        ssl_cipher: tls.as_ref().and_then(|t| t.cipher),
        ssl_sni: tls.as_ref().and_then(|t| t.sni),
        ssl_resumed: tls.as_ref().map(|t| t.resumed),
        ssl_c_used: tls.as_ref().map(|t| t.c_used),
        samples: &samples,
        ..Default::default()
    };
    let mut out = Vec::with_capacity(64);
    u.format.render(&rec, &mut out);
    out.truncate(MAX_LEN);
    out
}

/// A made id, kept behind one pointer: at most [`MAX_LEN`] bytes in one
/// allocation (as HAProxy's pool of 128-byte ids).
pub(crate) struct Id {
    len: u8,
    bytes: [u8; MAX_LEN],
}

impl Id {
    /// `v` cut to [`MAX_LEN`] bytes.
    fn new(v: &[u8]) -> Box<Id> {
        let n = v.len().min(MAX_LEN);
        let mut id = Box::new(Id {
            len: n as u8,
            bytes: [0; MAX_LEN],
        });
        if let (Some(dst), Some(src)) = (id.bytes.get_mut(..n), v.get(..n)) {
            dst.copy_from_slice(src);
        }
        id
    }

    fn as_slice(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// Makes the stream's id with `make` unless it was made already; the
/// cell and its `busy` flag live in [`crate::SessState`]. While `make`
/// runs, a nested call (a `%[unique-id]` inside its own format) gets
/// `None` (HAProxy 2.6 recurses until it crashes).
pub(crate) fn get_or_make<'c>(
    cell: &'c std::cell::OnceCell<Box<Id>>,
    busy: &std::cell::Cell<bool>,
    make: impl FnOnce() -> Option<Vec<u8>>,
) -> Option<&'c [u8]> {
    if let Some(v) = cell.get() {
        return Some(v.as_slice());
    }
    if busy.replace(true) {
        return None;
    }
    let v = make();
    busy.set(false);
    let _ = cell.set(Id::new(&v?));
    cell.get().map(|v| v.as_slice())
}

/// The id `src`'s format makes for the stream `from` sees; `None`
/// without a source (no stream yet) or without a format.
pub(crate) fn make(src: Option<&UidSource<'_>>, from: &dyn Txn) -> Option<Vec<u8>> {
    let src = src?;
    Some(render(src, src.format()?, from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, OnceCell};

    #[test]
    fn made_once_and_not_inside_its_own_making() {
        let cell = OnceCell::new();
        let busy = Cell::new(false);
        assert_eq!(get_or_make(&cell, &busy, || None), None);
        assert!(!busy.get());
        let got = get_or_make(&cell, &busy, || {
            // The format reads the id it is making: nothing.
            assert_eq!(get_or_make(&cell, &busy, || Some(b"inner".to_vec())), None);
            Some(b"id-1".to_vec())
        });
        assert_eq!(got, Some(&b"id-1"[..]));
        let again = get_or_make(&cell, &busy, || Some(b"id-2".to_vec()));
        assert_eq!(again, Some(&b"id-1"[..]), "made once per stream");
    }

    #[test]
    fn the_cell_is_one_pointer_and_ids_are_cut() {
        assert_eq!(
            std::mem::size_of::<OnceCell<Box<Id>>>(),
            std::mem::size_of::<usize>()
        );
        let cell = OnceCell::new();
        let busy = Cell::new(false);
        let long = vec![b'a'; 200];
        let got = get_or_make(&cell, &busy, || Some(long.clone()));
        assert_eq!(got, Some(&long[..MAX_LEN]));
    }
}
