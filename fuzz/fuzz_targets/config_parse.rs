//! Fuzzes the haproxy.cfg parser: it must report diagnostics, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fairlead_config::parse(
        &[fairlead_config::Source {
            name: "fuzz".into(),
            text: String::from_utf8_lossy(data).into(),
        }],
        &|_| None,
    );
});
