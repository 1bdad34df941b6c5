//! `kubernetes.read_masks`: what the adapter is shown of objects outside
//! its own namespaces. A mask names resources, the namespaces whose objects
//! the adapter reads whole (its own), and the fields it keeps of every
//! other object: the rest is removed by the host before the answer reaches
//! the guest, on gets, lists, watches and the watch-fed cache's answers
//! alike (`capability::kubernetes::redact`). For the cluster-wide pod read
//! capacity accounting needs: node, requests, phase, owner; never env,
//! args or commands.
//!
//! A kept path is fields joined by `.`, a field ending `[]` for each element
//! of a list: `spec.containers[].resources`. `apiVersion` and `kind` are
//! always kept, and a list's own fields: a mask applies to its items.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::pattern_matches;

/// One mask.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReadMask {
    /// Resources masked, spelled as in rules (`pods`, `apps/deployments`),
    /// without subresources: a subresource that answers the object
    /// (`pods/status`) is masked with it.
    pub resources: Vec<String>,
    /// Namespace patterns read whole: the adapter's own (`pando-*`).
    pub own_namespaces: Vec<String>,
    /// Patterns among those that are masked all the same (`pando-system`).
    #[serde(default)]
    pub own_except: Vec<String>,
    /// The fields kept of an object outside those namespaces
    /// (`spec.nodeName`, `spec.containers[].resources`, `status.phase`).
    pub keep: Vec<String>,
}

impl ReadMask {
    /// Whether an object in namespace `ns` (empty: cluster-scoped) is read
    /// whole.
    pub fn is_own(&self, ns: &str) -> bool {
        !ns.is_empty()
            && self.own_namespaces.iter().any(|p| pattern_matches(p, ns))
            && !self.own_except.iter().any(|p| pattern_matches(p, ns))
    }

    /// What decoding cannot check; the field and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        if self.resources.is_empty() {
            return Err(("resources".into(), "name at least one resource".into()));
        }
        for (i, r) in self.resources.iter().enumerate() {
            super::validate_resource(r).map_err(|why| (format!("resources[{i}]"), why))?;
        }
        for (i, p) in self.own_namespaces.iter().enumerate() {
            super::validate_pattern(p, 63, false)
                .map_err(|why| (format!("own_namespaces[{i}]"), why))?;
        }
        for (i, p) in self.own_except.iter().enumerate() {
            super::validate_pattern(p, 63, false)
                .map_err(|why| (format!("own_except[{i}]"), why))?;
        }
        for (i, path) in self.keep.iter().enumerate() {
            check_path(path).map_err(|why| (format!("keep[{i}]"), why))?;
        }
        Ok(())
    }
}

/// A kept path: fields of letters, digits, `_` and `-`, joined by `.`, each
/// optionally ending `[]`.
fn check_path(path: &str) -> Result<(), String> {
    let ok = !path.is_empty()
        && path.split('.').all(|seg| {
            let name = seg.strip_suffix("[]").unwrap_or(seg);
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a field path: write fields joined by `.`, a list's elements as \
             `field[]` (`spec.containers[].resources`)",
            path.escape_debug()
        ))
    }
}

/// The kept paths as a tree: what [`Keep::apply`] walks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Keep {
    /// The whole value is kept.
    all: bool,
    /// Fields kept in part or whole; `true` for a list whose elements the
    /// child applies to.
    fields: BTreeMap<String, (bool, Keep)>,
}

impl Keep {
    /// The tree of validated `paths`, with `apiVersion` and `kind`.
    pub fn new(paths: &[String]) -> Keep {
        let mut root = Keep::default();
        for path in ["apiVersion", "kind"]
            .into_iter()
            .chain(paths.iter().map(String::as_str))
        {
            let mut node = &mut root;
            for seg in path.split('.') {
                let (name, each) = match seg.strip_suffix("[]") {
                    Some(name) => (name, true),
                    None => (seg, false),
                };
                let entry = node
                    .fields
                    .entry(name.to_string())
                    .or_insert_with(|| (each, Keep::default()));
                entry.0 |= each;
                node = &mut entry.1;
            }
            node.all = true;
        }
        root
    }

    /// Removes from `value` every field not kept. A field kept as a list
    /// (`[]`) that is not one, or kept in part that is not an object, is
    /// removed: what the mask cannot read it does not show.
    pub fn apply(&self, value: &mut Value) {
        if self.all {
            return;
        }
        let Value::Object(map) = value else {
            *value = Value::Null;
            return;
        };
        map.retain(|k, v| match self.fields.get(k) {
            None => false,
            Some((false, child)) => {
                child.apply(v);
                !v.is_null() || child.all
            }
            Some((true, child)) => match v {
                Value::Array(items) => {
                    for item in items.iter_mut() {
                        child.apply(item);
                    }
                    true
                }
                _ => false,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keep(paths: &[&str]) -> Keep {
        Keep::new(&paths.iter().map(|p| (*p).to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn only_the_kept_fields_of_a_pod_remain() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "db", "namespace": "other", "annotations": {"secret": "x"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "db-1"}]},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "i", "command": ["sh"], "args": ["-c", "pw"],
                                "env": [{"name": "PASSWORD", "value": "hunter2"}],
                                "resources": {"requests": {"cpu": "1"}}}],
                "volumes": [{"name": "v", "secret": {"secretName": "s"}}],
            },
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        });
        keep(&[
            "metadata.name",
            "metadata.namespace",
            "metadata.ownerReferences",
            "spec.nodeName",
            "spec.containers[].name",
            "spec.containers[].resources",
            "status.phase",
        ])
        .apply(&mut pod);
        assert_eq!(
            pod,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "db", "namespace": "other",
                             "ownerReferences": [{"kind": "ReplicaSet", "name": "db-1"}]},
                "spec": {"nodeName": "n1",
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": "Running"},
            })
        );
    }

    #[test]
    fn what_the_mask_cannot_read_is_removed() {
        // `containers` kept as a list but sent as an object; `spec` kept in
        // part but sent as a string.
        let mut odd = json!({"spec": {"containers": {"env": "x"}}, "status": "y"});
        keep(&["spec.containers[].name", "status.phase"]).apply(&mut odd);
        assert_eq!(odd, json!({"spec": {}}));
    }

    #[test]
    fn own_namespaces_are_read_whole_and_paths_are_checked() {
        let mask = ReadMask {
            resources: vec!["pods".into()],
            own_namespaces: vec!["pando-*".into()],
            own_except: vec!["pando-system".into()],
            keep: vec!["spec.containers[].resources".into()],
        };
        assert_eq!(mask.validate(), Ok(()));
        assert!(mask.is_own("pando-shop"));
        assert!(!mask.is_own("pando-system"));
        assert!(!mask.is_own("kube-system"));
        assert!(
            !mask.is_own(""),
            "cluster-scoped objects are not the adapter's"
        );
        for bad in ["", "spec..x", "spec.containers[]x", "spec.a b", "[]"] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }
}
