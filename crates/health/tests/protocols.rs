//! The protocol checks against real servers: MariaDB (`mysql-check`),
//! PostgreSQL (`pgsql-check`), Exim (`smtpchk`), slapd (`ldap-check`),
//! `openssl s_server` (`ssl-hello-chk`, `tcp-check connect ssl alpn`) and
//! Dante (`check-via-socks4`); SPOP has no Debian server, so a minimal
//! agent written here answers. Each test checks a server seen up when
//! healthy, down when it answers wrongly, and down once stopped, with
//! HAProxy 2.6's statuses and descriptions.
//!
//! Loopback addresses 127.0.0.81 to 127.0.0.89 are this file's.

mod servers;

use fairlead_config::{HealthCheck, MysqlUser, TcpCheckRule, TcpConnect};
use fairlead_health::{start, CheckTarget, CheckerHandle, HealthEvent, ServerHealth};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// A checker on one target, collecting its events (`option
/// log-health-checks`: one per check whose result changed).
struct Checker {
    _handle: CheckerHandle,
    health: Arc<ServerHealth>,
    events: Arc<Mutex<Vec<HealthEvent>>>,
}

fn target(addr: SocketAddr, check: HealthCheck) -> CheckTarget {
    let mut t = CheckTarget::new("bk", "s1", addr, Arc::new(ServerHealth::new(false)));
    t.check = Some(check);
    t.inter = 100 * MS;
    t.fastinter = 100 * MS;
    t.downinter = 100 * MS;
    t.rise = 1;
    t.fall = 1;
    t.check_timeout = Some(Duration::from_secs(2));
    t.connect_timeout = Some(Duration::from_secs(1));
    t.inter = 100 * MS;
    t.log_checks = true;
    t
}

fn run(t: CheckTarget) -> Checker {
    let events: Arc<Mutex<Vec<HealthEvent>>> = Arc::default();
    let e = events.clone();
    let health = t.health.clone();
    let handle = start(vec![t], 0, Arc::new(move |ev| e.lock().unwrap().push(ev))).unwrap();
    Checker {
        _handle: handle,
        health,
        events,
    }
}

impl Checker {
    /// Waits (at most 15 s) for a check result with the given up state and
    /// status name; returns it.
    fn wait(&self, up: bool, status: &str) -> HealthEvent {
        let end = Instant::now() + Duration::from_secs(15);
        loop {
            {
                let evs = self.events.lock().unwrap();
                if let Some(ev) = evs
                    .iter()
                    .rev()
                    .find(|e| e.report.is_some() && e.status.name() == status)
                {
                    if self.health.is_up() == up {
                        return ev.clone();
                    }
                }
                if Instant::now() >= end {
                    panic!(
                        "no {status} with up={up} in time; now {}; events: {evs:#?}",
                        self.health.status_text()
                    );
                }
            }
            thread::sleep(10 * MS);
        }
    }
}

/// MariaDB accepts HAProxy's login packets (post-4.1 and pre-4.1) and,
/// thanks to `COM_QUIT` and the clean close, counts no aborted
/// connection; an unknown user is refused (`L7STS` with MariaDB's error
/// code); without a user the handshake alone passes, at the price of an
/// aborted connect per check (which is why HAProxy's documentation asks
/// for a user); a stopped server is `L4CON`.
#[test]
fn mysql_check_against_mariadb() {
    let mut db = servers::mariadb("127.0.0.81");
    let user = |name: &str, post41| {
        HealthCheck::Mysql(Some(MysqlUser {
            name: name.into(),
            post41,
        }))
    };
    // (Aborted_clients, Aborted_connects); the start-up poll's bare
    // connection already counts as one aborted connect.
    let aborted = || {
        let out = servers::mariadb_query(&db, "SHOW GLOBAL STATUS LIKE 'Aborted_c%'");
        let get = |name: &str| -> u64 {
            out.lines()
                .find_map(|l| {
                    l.strip_prefix(name)?
                        .strip_prefix('\t')?
                        .trim()
                        .parse()
                        .ok()
                })
                .unwrap_or_else(|| panic!("{name} in {out}"))
        };
        (get("Aborted_clients"), get("Aborted_connects"))
    };
    // The check user's connections (our own root queries do not count).
    let connections = || -> u64 {
        let sql = "SELECT TOTAL_CONNECTIONS FROM information_schema.USER_STATISTICS \
                   WHERE USER = 'haproxy'";
        servers::mariadb_query(&db, sql).trim().parse().unwrap_or(0)
    };
    let logged = || db.log().matches("Aborted connection").count();

    for post41 in [true, false] {
        let c = run(target(db.addr, user("haproxy", post41)));
        let ev = c.wait(true, "L7OK");
        // As HAProxy 2.6.12: code 0 and the server's version.
        assert_eq!(ev.code, Some(0));
        let version = ev.info.unwrap();
        assert!(version.contains("MariaDB"), "{version}");
        // Five more checks (MariaDB counts their connections), measured
        // while the checker runs: stopping it may cut a check short.
        let (before, logged_before, conns) = (aborted(), logged(), connections());
        let end = Instant::now() + Duration::from_secs(10);
        while connections() < conns + 5 {
            assert!(Instant::now() < end, "checks stopped?");
            thread::sleep(20 * MS);
        }
        assert_eq!(
            aborted(),
            before,
            "HAProxy's login + QUIT must not abort connections:\n{}",
            db.log()
        );
        assert_eq!(logged(), logged_before, "{}", db.log());
        assert!(c.health.is_up(), "{}", c.health.status_text());
    }
    let after = aborted();

    let c = run(target(db.addr, user("nosuch", true)));
    let ev = c.wait(false, "L7STS");
    // ER_ACCESS_DENIED_NO_PASSWORD_ERROR, as MariaDB 10.11 answers.
    assert_eq!(ev.code, Some(1698));
    let info = ev.info.unwrap();
    assert!(
        info.starts_with("#28000Access denied for user 'nosuch'"),
        "{info}"
    );
    drop(c);

    let c = run(target(db.addr, HealthCheck::Mysql(None)));
    c.wait(true, "L7OK");
    drop(c);
    let no_user = aborted();
    assert!(no_user.1 > after.1 + 1, "{no_user:?} after {after:?}");

    let c = run(target(db.addr, user("haproxy", true)));
    c.wait(true, "L7OK");
    db.stop();
    let ev = c.wait(false, "L4CON");
    assert_eq!(ev.info.as_deref(), Some("Connection refused"));
}

/// PostgreSQL: AuthenticationOk (trust), a clear-text password request
/// and a SCRAM request pass (HAProxy 2.6.12 says "PostgreSQL server is
/// ok" for all three); a rejected user gets an ErrorResponse (`L7RSP`
/// with its severity, "FATAL"); a reply that is no authentication message
/// is `L7STS` "PostgreSQL unknown error"; stopped is `L4CON`.
#[test]
fn pgsql_check_against_postgresql() {
    let mut pg = servers::postgres("127.0.0.82");
    let check = |u: &str| HealthCheck::Pgsql { user: u.into() };

    let c = run(target(pg.addr, check("postgres")));
    let ev = c.wait(true, "L7OK");
    assert_eq!(ev.code, Some(0));
    assert_eq!(ev.info.as_deref(), Some("PostgreSQL server is ok"));
    drop(c);
    let c = run(target(pg.addr, check("pwuser")));
    c.wait(true, "L7OK");
    drop(c);
    let c = run(target(pg.addr, check("scramuser")));
    let ev = c.wait(true, "L7OK");
    assert_eq!(ev.info.as_deref(), Some("PostgreSQL server is ok"));
    drop(c);
    // ParameterStatus first: not an authentication reply.
    let odd = Fake::start("127.0.0.82:0", |mut s| {
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        let _ = s.write_all(b"S\0\0\0\x08ab\0\0");
        thread::sleep(200 * MS);
    });
    let c = run(target(odd.addr, check("postgres")));
    let ev = c.wait(false, "L7STS");
    assert_eq!(ev.info.as_deref(), Some("PostgreSQL unknown error"));
    drop(c);
    odd.close();
    let c = run(target(pg.addr, check("intruder")));
    let ev = c.wait(false, "L7RSP");
    assert_eq!(ev.info.as_deref(), Some("FATAL"), "{}", pg.log());
    drop(c);

    let c = run(target(pg.addr, check("postgres")));
    c.wait(true, "L7OK");
    pg.stop();
    c.wait(false, "L4CON");
}

/// Exim: the greeting, `HELO localhost` (or the configured EHLO, whose
/// multi-line reply must be complete) and QUIT get 2xx replies: `L7OK`
/// with QUIT's reply code and text (221, as HAProxy 2.6.12); a refused
/// HELO (550) is waited on until the check times out (`L7TOUT`, as
/// HAProxy 2.6.12 on the same Exim); stopped is `L4CON`.
#[test]
fn smtpchk_against_exim() {
    let mut mta = servers::exim("127.0.0.83");
    let check = |c: &str| HealthCheck::Smtp { command: c.into() };

    let c = run(target(mta.addr, check("HELO localhost")));
    let ev = c.wait(true, "L7OK");
    assert_eq!(ev.code, Some(221));
    assert_eq!(ev.info.as_deref(), Some("test.local closing connection"));
    drop(c);
    let c = run(target(mta.addr, check("EHLO mail.example")));
    let ev = c.wait(true, "L7OK");
    assert_eq!(ev.code, Some(221));
    drop(c);
    let mainlog = std::fs::read_to_string(mta.dir.join("log/mainlog")).unwrap_or_default();
    assert!(!mainlog.contains("unexpected disconnection"), "{mainlog}");
    let mut t = target(mta.addr, check("HELO bad.example"));
    t.check_timeout = Some(300 * MS);
    let c = run(t);
    c.wait(false, "L7TOUT");
    drop(c);
    // A server that closes after refusing: the refusal is conclusive.
    let strict = Fake::start("127.0.0.83:0", |mut s| {
        let _ = s.write_all(b"220 strict ESMTP\r\n");
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        let _ = s.write_all(b"550 go away\r\n");
    });
    let c = run(target(strict.addr, check("HELO localhost")));
    let ev = c.wait(false, "L7STS");
    assert_eq!((ev.code, ev.info.as_deref()), (Some(550), Some("go away")));
    drop(c);
    strict.close();

    let c = run(target(mta.addr, check("HELO localhost")));
    c.wait(true, "L7OK");
    mta.stop();
    c.wait(false, "L4CON");
}

/// slapd: an anonymous bind succeeds (`L7OK`); with `disallow bind_anon`
/// the bind response carries resultCode 48 (`L7STS`, code 48); stopped
/// is `L4CON`; a server that does not speak LDAP is "Not LDAPv3
/// protocol".
#[test]
fn ldap_check_against_slapd() {
    let mut open = servers::slapd("127.0.0.84", false);
    let closed = servers::slapd("127.0.0.84", true);

    let c = run(target(open.addr, HealthCheck::Ldap));
    let ev = c.wait(true, "L7OK");
    assert_eq!((ev.code, ev.info.as_deref()), (Some(0), Some("Success")));
    drop(c);
    let c = run(target(closed.addr, HealthCheck::Ldap));
    let ev = c.wait(false, "L7STS");
    assert_eq!(ev.code, Some(48));
    assert_eq!(
        ev.info.as_deref(),
        Some("See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9")
    );
    drop(c);
    // An SMTP-like banner is not LDAP.
    let fake = Fake::start("127.0.0.84:0", |mut s| {
        let _ = s.write_all(b"220 not ldap at all\r\n");
        thread::sleep(200 * MS);
    });
    let c = run(target(fake.addr, HealthCheck::Ldap));
    let ev = c.wait(false, "L7RSP");
    assert_eq!(ev.info.as_deref(), Some("Not LDAPv3 protocol"));
    drop(c);
    fake.close();

    let c = run(target(open.addr, HealthCheck::Ldap));
    c.wait(true, "L7OK");
    open.stop();
    c.wait(false, "L4CON");
}

/// `openssl s_server` answers HAProxy's SSLv3 hello with a handshake or
/// alert record (`L6OK`); an HTTP server does not (`L6RSP`); stopped is
/// `L4CON`. `tcp-check connect ssl alpn` completes a TLS handshake with
/// the ALPN offered (`L6OK`).
#[test]
fn ssl_hello_and_connect_ssl_against_openssl() {
    let mut tls = servers::tls_server("127.0.0.85");
    let c = run(target(tls.addr, HealthCheck::SslHello));
    c.wait(true, "L6OK");
    drop(c);

    let rules = vec![TcpCheckRule::Connect(TcpConnect {
        ssl: true,
        sni: Some("check.test".into()),
        alpn: Some(vec!["h2".into()]),
        ..TcpConnect::default()
    })];
    let c = run(target(tls.addr, HealthCheck::TcpCheck(rules)));
    c.wait(true, "L6OK");
    drop(c);

    let http = Fake::start("127.0.0.85:0", |mut s| {
        let mut b = [0u8; 512];
        let _ = s.read(&mut b);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let c = run(target(http.addr, HealthCheck::SslHello));
    c.wait(false, "L6RSP");
    drop(c);
    http.close();

    let c = run(target(tls.addr, HealthCheck::SslHello));
    c.wait(true, "L6OK");
    tls.stop();
    c.wait(false, "L4CON");
}

/// Checks through Dante (SOCKS4): `check-via-socks4` reaches the server
/// through the proxy (the server sees the proxy's connection); a
/// destination the proxy refuses is `L4CON` "SOCKS4 Proxy deny the
/// request"; the proxy stopped is `L4CON` "Connection refused".
#[test]
fn check_via_socks4_through_dante() {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let p = peers.clone();
    let server = Fake::start("127.0.0.86:0", move |s| {
        p.lock().unwrap().push(s.peer_addr().unwrap());
    });
    let blocked = servers::free_port("127.0.0.86");
    let mut proxy = servers::dante("127.0.0.87", blocked);

    let mut t = target(server.addr, HealthCheck::Tcp);
    t.socks4 = Some(proxy.addr);
    t.via_socks4 = true;
    let c = run(t);
    c.wait(true, "L4OK");
    assert!(
        peers
            .lock()
            .unwrap()
            .iter()
            .all(|a| a.ip().to_string() == "127.0.0.87"),
        "connections came from Dante's external address: {:?}",
        peers.lock().unwrap()
    );
    drop(c);

    let mut t = target(blocked, HealthCheck::Tcp);
    t.socks4 = Some(proxy.addr);
    t.via_socks4 = true;
    let c = run(t);
    let ev = c.wait(false, "L4CON");
    assert_eq!(ev.info.as_deref(), Some("SOCKS4 Proxy deny the request"));
    drop(c);

    // `tcp-check connect via-socks4` uses the proxy without
    // check-via-socks4.
    let mut t = target(
        server.addr,
        HealthCheck::TcpCheck(vec![TcpCheckRule::Connect(TcpConnect {
            via_socks4: true,
            ..TcpConnect::default()
        })]),
    );
    t.socks4 = Some(proxy.addr);
    let c = run(t);
    c.wait(true, "L4OK");
    proxy.stop();
    let ev = c.wait(false, "L4CON");
    assert_eq!(ev.info.as_deref(), Some("Connection refused"));
    server.close();
}

/// `option spop-check` against a minimal SPOP agent written here (Debian
/// packages none): it checks HAProxy's HAPROXY-HELLO (version 2.0,
/// `healthcheck` set) and answers an AGENT-HELLO: `L7OK`; an agent that
/// only speaks SPOP 1.0 is `L7RSP` "unsupported version"; an
/// AGENT-DISCONNECT gives its status's reason; stopped is `L4CON`.
#[test]
fn spop_check_against_an_agent() {
    let agent = |version: &'static str, disconnect: bool| {
        move |mut s: TcpStream| {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return;
            }
            let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
            if s.read_exact(&mut frame).is_err() {
                return;
            }
            // HAPROXY-HELLO, FIN, no ids, and the healthcheck item.
            let ok = frame.starts_with(&[1, 0, 0, 0, 1, 0, 0])
                && frame.windows(3).any(|w| w == b"2.0")
                && frame.ends_with(b"\x0bhealthcheck\x11");
            let mut reply = Vec::new();
            if disconnect || !ok {
                reply.extend_from_slice(&[102, 0, 0, 0, 1, 0, 0]);
                reply.push(11);
                reply.extend_from_slice(b"status-code");
                reply.extend_from_slice(&[3, 2]);
            } else {
                reply.extend_from_slice(&[101, 0, 0, 0, 1, 0, 0]);
                reply.push(7);
                reply.extend_from_slice(b"version");
                reply.push(8);
                reply.push(version.len() as u8);
                reply.extend_from_slice(version.as_bytes());
                reply.push(14);
                reply.extend_from_slice(b"max-frame-size");
                reply.extend_from_slice(&[3, 0xfc, 0xf0, 0x06]);
                reply.push(12);
                reply.extend_from_slice(b"capabilities");
                reply.extend_from_slice(&[8, 0]);
            }
            let mut out = (reply.len() as u32).to_be_bytes().to_vec();
            out.extend_from_slice(&reply);
            let _ = s.write_all(&out);
            let _ = s.read(&mut [0u8; 16]);
        }
    };
    let good = Fake::start("127.0.0.88:0", agent("2.0", false));
    let c = run(target(good.addr, HealthCheck::Spop));
    let ev = c.wait(true, "L7OK");
    assert_eq!(ev.info.as_deref(), Some("SPOA server is ok"));
    drop(c);
    let old = Fake::start("127.0.0.88:0", agent("1.0", false));
    let c = run(target(old.addr, HealthCheck::Spop));
    let ev = c.wait(false, "L7RSP");
    assert_eq!(ev.info.as_deref(), Some("unsupported version"));
    drop(c);
    old.close();
    let bye = Fake::start("127.0.0.88:0", agent("2.0", true));
    let c = run(target(bye.addr, HealthCheck::Spop));
    let ev = c.wait(false, "L7RSP");
    assert_eq!(ev.info.as_deref(), Some("a timeout occurred"));
    drop(c);
    bye.close();

    let c = run(target(good.addr, HealthCheck::Spop));
    c.wait(true, "L7OK");
    good.close();
    c.wait(false, "L4CON");
}

/// A fake server: accepts until closed, each connection on a thread.
struct Fake {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    done: Option<thread::JoinHandle<()>>,
}

impl Fake {
    fn start<H>(addr: &str, handler: H) -> Fake
    where
        H: Fn(TcpStream) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handler = Arc::new(handler);
        let s = stop.clone();
        let done = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, _)) => {
                        c.set_nonblocking(false).unwrap();
                        let h = handler.clone();
                        thread::spawn(move || h(c));
                    }
                    Err(_) => thread::sleep(MS),
                }
            }
        });
        Fake {
            addr,
            stop,
            done: Some(done),
        }
    }

    fn close(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.done.take() {
            d.join().unwrap();
        }
    }
}
