//! Helpers shared by the crate's test modules.

use crate::*;

pub(crate) fn no_env(_: &str) -> Option<String> {
    None
}

pub(crate) fn src(text: &str) -> Vec<Source> {
    vec![Source {
        name: "t.cfg".into(),
        text: text.into(),
    }]
}

pub(crate) fn ok(text: &str) -> Parsed {
    match parse(&src(text), &no_env) {
        Ok(p) => p,
        Err(d) => panic!(
            "unexpected errors:\n{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

pub(crate) fn errs(text: &str) -> Vec<String> {
    match parse(&src(text), &no_env) {
        Ok(p) => panic!("expected errors for {text:?}, got warnings {:?}", warns(&p)),
        Err(d) => d
            .iter()
            .filter(|d| d.level == Level::Alert)
            .map(|d| d.to_string())
            .collect(),
    }
}

pub(crate) fn warns(p: &Parsed) -> Vec<String> {
    p.diagnostics.iter().map(|d| d.to_string()).collect()
}

pub(crate) fn has(list: &[String], needle: &str) -> bool {
    list.iter().any(|l| l.contains(needle))
}

pub(crate) fn parse_text(text: &str) -> Result<Parsed, Vec<Diagnostic>> {
    parse(
        &[Source {
            name: "t.cfg".into(),
            text: text.into(),
        }],
        &|_| None,
    )
}

pub(crate) fn alerts(text: &str) -> Vec<String> {
    match parse_text(text) {
        Ok(_) => panic!("expected errors for {text:?}"),
        Err(d) => d
            .iter()
            .filter(|d| d.level == Level::Alert)
            .map(|d| d.to_string())
            .collect(),
    }
}
