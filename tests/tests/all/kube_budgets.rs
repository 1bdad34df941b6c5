//! Budgets and reads (issue 47, items 3, 5, 8, 9) against the real API
//! server, through the kube-probe as the restricted `pando` identity:
//!
//! - a namespace the adapter makes carries the host's `pando-ceiling`
//!   ResourceQuota and LimitRange, and the API server's quota admission
//!   refuses a pod over it whoever sends it; the adapter's writes to the
//!   ceiling are refused by the host, naming the rule;
//! - a spent hourly write budget refuses the write, naming the budget;
//! - reads the watch-fed cache answers take rate tokens and are capped in
//!   bytes like live reads;
//! - pods outside the adapter's own namespaces are shown through the read
//!   mask (no env, args or command), live and cached, while its own are
//!   shown whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    LimitRange, Namespace, Pod, ResourceQuota, Service, ServiceAccount,
};
use kube::Api;
use kube::api::PostParams;
use pando_host::kubecache::{CacheOptions, WatchCache};
use pando_host::limits::Limits;
use pando_host::types::Error as AdapterError;
use pando_host::{Adapter, CallError, Grants, Host, LoadOptions};
use pando_tests::cluster::{self, Identity};
use pando_tests::{components, probe};
use serde_json::{Value, json};

/// The probe's grants here: `pando-bud*` namespaces made and written,
/// quotas writable (so that a refusal is the host's ceiling rule, not a
/// missing grant), pods read everywhere, a small hourly write budget, a
/// ceiling for `pando-budceil-*` only, and the pod read mask.
const GRANTS: &str = r#"
kubernetes:
  rate: {qps: 50, burst: 50, write_burst_bytes: 65536, write_bytes_per_hour: 100000, cache_reads_per_second: 50, cache_read_burst: 50}
  max_body_bytes: 65536
  rules:
  - verbs: [create, get, delete]
    resources: [namespaces]
    cluster: true
    names: ["pando-bud*"]
  - verbs: [get, list, create, update, patch, delete, deletecollection]
    resources: [configmaps, resourcequotas, limitranges]
    namespaces: ["pando-bud*"]
  - verbs: [get, list]
    resources: [services]
    namespaces: ["*"]
  - verbs: [get, list, watch]
    resources: [pods]
    namespaces: ["*"]
  ceilings:
  - namespaces: ["pando-budceil-*"]
    quota:
      pods: "10"
      requests.cpu: "4"
      requests.memory: 4Gi
      limits.memory: 2Gi
      requests.storage: 10Gi
      count/persistentvolumeclaims: "2"
      count/secrets: "10"
      count/configmaps: "10"
      services.loadbalancers: "0"
      services.nodeports: "0"
    container:
      default: {memory: 256Mi}
      default_request: {cpu: 50m, memory: 64Mi}
      max: {memory: 8Gi}
  read_masks:
  - resources: [pods]
    own_namespaces: ["pando-bud*"]
    keep:
    - metadata.name
    - metadata.namespace
    - metadata.ownerReferences
    - spec.nodeName
    - spec.containers[].name
    - spec.containers[].resources
    - status.phase
"#;

/// The probe with [`GRANTS`] as `pando`, with `limits`, reads at any
/// version answered from `cache` when given.
async fn load(limits: Limits, cache: Option<Arc<WatchCache>>) -> (Adapter, Host) {
    probe::load_as_pando_with(
        &components::kube_probe(),
        LoadOptions {
            grants: Grants::from_text("kube_budgets grants", GRANTS).expect("grants"),
            config: "{}".into(),
            limits,
            kubernetes_cache: cache,
            ..LoadOptions::default()
        },
    )
    .await
}

async fn admin() -> kube::Client {
    cluster::client(Identity::Admin).await.expect("admin")
}

/// Deletes namespace `name` as the admin (one the host made for the
/// probe), without waiting for it to go.
async fn delete_namespace(name: &str) {
    Api::<Namespace>::all(admin().await)
        .delete(name, &Default::default())
        .await
        .expect("deleting the namespace");
}

/// Waits until namespace `ns` has its `default` ServiceAccount, which a
/// pod needs.
async fn account_made(ns: &str) {
    let accounts = Api::<ServiceAccount>::namespaced(admin().await, ns);
    let deadline = Instant::now() + Duration::from_secs(60);
    while accounts.get_opt("default").await.expect("read").is_none() {
        assert!(
            Instant::now() < deadline,
            "no default ServiceAccount in {ns}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Asserts a refusal by the host whose message says `needle`.
fn denied(result: Result<String, CallError>, needle: &str) -> String {
    match result {
        Err(CallError::Adapter(AdapterError::Denied(m))) => {
            assert!(m.contains(needle), "names {needle}: {m}");
            m
        }
        other => panic!("expected a refusal naming {needle}, got {other:?}"),
    }
}

/// The body of a `read:` answer, and whether the cache gave it.
fn read_body(result: Result<String, CallError>) -> (bool, Value) {
    let answer = result.expect("read");
    let (source, body) = answer.split_once(':').expect("source:body");
    (
        source == "hit",
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}")),
    )
}

/// A pod with env, args and a command, labelled Pando's (so the cache
/// holds it), made by the admin in `ns`.
async fn secret_pod(ns: &str, name: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "pando"}},
        "spec": {"containers": [{
            "name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c"], "args": ["echo $PASSWORD"],
            "env": [{"name": "PASSWORD", "value": "hunter2"}],
            "resources": {"requests": {"cpu": "10m"}, "limits": {"memory": "64Mi"}},
        }]},
    }))
    .expect("a pod");
    Api::<Pod>::namespaced(admin().await, ns)
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
}

/// Whether a pod's JSON shows anything of its env, args or command.
fn shows_secrets(pod: &Value) -> bool {
    let text = pod.to_string();
    text.contains("hunter2") || text.contains("PASSWORD") || text.contains("\"command\"")
}

#[tokio::test]
async fn a_namespace_made_through_the_host_carries_the_ceiling_the_api_server_enforces() {
    let (a, _h) = load(Limits::default(), None).await;
    let name = cluster::unique_name("pando-budceil");
    assert_eq!(
        probe::op(&a, &format!("create-ns:{name}"))
            .await
            .expect("created"),
        name
    );
    let quota = Api::<ResourceQuota>::namespaced(admin().await, &name)
        .get("pando-ceiling")
        .await
        .expect("the host wrote the quota before the create returned");
    let hard = quota.spec.and_then(|s| s.hard).expect("hard");
    assert_eq!(hard["limits.memory"].0, "2Gi");
    assert_eq!(hard["count/secrets"].0, "10");
    assert_eq!(hard["services.loadbalancers"].0, "0");
    let limits = Api::<LimitRange>::namespaced(admin().await, &name)
        .get("pando-ceiling")
        .await
        .expect("the host wrote the limit range before the create returned");
    assert_eq!(
        limits.spec.expect("spec").limits[0]
            .max
            .as_ref()
            .expect("max")["memory"]
            .0,
        "8Gi"
    );

    // The cluster's layer: the admin's pod over the quota is refused by
    // quota admission; one under it is created.
    let pods = Api::<Pod>::namespaced(admin().await, &name);
    let pod = |n: &str, memory: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": n},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                "resources": {"limits": {"memory": memory}}}]},
        }))
        .expect("a pod")
    };
    // The quota controller fills the quota's status; until it has, quota
    // admission refuses every pod, so wait for it.
    let quotas = Api::<ResourceQuota>::namespaced(admin().await, &name);
    let deadline = Instant::now() + Duration::from_secs(30);
    while quotas
        .get("pando-ceiling")
        .await
        .ok()
        .and_then(|q| q.status)
        .and_then(|s| s.hard)
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "the quota's status is never filled"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    account_made(&name).await;
    let over = pods
        .create(&PostParams::default(), &pod("over", "4Gi"))
        .await
        .expect_err("4Gi is over the namespace's 2Gi limits.memory");
    let message = over.to_string();
    assert!(
        message.contains("exceeded quota: pando-ceiling"),
        "quota admission refused it: {message}"
    );
    pods.create(&PostParams::default(), &pod("under", "1Gi"))
        .await
        .expect("a pod under the ceiling is created");
    delete_namespace(&name).await;
}

#[tokio::test]
async fn the_adapter_s_writes_to_the_ceiling_are_refused_naming_the_rule() {
    let (a, _h) = load(Limits::default(), None).await;
    let name = cluster::unique_name("pando-budceil");
    probe::op(&a, &format!("create-ns:{name}"))
        .await
        .expect("created");
    let quotas = format!("/api/v1/namespaces/{name}/resourcequotas");
    let raise = json!({"spec": {"hard": {"limits.memory": "1Ti"}}});
    for (method, ty, path, body) in [
        (
            "patch",
            "merge",
            format!("{quotas}/pando-ceiling"),
            raise.clone(),
        ),
        (
            "patch",
            "json-patch",
            format!("{quotas}/pando-ceiling"),
            json!([{"op": "replace", "path": "/spec/hard/limits.memory", "value": "1Ti"}]),
        ),
        (
            "put",
            "json",
            format!("{quotas}/pando-ceiling"),
            json!({"apiVersion": "v1", "kind": "ResourceQuota",
                   "metadata": {"name": "pando-ceiling"}, "spec": {"hard": {}}}),
        ),
    ] {
        denied(
            probe::op(&a, &format!("body:{method}:{ty}:{path}\n{body}")).await,
            "host rule `ceilings`",
        );
    }
    for path in [
        format!("{quotas}/pando-ceiling"),
        format!("/api/v1/namespaces/{name}/limitranges/pando-ceiling"),
        quotas.clone(),
    ] {
        denied(
            probe::op(&a, &format!("raw:delete:{path}")).await,
            "host rule `ceilings`",
        );
    }
    let still = Api::<ResourceQuota>::namespaced(admin().await, &name)
        .get("pando-ceiling")
        .await
        .expect("the ceiling is still there");
    assert_eq!(
        still.spec.and_then(|s| s.hard).expect("hard")["limits.memory"].0,
        "2Gi"
    );

    // Positive control: the adapter's own quota beside it is its business.
    let own = json!({"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": "pando-app"}, "spec": {"hard": {"pods": "5"}}});
    probe::op(&a, &format!("body:post:json:{quotas}\n{own}"))
        .await
        .expect("the adapter's own quota is written");

    // A namespace no ceiling matches is not made.
    let other = cluster::unique_name("pando-budother");
    denied(
        probe::op(&a, &format!("create-ns:{other}")).await,
        "host rule `ceilings`",
    );
    let namespaces = Api::<Namespace>::all(admin().await);
    assert!(namespaces.get_opt(&other).await.expect("read").is_none());
    delete_namespace(&name).await;
}

#[tokio::test]
async fn a_spent_hourly_write_budget_refuses_the_write_naming_it() {
    let (a, _h) = load(Limits::default(), None).await;
    let ns = cluster::create_adapter_namespace(&admin().await, "pando-budwrite")
        .await
        .expect("a pando-* namespace");
    let path = format!("/api/v1/namespaces/{}/configmaps", ns.name);
    let config_map = |n: usize| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"generateName": format!("budget-{n}-")},
               "data": {"x": "y".repeat(40_000)}})
    };
    // 100 000 bytes an hour: two bodies of 40 KB pass, the third does not.
    for n in 0..2 {
        probe::op(&a, &format!("body:post:json:{path}\n{}", config_map(n)))
            .await
            .expect("within the hourly budget");
    }
    let m = denied(
        probe::op(&a, &format!("body:post:json:{path}\n{}", config_map(2))).await,
        "`kubernetes.rate.write_bytes_per_hour`",
    );
    assert!(m.contains("100000 bytes an hour"), "{m}");
    assert!(m.contains("raise"), "says how to raise it: {m}");
    ns.delete().await.expect("cleanup");
}

async fn started_cache() -> Arc<WatchCache> {
    let client = cluster::client(Identity::Pando).await.expect("pando");
    let cache = WatchCache::start(client, CacheOptions::default()).expect("the cache starts");
    assert!(cache.wait_synced(Duration::from_secs(60)).await, "synced");
    cache
}

/// Reads `path` at any version until the cache answers it.
async fn read_cached(a: &Adapter, path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (hit, body) = read_body(probe::op(a, &format!("read:any:{path}")).await);
        if hit {
            return body;
        }
        assert!(Instant::now() < deadline, "the cache never answered {path}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn cached_reads_take_rate_tokens_and_are_capped_in_bytes() {
    let cache = started_cache().await;
    let limits = Limits {
        max_response_bytes: 64 << 10,
        ..Limits::default()
    };
    let (a, _h) = load(limits, Some(cache)).await;
    // The adapter's binding in it: a read the cache has not got yet goes
    // to the API server as `pando`.
    let ns = cluster::create_adapter_namespace(&admin().await, "pando-budcache")
        .await
        .expect("a namespace");
    // Eight Services of 12 KB each, labelled Pando's: their list is about
    // 100 KB, over the 64 KiB cap; one of them is not.
    let services = Api::<Service>::namespaced(admin().await, &ns.name);
    for i in 0..8 {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": format!("s{i}"),
                         "labels": {"app.kubernetes.io/managed-by": "pando"},
                         "annotations": {"filler": "z".repeat(12_000)}},
            "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
        }))
        .expect("a service");
        services
            .create(&PostParams::default(), &svc)
            .await
            .expect("a service");
    }
    let one = format!("/api/v1/namespaces/{}/services/s7", ns.name);
    read_cached(&a, &one).await;
    let list = format!(
        "/api/v1/namespaces/{}/services?labelSelector=app.kubernetes.io/managed-by=pando",
        ns.name
    );
    match probe::op(&a, &format!("read:any:{list}")).await {
        Err(CallError::Adapter(e)) => {
            let m = e.to_string();
            assert!(
                m.contains("larger than 65536 bytes") && m.contains("`limit` and `continue`"),
                "the cached list over the cap fails, saying how to page it: {m}"
            );
        }
        other => panic!("expected the cap to refuse the cached list, got {other:?}"),
    }

    // The cache's own rate: 50 a second with a burst of 50; 120 cached
    // reads take at least (120 - 50) / 50 = 1.4 s, where unmetered they
    // take a few ms each.
    let started = Instant::now();
    for _ in 0..120 {
        let (hit, _) = read_body(probe::op(&a, &format!("read:any:{one}")).await);
        assert!(hit, "answered by the cache");
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1300),
        "120 cached reads at 50 a second took only {took:?}: they take no rate token"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn pods_outside_the_own_namespaces_are_masked_live_cached_and_watched() {
    let cache = started_cache().await;
    let (a, _h) = load(Limits::default(), Some(cache)).await;
    let other = cluster::create_test_namespace(&admin().await, "budmask")
        .await
        .expect("a namespace not the adapter's");
    let own = cluster::create_test_namespace(&admin().await, "pando-budmask")
        .await
        .expect("the adapter's own namespace");
    secret_pod(&other.name, "db").await;
    secret_pod(&own.name, "app").await;

    // Live get: masked outside, whole inside.
    let (_, theirs) = read_body(
        probe::op(
            &a,
            &format!("read:/api/v1/namespaces/{}/pods/db", other.name),
        )
        .await,
    );
    assert!(!shows_secrets(&theirs), "masked: {theirs}");
    assert_eq!(
        theirs["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "10m"
    );
    assert_eq!(theirs["spec"]["containers"][0]["name"], "main");
    let (_, mine) = read_body(
        probe::op(
            &a,
            &format!("read:/api/v1/namespaces/{}/pods/app", own.name),
        )
        .await,
    );
    assert!(
        shows_secrets(&mine),
        "the adapter's own pod is whole: {mine}"
    );

    // Live list across namespaces: item by item.
    let (_, all) = read_body(probe::op(&a, "read:/api/v1/pods").await);
    let items = all["items"].as_array().expect("items");
    let find = |ns: &str| {
        items
            .iter()
            .find(|p| p["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("a pod of {ns} in the list"))
    };
    assert!(!shows_secrets(find(&other.name)));
    assert!(shows_secrets(find(&own.name)));
    assert!(
        items
            .iter()
            .filter(|p| !p["metadata"]["namespace"]
                .as_str()
                .is_some_and(|n| n.starts_with("pando-bud")))
            .all(|p| p.get("spec").is_none_or(|s| s.get("volumes").is_none())),
        "no pod of another namespace shows its volumes"
    );

    // The cache's answer is masked alike.
    let cached = read_cached(&a, &format!("/api/v1/namespaces/{}/pods/db", other.name)).await;
    assert!(!shows_secrets(&cached), "masked in the cache: {cached}");
    assert_eq!(cached["metadata"]["name"], "db");
    let cached_own = read_cached(&a, &format!("/api/v1/namespaces/{}/pods/app", own.name)).await;
    assert!(shows_secrets(&cached_own), "own, whole: {cached_own}");

    // A watch's events alike: from version 0 the API server sends each pod there now as an
    // ADDED event, which the host masks on its way to the guest.
    let watched = |ns: String| {
        let a = &a;
        async move {
            let body = probe::op(a, &format!("watch-objects:{ns}:1:0"))
                .await
                .expect("the watch");
            let pods: Vec<Value> = serde_json::from_str(&body).expect("pods as JSON");
            pods
        }
    };
    let theirs = watched(other.name.clone()).await;
    assert!(
        theirs.iter().any(|p| p["metadata"]["name"] == "db"),
        "the watch showed the pod: {theirs:?}"
    );
    for pod in &theirs {
        assert!(!shows_secrets(pod), "masked in a watch event: {pod}");
    }
    assert_eq!(
        theirs[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "10m",
        "the mask keeps what capacity needs"
    );
    let mine = watched(own.name.clone()).await;
    assert!(
        mine.iter()
            .any(|p| p["metadata"]["name"] == "app" && shows_secrets(p)),
        "own, whole in a watch event: {mine:?}"
    );
    other.delete().await.expect("cleanup");
    own.delete().await.expect("cleanup");
}
