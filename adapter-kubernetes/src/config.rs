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
use std::net::IpAddr;

use pando_adapter_sdk::types::Error;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::names;

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
    /// outside itself (R-023).
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
    /// The cluster's DNS domain, the tail of every upstream name (R-023).
    pub cluster_domain: String,
    /// The cluster's pod address range: apps never open connections into it
    /// beyond their own namespace.
    pub pod_cidr: Cidr,
    /// The cluster's Service address range, excluded likewise.
    pub service_cidr: Cidr,
    /// The API server's address, which only the edge may reach, when it
    /// falls inside an excluded range.
    pub api_server_cidr: Option<Cidr>,
    /// The StorageClass volumes are made with; `None` is the cluster's
    /// default class.
    pub storage_class: Option<String>,
    /// A volume's size when its request names none.
    pub volume_size_bytes: u64,
    /// The RuntimeClass app pods run under; it decides the isolation class
    /// reported (R-114, R-115).
    pub runtime_class: Option<String>,
    /// The node labels app pods, and the capacity reported, are limited to.
    pub node_selector: NodeSelector,
    /// The image run as a restricted app's egress gateway (R-187); `None`
    /// means egress cannot be restricted on this runtime (R-186).
    pub egress_gateway_image: Option<String>,
    /// The image of the NetworkPolicy canary, the trial's port observer and
    /// volume backups.
    pub helper_image: String,
    /// The edge's namespace (R-174).
    pub edge_namespace: String,
    /// The edge's replicas when its plan names none.
    pub edge_replicas: u32,
    /// The type of the edge's Service, the only one Pando exposes.
    pub edge_service_type: EdgeServiceType,
    /// The node port of the edge's HTTP port, when fixed.
    pub edge_http_node_port: Option<u16>,
    /// The node port of the edge's HTTPS port, when fixed.
    pub edge_https_node_port: Option<u16>,
    /// Requests a second this adapter makes to the cluster's API.
    pub api_qps: u32,
    /// Requests it may make at once above `api_qps`.
    pub api_burst: u32,
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
    api_server_cidr: Option<Value>,
    storage_class: Option<Value>,
    volume_size_bytes: Option<Value>,
    runtime_class: Option<Value>,
    node_selector: Option<Value>,
    egress_gateway_image: Option<Value>,
    helper_image: Option<Value>,
    edge_namespace: Option<Value>,
    edge_replicas: Option<Value>,
    edge_service_type: Option<Value>,
    edge_http_node_port: Option<Value>,
    edge_https_node_port: Option<Value>,
    api_qps: Option<Value>,
    api_burst: Option<Value>,
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

        let pod_cidr = required_cidr("pod_cidr", raw.pod_cidr, "10.244.0.0/16")?;
        let service_cidr = required_cidr("service_cidr", raw.service_cidr, "10.96.0.0/12")?;
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

        Ok(Config {
            pando_namespace,
            pando_service,
            service_account,
            proxy_port,
            app_role,
            cluster_domain,
            pod_cidr,
            service_cidr,
            api_server_cidr,
            storage_class,
            volume_size_bytes,
            runtime_class,
            node_selector,
            egress_gateway_image,
            helper_image,
            edge_namespace,
            edge_replicas,
            edge_service_type,
            edge_http_node_port,
            edge_https_node_port,
            api_qps,
            api_burst,
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

fn required_cidr(field: &str, value: Option<Value>, example: &str) -> Result<Cidr, Error> {
    match string(field, value)? {
        Some(text) => cidr(field, &text),
        None => Err(invalid_field(
            field,
            format!(
                "is required: the cluster's address range, as a CIDR such as `{example}` \
                 (the API does not report it reliably)"
            ),
        )),
    }
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

/// An IP address range: an IPv4 or IPv6 address and a prefix length.
///
/// Parsed from `address/prefix`; the address is kept masked to the prefix,
/// so `10.1.2.3/8` is `10.0.0.0/8` (as Go's `net.ParseCIDR` reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The network address (host bits zero).
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// The prefix length: at most 32 for IPv4, 128 for IPv6.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` is inside the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = mask32(self.prefix);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = mask128(self.prefix);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let (address, prefix) = text
            .split_once('/')
            .ok_or("an address and a prefix length are separated by `/`")?;
        let address: IpAddr = address
            .parse()
            .map_err(|_| format!("`{address}` is not an IPv4 or IPv6 address"))?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let canonical = !prefix.is_empty()
            && prefix.len() <= 3
            && prefix.bytes().all(|b| b.is_ascii_digit())
            && (prefix == "0" || !prefix.starts_with('0'));
        let prefix = match prefix.parse::<u8>() {
            Ok(p) if canonical && p <= max => p,
            _ => {
                return Err(format!(
                    "the prefix length must be a number from 0 to {max}"
                ));
            }
        };
        let address = match address {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(prefix)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(prefix)).into()),
        };
        Ok(Cidr { address, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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

/// The type of the edge's Service (R-174): the only Service Pando exposes
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
mod tests {
    use super::*;
    use pando_adapter_sdk::error::ErrorExt;

    const MINIMAL: &str = r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#;

    /// The minimal configuration with `field` set to `value` (JSON).
    fn with(field: &str, value: &str) -> Result<Config, Error> {
        let mut doc: serde_json::Map<String, Value> = serde_json::from_str(MINIMAL).unwrap();
        doc.insert(field.into(), serde_json::from_str(value).unwrap());
        Config::parse(&Value::Object(doc).to_string())
    }

    /// `field` set to `value` is refused as invalid, naming the field.
    fn refused(field: &str, value: &str) -> String {
        let err = with(field, value).expect_err(&format!("{field} = {value} was accepted"));
        assert_eq!(err.kind(), "invalid", "{field} = {value}: {err:?}");
        let message = err.message().to_owned();
        assert!(
            message.contains(&format!("`{field}`")),
            "{field} = {value}: the message does not name the field: {message}"
        );
        message
    }

    #[test]
    fn defaults() {
        let c = Config::parse(MINIMAL).unwrap();
        assert_eq!(c.pando_namespace, "pando-system");
        assert_eq!(c.pando_service, "pando");
        assert_eq!(c.service_account, "pando");
        assert_eq!(c.proxy_port, 8080);
        assert_eq!(c.app_role, "pando-app");
        assert_eq!(c.cluster_domain, "cluster.local");
        assert_eq!(c.pod_cidr.to_string(), "10.244.0.0/16");
        assert_eq!(c.service_cidr.to_string(), "10.96.0.0/12");
        assert_eq!(c.api_server_cidr, None);
        assert_eq!(c.storage_class, None);
        assert_eq!(c.volume_size_bytes, 1024 * 1024 * 1024);
        assert_eq!(c.runtime_class, None);
        assert!(c.node_selector.is_empty());
        assert_eq!(c.egress_gateway_image, None);
        assert_eq!(c.helper_image, "busybox:1.36");
        assert_eq!(c.edge_namespace, "pando-edge");
        assert_eq!(c.edge_replicas, 2);
        assert_eq!(c.edge_service_type, EdgeServiceType::LoadBalancer);
        assert_eq!(c.edge_http_node_port, None);
        assert_eq!(c.edge_https_node_port, None);
        assert_eq!(c.api_qps, 5);
        assert_eq!(c.api_burst, 10);
    }

    #[test]
    fn null_and_empty_strings_are_unset() {
        let c = with("pando_namespace", "null").unwrap();
        assert_eq!(c.pando_namespace, "pando-system");
        let c = with("storage_class", r#""""#).unwrap();
        assert_eq!(c.storage_class, None);
        let c = with("proxy_port", "null").unwrap();
        assert_eq!(c.proxy_port, 8080);
    }

    #[test]
    fn every_field_set() {
        let c = Config::parse(
            r#"{
                "pando_namespace": "pando",
                "pando_service": "pando-server",
                "service_account": "pando.server",
                "proxy_port": 9090,
                "app_role": "pando:app",
                "cluster_domain": "k8s.example.com",
                "pod_cidr": "fd00:10:244::/56",
                "service_cidr": "fd00:10:96::/112",
                "api_server_cidr": "172.18.0.2/32",
                "storage_class": "fast-ssd",
                "volume_size_bytes": 5368709120,
                "runtime_class": "gvisor",
                "node_selector": "pando.dev/apps=true, kubernetes.io/arch=amd64",
                "egress_gateway_image": "registry.example.com/pando@sha256:abc",
                "helper_image": "busybox:1.37",
                "edge_namespace": "edge",
                "edge_replicas": 3,
                "edge_service_type": "NodePort",
                "edge_http_node_port": 30080,
                "edge_https_node_port": 30443,
                "api_qps": 50,
                "api_burst": 100
            }"#,
        )
        .unwrap();
        assert_eq!(c.pod_cidr.to_string(), "fd00:10:244::/56");
        assert_eq!(c.api_server_cidr.unwrap().to_string(), "172.18.0.2/32");
        assert_eq!(
            c.node_selector
                .labels()
                .get("kubernetes.io/arch")
                .map(String::as_str),
            Some("amd64")
        );
        assert_eq!(
            c.node_selector.to_string(),
            "kubernetes.io/arch=amd64,pando.dev/apps=true"
        );
        assert_eq!(c.edge_service_type, EdgeServiceType::NodePort);
        assert_eq!(c.edge_http_node_port, Some(30080));
        assert_eq!(c.edge_https_node_port, Some(30443));
        assert_eq!(c.volume_size_bytes, 5 << 30);
        assert_eq!((c.api_qps, c.api_burst), (50, 100));
    }

    #[test]
    fn parsed_config_serializes_to_a_config_that_parses_the_same() {
        let c = with("node_selector", r#""b=2,a=1""#).unwrap();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(Config::parse(&text).unwrap(), c);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = with("kubeconfig", r#""/etc/kube""#).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(
            err.message().contains("unknown field `kubeconfig`"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn not_an_object_is_refused() {
        assert_eq!(Config::parse("[]").unwrap_err().kind(), "invalid");
        assert_eq!(Config::parse("{").unwrap_err().kind(), "invalid");
    }

    #[test]
    fn pod_cidr_is_required_and_a_cidr() {
        let err = Config::parse(r#"{"service_cidr":"10.96.0.0/12"}"#).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(
            err.message()
                .starts_with("configuration field `pod_cidr`: is required")
        );
        assert_eq!(Config::parse("").unwrap_err().kind(), "invalid");
        let message = refused("pod_cidr", r#""10.0.0.0/33""#);
        assert!(
            message.starts_with("configuration field `pod_cidr`: `10.0.0.0/33` is not a CIDR"),
            "{message}"
        );
        for bad in [
            r#""10.0.0.0""#,
            r#""10.0.0/8""#,
            r#""10.0.0.0/""#,
            r#""10.0.0.0/-1""#,
            r#""10.0.0.0/+8""#,
            r#""10.0.0.0/08""#,
            r#""010.0.0.0/8""#,
            r#""fd00::/129""#,
            r#""fd00::%eth0/64""#,
            r#""example.com/8""#,
            r#"" 10.0.0.0/8""#,
            "42",
        ] {
            refused("pod_cidr", bad);
        }
    }

    #[test]
    fn service_cidr_is_required_and_a_cidr() {
        let err = Config::parse(r#"{"pod_cidr":"10.244.0.0/16"}"#).unwrap_err();
        assert!(
            err.message()
                .starts_with("configuration field `service_cidr`: is required")
        );
        refused("service_cidr", r#""fd00::/200""#);
        refused("service_cidr", r#""10.96.0.0/12/1""#);
    }

    #[test]
    fn cidrs_accept_ipv4_and_ipv6_and_are_masked() {
        assert_eq!(
            with("pod_cidr", r#""10.1.2.3/8""#)
                .unwrap()
                .pod_cidr
                .to_string(),
            "10.0.0.0/8"
        );
        assert_eq!(
            with("pod_cidr", r#""0.0.0.0/0""#)
                .unwrap()
                .pod_cidr
                .to_string(),
            "0.0.0.0/0"
        );
        assert_eq!(
            with("pod_cidr", r#""::/0""#).unwrap().pod_cidr.to_string(),
            "::/0"
        );
        assert_eq!(
            with("pod_cidr", r#""fd00:1:2:3::1/64""#)
                .unwrap()
                .pod_cidr
                .to_string(),
            "fd00:1:2:3::/64"
        );
        let c: Cidr = "10.96.0.0/12".parse().unwrap();
        assert!(c.contains("10.100.0.1".parse().unwrap()));
        assert!(!c.contains("10.112.0.1".parse().unwrap()));
        assert!(!c.contains("fd00::1".parse().unwrap()));
        let c: Cidr = "fd00::/8".parse().unwrap();
        assert!(c.contains("fdff::1".parse().unwrap()));
        assert!(!c.contains("fe00::1".parse().unwrap()));
    }

    #[test]
    fn api_server_cidr_is_optional_and_a_cidr() {
        refused("api_server_cidr", r#""172.18.0.2""#);
        assert_eq!(
            with("api_server_cidr", r#""172.18.0.2/32""#)
                .unwrap()
                .api_server_cidr,
            Some("172.18.0.2/32".parse().unwrap())
        );
    }

    #[test]
    fn pando_namespace_is_a_dns_label() {
        refused("pando_namespace", r#""Pando""#);
        refused("pando_namespace", r#""pando.system""#);
        refused("pando_namespace", &format!(r#""{}""#, "a".repeat(64)));
        refused("pando_namespace", "7");
    }

    #[test]
    fn pando_service_is_a_dns1035_label() {
        refused("pando_service", r#""1pando""#);
        refused("pando_service", r#""pando-""#);
        assert_eq!(
            with("pando_service", r#""pando-web""#)
                .unwrap()
                .pando_service,
            "pando-web"
        );
    }

    #[test]
    fn service_account_is_a_dns_subdomain() {
        refused("service_account", r#""pando/x""#);
        refused("service_account", r#""Pando""#);
    }

    #[test]
    fn proxy_port_is_a_port() {
        refused("proxy_port", "0");
        refused("proxy_port", "65536");
        refused("proxy_port", "-1");
        refused("proxy_port", "80.5");
        refused("proxy_port", r#""8080""#);
        assert_eq!(with("proxy_port", "65535").unwrap().proxy_port, 65535);
    }

    #[test]
    fn app_role_is_a_name() {
        refused("app_role", r#""pando/app""#);
        refused("app_role", r#"".""#);
        refused("app_role", r#""a%b""#);
        assert_eq!(
            with("app_role", r#""system:pando""#).unwrap().app_role,
            "system:pando"
        );
    }

    #[test]
    fn cluster_domain_is_a_dns_subdomain() {
        refused("cluster_domain", r#""cluster..local""#);
        refused("cluster_domain", r#""Cluster.Local""#);
        refused("cluster_domain", r#""cluster.local.""#);
    }

    #[test]
    fn storage_class_is_a_dns_subdomain() {
        refused("storage_class", r#""Fast SSD""#);
        assert_eq!(
            with("storage_class", r#""fast.ssd""#)
                .unwrap()
                .storage_class
                .as_deref(),
            Some("fast.ssd")
        );
    }

    #[test]
    fn volume_size_bytes_is_positive() {
        let message = refused("volume_size_bytes", "0");
        assert!(message.contains("out of range"), "{message}");
        refused("volume_size_bytes", "-5");
        refused("volume_size_bytes", "1.5");
        refused("volume_size_bytes", r#""1Gi""#);
        assert_eq!(with("volume_size_bytes", "1").unwrap().volume_size_bytes, 1);
    }

    #[test]
    fn runtime_class_is_a_dns_subdomain() {
        refused("runtime_class", r#""g visor""#);
        assert_eq!(
            with("runtime_class", r#""kata-qemu""#)
                .unwrap()
                .runtime_class
                .as_deref(),
            Some("kata-qemu")
        );
    }

    #[test]
    fn node_selector_is_parsed_and_validated() {
        let c = with("node_selector", r#""pool=apps""#).unwrap();
        assert_eq!(c.node_selector.labels().len(), 1);
        let c = with("node_selector", r#""example.com/empty=""#).unwrap();
        assert_eq!(c.node_selector.labels()["example.com/empty"], "");
        for bad in [
            r#""pool""#,
            r#""pool=apps,""#,
            r#""=apps""#,
            r#""pool=a b""#,
            r#""pool=-apps""#,
            r#""Example.com/pool=apps""#,
            r#""/pool=apps""#,
            r#""a/b/c=d""#,
            r#""pool=apps,pool=other""#,
            "1",
        ] {
            refused("node_selector", bad);
        }
        let long_name = format!(r#""{}=x""#, "a".repeat(64));
        refused("node_selector", &long_name);
        let long_value = format!(r#""pool={}""#, "a".repeat(64));
        refused("node_selector", &long_value);
    }

    #[test]
    fn egress_gateway_image_is_an_image() {
        refused("egress_gateway_image", r#""pando gateway""#);
        assert!(
            with("egress_gateway_image", r#""pando:1""#)
                .unwrap()
                .egress_gateway_image
                .is_some()
        );
    }

    #[test]
    fn helper_image_is_an_image() {
        refused("helper_image", r#""busybox\t1.36""#);
        refused("helper_image", "true");
    }

    #[test]
    fn edge_namespace_is_a_dns_label() {
        refused("edge_namespace", r#""pando_edge""#);
    }

    #[test]
    fn edge_replicas_is_at_least_one() {
        refused("edge_replicas", "0");
        refused("edge_replicas", "2147483648");
        assert_eq!(with("edge_replicas", "1").unwrap().edge_replicas, 1);
    }

    #[test]
    fn edge_service_type_is_load_balancer_or_node_port() {
        refused("edge_service_type", r#""ClusterIP""#);
        refused("edge_service_type", r#""nodeport""#);
        assert_eq!(
            with("edge_service_type", r#""NodePort""#)
                .unwrap()
                .edge_service_type,
            EdgeServiceType::NodePort
        );
    }

    #[test]
    fn edge_http_node_port_is_in_the_node_port_range() {
        refused("edge_http_node_port", "29999");
        refused("edge_http_node_port", "32768");
        refused("edge_http_node_port", "0");
        assert_eq!(
            with("edge_http_node_port", "30000")
                .unwrap()
                .edge_http_node_port,
            Some(30000)
        );
    }

    #[test]
    fn edge_https_node_port_is_in_the_node_port_range_and_not_the_http_one() {
        refused("edge_https_node_port", "80");
        assert_eq!(
            with("edge_https_node_port", "32767")
                .unwrap()
                .edge_https_node_port,
            Some(32767)
        );
        let err = Config::parse(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12",
                "edge_http_node_port":30080,"edge_https_node_port":30080}"#,
        )
        .unwrap_err();
        assert!(
            err.message().contains("`edge_https_node_port`"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn api_qps_is_positive() {
        refused("api_qps", "0");
        refused("api_qps", "4294967296");
    }

    #[test]
    fn api_burst_is_positive() {
        refused("api_burst", "0");
        assert_eq!(with("api_burst", "1").unwrap().api_burst, 1);
    }
}
