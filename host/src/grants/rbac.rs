//! Grant rules as Kubernetes RBAC names them: an API group, a resource
//! (`pods`, `pods/log`), verbs, and the rule's scope. What `pando-host grants
//! rbac` writes a ClusterRole from and `pando-host grants check` compares the
//! cluster's answer with.
//!
//! A grant spells a resource `resource`, `group/resource`, or either with
//! `/subresource`; RBAC writes the group apart (`apiGroups: [""]` for the
//! core group) and the subresource joined to its resource (`pods/log`).
//! A two-part spelling is a group and a resource when its first part is an
//! API group (it has a dot, or it is one of Kubernetes' dotless groups), as
//! the checker reads it; else a core resource and its subresource.

use super::{KubernetesGrants, Rule, known};

/// A resource as RBAC names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RbacResource {
    /// The API group; empty for the core group.
    pub api_group: String,
    /// The resource, with `/subresource` when it names one (`pods/log`).
    pub resource: String,
}

impl RbacResource {
    /// The resource of a grant's spelling (`pods/log`, `apps/deployments`,
    /// `apps/deployments/scale`), already validated at load.
    pub fn from_spelling(spelling: &str) -> RbacResource {
        let parts: Vec<&str> = spelling.split('/').collect();
        let (api_group, resource) = match parts.as_slice() {
            [first, second] if known::is_group(first) => (*first, (*second).to_string()),
            [group, resource, sub] => (*group, format!("{resource}/{sub}")),
            _ => ("", spelling.to_string()),
        };
        RbacResource {
            api_group: api_group.to_string(),
            resource,
        }
    }

    /// The grant's spelling again: `group/resource[/sub]`, the core group
    /// unwritten.
    pub fn spelling(&self) -> String {
        if self.api_group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.api_group, self.resource)
        }
    }
}

/// One grant rule, as RBAC would name what it allows.
#[derive(Debug, Clone)]
pub struct RbacRule<'a> {
    /// The rule's index in `kubernetes.rules`.
    pub index: usize,
    /// The rule itself (its scope: `cluster`, `names`, `namespaces`,
    /// `except`).
    pub rule: &'a Rule,
    /// Its verbs, in the order written.
    pub verbs: Vec<&'a str>,
    /// Its resources, in the order written.
    pub resources: Vec<RbacResource>,
}

impl RbacRule<'_> {
    /// Whether the rule reaches every namespace (`namespaces: ["*"]`); with
    /// exceptions, RBAC (which has none) would reach more than the grant.
    pub fn all_namespaces(&self) -> bool {
        !self.rule.cluster && self.rule.namespaces.iter().any(|p| p == "*")
    }
}

impl KubernetesGrants {
    /// The rules as RBAC names what they allow, in the order written.
    pub fn rbac_rules(&self) -> impl Iterator<Item = RbacRule<'_>> {
        self.rules.iter().enumerate().map(|(index, rule)| RbacRule {
            index,
            rule,
            verbs: rule.verbs.iter().map(String::as_str).collect(),
            resources: rule
                .resources
                .iter()
                .map(|r| RbacResource::from_spelling(r))
                .collect(),
        })
    }
}

/// Whether a namespace or name pattern is one exact name (no `*`), which
/// RBAC can say; a pattern it cannot.
pub fn is_exact(pattern: &str) -> bool {
    !pattern.contains('*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> (String, String) {
        let r = RbacResource::from_spelling(s);
        assert_eq!(r.spelling(), s, "round trip");
        (r.api_group, r.resource)
    }

    #[test]
    fn spellings_split_into_group_and_resource_as_the_checker_reads_them() {
        let pair = |g: &str, r: &str| (g.to_string(), r.to_string());
        assert_eq!(split("pods"), pair("", "pods"));
        assert_eq!(split("pods/log"), pair("", "pods/log"));
        assert_eq!(split("apps/deployments"), pair("apps", "deployments"));
        assert_eq!(
            split("apps/deployments/scale"),
            pair("apps", "deployments/scale")
        );
        assert_eq!(
            split("networking.k8s.io/networkpolicies"),
            pair("networking.k8s.io", "networkpolicies")
        );
        assert_eq!(split("example.com/widgets"), pair("example.com", "widgets"));
    }

    #[test]
    fn rules_keep_their_index_scope_and_order() {
        let g = crate::Grants::from_text(
            "t",
            "kubernetes:\n  rules:\n  \
             - {verbs: [get, list], resources: [pods, apps/deployments], namespaces: ['*']}\n  \
             - {verbs: [get], resources: [nodes], cluster: true}\n",
        )
        .expect("grants");
        let k = g.kubernetes.expect("kubernetes");
        let rules: Vec<RbacRule<'_>> = k.rbac_rules().collect();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].verbs, ["get", "list"]);
        assert_eq!(rules[0].resources[1].api_group, "apps");
        assert!(rules[0].all_namespaces());
        assert_eq!(rules[1].index, 1);
        assert!(!rules[1].all_namespaces() && rules[1].rule.cluster);
        assert!(is_exact("pando-edge") && !is_exact("pando-*"));
    }
}
