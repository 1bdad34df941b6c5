use super::*;
use serde_json::json;

fn run(profile: Profile, meta: Value, spec: Value) -> Result<(), Violation> {
    check(
        profile,
        &PodView {
            meta: &meta,
            spec: &spec,
            meta_at: "metadata",
            spec_at: "spec",
        },
    )
}

fn base(spec: Value) -> Result<(), Violation> {
    run(Profile::Baseline, Value::Null, spec)
}

fn plain() -> Value {
    json!({"containers": [{"name": "c", "image": "i"}]})
}

/// A pod that meets restricted.
fn hardened() -> Value {
    json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
        "volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "persistentVolumeClaim": {"claimName": "x"}}],
    })
}

fn field_of(r: Result<(), Violation>) -> String {
    let v = r.expect_err("a violation");
    assert!(v.rule.starts_with("pods."), "{v:?}");
    v.field
}

/// `spec` with `patch` merged in at `path` (a JSON pointer to an object).
fn with(mut spec: Value, pointer: &str, key: &str, value: Value) -> Value {
    spec.pointer_mut(pointer).expect(pointer)[key] = value;
    spec
}

#[test]
fn a_plain_pod_meets_baseline_and_a_hardened_one_restricted() {
    base(plain()).expect("plain meets baseline");
    run(Profile::Restricted, Value::Null, hardened()).expect("hardened meets restricted");
    assert!(run(Profile::Restricted, Value::Null, plain()).is_err());
}

#[test]
fn baseline_fields() {
    let cases: Vec<(Value, &str)> = vec![
        (
            with(plain(), "", "hostNetwork", json!(true)),
            "spec.hostNetwork",
        ),
        (with(plain(), "", "hostPID", json!(true)), "spec.hostPID"),
        (with(plain(), "", "hostIPC", json!(true)), "spec.hostIPC"),
        (with(plain(), "", "hostPID", json!("yes")), "spec.hostPID"),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"privileged": true}),
            ),
            "spec.containers[0].securityContext.privileged",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"capabilities": {"add": ["SYS_ADMIN"]}}),
            ),
            "spec.containers[0].securityContext.capabilities.add[0]",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"capabilities": {"add": ["CAP_SYS_ADMIN"]}}),
            ),
            "spec.containers[0].securityContext.capabilities.add[0]",
        ),
        (
            with(
                plain(),
                "",
                "volumes",
                json!([{"name": "root", "hostPath": {"path": "/"}}]),
            ),
            "spec.volumes[0].hostPath",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "ports",
                json!([{"containerPort": 80, "hostPort": 80}]),
            ),
            "spec.containers[0].ports[0].hostPort",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"appArmorProfile": {"type": "Unconfined"}}),
            ),
            "spec.containers[0].securityContext.appArmorProfile.type",
        ),
        (
            with(
                plain(),
                "",
                "securityContext",
                json!({"appArmorProfile": {"type": "Unconfined"}}),
            ),
            "spec.securityContext.appArmorProfile.type",
        ),
        (
            with(
                plain(),
                "",
                "securityContext",
                json!({"seLinuxOptions": {"type": "spc_t"}}),
            ),
            "spec.securityContext.seLinuxOptions.type",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"seLinuxOptions": {"user": "system_u"}}),
            ),
            "spec.containers[0].securityContext.seLinuxOptions.user",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"seLinuxOptions": {"role": "sysadm_r"}}),
            ),
            "spec.containers[0].securityContext.seLinuxOptions.role",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"procMount": "Unmasked"}),
            ),
            "spec.containers[0].securityContext.procMount",
        ),
        (
            with(
                plain(),
                "",
                "securityContext",
                json!({"seccompProfile": {"type": "Unconfined"}}),
            ),
            "spec.securityContext.seccompProfile.type",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"seccompProfile": {"type": "Unconfined"}}),
            ),
            "spec.containers[0].securityContext.seccompProfile.type",
        ),
        (
            with(
                plain(),
                "",
                "securityContext",
                json!({"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}),
            ),
            "spec.securityContext.sysctls[0].name",
        ),
        (
            with(
                plain(),
                "",
                "securityContext",
                json!({"windowsOptions": {"hostProcess": true}}),
            ),
            "spec.securityContext.windowsOptions.hostProcess",
        ),
        (
            with(
                plain(),
                "/containers/0",
                "securityContext",
                json!({"windowsOptions": {"hostProcess": true}}),
            ),
            "spec.containers[0].securityContext.windowsOptions.hostProcess",
        ),
        (
            with(
                plain(),
                "",
                "initContainers",
                json!([{"name": "i", "securityContext": {"privileged": true}}]),
            ),
            "spec.initContainers[0].securityContext.privileged",
        ),
        (
            with(
                plain(),
                "",
                "ephemeralContainers",
                json!([{"name": "e", "securityContext": {"privileged": true}}]),
            ),
            "spec.ephemeralContainers[0].securityContext.privileged",
        ),
    ];
    for (spec, field) in cases {
        assert_eq!(field_of(base(spec.clone())), field, "{spec}");
    }
    // What baseline allows.
    base(with(plain(), "/containers/0", "securityContext", json!({
        "privileged": false, "capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]},
        "procMount": "Default", "seccompProfile": {"type": "RuntimeDefault"},
        "appArmorProfile": {"type": "Localhost"}, "seLinuxOptions": {"type": "container_t", "level": "s0:c1"}})))
    .expect("allowed values");
    base(with(
        plain(),
        "",
        "securityContext",
        json!({"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]}),
    ))
    .expect("a safe sysctl");
    base(with(
        plain(),
        "/containers/0",
        "ports",
        json!([{"containerPort": 80, "hostPort": 0}]),
    ))
    .expect("hostPort 0");
}

#[test]
fn baseline_annotations() {
    for (k, v) in [
        (
            "container.apparmor.security.beta.kubernetes.io/c",
            "unconfined",
        ),
        ("seccomp.security.alpha.kubernetes.io/pod", "unconfined"),
        (
            "container.seccomp.security.alpha.kubernetes.io/c",
            "unconfined",
        ),
    ] {
        let meta = json!({"annotations": {k: v}});
        let f = field_of(run(Profile::Baseline, meta, plain()));
        assert!(f.starts_with("metadata.annotations["), "{f}");
    }
    run(Profile::Baseline, json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}}), plain())
        .expect("runtime/default");
}

#[test]
fn restricted_fields() {
    let cases: Vec<(Value, &str)> = vec![
        (
            with(
                hardened(),
                "",
                "volumes",
                json!([{"name": "n", "nfs": {"server": "s", "path": "/"}}]),
            ),
            "spec.volumes[0].nfs",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext",
                "allowPrivilegeEscalation",
                json!(true),
            ),
            "spec.containers[0].securityContext.allowPrivilegeEscalation",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext",
                "allowPrivilegeEscalation",
                Value::Null,
            ),
            "spec.containers[0].securityContext.allowPrivilegeEscalation",
        ),
        (
            with(hardened(), "/securityContext", "runAsNonRoot", json!(false)),
            "spec.securityContext.runAsNonRoot",
        ),
        (
            with(hardened(), "/securityContext", "runAsNonRoot", Value::Null),
            "spec.containers[0].securityContext.runAsNonRoot",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext",
                "runAsNonRoot",
                json!(false),
            ),
            "spec.containers[0].securityContext.runAsNonRoot",
        ),
        (
            with(hardened(), "/securityContext", "runAsUser", json!(0)),
            "spec.securityContext.runAsUser",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext",
                "runAsUser",
                json!(0),
            ),
            "spec.containers[0].securityContext.runAsUser",
        ),
        (
            with(
                hardened(),
                "/securityContext",
                "seccompProfile",
                Value::Null,
            ),
            "spec.containers[0].securityContext.seccompProfile.type",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext/capabilities",
                "drop",
                json!(["NET_RAW"]),
            ),
            "spec.containers[0].securityContext.capabilities.drop",
        ),
        (
            with(
                hardened(),
                "/containers/0/securityContext/capabilities",
                "add",
                json!(["CHOWN"]),
            ),
            "spec.containers[0].securityContext.capabilities.add[0]",
        ),
        (
            with(hardened(), "", "initContainers", json!([{"name": "i"}])),
            "spec.initContainers[0].securityContext.allowPrivilegeEscalation",
        ),
        (
            with(
                hardened(),
                "",
                "ephemeralContainers",
                json!([{"name": "e"}]),
            ),
            "spec.ephemeralContainers[0].securityContext.allowPrivilegeEscalation",
        ),
    ];
    for (spec, field) in cases {
        let v = run(Profile::Restricted, Value::Null, spec.clone()).expect_err("violation");
        assert_eq!(v.rule, "pods.restricted", "{spec}");
        assert_eq!(v.field, field, "{spec}");
    }
    // Container-level settings stand in for the pod's.
    let mut spec = hardened();
    spec["securityContext"] = Value::Null;
    spec["containers"][0]["securityContext"]["runAsNonRoot"] = json!(true);
    spec["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Localhost"});
    run(Profile::Restricted, Value::Null, spec).expect("container-level");
    // Restricted includes baseline.
    let v = run(
        Profile::Restricted,
        Value::Null,
        with(hardened(), "", "hostPID", json!(true)),
    )
    .unwrap_err();
    assert_eq!(v.field, "spec.hostPID");
    assert_eq!(v.statement, "pods must meet restricted");
}

#[test]
fn the_message_names_the_profile_and_the_field() {
    let v = base(with(
        plain(),
        "/containers/0",
        "securityContext",
        json!({"privileged": true}),
    ))
    .unwrap_err();
    assert_eq!(
        v.to_string(),
        "pods must meet baseline: spec.containers[0].securityContext.privileged is true"
    );
}

#[test]
fn probes_and_lifecycle_handlers_name_no_host() {
    for (container, field) in [
        (
            json!({"readinessProbe": {"httpGet": {"host": "198.18.0.1", "port": 10250}}}),
            "spec.containers[0].readinessProbe.httpGet.host",
        ),
        (
            json!({"startupProbe": {"tcpSocket": {"host": "etcd", "port": 2379}}}),
            "spec.containers[0].startupProbe.tcpSocket.host",
        ),
        (
            json!({"lifecycle": {"preStop": {"httpGet": {"host": "198.18.0.1", "port": 80}}}}),
            "spec.containers[0].lifecycle.preStop.httpGet.host",
        ),
    ] {
        let mut spec = plain();
        if let (Some(c), Value::Object(extra)) = (spec["containers"][0].as_object_mut(), container)
        {
            c.extend(extra);
        }
        let v = base(spec).expect_err(field);
        assert_eq!((v.rule, v.field.as_str()), ("pods.baseline", field));
    }
    // The pod's own address (no host, or an empty one) is what a probe is for.
    let mut own = plain();
    own["containers"][0]["livenessProbe"] =
        json!({"httpGet": {"host": "", "port": 8080}, "tcpSocket": null});
    own["containers"][0]["readinessProbe"] = json!({"tcpSocket": {"port": "http"}});
    base(own).expect("a probe of the pod itself");
}
