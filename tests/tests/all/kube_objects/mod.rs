//! The object rules (issue 19), against the real API server: the bodies a
//! hostile adapter would send, through the kube-probe's raw `send`, are
//! refused with the rule's name, as creates and as every patch type onto
//! an allowed object; what is allowed is still written, and a checked
//! patch still lands.
//!
//! The probe reaches the cluster as the *admin* identity here, so that
//! nothing but the host's object rules stands between it and the cluster:
//! every refusal below is the host's (the test namespaces carry no Pod
//! Security labels, so the API server itself would admit a privileged pod).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, Namespace, ObjectReference, PersistentVolume, PersistentVolumeSpec,
    ServiceAccount,
};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use pando_host::types::Error as AdapterError;
use pando_host::{Adapter, CallError, Grants, Host, LoadOptions};
use pando_tests::cluster::{self, Identity, TestNamespace};
use pando_tests::{components, probe};
use serde_json::{Value, json};

mod edge_and_ceilings;
mod escapes;
mod namespaces_and_bindings;

const GRANTS: &str = r#"
kubernetes:
  rate: {qps: 100, burst: 100}
  rules:
  - verbs: [get, list, create, update, patch, delete]
    resources: [pods, services, persistentvolumeclaims, apps/deployments, rbac.authorization.k8s.io/rolebindings]
    namespaces: ["pando-*"]
  - verbs: [create, get, update, patch, delete]
    resources: [namespaces]
    cluster: true
    names: ["pando-*"]
  - verbs: [get, patch, update]
    resources: [persistentvolumes]
    cluster: true
  objects:
    pods:
    - namespaces: ["pando-strict-*"]
      profile: restricted
    - namespaces: ["*"]
      runtime_classes: [gvisor]
    services:
    - namespaces: ["pando-objedge-*"]
      types: [NodePort]
    namespaces:
      labels: ["pando.dev/*"]
    role_bindings:
    - role: pando-app
      subjects:
      - {kind: ServiceAccount, name: pando, namespace: pando-system}
    - role: pando-adapter-namespace
      subjects:
      - {kind: User, name: pando}
    claims:
      storage_classes: [pando-objects]
"#;

/// The probe with [`GRANTS`], reaching the cluster as the admin.
async fn load() -> (Adapter, Host) {
    let host = Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host builds");
    let client = cluster::client(Identity::Admin).await.expect("admin");
    let adapter = host
        .load_file(
            &components::kube_probe(),
            LoadOptions {
                grants: Grants::from_text("kube_objects grants", GRANTS).expect("grants"),
                config: "{}".into(),
                kubernetes: Some(client),
                ..LoadOptions::default()
            },
        )
        .await
        .expect("the probe loads");
    (adapter, host)
}

async fn admin() -> kube::Client {
    cluster::client(Identity::Admin).await.expect("admin")
}

async fn namespace(prefix: &str) -> TestNamespace {
    cluster::create_test_namespace(&admin().await, prefix)
        .await
        .expect("a test namespace")
}

/// Sends `body` as `method` (`post`, `put`, `patch`) of type `ty` (`json`,
/// `merge`, `strategic`, `apply`, `json-patch`) to `path`.
async fn send(
    a: &Adapter,
    method: &str,
    ty: &str,
    path: &str,
    body: &Value,
) -> Result<String, CallError> {
    probe::op(a, &format!("body:{method}:{ty}:{path}\n{body}")).await
}

/// Asserts the write was refused by object rule `rule`, naming `field`.
fn refused(result: Result<String, CallError>, rule: &str, field: &str) -> String {
    match result {
        Err(CallError::Adapter(AdapterError::Denied(m))) => {
            assert!(
                m.contains(&format!("object rule `{rule}`")),
                "names the rule {rule}: {m}"
            );
            assert!(m.contains(field), "names the field {field}: {m}");
            m
        }
        other => panic!("expected object rule {rule} to refuse it, got {other:?}"),
    }
}

fn written(result: Result<String, CallError>) -> Value {
    let location = result.expect("written");
    let (status, body) = location.split_once(':').expect("status:body");
    assert!(status.starts_with('2'), "{location}");
    serde_json::from_str(body).expect("the object")
}

/// A pod that meets baseline and the host's rules, with `spec` merged in.
fn pod(name: &str, extra: Value) -> Value {
    let mut spec = json!({
        "automountServiceAccountToken": false,
        "containers": [{"name": "c", "image": "busybox:1.36"}],
    });
    if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
        s.extend(e);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn hostile_pods_are_refused_and_a_plain_one_is_created() {
    let (a, _h) = load().await;
    let ns = namespace("pando-objpods").await;
    let sa: Api<ServiceAccount> = Api::namespaced(admin().await, &ns.name);
    sa.create(
        &PostParams::default(),
        &ServiceAccount {
            metadata: ObjectMeta {
                name: Some("builder".into()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        },
    )
    .await
    .expect("a service account");
    let path = format!("/api/v1/namespaces/{}/pods", ns.name);
    let privileged = json!({"containers": [{"name": "c", "image": "busybox:1.36",
                                             "securityContext": {"privileged": true}}]});
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            privileged,
            "pods.baseline",
            "spec.containers[0].securityContext.privileged is true",
        ),
        (json!({"hostPID": true}), "pods.baseline", "spec.hostPID"),
        (
            json!({"hostNetwork": true}),
            "pods.baseline",
            "spec.hostNetwork",
        ),
        (
            json!({"nodeName": "kwok-node-0", "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            "pods.baseline",
            "spec.volumes[0].hostPath",
        ),
        (
            json!({"nodeName": "kwok-node-0"}),
            "pods.node-name",
            "spec.nodeName",
        ),
        (
            json!({"initContainers": [{"name": "i", "image": "busybox:1.36",
                                    "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}),
            "pods.baseline",
            "spec.initContainers[0].securityContext.capabilities.add[0]",
        ),
        (
            json!({"automountServiceAccountToken": null}),
            "pods.service-account-token",
            "automountServiceAccountToken",
        ),
        (
            json!({"serviceAccountName": "builder"}),
            "pods.service-accounts",
            "spec.serviceAccountName",
        ),
        (
            json!({"tolerations": [{"operator": "Exists"}]}),
            "pods.tolerations",
            "spec.tolerations[0]",
        ),
        (
            json!({"runtimeClassName": "runc-unsandboxed"}),
            "pods.runtime-classes",
            "spec.runtimeClassName",
        ),
    ];
    for (i, (extra, rule, field)) in cases.into_iter().enumerate() {
        let name = format!("hostile-{i}");
        refused(
            send(&a, "post", "json", &path, &pod(&name, extra)).await,
            rule,
            field,
        );
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(admin().await, &ns.name);
        assert!(
            pods.get_opt(&name).await.expect("read").is_none(),
            "{name} was not created"
        );
    }
    let created = written(send(&a, "post", "json", &path, &pod("plain", json!({}))).await);
    assert_eq!(created["metadata"]["name"], "plain");

    // A patch of the running pod that would tolerate every taint (a pod's
    // tolerations may only be added to).
    let add =
        json!([{"op": "add", "path": "/spec/tolerations/-", "value": {"operator": "Exists"}}]);
    refused(
        send(&a, "patch", "json-patch", &format!("{path}/plain"), &add).await,
        "pods.tolerations",
        "spec.tolerations",
    );

    // Restricted where a rule says so.
    let strict = namespace("pando-strict").await;
    let strict_path = format!("/api/v1/namespaces/{}/pods", strict.name);
    refused(
        send(&a, "post", "json", &strict_path, &pod("plain", json!({}))).await,
        "pods.restricted",
        "allowPrivilegeEscalation",
    );
    let hardened = pod(
        "hardened",
        json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
               "containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {
                   "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}),
    );
    written(send(&a, "post", "json", &strict_path, &hardened).await);

    let report = a.grant_report().expect("a report");
    let count = |rule: &str| {
        report
            .object_denials
            .iter()
            .find(|d| d.rule == rule)
            .map_or(0, |d| d.count)
    };
    assert_eq!(count("pods.baseline"), 5, "{:?}", report.object_denials);
    assert_eq!(count("pods.restricted"), 1);
    assert_eq!(count("pods.node-name"), 1);
    strict.delete().await.expect("cleanup");
    ns.delete().await.expect("cleanup");
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"automountServiceAccountToken": false,
                         "containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    })
}

#[tokio::test]
async fn no_patch_type_smuggles_in_what_a_create_would_be_refused() {
    let (a, _h) = load().await;
    let ns = namespace("pando-objpatch").await;
    let path = format!("/apis/apps/v1/namespaces/{}/deployments", ns.name);
    let hostile = {
        let mut d = deployment("hostile");
        d["spec"]["template"]["spec"]["hostPID"] = json!(true);
        d
    };
    refused(
        send(&a, "post", "json", &path, &hostile).await,
        "pods.baseline",
        "spec.template.spec.hostPID",
    );
    written(send(&a, "post", "json", &path, &deployment("web")).await);
    let web = format!("{path}/web");

    let smuggled = json!({"spec": {"template": {"spec": {"hostPID": true}}}});
    let apply = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"template": {"spec": {"hostPID": true}}}});
    let ops = json!([{"op": "add", "path": "/spec/template/spec/hostPID", "value": true}]);
    for (ty, body) in [
        ("merge", &smuggled),
        ("strategic", &smuggled),
        ("json-patch", &ops),
        ("apply", &apply),
    ] {
        refused(
            send(&a, "patch", ty, &web, body).await,
            "pods.baseline",
            "spec.template.spec.hostPID",
        );
    }
    // And as an update of the whole object.
    let mut replaced = deployment("web");
    replaced["spec"]["template"]["spec"]["containers"][0]["securityContext"] =
        json!({"privileged": true});
    refused(
        send(&a, "put", "json", &web, &replaced).await,
        "pods.baseline",
        "spec.template.spec.containers[0].securityContext.privileged",
    );
    let deployments: Api<Deployment> = Api::namespaced(admin().await, &ns.name);
    let live = deployments.get("web").await.expect("web");
    let spec = live.spec.and_then(|s| s.template.spec).expect("template");
    assert_eq!(spec.host_pid, None, "nothing was written");

    // Allowed patches of every type land, conditioned on the checked version.
    written(
        send(
            &a,
            "patch",
            "merge",
            &web,
            &json!({"spec": {"replicas": 2}}),
        )
        .await,
    );
    written(
        send(
            &a,
            "patch",
            "strategic",
            &web,
            &json!({"spec": {"replicas": 3}}),
        )
        .await,
    );
    written(
        send(
            &a,
            "patch",
            "json-patch",
            &web,
            &json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
        )
        .await,
    );
    let apply_ok = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web",
                          "annotations": {"pando.dev/applied": "yes"}}});
    let applied = written(send(&a, "patch", "apply", &web, &apply_ok).await);
    assert_eq!(
        applied["metadata"]["annotations"]["pando.dev/applied"],
        "yes"
    );
    let live = deployments.get("web").await.expect("web");
    assert_eq!(live.spec.and_then(|s| s.replicas), Some(4));
    assert!(
        live.metadata
            .managed_fields
            .unwrap_or_default()
            .iter()
            .any(|m| m.manager.as_deref() == Some("kube-probe")
                && m.operation.as_deref() == Some("Apply")),
        "the apply kept its field ownership"
    );
    // A patch conditioned on a stale version is the API server's conflict.
    let stale = json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 5}});
    match send(&a, "patch", "merge", &web, &stale).await {
        Err(CallError::Adapter(AdapterError::Conflict(_))) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    // So is a JSON patch whose result names a version the object no longer
    // has: the very form the host conditions JSON patches with, so an
    // object that moves on between the dry run and the write (the
    // deployment controller writing status) is a 409 the host retries, not
    // a 422 the adapter would read as its own mistake.
    let stale_ops = json!([
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "add", "path": "/metadata/resourceVersion", "value": "1"},
    ]);
    match send(&a, "patch", "json-patch", &web, &stale_ops).await {
        Err(CallError::Adapter(AdapterError::Conflict(_))) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    // A server-side apply that would create is refused (nothing to
    // condition it on).
    let create = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "fresh"},
                        "spec": deployment("fresh")["spec"].clone()});
    match send(&a, "patch", "apply", &format!("{path}/fresh"), &create).await {
        Err(CallError::Adapter(AdapterError::Invalid(m))) => {
            assert!(m.contains("would create"), "{m}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn services_are_cluster_ip_unless_granted_and_never_take_external_ips() {
    let (a, _h) = load().await;
    let ns = namespace("pando-objsvc").await;
    let edge = namespace("pando-objedge").await;
    let svc = |name: &str, spec: Value| {
        let mut s = json!({"selector": {"app": "x"}, "ports": [{"port": 80}]});
        if let (Value::Object(s), Value::Object(e)) = (&mut s, spec) {
            s.extend(e);
        }
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": s})
    };
    let path = format!("/api/v1/namespaces/{}/services", ns.name);
    for (name, spec, rule) in [
        ("np", json!({"type": "NodePort"}), "services.types"),
        ("lb", json!({"type": "LoadBalancer"}), "services.types"),
        (
            "en",
            json!({"type": "ExternalName", "externalName": "example.com", "selector": null, "ports": null}),
            "services.types",
        ),
        (
            "eip",
            json!({"externalIPs": ["198.18.0.10"]}),
            "services.external-ips",
        ),
    ] {
        refused(
            send(&a, "post", "json", &path, &svc(name, spec)).await,
            rule,
            "spec.",
        );
    }
    written(send(&a, "post", "json", &path, &svc("web", json!({}))).await);
    written(
        send(
            &a,
            "post",
            "json",
            &path,
            &svc("headless", json!({"clusterIP": "None"})),
        )
        .await,
    );
    let web = format!("{path}/web");
    let to_node_port = json!({"spec": {"type": "NodePort"}});
    let apply = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"type": "NodePort"}});
    let ops = json!([{"op": "replace", "path": "/spec/type", "value": "NodePort"}]);
    for (ty, body) in [
        ("merge", &to_node_port),
        ("strategic", &to_node_port),
        ("json-patch", &ops),
        ("apply", &apply),
    ] {
        refused(
            send(&a, "patch", ty, &web, body).await,
            "services.types",
            "spec.type",
        );
    }
    let ips = json!({"spec": {"externalIPs": ["198.18.0.10"]}});
    refused(
        send(&a, "patch", "merge", &web, &ips).await,
        "services.external-ips",
        "spec.externalIPs",
    );
    // The edge's namespace may have its NodePort.
    let edge_path = format!("/api/v1/namespaces/{}/services", edge.name);
    written(
        send(
            &a,
            "post",
            "json",
            &edge_path,
            &svc("edge", json!({"type": "NodePort"})),
        )
        .await,
    );
    refused(
        send(
            &a,
            "post",
            "json",
            &edge_path,
            &svc("lb", json!({"type": "LoadBalancer"})),
        )
        .await,
        "services.types",
        "spec.type",
    );
    edge.delete().await.expect("cleanup");
    ns.delete().await.expect("cleanup");
}
