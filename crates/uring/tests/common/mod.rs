//! Helpers shared by the ring's integration tests.

use fairlead_uring::{Config, Ring, UringSock};
use std::rc::Rc;
use std::time::Duration;

/// Runs `f` on a current-thread runtime with a ring of `cfg.recv_bufs`
/// 4 KiB receive buffers; false when io_uring cannot be set up here (the
/// test then says so and passes nothing).
pub fn with_ring<F, Fut>(cfg: Config, f: F) -> bool
where
    F: FnOnce(Rc<Ring>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    if let Err(e) = fairlead_uring::available() {
        eprintln!("io_uring unavailable here ({e}): skipped");
        return false;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let bufs = (0..cfg.recv_bufs).map(|_| vec![0u8; 4096]).collect();
        let ring = Ring::start(&cfg, bufs).expect("ring");
        tokio::time::timeout(Duration::from_secs(20), f(ring))
            .await
            .expect("test finished before its deadline");
    });
    true
}

/// A non-blocking listener on `ip`, any port.
pub fn listener(ip: &str) -> (std::net::TcpListener, std::net::SocketAddr) {
    let l = std::net::TcpListener::bind((ip, 0)).expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let a = l.local_addr().expect("addr");
    (l, a)
}

/// Writes all of `data` through the send queue.
pub async fn write_all(s: &UringSock, mut data: &[u8]) {
    while !data.is_empty() {
        match s.try_write(data, false) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                s.writable().await.expect("writable")
            }
            Err(e) => panic!("write: {e}"),
        }
    }
}
