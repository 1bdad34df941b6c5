//! `pando-host grants check`: what the cluster lets the identity really do,
//! against the grants.
//!
//! - A namespace the grants name exactly, and each existing namespace a
//!   pattern matches (at most `--per-pattern` of them): one
//!   SelfSubjectRulesReview, and every grant of the namespace is looked up
//!   in its rules.
//! - Cluster-scoped rules and rules for every namespace (`*`): one
//!   SelfSubjectAccessReview per verb and resource (and name, where the
//!   rule names objects exactly).
//! - A pattern no existing namespace matches: one SelfSubjectAccessReview
//!   for every namespace; refused there, it is left unchecked (the adapter
//!   gets its rights in a namespace it makes by binding its role there).
//!
//! Reports (a) grants the cluster would refuse: the adapter's requests would
//! get 403 (exit 1), (b) what the reviews show the identity holds beyond the
//! grants (informational), (c) what could not be checked.

use std::collections::BTreeSet;

use super::CheckArgs;
use super::report::{Beyond, CheckReport, Refused, Unchecked, text};
use crate::args::{Format, Global};
use crate::failure::{Failure, Outcome};
use crate::{output, session};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, ResourceRule, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use pando_host::Grants;
use pando_host::grants::KubernetesGrants;
use pando_host::grants::check::{is_cluster_scoped, pattern_matches};
use pando_host::grants::rbac::{RbacResource, RbacRule, is_exact};

/// What the reviews of one namespace said.
struct Reviewed {
    namespace: String,
    rules: Vec<ResourceRule>,
}

/// Runs the check; exit 1 when the cluster would refuse a grant.
pub async fn run(
    global: &Global,
    grants: &Grants,
    kubernetes: &KubernetesGrants,
    args: &CheckArgs,
) -> Outcome {
    let client = session::kubernetes(
        grants,
        global.kubeconfig.as_deref(),
        global.context.as_deref(),
    )
    .await?
    .ok_or_else(|| Failure::input("the grants have no `kubernetes` section"))?;
    let report = check(&client, kubernetes, args.per_pattern).await?;
    match global.output {
        Format::Json => output::write_stdout(&output::json(&report)?)?,
        Format::Yaml => output::write_stdout(&output::yaml(&report)?)?,
        _ => output::write_stdout(&text(&report))?,
    }
    if report.refused.is_empty() {
        Ok(())
    } else {
        Err(Failure::Exit(crate::failure::EXIT_CALL))
    }
}

fn unreachable(e: kube::Error) -> Failure {
    Failure::other(
        "asking the cluster what the identity may do (is --kubeconfig/--context right, and the API server reachable?)",
        e,
    )
}

async fn access(
    client: &Client,
    verb: &str,
    resource: &RbacResource,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Outcome<bool> {
    let (res, sub) = match resource.resource.split_once('/') {
        Some((r, s)) => (r.to_string(), Some(s.to_string())),
        None => (resource.resource.clone(), None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(resource.api_group.clone()),
                resource: Some(res),
                subresource: sub,
                verb: Some(verb.to_string()),
                namespace: namespace.map(str::to_string),
                name: name.map(str::to_string),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(unreachable)?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

async fn rules_in(client: &Client, namespace: &str, report: &mut CheckReport) -> Outcome<Reviewed> {
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec {
            namespace: Some(namespace.to_string()),
        },
        ..SelfSubjectRulesReview::default()
    };
    let answer = Api::<SelfSubjectRulesReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(unreachable)?;
    let status = answer.status.unwrap_or_default();
    if status.incomplete {
        report.unchecked.push(Unchecked {
            rule: None,
            reason: format!(
                "the rules review of namespace `{namespace}` is incomplete ({}): an authorizer \
                 beside RBAC may allow more than it lists",
                status
                    .evaluation_error
                    .as_deref()
                    .unwrap_or("no reason given")
            ),
        });
    }
    Ok(Reviewed {
        namespace: namespace.to_string(),
        rules: status.resource_rules,
    })
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == "*" || x == item)
}

/// Whether a reviewed rule allows `verb` on `resource` (any name).
fn allows(rule: &ResourceRule, verb: &str, resource: &RbacResource) -> bool {
    let resources = rule.resources.as_deref().unwrap_or_default();
    let resource_ok = has(resources, &resource.resource)
        || resource.resource.split_once('/').is_some_and(|(r, s)| {
            resources
                .iter()
                .any(|x| x == &format!("*/{s}") || x == &format!("{r}/*"))
        });
    has(&rule.verbs, verb)
        && has(
            rule.api_groups.as_deref().unwrap_or_default(),
            &resource.api_group,
        )
        && resource_ok
        && rule
            .resource_names
            .as_deref()
            .unwrap_or_default()
            .is_empty()
}

/// The namespaces that exist, or none when the identity may not list them.
async fn existing_namespaces(client: &Client) -> Option<BTreeSet<String>> {
    let list = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
    )
}

/// Where a namespaced rule is checked: the namespaces to review, and the
/// patterns that matched none.
fn places(
    rule: &RbacRule<'_>,
    existing: Option<&BTreeSet<String>>,
    per_pattern: usize,
    report: &mut CheckReport,
) -> (Vec<String>, Vec<String>) {
    let mut namespaces = vec![];
    let mut unmatched = vec![];
    let excepted = |ns: &str| rule.rule.except.iter().any(|p| pattern_matches(p, ns));
    for pattern in &rule.rule.namespaces {
        if is_exact(pattern) {
            match existing {
                Some(e) if !e.contains(pattern) => report.unchecked.push(Unchecked {
                    rule: Some(rule.index),
                    reason: format!("namespace `{pattern}` does not exist (yet)"),
                }),
                _ => namespaces.push(pattern.clone()),
            }
            continue;
        }
        let matching: Vec<&String> = existing
            .into_iter()
            .flatten()
            .filter(|ns| pattern_matches(pattern, ns) && !excepted(ns))
            .collect();
        if matching.len() > per_pattern {
            report.unchecked.push(Unchecked {
                rule: Some(rule.index),
                reason: format!(
                    "{} of the {} namespaces matching `{pattern}` reviewed (--per-pattern)",
                    per_pattern,
                    matching.len()
                ),
            });
        }
        if matching.is_empty() {
            unmatched.push(pattern.clone());
        }
        namespaces.extend(matching.into_iter().take(per_pattern).cloned());
    }
    (namespaces, unmatched)
}

/// Asks the cluster whether the identity may `verb` `resource` everywhere a
/// cluster-wide (or all-namespaces) rule reaches: once, or once per name
/// when the rule names its objects exactly.
async fn check_cluster_wide(
    client: &Client,
    rule: &RbacRule<'_>,
    verb: &str,
    resource: &RbacResource,
    report: &mut CheckReport,
) -> Outcome<()> {
    let scope = if rule.rule.cluster {
        "cluster"
    } else {
        "all-namespaces"
    };
    let names: Vec<Option<&str>> = if !rule.rule.names.is_empty()
        && rule.rule.names.iter().all(|n| is_exact(n))
        && verb != "create"
    {
        rule.rule.names.iter().map(|n| Some(n.as_str())).collect()
    } else {
        vec![None]
    };
    for name in names {
        report.checked += 1;
        if !access(client, verb, resource, None, name).await? {
            report.refused.push(Refused {
                rule: rule.index,
                verb: verb.to_string(),
                resource: resource.spelling(),
                namespace: None,
                scope,
                name: name.map(str::to_string),
            });
        }
    }
    Ok(())
}

/// Asks the cluster about every grant of `grants`.
pub async fn check(
    client: &Client,
    grants: &KubernetesGrants,
    per_pattern: usize,
) -> Outcome<CheckReport> {
    let mut report = CheckReport::default();
    let existing = existing_namespaces(client).await;
    if existing.is_none() {
        report.unchecked.push(Unchecked {
            rule: None,
            reason: "the identity may not list namespaces: namespace patterns were checked for \
                     every namespace only, and exact namespaces as if they existed"
                .into(),
        });
    }
    let mut reviewed: Vec<Reviewed> = vec![];
    for rule in grants.rbac_rules() {
        let cluster_wide = rule.rule.cluster || rule.all_namespaces();
        let (namespaces, unmatched) = if cluster_wide {
            (vec![], vec![])
        } else {
            places(&rule, existing.as_ref(), per_pattern, &mut report)
        };
        for ns in &namespaces {
            if !reviewed.iter().any(|r| &r.namespace == ns) {
                reviewed.push(rules_in(client, ns, &mut report).await?);
            }
        }
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if cluster_wide {
                    check_cluster_wide(client, &rule, verb, resource, &mut report).await?;
                    continue;
                }
                for ns in &namespaces {
                    report.checked += 1;
                    let held = reviewed
                        .iter()
                        .find(|r| &r.namespace == ns)
                        .is_some_and(|r| r.rules.iter().any(|x| allows(x, verb, resource)));
                    if !held {
                        report.refused.push(Refused {
                            rule: rule.index,
                            verb: verb.to_string(),
                            resource: resource.spelling(),
                            namespace: Some(ns.clone()),
                            scope: "namespace",
                            name: None,
                        });
                    }
                }
                for pattern in &unmatched {
                    report.checked += 1;
                    if !access(client, verb, resource, None, None).await? {
                        report.unchecked.push(Unchecked {
                            rule: Some(rule.index),
                            reason: format!(
                                "{verb} {} in namespaces matching `{pattern}`: none exists, and \
                                 it is not allowed in every namespace (the adapter's role must be \
                                 bound in each one it makes)",
                                resource.spelling()
                            ),
                        });
                    }
                }
            }
        }
    }
    if reviewed.is_empty() {
        // The cluster-wide rules show in any namespace's review.
        reviewed.push(rules_in(client, "default", &mut report).await?);
    }
    report.beyond = beyond(grants, &reviewed);
    Ok(report)
}

/// Held by every authenticated identity (`system:basic-user`): never beyond.
fn everyones(api_group: &str, resource: &str) -> bool {
    matches!(
        (api_group, resource),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
        ) | ("authentication.k8s.io", "selfsubjectreviews")
    )
}

/// Whether some grant asks for `verb` on `resource` in `namespace`
/// (cluster-scoped resources: any cluster rule).
fn granted(
    grants: &KubernetesGrants,
    verb: &str,
    resource: &RbacResource,
    namespace: &str,
) -> bool {
    let (base, _) = resource
        .resource
        .split_once('/')
        .unwrap_or((&resource.resource, ""));
    let cluster = is_cluster_scoped(&resource.api_group, base);
    grants.rbac_rules().any(|r| {
        r.verbs.contains(&verb)
            && r.resources.contains(resource)
            && if cluster {
                r.rule.cluster
            } else {
                !r.rule.cluster
                    && r.rule
                        .namespaces
                        .iter()
                        .any(|p| pattern_matches(p, namespace))
                    && !r.rule.except.iter().any(|p| pattern_matches(p, namespace))
            }
    })
}

fn beyond(grants: &KubernetesGrants, reviewed: &[Reviewed]) -> Vec<Beyond> {
    let mut out: Vec<Beyond> = vec![];
    for review in reviewed {
        for rule in &review.rules {
            let groups = rule.api_groups.as_deref().unwrap_or_default();
            let resources = rule.resources.as_deref().unwrap_or_default();
            let names = rule.resource_names.clone().unwrap_or_default();
            for group in groups {
                for res in resources {
                    if everyones(group, res) {
                        continue;
                    }
                    let resource = RbacResource {
                        api_group: group.clone(),
                        resource: res.clone(),
                    };
                    for verb in &rule.verbs {
                        // `bind` and `escalate` are RBAC's own, granted for
                        // the bindings the grants write; a wildcard is
                        // always beyond (no grant has one).
                        if verb == "bind" && resource.resource == "clusterroles" {
                            continue;
                        }
                        if granted(grants, verb, &resource, &review.namespace) {
                            continue;
                        }
                        let key = |b: &Beyond| {
                            b.verb == *verb
                                && b.api_group == *group
                                && b.resource == *res
                                && b.names == names
                        };
                        match out.iter_mut().find(|b| key(b)) {
                            Some(b) => b.namespaces.push(review.namespace.clone()),
                            None => out.push(Beyond {
                                verb: verb.clone(),
                                api_group: group.clone(),
                                resource: res.clone(),
                                names: names.clone(),
                                namespaces: vec![review.namespace.clone()],
                            }),
                        }
                    }
                }
            }
        }
    }
    for b in &mut out {
        b.namespaces.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]) -> ResourceRule {
        let strings = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ResourceRule {
            api_groups: Some(strings(groups)),
            resources: Some(strings(resources)),
            verbs: strings(verbs),
            resource_names: (!names.is_empty()).then(|| strings(names)),
        }
    }

    #[test]
    fn reviewed_rules_match_as_rbac_does_wildcards_and_names_included() {
        let log = RbacResource::from_spelling("pods/log");
        let deployments = RbacResource::from_spelling("apps/deployments");
        assert!(allows(
            &rule(&[""], &["pods/log"], &["get"], &[]),
            "get",
            &log
        ));
        assert!(
            !allows(&rule(&[""], &["pods"], &["get"], &[]), "get", &log),
            "a subresource is its own"
        );
        assert!(allows(&rule(&[""], &["pods/*"], &["*"], &[]), "get", &log));
        assert!(allows(
            &rule(&["*"], &["*"], &["*"], &[]),
            "delete",
            &deployments
        ));
        assert!(
            !allows(
                &rule(&[""], &["deployments"], &["get"], &[]),
                "get",
                &deployments
            ),
            "the group counts"
        );
        assert!(
            !allows(
                &rule(&["apps"], &["deployments"], &["get"], &["web"]),
                "get",
                &deployments
            ),
            "only some names is not every name"
        );
    }

    #[test]
    fn beyond_leaves_out_what_the_grants_ask_and_what_everyone_holds() {
        let grants = Grants::from_text(
            "t",
            "kubernetes:\n  rules:\n  - {verbs: [get], resources: [secrets], namespaces: ['app-*']}\n",
        )
        .expect("grants");
        let k = grants.kubernetes.expect("kubernetes");
        let reviewed = [Reviewed {
            namespace: "app-a".into(),
            rules: vec![
                rule(&[""], &["secrets"], &["get", "delete"], &[]),
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectrulesreviews"],
                    &["create"],
                    &[],
                ),
            ],
        }];
        let found = beyond(&k, &reviewed);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].verb.as_str(), found[0].resource.as_str()),
            ("delete", "secrets")
        );
    }
}
