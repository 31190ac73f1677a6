//! Byte-level work of the string converters: `field`, `word`, `regsub`,
//! `json`, `url_dec`, `url_enc`, base64 and hex. Each function follows the
//! behaviour of HAProxy 2.6's converter of the same name (documented
//! next to it), edge cases included.

use regex::bytes::{CaptureLocations, Regex};
use std::borrow::Cow;
use std::ops::Range;

/// Keeps `r` of `c` without copying: a borrowed slice stays borrowed, an
/// owned buffer is cut in place.
pub(super) fn slice_cow(c: Cow<'_, [u8]>, r: Range<usize>) -> Cow<'_, [u8]> {
    match c {
        Cow::Borrowed(b) => Cow::Borrowed(&b[r]),
        Cow::Owned(mut v) => {
            v.truncate(r.end);
            v.drain(..r.start);
            Cow::Owned(v)
        }
    }
}

/// Applies `f` to every byte, copying only when some byte changes.
pub(super) fn map_bytes(c: Cow<'_, [u8]>, f: fn(&u8) -> u8) -> Cow<'_, [u8]> {
    if c.iter().all(|b| f(b) == *b) {
        return c;
    }
    let mut v = c.into_owned();
    for b in &mut v {
        *b = f(b);
    }
    Cow::Owned(v)
}

/// `field(index,delimiters[,count])`: the range of the `index`th field
/// (from 1, or from -1 at the end), extended over `count` fields (0: all
/// the remaining ones; a negative count acts like 0). Every delimiter
/// byte ends a field, so empty fields count. `None` when there are fewer
/// fields than `|index|` (HAProxy's converter then fails).
pub(super) fn field(s: &[u8], index: i64, delims: &[u8], mut count: i64) -> Option<Range<usize>> {
    let is_delim = |c: u8| delims.contains(&c);
    if index > 0 {
        let (mut field, mut start, mut end) = (1i64, 0usize, 0usize);
        while end < s.len() {
            if is_delim(s[end]) {
                if field == index {
                    if count == 1 {
                        return Some(start..end);
                    } else if count > 1 {
                        count -= 1;
                    }
                } else {
                    start = end + 1;
                    field += 1;
                }
            }
            end += 1;
        }
        (field == index).then_some(start..end)
    } else {
        let (mut field, mut start, mut end) = (-1i64, s.len(), s.len());
        while start > 0 {
            if is_delim(s[start - 1]) {
                if field == index {
                    if count == 1 {
                        return Some(start..end);
                    } else if count > 1 {
                        count -= 1;
                    }
                } else {
                    end = start - 1;
                    field -= 1;
                }
            }
            start -= 1;
        }
        (field == index).then_some(start..end)
    }
}

/// `word(index,delimiters[,count])`: like [`field`] but runs of delimiters
/// count as one and delimiters at either end are ignored. A word that does
/// not exist gives an empty range (HAProxy returns an empty string there,
/// where `field` fails).
pub(super) fn word(s: &[u8], index: i64, delims: &[u8], mut count: i64) -> Range<usize> {
    let is_delim = |c: u8| delims.contains(&c);
    let mut word = 0i64;
    let mut inword = false;
    if index > 0 {
        let (mut start, mut end) = (0usize, 0usize);
        while end < s.len() {
            let sep = is_delim(s[end]);
            if !inword {
                if !sep {
                    if word != index {
                        word += 1;
                        start = end;
                    }
                    inword = true;
                }
            } else if sep {
                if word == index {
                    if count == 1 {
                        return start..end;
                    } else if count > 1 {
                        count -= 1;
                    }
                }
                inword = false;
            }
            end += 1;
        }
        if word == index {
            start..end
        } else {
            0..0
        }
    } else {
        let (mut start, mut end) = (s.len(), s.len());
        while start > 0 {
            let sep = is_delim(s[start - 1]);
            if !inword {
                if !sep {
                    if word != index {
                        word -= 1;
                        end = start;
                    }
                    inword = true;
                }
            } else if sep {
                if word == index {
                    if count == 1 {
                        return start..end;
                    } else if count > 1 {
                        count -= 1;
                    }
                }
                inword = false;
            }
            start -= 1;
        }
        if word == index {
            start..end
        } else {
            0..0
        }
    }
}

/// One piece of a `regsub` substitution string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Subst {
    Lit(Vec<u8>),
    /// `\0` (the whole match) to `\9`.
    Group(usize),
}

/// Parses a substitution string as HAProxy's `exp_replace` reads it:
/// `\0`..`\9` insert a capture group (nothing if it did not take part),
/// `\xHH` inserts a byte, a backslash before any other byte inserts that
/// byte. A trailing lone backslash is refused (HAProxy produces no usable
/// output with it).
pub(super) fn parse_subst(s: &[u8]) -> Result<Vec<Subst>, String> {
    let mut out: Vec<Subst> = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        i += 1;
        if c != b'\\' {
            lit.push(c);
            continue;
        }
        let Some(&e) = s.get(i) else {
            return Err("the substitution string ends with a lone backslash".into());
        };
        i += 1;
        if e.is_ascii_digit() {
            if !lit.is_empty() {
                out.push(Subst::Lit(std::mem::take(&mut lit)));
            }
            out.push(Subst::Group(usize::from(e - b'0')));
        } else if e == b'x' {
            let (Some(&h1), Some(&h2)) = (s.get(i), s.get(i + 1)) else {
                return Err("incomplete '\\x' escape in the substitution string".into());
            };
            i += 2;
            // HAProxy's arithmetic, which gives the hex value for hex digits.
            let nib = |h: u8| {
                let v = h.to_ascii_uppercase().wrapping_sub(b'0');
                if v > 9 {
                    v.wrapping_sub(b'A' - b'9' - 1)
                } else {
                    v
                }
            };
            lit.push((nib(h1) << 4).wrapping_add(nib(h2)));
        } else {
            lit.push(e);
        }
    }
    if !lit.is_empty() {
        out.push(Subst::Lit(lit));
    }
    Ok(out)
}

fn expand(subst: &[Subst], locs: &CaptureLocations, hay: &[u8], out: &mut Vec<u8>) {
    for p in subst {
        match p {
            Subst::Lit(l) => out.extend_from_slice(l),
            Subst::Group(n) => {
                if let Some((a, b)) = locs.get(*n) {
                    out.extend_from_slice(&hay[a..b]);
                }
            }
        }
    }
}

/// `regsub`: replaces the first match (every match with `global`), much
/// like `sed s/re/subst/[g]`. As in HAProxy, each search starts where the
/// previous match ended (so an empty match may follow a non-empty one, and
/// `$` matches twice at the end); an empty match at the search position
/// copies the next byte and resumes after it. `^` only matches at the
/// start of the input. `None` when nothing matched (the input is then the
/// output, unchanged).
pub(super) fn regsub(re: &Regex, subst: &[Subst], global: bool, s: &[u8]) -> Option<Vec<u8>> {
    let mut locs = re.capture_locations();
    let m = re.captures_read_at(&mut locs, s, 0)?;
    let mut out = Vec::with_capacity(s.len() + 16);
    let mut pos = 0;
    let mut found = Some((m.start(), m.end()));
    loop {
        let Some((ms, me)) = found else {
            out.extend_from_slice(&s[pos..]);
            break;
        };
        out.extend_from_slice(&s[pos..ms]);
        expand(subst, &locs, s, &mut out);
        if pos >= s.len() {
            break;
        }
        if me == pos {
            // Empty match in front of a byte: keep the byte, move on.
            out.push(s[pos]);
            pos += 1;
        } else {
            pos = me;
        }
        found = if global {
            re.captures_read_at(&mut locs, s, pos)
                .map(|m| (m.start(), m.end()))
        } else {
            None
        };
    }
    Some(out)
}

/// `json`'s input decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonMode {
    Ascii,
    Utf8,
    Utf8S,
    Utf8P,
    Utf8Ps,
}

const UTF8_BADSEQ: u8 = 1;
const UTF8_OVERLONG: u8 = 2;
const UTF8_INVRANGE: u8 = 4;

/// HAProxy's `utf8_next`: decodes one character. Returns the error flags,
/// how many bytes were consumed (at least 1) and the value decoded (for
/// 5- and 6-byte forms too).
fn utf8_next(s: &[u8]) -> (u8, usize, u32) {
    let b = s[0];
    let (mut c, more) = match b {
        0x00..=0x7f => return (0, 1, u32::from(b)),
        0xc0..=0xdf => (u32::from(b & 0x1f), 1),
        0xe0..=0xef => (u32::from(b & 0x0f), 2),
        0xf0..=0xf7 => (u32::from(b & 0x07), 3),
        0xf8..=0xfb => (u32::from(b & 0x03), 4),
        0xfc..=0xfd => (u32::from(b & 0x01), 5),
        _ => return (UTF8_BADSEQ, 1, u32::from(b)),
    };
    if s.len() < more + 1 {
        return (UTF8_BADSEQ, 1, u32::from(b));
    }
    for (i, &cb) in s[1..=more].iter().enumerate() {
        if cb & 0xc0 != 0x80 {
            return (UTF8_BADSEQ, i + 1, c);
        }
        c = (c << 6) | u32::from(cb & 0x3f);
    }
    let n = more + 1;
    let mut code = 0;
    if (c <= 0x7f && n > 1)
        || ((0x80..=0x7ff).contains(&c) && n > 2)
        || ((0x800..=0xffff).contains(&c) && n > 3)
        || ((0x10000..=0x1f_ffff).contains(&c) && n > 4)
    {
        code |= UTF8_OVERLONG;
    }
    if (0xd800..=0xdfff).contains(&c) || (0xfffe..=0xffff).contains(&c) {
        code |= UTF8_INVRANGE;
    }
    (code, n, c)
}

/// `json`: escapes `s` for use between double quotes in JSON. `"`, `\`
/// and `/` get a backslash; backspace, form feed, CR, LF and tab their
/// short escapes; other non-printable characters and everything above
/// 0x7e become `\u00XX` (lowercase hex). `ascii` reads bytes; the `utf8`
/// decoders read UTF-8: `utf8` fails on any error, `utf8s` drops bad
/// characters, `utf8p` accepts overlong forms but fails on other errors,
/// `utf8ps` accepts overlong forms and drops bad characters. Characters
/// above U+FFFF fail (`utf8`, `utf8p`) or are dropped (`s` variants).
pub(super) fn json(s: &[u8], mode: JsonMode) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() + s.len() / 4);
    let mut p = 0;
    while p < s.len() {
        let c = if mode == JsonMode::Ascii {
            p += 1;
            u32::from(s[p - 1])
        } else {
            let (code, n, c) = utf8_next(&s[p..]);
            p += n;
            let hard = match mode {
                JsonMode::Utf8 | JsonMode::Utf8S => code != 0,
                _ => code & (UTF8_BADSEQ | UTF8_INVRANGE) != 0,
            };
            let strict = matches!(mode, JsonMode::Utf8 | JsonMode::Utf8P);
            if hard || c > 0xffff {
                if strict {
                    return None;
                }
                continue;
            }
            c
        };
        match c {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5c => out.extend_from_slice(b"\\\\"),
            0x2f => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x20..=0x7e => out.push(c as u8),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((c >> shift) & 0xf) as usize]);
                }
            }
        }
    }
    Some(out)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// `url_dec`: decodes `%XX` (failing on a `%` not followed by two hex
/// digits) and turns `+` into a space when `in_form` is set or once a `?`
/// has been seen. Decoding stops at a NUL byte of the input, as HAProxy
/// works on a C string. The input is kept when nothing changes.
pub(super) fn url_dec(s: Cow<'_, [u8]>, mut in_form: bool) -> Option<Cow<'_, [u8]>> {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    let untouched = {
        let body = &s[..end];
        let plus_changes = match body.iter().rposition(|&b| b == b'+') {
            None => false,
            Some(p) => in_form || body[..p].contains(&b'?'),
        };
        !body.contains(&b'%') && !plus_changes
    };
    if untouched {
        return Some(slice_cow(s, 0..end));
    }
    let body = &s[..end];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'+' => out.push(if in_form { b' ' } else { b'+' }),
            b'%' => {
                let hi = hex_val(*body.get(i + 1)?)?;
                let lo = hex_val(*body.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 2;
            }
            c => {
                if c == b'?' {
                    in_form = true;
                }
                out.push(c);
            }
        }
        i += 1;
    }
    Some(Cow::Owned(out))
}

/// `url_enc(query)`: every byte but `A-Z a-z 0-9 - . _ ~` becomes `%XX`
/// (uppercase hex). The input is kept when nothing needs encoding.
pub(super) fn url_enc(s: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    let keep = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
    if s.iter().all(|&c| keep(c)) {
        return s;
    }
    let mut out = Vec::with_capacity(s.len() * 3);
    for &c in s.iter() {
        if keep(c) {
            out.push(c);
        } else {
            out.push(b'%');
            out.push(HEX_UPPER[usize::from(c >> 4)]);
            out.push(HEX_UPPER[usize::from(c & 15)]);
        }
    }
    Cow::Owned(out)
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// `hex`: two uppercase hex digits per byte.
pub(super) fn hex(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 2);
    for &c in s {
        out.push(HEX_UPPER[usize::from(c >> 4)]);
        out.push(HEX_UPPER[usize::from(c & 15)]);
    }
    out
}

/// `hex2i`: a string of hex digits as an integer (wrapping past 64 bits);
/// `None` on any other character. An empty string is 0.
pub(super) fn hex2i(s: &[u8]) -> Option<i64> {
    s.iter().try_fold(0i64, |n, &c| {
        hex_val(c).map(|v| (n << 4).wrapping_add(i64::from(v)))
    })
}

fn b64_value(c: u8, url: bool) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' if !url => Some(62),
        b'/' if !url => Some(63),
        b'-' if url => Some(62),
        b'_' if url => Some(63),
        _ => None,
    }
}

/// Appends the bytes of one group of up to four sextets (`n` of them
/// significant, 2 to 4). Bits past the last whole byte are ignored.
fn push_quad(out: &mut Vec<u8>, t: [u8; 4], n: usize) {
    let bytes = [
        t[0] << 2 | t[1] >> 4,
        t[1] << 4 | t[2] >> 2,
        t[2] << 6 | t[3],
    ];
    out.extend_from_slice(&bytes[..n - 1]);
}

/// `b64dec`, as HAProxy's `base64dec`: the length must be a multiple of
/// 4; in each group of 4, padding (`=`) may start at the 2nd, 3rd or 4th
/// position and then fills the group (so `A===` decodes to nothing and
/// padding in a middle group is accepted); unused trailing bits are
/// ignored.
pub(super) fn b64dec(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for q in s.chunks_exact(4) {
        let n = q.iter().position(|&c| c == b'=').unwrap_or(4);
        if n == 0 || q[n..].iter().any(|&c| c != b'=') {
            return None;
        }
        let mut t = [0u8; 4];
        for (i, &c) in q[..n].iter().enumerate() {
            t[i] = b64_value(c, false)?;
        }
        push_quad(&mut out, t, n);
    }
    Some(out)
}

/// `ub64dec`: base64url without padding (a length of 4k+1 is refused,
/// unused trailing bits are ignored). Unlike HAProxy, which decodes a `=`
/// into garbage here, up to two trailing `=` of a padded input are
/// accepted as padding.
pub(super) fn ub64dec(s: &[u8]) -> Option<Vec<u8>> {
    let mut s = s;
    if s.len().is_multiple_of(4) {
        for _ in 0..2 {
            if let [rest @ .., b'='] = s {
                s = rest;
            }
        }
    }
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 2);
    for q in s.chunks(4) {
        let mut t = [0u8; 4];
        for (i, &c) in q.iter().enumerate() {
            t[i] = b64_value(c, true)?;
        }
        push_quad(&mut out, t, q.len());
    }
    Some(out)
}
