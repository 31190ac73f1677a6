//! Fuzzes the `resolvers` section parser, the server DNS options and the
//! server-template arguments with arbitrary lines. They must never panic.
#![no_main]

use fairlead_dns::config::ResolversSection;
use fairlead_dns::server::ServerDnsOptions;
use fairlead_dns::template::{parse_template_fqdn, parse_template_range};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut section = ResolversSection::new("fuzz");
    section.resolv_conf_path = "/nonexistent/fairlead-fuzz-resolv.conf".into();
    let mut opts = ServerDnsOptions::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let _ = section.parse_line(&words);
        if let [keyword, rest @ ..] = words.as_slice() {
            let _ = opts.parse_keyword(keyword, rest.first().copied());
            if let Some(arg) = rest.first() {
                let _ = parse_template_range(arg);
                let _ = parse_template_fqdn(arg);
            }
        }
    }
    let _ = section.validate();
    let _ = opts.init_addr_methods();
});
