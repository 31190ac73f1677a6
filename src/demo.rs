//! `fairlead demo`: three bundled test origins and a proxy balancing over
//! them, from a configuration embedded in the binary
//! (`examples/demo.cfg`). Runs until Ctrl-C.

use std::net::SocketAddr;
use std::process::ExitCode;

/// The embedded configuration.
pub const DEMO_CFG: &str = include_str!("../examples/demo.cfg");

/// Where the demo listens unless `--bind ADDR` is given. Default is
/// 127.0.0.1:8080.
const DEFAULT_BIND: &str = "127.0.0.1:8080";

pub fn run(args: &[String]) -> ExitCode {
    let mut bind = DEFAULT_BIND.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.clone().next()) {
            ("--bind", Some(v)) => {
                bind = v.clone();
                it.next();
            }
            _ => {
                eprintln!("usage: fairlead demo [--bind ADDR:PORT]");
                return ExitCode::from(1);
            }
        }
    }
    let mut origins = Vec::new();
    let mut env: Vec<(String, String)> = vec![("FAIRLEAD_DEMO_BIND".into(), bind.clone())];
    for i in 1..=3 {
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
        let opts = fairlead_term::TermOptions {
            threads: 1,
            name: format!("origin-{i}"),
        };
        match fairlead_term::start(&[addr], opts) {
            Ok(h) => {
                let a = h.local_addrs()[0];
                env.push((format!("FAIRLEAD_DEMO_S{i}"), a.to_string()));
                origins.push(h);
            }
            Err(e) => {
                eprintln!("[ALERT] demo: cannot start origin {i}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let lookup = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    };
    let src = fairlead_config::Source {
        name: "<demo>".into(),
        text: DEMO_CFG.into(),
    };
    let cfg = match fairlead_config::parse(&[src], &lookup) {
        Ok(p) => {
            crate::cli::print_diagnostics(&p.diagnostics, false);
            p.config
        }
        Err(d) => {
            crate::cli::print_diagnostics(&d, false);
            return ExitCode::from(1);
        }
    };
    println!("Fairlead demo");
    for (k, v) in env.iter().skip(1) {
        println!(
            "  origin {:<18} {v}",
            k.trim_start_matches("FAIRLEAD_DEMO_")
        );
    }
    println!("  proxy  http://{bind}/  (roundrobin over the three origins)\n");
    println!("Try:");
    println!("  curl -si http://{bind}/            # see x-served-by rotate");
    println!("  curl -s 'http://{bind}/?s=10k' | wc -c   # 10 KiB body");
    println!("  curl -si 'http://{bind}/?r=404'    # status chosen by the origin");
    println!("  curl -si 'http://{bind}/?k=1&s=100'     # chunked response");
    println!("Ctrl-C stops the demo.");
    let opts = fairlead_runtime::RunOptions::default();
    match fairlead_runtime::run(cfg, opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[ALERT] {e}");
            ExitCode::from(1)
        }
    }
}
