//! Resources and subresources no grant may name: each reaches past what
//! the object rules and the grants can scope (a node's kubelet, another
//! identity's credentials, a running container's terminal, the cluster's
//! authentication and authorization decisions). A grants document naming
//! one is refused at load, with the reason.

/// `(group, resource, subresource)`; `None` for any resource or for the
/// resource itself.
type Entry = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
);

const NEVER: &[Entry] = &[
    (
        "",
        Some("nodes"),
        Some("proxy"),
        "it reaches the kubelet's API on the node: exec in any pod there, its logs, its metrics",
    ),
    (
        "",
        Some("serviceaccounts"),
        Some("token"),
        "it mints a token for a service account: that identity's access, outside the grants",
    ),
    (
        "",
        Some("pods"),
        Some("ephemeralcontainers"),
        "it adds containers to a running pod that the object rules never see as a pod write",
    ),
    (
        "",
        Some("pods"),
        Some("binding"),
        "it places a pod on a node of the adapter's choosing, bypassing the scheduler",
    ),
    (
        "",
        Some("bindings"),
        None,
        "it places a pod on a node of the adapter's choosing, bypassing the scheduler",
    ),
    ("", Some("users"), None, "it exists only to be impersonated"),
    (
        "",
        Some("groups"),
        None,
        "it exists only to be impersonated",
    ),
    (
        "authentication.k8s.io",
        Some("userextras"),
        None,
        "it exists only to be impersonated",
    ),
    (
        "authentication.k8s.io",
        Some("uids"),
        None,
        "it exists only to be impersonated",
    ),
    (
        "authentication.k8s.io",
        Some("tokenreviews"),
        None,
        "it validates other identities' tokens: an oracle for stolen credentials",
    ),
    (
        "authentication.k8s.io",
        Some("selfsubjectreviews"),
        None,
        "it reveals the host's own identity and groups",
    ),
    (
        "authorization.k8s.io",
        Some("subjectaccessreviews"),
        None,
        "it answers what any identity may do",
    ),
    (
        "authorization.k8s.io",
        Some("localsubjectaccessreviews"),
        None,
        "it answers what any identity may do",
    ),
    (
        "authorization.k8s.io",
        Some("selfsubjectaccessreviews"),
        None,
        "it probes the host's own permissions beyond the grants",
    ),
    (
        "authorization.k8s.io",
        Some("selfsubjectrulesreviews"),
        None,
        "it lists the host's own permissions beyond the grants",
    ),
    (
        "certificates.k8s.io",
        Some("certificatesigningrequests"),
        Some("approval"),
        "it approves certificates: any identity the signer issues",
    ),
    (
        "certificates.k8s.io",
        Some("certificatesigningrequests"),
        Some("status"),
        "it issues certificates: any identity the signer issues",
    ),
    (
        "",
        None,
        Some("attach"),
        "it attaches to a running container's terminal",
    ),
    (
        "",
        None,
        Some("portforward"),
        "it opens connections into a pod past its network policy",
    ),
    (
        "",
        None,
        Some("proxy"),
        "it proxies arbitrary HTTP to a pod, Service or node past its network policy",
    ),
];

/// The refusal of a `spelling` no grant may name, as the grants' load
/// gives it and a denial repeats it (`` `bindings` is never granted: … ``);
/// `None` if it may be granted.
pub(crate) fn refusal(spelling: &str) -> Option<String> {
    never_grantable(spelling).map(|why| format!("`{spelling}` is never granted: {why}"))
}

/// Why `spelling` (a grant's resource, already well-formed) may never be
/// granted; `None` if it may. A two-part spelling is read both ways:
/// `group/resource` and `resource/subresource`.
pub fn never_grantable(spelling: &str) -> Option<&'static str> {
    let parts: Vec<&str> = spelling.split('/').collect();
    // Two parts are read as the checker reads them: `group/resource` when
    // the first is a group (dotted, or a built-in group without dots),
    // else `resource/subresource`. Read both ways, a grant of a custom
    // resource named like a subresource (`example.com/attach`) was refused,
    // while the checker proposed exactly that rule for it (found by the
    // `grant_check` fuzz target).
    let readings: Vec<(&str, &str, Option<&str>)> = match parts.as_slice() {
        [r] => vec![("", r, None)],
        [a, b] if super::known::is_group(a) => vec![(a, b, None)],
        [a, b] => vec![("", a, Some(b))],
        [g, r, s] => vec![(g, r, Some(s))],
        _ => vec![],
    };
    readings.into_iter().find_map(|(g, r, s)| {
        NEVER.iter().find_map(|&(eg, er, es, why)| {
            let resource_matches = match er {
                Some(er) => er == r && eg == g,
                // Any resource, any group.
                None => true,
            };
            (resource_matches && es == s).then_some(why)
        })
    })
}

/// The spellings of the entries that name a group and a resource
/// (`authentication.k8s.io/tokenreviews`), for the JSON Schema to refuse
/// among custom-looking resources (`super::json_schema`).
pub(super) fn never_spellings() -> impl Iterator<Item = String> {
    NEVER.iter().filter_map(|&(group, resource, sub, _)| {
        let resource = resource.filter(|_| !group.is_empty())?;
        Some(match sub {
            Some(sub) => format!("{group}/{resource}/{sub}"),
            None => format!("{group}/{resource}"),
        })
    })
}

/// The subresources never grantable on any resource (`attach`, `proxy`),
/// for the JSON Schema.
pub(super) fn never_subresources() -> impl Iterator<Item = &'static str> {
    NEVER.iter().filter(|e| e.1.is_none()).filter_map(|e| e.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list() {
        for s in [
            "nodes/proxy",
            "serviceaccounts/token",
            "pods/ephemeralcontainers",
            "pods/attach",
            "pods/portforward",
            "pods/proxy",
            "services/proxy",
            "apps/deployments/proxy",
            "users",
            "groups",
            "authentication.k8s.io/userextras",
            "authentication.k8s.io/tokenreviews",
            "authorization.k8s.io/subjectaccessreviews",
            "authorization.k8s.io/selfsubjectaccessreviews",
            "authorization.k8s.io/localsubjectaccessreviews",
            "certificates.k8s.io/certificatesigningrequests/approval",
            "pods/binding",
            "bindings",
        ] {
            assert!(never_grantable(s).is_some(), "{s}");
        }
        for s in [
            // A custom resource named like a forbidden subresource is a
            // resource of its group, as the checker reads it.
            "example.com/attach",
            "example.com/proxy",
            "pods",
            "pods/exec",
            "pods/log",
            "nodes",
            "serviceaccounts",
            "apps/deployments",
            "certificates.k8s.io/certificatesigningrequests",
            "rbac.authorization.k8s.io/rolebindings",
        ] {
            assert_eq!(never_grantable(s), None, "{s}");
        }
    }
}
