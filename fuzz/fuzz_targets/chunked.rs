//! Fuzzes `ChunkedState`: the input is fed whole and again cut at split
//! points derived from the first bytes; both runs must agree.
#![no_main]

use fairlead_http::{ChunkProgress, ChunkedState};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (cuts, body) = data.split_at(data.len().min(4));
    let whole = ChunkedState::new().feed(body);

    let mut st = ChunkedState::new();
    let mut pos = 0;
    let mut split = Ok(ChunkProgress::NeedMore);
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) % (body.len() + 1))
        .collect();
    points.sort_unstable();
    points.push(body.len());
    for p in points {
        let p = p.max(pos);
        match st.feed(&body[pos..p]) {
            Ok(ChunkProgress::Done(n)) => {
                split = Ok(ChunkProgress::Done(pos + n));
                break;
            }
            Ok(ChunkProgress::NeedMore) => pos = p,
            Err(e) => {
                split = Err(e);
                break;
            }
        }
    }
    assert_eq!(whole, split);
});
