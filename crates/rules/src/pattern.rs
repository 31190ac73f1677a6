//! Match methods, pattern sets and shared pattern references.
//!
//! A [`PatternSet`] is what an ACL line matches a sample against: inline
//! values and `-f` files, each with the `-i`/`-n` flags in force where it
//! appeared. Which entry wins follows HAProxy 2.6 (configuration.txt
//! 7.1.1–7.1.6, `pattern.c`):
//!
//! * `str` and `beg` without `-i` use trees: `str` is an exact match, `beg`
//!   the longest matching prefix; with `-i`, the first entry in order;
//! * `ip` uses prefix trees (one per family): the finest network wins; an
//!   IPv4 sample is also looked up in the IPv6 tree as `::ffff:a.b.c.d`, an
//!   IPv6 sample in the IPv4 tree only when it embeds an IPv4 address;
//! * every other method is a list: the first entry in order wins.
//!
//! Files are [`PatRef`]s shared through the [`Registry`] by path; the
//! management socket and the `set-map`/`add-acl`/... actions edit them, and
//! every pattern set and map converter using a file sees the change at
//! once (see [`refs`] for how, without locks on lookups).

mod index;
pub(crate) mod parse;
pub mod refs;

#[cfg(test)]
mod tests;

pub use refs::{Entry, PatRef, RefInfo, Registry, Snapshot};

pub(crate) use index::Item;
use parse::{apply_op, compile_key, Op};
pub(crate) use parse::{Input, Key, OutKind, UserCfg};
use refs::RefUser;

use crate::sample::{Sample, SmpType};
use std::borrow::Cow;
use std::sync::Arc;

/// A match method (`-m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// The sample exists (patterns are ignored).
    Found,
    /// The sample, as an integer, is not zero (patterns are ignored).
    Bool,
    /// Integer ranges (`a:b`, `:b`, `a:`, or one value).
    Int,
    /// IPv4/IPv6 addresses and networks.
    Ip,
    /// Exact string.
    Str,
    /// String prefix.
    Beg,
    /// Substring.
    Sub,
    /// String suffix.
    End,
    /// Regular expression.
    Reg,
    /// A `/`- or `?`-delimited part of the string.
    Dir,
    /// A `/`, `?`, `.` or `:`-delimited part of the string.
    Dom,
    /// The string's length, as integer ranges.
    Len,
    /// Binary content, written in hex.
    Bin,
}

impl Method {
    /// The method named `s` (`-m <s>`).
    pub fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "found" => Method::Found,
            "bool" => Method::Bool,
            "int" => Method::Int,
            "ip" => Method::Ip,
            "str" => Method::Str,
            "beg" => Method::Beg,
            "sub" => Method::Sub,
            "end" => Method::End,
            "reg" => Method::Reg,
            "dir" => Method::Dir,
            "dom" => Method::Dom,
            "len" => Method::Len,
            "bin" => Method::Bin,
            _ => return None,
        })
    }

    /// HAProxy's name for the method.
    pub fn name(self) -> &'static str {
        match self {
            Method::Found => "found",
            Method::Bool => "bool",
            Method::Int => "int",
            Method::Ip => "ip",
            Method::Str => "str",
            Method::Beg => "beg",
            Method::Sub => "sub",
            Method::End => "end",
            Method::Reg => "reg",
            Method::Dir => "dir",
            Method::Dom => "dom",
            Method::Len => "len",
            Method::Bin => "bin",
        }
    }

    /// The type samples are cast to before matching (`pat_match_types`):
    /// `Any` for `found`, which does not look at the value.
    pub fn in_type(self) -> SmpType {
        match self {
            Method::Found => SmpType::Any,
            Method::Bool | Method::Int => SmpType::Sint,
            Method::Ip => SmpType::Addr,
            Method::Bin => SmpType::Bin,
            _ => SmpType::Str,
        }
    }

    /// Whether `-i` changes how this method compares.
    pub fn honours_case_flag(self) -> bool {
        matches!(
            self,
            Method::Str
                | Method::Beg
                | Method::Sub
                | Method::End
                | Method::Dir
                | Method::Dom
                | Method::Reg
        )
    }
}

/// The method an ACL keyword suffix names (`path_beg`: `beg`). Only
/// method names: `_cnt`, `_val`, `_ip` and the like are fetch variants the
/// ACL parser handles itself (`_len` is the `len` method).
pub fn method_for_suffix(suffix: &str) -> Option<Method> {
    let s = suffix.strip_prefix('_').unwrap_or(suffix);
    match Method::parse(s)? {
        Method::Found | Method::Bool | Method::Int | Method::Ip => None,
        m => Some(m),
    }
}

/// A sample already cast for a method, as the index reads it.
pub(crate) fn input_of<'s>(s: &'s Sample<'_>) -> Option<Input<'s>> {
    Some(match s {
        Sample::Bool(b) => Input::Int(*b as i64),
        Sample::Sint(i) => Input::Int(*i),
        Sample::Ipv4(a) => Input::V4(u32::from(*a)),
        Sample::Ipv6(a) => Input::V6(u128::from(*a)),
        Sample::Str(b) | Sample::Bin(b) | Sample::Meth(b) => Input::Bytes(b),
    })
}

/// `b` in lower case, borrowed when it has no upper-case letter.
pub(crate) fn lowered(b: &[u8]) -> Cow<'_, [u8]> {
    if b.iter().any(u8::is_ascii_uppercase) {
        Cow::Owned(b.to_ascii_lowercase())
    } else {
        Cow::Borrowed(b)
    }
}

/// One source of a pattern set: a reference and this set's index on it.
#[derive(Debug)]
struct Source {
    pref: Arc<PatRef>,
    user: Arc<RefUser>,
}

/// The patterns of one ACL line.
#[derive(Debug)]
pub struct PatternSet {
    method: Method,
    sources: Vec<Source>,
}

impl PatternSet {
    /// Starts a pattern set for `method`.
    pub fn builder(method: Method) -> PatternSetBuilder {
        PatternSetBuilder {
            method,
            icase: false,
            no_dns: false,
            dotted: false,
            op: None,
            display: String::from("inline"),
            pending: Vec::new(),
        }
    }

    /// The match method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The references this set reads (its files, then its inline values,
    /// in the order they were given).
    pub fn refs(&self) -> impl Iterator<Item = &Arc<PatRef>> {
        self.sources.iter().map(|s| &s.pref)
    }

    /// Whether one pattern matches the sample (`found`: the sample exists;
    /// `bool`: it is not zero).
    pub fn matches(&self, s: &Sample<'_>) -> bool {
        match self.method {
            Method::Found => true,
            Method::Bool => {
                matches!(s.reborrow().cast(SmpType::Sint), Some(Sample::Sint(i)) if i != 0)
            }
            _ => self.find(s, |_, _, _| ()).is_some(),
        }
    }

    /// The winning entry (the first source that matches, and in it the
    /// entry HAProxy's index for the method returns).
    pub fn lookup(&self, s: &Sample<'_>) -> Option<Arc<Entry>> {
        self.find(s, |it, _, _| it.e.clone())
    }

    /// Runs `f` on the winning item, its list pattern if any, and the
    /// input it matched.
    pub(crate) fn find<R>(
        &self,
        s: &Sample<'_>,
        mut f: impl FnMut(&Item, Option<&Key>, &Input<'_>) -> R,
    ) -> Option<R> {
        let cast = s.reborrow().cast(self.method.in_type())?;
        let raw = input_of(&cast)?;
        let mut low: Option<Cow<'_, [u8]>> = None;
        for src in &self.sources {
            let inp = match raw {
                Input::Bytes(b) if src.user.cfg.lower() => {
                    Input::Bytes(low.get_or_insert_with(|| lowered(b)))
                }
                other => other,
            };
            let idx = src.user.index.load();
            if let Some((it, key)) = idx.lookup(&inp) {
                return Some(f(it, key, &inp));
            }
        }
        None
    }
}

enum Pending {
    File(Arc<PatRef>, UserCfg),
    Inline(UserCfg, Vec<(Vec<u8>, Key)>),
}

/// Builds a [`PatternSet`] from an ACL line's flags, values and files.
pub struct PatternSetBuilder {
    method: Method,
    icase: bool,
    no_dns: bool,
    dotted: bool,
    op: Option<Op>,
    display: String,
    pending: Vec<Pending>,
}

impl PatternSetBuilder {
    fn cfg(&self) -> UserCfg {
        UserCfg {
            method: self.method,
            icase: self.icase,
            no_dns: self.no_dns,
            dotted: self.dotted,
            out: None,
        }
    }

    /// `-i`: values and files added from now on ignore case.
    pub fn flag_ignore_case(mut self, on: bool) -> Self {
        self.icase = on;
        self
    }

    /// `-n`: no name resolution for IP values and files added from now on.
    pub fn no_dns(mut self, on: bool) -> Self {
        self.no_dns = on;
        self
    }

    /// Integer values are `major.minor` versions (`req.ssl_ver`), for
    /// values and files added from now on.
    pub fn dotted_version(mut self, on: bool) -> Self {
        self.dotted = on;
        self
    }

    /// The name inline values are shown under (e.g. `acl 'x' file 'f'
    /// line 3`).
    pub fn display(mut self, name: &str) -> Self {
        self.display = name.to_string();
        self
    }

    /// Whether a file was added.
    pub fn has_files(&self) -> bool {
        self.pending.iter().any(|p| matches!(p, Pending::File(..)))
    }

    /// Whether any pattern (value or file) was added.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Adds one inline value, checked now (a bad integer, address, regex
    /// or hex string is an error naming it). For `int` and `len`, the
    /// operators `eq ge gt le lt` apply to the values after them, as in
    /// HAProxy (`gt 5` is `6:`). `found` and `bool` ignore values.
    pub fn add_value(&mut self, v: &str) -> Result<(), String> {
        if matches!(self.method, Method::Found | Method::Bool) {
            return Ok(());
        }
        let rewritten;
        let v = if matches!(self.method, Method::Int | Method::Len) {
            if let Some(op) = Op::parse(v) {
                self.op = Some(op);
                return Ok(());
            }
            match self.op {
                Some(op) => {
                    rewritten = apply_op(op, v, self.dotted && self.method == Method::Int)?;
                    &rewritten
                }
                None => v,
            }
        } else {
            v
        };
        let cfg = self.cfg();
        let key = compile_key(&cfg, v.as_bytes(), !cfg.no_dns)?;
        match self.pending.last_mut() {
            Some(Pending::Inline(c, rows)) if *c == cfg => rows.push((v.as_bytes().to_vec(), key)),
            _ => self
                .pending
                .push(Pending::Inline(cfg, vec![(v.as_bytes().to_vec(), key)])),
        }
        Ok(())
    }

    /// Adds a `-f` file (from [`Registry::load_file`]); its entries are
    /// compiled by [`PatternSetBuilder::build`].
    pub fn add_file(&mut self, r: Arc<PatRef>) {
        let cfg = self.cfg();
        self.pending.push(Pending::File(r, cfg));
    }

    /// Compiles the files' entries (an entry that does not parse is an
    /// error naming its file and line) and returns the set.
    pub fn build(self) -> Result<PatternSet, String> {
        let mut sources = Vec::with_capacity(self.pending.len());
        if matches!(self.method, Method::Found | Method::Bool) {
            return Ok(PatternSet {
                method: self.method,
                sources,
            });
        }
        for p in self.pending {
            sources.push(match p {
                Pending::File(pref, cfg) => {
                    let user = pref.attach(cfg, false)?;
                    Source { pref, user }
                }
                Pending::Inline(cfg, rows) => {
                    let (pref, user) = PatRef::inline(self.display.clone(), cfg, rows);
                    Source { pref, user }
                }
            });
        }
        Ok(PatternSet {
            method: self.method,
            sources,
        })
    }
}
