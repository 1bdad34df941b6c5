//! The configuration of where an app may not connect to, and where its
//! DNS is: the cluster's ranges (`pod_cidr`, `service_cidr`, `node_cidrs`),
//! one or more per family, so a dual-stack cluster names both; the cloud
//! metadata address (`exclude_metadata_address`); and the DNS destination
//! every app's policy admits (`dns_egress`).

use std::collections::BTreeMap;

use pando_adapter_sdk::types::Error;
use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{cidr, integer, invalid_field, string};
use crate::isolation::cidr::Cidr;
use crate::kit::names;

/// The link-local address clouds serve instance metadata (and often
/// credentials) on; excluded from every egress rule unless
/// `exclude_metadata_address` is false.
pub const METADATA_ADDRESS: &str = "169.254.169.254/32";
/// The label every namespace carries with its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A list of CIDRs, given as one string or an array of strings; `required`
/// refuses an empty one naming `example`. A range of each family may be
/// listed (dual stack), and more than one of a family.
pub(super) fn cidr_list(
    field: &str,
    value: Option<Value>,
    required: Option<&str>,
) -> Result<Vec<Cidr>, Error> {
    let texts: Vec<Value> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(single) => vec![single],
    };
    let mut out = Vec::with_capacity(texts.len());
    for (i, v) in texts.into_iter().enumerate() {
        let Some(text) = string(field, Some(v.clone()))? else {
            return Err(invalid_field(
                field,
                format!("entry {i} is empty: give a CIDR such as `10.244.0.0/16`"),
            ));
        };
        out.push(cidr(field, &text)?);
    }
    if out.is_empty()
        && let Some(example) = required
    {
        return Err(invalid_field(
            field,
            format!(
                "is required: the cluster's address range, as a CIDR such as `{example}`, or a \
                 list of them (one of each family on a dual-stack cluster); the API does not \
                 report it reliably"
            ),
        ));
    }
    Ok(out)
}

/// `dns_egress`: where every app's (and trial's) policy lets it send DNS
/// queries. The default is today's reference behaviour, port 53 of every
/// pod in `kube-system`; a cluster whose DNS lives elsewhere names its
/// namespace, and NodeLocal DNSCache adds its link-local address
/// (`cidrs: ["169.254.20.10/32"]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DnsEgress {
    /// The labels of the DNS server's namespaces; empty is none (then
    /// `cidrs` must say where DNS is).
    pub namespace_selector: BTreeMap<String, String>,
    /// The labels of the DNS server's pods there; empty is every pod.
    pub pod_selector: BTreeMap<String, String>,
    /// Addresses DNS is served on outside any pod (a node-local cache).
    pub cidrs: Vec<Cidr>,
    /// The port, over UDP and TCP.
    pub port: u16,
}

const DNS_KEYS: [&str; 4] = ["namespace_selector", "pod_selector", "cidrs", "port"];

/// Parses `dns_egress`: `start` (the default) with the keys given, unknown
/// keys refused.
pub(super) fn dns_egress(value: Option<Value>, start: DnsEgress) -> Result<DnsEgress, Error> {
    const FIELD: &str = "dns_egress";
    let map: Map<String, Value> = match value {
        None | Some(Value::Null) => return Ok(start),
        Some(Value::Object(map)) => map,
        Some(other) => return Err(invalid_field(FIELD, format!("`{other}` is not an object"))),
    };
    let mut dns = start;
    for (key, v) in map {
        let at = format!("{FIELD}.{key}");
        match key.as_str() {
            "namespace_selector" => dns.namespace_selector = labels(&at, v)?,
            "pod_selector" => dns.pod_selector = labels(&at, v)?,
            "cidrs" => dns.cidrs = cidr_list(&at, Some(v), None)?,
            "port" => {
                if let Some(p) = integer(&at, Some(v), 1, u16::MAX.into())? {
                    dns.port = p as u16;
                }
            }
            _ => {
                return Err(invalid_field(
                    FIELD,
                    format!("unknown key `{key}`: use {}", DNS_KEYS.join(", ")),
                ));
            }
        }
    }
    if dns.namespace_selector.is_empty() && dns.cidrs.is_empty() {
        return Err(invalid_field(
            FIELD,
            "names no DNS server: give a `namespace_selector` (the default is namespace \
             `kube-system`) or `cidrs`",
        ));
    }
    if dns.namespace_selector.is_empty() && !dns.pod_selector.is_empty() {
        return Err(invalid_field(
            FIELD,
            "`pod_selector` needs a `namespace_selector`: pods are selected in the namespaces \
             it names",
        ));
    }
    Ok(dns)
}

/// An object of label keys to values.
fn labels(field: &str, value: Value) -> Result<BTreeMap<String, String>, Error> {
    let Value::Object(map) = value else {
        return Err(invalid_field(
            field,
            format!("`{value}` is not an object of labels"),
        ));
    };
    let mut out = BTreeMap::new();
    for (key, v) in map {
        let Value::String(v) = v else {
            return Err(invalid_field(
                field,
                format!("the value of label `{key}` is not a string"),
            ));
        };
        names::check_label_key(&key)
            .map_err(|why| invalid_field(field, format!("label key `{key}` {why}")))?;
        names::check_label_value(&v)
            .map_err(|why| invalid_field(field, format!("label value `{v}` {why}")))?;
        out.insert(key, v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use pando_adapter_sdk::error::ErrorExt;

    const V4: &str = r#""pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12""#;

    fn parse(extra: &str) -> Result<Config, pando_adapter_sdk::types::Error> {
        Config::parse(&format!("{{{V4}{extra}}}"))
    }

    fn refused(extra: &str, field: &str) -> String {
        let err = parse(extra).expect_err(extra);
        assert_eq!(err.kind(), "invalid", "{extra}");
        assert!(
            err.message().contains(&format!("`{field}")),
            "{}",
            err.message()
        );
        err.message().to_owned()
    }

    #[test]
    fn a_range_is_one_cidr_or_a_list_of_either_family() {
        let one = parse("").unwrap();
        assert_eq!(
            one.pod_cidrs.len(),
            1,
            "the single-value form is a list of one"
        );
        let dual = Config::parse(
            r#"{"pod_cidr":["10.244.0.0/16","fd00:10:244::/56"],
                "service_cidr":["10.96.0.0/12","fd00:10:96::/112"],
                "node_cidrs":["192.0.2.0/24","2001:db8::/64"]}"#,
        )
        .unwrap();
        let text: Vec<String> = dual.pod_cidrs.iter().map(|c| c.to_string()).collect();
        assert_eq!(text, ["10.244.0.0/16", "fd00:10:244::/56"]);
        assert_eq!(dual.node_cidrs.len(), 2);
        let again = serde_json::to_string(&dual).unwrap();
        assert_eq!(Config::parse(&again).unwrap(), dual);
        let m = Config::parse(r#"{"pod_cidr":[],"service_cidr":"10.96.0.0/12"}"#).unwrap_err();
        assert!(
            m.message().contains("`pod_cidr`: is required"),
            "{}",
            m.message()
        );
        refused(r#","node_cidrs":["10.0.0.0/33"]"#, "node_cidrs");
        refused(r#","node_cidrs":[""]"#, "node_cidrs");
        refused(r#","node_cidrs":[7]"#, "node_cidrs");
    }

    #[test]
    fn the_metadata_address_is_excluded_by_default() {
        assert!(parse("").unwrap().exclude_metadata_address);
        assert!(
            !parse(r#","exclude_metadata_address":false"#)
                .unwrap()
                .exclude_metadata_address
        );
        refused(
            r#","exclude_metadata_address":"no""#,
            "exclude_metadata_address",
        );
    }

    #[test]
    fn dns_egress_defaults_to_kube_system_port_53_and_refuses_nonsense() {
        let d = parse("").unwrap().dns_egress;
        assert_eq!(d, super::DnsEgress::default());
        assert_eq!(d.port, 53);
        assert_eq!(
            d.namespace_selector
                .get("kubernetes.io/metadata.name")
                .map(String::as_str),
            Some("kube-system")
        );
        let d = parse(r#","dns_egress":{"cidrs":["169.254.20.10/32"],"port":5353}"#)
            .unwrap()
            .dns_egress;
        assert_eq!(d.port, 5353);
        assert_eq!(d.cidrs[0].to_string(), "169.254.20.10/32");
        assert!(
            !d.namespace_selector.is_empty(),
            "the default namespace stays"
        );
        let m = refused(r#","dns_egress":{"namespace_selector":{}}"#, "dns_egress");
        assert!(m.contains("names no DNS server"), "{m}");
        refused(
            r#","dns_egress":{"namespace_selector":{},"pod_selector":{"a":"b"},"cidrs":["192.0.2.53/32"]}"#,
            "dns_egress",
        );
        refused(r#","dns_egress":{"port":0}"#, "dns_egress.port");
        refused(r#","dns_egress":{"servers":[]}"#, "dns_egress");
        refused(
            r#","dns_egress":{"pod_selector":{"a b":"c"}}"#,
            "dns_egress.pod_selector",
        );
        refused(r#","dns_egress":[]"#, "dns_egress");
    }
}
