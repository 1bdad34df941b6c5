//! Workloads (the kinds with a pod template): replicas, and each
//! container's CPU and memory requests and limits, under the ceilings of
//! the first workload rule for the namespace. Pods the workload's
//! controller makes are each within them, so the namespace's quota is not
//! the only bound.

use serde_json::Value;

use super::Violation;
use super::fields::{dig, get, integer, list, object, shown};
use super::pss::CONTAINER_LISTS;
use super::quantity::Quantity;
use super::schema::WorkloadRule;

/// Checks workload `obj`, its pod template at `template`, against `rule`
/// (at `rule_at` in the grants).
pub(crate) fn check(
    rule: &WorkloadRule,
    rule_at: &str,
    obj: &Value,
    template: &[&str],
) -> Result<(), Violation> {
    let fail =
        |rule_id: &'static str, statement: String, field: String, problem: String, grant: &str| {
            Violation {
                rule: rule_id,
                statement,
                field,
                problem,
                grant: Some(format!("{rule_at}.{grant}")),
            }
        };
    if let Some(max) = rule.max_replicas {
        let replicas =
            integer(get(obj, "spec").unwrap_or(&Value::Null), "replicas").map_err(|p| {
                fail(
                    "workloads.replicas",
                    format!("a workload runs at most {max} replicas"),
                    "spec.replicas".into(),
                    p,
                    "max_replicas",
                )
            })?;
        // Unset is one.
        let n = replicas.unwrap_or(1);
        if n > i64::from(max) {
            return Err(fail(
                "workloads.replicas",
                format!("a workload runs at most {max} replicas"),
                "spec.replicas".into(),
                format!("is {n}"),
                "max_replicas",
            ));
        }
    }
    let spec_at = format!("{}.spec", template.join("."));
    let mut spec_path = template.to_vec();
    spec_path.push("spec");
    let spec = dig(obj, &spec_path).unwrap_or(&Value::Null);
    for (resource, max, grant) in [
        ("cpu", &rule.max_cpu, "max_cpu"),
        ("memory", &rule.max_memory, "max_memory"),
    ] {
        let Some(max) = max else {
            continue;
        };
        let statement = format!("a workload's container asks for at most {max} of {resource}");
        let refuse = |field: String, problem: String| {
            fail(
                "workloads.resources",
                statement.clone(),
                field,
                problem,
                grant,
            )
        };
        let Ok(ceiling) = Quantity::parse(max) else {
            return Err(refuse(spec_at.clone(), "cannot be checked".into()));
        };
        for key in CONTAINER_LISTS {
            for (i, c) in list(spec, key).unwrap_or(&[]).iter().enumerate() {
                let resources = get(c, "resources").unwrap_or(&Value::Null);
                for part in ["requests", "limits"] {
                    let field = format!("{spec_at}.{key}[{i}].resources.{part}.{resource}");
                    let values = object(resources, part).map_err(|p| refuse(field.clone(), p))?;
                    let Some(v) = values
                        .and_then(|m| m.get(resource))
                        .filter(|v| !v.is_null())
                    else {
                        continue;
                    };
                    let text = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        other => super::fields::shown_value(other),
                    };
                    let q = Quantity::parse(&text).map_err(|p| refuse(field.clone(), p))?;
                    if q > ceiling {
                        return Err(refuse(field, format!("is {}, above {max}", shown(&text))));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule() -> WorkloadRule {
        WorkloadRule {
            namespaces: vec!["pando-edge".into()],
            max_replicas: Some(10),
            max_cpu: Some("4".into()),
            max_memory: Some("8Gi".into()),
        }
    }

    fn deployment(replicas: Value, resources: Value) -> Value {
        json!({"spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "edge", "image": "i", "resources": resources}]}}}})
    }

    #[test]
    fn replicas_and_container_resources_stay_under_the_ceilings() {
        let t: &[&str] = &["spec", "template"];
        let ok = json!({"requests": {"cpu": "100m", "memory": "1Mi"}, "limits": {"memory": "8Gi"}});
        check(
            &rule(),
            "kubernetes.objects.workloads[0]",
            &deployment(json!(10), ok.clone()),
            t,
        )
        .expect("at the ceilings");
        let v = check(&rule(), "w", &deployment(json!(1000), ok.clone()), t).unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("workloads.replicas", "spec.replicas")
        );
        assert_eq!(v.grant.as_deref(), Some("w.max_replicas"));
        for (resources, field) in [
            (
                json!({"limits": {"memory": "1Ti"}}),
                "spec.template.spec.containers[0].resources.limits.memory",
            ),
            (
                json!({"requests": {"cpu": "64"}}),
                "spec.template.spec.containers[0].resources.requests.cpu",
            ),
            (
                json!({"requests": {"cpu": "4001m"}}),
                "spec.template.spec.containers[0].resources.requests.cpu",
            ),
        ] {
            let v = check(&rule(), "w", &deployment(json!(2), resources), t).unwrap_err();
            assert_eq!((v.rule, v.field.as_str()), ("workloads.resources", field));
        }
        check(&rule(), "w", &deployment(Value::Null, json!({})), t).expect("defaults");
    }
}
