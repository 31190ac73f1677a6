//! Log-format strings in rule arguments (`set-header X %[src]`,
//! `redirect location https://%[hdr(host)]%[capture.req.uri]`, `return
//! lf-string ...`): literal text, `%[expr]` sample expressions and the
//! stream variables that make sense while a request is processed.

use crate::expr::Expr;
use crate::sample::Sample;
use crate::txn::Txn;
use std::io::Write as _;

#[derive(Debug)]
enum Piece {
    Lit(Vec<u8>),
    Expr(Expr, bool),
    Var(Var, bool),
}

/// The `%` variables a rule's log-format string may use.
#[derive(Debug, Clone, Copy)]
enum Var {
    ClientIp,
    ClientPort,
    FrontendIp,
    FrontendPort,
    Frontend,
    Backend,
    Server,
    Hostname,
    Pid,
    Ts,
    Method,
    Uri,
    Path,
    Query,
    Version,
    Status,
}

const VARS: &[(&str, Var)] = &[
    ("ci", Var::ClientIp),
    ("cp", Var::ClientPort),
    ("fi", Var::FrontendIp),
    ("fp", Var::FrontendPort),
    ("f", Var::Frontend),
    ("ft", Var::Frontend),
    ("b", Var::Backend),
    ("s", Var::Server),
    ("H", Var::Hostname),
    ("pid", Var::Pid),
    ("Ts", Var::Ts),
    ("HM", Var::Method),
    ("HU", Var::Uri),
    ("HP", Var::Path),
    ("HQ", Var::Query),
    ("HV", Var::Version),
    ("ST", Var::Status),
];

/// The names of the `%` variables rule arguments accept (for the
/// generated documentation).
pub(crate) fn var_names() -> impl Iterator<Item = &'static str> {
    VARS.iter().map(|(n, _)| *n)
}

/// A compiled log-format string.
#[derive(Debug, Default)]
pub struct LogFmt {
    pieces: Vec<Piece>,
}

impl LogFmt {
    /// A format that is `s` as it is, `%` included (no variable, no
    /// expression).
    pub fn literal(s: &str) -> LogFmt {
        LogFmt {
            pieces: vec![Piece::Lit(s.as_bytes().to_vec())],
        }
    }

    /// Compiles `s`. `allowed` is the rule set's fetch usage mask.
    pub fn parse(s: &str, env: &crate::Env, allowed: u8, context: &str) -> Result<LogFmt, String> {
        let mut pieces = Vec::new();
        let mut lit = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'%' {
                lit.push(b[i]);
                i += 1;
                continue;
            }
            if b.get(i + 1) == Some(&b'%') {
                lit.push(b'%');
                i += 2;
                continue;
            }
            i += 1;
            // Optional `{+Q,-X}` flags: only `+Q` (quote) is honoured.
            let mut quote = false;
            if b.get(i) == Some(&b'{') {
                let end = s[i..]
                    .find('}')
                    .ok_or_else(|| format!("missing '}}' after '%{{' in '{s}'"))?;
                quote = s[i + 1..i + end].split(',').any(|f| f == "+Q");
                i += end + 1;
            }
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            if b.get(i) == Some(&b'[') {
                let end = find_close(&s[i..])
                    .ok_or_else(|| format!("missing ']' after '%[' in '{s}'"))?;
                let e = Expr::parse(&s[i + 1..i + end], env, allowed, context)?;
                pieces.push(Piece::Expr(e, quote));
                i += end + 1;
                continue;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let name = &s[start..i];
            let var = VARS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    if name.is_empty() {
                        format!("missing variable name after '%' in '{s}'")
                    } else {
                        format!("log-format variable '%{name}' is not implemented yet in Fairlead in rule arguments (in '{s}'); use a sample expression '%[...]'")
                    }
                })?;
            pieces.push(Piece::Var(var, quote));
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(LogFmt { pieces })
    }

    /// A format that is only literal text (no allocation to render).
    pub fn as_literal(&self) -> Option<&[u8]> {
        match self.pieces.as_slice() {
            [] => Some(b""),
            [Piece::Lit(l)] => Some(l),
            _ => None,
        }
    }

    /// Renders into `out` (appends).
    pub fn render(&self, txn: &dyn Txn, out: &mut Vec<u8>) {
        for p in &self.pieces {
            match p {
                Piece::Lit(l) => out.extend_from_slice(l),
                Piece::Expr(e, q) => {
                    if let Some(s) = e.eval_str(txn) {
                        quoted(out, *q, s.as_bytes().unwrap_or_default());
                    } else if *q {
                        out.extend_from_slice(b"\"\"");
                    }
                }
                Piece::Var(v, q) => {
                    let mut tmp = Vec::new();
                    var(*v, txn, &mut tmp);
                    quoted(out, *q, &tmp);
                }
            }
        }
    }

    /// Renders into a new vector.
    pub fn render_vec(&self, txn: &dyn Txn) -> Vec<u8> {
        let mut v = Vec::new();
        self.render(txn, &mut v);
        v
    }
}

fn quoted(out: &mut Vec<u8>, q: bool, v: &[u8]) {
    if q {
        out.push(b'"');
    }
    out.extend_from_slice(v);
    if q {
        out.push(b'"');
    }
}

/// The index of the `]` that closes the `[` at `s[0]`, counting nested
/// brackets (`%[req.hdr(x),regsub([a],b)]`).
fn find_close(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn var(v: Var, txn: &dyn Txn, out: &mut Vec<u8>) {
    let _ = match v {
        Var::ClientIp => txn
            .src()
            .map(|a| write!(out, "{}", a.ip()))
            .unwrap_or(Ok(())),
        Var::ClientPort => txn
            .src()
            .map(|a| write!(out, "{}", a.port()))
            .unwrap_or(Ok(())),
        Var::FrontendIp => txn
            .dst()
            .map(|a| write!(out, "{}", a.ip()))
            .unwrap_or(Ok(())),
        Var::FrontendPort => txn
            .dst()
            .map(|a| write!(out, "{}", a.port()))
            .unwrap_or(Ok(())),
        Var::Frontend => out.write_all(txn.frontend_name().as_bytes()),
        Var::Backend => out.write_all(txn.backend_name().unwrap_or("-").as_bytes()),
        Var::Server => out.write_all(txn.server_name().unwrap_or("<NOSRV>").as_bytes()),
        Var::Hostname => out.write_all(txn.hostname().as_bytes()),
        Var::Pid => write!(out, "{}", std::process::id()),
        Var::Ts => write!(
            out,
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        ),
        Var::Method => out.write_all(txn.req().map(|m| m.method()).unwrap_or_default()),
        Var::Uri => out.write_all(txn.req().map(|m| m.target()).unwrap_or_default()),
        Var::Path => out.write_all(
            txn.req()
                .map(|m| crate::fetch::path_of(m.target()))
                .unwrap_or_default(),
        ),
        Var::Query => {
            if let Some(q) = txn.req().and_then(|m| crate::fetch::query_of(m.target())) {
                out.push(b'?');
                out.extend_from_slice(q);
            }
            Ok(())
        }
        Var::Version => match txn.req().map(|m| m.version()) {
            Some(10) => out.write_all(b"HTTP/1.0"),
            Some(20) => out.write_all(b"HTTP/2.0"),
            Some(_) => out.write_all(b"HTTP/1.1"),
            None => Ok(()),
        },
        Var::Status => match txn.res() {
            Some(m) => write!(out, "{}", m.status()),
            None => Ok(()),
        },
    };
}

/// Renders a sample the way log-format strings print it.
pub fn sample_text(s: &Sample<'_>) -> Vec<u8> {
    s.clone()
        .cast(crate::sample::SmpType::Str)
        .and_then(|s| s.as_bytes().map(<[u8]>::to_vec))
        .unwrap_or_default()
}
