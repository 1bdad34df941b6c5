//! The pool's idle instances: a hot slot per core ([`HotSlots`]), each
//! holding the instance its thread gave back last with the permit it served
//! under; a list of further instances, holding none; and the count of
//! callers waiting for a permit, which decides where a returned instance
//! goes. Generic over the instance, so that its rules are tested here with
//! a stand-in (`tests`), on the same code the pool runs.
//!
//! ## At rest, never more than `max_idle`
//!
//! With one slot, the last instance given back always displaced another and
//! shelved it, and shelving trimmed the list: the bound held at rest. With a
//! slot per core, a returner putting into its own empty slot can come after
//! another thread shelved an instance having counted that slot empty, and
//! nothing trims after it (`host_pool::idle_instances_stay_within_max_idle`
//! saw three idle where `max_idle` is two, `4d95960`). So:
//!
//! - Three events can leave more than `max_idle` held, or lift the rule that
//!   keeps instances for waiters: a put into an empty slot; a change of the
//!   list made by shelving or trimming (stored in `listed`, under the list's
//!   lock); the last waiter leaving. Each is followed by a check, all
//!   sequentially consistent: a put reads `waiting` and `listed`, then counts
//!   the slots (Dekker's pattern against a shelver, which stores `listed`
//!   before it counts them: one of the two sees the other); a shelver or
//!   trimmer reads `waiting` and counts the slots; the last waiter reads
//!   `listed` and counts the slots. A check that finds nobody waiting and
//!   more than `max_idle` trims, which stores `listed` again.
//! - Take the last of these events in the sequentially consistent order.
//!   After it nobody waits (a waiter would still wait at rest, or leave:
//!   an event after the last), so the list does not change, and the slots
//!   are only emptied. So its check read nobody waiting and no less than is
//!   held at rest: had more than `max_idle` been held at rest, it would have
//!   trimmed, storing `listed` after the last event. Hence at most
//!   `max_idle`.
//! - There are no more slots than `max_idle`, so over `max_idle` the list is
//!   never empty: a trim takes from the list, and the permits (held by slot
//!   instances only) are untouched.
//!
//! A waiter takes its instance from the list before it stops counting as
//! waiting ([`Waiting::pop`]): its leaving trims, and would otherwise drop
//! the instance shelved for it. The common path pays for the check with one
//! load of `listed`: the slots are counted only when the list and every slot
//! together could be over `max_idle`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};

use crate::runtime::hot::HotSlots;

/// Idle instances of one adapter (`T` is the pool's `Instance`), at most
/// `max` of them once no call is in flight and nobody waits.
pub(crate) struct Idle<T> {
    /// The instance each calling thread gave back last, with its permit.
    slots: HotSlots<T>,
    /// Further idle instances, without permits. Boxed, so that moving one
    /// moves a pointer, not the store.
    list: Mutex<Vec<Box<T>>>,
    /// `list`'s length, stored under its lock after every change: read
    /// without the lock by a returner's check (see the module's docs).
    listed: AtomicUsize,
    /// Callers on the slow path of a lease, from before they look at the
    /// slots until they hold a permit and took from the list.
    waiting: AtomicUsize,
    max: usize,
    /// Instances dropped as over `max`, for the metrics.
    trimmed: AtomicU64,
}

/// A caller counted in [`Idle`]'s waiting callers until dropped (or its
/// future is): while it is, instances given back are kept for it.
pub(crate) struct Waiting<'a, T> {
    idle: &'a Idle<T>,
}

impl<T> Idle<T> {
    /// An empty set keeping at most `max` instances, with `cores` hot slots
    /// (no more than `max`, at least one). With `max` 0 the pool gives
    /// nothing back (`Pool::give_back` drops it).
    pub(crate) fn new(max: usize, cores: usize) -> Self {
        Idle {
            slots: HotSlots::new(cores.min(max)),
            list: Mutex::new(Vec::new()),
            listed: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            max,
            trimmed: AtomicU64::new(0),
        }
    }

    /// Instances idle now, the slots' and the list's.
    pub(crate) fn count(&self) -> usize {
        self.lock().len() + self.slots.occupied()
    }

    /// Instances dropped as over `max` since the set was made.
    pub(crate) fn trimmed(&self) -> u64 {
        self.trimmed.load(SeqCst)
    }

    /// The common path: the calling thread's slot's instance, unless a caller
    /// waits (a new caller then queues behind it rather than overtaking it).
    pub(crate) fn take_hot(&self) -> Option<Box<T>> {
        if self.waiting.load(SeqCst) > 0 {
            return None;
        }
        self.slots.mine().take()
    }

    /// Counts the caller as waiting until the guard is dropped.
    pub(crate) fn wait(&self) -> Waiting<'_, T> {
        self.waiting.fetch_add(1, SeqCst);
        Waiting { idle: self }
    }

    /// An instance back from a call, with its permit: into the calling
    /// thread's slot, or to the list while a caller waits for a permit.
    /// Returns how many instances went to the list, each freeing the permit
    /// it held (the caller releases them, after this, so that a waiter given
    /// one finds its instance in the list).
    #[must_use = "each instance moved to the list frees a permit"]
    pub(crate) fn give_back(&self, instance: Box<T>) -> usize {
        let mine = self.slots.mine();
        let mut shelved = 0;
        let filled_empty = match mine.put(instance) {
            Some(displaced) => {
                self.shelve(displaced);
                shelved += 1;
                false
            }
            None => true,
        };
        // Put first, then the count of waiters looked at; a waiter counts
        // itself before it looks at the slots (`Waiting::take_any`): one of
        // the two sees the other, and no instance is left in a slot,
        // holding a permit, while a caller waits for one.
        if self.waiting.load(SeqCst) > 0 {
            if let Some(instance) = mine.take() {
                self.shelve(instance);
                shelved += 1;
            }
            // The last waiter to leave trims.
            return shelved;
        }
        if filled_empty {
            // After the put: see the module's docs.
            self.trim_if_over();
        }
        shelved
    }

    /// Keeps an instance in the list, then trims the list to `max` unless a
    /// caller waits: the instance, whose permit the caller is about to
    /// release, is that caller's, and dropping it made the caller build one
    /// anew (`tests/all/host_pool.rs`: three waves of four calls on four
    /// instances with `max_idle` 1 made five, not three).
    fn shelve(&self, instance: Box<T>) {
        let mut spare = Vec::new();
        {
            let mut list = self.lock();
            list.push(instance);
            self.trim_locked(&mut list, &mut spare);
        }
        self.drop_spare(spare);
    }

    /// The check that follows a put into an empty slot or the last waiter
    /// leaving: trims if the list and the slots hold more than `max`.
    fn trim_if_over(&self) {
        let listed = self.listed.load(SeqCst);
        // The slots are counted only if they could make it too many.
        if listed + self.slots.len() <= self.max || listed + self.slots.occupied() <= self.max {
            return;
        }
        let mut spare = Vec::new();
        {
            let mut list = self.lock();
            self.trim_locked(&mut list, &mut spare);
        }
        self.drop_spare(spare);
    }

    /// Stores the list's length, then counts the slots (in that order: see
    /// the module's docs), and moves instances from the list to `spare`
    /// while nobody waits and more than `max` are held.
    fn trim_locked(&self, list: &mut Vec<Box<T>>, spare: &mut Vec<Box<T>>) {
        loop {
            self.listed.store(list.len(), SeqCst);
            if self.waiting.load(SeqCst) > 0
                || list.len() + self.slots.len() <= self.max
                || list.len() + self.slots.occupied() <= self.max
            {
                return;
            }
            match list.pop() {
                Some(instance) => spare.push(instance),
                None => return,
            }
        }
    }

    /// Drops what was trimmed, counted, outside the lock (a store's teardown
    /// takes a while).
    fn drop_spare(&self, spare: Vec<Box<T>>) {
        if !spare.is_empty() {
            self.trimmed.fetch_add(spare.len() as u64, SeqCst);
        }
        drop(spare);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Box<T>>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> Waiting<'_, T> {
    /// An instance from any hot slot, the calling thread's first.
    pub(crate) fn take_any(&self) -> Option<Box<T>> {
        self.idle.slots.take_any()
    }

    /// An instance from the list, taken while still counted as waiting, so
    /// that no trim drops the instance shelved for this caller.
    pub(crate) fn pop(&self) -> Option<Box<T>> {
        let mut list = self.idle.lock();
        let instance = list.pop();
        self.idle.listed.store(list.len(), SeqCst);
        instance
    }
}

impl<T> Drop for Waiting<'_, T> {
    fn drop(&mut self) {
        // Instances were kept over `max` for waiters: the last to leave
        // trims them (see the module's docs).
        if self.idle.waiting.fetch_sub(1, SeqCst) == 1 {
            self.idle.trim_if_over();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;
    use std::sync::{Arc, Barrier};

    /// A stand-in instance counting its drops, to show none is lost.
    struct Fake(Arc<AtomicUsize>);

    impl Drop for Fake {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    /// Instances made and dropped, for a test's stand-ins.
    #[derive(Clone, Default)]
    struct Made {
        made: Arc<AtomicUsize>,
        dropped: Arc<AtomicUsize>,
    }

    impl Made {
        fn one(&self) -> Box<Fake> {
            self.made.fetch_add(1, SeqCst);
            Box::new(Fake(self.dropped.clone()))
        }

        fn alive(&self) -> usize {
            self.made.load(SeqCst) - self.dropped.load(SeqCst)
        }
    }

    /// A lease as the pool makes one, without permits: the thread's slot,
    /// else (counted as waiting) any slot, the list, or a new instance; or
    /// nothing, for a waiter that gives up (its deadline passed).
    fn lease(idle: &Idle<Fake>, made: &Made, gives_up: bool) -> Option<Box<Fake>> {
        if let Some(i) = idle.take_hot() {
            return Some(i);
        }
        let waiting = idle.wait();
        if let Some(i) = waiting.take_any() {
            return Some(i);
        }
        // Waiting for a permit, a while: instances given back meanwhile are
        // kept over `max` for this caller.
        std::thread::yield_now();
        if gives_up {
            return None;
        }
        Some(waiting.pop().unwrap_or_else(|| made.one()))
    }

    /// Threads sharing slots, leasing, waiting, giving up and giving back
    /// at once, then all at rest, round after round: at rest the slots and
    /// the list never hold more than `max`. Without the returner's check
    /// (`Idle::give_back`) most rounds end over `max` with `max` 2.
    #[test]
    fn at_rest_the_idle_never_exceed_max_whatever_the_threads_did() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 10_000;
        for max in [2, 3, 1] {
            let idle = Arc::new(Idle::new(max, max));
            let made = Made::default();
            let barrier = Arc::new(Barrier::new(THREADS + 1));
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (idle, made, barrier) = (idle.clone(), made.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        for round in 0..ROUNDS {
                            if let Some(instance) = lease(&idle, &made, (round + t) % 5 == 0) {
                                // The call: others lease and give back
                                // meanwhile.
                                std::thread::yield_now();
                                let _freed = idle.give_back(instance);
                            }
                            // At rest until the test has counted.
                            barrier.wait();
                            barrier.wait();
                        }
                    })
                })
                .collect();
            for round in 0..ROUNDS {
                barrier.wait();
                let held = idle.count();
                assert!(held <= max, "max {max}, round {round}: {held} held at rest");
                assert_eq!(made.alive(), held, "none lost, none dropped twice");
                assert_eq!(idle.listed.load(SeqCst), idle.lock().len());
                barrier.wait();
            }
            for t in threads {
                t.join().expect("thread");
            }
            assert_eq!(idle.trimmed() as usize, made.dropped.load(SeqCst));
        }
    }

    /// The interleaving that failed `host_pool` in `87d0138`, made in
    /// order: a shelving counts another thread's slot empty, then that
    /// thread puts into it, last.
    #[test]
    fn a_put_into_an_empty_slot_after_a_shelving_trims() {
        let idle = Arc::new(Idle::new(2, 2));
        let made = Made::default();
        let _kept = idle.give_back(made.one());
        // Displaces the first, shelved with the other slot counted empty.
        assert_eq!(idle.give_back(made.one()), 1);
        assert_eq!(idle.count(), 2);
        let this_slot = ptr::from_ref(idle.slots.mine()) as usize;
        // A thread on the other slot (threads get slots in turn).
        let put = (0..64).any(|_| {
            let (idle, made) = (idle.clone(), made.clone());
            std::thread::spawn(move || {
                let other = ptr::from_ref(idle.slots.mine()) as usize != this_slot;
                if other {
                    let _kept = idle.give_back(made.one());
                }
                other
            })
            .join()
            .expect("thread")
        });
        assert!(put, "no thread found on the other slot");
        assert_eq!(idle.count(), 2, "three held, where max is two");
        assert_eq!(idle.trimmed(), 1);
        assert_eq!(made.alive(), 2);
    }

    /// Instances given back while a caller waits are kept for it, over
    /// `max`; once the last waiter leaves without them (its deadline
    /// passed), they are trimmed.
    #[test]
    fn what_was_kept_for_waiters_is_trimmed_when_the_last_leaves() {
        let idle = Idle::new(1, 1);
        let made = Made::default();
        let first = idle.wait();
        let second = idle.wait();
        assert_eq!(idle.give_back(made.one()), 1, "to the list, for a waiter");
        assert_eq!(idle.give_back(made.one()), 1);
        assert_eq!(idle.count(), 2, "kept while callers wait");
        drop(first);
        assert_eq!(idle.count(), 2, "one caller still waits");
        drop(second);
        assert_eq!(idle.count(), 1, "trimmed to max once nobody waits");
        assert_eq!(made.alive(), 1);
        // A waiter takes what was kept for it before it leaves.
        let waiting = idle.wait();
        assert_eq!(idle.give_back(made.one()), 1);
        let taken = waiting.pop();
        drop(waiting);
        assert!(taken.is_some(), "the waiter's instance was not trimmed");
        assert_eq!(idle.count(), 1);
    }
}
