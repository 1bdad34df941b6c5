//! `pando:runtime/call`: the call's deadline and cancellation, as the guest
//! sees them.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::bindings::v0_1::pando::runtime::call::Host;
use crate::state::HostState;

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

impl Host for HostState {
    async fn deadline(&mut self) -> wasmtime::Result<Option<u64>> {
        Ok(self.call.deadline.map(|d| {
            let since = d.saturating_duration_since(self.clock_base);
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        }))
    }

    async fn cancelled(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let p = CancelPollable {
            cancel: self.call.cancel.clone(),
            deadline: self.call.deadline,
        };
        let r = self.table().push(p)?;
        subscribe(self.table(), r)
    }

    async fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.call.is_over())
    }
}
