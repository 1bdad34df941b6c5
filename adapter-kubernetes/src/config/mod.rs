//! The adapter's configuration: the reference adapter's `Config`, less
//! `kubeconfig` and `context`, which are the host's concern (the host holds
//! the credentials and sends every request; the adapter never sees them).
//!
//! [`Config::parse`] (config/parse.rs) reads the JSON `configure` receives,
//! fills in the defaults ([`defaults`], the one place they are written) and
//! checks every value, so that the rest of the adapter works
//! with values that are known to be usable. Every refusal is
//! [`Error::Invalid`](pando_adapter_sdk::types::Error::Invalid) naming the field:
//! "configuration field `pod_cidr`: `10.0.0.0/33` is not a CIDR".
//!
//! A field that is absent, `null`, or (for a string) empty takes its default,
//! as an unset field does in the reference adapter (its fields are
//! `omitempty`); a number outside its range is refused, `0` included.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Serialize, Serializer};

use crate::kit::names;

pub use crate::isolation::cidr::Cidr;
pub use fields::NODE_PORT_RANGE;
pub use namespace::{AdapterUser, AppQuota, ContainerLimits};
pub use network::{DnsEgress, METADATA_ADDRESS};

pub mod defaults;
mod fields;
mod namespace;
mod network;
mod parse;
pub mod schema;

/// The adapter's configuration, validated, with every default filled in.
///
/// Serializes to the JSON `configure` accepts (optional fields unset as
/// `null`), so a parsed configuration can be shown or parsed again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Where Pando's server pods run. An app's namespace admits connections
    /// from pods here carrying Pando's server labels, and nothing else from
    /// outside itself.
    pub pando_namespace: String,
    /// The Service in front of Pando's server pods.
    pub pando_service: String,
    /// Pando's ServiceAccount, bound to `app_role` in each app namespace.
    pub service_account: String,
    /// The port Pando's proxy listens on in its pods, which the edge may reach.
    pub proxy_port: u16,
    /// The ClusterRole bound to Pando's ServiceAccount inside each app
    /// namespace it creates (deploy/kubernetes/rbac.yaml).
    pub app_role: String,
    /// The cluster's DNS domain, the tail of every upstream name.
    pub cluster_domain: String,
    /// The cluster's pod address ranges, at least one, of either family or
    /// both (dual stack): apps never open connections into them beyond
    /// their own namespace. `pod_cidr` in JSON, a CIDR or a list.
    #[serde(rename = "pod_cidr")]
    pub pod_cidrs: Vec<Cidr>,
    /// The cluster's Service address ranges, excluded likewise.
    #[serde(rename = "service_cidr")]
    pub service_cidrs: Vec<Cidr>,
    /// The nodes' addresses (the kubelet's port, NodePorts), excluded
    /// likewise; none by default.
    pub node_cidrs: Vec<Cidr>,
    /// Whether the cloud metadata address ([`METADATA_ADDRESS`]) is
    /// excluded from every egress rule (the default).
    pub exclude_metadata_address: bool,
    /// Where apps may send DNS queries.
    pub dns_egress: DnsEgress,
    /// The API server's address, which only the edge may reach, when it
    /// falls inside an excluded range.
    pub api_server_cidr: Option<Cidr>,
    /// The StorageClass volumes are made with; `None` is the cluster's
    /// default class.
    pub storage_class: Option<String>,
    /// A volume's size when its request names none.
    pub volume_size_bytes: u64,
    /// The RuntimeClass app pods run under; it decides the isolation class
    /// reported.
    pub runtime_class: Option<String>,
    /// The node labels app pods, and the capacity reported, are limited to.
    pub node_selector: NodeSelector,
    /// The image run as a restricted app's egress gateway; `None`
    /// means egress cannot be restricted on this runtime.
    pub egress_gateway_image: Option<String>,
    /// The image of the NetworkPolicy canary, the trial's port observer and
    /// volume backups.
    pub helper_image: String,
    /// The edge's namespace.
    pub edge_namespace: String,
    /// The edge's replicas when its plan names none.
    pub edge_replicas: u32,
    /// The RuntimeClass the edge's pods run under, for its scheduling (the
    /// class's node selector and tolerations: nodes Pando is given may be
    /// tainted); `None` is none. Apart from `runtime_class`: that one
    /// isolates untrusted apps, and the edge is Pando's own.
    pub edge_runtime_class: Option<String>,
    /// The type of the edge's Service, the only one Pando exposes.
    pub edge_service_type: EdgeServiceType,
    /// The node port of the edge's HTTP port, when fixed.
    pub edge_http_node_port: Option<u16>,
    /// The node port of the edge's HTTPS port, when fixed.
    pub edge_https_node_port: Option<u16>,
    /// Requests a second this adapter makes to the cluster's API.
    /// Paced in the guest (`pando_adapter_sdk::kube::set_budget`): it
    /// narrows the host's grant rate, never widens it.
    pub api_qps: u32,
    /// Requests it may make at once above `api_qps`.
    pub api_burst: u32,
    /// Who the adapter is to the API server: the subject of the RoleBinding
    /// it writes for itself in every namespace it makes (`pando`, or
    /// `system:serviceaccount:<namespace>:<name>` in the cluster).
    pub adapter_user: AdapterUser,
    /// The ClusterRole it binds itself to there: everything it does inside
    /// a namespace (deploy/kubernetes/rbac.yaml, `pando-adapter-namespace`).
    pub namespace_role: String,
    /// The ResourceQuota of each app (and trial) namespace.
    pub app_quota: AppQuota,
    /// The LimitRange of each app (and trial) namespace.
    pub container_limits: ContainerLimits,
}

impl Config {
    /// Puts on a pod's `spec` where app pods run: `runtime_class` (whose
    /// scheduling may take them to their nodes) and `node_selector`. The
    /// adapter's pods that stand in for an app's (its egress gateway, the
    /// canary) run there too.
    pub fn place_as_apps(&self, spec: &mut serde_json::Value) {
        if let Some(class) = &self.runtime_class {
            spec["runtimeClassName"] = serde_json::json!(class);
        }
        if !self.node_selector.is_empty() {
            spec["nodeSelector"] = serde_json::json!(self.node_selector.labels());
        }
    }
}

/// Node labels app pods are limited to, parsed from "key=value,key=value".
/// Empty selects every node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelector(BTreeMap<String, String>);

impl NodeSelector {
    /// Parse "key=value,key=value": keys and values as Kubernetes labels
    /// allow, spaces around them ignored, each key once. The error says why,
    /// without the field's name.
    pub fn parse(text: &str) -> Result<NodeSelector, String> {
        let mut labels = BTreeMap::new();
        if text.trim().is_empty() {
            return Ok(NodeSelector(labels));
        }
        for entry in text.split(',') {
            let (key, value) = entry
                .split_once('=')
                .ok_or_else(|| format!("`{}` is not `key=value`", entry.trim()))?;
            let (key, value) = (key.trim(), value.trim());
            names::check_label_key(key).map_err(|why| format!("label key `{key}` {why}"))?;
            names::check_label_value(value)
                .map_err(|why| format!("label value `{value}` {why}"))?;
            if labels.insert(key.to_owned(), value.to_owned()).is_some() {
                return Err(format!("label key `{key}` appears twice"));
            }
        }
        Ok(NodeSelector(labels))
    }

    /// The labels, by key.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// Whether it selects every node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for NodeSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{key}={value}")?;
        }
        Ok(())
    }
}

impl Serialize for NodeSelector {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The type of the edge's Service: the only Service Pando exposes
/// outside the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EdgeServiceType {
    /// A cloud load balancer in front of the edge.
    LoadBalancer,
    /// A port on every node.
    NodePort,
}

impl EdgeServiceType {
    /// Every accepted spelling, as Kubernetes spells them.
    pub const ALL: [&str; 2] = ["LoadBalancer", "NodePort"];

    fn parse(text: &str) -> Option<EdgeServiceType> {
        match text {
            "LoadBalancer" => Some(EdgeServiceType::LoadBalancer),
            "NodePort" => Some(EdgeServiceType::NodePort),
            _ => None,
        }
    }

    /// The Service's `spec.type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeServiceType::LoadBalancer => "LoadBalancer",
            EdgeServiceType::NodePort => "NodePort",
        }
    }
}

#[cfg(test)]
mod tests;
