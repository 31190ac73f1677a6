//! The `global` section.

use std::collections::HashSet;

use super::Parser;
use crate::keywords::{lookup, suggest_keyword, Status, G};
use crate::model::{CpuMap, Location, LogTarget, Verify};
use crate::units::{parse_time, parse_uint};

/// Largest thread number accepted by `nbthread` and `cpu-map`.
const MAX_THREADS: usize = 4096;
/// What `all`, `odd` and `even` cover: HAProxy 2.6's per-group limit.
const SET_SPAN: usize = 64;
/// Largest CPU id accepted by `cpu-map`.
const MAX_CPU: usize = 4095;

pub(crate) fn keyword(p: &mut Parser, words: &[String], loc: &Location) {
    let kw = words[0].as_str();
    if kw == "no" && words.get(1).map(String::as_str) == Some("strict-limits") {
        if words.len() > 2 {
            p.diags
                .alert(loc, "'no strict-limits': takes no argument".to_string());
        }
        p.global.strict_limits = false;
        return;
    }
    let Some(k) = lookup(words, true) else {
        if kw == "stats" {
            p.diags.alert(
                loc,
                format!(
                    "'stats' only supports 'socket', 'maxconn', 'bind-process' and 'timeout' in the 'global' section (got '{}')",
                    words.get(1).map(String::as_str).unwrap_or("")
                ),
            );
            return;
        }
        let hint = suggest_keyword(words, G)
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        p.diags.alert(
            loc,
            format!("unknown keyword '{kw}' in 'global' section{hint}"),
        );
        return;
    };
    match k.status {
        Status::Removed => return p.diags.alert(loc, k.note),
        Status::NotYet => {
            return p
                .diags
                .alert(loc, format!("'{kw}' is not implemented yet in Fairlead"))
        }
        Status::Warning => return p.diags.warn(loc, format!("'{}': {}", k.name, k.note)),
        _ => {}
    }
    if let Err(e) = implemented(p, words, loc) {
        p.diags.alert(loc, format!("'{}': {e}", k.name));
    }
}

fn one_arg(words: &[String]) -> Result<&str, String> {
    match words {
        [_, a] => Ok(a),
        [_] => Err("expects one argument".into()),
        _ => Err(format!("expects one argument (got {})", words.len() - 1)),
    }
}

/// The TLS keywords: `ca-base`, `crt-base`, `ssl-default-*`,
/// `ssl-server-verify` and `tune.ssl.cachesize`. Returns false when `kw`
/// is none of them.
fn tls_keyword(p: &mut Parser, words: &[String], loc: &Location) -> Result<bool, String> {
    let kw = words[0].as_str();
    let g = &mut p.global;
    match kw {
        "ca-base" | "crt-base" => {
            let dir = one_arg(words)?;
            let slot = if kw == "ca-base" {
                &mut g.ca_base
            } else {
                &mut g.crt_base
            };
            if slot.is_some() {
                return Err(format!("'{kw}' already specified."));
            }
            if dir.is_empty() {
                return Err(format!(
                    "global statement '{kw}' expects a directory path as an argument."
                ));
            }
            *slot = Some(dir.to_string());
        }
        "ssl-default-bind-ciphers"
        | "ssl-default-bind-ciphersuites"
        | "ssl-default-server-ciphers"
        | "ssl-default-server-ciphersuites" => {
            let v = one_arg(words)?;
            if v.is_empty() {
                return Err("expects a non-empty cipher list".into());
            }
            let d = if kw.starts_with("ssl-default-bind-") {
                &mut p.tls.bind
            } else {
                &mut p.tls.server
            };
            if kw.ends_with("ciphersuites") {
                d.ciphersuites = Some(v.to_string());
            } else {
                d.ciphers = Some(v.to_string());
            }
        }
        "ssl-default-bind-options" | "ssl-default-server-options" => {
            let bind = kw == "ssl-default-bind-options";
            let d = if bind {
                &mut p.tls.bind
            } else {
                &mut p.tls.server
            };
            for w in crate::tls::parse_default_options(words, d, bind)? {
                p.diags.warn(loc, format!("'{kw}': {w}"));
            }
        }
        "ssl-server-verify" => {
            g.ssl_server_verify = match words {
                [_, a] if a == "none" => Verify::None,
                [_, a] if a == "required" => Verify::Required,
                _ => return Err("expects 'none' or 'required' as argument.".into()),
            }
        }
        "tune.ssl.cachesize" => g.ssl_cachesize = Some(parse_uint(one_arg(words)?, kw)?),
        _ => return Ok(false),
    }
    Ok(true)
}

fn implemented(p: &mut Parser, words: &[String], loc: &Location) -> Result<(), String> {
    if tls_keyword(p, words, loc)? {
        return Ok(());
    }
    let kw = words[0].as_str();
    let g = &mut p.global;
    match kw {
        "maxconn" => g.maxconn = Some(parse_uint(one_arg(words)?, kw)?),
        "nbthread" => {
            let n: usize = parse_uint(one_arg(words)?, kw)?;
            if n == 0 || n > MAX_THREADS {
                return Err(format!("must be between 1 and {MAX_THREADS} (got {n})"));
            }
            g.nbthread = Some(n);
        }
        "cpu-map" => {
            let m = parse_cpu_map(&words[1..])?;
            g.cpu_map.push(m);
        }
        "daemon" => {
            if words.len() > 1 {
                return Err("takes no argument".into());
            }
            g.daemon = true;
        }
        "master-worker" => match words.get(1).map(String::as_str) {
            None => g.master_worker = true,
            Some("no-exit-on-failure") => {
                return Err("'no-exit-on-failure' is not implemented yet in Fairlead (a worker that fails stops the master)".into())
            }
            Some(w) => return Err(format!("unknown option '{w}' (only 'no-exit-on-failure')")),
        },
        "pidfile" => g.pidfile = Some(one_arg(words)?.to_string()),
        "user" => g.user = Some(one_arg(words)?.to_string()),
        "group" => g.group = Some(one_arg(words)?.to_string()),
        "uid" => g.uid = Some(parse_uint(one_arg(words)?, kw)?),
        "gid" => g.gid = Some(parse_uint(one_arg(words)?, kw)?),
        "ulimit-n" => g.ulimit_n = Some(parse_uint(one_arg(words)?, kw)?),
        "strict-limits" => {
            if words.len() > 1 {
                return Err("takes no argument".into());
            }
            g.strict_limits = true;
        }
        k if k.starts_with("tune.h2.") => tune_h2(&mut g.h2, k, words)?,
        "nosplice" => {
            if words.len() > 1 {
                return Err("takes no argument".into());
            }
            g.nosplice = true;
        }
        "maxpipes" => g.maxpipes = Some(parse_uint(one_arg(words)?, kw)?),
        "tune.pipesize" => g.pipesize = Some(parse_uint(one_arg(words)?, kw)?),
        "tune.bufsize" => {
            let n: usize = parse_uint(one_arg(words)?, kw)?;
            if !(1024..=1 << 30).contains(&n) {
                return Err(format!("must be between 1024 and 1073741824 (got {n})"));
            }
            g.bufsize = n;
        }
        "tune.maxaccept" => {
            let a = one_arg(words)?;
            let n: i32 = a
                .parse()
                .map_err(|_| format!("expects an integer (got '{a}')"))?;
            if n < -1 || n == 0 {
                return Err(format!(
                    "must be -1 (unlimited) or a positive integer (got {n})"
                ));
            }
            g.maxaccept = n;
        }
        "tune.listener.multi-queue" => {
            g.multi_queue = match one_arg(words)? {
                "on" => true,
                "off" => false,
                a => return Err(format!("expects 'on' or 'off' (got '{a}')")),
            }
        }
        "io-uring" => {
            g.io_uring = match one_arg(words)? {
                "on" => true,
                "off" => false,
                a => return Err(format!("expects 'on' or 'off' (got '{a}')")),
            }
        }
        "tune.io-uring.recv-bufs" => {
            let n: u16 = parse_uint(one_arg(words)?, kw)?;
            if !(1..=32768).contains(&n) {
                return Err(format!("must be between 1 and 32768 (got {n})"));
            }
            g.uring_recv_bufs = n;
        }
        "hard-stop-after" => g.hard_stop_after = Some(parse_time(one_arg(words)?)?),
        "server-state-file" => g.server_state_file = Some(one_arg(words)?.to_string()),
        "server-state-base" => g.server_state_base = Some(one_arg(words)?.to_string()),
        "spread-checks" => {
            let a = one_arg(words)?;
            if g.spread_checks != 0 {
                return Err("spread-checks already specified.".into());
            }
            let n: u32 = parse_uint(a, kw)
                .map_err(|_| format!("expects an integer argument (0..50) (got '{a}')"))?;
            if n > 50 {
                return Err("needs a positive value in range 0..50.".into());
            }
            g.spread_checks = n;
        }
        "log" => {
            if words.get(1).map(String::as_str) == Some("global") {
                return Err("'log global' is only valid in proxy sections; the 'global' section expects <address> [len <length>] [format <format>] <facility> [<level> [<minlevel>]]".into());
            }
            let spec = fairlead_log::parse_target(&words[1..])?;
            g.logs.push(LogTarget {
                args: words[1..].to_vec(),
                location: loc.clone(),
                spec,
            });
        }
        "localpeer" => {
            let t = one_arg(words)?;
            if t.is_empty() {
                return Err("expects a non-empty name".into());
            }
            p.global.localpeer = Some(t.to_string());
        }
        "log-tag" => {
            let t = one_arg(words)?;
            if t.is_empty() {
                return Err("expects a non-empty tag".into());
            }
            g.log_tag = Some(t.to_string());
        }
        "log-send-hostname" => match words {
            [_] => g.log_send_hostname = Some(String::new()),
            [_, h] => g.log_send_hostname = Some(h.clone()),
            _ => {
                return Err(format!(
                    "expects at most one argument (got {})",
                    words.len() - 1
                ))
            }
        },
        "setenv" | "presetenv" => {
            let [_, name, value] = words else {
                return Err("expects a name and a value".into());
            };
            let env = &p.env_over;
            if kw == "presetenv" && env.get(name, p.env).is_some() {
                return Ok(());
            }
            p.env_over.vars.insert(name.clone(), Some(value.clone()));
        }
        "unsetenv" => {
            if words.len() < 2 {
                return Err("expects at least one variable name".into());
            }
            for n in &words[1..] {
                p.env_over.vars.insert(n.clone(), None);
            }
        }
        "resetenv" => {
            let keep: HashSet<String> = words[1..].iter().cloned().collect();
            p.env_over.vars.retain(|k, _| keep.contains(k));
            p.env_over.keep = Some(keep);
        }
        "description" => {}
        "stats" => match words[1].as_str() {
            "socket" => {
                if words.len() < 3 || words[2].is_empty() {
                    return Err("requires a path or an address".into());
                }
                g.stats_sockets.push((loc.clone(), words[2..].to_vec()));
            }
            "timeout" => {
                let [_, _, a] = words else {
                    return Err(format!(
                        "expects exactly one argument (got {})",
                        words.len() - 2
                    ));
                };
                let t = parse_time(a)?;
                if t.is_zero() {
                    return Err("expects a positive value".into());
                }
                g.stats_timeout = Some(t);
            }
            "maxconn" => {
                let [_, _, a] = words else {
                    return Err(format!(
                        "expects exactly one argument (got {})",
                        words.len() - 2
                    ));
                };
                let n: u32 = parse_uint(a, "stats maxconn")?;
                if n == 0 {
                    return Err("expects a positive value".into());
                }
                g.stats_maxconn = Some(n);
            }
            _ => return Err("is not implemented yet in Fairlead".into()),
        },
        _ => return Err("is not implemented yet in Fairlead".into()),
    }
    Ok(())
}

/// Parses a set like `1`, `1-4`, `1,3,5-6`, `all`, `odd`, `even`.
fn parse_set(s: &str, min: usize, max: usize) -> Result<Vec<usize>, String> {
    let span_end = min + SET_SPAN - 1;
    let mut out = Vec::new();
    for part in s.split(',') {
        match part {
            "all" => out.extend(min..=span_end),
            "odd" => out.extend((min..=span_end).filter(|n| n % 2 == 1)),
            "even" => out.extend((min..=span_end).filter(|n| n % 2 == 0)),
            _ => {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                let a: usize =
                    parse_uint(a, "cpu-map").map_err(|_| format!("invalid set '{s}'"))?;
                let b: usize =
                    parse_uint(b, "cpu-map").map_err(|_| format!("invalid set '{s}'"))?;
                if a > b || a < min || b > max {
                    return Err(format!(
                        "invalid range '{part}' in '{s}' (allowed: {min} to {max})"
                    ));
                }
                out.extend(a..=b);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `cpu-map [auto:]<[1/]thread-set> <cpu-set>...`
fn parse_cpu_map(args: &[String]) -> Result<CpuMap, String> {
    if args.len() < 2 {
        return Err("expects a thread set and a CPU set".into());
    }
    let (auto, first) = match args[0].strip_prefix("auto:") {
        Some(r) => (true, r),
        None => (false, args[0].as_str()),
    };
    let tset = match first.split_once('/') {
        Some((proc_set, t)) => {
            if !matches!(proc_set, "1" | "all" | "1-1" | "odd") {
                return Err(format!(
                    "process set '{proc_set}' is invalid: only process 1 exists since HAProxy 2.5"
                ));
            }
            t
        }
        None => first,
    };
    let threads = parse_set(tset, 1, MAX_THREADS)?;
    let mut cpus = Vec::new();
    for w in &args[1..] {
        cpus.extend(parse_set(w, 0, MAX_CPU)?);
    }
    cpus.sort_unstable();
    cpus.dedup();
    if auto && threads.len() != cpus.len() && threads.len() > 1 && cpus.len() > 1 {
        return Err(format!(
            "'auto:' needs as many CPUs as threads ({} threads, {} CPUs)",
            threads.len(),
            cpus.len()
        ));
    }
    Ok(CpuMap {
        threads,
        cpus,
        auto,
    })
}

/// One `tune.h2.*` line, with HAProxy's ranges.
fn tune_h2(h: &mut crate::model::H2Tune, kw: &str, words: &[String]) -> Result<(), String> {
    let n: u32 = parse_uint(one_arg(words)?, kw)?;
    let range = |lo: u32, hi: u32| {
        if (lo..=hi).contains(&n) {
            Ok(Some(n))
        } else {
            Err(format!("must be between {lo} and {hi} (got {n})"))
        }
    };
    const WIN: u32 = (1 << 31) - 1;
    let slot = match kw {
        "tune.h2.header-table-size" => (&mut h.header_table_size, range(0, 65_536)?),
        "tune.h2.initial-window-size" => (&mut h.initial_window_size, range(0, WIN)?),
        "tune.h2.fe.initial-window-size" => (&mut h.fe_initial_window_size, range(0, WIN)?),
        "tune.h2.be.initial-window-size" => (&mut h.be_initial_window_size, range(0, WIN)?),
        "tune.h2.max-concurrent-streams" => (&mut h.max_concurrent_streams, Some(n)),
        "tune.h2.fe.max-concurrent-streams" => (&mut h.fe_max_concurrent_streams, Some(n)),
        "tune.h2.be.max-concurrent-streams" => (&mut h.be_max_concurrent_streams, Some(n)),
        "tune.h2.max-frame-size" => (&mut h.max_frame_size, range(16_384, (1 << 24) - 1)?),
        "tune.h2.fe.max-total-streams" => (&mut h.fe_max_total_streams, Some(n)),
        "tune.h2.fe.glitches-threshold" => (&mut h.fe_glitches_threshold, Some(n)),
        "tune.h2.be.glitches-threshold" => (&mut h.be_glitches_threshold, Some(n)),
        _ => return Err("is not a known 'tune.h2' keyword".into()),
    };
    *slot.0 = slot.1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(s: &str) -> Result<CpuMap, String> {
        let w: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_cpu_map(&w)
    }

    #[test]
    fn cpu_maps() {
        assert_eq!(
            cm("1 0").unwrap(),
            CpuMap {
                threads: vec![1],
                cpus: vec![0],
                auto: false
            }
        );
        assert_eq!(cm("1/1 3").unwrap().threads, vec![1]);
        assert_eq!(cm("1/2-4 0-2").unwrap().cpus, vec![0, 1, 2]);
        let m = cm("auto:1/1-4 0-3").unwrap();
        assert!(m.auto);
        assert_eq!(m.threads, vec![1, 2, 3, 4]);
        assert_eq!(cm("1/all 0 2 4").unwrap().threads.len(), 64);
        assert_eq!(cm("1/all 0 2 4").unwrap().cpus, vec![0, 2, 4]);
        assert_eq!(cm("odd 0,1").unwrap().threads[..3], [1, 3, 5]);
        assert_eq!(cm("even even").unwrap().cpus[..3], [0, 2, 4]);
        assert!(cm("2/1 0").unwrap_err().contains("only process 1"));
        assert!(cm("1").is_err());
        assert!(cm("0 1").unwrap_err().contains("invalid range"));
        assert!(cm("4-1 1").is_err());
        assert!(cm("x 1").is_err());
        assert!(cm("auto:1-4 0-2").unwrap_err().contains("as many CPUs"));
    }
}
