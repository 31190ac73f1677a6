//! The command line: `-c`, error format, directories, version.

mod common;
use common::*;
use std::process::Command;

fn fairlead(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .args(args)
        .output()
        .expect("run fairlead");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_valid_config() {
    let p = write_cfg(
        "global\n    maxconn 100\ndefaults\n    mode http\n    timeout client 5s\n\
frontend fe\n    bind 127.0.0.1:1\n    default_backend bk\nbackend bk\n    server s1 127.0.0.1:2\n",
    );
    let (code, out, err) = fairlead(&["-c", "-f", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Configuration file is valid"));
}

#[test]
fn check_reports_every_error_with_file_and_line() {
    let p = write_cfg(
        "global\n    maxconn many\n\
frontend fe\n    bind 127.0.0.1:1\n    frobnicate yes\n    default_backend nowhere\n\
backend bk\n    timeout server 5parsecs\n    server s1 127.0.0.1:2 weight 1000\n",
    );
    let path = p.to_str().unwrap();
    let (code, _out, err) = fairlead(&["-c", "-f", path]);
    assert_eq!(code, 1);
    let alerts: Vec<&str> = err.lines().filter(|l| l.starts_with("[ALERT]")).collect();
    for line in [2, 5, 6, 8, 9] {
        let tag = format!("[ALERT] {path}:{line}: ");
        assert!(
            alerts.iter().any(|a| a.starts_with(&tag)),
            "missing error for line {line}:\n{err}"
        );
    }
    assert!(err.contains("frobnicate"), "{err}");
}

#[test]
fn unimplemented_keyword_is_named() {
    let p = write_cfg(
        "frontend fe\n    mode http\n    bind 127.0.0.1:1\n    http-request wait-for-body time 1s\n    default_backend bk\n\
backend bk\n    mode http\n    server s1 127.0.0.1:2\n",
    );
    let path = p.to_str().unwrap();
    let (code, _out, err) = fairlead(&["-c", "-f", path]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("{path}:4")), "{err}");
    // The message names the action, not only the directive.
    assert!(
        err.contains("'http-request wait-for-body' is not implemented yet"),
        "{err}"
    );
}

#[test]
fn directory_loads_cfg_files_in_order() {
    let dir = std::env::temp_dir().join(format!("fairlead-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("10-global.cfg"), "global\n    maxconn 10\n").unwrap();
    std::fs::write(
        dir.join("20-proxy.cfg"),
        "defaults\n    mode http\nlisten app\n    bind 127.0.0.1:1\n    server s 127.0.0.1:2\n",
    )
    .unwrap();
    std::fs::write(dir.join("ignored.txt"), "this is not a config").unwrap();
    let (code, _o, err) = fairlead(&["-c", "-f", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(dir.join("30-bad.cfg"), "backend b\n    nonsense\n").unwrap();
    let (code, _o, err) = fairlead(&["-c", "-f", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("30-bad.cfg:2"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn version_and_usage() {
    let (code, out, _) = fairlead(&["-v"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Fairlead version"));
    let (code, _, err) = fairlead(&["-z"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown option '-z'"));
}
