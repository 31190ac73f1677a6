//! fairlead-term's HTTP/2 side against an independent client, the `h2`
//! crate: h2c with prior knowledge on the plain port (next to HTTP/1),
//! the query-string protocol, flow control both ways, many streams at
//! once, `C=1` as GOAWAY. TLS h2 is driven by fairlead-load's tests.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use fairlead_term::{start, TermHandle, TermOptions};
use h2::client::SendRequest;
use tokio::net::TcpStream;

fn term(ip: &str, name: &str) -> TermHandle {
    let addr: SocketAddr = format!("{ip}:0").parse().unwrap();
    start(
        &[addr],
        TermOptions {
            threads: 1,
            name: name.into(),
        },
    )
    .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An h2c (prior knowledge) client connection; the connection task is
/// returned so a test can see it end.
async fn connect(addr: SocketAddr) -> (SendRequest<Bytes>, tokio::task::JoinHandle<bool>) {
    let s = TcpStream::connect(addr).await.unwrap();
    let (send, conn) = h2::client::handshake(s).await.unwrap();
    let task = tokio::spawn(async move { conn.await.is_ok() });
    (send, task)
}

struct Got {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

/// Sends one request (with `body`, if not empty) and reads the whole
/// response, releasing the window as the body arrives.
async fn get(send: &mut SendRequest<Bytes>, method: &str, path: &str, body: &[u8]) -> Got {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("http://term{path}"))
        .body(())
        .unwrap();
    let mut send = send.clone().ready().await.unwrap();
    let (resp, mut stream) = send.send_request(req, body.is_empty()).unwrap();
    if !body.is_empty() {
        // More than the server's 65535-byte window: it must release.
        let mut rest = Bytes::copy_from_slice(body);
        while !rest.is_empty() {
            stream.reserve_capacity(rest.len());
            let cap = std::future::poll_fn(|cx| stream.poll_capacity(cx))
                .await
                .unwrap()
                .unwrap();
            let chunk = rest.split_to(cap.min(rest.len()));
            stream.send_data(chunk, rest.is_empty()).unwrap();
        }
    }
    let resp = resp.await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut b = resp.into_body();
    let mut out = Vec::new();
    while let Some(d) = b.data().await {
        let d = d.unwrap();
        b.flow_control().release_capacity(d.len()).unwrap();
        out.extend_from_slice(&d);
    }
    Got {
        status,
        headers,
        body: out,
    }
}

#[test]
fn h2c_prior_knowledge_query_protocol() {
    let t = term("127.0.0.171", "s1");
    let addr = t.local_addrs()[0];
    rt().block_on(async {
        let (mut c, _task) = connect(addr).await;
        let g = get(&mut c, "GET", "/", b"").await;
        assert_eq!(g.status, 200);
        assert_eq!(g.body, b"s1\n");
        assert_eq!(g.headers["x-served-by"], "s1");
        assert_eq!(g.headers["content-length"], "3");
        assert_eq!(g.headers["content-type"], "text/plain");

        let g = get(&mut c, "GET", "/?s=1000", b"").await;
        assert_eq!((g.status, g.body.len()), (200, 1000));
        assert_eq!(&g.body[..10], b"0123456789");
        assert_eq!(g.headers["content-length"], "1000");

        let g = get(&mut c, "GET", "/?r=503&s=7&k=1", b"").await;
        assert_eq!((g.status, g.body.len()), (503, 7));

        let g = get(&mut c, "GET", "/?r=204&s=9", b"").await;
        assert_eq!((g.status, g.body.len()), (204, 0));
        assert!(g.headers.get("content-length").is_none());

        let g = get(&mut c, "HEAD", "/?s=500", b"").await;
        assert_eq!((g.status, g.body.len()), (200, 0));
        assert_eq!(g.headers["content-length"], "500");

        let g = get(&mut c, "GET", "/?s=2k&R=1", b"").await;
        assert_eq!(g.body.len(), 2048);
        assert_eq!(g.headers["content-type"], "application/octet-stream");

        let g = get(&mut c, "GET", "/?times=4&s=5&t=20", b"").await;
        assert_eq!((g.status, g.body.len()), (200, 20));
        assert!(g.headers.get("content-length").is_none());

        // A 300 KiB request body: more than the server's stream window.
        let big = vec![b'x'; 300 << 10];
        let g = get(&mut c, "POST", "/?s=3", &big).await;
        assert_eq!((g.status, g.body.len()), (200, 3));
    });
    assert_eq!(t.requests(), 8);
    assert_eq!(t.connections(), 1);
}

#[test]
fn h2c_big_body_and_many_streams() {
    let t = term("127.0.0.172", "");
    let addr = t.local_addrs()[0];
    rt().block_on(async {
        let (mut c, _task) = connect(addr).await;
        // 5 MiB: past the block (1 MiB, repeated) and many windows.
        let g = get(&mut c, "GET", "/?s=5m", b"").await;
        assert_eq!(g.body.len(), 5 << 20);
        assert_eq!(&g.body[..64], &g.body[1 << 20..(1 << 20) + 64]);
        // 50 streams at once, each waiting 50 ms on the server: they are
        // independent, each gets its own body size.
        let mut set = tokio::task::JoinSet::new();
        for i in 0..50u32 {
            let mut c = c.clone();
            set.spawn(async move {
                let g = get(&mut c, "GET", &format!("/?t=50&s={i}"), b"").await;
                (i, g.status, g.body.len())
            });
        }
        let mut seen = 0;
        while let Some(r) = set.join_next().await {
            let (i, status, len) = r.unwrap();
            assert_eq!((status, len), (200, i as usize));
            seen += 1;
        }
        assert_eq!(seen, 50);
    });
    assert_eq!(t.requests(), 51);
    assert_eq!(t.connections(), 1);
}

#[test]
fn close_flag_sends_goaway() {
    let t = term("127.0.0.173", "g");
    let addr = t.local_addrs()[0];
    rt().block_on(async {
        let (mut c, task) = connect(addr).await;
        let g = get(&mut c, "GET", "/?C=1&s=10", b"").await;
        assert_eq!((g.status, g.body.len()), (200, 10));
        // The server went away: the connection ends cleanly (GOAWAY
        // NO_ERROR) and no new stream can be opened on it.
        let ended = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(ended.unwrap().unwrap(), "connection ended with an error");
        let req = http::Request::get("http://term/").body(()).unwrap();
        let refused = match c.ready().await {
            Ok(mut s) => s.send_request(req, true).is_err(),
            Err(_) => true,
        };
        assert!(refused);
    });
    assert_eq!(t.requests(), 1);
}

#[test]
fn http1_still_served_next_to_h2c() {
    use std::io::{Read, Write};
    let t = term("127.0.0.174", "");
    let addr = t.local_addrs()[0];
    // "P" then "O": starts like the preface, then is not it.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        b"POST /?s=4 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab",
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\n0123"), "{text}");
    rt().block_on(async {
        let (mut c, _task) = connect(addr).await;
        assert_eq!(get(&mut c, "GET", "/?s=4", b"").await.body, b"0123");
    });
    assert_eq!(t.requests(), 2);
    assert_eq!(t.connections(), 2);
}

/// Runs h2load (Debian nghttp2-client; `.ci/run` installs it) and returns
/// its "requests:" and "status codes:" lines.
fn h2load(args: &[&str]) -> (String, String) {
    let out = std::process::Command::new("h2load")
        .args(args)
        .output()
        .expect("h2load (apt-get install nghttp2-client; .ci/run installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |p: &str| {
        text.lines()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no '{p}' in h2load output:\n{text}"))
            .to_string()
    };
    (line("requests:"), line("status codes:"))
}

#[test]
fn h2load_cross_check_h2c_and_tls() {
    let t = term("127.0.0.175", "");
    let a = t.local_addrs()[0];
    let (reqs, codes) = h2load(&[
        "-n",
        "1000",
        "-c",
        "4",
        "-m",
        "10",
        &format!("http://{a}/?s=100"),
    ]);
    assert!(
        reqs.contains("1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed"),
        "{reqs}"
    );
    assert!(codes.contains("1000 2xx, 0 3xx, 0 4xx, 0 5xx"), "{codes}");
    assert_eq!((t.requests(), t.connections()), (1000, 4));

    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.176".into()]).unwrap();
    let pem = std::env::temp_dir().join(format!("fairlead-term-h2-{}.pem", std::process::id()));
    std::fs::write(&pem, ck.cert.pem() + &ck.key_pair.serialize_pem()).unwrap();
    let cfg = fairlead_term::tls::server_config(&pem).unwrap();
    std::fs::remove_file(&pem).unwrap();
    let t = fairlead_term::start_tls(
        &["127.0.0.176:0".parse().unwrap()],
        TermOptions::default(),
        cfg,
    )
    .unwrap();
    let a = t.local_addrs()[0];
    let (reqs, codes) = h2load(&[
        "-n",
        "400",
        "-c",
        "2",
        "-m",
        "10",
        &format!("https://{a}/?s=2k&times=2"),
    ]);
    assert!(
        reqs.contains("400 total, 400 started, 400 done, 400 succeeded, 0 failed"),
        "{reqs}"
    );
    assert!(codes.contains("400 2xx, 0 3xx, 0 4xx, 0 5xx"), "{codes}");
    assert_eq!((t.requests(), t.connections()), (400, 2));
}
