//! What the adapter knows of a pod's life, whoever made it: whether it has
//! exited (R-151: it never runs again), and how long one deleted may take
//! to be gone, so that its successor can take its name.

use std::time::Duration;

use pando_adapter_sdk::kube::Api;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::types::Error;

use super::stored_hash;

/// Beyond a pod's grace period, how long a pod being deleted is waited for:
/// the kubelet kills what ignored SIGTERM at the end of the grace, and the
/// API server then removes the object.
pub const KILL_MARGIN: Duration = Duration::from_secs(15);

/// Kubernetes' default grace period, for a pod whose spec names none.
const DEFAULT_GRACE_S: i64 = 30;

/// How long `pod`, deleted, may take to be gone: the grace it actually has
/// (the one its deletion set, else its spec's, else Kubernetes' 30 s), plus
/// [`KILL_MARGIN`]. A fixed bound shorter than the grace turns a process
/// that ignores SIGTERM into a `conflict` on every redeploy.
pub fn gone_limit(pod: &Pod) -> Duration {
    let grace = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .unwrap_or(DEFAULT_GRACE_S);
    Duration::from_secs(u64::try_from(grace).unwrap_or(0)) + KILL_MARGIN
}

/// Whether a pod has exited: it will never run again.
pub fn has_exited(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Whether `have` is the pod `want` asks for and may go on: written with
/// the same hash, not exited (nothing but a converge starts it again,
/// R-151), not being deleted.
pub fn runs_as_asked(have: &Pod, want: &Pod) -> bool {
    stored_hash(&have.metadata) == stored_hash(&want.metadata)
        && !has_exited(have)
        && have.metadata.deletion_timestamp.is_none()
}

/// Waits until the pod `name` is gone, so its successor can take the name,
/// for at most `limit` (see [`gone_limit`]); the call's deadline bounds it
/// too.
pub fn wait_gone_within(api: &Api<Pod>, name: &str, limit: Duration) -> Result<(), Error> {
    let step = Duration::from_millis(250);
    let mut waited = Duration::ZERO;
    while api.get_opt(name).map_err(Error::from)?.is_some() {
        if waited >= limit {
            return Err(Error::Conflict(format!(
                "pod `{name}` is still terminating after {} s; try again once it is gone",
                limit.as_secs()
            )));
        }
        pando_adapter_sdk::time::sleep(step)?;
        waited += step;
    }
    Ok(())
}
