//! `unique-id-format <fmt>` and `unique-id-header <name>`: a log-format
//! string (HAProxy's `%` variables through `fairlead-log`, `%[...]`
//! samples through the rule engine) rendered once per HTTP transaction
//! (or TCP stream, in `fairlead-l4`),
//! on first use: the `unique-id` fetch, the request header sent to the
//! server, or `%ID` in the log line.

use crate::expr::Expr;
use crate::fetch::usage;

/// A compiled `unique-id-format`.
#[derive(Debug)]
pub struct UniqueId {
    /// The format, its `%[...]` samples left to the proxy.
    pub format: fairlead_log::LogFormat,
    /// The samples of [`UniqueId::format`], in its `samples()` order.
    pub samples: Vec<Expr>,
}

impl UniqueId {
    /// Compiles the argument of `unique-id-format` (`words[1..]`).
    pub fn parse(words: &[String], env: &crate::Env) -> Result<UniqueId, String> {
        let fmt =
            match words.get(1..).unwrap_or_default() {
                [f] if !f.is_empty() => f,
                [] | [_] => return Err("unique-id-format expects an argument.".into()),
                _ => return Err(
                    "unique-id-format expects only one argument, don't forget to escape spaces!"
                        .into(),
                ),
            };
        let format = fairlead_log::compile_unique_id(fmt)?;
        let mut samples = Vec::new();
        for src in format.samples() {
            let e = Expr::parse(src, env, usage::HTTP_REQUEST, "unique-id-format")
                .map_err(|e| format!("failed to parse unique-id : {e}"))?;
            samples.push(e);
        }
        Ok(UniqueId { format, samples })
    }

    /// The values of the format's sample expressions against `from`, in
    /// order (`None`: no value), for the renderers of each mode.
    pub fn sample_values(&self, from: &dyn crate::txn::Txn) -> Vec<Option<Vec<u8>>> {
        self.samples
            .iter()
            .map(|e| {
                e.eval_str(from)
                    .and_then(|s| s.as_bytes().map(<[u8]>::to_vec))
            })
            .collect()
    }
}

/// The argument of `unique-id-header`.
pub fn parse_header(words: &[String]) -> Result<String, String> {
    match words.get(1..).unwrap_or_default() {
        [h] if !h.is_empty() => Ok(h.clone()),
        [] | [_] => Err("unique-id-header expects an argument.".into()),
        _ => Err("unique-id-header expects only one argument.".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_formats_and_headers() {
        let env = crate::Env::default();
        let u = UniqueId::parse(
            &w(&["unique-id-format", "%{+X}o %ci:%cp_%[req.hdr(x),lower]_%rt"]),
            &env,
        )
        .unwrap();
        assert_eq!(u.format.samples(), ["req.hdr(x),lower"]);
        assert_eq!(u.samples.len(), 1);
        let e = UniqueId::parse(&w(&["unique-id-format"]), &env).unwrap_err();
        assert_eq!(e, "unique-id-format expects an argument.");
        let e = UniqueId::parse(&w(&["unique-id-format", "a", "b"]), &env).unwrap_err();
        assert!(e.contains("don't forget to escape spaces"), "{e}");
        let e = UniqueId::parse(&w(&["unique-id-format", "%[res.hdr(x)]"]), &env).unwrap_err();
        assert!(e.starts_with("failed to parse unique-id : "), "{e}");
        assert_eq!(
            parse_header(&w(&["unique-id-header", "X-ID"])).unwrap(),
            "X-ID"
        );
        assert!(parse_header(&w(&["unique-id-header"])).is_err());
    }
}
