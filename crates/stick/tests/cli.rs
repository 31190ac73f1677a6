//! `show/clear/set table` output, line for line against what HAProxy
//! 2.6.12 printed for the same commands (pointers replaced by `0xID`).

use fairlead_stick::cli::table_command;
use fairlead_stick::{Table, TableSpec};

fn table(name: &str, args: &str) -> Table {
    let words: Vec<&str> = args.split_whitespace().collect();
    Table::new(TableSpec::parse(name, &words, false).unwrap().0)
}

/// Replaces each entry's `0x<hex>:` id by `0xID:`.
fn mask(s: &str) -> String {
    s.lines()
        .map(|l| match (l.starts_with("0x"), l.find(": key=")) {
            (true, Some(p)) => format!("0xID{}", &l[p..]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run(tables: &[Table], cmd: &str, now: u64) -> Result<String, String> {
    let words: Vec<&str> = cmd.split(' ').collect();
    table_command(tables, &words, now)
        .expect("a table command")
        .map(|s| mask(&s))
}

fn tables() -> Vec<Table> {
    vec![
        table("t_ip", "type ip size 100 expire 30s store gpc0,conn_cnt,conn_cur,http_req_rate(10s),gpc1_rate(1m),gpt(2),server_id,server_key,bytes_in_cnt"),
        table("t_str", "type string len 8 size 1k store gpt0,http_req_cnt"),
        table("t_int", "type integer size 10 store conn_rate(10s)"),
        table("t_bin", "type binary len 4 size 10 store gpc0"),
        table("t_v6", "type ipv6 size 10 nopurge store gpc0"),
    ]
}

#[test]
fn list_and_entries() {
    let t = tables();
    let now = 1_000_000;
    assert_eq!(
        run(&t, "show table", now).unwrap(),
        "# table: t_ip, type: ip, size:100, used:0\n# table: t_str, type: string, size:1024, used:0\n# table: t_int, type: integer, size:10, used:0\n# table: t_bin, type: binary, size:10, used:0\n# table: t_v6, type: ipv6, size:10, used:0"
    );
    // HAProxy applies the values before the bad word, then fails.
    assert_eq!(
        run(&t, "set table t_ip key 10.0.0.1 data.gpc0 5 data.http_req_rate 7 data.server_id 3 data.gpt1 9", now),
        Err("Unknown data type\n".into())
    );
    assert_eq!(
        run(&t, "show table t_ip", now + 313).unwrap(),
        "# table: t_ip, type: ip, size:100, used:1\n0xID: key=10.0.0.1 use=0 exp=29687 server_id=3 gpc0=5 conn_cnt=0 conn_cur=0 http_req_rate(10000)=7 bytes_in_cnt=0 gpc1_rate(60000)=0 server_key=- gpt0=0 gpt1=0"
    );
    run(&t, "set table t_ip key 10.0.0.2", now).unwrap();
    assert_eq!(
        run(&t, "show table t_ip data.gpc0 gt 1", now).unwrap(),
        "# table: t_ip, type: ip, size:100, used:2\n0xID: key=10.0.0.1 use=0 exp=30000 server_id=3 gpc0=5 conn_cnt=0 conn_cur=0 http_req_rate(10000)=7 bytes_in_cnt=0 gpc1_rate(60000)=0 server_key=- gpt0=0 gpt1=0"
    );
    assert_eq!(run(&t, "show table t_ip key 10.0.0.9", now).unwrap(), "");
    assert_eq!(
        run(&t, "set table t_ip key 1.2.3.4 data.bytes_in_cnt -1", now),
        Ok(String::new())
    );
    assert!(run(&t, "show table t_ip key 1.2.3.4", now)
        .unwrap()
        .contains(" bytes_in_cnt=18446744073709551615 "));
    run(&t, "set table t_ip key 300.2.3 data.gpc0 1", now).unwrap();
    assert!(run(&t, "show table t_ip key 44.2.3.0", now)
        .unwrap()
        .contains("key=44.2.3.0 "));
}

#[test]
fn string_integer_and_v6_keys() {
    let t = tables();
    let now = 50_000;
    assert_eq!(
        run(&t, "set table t_str key a=b c data.gpt0 -1", now),
        Err("\"data.<type>\" followed by a value expected\n".into())
    );
    run(
        &t,
        "set table t_str key abcdefghijkl data.http_req_cnt 3",
        now,
    )
    .unwrap();
    assert_eq!(
        run(&t, "show table t_str", now).unwrap(),
        "# table: t_str, type: string, size:1024, used:2\n0xID: key=a\\=b use=0 exp=0 gpt0=0 http_req_cnt=0\n0xID: key=abcdefgh use=0 exp=0 gpt0=0 http_req_cnt=3"
    );
    run(
        &t,
        "set table t_str key x data.http_req_cnt 99999999999",
        now,
    )
    .unwrap();
    assert!(run(&t, "show table t_str key x", now)
        .unwrap()
        .ends_with("http_req_cnt=1215752191"));
    run(&t, "set table t_str key y data.http_req_cnt -1", now).unwrap();
    assert_eq!(
        run(&t, "show table t_str data.http_req_cnt eq -1", now).unwrap(),
        "# table: t_str, type: string, size:1024, used:4"
    );
    assert_eq!(
        run(&t, "show table t_str data.http_req_cnt eq 4294967295", now).unwrap(),
        "# table: t_str, type: string, size:1024, used:4\n0xID: key=y use=0 exp=0 gpt0=0 http_req_cnt=4294967295"
    );
    run(&t, "set table t_int key 4294967295 data.conn_rate 4", now).unwrap();
    run(&t, "set table t_int key 1", now).unwrap();
    run(&t, "set table t_int key 256", now).unwrap();
    // Integer keys sort as HAProxy's tree does (little-endian bytes).
    assert_eq!(
        run(&t, "show table t_int", now).unwrap(),
        "# table: t_int, type: integer, size:10, used:3\n0xID: key=256 use=0 exp=0 conn_rate(10000)=0\n0xID: key=1 use=0 exp=0 conn_rate(10000)=0\n0xID: key=4294967295 use=0 exp=0 conn_rate(10000)=4"
    );
    assert_eq!(
        run(&t, "set table t_bin key 0001", now),
        Err("Inserting keys into tables of type other than ip, ipv6, string and integer is not supported\n".into())
    );
    run(&t, "set table t_v6 key ::ffff:1.2.3.4 data.gpc0 1", now).unwrap();
    assert_eq!(
        run(&t, "show table t_v6", now).unwrap(),
        "# table: t_v6, type: ipv6, size:10, used:1\n0xID: key=::ffff:1.2.3.4 use=0 exp=0 gpc0=1"
    );
}

#[test]
fn errors() {
    let t = tables();
    let now = 1;
    let cases = [
        ("set table t_ip key 10.0.0.3 data.nope 1", "Unknown data type\n"),
        ("set table t_ip key 10.0.0.3 data.gpc1 1", "Data type not stored in this table\n"),
        ("set table t_ip key 10.0.0.3 data.gpc0 x", "Require a valid integer value to store\n"),
        ("set table t_ip key 10.0.0.3 gpc0 1", "\"data.<type>\" followed by a value expected\n"),
        ("show table t_ip data.gpc0 foo 1", "Filter entry #1: Require and operator among \"eq\", \"ne\", \"le\", \"ge\", \"lt\", \"gt\"\n"),
        ("show table t_ip data.gpc0 gt 1 extra", "Filter entry #2: Unknown data type\n"),
        ("show table t_ip data.gpc0 gt x", "Filter entry #1: Require a valid integer value to compare against\n"),
        ("show table t_ip data.gpc1 gt 1", "Filter entry #1: Data type not stored in this table\n"),
        ("show table t_ip bogus", "Optional argument only supports \"data.<store_data_type>\" <operator> <value> and key <key>\n"),
        ("show table nope", "No such table\n"),
        ("show table t_int key x", "Invalid key\n"),
        ("show table t_int key", "Key value expected\n"),
        ("clear table", "Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>\n"),
        ("clear table t_int bogus", "Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>\n"),
        ("set table t_int data.conn_rate 5", "content-based lookup is only supported with the \"show\" and \"clear\" actions\n"),
        ("set table", "Required arguments: <table> key <key> [data.<store_data_type> <value>]*\n"),
        ("show table t_ip data.gpc0 gt 1 data.gpc0 gt 1 data.gpc0 gt 1 data.gpc0 gt 1 data.gpc0", "Detected extra data in filter, 16th word of input, after '1'\n"),
    ];
    for (cmd, want) in cases {
        assert_eq!(run(&t, cmd, now), Err(want.to_string()), "{cmd}");
    }
    assert!(table_command(&t, &["show", "stat"], now).is_none());
}

#[test]
fn clear_by_filter_key_and_all() {
    let t = tables();
    let now = 10_000;
    run(&t, "set table t_int key 5 data.conn_rate 10", now).unwrap();
    run(&t, "set table t_int key 6 data.conn_rate 1", now).unwrap();
    run(&t, "set table t_int key 7", now).unwrap();
    assert_eq!(
        run(&t, "clear table t_int data.conn_rate gt 5", now),
        Ok(String::new())
    );
    assert_eq!(t[2].len(), 2);
    assert_eq!(run(&t, "clear table t_int key 77", now), Ok(String::new()));
    run(&t, "clear table t_int key 6", now).unwrap();
    assert_eq!(t[2].len(), 1);
    // An entry in use cannot be removed by key, and is skipped by a clear.
    let held = t[2].lookup(&7u32.to_le_bytes(), now).unwrap();
    assert_eq!(
        run(&t, "clear table t_int key 7", now),
        Err("Entry currently in use, cannot remove\n".into())
    );
    assert!(run(&t, "show table t_int", now)
        .unwrap()
        .ends_with("key=7 use=1 exp=0 conn_rate(10000)=0"));
    run(&t, "clear table t_int", now).unwrap();
    assert_eq!(t[2].len(), 1);
    drop(held);
    run(&t, "clear table t_int", now).unwrap();
    assert_eq!(t[2].len(), 0);
    // `set table NAME` alone clears the table, as HAProxy 2.6 does.
    run(&t, "set table t_ip key 10.0.0.1", now).unwrap();
    assert_eq!(run(&t, "set table t_ip", now), Ok(String::new()));
    assert_eq!(t[0].len(), 0);
}

#[test]
fn rates_set_from_cli_fade_out() {
    let t = tables();
    run(&t, "set table t_int key 9 data.conn_rate 10", 20_001).unwrap();
    let line = |now| run(&t, "show table t_int key 9", now).unwrap();
    assert!(line(20_001).ends_with("conn_rate(10000)=10"));
    // Tick 20000 (low bit cleared); at 35000, 5000 ms of the second
    // period remain: 10 * 5000 / 10000.
    assert!(line(35_000).ends_with("conn_rate(10000)=5"));
    assert!(line(40_001).ends_with("conn_rate(10000)=0"));
}
