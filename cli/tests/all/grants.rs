//! `pando-host grants rbac` and `pando-host grants check`, run as an
//! operator runs them: the repository's RBAC file is what the generator
//! makes of the repository's grants, byte for byte; and against the test
//! cluster's real API server, a ServiceAccount whose Role and ClusterRole
//! drifted from its grants is named, both ways, until the roles are fixed.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use pando_tests::cluster::{self, Identity};
use serde_json::{Value, json};

use crate::common::{repo_root, stderr, stdout};

/// Runs `pando-host` in the repository's root, without the caller's
/// environment.
fn run(args: &[&str]) -> Output {
    crate::common::run_in_repo(args)
}

#[test]
fn the_rbac_file_is_generated_from_the_grants() {
    let o = run(&[
        "grants",
        "rbac",
        "--grants",
        "deploy/grants/kubernetes.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = std::fs::read(repo_root().join("deploy/kubernetes/rbac.yaml")).expect("rbac.yaml");
    assert!(
        o.stdout == file,
        "deploy/kubernetes/rbac.yaml is not what deploy/grants/kubernetes.yaml needs: regenerate it \
         with `cargo run -q -p pando-cli -- grants rbac --grants deploy/grants/kubernetes.yaml > \
         deploy/kubernetes/rbac.yaml` (docs/grants.md, \"RBAC from the grants\")\n{}",
        stdout(&o)
    );
    // The same objects as a List under `-o json`.
    let o = run(&[
        "grants",
        "rbac",
        "--grants",
        "deploy/grants/kubernetes.yaml",
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRole",
            "Role",
            "RoleBinding"
        ]
    );
}

#[test]
fn grants_rbac_names_what_is_missing() {
    let o = run(&["grants", "rbac"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pass --grants FILE"), "{}", stderr(&o));
    let dir = tempfile::tempdir().expect("a temporary dir");
    let grants = dir.path().join("g.yaml");
    std::fs::write(
        &grants,
        "kubernetes:\n  rules:\n  - {verbs: [get], resources: [pods], namespaces: ['app-*']}\n",
    )
    .expect("grants");
    let path = grants.to_string_lossy();
    let o = run(&["grants", "rbac", "--grants", &path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("pass --user USER or --service-account NAME --namespace NS"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "grants",
        "rbac",
        "--grants",
        &path,
        "--service-account",
        "adapter",
        "--namespace",
        "ops",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let yaml = stdout(&o);
    assert!(
        yaml.contains("kind: ServiceAccount\nmetadata:\n  name: adapter\n  namespace: ops\n"),
        "{yaml}"
    );
    assert!(
        stderr(&o).contains("does not let the adapter bind `pando-adapter-namespace`"),
        "{}",
        stderr(&o)
    );
}

fn object<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("a valid object")
}

/// A kubeconfig for `token`: the admin's, with its token replaced.
fn kubeconfig_with(token: &str, dir: &Path) -> PathBuf {
    let admin = std::fs::read_to_string(cluster::kubeconfig_path(Identity::Admin))
        .expect("the admin kubeconfig (start the test cluster: scripts/cluster up)");
    let text: String = admin
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("token:") {
                format!("    token: {token}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join("checker.kubeconfig");
    std::fs::write(&path, text + "\n").expect("writing the kubeconfig");
    path
}

/// Runs `grants check` until its JSON report satisfies `done` (RBAC's
/// cache takes a moment to see a changed role), at most 20 s.
fn check_until(args: &[&str], done: impl Fn(&Output, &Value) -> bool) -> (Output, Value) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let o = run(args);
        let report: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        if done(&o, &report) || std::time::Instant::now() > deadline {
            return (o, report);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn refused(report: &Value) -> Vec<(String, String, Option<String>)> {
    report["refused"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["verb"].as_str().unwrap_or_default().to_string(),
                r["resource"].as_str().unwrap_or_default().to_string(),
                r["namespace"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[tokio::test]
async fn grants_check_names_a_drifted_role_against_the_api_server() {
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let ns = cluster::create_test_namespace(&admin, "gcheck")
        .await
        .expect("a namespace");
    let name = ns.name.clone();
    let pp = PostParams::default();
    // A ServiceAccount and its token: the identity under check.
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &name);
    accounts
        .create(&pp, &object(json!({ "metadata": { "name": "checker" } })))
        .await
        .expect("a ServiceAccount");
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request("checker", &pp, &request)
        .await
        .expect("a token")
        .status
        .and_then(|s| s.token)
        .expect("the token in its status");
    let subject = json!([{ "kind": "ServiceAccount", "name": "checker", "namespace": name }]);
    // The drift: configmaps without create, nodes without list, and secrets
    // deletable although the grants only read them.
    let roles = Api::<Role>::namespaced(admin.clone(), &name);
    roles
        .create(
            &pp,
            &object(json!({ "metadata": { "name": "drifted" }, "rules": [
                { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"] },
                { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "delete"] },
            ] })),
        )
        .await
        .expect("a Role");
    Api::<RoleBinding>::namespaced(admin.clone(), &name)
        .create(
            &pp,
            &object(
                json!({ "metadata": { "name": "drifted" }, "subjects": subject,
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                             "name": "drifted" } }),
            ),
        )
        .await
        .expect("a RoleBinding");
    let cluster_roles = Api::<ClusterRole>::all(admin.clone());
    cluster_roles
        .create(
            &pp,
            &object(json!({ "metadata": { "name": name }, "rules": [
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get"] },
            ] })),
        )
        .await
        .expect("a ClusterRole");
    let cluster_bindings = Api::<ClusterRoleBinding>::all(admin.clone());
    cluster_bindings
        .create(
            &pp,
            &object(json!({ "metadata": { "name": name }, "subjects": subject,
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": name } })),
        )
        .await
        .expect("a ClusterRoleBinding");

    let dir = tempfile::tempdir().expect("a temporary dir");
    let kubeconfig = kubeconfig_with(&token, dir.path());
    let grants = dir.path().join("grants.yaml");
    std::fs::write(
        &grants,
        format!(
            "kubernetes:\n  rules:\n  \
             - {{verbs: [get, list, create], resources: [configmaps], namespaces: [{name}]}}\n  \
             - {{verbs: [get], resources: [secrets], namespaces: [{name}]}}\n  \
             - {{verbs: [get, list], resources: [nodes], cluster: true}}\n"
        ),
    )
    .expect("grants");
    let (grants, kubeconfig) = (grants.to_string_lossy(), kubeconfig.to_string_lossy());
    let json_args = [
        "grants",
        "check",
        "--grants",
        &grants,
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
    ];
    let expected = vec![
        (
            "create".to_string(),
            "configmaps".to_string(),
            Some(name.clone()),
        ),
        ("list".to_string(), "nodes".to_string(), None),
    ];
    let (o, report) = check_until(&json_args, |_, r| refused(r) == expected);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(refused(&report), expected, "{report:#}");
    let beyond: Vec<(&str, &str)> = report["beyond"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["verb"].as_str().unwrap_or_default(),
                b["resource"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(beyond, [("delete", "secrets")], "{report:#}");

    // The text names the same drift.
    let o = run(&json_args[..6]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    for line in [
        format!("kubernetes.rules[0]: create configmaps in namespace \"{name}\""),
        "kubernetes.rules[2]: list nodes (cluster-scoped)".to_string(),
        format!("delete secrets in {name}"),
    ] {
        assert!(text.contains(&line), "`{line}` in:\n{text}");
    }

    // Fixed roles: nothing refused, exit 0.
    let fixed = json!({ "rules": [
        { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"] },
        { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] },
    ] });
    let patch = kube::api::Patch::Merge(&fixed);
    roles
        .patch("drifted", &Default::default(), &patch)
        .await
        .expect("the Role fixed");
    let fixed = json!({ "rules": [
        { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"] },
    ] });
    cluster_roles
        .patch(&name, &Default::default(), &kube::api::Patch::Merge(&fixed))
        .await
        .expect("the ClusterRole fixed");
    let (o, report) = check_until(&json_args, |o, r| {
        o.status.code() == Some(0) && r["beyond"].as_array().is_some_and(Vec::is_empty)
    });
    assert_eq!(o.status.code(), Some(0), "{report:#}\n{}", stderr(&o));
    assert_eq!(report["refused"], json!([]), "{report:#}");
    assert_eq!(report["beyond"], json!([]), "{report:#}");

    let dp = DeleteParams::default();
    let _ = cluster_bindings.delete(&name, &dp).await;
    let _ = cluster_roles.delete(&name, &dp).await;
    ns.delete().await.expect("cleanup");
}
