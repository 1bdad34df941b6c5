//! The host's metrics (issue 17), scraped after real calls against the test
//! cluster: each metric says what the calls did.

use std::time::Duration;

use pando_host::{CallContext, Grants, LoadOptions};
use pando_tests::cluster;
use pando_tests::{components, plans, probe};

/// The value of the sample `name{labels…}` in `text`, where every one of
/// `labels` (`key="value"`) is among the sample's.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test]
async fn metrics_count_calls_denials_throttling_and_instances_after_real_calls() {
    let name = cluster::unique_name("metrics");
    let text = probe::GRANTS.replace("rate: {qps: 50, burst: 50}", "rate: {qps: 4, burst: 1}");
    let (a, host) = probe::load_as_pando_with(
        &components::kube_probe(),
        LoadOptions {
            name: Some(name.clone()),
            grants: Grants::from_text("test grants", &text).expect("grants"),
            ..LoadOptions::default()
        },
    )
    .await;
    let ns = probe::app_namespace("metrics").await;
    let ctx = || CallContext::default().with_timeout(Duration::from_secs(20));
    for _ in 0..3 {
        a.apply(&ctx(), &plans::plan(&format!("read-ns:{}", ns.name), &[]))
            .await
            .expect("a granted read");
    }
    let denied = a
        .apply(&ctx(), &plans::plan("secrets:kube-system", &[]))
        .await;
    assert!(denied.is_err(), "kube-system's secrets are not granted");

    let m = host.metrics();
    assert!(m.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF");
    let who = format!("adapter=\"{name}\"");
    let of = |metric: &str, labels: &[&str]| {
        let mut all = vec![who.as_str()];
        all.extend_from_slice(labels);
        sample(&m, metric, &all).unwrap_or_else(|| panic!("no {metric} {all:?} in:\n{m}"))
    };
    assert_eq!(
        of(
            "pando_adapter_calls_total",
            &["method=\"apply\"", "outcome=\"ok\""]
        ),
        3.0
    );
    assert_eq!(
        of(
            "pando_adapter_calls_total",
            &["method=\"apply\"", "outcome=\"denied\""]
        ),
        1.0
    );
    assert_eq!(
        of(
            "pando_adapter_call_duration_seconds_count",
            &["method=\"apply\""]
        ),
        4.0
    );
    assert_eq!(
        of(
            "pando_kubernetes_requests_denied_total",
            &["verb=\"list\"", "resource=\"secrets\""]
        ),
        1.0
    );
    // Four requests at burst 1, 4 a second: three of them waited.
    assert!(of("pando_kubernetes_throttled_requests_total", &[]) >= 3.0);
    assert!(of("pando_kubernetes_throttle_wait_seconds_total", &[]) > 0.3);
    assert_eq!(of("pando_adapter_instances_idle", &[]), 1.0);
    assert_eq!(of("pando_adapter_quarantined", &[]), 0.0);
    assert_eq!(of("pando_adapter_held_streams", &[]), 0.0);
    assert_eq!(
        of("pando_adapter_held_bytes_limit", &[]),
        pando_host::Limits::default().stream_buffer_bytes as f64
    );
    // The grant that allowed the reads (rule 0) counted them.
    assert_eq!(
        of("pando_kubernetes_grant_rule_uses_total", &["rule=\"0\""]),
        3.0
    );
    ns.delete().await.expect("cleanup");
}
