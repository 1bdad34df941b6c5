//! What went wrong, when a guest call did not return: a stop (the deadline,
//! a cancellation), the engine's shortage of slots, one of the store's
//! limits, a stack overflow, or a trap explained by what the guest last
//! wrote to stderr. Read on the error path only.

use std::time::Duration;

use wasmtime::{Store, Trap};

use crate::error::CallError;
use crate::limits::LimitHit;
use crate::runtime::state::{HostState, Stopped};

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

/// The error of a call stopped at its deadline.
pub(super) fn deadline_error(
    adapter: &str,
    method: &'static str,
    timeout: Option<Duration>,
) -> CallError {
    CallError::DeadlineExceeded {
        adapter: adapter.into(),
        method,
        timeout: timeout.unwrap_or_default(),
    }
}

/// A failed call's error, from the way it was stopped (if it was) and
/// the store's record of what it hit.
pub(super) fn classify(
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
