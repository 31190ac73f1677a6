//! Idle keep-alive HTTP/1 connections without a task.
//!
//! Between two requests a keep-alive connection only waits: for its next
//! request, its idle timeout, or the worker's soft stop. A tokio task for
//! that wait cost 896 bytes per connection (tokio rounds a task to 128
//! bytes). Instead, once its response is sent and nothing is buffered, a
//! connection's task ends and its [`Session`] is *parked* in the worker's
//! idle set: one boxed entry, a slot in a slab, and a key in a
//! deadline-ordered set.
//!
//! Each connection has a [`ConnCtl`] (shared with the runtime's session
//! list, for `shutdown session`), which is also the waker its socket's
//! readiness is registered with while parked: a wake-up pushes the entry's
//! slot to the worker's ready list and wakes the worker's one *reaper*
//! task. The reaper polls only the entries that were woken, gives each
//! readable one a fresh task (which reads and serves the request as
//! before), closes those whose deadline passed (one timer, for the
//! earliest deadline), and closes them all at the soft stop.
//!
//! A parked connection still holds its [`ConnHold`]: it stays counted in
//! the frontend's and the process's current connections and listed by
//! `show sess` exactly as when it had a task.

use crate::session::{finish, serve_resumed, Session};
use fairlead_net::profile::{Profiled, TaskKind};
use fairlead_net::Stop;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// The slot value of a connection that is not parked.
const NOT_PARKED: usize = usize::MAX;

/// What the runtime counts per open connection (current connections,
/// `show sess`); told once when the connection ends.
pub trait ConnAccount {
    /// The connection `id` ended.
    fn closed(&self, id: u64);
}

/// One open connection's place in the runtime's accounts: while it lives
/// the connection counts as open; dropping it tells [`ConnAccount::closed`].
/// It moves with the connection, from its task to the idle set and back.
pub struct ConnHold {
    acct: Rc<dyn ConnAccount>,
    id: u64,
    ctl: Arc<ConnCtl>,
}

impl ConnHold {
    /// The hold of connection `id`, controlled through `ctl`.
    pub fn new(acct: Rc<dyn ConnAccount>, id: u64, ctl: Arc<ConnCtl>) -> Self {
        ConnHold { acct, id, ctl }
    }

    /// The connection's control.
    pub fn ctl(&self) -> &Arc<ConnCtl> {
        &self.ctl
    }
}

impl Drop for ConnHold {
    fn drop(&mut self) {
        self.acct.closed(self.id);
    }
}

/// The worker's list of parked connections woken since the reaper last
/// ran (their slots), and the reaper's wake-up.
#[derive(Default)]
struct Ready {
    list: Mutex<Vec<usize>>,
    notify: Notify,
}

impl Ready {
    fn push(&self, slot: usize) {
        lock(&self.list).push(slot);
        self.notify.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Controls one connection from any thread (`shutdown session`), whether
/// it runs in a task or is parked; also the waker of its socket while it
/// is parked.
pub struct ConnCtl {
    ready: Arc<Ready>,
    /// The idle set slot while parked, [`NOT_PARKED`] otherwise.
    slot: AtomicUsize,
    state: Mutex<CtlState>,
}

#[derive(Default)]
struct CtlState {
    /// The connection's task, while it has one.
    task: Option<AbortHandle>,
    /// `shutdown session` was asked.
    killed: bool,
}

thread_local! {
    static READY: Arc<Ready> = Arc::default();
    static SET: RefCell<Option<(Rc<IdleSet>, AbortHandle)>> = const { RefCell::new(None) };
}

impl ConnCtl {
    /// The control of a connection of the calling worker thread.
    pub fn new() -> Arc<ConnCtl> {
        Arc::new(ConnCtl {
            ready: READY.with(Arc::clone),
            slot: AtomicUsize::new(NOT_PARKED),
            state: Mutex::new(CtlState::default()),
        })
    }

    /// Records the connection's task, so that [`ConnCtl::shutdown`] can
    /// abort it; aborts it at once if a shutdown came first.
    pub fn set_task(&self, task: AbortHandle) {
        let mut st = lock(&self.state);
        if st.killed {
            task.abort();
        } else {
            st.task = Some(task);
        }
    }

    /// Closes the connection (`shutdown session`): its task is aborted, or
    /// its parked entry closed by the reaper. Any thread.
    pub fn shutdown(self: &Arc<Self>) {
        let mut st = lock(&self.state);
        st.killed = true;
        if let Some(t) = st.task.take() {
            t.abort();
        }
        drop(st);
        self.wake_by_ref();
    }

    fn killed(&self) -> bool {
        lock(&self.state).killed
    }
}

impl Wake for ConnCtl {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let slot = self.slot.load(Ordering::Acquire);
        if slot != NOT_PARKED {
            self.ready.push(slot);
        }
    }
}

/// A parked connection. Its deadline is not kept: it is
/// [`Session::idle_deadline`], which does not change while it is parked.
struct Parked {
    s: Session,
}

/// The worker's parked connections.
struct IdleSet {
    slots: RefCell<Slab>,
    /// (deadline, slot) of the entries with a deadline.
    deadlines: RefCell<BTreeSet<(Instant, usize)>>,
    ready: Arc<Ready>,
    stop: Rc<Stop>,
}

/// Boxed entries by slot, with the free slots for reuse.
#[derive(Default)]
struct Slab {
    entries: Vec<Option<Box<Parked>>>,
    free: Vec<usize>,
}

impl Slab {
    fn vacant(&self) -> usize {
        self.free.last().copied().unwrap_or(self.entries.len())
    }

    fn insert_at(&mut self, slot: usize, p: Box<Parked>) {
        if self.free.last() == Some(&slot) {
            self.free.pop();
        }
        if slot == self.entries.len() {
            self.entries.push(Some(p));
        } else if let Some(e) = self.entries.get_mut(slot) {
            *e = Some(p);
        }
    }

    fn take(&mut self, slot: usize) -> Option<Box<Parked>> {
        let p = self.entries.get_mut(slot)?.take()?;
        self.free.push(slot);
        Some(p)
    }

    fn get(&self, slot: usize) -> Option<&Parked> {
        self.entries.get(slot)?.as_deref()
    }

    fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

/// The calling worker's idle set, made (with its reaper task) on first use.
/// A new one replaces one whose reaper is gone (its runtime ended: only
/// in tests, where a thread may run several runtimes).
fn idle_set(stop: &Rc<Stop>) -> Rc<IdleSet> {
    SET.with(|s| {
        let mut s = s.borrow_mut();
        if let Some((set, reaper)) = s.as_ref() {
            if !reaper.is_finished() {
                return set.clone();
            }
        }
        let set = Rc::new(IdleSet {
            slots: RefCell::default(),
            deadlines: RefCell::default(),
            ready: READY.with(Arc::clone),
            stop: stop.clone(),
        });
        let task = tokio::task::spawn_local(reaper(set.clone()));
        *s = Some((set.clone(), task.abort_handle()));
        set
    })
}

/// Number of connections parked on the calling worker thread.
pub fn parked_count() -> usize {
    SET.with(|s| {
        s.borrow()
            .as_ref()
            .map_or(0, |(set, _)| set.slots.borrow().len())
    })
}

/// Parks an idle session, which needs a [`ConnHold`] (see
/// [`Session::can_park`]). `None`: it is parked (or was closed), the
/// caller's task ends; `Some`: it is already readable (or has no hold),
/// the task goes on with it.
pub(crate) fn park(mut s: Session) -> Option<Session> {
    let Some(ctl) = s.hold.as_ref().map(|h| h.ctl.clone()) else {
        return Some(s);
    };
    let set = idle_set(&s.ctx.stop);
    s.cbuf.release_if_empty();
    let slot = set.slots.borrow().vacant();
    ctl.slot.store(slot, Ordering::Release);
    let waker = Waker::from(ctl.clone());
    if s.client
        .poll_read_ready(&mut Context::from_waker(&waker))
        .is_ready()
    {
        ctl.slot.store(NOT_PARKED, Ordering::Release);
        return Some(s);
    }
    {
        let mut st = lock(&ctl.state);
        if st.killed {
            drop(st);
            ctl.slot.store(NOT_PARKED, Ordering::Release);
            finish(s);
            return None;
        }
        st.task = None;
    }
    if let Some(d) = s.idle_deadline() {
        let mut dl = set.deadlines.borrow_mut();
        let earliest = dl.first().is_none_or(|&(first, _)| d < first);
        dl.insert((d, slot));
        if earliest {
            // The reaper's timer is for a later deadline, or none.
            set.ready.notify.notify_one();
        }
    }
    set.slots
        .borrow_mut()
        .insert_at(slot, Box::new(Parked { s }));
    None
}

impl IdleSet {
    /// Takes the entry in `slot` out of the set.
    fn take(&self, slot: usize) -> Option<Box<Parked>> {
        let p = self.slots.borrow_mut().take(slot)?;
        if let Some(d) = p.s.idle_deadline() {
            self.deadlines.borrow_mut().remove(&(d, slot));
        }
        if let Some(h) = p.s.hold.as_ref() {
            h.ctl.slot.store(NOT_PARKED, Ordering::Release);
        }
        Some(p)
    }

    /// The woken entries: readable ones get a task again, killed ones
    /// close.
    fn run_ready(&self) {
        let woken = std::mem::take(&mut *lock(&self.ready.list));
        for slot in woken {
            let readable = {
                let slots = self.slots.borrow();
                let Some(p) = slots.get(slot) else { continue };
                let Some(ctl) = p.s.hold.as_ref().map(|h| &h.ctl) else {
                    continue;
                };
                if ctl.killed() {
                    None
                } else {
                    let waker = Waker::from(ctl.clone());
                    let mut cx = Context::from_waker(&waker);
                    Some(p.s.client.poll_read_ready(&mut cx).is_ready())
                }
            };
            match readable {
                Some(false) => {}
                Some(true) => {
                    if let Some(p) = self.take(slot) {
                        resume(p.s);
                    }
                }
                None => {
                    if let Some(p) = self.take(slot) {
                        finish(p.s);
                    }
                }
            }
        }
    }

    /// Closes the entries whose deadline passed.
    fn expire(&self, now: Instant) {
        loop {
            let first = self.deadlines.borrow().first().copied();
            match first {
                Some((d, slot)) if d <= now => {
                    self.deadlines.borrow_mut().remove(&(d, slot));
                    if let Some(p) = self.take(slot) {
                        finish(p.s);
                    }
                }
                _ => return,
            }
        }
    }

    /// Closes every entry (soft stop).
    fn close_all(&self) {
        let n = self.slots.borrow().entries.len();
        for slot in 0..n {
            if let Some(p) = self.take(slot) {
                finish(p.s);
            }
        }
    }

    fn first_deadline(&self) -> Option<Instant> {
        self.deadlines.borrow().first().map(|&(d, _)| d)
    }
}

/// A readable parked session gets a task again, unless a shutdown was
/// asked meanwhile.
fn resume(s: Session) {
    let Some(ctl) = s.hold.as_ref().map(|h| h.ctl.clone()) else {
        return;
    };
    let mut st = lock(&ctl.state);
    if st.killed {
        drop(st);
        finish(s);
        return;
    }
    let task = tokio::task::spawn_local(Profiled::new(TaskKind::HttpSession, serve_resumed(s)));
    st.task = Some(task.abort_handle());
}

/// The worker's reaper: wakes for woken entries, for the earliest
/// deadline and for the soft stop.
async fn reaper(set: Rc<IdleSet>) {
    let mut stopped = false;
    loop {
        let next = set.first_deadline();
        let timer = async {
            match next {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = set.ready.notify.notified() => {}
            _ = timer => {}
            _ = set.stop.wait(), if !stopped => {}
        }
        set.run_ready();
        set.expire(Instant::now());
        if set.stop.is_set() {
            stopped = true;
            set.close_all();
        }
    }
}

#[cfg(test)]
#[path = "park_tests.rs"]
mod tests;
