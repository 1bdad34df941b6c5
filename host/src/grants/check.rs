//! The grant checker: does a rule allow this verb on this target?
//!
//! Deny by default, and no wildcards for verbs or resources: a rule names
//! what it allows. The only globs are in namespace and name patterns, and a
//! rule reaches all namespaces only by saying `"*"`. The target given here is
//! already canonical ([`super::request::parse`]), so matching is string
//! comparison.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use super::request::{ApiTarget, Verb, check_dns_subdomain};
use super::{KubernetesGrants, Rule};

pub use super::request::is_cluster_scoped;

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
        let missing_grant = match scope {
            Scope::Namespace(ns) => {
                format!("- {{verbs: [{verb}], resources: [{spelling}], namespaces: [\"{ns}\"]}}")
            }
            Scope::AllNamespaces => {
                format!("- {{verbs: [{verb}], resources: [{spelling}], namespaces: [\"*\"]}}")
            }
            Scope::Cluster => match name {
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

/// The most distinct denials kept; past it, only a count.
pub const MAX_DENIAL_ENTRIES: usize = 1000;

/// The most rules counted, against a bogus index.
const MAX_RULES: usize = 1 << 16;

/// How an adapter used its grants: uses per rule, and the requests denied.
/// Thread-safe; share it behind an `Arc`.
#[derive(Debug, Default)]
pub struct GrantUsage {
    inner: Mutex<UsageInner>,
}

#[derive(Debug, Default)]
struct UsageInner {
    allowed: Vec<u64>,
    denied: HashMap<DenialKey, u64>,
    dropped: u64,
    /// Writes the object rules refused, by rule id (a fixed set).
    object_denied: HashMap<&'static str, u64>,
    /// Requests a host limit refused, by the limit's field (a fixed set).
    limit_refused: HashMap<&'static str, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DenialKey {
    verb: Verb,
    resource: String,
    namespace: Option<String>,
}

impl GrantUsage {
    fn lock(&self) -> std::sync::MutexGuard<'_, UsageInner> {
        // Counters stay meaningful after a panic elsewhere: keep counting.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a decision: a use of the rule, or a denial.
    pub fn record(&self, verb: Verb, target: &ApiTarget, decision: &Decision) {
        match decision {
            Decision::Allow { rule } | Decision::AllowIfClaimed { rule } => {
                self.record_allowed(*rule)
            }
            Decision::Deny(_) => self.record_denied(verb, target),
        }
    }

    /// Records one use of rule `rule`.
    pub fn record_allowed(&self, rule: usize) {
        if rule >= MAX_RULES {
            return;
        }
        let mut inner = self.lock();
        if inner.allowed.len() <= rule {
            inner.allowed.resize(rule + 1, 0);
        }
        inner.allowed[rule] += 1;
    }

    /// Records one denied request.
    pub fn record_denied(&self, verb: Verb, target: &ApiTarget) {
        let key = DenialKey {
            verb,
            resource: target.grant_spelling(),
            namespace: target.namespace.clone(),
        };
        let mut inner = self.lock();
        let full = inner.denied.len() >= MAX_DENIAL_ENTRIES;
        match inner.denied.get_mut(&key) {
            Some(n) => *n += 1,
            None if full => inner.dropped += 1,
            None => {
                inner.denied.insert(key, 1);
            }
        }
    }

    /// Records a write the object rules refused: a denial of the request,
    /// and one of object rule `rule` (`pods.baseline`).
    pub fn record_object_denied(&self, verb: Verb, target: &ApiTarget, rule: &'static str) {
        self.record_denied(verb, target);
        *self.lock().object_denied.entry(rule).or_insert(0) += 1;
    }

    /// Records a request refused by a host limit rather than a grant:
    /// `limit` is the field that would let it through
    /// (`kubernetes.max_body_bytes`).
    pub fn record_limit(&self, limit: &'static str) {
        *self.lock().limit_refused.entry(limit).or_insert(0) += 1;
    }

    /// The usage report: each rule of `grants` with its uses, and the
    /// denials, most frequent first.
    pub fn report(&self, grants: &KubernetesGrants) -> GrantReport {
        let inner = self.lock();
        let rules = grants
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let uses = inner.allowed.get(index).copied().unwrap_or(0);
                RuleUsage {
                    index,
                    rule: rule.clone(),
                    uses,
                    used: uses > 0,
                }
            })
            .collect();
        let mut denials: Vec<DenialCount> = inner
            .denied
            .iter()
            .map(|(k, &count)| DenialCount {
                verb: k.verb,
                resource: k.resource.clone(),
                namespace: k.namespace.clone(),
                count,
            })
            .collect();
        denials.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| {
                (&a.resource, &a.namespace, a.verb).cmp(&(&b.resource, &b.namespace, b.verb))
            })
        });
        let mut object_denials: Vec<ObjectDenialCount> = inner
            .object_denied
            .iter()
            .map(|(rule, &count)| ObjectDenialCount {
                rule: (*rule).to_string(),
                count,
            })
            .collect();
        object_denials.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.rule.cmp(&b.rule)));
        let mut report = GrantReport {
            rules,
            denials,
            denials_dropped: inner.dropped,
            object_denials,
            limit_refusals: Vec::new(),
        };
        for (limit, &count) in &inner.limit_refused {
            report.add_limit_refusals(limit, count);
        }
        report
    }
}

/// Which grants an adapter used and which requests were denied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantReport {
    /// Every rule, in order, with its use count.
    pub rules: Vec<RuleUsage>,
    /// Denied requests, aggregated, most frequent first.
    pub denials: Vec<DenialCount>,
    /// Denials not listed because [`MAX_DENIAL_ENTRIES`] distinct ones were
    /// already kept.
    pub denials_dropped: u64,
    /// Writes the object rules refused, by rule, most frequent first.
    pub object_denials: Vec<ObjectDenialCount>,
    /// Requests and streams a host limit refused, by the limit's field,
    /// most frequent first: raise the field, or find why the adapter asks
    /// for so much.
    pub limit_refusals: Vec<LimitRefusalCount>,
}

impl GrantReport {
    /// Counts `count` more refusals by `limit`, keeping the order.
    pub fn add_limit_refusals(&mut self, limit: &str, count: u64) {
        if count == 0 {
            return;
        }
        match self.limit_refusals.iter_mut().find(|r| r.limit == limit) {
            Some(r) => r.count += count,
            None => self.limit_refusals.push(LimitRefusalCount {
                limit: limit.to_string(),
                count,
            }),
        }
        self.limit_refusals
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.limit.cmp(&b.limit)));
    }
}

/// Refusals by one host limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitRefusalCount {
    /// The limit's field: `kubernetes.max_body_bytes`,
    /// `kubernetes.rate.write_bytes_per_second`, `limits.max_streams`,
    /// `limits.stream_buffer_bytes`.
    pub limit: String,
    /// Requests or streams it refused.
    pub count: u64,
}

/// Writes one object rule refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectDenialCount {
    /// The rule's id (`pods.baseline`, `services.types`).
    pub rule: String,
    /// How many.
    pub count: u64,
}

/// One rule's use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleUsage {
    /// Its index in `kubernetes.rules`.
    pub index: usize,
    /// The rule.
    pub rule: Rule,
    /// Requests it allowed.
    pub uses: u64,
    /// Whether it allowed any: an unused rule is a candidate for removal.
    pub used: bool,
}

/// Denied requests with the same verb, resource and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DenialCount {
    /// The verb.
    pub verb: Verb,
    /// The resource, as a grant spells it.
    pub resource: String,
    /// The namespace; none for cluster-scoped and all-namespaces requests.
    pub namespace: Option<String>,
    /// How many.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Grants;
    use crate::grants::request::{ApiRequest, Method, parse};

    const GRANTS: &str = r#"
kubernetes:
  rules:
  - {verbs: [get, list, watch, create, update, patch, delete], resources: [pods, secrets, persistentvolumeclaims], namespaces: ["pando-*"]}
  - {verbs: [get], resources: [pods/log], namespaces: ["pando-*"]}
  - {verbs: [get, list, watch], resources: [pods], namespaces: ["*"]}
  - {verbs: [get, list, watch], resources: [nodes, node.k8s.io/runtimeclasses], cluster: true}
  - {verbs: [create, get, delete], resources: [namespaces], cluster: true, names: ["pando-*"]}
  - {verbs: [get, patch, delete], resources: [persistentvolumes], cluster: true}
"#;

    fn checker() -> Checker {
        let g = Grants::from_text("t", GRANTS).expect("test grants");
        Checker::new(g.kubernetes.as_ref().expect("kubernetes section"))
    }

    fn req(method: Method, path: &str, query: &[(&str, &str)]) -> (Verb, ApiTarget) {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        match parse(method, path, &query) {
            Ok(ApiRequest::Resource { verb, target }) => (verb, target),
            other => panic!("{path}: {other:?}"),
        }
    }

    fn decide(method: Method, path: &str) -> Decision {
        let (verb, target) = req(method, path, &[]);
        checker().check(verb, &target, None)
    }

    fn denial(d: Decision) -> Denial {
        match d {
            Decision::Deny(d) => d,
            other => panic!("expected a denial, got {other:?}"),
        }
    }

    #[test]
    fn a_resource_kubernetes_does_not_serve_proposes_no_grant() {
        // Found by the `grant_check` fuzz target: the denial proposed a rule
        // the grants refuse at load.
        let d = denial(decide(
            Method::Post,
            "/apis/rbac.authorization.k8s.io/v1/namespac",
        ));
        assert!(
            d.missing_grant.starts_with("# none:"),
            "{}",
            d.missing_grant
        );
        assert!(d.message.contains("no grant can allow it"), "{}", d.message);
    }

    #[test]
    fn patterns() {
        assert!(pattern_matches("pando-*", "pando-x"));
        assert!(pattern_matches("pando-*", "pando-"));
        assert!(!pattern_matches("pando-*", "default"));
        assert!(!pattern_matches("pando-*", "xpando-x"));
        assert!(pattern_matches("*", "anything"));
        assert!(pattern_matches("*-edge", "pando-edge"));
        assert!(pattern_matches("a*b*c", "axxbyyc"));
        assert!(!pattern_matches("a*b*c", "axxbyy"));
        assert!(pattern_matches("exact", "exact"));
        assert!(!pattern_matches("exact", "exact2"));
        assert!(!pattern_matches("exact", "exac"));
    }

    #[test]
    fn namespace_by_pattern() {
        assert_eq!(
            decide(Method::Get, "/api/v1/namespaces/pando-x/pods/web"),
            Decision::Allow { rule: 0 }
        );
        let d = denial(decide(
            Method::Delete,
            "/api/v1/namespaces/default/pods/web",
        ));
        assert_eq!(
            d.missing_grant,
            r#"- {verbs: [delete], resources: [pods], namespaces: ["default"]}"#
        );
        assert!(
            d.message
                .contains(r#"delete pods "web" in namespace "default" denied"#),
            "{}",
            d.message
        );
        assert!(d.message.contains("pando-*"), "{}", d.message);
    }

    #[test]
    fn kube_system_secrets_denied() {
        let d = denial(decide(
            Method::Get,
            "/api/v1/namespaces/kube-system/secrets/token",
        ));
        assert_eq!(
            d.missing_grant,
            r#"- {verbs: [get], resources: [secrets], namespaces: ["kube-system"]}"#
        );
        let d = denial(decide(
            Method::Get,
            "/api/v1/namespaces/kube-system/secrets",
        ));
        assert!(d.missing_grant.contains("[list]"), "{}", d.missing_grant);
    }

    #[test]
    fn all_namespaces_needs_star() {
        // pods: rule 2 has "*".
        let (verb, t) = req(Method::Get, "/api/v1/pods", &[("watch", "true")]);
        assert_eq!(checker().check(verb, &t, None), Decision::Allow { rule: 2 });
        // secrets: only pando-*, which must not become a cluster-wide list.
        let d = denial(decide(Method::Get, "/api/v1/secrets"));
        assert_eq!(
            d.missing_grant,
            r#"- {verbs: [list], resources: [secrets], namespaces: ["*"]}"#
        );
        assert!(d.message.contains("all namespaces"), "{}", d.message);
    }

    #[test]
    fn nodes_read_only() {
        assert_eq!(
            decide(Method::Get, "/api/v1/nodes/n1"),
            Decision::Allow { rule: 3 }
        );
        assert_eq!(
            decide(Method::Get, "/api/v1/nodes"),
            Decision::Allow { rule: 3 }
        );
        assert_eq!(
            decide(Method::Get, "/apis/node.k8s.io/v1/runtimeclasses/gvisor"),
            Decision::Allow { rule: 3 }
        );
        let d = denial(decide(Method::Patch, "/api/v1/nodes/n1"));
        assert_eq!(
            d.missing_grant,
            r#"- {verbs: [patch], resources: [nodes], cluster: true, names: ["n1"]}"#
        );
        assert!(
            d.message.contains("verbs [get, list, watch] only"),
            "{}",
            d.message
        );
    }

    #[test]
    fn namespaces_by_name_pattern() {
        let c = checker();
        assert_eq!(
            decide(Method::Get, "/api/v1/namespaces/pando-x"),
            Decision::Allow { rule: 4 }
        );
        assert_eq!(
            decide(Method::Delete, "/api/v1/namespaces/pando-x"),
            Decision::Allow { rule: 4 }
        );
        denial(decide(Method::Delete, "/api/v1/namespaces/default"));
        // A create names the object in the body.
        let (verb, t) = req(Method::Post, "/api/v1/namespaces", &[]);
        assert_eq!(verb, Verb::Create);
        assert_eq!(
            c.check(verb, &t, Some("pando-new")),
            Decision::Allow { rule: 4 }
        );
        let d = denial(c.check(verb, &t, Some("kube-evil")));
        assert!(
            d.missing_grant.contains(r#"names: ["kube-evil"]"#),
            "{}",
            d.missing_grant
        );
        let d = denial(c.check(verb, &t, None));
        assert!(d.message.contains("no name to match"), "{}", d.message);
        // An invalid body name never matches a pattern.
        denial(c.check(verb, &t, Some("pando-x/../kube-system")));
        // The body name counts only for creates.
        let (verb, t) = req(Method::Get, "/api/v1/namespaces", &[]);
        denial(c.check(verb, &t, Some("pando-x")));
    }

    #[test]
    fn persistent_volumes_through_claims() {
        let c = checker();
        for m in [Method::Get, Method::Patch, Method::Delete] {
            assert_eq!(
                decide(m, "/api/v1/persistentvolumes/pv-1"),
                Decision::AllowIfClaimed { rule: 5 },
                "{m}"
            );
        }
        for (m, q) in [
            (Method::Get, None),
            (Method::Get, Some("true")),
            (Method::Delete, None),
        ] {
            let query: Vec<(&str, &str)> = q.map(|v| ("watch", v)).into_iter().collect();
            let (verb, t) = req(m, "/api/v1/persistentvolumes", &query);
            let d = denial(c.check(verb, &t, None));
            assert!(d.message.contains("only by name"), "{}", d.message);
        }
        let (verb, t) = req(Method::Post, "/api/v1/persistentvolumes", &[]);
        denial(c.check(verb, &t, Some("pv-1")));
        // Update is not granted.
        denial(decide(Method::Put, "/api/v1/persistentvolumes/pv-1"));
        assert!(c.claim_namespace_granted("pando-x"));
        assert!(!c.claim_namespace_granted("default"));
    }

    #[test]
    fn subresource_needs_its_own_grant() {
        assert_eq!(
            decide(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log"),
            Decision::Allow { rule: 1 }
        );
        let d = denial(decide(
            Method::Post,
            "/api/v1/namespaces/pando-x/pods/web/exec",
        ));
        assert_eq!(
            d.missing_grant,
            r#"- {verbs: [create], resources: [pods/exec], namespaces: ["pando-x"]}"#
        );
    }

    #[test]
    fn deny_by_default() {
        let c = Checker::new(&KubernetesGrants::default());
        let (verb, t) = req(Method::Get, "/api/v1/namespaces/pando-x/pods", &[]);
        let d = denial(c.check(verb, &t, None));
        assert!(
            d.message.contains("no grant rule allows it"),
            "{}",
            d.message
        );
    }

    #[test]
    fn usage_report() {
        let g = Grants::from_text("t", GRANTS).expect("grants");
        let k = g.kubernetes.as_ref().expect("kubernetes");
        let c = Checker::new(k);
        let usage = GrantUsage::default();
        let (verb, t) = req(Method::Get, "/api/v1/namespaces/pando-x/pods/web", &[]);
        c.check_and_record(&usage, verb, &t, None);
        c.check_and_record(&usage, verb, &t, None);
        let (verb, t) = req(Method::Get, "/api/v1/namespaces/kube-system/secrets/a", &[]);
        c.check_and_record(&usage, verb, &t, None);
        let (verb, t) = req(Method::Get, "/api/v1/namespaces/kube-system/secrets/b", &[]);
        c.check_and_record(&usage, verb, &t, None);
        let report = usage.report(k);
        assert_eq!(report.rules.len(), k.rules.len());
        assert_eq!((report.rules[0].uses, report.rules[0].used), (2, true));
        assert!(!report.rules[1].used);
        assert_eq!(
            report.denials,
            vec![DenialCount {
                verb: Verb::Get,
                resource: "secrets".into(),
                namespace: Some("kube-system".into()),
                count: 2,
            }]
        );
        let json = serde_json::to_value(&report).expect("serializes");
        assert_eq!(json["denials"][0]["verb"], "get");
        assert!(report.object_denials.is_empty());

        let (verb, t) = req(Method::Post, "/api/v1/namespaces/pando-x/pods", &[]);
        usage.record_object_denied(verb, &t, "pods.baseline");
        usage.record_object_denied(verb, &t, "pods.baseline");
        usage.record_object_denied(verb, &t, "pods.node-name");
        let report = usage.report(k);
        assert_eq!(
            report.object_denials,
            vec![
                ObjectDenialCount {
                    rule: "pods.baseline".into(),
                    count: 2
                },
                ObjectDenialCount {
                    rule: "pods.node-name".into(),
                    count: 1
                },
            ]
        );
        assert!(
            report
                .denials
                .iter()
                .any(|d| d.verb == Verb::Create && d.count == 3)
        );
    }

    #[test]
    fn usage_denials_are_capped() {
        let usage = GrantUsage::default();
        for i in 0..(MAX_DENIAL_ENTRIES + 5) {
            let (verb, t) = req(
                Method::Get,
                &format!("/api/v1/namespaces/ns-{i}/secrets"),
                &[],
            );
            usage.record_denied(verb, &t);
        }
        let report = usage.report(&KubernetesGrants::default());
        assert_eq!(report.denials.len(), MAX_DENIAL_ENTRIES);
        assert_eq!(report.denials_dropped, 5);
    }

    #[test]
    fn except_holds_for_cluster_rules_without_names() {
        // Found by the `grant_check` fuzz target: a cluster rule without
        // `names` ignored its `except`.
        let g = Grants::from_text(
            "t",
            "kubernetes:\n  rules:\n  - {verbs: [get, delete, list], resources: [namespaces], \
             cluster: true, except: [pando-system, kube-*]}\n",
        )
        .expect("grants");
        let c = Checker::new(g.kubernetes.as_ref().expect("kubernetes section"));
        let decide = |method, path: &str| {
            let (verb, t) = req(method, path, &[]);
            c.check(verb, &t, None)
        };
        assert_eq!(
            decide(Method::Get, "/api/v1/namespaces/pando-x"),
            Decision::Allow { rule: 0 }
        );
        denial(decide(Method::Delete, "/api/v1/namespaces/kube-system"));
        denial(decide(Method::Delete, "/api/v1/namespaces/pando-system"));
        // A list would show the excepted ones too.
        denial(decide(Method::Get, "/api/v1/namespaces"));
    }
}
