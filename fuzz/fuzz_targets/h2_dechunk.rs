//! Fuzzes the HTTP/2 relay's de-chunking of HTTP/1 response bodies
//! (data runs and the trailer section turned into HTTP/2 trailers): the
//! result must not depend on where the input is split. The first byte
//! picks the split point.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let split = usize::from(sel) * body.len() / 255;
    fairlead_l7::h2::dechunk_split_invariant(body, split);
});
