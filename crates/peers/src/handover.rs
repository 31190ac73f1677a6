//! The reload hand-over: a stopping process teaches its tables to the
//! process that replaces it, through the local peer's address, as
//! HAProxy does on a soft restart.
//!
//! The stopping process closes its peers listener first, so that the new
//! process (which retries binding the same address) can take it. It then
//! connects to that address as the local peer, sends every table (the
//! teach) followed by "resynchronisation finished", and waits until the
//! new process acknowledged the last update of each table, or until
//! [`HAND_OVER`] passed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::sync::{read_lines, Shared};
use crate::wire::{self, code, Message};

/// How long a stopping process tries to hand its tables over. Default is
/// 10 s (the new process reports ready before the old one is told to
/// stop, so it normally takes a few milliseconds).
pub const HAND_OVER: Duration = Duration::from_secs(10);

/// How often the stopping process tries to reach the new one.
const RETRY: Duration = Duration::from_millis(50);

/// Teaches every table to the process now listening on `addr` (the local
/// peer's address). Returns whether every table's last update was
/// acknowledged in time.
pub(crate) async fn hand_over(shared: &Rc<Shared>, addr: SocketAddr) -> bool {
    let deadline = Instant::now() + HAND_OVER;
    let target = match addr.ip().is_unspecified() {
        true if addr.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        true => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        false => addr,
    };
    let local = shared.local().to_string();
    let mut s = loop {
        if let Some(s) = open(&local, target).await {
            break s;
        }
        if Instant::now() + RETRY > deadline {
            shared.warn(&format!(
                "no new process took over the local peer address {addr}; the tables were not handed over"
            ));
            return false;
        }
        tokio::time::sleep(RETRY).await;
    };
    let (mut out, last) = shared.teach_with_last();
    wire::encode_control(&mut out, code::CTRL_RESYNC_FINISHED);
    let left = deadline.saturating_duration_since(Instant::now());
    if !matches!(
        tokio::time::timeout(left, s.write_all(&out)).await,
        Ok(Ok(()))
    ) {
        return false;
    }
    let done = tokio::time::timeout_at(deadline, acked(&mut s, last)).await;
    done.unwrap_or(false)
}

/// Connects and completes the handshake as the local peer.
async fn open(local: &str, addr: SocketAddr) -> Option<TcpStream> {
    let mut s = tokio::time::timeout(RETRY * 10, TcpStream::connect(addr))
        .await
        .ok()?
        .ok()?;
    let _ = s.set_nodelay(true);
    let hello = wire::hello(local, local, std::process::id());
    s.write_all(hello.as_bytes()).await.ok()?;
    let (lines, _) = read_lines(&mut s, 1).await?;
    (lines.first().map(|l| l.trim()) == Some("200")).then_some(s)
}

/// Reads until every table in `last` (table id → last update sent) is
/// acknowledged; what the new process sends besides acks is ignored.
async fn acked(s: &mut TcpStream, mut last: HashMap<u64, u32>) -> bool {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 4096];
    while !last.is_empty() {
        let n = match s.read(&mut chunk).await {
            Ok(n) if n > 0 => n,
            _ => return false,
        };
        buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
        loop {
            match wire::decode(&buf) {
                Ok(Some((m, used))) => {
                    buf.drain(..used);
                    if let Message::Ack { id, update } = m {
                        if last.get(&id).is_some_and(|&l| update >= l) {
                            last.remove(&id);
                        }
                    }
                }
                Ok(None) => break,
                Err(_) => return false,
            }
        }
    }
    true
}
