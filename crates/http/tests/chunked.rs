//! ChunkedState: valid bodies under every split, and strict rejections.

use fairlead_http::*;

/// Feeds `body` cut at the given points; returns the end offset within the
/// whole input, `None` if more is needed, or the error.
fn feed_split(body: &[u8], cuts: &[usize]) -> Result<Option<usize>, HttpError> {
    let mut st = ChunkedState::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&body.len())) {
        let c = c.clamp(start, body.len());
        match st.feed(&body[start..c])? {
            ChunkProgress::Done(n) => return Ok(Some(start + n)),
            ChunkProgress::NeedMore => {}
        }
        start = c;
    }
    Ok(None)
}

fn whole(body: &[u8]) -> Result<Option<usize>, HttpError> {
    feed_split(body, &[])
}

/// Checks `body` gives the same outcome for: whole, every single split
/// point, every pair of split points (when short), and 1 byte at a time.
fn check_all_splits(body: &[u8]) -> Result<Option<usize>, HttpError> {
    let expect = whole(body);
    let ok_same = |r: Result<Option<usize>, HttpError>| match (&r, &expect) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.status == b.status && a.reason == b.reason && a.offset == b.offset,
        _ => false,
    };
    for i in 0..=body.len() {
        assert!(
            ok_same(feed_split(body, &[i])),
            "split {i} of {:?}",
            String::from_utf8_lossy(body)
        );
    }
    if body.len() <= 80 {
        for i in 0..=body.len() {
            for j in i..=body.len() {
                assert!(ok_same(feed_split(body, &[i, j])), "splits {i},{j}");
            }
        }
    }
    let ones: Vec<usize> = (1..body.len()).collect();
    assert!(ok_same(feed_split(body, &ones)), "byte at a time");
    expect
}

const VALID: &[&[u8]] = &[
    b"0\r\n\r\n",
    b"5\r\nhello\r\n0\r\n\r\n",
    b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    b"A\r\n0123456789\r\n0\r\n\r\n",
    b"a;foo=bar\r\n0123456789\r\n0;x\r\n\r\n",
    b"3 ;ext\r\nabc\r\n0\r\n\r\n",
    b"3\t; a=\"q s\"\r\nabc\r\n0\r\n\r\n",
    b"0000003\r\nabc\r\n0\r\n\r\n",
    b"4\r\n\r\n\r\n\r\n0\r\n\r\n",
    b"2\r\nhi\r\n0\r\nExpires: never\r\nX-T: 1 2\r\n\r\n",
    b"0\r\nX-Empty:\r\n\r\n",
];

#[test]
fn valid_bodies_any_split() {
    for body in VALID {
        assert_eq!(
            check_all_splits(body),
            Ok(Some(body.len())),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn reports_end_and_leaves_rest() {
    let mut b = b"3\r\nabc\r\n0\r\n\r\n".to_vec();
    let end = b.len();
    b.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
    for i in 0..=end {
        assert_eq!(feed_split(&b, &[i]), Ok(Some(end)));
    }
    let mut st = ChunkedState::new();
    assert_eq!(st.feed(&b), Ok(ChunkProgress::Done(end)));
    assert!(st.is_done());
    assert_eq!(st.consumed(), end as u64);
    assert_eq!(st.feed(b"more"), Ok(ChunkProgress::Done(0)));
}

#[test]
fn incomplete_needs_more() {
    let b = b"5\r\nhello\r\n0\r\nX: y\r\n\r\n";
    for i in 0..b.len() {
        assert_eq!(check_all_splits(&b[..i]), Ok(None), "prefix {i}");
    }
    let mut st = ChunkedState::new();
    assert_eq!(st.feed(b""), Ok(ChunkProgress::NeedMore));
}

#[test]
fn big_chunk_counted_not_inspected() {
    let mut st = ChunkedState::new();
    assert_eq!(st.feed(b"FFFFFFFF\r\n"), Ok(ChunkProgress::NeedMore));
    let junk = vec![b'\n'; 1 << 20];
    let mut left: u64 = 0xFFFF_FFFF;
    while left > 0 {
        let n = left.min(junk.len() as u64) as usize;
        assert_eq!(st.feed(&junk[..n]), Ok(ChunkProgress::NeedMore));
        left -= n as u64;
    }
    assert_eq!(st.feed(b"\r\n0\r\n\r\n"), Ok(ChunkProgress::Done(7)));
    // 16 hex digits is the maximum and fits a u64.
    let mut st = ChunkedState::new();
    assert_eq!(
        st.feed(b"FFFFFFFFFFFFFFFF\r\nxx"),
        Ok(ChunkProgress::NeedMore)
    );
}

#[test]
fn rejections() {
    let bad: &[&[u8]] = &[
        b"0x10\r\n",
        b"-1\r\n",
        b"+1\r\n",
        b"\r\n",
        b" 1\r\nx\r\n0\r\n\r\n",
        b";ext\r\n",
        b"g\r\n",
        b"1 \r\nx\r\n0\r\n\r\n", // trailing whitespace without extension
        b"1 x\r\n",
        b"10000000000000000\r\n", // 17 hex digits
        b"00000000000000001\r\n", // 17 digits even with leading zeros
        b"1\nx\r\n0\r\n\r\n",     // bare LF after size
        b"1;a\nx\r\n",            // bare LF after extension
        b"1\rx\r\n",              // CR not followed by LF
        b"1;a=\x01\r\n",          // control byte in extension
        b"1;a\x7f\r\n",
        b"3\r\nabcd\r\n0\r\n\r\n", // data longer than size
        b"3\r\nabc\n0\r\n\r\n",    // bare LF after data
        b"3\r\nabc\r0\r\n\r\n",    // CR without LF after data
        b"3\r\nabc0\r\n\r\n",      // missing CRLF
        b"0\r\n\n",                // bare LF as final line
        b"0\r\n\rx",
        b"0\r\nX: y\n\r\n", // bare LF in trailer
        b"0\r\nX: y\rz\r\n\r\n",
        b"0\r\n y\r\n\r\n",  // obs-fold-like trailer
        b"0\r\nX y\r\n\r\n", // no colon
        b"0\r\n:y\r\n\r\n",  // empty name
        b"0\r\nX: \x00\r\n\r\n",
        b"5\r\nhello\r\n\r\n", // empty size line after data
    ];
    for b in bad {
        let r = check_all_splits(b);
        match r {
            Err(e) => assert_eq!(e.status, 400),
            Ok(v) => panic!("{:?} accepted: {v:?}", String::from_utf8_lossy(b)),
        }
    }
}

#[test]
fn error_is_sticky_and_offset_is_cumulative() {
    let mut st = ChunkedState::new();
    assert_eq!(st.feed(b"3\r\nab"), Ok(ChunkProgress::NeedMore));
    let e = st.feed(b"cXY").unwrap_err();
    assert_eq!(e.offset, 6); // the 'X' where CR was due
    assert_eq!(st.feed(b"\r\n0\r\n\r\n"), Err(e));
}

#[test]
fn line_and_trailer_limits() {
    let mut b = b"1;".to_vec();
    b.resize(MAX_CHUNK_LINE - 1, b'a');
    b.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
    assert_eq!(whole(&b), Ok(Some(b.len())));
    let mut b = b"1;".to_vec();
    b.resize(MAX_CHUNK_LINE + 1, b'a');
    b.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
    assert_eq!(whole(&b).unwrap_err().status, 400);
    // Trailers: just under and over the limit.
    let mut b = b"0\r\n".to_vec();
    let mut t = b"X: ".to_vec();
    t.resize(MAX_TRAILERS - 2, b'v');
    t.extend_from_slice(b"\r\n");
    b.extend_from_slice(&t);
    b.extend_from_slice(b"\r\n");
    assert_eq!(whole(&b), Ok(Some(b.len())));
    let mut b = b"0\r\n".to_vec();
    let mut t = b"X: ".to_vec();
    t.resize(MAX_TRAILERS, b'v');
    t.extend_from_slice(b"\r\n");
    b.extend_from_slice(&t);
    b.extend_from_slice(b"\r\n");
    assert_eq!(whole(&b).unwrap_err().status, 400);
}

#[test]
fn feed_with_hands_over_the_decoded_data() {
    let body = b"3\r\nabc\r\n2;x=\"y\"\r\nde\r\n0\r\nT: 1\r\n\r\nNEXT";
    for split in 0..body.len() {
        let mut st = ChunkedState::new();
        let mut data = Vec::new();
        let first = st.feed_with(&body[..split], |d| data.extend_from_slice(d));
        let end = match first.unwrap() {
            ChunkProgress::Done(n) => n,
            ChunkProgress::NeedMore => {
                match st.feed_with(&body[split..], |d| data.extend_from_slice(d)) {
                    Ok(ChunkProgress::Done(n)) => split + n,
                    other => panic!("split {split}: {other:?}"),
                }
            }
        };
        assert_eq!(end, body.len() - 4, "split {split}");
        assert_eq!(data, b"abcde", "split {split}");
    }
    let mut st = ChunkedState::new();
    let mut data = Vec::new();
    assert!(st
        .feed_with(b"3\r\nabcX", |d| data.extend_from_slice(d))
        .is_err());
    assert_eq!(data, b"abc");
}
