//! The statistics page (`stats ...` in proxies), the runtime API settings
//! of the global section (`stats socket|timeout|maxconn`) and
//! `http-request use-service prometheus-exporter`.

use std::time::Duration;

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

/// One HTTP listen section with `lines` added.
fn listen(lines: &str) -> String {
    format!("listen st\n    mode http\n    bind :8404\n{lines}")
}

fn stats_of(p: &Parsed, fe: &str) -> Option<StatsConfig> {
    p.config
        .frontends
        .iter()
        .find(|f| f.name == fe)
        .unwrap()
        .options
        .stats
        .clone()
}

#[test]
fn defaults_when_no_stats_keyword() {
    let p = ok(&listen(""));
    assert_eq!(stats_of(&p, "st"), None);
    assert_eq!(p.config.frontends[0].options.prometheus, None);
    let d = StatsConfig::default();
    assert!(d.enabled);
    assert_eq!(d.uri, "/haproxy?stats");
    assert_eq!(d.realm, "HAProxy Statistics");
}

#[test]
fn stats_enable_alone() {
    let p = ok(&listen("    stats enable\n"));
    assert_eq!(stats_of(&p, "st"), Some(StatsConfig::default()));
    // Both halves of the listen section carry it.
    assert_eq!(
        p.config.backends[0].options.stats,
        Some(StatsConfig::default())
    );
}

#[test]
fn every_stats_keyword() {
    let p = ok(&listen(
        "\
    stats enable
    stats uri /stats
    stats realm Fairlead\\ Stats
    stats auth admin:s3cr:et
    stats auth ro:
    stats refresh 10s
    stats admin if LOCALHOST
    stats hide-version
    stats show-legends
    stats show-node lb-1.eu_west
    stats scope .
    stats scope app
",
    ));
    let s = stats_of(&p, "st").unwrap();
    assert_eq!(
        s,
        StatsConfig {
            enabled: true,
            uri: "/stats".into(),
            realm: "Fairlead Stats".into(),
            users: vec![
                ("admin".into(), "s3cr:et".into()),
                ("ro".into(), String::new())
            ],
            refresh: Some(Duration::from_secs(10)),
            admin: true,
            hide_version: true,
            show_legends: true,
            show_node: Some("lb-1.eu_west".into()),
            scope: vec![".".into(), "app".into()],
        }
    );
    assert!(warns(&p).is_empty(), "{:?}", warns(&p));
}

#[test]
fn any_stats_keyword_enables() {
    for line in [
        "stats uri /s",
        "stats realm R",
        "stats auth a:b",
        "stats refresh 5",
        "stats admin if TRUE",
        "stats hide-version",
        "stats show-legends",
        "stats show-node",
        "stats scope .",
    ] {
        let p = ok(&listen(&format!("    {line}\n")));
        let s = stats_of(&p, "st").unwrap_or_else(|| panic!("{line}"));
        assert!(s.enabled, "{line}");
    }
}

#[test]
fn refresh_default_unit_is_seconds() {
    let s = |v: &str| {
        stats_of(&ok(&listen(&format!("    stats refresh {v}\n"))), "st")
            .unwrap()
            .refresh
    };
    assert_eq!(s("5"), Some(Duration::from_secs(5)));
    assert_eq!(s("1m"), Some(Duration::from_secs(60)));
    assert_eq!(s("1500ms"), Some(Duration::from_millis(1500)));
    assert_eq!(s("0"), None);
}

#[test]
fn admin_conditions() {
    let p = ok(&listen(
        "    acl net src 10.0.0.0/8\n    stats admin if LOCALHOST\n    stats admin if net\n",
    ));
    let s = stats_of(&p, "st").unwrap();
    assert!(s.admin);
    // The conditions are compiled with the section's ACLs, in order.
    let fe = p.config.frontends.iter().find(|f| f.name == "st").unwrap();
    assert_eq!(fe.rules.stats_admin.len(), 2);
    let none = stats_of(&ok(&listen("    stats enable\n")), "st").unwrap();
    assert!(!none.admin);
    assert!(has(
        &errs(&listen("    stats admin if no_such_acl\n")),
        "no such ACL"
    ));
}

#[test]
fn show_node_without_name() {
    let s = stats_of(&ok(&listen("    stats show-node\n")), "st").unwrap();
    assert_eq!(s.show_node, Some(String::new()));
}

#[test]
fn realm_extra_words_warn() {
    let p = ok(&listen("    stats realm HAProxy Statistics\n"));
    assert_eq!(stats_of(&p, "st").unwrap().realm, "HAProxy");
    assert!(has(
        &warns(&p),
        "t.cfg:4: 'stats realm': only the first word ('HAProxy') is used"
    ));
}

#[test]
fn inherited_from_defaults() {
    let p = ok("\
defaults
    mode http
    stats enable
    stats uri /st
    stats auth a:b
frontend inherits
    bind :80
frontend detaches
    bind :81
    stats refresh 3s
backend b
");
    let s = stats_of(&p, "inherits").unwrap();
    assert_eq!(s.uri, "/st");
    assert_eq!(s.users, vec![("a".into(), "b".into())]);
    // HAProxy: a proxy's own `stats` line starts from scratch.
    let s = stats_of(&p, "detaches").unwrap();
    assert_eq!(s.uri, "/haproxy?stats");
    assert!(s.users.is_empty());
    assert_eq!(s.refresh, Some(Duration::from_secs(3)));
    assert_eq!(
        p.config
            .backend("b")
            .unwrap()
            .options
            .stats
            .as_ref()
            .unwrap()
            .uri,
        "/st"
    );
}

#[test]
fn later_defaults_sections_accumulate() {
    // Inside a defaults section, lines add to each other.
    let p = ok("\
defaults
    mode http
    stats uri /a
    stats auth u:p
frontend f
    bind :80
");
    let s = stats_of(&p, "f").unwrap();
    assert_eq!((s.uri.as_str(), s.users.len()), ("/a", 1));
}

#[test]
fn tcp_mode_drops_stats_with_warning() {
    let p = ok("\
frontend f
    bind :80
    stats enable
    stats uri /s
    default_backend b
backend b
    mode http
    stats enable
    server s 1.1.1.1:80
");
    assert_eq!(stats_of(&p, "f"), None);
    assert!(p.config.backend("b").unwrap().options.stats.is_some());
    let w = warns(&p);
    assert!(has(
        &w,
        "[WARNING] t.cfg:3: 'stats' statement ignored for frontend 'f' as it requires HTTP mode."
    ));
    assert!(!has(&w, "backend 'b' as it requires HTTP"));
}

#[test]
fn tcp_mode_drops_inherited_stats() {
    let p = ok("\
defaults
    stats enable
listen l
    bind :80
    server s 1.1.1.1:80
");
    assert_eq!(stats_of(&p, "l"), None);
    assert_eq!(p.config.backends[0].options.stats, None);
    assert!(has(
        &warns(&p),
        "t.cfg:2: 'stats' statement ignored for listen 'l' as it requires HTTP mode."
    ));
}

#[test]
fn stats_errors_name_the_line() {
    let cases = [
        ("    stats auth admin\n", "t.cfg:4: 'stats auth': expects <user>:<password> (got 'admin', without ':')"),
        ("    stats auth :pw\n", "t.cfg:4: 'stats auth': expects <user>:<password> (got ':pw', an empty user name)"),
        ("    stats auth\n", "t.cfg:4: 'stats auth': 'auth' needs a user:password account."),
        ("    stats refresh 10x\n", "t.cfg:4: 'stats refresh': invalid stats refresh interval: invalid unit 'x'"),
        ("    stats refresh soon\n", "t.cfg:4: 'stats refresh': invalid stats refresh interval"),
        ("    stats admin if AUTH_ADMIN\n", "t.cfg:4: 'stats': no such ACL : 'AUTH_ADMIN'"),
        ("    stats admin TRUE\n", "t.cfg:4: 'stats admin': 'stats admin' requires either 'if' or 'unless' followed by a condition."),
        ("    stats uri\n", "t.cfg:4: 'stats uri': expects exactly one argument (got 0)"),
        ("    stats realm\n", "t.cfg:4: 'stats realm': 'realm' needs an realm name."),
        ("    stats enable now\n", "t.cfg:4: 'stats enable': takes no argument"),
        ("    stats show-node bad/name\n", "t.cfg:4: 'stats show-node': invalid node name 'bad/name'"),
        ("    stats scope\n", "t.cfg:4: 'stats scope': 'scope' needs a proxy name."),
        ("    stats nope\n", "t.cfg:4: unknown stats parameter 'nope', expects 'admin', 'uri'"),
        ("    stats\n", "t.cfg:4: missing keyword in 'stats', expects 'admin'"),
        ("    stats show-desc hello\n", "t.cfg:4: 'stats show-desc' is not implemented yet in Fairlead"),
        ("    stats http-request frobnicate\n", "t.cfg:4: 'stats http-request': 'stats http-request' expects 'allow', 'deny' or 'auth'"),
        ("    stats http-request deny if NOPE\n", "t.cfg:4: 'stats': no such ACL : 'NOPE'"),
        ("    stats http-request auth realm\n", "t.cfg:4: 'stats http-request' expects 'allow', 'deny' or 'auth [realm <realm>]', then an optional condition"),
        ("    no stats enable\n", "t.cfg:4: 'no' is not supported for 'stats enable'"),
    ];
    for (line, want) in cases {
        let e = alerts(&listen(line));
        assert!(has(&e, want), "{line:?}: {e:?}");
    }
}

#[test]
fn stats_admin_not_allowed_in_defaults() {
    let e = alerts("defaults\n    stats admin if TRUE\n");
    assert!(
        has(
            &e,
            "t.cfg:2: 'stats admin' not allowed in 'defaults' section."
        ),
        "{e:?}"
    );
}

#[test]
fn global_runtime_api() {
    let p = ok("\
global
    stats socket /run/haproxy.sock mode 660 level admin expose-fd listeners
    stats socket ipv4@127.0.0.1:9999 level operator
    stats timeout 2m
    stats maxconn 20
    stats bind-process 1
");
    let g = &p.config.global;
    assert_eq!(g.stats_sockets.len(), 2);
    assert_eq!(g.stats_sockets[0].0.line, 2);
    assert_eq!(
        g.stats_sockets[0].1,
        [
            "/run/haproxy.sock",
            "mode",
            "660",
            "level",
            "admin",
            "expose-fd",
            "listeners"
        ]
    );
    assert_eq!(g.stats_sockets[1].0.line, 3);
    assert_eq!(g.stats_sockets[1].1[0], "ipv4@127.0.0.1:9999");
    assert_eq!(g.stats_timeout, Some(Duration::from_secs(120)));
    assert_eq!(g.stats_maxconn, Some(20));
    let w = warns(&p);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(has(&w, "t.cfg:6: 'stats bind-process'"));
    // Default timeout unit: milliseconds.
    let p = ok("global\n    stats timeout 1500\n");
    assert_eq!(
        p.config.global.stats_timeout,
        Some(Duration::from_millis(1500))
    );
    let d = Global::default();
    assert!(d.stats_sockets.is_empty());
    assert_eq!((d.stats_timeout, d.stats_maxconn), (None, None));
}

#[test]
fn global_runtime_api_errors() {
    let cases = [
        (
            "global\n stats socket\n",
            "t.cfg:2: 'stats socket': requires a path or an address",
        ),
        (
            "global\n stats timeout\n",
            "t.cfg:2: 'stats timeout': expects exactly one argument (got 0)",
        ),
        (
            "global\n stats timeout 0\n",
            "t.cfg:2: 'stats timeout': expects a positive value",
        ),
        (
            "global\n stats timeout 5x\n",
            "t.cfg:2: 'stats timeout': invalid unit 'x'",
        ),
        (
            "global\n stats maxconn 0\n",
            "t.cfg:2: 'stats maxconn': expects a positive value",
        ),
        ("global\n stats maxconn ten\n", "t.cfg:2: 'stats maxconn':"),
        (
            "global\n stats maxconn 1 2\n",
            "t.cfg:2: 'stats maxconn': expects exactly one argument (got 2)",
        ),
        (
            "global\n stats enable\n",
            "t.cfg:2: 'stats' only supports 'socket', 'maxconn', 'bind-process' and 'timeout'",
        ),
    ];
    for (text, want) in cases {
        let e = alerts(text);
        assert!(has(&e, want), "{text:?}: {e:?}");
    }
}

#[test]
fn prometheus_exporter() {
    let prom = |lines: &str| {
        let p = ok(&format!(
            "frontend f\n    mode http\n    bind :8405\n{lines}"
        ));
        assert!(warns(&p).is_empty(), "{:?}", warns(&p));
        p.config.frontends[0].options.prometheus.clone()
    };
    assert_eq!(
        prom("    http-request use-service prometheus-exporter\n"),
        Some(PrometheusService {
            path: None,
            prefix: false
        })
    );
    assert_eq!(
        prom("    http-request use-service prometheus-exporter if { path /metrics }\n"),
        Some(PrometheusService {
            path: Some("/metrics".into()),
            prefix: false
        })
    );
    assert_eq!(
        prom("    http-request use-service prometheus-exporter if { path_beg /metrics }\n"),
        Some(PrometheusService {
            path: Some("/metrics".into()),
            prefix: true
        })
    );
    // In a listen section too.
    let p = ok(&listen(
        "    http-request use-service prometheus-exporter if { path /m }\n",
    ));
    assert!(p.config.frontends[0].options.prometheus.is_some());
}

#[test]
fn prometheus_exporter_in_tcp_mode_is_dropped() {
    let p = ok("\
frontend f
    bind :8405
    http-request use-service prometheus-exporter
");
    assert_eq!(p.config.frontends[0].options.prometheus, None);
    assert!(has(
        &warns(&p),
        "t.cfg:3: 'http-request' rules ignored for frontend 'f' as they require HTTP mode."
    ));
}

#[test]
fn other_http_request_rules_stay_not_implemented() {
    let fe = |line: &str| format!("frontend f\n    mode http\n    bind :80\n{line}\n");
    let cases = [
        ("    http-request use-service lua.hello", "t.cfg:4: 'http-request use-service': 'lua.hello' is not implemented yet in Fairlead; only 'prometheus-exporter'"),
        ("    http-request use-service prometheus-exporter if { src 10.0.0.0/8 }", "t.cfg:4: 'http-request use-service': 'prometheus-exporter if { src 10.0.0.0/8 }' is not implemented yet in Fairlead"),
        ("    http-request use-service prometheus-exporter unless { path /x }", "is not implemented yet in Fairlead"),
        ("    http-request use-service prometheus-exporter if metrics", "is not implemented yet in Fairlead"),
        ("    http-request use-service prometheus-exporter if { path }", "is not implemented yet in Fairlead"),
        ("    http-request use-service", "t.cfg:4: 'http-request use-service': expects a service name"),
        ("    http-request use-service prometheus-exporter\n    http-request use-service prometheus-exporter", "t.cfg:5: 'http-request use-service': more than one 'http-request use-service' rule per proxy is not implemented yet in Fairlead (previous one at t.cfg:4)"),
    ];
    for (line, want) in cases {
        let e = alerts(&fe(line));
        assert!(has(&e, want), "{line:?}: {e:?}");
    }
    // Backends and defaults: not implemented yet either.
    let e = alerts("backend b\n    mode http\n    http-request use-service prometheus-exporter\n");
    assert!(has(&e, "t.cfg:3: 'http-request use-service'"), "{e:?}");
    assert!(has(&e, "is not implemented yet in Fairlead"), "{e:?}");
    let e = alerts("defaults\n    http-request use-service prometheus-exporter\n");
    assert!(
        has(
            &e,
            "t.cfg:2: 'http-request' not allowed in anonymous 'defaults' section."
        ),
        "{e:?}"
    );
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
        "stats enable",
        "stats uri",
        "stats realm",
        "stats auth",
        "stats refresh",
        "stats hide-version",
        "stats show-legends",
        "stats show-node",
        "stats scope",
    ] {
        for sec in ["defaults", "frontend", "listen", "backend"] {
            assert_eq!(status(sec, kw), Some(Support::Implemented), "{sec} {kw}");
        }
    }
    assert_eq!(status("listen", "stats admin"), Some(Support::Implemented));
    assert_eq!(status("defaults", "stats admin"), None);
    for kw in ["stats socket", "stats timeout", "stats maxconn"] {
        assert_eq!(status("global", kw), Some(Support::Implemented), "{kw}");
    }
    assert_eq!(
        status("global", "stats bind-process"),
        Some(Support::Warning)
    );
    assert_eq!(
        status("frontend", "http-request use-service"),
        Some(Support::Implemented)
    );
    assert_eq!(status("backend", "http-request use-service"), None);
    assert_eq!(
        status("frontend", "http-request"),
        Some(Support::Implemented)
    );
}

#[test]
fn no_server_warning_skipped_for_stats_only_proxies() {
    let p = ok("listen st\n    mode http\n    bind :8404\n    stats enable\nlisten other\n    mode http\n    bind :81\n");
    let w = warns(&p);
    assert!(!has(&w, "listen 'st' has no server"), "{w:?}");
    assert!(has(&w, "listen 'other' has no server"), "{w:?}");
}
