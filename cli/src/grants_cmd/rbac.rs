//! `pando-host grants rbac`: the RBAC objects exactly the grants need, as
//! YAML, so that the RBAC file is generated from the grants and never kept
//! by hand beside them (docs/grants.md, "RBAC from the grants").
//!
//! Where each grant rule lands:
//! - cluster-scoped rules and rules for every namespace (`*`): the
//!   ClusterRole `NAME`, bound cluster-wide to the identity;
//! - rules for namespace patterns (`pando-*`), and for exact namespaces such
//!   a pattern matches (the adapter makes them): the ClusterRole
//!   `NAME-namespace`, which the adapter binds to itself in each namespace it
//!   makes (RBAC has no namespace patterns);
//! - rules for other exact namespaces (`pando-system`): a Role `NAME-NS`
//!   there, and its RoleBinding;
//! - the adapter's first write in a namespace it made, its own RoleBinding,
//!   comes before any binding there: `create` on RoleBindings of a pattern
//!   rule is cluster-wide, with `bind` on the roles the object rules let it
//!   bind (`kubernetes.objects.role_bindings`).
//!
//! RBAC has no patterns and no exceptions: where a grant has them RBAC
//! allows more (every name, every namespace the role is bound in) and the
//! host narrows each request to the grants.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use pando_host::grants::check::pattern_matches;
use pando_host::grants::objects::schema::Subject;
use pando_host::grants::rbac::{RbacResource, RbacRule, is_exact};
use pando_host::grants::request::Verb;

use super::yaml::{RBAC_GROUP, binding, flow, role, scalar, subjects};
use pando_host::grants::{KubernetesGrants, Rule};

/// Verbs in the order RBAC rules list them: the grants' verbs, then
/// `bind`, RBAC's own.
fn verbs() -> impl Iterator<Item = &'static str> {
    Verb::ALL.into_iter().map(Verb::as_str).chain(["bind"])
}

fn verb_name(rank: usize) -> &'static str {
    verbs().nth(rank).unwrap_or("bind")
}

/// What to generate for.
#[derive(Debug, Clone)]
pub struct RbacOptions {
    /// The roles' and bindings' name; the namespace role is `NAME-namespace`.
    pub name: String,
    /// Who the bindings name: the adapter's identity.
    pub subjects: Vec<Subject>,
    /// Print this ServiceAccount too (it is the identity).
    pub service_account: Option<Subject>,
    /// The command line that generated it, for the header.
    pub command: String,
}

/// Where a permission lands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Home {
    /// The ClusterRole `NAME`, bound cluster-wide.
    Cluster,
    /// The ClusterRole `NAME-namespace`, bound by the adapter per namespace.
    PerNamespace,
    /// A Role `NAME` in this namespace.
    Role(String),
}

/// Verbs on one resource (and names) in one home, and the grant rules they
/// come from.
#[derive(Debug)]
struct Entry {
    home: Home,
    resource: RbacResource,
    names: Vec<String>,
    verbs: BTreeSet<usize>,
    sources: BTreeSet<usize>,
}

/// The RBAC permissions of the grants, by home, in the order written.
#[derive(Debug, Default)]
struct Plan {
    entries: Vec<Entry>,
    /// The roles bound with `bind` (the object rules' roles), when the
    /// grants write bindings at all.
    bind: Vec<String>,
}

impl Plan {
    fn add(
        &mut self,
        home: Home,
        resource: &RbacResource,
        names: &[String],
        verb: &str,
        rule: usize,
    ) {
        let Some(v) = verbs().position(|x| x == verb) else {
            return;
        };
        let i = match self
            .entries
            .iter()
            .position(|e| e.home == home && &e.resource == resource && e.names == names)
        {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    home,
                    resource: resource.clone(),
                    names: names.to_vec(),
                    verbs: BTreeSet::new(),
                    sources: BTreeSet::new(),
                });
                self.entries.len() - 1
            }
        };
        self.entries[i].verbs.insert(v);
        self.entries[i].sources.insert(rule);
    }

    fn homes(&self) -> Vec<Home> {
        let mut homes = vec![];
        for e in &self.entries {
            if !homes.contains(&e.home) {
                homes.push(e.home.clone());
            }
        }
        if !self.bind.is_empty() && !homes.contains(&Home::Cluster) {
            homes.push(Home::Cluster);
        }
        // The cluster role, the namespace role, then each namespace's Role.
        homes.sort_by_key(|h| match h {
            Home::Cluster => 0,
            Home::PerNamespace => 1,
            Home::Role(_) => 2,
        });
        homes
    }
}

/// Whether an exact namespace is one of the adapter's own: matched by a
/// pattern rule, not excepted there.
fn made_by_adapter(grants: &KubernetesGrants, ns: &str) -> bool {
    grants.rules.iter().any(|r| {
        r.namespaces
            .iter()
            .any(|p| !is_exact(p) && p != "*" && pattern_matches(p, ns))
            && !r.except.iter().any(|p| pattern_matches(p, ns))
    })
}

fn is_binding(resource: &RbacResource) -> bool {
    resource.api_group == RBAC_GROUP
        && matches!(
            resource.resource.as_str(),
            "rolebindings" | "clusterrolebindings"
        )
}

fn plan_rule(grants: &KubernetesGrants, rule: &RbacRule<'_>, plan: &mut Plan) {
    let names: Vec<String> =
        if !rule.rule.names.is_empty() && rule.rule.names.iter().all(|n| is_exact(n)) {
            rule.rule.names.clone()
        } else {
            vec![]
        };
    for resource in &rule.resources {
        for verb in &rule.verbs {
            if rule.rule.cluster {
                if changes_own_namespace(rule, resource, verb) {
                    plan.add(Home::PerNamespace, resource, &[], verb, rule.index);
                    continue;
                }
                // RBAC never allows a create by name: it has none yet.
                let names = if *verb == "create" {
                    &[][..]
                } else {
                    &names[..]
                };
                plan.add(Home::Cluster, resource, names, verb, rule.index);
                continue;
            }
            if rule.all_namespaces() {
                plan.add(Home::Cluster, resource, &[], verb, rule.index);
                continue;
            }
            for ns in &rule.rule.namespaces {
                let home = if !is_exact(ns) || made_by_adapter(grants, ns) {
                    if *verb == "create" && resource.resource == "rolebindings" {
                        // Its own binding comes first in a namespace it made.
                        Home::Cluster
                    } else if *verb == "create" && writes_ceiling(grants, resource) {
                        // The host writes the ceiling right after the
                        // namespace is made, before any binding is there.
                        Home::Cluster
                    } else {
                        Home::PerNamespace
                    }
                } else {
                    Home::Role(ns.clone())
                };
                plan.add(home, resource, &[], verb, rule.index);
            }
        }
    }
}

/// Whether `verb` on a namespace the rule names by pattern (`pando-*`)
/// changes or removes it. RBAC has no name patterns, but a namespace is
/// in itself: a RoleBinding in namespace `x` that grants `delete` on
/// `namespaces` lets its subject delete `x`, and no other. So these verbs
/// go in the namespace role, which the adapter binds only in the
/// namespaces it made, rather than cluster-wide on every namespace.
fn changes_own_namespace(rule: &RbacRule<'_>, resource: &RbacResource, verb: &str) -> bool {
    resource.api_group.is_empty()
        && resource.resource == "namespaces"
        && matches!(verb, "delete" | "update" | "patch")
        && rule.rule.names.iter().any(|n| !is_exact(n))
}

/// Whether `resource` is one the host writes as a namespace's ceiling
/// (`kubernetes.ceilings`, the ResourceQuota and LimitRange
/// `pando-ceiling`), with the adapter's identity, the moment the namespace
/// is made.
fn writes_ceiling(grants: &KubernetesGrants, resource: &RbacResource) -> bool {
    !grants.ceilings.is_empty()
        && resource.api_group.is_empty()
        && matches!(resource.resource.as_str(), "resourcequotas" | "limitranges")
}

fn plan(grants: &KubernetesGrants) -> Plan {
    let mut plan = Plan::default();
    let mut writes_bindings = false;
    for rule in grants.rbac_rules() {
        writes_bindings |= rule.resources.iter().any(is_binding)
            && rule
                .verbs
                .iter()
                .any(|v| matches!(*v, "create" | "update" | "patch"));
        plan_rule(grants, &rule, &mut plan);
    }
    if writes_bindings {
        plan.bind = grants
            .objects
            .role_bindings
            .iter()
            .map(|b| b.role.clone())
            .collect();
    }
    plan
}

/// What a grant rule narrows that RBAC cannot (`namespaces pando-*
/// except pando-system`, `names pando-*`, `namespace pando-edge`), if
/// anything.
fn narrowing(rule: &Rule, home: &Home) -> Option<String> {
    let plural = |one: &str, list: &[String]| {
        let s = if list.len() == 1 { "" } else { "s" };
        format!("{one}{s} {}", list.join(", "))
    };
    let scope = match home {
        Home::PerNamespace if !rule.cluster && rule.namespaces.iter().all(|n| is_exact(n)) => {
            Some(plural("namespace", &rule.namespaces))
        }
        Home::Cluster if !rule.cluster && !rule.namespaces.iter().any(|n| n == "*") => {
            Some(plural("namespace", &rule.namespaces))
        }
        _ if rule.names.iter().any(|n| !is_exact(n)) => Some(plural("name", &rule.names)),
        _ => None,
    };
    let except = (!rule.except.is_empty() && !matches!(home, Home::PerNamespace))
        .then(|| format!("except {}", rule.except.join(", ")));
    match (scope, except) {
        (Some(s), Some(e)) => Some(format!("{s} {e}")),
        (s, e) => s.or(e),
    }
}

/// The comment naming the grant rules an RBAC rule comes from, and what the
/// host narrows.
fn sources(grants: &KubernetesGrants, sources: &BTreeSet<usize>, home: &Home) -> String {
    let list: Vec<String> = sources.iter().map(|i| format!("[{i}]")).collect();
    let mut out = format!("# kubernetes.rules{}", list.join(", "));
    let narrowed: Vec<String> = sources
        .iter()
        .filter_map(|i| narrowing(grants.rules.get(*i)?, home).map(|n| format!("[{i}] to {n}")))
        .collect();
    if !narrowed.is_empty() {
        out += &format!("; the host narrows {}", narrowed.join("; "));
    }
    out
}

/// The `rules:` of one role: entries with the same group, names and verbs
/// share a rule.
fn role_rules(grants: &KubernetesGrants, plan: &Plan, home: &Home, bind: &[String]) -> String {
    let mut groups: Vec<(usize, Vec<&Entry>)> = vec![];
    for (i, e) in plan
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| &e.home == home)
    {
        match groups.iter_mut().find(|(_, g)| {
            g[0].resource.api_group == e.resource.api_group
                && g[0].names == e.names
                && g[0].verbs == e.verbs
        }) {
            Some((_, g)) => g.push(e),
            None => groups.push((i, vec![e])),
        }
    }
    let mut out = String::from("rules:\n");
    for (_, group) in &groups {
        let first = group[0];
        let from: BTreeSet<usize> = group
            .iter()
            .flat_map(|e| e.sources.iter().copied())
            .collect();
        let _ = writeln!(out, "- apiGroups: {}", flow([&first.resource.api_group]));
        let _ = writeln!(out, "  {}", sources(grants, &from, home));
        let _ = writeln!(
            out,
            "  resources: {}",
            flow(group.iter().map(|e| &e.resource.resource))
        );
        let _ = writeln!(
            out,
            "  verbs: {}",
            flow(first.verbs.iter().map(|v| verb_name(*v)))
        );
        if !first.names.is_empty() {
            let _ = writeln!(out, "  resourceNames: {}", flow(&first.names));
        }
    }
    if !bind.is_empty() {
        let _ = writeln!(out, "- apiGroups: {}", flow([RBAC_GROUP]));
        out.push_str(
            "  # Binding a role needs `bind` on it: the roles kubernetes.objects.role_bindings names.\n",
        );
        let _ = writeln!(out, "  resources: {}", flow(["clusterroles"]));
        let _ = writeln!(out, "  verbs: {}", flow(["bind"]));
        let _ = writeln!(out, "  resourceNames: {}", flow(bind));
    }
    out
}

/// Whether the object rules let the adapter bind `role` to every subject.
fn may_bind_itself(grants: &KubernetesGrants, role: &str, who: &[Subject]) -> bool {
    grants
        .objects
        .role_bindings
        .iter()
        .any(|b| b.role == role && who.iter().all(|s| b.subjects.contains(s)))
}

/// What heads the stream: how it was made, and how far RBAC can follow the
/// grants.
fn preamble(command: &str) -> String {
    format!(
        "# Generated from the grants by `{command}`:\n\
         # do not edit; change the grants and generate it again (docs/grants.md, \"RBAC from the grants\").\n\
         # Each rule names the grant rules it comes from. RBAC has no namespace or name patterns and no\n\
         # exceptions: where a grant has them RBAC allows more, and the host narrows every request to the\n\
         # grants.\n"
    )
}

/// The role for the namespaces the grants name by pattern, saying who binds
/// it in each: the adapter itself when its grants let it, else the operator
/// (and a note says so).
fn namespace_role(
    grants: &KubernetesGrants,
    plan: &Plan,
    home: &Home,
    options: &RbacOptions,
    ns_role: &str,
    notes: &mut Vec<String>,
) -> String {
    let name = &options.name;
    let bound = if may_bind_itself(grants, ns_role, &options.subjects) {
        format!(
            "# The adapter binds it to itself (RoleBinding `{name}`) in each namespace it makes, as\n\
             # kubernetes.objects.role_bindings lets it. Never bound cluster-wide.\n"
        )
    } else {
        notes.push(format!(
            "kubernetes.objects.role_bindings does not let the adapter bind `{ns_role}` to \
             its identity, so nothing binds it: bind it in each namespace the grants' \
             patterns name, or add {{role: {ns_role}, subjects: [its identity]}} there"
        ));
        format!(
            "# The grants do not let the adapter bind it (kubernetes.objects.role_bindings): bind it\n\
             # (RoleBinding `{name}`) in each such namespace. Never cluster-wide.\n"
        )
    };
    let mut doc = String::from(
        "# Inside the namespaces the grants name by pattern, and the ones those patterns match.\n",
    );
    doc.push_str(&bound);
    doc += &role(
        "ClusterRole",
        ns_role,
        None,
        &role_rules(grants, plan, home, &[]),
    );
    doc
}

/// The RBAC objects the grants need, as one YAML stream; and notes for the
/// operator (what the grants leave for them to do).
pub fn generate(grants: &KubernetesGrants, options: &RbacOptions) -> (String, Vec<String>) {
    let plan = plan(grants);
    let name = &options.name;
    let ns_role = format!("{name}-namespace");
    let who = subjects(&options.subjects);
    let mut notes = vec![];
    let mut docs: Vec<String> = vec![];
    let mut header = preamble(&options.command);
    if let Some(sa) = &options.service_account {
        let ns = sa.namespace.as_deref().unwrap_or("default");
        let _ = write!(
            header,
            "# The adapter's identity.\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {}\n  namespace: {}\n",
            scalar(&sa.name),
            scalar(ns)
        );
        docs.push(std::mem::take(&mut header));
    }
    for home in plan.homes() {
        match &home {
            Home::Cluster => {
                let mut doc = std::mem::take(&mut header);
                doc.push_str(
                    "# Cluster-wide: cluster-scoped objects, every namespace's, and the adapter's own binding\n\
                     # in each namespace it makes (made before any role of its is bound there).\n",
                );
                doc += &role(
                    "ClusterRole",
                    name,
                    None,
                    &role_rules(grants, &plan, &home, &plan.bind),
                );
                docs.push(doc);
                docs.push(binding(
                    "ClusterRoleBinding",
                    name,
                    None,
                    "ClusterRole",
                    &who,
                ));
            }
            Home::PerNamespace => {
                let mut doc = std::mem::take(&mut header);
                doc += &namespace_role(grants, &plan, &home, options, &ns_role, &mut notes);
                docs.push(doc);
            }
            Home::Role(ns) => {
                let mut doc = std::mem::take(&mut header);
                // Named for its namespace: `NAME` there may be the adapter's own
                // binding of its namespace role.
                let role_name = format!("{name}-{ns}");
                let _ = writeln!(doc, "# Inside `{ns}`, which the grants name exactly.");
                doc += &role(
                    "Role",
                    &role_name,
                    Some(ns),
                    &role_rules(grants, &plan, &home, &[]),
                );
                docs.push(doc);
                docs.push(binding("RoleBinding", &role_name, Some(ns), "Role", &who));
            }
        }
    }
    if docs.is_empty() {
        notes.push("the grants allow no Kubernetes request: no RBAC is needed".into());
        docs.push(header);
    }
    (docs.join("---\n"), notes)
}

#[cfg(test)]
mod tests;
