//! Servers added and removed at run time (`add server`, `del server`)
//! and server-state files across a reload, against the real binary.

mod common;
use common::*;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn sock_dir(tag: &str) -> PathBuf {
    let n = test_ip().to_string();
    let d = std::env::temp_dir().join(format!("fairlead-dyn-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `cfg` with an admin `stats socket` at `sock` in its global section.
fn with_sock(cfg: &str, sock: &Path) -> String {
    cfg.replacen(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
        1,
    )
}

fn start(cfg: &str, bind: &[SocketAddr], sock: &Path) -> Proxy {
    let p = Proxy::start(&with_sock(cfg, sock), bind);
    wait_until("cli socket", || UnixStream::connect(sock).is_ok());
    p
}

fn served_by(bind: SocketAddr) -> String {
    get(bind, "/")
        .header("x-served-by")
        .unwrap_or("")
        .to_string()
}

/// A keep-alive client loop: counts answers per server and failures.
struct Load {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
    failed: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(bind: SocketAddr) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(AtomicUsize::new(0));
        let (st, se, fa) = (stop.clone(), seen.clone(), failed.clone());
        let thread = std::thread::spawn(move || {
            let mut conn: Option<(TcpStream, BufReader<TcpStream>)> = None;
            while !st.load(Ordering::Relaxed) {
                let (w, r) = match conn.as_mut() {
                    Some(c) => c,
                    None => {
                        let s = connect(bind);
                        let r = BufReader::new(s.try_clone().unwrap());
                        conn.insert((s, r))
                    }
                };
                let sent = w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").is_ok();
                match read_response(r, false).filter(|_| sent) {
                    Some(resp) if resp.status == 200 => {
                        let by = resp.header("x-served-by").unwrap_or("").to_string();
                        se.lock().unwrap().push(by);
                        if resp.header("connection") == Some("close") {
                            conn = None;
                        }
                    }
                    _ => {
                        fa.fetch_add(1, Ordering::Relaxed);
                        conn = None;
                    }
                }
            }
        });
        Load {
            stop,
            seen,
            failed,
            thread: Some(thread),
        }
    }

    fn count_of(&self, name: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| *s == name)
            .count()
    }

    fn total(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn finish(mut self) -> (Vec<String>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        (seen, self.failed.load(Ordering::Relaxed))
    }
}

/// The `show servers state` line of server `name`, split in fields.
fn state_line(sock: &Path, be: &str, name: &str) -> Option<Vec<String>> {
    let state = ask(sock, &format!("show servers state {be}"));
    state
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some(name))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
}

#[test]
fn add_server_under_keep_alive_load() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "new");
    let bind = free_addr(ip);
    let dir = sock_dir("add");
    let sock = dir.join("admin.sock");
    let p = start(
        &http_cfg(bind, "", &format!("    server s1 {a1}")),
        &[bind],
        &sock,
    );

    let load = Load::start(bind);
    wait_until("traffic on s1", || load.count_of("s1") >= 20);
    assert_eq!(
        ask(&sock, &format!("add server bk/n {a2} weight 2")).trim(),
        "New server registered."
    );
    // It starts in maintenance (HAProxy's rule): no traffic yet.
    let st = state_line(&sock, "bk", "n").expect("n in show servers state");
    assert_eq!(
        (st[5].as_str(), st[6].as_str(), st[7].as_str()),
        ("0", "1", "2")
    );
    let before = load.total();
    wait_until("more traffic", || load.total() >= before + 50);
    assert_eq!(load.count_of("new"), 0);
    assert_eq!(ask(&sock, "enable server bk/n").trim(), "");
    // Weight 2 against 1: about two thirds of the new requests.
    wait_until("traffic on the added server", || {
        load.count_of("new") >= 100
    });
    let (seen, failed) = load.finish();
    assert_eq!(failed, 0, "failed requests:\n{}", p.stderr());
    let tail: Vec<&String> = seen.iter().rev().take(60).collect();
    let new = tail.iter().filter(|s| s.as_str() == "new").count();
    assert!(
        (30..=50).contains(&new),
        "{new} of the last 60 on n: {tail:?}"
    );
    let st = state_line(&sock, "bk", "n").unwrap();
    assert_eq!((st[5].as_str(), st[6].as_str()), ("2", "0"));
    // Errors as HAProxy words them.
    assert_eq!(
        ask(&sock, &format!("add server bk/n {a2}")).trim(),
        "Already exists a server with the same name in backend."
    );
    assert_eq!(
        ask(&sock, &format!("add server bk/x {a2} cookie c1")).trim(),
        "'cookie' option is not accepted for dynamic server"
    );
    assert_eq!(
        ask(&sock, "add server nope/x 127.0.0.1:1").trim(),
        "No such backend."
    );
    assert_eq!(
        ask(&sock, "add server bk").trim(),
        "Require 'backend/server'."
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn del_server_only_in_maintenance_and_unused() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "new");
    let bind = free_addr(ip);
    let dir = sock_dir("del");
    let sock = dir.join("admin.sock");
    // No pooled connections: the slow request below must not meet a
    // stale one and be replayed (re-balanced) after `disable server`.
    let cfg = http_cfg(
        bind,
        "    http-reuse never\n",
        &format!("    server s1 {a1}"),
    );
    let _p = start(&cfg, &[bind], &sock);
    ask(&sock, &format!("add server bk/n {a2}"));
    ask(&sock, "enable server bk/n");
    ask(&sock, "disable server bk/s1");
    assert_eq!(served_by(bind), "new");
    assert_eq!(
        ask(&sock, "del server bk/n").trim(),
        "Only servers in maintenance mode can be deleted."
    );
    // A slow request holds the server.
    let slow = std::thread::spawn(move || get(bind, "/?t=1500").status);
    wait_until("request in flight on n", || {
        let stat = ask(&sock, "show stat");
        stat.lines()
            .find(|l| l.starts_with("bk,n,"))
            .and_then(|l| l.split(',').nth(4).map(|v| v == "1"))
            .unwrap_or(false)
    });
    ask(&sock, "disable server bk/n");
    assert_eq!(
        ask(&sock, "del server bk/n").trim(),
        "Server still has connections attached to it, cannot remove it."
    );
    assert_eq!(slow.join().unwrap(), 200);
    // The request's hold on the server ends just after its response.
    wait_until("deleted once the request is done", || {
        ask(&sock, "del server bk/n").trim() == "Server deleted."
    });
    assert!(state_line(&sock, "bk", "n").is_none());
    assert_eq!(ask(&sock, "del server bk/n").trim(), "No such server.");
    assert!(!ask(&sock, "show stat").contains("bk,n,"));
    // A server of the configuration can go too, once in maintenance.
    ask(&sock, &format!("add server bk/m {a2}"));
    ask(&sock, "enable server bk/m");
    assert_eq!(ask(&sock, "del server bk/s1").trim(), "Server deleted.");
    assert_eq!(served_by(bind), "new");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_dynamic_algorithm_picks_up_an_added_server() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "old");
    let (_t2, a2) = term(ip, "new");
    let algos = [
        ("rr", "balance roundrobin"),
        ("lc", "balance leastconn"),
        ("first", "balance first"),
        ("rand", "balance random"),
        ("src", "balance source\n    hash-type consistent"),
        ("uri", "balance uri\n    hash-type consistent"),
        ("hdr", "balance hdr(host)\n    hash-type consistent"),
        ("static", "balance static-rr"),
        ("map", "balance source"),
    ];
    let mut cfg = String::from(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n",
    );
    let mut binds = Vec::new();
    for (name, algo) in algos {
        let bind = free_addr(ip);
        binds.push(bind);
        cfg.push_str(&format!(
            "frontend f_{name}\n    bind {bind}\n    default_backend {name}\n\
backend {name}\n    {algo}\n    server old {a1}\n"
        ));
    }
    let dir = sock_dir("algos");
    let sock = dir.join("admin.sock");
    let _p = start(&cfg, &binds, &sock);
    for ((name, _), bind) in algos.iter().zip(&binds) {
        let reply = ask(&sock, &format!("add server {name}/new {a2}"));
        if matches!(*name, "static" | "map") {
            assert_eq!(
                reply.trim(),
                "Backend must use a dynamic load balancing to support dynamic servers.",
                "{name}"
            );
            continue;
        }
        assert_eq!(reply.trim(), "New server registered.", "{name}");
        ask(&sock, &format!("enable server {name}/new"));
        ask(&sock, &format!("disable server {name}/old"));
        for _ in 0..5 {
            assert_eq!(served_by(*bind), "new", "{name}");
        }
        ask(&sock, &format!("enable server {name}/old"));
        // Both serve now: the old one again for some requests.
        let mut seen = std::collections::HashSet::new();
        for i in 0..40 {
            let r = request(
                *bind,
                &format!("GET /p{i} HTTP/1.1\r\nHost: h{i}\r\nConnection: close\r\n\r\n"),
            );
            seen.insert(r.header("x-served-by").unwrap_or("").to_string());
        }
        if *name != "first" && *name != "src" {
            assert_eq!(seen.len(), 2, "{name}: {seen:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stats_and_prometheus_follow_added_servers() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "new");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let cfg = http_cfg(bind, "", &format!("    server s1 {a1}"))
        + &format!(
            "listen stats\n    bind {sb}\n    stats enable\n    stats uri /stats\n\
    http-request use-service prometheus-exporter if {{ path /metrics }}\n"
        );
    let dir = sock_dir("stats");
    let sock = dir.join("admin.sock");
    let _p = start(&cfg, &[bind, sb], &sock);
    ask(&sock, &format!("add server bk/n {a2} maxconn 7"));
    let stat = ask(&sock, "show stat");
    let line = stat.lines().find(|l| l.starts_with("bk,n,")).expect(&stat);
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!((f[6], f[17]), ("7", "MAINT"), "{line}");
    ask(&sock, "enable server bk/n");
    ask(&sock, "disable server bk/s1");
    for _ in 0..4 {
        assert_eq!(served_by(bind), "new");
    }
    let stat = ask(&sock, "show stat");
    let line = stat.lines().find(|l| l.starts_with("bk,n,")).expect(&stat);
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!((f[7], f[17]), ("4", "no check"), "{line}");
    let csv = get(sb, "/stats;csv").body_str();
    assert!(csv.contains("bk,n,"), "{csv}");
    let metrics = get(sb, "/metrics").body_str();
    assert!(
        metrics.contains("haproxy_server_sessions_total{proxy=\"bk\",server=\"n\"} 4"),
        "{metrics}"
    );
    ask(&sock, "disable server bk/n");
    assert_eq!(ask(&sock, "del server bk/n").trim(), "Server deleted.");
    let metrics = get(sb, "/metrics").body_str();
    assert!(!metrics.contains("server=\"n\""), "{metrics}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn added_server_checks_start_with_enable_health() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "new");
    let bind = free_addr(ip);
    let dir = sock_dir("health");
    let sock = dir.join("admin.sock");
    let _p = start(
        &http_cfg(bind, "", &format!("    server s1 {a1}")),
        &[bind],
        &sock,
    );
    ask(
        &sock,
        &format!("add server bk/n {a2} check inter 100 rise 1"),
    );
    // check_state (field 13): configured (2), then configured + enabled (6).
    assert_eq!(state_line(&sock, "bk", "n").unwrap()[13], "2");
    assert_eq!(
        ask(&sock, "enable health bk/s1").trim(),
        "Health check was not configured on this server, cannot enable."
    );
    assert_eq!(ask(&sock, "enable health bk/n").trim(), "");
    assert_eq!(state_line(&sock, "bk", "n").unwrap()[13], "6");
    ask(&sock, "enable server bk/n");
    wait_until("a check ran", || {
        let stat = ask(&sock, "show stat");
        stat.lines()
            .find(|l| l.starts_with("bk,n,"))
            .is_some_and(|l| l.split(',').nth(36) == Some("L4OK"))
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn server_state_file_across_a_reload() {
    state_round_trip(true);
}

/// Without the operator's `show servers state > file`: the master saves
/// the file itself before starting the new worker.
#[test]
fn master_saves_the_server_state_before_a_reload() {
    state_round_trip(false);
}

/// Changes servers, reloads in master-worker mode and checks what the new
/// worker restored; `manual`: the test writes the state file first, as
/// HAProxy's procedure says.
fn state_round_trip(manual: bool) {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let (_t3, a3) = term(ip, "s3");
    let bind = free_addr(ip);
    let dir = sock_dir("state");
    let sock = dir.join("admin.sock");
    let state = dir.join("servers.state");
    // s2 is configured by name, on a port nothing listens to: only the
    // address the state file restores makes it reachable.
    let unused = free_addr("127.0.0.1".parse().unwrap()).port();
    // s4 is checked and DOWN (nothing listens) when the state is saved;
    // its origin starts before the reload: only the restored DOWN state
    // keeps it down after the reload (it needs 2 checks, 10s apart).
    let a4 = free_addr(ip);
    let cfg = http_cfg(
        bind,
        "    load-server-state-from-file global\n",
        &format!(
            "    server s1 {a1}\n    server s2 localhost:{unused}\n    server s3 {a3} weight 2\n    server s4 {a4} check inter 10s fastinter 10s downinter 10s rise 2"
        ),
    )
    .replacen(
        "global\n",
        &format!(
            "global\n    hard-stop-after 2s\n    server-state-base {}\n    server-state-file servers.state\n",
            dir.display()
        ),
        1,
    );
    let p = Proxy::start_with(&with_sock(&cfg, &sock), &[bind], |c| c.arg("-W"));
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    assert!(
        p.stderr().contains("Can't open global server state file"),
        "{}",
        p.stderr()
    );
    let reply = ask(
        &sock,
        &format!("set server bk/s2 addr {} port {}", a2.ip(), a2.port()),
    );
    assert!(reply.contains("changed from"), "{reply}");
    ask(&sock, "set server bk/s1 weight 3");
    ask(&sock, "disable server bk/s3");
    ask(&sock, &format!("add server bk/dyn {a1}"));
    wait_until("s4 down", || {
        state_line(&sock, "bk", "s4").is_some_and(|l| l[5] == "0")
    });
    let _t4 = fairlead_term::start(
        &[a4],
        fairlead_term::TermOptions {
            threads: 1,
            name: "s4".into(),
        },
    )
    .expect("start s4");
    if manual {
        std::fs::write(&state, ask(&sock, "show servers state")).unwrap();
    }
    p.signal("USR2");
    wait_until("reload complete", || p.stderr().contains("reload complete"));
    // The new worker owns the socket now.
    wait_until("new worker answers", || {
        UnixStream::connect(&sock).is_ok() && state_line(&sock, "bk", "dyn").is_none()
    });
    let s1 = state_line(&sock, "bk", "s1").unwrap();
    assert_eq!(
        (s1[7].as_str(), s1[8].as_str()),
        ("3", "1"),
        "weight: {s1:?}"
    );
    let s2 = state_line(&sock, "bk", "s2").unwrap();
    assert_eq!(
        (s2[4].clone(), s2[18].clone()),
        (a2.ip().to_string(), a2.port().to_string())
    );
    let s3 = state_line(&sock, "bk", "s3").unwrap();
    assert_eq!(s3[6], "1", "forced maintenance: {s3:?}");
    assert!(
        p.stderr()
            .contains("Server bk/s3 remains in forced maintenance mode."),
        "{}",
        p.stderr()
    );
    // s4 starts DOWN as saved, although its origin answers now.
    let s4 = state_line(&sock, "bk", "s4").unwrap();
    assert_eq!(s4[5], "0", "operational state: {s4:?}");
    assert!(
        p.stderr().contains(
            "Server bk/s4 is DOWN, changed from server-state after a reload. 2 active and 0 backup servers left."
        ),
        "{}",
        p.stderr()
    );
    // Traffic follows: s3 never, s2 at its restored address.
    let seen: Vec<String> = (0..12).map(|_| served_by(bind)).collect();
    assert!(seen.iter().any(|s| s == "s2"), "{seen:?}");
    assert!(!seen.iter().any(|s| s == "s3"), "{seen:?}");
    assert!(!seen.iter().any(|s| s == "s4"), "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keep_alive_connections_survive_removal_of_another_server() {
    // Membership changes publish a new set: requests in flight on the
    // servers that stay are not disturbed.
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "new");
    let bind = free_addr(ip);
    let dir = sock_dir("churn");
    let sock = dir.join("admin.sock");
    let p = start(
        &http_cfg(bind, "", &format!("    server s1 {a1}")),
        &[bind],
        &sock,
    );
    let load = Load::start(bind);
    for round in 0..10 {
        let name = format!("d{round}");
        ask(&sock, &format!("add server bk/{name} {a2}"));
        ask(&sock, &format!("enable server bk/{name}"));
        let before = load.count_of("new");
        wait_until("the added server serves", || load.count_of("new") > before);
        ask(&sock, &format!("disable server bk/{name}"));
        wait_until("removed", || {
            ask(&sock, &format!("del server bk/{name}")).trim() == "Server deleted."
        });
    }
    let (seen, failed) = load.finish();
    assert_eq!(failed, 0, "{}", p.stderr());
    assert!(seen.len() > 20);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = Duration::from_secs(0);
}

/// `add server ... ssl`: the TLS options of a configuration line (with
/// the global defaults) on a server added at run time.
#[test]
fn added_server_speaks_tls_with_its_options() {
    use common::tls::{p, Pki};
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let tls = free_addr(ip);
    let bind = free_addr(ip);
    let pki = Pki::new("dyn-tls");
    let ca = pki.ca("ca");
    let other = pki.ca("other");
    let opem = pki.server(&ca, "origin", "origin.example");
    let dir = sock_dir("tls");
    let sock = dir.join("admin.sock");
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend tls_origin\n    bind {tls} ssl crt {}\n    default_backend to_term\n\
backend to_term\n    server t {o}\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    retries 0\n",
        p(&opem)
    );
    let _p = start(&cfg, &[bind, tls], &sock);
    assert_eq!(get(bind, "/").status, 503);
    // `verify required` (the default) without a CA is refused, as on a
    // configuration line.
    let reply = ask(&sock, &format!("add server bk/noca {tls} ssl"));
    assert!(reply.contains("no CA file specified"), "{reply}");
    let reply = ask(
        &sock,
        &format!(
            "add server bk/t1 {tls} ssl verify required ca-file {} sni str(origin.example) alpn http/1.1",
            p(&ca.cert)
        ),
    );
    assert!(reply.contains("New server registered."), "{reply}");
    ask(&sock, "enable server bk/t1");
    let r = get(bind, "/");
    assert_eq!(
        (r.status, r.header("x-served-by")),
        (200, Some("o")),
        "{}",
        r.body_str()
    );
    // A CA that did not sign the origin's certificate: the handshake
    // fails, the request gets a 503.
    let reply = ask(
        &sock,
        &format!(
            "add server bk/bad {tls} ssl verify required ca-file {} sni str(origin.example)",
            p(&other.cert)
        ),
    );
    assert!(reply.contains("New server registered."), "{reply}");
    ask(&sock, "disable server bk/t1");
    ask(&sock, "enable server bk/bad");
    assert_eq!(get(bind, "/").status, 503);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `add server` with a host name, as HAProxy 2.6.12 answers it: the name
/// is kept (`srv_fqdn`), never resolved (no address: `srv_addr` `-`), the
/// server starts in maintenance and `enable server` makes it UP; traffic
/// to it fails (503, nothing reaches the address the name would give),
/// its checks fail, and `set server addr` / `fqdn` are refused with
/// HAProxy's words.
#[test]
fn added_server_by_name_keeps_the_name_and_has_no_address() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    // What `localhost` would resolve to: never reached.
    let (local, reached) = raw_origin("127.0.0.1".parse().unwrap(), |_| {});
    let bind = free_addr(ip);
    let dir = sock_dir("byname");
    let sock = dir.join("admin.sock");
    let p = start(
        &http_cfg(bind, "    retries 1\n", &format!("    server s1 {a1}")),
        &[bind],
        &sock,
    );
    let port = local.port();
    assert_eq!(
        ask(&sock, &format!("add server bk/d1 localhost:{port}")).trim(),
        "New server registered."
    );
    let d1 = state_line(&sock, "bk", "d1").unwrap();
    // srv_addr, op_state, admin_state (FMAINT), srv_fqdn, srv_port.
    let fields = |l: &[String]| [4, 5, 6, 17, 18].map(|i| l[i].clone());
    assert_eq!(
        fields(&d1),
        ["-", "0", "1", "localhost", &port.to_string()].map(String::from),
        "{d1:?}"
    );
    ask(&sock, "enable server bk/d1");
    ask(&sock, "disable server bk/s1");
    let d1 = state_line(&sock, "bk", "d1").unwrap();
    assert_eq!(
        fields(&d1),
        ["-", "2", "0", "localhost", &port.to_string()].map(String::from),
        "{d1:?}"
    );
    assert_eq!(get(bind, "/").status, 503, "{}", p.stderr());
    assert_eq!(
        ask(&sock, "set server bk/d1 addr 127.0.0.1 port 80").trim(),
        "Update for the current server address family is only supported through configuration file by 'stats socket command'"
    );
    assert_eq!(
        ask(&sock, "set server bk/d1 fqdn other.example").trim(),
        "set server <b>/<s> fqdn failed because no resolution is configured."
    );
    // Checked: its checks fail, it goes DOWN.
    ask(
        &sock,
        &format!("add server bk/d2 localhost:{port} check inter 100 fall 1"),
    );
    ask(&sock, "enable health bk/d2");
    ask(&sock, "enable server bk/d2");
    wait_until("d2 down", || {
        state_line(&sock, "bk", "d2").is_some_and(|l| l[5] == "0" && l[6] == "0")
    });
    // Without an address the check fails without connecting: SOCKERR, as
    // HAProxy reports it.
    let stat = ask(&sock, "show stat");
    let d2 = stat
        .lines()
        .find(|l| l.starts_with("bk,d2,"))
        .unwrap_or_default();
    assert!(d2.contains(",SOCKERR,"), "{d2}");
    assert_eq!(reached.load(Ordering::SeqCst), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server without checks saved DOWN stays DOWN after a reload, as in
/// HAProxy 2.6.12 (`set server bk/s1 health down`, `show servers state`
/// into the file, restart: `Server bk/s1 is DOWN, changed from
/// server-state after a reload. 1 active and 0 backup servers left. ...`
/// and `show stat` says DOWN). The file is the one HAProxy wrote, with
/// this test's addresses.
#[test]
fn unchecked_server_saved_down_stays_down() {
    let ip = test_ip();
    let (_t1, a1) = term(ip, "s1");
    let (_t2, a2) = term(ip, "s2");
    let bind = free_addr(ip);
    let dir = sock_dir("unchecked-down");
    let sock = dir.join("admin.sock");
    let state = dir.join("servers.state");
    std::fs::write(
        &state,
        format!(
            "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n\
3 bk 1 s1 {} 0 0 1 1 0 1 0 0 0 0 0 0 - {} - 0 0 - - 0\n\
3 bk 2 s2 {} 2 0 1 1 0 1 0 2 0 0 0 0 - {} - 0 0 - - 0\n",
            a1.ip(),
            a1.port(),
            a2.ip(),
            a2.port()
        ),
    )
    .unwrap();
    let cfg = http_cfg(
        bind,
        "    load-server-state-from-file global\n",
        &format!("    server s1 {a1}\n    server s2 {a2}"),
    )
    .replacen(
        "global\n",
        &format!("global\n    server-state-file {}\n", state.display()),
        1,
    );
    let p = start(&cfg, &[bind], &sock);
    assert!(
        p.stderr().contains(
            "Server bk/s1 is DOWN, changed from server-state after a reload. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."
        ),
        "{}",
        p.stderr()
    );
    assert_eq!(state_line(&sock, "bk", "s1").unwrap()[5], "0");
    assert_eq!(state_line(&sock, "bk", "s2").unwrap()[5], "2");
    let stat = ask(&sock, "show stat");
    let status = |srv: &str| {
        stat.lines()
            .find(|l| l.starts_with(&format!("bk,{srv},")))
            .and_then(|l| l.split(',').nth(17).map(str::to_string))
    };
    assert_eq!(status("s1").as_deref(), Some("DOWN"), "{stat}");
    let seen: Vec<String> = (0..8).map(|_| served_by(bind)).collect();
    assert!(seen.iter().all(|s| s == "s2"), "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
