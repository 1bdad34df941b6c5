//! The Kubernetes adapter, in the host, against a failing control plane:
//! the API server restarted during an apply and during the bundle watch, a
//! watch that comes back to a compacted version (410), a write conflict
//! (409), throttling (429, from API Priority and Fairness), and a
//! connection cut in the middle of a log stream and of a volume snapshot.
//!
//! The adapter talks to the *fault* API server (a second kube-apiserver on
//! the test cluster's etcd, `scripts/cluster restart-fault-apiserver`), so
//! breaking it disturbs no other test; the tests make their changes and
//! look behind the adapter through the main API server, as admin. One
//! fault test runs at a time ([`faults::exclusive`]), and each leaves the
//! fault API server running. See docs/testing.md, "Faults".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use pando_host::types::{
    BundleEvent, Error as AdapterError, LogOptions, VolumeHandle, WatchEnd, WorkloadChange,
    WorkloadPhase,
};
use pando_host::{Adapter, CallContext, CallError, CancellationToken, Host};
use pando_tests::cluster;
use pando_tests::faults::{self, FaultIdentity, Leftovers, Stop, eventually};
use pando_tests::kubernetes_adapter::{
    self as ka, admin, audit_mark, ctx, id, requests, wait_phase, with_volume,
};
use pando_tests::plans::{bundle, plan, wref};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

mod throttled_and_cut;
mod watch;

/// Pods on the `apps` pool (`kwok-node-0`, `-1`), away from the node the
/// capacity tests measure.
const POOL_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
    "node_selector": "pando.dev/pool=apps"}"#;

/// The Kubernetes adapter on the fault API server, as `who`.
async fn fault_adapter(who: FaultIdentity) -> (Adapter, Host) {
    let client = faults::client(who, true)
        .await
        .expect("a client of the fault API server");
    // The adapter binds itself by the name it is known by (`adapter_user`).
    let config = POOL_CONFIG.replacen('{', &format!(r#"{{"adapter_user": "{}", "#, who.name()), 1);
    ka::load_with_client_grants(&config, client, ka::grants_for_user(who.name())).await
}

// ---------------------------------------------------------------------------------------------
// Apply across a restart
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn apply_converges_after_the_api_server_restarts() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = id("fault-apply");
    let ns = format!("pando-{app}");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    let names: Vec<String> = (0..16).map(|i| format!("w{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let p = plan(&app, &names);

    // Restart the API server once the apply has begun writing workloads: at
    // the adapter's 5 requests a second, 16 Services and 16 pods are still
    // to come.
    let mark = audit_mark();
    let first = {
        let (a, p) = (a.clone(), p.clone());
        tokio::spawn(async move { a.apply(&ctx(), &p).await })
    };
    eventually("the apply's first Service", ka::WAIT, || async {
        requests(mark, &ns)
            .iter()
            .any(|r| r.is_write() && r.resource == "services")
            .then_some(())
    })
    .await;
    let started = Instant::now();
    faults::restart(Stop::Graceful).await;
    eprintln!("the fault API server restarted in {:?}", started.elapsed());
    let first = first.await.expect("join");
    eprintln!("the apply during the restart: {first:?}");
    assert!(
        matches!(&first, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("unreachable")),
        "an apply cut off by the restart fails with a typed `unavailable`: {first:?}"
    );

    // Once the API server is back, the same apply converges …
    a.apply(&ctx(), &p)
        .await
        .expect("the apply after the restart");
    let c = admin().await;
    for w in &names {
        wait_phase(&ns, w, "Running").await;
    }
    let pods = Api::<Pod>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("pods");
    let mut pod_names: Vec<String> = pods
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    pod_names.sort();
    let mut wanted: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    wanted.sort();
    assert_eq!(pod_names, wanted, "one pod per workload, nothing else");
    let services = Api::<Service>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    assert_eq!(
        services.items.len(),
        names.len(),
        "one Service per workload"
    );

    // … and is satisfied: applying again writes nothing (O-41).
    let mark = audit_mark();
    a.apply(&ctx(), &p).await.expect("a satisfied apply");
    let writes: Vec<_> = requests(mark, &ns)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(
        writes.is_empty(),
        "a satisfied plan writes nothing: {writes:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Conflicts
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_write_conflict_is_typed_and_apply_converges() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let c = admin().await;
    let app = id("fault-409");
    let ns = format!("pando-{app}");
    let taken = id("fault-409ns");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    left.namespace(format!("pando-{taken}"));
    a.apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("the first apply");

    // A pod that is not Pando's takes the name of the workload to come: the
    // API server answers the adapter's create with 409 AlreadyExists.
    let pods: Api<Pod> = Api::namespaced(c.clone(), &ns);
    let squatter: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db"},
        "spec": {"nodeSelector": {"pando.dev/pool": "apps"},
                 "containers": [{"name": "c", "image": "registry.invalid/other:1"}]},
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &squatter)
        .await
        .expect("creating the pod that is not Pando's");
    let p = plan(&app, &["web", "db"]);
    let conflict = a.apply(&ctx(), &p).await;
    assert!(
        matches!(&conflict, Err(CallError::Adapter(AdapterError::Conflict(m)))
            if m.contains("409") && m.contains("already exists")),
        "a name taken by something that is not Pando's is `conflict`: {conflict:?}"
    );
    let stranger = pods.get("db").await.expect("the other pod stays");
    assert!(
        stranger.metadata.labels.is_none(),
        "the adapter leaves what is not its own alone"
    );

    // Once it is gone, the apply converges.
    pods.delete("db", &DeleteParams::default().grace_period(0))
        .await
        .expect("removing the other pod");
    eventually("the other pod to be gone", ka::WAIT, || async {
        pods.get_opt("db")
            .await
            .expect("reading")
            .is_none()
            .then_some(())
    })
    .await;
    a.apply(&ctx(), &p).await.expect("the apply converges");
    let db = wait_phase(&ns, "db", "Running").await;
    assert_eq!(
        db.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pando.dev/workload"))
            .map(String::as_str),
        Some("db"),
        "now it is the workload's pod"
    );

    // A namespace of the app's name that is not Pando's is a conflict too,
    // and nothing is written into it.
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(format!("pando-{taken}")),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .expect("a namespace that is not Pando's");
    let r = a.apply(&ctx(), &plan(&taken, &["web"])).await;
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Conflict(m))) if m.contains("not Pando's")),
        "{r:?}"
    );
    let inside = Api::<Pod>::namespaced(c.clone(), &format!("pando-{taken}"))
        .list(&ListParams::default())
        .await
        .expect("pods");
    assert!(inside.items.is_empty(), "nothing written into it");
}
