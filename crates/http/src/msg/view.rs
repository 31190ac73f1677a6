//! Reading a [`Head`]: start-line parts, URI parts as HAProxy's `path` and
//! `query` fetches see them, and header fields as `hdr()` (comma-split)
//! and `fhdr()` (full value) see them.

use super::{Head, Kind};
use crate::framing::eq_ic;

/// A head and the receive buffer it was filled from: every reading
/// accessor. `Copy`, two references; borrowed slices live as long as both.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    head: &'a Head,
    buf: &'a [u8],
}

impl<'a> View<'a> {
    pub(crate) fn new(head: &'a Head, buf: &'a [u8]) -> Self {
        View { head, buf }
    }

    /// Request or response.
    pub fn kind(&self) -> Kind {
        self.head.kind
    }

    /// The method (empty for a response).
    pub fn method(&self) -> &'a [u8] {
        self.head.bytes(self.buf, self.head.method)
    }

    /// The request-target as sent (or as rewritten), e.g. `/a?b`,
    /// `http://h/a?b`, `*`, `h:443`. Empty for a response.
    pub fn target(&self) -> &'a [u8] {
        self.head.bytes(self.buf, self.head.target)
    }

    /// The HTTP/2 `:scheme` (empty for an HTTP/1 head).
    pub fn scheme(&self) -> &'a [u8] {
        self.head.bytes(self.buf, self.head.scheme)
    }

    /// The HTTP/2 `:authority` (empty for an HTTP/1 head, or an HTTP/2
    /// request without one).
    pub fn authority(&self) -> &'a [u8] {
        self.head.bytes(self.buf, self.head.authority)
    }

    /// HAProxy's `path`: the target from the first slash of the path (the
    /// scheme and authority of an absolute-form target skipped) up to the
    /// question mark. `None` for `*`, an authority-form target and an
    /// absolute-form one without a path (`http://h`).
    pub fn path(&self) -> Option<&'a [u8]> {
        let t = self.target();
        let (s, e) = path_bounds(t)?;
        Some(&t[s..e])
    }

    /// HAProxy's `query`: what follows the first `?` of the target (maybe
    /// empty); `None` without a `?`.
    pub fn query(&self) -> Option<&'a [u8]> {
        let t = self.target();
        t.iter().position(|&b| b == b'?').map(|q| &t[q + 1..])
    }

    /// 10, 11 or 20 for HTTP/1.0, HTTP/1.1, HTTP/2 (as received; HTTP/1
    /// output is always HTTP/1.1).
    pub fn version(&self) -> u8 {
        self.head.version
    }

    /// The status code (0 for a request).
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// The reason phrase as received or set (bytes as sent, maybe empty).
    pub fn reason(&self) -> &'a [u8] {
        self.head.bytes(self.buf, self.head.reason)
    }

    /// Live header fields (removed ones left out).
    pub fn header_count(&self) -> usize {
        self.head.live
    }

    /// The `n`th live field (name, value), counting from 0; a scan.
    pub fn header(&self, n: usize) -> Option<(&'a [u8], &'a [u8])> {
        self.headers().nth(n).map(|(_, name, value)| (name, value))
    }

    /// Field slots, removed ones included: the bound for [`View::field`].
    pub fn slots(&self) -> usize {
        self.head.fields.len()
    }

    /// The field in slot `slot` (name, value); `None` when removed or past
    /// the end. Slots never move: removing a field leaves its slot empty,
    /// adding one takes a new slot at the end.
    pub fn field(&self, slot: usize) -> Option<(&'a [u8], &'a [u8])> {
        let f = self.head.fields.get(slot).filter(|f| !f.removed)?;
        Some((
            self.head.bytes(self.buf, f.name),
            self.head.bytes(self.buf, f.value),
        ))
    }

    /// Live fields in order: (slot, name, value). Values are OWS-trimmed
    /// (added values as given).
    pub fn headers(&self) -> impl Iterator<Item = (usize, &'a [u8], &'a [u8])> + 'a {
        let (head, buf) = (self.head, self.buf);
        head.live_fields()
            .map(move |(i, f)| (i, head.bytes(buf, f.name), head.bytes(buf, f.value)))
    }

    /// Slots of the live fields called `name` (case-insensitive).
    pub fn slots_of<'n>(&self, name: &'n [u8]) -> impl Iterator<Item = usize> + use<'a, 'n> {
        self.headers()
            .filter(move |(_, n, _)| eq_ic(n, name))
            .map(|(i, _, _)| i)
    }

    /// Whole values of every field called `name`, in order: HAProxy's
    /// `fhdr()` (commas are part of the value, as in `Date` or
    /// `Set-Cookie`).
    pub fn full_values<'n>(&self, name: &'n [u8]) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        self.headers()
            .filter(move |(_, n, _)| eq_ic(n, name))
            .map(|(_, _, v)| v)
    }

    /// Values of every field called `name` split on commas outside quoted
    /// strings and trimmed: HAProxy's `hdr()`. Empty elements are kept
    /// (`a,,b` gives `a`, ``, `b`; an empty field gives one empty value).
    pub fn values<'n>(&self, name: &'n [u8]) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        self.full_values(name).flat_map(ListValues::new)
    }

    /// The last whole value of `name` (`fhdr(name)`, `-1`).
    pub fn get_last(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.full_values(name).last()
    }

    /// Whether some live field is called `name`.
    pub fn has(&self, name: &[u8]) -> bool {
        self.headers().any(|(_, n, _)| eq_ic(n, name))
    }

    /// HAProxy's occurrence argument of `hdr(name,occ)` (`full`: `fhdr`):
    /// `occ > 0` counts from the first value (1 is the first, 0 too),
    /// `occ < 0` from the last (-1 is the last).
    pub fn occurrence(&self, name: &[u8], occ: i32, full: bool) -> Option<&'a [u8]> {
        let n = occ.unsigned_abs() as usize;
        if occ >= 0 {
            let i = n.max(1) - 1;
            return if full {
                self.full_values(name).nth(i)
            } else {
                self.values(name).nth(i)
            };
        }
        let total = self.count(name, full);
        let i = total.checked_sub(n)?;
        if full {
            self.full_values(name).nth(i)
        } else {
            self.values(name).nth(i)
        }
    }

    /// `hdr_cnt(name)` (`full`: `fhdr_cnt`): how many values `name` has.
    pub fn count(&self, name: &[u8], full: bool) -> usize {
        if full {
            self.full_values(name).count()
        } else {
            self.values(name).count()
        }
    }
}

/// The elements of one comma-separated field value, as HAProxy's
/// `http_find_header` walks them: a comma inside a quoted string (with
/// backslash escapes) does not split; elements are SP/HTAB-trimmed; empty
/// ones are kept.
#[derive(Debug, Clone)]
pub struct ListValues<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> ListValues<'a> {
    pub fn new(value: &'a [u8]) -> Self {
        ListValues { rest: Some(value) }
    }
}

impl<'a> Iterator for ListValues<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let v = super::trim_ows_start(self.rest?);
        let end = value_end(v);
        let item = crate::framing::trim_ows(&v[..end]);
        // Past the comma; `None` when the element ran to the end.
        self.rest = v.get(end + 1..);
        Some(item)
    }
}

/// Where the element starting `v` ends: the first comma outside quotes
/// (HAProxy's `http_find_hdr_value_end`).
fn value_end(v: &[u8]) -> usize {
    let (mut quoted, mut escaped) = (false, false);
    for (i, &b) in v.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted {
            match b {
                b'\\' => escaped = true,
                b'"' => quoted = false,
                _ => {}
            }
        } else if b == b'"' {
            quoted = true;
        } else if b == b',' {
            return i;
        }
    }
    v.len()
}

/// Where the path of a target starts, and where it ends (at `?` or the
/// end), as HAProxy's `http_get_path`: `*` has none; a target starting with
/// a letter must be `scheme://authority` and the path starts at the next
/// slash; otherwise the path starts at the first slash.
pub(crate) fn path_bounds(t: &[u8]) -> Option<(usize, usize)> {
    let start = path_start(t)?;
    let end = t[start..]
        .iter()
        .position(|&b| b == b'?')
        .map_or(t.len(), |q| start + q);
    Some((start, end))
}

/// Start of the path (its first slash) in the target, if any.
pub(crate) fn path_start(t: &[u8]) -> Option<usize> {
    let mut i = 0;
    match t.first()? {
        b'*' => return None,
        c if c.is_ascii_alphabetic() => {
            i = 1;
            while t
                .get(i)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
            {
                i += 1;
            }
            if t.get(i..i + 3) != Some(b"://") {
                return None;
            }
            i += 3;
        }
        _ => {}
    }
    t[i..].iter().position(|&b| b == b'/').map(|p| i + p)
}
