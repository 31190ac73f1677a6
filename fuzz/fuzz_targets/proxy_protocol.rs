//! Fuzzes the PROXY protocol parser: never panics, never claims more bytes
//! than it was given, and a parsed header's prefixes are all incomplete
//! (a header is only accepted once whole). Headers re-encoded from what was
//! parsed parse back to the same addresses.
#![no_main]

use fairlead_proxyproto::{encode_v1, encode_v2, parse, Addresses, Command, Parsed, Version, V2Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(Parsed::Done(h, n)) = parse(data) else {
        return;
    };
    assert!(n <= data.len());
    for cut in [0, n / 2, n.saturating_sub(1)] {
        if cut < n {
            assert!(!matches!(parse(&data[..cut]), Ok(Parsed::Done(..))));
        }
    }
    let ssl = h.ssl();
    let _ = (h.alpn(), h.authority(), h.unique_id(), h.netns(), ssl);
    if let Addresses::Inet { src, dst } = h.addresses {
        let mut out = Vec::new();
        match h.version {
            Version::V1 => encode_v1(Some((src, dst)), &mut out),
            Version::V2 => encode_v2(Command::Proxy, Some((src, dst)), &V2Options::default(), &mut out),
        }
        let Ok(Parsed::Done(again, m)) = parse(&out) else {
            panic!("re-encoded header does not parse");
        };
        assert_eq!(m, out.len());
        assert_eq!(again.src(), Some(src));
        assert_eq!(again.dst(), Some(dst));
    }
});
