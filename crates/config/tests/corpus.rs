//! Runs `parse` over the shared corpus of real-world haproxy.cfg files.
//!
//! Checks that parsing never panics nor hangs, that every diagnostic of a
//! rejected file carries a `file:line` with a line above 0, and that the
//! per-file outcome matches `tests/corpus_expectations.txt` (regenerate it
//! with `UPDATE_CORPUS=1 cargo test -p fairlead-config --test corpus`).
//! Skips with a notice when the corpus directory is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use fairlead_config::{parse, Diagnostic, Level, Source};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/haproxy-cfg")
}

fn expectations_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_expectations.txt")
}

/// HAProxy's own verdict per file, from SOURCES.tsv (last column).
fn haproxy_verdicts(dir: &Path) -> BTreeMap<String, String> {
    let Ok(tsv) = std::fs::read_to_string(dir.join("SOURCES.tsv")) else {
        return BTreeMap::new();
    };
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = header
        .iter()
        .position(|h| h.starts_with("haproxy"))
        .unwrap_or(header.len().saturating_sub(1));
    lines
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            Some((cols.first()?.to_string(), cols.get(col)?.to_string()))
        })
        .collect()
}

/// Parses on another thread, detecting panics and hangs.
fn parse_guarded(name: &str, text: String) -> Result<Result<usize, Vec<Diagnostic>>, String> {
    let (tx, rx) = mpsc::channel();
    let name = name.to_string();
    std::thread::spawn(move || {
        let res = std::panic::catch_unwind(|| {
            let src = [Source { name, text }];
            parse(&src, &|_| None).map(|p| p.diagnostics.len())
        });
        let _ = tx.send(res);
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(_)) => Err("panicked".into()),
        Err(_) => Err("did not finish within 20 seconds (hang?)".into()),
    }
}

#[test]
fn corpus() {
    let dir = corpus_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!(
            "NOTICE: corpus directory {} is missing; skipping",
            dir.display()
        );
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cfg"))
        .collect();
    files.sort();
    let verdicts = haproxy_verdicts(&dir);
    let mut summary = String::new();
    let mut failures = Vec::new();
    let (mut accepted, mut both_ok, mut both_ko, mut we_only_ko, mut we_only_ok) = (0, 0, 0, 0, 0);
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let haproxy_ok = verdicts.get(&name).map(|v| v == "valid");
        let theirs = match haproxy_ok {
            Some(true) => "HAProxy: valid",
            Some(false) => "HAProxy: rejected",
            None => "HAProxy: unknown",
        };
        match parse_guarded(&name, text) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(Ok(_)) => {
                accepted += 1;
                summary.push_str(&format!("{name}: accepted ({theirs})\n"));
                match haproxy_ok {
                    Some(true) => both_ok += 1,
                    Some(false) => we_only_ok += 1,
                    None => {}
                }
            }
            Ok(Err(diags)) => {
                summary.push_str(&format!("{name}: rejected ({theirs})\n"));
                for d in diags.iter().filter(|d| d.level == Level::Alert) {
                    summary.push_str(&format!("  {d}\n"));
                }
                for d in &diags {
                    if d.location.line == 0 || d.location.file != name {
                        failures.push(format!(
                            "{name}: diagnostic without a proper file:line: {d}"
                        ));
                    }
                }
                if !diags.iter().any(|d| d.level == Level::Alert) {
                    failures.push(format!("{name}: rejected without any alert"));
                }
                match haproxy_ok {
                    Some(true) => we_only_ko += 1,
                    Some(false) => both_ko += 1,
                    None => {}
                }
            }
        }
    }
    println!("corpus: {accepted} of {} files accepted", files.len());
    println!(
        "agreement with HAProxy 2.x: both accept {both_ok}, both reject {both_ko}, only Fairlead rejects {we_only_ko}, only HAProxy rejects {we_only_ok}"
    );
    assert!(
        failures.is_empty(),
        "corpus failures:\n{}",
        failures.join("\n")
    );

    let exp_path = expectations_path();
    if std::env::var_os("UPDATE_CORPUS").is_some() {
        std::fs::write(&exp_path, &summary).unwrap();
        println!("wrote {}", exp_path.display());
        return;
    }
    let expected = std::fs::read_to_string(&exp_path).unwrap_or_default();
    if expected != summary {
        let exp: Vec<&str> = expected.lines().collect();
        let got: Vec<&str> = summary.lines().collect();
        let mut diff = String::new();
        for l in exp.iter().filter(|l| !got.contains(l)) {
            diff.push_str(&format!("- {l}\n"));
        }
        for l in got.iter().filter(|l| !exp.contains(l)) {
            diff.push_str(&format!("+ {l}\n"));
        }
        panic!("corpus outcomes changed (rerun with UPDATE_CORPUS=1 to accept):\n{diff}");
    }
}
