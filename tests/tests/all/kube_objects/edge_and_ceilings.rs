//! Issue 47's escapes at the edge, at the host's ceiling objects and at PersistentVolumes: as
//! in [`super::escapes`], each hostile body through the host with the shipped grants and as
//! `pando` straight to the API server, each refusal naming its rule; where RBAC is the first
//! layer (the ceiling's delete), the policy is shown behind it with a wider role bound.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{ListParams, Patch, PatchParams};

use super::escapes::{create_as, load_shipped, pando, refused_by_both};
use super::*;

/// `pando-edge`, Pando's (labelled as the adapter labels it) and with `pando`'s binding, made
/// if missing; waits out a deletion (the adapter's tests remove it with their last edge).
async fn edge_namespace() -> &'static str {
    const EDGE: &str = "pando-edge";
    let namespaces: Api<Namespace> = Api::all(admin().await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        match namespaces.get_opt(EDGE).await.expect("read") {
            Some(n) if n.metadata.deletion_timestamp.is_none() => break,
            Some(_) => {}
            None => {
                let ns = json!({"metadata": {"name": EDGE,
                    "labels": {"app.kubernetes.io/managed-by": "pando"}}});
                match namespaces
                    .create(
                        &PostParams::default(),
                        &serde_json::from_value(ns).expect("ns"),
                    )
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => panic!("making {EDGE}: {e}"),
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{EDGE} is never usable"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    cluster::bind_adapter(EDGE)
        .await
        .expect("the adapter's binding");
    EDGE
}

#[tokio::test]
async fn the_edge_exposes_only_its_own_pods_and_its_deployments_are_bounded() {
    let (a, _h) = load_shipped().await;
    let edge = edge_namespace().await;
    let suffix = cluster::unique_name("t");
    let edge_labels = json!({"app.kubernetes.io/managed-by": "pando", "pando.dev/edge": suffix});
    let service = |name: &str, selector: &Value, target: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"type": "NodePort", "selector": selector,
                        "ports": [{"name": "http", "port": 80, "targetPort": target}]}})
    };
    let db = json!({"app": "db"});
    refused_by_both::<Service>(
        &a,
        edge,
        &service(&format!("db-{suffix}"), &db, json!("http")),
        (
            "services.exposed-selector",
            "spec.selector[app.kubernetes.io/managed-by]",
        ),
        "services.exposed-selector",
    )
    .await;
    refused_by_both::<Service>(
        &a,
        edge,
        &service(&format!("port-{suffix}"), &edge_labels, json!(5432)),
        ("services.exposed-ports", "spec.ports[0].targetPort"),
        "services.exposed-ports",
    )
    .await;
    // The edge's own Service passes both layers.
    let own = format!("edge-{suffix}");
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{edge}/services"),
            &service(&own, &edge_labels, json!("http")),
        )
        .await,
    );
    let services: Api<Service> = Api::namespaced(pando().await, edge);
    services
        .delete(&own, &DeleteParams::default())
        .await
        .expect("cleanup");
    create_as::<Service>(
        pando().await,
        edge,
        &service(&own, &edge_labels, json!("http")),
    )
    .await
    .expect("the cluster admits the edge's Service");
    services
        .delete(&own, &DeleteParams::default())
        .await
        .expect("cleanup");

    // The edge's Deployment: replicas and resources bounded.
    let deploy = |name: &str, replicas: i64, memory: &str| {
        let mut d = deployment(name);
        d["metadata"]["labels"] = json!({"pando.test/objects": suffix});
        d["spec"]["replicas"] = json!(replicas);
        d["spec"]["template"]["spec"]["containers"][0]["resources"] =
            json!({"limits": {"memory": memory}});
        d
    };
    refused_by_both::<Deployment>(
        &a,
        edge,
        &deploy(&format!("wide-{suffix}"), 1000, "64Mi"),
        ("workloads.replicas", "spec.replicas"),
        "workloads.replicas",
    )
    .await;
    refused_by_both::<Deployment>(
        &a,
        edge,
        &deploy(&format!("big-{suffix}"), 0, "1Ti"),
        (
            "workloads.resources",
            "spec.template.spec.containers[0].resources.limits.memory",
        ),
        "workloads.resources",
    )
    .await;
    let small = format!("small-{suffix}");
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/apis/apps/v1/namespaces/{edge}/deployments"),
            &deploy(&small, 0, "64Mi"),
        )
        .await,
    );
    let deployments: Api<Deployment> = Api::namespaced(admin().await, edge);
    deployments
        .delete(&small, &DeleteParams::default())
        .await
        .expect("cleanup");

    // The pods the Deployment controller makes from a template the admin wrote are the
    // controller's creates, refused by the policy in pando-edge: the ReplicaSet says so.
    let mut hostile = deploy(&format!("ctl-{suffix}"), 1, "64Mi");
    hostile["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "v", "nfs": {"server": "198.18.0.9", "path": "/"}}]);
    let hostile_name = format!("ctl-{suffix}");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(hostile).expect("a deployment"),
        )
        .await
        .expect("the admin may write it");
    let sets: Api<ReplicaSet> = Api::namespaced(admin().await, edge);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let message = loop {
        let list = sets
            .list(&ListParams::default().labels(&format!("app={hostile_name}")))
            .await
            .expect("replica sets");
        let failure = list.items.iter().find_map(|rs| {
            rs.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "ReplicaFailure")
                .and_then(|c| c.message.clone())
        });
        if let Some(m) = failure {
            break m;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ReplicaSet reports its pod refused"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        message.contains("pando-adapter-objects") && message.contains("pods.volumes"),
        "{message}"
    );
    let pods: Api<Pod> = Api::namespaced(admin().await, edge);
    assert!(
        pods.list(&ListParams::default().labels(&format!("app={hostile_name}")))
            .await
            .expect("pods")
            .items
            .is_empty(),
        "no pod was made"
    );
    deployments
        .delete(&hostile_name, &DeleteParams::default())
        .await
        .expect("cleanup");
}

#[tokio::test]
async fn the_ceiling_objects_stay_even_if_rbac_let_pando_delete_or_raise_them() {
    let ns = probe::app_namespace("objceil").await;
    let name = ns.name.clone();
    let admin = admin().await;
    let quota = json!({"metadata": {"name": "pando-ceiling"},
                       "spec": {"hard": {"pods": "10", "count/secrets": "50"}}});
    Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(quota).expect("quota"),
        )
        .await
        .expect("the host's ceiling, as the admin");
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::namespaced(pando().await, &name);
    // RBAC first: the namespace role has no delete on quotas.
    match quotas
        .delete("pando-ceiling", &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(e)) => assert!(e.code == 403 && e.message.contains("cannot delete")),
        other => panic!("RBAC refuses pando deleting its ceiling: {other:?}"),
    }
    // A wider role bound by mistake: the policy still holds.
    let role = json!({"metadata": {"name": "too-wide"}, "rules": [{"apiGroups": [""],
        "resources": ["resourcequotas"], "verbs": ["get", "update", "patch", "delete"]}]});
    Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(role).expect("role"),
        )
        .await
        .expect("a role");
    let binding = json!({"metadata": {"name": "too-wide"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "too-wide"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pando"}]});
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(binding).expect("binding"),
        )
        .await
        .expect("a binding");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let raise = json!({"spec": {"hard": {"pods": "100000"}}});
    loop {
        match quotas
            .patch(
                "pando-ceiling",
                &PatchParams::default(),
                &Patch::Merge(&raise),
            )
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("cannot patch") => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "RBAC never saw the role"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(kube::Error::Api(e)) => {
                assert!(
                    e.message.contains("pando-adapter-objects")
                        && e.message.contains("quotas.ceiling:"),
                    "the policy refuses raising the ceiling: {}",
                    e.message
                );
                break;
            }
            other => panic!("pando raised its ceiling: {other:?}"),
        }
    }
    match quotas
        .delete("pando-ceiling", &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(e)) => assert!(
            e.message.contains("pando-adapter-objects")
                && e.message.contains("quotas.ceiling-kept:"),
            "the policy refuses deleting the ceiling: {}",
            e.message
        ),
        other => panic!("pando deleted its ceiling: {other:?}"),
    }
    // Lowering it is no escape: allowed.
    quotas
        .patch(
            "pando-ceiling",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"hard": {"pods": "5"}}})),
        )
        .await
        .expect("a lower ceiling");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn pando_writes_only_persistent_volumes_claimed_in_its_namespaces() {
    let admin = admin().await;
    let pvs: Api<PersistentVolume> = Api::all(admin.clone());
    let make = |name: String, claim_ns: &str| PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name),
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
            persistent_volume_reclaim_policy: Some("Delete".into()),
            claim_ref: Some(ObjectReference {
                namespace: Some(claim_ns.into()),
                name: Some("data".into()),
                ..ObjectReference::default()
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    };
    let foreign = cluster::unique_name("pv-objforeign");
    let owned = cluster::unique_name("pv-objowned");
    pvs.create(
        &PostParams::default(),
        &make(foreign.clone(), "kube-system"),
    )
    .await
    .expect("a PV");
    pvs.create(&PostParams::default(), &make(owned.clone(), "pando-objpv"))
        .await
        .expect("a PV");
    let as_pando: Api<PersistentVolume> = Api::all(pando().await);
    let retain = json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}});
    let refusal = |r: Result<PersistentVolume, kube::Error>| match r {
        Err(kube::Error::Api(e)) => e.message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refusal(
        as_pando
            .patch(&foreign, &PatchParams::default(), &Patch::Merge(&retain))
            .await,
    );
    assert!(m.contains("persistentvolumes.claimed:"), "{m}");
    match as_pando.delete(&foreign, &DeleteParams::default()).await {
        Err(kube::Error::Api(e)) => {
            assert!(
                e.message.contains("persistentvolumes.claimed:"),
                "{}",
                e.message
            )
        }
        other => panic!("pando deleted a volume of kube-system's: {other:?}"),
    }
    as_pando
        .patch(&owned, &PatchParams::default(), &Patch::Merge(&retain))
        .await
        .expect("the reclaim policy of a volume claimed in a pando-* namespace");
    let m = refusal(
        as_pando
            .patch(
                &owned,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"claimRef": {"namespace": "pando-mine"}}})),
            )
            .await,
    );
    assert!(m.contains("persistentvolumes.reclaim-policy:"), "{m}");
    for name in [&foreign, &owned] {
        pvs.delete(name, &DeleteParams::default())
            .await
            .expect("cleanup");
    }
}
