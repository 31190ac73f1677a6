//! Cookie persistence (`cookie <name> insert|rewrite|prefix ...`), as
//! HAProxy does it:
//! - the request's cookie designates a server (its `cookie` value; in
//!   prefix mode, the part before `~`);
//! - insert: the proxy adds `Set-Cookie: <name>=<server value>; path=/`
//!   when the client did not present the right value (with `nocache`, also
//!   `Cache-Control: private`); with `indirect`, the cookie is removed from
//!   requests sent to the server;
//! - rewrite: the server's own `Set-Cookie: <name>=...` gets the server's
//!   value;
//! - prefix: the server's cookie value gets `<server value>~` in front, and
//!   requests have it stripped before reaching the server;
//! - `maxidle` / `maxlife` (insert mode): the inserted value carries the
//!   dates of the last and first visits, `<server>|<last>|<first>` (seconds
//!   since the epoch, hexadecimal; Fairlead's own encoding, not HAProxy's
//!   base-32 dates). A cookie idle longer than `maxidle` or older than
//!   `maxlife` is ignored, so the request is balanced again and gets a new
//!   cookie; the last-visit date is refreshed once a quarter of `maxidle`
//!   has passed.

use fairlead_backend::{Backend, Server, ServerId};
use fairlead_config::{CookieConfig, CookieMode};
use fairlead_http::cookie::{
    append_header, cookie_in_value, edit_request_cookies, edit_set_cookies, request_cookie,
    set_cookie_value, RequestCookieEdit, SetCookieEdit, PREFIX_DELIMITER,
};
use fairlead_http::msg::Head;
use std::io::Write as _;

/// What the request said about persistence.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Persist {
    /// Server designated by the cookie.
    pub server: Option<ServerId>,
    /// The request carried our cookie at all.
    pub had_cookie: bool,
    /// Dates carried by the cookie (`maxidle`/`maxlife`): last, first.
    pub dates: Option<(u64, u64)>,
    /// `ignore-persist` matched: the cookie was not read and none is set.
    pub ignore: bool,
}

impl Persist {
    /// What an `ignore-persist` request gets: no cookie read, none set.
    pub(crate) fn ignored() -> Persist {
        Persist {
            ignore: true,
            ..Persist::default()
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn dated(cfg: &CookieConfig) -> bool {
    cfg.mode == CookieMode::Insert && (cfg.maxidle.is_some() || cfg.maxlife.is_some())
}

/// Splits `server|last|first`; `None` when the dates are missing or bad.
fn split_dates(v: &[u8]) -> Option<(&[u8], u64, u64)> {
    let mut it = v.split(|&b| b == b'|');
    let srv = it.next()?;
    let hex = |b: &[u8]| u64::from_str_radix(std::str::from_utf8(b).ok()?, 16).ok();
    let last = hex(it.next()?)?;
    let first = hex(it.next()?)?;
    Some((srv, last, first))
}

/// Reads the persistence cookie of a request.
pub(crate) fn lookup(cfg: &CookieConfig, be: &Backend, req: &[u8], head_len: usize) -> Persist {
    match request_cookie(req, head_len, &cfg.name) {
        Some(v) => from_value(cfg, be, v),
        None => Persist::default(),
    }
}

/// Reads the persistence cookie of a request head of the message model
/// (HTTP/2: its `cookie` fields may be split, RFC 9113 §8.2.3).
pub(crate) fn lookup_head(cfg: &CookieConfig, be: &Backend, head: &Head) -> Persist {
    let v = head.view(&[]);
    let found = v
        .headers()
        .filter(|(_, n, _)| n.eq_ignore_ascii_case(b"cookie"))
        .find_map(|(_, _, val)| cookie_in_value(val, &cfg.name));
    match found {
        Some(val) => from_value(cfg, be, val),
        None => Persist::default(),
    }
}

/// What the cookie's value says.
fn from_value(cfg: &CookieConfig, be: &Backend, v: &[u8]) -> Persist {
    let expired = Persist {
        server: None,
        had_cookie: true,
        dates: None,
        ignore: false,
    };
    let (v, dates) = match cfg.mode {
        CookieMode::Prefix => match v.iter().position(|&b| b == PREFIX_DELIMITER) {
            Some(d) => (&v[..d], None),
            None => return expired,
        },
        _ if dated(cfg) => {
            let Some((srv, last, first)) = split_dates(v) else {
                return expired;
            };
            let now = now_secs();
            let too_idle = cfg
                .maxidle
                .is_some_and(|m| now.saturating_sub(last) > m.as_secs());
            let too_old = cfg
                .maxlife
                .is_some_and(|m| now.saturating_sub(first) > m.as_secs());
            if too_idle || too_old {
                return expired;
            }
            (srv, Some((last, first)))
        }
        _ => (v, None),
    };
    Persist {
        server: be.server_by_cookie(v),
        had_cookie: true,
        dates,
        ignore: false,
    }
}

/// Edits the request head sent to the server.
pub(crate) fn edit_request(cfg: &CookieConfig, p: Persist, out: &mut Vec<u8>) {
    if !p.had_cookie {
        return;
    }
    match cfg.mode {
        CookieMode::Insert if cfg.indirect => {
            edit_request_cookies(out, &cfg.name, RequestCookieEdit::Remove)
        }
        CookieMode::Prefix => edit_request_cookies(out, &cfg.name, RequestCookieEdit::StripPrefix),
        _ => {}
    }
}

/// Insert mode: the Set-Cookie value to send (`name=value; path=/...`),
/// unless the client already holds a fresh cookie for `served`.
fn inserted(cfg: &CookieConfig, p: Persist, served: &Server, value: &str) -> Option<Vec<u8>> {
    let now = now_secs();
    let fresh = match (p.dates, cfg.maxidle) {
        // Refresh the last-visit date once a quarter of maxidle passed.
        (Some((last, _)), Some(idle)) => now.saturating_sub(last) < idle.as_secs() / 4,
        _ => true,
    };
    if p.server == Some(served.conf.id) && fresh {
        return None;
    }
    let mut line = Vec::with_capacity(64);
    let _ = write!(line, "{}={}", cfg.name, value);
    if dated(cfg) {
        let first = match p.dates {
            Some((_, first)) if p.server == Some(served.conf.id) => first,
            _ => now,
        };
        let _ = write!(line, "|{now:x}|{first:x}");
    }
    line.extend_from_slice(b"; path=/");
    for d in &cfg.domains {
        let _ = write!(line, "; domain={d}");
    }
    if cfg.httponly {
        line.extend_from_slice(b"; HttpOnly");
    }
    if cfg.secure {
        line.extend_from_slice(b"; Secure");
    }
    Some(line)
}

/// Edits the response head of the message model sent to the client
/// (HTTP/2), once the serving server is known: as [`edit_response`].
pub(crate) fn edit_response_head(
    cfg: &CookieConfig,
    p: Persist,
    served: &Server,
    res: &mut Head,
    buf: &[u8],
) {
    let Some(value) = served.conf.cookie.as_deref().filter(|_| !p.ignore) else {
        return;
    };
    let edit = match cfg.mode {
        CookieMode::Insert => {
            if let Some(v) = inserted(cfg, p, served, value) {
                res.append_field(b"set-cookie", &v);
                if cfg.nocache {
                    res.append_field(b"cache-control", b"private");
                }
            }
            return;
        }
        CookieMode::Rewrite => SetCookieEdit::Replace(value.as_bytes()),
        CookieMode::Prefix => SetCookieEdit::Prefix(value.as_bytes()),
    };
    let mut changes: Vec<(usize, Vec<u8>)> = Vec::new();
    for (slot, n, v) in res.view(buf).headers() {
        if !n.eq_ignore_ascii_case(b"set-cookie") {
            continue;
        }
        let Some((name, range)) = set_cookie_value(v) else {
            continue;
        };
        if name != cfg.name.as_bytes() {
            continue;
        }
        let mut new = v.to_vec();
        match edit {
            SetCookieEdit::Replace(x) => {
                new.splice(range, x.iter().copied());
            }
            SetCookieEdit::Prefix(x) => {
                let mut ins = x.to_vec();
                ins.push(PREFIX_DELIMITER);
                new.splice(range.start..range.start, ins);
            }
        }
        changes.push((slot, new));
    }
    let mut e = res.edit(buf);
    for (slot, new) in changes {
        let _ = e.replace_field_value(slot, &new);
    }
}

/// Edits the response head sent to the client, once the serving server is
/// known.
pub(crate) fn edit_response(cfg: &CookieConfig, p: Persist, served: &Server, out: &mut Vec<u8>) {
    let Some(value) = served.conf.cookie.as_deref().filter(|_| !p.ignore) else {
        return;
    };
    match cfg.mode {
        CookieMode::Insert => {
            let Some(v) = inserted(cfg, p, served, value) else {
                return;
            };
            let mut line = b"Set-Cookie: ".to_vec();
            line.extend_from_slice(&v);
            append_header(out, &line);
            if cfg.nocache {
                append_header(out, b"Cache-Control: private");
            }
        }
        CookieMode::Rewrite => {
            edit_set_cookies(out, &cfg.name, SetCookieEdit::Replace(value.as_bytes()));
        }
        CookieMode::Prefix => {
            edit_set_cookies(out, &cfg.name, SetCookieEdit::Prefix(value.as_bytes()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn backend() -> Backend {
        let mut cfg = fairlead_config::Backend::default();
        let mut s = fairlead_config::Server::new(
            "s1",
            fairlead_config::ServerAddr::Ip(([127, 0, 0, 1], 1).into()),
        );
        s.cookie = Some("c1".into());
        cfg.servers.push(s);
        let resolve = |a: &fairlead_config::ServerAddr| match a {
            fairlead_config::ServerAddr::Ip(a) => Ok(*a),
            _ => unreachable!(),
        };
        Backend::new(&cfg, &resolve, &mut 0, 1).unwrap()
    }

    fn cookie_cfg(maxidle: Option<u64>, maxlife: Option<u64>) -> CookieConfig {
        CookieConfig {
            mode: CookieMode::Insert,
            maxidle: maxidle.map(Duration::from_secs),
            maxlife: maxlife.map(Duration::from_secs),
            ..CookieConfig::new("SRV")
        }
    }

    fn req(cookie: &str) -> Vec<u8> {
        format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: SRV={cookie}\r\n\r\n").into_bytes()
    }

    #[test]
    fn dated_cookie_within_limits_persists() {
        let be = backend();
        let cfg = cookie_cfg(Some(600), Some(3600));
        let now = now_secs();
        let r = req(&format!("c1|{:x}|{:x}", now - 10, now - 100));
        assert_eq!(
            lookup(&cfg, &be, &r, r.len()).server,
            Some(be.servers()[0].conf.id)
        );
    }

    #[test]
    fn idle_or_old_cookie_is_ignored() {
        let be = backend();
        let cfg = cookie_cfg(Some(600), Some(3600));
        let now = now_secs();
        let idle = req(&format!("c1|{:x}|{:x}", now - 700, now - 700));
        assert_eq!(lookup(&cfg, &be, &idle, idle.len()).server, None);
        let old = req(&format!("c1|{:x}|{:x}", now - 10, now - 4000));
        assert_eq!(lookup(&cfg, &be, &old, old.len()).server, None);
        let undated = req("c1");
        assert_eq!(lookup(&cfg, &be, &undated, undated.len()).server, None);
    }

    #[test]
    fn inserted_cookie_carries_dates_and_is_not_resent_while_fresh() {
        let be = backend();
        let cfg = cookie_cfg(Some(600), None);
        let mut out = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        edit_response(&cfg, Persist::default(), &be.servers()[0], &mut out);
        let text = String::from_utf8(out).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("Set-Cookie: SRV=c1|"))
            .unwrap();
        let v = line
            .trim_start_matches("Set-Cookie: SRV=")
            .split(';')
            .next()
            .unwrap();
        let (srv, last, first) = split_dates(v.as_bytes()).unwrap();
        assert_eq!(srv, b"c1");
        assert_eq!(last, first);
        assert!(now_secs() - last < 5);
        let p = Persist {
            server: Some(be.servers()[0].conf.id),
            had_cookie: true,
            dates: Some((now_secs(), first)),
            ignore: false,
        };
        let mut out = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        edit_response(&cfg, p, &be.servers()[0], &mut out);
        assert!(!String::from_utf8(out).unwrap().contains("Set-Cookie"));
    }

    /// The message-model versions (HTTP/2 streams) read split `cookie`
    /// fields and edit `set-cookie` fields as the HTTP/1 ones edit text.
    #[test]
    fn head_lookup_and_response_edits() {
        let be = backend();
        let mut req = Head::default();
        req.start_request(b"GET", b"/", 20);
        req.append_field(b"cookie", b"a=1");
        req.append_field(b"cookie", b"b=2; SRV=c1");
        let cfg = CookieConfig::new("SRV");
        let p = lookup_head(&cfg, &be, &req);
        assert_eq!(
            (p.server, p.had_cookie),
            (Some(be.servers()[0].conf.id), true)
        );
        let servers = be.servers();
        let srv = &servers[0];
        let insert = CookieConfig {
            mode: CookieMode::Insert,
            nocache: true,
            ..CookieConfig::new("SRV")
        };
        let mut res = Head::default();
        res.start_response(200, None, 11);
        edit_response_head(&insert, Persist::default(), srv, &mut res, &[]);
        let v = res.view(&[]);
        assert_eq!(v.get_last(b"set-cookie"), Some(&b"SRV=c1; path=/"[..]));
        assert_eq!(v.get_last(b"cache-control"), Some(&b"private"[..]));
        // The client already holds it: nothing is added.
        let mut res = Head::default();
        res.start_response(200, None, 11);
        edit_response_head(&insert, p, srv, &mut res, &[]);
        assert!(!res.view(&[]).has(b"set-cookie"));
        for (mode, want) in [
            (CookieMode::Rewrite, &b"SRV=c1; Path=/x"[..]),
            (CookieMode::Prefix, &b"SRV=c1~app; Path=/x"[..]),
        ] {
            let cfg = CookieConfig {
                mode,
                ..CookieConfig::new("SRV")
            };
            let mut res = Head::default();
            res.start_response(200, None, 11);
            res.append_field(b"set-cookie", b"other=1");
            res.append_field(b"set-cookie", b"SRV=app; Path=/x");
            edit_response_head(&cfg, Persist::default(), srv, &mut res, &[]);
            let v = res.view(&[]);
            let all: Vec<&[u8]> = v.headers().map(|(_, _, v)| v).collect();
            assert_eq!(all, [&b"other=1"[..], want], "{mode:?}");
        }
    }
}
