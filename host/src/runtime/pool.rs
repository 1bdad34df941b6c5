//! Configured instances of one adapter, kept for reuse.
//!
//! A wasmtime store runs one call at a time, and core calls concurrently, so
//! each adapter has a pool: a call leases an idle configured instance (or a
//! new one), and gives it back when it ends well. An instance that trapped,
//! ran out of time, was cancelled mid-call or served its quota is dropped
//! instead. Long-running calls (watch, exec) take a fresh instance of their
//! own from a separate budget, so they cannot starve ordinary calls.
//!
//! Ordinary calls share `max_instances` permits. A leased instance holds
//! one, and so does the instance in `hot`, the one given back last: the
//! next call takes it with one atomic swap and no permit to acquire, and
//! gives it back with another, with no lock and no reference count touched
//! (the lease borrows the pool). Instances in `idle` hold no permit; a call
//! takes one of them after it acquires a permit. While any caller waits
//! for a permit, an instance given back does not stay in `hot` holding
//! one: it goes to `idle` and its permit to the waiter, in the semaphore's
//! first-come order.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

use crate::clock::Deadline;
use crate::error::CallError;
use crate::runtime::hot::HotSlot;
use crate::runtime::instance::{Factory, Instance, sleep_until_opt};

/// An adapter's instances.
pub(crate) struct Pool {
    pub(crate) factory: Factory,
    /// The instance given back last, with the permit it served under.
    hot: HotSlot<Instance>,
    /// Further idle instances, without permits. With `hot`, at most
    /// `max_idle`. Boxed, so that moving one moves a pointer, not the store.
    #[expect(
        clippy::vec_box,
        reason = "instances move between this list, the hot slot and leases"
    )]
    idle: Mutex<Vec<Box<Instance>>>,
    /// Callers on the slow path of a lease, from before they look at `hot`
    /// until they hold a permit.
    waiting: AtomicUsize,
    permits: Semaphore,
    long_permits: Semaphore,
    /// Instances made for calls (the load's first one not counted) and
    /// dropped rather than pooled, since the load: for the metrics.
    pub(crate) made: AtomicU64,
    pub(crate) discarded: AtomicU64,
    /// Leases that found every instance busy and waited for a permit, and
    /// the nanoseconds they waited in all: contention, for the metrics.
    pub(crate) waits: AtomicU64,
    pub(crate) waited_ns: AtomicU64,
}

/// Which of an adapter's instance budgets a call draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Budget {
    /// `max_instances`, pooled and reused.
    Ordinary,
    /// `max_long_running`, a fresh instance per call (watch, exec).
    LongRunning,
}

impl Budget {
    /// The limit's name, for the operator.
    fn setting(self) -> &'static str {
        match self {
            Budget::Ordinary => "max_instances",
            Budget::LongRunning => "max_long_running",
        }
    }
}

/// The pool a lease goes back to: borrowed by an ordinary call, which ends
/// before the adapter can, shared by an exec session, which may not.
enum PoolRef<'p> {
    Borrowed(&'p Pool),
    Shared(Arc<Pool>),
}

impl Deref for PoolRef<'_> {
    type Target = Pool;

    fn deref(&self) -> &Pool {
        match self {
            PoolRef::Borrowed(p) => p,
            PoolRef::Shared(p) => p,
        }
    }
}

/// An instance lent to one call, holding one permit of its budget (which
/// it releases, or leaves with the instance in the hot slot, when dropped).
pub(crate) struct Lease<'p> {
    /// Always `Some` until the lease is dropped.
    instance: Option<Box<Instance>>,
    pool: PoolRef<'p>,
    budget: Budget,
    reusable: bool,
}

/// A caller counted in [`Pool::waiting`] until dropped (or cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Pool {
    /// A pool holding `first` (the load's instance), ready for the next call.
    pub(crate) fn new(factory: Factory, first: Option<Instance>) -> Arc<Self> {
        let limits = &factory.limits;
        let ordinary = limits.max_instances.max(1) as usize;
        let hot = HotSlot::new();
        // The first instance sits in the hot slot with one of the permits.
        let held = first.map(|i| hot.put(Box::new(i))).map_or(0, |_| 1);
        Arc::new(Pool {
            hot,
            idle: Mutex::new(Vec::new()),
            waiting: AtomicUsize::new(0),
            permits: Semaphore::new(ordinary - held),
            long_permits: Semaphore::new(limits.max_long_running.max(1) as usize),
            factory,
            made: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            waited_ns: AtomicU64::new(0),
        })
    }

    /// Instances idle now.
    pub(crate) fn idle_count(&self) -> usize {
        self.lock_idle().len() + usize::from(self.hot.is_occupied())
    }

    #[expect(clippy::vec_box, reason = "see `Pool::idle`")]
    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Box<Instance>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leases an instance for an ordinary call that [`Pool::lease_hot`] did
    /// not serve, waiting (within the deadline) while every instance is
    /// busy; `make` makes one when none is idle. The hot slot is looked at
    /// again once this caller counts as waiting (`lease_slow`).
    pub(crate) async fn lease(
        &self,
        method: &'static str,
        deadline: Option<Deadline>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Lease<'_>, CallError> {
        // Waiting needs the deadline as an `Instant` (`crate::clock`).
        let deadline = deadline.and_then(|d| d.instant());
        let instance = self
            .lease_slow(method, deadline, timeout, cancel, make)
            .await?;
        Ok(Lease::new(
            PoolRef::Borrowed(self),
            instance,
            Budget::Ordinary,
        ))
    }

    /// The common case, with no future to make: nobody waits, and the
    /// instance given back last is in the hot slot with its permit.
    pub(crate) fn lease_hot(&self) -> Option<Lease<'_>> {
        let instance = self.take_hot_unless_waited_for()?;
        Some(Lease::new(
            PoolRef::Borrowed(self),
            instance,
            Budget::Ordinary,
        ))
    }

    /// The hot slot's instance, unless a caller waits for one (a new
    /// caller then queues behind it rather than overtaking it).
    fn take_hot_unless_waited_for(&self) -> Option<Box<Instance>> {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            return None;
        }
        self.hot.take()
    }

    /// An ordinary instance when the hot slot had none for this caller: a
    /// permit, then an idle instance or a new one.
    async fn lease_slow(
        &self,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Box<Instance>, CallError> {
        let permit = {
            // Counted first, then the hot slot looked at. A caller giving an
            // instance back puts it in the slot first, then looks at the
            // count (`give_back`); both sequentially consistent, so one of
            // the two sees the other, and no instance is left in the slot,
            // holding a permit, while this caller waits for one.
            let _waiting = Waiting::enter(&self.waiting);
            if let Some(inst) = self.hot.take() {
                return Ok(inst);
            }
            self.acquire(Budget::Ordinary, method, deadline, timeout, cancel)
                .await?
        };
        let idle = self.lock_idle().pop();
        let instance = match idle {
            Some(i) => i,
            // Dropped here (a failure, or the caller's future dropped), the
            // permit goes back.
            None => Box::new(self.make(make).await?),
        };
        permit.forget();
        Ok(instance)
    }

    /// A fresh instance, made by `make`, for a long-running call, never
    /// returned to the pool. The lease keeps the pool alive (an exec session
    /// holds it past the call).
    pub(crate) async fn lease_dedicated(
        self: &Arc<Self>,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Lease<'static>, CallError> {
        let permit = self
            .acquire(Budget::LongRunning, method, deadline, timeout, cancel)
            .await?;
        let instance = Box::new(self.make(make).await?);
        permit.forget();
        Ok(Lease::new(
            PoolRef::Shared(Arc::clone(self)),
            instance,
            Budget::LongRunning,
        ))
    }

    /// An instance from `make`, counted. The pool does not run guest code
    /// itself: making an instance is a guest call, which the pipeline above
    /// it guards.
    async fn make(
        &self,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Instance, CallError> {
        let made = make().await?;
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(made)
    }

    /// A permit from `budget`, within the call's deadline. A call without
    /// one waits no longer than `limits.default_timeout`: behind a budget
    /// that never frees (a thousand watches that never end) it would
    /// otherwise hang with nothing to say why.
    async fn acquire(
        &self,
        budget: Budget,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
    ) -> Result<SemaphorePermit<'_>, CallError> {
        // A free permit: taken without a race, a timer or the adapter's
        // name copied for errors that will not happen.
        if let Ok(permit) = self.budget(budget).0.try_acquire() {
            return Ok(permit);
        }
        // The wait, boxed: a rare path, kept out of every call's future.
        let started = Instant::now();
        let permit =
            Box::pin(self.wait_for_permit(budget, method, deadline, timeout, cancel)).await;
        let waited = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.waited_ns.fetch_add(waited, Ordering::Relaxed);
        permit
    }

    /// `budget`'s semaphore and the limit it was made with.
    fn budget(&self, budget: Budget) -> (&Semaphore, u32) {
        match budget {
            Budget::Ordinary => (&self.permits, self.factory.limits.max_instances),
            Budget::LongRunning => (&self.long_permits, self.factory.limits.max_long_running),
        }
    }

    /// Waits for a permit of `budget` within the call's deadline (or
    /// `limits.default_timeout` without one), or its cancellation.
    async fn wait_for_permit(
        &self,
        budget: Budget,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
    ) -> Result<SemaphorePermit<'_>, CallError> {
        let (sem, limit) = self.budget(budget);
        let adapter = self.factory.identity.name.clone();
        let waited = self.factory.limits.default_timeout;
        let wait = sem.acquire();
        // A default timeout too large for the clock bounds nothing, as a
        // call's own deadline would not (`CallContext::deadline`).
        let expired = sleep_until_opt(deadline.or_else(|| Instant::now().checked_add(waited)));
        tokio::select! {
            p = wait => p.map_err(|_| CallError::Host {
                adapter,
                method,
                message: "the adapter's instance pool is closed".into(),
            }),
            () = expired => Err(match deadline {
                Some(_) => CallError::DeadlineExceeded {
                    adapter,
                    method,
                    timeout: timeout.unwrap_or_default(),
                },
                None => CallError::Busy {
                    adapter,
                    method,
                    waited,
                    limit: limit.max(1),
                    setting: budget.setting(),
                },
            }),
            () = cancel.cancelled() => Err(CallError::Cancelled { adapter, method }),
        }
    }

    /// An ordinary instance back from a call, with its permit: into the
    /// hot slot, unless a caller waits for a permit.
    fn give_back(&self, instance: Box<Instance>) {
        if self.factory.limits.max_idle == 0 {
            return self.discard(instance, Budget::Ordinary);
        }
        if let Some(displaced) = self.hot.put(instance) {
            self.shelve(displaced);
        }
        // Put first, then the count looked at: see `lease_slow`.
        if self.waiting.load(Ordering::SeqCst) > 0
            && let Some(instance) = self.hot.take()
        {
            self.shelve(instance);
        }
    }

    /// Keeps an instance idle without its permit, or drops it when the
    /// idle are `max_idle` already (the hot slot counted) and nobody waits,
    /// and releases the permit: after the instance is in the list, so that
    /// the caller the permit goes to finds it there.
    ///
    /// While a caller waits, the instance stays whatever `max_idle` says:
    /// the permit released here is that caller's, and dropping the instance
    /// made it build one anew (instantiate and `configure`): three waves of
    /// four calls on four instances with `max_idle` 1 made five, not three
    /// (`tests/all/host_pool.rs`). Once nobody waits, what waiters left
    /// above `max_idle` is dropped here.
    ///
    /// The hot slot is counted as it is now, not as always full: instances
    /// are shelved while callers wait, when the slot is empty, and counting
    /// it full then dropped an instance the next waiter had to make again.
    /// A returner may fill the slot just after, so for an instant the idle
    /// can be one over `max_idle`; the next shelving drops it.
    fn shelve(&self, instance: Box<Instance>) {
        let max_idle = self.factory.limits.max_idle as usize;
        let mut spare = Vec::new();
        {
            let mut idle = self.lock_idle();
            let hot = usize::from(self.hot.is_occupied());
            if self.waiting.load(Ordering::SeqCst) > 0 || idle.len() + hot < max_idle {
                idle.push(instance);
            } else {
                spare.push(instance);
                while idle.len() + hot > max_idle {
                    spare.extend(idle.pop());
                }
            }
        }
        self.discarded
            .fetch_add(spare.len() as u64, Ordering::Relaxed);
        // A store's teardown, outside the lock.
        drop(spare);
        self.permits.add_permits(1);
    }

    /// Drops an instance that must not serve again, releasing its permit.
    fn discard(&self, instance: Box<Instance>, budget: Budget) {
        self.discarded.fetch_add(1, Ordering::Relaxed);
        drop(instance);
        self.budget(budget).0.add_permits(1);
    }
}

impl<'p> Lease<'p> {
    fn new(pool: PoolRef<'p>, instance: Box<Instance>, budget: Budget) -> Self {
        Lease {
            instance: Some(instance),
            pool,
            budget,
            reusable: budget == Budget::Ordinary,
        }
    }

    /// The leased instance.
    pub(crate) fn instance(&mut self) -> &mut Instance {
        match self.instance.as_mut() {
            Some(i) => i,
            None => unreachable!("a lease holds its instance until dropped"),
        }
    }

    /// Counts a finished call; the instance is not reused past its quota.
    pub(crate) fn count_call(&mut self) {
        self.instance().calls += 1;
    }

    /// Keep this instance out of the pool when the lease ends (it holds
    /// resources of a finished call, or it is bound to a session).
    pub(crate) fn discard_after(&mut self) {
        self.reusable = false;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(instance) = self.instance.take() else {
            return;
        };
        let pool = &*self.pool;
        if instance.in_call {
            tracing::debug!(
                adapter = %pool.factory.identity.name,
                "a call's future was dropped mid-call; its instance is discarded"
            );
        }
        let spent = instance.calls >= pool.factory.limits.max_calls_per_instance;
        if self.reusable && !instance.poisoned && !instance.in_call && !spent {
            pool.give_back(instance);
        } else {
            pool.discard(instance, self.budget);
        }
    }
}
