//! A 0.2.0 `async func` call seated in a lane (`runtime/lanes.rs`), beside
//! other calls on the same instance, when the adapter's
//! `limits.calls_per_instance` is above one; on the pool otherwise.
//!
//! The call runs in the lane's task, which owns the store; its caller
//! waits for the outcome over a channel, racing its deadline and
//! cancellation as a pooled call does. Its own deadline and cancellation
//! reach the guest as a pooled call's do: staged for its task group as the
//! export call starts (`capability/tasks.rs`).

use std::future::Future;
use std::pin::{Pin, pin};

use tokio::sync::oneshot;
use wasmtime::Store;
use wasmtime::component::Accessor;

use super::Adapter;
use super::classify::{classify, deadline_error};
use super::invoke::{After, Settles, Traced, create, race};
use crate::bindings::v0_2::exports::pando::runtime::adapter::Guest as V02Guest;
use crate::call::CallContext;
use crate::capability::env::ActiveCall;
use crate::clock::{Deadline, Stamp};
use crate::error::CallError;
use crate::runtime::instance::Guest;
use crate::runtime::lanes::{Lanes, job as lane_job};
use crate::runtime::state::{HostState, Stopped};
use crate::types::Error;

/// A 0.2.0 export call made in a lane: what it returns.
pub(super) type LaneFuture<'a, R> =
    Pin<Box<dyn Future<Output = wasmtime::Result<Result<R, Error>>> + Send + 'a>>;

/// A 0.2.0 export call to make in a lane, given its event loop and the
/// adapter's exports.
pub(super) trait LaneCall<R>:
    for<'a> FnOnce(&'a Accessor<HostState>, &'a V02Guest) -> LaneFuture<'a, R> + Send + 'static
{
}

impl<R, F> LaneCall<R> for F where
    F: for<'a> FnOnce(&'a Accessor<HostState>, &'a V02Guest) -> LaneFuture<'a, R> + Send + 'static
{
}

/// Gives a lane call's closure its higher-ranked signature (a closure's
/// own inference cannot).
pub(super) fn in_lane<R, F>(f: F) -> F
where
    F: for<'a> FnOnce(&'a Accessor<HostState>, &'a V02Guest) -> LaneFuture<'a, R>,
{
    f
}

/// A unary `async func` call, both ways: `pooled` on an instance of its own
/// (a 0.1.0 adapter, or a 0.2.0 one whose instances run one call at a
/// time), or the closure `laned` makes in a lane. `laned` is made only for
/// a lane: a pooled call copies no arguments for it.
macro_rules! unary {
    ($adapter:expr, $ctx:expr, $name:expr, $method:ident($($arg:ident),*)) => {
        $adapter
            .call_async(
                $ctx,
                $name,
                async |g, s| $crate::runtime::instance::either_async!(g, s, $method($($arg),*)),
                || {
                    $(let $arg = ($arg).to_owned();)*
                    $crate::adapter::shared::in_lane(move |a, g| {
                        Box::pin(async move { g.$method(a, $($arg),*).await })
                    })
                },
            )
            .await
    };
}
pub(super) use unary;

/// The lane's classification of what ended its store: the pipeline's.
pub(crate) fn classify_lane(
    store: &mut Store<HostState>,
    adapter: &str,
    stopped: Option<Stopped>,
    err: wasmtime::Error,
) -> CallError {
    classify(store, adapter, "call", stopped, None, err)
}

impl Adapter {
    /// A unary `async func` call (see [`unary`]).
    pub(super) async fn call_async<R, F>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        pooled: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
        laned: impl FnOnce() -> F,
    ) -> Result<R, CallError>
    where
        R: Send + 'static,
        F: LaneCall<R>,
    {
        match &self.inner.lanes {
            Some(lanes) => self.call_in_lane(ctx, method, lanes, laned()).await,
            None => self.call(ctx, method, After::Reuse, pooled).await,
        }
    }

    async fn call_in_lane<R, F>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        lanes: &Lanes,
        call: F,
    ) -> Result<R, CallError>
    where
        R: Send + 'static,
        F: LaneCall<R>,
    {
        let started = Stamp::now();
        let timeout = ctx.timeout(self.inner.limits.default_timeout);
        let deadline = timeout.map(|t| Deadline::after(started, t));
        let cancel = ctx.cancel_token();
        let name = &self.inner.identity.name;
        let given_up = || {
            if cancel.is_cancelled() {
                CallError::Cancelled {
                    adapter: name.clone(),
                    method,
                }
            } else {
                deadline_error(name, method, timeout)
            }
        };
        let body = pin!(async {
            self.inner.breaker.admit(name)?;
            let make = async || {
                let deadline = deadline.and_then(|d| d.instant());
                Box::pin(create(&self.inner.pool.factory, deadline, cancel)).await
            };
            let seat = race(pin!(lanes.seat(make)), deadline, cancel)
                .await
                .ok_or_else(given_up)??;
            let (tx, rx) = oneshot::channel();
            let active = ActiveCall::new(deadline, cancel.clone());
            let job = lane_job(move |a, g, tasks| {
                Box::pin(async move {
                    let mut tx = tx;
                    // Staged, then the export started in the same poll: the
                    // group wasmtime makes for it takes this call.
                    tasks.stage(active);
                    let answer = call(a, g);
                    tokio::select! {
                        biased;
                        answer = answer => {
                            let _ = tx.send(answer);
                        }
                        // The caller gave up: nobody waits for the answer.
                        () = tx.closed() => {}
                    }
                })
            });
            if !seat.lane.run(job) {
                return Err(self.lane_failed(&seat.lane, method).await);
            }
            match race(pin!(rx), deadline, cancel).await {
                Some(Ok(Ok(Ok(v)))) => Ok(v),
                Some(Ok(Ok(Err(e)))) => Err(CallError::Adapter(e)),
                // The call's own failure, its store maybe still running the
                // others': no new call is seated there.
                Some(Ok(Err(e))) => {
                    seat.lane.close();
                    Err(CallError::Trap {
                        adapter: name.clone(),
                        method,
                        message: format!("{e:#}; the instance it shared was closed"),
                    })
                }
                Some(Err(_)) => Err(self.lane_failed(&seat.lane, method).await),
                // Given up on while the guest may still run it, as a pooled
                // instance is poisoned: the lane takes no new call.
                None => {
                    seat.lane.close();
                    Err(given_up())
                }
            }
        });
        let span = self.span(method);
        let result = Traced::new(body, &span).await;
        self.finish(&span, method, &result, started, Settles::Now);
        result
    }

    /// What a call whose lane ended under it gets: the lane's failure, said
    /// of this call.
    async fn lane_failed(
        &self,
        lane: &crate::runtime::lanes::Lane,
        method: &'static str,
    ) -> CallError {
        lane.close();
        match lane.failure().await {
            Some(CallError::Trap {
                adapter, message, ..
            }) => CallError::Trap {
                adapter,
                method,
                message: format!(
                    "{message} (its instance ran other calls at once: the fault may be another's)"
                ),
            },
            Some(e) => e.of_method(method),
            None => CallError::Host {
                adapter: self.inner.identity.name.clone(),
                method,
                message: "the instance running this call beside others ended without saying why"
                    .into(),
            },
        }
    }
}
