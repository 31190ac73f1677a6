//! [`Stop`]: a worker-local soft-stop signal.
//!
//! The process-wide stop request reaches each worker once (through a watch
//! channel); the worker then triggers its own `Stop`, which lives in that
//! thread only. Sessions check it with a plain load and wait on it with a
//! notification nobody else touches, so the request path shares nothing
//! with other threads.

use std::cell::Cell;
use tokio::sync::Notify;

/// A soft-stop flag for one worker thread.
#[derive(Default)]
pub struct Stop {
    set: Cell<bool>,
    notify: Notify,
}

impl Stop {
    pub fn new() -> Self {
        Stop::default()
    }

    /// True once a soft stop was requested.
    pub fn is_set(&self) -> bool {
        self.set.get()
    }

    /// Requests the soft stop and wakes every waiter.
    pub fn trigger(&self) {
        self.set.set(true);
        self.notify.notify_waiters();
    }

    /// A notification of the next trigger, for a hand-written wait (see
    /// [`crate::wait::IdleWait`]): enable it before reading
    /// [`Stop::is_set`] so that a trigger in between is not lost.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    /// Resolves when the soft stop is requested.
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_waiters() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let stop = std::rc::Rc::new(Stop::new());
            let s2 = stop.clone();
            let waiter = tokio::task::spawn_local(async move { s2.wait().await });
            tokio::task::yield_now().await;
            assert!(!stop.is_set());
            stop.trigger();
            waiter.await.unwrap();
            assert!(stop.is_set());
            stop.wait().await;
        });
    }
}
