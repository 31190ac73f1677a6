//! Fuzzes the RDP cookie parser (`req.rdp_cookie`, `balance rdp-cookie`,
//! `persist rdp-cookie`): never panics; a found value lies inside the
//! input and ends right before a CRLF; a buffer's prefixes never find a
//! different value; the persistence decoder round-trips the address it
//! decodes.
#![no_main]

use fairlead_rules::rdp::{cookie, persist_addr, persist_value, RdpCookie};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the cookie name: none, mstshash or msts.
    let Some((&sel, buf)) = data.split_first() else {
        return;
    };
    let name: &[u8] = match sel % 3 {
        0 => b"",
        1 => b"mstshash",
        _ => b"msts",
    };
    let r = cookie(buf, name);
    if let RdpCookie::Found(v) = r {
        let start = v.as_ptr() as usize - buf.as_ptr() as usize;
        let end = start + v.len();
        assert!(end + 2 <= buf.len());
        assert_eq!(&buf[end..end + 2], b"\r\n");
        assert!(!v.contains(&b'\r'));
        for cut in [0, buf.len() / 2, buf.len().saturating_sub(1)] {
            let p = cookie(&buf[..cut], name);
            assert!(matches!(p, RdpCookie::Incomplete) || p == r, "{p:?} vs {r:?}");
        }
        if let Some(a) = persist_addr(v) {
            assert_eq!(persist_addr(persist_value(a).as_bytes()), Some(a));
        }
    }
});
