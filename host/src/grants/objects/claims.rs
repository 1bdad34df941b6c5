//! PersistentVolumeClaims and PersistentVolumes: a claim is bound by the
//! cluster, never to a volume the adapter names (`volumeName`, `selector`)
//! or filled from a source it names (`dataSource`, `dataSourceRef`); a
//! volume's patch changes its reclaim policy (to `Retain` or `Delete`)
//! and nothing else.

use serde_json::Value;

use super::Violation;
use super::fields::{get, shown, string};

/// The claim fields that choose a volume or its contents.
const BINDING_FIELDS: [&str; 4] = ["volumeName", "selector", "dataSource", "dataSourceRef"];

fn claim_violation(key: &str, problem: String) -> Violation {
    Violation {
        rule: "claims.binding",
        statement: "claims are bound by the cluster, to a new volume".into(),
        field: format!("spec.{key}"),
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
pub(crate) fn check_claim(claim: &Value) -> Result<(), Violation> {
    let spec = get(claim, "spec").unwrap_or(&Value::Null);
    for key in BINDING_FIELDS {
        if set(spec.get(key)) {
            return Err(claim_violation(
                key,
                format!("is set ({})", super::fields::shown_value(&spec[key])),
            ));
        }
    }
    Ok(())
}

/// Checks a claim update or patch: the binding fields as they were (the
/// cluster sets `volumeName` when it binds the claim).
pub(crate) fn check_claim_change(old: &Value, new: &Value) -> Result<(), Violation> {
    let spec = |v: &Value| get(v, "spec").cloned().unwrap_or(Value::Null);
    let (before, after) = (spec(old), spec(new));
    for key in BINDING_FIELDS {
        let (b, a) = (
            before.get(key).filter(|v| set(Some(v))),
            after.get(key).filter(|v| set(Some(v))),
        );
        if a != b {
            return Err(claim_violation(
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

    #[test]
    fn claims_name_no_volume_or_source() {
        check_claim(
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
            let v = check_claim(&json!({"spec": {key: value}})).expect_err(key);
            assert_eq!(
                (v.rule, v.field.clone()),
                ("claims.binding", format!("spec.{key}"))
            );
        }
        // Once bound by the cluster, the volume name stays; it may not be
        // set or changed by the adapter.
        let bound =
            json!({"spec": {"volumeName": "pvc-1", "resources": {"requests": {"storage": "1Gi"}}}});
        let resized =
            json!({"spec": {"volumeName": "pvc-1", "resources": {"requests": {"storage": "2Gi"}}}});
        check_claim_change(&bound, &resized).expect("resize");
        let v = check_claim_change(&json!({"spec": {}}), &bound).unwrap_err();
        assert_eq!(v.field, "spec.volumeName");
        assert!(check_claim_change(&bound, &json!({"spec": {"volumeName": "other"}})).is_err());
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
