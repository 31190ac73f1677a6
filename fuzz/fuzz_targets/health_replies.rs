//! Fuzzes the protocol health checks' reply parsers (`option
//! mysql-check`, `ldap-check`, `spop-check`, `pgsql-check`'s error text)
//! with arbitrary server replies.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fairlead_health::fuzz_replies(data);
});
