use super::*;
use crate::grants::Grants;
use crate::grants::request::{ApiRequest, Method, parse};

const GRANTS: &str = r#"
kubernetes:
  rules:
  - {verbs: [get, list, watch, create, update, patch, delete], resources: [pods, secrets, persistentvolumeclaims], namespaces: ["pando-*"]}
  - {verbs: [get], resources: [pods/log], namespaces: ["pando-*"]}
  - {verbs: [get, list, watch], resources: [pods], namespaces: ["*"]}
  - {verbs: [get, list, watch], resources: [nodes, node.k8s.io/runtimeclasses], cluster: true}
  - {verbs: [create, get, delete], resources: [namespaces], cluster: true, names: ["pando-*"]}
  - {verbs: [get, patch, delete], resources: [persistentvolumes], cluster: true}
"#;

fn checker() -> Checker {
    let g = Grants::from_text("t", GRANTS).expect("test grants");
    Checker::new(g.kubernetes.as_ref().expect("kubernetes section"))
}

fn req(method: Method, path: &str, query: &[(&str, &str)]) -> (Verb, ApiTarget) {
    let query: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    match parse(method, path, &query) {
        Ok(ApiRequest::Resource { verb, target }) => (verb, target),
        other => panic!("{path}: {other:?}"),
    }
}

fn decide(method: Method, path: &str) -> Decision {
    let (verb, target) = req(method, path, &[]);
    checker().check(verb, &target, None)
}

fn denial(d: Decision) -> Denial {
    match d {
        Decision::Deny(d) => d,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn a_resource_kubernetes_does_not_serve_proposes_no_grant() {
    // Found by the `grant_check` fuzz target: the denial proposed a rule
    // the grants refuse at load.
    let d = denial(decide(
        Method::Post,
        "/apis/rbac.authorization.k8s.io/v1/namespac",
    ));
    assert!(
        d.missing_grant.starts_with("# none:"),
        "{}",
        d.missing_grant
    );
    assert!(d.message.contains("no grant can allow it"), "{}", d.message);
}

#[test]
fn a_resource_no_grant_may_name_proposes_no_grant() {
    // Found by the `grant_check` fuzz target: a denied `deletecollection` of
    // `bindings` proposed a rule naming `bindings`, which the grants refuse
    // at load ("is never granted").
    let d = denial(decide(
        Method::Delete,
        "/api/v1/namespaces/pando-x/bindings",
    ));
    assert!(
        d.missing_grant.starts_with("# none:") && d.missing_grant.contains("is never granted"),
        "{}",
        d.missing_grant
    );
    assert!(
        Grants::from_text(
            "t",
            "kubernetes:\n  rules:\n  - {verbs: [deletecollection], resources: [bindings], namespaces: [\"*\"]}\n"
        )
        .is_err(),
        "the rule it would have proposed does not load"
    );
}

#[test]
fn patterns() {
    assert!(pattern_matches("pando-*", "pando-x"));
    assert!(pattern_matches("pando-*", "pando-"));
    assert!(!pattern_matches("pando-*", "default"));
    assert!(!pattern_matches("pando-*", "xpando-x"));
    assert!(pattern_matches("*", "anything"));
    assert!(pattern_matches("*-edge", "pando-edge"));
    assert!(pattern_matches("a*b*c", "axxbyyc"));
    assert!(!pattern_matches("a*b*c", "axxbyy"));
    assert!(pattern_matches("exact", "exact"));
    assert!(!pattern_matches("exact", "exact2"));
    assert!(!pattern_matches("exact", "exac"));
}

#[test]
fn namespace_by_pattern() {
    assert_eq!(
        decide(Method::Get, "/api/v1/namespaces/pando-x/pods/web"),
        Decision::Allow { rule: 0 }
    );
    let d = denial(decide(
        Method::Delete,
        "/api/v1/namespaces/default/pods/web",
    ));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [delete], resources: [pods], namespaces: ["default"]}"#
    );
    assert!(
        d.message
            .contains(r#"delete pods "web" in namespace "default" denied"#),
        "{}",
        d.message
    );
    assert!(d.message.contains("pando-*"), "{}", d.message);
}

#[test]
fn kube_system_secrets_denied() {
    let d = denial(decide(
        Method::Get,
        "/api/v1/namespaces/kube-system/secrets/token",
    ));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [get], resources: [secrets], namespaces: ["kube-system"]}"#
    );
    let d = denial(decide(
        Method::Get,
        "/api/v1/namespaces/kube-system/secrets",
    ));
    assert!(d.missing_grant.contains("[list]"), "{}", d.missing_grant);
}

#[test]
fn all_namespaces_needs_star() {
    // pods: rule 2 has "*".
    let (verb, t) = req(Method::Get, "/api/v1/pods", &[("watch", "true")]);
    assert_eq!(checker().check(verb, &t, None), Decision::Allow { rule: 2 });
    // secrets: only pando-*, which must not become a cluster-wide list.
    let d = denial(decide(Method::Get, "/api/v1/secrets"));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [list], resources: [secrets], namespaces: ["*"]}"#
    );
    assert!(d.message.contains("all namespaces"), "{}", d.message);
}

#[test]
fn nodes_read_only() {
    assert_eq!(
        decide(Method::Get, "/api/v1/nodes/n1"),
        Decision::Allow { rule: 3 }
    );
    assert_eq!(
        decide(Method::Get, "/api/v1/nodes"),
        Decision::Allow { rule: 3 }
    );
    assert_eq!(
        decide(Method::Get, "/apis/node.k8s.io/v1/runtimeclasses/gvisor"),
        Decision::Allow { rule: 3 }
    );
    let d = denial(decide(Method::Patch, "/api/v1/nodes/n1"));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [patch], resources: [nodes], cluster: true, names: ["n1"]}"#
    );
    assert!(
        d.message.contains("verbs [get, list, watch] only"),
        "{}",
        d.message
    );
}

#[test]
fn namespaces_by_name_pattern() {
    let c = checker();
    assert_eq!(
        decide(Method::Get, "/api/v1/namespaces/pando-x"),
        Decision::Allow { rule: 4 }
    );
    assert_eq!(
        decide(Method::Delete, "/api/v1/namespaces/pando-x"),
        Decision::Allow { rule: 4 }
    );
    denial(decide(Method::Delete, "/api/v1/namespaces/default"));
    // A create names the object in the body.
    let (verb, t) = req(Method::Post, "/api/v1/namespaces", &[]);
    assert_eq!(verb, Verb::Create);
    assert_eq!(
        c.check(verb, &t, Some("pando-new")),
        Decision::Allow { rule: 4 }
    );
    let d = denial(c.check(verb, &t, Some("kube-evil")));
    assert!(
        d.missing_grant.contains(r#"names: ["kube-evil"]"#),
        "{}",
        d.missing_grant
    );
    let d = denial(c.check(verb, &t, None));
    assert!(d.message.contains("no name to match"), "{}", d.message);
    // An invalid body name never matches a pattern.
    denial(c.check(verb, &t, Some("pando-x/../kube-system")));
    // The body name counts only for creates.
    let (verb, t) = req(Method::Get, "/api/v1/namespaces", &[]);
    denial(c.check(verb, &t, Some("pando-x")));
}

#[test]
fn persistent_volumes_through_claims() {
    let c = checker();
    for m in [Method::Get, Method::Patch, Method::Delete] {
        assert_eq!(
            decide(m, "/api/v1/persistentvolumes/pv-1"),
            Decision::AllowIfClaimed { rule: 5 },
            "{m}"
        );
    }
    for (m, q) in [
        (Method::Get, None),
        (Method::Get, Some("true")),
        (Method::Delete, None),
    ] {
        let query: Vec<(&str, &str)> = q.map(|v| ("watch", v)).into_iter().collect();
        let (verb, t) = req(m, "/api/v1/persistentvolumes", &query);
        let d = denial(c.check(verb, &t, None));
        assert!(d.message.contains("only by name"), "{}", d.message);
    }
    let (verb, t) = req(Method::Post, "/api/v1/persistentvolumes", &[]);
    denial(c.check(verb, &t, Some("pv-1")));
    // Update is not granted.
    denial(decide(Method::Put, "/api/v1/persistentvolumes/pv-1"));
    assert!(c.claim_namespace_granted("pando-x"));
    assert!(!c.claim_namespace_granted("default"));
}

#[test]
fn subresource_needs_its_own_grant() {
    assert_eq!(
        decide(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log"),
        Decision::Allow { rule: 1 }
    );
    let d = denial(decide(
        Method::Post,
        "/api/v1/namespaces/pando-x/pods/web/exec",
    ));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [create], resources: [pods/exec], namespaces: ["pando-*"], except: ["pando-system"]}"#
    );
}

/// The checker over one proposed rule, as an author would paste it.
fn checker_of(rule: &str) -> Checker {
    let g = Grants::from_text("t", &format!("kubernetes:\n  rules:\n  {rule}\n"))
        .unwrap_or_else(|e| panic!("the proposed rule does not load: {e}\n{rule}"));
    Checker::new(g.kubernetes.as_ref().expect("kubernetes section"))
}

#[test]
fn a_denial_in_an_app_namespace_proposes_the_app_pattern_once() {
    let c = Checker::new(&KubernetesGrants::default());
    let (verb, t) = req(Method::Get, "/api/v1/namespaces/pando-hello/pods/web", &[]);
    let d = denial(c.check(verb, &t, None));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [get], resources: [pods], namespaces: ["pando-*"], except: ["pando-system"]}"#
    );
    assert_eq!(
        d.message.matches(&d.missing_grant).count(),
        1,
        "{}",
        d.message
    );
    assert!(
        !d.missing_grant.contains("pando-hello"),
        "{}",
        d.missing_grant
    );
    // Pasted, it allows this app's request and another app's, and not
    // Pando's own namespace.
    let pasted = checker_of(&d.missing_grant);
    assert_eq!(pasted.check(verb, &t, None), Decision::Allow { rule: 0 });
    let (_, other) = req(Method::Get, "/api/v1/namespaces/pando-shop/pods/db", &[]);
    assert_eq!(
        pasted.check(verb, &other, None),
        Decision::Allow { rule: 0 }
    );
    let (_, system) = req(Method::Get, "/api/v1/namespaces/pando-system/pods/x", &[]);
    denial(pasted.check(verb, &system, None));
    // Creating an app's namespace: the names pattern, likewise.
    let (verb, t) = req(Method::Delete, "/api/v1/namespaces/pando-hello", &[]);
    let d = denial(c.check(verb, &t, None));
    assert_eq!(
        d.missing_grant,
        r#"- {verbs: [delete], resources: [namespaces], cluster: true, names: ["pando-*"], except: ["pando-system"]}"#
    );
    assert_eq!(
        checker_of(&d.missing_grant).check(verb, &t, None),
        Decision::Allow { rule: 0 }
    );
}

#[test]
fn a_denial_elsewhere_proposes_the_exact_namespace() {
    let c = Checker::new(&KubernetesGrants::default());
    for ns in ["pando-system", "kube-system", "shop"] {
        let (verb, t) = req(
            Method::Get,
            &format!("/api/v1/namespaces/{ns}/pods/web"),
            &[],
        );
        let d = denial(c.check(verb, &t, None));
        assert_eq!(
            d.missing_grant,
            format!(r#"- {{verbs: [get], resources: [pods], namespaces: ["{ns}"]}}"#)
        );
        assert_eq!(
            checker_of(&d.missing_grant).check(verb, &t, None),
            Decision::Allow { rule: 0 }
        );
    }
}

#[test]
fn deny_by_default() {
    let c = Checker::new(&KubernetesGrants::default());
    let (verb, t) = req(Method::Get, "/api/v1/namespaces/pando-x/pods", &[]);
    let d = denial(c.check(verb, &t, None));
    assert!(
        d.message.contains("no grant rule allows it"),
        "{}",
        d.message
    );
}

#[test]
fn usage_report() {
    let g = Grants::from_text("t", GRANTS).expect("grants");
    let k = g.kubernetes.as_ref().expect("kubernetes");
    let c = Checker::new(k);
    let usage = GrantUsage::default();
    let (verb, t) = req(Method::Get, "/api/v1/namespaces/pando-x/pods/web", &[]);
    c.check_and_record(&usage, verb, &t, None);
    c.check_and_record(&usage, verb, &t, None);
    let (verb, t) = req(Method::Get, "/api/v1/namespaces/kube-system/secrets/a", &[]);
    c.check_and_record(&usage, verb, &t, None);
    let (verb, t) = req(Method::Get, "/api/v1/namespaces/kube-system/secrets/b", &[]);
    c.check_and_record(&usage, verb, &t, None);
    let report = usage.report(k);
    assert_eq!(report.rules.len(), k.rules.len());
    assert_eq!((report.rules[0].uses, report.rules[0].used), (2, true));
    assert!(!report.rules[1].used);
    assert_eq!(
        report.denials,
        vec![DenialCount {
            verb: Verb::Get,
            resource: "secrets".into(),
            namespace: Some("kube-system".into()),
            count: 2,
        }]
    );
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["denials"][0]["verb"], "get");
    assert!(report.object_denials.is_empty());

    let (verb, t) = req(Method::Post, "/api/v1/namespaces/pando-x/pods", &[]);
    usage.record_object_denied(verb, &t, "pods.baseline");
    usage.record_object_denied(verb, &t, "pods.baseline");
    usage.record_object_denied(verb, &t, "pods.node-name");
    let report = usage.report(k);
    assert_eq!(
        report.object_denials,
        vec![
            ObjectDenialCount {
                rule: "pods.baseline".into(),
                count: 2
            },
            ObjectDenialCount {
                rule: "pods.node-name".into(),
                count: 1
            },
        ]
    );
    assert!(
        report
            .denials
            .iter()
            .any(|d| d.verb == Verb::Create && d.count == 3)
    );
}

#[test]
fn usage_denials_are_capped() {
    let usage = GrantUsage::default();
    for i in 0..(MAX_DENIAL_ENTRIES + 5) {
        let (verb, t) = req(
            Method::Get,
            &format!("/api/v1/namespaces/ns-{i}/secrets"),
            &[],
        );
        usage.record_denied(verb, &t);
    }
    let report = usage.report(&KubernetesGrants::default());
    assert_eq!(report.denials.len(), MAX_DENIAL_ENTRIES);
    assert_eq!(report.denials_dropped, 5);
}

#[test]
fn except_holds_for_cluster_rules_without_names() {
    // Found by the `grant_check` fuzz target: a cluster rule without
    // `names` ignored its `except`.
    let g = Grants::from_text(
        "t",
        "kubernetes:\n  rules:\n  - {verbs: [get, delete, list], resources: [namespaces], \
         cluster: true, except: [pando-system, kube-*]}\n",
    )
    .expect("grants");
    let c = Checker::new(g.kubernetes.as_ref().expect("kubernetes section"));
    let decide = |method, path: &str| {
        let (verb, t) = req(method, path, &[]);
        c.check(verb, &t, None)
    };
    assert_eq!(
        decide(Method::Get, "/api/v1/namespaces/pando-x"),
        Decision::Allow { rule: 0 }
    );
    denial(decide(Method::Delete, "/api/v1/namespaces/kube-system"));
    denial(decide(Method::Delete, "/api/v1/namespaces/pando-system"));
    // A list would show the excepted ones too.
    denial(decide(Method::Get, "/api/v1/namespaces"));
}
