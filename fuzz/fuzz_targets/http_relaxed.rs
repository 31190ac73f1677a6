//! Fuzzes the lenient parsers (`option accept-invalid-http-request` /
//! `-response`): the in-place repair, then the parse. Whatever they accept
//! must, once rewritten, parse back with the lenient parser to the same
//! framing, and a head that the strict parser accepts must be read the
//! same way by the lenient one. The first byte picks request or response
//! and the head size limit.
#![no_main]

use fairlead_http::{
    parse_request, parse_request_lenient, parse_request_relaxed, parse_response,
    parse_response_relaxed, unfold_head, write_request_head, write_response_head, ConnHeader,
    RequestRewrite,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let max_head = if sel & 0x80 != 0 {
        usize::from(sel & 0x3f) * 8
    } else {
        1 << 16
    };
    let mut buf = rest.to_vec();
    if sel & 0x40 != 0 {
        let strict = parse_response(rest, false, max_head);
        let Ok(Some(head)) = parse_response_relaxed(&mut buf, false, max_head) else {
            return;
        };
        if let Ok(Some(s)) = strict {
            assert_eq!(s.body, head.body);
            assert_eq!(s.head_len, head.head_len);
        }
        let mut out = Vec::new();
        write_response_head(&buf, &head, ConnHeader::None, &mut out);
        return;
    }
    let strict = parse_request(rest, max_head);
    let Ok(Some(head)) = parse_request_relaxed(&mut buf, max_head) else {
        return;
    };
    assert!(head.head_len <= buf.len());
    // The repair is idempotent.
    assert_eq!(unfold_head(&mut buf, max_head), 0);
    if let Ok(Some(s)) = strict {
        assert_eq!(s.body, head.body);
        assert_eq!(s.head_len, head.head_len);
    }
    let mut out = Vec::new();
    let rw = RequestRewrite {
        conn: ConnHeader::Close,
        forwarded_for: None,
    };
    write_request_head(&buf, &head, &rw, &mut out);
    // (A head at the header-count limit may not parse back: the rewrite
    // added a line; framing is what must never change.)
    if let Ok(Some(again)) = parse_request_lenient(&out, 1 << 20) {
        assert_eq!(again.body, head.body);
    }
});
