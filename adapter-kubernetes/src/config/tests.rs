//! Each configuration field's default and validation.
use pando_adapter_sdk::types::Error;
use serde_json::Value;

use super::*;
use pando_adapter_sdk::error::ErrorExt;
use serde_json::json;

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
    assert_eq!(c.pod_cidrs[0].to_string(), "10.244.0.0/16");
    assert_eq!(c.service_cidrs[0].to_string(), "10.96.0.0/12");
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
            "edge_runtime_class": "edge-nodes",
            "edge_service_type": "NodePort",
            "edge_http_node_port": 30080,
            "edge_https_node_port": 30443,
            "api_qps": 50,
            "api_burst": 100
        }"#,
    )
    .unwrap();
    assert_eq!(c.pod_cidrs[0].to_string(), "fd00:10:244::/56");
    assert_eq!(c.edge_runtime_class.as_deref(), Some("edge-nodes"));
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
        with("pod_cidr", r#""10.1.2.3/8""#).unwrap().pod_cidrs[0].to_string(),
        "10.0.0.0/8"
    );
    assert_eq!(
        with("pod_cidr", r#""0.0.0.0/0""#).unwrap().pod_cidrs[0].to_string(),
        "0.0.0.0/0"
    );
    assert_eq!(
        with("pod_cidr", r#""::/0""#).unwrap().pod_cidrs[0].to_string(),
        "::/0"
    );
    assert_eq!(
        with("pod_cidr", r#""fd00:1:2:3::1/64""#).unwrap().pod_cidrs[0].to_string(),
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

#[test]
fn adapter_user_defaults_to_the_test_clusters_user_and_takes_a_service_account() {
    let c = Config::parse(MINIMAL).unwrap();
    assert_eq!(c.adapter_user, AdapterUser::User("pando".into()));
    assert_eq!(c.adapter_user.subject()["kind"], "User");
    assert_eq!(c.namespace_role, "pando-adapter-namespace");
    let c = with(
        "adapter_user",
        r#""system:serviceaccount:pando-system:pando-adapter""#,
    )
    .unwrap();
    assert_eq!(
        c.adapter_user,
        AdapterUser::ServiceAccount {
            namespace: "pando-system".into(),
            name: "pando-adapter".into()
        }
    );
    let subject = c.adapter_user.subject();
    assert_eq!(
        (&subject["kind"], &subject["namespace"], &subject["name"]),
        (
            &json!("ServiceAccount"),
            &json!("pando-system"),
            &json!("pando-adapter")
        )
    );
    assert!(subject.get("apiGroup").is_none(), "{subject}");
    // Shown as the API server names it, and parsed back the same.
    assert_eq!(
        c.adapter_user.to_string(),
        "system:serviceaccount:pando-system:pando-adapter"
    );
    let text = serde_json::to_string(&c).unwrap();
    assert_eq!(Config::parse(&text).unwrap(), c);
}

#[test]
fn adapter_user_is_never_a_system_identity_or_a_malformed_service_account() {
    for bad in [
        r#""system:masters""#,
        r#""system:node:kwok-node-0""#,
        r#""system:serviceaccount:kube-system""#,
        r#""system:serviceaccount:Kube_System:x""#,
        r#""system:serviceaccount:ns:""#,
        r#""pando adapter""#,
        "7",
    ] {
        refused("adapter_user", bad);
    }
}

#[test]
fn namespace_role_is_a_name_other_than_app_role() {
    assert_eq!(
        with("namespace_role", r#""team:adapter""#)
            .unwrap()
            .namespace_role,
        "team:adapter"
    );
    refused("namespace_role", r#""a/b""#);
    let m = refused("namespace_role", r#""pando-app""#);
    assert!(m.contains("app_role"), "{m}");
}

#[test]
fn quota_and_limits_have_defaults_under_the_policys_ceiling_and_take_each_key() {
    let c = Config::parse(MINIMAL).unwrap();
    assert_eq!(c.app_quota, AppQuota::default());
    assert_eq!(c.container_limits, ContainerLimits::default());
    // deploy/kubernetes/admission-policy.yaml's ceiling: pods 200, CPU 64,
    // memory 256Gi, storage 1Ti, claims 100, a container's memory 64Gi.
    let q = c.app_quota;
    assert!(q.pods <= 200 && q.cpu_millis <= 64_000 && q.claims <= 100);
    assert!(q.memory_bytes <= 256 << 30 && q.memory_limit_bytes <= 256 << 30);
    assert!(q.storage_bytes <= 1 << 40);
    assert!(c.container_limits.max_memory_bytes <= 64 << 30);

    let c = with("app_quota", r#"{"pods": 7, "claims": 2}"#).unwrap();
    assert_eq!((c.app_quota.pods, c.app_quota.claims), (7, 2));
    assert_eq!(c.app_quota.cpu_millis, AppQuota::default().cpu_millis);
    let c = with(
        "container_limits",
        r#"{"default_memory_bytes": 268435456, "max_memory_bytes": 536870912}"#,
    )
    .unwrap();
    assert_eq!(c.container_limits.default_memory_bytes, 256 << 20);
    assert_eq!(c.container_limits.max_memory_bytes, 512 << 20);
    let text = serde_json::to_string(&c).unwrap();
    assert_eq!(Config::parse(&text).unwrap(), c);
}

#[test]
fn quota_and_limits_refuse_unknown_keys_zero_and_inconsistent_defaults() {
    let m = refused("app_quota", r#"{"services": 3}"#);
    assert!(m.contains("unknown key `services`"), "{m}");
    refused("app_quota", r#"{"pods": 0}"#);
    refused("app_quota", r#"{"pods": "many"}"#);
    refused("app_quota", r#"[1]"#);
    refused("container_limits", r#"{"max_memory_bytes": -1}"#);
    let m = refused(
        "container_limits",
        r#"{"default_memory_bytes": 2147483648, "max_memory_bytes": 1073741824}"#,
    );
    assert!(m.contains("max_memory_bytes"), "{m}");
    refused(
        "container_limits",
        r#"{"default_memory_request_bytes": 2147483648}"#,
    );
}
