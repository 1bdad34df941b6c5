//! The one place a typed call reaches the host's import, after the
//! adapter's own budget ([`super::budget`]) lets it. The 0.1 line's
//! (blocking) sending; the rest of the client is the same in both lines.

use serde::de::DeserializeOwned;

use super::KubeError;
use super::request::{charges_budget, decode, to_raw};
use crate::kubernetes as raw;

/// Sends `request` once the budget lets it.
pub(crate) fn send(request: raw::Request) -> Result<raw::Response, KubeError> {
    wait_turn()?;
    let response = raw::send(&request);
    if charges_budget(&response) {
        super::budget::spend();
    }
    Ok(response?)
}

/// Sends kube-core's `request` and decodes the answer as `T`.
pub(crate) fn call<T: DeserializeOwned>(request: http::Request<Vec<u8>>) -> Result<T, KubeError> {
    decode(&send(to_raw(request)?)?)
}

/// Waits until the budget, when one is set, has a token; `Timeout` or
/// `Cancelled` when the call ends first, and then nothing is sent.
pub(crate) fn wait_turn() -> Result<(), KubeError> {
    let wait = super::budget::turn_wait();
    if wait.is_zero() {
        return Ok(());
    }
    crate::time::sleep(wait).map_err(super::error::call_ended)
}
