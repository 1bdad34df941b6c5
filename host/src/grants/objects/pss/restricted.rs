//! `restricted`, the profile of hardened pods.

use serde_json::Value;

use super::super::Violation;
use super::super::fields::{get, integer, list, opt_flag, shown};
use super::{Container, PodView, RESTRICTED_VOLUMES, Rule};

/// `restricted`, on top of `baseline`: volume types; non-root, no
/// escalation, a seccomp profile and capabilities dropped in every
/// container (each may take non-root and seccomp from the pod).
pub(super) fn check(
    r: &Rule,
    pod: &PodView<'_>,
    containers: &[Container<'_>],
) -> Result<(), Violation> {
    volumes(r, pod)?;
    let at = pod.spec_at;
    let psc = get(pod.spec, "securityContext").unwrap_or(&Value::Null);
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
    let pod_ctx = PodContext {
        non_root: pod_non_root,
        seccomp: pod_seccomp,
        at: &psc_at,
    };
    for c in containers {
        container(r, c, &pod_ctx)?;
    }
    Ok(())
}

/// What a container may take from the pod's security context.
struct PodContext<'a> {
    non_root: Option<bool>,
    seccomp: bool,
    at: &'a str,
}

fn volumes(r: &Rule, pod: &PodView<'_>) -> Result<(), Violation> {
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
    Ok(())
}

fn container(r: &Rule, c: &Container<'_>, pod: &PodContext<'_>) -> Result<(), Violation> {
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
        None if pod.non_root != Some(true) => {
            return Err(r.fail(
                format!("{sc_at}.runAsNonRoot"),
                format!("is not set, and neither is {}.runAsNonRoot", pod.at),
            ));
        }
        _ => {}
    }
    if integer(sc, "runAsUser").map_err(|p| r.fail(format!("{sc_at}.runAsUser"), p))? == Some(0) {
        return Err(r.fail(format!("{sc_at}.runAsUser"), "is 0 (root)"));
    }
    let seccomp = get(sc, "seccompProfile")
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str);
    if seccomp.is_none() && !pod.seccomp {
        return Err(r.fail(
            format!("{sc_at}.seccompProfile.type"),
            format!(
                "is not set, and neither is {}.seccompProfile.type (RuntimeDefault or Localhost)",
                pod.at
            ),
        ));
    }
    let caps = get(sc, "capabilities").unwrap_or(&Value::Null);
    let drop = list(caps, "drop").map_err(|p| r.fail(format!("{sc_at}.capabilities.drop"), p))?;
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
                    super::super::fields::shown_value(cap)
                ),
            ));
        }
    }
    Ok(())
}
