//! h2spec (github.com/summerwind/h2spec, 2.2.1: 146 cases) in strict mode
//! against the real binary, on a TLS bind with ALPN and on an h2c bind,
//! both forwarding to an HTTP/1 origin that answers a non-empty 200 (at
//! least 5 bytes, or h2spec skips its negative-window case). Every case
//! must pass and none may be skipped.
//!
//! `.ci/run` installs h2spec with `go install`; the test looks for it on
//! the `PATH`, then in `$GOPATH/bin` and `~/go/bin`, and fails (it does not
//! skip) when it is nowhere.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use std::path::PathBuf;
use std::process::Command;

/// The h2spec binary, wherever `go install` put it.
fn h2spec() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(g) = std::env::var_os("GOPATH") {
        dirs.push(PathBuf::from(g).join("bin"));
    }
    if let Some(h) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(h).join("go/bin"));
    }
    dirs.into_iter()
        .map(|d| d.join("h2spec"))
        .find(|p| p.is_file())
        .expect("h2spec not found (go install github.com/summerwind/h2spec/cmd/h2spec@latest)")
}

/// `(tests, passed, skipped, failed)` from h2spec's last line, e.g.
/// "146 tests, 146 passed, 0 skipped, 0 failed".
fn summary(out: &str) -> Option<(u32, u32, u32, u32)> {
    let line = out.lines().rev().find(|l| l.contains(" tests, "))?;
    let n: Vec<u32> = line
        .split(", ")
        .filter_map(|part| part.split_whitespace().next()?.parse().ok())
        .collect();
    match n[..] {
        [t, p, s, f] => Some((t, p, s, f)),
        _ => None,
    }
}

fn run_h2spec(bind: std::net::SocketAddr, tls: bool) {
    let mut cmd = Command::new(h2spec());
    cmd.args(["-S", "-o", "5", "-h"])
        .arg(bind.ip().to_string())
        .arg("-p")
        .arg(bind.port().to_string());
    if tls {
        cmd.args(["-t", "-k"]);
    }
    let out = cmd.output().expect("run h2spec");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let failures: Vec<&str> = text.lines().filter(|l| l.contains('×')).collect();
    let (t, p, s, f) =
        summary(&text).unwrap_or_else(|| panic!("no h2spec summary:\n{text}\n{out:?}"));
    assert!(t >= 146, "h2spec ran {t} cases:\n{text}");
    assert_eq!((f, s), (0, 0), "failed or skipped: {failures:#?}\n{text}");
    assert_eq!(p, t);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn summary_line_is_parsed() {
    assert_eq!(
        summary("x\nFinished in 0.1 seconds\n146 tests, 145 passed, 1 skipped, 0 failed\n"),
        Some((146, 145, 1, 0))
    );
    assert_eq!(summary("nothing"), None);
}

/// h2c with prior knowledge (`bind ... proto h2`).
#[test]
fn h2spec_strict_on_h2c_bind() {
    let ip = test_ip();
    let (_t, o) = term(ip, "h2spec-origin");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run_h2spec(bind, false);
}

/// TLS with ALPN `h2,http/1.1`.
#[test]
fn h2spec_strict_on_tls_alpn_bind() {
    let ip = test_ip();
    let (_t, o) = term(ip, "h2spec-origin");
    let bind = free_addr(ip);
    let pki = tls::Pki::new("h2spec");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "h2spec.example");
    let cfg = h2_cfg(
        &format!("{bind} ssl crt {} alpn h2,http/1.1", pem.display()),
        &format!("    server s1 {o}"),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run_h2spec(bind, true);
}
