//! The conformance suite (`pando_conformance`): the Kubernetes
//! adapter passes every case on the test cluster, as the `pando` identity
//! with the grants and configuration it ships with; and the suite fails an
//! adapter that breaks the contract (the test adapter, misbehaving on
//! request).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use pando_conformance::{self as conformance, CASES, Environment, Options, Outcome, Report, Target};
use pando_host::types::{VolumeHandle, WorkloadRef};
use pando_host::{Grants, Host, LoadOptions};
use pando_tests::cluster::{self, EXIT_CODE_ANNOTATION, Identity};
use pando_tests::{components, kubernetes_adapter as ka, probe};

/// What the test cluster lacks, done from outside: KWOK runs no
/// containers, so a workload whose command exits is ended the way the
/// cluster ends pods (`pando.test/exit-code`, a KWOK stage of
/// `scripts/cluster`); and nothing provisions storage, so a volume gets a
/// PersistentVolume bound to its claim, and the directory that stands in
/// for its contents where KWOK runs the adapter's helper
/// (`helper-root/pando-volumes/<namespace>/<claim>`). Named as the
/// Kubernetes adapter names things: namespace `pando-<app>`, pod and claim
/// as the workload and the volume.
struct Kwok;

fn volume_dir(volume: &VolumeHandle) -> std::path::PathBuf {
    cluster::state_dir()
        .join("helper-root/pando-volumes")
        .join(format!("pando-{}", volume.bundle))
        .join(&volume.name)
}

fn pv_name(volume: &VolumeHandle) -> String {
    format!("pv-pando-{}-{}", volume.bundle, volume.name)
}

impl Environment for Kwok {
    fn health_unknowable(&self) -> Option<String> {
        Some(
            "KWOK's pods have no network, so no canary can show NetworkPolicy enforced (O-43)"
                .into(),
        )
    }

    fn finish_workload<'a>(
        &'a self,
        workload: &'a WorkloadRef,
        code: i32,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let admin = cluster::client(Identity::Admin)
                .await
                .map_err(|e| e.to_string())?;
            let pods: Api<Pod> = Api::namespaced(admin, &format!("pando-{}", workload.bundle));
            let patch = serde_json::json!({
                "metadata": { "annotations": { EXIT_CODE_ANNOTATION: code.to_string() } }
            });
            pods.patch(
                &workload.workload,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
    }

    fn prepare_volume<'a>(&'a self, volume: &'a VolumeHandle) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let name = ka::bound_pv(&format!("pando-{}", volume.bundle), &volume.name).await;
            assert_eq!(name, pv_name(volume));
            std::fs::create_dir_all(volume_dir(volume)).map_err(|e| e.to_string())
        })
    }

    fn release_volume<'a>(&'a self, volume: &'a VolumeHandle) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            ka::delete_pv(&pv_name(volume)).await;
            let _ = std::fs::remove_dir_all(volume_dir(volume));
        })
    }
}

/// The configuration the adapter ships for the test cluster, as JSON.
fn example_config() -> String {
    let path = components::repo_root().join("examples/kubernetes-config.yaml");
    let text = std::fs::read_to_string(&path).expect("reading examples/kubernetes-config.yaml");
    let value: serde_json::Value = serde_yaml::from_str(&text).expect("the example config parses");
    value.to_string()
}

fn host() -> Host {
    Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host builds")
}

fn print(report: &Report) {
    eprintln!("{}", report.to_text());
}

/// The Kubernetes adapter as `pando`, with its shipped grants and the example configuration.
async fn kubernetes_target() -> Target {
    let client = cluster::client(Identity::Pando)
        .await
        .expect("a client for the pando identity");
    Target {
        host: host(),
        component: ka::component(),
        load: LoadOptions {
            grants: ka::grants(),
            config: example_config(),
            kubernetes: Some(client),
            ..LoadOptions::default()
        },
    }
}

#[tokio::test]
async fn the_kubernetes_adapter_passes_every_case() {
    let target = kubernetes_target().await;
    let options = Options {
        environment: Some(Arc::new(Kwok)),
        ..Options::default()
    };
    let report = conformance::run(&target, &options)
        .await
        .expect("the adapter loads");
    print(&report);
    let failures: Vec<String> = report.failures().map(|c| c.line()).collect();
    assert!(
        failures.is_empty(),
        "the Kubernetes adapter fails {} case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(report.cases.len(), CASES.len(), "every case ran");
}

/// The test adapter, configured with `config`, no grants: no runtime.
/// C-INFO-03 on KWOK, where the Kubernetes adapter's health check answers `unavailable` (no pod
/// network for its canary), run with `environment`.
async fn health_case(
    environment: Option<Arc<dyn Environment>>,
) -> pando_conformance::CaseResult {
    let target = kubernetes_target().await;
    let options = Options {
        only: vec!["C-INFO-03".into()],
        environment,
        ..Options::default()
    };
    let _canary = ka::canary_lock().await;
    let report = conformance::run(&target, &options)
        .await
        .expect("the adapter loads");
    print(&report);
    report.case("C-INFO-03").expect("C-INFO-03 ran").clone()
}

#[tokio::test]
async fn o43_an_unavailable_health_check_skips_only_where_the_runner_says_it_cannot_pass() {
    let declared = health_case(Some(Arc::new(Kwok))).await;
    assert!(
        matches!(&declared.outcome, Outcome::Skip(why) if why.contains("KWOK") && why.contains("O-43")),
        "KWOK declared: a skip naming both reasons: {}",
        declared.line()
    );
    let undeclared = health_case(None).await;
    assert!(
        matches!(&undeclared.outcome, Outcome::Fail(why) if why.contains("cannot be used")),
        "nothing declared, as on a real runtime: the adapter's `unavailable` fails: {}",
        undeclared.line()
    );
}

fn test_adapter(config: &str) -> Target {
    Target {
        host: host(),
        component: components::test_adapter(),
        load: LoadOptions {
            grants: Grants::none(),
            config: config.into(),
            ..LoadOptions::default()
        },
    }
}

/// Runs only `C-CAP-01` (image import) against the test adapter.
async fn image_import_case(config: &str) -> Outcome {
    let options = Options {
        only: vec!["C-CAP-01".into()],
        ..Options::default()
    };
    let report = conformance::run(&test_adapter(config), &options)
        .await
        .expect("the test adapter loads");
    print(&report);
    assert_eq!(report.cases.len(), 1, "only C-CAP-01 ran");
    report.cases[0].outcome.clone()
}

#[tokio::test]
async fn r254_an_undeclared_call_answering_unsupported_passes() {
    // The control: the test adapter declares no image import and answers
    // `unsupported`.
    assert_eq!(image_import_case("{}").await, Outcome::Pass);
}

#[tokio::test]
async fn r254_a_declared_capability_that_answers_unsupported_fails() {
    let outcome = image_import_case(r#"{"misbehave": "claim-image-import"}"#).await;
    let Outcome::Fail(why) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert!(why.contains("`unsupported`"), "{why}");
    assert!(why.contains("image import is declared"), "{why}");
}

#[tokio::test]
async fn r254_an_undeclared_call_answering_another_kind_fails() {
    let outcome = image_import_case(r#"{"misbehave": "import-image-internal"}"#).await;
    let Outcome::Fail(why) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert!(
        why.contains("answered `internal`") && why.contains("expected unsupported"),
        "{why}"
    );
}

#[tokio::test]
async fn a_trap_is_never_a_typed_answer() {
    let outcome = image_import_case(r#"{"misbehave": "import-image-panic"}"#).await;
    let Outcome::Fail(why) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert!(why.contains("the host's `trap`"), "{why}");
}

#[tokio::test]
async fn cases_that_need_no_runtime_pass_on_the_test_adapter_and_the_rest_are_reported() {
    let options = Options {
        only: vec!["C-INFO-*".into(), "C-CONF-01".into(), "C-UP-01".into()],
        ..Options::default()
    };
    let report = conformance::run(&test_adapter("{}"), &options)
        .await
        .expect("the test adapter loads");
    print(&report);
    let ids: Vec<&str> = report.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "C-INFO-01",
            "C-INFO-02",
            "C-INFO-03",
            "C-CONF-01",
            "C-UP-01"
        ]
    );
    assert!(report.is_success(), "{}", report.to_text());
    // Without a runtime API through the host, nothing is counted: said.
    let up = report.case("C-UP-01").expect("C-UP-01 ran");
    assert!(
        up.notes.iter().any(|n| n.contains("requests not counted")),
        "{:?}",
        up.notes
    );
}
