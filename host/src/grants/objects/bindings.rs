//! RoleBindings (and ClusterRoleBindings, where a grant reaches them):
//! only the ClusterRole the grants name, only for the subjects they name.
//! Without `kubernetes.objects.role_bindings` no binding may be written.

use serde_json::Value;

use super::Violation;
use super::fields::{get, list, shown, string};
use super::schema::BindingRule;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn fail(
    rule: &'static str,
    statement: &str,
    field: String,
    problem: String,
    grant: Option<String>,
) -> Violation {
    Violation {
        rule,
        statement: statement.into(),
        field,
        problem,
        grant,
    }
}

/// Checks a binding against `rule` (none: every binding is refused).
pub(crate) fn check(rule: Option<&BindingRule>, binding: &Value) -> Result<(), Violation> {
    const ROLE: &str = "role bindings bind only the ClusterRole the grants name";
    const SUBJECTS: &str = "role bindings bind only the subjects the grants name";
    let Some(rule) = rule else {
        return Err(fail(
            "rolebindings.role",
            ROLE,
            "roleRef".into(),
            "is refused: the grants name no role (kubernetes.objects.role_bindings)".into(),
            Some("kubernetes.objects.role_bindings: {role: …, subjects: […]}".into()),
        ));
    };
    let role_ref = get(binding, "roleRef").unwrap_or(&Value::Null);
    for (key, want) in [
        ("apiGroup", RBAC_GROUP),
        ("kind", "ClusterRole"),
        ("name", rule.role.as_str()),
    ] {
        let field = format!("roleRef.{key}");
        let have = string(role_ref, key)
            .map_err(|p| fail("rolebindings.role", ROLE, field.clone(), p, None))?;
        if have != Some(want) {
            return Err(fail(
                "rolebindings.role",
                ROLE,
                field,
                format!("is `{}`, not `{want}`", shown(have.unwrap_or(""))),
                None,
            ));
        }
    }
    let subjects = list(binding, "subjects").map_err(|p| {
        fail(
            "rolebindings.subjects",
            SUBJECTS,
            "subjects".into(),
            p,
            None,
        )
    })?;
    for (i, s) in subjects.iter().enumerate() {
        let text = |k: &str| string(s, k).ok().flatten().filter(|v| !v.is_empty());
        let (kind, name, ns) = (text("kind"), text("name"), text("namespace"));
        let group = text("apiGroup");
        let group_ok = match kind {
            Some("ServiceAccount") => group.is_none(),
            _ => group.is_none() || group == Some(RBAC_GROUP),
        };
        let known = group_ok
            && rule.subjects.iter().any(|g| {
                Some(g.kind.as_str()) == kind
                    && Some(g.name.as_str()) == name
                    && g.namespace.as_deref() == ns
            });
        if !known {
            return Err(fail(
                "rolebindings.subjects",
                SUBJECTS,
                format!("subjects[{i}]"),
                format!("is {}", super::fields::shown_value(s)),
                Some("kubernetes.objects.role_bindings.subjects".into()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::objects::schema::Subject;
    use serde_json::json;

    fn rule() -> BindingRule {
        BindingRule {
            role: "pando-app".into(),
            subjects: vec![Subject {
                kind: "ServiceAccount".into(),
                name: "pando".into(),
                namespace: Some("pando-system".into()),
            }],
        }
    }

    fn binding(role: &str, subjects: Value) -> Value {
        json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects})
    }

    #[test]
    fn only_the_role_and_subjects_named() {
        let sa = json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"}]);
        check(Some(&rule()), &binding("pando-app", sa.clone())).expect("granted");
        let v = check(Some(&rule()), &binding("cluster-admin", sa.clone())).unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("rolebindings.role", "roleRef.name")
        );
        let mut role_kind = binding("pando-app", sa.clone());
        role_kind["roleRef"]["kind"] = json!("Role");
        assert_eq!(
            check(Some(&rule()), &role_kind).unwrap_err().field,
            "roleRef.kind"
        );
        for bad in [
            json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"}]),
            json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "kube-system"}]),
            json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"},
                   {"kind": "User", "name": "mallory"}]),
        ] {
            let v = check(Some(&rule()), &binding("pando-app", bad.clone())).expect_err("subject");
            assert_eq!(v.rule, "rolebindings.subjects", "{bad}");
        }
        // No rule: no binding.
        let v = check(None, &binding("pando-app", sa)).unwrap_err();
        assert_eq!(v.rule, "rolebindings.role");
    }
}
