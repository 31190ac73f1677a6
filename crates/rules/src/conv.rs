//! Converters (HAProxy 2.6, configuration manual section 7.3.1): the
//! `,name(args)` steps of a sample expression.
//!
//! A [`Conv`] is compiled once, when the configuration is read: its
//! arguments are parsed and checked there (regexes compiled, variable
//! names resolved, masks parsed), and a converter whose input type cannot
//! be reached from the previous step's output type is refused, as HAProxy
//! refuses it. At run time [`Conv::apply`] casts the incoming sample to
//! the converter's input type, then converts it; `None` means the
//! converter failed, which the caller treats as "no sample".
//!
//! Converters that keep or cut their input (`bytes`, `field`, `word`,
//! `ltrim`, `lower` on an already lowercase string, ...) do not allocate:
//! a borrowed sample stays borrowed. Converters that produce new bytes own
//! them.
//!
//! Behaviour follows HAProxy 2.6 (`src/sample.c`, `src/http_conv.c`),
//! with the fixes later backported to the 2.6 branch (`add`/`sub` of two
//! negative values saturate at the low end instead of returning the
//! maximum). See [`CONVERTERS`] for the list.

mod spec;
#[cfg(test)]
mod tests;
mod text;

use crate::hash;

use crate::map::MapConv;
use crate::sample::{can_cast, read_int64, v6_to_v4, Sample, SmpType};
use crate::txn::{Txn, VarRef};
use base64::Engine as _;
use regex::bytes::{Regex, RegexBuilder};
use spec::{Spec, SPECS};
use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};
use text::{JsonMode, Subst};

/// Every supported converter, for the generated documentation: (name,
/// short description). The map family comes first, as one entry.
pub const CONVERTERS: &[(&str, &str)] = &spec::converters_table();

/// Every supported converter but the map family, for the generated
/// documentation: (name, argument syntax, input type, output type,
/// description).
pub fn signatures(
) -> impl Iterator<Item = (&'static str, &'static str, SmpType, SmpType, &'static str)> {
    SPECS
        .iter()
        .map(|s| (s.name, s.args, s.input, s.output, s.desc))
}

/// The 32-bit hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hash32 {
    Sdbm,
    Djb2,
    Wt6,
    Crc32,
    Crc32c,
}

/// The two-operand integer converters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
}

impl Op {
    /// HAProxy's arithmetic: saturating, division by 0 gives the largest
    /// integer and remainder by 0 gives 0, `MIN / -1` is `MAX` and
    /// `MIN % -1` is 0.
    fn eval(self, a: i64, b: i64) -> i64 {
        match self {
            Op::Add => a.saturating_add(b),
            Op::Sub => a.saturating_sub(b),
            Op::Mul => a.saturating_mul(b),
            Op::Div if b == 0 => i64::MAX,
            Op::Div => a.checked_div(b).unwrap_or(i64::MAX),
            Op::Mod => a.checked_rem(b).unwrap_or(0),
            Op::And => a & b,
            Op::Or => a | b,
            Op::Xor => a ^ b,
        }
    }
}

/// An integer argument: a constant or a variable read at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    Int(i64),
    Var(VarRef),
}

#[derive(Debug)]
enum Kind {
    Map(MapConv),
    /// `in_table`, `table_*`.
    Stick(Box<crate::stick::StickConv>),
    Lower,
    Upper,
    Length,
    Field {
        index: i64,
        delims: Vec<u8>,
        count: i64,
    },
    Word {
        index: i64,
        delims: Vec<u8>,
        count: i64,
    },
    Regsub {
        re: Regex,
        subst: Vec<Subst>,
        global: bool,
    },
    Concat {
        start: Vec<u8>,
        var: Option<VarRef>,
        end: Vec<u8>,
    },
    AddItem {
        delim: Vec<u8>,
        var: Option<VarRef>,
        suffix: Vec<u8>,
    },
    Bytes {
        offset: i64,
        length: Option<i64>,
    },
    Strcmp(VarRef),
    Json(JsonMode),
    Ltrim(Vec<u8>),
    Rtrim(Vec<u8>),
    CutCrlf,
    Hex,
    Hex2i,
    Htonl,
    Base64,
    B64dec,
    Ub64enc,
    Ub64dec,
    UrlDec(bool),
    UrlEnc,
    Hash32(Hash32, bool),
    Xxh3(u64),
    Xxh32(u32),
    Xxh64(u64),
    Sha1,
    Sha2(u16),
    Arith(Op, Operand),
    Neg,
    Cpl,
    Bool,
    Not,
    Odd,
    Even,
    Ipmask(Ipv4Addr, Option<Ipv6Addr>),
    Iif(Vec<u8>, Vec<u8>),
    Nbsrv,
}

/// A compiled converter.
#[derive(Debug)]
pub struct Conv {
    name: String,
    kind: Kind,
    input: SmpType,
    output: SmpType,
}

fn int_arg(name: &str, what: &str, s: &str) -> Result<i64, String> {
    let digits = s
        .strip_prefix('-')
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "converter '{name}': {what} expects an integer, got '{s}'"
        ));
    }
    // Saturates on overflow, like HAProxy's read_int64.
    Ok(read_int64(s.as_bytes()).unwrap_or(0))
}

fn opt_int_arg(name: &str, what: &str, s: Option<&String>) -> Result<Option<i64>, String> {
    s.map(|s| int_arg(name, what, s)).transpose()
}

fn var_arg(name: &str, s: &str) -> Result<VarRef, String> {
    VarRef::parse(s).map_err(|e| format!("converter '{name}': {e}"))
}

fn opt_var_arg(name: &str, s: Option<&String>) -> Result<Option<VarRef>, String> {
    match s {
        Some(s) if !s.is_empty() => var_arg(name, s).map(Some),
        _ => Ok(None),
    }
}

/// An integer or a variable name, as `add`, `and`, ... take. An empty
/// value reads as 0, as in HAProxy.
fn operand_arg(name: &str, s: &str) -> Result<Operand, String> {
    if let Ok(v) = VarRef::parse(s) {
        return Ok(Operand::Var(v));
    }
    if s.is_empty() {
        return Ok(Operand::Int(0));
    }
    match int_arg(name, "<value>", s) {
        Ok(i) => Ok(Operand::Int(i)),
        Err(_) if s.contains('.') => var_arg(name, s).map(Operand::Var),
        Err(_) => Err(format!(
            "converter '{name}': expects an integer or a variable name (such as txn.foo), got '{s}'"
        )),
    }
}

fn prefix_len(name: &str, what: &str, s: &str, max: u32) -> Result<u32, String> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    match digits.parse::<u32>() {
        Ok(n) if n <= max && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(n)
        }
        _ => Err(format!(
            "converter '{name}': invalid {what} '{s}' (expects a prefix length from 0 to {max} or a mask)"
        )),
    }
}

fn mask4_arg(name: &str, s: &str) -> Result<Ipv4Addr, String> {
    if s.contains('.') {
        return s
            .parse()
            .map_err(|_| format!("converter '{name}': invalid IPv4 mask '{s}'"));
    }
    let n = prefix_len(name, "IPv4 mask", s, 32)?;
    Ok(Ipv4Addr::from(u32::MAX.checked_shl(32 - n).unwrap_or(0)))
}

fn mask6_arg(name: &str, s: &str) -> Result<Ipv6Addr, String> {
    if s.contains(':') {
        return s
            .parse()
            .map_err(|_| format!("converter '{name}': invalid IPv6 mask '{s}'"));
    }
    let n = prefix_len(name, "IPv6 mask", s, 128)?;
    Ok(Ipv6Addr::from(u128::MAX.checked_shl(128 - n).unwrap_or(0)))
}

/// Compiles a `regsub` regex. HAProxy's regexes work on bytes (PCRE
/// without UTF-8 mode), so classes and case folding are ASCII; a pattern
/// that needs Unicode (a non-ASCII literal) is compiled in Unicode mode.
fn compile_regex(pat: &str, icase: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pat)
        .case_insensitive(icase)
        .unicode(false)
        .build()
        .or_else(|_| RegexBuilder::new(pat).case_insensitive(icase).build())
}

fn arity_error(spec: &Spec, got: usize) -> String {
    let name = spec.name;
    let expects = match (spec.min, spec.max) {
        (0, 0) => "takes no arguments".to_string(),
        (a, b) if a == b => format!("expects {a} argument{}", if a > 1 { "s" } else { "" }),
        (0, b) => format!("takes at most {b} argument{}", if b > 1 { "s" } else { "" }),
        (a, b) => format!("expects {a} to {b} arguments"),
    };
    let usage = if spec.args.is_empty() {
        name.to_string()
    } else {
        format!("{name}({})", spec.args)
    };
    format!("converter '{name}' {expects}, got {got} (usage: {usage})")
}

fn type_error(name: &str, input: SmpType, expects: SmpType) -> String {
    format!(
        "converter '{name}' cannot be applied to a '{}' sample (it takes '{}', which a '{}' cannot be converted to)",
        input.name(),
        expects.name(),
        input.name()
    )
}

impl Conv {
    /// Parses one converter `name(args)` (args already split on commas and
    /// unquoted by the caller). `input` is the type it will receive: a
    /// converter whose input type cannot be reached from it by a cast is
    /// refused, as are unknown names and wrong arguments, with a message
    /// naming the converter.
    pub fn parse(
        name: &str,
        args: &[String],
        input: SmpType,
        env: &crate::Env,
    ) -> Result<Conv, String> {
        if name.starts_with("map") {
            let m = MapConv::parse(name, args, &env.patterns)?
                .ok_or_else(|| format!("unknown converter '{name}'"))?;
            let (in_t, out_t) = (m.in_type(), m.out_type());
            if !can_cast(input, in_t) {
                return Err(type_error(name, input, in_t));
            }
            return Ok(Conv {
                name: name.to_string(),
                kind: Kind::Map(m),
                input: in_t,
                output: out_t,
            });
        }
        if let Some(c) = crate::stick::StickConv::parse(name, args, env) {
            let c = c?;
            return Ok(Conv {
                name: name.to_string(),
                output: c.out_type(),
                kind: Kind::Stick(Box::new(c)),
                input: SmpType::Any,
            });
        }
        let spec = SPECS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("unknown converter '{name}'"))?;
        if !can_cast(input, spec.input) {
            return Err(type_error(name, input, spec.input));
        }
        // `name()` is read as no arguments where none are required.
        let args: &[String] = if spec.min == 0 && args.len() == 1 && args[0].is_empty() {
            &[]
        } else {
            args
        };
        if args.len() < spec.min || args.len() > spec.max {
            return Err(arity_error(spec, args.len()));
        }
        let mut output = spec.output;
        let arg = |i: usize| args.get(i);
        let bytes = |i: usize| args.get(i).map_or(Vec::new(), |s| s.as_bytes().to_vec());
        let kind = match name {
            "lower" => Kind::Lower,
            "upper" => Kind::Upper,
            "length" => Kind::Length,
            "field" | "word" => {
                let index = int_arg(name, "<index>", &args[0])?;
                if index == 0 {
                    return Err(format!(
                        "converter '{name}': <index> must not be 0 (it counts from 1, or from -1 at the end)"
                    ));
                }
                let delims = bytes(1);
                if delims.is_empty() {
                    return Err(format!("converter '{name}': empty <delimiters> list"));
                }
                let count = opt_int_arg(name, "<count>", arg(2))?.unwrap_or(1);
                if name == "field" {
                    Kind::Field {
                        index,
                        delims,
                        count,
                    }
                } else {
                    Kind::Word {
                        index,
                        delims,
                        count,
                    }
                }
            }
            "regsub" => {
                let (mut icase, mut global) = (false, false);
                for c in arg(2).map_or("", String::as_str).chars() {
                    match c {
                        'i' => icase = true,
                        'g' => global = true,
                        other => {
                            return Err(format!(
                                "converter 'regsub': invalid regex flag '{other}', only 'i' and 'g' are supported"
                            ))
                        }
                    }
                }
                let re = compile_regex(&args[0], icase).map_err(|e| {
                    format!("converter 'regsub': invalid regex '{}': {e}", args[0])
                })?;
                let subst = text::parse_subst(args[1].as_bytes())
                    .map_err(|e| format!("converter 'regsub': {e}"))?;
                Kind::Regsub { re, subst, global }
            }
            "concat" => Kind::Concat {
                start: bytes(0),
                var: opt_var_arg(name, arg(1))?,
                end: bytes(2),
            },
            "add_item" => {
                let var = opt_var_arg(name, arg(1))?;
                let suffix = bytes(2);
                if var.is_none() && suffix.is_empty() {
                    return Err(
                        "converter 'add_item': one of <var> and <suffix> must be given".into(),
                    );
                }
                Kind::AddItem {
                    delim: bytes(0),
                    var,
                    suffix,
                }
            }
            "bytes" => Kind::Bytes {
                offset: int_arg(name, "<offset>", &args[0])?,
                length: opt_int_arg(name, "<length>", arg(1))?,
            },
            "strcmp" => {
                if args[0].is_empty() {
                    return Err("converter 'strcmp': missing variable name".into());
                }
                Kind::Strcmp(var_arg(name, &args[0])?)
            }
            "json" => Kind::Json(match arg(0).map_or("", String::as_str) {
                "" | "ascii" => JsonMode::Ascii,
                "utf8" => JsonMode::Utf8,
                "utf8s" => JsonMode::Utf8S,
                "utf8p" => JsonMode::Utf8P,
                "utf8ps" => JsonMode::Utf8Ps,
                other => {
                    return Err(format!(
                        "converter 'json': unexpected input code '{other}', allowed values are 'ascii', 'utf8', 'utf8s', 'utf8p' and 'utf8ps'"
                    ))
                }
            }),
            "ltrim" => Kind::Ltrim(bytes(0)),
            "rtrim" => Kind::Rtrim(bytes(0)),
            "cut_crlf" => Kind::CutCrlf,
            "hex" => Kind::Hex,
            "hex2i" => Kind::Hex2i,
            "htonl" => Kind::Htonl,
            "base64" => Kind::Base64,
            "b64dec" => Kind::B64dec,
            "ub64enc" => Kind::Ub64enc,
            "ub64dec" => Kind::Ub64dec,
            "url_dec" => Kind::UrlDec(opt_int_arg(name, "<in_form>", arg(0))?.unwrap_or(0) != 0),
            "url_enc" => match arg(0).map_or("", String::as_str) {
                "" | "query" => Kind::UrlEnc,
                other => {
                    return Err(format!(
                        "converter 'url_enc': unexpected encode type '{other}', the allowed value is 'query'"
                    ))
                }
            },
            "sdbm" | "djb2" | "wt6" | "crc32" | "crc32c" => {
                let f = match name {
                    "sdbm" => Hash32::Sdbm,
                    "djb2" => Hash32::Djb2,
                    "wt6" => Hash32::Wt6,
                    "crc32" => Hash32::Crc32,
                    _ => Hash32::Crc32c,
                };
                Kind::Hash32(f, opt_int_arg(name, "<avalanche>", arg(0))?.unwrap_or(0) != 0)
            }
            "xxh3" | "xxh32" | "xxh64" => {
                let seed = opt_int_arg(name, "<seed>", arg(0))?.unwrap_or(0);
                match name {
                    "xxh3" => Kind::Xxh3(seed as u64),
                    "xxh32" => Kind::Xxh32(seed as u32),
                    _ => Kind::Xxh64(seed as u64),
                }
            }
            "sha1" => Kind::Sha1,
            "sha2" => match opt_int_arg(name, "<bits>", arg(0))?.unwrap_or(256) {
                b @ (224 | 256 | 384 | 512) => Kind::Sha2(b as u16),
                b => {
                    return Err(format!(
                        "converter 'sha2': unsupported number of bits: '{b}' (expects 224, 256, 384 or 512)"
                    ))
                }
            },
            "digest" => {
                let alg = args[0].to_ascii_lowercase().replace('-', "");
                match alg.as_str() {
                    "sha1" => Kind::Sha1,
                    "sha224" | "sha2224" => Kind::Sha2(224),
                    "sha256" | "sha2256" => Kind::Sha2(256),
                    "sha384" | "sha2384" => Kind::Sha2(384),
                    "sha512" | "sha2512" => Kind::Sha2(512),
                    _ => {
                        return Err(format!(
                            "converter 'digest': unsupported algorithm '{}' (supported: sha1, sha224, sha256, sha384, sha512)",
                            args[0]
                        ))
                    }
                }
            }
            "add" | "sub" | "mul" | "div" | "mod" | "and" | "or" | "xor" => {
                let op = match name {
                    "add" => Op::Add,
                    "sub" => Op::Sub,
                    "mul" => Op::Mul,
                    "div" => Op::Div,
                    "mod" => Op::Mod,
                    "and" => Op::And,
                    "or" => Op::Or,
                    _ => Op::Xor,
                };
                Kind::Arith(op, operand_arg(name, &args[0])?)
            }
            "neg" => Kind::Neg,
            "cpl" => Kind::Cpl,
            "bool" => Kind::Bool,
            "not" => Kind::Not,
            "odd" => Kind::Odd,
            "even" => Kind::Even,
            "ipmask" => {
                let m4 = mask4_arg(name, &args[0])?;
                let m6 = arg(1).map(|s| mask6_arg(name, s)).transpose()?;
                if m6.is_some() {
                    output = SmpType::Addr;
                }
                Kind::Ipmask(m4, m6)
            }
            "iif" => Kind::Iif(bytes(0), bytes(1)),
            "nbsrv" => Kind::Nbsrv,
            _ => unreachable!("converter '{name}' has a spec but no parser"),
        };
        Ok(Conv {
            name: name.to_string(),
            kind,
            input: spec.input,
            output,
        })
    }

    /// The converter's name, as written.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The type the incoming sample is cast to before converting (`addr`:
    /// either address family).
    pub fn in_type(&self) -> SmpType {
        self.input
    }

    /// The type of the samples this converter produces. `ipmask` with an
    /// IPv6 mask gives `addr` (either family); map converters give what
    /// their output type says.
    pub fn out_type(&self) -> SmpType {
        self.output
    }

    /// Applies the converter; `None` means it failed (no sample).
    pub fn apply<'a>(&self, s: Sample<'a>, txn: &'a dyn Txn) -> Option<Sample<'a>> {
        let s = s.cast(self.input)?;
        let out = match &self.kind {
            Kind::Map(m) => return m.apply(s),
            Kind::Stick(c) => return c.apply(&s),
            Kind::Lower => Sample::Str(text::map_bytes(bytes(s)?, u8::to_ascii_lowercase)),
            Kind::Upper => Sample::Str(text::map_bytes(bytes(s)?, u8::to_ascii_uppercase)),
            Kind::Length => Sample::Sint(bytes(s)?.len() as i64),
            Kind::Field {
                index,
                delims,
                count,
            } => {
                let b = bytes(s)?;
                let r = text::field(&b, *index, delims, *count)?;
                Sample::Str(text::slice_cow(b, r))
            }
            Kind::Word {
                index,
                delims,
                count,
            } => {
                let b = bytes(s)?;
                let r = text::word(&b, *index, delims, *count);
                Sample::Str(text::slice_cow(b, r))
            }
            Kind::Regsub { re, subst, global } => {
                let b = bytes(s)?;
                match text::regsub(re, subst, *global, &b) {
                    Some(v) => Sample::Str(Cow::Owned(v)),
                    None => Sample::Str(b),
                }
            }
            Kind::Concat { start, var, end } => {
                let mut out = bytes(s)?.into_owned();
                out.extend_from_slice(start);
                if let Some(v) = var_str(txn, var.as_ref()) {
                    out.extend_from_slice(v.as_bytes().unwrap_or_default());
                }
                out.extend_from_slice(end);
                Sample::Str(Cow::Owned(out))
            }
            Kind::AddItem { delim, var, suffix } => {
                let mut out = bytes(s)?.into_owned();
                let v = var_str(txn, var.as_ref());
                let vb = v.as_ref().and_then(Sample::as_bytes).unwrap_or_default();
                if !out.is_empty() && (!vb.is_empty() || !suffix.is_empty()) {
                    out.extend_from_slice(delim);
                }
                out.extend_from_slice(vb);
                out.extend_from_slice(suffix);
                Sample::Str(Cow::Owned(out))
            }
            Kind::Bytes { offset, length } => {
                let b = bytes(s)?;
                // HAProxy compares these as unsigned: a negative offset
                // leaves nothing, a negative length does not truncate.
                let len = b.len();
                let off = usize::try_from(*offset).unwrap_or(usize::MAX);
                let r = if off >= len {
                    len..len
                } else {
                    match length.and_then(|l| usize::try_from(l).ok()) {
                        Some(l) if l < len - off => off..off + l,
                        _ => off..len,
                    }
                };
                Sample::Bin(text::slice_cow(b, r))
            }
            Kind::Strcmp(v) => {
                let a = bytes(s)?;
                let other = var_str(txn, Some(v))?;
                Sample::Sint(strcmp(&a, other.as_bytes()?))
            }
            Kind::Json(mode) => {
                let b = bytes(s)?;
                if b.iter()
                    .all(|&c| (0x20..0x7f).contains(&c) && !b"\"\\/".contains(&c))
                {
                    Sample::Str(b)
                } else {
                    Sample::Str(Cow::Owned(text::json(&b, *mode)?))
                }
            }
            Kind::Ltrim(chars) => {
                let b = bytes(s)?;
                let start = b.iter().position(|c| !chars.contains(c)).unwrap_or(b.len());
                let len = b.len();
                Sample::Str(text::slice_cow(b, start..len))
            }
            Kind::Rtrim(chars) => {
                let b = bytes(s)?;
                let end = b
                    .iter()
                    .rposition(|c| !chars.contains(c))
                    .map_or(0, |p| p + 1);
                Sample::Str(text::slice_cow(b, 0..end))
            }
            Kind::CutCrlf => {
                let b = bytes(s)?;
                let end = b
                    .iter()
                    .position(|&c| c == b'\r' || c == b'\n')
                    .unwrap_or(b.len());
                Sample::Str(text::slice_cow(b, 0..end))
            }
            Kind::Hex => Sample::Str(Cow::Owned(text::hex(&bytes(s)?))),
            Kind::Hex2i => Sample::Sint(text::hex2i(&bytes(s)?)?),
            Kind::Htonl => Sample::Bin(Cow::Owned((int(&s)? as u32).to_be_bytes().to_vec())),
            Kind::Base64 => Sample::Str(Cow::Owned(
                base64::engine::general_purpose::STANDARD
                    .encode(bytes(s)?)
                    .into_bytes(),
            )),
            Kind::Ub64enc => Sample::Str(Cow::Owned(
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(bytes(s)?)
                    .into_bytes(),
            )),
            Kind::B64dec => Sample::Bin(Cow::Owned(text::b64dec(&bytes(s)?)?)),
            Kind::Ub64dec => Sample::Bin(Cow::Owned(text::ub64dec(&bytes(s)?)?)),
            Kind::UrlDec(in_form) => Sample::Str(text::url_dec(bytes(s)?, *in_form)?),
            Kind::UrlEnc => Sample::Str(text::url_enc(bytes(s)?)),
            Kind::Hash32(f, aval) => {
                let b = bytes(s)?;
                let h = match f {
                    Hash32::Sdbm => hash::sdbm(&b),
                    Hash32::Djb2 => hash::djb2(&b),
                    Hash32::Wt6 => hash::wt6(&b),
                    Hash32::Crc32 => hash::crc32(&b),
                    Hash32::Crc32c => hash::crc32c(&b),
                };
                Sample::Sint(i64::from(if *aval { hash::avalanche(h) } else { h }))
            }
            Kind::Xxh3(seed) => {
                Sample::Sint(xxhash_rust::xxh3::xxh3_64_with_seed(&bytes(s)?, *seed) as i64)
            }
            Kind::Xxh32(seed) => {
                Sample::Sint(i64::from(xxhash_rust::xxh32::xxh32(&bytes(s)?, *seed)))
            }
            Kind::Xxh64(seed) => Sample::Sint(xxhash_rust::xxh64::xxh64(&bytes(s)?, *seed) as i64),
            Kind::Sha1 => {
                use sha1::Digest as _;
                Sample::Bin(Cow::Owned(sha1::Sha1::digest(bytes(s)?).to_vec()))
            }
            Kind::Sha2(bits) => {
                use sha2::Digest as _;
                let b = bytes(s)?;
                Sample::Bin(Cow::Owned(match bits {
                    224 => sha2::Sha224::digest(&b).to_vec(),
                    384 => sha2::Sha384::digest(&b).to_vec(),
                    512 => sha2::Sha512::digest(&b).to_vec(),
                    _ => sha2::Sha256::digest(&b).to_vec(),
                }))
            }
            Kind::Arith(op, rhs) => {
                let a = int(&s)?;
                let b = match rhs {
                    Operand::Int(i) => *i,
                    Operand::Var(v) => int(&txn.var(v)?.cast(SmpType::Sint)?)?,
                };
                Sample::Sint(op.eval(a, b))
            }
            Kind::Neg => Sample::Sint(int(&s)?.saturating_neg()),
            Kind::Cpl => Sample::Sint(!int(&s)?),
            Kind::Bool => Sample::Bool(int(&s)? != 0),
            Kind::Not => Sample::Bool(int(&s)? == 0),
            Kind::Odd => Sample::Bool(int(&s)? & 1 != 0),
            Kind::Even => Sample::Bool(int(&s)? & 1 == 0),
            Kind::Ipmask(m4, m6) => {
                let v4 = match s {
                    Sample::Ipv4(a) => Some(a),
                    Sample::Ipv6(a) => v6_to_v4(a),
                    _ => return None,
                };
                match (v4, s) {
                    (Some(a), _) => Sample::Ipv4(Ipv4Addr::from(u32::from(a) & u32::from(*m4))),
                    (None, Sample::Ipv6(a)) => {
                        Sample::Ipv6(Ipv6Addr::from(u128::from(a) & u128::from((*m6)?)))
                    }
                    _ => return None,
                }
            }
            Kind::Iif(t, f) => match s {
                Sample::Bool(b) => Sample::Str(Cow::Owned(if b { t } else { f }.clone())),
                _ => return None,
            },
            Kind::Nbsrv => {
                let b = bytes(s)?;
                let name = std::str::from_utf8(&b).ok()?;
                Sample::Sint(txn.nbsrv(Some(name))?)
            }
        };
        Some(out)
    }
}

/// The bytes of a `str`, `bin` or `meth` sample.
fn bytes(s: Sample<'_>) -> Option<Cow<'_, [u8]>> {
    match s {
        Sample::Str(b) | Sample::Bin(b) | Sample::Meth(b) => Some(b),
        _ => None,
    }
}

fn int(s: &Sample<'_>) -> Option<i64> {
    match s {
        Sample::Sint(i) => Some(*i),
        _ => None,
    }
}

/// A variable's value as a string (`None`: missing, or not castable).
fn var_str<'a>(txn: &'a dyn Txn, v: Option<&VarRef>) -> Option<Sample<'a>> {
    txn.var(v?)?.cast(SmpType::Str)
}

/// `strcmp` as HAProxy computes it: `strncmp` over the shorter length
/// (which stops at a NUL byte and gives the difference of the first
/// differing bytes, as glibc does), then the shorter string is the
/// smaller one.
fn strcmp(a: &[u8], b: &[u8]) -> i64 {
    for (&x, &y) in a.iter().zip(b) {
        if x != y {
            return i64::from(x) - i64::from(y);
        }
        if x == 0 {
            break;
        }
    }
    match a.len().cmp(&b.len()) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}
