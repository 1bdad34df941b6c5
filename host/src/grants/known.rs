//! The resources of the API groups Kubernetes itself serves, so that a
//! grant naming one that does not exist (`pod` for `pods`, `pods/logs` for
//! `pods/log`) is refused at load rather than loading and never matching a
//! request. Groups outside this table (custom resources) are taken as
//! written: the host cannot know them.

/// Built-in groups written without a dot.
const DOTLESS_GROUPS: &[&str] = &["apps", "batch", "policy", "autoscaling", "extensions"];

/// `(group, resource, subresources)` of the groups checked; `""` is the
/// core group.
const KNOWN: &[(&str, &str, &[&str])] = &[
    ("", "bindings", &[]),
    ("", "componentstatuses", &[]),
    ("", "configmaps", &[]),
    ("", "endpoints", &[]),
    ("", "events", &[]),
    ("", "limitranges", &[]),
    ("", "namespaces", &["finalize", "status"]),
    ("", "nodes", &["proxy", "status"]),
    ("", "persistentvolumeclaims", &["status"]),
    ("", "persistentvolumes", &["status"]),
    (
        "",
        "pods",
        &[
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status",
        ],
    ),
    ("", "podtemplates", &[]),
    ("", "replicationcontrollers", &["scale", "status"]),
    ("", "resourcequotas", &["status"]),
    ("", "secrets", &[]),
    ("", "serviceaccounts", &["token"]),
    ("", "services", &["proxy", "status"]),
    ("apps", "controllerrevisions", &[]),
    ("apps", "daemonsets", &["status"]),
    ("apps", "deployments", &["scale", "status"]),
    ("apps", "replicasets", &["scale", "status"]),
    ("apps", "statefulsets", &["scale", "status"]),
    ("batch", "cronjobs", &["status"]),
    ("batch", "jobs", &["status"]),
    ("policy", "poddisruptionbudgets", &["status"]),
    ("networking.k8s.io", "ingressclasses", &[]),
    ("networking.k8s.io", "ingresses", &["status"]),
    ("networking.k8s.io", "networkpolicies", &[]),
    ("networking.k8s.io", "ipaddresses", &[]),
    ("networking.k8s.io", "servicecidrs", &["status"]),
    ("node.k8s.io", "runtimeclasses", &[]),
    ("rbac.authorization.k8s.io", "clusterrolebindings", &[]),
    ("rbac.authorization.k8s.io", "clusterroles", &[]),
    ("rbac.authorization.k8s.io", "rolebindings", &[]),
    ("rbac.authorization.k8s.io", "roles", &[]),
    ("storage.k8s.io", "csidrivers", &[]),
    ("storage.k8s.io", "csinodes", &[]),
    ("storage.k8s.io", "csistoragecapacities", &[]),
    ("storage.k8s.io", "storageclasses", &[]),
    ("storage.k8s.io", "volumeattachments", &["status"]),
    ("storage.k8s.io", "volumeattributesclasses", &[]),
];

/// Refuses a resource spelling (split at `/`, already well-formed) of a
/// checked group that names no resource or subresource of it, saying what
/// was probably meant.
pub(super) fn check(parts: &[&str]) -> Result<(), String> {
    match parts {
        [resource] => check_target("", resource, None),
        [first, second] if is_group(first) => check_target(first, second, None),
        [resource, sub] => check_target("", resource, Some(sub)),
        [group, resource, sub] => check_target(group, resource, Some(sub)),
        _ => Ok(()),
    }
}

/// As [`check`], for a request's group (empty for the core group),
/// resource and subresource, already told apart by its path.
pub(super) fn check_target(group: &str, resource: &str, sub: Option<&str>) -> Result<(), String> {
    let parts: Vec<&str> = [group, resource]
        .into_iter()
        .filter(|p| !p.is_empty())
        .chain(sub)
        .collect();
    if !group.is_empty() && !is_group(group) {
        // Custom resources' groups have a dot (the API server refuses a
        // CRD's group without one); the dotless ones are Kubernetes' own.
        return Err(format!(
            "`{}`: there is no API group `{group}`: the groups without a dot are {}; any other has one",
            parts.join("/"),
            DOTLESS_GROUPS.join(", ")
        ));
    }
    let in_group: Vec<&(&str, &str, &[&str])> = KNOWN.iter().filter(|k| k.0 == group).collect();
    if in_group.is_empty() {
        return Ok(());
    }
    let group_name = if group.is_empty() {
        "the core API group".to_string()
    } else {
        format!("API group `{group}`")
    };
    let prefix = if group.is_empty() {
        String::new()
    } else {
        format!("{group}/")
    };
    let Some((_, _, subs)) = in_group.iter().find(|k| k.1 == resource) else {
        let hint = closest(resource, in_group.iter().map(|k| k.1))
            .map(|r| format!("; did you mean `{prefix}{r}`?"))
            .unwrap_or_default();
        return Err(format!(
            "`{}` names no resource of {group_name}{hint}",
            parts.join("/")
        ));
    };
    match sub {
        Some(sub) if !subs.contains(&sub) => {
            let hint = closest(sub, subs.iter().copied())
                .map(|s| format!("; did you mean `{prefix}{resource}/{s}`?"))
                .unwrap_or_default();
            Err(format!(
                "`{}`: `{resource}` has no subresource `{sub}`{hint}",
                parts.join("/")
            ))
        }
        _ => Ok(()),
    }
}

pub(super) fn is_group(part: &str) -> bool {
    part.contains('.') || DOTLESS_GROUPS.contains(&part)
}

/// Every spelling of the checked groups a grant may name, as `check` reads
/// them (`pods`, `pods/log`, `apps/deployments/scale`), in table order; the
/// JSON Schema lists them (`super::json_schema`). Some are never grantable
/// all the same (`forbidden`): the caller leaves those out.
pub(super) fn spellings() -> impl Iterator<Item = String> {
    KNOWN.iter().flat_map(|&(group, resource, subs)| {
        let base = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{group}/{resource}")
        };
        std::iter::once(base.clone()).chain(subs.iter().map(move |sub| format!("{base}/{sub}")))
    })
}

/// The groups `check` takes as written, resources unchecked: the dotless
/// built-in groups the table has no rows for (`autoscaling`), for the JSON
/// Schema; any dotted group but [`checked_dotted_groups`] is taken as well.
pub(super) fn unchecked_dotless_groups() -> impl Iterator<Item = &'static str> {
    DOTLESS_GROUPS
        .iter()
        .copied()
        .filter(|g| !KNOWN.iter().any(|k| k.0 == *g))
}

/// The dotted groups whose resources `check` knows (`rbac.authorization.k8s.io`),
/// each once, for the JSON Schema.
pub(super) fn checked_dotted_groups() -> Vec<&'static str> {
    let mut groups: Vec<&str> = KNOWN
        .iter()
        .map(|k| k.0)
        .filter(|g| g.contains('.'))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// The candidate nearest `word`: its plural, or one at most 2 edits away
/// (a typo).
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let plural_of = |c: &str| {
        c == format!("{word}s")
            || c == format!("{word}es")
            || word
                .strip_suffix('y')
                .is_some_and(|stem| c == format!("{stem}ies"))
    };
    candidates
        .map(|c| (if plural_of(c) { 0 } else { distance(word, c) }, c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, for short ASCII words.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_str(s: &str) -> Result<(), String> {
        check(&s.split('/').collect::<Vec<_>>())
    }

    #[test]
    fn built_in_resources_and_subresources_pass() {
        for ok in [
            "pods",
            "pods/log",
            "pods/exec",
            "namespaces",
            "apps/deployments",
            "apps/deployments/scale",
            "networking.k8s.io/networkpolicies",
            "rbac.authorization.k8s.io/rolebindings",
            "node.k8s.io/runtimeclasses",
            "persistentvolumes",
        ] {
            assert_eq!(check_str(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn typos_are_refused_with_what_was_meant() {
        let e = check_str("pod").expect_err("pod");
        assert!(
            e.contains("core API group") && e.contains("did you mean `pods`"),
            "{e}"
        );
        let e = check_str("pods/logs").expect_err("pods/logs");
        assert!(e.contains("did you mean `pods/log`"), "{e}");
        let e = check_str("apps/deployment").expect_err("apps/deployment");
        assert!(e.contains("did you mean `apps/deployments`"), "{e}");
        let e = check_str("networking.k8s.io/networkpolicy").expect_err("np");
        assert!(e.contains("`networking.k8s.io/networkpolicies`"), "{e}");
        let e = check_str("widgets").expect_err("widgets");
        assert!(!e.contains("did you mean"), "nothing near: {e}");
    }

    #[test]
    fn a_request_to_a_dotless_group_kubernetes_does_not_serve_is_refused() {
        let e = check_target("configmaps", "configmaps", None).expect_err("no such group");
        assert!(e.contains("no API group `configmaps`"), "{e}");
        assert_eq!(check_target("apps", "deployments", None), Ok(()));
    }

    #[test]
    fn custom_resources_are_taken_as_written() {
        assert_eq!(check_str("example.com/widgets"), Ok(()));
        assert_eq!(check_str("example.com/widgets/status"), Ok(()));
    }
}
