//! One configured instance of an adapter, and the factory every new one is
//! made from: a store with the adapter's limits, its epoch hook and its
//! capabilities, instantiated from the pre-linked component.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Store, UpdateDeadline};

use crate::bindings::v0_1::KubernetesAdapter;
use crate::capability::Shared;
use crate::capability::held::HeldBudget;
use crate::limits::Limits;
use crate::runtime::code::Code;
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
    /// Calls served, against `limits.max_calls_per_instance`.
    pub(crate) calls: u64,
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
    /// The pre-linked code, shared with every load of the same bytes.
    pub(crate) code: Arc<Code>,
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
        code: Arc<Code>,
        config: String,
        limits: Limits,
        identity: Arc<Identity>,
        capabilities: Shared,
    ) -> Self {
        Factory {
            engine: Arc::clone(engine),
            code,
            config,
            capabilities,
            held_budget: Arc::new(HeldBudget::of(&limits)),
            limits,
            identity,
        }
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
