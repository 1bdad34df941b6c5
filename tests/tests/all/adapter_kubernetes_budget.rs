//! `api_qps` and `api_burst`: the Kubernetes adapter's own request budget, paced in the guest
//! (`pando_adapter_sdk::kube::set_budget`), under the host's grant rate (`rate: {qps: 5,
//! burst: 10}` in deploy/grants/kubernetes.yaml). Below the host's rate it is the adapter's that
//! paces the requests; it can never widen the host's.

use std::time::{Duration, Instant};

use pando_tests::kubernetes_adapter::{self as ka, cleanup, ctx, id};
use pando_tests::plans::{bundle, plan};

/// [`ka::CONFIG`] with the adapter's budget.
fn config(qps: u32, burst: u32) -> String {
    format!(
        r#"{{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
        "api_qps": {qps}, "api_burst": {burst}}}"#
    )
}

/// How long one `observe` of `app` takes (4 requests: the namespace, then its pods, Services
/// and claims).
async fn observe_time(a: &pando_host::Adapter, app: &str) -> Duration {
    let start = Instant::now();
    a.observe(&ctx(), &bundle(app)).await.expect("observe");
    start.elapsed()
}

#[tokio::test]
async fn requests_are_paced_at_the_adapters_rate_below_the_hosts() {
    let (setup, _hs) = ka::load().await;
    let app = id("budget");
    setup
        .apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("apply");

    // Within the host's burst of 10, 4 requests go at once with a budget as wide.
    let (wide, _hw) = ka::load_with(&config(1000, 1000)).await;
    let fast = observe_time(&wide, &app).await;
    // At 2 a second with a burst of 1 the adapter spaces them 500 ms apart: 3 waits.
    let (narrow, _hn) = ka::load_with(&config(2, 1)).await;
    let paced = observe_time(&narrow, &app).await;
    assert!(
        paced >= Duration::from_millis(1450),
        "4 requests at api_qps 2, api_burst 1 take 1.5 s or more: {paced:?}"
    );
    assert!(
        fast < Duration::from_millis(1000),
        "the same requests under the host's rate alone go within its burst: {fast:?}"
    );
    cleanup(&setup, &app).await;
}
