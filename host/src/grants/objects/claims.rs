//! PersistentVolumeClaims and PersistentVolumes: a claim (or a claim
//! template: a pod's `ephemeral.volumeClaimTemplate`, a StatefulSet's
//! `volumeClaimTemplates`) is bound by the cluster to a new volume of a
//! storage class the grants allow, never to a volume the adapter names
//! (`volumeName`, `selector`) or fills from a source it names
//! (`dataSource`, `dataSourceRef`), and never larger than the grants'
//! ceiling; a volume's patch changes its reclaim policy (to `Retain` or
//! `Delete`) and nothing else.

use serde_json::Value;

use super::Violation;
use super::fields::{get, list, object, shown, string};
use super::quantity::Quantity;
use super::schema::ClaimRule;
use crate::grants::check::pattern_matches;

/// The claim fields that choose a volume or its contents.
const BINDING_FIELDS: [&str; 4] = ["volumeName", "selector", "dataSource", "dataSourceRef"];

fn claim_violation(at: &str, key: &str, problem: String) -> Violation {
    Violation {
        rule: "claims.binding",
        statement: "claims are bound by the cluster, to a new volume".into(),
        field: format!("{at}.{key}"),
        problem,
        grant: None,
    }
}

fn set(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    }
}

/// Checks a claim being created.
pub(crate) fn check_claim(rule: &ClaimRule, claim: &Value) -> Result<(), Violation> {
    check_claim_spec(rule, get(claim, "spec").unwrap_or(&Value::Null), "spec")
}

/// Checks a claim's spec (or a claim template's) at `at`: its binding
/// fields, its storage class and its size.
pub(crate) fn check_claim_spec(rule: &ClaimRule, spec: &Value, at: &str) -> Result<(), Violation> {
    for key in BINDING_FIELDS {
        if set(spec.get(key)) {
            return Err(claim_violation(
                at,
                key,
                format!("is set ({})", super::fields::shown_value(&spec[key])),
            ));
        }
    }
    storage_class(rule, spec, at)?;
    size(rule, spec, at)
}

/// The storage class: named, and one the grants list; unset only where
/// they allow the cluster's default.
fn storage_class(rule: &ClaimRule, spec: &Value, at: &str) -> Result<(), Violation> {
    let field = format!("{at}.storageClassName");
    let fail = |problem: String, grant: Option<String>| Violation {
        rule: "claims.storage-class",
        statement: "claims name a storage class the grants list".into(),
        field: field.clone(),
        problem,
        grant,
    };
    // `null` and absent are the same to the API server: unset.
    match spec.get("storageClassName") {
        None | Some(Value::Null) if rule.default_class => Ok(()),
        None | Some(Value::Null) => Err(fail(
            "is not set (the cluster's default class, or with none any static volume of no class)"
                .into(),
            Some("kubernetes.objects.claims.default_class: true".into()),
        )),
        Some(Value::String(c)) if c.is_empty() => Err(fail(
            "is \"\" (no class: it binds any static volume of no class)".into(),
            None,
        )),
        Some(Value::String(c)) => {
            if rule.storage_classes.iter().any(|p| pattern_matches(p, c)) {
                Ok(())
            } else {
                Err(fail(
                    format!("is `{}`", shown(c)),
                    Some(format!(
                        "kubernetes.objects.claims.storage_classes: [\"{}\"]",
                        shown(c)
                    )),
                ))
            }
        }
        Some(other) => Err(fail(
            format!("is not a string ({})", super::fields::shown_value(other)),
            None,
        )),
    }
}

/// The size: requests and limits of `storage` under the ceiling.
fn size(rule: &ClaimRule, spec: &Value, at: &str) -> Result<(), Violation> {
    let Some(max) = &rule.max_storage else {
        return Ok(());
    };
    let fail = |field: String, problem: String| Violation {
        rule: "claims.size",
        statement: format!("a claim asks for at most {max} of storage"),
        field,
        problem,
        grant: Some("kubernetes.objects.claims.max_storage".into()),
    };
    let Ok(ceiling) = Quantity::parse(max) else {
        // Validated at load; a ceiling that does not parse holds nothing.
        return Err(fail(format!("{at}.resources"), "cannot be checked".into()));
    };
    let resources = get(spec, "resources").unwrap_or(&Value::Null);
    for part in ["requests", "limits"] {
        let part_at = format!("{at}.resources.{part}");
        let Some(m) = object(resources, part).map_err(|p| fail(part_at.clone(), p))? else {
            continue;
        };
        let Some(v) = m.get("storage").filter(|v| !v.is_null()) else {
            continue;
        };
        let field = format!("{part_at}.storage");
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(fail(
                    field,
                    format!("is not a quantity ({})", super::fields::shown_value(other)),
                ));
            }
        };
        let q = Quantity::parse(&text).map_err(|p| fail(field.clone(), p))?;
        if q > ceiling {
            return Err(fail(field, format!("is {}, above {max}", shown(&text))));
        }
    }
    Ok(())
}

/// Checks the claim templates of a pod spec at `spec_at`: each
/// `ephemeral.volumeClaimTemplate` as a claim.
pub(crate) fn check_pod_templates(
    rule: &ClaimRule,
    spec: &Value,
    spec_at: &str,
) -> Result<(), Violation> {
    let volumes = list(spec, "volumes").unwrap_or(&[]);
    for (i, v) in volumes.iter().enumerate() {
        let Some(template) = get(v, "ephemeral").and_then(|e| get(e, "volumeClaimTemplate")) else {
            continue;
        };
        check_claim_spec(
            rule,
            get(template, "spec").unwrap_or(&Value::Null),
            &format!("{spec_at}.volumes[{i}].ephemeral.volumeClaimTemplate.spec"),
        )?;
    }
    Ok(())
}

/// Checks a StatefulSet's `spec.volumeClaimTemplates`, each as a claim.
pub(crate) fn check_set_templates(rule: &ClaimRule, obj: &Value) -> Result<(), Violation> {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    for (i, t) in list(spec, "volumeClaimTemplates")
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        check_claim_spec(
            rule,
            get(t, "spec").unwrap_or(&Value::Null),
            &format!("spec.volumeClaimTemplates[{i}].spec"),
        )?;
    }
    Ok(())
}

/// Checks a claim update or patch: the binding fields as they were (the
/// cluster sets `volumeName` when it binds the claim).
pub(crate) fn check_claim_change(
    rule: &ClaimRule,
    old: &Value,
    new: &Value,
) -> Result<(), Violation> {
    let spec = |v: &Value| get(v, "spec").cloned().unwrap_or(Value::Null);
    let (before, after) = (spec(old), spec(new));
    // A class set where there was none (the API server allows it once) is
    // checked as a new claim's; the class a claim was made with stays.
    let class = |v: &Value| get(v, "storageClassName").cloned();
    if class(&before) != class(&after) {
        storage_class(rule, &after, "spec")?;
    }
    size(rule, &after, "spec")?;
    for key in BINDING_FIELDS {
        let (b, a) = (
            before.get(key).filter(|v| set(Some(v))),
            after.get(key).filter(|v| set(Some(v))),
        );
        if a != b {
            return Err(claim_violation(
                "spec",
                key,
                format!(
                    "would change from {} to {}",
                    b.map_or("unset".into(), super::fields::shown_value),
                    a.map_or("unset".into(), super::fields::shown_value)
                ),
            ));
        }
    }
    Ok(())
}

/// The volume without what may change: its reclaim policy and the
/// bookkeeping the API server writes on every write.
fn comparable(pv: &Value) -> Value {
    let mut v = pv.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["managedFields", "resourceVersion", "generation"] {
            meta.remove(key);
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("persistentVolumeReclaimPolicy");
    }
    if let Some(obj) = v.as_object_mut() {
        obj.remove("status");
    }
    v
}

/// Checks a PersistentVolume update or patch from `old` to `new`.
pub(crate) fn check_volume_change(old: &Value, new: &Value) -> Result<(), Violation> {
    let fail = |field: &str, problem: String| Violation {
        rule: "persistentvolumes.reclaim-policy",
        statement: "a PersistentVolume's reclaim policy is all a write may change".into(),
        field: field.into(),
        problem,
        grant: None,
    };
    let spec = get(new, "spec").unwrap_or(&Value::Null);
    let policy = string(spec, "persistentVolumeReclaimPolicy")
        .map_err(|p| fail("spec.persistentVolumeReclaimPolicy", p))?;
    if let Some(p) = policy.filter(|p| !matches!(*p, "Retain" | "Delete")) {
        return Err(fail(
            "spec.persistentVolumeReclaimPolicy",
            format!("is `{}`, not `Retain` or `Delete`", shown(p)),
        ));
    }
    let (a, b) = (comparable(old), comparable(new));
    if a != b {
        return Err(fail(
            &first_difference(&a, &b, String::new()),
            "would change".into(),
        ));
    }
    Ok(())
}

/// Where two values first differ, as a field path.
fn first_difference(a: &Value, b: &Value, at: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if va != vb {
                    let next = if at.is_empty() {
                        shown(k)
                    } else {
                        format!("{at}.{}", shown(k))
                    };
                    return first_difference(va, vb, next);
                }
            }
            at
        }
        _ => at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule() -> ClaimRule {
        ClaimRule {
            storage_classes: vec!["standard".into(), "fast-*".into()],
            default_class: false,
            max_storage: Some("100Gi".into()),
        }
    }

    #[test]
    fn claims_name_no_volume_or_source() {
        let r = rule();
        check_claim(
            &r,
            &json!({"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard"}}),
        )
        .expect("plain");
        for (key, value) in [
            ("volumeName", json!("someone-elses-pv")),
            ("selector", json!({"matchLabels": {"a": "b"}})),
            (
                "dataSource",
                json!({"kind": "PersistentVolumeClaim", "name": "other"}),
            ),
            (
                "dataSourceRef",
                json!({"kind": "VolumeSnapshot", "name": "s"}),
            ),
        ] {
            let v = check_claim(
                &r,
                &json!({"spec": {key: value, "storageClassName": "standard"}}),
            )
            .expect_err(key);
            assert_eq!(
                (v.rule, v.field.clone()),
                ("claims.binding", format!("spec.{key}"))
            );
        }
        // Once bound by the cluster, the volume name stays; it may not be
        // set or changed by the adapter.
        let bound = json!({"spec": {"volumeName": "pvc-1", "storageClassName": "standard",
                                    "resources": {"requests": {"storage": "1Gi"}}}});
        let resized = json!({"spec": {"volumeName": "pvc-1", "storageClassName": "standard",
                                      "resources": {"requests": {"storage": "2Gi"}}}});
        check_claim_change(&r, &bound, &resized).expect("resize");
        let v = check_claim_change(
            &r,
            &json!({"spec": {"storageClassName": "standard"}}),
            &bound,
        )
        .unwrap_err();
        assert_eq!(v.field, "spec.volumeName");
        assert!(
            check_claim_change(
                &r,
                &bound,
                &json!({"spec": {"volumeName": "other", "storageClassName": "standard"}})
            )
            .is_err()
        );
    }

    #[test]
    fn claims_name_a_granted_class_and_stay_under_the_ceiling() {
        let r = rule();
        let claim = |spec: Value| json!({ "spec": spec });
        check_claim(&r, &claim(json!({"storageClassName": "fast-ssd"}))).expect("pattern");
        for (spec, rule_id, field) in [
            (
                json!({"storageClassName": ""}),
                "claims.storage-class",
                "spec.storageClassName",
            ),
            (json!({}), "claims.storage-class", "spec.storageClassName"),
            (
                json!({"storageClassName": null}),
                "claims.storage-class",
                "spec.storageClassName",
            ),
            (
                json!({"storageClassName": "local-static"}),
                "claims.storage-class",
                "spec.storageClassName",
            ),
            (
                json!({"storageClassName": "standard", "resources": {"requests": {"storage": "101Gi"}}}),
                "claims.size",
                "spec.resources.requests.storage",
            ),
            (
                json!({"storageClassName": "standard", "resources": {"limits": {"storage": "1Ti"}}}),
                "claims.size",
                "spec.resources.limits.storage",
            ),
            (
                json!({"storageClassName": "standard", "resources": {"requests": {"storage": "lots"}}}),
                "claims.size",
                "spec.resources.requests.storage",
            ),
        ] {
            let v = check_claim(&r, &claim(spec.clone())).expect_err(&spec.to_string());
            assert_eq!((v.rule, v.field.as_str()), (rule_id, field), "{spec}");
        }
        check_claim(
            &r,
            &claim(json!({"storageClassName": "standard", "resources": {"requests": {"storage": "100Gi"}}})),
        )
        .expect("at the ceiling");
        // Unset only where the grants allow the default class.
        let default = ClaimRule {
            default_class: true,
            ..rule()
        };
        check_claim(&default, &claim(json!({}))).expect("default class");
        assert!(check_claim(&default, &claim(json!({"storageClassName": ""}))).is_err());
        // A class set later (once allowed) is checked as a new claim's.
        let v = check_claim_change(
            &default,
            &claim(json!({})),
            &claim(json!({"storageClassName": "local-static"})),
        )
        .unwrap_err();
        assert_eq!(v.rule, "claims.storage-class");
        // Templates are claims.
        let pod = json!({"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
            "spec": {"storageClassName": "standard", "volumeName": "pv-of-another"}}}}]});
        let v = check_pod_templates(&r, &pod, "spec.template.spec").unwrap_err();
        assert_eq!(
            v.field,
            "spec.template.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.volumeName"
        );
        let set = json!({"spec": {"volumeClaimTemplates": [{"spec": {"storageClassName": ""}}]}});
        assert_eq!(
            check_set_templates(&r, &set).unwrap_err().field,
            "spec.volumeClaimTemplates[0].spec.storageClassName"
        );
    }

    #[test]
    fn a_volume_changes_only_its_reclaim_policy() {
        let old = json!({"metadata": {"name": "pv", "resourceVersion": "1", "labels": {"a": "b"}},
                         "spec": {"persistentVolumeReclaimPolicy": "Delete",
                                  "claimRef": {"namespace": "pando-x", "name": "data"}},
                         "status": {"phase": "Bound"}});
        let mut new = old.clone();
        new["spec"]["persistentVolumeReclaimPolicy"] = json!("Retain");
        new["metadata"]["managedFields"] = json!([{"manager": "x"}]);
        check_volume_change(&old, &new).expect("reclaim policy");
        new["spec"]["persistentVolumeReclaimPolicy"] = json!("Recycle");
        assert!(check_volume_change(&old, &new).is_err());
        let mut stolen = old.clone();
        stolen["spec"]["claimRef"]["namespace"] = json!("pando-mine");
        let v = check_volume_change(&old, &stolen).unwrap_err();
        assert_eq!(v.rule, "persistentvolumes.reclaim-policy");
        assert_eq!(v.field, "spec.claimRef.namespace");
        let mut labelled = old.clone();
        labelled["metadata"]["labels"]["a"] = json!("c");
        assert_eq!(
            check_volume_change(&old, &labelled).unwrap_err().field,
            "metadata.labels.a"
        );
    }
}
