//! `pando:runtime/call`: the call's deadline and cancellation, as the guest
//! sees them.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use wasmtime::component::{Accessor, Linker};

use super::{Capability, Lend, Setup, StoreData, View, view};
use crate::bindings::v0_1::pando::runtime::call::{self as wit, Host};
use crate::bindings::v0_2::pando::runtime::call as wit_v0_2;

/// `pando:runtime/call`: nothing of its own; it reads the call in progress
/// from the store's [`Env`](super::env::Env).
pub(crate) struct Call;

impl Capability for Call {
    const INTERFACES: &'static [&'static str] = &["call"];
    type Shared = ();
    type Instance = ();

    fn shared(_: &Setup<'_>) {}

    fn instance((): &()) {}

    fn add_to_linker<T: StoreData>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        wit::add_to_linker::<T, Lend<Self>>(linker, view::<T, Self>)
    }

    fn add_to_linker_v0_2<T: StoreData>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        wit_v0_2::add_to_linker::<T, Lend<Self>>(linker, view::<T, Self>)
    }
}

impl View<'_, Call> {
    /// The deadline of the call whose code runs now, on the store's
    /// monotonic clock, in nanoseconds (the clock both WASI versions read:
    /// `state.rs`).
    fn deadline_mark(&mut self) -> Option<u64> {
        let base = self.env.clock_base;
        self.env.with_call(|c| c.deadline()).map(|d| {
            let since = d.saturating_duration_since(base);
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
    }
}

/// Ready once the call it was made for is cancelled or past its deadline.
pub(crate) struct CancelPollable {
    cancel: CancellationToken,
    deadline: Option<Instant>,
}

#[async_trait::async_trait]
impl Pollable for CancelPollable {
    async fn ready(&mut self) {
        match self.deadline {
            Some(d) => {
                tokio::select! {
                    () = self.cancel.cancelled() => {}
                    () = tokio::time::sleep_until(d.into()) => {}
                }
            }
            None => self.cancel.cancelled().await,
        }
    }
}

impl Host for View<'_, Call> {
    async fn deadline(&mut self) -> wasmtime::Result<Option<u64>> {
        Ok(self.deadline_mark())
    }

    async fn cancelled(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let p = CancelPollable {
            cancel: self.env.call.cancel.clone(),
            deadline: self.env.call.deadline(),
        };
        let r = self.env.table.push(p)?;
        subscribe(&mut self.env.table, r)
    }

    async fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.env.call.is_over())
    }
}

// 0.2.0: the same answers, of the call whose task asks: an instance may
// run several calls at once (`runtime/lanes.rs`), each its own deadline.
impl wit_v0_2::Host for View<'_, Call> {
    fn deadline(&mut self) -> wasmtime::Result<Option<u64>> {
        Ok(self.deadline_mark())
    }

    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.env.with_call(|c| c.is_over()))
    }
}

impl<T: Send> wit_v0_2::HostWithStore<T> for Lend<Call> {
    async fn cancelled(accessor: &Accessor<T, Self>) -> wasmtime::Result<()> {
        // Taken before the first wait: the store is not held across it.
        let mut ready = accessor.with(|mut access| {
            let (deadline, cancel) = access.get().env.call_bounds();
            CancelPollable { cancel, deadline }
        });
        ready.ready().await;
        Ok(())
    }
}
