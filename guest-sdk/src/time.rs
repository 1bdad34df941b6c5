//! The call's deadline and cancellation, and waiting that honours them.
//!
//! Every export runs under a deadline and core may cancel it. Blocking host
//! imports are cancelled by the host; a guest waiting on pollables of its
//! own (a sleep, a watch loop) uses [`sleep`] and [`wait_any`] here, which
//! wake on cancellation and return [`Error::Cancelled`] or
//! [`Error::Timeout`]. A guest that looks at neither is ended by the host's
//! backstop, and its instance thrown away.

use std::time::Duration;

use crate::bindings::pando::runtime::call;
use crate::bindings::wasi::clocks::monotonic_clock;
use crate::bindings::wasi::io::poll::{self, Pollable};
use crate::types::Error;

/// Time left before the call's deadline (zero once past); `None` when the
/// call has none (a watch).
pub fn deadline() -> Option<Duration> {
    let deadline = call::deadline()?;
    Some(Duration::from_nanos(
        deadline.saturating_sub(monotonic_clock::now()),
    ))
}

/// Whether the call is cancelled or past its deadline.
pub fn is_cancelled() -> bool {
    call::is_cancelled()
}

/// `Err` once the call is cancelled or past its deadline: the error to
/// return from the export.
pub fn check_cancelled() -> Result<(), Error> {
    if is_cancelled() {
        Err(cancellation_error())
    } else {
        Ok(())
    }
}

/// The error for a call that is over: [`Error::Timeout`] when its deadline
/// has passed, otherwise [`Error::Cancelled`].
pub fn cancellation_error() -> Error {
    match call::deadline() {
        Some(deadline) if monotonic_clock::now() >= deadline => {
            Error::Timeout("the call's deadline passed".into())
        }
        _ => Error::Cancelled("the call was cancelled".into()),
    }
}

/// Sleep for `duration`, waking early with the cancellation error if the
/// call is cancelled or reaches its deadline.
pub fn sleep(duration: Duration) -> Result<(), Error> {
    let timer = monotonic_clock::subscribe_duration(nanos(duration));
    wait_any(&[&timer]).map(|_| ())
}

/// Wait until at least one of `pollables` is ready; the indices (into
/// `pollables`) of those that are. Returns the cancellation error instead
/// once the call is cancelled or past its deadline. An empty list waits for
/// cancellation alone.
pub fn wait_any(pollables: &[&Pollable]) -> Result<Vec<usize>, Error> {
    let cancelled = call::cancelled();
    let mut all: Vec<&Pollable> = Vec::with_capacity(pollables.len() + 1);
    all.extend_from_slice(pollables);
    all.push(&cancelled);
    let cancel_index = pollables.len();
    let ready = poll::poll(&all);
    let mut out = Vec::with_capacity(ready.len());
    for index in ready {
        let index = index as usize;
        if index == cancel_index {
            return Err(cancellation_error());
        }
        out.push(index);
    }
    Ok(out)
}

/// As [`wait_any`], but give up after `timeout`: an empty list then.
pub fn wait_any_timeout(pollables: &[&Pollable], timeout: Duration) -> Result<Vec<usize>, Error> {
    let timer = monotonic_clock::subscribe_duration(nanos(timeout));
    let mut all: Vec<&Pollable> = Vec::with_capacity(pollables.len() + 1);
    all.extend_from_slice(pollables);
    all.push(&timer);
    let timer_index = pollables.len();
    let mut ready = wait_any(&all)?;
    ready.retain(|&i| i != timer_index);
    Ok(ready)
}

/// Whole nanoseconds, saturating: `Duration::MAX` sleeps "forever" rather
/// than wrapping.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
