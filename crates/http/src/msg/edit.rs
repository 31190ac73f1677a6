//! Editing a [`Head`]: HAProxy's `http-request` / `http-response` header
//! actions (`add-header`, `set-header`, `del-header`, `replace-header`,
//! `replace-value`) and start-line actions (`set-method`, `set-uri`,
//! `set-path`, `set-query`, `set-status`).
//!
//! Every edit writes its new bytes into the head's arena; nothing in the
//! receive buffer changes. Inputs are validated so that the serialised head
//! always re-parses: names and methods must be tokens, values and reasons
//! may not hold CR, LF or other controls but HTAB, targets are visible
//! ASCII. Edits that would change body framing are refused.

use super::view::path_bounds;
use super::{is_protected, Field, Head, Kind, Span, View};
use crate::framing::{eq_ic, is_token};
use crate::{MAX_HEADERS, REQUEST_REWRITE_HEADERS, RESPONSE_REWRITE_HEADERS};

/// Why an edit was refused (the head is left unchanged). HAProxy counts
/// such failures as rewrite failures (`failed_rewrites`) and, with
/// `strict-mode on`, answers 500.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditError {
    /// The header name is not a token.
    InvalidName,
    /// The value holds a control byte (CR, LF, NUL...) other than HTAB.
    InvalidValue,
    /// `Content-Length` or `Transfer-Encoding` ([`super::is_protected`]).
    Protected,
    /// No live field in that slot.
    NoSuchField,
    /// One more field would take the head past what the proxy may forward
    /// (the parser's own limit, so that the serialised head, the proxy's
    /// `Connection` and forwarded-for lines included, stays within
    /// [`MAX_HEADERS`]).
    TooManyHeaders,
    /// The method is not a token.
    InvalidMethod,
    /// The target would be empty or hold bytes other than visible ASCII.
    InvalidTarget,
    /// The status is outside 100..=599 (HAProxy takes up to 999, but the
    /// parser, Fairlead's own next hop included, refuses past 599).
    InvalidStatus,
    /// The reason holds a control byte other than HTAB.
    InvalidReason,
    /// A request edit on a response head, or the reverse.
    WrongKind,
    /// The edit would change how the body is framed: a method to or from
    /// `HEAD` or `CONNECT`, a status to or from one without a body (1xx,
    /// 204, 304). The proxy frames from the parsed head, so it refuses.
    ChangesFraming,
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EditError::InvalidName => "invalid header name",
            EditError::InvalidValue => "invalid byte in header value",
            EditError::Protected => "Content-Length and Transfer-Encoding cannot be edited",
            EditError::NoSuchField => "no such header field",
            EditError::TooManyHeaders => "too many headers",
            EditError::InvalidMethod => "invalid method",
            EditError::InvalidTarget => "invalid request target",
            EditError::InvalidStatus => "invalid status code",
            EditError::InvalidReason => "invalid byte in reason phrase",
            EditError::WrongKind => "edit does not apply to this message",
            EditError::ChangesFraming => "edit would change message framing",
        })
    }
}

impl std::error::Error for EditError {}

/// HTAB, SP, visible ASCII and obs-text: what httparse accepts in a header
/// value or a reason phrase.
fn is_field_text(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
}

/// Visible ASCII: what a request target may hold.
fn is_uri_text(s: &[u8]) -> bool {
    s.iter().all(|&b| (0x21..0x7f).contains(&b))
}

fn check_name(name: &[u8]) -> Result<(), EditError> {
    if !is_token(name) {
        return Err(EditError::InvalidName);
    }
    if is_protected(name) {
        return Err(EditError::Protected);
    }
    Ok(())
}

fn check_value(value: &[u8]) -> Result<(), EditError> {
    if is_field_text(value) {
        Ok(())
    } else {
        Err(EditError::InvalidValue)
    }
}

/// Methods whose response is framed differently (case-sensitive, as the
/// parser decides `is_head` / `is_connect`).
fn method_class(m: &[u8]) -> u8 {
    match m {
        b"HEAD" => 1,
        b"CONNECT" => 2,
        _ => 0,
    }
}

/// Statuses that never have a body.
fn status_has_no_body(s: u16) -> bool {
    s < 200 || s == 204 || s == 304
}

/// A head and the buffer it was filled from, for editing; see the module
/// docs. Reading goes through [`HeadMut::view`].
#[derive(Debug)]
pub struct HeadMut<'a> {
    head: &'a mut Head,
    buf: &'a [u8],
}

impl<'a> HeadMut<'a> {
    pub(crate) fn new(head: &'a mut Head, buf: &'a [u8]) -> Self {
        HeadMut { head, buf }
    }

    /// The head as it reads now, edits included.
    pub fn view(&self) -> View<'_> {
        View::new(self.head, self.buf)
    }

    fn max_fields(&self) -> usize {
        match self.head.kind {
            Kind::Request => MAX_HEADERS - REQUEST_REWRITE_HEADERS,
            Kind::Response => MAX_HEADERS - RESPONSE_REWRITE_HEADERS,
        }
    }

    fn want(&self, kind: Kind) -> Result<(), EditError> {
        if self.head.kind == kind {
            Ok(())
        } else {
            Err(EditError::WrongKind)
        }
    }

    /// The live field in `slot`, refused when protected.
    fn editable(&self, slot: usize) -> Result<Field, EditError> {
        let f = *self
            .head
            .fields
            .get(slot)
            .filter(|f| !f.removed)
            .ok_or(EditError::NoSuchField)?;
        if is_protected(self.head.bytes(self.buf, f.name)) {
            return Err(EditError::Protected);
        }
        Ok(f)
    }

    /// `add-header`: appends a field after the others. Returns its slot.
    pub fn add_header(&mut self, name: &[u8], value: &[u8]) -> Result<usize, EditError> {
        check_name(name)?;
        check_value(value)?;
        if self.head.live >= self.max_fields() {
            return Err(EditError::TooManyHeaders);
        }
        let name = self.head.push(&[name]);
        let value = self.head.push(&[value]);
        self.head.fields.push(Field {
            name,
            value,
            ..Field::default()
        });
        self.head.live += 1;
        Ok(self.head.fields.len() - 1)
    }

    /// `set-header`: removes every field called `name`, then appends one
    /// (HAProxy's order: the new field comes last). Returns its slot.
    pub fn set_header(&mut self, name: &[u8], value: &[u8]) -> Result<usize, EditError> {
        check_name(name)?;
        check_value(value)?;
        self.del_header(name)?;
        self.add_header(name, value)
    }

    /// `del-header`: removes every field called `name` (case-insensitive).
    /// Returns how many were removed.
    pub fn del_header(&mut self, name: &[u8]) -> Result<usize, EditError> {
        if is_protected(name) {
            return Err(EditError::Protected);
        }
        let mut n = 0;
        for i in 0..self.head.fields.len() {
            let f = self.head.fields[i];
            if !f.removed && eq_ic(self.head.bytes(self.buf, f.name), name) {
                self.head.fields[i].removed = true;
                n += 1;
            }
        }
        self.head.live -= n;
        Ok(n)
    }

    /// The output codec's own edit, not a rule action: removes
    /// `Transfer-Encoding` when the codec frames the body differently (an
    /// HTTP/1.0 client gets a chunked body's bare data until the
    /// connection closes). Returns how many fields were removed.
    pub fn drop_transfer_encoding(&mut self) -> usize {
        let mut n = 0;
        for i in 0..self.head.fields.len() {
            let f = self.head.fields[i];
            if !f.removed && eq_ic(self.head.bytes(self.buf, f.name), b"transfer-encoding") {
                self.head.fields[i].removed = true;
                n += 1;
            }
        }
        self.head.live -= n;
        n
    }

    /// `replace-header` / `replace-value`: the field in `slot` gets a new
    /// whole value (the rule layer builds it; for `replace-value` it joins
    /// the rewritten comma-separated elements). The name keeps its bytes;
    /// the line is then written as `name: value`.
    pub fn replace_field_value(&mut self, slot: usize, value: &[u8]) -> Result<(), EditError> {
        check_value(value)?;
        self.editable(slot)?;
        let value = self.head.push(&[value]);
        let f = &mut self.head.fields[slot];
        f.value = value;
        f.raw = false;
        Ok(())
    }

    /// Removes the field in `slot` (its slot stays, empty).
    pub fn remove_field(&mut self, slot: usize) -> Result<(), EditError> {
        self.editable(slot)?;
        self.head.fields[slot].removed = true;
        self.head.live -= 1;
        Ok(())
    }

    /// `set-method`. Refused between a method and `HEAD` / `CONNECT` (the
    /// response would be framed differently than the proxy expects).
    pub fn set_method(&mut self, method: &[u8]) -> Result<(), EditError> {
        self.want(Kind::Request)?;
        if !is_token(method) {
            return Err(EditError::InvalidMethod);
        }
        if method_class(self.view().method()) != method_class(method) {
            return Err(EditError::ChangesFraming);
        }
        self.head.method = self.head.push(&[method]);
        Ok(())
    }

    /// `set-uri`: the whole request-target.
    pub fn set_target(&mut self, target: &[u8]) -> Result<(), EditError> {
        self.want(Kind::Request)?;
        if target.is_empty() || !is_uri_text(target) {
            return Err(EditError::InvalidTarget);
        }
        self.head.target = self.head.push(&[target]);
        Ok(())
    }

    /// `set-path`: replaces the path ([`View::path`]), keeping the scheme
    /// and authority of an absolute-form target and the query. As HAProxy,
    /// a target without a path (`*`, `h:443`) is replaced up to its `?`.
    pub fn set_path(&mut self, path: &[u8]) -> Result<(), EditError> {
        self.want(Kind::Request)?;
        if !is_uri_text(path) {
            return Err(EditError::InvalidTarget);
        }
        let t = self.head.target;
        let tb = self.head.bytes(self.buf, t);
        let len = tb.len();
        let (s, e) = path_bounds(tb)
            .unwrap_or_else(|| (0, tb.iter().position(|&b| b == b'?').unwrap_or(len)));
        self.splice_target(t, s, e, &[path])
    }

    /// `set-query`: with `Some(q)`, what follows the `?` becomes `q` (the
    /// `?` is kept even when `q` is empty, and added when missing unless
    /// `q` is empty), as HAProxy's; with `None`, the `?` and the query are
    /// removed.
    pub fn set_query(&mut self, query: Option<&[u8]>) -> Result<(), EditError> {
        self.want(Kind::Request)?;
        if query.is_some_and(|q| !is_uri_text(q)) {
            return Err(EditError::InvalidTarget);
        }
        let t = self.head.target;
        let tb = self.head.bytes(self.buf, t);
        let len = tb.len();
        match (tb.iter().position(|&b| b == b'?'), query) {
            (Some(q), Some(new)) => self.splice_target(t, q + 1, len, &[new]),
            (Some(q), None) => self.splice_target(t, q, len, &[]),
            (None, Some(new)) if !new.is_empty() => self.splice_target(t, len, len, &[b"?", new]),
            (None, _) => Ok(()),
        }
    }

    /// The target with its bytes `from..to` replaced by `parts`.
    fn splice_target(
        &mut self,
        t: Span,
        from: usize,
        to: usize,
        parts: &[&[u8]],
    ) -> Result<(), EditError> {
        let added: usize = parts.iter().map(|p| p.len()).sum();
        if t.len() - (to - from) + added == 0 {
            return Err(EditError::InvalidTarget);
        }
        let start = self.head.arena.len();
        self.head.push_span(self.buf, t.sub(0, from));
        for p in parts {
            self.head.arena.extend_from_slice(p);
        }
        self.head.push_span(self.buf, t.sub(to, t.len()));
        self.head.target = Span::arena(start, self.head.arena.len());
        Ok(())
    }

    /// `set-status`: the status and reason (HAProxy's default reason for
    /// the status when `None`, see [`super::reason_phrase`]). Refused
    /// between a status with a body and one without (1xx, 204, 304).
    pub fn set_status(&mut self, status: u16, reason: Option<&[u8]>) -> Result<(), EditError> {
        self.want(Kind::Response)?;
        if !(100..=599).contains(&status) {
            return Err(EditError::InvalidStatus);
        }
        if reason.is_some_and(|r| !is_field_text(r)) {
            return Err(EditError::InvalidReason);
        }
        if status_has_no_body(status) != status_has_no_body(self.head.status) {
            return Err(EditError::ChangesFraming);
        }
        self.head.write_status(status, reason);
        Ok(())
    }
}
