//! Fuzzes `parse_request`, the rewriter and the chunked validator on the
//! body that follows. The first byte picks the head size limit so the
//! 414/431 paths are exercised too.
#![no_main]

use fairlead_http::{
    has_header, method_is_idempotent, parse_request, parse_request_with_limit, write_request_head,
    BodyKind, ChunkedState, ConnHeader, RequestRewrite, MAX_HEADERS,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, buf)) = data.split_first() else {
        return;
    };
    let max_head = if sel & 0x80 != 0 {
        usize::from(sel & 0x7f) * 8
    } else {
        1 << 16
    };
    let Ok(Some(head)) = parse_request(buf, max_head) else {
        return;
    };
    assert!(head.head_len <= buf.len());
    let _ = method_is_idempotent(buf, &head);
    let _ = has_header(buf, head.head_len, "x-forwarded-for");
    let conn = match sel & 3 {
        0 => ConnHeader::None,
        1 => ConnHeader::Close,
        2 => ConnHeader::KeepAlive,
        _ => ConnHeader::Upgrade,
    };
    let mut out = Vec::new();
    let rw = RequestRewrite {
        conn,
        forwarded_for: Some(("X-Forwarded-For", "192.0.2.7".parse().unwrap())),
    };
    write_request_head(buf, &head, &rw, &mut out);
    if head.minor_version == 1 {
        // The rewritten head must parse back with the same framing, within
        // the limits of a next hop like Fairlead (MAX_HEADERS lines).
        let again =
            parse_request_with_limit(&out, 1 << 20, MAX_HEADERS).expect("rewritten head is valid");
        let again = again.expect("rewritten head is complete");
        assert_eq!(again.head_len, out.len());
        assert_eq!(again.body, head.body);
    }
    if head.body == BodyKind::Chunked {
        let _ = ChunkedState::new().feed(&buf[head.head_len..]);
    }
});
