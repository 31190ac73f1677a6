//! `fairlead-load [options] URL [URL...]`: see `fairlead_load::args::USAGE`.

use std::io::Write;
use std::process::exit;

use fairlead_load::args::{self, Command};

fn main() {
    let opts = match args::parse(std::env::args().skip(1)) {
        Ok(Command::Run(o)) => *o,
        Ok(Command::Help) => {
            print!("{}", args::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("fairlead-load: {e}\n\n{}", args::USAGE);
            exit(2);
        }
    };
    let run = match fairlead_load::prepare(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fairlead-load: {e}");
            exit(1);
        }
    };
    // Ctrl-C / SIGTERM end the test early; the report is still printed.
    let stop = run.stop_handle();
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let Ok(mut term) = signal(SignalKind::terminate()) else {
                    return;
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            });
            stop.stop();
        });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match run.execute(&mut out) {
        Ok(s) => {
            let _ = write!(out, "{}", fairlead_load::report::text(&s));
            let _ = out.flush();
        }
        Err(e) => {
            eprintln!("fairlead-load: {e}");
            exit(1);
        }
    }
}
