//! `capacity` and `largest-fit-for`: what the eligible
//! nodes can hold, from one list of nodes, the pods read a page at a time
//! ([`PAGE`]), and the configured RuntimeClass when there is one: a node is
//! eligible only where app pods can be scheduled (its labels, the class's
//! node selector, every `NoSchedule`/`NoExecute` taint tolerated by the
//! class's tolerations, the only ones app pods carry).
//!
//! The arithmetic is pure ([`report`], [`largest_fit_for`]) and tested
//! natively; [`read`] gathers its input.

use std::collections::BTreeMap;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Node, Pod, ResourceRequirements, Taint, Toleration,
};
use pando_adapter_sdk::kube::k8s_openapi::api::node::v1::RuntimeClass;
use pando_adapter_sdk::kube::{Api, ListParams};
use pando_adapter_sdk::types::{CapacityReport, Error, Fit, Resources};

use crate::config::NodeSelector;
use crate::kit::{self, names};

pub mod quantity;

/// An eligible node and what it can hold.
#[derive(Clone, Debug)]
pub struct NodeRoom {
    /// The node's name.
    pub name: String,
    /// Its allocatable CPU and memory.
    pub allocatable: Resources,
}

/// A pod that is not finished, bound to a node, and what it requests.
#[derive(Clone, Debug)]
pub struct PodLoad {
    /// The node it is bound to.
    pub node: String,
    /// Its requests, as the scheduler counts them.
    pub requested: Resources,
    /// The app it is a workload of, when it is one of Pando's app pods.
    pub bundle: Option<String>,
}

fn zero() -> Resources {
    Resources {
        cpu_millis: 0,
        memory_bytes: 0,
    }
}

fn add(a: &mut Resources, b: &Resources) {
    a.cpu_millis = a.cpu_millis.saturating_add(b.cpu_millis);
    a.memory_bytes = a.memory_bytes.saturating_add(b.memory_bytes);
}

fn less(a: &Resources, b: &Resources) -> Resources {
    Resources {
        cpu_millis: a.cpu_millis.saturating_sub(b.cpu_millis),
        memory_bytes: a.memory_bytes.saturating_sub(b.memory_bytes),
    }
}

/// What `pods` for which `counts` holds request on each node.
fn requested_by_node(
    pods: &[PodLoad],
    counts: impl Fn(&PodLoad) -> bool,
) -> BTreeMap<&str, Resources> {
    let mut by_node: BTreeMap<&str, Resources> = BTreeMap::new();
    for pod in pods.iter().filter(|p| counts(p)) {
        add(
            by_node.entry(pod.node.as_str()).or_insert_with(zero),
            &pod.requested,
        );
    }
    by_node
}

/// The shape a fit is ranked for: the requests of the app being placed
/// (its pods now, which a redeploy replaces), else the largest node's
/// allocatable, so that no one resource is ranked first.
fn ask_of(nodes: &[NodeRoom], pods: &[PodLoad], bundle: Option<&str>) -> Resources {
    let mut app = zero();
    for pod in pods
        .iter()
        .filter(|p| bundle.is_some() && p.bundle.as_deref() == bundle)
    {
        add(&mut app, &pod.requested);
    }
    if app.cpu_millis > 0 || app.memory_bytes > 0 {
        return app;
    }
    let mut largest = zero();
    for node in nodes {
        largest.cpu_millis = largest.cpu_millis.max(node.allocatable.cpu_millis);
        largest.memory_bytes = largest.memory_bytes.max(node.allocatable.memory_bytes);
    }
    largest
}

/// How many times `ask` fits in `free`, counting the scarcer resource: a
/// node with CPU to spare and no memory holds nothing more. A resource the
/// ask does not name does not count.
fn copies(free: &Resources, ask: &Resources) -> f64 {
    let share = |free: u64, ask: u64| (ask > 0).then(|| free as f64 / ask as f64);
    match (
        share(free.cpu_millis, ask.cpu_millis),
        share(free.memory_bytes, ask.memory_bytes),
    ) {
        (Some(c), Some(m)) => c.min(m),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => 0.0,
    }
}

/// The node with the most room left once the pods `counts` selects are
/// taken off, ranked by how many times `ask` fits there (the scarcer
/// resource decides, not CPU first); ties go to more CPU, then more
/// memory, then the first name.
fn roomiest(
    nodes: &[NodeRoom],
    pods: &[PodLoad],
    ask: &Resources,
    counts: impl Fn(&PodLoad) -> bool,
) -> Option<Fit> {
    let used = requested_by_node(pods, counts);
    let mut best: Option<(f64, Fit)> = None;
    let mut sorted: Vec<&NodeRoom> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for node in sorted {
        let free = less(
            &node.allocatable,
            used.get(node.name.as_str()).unwrap_or(&zero()),
        );
        let score = copies(&free, ask);
        let better = best.as_ref().is_none_or(|(s, b)| {
            (score, free.cpu_millis, free.memory_bytes)
                > (*s, b.free.cpu_millis, b.free.memory_bytes)
        });
        if better {
            best = Some((
                score,
                Fit {
                    node: node.name.clone(),
                    free,
                },
            ));
        }
    }
    best.map(|(_, fit)| fit)
}

/// The capacity report: `total` is what the eligible nodes hold
/// less what pods that are not Pando's apps request on them (the planner
/// takes Pando's own off itself); `largest_fit` is the node with the most
/// room once every pod's requests are counted, Pando's too.
pub fn report(nodes: &[NodeRoom], pods: &[PodLoad]) -> CapacityReport {
    let others = requested_by_node(pods, |p| p.bundle.is_none());
    let mut total = zero();
    for node in nodes {
        add(
            &mut total,
            &less(
                &node.allocatable,
                others.get(node.name.as_str()).unwrap_or(&zero()),
            ),
        );
    }
    CapacityReport {
        total,
        largest_fit: roomiest(nodes, pods, &ask_of(nodes, pods, None), |_| true),
        nodes: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
    }
}

/// The roomiest node for app `bundle`: every pod counted but the
/// app's own, since a redeploy replaces them, and ranked by how many times
/// the app's own requests fit (the contract passes no shape; the app's
/// pods now are the best guess of what it asks). `None` when no node is
/// eligible.
pub fn largest_fit_for(nodes: &[NodeRoom], pods: &[PodLoad], bundle: &str) -> Option<Fit> {
    let ask = ask_of(nodes, pods, Some(bundle));
    roomiest(nodes, pods, &ask, |p| p.bundle.as_deref() != Some(bundle))
}

/// How many pods one page of the cluster-wide pod list holds: a large
/// cluster's pods never arrive in one body the guest must hold whole.
pub const PAGE: u32 = 500;

/// Where app pods are scheduled beyond `node_selector`, from the configured
/// RuntimeClass (`scheduling`), which admission adds to each of them.
#[derive(Clone, Debug, Default)]
pub struct Scheduling {
    /// The class's node selector.
    pub node_selector: BTreeMap<String, String>,
    /// The class's tolerations: app pods carry no others.
    pub tolerations: Vec<Toleration>,
}

impl Scheduling {
    /// The scheduling of RuntimeClass `class`.
    pub fn of(class: &RuntimeClass) -> Scheduling {
        let scheduling = class.scheduling.as_ref();
        Scheduling {
            node_selector: scheduling
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            tolerations: scheduling
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default(),
        }
    }
}

/// Whether `toleration` tolerates `taint`, as the scheduler matches them.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    match toleration.operator.as_deref().unwrap_or("Equal") {
        // An empty key with Exists tolerates every taint.
        "Exists" => key.is_empty() || key == taint.key,
        _ => key == taint.key && toleration.value.as_deref() == taint.value.as_deref(),
    }
}

/// Whether app pods may run on the node: Ready, schedulable, carrying the
/// configured `node_selector` labels and the RuntimeClass's, and with every
/// taint that keeps pods off (`NoSchedule`, `NoExecute`) tolerated.
pub fn eligible(node: &Node, selector: &NodeSelector, scheduling: &Scheduling) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let schedulable = node.spec.as_ref().and_then(|s| s.unschedulable) != Some(true);
    let labels = node.metadata.labels.as_ref();
    let selected = selector
        .labels()
        .iter()
        .chain(scheduling.node_selector.iter())
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    let tolerated = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|t| scheduling.tolerations.iter().any(|tol| tolerates(tol, t)));
    ready && schedulable && selected && tolerated
}

/// A node's allocatable CPU and memory, when it is eligible.
pub fn node_room(
    node: &Node,
    selector: &NodeSelector,
    scheduling: &Scheduling,
) -> Option<NodeRoom> {
    if !eligible(node, selector, scheduling) {
        return None;
    }
    let allocatable = node.status.as_ref()?.allocatable.as_ref()?;
    let get = |key: &str, scale| {
        allocatable
            .get(key)
            .and_then(|q| quantity::parse(&q.0, scale))
            .unwrap_or(0)
    };
    Some(NodeRoom {
        name: node.metadata.name.clone()?,
        allocatable: Resources {
            cpu_millis: get("cpu", 1000),
            memory_bytes: get("memory", 1),
        },
    })
}

/// One container's CPU and memory requests.
fn container_requests(r: Option<&ResourceRequirements>) -> Resources {
    let requests = r.and_then(|r| r.requests.as_ref());
    let get = |key: &str, scale| {
        requests
            .and_then(|m| m.get(key))
            .and_then(|q| quantity::parse(&q.0, scale))
            .unwrap_or(0)
    };
    Resources {
        cpu_millis: get("cpu", 1000),
        memory_bytes: get("memory", 1),
    }
}

/// A pod's requests as the scheduler counts them: the larger of its
/// containers' sum and any one init container, plus its overhead.
pub fn pod_requests(pod: &Pod) -> Resources {
    let Some(spec) = pod.spec.as_ref() else {
        return zero();
    };
    let mut total = zero();
    for c in &spec.containers {
        add(&mut total, &container_requests(c.resources.as_ref()));
    }
    for c in spec.init_containers.iter().flatten() {
        let init = container_requests(c.resources.as_ref());
        total.cpu_millis = total.cpu_millis.max(init.cpu_millis);
        total.memory_bytes = total.memory_bytes.max(init.memory_bytes);
    }
    if let Some(overhead) = &spec.overhead {
        let get = |key: &str, scale| {
            overhead
                .get(key)
                .and_then(|q| quantity::parse(&q.0, scale))
                .unwrap_or(0)
        };
        add(
            &mut total,
            &Resources {
                cpu_millis: get("cpu", 1000),
                memory_bytes: get("memory", 1),
            },
        );
    }
    total
}

/// The app a pod is a workload of: Pando's label, the app label, and the
/// app's own namespace, as `in-use` counts them. Anything else — Pando's
/// server, the edge, other tenants — is not the planner's to take off.
pub fn bundle_of(pod: &Pod) -> Option<String> {
    let labels = pod.metadata.labels.as_ref()?;
    if labels.get(kit::MANAGED_BY).map(String::as_str) != Some(kit::MANAGER) {
        return None;
    }
    let id = labels.get(kit::APP_LABEL)?;
    let ns = pod.metadata.namespace.as_deref()?;
    (names::app_namespace(id).ok().as_deref() == Some(ns)).then(|| id.clone())
}

/// A pod's load, when it is bound to a node and not finished.
pub fn pod_load(pod: &Pod) -> Option<PodLoad> {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    Some(PodLoad {
        node: pod.spec.as_ref()?.node_name.clone()?,
        requested: pod_requests(pod),
        bundle: bundle_of(pod),
    })
}

/// The eligible nodes and every unfinished pod's load: one node list, the
/// cluster-wide pod list a page at a time (Pando's role reads pods
/// cluster-wide for this), and the RuntimeClass `runtime_class` names.
pub fn read(
    selector: &NodeSelector,
    runtime_class: Option<&str>,
) -> Result<(Vec<NodeRoom>, Vec<PodLoad>), Error> {
    let scheduling = match runtime_class {
        None => Scheduling::default(),
        Some(name) => Api::<RuntimeClass>::all()
            .get_opt(name)
            .map_err(|e| Error::from(e).context(&format!("reading RuntimeClass `{name}`")))?
            .map(|class| Scheduling::of(&class))
            .ok_or_else(|| {
                Error::Unavailable(format!(
                    "RuntimeClass `{name}` (configuration field `runtime_class`) does not \
                     exist: no node can run the apps"
                ))
            })?,
    };
    let nodes = Api::<Node>::all()
        .list(&ListParams::default())
        .map_err(|e| Error::from(e).context("listing the nodes"))?;
    // Finished pods hold nothing; the server leaves them out.
    let unfinished = ListParams::default()
        .fields("status.phase!=Succeeded,status.phase!=Failed")
        .limit(PAGE);
    let mut loads = Vec::new();
    let mut page = unfinished.clone();
    loop {
        let pods = Api::<Pod>::all()
            .list(&page)
            .map_err(|e| Error::from(e).context("listing the cluster's pods"))?;
        loads.extend(pods.items.iter().filter_map(pod_load));
        match pods.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => page = unfinished.clone().continue_token(token),
            _ => break,
        }
    }
    Ok((
        nodes
            .items
            .iter()
            .filter_map(|n| node_room(n, selector, &scheduling))
            .collect(),
        loads,
    ))
}

#[cfg(test)]
mod tests {
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
        let report = report(&nodes, &pods);
        assert_eq!(t(&report.total), (5500, 140));
        assert_eq!(report.nodes, 2);
    }

    #[test]
    fn r242_largest_fit_counts_every_pod() {
        let nodes = [node("a", 4000, 100), node("b", 3000, 100)];
        let pods = [load("a", 500, 10, None), load("a", 1000, 20, Some("shop"))];
        let fit = report(&nodes, &pods).largest_fit.unwrap();
        assert_eq!(fit.node, "b");
        assert_eq!(t(&fit.free), (3000, 100));
    }

    #[test]
    fn r242_a_node_short_of_memory_does_not_win_on_cpu() {
        // `b` has more CPU free, and almost no memory: `a` holds more.
        let nodes = [node("a", 4000, 100), node("b", 4000, 100)];
        let pods = [load("a", 2000, 10, None), load("b", 500, 95, None)];
        let fit = report(&nodes, &pods).largest_fit.unwrap();
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
        let fit = largest_fit_for(&nodes, &pods, "cache").unwrap();
        assert_eq!(fit.node, "a", "90 of memory free, 2.25 copies of (100, 40)");
    }

    #[test]
    fn r242_largest_fit_for_adds_back_the_bundles_own_pods() {
        let nodes = [node("a", 4000, 100), node("b", 3000, 50)];
        let pods = [load("a", 500, 10, None), load("a", 1000, 20, Some("shop"))];
        let fit = largest_fit_for(&nodes, &pods, "shop").unwrap();
        assert_eq!(fit.node, "a");
        assert_eq!(t(&fit.free), (3500, 90));
        // Another app gets nothing back: the cluster's own largest fit.
        let other = largest_fit_for(&nodes, &pods, "blog").unwrap();
        let cluster = report(&nodes, &pods).largest_fit.unwrap();
        assert_eq!(
            (other.node, t(&other.free)),
            (cluster.node, t(&cluster.free))
        );
    }

    #[test]
    fn no_eligible_node_no_fit_and_requests_never_underflow() {
        let report = report(&[], &[load("a", 1, 1, None)]);
        assert_eq!(report.nodes, 0);
        assert!(report.largest_fit.is_none());
        assert_eq!(t(&report.total), (0, 0));
        let over = super::report(&[node("a", 100, 10)], &[load("a", 500, 50, None)]);
        assert_eq!(t(&over.total), (0, 0));
        assert_eq!(t(&over.largest_fit.unwrap().free), (0, 0));
    }

    #[test]
    fn ties_go_to_the_first_name() {
        let nodes = [node("b", 1000, 10), node("a", 1000, 10)];
        assert_eq!(report(&nodes, &[]).largest_fit.unwrap().node, "a");
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
}
