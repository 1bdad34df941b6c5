//! The real node's runtime, seen through the adapter (docs/testing.md, "The real node"): the
//! isolation class a RuntimeClass gives (R-114, R-115), a handler the node lacks shown in words
//! in `observe`, and the control that shows the object policy (issue 19) is what keeps an
//! adapter's pod off the node: the same privileged `hostPath` pod, created as the cluster admin,
//! reads a file this test put on the node.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::PostParams;
use kube::{Api, Client};
use pando_host::types::{Error as AdapterError, IsolationClass};
use pando_host::{CallError, Grants, Host, LoadOptions};
use pando_tests::cluster::{self, Identity};
use pando_tests::kubernetes_adapter::{admin, cleanup, ctx, id};
use pando_tests::plans::plan;
use pando_tests::real_node::{self as node, BUSYBOX};
use pando_tests::{components, probe};
use serde_json::{Value, json};

/// A RuntimeClass that schedules onto the real node with a handler its containerd does not have:
/// one the shipped grants and the admission policy allow (`gvisor`), as where an operator allowed
/// gVisor on a cluster whose nodes lack it.
const MISSING: &str = "gvisor";
const MISSING_HANDLER: &str = "pando-not-installed";

async fn ensure_missing_handler_class(client: &Client) {
    let api = Api::<RuntimeClass>::all(client.clone());
    if api.get_opt(MISSING).await.expect("runtime class").is_some() {
        return;
    }
    let class: RuntimeClass = serde_json::from_value(json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": { "name": MISSING },
        "handler": MISSING_HANDLER,
        "scheduling": {
            "nodeSelector": { node::NODE_LABEL.0: node::NODE_LABEL.1 },
            "tolerations": [{ "key": node::TAINT_KEY, "operator": "Exists",
                              "effect": "NoSchedule" }],
        },
    }))
    .expect("a runtime class");
    match api.create(&PostParams::default(), &class).await {
        Ok(_) => {}
        // Another test binary made it first.
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating RuntimeClass {MISSING}: {e}"),
    }
}

/// The Kubernetes adapter as `pando`, its pods under RuntimeClass `class` (listed in its grants).
async fn adapter_with_class(class: &str) -> (pando_host::Adapter, Host) {
    let mut grants = node::grants();
    if let Some(k) = grants.kubernetes.as_mut() {
        for rule in &mut k.objects.pods {
            rule.runtime_classes.push(class.into());
        }
    }
    let mut config: Value = serde_json::from_str(node::ADAPTER_CONFIG).expect("config");
    config["runtime_class"] = json!(class);
    probe::load_as_pando(
        &pando_tests::kubernetes_adapter::component(),
        grants,
        &config.to_string(),
    )
    .await
}

#[tokio::test]
async fn r114_a_runc_runtime_class_is_reported_shared_kernel() {
    let admin = admin().await;
    node::require(&admin).await;
    let class = Api::<RuntimeClass>::all(admin.clone())
        .get(node::RUNTIME_CLASS)
        .await
        .expect("the real node's RuntimeClass");
    assert_eq!(class.handler, "runc", "the node's class runs runc");
    let (a, _h) = node::load_adapter().await;
    let caps = a.capabilities(&ctx()).await.expect("capabilities");
    assert_eq!(
        caps.isolation,
        IsolationClass::SharedKernel,
        "runc shares the node's kernel (R-114)"
    );
}

#[tokio::test]
async fn r114_r115_a_handler_the_node_lacks_shows_in_words_why_its_pods_never_start() {
    let admin = admin().await;
    node::require(&admin).await;
    ensure_missing_handler_class(&admin).await;
    let (a, _h) = adapter_with_class(MISSING).await;
    let caps = a.capabilities(&ctx()).await.expect("capabilities");
    assert_eq!(
        caps.isolation,
        IsolationClass::SharedKernel,
        "a handler the adapter does not know is never reported sandboxed (R-115)"
    );
    let app = id("node-rc");
    let mut p = plan(&app, &["web"]);
    p.workloads[0].image = BUSYBOX.into();
    p.workloads[0].command = vec!["sleep".into(), "600".into()];
    a.apply(&ctx(), &p).await.expect("apply");
    let reason = node::reason_of_a_workload_that_never_runs(
        &a,
        &app,
        "web",
        |r| r.contains(MISSING_HANDLER),
        "a pod under a missing handler cannot run",
    )
    .await;
    assert!(
        reason.starts_with("FailedCreatePodSandBox:")
            && reason.contains(&format!(
                "no runtime for \"{MISSING_HANDLER}\" is configured"
            )),
        "the kubelet's words, not a bare `ContainerCreating`: {reason}"
    );
    cleanup(&a, &app).await;
}

/// A privileged pod with the node's root filesystem at `/host`, its PID and network namespaces,
/// pinned to the real node: every escape the object policy exists to refuse, in one pod.
fn hostile_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "node-reader" },
        "spec": {
            "nodeName": node::NODE,
            "hostPID": true,
            "hostNetwork": true,
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{ "operator": "Exists" }],
            "containers": [{
                "name": "main",
                "image": BUSYBOX,
                "imagePullPolicy": "Never",
                "command": ["sleep", "600"],
                "securityContext": { "privileged": true },
                "volumeMounts": [{ "name": "root", "mountPath": "/host" }],
            }],
            "volumes": [{ "name": "root", "hostPath": { "path": "/" } }],
        },
    })
}

#[tokio::test]
async fn the_object_policy_is_what_keeps_a_privileged_host_path_pod_off_the_node() {
    let admin = admin().await;
    node::require(&admin).await;
    // Made as the adapter makes its namespaces (`pando` bound there), so that RBAC lets `pando`
    // create pods in it and the refusal below is the admission policy's, not RBAC's.
    let ns = cluster::create_adapter_namespace(&admin, "pando-nodectl")
        .await
        .expect("a namespace");
    // A secret of the node's: a file only root on this machine can read.
    let secret_dir = cluster::state_dir().join("node-control");
    std::fs::create_dir_all(&secret_dir).expect("a directory on the node");
    let secret_path = secret_dir.join(cluster::unique_name("secret"));
    let secret = format!("node secret {}", cluster::unique_name("v"));
    std::fs::write(&secret_path, &secret).expect("the node's file");
    let absolute = std::fs::canonicalize(&secret_path).expect("its absolute path");

    // The host: the probe sends the pod's body with the shipped object rules for pods
    // (baseline, no nodeName); it reaches the cluster as the admin, so only the host refuses.
    let host = Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host");
    let grants = r#"
kubernetes:
  rules:
  - verbs: [create, get, delete]
    resources: [pods]
    namespaces: ["pando-*"]
  objects:
    pods:
    - namespaces: ["*"]
      profile: baseline
"#;
    let probe_adapter = host
        .load_file(
            &components::kube_probe(),
            LoadOptions {
                grants: Grants::from_text("node control grants", grants).expect("grants"),
                config: "{}".into(),
                kubernetes: Some(admin.clone()),
                ..LoadOptions::default()
            },
        )
        .await
        .expect("the probe loads");
    let path = format!("/api/v1/namespaces/{}/pods", ns.name);
    let sent = probe::op(
        &probe_adapter,
        &format!("body:post:json:{path}\n{}", hostile_pod()),
    )
    .await;
    match sent {
        Err(CallError::Adapter(AdapterError::Denied(m))) => {
            assert!(m.contains("object rule `pods."), "names the rule: {m}");
        }
        other => panic!("the host must refuse the hostile pod, got {other:?}"),
    }

    // The cluster: `pando` straight to the API server, no host in between.
    let pando = cluster::client(Identity::Pando).await.expect("pando");
    let typed: Pod = serde_json::from_value(hostile_pod()).expect("a pod");
    match Api::<Pod>::namespaced(pando, &ns.name)
        .create(&PostParams::default(), &typed)
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert!(
                !e.message.contains("cannot create resource"),
                "RBAC, not the admission policy, refused pando: {e:?}"
            );
            assert!(
                e.message.contains("pando-adapter-objects")
                    && [
                        "pods.host-namespaces:",
                        "pods.privileged:",
                        "pods.host-path:"
                    ]
                    .iter()
                    .any(|rule| e.message.contains(rule)),
                "the admission policy refuses pando the pod, naming a baseline rule: {e:?}"
            );
        }
        Ok(_) => panic!("the cluster let pando create a privileged hostPath pod on the node"),
        Err(e) => panic!("the API server did not answer: {e}"),
    }

    // The control: the admin, whom neither layer binds, gets the same pod, and it reads the file.
    let pod = node::run(&admin, &ns.name, typed).await;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let read = node::sh(
        &admin,
        &ns.name,
        &name,
        &format!("cat /host{}", absolute.display()),
    )
    .await;
    assert_eq!(
        read, secret,
        "without the policy, such a pod reads the node's files"
    );
    let _ = std::fs::remove_file(&absolute);
    ns.delete().await.expect("cleanup");
}

/// Why `pods.probe-host` exists, shown on the node (issue 47): a probe that names a `host` is
/// made by the kubelet from the node's network, where the pod's own NetworkPolicy does not
/// apply. The admin, whom neither layer binds, makes a pod whose egress is denied; its readiness
/// probe of "the outside" host still succeeds, and one of a port nothing serves never does, so
/// readiness here is the kubelet's reach, not the pod's. Both layers refuse such a probe to the
/// adapter (`kube_objects::escapes::probe_hosts_pull_policy_and_security_contexts_are_refused_by_both_layers`).
#[tokio::test]
async fn a_probe_host_is_reached_from_the_node_where_the_pod_itself_cannot_go() {
    use k8s_openapi::api::core::v1::{HTTPGetAction, Probe};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    let admin = admin().await;
    node::require(&admin).await;
    let ns = cluster::create_test_namespace(&admin, "node-probe-host")
        .await
        .expect("a namespace");
    let deny: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "deny-egress"},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
    }))
    .expect("a policy");
    Api::<NetworkPolicy>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &deny)
        .await
        .expect("the namespace's egress denied");
    let probing = |name: &str, port: i32| {
        let mut pod = node::shell_pod(name, &[], "exec sleep 2147483647");
        if let Some(c) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
            c.readiness_probe = Some(Probe {
                http_get: Some(HTTPGetAction {
                    host: Some(node::OUTSIDE_IP.into()),
                    port: IntOrString::Int(port),
                    path: Some("/".into()),
                    ..HTTPGetAction::default()
                }),
                period_seconds: Some(1),
                timeout_seconds: Some(2),
                ..Probe::default()
            });
        }
        pod
    };
    let served = node::run(&admin, &ns.name, probing("served", 80)).await;
    let unserved = node::run(&admin, &ns.name, probing("unserved", 81)).await;
    let pods = Api::<Pod>::namespaced(admin.clone(), &ns.name);
    let ready = |name: &str| {
        let pods = pods.clone();
        let name = name.to_string();
        async move {
            pods.get(&name)
                .await
                .expect("the pod")
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        }
    };
    node::eventually(
        "the kubelet's probe of the outside host succeeds: the pod turns Ready",
        || ready("served"),
    )
    .await;
    // The pod itself is held in by its namespace's policy (the kubelet is not).
    let name = served.metadata.name.clone().unwrap_or_default();
    let url = format!("http://{}/", node::OUTSIDE_IP);
    assert!(
        !node::reaches(&admin, &ns.name, &name, &url).await,
        "the pod's own egress is denied"
    );
    // The negative control: the kubelet did probe the port nothing serves (its own warning
    // says how it failed), and that pod is not Ready.
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(admin.clone(), &ns.name);
    let unserved_name = unserved.metadata.name.clone().unwrap_or_default();
    node::eventually("the kubelet reports the failed probe of port 81", || {
        let events = events.clone();
        let name = unserved_name.clone();
        async move {
            events
                .list(
                    &kube::api::ListParams::default()
                        .fields(&format!("involvedObject.name={name},reason=Unhealthy")),
                )
                .await
                .expect("events")
                .items
                .iter()
                .any(|e| {
                    e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("Readiness probe failed") && m.contains(":81"))
                })
        }
    })
    .await;
    assert!(
        !ready(&unserved_name).await,
        "a probe of a port nothing serves leaves the pod not Ready"
    );
    ns.delete().await.expect("cleanup");
}
