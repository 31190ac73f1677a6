//! Fuzzes the rule compiler: arbitrary text is a proxy section's rule
//! lines (`acl`, `http-request`, `use_backend`, `tcp-request`, ...), given
//! one at a time to `ProxyRules::add` with a default `Env`. Errors are
//! fine, panics are not. The rules that compiled then run against a
//! request and a response: the fixed one below, or the text after a line
//! `--` in the input.
#![no_main]

#[path = "../common/rules_txn.rs"]
mod rules_txn;

use fairlead_rules::acl::Tri;
use fairlead_rules::exec::{run, Verdict};
use fairlead_rules::proxy::{BackendTarget, ProxyRules, SectionInfo};
use fairlead_rules::Env;
use libfuzzer_sys::fuzz_target;
use rules_txn::{names_special_file, no_dns, words, FuzzTxn};

const REQUEST: &[u8] = b"GET /a/b?x=1&y=2 HTTP/1.1\nHost: www.example.com\n\
Cookie: a=1; b=2\nX-List: a, b, \"c,d\"\nAuthorization: Basic YWxpY2U6czNjcmV0\n\nbody";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if names_special_file(&text) {
        return;
    }
    let (lines, request) = match text.find("\n--\n") {
        Some(i) => (&text[..i], text[i + 4..].as_bytes()),
        None => (&text[..], REQUEST),
    };
    // A table of the section's own, for `stick` and `track-sc` lines.
    let mut env = Env::default();
    let spec = fairlead_stick::TableSpec::new("fz", fairlead_stick::KeyType::String, 64)
        .with(fairlead_stick::DataType::ServerId, 1, 0)
        .with(fairlead_stick::DataType::ServerKey, 1, 0);
    env.own_table = Some(fairlead_stick::Table::new(spec));
    for http in [true, false] {
        let sec = SectionInfo {
            frontend: true,
            backend: http,
            http,
            max_reply: 16384,
        };
        let mut rules = ProxyRules::default();
        for line in lines.lines().take(64) {
            let mut w = words(line);
            if w.is_empty() {
                continue;
            }
            no_dns(&mut w);
            let _ = rules.add(&w, &sec, &env);
        }
        let _ = rules.has_http_rules();
        let mut tx = FuzzTxn::new(request, true);
        exercise(&rules, &mut tx);
    }
});

fn exercise(rules: &ProxyRules, tx: &mut FuzzTxn) {
    let acls = &rules.acls;
    for set in [&rules.tcp_connection, &rules.tcp_session, &rules.tcp_content] {
        let v = run(set, acls, tx, false);
        render(&v, tx);
    }
    let _ = rules.monitor_fail.iter().map(|c| c.eval(acls, tx)).count();
    let v = run(&rules.http_request, acls, tx, false);
    render(&v, tx);
    for r in &rules.redirects {
        if r.check(acls, tx) == Tri::Pass {
            if let Some(loc) = r.action.location(tx) {
                let _ = r.action.response(&loc, true);
            }
        }
    }
    for r in &rules.use_backend {
        if r.check(acls, tx) == Tri::Pass {
            if let BackendTarget::Dynamic(f) = &r.action {
                let _ = f.render_vec(tx);
            }
        }
    }
    for r in &rules.use_server {
        let _ = r.check(acls, tx);
    }
    // Stick persistence: match and store, then store-response and commit.
    let mut st = fairlead_rules::sticking::Sticking::default();
    st.run_request(&rules.stick_req, acls, &*tx, false, 1);
    st.run_response(&rules.stick_res, acls, &*tx);
    st.commit(1, "s1", "192.0.2.1:80", 1);
    for set in [
        &rules.tcp_response,
        &rules.http_response,
        &rules.http_after_response,
    ] {
        let v = run(set, acls, tx, true);
        render(&v, tx);
    }
}

fn render(v: &Verdict<'_>, tx: &FuzzTxn) {
    let mut out = Vec::new();
    match v {
        Verdict::Deny(a) | Verdict::Tarpit(a) | Verdict::Return(a) => a.render(tx, true, &mut out),
        Verdict::Redirect(r, loc) => out.extend(r.response(loc, false)),
        _ => {}
    }
    std::hint::black_box(out);
}
