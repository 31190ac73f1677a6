//! Command-line parsing and execution of the main mode.

use fairlead_config::{Diagnostic, Level, Source};
use std::process::ExitCode;

pub const USAGE: &str = "\
Usage: fairlead -f <cfgfile|cfgdir> [-f ...] [options]
       fairlead demo
Options:
  -f <file|dir>  load a configuration file, or every *.cfg of a directory in
                 lexical order; may be repeated
  -c             check the configuration and exit (0: valid, 1: errors)
  -db            stay in the foreground (the default)
  -dS            disable kernel splicing (as global 'nosplice')
  -D             run as a daemon
  -W             master-worker mode: SIGUSR2 (or systemctl reload) reloads
                 the configuration without dropping connections
  -Ws            master-worker mode with systemd notify support
  -S <path>      master CLI socket (`show proc`, `reload`), with -W
  -L <name>      local peer name for `peers` sections (default: host name)
  -p <pidfile>   write the process id to this file
  -q             quiet: no notices
  -sf <pid>...   take over these old processes' listening sockets, then
                 ask them to finish (SIGUSR1)
  -st <pid>...   once started, terminate these old processes (SIGTERM)
  -v, -vv        print the version and exit";

/// Parsed command line.
#[derive(Debug, Default)]
pub struct Options {
    pub files: Vec<String>,
    pub check: bool,
    pub daemon: bool,
    pub foreground: bool,
    pub pidfile: Option<String>,
    pub quiet: bool,
    pub version: bool,
    pub old_pids: Vec<i32>,
    pub old_terminate: bool,
    /// `-W` / `-Ws`.
    pub master_worker: bool,
    /// `-Ws`.
    pub systemd: bool,
    /// `-S <path>`.
    pub master_socket: Option<String>,
    /// `-L <name>`: the local peer name (wins over `localpeer`). Default
    /// is none: `localpeer`, else the host name.
    pub localpeer: Option<String>,
    /// `-dS`: never splice (as `nosplice`). Default is off.
    pub nosplice: bool,
}

pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = |name: &str| -> Result<String, String> {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("option '{name}' needs an argument"))
        };
        match a {
            "-f" => o.files.push(value("-f")?),
            "-c" => o.check = true,
            "-db" => o.foreground = true,
            "-dS" => o.nosplice = true,
            "-D" => o.daemon = true,
            "-W" => o.master_worker = true,
            "-Ws" => {
                o.master_worker = true;
                o.systemd = true;
            }
            "-p" => o.pidfile = Some(value("-p")?),
            "-S" => o.master_socket = Some(value("-S")?),
            "-L" => o.localpeer = Some(value("-L")?),
            "-q" => o.quiet = true,
            "-v" | "-vv" | "--version" => o.version = true,
            "-h" | "--help" => return Err("help requested".into()),
            "-sf" | "-st" => {
                o.old_terminate = a == "-st";
                while let Some(p) = args.get(i + 1).and_then(|s| s.parse::<i32>().ok()) {
                    o.old_pids.push(p);
                    i += 1;
                }
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown option '{other}'"));
            }
            // HAProxy accepts a bare file name too.
            other => o.files.push(other.to_string()),
        }
        i += 1;
    }
    if o.daemon && o.foreground {
        return Err("options '-D' and '-db' exclude each other".into());
    }
    if !o.version && o.files.is_empty() {
        return Err("no configuration file given (use -f <file>)".into());
    }
    Ok(o)
}

/// Reads `-f` arguments: files as given, directories as their `*.cfg`
/// files in lexical order.
pub fn read_sources(paths: &[String]) -> Result<Vec<Source>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("cannot open '{p}': {e}"))?;
        if meta.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(p)
                .map_err(|e| format!("cannot read directory '{p}': {e}"))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|path| path.extension().is_some_and(|x| x == "cfg") && path.is_file())
                .collect();
            names.sort();
            for n in names {
                out.push(read_one(&n.to_string_lossy())?);
            }
        } else {
            out.push(read_one(p)?);
        }
    }
    Ok(out)
}

fn read_one(path: &str) -> Result<Source, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read '{path}': {e}"))?;
    Ok(Source {
        name: path.to_string(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// Prints diagnostics in HAProxy's style.
pub fn print_diagnostics(diags: &[Diagnostic], quiet: bool) {
    for d in diags {
        if quiet && d.level == Level::Warning {
            continue;
        }
        eprintln!("{d}");
    }
}

/// Loads and parses the configuration, printing diagnostics; returns it
/// with the sources as read. A worker started by a master reads the
/// sources its master checked, not the files.
pub fn load_sources(
    files: &[String],
    quiet: bool,
) -> Result<(fairlead_config::Config, Vec<Source>), ()> {
    let sources = match fairlead_runtime::inherit::sources_from_env() {
        Some(r) => r.map_err(|e| eprintln!("[ALERT] {e}"))?,
        None => read_sources(files).map_err(|e| eprintln!("[ALERT] {e}"))?,
    };
    let env = |k: &str| std::env::var(k).ok();
    match fairlead_config::parse(&sources, &env) {
        Ok(p) => {
            print_diagnostics(&p.diagnostics, quiet);
            Ok((p.config, sources))
        }
        Err(diags) => {
            print_diagnostics(&diags, false);
            let errors = diags.iter().filter(|d| d.level == Level::Alert).count();
            eprintln!("[ALERT] Fatal errors found in configuration ({errors} error(s)).");
            Err(())
        }
    }
}

pub fn execute(o: Options) -> ExitCode {
    if o.version {
        println!(
            "Fairlead version {} (reads HAProxy 2.6 configuration syntax)",
            env!("CARGO_PKG_VERSION")
        );
        return ExitCode::SUCCESS;
    }
    if o.master_worker && !o.check {
        return run_master(o);
    }
    let Ok((mut cfg, sources)) = load_sources(&o.files, o.quiet) else {
        return ExitCode::from(1);
    };
    if let Some(l) = &o.localpeer {
        cfg.global.localpeer = Some(l.clone());
    }
    if o.nosplice {
        cfg.global.nosplice = true;
    }
    // `master-worker` in `global` is `-W` (a worker started by a master
    // reads the same configuration and stays a worker).
    let is_worker = std::env::var_os(fairlead_runtime::inherit::WORKER_ENV).is_some();
    if cfg.global.master_worker && !o.check && !is_worker {
        return run_master_with(o, cfg, sources);
    }
    if o.check {
        let (warnings, errors) = fairlead_runtime::check_files(&cfg);
        if !o.quiet {
            for w in &warnings {
                eprintln!("[WARNING]  {w}");
            }
        }
        for e in &errors {
            eprintln!("[ALERT]    {e}");
        }
        if !errors.is_empty() {
            eprintln!(
                "[ALERT]    Fatal errors found in configuration ({} error(s)).",
                errors.len()
            );
            return ExitCode::from(1);
        }
        if !o.quiet {
            println!("Configuration file is valid");
        }
        return ExitCode::SUCCESS;
    }
    let run = fairlead_runtime::RunOptions {
        daemon: o.daemon,
        pidfile: o.pidfile,
        quiet: o.quiet,
        old_pids: o.old_pids,
        old_terminate: o.old_terminate,
    };
    match fairlead_runtime::run(cfg, run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[ALERT] {e}");
            ExitCode::from(1)
        }
    }
}

fn run_master(o: Options) -> ExitCode {
    let Ok((cfg, sources)) = load_sources(&o.files, o.quiet) else {
        return ExitCode::from(1);
    };
    run_master_with(o, cfg, sources)
}

/// Runs as the master of the configuration already loaded.
fn run_master_with(o: Options, cfg: fairlead_config::Config, sources: Vec<Source>) -> ExitCode {
    let mut worker_args = Vec::new();
    for f in &o.files {
        worker_args.push("-f".to_string());
        worker_args.push(f.clone());
    }
    if o.quiet {
        worker_args.push("-q".into());
    }
    if let Some(l) = &o.localpeer {
        worker_args.push("-L".into());
        worker_args.push(l.clone());
    }
    if o.nosplice {
        worker_args.push("-dS".into());
    }
    let files = o.files.clone();
    let quiet = o.quiet;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("[ALERT] cannot find my own executable: {e}");
            return ExitCode::from(1);
        }
    };
    let opts = fairlead_runtime::master::MasterOptions {
        load: Box::new(move || {
            // A reload with a bad certificate keeps the running worker.
            let (cfg, sources) = load_sources(&files, quiet)?;
            let (_, errors) = fairlead_runtime::check_files(&cfg);
            for e in &errors {
                eprintln!("[ALERT]    {e}");
            }
            if errors.is_empty() {
                Ok((cfg, sources))
            } else {
                Err(())
            }
        }),
        exe,
        worker_args,
        daemon: o.daemon,
        pidfile: o.pidfile,
        quiet: o.quiet,
        systemd: o.systemd,
        master_socket: o.master_socket.map(Into::into),
    };
    match fairlead_runtime::master::run_master(cfg, sources, opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[ALERT] {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn haproxy_style_flags() {
        let o = parse_args(&args("-f a.cfg -f dir -c -q -p /tmp/x.pid -sf 12 34")).unwrap();
        assert_eq!(o.files, vec!["a.cfg", "dir"]);
        assert!(o.check && o.quiet);
        assert_eq!(o.pidfile.as_deref(), Some("/tmp/x.pid"));
        assert_eq!(o.old_pids, vec![12, 34]);
        assert!(!o.old_terminate);
    }

    #[test]
    fn errors() {
        assert!(parse_args(&args("-f")).is_err());
        assert!(parse_args(&args("-x")).is_err());
        assert!(parse_args(&args("-D -db -f a")).is_err());
        assert!(parse_args(&args("-c")).is_err());
        assert!(parse_args(&args("-v")).unwrap().version);
        let o = parse_args(&args("-f a.cfg -L fl1")).unwrap();
        assert_eq!(o.localpeer.as_deref(), Some("fl1"));
        assert!(parse_args(&args("-f a.cfg -L")).is_err());
    }
}
