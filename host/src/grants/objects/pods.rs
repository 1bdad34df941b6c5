//! Pods and pod templates: the Pod Security Standards profile
//! ([`super::pss`]), and the host's own rules on placement and identity —
//! no `nodeName`; priority classes, tolerations, service accounts and
//! runtime classes only from the grants' lists; no service-account token
//! unless granted — on volumes (`restricted`'s types in every profile,
//! plus the grants'; claim templates as claims) and on images (never
//! `imagePullPolicy: Never`).

use serde_json::Value;

use super::Violation;
use super::fields::{get, list, shown, string};
use super::pss::{self, PodView};
use super::schema::{ClaimRule, PodRule, Toleration};

/// The volume types every pod may use: `restricted`'s, less `csi` (an
/// inline CSI volume is whatever its driver mounts with the attributes the
/// pod gives it). Others only as the grants add them.
const VOLUME_TYPES: [&str; 7] = [
    "configMap",
    "secret",
    "downwardAPI",
    "emptyDir",
    "persistentVolumeClaim",
    "projected",
    "ephemeral",
];

/// The sources of a projected volume. `serviceAccountToken` is the token
/// rule's.
const PROJECTED_SOURCES: [&str; 5] = [
    "secret",
    "configMap",
    "downwardAPI",
    "clusterTrustBundle",
    "serviceAccountToken",
];

/// The tolerations the API server's `DefaultTolerationSeconds` admission
/// adds to every pod: allowed whatever the grants say, for at most
/// [`DEFAULT_TOLERATION_SECONDS`] (what it writes), never for good: a pod
/// kept on a dead node is not the adapter's to decide.
const DEFAULT_TOLERATION_KEYS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// The longest a default toleration may last (the admission's default;
/// deploy/kubernetes/admission-policy.yaml says the same).
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Checks a pod (or pod template) against `rule`, found at `rule_at` in the
/// grants (`kubernetes.objects.pods[0]`, or `the default pod rule`).
pub(crate) fn check(
    rule: &PodRule,
    rule_at: &str,
    claims: &ClaimRule,
    pod: &PodView<'_>,
) -> Result<(), Violation> {
    pss::check(rule.profile, pod)?;
    let c = PodCheck {
        rule,
        rule_at,
        spec: pod.spec,
        at: pod.spec_at,
    };
    c.placement()?;
    c.service_accounts()?;
    c.tolerations()?;
    if !rule.service_account_token {
        c.no_token()?;
    }
    c.volumes()?;
    super::claims::check_pod_templates(claims, pod.spec, pod.spec_at)?;
    c.pull_policy()
}

/// One pod spec against one rule.
struct PodCheck<'a> {
    rule: &'a PodRule,
    rule_at: &'a str,
    spec: &'a Value,
    at: &'a str,
}

fn fail(
    id: &'static str,
    statement: &str,
    field: String,
    problem: String,
    grant: Option<String>,
) -> Violation {
    Violation {
        rule: id,
        statement: statement.into(),
        field,
        problem,
        grant,
    }
}

impl PodCheck<'_> {
    fn text(&self, key: &str) -> Result<Option<&str>, Violation> {
        string(self.spec, key).map_err(|p| {
            fail(
                "pods.malformed",
                "pod fields have their types",
                format!("{}.{key}", self.at),
                p,
                None,
            )
        })
    }

    /// The node, priority class and runtime class.
    fn placement(&self) -> Result<(), Violation> {
        let (at, rule, rule_at) = (self.at, self.rule, self.rule_at);
        if let Some(node) = self.text("nodeName")?.filter(|n| !n.is_empty()) {
            return Err(fail(
                "pods.node-name",
                "pods are placed by the scheduler",
                format!("{at}.nodeName"),
                format!(
                    "is set (`{}`); select nodes with nodeSelector or affinity",
                    shown(node)
                ),
                None,
            ));
        }
        if let Some(class) = self.text("priorityClassName")?.filter(|c| !c.is_empty())
            && !rule.priority_classes.iter().any(|c| c == class)
        {
            return Err(fail(
                "pods.priority-classes",
                "pods use only the priority classes the grants list",
                format!("{at}.priorityClassName"),
                format!("is `{}`", shown(class)),
                Some(format!(
                    "{rule_at}.priority_classes: [\"{}\"]",
                    shown(class)
                )),
            ));
        }
        if let Some(class) = self.text("runtimeClassName")?.filter(|c| !c.is_empty())
            && !rule.runtime_classes.iter().any(|c| c == class)
        {
            return Err(fail(
                "pods.runtime-classes",
                "pods use only the runtime classes the grants list",
                format!("{at}.runtimeClassName"),
                format!("is `{}`", shown(class)),
                Some(format!("{rule_at}.runtime_classes: [\"{}\"]", shown(class))),
            ));
        }
        Ok(())
    }

    fn service_accounts(&self) -> Result<(), Violation> {
        for key in ["serviceAccountName", "serviceAccount"] {
            if let Some(sa) = self.text(key)?.filter(|s| !s.is_empty() && *s != "default")
                && !self.rule.service_accounts.iter().any(|s| s == sa)
            {
                return Err(fail(
                    "pods.service-accounts",
                    "pods run only as the service accounts the grants list",
                    format!("{}.{key}", self.at),
                    format!("is `{}`", shown(sa)),
                    Some(format!(
                        "{}.service_accounts: [\"{}\"]",
                        self.rule_at,
                        shown(sa)
                    )),
                ));
            }
        }
        Ok(())
    }

    fn tolerations(&self) -> Result<(), Violation> {
        let refused = |field: String, problem: String, grant: Option<String>| {
            fail(
                "pods.tolerations",
                "pods tolerate only the taints the grants list",
                field,
                problem,
                grant,
            )
        };
        let tolerations = list(self.spec, "tolerations")
            .map_err(|p| refused(format!("{}.tolerations", self.at), p, None))?;
        for (i, t) in tolerations.iter().enumerate() {
            if !toleration_allowed(self.rule, t) {
                return Err(refused(
                    format!("{}.tolerations[{i}]", self.at),
                    format!("is {}", super::fields::shown_value(t)),
                    Some(format!("{}.tolerations", self.rule_at)),
                ));
            }
        }
        Ok(())
    }

    /// No service-account token, neither automounted nor projected.
    fn no_token(&self) -> Result<(), Violation> {
        let at = self.at;
        let token = |field: String, problem: &str| {
            fail(
                "pods.service-account-token",
                "pods mount no service-account token",
                field,
                problem.into(),
                Some(format!("{}.service_account_token: true", self.rule_at)),
            )
        };
        let automount = format!("{at}.automountServiceAccountToken");
        match get(self.spec, "automountServiceAccountToken") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => return Err(token(automount, "is true")),
            None => {
                return Err(token(
                    automount,
                    "is not set to false (unset mounts the token)",
                ));
            }
            Some(_) => return Err(token(automount, "is not a boolean")),
        }
        let volumes = list(self.spec, "volumes").map_err(|p| token(format!("{at}.volumes"), &p))?;
        for (i, v) in volumes.iter().enumerate() {
            let Some(projected) = get(v, "projected") else {
                continue;
            };
            let sources = list(projected, "sources")
                .map_err(|p| token(format!("{at}.volumes[{i}].projected.sources"), &p))?;
            for (j, s) in sources.iter().enumerate() {
                if get(s, "serviceAccountToken").is_some() {
                    return Err(token(
                        format!("{at}.volumes[{i}].projected.sources[{j}].serviceAccountToken"),
                        "is set",
                    ));
                }
            }
        }
        Ok(())
    }
}

impl PodCheck<'_> {
    /// Only the volume types every pod may use, and the grants'.
    fn volumes(&self) -> Result<(), Violation> {
        let (at, rule_at) = (self.at, self.rule_at);
        let refused = |field: String, problem: String, grant: Option<String>| {
            fail(
                "pods.volumes",
                "pods mount only restricted's volume types and the ones the grants add",
                field,
                problem,
                grant,
            )
        };
        let volumes =
            list(self.spec, "volumes").map_err(|p| refused(format!("{at}.volumes"), p, None))?;
        for (i, v) in volumes.iter().enumerate() {
            let Some(m) = v.as_object() else {
                return Err(refused(
                    format!("{at}.volumes[{i}]"),
                    "is not an object".into(),
                    None,
                ));
            };
            for (k, val) in m {
                let allowed =
                    VOLUME_TYPES.contains(&k.as_str()) || self.rule.volumes.iter().any(|t| t == k);
                if k != "name" && !val.is_null() && !allowed {
                    return Err(refused(
                        format!("{at}.volumes[{i}].{}", shown(k)),
                        format!(
                            "is a volume type no rule allows (only {}, and the grants' `volumes`)",
                            VOLUME_TYPES.join(", ")
                        ),
                        Some(format!("{rule_at}.volumes: [\"{}\"]", shown(k))),
                    ));
                }
            }
            let Some(projected) = get(v, "projected") else {
                continue;
            };
            let sources = list(projected, "sources")
                .map_err(|p| refused(format!("{at}.volumes[{i}].projected.sources"), p, None))?;
            for (j, source) in sources.iter().enumerate() {
                let Some(m) = source.as_object() else {
                    continue;
                };
                if let Some((k, _)) = m
                    .iter()
                    .find(|(k, v)| !v.is_null() && !PROJECTED_SOURCES.contains(&k.as_str()))
                {
                    return Err(refused(
                        format!("{at}.volumes[{i}].projected.sources[{j}].{}", shown(k)),
                        format!(
                            "is a projected source no rule allows (only {})",
                            PROJECTED_SOURCES.join(", ")
                        ),
                        None,
                    ));
                }
            }
        }
        Ok(())
    }

    /// No container runs only what the node already holds: an image
    /// another pod pulled with credentials this one lacks.
    fn pull_policy(&self) -> Result<(), Violation> {
        for key in pss::CONTAINER_LISTS {
            let containers = list(self.spec, key).unwrap_or(&[]);
            for (i, c) in containers.iter().enumerate() {
                let field = format!("{}.{key}[{i}].imagePullPolicy", self.at);
                let policy = string(c, "imagePullPolicy").map_err(|p| {
                    fail(
                        "pods.malformed",
                        "pod fields have their types",
                        field.clone(),
                        p,
                        None,
                    )
                })?;
                if policy == Some("Never") {
                    return Err(fail(
                        "pods.image-pull-policy",
                        "pods pull their images (imagePullPolicy Always or IfNotPresent)",
                        field,
                        "is `Never`: the node's copy would run without the pod's pull credentials \
                         being checked"
                            .into(),
                        None,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether toleration `t` is one the grants list (or the API server's own).
fn toleration_allowed(rule: &PodRule, t: &Value) -> bool {
    let field = |k: &str| t.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(obj) = t.as_object() else {
        return false;
    };
    // Unknown fields would be dropped by the API server; anything else of
    // the wrong type is refused.
    if obj.iter().any(|(k, v)| {
        !v.is_null()
            && !matches!(
                k.as_str(),
                "key" | "operator" | "value" | "effect" | "tolerationSeconds"
            )
    }) {
        return false;
    }
    let (key, operator, value, effect) = (
        field("key"),
        field("operator").unwrap_or("Equal"),
        field("value"),
        field("effect"),
    );
    if key.is_some_and(|k| DEFAULT_TOLERATION_KEYS.contains(&k))
        && operator == "Exists"
        && effect == Some("NoExecute")
        && value.is_none()
        && t.get("tolerationSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|s| s <= DEFAULT_TOLERATION_SECONDS)
    {
        return true;
    }
    rule.tolerations.iter().any(|g: &Toleration| {
        g.key.as_deref().filter(|s| !s.is_empty()) == key
            && g.operator.as_deref().unwrap_or("Equal") == operator
            && g.value.as_deref().filter(|s| !s.is_empty()) == value
            && g.effect.as_deref().filter(|s| !s.is_empty()) == effect
    })
}

#[cfg(test)]
mod tests;
