//! `kubernetes.ceilings`: the ResourceQuota and LimitRange the host writes,
//! named [`CEILING_NAME`], into every namespace the adapter makes, right
//! after the API server made it and before the adapter's create returns.
//! They hold whatever the adapter writes afterwards: quota admission and
//! the LimitRanger are the API server's, and the host refuses the adapter's
//! own writes to objects of that name (`capability::kubernetes::ceiling`).
//!
//! The first entry whose namespace patterns match the new namespace's name
//! is written; a namespace no entry matches is not made (when the list is
//! empty, no ceiling is written: grants for tests and tools that make no
//! namespaces need none).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::pattern_matches;

/// The name of the host's ResourceQuota and LimitRange in each namespace
/// the adapter makes. The cluster's admission policy refuses the adapter's
/// identity deleting or raising objects of this name, and the host refuses
/// the adapter's own writes to them.
pub const CEILING_NAME: &str = "pando-ceiling";

/// The quota keys every ceiling must set: compute, storage, the objects
/// that fill etcd, and what exposes a namespace outside the cluster.
/// (`limits.cpu` is allowed, not required: it would make every container
/// carry a CPU limit, which throttles it.)
pub const REQUIRED_QUOTA: &[&str] = &[
    "requests.cpu",
    "requests.memory",
    "limits.memory",
    "requests.storage",
    "pods",
    "count/secrets",
    "count/configmaps",
    "count/persistentvolumeclaims",
    "services.loadbalancers",
    "services.nodeports",
];

/// One namespace pattern's ceiling.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// Namespace name patterns (`pando-edge`, `pando-*`) this ceiling is
    /// for; the first entry that matches a new namespace is written.
    pub namespaces: Vec<String>,
    /// Patterns among those this entry does not reach.
    #[serde(default)]
    pub except: Vec<String>,
    /// The ResourceQuota's `spec.hard`: Kubernetes quota keys to
    /// quantities (`limits.memory: 64Gi`, `count/secrets: "100"`). Must set
    /// every key of `REQUIRED_QUOTA` (docs/grants.md).
    pub quota: BTreeMap<String, String>,
    /// The LimitRange's one `Container` entry.
    pub container: ContainerLimits,
}

/// What a container is given when it sets nothing, and the most it may
/// set: resource names (`cpu`, `memory`) to quantities.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContainerLimits {
    /// Limits given to a container that sets none (`default`); must give
    /// `memory`.
    pub default: BTreeMap<String, String>,
    /// Requests given to a container that sets none (`defaultRequest`);
    /// must give `cpu` and `memory`, which the quota's requests count.
    pub default_request: BTreeMap<String, String>,
    /// The largest limit a container may set (`max`); must give `memory`.
    /// A resource named here must be limited by every container (the
    /// `default` fills it in).
    pub max: BTreeMap<String, String>,
}

impl Ceiling {
    /// Whether this entry is for namespace `ns`.
    pub fn matches(&self, ns: &str) -> bool {
        self.namespaces.iter().any(|p| pattern_matches(p, ns))
            && !self.except.iter().any(|p| pattern_matches(p, ns))
    }

    /// What decoding cannot check; the field and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        if self.namespaces.is_empty() {
            return Err((
                "namespaces".into(),
                "name the namespaces this ceiling is for (`pando-*`)".into(),
            ));
        }
        for key in REQUIRED_QUOTA {
            if !self.quota.contains_key(*key) {
                return Err((
                    "quota".into(),
                    format!(
                        "sets no `{key}`: a ceiling bounds {} (docs/grants.md, \"Ceilings\")",
                        REQUIRED_QUOTA.join(", ")
                    ),
                ));
            }
        }
        for (key, value) in &self.quota {
            check_quantity(value).map_err(|why| (format!("quota.{key}"), why))?;
        }
        let c = &self.container;
        for (name, list, required) in [
            ("default", &c.default, &["memory"][..]),
            (
                "default_request",
                &c.default_request,
                &["cpu", "memory"][..],
            ),
            ("max", &c.max, &["memory"][..]),
        ] {
            for &resource in required {
                if !list.contains_key(resource) {
                    return Err((
                        format!("container.{name}"),
                        format!("sets no `{resource}`: give {}", required.join(" and ")),
                    ));
                }
            }
            for (key, value) in list {
                check_quantity(value).map_err(|why| (format!("container.{name}.{key}"), why))?;
            }
        }
        Ok(())
    }
}

/// The ceiling for namespace `ns`: the first entry that matches.
pub fn ceiling_for<'a>(ceilings: &'a [Ceiling], ns: &str) -> Option<&'a Ceiling> {
    ceilings.iter().find(|c| c.matches(ns))
}

/// A Kubernetes quantity as the API server reads one: digits with an
/// optional fraction, then an optional suffix (`500m`, `64Gi`, `1e3`).
fn check_quantity(q: &str) -> Result<(), String> {
    let number_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(number_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = matches!(
        suffix,
        "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
    ) || (suffix.len() > 1
        && suffix.starts_with(['e', 'E'])
        && suffix[1..]
            .trim_start_matches(['+', '-'])
            .bytes()
            .all(|b| b.is_ascii_digit()));
    if number_ok && suffix_ok {
        Ok(())
    } else {
        Err(format!(
            "`{q}` is not a Kubernetes quantity (write `500m`, `64Gi`, `100`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceiling(ns: &[&str]) -> Ceiling {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        Ceiling {
            namespaces: ns.iter().map(|s| (*s).to_string()).collect(),
            except: vec!["pando-system".into()],
            quota: REQUIRED_QUOTA
                .iter()
                .map(|k| ((*k).to_string(), "10".to_string()))
                .collect(),
            container: ContainerLimits {
                default: map(&[("cpu", "1"), ("memory", "1Gi")]),
                default_request: map(&[("cpu", "100m"), ("memory", "128Mi")]),
                max: map(&[("cpu", "4"), ("memory", "8Gi")]),
            },
        }
    }

    #[test]
    fn the_first_matching_entry_is_the_namespace_s_ceiling() {
        let list = [ceiling(&["pando-edge"]), ceiling(&["pando-*"])];
        assert!(std::ptr::eq(
            ceiling_for(&list, "pando-edge").unwrap(),
            &list[0]
        ));
        assert!(std::ptr::eq(
            ceiling_for(&list, "pando-shop").unwrap(),
            &list[1]
        ));
        assert!(ceiling_for(&list, "pando-system").is_none(), "excepted");
        assert!(ceiling_for(&list, "default").is_none());
    }

    #[test]
    fn a_ceiling_must_bound_every_required_key_with_quantities() {
        assert_eq!(ceiling(&["pando-*"]).validate(), Ok(()));
        let mut c = ceiling(&["pando-*"]);
        c.quota.remove("count/secrets");
        let (field, why) = c.validate().unwrap_err();
        assert_eq!(field, "quota");
        assert!(why.contains("`count/secrets`"), "{why}");
        let mut c = ceiling(&["pando-*"]);
        c.quota.insert("limits.memory".into(), "lots".into());
        assert_eq!(c.validate().unwrap_err().0, "quota.limits.memory");
        let mut c = ceiling(&["pando-*"]);
        c.container.max.remove("memory");
        assert_eq!(c.validate().unwrap_err().0, "container.max");
        let mut c = ceiling(&["pando-*"]);
        c.container.max.remove("cpu");
        c.container.default.remove("cpu");
        assert_eq!(c.validate(), Ok(()), "no CPU limit is forced");
    }

    #[test]
    fn the_shipped_grants_give_every_namespace_the_adapter_makes_a_ceiling() {
        let text = include_str!("../../../deploy/grants/kubernetes.yaml");
        let g = crate::Grants::from_text("kubernetes.yaml", text).expect("the shipped grants");
        let k = g.kubernetes.expect("kubernetes");
        let edge = ceiling_for(&k.ceilings, "pando-edge").expect("the edge's");
        assert_eq!(edge.quota["services.loadbalancers"], "4");
        let app = ceiling_for(&k.ceilings, "pando-shop").expect("an app's");
        assert_eq!(app.quota["services.loadbalancers"], "0");
        assert_eq!(app.quota["services.nodeports"], "0");
        assert!(ceiling_for(&k.ceilings, "pando-system").is_none());
        assert!(
            k.rate.write_bytes_per_hour < 1 << 30,
            "well inside etcd's quota"
        );
        let mask = &k.read_masks[0];
        assert_eq!(mask.resources, ["pods"]);
        assert!(mask.is_own("pando-shop") && !mask.is_own("kube-system"));
        for never in ["env", "args", "command", "image", "volumes"] {
            assert!(
                !mask.keep.iter().any(|p| p.contains(never)),
                "{never} is never shown"
            );
        }
    }

    #[test]
    fn quantities_are_read_as_the_api_server_reads_them() {
        for ok in ["0", "10", "500m", "64Gi", "1.5", "1e3", "2E+2", "100Mi"] {
            assert_eq!(check_quantity(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Gi", "1 Gi", "1GB", "-1", "1..2", "lots"] {
            assert!(check_quantity(bad).is_err(), "{bad}");
        }
    }
}
