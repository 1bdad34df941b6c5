//! RoleBindings (and ClusterRoleBindings, where a grant reaches them):
//! only the (role, subjects) pairs the grants name: a binding of one of
//! their ClusterRoles to subjects of that entry only, so that a subject
//! allowed one role is never bound to another. Without
//! `kubernetes.objects.role_bindings` no binding may be written.

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

/// Checks a binding against `rules` (none: every binding is refused).
pub(crate) fn check(rules: &[BindingRule], binding: &Value) -> Result<(), Violation> {
    const ROLE: &str = "role bindings bind only the ClusterRoles the grants name";
    const SUBJECTS: &str = "role bindings bind a role only to the subjects the grants name for it";
    if rules.is_empty() {
        return Err(fail(
            "rolebindings.role",
            ROLE,
            "roleRef".into(),
            "is refused: the grants name no role (kubernetes.objects.role_bindings)".into(),
            Some("kubernetes.objects.role_bindings: [{role: …, subjects: […]}]".into()),
        ));
    }
    let role_ref = get(binding, "roleRef").unwrap_or(&Value::Null);
    for (key, want) in [("apiGroup", RBAC_GROUP), ("kind", "ClusterRole")] {
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
    let name = string(role_ref, "name")
        .map_err(|p| fail("rolebindings.role", ROLE, "roleRef.name".into(), p, None))?;
    let Some(rule) = rules.iter().find(|r| Some(r.role.as_str()) == name) else {
        let named: Vec<String> = rules.iter().map(|r| format!("`{}`", r.role)).collect();
        return Err(fail(
            "rolebindings.role",
            ROLE,
            "roleRef.name".into(),
            format!(
                "is `{}`, not {}",
                shown(name.unwrap_or("")),
                named.join(" or ")
            ),
            None,
        ));
    };
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
                Some(format!(
                    "kubernetes.objects.role_bindings: the subjects of role `{}`",
                    rule.role
                )),
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

    fn rules() -> Vec<BindingRule> {
        vec![
            BindingRule {
                role: "pando-app".into(),
                subjects: vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: "pando".into(),
                    namespace: Some("pando-system".into()),
                }],
            },
            BindingRule {
                role: "pando-adapter-namespace".into(),
                subjects: vec![Subject {
                    kind: "User".into(),
                    name: "pando".into(),
                    namespace: None,
                }],
            },
        ]
    }

    fn binding(role: &str, subjects: Value) -> Value {
        json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects})
    }

    #[test]
    fn only_the_role_and_subjects_named() {
        let sa = json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"}]);
        check(&rules(), &binding("pando-app", sa.clone())).expect("granted");
        let v = check(&rules(), &binding("cluster-admin", sa.clone())).unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("rolebindings.role", "roleRef.name")
        );
        let mut role_kind = binding("pando-app", sa.clone());
        role_kind["roleRef"]["kind"] = json!("Role");
        assert_eq!(
            check(&rules(), &role_kind).unwrap_err().field,
            "roleRef.kind"
        );
        for bad in [
            json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"}]),
            json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "kube-system"}]),
            json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"},
                   {"kind": "User", "name": "mallory"}]),
        ] {
            let v = check(&rules(), &binding("pando-app", bad.clone())).expect_err("subject");
            assert_eq!(v.rule, "rolebindings.subjects", "{bad}");
        }
        // No rule: no binding.
        let v = check(&[], &binding("pando-app", sa)).unwrap_err();
        assert_eq!(v.rule, "rolebindings.role");
    }

    #[test]
    fn each_role_only_to_its_own_subjects() {
        let sa = json!([{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"}]);
        let user = json!([{"kind": "User", "apiGroup": RBAC_GROUP, "name": "pando"}]);
        check(&rules(), &binding("pando-adapter-namespace", user.clone())).expect("the adapter's");
        check(&rules(), &binding("pando-app", sa.clone())).expect("Pando's");
        // Crossed: each subject is allowed one role, and never the other's.
        for (role, subjects) in [("pando-app", user.clone()), ("pando-adapter-namespace", sa)] {
            let v = check(&rules(), &binding(role, subjects.clone())).expect_err(role);
            assert_eq!(
                (v.rule, v.field.as_str()),
                ("rolebindings.subjects", "subjects[0]"),
                "{role} {subjects}"
            );
        }
        let v = check(&rules(), &binding("pando-adapter", user)).unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("rolebindings.role", "roleRef.name")
        );
        assert!(
            v.problem.contains("`pando-adapter-namespace`"),
            "{}",
            v.problem
        );
    }

    #[test]
    fn one_entry_as_a_map_is_a_list_of_one() {
        let one: crate::grants::objects::ObjectRules =
            crate::yaml::from_str("role_bindings: {role: r, subjects: [{kind: User, name: u}]}")
                .expect("a map");
        let many: crate::grants::objects::ObjectRules =
            crate::yaml::from_str("role_bindings: [{role: r, subjects: [{kind: User, name: u}]}]")
                .expect("a list");
        assert_eq!(one, many);
        assert_eq!(one.role_bindings.len(), 1);
    }
}
