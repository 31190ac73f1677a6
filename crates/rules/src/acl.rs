//! `acl` lines, anonymous ACLs and HAProxy's predefined ACLs.
//!
//! An ACL is a fetch expression, a match method and patterns. It is
//! evaluated with three-valued logic ([`Tri`]): a fetch whose data has not
//! arrived yet gives MISS, so that `tcp-request content` can wait.

use crate::expr::{split_call, split_chain, Expr};
use crate::fetch::{self, Fetch};
use crate::pattern::{Method, PatternSet};
use crate::sample::{Sample, SmpType};
use crate::txn::Txn;

/// A three-valued result: FAIL, MISS (not known yet) or PASS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    Fail = 0,
    Miss = 1,
    Pass = 3,
}

impl Tri {
    pub fn and(self, o: Tri) -> Tri {
        from_bits(self as u8 & o as u8)
    }
    pub fn or(self, o: Tri) -> Tri {
        from_bits(self as u8 | o as u8)
    }
    pub fn negate(self) -> Tri {
        match self {
            Tri::Pass => Tri::Fail,
            Tri::Fail => Tri::Pass,
            Tri::Miss => Tri::Miss,
        }
    }
}

fn from_bits(b: u8) -> Tri {
    match b {
        0 => Tri::Fail,
        3 => Tri::Pass,
        _ => Tri::Miss,
    }
}

/// One `acl` line (or an anonymous ACL): OR-ed with the other lines of
/// the same name.
#[derive(Debug)]
pub struct AclTerm {
    expr: Expr,
    /// Cast applied to each value before matching (`hdr_val` reads an
    /// integer, `hdr_ip` an address).
    cast: Option<SmpType>,
    pats: PatternSet,
    found_only: bool,
    /// The `method` keyword's own matching ([`meth_matches`]).
    meth: bool,
}

/// A named ACL (several lines) or an anonymous one.
#[derive(Debug)]
pub struct Acl {
    pub name: String,
    pub terms: Vec<AclTerm>,
    /// The data classes the ACL reads ([`fetch::usage`]).
    pub usage: u8,
}

impl Acl {
    pub fn eval(&self, txn: &dyn Txn) -> Tri {
        let mut r = Tri::Fail;
        for t in &self.terms {
            r = r.or(t.eval(txn));
            if r == Tri::Pass {
                break;
            }
        }
        r
    }
}

impl AclTerm {
    fn eval(&self, txn: &dyn Txn) -> Tri {
        let mut found = false;
        let res = self.expr.fetch.each(txn, &mut |s| {
            let Some(s) = self.expr.convert(s, txn) else {
                return false;
            };
            let s = match self.cast {
                Some(t) => match value_form(s, t) {
                    Some(s) => s,
                    None => return false,
                },
                None => s,
            };
            found = true;
            self.found_only
                || if self.meth {
                    meth_matches(&self.pats, &s)
                } else {
                    self.pats.matches(&s)
                }
        });
        match res {
            Err(_) => Tri::Miss,
            Ok(true) => Tri::Pass,
            Ok(false) if self.expr.fetch.may_change() && !txn.payload_final() => Tri::Miss,
            Ok(false) => Tri::Fail,
        }
    }
}

/// How the `_val` and `_ip` ACL forms read a value: as HAProxy's
/// `smp_fetch_hdr_val` (and the cookie and parameter ones) and
/// `smp_fetch_hdr_ip`, not as the generic casts.
fn value_form(s: Sample<'_>, t: SmpType) -> Option<Sample<'_>> {
    let read = match (&s, t) {
        (Sample::Str(b), SmpType::Sint) => Some(Sample::Sint(strl2ic(b))),
        (Sample::Str(b), SmpType::Addr) => Some(hdr_ip(b)?),
        _ => None,
    };
    match read {
        Some(r) => Some(r),
        None => s.cast(t),
    }
}

/// HAProxy's `strl2ic`: decimal digits up to the first byte above '9'; a
/// byte below '0' counts as a negative digit ("+12" reads -488), and a
/// text without digits reads 0. 32-bit, as in C.
fn strl2ic(b: &[u8]) -> i64 {
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let mut i: i32 = 0;
    for &c in digits {
        let j = i32::from(c) - i32::from(b'0');
        if j > 9 {
            break;
        }
        i = if neg {
            i.wrapping_mul(10).wrapping_sub(j)
        } else {
            i.wrapping_mul(10).wrapping_add(j)
        };
    }
    i64::from(i)
}

/// HAProxy's `smp_fetch_hdr_ip`: a whole IPv4 address, an IPv4 address
/// with `:port` (0 to 65535), or an IPv6 address.
fn hdr_ip(b: &[u8]) -> Option<Sample<'static>> {
    if let Some((oct, used)) = crate::sample::leading_v4(b) {
        let v4 = Sample::Ipv4(std::net::Ipv4Addr::from(oct));
        if used == b.len() {
            return Some(v4);
        }
        if b[used] == b':' {
            let port = &b[used + 1..];
            let digits = port.strip_prefix(b"-").unwrap_or(port);
            let valid = !digits.is_empty()
                && digits.iter().all(u8::is_ascii_digit)
                && std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse::<u32>().ok())
                    .is_some_and(|p| p <= 65535 && (p == 0 || digits.len() == port.len()));
            if valid {
                return Some(v4);
            }
        }
    }
    std::str::from_utf8(b)
        .ok()?
        .parse::<std::net::Ipv6Addr>()
        .ok()
        .map(Sample::Ipv6)
}

/// The methods HAProxy knows by number (`find_http_meth`, case-sensitive).
const KNOWN_METHODS: &[&[u8]] = &[
    b"GET", b"HEAD", b"POST", b"CONNECT", b"PUT", b"OPTIONS", b"DELETE", b"TRACE",
];

/// HAProxy's `pat_match_meth`: a pattern naming a known method (exactly,
/// `GET`) matches that method only, whatever `-i`; any other pattern is
/// compared as a string (`-i` applies) with a method HAProxy does not know.
/// So `method -i get` does not match `GET`, and `method GET` does not
/// match `get`.
fn meth_matches(pats: &PatternSet, s: &Sample<'_>) -> bool {
    let Some(m) = s.as_bytes() else {
        return false;
    };
    if !pats.matches(s) {
        return false;
    }
    let known = |k: &[u8]| KNOWN_METHODS.contains(&k);
    let keys = || pats.refs().flat_map(|r| r.entries());
    if known(m) {
        keys().any(|e| e.key() == m)
    } else {
        keys().any(|e| !known(e.key()) && e.key().eq_ignore_ascii_case(m))
    }
}

/// The definitions of HAProxy's predefined ACLs.
pub const PREDEFINED: &[(&str, &[&str])] = &[
    ("TRUE", &["always_true"]),
    ("FALSE", &["always_false"]),
    ("HTTP", &["req.proto_http"]),
    ("HTTP_1.0", &["req.ver", "1.0"]),
    ("HTTP_1.1", &["req.ver", "1.1"]),
    ("HTTP_2.0", &["req.ver", "2.0"]),
    ("HTTP_CONTENT", &["hdr_val(content-length)", "gt", "0"]),
    ("HTTP_URL_ABS", &["url_reg", "^[^/:]*://"]),
    ("HTTP_URL_SLASH", &["url_beg", "/"]),
    ("HTTP_URL_STAR", &["url", "*"]),
    ("LOCALHOST", &["src", "127.0.0.1/8", "::1"]),
    ("METH_CONNECT", &["method", "CONNECT"]),
    ("METH_DELETE", &["method", "DELETE"]),
    ("METH_GET", &["method", "GET", "HEAD"]),
    ("METH_HEAD", &["method", "HEAD"]),
    ("METH_OPTIONS", &["method", "OPTIONS"]),
    ("METH_POST", &["method", "POST"]),
    ("METH_PUT", &["method", "PUT"]),
    ("METH_TRACE", &["method", "TRACE"]),
    ("RDP_COOKIE", &["req.rdp_cookie_cnt", "gt", "0"]),
    ("REQ_CONTENT", &["req.len", "gt", "0"]),
    ("WAIT_END", &["wait_end"]),
];

/// Fetches whose ACL forms take a `_val` (integer) or `_ip` suffix.
pub(crate) const VALUE_SUFFIX_BASES: &[&str] = &[
    "hdr",
    "req.hdr",
    "fhdr",
    "req.fhdr",
    "shdr",
    "res.hdr",
    "cook",
    "req.cook",
    "scook",
    "res.cook",
    "urlp",
    "url_param",
];

/// Parses an ACL's criterion and values (`words` starts with the fetch
/// expression). Returns the term and warnings.
pub fn parse_term(
    words: &[String],
    env: &crate::Env,
    allowed: u8,
) -> Result<(AclTerm, Vec<String>), String> {
    let Some(first) = words.first() else {
        return Err("missing fetch method in ACL expression".into());
    };
    let (expr, suffix_method, cast) = criterion(first, env)?;
    let _ = allowed;
    let mut method = suffix_method;
    let mut icase = false;
    let mut i = 1;
    let mut builder_files = Vec::new();
    let mut no_dns = false;
    let mut as_map = false;
    // Flags.
    while i < words.len() {
        match words[i].as_str() {
            "-i" => icase = true,
            "-n" => no_dns = true,
            // The files after it are maps: their keys are the patterns.
            "-M" => as_map = true,
            "-m" => {
                let m = words.get(i + 1).ok_or("missing match method after '-m'")?;
                method =
                    Some(Method::parse(m).ok_or_else(|| format!("unknown matching method '{m}'"))?);
                i += 1;
            }
            "-f" => {
                let f = words.get(i + 1).ok_or("missing file name after '-f'")?;
                builder_files.push((f.clone(), icase, as_map));
                i += 1;
            }
            "-u" => {
                words.get(i + 1).ok_or("missing unique id after '-u'")?;
                i += 1;
            }
            "--" => {
                i += 1;
                break;
            }
            w if w.starts_with('-')
                && w.len() > 1
                && !w[1..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                return Err(format!("'{w}' is not a valid ACL option. Please use '--' before any pattern beginning with a '-'"));
            }
            _ => break,
        }
        i += 1;
    }
    let out = cast.unwrap_or(expr.out_type());
    // `method` without `-m` compares as HAProxy's `pat_match_meth`.
    let meth = method.is_none() && out == SmpType::Meth;
    let method = match method {
        Some(m) => m,
        None => default_method(out).ok_or_else(|| {
            format!(
                "ACL keyword '{}' returns type '{}' which needs a match method ('-m')",
                first,
                out.name()
            )
        })?,
    };
    let mut b = PatternSet::builder(method);
    b = b.no_dns(no_dns);
    for (f, ic, map) in builder_files {
        let r = env.patterns.load_file(&f, map)?;
        b = b.flag_ignore_case(ic);
        b.add_file(r);
    }
    b = b.flag_ignore_case(icase);
    let mut warnings = Vec::new();
    let values = &words[i..];
    // Once the values start, a word beginning with '-' is a value too
    // (HAProxy's flags only come first): `-- -i` matches "-i".
    let mut n_values = 0;
    for v in values {
        b.add_value(v)?;
        n_values += 1;
    }
    let found_only = method == Method::Found;
    let explicit_end = words.get(i.saturating_sub(1)).is_some_and(|w| w == "--");
    if n_values == 0 && !b.has_files() && !found_only && method != Method::Bool && !explicit_end {
        warnings.push("no pattern to match against were provided, so this ACL will never match. If this is what you intended, please add '--' to get rid of this warning. If you intended to match only for existence, please use '-m found'. If you wanted to force an int to match as a bool, please use '-m bool'.".to_string());
    }
    let pats = b.build()?;
    Ok((
        AclTerm {
            expr,
            cast,
            pats,
            found_only,
            meth,
        },
        warnings,
    ))
}

/// The match method an ACL uses without `-m` for a sample type (`bin`
/// has none).
pub(crate) fn default_method(t: SmpType) -> Option<Method> {
    Some(match t {
        SmpType::Bool => Method::Bool,
        SmpType::Sint => Method::Int,
        SmpType::Ipv4 | SmpType::Ipv6 | SmpType::Addr => Method::Ip,
        SmpType::Str | SmpType::Meth | SmpType::Any => Method::Str,
        SmpType::Bin => return None,
    })
}

/// Resolves an ACL criterion: a fetch, or a fetch with a match-method
/// suffix (`path_beg`, `hdr_dom(host)`), or a `_val`/`_ip` form.
fn criterion(s: &str, env: &crate::Env) -> Result<(Expr, Option<Method>, Option<SmpType>), String> {
    let parts = split_chain(s)?;
    let (name, args) = split_call(parts[0])?;
    let compile = |fname: &str| -> Result<Expr, String> {
        let f = Fetch::parse(fname, &args, env)?;
        Expr::with_convs(f, &parts[1..], env)
    };
    if fetch::exists(name) {
        return Ok((compile(name)?, None, None));
    }
    if let Some((base, suffix)) = name.rsplit_once('_') {
        if fetch::exists(base) {
            if VALUE_SUFFIX_BASES.contains(&base) {
                match suffix {
                    "val" => return Ok((compile(base)?, Some(Method::Int), Some(SmpType::Sint))),
                    "ip" => return Ok((compile(base)?, Some(Method::Ip), Some(SmpType::Addr))),
                    _ => {}
                }
            }
            if let Some(m) = crate::pattern::method_for_suffix(suffix) {
                return Ok((compile(base)?, Some(m), None));
            }
        }
    }
    Err(format!("{} in ACL expression '{s}'", fetch::unknown(name)))
}

/// Checks an ACL's usage against a rule set's mask: HAProxy warns when an
/// ACL can never match there.
pub fn usage_of(term: &AclTerm) -> u8 {
    term.expr.fetch.usage()
}

/// The sample an ACL term would compare, for tests and `-c` diagnostics.
pub fn sample_of<'a>(term: &'a AclTerm, txn: &'a dyn Txn) -> Option<Sample<'a>> {
    term.expr.eval(txn).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(line: &str) -> AclTerm {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse_term(&words, &crate::Env::default(), 0).unwrap().0
    }

    impl AclTerm {
        fn pats_match_meth(&self, m: &[u8]) -> bool {
            assert!(self.meth);
            meth_matches(&self.pats, &Sample::Meth(m.into()))
        }
    }

    #[test]
    fn a_dash_word_among_values_is_a_value() {
        // HAProxy reads flags only before the first value: after `--`,
        // "-i" is a pattern, and it does not turn on case folding.
        let t = term("req.hdr(x-flag) -- -i");
        assert!(t.pats.matches(&Sample::Str(b"-i"[..].into())));
        assert!(!t.pats.matches(&Sample::Str(b"-I"[..].into())));
        let t = term("path /a -i");
        assert!(t.pats.matches(&Sample::Str(b"-i"[..].into())));
        assert!(!t.pats.matches(&Sample::Str(b"/A"[..].into())));
    }

    /// HAProxy 2.6.12 (tests/scenarios/23_predefined_acls.scn): known
    /// methods compare by identity, the others as strings.
    #[test]
    fn method_patterns_as_haproxy() {
        let m = |line: &str, meth: &[u8]| term(line).pats_match_meth(meth);
        assert!(m("method GET", b"GET"));
        assert!(!m("method GET", b"get"));
        assert!(m("method -i GET", b"GET"));
        assert!(!m("method -i GET", b"get"));
        assert!(!m("method -i get", b"GET"));
        assert!(m("method -i get", b"get"));
        assert!(m("method -i Get", b"get"));
        assert!(!m("method get", b"GET"));
        assert!(m("method -i purge", b"PURGE"));
        assert!(!m("method purge", b"PURGE"));
        assert!(m("method -i GET get", b"get"));
    }

    /// HAProxy 2.6.12 (tests/scenarios/22_match_ip_bin_found_bool.scn).
    #[test]
    fn val_and_ip_forms_read_as_haproxy() {
        assert_eq!(strl2ic(b"12abc"), 12);
        assert_eq!(strl2ic(b"+12"), -488);
        assert_eq!(strl2ic(b"-7"), -7);
        assert_eq!(strl2ic(b"abc"), 0);
        assert_eq!(strl2ic(b""), 0);
        let ip = |s: &str| hdr_ip(s.as_bytes()).map(|s| s.cast(SmpType::Str));
        let text = |s: &str| Some(Some(Sample::owned_str(s.as_bytes().to_vec())));
        assert_eq!(ip("10.1.1.1"), text("10.1.1.1"));
        assert_eq!(ip("10.1.1.1:8080"), text("10.1.1.1"));
        assert_eq!(ip("10.1.1.1:99999"), None);
        assert_eq!(ip("10.1.1.1x"), None);
        assert_eq!(ip("10.1.1.1:"), None);
        assert_eq!(ip("2001:db8::1"), text("2001:db8::1"));
    }

    #[test]
    fn dash_capital_m_reads_a_map_files_keys() {
        let dir = std::env::temp_dir().join(format!("fairlead-acl-m-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("hosts.map");
        std::fs::write(&f, "example.com     be_a\nwww.example.com be_b\n").unwrap();
        let t = term(&format!("hdr(host) -M -f {}", f.display()));
        assert!(t.pats.matches(&Sample::Str(b"www.example.com"[..].into())));
        assert!(!t.pats.matches(&Sample::Str(b"be_a"[..].into())));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
