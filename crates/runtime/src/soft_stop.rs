//! The worker's main thread after start-up: it waits for signals.
//! SIGTERM and SIGINT stop at once; SIGUSR1 is the soft stop of a reload
//! (listeners close, the `peers` tables are handed over, connections
//! drain until `hard-stop-after`).

use crate::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The main thread's signal handlers, installed before the workers serve:
/// a SIGUSR1 (the soft stop of a reload) or SIGTERM that arrived before
/// them would end the process at once, by the signals' default action,
/// dropping every connection.
pub(crate) struct Signals {
    rt: tokio::runtime::Runtime,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let _in = rt.enter();
        let term = signal(SignalKind::terminate())?;
        let int = signal(SignalKind::interrupt())?;
        let usr1 = signal(SignalKind::user_defined1())?;
        drop(_in);
        Ok(Signals {
            rt,
            term,
            int,
            usr1,
        })
    }
}

/// Blocks the main thread on signals. Returns after a soft stop finished.
pub(crate) fn wait_for_signals(
    signals: Signals,
    shared: &Arc<Shared>,
    stop_tx: watch::Sender<bool>,
    grace: Option<Duration>,
    peers: Vec<fairlead_peers::Handle>,
) {
    let Signals {
        rt,
        mut term,
        mut int,
        mut usr1,
    } = signals;
    rt.block_on(async {
        tokio::select! {
            _ = term.recv() => exit_now(),
            _ = int.recv() => exit_now(),
            _ = usr1.recv() => {}
        }
        shared.notice("SIGUSR1 received: soft stop, closing listeners and draining connections");
        shared.stopping.store(true, Ordering::SeqCst);
        let _ = stop_tx.send(true);
        shared.freed.notify_waiters();
        // The stick tables of `peers` sections go to the new process.
        for p in &peers {
            p.hand_over();
        }
        let busy = || {
            shared.global.cur.load(Ordering::SeqCst) > 0
                || shared.listeners_open.load(Ordering::SeqCst) > 0
        };
        let drained = async {
            while busy() {
                let notified = shared.freed.notified();
                if !busy() {
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
            }
            // Read after the sessions' count (see `fairlead_net::uring_unsent`).
            flush_uring_sends().await;
        };
        let done = match grace {
            Some(g) => tokio::time::timeout(g, drained).await.is_ok(),
            None => {
                drained.await;
                true
            }
        };
        tokio::select! {
            _ = term.recv() => exit_now(),
            _ = int.recv() => exit_now(),
            _ = std::future::ready(()) => {}
        }
        let handed = tokio::task::spawn_blocking(move || {
            for p in &peers {
                p.wait(fairlead_peers::handover::HAND_OVER);
            }
        });
        tokio::select! {
            _ = term.recv() => exit_now(),
            _ = int.recv() => exit_now(),
            _ = handed => {}
        }
        if !done {
            eprintln!(
                "[WARNING]  hard stop: {} connection(s) still open after the grace period",
                shared.global.cur.load(Ordering::SeqCst)
            );
            exit_now();
        }
        shared.notice("soft stop complete");
        exit_now();
    });
}

/// How long a soft stop waits, once every session ended, for bytes that
/// io_uring connections still have to send (a peer that stopped reading
/// holds them). Default is 10 s.
const UNSENT_WAIT: Duration = Duration::from_secs(10);

/// Waits until the io_uring rings sent what ended sessions wrote last: a
/// write on io_uring returns once its bytes are queued, and the process's
/// exit would drop them with the rings. At most [`UNSENT_WAIT`].
async fn flush_uring_sends() {
    let end = tokio::time::Instant::now() + UNSENT_WAIT;
    while fairlead_net::uring_unsent() > 0 && tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A hard stop: the io_uring listeners are shut first (their rings outlive
/// the process briefly, and would keep the ports busy), then the process
/// exits.
fn exit_now() -> ! {
    fairlead_net::release_uring_listeners();
    std::process::exit(0)
}
