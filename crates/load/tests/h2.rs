//! `--h2` end to end: against an in-process fairlead-term (h2c with prior
//! knowledge, and TLS with ALPN h2), and against an independent server,
//! the `h2` crate (flow control, RST_STREAM, GOAWAY).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use fairlead_load::args::{self, Command};
use fairlead_load::stats::ErrKind;
use fairlead_load::Summary;
use fairlead_term::{start, start_tls, TermHandle, TermOptions};

fn term(ip: &str) -> TermHandle {
    start(
        &[format!("{ip}:0").parse().unwrap()],
        TermOptions {
            threads: 1,
            name: "t".into(),
        },
    )
    .unwrap()
}

fn run(a: &str) -> Summary {
    let o = match args::parse(a.split_whitespace().map(String::from)).unwrap() {
        Command::Run(o) => *o,
        Command::Help => panic!("help"),
    };
    fairlead_load::run(&o, &mut std::io::sink()).unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("fairlead-load-h2-{}-{name}", std::process::id()))
}

#[test]
fn h2c_streams_against_term() {
    let t = term("127.0.0.181");
    let a = t.local_addrs()[0];
    let s = run(&format!(
        "--h2 --h2-streams 8 -c 3 -t 1 -n 500 -q http://{a}/?s=100"
    ));
    assert_eq!(s.totals.responses, 500);
    assert_eq!(s.totals.sent, 500);
    assert_eq!(s.totals.status[2], 500);
    assert_eq!(s.totals.error_count(), 0);
    assert_eq!(s.hists.ttlb.len(), 500);
    assert_eq!(t.requests(), 500);
    // One connection per -c, all closed at the end.
    assert_eq!((s.totals.opened, t.connections()), (3, 3));
    assert_eq!(s.totals.open(), 0);
    // At least the bodies and a frame header each.
    assert!(s.totals.bytes >= 500 * 109, "{}", s.totals.bytes);
    let text = fairlead_load::report::text(&s);
    assert!(text.contains("reset=0"), "{text}");
}

#[test]
fn h2c_statuses_bodies_and_big_responses() {
    let t = term("127.0.0.182");
    let a = t.local_addrs()[0];
    // 3 MiB bodies: past the 1 MiB stream window this side advertises, so
    // the responses only complete if WINDOW_UPDATE frames go out.
    let s = run(&format!("--h2 -c 1 -n 6 -q http://{a}/?s=3m"));
    assert_eq!(s.totals.responses, 6);
    assert!(s.totals.bytes >= 6 * (3 << 20), "{}", s.totals.bytes);
    // Status classes, and a request body larger than the server's window.
    let body = tmp("body");
    std::fs::write(&body, vec![b'z'; 200_000]).unwrap();
    let s = run(&format!(
        "--h2 -c 2 -n 40 -m POST --body-file {} -q http://{a}/?r=503",
        body.display()
    ));
    assert_eq!((s.totals.responses, s.totals.status[5]), (40, 40));
    assert_eq!(s.totals.error_count(), 0);
    std::fs::remove_file(body).unwrap();
}

#[test]
fn goaway_requests_go_on_a_new_connection() {
    let t = term("127.0.0.183");
    let a = t.local_addrs()[0];
    // C=1: every response comes with a GOAWAY; the streams the server did
    // not take are sent again on the next connection, none is lost.
    let s = run(&format!(
        "--h2 --h2-streams 5 -c 1 -n 60 -q http://{a}/?C=1"
    ));
    assert_eq!(s.totals.responses, 60);
    assert_eq!(s.totals.error_count(), 0);
    assert_eq!(t.requests(), 60);
    assert!(s.totals.opened >= 12, "{}", s.totals.opened);
    assert_eq!(t.connections(), s.totals.opened);
}

#[test]
fn timeout_counts_streams_in_flight() {
    let t = term("127.0.0.184");
    let a = t.local_addrs()[0];
    let s = run(&format!(
        "--h2 --h2-streams 4 -c 1 -n 4 --timeout 300 -q http://{a}/?t=5000"
    ));
    assert_eq!(s.totals.responses, 0);
    assert_eq!(s.totals.errors[ErrKind::Timeout as usize], 4);
}

#[test]
fn tls_h2_against_term() {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.185".into()]).unwrap();
    let pem = tmp("term.pem");
    std::fs::write(&pem, ck.cert.pem() + &ck.key_pair.serialize_pem()).unwrap();
    let cfg = fairlead_term::tls::server_config(&pem).unwrap();
    let t = start_tls(
        &["127.0.0.185:0".parse().unwrap()],
        TermOptions::default(),
        cfg,
    )
    .unwrap();
    let a = t.local_addrs()[0];
    let s = run(&format!(
        "--h2 --h2-streams 10 -k -c 4 -t 2 -n 400 -q https://{a}/?s=2k"
    ));
    assert_eq!(s.totals.responses, 400);
    assert_eq!(s.totals.status[2], 400);
    assert_eq!(s.totals.error_count(), 0);
    assert_eq!(t.requests(), 400);
    assert_eq!(s.totals.handshakes(), 4);
    assert!(s.totals.bytes >= 400 * 2048);
    // Offering only http/1.1 to an h2-only listener: no protocol agreed
    // (rustls refuses the handshake), every request fails as tls.
    let s = run(&format!(
        "--h2 --alpn http/1.1 -k -c 1 -n 3 -q https://{a}/"
    ));
    assert_eq!(s.totals.responses, 0);
    assert_eq!(s.totals.error_count(), 3, "{:?}", s.totals);
    std::fs::remove_file(pem).unwrap();
}

/// An `h2`-crate server: every 4th stream (by arrival) is reset with
/// INTERNAL_ERROR, the others get a `size`-byte body, sent as the client's
/// windows allow.
fn h2_server(ip: &str, size: usize) -> (SocketAddr, Arc<AtomicU64>) {
    let l = std::net::TcpListener::bind(format!("{ip}:0")).unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            loop {
                let Ok((s, _)) = l.accept().await else { return };
                let count = count.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(s).await else {
                        return;
                    };
                    while let Some(Ok((_req, mut resp))) = conn.accept().await {
                        let n = count.fetch_add(1, Relaxed);
                        tokio::spawn(async move {
                            if n % 4 == 3 {
                                resp.send_reset(h2::Reason::INTERNAL_ERROR);
                                return;
                            }
                            let r = http::Response::builder().status(200).body(()).unwrap();
                            let Ok(mut tx) = resp.send_response(r, false) else {
                                return;
                            };
                            let mut rest = Bytes::from(vec![b'b'; size]);
                            while !rest.is_empty() {
                                tx.reserve_capacity(rest.len());
                                let cap = std::future::poll_fn(|cx| tx.poll_capacity(cx)).await;
                                let Some(Ok(cap)) = cap else { return };
                                let chunk = rest.split_to(cap.min(rest.len()));
                                if tx.send_data(chunk, rest.is_empty()).is_err() {
                                    return;
                                }
                            }
                        });
                    }
                });
            }
        });
    });
    (addr, seen)
}

#[test]
fn interop_with_h2_crate_server() {
    // 1.5 MiB bodies: the h2 crate honours our 1 MiB stream window, so
    // each response needs WINDOW_UPDATE frames from this side.
    let (a, seen) = h2_server("127.0.0.186", 1536 << 10);
    let s = run(&format!("--h2 --h2-streams 4 -c 1 -n 40 -q http://{a}/"));
    assert_eq!(seen.load(Relaxed), 40);
    assert_eq!(s.totals.responses, 30);
    assert_eq!(s.totals.errors[ErrKind::Reset as usize], 10);
    assert_eq!(s.totals.error_count(), 10);
    assert!(s.totals.bytes >= 30 * (1536 << 10));
    assert_eq!(s.totals.opened, 1);
}
