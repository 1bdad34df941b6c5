//! The adapter's configuration: the reference adapter's `Config`, less
//! `kubeconfig` and `context`, which are the host's concern (the host holds
//! the credentials and sends every request; the adapter never sees them).
//!
//! [`Config::parse`] reads the JSON `configure` receives, fills in the
//! defaults and checks every value, so that the rest of the adapter works
//! with values that are known to be usable. Every refusal is
//! [`Error::Invalid`] naming the field:
//! "configuration field `pod_cidr`: `10.0.0.0/33` is not a CIDR".
//!
//! A field that is absent, `null`, or (for a string) empty takes its default,
//! as an unset field does in the reference adapter (its fields are
//! `omitempty`); a number outside its range is refused, `0` included.

use std::collections::BTreeMap;
use std::fmt;

use pando_adapter_sdk::types::Error;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::kit::names;

pub use crate::isolation::cidr::Cidr;
pub use namespace::{AdapterUser, AppQuota, ContainerLimits};
pub use network::{DnsEgress, METADATA_ADDRESS};

/// The defaults of `adapter_user` and `namespace_role`.
pub mod namespace_defaults {
    pub use super::namespace::DEFAULT_ADAPTER_USER as ADAPTER_USER;
    pub use super::namespace::DEFAULT_NAMESPACE_ROLE as NAMESPACE_ROLE;
}

mod namespace;
mod network;
pub mod schema;

/// Default of `pando_namespace`.
pub const DEFAULT_PANDO_NAMESPACE: &str = "pando-system";
/// Default of `pando_service`.
pub const DEFAULT_PANDO_SERVICE: &str = "pando";
/// Default of `service_account`.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "pando";
/// Default of `proxy_port`.
pub const DEFAULT_PROXY_PORT: u16 = 8080;
/// Default of `app_role`.
pub const DEFAULT_APP_ROLE: &str = "pando-app";
/// Default of `cluster_domain`.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
/// Default of `volume_size_bytes`: 1 GiB.
pub const DEFAULT_VOLUME_SIZE_BYTES: u64 = 1 << 30;
/// Default of `helper_image`.
pub const DEFAULT_HELPER_IMAGE: &str = "busybox:1.36";
/// Default of `edge_namespace`.
pub const DEFAULT_EDGE_NAMESPACE: &str = "pando-edge";
/// Default of `edge_replicas`.
pub const DEFAULT_EDGE_REPLICAS: u32 = 2;
/// Default of `api_qps` (client-go's).
pub const DEFAULT_API_QPS: u32 = 5;
/// Default of `api_burst` (client-go's).
pub const DEFAULT_API_BURST: u32 = 10;
/// The range Kubernetes allocates node ports from by default.
pub const NODE_PORT_RANGE: std::ops::RangeInclusive<u16> = 30000..=32767;

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

/// The JSON as received: every field optional and untyped, so that each
/// value is checked, and refused, under its own field's name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    pando_namespace: Option<Value>,
    pando_service: Option<Value>,
    service_account: Option<Value>,
    proxy_port: Option<Value>,
    app_role: Option<Value>,
    cluster_domain: Option<Value>,
    pod_cidr: Option<Value>,
    service_cidr: Option<Value>,
    node_cidrs: Option<Value>,
    exclude_metadata_address: Option<Value>,
    dns_egress: Option<Value>,
    api_server_cidr: Option<Value>,
    storage_class: Option<Value>,
    volume_size_bytes: Option<Value>,
    runtime_class: Option<Value>,
    node_selector: Option<Value>,
    egress_gateway_image: Option<Value>,
    helper_image: Option<Value>,
    edge_namespace: Option<Value>,
    edge_replicas: Option<Value>,
    edge_runtime_class: Option<Value>,
    edge_service_type: Option<Value>,
    edge_http_node_port: Option<Value>,
    edge_https_node_port: Option<Value>,
    api_qps: Option<Value>,
    api_burst: Option<Value>,
    adapter_user: Option<Value>,
    namespace_role: Option<Value>,
    app_quota: Option<Value>,
    container_limits: Option<Value>,
}

impl Config {
    /// Parse and validate the JSON configuration. Empty text is `{}`, which
    /// fails for want of `pod_cidr`.
    pub fn parse(text: &str) -> Result<Config, Error> {
        let raw: RawConfig = pando_adapter_sdk::config::parse(text)?;

        let pando_namespace = string("pando_namespace", raw.pando_namespace)?
            .unwrap_or_else(|| DEFAULT_PANDO_NAMESPACE.into());
        check("pando_namespace", &pando_namespace, names::check_dns_label)?;

        let pando_service = string("pando_service", raw.pando_service)?
            .unwrap_or_else(|| DEFAULT_PANDO_SERVICE.into());
        check("pando_service", &pando_service, names::check_dns1035_label)?;

        let service_account = string("service_account", raw.service_account)?
            .unwrap_or_else(|| DEFAULT_SERVICE_ACCOUNT.into());
        check(
            "service_account",
            &service_account,
            names::check_dns_subdomain,
        )?;

        let proxy_port = match integer("proxy_port", raw.proxy_port, 1, u16::MAX.into())? {
            Some(port) => port as u16,
            None => DEFAULT_PROXY_PORT,
        };

        let app_role = string("app_role", raw.app_role)?.unwrap_or_else(|| DEFAULT_APP_ROLE.into());
        check("app_role", &app_role, names::check_path_segment_name)?;

        let cluster_domain = string("cluster_domain", raw.cluster_domain)?
            .unwrap_or_else(|| DEFAULT_CLUSTER_DOMAIN.into());
        check(
            "cluster_domain",
            &cluster_domain,
            names::check_dns_subdomain,
        )?;

        let pod_cidrs = network::cidr_list("pod_cidr", raw.pod_cidr, Some("10.244.0.0/16"))?;
        let service_cidrs =
            network::cidr_list("service_cidr", raw.service_cidr, Some("10.96.0.0/12"))?;
        let node_cidrs = network::cidr_list("node_cidrs", raw.node_cidrs, None)?;
        let exclude_metadata_address =
            network::boolean("exclude_metadata_address", raw.exclude_metadata_address)?
                .unwrap_or(true);
        let dns_egress = network::dns_egress(raw.dns_egress)?;
        let api_server_cidr = string("api_server_cidr", raw.api_server_cidr)?
            .map(|text| cidr("api_server_cidr", &text))
            .transpose()?;

        let storage_class = string("storage_class", raw.storage_class)?;
        if let Some(class) = &storage_class {
            check("storage_class", class, names::check_dns_subdomain)?;
        }

        let volume_size_bytes = integer(
            "volume_size_bytes",
            raw.volume_size_bytes,
            1,
            i64::MAX as u64,
        )?
        .unwrap_or(DEFAULT_VOLUME_SIZE_BYTES);

        let runtime_class = string("runtime_class", raw.runtime_class)?;
        if let Some(class) = &runtime_class {
            check("runtime_class", class, names::check_dns_subdomain)?;
        }

        let node_selector = match string("node_selector", raw.node_selector)? {
            Some(text) => NodeSelector::parse(&text).map_err(|why| {
                invalid_field(
                    "node_selector",
                    format!("`{text}` is not a selector: {why}"),
                )
            })?,
            None => NodeSelector::default(),
        };

        let egress_gateway_image = string("egress_gateway_image", raw.egress_gateway_image)?;
        if let Some(image) = &egress_gateway_image {
            check("egress_gateway_image", image, check_image)?;
        }

        let helper_image = string("helper_image", raw.helper_image)?
            .unwrap_or_else(|| DEFAULT_HELPER_IMAGE.into());
        check("helper_image", &helper_image, check_image)?;

        let edge_namespace = string("edge_namespace", raw.edge_namespace)?
            .unwrap_or_else(|| DEFAULT_EDGE_NAMESPACE.into());
        check("edge_namespace", &edge_namespace, names::check_dns_label)?;

        let edge_replicas = match integer("edge_replicas", raw.edge_replicas, 1, i32::MAX as u64)? {
            Some(n) => n as u32,
            None => DEFAULT_EDGE_REPLICAS,
        };

        let edge_runtime_class = string("edge_runtime_class", raw.edge_runtime_class)?;
        if let Some(class) = &edge_runtime_class {
            check("edge_runtime_class", class, names::check_dns_subdomain)?;
        }

        let edge_service_type = match string("edge_service_type", raw.edge_service_type)? {
            Some(text) => EdgeServiceType::parse(&text).ok_or_else(|| {
                invalid_field(
                    "edge_service_type",
                    format!("`{text}` is neither `LoadBalancer` nor `NodePort`"),
                )
            })?,
            None => EdgeServiceType::LoadBalancer,
        };

        let edge_http_node_port = node_port("edge_http_node_port", raw.edge_http_node_port)?;
        let edge_https_node_port = node_port("edge_https_node_port", raw.edge_https_node_port)?;
        if let (Some(http), Some(https)) = (edge_http_node_port, edge_https_node_port)
            && http == https
        {
            return Err(invalid_field(
                "edge_https_node_port",
                format!("{https} is also `edge_http_node_port`: the two need different ports"),
            ));
        }

        let api_qps = match integer("api_qps", raw.api_qps, 1, u32::MAX.into())? {
            Some(n) => n as u32,
            None => DEFAULT_API_QPS,
        };
        let api_burst = match integer("api_burst", raw.api_burst, 1, u32::MAX.into())? {
            Some(n) => n as u32,
            None => DEFAULT_API_BURST,
        };

        let adapter_user = namespace::adapter_user(raw.adapter_user)?;
        let namespace_role = string("namespace_role", raw.namespace_role)?
            .unwrap_or_else(|| namespace::DEFAULT_NAMESPACE_ROLE.into());
        check(
            "namespace_role",
            &namespace_role,
            names::check_path_segment_name,
        )?;
        if namespace_role == app_role {
            return Err(invalid_field(
                "namespace_role",
                format!(
                    "`{namespace_role}` is also `app_role`: the adapter's own role and Pando's \
                     are two roles"
                ),
            ));
        }
        let app_quota = namespace::app_quota(raw.app_quota)?;
        let container_limits = namespace::container_limits(raw.container_limits)?;

        Ok(Config {
            pando_namespace,
            pando_service,
            service_account,
            proxy_port,
            app_role,
            cluster_domain,
            pod_cidrs,
            service_cidrs,
            node_cidrs,
            exclude_metadata_address,
            dns_egress,
            api_server_cidr,
            storage_class,
            volume_size_bytes,
            runtime_class,
            node_selector,
            egress_gateway_image,
            helper_image,
            edge_namespace,
            edge_replicas,
            edge_runtime_class,
            edge_service_type,
            edge_http_node_port,
            edge_https_node_port,
            api_qps,
            api_burst,
            adapter_user,
            namespace_role,
            app_quota,
            container_limits,
        })
    }
}

/// "configuration field `<field>`: <why>".
pub(crate) fn invalid_field(field: &str, why: impl fmt::Display) -> Error {
    Error::Invalid(format!("configuration field `{field}`: {why}"))
}

/// A string field's value: `None` when absent, `null` or empty.
fn string(field: &str, value: Option<Value>) -> Result<Option<String>, Error> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid_field(field, format!("`{other}` is not a string"))),
    }
}

/// An integer field's value in `min..=max`: `None` when absent or `null`.
fn integer(field: &str, value: Option<Value>, min: u64, max: u64) -> Result<Option<u64>, Error> {
    let value = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let n = match &value {
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
        Some(_) => Err(invalid_field(
            field,
            format!("{value} is out of range: it must be from {min} to {max}"),
        )),
        None if value.is_number() => Err(invalid_field(
            field,
            format!("{value} is out of range: it must be a whole number from {min} to {max}"),
        )),
        None => Err(invalid_field(field, format!("`{value}` is not a number"))),
    }
}

/// Apply a name check, naming the field in its refusal.
fn check(field: &str, value: &str, f: fn(&str) -> Result<(), String>) -> Result<(), Error> {
    f(value).map_err(|why| invalid_field(field, format!("`{value}` {why}")))
}

fn cidr(field: &str, text: &str) -> Result<Cidr, Error> {
    text.parse::<Cidr>()
        .map_err(|why| invalid_field(field, format!("`{text}` is not a CIDR ({why})")))
}

fn node_port(field: &str, value: Option<Value>) -> Result<Option<u16>, Error> {
    Ok(integer(
        field,
        value,
        (*NODE_PORT_RANGE.start()).into(),
        (*NODE_PORT_RANGE.end()).into(),
    )?
    .map(|n| n as u16))
}

/// An image reference, loosely: not blank, no whitespace or control
/// characters. The registry decides the rest when a node pulls it.
fn check_image(image: &str) -> Result<(), String> {
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("is not an image reference: it contains whitespace".into());
    }
    if image.len() > 4096 {
        return Err("is not an image reference: it is longer than 4096 characters".into());
    }
    Ok(())
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum EdgeServiceType {
    /// A cloud load balancer in front of the edge.
    #[default]
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
