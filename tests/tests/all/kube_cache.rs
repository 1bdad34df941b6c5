//! The host's watch-fed cache (`pando_host::kubecache`) against the test
//! cluster: reads at any version answered from stores fed by one watch
//! each, grants enforced on them exactly as on live reads, the stores kept
//! current by their watches, and an observe and an in-use of the Kubernetes
//! adapter that cost the API server nothing.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use pando_host::CallError;
use pando_host::kubecache::{CacheOptions, WatchCache};
use pando_host::types::{Error as AdapterError, WorkloadPhase};
use pando_tests::cluster::{self, Identity};
use pando_tests::kubernetes_adapter::{
    self as ka, all_requests, audit_mark, cleanup, ctx, exit_pod, id, wait_phase, with_volume,
};
use pando_tests::plans::{bundle, plan};
use pando_tests::{components, probe};

async fn started_cache() -> Arc<WatchCache> {
    let client = cluster::client(Identity::Pando)
        .await
        .expect("a client for pando");
    let cache = WatchCache::start(client, CacheOptions::default()).expect("the cache starts");
    assert!(
        cache.wait_synced(Duration::from_secs(60)).await,
        "the cache's stores list and watch"
    );
    cache
}

/// A pod named `name` in `ns`, as admin, with Pando's label or without.
async fn admin_pod(ns: &str, name: &str, managed: bool) {
    let mut labels = serde_json::json!({});
    if managed {
        labels["app.kubernetes.io/managed-by"] = "pando".into();
    }
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "labels": labels },
        "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] },
    }))
    .expect("a pod");
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    Api::<Pod>::namespaced(admin, ns)
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
}

/// Runs the probe's `any-version` GET until it says `want`, or fails.
async fn until(a: &pando_host::Adapter, path: &str, want: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = probe::op(a, &format!("any-version:{path}")).await;
        if got.as_deref().ok() == Some(want) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path}: wanted {want}, last {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn reads_at_any_version_come_from_the_cache_and_grants_still_decide() {
    let cache = started_cache().await;
    let grants = pando_host::Grants::from_text("test grants", probe::GRANTS).expect("grants");
    let (a, _h) =
        probe::load_as_pando_cached(&components::kube_probe(), grants, "{}", Some(cache)).await;
    let ns = probe::app_namespace("cache").await;
    admin_pod(&ns.name, "managed", true).await;
    admin_pod(&ns.name, "unmanaged", false).await;

    // Pando's pod: from the store, once its watch delivered it.
    let managed = format!("/api/v1/namespaces/{}/pods/managed", ns.name);
    until(&a, &managed, "200:hit").await;
    // Not Pando's: not in the store, so the API server answers.
    let unmanaged = format!("/api/v1/namespaces/{}/pods/unmanaged", ns.name);
    assert_eq!(
        probe::op(&a, &format!("any-version:{unmanaged}"))
            .await
            .expect("get"),
        "200:live"
    );
    // A list whose selector includes the store's: from the store. A list
    // without one could miss unlabelled objects: the API server.
    let list = format!("/api/v1/namespaces/{}/pods", ns.name);
    assert_eq!(
        probe::op(&a, &format!("any-version:{list}"))
            .await
            .expect("list"),
        "200:live"
    );
    // A consistent read (no resourceVersion=0) never comes from the cache.
    assert_eq!(
        probe::op(&a, &format!("raw:get:{managed}"))
            .await
            .expect("get"),
        "200"
    );

    // The store holds Pando's pods of every namespace, `default` too, but
    // the grants do not reach `default`: denied, as a live read would be.
    let name = cluster::unique_name("cached");
    admin_pod("default", &name, true).await;
    let outside = format!("/api/v1/namespaces/default/pods/{name}");
    let denied = probe::op(&a, &format!("any-version:{outside}")).await;
    assert!(
        matches!(&denied, Err(CallError::Adapter(AdapterError::Denied(_)))),
        "grants decide before the cache is asked: {denied:?}"
    );
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let _ = Api::<Pod>::namespaced(admin, "default")
        .delete(&name, &Default::default())
        .await;
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn an_observe_through_the_cache_costs_the_api_server_nothing_and_stays_current() {
    let cache = started_cache().await;
    let (cached, _h1) = ka::load_cached(cache).await;
    let (live, _h2) = ka::load().await;
    let app = id("k8s-cache");
    let ns = format!("pando-{app}");
    // A claim binds only to a PV made for it (no provisioner here), and
    // the pod that mounts it is scheduled only once it is bound.
    let pv = ka::bound_pv(&ns, "data").await;
    let p = with_volume(plan(&app, &["web", "db"]), "data");
    live.apply(&ctx(), &p).await.expect("apply");
    wait_phase(&ns, "web", "Running").await;
    wait_phase(&ns, "db", "Running").await;

    // Let the watches deliver what the apply made, then compare.
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    let seen = loop {
        let from_cache = cached
            .observe(&ctx(), &bundle(&app))
            .await
            .expect("observe");
        let from_api = live.observe(&ctx(), &bundle(&app)).await.expect("observe");
        if from_cache == from_api {
            break from_cache;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never caught up: {from_cache:?} vs {from_api:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        seen.exists && seen.workloads.len() == 2 && seen.volumes.len() == 1,
        "{seen:?}"
    );

    // The cache's answers are audited in aggregate (a summary event, not
    // one a hit): what the observe asked is the adapter's request count,
    // and what reached the API server its per-request audit events.
    let mark = audit_mark();
    let before = cached.kubernetes_requests().expect("counted");
    cached
        .observe(&ctx(), &bundle(&app))
        .await
        .expect("observe");
    let asked = cached
        .kubernetes_requests()
        .expect("counted")
        .since(&before);
    assert_eq!(asked.reads(), 4, "observe's 4 reads: {asked}");
    assert_eq!(asked.writes(), 0, "{asked}");
    let sent: Vec<_> = all_requests(mark)
        .into_iter()
        .filter(|r| r.namespace == ns || r.name == ns)
        .collect();
    assert!(
        sent.is_empty(),
        "all 4 answered by the cache, none sent: {sent:?}"
    );

    // In-use reads through the cache as well: its namespace list, its one
    // cluster-wide pod list and this app's claim list reach no API server,
    // and the app, its volume and its pods' requests are in the answer.
    let mark = audit_mark();
    let before = cached.kubernetes_requests().expect("counted");
    let in_use = cached.in_use(&ctx()).await.expect("in-use");
    assert!(in_use.bundles.contains(&app), "{in_use:?}");
    assert!(
        in_use
            .volumes
            .iter()
            .any(|v| v.bundle == app && v.name == "data"),
        "{in_use:?}"
    );
    assert!(in_use.requested.cpu_millis > 0, "{in_use:?}");
    let asked = cached
        .kubernetes_requests()
        .expect("counted")
        .since(&before);
    for resource in ["namespaces", "pods", "persistentvolumeclaims"] {
        assert!(
            asked
                .iter()
                .any(|(k, _)| k.verb.as_str() == "list" && k.resource == resource),
            "in-use lists {resource}: {asked}"
        );
    }
    let sent: Vec<_> = all_requests(mark)
        .into_iter()
        .filter(|r| r.verb == "list")
        .filter(|r| {
            (r.namespace.is_empty() && (r.resource == "namespaces" || r.resource == "pods"))
                || (r.namespace == ns && r.resource == "persistentvolumeclaims")
        })
        .collect();
    assert!(
        sent.is_empty(),
        "in-use's lists answered by the cache, none sent: {sent:?}"
    );

    // A change reaches the store through its watch.
    exit_pod(&ns, "web", 2).await;
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    loop {
        let o = cached
            .observe(&ctx(), &bundle(&app))
            .await
            .expect("observe");
        let web = o.workloads.iter().find(|w| w.name == "web").expect("web");
        if web.phase == WorkloadPhase::Failed {
            assert_eq!(web.exit_code, Some(2));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the exit never reached the cache: {o:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cleanup(&live, &app).await;
    ka::delete_pv(&pv).await;
}

#[tokio::test]
async fn a_cache_over_its_memory_budget_holds_nothing_answers_nothing_and_says_so() {
    let grants = pando_host::Grants::from_text("test grants", probe::GRANTS).expect("grants");
    let ns = probe::app_namespace("cachebudget").await;
    for i in 0..4 {
        admin_pod(&ns.name, &format!("managed-{i}"), true).await;
    }
    // Room for the namespaces store, not for four pods more.
    let max_bytes = 4096;
    let client = cluster::client(Identity::Pando).await.expect("pando");
    let cache = WatchCache::start(
        client,
        CacheOptions {
            max_bytes,
            ..CacheOptions::default()
        },
    )
    .expect("the cache starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        let status = cache.status();
        let pods = status.stores.iter().find(|s| s.kind == "Pod").cloned();
        if pods.as_ref().is_some_and(|p| p.over_budget) {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pod store never reported it was over the budget: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        status.bytes <= max_bytes,
        "held within the budget: {status:?}"
    );
    let pods = status
        .stores
        .iter()
        .find(|s| s.kind == "Pod")
        .expect("pods");
    assert_eq!(
        (pods.objects, pods.bytes, pods.synced),
        (0, 0, false),
        "{pods:?}"
    );
    assert!(!cache.is_synced());
    // Its reads go to the API server, and are answered all the same.
    let (a, _h) =
        probe::load_as_pando_cached(&components::kube_probe(), grants, "{}", Some(cache)).await;
    let path = format!("/api/v1/namespaces/{}/pods/managed-0", ns.name);
    assert_eq!(
        probe::op(&a, &format!("any-version:{path}"))
            .await
            .expect("get"),
        "200:live"
    );
    ns.delete().await.expect("cleanup");
}

/// A pod patch through a host with the cache takes the object before the
/// write from the cache (`writes.rs`, `cached_current`) only when it is the
/// object the dry run changed: here the admin changes the pod right before
/// each patch, so the cache's copy often lags, and every patch must still be
/// checked against, and applied to, the pod as stored — the admin's label
/// kept beside the adapter's, never a 409 or a lost write.
#[tokio::test]
async fn a_pod_patch_through_the_cache_applies_to_the_pod_as_stored_when_the_cache_lags() {
    let cache = started_cache().await;
    let grants = pando_host::Grants::from_text("test grants", probe::GRANTS).expect("grants");
    let (a, _h) =
        probe::load_as_pando_cached(&components::kube_probe(), grants, "{}", Some(cache)).await;
    let ns = probe::app_namespace("cache-patch").await;
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let pods: Api<Pod> = Api::namespaced(admin, &ns.name);
    // Within the cluster's policy for what `pando` writes: no token.
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "patched", "labels": {"app.kubernetes.io/managed-by": "pando"}},
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox:1.36"}],
        },
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
    let path = format!("/api/v1/namespaces/{}/pods/patched", ns.name);
    until(&a, &path, "200:hit").await;
    for i in 0..5 {
        let theirs = serde_json::json!({"metadata": {"labels": {"theirs": format!("t{i}")}}});
        pods.patch(
            "patched",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&theirs),
        )
        .await
        .expect("the admin's patch");
        let ours = serde_json::json!({"metadata": {"labels": {"ours": format!("o{i}")}}});
        let answer = probe::op(&a, &format!("body:patch:merge:{path}\n{ours}"))
            .await
            .expect("the adapter's patch");
        let body = answer.strip_prefix("200:").expect("200, then the pod");
        let pod: serde_json::Value = serde_json::from_str(body).expect("JSON");
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["ours"], format!("o{i}"), "{pod}");
        assert_eq!(
            labels["theirs"],
            format!("t{i}"),
            "applied to the pod as stored: {pod}"
        );
    }
    ns.delete().await.expect("namespace deleted");
}
