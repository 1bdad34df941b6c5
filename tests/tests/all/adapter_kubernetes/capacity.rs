//! Capacity (R-242, R-243): the largest fit ranked by the scarcer resource,
//! a RuntimeClass's overhead kept off it, and a node tainted against app
//! pods holding none, on KWOK nodes each test makes for itself.

use super::*;

/// Makes a KWOK node (KWOK manages every node: it becomes Ready) labelled
/// `label=value`, with `cpu` and `memory` allocatable and `taints`, and
/// waits until it is Ready.
async fn kwok_node(
    name: &str,
    label: (&str, &str),
    (cpu, memory): (&str, &str),
    taints: serde_json::Value,
) {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::PostParams;
    let nodes = Api::<Node>::all(admin().await);
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { label.0: label.1, "type": "kwok" },
                      "annotations": { "kwok.x-k8s.io/node": "fake" } },
        "spec": { "taints": taints },
        "status": { "allocatable": { "cpu": cpu, "memory": memory, "pods": "110" },
                    "capacity": { "cpu": cpu, "memory": memory, "pods": "110" } },
    }))
    .expect("a node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("creating a node");
    // Ready, and carrying only the taints asked for: the node lifecycle
    // controller taints a new node `node.kubernetes.io/not-ready` and lifts
    // the taint only some time after KWOK reports it Ready, and until then
    // no app pod may land there (capacity skips it; a busy CI saw that).
    let asked: Vec<String> = taints
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["key"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let ready = || async {
        let Ok(n) = nodes.get(name).await else {
            return false;
        };
        let is_ready = n
            .status
            .and_then(|s| s.conditions)
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let only_asked = n
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .iter()
            .all(|t| asked.contains(&t.key));
        is_ready && only_asked
    };
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while !ready().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {name} never became Ready without the controller's taints"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The largest fit is ranked by the scarcer resource: a node with twice
/// the CPU and almost no memory does not win over a balanced one (it did
/// when CPU was ranked first).
#[tokio::test]
async fn r242_the_largest_fit_is_not_a_node_short_of_memory() {
    use k8s_openapi::api::core::v1::Node;
    use pando_tests::cluster;
    let group = cluster::unique_name("kwok-fit");
    let (cpu_rich, balanced) = (format!("{group}-cpu"), format!("{group}-bal"));
    kwok_node(
        &cpu_rich,
        ("pando.test/fit-test", &group),
        ("16", "1Gi"),
        serde_json::json!([]),
    )
    .await;
    kwok_node(
        &balanced,
        ("pando.test/fit-test", &group),
        ("8", "32Gi"),
        serde_json::json!([]),
    )
    .await;
    let config = format!(
        r#"{{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
        "node_selector": "pando.test/fit-test={group}"}}"#
    );
    let (a, _h) = ka::load_with(&config).await;
    let report = a.capacity(&ctx()).await.expect("capacity");
    let fit = a
        .largest_fit_for(&ctx(), "no-such-app")
        .await
        .expect("largest fit for");
    let nodes = Api::<Node>::all(admin().await);
    for name in [&cpu_rich, &balanced] {
        let _ = nodes.delete(name, &DeleteParams::default()).await;
    }
    assert_eq!(report.nodes, 2, "both nodes are eligible");
    let largest = report.largest_fit.expect("a fit");
    assert_eq!(largest.node, balanced, "{largest:?}");
    // Other tests' pods may land there meanwhile: not exactly 32 GiB.
    assert!(largest.free.memory_bytes > 1 << 30, "{largest:?}");
    assert_eq!(
        fit.map(|f| f.node),
        Some(balanced),
        "and for an app with no pods"
    );
}

/// A new pod of the configured RuntimeClass carries the class's
/// `overhead.podFixed`: the room the largest fit reports is for
/// containers, so one pod's overhead is off it (the Rust and the Python
/// adapter alike). The node is tainted and only the class tolerates it, so
/// no other test's pod lands there: its room is exact.
#[tokio::test]
async fn r242_the_largest_fit_leaves_room_for_a_new_pods_runtime_class_overhead() {
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::api::node::v1::RuntimeClass;
    use kube::api::PostParams;
    use pando_tests::cluster;
    let name = cluster::unique_name("kwok-overhead");
    kwok_node(
        &name,
        ("pando.test/overhead-test", &name),
        ("4", "8Gi"),
        serde_json::json!([{ "key": "pando.test/overhead", "effect": "NoSchedule" }]),
    )
    .await;
    let classes = Api::<RuntimeClass>::all(admin().await);
    let class: RuntimeClass = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "handler": "runc",
        "overhead": { "podFixed": { "cpu": "250m", "memory": "128Mi" } },
        "scheduling": {
            "nodeSelector": { "pando.test/overhead-test": name },
            "tolerations": [{ "key": "pando.test/overhead", "operator": "Exists", "effect": "NoSchedule" }],
        },
    }))
    .expect("a RuntimeClass");
    classes
        .create(&PostParams::default(), &class)
        .await
        .expect("creating the RuntimeClass");
    let config = format!(
        r#"{{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
        "runtime_class": "{name}"}}"#
    );
    let (rust, _h) = ka::load_with(&config).await;
    let (python, _h2) = pando_tests::python_adapter::load_with(&config).await;
    let mut seen = Vec::new();
    for a in [&rust, &python] {
        let report = a.capacity(&ctx()).await.expect("capacity");
        let fit = a
            .largest_fit_for(&ctx(), "no-pods-yet")
            .await
            .expect("largest fit for");
        seen.push((report, fit));
    }
    let _ = classes.delete(&name, &DeleteParams::default()).await;
    let _ = Api::<Node>::all(admin().await)
        .delete(&name, &DeleteParams::default())
        .await;
    let room = (4000 - 250, (8u64 << 30) - (128 << 20));
    for ((report, fit), adapter) in seen.iter().zip(["rust", "python"]) {
        assert_eq!(report.nodes, 1, "{adapter}: only the class's node");
        let largest = report.largest_fit.as_ref().expect("a fit");
        assert_eq!(
            (largest.free.cpu_millis, largest.free.memory_bytes),
            room,
            "{adapter}: the node's allocatable less one pod's overhead"
        );
        let fit = fit.as_ref().expect("a fit");
        assert_eq!(
            (fit.free.cpu_millis, fit.free.memory_bytes),
            room,
            "{adapter}"
        );
    }
}

#[tokio::test]
async fn r243_a_node_tainted_against_app_pods_holds_no_capacity() {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Patch, PatchParams};
    use pando_tests::cluster;
    let c = admin().await;
    let nodes = Api::<Node>::all(c.clone());
    let name = cluster::unique_name("kwok-tainted");
    // Found by a label of its own, tainted so that no pod without a
    // toleration is scheduled there.
    kwok_node(
        &name,
        ("pando.test/taint-test", &name),
        ("8", "32Gi"),
        serde_json::json!([{ "key": "pando.test/dedicated", "value": "db", "effect": "NoSchedule" }]),
    )
    .await;
    let config = format!(
        r#"{{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
        "node_selector": "pando.test/taint-test={name}"}}"#
    );
    let (a, _h) = ka::load_with(&config).await;
    let tainted = a.capacity(&ctx()).await.expect("capacity");
    // The taint gone, the same node counts: the control.
    let untaint = serde_json::json!({ "spec": { "taints": null } });
    nodes
        .patch(&name, &PatchParams::default(), &Patch::Merge(&untaint))
        .await
        .expect("removing the taint");
    let untainted = a.capacity(&ctx()).await.expect("capacity");
    let _ = nodes.delete(&name, &DeleteParams::default()).await;
    assert_eq!(
        (tainted.nodes, tainted.largest_fit.map(|f| f.node)),
        (0, None),
        "app pods tolerate no taint of their own: the tainted node is not eligible"
    );
    assert_eq!(untainted.nodes, 1, "without the taint it is");
}
