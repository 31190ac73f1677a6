//! End-to-end tests of the balancing, persistence, retry and health check
//! keywords, and of the server options that go with them.

use std::time::Duration;

#[allow(unused_imports)]
use crate::test_util::*;
use crate::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn defaults_of_new_settings() {
    let p = ok("backend b\n server s 1.1.1.1:80\n");
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    let c = &p.config;
    assert_eq!(c.global.spread_checks, 0);
    let o = &c.backends[0].options;
    assert_eq!(o.balance, Balance::RoundRobin);
    assert_eq!(o.hash_type, HashType::default());
    assert!(!o.allbackups && !o.persist && !o.redispatch);
    assert_eq!(o.redispatch_interval, -1);
    assert_eq!(o.fullconn, None);
    assert_eq!(o.cookie, None);
    assert_eq!(o.retry_on, RetryOn::default());
    assert!(o.retry_on.conn_failure);
    assert_eq!(o.health_check, HealthCheck::Tcp);
    assert_eq!(o.timeouts.check, None);
    let s = &c.backends[0].servers[0];
    assert!(!s.check);
    assert_eq!(s.inter, Duration::from_secs(2));
    assert_eq!((s.fastinter, s.downinter), (None, None));
    assert_eq!((s.rise, s.fall, s.error_limit), (2, 3, 10));
    assert_eq!((s.check_port, s.check_addr), (None, None));
    assert_eq!(s.agent, None);
    assert_eq!(s.observe, None);
    assert_eq!(s.on_error, OnError::FailCheck);
    assert_eq!(s.slowstart, None);
    assert_eq!((s.minconn, s.maxqueue), (0, 0));
    assert_eq!((s.cookie.as_deref(), s.id), (None, None));
}

const FULL: &str = "\
global
    spread-checks 5
defaults
    mode http
    balance leastconn
    hash-type consistent djb2 avalanche
    option allbackups
    fullconn 1000
    option persist
    option redispatch 2
    retry-on 503 conn-failure
    cookie SRV insert indirect nocache
    timeout check 3s
    option httpchk GET /health HTTP/1.1
    http-check send hdr Host example.com
    http-check expect status 200-299
    http-check disable-on-404
    default-server check inter 5s rise 4 fall 2 slowstart 10s maxqueue 50
backend inherits
    server a 10.0.0.1:80 cookie a
    server b 10.0.0.2:80 cookie b no-check
backend overrides
    balance uri whole depth 2
    hash-type map-based
    no option allbackups
    no option persist
    no option redispatch
    retry-on all-retryable-errors 404
    cookie JSID prefix domain .example.com maxidle 30m maxlife 8h
    timeout check 1s
    option httpchk /ping
    default-server inter 1s fastinter 500 downinter 10s port 8081 addr 10.9.9.9
    server c 10.0.0.3:80 id 7 minconn 10 maxconn 100 observe layer7 error-limit 5 on-error mark-down
";

#[test]
fn inheritance_through_defaults_and_default_server() {
    let p = ok(FULL);
    let c = &p.config;
    assert!(!has(&warns(&p), "not implemented"), "{:?}", warns(&p));
    assert_eq!(c.global.spread_checks, 5);
    let b = c.backend("inherits").unwrap();
    let o = &b.options;
    assert_eq!(o.balance, Balance::LeastConn);
    assert_eq!(
        o.hash_type,
        HashType {
            method: HashMethod::Consistent,
            function: HashFunction::Djb2,
            avalanche: true
        }
    );
    assert!(o.allbackups && o.persist && o.redispatch);
    assert_eq!(o.redispatch_interval, 2);
    assert_eq!(o.fullconn, Some(1000));
    assert_eq!(o.retry_on.statuses, [503]);
    assert!(o.retry_on.conn_failure && !o.retry_on.empty_response);
    let ck = o.cookie.as_ref().unwrap();
    assert_eq!(ck.name, "SRV");
    assert_eq!(ck.mode, CookieMode::Insert);
    assert!(ck.indirect && ck.nocache && !ck.postonly);
    assert_eq!(o.timeouts.check, Some(Duration::from_secs(3)));
    let HealthCheck::Http(hc) = &o.health_check else {
        panic!("{:?}", o.health_check)
    };
    assert_eq!(
        (hc.method.as_str(), hc.uri.as_str(), hc.version.as_str()),
        ("GET", "/health", "HTTP/1.1")
    );
    assert_eq!(
        hc.headers,
        [("Host".to_string(), "example.com".to_string())]
    );
    assert!(hc.disable_on_404);
    assert_eq!(
        hc.expect,
        Some(Expect::new(false, ExpectKind::Status(vec![(200, 299)])))
    );
    let a = &b.servers[0];
    assert!(a.check);
    assert_eq!(a.inter, Duration::from_secs(5));
    assert_eq!((a.rise, a.fall), (4, 2));
    assert_eq!(a.slowstart, Some(Duration::from_secs(10)));
    assert_eq!(a.maxqueue, 50);
    assert_eq!(a.cookie.as_deref(), Some("a"));
    assert!(!b.servers[1].check);
    assert_eq!(b.servers[1].rise, 4);

    let b = c.backend("overrides").unwrap();
    let o = &b.options;
    assert_eq!(
        o.balance,
        Balance::Uri {
            whole: true,
            len: None,
            depth: Some(2)
        }
    );
    assert_eq!(o.hash_type, HashType::default());
    assert!(!o.allbackups && !o.persist && !o.redispatch);
    assert_eq!(o.redispatch_interval, 0);
    let r = &o.retry_on;
    assert!(r.conn_failure && r.empty_response && r.junk_response && r.response_timeout);
    assert_eq!(r.statuses, [404, 500, 502, 503, 504]);
    let ck = o.cookie.as_ref().unwrap();
    assert_eq!(ck.mode, CookieMode::Prefix);
    assert_eq!(ck.domains, [".example.com"]);
    assert_eq!(ck.maxidle, Some(Duration::from_secs(1800)));
    assert_eq!(ck.maxlife, Some(Duration::from_secs(8 * 3600)));
    assert_eq!(o.timeouts.check, Some(Duration::from_secs(1)));
    // The section's own `option httpchk` starts a fresh rule list: the
    // defaults' http-check rules do not apply, as in HAProxy.
    let HealthCheck::Http(hc) = &o.health_check else {
        panic!()
    };
    assert_eq!(
        (hc.method.as_str(), hc.uri.as_str(), hc.version.as_str()),
        ("OPTIONS", "/ping", "HTTP/1.0")
    );
    assert!(hc.headers.is_empty() && hc.expect.is_none());
    // `disable-on-404` is a proxy option: inherited all the same.
    assert!(hc.disable_on_404);
    let s = &b.servers[0];
    assert!(s.check, "defaults' default-server still applies");
    assert_eq!(s.inter, Duration::from_secs(1));
    assert_eq!(s.fastinter, Some(ms(500)));
    assert_eq!(s.downinter, Some(Duration::from_secs(10)));
    assert_eq!(s.check_port, Some(8081));
    assert_eq!(s.check_addr, Some("10.9.9.9".parse().unwrap()));
    assert_eq!(s.id, Some(7));
    assert_eq!((s.minconn, s.maxconn), (10, 100));
    assert_eq!(s.observe, Some(Observe::Layer7));
    assert_eq!(s.error_limit, 5);
    assert_eq!(s.on_error, OnError::MarkDown);
    assert_eq!(s.maxqueue, 50);
}

#[test]
fn balance_algorithms_end_to_end() {
    let cases: &[(&str, Balance)] = &[
        ("roundrobin", Balance::RoundRobin),
        ("static-rr", Balance::StaticRr),
        ("leastconn", Balance::LeastConn),
        ("first", Balance::First),
        ("source", Balance::Source),
        ("random(3)", Balance::Random { draws: 3 }),
        (
            "url_param userid",
            Balance::UrlParam {
                name: "userid".into(),
            },
        ),
        (
            "hdr(Host) use_domain_only",
            Balance::Hdr {
                name: "Host".into(),
                use_domain_only: true,
            },
        ),
        (
            "uri len 12",
            Balance::Uri {
                whole: false,
                len: Some(12),
                depth: None,
            },
        ),
    ];
    for (algo, want) in cases {
        let p = ok(&format!(
            "backend b\n mode http\n balance {algo}\n server s 1.1.1.1:80\n"
        ));
        assert_eq!(&p.config.backends[0].options.balance, want, "{algo}");
        assert!(p.diagnostics.is_empty(), "{algo}: {:?}", warns(&p));
    }
}

#[test]
fn layer7_balance_and_cookies_in_tcp_mode() {
    let p = ok("\
backend b
    balance url_param id
    cookie SRV insert
    server s 1.1.1.1:80 cookie s1
listen l
    mode tcp
    bind :81
    balance source
    server t 1.1.1.2:80
");
    let w = warns(&p);
    let b = &p.config.backends[0];
    assert_eq!(b.options.balance, Balance::RoundRobin);
    assert_eq!(b.options.cookie, None);
    assert_eq!(b.servers[0].cookie, None);
    assert!(has(&w, "t.cfg:2: Layer 7 hash not possible for backend 'b' (needs 'mode http'). Falling back to round robin."));
    assert!(has(
        &w,
        "t.cfg:3: cookie will be ignored for backend 'b' (needs 'mode http')."
    ));
    assert!(has(
        &w,
        "t.cfg:4: backend 'b' : ignoring cookie for server 's' as HTTP mode is disabled."
    ));
    assert_eq!(p.config.backends[1].options.balance, Balance::Source);
    assert_eq!(w.len(), 3, "{w:?}");

    // Mode set after balance still counts (final mode), and http mode keeps it.
    let p = ok("backend b\n balance hdr(x)\n mode http\n server s 1.1.1.1:80 cookie s1\n");
    assert_eq!(
        p.config.backends[0].options.balance,
        Balance::Hdr {
            name: "x".into(),
            use_domain_only: false
        }
    );
    assert!(has(
        &warns(&p),
        "t.cfg:4: backend 'b' : server 's' has a 'cookie' value but the backend has no 'cookie' directive"
    ));
}

#[test]
fn health_check_kinds() {
    let p = ok("\
defaults
    option tcp-check
    tcp-check connect port 6379
    tcp-check send PING\\r\\n
    tcp-check expect string +PONG
backend inherit
    server s 1.1.1.1:80 check
backend own
    tcp-check send-binary 50494e470d0a
    tcp-check expect ! binary 2d
    server s 1.1.1.1:80 check
backend redis
    option redis-check
    server s 1.1.1.1:80 check
backend plain
    option httpchk
    option tcp-check
    server s 1.1.1.1:80 check
");
    let hc = |i: usize| p.config.backends[i].options.health_check.clone();
    assert_eq!(
        hc(0),
        HealthCheck::TcpCheck(vec![
            TcpCheckRule::Connect(TcpConnect {
                port: Some(6379),
                ..Default::default()
            }),
            TcpCheckRule::Send(b"PING\r\n".to_vec()),
            TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+PONG".into()))),
        ])
    );
    assert_eq!(
        hc(1),
        HealthCheck::TcpCheck(vec![
            TcpCheckRule::Send(b"PING\r\n".to_vec()),
            TcpCheckRule::Expect(Expect::new(true, ExpectKind::Binary(vec![0x2d]))),
        ])
    );
    let HealthCheck::TcpCheck(redis) = hc(2) else {
        panic!()
    };
    assert_eq!(
        redis[0],
        TcpCheckRule::Send(b"*1\r\n$4\r\nPING\r\n".to_vec())
    );
    // The defaults' tcp-check rules are inherited by a later option tcp-check.
    assert_eq!(hc(3), hc(0));
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
}

#[test]
fn http_check_rules() {
    let p = ok("\
backend b
    mode http
    http-check connect port 8080
    http-check send meth HEAD uri /status ver HTTP/1.1 hdr Host a.example body ping
    http-check expect ! rstring ^ERR
    option httpchk
    server s 1.1.1.1:80 check
backend unused
    http-check expect status 200
    server s 1.1.1.1:80 check
");
    let HealthCheck::Http(hc) = &p.config.backends[0].options.health_check else {
        panic!()
    };
    assert_eq!(hc.port, Some(8080));
    assert_eq!(
        (hc.method.as_str(), hc.uri.as_str(), hc.version.as_str()),
        ("HEAD", "/status", "HTTP/1.1")
    );
    assert_eq!(hc.body.as_deref(), Some("ping"));
    assert_eq!(
        hc.expect,
        Some(Expect::new(true, ExpectKind::RString("^ERR".into())))
    );
    assert_eq!(p.config.backends[1].options.health_check, HealthCheck::Tcp);
    assert!(has(
        &warns(&p),
        "t.cfg:9: backend 'unused' uses http-check rules without 'option httpchk', so the rules are ignored."
    ));
}

#[test]
fn agent_checks() {
    let p = ok("\
backend b
    default-server agent-check agent-port 9999 agent-inter 3s
    server a 1.1.1.1:80 agent-send ready\\n agent-addr 10.0.0.9
    server b 1.1.1.2:80 no-agent-check
    server c 1.1.1.3:80 no-agent-check agent-check port 7000 addr 10.0.0.8
");
    let s = &p.config.backends[0].servers;
    assert_eq!(
        s[0].agent,
        Some(AgentCheck {
            port: 9999,
            addr: Some("10.0.0.9".parse().unwrap()),
            inter: Some(Duration::from_secs(3)),
            send: Some("ready\n".into()),
        })
    );
    assert_eq!(s[1].agent, None);
    // `port` and `addr` also apply to the agent when agent-* are not set.
    assert_eq!(
        s[2].agent,
        Some(AgentCheck {
            port: 7000,
            addr: Some("10.0.0.8".parse().unwrap()),
            inter: None,
            send: None,
        })
    );
    assert_eq!(s[2].check_port, Some(7000));
}

#[test]
fn timeouts_and_spread_checks() {
    let p = ok("global\n spread-checks 50\nbackend b\n timeout check 500ms\n server s 1.1.1.1:1\n");
    assert_eq!(p.config.global.spread_checks, 50);
    assert_eq!(p.config.backends[0].options.timeouts.check, Some(ms(500)));
}

#[test]
fn keyword_errors_with_lines() {
    let cases: &[(&str, &str)] = &[
        ("global\n spread-checks 51\n", "t.cfg:2: 'spread-checks': needs a positive value in range 0..50."),
        ("global\n spread-checks x\n", "t.cfg:2: 'spread-checks': expects an integer"),
        ("global\n spread-checks 5\n spread-checks 6\n", "t.cfg:3: 'spread-checks': spread-checks already specified."),
        ("backend b\n balance hash src\n", "t.cfg:2: 'balance': balance hash is not implemented yet in Fairlead"),
        ("backend b\n balance url_param x check_post\n", "t.cfg:2: 'balance': 'check_post'"),
        ("backend b\n balance random(0)\n", "t.cfg:2: 'balance': random : number of draws must be at least 1."),
        ("backend b\n hash-type consistent md5\n", "t.cfg:2: 'hash-type': only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions."),
        ("backend b\n fullconn x\n", "t.cfg:2: 'fullconn': 'fullconn' expects an unsigned integer"),
        ("backend b\n option allbackups 1\n", "t.cfg:2: 'option allbackups': takes no argument"),
        ("backend b\n cookie S rewrite indirect\n", "t.cfg:2: 'cookie': cookie 'rewrite' and 'indirect' modes are incompatible."),
        ("backend b\n cookie S dynamic\n", "t.cfg:2: 'cookie': cookie option 'dynamic' is not implemented yet"),
        ("backend b\n retry-on 418\n", "t.cfg:2: 'retry-on': unknown keyword '418'"),
        ("backend b\n retry-on\n", "t.cfg:2: 'retry-on': needs at least one keyword"),
        ("frontend f\n bind :1\n retry-on 503\n", "t.cfg:3: 'retry-on' not allowed in 'frontend' section."),
        ("backend b\n no option httpchk\n", "t.cfg:2: 'no option httpchk': 'no' is not supported for this option"),
        ("backend b\n option httpchk a b c d\n", "t.cfg:2: 'option httpchk': cannot handle more than 3 arguments."),
        ("backend b\n option ssl-hello-chk x\n", "t.cfg:2: 'option ssl-hello-chk': cannot handle unexpected argument 'x'."),
        ("backend b\n option mysql-check user x post-42\n", "t.cfg:2: 'option mysql-check': 'user' only supports optional values: 'post-41' and 'pre-41' (got 'post-42')."),
        ("backend b\n option mysql-check usr x\n", "t.cfg:2: 'option mysql-check': only supports optional values: 'user' (got 'usr')."),
        ("backend b\n option pgsql-check\n", "t.cfg:2: 'option pgsql-check': 'user' expects <username> as argument."),
        ("backend b\n tcp-check expect min-recv x string a\n", "t.cfg:2: 'tcp-check': 'expect': 'min-recv' expects an integer"),
        ("backend b\n tcp-check connect proto h2\n", "t.cfg:2: 'tcp-check': 'connect': 'proto' : invalid MUX protocol 'h2' for tcp-check."),
        ("backend b\n tcp-check connect proto fcgi\n", "t.cfg:2: 'tcp-check': 'connect': 'proto' : invalid MUX protocol 'fcgi' for tcp-check."),
        ("backend b\n tcp-check connect proto h1\n", "t.cfg:2: 'tcp-check': 'connect': 'proto' : invalid MUX protocol 'h1' for tcp-check."),
        ("backend b\n http-check connect proto none\n", "t.cfg:2: 'http-check': 'connect': 'proto' : invalid MUX protocol 'none' for http-check."),
        ("backend b\n http-check connect proto foo\n", "t.cfg:2: 'http-check': 'connect': 'proto' : unknown MUX protocol 'foo'."),
        ("backend b\n http-check connect proto fcgi\n", "t.cfg:2: 'http-check': 'connect': 'proto' : fcgi health checks are not implemented yet in Fairlead"),
        ("backend b\n server s 1.1.1.1:80 check-proto foo\n", "t.cfg:2: 'server s': 'check-proto' : unknown MUX protocol 'foo'"),
        ("backend b\n server s 1.1.1.1:80 check check-proto h2\n", "t.cfg:2: backend 'b': server 's' uses an incompatible MUX protocol for the selected check type"),
        ("backend b\n option tcp-check\n server s 1.1.1.1:80 check check-proto h1\n", "t.cfg:3: backend 'b': server 's' uses an incompatible MUX protocol for the selected check type"),
        ("backend b\n option httpchk\n server s 1.1.1.1:80 check check-proto none\n", "t.cfg:3: backend 'b': server 's' uses an incompatible MUX protocol for the selected check type"),
        ("backend b\n http-check connect ssl\n", "t.cfg:2: 'http-check': 'connect': connect option 'ssl' of http-check is not implemented yet"),
        ("backend b\n server s 1.1.1.1:80 socks4 1.2.3.4\n", "t.cfg:2: 'server s': 'socks4' : missing port number in '1.2.3.4'"),
        ("backend b\n http-check disable-on-404 x\n", "t.cfg:2: 'http-check': 'disable-on-404': cannot handle unexpected argument 'x'."),
        ("backend b\n http-check send-state\n", "t.cfg:2: 'http-check': 'send-state': is not implemented yet in Fairlead"),
        ("backend b\n http-check expect status 2xx\n", "t.cfg:2: 'http-check': 'expect': invalid status code '2xx'"),
        ("backend b\n http-check expect rstring (x\n", "t.cfg:2: 'http-check': 'expect': invalid regex '(x'"),
        ("backend b\n http-check expect status 200\n http-check expect string x\n", "t.cfg:3: 'http-check': 'expect': several 'http-check expect' rules are not implemented yet"),
        ("backend b\n tcp-check send-binary 0g\n", "t.cfg:2: 'tcp-check': 'send-binary': '0g' invalid binary string"),
        ("backend b\n tcp-check expect status 200\n", "t.cfg:2: 'tcp-check': 'expect': 'only supports"),
        ("backend b\n tcp-check bogus\n", "t.cfg:2: 'tcp-check': 'tcp-check' only supports"),
        ("backend b\n timeout check 5x\n", "t.cfg:2: 'timeout check': invalid unit 'x'"),
        ("backend b\n option redispatch 1 2\n", "t.cfg:2: 'option redispatch': too many arguments"),
        ("backend b\n server s 1.1.1.1:80 inter 0\n", "t.cfg:2: 'server s': invalid value 0 for argument 'inter' of 'server s'"),
        ("backend b\n server s 1.1.1.1:80 fastinter 1x\n", "t.cfg:2: 'server s': 'fastinter': invalid unit 'x'"),
        ("backend b\n server s 1.1.1.1:80 rise 0\n", "t.cfg:2: 'server s': 'rise' has to be > 0"),
        ("backend b\n server s 1.1.1.1:80 fall x\n", "t.cfg:2: 'server s': 'fall' expects an unsigned integer (got 'x')"),
        ("backend b\n server s 1.1.1.1:80 port 70000\n", "t.cfg:2: 'server s': 'port' expects a port number from 1 to 65535 (got '70000')"),
        ("backend b\n server s 1.1.1.1:80 addr web.local\n", "t.cfg:2: 'server s': 'addr' expects an IPv4 or IPv6 address (got 'web.local')"),
        ("backend b\n server s 1.1.1.1:80 agent-check\n", "t.cfg:2: 'server s': server s does not have agent port"),
        ("backend b\n server s 1.1.1.1:80 agent-port 0 agent-check\n", "t.cfg:2: 'server s': 'agent-port' expects a port number"),
        ("backend b\n server s 1.1.1.1:80 observe layer3\n", "t.cfg:2: 'server s': 'observe' expects one of 'none', 'layer4', 'layer7' but got 'layer3'"),
        ("backend b\n server s 1.1.1.1:80 observe layer7\n", "t.cfg:2: 'server s': 'observe layer7' can only be used in http proxies"),
        ("backend b\n server s 1.1.1.1:80 on-error reboot\n", "t.cfg:2: 'server s': 'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got 'reboot'"),
        ("backend b\n server s 1.1.1.1:80 error-limit 0\n", "t.cfg:2: 'server s': 'error-limit' has to be > 0"),
        ("backend b\n server s 1.1.1.1:80 slowstart 1y\n", "t.cfg:2: 'server s': 'slowstart': invalid unit 'y'"),
        ("backend b\n server s 1.1.1.1:80 minconn -1\n", "t.cfg:2: 'server s': 'minconn' expects an unsigned integer"),
        ("backend b\n server s 1.1.1.1:80 maxqueue x\n", "t.cfg:2: 'server s': 'maxqueue' expects an unsigned integer"),
        ("backend b\n server s 1.1.1.1:80 id 0\n", "t.cfg:2: 'server s': 'id': custom id has to be > 0"),
        ("backend b\n server s 1.1.1.1:80 id 3\n server t 1.1.1.2:80 id 3\n", "t.cfg:3: 'server': 'id' : custom id 3 already used at t.cfg:2 ('server s')"),
        ("backend b\n default-server id 3\n", "t.cfg:2: 'default-server': 'id' option is not accepted in default-server sections"),
        ("backend b\n server s 1.1.1.1:80 check-via-socks4 check-proto fcgi\n", "'check-proto fcgi': fcgi health checks are not implemented yet"),
        ("backend b\n server s 1.1.1.1:80 cookie\n", "t.cfg:2: 'server s': 'cookie' expects an argument"),
    ];
    for (cfg, want) in cases {
        let e = errs(cfg);
        assert!(has(&e, want), "config {cfg:?}: wanted {want:?}, got {e:#?}");
    }
}

#[test]
fn accepted_with_warnings() {
    let p = ok("\
backend b
    mode http
    balance uri path-only
    retry-on 0rtt-rejected 503
    cookie S insert domain localhost
    option httpchk GET / HTTP/1.1\\r\\nHost:\\ x
    server s 1.1.1.1:80 observe layer4 on-error sudden-death slowstart 0 no-check-ssl
");
    let w = warns(&p);
    assert!(has(
        &w,
        "t.cfg:3: 'balance': 'path-only' is not implemented yet"
    ));
    assert!(has(
        &w,
        "t.cfg:4: 'retry-on': '0rtt-rejected' never triggers"
    ));
    assert!(has(
        &w,
        "t.cfg:5: 'cookie': domain 'localhost' contains no embedded dot"
    ));
    assert!(has(&w, "t.cfg:6: 'option httpchk': hiding headers or body at the end of the version string is deprecated."));
    let b = &p.config.backends[0];
    assert_eq!(b.options.retry_on.statuses, [503]);
    let HealthCheck::Http(hc) = &b.options.health_check else {
        panic!()
    };
    assert_eq!(hc.headers, [("Host".to_string(), "x".to_string())]);
    let s = &b.servers[0];
    assert_eq!(s.observe, Some(Observe::Layer4));
    assert_eq!(s.on_error, OnError::SuddenDeath);
    assert_eq!(s.slowstart, None);
}

#[test]
fn catalog_statuses() {
    let all = keyword_support();
    let status = |sec: &str, kw: &str| {
        all.iter()
            .find(|k| k.section == sec && k.keyword == kw)
            .map(|k| k.status)
    };
    for kw in [
        "balance",
        "hash-type",
        "fullconn",
        "cookie",
        "retry-on",
        "option allbackups",
        "option persist",
        "option redispatch",
        "option httpchk",
        "option tcp-check",
        "option redis-check",
        "http-check",
        "tcp-check",
        "timeout check",
    ] {
        assert_eq!(status("backend", kw), Some(Support::Implemented), "{kw}");
    }
    assert_eq!(
        status("global", "spread-checks"),
        Some(Support::Implemented)
    );
    for opt in [
        "check",
        "no-check",
        "inter",
        "fastinter",
        "downinter",
        "rise",
        "fall",
        "port",
        "addr",
        "agent-check",
        "no-agent-check",
        "agent-port",
        "agent-addr",
        "agent-inter",
        "agent-send",
        "observe",
        "error-limit",
        "on-error",
        "slowstart",
        "minconn",
        "maxqueue",
        "cookie",
        "id",
    ] {
        assert_eq!(status("server", opt), Some(Support::Implemented), "{opt}");
    }
    assert_eq!(
        status("backend", "option ssl-hello-chk"),
        Some(Support::Implemented)
    );
    assert!(!all
        .iter()
        .any(|k| k.note.contains("health checks are not implemented")));
}

/// `option httpchk` and `http-check send` across a defaults section and
/// its backends, as HAProxy 2.6.12 sends them (each case checked against
/// it: the request line its checks sent).
#[test]
fn httpchk_option_and_send_rules_inheritance() {
    let p = ok("\
defaults d1
    mode http
    option httpchk GET /health
backend own_send
    http-check send meth POST uri /b
    server s 1.1.1.1:80 check
backend own_uri
    http-check send uri /b
    server s 1.1.1.1:80 check
backend send_then_option
    http-check send uri /s
    option httpchk GET /o
    server s 1.1.1.1:80 check
backend option_then_send
    option httpchk GET /o HTTP/1.1
    http-check send uri /s hdr X-Y 1
    server s 1.1.1.1:80 check
defaults d2
    mode http
    option httpchk
    http-check send meth POST uri /a hdr X-A 1
backend own_option
    option httpchk GET /b
    server s 1.1.1.1:80 check
backend bare_option
    option httpchk
    server s 1.1.1.1:80 check
backend inherits
    server s 1.1.1.1:80 check
");
    let req = |i: usize| {
        let HealthCheck::Http(hc) = &p.config.backends[i].options.health_check else {
            panic!("backend {i} has no HTTP check")
        };
        let hdrs: Vec<String> = hc
            .headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        format!("{} {} {} {}", hc.method, hc.uri, hc.version, hdrs.join(","))
    };
    // The backend's own send rule replaces the defaults' option request:
    // no GET, no /health from it.
    assert_eq!(req(0), "POST /b HTTP/1.0 ");
    assert_eq!(req(1), "OPTIONS /b HTTP/1.0 ");
    // In one section, the later of the two sets the fields it names.
    assert_eq!(req(2), "GET /o HTTP/1.0 ");
    assert_eq!(req(3), "GET /s HTTP/1.1 X-Y: 1");
    // The backend's own `option httpchk` drops the defaults' send rule.
    assert_eq!(req(4), "GET /b HTTP/1.0 ");
    assert_eq!(req(5), "OPTIONS / HTTP/1.0 ");
    // Nothing of its own: both inherited.
    assert_eq!(req(6), "POST /a HTTP/1.0 X-A: 1");
}

#[test]
fn server_state_file_keywords() {
    let p = ok("global\n server-state-base /var/lib/fl/\n server-state-file all.state\n\
defaults\n load-server-state-from-file global\n\
backend a\n server s 1.1.1.1:80\n\
backend b\n load-server-state-from-file local\n server s 1.1.1.1:80\n\
backend c\n load-server-state-from-file local\n server-state-file-name /abs/c.state\n server s 1.1.1.1:80\n\
backend d\n load-server-state-from-file none\n server s 1.1.1.1:80\n");
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    let c = &p.config;
    assert_eq!(c.global.server_state_file.as_deref(), Some("all.state"));
    let path = |i: usize| c.server_state_path(&c.backends[i]);
    assert_eq!(path(0).as_deref(), Some("/var/lib/fl/all.state"));
    assert_eq!(path(1).as_deref(), Some("/var/lib/fl/b"));
    assert_eq!(path(2).as_deref(), Some("/abs/c.state"));
    assert_eq!(path(3), None);
    assert_eq!(
        c.backends[0].options.load_server_state,
        ServerStateLoad::Global
    );
    // Nothing is loaded by default.
    let p = ok("global\n server-state-file /x\nbackend a\n server s 1.1.1.1:80\n");
    assert_eq!(p.config.server_state_path(&p.config.backends[0]), None);
}

/// The protocol checks' options, as HAProxy 2.6 parses them (a later check
/// option replaces an earlier one; `smtpchk` falls back to `HELO
/// localhost`; `mysql-check user` defaults to the post-4.1 packet).
#[test]
fn protocol_check_options() {
    let p = ok("\
backend my0
    option mysql-check
backend my1
    option mysql-check user haproxy
backend my2
    option mysql-check user haproxy pre-41
backend pg
    option pgsql-check user postgres
backend smtp0
    option smtpchk
backend smtp1
    option smtpchk EHLO mail.example
backend smtp2
    option smtpchk FOO bar
backend ldap
    option ldap-check
backend sslh
    option httpchk
    option ssl-hello-chk
backend spop
    option spop-check
");
    let hc: Vec<&HealthCheck> = p
        .config
        .backends
        .iter()
        .map(|b| &b.options.health_check)
        .collect();
    let user = |name: &str, post41| {
        Some(MysqlUser {
            name: name.into(),
            post41,
        })
    };
    assert_eq!(
        hc,
        [
            &HealthCheck::Mysql(None),
            &HealthCheck::Mysql(user("haproxy", true)),
            &HealthCheck::Mysql(user("haproxy", false)),
            &HealthCheck::Pgsql {
                user: "postgres".into()
            },
            &HealthCheck::Smtp {
                command: "HELO localhost".into()
            },
            &HealthCheck::Smtp {
                command: "EHLO mail.example".into()
            },
            &HealthCheck::Smtp {
                command: "HELO localhost".into()
            },
            &HealthCheck::Ldap,
            &HealthCheck::SslHello,
            &HealthCheck::Spop,
        ]
    );
}

/// `check-proto h1|h2` on servers and `http-check connect proto h1|h2`
/// with `option httpchk` (HTTP/2 checks).
#[test]
fn http_check_protocols() {
    let p = ok("\
backend b
    option httpchk GET /x
    server s 1.1.1.1:80 check check-proto h2
    server t 1.1.1.1:80 check check-proto h1
    server u 1.1.1.1:80 check
    server v 1.1.1.1:80 check-proto h2
backend c
    option httpchk
    http-check connect port 8080 proto h2
    server s 1.1.1.1:80 check check-proto h1
backend d
    option httpchk
    http-check connect default proto h1
    server s 1.1.1.1:80 check
");
    let protos: Vec<_> = p.config.backends[0]
        .servers
        .iter()
        .map(|s| s.check_proto)
        .collect();
    assert_eq!(
        protos,
        [
            Some(CheckProto::H2),
            Some(CheckProto::H1),
            None,
            Some(CheckProto::H2)
        ]
    );
    let conn: Vec<_> = p.config.backends[..]
        .iter()
        .map(|b| match &b.options.health_check {
            HealthCheck::Http(h) => (h.port, h.proto, h.own_connect),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        conn,
        [
            (None, None, false),
            (Some(8080), Some(CheckProto::H2), true),
            (None, Some(CheckProto::H1), false)
        ]
    );
}

/// `tcp-check connect` options, `expect min-recv` and `rbinary`, and the
/// server's check transport options.
#[test]
fn tcp_check_connect_options_and_min_recv() {
    let p = ok("\
backend b
    option tcp-check
    tcp-check connect default port 8443 addr 10.0.0.9 ssl sni api.example alpn h2,http/1.1 send-proxy via-socks4 linger proto none comment x
    tcp-check expect min-recv 4 rbinary ^2B50
    tcp-check expect min-recv -1 string +PONG
    server s 1.1.1.1:6379 check socks4 127.0.0.1:1080 check-via-socks4 check-alpn h2 check-proto none check-send-proxy
    server t 1.1.1.1:6379 check send-proxy-v2
    server u 1.1.1.1:6379 check send-proxy port 7000
");
    let b = &p.config.backends[0];
    let HealthCheck::TcpCheck(rules) = &b.options.health_check else {
        panic!("{:?}", b.options.health_check)
    };
    assert_eq!(
        rules[0],
        TcpCheckRule::Connect(TcpConnect {
            port: Some(8443),
            addr: Some("10.0.0.9".parse().unwrap()),
            default: true,
            ssl: true,
            sni: Some("api.example".into()),
            alpn: Some(vec!["h2".into(), "http/1.1".into()]),
            send_proxy: true,
            via_socks4: true,
            linger: true,
        })
    );
    assert_eq!(
        rules[1],
        TcpCheckRule::Expect(Expect {
            negate: false,
            kind: ExpectKind::RBinary("^2B50".into()),
            min_recv: Some(4),
        })
    );
    assert_eq!(
        rules[2],
        TcpCheckRule::Expect(Expect::new(false, ExpectKind::String("+PONG".into())))
    );
    let s = &b.servers;
    assert_eq!(s[0].socks4, Some("127.0.0.1:1080".parse().unwrap()));
    assert!(s[0].check_via_socks4);
    assert_eq!(s[0].check_alpn, Some(vec!["h2".to_string()]));
    assert_eq!(s[0].check_proto, Some(CheckProto::None));
    // check-send-proxy: version 1; send-proxy-v2 on the server's own
    // port: version 2; send-proxy with a check port: none (HAProxy's rule).
    let pp: Vec<u8> = s.iter().map(|s| s.check_proxy_header()).collect();
    assert_eq!(pp, [1, 2, 0]);
}
