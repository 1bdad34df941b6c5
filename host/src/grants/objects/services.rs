//! Services: ClusterIP (or headless) everywhere; NodePort, LoadBalancer
//! and ExternalName only in namespaces a rule grants them; `externalIPs`
//! never (they let a Service claim any address, CVE-2020-8554).

use serde_json::Value;

use super::Violation;
use super::fields::{get, list, shown, string};
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
    let granted = rules
        .iter()
        .any(|r| r.namespaces.iter().any(|p| pattern_matches(p, ns)) && r.types.contains(&parsed));
    if granted {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edge() -> Vec<ServiceRule> {
        vec![ServiceRule {
            namespaces: vec!["pando-edge".into()],
            types: vec![ServiceType::NodePort, ServiceType::LoadBalancer],
        }]
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
