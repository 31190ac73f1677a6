//! Line splitting, quoting, escapes and environment variable expansion,
//! following sections 2.2 to 2.4 of HAProxy's configuration manual.
//!
//! * Words are separated by spaces and tabs; leading and trailing blanks are
//!   dropped; `#` outside quotes starts a comment.
//! * Double quotes are *weak*: escapes and `$VAR`, `${VAR}` and
//!   `${VAR-default}` are interpreted inside them.
//! * Single quotes are *strong*: nothing is interpreted inside them.
//! * Quoted parts concatenate with what touches them: `a"b c"'d'` is one
//!   word, `ab cd`.
//! * Backslash escapes: `\ `, `\#`, `\\`, `\'`, `\"`, `\r`, `\n`, `\t` and
//!   `\xNN`. Any other backslash is kept as is (so regexes such as `\.`
//!   survive).
//! * Variables expand outside quotes too. An undefined variable expands to
//!   nothing; a word made only of unquoted expansions that come out empty
//!   disappears, while `""` is an empty word.
//! * A line longer than 2048 characters (HAProxy's `LINESIZE`, newline
//!   included) or with more than 64 words (`MAX_LINE_ARGS`) is an error.
//!
//! Not supported: the `${VAR[*]}` form that splits a variable into several
//! words is kept as a single word.

/// HAProxy's maximum line length, newline included.
pub const LINESIZE: usize = 2048;
/// HAProxy's maximum number of words on a line.
pub const MAX_LINE_ARGS: usize = 64;

/// Splits one configuration line into words.
///
/// `env` looks a variable up; `None` means undefined.
pub fn split_line(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<String>, String> {
    if line.len() + 1 > LINESIZE {
        return Err(format!(
            "line too long ({} characters, the limit is {} including the newline)",
            line.len(),
            LINESIZE - 1
        ));
    }
    let bytes = line.as_bytes();
    let mut words: Vec<String> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    // A word exists once a non-blank character or a quote was seen.
    let mut started = false;
    // Something other than an unquoted variable expansion contributed.
    let mut solid = false;
    let mut i = 0;
    let finish =
        |words: &mut Vec<String>, cur: &mut Vec<u8>, started: &mut bool, solid: &mut bool| {
            if *started && (*solid || !cur.is_empty()) {
                words.push(String::from_utf8_lossy(cur).into_owned());
            }
            cur.clear();
            *started = false;
            *solid = false;
        };
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b' ' | b'\t' | b'\r' => {
                finish(&mut words, &mut cur, &mut started, &mut solid);
                i += 1;
            }
            b'#' => break,
            b'\'' => {
                started = true;
                solid = true;
                let rel = bytes[i + 1..].iter().position(|&b| b == b'\'');
                match rel {
                    Some(end) => {
                        cur.extend_from_slice(&bytes[i + 1..i + 1 + end]);
                        i += end + 2;
                    }
                    None => return Err("unterminated single quote".to_string()),
                }
            }
            b'"' => {
                started = true;
                solid = true;
                i += 1;
                let mut closed = false;
                while i < bytes.len() {
                    match bytes[i] {
                        b'"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        b'\\' => i = escape(bytes, i, &mut cur)?,
                        b'$' => i = expand(bytes, i, &mut cur, env)?,
                        b => {
                            cur.push(b);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    return Err("unterminated double quote".to_string());
                }
            }
            b'\\' => {
                started = true;
                solid = true;
                i = escape(bytes, i, &mut cur)?;
            }
            b'$' => {
                started = true;
                let before = cur.len();
                i = expand(bytes, i, &mut cur, env)?;
                // A literal '$' (not a variable) is solid content.
                if cur.len() == before + 1 && cur[before] == b'$' {
                    solid = true;
                }
            }
            b => {
                started = true;
                solid = true;
                cur.push(b);
                i += 1;
            }
        }
        if words.len() > MAX_LINE_ARGS {
            break;
        }
    }
    finish(&mut words, &mut cur, &mut started, &mut solid);
    if words.len() > MAX_LINE_ARGS {
        return Err(format!(
            "too many words on the line (the limit is {MAX_LINE_ARGS})"
        ));
    }
    Ok(words)
}

/// Handles a backslash at `bytes[i]`; returns the next index.
fn escape(bytes: &[u8], i: usize, cur: &mut Vec<u8>) -> Result<usize, String> {
    let Some(&n) = bytes.get(i + 1) else {
        cur.push(b'\\');
        return Ok(i + 1);
    };
    let out = match n {
        b' ' | b'#' | b'\\' | b'\'' | b'"' | b'$' => n,
        b'r' => b'\r',
        b'n' => b'\n',
        b't' => b'\t',
        b'x' => {
            let hex = bytes
                .get(i + 2..i + 4)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            let Some(hex) = hex else {
                return Err(
                    "invalid or incomplete '\\x' escape (expected two hexadecimal digits)"
                        .to_string(),
                );
            };
            let s = std::str::from_utf8(hex).unwrap_or("00");
            cur.push(u8::from_str_radix(s, 16).unwrap_or(0));
            return Ok(i + 4);
        }
        _ => {
            // Not an escape sequence: keep the backslash.
            cur.push(b'\\');
            return Ok(i + 1);
        }
    };
    cur.push(out);
    Ok(i + 2)
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Handles a `$` at `bytes[i]`; returns the next index.
fn expand(
    bytes: &[u8],
    i: usize,
    cur: &mut Vec<u8>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<usize, String> {
    match bytes.get(i + 1) {
        Some(b'{') => {
            let start = i + 2;
            let Some(rel) = bytes[start..].iter().position(|&b| b == b'}') else {
                return Err("missing closing '}' in variable reference".to_string());
            };
            let inner = &bytes[start..start + rel];
            let name_len = inner
                .iter()
                .position(|&b| !is_name_char(b))
                .unwrap_or(inner.len());
            let name = String::from_utf8_lossy(&inner[..name_len]).into_owned();
            if name.is_empty() || !is_name_start(inner[0]) {
                return Err(format!(
                    "invalid variable name in '${{{}}}'",
                    String::from_utf8_lossy(inner)
                ));
            }
            let rest = &inner[name_len..];
            let value = env(&name);
            if rest.is_empty() || rest == b"[*]" {
                if let Some(v) = value {
                    cur.extend_from_slice(v.as_bytes());
                }
            } else if rest[0] == b'-' {
                match value {
                    Some(v) => cur.extend_from_slice(v.as_bytes()),
                    None => cur.extend_from_slice(&rest[1..]),
                }
            } else {
                return Err(format!(
                    "invalid character '{}' in variable reference '${{{}}}'",
                    rest[0] as char,
                    String::from_utf8_lossy(inner)
                ));
            }
            Ok(start + rel + 1)
        }
        Some(&b) if is_name_start(b) => {
            let start = i + 1;
            let len = bytes[start..]
                .iter()
                .position(|&b| !is_name_char(b))
                .unwrap_or(bytes.len() - start);
            let name = std::str::from_utf8(&bytes[start..start + len]).unwrap_or("");
            if let Some(v) = env(name) {
                cur.extend_from_slice(v.as_bytes());
            }
            Ok(start + len)
        }
        _ => {
            cur.push(b'$');
            Ok(i + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "SP" => Some("a b".into()),
            "EMPTY" => Some(String::new()),
            "PORT" => Some("8080".into()),
            _ => None,
        }
    }

    fn w(line: &str) -> Vec<String> {
        split_line(line, &env).unwrap()
    }

    #[test]
    fn blanks_and_comments() {
        assert_eq!(w("  bind\t:80   # comment"), ["bind", ":80"]);
        assert!(w("   # only a comment").is_empty());
        assert!(w("").is_empty());
        assert_eq!(w("a#b"), ["a"]);
        assert_eq!(w("a\r"), ["a"]);
    }

    #[test]
    fn quotes() {
        assert_eq!(w(r#"x "a b" 'c d'"#), ["x", "a b", "c d"]);
        assert_eq!(w(r#"a"b c"'d'e"#), ["ab cde"]);
        assert_eq!(w(r##""# not a comment""##), ["# not a comment"]);
        assert_eq!(w(r#"x "" y"#), ["x", "", "y"]);
        assert_eq!(w(r#"'$HOME \n'"#), ["$HOME \\n"]);
        assert_eq!(w(r#""it's""#), ["it's"]);
        assert_eq!(w(r#"'say "hi"'"#), ["say \"hi\""]);
    }

    #[test]
    fn unterminated_quotes() {
        assert!(split_line("a \"b", &env)
            .unwrap_err()
            .contains("unterminated double quote"));
        assert!(split_line("a 'b", &env)
            .unwrap_err()
            .contains("unterminated single quote"));
    }

    #[test]
    fn escapes() {
        assert_eq!(w(r"a\ b"), ["a b"]);
        assert_eq!(w(r"a\#b"), ["a#b"]);
        assert_eq!(w(r"a\\b"), ["a\\b"]);
        assert_eq!(w(r#"\'\""#), ["'\""]);
        assert_eq!(w(r"\r\n\t"), ["\r\n\t"]);
        assert_eq!(w(r"\x41\x62"), ["Ab"]);
        assert_eq!(w(r#""\x41 \t""#), ["A \t"]);
        assert_eq!(w(r"^/api\.v1"), ["^/api\\.v1"]);
        assert!(split_line(r"\xZZ", &env).unwrap_err().contains("\\x"));
        assert!(split_line(r"\x4", &env).is_err());
        assert_eq!(w(r"HAProxy-04\ Statistics"), ["HAProxy-04 Statistics"]);
    }

    #[test]
    fn variables() {
        assert_eq!(w(r#""$HOME/x""#), ["/home/u/x"]);
        assert_eq!(w(r#""${HOME}x""#), ["/home/ux"]);
        assert_eq!(w("$HOME"), ["/home/u"]);
        assert_eq!(w("${PORT}"), ["8080"]);
        assert_eq!(w("*:${PORT}"), ["*:8080"]);
        assert_eq!(w(r#""${NOPE-def ault}""#), ["def ault"]);
        assert_eq!(w(r#""${PORT-1}""#), ["8080"]);
        assert_eq!(w(r#""$SP""#), ["a b"]);
        assert_eq!(w("$SP"), ["a b"]);
        // Undefined expands to nothing; an unquoted empty word vanishes.
        assert_eq!(w("a $NOPE b"), ["a", "b"]);
        assert_eq!(w("a $EMPTY b"), ["a", "b"]);
        assert_eq!(w(r#"a "$NOPE" b"#), ["a", "", "b"]);
        assert_eq!(w("x$NOPE"), ["x"]);
        // '$' not followed by a name stays literal.
        assert_eq!(w("a$ $1 $"), ["a$", "$1", "$"]);
        assert_eq!(w(r"\$HOME"), ["$HOME"]);
        assert!(split_line("${HOME", &env)
            .unwrap_err()
            .contains("missing closing '}'"));
        assert!(split_line("${1A}", &env).is_err());
        assert!(split_line("${A+b}", &env).is_err());
    }

    #[test]
    fn limits() {
        let long = "a".repeat(2047);
        assert!(split_line(&long, &env).is_ok());
        let long = "a".repeat(2048);
        assert!(split_line(&long, &env)
            .unwrap_err()
            .contains("line too long"));
        let many = vec!["w"; 64].join(" ");
        assert_eq!(w(&many).len(), 64);
        let many = vec!["w"; 65].join(" ");
        assert!(split_line(&many, &env)
            .unwrap_err()
            .contains("too many words"));
    }
}
