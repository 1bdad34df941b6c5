//! `baseline`, the profile every pod meets.

use serde_json::Value;

use super::super::Violation;
use super::super::fields::{flag, get, integer, list, object, shown, string};
use super::{BASELINE_CAPABILITIES, Container, PodView, Rule, SAFE_SYSCTLS, SELINUX_TYPES};

/// `baseline`: host namespaces, sysctls and hostPath volumes in the pod;
/// privilege, capabilities, procMount and host ports in each container;
/// the AppArmor and seccomp annotations.
pub(super) fn check(
    r: &Rule,
    pod: &PodView<'_>,
    containers: &[Container<'_>],
) -> Result<(), Violation> {
    pod_level(r, pod)?;
    for c in containers {
        container(r, c)?;
    }
    annotations(r, pod)
}

fn pod_level(r: &Rule, pod: &PodView<'_>) -> Result<(), Violation> {
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
    Ok(())
}

fn container(r: &Rule, c: &Container<'_>) -> Result<(), Violation> {
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
                            super::super::fields::shown_value(cap),
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
    probe_hosts(r, c)?;
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
    Ok(())
}

/// Probes and lifecycle handlers reach the pod, never another host: the
/// kubelet would connect to it from the node's own network (baseline's
/// "Host Probes / Lifecycle Hooks", Kubernetes 1.34).
fn probe_hosts(r: &Rule, c: &Container<'_>) -> Result<(), Violation> {
    let mut handlers: Vec<(String, &Value)> = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = get(c.c, probe) {
            handlers.push((format!("{}.{probe}", c.at), p));
        }
    }
    if let Some(lifecycle) = get(c.c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = get(lifecycle, hook) {
                handlers.push((format!("{}.lifecycle.{hook}", c.at), h));
            }
        }
    }
    for (at, handler) in handlers {
        for action in ["httpGet", "tcpSocket"] {
            let Some(a) = get(handler, action) else {
                continue;
            };
            let field = format!("{at}.{action}.host");
            let host = string(a, "host").map_err(|p| r.fail(field.clone(), p))?;
            if let Some(h) = host.filter(|h| !h.is_empty()) {
                return Err(r.fail(
                    field,
                    format!(
                        "is set (`{}`); a probe or hook reaches its own pod",
                        shown(h)
                    ),
                ));
            }
        }
    }
    Ok(())
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
