//! HTTP/1 features on HTTP/2 streams, end to end against the real binary:
//! cookie persistence (insert, with the cookie split over several
//! `cookie` fields as HTTP/2 allows), `option http-buffer-request`
//! (`req.body` in rules), the stats page's admin form posted over HTTP/2,
//! and `http-after-response` on the responses the proxy makes itself.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

/// Sends a request with extra header fields (repeated names stay
/// separate fields) and reads the whole answer.
async fn exchange_with(
    c: &Client,
    method: &str,
    path: &str,
    fields: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut b = http::Request::builder()
        .method(method)
        .uri(format!("http://test{path}"));
    for (n, v) in fields {
        b = b.header(*n, *v);
    }
    let req = b.body(()).unwrap();
    let mut c = c.clone().ready().await.expect("ready");
    let (resp, mut send) = c.send_request(req, body.is_empty()).expect("send_request");
    if !body.is_empty() {
        send_body(&mut send, body).await;
    }
    read_answer(resp).await
}

/// `cookie SRV insert indirect nocache`: the first answer sets the
/// cookie; requests presenting it (split over two `cookie` fields) stay
/// on that server.
#[test]
fn cookie_persistence_on_h2_streams() {
    let ip = test_ip();
    let (_ta, a) = term(ip, "alpha");
    let (_tb, b) = term(ip, "beta");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!(
            "    balance roundrobin\n    cookie SRV insert indirect nocache\n    \
             server s1 {a} cookie A\n    server s2 {b} cookie B"
        ),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let first = exchange(&c, "GET", "/", &[]).await;
        let set = first.headers["set-cookie"].to_str().unwrap().to_string();
        assert!(set == "SRV=A; path=/" || set == "SRV=B; path=/", "{set}");
        assert_eq!(first.headers["cache-control"], "private");
        let name = String::from_utf8(first.body).unwrap();
        let cookie = set.split(';').next().unwrap().to_string();
        for _ in 0..6 {
            let a = exchange_with(
                &c,
                "GET",
                "/",
                &[("cookie", "x=1"), ("cookie", &cookie)],
                &[],
            )
            .await;
            assert_eq!(String::from_utf8(a.body).unwrap(), name, "persisted");
            assert!(a.headers.get("set-cookie").is_none(), "already held");
        }
        // Without it, round robin goes on to the other server.
        let names: Vec<String> = {
            let mut v = Vec::new();
            for _ in 0..2 {
                v.push(String::from_utf8(exchange(&c, "GET", "/", &[]).await.body).unwrap());
            }
            v
        };
        assert!(
            names.contains(&"alpha\n".to_string()) && names.contains(&"beta\n".to_string()),
            "{names:?}"
        );
    });
}

/// `option http-buffer-request`: `req.body` sees an HTTP/2 request body.
#[test]
fn buffered_request_body_reaches_rules() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server s1 {o}"),
        "    option http-buffer-request\n    http-request deny deny_status 403 if { req.body -m sub secret }\n",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "POST", "/", b"some secret data").await;
        assert_eq!(a.status, 403);
        let a = exchange(&c, "POST", "/", b"plain data").await;
        assert_eq!(a.status, 200);
        // Without content-length, the body's end (END_STREAM) ends the wait.
        let big = pattern(40_000, 3);
        let a = exchange(&c, "POST", "/", &big).await;
        assert_eq!(a.status, 200);
    });
}

/// The stats page's admin form works over HTTP/2: the POST body is read.
#[test]
fn stats_admin_form_over_h2() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let sb = free_addr(ip);
    let cfg = format!(
        "global\n    nbthread 1\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    server s1 {o}\n    server s2 {o}\n\
listen stats\n    bind {sb} proto h2\n    stats enable\n    stats uri /stats\n    stats admin if TRUE\n"
    );
    let _p = Proxy::start(&cfg, &[bind, sb]);
    run(async {
        let c = h2c(sb).await;
        let form = b"s=s1&action=maint&b=bk";
        let a = exchange_with(
            &c,
            "POST",
            "/stats",
            &[("content-type", "application/x-www-form-urlencoded")],
            form,
        )
        .await;
        assert_eq!(a.status, 303);
        assert_eq!(a.headers["location"], "/stats;st=DONE");
        let csv = String::from_utf8(exchange(&c, "GET", "/stats;csv", &[]).await.body).unwrap();
        let line = csv.lines().find(|l| l.starts_with("bk,s1,")).unwrap();
        assert_eq!(line.split(',').nth(17), Some("MAINT"), "{line}");
    });
}

/// `http-after-response` runs on what the proxy answers itself on a
/// stream: a rule's `return`, and a 503 with no server left.
#[test]
fn after_response_on_proxy_made_answers() {
    let ip = test_ip();
    let (_t, o) = term(ip, "o");
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    use-server s1 if {{ path /srv }}\n    server s1 {o}\n    server dead 127.0.0.1:1 disabled"),
        "    http-request set-var(txn.tag) str(tagged)\n\
    http-request return status 202 content-type text/plain string local if { path /local }\n\
    http-after-response set-header x-after %[var(txn.tag)]\n\
    http-after-response set-header x-status %[status]\n\
    use_backend empty if { path /none }\n",
    ) + "backend empty\n    server gone 127.0.0.1:1 disabled\n";
    let _p = Proxy::start(&cfg, &[bind]);
    run(async {
        let c = h2c(bind).await;
        let a = exchange(&c, "GET", "/local", &[]).await;
        assert_eq!((a.status, a.body.as_slice()), (202, &b"local"[..]));
        assert_eq!(a.headers["x-after"], "tagged");
        assert_eq!(a.headers["x-status"], "202");
        let a = exchange(&c, "GET", "/none", &[]).await;
        assert_eq!(a.status, 503);
        assert_eq!(a.headers["x-status"], "503");
        let a = exchange(&c, "GET", "/srv", &[]).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers["x-after"], "tagged");
    });
}
