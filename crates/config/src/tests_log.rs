//! Logging keywords: `log`, `log-tag`, `log-send-hostname`, `log-format`,
//! `option httplog|tcplog|httplog-json|dontlognull|dontlog-normal|
//! log-separate-errors`.

#[allow(unused_imports)]
use crate::test_util::*;
use crate::*;

fn ok(text: &str) -> Parsed {
    parse_text(text).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

#[test]
fn global_and_inherited_targets() {
    let p = ok("\
global
    log 127.0.0.1:514 local0 info
    log stdout format raw daemon
    log-tag edge
    log-send-hostname lb1
defaults
    mode http
    log global
    option httplog
    option dontlognull
frontend f
    bind :80
    log /dev/log len 4096 local1 notice err
    log-tag front
    default_backend b
backend b
    no log
    server s 1.1.1.1:80
listen l
    bind :81
    log-format \"%ci %ST\"
    server s 1.1.1.1:80
");
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let g = &p.config.global;
    assert_eq!(g.logs.len(), 2);
    assert_eq!(
        g.logs[0].spec.addr,
        LogAddr::Udp("127.0.0.1:514".parse().unwrap())
    );
    assert_eq!(g.logs[0].spec.level, fairlead_log::Level::Info);
    assert_eq!(g.logs[1].spec.addr, LogAddr::Stdout);
    assert_eq!(g.logs[1].spec.format, Some(SyslogFormat::Raw));
    assert_eq!(g.log_tag.as_deref(), Some("edge"));
    assert_eq!(g.log_send_hostname.as_deref(), Some("lb1"));
    let f = &p.config.frontends[0].options.log;
    assert!(f.global);
    assert_eq!(f.targets.len(), 3);
    assert_eq!(f.targets[2].spec.addr, LogAddr::Unix("/dev/log".into()));
    assert_eq!(
        (f.targets[2].spec.len, f.targets[2].location.line),
        (4096, 13)
    );
    assert_eq!(f.style, LogStyle::Http);
    assert_eq!(f.style.format_string(), Some(fairlead_log::HTTPLOG_FORMAT));
    assert!(f.dontlognull && !f.dontlog_normal && !f.json);
    assert_eq!(f.tag.as_deref(), Some("front"));
    let b = &p.config.backends[0].options.log;
    assert!(b.targets.is_empty() && !b.global);
    let l = &p.config.frontends[1].options.log;
    assert!(l.targets.len() == 2 && l.tag.is_none());
}

#[test]
fn formats_and_options() {
    let p = ok("\
defaults
    mode http
frontend a
    bind :1
    option httplog clf
frontend b
    bind :2
    option httplog
    log-format \"%ci:%cp %r\"
frontend c
    bind :3
    log-format %ci
    option httplog-json
    option dontlog-normal
    option log-separate-errors
frontend d
    bind :4
    option tcplog
    no option tcplog
frontend e
    mode tcp
    bind :5
    option tcplog
    log-format %ci\\ %B
");
    let log = |i: usize| &p.config.frontends[i].options.log;
    assert_eq!(log(0).style, LogStyle::HttpClf);
    assert_eq!(log(1).style, LogStyle::Custom("%ci:%cp %r".into()));
    assert_eq!((log(2).style.clone(), log(2).json), (LogStyle::Http, true));
    assert!(log(2).dontlog_normal && log(2).separate_errors);
    assert_eq!(log(3).style, LogStyle::Connect);
    assert_eq!(log(4).style, LogStyle::Custom("%ci %B".into()));
    let mut out = Vec::new();
    log(4)
        .style
        .compile()
        .render(&fairlead_log::LogRecord::default(), &mut out);
    assert_eq!(out, b"- 0");
    assert_eq!(
        LogStyle::Connect.compile().source(),
        fairlead_log::DEFAULT_FORMAT
    );
}

#[test]
fn tcp_mode_falls_back_or_rejects_http_variables() {
    let p = ok("\
defaults
    option httplog-json
frontend f
    bind :1
");
    let f = &p.config.frontends[0].options.log;
    assert_eq!((f.style.clone(), f.json), (LogStyle::Tcp, true));
    assert_eq!(
        p.diagnostics[0].to_string(),
        "[WARNING] t.cfg:2: 'option httplog-json' not usable with frontend 'f' (needs 'mode http'). Falling back to 'option tcplog'."
    );
    let e = alerts("frontend f\n bind :1\n log-format \"%ci %HM\"\n");
    assert_eq!(
        e,
        ["[ALERT] t.cfg:3: frontend 'f': 'log-format': format variable 'HM' is reserved for HTTP mode"]
    );
    // Backends do not log with the format: no check there.
    ok("defaults\n log-format %r\nbackend b\n");
    // Sample expressions the proxy evaluates when the line is emitted:
    // variables, the method and the status, any converters.
    let p = ok("defaults\n mode http\nfrontend f\n bind :1\n log-format \"%[var(txn.h),upper] %[status] %[method,lower] %[src]\"\n");
    assert_eq!(p.config.frontends[0].rules.log_samples.len(), 4);
    // unique-id-format (HAProxy's documented example) and its header,
    // inherited from defaults like the rules.
    let p = ok("defaults\n mode http\n unique-id-format %{+X}o\\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid\n unique-id-header X-Unique-ID\nfrontend f\n bind :1\n");
    let r = &p.config.frontends[0].rules;
    assert!(r.unique_id.is_some());
    assert_eq!(r.unique_id_header.as_deref(), Some("X-Unique-ID"));
}

#[test]
fn errors() {
    let cases = [
        (
            "global\n log global\n",
            "'log global' is only valid in proxy sections",
        ),
        (
            "global\n log 1.2.3.4 local9\n",
            "t.cfg:2: 'log': unknown log facility 'local9'",
        ),
        (
            "global\n log ring@r local0\n",
            "'ring@' log targets are not implemented yet in Fairlead",
        ),
        (
            "global\n log 1.2.3.4 sample 1:2 local0\n",
            "'log': log sampling ('sample') is not implemented yet in Fairlead",
        ),
        ("global\n log-tag\n", "'log-tag': expects one argument"),
        (
            "global\n log-send-hostname a b\n",
            "'log-send-hostname': expects at most one argument",
        ),
        (
            "frontend f\n bind :1\n log global local0\n",
            "'log': 'log global' takes no other parameter",
        ),
        (
            "frontend f\n bind :1\n no log x\n",
            "'no log': 'no log' does not expect arguments",
        ),
        (
            "frontend f\n bind :1\n log stdout format fancy daemon\n",
            "unknown log format 'fancy'",
        ),
        (
            "frontend f\n bind :1\n log-format %ci %cp\n",
            "'log-format': expects only one argument, don't forget to escape spaces!",
        ),
        (
            "frontend f\n bind :1\n log-format %zz\n",
            "'log-format': no such format variable 'zz'",
        ),
        (
            "frontend f\n bind :1\n log-format %[bogus(1)]\n",
            "'log-format': failed to parse sample expression '%[bogus(1)]'",
        ),
        (
            "defaults\n mode http\nfrontend f\n bind :1\n log-format %[req.hdr(host),lower]\n",
            "failed to parse log-format : sample fetch <req.hdr(host),lower> may not be reliably used here because it needs 'HTTP request headers' which is not available here.",
        ),
        (
            "frontend f\n bind :1\n unique-id-format\n",
            "unique-id-format expects an argument.",
        ),
        (
            "defaults\n mode http\nfrontend f\n bind :1\n unique-id-format %[res.hdr(x)]\n",
            "failed to parse unique-id : ",
        ),
        (
            "frontend f\n bind :1\n option httplog json\n",
            "'option httplog': expects no argument or 'clf' (got 'json')",
        ),
        (
            "frontend f\n bind :1\n option tcplog x\n",
            "'option tcplog': takes no argument",
        ),
        (
            "frontend f\n bind :1\n option dontlognull 1\n",
            "'option dontlognull': takes no argument",
        ),
        (
            "backend b\n log-format %ci\n",
            "'log-format' ignored because backend 'b' has no frontend capability.",
        ),
    ];
    for (cfg, want) in cases {
        let got: Vec<String> = match parse_text(cfg) {
            Ok(p) => p.diagnostics.iter().map(|d| d.to_string()).collect(),
            Err(d) => d.iter().map(|d| d.to_string()).collect(),
        };
        assert!(
            got.iter().any(|l| l.contains(want)),
            "config {cfg:?}: wanted {want:?}, got {got:#?}"
        );
    }
}

#[test]
fn catalog_status() {
    let all = keyword_support();
    let status = |sec: &str, kw: &str| {
        all.iter()
            .find(|k| k.section == sec && k.keyword == kw)
            .map(|k| k.status)
    };
    for (sec, kw) in [
        ("global", "log"),
        ("global", "log-tag"),
        ("global", "log-send-hostname"),
        ("frontend", "log"),
        ("backend", "log"),
        ("defaults", "log-format"),
        ("listen", "option httplog"),
        ("frontend", "option httplog-json"),
        ("frontend", "option tcplog"),
        ("frontend", "option dontlognull"),
        ("frontend", "option dontlog-normal"),
        ("frontend", "option log-separate-errors"),
    ] {
        assert_eq!(status(sec, kw), Some(Support::Implemented), "{sec} {kw}");
    }
    assert_eq!(
        status("frontend", "option httpslog"),
        Some(Support::Implemented)
    );
    let p = ok("frontend f\n mode http\n bind :1\n option httpslog\n");
    assert_eq!(
        p.config.frontends[0].options.log.style.format_string(),
        Some(fairlead_log::HTTPSLOG_FORMAT)
    );
}

/// `unique-id-format` in TCP mode, checked as HAProxy 2.6.12 (`haproxy
/// -c` on the same files): it loads; variables of HTTP mode are refused
/// by the frontend's mode (not the defaults section's); TCP contents
/// fetches are warned about in both modes; HTTP fetches load silently.
#[test]
fn unique_id_format_in_tcp_mode() {
    let p = ok("defaults\n mode tcp\n unique-id-format ID-%ci-%fp-x_%[src]_%[ssl_fc_sni]\nfrontend f\n bind :1\n");
    let u = p.config.frontends[0].rules.unique_id.as_ref().unwrap();
    assert_eq!(u.format.samples(), ["src"]);
    assert_eq!(warns(&p), Vec::<String>::new());
    let p = ok(
        "defaults\n mode tcp\n unique-id-format %[req.hdr(host)]_%[path]\nfrontend f\n bind :1\n",
    );
    assert_eq!(warns(&p), Vec::<String>::new());
    assert_eq!(
        alerts("frontend f\n bind :1\n unique-id-format %ci_%r\n"),
        ["[ALERT] t.cfg:3: 'unique-id-format': failed to parse unique-id : format variable 'r' is reserved for HTTP mode."]
    );
    assert_eq!(
        alerts("defaults\n mode http\n unique-id-format %HM\nfrontend f\n mode tcp\n bind :1\n"),
        ["[ALERT] t.cfg:3: 'unique-id-format': failed to parse unique-id : format variable 'HM' is reserved for HTTP mode."]
    );
    // The defaults section's own mode does not count.
    ok("defaults\n mode tcp\n unique-id-format %r\nfrontend f\n mode http\n bind :1\n");
    for mode in ["tcp", "http"] {
        let p = ok(&format!(
            "defaults\n mode {mode}\nfrontend f\n bind :1\n unique-id-format a%[req.len]b%[src]%[req.payload(0,2)]\n"
        ));
        assert_eq!(
            warns(&p),
            [
                "[WARNING] t.cfg:5: L6 sample fetch <req.len]b%[src]%[req.payload(0,2)]> ignored in HTTP log-format string.",
                "[WARNING] t.cfg:5: L6 sample fetch <req.payload(0,2)]> ignored in HTTP log-format string.",
            ],
            "{mode}"
        );
    }
}
