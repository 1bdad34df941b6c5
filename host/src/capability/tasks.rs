//! Which call a 0.2.0 instance is running, when it runs several at once.
//!
//! A shared instance (`runtime/lanes.rs`) runs the tasks of several of core's calls
//! in one store, interleaved at every wait. What the imports answer per
//! call (its deadline, its cancellation) and what the epoch hook stops (the
//! call past its deadline) must be that call's, so each call's
//! [`ActiveCall`] is kept by the wasmtime *task group* its export call
//! made, and wasmtime's [`TaskGroupHook`] says which group runs: it enters
//! a group whenever it switches to one of its threads (the export's task,
//! the tasks it spawned, the host tasks of its imports), so an import's
//! first poll, where it takes the call's context, runs with its call's group
//! entered.
//!
//! A call is bound to its group as the group is made: the lane stages the
//! call's [`ActiveCall`] and, in the same poll, starts the export, whose
//! group wasmtime makes there (`handle_start`).
//!
//! One store runs on one thread at a time, so the lock is never contended;
//! it is a lock and not a cell because the hook and the store's data are
//! both `Send + Sync` by wasmtime's bounds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use wasmtime::component::{TaskGroupHook, TaskGroupId};

use crate::capability::env::{ActiveCall, Stopped};

/// The calls a shared instance is running, by task group.
#[derive(Default)]
pub(crate) struct TaskCalls {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The group whose thread runs now, if any.
    current: Option<TaskGroupId>,
    /// The call staged for the next group made.
    staged: Option<ActiveCall>,
    calls: HashMap<TaskGroupId, ActiveCall>,
    /// Why the host last stopped a call's code (the epoch hook): a stop
    /// traps the whole store, and its groups are finished before the lane
    /// asks why.
    last_stop: Option<Stopped>,
}

impl TaskCalls {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while the lock was held left plain data behind, still
        // consistent: every update below is a single insert, remove or
        // assignment.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stages `call` for the export call about to start.
    pub(crate) fn stage(&self, call: ActiveCall) {
        self.lock().staged = Some(call);
    }

    /// `f` of the call whose task runs now; `f` back when none of the
    /// calls' tasks runs (the event loop's own work).
    pub(crate) fn with_current<R, F: FnOnce(&mut ActiveCall) -> R>(&self, f: F) -> Result<R, F> {
        let mut inner = self.lock();
        let Some(id) = inner.current else {
            return Err(f);
        };
        match inner.calls.get_mut(&id) {
            Some(call) => Ok(f(call)),
            None => Err(f),
        }
    }

    /// Why the host last stopped one of the calls' code, if it did.
    pub(crate) fn last_stop(&self) -> Option<Stopped> {
        self.lock().last_stop
    }

    /// The hook to give the store, keeping this registry current.
    pub(crate) fn hook(self: &Arc<Self>) -> Hook {
        Hook(Arc::clone(self))
    }
}

/// The store's [`TaskGroupHook`]: binds each group to its call and keeps
/// the current group.
pub(crate) struct Hook(Arc<TaskCalls>);

impl TaskGroupHook for Hook {
    fn handle_start(&mut self, id: TaskGroupId) -> wasmtime::Result<()> {
        let mut inner = self.0.lock();
        // A group made with nothing staged (none is, today) gets a call
        // with no deadline that nobody cancels.
        let call = inner.staged.take().unwrap_or_else(ActiveCall::idle);
        inner.calls.insert(id, call);
        Ok(())
    }

    fn handle_enter(&mut self, id: TaskGroupId) -> wasmtime::Result<()> {
        self.0.lock().current = Some(id);
        Ok(())
    }

    fn handle_exit(&mut self, id: TaskGroupId) -> wasmtime::Result<()> {
        let mut inner = self.0.lock();
        if inner.current == Some(id) {
            inner.current = None;
        }
        Ok(())
    }

    fn handle_finish(&mut self, id: TaskGroupId) -> wasmtime::Result<()> {
        // Ids are reused once finished: nothing of this call may stay.
        let mut inner = self.0.lock();
        if let Some(stopped) = inner.calls.remove(&id).and_then(|c| c.stopped) {
            inner.last_stop = Some(stopped);
        }
        if inner.current == Some(id) {
            inner.current = None;
        }
        Ok(())
    }
}
