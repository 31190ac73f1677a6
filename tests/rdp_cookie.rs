//! RDP cookies end to end: `balance rdp-cookie`, `persist rdp-cookie`,
//! `req.rdp_cookie` and the `RDP_COOKIE` ACL, with HAProxy 2.6 as the
//! oracle when it is installed: both proxies run the same configuration
//! in front of the same servers, and each connection must reach the same
//! server through both.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr};

/// A TPKT + X.224 Connection Request carrying `token` (such as
/// `Cookie: mstshash=alice\r\n`) and an RDP negotiation request, as an
/// RDP client sends it first.
fn connection_request(token: &str) -> Vec<u8> {
    let neg = [1u8, 0, 8, 0, 3, 0, 0, 0];
    let len = 11 + token.len() + neg.len();
    let mut v = vec![3, 0];
    v.extend_from_slice(&(len as u16).to_be_bytes());
    // X.224 length indicator, CR code, DST-REF, SRC-REF, class.
    v.extend_from_slice(&[(len - 5) as u8, 0xe0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(token.as_bytes());
    v.extend_from_slice(&neg);
    v
}

/// The `msts` value a terminal server writes for `addr`: the address's
/// bytes and the port's network-order bytes read as little-endian
/// integers, in decimal.
fn msts(addr: SocketAddr) -> String {
    let SocketAddr::V4(a) = addr else {
        panic!("IPv4 only")
    };
    let o = a.ip().octets();
    let ip = o[0] as u64 | (o[1] as u64) << 8 | (o[2] as u64) << 16 | (o[3] as u64) << 24;
    let p = a.port().to_be_bytes();
    let port = p[0] as u32 | (p[1] as u32) << 8;
    format!("{ip}.{port}.0000")
}

/// A server that reads until EOF, then answers its name and closes.
fn named_server(ip: IpAddr, name: &'static str) -> SocketAddr {
    raw_origin(ip, move |mut s| {
        let mut buf = [0u8; 4096];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        let _ = s.write_all(name.as_bytes());
    })
    .0
}

/// Sends `payload`, half-closes, and returns what came back ("" when the
/// proxy closed the connection without a server).
fn exchange(addr: SocketAddr, payload: &[u8]) -> String {
    let mut s = connect(addr);
    s.write_all(payload).unwrap();
    // A rejected connection may already be reset by the proxy here.
    let _ = s.shutdown(Shutdown::Write);
    read_all(&mut s)
}

struct Farm {
    servers: Vec<(&'static str, SocketAddr)>,
}

impl Farm {
    fn new(ip: IpAddr) -> Farm {
        let names = ["s1", "s2", "s3", "s4", "s5"];
        Farm {
            servers: names.iter().map(|&n| (n, named_server(ip, n))).collect(),
        }
    }

    fn addr(&self, name: &str) -> SocketAddr {
        self.servers.iter().find(|s| s.0 == name).unwrap().1
    }

    fn cfg(&self, bind: SocketAddr, extra: &str) -> String {
        let servers: String = self
            .servers
            .iter()
            .map(|(n, a)| format!("    server {n} {a}\n"))
            .collect();
        format!(
            "defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n\
listen rdp\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content accept if RDP_COOKIE\n{extra}{servers}"
        )
    }
}

/// The two proxies (HAProxy only when installed) with the same config.
struct Pair {
    fairlead: SocketAddr,
    haproxy: Option<SocketAddr>,
    _procs: (Proxy, Option<Haproxy>),
}

impl Pair {
    fn start(ip: IpAddr, farm: &Farm, extra: &str) -> Pair {
        let fl = free_addr(ip);
        let p = Proxy::start(&farm.cfg(fl, extra), &[fl]);
        let (ha, h) = match haproxy_bin() {
            Some(bin) => {
                let ha = free_addr(ip);
                let h = Haproxy::start(&bin, &farm.cfg(ha, extra), &[], ha);
                (Some(ha), Some(h))
            }
            None => {
                eprintln!("haproxy not installed; Fairlead checked alone");
                (None, None)
            }
        };
        Pair {
            fairlead: fl,
            haproxy: ha,
            _procs: (p, h),
        }
    }

    /// The server `payload` reaches through Fairlead, checked to be the
    /// same through HAProxy.
    fn reach(&self, payload: &[u8], what: &str) -> String {
        let got = exchange(self.fairlead, payload);
        if let Some(ha) = self.haproxy {
            assert_eq!(got, exchange(ha, payload), "Fairlead vs HAProxy: {what}");
        }
        got
    }
}

#[test]
fn balance_rdp_cookie_hashes_the_user_as_haproxy() {
    let ip = test_ip();
    let farm = Farm::new(ip);
    let pair = Pair::start(ip, &farm, "    balance rdp-cookie\n");
    let mut seen = std::collections::BTreeSet::new();
    for user in [
        "alice", "bob", "carol", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy",
        "mallory", "oscar", "peggy", "trent", "victor", "walter",
    ] {
        let cr = connection_request(&format!("Cookie: mstshash={user}\r\n"));
        let first = pair.reach(&cr, user);
        assert!(first.starts_with('s'), "{user}: {first:?}");
        // The same user always lands on the same server.
        assert_eq!(pair.reach(&cr, user), first, "{user}");
        // The cookie name is matched in any case.
        let upper = connection_request(&format!("Cookie: MSTSHASH={user}\r\n"));
        assert_eq!(pair.reach(&upper, user), first, "{user} (MSTSHASH)");
        seen.insert(first);
    }
    assert!(seen.len() >= 3, "the users spread: {seen:?}");
}

#[test]
fn balance_rdp_cookie_named_cookie_and_round_robin_without_it() {
    let ip = test_ip();
    let farm = Farm::new(ip);
    let pair = Pair::start(ip, &farm, "    balance rdp-cookie(user)\n");
    for u in ["x1", "x2", "x3", "x4", "x5", "x6"] {
        let cr = connection_request(&format!("Cookie: user={u}\r\n"));
        let s = pair.reach(&cr, u);
        assert_eq!(pair.reach(&cr, u), s);
    }
    // Another cookie name: round robin over the five servers, in the same
    // order in both proxies (each has its own rotation, started alike).
    let cr = connection_request("Cookie: mstshash=alice\r\n");
    let got: std::collections::BTreeSet<String> = (0..5)
        .map(|i| pair.reach(&cr, &format!("rr {i}")))
        .collect();
    assert_eq!(got.len(), 5, "round robin: {got:?}");
}

#[test]
fn persist_rdp_cookie_goes_to_the_encoded_server() {
    let ip = test_ip();
    let farm = Farm::new(ip);
    let pair = Pair::start(
        ip,
        &farm,
        "    persist rdp-cookie\n    balance rdp-cookie\n",
    );
    for target in ["s4", "s2", "s5"] {
        let cookie = msts(farm.addr(target));
        let cr = connection_request(&format!("Cookie: msts={cookie}\r\n"));
        for _ in 0..3 {
            assert_eq!(pair.reach(&cr, target), target);
        }
    }
    // An address no server has, or a malformed value: balanced instead
    // (round robin, as no mstshash cookie is there).
    let unknown = msts(free_addr(ip));
    for v in [unknown.as_str(), "12345", "1.2"] {
        let cr = connection_request(&format!("Cookie: msts={v}\r\n"));
        let got: std::collections::BTreeSet<String> = (0..5)
            .map(|i| pair.reach(&cr, &format!("{v} {i}")))
            .collect();
        assert_eq!(got.len(), 5, "{v}: {got:?}");
    }
}

#[test]
fn persist_rdp_cookie_skips_a_down_server_unless_option_persist() {
    let ip = test_ip();
    let mut farm = Farm::new(ip);
    // A server nobody listens on, marked down by its health check.
    let dead = free_addr(ip);
    farm.servers.push(("dead", dead));
    let cookie = msts(dead);
    let cr = connection_request(&format!("Cookie: msts={cookie}\r\n"));
    for (extra, down_reached) in [("", false), ("    option persist\n", true)] {
        let cfg = format!(
            "{extra}    persist rdp-cookie\n    balance rdp-cookie\n    retries 0\n    default-server check inter 100ms fall 1 rise 1\n"
        );
        let pair = Pair::start(ip, &farm, &cfg);
        // Wait for the check to mark it down: then round robin (no
        // mstshash cookie) never answers empty six times in a row.
        let plain = connection_request("Cookie: other=z\r\n");
        wait_until("the dead server is down", || {
            (0..6).all(|_| !exchange(pair.fairlead, &plain).is_empty())
        });
        if let Some(ha) = pair.haproxy {
            wait_until("HAProxy marks it down", || {
                (0..6).all(|_| !exchange(ha, &plain).is_empty())
            });
        }
        // Round robin positions differ between the two after the waits:
        // compare whether the down server was used, not which live one.
        for (who, addr) in
            std::iter::once(("Fairlead", pair.fairlead)).chain(pair.haproxy.map(|a| ("HAProxy", a)))
        {
            let got = exchange(addr, &cr);
            if down_reached {
                // Sent to the down server anyway: the connection fails.
                assert_eq!(got, "", "{who} {extra}");
            } else {
                assert!(got.starts_with('s'), "{who} {extra}: {got:?}");
            }
        }
    }
}

#[test]
fn rdp_cookie_fetch_and_acl_in_content_rules() {
    let ip = test_ip();
    let farm = Farm::new(ip);
    let fl = free_addr(ip);
    let cfg = |bind: SocketAddr| {
        format!(
            "defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n\
frontend f\n    bind {bind}\n    tcp-request inspect-delay 5s\n    tcp-request content reject if {{ req.rdp_cookie(mstshash) -m str mallory }}\n    tcp-request content accept if RDP_COOKIE\n    use_backend admins if {{ rdp_cookie(mstshash) -m beg adm }}\n    use_backend counted if {{ req.rdp_cookie_cnt(msts) eq 1 }}\n    default_backend users\n\
backend admins\n    server s3 {}\n\
backend counted\n    server s5 {}\n\
backend users\n    server s1 {}\n",
            farm.addr("s3"),
            farm.addr("s5"),
            farm.addr("s1")
        )
    };
    let _p = Proxy::start(&cfg(fl), &[fl]);
    let h = haproxy_bin().map(|bin| {
        let ha = free_addr(ip);
        (ha, Haproxy::start(&bin, &cfg(ha), &[], ha))
    });
    let check = |token: &str, want: &str| {
        let cr = connection_request(token);
        assert_eq!(exchange(fl, &cr), want, "Fairlead: {token:?}");
        if let Some((ha, _)) = &h {
            assert_eq!(exchange(*ha, &cr), want, "HAProxy: {token:?}");
        }
    };
    check("Cookie: mstshash=admin7\r\n", "s3");
    check("Cookie: mstshash=alice\r\n", "s1");
    check("Cookie: mstshash=mallory\r\n", "");
    check("Cookie: msts=1.2.0000\r\n", "s5");
    // Not an RDP cookie: RDP_COOKIE is false at once (no wait), the rules
    // end without a verdict, which accepts.
    check("GET / HTTP/1.0\r\n\r\n", "s1");
}
