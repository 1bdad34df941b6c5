use pando_host::types::ObservedBundle;
use pando_host::{Adapter, Host, Limits, LoadError, LoadOptions};

use crate::components;

/// The test adapter loaded with `limits` in a host of its own, whose compile
/// cache lives in the returned directory (keep it for the adapter's life).
pub async fn load(limits: Limits) -> (Adapter, tempfile::TempDir) {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host");
    let adapter = load_into(&host, limits).await.expect("test adapter loads");
    (adapter, cache)
}

/// The test adapter loaded with `limits` into `host`, the load's result as
/// it is (for tests that expect a refusal).
pub async fn load_into(host: &Host, limits: Limits) -> Result<Adapter, LoadError> {
    host.load_file(
        &components::test_adapter(),
        LoadOptions {
            limits,
            ..LoadOptions::default()
        },
    )
    .await
}

/// The serving instance's call count, as the test adapter's `observe`
/// reports it (`calls=N` in the first workload's reason).
pub fn calls(observed: &ObservedBundle) -> u64 {
    let reason = &observed.workloads[0].reason;
    reason
        .strip_prefix("calls=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reason {reason:?}"))
}
