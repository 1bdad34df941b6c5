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
//! one, and so does the instance in a hot slot, the one its thread gave
//! back last (one slot per core, `idle.rs`): the thread's next call takes
//! it with one atomic swap and no permit to acquire, and gives it back with
//! another, with no lock and no reference count touched (the lease borrows
//! the pool). Instances in the idle list hold no permit; a call takes one
//! of them after it acquires a permit. While any caller waits for a permit,
//! an instance given back does not stay in a slot holding one: it goes to
//! the list and its permit to the waiter, in the semaphore's first-come
//! order.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

use crate::clock::Deadline;
use crate::error::CallError;
use crate::runtime::idle::Idle;
use crate::runtime::instance::{Factory, Instance, sleep_until_opt};

/// An adapter's instances.
pub(crate) struct Pool {
    pub(crate) factory: Factory,
    /// The idle instances: a hot slot per core, each with the permit its
    /// instance served under, and a list without permits; at most
    /// `max_idle` once no call is in flight and nobody waits.
    idle: Idle<Instance>,
    permits: Semaphore,
    long_permits: Semaphore,
    /// Instances made for calls (the load's first one not counted) and
    /// dropped rather than pooled (`Pool::discarded` adds those over
    /// `max_idle`), since the load: for the metrics.
    pub(crate) made: AtomicU64,
    discarded: AtomicU64,
    /// Leases that found every instance busy and waited for a permit:
    /// contention, for the metrics.
    pub(crate) waits: Waits,
}

/// Callers that waited (for an instance, or a seat in a shared one) and how
/// long they waited in all, since the load.
#[derive(Default)]
pub(crate) struct Waits {
    count: AtomicU64,
    ns: AtomicU64,
}

impl Waits {
    /// One wait of `waited`.
    pub(crate) fn record(&self, waited: std::time::Duration) {
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The waits so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Their time, in all.
    pub(crate) fn total(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.ns.load(Ordering::Relaxed))
    }
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

impl Pool {
    /// A pool holding `first` (the load's instance), ready for the next call.
    pub(crate) fn new(factory: Factory, first: Option<Instance>) -> Arc<Self> {
        let limits = &factory.limits;
        let ordinary = limits.max_instances.max(1) as usize;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let idle = Idle::new(limits.max_idle as usize, cores);
        // The first instance sits in the loading thread's hot slot with one
        // of the permits; a caller on another thread finds it there on its
        // slow path (`Waiting::take_any`).
        let held = first.map_or(0, |i| {
            let _shelved = idle.give_back(Box::new(i));
            1
        });
        Arc::new(Pool {
            idle,
            permits: Semaphore::new(ordinary - held),
            long_permits: Semaphore::new(limits.max_long_running.max(1) as usize),
            factory,
            made: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            waits: Waits::default(),
        })
    }

    /// Instances idle now.
    pub(crate) fn idle_count(&self) -> usize {
        self.idle.count()
    }

    /// Instances dropped rather than pooled since the load.
    pub(crate) fn discarded(&self) -> u64 {
        self.discarded.load(Ordering::Relaxed) + self.idle.trimmed()
    }

    /// Leases an instance for an ordinary call that [`Pool::lease_hot`] did
    /// not serve, waiting (within the deadline) while every instance is
    /// busy; `make` makes one when none is idle. The hot slots are looked
    /// at again once this caller counts as waiting (`lease_slow`).
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
    /// instance this thread gave back last is in its hot slot with its
    /// permit (a new caller queues behind a waiting one rather than
    /// overtaking it).
    pub(crate) fn lease_hot(&self) -> Option<Lease<'_>> {
        let instance = self.idle.take_hot()?;
        Some(Lease::new(
            PoolRef::Borrowed(self),
            instance,
            Budget::Ordinary,
        ))
    }

    /// An ordinary instance when this thread's hot slot had none: any hot
    /// slot's, else a permit, then an idle instance or a new one.
    async fn lease_slow(
        &self,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Box<Instance>, CallError> {
        let (permit, idle) = {
            // Counted first, then the hot slots looked at (`Idle::give_back`
            // says why); the list is taken from while still counted, so
            // that no trim drops the instance shelved for this caller.
            let waiting = self.idle.wait();
            if let Some(inst) = waiting.take_any() {
                return Ok(inst);
            }
            let permit = self
                .acquire(Budget::Ordinary, method, deadline, timeout, cancel)
                .await?;
            (permit, waiting.pop())
        };
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
        self.waits.record(started.elapsed());
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
    /// calling thread's hot slot, or to the idle list while a caller waits
    /// for a permit, freeing that permit after the instance is in the list,
    /// so that the caller the permit goes to finds it there (`Idle`).
    fn give_back(&self, instance: Box<Instance>) {
        if self.factory.limits.max_idle == 0 {
            return self.discard(instance, Budget::Ordinary);
        }
        let freed = self.idle.give_back(instance);
        if freed > 0 {
            self.permits.add_permits(freed);
        }
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
