//! Fuzzes the `crt-list` parser on arbitrary text: errors are fine, panics
//! and runaway memory are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = fairlead_tls::certs::parse_crt_list("fuzz.lst", text, Some("/base"));
    }
});
