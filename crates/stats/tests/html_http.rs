//! The HTML page and the stats request handling (URI options, auth, admin).

mod common;

use fairlead_stats::*;
use std::cell::RefCell;

fn page(opts: &HtmlOptions) -> String {
    let mut out = Vec::new();
    html(&common::fixture(), opts, &mut out);
    String::from_utf8(out).unwrap()
}

/// The `<tr ...>...</tr>` rows with a class, as (class, row text).
fn rows(p: &str) -> Vec<(String, String)> {
    p.split("<tr class=\"")
        .skip(1)
        .map(|r| {
            let (class, rest) = r.split_once('"').unwrap();
            (
                class.to_string(),
                rest.split("</tr>").next().unwrap().to_string(),
            )
        })
        .filter(|(c, _)| c != "titre")
        .collect()
}

#[test]
fn page_structure() {
    let p = page(&HtmlOptions::default());
    assert!(p.starts_with("<!DOCTYPE html>"));
    assert!(p.trim_end().ends_with("</html>"));
    assert!(!p.contains("http-equiv=\"refresh\""));
    assert!(!p.contains("<script"));
    // One table per proxy: www, app, tcpb, listen st (frontend + backend).
    assert_eq!(p.matches("<table class=\"tbl\">").count(), 4);
    let r = rows(&p);
    let classes: Vec<&str> = r.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        classes,
        [
            "frontend",
            "active_up",
            "backup_down",
            "maintain",
            "active_up",
            "active_no_check",
            "backend",
            "active_no_check",
            "backend",
            "frontend",
            "backend"
        ]
    );
    // Every row has the name cell plus the 30 columns of the header.
    for (class, row) in &r {
        assert_eq!(row.matches("<td").count(), 31, "{class}: {row}");
    }
    for h in [
        "Queue",
        "Session rate",
        "Sessions",
        "Bytes",
        "Denied",
        "Errors",
        "Warnings",
        "Server",
    ] {
        assert!(p.contains(&format!(">{h}</th>")), "{h}");
    }
    for h in [
        "LastChk", "Wght", "Act", "Bck", "Chk", "Dwn", "Dwntme", "Thrtle",
    ] {
        assert!(p.contains(&format!("<th>{h}</th>")), "{h}");
    }
    // Server details.
    let a1 = &r[1].1;
    assert!(a1.contains("<td>1s UP</td>"), "{a1}");
    assert!(a1.contains("<td>L7OK/200 in 8ms</td>"), "{a1}");
    assert!(a1.contains("<td>1/2</td>"), "{a1}");
    assert!(a1.contains("<td>6 %</td>"), "{a1}");
    let a2 = &r[2].1;
    assert!(a2.contains("<td>2s DOWN</td>"));
    assert!(
        a2.contains("<td>-</td><td>Y</td>"),
        "backup: Act -, Bck Y: {a2}"
    );
    // Links to the other views.
    assert!(p.contains("href=\"/haproxy?stats;csv;norefresh\""));
    assert!(p.contains("href=\"/haproxy?stats;json;norefresh\""));
    assert!(p.contains("href=\"/haproxy?stats;up\""));
    // Addresses only with show-legends.
    assert!(!p.contains("127.0.0.1:18081"));
    let legends = page(&HtmlOptions {
        show_legends: true,
        ..Default::default()
    });
    assert!(legends.contains("127.0.0.1:18081 cookie c1"));
}

#[test]
fn refresh_and_status_message() {
    let p = page(&HtmlOptions {
        refresh: Some(10),
        uri: "/st".into(),
        status: Some("DONE".into()),
        ..Default::default()
    });
    assert!(p.contains("<meta http-equiv=\"refresh\" content=\"10\">"));
    assert!(p.contains("href=\"/st;norefresh\""));
    assert!(p.contains("Action processed successfully."));
}

#[test]
fn names_are_escaped() {
    let mut s = common::fixture();
    s.proxies[1].name = "<script>alert('x')</script>&".into();
    s.proxies[1].servers[0].name = "\"><img src=x>".into();
    s.process.node = "<i>node</i>".into();
    let mut out = Vec::new();
    html(
        &s,
        &HtmlOptions {
            admin: true,
            ..Default::default()
        },
        &mut out,
    );
    let p = String::from_utf8(out).unwrap();
    assert!(!p.contains("<script>"));
    assert!(!p.contains("<img"));
    assert!(!p.contains("<i>"));
    assert!(p.contains(" on &lt;i&gt;node&lt;/i&gt;</h2>"));
    assert!(p.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"));
    assert!(p.contains("value=\"&quot;&gt;&lt;img src=x&gt;\""));
    let mut out = Vec::new();
    html(
        &s,
        &HtmlOptions {
            uri: "/s\"><x".into(),
            ..Default::default()
        },
        &mut out,
    );
    assert!(!String::from_utf8(out).unwrap().contains("\"><x"));
}

#[test]
fn hide_down_and_scope() {
    let p = page(&HtmlOptions {
        hide_down: true,
        ..Default::default()
    });
    let classes: Vec<String> = rows(&p).into_iter().map(|(c, _)| c).collect();
    assert!(!classes
        .iter()
        .any(|c| c == "backup_down" || c == "maintain"));
    assert!(p.contains("Show all servers"));
    let p = page(&HtmlOptions {
        scope: Some("tcp".into()),
        ..Default::default()
    });
    assert_eq!(p.matches("<table class=\"tbl\">").count(), 1);
    assert!(p.contains("id=\"tcpb\""));
}

#[test]
fn admin_forms() {
    let p = page(&HtmlOptions {
        admin: true,
        ..Default::default()
    });
    // One form per backend with servers: app, tcpb (not `st`).
    assert_eq!(p.matches("<form method=\"post\"").count(), 2);
    assert!(p.contains("<input type=\"checkbox\" name=\"s\" value=\"a1\">"));
    assert!(p.contains("<input type=\"hidden\" name=\"b\" value=\"#3\">"));
    assert!(p.contains("<select name=\"action\">"));
    assert!(p.contains("<option value=\"drain\">"));
    // Tables of backends with servers get the checkbox column.
    for (i, (class, row)) in rows(&p).iter().enumerate() {
        let want = if i == 0 || i >= 9 { 31 } else { 32 };
        assert_eq!(row.matches("<td").count(), want, "{class}: {row}");
    }
}

#[test]
fn uri_options() {
    let q = parse_stats_uri(b"/stats", "/stats").unwrap();
    assert_eq!(q.format, StatsFormat::Html);
    assert!(!q.norefresh && !q.hide_down);
    let q = parse_stats_uri(b"/stats;csv", "/stats").unwrap();
    assert_eq!(q.format, StatsFormat::Csv);
    let q = parse_stats_uri(b"/stats;csv;norefresh", "/stats").unwrap();
    assert_eq!((q.format, q.norefresh), (StatsFormat::Csv, true));
    let q = parse_stats_uri(b"/haproxy?stats;json", "/haproxy?stats").unwrap();
    assert_eq!(q.format, StatsFormat::Json);
    let q = parse_stats_uri(b"/stats;json-schema", "/stats").unwrap();
    assert_eq!(q.format, StatsFormat::JsonSchema);
    let q = parse_stats_uri(b"/stats;up;st=DONE", "/stats").unwrap();
    assert!(q.hide_down);
    assert_eq!(q.st.as_deref(), Some("DONE"));
    let q = parse_stats_uri(b"/stats?scope=my%20app", "/stats").unwrap();
    assert_eq!(q.scope.as_deref(), Some("my app"));
    assert!(parse_stats_uri(b"/other;csv", "/stats").is_none());
    assert!(parse_stats_uri(b"/stat", "/stats").is_none());
}

#[test]
fn basic_auth() {
    let users = vec![
        ("admin".to_string(), "pw".to_string()),
        ("ops".to_string(), "a:b".to_string()),
    ];
    assert!(check_basic_auth(Some(b"Basic YWRtaW46cHc="), &users));
    assert!(check_basic_auth(Some(b"basic YWRtaW46cHc="), &users));
    assert!(
        check_basic_auth(Some(b"Basic b3BzOmE6Yg=="), &users),
        "password with a colon"
    );
    assert!(
        !check_basic_auth(Some(b"Basic YWRtaW46cHd4"), &users),
        "admin:pwx"
    );
    assert!(
        !check_basic_auth(Some(b"Basic YWRtaW4="), &users),
        "no colon"
    );
    assert!(!check_basic_auth(Some(b"Bearer YWRtaW46cHc="), &users));
    assert!(!check_basic_auth(Some(b"Basic !!!"), &users));
    assert!(!check_basic_auth(None, &users));
    assert!(check_basic_auth(None, &[]), "no stats auth configured");
}

struct Src {
    applied: RefCell<Vec<AdminRequest>>,
}

impl StatsSource for Src {
    fn snapshot(&self) -> Snapshot {
        common::fixture()
    }
    fn apply(&self, req: &AdminRequest) -> AdminResult {
        self.applied.borrow_mut().push(req.clone());
        AdminResult::Done
    }
}

fn get(uri: &str, auth: Option<&str>, cfg: &StatsConfig, src: &Src) -> Option<StatsResponse> {
    let req = StatsRequest {
        method: b"GET",
        uri: uri.as_bytes(),
        authorization: auth.map(str::as_bytes),
        body: b"",
    };
    handle_stats_request(&req, cfg, src)
}

fn header<'a>(r: &'a StatsResponse, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn handler_formats_and_refresh() {
    let src = Src {
        applied: RefCell::new(Vec::new()),
    };
    let cfg = StatsConfig {
        uri: "/stats".into(),
        refresh: Some(5),
        ..Default::default()
    };
    assert!(get("/", None, &cfg, &src).is_none());
    let r = get("/stats", None, &cfg, &src).unwrap();
    assert_eq!(
        (r.status, r.content_type),
        (200, "text/html; charset=utf-8")
    );
    assert_eq!(header(&r, "Refresh"), Some("5"));
    assert_eq!(header(&r, "Cache-Control"), Some("no-cache"));
    assert!(String::from_utf8(r.body).unwrap().contains("content=\"5\""));
    let r = get("/stats;norefresh", None, &cfg, &src).unwrap();
    assert_eq!(header(&r, "Refresh"), None);
    assert!(!String::from_utf8(r.body).unwrap().contains("http-equiv"));
    let r = get("/stats;csv", None, &cfg, &src).unwrap();
    assert_eq!(r.content_type, "text/plain");
    assert_eq!(header(&r, "Refresh"), Some("5"));
    assert!(r.body.starts_with(b"# pxname,svname,qcur,"));
    let r = get("/stats;csv;norefresh", None, &cfg, &src).unwrap();
    assert_eq!(header(&r, "Refresh"), None);
    let r = get("/stats;json", None, &cfg, &src).unwrap();
    assert_eq!(r.content_type, "application/json");
    assert!(serde_json::from_slice::<serde_json::Value>(&r.body)
        .unwrap()
        .is_array());
    let r = get("/stats;json-schema", None, &cfg, &src).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&r.body)
        .unwrap()
        .is_object());
}

#[test]
fn handler_auth() {
    let src = Src {
        applied: RefCell::new(Vec::new()),
    };
    let cfg = StatsConfig {
        users: vec![("admin".into(), "pw".into())],
        ..Default::default()
    };
    let r = get("/haproxy?stats;csv", None, &cfg, &src).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(
        header(&r, "WWW-Authenticate"),
        Some("Basic realm=\"HAProxy Statistics\"")
    );
    let r = get("/haproxy?stats;csv", Some("Basic YWRtaW46cHc="), &cfg, &src).unwrap();
    assert_eq!(r.status, 200);
    let cfg = StatsConfig {
        realm: "Ops \"only\"".into(),
        ..cfg
    };
    let r = get("/haproxy?stats", Some("Basic eDp5"), &cfg, &src).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(
        header(&r, "WWW-Authenticate"),
        Some("Basic realm=\"Ops only\"")
    );
}

#[test]
fn handler_admin_post() {
    let src = Src {
        applied: RefCell::new(Vec::new()),
    };
    let post = |cfg: &StatsConfig, body: &[u8]| {
        let req = StatsRequest {
            method: b"POST",
            uri: b"/haproxy?stats",
            authorization: None,
            body,
        };
        handle_stats_request(&req, cfg, &src).unwrap()
    };
    let cfg = StatsConfig::default();
    let r = post(&cfg, b"s=a1&action=drain&b=%233");
    assert_eq!(r.status, 303);
    assert_eq!(header(&r, "Location"), Some("/haproxy?stats;st=DENY"));
    assert!(src.applied.borrow().is_empty());
    let cfg = StatsConfig { admin: true, ..cfg };
    let r = post(&cfg, b"s=a1&s=a4&action=drain&b=%233");
    assert_eq!(header(&r, "Location"), Some("/haproxy?stats;st=DONE"));
    assert_eq!(
        src.applied.borrow()[0],
        AdminRequest {
            backend: BackendRef::Id(3),
            action: AdminAction::Drain,
            servers: vec!["a1".into(), "a4".into()],
        }
    );
    let r = post(&cfg, b"action=bogus&b=%233&s=a1");
    assert_eq!(header(&r, "Location"), Some("/haproxy?stats;st=ERRP"));
    let r = post(&cfg, b"action=maint&b=app");
    assert_eq!(header(&r, "Location"), Some("/haproxy?stats;st=NONE"));
    assert_eq!(
        parse_admin_post(b"b=app&action=maint&s=x+y"),
        Ok(AdminRequest {
            backend: BackendRef::Name("app".into()),
            action: AdminAction::Maint,
            servers: vec!["x y".into()],
        })
    );
    assert_eq!(
        parse_admin_post(b"b=%23zz&action=maint&s=a"),
        Err(AdminResult::BadParams)
    );
}
