//! What an adapter may reach: the grants document.
//!
//! Deny by default: an adapter with no grants gets the generic imports
//! (logging, clocks, streams) and nothing else. The Kubernetes section says
//! which verbs on which resources in which namespaces; the checker that
//! enforces it on every request lives with the Kubernetes import. The schema
//! is documented in `docs/grants.md`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::LoadError;

/// An adapter's grants.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// The Kubernetes API; none means the adapter may not import it.
    #[serde(default)]
    pub kubernetes: Option<KubernetesGrants>,
}

/// What an adapter may do through the Kubernetes import.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubernetesGrants {
    /// Rules, each allowing some verbs on some resources in some namespaces.
    /// A request is allowed when any rule allows it.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The request-rate budget. Requests over it wait; they do not fail.
    #[serde(default)]
    pub rate: Rate,
    /// The largest request body the adapter may send, in bytes.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: u64,
}

fn default_max_body() -> u64 {
    // The API server's own limit for most objects is 3 MiB.
    3 << 20
}

/// One grant rule.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Verbs allowed: `get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`.
    pub verbs: Vec<String>,
    /// Resources, as `resource`, `group/resource`, or either with
    /// `/subresource` (`pods/log`, `apps/deployments/scale`).
    pub resources: Vec<String>,
    /// Namespace patterns (`pando-*`, `pando-edge`) for namespaced
    /// resources. Empty together with `cluster: true` is a cluster-scoped
    /// rule.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The rule is for cluster-scoped resources (nodes, RuntimeClasses,
    /// namespaces, PersistentVolumes).
    #[serde(default)]
    pub cluster: bool,
    /// For cluster-scoped resources, object-name patterns (`pando-*` for
    /// namespaces). Empty is every name.
    #[serde(default)]
    pub names: Vec<String>,
}

/// A request-rate budget: a token bucket.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests allowed at once above that.
    pub burst: u32,
}

impl Default for Rate {
    /// client-go's defaults, which the reference adapter runs with.
    fn default() -> Self {
        Rate {
            qps: 5.0,
            burst: 10,
        }
    }
}

impl Grants {
    /// No grants at all: generic imports only.
    pub fn none() -> Self {
        Grants::default()
    }

    /// Reads a grants document (YAML or JSON) from a file.
    pub fn from_path(path: &Path) -> Result<Self, LoadError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| LoadError::Grants {
            origin: origin.clone(),
            reason: format!("cannot read: {e}"),
        })?;
        Self::from_text(&origin, &text)
    }

    /// Parses a grants document (YAML or JSON; JSON is YAML). `origin` names
    /// it in errors.
    pub fn from_text(origin: &str, text: &str) -> Result<Self, LoadError> {
        let de = serde_yaml::Deserializer::from_str(text);
        let grants: Grants =
            serde_path_to_error::deserialize(de).map_err(|e| LoadError::Grants {
                origin: origin.into(),
                reason: format!("at `{}`: {}", e.path(), e.inner()),
            })?;
        grants.validate(origin)?;
        Ok(grants)
    }

    fn validate(&self, origin: &str) -> Result<(), LoadError> {
        let Some(k) = &self.kubernetes else {
            return Ok(());
        };
        let bad = |reason: String| LoadError::Grants {
            origin: origin.into(),
            reason,
        };
        if !(k.rate.qps > 0.0 && k.rate.qps.is_finite()) {
            return Err(bad(format!(
                "at `kubernetes.rate.qps`: must be a positive number, got {}",
                k.rate.qps
            )));
        }
        if k.rate.burst == 0 {
            return Err(bad("at `kubernetes.rate.burst`: must be at least 1".into()));
        }
        for (i, rule) in k.rules.iter().enumerate() {
            if rule.verbs.is_empty() || rule.resources.is_empty() {
                return Err(bad(format!(
                    "at `kubernetes.rules[{i}]`: a rule needs at least one verb and one resource"
                )));
            }
            if rule.cluster != rule.namespaces.is_empty() {
                return Err(bad(format!(
                    "at `kubernetes.rules[{i}]`: give `namespaces` for namespaced resources, \
                     or `cluster: true` (and no namespaces) for cluster-scoped ones"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_document_grants_nothing() {
        let g = Grants::from_text("t", "{}").expect("empty grants parse");
        assert_eq!(g, Grants::none());
    }

    #[test]
    fn unknown_field_is_named() {
        let err = Grants::from_text("t", "kubernetes:\n  rulez: []\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("rulez"), "{msg}");
        assert!(msg.contains("kubernetes"), "{msg}");
    }

    #[test]
    fn rule_scope_must_be_explicit() {
        let err = Grants::from_text(
            "t",
            "kubernetes:\n  rules:\n  - verbs: [get]\n    resources: [pods]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("rules[0]"), "{err}");
    }
}
