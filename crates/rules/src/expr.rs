//! Sample expressions: `fetch[(args)][,conv[(args)]]*`, compiled once.

use crate::conv::Conv;
use crate::fetch::{Fetch, Wait};
use crate::sample::{Sample, SmpType};
use crate::txn::Txn;

/// A fetch followed by its converters.
#[derive(Debug)]
pub struct Expr {
    pub fetch: Fetch,
    pub convs: Vec<Conv>,
    out: SmpType,
}

/// Splits `name(a,b)` into the name and its arguments. Arguments are
/// separated by commas; quotes (single or double) group characters; see
/// [`split_args`] for backslashes.
pub fn split_call(s: &str) -> Result<(&str, Vec<String>), String> {
    let Some(open) = s.find('(') else {
        return Ok((s, Vec::new()));
    };
    let name = &s[..open];
    if !s.ends_with(')') {
        return Err(format!("missing closing ')' in '{s}'"));
    }
    let inner = &s[open + 1..s.len() - 1];
    Ok((name, split_args(inner)?))
}

/// Splits an argument list on commas (quotes and backslashes honoured).
///
/// As HAProxy's `make_arg_list`: outside single quotes, a backslash
/// escapes `\\`, a space and both quotes, and `\r`, `\n`, `\t` are
/// control characters; any other backslash is kept as is, so that
/// `regsub(\.,_)` and back-references like `\1` reach the converter.
pub fn split_args(inner: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    if inner.is_empty() {
        return Ok(args);
    }
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', q) if q != Some('\'') => match chars.peek() {
                Some(&n @ ('\\' | ' ' | '"' | '\'')) => {
                    cur.push(n);
                    chars.next();
                }
                Some(&n @ ('r' | 'n' | 't')) => {
                    cur.push(match n {
                        'r' => '\r',
                        'n' => '\n',
                        _ => '\t',
                    });
                    chars.next();
                }
                _ => cur.push('\\'),
            },
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (',', None) => args.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("unterminated quote in '{inner}'"));
    }
    args.push(cur);
    Ok(args)
}

/// Splits `a(b,c),d,e(f)` on the commas outside parentheses and quotes.
pub fn split_chain(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut start = 0;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match (b[i], quote) {
            (b'\\', _) => i += 1,
            (b'"' | b'\'', None) => quote = Some(b[i]),
            (q, Some(open)) if q == open => quote = None,
            (b'(', None) => depth += 1,
            (b')', None) => depth -= 1,
            (b',', None) if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return Err(format!("unbalanced parentheses in '{s}'"));
    }
    parts.push(&s[start..]);
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("empty converter in '{s}'"));
    }
    Ok(parts)
}

impl Expr {
    /// Compiles an expression. `allowed` is the rule set's [`usage`]
    /// mask: a fetch outside it is an error naming the data it needs.
    ///
    /// [`usage`]: crate::fetch::usage
    pub fn parse(s: &str, env: &crate::Env, allowed: u8, context: &str) -> Result<Expr, String> {
        let parts = split_chain(s)?;
        let (name, args) = split_call(parts[0])?;
        let fetch = Fetch::parse(name, &args, env)?;
        if fetch.usage() & allowed == 0 {
            return Err(format!(
                "fetch method '{name}' extracts information from '{}', none of which is available here ({context})",
                crate::fetch::usage::describe(fetch.usage())
            ));
        }
        Self::with_convs(fetch, &parts[1..], env)
    }

    /// Adds converters (`conv(args)` strings) after a compiled fetch.
    pub fn with_convs(fetch: Fetch, convs: &[&str], env: &crate::Env) -> Result<Expr, String> {
        let mut out = fetch.out_type();
        let mut list = Vec::with_capacity(convs.len());
        for c in convs {
            let (cname, cargs) = split_call(c)?;
            let conv = Conv::parse(cname, &cargs, out, env)?;
            out = conv.out_type();
            list.push(conv);
        }
        Ok(Expr {
            fetch,
            convs: list,
            out,
        })
    }

    pub fn out_type(&self) -> SmpType {
        self.out
    }

    /// Applies the converters to one fetched value.
    pub fn convert<'a>(&'a self, mut s: Sample<'a>, txn: &'a dyn Txn) -> Option<Sample<'a>> {
        for c in &self.convs {
            s = c.apply(s, txn)?;
        }
        Some(s)
    }

    /// The expression's value (sample context).
    pub fn eval<'a>(&'a self, txn: &'a dyn Txn) -> Result<Option<Sample<'a>>, Wait> {
        Ok(match self.fetch.one(txn)? {
            Some(s) => self.convert(s, txn),
            None => None,
        })
    }

    /// The value as a string (the form headers and logs use).
    pub fn eval_str<'a>(&'a self, txn: &'a dyn Txn) -> Option<Sample<'a>> {
        self.eval(txn).ok().flatten()?.cast(SmpType::Str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_calls_and_chains() {
        assert_eq!(
            split_call("hdr(host)").unwrap(),
            ("hdr", vec!["host".to_string()])
        );
        // HAProxy's `make_arg_list`: only `\\`, `\ `, `\"`, `\'`, `\r`,
        // `\n`, `\t` are escapes; other backslashes stay (checked against
        // HAProxy 2.6.12 in tests/scenarios/41_conv_text.scn).
        assert_eq!(
            split_call("regsub('a,b',\"x\\)\")").unwrap().1,
            vec!["a,b".to_string(), "x\\)".to_string()]
        );
        assert_eq!(
            split_call("regsub(\"^(a)=(b)$\",\"\\2:\\1\")").unwrap().1,
            vec!["^(a)=(b)$".to_string(), "\\2:\\1".to_string()]
        );
        assert_eq!(
            split_call("f(\\.,a\\,b,\\\\,'\\\\')").unwrap().1,
            vec!["\\.", "a\\", "b", "\\", "\\\\"]
        );
        assert_eq!(
            split_chain("req.hdr(host,1),lower,map(/x,def)").unwrap(),
            vec!["req.hdr(host,1)", "lower", "map(/x,def)"]
        );
        assert!(split_chain("hdr(host").is_err());
        assert!(split_chain("hdr,,lower").is_err());
    }
}
