//! Run-time DNS against the real binary and a real dnsmasq on loopback:
//! `resolvers` sections, `init-addr`, address changes under traffic,
//! `server-template` from SRV and A records, the hold periods, and the
//! runtime API (`show resolvers`, `set server ... fqdn`).

mod common;
#[path = "../crates/dns/tests/common/dnsmasq.rs"]
mod dnsmasq;

use common::*;
use dnsmasq::{require_dnsmasq, Dnsmasq};
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// An origin named `name` on `ip` and the given port (0: any).
fn origin(ip: IpAddr, port: u16, name: &str) -> (fairlead_term::TermHandle, SocketAddr) {
    let h = fairlead_term::start(
        &[SocketAddr::new(ip, port)],
        fairlead_term::TermOptions {
            threads: 1,
            name: name.to_string(),
        },
    )
    .expect("start origin");
    let a = h.local_addrs()[0];
    (h, a)
}

/// `global` (with a CLI socket), a `resolvers mydns` section on `dns`
/// with `extra` lines, an HTTP frontend on `bind` and backend `bk`.
fn dns_cfg(
    dns: &Dnsmasq,
    sock: &std::path::Path,
    extra: &str,
    bind: SocketAddr,
    servers: &str,
) -> String {
    format!(
        "global\n    nbthread 2\n    stats socket {} level admin\n\
resolvers mydns\n    nameserver dns1 {}\n    timeout resolve 100ms\n    timeout retry 200ms\n    resolve_retries 1\n{extra}\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n{servers}\n",
        sock.display(),
        dns.addr
    )
}

/// Origins "A" and "B" on two loopback addresses and the same port, one
/// server whose name moves from A to B: A's handle, B's handle, A's
/// address, B's IP.
fn origins_a_b() -> (
    fairlead_term::TermHandle,
    fairlead_term::TermHandle,
    SocketAddr,
    IpAddr,
) {
    let (ip_a, ip_b) = (test_ip(), test_ip());
    let (ta, a) = origin(ip_a, 0, "A");
    let (tb, _) = origin(ip_b, a.port(), "B");
    (ta, tb, a, ip_b)
}

fn sock_path(tag: &str) -> std::path::PathBuf {
    admin_sock("dns-it", tag)
}

/// Who served one request (`x-served-by`), or the status when it failed.
fn served_by(bind: SocketAddr) -> Result<String, u16> {
    let r = get(bind, "/");
    match (r.status, r.header("x-served-by")) {
        (200, Some(by)) => Ok(by.to_string()),
        (status, _) => Err(status),
    }
}

/// Polls until a request is served by `name`.
fn wait_served_by(bind: SocketAddr, name: &str, p: &Proxy) {
    let end = std::time::Instant::now() + DEADLINE;
    loop {
        if served_by(bind).as_deref() == Ok(name) {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "never served by {name}:\n{}",
            p.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One client connection sending keep-alive requests.
struct KeepAlive {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl KeepAlive {
    fn open(bind: SocketAddr) -> KeepAlive {
        let s = connect(bind);
        KeepAlive {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
        }
    }

    /// Who served one request, or what went wrong.
    fn get(&mut self) -> Result<String, String> {
        self.w
            .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
            .map_err(|e| e.to_string())?;
        match read_response(&mut self.r, false) {
            Some(resp) if resp.status == 200 => {
                Ok(resp.header("x-served-by").unwrap_or("").to_string())
            }
            Some(resp) => Err(format!("status {}", resp.status)),
            None => Err("connection closed".to_string()),
        }
    }
}

/// Clients sending requests until stopped: one on a keep-alive
/// connection, one with a new connection per request. Each records who
/// served every request, or the failure.
struct Load {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Result<String, String>>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(bind: SocketAddr) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for keep_alive in [true, false] {
            let (stop, seen) = (stop.clone(), seen.clone());
            threads.push(std::thread::spawn(move || {
                let mut conn: Option<KeepAlive> = None;
                while !stop.load(Ordering::Relaxed) {
                    let outcome = if keep_alive {
                        conn.get_or_insert_with(|| KeepAlive::open(bind)).get()
                    } else {
                        served_by(bind).map_err(|s| format!("status {s}"))
                    };
                    seen.lock().unwrap().push(outcome);
                }
            }));
        }
        Load {
            stop,
            seen,
            threads,
        }
    }

    fn count_of(&self, name: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|o| o.as_deref() == Ok(name)).count()
    }

    fn finish(self) -> Vec<Result<String, String>> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        Arc::try_unwrap(self.seen).unwrap().into_inner().unwrap()
    }
}

/// Starts the proxy and waits for its CLI socket too.
fn start(cfg: &str, bind: SocketAddr, sock: &std::path::Path) -> Proxy {
    let p = Proxy::start(cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(sock).is_ok());
    p
}

fn wait_stderr(p: &Proxy, needle: &str) {
    wait_until(&format!("'{needle}' in stderr"), || {
        p.stderr().contains(needle)
    });
}

#[test]
fn a_record_change_moves_traffic_without_failed_requests() {
    let Some(bin) = require_dnsmasq("a_record_change_moves_traffic_without_failed_requests") else {
        return;
    };
    let (_ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} app.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("move");
    let servers = format!(
        "    server s1 app.test:{} resolvers mydns resolve-prefer ipv4 init-addr none",
        a.port()
    );
    let p = start(&dns_cfg(&dns, &sock, "", bind, &servers), bind, &sock);
    // `init-addr none`: in maintenance until DNS answers, then on A
    wait_served_by(bind, "A", &p);
    wait_stderr(
        &p,
        &format!("bk/s1 changed its IP from (none) to {ip_a} by mydns/dns1."),
    );
    wait_stderr(
        &p,
        "Server bk/s1 administratively READY thanks to valid DNS answer.",
    );

    // A keep-alive client leaves idle server connections to A in the
    // pools; after the move none of them carries a request.
    let mut ka = KeepAlive::open(bind);
    for _ in 0..3 {
        assert_eq!(ka.get(), Ok("A".to_string()));
    }
    dns.set_hosts(&format!("{ip_b} app.test\n"));
    wait_stderr(
        &p,
        &format!("bk/s1 changed its IP from {ip_a} to {ip_b} by mydns/dns1."),
    );
    for _ in 0..3 {
        assert_eq!(ka.get(), Ok("B".to_string()), "{}", p.stderr());
    }
    let state = ask(&sock, "show servers state bk");
    assert!(state.contains(&format!(" s1 {ip_b} ")), "{state}");

    // Under load, back to A: no request fails, and once A served, nothing
    // went to B again.
    let load = Load::start(bind);
    wait_until("requests served by B under load", || {
        load.count_of("B") >= 20
    });
    dns.set_hosts(&format!("{ip_a} app.test\n"));
    wait_until("requests moved to A", || load.count_of("A") >= 50);
    let seen = load.finish();
    let failed: Vec<_> = seen.iter().filter(|o| o.is_err()).collect();
    assert!(
        failed.is_empty(),
        "failed requests: {failed:?}\n{}",
        p.stderr()
    );
    // (one request of the other client may have been in flight)
    let first_a = seen.iter().position(|o| o.as_deref() == Ok("A")).unwrap();
    let late_b = seen[first_a..]
        .iter()
        .filter(|o| o.as_deref() == Ok("B"))
        .count();
    assert!(late_b <= 1, "{late_b} requests went to B after the move");
    wait_stderr(
        &p,
        &format!("bk/s1 changed its IP from {ip_b} to {ip_a} by mydns/dns1."),
    );
}

#[test]
fn init_addr_fixed_address_then_dns() {
    let Some(bin) = require_dnsmasq("init_addr_fixed_address_then_dns") else {
        return;
    };
    let (_ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    // the name does not exist yet: the server keeps its init-addr address
    let dns = Dnsmasq::start(&bin, &test_ip().to_string(), "10.9.9.9 other.test\n", &[]);
    let bind = free_addr(ip);
    let sock = sock_path("init");
    let servers = format!(
        "    server s1 later.test:{} resolvers mydns resolve-prefer ipv4 init-addr {ip_a}",
        a.port()
    );
    let p = start(
        &dns_cfg(&dns, &sock, "    hold nx 30s", bind, &servers),
        bind,
        &sock,
    );
    wait_until("NX answers", || {
        ask(&sock, "show resolvers mydns").contains("nx:          ")
            && !ask(&sock, "show resolvers mydns").contains("nx:          0\n")
    });
    for _ in 0..5 {
        assert_eq!(served_by(bind), Ok("A".to_string()));
    }
    assert!(!p.stderr().contains("maintenance"), "{}", p.stderr());
    dns.set_hosts(&format!("{ip_b} later.test\n"));
    wait_served_by(bind, "B", &p);
    wait_stderr(
        &p,
        &format!("bk/s1 changed its IP from {ip_a} to {ip_b} by mydns/dns1."),
    );
}

#[test]
fn server_template_from_srv_records() {
    let Some(bin) = require_dnsmasq("server_template_from_srv_records") else {
        return;
    };
    let (ip_a, ip_b, ip) = (test_ip(), test_ip(), test_ip());
    let (_ta, a) = origin(ip_a, 0, "A");
    let (_tb, b) = origin(ip_b, 0, "B");
    assert_ne!(a.port(), b.port());
    let srv_a = format!("--srv-host=_http._tcp.app.test,a1.test,{},0,512", a.port());
    let srv_b = format!("--srv-host=_http._tcp.app.test,b1.test,{},0,1024", b.port());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} a1.test\n{ip_b} b1.test\n"),
        &[&srv_a, &srv_b],
    );
    let bind = free_addr(ip);
    let sock = sock_path("srv");
    let servers =
        "    server-template web 3 _http._tcp.app.test resolvers mydns resolve-prefer ipv4";
    let p = start(&dns_cfg(&dns, &sock, "", bind, servers), bind, &sock);
    wait_served_by(bind, "A", &p);
    wait_served_by(bind, "B", &p);
    let state = ask(&sock, "show servers state bk");
    let line = |name: &str| {
        state
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(name))
            .unwrap_or_else(|| panic!("no {name} in {state}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // fields: be_id be_name srv_id srv_name srv_addr srv_op_state
    // srv_admin_state srv_uweight ... srv_port (index 18)
    let (w1, w2, w3) = (line("web1"), line("web2"), line("web3"));
    let mut filled = vec![
        (w1[4].clone(), w1[18].clone(), w1[7].clone()),
        (w2[4].clone(), w2[18].clone(), w2[7].clone()),
    ];
    filled.sort();
    let mut want = vec![
        (ip_a.to_string(), a.port().to_string(), "2".to_string()),
        (ip_b.to_string(), b.port().to_string(), "4".to_string()),
    ];
    want.sort();
    assert_eq!(filled, want, "{state}");
    assert_eq!(w1[6], "0", "{state}");
    // the third slot has no record: in maintenance because of DNS (RMAINT)
    assert_eq!(w3[6], "32", "{state}");
    let stat = ask(&sock, "show stat");
    let web3 = stat.lines().find(|l| l.starts_with("bk,web3,")).unwrap();
    assert_eq!(web3.split(',').nth(17), Some("MAINT"), "{stat}");
    wait_stderr(&p, "changed its FQDN from (null) to a1.test");
    wait_stderr(
        &p,
        &format!(
            "changed its port from (none) to {} by DNS SRV record",
            a.port()
        ),
    );
    for _ in 0..20 {
        assert!(served_by(bind).is_ok());
    }
}

#[test]
fn server_template_from_a_records_follows_changes() {
    let Some(bin) = require_dnsmasq("server_template_from_a_records_follows_changes") else {
        return;
    };
    let (_ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} many.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("tpl-a");
    let servers = format!(
        "    server-template app 2 many.test:{} resolvers mydns resolve-prefer ipv4",
        a.port()
    );
    let p = start(&dns_cfg(&dns, &sock, "", bind, &servers), bind, &sock);
    wait_served_by(bind, "A", &p);
    dns.set_hosts(&format!("{ip_a} many.test\n{ip_b} many.test\n"));
    wait_served_by(bind, "B", &p);
    wait_served_by(bind, "A", &p);
    // A leaves: its slot goes to maintenance, B serves everything
    dns.set_hosts(&format!("{ip_b} many.test\n"));
    wait_stderr(&p, "is going DOWN for maintenance (No IP for server ).");
    let load = Load::start(bind);
    wait_until("requests served by B", || load.count_of("B") >= 30);
    let seen = load.finish();
    assert!(seen.iter().all(|o| o.as_deref() == Ok("B")), "{seen:?}");
}

#[test]
fn runtime_api_show_resolvers_and_set_fqdn() {
    let Some(bin) = require_dnsmasq("runtime_api_show_resolvers_and_set_fqdn") else {
        return;
    };
    let (_ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} one.test\n{ip_b} two.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("api");
    let servers = format!(
        "    server s1 one.test:{0} resolvers mydns resolve-prefer ipv4 init-addr none\n    server s2 {ip_a}:{0} disabled",
        a.port()
    );
    let p = start(&dns_cfg(&dns, &sock, "", bind, &servers), bind, &sock);
    wait_served_by(bind, "A", &p);
    let out = ask(&sock, "show resolvers");
    assert!(
        out.starts_with("Resolvers section mydns\n nameserver dns1:\n  sent:"),
        "{out}"
    );
    let valid: u64 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("valid:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(valid >= 1, "{out}");
    assert_eq!(
        ask(&sock, "show resolvers nope"),
        "Can't find that resolvers section\n\n"
    );
    // srv_fqdn (field 17) of `show servers state`
    let fqdn_of = |name: &str| {
        ask(&sock, "show servers state bk")
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(name))
            .and_then(|l| l.split_whitespace().nth(17).map(str::to_string))
    };
    assert_eq!(fqdn_of("s1").as_deref(), Some("one.test"));
    assert_eq!(fqdn_of("s2").as_deref(), Some("-"));
    let out = ask(&sock, "set server bk/s1 fqdn two.test");
    assert_eq!(out, "bk/s1 changed its FQDN from one.test to two.test\n\n");
    wait_served_by(bind, "B", &p);
    wait_stderr(
        &p,
        &format!("bk/s1 changed its IP from {ip_a} to {ip_b} by mydns/dns1."),
    );
    assert_eq!(fqdn_of("s1").as_deref(), Some("two.test"));
    let out = ask(&sock, "set server bk/s2 fqdn two.test");
    assert_eq!(
        out,
        "set server <b>/<s> fqdn failed because no resolution is configured.\n\n"
    );
}

#[test]
fn hold_keeps_the_address_then_maintenance_then_back() {
    let Some(bin) = require_dnsmasq("hold_keeps_the_address_then_maintenance_then_back") else {
        return;
    };
    let (ip_a, ip) = (test_ip(), test_ip());
    let (_ta, a) = origin(ip_a, 0, "A");
    let mut dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} app.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("hold");
    let servers = format!(
        "    server s1 app.test:{} resolvers mydns resolve-prefer ipv4 init-addr none",
        a.port()
    );
    let p = start(
        &dns_cfg(&dns, &sock, "    hold timeout 3s", bind, &servers),
        bind,
        &sock,
    );
    wait_served_by(bind, "A", &p);
    dns.stop();
    let stopped = std::time::Instant::now();
    // within `hold timeout` the server keeps its address
    wait_until("a timed out query", || {
        let out = ask(&sock, "show resolvers mydns");
        !out.contains("timeout:     0\n")
    });
    assert_eq!(served_by(bind), Ok("A".to_string()));
    assert!(stopped.elapsed() < std::time::Duration::from_secs(3));
    assert!(!p.stderr().contains("maintenance"), "{}", p.stderr());
    // then maintenance: no server left
    wait_stderr(
        &p,
        "Server bk/s1 is going DOWN for maintenance (DNS timeout status). 0 active and 0 backup servers left.",
    );
    // (the hold counts from the last valid answer, up to one `timeout
    // resolve` before the stop)
    assert!(stopped.elapsed() >= std::time::Duration::from_millis(2800));
    assert_eq!(served_by(bind), Err(503));
    // DNS answers again: back to service
    dns.restart();
    wait_served_by(bind, "A", &p);
    wait_until("a second READY line", || {
        p.stderr()
            .matches("Server bk/s1 administratively READY thanks to valid DNS answer.")
            .count()
            == 2
    });
}

#[test]
fn health_checks_follow_the_new_address() {
    let Some(bin) = require_dnsmasq("health_checks_follow_the_new_address") else {
        return;
    };
    let (mut ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} app.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("checks");
    let servers = format!(
        "    server s1 app.test:{} resolvers mydns resolve-prefer ipv4 init-addr {ip_a} check inter 100ms fall 2 rise 1",
        a.port()
    );
    let p = start(&dns_cfg(&dns, &sock, "", bind, &servers), bind, &sock);
    wait_served_by(bind, "A", &p);
    dns.set_hosts(&format!("{ip_b} app.test\n"));
    wait_served_by(bind, "B", &p);
    // A goes away: checks go to B, so the server stays up
    ta.stop();
    let stable = std::time::Instant::now() + std::time::Duration::from_millis(800);
    while std::time::Instant::now() < stable {
        assert_eq!(served_by(bind), Ok("B".to_string()), "{}", p.stderr());
    }
    assert!(!p.stderr().contains("is DOWN"), "{}", p.stderr());
}

/// HAProxy 2.6 resolves a server's name again when its health check
/// cannot connect (L4CON, L4TOUT), once the last answer is older than
/// `hold valid`: with `timeout resolve 30s` and `hold valid 1s`, the
/// server moved from A to B is found within about a second of A going
/// away (HAProxy 2.6.12 took 0.7 s here), not after 30 s.
#[test]
fn a_check_that_cannot_connect_resolves_again() {
    let Some(bin) = require_dnsmasq("a_check_that_cannot_connect_resolves_again") else {
        return;
    };
    let (mut ta, _tb, a, ip_b) = origins_a_b();
    let (ip_a, ip) = (a.ip(), test_ip());
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} app.test\n"),
        &[],
    );
    let bind = free_addr(ip);
    let sock = sock_path("l4-trigger");
    let servers = format!(
        "    server s1 app.test:{} resolvers mydns resolve-prefer ipv4 init-addr none check inter 100ms fall 2 rise 1",
        a.port()
    );
    let extra = "    timeout resolve 30s\n    hold valid 1s";
    let p = start(&dns_cfg(&dns, &sock, extra, bind, &servers), bind, &sock);
    wait_served_by(bind, "A", &p);
    dns.set_hosts(&format!("{ip_b} app.test\n"));
    // A goes away: its checks are refused (L4CON), which asks the DNS.
    ta.stop();
    let moved = std::time::Instant::now();
    wait_served_by(bind, "B", &p);
    assert!(
        moved.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        moved.elapsed()
    );
    assert!(
        p.stderr().contains(&format!(
            "bk/s1 changed its IP from {ip_a} to {ip_b} by mydns/dns1."
        )),
        "{}",
        p.stderr()
    );
}

#[test]
fn init_addr_without_a_working_method_stops_the_start() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    server s1 nowhere.invalid:80 init-addr last\n"
    );
    let path = write_cfg(&cfg);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":10: server bk/s1: no method found to resolve address 'nowhere.invalid'."),
        "{err}"
    );
}

#[test]
fn resolve_prefer_picks_the_family() {
    let Some(bin) = require_dnsmasq("resolve_prefer_picks_the_family") else {
        return;
    };
    let v6: IpAddr = "::1".parse().unwrap();
    let (ip_a, ip) = (test_ip(), test_ip());
    // one port free on both addresses
    let (_t6, b) = origin(v6, 0, "B6");
    let Ok((_ta, _)) = std::panic::catch_unwind(|| origin(ip_a, b.port(), "A4")) else {
        eprintln!(
            "SKIP resolve_prefer_picks_the_family: port {} taken on {ip_a}",
            b.port()
        );
        return;
    };
    let dns = Dnsmasq::start(
        &bin,
        &test_ip().to_string(),
        &format!("{ip_a} dual.test\n::1 dual.test\n"),
        &[],
    );
    for (prefer, want) in [("ipv6", "B6"), ("ipv4", "A4")] {
        let bind = free_addr(ip);
        let sock = sock_path(&format!("prefer-{prefer}"));
        let servers = format!(
            "    server s1 dual.test:{} resolvers mydns resolve-prefer {prefer} init-addr none",
            b.port()
        );
        let p = start(&dns_cfg(&dns, &sock, "", bind, &servers), bind, &sock);
        wait_served_by(bind, want, &p);
        for _ in 0..5 {
            assert_eq!(served_by(bind), Ok(want.to_string()));
        }
    }
}
