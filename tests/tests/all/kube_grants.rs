//! The Kubernetes import's grants, against the real control plane, from
//! both sides: what is granted works, what is not is denied with the
//! missing grant named, and hostile requests never reach the API server.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, ObjectReference, PersistentVolume, PersistentVolumeSpec,
};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use pando_host::CallError;
use pando_host::types::Error as AdapterError;
use pando_tests::cluster::{self, Identity};
use pando_tests::probe::{self, GRANTS, op};

/// The adapter's own `denied` error, with its message.
fn denied(result: Result<String, CallError>) -> String {
    match result {
        Err(CallError::Adapter(AdapterError::Denied(m))) => m,
        other => panic!("expected a denial, got {other:?}"),
    }
}

/// The adapter's own `invalid` error, with its message.
fn invalid(result: Result<String, CallError>) -> String {
    match result {
        Err(CallError::Adapter(AdapterError::Invalid(m))) => m,
        other => panic!("expected an invalid-request error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_granted_namespace_is_read_and_another_is_denied_with_the_grant_named() {
    let (a, _c) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("grants").await;
    assert_eq!(
        op(&a, &format!("read-ns:{}", ns.name))
            .await
            .expect("granted"),
        "0"
    );

    let msg = denied(op(&a, "read-ns:default").await);
    assert!(msg.contains("default"), "{msg}");
    assert!(
        msg.contains(r#"namespaces: ["default"]"#),
        "names the line to add: {msg}"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn kube_system_secrets_are_denied() {
    let (a, _c) = probe::load(GRANTS).await;
    let msg = denied(op(&a, "secrets:kube-system").await);
    assert!(
        msg.contains("secrets") && msg.contains("kube-system"),
        "{msg}"
    );
}

#[tokio::test]
async fn pandos_own_namespace_is_excepted_from_the_app_rules() {
    let (a, _c) = probe::load(GRANTS).await;
    probe::ensure_namespace("pando-system").await;
    let msg = denied(op(&a, "secrets:pando-system").await);
    assert!(msg.contains("pando-system"), "{msg}");
}

#[tokio::test]
async fn namespaces_are_created_only_by_name_pattern() {
    let (a, _c) = probe::load(GRANTS).await;
    let name = cluster::unique_name("pando-made");
    assert_eq!(
        op(&a, &format!("create-ns:{name}")).await.expect("granted"),
        name
    );
    let msg = denied(op(&a, &format!("create-ns:{}", cluster::unique_name("evil"))).await);
    assert!(msg.contains("names"), "names the pattern to add: {msg}");

    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin);
    api.delete(&name, &DeleteParams::default())
        .await
        .expect("cleanup");
}

#[tokio::test]
async fn nodes_are_read_only() {
    let (a, _c) = probe::load(GRANTS).await;
    assert_eq!(
        op(&a, "raw:get:/api/v1/nodes").await.expect("list nodes"),
        "200"
    );
    let msg = denied(op(&a, "raw:delete:/api/v1/nodes/kwok-node-0").await);
    assert!(msg.contains("delete") && msg.contains("nodes"), "{msg}");
    // Still there: the denial never reached the API server.
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(admin);
    assert!(
        nodes
            .get_opt("kwok-node-0")
            .await
            .expect("read node")
            .is_some()
    );
}

#[tokio::test]
async fn hostile_paths_are_refused_before_they_are_sent() {
    let (a, _c) = probe::load(GRANTS).await;
    for path in [
        "/api/v1/namespaces/pando-x/pods/../../kube-system/secrets",
        "/api/v1/namespaces/pando-x/pods/%2e%2e/%2e%2e/kube-system/secrets",
        "/api/v1/namespaces/kube-system//secrets",
        "/apis/Apps/v1/namespaces/pando-x/deployments",
        "/api/v1/namespaces/pando-x/pods?labelSelector=x",
        "/api/v1/namespaces/pando-x/pods/",
        "/logs/kube-apiserver.log",
        "/api/v1/namespaces/pando-x/pods/web/proxy",
    ] {
        let result = op(&a, &format!("raw:get:{path}")).await;
        match &result {
            Err(CallError::Adapter(AdapterError::Invalid(_) | AdapterError::Denied(_))) => {}
            other => panic!("{path} was not refused: {other:?}"),
        }
    }
}

fn pv(name: &str, claim_namespace: Option<&str>) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(
                [(
                    "storage".to_string(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()),
                )]
                .into(),
            ),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            host_path: Some(HostPathVolumeSource {
                path: "/tmp/pando-test-pv".into(),
                type_: None,
            }),
            claim_ref: claim_namespace.map(|ns| ObjectReference {
                namespace: Some(ns.into()),
                name: Some("data".into()),
                ..ObjectReference::default()
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    }
}

#[tokio::test]
async fn a_pv_is_reached_only_through_a_claim_in_a_granted_namespace() {
    let (a, _c) = probe::load(GRANTS).await;
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let pvs: Api<PersistentVolume> = Api::all(admin);
    let owned = cluster::unique_name("pv-owned");
    let foreign = cluster::unique_name("pv-foreign");
    let unbound = cluster::unique_name("pv-unbound");
    for (name, claim) in [
        (&owned, Some("pando-shop")),
        (&foreign, Some("kube-system")),
        (&unbound, None),
    ] {
        pvs.create(&PostParams::default(), &pv(name, claim))
            .await
            .expect("create pv");
    }

    assert_eq!(
        op(&a, &format!("pv:{owned}")).await.expect("its own PV"),
        owned
    );
    let msg = denied(op(&a, &format!("pv:{foreign}")).await);
    assert!(msg.contains("kube-system"), "{msg}");
    let msg = denied(op(&a, &format!("pv:{unbound}")).await);
    assert!(msg.contains("not bound"), "{msg}");
    // Listing PVs would show every claim's volume: never granted.
    denied(op(&a, "raw:get:/api/v1/persistentvolumes").await);

    for name in [&owned, &foreign, &unbound] {
        pvs.delete(name, &DeleteParams::default())
            .await
            .expect("cleanup");
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_and_a_small_one_is_sent() {
    let (a, _c) = probe::load(GRANTS).await;
    probe::ensure_namespace("pando-probe").await;
    let name = op(&a, "big-body:1000").await.expect("a small body is sent");
    assert!(name.starts_with("big-body-"), "{name}");
    let msg = invalid(op(&a, "big-body:100000").await);
    assert!(msg.contains("65536"), "names the cap: {msg}");
}

#[tokio::test]
async fn a_request_flood_is_throttled_and_none_is_lost() {
    let grants = GRANTS.replace("rate: {qps: 50, burst: 50}", "rate: {qps: 20, burst: 5}");
    let (a, _c) = probe::load(&grants).await;
    let started = Instant::now();
    assert_eq!(
        op(&a, "flood:45").await.expect("every request answered"),
        "45"
    );
    // 5 at once, then 40 more at 20 a second: at least two seconds.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1900),
        "not throttled: {elapsed:?}"
    );

    let report = a.grant_report().expect("a report");
    let rule = report
        .rules
        .iter()
        .find(|r| r.rule.names == ["default"])
        .expect("the rule for namespace default");
    assert_eq!(rule.uses, 45);
}

#[tokio::test]
async fn the_grant_report_names_used_and_unused_rules_and_denials() {
    let (a, _c) = probe::load(GRANTS).await;
    op(&a, "raw:get:/api/v1/nodes").await.expect("nodes");
    denied(op(&a, "secrets:kube-system").await);
    let report = a.grant_report().expect("a report");
    let nodes = report
        .rules
        .iter()
        .find(|r| r.rule.resources == ["nodes"])
        .expect("the nodes rule");
    assert!(nodes.used && nodes.uses == 1, "{nodes:?}");
    let exec = report
        .rules
        .iter()
        .find(|r| r.rule.resources == ["pods/exec"])
        .expect("the exec rule");
    assert!(!exec.used);
    assert!(
        report
            .denials
            .iter()
            .any(|d| d.resource == "secrets" && d.namespace.as_deref() == Some("kube-system")),
        "{:?}",
        report.denials
    );
}

#[tokio::test]
async fn a_guest_waiting_on_the_rate_budget_is_told_of_its_cancellation() {
    let grants = GRANTS.replace("rate: {qps: 50, burst: 50}", "rate: {qps: 1, burst: 1}");
    let (a, _c) = probe::load(&grants).await;
    let cancel = pando_host::CancellationToken::new();
    let ctx = pando_host::CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(30));
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    // Ten requests at one a second: the guest is waiting on the budget when
    // the call is cancelled, is told so, and returns it as its own error
    // within the grace the host gives it.
    let err = a
        .apply(&ctx, &pando_tests::plans::plan("flood:10", &[]))
        .await
        .expect_err("cancelled");
    canceller.await.expect("join");
    assert!(
        matches!(err, CallError::Adapter(AdapterError::Cancelled(_))),
        "{err:?}"
    );
}
