//! Ownership (issue 15): the Kubernetes adapter touches only what it made for the app it is
//! asked about, against the test cluster as the `pando` identity. App ids that would map onto
//! Pando's own namespaces are refused; a `pando-*` namespace that is Pando's but not the app's
//! is `conflict` for every call that writes or deletes, and nothing in it goes; the snapshot
//! helper never deletes a pod of its name that is not a helper. The Python adapter shares the
//! first two, and is held to them alike.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Api;
use kube::api::PostParams;
use pando_host::CallError;
use pando_host::types::{DestroyOptions, Error as AdapterError, VolumeHandle, VolumeSpec};
use pando_tests::kubernetes_adapter::{self as ka, admin, cleanup, ctx, id, uid, wait_phase};
use pando_tests::plans::{bundle, plan};
use pando_tests::python_adapter;

/// The Rust adapter and the Python one, each with its host.
async fn both() -> Vec<(&'static str, pando_host::Adapter, pando_host::Host)> {
    let (rust, rust_host) = ka::load().await;
    let (python, python_host) = python_adapter::load().await;
    vec![("rust", rust, rust_host), ("python", python, python_host)]
}

/// The adapter's error, or a panic naming what came instead.
fn adapter_error<T: std::fmt::Debug>(what: &str, r: Result<T, CallError>) -> AdapterError {
    match r {
        Err(CallError::Adapter(e)) => e,
        other => panic!("{what}: expected the adapter's own error, got {other:?}"),
    }
}

fn is_conflict(e: &AdapterError) -> bool {
    matches!(e, AdapterError::Conflict(_))
}

#[tokio::test]
async fn app_ids_that_map_onto_pandos_own_namespaces_are_refused() {
    for (who, a, _h) in both().await {
        reserved_ids_are_refused(who, &a).await;
    }
}

/// Each reserved id is refused by `upstream`, which computes the app's names as every call
/// does; the mutating calls are tried with the trial-like id alone, whose namespace no one
/// uses, so that a regression here never writes into the edge's, the canary's or Pando's own.
async fn reserved_ids_are_refused(who: &str, a: &pando_host::Adapter) {
    for reserved in ["edge", "canary", "system", "trial", "trial-0a1b2c3d4e"] {
        let workload = pando_host::types::WorkloadRef {
            bundle: reserved.into(),
            workload: "web".into(),
        };
        let e = adapter_error(reserved, a.upstream(&ctx(), &workload, 80).await);
        assert!(
            matches!(&e, AdapterError::Invalid(m) if m.contains("reserved")),
            "{who}: upstream of app `{reserved}`: {e:?}"
        );
    }
    let reserved = "trial-0a1b2c3d4e";
    let e = adapter_error(reserved, a.apply(&ctx(), &plan(reserved, &["web"])).await);
    assert!(
        matches!(&e, AdapterError::Invalid(m) if m.contains("reserved")),
        "{who}: apply of app `{reserved}`: {e:?}"
    );
    let e = adapter_error(reserved, a.stop(&ctx(), &bundle(reserved)).await);
    assert!(matches!(e, AdapterError::Invalid(_)), "{who}: stop: {e:?}");
    let e = adapter_error(
        reserved,
        a.destroy(
            &ctx(),
            &bundle(reserved),
            DestroyOptions {
                keep_volumes: false,
            },
        )
        .await,
    );
    assert!(
        matches!(e, AdapterError::Invalid(_)),
        "{who}: destroy: {e:?}"
    );
    let left = Api::<Namespace>::all(admin().await)
        .get_opt(&format!("pando-{reserved}"))
        .await
        .expect("namespace");
    assert!(
        left.is_none(),
        "{who}: nothing was made for app `{reserved}`"
    );
}

/// Namespace `pando-<app>` as Pando labels one it made for something else (`other`, or no app
/// label), with the adapter's binding in it, so that RBAC would let the adapter delete there:
/// only the adapter's own check stands between it and the namespace's contents. Holds a
/// ConfigMap and a running pod, both labelled as Pando's.
async fn someone_elses(app: &str, app_label: Option<&str>) -> String {
    let c = admin().await;
    let ns = format!("pando-{app}");
    let mut labels = BTreeMap::from([(
        "app.kubernetes.io/managed-by".to_owned(),
        "pando".to_owned(),
    )]);
    if let Some(other) = app_label {
        labels.insert("pando.dev/app".into(), other.into());
    }
    let namespace: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": { "name": ns, "labels": labels },
    }))
    .expect("namespace");
    Api::<Namespace>::all(c.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creating the namespace");
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "pando-adapter" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "pando-adapter-namespace" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pando" }],
    }))
    .expect("binding");
    Api::<RoleBinding>::namespaced(c.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding the adapter there");
    let managed = serde_json::json!({ "app.kubernetes.io/managed-by": "pando" });
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "kept", "labels": managed },
        "data": { "a": "b" },
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(c.clone(), &ns)
        .create(&PostParams::default(), &cm)
        .await
        .expect("creating the ConfigMap");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "kept", "labels": managed },
        "spec": { "containers": [{ "name": "c", "image": "busybox:1.36",
            "resources": { "limits": { "memory": "64Mi" } } }] },
    }))
    .expect("pod");
    Api::<Pod>::namespaced(c.clone(), &ns)
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
    wait_phase(&ns, "kept", "Running").await;
    ns
}

/// Everything [`someone_elses`] made is still there, untouched.
async fn untouched(ns: &str, pod_uid: &str, after: &str) {
    let c = admin().await;
    let namespace = Api::<Namespace>::all(c.clone())
        .get(ns)
        .await
        .expect("the namespace");
    assert!(
        namespace.metadata.deletion_timestamp.is_none(),
        "{after}: namespace {ns} is not being deleted"
    );
    let pod = Api::<Pod>::namespaced(c.clone(), ns)
        .get("kept")
        .await
        .expect("the pod");
    assert_eq!(uid(&pod), pod_uid, "{after}: the same pod");
    assert!(
        pod.metadata.deletion_timestamp.is_none(),
        "{after}: pod kept"
    );
    Api::<ConfigMap>::namespaced(c, ns)
        .get("kept")
        .await
        .unwrap_or_else(|e| panic!("{after}: the ConfigMap is kept: {e}"));
}

#[tokio::test]
async fn every_mutating_call_in_a_pando_namespace_not_made_for_the_app_is_conflict() {
    for (who, a, _h) in both().await {
        not_the_apps_own_is_conflict(who, &a).await;
    }
}

async fn not_the_apps_own_is_conflict(who: &str, a: &pando_host::Adapter) {
    for (prefix, label) in [("own-other", Some("someone-else")), ("own-none", None)] {
        let app = id(&format!("{prefix}-{who}"));
        let ns = someone_elses(&app, label).await;
        let pod_uid = uid(&Api::<Pod>::namespaced(admin().await, &ns)
            .get("kept")
            .await
            .expect("pod"));

        let e = adapter_error("apply", a.apply(&ctx(), &plan(&app, &["web"])).await);
        assert!(is_conflict(&e), "{who} apply: {e:?}");
        let e = adapter_error("stop", a.stop(&ctx(), &bundle(&app)).await);
        assert!(is_conflict(&e), "{who} stop: {e:?}");
        untouched(&ns, &pod_uid, "stop").await;
        for keep_volumes in [true, false] {
            let e = adapter_error(
                "destroy",
                a.destroy(&ctx(), &bundle(&app), DestroyOptions { keep_volumes })
                    .await,
            );
            assert!(
                is_conflict(&e),
                "destroy (keep_volumes {keep_volumes}): {e:?}"
            );
            assert!(
                e.to_string().contains(&ns) && e.to_string().contains("pando.dev/app"),
                "the conflict names the namespace and the label: {e}"
            );
            untouched(&ns, &pod_uid, "destroy").await;
        }
        let volume = VolumeHandle {
            bundle: app.clone(),
            name: "data".into(),
            location: format!("{ns}/data"),
        };
        let e = adapter_error("destroy-volume", a.destroy_volume(&ctx(), &volume).await);
        assert!(is_conflict(&e), "{who} destroy-volume: {e:?}");
        let nothing =
            Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(admin().await, &ns)
                .list(&Default::default())
                .await
                .expect("policies");
        assert!(nothing.items.is_empty(), "apply wrote nothing there");

        let _ = Api::<Namespace>::all(admin().await)
            .delete(&ns, &Default::default())
            .await;
    }
}

#[tokio::test]
async fn the_snapshot_helper_never_deletes_a_workload_of_its_name() {
    let (a, _h) = ka::load().await;
    let app = id("own-snap");
    let mut p = plan(&app, &["pando-snapshot-data"]);
    p.volumes.push(VolumeSpec {
        name: "data".into(),
        size_bytes: Some(1 << 30),
    });
    let handle = a.apply(&ctx(), &p).await.expect("apply");
    let ns = handle.location.trim_start_matches("namespace/").to_owned();
    let before = wait_phase(&ns, "pando-snapshot-data", "Running").await;

    let volume = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: format!("{ns}/data"),
    };
    // Short: without the check the helper would delete the workload and then wait for a claim
    // KWOK never binds.
    let short = ctx().with_timeout(Duration::from_secs(20));
    let e = adapter_error(
        "snapshot",
        a.snapshot_volume(&short, &volume, tokio::io::sink()).await,
    );
    assert!(
        matches!(&e, AdapterError::Conflict(m) if m.contains("pando-snapshot-data")),
        "a workload in the helper's way is `conflict`, naming it: {e:?}"
    );
    let after = Api::<Pod>::namespaced(admin().await, &ns)
        .get("pando-snapshot-data")
        .await
        .expect("the workload's pod");
    assert_eq!(uid(&after), uid(&before), "the workload's pod is the same");
    assert!(
        after.metadata.deletion_timestamp.is_none(),
        "and not deleted"
    );
    cleanup(&a, &app).await;
}
