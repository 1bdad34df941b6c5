use super::*;

#[test]
fn empty_document_grants_nothing() {
    let g = Grants::from_text("t", "{}").expect("empty grants parse");
    assert_eq!(g, Grants::none());
}

#[test]
fn unknown_field_is_named() {
    let err = Grants::from_text("t", "kubernetes:\n  rulez: []\n").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("rulez"), "{msg}");
    assert!(msg.contains("kubernetes"), "{msg}");
}

#[test]
fn the_cache_read_budget_defaults_and_must_be_a_positive_rate() {
    let g = Grants::from_text("t", "kubernetes:\n  rate: {qps: 5, burst: 10}\n")
        .expect("a rate without the cache fields");
    let rate = g.kubernetes.expect("kubernetes").rate;
    assert_eq!(
        (rate.cache_reads_per_second, rate.cache_read_burst),
        (100_000.0, 100_000)
    );
    // The fuzzer's finding: a NaN rate loaded, so a valid document no
    // longer read back equal to itself, and the budget had no meaning.
    for (value, field) in [
        (".nan", "cache_reads_per_second"),
        ("0", "cache_reads_per_second"),
        ("-3", "cache_reads_per_second"),
    ] {
        let doc = format!("kubernetes:\n  rate: {{qps: 5, burst: 10, {field}: {value}}}\n");
        let msg = Grants::from_text("t", &doc)
            .expect_err("refused")
            .to_string();
        assert!(msg.contains(&format!("kubernetes.rate.{field}")), "{msg}");
    }
    let doc = "kubernetes:\n  rate: {qps: 5, burst: 10, cache_read_burst: 0}\n";
    let msg = Grants::from_text("t", doc)
        .expect_err("refused")
        .to_string();
    assert!(msg.contains("kubernetes.rate.cache_read_burst"), "{msg}");
}

#[test]
fn the_write_budget_defaults_and_must_let_the_largest_body_through() {
    let g = Grants::from_text("t", "kubernetes:\n  rate: {qps: 5, burst: 10}\n")
        .expect("a rate without the write fields");
    let rate = g.kubernetes.expect("kubernetes").rate;
    assert_eq!(
        (rate.write_bytes_per_second, rate.write_burst_bytes),
        (1 << 20, 16 << 20)
    );
    let doc = "kubernetes:\n  max_body_bytes: 65536\n  rate: {qps: 5, burst: 10, write_burst_bytes: 1000}\n";
    let msg = Grants::from_text("t", doc)
        .expect_err("refused")
        .to_string();
    assert!(
        msg.contains("kubernetes.rate.write_burst_bytes") && msg.contains("at least 65536"),
        "{msg}"
    );
    let doc = "kubernetes:\n  rate: {qps: 5, burst: 10, write_bytes_per_second: 0}\n";
    let msg = Grants::from_text("t", doc)
        .expect_err("refused")
        .to_string();
    assert!(
        msg.contains("kubernetes.rate.write_bytes_per_second"),
        "{msg}"
    );
}

#[test]
fn rule_scope_must_be_explicit() {
    let err = Grants::from_text(
        "t",
        "kubernetes:\n  rules:\n  - verbs: [get]\n    resources: [pods]\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("rules[0]"), "{err}");
}

fn rule_error(rule: &str) -> String {
    let doc = format!("kubernetes:\n  rules:\n  - {rule}\n");
    Grants::from_text("t", &doc).expect_err(rule).to_string()
}

#[test]
fn rule_fields_are_validated() {
    let cases = [
        (
            "{verbs: ['*'], resources: [pods], namespaces: [x]}",
            "rules[0].verbs[0]",
            "wildcards",
        ),
        (
            "{verbs: [get, read], resources: [pods], namespaces: [x]}",
            "rules[0].verbs[1]",
            "unknown verb `read`",
        ),
        (
            "{verbs: [Get], resources: [pods], namespaces: [x]}",
            "rules[0].verbs[0]",
            "unknown verb",
        ),
        (
            "{verbs: [get], resources: ['*'], namespaces: [x]}",
            "rules[0].resources[0]",
            "wildcards",
        ),
        (
            "{verbs: [get], resources: ['apps/*'], namespaces: [x]}",
            "rules[0].resources[0]",
            "wildcards",
        ),
        (
            "{verbs: [get], resources: [Pods], namespaces: [x]}",
            "rules[0].resources[0]",
            "lowercase",
        ),
        (
            "{verbs: [get], resources: [pods//log], namespaces: [x]}",
            "rules[0].resources[0]",
            "malformed",
        ),
        (
            "{verbs: [get], resources: [/pods], namespaces: [x]}",
            "rules[0].resources[0]",
            "malformed",
        ),
        (
            "{verbs: [get], resources: [a/b/c/d], namespaces: [x]}",
            "rules[0].resources[0]",
            "malformed",
        ),
        (
            "{verbs: [get], resources: [apps./deployments], namespaces: [x]}",
            "rules[0].resources[0]",
            "malformed",
        ),
        (
            "{verbs: [get], resources: [core/pods], namespaces: [x]}",
            "rules[0].resources[0]",
            "without a group",
        ),
        (
            "{verbs: [get], resources: [pods], namespaces: ['']}",
            "rules[0].namespaces[0]",
            "1 to 63",
        ),
        (
            "{verbs: [get], resources: [pods], namespaces: ['pando-.*']}",
            "rules[0].namespaces[0]",
            "no regex",
        ),
        (
            "{verbs: [get], resources: [pods], namespaces: [Pando]}",
            "rules[0].namespaces[0]",
            "only",
        ),
        (
            "{verbs: [get], resources: [pods], namespaces: [x], names: [a]}",
            "rules[0].names",
            "cluster-scoped",
        ),
        (
            "{verbs: [get], resources: [nodes], cluster: true, names: ['n[0-9]']}",
            "rules[0].names[0]",
            "only",
        ),
    ];
    for (rule, field, why) in cases {
        let msg = rule_error(rule);
        assert!(msg.contains(field), "{rule}: {msg}");
        assert!(msg.contains(why), "{rule}: {msg}");
    }
}

#[test]
fn never_grantable_resources_are_refused_at_load() {
    for resource in [
        "nodes/proxy",
        "serviceaccounts/token",
        "pods/ephemeralcontainers",
        "pods/attach",
        "pods/portforward",
        "services/proxy",
        "users",
        "authentication.k8s.io/userextras",
        "certificates.k8s.io/certificatesigningrequests/approval",
        "authentication.k8s.io/tokenreviews",
        "authorization.k8s.io/subjectaccessreviews",
        "authorization.k8s.io/selfsubjectaccessreviews",
    ] {
        let cluster = !resource.starts_with("pods") && !resource.starts_with("services");
        let scope = if cluster {
            "cluster: true"
        } else {
            "namespaces: [x]"
        };
        let msg = rule_error(&format!(
            "{{verbs: [create], resources: [{resource}], {scope}}}"
        ));
        assert!(msg.contains("rules[0].resources[0]"), "{resource}: {msg}");
        assert!(msg.contains("is never granted"), "{resource}: {msg}");
    }
}

#[test]
fn object_rules_are_validated_with_their_field() {
    let err = Grants::from_text(
        "t",
        "kubernetes:\n  objects:\n    services: [{namespaces: [x], types: []}]\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("kubernetes.objects.services[0].types"),
        "{err}"
    );
    let err = Grants::from_text(
        "t",
        "kubernetes:\n  objects:\n    pods: [{namespaces: [x], privileged: true}]\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("privileged"), "{err}");
    // Absent: the safe defaults.
    let g = Grants::from_text("t", "kubernetes: {}\n").expect("grants");
    let k = g.kubernetes.expect("kubernetes");
    assert_eq!(k.objects, objects::ObjectRules::default());
    assert!(k.objects.role_bindings.is_empty());
}

#[test]
fn valid_rules_load() {
    let doc = "kubernetes:\n  rules:\n  \
               - {verbs: [get, deletecollection], resources: [pods, pods/log, apps/deployments/scale, networking.k8s.io/networkpolicies], namespaces: ['pando-*', '*']}\n  \
               - {verbs: [get], resources: [nodes], cluster: true, names: ['node-*.example.com']}\n";
    Grants::from_text("t", doc).expect("valid rules");
}

#[test]
fn the_grants_page_quotes_the_example_file_whole() {
    let file = include_str!("../../../deploy/grants/kubernetes.yaml");
    let page = include_str!("../../../docs/grants.md");
    let body = &file[file.find("kubernetes:").expect("a kubernetes section")..];
    assert!(
        page.contains(body),
        "docs/grants.md's example differs from deploy/grants/kubernetes.yaml: copy the file's \
         `kubernetes:` section into the page"
    );
}

#[test]
fn example_grants_file_loads() {
    let text = include_str!("../../../deploy/grants/kubernetes.yaml");
    let grants = Grants::from_text("deploy/grants/kubernetes.yaml", text).expect("example grants");
    let k = grants.kubernetes.expect("kubernetes section");
    assert!(!k.rules.is_empty());
    let checker = check::Checker::new(&k);
    let allowed = |method, path: &str| match request::parse(method, path, &[]) {
        Ok(request::ApiRequest::Resource { verb, target }) => {
            !matches!(checker.check(verb, &target, None), check::Decision::Deny(_))
        }
        other => panic!("{path}: {other:?}"),
    };
    use request::Method::*;
    assert!(allowed(Get, "/api/v1/namespaces/pando-shop/pods/web/log"));
    assert!(allowed(
        Post,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/pando-shop/rolebindings"
    ));
    // Bindings as deploy/kubernetes/rbac.yaml allows them: made, read,
    // deleted, never updated in place; RuntimeClasses never watched.
    assert!(!allowed(
        Patch,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/pando-shop/rolebindings/b"
    ));
    let watch = [("watch".to_string(), "true".to_string())];
    match request::parse(Get, "/apis/node.k8s.io/v1/runtimeclasses", &watch) {
        Ok(request::ApiRequest::Resource { verb, target }) => assert!(matches!(
            checker.check(verb, &target, None),
            check::Decision::Deny(_)
        )),
        other => panic!("a watch of RuntimeClasses: {other:?}"),
    }
    assert!(allowed(Get, "/api/v1/pods"));
    assert!(allowed(Get, "/api/v1/nodes/n1"));
    assert!(!allowed(Patch, "/api/v1/nodes/n1"));
    assert!(allowed(Delete, "/api/v1/namespaces/pando-shop"));
    assert!(!allowed(Delete, "/api/v1/namespaces/default"));
    assert!(allowed(
        Patch,
        "/apis/apps/v1/namespaces/pando-edge/deployments/gw"
    ));
    assert!(!allowed(
        Patch,
        "/apis/apps/v1/namespaces/pando-shop/deployments/gw"
    ));
    assert!(allowed(Get, "/api/v1/namespaces/pando-system/configmaps/c"));
    assert!(allowed(
        Get,
        "/apis/apps/v1/namespaces/pando-system/deployments/core"
    ));
    assert!(!allowed(Get, "/api/v1/namespaces/kube-system/secrets/s"));
    // Pando's own namespace is read-only: the app rules except it.
    assert!(!allowed(
        Patch,
        "/api/v1/namespaces/pando-system/configmaps/c"
    ));
    assert!(!allowed(Get, "/api/v1/namespaces/pando-system/secrets/s"));
    assert!(!allowed(Delete, "/api/v1/namespaces/pando-system"));
    assert!(allowed(Get, "/api/v1/persistentvolumes/pv-1"));
    assert!(checker.claim_namespace_granted("pando-shop"));
    assert!(!checker.claim_namespace_granted("kube-system"));

    // The object rules allow what the adapter writes, and no more.
    use objects::{Kind, ObjectPolicy};
    use serde_json::json;
    let policy = ObjectPolicy::new(&k.objects);
    let binding = json!({
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pando-app"},
        "subjects": [{"kind": "ServiceAccount", "name": "pando", "namespace": "pando-system"}],
    });
    policy
        .check(Kind::Binding, Some("pando-shop"), &binding)
        .expect("the adapter's binding");
    let mut wider = binding.clone();
    wider["roleRef"]["name"] = json!("cluster-admin");
    assert!(
        policy
            .check(Kind::Binding, Some("pando-shop"), &wider)
            .is_err()
    );
    let node_port = json!({"spec": {"type": "NodePort",
        "selector": {"app.kubernetes.io/managed-by": "pando", "pando.dev/edge": "main"},
        "ports": [{"port": 80, "targetPort": "http"}, {"port": 443, "targetPort": "https"}]}});
    policy
        .check(Kind::Service, Some("pando-edge"), &node_port)
        .expect("the edge's Service");
    let mut other = node_port.clone();
    other["spec"]["selector"] = json!({"app": "db"});
    assert_eq!(
        policy
            .check(Kind::Service, Some("pando-edge"), &other)
            .unwrap_err()
            .rule,
        "services.exposed-selector"
    );
    // The adapter's claims: unset (the default class) or a listed class.
    let claim = |spec: serde_json::Value| json!({ "spec": spec });
    policy
        .check(
            Kind::Claim,
            Some("pando-shop"),
            &claim(json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}})),
        )
        .expect("the adapter's claim");
    assert!(
        policy
            .check(
                Kind::Claim,
                Some("pando-shop"),
                &claim(json!({"storageClassName": ""}))
            )
            .is_err()
    );
    assert!(
        policy
            .check(Kind::Service, Some("pando-shop"), &node_port)
            .is_err()
    );
    let ns = json!({"metadata": {"name": "pando-shop", "labels": {
        "app.kubernetes.io/managed-by": "pando", "pando.dev/app": "shop"}}});
    policy
        .check(Kind::Namespace, None, &ns)
        .expect("an app namespace");
    assert_eq!(
        policy.pod_rule("pando-shop").0.profile,
        objects::Profile::Baseline
    );
}

#[test]
fn an_error_names_its_field_once_and_its_line() {
    let doc =
        "kubernetes:\n  rules:\n  - verbs: [get]\n    resources: [pod]\n    namespaces: [x]\n";
    let msg = Grants::from_text("t", doc)
        .expect_err("`pod` is no resource")
        .to_string();
    assert!(
        msg.contains("at `kubernetes.rules[0].resources[0]`: "),
        "{msg}"
    );
    assert_eq!(msg.matches("rules[0]").count(), 1, "{msg}");
    assert!(msg.contains("line 4"), "{msg}");
}
