//! https:// end-to-end tests: a self-signed certificate made at test time
//! (rcgen) and a small blocking rustls server (a thread per connection,
//! fixed HTTP/1.1 responses, keep-alive unless the request says close).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use fairlead_load::args::{self, Command};
use fairlead_load::Summary;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

struct Server {
    addr: SocketAddr,
    /// PEM of the self-signed certificate.
    pem: String,
    requests: Arc<AtomicU64>,
}

fn server(ip: &str) -> Server {
    let ck = rcgen::generate_simple_self_signed(vec![ip.to_string()]).unwrap();
    let pem = ck.cert.pem();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind(format!("{ip}:0")).unwrap();
    let addr = l.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let reqs = requests.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let (cfg, reqs) = (cfg.clone(), reqs.clone());
            std::thread::spawn(move || serve(cfg, s, &reqs));
        }
    });
    Server {
        addr,
        pem,
        requests,
    }
}

/// Serves one connection; any error just ends it.
fn serve(cfg: Arc<ServerConfig>, s: TcpStream, reqs: &AtomicU64) {
    let _ = s.set_nodelay(true);
    let Ok(conn) = ServerConnection::new(cfg) else {
        return;
    };
    let mut r = BufReader::new(StreamOwned::new(conn, s));
    loop {
        let mut close = false;
        let mut line = String::new();
        // Request line and headers (no request bodies in these tests).
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            close |= line.to_ascii_lowercase().starts_with("connection: close");
        }
        reqs.fetch_add(1, Relaxed);
        let resp: &[u8] = if close {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        };
        let st = r.get_mut();
        if st.write_all(resp).and_then(|_| st.flush()).is_err() {
            return;
        }
        if close {
            st.conn.send_close_notify();
            let _ = st.flush();
            return;
        }
    }
}

fn run(a: &str) -> Summary {
    let o = match args::parse(a.split_whitespace().map(String::from)).unwrap() {
        Command::Run(o) => *o,
        Command::Help => panic!("help"),
    };
    fairlead_load::run(&o, &mut std::io::sink()).unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("fairlead-load-tls-{}-{name}", std::process::id()))
}

#[test]
fn keep_alive_insecure() {
    let s = server("127.0.0.61");
    let r = run(&format!("-c 4 -t 2 -n 100 -k -q https://{}/", s.addr));
    assert_eq!(r.totals.responses, 100);
    assert_eq!(r.totals.status[2], 100);
    assert_eq!(r.totals.error_count(), 0);
    assert_eq!(s.requests.load(Relaxed), 100);
    // Keep-alive: one connection (and handshake) per -c at most.
    assert!(r.totals.opened <= 4, "{}", r.totals.opened);
    assert_eq!(r.totals.handshakes(), r.totals.opened);
    assert_eq!(r.hists.handshake.len(), r.totals.opened);
    // Decrypted HTTP bytes: at least the 2-byte bodies.
    assert!(r.totals.bytes > 200);
    let text = fairlead_load::report::text(&r);
    assert!(
        text.contains("tls: ") && text.contains("handshake"),
        "{text}"
    );
}

#[test]
fn close_mode_resumes_sessions() {
    let s = server("127.0.0.62");
    for v in ["1.3", "1.2"] {
        let r = run(&format!(
            "-c 1 -t 1 -n 20 --close -k --tls-version {v} -q https://{}/",
            s.addr
        ));
        assert_eq!(r.totals.responses, 20, "TLS {v}");
        assert_eq!(r.totals.error_count(), 0, "TLS {v}");
        assert_eq!(r.totals.opened, 20);
        assert_eq!(r.totals.handshakes(), 20);
        assert!(r.totals.tls_resumed > 0, "TLS {v}: {:?}", r.totals);
        assert!(r.totals.tls_full >= 1);
        assert_eq!(r.hists.handshake.len(), 20);
    }
    // Resumption off: every handshake is full.
    let r = run(&format!(
        "-c 2 -t 1 -n 10 --close -k --tls-resume off -q https://{}/",
        s.addr
    ));
    assert_eq!(r.totals.responses, 10);
    assert_eq!((r.totals.tls_full, r.totals.tls_resumed), (10, 0));
}

#[test]
fn verification_failures_are_tls_errors() {
    let s = server("127.0.0.63");
    // No -k, no --cacert: the self-signed certificate is not trusted.
    let r = run(&format!("-c 2 -t 1 -n 6 -q https://{}/", s.addr));
    assert_eq!(r.totals.responses, 0);
    assert_eq!(r.totals.errors[5], 6, "{:?}", r.totals);
    assert_eq!(r.totals.error_count(), 6);
    assert_eq!(r.totals.handshakes(), 0);
    assert_eq!(r.totals.open(), 0);
    assert_eq!(s.requests.load(Relaxed), 0);
    let text = fairlead_load::report::text(&r);
    assert!(text.contains("tls=6"), "{text}");
    // Trusted, but under another name (--sni): still rejected.
    let pem = tmp("other.pem");
    std::fs::write(&pem, &s.pem).unwrap();
    let r = run(&format!(
        "-n 3 -c 1 --cacert {} --sni other.example -q https://{}/",
        pem.display(),
        s.addr
    ));
    assert_eq!(r.totals.errors[5], 3);
    // A plain-text server behind an https:// URL: handshake error too.
    let l = TcpListener::bind("127.0.0.63:0").unwrap();
    let a = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let _ = (&s).write_all(b"HTTP/1.1 400 Bad\r\nConnection: close\r\n\r\n");
        }
    });
    let r = run(&format!("-n 2 -c 1 -q https://{a}/"));
    assert_eq!(r.totals.errors[5], 2, "{:?}", r.totals);
    std::fs::remove_file(pem).unwrap();
}

#[test]
fn cacert_verifies_and_json_has_handshakes() {
    let s = server("127.0.0.64");
    let pem = tmp("ca.pem");
    std::fs::write(&pem, &s.pem).unwrap();
    let j = tmp("tls.json");
    let r = run(&format!(
        "-c 2 -t 1 -n 30 --close --cacert {} --json {} -q https://{}/x",
        pem.display(),
        j.display(),
        s.addr
    ));
    assert_eq!(r.totals.responses, 30);
    assert_eq!(r.totals.error_count(), 0);
    assert_eq!(r.totals.handshakes(), 30);
    let json = std::fs::read_to_string(&j).unwrap();
    let hs = format!(
        "\"tls_handshakes\": {{\"total\":30,\"full\":{},\"resumed\":{},",
        r.totals.tls_full, r.totals.tls_resumed
    );
    assert!(json.contains(&hs), "{json}");
    assert!(json.contains("\"handshake\": {\"count\":30,"), "{json}");
    assert!(json.contains("\"tls\":0,"), "{json}");
    std::fs::remove_file(j).unwrap();
    // A file without certificates is refused up front.
    std::fs::write(&pem, "nothing here\n").unwrap();
    let o = match args::parse(
        [
            "-n",
            "1",
            "--cacert",
            pem.to_str().unwrap(),
            "https://127.0.0.64:1/",
        ]
        .map(String::from),
    )
    .unwrap()
    {
        Command::Run(o) => *o,
        Command::Help => panic!("help"),
    };
    assert!(fairlead_load::run(&o, &mut std::io::sink()).is_err());
    std::fs::remove_file(pem).unwrap();
}

/// Not a check: prints keep-alive req/s and --close handshakes/s against
/// the test server (`cargo test -p fairlead-load --release --test tls --
/// --ignored --nocapture`).
#[test]
#[ignore]
fn throughput_report() {
    let s = server("127.0.0.65");
    for a in ["-c 8 -t 1 -d 2 -k", "-c 8 -t 1 -d 2 -k --close"] {
        let r = run(&format!("{a} -q https://{}/", s.addr));
        println!("{a}:{}", fairlead_load::report::text(&r));
    }
}
