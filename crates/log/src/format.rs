//! The `log-format` language (configuration manual, section 8.2.6):
//! [`compile`] turns a format string into a [`LogFormat`], which renders a
//! [`LogRecord`] as HAProxy does, or as one JSON object.
//!
//! Syntax: `%var`, `%{flags}var` with flags `+Q`/`-Q` (quote strings),
//! `+X`/`-X` (hexadecimal IPs, ports, `%Ts`, `%ms`, `%pid`, `%rt`, `%lc`),
//! `+E`/`-E` (escape `"`, `\` and `]` with `\`), `+M`/`-M` (print `-` for
//! an empty string; on by default); `%o` applies its flags to every later
//! variable; `%%` is a verbatim `%`; spaces are separators, merged and
//! printed once (a variable that prints nothing, such as `%hr` without
//! captures, leaves no double space). `%[...]` renders the TLS sample
//! fetches of `option httpslog` and the client certificate's itself
//! (`ssl_fc_sni`, `ssl_fc_is_resumed`, `ssl_c_used`, `ssl_c_verify`,
//! `fc_err`, `ssl_fc_err[,hex]`, ...); any other sample expression is
//! kept as text ([`LogFormat::samples`]) for the proxy to compile with
//! its rule engine and evaluate per log line, and prints the value the
//! proxy put in [`LogRecord::samples`].
//!
//! Rendering never allocates: it only grows the output vector.

use std::net::{IpAddr, SocketAddr};

use crate::record::LogRecord;
use crate::time::{self, Civil};

/// `option httplog`, byte-compatible with HAProxy 2.6.
pub const HTTPLOG_FORMAT: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r";

/// `option httpslog` (HAProxy 2.6): httplog plus the connection's error
/// codes, resumption, SNI, TLS version and cipher.
pub const HTTPSLOG_FORMAT: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r %[fc_err]/%[ssl_fc_err,hex]/%[ssl_c_err]/%[ssl_c_ca_err]/%[ssl_fc_is_resumed] %[ssl_fc_sni]/%sslv/%sslc";

/// `option httplog clf`.
pub const HTTPLOG_CLF: &str = "%{+Q}o %{-Q}ci - - [%trg] %r %ST %B \"\" \"\" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc %bc %sc %rc %sq %bq %CC %CS %hrl %hsl";

/// `option tcplog`.
pub const TCPLOG_FORMAT: &str =
    "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq";

/// The format used without any log option, emitted when a connection is
/// accepted: `Connect from 10.0.1.2:33312 to 10.0.3.31:8012 (www/HTTP)`.
/// `%{mode}` is not a log-format variable; [`LogFormat::connect`] builds
/// this format.
pub const DEFAULT_FORMAT: &str = "Connect from %ci:%cp to %fi:%fp (%f/%{mode})";

const F_QUOTE: u8 = 1;
const F_HEX: u8 = 2;
const F_ESC: u8 = 4;
const F_MANDATORY: u8 = 8;

/// One log-format variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    Ci,
    Cp,
    Fi,
    Fp,
    Bi,
    Bp,
    Si,
    Sp,
    T,
    Tr,
    Trg,
    Trl,
    TGmt,
    Tl,
    Ts,
    Ms,
    Ft,
    F,
    B,
    S,
    TR,
    Tw,
    Tc,
    Trs,
    Ta,
    Tt,
    Th,
    Ti,
    Tq,
    Td,
    Tu,
    St,
    Bytes,
    Up,
    Cc,
    Cs,
    Tsc,
    TsShort,
    Ac,
    Fc,
    Bc,
    Sc,
    Rc,
    Sq,
    Bq,
    Hr,
    Hs,
    Hrl,
    Hsl,
    R,
    Hm,
    Hu,
    Hp,
    Hpo,
    Hq,
    Hv,
    Id,
    Pid,
    Sslv,
    Sslc,
    // Sample fetches (`%[name]`), the TLS ones `option httpslog` uses.
    FcErr,
    SslFc,
    SslFcErr,
    SslCErr,
    SslCCaErr,
    SslFcIsResumed,
    SslFcSni,
    SslCUsed,
    SslCVerify,
    H,
    Rt,
    Lc,
    /// Only in [`LogFormat::connect`]: `HTTP` or `TCP`.
    Mode,
}

/// Name, variable, HTTP-only (the `H` restriction of the manual's table).
const VARS: &[(&str, Var, bool)] = &[
    ("ci", Var::Ci, false),
    ("cp", Var::Cp, false),
    ("fi", Var::Fi, false),
    ("fp", Var::Fp, false),
    ("bi", Var::Bi, false),
    ("bp", Var::Bp, false),
    ("si", Var::Si, false),
    ("sp", Var::Sp, false),
    ("t", Var::T, false),
    ("tr", Var::Tr, true),
    ("trg", Var::Trg, true),
    ("trl", Var::Trl, true),
    ("T", Var::TGmt, false),
    ("Tl", Var::Tl, false),
    ("Ts", Var::Ts, false),
    ("ms", Var::Ms, false),
    ("ft", Var::Ft, false),
    ("f", Var::F, false),
    ("b", Var::B, false),
    ("s", Var::S, false),
    ("TR", Var::TR, true),
    ("Tw", Var::Tw, false),
    ("Tc", Var::Tc, false),
    ("Tr", Var::Trs, true),
    ("Ta", Var::Ta, true),
    ("Tt", Var::Tt, false),
    ("Th", Var::Th, false),
    ("Ti", Var::Ti, true),
    ("Tq", Var::Tq, true),
    ("Td", Var::Td, false),
    ("Tu", Var::Tu, false),
    ("ST", Var::St, false),
    ("B", Var::Bytes, false),
    ("U", Var::Up, false),
    ("CC", Var::Cc, true),
    ("CS", Var::Cs, true),
    ("tsc", Var::Tsc, true),
    ("ts", Var::TsShort, false),
    ("ac", Var::Ac, false),
    ("fc", Var::Fc, false),
    ("bc", Var::Bc, false),
    ("sc", Var::Sc, false),
    ("rc", Var::Rc, false),
    ("sq", Var::Sq, false),
    ("bq", Var::Bq, false),
    ("hr", Var::Hr, false),
    ("hs", Var::Hs, false),
    ("hrl", Var::Hrl, false),
    ("hsl", Var::Hsl, false),
    ("r", Var::R, true),
    ("HM", Var::Hm, true),
    ("HU", Var::Hu, true),
    ("HP", Var::Hp, true),
    ("HPO", Var::Hpo, true),
    ("HQ", Var::Hq, true),
    ("HV", Var::Hv, true),
    ("ID", Var::Id, false),
    ("pid", Var::Pid, false),
    ("sslv", Var::Sslv, false),
    ("sslc", Var::Sslc, false),
    ("H", Var::H, false),
    ("rt", Var::Rt, false),
    ("lc", Var::Lc, false),
];

/// The sample fetches `%[...]` accepts, a TLS subset: what `option
/// httpslog` logs and the client certificate's result. A failed or
/// missing sample prints `-`, as in HAProxy.
const FETCHES: &[(&str, Var)] = &[
    ("fc_err", Var::FcErr),
    ("ssl_fc", Var::SslFc),
    ("ssl_fc_err", Var::SslFcErr),
    ("ssl_c_err", Var::SslCErr),
    ("ssl_c_ca_err", Var::SslCCaErr),
    ("ssl_fc_is_resumed", Var::SslFcIsResumed),
    ("ssl_fc_sni", Var::SslFcSni),
    ("ssl_c_used", Var::SslCUsed),
    ("ssl_c_verify", Var::SslCVerify),
];

/// Variables HAProxy knows that Fairlead does not provide yet.
const NOT_YET: &[&str] = &[];

fn var_name(v: Var) -> &'static str {
    if v == Var::Mode {
        return "mode";
    }
    if let Some((n, _)) = FETCHES.iter().find(|(_, x)| *x == v) {
        return n;
    }
    VARS.iter()
        .find(|(_, x, _)| *x == v)
        .map_or("?", |(n, _, _)| n)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    Sep,
    Var(Var, u8),
    /// A sample expression the proxy evaluates: the index in
    /// [`LogFormat::samples`] and [`LogRecord::samples`].
    Sample(usize, u8),
}

/// A compiled log format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFormat {
    nodes: Vec<Node>,
    source: String,
    samples: Vec<String>,
    /// Which connection addresses the format prints ([`ADDR_FRONT`], ...).
    addrs: u8,
}

/// `%fi`/`%fp` are used.
const ADDR_FRONT: u8 = 1;
/// `%bi`/`%bp` are used.
const ADDR_BACK_SRC: u8 = 2;
/// `%si`/`%sp` are used.
const ADDR_SERVER: u8 = 4;

/// The address bits a list of nodes needs.
fn addr_bits(nodes: &[Node]) -> u8 {
    nodes.iter().fold(0, |acc, n| {
        acc | match n {
            Node::Var(Var::Fi | Var::Fp, _) => ADDR_FRONT,
            Node::Var(Var::Bi | Var::Bp, _) => ADDR_BACK_SRC,
            Node::Var(Var::Si | Var::Sp, _) => ADDR_SERVER,
            _ => 0,
        }
    })
}

/// Compiles a `log-format` string (spaces already unescaped by the
/// configuration lexer). Errors name the offending variable or flag.
pub fn compile(fmt: &str) -> Result<LogFormat, String> {
    compile_as(fmt, true)
}

/// Compiles a `unique-id-format` string: the same language, but as
/// HAProxy builds ids, an empty or missing value prints nothing (not `-`)
/// unless `+M` asks.
pub fn compile_unique_id(fmt: &str) -> Result<LogFormat, String> {
    compile_as(fmt, false)
}

fn compile_as(fmt: &str, log_line: bool) -> Result<LogFormat, String> {
    let b = fmt.as_bytes();
    let mut nodes = Vec::new();
    let mut samples: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut defaults = if log_line { F_MANDATORY } else { 0 };
    let mut i = 0;
    let flush = |text: &mut String, nodes: &mut Vec<Node>| {
        if !text.is_empty() {
            nodes.push(Node::Text(std::mem::take(text)));
        }
    };
    while i < b.len() {
        match b[i] {
            b' ' => {
                flush(&mut text, &mut nodes);
                while i < b.len() && b[i] == b' ' {
                    i += 1;
                }
                nodes.push(Node::Sep);
            }
            b'%' => {
                i += 1;
                if b.get(i) == Some(&b'%') {
                    text.push('%');
                    i += 1;
                    continue;
                }
                flush(&mut text, &mut nodes);
                let mut flags = defaults;
                if b.get(i) == Some(&b'{') {
                    let end = fmt[i..]
                        .find('}')
                        .ok_or_else(|| format!("missing '}}' after '%{{' in '{fmt}'"))?;
                    flags = parse_flags(&fmt[i + 1..i + end], flags)?;
                    i += end + 1;
                }
                if b.get(i) == Some(&b'[') {
                    let end = find_close(&fmt[i..])
                        .ok_or_else(|| format!("missing ']' after '%[' in '{fmt}'"))?;
                    let expr = fmt[i + 1..i + end].trim();
                    if expr.is_empty() {
                        return Err(format!("empty sample expression '%[]' in '{fmt}'"));
                    }
                    // The TLS fetches, alone or with `hex` (a zero prints
                    // the same either way), are rendered here; anything
                    // else is the proxy's to evaluate.
                    let (name, conv) = match expr.split_once(',') {
                        Some((n, c)) => (n.trim(), Some(c.trim())),
                        None => (expr, None),
                    };
                    let tls = FETCHES.iter().find(|(n, _)| *n == name);
                    match tls {
                        Some((_, v)) if conv.is_none_or(|c| c == "hex") => {
                            nodes.push(Node::Var(*v, flags));
                        }
                        _ => {
                            nodes.push(Node::Sample(samples.len(), flags));
                            samples.push(expr.to_string());
                        }
                    }
                    i += end + 1;
                    continue;
                }
                let start = i;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                let name = &fmt[start..i];
                if name.is_empty() {
                    return Err(format!(
                        "'%' must be followed by a variable name, '{{flags}}', '[' or '%' (in '{fmt}'). If you wanted to emit the '%' character verbatim, you need to use '%%'"
                    ));
                }
                if name == "o" {
                    defaults = flags;
                    continue;
                }
                if NOT_YET.contains(&name) {
                    return Err(format!(
                        "format variable '{name}' (TLS) is not implemented yet in Fairlead"
                    ));
                }
                let Some((_, v, _)) = VARS.iter().find(|(n, _, _)| *n == name) else {
                    return Err(format!(
                        "no such format variable '{name}'. If you wanted to emit the '%' character verbatim, you need to use '%%'"
                    ));
                };
                nodes.push(Node::Var(*v, flags));
            }
            _ => {
                let start = i;
                while i < b.len() && b[i] != b' ' && b[i] != b'%' {
                    i += 1;
                }
                text.push_str(&fmt[start..i]);
            }
        }
    }
    flush(&mut text, &mut nodes);
    let addrs = addr_bits(&nodes);
    Ok(LogFormat {
        nodes,
        source: fmt.to_string(),
        samples,
        addrs,
    })
}

/// The index of the `]` that closes the `[` at `s[0]`, counting nested
/// brackets (`%[req.hdr(x),regsub([a],b)]`).
fn find_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_flags(s: &str, mut flags: u8) -> Result<u8, String> {
    for f in s.split(',').filter(|f| !f.is_empty()) {
        let (add, name) = match f.as_bytes()[0] {
            b'+' => (true, &f[1..]),
            b'-' => (false, &f[1..]),
            _ => {
                return Err(format!(
                    "flag '{f}' must be prefixed with '+' or '-' (flags are Q, X, E and M)"
                ))
            }
        };
        let bit = match name {
            "Q" => F_QUOTE,
            "X" => F_HEX,
            "E" => F_ESC,
            "M" => F_MANDATORY,
            _ => {
                return Err(format!(
                    "unknown log-format flag '{name}' (expected Q, X, E or M)"
                ))
            }
        };
        if add {
            flags |= bit;
        } else {
            flags &= !bit;
        }
    }
    Ok(flags)
}

/// Bytes printed as `#XX` in `%r` and its parts: non-printable, `"`, `#`.
fn url_escaped(c: u8) -> bool {
    !(32..127).contains(&c) || c == b'"' || c == b'#'
}

/// Bytes printed as `#XX` in captured headers: as above plus `{|}`.
fn hdr_escaped(c: u8) -> bool {
    url_escaped(c) || matches!(c, b'{' | b'|' | b'}')
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn hex_byte(out: &mut Vec<u8>, c: u8) {
    out.push(HEX[usize::from(c >> 4)]);
    out.push(HEX[usize::from(c & 15)]);
}

/// Writes `n` in upper-case hexadecimal, at least `width` digits.
fn hex(out: &mut Vec<u8>, n: u64, width: usize) {
    let digits = (64 - n.leading_zeros() as usize).div_ceil(4);
    for k in (0..digits.max(width)).rev() {
        out.push(HEX[((n >> (4 * k)) & 15) as usize]);
    }
}

fn num(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    time::pad(out, n.unsigned_abs(), 1);
}

/// A string field (`lf_text` semantics): quotes with Q, `\`-escapes with
/// E, `-` when empty unless quoted.
fn text(out: &mut Vec<u8>, s: Option<&[u8]>, flags: u8) {
    if flags & F_QUOTE != 0 {
        out.push(b'"');
    }
    match s {
        Some(s) if !s.is_empty() => {
            if flags & F_ESC != 0 {
                for &c in s {
                    if matches!(c, b'"' | b'\\' | b']') {
                        out.push(b'\\');
                    }
                    out.push(c);
                }
            } else {
                out.extend_from_slice(s);
            }
        }
        _ if flags & (F_QUOTE | F_MANDATORY) == F_MANDATORY => out.push(b'-'),
        _ => {}
    }
    if flags & F_QUOTE != 0 {
        out.push(b'"');
    }
}

/// An encoded string: `#XX` for the bytes `esc` selects, E escapes.
fn encoded(out: &mut Vec<u8>, s: &[u8], esc: fn(u8) -> bool, flags: u8) {
    for &c in s {
        if esc(c) {
            out.push(b'#');
            hex_byte(out, c);
        } else {
            if flags & F_ESC != 0 && matches!(c, b'"' | b'\\' | b']') {
                out.push(b'\\');
            }
            out.push(c);
        }
    }
}

fn ip_text(ip: IpAddr, buf: &mut [u8; 48]) -> usize {
    use std::io::Write;
    let mut c = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(c, "{ip}");
    c.position() as usize
}

fn ip(out: &mut Vec<u8>, a: Option<SocketAddr>, flags: u8) {
    let Some(a) = a else {
        return text(out, None, flags);
    };
    if flags & F_HEX != 0 {
        match a.ip() {
            IpAddr::V4(v4) => v4.octets().iter().for_each(|&o| hex_byte(out, o)),
            IpAddr::V6(v6) => v6.octets().iter().for_each(|&o| hex_byte(out, o)),
        }
        return;
    }
    let mut buf = [0u8; 48];
    let n = ip_text(a.ip(), &mut buf);
    text(out, Some(&buf[..n]), flags);
}

fn port(out: &mut Vec<u8>, a: Option<SocketAddr>, flags: u8) {
    match a {
        None => text(out, None, flags),
        Some(a) if flags & F_HEX != 0 => hex(out, a.port().into(), 4),
        Some(a) => num(out, a.port().into()),
    }
}

/// The parts of a request line HAProxy cuts out for `%HM` ... `%HV`.
struct ReqParts<'a> {
    method: &'a [u8],
    uri: &'a [u8],
    version: &'a [u8],
}

fn split_request(line: &[u8]) -> ReqParts<'_> {
    let sp = |c: &u8| *c == b' ' || *c == b'\t';
    let mut it = line.split(sp).filter(|w| !w.is_empty());
    let method = it.next().unwrap_or(b"");
    let uri = it.next().unwrap_or(b"");
    let version = it.next().unwrap_or(b"");
    ReqParts {
        method,
        uri,
        version,
    }
}

fn path_of(uri: &[u8]) -> &[u8] {
    let end = uri.iter().position(|&c| c == b'?').unwrap_or(uri.len());
    &uri[..end]
}

fn path_only(uri: &[u8]) -> &[u8] {
    let p = path_of(uri);
    if p.first() == Some(&b'/') {
        return p;
    }
    // Absolute form: skip "scheme://authority".
    match p.windows(3).position(|w| w == b"://") {
        Some(k) => {
            let rest = &p[k + 3..];
            rest.iter()
                .position(|&c| c == b'/')
                .map_or(&b""[..], |s| &rest[s..])
        }
        None => p,
    }
}

fn query_of(uri: &[u8]) -> &[u8] {
    uri.iter()
        .position(|&c| c == b'?')
        .map_or(&b""[..], |q| &uri[q..])
}

const BADREQ: &[u8] = b"<BADREQ>";

/// Writes a part of the request (`%r`, `%HU`, ...), quoted with Q.
fn req_part(out: &mut Vec<u8>, part: Option<&[u8]>, flags: u8) {
    let q = flags & F_QUOTE != 0;
    if q {
        out.push(b'"');
    }
    encoded(out, part.unwrap_or(BADREQ), url_escaped, flags);
    if q {
        out.push(b'"');
    }
}

fn request_part<'a>(r: &LogRecord<'a>, v: Var) -> Option<&'a [u8]> {
    let line = r.request_line?;
    let p = split_request(line);
    Some(match v {
        Var::R => line,
        Var::Hm => p.method,
        Var::Hu => p.uri,
        Var::Hp => path_of(p.uri),
        Var::Hpo => path_only(p.uri),
        Var::Hq => query_of(p.uri),
        _ => p.version,
    })
}

impl LogFormat {
    /// The default format (no log option): `Connect from <ci>:<cp> to
    /// <fi>:<fp> (<frontend>/<HTTP|TCP>)`, emitted at accept time.
    pub fn connect() -> LogFormat {
        let mut f = compile("Connect from %ci:%cp to %fi:%fp (%f/").unwrap_or_else(|_| LogFormat {
            nodes: Vec::new(),
            source: String::new(),
            samples: Vec::new(),
            addrs: 0,
        });
        f.nodes.push(Node::Var(Var::Mode, F_MANDATORY));
        f.nodes.push(Node::Text(")".into()));
        f.source = DEFAULT_FORMAT.to_string();
        f
    }

    /// True when the format prints `%fi` or `%fp`: the proxy should fill
    /// [`LogRecord::frontend_addr`] (a `getsockname` it can skip otherwise).
    pub fn uses_frontend_addr(&self) -> bool {
        self.addrs & ADDR_FRONT != 0
    }

    /// True when the format prints `%bi` or `%bp`
    /// ([`LogRecord::backend_src`]).
    pub fn uses_backend_src(&self) -> bool {
        self.addrs & ADDR_BACK_SRC != 0
    }

    /// True when the format prints `%si` or `%sp`
    /// ([`LogRecord::server_addr`]).
    pub fn uses_server_addr(&self) -> bool {
        self.addrs & ADDR_SERVER != 0
    }

    /// The string this format was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The sample expressions (`%[...]` without the brackets, in order)
    /// the proxy must evaluate for each line and pass in
    /// [`LogRecord::samples`], at the same positions. The TLS fetches
    /// this crate renders itself are not among them.
    pub fn samples(&self) -> &[String] {
        &self.samples
    }

    /// The first variable that only exists in HTTP mode (HAProxy rejects
    /// those in a TCP proxy: "format variable 'r' is reserved for HTTP
    /// mode").
    pub fn http_only_var(&self) -> Option<&'static str> {
        self.nodes.iter().find_map(|n| match n {
            Node::Var(v, _) => VARS
                .iter()
                .find(|(_, x, h)| x == v && *h)
                .map(|(n, _, _)| *n),
            _ => None,
        })
    }

    /// Appends one log line (without a line feed) to `out`.
    pub fn render(&self, r: &LogRecord, out: &mut Vec<u8>) {
        let mut last_space = true;
        for n in &self.nodes {
            match n {
                Node::Sep => {
                    if !last_space {
                        out.push(b' ');
                        last_space = true;
                    }
                }
                Node::Text(t) => {
                    out.extend_from_slice(t.as_bytes());
                    last_space = false;
                }
                Node::Var(v, flags) => {
                    if render_var(*v, *flags, r, out) {
                        last_space = false;
                    }
                }
                Node::Sample(k, flags) => {
                    text(out, r.samples.get(*k).copied().flatten(), *flags);
                    last_space = false;
                }
            }
        }
    }

    /// Appends one JSON object (without a line feed) to `out`: one member
    /// per variable of the format, in order, keyed by the variable's name
    /// without `%` (`"ci"`, `"TR"`, `"Tr"`, `"tsc"`, `"r"`, ...). Literal
    /// text and flags are ignored; a variable used twice appears once.
    /// Numbers are JSON numbers (`-1` for a timer not reached; the `+`
    /// of `%rc`, and of `%B`/`%Ta`/`%Tt` with logasap, is dropped);
    /// missing strings (`%CC` without capture, `%s` without server is
    /// `"<NOSRV>"`) are `null`; dates are strings in the variable's text
    /// format; `%hr`/`%hs` are `null` without captures; `%hrl`/`%hsl` are
    /// arrays.
    pub fn render_json(&self, r: &LogRecord, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut seen: u128 = 0;
        let mut first = true;
        for n in &self.nodes {
            let v = match n {
                Node::Var(v, _) => v,
                Node::Sample(k, _) => {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    json_str(out, self.samples[*k].as_bytes(), |_| false);
                    out.push(b':');
                    json_opt(out, r.samples.get(*k).copied().flatten());
                    continue;
                }
                _ => continue,
            };
            let bit = 1u128 << (*v as u32);
            if seen & bit != 0 {
                continue;
            }
            seen |= bit;
            if !first {
                out.push(b',');
            }
            first = false;
            json_str(out, var_name(*v).as_bytes(), |_| false);
            out.push(b':');
            json_var(*v, r, out);
        }
        out.push(b'}');
    }
}

/// Renders one variable; false when it printed nothing.
fn render_var(v: Var, flags: u8, r: &LogRecord, out: &mut Vec<u8>) -> bool {
    let plus = |out: &mut Vec<u8>| {
        if r.logasap {
            out.push(b'+');
        }
    };
    match v {
        // A client of a UNIX socket has 0.0.0.0 and its listener's id
        // (`fairlead_net::unix`): HAProxy logs `unix` and the id.
        Var::Ci if r.client.is_some_and(|a| a.ip().is_unspecified()) => {
            text(out, Some(b"unix"), flags)
        }
        Var::Ci => ip(out, r.client, flags),
        Var::Cp => port(out, r.client, flags),
        Var::Fi => ip(out, r.frontend_addr, flags),
        Var::Fp => port(out, r.frontend_addr, flags),
        Var::Bi => ip(out, r.backend_src, flags),
        Var::Bp => port(out, r.backend_src, flags),
        Var::Si => ip(out, r.server_addr, flags),
        Var::Sp => port(out, r.server_addr, flags),
        Var::T | Var::Tr | Var::Trg | Var::Trl | Var::TGmt | Var::Tl => date(v, r, out),
        Var::Ts => {
            let (s, _) = time::unix_micros(r.accept_date);
            if flags & F_HEX != 0 {
                hex(out, s as u64, 4);
            } else {
                num(out, s);
            }
        }
        Var::Ms => {
            let (_, us) = time::unix_micros(r.accept_date);
            if flags & F_HEX != 0 {
                hex(out, u64::from(us / 1000), 2);
            } else {
                time::pad(out, u64::from(us / 1000), 3);
            }
        }
        Var::Ft => {
            let q = flags & F_QUOTE != 0;
            if q {
                out.push(b'"');
            }
            out.extend_from_slice(r.frontend.as_bytes());
            if r.tls {
                out.push(b'~');
            }
            if q {
                out.push(b'"');
            }
        }
        Var::F => text(out, Some(r.frontend.as_bytes()), flags),
        Var::B => text(out, Some(r.backend.as_bytes()), flags),
        Var::S => text(out, Some(r.server.unwrap_or("<NOSRV>").as_bytes()), flags),
        Var::TR => num(out, r.t_request()),
        Var::Tw => num(out, r.tw()),
        Var::Tc => num(out, r.tc()),
        Var::Trs => num(out, r.tr()),
        Var::Th => num(out, r.th()),
        Var::Ti => num(out, r.ti()),
        Var::Tq => num(out, r.tq()),
        Var::Td => num(out, r.td()),
        Var::Ta => {
            plus(out);
            num(out, r.ta());
        }
        Var::Tt => {
            plus(out);
            num(out, r.tt());
        }
        Var::Tu => {
            plus(out);
            num(out, r.tu());
        }
        Var::St => num(out, r.status.map_or(-1, i64::from)),
        Var::Bytes => {
            plus(out);
            time::pad(out, r.bytes_out, 1);
        }
        Var::Up => time::pad(out, r.bytes_in, 1),
        Var::Cc => text(out, r.cookie_req.map(str::as_bytes), flags),
        Var::Cs => text(out, r.cookie_resp.map(str::as_bytes), flags),
        Var::Tsc => out.extend_from_slice(&r.term.as_bytes()),
        Var::TsShort => out.extend_from_slice(&r.term.as_bytes()[..2]),
        Var::Ac => num(out, r.actconn.into()),
        Var::Fc => num(out, r.feconn.into()),
        Var::Bc => num(out, r.beconn.into()),
        Var::Sc => num(out, r.srv_conn.into()),
        Var::Rc => {
            if r.redispatched {
                out.push(b'+');
            }
            num(out, r.retries.into());
        }
        Var::Sq => num(out, r.srv_queue.into()),
        Var::Bq => num(out, r.backend_queue.into()),
        Var::Hr | Var::Hs => {
            let caps = if v == Var::Hr {
                r.req_captures
            } else {
                r.res_captures
            };
            if caps.is_empty() {
                return false;
            }
            let q = flags & F_QUOTE != 0;
            if q {
                out.push(b'"');
            }
            out.push(b'{');
            for (k, c) in caps.iter().enumerate() {
                if k > 0 {
                    out.push(b'|');
                }
                if let Some(c) = c {
                    encoded(out, c, hdr_escaped, flags);
                }
            }
            out.push(b'}');
            if q {
                out.push(b'"');
            }
        }
        Var::Hrl | Var::Hsl => {
            let caps = if v == Var::Hrl {
                r.req_captures
            } else {
                r.res_captures
            };
            if caps.is_empty() {
                return false;
            }
            let q = flags & F_QUOTE != 0;
            for (k, c) in caps.iter().enumerate() {
                if k > 0 {
                    out.push(b' ');
                }
                if q {
                    out.push(b'"');
                }
                match c {
                    Some(c) => encoded(out, c, hdr_escaped, flags),
                    None if !q => out.push(b'-'),
                    None => {}
                }
                if q {
                    out.push(b'"');
                }
            }
        }
        Var::R | Var::Hm | Var::Hu | Var::Hp | Var::Hpo | Var::Hq | Var::Hv => {
            req_part(out, request_part(r, v), flags)
        }
        Var::Id => text(out, r.unique_id.map(str::as_bytes), flags),
        Var::Pid => {
            if flags & F_HEX != 0 {
                hex(out, r.pid.into(), 1);
            } else {
                num(out, r.pid.into());
            }
        }
        Var::H => text(out, Some(r.hostname.as_bytes()), flags),
        Var::Sslv => text(out, r.ssl_version.map(str::as_bytes), flags),
        Var::Sslc => text(out, r.ssl_cipher.map(str::as_bytes), flags),
        Var::SslFcSni => text(out, r.ssl_sni.map(str::as_bytes), flags),
        Var::FcErr => num(out, 0),
        Var::SslFc => num(out, i64::from(r.ssl_version.is_some())),
        Var::SslFcErr | Var::SslCErr | Var::SslCCaErr | Var::SslCVerify => match r.ssl_version {
            // An established TLS connection had no error (a failed
            // handshake or verification never reaches a request).
            Some(_) => num(out, 0),
            None => text(out, None, flags),
        },
        Var::SslFcIsResumed => match r.ssl_resumed {
            Some(b) => num(out, i64::from(b)),
            None => text(out, None, flags),
        },
        Var::SslCUsed => match r.ssl_c_used {
            Some(b) => num(out, i64::from(b)),
            None => text(out, None, flags),
        },
        Var::Rt | Var::Lc => {
            let n = if v == Var::Rt {
                r.request_counter
            } else {
                r.log_counter
            };
            if flags & F_HEX != 0 {
                hex(out, n, 4);
            } else {
                time::pad(out, n, 1);
            }
        }
        Var::Mode => out.extend_from_slice(if r.http { b"HTTP" } else { b"TCP" }),
    }
    true
}

fn date(v: Var, r: &LogRecord, out: &mut Vec<u8>) {
    let t = match v {
        Var::Tr | Var::Trg | Var::Trl => r.request_date(),
        _ => r.accept_date,
    };
    let c = Civil::from_system(t);
    match v {
        Var::T | Var::Tr => time::log_date(out, &c),
        _ => time::clf_date(out, &c),
    }
}

#[path = "format_json.rs"]
mod json;
use json::{json_opt, json_str, json_var};

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
