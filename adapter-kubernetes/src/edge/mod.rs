//! The edge: Pando's public entry point, in its own namespace
//! (`edge_namespace`), as a Deployment of at least two replicas with a
//! disruption budget, behind the only LoadBalancer or NodePort Service
//! Pando creates ([`objects`]). A NetworkPolicy per edge admits its
//! two ports and lets it reach only Pando's proxy (by the proxy alias, one
//! `ExternalName` Service for every edge), cluster DNS and, where
//! configured, the API server; the namespace denies everything else.
//!
//! `apply_edge` is idempotent like `apply` (O-41): each object is compared
//! with what exists by the hash of what was asked for, so a satisfied plan
//! writes nothing. `observe_edge` never remediates; it says, in words an
//! operator can act on, why an edge does not serve, and warns when its
//! ready replicas share a node. `remove_edge` removes what was made for an
//! edge, and the proxy alias and the namespace with the last edge.

use std::collections::BTreeMap;
use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::apps::v1::Deployment;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::kube::k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pando_adapter_sdk::kube::{Api, DeleteParams, ListParams};
use pando_adapter_sdk::types::{EdgePlan, EdgeState, Error};

use crate::app::{binding, quota};
use crate::config::Config;
use crate::kit::converge::{Object, Replace, converge_one, name_of};
use crate::kit::{self, post};
use objects::{self as eo, EDGE_LABEL};

pub mod canary;
pub mod objects;

/// How long `apply_edge` waits for an edge namespace being deleted (by the
/// removal of the last edge) to be gone before making it again.
const NAMESPACE_GONE_WAIT: Duration = Duration::from_secs(60);

/// Creates or updates edge `plan.name` (see the module doc).
pub fn apply_edge(config: &Config, plan: &EdgePlan) -> Result<(), Error> {
    // Build everything before writing anything: a plan refused (a bad
    // name) leaves the cluster as it was.
    let deployment = eo::deployment(config, plan)?;
    let budget = eo::disruption_budget(plan)?;
    let service = eo::service(config, plan)?;
    let policy = eo::network_policy(config, plan)?;
    let alias = eo::proxy_alias(config)?;
    let ns = &config.edge_namespace;
    ensure_namespace(config, ns)?;
    // The policies before the pods: an edge never runs unbounded, not
    // even for the moment between two requests.
    let policies = Api::<NetworkPolicy>::namespaced(ns);
    ensure(&policies, eo::default_deny()?)?;
    ensure(&policies, policy)?;
    ensure(&Api::<Service>::namespaced(ns), alias)?;
    ensure(&Api::<Deployment>::namespaced(ns), deployment)?;
    ensure(&Api::<PodDisruptionBudget>::namespaced(ns), budget)?;
    ensure(&Api::<Service>::namespaced(ns), service)?;
    Ok(())
}

/// Makes the edge namespace when it is missing; waits for one being
/// deleted (the last edge removed) to be gone first. One that is not
/// Pando's is a conflict: Pando never takes over what it did not make.
fn ensure_namespace(config: &Config, ns: &str) -> Result<(), Error> {
    let api = Api::<Namespace>::all();
    let ctx = |e| Error::from(e).context(&format!("the edge namespace `{ns}`"));
    let step = Duration::from_millis(500);
    let mut waited = Duration::ZERO;
    loop {
        let Some(existing) = api.get_opt(ns).map_err(ctx)? else {
            api.create(&post(), &eo::namespace(ns)?).map_err(ctx)?;
            // Inside it the adapter acts through its own binding, made here.
            return binding::bind_self(config, ns).inspect_err(|_| quota::abandon(ns));
        };
        let labels = existing.metadata.labels.unwrap_or_default();
        if labels.get(kit::MANAGED_BY).map(String::as_str) != Some(kit::MANAGER) {
            return Err(Error::Conflict(format!(
                "namespace `{ns}` (configuration field `edge_namespace`) exists and is not \
                 Pando's (no label `{}: {}`): remove it, or configure another edge namespace",
                kit::MANAGED_BY,
                kit::MANAGER
            )));
        }
        if existing.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        if waited >= NAMESPACE_GONE_WAIT {
            return Err(Error::Unavailable(format!(
                "the edge namespace `{ns}` is still being deleted after {} s; apply the edge \
                 again once it is gone",
                NAMESPACE_GONE_WAIT.as_secs()
            )));
        }
        pando_adapter_sdk::time::sleep(step)?;
        waited += step;
    }
}

/// Creates `desired`, or replaces the existing object when its hash
/// differs. A replaced Service keeps its cluster IP, node ports and
/// load-balancer address: the API server carries allocated values over
/// when the new spec leaves them out.
fn ensure<K: Object>(api: &Api<K>, desired: K) -> Result<(), Error> {
    let name = name_of(&desired).to_owned();
    let ctx = |e| Error::from(e).context(&format!("{} `{name}` of the edge", K::KIND));
    let existing = api.get_opt(&name).map_err(ctx)?;
    converge_one(api, existing, desired, &Replace(ctx))
}

/// Edge `name` as the cluster has it now; `not-found` when it has no
/// Deployment. Three reads: the Deployment, the Service, the pods.
pub fn observe_edge(config: &Config, name: &str) -> Result<EdgeState, Error> {
    let object = eo::object_name(name)?;
    let ns = &config.edge_namespace;
    let ctx = |e| Error::from(e).context(&format!("observing edge `{name}`"));
    let found = match Api::<Deployment>::namespaced(ns).get_opt(&object) {
        Err(e) if binding::namespace_gone(ns, &e) => None,
        other => other.map_err(ctx)?,
    };
    let Some(deployment) = found else {
        return Err(Error::NotFound(format!(
            "edge `{name}` does not exist (no Deployment `{object}` in namespace `{ns}`)"
        )));
    };
    let service = Api::<Service>::namespaced(ns)
        .get_opt(&object)
        .map_err(ctx)?;
    let pods = Api::<Pod>::namespaced(ns)
        .list(&ListParams::default().labels(&eo::pod_selector(name)))
        .map_err(ctx)?
        .items;
    Ok(assess(name, &deployment, service.as_ref(), &pods))
}

/// Whether a pod is ready (its `Ready` condition is true) and not going.
fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Why a pod is not ready, as precisely as its status says.
fn pod_reason(pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or("?");
    let Some(status) = &pod.status else {
        return format!("pod {name} has no status yet");
    };
    let waiting = status
        .container_statuses
        .iter()
        .flatten()
        .find_map(|c| c.state.as_ref().and_then(|s| s.waiting.as_ref()));
    if let Some(w) = waiting {
        let reason = w.reason.as_deref().unwrap_or("waiting");
        return match w.message.as_deref() {
            Some(m) if !m.is_empty() => format!("pod {name} is {reason}: {m}"),
            _ => format!("pod {name} is {reason}"),
        };
    }
    let unscheduled = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        let why = c.message.as_deref().or(c.reason.as_deref()).unwrap_or("");
        return format!("pod {name} is not scheduled: {why}");
    }
    let phase = status.phase.as_deref().unwrap_or("Pending");
    format!("pod {name} is {phase} and not ready")
}

/// Where the edge is reached from outside, when it is known: the
/// LoadBalancer's ingress addresses, or the node ports on every node.
fn address(service: &Service) -> Option<String> {
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some("NodePort") {
        let ports: Vec<String> = spec
            .ports
            .iter()
            .flatten()
            .filter_map(|p| {
                let node_port = p.node_port?;
                Some(format!(
                    "{} {node_port}",
                    p.name.as_deref().unwrap_or("port")
                ))
            })
            .collect();
        return (!ports.is_empty()).then(|| format!("node ports {}", ports.join(", ")));
    }
    let ingress: Vec<String> = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i.ip.clone()
                .filter(|ip| !ip.is_empty())
                .or_else(|| i.hostname.clone().filter(|h| !h.is_empty()))
        })
        .collect();
    (!ingress.is_empty()).then(|| ingress.join(", "))
}

/// The edge's state from its Deployment, Service and pods (pure, tested
/// natively): serving when a replica is ready and the Service has an
/// address.
pub fn assess(
    name: &str,
    deployment: &Deployment,
    service: Option<&Service>,
    pods: &[Pod],
) -> EdgeState {
    let desired = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
        .max(0) as u32;
    let ready_pods: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
    let ready = ready_pods.len() as u32;
    let address = service.and_then(address);

    let mut why = Vec::new();
    if ready == 0 {
        let mut text = format!("0 of {desired} replicas ready");
        match pods.iter().find(|p| !is_ready(p)) {
            Some(p) => text.push_str(&format!(": {}", pod_reason(p))),
            None => text.push_str(": no pod exists yet (see the Deployment's events)"),
        }
        why.push(text);
    }
    match service {
        None => why.push(format!(
            "its Service `{}` is missing: apply the edge again",
            deployment.metadata.name.as_deref().unwrap_or(name)
        )),
        Some(s) if address.is_none() => {
            if s.spec.as_ref().and_then(|sp| sp.type_.as_deref()) == Some("LoadBalancer") {
                why.push(
                    "the LoadBalancer Service has no address yet: the cluster may have no \
                     load-balancer controller; use edge_service_type NodePort"
                        .into(),
                );
            } else {
                why.push("its Service has no address or node port yet".into());
            }
        }
        Some(_) => {}
    }

    EdgeState {
        name: name.into(),
        serving: ready > 0 && address.is_some(),
        ready_replicas: ready,
        desired_replicas: desired,
        address,
        message: why.join("; "),
        warnings: shared_nodes(&ready_pods),
    }
}

/// A warning per node that runs more than one ready replica: losing it
/// takes them all.
fn shared_nodes(ready: &[&Pod]) -> Vec<String> {
    let mut by_node: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in ready {
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let (Some(node), Some(pod)) = (node, p.metadata.name.as_deref()) {
            by_node.entry(node).or_default().push(pod);
        }
    }
    by_node
        .into_iter()
        .filter(|(_, pods)| pods.len() > 1)
        .map(|(node, pods)| {
            let consequence = if pods.len() == ready.len() {
                "a node failure takes the edge down".to_string()
            } else {
                format!(
                    "a node failure takes {} of its {} ready replicas down",
                    pods.len(),
                    ready.len()
                )
            };
            let (last, rest) = pods.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            let listed = if rest.len() == 1 {
                format!("replicas {} and {last} both run", rest[0])
            } else {
                format!("replicas {} and {last} all run", rest.join(", "))
            };
            format!("{listed} on node {node}: {consequence}")
        })
        .collect()
}

/// Removes edge `name`'s Deployment (its pods with it), budget, Service
/// and policy; then the proxy alias, the default deny and the edge
/// namespace when no edge remains. Removing an edge
/// that does not exist is done already.
pub fn remove_edge(config: &Config, name: &str) -> Result<(), Error> {
    let object = eo::object_name(name)?;
    let ns = &config.edge_namespace;
    let ctx = |e| Error::from(e).context(&format!("removing edge `{name}`"));
    // Background: the Deployment goes now, its ReplicaSet and pods after.
    let dp = DeleteParams::background();
    match Api::<Deployment>::namespaced(ns).delete_opt(&object, &dp) {
        // No namespace, no edge: removed already.
        Err(e) if binding::namespace_gone(ns, &e) => return Ok(()),
        other => other.map_err(ctx)?,
    };
    Api::<PodDisruptionBudget>::namespaced(ns)
        .delete_opt(&object, &dp)
        .map_err(ctx)?;
    let services = Api::<Service>::namespaced(ns);
    services.delete_opt(&object, &dp).map_err(ctx)?;
    let policies = Api::<NetworkPolicy>::namespaced(ns);
    policies.delete_opt(&object, &dp).map_err(ctx)?;
    if edges(config)?.is_empty() {
        // The proxy alias goes with the last edge, explicitly: the
        // namespace's deletion would take it too, but only once whatever
        // else holds the namespace lets it finish.
        services.delete_opt(eo::PROXY_ALIAS, &dp).map_err(ctx)?;
        policies.delete_opt(eo::DEFAULT_DENY, &dp).map_err(ctx)?;
        delete_namespace(ns)?;
    }
    Ok(())
}

/// Deletes the edge namespace when it is Pando's (anything else left in it
/// goes too: it is Pando's, made for the edges).
fn delete_namespace(ns: &str) -> Result<(), Error> {
    let api = Api::<Namespace>::all();
    let ctx = |e| Error::from(e).context(&format!("the edge namespace `{ns}`"));
    let Some(existing) = api.get_opt(ns).map_err(ctx)? else {
        return Ok(());
    };
    let labels = existing.metadata.labels.unwrap_or_default();
    if labels.get(kit::MANAGED_BY).map(String::as_str) == Some(kit::MANAGER)
        && existing.metadata.deletion_timestamp.is_none()
    {
        api.delete_opt(ns, &DeleteParams::background())
            .map_err(ctx)?;
    }
    Ok(())
}

/// The names of the edges: the `pando.dev/edge` label of the Deployments
/// in the edge namespace, sorted. None when the namespace does not exist.
pub fn edges(config: &Config) -> Result<Vec<String>, Error> {
    let ns = &config.edge_namespace;
    let list = match Api::<Deployment>::namespaced(ns)
        .list(&ListParams::default().labels(&eo::any_edge_selector()))
    {
        Err(e) if binding::namespace_gone(ns, &e) => return Ok(Vec::new()),
        other => other.map_err(|e| {
            Error::from(e).context(&format!("listing the edges in namespace `{ns}`"))
        })?,
    };
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter(|d| d.metadata.deletion_timestamp.is_none())
        .filter_map(|d| d.metadata.labels.and_then(|mut l| l.remove(EDGE_LABEL)))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(replicas: i32) -> Deployment {
        serde_json::from_value(json!({
            "metadata": { "name": "pando-edge-main" },
            "spec": { "replicas": replicas, "selector": {}, "template": {} },
        }))
        .unwrap()
    }

    fn pod(name: &str, node: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "nodeName": node, "containers": [] },
            "status": {
                "phase": if ready { "Running" } else { "Pending" },
                "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }],
                "containerStatuses": if ready { json!([]) } else { json!([{
                    "name": "edge", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                    "state": { "waiting": { "reason": "ImagePullBackOff", "message": "pull failed" } },
                }]) },
            },
        }))
        .unwrap()
    }

    fn service(kind: &str, ingress: Option<&str>) -> Service {
        let status = match ingress {
            Some(ip) => json!({ "loadBalancer": { "ingress": [{ "ip": ip }] } }),
            None => json!({ "loadBalancer": {} }),
        };
        serde_json::from_value(json!({
            "metadata": { "name": "pando-edge-main" },
            "spec": { "type": kind, "ports": [
                { "name": "http", "port": 80, "nodePort": 30080 },
                { "name": "https", "port": 443, "nodePort": 30443 },
            ] },
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn r174_a_load_balancer_without_address_is_not_serving() {
        let pods = [pod("a", "n1", true), pod("b", "n2", true)];
        let s = assess(
            "main",
            &deployment(2),
            Some(&service("LoadBalancer", None)),
            &pods,
        );
        assert!(!s.serving);
        assert_eq!((s.ready_replicas, s.desired_replicas), (2, 2));
        assert!(s.message.contains("no address"), "{}", s.message);
        assert!(s.message.contains("NodePort"), "{}", s.message);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn r174_serving_with_an_address_and_a_ready_replica() {
        let pods = [pod("a", "n1", true), pod("b", "n2", false)];
        let s = assess(
            "main",
            &deployment(2),
            Some(&service("LoadBalancer", Some("192.0.2.10"))),
            &pods,
        );
        assert!(s.serving);
        assert_eq!(s.address.as_deref(), Some("192.0.2.10"));
        assert!(s.message.is_empty());
    }

    #[test]
    fn r174_node_ports_are_an_address() {
        let s = assess(
            "main",
            &deployment(2),
            Some(&service("NodePort", None)),
            &[pod("a", "n1", true)],
        );
        assert!(s.serving);
        let address = s.address.unwrap();
        assert!(address.contains("30080") && address.contains("30443"));
    }

    #[test]
    fn r174_no_ready_replica_says_why() {
        let s = assess(
            "main",
            &deployment(2),
            Some(&service("NodePort", None)),
            &[pod("a", "n1", false)],
        );
        assert!(!s.serving);
        assert!(
            s.message
                .starts_with("0 of 2 replicas ready: pod a is ImagePullBackOff"),
            "{}",
            s.message
        );
    }

    #[test]
    fn r174_replicas_sharing_a_node_are_a_warning() {
        let pods = [pod("a", "n1", true), pod("b", "n1", true)];
        let s = assess(
            "main",
            &deployment(2),
            Some(&service("NodePort", None)),
            &pods,
        );
        assert_eq!(
            s.warnings,
            vec!["replicas a and b both run on node n1: a node failure takes the edge down"]
        );
        let pods = [
            pod("a", "n1", true),
            pod("b", "n1", true),
            pod("c", "n2", true),
        ];
        let s = assess("main", &deployment(3), None, &pods);
        assert!(s.warnings[0].contains("2 of its 3"), "{:?}", s.warnings);
        assert!(s.message.contains("Service"), "{}", s.message);
    }
}
