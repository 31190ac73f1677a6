//! Rough cost of the hot path of `http-request track-sc0 src` plus a
//! `sc_http_req_rate(0)` read, per request, with N threads sharing one
//! table of K keys: `cargo run --release -p fairlead-stick --example
//! track_bench -- THREADS KEYS`.

use std::net::Ipv4Addr;
use std::time::Instant;

use fairlead_stick::fetch::{eval_fetch, parse_fetch, FetchArgs};
use fairlead_stick::{KeyInput, Table, TableSpec, TrackFrom, Trackers};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let keys: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let words = [
        "type",
        "ip",
        "size",
        "1m",
        "expire",
        "30s",
        "store",
        "http_req_rate(10s),conn_cur",
    ];
    let t = Table::new(TableSpec::parse("fe", &words, false).unwrap().0);
    let per_thread = 2_000_000u32;
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                let f = parse_fetch("sc_http_req_rate").unwrap();
                let mut sum = 0i64;
                for i in 0..per_thread {
                    let now = 1_000 + u64::from(i / 1000);
                    let ip = Ipv4Addr::from(
                        0x0a00_0000 + (i.wrapping_mul(2_654_435_761).wrapping_add(w) % keys),
                    );
                    let mut c = Trackers::default();
                    c.track(
                        0,
                        &t,
                        &KeyInput::Ipv4(ip),
                        TrackFrom::HttpRequest,
                        false,
                        now,
                    );
                    let args = FetchArgs {
                        slot: 0,
                        idx: 0,
                        table: None,
                        default_table: None,
                    };
                    if let Some(fairlead_stick::fetch::StickSample::Sint(v)) =
                        eval_fetch(&f, &args, &c, None, now)
                    {
                        sum += v;
                    }
                    c.end_connection(now);
                }
                sum
            })
        })
        .collect();
    let total: i64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let el = start.elapsed();
    let ops = f64::from(per_thread) * f64::from(threads);
    println!(
        "threads={threads} keys={keys} requests={ops} wall={:.3}s ns/request/thread={:.1} (checksum {total})",
        el.as_secs_f64(),
        el.as_nanos() as f64 / f64::from(per_thread)
    );
}
