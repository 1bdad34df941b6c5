//! `metadata.managedFields` left out of what the host hands a guest
//! (`capability/kubernetes/managed_fields.rs`), against the test cluster: a
//! ConfigMap two field managers applied, read through the host's import
//! without them, with them when the request asks (`showManagedFields=true`,
//! taken off before the request is sent), and the API server's own answer
//! carrying them all along — so what the guest is shown is the host's doing.
//! A watch's events come without them too (a watch has no query to ask with).

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use pando_tests::cluster::{self, Identity};
use pando_tests::probe;
use serde_json::{Value, json};

/// Applies one key of ConfigMap `cm` in `ns` as field manager `manager`.
async fn apply_as(ns: &str, manager: &str, key: &str) {
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm"},
        "data": {key: "v"},
    });
    Api::<ConfigMap>::namespaced(admin, ns)
        .patch("cm", &PatchParams::apply(manager), &Patch::Apply(&cm))
        .await
        .expect("applying the ConfigMap");
}

/// The managers named in `object`'s `managedFields`, sorted; none without.
fn managers(object: &Value) -> Option<Vec<String>> {
    let entries = object["metadata"].get("managedFields")?.as_array()?;
    let mut names: Vec<String> = entries
        .iter()
        .filter_map(|e| e["manager"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Some(names)
}

/// The probe's `read:` of `path`: the body as the guest was shown it.
async fn read(a: &pando_host::Adapter, path: &str) -> Value {
    let got = probe::op(a, &format!("read:{path}"))
        .await
        .expect("the read");
    let body = got.strip_prefix("live:").expect("a live read");
    serde_json::from_str(body).expect("the body is JSON")
}

#[tokio::test]
async fn a_guest_reads_objects_without_managed_fields_unless_it_asks() {
    let (a, _h) = probe::load(probe::GRANTS).await;
    let ns = probe::app_namespace("mf").await;
    apply_as(&ns.name, "first-manager", "a").await;
    apply_as(&ns.name, "second-manager", "b").await;
    let want = Some(vec![
        "first-manager".to_owned(),
        "second-manager".to_owned(),
    ]);

    // The API server sends them.
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let server: ConfigMap = Api::namespaced(admin, &ns.name)
        .get("cm")
        .await
        .expect("admin reads it");
    let server = serde_json::to_value(server).expect("JSON");
    assert_eq!(managers(&server), want, "the server's answer carries both");

    let path = format!("/api/v1/namespaces/{}/configmaps/cm", ns.name);
    let shown = read(&a, &path).await;
    assert_eq!(managers(&shown), None, "a get shows none: {shown}");
    assert_eq!(
        shown["data"],
        json!({"a": "v", "b": "v"}),
        "the rest is whole"
    );
    assert_eq!(shown["metadata"]["name"], "cm");
    assert_eq!(
        shown["metadata"]["resourceVersion"], server["metadata"]["resourceVersion"],
        "the metadata's other members are kept"
    );

    let asked = read(&a, &format!("{path}?showManagedFields=true")).await;
    assert_eq!(managers(&asked), want, "asked for, they come: {asked}");

    let list = read(&a, &format!("/api/v1/namespaces/{}/configmaps", ns.name)).await;
    let items = list["items"].as_array().expect("a list");
    let cm = items
        .iter()
        .find(|i| i["metadata"]["name"] == "cm")
        .expect("the ConfigMap is listed");
    assert_eq!(managers(cm), None, "a list's items show none: {cm}");
    let asked = read(
        &a,
        &format!(
            "/api/v1/namespaces/{}/configmaps?showManagedFields=true",
            ns.name
        ),
    )
    .await;
    let cm = asked["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["metadata"]["name"] == "cm"))
        .expect("listed");
    assert_eq!(managers(cm), want, "asked for, a list's items carry them");
    ns.delete().await.expect("namespace deleted");
}

#[tokio::test]
async fn a_watchs_events_come_without_managed_fields() {
    let (a, _h) = probe::load(probe::GRANTS).await;
    let ns = probe::app_namespace("mfw").await;
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "watched"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }))
    .expect("a pod");
    let made = Api::<Pod>::namespaced(admin, &ns.name)
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
    let made = serde_json::to_value(made).expect("JSON");
    assert!(
        managers(&made).is_some(),
        "the server's answer carries them: {made}"
    );

    // From version 0: the pod arrives as an ADDED event within the 1 s watch.
    let shown = probe::op(&a, &format!("watch-objects:{}:1:0", ns.name))
        .await
        .expect("the watch");
    let pods: Vec<Value> = serde_json::from_str(&shown).expect("a JSON array");
    let watched = pods
        .iter()
        .find(|p| p["metadata"]["name"] == "watched")
        .unwrap_or_else(|| panic!("the pod is among the events: {shown}"));
    assert_eq!(managers(watched), None, "an event shows none: {watched}");
    assert_eq!(watched["spec"]["containers"][0]["name"], "main");
    ns.delete().await.expect("namespace deleted");
}
