//! The stats page rendered by a real browser (Debian's headless Chromium):
//! the DOM it builds names every proxy and server, and a screenshot is
//! written to `target/stats-page.png` for a person to look at.

mod common;
use common::*;
use std::process::Command;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new("which")
                .arg(b)
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn stats_page_renders_in_a_browser() {
    let Some(browser) = chromium() else {
        // CI installs Chromium (.ci/run); elsewhere the test needs it too.
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is required in CI"
        );
        eprintln!("chromium not installed; skipping the browser test");
        return;
    };
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend web\n    bind {bind}\n    default_backend app\n\
backend app\n    server app1 {a}\n    server app2 {a} disabled\n\
listen stats\n    bind {sb}\n    stats enable\n    stats uri /stats\n"
    );
    let _p = Proxy::start(&cfg, &[bind, sb]);
    for _ in 0..5 {
        assert_eq!(get(bind, "/").status, 200);
    }
    let url = format!("http://{sb}/stats");
    let common_args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,900",
    ];
    let dom = Command::new(browser)
        .args(common_args)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&dom.stdout);
    for name in ["web", "app", "app1", "app2", "stats"] {
        assert!(
            dom.contains(name),
            "{name} missing from the rendered page:\n{dom}"
        );
    }
    assert!(dom.contains("MAINT"), "disabled server state shown:\n{dom}");
    let png = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/stats-page.png");
    let _ = std::fs::remove_file(&png);
    let shot = Command::new(browser)
        .args(common_args)
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank page compresses to a few KiB; tables and text do not.
    assert!(
        bytes.len() > 15_000,
        "screenshot suspiciously small: {} bytes",
        bytes.len()
    );
}
