//! What leaving `metadata.managedFields` out of a guest's reads saves
//! (issue 43; `capability/kubernetes/managed_fields.rs`).
//!
//! One Pod written as a cluster writes one: its spec applied by
//! `kube-controller-manager`, its status by `kubelet`, a label by a third
//! manager (`pando`), each by server-side apply, so its `managedFields`
//! carries an entry per manager with every field each owns. Nothing
//! schedules or runs it (no node has its selector, no scheduler its name).
//! Host column: kube-probe's `pod-reads:3:strip:…`, three GETs of the pod
//! through the host, each answer decoded by the guest into a typed `Pod` (as
//! the SDK's typed reads do), the host leaving `managedFields` out. Baseline
//! column: the same three with `showManagedFields=true`, the host handing
//! the answer on as the server sent it (what every read cost before).
//! Calls alternate. The body lengths the guest was handed are beside the
//! rows, and the process's CPU time per call.

use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use pando_host::Adapter;
use pando_host::types::BundlePlan;
use serde_json::json;

use super::observe_setup as setup;
use super::{call_ctx, us, what};
use crate::cpu;
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};

/// The bench's namespace (the probe's grants read pods in `pando-bench-*`).
const NAMESPACE: &str = "pando-bench-managed-fields";
/// The pod read.
const POD: &str = "bench-managed-fields";
/// GETs per call.
const READS: usize = 3;

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let admin = env::client(Identity::Admin).await?;
    prepare(&admin).await?;
    let outcome = measure(quick).await;
    super::namespace_deleted(admin, NAMESPACE, outcome).await
}

async fn measure(quick: bool) -> Result<Bench> {
    let (warmup, samples) = if quick { (10, 60) } else { (50, 1_000) };
    let client = env::client(Identity::Pando).await?;
    let host = env::host()?;
    let adapter = env::load_probe(&host, client).await?;
    let strip = plan("strip");
    let keep = plan("keep");
    let (mut stripped_len, mut kept_len) = (0, 0);
    for _ in 0..warmup {
        stripped_len = call(&adapter, &strip).await?;
        kept_len = call(&adapter, &keep).await?;
    }
    ensure!(
        stripped_len < kept_len,
        "the stripped pod is {stripped_len} bytes, not fewer than the whole {kept_len}"
    );
    let (mut stripped, mut kept) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    let (mut stripped_cpu, mut kept_cpu) = (0u64, 0u64);
    for i in 0..samples {
        // Which goes first alternates, so neither always follows the other.
        for side in [i % 2, 1 - i % 2] {
            let (p, times, cpu_ns) = match side {
                0 => (&strip, &mut stripped, &mut stripped_cpu),
                _ => (&keep, &mut kept, &mut kept_cpu),
            };
            let c = cpu::process_ns();
            let t = Instant::now();
            call(&adapter, p).await?;
            times.push(us(t.elapsed()));
            *cpu_ns += cpu::process_ns() - c;
        }
    }
    let per_call = |ns: u64| ns as f64 / samples as f64 / 1e3;
    let mut bench = Bench::new("managed-fields", what("managed-fields"));
    bench.rows.push(
        Row::new(
            "call with 3 GETs of a Pod, each decoded by the guest",
            Unit::Us,
            &stripped,
            &kept,
        )
        .extra(
            "body the guest was handed",
            format!(
                "{stripped_len} B without managedFields, {kept_len} B with ({:.0}% less)",
                (1.0 - stripped_len as f64 / kept_len as f64) * 100.0
            ),
        )
        .extra(
            "CPU time of this process per call, mean",
            format!(
                "stripped {:.0} µs, whole {:.0} µs",
                per_call(stripped_cpu),
                per_call(kept_cpu)
            ),
        ),
    );
    Ok(bench)
}

/// One call of `plan`: the body length the guest was handed.
async fn call(adapter: &Adapter, plan: &BundlePlan) -> Result<usize> {
    let handle = adapter
        .apply(&call_ctx(), plan)
        .await
        .with_context(|| format!("kube-probe `{}`", plan.id))?;
    handle
        .location
        .parse()
        .with_context(|| format!("kube-probe answered {:?}", handle.location))
}

/// kube-probe's `pod-reads` of the bench's pod, `mode` `strip` or `keep`.
fn plan(mode: &str) -> BundlePlan {
    super::probe_plan(format!("pod-reads:{READS}:{mode}:{NAMESPACE}/{POD}"))
}

/// The namespace, `pando` bound in it, and the pod as three managers
/// wrote it.
async fn prepare(admin: &Client) -> Result<()> {
    setup::bench_namespace(admin, NAMESPACE, true).await?;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    let apply = |manager: &str| PatchParams::apply(manager).force();
    pods.patch(
        POD,
        &apply("kube-controller-manager"),
        &Patch::Apply(spec()),
    )
    .await
    .context("applying the pod's spec")?;
    pods.patch_status(POD, &apply("kubelet"), &Patch::Apply(status()))
        .await
        .context("applying the pod's status")?;
    let label = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": POD, "labels": {"pando.dev/bundle": "shop"}},
    });
    pods.patch(POD, &apply("pando"), &Patch::Apply(label))
        .await
        .context("applying the pod's label")?;
    Ok(())
}

/// A Deployment's pod: two containers with the usual parts.
fn spec() -> serde_json::Value {
    let container = |name: &str, port: u16| {
        json!({
            "name": name,
            "image": format!("registry.invalid/shop/{name}:1.4.2"),
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": (0..6).map(|i| json!({"name": format!("SETTING_{i}"), "value": format!("value-{i}")})).collect::<Vec<_>>(),
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "config", "mountPath": "/etc/shop", "readOnly": true}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 5},
            "livenessProbe": {"httpGet": {"path": "/live", "port": port}, "periodSeconds": 10},
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
        })
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": POD,
            "labels": {"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": "web", "pod-template-hash": "5d8f7c9b6"},
            "annotations": {"pando.dev/revision": "42"},
        },
        "spec": {
            "automountServiceAccountToken": false,
            "restartPolicy": "Always",
            // Nothing schedules or runs it: it costs the cluster nothing.
            "nodeSelector": {"pando.test/bench": "none"},
            "schedulerName": "pando-bench-none",
            "containers": [container("web", 8080), container("sidecar", 9090)],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "config", "configMap": {"name": "shop-config"}},
            ],
        },
    })
}

/// A running pod's status, as a kubelet reports it.
fn status() -> serde_json::Value {
    let at = "2026-12-01T10:00:00Z";
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": at});
    let container = |name: &str| {
        json!({
            "name": name, "ready": true, "restartCount": 0, "started": true,
            "image": format!("registry.invalid/shop/{name}:1.4.2"),
            "imageID": format!("registry.invalid/shop/{name}@sha256:{}", "ab".repeat(32)),
            "containerID": format!("containerd://{}", "cd".repeat(32)),
            "state": {"running": {"startedAt": at}},
        })
    };
    let conditions = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .map(condition);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": POD},
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "198.18.0.10", "hostIPs": [{"ip": "198.18.0.10"}],
            "podIP": "198.18.4.17", "podIPs": [{"ip": "198.18.4.17"}],
            "startTime": at, "qosClass": "Burstable",
            "containerStatuses": [container("web"), container("sidecar")],
        },
    })
}
