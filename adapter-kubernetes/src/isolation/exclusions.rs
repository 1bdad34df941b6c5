//! What no app's egress reaches (R-025: an app opens connections out of
//! the cluster, "never into these"): the pod and Service ranges, the
//! nodes, the API server and the cloud metadata address; and where it
//! reaches DNS.
//!
//! Every `ipBlock` an app's policy gets, `open` and `restricted` alike, is
//! clipped here: each excluded range inside it becomes an `except`.
//! NetworkPolicy wants each `except` strictly inside its `cidr`, and two
//! CIDRs either nest or are disjoint, so a rule is one of three things to
//! each excluded range: around it (an `except`), apart from it (nothing),
//! or inside it — the app asking to reach into the cluster, refused as an
//! invalid plan naming the rule and the range.
//!
//! A family the configuration names no pod range of is not the cluster's:
//! `open` gets no block of it, and a `restricted` rule of it is refused,
//! since it could only be emitted without exclusions (`::/0` with nothing
//! kept out on a cluster whose IPv6 ranges were never configured).

use serde_json::{Value, json};

use crate::config::{Cidr, Config, METADATA_ADDRESS};

/// A range no egress rule may reach into, and what it is, for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Excluded {
    /// The range.
    pub cidr: Cidr,
    /// What it is, naming its configuration field.
    pub what: &'static str,
}

/// Every range the configuration keeps apps out of.
pub fn excluded(config: &Config) -> Vec<Excluded> {
    let mut out = Vec::new();
    let mut add = |cidrs: &[Cidr], what| {
        out.extend(cidrs.iter().map(|&cidr| Excluded { cidr, what }));
    };
    add(&config.pod_cidrs, "the pod range (`pod_cidr`)");
    add(&config.service_cidrs, "the Service range (`service_cidr`)");
    add(&config.node_cidrs, "the nodes' addresses (`node_cidrs`)");
    if let Some(api) = config.api_server_cidr {
        add(&[api], "the API server (`api_server_cidr`)");
    }
    if config.exclude_metadata_address
        && let Ok(metadata) = METADATA_ADDRESS.parse::<Cidr>()
    {
        add(
            &[metadata],
            "the cloud metadata address (`exclude_metadata_address`)",
        );
    }
    out
}

/// Whether the cluster uses `v4`'s family: the configuration names a pod
/// range of it.
fn family_configured(config: &Config, v4: bool) -> bool {
    config.pod_cidrs.iter().any(|c| c.is_ipv4() == v4)
}

/// `cidr` as a policy peer, every excluded range inside it an `except`;
/// `Err(why)` when it lies inside one, or is of a family the cluster's
/// configuration does not name.
pub fn clip(config: &Config, cidr: Cidr) -> Result<Value, String> {
    if !family_configured(config, cidr.is_ipv4()) {
        return Err(format!(
            "is {}, and no {0} pod range is configured (`pod_cidr`), so it could not be kept \
             out of the cluster: list the cluster's {0} ranges in `pod_cidr` and \
             `service_cidr`, or leave the rule out",
            if cidr.is_ipv4() { "IPv4" } else { "IPv6" }
        ));
    }
    let mut except: Vec<String> = Vec::new();
    for ex in excluded(config) {
        if ex.cidr.covers(&cidr) {
            return Err(format!(
                "lies inside {} `{}`: an app opens connections out of the cluster, never into \
                 it (R-025); remove the rule, or name an address outside the cluster",
                ex.what, ex.cidr
            ));
        }
        if cidr.covers(&ex.cidr) && !except.contains(&ex.cidr.to_string()) {
            except.push(ex.cidr.to_string());
        }
    }
    Ok(if except.is_empty() {
        json!({ "ipBlock": { "cidr": cidr.to_string() } })
    } else {
        json!({ "ipBlock": { "cidr": cidr.to_string(), "except": except } })
    })
}

/// Anywhere but the cluster (R-025): `0.0.0.0/0` and `::/0`, each of a
/// family the cluster uses, less every excluded range.
pub fn outside(config: &Config) -> Value {
    Value::Array(
        [true, false]
            .into_iter()
            .filter(|&v4| family_configured(config, v4))
            // Only a configured range of prefix 0 could swallow the whole
            // family: it is then left out, never let through unclipped.
            .filter_map(|v4| clip(config, Cidr::everything(v4)).ok())
            .collect(),
    )
}

/// The egress entry to the cluster's DNS (`dns_egress`): its namespaces
/// and pods, and its addresses, on its port over UDP and TCP.
pub fn dns_rule(config: &Config) -> Value {
    let dns = &config.dns_egress;
    let mut to = Vec::new();
    if !dns.namespace_selector.is_empty() {
        let mut peer = json!({ "namespaceSelector": { "matchLabels": dns.namespace_selector } });
        if !dns.pod_selector.is_empty() {
            peer["podSelector"] = json!({ "matchLabels": dns.pod_selector });
        }
        to.push(peer);
    }
    // Not clipped: a node-local cache's address is link-local, and the
    // port alone is opened to it.
    to.extend(
        dns.cidrs
            .iter()
            .map(|c| json!({ "ipBlock": { "cidr": c.to_string() } })),
    );
    json!({
        "to": to,
        "ports": [{ "protocol": "UDP", "port": dns.port }, { "protocol": "TCP", "port": dns.port }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: &str = r#""pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12""#;

    fn config(extra: &str) -> Config {
        Config::parse(&format!("{{{V4}{extra}}}")).unwrap()
    }

    fn cidr(text: &str) -> Cidr {
        text.parse().unwrap()
    }

    fn excepts(peer: &Value) -> Vec<String> {
        peer["ipBlock"]["except"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn r025_a_rule_around_the_cluster_excludes_every_range_in_it() {
        let c = config(r#","api_server_cidr":"10.0.0.1/32","node_cidrs":["10.1.0.0/24"]"#);
        let peer = clip(&c, cidr("10.0.0.0/8")).unwrap();
        assert_eq!(peer["ipBlock"]["cidr"], "10.0.0.0/8");
        assert_eq!(
            excepts(&peer),
            [
                "10.244.0.0/16",
                "10.96.0.0/12",
                "10.1.0.0/24",
                "10.0.0.1/32"
            ],
            "pods, Services, nodes and the API server, never the metadata address outside it"
        );
        let everything = clip(&c, cidr("0.0.0.0/0")).unwrap();
        assert!(excepts(&everything).contains(&"169.254.169.254/32".to_owned()));
    }

    #[test]
    fn r025_a_rule_apart_from_the_cluster_is_kept_as_it_is() {
        let peer = clip(&config(""), cidr("203.0.113.0/24")).unwrap();
        assert_eq!(peer, json!({ "ipBlock": { "cidr": "203.0.113.0/24" } }));
    }

    #[test]
    fn r025_a_rule_inside_a_cluster_range_is_refused_naming_it() {
        for (rule, range) in [
            ("10.244.3.0/24", "10.244.0.0/16"),
            ("10.96.0.10/32", "10.96.0.0/12"),
            ("10.244.0.0/16", "10.244.0.0/16"),
            ("169.254.169.254/32", "169.254.169.254/32"),
        ] {
            let why = clip(&config(""), cidr(rule)).expect_err(rule);
            assert!(why.contains(range) && why.contains("never into"), "{why}");
        }
        let why = clip(
            &config(r#","node_cidrs":"192.0.2.0/24""#),
            cidr("192.0.2.7/32"),
        )
        .unwrap_err();
        assert!(why.contains("node_cidrs"), "{why}");
    }

    #[test]
    fn the_metadata_address_is_excluded_unless_configured_off() {
        let off = config(r#","exclude_metadata_address":false"#);
        assert!(clip(&off, cidr("169.254.169.254/32")).is_ok());
        assert!(!outside(&off).to_string().contains("169.254.169.254"));
        assert!(
            outside(&config(""))
                .to_string()
                .contains("169.254.169.254/32")
        );
    }

    #[test]
    fn r025_ipv6_is_never_everything_without_exclusions() {
        let v4 = outside(&config(""));
        assert!(!v4.to_string().contains("::/0"), "{v4}");
        let why = clip(&config(""), cidr("::/0")).unwrap_err();
        assert!(why.contains("IPv6") && why.contains("pod_cidr"), "{why}");

        let dual = Config::parse(
            r#"{"pod_cidr":["10.244.0.0/16","fd00:10:244::/56"],
                "service_cidr":["10.96.0.0/12","fd00:10:96::/112"]}"#,
        )
        .unwrap();
        let blocks = outside(&dual);
        let v6 = blocks
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["ipBlock"]["cidr"] == "::/0")
            .expect("a dual-stack cluster's open egress has IPv6");
        assert_eq!(excepts(v6), ["fd00:10:244::/56", "fd00:10:96::/112"]);
        let v4 = &blocks[0];
        assert_eq!(
            excepts(v4),
            ["10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32"]
        );
    }

    #[test]
    fn dns_is_kube_system_on_53_by_default_and_configurable() {
        let rule = dns_rule(&config(""));
        assert_eq!(
            rule,
            json!({
                "to": [{ "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": "kube-system" } } }],
                "ports": [{ "protocol": "UDP", "port": 53 }, { "protocol": "TCP", "port": 53 }],
            })
        );
        let c = config(
            r#","dns_egress":{"namespace_selector":{"kubernetes.io/metadata.name":"dns"},
                "pod_selector":{"k8s-app":"coredns"},"cidrs":["169.254.20.10/32"],"port":5353}"#,
        );
        assert_eq!(
            dns_rule(&c),
            json!({
                "to": [
                    { "namespaceSelector": { "matchLabels": {
                        "kubernetes.io/metadata.name": "dns" } },
                      "podSelector": { "matchLabels": { "k8s-app": "coredns" } } },
                    { "ipBlock": { "cidr": "169.254.20.10/32" } },
                ],
                "ports": [{ "protocol": "UDP", "port": 5353 }, { "protocol": "TCP", "port": 5353 }],
            })
        );
    }
}
