//! Every `log-format` variable of HAProxy 2.6's table (configuration
//! manual, section 8.2.6, "R var field name") against the real binary,
//! each with its concrete value: the addresses (`%fi %fp %bi %bp %si
//! %sp`) in HTTP/1, HTTP/2 and TCP mode, and what is printed when no
//! server connection was made. Expected values that differ from the
//! obvious were taken from HAProxy 2.6.12 running the same configuration.

mod common;
use common::*;

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

fn syslog(ip: std::net::IpAddr) -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// The message of the next datagram (after `... fairlead[pid]: `).
fn recv(s: &UdpSocket) -> String {
    let mut buf = [0u8; 8192];
    let n = s.recv(&mut buf).expect("a log datagram");
    let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
    line.split_once("]: ")
        .map_or(line.clone(), |(_, m)| m.to_string())
}

/// `a=1;b=2` into a map (values may hold spaces, not `;`).
fn fields(msg: &str) -> HashMap<String, String> {
    msg.split(';')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A log-format that prints `name=%name` for each name, `;`-separated.
fn format_of(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n}=%{n}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Every variable of HAProxy 2.6's table.
const ALL: &[&str] = &[
    "B", "CC", "CS", "H", "HM", "HP", "HPO", "HQ", "HU", "HV", "ID", "ST", "T", "Ta", "Tc", "Td",
    "Tl", "Th", "Ti", "Tq", "TR", "Tr", "Ts", "Tt", "Tu", "Tw", "U", "ac", "b", "bc", "bi", "bp",
    "bq", "ci", "cp", "f", "fc", "fi", "fp", "ft", "lc", "hr", "hrl", "hs", "hsl", "ms", "pid",
    "r", "rc", "rt", "s", "sc", "si", "sp", "sq", "sslc", "sslv", "t", "tr", "trg", "trl", "ts",
    "tsc",
];

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Seconds since the epoch of `dd/Mon/yyyy:HH:MM:SS` (UTC).
fn parse_date(s: &str) -> i64 {
    let (d, rest) = s.split_once('/').unwrap();
    let (mon, rest) = rest.split_once('/').unwrap();
    let p: Vec<i64> = rest.split(':').map(|x| x.parse().unwrap()).collect();
    let m = MONTHS.iter().position(|x| *x == mon).unwrap() as i64 + 1;
    let (y, d) = (p[0], d.parse::<i64>().unwrap());
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    days * 86400 + p[1] * 3600 + p[2] * 60 + p[3]
}

/// An origin that answers every request with a fixed response and
/// remembers the peer address of each connection (the proxy's source).
fn origin(ip: std::net::IpAddr) -> (SocketAddr, Arc<Mutex<Vec<SocketAddr>>>) {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let p = peers.clone();
    let (addr, _) = raw_origin(ip, move |s: TcpStream| {
        p.lock().unwrap().push(s.peer_addr().unwrap());
        let mut r = BufReader::new(s.try_clone().unwrap());
        while read_head(&mut r).is_some() {
            let mut w = &s;
            let resp = "HTTP/1.1 200 OK\r\nX-Res: rv\r\nSet-Cookie: sc=1; Path=/\r\nContent-Length: 2\r\n\r\nok";
            if w.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    });
    (addr, peers)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

fn num(f: &HashMap<String, String>, k: &str) -> i64 {
    f[k].parse()
        .unwrap_or_else(|_| panic!("%{k} is not a number: {f:?}"))
}

#[test]
fn every_variable_has_its_value_over_http1() {
    let ip = test_ip();
    let (srv, peers) = origin(ip);
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 1\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n\
    capture request header X-Req len 10\n    capture response header X-Res len 10\n\
    capture cookie sc len 10\n    unique-id-format fixed-%rt\n\
    log-format \"{}\"\n    default_backend bk\n\
backend bk\n    server s1 {srv}\n",
        format_of(ALL)
    );
    let p = Proxy::start(&cfg, &[bind]);
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let mut s = connect(bind);
    let client = s.local_addr().unwrap();
    let req = "GET /p/a?q=1 HTTP/1.1\r\nHost: x\r\nX-Req: hv\r\nCookie: sc=abc\r\nConnection: close\r\n\r\n";
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let f = fields(&recv(&sock));
    let src = peers.lock().unwrap()[0];
    let expect: &[(&str, String)] = &[
        ("ci", client.ip().to_string()),
        ("cp", client.port().to_string()),
        ("fi", bind.ip().to_string()),
        ("fp", bind.port().to_string()),
        ("bi", src.ip().to_string()),
        ("bp", src.port().to_string()),
        ("si", srv.ip().to_string()),
        ("sp", srv.port().to_string()),
        ("f", "fe".into()),
        ("ft", "fe".into()),
        ("b", "bk".into()),
        ("s", "s1".into()),
        ("ST", "200".into()),
        ("B", resp.len().to_string()),
        ("U", req.len().to_string()),
        ("CC", "sc=abc".into()),
        ("CS", "sc=1".into()),
        ("hr", "{hv}".into()),
        ("hrl", "hv".into()),
        ("hs", "{rv}".into()),
        ("hsl", "rv".into()),
        ("r", "GET /p/a?q=1 HTTP/1.1".into()),
        ("HM", "GET".into()),
        ("HU", "/p/a?q=1".into()),
        ("HP", "/p/a".into()),
        ("HPO", "/p/a".into()),
        ("HQ", "?q=1".into()),
        ("HV", "HTTP/1.1".into()),
        // HAProxy 2.6.12 logs rt=0, lc=0 and ID=fixed-0 for the first
        // request, and 0 for bc and sc once the server is released.
        ("rt", "0".into()),
        ("lc", "0".into()),
        ("ID", "fixed-0".into()),
        ("ac", "1".into()),
        ("fc", "1".into()),
        ("bc", "0".into()),
        ("sc", "0".into()),
        ("rc", "0".into()),
        ("sq", "0".into()),
        ("bq", "0".into()),
        ("ts", "--".into()),
        ("tsc", "----".into()),
        ("sslv", "-".into()),
        ("sslc", "-".into()),
        ("pid", p.pid().to_string()),
        ("H", hostname()),
        ("Th", "0".into()),
    ];
    for (k, v) in expect {
        assert_eq!(f.get(*k), Some(v), "%{k} in {f:?}");
    }
    // Timers: all reached, and HAProxy's sums hold.
    for k in ["Ta", "Tc", "Td", "Ti", "Tq", "TR", "Tr", "Tt", "Tu", "Tw"] {
        let v = num(&f, k);
        assert!((0..10_000).contains(&v), "%{k} = {v}");
    }
    let t = |k| num(&f, k);
    assert_eq!(t("Tq"), t("Th") + t("Ti") + t("TR"));
    assert_eq!(t("Tt"), t("Ta") + t("Th") + t("Ti"));
    assert_eq!(t("Tu"), t("Tt") - t("Ti"));
    assert_eq!(t("Td"), t("Tt") - (t("Tq") + t("Tw") + t("Tc") + t("Tr")));
    // Dates: %Ts is the accept second, %ms its milliseconds; %t/%tr have
    // them with milliseconds, %T/%Tl/%trg/%trl in CLF with the zone.
    let ts = num(&f, "Ts");
    assert!((ts - before.as_secs() as i64).abs() <= 2, "%Ts {ts}");
    let ms = &f["ms"];
    assert_eq!(ms.len(), 3, "{ms}");
    let (t_date, t_ms) = f["t"].split_once('.').unwrap();
    assert_eq!((parse_date(t_date), t_ms), (ts, ms.as_str()));
    for k in ["T", "Tl", "trg", "trl"] {
        let (d, zone) = f[k].split_once(' ').unwrap();
        assert_eq!(zone, "+0000", "%{k}");
        assert!((parse_date(d) - ts).abs() <= 1, "%{k} = {}", f[k]);
    }
    let (tr_date, _) = f["tr"].split_once('.').unwrap();
    assert!((parse_date(tr_date) - ts).abs() <= 1, "%tr");
    // Every variable of the table was printed.
    for k in ALL {
        assert!(f.contains_key(*k), "%{k} missing from {f:?}");
    }
}

#[test]
fn addresses_without_a_server_connection_are_dashes() {
    let ip = test_ip();
    let (sock, log_addr) = syslog(ip);
    let dead = free_addr(ip);
    let bind = free_addr(ip);
    let fmt = format_of(&["fi", "fp", "bi", "bp", "si", "sp", "s", "tsc"]);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n    retries 0\n\
frontend fe\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n    log-format \"{fmt}\"\n\
    http-request deny if {{ path /deny }}\n    default_backend bk\n\
backend bk\n    server s1 {dead}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    // Denied before any server was chosen: HAProxy 2.6.12 prints
    // fi/fp, and '-' for the server side.
    assert_eq!(get(bind, "/deny").status, 403);
    let f = fields(&recv(&sock));
    assert_eq!(f["fi"], bind.ip().to_string());
    assert_eq!(f["fp"], bind.port().to_string());
    for k in ["bi", "bp", "si", "sp"] {
        assert_eq!(f[k], "-", "%{k} in {f:?}");
    }
    assert_eq!((f["s"].as_str(), f["tsc"].as_str()), ("<NOSRV>", "PR--"));
    // A refused connection: the server's address is known.
    assert_eq!(get(bind, "/x").status, 503);
    let f = fields(&recv(&sock));
    assert_eq!(f["tsc"], "SC--");
    assert_eq!(f["si"], dead.ip().to_string());
    assert_eq!(f["sp"], dead.port().to_string());
}

#[test]
fn addresses_of_http2_streams() {
    let ip = test_ip();
    let (srv, peers) = origin(ip);
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let fmt = format_of(&["ci", "cp", "fi", "fp", "bi", "bp", "si", "sp", "HV"]);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind} proto h2\n    log {log_addr} local0\n    option dontlognull\n    log-format \"{fmt}\"\n    default_backend bk\n\
backend bk\n    server s1 {srv}\n"
    );
    let _p = Proxy::start(&cfg, &[bind]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        tokio::time::timeout(DEADLINE, async {
            let tcp = tokio::net::TcpStream::connect(bind).await.unwrap();
            let local = tcp.local_addr().unwrap();
            let (mut c, conn) = h2::client::handshake(tcp).await.unwrap();
            tokio::spawn(async move {
                let _ = conn.await;
            });
            let req = http::Request::get(format!("http://{bind}/h2"))
                .body(())
                .unwrap();
            let (resp, _) = c.send_request(req, true).unwrap();
            let resp = resp.await.unwrap();
            assert_eq!(resp.status(), 200);
            let mut body = resp.into_body();
            while let Some(d) = body.data().await {
                d.unwrap();
            }
            local
        })
        .await
        .expect("HTTP/2 exchange")
    });
    let f = fields(&recv(&sock));
    let src = peers.lock().unwrap()[0];
    assert_eq!(f["ci"], client.ip().to_string());
    assert_eq!(f["cp"], client.port().to_string());
    assert_eq!(f["fi"], bind.ip().to_string());
    assert_eq!(f["fp"], bind.port().to_string());
    assert_eq!(f["bi"], src.ip().to_string());
    assert_eq!(f["bp"], src.port().to_string());
    assert_eq!(f["si"], srv.ip().to_string());
    assert_eq!(f["sp"], srv.port().to_string());
    assert_eq!(f["HV"], "HTTP/2.0");
}

#[test]
fn addresses_and_counters_in_tcp_mode() {
    let ip = test_ip();
    let (srv, peers) = raw_peer_echo(ip);
    let (sock, log_addr) = syslog(ip);
    let bind = free_addr(ip);
    let dead = free_addr(ip);
    let dead_bind = free_addr(ip);
    // Its own log socket: every connection to it is logged (the start-up
    // probe's too, with the same addresses).
    let (sock_dead, log_dead) = syslog(ip);
    let fmt = format_of(&[
        "ci", "cp", "fi", "fp", "bi", "bp", "si", "sp", "rt", "lc", "ts", "B", "U", "s",
    ]);
    let cfg = format!(
        "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n    retries 0\n\
listen tcp\n    bind {bind}\n    log {log_addr} local0\n    option dontlognull\n    log-format \"{fmt}\"\n    server s1 {srv}\n\
listen dead\n    bind {dead_bind}\n    log {log_dead} local0\n    log-format \"{fmt}\"\n    server s1 {dead}\n"
    );
    let _p = Proxy::start(&cfg, &[bind, dead_bind]);
    for round in 0..2 {
        let mut s = connect(bind);
        let client = s.local_addr().unwrap();
        s.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        drop(s);
        let f = fields(&recv(&sock));
        // One of the origin's connections is this one: the start-up probe
        // of the listener made one too, which may reach the origin after
        // this one (so not simply the last).
        let src = *peers
            .lock()
            .unwrap()
            .iter()
            .find(|p| p.port().to_string() == f["bp"])
            .unwrap_or_else(|| panic!("no origin connection from {f:?}"));
        assert_eq!(f["ci"], client.ip().to_string());
        assert_eq!(f["cp"], client.port().to_string());
        assert_eq!(f["fi"], bind.ip().to_string());
        assert_eq!(f["fp"], bind.port().to_string());
        assert_eq!(f["bi"], src.ip().to_string());
        assert_eq!(f["bp"], src.port().to_string());
        assert_eq!(f["si"], srv.ip().to_string());
        assert_eq!(f["sp"], srv.port().to_string());
        // The probe was stream 0 (not logged: dontlognull).
        assert_eq!(f["rt"], (round + 1).to_string(), "{f:?}");
        assert_eq!(f["lc"], (round + 1).to_string(), "{f:?}");
        assert_eq!((f["B"].as_str(), f["U"].as_str()), ("4", "4"));
        assert_eq!(f["s"], "s1");
    }
    // No server reachable (HAProxy: `SC`, the server's address logged).
    let mut s = connect(dead_bind);
    let _ = s.write_all(b"x");
    let _ = read_all(&mut s);
    let f = fields(&recv(&sock_dead));
    assert_eq!(f["ts"], "SC", "{f:?}");
    assert_eq!(f["fi"], dead_bind.ip().to_string());
    assert_eq!(f["si"], dead.ip().to_string());
    assert_eq!(f["sp"], dead.port().to_string());
}

/// A TCP echo origin that remembers each connection's peer.
fn raw_peer_echo(ip: std::net::IpAddr) -> (SocketAddr, Arc<Mutex<Vec<SocketAddr>>>) {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let p = peers.clone();
    let (addr, _) = raw_origin(ip, move |mut s: TcpStream| {
        p.lock().unwrap().push(s.peer_addr().unwrap());
        let mut buf = [0u8; 1024];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 || s.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    });
    (addr, peers)
}

#[test]
fn http_only_variables_are_rejected_in_tcp_mode() {
    let ip = test_ip();
    let bind = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
listen tcp\n    bind {bind}\n    log stdout local0\n    log-format \"%ci %r\"\n    server s1 127.0.0.1:9\n"
    );
    let path = write_cfg(&cfg);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-c")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'r'") && err.contains("HTTP"),
        "expected an HTTP-only variable error: {err}"
    );
}
