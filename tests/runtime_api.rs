//! The runtime API (`stats socket`) against the real binary.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;

fn served(bind: std::net::SocketAddr, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| get(bind, "/").header("x-served-by").unwrap().to_string())
        .collect()
}

#[test]
fn show_and_set_commands() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let bind = free_addr(ip);
    let dir = std::env::temp_dir().join(format!("fairlead-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let user_sock = dir.join("user.sock");
    let cfg = http_cfg(bind, "", &format!("    server s1 {a1}\n    server s2 {a2}")).replace(
        "global\n",
        &format!(
            "global\n    stats socket {} mode 600 level admin\n    stats socket {} level user\n",
            sock.display(),
            user_sock.display()
        ),
    );
    let p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let info = ask(&sock, "show info");
    assert!(info.contains("Name: Fairlead\n"), "{info}");
    assert!(info.contains(&format!("Pid: {}\n", p.pid())), "{info}");

    let pools = ask(&sock, "show pools");
    assert!(
        pools.contains("buffer") && pools.contains("16384"),
        "{pools}"
    );
    let stat = ask(&sock, "show stat");
    assert!(stat.starts_with("# pxname,svname,qcur,qmax,"), "{stat}");

    let state = ask(&sock, "show servers state bk");
    assert!(
        state.starts_with(
            "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state"
        ),
        "{state}"
    );
    assert!(state.contains(" bk 1 s1 "), "{state}");

    // Maintenance takes a server out of rotation, and back.
    assert_eq!(ask(&sock, "disable server bk/s1").trim(), "");
    assert!(served(bind, 6).iter().all(|s| s == "s2"));
    ask(&sock, "enable server bk/s1");
    assert!(served(bind, 6).iter().any(|s| s == "s1"));
    // Drain, then weights.
    ask(&sock, "set server bk/s2 state drain");
    assert!(served(bind, 6).iter().all(|s| s == "s1"));
    ask(&sock, "set server bk/s2 state ready");
    ask(&sock, "set server bk/s1 weight 3");
    assert_eq!(ask(&sock, "get weight bk/s1").trim(), "3 (initial 1)");
    let picks = served(bind, 40);
    assert_eq!(picks.iter().filter(|s| *s == "s1").count(), 30, "{picks:?}");
    // set maxconn server shows in the stats' slim column.
    ask(&sock, "set maxconn server bk/s2 7");
    let csv = ask(&sock, "show stat");
    let names: Vec<&str> = csv
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let slim = names.iter().position(|n| *n == "slim").unwrap();
    let s2 = csv.lines().find(|l| l.starts_with("bk,s2,")).unwrap();
    assert_eq!(s2.split(',').nth(slim), Some("7"), "{s2}");
    // set server addr moves s2 to another origin.
    let (_t3, a3) = term(ip, "s3");
    ask(
        &sock,
        &format!("set server bk/s2 addr {} port {}", a3.ip(), a3.port()),
    );
    ask(&sock, "disable server bk/s1");
    assert!(served(bind, 4).iter().all(|s| s == "s3"));
    ask(&sock, "enable server bk/s1");
    // Errors and levels.
    assert!(ask(&sock, "disable server bk/nope").contains("No such server."));
    assert!(ask(&user_sock, "disable server bk/s1").contains("Permission denied"));
    assert!(ask(&user_sock, "show info").contains("Name: Fairlead"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sessions_and_errors() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let dir = std::env::temp_dir().join(format!("fairlead-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}")).replace(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    // An idle keep-alive client shows up in `show sess`.
    let mut held = connect(bind);
    held.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut r = std::io::BufReader::new(held.try_clone().unwrap());
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    let local = held.local_addr().unwrap();
    let mut sess = String::new();
    wait_until("session listed", || {
        sess = ask(&sock, "show sess");
        sess.contains(&local.to_string())
    });
    let line = sess
        .lines()
        .find(|l| l.contains(&local.to_string()))
        .unwrap();
    let id = line.split(':').next().unwrap().trim_start_matches("0x");
    // `shutdown session` closes it.
    ask(&sock, &format!("shutdown session 0x{id}"));
    let mut rest = Vec::new();
    held.set_read_timeout(Some(DEADLINE)).unwrap();
    let _ = r.read_to_end(&mut rest);
    assert!(rest.is_empty());
    wait_until("session gone", || {
        !ask(&sock, "show sess").contains(&local.to_string())
    });
    // Task profiling: off by default, counts polls once on.
    assert!(ask(&sock, "set profiling tasks on").trim().is_empty());
    for _ in 0..5 {
        assert_eq!(get(bind, "/").status, 200);
    }
    let prof = ask(&sock, "show profiling");
    assert!(prof.contains("Tasks activity"), "{prof}");
    let row = prof
        .lines()
        .find(|l| l.trim_start().starts_with("http_session"))
        .unwrap_or_else(|| panic!("{prof}"));
    let calls: u64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(calls >= 5, "{row}");
    ask(&sock, "set profiling tasks off");
    // `show errors` captures the last invalid request.
    let mut bad = connect(bind);
    bad.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
        .unwrap();
    let _ = read_all(&mut bad);
    let errors = ask(&sock, "show errors");
    assert!(errors.contains("Total events captured"), "{errors}");
    assert!(errors.contains("Bad Header Line"), "{errors}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `show stat typed` and `show info typed`: HAProxy's typed lines
/// (management guide 9.3), the same values as the CSV, with HAProxy
/// 2.6.12's tags and types for the fields checked here.
#[test]
fn typed_stat_and_info() {
    let ip = test_ip();
    let (_t, a) = term(ip, "s1");
    let bind = free_addr(ip);
    let dir = std::env::temp_dir().join(format!("fairlead-typed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let cfg = http_cfg(bind, "", &format!("    server s1 {a}")).replace(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
    );
    let p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    assert_eq!(get(bind, "/").status, 200);

    // The client has its response a moment before the proxy releases the
    // server's slot: wait for that, so that both outputs see the same.
    let mut typed = String::new();
    wait_until("server slot released", || {
        typed = ask(&sock, "show stat typed");
        typed
            .lines()
            .any(|l| l.starts_with("S.") && l.contains(".scur.") && l.ends_with(":0"))
    });
    let csv = ask(&sock, "show stat");
    let names: Vec<&str> = csv.lines().next().unwrap()[2..].split(',').collect();
    let mut lines = std::collections::HashMap::new();
    for l in typed.lines().filter(|l| !l.is_empty()) {
        // <obj>.<px_id>.<id>.<fpos>.<fname>.<process_num>:<tags>:<type>:<value>
        let (head, rest) = l.split_once(':').unwrap();
        let h: Vec<&str> = head.split('.').collect();
        assert_eq!(h.len(), 6, "{l}");
        assert!(["F", "B", "S"].contains(&h[0]), "{l}");
        assert_eq!(h[5], "1", "{l}");
        let pos: usize = h[3].parse().unwrap();
        assert_eq!(names[pos], h[4], "field position of {l}");
        let (tags, rest) = rest.split_once(':').unwrap();
        assert_eq!(tags.len(), 3, "{l}");
        let (ty, value) = rest.split_once(':').unwrap();
        assert!(["str", "u32", "u64", "s32", "s64"].contains(&ty), "{l}");
        lines.insert(
            (h[0].to_string(), h[2].to_string(), h[4].to_string()),
            format!("{tags}:{ty}:{value}"),
        );
    }
    // Every non-empty CSV value appears, typed, with the same value.
    let mut compared = 0;
    for row in csv.lines().skip(1).filter(|l| !l.is_empty()) {
        let vals: Vec<&str> = row.split(',').collect();
        let obj = match vals[1] {
            "FRONTEND" => "F",
            "BACKEND" => "B",
            _ => "S",
        };
        let sid = if obj == "S" { vals[28] } else { "0" };
        for (i, v) in vals.iter().enumerate() {
            // Ages in seconds may tick between the two commands, and the
            // live gauges move while the test's last connection closes.
            let ticking = [
                "lastchg",
                "lastsess",
                "downtime",
                "scur",
                "qcur",
                "rate",
                "req_rate",
                "conn_rate",
            ];
            if v.is_empty() || v.starts_with('"') || i >= names.len() || ticking.contains(&names[i])
            {
                continue;
            }
            let key = (obj.to_string(), sid.to_string(), names[i].to_string());
            let t = lines.get(&key).unwrap_or_else(|| panic!("{key:?} missing"));
            assert!(t.ends_with(&format!(":{v}")), "{key:?}: {t} vs {v}");
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared}");
    let at = |o: &str, sid: &str, f: &str| lines[&(o.into(), sid.into(), f.into())].clone();
    assert_eq!(at("F", "0", "pxname"), "KNS:str:fe");
    assert_eq!(at("F", "0", "svname"), "KNS:str:FRONTEND");
    assert_eq!(at("F", "0", "req_tot"), "MCP:u64:1");
    assert_eq!(at("B", "0", "svname"), "KNS:str:BACKEND");
    assert_eq!(at("S", "1", "svname"), "KNS:str:s1");
    assert_eq!(at("S", "1", "scur"), "MGP:u32:0");
    assert_eq!(at("S", "1", "stot"), "MCP:u64:1");
    assert_eq!(at("S", "1", "addr"), format!("CGS:str:{a}"));
    assert_eq!(at("S", "1", "mode"), "CGS:str:http");
    // One object's lines are contiguous.
    let objs: Vec<&str> = typed
        .lines()
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split('.').next())
        .collect();
    let changes = objs.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(changes, 2, "F, then B's server and B: {objs:?}");

    let info = ask(&sock, "show info typed");
    assert!(info.starts_with("0.Name.1:POS:str:Fairlead\n"), "{info}");
    assert!(
        info.contains(&format!("\n6.Pid.1:SGP:u32:{}\n", p.pid())),
        "{info}"
    );
    assert!(info.contains("\n3.Nbthread.1:CGS:u32:2\n"), "{info}");
    assert!(info.contains("\n19.CumReq.1:MCP:u32:1\n"), "{info}");
    assert!(info.contains("\n8.Uptime_sec.1:MDP:u32:"), "{info}");
    let positions: Vec<u32> = info
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('.').next().unwrap().parse().unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}
