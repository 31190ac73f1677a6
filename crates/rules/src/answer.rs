//! Responses the proxy makes itself (`return`, `deny`, `tarpit`,
//! `http-error`): a [`Reply`] whose log-format parts are compiled, and
//! its HTTP/1 rendering.

use crate::fmt::LogFmt;
use crate::reply::{Reply, ReplyBody};
use crate::txn::Txn;
use std::io::Write as _;

/// A compiled reply.
#[derive(Debug)]
pub struct Answer {
    pub reply: Reply,
    /// The body, for `lf-string`/`lf-file`.
    body_fmt: Option<LogFmt>,
    /// `hdr <name> <fmt>` options.
    headers: Vec<(String, LogFmt)>,
    /// No payload option was given (`deny` alone): the proxy's error page
    /// for the status is used.
    pub is_default: bool,
    /// Counts as an error (`deny`, `tarpit`).
    pub is_error: bool,
}

impl Answer {
    /// Parses reply options (`[status <c>] [content-type <t>] [errorfile
    /// <f> | file <f> | lf-file <f> | string <s> | lf-string <s>] [hdr <n>
    /// <fmt>]*`). Returns the answer and the number of words used.
    pub fn parse(
        words: &[String],
        default_status: u16,
        allow_status: bool,
        max_size: usize,
        env: &crate::Env,
        usage: u8,
    ) -> Result<(Answer, usize), String> {
        let (reply, used) = if allow_status {
            Reply::parse_options(
                words,
                default_status,
                allow_status,
                max_size,
                &env.http_errors,
            )?
        } else {
            Reply::parse_deny(words, default_status, max_size, &env.http_errors)?
        };
        let compile = |s: &str| LogFmt::parse(s, env, usage, "return");
        let body_fmt = match &reply.body {
            ReplyBody::LfFile { fmt, .. } | ReplyBody::LfString { fmt, .. } => Some(compile(fmt)?),
            _ => None,
        };
        let headers = reply
            .headers
            .iter()
            .map(|(n, v)| Ok((n.clone(), compile(v)?)))
            .collect::<Result<Vec<_>, String>>()?;
        let is_default = reply.body == ReplyBody::DefaultError;
        Ok((
            Answer {
                reply,
                body_fmt,
                headers,
                is_default,
                is_error: false,
            },
            used,
        ))
    }

    /// The status this answer sends.
    pub fn status(&self) -> u16 {
        self.reply.status
    }

    pub fn set_status(&mut self, s: u16) {
        self.reply.status = s;
    }

    /// Renders the whole HTTP/1.1 response into `out`. `close` adds
    /// `connection: close`. A raw errorfile is sent as it is.
    pub fn render(&self, txn: &dyn Txn, close: bool, out: &mut Vec<u8>) {
        let status = self.reply.status;
        let (ctype, body): (Option<&str>, std::borrow::Cow<'_, [u8]>) = match &self.reply.body {
            ReplyBody::Raw(raw) => {
                out.extend_from_slice(raw);
                return;
            }
            ReplyBody::Empty | ReplyBody::DefaultError => {
                (None, std::borrow::Cow::Borrowed(&[][..]))
            }
            ReplyBody::File { content_type, data } | ReplyBody::String { content_type, data } => (
                Some(content_type.as_str()),
                std::borrow::Cow::Borrowed(&data[..]),
            ),
            ReplyBody::LfFile { content_type, .. } | ReplyBody::LfString { content_type, .. } => {
                let v = self
                    .body_fmt
                    .as_ref()
                    .map(|f| f.render_vec(txn))
                    .unwrap_or_default();
                (Some(content_type.as_str()), std::borrow::Cow::Owned(v))
            }
        };
        let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
        if let Some(t) = ctype {
            let _ = write!(out, "content-type: {t}\r\n");
        }
        let _ = write!(out, "content-length: {}\r\n", body.len());
        for (n, f) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            f.render(txn, out);
            out.extend_from_slice(b"\r\n");
        }
        if close {
            out.extend_from_slice(b"connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
    }
}

/// Reason phrases HAProxy uses.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Renders a reply that needs no stream (error pages set by `http-error`
/// with a `string` or `file` body; log-format parts render empty).
pub fn render_static(reply: &Reply, out: &mut Vec<u8>) {
    let status = reply.status;
    let (ctype, body): (Option<&str>, &[u8]) = match &reply.body {
        ReplyBody::Raw(raw) => {
            out.extend_from_slice(raw);
            return;
        }
        ReplyBody::Empty | ReplyBody::DefaultError => (None, &[]),
        ReplyBody::File { content_type, data } | ReplyBody::String { content_type, data } => {
            (Some(content_type.as_str()), &data[..])
        }
        ReplyBody::LfFile { content_type, .. } | ReplyBody::LfString { content_type, .. } => {
            (Some(content_type.as_str()), &[])
        }
    };
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    if let Some(t) = ctype {
        let _ = write!(out, "content-type: {t}\r\n");
    }
    let _ = write!(out, "content-length: {}\r\n", body.len());
    for (n, v) in &reply.headers {
        let _ = write!(out, "{n}: {v}\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}
