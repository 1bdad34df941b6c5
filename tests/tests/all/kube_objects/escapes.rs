//! Issue 47's escapes, each shown at both layers against the real API server: the body a
//! hostile adapter would send, through the host with the shipped grants
//! (`deploy/grants/kubernetes.yaml`), refused by the host naming its object rule; and the same
//! body sent as `pando` straight to the API server, refused by the admission policy
//! (`deploy/kubernetes/admission-policy.yaml`) naming its rule, not by RBAC (which allows
//! `pando` every one of these verbs there). The allowed variant of each passes both layers.
//! Where a controller makes the object from the adapter's template (a Deployment's pods, a
//! pod's ephemeral claims), the policy's refusal of the controller is shown too. The edge, the
//! host's ceiling objects and PersistentVolumes are in `edge_and_ceilings.rs`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod, Secret};
use kube::api::{ApiResource, DynamicObject, ListParams};
use pando_tests::kubernetes_adapter as ka;

use super::*;

/// The probe with the shipped grants, as `pando`: what a hostile adapter has.
pub(super) async fn load_shipped() -> (Adapter, Host) {
    probe::load_as_pando(&components::kube_probe(), ka::grants(), "{}").await
}

pub(super) async fn pando() -> kube::Client {
    cluster::client(Identity::Pando).await.expect("pando")
}

/// Creates `body` (a `K`) in `ns` as `client`'s identity, exactly as given; the API server's
/// refusal (status, message) if any.
pub(super) async fn create_as<K>(
    client: kube::Client,
    ns: &str,
    body: &Value,
) -> Result<(), (u16, String)>
where
    K: kube::Resource<DynamicType = ()>,
{
    let api: Api<DynamicObject> = Api::namespaced_with(client, ns, &ApiResource::erase::<K>(&()));
    let obj: DynamicObject = serde_json::from_value(body.clone()).expect("an object");
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) => Err((e.code, e.message)),
        Err(e) => panic!("the API server did not answer: {e}"),
    }
}

/// Asserts the admission policy (not RBAC) refused `pando`, naming `rule`.
pub(super) fn policy_refused(result: Result<(), (u16, String)>, rule: &str) {
    let Err((code, m)) = result else {
        panic!("the cluster let pando write what {rule} refuses");
    };
    assert!(
        code != 403 || !m.contains("cannot"),
        "RBAC, not the policy, refused it ({rule}): {m}"
    );
    assert!(
        m.contains("pando-adapter-objects") && m.contains(&format!("{rule}:")),
        "the admission policy names {rule}: {m}"
    );
}

/// Sends `body` to `path` (`…/pods`) through the host, then as `pando` straight to the API
/// server: the host refuses it by `host_rule` naming `field`, the policy by `policy_rule`.
pub(super) async fn refused_by_both<K>(
    a: &Adapter,
    ns: &str,
    body: &Value,
    (host_rule, field): (&str, &str),
    policy_rule: &str,
) where
    K: kube::Resource<DynamicType = ()>,
{
    let plural = K::plural(&());
    let path = format!("/{}/namespaces/{ns}/{plural}", api_prefix::<K>());
    refused(send(a, "post", "json", &path, body).await, host_rule, field);
    policy_refused(create_as::<K>(pando().await, ns, body).await, policy_rule);
}

/// The allowed variant of a refused pod, `spec` merged into the adapter's shape: written through
/// the host (as `fine`), and admitted when sent as `pando` straight to the API server (as
/// `fine-direct`); `admits` says what the cluster admits, for the failure.
async fn allowed_by_both(a: &Adapter, ns: &str, spec: Value, admits: &str) {
    written(
        send(
            a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{ns}/pods"),
            &app_pod("fine", spec.clone()),
        )
        .await,
    );
    create_as::<Pod>(pando().await, ns, &app_pod("fine-direct", spec))
        .await
        .unwrap_or_else(|e| panic!("{admits}: {e:?}"));
}

fn api_prefix<K: kube::Resource<DynamicType = ()>>() -> String {
    let group = K::group(&());
    let version = K::version(&());
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A pod of the adapter's shape (no token, a memory limit), `spec` merged in.
fn app_pod(name: &str, extra: Value) -> Value {
    let mut p = pod(name, extra);
    for c in p["spec"]["containers"].as_array_mut().into_iter().flatten() {
        if c.get("resources").is_none() {
            c["resources"] = json!({"limits": {"memory": "64Mi"}});
        }
    }
    p
}

fn container(extra: Value) -> Value {
    let mut c =
        json!({"name": "c", "image": "busybox:1.36", "resources": {"limits": {"memory": "64Mi"}}});
    if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
        c.extend(e);
    }
    c
}

fn claim(name: &str, spec: Value) -> Value {
    let mut s =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    if let (Value::Object(s), Value::Object(e)) = (&mut s, spec) {
        s.extend(e);
    }
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": s})
}

#[tokio::test]
async fn volumes_the_node_mounts_are_refused_by_the_host_and_the_cluster() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objvol").await;
    let name = ns.name.clone();
    for (i, (volume, field)) in [
        (
            json!({"name": "v", "nfs": {"server": "198.18.0.9", "path": "/exports"}}),
            "spec.volumes[0].nfs",
        ),
        (
            json!({"name": "v", "iscsi": {"targetPortal": "198.18.0.9:3260",
                    "iqn": "iqn.2001-04.com.example:storage", "lun": 0}}),
            "spec.volumes[0].iscsi",
        ),
        (
            json!({"name": "v", "fc": {"targetWWNs": ["500a0982991b8dc5"], "lun": 0}}),
            "spec.volumes[0].fc",
        ),
        (
            json!({"name": "v", "csi": {"driver": "inline.example.com"}}),
            "spec.volumes[0].csi",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        refused_by_both::<Pod>(
            &a,
            &name,
            &app_pod(&format!("mount-{i}"), json!({"volumes": [volume]})),
            ("pods.volumes", field),
            "pods.volumes",
        )
        .await;
    }
    // restricted's types pass both.
    let fine = json!({"volumes": [{"name": "a", "emptyDir": {}},
                                  {"name": "b", "projected": {"sources": [{"downwardAPI": {"items": [
                                      {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]});
    allowed_by_both(
        &a,
        &name,
        fine,
        "the cluster admits restricted's volume types",
    )
    .await;
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn claims_and_claim_templates_name_a_granted_class_and_no_volume() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objclaim").await;
    let name = ns.name.clone();
    for (body, host, policy) in [
        (
            claim("no-class", json!({"storageClassName": ""})),
            ("claims.storage-class", "spec.storageClassName"),
            "claims.storage-class",
        ),
        (
            claim("static", json!({"storageClassName": "local-static"})),
            ("claims.storage-class", "spec.storageClassName"),
            "claims.storage-class",
        ),
        (
            claim(
                "huge",
                json!({"storageClassName": "standard",
                                 "resources": {"requests": {"storage": "2Ti"}}}),
            ),
            ("claims.size", "spec.resources.requests.storage"),
            "claims.size",
        ),
    ] {
        refused_by_both::<PersistentVolumeClaim>(&a, &name, &body, host, policy).await;
    }
    // A pod's claim template, as the ephemeral-volume controller would make it.
    let template = |spec: Value| {
        app_pod(
            "scratch",
            json!({"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "spec": spec}}}]}),
        )
    };
    let base = json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                      "resources": {"requests": {"storage": "1Gi"}}});
    let with = |extra: Value| {
        let mut s = base.clone();
        if let (Value::Object(s), Value::Object(e)) = (&mut s, extra) {
            s.extend(e);
        }
        s
    };
    let at = "spec.volumes[0].ephemeral.volumeClaimTemplate.spec";
    for (spec, rule, field) in [
        (
            with(json!({"volumeName": "pv-of-another"})),
            "claims.binding",
            "volumeName",
        ),
        (
            with(json!({"selector": {"matchLabels": {"tier": "db"}}})),
            "claims.binding",
            "selector",
        ),
        (
            with(json!({"storageClassName": ""})),
            "claims.storage-class",
            "storageClassName",
        ),
    ] {
        refused_by_both::<Pod>(
            &a,
            &name,
            &template(spec),
            (rule, &format!("{at}.{field}")),
            rule,
        )
        .await;
    }
    // Granted: a class of the list, under the ceiling, in a claim and a template.
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/persistentvolumeclaims"),
            &claim("data", json!({"storageClassName": "standard"})),
        )
        .await,
    );
    create_as::<Pod>(pando().await, &name, &template(base.clone()))
        .await
        .expect("the cluster admits a granted template");

    // The claim the controller makes from a template the admin wrote (the policy does not
    // bind the admin) is the controller's create: refused there by the policy, by namespace.
    let pods: Api<Pod> = Api::namespaced(admin().await, &name);
    let mut stolen = template(with(json!({"volumeName": "pv-of-another"})));
    stolen["metadata"]["name"] = json!("by-controller");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(stolen).expect("a pod"),
    )
    .await
    .expect("the admin may write the template");
    let events: Api<Event> = Api::namespaced(admin().await, &name);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let list = events
            .list(&ListParams::default().fields("involvedObject.name=by-controller"))
            .await
            .expect("events");
        if list.items.iter().any(|e| {
            e.message.as_deref().is_some_and(|m| {
                m.contains("pando-adapter-objects") && m.contains("claims.binding")
            })
        }) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ephemeral-volume controller's claim is refused by claims.binding: {:?}",
            list.items
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(admin().await, &name);
    assert!(
        claims
            .get_opt("by-controller-scratch")
            .await
            .expect("read")
            .is_none(),
        "no claim was made from the hostile template"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn service_account_token_secrets_are_refused_by_the_host_and_the_cluster() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objsecret").await;
    let token = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "minted", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token"});
    refused_by_both::<Secret>(
        &a,
        &ns.name,
        &token,
        ("secrets.service-account-token", "type"),
        "secrets.service-account-token",
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(admin().await, &ns.name);
    assert!(secrets.get_opt("minted").await.expect("read").is_none());
    let opaque = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                        "type": "Opaque", "stringData": {"k": "v"}});
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{}/secrets", ns.name),
            &opaque,
        )
        .await,
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn probe_hosts_pull_policy_and_security_contexts_are_refused_by_both_layers() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objctx").await;
    let name = ns.name.clone();
    let one = |c: Value| json!({"containers": [container(c)]});
    let cases: Vec<(Value, (&str, &str), &str)> = vec![
        (
            one(json!({"readinessProbe": {"httpGet": {"host": "198.18.0.1", "port": 10250}}})),
            (
                "pods.baseline",
                "spec.containers[0].readinessProbe.httpGet.host",
            ),
            "pods.probe-host",
        ),
        (
            one(json!({"livenessProbe": {"tcpSocket": {"host": "198.18.0.1", "port": 2379}}})),
            (
                "pods.baseline",
                "spec.containers[0].livenessProbe.tcpSocket.host",
            ),
            "pods.probe-host",
        ),
        (
            one(
                json!({"lifecycle": {"postStart": {"httpGet": {"host": "198.18.0.1", "port": 80}}}}),
            ),
            (
                "pods.baseline",
                "spec.containers[0].lifecycle.postStart.httpGet.host",
            ),
            "pods.probe-host",
        ),
        (
            one(json!({"imagePullPolicy": "Never"})),
            (
                "pods.image-pull-policy",
                "spec.containers[0].imagePullPolicy",
            ),
            "pods.image-pull-policy",
        ),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            ("pods.baseline", "spec.securityContext.seccompProfile.type"),
            "pods.seccomp",
        ),
        (
            one(json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})),
            (
                "pods.baseline",
                "spec.containers[0].securityContext.appArmorProfile.type",
            ),
            "pods.apparmor",
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"user": "system_u"}}}),
            ("pods.baseline", "spec.securityContext.seLinuxOptions.user"),
            "pods.selinux",
        ),
    ];
    for (i, (spec, host, policy)) in cases.into_iter().enumerate() {
        refused_by_both::<Pod>(&a, &name, &app_pod(&format!("ctx-{i}"), spec), host, policy).await;
    }
    // A Windows host process: the host refuses it; the API server's own validation refuses it
    // before admission unless the pod also asks for the host's network, which the policy's
    // `pods.host-namespaces` refuses (`pods.host-process` is the rule behind both).
    let host_process = json!({"securityContext": {"windowsOptions": {"hostProcess": true}}});
    refused(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/pods"),
            &app_pod("host-process", host_process.clone()),
        )
        .await,
        "pods.baseline",
        "spec.securityContext.windowsOptions.hostProcess",
    );
    let mut with_network = host_process;
    with_network["hostNetwork"] = json!(true);
    policy_refused(
        create_as::<Pod>(pando().await, &name, &app_pod("host-process", with_network)).await,
        "pods.host-namespaces",
    );
    // The allowed variants: a probe of the pod itself, IfNotPresent, RuntimeDefault.
    let fine = json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                      "containers": [container(json!({"imagePullPolicy": "IfNotPresent",
                          "readinessProbe": {"tcpSocket": {"port": 8080}}}))]});
    allowed_by_both(&a, &name, fine, "the cluster admits the allowed variants").await;
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn placement_tokens_and_namespace_names_are_refused_by_both_layers() {
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::api::node::v1::RuntimeClass;

    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objplace").await;
    let name = ns.name.clone();
    // A runtime class the cluster has but the grants and the policy do not list (a class that
    // does not exist is refused by the RuntimeClass admission before the policy sees it).
    let unlisted = format!("{name}-runc");
    let classes: Api<RuntimeClass> = Api::all(admin().await);
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": unlisted}, "handler": "runc"}),
            )
            .expect("a runtime class"),
        )
        .await
        .expect("the admin makes a runtime class");
    let cases: Vec<(Value, (&str, &str), &str)> = vec![
        (
            json!({"runtimeClassName": unlisted}),
            ("pods.runtime-classes", "spec.runtimeClassName"),
            "pods.runtime-classes",
        ),
        // The cluster's own critical class: it would preempt the cluster's pods.
        (
            json!({"priorityClassName": "system-cluster-critical"}),
            ("pods.priority-classes", "spec.priorityClassName"),
            "pods.priority-classes",
        ),
        // Tolerating every taint: the control plane's nodes and every dedicated node.
        (
            json!({"tolerations": [{"operator": "Exists"}]}),
            ("pods.tolerations", "spec.tolerations[0]"),
            "pods.tolerations",
        ),
        // Staying on a dead node for good.
        (
            json!({"tolerations": [{"key": "node.kubernetes.io/unreachable",
                                    "operator": "Exists", "effect": "NoExecute"}]}),
            ("pods.tolerations", "spec.tolerations[0]"),
            "pods.tolerations",
        ),
        (
            json!({"automountServiceAccountToken": true}),
            (
                "pods.service-account-token",
                "spec.automountServiceAccountToken",
            ),
            "pods.service-account-token",
        ),
        (
            json!({"volumes": [{"name": "t", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "audience": "api"}}]}}]}),
            (
                "pods.service-account-token",
                "spec.volumes[0].projected.sources[0].serviceAccountToken",
            ),
            "pods.service-account-token",
        ),
    ];
    for (i, (spec, host, policy)) in cases.into_iter().enumerate() {
        refused_by_both::<Pod>(
            &a,
            &name,
            &app_pod(&format!("place-{i}"), spec),
            host,
            policy,
        )
        .await;
    }
    // Unset, the token is mounted: the ServiceAccount admission adds its volume, and the
    // policy refuses the result (the host refuses unset too).
    let mut unset = app_pod("token-unset", json!({}));
    if let Some(spec) = unset["spec"].as_object_mut() {
        spec.remove("automountServiceAccountToken");
    }
    refused_by_both::<Pod>(
        &a,
        &name,
        &unset,
        (
            "pods.service-account-token",
            "spec.automountServiceAccountToken",
        ),
        "pods.service-account-token",
    )
    .await;
    // The allowed variant: the volume helper's toleration of a cordoned node.
    let fine = json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                       "operator": "Exists", "effect": "NoSchedule"}]});
    allowed_by_both(&a, &name, fine, "the cluster admits the granted toleration").await;

    // A namespace outside Pando's: the grants name only `pando-*` (the host's denial), and
    // RBAC's cluster-wide create cannot name it (the policy's `namespaces.name`).
    let outside = format!("kube-{name}");
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": outside}});
    match send(&a, "post", "json", "/api/v1/namespaces", &body).await {
        Err(CallError::Adapter(AdapterError::Denied(m))) => {
            assert!(m.contains(&outside), "the denial names the namespace: {m}")
        }
        other => panic!("the host let the adapter make namespace {outside}: {other:?}"),
    }
    let namespaces: Api<Namespace> = Api::all(pando().await);
    let direct = match namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(body).expect("a namespace"),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) => Err((e.code, e.message)),
        Err(e) => panic!("the API server did not answer: {e}"),
    };
    let leaked = direct.is_ok();
    if leaked {
        let _ = Api::<Namespace>::all(admin().await)
            .delete(&outside, &Default::default())
            .await;
    }
    policy_refused(direct, "namespaces.name");

    classes
        .delete(&unlisted, &Default::default())
        .await
        .expect("cleanup");
    ns.delete().await.expect("cleanup");
}
