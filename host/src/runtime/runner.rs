//! Running guest code under a deadline and cancellation, and telling apart
//! what went wrong when it does not return.
//!
//! Two mechanisms stop a call: the tokio side (a deadline or a cancellation
//! while the guest waits in a host import) and the epoch hook (the same,
//! while the guest computes and never enters the host). Either way the
//! store may be mid-call, so its instance is poisoned and never reused.
//! A third is not ours: the caller dropping the call's future. Nothing runs
//! then, so the instance is marked in-call before the call and unmarked
//! after it, and a lease that ends with the mark set discards it.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::{Store, Trap};

use crate::bindings::v0_1::exports::pando::runtime::adapter::Guest;
use crate::error::CallError;
use crate::limits::LimitHit;
use crate::runtime::pool::Instance;
use crate::runtime::state::{ActiveCall, CANCEL_GRACE, HostState, Stopped};
use crate::types::Error as AdapterError;

/// Sleeps until the deadline, or forever without one.
pub(crate) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Resolves [`CANCEL_GRACE`] after the token is cancelled.
async fn cancelled_then_grace(cancel: &CancellationToken) {
    cancel.cancelled().await;
    tokio::time::sleep(CANCEL_GRACE).await;
}

/// Runs `f` on a bare store (instantiation), making it an instance.
pub(crate) async fn run_bare(
    adapter: &str,
    method: &'static str,
    mut store: Store<HostState>,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(
        &mut Store<HostState>,
    ) -> wasmtime::Result<crate::bindings::v0_1::KubernetesAdapter>,
) -> Result<Instance, CallError> {
    let timeout = remaining(deadline);
    match guarded(&mut store, adapter, method, deadline, timeout, cancel, f).await {
        Ok(bindings) => Ok(Instance::new(store, bindings)),
        Err((e, _)) => Err(e),
    }
}

/// How long until `deadline`, for error messages.
fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

/// Runs one export call on an instance. The adapter's own error is passed
/// through; anything else poisons the instance.
pub(crate) async fn run<R>(
    inst: &mut Instance,
    adapter: &str,
    method: &'static str,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<Result<R, AdapterError>>,
) -> Result<R, CallError> {
    let timeout = remaining(deadline);
    run_timed(inst, adapter, method, deadline, timeout, cancel, f).await
}

/// [`run`] for a caller that knows the call's timeout already: one clock
/// reading fewer on the path of every ordinary call.
pub(crate) async fn run_timed<R>(
    inst: &mut Instance,
    adapter: &str,
    method: &'static str,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<Result<R, AdapterError>>,
) -> Result<R, CallError> {
    // Cleared below only if this future runs to completion: dropped before
    // that, the instance is left marked and its lease discards it.
    inst.in_call = true;
    let Instance {
        store, bindings, ..
    } = inst;
    let guest = bindings.pando_runtime_adapter();
    let result = guarded(
        store,
        adapter,
        method,
        deadline,
        timeout,
        cancel,
        async |s: &mut Store<HostState>| f(guest, s).await,
    )
    .await;
    inst.in_call = false;
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CallError::Adapter(e)),
        Err((e, poisoned)) => {
            inst.poisoned |= poisoned;
            Err(e)
        }
    }
}

/// The common part: set the call up on the store, race it against the
/// deadline and cancellation, classify a failure. The flag says whether the
/// instance must be dropped.
async fn guarded<T>(
    store: &mut Store<HostState>,
    adapter: &str,
    method: &'static str,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<T>,
) -> Result<T, (CallError, bool)> {
    store.data_mut().env.call = ActiveCall::new(deadline, cancel.clone());
    // A crash is explained by what this call wrote, not an earlier one's.
    store.data().stderr.clear_tail();
    store.set_epoch_deadline(1);

    let outcome = {
        let call = f(&mut *store);
        tokio::select! {
            biased;
            r = call => Some(r),
            () = sleep_until_opt(deadline) => None,
            () = cancelled_then_grace(cancel) => None,
        }
    };
    let stopped = store.data().env.call.stopped;
    store.data_mut().env.call.finish();

    let err = match outcome {
        Some(Ok(v)) => return Ok(v),
        Some(Err(e)) => e,
        // The host side gave up while the guest waited in an import.
        None => {
            let e = if cancel.is_cancelled() {
                CallError::Cancelled {
                    adapter: adapter.into(),
                    method,
                }
            } else {
                deadline_error(adapter, method, timeout)
            };
            return Err((e, true));
        }
    };
    Err((
        classify(store, adapter, method, stopped, timeout, err),
        true,
    ))
}

/// The store's own limits, hit by this call: memory (a typed error) or
/// the table (a trap naming the limit).
fn limit_hit(
    store: &mut Store<HostState>,
    adapter: &str,
    method: &'static str,
) -> Option<CallError> {
    let data = store.data_mut();
    match data.limiter.hit.take()? {
        LimitHit::Memory => Some(CallError::MemoryExhausted {
            adapter: adapter.into(),
            method,
            limit: data.limiter.memory_limit(),
        }),
        LimitHit::Table => Some(CallError::Trap {
            adapter: adapter.into(),
            method,
            message: format!(
                "it grew a table past its limit of {} elements (raise `limits.table_elements` \
                 if the adapter really needs more)",
                data.limiter.table_limit()
            ),
        }),
    }
}

/// wasmtime's own bounds (set from the limits in `Factory::store`) trap
/// with wasmtime's words; says which limit it was and how to raise it.
fn name_wasmtime_bound(store: &Store<HostState>, message: &mut String) {
    if message.contains("fuel allocated for hostcalls has been exhausted") {
        message.push_str(&format!(
            " (more than `limits.hostcall_bytes`, {} bytes, copied out of the guest at once; \
             raise it if the adapter really passes values this large)",
            store.hostcall_fuel()
        ));
    } else if message.contains("store handle limit exceeded") {
        message.push_str(&format!(
            " (more than `limits.max_handles`, {}, handles live in one instance; raise it if \
             the adapter really holds this many)",
            store.max_component_handles()
        ));
    }
}

fn deadline_error(adapter: &str, method: &'static str, timeout: Option<Duration>) -> CallError {
    CallError::DeadlineExceeded {
        adapter: adapter.into(),
        method,
        timeout: timeout.unwrap_or_default(),
    }
}

fn classify(
    store: &mut Store<HostState>,
    adapter: &str,
    method: &'static str,
    stopped: Option<Stopped>,
    timeout: Option<Duration>,
    err: wasmtime::Error,
) -> CallError {
    match stopped {
        Some(Stopped::Deadline) => return deadline_error(adapter, method, timeout),
        Some(Stopped::Cancelled) => {
            return CallError::Cancelled {
                adapter: adapter.into(),
                method,
            };
        }
        None => {}
    }
    // The engine's pooling allocator had no slot for a new instance: the
    // host's shortage (every adapter of the engine shares the slots), not a
    // fault of this adapter, so not a trap the quarantine would count.
    if err
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return CallError::Host {
            adapter: adapter.into(),
            method,
            message: format!(
                "no instance could be made: {err:#} (the engine's slots are shared by every \
                 adapter; raise `EngineSettings::total_instances` or lower the adapters' \
                 `max_instances`/`max_long_running`)"
            ),
        };
    }
    if let Some(e) = limit_hit(store, adapter, method) {
        return e;
    }
    if err.downcast_ref::<Trap>() == Some(&Trap::StackOverflow) {
        return CallError::StackOverflow {
            adapter: adapter.into(),
            method,
        };
    }
    let tail = store.data().stderr.take_tail();
    let mut message = format!("{err:#}");
    name_wasmtime_bound(store, &mut message);
    if !tail.is_empty() {
        message.push_str("; it wrote to stderr: ");
        message.push_str(&tail);
    }
    CallError::Trap {
        adapter: adapter.into(),
        method,
        message,
    }
}
