//! Splicing: `option splice-auto|splice-request|splice-response` in
//! proxies (with `defaults` inheritance and `no option`), and the global
//! `nosplice`, `maxpipes` and `tune.pipesize`.

use crate::test_util::parse_text;
use crate::*;

fn ok(text: &str) -> Parsed {
    parse_text(text).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

fn errors(text: &str) -> String {
    match parse_text(text) {
        Ok(_) => String::new(),
        Err(d) => d
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

const PROXIES: &str = "\
defaults
    mode tcp
    option splice-auto
frontend fe
    bind 127.0.0.1:9000
    option splice-request
    default_backend be
backend be
    no option splice-auto
    option splice-response
    server s 127.0.0.1:9001
";

#[test]
fn proxy_options_inherit_and_negate() {
    let p = ok(PROXIES);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let fe = &p.config.frontends[0].options.splice;
    assert_eq!(
        *fe,
        Splice {
            auto: true,
            request: true,
            response: false
        }
    );
    let be = &p.config.backends[0].options.splice;
    assert_eq!(
        *be,
        Splice {
            auto: false,
            request: false,
            response: true
        }
    );
    assert_eq!(
        fe.or(*be),
        Splice {
            auto: true,
            request: true,
            response: true
        }
    );
    assert!(!Splice::default().any());
}

#[test]
fn global_keywords() {
    let p = ok("global\n    nosplice\n    maxpipes 500\n    tune.pipesize 262144\n");
    let g = &p.config.global;
    assert!(g.nosplice);
    assert_eq!(g.maxpipes, Some(500));
    assert_eq!(g.pipesize, Some(262144));
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let d = ok("global\n    daemon\n").config.global;
    assert!(!d.nosplice);
    assert_eq!((d.maxpipes, d.pipesize), (None, None));
}

#[test]
fn bad_arguments_are_errors() {
    assert!(errors("global\n    maxpipes x\n").contains("unsigned integer"));
    assert!(errors("global\n    tune.pipesize\n").contains("expects one argument"));
    assert!(errors("global\n    nosplice 1\n").contains("takes no argument"));
    let e = errors("defaults\n    option splice-auto 1\n");
    assert!(e.contains("takes no argument"), "{e}");
}
