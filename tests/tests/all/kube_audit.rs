//! Issue 14's audit bounds against the test cluster: a guest cannot flood
//! the audit trail with a huge path or a storm of the same denial. (In this
//! binary rather than the process-owning one: it counts audit events with
//! the shared global subscriber, `kubernetes_adapter::install_audit_counter`.)

use std::time::Duration;

use pando_host::{CallContext, Grants, LoadOptions};
use pando_tests::cluster;
use pando_tests::{components, plans, probe};

/// A 32 MiB path and 100,000 denials: the audit trail stays small. Paths
/// and errors are clipped to 1 KiB; the same refusal in a row is written at
/// its 1st, 2nd, 4th … time with its count.
#[tokio::test]
async fn a_huge_path_and_a_hundred_thousand_denials_leave_a_small_audit_trail() {
    pando_tests::kubernetes_adapter::install_audit_counter();
    let name = cluster::unique_name("audit-flood");
    // A budget that never binds: this is about the trail, not the rate.
    let text = probe::GRANTS.replace(
        "rate: {qps: 50, burst: 50}",
        "rate: {qps: 1000000, burst: 1000000}",
    );
    let (a, _host) = probe::load_as_pando_with(
        &components::kube_probe(),
        LoadOptions {
            name: Some(name.clone()),
            grants: Grants::from_text("test grants", &text).expect("grants"),
            ..LoadOptions::default()
        },
    )
    .await;
    let got = a
        .apply(
            &CallContext::default().with_timeout(Duration::from_secs(120)),
            &plans::plan(&format!("deny-flood:100000:{}", 32 << 20), &[]),
        )
        .await
        .expect("the flood runs")
        .location;
    assert_eq!(got, "100000", "every one denied");
    let (events, bytes) = pando_tests::kubernetes_adapter::audit_volume(&name);
    eprintln!("32 MiB path + 100,000 denials: {events} audit events, {bytes} bytes");
    // The long path's one event, and 1, 2, 4 … 65,536 of the 100,000.
    assert!(events <= 20, "{events} audit events");
    assert!(bytes < 32 << 10, "{bytes} bytes of audit");
    let report = a.grant_report().expect("a report");
    let counted: u64 = report.denials.iter().map(|d| d.count).sum();
    assert!(counted >= 100_000, "every denial counted: {counted}");
}
