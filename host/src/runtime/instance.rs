//! One configured instance of an adapter, and the factory every new one is
//! made from: a store with the adapter's limits, its epoch hook and its
//! capabilities, instantiated from the pre-linked component.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::Accessor;
use wasmtime::{Store, UpdateDeadline};

use crate::bindings::{v0_1, v0_2};
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

/// An instance's exports, as its contract line binds them.
pub(crate) enum Bindings {
    V0_1(v0_1::KubernetesAdapter),
    V0_2(v0_2::KubernetesAdapter),
}

/// The adapter interface of an instance, to call.
#[derive(Clone, Copy)]
pub(crate) enum Guest<'a> {
    V0_1(&'a v0_1::exports::pando::runtime::adapter::Guest),
    V0_2(&'a v0_2::exports::pando::runtime::adapter::Guest),
}

/// The same export called on either line's bindings: the lines share their
/// argument and result types (`crate::bindings`), so one expression serves
/// both.
macro_rules! either {
    ($guest:expr, $g:ident => $call:expr) => {
        match $guest {
            $crate::runtime::instance::Guest::V0_1($g) => $call,
            $crate::runtime::instance::Guest::V0_2($g) => $call,
        }
    };
}
pub(crate) use either;

/// The same `async func` export called on either line: on a 0.1.0 store as
/// any call, on a 0.2.0 one inside its event loop (`run_v0_2`) with owned
/// arguments, which wasmtime's bindings take there.
macro_rules! either_async {
    ($guest:expr, $store:expr, $method:ident($($arg:expr),*)) => {
        match $guest {
            $crate::runtime::instance::Guest::V0_1(g) => g.$method($store, $($arg),*).await,
            $crate::runtime::instance::Guest::V0_2(g) => {
                $crate::runtime::instance::run_v0_2($store, async |a| {
                    g.$method(a, $(($arg).to_owned()),*).await
                })
                .await
            }
        }
    };
}
pub(crate) use either_async;

/// Runs a 0.2.0 `async func` export on `store` until it returns: wasmtime
/// calls such an export only from inside the store's event loop, which runs
/// while this is polled. One call at a time per store, as 0.1.0's: the
/// pool leases an instance to one call.
pub(crate) async fn run_v0_2<R>(
    store: &mut Store<HostState>,
    call: impl AsyncFnOnce(&Accessor<HostState>) -> wasmtime::Result<R>,
) -> wasmtime::Result<R> {
    store.run_concurrent(call).await?
}

impl Bindings {
    /// Its adapter interface.
    pub(crate) fn guest(&self) -> Guest<'_> {
        match self {
            Bindings::V0_1(b) => Guest::V0_1(b.pando_runtime_adapter()),
            Bindings::V0_2(b) => Guest::V0_2(b.pando_runtime_adapter()),
        }
    }
}

/// One configured instance.
pub(crate) struct Instance {
    pub(crate) store: Store<HostState>,
    pub(crate) bindings: Bindings,
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
            // The call whose code computes now: on a shared instance, the
            // one whose task runs (`capability/tasks.rs`).
            if cx.data_mut().env.should_stop().is_some() {
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
    pub(crate) fn new(store: Store<HostState>, bindings: Bindings) -> Self {
        Instance {
            store,
            bindings,
            calls: 0,
            poisoned: false,
            in_call: false,
        }
    }
}
