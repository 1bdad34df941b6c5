//! The baseline the `upstream` bench holds the host to: one configured
//! instance of the same component, made by the adapter's own factory, and
//! its export called straight on its store: wasmtime's async call, the
//! lowering and lifting, and the guest's work, with none of the host's
//! bookkeeping (no lease, deadline, span, metrics or quarantine).

use tokio_util::sync::CancellationToken;

use super::Adapter;
use crate::error::CallError;
use crate::runtime::instance::{Guest, Instance};
use crate::types::{BundleHandle, BundlePlan, UpstreamAddress, WorkloadRef};

/// A configured instance outside the pool, for measuring only.
#[doc(hidden)]
pub struct RawInstance {
    instance: Instance,
}

impl Adapter {
    /// A configured instance of this adapter that no call shares, for the
    /// bench's raw baseline.
    #[doc(hidden)]
    pub async fn raw_instance(&self) -> Result<RawInstance, CallError> {
        let instance =
            super::invoke::create(&self.inner.pool.factory, None, &CancellationToken::new())
                .await?;
        Ok(RawInstance { instance })
    }
}

impl RawInstance {
    pub(super) fn of(instance: Instance) -> Self {
        RawInstance { instance }
    }

    /// `apply` of a 0.1.0 adapter, called on the store directly (the
    /// 3-GET floor's call, `floor.rs`); a trap, an adapter error or a plan
    /// 0.1.0 cannot carry is returned as text.
    pub async fn apply(&mut self, plan: &BundlePlan) -> Result<BundleHandle, String> {
        let inst = &mut self.instance;
        let Guest::V0_1(g) = inst.bindings.guest() else {
            return Err("the raw apply is of 0.1.0 adapters only".into());
        };
        let plan = plan.to_v0_1()?;
        as_text(g.call_apply(&mut inst.store, &plan).await)
    }

    /// `upstream`, called on the store directly; a trap or an adapter
    /// error is returned as text.
    pub async fn upstream(
        &mut self,
        workload: &WorkloadRef,
        port: u16,
    ) -> Result<UpstreamAddress, String> {
        let inst = &mut self.instance;
        let called = match inst.bindings.guest() {
            Guest::V0_1(g) => g.call_upstream(&mut inst.store, workload, port).await,
            Guest::V0_2(g) => g.call_upstream(&mut inst.store, workload, port).await,
        };
        as_text(called)
    }
}

/// A raw call's answer, its adapter error or trap as text.
fn as_text<T, E: std::fmt::Debug>(called: wasmtime::Result<Result<T, E>>) -> Result<T, String> {
    match called {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("{e:?}")),
        Err(trap) => Err(format!("{trap:#}")),
    }
}
