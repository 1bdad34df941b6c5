//! The Kubernetes adapter's logs, exec, run, capacity and bundle watch,
//! against the real test cluster (KWOK runs the pods and runs exec commands
//! locally), as the `pando` identity with the grants the adapter ships
//! with.
//!
//! Pods are kept off each other's nodes so that capacity is measurable
//! while the tests run in parallel: the capacity tests select
//! `kwok-node-2` alone, the others the `pando.dev/pool=apps` nodes
//! (`kwok-node-0` and `-1`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use pando_host::types::{
    BundleEvent, CapacityReport, Error as AdapterError, ExecRequest, LogOptions, RunRequest,
    WatchEnd, WorkloadChange, WorkloadPhase,
};
use pando_host::{Adapter, CallContext, CallError, CancellationToken};
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{
    self as ka, admin, all_requests, audit_mark, cleanup, ctx, exit_pod, id, uid, wait_phase,
};
use pando_tests::plans::{plan, wref};
use tokio::sync::mpsc;

/// Pods on the `apps` pool: `kwok-node-0` and `kwok-node-1`.
const POOL_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
    "node_selector": "pando.dev/pool=apps"}"#;

/// Pods, and capacity, on `kwok-node-2` alone.
const NODE: &str = "kwok-node-2";
const NODE_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
    "node_selector": "kubernetes.io/hostname=kwok-node-2"}"#;

/// Applies a one-workload app `web` and waits until its pod runs.
async fn running_app(a: &Adapter, prefix: &str) -> (String, String) {
    let app = id(prefix);
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web"])).await.expect("apply");
    wait_phase(&ns, "web", "Running").await;
    (app, ns)
}

#[tokio::test]
async fn logs_of_a_running_workload_are_its_pods_log() {
    let (a, _h) = ka::load_with(POOL_CONFIG).await;
    let (app, ns) = running_app(&a, "k8s-logs").await;
    let mark = ka::audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &LogOptions::default())
        .await
        .expect("logs");
    let text = log.read_to_end(1 << 20).await.expect("read");
    let expected = cluster::expected_pod_log().expect("expected log");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    // Every KWOK pod serves the same file: which pod was read, the host's audit says.
    assert_eq!(ka::log_reads(mark, &ns), ["web"], "the workload's own pod");

    let err = a
        .logs(&ctx(), &wref(&app, "ghost"), &LogOptions::default())
        .await
        .expect_err("no pod");
    assert_eq!(err.kind(), "not-found", "{err}");
    assert!(err.to_string().contains("ghost"), "{err}");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r150_logs_of_a_finished_workload_stay_readable() {
    let (a, _h) = ka::load_with(POOL_CONFIG).await;
    let (app, ns) = running_app(&a, "k8s-crash").await;
    exit_pod(&ns, "web", 1).await;
    let mark = ka::audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &LogOptions::default())
        .await
        .expect("the crash's log");
    let text = log.read_to_end(1 << 20).await.expect("read");
    let expected = cluster::expected_pod_log().expect("expected log");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    assert_eq!(
        ka::log_reads(mark, &ns),
        ["web"],
        "the finished pod's own log (KWOK's bytes are every pod's: the audit says which)"
    );

    // Nothing runs now: exec has nowhere to go.
    let err = a
        .exec(
            &ctx(),
            &wref(&app, "web"),
            &ExecRequest {
                command: vec!["true".into()],
                stdin: false,
                tty: false,
                size: None,
            },
        )
        .await
        .expect_err("no running pod");
    assert_eq!(err.kind(), "unavailable", "{err}");
    assert!(err.to_string().contains("web"), "{err}");
    cleanup(&a, &app).await;
}

/// R-084. (R-228, the authorization and the audit event before a session, is core's: the
/// adapter has no part of it to test.)
#[tokio::test]
async fn r084_exec_carries_stdin_and_the_exit_status() {
    let (a, _h) = ka::load_with(POOL_CONFIG).await;
    let (app, _ns) = running_app(&a, "k8s-exec").await;
    let mut session = a
        .exec(
            &ctx(),
            &wref(&app, "web"),
            &ExecRequest {
                // One line, not to the end of stdin: whether closing stdin
                // reaches the process depends on the protocol's version.
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    r#"read l; echo "got $l"; exit 3"#.into(),
                ],
                stdin: true,
                tty: false,
                size: None,
            },
        )
        .await
        .expect("exec");
    let mut stdin = session.stdin().await.expect("stdin call").expect("stdin");
    let mut stdout = session
        .stdout()
        .await
        .expect("stdout call")
        .expect("stdout");
    stdin.write_all(b"a line\n").await.expect("write");
    let out = stdout.read_to_end(1 << 20).await.expect("read stdout");
    assert_eq!(out, b"got a line\n");
    assert_eq!(session.wait(&ctx()).await.expect("exit status"), 3);
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r423_run_streams_stdout_and_explains_failure() {
    let (a, _h) = ka::load_with(POOL_CONFIG).await;
    let (app, _ns) = running_app(&a, "k8s-run").await;
    let sh = |script: &str| RunRequest {
        command: vec!["sh".into(), "-c".into(), script.into()],
        env: vec![],
    };

    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    let err = a
        .run(
            &ctx(),
            &wref(&app, "web"),
            &sh("echo out; echo err >&2; exit 3"),
            writer,
        )
        .await
        .expect_err("exit 3 fails");
    let mut out = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut out),
    )
    .await
    .expect("stdout ends")
    .expect("read stdout");
    assert_eq!(out, "out\n");
    match err {
        CallError::Adapter(AdapterError::CommandFailed(f)) => {
            assert_eq!(f.exit_code, 3);
            assert_eq!(f.stderr, "err\n");
        }
        other => panic!("expected command-failed, got {other:?}"),
    }

    // Success: stdout only, no error.
    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    a.run(&ctx(), &wref(&app, "web"), &sh("echo fine"), writer)
        .await
        .expect("run");
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut out)
        .await
        .expect("read stdout");
    assert_eq!(out, "fine\n");

    // Environment variables cannot be added to a running container.
    let mut with_env = sh("true");
    with_env.env.push(pando_host::types::EnvVar {
        name: "K".into(),
        value: "V".into(),
    });
    let err = a
        .run(&ctx(), &wref(&app, "web"), &with_env, tokio::io::sink())
        .await
        .expect_err("unsupported");
    assert_eq!(err.kind(), "unsupported", "{err}");
    cleanup(&a, &app).await;
}

/// A quantity in base units times `scale`: the forms the test cluster's
/// objects use, written independently of the adapter's parser.
fn quantity(text: &str, scale: u64) -> Option<u64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((number * factor * scale as f64).ceil() as u64)
}

/// CPU millicores and memory bytes in a pod's or node's quantity map.
fn amounts(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> (u64, u64) {
    let get = |key: &str, scale: u64| {
        map.and_then(|m| m.get(key))
            .and_then(|q| quantity(&q.0, scale))
            .unwrap_or(0)
    };
    (get("cpu", 1000), get("memory", 1))
}

/// What admin sees on [`NODE`]: its allocatable, what pods that are not
/// Pando's apps request there, and what every pod requests there.
async fn admin_view() -> ((u64, u64), (u64, u64), (u64, u64)) {
    let c = admin().await;
    let node = Api::<Node>::all(c.clone()).get(NODE).await.expect("node");
    let alloc = amounts(node.status.as_ref().and_then(|s| s.allocatable.as_ref()));
    let pods = Api::<Pod>::all(c)
        .list(&ListParams::default().fields(&format!("spec.nodeName={NODE}")))
        .await
        .expect("pods");
    let (mut others, mut all) = ((0, 0), (0, 0));
    for pod in &pods.items {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            continue;
        }
        let mut req = (0, 0);
        for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
            let r = amounts(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
            req = (req.0 + r.0, req.1 + r.1);
        }
        all = (all.0 + req.0, all.1 + req.1);
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let pandos = labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str)
            == Some("pando")
            && labels.get("pando.dev/app").map(|id| format!("pando-{id}"))
                == pod.metadata.namespace;
        if !pandos {
            others = (others.0 + req.0, others.1 + req.1);
        }
    }
    (alloc, others, all)
}

fn pair(r: &pando_host::types::Resources) -> (u64, u64) {
    (r.cpu_millis, r.memory_bytes)
}

fn less(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1))
}

/// The adapter's report and admin's expectation of it, measured until two
/// agree (pods of tests running in parallel may land between the reads).
async fn agreed(a: &Adapter) -> CapacityReport {
    let mut last = None;
    for _ in 0..5 {
        let (alloc, others, all) = admin_view().await;
        let report = a.capacity(&ctx()).await.expect("capacity");
        let fit = report.largest_fit.as_ref().expect("a fit");
        if report.nodes == 1
            && fit.node == NODE
            && pair(&report.total) == less(alloc, others)
            && pair(&fit.free) == less(alloc, all)
        {
            return report;
        }
        last = Some((report, alloc, others, all));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("capacity never agreed with admin's view: {last:?}");
}

/// A pod that is not Pando's, bound to [`NODE`], asking for 123m and 77 MiB.
async fn foreign_pod(ns: &str) -> Pod {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "other"},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "c", "image": "busybox:1.36",
                "resources": {"requests": {"cpu": "123m", "memory": "77Mi"}}}],
        },
    }))
    .expect("pod");
    Api::<Pod>::namespaced(admin().await, ns)
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating a pod that is not Pando's")
}

#[tokio::test]
async fn r243_capacity_excludes_what_others_request() {
    let (a, _h) = ka::load_with(NODE_CONFIG).await;
    let before = agreed(&a).await;

    // Something that is not Pando's, in a namespace that is not `pando-*`.
    let c = admin().await;
    let other_ns = cluster::create_test_namespace(&c, "cap-other")
        .await
        .expect("a test namespace");
    foreign_pod(&other_ns.name).await;
    let with_other = agreed(&a).await;
    assert_eq!(
        less(pair(&before.total), pair(&with_other.total)),
        (123, 77 << 20),
        "total drops by what the other pod requests"
    );

    // One capacity call: one node list. The record is the whole process's
    // and other tests call `capacity` in parallel (R-242's, host_calls'),
    // so a window may hold their lists too; a window with exactly one is
    // the call alone. A call that listed nodes twice would never give one.
    let mut windows = Vec::new();
    for _ in 0..5 {
        let mark = audit_mark();
        a.capacity(&ctx()).await.expect("capacity");
        let node_lists = all_requests(mark)
            .into_iter()
            .filter(|r| r.verb == "list" && r.namespace.is_empty() && r.resource == "nodes")
            .count();
        windows.push(node_lists);
        if node_lists == 1 {
            break;
        }
    }
    assert_eq!(
        windows.last(),
        Some(&1),
        "node lists per capacity call, in each window: {windows:?}"
    );
    assert!(
        windows.iter().all(|&n| n >= 1),
        "a capacity call lists nodes: {windows:?}"
    );

    // A Pando app's pod on the node: total unchanged, the fit smaller.
    let (app, _ns) = running_app(&a, "k8s-cap").await;
    let with_app = agreed(&a).await;
    assert_eq!(pair(&with_app.total), pair(&with_other.total));
    let (_, _, all) = admin_view().await;
    assert!(
        all.0 >= 100 && all.1 >= 64 << 20,
        "the app's pod counts: {all:?}"
    );

    other_ns.delete().await.expect("cleanup");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r242_largest_fit_for_adds_back_the_bundles_own_pods() {
    let (a, _h) = ka::load_with(NODE_CONFIG).await;
    let (app, _ns) = running_app(&a, "k8s-fit").await;
    let mut last = None;
    for _ in 0..5 {
        let report = a.capacity(&ctx()).await.expect("capacity");
        let own = a
            .largest_fit_for(&ctx(), &app)
            .await
            .expect("largest fit for")
            .expect("a fit");
        let other = a
            .largest_fit_for(&ctx(), "not-an-app")
            .await
            .expect("largest fit for")
            .expect("a fit");
        let fit = report.largest_fit.clone().expect("a fit");
        // The plan's workload asks for 100m and 64 MiB.
        if own.node == NODE
            && less(pair(&own.free), pair(&fit.free)) == (100, 64 << 20)
            && pair(&other.free) == pair(&fit.free)
        {
            cleanup(&a, &app).await;
            return;
        }
        last = Some((fit, own, other));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    cleanup(&a, &app).await;
    panic!("largest_fit_for never added back the app's own pod: {last:?}");
}

/// The watch's events, and the changes received but not yet looked for
/// (one workload's change may arrive while another's is awaited).
struct Changes {
    rx: mpsc::Receiver<BundleEvent>,
    backlog: Vec<WorkloadChange>,
}

impl Changes {
    /// The first change of `app`'s workload `workload` that `done` accepts.
    async fn of(
        &mut self,
        app: &str,
        workload: &str,
        done: impl Fn(&WorkloadChange) -> bool,
    ) -> WorkloadChange {
        let wanted = |c: &WorkloadChange| c.bundle == app && c.workload.name == workload && done(c);
        if let Some(i) = self.backlog.iter().position(wanted) {
            return self.backlog.remove(i);
        }
        let wait = async {
            loop {
                match self.rx.recv().await.expect("the watch keeps sending") {
                    BundleEvent::Changed(c) if wanted(&c) => return c,
                    BundleEvent::Changed(c) => self.backlog.push(c),
                    BundleEvent::Watching => {}
                }
            }
        };
        tokio::time::timeout(ka::WAIT, wait)
            .await
            .unwrap_or_else(|_| panic!("no such change of {app}/{workload} within the limit"))
    }
}

#[tokio::test]
async fn o52_watch_reports_watching_then_changes_and_r148_never_acts() {
    let (a, _h) = ka::load_with(POOL_CONFIG).await;
    let (tx, mut rx) = mpsc::channel(64);
    let cancel = CancellationToken::new();
    let call_ctx = CallContext::new(cancel.clone()).without_deadline();
    let watcher = {
        let a = a.clone();
        tokio::spawn(async move { a.watch_bundles(&call_ctx, tx).await })
    };
    let first = tokio::time::timeout(ka::WAIT, rx.recv())
        .await
        .expect("watching within the limit")
        .expect("an event");
    assert_eq!(first, BundleEvent::Watching);

    let app = id("k8s-watch");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web", "db"]))
        .await
        .expect("apply");
    let mut changes = Changes {
        rx,
        backlog: Vec::new(),
    };
    for w in ["web", "db"] {
        let c = changes
            .of(&app, w, |c| c.workload.phase == WorkloadPhase::Running)
            .await;
        assert!(!c.deleted);
    }

    let pod = wait_phase(&ns, "web", "Running").await;
    exit_pod(&ns, "web", 2).await;
    let failed = changes
        .of(&app, "web", |c| c.workload.phase == WorkloadPhase::Failed)
        .await;
    assert_eq!(failed.workload.exit_code, Some(2));

    // R-148: the watch reports; nothing starts the pod again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = Api::<Pod>::namespaced(admin().await, &ns)
        .get("web")
        .await
        .expect("the pod stays");
    assert_eq!(uid(&still), uid(&pod));
    assert_eq!(
        still.status.and_then(|s| s.phase).as_deref(),
        Some("Failed")
    );

    // Deleting the app reports its workloads deleted.
    Api::<Pod>::namespaced(admin().await, &ns)
        .delete("db", &DeleteParams::default())
        .await
        .expect("delete db");
    changes.of(&app, "db", |c| c.deleted).await;

    cancel.cancel();
    let end = tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the watch returns after cancellation")
        .expect("join")
        .expect("the watch ends cleanly");
    assert_eq!(end, WatchEnd::Cancelled);
    cleanup(&a, &app).await;
}
