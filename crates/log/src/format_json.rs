//! The JSON rendering of a log format (`option httplog-json` and
//! `log-format` with JSON output): one member per variable.

use super::*;

/// A JSON string; bytes `esc` selects are written as `#XX` first.
pub(super) fn json_str(out: &mut Vec<u8>, s: &[u8], esc: fn(u8) -> bool) {
    out.push(b'"');
    json_escape(out, s, esc);
    out.push(b'"');
}

/// The inside of a JSON string.
fn json_escape(out: &mut Vec<u8>, s: &[u8], esc: fn(u8) -> bool) {
    for &c in s {
        if esc(c) {
            out.push(b'#');
            hex_byte(out, c);
        } else if c == b'"' || c == b'\\' {
            out.push(b'\\');
            out.push(c);
        } else if c < 0x20 || c == 0x7f {
            out.extend_from_slice(b"\\u00");
            hex_byte(out, c);
        } else {
            out.push(c);
        }
    }
}

pub(super) fn json_opt(out: &mut Vec<u8>, s: Option<&[u8]>) {
    match s {
        Some(s) => json_str(out, s, |_| false),
        None => out.extend_from_slice(b"null"),
    }
}

pub(super) fn json_var(v: Var, r: &LogRecord, out: &mut Vec<u8>) {
    match v {
        Var::Ci | Var::Fi | Var::Bi | Var::Si => {
            let a = match v {
                Var::Ci => r.client,
                Var::Fi => r.frontend_addr,
                Var::Bi => r.backend_src,
                _ => r.server_addr,
            };
            match a {
                Some(a) => {
                    let mut buf = [0u8; 48];
                    let n = ip_text(a.ip(), &mut buf);
                    json_str(out, &buf[..n], |_| false);
                }
                None => out.extend_from_slice(b"null"),
            }
        }
        Var::Cp | Var::Fp | Var::Bp | Var::Sp => {
            let a = match v {
                Var::Cp => r.client,
                Var::Fp => r.frontend_addr,
                Var::Bp => r.backend_src,
                _ => r.server_addr,
            };
            match a {
                Some(a) => num(out, a.port().into()),
                None => out.extend_from_slice(b"null"),
            }
        }
        Var::T | Var::Tr | Var::Trg | Var::Trl | Var::TGmt | Var::Tl => {
            out.push(b'"');
            date(v, r, out);
            out.push(b'"');
        }
        Var::Ft => {
            out.push(b'"');
            json_escape(out, r.frontend.as_bytes(), |_| false);
            if r.tls {
                out.push(b'~');
            }
            out.push(b'"');
        }
        Var::F => json_str(out, r.frontend.as_bytes(), |_| false),
        Var::B => json_str(out, r.backend.as_bytes(), |_| false),
        Var::S => json_str(out, r.server.unwrap_or("<NOSRV>").as_bytes(), |_| false),
        Var::H => json_str(out, r.hostname.as_bytes(), |_| false),
        Var::Tsc | Var::TsShort | Var::Mode => {
            out.push(b'"');
            render_var(v, 0, r, out);
            out.push(b'"');
        }
        Var::Cc => json_opt(out, r.cookie_req.map(str::as_bytes)),
        Var::Cs => json_opt(out, r.cookie_resp.map(str::as_bytes)),
        Var::Id => json_opt(out, r.unique_id.map(str::as_bytes)),
        Var::Hr | Var::Hs => {
            let caps = if v == Var::Hr {
                r.req_captures
            } else {
                r.res_captures
            };
            if caps.is_empty() {
                out.extend_from_slice(b"null");
                return;
            }
            out.extend_from_slice(b"\"{");
            for (k, c) in caps.iter().enumerate() {
                if k > 0 {
                    out.push(b'|');
                }
                if let Some(c) = c {
                    json_escape(out, c, hdr_escaped);
                }
            }
            out.extend_from_slice(b"}\"");
        }
        Var::Hrl | Var::Hsl => {
            let caps = if v == Var::Hrl {
                r.req_captures
            } else {
                r.res_captures
            };
            out.push(b'[');
            for (k, c) in caps.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                match c {
                    Some(c) => json_str(out, c, hdr_escaped),
                    None => out.extend_from_slice(b"null"),
                }
            }
            out.push(b']');
        }
        Var::R | Var::Hm | Var::Hu | Var::Hp | Var::Hpo | Var::Hq | Var::Hv => {
            json_str(out, request_part(r, v).unwrap_or(BADREQ), url_escaped)
        }
        Var::Ta => num(out, r.ta()),
        Var::Tt => num(out, r.tt()),
        Var::Tu => num(out, r.tu()),
        Var::Bytes => time::pad(out, r.bytes_out, 1),
        Var::Rc => num(out, r.retries.into()),
        Var::Sslv | Var::Sslc | Var::SslFcSni => {
            let s = match v {
                Var::Sslv => r.ssl_version,
                Var::Sslc => r.ssl_cipher,
                _ => r.ssl_sni,
            };
            match s {
                Some(s) => json_str(out, s.as_bytes(), |_| false),
                None => out.extend_from_slice(b"null"),
            }
        }
        Var::SslFcErr
        | Var::SslCErr
        | Var::SslCCaErr
        | Var::SslCVerify
        | Var::SslFcIsResumed
        | Var::SslCUsed
            if r.ssl_version.is_none() =>
        {
            out.extend_from_slice(b"null")
        }
        // Every other variable is a plain number.
        _ => {
            render_var(v, 0, r, out);
        }
    }
}
