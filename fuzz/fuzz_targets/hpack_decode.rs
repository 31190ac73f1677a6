//! Decodes arbitrary header blocks with one HPACK decoder (its table
//! carries over between blocks, split where the input has 0xff 0x00),
//! building heads as the connection does. Fields that decode must
//! re-encode and decode back to the same list (a round-trip property).
#![no_main]

use fairlead_h2::head::{BlockKind, Builder};
use fairlead_h2::hpack::{Decoder, Encoder};
use fairlead_http::msg::Head;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, data)) = data.split_first() else {
        return;
    };
    let mut dec = Decoder::new(usize::from(sel) * 32);
    let mut scratch = Vec::new();
    let mut head = Head::default();
    for block in data.split(|&b| b == 0xff) {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let kind = match sel % 3 {
            0 => BlockKind::Request,
            1 => BlockKind::Response,
            _ => BlockKind::Trailers,
        };
        let mut b = Builder::new(&mut head, kind, 16384, 100);
        let ok = dec
            .decode(block, &mut scratch, |n, v, _| {
                b.field(n, v);
                fields.push((n.to_vec(), v.to_vec()));
            })
            .is_ok();
        let _ = b.finish();
        if !ok {
            // A compression error ends the connection: start afresh.
            dec = Decoder::new(4096);
            continue;
        }
        let mut enc = Encoder::new(4096);
        let mut again = Decoder::new(4096);
        let mut wire = Vec::new();
        enc.begin_block(&mut wire);
        for (n, v) in &fields {
            enc.field(n, v, false, &mut wire);
        }
        let mut back = Vec::new();
        again
            .decode(&wire, &mut Vec::new(), |n, v, _| back.push((n.to_vec(), v.to_vec())))
            .expect("our own encoding decodes");
        assert_eq!(back, fields);
    }
});
