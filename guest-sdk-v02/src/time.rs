//! The call's deadline and cancellation, and waiting under them.
//!
//! Cancellation in 0.2.0 is cooperative, as in 0.1.0: when core cancels a
//! call or its deadline passes, `call.cancelled` resolves and every wait of
//! this module ends in `cancelled` (or `timeout`, when it was the
//! deadline). A call that ignores it is stopped by the host after a grace
//! period, its instance thrown away.
//!
//! ```no_run
//! use std::time::Duration;
//! use pando_adapter_sdk_v02::time;
//! use pando_adapter_sdk_v02::types::Error;
//!
//! async fn poll_until_ready(ready: impl Fn() -> bool) -> Result<(), Error> {
//!     while !ready() {
//!         time::sleep(Duration::from_millis(200)).await?;
//!     }
//!     Ok(())
//! }
//! ```

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures::future::{Either, select};

use crate::bindings::pando::runtime::call;
use crate::bindings::wasi::clocks::monotonic_clock;
use crate::types::Error;

/// How long the call has left, or `None` without a deadline.
pub fn deadline() -> Option<Duration> {
    let deadline = call::deadline()?;
    Some(Duration::from_nanos(
        deadline.saturating_sub(monotonic_clock::now()),
    ))
}

/// Whether the call was cancelled (or its deadline passed).
pub fn is_cancelled() -> bool {
    call::is_cancelled()
}

/// `Err(cancelled or timeout)` once the call is cancelled, else `Ok(())`.
pub fn check_cancelled() -> Result<(), Error> {
    if is_cancelled() {
        Err(cancellation_error())
    } else {
        Ok(())
    }
}

/// The error a cancelled call returns: `timeout` when its deadline passed,
/// else `cancelled`.
pub fn cancellation_error() -> Error {
    match call::deadline() {
        Some(deadline) if monotonic_clock::now() >= deadline => {
            Error::Timeout("the call's deadline passed".into())
        }
        _ => Error::Cancelled("the call was cancelled".into()),
    }
}

/// Resolves when the call is cancelled (or its deadline passes).
pub async fn cancelled() {
    call::cancelled().await;
}

/// Wait `duration`, or fail with [`cancellation_error`] when the call is
/// cancelled first.
pub async fn sleep(duration: Duration) -> Result<(), Error> {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    cancellable(monotonic_clock::wait_for(nanos)).await
}

/// `work`'s output, or [`cancellation_error`] when the call is cancelled
/// first (then `work` is dropped where it was waiting).
pub async fn cancellable<T>(work: impl Future<Output = T>) -> Result<T, Error> {
    let work = pin!(work);
    let cancelled = pin!(call::cancelled());
    match select(work, cancelled).await {
        Either::Left((out, _)) => Ok(out),
        Either::Right(_) => Err(cancellation_error()),
    }
}
