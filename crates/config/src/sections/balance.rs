//! Load balancing and persistence keywords of proxy sections: `balance`,
//! `hash-type`, `cookie` and `retry-on`, read the way HAProxy 2.6 reads
//! them.

use crate::model::*;
use crate::units::parse_time_secs;

/// Warnings found while parsing a keyword that was otherwise accepted.
pub(crate) type Warnings = Vec<String>;

/// `balance <algorithm> [<arguments>]` (`words[0]` is `balance`).
pub(crate) fn parse_balance(words: &[String], warns: &mut Warnings) -> Result<Balance, String> {
    let Some(algo) = words.get(1) else {
        return Err("expects a load balancing algorithm".into());
    };
    let args = &words[2..];
    let no_args = |name: &str, warns: &mut Warnings| {
        if let Some(a) = args.first() {
            warns.push(format!(
                "'balance {name}' takes no argument; '{a}' and what follows are ignored"
            ));
        }
    };
    let b = match algo.as_str() {
        "roundrobin" => {
            no_args(algo, warns);
            Balance::RoundRobin
        }
        "static-rr" => {
            no_args(algo, warns);
            Balance::StaticRr
        }
        "leastconn" => {
            no_args(algo, warns);
            Balance::LeastConn
        }
        "first" => {
            no_args(algo, warns);
            Balance::First
        }
        "source" => {
            no_args(algo, warns);
            Balance::Source
        }
        "uri" => parse_uri(args, warns)?,
        "url_param" => {
            let Some(name) = args.first() else {
                return Err("url_param requires an URL parameter name.".into());
            };
            match args.get(1).map(String::as_str) {
                None => {}
                Some("check_post") => {
                    return Err(
                        "'check_post' (looking for the parameter in POST bodies) is not implemented yet in Fairlead"
                            .into(),
                    )
                }
                Some(m) => {
                    return Err(format!(
                        "url_param only accepts 'check_post' modifier (got '{m}')."
                    ))
                }
            }
            Balance::UrlParam { name: name.clone() }
        }
        a if a.starts_with("hdr(") => {
            let inner = &a[4..];
            let name = match inner.find(')') {
                Some(end) if end > 0 => &inner[..end],
                _ => return Err("hdr requires an http header field name.".into()),
            };
            let use_domain_only = match args.first().map(String::as_str) {
                None => false,
                Some("use_domain_only") => true,
                Some(m) => {
                    return Err(format!(
                        "{a} only accepts 'use_domain_only' modifier (got '{m}')."
                    ))
                }
            };
            Balance::Hdr {
                name: name.to_string(),
                use_domain_only,
            }
        }
        a if a == "random" || a.starts_with("random(") => {
            no_args("random", warns);
            let draws = match a.strip_prefix("random(") {
                None | Some(")") => 2,
                Some(rest) => {
                    let end = rest.find(|c: char| !c.is_ascii_digit());
                    let num = &rest[..end.unwrap_or(rest.len())];
                    match end.map(|e| &rest[e..]) {
                        None => return Err("random : missing closing parenthesis.".into()),
                        Some(")") => {}
                        Some(t) => {
                            let c = t.chars().next().unwrap_or(')');
                            return Err(format!(
                                "random : unexpected character '{c}' after argument."
                            ));
                        }
                    }
                    let n: u32 = num.parse().map_err(|_| {
                        format!("random : invalid number of draws '{num}'.")
                    })?;
                    if n < 1 {
                        return Err("random : number of draws must be at least 1.".into());
                    }
                    n
                }
            };
            Balance::Random { draws }
        }
        a if a.starts_with("rdp-cookie") => {
            let name = rdp_cookie_name(&a["rdp-cookie".len()..], "mstshash")
                .ok_or_else(|| "rdp-cookie : missing cookie name.".to_string())?;
            Balance::RdpCookie { name }
        }
        "hash" => return Err("balance hash is not implemented yet in Fairlead".into()),
        a => {
            return Err(format!(
                "unknown load balancing algorithm '{a}'; supported: 'roundrobin', 'static-rr', 'leastconn', 'first', 'source', 'uri', 'url_param', 'hdr(name)', 'random', 'rdp-cookie(name)' and 'hash'"
            ))
        }
    };
    Ok(b)
}

/// The cookie name of `rdp-cookie<tail>`: `default` for an empty tail,
/// the text up to the first `)` of `(<name>)` (what follows is ignored,
/// as HAProxy does), `None` when the name is missing.
fn rdp_cookie_name(tail: &str, default: &str) -> Option<String> {
    if tail.is_empty() {
        return Some(default.to_string());
    }
    let inner = tail.strip_prefix('(')?;
    let end = inner.find(')').filter(|&e| e > 0)?;
    Some(inner[..end].to_string())
}

/// `persist rdp-cookie[(<name>)]` (`words[0]` is `persist`): the cookie
/// name, `msts` by default.
pub(crate) fn parse_persist(words: &[String]) -> Result<String, String> {
    let Some(method) = words.get(1).filter(|m| !m.is_empty()) else {
        return Err("missing persist method.".into());
    };
    let Some(tail) = method.strip_prefix("rdp-cookie") else {
        return Err("unknown persist method.".into());
    };
    rdp_cookie_name(tail, "msts")
        .ok_or_else(|| "persist rdp-cookie(name)' requires an rdp cookie name.".into())
}

fn parse_uri(args: &[String], warns: &mut Warnings) -> Result<Balance, String> {
    let (mut whole, mut len, mut depth) = (false, None, None);
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            k @ ("len" | "depth") => {
                let v = args.get(i + 1).map(String::as_str).unwrap_or("");
                let n = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0 && v.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| {
                        format!("uri : '{k}' expects a positive integer (got '{v}').")
                    })?;
                if k == "len" {
                    len = Some(n);
                } else {
                    depth = Some(n);
                }
                i += 2;
            }
            "whole" => {
                whole = true;
                i += 1;
            }
            "path-only" => {
                warns.push(
                    "'path-only' is not implemented yet in Fairlead; the URI is hashed as received"
                        .into(),
                );
                i += 1;
            }
            other => {
                return Err(format!(
                    "uri only accepts parameters 'len', 'depth', 'path-only', and 'whole' (got '{other}')."
                ))
            }
        }
    }
    Ok(Balance::Uri { whole, len, depth })
}

/// `hash-type <method> [<function> [avalanche]]`.
pub(crate) fn parse_hash_type(words: &[String]) -> Result<HashType, String> {
    let method = match words.get(1).map(String::as_str) {
        Some("map-based") => HashMethod::MapBased,
        Some("consistent") => HashMethod::Consistent,
        Some("avalanche") => {
            return Err("experimental feature 'hash-type avalanche' is not supported anymore, please use 'hash-type map-based sdbm avalanche' instead.".into())
        }
        _ => return Err("only supports 'consistent' and 'map-based'.".into()),
    };
    let Some(func) = words.get(2) else {
        // With no function, consistent hashing also applies avalanche.
        return Ok(HashType {
            method,
            function: HashFunction::Sdbm,
            avalanche: method == HashMethod::Consistent,
        });
    };
    let function = match func.as_str() {
        "sdbm" => HashFunction::Sdbm,
        "djb2" => HashFunction::Djb2,
        "wt6" => HashFunction::Wt6,
        "crc32" => HashFunction::Crc32,
        _ => return Err("only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions.".into()),
    };
    let avalanche = match words.get(3).map(String::as_str) {
        None => false,
        Some("avalanche") => true,
        Some(_) => {
            return Err("only supports 'avalanche' as a modifier for hash functions.".into())
        }
    };
    if words.len() > 4 {
        return Err(format!("too many arguments (got '{}')", words[4]));
    }
    Ok(HashType {
        method,
        function,
        avalanche,
    })
}

/// Characters HAProxy accepts in a cookie domain.
fn bad_domain_char(d: &str) -> Option<char> {
    d.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
}

/// `cookie <name> [options]`.
pub(crate) fn parse_cookie(words: &[String], warns: &mut Warnings) -> Result<CookieConfig, String> {
    let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
        return Err("expects <cookie_name> as argument.".into());
    };
    let mut c = CookieConfig::new(name);
    let mut modes: Vec<&str> = Vec::new();
    let mut i = 2;
    while i < words.len() {
        let w = words[i].as_str();
        let value = || {
            words
                .get(i + 1)
                .filter(|v| !v.is_empty())
                .map(String::as_str)
        };
        match w {
            "rewrite" | "insert" | "prefix" => {
                if !modes.contains(&w) {
                    modes.push(w);
                }
            }
            "indirect" => c.indirect = true,
            "nocache" => c.nocache = true,
            "postonly" => c.postonly = true,
            "preserve" => c.preserve = true,
            "httponly" => c.httponly = true,
            "secure" => c.secure = true,
            "domain" => {
                let Some(d) = value() else {
                    return Err("'domain' expects <domain> as argument.".into());
                };
                if let Some(ch) = bad_domain_char(d) {
                    return Err(format!(
                        "character '{ch}' is not permitted in domain name '{d}'."
                    ));
                }
                if !d.contains('.') {
                    warns.push(format!("domain '{d}' contains no embedded dot, this configuration may not work properly (see RFC6265#5.2.3)."));
                }
                c.domains.push(d.to_string());
                i += 1;
            }
            "maxidle" | "maxlife" => {
                let Some(v) = value() else {
                    return Err(format!("'{w}' expects a time in seconds as argument."));
                };
                let t = parse_time_secs(v).map_err(|e| format!("'{w}': {e}"))?;
                let t = (!t.is_zero()).then_some(t);
                if w == "maxidle" {
                    c.maxidle = t;
                } else {
                    c.maxlife = t;
                }
                i += 1;
            }
            "dynamic" | "attr" => {
                return Err(format!(
                    "cookie option '{w}' is not implemented yet in Fairlead"
                ))
            }
            _ => return Err(format!("unknown option '{w}'; 'cookie' supports 'rewrite', 'insert', 'prefix', 'indirect', 'nocache', 'postonly', 'preserve', 'httponly', 'secure', 'domain', 'maxidle', 'dynamic', 'maxlife' and 'attr' options.")),
        }
        i += 1;
    }
    if modes.len() > 1 {
        return Err("cookie 'rewrite', 'insert' and 'prefix' modes are incompatible.".into());
    }
    if modes == ["rewrite"] && c.indirect {
        return Err("cookie 'rewrite' and 'indirect' modes are incompatible.".into());
    }
    c.mode = match modes.first() {
        Some(&"insert") => CookieMode::Insert,
        Some(&"prefix") => CookieMode::Prefix,
        _ => CookieMode::Rewrite,
    };
    if c.preserve && c.mode != CookieMode::Insert && !c.indirect {
        return Err("cookie 'preserve' requires at least 'insert' or 'indirect'.".into());
    }
    Ok(c)
}

/// `retry-on <keyword>...`.
pub(crate) fn parse_retry_on(words: &[String], warns: &mut Warnings) -> Result<RetryOn, String> {
    if words.len() < 2 {
        return Err("needs at least one keyword to specify when to retry".into());
    }
    let mut r = RetryOn {
        conn_failure: false,
        ..RetryOn::default()
    };
    for (i, w) in words.iter().enumerate().skip(1) {
        match w.as_str() {
            "conn-failure" => r.conn_failure = true,
            "empty-response" => r.empty_response = true,
            "junk-response" => r.junk_response = true,
            "response-timeout" => r.response_timeout = true,
            "0rtt-rejected" => warns.push(
                "'0rtt-rejected' never triggers: TLS early data is not implemented yet in Fairlead"
                    .into(),
            ),
            "all-retryable-errors" => {
                r.conn_failure = true;
                r.empty_response = true;
                r.junk_response = true;
                r.response_timeout = true;
                r.statuses.extend([500, 502, 503, 504]);
            }
            "none" => {
                if i != 1 || words.len() > 2 {
                    return Err("'none' keyword only usable alone".into());
                }
            }
            s @ ("401" | "403" | "404" | "408" | "425" | "500" | "501" | "502" | "503" | "504") => {
                r.statuses.push(s.parse().unwrap_or(0))
            }
            other => return Err(format!("unknown keyword '{other}'")),
        }
    }
    r.statuses.sort_unstable();
    r.statuses.dedup();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn bal(s: &str) -> Result<Balance, String> {
        parse_balance(&w(s), &mut Vec::new())
    }

    #[test]
    fn balances() {
        assert_eq!(bal("balance roundrobin"), Ok(Balance::RoundRobin));
        assert_eq!(bal("balance static-rr"), Ok(Balance::StaticRr));
        assert_eq!(bal("balance leastconn"), Ok(Balance::LeastConn));
        assert_eq!(bal("balance first"), Ok(Balance::First));
        assert_eq!(bal("balance source"), Ok(Balance::Source));
        assert_eq!(
            bal("balance uri"),
            Ok(Balance::Uri {
                whole: false,
                len: None,
                depth: None
            })
        );
        assert_eq!(
            bal("balance uri whole len 10 depth 3"),
            Ok(Balance::Uri {
                whole: true,
                len: Some(10),
                depth: Some(3)
            })
        );
        let mut warns = Vec::new();
        assert!(parse_balance(&w("balance uri path-only"), &mut warns).is_ok());
        assert!(warns[0].contains("'path-only' is not implemented yet"));
        assert!(bal("balance uri len 0")
            .unwrap_err()
            .contains("positive integer"));
        assert!(bal("balance uri len")
            .unwrap_err()
            .contains("positive integer"));
        assert!(bal("balance uri bogus")
            .unwrap_err()
            .contains("only accepts"));
        assert_eq!(
            bal("balance url_param uid"),
            Ok(Balance::UrlParam { name: "uid".into() })
        );
        assert!(bal("balance url_param").unwrap_err().contains("requires"));
        assert!(bal("balance url_param u check_post")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(bal("balance url_param u x")
            .unwrap_err()
            .contains("check_post"));
        assert_eq!(
            bal("balance hdr(Host) use_domain_only"),
            Ok(Balance::Hdr {
                name: "Host".into(),
                use_domain_only: true
            })
        );
        assert_eq!(
            bal("balance hdr(User-Agent)"),
            Ok(Balance::Hdr {
                name: "User-Agent".into(),
                use_domain_only: false
            })
        );
        assert!(bal("balance hdr()")
            .unwrap_err()
            .contains("header field name"));
        assert!(bal("balance hdr(x")
            .unwrap_err()
            .contains("header field name"));
        assert!(bal("balance hdr(x) nope")
            .unwrap_err()
            .contains("use_domain_only"));
        assert_eq!(bal("balance random"), Ok(Balance::Random { draws: 2 }));
        assert_eq!(bal("balance random()"), Ok(Balance::Random { draws: 2 }));
        assert_eq!(bal("balance random(5)"), Ok(Balance::Random { draws: 5 }));
        assert!(bal("balance random(0)").unwrap_err().contains("at least 1"));
        assert!(bal("balance random(3")
            .unwrap_err()
            .contains("closing parenthesis"));
        assert!(bal("balance random(3x)").unwrap_err().contains("'x'"));
        let rdp = |n: &str| Ok(Balance::RdpCookie { name: n.into() });
        assert_eq!(bal("balance rdp-cookie"), rdp("mstshash"));
        assert_eq!(bal("balance rdp-cookie(user)"), rdp("user"));
        // HAProxy keeps the text up to the first ')'.
        assert_eq!(bal("balance rdp-cookie(a)b"), rdp("a"));
        for bad in ["rdp-cookie()", "rdp-cookie(x", "rdp-cookiex"] {
            assert_eq!(
                bal(&format!("balance {bad}")),
                Err("rdp-cookie : missing cookie name.".to_string()),
                "{bad}"
            );
        }
        let persist = |l: &str| parse_persist(&w(l));
        assert_eq!(persist("persist rdp-cookie"), Ok("msts".into()));
        assert_eq!(persist("persist rdp-cookie(tok)"), Ok("tok".into()));
        assert_eq!(persist("persist"), Err("missing persist method.".into()));
        assert_eq!(
            persist("persist rdp-cookie("),
            Err("persist rdp-cookie(name)' requires an rdp cookie name.".into())
        );
        assert_eq!(
            persist("persist cookie"),
            Err("unknown persist method.".into())
        );
        assert!(bal("balance hash req.cookie(x)")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(bal("balance nope")
            .unwrap_err()
            .contains("unknown load balancing"));
        assert!(bal("balance").unwrap_err().contains("expects"));
        let mut warns = Vec::new();
        assert_eq!(
            parse_balance(&w("balance leastconn extra"), &mut warns),
            Ok(Balance::LeastConn)
        );
        assert!(warns[0].contains("takes no argument"));
    }

    #[test]
    fn hash_types() {
        let h = |s: &str| parse_hash_type(&w(s));
        assert_eq!(h("hash-type map-based"), Ok(HashType::default()));
        assert_eq!(
            h("hash-type consistent"),
            Ok(HashType {
                method: HashMethod::Consistent,
                function: HashFunction::Sdbm,
                avalanche: true
            })
        );
        assert_eq!(
            h("hash-type consistent djb2"),
            Ok(HashType {
                method: HashMethod::Consistent,
                function: HashFunction::Djb2,
                avalanche: false
            })
        );
        assert_eq!(
            h("hash-type map-based crc32 avalanche"),
            Ok(HashType {
                method: HashMethod::MapBased,
                function: HashFunction::Crc32,
                avalanche: true
            })
        );
        assert_eq!(
            h("hash-type consistent wt6").unwrap().function,
            HashFunction::Wt6
        );
        assert!(h("hash-type")
            .unwrap_err()
            .contains("'consistent' and 'map-based'"));
        assert!(h("hash-type avalanche")
            .unwrap_err()
            .contains("not supported anymore"));
        assert!(h("hash-type consistent md5")
            .unwrap_err()
            .contains("hash functions"));
        assert!(h("hash-type consistent sdbm x")
            .unwrap_err()
            .contains("modifier"));
    }

    #[test]
    fn cookies() {
        let c = |s: &str| parse_cookie(&w(s), &mut Vec::new());
        let k = c("cookie SRV").unwrap();
        assert_eq!(k.name, "SRV");
        assert_eq!(k.mode, CookieMode::Rewrite);
        assert!(!k.indirect && !k.nocache && k.domains.is_empty());
        let k = c("cookie SRV insert indirect nocache postonly preserve httponly secure domain .a.com domain b.org maxidle 30m maxlife 2h").unwrap();
        assert_eq!(k.mode, CookieMode::Insert);
        assert!(k.indirect && k.nocache && k.postonly && k.preserve && k.httponly && k.secure);
        assert_eq!(k.domains, [".a.com", "b.org"]);
        assert_eq!(k.maxidle, Some(Duration::from_secs(1800)));
        assert_eq!(k.maxlife, Some(Duration::from_secs(7200)));
        assert_eq!(
            c("cookie S maxidle 30").unwrap().maxidle,
            Some(Duration::from_secs(30))
        );
        assert_eq!(c("cookie S prefix").unwrap().mode, CookieMode::Prefix);
        assert!(c("cookie S indirect").unwrap().indirect);
        assert!(c("cookie").unwrap_err().contains("<cookie_name>"));
        assert!(c("cookie S insert prefix")
            .unwrap_err()
            .contains("incompatible"));
        assert!(c("cookie S rewrite indirect")
            .unwrap_err()
            .contains("incompatible"));
        assert!(c("cookie S preserve").unwrap_err().contains("requires"));
        assert!(c("cookie S domain").unwrap_err().contains("<domain>"));
        assert!(c("cookie S domain a/b.c").unwrap_err().contains("'/'"));
        assert!(c("cookie S maxidle").unwrap_err().contains("expects"));
        assert!(c("cookie S maxidle 10x")
            .unwrap_err()
            .contains("invalid unit"));
        assert!(c("cookie S dynamic")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(c("cookie S attr SameSite=Lax")
            .unwrap_err()
            .contains("not implemented yet"));
        assert!(c("cookie S bogus")
            .unwrap_err()
            .contains("unknown option 'bogus'"));
        let mut warns = Vec::new();
        parse_cookie(&w("cookie S domain localhost"), &mut warns).unwrap();
        assert!(warns[0].contains("no embedded dot"));
    }

    #[test]
    fn retry_ons() {
        let r = |s: &str| parse_retry_on(&w(s), &mut Vec::new());
        assert_eq!(
            r("retry-on none"),
            Ok(RetryOn {
                conn_failure: false,
                ..RetryOn::default()
            })
        );
        let all = r("retry-on all-retryable-errors").unwrap();
        assert!(
            all.conn_failure && all.empty_response && all.junk_response && all.response_timeout
        );
        assert_eq!(all.statuses, [500, 502, 503, 504]);
        let x = r("retry-on 503 empty-response 404 503").unwrap();
        assert!(!x.conn_failure && x.empty_response && !x.junk_response);
        assert_eq!(x.statuses, [404, 503]);
        let x = r(
            "retry-on conn-failure response-timeout 401 403 408 425 500 501 502 504 junk-response",
        )
        .unwrap();
        assert!(x.conn_failure && x.response_timeout && x.junk_response);
        assert_eq!(x.statuses, [401, 403, 408, 425, 500, 501, 502, 504]);
        assert!(r("retry-on").unwrap_err().contains("at least one keyword"));
        assert!(r("retry-on none 503")
            .unwrap_err()
            .contains("only usable alone"));
        assert!(r("retry-on 503 none")
            .unwrap_err()
            .contains("only usable alone"));
        assert!(r("retry-on 505")
            .unwrap_err()
            .contains("unknown keyword '505'"));
        let mut warns = Vec::new();
        let x = parse_retry_on(&w("retry-on 0rtt-rejected"), &mut warns).unwrap();
        assert!(!x.conn_failure);
        assert!(warns[0].contains("0rtt-rejected"));
    }
}
