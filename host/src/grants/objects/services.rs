//! Services: ClusterIP (or headless) everywhere; NodePort, LoadBalancer
//! and ExternalName only in namespaces a rule grants them, an exposed one
//! (NodePort, LoadBalancer) selecting only pods with the rule's labels, on
//! the rule's target ports; `externalIPs` never (they let a Service claim
//! any address, CVE-2020-8554).

use serde_json::Value;

use super::Violation;
use super::fields::{get, list, object, shown, string};
use super::schema::{ServiceRule, ServiceType};
use crate::grants::check::pattern_matches;

/// Checks a Service in namespace `ns` against the service rules.
pub(crate) fn check(rules: &[ServiceRule], ns: &str, svc: &Value) -> Result<(), Violation> {
    let spec = get(svc, "spec").unwrap_or(&Value::Null);
    let fail = |rule: &'static str,
                statement: String,
                field: &str,
                problem: String,
                grant: Option<String>| Violation {
        rule,
        statement,
        field: field.into(),
        problem,
        grant,
    };
    let ips = list(spec, "externalIPs").map_err(|p| {
        fail(
            "services.external-ips",
            "Services set no externalIPs".into(),
            "spec.externalIPs",
            p,
            None,
        )
    })?;
    if !ips.is_empty() {
        return Err(fail(
            "services.external-ips",
            "Services set no externalIPs".into(),
            "spec.externalIPs",
            format!(
                "is set ({})",
                super::fields::shown_value(&Value::Array(ips.to_vec()))
            ),
            None,
        ));
    }
    let ty = string(spec, "type")
        .map_err(|p| {
            fail(
                "services.types",
                "Service types are granted".into(),
                "spec.type",
                p,
                None,
            )
        })?
        .unwrap_or("ClusterIP");
    let Some(parsed) = ServiceType::parse(ty) else {
        return Err(fail(
            "services.types",
            "Service types are granted".into(),
            "spec.type",
            format!("is `{}`, not a Service type", shown(ty)),
            None,
        ));
    };
    if parsed == ServiceType::ClusterIP {
        return Ok(());
    }
    let granted = rules.iter().enumerate().find(|(_, r)| {
        r.namespaces.iter().any(|p| pattern_matches(p, ns)) && r.types.contains(&parsed)
    });
    if let Some((i, rule)) = granted {
        if matches!(parsed, ServiceType::NodePort | ServiceType::LoadBalancer) {
            exposure(rule, i, spec)?;
        }
        return Ok(());
    }
    Err(fail(
        "services.types",
        format!("Services in namespace `{ns}` are ClusterIP or headless unless a rule grants more"),
        "spec.type",
        format!("is {ty}"),
        Some(format!(
            "kubernetes.objects.services: - {{namespaces: [\"{ns}\"], types: [{ty}]}}"
        )),
    ))
}

/// An exposed Service's selector and target ports, against rule `i`.
fn exposure(rule: &ServiceRule, i: usize, spec: &Value) -> Result<(), Violation> {
    let fail =
        |rule_id: &'static str, statement: &str, field: String, problem: String, grant: &str| {
            Violation {
                rule: rule_id,
                statement: statement.into(),
                field,
                problem,
                grant: Some(format!("kubernetes.objects.services[{i}].{grant}")),
            }
        };
    if !rule.exposed_selector.is_empty() {
        let selector_fail = |field: String, problem: String| {
            fail(
                "services.exposed-selector",
                "an exposed Service selects only the pods its rule names",
                field,
                problem,
                "exposed_selector",
            )
        };
        let selector =
            object(spec, "selector").map_err(|p| selector_fail("spec.selector".into(), p))?;
        let Some(selector) = selector.filter(|m| !m.is_empty()) else {
            return Err(selector_fail(
                "spec.selector".into(),
                "is not set (a Service without one forwards to any endpoints written for it)"
                    .into(),
            ));
        };
        for (key, pattern) in &rule.exposed_selector {
            match selector.get(key).and_then(Value::as_str) {
                Some(v) if !v.is_empty() && (pattern == "*" || pattern == v) => {}
                Some(v) => {
                    return Err(selector_fail(
                        format!("spec.selector[{}]", shown(key)),
                        format!("is `{}`, not `{}`", shown(v), shown(pattern)),
                    ));
                }
                None => {
                    return Err(selector_fail(
                        format!("spec.selector[{}]", shown(key)),
                        "is not set".into(),
                    ));
                }
            }
        }
    }
    if !rule.exposed_ports.is_empty() {
        let ports = list(spec, "ports").map_err(|p| {
            fail(
                "services.exposed-ports",
                "an exposed Service forwards only to the ports its rule names",
                "spec.ports".into(),
                p,
                "exposed_ports",
            )
        })?;
        for (j, port) in ports.iter().enumerate() {
            // No targetPort: the port number itself.
            let target = match get(port, "targetPort").or_else(|| get(port, "port")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                other => other.map(super::fields::shown_value).unwrap_or_default(),
            };
            if !rule.exposed_ports.contains(&target) {
                return Err(fail(
                    "services.exposed-ports",
                    "an exposed Service forwards only to the ports its rule names",
                    format!("spec.ports[{j}].targetPort"),
                    format!(
                        "is `{}`, not one of {}",
                        shown(&target),
                        rule.exposed_ports.join(", ")
                    ),
                    "exposed_ports",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edge() -> Vec<ServiceRule> {
        vec![ServiceRule {
            namespaces: vec!["pando-edge".into()],
            types: vec![ServiceType::NodePort, ServiceType::LoadBalancer],
            ..ServiceRule::default()
        }]
    }

    fn pinned() -> Vec<ServiceRule> {
        vec![ServiceRule {
            exposed_selector: [
                (
                    "app.kubernetes.io/managed-by".to_string(),
                    "pando".to_string(),
                ),
                ("pando.dev/edge".to_string(), "*".to_string()),
            ]
            .into(),
            exposed_ports: vec!["http".into(), "https".into()],
            ..edge()[0].clone()
        }]
    }

    #[test]
    fn an_exposed_service_selects_the_edge_on_its_ports() {
        let edge_svc = |selector: Value, ports: Value| {
            svc(json!({"type": "LoadBalancer", "selector": selector, "ports": ports}))
        };
        let labels = json!({"app.kubernetes.io/managed-by": "pando", "pando.dev/edge": "main"});
        let ports =
            json!([{"port": 80, "targetPort": "http"}, {"port": 443, "targetPort": "https"}]);
        check(
            &pinned(),
            "pando-edge",
            &edge_svc(labels.clone(), ports.clone()),
        )
        .expect("the edge");
        for (selector, p, rule, field) in [
            (
                json!({"app": "db"}),
                ports.clone(),
                "services.exposed-selector",
                "spec.selector[app.kubernetes.io/managed-by]",
            ),
            (
                Value::Null,
                ports.clone(),
                "services.exposed-selector",
                "spec.selector",
            ),
            (
                json!({"app.kubernetes.io/managed-by": "pando", "pando.dev/edge": ""}),
                ports.clone(),
                "services.exposed-selector",
                "spec.selector[pando.dev/edge]",
            ),
            (
                labels.clone(),
                json!([{"port": 5432, "targetPort": 5432}]),
                "services.exposed-ports",
                "spec.ports[0].targetPort",
            ),
            (
                labels.clone(),
                json!([{"port": 5432}]),
                "services.exposed-ports",
                "spec.ports[0].targetPort",
            ),
        ] {
            let v = check(&pinned(), "pando-edge", &edge_svc(selector, p)).unwrap_err();
            assert_eq!((v.rule, v.field.as_str()), (rule, field));
        }
        // ClusterIP Services there are not exposed: any selector.
        check(
            &pinned(),
            "pando-edge",
            &svc(json!({"selector": {"app": "db"}, "ports": [{"port": 5432}]})),
        )
        .expect("ClusterIP");
    }

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": spec})
    }

    #[test]
    fn cluster_ip_and_headless_are_allowed_everywhere() {
        check(&[], "pando-x", &svc(json!({"ports": [{"port": 80}]}))).expect("ClusterIP");
        check(&[], "pando-x", &svc(json!({"clusterIP": "None"}))).expect("headless");
        check(&[], "pando-x", &svc(json!({"type": "ClusterIP"}))).expect("explicit");
    }

    #[test]
    fn other_types_only_where_granted() {
        for ty in ["NodePort", "LoadBalancer", "ExternalName"] {
            let v = check(&edge(), "pando-x", &svc(json!({"type": ty}))).expect_err(ty);
            assert_eq!(v.rule, "services.types");
            assert_eq!(v.field, "spec.type");
        }
        check(&edge(), "pando-edge", &svc(json!({"type": "NodePort"}))).expect("granted");
        check(&edge(), "pando-edge", &svc(json!({"type": "LoadBalancer"}))).expect("granted");
        assert!(
            check(
                &edge(),
                "pando-edge",
                &svc(json!({"type": "ExternalName", "externalName": "x"}))
            )
            .is_err()
        );
        assert!(check(&edge(), "pando-edge", &svc(json!({"type": "nodeport"}))).is_err());
    }

    #[test]
    fn external_ips_are_never_allowed() {
        let v = check(
            &edge(),
            "pando-edge",
            &svc(json!({"type": "NodePort", "externalIPs": ["198.18.0.1"]})),
        )
        .unwrap_err();
        assert_eq!(v.rule, "services.external-ips");
        let v = check(&[], "pando-x", &svc(json!({"externalIPs": ["198.18.0.1"]}))).unwrap_err();
        assert_eq!(
            v.to_string(),
            "Services set no externalIPs: spec.externalIPs is set ([\\\"198.18.0.1\\\"])"
        );
    }
}
