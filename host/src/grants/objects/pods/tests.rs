//! Tests of `pods.rs`, beside it.

use super::*;
use serde_json::json;

fn pod() -> Value {
    json!({"automountServiceAccountToken": false, "containers": [{"name": "c", "image": "i"}]})
}

fn run(rule: &PodRule, spec: &Value) -> Result<(), Violation> {
    check(
        rule,
        "kubernetes.objects.pods[0]",
        &ClaimRule::default(),
        &PodView {
            meta: &Value::Null,
            spec,
            meta_at: "metadata",
            spec_at: "spec",
        },
    )
}

fn rule_of(spec: Value) -> &'static str {
    run(&PodRule::default(), &spec)
        .expect_err("a violation")
        .rule
}

fn set(key: &str, value: Value) -> Value {
    let mut p = pod();
    p[key] = value;
    p
}

#[test]
fn defaults_allow_a_plain_pod_only() {
    run(&PodRule::default(), &pod()).expect("plain pod");
    assert_eq!(
        rule_of(set("nodeName", json!("control-plane"))),
        "pods.node-name"
    );
    assert_eq!(
        rule_of(set("priorityClassName", json!("system-node-critical"))),
        "pods.priority-classes"
    );
    assert_eq!(
        rule_of(set("runtimeClassName", json!("runc"))),
        "pods.runtime-classes"
    );
    assert_eq!(
        rule_of(set("serviceAccountName", json!("admin"))),
        "pods.service-accounts"
    );
    assert_eq!(
        rule_of(set("serviceAccount", json!("admin"))),
        "pods.service-accounts"
    );
    assert_eq!(
        rule_of(set("tolerations", json!([{"operator": "Exists"}]))),
        "pods.tolerations"
    );
    assert_eq!(
        rule_of(set("automountServiceAccountToken", json!(true))),
        "pods.service-account-token"
    );
    assert_eq!(
        rule_of(set("automountServiceAccountToken", Value::Null)),
        "pods.service-account-token"
    );
    assert_eq!(
        rule_of(set(
            "volumes",
            json!([{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}])
        )),
        "pods.service-account-token"
    );
    // PSS comes first.
    assert_eq!(rule_of(set("hostPID", json!(true))), "pods.baseline");
    // `default` is what an unset name is.
    run(
        &PodRule::default(),
        &set("serviceAccountName", json!("default")),
    )
    .expect("default SA");
    // The API server's own tolerations.
    run(
        &PodRule::default(),
        &set(
            "tolerations",
            json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                          "effect": "NoExecute", "tolerationSeconds": 300}]),
        ),
    )
    .expect("default toleration");
    // … but not for good, nor for longer than the admission's default.
    for seconds in [json!(null), json!(301)] {
        let v = run(
            &PodRule::default(),
            &set(
                "tolerations",
                json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                            "effect": "NoExecute", "tolerationSeconds": seconds}]),
            ),
        )
        .expect_err("a default toleration without its bound");
        assert_eq!(v.rule, "pods.tolerations", "{v:?}");
    }
}

#[test]
fn volumes_are_restricteds_types_and_the_grants_and_images_are_pulled() {
    for (volume, field) in [
        (
            json!({"name": "v", "nfs": {"server": "198.18.0.9", "path": "/"}}),
            "spec.volumes[0].nfs",
        ),
        (
            json!({"name": "v", "iscsi": {"targetPortal": "198.18.0.9:3260", "iqn": "x", "lun": 0}}),
            "spec.volumes[0].iscsi",
        ),
        (
            json!({"name": "v", "fc": {"wwids": ["x"]}}),
            "spec.volumes[0].fc",
        ),
        (
            json!({"name": "v", "awsElasticBlockStore": {"volumeID": "vol-1"}}),
            "spec.volumes[0].awsElasticBlockStore",
        ),
        (
            json!({"name": "v", "csi": {"driver": "x"}}),
            "spec.volumes[0].csi",
        ),
        (
            json!({"name": "v", "projected": {"sources": [{"podCertificate": {}}]}}),
            "spec.volumes[0].projected.sources[0].podCertificate",
        ),
    ] {
        let v = run(&PodRule::default(), &set("volumes", json!([volume]))).unwrap_err();
        assert_eq!((v.rule, v.field.as_str()), ("pods.volumes", field));
    }
    let v = run(
        &PodRule::default(),
        &set(
            "volumes",
            json!([{"name": "v", "nfs": {"server": "s", "path": "/"}}]),
        ),
    )
    .unwrap_err();
    assert_eq!(
        v.grant.as_deref(),
        Some("kubernetes.objects.pods[0].volumes: [\"nfs\"]")
    );
    let nfs = PodRule {
        volumes: vec!["nfs".into()],
        ..PodRule::default()
    };
    run(
        &nfs,
        &set(
            "volumes",
            json!([{"name": "v", "nfs": {"server": "s", "path": "/"}}]),
        ),
    )
    .expect("granted");
    run(
        &PodRule::default(),
        &set(
            "volumes",
            json!([{"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "c"}},
                       {"name": "c", "projected": {"sources": [{"secret": {"name": "s"}}]}},
                       {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
        ),
    )
    .expect("restricted's types");
    // A claim template is a claim: no class granted by default.
    assert_eq!(
        rule_of(set(
            "volumes",
            json!([{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": ""}}}}])
        )),
        "claims.storage-class"
    );
    let mut never = pod();
    never["initContainers"] = json!([{"name": "i", "image": "i", "imagePullPolicy": "Never"}]);
    let v = run(&PodRule::default(), &never).unwrap_err();
    assert_eq!(
        (v.rule, v.field.as_str()),
        (
            "pods.image-pull-policy",
            "spec.initContainers[0].imagePullPolicy"
        )
    );
    never["initContainers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    run(&PodRule::default(), &never).expect("IfNotPresent");
}

#[test]
fn the_grants_lists_allow_exactly_what_they_name() {
    let rule = PodRule {
        priority_classes: vec!["pando-apps".into()],
        runtime_classes: vec!["gvisor".into()],
        service_accounts: vec!["runner".into()],
        tolerations: vec![Toleration {
            key: Some("pando.dev/pool".into()),
            operator: Some("Equal".into()),
            value: Some("apps".into()),
            effect: Some("NoSchedule".into()),
        }],
        service_account_token: true,
        ..PodRule::default()
    };
    let mut p = pod();
    p["priorityClassName"] = json!("pando-apps");
    p["runtimeClassName"] = json!("gvisor");
    p["serviceAccountName"] = json!("runner");
    p["automountServiceAccountToken"] = json!(true);
    p["tolerations"] = json!([{"key": "pando.dev/pool", "value": "apps", "effect": "NoSchedule"}]);
    run(&rule, &p).expect("granted");
    p["tolerations"] =
        json!([{"key": "pando.dev/pool", "operator": "Exists", "effect": "NoSchedule"}]);
    let v = run(&rule, &p).unwrap_err();
    assert_eq!(v.rule, "pods.tolerations");
    assert_eq!(v.field, "spec.tolerations[0]");
    p["tolerations"] = Value::Null;
    p["runtimeClassName"] = json!("runc");
    let v = run(&rule, &p).unwrap_err();
    assert_eq!(
        v.grant.as_deref(),
        Some("kubernetes.objects.pods[0].runtime_classes: [\"runc\"]")
    );
}
