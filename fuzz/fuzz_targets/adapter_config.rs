//! The Kubernetes adapter's configuration, `Config::parse` in
//! `adapter-kubernetes/src/config/`, compiled natively: the adapter crate is
//! an rlib as well as a cdylib, and the SDK's wit-bindgen imports compile on
//! the host target as stubs that are never called here (parsing and
//! validation make no import call).
//!
//! Two modes: raw text, as a host may pass anything to `configure`; and a
//! JSON object built from the adapter's field names with values near their
//! limits. Properties:
//! - it never panics;
//! - a refusal is `invalid` and names the configuration (and the field,
//!   for a field's value);
//! - a parsed configuration serializes to JSON that parses back to the
//!   same configuration (its documented round trip), and its values are in
//!   the documented ranges.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pando_adapter_kubernetes::config::{Config, NODE_PORT_RANGE, NodeSelector};
use pando_adapter_sdk::types::Error;
use pando_fuzz::{is_dns_label, is_dns_subdomain};
use serde_json::{Map, Number, Value};

const FIELDS: &[&str] = &[
    "pando_namespace",
    "pando_service",
    "service_account",
    "proxy_port",
    "app_role",
    "cluster_domain",
    "pod_cidr",
    "service_cidr",
    "node_cidrs",
    "exclude_metadata_address",
    "dns_egress",
    "api_server_cidr",
    "storage_class",
    "volume_size_bytes",
    "runtime_class",
    "node_selector",
    "egress_gateway_image",
    "helper_image",
    "edge_namespace",
    "edge_replicas",
    "edge_service_type",
    "edge_http_node_port",
    "edge_https_node_port",
    "api_qps",
    "api_burst",
    "kubeconfig",
];

const STRINGS: &[&str] = &[
    "10.244.0.0/16",
    "10.96.0.0/12",
    "10.1.2.3/8",
    "0.0.0.0/0",
    "::/0",
    "fd00::/8",
    "::ffff:10.0.0.1/128",
    "10.0.0.0/33",
    "10.0.0.0/08",
    "10.0.0.0/",
    "pando-system",
    "pando",
    "Pando",
    "-x",
    "a.b",
    "cluster.local",
    "gvisor",
    "busybox:1.36",
    "busy box",
    "LoadBalancer",
    "NodePort",
    "ClusterIP",
    "kubernetes.io/os=linux",
    "a=b, c=d",
    "a=b,a=c",
    "a",
    "=b",
    "a=",
    "",
    " ",
];

fn value(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => Value::Null,
        1 | 2 | 3 => Value::String((*u.choose(STRINGS)?).into()),
        4 => Value::String(String::arbitrary(u)?),
        5 => Value::Number(
            (*u.choose(&[
                0u64,
                1,
                2,
                8080,
                30000,
                32767,
                32768,
                65535,
                65536,
                u64::from(u32::MAX),
                i32::MAX as u64,
                i64::MAX as u64,
                u64::MAX,
            ])?)
            .into(),
        ),
        6 => Value::Number(i64::arbitrary(u)?.into()),
        7 => Number::from_f64(f64::arbitrary(u)?).map_or(Value::Null, Value::Number),
        8 => Value::Bool(u.arbitrary()?),
        _ => Value::Array(vec![Value::String((*u.choose(STRINGS)?).into())]),
    })
}

fn object(u: &mut Unstructured<'_>) -> Result<String> {
    let mut map = Map::new();
    // Usually valid address ranges, so the fuzzer gets past the two
    // required fields.
    if u.ratio(3, 4)? {
        map.insert("pod_cidr".into(), "10.244.0.0/16".into());
        map.insert("service_cidr".into(), "10.96.0.0/12".into());
    }
    let n = u.int_in_range(0..=8)?;
    for _ in 0..n {
        map.insert((*u.choose(FIELDS)?).into(), value(u)?);
    }
    Ok(Value::Object(map).to_string())
}

fn check(text: &str) {
    match Config::parse(text) {
        Err(Error::Invalid(msg)) => {
            assert!(msg.starts_with("configuration"), "{msg}");
        }
        Err(other) => panic!("a refusal that is not `invalid`: {other:?}"),
        Ok(c) => {
            let json = serde_json::to_string(&c).expect("a configuration serializes");
            let again = Config::parse(&json)
                .unwrap_or_else(|e| panic!("{json} does not parse back: {e:?}"));
            assert_eq!(again, c, "round trip through {json}");
            assert!(is_dns_label(&c.pando_namespace), "{c:?}");
            assert!(is_dns_label(&c.edge_namespace), "{c:?}");
            assert!(is_dns_subdomain(&c.cluster_domain), "{c:?}");
            assert!(c.proxy_port >= 1);
            assert!(c.volume_size_bytes >= 1 && c.volume_size_bytes <= i64::MAX as u64);
            assert!(c.edge_replicas >= 1 && c.edge_replicas <= i32::MAX as u32);
            assert!(c.api_qps >= 1 && c.api_burst >= 1);
            for port in [c.edge_http_node_port, c.edge_https_node_port]
                .into_iter()
                .flatten()
            {
                assert!(NODE_PORT_RANGE.contains(&port), "{port}");
            }
            if let (Some(a), Some(b)) = (c.edge_http_node_port, c.edge_https_node_port) {
                assert_ne!(a, b);
            }
            let shown = c.node_selector.to_string();
            assert_eq!(
                NodeSelector::parse(&shown).as_ref(),
                Ok(&c.node_selector),
                "{shown}"
            );
            assert!(!c.pod_cidrs.is_empty() && !c.service_cidrs.is_empty());
            for cidr in c
                .pod_cidrs
                .iter()
                .chain(&c.service_cidrs)
                .chain(&c.node_cidrs)
                .chain(c.api_server_cidr.as_ref())
            {
                assert!(cidr.contains(cidr.address()), "{cidr}");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        // `configure` takes a WIT string: always UTF-8.
        check(&String::from_utf8_lossy(rest));
    } else if let Ok(text) = object(&mut Unstructured::new(rest)) {
        check(&text);
    }
});
