//! CSV and JSON against HAProxy 2.6.12's own output.
//!
//! The expected lines were produced by HAProxy 2.6.12 (`show stat`, cut
//! after the 103 static fields) for the configuration described in
//! `common/mod.rs`; the fixture feeds the same values.

mod common;

use fairlead_stats::*;

/// HAProxy 2.6's static `show stat` fields, from the management guide
/// (section 9.1, fields 0 to 99) and the 2.6 output (100 to 102). Field
/// 89 is spelled `src_ilim` in HAProxy's output.
const HAPROXY_26_FIELDS: [&str; 103] = [
    "pxname",
    "svname",
    "qcur",
    "qmax",
    "scur",
    "smax",
    "slim",
    "stot",
    "bin",
    "bout",
    "dreq",
    "dresp",
    "ereq",
    "econ",
    "eresp",
    "wretr",
    "wredis",
    "status",
    "weight",
    "act",
    "bck",
    "chkfail",
    "chkdown",
    "lastchg",
    "downtime",
    "qlimit",
    "pid",
    "iid",
    "sid",
    "throttle",
    "lbtot",
    "tracked",
    "type",
    "rate",
    "rate_lim",
    "rate_max",
    "check_status",
    "check_code",
    "check_duration",
    "hrsp_1xx",
    "hrsp_2xx",
    "hrsp_3xx",
    "hrsp_4xx",
    "hrsp_5xx",
    "hrsp_other",
    "hanafail",
    "req_rate",
    "req_rate_max",
    "req_tot",
    "cli_abrt",
    "srv_abrt",
    "comp_in",
    "comp_out",
    "comp_byp",
    "comp_rsp",
    "lastsess",
    "last_chk",
    "last_agt",
    "qtime",
    "ctime",
    "rtime",
    "ttime",
    "agent_status",
    "agent_code",
    "agent_duration",
    "check_desc",
    "agent_desc",
    "check_rise",
    "check_fall",
    "check_health",
    "agent_rise",
    "agent_fall",
    "agent_health",
    "addr",
    "cookie",
    "mode",
    "algo",
    "conn_rate",
    "conn_rate_max",
    "conn_tot",
    "intercepted",
    "dcon",
    "dses",
    "wrew",
    "connect",
    "reuse",
    "cache_lookups",
    "cache_hits",
    "srv_icur",
    "src_ilim",
    "qtime_max",
    "ctime_max",
    "rtime_max",
    "ttime_max",
    "eint",
    "idle_conn_cur",
    "safe_conn_cur",
    "used_conn_cur",
    "need_conn_est",
    "uweight",
    "agg_server_status",
    "agg_server_check_status",
    "agg_check_status",
];

const HAPROXY_LINES: &str = "\
www,FRONTEND,,,0,1,9983,4,332,464,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,4,0,4,,,,0,4,0,0,0,0,,4,4,4,,,0,0,0,0,,,,,,,,,,,,,,,,,,,,,http,,4,4,4,0,0,0,0,,,0,0,,,,,,,0,,,,,,,,,
app,a1,0,0,0,0,,0,0,0,,0,,0,0,0,0,UP,1,1,0,1,1,1,2,10,1,3,1,6,0,,2,0,,0,L7OK,200,8,0,0,0,0,0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,Layer7 check passed,,2,3,4,,,,127.0.0.1:18081,c1,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,2,,,,
app,a2,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN,1,0,1,1,1,2,2,,1,3,2,,0,,2,0,,0,L7STS,503,0,0,0,0,0,0,0,,,,0,0,0,,,,,-1,Service Unavailable,,0,0,0,0,,,,Layer7 wrong status,,2,3,0,,,,127.0.0.1:18082,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,1,,,,
app,a3,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,1,1,0,,,3,,,1,3,3,,0,,2,0,,0,,,,0,0,0,0,0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18083,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,0,1,,,,
app,a4,0,0,0,1,,2,166,232,,0,,0,0,0,0,UP,1,1,0,,,1,,,1,3,4,,2,app/a1,2,2,,2,,,,0,2,0,0,0,0,,,,2,0,0,,,,,0,,,0,0,2,2,,,,,,,,,,,,127.0.0.1:18081,,http,,,,,,,,0,2,0,,,0,,0,0,2,2,0,0,0,0,1,1,,,,
app,a5,0,0,0,1,,2,166,232,,0,,0,0,0,0,no check,1,1,0,,,3,,,1,3,5,,2,,2,2,,2,,,,0,2,0,0,0,0,,,,2,0,0,,,,,0,,Connection refused,0,0,4,4,L4CON,,0,,Layer4 connection problem,,,,1,1,1,127.0.0.1:18081,,http,,,,,,,,0,2,0,,,0,,0,0,5,5,0,0,0,0,1,1,,,,
app,BACKEND,0,0,0,1,999,4,332,464,0,0,,0,0,0,0,UP,3,3,0,,0,3,0,,1,3,0,,4,,1,4,,4,,,,0,4,0,0,0,0,,,,4,0,0,0,0,0,0,0,,,0,0,3,3,,,,,,,,,,,,,SRV,http,roundrobin,,,,,,,0,4,0,0,0,,,0,0,5,5,0,,,,,4,0,0,0,
tcpb,t1,0,0,0,0,,0,0,0,,0,,0,0,0,0,no check,1,1,0,,,3,,,1,4,1,,0,,2,0,,0,,,,,,,,,,,,,,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18081,,tcp,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,0,1,,,,
tcpb,BACKEND,0,0,0,0,1,0,0,0,0,0,,0,0,0,0,UP,1,1,0,,0,3,0,,1,4,0,,0,,1,0,,0,,,,,,,,,,,,,,0,0,0,0,0,0,-1,,,0,0,0,0,,,,,,,,,,,,,,tcp,leastconn,,,,,,,0,0,0,,,,,0,0,0,0,0,,,,,1,0,0,0,
st,FRONTEND,,,0,0,9983,0,0,0,0,0,0,,,,,OPEN,,,,,,,,,1,5,0,,,,0,0,0,0,,,,0,0,0,0,0,0,,0,0,0,,,0,0,0,0,,,,,,,,,,,,,,,,,,,,,http,,0,0,0,0,0,0,0,,,0,0,,,,,,,0,,,,,,,,,
st,BACKEND,0,0,0,0,999,0,0,0,0,0,,0,0,0,0,UP,0,0,0,,0,3,,,1,5,0,,0,,1,0,,0,,,,0,0,0,0,0,0,,,,0,0,0,0,0,0,0,-1,,,0,0,0,0,,,,,,,,,,,,,,http,roundrobin,,,,,,,0,0,0,0,0,,,0,0,0,0,0,,,,,0,0,0,0,
";

fn csv_text(s: &Snapshot) -> String {
    let mut out = Vec::new();
    csv(s, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn csv_header_is_haproxy_26() {
    let text = csv_text(&Snapshot::default());
    let header = text.lines().next().unwrap();
    let names: Vec<&str> = header
        .strip_prefix("# ")
        .unwrap()
        .strip_suffix(',')
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(names, HAPROXY_26_FIELDS);
    assert_eq!(field_names().collect::<Vec<_>>(), HAPROXY_26_FIELDS);
    // Through srv_abrt at least, the positions of the management guide.
    assert_eq!(names[50], "srv_abrt");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn csv_lines_match_haproxy_output() {
    let text = csv_text(&common::fixture());
    let got: Vec<&str> = text.lines().skip(1).collect();
    let want: Vec<&str> = HAPROXY_LINES.lines().collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want.iter()) {
        let (gf, wf): (Vec<&str>, Vec<&str>) = (g.split(',').collect(), w.split(',').collect());
        for (i, (a, b)) in gf.iter().zip(wf.iter()).enumerate() {
            assert_eq!(
                a,
                b,
                "line {w}\nfield {i} ({})",
                HAPROXY_26_FIELDS.get(i).unwrap_or(&"?")
            );
        }
        assert_eq!(g, w);
    }
}

#[test]
fn csv_quotes_ambiguous_names_and_transitional_states() {
    let mut s = common::fixture();
    s.proxies[1].servers[0].name = "we,ird \"one\"".into();
    s.proxies[1].servers[0].state = ServerState::GoingDown { done: 1, of: 3 };
    s.proxies[1].servers[1].state = ServerState::GoingUp { done: 1, of: 2 };
    s.proxies[1].servers[2].state = ServerState::MaintVia("app/a1".into());
    s.proxies[1].servers[3].check = Some(CheckInfo {
        in_progress: true,
        ..common::check("L4OK", None, Some(1), "Layer4 check passed", "")
    });
    let text = csv_text(&s);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[2].starts_with("app,\"we,ird \"\"one\"\"\",0,"),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains(",UP 1/3,"));
    assert!(lines[3].contains(",DOWN 1/2,"));
    assert!(lines[4].contains(",MAINT (via app/a1),"));
    assert!(lines[5].contains(",* L4OK,,1,"));
}

#[test]
fn json_is_typed_output() {
    let mut out = Vec::new();
    json(&common::fixture(), &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let lines = v.as_array().unwrap();
    assert_eq!(lines.len(), 11);
    // Every field object carries the typed-output keys; names and
    // positions agree with the CSV header; empty CSV fields are absent.
    let csv_lines: Vec<String> = csv_text(&common::fixture())
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    for (line, csv_line) in lines.iter().zip(csv_lines.iter()) {
        let cols: Vec<&str> = csv_line.split(',').collect();
        let fields = line.as_array().unwrap();
        let non_empty = cols[..103].iter().filter(|c| !c.is_empty()).count();
        assert_eq!(fields.len(), non_empty, "{csv_line}");
        for f in fields {
            let pos = f["field"]["pos"].as_u64().unwrap() as usize;
            assert_eq!(f["field"]["name"], HAPROXY_26_FIELDS[pos]);
            assert_eq!(f["processNum"], 1);
            for k in ["origin", "nature", "scope"] {
                assert!(f["tags"][k].is_string());
            }
            let ty = f["value"]["type"].as_str().unwrap();
            let val = &f["value"]["value"];
            match ty {
                "str" => assert!(val.is_string()),
                "u32" | "u64" => assert!(val.is_u64()),
                "s32" => assert!(val.is_i64()),
                t => panic!("type {t}"),
            }
        }
    }
    // Spot checks against HAProxy's JSON for the same run.
    let fe = &lines[0][2];
    assert_eq!(fe["objType"], "Frontend");
    assert_eq!(fe["proxyId"], 2);
    assert_eq!(fe["field"]["name"], "scur");
    assert_eq!(fe["tags"]["nature"], "Gauge");
    assert_eq!(fe["value"]["type"], "u32");
    let a1 = lines[1].as_array().unwrap();
    assert_eq!(a1[0]["objType"], "Server");
    assert_eq!(a1[0]["id"], 1);
    let lastsess = a1
        .iter()
        .find(|f| f["field"]["name"] == "lastsess")
        .unwrap();
    assert_eq!(lastsess["value"]["type"], "s32");
    assert_eq!(lastsess["value"]["value"], -1);
    let be = lines[6].as_array().unwrap();
    let act = be.iter().find(|f| f["field"]["name"] == "act").unwrap();
    assert_eq!(act["tags"]["origin"], "Metric");
}

#[test]
fn json_escapes_names() {
    let mut s = common::fixture();
    s.proxies[0].name = "a\"b\\c\nd".into();
    let mut out = Vec::new();
    json(&s, &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v[0][0]["value"]["value"], "a\"b\\c\nd");
}

#[test]
fn info_lists_process_values() {
    let mut out = Vec::new();
    info(&common::fixture(), &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("Name: Fairlead\nVersion: 0.1.0\n"));
    for l in [
        "Nbthread: 2",
        "Pid: 4242",
        "Uptime: 0d 0h00m08s",
        "Uptime_sec: 8",
        "Maxconn: 9984",
        "CurrConns: 1",
        "CumConns: 14",
        "CumReq: 5",
        "node: vm",
        "Start_time_sec: 1795316383",
    ] {
        assert!(text.lines().any(|x| x == l), "missing {l}");
    }
    assert!(text.lines().all(|l| l.contains(": ")));
}
