//! Stick tables on the real binary: declarations reach the runtime API
//! (`show table`, `set table`, `clear table`).

mod common;
use common::*;
use std::os::unix::net::UnixStream;

#[test]
fn table_commands_on_the_stats_socket() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let dir = std::env::temp_dir().join(format!("fairlead-stick-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n    stick-table type ip size 1k expire 30s store gpc0,http_req_rate(10s)\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend abuse\n    stick-table type string len 16 size 10 store gpt0\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());

    // HAProxy lists the tables in reverse declaration order.
    let list = ask(&sock, "show table");
    assert!(
        list.starts_with(
            "# table: abuse, type: string, size:10, used:0\n# table: fe, type: ip, size:1024, used:0\n"
        ),
        "{list}"
    );
    ask(&sock, "set table fe key 192.0.2.1 data.gpc0 5");
    ask(&sock, "set table abuse key bad-bot data.gpt0 1");
    let fe = ask(&sock, "show table fe");
    assert!(
        fe.starts_with("# table: fe, type: ip, size:1024, used:1\n"),
        "{fe}"
    );
    assert!(fe.contains(" key=192.0.2.1 use=0 exp="), "{fe}");
    assert!(fe.contains(" gpc0=5 http_req_rate(10000)=0"), "{fe}");
    let filtered = ask(&sock, "show table fe data.gpc0 gt 5");
    assert!(!filtered.contains("key="), "{filtered}");
    let abuse = ask(&sock, "show table abuse key bad-bot");
    assert!(abuse.contains(" key=bad-bot use=0 exp=0 gpt0=1"), "{abuse}");
    ask(&sock, "clear table fe key 192.0.2.1");
    let fe = ask(&sock, "show table fe");
    assert!(
        fe.starts_with("# table: fe, type: ip, size:1024, used:0\n"),
        "{fe}"
    );
    assert!(ask(&sock, "show table nope").contains("No such table"));
}

/// HAProxy's canonical rate limit: the 6th request within 10 s gets 429;
/// `sc-inc-gpc0` and the `sc_*`/`src_*` fetches read the same entry.
#[test]
fn http_req_rate_limit_denies_the_sixth_request() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let dir = std::env::temp_dir().join(format!("fairlead-stick-rl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("admin.sock");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 100k expire 30s store http_req_rate(10s),gpc0\n\
    http-request track-sc0 src\n\
    http-request sc-inc-gpc0(0) if {{ path /bad }}\n\
    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt 5 }}\n\
    http-response set-header X-Rate %[sc0_http_req_rate]\n\
    http-response set-header X-Gpc %[src_get_gpc0]\n\
    default_backend b\n\
backend b\n    server s {origin}\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    // Each request on its own connection, from the same address.
    let mut statuses = Vec::new();
    for i in 0..7 {
        let path = if i == 1 { "/bad" } else { "/" };
        let r = get(bind, path);
        if r.status == 200 {
            assert_eq!(r.header("x-rate"), Some(format!("{}", i + 1).as_str()));
            let gpc = if i >= 1 { "1" } else { "0" };
            assert_eq!(r.header("x-gpc"), Some(gpc));
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429]);
    // The last request releases its slot once its response is sent.
    let mut fe = String::new();
    wait_until("the last request's slot is released", || {
        fe = ask(&sock, "show table fe");
        fe.contains(" key=127.0.0.1 use=0 exp=")
    });
    assert!(fe.contains(" gpc0=1 http_req_rate(10000)=7"), "{fe}");
}
