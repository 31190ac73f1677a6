//! Running a future inside a reusable, per-thread pooled allocation.
//!
//! A connection spends most of its life idle. If the whole state machine of
//! "serve one request" lived in the connection's task, every idle
//! connection would carry its full size (several KiB). Instead the task
//! keeps only its small idle state and runs each request's future through
//! [`run_pooled`], which places it in a heap slot taken from this thread's
//! pool and gives the slot back afterwards. In steady state no allocation
//! happens per request, and the number of slots equals the peak number of
//! requests in progress at once on the thread, as HAProxy's pools do.
//!
//! This is the only `unsafe` code of the crate: pinning a future in a slot
//! that is reused. The invariants are stated at each block.
#![allow(unsafe_code)]

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;

/// A heap slot for one future of type `F`: uninitialised while free.
struct Slot<F> {
    fut: Box<MaybeUninit<F>>,
    /// `fut` holds a future (kept here, not in the caller's guard, so that
    /// the guard in every connection's task stays one pointer).
    live: bool,
}

thread_local! {
    /// Free slots of this thread, of every future type used with
    /// [`run_pooled`] (in practice one or two types).
    static FREE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Free slots kept per thread at most. Default is 4096.
pub const MAX_FREE_SLOTS: usize = 4096;

fn take_slot<F: 'static>() -> Box<Slot<F>> {
    FREE.with(|free| {
        let mut free = free.borrow_mut();
        let pos = free.iter().rposition(|b| b.is::<Slot<F>>());
        pos.and_then(|i| free.swap_remove(i).downcast::<Slot<F>>().ok())
    })
    .unwrap_or_else(|| {
        Box::new(Slot {
            fut: Box::new_uninit(),
            live: false,
        })
    })
}

fn give_slot<F: 'static>(slot: Box<Slot<F>>) {
    FREE.with(|free| {
        let mut free = free.borrow_mut();
        if free.len() < MAX_FREE_SLOTS {
            free.push(slot);
        }
    })
}

/// Clears a slot when dropped, also when the caller's future is cancelled
/// mid-way: the pinned future is dropped in place, and the slot returns to
/// the pool.
struct Guard<F: 'static> {
    slot: Option<Box<Slot<F>>>,
}

impl<F: 'static> Drop for Guard<F> {
    fn drop(&mut self) {
        if let Some(mut slot) = self.slot.take() {
            if std::mem::take(&mut slot.live) {
                // SAFETY: `live` is set right after the future was written
                // and cleared only here: the slot holds an initialised `F`,
                // dropped here in place (nothing pinned moves), once.
                unsafe { slot.fut.assume_init_drop() };
            }
            give_slot(slot);
        }
    }
}

/// Builds a future with `make` directly inside a pooled slot, runs it to
/// completion and returns its output. Taking a constructor (not the future
/// itself) keeps the future out of the caller's own state machine: only
/// what `make` captures is stored there.
pub async fn run_pooled<F: Future + 'static>(make: impl FnOnce() -> F) -> F::Output {
    let mut guard = Guard {
        slot: Some(take_slot::<F>()),
    };
    let slot = guard.slot.as_mut().expect("slot present");
    // The slot is free (uninitialised) here, so writing it moves no pinned
    // value. Written through `MaybeUninit` (no `Option` to drop first),
    // the future is built in the slot rather than built on the stack and
    // copied there (7,680 bytes for the HTTP request phase).
    let inner: &mut F = slot.fut.write(make());
    // Only once written: a panic in `make` leaves the slot free.
    slot.live = true;
    // SAFETY: the future lives in a heap allocation (`Box<MaybeUninit<F>>`)
    // whose address does not change: it is only dropped in place (in
    // `Guard::drop`), and is never moved out of the box or swapped while
    // it holds a future. So the future is not moved between being pinned
    // here and being dropped.
    let pinned = unsafe { Pin::new_unchecked(inner) };
    pinned.await
}

/// Slots currently free on this thread (for tests and `show pools`).
pub fn free_slots() -> usize {
    FREE.with(|f| f.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn work(n: u32) -> u32 {
        tokio::task::yield_now().await;
        n * 2
    }

    #[test]
    fn reuses_the_slot() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(run_pooled(|| work(1)).await, 2);
            let free = free_slots();
            assert!(free >= 1);
            for i in 0..100 {
                assert_eq!(run_pooled(|| work(i)).await, i * 2);
            }
            assert_eq!(free_slots(), free, "no new slot per call");
        });
    }

    /// A constructor that panics leaves the slot free (nothing to drop in
    /// it) and returns it to the pool.
    #[test]
    fn panicking_constructor_leaves_the_slot_free() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = free_slots();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(run_pooled(|| -> std::future::Ready<u32> {
                panic!("constructor fails")
            }))
        }));
        assert!(r.is_err());
        assert_eq!(free_slots(), before + 1);
        rt.block_on(async {
            assert_eq!(run_pooled(|| std::future::ready(7u32)).await, 7);
        });
        assert_eq!(free_slots(), before + 1, "the slot was reused");
    }

    #[test]
    fn cancelled_future_is_dropped_and_slot_returned() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dropped = std::rc::Rc::new(std::cell::Cell::new(false));
            struct OnDrop(std::rc::Rc<std::cell::Cell<bool>>);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    self.0.set(true);
                }
            }
            let d = OnDrop(dropped.clone());
            let never = async move {
                let _d = d;
                std::future::pending::<()>().await
            };
            let before = free_slots();
            let r = tokio::time::timeout(std::time::Duration::from_millis(5), run_pooled(|| never))
                .await;
            assert!(r.is_err());
            assert!(dropped.get());
            assert_eq!(free_slots(), before + 1);
        });
    }
}
