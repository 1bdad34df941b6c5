use super::*;

fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect()
}

fn ok(method: Method, path: &str) -> (Verb, ApiTarget) {
    ok_q(method, path, &[])
}

fn ok_q(method: Method, path: &str, query: &[(&str, &str)]) -> (Verb, ApiTarget) {
    match parse(method, path, &q(query)) {
        Ok(ApiRequest::Resource { verb, target }) => (verb, target),
        other => panic!("{method} {path}: {other:?}"),
    }
}

fn err(method: Method, path: &str) -> PathError {
    parse(method, path, &[]).expect_err(path)
}

fn target(group: &str, version: &str, resource: &str) -> ApiTarget {
    ApiTarget {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: None,
        namespace: None,
        name: None,
    }
}

#[test]
fn namespaced_object_and_subresource() {
    let (verb, t) = ok(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log");
    assert_eq!(verb, Verb::Get);
    assert_eq!(
        t,
        ApiTarget {
            subresource: Some("log".into()),
            namespace: Some("pando-x".into()),
            name: Some("web".into()),
            ..target("", "v1", "pods")
        }
    );
    assert_eq!(t.grant_spelling(), "pods/log");
    assert_eq!(t.to_string(), r#"pods/log "web" in namespace "pando-x""#);
}

#[test]
fn grouped_paths() {
    let (verb, t) = ok(
        Method::Put,
        "/apis/apps/v1/namespaces/pando-edge/deployments/gw/scale",
    );
    assert_eq!(verb, Verb::Update);
    assert_eq!(t.grant_spelling(), "apps/deployments/scale");
    assert_eq!(t.namespace.as_deref(), Some("pando-edge"));
    let (verb, t) = ok(
        Method::Post,
        "/apis/networking.k8s.io/v1/namespaces/pando-x/networkpolicies",
    );
    assert_eq!(verb, Verb::Create);
    assert_eq!(t.grant_spelling(), "networking.k8s.io/networkpolicies");
    assert_eq!(t.name, None);
    let (_, t) = ok(Method::Get, "/apis/node.k8s.io/v1/runtimeclasses/gvisor");
    assert_eq!(t.group, "node.k8s.io");
    assert_eq!(t.name.as_deref(), Some("gvisor"));
    assert_eq!(t.namespace, None);
    assert_eq!(t.to_string(), r#"node.k8s.io/runtimeclasses "gvisor""#);
}

#[test]
fn verb_mapping() {
    let p = "/api/v1/namespaces/pando-x/pods";
    assert_eq!(ok(Method::Get, p).0, Verb::List);
    assert_eq!(ok_q(Method::Get, p, &[("watch", "true")]).0, Verb::Watch);
    assert_eq!(ok_q(Method::Get, p, &[("watch", "1")]).0, Verb::Watch);
    assert_eq!(ok_q(Method::Get, p, &[("watch", "false")]).0, Verb::List);
    assert_eq!(ok(Method::Post, p).0, Verb::Create);
    assert_eq!(ok(Method::Delete, p).0, Verb::DeleteCollection);
    let named = "/api/v1/namespaces/pando-x/pods/web";
    assert_eq!(ok(Method::Get, named).0, Verb::Get);
    assert_eq!(ok(Method::Put, named).0, Verb::Update);
    assert_eq!(ok(Method::Patch, named).0, Verb::Patch);
    assert_eq!(ok(Method::Delete, named).0, Verb::Delete);
    assert!(matches!(err(Method::Put, p), PathError::BadMethod { .. }));
    assert!(matches!(err(Method::Patch, p), PathError::BadMethod { .. }));
    assert!(matches!(
        parse(Method::Get, named, &q(&[("watch", "true")])),
        Err(PathError::BadMethod { .. })
    ));
    assert!(matches!(
        parse(Method::Get, p, &q(&[("watch", "yes")])),
        Err(PathError::QueryValue { .. })
    ));
    assert_eq!(Verb::DeleteCollection.to_string(), "deletecollection");
    assert_eq!(Verb::from_rbac("watch"), Some(Verb::Watch));
    assert_eq!(Verb::from_rbac("Watch"), None);
}

#[test]
fn cluster_scoped_and_all_namespaces() {
    let (verb, t) = ok(Method::Get, "/api/v1/pods");
    assert_eq!(verb, Verb::List);
    assert_eq!((t.namespace, t.name), (None, None));
    let (verb, t) = ok(Method::Get, "/api/v1/nodes/n1");
    assert_eq!(verb, Verb::Get);
    assert_eq!(t.name.as_deref(), Some("n1"));
    assert_eq!(t.to_string(), r#"nodes "n1""#);
    assert_eq!(
        ok(Method::Get, "/api/v1/pods").1.to_string(),
        "pods in all namespaces"
    );
}

#[test]
fn namespace_object_special_case() {
    let (verb, t) = ok(Method::Delete, "/api/v1/namespaces/pando-x");
    assert_eq!(verb, Verb::Delete);
    assert_eq!(
        t,
        ApiTarget {
            name: Some("pando-x".into()),
            ..target("", "v1", "namespaces")
        }
    );
    let (verb, t) = ok(Method::Put, "/api/v1/namespaces/pando-x/finalize");
    assert_eq!(verb, Verb::Update);
    assert_eq!(t.grant_spelling(), "namespaces/finalize");
    assert_eq!(t.name.as_deref(), Some("pando-x"));
    assert_eq!(t.namespace, None);
    assert_eq!(
        ok(Method::Get, "/api/v1/namespaces/pando-x/status")
            .1
            .grant_spelling(),
        "namespaces/status"
    );
    let (verb, t) = ok(Method::Get, "/api/v1/namespaces");
    assert_eq!(verb, Verb::List);
    assert_eq!(t.resource, "namespaces");
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/status/x"),
        PathError::TooManySegments { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/apis/apps/v1/namespaces/pando-x"),
        PathError::BadSegment {
            part: "resource",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/apis/apps/v1/namespaces/pando-x/status"),
        PathError::BadSegment {
            part: "resource",
            ..
        }
    ));
}

#[test]
fn non_resource_endpoints() {
    for p in NON_RESOURCE_PATHS {
        assert_eq!(
            parse(Method::Get, p, &[]),
            Ok(ApiRequest::NonResource { path: (*p).into() })
        );
    }
    assert!(matches!(
        err(Method::Post, "/version"),
        PathError::BadMethod { .. }
    ));
    for p in [
        "/metrics",
        "/openapi/v2",
        "/logs/",
        "/debug/pprof",
        "/version/",
        "/",
        "",
    ] {
        assert!(parse(Method::Get, p, &[]).is_err(), "{p}");
    }
    assert!(matches!(
        err(Method::Get, "/metrics"),
        PathError::NotAnApiPath { .. }
    ));
}

#[test]
fn traversal_and_escapes_are_refused() {
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/kube-system/secrets/../../pando-x/pods"),
        PathError::DotSegment { ref segment, .. } if segment == ".."
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/./pods"),
        PathError::DotSegment { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/pods/.."),
        PathError::DotSegment { .. }
    ));
    for p in [
        "/api/v1/namespaces/%2e%2e/pods",
        "/api/v1/namespaces/pando-x%2Fpods",
        "/api/v1/namespaces/pando-x/pods?labelSelector=a",
        "/api/v1/namespaces/pando-x/pods#x",
        "/api/v1/namespaces\\pando-x/pods",
        "/api/v1/namespaces/pando-x/pods/a b",
        "/api/v1/namespaces/pando-x/pods/a\n",
        "/api/v1/namespaces/pando-x/pods/a\t",
        "/api/v1/namespaces/pando-x/pods/a\u{0}",
        "/api/v1/namespaces/pandо-x/pods",
    ] {
        assert!(
            matches!(err(Method::Get, p), PathError::BadCharacter { .. }),
            "{p}"
        );
    }
    let e = err(Method::Get, "/api/v1/namespaces/pando-x%2Fpods").to_string();
    assert!(e.contains("percent-encoding"), "{e}");
    let e = err(Method::Get, "/api/v1/namespaces/x/pods/a\n").to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(matches!(
        err(Method::Get, "/api/v1//pods"),
        PathError::EmptySegment { .. }
    ));
    assert!(matches!(
        err(Method::Get, "//api/v1/pods"),
        PathError::NotAnApiPath { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/pods/"),
        PathError::TrailingSlash { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/"),
        PathError::TrailingSlash { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1"),
        PathError::Incomplete { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/apis/apps/v1"),
        PathError::Incomplete { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v2/pods"),
        PathError::NotAnApiPath { .. }
    ));
    assert!(matches!(
        err(Method::Get, "api/v1/pods"),
        PathError::NotAnApiPath { .. }
    ));
}

#[test]
fn alternate_spellings_are_refused() {
    let e = err(Method::Get, "/api/v1/namespaces/pando-x/Pods");
    assert!(
        matches!(
            e,
            PathError::BadSegment {
                part: "resource",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("uppercase"), "{e}");
    assert!(matches!(
        err(Method::Get, "/apis/Apps/v1/namespaces/pando-x/deployments"),
        PathError::BadSegment { part: "group", .. }
    ));
    assert!(matches!(
        err(Method::Get, "/apis/apps./v1/namespaces/pando-x/deployments"),
        PathError::BadSegment { part: "group", .. }
    ));
    assert!(matches!(
        err(Method::Get, "/apis/apps/V1/deployments"),
        PathError::BadSegment {
            part: "version",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/Pando-x/pods"),
        PathError::BadSegment {
            part: "namespace",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando.x/pods"),
        PathError::BadSegment {
            part: "namespace",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/pods/Web"),
        PathError::BadSegment { part: "name", .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/pods/-web"),
        PathError::BadSegment { part: "name", .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/pods/web/Log"),
        PathError::BadSegment {
            part: "subresource",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/watch/namespaces/pando-x/pods"),
        PathError::BadSegment {
            part: "resource",
            ..
        } | PathError::TooManySegments { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/watch/pods"),
        PathError::BadSegment { .. }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/proxy/nodes"),
        PathError::BadSegment { .. }
    ));
    // A name may be a dotted subdomain.
    assert_eq!(
        ok(
            Method::Get,
            "/api/v1/namespaces/pando-x/configmaps/kube-root-ca.crt"
        )
        .1
        .name
        .as_deref(),
        Some("kube-root-ca.crt")
    );
}

#[test]
fn lengths_and_segment_counts() {
    let long = "a".repeat(254);
    assert!(matches!(
        err(
            Method::Get,
            &format!("/api/v1/namespaces/pando-x/pods/{long}")
        ),
        PathError::SegmentTooLong { .. }
    ));
    let name253 = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61)
    );
    assert_eq!(name253.len(), 253);
    ok(
        Method::Get,
        &format!("/api/v1/namespaces/pando-x/pods/{name253}"),
    );
    let ns64 = "n".repeat(64);
    assert!(matches!(
        err(Method::Get, &format!("/api/v1/namespaces/{ns64}/pods")),
        PathError::BadSegment {
            part: "namespace",
            ..
        }
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log/more"),
        PathError::TooManySegments { ref extra, .. } if extra == "more"
    ));
    assert!(matches!(
        err(Method::Get, "/api/v1/nodes/n1/proxy/x"),
        PathError::TooManySegments { .. }
    ));
}

#[test]
fn query_keys() {
    let p = "/api/v1/namespaces/pando-x/pods";
    ok_q(
        Method::Get,
        p,
        &[
            ("labelSelector", "app in (a, b)"),
            ("limit", "50"),
            ("continue", "x"),
        ],
    );
    let e = parse(Method::Get, p, &q(&[("namespace", "kube-system")])).unwrap_err();
    assert!(
        matches!(e, PathError::QueryKey { ref key } if key == "namespace"),
        "{e}"
    );
    assert!(e.to_string().contains("labelSelector"), "{e}");
    assert!(matches!(
        parse(Method::Get, p, &q(&[("LabelSelector", "a")])),
        Err(PathError::QueryKey { .. })
    ));
    assert!(matches!(
        parse(Method::Get, p, &q(&[("watch", "false"), ("watch", "true")])),
        Err(PathError::DuplicateQueryKey { .. })
    ));
    assert!(matches!(
        parse(Method::Get, "/version", &q(&[("watch", "true")])),
        Err(PathError::QueryKey { .. })
    ));
}
