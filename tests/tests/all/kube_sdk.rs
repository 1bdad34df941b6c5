//! The guest SDK's kube-rs-style helpers (issues 16 and 20) against the
//! real API server, through the kube-probe: an `Api<DynamicObject>` over an
//! `ApiResource` with `create_json`, a metadata-only list and get,
//! `wait_for_deletion` of a ConfigMap held by a finalizer, and the watcher
//! listing again after a 410 and following on. The cluster's side of each
//! is read with the admin's own kube-rs client.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use pando_tests::cluster::{self, Identity};
use pando_tests::probe::{self, GRANTS, op};

/// The admin's ConfigMaps in `ns`.
async fn configmaps(ns: &str) -> Api<ConfigMap> {
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    Api::namespaced(admin, ns)
}

/// A ConfigMap `name`, with `finalizers` when given.
fn configmap(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| (*f).to_string()).collect()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..ConfigMap::default()
    }
}

/// `key=value` fields of a probe answer.
fn fields(answer: &str) -> BTreeMap<&str, &str> {
    answer
        .split(' ')
        .filter_map(|field| field.split_once('='))
        .collect()
}

/// `<word>:<ms>` from `wait-deleted`.
fn waited(answer: &str) -> (&str, u64) {
    let (word, ms) = answer.split_once(':').expect("<word>:<ms>");
    (word, ms.parse().expect("milliseconds"))
}

#[tokio::test]
async fn a_dynamic_object_is_created_from_json_read_listed_and_listed_as_metadata() {
    let (a, _host) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("sdk-dyn").await;
    let answer = op(&a, &format!("dynamic:{}:greeting", ns.name))
        .await
        .expect("dynamic");
    let got = fields(&answer);
    assert_eq!(got["kind"], "ConfigMap", "{answer}");
    assert_eq!(got["greeting"], "hello", "{answer}");
    assert_eq!(got["patched"], "yes", "{answer}");
    assert_eq!(got["listed"], "greeting", "{answer}");
    assert_eq!(got["meta"], "greeting", "metadata-only list: {answer}");

    // The cluster holds what the dynamic client wrote.
    let cm = configmaps(&ns.name)
        .await
        .get("greeting")
        .await
        .expect("get");
    let data = cm.data.unwrap_or_default();
    assert_eq!(data.get("greeting").map(String::as_str), Some("hello"));
    assert_eq!(data.get("patched").map(String::as_str), Some("yes"));
    assert_eq!(
        cm.metadata.resource_version.as_deref(),
        Some(got["meta-rv"]),
        "the metadata-only get read the stored version"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn wait_for_deletion_waits_out_a_finalizer_and_no_longer() {
    let (a, _host) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("sdk-wait").await;
    let cms = configmaps(&ns.name).await;

    // Held by a finalizer: deleted, but there until the finalizer goes.
    cms.create(
        &PostParams::default(),
        &configmap("held", &["pando.test/hold"]),
    )
    .await
    .expect("create held");
    cms.delete("held", &DeleteParams::default())
        .await
        .expect("delete held");
    let release = {
        let cms = cms.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let patch = serde_json::json!({"metadata": {"finalizers": null}});
            cms.patch("held", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("release the finalizer");
        })
    };
    let answer = op(&a, &format!("wait-deleted:{}:held:30", ns.name))
        .await
        .expect("wait-deleted");
    release.await.expect("release task");
    let (word, ms) = waited(&answer);
    assert_eq!(word, "deleted", "{answer}");
    assert!(
        ms >= 1_500,
        "it returned once the finalizer went, not before: {answer}"
    );
    assert!(
        cms.get_opt("held").await.expect("get").is_none(),
        "gone when it said so"
    );

    // Gone already: at once.
    let answer = op(&a, &format!("wait-deleted:{}:held:30", ns.name))
        .await
        .expect("wait-deleted");
    let (word, ms) = waited(&answer);
    assert_eq!(word, "deleted", "{answer}");
    assert!(ms < 1_500, "{answer}");

    // Never deleted: `present` after the timeout.
    cms.create(&PostParams::default(), &configmap("stays", &[]))
        .await
        .expect("create stays");
    let answer = op(&a, &format!("wait-deleted:{}:stays:2", ns.name))
        .await
        .expect("wait-deleted");
    let (word, ms) = waited(&answer);
    assert_eq!(word, "present", "{answer}");
    assert!((2_000..10_000).contains(&ms), "{answer}");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn the_watcher_lists_again_after_410_and_follows_on() {
    let (a, _host) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("sdk-watch").await;
    let cms = configmaps(&ns.name).await;
    let version = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a list's version");
    // Changes after that version, then compaction: a watch from it is 410
    // Gone (the test cluster keeps no watch cache of ConfigMaps). Two
    // changes, not one: etcd compacts at its current revision and keeps
    // that revision, so after a single write the watch would start exactly
    // at the compacted revision and be served, on a quiet cluster.
    cms.create(&PostParams::default(), &configmap("before", &[]))
        .await
        .expect("create before");
    cms.patch(
        "before",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"changed": "twice"}}})),
    )
    .await
    .expect("patch before");
    cluster::compact_etcd().await.expect("compaction");
    let later = {
        let cms = cms.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            cms.create(&PostParams::default(), &configmap("after", &[]))
                .await
                .expect("create after");
        })
    };
    let answer = op(&a, &format!("watcher:{}:{version}:after", ns.name))
        .await
        .expect("watcher");
    later.await.expect("create task");
    let events: Vec<&str> = answer.split(',').collect();
    let at = |e: &str| {
        events
            .iter()
            .position(|x| *x == e)
            .unwrap_or_else(|| panic!("no {e} in {answer}"))
    };
    // The resume from the old version failed with 410; the watcher listed
    // (seeing `before` in the list, never as a change), then watched from
    // the list's version and saw `after` arrive.
    assert_eq!(events[0], "init", "{answer}");
    assert!(at("init-apply:before") < at("init-done"), "{answer}");
    assert!(!events.contains(&"apply:before"), "{answer}");
    assert_eq!(events.last(), Some(&"apply:after"), "{answer}");
    assert!(at("init-done") < at("apply:after"), "{answer}");
    ns.delete().await.expect("cleanup");
}
