//! The object rules on namespaces (the Pod Security labels are the host's),
//! RoleBindings (only the configured role, to the configured subjects) and
//! claims and volumes.

use super::*;

#[tokio::test]
async fn the_pod_security_labels_are_the_hosts_and_namespaces_take_only_allowed_labels() {
    let (a, _h) = load().await;
    let namespaces: Api<Namespace> = Api::all(admin().await);
    let ns = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": name, "labels": labels}})
    };
    let refused_name = cluster::unique_name("pando-objns");
    refused(
        send(
            &a,
            "post",
            "json",
            "/api/v1/namespaces",
            &ns(
                &refused_name,
                json!({"pod-security.kubernetes.io/enforce": "privileged"}),
            ),
        )
        .await,
        "namespaces.pod-security",
        "pod-security.kubernetes.io/enforce",
    );
    refused(
        send(
            &a,
            "post",
            "json",
            "/api/v1/namespaces",
            &ns(&refused_name, json!({"team": "x"})),
        )
        .await,
        "namespaces.labels",
        "metadata.labels[team]",
    );
    assert!(
        namespaces
            .get_opt(&refused_name)
            .await
            .expect("read")
            .is_none()
    );

    let name = cluster::unique_name("pando-objns");
    written(
        send(
            &a,
            "post",
            "json",
            "/api/v1/namespaces",
            &ns(&name, json!({"pando.dev/app": "x"})),
        )
        .await,
    );
    let enforce = |n: &Namespace| {
        n.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-security.kubernetes.io/enforce"))
            .cloned()
    };
    let live = namespaces.get(&name).await.expect("created");
    assert_eq!(
        enforce(&live).as_deref(),
        Some("baseline"),
        "the host set the profile"
    );

    let path = format!("/api/v1/namespaces/{name}");
    let privileged =
        json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}});
    let apply = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                       "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}});
    let replace = json!([{"op": "replace", "path": "/metadata/labels/pod-security.kubernetes.io~1enforce", "value": "privileged"}]);
    let remove =
        json!([{"op": "remove", "path": "/metadata/labels/pod-security.kubernetes.io~1enforce"}]);
    let warn = json!({"metadata": {"labels": {"pod-security.kubernetes.io/warn": "privileged"}}});
    for (ty, body) in [
        ("merge", &privileged),
        ("strategic", &privileged),
        ("apply", &apply),
        ("json-patch", &replace),
        ("json-patch", &remove),
        ("merge", &warn),
    ] {
        refused(
            send(&a, "patch", ty, &path, body).await,
            "namespaces.pod-security",
            "pod-security.kubernetes.io/",
        );
    }
    let mut updated =
        serde_json::to_value(namespaces.get(&name).await.expect("read")).expect("json");
    updated["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = json!("privileged");
    refused(
        send(&a, "put", "json", &path, &updated).await,
        "namespaces.pod-security",
        "enforce",
    );
    // An allowed label may be added; the profile stays.
    written(
        send(
            &a,
            "patch",
            "merge",
            &path,
            &json!({"metadata": {"labels": {"pando.dev/more": "y"}}}),
        )
        .await,
    );
    let live = namespaces.get(&name).await.expect("read");
    assert_eq!(enforce(&live).as_deref(), Some("baseline"));
    assert_eq!(
        live.metadata
            .labels
            .unwrap_or_default()
            .get("pando.dev/more")
            .map(String::as_str),
        Some("y")
    );
    namespaces
        .delete(&name, &DeleteParams::default())
        .await
        .expect("cleanup");
}

#[tokio::test]
async fn role_bindings_bind_only_the_configured_role_to_the_configured_subjects() {
    let (a, _h) = load().await;
    let ns = namespace("pando-objrb").await;
    let path = format!(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings",
        ns.name
    );
    let binding = |name: &str, role: &str, subjects: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects,
        })
    };
    let pando = json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"}]);
    let everyone = json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}]);
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("admin", "cluster-admin", pando.clone()),
        )
        .await,
        "rolebindings.role",
        "roleRef.name",
    );
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("all", "pando-app", everyone.clone()),
        )
        .await,
        "rolebindings.subjects",
        "subjects[0]",
    );
    // Each subject only to its own role: the adapter's user is never Pando's role's, nor
    // Pando's ServiceAccount the adapter's.
    let adapter =
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "pando"}]);
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("crossed", "pando-app", adapter.clone()),
        )
        .await,
        "rolebindings.subjects",
        "subjects[0]",
    );
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("crossed", "pando-adapter-namespace", pando.clone()),
        )
        .await,
        "rolebindings.subjects",
        "subjects[0]",
    );
    written(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("pando-adapter", "pando-adapter-namespace", adapter),
        )
        .await,
    );
    written(
        send(
            &a,
            "post",
            "json",
            &path,
            &binding("pando-app", "pando-app", pando),
        )
        .await,
    );
    let ops = json!([{"op": "add", "path": "/subjects/-", "value": everyone[0]}]);
    refused(
        send(
            &a,
            "patch",
            "json-patch",
            &format!("{path}/pando-app"),
            &ops,
        )
        .await,
        "rolebindings.subjects",
        "subjects[1]",
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn claims_name_no_volume_and_a_volume_changes_only_its_reclaim_policy() {
    let (a, _h) = load().await;
    let ns = namespace("pando-objpvc").await;
    let admin = admin().await;
    let pvs: Api<PersistentVolume> = Api::all(admin.clone());
    let foreign = cluster::unique_name("pv-someone-elses");
    let owned = cluster::unique_name("pv-owned");
    for (name, claim_ns) in [(&foreign, "kube-system"), (&owned, ns.name.as_str())] {
        let pv = PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.clone()),
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
        pvs.create(&PostParams::default(), &pv).await.expect("a PV");
    }
    let path = format!("/api/v1/namespaces/{}/persistentvolumeclaims", ns.name);
    let claim = |name: &str, extra: Value| {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                              "storageClassName": "pando-objects"});
        if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
            s.extend(e);
        }
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec})
    };
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &claim("steal", json!({"volumeName": foreign})),
        )
        .await,
        "claims.binding",
        "spec.volumeName",
    );
    refused(
        send(
            &a,
            "post",
            "json",
            &path,
            &claim("pick", json!({"selector": {"matchLabels": {"a": "b"}}})),
        )
        .await,
        "claims.binding",
        "spec.selector",
    );
    written(send(&a, "post", "json", &path, &claim("plain", json!({}))).await);
    refused(
        send(
            &a,
            "patch",
            "merge",
            &format!("{path}/plain"),
            &json!({"spec": {"volumeName": foreign}}),
        )
        .await,
        "claims.binding",
        "spec.volumeName",
    );

    // The adapter's own write: the reclaim policy, as a merge patch.
    let pv_path = format!("/api/v1/persistentvolumes/{owned}");
    written(
        send(
            &a,
            "patch",
            "merge",
            &pv_path,
            &json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}}),
        )
        .await,
    );
    let live = pvs.get(&owned).await.expect("pv");
    assert_eq!(
        live.spec
            .and_then(|s| s.persistent_volume_reclaim_policy)
            .as_deref(),
        Some("Retain")
    );
    refused(
        send(
            &a,
            "patch",
            "merge",
            &pv_path,
            &json!({"spec": {"claimRef": {"namespace": "pando-mine"}}}),
        )
        .await,
        "persistentvolumes.reclaim-policy",
        "spec.claimRef.namespace",
    );
    refused(
        send(
            &a,
            "patch",
            "json-patch",
            &pv_path,
            &json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
        )
        .await,
        "persistentvolumes.reclaim-policy",
        "metadata.labels",
    );
    refused(
        send(
            &a,
            "patch",
            "merge",
            &pv_path,
            &json!({"spec": {"persistentVolumeReclaimPolicy": "Recycle"}}),
        )
        .await,
        "persistentvolumes.reclaim-policy",
        "Recycle",
    );

    for name in [&foreign, &owned] {
        pvs.delete(name, &DeleteParams::default())
            .await
            .expect("cleanup");
    }
    ns.delete().await.expect("cleanup");
}
