//! Fuzzes the HTTP/2 health check's reply handling (`check-proto h2`):
//! arbitrary server bytes after the check's request, cut in pieces as
//! reads would deliver them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    let split = usize::from(ctl & 0x7f) + 1;
    let _ = fairlead_health::fuzz_h2_reply(rest, split, ctl & 0x80 != 0);
});
