//! Fuzzes sample expressions, ACLs and conditions: the input's first line
//! is compiled as a sample expression (`fetch,conv,...`), an ACL
//! (`<criterion> [flags] [values]`), a condition (what follows `if`) and
//! a log-format string; each one that compiles is evaluated against a
//! transaction built from the rest of the input (a request head, then an
//! empty line and a payload). Errors are fine, panics are not.
#![no_main]

#[path = "../common/rules_txn.rs"]
mod rules_txn;

use fairlead_rules::cond::{Acls, Cond};
use fairlead_rules::expr::Expr;
use fairlead_rules::fetch::usage;
use fairlead_rules::fmt::LogFmt;
use fairlead_rules::userlist::Userlist;
use fairlead_rules::Env;
use libfuzzer_sys::fuzz_target;
use rules_txn::{names_special_file, no_dns, words, FuzzTxn};
use std::sync::{Arc, OnceLock};

/// A default environment plus one userlist, `ul` (clear-text passwords
/// only: the fuzzer must not spend its time in bcrypt).
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let lines: Vec<(usize, Vec<String>)> = [
            "group ops",
            "user alice insecure-password s3cret groups ops",
            "user bob insecure-password hunter2",
        ]
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split(' ').map(String::from).collect()))
        .collect();
        let mut env = Env::default();
        let ul = Userlist::parse("ul", &lines).expect("userlist");
        env.userlists.insert("ul".into(), Arc::new(ul));
        env
    })
}

fuzz_target!(|data: &[u8]| {
    let (first, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let line = String::from_utf8_lossy(first);
    if names_special_file(&line) {
        return;
    }
    let env = env();
    let tx = FuzzTxn::new(rest, true);
    let all = usage::HTTP_RESPONSE;

    if let Ok(e) = Expr::parse(line.trim(), env, all, "fuzz") {
        let _ = e.out_type();
        let _ = e.eval(&tx);
        let _ = e.eval_str(&tx);
        let mut n = 0;
        let _ = e.fetch.each(&tx, &mut |s| {
            let _ = e.convert(s, &tx);
            n += 1;
            n > 64
        });
    }

    let mut w = words(&line);
    if !w.is_empty() {
        let mut acl = vec!["acl".to_string(), "x".to_string()];
        acl.append(&mut w.clone());
        no_dns(&mut acl);
        let mut acls = Acls::default();
        if acls.add_line("x", &acl[2..], env).is_ok() {
            for a in &acls.list {
                let _ = a.eval(&tx);
            }
        }
        let mut cond = vec!["if".to_string()];
        cond.append(&mut w);
        no_dns(&mut cond);
        let mut acls = Acls::default();
        if let Ok((c, _)) = Cond::parse(&cond, &mut acls, env) {
            let _ = c.eval(&acls, &tx);
            let _ = c.usage(&acls);
        }
    }

    if let Ok(f) = LogFmt::parse(&line, env, all, "fuzz") {
        let _ = f.render_vec(&tx);
    }
});
