//! One worker thread: a tokio `current_thread` runtime with a `LocalSet`,
//! its own listening sockets, its own buffer and idle-connection pools.
//! Connections never leave the thread that accepted them.

use crate::{FrontendRt, Shared};
use fairlead_config::Mode;
use fairlead_net::Stop;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Pause after accept() fails for lack of file descriptors. Default is
/// 100 ms; a closing connection ends the pause earlier.
const FD_EXHAUSTION_PAUSE: Duration = Duration::from_millis(100);

pub(crate) fn run(
    shared: Arc<Shared>,
    listeners: Vec<Vec<std::net::TcpListener>>,
    stop: watch::Receiver<bool>,
) {
    fairlead_net::pool::init(shared.bufsize);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("worker runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        // Bridge the process-wide stop request to this worker's own signal.
        let local_stop = Rc::new(Stop::new());
        let bridge = local_stop.clone();
        let mut global_stop = stop;
        tokio::task::spawn_local(async move {
            stopped(&mut global_stop).await;
            bridge.trigger();
        });
        let mut accepts = Vec::new();
        for (fe_idx, ls) in listeners.into_iter().enumerate() {
            for l in ls {
                let l = match TcpListener::from_std(l) {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("[ALERT]    cannot register listener: {e}");
                        continue;
                    }
                };
                let fe = shared.frontends[fe_idx].clone();
                accepts.push(tokio::task::spawn_local(accept_loop(
                    shared.clone(),
                    fe,
                    l,
                    local_stop.clone(),
                )));
            }
        }
        for a in accepts {
            let _ = a.await;
        }
        // Listeners are closed; keep serving the connections in flight
        // until the main thread ends the process.
        std::future::pending::<()>().await;
    });
}

/// Waits until a stop is requested.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

async fn accept_loop(
    shared: Arc<Shared>,
    fe: Arc<FrontendRt>,
    listener: TcpListener,
    stop: Rc<Stop>,
) {
    let mut burst = 0usize;
    loop {
        // Stop accepting while a limit is reached; wake when a connection
        // ends (no spinning).
        while shared.global.full() || fe.limit.full() {
            let freed = shared.freed.notified();
            if !(shared.global.full() || fe.limit.full()) {
                break;
            }
            tokio::select! {
                _ = freed => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.wait() => return,
            }
        }
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                shared.global.cur.fetch_add(1, Ordering::Relaxed);
                fe.limit.cur.fetch_add(1, Ordering::Relaxed);
                let shared2 = shared.clone();
                let fe2 = fe.clone();
                let stop2 = stop.clone();
                tokio::task::spawn_local(async move {
                    serve(&fe2, stream, peer, &stop2).await;
                    let g = shared2.global.cur.fetch_sub(1, Ordering::SeqCst);
                    let f = fe2.limit.cur.fetch_sub(1, Ordering::SeqCst);
                    if g >= shared2.global.max
                        || f >= fe2.limit.max
                        || g == 1
                        || shared2.stopping.load(Ordering::Relaxed)
                    {
                        shared2.freed.notify_waiters();
                    }
                });
                burst += 1;
                if burst >= shared.maxaccept {
                    burst = 0;
                    tokio::task::yield_now().await;
                }
            }
            Err(e) if fairlead_net::is_fd_exhaustion(&e) => {
                eprintln!(
                    "[WARNING]  frontend '{}': accept(): {e}; pausing the listener (maxconn {} may be too high for the fd limit)",
                    fe.name, shared.global.max
                );
                let freed = shared.freed.notified();
                tokio::select! {
                    _ = freed => {}
                    _ = tokio::time::sleep(FD_EXHAUSTION_PAUSE) => {}
                    _ = stop.wait() => return,
                }
            }
            Err(_) => {
                // ECONNABORTED and similar: the next accept will do.
            }
        }
    }
}

async fn serve(
    fe: &FrontendRt,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    stop: &Stop,
) {
    match fe.mode {
        Mode::Http => fairlead_l7::serve_http(stream, peer, &fe.http, &fe.backend, stop).await,
        Mode::Tcp => {
            let front = fairlead_l4::FrontTimeouts {
                client: fe.client_timeout,
                client_fin: fe.client_fin,
            };
            let _ = fairlead_l4::serve_tcp(stream, peer, &fe.backend, front).await;
        }
    }
}
