//! Tracking, counters per event, expiry, purge and the fetch helpers.

use std::net::Ipv4Addr;

use fairlead_stick::fetch::{
    eval_converter, eval_fetch, parse_converter, parse_fetch, FetchArgs, StickSample,
};
use fairlead_stick::{DataType, Gpc, Gpt, KeyInput, Table, TableSpec, TrackFrom, Trackers};

fn table(name: &str, args: &str) -> Table {
    let words: Vec<&str> = args.split_whitespace().collect();
    Table::new(TableSpec::parse(name, &words, false).unwrap().0)
}

fn ip(n: u8) -> KeyInput<'static> {
    KeyInput::Ipv4(Ipv4Addr::new(10, 0, 0, n))
}

fn key(n: u8) -> [u8; 4] {
    [10, 0, 0, n]
}

fn int(t: &Table, n: u8, dt: DataType, now: u64) -> i64 {
    t.lookup(&key(n), now).unwrap().get_int(dt, now).unwrap()
}

#[test]
fn rate_limit_idiom() {
    // stick-table type ip size 100k expire 30s store http_req_rate(10s)
    // http-request track-sc0 src
    // http-request deny deny_status 429 if { sc_http_req_rate(0) gt 100 }
    let t = table(
        "fe",
        "type ip size 100k expire 30s store http_req_rate(10s),conn_cur,conn_cnt",
    );
    let f = parse_fetch("sc_http_req_rate").unwrap();
    let mut conn = Trackers::default();
    let args = FetchArgs {
        slot: 0,
        idx: 0,
        table: None,
        default_table: Some(&t),
    };
    // Before tracking, the fetch fails (so `gt 100` is false).
    assert_eq!(eval_fetch(&f, &args, &conn, None, 1000), None);
    let mut denied = 0;
    for i in 0..150u64 {
        let now = 1000 + i;
        conn.on_http_request(now); // slots tracked at content level are gone
        assert!(conn.track(0, &t, &ip(1), TrackFrom::HttpRequest, false, now));
        let Some(StickSample::Sint(rate)) = eval_fetch(&f, &args, &conn, None, now) else {
            panic!()
        };
        assert_eq!(rate, i as i64 + 1);
        if rate > 100 {
            denied += 1;
        }
        conn.end_stream(now);
    }
    assert_eq!(denied, 50);
    assert_eq!(int(&t, 1, DataType::ConnCnt, 2000), 150);
    assert_eq!(int(&t, 1, DataType::ConnCur, 2000), 0);
}

#[test]
fn first_track_wins_and_levels() {
    let t = table(
        "t",
        "type ip size 10 expire 10s store conn_cur,conn_cnt,sess_cnt,http_req_cnt",
    );
    let u = table("u", "type ip size 10 store conn_cur");
    let mut c = Trackers::default();
    assert!(c.track(0, &t, &ip(1), TrackFrom::TcpConnection, false, 100));
    // Busy slot: nothing happens, whatever the table or key.
    assert!(!c.track(0, &u, &ip(2), TrackFrom::TcpContent, false, 100));
    assert!(!c.track(0, &t, &ip(3), TrackFrom::HttpRequest, false, 100));
    assert!(u.is_empty());
    assert!(c.track(1, &u, &ip(2), TrackFrom::HttpRequest, false, 100));
    assert!(!c.track(5, &t, &ip(4), TrackFrom::HttpRequest, false, 100));
    c.on_session_accepted(100);
    assert_eq!(int(&t, 1, DataType::SessCnt, 100), 1);
    assert_eq!(int(&t, 1, DataType::ConnCur, 100), 1);
    assert_eq!(int(&u, 2, DataType::ConnCur, 100), 1);
    // End of request: only the content-level slot is released.
    c.end_stream(200);
    assert!(c.is_tracked(0) && !c.is_tracked(1));
    assert_eq!(int(&u, 2, DataType::ConnCur, 200), 0);
    assert_eq!(int(&t, 1, DataType::ConnCur, 200), 1);
    c.on_http_request(300);
    assert_eq!(int(&t, 1, DataType::HttpReqCnt, 300), 1);
    c.end_connection(400);
    assert!(!c.is_tracked(0));
    assert_eq!(int(&t, 1, DataType::ConnCur, 400), 0);
    // The release refreshed the expiry: 10 s after 400.
    assert_eq!(t.lookup(&key(1), 400).unwrap().expires_in(400), 10_000);
}

#[test]
fn http_status_counters() {
    let t = table(
        "t",
        "type ip size 10 store http_req_cnt,http_err_cnt,http_fail_cnt,http_err_rate(10s)",
    );
    let mut c = Trackers::default();
    c.track(0, &t, &ip(1), TrackFrom::TcpSession, false, 1);
    for s in [
        200, 301, 400, 401, 403, 404, 407, 499, 500, 501, 502, 503, 504, 505, 599,
    ] {
        c.on_response_status(s, 2);
    }
    // Every 4xx is an error; 5xx except 501/505 a failure.
    assert_eq!(int(&t, 1, DataType::HttpErrCnt, 2), 6);
    assert_eq!(int(&t, 1, DataType::HttpFailCnt, 2), 5);
    assert_eq!(int(&t, 1, DataType::HttpErrRate, 2), 6);
    // Tracking from http-response counts the request and its status.
    let mut d = Trackers::default();
    d.track(2, &t, &ip(2), TrackFrom::HttpResponse(404), false, 3);
    assert_eq!(int(&t, 2, DataType::HttpReqCnt, 3), 1);
    assert_eq!(int(&t, 2, DataType::HttpErrCnt, 3), 1);
    d.end_connection(3);
}

#[test]
fn bytes_and_backend_requests() {
    let t = table(
        "t",
        "type ip size 10 store bytes_in_cnt,bytes_out_cnt,bytes_out_rate(1s),http_req_cnt",
    );
    let mut c = Trackers::default();
    c.track(0, &t, &ip(1), TrackFrom::TcpContent, true, 1);
    c.track(1, &t, &ip(2), TrackFrom::TcpContent, false, 1);
    c.on_bytes_in(3000, 10);
    c.on_bytes_out(5000, 10);
    c.on_bytes_out(5000, 20);
    assert_eq!(int(&t, 1, DataType::BytesInCnt, 20), 3000);
    assert_eq!(int(&t, 1, DataType::BytesOutCnt, 20), 10_000);
    assert_eq!(int(&t, 1, DataType::BytesOutRate, 20), 10_000);
    let k = parse_fetch("sc0_kbytes_out").unwrap();
    let args = FetchArgs {
        slot: 0,
        idx: 0,
        table: None,
        default_table: None,
    };
    assert_eq!(
        eval_fetch(&k, &args, &c, None, 20),
        Some(StickSample::Sint(9))
    );
    c.on_backend_http_request(30);
    assert_eq!(int(&t, 1, DataType::HttpReqCnt, 30), 1);
    assert_eq!(int(&t, 2, DataType::HttpReqCnt, 30), 0);
    c.end_stream(40);
}

#[test]
fn gpc_gpt_actions_and_fetches() {
    let t = table("t", "type ip size 10 store gpc0,gpc0_rate(10s),gpt0");
    let arr = table("a", "type ip size 10 store gpc(2),gpc_rate(2,10s),gpt(3)");
    let mut c = Trackers::default();
    c.track(0, &t, &ip(1), TrackFrom::TcpConnection, false, 1);
    c.track(1, &arr, &ip(1), TrackFrom::TcpConnection, false, 1);
    c.inc_gpc(0, Gpc::Gpc0, 5);
    c.inc_gpc(0, Gpc::Gpc0, 6);
    c.set_gpt(0, Gpt::Gpt0, 0x1_0000_0007, 7);
    assert_eq!(int(&t, 1, DataType::Gpc0, 7), 2);
    assert_eq!(int(&t, 1, DataType::Gpc0Rate, 7), 2);
    assert_eq!(int(&t, 1, DataType::Gpt0, 7), 7);
    // gpc0/gpt0 fall back on element 0 of the arrays; gpc1 on element 1.
    c.inc_gpc(1, Gpc::Gpc0, 8);
    c.inc_gpc(1, Gpc::Gpc1, 8);
    c.inc_gpc(1, Gpc::Idx(1), 8);
    c.set_gpt(1, Gpt::Idx(2), 42, 8);
    c.set_gpt(1, Gpt::Idx(3), 43, 8); // out of range: nothing
    let e = arr.lookup(&key(1), 9).unwrap();
    assert_eq!(e.get(DataType::Gpc, 0, 9).unwrap().as_int(), 1);
    assert_eq!(e.get(DataType::Gpc, 1, 9).unwrap().as_int(), 2);
    assert_eq!(e.get(DataType::GpcRate, 1, 9).unwrap().as_int(), 2);
    assert_eq!(e.get(DataType::Gpt, 2, 9).unwrap().as_int(), 42);
    drop(e);
    let args = FetchArgs {
        slot: 1,
        idx: 1,
        table: None,
        default_table: None,
    };
    let get = |name: &str, args: &FetchArgs<'_>| {
        eval_fetch(&parse_fetch(name).unwrap(), args, &c, None, 9)
    };
    assert_eq!(get("sc_get_gpc", &args), Some(StickSample::Sint(2)));
    assert_eq!(get("sc1_get_gpc1", &args), Some(StickSample::Sint(2)));
    assert_eq!(get("sc_gpc_rate", &args), Some(StickSample::Sint(2)));
    assert_eq!(get("sc_inc_gpc", &args), Some(StickSample::Sint(3)));
    assert_eq!(get("sc_clr_gpc", &args), Some(StickSample::Sint(3)));
    assert_eq!(get("sc_get_gpc", &args), Some(StickSample::Sint(0)));
    assert_eq!(get("sc0_clr_gpc0", &args), Some(StickSample::Sint(2)));
    assert_eq!(get("sc0_get_gpt0", &args), Some(StickSample::Sint(7)));
    // Not stored: the fetch fails; inc returns 0.
    assert_eq!(get("sc0_get_gpc1", &args), None);
    assert_eq!(get("sc0_inc_gpc1", &args), Some(StickSample::Sint(0)));
    assert_eq!(get("sc0_http_req_rate", &args), None);
    // Not tracked: fails.
    assert_eq!(get("sc2_get_gpc0", &args), None);
    assert_eq!(get("sc2_tracked", &args), Some(StickSample::Bool(false)));
    assert_eq!(get("sc0_tracked", &args), Some(StickSample::Bool(true)));
    c.end_connection(10);
}

#[test]
fn src_fetches_and_converters() {
    let t = table(
        "t",
        "type ip size 10 expire 10s store gpc0,http_req_rate(10s),conn_cur",
    );
    let other = table("o", "type ip size 10 store gpc0");
    let args = FetchArgs {
        slot: 0,
        idx: 0,
        table: None,
        default_table: Some(&t),
    };
    let c = Trackers::default();
    let src = Some(ip(7));
    let f = |n: &str| parse_fetch(n).unwrap();
    // Absent key reads as 0.
    assert_eq!(
        eval_fetch(&f("src_get_gpc0"), &args, &c, src, 1),
        Some(StickSample::Sint(0))
    );
    assert!(t.is_empty());
    // src_inc_gpc0 creates the entry.
    assert_eq!(
        eval_fetch(&f("src_inc_gpc0"), &args, &c, src, 1),
        Some(StickSample::Sint(1))
    );
    assert_eq!(
        eval_fetch(&f("src_get_gpc0"), &args, &c, src, 2),
        Some(StickSample::Sint(1))
    );
    assert_eq!(
        eval_fetch(&f("table_cnt"), &args, &c, None, 2),
        Some(StickSample::Sint(1))
    );
    assert_eq!(
        eval_fetch(&f("table_avl"), &args, &c, None, 2),
        Some(StickSample::Sint(9))
    );
    let with_o = FetchArgs {
        table: Some(&other),
        ..args
    };
    assert_eq!(
        eval_fetch(&f("src_get_gpc0"), &with_o, &c, src, 2),
        Some(StickSample::Sint(0))
    );
    assert!(other.is_empty());
    // Converters.
    let conv = |n: &str, t: &Table, k: KeyInput<'_>| {
        eval_converter(&parse_converter(n).unwrap(), t, &k, 0, 3)
    };
    assert_eq!(conv("in_table", &t, ip(7)), Some(StickSample::Bool(true)));
    assert_eq!(conv("in_table", &t, ip(8)), Some(StickSample::Bool(false)));
    assert_eq!(conv("table_gpc0", &t, ip(7)), Some(StickSample::Sint(1)));
    assert_eq!(conv("table_gpc0", &t, ip(8)), Some(StickSample::Sint(0)));
    assert_eq!(
        conv("table_http_req_rate", &t, ip(8)),
        Some(StickSample::Sint(0))
    );
    assert_eq!(conv("table_http_err_rate", &t, ip(7)), None);
    assert_eq!(
        conv("table_conn_cur", &t, KeyInput::Str(b"10.0.0.7")),
        Some(StickSample::Sint(0))
    );
    assert_eq!(conv("table_conn_cur", &t, KeyInput::Str(b"bad")), None);
    // Trackers: table_trackers counts its own lookup (HAProxy quirk).
    let mut tr = Trackers::default();
    tr.track(0, &t, &ip(7), TrackFrom::TcpConnection, false, 4);
    assert_eq!(
        conv("table_trackers", &t, ip(7)),
        Some(StickSample::Sint(2))
    );
    let a0 = FetchArgs { slot: 0, ..args };
    assert_eq!(
        eval_fetch(&f("sc0_trackers"), &a0, &tr, None, 4),
        Some(StickSample::Sint(1))
    );
    let a0t = FetchArgs {
        table: Some(&t),
        ..a0
    };
    assert_eq!(
        eval_fetch(&f("sc0_trackers"), &a0t, &tr, None, 4),
        Some(StickSample::Sint(1))
    );
    // sc0_* with another table: the tracked key looked up there.
    let a0o = FetchArgs {
        table: Some(&other),
        ..a0
    };
    assert_eq!(
        eval_fetch(&f("sc0_get_gpc0"), &a0o, &tr, None, 4),
        Some(StickSample::Sint(0))
    );
    assert_eq!(
        eval_fetch(&f("sc0_tracked"), &a0o, &tr, None, 4),
        Some(StickSample::Bool(true))
    );
    // As HAProxy 2.6.12 printed with sc1 (session) and sc0 (request) on
    // one entry: tt=3 sc0=2 sc0f=2.
    tr.track(1, &t, &ip(7), TrackFrom::HttpRequest, false, 4);
    assert_eq!(
        conv("table_trackers", &t, ip(7)),
        Some(StickSample::Sint(3))
    );
    assert_eq!(
        eval_fetch(&f("sc0_trackers"), &a0, &tr, None, 4),
        Some(StickSample::Sint(2))
    );
    assert_eq!(
        eval_fetch(&f("sc0_trackers"), &a0t, &tr, None, 4),
        Some(StickSample::Sint(2))
    );
    tr.end_connection(5);
}

#[test]
fn keyword_catalog() {
    assert!(parse_fetch("sc0_http_req_rate").is_some());
    assert!(parse_fetch("sc2_conn_cur").is_some());
    assert!(parse_fetch("sc3_conn_cur").is_none());
    assert!(parse_fetch("sc0_get_gpc").is_none()); // array forms: sc_ and src_ only
    assert!(parse_fetch("sc1_clr_gpc").is_some()); // registered in 2.6
    assert!(parse_fetch("src_tracked").is_none());
    assert!(parse_fetch("src_updt_conn_cnt").is_some());
    assert!(parse_fetch("sc_foo").is_none());
    let f = parse_fetch("sc_get_gpc").unwrap();
    let a = f.args(false);
    assert!(a.slot && a.idx && !a.table_required);
    assert_eq!(
        parse_fetch("sc0_gpc0_rate").unwrap().data_types(),
        vec![DataType::Gpc0Rate, DataType::GpcRate]
    );
    let c = parse_converter("table_gpc").unwrap();
    assert!(c.args(true).idx && c.args(true).table_required);
    assert!(parse_converter("table_server_id").is_some());
    assert!(parse_converter("table_tracked").is_none());
}

#[test]
fn expiry_and_refs() {
    let t = table("t", "type ip size 10 expire 1s store gpc0");
    let e = t.get_or_create(&key(1), 1000).unwrap();
    assert_eq!(e.expires_in(1000), 1000);
    // Referenced: never expires (and, as in HAProxy, does not keep the
    // expiry task scheduled: the release frees it).
    assert_eq!(t.purge_expired(5000), None);
    assert_eq!(t.len(), 1);
    assert!(t.lookup(&key(1), 5000).is_some());
    e.release(5000);
    assert_eq!(t.len(), 0, "released after its expiry: freed at once");
    // Unreferenced and expired: invisible, then purged.
    drop(t.get_or_create(&key(2), 10_000).unwrap());
    assert!(t.lookup(&key(2), 10_999).is_some());
    assert!(t.lookup(&key(2), 11_000).is_none());
    drop(t.get_or_create(&key(3), 10_000).unwrap());
    let g = t.get_or_create(&key(4), 10_000).unwrap();
    g.touch(10_500);
    drop(g);
    // Entry 3 is freed; entry 4 was touched: requeued at its new date.
    assert_eq!(t.purge_expired(11_000), Some(11_500));
    assert_eq!(t.len(), 1);
    assert_eq!(t.purge_expired(11_500), None);
    assert!(t.is_empty());
}

#[test]
fn purge_when_full() {
    // size 4: batches of 4/256+1 = 1 entry, oldest (by expiry) first.
    let t = table("t", "type ip size 4 store gpc0");
    for n in 1..=4 {
        drop(t.get_or_create(&key(n), u64::from(n) * 10).unwrap());
    }
    // Touch entry 1: it becomes the most recent (requeued lazily).
    t.lookup(&key(1), 50).unwrap().touch(50);
    drop(t.get_or_create(&key(5), 70).unwrap());
    assert!(t.lookup(&key(2), 70).is_none());
    let held = t.get_or_create(&key(3), 75).unwrap();
    drop(t.get_or_create(&key(6), 80).unwrap());
    // 3 is referenced: skipped; 4 goes.
    assert!(t.lookup(&key(4), 80).is_none());
    drop(t.get_or_create(&key(7), 90).unwrap());
    assert!(t.lookup(&key(1), 90).is_none());
    drop(t.get_or_create(&key(8), 95).unwrap());
    assert!(t.lookup(&key(5), 95).is_none());
    assert!(t.lookup(&key(3), 95).is_some());
    assert_eq!(t.len(), 4);
    drop(held);
    // At most 2 x batch candidates are inspected: a requeue and a
    // referenced entry use them up and the new key is refused, as in
    // HAProxy; the next attempt finds the requeued entry.
    let s2 = table("s2", "type ip size 2");
    drop(s2.get_or_create(&key(1), 10).unwrap());
    let h2 = s2.get_or_create(&key(2), 20).unwrap();
    s2.lookup(&key(1), 30).unwrap().touch(30);
    assert!(s2.get_or_create(&key(3), 40).is_none());
    assert!(s2.get_or_create(&key(3), 40).is_some());
    assert!(s2.lookup(&key(1), 40).is_none());
    drop(h2);
    // Larger batches: size 512 evicts 3 at a time.
    let big = table("b", "type integer size 512");
    for n in 0..512u32 {
        drop(big.get_or_create(&n.to_le_bytes(), u64::from(n)).unwrap());
    }
    drop(big.get_or_create(&9999u32.to_le_bytes(), 1000).unwrap());
    assert_eq!(big.len(), 510);
    assert!(big.lookup(&2u32.to_le_bytes(), 1000).is_none());
    assert!(big.lookup(&3u32.to_le_bytes(), 1000).is_some());
}

#[test]
fn nopurge_refuses_and_all_referenced_refuses() {
    let t = table("t", "type ip size 2 nopurge store gpc0");
    let mut c = Trackers::default();
    drop(t.get_or_create(&key(1), 1).unwrap());
    drop(t.get_or_create(&key(2), 1).unwrap());
    assert!(!c.track(0, &t, &ip(3), TrackFrom::TcpConnection, false, 2));
    assert!(!c.is_tracked(0));
    assert!(c.track(0, &t, &ip(1), TrackFrom::TcpConnection, false, 2));
    let u = table("u", "type ip size 1 store gpc0");
    let h = u.get_or_create(&key(1), 1).unwrap();
    assert!(u.get_or_create(&key(2), 2).is_none());
    drop(h);
    assert!(u.get_or_create(&key(2), 3).is_some());
    c.end_connection(3);
}

#[test]
fn ipv6_in_ip_table_and_string_keys() {
    let t = table("t", "type ip size 10 store gpc0");
    let mut c = Trackers::default();
    let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
    assert!(!c.track(0, &t, &KeyInput::Ipv6(v6), TrackFrom::HttpRequest, false, 1));
    let mapped = Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped();
    assert!(c.track(
        0,
        &t,
        &KeyInput::Ipv6(mapped),
        TrackFrom::HttpRequest,
        false,
        1
    ));
    assert!(t.lookup(&key(1), 1).is_some());
    let s = table("s", "type string len 4 size 10 store gpc0");
    assert!(c.track(
        1,
        &s,
        &KeyInput::Str(b"abcdefg"),
        TrackFrom::HttpRequest,
        false,
        1
    ));
    assert!(s.lookup(b"abcd", 1).is_some());
    c.end_connection(2);
}

/// The same traffic as against HAProxy 2.6.12 with
/// `tcp-request session track-sc1 src`, `http-request track-sc0 src`,
/// `http-request deny if { path /deny }`: a keep-alive connection sending
/// `/a`, `/b`, `/deny`. HAProxy then showed `use=1 conn_cnt=4 conn_cur=1
/// sess_cnt=1 http_req_cnt=6 http_req_rate(10000)=6 http_err_cnt=2`, and
/// `use=0 ... conn_cur=0` after the close.
#[test]
fn keep_alive_session_and_request_tracking_like_haproxy() {
    let t = table(
        "f",
        "type ip size 100 expire 30s store conn_cur,conn_cnt,sess_cnt,http_req_cnt,http_req_rate(10s),http_err_cnt",
    );
    let mut c = Trackers::default();
    let now = 5_000;
    c.track(1, &t, &ip(1), TrackFrom::TcpSession, false, now);
    c.on_session_accepted(now);
    for path in ["/a", "/b", "/deny"] {
        c.on_http_request(now);
        c.track(0, &t, &ip(1), TrackFrom::HttpRequest, false, now);
        if path == "/deny" {
            c.on_http_error(now);
        }
        c.end_stream(now);
    }
    let show = |now| {
        let words = ["show", "table", "f"];
        fairlead_stick::cli::table_command(std::slice::from_ref(&t), &words, now)
            .unwrap()
            .unwrap()
    };
    let line = show(now);
    let line = &line[line.find(": key=").unwrap()..];
    assert_eq!(line, ": key=10.0.0.1 use=1 exp=30000 conn_cnt=4 conn_cur=1 sess_cnt=1 http_req_cnt=6 http_req_rate(10000)=6 http_err_cnt=2\n");
    c.end_connection(now + 300);
    let line = show(now + 300);
    let line = &line[line.find(": key=").unwrap()..];
    assert_eq!(line, ": key=10.0.0.1 use=0 exp=30000 conn_cnt=4 conn_cur=0 sess_cnt=1 http_req_cnt=6 http_req_rate(10000)=6 http_err_cnt=2\n");
}

#[test]
fn dropped_trackers_give_back_conn_cur() {
    let t = table("t", "type ip size 10 store conn_cur");
    {
        let mut c = Trackers::default();
        c.track(0, &t, &ip(1), TrackFrom::TcpConnection, false, 1);
        c.track(1, &t, &ip(1), TrackFrom::HttpRequest, false, 1);
        assert_eq!(int(&t, 1, DataType::ConnCur, 1), 2);
    }
    let e = t.lookup(&key(1), 2).unwrap();
    assert_eq!((e.get_int(DataType::ConnCur, 2), e.ref_cnt()), (Some(0), 1));
}
