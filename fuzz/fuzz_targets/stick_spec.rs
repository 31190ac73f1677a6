//! Fuzzes `stick-table` argument parsing, CLI table commands and key
//! conversion: never panics; a parsed spec builds a table that accepts the
//! CLI commands made of the rest of the input.
#![no_main]

use fairlead_stick::cli::table_command;
use fairlead_stick::{KeyInput, Table, TableSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (decl, cmds) = text.split_once('\n').unwrap_or((text, ""));
    let words: Vec<&str> = decl.split_whitespace().collect();
    let Ok((mut spec, _)) = TableSpec::parse("t", &words, false) else {
        return;
    };
    // Keep memory bounded.
    spec.size = spec.size.min(1000);
    spec.key_len = spec.key_len.min(1024);
    let t = Table::new(spec);
    let tables = [t.clone()];
    let mut now = 1u64;
    for line in cmds.lines().take(50) {
        now += 7;
        let w: Vec<&str> = line.split(' ').collect();
        let _ = table_command(&tables, &w, now);
        if let Some(k) = t.key(&KeyInput::Str(line.as_bytes())) {
            if let Some(e) = t.get_or_create(k.as_bytes(), now) {
                e.inc_http_req(now);
            }
        }
        let _ = t.key(&KeyInput::Bin(line.as_bytes()));
        assert!(t.len() <= t.spec().size);
    }
    let _ = t.purge_expired(now + 1_000_000);
});
