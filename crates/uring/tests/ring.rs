//! The ring against real sockets on loopback: multishot accept, receives
//! from the buffer ring (also when it runs dry), queued sends that still
//! leave after the handle is dropped, shutdown, connect and reset.

mod common;
use common::*;
use fairlead_uring::{Config, UringListener, UringSock};
use std::io::{Read, Write};
use std::time::Duration;

async fn read_some(s: &UringSock, buf: &mut [u8]) -> usize {
    loop {
        s.readable().await.expect("readable");
        match s.try_read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r.expect("read"),
        }
    }
}

/// A client with a small receive buffer that reads nothing until told,
/// then reads to the end: the number of bytes, or the read's error.
fn late_reader(
    addr: std::net::SocketAddr,
) -> (
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<std::io::Result<usize>>,
) {
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let c = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        c.set_recv_buffer_size(4096).expect("rcvbuf");
        c.connect(&addr.into()).expect("connect");
        let mut c = std::net::TcpStream::from(c);
        go_rx.recv().expect("go");
        let mut got = Vec::new();
        c.read_to_end(&mut got).map(|_| got.len())
    });
    (go_tx, client)
}

/// Shrinks `s`'s send buffer and writes until its queue is full (the
/// peer not reading); returns the bytes written.
async fn fill(s: &UringSock) -> usize {
    socket2::SockRef::from(s)
        .set_send_buffer_size(4096)
        .expect("sndbuf");
    let chunk = vec![b'y'; 16384];
    let mut written = 0usize;
    loop {
        match s.try_write(&chunk, false) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return written,
            Err(e) => panic!("write: {e}"),
        }
        tokio::task::yield_now().await;
    }
}

/// An echo server on the ring: every connection's bytes come back in
/// order, then its end of stream; 1 MiB per client, 8 clients at once.
#[test]
fn echo_many_clients_in_order() {
    with_ring(Config::default(), |_ring| async move {
        let (l, addr) = listener("127.0.0.61");
        let l = UringListener::new(l).expect("listener");
        tokio::task::spawn_local(async move {
            loop {
                let (s, peer) = l.accept().await.expect("accept");
                assert_eq!(peer.ip().to_string(), "127.0.0.1");
                tokio::task::spawn_local(async move {
                    let mut buf = vec![0u8; 10000];
                    loop {
                        let n = read_some(&s, &mut buf).await;
                        if n == 0 {
                            s.shutdown_write();
                            return;
                        }
                        write_all(&s, &buf[..n]).await;
                    }
                });
            }
        });
        let clients: Vec<_> = (0..8u8)
            .map(|k| {
                std::thread::spawn(move || {
                    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i as u8) ^ k).collect();
                    let mut c = std::net::TcpStream::connect(addr).expect("connect");
                    let mut r = c.try_clone().expect("clone");
                    let reader = std::thread::spawn(move || {
                        let mut got = Vec::new();
                        r.read_to_end(&mut got).expect("read");
                        got
                    });
                    c.write_all(&data).expect("write");
                    c.shutdown(std::net::Shutdown::Write).expect("shutdown");
                    assert!(
                        reader.join().expect("reader") == data,
                        "client {k}: echo differs"
                    );
                })
            })
            .collect();
        let done = tokio::task::spawn_blocking(move || {
            for c in clients {
                c.join().expect("client");
            }
        });
        done.await.expect("clients");
    });
}

/// With two receive buffers and eight clients sending at once, receives
/// run out of buffers, are re-armed as buffers come back, and every byte
/// still arrives.
#[test]
fn receives_survive_an_empty_buffer_ring() {
    let cfg = Config {
        recv_bufs: 2,
        ..Config::default()
    };
    with_ring(cfg, |ring| async move {
        let (l, addr) = listener("127.0.0.62");
        let l = UringListener::new(l).expect("listener");
        let senders: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut c = std::net::TcpStream::connect(addr).expect("connect");
                    c.write_all(&vec![7u8; 200_000]).expect("write");
                })
            })
            .collect();
        let mut socks = Vec::new();
        for _ in 0..8 {
            socks.push(l.accept().await.expect("accept").0);
        }
        // Let all of them fill what they can before anyone reads.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while ring.stats().starved == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(ring.stats().starved > 0, "the ring never ran dry");
        let mut buf = vec![0u8; 3000];
        for s in &socks {
            let mut total = 0;
            loop {
                let n = read_some(s, &mut buf).await;
                if n == 0 {
                    break;
                }
                assert!(buf[..n].iter().all(|&b| b == 7));
                total += n;
            }
            assert_eq!(total, 200_000);
        }
        for s in senders {
            s.join().expect("sender");
        }
    });
}

/// Bytes queued just before the handle is dropped still leave, then the
/// connection ends with a FIN; after `abort` (SO_LINGER 0) it ends with a
/// reset.
#[test]
fn drop_sends_queued_bytes_then_fin_and_abort_resets() {
    with_ring(Config::default(), |_ring| async move {
        let (l, addr) = listener("127.0.0.63");
        let l = UringListener::new(l).expect("listener");
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            let mut got = Vec::new();
            c.read_to_end(&mut got).expect("read to FIN");
            let mut c2 = std::net::TcpStream::connect(addr).expect("connect 2");
            let mut b = [0u8; 16];
            let r = c2.read(&mut b);
            (got, r.map_err(|e| e.kind()))
        });
        let (s, _) = l.accept().await.expect("accept");
        let data = vec![b'x'; 60_000];
        write_all(&s, &data).await;
        drop(s);
        let (s2, _) = l.accept().await.expect("accept 2");
        socket2::SockRef::from(&s2)
            .set_linger(Some(Duration::ZERO))
            .expect("linger");
        s2.abort();
        drop(s2);
        let (got, second) = tokio::task::spawn_blocking(move || client.join().expect("client"))
            .await
            .expect("join");
        assert_eq!(got.len(), 60_000);
        assert_eq!(second, Err(std::io::ErrorKind::ConnectionReset));
    });
}

/// A connect through the ring, a request and its answer; a connect to a
/// closed port fails with "connection refused".
#[test]
fn connect_through_the_ring() {
    with_ring(Config::default(), |_ring| async move {
        let server = std::net::TcpListener::bind("127.0.0.64:0").expect("bind");
        let addr = server.local_addr().expect("addr");
        let t = std::thread::spawn(move || {
            let (mut c, _) = server.accept().expect("accept");
            let mut b = [0u8; 5];
            c.read_exact(&mut b).expect("read");
            assert_eq!(&b, b"hello");
            c.write_all(b"world").expect("write");
        });
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        let s = UringSock::connect(sock, addr).await.expect("connect");
        write_all(&s, b"hello").await;
        let mut got = Vec::new();
        let mut buf = [0u8; 16];
        loop {
            let n = read_some(&s, &mut buf).await;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"world");
        t.join().expect("server");
        // A port nobody listens on (bound, never listening).
        let idle = std::net::TcpListener::bind("127.0.0.64:0").expect("bind");
        let closed = idle.local_addr().expect("addr");
        drop(idle);
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        let e = UringSock::connect(sock, closed)
            .await
            .err()
            .expect("refused");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    });
}

/// A connection whose reader stops reading holds at most a few receive
/// buffers (its receive is cancelled, and the kernel's window pushes the
/// sender back) instead of emptying the ring; reading resumes it, every
/// byte arrives, and all buffers come back.
#[test]
fn a_stalled_reader_holds_few_buffers() {
    const BUFS: u64 = 256;
    let cfg = Config {
        recv_bufs: BUFS as u16,
        ..Config::default()
    };
    with_ring(cfg, |ring| async move {
        let (l, addr) = listener("127.0.0.65");
        let l = UringListener::new(l).expect("listener");
        const TOTAL: usize = 16 << 20;
        let sender = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            c.write_all(&vec![9u8; TOTAL]).expect("write");
        });
        let (s, _) = l.accept().await.expect("accept");
        // Arm the receive, then stop reading.
        let _ = std::future::poll_fn(|cx| std::task::Poll::Ready(s.poll_read_ready(cx))).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while ring.stats().bufs_free > BUFS - 4 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // An observation window: the sender keeps pushing meanwhile. The
        // cap is 4 chunks, plus those of the burst the kernel received
        // before the cancel was processed (buffers of 4 KiB here): far
        // from the whole ring, and no more once the cancel took effect.
        let mut first = None;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let held = BUFS - ring.stats().bufs_free;
            assert!(
                (4..=BUFS / 2).contains(&held),
                "the stalled connection holds {held} buffers"
            );
            assert_eq!(*first.get_or_insert(held), held, "still receiving");
        }
        let mut buf = vec![0u8; 16384];
        let mut total = 0;
        while total < TOTAL {
            let n = read_some(&s, &mut buf).await;
            assert!(n > 0, "closed after {total} bytes");
            total += n;
        }
        assert_eq!(read_some(&s, &mut buf).await, 0);
        assert_eq!(ring.stats().bufs_free, BUFS);
        tokio::task::spawn_blocking(move || sender.join().expect("sender"))
            .await
            .expect("join");
    });
}

/// A dropped connection whose peer does not read yet keeps its queued
/// bytes, counted as unsent until they have all left (a soft stop waits
/// for that count before the process exits).
#[test]
fn unsent_bytes_are_counted_until_they_left() {
    with_ring(Config::default(), |ring| async move {
        let (l, addr) = listener("127.0.0.64");
        let l = UringListener::new(l).expect("listener");
        let (go_tx, client) = late_reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        assert_eq!(ring.unsent(), 0);
        let written = fill(&s).await;
        assert!(written >= 65536, "the queue took {written} bytes");
        drop(s);
        tokio::task::yield_now().await;
        assert_eq!(ring.unsent(), 1, "queued bytes of a dropped connection");
        assert!(fairlead_uring::unsent() >= 1);
        go_tx.send(()).expect("go");
        let got = tokio::task::spawn_blocking(move || client.join().expect("client"))
            .await
            .expect("join")
            .expect("read to FIN");
        assert_eq!(got, written, "every queued byte arrived before the FIN");
        while ring.unsent() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
}

/// `stop_accepting` loses no connection: those the multishot accept took
/// off the socket's queue come out of `try_accept`, the others are still
/// in the socket's queue (for the next process sharing it).
#[test]
fn stop_accepting_loses_no_connection() {
    with_ring(Config::default(), |_ring| async move {
        let (l, addr) = listener("127.0.0.65");
        let backlog = l.try_clone().expect("dup of the listening socket");
        let l = UringListener::new(l).expect("listener");
        const N: usize = 6;
        let clients = std::thread::spawn(move || {
            let mut out = Vec::new();
            let first = std::net::TcpStream::connect(addr).expect("connect");
            out.push(first);
            for _ in 1..N {
                out.push(std::net::TcpStream::connect(addr).expect("connect"));
            }
            out
        });
        // The first accept arms the multishot accept.
        let (first, _) = l.accept().await.expect("accept");
        let mut clients = tokio::task::spawn_blocking(move || clients.join().expect("clients"))
            .await
            .expect("join");
        // Let the kernel hand some of the others over.
        tokio::task::yield_now().await;
        l.stop_accepting().await;
        let mut served = vec![first];
        while let Some(r) = l.try_accept() {
            served.push(r.expect("queued connection").0);
        }
        let from_ring = served.len();
        let mut rest = Vec::new();
        while let Ok((s, _)) = backlog.accept() {
            rest.push(s);
        }
        assert_eq!(
            from_ring + rest.len(),
            N,
            "{from_ring} from the ring, {} left in the socket's queue",
            rest.len()
        );
        // Every one of them is a live connection.
        for s in &served {
            write_all(s, b"k").await;
        }
        for mut s in rest {
            s.write_all(b"k").expect("write");
        }
        let clients = tokio::task::spawn_blocking(move || {
            for c in clients.iter_mut() {
                let mut b = [0u8; 1];
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                c.read_exact(&mut b).expect("a byte from the proxy side");
            }
        });
        clients.await.expect("clients read");
    });
}

/// A dropped connection whose peer never reads keeps its queued bytes for
/// the ring's linger time only: then it is reset, and nothing is left.
#[test]
fn a_peer_that_never_reads_is_reset_after_the_linger_time() {
    let cfg = Config {
        linger: Duration::from_millis(300),
        ..Config::default()
    };
    with_ring(cfg, |ring| async move {
        let (l, addr) = listener("127.0.0.66");
        let l = UringListener::new(l).expect("listener");
        let (go_tx, client) = late_reader(addr);
        let (s, _) = l.accept().await.expect("accept");
        fill(&s).await;
        drop(s);
        tokio::task::yield_now().await;
        assert_eq!(ring.unsent(), 1);
        while ring.stats().linger_resets == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        while ring.unsent() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        go_tx.send(()).expect("go");
        let r = tokio::task::spawn_blocking(move || client.join().expect("client"))
            .await
            .expect("join");
        assert_eq!(
            r.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::ConnectionReset)
        );
    });
}
