//! Where an app may connect out to (R-025, R-186, R-187), as NetworkPolicy
//! egress rules and, for destinations given by name, an egress gateway.
//!
//! NetworkPolicy speaks addresses, not names: a rule for `api.example.com`
//! cannot be written as one. So an app whose rules name hosts gets an egress
//! gateway in its own namespace, Pando's binary (`egress_gateway_image`, at
//! `/usr/local/bin/pando`) run as `pando egress-gateway`, an HTTP(S) proxy
//! that lets through only the allowed names and ports. The app's pods reach
//! it as part of their own namespace and are told of it by the usual proxy
//! variables; only the gateway's pod may leave the cluster on those ports,
//! by a second policy. Without a gateway image, egress restricted by name is
//! `unsupported` (R-186), and `capabilities` says so.
//!
//! The gateway's command line is the contract with the image:
//! `pando egress-gateway --listen :3128 --allow HOST[:PORT]…`, one `--allow`
//! per rule and port, `*.example.com` for a domain's subdomains.

use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Pod, Service};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::types::{EgressPolicy, Error, NetworkRules};
use serde_json::{Value, json};

use crate::config::{Cidr, Config};
use crate::kit::{app_labels, typed, with_hash};
use crate::kit::{names, security};

/// The gateway's pod, Service and policy name; a workload may not take it.
pub const GATEWAY_NAME: &str = "pando-egress-gateway";
/// The port the gateway listens on.
pub const GATEWAY_PORT: u16 = 3128;
/// The label that tells the gateway's pod from the app's.
pub const COMPONENT_LABEL: &str = "pando.dev/component";
/// Its value on the gateway.
pub const GATEWAY_COMPONENT: &str = "egress-gateway";
/// Where the image keeps Pando's binary (the configuration's contract).
pub const GATEWAY_BINARY: &str = "/usr/local/bin/pando";

/// What an app's egress rules come to.
#[derive(Debug, Clone, PartialEq)]
pub struct Egress {
    /// Egress entries of the app's policy beyond cluster DNS and the app's
    /// own namespace.
    pub rules: Vec<Value>,
    /// The gateway, when a rule names a host.
    pub gateway: Option<Gateway>,
}

/// An egress gateway: what it lets through.
#[derive(Debug, Clone, PartialEq)]
pub struct Gateway {
    /// `HOST` or `HOST:PORT`, one per rule and port, in the plan's order.
    pub allow: Vec<String>,
    /// The ports the gateway may open out of the cluster; `None` is any.
    pub ports: Option<Vec<u16>>,
}

/// The policy entries and the gateway for `network` (see the module doc).
/// A host name without a gateway image is `unsupported` (R-186).
pub fn egress(config: &Config, id: &str, network: &NetworkRules) -> Result<Egress, Error> {
    let mut out = Egress {
        rules: Vec::new(),
        gateway: None,
    };
    match &network.egress {
        EgressPolicy::None => {}
        EgressPolicy::Open => out.rules.push(json!({ "to": outside(config) })),
        EgressPolicy::Restricted(rules) => {
            let mut allow = Vec::new();
            let mut any_port = false;
            let mut ports: Vec<u16> = Vec::new();
            for rule in rules {
                match rule.destination.parse::<Cidr>() {
                    Ok(cidr) => {
                        // Clipped as `open` is: never into the cluster (R-025).
                        let peer =
                            crate::isolation::exclusions::clip(config, cidr).map_err(|why| {
                                Error::Invalid(format!(
                                    "egress destination `{}` of app `{id}` {why}",
                                    rule.destination
                                ))
                            })?;
                        let mut entry = json!({ "to": [peer] });
                        if !rule.ports.is_empty() {
                            entry["ports"] = port_entries(&rule.ports);
                        }
                        out.rules.push(entry);
                    }
                    Err(_) => {
                        names::check_egress_host(&rule.destination).map_err(|why| {
                            Error::Invalid(format!(
                                "egress destination `{}` of app `{id}` {why}",
                                rule.destination
                            ))
                        })?;
                        if rule.ports.is_empty() {
                            any_port = true;
                            allow.push(rule.destination.clone());
                        }
                        for p in &rule.ports {
                            allow.push(format!("{}:{p}", rule.destination));
                            if !ports.contains(p) {
                                ports.push(*p);
                            }
                        }
                    }
                }
            }
            if !allow.is_empty() {
                if config.egress_gateway_image.is_none() {
                    return Err(Error::Unsupported(format!(
                        "egress destination `{}` of app `{id}` is a host name: restricting \
                         egress to names needs the egress gateway (R-186, R-187), and the \
                         Kubernetes adapter has no `egress_gateway_image` configured; set it, \
                         or use a CIDR, or open egress",
                        allow[0]
                    )));
                }
                out.gateway = Some(Gateway {
                    allow,
                    ports: (!any_port).then_some(ports),
                });
            }
        }
    }
    Ok(out)
}

fn port_entries(ports: &[u16]) -> Value {
    Value::Array(
        ports
            .iter()
            .flat_map(|p| {
                [
                    json!({ "protocol": "TCP", "port": p }),
                    json!({ "protocol": "UDP", "port": p }),
                ]
            })
            .collect(),
    )
}

pub use crate::isolation::exclusions::outside;

/// The gateway's labels: the app's, and the component.
pub fn gateway_labels(id: &str) -> Value {
    let mut labels = app_labels(id);
    labels[COMPONENT_LABEL] = json!(GATEWAY_COMPONENT);
    labels
}

/// The proxy variables an app's containers get when it has a gateway: the
/// gateway for everything but the cluster's own names.
pub fn proxy_env(config: &Config, namespace: &str) -> Vec<Value> {
    let proxy = format!(
        "http://{GATEWAY_NAME}.{namespace}.svc.{}:{GATEWAY_PORT}",
        config.cluster_domain
    );
    let no_proxy = format!("localhost,127.0.0.1,.svc,.{}", config.cluster_domain);
    // Both spellings: programs disagree on which they read.
    ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
        .into_iter()
        .map(|name| json!({ "name": name, "value": proxy }))
        .chain(
            ["NO_PROXY", "no_proxy"]
                .into_iter()
                .map(|name| json!({ "name": name, "value": no_proxy })),
        )
        .collect()
}

/// The gateway's pod. Unlike a workload's it restarts in place: it is
/// Pando's, not the app's, and the app cannot reach out without it.
/// `deadline` bounds its life (`activeDeadlineSeconds`): a trial's gateway
/// ends with the trial on every path, a call cancelled or stopped by the
/// host included, not at the next trial's sweep.
pub fn gateway_pod(
    config: &Config,
    id: &str,
    gateway: &Gateway,
    deadline: Option<std::time::Duration>,
) -> Result<Pod, Error> {
    let Some(image) = &config.egress_gateway_image else {
        return Err(Error::Internal("egress gateway without an image".into()));
    };
    let mut command = vec![
        GATEWAY_BINARY.to_owned(),
        "egress-gateway".into(),
        "--listen".into(),
        format!(":{GATEWAY_PORT}"),
    ];
    for a in &gateway.allow {
        command.push("--allow".into());
        command.push(a.clone());
    }
    let mut spec = json!({
        "restartPolicy": "Always",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "containers": [{
            "name": "gateway",
            "image": image,
            "command": command,
            "ports": [{ "containerPort": GATEWAY_PORT, "protocol": "TCP" }],
            "resources": { "requests": { "cpu": "50m", "memory": "64Mi" },
                           "limits": { "memory": "256Mi" } },
            // Pod Security `restricted`, as the distroless `nonroot` user.
            "securityContext": gateway_context(),
        }],
        "securityContext": security::pod_context(),
    });
    if let Some(deadline) = deadline {
        spec["activeDeadlineSeconds"] = json!(deadline.as_secs().max(1));
    }
    config.place_as_apps(&mut spec);
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": GATEWAY_NAME, "labels": gateway_labels(id) },
        "spec": spec,
    })))
}

/// The gateway container's context: `restricted` as uid 65532 (distroless
/// `nonroot`), its root filesystem read-only.
fn gateway_context() -> Value {
    let mut c = security::restricted_context(65532);
    c["readOnlyRootFilesystem"] = json!(true);
    c
}

/// The gateway's headless Service: the name the proxy variables give.
pub fn gateway_service(id: &str) -> Result<Service, Error> {
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": GATEWAY_NAME, "labels": gateway_labels(id) },
        "spec": {
            "clusterIP": "None",
            "selector": gateway_labels(id),
            "ports": [{ "name": "proxy", "port": GATEWAY_PORT, "targetPort": GATEWAY_PORT,
                        "protocol": "TCP" }],
        },
    })))
}

/// The policy that lets the gateway's pod, and only it, out of the cluster
/// on the allowed ports. Policies add up: the app's default-deny policy
/// already gives it cluster DNS and lets the app's pods in.
pub fn gateway_policy(
    config: &Config,
    id: &str,
    gateway: &Gateway,
) -> Result<NetworkPolicy, Error> {
    let mut rule = json!({ "to": outside(config) });
    if let Some(ports) = &gateway.ports {
        rule["ports"] = Value::Array(
            ports
                .iter()
                .map(|p| json!({ "protocol": "TCP", "port": p }))
                .collect(),
        );
    }
    on_the_gateway(id, GATEWAY_NAME, "Egress", rule)
}

/// A policy of app `id` over the gateway's pod alone, of one type
/// (`Ingress` or `Egress`) with one rule.
fn on_the_gateway(id: &str, name: &str, kind: &str, rule: Value) -> Result<NetworkPolicy, Error> {
    let rules = if kind == "Ingress" {
        "ingress"
    } else {
        "egress"
    };
    typed(with_hash(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": name, "labels": app_labels(id) },
        "spec": {
            "podSelector": { "matchLabels": { COMPONENT_LABEL: GATEWAY_COMPONENT } },
            "policyTypes": [kind],
            rules: [rule],
        },
    })))
}

/// The name of the policy that lets a trial's workload reach its gateway.
pub const GATEWAY_INGRESS_NAME: &str = "pando-egress-gateway-in";

/// The policy that admits the pods `from` selects (a trial's workload) to
/// the gateway on its port, and nothing else. A trial's namespace denies
/// every connection in, the gateway's included; policies add up, so this
/// one is the only way in.
pub fn gateway_ingress_policy(id: &str, from: Value) -> Result<NetworkPolicy, Error> {
    let rule = json!({
        "from": [{ "podSelector": { "matchLabels": from } }],
        "ports": [{ "protocol": "TCP", "port": GATEWAY_PORT }],
    });
    on_the_gateway(id, GATEWAY_INGRESS_NAME, "Ingress", rule)
}

/// Refuses a workload that would take the gateway's name.
pub fn check_workload_name(name: &str) -> Result<(), Error> {
    if name == GATEWAY_NAME {
        return Err(Error::Invalid(format!(
            "workload name `{name}` is reserved for Pando's egress gateway; rename the workload"
        )));
    }
    Ok(())
}

/// Whether a pod is an app's gateway.
pub fn is_gateway(pod: &Pod) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(COMPONENT_LABEL))
        .is_some_and(|v| v == GATEWAY_COMPONENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_adapter_sdk::types::EgressRule;

    fn config(gateway: bool) -> Config {
        let mut c =
            Config::parse(r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#).unwrap();
        if gateway {
            c.egress_gateway_image = Some("registry.example.com/pando:1".into());
        }
        c
    }

    fn restricted(rules: &[(&str, &[u16])]) -> NetworkRules {
        NetworkRules {
            egress: EgressPolicy::Restricted(
                rules
                    .iter()
                    .map(|(d, p)| EgressRule {
                        destination: (*d).into(),
                        ports: p.to_vec(),
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn r186_a_host_name_without_a_gateway_image_is_unsupported() {
        let e = egress(
            &config(false),
            "shop",
            &restricted(&[("api.example.com", &[443])]),
        );
        assert!(matches!(e, Err(Error::Unsupported(m)) if m.contains("egress_gateway_image")));
    }

    #[test]
    fn r187_host_names_go_to_the_gateway_and_cidrs_to_the_policy() {
        let e = egress(
            &config(true),
            "shop",
            &restricted(&[("api.example.com", &[443, 8443]), ("203.0.113.0/24", &[25])]),
        )
        .unwrap();
        assert_eq!(e.rules.len(), 1);
        assert!(e.rules[0].to_string().contains("203.0.113.0/24"));
        let gw = e.gateway.unwrap();
        assert_eq!(gw.allow, ["api.example.com:443", "api.example.com:8443"]);
        assert_eq!(gw.ports, Some(vec![443, 8443]));
    }

    #[test]
    fn r187_a_host_rule_without_ports_opens_every_port_of_the_gateway() {
        let e = egress(
            &config(true),
            "shop",
            &restricted(&[("*.example.com", &[])]),
        )
        .unwrap();
        let gw = e.gateway.unwrap();
        assert_eq!(gw.allow, ["*.example.com"]);
        assert_eq!(gw.ports, None);
        let policy = gateway_policy(&config(true), "shop", &gw).unwrap();
        let text = serde_json::to_string(&policy).unwrap();
        assert!(!text.contains("\"ports\""), "{text}");
        assert!(
            text.contains("10.244.0.0/16"),
            "R-025: never into the pod range: {text}"
        );
    }

    #[test]
    fn r025_a_restricted_cidr_rule_is_clipped_as_open_is() {
        let e = egress(
            &config(false),
            "shop",
            &restricted(&[("0.0.0.0/0", &[443]), ("10.0.0.0/8", &[])]),
        )
        .unwrap();
        let blocks: Vec<&Value> = e.rules.iter().map(|r| &r["to"][0]["ipBlock"]).collect();
        assert_eq!(
            blocks,
            [
                &json!({ "cidr": "0.0.0.0/0",
                         "except": ["10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32"] }),
                &json!({ "cidr": "10.0.0.0/8", "except": ["10.244.0.0/16", "10.96.0.0/12"] }),
            ],
            "never into the pod and Service ranges, nor the metadata address"
        );
    }

    #[test]
    fn r025_a_restricted_rule_into_the_cluster_is_invalid_naming_rule_and_range() {
        let e = egress(
            &config(false),
            "shop",
            &restricted(&[("10.244.7.0/24", &[5432])]),
        );
        assert!(
            matches!(&e, Err(Error::Invalid(m))
                if m.contains("`10.244.7.0/24`") && m.contains("`10.244.0.0/16`")
                    && m.contains("pod_cidr")),
            "{e:?}"
        );
    }

    #[test]
    fn a_destination_that_is_neither_is_invalid() {
        let e = egress(&config(true), "shop", &restricted(&[("not a host", &[])]));
        assert!(matches!(e, Err(Error::Invalid(m)) if m.contains("not a host")));
    }

    #[test]
    fn r187_the_gateway_is_told_what_to_allow_and_the_app_where_it_is() {
        let gw = Gateway {
            allow: vec!["api.example.com:443".into()],
            ports: Some(vec![443]),
        };
        let pod = gateway_pod(&config(true), "shop", &gw, None).unwrap();
        let c = &pod.spec.as_ref().unwrap().containers[0];
        assert_eq!(
            c.command.as_deref().unwrap(),
            [
                GATEWAY_BINARY,
                "egress-gateway",
                "--listen",
                ":3128",
                "--allow",
                "api.example.com:443"
            ]
        );
        assert!(is_gateway(&pod));
        let env = proxy_env(&config(true), "pando-shop");
        assert!(env.iter().any(|e| e["name"] == "HTTPS_PROXY"
            && e["value"] == "http://pando-egress-gateway.pando-shop.svc.cluster.local:3128"));
    }
}
