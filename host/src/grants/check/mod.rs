//! The grant checker: does a rule allow this verb on this target?
//!
//! Deny by default, and no wildcards for verbs or resources: a rule names
//! what it allows. The only globs are in namespace and name patterns, and a
//! rule reaches all namespaces only by saying `"*"`. The target given here is
//! already canonical ([`super::request::parse`]), so matching is string
//! comparison.

use serde::Serialize;

use super::request::{ApiTarget, Verb, check_dns_subdomain};
use super::{KubernetesGrants, Rule};

pub use super::request::is_cluster_scoped;
pub use usage::{
    DenialCount, GrantReport, GrantUsage, LimitRefusalCount, MAX_DENIAL_ENTRIES, ObjectDenialCount,
    RuleUsage,
};

#[cfg(test)]
mod tests;
mod usage;

/// Whether `pattern` matches all of `text`: `*` matches any run of
/// characters (including none); everything else matches itself.
pub fn pattern_matches(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and where in the text it began matching: the
    // classic linear-backtracking glob, no recursion, no regex.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// Pando's own namespace, which a pattern over app namespaces leaves out.
pub const PANDO_SYSTEM: &str = "pando-system";

/// The namespaces a proposed grant names for a request in `ns`, as the
/// grants file's flow YAML: `["pando-*"], except: ["pando-system"]` for one
/// of Pando's app namespaces (`pando-<app>`: an adapter that reaches one
/// app's namespace reaches every app's), `["NS"]` otherwise.
pub fn namespace_pattern(ns: &str) -> String {
    match ns.strip_prefix("pando-") {
        Some(app) if !app.is_empty() && ns != PANDO_SYSTEM => {
            format!("[\"pando-*\"], except: [\"{PANDO_SYSTEM}\"]")
        }
        _ => format!("[\"{ns}\"]"),
    }
}

/// The grant rule proposed for `verb` on `resource` (as a grant spells it)
/// in namespace `ns`, or across all namespaces for `None`: one line for
/// `kubernetes.rules`, over the namespace pattern of [`namespace_pattern`].
pub fn proposed_rule(verb: Verb, resource: &str, ns: Option<&str>) -> String {
    let namespaces = ns.map_or_else(|| "[\"*\"]".to_string(), namespace_pattern);
    format!("- {{verbs: [{verb}], resources: [{resource}], namespaces: {namespaces}}}")
}

/// A refused request, for the adapter and the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// What was refused and why.
    pub message: String,
    /// The grant rule that would allow it, as a line for the grants file.
    pub missing_grant: String,
}

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed by rule `rule` (its index in `kubernetes.rules`).
    Allow {
        /// The first rule that allows it.
        rule: usize,
    },
    /// A PersistentVolume by name, allowed by rule `rule` only if the PV is
    /// bound to a claim in a granted namespace: the caller reads the PV's
    /// `spec.claimRef.namespace` and asks
    /// [`Checker::claim_namespace_granted`].
    AllowIfClaimed {
        /// The rule that allows it, claim permitting.
        rule: usize,
    },
    /// Refused.
    Deny(Denial),
}

/// Where a request reaches, for matching against a rule's scope.
#[derive(Debug, Clone, Copy)]
enum Scope<'a> {
    Namespace(&'a str),
    AllNamespaces,
    Cluster,
}

/// Checks requests against an adapter's Kubernetes grants.
#[derive(Debug, Clone)]
pub struct Checker {
    rules: Vec<Rule>,
}

impl Checker {
    /// A checker for these grants (already validated at load).
    pub fn new(grants: &KubernetesGrants) -> Self {
        Checker {
            rules: grants.rules.clone(),
        }
    }

    /// Checks `verb` on `target`. `body_name` is the request body's
    /// `metadata.name`, used only for a `create` whose path has no name
    /// (a cluster-scoped create is matched against `names` with it); pass
    /// `None` otherwise.
    pub fn check(&self, verb: Verb, target: &ApiTarget, body_name: Option<&str>) -> Decision {
        let spelling = target.grant_spelling();
        let name = match (&target.name, body_name) {
            (Some(n), _) => Some(n.as_str()),
            // A malformed body name is refused by the API server anyway;
            // it must not match a pattern here.
            (None, Some(n)) if verb == Verb::Create && check_dns_subdomain(n).is_ok() => Some(n),
            _ => None,
        };
        let is_pv = target.group.is_empty() && target.resource == "persistentvolumes";
        if is_pv && target.name.is_none() {
            return Decision::Deny(Denial {
                message: format!(
                    "{verb} {target} denied: PersistentVolumes are reached only by name, through their \
                     claim (get, update, patch or delete one PV bound to a claim in a granted \
                     namespace); {verb} of PVs is never granted"
                ),
                missing_grant: "# none: grant get/patch/delete on persistentvolumes (cluster: true) and \
                                persistentvolumeclaims in the claims' namespaces, and reach PVs by name"
                    .into(),
            });
        }
        let scope = match &target.namespace {
            Some(ns) => Scope::Namespace(ns),
            None if target.name.is_some() || target.is_cluster_scoped() => Scope::Cluster,
            None => Scope::AllNamespaces,
        };
        for (i, rule) in self.rules.iter().enumerate() {
            if rule_allows(rule, verb, &spelling, scope, name) {
                return if is_pv {
                    Decision::AllowIfClaimed { rule: i }
                } else {
                    Decision::Allow { rule: i }
                };
            }
        }
        Decision::Deny(self.denial(verb, target, &spelling, scope, name))
    }

    /// [`Checker::check`], recording the outcome in `usage`. A PV's
    /// `AllowIfClaimed` is recorded as a use of its rule; record a failed
    /// claim check with [`GrantUsage::record_denied`].
    pub fn check_and_record(
        &self,
        usage: &GrantUsage,
        verb: Verb,
        target: &ApiTarget,
        body_name: Option<&str>,
    ) -> Decision {
        let decision = self.check(verb, target, body_name);
        usage.record(verb, target, &decision);
        decision
    }

    /// Whether some rule grants `persistentvolumeclaims` in namespace `ns`:
    /// a PV bound to a claim there may be reached (DESIGN §3).
    pub fn claim_namespace_granted(&self, ns: &str) -> bool {
        self.rules.iter().any(|r| {
            !r.cluster
                && r.resources.iter().any(|s| s == "persistentvolumeclaims")
                && within(r, &r.namespaces, ns)
        })
    }

    /// The rules, as loaded.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    fn denial(
        &self,
        verb: Verb,
        target: &ApiTarget,
        spelling: &str,
        scope: Scope<'_>,
        name: Option<&str>,
    ) -> Denial {
        // A resource Kubernetes does not serve cannot be granted (the grants
        // refuse it at load): say so rather than propose a rule.
        if let Err(why) = super::known::check_target(
            &target.group,
            &target.resource,
            target.subresource.as_deref(),
        ) {
            return Denial {
                message: format!("{verb} {target} denied: no grant can allow it: {why}"),
                missing_grant: format!("# none: {why}"),
            };
        }
        // Nor can one that no grant may name (the grants refuse it at load
        // too): proposing its rule would propose a file that does not load
        // (found by the `grant_check` fuzz target, `deletecollection bindings`).
        if let Some(why) = super::forbidden::refusal(spelling) {
            return Denial {
                message: format!("{verb} {target} denied: no grant can allow it: {why}"),
                missing_grant: format!("# none: {why}"),
            };
        }
        let missing_grant = match scope {
            Scope::Namespace(ns) => proposed_rule(verb, spelling, Some(ns)),
            Scope::AllNamespaces => proposed_rule(verb, spelling, None),
            // A namespace's own name is matched as a namespace is.
            Scope::Cluster => match name {
                Some(n) if spelling == "namespaces" => format!(
                    "- {{verbs: [{verb}], resources: [{spelling}], cluster: true, names: {}}}",
                    namespace_pattern(n)
                ),
                Some(n) => format!(
                    "- {{verbs: [{verb}], resources: [{spelling}], cluster: true, names: [\"{n}\"]}}"
                ),
                None => format!("- {{verbs: [{verb}], resources: [{spelling}], cluster: true}}"),
            },
        };
        let mut message = format!("{verb} {target} denied: no grant rule allows it");
        if let Some(hint) = self.near_miss(verb, spelling, scope, name) {
            message.push_str(" (");
            message.push_str(&hint);
            message.push(')');
        }
        message.push_str("; to allow it, add to `kubernetes.rules`: ");
        message.push_str(&missing_grant);
        Denial {
            message,
            missing_grant,
        }
    }

    /// Why the closest rule (same verb and resource) did not apply, so the
    /// operator sees whether scope, names or the verb is what is missing.
    fn near_miss(
        &self,
        verb: Verb,
        spelling: &str,
        scope: Scope<'_>,
        name: Option<&str>,
    ) -> Option<String> {
        let same_resource = |r: &&Rule| r.resources.iter().any(|s| s == spelling);
        let with_verb = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| same_resource(r) && r.verbs.iter().any(|v| v == verb.as_str()));
        if let Some((i, r)) = with_verb {
            return Some(match scope {
                Scope::Namespace(_) | Scope::AllNamespaces if r.cluster => {
                    format!("rule {i} grants {verb} on {spelling} for cluster-scoped objects only")
                }
                Scope::Namespace(_) => format!(
                    "rule {i} grants {verb} on {spelling} only in namespaces [{}]",
                    r.namespaces.join(", ")
                ),
                Scope::AllNamespaces => format!(
                    "rule {i} grants {verb} on {spelling} in namespaces [{}], and a request across all \
                     namespaces needs `namespaces: [\"*\"]`",
                    r.namespaces.join(", ")
                ),
                Scope::Cluster if !r.cluster => {
                    format!(
                        "rule {i} grants {verb} on {spelling} in namespaces only, not cluster-wide"
                    )
                }
                Scope::Cluster if name.is_none() => format!(
                    "rule {i} grants {verb} on {spelling} only for names [{}], and this request has no \
                     name to match",
                    r.names.join(", ")
                ),
                Scope::Cluster => format!(
                    "rule {i} grants {verb} on {spelling} only for names [{}]",
                    r.names.join(", ")
                ),
            });
        }
        let (i, r) = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| same_resource(r))?;
        Some(format!(
            "rule {i} grants {spelling} for verbs [{}] only",
            r.verbs.join(", ")
        ))
    }
}

/// Whether one rule allows the request.
fn rule_allows(
    rule: &Rule,
    verb: Verb,
    spelling: &str,
    scope: Scope<'_>,
    name: Option<&str>,
) -> bool {
    if !rule.verbs.iter().any(|v| v == verb.as_str())
        || !rule.resources.iter().any(|r| r == spelling)
    {
        return false;
    }
    match scope {
        Scope::Namespace(ns) => !rule.cluster && within(rule, &rule.namespaces, ns),
        // Only an explicit "*" reaches every namespace: `pando-*` must not
        // turn into a cluster-wide list. A rule with exceptions cannot
        // grant a request that would cross them.
        Scope::AllNamespaces => {
            !rule.cluster && rule.except.is_empty() && rule.namespaces.iter().any(|p| p == "*")
        }
        // `except` holds whether or not the rule names objects: a rule
        // without `names` reaches every name but the excepted ones, and a
        // request without a name (a list, a watch, a deletecollection) would
        // cross the exceptions, so a rule with exceptions cannot grant it.
        Scope::Cluster => {
            rule.cluster
                && match name {
                    Some(n) => {
                        (rule.names.is_empty() || rule.names.iter().any(|p| pattern_matches(p, n)))
                            && !rule.except.iter().any(|p| pattern_matches(p, n))
                    }
                    None => rule.names.is_empty() && rule.except.is_empty(),
                }
        }
    }
}

/// `text` matches one of `patterns` and none of the rule's exceptions.
fn within(rule: &Rule, patterns: &[String], text: &str) -> bool {
    patterns.iter().any(|p| pattern_matches(p, text))
        && !rule.except.iter().any(|p| pattern_matches(p, text))
}
