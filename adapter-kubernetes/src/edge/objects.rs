//! The objects an edge is made of (R-174), built from its plan and the
//! configuration: its namespace, a Deployment, a PodDisruptionBudget, the
//! one Service Pando exposes outside the cluster, the NetworkPolicy that
//! bounds what the edge may reach, and the proxy alias (one for every edge)
//! it reaches Pando's proxy by. Pure functions: no host calls, so
//! everything here is tested natively.
//!
//! Like an app's objects, each carries `app.kubernetes.io/managed-by:
//! pando`, and the ones Apply may rewrite carry a `pando.dev/spec-hash` of
//! what was asked for (O-41, see [`objects`](crate::app::objects)).

use pando_adapter_sdk::kube::k8s_openapi::api::apps::v1::Deployment;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Namespace, Service};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::kube::k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pando_adapter_sdk::types::{EdgePlan, Error, Resources};
use serde_json::{Value, json};

use crate::config::{Config, EdgeServiceType};
use crate::kit::names;
use crate::kit::security;
use crate::kit::{MANAGED_BY, MANAGER, PANDO_SERVER_LABEL, typed, with_hash};

/// Label naming the edge a Deployment, its pods, its budget and its
/// Service belong to.
pub const EDGE_LABEL: &str = "pando.dev/edge";
/// The edge pod's one container.
pub const CONTAINER_NAME: &str = "edge";
/// Fewest replicas an edge runs, whatever its plan or the configuration
/// say: with one, draining its node (an upgrade, a scale-down) is an
/// outage of everything Pando serves; with two and a budget of one
/// available, a drain waits for the other.
pub const MIN_REPLICAS: u32 = 2;
/// What the names of an edge's objects start with.
pub const NAME_PREFIX: &str = "pando-edge-";
/// The longest edge name: its objects' names are DNS labels of at most 63
/// characters, prefix included.
pub const MAX_NAME_LEN: usize = 63 - NAME_PREFIX.len();
/// The proxy alias: an `ExternalName` Service in the edge namespace naming
/// Pando's Service (`pando_service` in `pando_namespace`), so that every
/// edge reaches Pando's proxy as `pando-proxy:<proxy_port>` whatever
/// namespace Pando runs in. One for all edges; it goes with the last.
pub const PROXY_ALIAS: &str = "pando-proxy";
/// The policy over every pod of the edge namespace that no edge's own
/// policy admits: nothing in, nothing out.
pub const DEFAULT_DENY: &str = "pando-default-deny";
/// The node label replicas spread over.
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";

/// The name of edge `edge`'s Deployment, budget and Service; `invalid` when
/// the edge's name is not a DNS label short enough for it.
pub fn object_name(edge: &str) -> Result<String, Error> {
    names::check_dns_label(edge)
        .map_err(|why| Error::Invalid(format!("edge name `{edge}` {why}")))?;
    if edge.len() > MAX_NAME_LEN {
        return Err(Error::Invalid(format!(
            "edge name `{edge}` is {} characters long; at most {MAX_NAME_LEN} fit in the names \
             of its objects (`{NAME_PREFIX}<name>`)",
            edge.len()
        )));
    }
    Ok(format!("{NAME_PREFIX}{edge}"))
}

/// The labels of every object of edge `edge`, and of its pods.
pub fn edge_labels(edge: &str) -> Value {
    json!({ MANAGED_BY: MANAGER, EDGE_LABEL: edge })
}

/// The label selector of edge `edge`'s pods.
pub fn pod_selector(edge: &str) -> String {
    format!("{MANAGED_BY}={MANAGER},{EDGE_LABEL}={edge}")
}

/// The label selector of every edge's Deployment.
pub fn any_edge_selector() -> String {
    format!("{MANAGED_BY}={MANAGER},{EDGE_LABEL}")
}

/// The replicas an edge runs: the plan's, else the configured default, and
/// never fewer than [`MIN_REPLICAS`].
pub fn replicas(config: &Config, plan: &EdgePlan) -> u32 {
    plan.replicas
        .unwrap_or(config.edge_replicas)
        .max(MIN_REPLICAS)
}

/// The edge namespace, labelled as Pando's (it holds every edge, so it
/// names none).
pub fn namespace(name: &str) -> Result<Namespace, Error> {
    typed(json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": { "name": name, "labels": { MANAGED_BY: MANAGER } },
    }))
}

fn resources(r: &Resources) -> Value {
    json!({ "cpu": format!("{}m", r.cpu_millis), "memory": r.memory_bytes.to_string() })
}

/// The edge's Deployment: the plan's container serving `http` and `https`,
/// replicas spread over nodes by a soft anti-affinity (soft, so that a
/// one-node cluster still runs the edge; observe warns when replicas share
/// a node), and a rollout that never takes a ready replica away before its
/// successor is ready.
pub fn deployment(config: &Config, plan: &EdgePlan) -> Result<Deployment, Error> {
    let name = object_name(&plan.name)?;
    let labels = edge_labels(&plan.name);
    let r = &plan.resources;
    let mut res = json!({ "requests": resources(&r.requests) });
    if let Some(l) = &r.limits {
        res["limits"] = resources(l);
    }
    let mut container = json!({
        "name": CONTAINER_NAME,
        "image": plan.image,
        "env": plan.env.iter().map(|e| json!({ "name": e.name, "value": e.value })).collect::<Vec<_>>(),
        "ports": [
            { "name": "http", "containerPort": plan.http_port, "protocol": "TCP" },
            { "name": "https", "containerPort": plan.https_port, "protocol": "TCP" },
        ],
        "resources": res,
        // Without a probe a pod is ready the moment its container starts,
        // and observe would say serving for a server that crashes before it
        // listens: ready means the HTTP port accepts connections.
        "readinessProbe": {
            "tcpSocket": { "port": "http" },
            "periodSeconds": 2,
            "failureThreshold": 1,
        },
        // As an app's pod: no setuid gains, the default seccomp profile.
        "securityContext": { "allowPrivilegeEscalation": false },
    });
    if !plan.command.is_empty() {
        container["command"] = json!(plan.command);
    }
    if !plan.args.is_empty() {
        container["args"] = json!(plan.args);
    }
    let mut spec = json!({
        // The edge talks to Pando's proxy, not to the API server.
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "securityContext": security::pod_context(),
        "containers": [container],
        "affinity": { "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": { "matchLabels": labels },
                    "topologyKey": HOSTNAME_KEY,
                },
            }],
        } },
    });
    // The nodes Pando is given are the edge's too. `runtime_class` is not
    // used: it isolates untrusted apps, and the edge is Pando's own; but a
    // class of its own may carry the tolerations of tainted nodes.
    if !config.node_selector.is_empty() {
        spec["nodeSelector"] = json!(config.node_selector.labels());
    }
    if let Some(class) = &config.edge_runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    typed(with_hash(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "replicas": replicas(config, plan),
            "selector": { "matchLabels": labels },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": { "maxUnavailable": 0, "maxSurge": 1 },
            },
            "template": { "metadata": { "labels": labels }, "spec": spec },
        },
    })))
}

/// The edge's disruption budget: a drain evicts a replica only while
/// another is available.
pub fn disruption_budget(plan: &EdgePlan) -> Result<PodDisruptionBudget, Error> {
    let labels = edge_labels(&plan.name);
    typed(with_hash(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": { "name": object_name(&plan.name)?, "labels": labels },
        "spec": { "minAvailable": 1, "selector": { "matchLabels": labels } },
    })))
}

/// The edge's Service, of the configured type: the only LoadBalancer or
/// NodePort Service Pando creates (app Services are headless, R-026). Node
/// ports are fixed only when configured; else the cluster picks them.
pub fn service(config: &Config, plan: &EdgePlan) -> Result<Service, Error> {
    let labels = edge_labels(&plan.name);
    let mut http =
        json!({ "name": "http", "port": plan.http_port, "targetPort": "http", "protocol": "TCP" });
    let mut https = json!({ "name": "https", "port": plan.https_port, "targetPort": "https", "protocol": "TCP" });
    if config.edge_service_type == EdgeServiceType::NodePort {
        if let Some(p) = config.edge_http_node_port {
            http["nodePort"] = json!(p);
        }
        if let Some(p) = config.edge_https_node_port {
            https["nodePort"] = json!(p);
        }
    }
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": object_name(&plan.name)?, "labels": labels },
        "spec": {
            "type": config.edge_service_type.as_str(),
            "selector": labels,
            "ports": [http, https],
        },
    })))
}

/// The proxy alias ([`PROXY_ALIAS`]): a DNS name in the edge namespace for
/// `<pando_service>.<pando_namespace>.svc.<cluster_domain>`, its port the
/// proxy's. An alias rather than an address, so Pando's pods may come and go.
pub fn proxy_alias(config: &Config) -> Result<Service, Error> {
    let target = format!(
        "{}.{}.svc.{}",
        config.pando_service, config.pando_namespace, config.cluster_domain
    );
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": PROXY_ALIAS, "labels": { MANAGED_BY: MANAGER } },
        "spec": {
            "type": "ExternalName",
            "externalName": target,
            "ports": [{ "name": "proxy", "port": config.proxy_port, "protocol": "TCP" }],
        },
    })))
}

/// The edge namespace's default deny: a pod no edge's policy selects gets
/// no connection in or out, so nothing else put there is reachable
/// through the edge's exposure.
pub fn default_deny() -> Result<NetworkPolicy, Error> {
    typed(with_hash(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": DEFAULT_DENY, "labels": { MANAGED_BY: MANAGER } },
        "spec": { "podSelector": {}, "policyTypes": ["Ingress", "Egress"] },
    })))
}

/// Edge `plan.name`'s policy (R-174): in, anyone on its HTTP and HTTPS
/// ports (it is what the outside reaches; a node port or a load balancer
/// may bring any source address); out, cluster DNS (to resolve the alias),
/// Pando's server pods on `proxy_port`, and the API server
/// (`api_server_cidr`, which only the edge may reach) when configured.
/// Nothing else: an edge that is broken into reaches no app and no other
/// port of Pando's.
pub fn network_policy(config: &Config, plan: &EdgePlan) -> Result<NetworkPolicy, Error> {
    let labels = edge_labels(&plan.name);
    let tcp = |port: u16| json!({ "protocol": "TCP", "port": port });
    let proxy = json!({
        "to": [{
            "namespaceSelector": { "matchLabels": {
                "kubernetes.io/metadata.name": config.pando_namespace } },
            "podSelector": { "matchLabels": { PANDO_SERVER_LABEL.0: PANDO_SERVER_LABEL.1 } },
        }],
        "ports": [tcp(config.proxy_port)],
    });
    // The DNS the apps reach (`dns_egress`), so one setting holds for both.
    let mut egress = vec![crate::isolation::exclusions::dns_rule(config), proxy];
    if let Some(api) = &config.api_server_cidr {
        egress.push(json!({ "to": [{ "ipBlock": { "cidr": api.to_string() } }] }));
    }
    typed(with_hash(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": object_name(&plan.name)?, "labels": labels },
        "spec": {
            "podSelector": { "matchLabels": labels },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{ "ports": [tcp(plan.http_port), tcp(plan.https_port)] }],
            "egress": egress,
        },
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::stored_hash;
    use pando_adapter_sdk::types::{EnvVar, ResourceRequirements};

    fn config(extra: &str) -> Config {
        Config::parse(&format!(
            r#"{{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"{extra}}}"#
        ))
        .unwrap()
    }

    fn plan(replicas: Option<u32>) -> EdgePlan {
        EdgePlan {
            name: "main".into(),
            image: "registry.example.com/edge:1".into(),
            command: vec!["/edge".into()],
            args: vec![],
            env: vec![EnvVar {
                name: "MODE".into(),
                value: "edge".into(),
            }],
            replicas,
            http_port: 8080,
            https_port: 8443,
            resources: ResourceRequirements {
                requests: Resources {
                    cpu_millis: 100,
                    memory_bytes: 1 << 20,
                },
                limits: None,
            },
        }
    }

    #[test]
    fn r174_an_edge_runs_at_least_two_replicas() {
        let c = config("");
        assert_eq!(replicas(&c, &plan(None)), 2);
        assert_eq!(replicas(&c, &plan(Some(1))), 2);
        assert_eq!(replicas(&c, &plan(Some(3))), 3);
        assert_eq!(replicas(&config(r#","edge_replicas":1"#), &plan(None)), 2);
        assert_eq!(replicas(&config(r#","edge_replicas":4"#), &plan(None)), 4);
    }

    #[test]
    fn r174_the_deployment_spreads_replicas_and_carries_the_plan() {
        let d = deployment(
            &config(r#","node_selector":"pando.dev/pool=apps""#),
            &plan(None),
        )
        .unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("pando-edge-main"));
        let spec = d.spec.unwrap();
        assert_eq!(spec.replicas, Some(2));
        let pod = spec.template.spec.unwrap();
        let text = serde_json::to_string(&pod.affinity).unwrap();
        assert!(text.contains("preferredDuringScheduling"), "{text}");
        assert!(text.contains(HOSTNAME_KEY), "{text}");
        assert_eq!(pod.node_selector.unwrap()["pando.dev/pool"], "apps");
        assert_eq!(pod.runtime_class_name, None, "not the apps' runtime class");
        let c = &pod.containers[0];
        assert_eq!(c.image.as_deref(), Some("registry.example.com/edge:1"));
        let ports: Vec<_> = c.ports.as_ref().unwrap().iter().collect();
        assert_eq!(ports[0].name.as_deref(), Some("http"));
        assert_eq!(ports[1].container_port, 8443);
        assert!(ports.iter().all(|p| p.host_port.is_none()));
        let probe = c
            .readiness_probe
            .as_ref()
            .and_then(|p| p.tcp_socket.as_ref());
        assert_eq!(
            serde_json::to_value(&probe.unwrap().port).unwrap(),
            "http",
            "ready means listening"
        );
        assert_eq!(
            spec.template.metadata.unwrap().labels.unwrap()[EDGE_LABEL],
            "main"
        );
    }

    #[test]
    fn r174_the_edge_runs_under_its_own_runtime_class_only() {
        let c = config(r#","runtime_class":"gvisor","edge_runtime_class":"edge-nodes""#);
        let pod = deployment(&c, &plan(None))
            .unwrap()
            .spec
            .unwrap()
            .template
            .spec
            .unwrap();
        assert_eq!(pod.runtime_class_name.as_deref(), Some("edge-nodes"));
        let c = config(r#","runtime_class":"gvisor""#);
        let pod = deployment(&c, &plan(None))
            .unwrap()
            .spec
            .unwrap()
            .template
            .spec
            .unwrap();
        assert_eq!(pod.runtime_class_name, None);
    }

    #[test]
    fn r174_the_budget_keeps_one_replica_available() {
        let pdb = disruption_budget(&plan(None)).unwrap();
        let text = serde_json::to_string(&pdb.spec).unwrap();
        assert!(text.contains(r#""minAvailable":1"#), "{text}");
    }

    #[test]
    fn r174_the_service_has_the_configured_type_and_node_ports() {
        let lb = service(&config(""), &plan(None)).unwrap();
        assert_eq!(lb.spec.unwrap().type_.as_deref(), Some("LoadBalancer"));
        let np = service(
            &config(
                r#","edge_service_type":"NodePort","edge_http_node_port":30080,"edge_https_node_port":30443"#,
            ),
            &plan(None),
        )
        .unwrap();
        let spec = np.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        let ports = spec.ports.unwrap();
        assert_eq!(ports[0].node_port, Some(30080));
        assert_eq!(ports[1].node_port, Some(30443));
    }

    #[test]
    fn r174_the_hash_is_stable_and_follows_the_plan() {
        let c = config("");
        let a = deployment(&c, &plan(None)).unwrap();
        let b = deployment(&c, &plan(None)).unwrap();
        assert_eq!(stored_hash(&a.metadata), stored_hash(&b.metadata));
        let d = deployment(&c, &plan(Some(3))).unwrap();
        assert_ne!(stored_hash(&a.metadata), stored_hash(&d.metadata));
    }

    #[test]
    fn r174_the_proxy_alias_names_pandos_service_on_the_proxy_port() {
        let c =
            config(r#","pando_service":"front","pando_namespace":"pando-core","proxy_port":8081"#);
        let alias = proxy_alias(&c).unwrap();
        assert_eq!(alias.metadata.name.as_deref(), Some(PROXY_ALIAS));
        let spec = alias.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
        assert_eq!(
            spec.external_name.as_deref(),
            Some("front.pando-core.svc.cluster.local")
        );
        assert_eq!(spec.ports.unwrap()[0].port, 8081);
    }

    #[test]
    fn r174_the_edge_policy_admits_its_ports_and_reaches_only_the_proxy_and_the_api_server() {
        let c = config(r#","proxy_port":8081"#);
        let p = network_policy(&c, &plan(None)).unwrap();
        let spec = serde_json::to_value(p.spec.unwrap()).unwrap();
        assert_eq!(spec["podSelector"]["matchLabels"][EDGE_LABEL], "main");
        let ingress = spec["ingress"].as_array().unwrap();
        assert_eq!(ingress.len(), 1);
        assert!(ingress[0].get("from").is_none(), "from anywhere: {spec}");
        let ports: Vec<_> = ingress[0]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["port"])
            .collect();
        assert_eq!(ports, [8080, 8443]);
        let egress = spec["egress"].as_array().unwrap();
        assert_eq!(egress.len(), 2, "DNS and the proxy, no API server: {spec}");
        assert_eq!(egress[1]["ports"][0]["port"], 8081);
        assert_eq!(
            egress[1]["to"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "pando-system"
        );
        assert!(!spec.to_string().contains("0.0.0.0"), "{spec}");
        let c = config(r#","api_server_cidr":"10.96.0.1/32""#);
        let spec = serde_json::to_value(network_policy(&c, &plan(None)).unwrap().spec).unwrap();
        assert_eq!(
            spec["egress"][2]["to"][0]["ipBlock"]["cidr"],
            "10.96.0.1/32"
        );
    }

    #[test]
    fn r174_bad_edge_names_are_invalid() {
        assert!(matches!(object_name("Main"), Err(Error::Invalid(_))));
        let long = "a".repeat(MAX_NAME_LEN + 1);
        assert!(matches!(object_name(&long), Err(Error::Invalid(m)) if m.contains("at most")));
        assert_eq!(object_name(&"a".repeat(MAX_NAME_LEN)).unwrap().len(), 63);
    }
}
