//! Cookie handling for persistence (`cookie <name> insert|rewrite|prefix`).
//!
//! Reading works on the client's original head; editing works on a head the
//! proxy already wrote with [`crate::write_request_head`] or
//! [`crate::write_response_head`] (CRLF-terminated lines, final empty
//! line). Edits happen in place in that vector: no allocation besides its
//! growth.

use crate::framing::{split_header_line, HeaderLines};

/// The delimiter between the server's value and the application's value
/// in `prefix` mode, as HAProxy uses it.
pub const PREFIX_DELIMITER: u8 = b'~';

/// Iterates over the `name=value` pairs of a Cookie header value.
fn pairs(value: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    value.split(|&b| b == b';' || b == b',').filter_map(|p| {
        let p = p.trim_ascii();
        let eq = p.iter().position(|&b| b == b'=')?;
        Some((p[..eq].trim_ascii(), p[eq + 1..].trim_ascii()))
    })
}

/// The value of cookie `name` in one Cookie field value (`a=b; c=d`).
pub fn cookie_in_value<'a>(value: &'a [u8], name: &str) -> Option<&'a [u8]> {
    pairs(value)
        .find(|(k, _)| *k == name.as_bytes())
        .map(|(_, v)| v)
}

/// The `name` of a Set-Cookie value, and the byte range of its value
/// (up to the first `;`).
pub fn set_cookie_value(value: &[u8]) -> Option<(&[u8], std::ops::Range<usize>)> {
    let start = value.len() - value.trim_ascii_start().len();
    let eq = start + value[start..].iter().position(|&b| b == b'=')?;
    let end = value[eq + 1..]
        .iter()
        .position(|&b| b == b';')
        .map_or(value.len(), |p| eq + 1 + p);
    Some((value[start..eq].trim_ascii(), eq + 1..end))
}

/// The value of cookie `name` in the request head `buf[..head_len]`.
pub fn request_cookie<'a>(buf: &'a [u8], head_len: usize, name: &str) -> Option<&'a [u8]> {
    let end = head_len.min(buf.len());
    HeaderLines::new(buf, 0, end).find_map(|line| {
        let (n, v) = split_header_line(line);
        if !n.eq_ignore_ascii_case(b"cookie") {
            return None;
        }
        pairs(v)
            .find(|(k, _)| *k == name.as_bytes())
            .map(|(_, v)| v)
    })
}

/// Byte ranges `(line_start, line_end_without_crlf)` of the header lines of
/// a head written by the proxy, skipping the start line.
fn written_lines(out: &[u8]) -> Vec<(usize, usize)> {
    let mut lines = Vec::new();
    let mut pos = match out.windows(2).position(|w| w == b"\r\n") {
        Some(p) => p + 2,
        None => return lines,
    };
    while let Some(rel) = out[pos..].windows(2).position(|w| w == b"\r\n") {
        if rel == 0 {
            break;
        }
        lines.push((pos, pos + rel));
        pos += rel + 2;
    }
    lines
}

/// What to do with the persistence cookie in a request sent to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestCookieEdit {
    /// Remove it (insert mode with `indirect`).
    Remove,
    /// Strip the `server~` prefix from its value (prefix mode).
    StripPrefix,
}

/// Edits cookie `name` in every Cookie line of a request head written by
/// the proxy. A Cookie line left empty is removed.
pub fn edit_request_cookies(out: &mut Vec<u8>, name: &str, edit: RequestCookieEdit) {
    // Walk backwards so earlier offsets stay valid while lines shrink.
    for (start, end) in written_lines(out).into_iter().rev() {
        let colon = match out[start..end].iter().position(|&b| b == b':') {
            Some(c) => start + c,
            None => continue,
        };
        if !out[start..colon].eq_ignore_ascii_case(b"cookie") {
            continue;
        }
        // Rebuild the value in place: each kept pair is copied down.
        let mut w = colon + 1;
        let mut kept = 0;
        let mut r = colon + 1;
        while r < end {
            let seg_end = out[r..end]
                .iter()
                .position(|&b| b == b';')
                .map_or(end, |p| r + p);
            let seg = out[r..seg_end].trim_ascii();
            let seg_off = r + (out[r..seg_end].len() - out[r..seg_end].trim_ascii_start().len());
            let seg_len = seg.len();
            let is_ours = seg
                .iter()
                .position(|&b| b == b'=')
                .is_some_and(|eq| seg[..eq].trim_ascii() == name.as_bytes());
            let (from, len) = if is_ours {
                match edit {
                    RequestCookieEdit::Remove => (0, 0),
                    RequestCookieEdit::StripPrefix => {
                        let eq = seg.iter().position(|&b| b == b'=').unwrap_or(0);
                        let val = &seg[eq + 1..];
                        match val.iter().position(|&b| b == PREFIX_DELIMITER) {
                            // Keep "name=" then the part after the delimiter.
                            Some(d) => {
                                let name_part = eq + 1;
                                let rest = eq + 1 + d + 1;
                                let sep = if kept > 0 { 2 } else { 1 };
                                let dst = w + sep;
                                out.copy_within(seg_off..seg_off + name_part, dst);
                                out.copy_within(seg_off + rest..seg_off + seg_len, dst + name_part);
                                if kept > 0 {
                                    out[w] = b';';
                                    out[w + 1] = b' ';
                                } else {
                                    out[w] = b' ';
                                }
                                w = dst + name_part + (seg_len - rest);
                                kept += 1;
                                r = seg_end + 1;
                                continue;
                            }
                            None => (seg_off, seg_len),
                        }
                    }
                }
            } else {
                (seg_off, seg_len)
            };
            if len > 0 {
                let sep = if kept > 0 { 2 } else { 1 };
                out.copy_within(from..from + len, w + sep);
                if kept > 0 {
                    out[w] = b';';
                    out[w + 1] = b' ';
                } else {
                    out[w] = b' ';
                }
                w += sep + len;
                kept += 1;
            }
            r = seg_end + 1;
        }
        if kept == 0 {
            // Nothing left: drop the whole line with its CRLF.
            out.drain(start..end + 2);
        } else {
            out.drain(w..end);
        }
    }
}

/// What to do with the server's `Set-Cookie: name=...` in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetCookieEdit<'a> {
    /// Replace the value with the server's cookie (rewrite mode).
    Replace(&'a [u8]),
    /// Prefix the value with `server~` (prefix mode).
    Prefix(&'a [u8]),
}

/// Edits the Set-Cookie lines for cookie `name` in a response head written
/// by the proxy. Returns true when one was found.
pub fn edit_set_cookies(out: &mut Vec<u8>, name: &str, edit: SetCookieEdit<'_>) -> bool {
    let mut found = false;
    for (start, end) in written_lines(out).into_iter().rev() {
        let Some(c) = out[start..end].iter().position(|&b| b == b':') else {
            continue;
        };
        let colon = start + c;
        if !out[start..colon].eq_ignore_ascii_case(b"set-cookie") {
            continue;
        }
        let vstart =
            colon + 1 + (out[colon + 1..end].len() - out[colon + 1..end].trim_ascii_start().len());
        let Some(eq) = out[vstart..end].iter().position(|&b| b == b'=') else {
            continue;
        };
        if out[vstart..vstart + eq].trim_ascii() != name.as_bytes() {
            continue;
        }
        found = true;
        let val_start = vstart + eq + 1;
        let val_end = out[val_start..end]
            .iter()
            .position(|&b| b == b';')
            .map_or(end, |p| val_start + p);
        match edit {
            SetCookieEdit::Replace(v) => {
                out.splice(val_start..val_end, v.iter().copied());
            }
            SetCookieEdit::Prefix(p) => {
                let mut ins = p.to_vec();
                ins.push(PREFIX_DELIMITER);
                out.splice(val_start..val_start, ins);
            }
        }
    }
    found
}

/// Inserts a header line (without CRLF) before the final empty line of a
/// head written by the proxy.
pub fn append_header(out: &mut Vec<u8>, line: &[u8]) {
    debug_assert!(out.ends_with(b"\r\n\r\n"));
    out.truncate(out.len() - 2);
    out.extend_from_slice(line);
    out.extend_from_slice(b"\r\n\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[&str]) -> Vec<u8> {
        let mut v = b"GET / HTTP/1.1\r\n".to_vec();
        for l in lines {
            v.extend_from_slice(l.as_bytes());
            v.extend_from_slice(b"\r\n");
        }
        v.extend_from_slice(b"\r\n");
        v
    }

    #[test]
    fn finds_request_cookie() {
        let h = head(&["Host: x", "Cookie: a=1; SRV=s2; b=3"]);
        assert_eq!(request_cookie(&h, h.len(), "SRV"), Some(&b"s2"[..]));
        assert_eq!(request_cookie(&h, h.len(), "b"), Some(&b"3"[..]));
        assert_eq!(request_cookie(&h, h.len(), "zz"), None);
        let h = head(&["Host: x"]);
        assert_eq!(request_cookie(&h, h.len(), "SRV"), None);
    }

    #[test]
    fn removes_our_cookie() {
        let mut h = head(&["Host: x", "Cookie: a=1; SRV=s2; b=3", "X: y"]);
        edit_request_cookies(&mut h, "SRV", RequestCookieEdit::Remove);
        assert_eq!(h, head(&["Host: x", "Cookie: a=1; b=3", "X: y"]));
        let mut h = head(&["Cookie: SRV=s2", "X: y"]);
        edit_request_cookies(&mut h, "SRV", RequestCookieEdit::Remove);
        assert_eq!(h, head(&["X: y"]));
    }

    #[test]
    fn strips_prefix() {
        let mut h = head(&["Cookie: a=1; JSESSIONID=s1~abc; b=3"]);
        edit_request_cookies(&mut h, "JSESSIONID", RequestCookieEdit::StripPrefix);
        assert_eq!(h, head(&["Cookie: a=1; JSESSIONID=abc; b=3"]));
        let mut h = head(&["Cookie: JSESSIONID=s1~abc"]);
        edit_request_cookies(&mut h, "JSESSIONID", RequestCookieEdit::StripPrefix);
        assert_eq!(h, head(&["Cookie: JSESSIONID=abc"]));
    }

    #[test]
    fn edits_set_cookie() {
        let mut h = head(&["Set-Cookie: JSESSIONID=abc; Path=/", "Set-Cookie: other=1"]);
        assert!(edit_set_cookies(
            &mut h,
            "JSESSIONID",
            SetCookieEdit::Prefix(b"s1")
        ));
        assert_eq!(
            h,
            head(&[
                "Set-Cookie: JSESSIONID=s1~abc; Path=/",
                "Set-Cookie: other=1"
            ])
        );
        let mut h = head(&["Set-Cookie: SRV=whatever; Path=/"]);
        assert!(edit_set_cookies(
            &mut h,
            "SRV",
            SetCookieEdit::Replace(b"s2")
        ));
        assert_eq!(h, head(&["Set-Cookie: SRV=s2; Path=/"]));
        assert!(!edit_set_cookies(
            &mut h,
            "NOPE",
            SetCookieEdit::Replace(b"x")
        ));
    }

    #[test]
    fn appends_a_header() {
        let mut h = head(&["A: b"]);
        append_header(&mut h, b"Set-Cookie: SRV=s1; path=/");
        assert_eq!(h, head(&["A: b", "Set-Cookie: SRV=s1; path=/"]));
    }
}

/// The value of the first header `name` in the head `buf[..head_len]`.
pub fn header_value<'a>(buf: &'a [u8], head_len: usize, name: &str) -> Option<&'a [u8]> {
    let end = head_len.min(buf.len());
    HeaderLines::new(buf, 0, end).find_map(|line| {
        let (n, v) = split_header_line(line);
        n.eq_ignore_ascii_case(name.as_bytes()).then_some(v)
    })
}

#[cfg(test)]
mod lookup_tests {
    #[test]
    fn header_value_is_found_case_insensitively() {
        let h = b"GET / HTTP/1.1\r\nHost: a\r\nX-User:  bob \r\n\r\n";
        assert_eq!(super::header_value(h, h.len(), "x-user"), Some(&b"bob"[..]));
        assert_eq!(super::header_value(h, h.len(), "x-none"), None);
    }
}
