//! The capacity arithmetic, natively: eligibility, requests as the
//! scheduler counts them, the ranking of the largest fit and the room it
//! leaves for a new pod's overhead.

use super::*;

/// `Resources` has no `PartialEq` (a WIT record): compare as pairs.
fn t(r: &Resources) -> (u64, u64) {
    (r.cpu_millis, r.memory_bytes)
}

fn r(cpu: u64, mem: u64) -> Resources {
    Resources {
        cpu_millis: cpu,
        memory_bytes: mem,
    }
}

fn node(name: &str, cpu: u64, mem: u64) -> NodeRoom {
    NodeRoom {
        name: name.into(),
        allocatable: r(cpu, mem),
    }
}

fn load(node: &str, cpu: u64, mem: u64, bundle: Option<&str>) -> PodLoad {
    PodLoad {
        node: node.into(),
        requested: r(cpu, mem),
        bundle: bundle.map(Into::into),
    }
}

#[test]
fn r243_total_excludes_only_what_others_request() {
    let nodes = [node("a", 4000, 100), node("b", 2000, 50)];
    let pods = [
        load("a", 500, 10, None),
        load("a", 1000, 20, Some("shop")),
        // A pod on a node that is not eligible counts nowhere.
        load("z", 9000, 900, None),
    ];
    let report = report(&nodes, &pods, (0, 0));
    assert_eq!(t(&report.total), (5500, 140));
    assert_eq!(report.nodes, 2);
}

#[test]
fn r242_largest_fit_counts_every_pod() {
    let nodes = [node("a", 4000, 100), node("b", 3000, 100)];
    let pods = [load("a", 500, 10, None), load("a", 1000, 20, Some("shop"))];
    let fit = report(&nodes, &pods, (0, 0)).largest_fit.unwrap();
    assert_eq!(fit.node, "b");
    assert_eq!(t(&fit.free), (3000, 100));
}

#[test]
fn r242_a_node_short_of_memory_does_not_win_on_cpu() {
    // `b` has more CPU free, and almost no memory: `a` holds more.
    let nodes = [node("a", 4000, 100), node("b", 4000, 100)];
    let pods = [load("a", 2000, 10, None), load("b", 500, 95, None)];
    let fit = report(&nodes, &pods, (0, 0)).largest_fit.unwrap();
    assert_eq!(fit.node, "a", "ranked by the scarcer resource");
    assert_eq!(t(&fit.free), (2000, 90));
    // An app of memory-heavy pods goes where its memory fits too.
    let pods = [
        load("a", 2000, 10, None),
        load("b", 500, 60, None),
        load("c", 100, 40, Some("cache")),
    ];
    let nodes = [
        node("a", 4000, 100),
        node("b", 4000, 100),
        node("c", 400, 50),
    ];
    let fit = largest_fit_for(&nodes, &pods, "cache", (0, 0)).unwrap();
    assert_eq!(fit.node, "a", "90 of memory free, 2.25 copies of (100, 40)");
}

#[test]
fn r242_largest_fit_for_adds_back_the_bundles_own_pods() {
    let nodes = [node("a", 4000, 100), node("b", 3000, 50)];
    let pods = [load("a", 500, 10, None), load("a", 1000, 20, Some("shop"))];
    let fit = largest_fit_for(&nodes, &pods, "shop", (0, 0)).unwrap();
    assert_eq!(fit.node, "a");
    assert_eq!(t(&fit.free), (3500, 90));
    // Another app gets nothing back: the cluster's own largest fit.
    let other = largest_fit_for(&nodes, &pods, "blog", (0, 0)).unwrap();
    let cluster = report(&nodes, &pods, (0, 0)).largest_fit.unwrap();
    assert_eq!(
        (other.node, t(&other.free)),
        (cluster.node, t(&cluster.free))
    );
}

#[test]
fn a_new_pods_runtime_class_overhead_is_taken_off_the_room() {
    let nodes = [node("a", 4000, 1000)];
    let pods = [
        load("a", 500, 100, None),
        load("a", 300, 50, Some("shop")),
        load("a", 300, 50, Some("shop")),
    ];
    // One new pod's overhead off the cluster's fit.
    let fit = report(&nodes, &pods, (250, 120)).largest_fit.unwrap();
    assert_eq!(t(&fit.free), (4000 - 1100 - 250, 1000 - 200 - 120));
    // For the app: its two pods back, two pods' overhead off.
    let fit = largest_fit_for(&nodes, &pods, "shop", (250, 120)).unwrap();
    assert_eq!(t(&fit.free), (4000 - 500 - 500, 1000 - 100 - 240));
    // An app with no pods yet: one pod's.
    let fit = largest_fit_for(&nodes, &pods, "blog", (250, 120)).unwrap();
    assert_eq!(t(&fit.free), (4000 - 1100 - 250, 1000 - 200 - 120));
    let class: RuntimeClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "kata"}, "handler": "kata",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
    }))
    .unwrap();
    assert_eq!(Scheduling::of(&class).overhead, (250, 120 << 20));
}

#[test]
fn no_eligible_node_no_fit_and_requests_never_underflow() {
    let report = report(&[], &[load("a", 1, 1, None)], (0, 0));
    assert_eq!(report.nodes, 0);
    assert!(report.largest_fit.is_none());
    assert_eq!(t(&report.total), (0, 0));
    let over = super::report(&[node("a", 100, 10)], &[load("a", 500, 50, None)], (0, 0));
    assert_eq!(t(&over.total), (0, 0));
    assert_eq!(t(&over.largest_fit.unwrap().free), (0, 0));
}

#[test]
fn ties_go_to_the_first_name() {
    let nodes = [node("b", 1000, 10), node("a", 1000, 10)];
    assert_eq!(report(&nodes, &[], (0, 0)).largest_fit.unwrap().node, "a");
}

fn k8s_node(json: serde_json::Value) -> Node {
    serde_json::from_value(json).unwrap()
}

#[test]
fn eligible_nodes_are_ready_schedulable_and_selected() {
    let selector = NodeSelector::parse("pando.dev/pool=apps").unwrap();
    let base = serde_json::json!({
        "metadata": {"name": "n", "labels": {"pando.dev/pool": "apps"}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    });
    let none = Scheduling::default();
    let room = node_room(&k8s_node(base.clone()), &selector, &none).unwrap();
    assert_eq!(t(&room.allocatable), (8000, 32 << 30));
    let mut cordoned = base.clone();
    cordoned["spec"] = serde_json::json!({"unschedulable": true});
    assert!(!eligible(&k8s_node(cordoned), &selector, &none));
    let mut not_ready = base.clone();
    not_ready["status"]["conditions"][0]["status"] = "False".into();
    assert!(!eligible(&k8s_node(not_ready), &selector, &none));
    let mut other_pool = base.clone();
    other_pool["metadata"]["labels"]["pando.dev/pool"] = "db".into();
    assert!(!eligible(&k8s_node(other_pool.clone()), &selector, &none));
    assert!(eligible(
        &k8s_node(other_pool),
        &NodeSelector::default(),
        &none
    ));
}

#[test]
fn r243_a_taint_the_app_pods_do_not_tolerate_keeps_the_node_out() {
    let any = NodeSelector::default();
    let tainted = k8s_node(serde_json::json!({
        "metadata": {"name": "n", "labels": {"pando.test/node": "real"}},
        "spec": {"taints": [
            {"key": "pando.test/real-node", "value": "true", "effect": "NoSchedule"},
            {"key": "soft", "effect": "PreferNoSchedule"},
        ]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }));
    assert!(
        !eligible(&tainted, &any, &Scheduling::default()),
        "app pods tolerate nothing of their own"
    );
    let class: RuntimeClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pando-real-node"}, "handler": "runc",
        "scheduling": {
            "nodeSelector": {"pando.test/node": "real"},
            "tolerations": [{"key": "pando.test/real-node", "operator": "Exists",
                             "effect": "NoSchedule"}],
        },
    }))
    .unwrap();
    let scheduling = Scheduling::of(&class);
    assert!(
        eligible(&tainted, &any, &scheduling),
        "the class's toleration; PreferNoSchedule keeps no pod off"
    );
    let untainted_elsewhere = k8s_node(serde_json::json!({
        "metadata": {"name": "m"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }));
    assert!(
        !eligible(&untainted_elsewhere, &any, &scheduling),
        "the class's node selector"
    );
    let equal = |value: Option<&str>| Toleration {
        key: Some("pando.test/real-node".into()),
        operator: Some("Equal".into()),
        value: value.map(Into::into),
        effect: None,
        ..Toleration::default()
    };
    let taint = Taint {
        key: "pando.test/real-node".into(),
        value: Some("true".into()),
        effect: "NoExecute".into(),
        ..Taint::default()
    };
    assert!(tolerates(&equal(Some("true")), &taint));
    assert!(!tolerates(&equal(Some("false")), &taint));
    let all = Toleration {
        operator: Some("Exists".into()),
        ..Toleration::default()
    };
    assert!(tolerates(&all, &taint), "an empty key with Exists");
}

#[test]
fn pod_requests_count_init_containers_and_overhead_and_who_owns_it() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": "pando-shop", "labels": {
            "app.kubernetes.io/managed-by": "pando", "pando.dev/app": "shop"}},
        "spec": {
            "nodeName": "a",
            "containers": [
                {"name": "x", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                {"name": "y", "resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [
                {"name": "i", "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}},
            ],
            "overhead": {"cpu": "10m"},
        },
        "status": {"phase": "Running"},
    }))
    .unwrap();
    let l = pod_load(&pod).unwrap();
    assert_eq!(t(&l.requested), (1010, 64 << 20));
    assert_eq!(l.bundle.as_deref(), Some("shop"));
    // The same labels in another namespace are not an app's pod.
    let mut elsewhere = pod.clone();
    elsewhere.metadata.namespace = Some("default".into());
    assert_eq!(bundle_of(&elsewhere), None);
    let mut done = pod;
    done.status.as_mut().unwrap().phase = Some("Failed".into());
    assert!(pod_load(&done).is_none());
}
