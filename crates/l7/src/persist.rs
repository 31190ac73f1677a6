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
//!   requests have it stripped before reaching the server.

use fairlead_backend::Backend;
use fairlead_config::{CookieConfig, CookieMode};
use fairlead_http::cookie::{
    append_header, edit_request_cookies, edit_set_cookies, request_cookie, RequestCookieEdit,
    SetCookieEdit, PREFIX_DELIMITER,
};
use std::io::Write as _;

/// What the request said about persistence.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Persist {
    /// Server designated by the cookie.
    pub server: Option<usize>,
    /// The request carried our cookie at all.
    pub had_cookie: bool,
}

/// Reads the persistence cookie of a request.
pub(crate) fn lookup(cfg: &CookieConfig, be: &Backend, req: &[u8], head_len: usize) -> Persist {
    let Some(v) = request_cookie(req, head_len, &cfg.name) else {
        return Persist::default();
    };
    let v = match cfg.mode {
        CookieMode::Prefix => match v.iter().position(|&b| b == PREFIX_DELIMITER) {
            Some(d) => &v[..d],
            None => {
                return Persist {
                    server: None,
                    had_cookie: true,
                }
            }
        },
        _ => v,
    };
    Persist {
        server: be.server_by_cookie(v),
        had_cookie: true,
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

/// Edits the response head sent to the client, once the serving server is
/// known.
pub(crate) fn edit_response(
    cfg: &CookieConfig,
    p: Persist,
    be: &Backend,
    served: usize,
    out: &mut Vec<u8>,
) {
    let Some(value) = be.servers[served].cookie.as_deref() else {
        return;
    };
    match cfg.mode {
        CookieMode::Insert => {
            if p.server == Some(served) {
                return;
            }
            let mut line = Vec::with_capacity(64);
            let _ = write!(line, "Set-Cookie: {}={}; path=/", cfg.name, value);
            for d in &cfg.domains {
                let _ = write!(line, "; domain={d}");
            }
            if cfg.httponly {
                line.extend_from_slice(b"; HttpOnly");
            }
            if cfg.secure {
                line.extend_from_slice(b"; Secure");
            }
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
