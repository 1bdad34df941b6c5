//! What every capability of a store may borrow: the resource table, the call
//! in progress, the adapter's identity, the store's clock and the adapter's
//! budget for what the host holds for it. The runtime writes these (a call
//! begins and ends, the adapter is renamed); capabilities read them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;

use crate::capability::held::{Held, HeldBudget};
use crate::capability::tasks::TaskCalls;
use crate::clock::Deadline;

/// Why a running guest was stopped by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    Deadline,
    Cancelled,
}

/// How long a cancelled guest has to return on its own (a watch that sees
/// its cancellation pollable and ends cleanly) before it is stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// The call in progress on a store.
#[derive(Debug, Clone)]
pub(crate) struct ActiveCall {
    /// Kept unconverted: most calls never ask it as an `Instant`
    /// (`crate::clock`).
    deadline: Option<Deadline>,
    pub(crate) cancel: CancellationToken,
    pub(crate) stopped: Option<Stopped>,
    /// When the epoch hook first saw the cancellation.
    cancel_seen: Option<Instant>,
}

impl ActiveCall {
    pub(crate) fn new(deadline: Option<Deadline>, cancel: CancellationToken) -> Self {
        ActiveCall {
            deadline,
            cancel,
            stopped: None,
            cancel_seen: None,
        }
    }

    /// Sets the store up for a call with `deadline`, cancelled through
    /// `cancel`. The token kept from the store's last call is kept when it
    /// is the same token (a caller that reuses its `CallContext`): cloning
    /// one takes its tree node's mutex, and dropping the old one again;
    /// together 3 % of a short call in a profile (docs/benchmarks.md).
    pub(crate) fn begin(&mut self, deadline: Option<Deadline>, cancel: &CancellationToken) {
        if self.cancel != *cancel {
            self.cancel = cancel.clone();
        }
        self.deadline = deadline;
        self.stopped = None;
        self.cancel_seen = None;
    }

    pub(crate) fn idle() -> Self {
        Self::new(None, CancellationToken::new())
    }

    /// The call's deadline, if it has one (and it fits an `Instant`).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline.and_then(|d| d.instant())
    }

    /// Back to idle after a call. The call's token stays until the next
    /// call replaces it (no guest code runs in between, so nothing asks
    /// it): making a fresh token here cost an allocation on every call.
    pub(crate) fn finish(&mut self) {
        self.deadline = None;
        self.stopped = None;
        self.cancel_seen = None;
    }

    /// Whether the call is over for the guest (cancelled or past its
    /// deadline): what `call.is-cancelled` answers.
    pub(crate) fn is_over(&self) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| d.passed())
    }

    /// Whether the host must stop the guest now, and why: at the deadline,
    /// or [`CANCEL_GRACE`] after a cancellation.
    pub(crate) fn should_stop(&mut self) -> Option<Stopped> {
        if self.deadline.is_some_and(|d| d.passed()) {
            return Some(Stopped::Deadline);
        }
        self.cancel_overdue()
    }

    /// [`ActiveCall::should_stop`] for a call that shares its instance:
    /// stopping its code ends the others' too, so it is stopped only once
    /// it has ignored its deadline, as a cancellation, for [`CANCEL_GRACE`]
    /// (it is told through `call.cancelled` at the deadline itself).
    pub(crate) fn should_stop_shared(&mut self) -> Option<Stopped> {
        let overdue = self
            .deadline()
            .and_then(|d| d.checked_add(CANCEL_GRACE))
            .is_some_and(|at| Instant::now() >= at);
        if overdue {
            return Some(Stopped::Deadline);
        }
        self.cancel_overdue()
    }

    /// [`CANCEL_GRACE`] after the cancellation was first seen.
    fn cancel_overdue(&mut self) -> Option<Stopped> {
        if self.cancel.is_cancelled() {
            let now = Instant::now();
            let seen = *self.cancel_seen.get_or_insert(now);
            if now.duration_since(seen) >= CANCEL_GRACE {
                return Some(Stopped::Cancelled);
            }
        }
        None
    }
}

/// The adapter's identity, for logs and audit.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The adapter's name as the host knows it (its kind unless renamed).
    pub(crate) name: String,
}

/// What one store's capabilities share.
pub(crate) struct Env {
    pub(crate) table: ResourceTable,
    /// The call in progress, on an instance that runs one at a time.
    pub(crate) call: ActiveCall,
    /// The calls in progress by task, on an instance that runs several at
    /// once (`runtime/lanes.rs`); read through [`Env::with_call`].
    pub(crate) tasks: Option<Arc<TaskCalls>>,
    pub(crate) identity: Arc<Identity>,
    /// The monotonic clock's zero, shared with the guest's
    /// `wasi:clocks/monotonic-clock` so deadlines translate exactly.
    pub(crate) clock_base: Instant,
    /// The adapter's budget for streams and their buffers, shared by all
    /// its instances.
    held_budget: Arc<HeldBudget>,
    /// Holdings made through this store and still alive.
    held_here: Arc<AtomicU32>,
}

impl Env {
    pub(crate) fn new(identity: Arc<Identity>, held_budget: Arc<HeldBudget>) -> Self {
        Env {
            table: ResourceTable::new(),
            call: ActiveCall::idle(),
            tasks: None,
            identity,
            clock_base: Instant::now(),
            held_budget,
            held_here: Arc::new(AtomicU32::new(0)),
        }
    }

    /// `f` of the call whose code runs now: the store's one call, or on a
    /// shared instance the call whose task runs (none running: the store's
    /// idle call, which has no deadline and is never cancelled).
    pub(crate) fn with_call<R>(&mut self, f: impl FnOnce(&mut ActiveCall) -> R) -> R {
        let Some(tasks) = &self.tasks else {
            return f(&mut self.call);
        };
        match tasks.with_current(f) {
            Ok(r) => r,
            Err(f) => f(&mut self.call),
        }
    }

    /// Whether the host must stop the code running now, and why
    /// ([`ActiveCall::should_stop`]; on a shared instance
    /// [`ActiveCall::should_stop_shared`], for that code's call). Recorded
    /// on the call.
    pub(crate) fn should_stop(&mut self) -> Option<Stopped> {
        let shared = self.tasks.is_some();
        self.with_call(|call| {
            let why = match shared {
                false => call.should_stop(),
                true => call.should_stop_shared(),
            };
            if why.is_some() {
                call.stopped = why;
            }
            why
        })
    }

    /// The deadline and cancellation of the call whose code runs now.
    pub(crate) fn call_bounds(&mut self) -> (Option<Instant>, CancellationToken) {
        self.with_call(|c| (c.deadline(), c.cancel.clone()))
    }

    /// Takes from the adapter's stream budget for `what` (see
    /// [`crate::capability::held`]).
    pub(crate) fn hold(&self, what: &str, bytes: u64) -> Result<Held, String> {
        self.held_budget.take(&self.held_here, what, bytes)
    }

    /// Whether streams or sessions opened through this store are still
    /// alive: in its table, or handed to core.
    pub(crate) fn holds_anything(&self) -> bool {
        self.held_here.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod active_call_tests {
    use super::*;

    #[test]
    fn a_call_takes_the_callers_token_and_drops_the_last_calls_state() {
        let mut call = ActiveCall::idle();
        let first = CancellationToken::new();
        call.begin(None, &first);
        assert!(call.cancel == first);
        call.stopped = Some(Stopped::Deadline);
        call.finish();
        // The same token again: kept, and the state of the call before is gone.
        call.begin(None, &first);
        assert!(call.cancel == first && call.stopped.is_none());
        // Another token: that one is watched, not the old one.
        let second = CancellationToken::new();
        call.begin(
            Some(Deadline::at(Instant::now() + Duration::from_secs(60))),
            &second,
        );
        assert!(call.cancel == second);
        first.cancel();
        assert!(!call.cancel.is_cancelled());
        second.cancel();
        assert!(call.is_over());
    }
}
