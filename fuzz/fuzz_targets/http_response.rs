//! Fuzzes `parse_response` and `write_response_head`. The first byte
//! selects HEAD-ness, the emitted Connection header and the size limit.
#![no_main]

use fairlead_http::{
    parse_response, parse_response_with_limit, write_response_head, BodyKind, ChunkedState,
    ConnHeader, MAX_HEADERS,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, buf)) = data.split_first() else {
        return;
    };
    let req_is_head = sel & 0x40 != 0;
    let max_head = if sel & 0x80 != 0 {
        usize::from(sel & 0x3f) * 16
    } else {
        1 << 16
    };
    let Ok(Some(head)) = parse_response(buf, req_is_head, max_head) else {
        return;
    };
    assert!(head.head_len <= buf.len());
    assert!((100..=599).contains(&head.status));
    let conn = match sel & 3 {
        0 => ConnHeader::None,
        1 => ConnHeader::Close,
        2 => ConnHeader::KeepAlive,
        _ => ConnHeader::Upgrade,
    };
    let mut out = Vec::new();
    write_response_head(buf, &head, conn, &mut out);
    // Within the limits of a client like Fairlead (MAX_HEADERS lines).
    let again = parse_response_with_limit(&out, req_is_head, 1 << 20, MAX_HEADERS)
        .expect("rewritten head is valid");
    let again = again.expect("rewritten head is complete");
    assert_eq!(again.head_len, out.len());
    assert_eq!(again.status, head.status);
    if head.body == BodyKind::Chunked {
        let _ = ChunkedState::new().feed(&buf[head.head_len..]);
    }
});
