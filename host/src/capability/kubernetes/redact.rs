//! The adapter's read masks (`kubernetes.read_masks`, `grants::read_masks`)
//! applied to what it reads: a get's object, a list's items, a watch's
//! events and the watch-fed cache's objects, each by the namespace the
//! object says it is in. An object in one of the mask's own namespaces is
//! left whole; any other keeps only the mask's fields. A body that cannot be
//! read as JSON is not handed on: the read fails (`transport`), since what
//! the mask cannot read it cannot vouch for.

use serde_json::Value;

use crate::grants::rbac::RbacResource;
use crate::grants::read_masks::{Keep, ReadMask};
use crate::grants::request::ApiTarget;

/// Subresources whose answer is the object itself.
const OBJECT_SUBRESOURCES: &[&str] = &["status", "ephemeralcontainers", "resize"];

/// One mask, ready to apply.
#[derive(Debug)]
pub(crate) struct Mask {
    resources: Vec<RbacResource>,
    mask: ReadMask,
    keep: Keep,
}

impl Mask {
    /// Masks `object` unless it is in one of the own namespaces.
    pub(crate) fn object(&self, object: &mut Value) {
        let ns = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !self.mask.is_own(ns) {
            self.keep.apply(object);
        }
    }

    /// A response body with each object masked: a list's items, or the one
    /// object; a `Status` is left as it is.
    pub(crate) fn body(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        let mut value: Value = serde_json::from_slice(body)
            .map_err(|e| format!("the answer could not be read to apply the read mask: {e}"))?;
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind == "Status" {
            return Ok(body.to_vec());
        }
        let list = kind.ends_with("List") || kind.is_empty();
        match value.get_mut("items") {
            Some(Value::Array(items)) if list => {
                items.iter_mut().for_each(|item| self.object(item));
            }
            _ => self.object(&mut value),
        }
        serde_json::to_vec(&value).map_err(|e| format!("re-encoding the masked answer: {e}"))
    }

    /// One cached object's JSON, masked; one that cannot be read becomes
    /// `null` rather than being shown whole.
    pub(crate) fn cached(&self, json: Vec<u8>) -> Vec<u8> {
        match serde_json::from_slice::<Value>(&json) {
            Ok(mut v) => {
                self.object(&mut v);
                serde_json::to_vec(&v).unwrap_or_else(|_| b"null".to_vec())
            }
            Err(_) => b"null".to_vec(),
        }
    }
}

/// An adapter's masks.
#[derive(Debug, Default)]
pub(crate) struct Redaction {
    masks: Vec<Mask>,
}

impl Redaction {
    /// The masks of the grants.
    pub(crate) fn new(masks: &[ReadMask]) -> Self {
        Redaction {
            masks: masks
                .iter()
                .map(|m| Mask {
                    resources: m
                        .resources
                        .iter()
                        .map(|r| RbacResource::from_spelling(r))
                        .collect(),
                    keep: Keep::new(&m.keep),
                    mask: m.clone(),
                })
                .collect(),
        }
    }

    /// The mask a read of `target` is shown through, if any: none for a
    /// target inside one of its own namespaces (nothing to mask), nor for a
    /// subresource that is not the object (`pods/log`).
    pub(crate) fn for_target(&self, target: &ApiTarget) -> Option<&Mask> {
        if let Some(sub) = target.subresource.as_deref()
            && !OBJECT_SUBRESOURCES.contains(&sub)
        {
            return None;
        }
        let mask = self.masks.iter().find(|m| {
            m.resources
                .iter()
                .any(|r| r.api_group == target.group && r.resource == target.resource)
        })?;
        match target.namespace.as_deref() {
            Some(ns) if mask.mask.is_own(ns) => None,
            _ => Some(mask),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::grants::request::{ApiRequest, Method, parse};

    fn redaction() -> Redaction {
        Redaction::new(&[ReadMask {
            resources: vec!["pods".into()],
            own_namespaces: vec!["pando-*".into()],
            own_except: vec!["pando-system".into()],
            keep: vec!["metadata.name".into(), "metadata.namespace".into()],
        }])
    }

    fn target(path: &str) -> ApiTarget {
        match parse(Method::Get, path, &[]).expect("a path") {
            ApiRequest::Resource { target, .. } => target,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_outside_the_own_namespaces_are_masked_item_by_item() {
        let r = redaction();
        assert!(
            r.for_target(&target("/api/v1/namespaces/pando-a/pods"))
                .is_none()
        );
        assert!(
            r.for_target(&target("/api/v1/namespaces/pando-a/pods/x/log"))
                .is_none()
        );
        assert!(
            r.for_target(&target("/api/v1/namespaces/default/services"))
                .is_none()
        );
        assert!(
            r.for_target(&target("/api/v1/namespaces/default/pods/x/status"))
                .is_some()
        );
        let mask = r
            .for_target(&target("/api/v1/pods"))
            .expect("all namespaces");
        let list = json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
        "items": [
            {"metadata": {"name": "a", "namespace": "pando-a"}, "spec": {"containers": [{"env": [1]}]}},
            {"metadata": {"name": "b", "namespace": "kube-system"}, "spec": {"containers": [{"env": [2]}]}},
            {"metadata": {"name": "c", "namespace": "pando-system"}, "spec": {}},
        ]});
        let out: Value =
            serde_json::from_slice(&mask.body(list.to_string().as_bytes()).unwrap()).unwrap();
        assert_eq!(
            out["metadata"]["resourceVersion"], "9",
            "the list's own fields stay"
        );
        assert_eq!(
            out["items"][0]["spec"]["containers"][0]["env"],
            json!([1]),
            "own: whole"
        );
        assert_eq!(
            out["items"][1],
            json!({"metadata": {"name": "b", "namespace": "kube-system"}})
        );
        assert_eq!(
            out["items"][2],
            json!({"metadata": {"name": "c", "namespace": "pando-system"}})
        );
        let status = br#"{"kind":"Status","message":"not found"}"#;
        assert_eq!(mask.body(status).unwrap(), status.to_vec());
        assert!(
            mask.body(b"not json").is_err(),
            "what cannot be read is not shown"
        );
        assert_eq!(mask.cached(b"{".to_vec()), b"null".to_vec());
    }
}
