//! Tests of `rbac.rs`, beside it.

use super::*;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use pando_host::Grants;

fn generated(rules: &str, objects: &str) -> (String, Vec<String>) {
    let doc = format!("kubernetes:\n  rules:\n{rules}  objects:\n{objects}");
    let grants = Grants::from_text("t", &doc).expect("grants");
    let options = RbacOptions {
        name: "a".into(),
        subjects: vec![Subject {
            kind: "User".into(),
            name: "me".into(),
            namespace: None,
        }],
        service_account: None,
        command: "pando-host grants rbac --grants t".into(),
    };
    generate(grants.kubernetes.as_ref().expect("kubernetes"), &options)
}

/// The documents, each as (kind, name, namespace, rules).
fn objects(yaml: &str) -> Vec<(String, String, Option<String>, Vec<PolicyRule>)> {
    let mut out = vec![];
    for value in pando_host::yaml::documents(yaml).expect("YAML") {
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let (name, ns, rules) = match kind.as_str() {
            "ClusterRole" => {
                let r: ClusterRole = serde_json::from_value(value).expect("a ClusterRole");
                (r.metadata.name, None, r.rules.unwrap_or_default())
            }
            "Role" => {
                let r: Role = serde_json::from_value(value).expect("a Role");
                (
                    r.metadata.name,
                    r.metadata.namespace,
                    r.rules.unwrap_or_default(),
                )
            }
            _ => (
                value["metadata"]["name"].as_str().map(str::to_string),
                value["metadata"]["namespace"].as_str().map(str::to_string),
                vec![],
            ),
        };
        out.push((kind, name.unwrap_or_default(), ns, rules));
    }
    out
}

fn rule<'a>(rules: &'a [PolicyRule], resource: &str) -> &'a PolicyRule {
    rules
        .iter()
        .find(|r| r.resources.iter().flatten().any(|x| x == resource))
        .unwrap_or_else(|| panic!("no rule for {resource}: {rules:?}"))
}

#[test]
fn each_rule_lands_where_rbac_can_say_it() {
    let (yaml, notes) = generated(
        "  - {verbs: [get, list, create], resources: [pods, configmaps], namespaces: ['app-*']}\n  \
             - {verbs: [get], resources: [apps/deployments], namespaces: [app-edge]}\n  \
             - {verbs: [get, create], resources: [rbac.authorization.k8s.io/rolebindings], namespaces: ['app-*']}\n  \
             - {verbs: [list, watch], resources: [pods], namespaces: ['*']}\n  \
             - {verbs: [get, delete, create], resources: [namespaces], cluster: true, names: [app-one]}\n  \
             - {verbs: [get], resources: [configmaps], namespaces: [home]}\n",
        "    role_bindings:\n    - role: a-namespace\n      subjects: [{kind: User, name: me}]\n",
    );
    assert!(notes.is_empty(), "{notes:?}");
    let objects = objects(&yaml);
    let kinds: Vec<(&str, &str, Option<&str>)> = objects
        .iter()
        .map(|(k, n, ns, _)| (k.as_str(), n.as_str(), ns.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ClusterRole", "a", None),
            ("ClusterRoleBinding", "a", None),
            ("ClusterRole", "a-namespace", None),
            ("Role", "a-home", Some("home")),
            ("RoleBinding", "a-home", Some("home")),
        ]
    );
    let cluster = &objects[0].3;
    // Every namespace's pods; the adapter's own binding; bind on the role.
    assert_eq!(rule(cluster, "pods").verbs, ["list", "watch"]);
    assert_eq!(rule(cluster, "rolebindings").verbs, ["create"]);
    let bind = rule(cluster, "clusterroles");
    assert_eq!(
        (&bind.verbs, &bind.resource_names),
        (
            &vec!["bind".to_string()],
            &Some(vec!["a-namespace".to_string()])
        )
    );
    // A named object: by name, but a create cannot be.
    let named = cluster
        .iter()
        .filter(|r| r.resources.iter().flatten().any(|x| x == "namespaces"))
        .map(|r| (r.verbs.clone(), r.resource_names.clone()))
        .collect::<Vec<_>>();
    assert_eq!(
        named,
        [
            (
                vec!["get".to_string(), "delete".to_string()],
                Some(vec!["app-one".to_string()])
            ),
            (vec!["create".to_string()], None),
        ]
    );
    // The pattern's rules, and the exact namespace it matches, per namespace.
    let per_ns = &objects[2].3;
    assert_eq!(
        rule(per_ns, "pods").resources,
        Some(vec!["pods".to_string(), "configmaps".to_string()])
    );
    assert_eq!(rule(per_ns, "deployments").verbs, ["get"]);
    assert_eq!(rule(per_ns, "rolebindings").verbs, ["get"]);
    // An exact namespace no pattern makes: a Role there.
    assert_eq!(rule(&objects[3].3, "configmaps").verbs, ["get"]);
    assert!(yaml.contains("# kubernetes.rules[0]\n"), "{yaml}");
}

#[test]
fn deleting_a_namespace_named_by_pattern_is_granted_only_in_itself() {
    let (yaml, _) = generated(
        "  - {verbs: [get], resources: [pods], namespaces: ['app-*']}\n  \
             - {verbs: [create, get, delete], resources: [namespaces], cluster: true, names: ['app-*']}\n",
        "    role_bindings:\n    - role: a-namespace\n      subjects: [{kind: User, name: me}]\n",
    );
    let objects = objects(&yaml);
    let namespaces = |doc: &Vec<PolicyRule>| {
        doc.iter()
            .filter(|r| r.resources.iter().flatten().any(|x| x == "namespaces"))
            .map(|r| r.verbs.clone())
            .collect::<Vec<_>>()
    };
    // Cluster-wide: made and read by any name, never deleted.
    assert_eq!(
        namespaces(&objects[0].3),
        [vec!["get".to_string(), "create".to_string()]]
    );
    // Deleted only where the adapter's namespace role is bound: in itself.
    let per_ns = objects
        .iter()
        .find(|(k, n, _, _)| k == "ClusterRole" && n == "a-namespace")
        .expect("the namespace role");
    assert_eq!(namespaces(&per_ns.3), [vec!["delete".to_string()]]);
    assert!(yaml.contains("[1] to name app-*"), "{yaml}");
}

#[test]
fn a_namespace_role_nothing_binds_is_said() {
    let (yaml, notes) = generated(
        "  - {verbs: [get], resources: [pods], namespaces: ['app-*']}\n",
        "    pods: []\n",
    );
    assert!(
        notes.len() == 1 && notes[0].contains("does not let the adapter bind `a-namespace`"),
        "{notes:?}"
    );
    assert!(
        yaml.contains("The grants do not let the adapter bind it"),
        "{yaml}"
    );
}
