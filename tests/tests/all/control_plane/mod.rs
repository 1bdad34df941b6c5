//! Proves that the test control plane started by `scripts/cluster up` is a real Kubernetes:
//! etcd + kube-apiserver (RBAC, admission) + kube-controller-manager + kube-scheduler + KWOK.
//!
//! Requires a running test cluster; every test fails with a message naming `scripts/cluster up`
//! when it is not running. Each test works in its own uniquely named namespace and deletes it.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, Pod, PodSpec, Service, ServiceSpec,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{
    AttachParams, ListParams, LogParams, ObjectMeta, Patch, PatchParams, PostParams, WatchParams,
};
use kube::core::WatchEvent;
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};
use pando_tests::cluster::{self, EXIT_CODE_ANNOTATION, Identity, TestNamespace};
use tokio::io::AsyncReadExt;

mod network;

/// Generous limit for anything the control plane does asynchronously.
const WAIT: Duration = Duration::from_secs(90);

async fn clients() -> (Client, Client) {
    let admin = cluster::client(Identity::Admin)
        .await
        .expect("admin client for the test cluster");
    let pando = cluster::client(Identity::Pando)
        .await
        .expect("pando client for the test cluster");
    (admin, pando)
}

/// Polls `check` every 200 ms until it returns `Some`, panicking with `what` after [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {}s waiting for {what}",
            WAIT.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn bare_pod(name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
    let map = |kv: &[(&str, &str)]| -> Option<BTreeMap<String, String>> {
        (!kv.is_empty()).then(|| {
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: map(labels),
            annotations: map(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".to_owned()),
            // The adapter's pods never mount a token (the admission policy's
            // `pods.service-account-token`, which binds `pando`).
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "main".to_owned(),
                image: Some("registry.invalid/pando/test:1".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

async fn wait_running(pods: &Api<Pod>, name: &str) -> Pod {
    tokio::time::timeout(
        WAIT,
        await_condition(pods.clone(), name, conditions::is_pod_running()),
    )
    .await
    .unwrap_or_else(|_| {
        panic!(
            "timed out after {}s waiting for pod {name} to run",
            WAIT.as_secs()
        )
    })
    .expect("watching the pod")
    .expect("the pod exists")
}

async fn wait_phase(pods: &Api<Pod>, name: &str, phase: &'static str) -> Pod {
    eventually(&format!("pod {name} to reach phase {phase}"), || async {
        let pod = pods.get(name).await.expect("reading the pod");
        let current = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        (current == Some(phase)).then_some(pod)
    })
    .await
}

fn terminated_exit_code(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

async fn cleanup(ns: TestNamespace) {
    ns.delete().await.expect("deleting the test namespace");
}

#[tokio::test]
async fn api_server_reports_the_pinned_kubernetes_version() {
    let (admin, _) = clients().await;
    let version = admin.apiserver_version().await.expect("GET /version");
    assert_eq!(version.major, "1");
    assert_eq!(version.minor, "36");
    assert!(
        version.git_version.starts_with("v1.36."),
        "gitVersion should be a v1.36 release, got {}",
        version.git_version
    );
}

#[tokio::test]
async fn pando_identity_creates_a_network_policy_and_a_headless_service_with_endpoints() {
    let (admin, pando) = clients().await;
    let ns = cluster::create_adapter_namespace(&pando, "pando-cp-net")
        .await
        .expect("test namespace");

    let policies: Api<NetworkPolicy> = Api::namespaced(pando.clone(), &ns.name);
    let policy = NetworkPolicy {
        metadata: ObjectMeta {
            name: Some("deny-ingress".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ..NetworkPolicySpec::default()
        }),
    };
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("pando creates a NetworkPolicy");
    let stored = policies
        .get("deny-ingress")
        .await
        .expect("pando reads the NetworkPolicy");
    assert_eq!(
        stored.spec.and_then(|s| s.policy_types),
        Some(vec!["Ingress".to_owned()])
    );

    let services: Api<Service> = Api::namespaced(pando.clone(), &ns.name);
    let service = Service {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some([("app".to_owned(), "web".to_owned())].into()),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("pando creates a headless Service");
    let stored = services.get("web").await.expect("pando reads the Service");
    assert_eq!(
        stored.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("None")
    );

    // A pod behind the Service: the scheduler places it, KWOK runs it and gives it an IP, and the
    // EndpointSlice controller (kube-controller-manager) publishes that IP for the Service.
    let pods: Api<Pod> = Api::namespaced(pando.clone(), &ns.name);
    pods.create(
        &PostParams::default(),
        &bare_pod("web-0", &[("app", "web")], &[]),
    )
    .await
    .expect("pando creates a pod");
    let pod = wait_running(&pods, "web-0").await;
    let pod_ip = pod
        .status
        .and_then(|s| s.pod_ip)
        .expect("a running KWOK pod has an IP");
    let slices: Api<EndpointSlice> = Api::namespaced(admin, &ns.name);
    eventually(
        "an EndpointSlice of Service web listing the pod's IP",
        || async {
            let list = slices
                .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
                .await
                .expect("listing EndpointSlices");
            list.items
                .iter()
                .flat_map(|s| s.endpoints.iter().flatten())
                .any(|e| e.addresses.contains(&pod_ip))
                .then_some(())
        },
    )
    .await;

    cleanup(ns).await;
}

#[tokio::test]
async fn bare_pod_runs_serves_logs_and_exec_then_fails_with_the_exit_code_a_test_sets() {
    let (_, pando) = clients().await;
    let ns = cluster::create_adapter_namespace(&pando, "pando-cp-pod")
        .await
        .expect("test namespace");
    let pods: Api<Pod> = Api::namespaced(pando.clone(), &ns.name);

    pods.create(&PostParams::default(), &bare_pod("job", &[], &[]))
        .await
        .expect("pando creates a bare pod");
    let pod = wait_running(&pods, "job").await;
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    assert!(
        node.starts_with("kwok-node-"),
        "the scheduler placed the pod on a KWOK node, got {node:?}"
    );

    // Logs through the API server, served by KWOK from the file scripts/cluster wrote.
    let expected = cluster::expected_pod_log().expect("reading the KWOK pod log file");
    assert!(
        !expected.trim().is_empty(),
        "the KWOK pod log file is empty"
    );
    let logs = pods
        .logs("job", &LogParams::default())
        .await
        .expect("pando reads the pod's log");
    assert_eq!(logs, expected);

    // Exec through the API server (WebSocket), run by KWOK in target/test-cluster/exec.
    let marker = cluster::unique_name("exec");
    let mut attached = pods
        .exec(
            "job",
            ["sh", "-c", "echo \"$0\"; pwd", marker.as_str()],
            &AttachParams::default().stderr(false),
        )
        .await
        .expect("pando execs in the pod");
    let mut stdout = attached.stdout().expect("exec stdout");
    let status = attached.take_status().expect("exec status");
    let mut output = String::new();
    tokio::time::timeout(WAIT, stdout.read_to_string(&mut output))
        .await
        .expect("exec output within the time limit")
        .expect("reading exec output");
    let status = status.await.expect("exec reports a status");
    assert_eq!(status.status.as_deref(), Some("Success"), "{status:?}");
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(marker.as_str()),
        "exec output: {output:?}"
    );
    let exec_dir = std::fs::canonicalize(cluster::exec_dir()).expect("exec dir exists");
    assert_eq!(
        lines.get(1).map(std::path::PathBuf::from),
        Some(exec_dir),
        "exec working directory"
    );

    // The test ends the pod: exit code 3 -> Failed with that exit code.
    let patch = serde_json::json!({ "metadata": { "annotations": { EXIT_CODE_ANNOTATION: "3" } } });
    pods.patch("job", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("pando annotates the pod");
    let failed = wait_phase(&pods, "job", "Failed").await;
    assert_eq!(terminated_exit_code(&failed), Some(3));

    // And exit code 0 -> Succeeded.
    pods.create(
        &PostParams::default(),
        &bare_pod("ok", &[], &[(EXIT_CODE_ANNOTATION, "0")]),
    )
    .await
    .expect("pando creates a second pod");
    let succeeded = wait_phase(&pods, "ok", "Succeeded").await;
    assert_eq!(terminated_exit_code(&succeeded), Some(0));

    cleanup(ns).await;
}

#[tokio::test]
async fn watch_from_a_compacted_resource_version_gets_410_gone() {
    let (admin, _) = clients().await;
    let ns = cluster::create_test_namespace(&admin, "cp-410")
        .await
        .expect("test namespace");
    let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns.name);
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("state".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("n".to_owned(), "0".to_owned())].into()),
        ..ConfigMap::default()
    };
    let created = maps
        .create(&PostParams::default(), &map)
        .await
        .expect("creating a ConfigMap");
    let stale = created.metadata.resource_version.expect("resourceVersion");
    for n in 1..=3 {
        let patch = serde_json::json!({ "data": { "n": n.to_string() } });
        maps.patch("state", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("updating the ConfigMap");
    }

    // Control: before compaction the same watch replays the updates.
    let params = WatchParams::default().fields("metadata.name=state");
    let mut replay = maps
        .watch(&params, &stale)
        .await
        .expect("watch before compaction")
        .boxed();
    let first = tokio::time::timeout(WAIT, replay.try_next())
        .await
        .expect("an event before compaction")
        .expect("watch stream")
        .expect("an event");
    assert!(
        matches!(first, WatchEvent::Modified(_)),
        "expected the first update, got {first:?}"
    );
    drop(replay);

    let revision = cluster::compact_etcd().await.expect("compacting etcd");
    assert!(revision > stale.parse::<i64>().expect("numeric resourceVersion"));

    let gone = match maps.watch(&params, &stale).await {
        Err(kube::Error::Api(status)) => status.code,
        Ok(stream) => {
            let mut stream = stream.boxed();
            let event = tokio::time::timeout(WAIT, stream.next())
                .await
                .expect("a watch event after compaction")
                .expect("the watch yields an event")
                .expect("a decodable event");
            match event {
                WatchEvent::Error(status) => status.code,
                other => panic!("expected 410 Gone after compaction, got {other:?}"),
            }
        }
        Err(e) => panic!("unexpected watch error: {e}"),
    };
    assert_eq!(gone, 410);

    cleanup(ns).await;
}

#[tokio::test]
async fn rbac_refuses_the_pando_identity_what_its_role_does_not_grant() {
    let (admin, pando) = clients().await;
    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some(cluster::unique_name("cp-escalate")),
            ..ObjectMeta::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".to_owned()]),
            verbs: vec!["get".to_owned()],
            ..PolicyRule::default()
        }]),
        ..ClusterRole::default()
    };
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };

    // Control: the request itself is valid (the admin may make it).
    Api::<ClusterRole>::all(admin)
        .create(&dry_run, &role)
        .await
        .expect("admin may create the ClusterRole (dry run)");

    match Api::<ClusterRole>::all(pando.clone())
        .create(&dry_run, &role)
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("pando must not create ClusterRoles, got {other:?}"),
    }
    // Nodes are read-only for pando.
    match Api::<k8s_openapi::api::core::v1::Node>::all(pando)
        .delete(
            "kwok-node-2",
            &kube::api::DeleteParams {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("pando must not delete nodes, got {other:?}"),
    }
}

#[tokio::test]
async fn deleting_a_namespace_with_a_running_pod_finishes() {
    let (_, pando) = clients().await;
    let ns = cluster::create_adapter_namespace(&pando, "pando-cp-del")
        .await
        .expect("test namespace");
    let pods: Api<Pod> = Api::namespaced(pando.clone(), &ns.name);
    pods.create(&PostParams::default(), &bare_pod("sleeper", &[], &[]))
        .await
        .expect("pando creates a pod");
    wait_running(&pods, "sleeper").await;
    let maps: Api<ConfigMap> = Api::namespaced(pando.clone(), &ns.name);
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    maps.create(&PostParams::default(), &map)
        .await
        .expect("pando creates a ConfigMap");

    ns.delete().await.expect("pando deletes the namespace");
    let namespaces: Api<Namespace> = Api::all(pando);
    eventually(&format!("namespace {} to be gone", ns.name), || async {
        namespaces
            .get_opt(&ns.name)
            .await
            .expect("reading the namespace")
            .is_none()
            .then_some(())
    })
    .await;
}
