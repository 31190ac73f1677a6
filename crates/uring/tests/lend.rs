//! Forwarding without copies (`UringSock::lend_from`) against real sockets
//! on loopback: a relay on the ring between a sending client and a
//! reading server. Lent bytes arrive whole and in order with what was
//! written before and after them, limits hold, and every receive buffer
//! comes back, also when the destination is reset.

mod common;
use common::*;
use fairlead_uring::{Config, Ring, UringListener, UringSock};
use std::io::{Read, Write};
use std::time::Duration;

const BUFS: u16 = 64;

fn cfg() -> Config {
    Config {
        recv_bufs: BUFS,
        ..Config::default()
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Accepts the client of `ip` on the ring, and connects through the ring
/// to a plain server there that reads everything (its bytes come out of
/// the returned thread). `send` is what the client writes, then it closes.
async fn relay_ends(
    ip: &str,
    send: Vec<u8>,
    server_rcvbuf: Option<usize>,
) -> (
    UringSock,
    UringSock,
    std::thread::JoinHandle<std::io::Result<Vec<u8>>>,
    std::sync::mpsc::Sender<()>,
) {
    let (l, addr) = listener(ip);
    let l = UringListener::new(l).expect("listener");
    let server = std::net::TcpListener::bind((ip, 0)).expect("bind server");
    let saddr = server.local_addr().expect("addr");
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let (c, _) = server.accept()?;
        if let Some(n) = server_rcvbuf {
            socket2::SockRef::from(&c).set_recv_buffer_size(n)?;
        }
        let mut c = c;
        go_rx.recv().expect("go");
        let mut got = Vec::new();
        c.read_to_end(&mut got).map(|_| got)
    });
    std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.write_all(&send).expect("client write");
    });
    let (src, _) = l.accept().await.expect("accept");
    let sock =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    // As the proxy's server sockets (without it, Nagle's algorithm and
    // delayed ACKs make a small window crawl).
    sock.set_nodelay(true).expect("nodelay");
    if server_rcvbuf.is_some() {
        sock.set_send_buffer_size(4096).expect("sndbuf");
    }
    let dst = UringSock::connect(sock, saddr).await.expect("connect");
    (src, dst, reader, go_tx)
}

/// Forwards `src` to `dst` until `src` ends, lending when it can and
/// copying otherwise; returns the bytes lent and copied.
async fn forward(src: &UringSock, dst: &UringSock) -> (usize, usize) {
    let (mut lent, mut copied) = (0, 0);
    let mut buf = vec![0u8; 4096];
    loop {
        dst.lend_ready().await.expect("room");
        src.readable().await.expect("readable");
        let n = dst.lend_from(src, usize::MAX, (false, false));
        if n > 0 {
            lent += n;
            continue;
        }
        match src.try_read(&mut buf) {
            Ok(0) => return (lent, copied),
            Ok(n) => {
                copied += n;
                write_all(dst, &buf[..n]).await;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

async fn buffers_back(ring: &Ring) {
    while ring.stats().bufs_free != u64::from(BUFS) || ring.unsent() != 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// 4 MiB (1 MiB through a small send buffer) through the relay, between a head and a tail written through the
/// send queue: the server gets every byte in order, nearly all of them
/// were lent, and every buffer goes back to the ring. Once with default
/// buffers, once with a small send buffer on the relay's side, which
/// makes most sends partial (a send of the queue and several loans stops
/// anywhere in them).
#[test]
fn lent_bytes_arrive_in_order_between_written_ones() {
    with_ring(cfg(), |ring| async move {
        for window in [None, Some(65536)] {
            let body = pattern(if window.is_some() { 1 << 20 } else { 4 << 20 });
            let before = ring.stats().lent;
            let (src, dst, reader, go) = relay_ends("127.0.0.67", body.clone(), window).await;
            go.send(()).expect("go");
            write_all(&dst, b"HEAD").await;
            let (lent, copied) = forward(&src, &dst).await;
            assert_eq!(lent + copied, body.len());
            assert!(lent >= body.len() / 2, "lent {lent}, copied {copied}");
            assert_eq!(ring.stats().lent - before, lent as u64);
            write_all(&dst, b"TAIL").await;
            drop((src, dst));
            let got = tokio::task::spawn_blocking(move || reader.join().expect("reader"))
                .await
                .expect("join")
                .expect("read to FIN");
            assert_eq!(got.len(), body.len() + 8, "window {window:?}");
            assert_eq!(&got[..4], b"HEAD");
            assert!(
                got[4..4 + body.len()] == body[..],
                "body bytes out of order (window {window:?})"
            );
            assert_eq!(&got[4 + body.len()..], b"TAIL");
            buffers_back(&ring).await;
        }
    });
}

/// Only whole chunks within `max` are lent; while lent bytes wait, the
/// send queue refuses writes (they would overtake them).
#[test]
fn lending_honours_max_and_holds_writes_back() {
    with_ring(cfg(), |ring| async move {
        let (src, dst, reader, go) = relay_ends("127.0.0.68", pattern(3000), Some(4096)).await;
        // The 3,000 bytes arrive in one chunk (they fit a 4 KiB buffer).
        let mut peek = [0u8; 4096];
        while src.try_peek(&mut peek).map_or(true, |n| n < 3000) {
            src.readable().await.expect("readable");
            tokio::task::yield_now().await;
        }
        assert_eq!(dst.lend_from(&src, 2999, (false, false)), 0);
        assert_eq!(dst.lend_from(&src, 3000, (false, false)), 3000);
        assert_eq!(
            dst.try_write(b"x", false).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock)
        );
        write_all(&dst, b"x").await;
        go.send(()).expect("go");
        drop((src, dst));
        let got = tokio::task::spawn_blocking(move || reader.join().expect("reader"))
            .await
            .expect("join")
            .expect("read to FIN");
        let mut want = pattern(3000);
        want.push(b'x');
        assert_eq!(got, want);
        buffers_back(&ring).await;
    });
}

/// A destination whose peer does not read, reset with lent bytes queued
/// (`abort`, then drop): every lent buffer goes back to the ring. (96 KiB
/// sent: a multishot receive may take a whole burst of buffers before its
/// cancel takes effect, and with most of the 64 taken nothing is lent.)
#[test]
fn a_reset_destination_gives_its_lent_buffers_back() {
    with_ring(cfg(), |ring| async move {
        let (src, dst, reader, go) = relay_ends("127.0.0.69", pattern(96 << 10), Some(4096)).await;
        // Lend until the destination's loans are full and its peer's
        // window is closed, or nothing more can be lent (receive buffers
        // short: the source's receive took a burst).
        let mut lent = 0;
        loop {
            let room = tokio::time::timeout(Duration::from_millis(200), dst.lend_ready());
            if room.await.is_err() {
                break;
            }
            src.readable().await.expect("readable");
            let n = dst.lend_from(&src, usize::MAX, (false, false));
            if n == 0 {
                break;
            }
            lent += n;
            tokio::task::yield_now().await;
        }
        assert!(lent > 0, "nothing lent");
        assert!(
            ring.stats().bufs_free < u64::from(BUFS),
            "loans hold buffers"
        );
        socket2::SockRef::from(&dst)
            .set_linger(Some(Duration::ZERO))
            .expect("linger 0");
        dst.abort();
        drop((src, dst));
        go.send(()).expect("go");
        let r = tokio::task::spawn_blocking(move || reader.join().expect("reader"))
            .await
            .expect("join");
        assert_eq!(
            r.map(|v| v.len()).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::ConnectionReset)
        );
        buffers_back(&ring).await;
    });
}
