//! Liars (issue 45): the conformance suite fails an adapter that declares a capability and lies
//! about it, naming the declaration. The liar (`tests/components/liar-adapter`) is the Kubernetes
//! adapter with one lie chosen by its configuration field `lie`, loaded on the test cluster's real
//! node with the same grants and configuration as the Kubernetes adapter's own run there
//! (`real_node::every_conformance_case_runs_for_real_and_passes_on_the_real_node`). Each test runs
//! only the cases its lie touches. The control, `lie: none`, passes those cases: the failures are
//! the lies', not the cluster's.

use pando_conformance::{EgressProbe, Options, Outcome, Report, Target, Verdict};
use pando_tests::real_node::{self as node, BUSYBOX};
use pando_tests::{cluster, components, kubernetes_adapter as ka};

/// The edge's node ports: fixed, so the suite knows where to send its request through the edge,
/// and apart from the ones `real_node_edge` uses.
const EDGE_HTTP_NODE_PORT: u16 = 30280;
const EDGE_HTTPS_NODE_PORT: u16 = 30643;

/// Every case some lie touches: what the control passes.
const CASES: &[&str] = &[
    "C-CAP-01",
    "C-CAP-02",
    "C-CAP-03",
    "C-CAP-04",
    "C-APPLY-01",
    "C-LOGS-01",
    "C-STOP-01",
    "C-VOL-01",
];

/// The liar telling `lie`, on the real node as `pando`: the real node's configuration with its
/// storage (C-VOL-01), its egress gateway (so egress restriction is declared, C-CAP-04) and the
/// edge on the node behind fixed node ports (C-CAP-02).
async fn target(lie: &str) -> Target {
    let mut config: serde_json::Value =
        serde_json::from_str(node::ADAPTER_CONFIG).expect("the real node's configuration");
    config["storage_class"] = serde_json::json!("pando-local");
    config["egress_gateway_image"] = serde_json::json!("pando.test/gateway:1");
    config["edge_runtime_class"] = serde_json::json!(node::RUNTIME_CLASS);
    config["edge_service_type"] = serde_json::json!("NodePort");
    config["edge_http_node_port"] = serde_json::json!(EDGE_HTTP_NODE_PORT);
    config["edge_https_node_port"] = serde_json::json!(EDGE_HTTPS_NODE_PORT);
    config["lie"] = serde_json::json!(lie);
    let client = cluster::client(cluster::Identity::Pando)
        .await
        .expect("a client for the pando identity");
    Target {
        host: pando_host::Host::builder()
            .cache_dir(pando_tests::probe::shared_cache())
            .build()
            .expect("host"),
        component: components::component("pando_liar_adapter"),
        load: pando_host::LoadOptions {
            grants: node::grants(),
            config: config.to_string(),
            kubernetes: Some(client),
            ..pando_host::LoadOptions::default()
        },
    }
}

/// Runs `cases` against the liar telling `lie`, with what the real node offers the suite: its
/// busybox, the outside host's two listeners, and the node's address for the edge.
async fn run(lie: &str, cases: &[&str]) -> Report {
    let admin = ka::admin().await;
    node::require(&admin).await;
    let options = Options {
        only: cases.iter().map(|c| (*c).to_string()).collect(),
        image: BUSYBOX.into(),
        egress_probe: Some(
            EgressProbe::new("allowed.outside.test:80", "denied.outside.test:80")
                .expect("the outside host's listeners"),
        ),
        edge_probe: Some(format!("198.18.0.1:{EDGE_HTTP_NODE_PORT}")),
        ..Options::default()
    };
    eprintln!("the liar, lie: {lie}");
    let report = crate::conformance::run(&target(lie).await, &options).await;
    assert_eq!(
        report.cases.len(),
        cases.len(),
        "every case asked for ran:\n{}",
        report.to_text()
    );
    report
}

/// Asserts case `id` failed, naming the declaration of `capability` (as the contract spells it,
/// `egress-restriction`) and saying `lie`, what the runtime showed against it.
#[track_caller]
fn fails_naming(report: &Report, id: &str, capability: &str, lie: &str) {
    let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
    let declared = format!("but the adapter declares `{capability}: true` in its capabilities");
    assert!(
        matches!(&case.outcome, Outcome::Fail(why) if why.contains(&declared) && why.contains(lie)),
        "{id} fails naming `{capability}: true` and saying {lie:?}: {}",
        case.line()
    );
}

#[tokio::test]
async fn the_liar_telling_no_lie_passes_every_case_the_lies_fail() {
    // C-CAP-02 applies an edge, in the one edge namespace.
    let _edge = ka::edge_namespace_lock().await;
    let report = run("none", CASES).await;
    let not_passed: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Pass)
        .map(|c| c.line())
        .collect();
    assert!(
        not_passed.is_empty(),
        "the liar telling no lie does not pass:\n{}",
        not_passed.join("\n")
    );
    assert_eq!(report.verdict(), Verdict::Proven);
    // Each passed as declared, not as "not declared; answered `unsupported`" (image import, which
    // the Kubernetes adapter does not declare, excepted).
    for case in report.cases.iter().filter(|c| c.id != "C-CAP-01") {
        assert!(case.claim.is_none(), "{}", case.line());
    }
}

#[tokio::test]
async fn logs_of_another_workload_fail_c_logs_01_naming_logs() {
    let report = run("logs-of-another-workload", &["C-LOGS-01"]).await;
    fails_naming(
        &report,
        "C-LOGS-01",
        "logs",
        "does not hold the line its command printed",
    );
}

#[tokio::test]
async fn egress_ignored_fails_c_cap_04_naming_egress_restriction() {
    let report = run("egress-ignored", &["C-CAP-04"]).await;
    fails_naming(
        &report,
        "C-CAP-04",
        "egress-restriction",
        "which its rule does not name",
    );
}

#[tokio::test]
async fn a_trial_reporting_the_declared_ports_fails_c_cap_03_naming_trial() {
    let report = run("trial-declared-ports", &["C-CAP-03"]).await;
    fails_naming(
        &report,
        "C-CAP-03",
        "trial",
        "not exactly the one socket its command listens on",
    );
}

#[tokio::test]
async fn a_restore_that_writes_nothing_fails_c_vol_01_naming_volume_snapshot() {
    let report = run("restore-ignored", &["C-VOL-01"]).await;
    fails_naming(&report, "C-VOL-01", "volume-snapshot", "does not hold it");
}

#[tokio::test]
async fn an_edge_said_to_serve_that_does_not_fails_c_cap_02_naming_edge() {
    let _edge = ka::edge_namespace_lock().await;
    let report = run("edge-claims-serving", &["C-CAP-02"]).await;
    fails_naming(
        &report,
        "C-CAP-02",
        "edge",
        "is serving, but a request through it",
    );
}

#[tokio::test]
async fn image_import_declared_and_unsupported_fails_c_cap_01_naming_image_import() {
    let report = run("image-import-declared", &["C-CAP-01"]).await;
    fails_naming(
        &report,
        "C-CAP-01",
        "image-import",
        "answered `unsupported`",
    );
}

#[tokio::test]
async fn write_observation_declared_without_writes_fails_c_cap_03_naming_write_observation() {
    let report = run("write-observation-declared", &["C-CAP-03"]).await;
    fails_naming(&report, "C-CAP-03", "write-observation", "writes");
}

/// An error inside a call the suite relies on is the adapter's failure, in every case that relies
/// on it: never a skip, never unproven, and the run as a whole has failed.
#[tokio::test]
async fn an_observe_that_fails_fails_every_case_that_relies_on_it() {
    let cases = ["C-APPLY-01", "C-LOGS-01", "C-STOP-01", "C-VOL-01"];
    let report = run("observe-fails", &cases).await;
    for id in cases {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        assert!(
            matches!(&case.outcome, Outcome::Fail(why) if why.contains("the liar's observe is down")),
            "{id} fails with observe's own error: {}",
            case.line()
        );
    }
    assert_eq!(report.verdict(), Verdict::Failed, "{}", report.to_text());
}
