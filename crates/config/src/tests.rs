//! End-to-end tests of [`crate::parse`]: sections, inheritance, keywords,
//! error messages and the "report every error" rule.

use std::net::SocketAddr;
use std::time::Duration;

#[allow(unused_imports)]
use crate::test_util::*;
use crate::*;

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const BASIC: &str = "\
global
    maxconn 1000
    nbthread 4
    daemon
    pidfile /run/fl.pid
    user nobody
    group nogroup
    ulimit-n 65536
    tune.bufsize 32768
    tune.maxaccept 100
    hard-stop-after 30s
    cpu-map auto:1/1-4 0-3

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    retries 2

frontend web
    bind :80
    bind [::]:8080 v6only
    default_backend app

backend app
    balance roundrobin
    option redispatch
    server a 10.0.0.1:8080 weight 10 maxconn 100
    server b app2.internal:8080 backup
    server c [::1]:9000 disabled
";

#[test]
fn basic_config() {
    let p = ok(BASIC);
    assert!(p.diagnostics.is_empty(), "{:?}", warns(&p));
    let c = &p.config;
    let g = &c.global;
    assert_eq!(g.maxconn, Some(1000));
    assert_eq!(g.nbthread, Some(4));
    assert!(g.daemon);
    assert_eq!(g.pidfile.as_deref(), Some("/run/fl.pid"));
    assert_eq!(g.user.as_deref(), Some("nobody"));
    assert_eq!(g.group.as_deref(), Some("nogroup"));
    assert_eq!(g.ulimit_n, Some(65536));
    assert_eq!(g.bufsize, 32768);
    assert_eq!(g.maxaccept, 100);
    assert!(g.multi_queue, "on by default, as in HAProxy");
    // Fairlead's own I/O path keywords: off and 256 unless set.
    assert!(!g.io_uring);
    assert_eq!(g.uring_recv_bufs, 256);
    let u = ok("global\n    io-uring on\n    tune.io-uring.recv-bufs 1024\n");
    assert!(u.config.global.io_uring);
    assert_eq!(u.config.global.uring_recv_bufs, 1024);
    assert!(!ok("global\n    io-uring off\n").config.global.io_uring);
    let mq = ok("global\n    tune.listener.multi-queue off\n");
    assert!(!mq.config.global.multi_queue);
    assert!(warns(&mq).is_empty(), "{:?}", warns(&mq));
    assert!(
        ok("global\n    tune.listener.multi-queue on\n")
            .config
            .global
            .multi_queue
    );
    assert_eq!(g.hard_stop_after, Some(Duration::from_secs(30)));
    assert_eq!(
        g.cpu_map,
        vec![CpuMap {
            threads: vec![1, 2, 3, 4],
            cpus: vec![0, 1, 2, 3],
            auto: true
        }]
    );
    assert_eq!(c.frontends.len(), 1);
    let fe = &c.frontends[0];
    assert_eq!(fe.name, "web");
    assert_eq!(fe.location.line, 21);
    assert_eq!(fe.binds[0].addrs, vec![sa("0.0.0.0:80")]);
    assert_eq!(fe.binds[1].addrs, vec![sa("[::]:8080")]);
    assert_eq!(fe.binds[1].v6only, Some(true));
    assert_eq!(fe.binds[0].v6only, None);
    assert_eq!(fe.default_backend.as_deref(), Some("app"));
    assert_eq!(fe.options.mode, Mode::Http);
    assert_eq!(fe.options.timeouts.client, Some(Duration::from_secs(30)));
    let be = c.backend("app").unwrap();
    assert_eq!(be.options.retries, 2);
    assert!(be.options.redispatch);
    assert_eq!(be.options.timeouts.connect, Some(Duration::from_secs(5)));
    assert_eq!(be.servers.len(), 3);
    let s = &be.servers[0];
    assert_eq!(
        (s.weight, s.maxconn, s.backup, s.disabled, s.check),
        (10, 100, false, false, false)
    );
    assert_eq!(s.addr, ServerAddr::Ip(sa("10.0.0.1:8080")));
    assert_eq!(
        be.servers[1].addr,
        ServerAddr::Name("app2.internal".into(), 8080)
    );
    assert!(be.servers[1].backup);
    assert_eq!(be.servers[1].weight, 1);
    assert!(be.servers[2].disabled);
}

#[test]
fn model_defaults() {
    let p = ok("frontend f\n bind :80\n default_backend b\nbackend b\n server s 1.1.1.1:80\n");
    let c = &p.config;
    assert_eq!(c.global.bufsize, 16384);
    assert_eq!(c.global.maxaccept, 64);
    assert_eq!(c.global.maxconn, None);
    let o = &c.backends[0].options;
    assert_eq!(o.retries, 3);
    assert_eq!(o.mode, Mode::Tcp);
    assert_eq!(o.http_reuse, HttpReuse::Safe);
    assert_eq!(o.http_conn_mode, HttpConnMode::KeepAlive);
    assert_eq!(o.timeouts, Timeouts::default());
    assert!(o.forwardfor.is_none());
    assert!(!o.redispatch);
}

#[test]
fn listen_split() {
    let p = ok("listen app\n mode http\n bind 127.0.0.1:8000-8002\n server s1 127.0.0.1:9000\n");
    let c = &p.config;
    assert_eq!(c.frontends.len(), 1);
    assert_eq!(c.backends.len(), 1);
    assert_eq!(c.frontends[0].name, "app");
    assert_eq!(c.frontends[0].default_backend.as_deref(), Some("app"));
    assert_eq!(c.frontends[0].binds[0].addrs.len(), 3);
    assert_eq!(c.backends[0].name, "app");
    assert_eq!(c.backends[0].options.mode, Mode::Http);
    assert_eq!(c.backends[0].servers[0].name, "s1");
}

#[test]
fn defaults_inheritance() {
    let p = ok("\
defaults
    mode http
    timeout client 10s
frontend a
    bind :1
    default_backend b
defaults named
    mode http
    timeout client 20s
defaults child from named
    timeout server 7s
backend b
    server s 1.2.3.4:5
frontend c from named
    bind :2
    default_backend b
backend d from child
    server s 1.2.3.4:5
defaults
backend e
    server s 1.2.3.4:5
");
    let c = &p.config;
    let fa = &c.frontends[0];
    assert_eq!(fa.options.mode, Mode::Http);
    assert_eq!(fa.options.timeouts.client, Some(Duration::from_secs(10)));
    // `backend b` follows `defaults child`, the last defaults section.
    let b = c.backend("b").unwrap();
    assert_eq!(b.options.mode, Mode::Http);
    assert_eq!(b.options.timeouts.client, Some(Duration::from_secs(20)));
    assert_eq!(b.options.timeouts.server, Some(Duration::from_secs(7)));
    let fc = &c.frontends[1];
    assert_eq!(fc.options.timeouts.client, Some(Duration::from_secs(20)));
    assert_eq!(fc.options.timeouts.server, None);
    let d = c.backend("d").unwrap();
    assert_eq!(d.options.timeouts.server, Some(Duration::from_secs(7)));
    let e = c.backend("e").unwrap();
    assert_eq!(
        e.options.timeouts,
        Timeouts::default(),
        "an empty defaults resets everything"
    );
}

#[test]
fn defaults_errors() {
    let e = errs("defaults a\ndefaults a\nbackend b from nope\n server s 1.1.1.1:1\n");
    assert!(has(&e, "t.cfg:2: defaults section 'a' has the same name as another defaults section declared at t.cfg:1"));
    assert!(has(
        &e,
        "t.cfg:3: backend 'b': defaults section 'nope' not found"
    ));
}

#[test]
fn default_server_and_default_backend_inherited() {
    let p = ok("\
defaults
    default-server weight 5 maxconn 10
    default_backend b
frontend f
    bind :80
backend b
    default-server backup
    server s1 1.1.1.1:80
    server s2 1.1.1.1:81 weight 2 no-backup
");
    let b = &p.config.backends[0];
    assert_eq!(
        (
            b.servers[0].weight,
            b.servers[0].maxconn,
            b.servers[0].backup
        ),
        (5, 10, true)
    );
    assert_eq!((b.servers[1].weight, b.servers[1].backup), (2, false));
    assert_eq!(p.config.frontends[0].default_backend.as_deref(), Some("b"));
}

#[test]
fn options() {
    let p = ok("\
defaults
    mode http
    option forwardfor except 127.0.0.0/8 header X-Real-IP if-none
    option http-server-close
    http-reuse always
backend b
    server s 1.1.1.1:1
backend c
    no option forwardfor
    no option http-server-close
    option httpclose
    http-reuse never
    server s 1.1.1.1:1
backend d
    option http-keep-alive
    option forwardfor
    server s 1.1.1.1:1
");
    let c = &p.config;
    let b = &c.backends[0].options;
    let ff = b.forwardfor.as_ref().unwrap();
    assert_eq!(ff.header, "X-Real-IP");
    assert!(ff.if_none);
    assert_eq!(ff.except.unwrap().prefix, 8);
    assert_eq!(b.http_conn_mode, HttpConnMode::ServerClose);
    assert_eq!(b.http_reuse, HttpReuse::Always);
    let cc = &c.backends[1].options;
    assert!(cc.forwardfor.is_none());
    assert_eq!(cc.http_conn_mode, HttpConnMode::Close);
    assert_eq!(cc.http_reuse, HttpReuse::Never);
    let d = &c.backends[2].options;
    assert_eq!(d.http_conn_mode, HttpConnMode::KeepAlive);
    assert_eq!(d.forwardfor, Some(ForwardFor::default()));
}

#[test]
fn accept_invalid_options_scoped_as_haproxy() {
    let p = ok("\
defaults
    mode http
    option accept-invalid-http-request
    option accept-invalid-http-response
frontend f
    bind 127.0.0.1:8080
    default_backend b
frontend g
    bind 127.0.0.1:8081
    no option accept-invalid-http-request
    default_backend b
backend b
    server s 1.1.1.1:1
backend c
    no option accept-invalid-http-response
    server s 1.1.1.1:1
");
    let c = &p.config;
    assert!(c.frontends[0].options.accept_invalid_http_request);
    assert!(!c.frontends[1].options.accept_invalid_http_request);
    assert!(c.backends[0].options.accept_invalid_http_response);
    assert!(!c.backends[1].options.accept_invalid_http_response);
    // The request option is a frontend one, the response option a backend
    // one (HAProxy's sections).
    let p = ok("\
backend b
    option accept-invalid-http-request
    server s 1.1.1.1:1
frontend f
    bind 127.0.0.1:8080
    option accept-invalid-http-response
    default_backend b
");
    let w = warns(&p);
    assert!(has(
        &w,
        "t.cfg:2: 'option accept-invalid-http-request' ignored because backend 'b' has no frontend capability."
    ), "{w:?}");
    assert!(has(
        &w,
        "t.cfg:6: 'option accept-invalid-http-response' ignored because frontend 'f' has no backend capability."
    ), "{w:?}");
    assert!(!p.config.backends[0].options.accept_invalid_http_request);
    assert!(!p.config.frontends[0].options.accept_invalid_http_response);
}

#[test]
fn all_timeouts() {
    let p = ok("\
defaults
    timeout connect 1s
    timeout client 2s
    timeout server 3s
    timeout http-request 4s
    timeout http-keep-alive 5s
    timeout tunnel 1h
    timeout client-fin 7s
    timeout server-fin 8
    timeout queue 1m
backend b
    server s 1.1.1.1:1
");
    let t = p.config.backends[0].options.timeouts;
    assert_eq!(t.connect, Some(Duration::from_secs(1)));
    assert_eq!(t.client, Some(Duration::from_secs(2)));
    assert_eq!(t.server, Some(Duration::from_secs(3)));
    assert_eq!(t.http_request, Some(Duration::from_secs(4)));
    assert_eq!(t.http_keep_alive, Some(Duration::from_secs(5)));
    assert_eq!(t.tunnel, Some(Duration::from_secs(3600)));
    assert_eq!(t.client_fin, Some(Duration::from_secs(7)));
    assert_eq!(t.server_fin, Some(Duration::from_millis(8)));
    assert_eq!(t.queue, Some(Duration::from_secs(60)));
}

#[test]
fn maxconn_retries_disabled() {
    let p = ok("frontend f\n bind :1\n maxconn 50\n disabled\nbackend b\n retries 0\n server s 1.1.1.1:1\n");
    assert_eq!(p.config.frontends[0].options.maxconn, Some(50));
    assert!(p.config.frontends[0].disabled);
    assert_eq!(p.config.backends[0].options.retries, 0);
}

#[test]
fn error_messages() {
    let cases: &[(&str, &str)] = &[
        ("global\n nbproc 2\n", "t.cfg:2: nbproc is not supported any more since HAProxy 2.5"),
        ("global\n debug\n", "t.cfg:2: unknown keyword 'debug' in 'global' section"),
        ("global\n maxconns 5\n", "unknown keyword 'maxconns' in 'global' section; did you mean 'maxconn'?"),
        ("global\n maxconnrate 5\n", "'maxconnrate' is not implemented yet in Fairlead"),
        ("global\n maxconn x\n", "'maxconn': 'maxconn' expects an unsigned integer (got 'x')"),
        ("global\n nbthread 0\n", "must be between 1"),
        ("global\n hard-stop-after 5x\n", "invalid unit 'x' in time value '5x'"),
        ("global\n io-uring yes\n", "t.cfg:2: 'io-uring': expects 'on' or 'off' (got 'yes')"),
        ("global\n tune.io-uring.recv-bufs 0\n", "must be between 1 and 32768 (got 0)"),
        ("maxconn 5\n", "t.cfg:1: unknown keyword 'maxconn' out of section"),
        ("backend b\n mode udp\n", "unknown proxy mode 'udp'."),
        ("backend b\n mode health\n", "'mode health' doesn't exist anymore"),
        ("backend b\n balance rdp-cookie(\n", "'balance': rdp-cookie : missing cookie name."),
        ("backend b\n balance hash\n", "'balance': balance hash is not implemented yet in Fairlead"),
        ("backend b\n persist\n", "'persist': missing persist method."),
        ("backend b\n persist cookie\n", "'persist': unknown persist method."),
        ("backend b\n persist rdp-cookie()\n", "'persist': persist rdp-cookie(name)' requires an rdp cookie name."),
        ("backend b\n balance hdr()\n", "t.cfg:2: 'balance': hdr requires an http header field name."),
        ("backend b\n balance magic\n", "unknown load balancing algorithm 'magic'"),
        ("backend b\n timeout connect 5q\n", "'timeout connect': invalid unit 'q'"),
        ("backend b\n timeout foo 5s\n", "'timeout' supports 'client'"),
        ("backend b\n contimeout 5s\n", "use 'timeout connect' instead"),
        ("backend b\n srvtimeout 5s\n", "use 'timeout server' instead"),
        ("frontend f\n bind :1\n clitimeout 5s\n", "use 'timeout client' instead"),
        ("frontend f\n bind :1\n reqadd X-Foo:\\ bar\n", "not supported any more since HAProxy 2.1; use 'http-request add-header'"),
        ("backend b\n rspadd X-Foo:\\ bar\n", "use 'http-response add-header'"),
        ("frontend f\n bind :1\n stick-table type ip\n", "'stick-table': stick-table: missing size."),
        ("frontend f\n bind :1\n stick-table type ip size 1k\n stick-table type ip size 1k\n", "only one stick-table per proxy section"),
        ("frontend f\n bind :1\n use_backend b if a\n", "no such ACL : 'a'"),
        ("frontend f\n bind :1\n http-request track-sc0 src\n", "'http-request track-sc0': no table declared in this section"),
        ("frontend f\n bind :1\n tcp-request connection track-sc0 src\n", "'tcp-request connection track-sc0': no table declared in this section"),
        ("frontend f\n bind :1\n http-request track-sc0 src table nope\n", "unable to find table 'nope'"),
        ("defaults\n use_backend x\n", "'use_backend' not allowed in 'defaults' section."),
        ("backend b\n option abortonclose\n", "'option abortonclose' is not implemented yet in Fairlead"),
        ("frontend f\n bind :1\n option nosuch\n", "unknown option 'nosuch' in 'frontend' section"),
        ("frontend f\n bind :1\n option httplogg\n", "did you mean 'option httplog'?"),
        ("frontend f\n bind :1\n frobnicate\n", "unknown keyword 'frobnicate' in 'frontend' section"),
        ("frontend f\n bind :80 accept-netscaler-cip 1\n", "option 'accept-netscaler-cip' is not implemented yet in Fairlead"),
        ("frontend f\n bind :80 bogus\n", "unknown keyword 'bogus'"),
        ("frontend f\n bind\n", "'bind' expects"),
        ("frontend f\n bind localhost:80\n", "host names in 'bind'"),
        ("backend b\n server s 1.1.1.1:80 weight 300\n", "weight 300 is out of range (0 to 256)"),
        ("backend b\n server s 1.1.1.1:80 ssl\n", "t.cfg:2: server 'b/s': verify is enabled by default but no CA file specified."),
        ("backend b\n server s 1.1.1.1:80 tcp-ut 1s\n", "option 'tcp-ut' is not implemented yet in Fairlead"),
        ("backend b\n server s 1.1.1.1:80 proxy-v2-options ssl,bogus\n", "'bogus' is not a valid option"),
        ("backend b\n server s 1.1.1.1:80 bogus\n", "'server s': unknown keyword 'bogus'"),
        ("backend b\n server s 1.1.1.1:80 weight\n", "'weight' expects an argument"),
        ("backend b\n server s\n", "'server' expects <name> and <addr>[:<port>]"),
        ("backend b\n server s 1.1.1.1:80\n server s 1.1.1.2:80\n", "server name 's' is already used"),
        ("backend b\n server s 1.1.1.1:80 inter 5x check\n", "invalid unit 'x'"),
        ("backend b\n bind :80\n", "'bind' not allowed in 'backend' section."),
        ("frontend f\n bind :1\n server s 1.1.1.1:1\n", "'server' not allowed in 'frontend' section."),
        ("defaults\n bind :80\n", "'bind' not allowed in 'defaults' section."),
        ("defaults\n description x\n", "'description' not allowed in 'defaults' section."),
        ("frontend f\n default_backend nope\n bind :1\n", "t.cfg:2: frontend 'f': unable to find required default_backend: 'nope'."),
        ("frontend f\n mode http\n bind :1\n default_backend b\nbackend b\n server s 1.1.1.1:1\n", "unable to use backend 'b' with wrong mode, required: http, has: tcp."),
        ("frontend f\n mode http\n", "t.cfg:1: frontend 'f' has no 'bind' directive"),
        ("frontend f\n bind :1\nfrontend f\n bind :2\n", "t.cfg:3: frontend 'f' has the same name as frontend 'f' declared at t.cfg:1"),
        ("backend b\nlisten b\n bind :1\n", "listen 'b' has the same name as backend 'b'"),
        ("listen l 0.0.0.0:80\n", "please use the 'bind' keyword for listening addresses."),
        ("frontend\n", "'frontend' expects a name"),
        ("frontend a/b\n bind :1\n", "invalid character '/' in frontend name 'a/b'"),
        ("backend b\n http-reuse sometimes\n", "expects 'never', 'safe', 'aggressive' or 'always'"),
        ("backend b\n option forwardfor except nope\n", "invalid network 'nope'"),
        ("backend b\n option forwardfor bogus\n", "unknown parameter 'bogus'"),
        ("backend b\n retries 1 2\n", "expects exactly one argument (got 2)"),
        ("backend b\n no balance\n", "'no' is not supported for 'balance'"),
        ("backend b\n server s 1.1.1.1:80\n weight 3\n", "unknown keyword 'weight' in 'backend' section"),
        ("backend b\n x \"unterminated\n", "t.cfg:2: unterminated double quote"),
        (".if 1\n", "t.cfg:1: '.if' block is not closed"),
        (".endif\n", "t.cfg:1: '.endif' without a matching '.if'"),
        (".else\n", "'.else' without a matching '.if'"),
        (".alert stop here\n", "t.cfg:1: stop here"),
        (".if nope(1)\n.endif\n", "unknown predicate 'nope'"),
        ("global\n maxconn 1", "t.cfg:2: missing LF on last line"),
        ("global\n stats foo\n", "'stats' only supports 'socket'"),
        ("global\n cpu-map 2/1 0\n", "only process 1 exists"),
        ("global\n tune.bufsize 10\n", "must be between 1024"),
        ("global\n tune.maxaccept 0\n", "must be -1 (unlimited) or a positive integer"),
        ("global\n tune.listener.multi-queue maybe\n", "expects 'on' or 'off' (got 'maybe')"),
        ("global\n tune.h2.header-table-size 70000\n", "must be between 0 and 65536 (got 70000)"),
        ("global\n tune.h2.max-frame-size 1000\n", "must be between 16384 and 16777215"),
        ("global\n tune.h2.initial-window-size -1\n", "expects an unsigned integer"),
        ("global\n tune.h2.fe.max-total-streams\n", "'tune.h2.fe.max-total-streams': expects one argument"),
        ("global\n tune.h2.bogus 1\n", "unknown keyword 'tune.h2.bogus'"),
        ("global\n log\n", "'log': expects <address>"),
        ("backend b\n mode\n", "'mode': expects exactly one argument (got 0)"),
        ("backend b\n option redispatch x\n", "'option redispatch': expects an integer interval (got 'x')"),
        ("backend b\n server s 1.1.1.1\n", "has no port"),
    ];
    for (cfg, want) in cases {
        let e = errs(cfg);
        assert!(has(&e, want), "config {cfg:?}: wanted {want:?}, got {e:#?}");
        for d in &e {
            assert!(d.starts_with("[ALERT] t.cfg:"), "{d}");
        }
    }
}

#[test]
fn warnings() {
    let p = ok("\
global
    log 127.0.0.1:514 local0 info
    chroot /var/empty
    stats socket /run/s.sock mode 600 level admin
    stats timeout 30s
    master-worker
    ssl-default-bind-ciphers HIGH
.warning hello world
defaults
    log global
    option httplog
    option dontlognull
    option httpchk GET /
    timeout check 5s
    no option accept-invalid-http-request
frontend f
    bind :80
    balance roundrobin
    default_backend b
backend b
    timeout client 5s
    server s 1.1.1.1:80 check inter 2s rise 2 fall 3
backend empty
userlist users
    user admin insecure-password x
");
    let w = warns(&p);
    assert!(!has(&w, "t.cfg:2:"));
    assert!(has(&w, "t.cfg:3: 'chroot': chroot is not applied yet"));
    assert!(!has(&w, "t.cfg:4:"));
    assert!(!has(&w, "t.cfg:5:"));
    assert_eq!(p.config.global.stats_sockets.len(), 1);
    assert!(!has(&w, "t.cfg:6:"), "master-worker is implemented");
    assert!(p.config.global.master_worker);
    assert!(!has(&w, "t.cfg:7:"));
    assert!(has(&w, "t.cfg:8: hello world"));
    assert!(!has(&w, "t.cfg:10:"));
    // The tcp-mode frontend inherits 'option httplog': tcplog instead.
    assert!(has(
        &w,
        "t.cfg:11: 'option httplog' not usable with frontend 'f' (needs 'mode http'). Falling back to 'option tcplog'."
    ));
    assert!(!has(&w, "t.cfg:12:"));
    assert!(!has(&w, "t.cfg:13:"));
    assert!(!has(&w, "t.cfg:14:"));
    // Implemented now: 'no option' is an ordinary setting, no warning.
    assert!(!has(&w, "t.cfg:15:"));
    assert!(has(
        &w,
        "t.cfg:18: 'balance' ignored because frontend 'f' has no backend capability."
    ));
    assert!(has(
        &w,
        "t.cfg:21: 'timeout client' ignored because backend 'b' has no frontend capability."
    ));
    assert!(!has(&w, "health checks are not implemented"));
    assert!(has(&w, "t.cfg:23: backend 'empty' has no server"));
    // userlist sections are compiled with the rules: no warning.
    assert!(!has(&w, "t.cfg:24:"), "{w:?}");
    assert_eq!(w.iter().filter(|l| l.contains("t.cfg:22:")).count(), 0);
    assert!(w.iter().all(|l| l.starts_with("[WARNING] ")));
    let c = &p.config;
    assert_eq!(c.global.logs.len(), 1);
    assert_eq!(c.global.logs[0].args, ["127.0.0.1:514", "local0", "info"]);
    assert_eq!(c.global.logs[0].location.line, 2);
    assert!(c.backends[0].servers[0].check);
    assert_eq!(c.other_sections.len(), 1);
    let u = &c.other_sections[0];
    assert_eq!(
        (u.kind.as_str(), u.name.as_str(), u.location.line),
        ("userlist", "users", 24)
    );
    assert_eq!(u.lines[0].1, ["user", "admin", "insecure-password", "x"]);
}

#[test]
fn all_errors_reported_in_file_order() {
    let sources = vec![
        Source {
            name: "a.cfg".into(),
            text: "frontend f\n bind :80\n default_backend nope\n bogus1\n".into(),
        },
        Source {
            name: "b.cfg".into(),
            text: "backend b\n bogus2\n server s 1.1.1.1:80 weight 999\n mode\n".into(),
        },
    ];
    let d = parse(&sources, &no_env).unwrap_err();
    let alerts: Vec<String> = d
        .iter()
        .filter(|d| d.level == Level::Alert)
        .map(|d| d.to_string())
        .collect();
    assert_eq!(alerts.len(), 5, "{alerts:#?}");
    assert!(alerts[0].starts_with("[ALERT] a.cfg:3: "));
    assert!(alerts[1].starts_with("[ALERT] a.cfg:4: unknown keyword 'bogus1'"));
    assert!(alerts[2].starts_with("[ALERT] b.cfg:2: unknown keyword 'bogus2'"));
    assert!(alerts[3].starts_with("[ALERT] b.cfg:3: "));
    assert!(alerts[4].starts_with("[ALERT] b.cfg:4: "));
}

#[test]
fn sources_concatenate() {
    let sources = vec![
        Source {
            name: "a.cfg".into(),
            text: "defaults\n mode http\nfrontend f\n bind :80\n".into(),
        },
        Source {
            name: "b.cfg".into(),
            text: " default_backend b\nbackend b\n server s 1.1.1.1:80\n".into(),
        },
    ];
    let p = parse(&sources, &no_env).unwrap();
    assert_eq!(p.config.frontends[0].default_backend.as_deref(), Some("b"));
    assert_eq!(p.config.backends[0].options.mode, Mode::Http);
}

#[test]
fn env_and_conditionals() {
    let env = |n: &str| match n {
        "PORT" => Some("8443".to_string()),
        "BACKEND_HOST" => Some("10.1.1.1".to_string()),
        "MODE" => Some("http".to_string()),
        _ => None,
    };
    let text = "\
global
    setenv EXTRA 9000
.if defined(PORT) && streq(\"$MODE\",http)
    maxconn 10
.elif 1
    maxconn 20
.else
    maxconn 30
.endif
.if version_atleast(2.4) && !feature(OPENSSL)
    nbthread 2
.endif
.if version_before(2.6)
    nbthread 99
.endif
.if defined(NOPE)
    this would be an error
    .if 1
    neither is this
    .endif
.else
    daemon
.endif
frontend f
    mode \"${MODE}\"
    bind \":${PORT}\" \":${EXTRA}\" ':$PORT'
    bind :${MISSING-81}
    default_backend b
backend b
    mode http
    server s ${BACKEND_HOST}:80
";
    let text = text.replace(
        "\":${PORT}\" \":${EXTRA}\" ':$PORT'",
        "\":${PORT},:${EXTRA}\"",
    );
    let p = parse(&src(&text), &env).unwrap();
    let c = &p.config;
    assert_eq!(c.global.maxconn, Some(10));
    assert_eq!(c.global.nbthread, Some(2));
    assert!(c.global.daemon);
    assert_eq!(c.frontends[0].options.mode, Mode::Http);
    assert_eq!(
        c.frontends[0].binds[0].addrs,
        vec![sa("0.0.0.0:8443"), sa("0.0.0.0:9000")]
    );
    assert_eq!(c.frontends[0].binds[1].addrs, vec![sa("0.0.0.0:81")]);
    assert_eq!(
        c.backends[0].servers[0].addr,
        ServerAddr::Ip(sa("10.1.1.1:80"))
    );
}

#[test]
fn strong_quotes_do_not_expand() {
    let env = |_: &str| Some("x".to_string());
    let e = match parse(&src("frontend f\n bind ':$PORT'\n"), &env) {
        Err(d) => d.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        Ok(_) => panic!(),
    };
    assert!(has(&e, "invalid port '$PORT'"), "{e:?}");
}

#[test]
fn unsetenv_and_resetenv() {
    let env = |n: &str| match n {
        "A" => Some("1".to_string()),
        "B" => Some("2".to_string()),
        _ => None,
    };
    let p = parse(
        &src("global\n unsetenv A\n.if defined(A)\n maxconn 1\n.endif\n resetenv C\n.if defined(B)\n nbthread 1\n.endif\n presetenv C 3\n ulimit-n $C\n"),
        &env,
    )
    .unwrap();
    assert_eq!(p.config.global.maxconn, None);
    assert_eq!(p.config.global.nbthread, None);
    assert_eq!(p.config.global.ulimit_n, Some(3));
}

#[test]
fn line_limits() {
    let long = format!("global\n description {}\n", "x".repeat(3000));
    assert!(has(&errs(&long), "t.cfg:2: line too long"));
    let many = format!("global\n description {}\n", vec!["w"; 70].join(" "));
    assert!(has(&errs(&many), "t.cfg:2: too many words"));
}

#[test]
fn indented_sections_and_comments() {
    let p = ok("  # comment\n\tglobal # trailing\n\t\tmaxconn 7 # c\n  frontend f\n  bind :80\r\n backend b\n server s 1.1.1.1:1\n");
    assert_eq!(p.config.global.maxconn, Some(7));
    assert_eq!(p.config.frontends[0].binds.len(), 1);
}

#[test]
fn parse_never_panics_on_odd_input() {
    for text in [
        "",
        "\n",
        "\0",
        "\"",
        "'",
        "\\",
        "$",
        "${",
        ".if",
        ".if (",
        "frontend",
        "bind",
        "server",
        "backend b\nserver",
        "backend b\nserver s [",
        "backend b\nserver s [::1",
        "listen x\nbind ,",
        "global\ncpu-map auto:",
        "\u{feff}global",
    ] {
        let _ = parse(&src(text), &no_env);
    }
}

#[test]
fn keyword_support_lists_implemented() {
    let all = keyword_support();
    for (sec, kw) in [
        ("global", "maxconn"),
        ("global", "cpu-map"),
        ("frontend", "bind"),
        ("backend", "server"),
        ("backend", "balance"),
        ("defaults", "timeout connect"),
        ("listen", "option forwardfor"),
    ] {
        assert!(
            all.iter()
                .any(|k| k.section == sec && k.keyword == kw && k.status == Support::Implemented),
            "{sec} {kw}"
        );
    }
    assert!(all
        .iter()
        .any(|k| k.keyword == "option httplog" && k.status == Support::Implemented));
    assert!(all
        .iter()
        .any(|k| k.keyword == "option logasap" && k.status == Support::Warning));
    assert!(all
        .iter()
        .any(|k| k.keyword == "http-request" && k.status == Support::Implemented));
    assert!(all
        .iter()
        .any(|k| k.keyword == "stick-table" && k.status == Support::Implemented));
}

#[test]
fn stick_tables_are_built_per_proxy() {
    let c = ok(
        "frontend f\n bind :1\n stick-table type ip size 100k expire 30s store http_req_rate(10s)\n\
backend b\n stick-table type string len 32 size 1k store gpc0\nbackend c\n",
    )
    .config;
    let names: Vec<&str> = c.tables.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["f", "b"]);
    assert_eq!(c.tables[0].spec().size, 102400);
    assert_eq!(c.tables[0].spec().expire_ms, Some(30000));
    assert!(c.tables[1].spec().stores(fairlead_stick::DataType::Gpc0));
}

/// As HAProxy 2.6: a table that `stick` rules use stores `server_id`
/// and `server_key` without saying so; other tables do not.
#[test]
fn stick_rules_add_server_data_to_their_tables() {
    use fairlead_stick::DataType::{ServerId, ServerKey};
    let c = ok(
        "backend b\n stick-table type ip size 1k\n stick on src\n server s 127.0.0.1:1\n\
backend t\n stick-table type string size 1k\n\
backend u\n stick match req.hdr(x) table t\n server s 127.0.0.1:1\n\
backend v\n stick-table type ip size 1k store gpc0\n\
peers mesh\n peer me 127.0.0.1:10000\n table p type ip size 1k\n table q type ip size 1k\n\
backend w\n stick on src table mesh/p\n server s 127.0.0.1:1\n",
    )
    .config;
    let by = |n: &str| {
        c.tables
            .iter()
            .find(|t| t.name() == n)
            .unwrap()
            .spec()
            .clone()
    };
    for n in ["b", "t", "mesh/p"] {
        assert!(by(n).stores(ServerId) && by(n).stores(ServerKey), "{n}");
    }
    assert!(!by("v").stores(ServerId));
    assert!(
        !by("mesh/q").stores(ServerId),
        "a peers table no stick rule names"
    );
    let kw = crate::keyword_support();
    assert!(kw
        .iter()
        .any(|k| k.keyword == "stick" && k.status == Support::Implemented));
}

#[test]
fn accept_proxy_and_send_proxy_are_parsed() {
    let c = ok(
        "frontend f\n bind :1 accept-proxy\n bind :2\nbackend b\n server a 1.1.1.1:80 send-proxy\n\
 server b 1.1.1.1:81 send-proxy-v2\n server c 1.1.1.1:82\n",
    )
    .config;
    let f = &c.frontends[0];
    assert!(f.binds[0].accept_proxy);
    assert!(!f.binds[1].accept_proxy);
    let s: Vec<u8> = c.backends[0].servers.iter().map(|s| s.send_proxy).collect();
    assert_eq!(s, [1, 2, 0]);
}

/// `tune.h2.*`: the side-specific keyword wins over the common one
/// whatever their order; unset values give HAProxy's defaults.
#[test]
fn tune_h2_settings() {
    let d = crate::model::H2Tune::default();
    assert_eq!(
        (
            d.header_table_size(),
            d.initial_window_size(true),
            d.max_concurrent_streams(false)
        ),
        (4096, 65_535, 100)
    );
    assert_eq!(
        (
            d.max_frame_size(),
            d.fe_max_total_streams(),
            d.glitches_threshold(true)
        ),
        (16_384, 0, 200)
    );
    let p = ok("\
global
    tune.h2.fe.initial-window-size 1000000
    tune.h2.initial-window-size 200000
    tune.h2.max-concurrent-streams 50
    tune.h2.be.max-concurrent-streams 8
    tune.h2.header-table-size 8192
    tune.h2.max-frame-size 32768
    tune.h2.fe.max-total-streams 1000
    tune.h2.fe.glitches-threshold 0
");
    let h = p.config.global.h2;
    assert_eq!(h.initial_window_size(true), 1_000_000);
    assert_eq!(h.initial_window_size(false), 200_000);
    assert_eq!(h.max_concurrent_streams(true), 50);
    assert_eq!(h.max_concurrent_streams(false), 8);
    assert_eq!(h.header_table_size(), 8192);
    assert_eq!(h.max_frame_size(), 32_768);
    assert_eq!(h.fe_max_total_streams(), 1000);
    assert_eq!(h.glitches_threshold(true), 0);
    assert_eq!(h.glitches_threshold(false), 200);
}

/// `option http-no-delay` is read in defaults, frontends and backends,
/// and `no option http-no-delay` turns an inherited one off.
#[test]
fn http_no_delay_option() {
    let c = ok("defaults\n mode http\n option http-no-delay\n\
frontend f\n bind 127.0.0.1:80\n default_backend b\n\
backend b\n no option http-no-delay\n server s 127.0.0.1:1\n\
backend c\n server s 127.0.0.1:1\n")
    .config;
    assert!(c.frontends[0].options.http_no_delay);
    let by = |n: &str| c.backends.iter().find(|b| b.name == n).unwrap();
    assert!(!by("b").options.http_no_delay);
    assert!(by("c").options.http_no_delay);
    let kw = crate::keyword_support();
    assert!(kw
        .iter()
        .any(|k| k.keyword == "option http-no-delay" && k.status == Support::Implemented));
}

/// `option tcp-smart-accept` is automatic (on in `mode http`, off in
/// `mode tcp`) unless set; `no option` turns it off, `default option`
/// back to automatic; a backend has no frontend capability for it.
#[test]
fn tcp_smart_accept_option() {
    let p = ok("defaults\n mode http\n\
frontend auto_http\n bind 127.0.0.1:80\n default_backend b\n\
frontend auto_tcp\n mode tcp\n bind 127.0.0.1:81\n default_backend t\n\
frontend off_http\n no option tcp-smart-accept\n bind 127.0.0.1:82\n default_backend b\n\
frontend on_tcp\n mode tcp\n option tcp-smart-accept\n bind 127.0.0.1:83\n default_backend t\n\
frontend back_auto\n no option tcp-smart-accept\n default option tcp-smart-accept\n bind 127.0.0.1:84\n default_backend b\n\
backend b\n option tcp-smart-accept\n server s 127.0.0.1:1\n\
backend t\n mode tcp\n server s 127.0.0.1:1\n");
    let fe = |n: &str| p.config.frontends.iter().find(|f| f.name == n).unwrap();
    let got: Vec<(Option<bool>, bool)> =
        ["auto_http", "auto_tcp", "off_http", "on_tcp", "back_auto"]
            .iter()
            .map(|n| (fe(n).options.tcp_smart_accept, fe(n).options.smart_accept()))
            .collect();
    assert_eq!(
        got,
        [
            (None, true),
            (None, false),
            (Some(false), false),
            (Some(true), true),
            (None, true)
        ]
    );
    assert!(has(
        &warns(&p),
        "'option tcp-smart-accept' ignored because backend 'b' has no frontend capability"
    ));
    // Inherited from defaults, turned off in one frontend.
    let p = ok("defaults\n mode tcp\n option tcp-smart-accept\n\
frontend a\n bind 127.0.0.1:80\n default_backend t\n\
frontend b\n no option tcp-smart-accept\n bind 127.0.0.1:81\n default_backend t\n\
backend t\n server s 127.0.0.1:1\n");
    assert!(p.config.frontends[0].options.smart_accept());
    assert!(!p.config.frontends[1].options.smart_accept());
    assert!(has(
        &errs("frontend f\n option tcp-smart-accept on\n bind 127.0.0.1:80\n"),
        "takes no argument"
    ));
}

/// `option tcp-smart-connect` is off unless set; `no option` turns an
/// inherited one off.
#[test]
fn tcp_smart_connect_option() {
    let c = ok("defaults\n mode http\n option tcp-smart-connect\n\
frontend f\n bind 127.0.0.1:80\n default_backend b\n\
backend b\n no option tcp-smart-connect\n server s 127.0.0.1:1\n\
backend c\n server s 127.0.0.1:1\n")
    .config;
    let by = |n: &str| c.backends.iter().find(|b| b.name == n).unwrap();
    assert!(!by("b").options.tcp_smart_connect);
    assert!(by("c").options.tcp_smart_connect);
    let c = ok(
        "frontend f\n bind 127.0.0.1:80\n default_backend b\nbackend b\n server s 127.0.0.1:1\n",
    )
    .config;
    assert!(!c.backends[0].options.tcp_smart_connect);
    let kw = crate::keyword_support();
    for name in ["option tcp-smart-accept", "option tcp-smart-connect"] {
        assert!(kw
            .iter()
            .any(|k| k.keyword == name && k.status == Support::Implemented));
    }
}
