//! [`Config::parse`]: the JSON `configure` receives, read field by field
//! over the defaults ([`defaults::config`]), in five sections.

use pando_adapter_sdk::types::Error;
use serde::Deserialize;
use serde_json::Value;

use super::fields::{
    boolean, check_image, cidr, invalid_field, name, node_port, number, optional_name, string,
};
use super::{Config, EdgeServiceType, NodeSelector, defaults, namespace, network};
use crate::kit::names;

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
        let mut raw: RawConfig = pando_adapter_sdk::config::parse(text)?;
        let mut config = defaults::config();
        config.read_pando(&mut raw)?;
        config.read_network(&mut raw)?;
        config.read_pods(&mut raw)?;
        config.read_edge(&mut raw)?;
        config.read_own(&mut raw)?;
        Ok(config)
    }

    /// Pando's own server, its ServiceAccount and role, and the cluster's
    /// domain.
    fn read_pando(&mut self, raw: &mut RawConfig) -> Result<(), Error> {
        let v = raw.pando_namespace.take();
        name(
            &mut self.pando_namespace,
            "pando_namespace",
            v,
            names::check_dns_label,
        )?;
        let v = raw.pando_service.take();
        name(
            &mut self.pando_service,
            "pando_service",
            v,
            names::check_dns1035_label,
        )?;
        let v = raw.service_account.take();
        name(
            &mut self.service_account,
            "service_account",
            v,
            names::check_dns_subdomain,
        )?;
        let v = raw.proxy_port.take();
        number(&mut self.proxy_port, "proxy_port", v, 1, u16::MAX.into())?;
        let v = raw.app_role.take();
        name(
            &mut self.app_role,
            "app_role",
            v,
            names::check_path_segment_name,
        )?;
        let v = raw.cluster_domain.take();
        name(
            &mut self.cluster_domain,
            "cluster_domain",
            v,
            names::check_dns_subdomain,
        )
    }

    /// The cluster's ranges, the metadata address, DNS and the API server's
    /// address (config/network.rs).
    fn read_network(&mut self, raw: &mut RawConfig) -> Result<(), Error> {
        self.pod_cidrs =
            network::cidr_list("pod_cidr", raw.pod_cidr.take(), Some("10.244.0.0/16"))?;
        self.service_cidrs = network::cidr_list(
            "service_cidr",
            raw.service_cidr.take(),
            Some("10.96.0.0/12"),
        )?;
        self.node_cidrs = network::cidr_list("node_cidrs", raw.node_cidrs.take(), None)?;
        let v = raw.exclude_metadata_address.take();
        if let Some(exclude) = boolean("exclude_metadata_address", v)? {
            self.exclude_metadata_address = exclude;
        }
        self.dns_egress = network::dns_egress(raw.dns_egress.take(), self.dns_egress.clone())?;
        if let Some(text) = string("api_server_cidr", raw.api_server_cidr.take())? {
            self.api_server_cidr = Some(cidr("api_server_cidr", &text)?);
        }
        Ok(())
    }

    /// What app pods, volumes and the adapter's own pods are made with.
    fn read_pods(&mut self, raw: &mut RawConfig) -> Result<(), Error> {
        let v = raw.storage_class.take();
        optional_name(
            &mut self.storage_class,
            "storage_class",
            v,
            names::check_dns_subdomain,
        )?;
        let v = raw.volume_size_bytes.take();
        number(
            &mut self.volume_size_bytes,
            "volume_size_bytes",
            v,
            1,
            i64::MAX as u64,
        )?;
        let v = raw.runtime_class.take();
        optional_name(
            &mut self.runtime_class,
            "runtime_class",
            v,
            names::check_dns_subdomain,
        )?;
        if let Some(text) = string("node_selector", raw.node_selector.take())? {
            self.node_selector = NodeSelector::parse(&text).map_err(|why| {
                invalid_field(
                    "node_selector",
                    format!("`{text}` is not a selector: {why}"),
                )
            })?;
        }
        let v = raw.egress_gateway_image.take();
        optional_name(
            &mut self.egress_gateway_image,
            "egress_gateway_image",
            v,
            check_image,
        )?;
        let v = raw.helper_image.take();
        name(&mut self.helper_image, "helper_image", v, check_image)
    }

    /// The edge: its namespace, replicas, RuntimeClass and Service.
    fn read_edge(&mut self, raw: &mut RawConfig) -> Result<(), Error> {
        let v = raw.edge_namespace.take();
        name(
            &mut self.edge_namespace,
            "edge_namespace",
            v,
            names::check_dns_label,
        )?;
        let v = raw.edge_replicas.take();
        number(
            &mut self.edge_replicas,
            "edge_replicas",
            v,
            1,
            i32::MAX as u64,
        )?;
        let (v, field) = (raw.edge_runtime_class.take(), "edge_runtime_class");
        optional_name(
            &mut self.edge_runtime_class,
            field,
            v,
            names::check_dns_subdomain,
        )?;
        if let Some(text) = string("edge_service_type", raw.edge_service_type.take())? {
            self.edge_service_type = EdgeServiceType::parse(&text).ok_or_else(|| {
                invalid_field(
                    "edge_service_type",
                    format!("`{text}` is neither `LoadBalancer` nor `NodePort`"),
                )
            })?;
        }
        self.edge_http_node_port =
            node_port("edge_http_node_port", raw.edge_http_node_port.take())?;
        self.edge_https_node_port =
            node_port("edge_https_node_port", raw.edge_https_node_port.take())?;
        if let (Some(http), Some(https)) = (self.edge_http_node_port, self.edge_https_node_port)
            && http == https
        {
            return Err(invalid_field(
                "edge_https_node_port",
                format!("{https} is also `edge_http_node_port`: the two need different ports"),
            ));
        }
        Ok(())
    }

    /// The adapter's own: its request budget, who it is, the role it binds
    /// itself to, and what each namespace it makes gets (config/namespace.rs).
    fn read_own(&mut self, raw: &mut RawConfig) -> Result<(), Error> {
        number(
            &mut self.api_qps,
            "api_qps",
            raw.api_qps.take(),
            1,
            u32::MAX.into(),
        )?;
        number(
            &mut self.api_burst,
            "api_burst",
            raw.api_burst.take(),
            1,
            u32::MAX.into(),
        )?;
        if let Some(user) = namespace::adapter_user(raw.adapter_user.take())? {
            self.adapter_user = user;
        }
        let v = raw.namespace_role.take();
        name(
            &mut self.namespace_role,
            "namespace_role",
            v,
            names::check_path_segment_name,
        )?;
        if self.namespace_role == self.app_role {
            return Err(invalid_field(
                "namespace_role",
                format!(
                    "`{}` is also `app_role`: the adapter's own role and Pando's are two roles",
                    self.namespace_role
                ),
            ));
        }
        self.app_quota = namespace::app_quota(raw.app_quota.take(), self.app_quota)?;
        self.container_limits =
            namespace::container_limits(raw.container_limits.take(), self.container_limits)?;
        Ok(())
    }
}
