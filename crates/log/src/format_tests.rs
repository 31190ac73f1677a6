//! Rendering tests: exact lines, most taken from the examples of HAProxy's
//! configuration manual (section 8).

use super::*;
use crate::record::{Phase, TermState, Who};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn date(secs: u64, ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms)
}

fn addr(s: &str) -> Option<SocketAddr> {
    Some(s.parse().unwrap())
}

fn line(fmt: &str, r: &LogRecord) -> String {
    let mut out = Vec::new();
    compile(fmt).unwrap().render(r, &mut out);
    String::from_utf8(out).unwrap()
}

fn json(fmt: &str, r: &LogRecord) -> String {
    let mut out = Vec::new();
    compile(fmt).unwrap().render_json(r, &mut out);
    String::from_utf8(out).unwrap()
}

/// 06/Feb/2009:12:14:14.655, the manual's HTTP example.
const FEB6: u64 = 1_233_922_454;
/// 22/Nov/2026:02:58:15.
const NOV22: u64 = 1_795_316_295;
/// 15/Oct/2003:00:00:00.
const OCT15: u64 = 1_066_176_000;

fn http_record<'a>() -> LogRecord<'a> {
    LogRecord {
        http: true,
        client: addr("127.0.0.1:34082"),
        frontend_addr: addr("127.0.0.1:8080"),
        accept_date: date(NOV22, 123),
        frontend: "fe",
        backend: "bk",
        server: Some("s1"),
        idle: Some(0),
        request_done: Some(0),
        queue_done: Some(0),
        connect_done: Some(1),
        response_done: Some(3),
        total: 3,
        status: Some(200),
        bytes_out: 1234,
        actconn: 1,
        feconn: 1,
        request_line: Some(b"GET / HTTP/1.1"),
        ..LogRecord::default()
    }
}

#[test]
fn httplog_basic() {
    assert_eq!(
        line(HTTPLOG_FORMAT, &http_record()),
        "127.0.0.1:34082 [22/Nov/2026:02:58:15.123] fe bk/s1 0/0/1/2/3 200 1234 - - ---- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\""
    );
}

#[test]
fn httplog_manual_example_with_captures() {
    let req_caps: [Option<&[u8]>; 1] = [Some(b"1wt.eu")];
    let res_caps: [Option<&[u8]>; 1] = [None];
    let r = LogRecord {
        http: true,
        client: addr("10.0.1.2:33317"),
        accept_date: date(FEB6, 655),
        frontend: "http-in",
        backend: "static",
        server: Some("srv1"),
        idle: Some(0),
        request_done: Some(10),
        queue_done: Some(10),
        connect_done: Some(40),
        response_done: Some(109),
        total: 109,
        status: Some(200),
        bytes_out: 2750,
        actconn: 1,
        feconn: 1,
        beconn: 1,
        srv_conn: 1,
        request_line: Some(b"GET /index.html HTTP/1.1"),
        req_captures: &req_caps,
        res_captures: &res_caps,
        ..LogRecord::default()
    };
    assert_eq!(
        line(HTTPLOG_FORMAT, &r),
        "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {1wt.eu} {} \"GET /index.html HTTP/1.1\""
    );
    assert_eq!(
        line(HTTPLOG_CLF, &r),
        "10.0.1.2 - - [06/Feb/2009:12:14:14 +0000] \"GET /index.html HTTP/1.1\" 200 2750 \"\" \"\" 33317 655 \"http-in\" \"static\" \"srv1\" 10 0 30 69 109 ---- 1 1 1 1 0 0 0 \"\" \"\" \"1wt.eu\" \"\""
    );
}

#[test]
fn clf_without_captures_ends_with_a_separator() {
    let r = http_record();
    assert_eq!(
        line(HTTPLOG_CLF, &r),
        "127.0.0.1 - - [22/Nov/2026:02:58:15 +0000] \"GET / HTTP/1.1\" 200 1234 \"\" \"\" 34082 123 \"fe\" \"bk\" \"s1\" 0 0 1 2 3 ---- 1 1 0 0 0 0 0 \"\" \"\" "
    );
}

#[test]
fn manual_examples_of_section_8_9() {
    // Aborted request: no server, timers -1, status -1. HAProxy 2.6 prints
    // <BADREQ> for a request line never received.
    let r = LogRecord {
        http: true,
        client: addr("127.0.0.1:34548"),
        accept_date: date(OCT15 + 15 * 3600 + 18 * 60 + 55, 798),
        frontend: "px-http",
        backend: "px-http",
        idle: Some(0),
        total: 8490,
        term: TermState::new(Who::Client, Phase::Request),
        actconn: 2,
        feconn: 2,
        beconn: 2,
        ..LogRecord::default()
    };
    assert_eq!(
        line(HTTPLOG_FORMAT, &r),
        "127.0.0.1:34548 [15/Oct/2003:15:18:55.798] px-http px-http/<NOSRV> -1/-1/-1/-1/8490 -1 0 - - CR-- 2/2/2/0/0 0/0 \"<BADREQ>\""
    );
    // logasap: '+' before Ta and B.
    let r = LogRecord {
        http: true,
        client: addr("127.0.0.1:33320"),
        accept_date: date(OCT15 + 8 * 3600 + 32 * 60 + 17, 654),
        frontend: "px-http",
        backend: "px-http",
        server: Some("srv1"),
        idle: Some(0),
        request_done: Some(9),
        queue_done: Some(9),
        connect_done: Some(16),
        response_done: Some(30),
        total: 30,
        logasap: true,
        status: Some(200),
        bytes_out: 243,
        actconn: 3,
        feconn: 3,
        beconn: 3,
        srv_conn: 1,
        request_line: Some(b"GET /image.iso HTTP/1.0"),
        ..LogRecord::default()
    };
    assert_eq!(
        line(HTTPLOG_FORMAT, &r),
        "127.0.0.1:33320 [15/Oct/2003:08:32:17.654] px-http px-http/srv1 9/0/7/14/+30 200 +243 - - ---- 3/3/3/1/0 0/0 \"GET /image.iso HTTP/1.0\""
    );
    // Connection failures after 3 retries.
    let r = LogRecord {
        http: true,
        client: addr("10.0.0.1:34552"),
        accept_date: date(OCT15 + 15 * 3600 + 26 * 60 + 31, 462),
        frontend: "px-http",
        backend: "px-http",
        server: Some("srv1"),
        idle: Some(0),
        request_done: Some(3183),
        total: 11215,
        status: Some(503),
        term: TermState::new(Who::Server, Phase::Connect),
        actconn: 205,
        feconn: 202,
        beconn: 202,
        srv_conn: 115,
        retries: 3,
        request_line: Some(b"HEAD / HTTP/1.0"),
        ..LogRecord::default()
    };
    assert_eq!(
        line(HTTPLOG_FORMAT, &r),
        "10.0.0.1:34552 [15/Oct/2003:15:26:31.462] px-http px-http/srv1 3183/-1/-1/-1/11215 503 0 - - SC-- 205/202/202/115/3 0/0 \"HEAD / HTTP/1.0\""
    );
    let r = LogRecord {
        redispatched: true,
        ..r
    };
    assert!(line("%rc", &r) == "+3");
}

#[test]
fn tcplog_manual_example() {
    let r = LogRecord {
        client: addr("10.0.1.2:33313"),
        accept_date: date(FEB6 - 83, 443),
        frontend: "fnt",
        backend: "bck",
        server: Some("srv1"),
        queue_done: Some(0),
        connect_done: Some(0),
        total: 5007,
        bytes_out: 212,
        retries: 3,
        ..LogRecord::default()
    };
    assert_eq!(
        line(TCPLOG_FORMAT, &r),
        "10.0.1.2:33313 [06/Feb/2009:12:12:51.443] fnt bck/srv1 0/0/5007 212 -- 0/0/0/0/3 0/0"
    );
    let r = LogRecord {
        term: TermState::new(Who::ClientTimeout, Phase::Data),
        retries: 0,
        ..r
    };
    assert!(line(TCPLOG_FORMAT, &r).ends_with(" 212 cD 0/0/0/0/0 0/0"));
}

#[test]
fn default_connect_format() {
    let r = LogRecord {
        http: true,
        client: addr("10.0.1.2:33312"),
        frontend_addr: addr("10.0.3.31:8012"),
        frontend: "www",
        ..LogRecord::default()
    };
    let mut out = Vec::new();
    LogFormat::connect().render(&r, &mut out);
    assert_eq!(
        out,
        b"Connect from 10.0.1.2:33312 to 10.0.3.31:8012 (www/HTTP)"
    );
    assert_eq!(LogFormat::connect().source(), DEFAULT_FORMAT);
    out.clear();
    LogFormat::connect().render(&LogRecord { http: false, ..r }, &mut out);
    assert!(out.ends_with(b"(www/TCP)"));
}

#[test]
fn flags() {
    let r = LogRecord {
        client: addr("10.0.1.2:33312"),
        accept_date: date(0x5C5342A0, 7),
        request_line: Some(b"GET /x?myparam=[some_brackets] HTTP/1.1"),
        frontend: "fe",
        tls: true,
        pid: 255,
        http: true,
        ..LogRecord::default()
    };
    assert_eq!(line("%{+X}Ts", &r), "5C5342A0");
    assert_eq!(
        line("%{+X}ci:%{+X}cp %{+X}ms %{+X}pid", &r),
        "0A000102:8220 07 FF"
    );
    assert_eq!(line("%{+E}HQ", &r), "?myparam=[some_brackets\\]");
    assert_eq!(line("%{+E,+Q}HQ", &r), "\"?myparam=[some_brackets\\]\"");
    assert_eq!(
        line("%{+Q}ft %ft %{+Q}f %{+Q}ci %{+Q}cp", &r),
        "\"fe~\" fe~ \"fe\" \"10.0.1.2\" 33312"
    );
    // %o applies to the following variables; -Q turns it off again.
    assert_eq!(line("%{+Q}o %f %b %{-Q}f %ST", &r), "\"fe\" \"\" fe -1");
    // Mandatory dash for empty strings, off with -M.
    assert_eq!(
        line("[%CC] [%{-M}CC] [%{+Q}CC] [%ID]", &r),
        "[-] [] [\"\"] [-]"
    );
    assert_eq!(line("%Ts.%ms", &r), "1548960416.007");
}

#[test]
fn request_parts_and_encoding() {
    let r = LogRecord {
        http: true,
        request_line: Some(b"POST http://h.example/p/a?q=1&b=\"2\" HTTP/1.1"),
        ..LogRecord::default()
    };
    assert_eq!(
        line("%HM|%HU|%HP|%HPO|%HQ|%HV", &r),
        "POST|http://h.example/p/a?q=1&b=#222#22|http://h.example/p/a|/p/a|?q=1&b=#222#22|HTTP/1.1"
    );
    let r = LogRecord {
        request_line: Some(b"GET /a#b\x01\xff HTTP/1.1"),
        ..r
    };
    assert_eq!(line("%{+Q}r", &r), "\"GET /a#23b#01#FF HTTP/1.1\"");
    assert_eq!(line("[%HQ] %HP", &r), "[] /a#23b#01#FF");
    let r = LogRecord {
        request_line: None,
        ..r
    };
    assert_eq!(line("%HM %HU %r", &r), "<BADREQ> <BADREQ> <BADREQ>");
}

#[test]
fn captures_and_separators() {
    let caps: [Option<&[u8]>; 3] = [Some(b"a b"), None, Some(b"x|y{\"}")];
    let r = LogRecord {
        req_captures: &caps,
        ..LogRecord::default()
    };
    assert_eq!(line("%hr", &r), "{a b||x#7Cy#7B#22#7D}");
    assert_eq!(line("%hrl", &r), "a b - x#7Cy#7B#22#7D");
    assert_eq!(line("%{+Q}hrl", &r), "\"a b\" \"\" \"x#7Cy#7B#22#7D\"");
    // Nothing at all without captures, and no doubled separator.
    assert_eq!(line("a %hs %hsl b", &r), "a b");
    // Separators merge; leading ones are dropped; text and %% count.
    assert_eq!(line("   x    y  %%  z ", &r), "x y % z ");
    assert_eq!(line("100%%", &r), "100%");
}

#[test]
fn all_variables_render() {
    let mut all = String::new();
    for (name, _, _) in VARS {
        all.push('%');
        all.push_str(name);
        all.push(' ');
    }
    let r = LogRecord {
        backend_src: addr("[::1]:4000"),
        server_addr: addr("192.168.0.1:80"),
        handshake: 2,
        idle: Some(3),
        hostname: "lb1",
        request_counter: 7,
        log_counter: 8,
        bytes_in: 99,
        unique_id: Some("abc"),
        ..http_record()
    };
    let out = line(&all, &r);
    assert!(out.contains(" ::1 4000 192.168.0.1 80 "), "{out}");
    assert!(out.contains(" lb1 7 8 "), "{out}");
    assert!(
        out.contains("[22/Nov/2026:02:58:15.128]") || out.contains("22/Nov/2026:02:58:15.128"),
        "{out}"
    );
    let mut j = Vec::new();
    compile(&all).unwrap().render_json(&r, &mut j);
    let j = String::from_utf8(j).unwrap();
    assert!(j.starts_with("{\"ci\":\"127.0.0.1\",\"cp\":34082,"), "{j}");
    assert!(j.contains("\"bi\":\"::1\",\"bp\":4000"), "{j}");
    assert!(j.contains("\"ID\":\"abc\""), "{j}");
    assert!(j.ends_with("\"rt\":7,\"lc\":8}"), "{j}");
}

#[test]
fn compile_errors() {
    assert!(compile("%ci %[]").unwrap_err().contains("empty sample"));
    let e = compile("%zz").unwrap_err();
    assert!(e.starts_with("no such format variable 'zz'"), "{e}");
    assert!(compile("100%").unwrap_err().contains("'%%'"));
    assert!(compile("%{+Z}r")
        .unwrap_err()
        .contains("unknown log-format flag 'Z'"));
    assert!(compile("%{Q}r").unwrap_err().contains("prefixed"));
    assert!(compile("%{+Q").unwrap_err().contains("missing '}'"));
    assert!(compile("%sslv %sslc").is_ok());
    assert_eq!(compile(HTTPLOG_FORMAT).unwrap().http_only_var(), Some("tr"));
    assert_eq!(compile(TCPLOG_FORMAT).unwrap().http_only_var(), None);
    assert_eq!(compile(HTTPLOG_CLF).unwrap().source(), HTTPLOG_CLF);
    assert!(compile("").is_ok());
}

#[test]
fn json_httplog() {
    assert_eq!(
        json(HTTPLOG_FORMAT, &http_record()),
        concat!(
            "{\"ci\":\"127.0.0.1\",\"cp\":34082,\"tr\":\"22/Nov/2026:02:58:15.123\",\"ft\":\"fe\",",
            "\"b\":\"bk\",\"s\":\"s1\",\"TR\":0,\"Tw\":0,\"Tc\":1,\"Tr\":2,\"Ta\":3,\"ST\":200,\"B\":1234,",
            "\"CC\":null,\"CS\":null,\"tsc\":\"----\",\"ac\":1,\"fc\":1,\"bc\":0,\"sc\":0,\"rc\":0,",
            "\"sq\":0,\"bq\":0,\"hr\":null,\"hs\":null,\"r\":\"GET / HTTP/1.1\"}"
        )
    );
}

#[test]
fn json_escaping_and_duplicates() {
    let caps: [Option<&[u8]>; 2] = [Some(b"a\\b"), None];
    let r = LogRecord {
        server: Some("we\"ird\\"),
        request_line: Some(b"GET /\"x\x02 HTTP/1.1"),
        req_captures: &caps,
        retries: 2,
        redispatched: true,
        logasap: true,
        bytes_out: 5,
        tls: true,
        frontend: "f",
        ..LogRecord::default()
    };
    assert_eq!(
        json("%s %r %hr %hrl %rc %B %s %ft %Tw %ci", &r),
        "{\"s\":\"we\\\"ird\\\\\",\"r\":\"GET /#22x#02 HTTP/1.1\",\"hr\":\"{a\\\\b|}\",\"hrl\":[\"a\\\\b\",null],\"rc\":2,\"B\":5,\"ft\":\"f~\",\"Tw\":-1,\"ci\":null}"
    );
    assert_eq!(json("text only", &r), "{}");
}

/// `option httpslog`: the manual's example line ends with
/// `0/0/0/0/0 1wt.eu/TLSv1.3/TLS_AES_256_GCM_SHA384`; in clear the TLS
/// samples are missing (`-`), the connection error code is 0.
#[test]
fn httpslog_and_tls_fetches() {
    let mut r = http_record();
    r.ssl_version = Some("TLSv1.3");
    r.ssl_cipher = Some("TLS_AES_256_GCM_SHA384");
    r.ssl_sni = Some("1wt.eu");
    r.ssl_resumed = Some(false);
    r.ssl_c_used = Some(false);
    assert!(line(HTTPSLOG_FORMAT, &r)
        .ends_with("\"GET / HTTP/1.1\" 0/0/0/0/0 1wt.eu/TLSv1.3/TLS_AES_256_GCM_SHA384"));
    r.ssl_resumed = Some(true);
    assert_eq!(
        line(
            "%[ssl_fc_is_resumed] %[ssl_c_used] %[ssl_c_verify] %[ssl_fc]",
            &r
        ),
        "1 0 0 1"
    );
    assert_eq!(
        json("%[ssl_fc_sni] %sslv %[ssl_fc_is_resumed]", &r),
        r#"{"ssl_fc_sni":"1wt.eu","sslv":"TLSv1.3","ssl_fc_is_resumed":1}"#
    );
    let clear = http_record();
    assert!(line(HTTPSLOG_FORMAT, &clear).ends_with("\"GET / HTTP/1.1\" 0/-/-/-/- -/-/-"));
    assert_eq!(
        json("%[ssl_fc_sni] %sslv %[ssl_c_verify]", &clear),
        r#"{"ssl_fc_sni":null,"sslv":null,"ssl_c_verify":null}"#
    );
    assert!(compile("%[ssl_fc_sni").unwrap_err().contains("missing ']'"));
}

/// Sample expressions other than the TLS fetches are the proxy's: the
/// format lists them and prints the values the record carries.
#[test]
fn proxy_evaluated_samples() {
    let f = compile("%ci %{+Q}[req.hdr(host),lower] [%[var(txn.x)]] %[status] %[ssl_fc_err,lower] %[req.hdr(x),regsub([a],b)]").unwrap();
    assert_eq!(
        f.samples(),
        [
            "req.hdr(host),lower",
            "var(txn.x)",
            "status",
            "ssl_fc_err,lower",
            "req.hdr(x),regsub([a],b)"
        ]
    );
    let vals: [Option<&[u8]>; 3] = [Some(b"example.com"), None, Some(b"200")];
    let r = LogRecord {
        client: Some("10.0.0.1:5000".parse().unwrap()),
        samples: &vals,
        ..Default::default()
    };
    assert_eq!(line(f.source(), &r), "10.0.0.1 \"example.com\" [-] 200 - -");
    let mut j = Vec::new();
    compile("%[status] %[var(txn.x)]").unwrap().render_json(
        &LogRecord {
            samples: &[Some(b"404"), None],
            ..Default::default()
        },
        &mut j,
    );
    assert_eq!(
        String::from_utf8(j).unwrap(),
        r#"{"status":"404","var(txn.x)":null}"#
    );
}

/// `unique-id-format`: missing values print nothing, `%o` flags and
/// separators as in log formats (HAProxy's documented example's parts).
#[test]
fn unique_id_formats() {
    let f = compile_unique_id("%{+X}o %ci:%cp_%pid  [%[var(txn.x)]]").unwrap();
    let r = LogRecord {
        client: Some("127.0.0.1:33430".parse().unwrap()),
        pid: 0x790a,
        samples: &[None],
        ..Default::default()
    };
    let mut out = Vec::new();
    f.render(&r, &mut out);
    assert_eq!(String::from_utf8(out).unwrap(), "7F000001:8296_790A []");
}

#[test]
fn address_variables_are_known_at_compile_time() {
    let f = compile("%ci %fp").unwrap();
    assert!(f.uses_frontend_addr());
    assert!(!f.uses_backend_src() && !f.uses_server_addr());
    let f = compile("%{+X}bi %sp").unwrap();
    assert!(!f.uses_frontend_addr());
    assert!(f.uses_backend_src() && f.uses_server_addr());
    let f = compile(HTTPLOG_FORMAT).unwrap();
    assert!(!f.uses_frontend_addr() && !f.uses_backend_src() && !f.uses_server_addr());
    assert!(LogFormat::connect().uses_frontend_addr());
    // Without addresses, each prints '-' (no server connection was made).
    let r = LogRecord {
        frontend_addr: None,
        ..http_record()
    };
    assert_eq!(line("%fi:%fp %bi:%bp %si:%sp", &r), "-:- -:- -:-");
    let r = LogRecord {
        backend_src: addr("10.0.0.2:40000"),
        server_addr: addr("[2001:db8::1]:8443"),
        ..http_record()
    };
    assert_eq!(
        line("%fi:%fp %bi:%bp %si:%sp %{+X}si:%{+X}sp", &r),
        "127.0.0.1:8080 10.0.0.2:40000 2001:db8::1:8443 20010DB8000000000000000000000001:20FB"
    );
}

/// A UNIX socket client (0.0.0.0 and its listener's id): HAProxy logs
/// `unix` and the id.
#[test]
fn unix_clients_log_unix_and_the_listener_id() {
    let r = LogRecord {
        client: addr("0.0.0.0:2"),
        ..http_record()
    };
    assert_eq!(line("%ci:%cp %{+Q}ci", &r), "unix:2 \"unix\"");
    assert!(line(HTTPLOG_FORMAT, &r).starts_with("unix:2 [22/Nov/2026"));
}
