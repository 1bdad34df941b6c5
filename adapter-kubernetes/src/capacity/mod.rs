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
use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
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

/// The node with the most room left once the pods `counts` selects and
/// `reserve` (the overhead of the pods to be placed) are taken off, ranked
/// by how many times `ask` fits there (the scarcer resource decides, not
/// CPU first); ties go to more CPU, then more memory, then the first name.
fn roomiest(
    nodes: &[NodeRoom],
    pods: &[PodLoad],
    ask: &Resources,
    reserve: &Resources,
    counts: impl Fn(&PodLoad) -> bool,
) -> Option<Fit> {
    let used = requested_by_node(pods, counts);
    let mut best: Option<(f64, Fit)> = None;
    let mut sorted: Vec<&NodeRoom> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for node in sorted {
        let free = less(
            &less(
                &node.allocatable,
                used.get(node.name.as_str()).unwrap_or(&zero()),
            ),
            reserve,
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
///
/// The fit's room is for containers: one new pod's RuntimeClass
/// `overhead` (CPU millicores, bytes) is taken off it, as the scheduler
/// will count it.
pub fn report(nodes: &[NodeRoom], pods: &[PodLoad], overhead: (u64, u64)) -> CapacityReport {
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
        largest_fit: roomiest(
            nodes,
            pods,
            &ask_of(nodes, pods, None),
            &times(overhead, 1),
            |_| true,
        ),
        nodes: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
    }
}

/// The roomiest node for app `bundle`: every pod counted but the
/// app's own, since a redeploy replaces them, and ranked by how many times
/// the app's own requests fit (the contract passes no shape; the app's
/// pods now are the best guess of what it asks). `None` when no node is
/// eligible.
///
/// The room is for the app's containers: the RuntimeClass `overhead` of
/// as many pods as it has now (one, for an app with none yet) is taken
/// off, since the pods that replace them carry it again.
pub fn largest_fit_for(
    nodes: &[NodeRoom],
    pods: &[PodLoad],
    bundle: &str,
    overhead: (u64, u64),
) -> Option<Fit> {
    let ask = ask_of(nodes, pods, Some(bundle));
    let own = pods
        .iter()
        .filter(|p| p.bundle.as_deref() == Some(bundle))
        .count();
    let reserve = times(overhead, own.max(1) as u64);
    roomiest(nodes, pods, &ask, &reserve, |p| {
        p.bundle.as_deref() != Some(bundle)
    })
}

/// `n` pods' worth of `overhead`.
fn times((cpu, memory): (u64, u64), n: u64) -> Resources {
    Resources {
        cpu_millis: cpu.saturating_mul(n),
        memory_bytes: memory.saturating_mul(n),
    }
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
    /// What each app pod asks beyond its containers: the class's
    /// `overhead.podFixed`, which the RuntimeClass admission sets on every
    /// pod of the class (`spec.overhead`), as (CPU millicores, bytes).
    pub overhead: (u64, u64),
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
            overhead: class
                .overhead
                .as_ref()
                .and_then(|o| o.pod_fixed.as_ref())
                .map_or((0, 0), |fixed| {
                    let r = resources_in(Some(fixed));
                    (r.cpu_millis, r.memory_bytes)
                }),
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
    Some(NodeRoom {
        name: node.metadata.name.clone()?,
        allocatable: resources_in(Some(allocatable)),
    })
}

/// The CPU (millicores) and memory (bytes) of a resource list (requests,
/// allocatable, overhead); a missing or unreadable quantity counts 0.
pub(crate) fn resources_in(list: Option<&BTreeMap<String, Quantity>>) -> Resources {
    let get = |key: &str, scale| {
        list.and_then(|m| m.get(key))
            .and_then(|q| quantity::parse(&q.0, scale))
            .unwrap_or(0)
    };
    Resources {
        cpu_millis: get("cpu", 1000),
        memory_bytes: get("memory", 1),
    }
}

/// One container's CPU and memory requests.
fn container_requests(r: Option<&ResourceRequirements>) -> Resources {
    resources_in(r.and_then(|r| r.requests.as_ref()))
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
    add(&mut total, &resources_in(spec.overhead.as_ref()));
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

/// What [`report`] and [`largest_fit_for`] are computed from.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The eligible nodes.
    pub nodes: Vec<NodeRoom>,
    /// Every unfinished pod bound to a node.
    pub pods: Vec<PodLoad>,
    /// A new app pod's RuntimeClass overhead (CPU millicores, bytes).
    pub overhead: (u64, u64),
}

/// The eligible nodes and every unfinished pod's load: one node list, the
/// cluster-wide pod list a page at a time (Pando's role reads pods
/// cluster-wide for this), and the RuntimeClass `runtime_class` names.
pub fn read(selector: &NodeSelector, runtime_class: Option<&str>) -> Result<Cluster, Error> {
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
    Ok(Cluster {
        nodes: nodes
            .items
            .iter()
            .filter_map(|n| node_room(n, selector, &scheduling))
            .collect(),
        pods: loads,
        overhead: scheduling.overhead,
    })
}

#[cfg(test)]
mod tests;
