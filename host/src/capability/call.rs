//! `pando:runtime/call`: the call's deadline and cancellation, as the guest
//! sees them.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use super::View;
use crate::bindings::v0_1::pando::runtime::call::{self as wit, Host};

/// `pando:runtime/call`: nothing of its own; it reads the call in progress
/// from the store's [`Env`](super::env::Env).
pub(crate) struct Call;

super::stateless_capability!(Call, "call", wit);

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
        Ok(self.env.call.deadline().map(|d| {
            let since = d.saturating_duration_since(self.env.clock_base);
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        }))
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
