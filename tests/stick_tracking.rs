//! Stick counter tracking outside `http-request`, on the real binary:
//! `tcp-request connection|session|content track-scN` in TCP and HTTP
//! mode (the session's slots last for the connection, the stream's for
//! each request), HTTP/2 streams releasing their slots, the `table_*`
//! and `in_table` converters, and the `gpc(N)`/`gpt(N)` arrays with
//! `sc-inc-gpc(idx,sc)`/`sc-set-gpt(idx,sc)`.

mod common;
use common::*;
use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;

fn sock_path(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fairlead-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("admin.sock")
}

/// The entry line of `key` in `show table NAME` (waits until `want`
/// appears in it).
fn entry_until(sock: &std::path::Path, table: &str, key: IpAddr, want: &str) -> String {
    let mut line = String::new();
    wait_until(&format!("'{want}' in table {table}"), || {
        let out = ask(sock, &format!("show table {table} key {key}"));
        line = out.lines().nth(1).unwrap_or_default().to_string();
        line.contains(want)
    });
    line
}

/// A client connection from `src` (the test's own address: the
/// readiness probe of `Proxy::start` comes from 127.0.0.1 and is tracked
/// under that key).
fn connect_from(src: IpAddr, to: SocketAddr) -> TcpStream {
    try_connect_from(src, to).unwrap()
}

fn try_connect_from(src: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(src, 0).into())?;
    s.connect_timeout(&to.into(), DEADLINE)?;
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(DEADLINE))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// One request on its own connection from `src`.
fn request_from(src: IpAddr, to: SocketAddr, req: &str) -> Response {
    let mut s = connect_from(src, to);
    s.write_all(req.as_bytes()).unwrap();
    read_response(&mut BufReader::new(s), false).expect("response")
}

/// An origin that echoes what it reads until EOF.
fn echo_origin(ip: std::net::IpAddr) -> SocketAddr {
    let (addr, _) = raw_origin(ip, |mut s| {
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
    });
    addr
}

/// Sends `msg` and reads the echo back.
fn echo(s: &mut std::net::TcpStream, msg: &[u8]) {
    s.write_all(msg).unwrap();
    let mut back = vec![0u8; msg.len()];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, msg);
}

/// TCP mode: `tcp-request connection track-sc0` lasts for the
/// connection (conn_cur counts open connections, the reject rule reads
/// it), `tcp-request content track-sc1` is the stream's slot in another
/// table; sessions and bytes are counted, and everything is released when
/// the connections close.
#[test]
fn tcp_mode_connection_and_content_tracking() {
    let ip = test_ip();
    let origin = echo_origin(ip);
    let bind = free_addr(ip);
    let sock = sock_path("stick-tcp");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 1k expire 30s store conn_cur,conn_cnt,sess_cnt,bytes_in_cnt,bytes_out_cnt\n\
    tcp-request connection track-sc0 src\n\
    tcp-request connection reject if {{ sc_conn_cur(0) gt 2 }}\n\
    tcp-request content track-sc1 src table per_stream\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend per_stream\n    stick-table type ip size 1k expire 30s store conn_cur,conn_cnt\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let mut a = connect_from(ip, bind);
    echo(&mut a, b"hello");
    let mut b = connect_from(ip, bind);
    echo(&mut b, b"world!");
    let fe = entry_until(&sock, "fe", ip, "conn_cur=2");
    assert!(fe.contains(" use=2 "), "{fe}");
    let ps = entry_until(&sock, "per_stream", ip, "conn_cur=2");
    assert!(ps.contains(" conn_cnt=2 conn_cur=2"), "{ps}");
    // The third connection is over the limit: reset at once (the reset
    // may already be seen by the connect).
    if let Ok(mut c) = try_connect_from(ip, bind) {
        let _ = c.write_all(b"x");
        let mut buf = [0u8; 8];
        let n = c.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "the third connection is refused");
    }
    drop((a, b));
    let fe = entry_until(&sock, "fe", ip, "conn_cur=0");
    assert!(fe.contains(" use=0 "), "{fe}");
    // The refused connection was tracked (conn_cnt) but is no session.
    assert!(
        fe.contains(" conn_cnt=3 conn_cur=0 sess_cnt=2 bytes_in_cnt=11 bytes_out_cnt=11"),
        "{fe}"
    );
    let ps = entry_until(&sock, "per_stream", ip, "conn_cur=0");
    assert!(ps.contains(" use=0 "), "{ps}");
}

/// HTTP mode keep-alive: the connection's slot (`tcp-request connection
/// track-sc0`) counts every request of the connection and stays tracked
/// between them; the content slot (`tcp-request content track-sc1`) is
/// tracked and released once per request.
#[test]
fn http_mode_session_slot_spans_requests() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = sock_path("stick-http");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 1k expire 30s store conn_cur,http_req_cnt,http_err_cnt\n\
    tcp-request connection track-sc0 src\n\
    tcp-request content track-sc1 src table per_req\n\
    http-request deny deny_status 403 if {{ path /deny }}\n\
    http-after-response set-header X-Req %[sc0_http_req_cnt]\n\
    http-after-response set-header X-Cur %[sc0_conn_cur]\n\
    http-after-response set-header X-C1 %[sc1_conn_cnt]\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend per_req\n    stick-table type ip size 1k expire 30s store conn_cur,conn_cnt\n",
        sock.display()
    );
    let p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let s = connect_from(ip, bind);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // A denied request closes the connection: it comes last.
    for (i, path) in ["/", "/", "/deny"].iter().enumerate() {
        write!(w, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false)
            .unwrap_or_else(|| panic!("no response to {path}:\n{}", p.stderr()));
        let want = if *path == "/deny" { 403 } else { 200 };
        assert_eq!(resp.status, want);
        let n = (i + 1).to_string();
        assert_eq!(resp.header("x-req"), Some(n.as_str()), "request {i}");
        assert_eq!(resp.header("x-cur"), Some("1"));
        assert_eq!(resp.header("x-c1"), Some(n.as_str()));
        if i == 1 {
            // Between requests: the connection's slot is held, the
            // request's is released.
            let fe = entry_until(&sock, "fe", ip, "http_req_cnt=2");
            assert!(
                fe.contains(" use=1 ") && fe.contains(" conn_cur=1 "),
                "{fe}"
            );
            let pr = entry_until(&sock, "per_req", ip, "conn_cur=0");
            assert!(
                pr.contains(" use=0 ") && pr.contains(" conn_cnt=2 "),
                "{pr}"
            );
        }
    }
    drop((w, r));
    // The slots are released a moment after the connection ends: wait for
    // `use=0` itself.
    let pr = entry_until(&sock, "per_req", ip, " use=0 ");
    assert!(pr.contains(" conn_cnt=3 conn_cur=0"), "{pr}");
    let fe = entry_until(&sock, "fe", ip, " use=0 ");
    assert!(
        fe.contains(" conn_cur=0 http_req_cnt=3 http_err_cnt=1"),
        "{fe}"
    );
}

/// HTTP/2: each stream's `http-request track-sc0` slot counts the
/// stream's status and is released when the stream ends (conn_cur back to
/// 0 while the connection stays open), and the connection's `tcp-request
/// session` slot counts every stream.
#[test]
fn http2_streams_release_their_slots() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = sock_path("stick-h2");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind} proto h2\n\
    stick-table type ip size 1k expire 30s store conn_cur,http_req_cnt,http_err_cnt\n\
    tcp-request session track-sc1 src table conns\n\
    http-request track-sc0 src\n\
    http-request deny deny_status 403 if {{ path /deny }}\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend conns\n    stick-table type ip size 1k expire 30s store conn_cur,http_req_cnt,sess_cnt\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sk = tokio::net::TcpSocket::new_v4().unwrap();
        sk.bind(SocketAddr::new(ip, 0)).unwrap();
        let tcp = sk.connect(bind).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        for path in ["/", "/deny", "/"] {
            let req = http::Request::get(format!("http://x{path}"))
                .body(())
                .unwrap();
            let mut c = client.clone().ready().await.unwrap();
            let (resp, _) = c.send_request(req, true).unwrap();
            let resp = resp.await.unwrap();
            assert_eq!(resp.status(), if path == "/deny" { 403 } else { 200 });
            let mut body = resp.into_body();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
            }
        }
        // The connection is still open: the streams' slots are released,
        // the session's is held.
        let fe = entry_until(&sock, "fe", ip, "conn_cur=0");
        // The denied stream's status was counted when it ended.
        assert!(
            fe.contains(" use=0 ") && fe.contains(" conn_cur=0 http_req_cnt=3 http_err_cnt=1"),
            "{fe}"
        );
        let cs = entry_until(&sock, "conns", ip, "conn_cur=1");
        assert!(cs.contains(" use=1 "), "{cs}");
        assert!(cs.contains(" conn_cur=1 sess_cnt=1 http_req_cnt=3"), "{cs}");
        drop(client);
    });
    let cs = entry_until(&sock, "conns", ip, "conn_cur=0");
    assert!(cs.contains(" use=0 "), "{cs}");
}

/// The `gpc(N)`/`gpt(N)` arrays with `sc-inc-gpc(idx,sc)` and
/// `sc-set-gpt(idx,sc)` (an integer and an expression), read back by
/// `sc_get_gpc(idx,sc)`, `sc_gpc_rate(idx,sc)`, `sc_get_gpt(idx,sc)` and
/// the `in_table`/`table_*` converters.
#[test]
fn gpc_arrays_actions_fetches_and_converters() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = sock_path("stick-arr");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 1k expire 30s store gpc(3),gpc_rate(3,10s),gpt(2),http_req_cnt\n\
    http-request track-sc0 src\n\
    http-request sc-inc-gpc(2,0)\n\
    http-request sc-inc-gpc(2,0) if {{ path /twice }}\n\
    http-request sc-set-gpt(1,0) 7\n\
    http-request sc-set-gpt(0,0) path,length\n\
    http-response set-header X-Gpc %[sc_get_gpc(2,0)]\n\
    http-response set-header X-Rate %[sc_gpc_rate(2,0)]\n\
    http-response set-header X-Gpt1 %[sc_get_gpt(1,0)]\n\
    http-response set-header X-Gpt0 %[sc_get_gpt(0,0)]\n\
    http-response set-header X-In %[src,in_table(fe)]\n\
    http-response set-header X-Out %[req.hdr(x-ip),in_table(fe)]\n\
    http-response set-header X-Conv %[src,table_gpc(2,fe)]\n\
    http-response set-header X-Req %[src,table_http_req_cnt(fe)]\n\
    http-response set-header X-Trk %[src,table_trackers(fe)]\n\
    default_backend b\n\
backend b\n    server s {origin}\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let r = request_from(
        ip,
        bind,
        "GET /abc HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-gpc"), Some("1"));
    assert_eq!(r.header("x-rate"), Some("1"));
    assert_eq!(r.header("x-gpt1"), Some("7"));
    assert_eq!(r.header("x-gpt0"), Some("4"));
    assert_eq!(r.header("x-in"), Some("1"));
    assert_eq!(r.header("x-conv"), Some("1"));
    assert_eq!(r.header("x-req"), Some("1"));
    // The slot's own reference plus the converter's lookup, as HAProxy.
    assert_eq!(r.header("x-trk"), Some("2"));
    let r = request_from(
        ip,
        bind,
        "GET /twice HTTP/1.1\r\nhost: x\r\nx-ip: 192.0.2.77\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(r.header("x-gpc"), Some("3"));
    assert_eq!(r.header("x-rate"), Some("3"));
    assert_eq!(r.header("x-gpt0"), Some("6"));
    assert_eq!(r.header("x-out"), Some("0"));
    assert_eq!(r.header("x-conv"), Some("3"));
    let fe = entry_until(&sock, "fe", ip, "use=0");
    assert!(fe.contains(" gpt0=6 gpt1=7 gpc0=0 gpc1=0 gpc2=3 "), "{fe}");
}

/// The Prometheus exporter shows each table's size and entries in use
/// (`haproxy_sticktable_size`, `haproxy_sticktable_used`), in HAProxy's
/// order (reverse declaration order).
#[test]
fn prometheus_shows_table_size_and_use() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let metrics = free_addr(ip);
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 1k expire 30s store http_req_cnt\n\
    http-request track-sc0 src\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend names\n    stick-table type string len 8 size 2k\n\
frontend metrics\n    bind {metrics}\n\
    http-request use-service prometheus-exporter\n"
    );
    let _p = Proxy::start(&cfg, &[bind, metrics]);
    let r = request_from(
        ip,
        bind,
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let m = get(metrics, "/metrics").body_str();
    assert!(
        m.contains(
            "haproxy_sticktable_size{name=\"names\",type=\"string\"} 2048\nhaproxy_sticktable_size{name=\"fe\",type=\"ip\"} 1024\n"
        ),
        "{m}"
    );
    // The test client's entry only (the readiness probe sent no request,
    // the scrape went to another frontend).
    assert!(
        m.contains("haproxy_sticktable_used{name=\"fe\",type=\"ip\"} 1\n"),
        "{m}"
    );
    assert!(
        m.contains("haproxy_sticktable_used{name=\"names\",type=\"string\"} 0\n"),
        "{m}"
    );
}

/// HTTP mode counts the bytes of each request on its stick counters:
/// `bytes_in_cnt` is what the client sent, `bytes_out_cnt` what it got,
/// for forwarded requests and local replies alike, on the session's slot
/// and the request's.
#[test]
fn http_mode_counts_bytes_in_and_out() {
    let ip = test_ip();
    let (_t, origin) = term(ip, "o");
    let bind = free_addr(ip);
    let sock = sock_path("stick-bytes");
    let cfg = format!(
        "global\n    stats socket {} level admin\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
frontend fe\n    bind {bind}\n\
    stick-table type ip size 1k expire 30s store bytes_in_cnt,bytes_out_cnt\n\
    tcp-request connection track-sc0 src\n\
    http-request track-sc1 src table per_req\n\
    http-request return status 200 content-type text/plain string local if {{ path /local }}\n\
    default_backend b\n\
backend b\n    server s {origin}\n\
backend per_req\n    stick-table type ip size 1k expire 30s store bytes_in_cnt,bytes_out_cnt\n",
        sock.display()
    );
    let _p = Proxy::start(&cfg, &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let (mut sent, mut got) = (0usize, 0usize);
    for path in ["/?s=100", "/local"] {
        let mut s = connect_from(ip, bind);
        let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        assert!(
            all.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&all)
        );
        sent += req.len();
        got += all.len();
    }
    let want = format!("bytes_in_cnt={sent} bytes_out_cnt={got}");
    let fe = entry_until(&sock, "fe", ip, &want);
    assert!(fe.contains(&want), "{fe}");
    let pr = entry_until(&sock, "per_req", ip, &want);
    assert!(pr.contains(&want), "{pr}");
}
