//! One boxed value kept where a thread can take it, or put one back, with a
//! single atomic swap: the pool's last returned instance; and one such slot
//! per calling thread ([`HotSlots`]).
//!
//! A `Mutex<Option<Box<T>>>` costs a locked instruction to lock and another
//! to unlock, on the way out and on the way back: four per call on the
//! pool's common path, each about 5 ns on the bench's machine, for a call
//! of under a microsecond (docs/benchmarks.md). The swap is one.
//!
//! One slot for every thread made callers on two cores pass the slot's
//! cache line, and the instance, back and forth on every call: two callers
//! made 1.19× one caller's `upstream` calls (docs/benchmarks.md,
//! `concurrency`). With a slot per thread, each on a cache line of its own,
//! a thread takes back the instance it gave back.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// A slot holding at most one `Box<T>`.
///
/// Every non-null pointer in the slot came from [`Box::into_raw`] and is
/// owned by the slot: each swap moves that ownership to exactly one caller,
/// which turns it back into a box. Nothing else reads through the pointer.
pub(crate) struct HotSlot<T> {
    ptr: AtomicPtr<T>,
    _owns: PhantomData<Box<T>>,
}

// SAFETY: the slot hands each box to one thread at a time, as a
// `Mutex<Option<Box<T>>>` would, so it is as `Send` and `Sync` as that is:
// both when `T` is `Send`.
unsafe impl<T: Send> Send for HotSlot<T> {}
// SAFETY: as above; no `&T` is ever shared through the slot.
unsafe impl<T: Send> Sync for HotSlot<T> {}

impl<T> HotSlot<T> {
    /// An empty slot.
    pub(crate) fn new() -> Self {
        HotSlot {
            ptr: AtomicPtr::new(ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// Takes the value, leaving the slot empty.
    ///
    /// Sequentially consistent, as [`HotSlot::put`] is: the pool orders
    /// these against its count of waiting callers (see `pool.rs`).
    pub(crate) fn take(&self) -> Option<Box<T>> {
        Self::own(self.ptr.swap(ptr::null_mut(), Ordering::SeqCst))
    }

    /// Puts `value` in the slot, returning what it held.
    pub(crate) fn put(&self, value: Box<T>) -> Option<Box<T>> {
        Self::own(self.ptr.swap(Box::into_raw(value), Ordering::SeqCst))
    }

    /// Whether the slot held a value when asked. Sequentially consistent:
    /// the pool's trim decides on it (`idle.rs`).
    pub(crate) fn is_occupied(&self) -> bool {
        !self.ptr.load(Ordering::SeqCst).is_null()
    }

    fn own(p: *mut T) -> Option<Box<T>> {
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-null pointer came from `Box::into_raw` in `put`, and
        // the swap that returned it removed it from the slot, so this is its
        // only owner.
        Some(unsafe { Box::from_raw(p) })
    }
}

impl<T> Drop for HotSlot<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// A value on a cache line of its own (128 bytes: two lines, as x86's
/// adjacent-line prefetch pairs them).
#[repr(align(128))]
struct Padded<T>(T);

/// One [`HotSlot`] per calling thread, up to a fixed number: a thread takes
/// from and puts into its own; a caller that found its own empty may take
/// from any ([`HotSlots::take_any`]).
pub(crate) struct HotSlots<T> {
    slots: Box<[Padded<HotSlot<T>>]>,
}

impl<T> HotSlots<T> {
    /// `n` slots (at least one).
    pub(crate) fn new(n: usize) -> Self {
        HotSlots {
            slots: (0..n.max(1)).map(|_| Padded(HotSlot::new())).collect(),
        }
    }

    /// How many slots there are: no more than can be occupied.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The calling thread's slot.
    pub(crate) fn mine(&self) -> &HotSlot<T> {
        &self.slots[thread_index() % self.slots.len()].0
    }

    /// A value from any slot, the calling thread's first.
    pub(crate) fn take_any(&self) -> Option<Box<T>> {
        let start = thread_index();
        let n = self.slots.len();
        (0..n).find_map(|k| self.slots[(start + k) % n].0.take())
    }

    /// How many slots held a value, each as it was when looked at
    /// (sequentially consistent, as [`HotSlot::is_occupied`] is).
    pub(crate) fn occupied(&self) -> usize {
        self.slots.iter().filter(|s| s.0.is_occupied()).count()
    }
}

/// A number for the calling thread, given on its first call: threads that
/// call one after another get consecutive numbers, so a runtime's workers
/// land on different slots.
fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    INDEX.with(|i| *i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// Counts its drops, to show no value is lost or dropped twice.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn take_put_and_drop_own_the_value_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = HotSlot::new();
        assert!(slot.take().is_none());
        assert!(slot.put(Box::new(Counted(drops.clone()))).is_none());
        assert!(slot.is_occupied());
        let old = slot.put(Box::new(Counted(drops.clone())));
        assert!(
            old.is_some(),
            "a put into a full slot returns the old value"
        );
        drop(old);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(slot.take().is_some());
        assert!(!slot.is_occupied());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        slot.put(Box::new(Counted(drops.clone())));
        drop(slot);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            3,
            "the slot drops what it holds"
        );
    }

    #[test]
    fn each_thread_has_its_own_slot_and_any_slot_can_be_emptied() {
        let slots = Arc::new(HotSlots::new(2));
        assert!(slots.mine().put(Box::new(1)).is_none());
        let other = {
            let slots = slots.clone();
            std::thread::spawn(move || {
                // Another thread's slot: empty, whatever this one holds.
                let empty = slots.mine().take().is_none();
                slots.mine().put(Box::new(2));
                empty
            })
            .join()
            .expect("thread")
        };
        assert!(other, "a new thread finds its own slot empty");
        assert_eq!(slots.occupied(), 2);
        let mut taken = vec![
            *slots.take_any().expect("one"),
            *slots.take_any().expect("two"),
        ];
        taken.sort_unstable();
        assert_eq!(taken, [1, 2]);
        assert!(slots.take_any().is_none());
        assert_eq!(slots.occupied(), 0);
    }

    #[test]
    fn values_passed_between_threads_are_neither_lost_nor_doubled() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Arc::new(HotSlot::new());
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (slot, drops) = (slot.clone(), drops.clone());
                std::thread::spawn(move || {
                    let mut mine = Some(Box::new(Counted(drops)));
                    for _ in 0..ROUNDS {
                        mine = match mine.take() {
                            Some(v) => slot.put(v),
                            None => slot.take(),
                        };
                    }
                    mine
                })
            })
            .collect();
        let mut held = 0;
        for h in handles {
            held += usize::from(h.join().expect("thread").is_some());
        }
        held += usize::from(slot.take().is_some());
        assert_eq!(held, THREADS, "every value is somewhere");
        assert_eq!(drops.load(Ordering::SeqCst), THREADS, "each dropped once");
    }
}
