//! Keeps the README's generated parts in sync: the supported-keyword list
//! (from `fairlead_config::keyword_support`) and the corpus acceptance
//! count (from the corpus test's expectations file). Run with
//! `UPDATE_README=1` to rewrite them.

use fairlead_config::{keyword_support, Support};
use std::fmt::Write;

fn keyword_block() -> String {
    let all = keyword_support();
    let mut out = String::new();
    let mut sections: Vec<&str> = Vec::new();
    for k in &all {
        if !sections.contains(&k.section) {
            sections.push(k.section);
        }
    }
    out.push_str("| section | implemented | accepted with a warning | known, rejected as not implemented yet |\n");
    out.push_str("| --- | --- | --- | --- |\n");
    for s in sections {
        let list = |st: Support| {
            let mut v: Vec<&str> = all
                .iter()
                .filter(|k| k.section == s && k.status == st)
                .map(|k| k.keyword)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let code = |v: Vec<&str>| {
            v.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let not_yet = list(Support::NotYet);
        let _ = writeln!(
            out,
            "| {s} | {} | {} | {} keywords |",
            code(list(Support::Implemented)),
            code(list(Support::Warning)),
            not_yet.len()
        );
    }
    out.push_str(
        "\nEvery other keyword is an error: a keyword HAProxy knows gets \
\"'kw' is not implemented yet in Fairlead\", an unknown one gets \
\"unknown keyword\" with a suggestion. Nothing is ignored silently.\n",
    );
    out
}

fn corpus_block() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/config/tests/corpus_expectations.txt"
    );
    let text = std::fs::read_to_string(path).expect("corpus expectations");
    let files: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(".cfg: "))
        .collect();
    let accepted = files.iter().filter(|l| l.contains(": accepted")).count();
    format!(
        "Current result: **{accepted} of {} accepted**; every other file is rejected \
with a `file:line` message for each unsupported line. ACLs, `http-request` \
rules, content switching, HTTP/2, DNS discovery, stick tables and the PROXY \
protocol are in; what is left is mostly compression, \
`external-check` and \
files the corpus does not ship (error pages, maps), which HAProxy needs too; \
the TLS lines left are options rustls has no equivalent for, such as `curves` \
or `ca-verify-file`. No file crashes or hangs the parser.\n",
        files.len()
    )
}

fn replace_between(doc: &str, begin: &str, end: &str, body: &str) -> String {
    let b = doc
        .find(begin)
        .unwrap_or_else(|| panic!("README lacks {begin}"))
        + begin.len();
    let e = doc
        .find(end)
        .unwrap_or_else(|| panic!("README lacks {end}"));
    format!("{}\n{}{}", &doc[..b], body, &doc[e..])
}

#[test]
fn readme_generated_parts_are_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let new = replace_between(
        &doc,
        "<!-- keywords:begin -->",
        "<!-- keywords:end -->",
        &keyword_block(),
    );
    let new = replace_between(
        &new,
        "<!-- corpus:begin -->",
        "<!-- corpus:end -->",
        &corpus_block(),
    );
    if std::env::var_os("UPDATE_README").is_some() {
        std::fs::write(path, &new).unwrap();
        return;
    }
    assert!(
        doc == new,
        "README.md generated sections are stale: run `UPDATE_README=1 cargo test --test readme`"
    );
}

#[test]
fn readme_config_example_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let start = doc
        .find("```haproxy\n")
        .expect("README has a haproxy example")
        + 11;
    let end = start + doc[start..].find("```").unwrap();
    let cfg = std::env::temp_dir().join(format!("fairlead-readme-{}.cfg", std::process::id()));
    std::fs::write(&cfg, &doc[start..end]).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-c")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&cfg);
    assert!(
        out.status.success(),
        "README example rejected:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
