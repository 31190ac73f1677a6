//! `if`/`unless` conditions: a disjunction of conjunctions of ACLs, each
//! possibly negated, evaluated with HAProxy's three-valued logic.

use crate::acl::{self, Acl, Tri, PREDEFINED};
use crate::txn::Txn;
use std::collections::HashMap;

/// The ACLs of one proxy section: named ones (in declaration order; a
/// condition may only use those declared before it) and anonymous ones.
#[derive(Debug, Default)]
pub struct Acls {
    pub list: Vec<Acl>,
    by_name: HashMap<String, usize>,
}

/// An index into [`Acls::list`].
pub type AclId = usize;

impl Acls {
    /// Adds one `acl <name> <criterion> ...` line; lines with the same
    /// name are OR-ed. Returns warnings.
    pub fn add_line(
        &mut self,
        name: &str,
        words: &[String],
        env: &crate::Env,
    ) -> Result<Vec<String>, String> {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        {
            return Err(format!(
                "ACL name '{name}' contains an invalid character (only [A-Za-z0-9_.:-] are allowed)"
            ));
        }
        let (term, warnings) = acl::parse_term(words, env, crate::fetch::usage::HTTP_RESPONSE)?;
        let usage = acl::usage_of(&term);
        match self.by_name.get(name) {
            Some(&i) => {
                self.list[i].terms.push(term);
                self.list[i].usage |= usage;
            }
            None => {
                self.by_name.insert(name.to_string(), self.list.len());
                self.list.push(Acl {
                    name: name.to_string(),
                    terms: vec![term],
                    usage,
                });
            }
        }
        Ok(warnings)
    }

    fn lookup(&mut self, name: &str, env: &crate::Env) -> Result<AclId, String> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        let Some((_, def)) = PREDEFINED.iter().find(|(n, _)| *n == name) else {
            return Err(format!("no such ACL : '{name}'"));
        };
        let words: Vec<String> = def.iter().map(|s| s.to_string()).collect();
        self.add_line(name, &words, env)?;
        Ok(self.by_name[name])
    }

    fn anonymous(
        &mut self,
        words: &[String],
        env: &crate::Env,
    ) -> Result<(AclId, Vec<String>), String> {
        let (term, warnings) = acl::parse_term(words, env, crate::fetch::usage::HTTP_RESPONSE)?;
        let usage = acl::usage_of(&term);
        self.list.push(Acl {
            name: String::new(),
            terms: vec![term],
            usage,
        });
        Ok((self.list.len() - 1, warnings))
    }
}

/// One term of a conjunction.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    pub negate: bool,
    pub acl: AclId,
}

/// A compiled condition.
#[derive(Debug, Clone)]
pub struct Cond {
    /// `unless` instead of `if`.
    pub unless: bool,
    /// OR of ANDs.
    pub suites: Vec<Vec<Term>>,
}

impl Cond {
    /// Parses the words after `if` or `unless` (`words[0]` is the keyword).
    /// Returns the condition and the warnings of its anonymous ACLs.
    pub fn parse(
        words: &[String],
        acls: &mut Acls,
        env: &crate::Env,
    ) -> Result<(Cond, Vec<String>), String> {
        let unless = match words.first().map(String::as_str) {
            Some("if") => false,
            Some("unless") => true,
            _ => return Err("expects 'if' or 'unless'".into()),
        };
        let mut suites = vec![Vec::new()];
        let mut warnings = Vec::new();
        let mut negate = false;
        let mut i = 1;
        if words.len() < 2 {
            return Err(format!(
                "missing condition after '{}'",
                if unless { "unless" } else { "if" }
            ));
        }
        while i < words.len() {
            let w = words[i].as_str();
            // `!{` is a negated anonymous ACL.
            let w = if w == "!{" {
                negate = !negate;
                "{"
            } else {
                w
            };
            match w {
                "!" => negate = !negate,
                // HAProxy compares `or` without case (`OR` works too).
                _ if w == "||" || w.eq_ignore_ascii_case("or") => {
                    if negate || suites.last().is_some_and(Vec::is_empty) {
                        return Err(format!("missing ACL before '{w}'"));
                    }
                    suites.push(Vec::new());
                }
                "{" => {
                    let close = words[i + 1..]
                        .iter()
                        .position(|x| x == "}")
                        .ok_or("missing closing '}' in condition")?;
                    let inner = &words[i + 1..i + 1 + close];
                    if inner.is_empty() {
                        return Err("empty anonymous ACL '{ }'".into());
                    }
                    let (id, w) = acls.anonymous(inner, env)?;
                    warnings.extend(w);
                    push(&mut suites, &mut negate, id);
                    i += close + 1;
                }
                "}" => return Err("unexpected '}' in condition".into()),
                _ => {
                    let (neg, name) = match w.strip_prefix('!') {
                        Some(n) => (true, n),
                        None => (false, w),
                    };
                    if neg {
                        negate = !negate;
                    }
                    let id = acls.lookup(name, env)?;
                    push(&mut suites, &mut negate, id);
                }
            }
            i += 1;
        }
        if negate || suites.last().is_some_and(Vec::is_empty) {
            return Err("condition ends with an operator".into());
        }
        Ok((Cond { unless, suites }, warnings))
    }

    /// Evaluates the condition (MISS is returned as such).
    pub fn eval(&self, acls: &Acls, txn: &dyn Txn) -> Tri {
        let mut res = Tri::Fail;
        for suite in &self.suites {
            let mut s = Tri::Pass;
            for t in suite {
                let mut v = acls.list[t.acl].eval(txn);
                if t.negate {
                    v = v.negate();
                }
                s = s.and(v);
                if s == Tri::Fail {
                    break;
                }
            }
            res = res.or(s);
            if res == Tri::Pass {
                break;
            }
        }
        if self.unless {
            res.negate()
        } else {
            res
        }
    }

    /// The data classes the condition reads.
    pub fn usage(&self, acls: &Acls) -> u8 {
        self.suites
            .iter()
            .flatten()
            .fold(0, |u, t| u | acls.list[t.acl].usage)
    }

    /// The names of the ACLs used (for diagnostics).
    pub fn acl_names<'a>(&self, acls: &'a Acls) -> Vec<&'a str> {
        self.suites
            .iter()
            .flatten()
            .map(|t| acls.list[t.acl].name.as_str())
            .collect()
    }
}

fn push(suites: &mut [Vec<Term>], negate: &mut bool, acl: AclId) {
    if let Some(last) = suites.last_mut() {
        last.push(Term {
            negate: *negate,
            acl,
        });
    }
    *negate = false;
}

/// Splits `words` at the first top-level `if`/`unless` (outside braces).
pub fn split_cond(words: &[String]) -> (&[String], Option<&[String]>) {
    let mut depth = 0;
    for (i, w) in words.iter().enumerate() {
        match w.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "if" | "unless" if depth == 0 => return (&words[..i], Some(&words[i..])),
            _ => {}
        }
    }
    (words, None)
}
