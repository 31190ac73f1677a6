//! Several threads sharing one table: no update is lost, the size limit
//! holds, and referenced entries survive purges.

use std::net::Ipv4Addr;
use std::thread;

use fairlead_stick::{DataType, KeyInput, Table, TableSpec, TrackFrom, Trackers};

fn table(args: &str) -> Table {
    let words: Vec<&str> = args.split_whitespace().collect();
    Table::new(TableSpec::parse("t", &words, false).unwrap().0)
}

#[test]
fn counts_from_threads_add_up() {
    let t =
        table("type ip size 1k expire 1m store http_req_cnt,conn_cnt,conn_cur,http_req_rate(1m)");
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let t = t.clone();
            thread::spawn(move || {
                for i in 0..5_000u32 {
                    let mut c = Trackers::default();
                    let ip = Ipv4Addr::from(0x0a00_0000 + (i % 100));
                    let now = 1_000 + u64::from(i % 1000) + w;
                    assert!(c.track(
                        0,
                        &t,
                        &KeyInput::Ipv4(ip),
                        TrackFrom::HttpRequest,
                        false,
                        now
                    ));
                    c.end_connection(now);
                }
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
    assert_eq!(t.len(), 100);
    let mut total = 0;
    for e in t.entries(3_000) {
        assert_eq!(e.get_int(DataType::ConnCur, 3_000), Some(0));
        assert_eq!(e.ref_cnt(), 1);
        total += e.get_int(DataType::HttpReqCnt, 3_000).unwrap();
        assert_eq!(e.get_int(DataType::ConnCnt, 3_000), Some(200));
        assert_eq!(e.get_int(DataType::HttpReqRate, 3_000), Some(200));
    }
    assert_eq!(total, 20_000);
}

#[test]
fn purge_under_contention_keeps_limits() {
    // size 1024: batches of 5, so the 4 referenced entries at the head of
    // the expiry order never exhaust the 10 candidates of a purge (with
    // fewer, HAProxy and Fairlead alike refuse new keys).
    let t = table("type integer size 1k store conn_cur");
    // Every thread tracks its own entry before any of them fills the
    // table: a thread started late would otherwise ask for its entry in a
    // table the others had already filled, and could be refused it (seen
    // once in a CI run).
    let ready = std::sync::Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4u32)
        .map(|w| {
            let (t, ready) = (t.clone(), ready.clone());
            thread::spawn(move || {
                let mut c = Trackers::default();
                // Each thread keeps one entry tracked the whole time.
                let own = 1_000_000 + w;
                assert!(c.track(
                    0,
                    &t,
                    &KeyInput::Sint(i64::from(own)),
                    TrackFrom::TcpConnection,
                    false,
                    1
                ));
                ready.wait();
                let mut created = 0;
                for i in 0..20_000u32 {
                    let k = (w << 20) | i;
                    if t.get_or_create(&k.to_le_bytes(), u64::from(i) + 2)
                        .is_some()
                    {
                        created += 1;
                    }
                    assert!(t.len() <= 1024);
                }
                assert!(created > 19_000, "{created}");
                assert!(t.lookup(&own.to_le_bytes(), 30_000).is_some());
                c.end_connection(30_000);
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
    assert!(t.len() <= 1024 && t.len() > 1000);
    for w in 0..4u32 {
        let e = t.lookup(&(1_000_000 + w).to_le_bytes(), 40_000).unwrap();
        assert_eq!(e.get_int(DataType::ConnCur, 40_000), Some(0));
    }
}
