//! The cluster's half of the object rules (`deploy/kubernetes/admission-policy.yaml`): the API
//! server itself refuses the adapter's identity what the host's object policy refuses, so that
//! either layer alone holds. These requests go straight to the API server as `pando`, with no
//! host in between: what stops them is the ValidatingAdmissionPolicy, and the same objects
//! created as the admin (whom the policy does not bind) show that nothing else would have.

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, Resource};
use pando_tests::cluster::{self, Identity};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

async fn clients() -> (Client, Client) {
    (
        cluster::client(Identity::Pando).await.expect("pando"),
        cluster::client(Identity::Admin).await.expect("admin"),
    )
}

/// Creates `object` through `api`; the error's message when the API server refuses it.
async fn create<K>(api: &Api<K>, object: &Value) -> Result<(), String>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let typed: K = serde_json::from_value(object.clone()).expect("a valid object");
    match api.create(&PostParams::default(), &typed).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) => Err(e.message),
        Err(e) => panic!("the API server did not answer: {e}"),
    }
}

/// A pod of `spec`; each container given a memory limit unless it sets its resources, so that
/// the policy's `pods.memory-limit` is not what refuses it.
fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = match spec.get("containers") {
        Some(c) => c.clone(),
        None => json!([{ "name": "main", "image": "registry.invalid/pando/test:1" }]),
    };
    if let Some(containers) = spec["containers"].as_array_mut() {
        for c in containers {
            if c.get("resources").is_none() {
                c["resources"] = json!({ "limits": { "memory": "64Mi" } });
            }
        }
    }
    // The adapter's pods never mount a token (`pods.service-account-token`); a test about
    // tokens sets the field itself.
    if spec.get("automountServiceAccountToken").is_none() {
        spec["automountServiceAccountToken"] = json!(false);
    }
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name }, "spec": spec })
}

/// Asserts `pando` is refused `object` with `rule` in the message, and the admin is not.
async fn refused_by_the_cluster<K>(pando: &Api<K>, admin: &Api<K>, rule: &str, object: Value)
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let err = create(pando, &object)
        .await
        .expect_err(&format!("the cluster refuses pando {rule}: {object}"));
    assert!(
        err.contains("pando-adapter-objects") && err.contains(rule),
        "the refusal names the policy and the rule {rule}: {err}"
    );
    create(admin, &object).await.unwrap_or_else(|e| {
        panic!("the admin may create it ({rule}), so the policy is what refused pando: {e}")
    });
}

#[tokio::test]
async fn the_cluster_refuses_the_adapters_identity_what_the_host_refuses() {
    let (pando, admin) = clients().await;
    // Made by pando itself, as the adapter makes an app's: no Pod Security label, so only the
    // admission policy stands between pando and a privileged pod here.
    let ns = cluster::create_adapter_namespace(&pando, "pando-vap")
        .await
        .expect("pando makes an app namespace");
    let ns_name = ns.name.clone();
    let namespaces = Api::<Namespace>::all(pando.clone());
    let p_pods = Api::<Pod>::namespaced(pando.clone(), &ns_name);
    let a_pods = Api::<Pod>::namespaced(admin.clone(), &ns_name);

    // An ordinary pod passes: the policy refuses what it names, not pods.
    create(&p_pods, &pod("plain", json!({})))
        .await
        .expect("an ordinary pod is admitted");
    let privileged = json!([{ "name": "main", "image": "registry.invalid/pando/test:1",
                              "securityContext": { "privileged": true } }]);
    refused_by_the_cluster(
        &p_pods,
        &a_pods,
        "pods.privileged",
        pod("privileged", json!({ "containers": privileged })),
    )
    .await;
    refused_by_the_cluster(
        &p_pods,
        &a_pods,
        "pods.host-path",
        pod(
            "host-path",
            json!({
        "volumes": [{ "name": "root", "hostPath": { "path": "/" } }] }),
        ),
    )
    .await;
    refused_by_the_cluster(
        &p_pods,
        &a_pods,
        "pods.host-namespaces",
        pod("host-net", json!({ "hostNetwork": true, "hostPID": true })),
    )
    .await;
    refused_by_the_cluster(
        &p_pods,
        &a_pods,
        "pods.node-name",
        pod("pinned", json!({ "nodeName": "kwok-node-2" })),
    )
    .await;
    let caps = json!([{ "name": "main", "image": "registry.invalid/pando/test:1",
                        "securityContext": { "capabilities": { "add": ["SYS_ADMIN"] } } }]);
    refused_by_the_cluster(
        &p_pods,
        &a_pods,
        "pods.capabilities",
        pod("caps", json!({ "containers": caps })),
    )
    .await;

    let p_svc = Api::<Service>::namespaced(pando.clone(), &ns_name);
    let a_svc = Api::<Service>::namespaced(admin.clone(), &ns_name);
    let svc = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["ports"] = json!([{ "port": 80 }]);
        json!({ "metadata": { "name": name }, "spec": spec })
    };
    refused_by_the_cluster(
        &p_svc,
        &a_svc,
        "services.type",
        svc("node-port", json!({ "type": "NodePort" })),
    )
    .await;
    refused_by_the_cluster(
        &p_svc,
        &a_svc,
        "services.external-ips",
        svc("external", json!({ "externalIPs": ["198.18.1.2"] })),
    )
    .await;

    let p_rb = Api::<RoleBinding>::namespaced(pando.clone(), &ns_name);
    let a_rb = Api::<RoleBinding>::namespaced(admin.clone(), &ns_name);
    refused_by_the_cluster(&p_rb, &a_rb, "role-bindings", json!({
        "metadata": { "name": "everyone" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pando-app" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated" }],
    })).await;

    let p_pvc = Api::<PersistentVolumeClaim>::namespaced(pando.clone(), &ns_name);
    let a_pvc = Api::<PersistentVolumeClaim>::namespaced(admin.clone(), &ns_name);
    refused_by_the_cluster(
        &p_pvc,
        &a_pvc,
        "claims.binding",
        json!({
            "metadata": { "name": "someone-elses" },
            "spec": { "accessModes": ["ReadWriteOnce"], "volumeName": "pv-of-someone-else",
                      "resources": { "requests": { "storage": "1Gi" } } },
        }),
    )
    .await;

    let a_ns = Api::<Namespace>::all(admin.clone());
    let labelled = cluster::unique_name("pando-vap-priv");
    refused_by_the_cluster(
        &namespaces,
        &a_ns,
        "namespaces.pod-security",
        json!({
            "metadata": { "name": labelled,
                          "labels": { "pod-security.kubernetes.io/enforce": "privileged" } },
        }),
    )
    .await;

    let _ = a_ns.delete(&labelled, &DeleteParams::default()).await;
    ns.delete().await.expect("cleanup");
}
