//! The JSON Schema (draft 2020-12) of the configuration [`Config::parse`]
//! accepts, as `info()` reports it.
//!
//! It states what `Config::parse` checks where JSON Schema can say it
//! (types, ranges, the edge's Service types, required fields, no others);
//! the rest (CIDRs, names, the node selector's labels) is in the
//! descriptions, and `configure` checks it. A test keeps the two in step.
//!
//! [`Config::parse`]: crate::config::Config::parse

use serde_json::{Value, json};

use crate::config::{AppQuota, ContainerLimits};
use crate::config::{
    DEFAULT_API_BURST, DEFAULT_API_QPS, DEFAULT_APP_ROLE, DEFAULT_CLUSTER_DOMAIN,
    DEFAULT_EDGE_NAMESPACE, DEFAULT_EDGE_REPLICAS, DEFAULT_HELPER_IMAGE, DEFAULT_PANDO_NAMESPACE,
    DEFAULT_PANDO_SERVICE, DEFAULT_PROXY_PORT, DEFAULT_SERVICE_ACCOUNT, DEFAULT_VOLUME_SIZE_BYTES,
    EdgeServiceType, NODE_PORT_RANGE,
};

/// A loose shape of a CIDR (`address/prefix`); `configure` checks the rest.
const CIDR_PATTERN: &str = r"^[0-9A-Fa-f.:]+/[0-9]{1,3}$";

/// The configuration's JSON Schema.
pub fn schema() -> Value {
    let mut schema = base();
    if let (Some(all), Value::Object(network)) =
        (schema["properties"].as_object_mut(), network_properties())
    {
        all.extend(network);
    }
    schema
}

/// The fields of the cluster's ranges and DNS (config/network.rs): apart,
/// since one `json!` of every field is past the macro's recursion limit.
fn network_properties() -> Value {
    json!({
            "pod_cidr": {
                "type": ["string", "array"],
                "description": "The cluster's pod address ranges: a CIDR (IPv4 or IPv6), or a \
                    list of them, one of each family on a dual-stack cluster. An app may open \
                    connections out of the cluster, never into these ranges (R-025): the API \
                    does not report them reliably, so they are a setting. An egress family \
                    with no pod range here is not the cluster's, and no app reaches it.",
                "pattern": CIDR_PATTERN,
                "items": { "type": "string", "pattern": CIDR_PATTERN },
                "minItems": 1,
                "examples": ["10.244.0.0/16", ["10.244.0.0/16", "fd00:10:244::/56"]],
            },
            "service_cidr": {
                "type": ["string", "array"],
                "description": "The cluster's Service address ranges: a CIDR (IPv4 or IPv6), \
                    or a list of them. An app may open connections out of the cluster, never \
                    into these ranges.",
                "pattern": CIDR_PATTERN,
                "items": { "type": "string", "pattern": CIDR_PATTERN },
                "minItems": 1,
                "examples": ["10.96.0.0/12", ["10.96.0.0/12", "fd00:10:96::/112"]],
            },
            "node_cidrs": {
                "type": ["string", "array", "null"],
                "description": "The nodes' addresses (the kubelet's port, NodePorts), as a \
                    CIDR or a list of them, kept out of every app's egress as the pod and \
                    Service ranges are. Unset, none.",
                "default": [],
                "pattern": CIDR_PATTERN,
                "items": { "type": "string", "pattern": CIDR_PATTERN },
                "examples": [["192.0.2.0/24", "2001:db8:1::/64"]],
            },
            "exclude_metadata_address": {
                "type": ["boolean", "null"],
                "description": "Whether the cloud metadata address, 169.254.169.254, is kept \
                    out of every app's egress (it serves a node's credentials on most \
                    clouds). An egress rule inside it is refused.",
                "default": true,
            },
            "dns_egress": {
                "type": ["object", "null"],
                "description": "Where every app's policy lets it send DNS queries, over UDP \
                    and TCP: pods selected by `namespace_selector` (labels of their \
                    namespaces; the default is `kube-system`) and `pod_selector` (labels of \
                    the pods; empty is every pod), and `cidrs` (a node-local cache such as \
                    `169.254.20.10/32`), on `port`. Each key optional; at least one \
                    destination.",
                "default": {
                    "namespace_selector": { "kubernetes.io/metadata.name": "kube-system" },
                    "pod_selector": {},
                    "cidrs": [],
                    "port": 53,
                },
                "additionalProperties": false,
                "properties": {
                    "namespace_selector": { "type": "object",
                        "additionalProperties": { "type": "string" } },
                    "pod_selector": { "type": "object",
                        "additionalProperties": { "type": "string" } },
                    "cidrs": { "type": "array",
                        "items": { "type": "string", "pattern": CIDR_PATTERN } },
                    "port": { "type": "integer", "minimum": 1, "maximum": 65535 },
                },
            }
    })
}

fn base() -> Value {
    let (node_port_min, node_port_max) = (*NODE_PORT_RANGE.start(), *NODE_PORT_RANGE.end());
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pando.invalid/schemas/adapter-kubernetes/config.json",
        "title": "Pando's Kubernetes adapter configuration",
        "description": "How Pando runs apps on a Kubernetes cluster. The cluster's credentials \
            are the host's (its kubeconfig or in-cluster configuration), not the adapter's. A \
            field that is absent, null, or an empty string takes its default.",
        "type": "object",
        "additionalProperties": false,
        "required": ["pod_cidr", "service_cidr"],
        "properties": {
            "pando_namespace": {
                "type": ["string", "null"],
                "description": "Where Pando's server pods run. An app's namespace admits \
                    connections from pods in this namespace carrying Pando's server labels, \
                    and nothing else from outside itself (R-023). A DNS label.",
                "default": DEFAULT_PANDO_NAMESPACE,
                "maxLength": 63,
            },
            "pando_service": {
                "type": ["string", "null"],
                "description": "The Service in front of Pando's server pods. A DNS-1035 label.",
                "default": DEFAULT_PANDO_SERVICE,
                "maxLength": 63,
            },
            "service_account": {
                "type": ["string", "null"],
                "description": "Pando's ServiceAccount, bound to `app_role` inside each app \
                    namespace. A DNS subdomain.",
                "default": DEFAULT_SERVICE_ACCOUNT,
                "maxLength": 253,
            },
            "proxy_port": {
                "type": ["integer", "null"],
                "description": "The port Pando's proxy listens on in its pods, which the edge \
                    is allowed to reach.",
                "default": DEFAULT_PROXY_PORT,
                "minimum": 1,
                "maximum": 65535,
            },
            "app_role": {
                "type": ["string", "null"],
                "description": "The ClusterRole bound to Pando's ServiceAccount inside each \
                    app namespace it creates (deploy/kubernetes/rbac.yaml).",
                "default": DEFAULT_APP_ROLE,
                "maxLength": 253,
            },
            "cluster_domain": {
                "type": ["string", "null"],
                "description": "The cluster's DNS domain: a workload is reached at \
                    `<workload>.pando-<app>.svc.<cluster_domain>` (R-023). A DNS subdomain.",
                "default": DEFAULT_CLUSTER_DOMAIN,
                "maxLength": 253,
            },
            "api_server_cidr": {
                "type": ["string", "null"],
                "description": "The API server's address, as a CIDR, which only the edge may \
                    reach, when it falls inside an excluded range. Unset when it does not.",
                "default": null,
                "pattern": CIDR_PATTERN,
                "examples": ["172.18.0.2/32"],
            },
            "storage_class": {
                "type": ["string", "null"],
                "description": "The StorageClass volumes are made with; unset is the \
                    cluster's default class.",
                "default": null,
                "maxLength": 253,
            },
            "volume_size_bytes": {
                "type": ["integer", "null"],
                "description": "A volume's size in bytes when its request names none.",
                "default": DEFAULT_VOLUME_SIZE_BYTES,
                "minimum": 1,
                "maximum": i64::MAX,
            },
            "runtime_class": {
                "type": ["string", "null"],
                "description": "The RuntimeClass app pods run under, which decides the \
                    isolation class reported (R-114, R-115): a handler of gVisor (`runsc`) or \
                    Kata (`kata`, `kata-*`) is `sandboxed`, anything else, or unset, \
                    `shared-kernel`. It must exist in the cluster.",
                "default": null,
                "maxLength": 253,
            },
            "node_selector": {
                "type": ["string", "null"],
                "description": "Limits app pods, and the capacity reported, to nodes with \
                    these labels, as `key=value,key=value`; keys and values as Kubernetes \
                    labels allow. Empty is every node.",
                "default": "",
                "examples": ["pando.dev/apps=true,kubernetes.io/arch=amd64"],
            },
            "egress_gateway_image": {
                "type": ["string", "null"],
                "description": "An image with Pando's binary at /usr/local/bin/pando, run as \
                    a restricted app's egress gateway (R-187). Unset means egress cannot be \
                    restricted on this runtime (R-186).",
                "default": null,
            },
            "helper_image": {
                "type": ["string", "null"],
                "description": "The image of the NetworkPolicy canary, the trial run's port \
                    observer and volume backups: any image with a POSIX shell, tar, wget and \
                    httpd, such as busybox.",
                "default": DEFAULT_HELPER_IMAGE,
            },
            "edge_namespace": {
                "type": ["string", "null"],
                "description": "The namespace the edge, Pando's public entry point (R-174), \
                    runs in. A DNS label.",
                "default": DEFAULT_EDGE_NAMESPACE,
                "maxLength": 63,
            },
            "edge_replicas": {
                "type": ["integer", "null"],
                "description": "The edge's replicas when its plan names none.",
                "default": DEFAULT_EDGE_REPLICAS,
                "minimum": 1,
                "maximum": i32::MAX,
            },
            "edge_runtime_class": {
                "type": ["string", "null"],
                "description": "The RuntimeClass the edge's pods run under, for the nodes \
                    and tolerations it schedules them with (nodes given to Pando may be \
                    tainted). Separate from `runtime_class`, which isolates apps. Unset is \
                    none.",
                "default": null,
                "maxLength": 253,
            },
            "edge_service_type": {
                "type": ["string", "null"],
                "description": "The type of the edge's Service, the only one Pando exposes \
                    outside the cluster.",
                "default": EdgeServiceType::default().as_str(),
                "enum": [EdgeServiceType::ALL[0], EdgeServiceType::ALL[1], null],
            },
            "edge_http_node_port": {
                "type": ["integer", "null"],
                "description": "The node port of the edge's HTTP port; unset lets Kubernetes \
                    choose.",
                "default": null,
                "minimum": node_port_min,
                "maximum": node_port_max,
            },
            "edge_https_node_port": {
                "type": ["integer", "null"],
                "description": "The node port of the edge's HTTPS port; unset lets Kubernetes \
                    choose. Not the same as `edge_http_node_port`.",
                "default": null,
                "minimum": node_port_min,
                "maximum": node_port_max,
            },
            "api_qps": {
                "type": ["integer", "null"],
                "description": "Requests a second this adapter makes to the cluster's API, \
                    paced inside each of its instances. It narrows the host's grant rate \
                    (`rate.qps`), never widens it: the lower of the two applies.",
                "default": DEFAULT_API_QPS,
                "minimum": 1,
                "maximum": u32::MAX,
            },
            "api_burst": {
                "type": ["integer", "null"],
                "description": "How many requests this adapter may make at once above \
                    `api_qps`, inside each instance. Like `api_qps` it narrows the host's \
                    grant (`rate.burst`), never widens it.",
                "default": DEFAULT_API_BURST,
                "minimum": 1,
                "maximum": u32::MAX,
            },
            "adapter_user": {
                "type": ["string", "null"],
                "description": "Who the adapter is to the API server, as the API server names \
                    it: a user (`pando`, the test cluster's token user) or \
                    `system:serviceaccount:<namespace>:<name>`. The adapter binds \
                    `namespace_role` to it in every namespace it makes; never another \
                    `system:` identity.",
                "default": crate::config::namespace_defaults::ADAPTER_USER,
                "maxLength": 253,
            },
            "namespace_role": {
                "type": ["string", "null"],
                "description": "The ClusterRole the adapter binds itself to in every namespace \
                    it makes: what it does inside a namespace (deploy/kubernetes/rbac.yaml). \
                    Not `app_role`.",
                "default": crate::config::namespace_defaults::NAMESPACE_ROLE,
                "maxLength": 253,
            },
            "app_quota": {
                "type": ["object", "null"],
                "description": "The ResourceQuota of each app and trial namespace: `pods`, \
                    `cpu_millis` (requests.cpu), `memory_bytes` (requests.memory), \
                    `memory_limit_bytes` (limits.memory), `storage_bytes` (requests.storage), \
                    `claims`; each optional, at least 1, under the cluster admission policy's \
                    ceiling.",
                "default": serde_json::to_value(AppQuota::default()).unwrap_or_default(),
                "additionalProperties": false,
                "properties": counts(&["pods", "cpu_millis", "memory_bytes", "memory_limit_bytes",
                    "storage_bytes", "claims"]),
            },
            "container_limits": {
                "type": ["object", "null"],
                "description": "The LimitRange of each app and trial namespace: a container \
                    without a memory limit gets `default_memory_bytes`, without requests \
                    `default_cpu_request_millis` and `default_memory_request_bytes`; none may \
                    have a memory limit above `max_memory_bytes`.",
                "default": serde_json::to_value(ContainerLimits::default()).unwrap_or_default(),
                "additionalProperties": false,
                "properties": counts(&["default_memory_bytes", "default_cpu_request_millis",
                    "default_memory_request_bytes", "max_memory_bytes"]),
            },
        },
    })
}

/// Integer properties of at least 1.
fn counts(keys: &[&str]) -> Value {
    Value::Object(
        keys.iter()
            .map(|k| ((*k).to_owned(), json!({ "type": "integer", "minimum": 1 })))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::config::Config;

    const MINIMAL: &str = r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#;

    fn properties() -> serde_json::Map<String, Value> {
        schema()["properties"].as_object().unwrap().clone()
    }

    /// The default-filled configuration, as JSON.
    fn defaults() -> serde_json::Map<String, Value> {
        let config = Config::parse(MINIMAL).unwrap();
        match serde_json::to_value(&config).unwrap() {
            Value::Object(map) => map,
            other => panic!("a Config serializes to {other}"),
        }
    }

    #[test]
    fn every_config_field_is_in_the_schema_and_vice_versa() {
        let in_schema: BTreeSet<_> = properties().keys().cloned().collect();
        let in_config: BTreeSet<_> = defaults().keys().cloned().collect();
        assert_eq!(in_schema, in_config);
    }

    #[test]
    fn every_schema_field_is_accepted_by_parse() {
        // deny_unknown_fields: a key of the schema that `parse` did not know
        // would be refused.
        for field in properties().keys() {
            let mut doc: serde_json::Map<String, Value> = serde_json::from_str(MINIMAL).unwrap();
            doc.entry(field.clone()).or_insert(Value::Null);
            Config::parse(&Value::Object(doc).to_string())
                .unwrap_or_else(|e| panic!("{field}: {e:?}"));
        }
    }

    #[test]
    fn schema_defaults_are_the_config_defaults() {
        let defaults = defaults();
        for (field, property) in properties() {
            if matches!(field.as_str(), "pod_cidr" | "service_cidr") {
                assert!(property.get("default").is_none(), "{field} has a default");
                continue;
            }
            assert_eq!(
                property.get("default"),
                Some(&defaults[&field]),
                "the schema's default of {field} is not the Config's"
            );
        }
    }

    #[test]
    fn every_field_has_a_type_and_a_description() {
        for (field, property) in properties() {
            assert!(property.get("type").is_some(), "{field} has no type");
            let description = property["description"].as_str().unwrap_or_default();
            assert!(description.len() > 20, "{field} has no description");
        }
    }

    #[test]
    fn required_fields_and_no_others() {
        let schema = schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["pod_cidr", "service_cidr"]));
    }

    #[test]
    fn the_cidr_pattern_admits_ipv4_and_ipv6() {
        // A spot check of the loose pattern against what `parse` accepts,
        // without a regex crate: every accepted CIDR is made of its
        // characters.
        for cidr in [
            "10.244.0.0/16",
            "fd00:10:244::/56",
            "::/0",
            "::ffff:10.0.0.0/104",
        ] {
            let (address, prefix) = cidr.split_once('/').unwrap();
            assert!(
                address
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == '.' || c == ':')
            );
            assert!(prefix.len() <= 3 && prefix.chars().all(|c| c.is_ascii_digit()));
            assert!(cidr.parse::<crate::config::Cidr>().is_ok(), "{cidr}");
        }
    }
}
