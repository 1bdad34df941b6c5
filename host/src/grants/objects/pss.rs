//! The Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards),
//! `baseline` and `restricted`, over a pod's spec and metadata: every
//! field the standard lists, in containers, init containers and ephemeral
//! containers alike. Windows pods get no exemption (stricter than
//! upstream's `restricted`).

use serde_json::Value;

use super::Violation;
use super::fields::{flag, get, integer, list, object, opt_flag, shown, string};
use super::schema::Profile;

/// A pod's spec and metadata, wherever they sit in the object.
pub(crate) struct PodView<'a> {
    /// The pod's (or template's) metadata; `Null` when absent.
    pub meta: &'a Value,
    /// The pod's (or template's) spec.
    pub spec: &'a Value,
    /// Where the metadata is, for messages (`metadata`,
    /// `spec.template.metadata`).
    pub meta_at: &'a str,
    /// Where the spec is (`spec`, `spec.template.spec`).
    pub spec_at: &'a str,
}

/// The container lists the standard covers.
pub(crate) const CONTAINER_LISTS: [&str; 3] =
    ["containers", "initContainers", "ephemeralContainers"];

/// Capabilities `baseline` allows to add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls `baseline` allows (the "safe" set).
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// SELinux types `baseline` allows.
const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume types `restricted` allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

struct Rule {
    profile: Profile,
}

impl Rule {
    fn fail(&self, field: String, problem: impl Into<String>) -> Violation {
        Violation {
            rule: match self.profile {
                Profile::Baseline => "pods.baseline",
                Profile::Restricted => "pods.restricted",
            },
            statement: format!("pods must meet {}", self.profile.as_str()),
            field,
            problem: problem.into(),
            grant: None,
        }
    }
}

/// One container, with where it is.
struct Container<'a> {
    c: &'a Value,
    at: String,
}

/// Checks `pod` against `profile`: `restricted` includes `baseline`.
pub(crate) fn check(profile: Profile, pod: &PodView<'_>) -> Result<(), Violation> {
    let r = Rule { profile };
    let mut containers = Vec::new();
    for key in CONTAINER_LISTS {
        let items = list(pod.spec, key).map_err(|p| r.fail(format!("{}.{key}", pod.spec_at), p))?;
        for (i, c) in items.iter().enumerate() {
            containers.push(Container {
                c,
                at: format!("{}.{key}[{i}]", pod.spec_at),
            });
        }
    }
    baseline(&r, pod, &containers)?;
    if profile == Profile::Restricted {
        restricted(&r, pod, &containers)?;
    }
    Ok(())
}

fn baseline(r: &Rule, pod: &PodView<'_>, containers: &[Container<'_>]) -> Result<(), Violation> {
    let spec = pod.spec;
    let at = pod.spec_at;
    // Host namespaces.
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        if flag(spec, key).map_err(|p| r.fail(format!("{at}.{key}"), p))? {
            return Err(r.fail(format!("{at}.{key}"), "is true"));
        }
    }
    let psc = get(spec, "securityContext");
    if let Some(psc) = psc {
        let sc_at = format!("{at}.securityContext");
        security_context(r, psc, &sc_at)?;
        for (i, s) in list(psc, "sysctls")
            .map_err(|p| r.fail(format!("{sc_at}.sysctls"), p))?
            .iter()
            .enumerate()
        {
            let field = format!("{sc_at}.sysctls[{i}].name");
            let name = string(s, "name").map_err(|p| r.fail(field.clone(), p))?;
            if !name.is_some_and(|n| SAFE_SYSCTLS.contains(&n)) {
                return Err(r.fail(
                    field,
                    format!(
                        "is `{}`, not one of the safe sysctls ({})",
                        shown(name.unwrap_or("")),
                        SAFE_SYSCTLS.join(", ")
                    ),
                ));
            }
        }
    }
    // HostPath volumes.
    for (i, v) in list(spec, "volumes")
        .map_err(|p| r.fail(format!("{at}.volumes"), p))?
        .iter()
        .enumerate()
    {
        if get(v, "hostPath").is_some() {
            return Err(r.fail(format!("{at}.volumes[{i}].hostPath"), "is set"));
        }
    }
    for c in containers {
        if let Some(sc) = get(c.c, "securityContext") {
            let sc_at = format!("{}.securityContext", c.at);
            if flag(sc, "privileged").map_err(|p| r.fail(format!("{sc_at}.privileged"), p))? {
                return Err(r.fail(format!("{sc_at}.privileged"), "is true"));
            }
            security_context(r, sc, &sc_at)?;
            if let Some(caps) = get(sc, "capabilities") {
                for (j, cap) in list(caps, "add")
                    .map_err(|p| r.fail(format!("{sc_at}.capabilities.add"), p))?
                    .iter()
                    .enumerate()
                {
                    let ok = cap
                        .as_str()
                        .is_some_and(|c| BASELINE_CAPABILITIES.contains(&c));
                    if !ok {
                        return Err(r.fail(
                            format!("{sc_at}.capabilities.add[{j}]"),
                            format!(
                                "is {}, not one of {}",
                                super::fields::shown_value(cap),
                                BASELINE_CAPABILITIES.join(", ")
                            ),
                        ));
                    }
                }
            }
            let proc_mount =
                string(sc, "procMount").map_err(|p| r.fail(format!("{sc_at}.procMount"), p))?;
            if let Some(m) = proc_mount.filter(|m| *m != "Default") {
                return Err(r.fail(
                    format!("{sc_at}.procMount"),
                    format!("is `{}`, not `Default`", shown(m)),
                ));
            }
        }
        for (j, port) in list(c.c, "ports")
            .map_err(|p| r.fail(format!("{}.ports", c.at), p))?
            .iter()
            .enumerate()
        {
            let field = format!("{}.ports[{j}].hostPort", c.at);
            match integer(port, "hostPort").map_err(|p| r.fail(field.clone(), p))? {
                None | Some(0) => {}
                Some(n) => return Err(r.fail(field, format!("is {n}"))),
            }
        }
    }
    annotations(r, pod)
}

/// What pod-level and container-level security contexts share: host
/// process, SELinux, seccomp and AppArmor.
fn security_context(r: &Rule, sc: &Value, at: &str) -> Result<(), Violation> {
    if let Some(w) = get(sc, "windowsOptions")
        && flag(w, "hostProcess")
            .map_err(|p| r.fail(format!("{at}.windowsOptions.hostProcess"), p))?
    {
        return Err(r.fail(format!("{at}.windowsOptions.hostProcess"), "is true"));
    }
    if let Some(se) = get(sc, "seLinuxOptions") {
        let ty = string(se, "type").map_err(|p| r.fail(format!("{at}.seLinuxOptions.type"), p))?;
        if let Some(t) = ty.filter(|t| !SELINUX_TYPES.contains(t)) {
            return Err(r.fail(
                format!("{at}.seLinuxOptions.type"),
                format!("is `{}`, not one of container_t, container_init_t, container_kvm_t, container_engine_t", shown(t)),
            ));
        }
        for key in ["user", "role"] {
            let v = string(se, key).map_err(|p| r.fail(format!("{at}.seLinuxOptions.{key}"), p))?;
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                return Err(r.fail(
                    format!("{at}.seLinuxOptions.{key}"),
                    format!("is set (`{}`)", shown(v)),
                ));
            }
        }
    }
    for key in ["seccompProfile", "appArmorProfile"] {
        if let Some(p) = get(sc, key) {
            let ty = string(p, "type").map_err(|e| r.fail(format!("{at}.{key}.type"), e))?;
            if let Some(t) = ty.filter(|t| !matches!(*t, "RuntimeDefault" | "Localhost")) {
                return Err(r.fail(
                    format!("{at}.{key}.type"),
                    format!("is `{}`, not `RuntimeDefault` or `Localhost`", shown(t)),
                ));
            }
        }
    }
    Ok(())
}

/// The AppArmor and (legacy) seccomp annotations.
fn annotations(r: &Rule, pod: &PodView<'_>) -> Result<(), Violation> {
    let at = format!("{}.annotations", pod.meta_at);
    let Some(ann) = object(pod.meta, "annotations").map_err(|p| r.fail(at.clone(), p))? else {
        return Ok(());
    };
    for (k, v) in ann {
        let field = || format!("{at}[{}]", shown(k));
        let value = v.as_str().unwrap_or("");
        if k.starts_with("container.apparmor.security.beta.kubernetes.io/")
            && !(value == "runtime/default" || value.starts_with("localhost/"))
        {
            return Err(r.fail(
                field(),
                format!(
                    "is `{}`, not `runtime/default` or `localhost/*`",
                    shown(value)
                ),
            ));
        }
        if (k == "seccomp.security.alpha.kubernetes.io/pod"
            || k.starts_with("container.seccomp.security.alpha.kubernetes.io/"))
            && value == "unconfined"
        {
            return Err(r.fail(field(), "is `unconfined`"));
        }
    }
    Ok(())
}

fn restricted(r: &Rule, pod: &PodView<'_>, containers: &[Container<'_>]) -> Result<(), Violation> {
    let spec = pod.spec;
    let at = pod.spec_at;
    for (i, v) in list(spec, "volumes")
        .map_err(|p| r.fail(format!("{at}.volumes"), p))?
        .iter()
        .enumerate()
    {
        let Some(m) = v.as_object() else {
            return Err(r.fail(format!("{at}.volumes[{i}]"), "is not an object"));
        };
        for (k, val) in m {
            if k != "name" && !val.is_null() && !RESTRICTED_VOLUMES.contains(&k.as_str()) {
                return Err(r.fail(
                    format!("{at}.volumes[{i}].{}", shown(k)),
                    format!(
                        "is a volume type restricted does not allow (only {})",
                        RESTRICTED_VOLUMES.join(", ")
                    ),
                ));
            }
        }
    }
    let psc = get(spec, "securityContext").unwrap_or(&Value::Null);
    let psc_at = format!("{at}.securityContext");
    let pod_non_root =
        opt_flag(psc, "runAsNonRoot").map_err(|p| r.fail(format!("{psc_at}.runAsNonRoot"), p))?;
    if pod_non_root == Some(false) {
        return Err(r.fail(format!("{psc_at}.runAsNonRoot"), "is false"));
    }
    if integer(psc, "runAsUser").map_err(|p| r.fail(format!("{psc_at}.runAsUser"), p))? == Some(0) {
        return Err(r.fail(format!("{psc_at}.runAsUser"), "is 0 (root)"));
    }
    let pod_seccomp = get(psc, "seccompProfile")
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "RuntimeDefault" | "Localhost"));
    for c in containers {
        let sc = get(c.c, "securityContext").unwrap_or(&Value::Null);
        let sc_at = format!("{}.securityContext", c.at);
        let escalation = opt_flag(sc, "allowPrivilegeEscalation")
            .map_err(|p| r.fail(format!("{sc_at}.allowPrivilegeEscalation"), p))?;
        if escalation != Some(false) {
            return Err(r.fail(
                format!("{sc_at}.allowPrivilegeEscalation"),
                if escalation.is_none() {
                    "is not set to false"
                } else {
                    "is true"
                },
            ));
        }
        let non_root =
            opt_flag(sc, "runAsNonRoot").map_err(|p| r.fail(format!("{sc_at}.runAsNonRoot"), p))?;
        match non_root {
            Some(false) => return Err(r.fail(format!("{sc_at}.runAsNonRoot"), "is false")),
            None if pod_non_root != Some(true) => {
                return Err(r.fail(
                    format!("{sc_at}.runAsNonRoot"),
                    format!("is not set, and neither is {psc_at}.runAsNonRoot"),
                ));
            }
            _ => {}
        }
        if integer(sc, "runAsUser").map_err(|p| r.fail(format!("{sc_at}.runAsUser"), p))? == Some(0)
        {
            return Err(r.fail(format!("{sc_at}.runAsUser"), "is 0 (root)"));
        }
        let seccomp = get(sc, "seccompProfile")
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        if seccomp.is_none() && !pod_seccomp {
            return Err(r.fail(
                format!("{sc_at}.seccompProfile.type"),
                format!("is not set, and neither is {psc_at}.seccompProfile.type (RuntimeDefault or Localhost)"),
            ));
        }
        let caps = get(sc, "capabilities").unwrap_or(&Value::Null);
        let drop =
            list(caps, "drop").map_err(|p| r.fail(format!("{sc_at}.capabilities.drop"), p))?;
        if !drop.iter().any(|d| d.as_str() == Some("ALL")) {
            return Err(r.fail(format!("{sc_at}.capabilities.drop"), "does not include ALL"));
        }
        for (j, cap) in list(caps, "add")
            .map_err(|p| r.fail(format!("{sc_at}.capabilities.add"), p))?
            .iter()
            .enumerate()
        {
            if cap.as_str() != Some("NET_BIND_SERVICE") {
                return Err(r.fail(
                    format!("{sc_at}.capabilities.add[{j}]"),
                    format!(
                        "is {}, and only NET_BIND_SERVICE may be added",
                        super::fields::shown_value(cap)
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
}
