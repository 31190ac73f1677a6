//! Parking idle keep-alive connections: parked after a response, served
//! again, closed at their deadline, at the soft stop and on shutdown.

use super::*;
use crate::{LocalService, ServiceRequest, ServiceResponse};
use std::cell::RefCell;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Answers every request with its URI as the body.
struct Echo;

impl LocalService for Echo {
    fn handle(&self, req: &ServiceRequest<'_>) -> Option<ServiceResponse> {
        Some(ServiceResponse {
            status: 200,
            content_type: "text/plain",
            headers: Vec::new(),
            body: req.uri.to_vec(),
        })
    }
}

/// Records the connections that ended.
#[derive(Default)]
struct Closed(RefCell<Vec<u64>>);

impl ConnAccount for Closed {
    fn closed(&self, id: u64) {
        self.0.borrow_mut().push(id);
    }
}

struct Bench {
    ctx: Rc<crate::HttpCtx>,
    closed: Rc<Closed>,
    listener: TcpListener,
}

impl Bench {
    async fn new(timeouts: fairlead_config::Timeouts) -> Bench {
        Bench {
            ctx: crate::session::tests::test_ctx(Some(Arc::new(Echo)), timeouts),
            closed: Rc::default(),
            listener: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        }
    }

    /// A client connection, served by a session task with a hold.
    async fn client(&self, id: u64) -> (TcpStream, Arc<ConnCtl>) {
        let c = TcpStream::connect(self.listener.local_addr().unwrap())
            .await
            .unwrap();
        let (s, peer) = self.listener.accept().await.unwrap();
        let ctl = ConnCtl::new();
        let acct: Rc<dyn ConnAccount> = self.closed.clone();
        let hold = ConnHold::new(acct, id, ctl.clone());
        let task = tokio::task::spawn_local(crate::serve_http_held(
            s.into(),
            peer,
            self.ctx.clone(),
            None,
            Some(hold),
        ));
        ctl.set_task(task.abort_handle());
        (c, ctl)
    }

    fn closed(&self) -> Vec<u64> {
        let mut v = self.closed.0.borrow().clone();
        v.sort_unstable();
        v
    }
}

/// One request and its response's body.
async fn roundtrip(c: &mut TcpStream, path: &str) -> String {
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    response(c, path).await
}

/// Reads the 200 response to a request for `path` (the origin answers
/// the path) and returns its body.
async fn response(c: &mut TcpStream, path: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
            .await
            .expect("response in time")
            .unwrap();
        assert!(n > 0, "closed before the response");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            if body.len() >= path.len() {
                return body.to_string();
            }
        }
    }
}

/// Reads until end of stream; fails on data or after 5 s.
async fn eof(c: &mut TcpStream) {
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
        .await
        .expect("closed in time")
        .unwrap_or(0);
    assert_eq!(n, 0, "unexpected data");
}

/// Polls `f` every millisecond until true; fails after 5 s.
async fn until(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn run(f: impl std::future::Future<Output = ()>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f);
}

#[test]
fn parked_then_served_again_on_the_same_socket() {
    run(async {
        let b = Bench::new(Default::default()).await;
        let (mut c, _ctl) = b.client(7).await;
        assert_eq!(roundtrip(&mut c, "/one").await, "/one");
        until("parked", || parked_count() == 1).await;
        for path in ["/two", "/three"] {
            assert_eq!(roundtrip(&mut c, path).await, path);
            until("parked again", || parked_count() == 1).await;
        }
        assert!(b.closed().is_empty(), "a parked connection stays open");
        drop(c);
        until("closed", || b.closed() == [7]).await;
        assert_eq!(parked_count(), 0);
    });
}

#[test]
fn parked_connection_closes_at_its_keep_alive_deadline() {
    run(async {
        let t = fairlead_config::Timeouts {
            http_keep_alive: Some(Duration::from_millis(100)),
            ..Default::default()
        };
        let b = Bench::new(t).await;
        let (mut c, _ctl) = b.client(1).await;
        assert_eq!(roundtrip(&mut c, "/a").await, "/a");
        let idle_from = Instant::now();
        until("parked", || parked_count() == 1).await;
        eof(&mut c).await;
        let waited = idle_from.elapsed();
        assert!(
            waited >= Duration::from_millis(95),
            "closed after {waited:?}"
        );
        assert!(waited < Duration::from_secs(2), "closed after {waited:?}");
        until("closed", || b.closed() == [1]).await;
        assert_eq!(parked_count(), 0);
    });
}

#[test]
fn soft_stop_and_shutdown_close_parked_connections() {
    run(async {
        let b = Bench::new(Default::default()).await;
        let (mut c1, ctl1) = b.client(1).await;
        let (mut c2, _ctl2) = b.client(2).await;
        let (mut c3, _ctl3) = b.client(3).await;
        for c in [&mut c1, &mut c2, &mut c3] {
            assert_eq!(roundtrip(c, "/x").await, "/x");
        }
        until("parked", || parked_count() == 3).await;
        // `shutdown session`, from another thread.
        std::thread::spawn(move || ctl1.shutdown()).join().unwrap();
        eof(&mut c1).await;
        until("one closed", || b.closed() == [1]).await;
        assert_eq!(parked_count(), 2);
        // The soft stop closes the others at once.
        b.ctx.stop.trigger();
        eof(&mut c2).await;
        eof(&mut c3).await;
        until("all closed", || b.closed() == [1, 2, 3]).await;
        assert_eq!(parked_count(), 0);
    });
}

#[test]
fn many_parked_connections_are_all_served_again() {
    run(async {
        let b = Bench::new(Default::default()).await;
        let mut clients = Vec::new();
        for id in 0..300 {
            let (mut c, _) = b.client(id).await;
            assert_eq!(roundtrip(&mut c, "/first").await, "/first");
            clients.push(c);
        }
        until("all parked", || parked_count() == 300).await;
        for c in &mut clients {
            c.write_all(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
        }
        for c in &mut clients {
            assert_eq!(response(c, "/next").await, "/next");
        }
        until("all parked again", || parked_count() == 300).await;
        assert!(b.closed().is_empty());
    });
}

/// What a parked connection costs besides its socket: the boxed entry
/// (the session), its slab slot and its deadline key.
#[test]
fn parked_entry_is_small() {
    let entry = std::mem::size_of::<Parked>();
    eprintln!("parked entry {entry} bytes");
    // 896 bytes for the task of an idle connection before parking.
    assert!(entry <= 224, "a parked entry is {entry} bytes");
}
