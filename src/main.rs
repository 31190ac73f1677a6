//! `fairlead`: the load balancer's command line, with HAProxy's habits.
//!
//! ```text
//! fairlead -f FILE|DIR [-f ...] [-c] [-db|-D] [-p PIDFILE] [-q] [-sf PID...|-st PID...]
//! fairlead demo
//! fairlead -v
//! ```
#![forbid(unsafe_code)]

mod cli;
mod demo;

use std::process::ExitCode;

fn main() -> ExitCode {
    // systemd's socket activation: while the process has one thread.
    fairlead_runtime::sockets::take_systemd_fds();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("demo") {
        return demo::run(&args[1..]);
    }
    let opts = match cli::parse_args(&args) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("[ALERT] {msg}");
            eprintln!("{}", cli::USAGE);
            return ExitCode::from(1);
        }
    };
    cli::execute(opts)
}
