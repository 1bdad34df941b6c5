//! Namespaces: labels only from the grants' allowlist, and the Pod
//! Security labels (`pod-security.kubernetes.io/*`) the host's alone: it
//! sets `enforce` to the pod profile on every namespace the adapter
//! creates, and refuses any attempt of the adapter's to set or change
//! them. The scheduler annotations (`scheduler.alpha.kubernetes.io/*`,
//! read by the PodNodeSelector and PodTolerationRestriction admission
//! plugins) would change pods after the host checked them: refused too.

use serde_json::{Map, Value};

use super::Violation;
use super::fields::{object, shown};
use super::schema::{NamespaceRule, Profile};
use crate::grants::check::pattern_matches;

/// The Pod Security labels' prefix.
pub const POD_SECURITY_PREFIX: &str = "pod-security.kubernetes.io/";
/// The label the host sets on every namespace the adapter creates.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The label the API server sets on every namespace.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Annotations admission plugins read to change pods.
const SCHEDULER_PREFIX: &str = "scheduler.alpha.kubernetes.io/";

fn labels(ns: &Value) -> Result<Option<&Map<String, Value>>, Violation> {
    object(ns.get("metadata").unwrap_or(&Value::Null), "labels").map_err(|p| Violation {
        rule: "namespaces.labels",
        statement: "namespaces carry only the labels the grants list".into(),
        field: "metadata.labels".into(),
        problem: p,
        grant: None,
    })
}

fn pod_security(ns: &Value) -> Result<Vec<(String, Value)>, Violation> {
    Ok(labels(ns)?
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(POD_SECURITY_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect())
}

fn pod_security_violation(field: String, problem: String) -> Violation {
    Violation {
        rule: "namespaces.pod-security",
        statement: "the Pod Security labels are the host's to set".into(),
        field,
        problem,
        grant: None,
    }
}

/// Checks the labels and annotations an adapter's namespace carries,
/// except the Pod Security labels (see [`check_create`], [`check_change`]).
fn check_common(rule: &NamespaceRule, ns: &Value) -> Result<(), Violation> {
    for key in labels(ns)?.into_iter().flatten().map(|(k, _)| k) {
        if key.starts_with(POD_SECURITY_PREFIX) || key == NAME_LABEL {
            continue;
        }
        if !rule.labels.iter().any(|p| pattern_matches(p, key)) {
            return Err(Violation {
                rule: "namespaces.labels",
                statement: "namespaces carry only the labels the grants list".into(),
                field: format!("metadata.labels[{}]", shown(key)),
                problem: "is not in the allowlist".into(),
                grant: Some(format!(
                    "kubernetes.objects.namespaces.labels: [\"{}\"]",
                    shown(key)
                )),
            });
        }
    }
    let meta = ns.get("metadata").unwrap_or(&Value::Null);
    let annotations = object(meta, "annotations").map_err(|p| Violation {
        rule: "namespaces.annotations",
        statement: "namespaces carry no scheduler annotations".into(),
        field: "metadata.annotations".into(),
        problem: p,
        grant: None,
    })?;
    if let Some(key) = annotations
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| k.starts_with(SCHEDULER_PREFIX))
    {
        return Err(Violation {
            rule: "namespaces.annotations",
            statement: "namespaces carry no scheduler annotations".into(),
            field: format!("metadata.annotations[{}]", shown(key)),
            problem: "is set (it would change the namespace's pods after the host checked them)"
                .into(),
            grant: None,
        });
    }
    Ok(())
}

/// Checks a namespace the adapter creates: no Pod Security label of its
/// own.
pub(crate) fn check_create(rule: &NamespaceRule, ns: &Value) -> Result<(), Violation> {
    check_common(rule, ns)?;
    if let Some((k, v)) = pod_security(ns)?.into_iter().next() {
        return Err(pod_security_violation(
            format!("metadata.labels[{}]", shown(&k)),
            format!("is set ({}) by the adapter", super::fields::shown_value(&v)),
        ));
    }
    Ok(())
}

/// Sets the Pod Security `enforce` label to `profile` on a namespace being
/// created (already checked by [`check_create`]).
pub(crate) fn set_enforce(ns: &mut Value, profile: Profile) {
    let Some(obj) = ns.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        return;
    }
    let labels = &mut meta["labels"];
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    labels[ENFORCE_LABEL] = Value::String(profile.as_str().into());
}

/// Checks a namespace update or patch: the result's labels as for a
/// create, and its Pod Security labels exactly the old ones.
pub(crate) fn check_change(
    rule: &NamespaceRule,
    old: &Value,
    new: &Value,
) -> Result<(), Violation> {
    check_common(rule, new)?;
    let (before, after) = (pod_security(old)?, pod_security(new)?);
    for (k, v) in &after {
        match before.iter().find(|(b, _)| b == k) {
            Some((_, was)) if was == v => {}
            Some((_, was)) => {
                return Err(pod_security_violation(
                    format!("metadata.labels[{}]", shown(k)),
                    format!(
                        "would change from {} to {}",
                        super::fields::shown_value(was),
                        super::fields::shown_value(v)
                    ),
                ));
            }
            None => {
                return Err(pod_security_violation(
                    format!("metadata.labels[{}]", shown(k)),
                    format!("would be set ({})", super::fields::shown_value(v)),
                ));
            }
        }
    }
    if let Some((k, _)) = before
        .iter()
        .find(|(k, _)| !after.iter().any(|(a, _)| a == k))
    {
        return Err(pod_security_violation(
            format!("metadata.labels[{}]", shown(k)),
            "would be removed".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule() -> NamespaceRule {
        NamespaceRule {
            labels: vec!["app.kubernetes.io/managed-by".into(), "pando.dev/*".into()],
        }
    }

    fn ns(labels: Value) -> Value {
        json!({"metadata": {"name": "pando-x", "labels": labels}})
    }

    #[test]
    fn labels_come_from_the_allowlist() {
        check_create(
            &rule(),
            &ns(
                json!({"app.kubernetes.io/managed-by": "pando", "pando.dev/app": "x",
                                          "kubernetes.io/metadata.name": "pando-x"}),
            ),
        )
        .expect("allowed");
        let v = check_create(&rule(), &ns(json!({"team": "evil"}))).unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("namespaces.labels", "metadata.labels[team]")
        );
        // Default: no labels at all.
        assert!(
            check_create(
                &NamespaceRule::default(),
                &ns(json!({"pando.dev/app": "x"}))
            )
            .is_err()
        );
        check_create(
            &NamespaceRule::default(),
            &json!({"metadata": {"name": "pando-x"}}),
        )
        .expect("no labels");
    }

    #[test]
    fn the_pod_security_labels_are_the_hosts() {
        for key in [
            ENFORCE_LABEL,
            "pod-security.kubernetes.io/warn",
            "pod-security.kubernetes.io/enforce-version",
        ] {
            let v = check_create(&rule(), &ns(json!({key: "privileged"}))).unwrap_err();
            assert_eq!(v.rule, "namespaces.pod-security", "{key}");
        }
        // Even when the allowlist would match them.
        let wide = NamespaceRule {
            labels: vec!["*".into()],
        };
        assert!(check_create(&wide, &ns(json!({ENFORCE_LABEL: "privileged"}))).is_err());

        let mut made = ns(json!({"pando.dev/app": "x"}));
        set_enforce(&mut made, Profile::Baseline);
        assert_eq!(made["metadata"]["labels"][ENFORCE_LABEL], "baseline");
        let mut bare = json!({"metadata": {"name": "pando-y"}});
        set_enforce(&mut bare, Profile::Restricted);
        assert_eq!(bare["metadata"]["labels"][ENFORCE_LABEL], "restricted");

        let old = ns(json!({ENFORCE_LABEL: "baseline", "pando.dev/app": "x"}));
        check_change(
            &rule(),
            &old,
            &ns(json!({ENFORCE_LABEL: "baseline", "pando.dev/app": "y"})),
        )
        .expect("kept");
        for new in [
            ns(json!({ENFORCE_LABEL: "privileged"})),
            ns(json!({})),
            ns(
                json!({ENFORCE_LABEL: "baseline", "pod-security.kubernetes.io/enforce-version": "v1.0"}),
            ),
        ] {
            let v = check_change(&rule(), &old, &new).expect_err("changed");
            assert_eq!(v.rule, "namespaces.pod-security", "{new}");
        }
    }

    #[test]
    fn scheduler_annotations_are_refused() {
        let v = check_create(
            &rule(),
            &json!({"metadata": {"name": "pando-x", "annotations": {
                "scheduler.alpha.kubernetes.io/defaultTolerations": "[{\"operator\":\"Exists\"}]"}}}),
        )
        .unwrap_err();
        assert_eq!(v.rule, "namespaces.annotations");
    }
}
