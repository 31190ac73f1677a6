//! Fuzzes the peers protocol decoder: message framing, table definitions
//! and update bodies decoded with the schema of the last definition seen
//! (or a fixed string table before any), plus the hello checks.
#![no_main]

use fairlead_peers::wire::{check_hello, decode, decode_update, DictCache, Message, Schema};
use fairlead_stick::TableSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().take(3).collect();
    let _ = check_hello(&lines, "me");
    let Ok((spec, _)) = TableSpec::parse(
        "t",
        &["type", "string", "len", "16", "size", "10", "store", "http_req_rate(1s),gpc(3),server_key"],
        false,
    ) else {
        return;
    };
    let mut schema = Schema::local(&spec);
    let mut dict = DictCache::default();
    let mut buf = data;
    while let Ok(Some((m, used))) = decode(buf) {
        match m {
            Message::Define(d) => {
                if let Some(s) = Schema::remote(&d) {
                    schema = s;
                }
            }
            Message::Update { body, .. } => {
                let _ = decode_update(&schema, 16, &body, &mut dict);
            }
            _ => {}
        }
        buf = buf.get(used.max(1)..).unwrap_or(&[]);
    }
});
