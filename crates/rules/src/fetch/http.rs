//! Reading HTTP messages for fetches: the parts of a request target,
//! header values (split or whole), cookies and URL parameters.

use crate::sample::Sample;
use crate::txn::Msg;

/// The path of a request target: origin form up to `?`; for the absolute
/// form, the part after the authority (`/` when empty).
pub fn path_of(target: &[u8]) -> &[u8] {
    let t = strip_authority(target);
    match t.iter().position(|&b| b == b'?') {
        Some(i) => &t[..i],
        None => t,
    }
}

pub(super) fn pathq_of(target: &[u8]) -> &[u8] {
    strip_authority(target)
}

fn strip_authority(target: &[u8]) -> &[u8] {
    if target.first() == Some(&b'/') || target == b"*" {
        return target;
    }
    let Some(i) = target.windows(3).position(|w| w == b"://") else {
        return target;
    };
    let rest = &target[i + 3..];
    match rest.iter().position(|&b| b == b'/' || b == b'?') {
        Some(j) => &rest[j..],
        None => &rest[rest.len()..],
    }
}

/// The query string: what follows the first `?` (none without one).
pub fn query_of(target: &[u8]) -> Option<&[u8]> {
    target
        .iter()
        .position(|&b| b == b'?')
        .map(|i| &target[i + 1..])
}

pub(super) fn eq_ic(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The last value of a header (whole value).
pub fn last_header<'m>(m: &'m dyn Msg, name: &[u8]) -> Option<&'m [u8]> {
    (0..m.header_count())
        .rev()
        .map(|i| m.header(i))
        .find(|(n, _)| eq_ic(n, name))
        .map(|(_, v)| v)
}

/// Splits a header value on commas outside double quotes, trimming spaces.
pub fn split_values<'v>(v: &'v [u8], f: &mut dyn FnMut(&'v [u8]) -> bool) -> bool {
    let mut start = 0;
    let mut quoted = false;
    let mut i = 0;
    while i <= v.len() {
        let end = i == v.len();
        if !end {
            match v[i] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => i += 1,
                _ => {}
            }
        }
        if end || (v[i] == b',' && !quoted) {
            let part = trim(&v[start..i.min(v.len())]);
            if f(part) {
                return true;
            }
            start = i + 1;
        }
        i += 1;
    }
    false
}

pub(super) fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(s, |e| e + 1);
    &v[s..e.max(s)]
}

pub(super) fn each_header<'a>(
    m: &'a dyn Msg,
    name: &str,
    full: bool,
    f: &mut dyn FnMut(Sample<'a>) -> bool,
) -> bool {
    for i in 0..m.header_count() {
        let (n, v) = m.header(i);
        if !name.is_empty() && !eq_ic(n, name.as_bytes()) {
            continue;
        }
        if full {
            if f(Sample::str(v)) {
                return true;
            }
        } else if split_values(v, &mut |p| f(Sample::str(p))) {
            return true;
        }
    }
    false
}

pub(super) fn count_values(m: &dyn Msg, name: &str) -> i64 {
    let mut c = 0;
    each_header(m, name, false, &mut |_| {
        c += 1;
        false
    });
    c
}

/// Cookies named `name` in `Cookie` (or `Set-Cookie`, first pair only)
/// headers; an empty name matches the first cookie of each header.
pub(super) fn each_cookie<'a>(
    m: &'a dyn Msg,
    hdr: &[u8],
    name: &str,
    f: &mut dyn FnMut(Sample<'a>) -> bool,
) -> bool {
    let set = hdr == b"set-cookie";
    for i in 0..m.header_count() {
        let (n, v) = m.header(i);
        if !eq_ic(n, hdr) {
            continue;
        }
        for pair in v.split(|&b| b == b';') {
            let pair = trim(pair);
            let (k, val) = match pair.iter().position(|&b| b == b'=') {
                Some(p) => (trim(&pair[..p]), trim(&pair[p + 1..])),
                None => (pair, &b""[..]),
            };
            if (name.is_empty() || k == name.as_bytes()) && f(Sample::str(val)) {
                return true;
            }
            if set {
                break;
            }
        }
    }
    false
}

/// Calls `f` with each value of the URL parameter `name` (any parameter
/// when empty) until it returns true, as HAProxy's
/// `http_find_next_url_param`: the parameters start after the first
/// `delim` of the target, and '&', ';' and `delim` separate them; a
/// parameter without '=' has no value; with no name, each value starts
/// after the next '='.
pub(super) fn each_url_param<'a>(
    target: &'a [u8],
    name: &[u8],
    delim: u8,
    f: &mut dyn FnMut(Sample<'a>) -> bool,
) -> bool {
    let Some(start) = target.iter().position(|&b| b == delim) else {
        return false;
    };
    let list = &target[start + 1..];
    let is_delim = |b: &u8| *b == b'&' || *b == b';' || *b == delim;
    if name.is_empty() {
        let mut pos = 0;
        while let Some(eq) = list[pos..].iter().position(|&b| b == b'=') {
            let vstart = pos + eq + 1;
            let vend = list[vstart..]
                .iter()
                .position(is_delim)
                .map_or(list.len(), |i| vstart + i);
            if f(Sample::str(&list[vstart..vend])) {
                return true;
            }
            pos = vend;
        }
        return false;
    }
    for part in list.split(is_delim) {
        if let Some(v) = part
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(b"="))
        {
            if f(Sample::str(v)) {
                return true;
            }
        }
    }
    false
}
