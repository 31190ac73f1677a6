//! Redirects: the `redirect` keyword and `http-request redirect`.
//!
//! `redirect location|prefix|scheme <to> [code <c>] [drop-query]
//! [append-slash] [ignore-empty] [set-cookie <n>[=<v>]] [clear-cookie
//! <n>[=]]`; the code defaults to 302.

use crate::fmt::LogFmt;
use crate::txn::Txn;

/// What the target replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirKind {
    /// The whole `Location`.
    Location,
    /// A prefix before the request's path (and query).
    Prefix,
    /// A scheme before the request's Host and URI.
    Scheme,
}

/// A compiled redirect.
#[derive(Debug)]
pub struct Redirect {
    pub kind: RedirKind,
    pub target: LogFmt,
    pub code: u16,
    pub drop_query: bool,
    pub append_slash: bool,
    pub ignore_empty: bool,
    pub set_cookie: Option<String>,
    pub clear_cookie: Option<String>,
}

impl Redirect {
    /// Parses the words after `redirect` (up to `if`/`unless`). `lf`: the
    /// target is a log-format string (`http-request redirect`); the
    /// `redirect` keyword's target is literal text, as in HAProxy.
    pub fn parse(
        words: &[String],
        env: &crate::Env,
        usage: u8,
        lf: bool,
    ) -> Result<Redirect, String> {
        // The type (`location`, `prefix`, `scheme`) and the options may
        // come in any order, as in HAProxy.
        let mut kind_to: Option<(RedirKind, &String)> = None;
        let mut r = Redirect {
            kind: RedirKind::Location,
            target: LogFmt::default(),
            code: 302,
            drop_query: false,
            append_slash: false,
            ignore_empty: false,
            set_cookie: None,
            clear_cookie: None,
        };
        let mut i = 0;
        while i < words.len() {
            let arg = |i: usize| {
                words
                    .get(i + 1)
                    .cloned()
                    .ok_or_else(|| format!("'{}' expects an argument", words[i]))
            };
            match words[i].as_str() {
                k @ ("location" | "prefix" | "scheme") => {
                    let to = words
                        .get(i + 1)
                        .ok_or_else(|| format!("'{k}' expects an argument"))?;
                    let kind = match k {
                        "location" => RedirKind::Location,
                        "prefix" => RedirKind::Prefix,
                        _ => RedirKind::Scheme,
                    };
                    kind_to = Some((kind, to));
                    i += 1;
                }
                "code" => {
                    let c = arg(i)?;
                    r.code = c
                        .parse()
                        .ok()
                        .filter(|c| matches!(c, 301 | 302 | 303 | 307 | 308))
                        .ok_or_else(|| {
                            format!("unsupported HTTP code '{c}' (expects 301, 302, 303, 307 or 308)")
                        })?;
                    i += 1;
                }
                "drop-query" => r.drop_query = true,
                "append-slash" => r.append_slash = true,
                "ignore-empty" => r.ignore_empty = true,
                // One cookie per rule: the last option wins (HAProxy's
                // `http_parse_redirect_rule`).
                "set-cookie" => {
                    r.set_cookie = Some(arg(i)?);
                    r.clear_cookie = None;
                    i += 1;
                }
                "clear-cookie" => {
                    r.clear_cookie = Some(arg(i)?);
                    r.set_cookie = None;
                    i += 1;
                }
                o => {
                    return Err(format!(
                        "expects 'code', 'prefix', 'location', 'scheme', 'set-cookie', 'clear-cookie', 'drop-query', 'ignore-empty' or 'append-slash' (was '{o}')"
                    ))
                }
            }
            i += 1;
        }
        let Some((kind, to)) = kind_to else {
            return Err("expects 'location', 'prefix' or 'scheme'".into());
        };
        r.kind = kind;
        r.target = if lf {
            LogFmt::parse(to, env, usage, "redirect")?
        } else {
            LogFmt::literal(to)
        };
        Ok(r)
    }

    /// Builds the `Location` value; `None` when `ignore-empty` applies.
    pub fn location(&self, txn: &dyn Txn) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(64);
        self.target.render(txn, &mut out);
        if self.ignore_empty && out.is_empty() {
            return None;
        }
        let target = txn.req().map(|m| m.target()).unwrap_or(b"/");
        // The path of an absolute-form target starts after the authority.
        let path = crate::fetch::path_of(target);
        let query = crate::fetch::query_of(target);
        match self.kind {
            RedirKind::Location => return Some(out),
            RedirKind::Prefix => {
                // A prefix of "/" adds nothing (HAProxy).
                if out == b"/" {
                    out.clear();
                }
            }
            RedirKind::Scheme => {
                out.extend_from_slice(b"://");
                if let Some(h) = txn
                    .req()
                    .and_then(|m| crate::fetch::last_header(m, b"host"))
                {
                    out.extend_from_slice(h);
                }
            }
        }
        out.extend_from_slice(path);
        if !self.drop_query {
            if let Some(q) = query {
                out.push(b'?');
                out.extend_from_slice(q);
            }
        }
        // HAProxy appends the slash to the whole location, so after the
        // query string when it is kept (`http_apply_redirect_rule`).
        if self.append_slash && out.last().is_some_and(|&b| b != b'/') {
            out.push(b'/');
        }
        Some(out)
    }

    /// The whole HTTP/1.1 response for this redirect, as HAProxy builds
    /// it. `close` adds `Connection: close`.
    pub fn response(&self, location: &[u8], close: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + location.len());
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(self.code.to_string().as_bytes());
        out.push(b' ');
        out.extend_from_slice(reason(self.code).as_bytes());
        out.extend_from_slice(b"\r\ncontent-length: 0\r\nlocation: ");
        out.extend_from_slice(location);
        out.extend_from_slice(b"\r\n");
        // As HAProxy's `http_apply_redirect_rule`: the temporary codes are
        // not to be cached, and the cookie is written as given ("NAME"
        // and "NAME=" differ for browsers).
        if matches!(self.code, 302 | 303 | 307) {
            out.extend_from_slice(b"cache-control: no-cache\r\n");
        }
        if let Some(c) = &self.set_cookie {
            out.extend_from_slice(b"set-cookie: ");
            out.extend_from_slice(c.as_bytes());
            out.extend_from_slice(b"; path=/;\r\n");
        }
        if let Some(c) = &self.clear_cookie {
            out.extend_from_slice(b"set-cookie: ");
            out.extend_from_slice(c.as_bytes());
            out.extend_from_slice(b"; path=/; Max-Age=0;\r\n");
        }
        if close {
            out.extend_from_slice(b"connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// Reason phrases of the redirect codes.
pub fn reason(code: u16) -> &'static str {
    match code {
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        _ => "Redirect",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::Msg;

    struct Req;

    impl Msg for Req {
        fn method(&self) -> &[u8] {
            b"GET"
        }
        fn target(&self) -> &[u8] {
            b"/p?q=1"
        }
        fn version(&self) -> u8 {
            11
        }
        fn status(&self) -> u16 {
            0
        }
        fn header_count(&self) -> usize {
            1
        }
        fn header(&self, _: usize) -> (&[u8], &[u8]) {
            (b"host", b"example.com")
        }
    }

    impl Txn for Req {
        fn req(&self) -> Option<&dyn Msg> {
            Some(self)
        }
    }

    fn parse(s: &str, lf: bool) -> Redirect {
        let words: Vec<String> = s.split(' ').map(String::from).collect();
        let usage = crate::fetch::usage::HTTP_REQUEST;
        Redirect::parse(&words, &crate::Env::default(), usage, lf).unwrap()
    }

    /// Regression (checked against HAProxy 2.6.12): the `redirect`
    /// keyword's target is literal text; only `http-request redirect`
    /// reads it as a log-format string.
    #[test]
    fn keyword_target_is_literal() {
        let kw = parse("location /x%[path]", false);
        assert_eq!(kw.location(&Req).unwrap(), b"/x%[path]");
        let act = parse("location /x%[path]", true);
        assert_eq!(act.location(&Req).unwrap(), b"/x/p");
        let s = parse("scheme https", false);
        assert_eq!(s.location(&Req).unwrap(), b"https://example.com/p?q=1");
        let p = parse("prefix /new drop-query", false);
        assert_eq!(p.location(&Req).unwrap(), b"/new/p");
    }
}

/// Redirect responses, checked against HAProxy 2.6.12
/// (tests/scenarios/36_redirects.scn).
#[cfg(test)]
mod response_tests {
    use super::*;

    fn response(line: &str) -> String {
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        let usage = crate::fetch::usage::HTTP_REQUEST;
        let r = Redirect::parse(&words, &crate::Env::default(), usage, false).unwrap();
        String::from_utf8(r.response(b"/to", false)).unwrap()
    }

    struct Abs;

    impl crate::txn::Msg for Abs {
        fn method(&self) -> &[u8] {
            b"GET"
        }
        fn target(&self) -> &[u8] {
            b"http://example.com:8080/a/b?q=1"
        }
        fn version(&self) -> u8 {
            11
        }
        fn status(&self) -> u16 {
            0
        }
        fn header_count(&self) -> usize {
            1
        }
        fn header(&self, _: usize) -> (&[u8], &[u8]) {
            (b"host", b"example.com:8080")
        }
    }

    impl Txn for Abs {
        fn req(&self) -> Option<&dyn crate::txn::Msg> {
            Some(self)
        }
    }

    fn location(line: &str) -> String {
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        let usage = crate::fetch::usage::HTTP_REQUEST;
        let r = Redirect::parse(&words, &crate::Env::default(), usage, false).unwrap();
        String::from_utf8(r.location(&Abs).unwrap()).unwrap()
    }

    /// HAProxy 2.6.12 (tests/scenarios/36_redirects.scn): append-slash
    /// goes at the end of the location, after a kept query string; an
    /// absolute-form target contributes its path only.
    #[test]
    fn locations_as_haproxy() {
        assert_eq!(location("prefix / append-slash"), "/a/b?q=1/");
        assert_eq!(location("prefix / append-slash drop-query"), "/a/b/");
        assert_eq!(
            location("prefix https://n.example"),
            "https://n.example/a/b?q=1"
        );
        assert_eq!(
            location("scheme https drop-query"),
            "https://example.com:8080/a/b"
        );
    }

    #[test]
    fn cookies_and_cache_control_as_haproxy() {
        let r = response("location /to set-cookie SEEN=1");
        assert!(r.contains("\r\nset-cookie: SEEN=1; path=/;\r\n"), "{r}");
        assert!(r.contains("\r\ncache-control: no-cache\r\n"), "{r}");
        // A bare name stays bare.
        let r = response("location /to code 301 clear-cookie USERID");
        assert!(
            r.contains("\r\nset-cookie: USERID; path=/; Max-Age=0;\r\n"),
            "{r}"
        );
        assert!(!r.contains("cache-control"), "{r}");
        // One cookie per rule: the last option wins.
        let r = response("location /to set-cookie A=1 clear-cookie B=");
        assert_eq!(r.matches("set-cookie").count(), 1, "{r}");
        assert!(r.contains("set-cookie: B=; path=/; Max-Age=0;"), "{r}");
    }
}
