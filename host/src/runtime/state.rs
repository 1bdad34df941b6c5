//! What a store carries: an inert WASI context, the limiter, the guest's
//! stderr, the [`Env`] every capability may borrow, and each capability's
//! own state ([`Instances`]).

use std::sync::Arc;
use std::time::Instant;

use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

pub use crate::capability::env::CANCEL_GRACE;
use crate::capability::env::Env;
pub(crate) use crate::capability::env::{Identity, Stopped};
use crate::capability::held::HeldBudget;
use crate::capability::{Instances, Shared, StoreData};
use crate::limits::{Limiter, Limits};
use crate::runtime::stderr::StderrTail;

/// The data of one adapter instance's store.
pub struct HostState {
    wasi: WasiCtx,
    pub(crate) limiter: Limiter,
    pub(crate) stderr: StderrTail,
    pub(crate) env: Env,
    capabilities: Instances,
}

impl HostState {
    pub(crate) fn new(
        identity: Arc<Identity>,
        limits: &Limits,
        shared: &Shared,
        held_budget: Arc<HeldBudget>,
    ) -> Self {
        let env = Env::new(identity.clone(), held_budget);
        let stderr = StderrTail::budgeted(identity, shared.log.clone());
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .monotonic_clock(BaseClock(env.clock_base))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        HostState {
            wasi,
            limiter: Limiter::new(limits),
            stderr,
            env,
            capabilities: shared.instances(),
        }
    }

    /// Whether streams or sessions opened through this store are still
    /// alive: in its table, or handed to core.
    pub(crate) fn holds_anything(&self) -> bool {
        self.env.holds_anything()
    }

    /// Renames the adapter in this store's logs.
    pub(crate) fn set_identity(&mut self, identity: Arc<Identity>) {
        self.stderr.set_identity(identity.clone());
        self.env.identity = identity;
    }
}

impl StoreData for HostState {
    fn parts(&mut self) -> (&mut Env, &mut Instances) {
        (&mut self.env, &mut self.capabilities)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.env.table,
        }
    }
}

/// A monotonic clock counting from the store's creation.
struct BaseClock(Instant);

impl wasmtime_wasi::HostMonotonicClock for BaseClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
