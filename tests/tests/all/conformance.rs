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
use pando_conformance::{self as conformance, Environment, Options, Outcome, Report, Target};
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

/// Why the test cluster's KWOK nodes are a simulated runtime.
const KWOK_RUNS_NO_CONTAINERS: &str =
    "KWOK runs no containers: a workload's command never runs, its log is KWOK's own";

impl Environment for Kwok {
    fn simulated(&self) -> Option<String> {
        Some(KWOK_RUNS_NO_CONTAINERS.into())
    }

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

/// The example configuration for the test cluster's KWOK nodes, as JSON.
fn example_config() -> String {
    components::repo_yaml("examples/kubernetes-config-kwok.yaml").to_string()
}

fn host() -> Host {
    Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host builds")
}

/// Runs the suite against `target` and prints its report.
pub(crate) async fn run(target: &Target, options: &Options) -> Report {
    let report = conformance::run(target, options)
        .await
        .expect("the adapter under test loads");
    eprintln!("{}", report.to_text());
    report
}

/// Asserts that every case ran and passed, none failed nor skipped; `who` names the adapter.
#[track_caller]
pub(crate) fn assert_every_case_passes(report: &Report, who: &str) {
    assert_eq!(
        report.cases.len(),
        conformance::cases_for(&report.contract).len(),
        "every case of its contract ran"
    );
    let not_passed: Vec<String> = report
        .cases
        .iter()
        .filter(|c| !matches!(c.outcome, Outcome::Pass))
        .map(|c| c.line())
        .collect();
    assert!(
        not_passed.is_empty(),
        "{who} does not pass {} case(s):\n{}",
        not_passed.len(),
        not_passed.join("\n")
    );
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

/// The suite on KWOK, with the test's environment: every case passes but those that KWOK's
/// simulated workloads cannot show, each with its own outcome and the reason KWOK is declared
/// simulated for: the declared `edge`, `trial`, `exec`, `run`, `logs` and `volume-snapshot` are
/// unproven (no command runs in a workload, so none serves through the edge, listens on its
/// port only, prints this run's nonce, reads the workload's file back nor writes onto its
/// volume; KWOK's exec reads the sockets of the machine it runs on). (Every case passes for real
/// on the real node: `real_node::every_conformance_case_runs_for_real_and_passes_on_the_real_node`.)
#[tokio::test]
async fn the_kubernetes_adapter_passes_every_case_kwok_can_show() {
    let target = kubernetes_target().await;
    // C-INFO-03's canary is one per cluster (`pando-canary`): not two health checks at once.
    let _canary = ka::canary_lock().await;
    // C-CAP-02 applies an edge, in the one edge namespace.
    let _edge = ka::edge_namespace_lock().await;
    let options = Options {
        environment: Some(Arc::new(Kwok)),
        ..Options::default()
    };
    let report = run(&target, &options).await;
    assert_eq!(
        report.cases.len(),
        conformance::cases_for(&report.contract).len(),
        "every case of its contract ran"
    );
    let not_passed: Vec<(&str, &str)> = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Pass)
        .map(|c| (c.id.as_str(), c.outcome.label()))
        .collect();
    // O-43: no canary can show NetworkPolicy enforced without a pod network.
    assert_eq!(
        not_passed,
        [
            ("C-INFO-03", "SKIP"),
            ("C-CAP-02", "UNPROVEN"),
            ("C-CAP-03", "UNPROVEN"),
            ("C-EXEC-01", "UNPROVEN"),
            ("C-RUN-01", "UNPROVEN"),
            ("C-LOGS-01", "UNPROVEN"),
            ("C-VOL-01", "UNPROVEN"),
        ],
        "{}",
        report.to_text()
    );
    for (id, capability) in [
        ("C-CAP-02", "edge"),
        ("C-CAP-03", "trial"),
        ("C-EXEC-01", "exec"),
        ("C-RUN-01", "run"),
        ("C-LOGS-01", "logs"),
        ("C-VOL-01", "volume-snapshot"),
    ] {
        let case = report.case(id).expect("it ran");
        assert!(
            case.outcome.reason().is_some_and(|why| {
                why.starts_with(&format!("{capability}: declared;"))
                    && why.contains(KWOK_RUNS_NO_CONTAINERS)
            }),
            "an unproven declaration names itself and the runner's reason: {}",
            case.line()
        );
    }
}

/// KWOK with the workload ended from outside, but not declared simulated: to the suite, an
/// adapter whose logs answer a fixed line no workload printed (KWOK serves every pod the same
/// log), whose exec runs somewhere other than the workload (KWOK's runs on its own machine) and
/// whose trial reports sockets the workload never opened. The liar the suite must catch.
struct KwokUndeclared;

impl Environment for KwokUndeclared {
    fn finish_workload<'a>(
        &'a self,
        workload: &'a WorkloadRef,
        code: i32,
    ) -> BoxFuture<'a, Result<(), String>> {
        Kwok.finish_workload(workload, code)
    }
}

#[tokio::test]
async fn r254_logs_exec_run_and_a_trial_that_are_not_the_workloads_fail_naming_the_declaration() {
    let target = kubernetes_target().await;
    let options = Options {
        only: vec![
            "C-CAP-03".into(),
            "C-EXEC-01".into(),
            "C-RUN-01".into(),
            "C-LOGS-01".into(),
        ],
        environment: Some(Arc::new(KwokUndeclared)),
        ..Options::default()
    };
    let report = run(&target, &options).await;
    for (id, capability, lie) in [
        (
            "C-CAP-03",
            "trial",
            "not exactly the one socket its command listens on (8080/tcp; its spec declares \
             9090/tcp, on which nothing listens)",
        ),
        (
            "C-EXEC-01",
            "exec",
            "so the command did not run in that workload",
        ),
        (
            "C-RUN-01",
            "run",
            "so the command did not run in that workload",
        ),
        (
            "C-LOGS-01",
            "logs",
            "does not hold the line its command printed",
        ),
    ] {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        let declared = format!("but the adapter declares `{capability}: true` in its capabilities");
        assert!(
            matches!(&case.outcome, Outcome::Fail(why) if why.contains(lie) && why.contains(&declared)),
            "{}",
            case.line()
        );
    }
}

/// The test adapter, configured with `config`, no grants: no runtime.
/// C-INFO-03 on KWOK, where the Kubernetes adapter's health check answers `unavailable` (no pod
/// network for its canary), run with `environment`.
async fn health_case(environment: Option<Arc<dyn Environment>>) -> pando_conformance::CaseResult {
    let target = kubernetes_target().await;
    let options = Options {
        only: vec!["C-INFO-03".into()],
        environment,
        ..Options::default()
    };
    let _canary = ka::canary_lock().await;
    let report = run(&target, &options).await;
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
    let report = run(&test_adapter(config), &options).await;
    assert_eq!(report.cases.len(), 1, "only C-CAP-01 ran");
    report.cases[0].outcome.clone()
}

#[tokio::test]
async fn r254_an_undeclared_call_answering_unsupported_passes_saying_that_is_all_it_checked() {
    // The control: the test adapter declares no image import and answers
    // `unsupported`.
    let options = Options {
        only: vec!["C-CAP-01".into()],
        ..Options::default()
    };
    let report = run(&test_adapter("{}"), &options).await;
    let case = report.case("C-CAP-01").expect("C-CAP-01 ran");
    assert_eq!(case.outcome, Outcome::Pass);
    // The line says what was checked, not that image import works.
    let line = case.line();
    assert!(
        line.starts_with(
            "PASS C-CAP-01 R-254 image-import: not declared; import-image answered \
             `unsupported` as required ("
        ),
        "{line}"
    );
    assert!(!line.contains("answers when declared"), "{line}");
}

#[tokio::test]
async fn r254_a_declared_capability_that_answers_unsupported_fails_naming_the_declaration() {
    let outcome = image_import_case(r#"{"misbehave": "claim-image-import"}"#).await;
    let Outcome::Fail(why) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert!(why.contains("answered `unsupported`"), "{why}");
    assert!(
        why.contains("the adapter declares `image-import: true` in its capabilities"),
        "{why}"
    );
}

/// The Kubernetes adapter as `pando` with its shipped grants less the one rule that lets it read
/// logs (`get pods/log`): it still declares `logs`, and every `logs` call is refused by the host.
async fn kubernetes_target_without_log_grant() -> Target {
    let mut target = kubernetes_target().await;
    let rules = &mut target
        .load
        .grants
        .kubernetes
        .as_mut()
        .expect("the shipped grants have a kubernetes section")
        .rules;
    let before = rules.len();
    rules.retain(|r| r.resources != ["pods/log"]);
    assert_eq!(
        rules.len(),
        before - 1,
        "the shipped grants have one pods/log rule"
    );
    target
}

/// Asserts that `case` failed because the declared `logs` were refused by the host, and that its
/// line names the declaration and the missing grant.
#[track_caller]
fn fails_naming_the_log_grant(report: &Report, id: &str) {
    let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
    let line = case.line();
    assert!(line.starts_with(&format!("FAIL {id} ")), "{line}");
    assert!(line.contains("answered `denied`"), "{line}");
    assert!(
        line.contains("the adapter declares `logs: true` in its capabilities"),
        "the failure names the declaration: {line}"
    );
    // The pattern every app needs, not the one namespace the run made.
    assert!(
        line.contains(
            "the missing grant: `- {verbs: [get], resources: [pods/log], namespaces: \
             [\"pando-*\"], except: [\"pando-system\"]}`"
        ),
        "the failure names the grant the host refused: {line}"
    );
}

#[tokio::test]
async fn r254_declared_logs_that_are_denied_fail_naming_the_declaration_and_the_grant() {
    let target = kubernetes_target_without_log_grant().await;
    let options = Options {
        only: vec!["C-LOGS-01".into(), "C-STOP-01".into()],
        environment: Some(Arc::new(Kwok)),
        ..Options::default()
    };
    let report = run(&target, &options).await;
    fails_naming_the_log_grant(&report, "C-LOGS-01");
    // Stop compares the finished workload's log before and after: refused too.
    fails_naming_the_log_grant(&report, "C-STOP-01");
}

/// KWOK declared simulated, and nothing ends its workloads: as the CLI runs there with
/// `--simulated`.
struct SimulatedOnly;

impl Environment for SimulatedOnly {
    fn simulated(&self) -> Option<String> {
        Some(KWOK_RUNS_NO_CONTAINERS.into())
    }
}

#[tokio::test]
async fn r254_where_nothing_ends_the_workload_declared_denied_logs_still_fail_and_the_skip_says_why()
 {
    // Nothing ends the finishing workload on KWOK. The declaration is held to on the running
    // workload's log all the same.
    let target = kubernetes_target_without_log_grant().await;
    let settle = std::time::Duration::from_secs(10);
    let options = Options {
        only: vec!["C-LOGS-01".into(), "C-STOP-01".into()],
        settle_timeout: settle,
        environment: Some(Arc::new(SimulatedOnly)),
        ..Options::default()
    };
    let report = run(&target, &options).await;
    fails_naming_the_log_grant(&report, "C-LOGS-01");
    // Without logs to compare, stop is checked as far as it can be, and the rest is a skip that
    // says why (the runner's declaration) and took the time it waited.
    let stop = report.case("C-STOP-01").expect("C-STOP-01 ran");
    let Outcome::Skip(why) = &stop.outcome else {
        panic!("C-STOP-01 skips the half it cannot check: {}", stop.line());
    };
    assert!(
        why.starts_with("stop stopped `server`") && why.contains(KWOK_RUNS_NO_CONTAINERS),
        "the skip says what was checked and why not the rest: {why}"
    );
    assert!(
        stop.duration >= settle,
        "the skip's time includes the {settle:?} it waited for the workload to exit: {}",
        stop.line()
    );
}

#[tokio::test]
async fn a_workload_never_reported_finished_fails_where_the_runtime_is_not_declared_simulated() {
    // The same KWOK nodes, declared nothing: the suite cannot tell a runtime that runs no commands
    // from an adapter that never reports the exit, so the timeout fails, naming the call; and the
    // declared `logs` left unproven by it is a failure too, never a skip.
    let target = kubernetes_target().await;
    let settle = std::time::Duration::from_secs(10);
    let options = Options {
        only: vec!["C-LOGS-01".into(), "C-STOP-01".into()],
        settle_timeout: settle,
        ..Options::default()
    };
    let report = run(&target, &options).await;
    for id in ["C-LOGS-01", "C-STOP-01"] {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        assert!(
            matches!(&case.outcome, Outcome::Fail(why)
                if why.contains("observe did not report `finisher`")
                    && why.contains("exited within 10 s")
                    && why.contains("declared simulated by the runner")),
            "{}",
            case.line()
        );
    }
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
    let report = run(&test_adapter("{}"), &options).await;
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
