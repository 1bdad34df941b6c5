//! What an adapter may reach: the grants document.
//!
//! Deny by default: an adapter with no grants gets the generic imports
//! (logging, clocks, streams) and nothing else. The Kubernetes section says
//! which verbs on which resources in which namespaces. [`path`] parses and
//! canonicalizes each request; [`check`] decides it against the rules. The
//! schema is documented in `docs/grants.md`.

pub mod ceilings;
pub mod check;
pub mod forbidden;
mod json_schema;
mod known;
pub mod objects;
pub mod rbac;
pub mod read_masks;
pub mod request;

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::LoadError;

/// An adapter's grants.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// The Kubernetes API; none means the adapter may not import it.
    #[serde(default)]
    pub kubernetes: Option<KubernetesGrants>,
}

/// What an adapter may do through the Kubernetes import.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
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
    /// What the objects the adapter writes may contain (`objects::schema`);
    /// absent is the safe default: pods meet baseline, Services are
    /// ClusterIP, namespaces carry no labels of the adapter's, no role
    /// binding.
    #[serde(default)]
    pub objects: objects::ObjectRules,
    /// The ResourceQuota and LimitRange (`pando-ceiling`) the host writes
    /// into each namespace the adapter makes (`ceilings`); empty writes
    /// none.
    #[serde(default)]
    pub ceilings: Vec<ceilings::Ceiling>,
    /// What the adapter is shown of objects outside its own namespaces
    /// (`read_masks`); empty shows them whole.
    #[serde(default)]
    pub read_masks: Vec<read_masks::ReadMask>,
}

fn default_max_body() -> u64 {
    // The API server's own limit for most objects is 3 MiB.
    3 << 20
}

/// One grant rule.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(transform = json_schema::rule_scope)]
pub struct Rule {
    /// Verbs allowed: `get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`.
    #[schemars(schema_with = "json_schema::verbs")]
    pub verbs: Vec<String>,
    /// Resources, as `resource`, `group/resource`, or either with
    /// `/subresource` (`pods/log`, `apps/deployments/scale`).
    #[schemars(schema_with = "json_schema::resources")]
    pub resources: Vec<String>,
    /// Namespace patterns (`pando-*`, `pando-edge`) for namespaced
    /// resources. Empty together with `cluster: true` is a cluster-scoped
    /// rule.
    #[serde(default)]
    #[schemars(inner(regex(pattern = json_schema::NAMESPACE_PATTERN)))]
    pub namespaces: Vec<String>,
    /// Patterns this rule does not reach, namespaces or names alike:
    /// `namespaces: ["pando-*"]` with `except: ["pando-system"]` keeps an
    /// app rule out of Pando's own namespace. A rule with exceptions never
    /// grants an all-namespaces request.
    #[serde(default)]
    #[schemars(inner(regex(pattern = json_schema::NAME_PATTERN)))]
    pub except: Vec<String>,
    /// The rule is for cluster-scoped resources (nodes, RuntimeClasses,
    /// namespaces, PersistentVolumes).
    #[serde(default)]
    pub cluster: bool,
    /// For cluster-scoped resources, object-name patterns (`pando-*` for
    /// namespaces). Empty is every name.
    #[serde(default)]
    #[schemars(inner(regex(pattern = json_schema::NAME_PATTERN)))]
    pub names: Vec<String>,
}

/// A request-rate budget and a write budget: token buckets.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Sustained requests per second.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub qps: f64,
    /// Requests allowed at once above that.
    #[schemars(range(min = 1))]
    pub burst: u32,
    /// Sustained bytes a second of request bodies (creates, updates,
    /// patches): what the adapter may add to etcd. A request rate alone lets
    /// 5 requests a second of 3 MiB fill etcd's default 2 GiB quota in
    /// minutes, and the whole cluster turns read-only. A write over the
    /// budget waits its turn; one whose wait would end after the call's
    /// deadline is refused at once (`denied`, naming this field).
    #[serde(default = "default_write_bytes_per_second")]
    #[schemars(range(min = 1))]
    pub write_bytes_per_second: u64,
    /// Body bytes allowed at once above that; at least `max_body_bytes`,
    /// so that every body the cap allows can pass.
    #[serde(default = "default_write_burst_bytes")]
    pub write_burst_bytes: u64,
    /// Bytes of request bodies an hour: the budget over time that
    /// `write_bytes_per_second` is not (kept up, a second's budget is
    /// gigabytes an hour). A token bucket holding an hour's bytes, refilled
    /// evenly; a write it cannot cover is refused at once (`denied`, naming
    /// this field), never waited for. At least `max_body_bytes`.
    #[serde(default = "default_write_bytes_per_hour")]
    #[schemars(range(min = 1))]
    pub write_bytes_per_hour: u64,
    /// Sustained reads a second that the host's watch-fed cache answers.
    /// A cache hit never reaches the API server, so it does not spend
    /// `qps` (which guards the server, and would cap the cache at the
    /// server's pace); this bounds instead what one adapter makes the host
    /// do from memory. Each answer is also held to `limits.max_response_bytes`.
    #[serde(default = "default_cache_reads_per_second")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub cache_reads_per_second: f64,
    /// Cache-answered reads allowed at once above that.
    #[serde(default = "default_cache_read_burst")]
    #[schemars(range(min = 1))]
    pub cache_read_burst: u32,
}

fn default_cache_reads_per_second() -> f64 {
    // The observe bench's best pass reads about 60,000 objects a second
    // from the cache on two cores; this leaves it room and still bounds a
    // guest that does nothing else.
    100_000.0
}

fn default_cache_read_burst() -> u32 {
    100_000
}

fn default_write_bytes_per_second() -> u64 {
    // An app's objects are a few KiB each; 1 MiB a second is hundreds of
    // applies a second, and the 300 MiB the API server's five-minute
    // compaction window could then hold stays far inside etcd's quota.
    1 << 20
}

fn default_write_burst_bytes() -> u64 {
    16 << 20
}

fn default_write_bytes_per_hour() -> u64 {
    // A quarter of etcd's default 2 GiB quota: an adapter kept at it for an
    // hour leaves the cluster room, while an app's apply is a few KiB.
    512 << 20
}

impl Default for Rate {
    /// client-go's defaults, which the reference adapter runs with.
    fn default() -> Self {
        Rate {
            qps: 5.0,
            burst: 10,
            write_bytes_per_second: default_write_bytes_per_second(),
            write_burst_bytes: default_write_burst_bytes(),
            write_bytes_per_hour: default_write_bytes_per_hour(),
            cache_reads_per_second: default_cache_reads_per_second(),
            cache_read_burst: default_cache_read_burst(),
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
        let grants: Grants = crate::yaml::from_str(text).map_err(|e| LoadError::Grants {
            origin: origin.into(),
            reason: e.to_string(),
        })?;
        if let Err((field, why)) = grants.validate() {
            // Placed as a parse error is: the checks below run on the
            // decoded grants, which no longer know their lines.
            let line = crate::yaml::position(text, &field)
                .map(|(line, column)| format!(" at line {line}, column {column}"))
                .unwrap_or_default();
            return Err(LoadError::Grants {
                origin: origin.into(),
                reason: format!("at `{field}`: {why}{line}"),
            });
        }
        Ok(grants)
    }

    /// What decoding cannot check; on error, the field's path and what is
    /// wrong.
    fn validate(&self) -> Result<(), (String, String)> {
        let Some(k) = &self.kubernetes else {
            return Ok(());
        };
        let bad = |field: &str, why: String| Err((format!("kubernetes.{field}"), why));
        if !(k.rate.qps > 0.0 && k.rate.qps.is_finite()) {
            return bad(
                "rate.qps",
                format!("must be a positive number, got {}", k.rate.qps),
            );
        }
        if k.rate.burst == 0 {
            return bad("rate.burst", "must be at least 1".into());
        }
        if !(k.rate.cache_reads_per_second > 0.0 && k.rate.cache_reads_per_second.is_finite()) {
            return bad(
                "rate.cache_reads_per_second",
                format!(
                    "must be a positive number, got {}",
                    k.rate.cache_reads_per_second
                ),
            );
        }
        if k.rate.cache_read_burst == 0 {
            return bad("rate.cache_read_burst", "must be at least 1".into());
        }
        if k.rate.write_bytes_per_second == 0 {
            return bad("rate.write_bytes_per_second", "must be at least 1".into());
        }
        if k.rate.write_burst_bytes < k.max_body_bytes {
            return bad(
                "rate.write_burst_bytes",
                format!(
                    "{} is below `kubernetes.max_body_bytes` ({}), so the largest body the cap \
                     allows could never be sent; raise it to at least {}",
                    k.rate.write_burst_bytes, k.max_body_bytes, k.max_body_bytes
                ),
            );
        }
        for (i, rule) in k.rules.iter().enumerate() {
            if rule.verbs.is_empty() || rule.resources.is_empty() {
                return bad(
                    &format!("rules[{i}]"),
                    "a rule needs at least one verb and one resource".into(),
                );
            }
            if rule.cluster != rule.namespaces.is_empty() {
                return bad(
                    &format!("rules[{i}]"),
                    "give `namespaces` for namespaced resources, or `cluster: true` (and no \
                     namespaces) for cluster-scoped ones"
                        .into(),
                );
            }
            if let Err((field, why)) = validate_rule(rule) {
                return bad(&format!("rules[{i}].{field}"), why);
            }
        }
        if let Err((field, why)) = k.objects.validate() {
            return bad(&format!("objects.{field}"), why);
        }
        if k.rate.write_bytes_per_hour < k.max_body_bytes {
            return bad(
                "rate.write_bytes_per_hour",
                format!(
                    "{} is below `kubernetes.max_body_bytes` ({}), so the largest body the cap \
                     allows could never be sent; raise it to at least {}",
                    k.rate.write_bytes_per_hour, k.max_body_bytes, k.max_body_bytes
                ),
            );
        }
        for (i, c) in k.ceilings.iter().enumerate() {
            if let Err((field, why)) = c.validate() {
                return bad(&format!("ceilings[{i}].{field}"), why);
            }
        }
        for (i, m) in k.read_masks.iter().enumerate() {
            if let Err((field, why)) = m.validate() {
                return bad(&format!("read_masks[{i}].{field}"), why);
            }
        }
        Ok(())
    }
}

/// Checks one rule's verbs, resources and patterns; on error, the field
/// (`verbs[0]`, `namespaces[2]`) and what is wrong.
fn validate_rule(rule: &Rule) -> Result<(), (String, String)> {
    for (j, verb) in rule.verbs.iter().enumerate() {
        if verb == "*" {
            return Err((
                format!("verbs[{j}]"),
                "wildcards are refused: list the verbs the adapter needs".into(),
            ));
        }
        if request::Verb::from_rbac(verb).is_none() {
            return Err((
                format!("verbs[{j}]"),
                format!(
                    "unknown verb `{verb}`: use {}",
                    request::Verb::ALL.map(request::Verb::as_str).join(", ")
                ),
            ));
        }
    }
    for (j, resource) in rule.resources.iter().enumerate() {
        if let Some(why) = forbidden::refusal(resource) {
            return Err((format!("resources[{j}]"), why));
        }
        validate_resource(resource).map_err(|why| (format!("resources[{j}]"), why))?;
    }
    for (j, pattern) in rule.namespaces.iter().enumerate() {
        validate_pattern(pattern, 63, false).map_err(|why| (format!("namespaces[{j}]"), why))?;
    }
    if !rule.names.is_empty() && !rule.cluster {
        return Err((
            "names".into(),
            "name patterns are for cluster-scoped rules (`cluster: true`) only".into(),
        ));
    }
    for (j, pattern) in rule.names.iter().enumerate() {
        validate_pattern(pattern, 253, true).map_err(|why| (format!("names[{j}]"), why))?;
    }
    for (j, pattern) in rule.except.iter().enumerate() {
        validate_pattern(pattern, 253, true).map_err(|why| (format!("except[{j}]"), why))?;
    }
    Ok(())
}

/// A resource spelling: `resource`, `group/resource`, either with
/// `/subresource`; lowercase, no wildcards, the core group unwritten.
fn validate_resource(spelling: &str) -> Result<(), String> {
    const FORM: &str = "write `resource`, `group/resource`, or either with `/subresource` \
                        (`pods`, `pods/log`, `apps/deployments/scale`)";
    if spelling.contains('*') {
        return Err(format!(
            "`{spelling}`: wildcards are refused: list the resources the adapter needs"
        ));
    }
    if spelling.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "`{spelling}`: resources are lowercase (`pods`, not `Pods`)"
        ));
    }
    let parts: Vec<&str> = spelling.split('/').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{spelling}` is malformed: {FORM}"));
    }
    if matches!(parts.first(), Some(&"core" | &"v1" | &"api")) && parts.len() > 1 {
        return Err(format!(
            "`{spelling}`: the core group is written without a group (`{}`)",
            parts[1..].join("/")
        ));
    }
    // With three parts the first is a group (a DNS subdomain); with two it
    // may be a group or a resource, and a resource is also a valid
    // subdomain, so the same check serves both.
    let (first, rest) = match parts.as_slice() {
        [only] => (None, vec![*only]),
        [first, rest @ ..] => (Some(*first), rest.to_vec()),
        [] => return Err(format!("`{spelling}` is malformed: {FORM}")),
    };
    if let Some(first) = first {
        request::check_dns_subdomain(first)
            .map_err(|why| format!("`{spelling}`: `{first}` is malformed ({why}); {FORM}"))?;
    }
    for part in rest {
        request::check_dns_label(part)
            .map_err(|why| format!("`{spelling}`: `{part}` is malformed ({why}); {FORM}"))?;
    }
    known::check(&parts)
}

/// A namespace or name pattern: lowercase letters, digits, `-` (and `.`
/// for names), with `*` as a glob; at most `max` characters.
fn validate_pattern(pattern: &str, max: usize, dots: bool) -> Result<(), String> {
    let allowed = if dots {
        "lowercase letters, digits, `-`, `.` and `*`"
    } else {
        "lowercase letters, digits, `-` and `*`"
    };
    if pattern.is_empty() || pattern.len() > max {
        return Err(format!(
            "pattern `{pattern}` must have 1 to {max} characters"
        ));
    }
    let ok = pattern.bytes().all(|b| {
        b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || b == b'-'
            || b == b'*'
            || (dots && b == b'.')
    });
    if !ok {
        return Err(format!(
            "pattern `{}` may contain only {allowed} (no regex; `*` matches any run of characters)",
            pattern.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
