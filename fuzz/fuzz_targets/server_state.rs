//! Fuzzes the server-state file parser (`load-server-state-from-file`)
//! and the runtime API's `add server` argument parser: both read text an
//! operator or another process wrote, and must never panic.
#![no_main]

use fairlead_config::{parse_dynamic_server, server_state};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(servers) = server_state::parse(&text) {
        for s in &servers {
            assert!(!s.backend.contains(char::is_whitespace));
        }
    }
    let words: Vec<String> = text.split_whitespace().map(String::from).collect();
    if let Some((name, args)) = words.split_first() {
        let _ = parse_dynamic_server(name, args, &Default::default());
    }
});
