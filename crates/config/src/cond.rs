//! Conditional blocks: `.if`, `.elif`, `.else`, `.endif`, and the message
//! directives `.diag`, `.notice`, `.warning` and `.alert`.
//!
//! Conditions follow HAProxy 2.6: a term is an empty string or `0` (false),
//! a non-zero integer (true), a predicate with arguments in parentheses, or
//! a parenthesised sub-expression; `!` negates a term; `&&` binds tighter
//! than `||`. Predicates:
//!
//! * `defined(VAR)`: the environment variable exists (even if empty);
//! * `streq(a,b)`, `strneq(a,b)`: string (in)equality;
//! * `version_atleast(X)`, `version_before(X)`: compare with the HAProxy
//!   compatibility version Fairlead reports, [`COMPAT_VERSION`];
//! * `feature(X)`: always false. Fairlead is not built with HAProxy's
//!   optional features (OpenSSL, Lua, ...), so configurations guarded by
//!   `feature(...)` take their fallback branch.
//!
//! Blocks do not span files: a block still open at the end of a file is an
//! error.

use crate::model::Location;

/// HAProxy version Fairlead is compatible with, for version predicates.
pub const COMPAT_VERSION: &str = "2.6";

/// One open `.if` block.
#[derive(Debug)]
struct Frame {
    /// Whether the enclosing region is active.
    parent_active: bool,
    /// A branch of this block has already been taken.
    taken: bool,
    /// The current branch is active.
    active: bool,
    /// `.else` was seen.
    in_else: bool,
    loc: Location,
}

/// The stack of open conditional blocks for one file.
#[derive(Debug, Default)]
pub(crate) struct CondStack {
    frames: Vec<Frame>,
}

/// What a directive line asks the caller to do.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Nothing,
    Warning(String),
    Alert(String),
}

impl CondStack {
    /// True when lines are currently processed.
    pub fn active(&self) -> bool {
        self.frames.last().is_none_or(|f| f.active)
    }

    /// Handles a line whose first word starts with '.'.
    pub fn directive(
        &mut self,
        words: &[String],
        loc: &Location,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Outcome {
        let kw = words[0].as_str();
        let expr = words[1..].join(" ");
        match kw {
            ".if" => {
                let parent_active = self.active();
                let mut frame = Frame {
                    parent_active,
                    taken: false,
                    active: false,
                    in_else: false,
                    loc: loc.clone(),
                };
                let mut out = Outcome::Nothing;
                if parent_active {
                    match eval(&expr, env) {
                        Ok(v) => {
                            frame.active = v;
                            frame.taken = v;
                        }
                        Err(e) => {
                            // Skip the whole block after an error.
                            frame.taken = true;
                            out = Outcome::Alert(format!(
                                "failed to evaluate condition '.if {expr}': {e}"
                            ));
                        }
                    }
                }
                self.frames.push(frame);
                out
            }
            ".elif" => {
                let Some(frame) = self.frames.last_mut() else {
                    return Outcome::Alert("'.elif' without a matching '.if'".into());
                };
                if frame.in_else {
                    return Outcome::Alert(format!(
                        "'.elif' after '.else' (block opened at {})",
                        frame.loc
                    ));
                }
                if !frame.parent_active || frame.taken {
                    frame.active = false;
                    return Outcome::Nothing;
                }
                match eval(&expr, env) {
                    Ok(v) => {
                        frame.active = v;
                        frame.taken = v;
                        Outcome::Nothing
                    }
                    Err(e) => {
                        frame.active = false;
                        frame.taken = true;
                        Outcome::Alert(format!("failed to evaluate condition '.elif {expr}': {e}"))
                    }
                }
            }
            ".else" => {
                let Some(frame) = self.frames.last_mut() else {
                    return Outcome::Alert("'.else' without a matching '.if'".into());
                };
                if frame.in_else {
                    return Outcome::Alert(format!(
                        "'.else' already seen in the block opened at {}",
                        frame.loc
                    ));
                }
                frame.in_else = true;
                frame.active = frame.parent_active && !frame.taken;
                frame.taken = true;
                if words.len() > 1 {
                    return Outcome::Alert("'.else' takes no argument".into());
                }
                Outcome::Nothing
            }
            ".endif" => {
                if self.frames.pop().is_none() {
                    return Outcome::Alert("'.endif' without a matching '.if'".into());
                }
                if words.len() > 1 {
                    return Outcome::Alert("'.endif' takes no argument".into());
                }
                Outcome::Nothing
            }
            ".diag" | ".notice" | ".warning" | ".alert" if !self.active() => Outcome::Nothing,
            ".diag" | ".notice" | ".warning" => Outcome::Warning(expr),
            ".alert" => Outcome::Alert(expr),
            _ if !self.active() => Outcome::Nothing,
            _ => Outcome::Alert(format!("unknown directive '{kw}'")),
        }
    }

    /// Called at the end of a file: every block still open is an error.
    pub fn finish(&mut self) -> Vec<Location> {
        self.frames.drain(..).map(|f| f.loc).collect()
    }
}

/// Evaluates a condition expression.
pub(crate) fn eval(expr: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<bool, String> {
    let mut p = CondParser {
        s: expr.as_bytes(),
        pos: 0,
        env,
        depth: 0,
    };
    let v = p.or_expr()?;
    p.skip_ws();
    if p.pos < p.s.len() {
        return Err(format!("unexpected '{}'", &expr[p.pos..]));
    }
    Ok(v)
}

struct CondParser<'a> {
    s: &'a [u8],
    pos: usize,
    env: &'a dyn Fn(&str) -> Option<String>,
    depth: usize,
}

impl CondParser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && (self.s[self.pos] == b' ' || self.s[self.pos] == b'\t') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, tok: &[u8]) -> bool {
        self.skip_ws();
        if self.s[self.pos..].starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    fn or_expr(&mut self) -> Result<bool, String> {
        let mut v = self.and_expr()?;
        while self.eat(b"||") {
            let r = self.and_expr()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and_expr(&mut self) -> Result<bool, String> {
        let mut v = self.term()?;
        while self.eat(b"&&") {
            let r = self.term()?;
            v = v && r;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<bool, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("expression nested too deeply".into());
        }
        let r = self.term_inner();
        self.depth -= 1;
        r
    }

    fn term_inner(&mut self) -> Result<bool, String> {
        self.skip_ws();
        if self.eat(b"!") {
            return Ok(!self.term()?);
        }
        if self.eat(b"(") {
            let v = self.or_expr()?;
            if !self.eat(b")") {
                return Err("missing ')'".into());
            }
            return Ok(v);
        }
        let start = self.pos;
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.' {
                self.pos += 1;
            } else {
                break;
            }
        }
        let word = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.skip_ws();
        if self.pos < self.s.len() && self.s[self.pos] == b'(' {
            self.pos += 1;
            let args = self.args()?;
            return predicate(&word, &args, self.env);
        }
        if word.is_empty() {
            // An empty string is false, but only at the end of the input
            // or before a closing parenthesis / operator.
            if self.pos >= self.s.len() {
                return Ok(false);
            }
            return Err(format!(
                "unexpected '{}'",
                String::from_utf8_lossy(&self.s[self.pos..])
            ));
        }
        if word.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(word.bytes().any(|b| b != b'0'));
        }
        Err(format!(
            "unknown term '{word}' (expected 0, 1, a predicate or a sub-expression)"
        ))
    }

    /// Reads comma-separated raw arguments up to the closing parenthesis.
    fn args(&mut self) -> Result<Vec<String>, String> {
        let mut args = Vec::new();
        let mut cur = Vec::new();
        let mut depth = 0usize;
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            self.pos += 1;
            match c {
                b'(' => {
                    depth += 1;
                    cur.push(c);
                }
                b')' if depth == 0 => {
                    args.push(String::from_utf8_lossy(&cur).trim().to_string());
                    return Ok(args);
                }
                b')' => {
                    depth -= 1;
                    cur.push(c);
                }
                b',' if depth == 0 => {
                    args.push(String::from_utf8_lossy(&cur).trim().to_string());
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        Err("missing ')' after predicate arguments".into())
    }
}

fn predicate(
    name: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<bool, String> {
    let want = |n: usize| -> Result<(), String> {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "predicate '{name}' expects {n} argument(s), got {}",
                args.len()
            ))
        }
    };
    match name {
        "defined" => {
            want(1)?;
            Ok(env(&args[0]).is_some())
        }
        "feature" => {
            want(1)?;
            Ok(false)
        }
        "streq" => {
            want(2)?;
            Ok(args[0] == args[1])
        }
        "strneq" => {
            want(2)?;
            Ok(args[0] != args[1])
        }
        "version_atleast" => {
            want(1)?;
            Ok(compare_versions(COMPAT_VERSION, &args[0])? != std::cmp::Ordering::Less)
        }
        "version_before" => {
            want(1)?;
            Ok(compare_versions(COMPAT_VERSION, &args[0])? == std::cmp::Ordering::Less)
        }
        _ => Err(format!("unknown predicate '{name}'")),
    }
}

/// Compares dotted versions numerically (`2.6` < `2.6.1` < `2.10`). A
/// suffix such as `-dev3` is ignored.
pub(crate) fn compare_versions(a: &str, b: &str) -> Result<std::cmp::Ordering, String> {
    fn parts(v: &str) -> Result<Vec<u64>, String> {
        let core = v.split(['-', '+']).next().unwrap_or("");
        if core.is_empty() {
            return Err(format!("invalid version '{v}'"));
        }
        core.split('.')
            .map(|p| {
                p.parse::<u64>()
                    .map_err(|_| format!("invalid version '{v}'"))
            })
            .collect()
    }
    let (mut x, mut y) = (parts(a)?, parts(b)?);
    let n = x.len().max(y.len());
    x.resize(n, 0);
    y.resize(n, 0);
    Ok(x.cmp(&y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SET" => Some("yes".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn ev(s: &str) -> bool {
        eval(s, &env).unwrap()
    }

    #[test]
    fn literals_and_operators() {
        assert!(!ev(""));
        assert!(!ev("0"));
        assert!(ev("1"));
        assert!(ev("42"));
        assert!(!ev("!1"));
        assert!(ev("!0"));
        assert!(ev("1 && 1"));
        assert!(!ev("1 && 0"));
        assert!(ev("0 || 1"));
        assert!(ev("0 || 1 && 1"));
        assert!(!ev("(0 || 1) && 0"));
        assert!(ev("!(0 || 0)"));
        assert!(ev("1&&1"));
    }

    #[test]
    fn predicates() {
        assert!(ev("defined(SET)"));
        assert!(ev("defined(EMPTY)"));
        assert!(!ev("defined(NOPE)"));
        assert!(ev("streq(a,a)"));
        assert!(!ev("streq(a,b)"));
        assert!(ev("strneq(a,b)"));
        assert!(ev("streq(, )"));
        assert!(!ev("feature(OPENSSL)"));
        assert!(ev("version_atleast(2.6)"));
        assert!(ev("version_atleast(2.4-dev3)"));
        assert!(ev("version_atleast(1.8.3)"));
        assert!(!ev("version_atleast(2.6.1)"));
        assert!(!ev("version_atleast(2.10)"));
        assert!(ev("version_before(2.7)"));
        assert!(!ev("version_before(2.6)"));
        assert!(ev("defined(SET) && !feature(LUA)"));
    }

    #[test]
    fn errors() {
        assert!(eval("nope(1)", &env)
            .unwrap_err()
            .contains("unknown predicate 'nope'"));
        assert!(eval("streq(a)", &env).unwrap_err().contains("expects 2"));
        assert!(eval("defined(A", &env).unwrap_err().contains("missing ')'"));
        assert!(eval("(1", &env).unwrap_err().contains("missing ')'"));
        assert!(eval("1 1", &env).is_err());
        assert!(eval("foo", &env).unwrap_err().contains("unknown term"));
        assert!(eval("version_atleast(x.y)", &env)
            .unwrap_err()
            .contains("invalid version"));
        assert!(eval(&"(".repeat(200), &env).is_err());
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn blocks() {
        let loc = Location::default();
        let mut st = CondStack::default();
        assert!(st.active());
        assert_eq!(st.directive(&words(".if 0"), &loc, &env), Outcome::Nothing);
        assert!(!st.active());
        st.directive(&words(".if 1"), &loc, &env);
        assert!(!st.active(), "nested block in an inactive region");
        st.directive(&words(".else"), &loc, &env);
        assert!(!st.active());
        st.directive(&words(".endif"), &loc, &env);
        st.directive(&words(".elif 1"), &loc, &env);
        assert!(st.active());
        st.directive(&words(".elif 1"), &loc, &env);
        assert!(!st.active(), "only the first true branch is taken");
        st.directive(&words(".else"), &loc, &env);
        assert!(!st.active());
        st.directive(&words(".endif"), &loc, &env);
        assert!(st.active());
        assert!(
            matches!(st.directive(&words(".endif"), &loc, &env), Outcome::Alert(m) if m.contains("without a matching"))
        );
        assert!(matches!(
            st.directive(&words(".else"), &loc, &env),
            Outcome::Alert(_)
        ));
        assert!(matches!(
            st.directive(&words(".elif 1"), &loc, &env),
            Outcome::Alert(_)
        ));
        st.directive(&words(".if 1"), &loc, &env);
        st.directive(&words(".else"), &loc, &env);
        assert!(matches!(
            st.directive(&words(".else"), &loc, &env),
            Outcome::Alert(_)
        ));
        assert!(matches!(
            st.directive(&words(".elif 1"), &loc, &env),
            Outcome::Alert(_)
        ));
        assert_eq!(st.finish().len(), 1);
        assert_eq!(
            st.directive(&words(".warning hello there"), &loc, &env),
            Outcome::Warning("hello there".into())
        );
        assert_eq!(
            st.directive(&words(".alert boom"), &loc, &env),
            Outcome::Alert("boom".into())
        );
        assert!(
            matches!(st.directive(&words(".bogus"), &loc, &env), Outcome::Alert(m) if m.contains("unknown directive"))
        );
        st.directive(&words(".if 0"), &loc, &env);
        assert_eq!(
            st.directive(&words(".alert boom"), &loc, &env),
            Outcome::Nothing
        );
    }
}
