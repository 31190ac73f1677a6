//! The stats page (HTML, CSV, JSON) and the Prometheus exporter, served by
//! the real binary, with counters that reflect real traffic.

mod common;
use common::*;

fn cfg(
    bind: std::net::SocketAddr,
    stats_bind: std::net::SocketAddr,
    origin: std::net::SocketAddr,
) -> String {
    format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    server s1 {origin}\n    server s2 {origin} disabled\n\
listen stats\n    bind {stats_bind}\n    stats enable\n    stats uri /stats\n    stats auth admin:secret\n    stats refresh 5s\n\
    http-request use-service prometheus-exporter if {{ path /metrics }}\n"
    )
}

fn authed(addr: std::net::SocketAddr, path: &str) -> Response {
    // admin:secret
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46c2VjcmV0\r\nConnection: close\r\n\r\n"),
    )
}

#[test]
fn stats_page_csv_and_counters() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let _p = Proxy::start(&cfg(bind, sb, a), &[bind, sb]);
    for _ in 0..7 {
        assert_eq!(get(bind, "/?s=100").status, 200);
    }
    // Authentication is required.
    let r = get(sb, "/stats");
    assert_eq!(r.status, 401);
    assert!(r
        .header("www-authenticate")
        .unwrap()
        .contains("HAProxy Statistics"));
    // HTML page.
    let r = authed(sb, "/stats");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let html = r.body_str();
    assert!(html.contains("bk") && html.contains("s1"), "{html}");
    // CSV: HAProxy's header and our counters.
    let r = authed(sb, "/stats;csv");
    assert_eq!(r.status, 200);
    let csv = r.body_str();
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,"), "{header}");
    let col = |line: &str, name: &str| -> String {
        let names: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
        let i = names.iter().position(|n| *n == name).unwrap();
        line.split(',').nth(i).unwrap().to_string()
    };
    let fe = csv.lines().find(|l| l.starts_with("fe,FRONTEND,")).unwrap();
    assert_eq!(col(fe, "req_tot"), "7", "{fe}");
    assert_eq!(col(fe, "hrsp_2xx"), "7", "{fe}");
    let s1 = csv.lines().find(|l| l.starts_with("bk,s1,")).unwrap();
    assert_eq!(col(s1, "hrsp_2xx"), "7", "{s1}");
    assert!(col(s1, "bout").parse::<u64>().unwrap() >= 700, "{s1}");
    let s2 = csv.lines().find(|l| l.starts_with("bk,s2,")).unwrap();
    assert_eq!(col(s2, "status"), "MAINT", "{s2}");
    let be = csv.lines().find(|l| l.starts_with("bk,BACKEND,")).unwrap();
    assert_eq!(col(be, "req_tot"), "7", "{be}");
    // Rates: the once-per-second ticker sees the burst of requests.
    wait_until("req_rate_max reflects the burst", || {
        let csv = authed(sb, "/stats;csv").body_str();
        let fe = csv
            .lines()
            .find(|l| l.starts_with("fe,FRONTEND,"))
            .unwrap()
            .to_string();
        col(&fe, "req_rate_max").parse::<u64>().unwrap_or(0) >= 1
    });
    // JSON.
    let r = authed(sb, "/stats;json");
    assert_eq!(r.status, 200);
    assert!(r.body_str().trim_start().starts_with('['));
}

#[test]
fn prometheus_exporter_is_parseable() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let _p = Proxy::start(&cfg(bind, sb, a), &[bind, sb]);
    for _ in 0..3 {
        assert_eq!(get(bind, "/").status, 200);
    }
    let r = get(sb, "/metrics");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.body_str();
    let mut samples = 0;
    for line in text.lines() {
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        // name{labels} value
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line: {line}"));
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        let name = series.split('{').next().unwrap();
        // HAProxy's names, plus Fairlead's own (`fairlead_` prefix).
        assert!(
            name.starts_with("haproxy_") || name.starts_with("fairlead_"),
            "{line}"
        );
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        samples += 1;
    }
    assert!(samples > 20, "{text}");
    // The same text through a real exposition parser.
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("prometheus-parse accepts the scrape");
    // (It folds each histogram's bucket lines into one sample.)
    assert!(scrape.samples.len() > 20, "{}", scrape.samples.len());
    assert!(scrape.samples.iter().any(|s| matches!(
        s.value,
        prometheus_parse::Value::Histogram(_)
    ) && s.metric
        == "haproxy_backend_response_time_seconds"));
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "haproxy_frontend_http_requests_total"));
    let req = text
        .lines()
        .find(|l| l.starts_with("haproxy_frontend_http_requests_total{proxy=\"fe\"}"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(req.ends_with(" 3"), "{req}");
    assert!(
        text.contains("haproxy_server_status{proxy=\"bk\",server=\"s2\""),
        "{text}"
    );
    // Latency histograms (Fairlead's addition): cumulative buckets whose
    // +Inf bucket and count equal the requests served.
    // Latency is recorded once the response is written: poll for the last
    // request.
    let mut text = text;
    wait_until("histograms count all 3 requests", || {
        text = get(sb, "/metrics").body_str();
        ["response_time", "total_time"].iter().all(|metric| {
            let inf =
                format!("haproxy_backend_{metric}_seconds_bucket{{proxy=\"bk\",le=\"+Inf\"}} 3");
            let count = format!("haproxy_backend_{metric}_seconds_count{{proxy=\"bk\"}} 3");
            text.lines().any(|l| l == inf) && text.lines().any(|l| l == count)
        })
    });
    let buckets: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("haproxy_backend_response_time_seconds_bucket{proxy=\"bk\""))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse().unwrap())
        .collect();
    assert!(
        buckets.len() > 10 && buckets.windows(2).all(|w| w[0] <= w[1]),
        "{buckets:?}"
    );
}

/// `stats admin if <cond>`: the page's admin form changes servers through
/// the same server commands as the runtime API; requests the condition
/// refuses are denied, and traffic follows the new state.
#[test]
fn stats_admin_form_changes_servers() {
    let ip = test_ip();
    let (_t, a) = term(ip, "o");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 2\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    server s1 {a}\n    server s2 {a}\n\
listen stats\n    bind {sb}\n    stats enable\n    stats uri /stats\n    stats admin if {{ req.hdr(x-admin) yes }}\n"
    );
    let _p = Proxy::start(&cfg, &[bind, sb]);
    let post = |admin: bool, form: &str| {
        request(
            sb,
            &format!(
                "POST /stats HTTP/1.1\r\nHost: x\r\n{}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
                if admin { "X-Admin: yes\r\n" } else { "" },
                form.len()
            ),
        )
    };
    let status_of = |srv: &str| {
        let csv = get(sb, "/stats;csv").body_str();
        let line = csv
            .lines()
            .find(|l| l.starts_with(&format!("bk,{srv},")))
            .unwrap_or_else(|| panic!("no bk/{srv} in {csv}"))
            .to_string();
        line.split(',').nth(17).unwrap().to_string()
    };
    let r = post(false, "s=s1&action=maint&b=bk");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/stats;st=DENY"));
    assert_eq!(status_of("s1"), "no check");
    let r = post(true, "s=s1&s=s2&action=maint&b=bk");
    assert_eq!(r.header("location"), Some("/stats;st=DONE"));
    assert_eq!(status_of("s1"), "MAINT");
    assert_eq!(status_of("s2"), "MAINT");
    assert_eq!(get(bind, "/").status, 503, "no server left");
    let r = post(true, "s=s2&s=nosuch&action=ready&b=bk");
    assert_eq!(r.header("location"), Some("/stats;st=PART"));
    assert_eq!(status_of("s2"), "no check");
    assert_eq!(get(bind, "/").status, 200);
    let r = post(true, "s=s2&action=drain&b=bk");
    assert_eq!(r.header("location"), Some("/stats;st=DONE"));
    assert_eq!(status_of("s2"), "DRAIN");
    let r = post(true, "action=drain&b=bk");
    assert_eq!(
        r.header("location"),
        Some("/stats;st=NONE"),
        "no server checked"
    );
}
