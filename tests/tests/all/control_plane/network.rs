//! The guard of "nothing leaves this machine", proved on the running cluster: the tests' network
//! namespace has no route off it, and every address the cluster hands out is in the test range.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{ListParams, PostParams};
use pando_tests::{cluster, net};

use super::{bare_pod, cleanup, clients, wait_running};

/// The guard of "nothing leaves this machine": this test process runs in the cluster's network
/// namespace, whose routes reach loopback and 198.18.0.0/15 only, so a connect to an address off
/// the machine fails at once with "network unreachable"; so does one to a KWOK pod's fake IP or a
/// Service address, which is what an exec'd `wget` in a KWOK pod would try.
#[test]
fn tests_run_in_the_clusters_namespace_with_no_route_off_this_machine() {
    // The routes are checked before any connect: outside the namespace this machine has a default
    // route, and the connects below would leave it.
    if let Err(why) = net::check_isolated() {
        panic!("not isolated: {why}");
    }
    let state_netns = std::fs::read_to_string(cluster::state_dir().join("netns"))
        .expect("scripts/cluster writes the namespace's name to target/test-cluster/netns");
    let entered = net::netns_path().expect("the namespace scripts/cluster exec entered");
    assert_eq!(
        entered.file_name().and_then(|n| n.to_str()),
        Some(state_netns.trim()),
        "the tests run in this checkout's cluster namespace"
    );

    let kwok_pod = net::Ipv4Net::parse(net::KWOK_POD_CIDR).expect("cidr");
    let kwok_ip: std::net::Ipv4Addr = "198.19.128.5".parse().expect("ip");
    assert!(kwok_pod.contains(kwok_ip));
    // TEST-NET-1 and the IPv6 documentation prefix stand for "anywhere off this machine".
    for target in [
        "192.0.2.1:9",
        "[2001:db8::1]:9",
        "198.19.128.5:8080",
        "198.19.0.1:443",
    ] {
        let addr: std::net::SocketAddr = target.parse().expect("address");
        let err = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .expect_err(&format!("a connect to {target} must fail"));
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::NetworkUnreachable,
            "a connect to {target} fails for want of a route, not later: {err}"
        );
    }
}

/// Every address the cluster hands out is in 198.18.0.0/15: the `kubernetes` Service's, a KWOK
/// pod's, and a new Service's. KWOK's nodes are reached on loopback, the real node on its bridge.
#[tokio::test]
async fn every_cluster_address_is_in_the_network_test_range() {
    let (admin, pando) = clients().await;
    let range = net::Ipv4Net::parse(net::TEST_RANGE).expect("range");
    let services = net::Ipv4Net::parse(net::SERVICE_CIDR).expect("cidr");
    let kwok_pods = net::Ipv4Net::parse(net::KWOK_POD_CIDR).expect("cidr");
    assert!(range.covers(&services) && range.covers(&kwok_pods));

    let kubernetes = Api::<Service>::namespaced(admin.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes Service");
    let ip = kubernetes
        .spec
        .and_then(|s| s.cluster_ip)
        .unwrap_or_default();
    assert_eq!(
        ip,
        net::KUBERNETES_SERVICE_IP,
        "the API server's Service address"
    );

    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .expect("nodes");
    for node in nodes {
        let fake = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kwok.x-k8s.io/node"))
            .is_some();
        for a in node.status.and_then(|s| s.addresses).unwrap_or_default() {
            if a.type_ == "InternalIP" {
                let ip: std::net::Ipv4Addr = a.address.parse().expect("a node address");
                if fake {
                    assert!(ip.is_loopback(), "KWOK nodes are reached on loopback: {ip}");
                } else {
                    assert!(
                        range.contains(ip),
                        "the real node's address {ip} in {}",
                        net::TEST_RANGE
                    );
                }
            }
        }
    }

    let ns = cluster::create_adapter_namespace(&pando, "pando-cp-net")
        .await
        .expect("test namespace");
    let pods: Api<Pod> = Api::namespaced(pando.clone(), &ns.name);
    pods.create(&PostParams::default(), &bare_pod("addr", &[], &[]))
        .await
        .expect("a pod");
    let pod = wait_running(&pods, "addr").await;
    let pod_ip: std::net::Ipv4Addr = pod
        .status
        .and_then(|s| s.pod_ip)
        .unwrap_or_default()
        .parse()
        .expect("a KWOK pod has an IPv4 address");
    assert!(
        kwok_pods.contains(pod_ip),
        "KWOK's pod IP {pod_ip} in {}",
        net::KWOK_POD_CIDR
    );

    let svc = Api::<Service>::namespaced(pando.clone(), &ns.name)
        .create(
            &PostParams::default(),
            &Service {
                metadata: ObjectMeta {
                    name: Some("addr".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(ServiceSpec {
                    selector: Some(BTreeMap::from([("app".to_string(), "addr".to_string())])),
                    ports: Some(vec![k8s_openapi::api::core::v1::ServicePort {
                        port: 80,
                        ..Default::default()
                    }]),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            },
        )
        .await
        .expect("a Service");
    let svc_ip: std::net::Ipv4Addr = svc
        .spec
        .and_then(|s| s.cluster_ip)
        .unwrap_or_default()
        .parse()
        .expect("a ClusterIP");
    assert!(
        services.contains(svc_ip),
        "Service address {svc_ip} in {}",
        net::SERVICE_CIDR
    );
    cleanup(ns).await;
}
