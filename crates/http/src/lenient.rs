//! Lenient parsing for `option accept-invalid-http-request` and
//! `option accept-invalid-http-response`.
//!
//! The strict parsers hand the receive buffer to httparse, which refuses
//! what RFC 9110/9112 forbid. The lenient ones accept a few of those
//! things the way HAProxy does, without ever changing what the framing
//! analysis sees:
//!
//! * obs-fold line folding and NUL bytes in header lines are repaired in
//!   the receive buffer itself ([`unfold_head`]): each folding line break
//!   and each NUL becomes SP, which RFC 9112 §5.2 and RFC 9110 §5.5 allow
//!   a recipient to do, and which is what the next hop then receives;
//! * header names with bytes outside `tchar` and header values with
//!   control characters are forwarded unchanged, but httparse is run on a
//!   copy where those bytes are masked ([`with_masked`]): same length,
//!   same offsets, so every offset found there is valid in the real
//!   buffer. A masked name is never `Content-Length` nor
//!   `Transfer-Encoding`, and a masked value of those headers is invalid,
//!   so framing is decided on clean bytes only.
//!
//! The copy goes to a per-thread scratch vector that keeps its capacity;
//! the strict path never comes here.

use crate::framing::{is_tchar, skip_leading_empty_lines};
use std::cell::RefCell;

/// A scratch head bigger than this is freed after use, not kept.
const MAX_KEPT_SCRATCH: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Start of the first header line (just past the start-line), if the
/// start-line is complete.
fn first_header_line(buf: &[u8]) -> Option<usize> {
    let start = skip_leading_empty_lines(buf);
    let nl = buf.get(start..)?.iter().position(|&b| b == b'\n')?;
    Some(start + nl + 1)
}

/// Whether a line starting at `i` is the empty line ending the head.
fn is_empty_line(buf: &[u8], i: usize) -> bool {
    matches!(buf.get(i..), Some([b'\n', ..] | [b'\r', b'\n', ..]))
}

/// Repairs, in place, the head at the start of `buf` (looking at most at
/// `max_head` bytes): every obs-fold line break inside the header section
/// (CRLF or LF followed by SP or HTAB) becomes spaces, and every NUL in a
/// header line becomes SP, as HAProxy forwards them. Idempotent, so it may
/// run again as more of the head arrives. Returns how many bytes changed.
///
/// Only for the lenient modes: the strict parsers reject both (400/502).
pub fn unfold_head(buf: &mut [u8], max_head: usize) -> usize {
    let limit = buf.len().min(max_head);
    let buf = &mut buf[..limit];
    let Some(mut i) = first_header_line(buf) else {
        return 0;
    };
    let mut changed = 0;
    while i < buf.len() && !is_empty_line(buf, i) {
        // One logical header line, folds included.
        let mut j = i;
        loop {
            match buf.get(j) {
                None => return changed,
                Some(b'\n') => {}
                Some(0) => {
                    buf[j] = b' ';
                    changed += 1;
                    j += 1;
                    continue;
                }
                Some(_) => {
                    j += 1;
                    continue;
                }
            }
            // `j` is a line feed: a fold when the next line starts with
            // whitespace (the first header line never folds: `i` starts
            // past it only after its own line feed).
            match buf.get(j + 1) {
                None => return changed,
                Some(b' ' | b'\t') if j > i => {
                    buf[j] = b' ';
                    changed += 1;
                    if buf[j - 1] == b'\r' {
                        buf[j - 1] = b' ';
                        changed += 1;
                    }
                    j += 1;
                }
                _ => break,
            }
        }
        i = j + 1;
    }
    changed
}

/// Masks, in `head` (a copy of the received bytes), what the lenient modes
/// accept but httparse refuses: in header names, bytes that are not
/// `tchar` (whitespace excepted, which stays an error); in header values,
/// control characters other than HTAB, CR and LF. Masked bytes become `x`.
fn mask(head: &mut [u8]) {
    let Some(mut i) = first_header_line(head) else {
        return;
    };
    while i < head.len() && !is_empty_line(head, i) {
        let end = head[i..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |p| i + p);
        let line = &mut head[i..end];
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            let (name, value) = line.split_at_mut(colon);
            for b in name.iter_mut() {
                if !is_tchar(*b) && !matches!(*b, b' ' | b'\t' | b'\r') {
                    *b = b'x';
                }
            }
            for b in value.iter_mut() {
                if (*b < 0x20 && !matches!(*b, b'\t' | b'\r' | 0)) || *b == 0x7f {
                    *b = b'x';
                }
            }
        }
        i = end + 1;
    }
}

/// Runs `f` on a masked copy of `view` (see [`mask`]), in this thread's
/// scratch vector (taken out while `f` runs, so nesting cannot conflict).
pub(crate) fn with_masked<R>(view: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut s = SCRATCH.try_with(RefCell::take).unwrap_or_default();
    s.clear();
    s.extend_from_slice(view);
    mask(&mut s);
    let r = f(&s);
    if s.capacity() <= MAX_KEPT_SCRATCH {
        let _ = SCRATCH.try_with(|c| c.replace(s));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfold_replaces_fold_and_nul() {
        let mut b = b"GET / HTTP/1.1\r\nA: x\r\n  y\r\nB: 1\x002\r\n\r\nbody\x00".to_vec();
        let n = unfold_head(&mut b, 1000);
        assert_eq!(n, 3);
        assert_eq!(
            &b[..],
            b"GET / HTTP/1.1\r\nA: x    y\r\nB: 1 2\r\n\r\nbody\x00"
        );
        // Idempotent.
        assert_eq!(unfold_head(&mut b, 1000), 0);
    }

    #[test]
    fn unfold_bare_lf_and_partial() {
        let mut b = b"GET / HTTP/1.1\nA: x\n\ty\n".to_vec();
        assert_eq!(unfold_head(&mut b, 1000), 1);
        assert_eq!(&b[..], b"GET / HTTP/1.1\nA: x \ty\n");
        // The byte after the last LF has not arrived: nothing decided.
        let mut b = b"GET / HTTP/1.1\r\nA: x\r\n".to_vec();
        assert_eq!(unfold_head(&mut b, 1000), 0);
    }

    #[test]
    fn unfold_leaves_first_line_and_body() {
        // Whitespace before the first header is not a fold.
        let mut b = b"GET / HTTP/1.1\r\n A: x\r\n\r\n".to_vec();
        assert_eq!(unfold_head(&mut b, 1000), 0);
        let mut b = b"GET / HTTP/1.1\r\nA: x\r\n\r\n y".to_vec();
        assert_eq!(unfold_head(&mut b, 1000), 0);
    }

    #[test]
    fn mask_names_and_values() {
        let mut b = b"GET /\x01 HTTP/1.1\r\nX(A): a\x01b\x7f\r\nC D: 1\r\n\r\n\x01".to_vec();
        mask(&mut b);
        assert_eq!(
            &b[..],
            b"GET /\x01 HTTP/1.1\r\nXxAx: axbx\r\nC D: 1\r\n\r\n\x01"
        );
    }
}
