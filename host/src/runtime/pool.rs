//! Configured instances of one adapter, kept for reuse.
//!
//! A wasmtime store runs one call at a time, and core calls concurrently, so
//! each adapter has a pool: a call leases an idle configured instance (or a
//! new one), and gives it back when it ends well. An instance that trapped,
//! ran out of time, was cancelled mid-call or served its quota is dropped
//! instead. Long-running calls (watch, exec) take a fresh instance of their
//! own from a separate budget, so they cannot starve ordinary calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;
use wasmtime::{Store, UpdateDeadline};

use crate::bindings::v0_1::{KubernetesAdapter, KubernetesAdapterPre};
use crate::capability::Shared;
use crate::capability::held::HeldBudget;
use crate::error::CallError;
use crate::limits::Limits;
use crate::runtime::engine::SharedEngine;
use crate::runtime::state::{HostState, Identity};

/// Sleeps until the deadline, or forever without one.
pub(crate) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// One configured instance.
pub(crate) struct Instance {
    pub(crate) store: Store<HostState>,
    pub(crate) bindings: KubernetesAdapter,
    calls: u64,
    /// Set when the instance must not serve another call.
    pub(crate) poisoned: bool,
    /// Set while a call runs on the store, cleared only when that call's
    /// future completes. A future dropped mid-call (core's
    /// `tokio::time::timeout` around a call) leaves it set: wasmtime then
    /// holds the store mid-call, with guest state half-changed, so the
    /// lease discards the instance instead of pooling it.
    pub(crate) in_call: bool,
}

/// What every new instance is made from.
pub(crate) struct Factory {
    /// Shared, so the epoch ticker runs as long as any adapter lives.
    pub(crate) engine: Arc<SharedEngine>,
    pub(crate) pre: KubernetesAdapterPre<HostState>,
    pub(crate) config: String,
    pub(crate) limits: Limits,
    pub(crate) identity: Arc<Identity>,
    /// What every instance made here shares of each capability (the log
    /// budget, the Kubernetes context, ...).
    pub(crate) capabilities: Shared,
    /// The adapter's stream budget: every instance made here draws on it.
    pub(crate) held_budget: Arc<HeldBudget>,
}

impl Factory {
    pub(crate) fn new(
        engine: &Arc<SharedEngine>,
        linker: &wasmtime::component::Linker<HostState>,
        component: &Component,
        config: String,
        limits: Limits,
        identity: Arc<Identity>,
        capabilities: Shared,
    ) -> wasmtime::Result<Self> {
        let pre = linker.instantiate_pre(component)?;
        let pre = KubernetesAdapterPre::new(pre)?;
        Ok(Factory {
            engine: Arc::clone(engine),
            pre,
            config,
            capabilities,
            held_budget: Arc::new(HeldBudget::of(&limits)),
            limits,
            identity,
        })
    }

    /// A fresh store with its limits and deadline hook.
    pub(crate) fn store(&self) -> Store<HostState> {
        let state = HostState::new(
            self.identity.clone(),
            &self.limits,
            &self.capabilities,
            self.held_budget.clone(),
        );
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limiter);
        // wasmtime's own bounds on what a guest makes the host allocate:
        // bytes lifted per crossing, handles live at once.
        store.set_hostcall_fuel(usize::try_from(self.limits.hostcall_bytes).unwrap_or(usize::MAX));
        store.set_max_component_handles(self.limits.max_handles as usize);
        store.epoch_deadline_callback(|mut cx| {
            let call = &mut cx.data_mut().env.call;
            if let Some(why) = call.should_stop() {
                call.stopped = Some(why);
                return Ok(UpdateDeadline::Interrupt);
            }
            // Yield each tick so the executor stays fair and core's own
            // timers run while a guest computes.
            Ok(UpdateDeadline::Yield(1))
        });
        store.set_epoch_deadline(1);
        store
    }

    /// The same factory (the same log budget), naming instances differently
    /// in logs.
    pub(crate) fn with_identity(mut self, identity: Arc<Identity>) -> Self {
        self.identity = identity;
        self
    }
}

impl Instance {
    pub(crate) fn new(store: Store<HostState>, bindings: KubernetesAdapter) -> Self {
        Instance {
            store,
            bindings,
            calls: 0,
            poisoned: false,
            in_call: false,
        }
    }
}

/// An adapter's instances.
pub(crate) struct Pool {
    pub(crate) factory: Factory,
    /// Boxed, so that leasing and returning an instance moves a pointer,
    /// not the store and the bindings (a measurable share of a short call).
    #[expect(
        clippy::vec_box,
        reason = "instances move between this list, leases and futures on every call"
    )]
    idle: Mutex<Vec<Box<Instance>>>,
    permits: Arc<Semaphore>,
    long_permits: Arc<Semaphore>,
    /// Instances made for calls (the load's first one not counted) and
    /// dropped rather than pooled, since the load: for the metrics.
    pub(crate) made: AtomicU64,
    pub(crate) discarded: AtomicU64,
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

/// An instance lent to one call.
pub(crate) struct Lease {
    /// Always `Some` until the lease is dropped.
    instance: Option<Box<Instance>>,
    pool: Arc<Pool>,
    reusable: bool,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    pub(crate) fn new(factory: Factory, first: Option<Instance>) -> Arc<Self> {
        let limits = &factory.limits;
        let permits = Arc::new(Semaphore::new(limits.max_instances.max(1) as usize));
        let long_permits = Arc::new(Semaphore::new(limits.max_long_running.max(1) as usize));
        Arc::new(Pool {
            idle: Mutex::new(first.into_iter().map(Box::new).collect()),
            factory,
            permits,
            long_permits,
            made: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
        })
    }

    /// Instances idle now.
    pub(crate) fn idle_count(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Leases an instance for an ordinary call, waiting (within the deadline)
    /// while every instance is busy; `make` makes one when none is idle.
    pub(crate) async fn lease(
        self: &Arc<Self>,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Lease, CallError> {
        self.lease_from(Budget::Ordinary, method, deadline, timeout, cancel, make)
            .await
    }

    /// A fresh instance, made by `make`, for a long-running call, never
    /// returned to the pool.
    pub(crate) async fn lease_dedicated(
        self: &Arc<Self>,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Lease, CallError> {
        self.lease_from(Budget::LongRunning, method, deadline, timeout, cancel, make)
            .await
    }

    /// A permit from `budget`, then an idle instance (when `pooled`) or a
    /// new one from `make`; only a pooled lease goes back to the pool. The
    /// pool does not run guest code itself: making an instance is a guest
    /// call, which the pipeline above it guards.
    async fn lease_from(
        self: &Arc<Self>,
        budget: Budget,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &CancellationToken,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Lease, CallError> {
        let pooled = budget == Budget::Ordinary;
        let permit = self
            .acquire(budget, method, deadline, timeout, cancel)
            .await?;
        let idle = if pooled {
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
        } else {
            None
        };
        let instance = match idle {
            Some(i) => i,
            None => {
                let made = make().await?;
                self.made.fetch_add(1, Ordering::Relaxed);
                Box::new(made)
            }
        };
        Ok(Lease {
            instance: Some(instance),
            pool: self.clone(),
            reusable: pooled,
            _permit: permit,
        })
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
    ) -> Result<OwnedSemaphorePermit, CallError> {
        // A free permit is the common case: taken without a race, a timer or
        // the adapter's name copied for errors that will not happen.
        if let Ok(permit) = self.budget(budget).0.clone().try_acquire_owned() {
            return Ok(permit);
        }
        // The wait, boxed: a rare path, kept out of every call's future.
        Box::pin(self.wait_for_permit(budget, method, deadline, timeout, cancel)).await
    }

    /// `budget`'s semaphore and the limit it was made with.
    fn budget(&self, budget: Budget) -> (&Arc<Semaphore>, u32) {
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
    ) -> Result<OwnedSemaphorePermit, CallError> {
        let (sem, limit) = self.budget(budget);
        let adapter = self.factory.identity.name.clone();
        let waited = self.factory.limits.default_timeout;
        let wait = sem.clone().acquire_owned();
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
}

impl Lease {
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

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(inst) = self.instance.take() else {
            return;
        };
        let limits = &self.pool.factory.limits;
        if !self.reusable
            || inst.poisoned
            || inst.in_call
            || inst.calls >= limits.max_calls_per_instance
        {
            if inst.in_call {
                tracing::debug!(
                    adapter = %self.pool.factory.identity.name,
                    "a call's future was dropped mid-call; its instance is discarded"
                );
            }
            self.pool.discarded.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut idle = self.pool.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < limits.max_idle as usize {
            idle.push(inst);
        } else {
            self.pool.discarded.fetch_add(1, Ordering::Relaxed);
        }
    }
}
