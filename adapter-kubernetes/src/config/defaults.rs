//! Every default of the configuration, written once: [`config`] is what an
//! empty document would give, were the cluster's ranges not required.
//! `Config::parse` starts from it and changes what the document sets, and
//! the schema reports it (config/schema.rs), so the two never disagree.
//!
//! The quota and the limit range stay well under the cluster admission
//! policy's ceiling (deploy/kubernetes/admission-policy.yaml).

use std::collections::BTreeMap;

use super::namespace::{AdapterUser, AppQuota, ContainerLimits};
use super::network::{DnsEgress, NAMESPACE_NAME_LABEL};
use super::{Config, EdgeServiceType, NodeSelector};

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

/// Default of `adapter_user`: the test cluster's token user, the one
/// deploy/kubernetes/rbac.yaml binds.
pub const DEFAULT_ADAPTER_USER: &str = "pando";
/// Default of `namespace_role`.
pub const DEFAULT_NAMESPACE_ROLE: &str = "pando-adapter-namespace";
/// Default DNS port.
pub const DEFAULT_DNS_PORT: u16 = 53;
/// Default namespace of the cluster's DNS.
pub const DEFAULT_DNS_NAMESPACE: &str = "kube-system";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The configuration with every default: the cluster's ranges (`pod_cidr`,
/// `service_cidr`) empty, since they have none and a document must give
/// them; the optional settings unset.
pub fn config() -> Config {
    Config {
        pando_namespace: DEFAULT_PANDO_NAMESPACE.into(),
        pando_service: DEFAULT_PANDO_SERVICE.into(),
        service_account: DEFAULT_SERVICE_ACCOUNT.into(),
        proxy_port: DEFAULT_PROXY_PORT,
        app_role: DEFAULT_APP_ROLE.into(),
        cluster_domain: DEFAULT_CLUSTER_DOMAIN.into(),
        pod_cidrs: Vec::new(),
        service_cidrs: Vec::new(),
        node_cidrs: Vec::new(),
        exclude_metadata_address: true,
        dns_egress: DnsEgress::default(),
        api_server_cidr: None,
        storage_class: None,
        volume_size_bytes: DEFAULT_VOLUME_SIZE_BYTES,
        runtime_class: None,
        node_selector: NodeSelector::default(),
        egress_gateway_image: None,
        helper_image: DEFAULT_HELPER_IMAGE.into(),
        edge_namespace: DEFAULT_EDGE_NAMESPACE.into(),
        edge_replicas: DEFAULT_EDGE_REPLICAS,
        edge_runtime_class: None,
        edge_service_type: EdgeServiceType::LoadBalancer,
        edge_http_node_port: None,
        edge_https_node_port: None,
        api_qps: DEFAULT_API_QPS,
        api_burst: DEFAULT_API_BURST,
        adapter_user: AdapterUser::User(DEFAULT_ADAPTER_USER.into()),
        namespace_role: DEFAULT_NAMESPACE_ROLE.into(),
        app_quota: AppQuota::default(),
        container_limits: ContainerLimits::default(),
    }
}

/// The defaults as the JSON `configure` accepts, by field, for the schema:
/// every field but the required ones.
pub fn as_json() -> serde_json::Map<String, serde_json::Value> {
    let mut fields = match serde_json::to_value(config()) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    fields.remove("pod_cidr");
    fields.remove("service_cidr");
    fields
}

impl Default for AppQuota {
    fn default() -> AppQuota {
        AppQuota {
            pods: 50,
            cpu_millis: 16_000,
            memory_bytes: 32 * GIB,
            memory_limit_bytes: 64 * GIB,
            storage_bytes: 100 * GIB,
            claims: 20,
        }
    }
}

impl Default for ContainerLimits {
    fn default() -> ContainerLimits {
        ContainerLimits {
            default_memory_bytes: GIB,
            default_cpu_request_millis: 100,
            default_memory_request_bytes: 64 * MIB,
            max_memory_bytes: 16 * GIB,
        }
    }
}

impl Default for DnsEgress {
    fn default() -> DnsEgress {
        DnsEgress {
            namespace_selector: BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_owned(),
                DEFAULT_DNS_NAMESPACE.to_owned(),
            )]),
            pod_selector: BTreeMap::new(),
            cidrs: Vec::new(),
            port: DEFAULT_DNS_PORT,
        }
    }
}
