//! Responses the proxy sends itself, as HAProxy 2.6 configures them:
//!
//! * the reply options of `http-request return|deny|tarpit`,
//!   `http-response return|deny` and `http-error`:
//!   `[status <code>] [content-type <type>] [default-errorfiles |
//!   errorfile <file> | errorfiles <name> | file <file> | lf-file <file> |
//!   string <str> | lf-string <fmt>] [hdr <name> <fmt>]*`
//!   ([`Reply::parse_options`], [`Reply::parse_deny`],
//!   [`Reply::parse_http_error`]);
//! * a proxy's error pages: `errorfile <code> <file>`,
//!   `errorloc|errorloc302|errorloc303 <code> <url>` and
//!   `errorfiles <name> [<code> ...]` ([`ErrorPages`]);
//! * `http-errors <name>` sections of `errorfile` lines
//!   ([`parse_http_errors_section`]).
//!
//! Files are read when the configuration is parsed, as HAProxy does (its
//! processes may chroot afterwards); relative paths are relative to the
//! working directory. Log-format strings (`lf-string`, `lf-file`, `hdr`
//! values) are kept raw for the caller to compile.
//!
//! At run time, when a reply's body is [`ReplyBody::DefaultError`], or an
//! error is generated, HAProxy looks for the page of the status in the
//! backend's error pages, then the frontend's, then uses its built-in page
//! ([`ErrorPages::lookup`]).

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::Arc;

/// The status codes HAProxy 2.6 generates itself and whose page can be
/// replaced (`http_err_codes[]` in HAProxy's `src/http.c`; the manual's
/// lists omit 421 and 422, which the code has).
pub const ERROR_CODES: [u16; 19] = [
    200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 421, 422, 425, 429, 500, 501, 502, 503, 504,
];

/// Whether `status` is one of [`ERROR_CODES`].
pub fn is_error_code(status: u16) -> bool {
    ERROR_CODES.contains(&status)
}

/// One `http-errors` section: status → raw response.
pub type HttpErrorsSection = HashMap<u16, Arc<[u8]>>;

/// `http-errors` sections by name.
pub type HttpErrorsSections = HashMap<String, HttpErrorsSection>;

/// What a reply sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// No payload option: a dummy response with the status,
    /// `content-length: 0` and the `hdr` headers. An empty `file` or
    /// `string` payload is this too.
    Empty,
    /// `default-errorfiles` (and `deny`/`tarpit` without payload options,
    /// or `errorfiles` naming a section without a page for the status):
    /// the proxy's error page for the status, see [`ErrorPages::lookup`].
    DefaultError,
    /// `errorfile <file>` or an `errorfiles <name>` page: a complete raw
    /// HTTP/1 response, sent as it is (its own status line wins over
    /// [`Reply::status`], which is the one logged). Empty (`/dev/null`):
    /// nothing is sent and the connection is closed.
    Raw(Arc<[u8]>),
    /// `file <file>`: the file is the body.
    File {
        /// The `content-type` option.
        content_type: String,
        /// The body.
        data: Arc<[u8]>,
    },
    /// `string <str>`: the string is the body.
    String {
        /// The `content-type` option.
        content_type: String,
        /// The body.
        data: Arc<[u8]>,
    },
    /// `lf-file <file>`: the file is a log-format string making the body.
    LfFile {
        /// The `content-type` option.
        content_type: String,
        /// The file's content, not compiled.
        fmt: String,
    },
    /// `lf-string <fmt>`: a log-format string making the body.
    LfString {
        /// The `content-type` option.
        content_type: String,
        /// The format, not compiled.
        fmt: String,
    },
}

/// A parsed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code (200 to 599).
    pub status: u16,
    /// The payload.
    pub body: ReplyBody,
    /// `hdr <name> <fmt>` options: name and raw log-format value, in order.
    /// HAProxy skips a header whose value renders empty. Always empty for
    /// [`ReplyBody::Raw`] and [`ReplyBody::DefaultError`]. `content-length`,
    /// `content-type` and `transfer-encoding` are never here (ignored with
    /// a warning).
    pub headers: Vec<(String, String)>,
    /// Warnings for the configuration's author (options ignored, payload
    /// eating into the rewrite reserve...).
    pub warnings: Vec<String>,
}

/// HAProxy parses numbers in these places with `atol()`: leading digits,
/// anything after them ignored, 0 when there are none.
fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -v
    } else {
        v
    }
}

/// A status code as given to `errorfile`, `errorloc*` and `errorfiles`:
/// it must be one HAProxy generates.
fn error_code_arg(s: &str) -> Result<u16, String> {
    let v = atol(s);
    u16::try_from(v)
        .ok()
        .filter(|&c| is_error_code(c))
        .ok_or_else(|| format!("status code '{v}' not handled."))
}

/// Reads `path`, at most `max_size` bytes (special files such as
/// `/dev/zero` are cut, not read forever).
fn read_limited(path: &str, max_size: usize) -> Result<Vec<u8>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("error opening file '{path}': {e}"))?;
    let mut data = Vec::new();
    file.take(max_size as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("error reading file '{path}': {e}"))?;
    if data.len() > max_size {
        let size = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or_else(|| format!("more than {max_size}"), |m| m.len().to_string());
        return Err(format!(
            "file '{path}' exceeds the buffer size ({size} > {max_size})"
        ));
    }
    Ok(data)
}

/// Checks that `raw` is a usable HTTP/1 response, as HAProxy 2.6 does when
/// it loads an error file: a parsable head; a final status (101 is let
/// through, as HAProxy does); no chunked encoding; no body for 204, 304 or
/// `content-length: 0`; a body exactly as long as `content-length` says.
/// Without `content-length` the body runs to the end. Empty is valid
/// (nothing is sent). Returns the status of the response.
pub fn validate_raw_response(raw: &[u8]) -> Result<Option<u16>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    let mut headers = [httparse::EMPTY_HEADER; 101];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err("unable to parse headers (incomplete response head)".into())
        }
        Err(e) => return Err(format!("unable to parse headers ({e})")),
    };
    let status = resp.code.unwrap_or(0);
    if status < 200 && status != 101 {
        return Err(format!(
            "invalid http status code for an error message ({status})"
        ));
    }
    let mut clen: Option<u64> = None;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let chunked = String::from_utf8_lossy(h.value)
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("chunked"));
            if chunked {
                return Err("chunk-encoded payload not supported".into());
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            for v in String::from_utf8_lossy(h.value).split(',') {
                let v = v.trim();
                let n = v
                    .parse::<u64>()
                    .ok()
                    .filter(|_| v.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| format!("invalid content-length '{v}'"))?;
                if clen.is_some_and(|c| c != n) {
                    return Err("conflicting content-length values".into());
                }
                clen = Some(n);
            }
        }
    }
    let body = (raw.len() - head_len) as u64;
    let bodyless = status == 204 || status == 304 || clen == Some(0);
    if bodyless && body > 0 {
        return Err("message payload not expected".into());
    }
    if let Some(c) = clen.filter(|_| status != 204 && status != 304) {
        if c != body {
            return Err(format!(
                "payload size does not match the announced content-length ({body} != {c})"
            ));
        }
    }
    Ok(Some(status))
}

/// Reads a raw HTTP response file (`errorfile`), at most `max_size` bytes
/// (tune.bufsize), and validates it (see [`validate_raw_response`]).
/// Errors name the file. No status check: see [`load_errorfile`].
pub fn read_errorfile(path: &str, max_size: usize) -> Result<Arc<[u8]>, String> {
    let data = read_limited(path, max_size)?;
    validate_raw_response(&data).map_err(|e| format!("'{path}': {e}"))?;
    Ok(data.into())
}

/// `errorfile <status> <path>`: `status` must be one of [`ERROR_CODES`]
/// (else "status code 'N' not handled.", HAProxy's wording), then as
/// [`read_errorfile`]. HAProxy 2.6 cuts a file larger than tune.bufsize
/// with a warning (and the cut file then usually fails validation); here
/// it is an error.
pub fn load_errorfile(path: &str, status: u16, max_size: usize) -> Result<Arc<[u8]>, String> {
    if !is_error_code(status) {
        return Err(format!("status code '{status}' not handled."));
    }
    read_errorfile(path, max_size)
}

/// The response of `errorloc302` (`redirect` = 302, also plain `errorloc`)
/// or `errorloc303` (303). HAProxy 2.6's `http_parse_errorloc()`
/// (src/http_htx.c) builds exactly `HTTP/1.1 302 Found`, `Cache-Control:
/// no-cache`, `Content-length: 0`, `Location: <url>` (303: `See Other`),
/// CRLF line ends and an empty line, in that order and case.
pub fn errorloc_response(redirect: u16, url: &str) -> Vec<u8> {
    let line = if redirect == 303 {
        "HTTP/1.1 303 See Other"
    } else {
        "HTTP/1.1 302 Found"
    };
    format!("{line}\r\nCache-Control: no-cache\r\nContent-length: 0\r\nLocation: {url}\r\n\r\n")
        .into_bytes()
}

/// Header names HAProxy ignores in `hdr` options: it sets them itself.
const IGNORED_HDRS: [&str; 3] = ["content-length", "transfer-encoding", "content-type"];

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The payload option seen, before the final checks.
enum Payload {
    None,
    DefaultErrorfiles,
    Errorfile(Arc<[u8]>),
    Errorfiles(String),
    File(Vec<u8>),
    String(Vec<u8>),
    Lf(String),
}

impl Reply {
    /// Parses reply options from `words` (the words after the action or
    /// keyword), in any order, up to the first word that is not an option
    /// (`if`, `unless`, or anything else: the caller rejects leftovers) or
    /// the end. Returns the reply and the number of words used.
    ///
    /// * `default_status`: the status without a `status` option (200 for
    ///   `return`); 0 means none, for [`Reply::parse_http_error`].
    /// * `allow_status`: when false, `status` is not an option here (it
    ///   ends the options like any unknown word).
    /// * `max_size`: tune.bufsize; larger files are refused.
    /// * `http_errors`: the `http-errors` sections, for `errorfiles`.
    ///
    /// The checks and messages are HAProxy 2.6's: `status` within 200..599;
    /// one payload option at most; `content-type` required with a non-empty
    /// `file`/`string` and with `lf-file`/`lf-string`, ignored (warning)
    /// otherwise; `hdr` ignored (warning) with `errorfile`, `errorfiles` and
    /// `default-errorfiles`; no body for 204 and 304; `errorfiles` and
    /// `default-errorfiles` only for [`ERROR_CODES`].
    pub fn parse_options(
        words: &[String],
        default_status: u16,
        allow_status: bool,
        max_size: usize,
        http_errors: &HttpErrorsSections,
    ) -> Result<(Reply, usize), String> {
        let mut status = default_status;
        let mut ctype: Option<String> = None;
        let mut payload = Payload::None;
        let mut act_arg: Option<&str> = None;
        let mut headers = Vec::new();
        let mut warnings = Vec::new();
        let arg = |i: usize, what: &str| -> Result<&str, String> {
            words
                .get(i + 1)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("'{}' expects {what} as argument", words[i]))
        };
        let mut i = 0;
        while i < words.len() {
            let w = words[i].as_str();
            match w {
                "status" if allow_status => {
                    let v = atol(arg(i, "<status_code>")?);
                    if !(200..=599).contains(&v) {
                        return Err(format!("Unexpected status code '{v}'"));
                    }
                    status = v as u16;
                    i += 2;
                }
                "content-type" => {
                    ctype = Some(arg(i, "<ctype>")?.to_string());
                    i += 2;
                }
                "default-errorfiles" | "errorfile" | "errorfiles" | "file" | "string"
                | "lf-file" | "lf-string" => {
                    if let Some(prev) = act_arg {
                        return Err(format!(
                            "unexpected '{w}' argument, '{prev}' already defined"
                        ));
                    }
                    act_arg = Some(w);
                    if w == "default-errorfiles" {
                        payload = Payload::DefaultErrorfiles;
                        i += 1;
                        continue;
                    }
                    let v = arg(
                        i,
                        match w {
                            "errorfiles" => "<name>",
                            "string" => "<str>",
                            "lf-string" => "<fmt>",
                            _ => "<file>",
                        },
                    )?;
                    payload =
                        match w {
                            "errorfile" => Payload::Errorfile(read_errorfile(v, max_size)?),
                            "errorfiles" => Payload::Errorfiles(v.to_string()),
                            "file" => Payload::File(read_limited(v, max_size)?),
                            "string" => Payload::String(v.as_bytes().to_vec()),
                            "lf-string" => Payload::Lf(v.to_string()),
                            _ => {
                                let data = read_limited(v, max_size)?;
                                Payload::Lf(String::from_utf8(data).map_err(|_| {
                                    format!("file '{v}' is not valid UTF-8 (lf-file)")
                                })?)
                            }
                        };
                    i += 2;
                }
                "hdr" => {
                    let (Some(name), Some(value)) = (words.get(i + 1), words.get(i + 2)) else {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    };
                    if name.is_empty() || value.is_empty() {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    }
                    if !is_token(name) {
                        return Err(format!("'hdr': invalid header name '{name}'"));
                    }
                    if IGNORED_HDRS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
                        warnings.push(format!("header '{name}' always ignored by the http reply."));
                    } else {
                        headers.push((name.clone(), value.clone()));
                    }
                    i += 3;
                }
                _ => break,
            }
        }

        let body = match payload {
            Payload::None => {
                if let Some(t) = &ctype {
                    warnings.push(format!(
                        "content-type '{t}' ignored by the http reply because neither errorfile nor payload defined."
                    ));
                }
                ReplyBody::Empty
            }
            Payload::DefaultErrorfiles | Payload::Errorfile(_) | Payload::Errorfiles(_) => {
                let what = act_arg.unwrap_or("errorfile");
                if !matches!(payload, Payload::Errorfile(_)) && !is_error_code(status) {
                    return Err(format!(
                        "status code '{status}' not handled by default with '{what}' argument."
                    ));
                }
                if let Some(t) = &ctype {
                    warnings.push(format!(
                        "content-type '{t}' ignored by the http reply when used with an errorfile."
                    ));
                }
                if !headers.is_empty() {
                    warnings.push(
                        "hdr parameters ignored by the http reply when used with an errorfile."
                            .into(),
                    );
                    headers.clear();
                }
                match payload {
                    Payload::Errorfile(raw) => ReplyBody::Raw(raw),
                    Payload::Errorfiles(name) => {
                        let section = http_errors.get(&name).ok_or_else(|| {
                            format!(
                                "unknown http-errors section '{name}' referenced by an http reply"
                            )
                        })?;
                        match section.get(&status) {
                            Some(raw) => ReplyBody::Raw(raw.clone()),
                            None => {
                                warnings.push(format!(
                                    "status '{status}' referenced by an http reply not declared in http-errors section '{name}'."
                                ));
                                ReplyBody::DefaultError
                            }
                        }
                    }
                    _ => ReplyBody::DefaultError,
                }
            }
            Payload::File(data) | Payload::String(data) => {
                let is_file = act_arg == Some("file");
                if data.is_empty() {
                    if let Some(t) = &ctype {
                        warnings.push(format!(
                            "content-type '{t}' ignored by the http reply when used with an empty payload."
                        ));
                    }
                    ReplyBody::Empty
                } else {
                    if status == 204 || status == 304 {
                        return Err(format!("No body expected for {status} responses"));
                    }
                    if data.len() > max_size {
                        return Err(format!(
                            "'string' payload exceeds the buffer size ({} > {max_size})",
                            data.len()
                        ));
                    }
                    let content_type = ctype.ok_or_else(|| {
                        "a content type must be defined when non-empty payload is configured"
                            .to_string()
                    })?;
                    let data: Arc<[u8]> = data.into();
                    if is_file {
                        ReplyBody::File { content_type, data }
                    } else {
                        ReplyBody::String { content_type, data }
                    }
                }
            }
            Payload::Lf(fmt) => {
                if status == 204 || status == 304 {
                    return Err(format!("No body expected for {status} responses"));
                }
                let content_type = ctype.ok_or_else(|| {
                    "a content type must be defined with a log-format payload".to_string()
                })?;
                if act_arg == Some("lf-file") {
                    ReplyBody::LfFile { content_type, fmt }
                } else {
                    ReplyBody::LfString { content_type, fmt }
                }
            }
        };
        Ok((
            Reply {
                status,
                body,
                headers,
                warnings,
            },
            i,
        ))
    }

    /// `deny`/`tarpit` options (`http-request deny`: default 403, `tarpit`:
    /// 500, `http-response deny`: 502). As HAProxy 2.6: with no option, or
    /// only `deny_status <code>`, the proxy's error page for the status is
    /// sent ([`ReplyBody::DefaultError`], the status being one of
    /// [`ERROR_CODES`]); otherwise `deny_status` in first place stands for
    /// `status` and the options are those of [`Reply::parse_options`].
    pub fn parse_deny(
        words: &[String],
        default_status: u16,
        max_size: usize,
        http_errors: &HttpErrorsSections,
    ) -> Result<(Reply, usize), String> {
        let is_end = |i: usize| words.get(i).is_none_or(|w| w == "if" || w == "unless");
        if is_end(0) {
            let words = ["default-errorfiles".to_string()];
            let (reply, _) =
                Self::parse_options(&words, default_status, true, max_size, http_errors)?;
            return Ok((reply, 0));
        }
        if words[0] == "deny_status" {
            if words.get(1).is_none_or(|v| v.is_empty()) {
                return Err("'deny_status' expects <status_code> as argument".into());
            }
            let mut w: Vec<String> = words.to_vec();
            w[0] = "status".into();
            if is_end(2) {
                let mut w: Vec<String> = w[..w.len().min(2)].to_vec();
                w.push("default-errorfiles".into());
                let (reply, _) =
                    Self::parse_options(&w, default_status, true, max_size, http_errors)?;
                return Ok((reply, 2));
            }
            return Self::parse_options(&w, default_status, true, max_size, http_errors);
        }
        Self::parse_options(words, default_status, true, max_size, http_errors)
    }

    /// `http-error status <code> [options]` (the words after `http-error`,
    /// all of them: a leftover word is an error). The status is required
    /// and must be one of [`ERROR_CODES`]. The result goes to the proxy's
    /// [`ErrorPages`] through [`ErrorPages::set_reply`]: a
    /// [`ReplyBody::DefaultError`] body resets the page to the default.
    pub fn parse_http_error(
        words: &[String],
        max_size: usize,
        http_errors: &HttpErrorsSections,
    ) -> Result<Reply, String> {
        let (reply, used) = Self::parse_options(words, 0, true, max_size, http_errors)?;
        if reply.status == 0 {
            return Err("expects at least a <status> as arguments.".into());
        }
        if !is_error_code(reply.status) {
            return Err(format!("status code '{}' not handled.", reply.status));
        }
        if let Some(w) = words.get(used) {
            return Err(format!("unknown keyword '{w}'."));
        }
        Ok(reply)
    }
}

/// A proxy's error pages (`errorfile`, `errorloc*`, `errorfiles`,
/// `http-error`), by status. A proxy starts with a copy of its `defaults`
/// section's pages; later lines replace earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorPages {
    pages: HashMap<u16, Reply>,
}

impl ErrorPages {
    /// No page: HAProxy's built-in ones apply.
    pub fn new() -> ErrorPages {
        ErrorPages::default()
    }

    /// Sets the page of `status` to a raw response.
    pub fn set(&mut self, status: u16, raw: Arc<[u8]>) {
        self.pages.insert(
            status,
            Reply {
                status,
                body: ReplyBody::Raw(raw),
                headers: Vec::new(),
                warnings: Vec::new(),
            },
        );
    }

    /// Sets the page of `reply.status` (`http-error`); a
    /// [`ReplyBody::DefaultError`] body removes it instead.
    pub fn set_reply(&mut self, mut reply: Reply) {
        if reply.body == ReplyBody::DefaultError {
            self.pages.remove(&reply.status);
        } else {
            reply.warnings.clear();
            self.pages.insert(reply.status, reply);
        }
    }

    /// Removes the page of `status`.
    pub fn remove(&mut self, status: u16) {
        self.pages.remove(&status);
    }

    /// The raw response for `status`, if its page is one.
    pub fn get(&self, status: u16) -> Option<&Arc<[u8]>> {
        match self.pages.get(&status).map(|r| &r.body) {
            Some(ReplyBody::Raw(raw)) => Some(raw),
            _ => None,
        }
    }

    /// The page of `status`, whatever its kind.
    pub fn reply(&self, status: u16) -> Option<&Reply> {
        self.pages.get(&status)
    }

    /// Whether no page is set.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The page for `status` as HAProxy 2.6 picks it: the backend's, else
    /// the frontend's; `None`: the built-in page.
    pub fn lookup<'a>(
        backend: &'a ErrorPages,
        frontend: &'a ErrorPages,
        status: u16,
    ) -> Option<&'a Reply> {
        backend.reply(status).or_else(|| frontend.reply(status))
    }

    /// `errorfiles <name> [<code> ...]` with a parsed section: imports its
    /// pages for `codes` (all of them when empty). Returns warnings for
    /// listed codes the section lacks.
    pub fn import(
        &mut self,
        name: &str,
        section: &HashMap<u16, Arc<[u8]>>,
        codes: &[u16],
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        let listed = !codes.is_empty();
        let codes = if listed { codes } else { &ERROR_CODES[..] };
        for &c in codes {
            match section.get(&c) {
                Some(raw) => self.set(c, raw.clone()),
                None if listed => warnings.push(format!(
                    "status '{c}' not declared in http-errors section '{name}'."
                )),
                None => {}
            }
        }
        warnings
    }

    /// Applies one proxy line if it is `errorfile`, `errorloc`,
    /// `errorloc302`, `errorloc303` or `errorfiles` (`words[0]`); `Ok(None)`
    /// for other keywords (`http-error` included: see
    /// [`Reply::parse_http_error`]). `Ok(Some(warnings))` when applied.
    /// Errors start with the keyword, as HAProxy's do.
    pub fn apply_line(
        &mut self,
        words: &[String],
        max_size: usize,
        http_errors: &HttpErrorsSections,
    ) -> Result<Option<Vec<String>>, String> {
        let Some(kw) = words.first().map(String::as_str) else {
            return Ok(None);
        };
        let arg = |i: usize| words.get(i).map(String::as_str).filter(|s| !s.is_empty());
        let mut warnings = Vec::new();
        match kw {
            "errorfile" => {
                let (Some(code), Some(file)) = (arg(1), arg(2)) else {
                    return Err(format!(
                        "{kw} : expects <status_code> and <file> as arguments."
                    ));
                };
                let status = error_code_arg(code).map_err(|e| format!("{kw} : {e}"))?;
                let raw = read_errorfile(file, max_size).map_err(|e| format!("{kw} : {e}"))?;
                self.set(status, raw);
                if words.len() > 3 {
                    warnings.push(format!("{kw} : extra arguments ignored."));
                }
            }
            "errorloc" | "errorloc302" | "errorloc303" => {
                let (Some(code), Some(url)) = (arg(1), arg(2)) else {
                    return Err(format!(
                        "{kw} : expects <status_code> and <url> as arguments."
                    ));
                };
                let status = error_code_arg(code).map_err(|e| format!("{kw} : {e}"))?;
                if url.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                    return Err(format!("{kw} : invalid character in <url>."));
                }
                let redirect = if kw == "errorloc303" { 303 } else { 302 };
                let raw = errorloc_response(redirect, url);
                validate_raw_response(&raw)
                    .map_err(|e| format!("{kw} : invalid error message: {e}"))?;
                self.set(status, raw.into());
                if words.len() > 3 {
                    warnings.push(format!("{kw} : extra arguments ignored."));
                }
            }
            "errorfiles" => {
                let Some(name) = arg(1) else {
                    return Err(format!("{kw} : expects <name> as argument."));
                };
                let codes = words[2..]
                    .iter()
                    .map(|c| error_code_arg(c).map_err(|e| format!("{kw} : {e}")))
                    .collect::<Result<Vec<u16>, String>>()?;
                let section = http_errors
                    .get(name)
                    .ok_or_else(|| format!("{kw} : unknown http-errors section '{name}'."))?;
                warnings = self.import(name, section, &codes);
            }
            _ => return Ok(None),
        }
        Ok(Some(warnings))
    }
}

/// Parses the lines of `http-errors <name>` (the section line itself not
/// included; `name` is only for messages): `errorfile <code> <file>` lines
/// (a later line for the same code wins). Errors carry line numbers.
pub fn parse_http_errors_section(
    name: &str,
    lines: &[(usize, Vec<String>)],
    max_size: usize,
) -> Result<HttpErrorsSection, Vec<(usize, String)>> {
    let mut pages = HashMap::new();
    let mut errors = Vec::new();
    for (line, words) in lines {
        let Some(kw) = words.first() else { continue };
        if kw != "errorfile" {
            errors.push((
                *line,
                format!("unknown keyword '{kw}' in 'http-errors' section '{name}'"),
            ));
            continue;
        }
        let res = match (words.get(1), words.get(2)) {
            (Some(code), Some(file)) if !code.is_empty() && !file.is_empty() => {
                error_code_arg(code).and_then(|status| {
                    read_errorfile(file, max_size).map(|raw| {
                        pages.insert(status, raw);
                    })
                })
            }
            _ => Err("expects <status_code> and <file> as arguments.".to_string()),
        };
        if let Err(e) = res {
            errors.push((*line, format!("errorfile : {e}")));
        }
    }
    if errors.is_empty() {
        Ok(pages)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests;
