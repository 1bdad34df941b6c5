//! Parsing and canonicalizing one Kubernetes API request, before any grant
//! check.
//!
//! The grant checker compares strings, so the path it sees must have exactly
//! one spelling for each object: anything the API server might read
//! differently from us (escapes, relative segments, alternate case, smuggled
//! queries, legacy prefixes) is refused here rather than normalized, so a
//! grant can never be checked against one object while the request reaches
//! another.

use std::fmt;

use serde::Serialize;

/// The request's HTTP method, mirroring the WIT `method` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        })
    }
}

/// A request's verb, as Kubernetes RBAC names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read one named object.
    Get,
    /// Read a collection.
    List,
    /// Watch a collection.
    Watch,
    /// Create an object (`POST`).
    Create,
    /// Replace an object (`PUT`).
    Update,
    /// Patch an object.
    Patch,
    /// Delete one named object.
    Delete,
    /// Delete a collection.
    #[serde(rename = "deletecollection")]
    DeleteCollection,
}

impl Verb {
    /// Every verb, in RBAC's usual order.
    pub const ALL: [Verb; 8] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::DeleteCollection,
    ];

    /// The RBAC name (`get`, `deletecollection`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// The verb with this RBAC name; exact and lowercase only.
    pub fn from_rbac(name: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The object or collection a resource request reaches, canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ApiTarget {
    /// The API group; `""` for the core group (`/api/v1`).
    pub group: String,
    /// The API version (`v1`, `v1beta1`).
    pub version: String,
    /// The resource, plural and lowercase (`pods`).
    pub resource: String,
    /// The subresource (`log`, `status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The namespace in the path; none for cluster-scoped objects and
    /// all-namespaces collections.
    pub namespace: Option<String>,
    /// The object's name; none for a collection.
    pub name: Option<String>,
}

impl ApiTarget {
    /// The resource as a grant spells it: `resource` or `group/resource`,
    /// with `/subresource` appended (`pods/log`, `apps/deployments/scale`).
    pub fn grant_spelling(&self) -> String {
        let mut s = String::with_capacity(self.group.len() + self.resource.len() + 16);
        if !self.group.is_empty() {
            s.push_str(&self.group);
            s.push('/');
        }
        s.push_str(&self.resource);
        if let Some(sub) = &self.subresource {
            s.push('/');
            s.push_str(sub);
        }
        s
    }

    /// Whether the resource is cluster-scoped, by the host's built-in table
    /// (see [`is_cluster_scoped`]).
    pub fn is_cluster_scoped(&self) -> bool {
        is_cluster_scoped(&self.group, &self.resource)
    }
}

impl fmt::Display for ApiTarget {
    /// `pods/log "web" in namespace "pando-x"`, `nodes "n1"`,
    /// `pods in all namespaces`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.grant_spelling())?;
        if let Some(name) = &self.name {
            write!(f, " \"{name}\"")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace \"{ns}\""),
            None if self.is_cluster_scoped() => Ok(()),
            None => f.write_str(" in all namespaces"),
        }
    }
}

/// One parsed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ApiRequest {
    /// A request on a resource, to check against the grants.
    Resource {
        /// The RBAC verb.
        verb: Verb,
        /// What it reaches.
        target: ApiTarget,
    },
    /// `GET` of a harmless, read-only endpoint (`/version`, `/readyz`,
    /// `/livez`, `/healthz`), allowed without a grant.
    NonResource {
        /// The path, one of [`NON_RESOURCE_PATHS`].
        path: String,
    },
}

/// The non-resource endpoints an adapter may `GET` without a grant.
pub const NON_RESOURCE_PATHS: &[&str] = &["/version", "/readyz", "/livez", "/healthz"];

/// The query keys an adapter may send. Every other key could change what is
/// reached or how (`fieldManager` is harmless and kept; keys like
/// `namespace` or `name` are not accepted anywhere).
pub const ALLOWED_QUERY_KEYS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "watch",
    "propagationPolicy",
    "gracePeriodSeconds",
    "dryRun",
    "fieldManager",
    "force",
    "container",
    "follow",
    "previous",
    "tailLines",
    "sinceSeconds",
    "timestamps",
    "limitBytes",
    "pretty",
    "sendInitialEvents",
];

const VALID: &str = "a valid path is `/api/v1/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]` \
     or `/apis/{group}/{version}/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]`, \
     or the same without `namespaces/{namespace}` for cluster-scoped resources and all-namespaces \
     collections; plain lowercase ASCII, no escapes, no query in the path";

/// The longest segment Kubernetes accepts (a DNS subdomain).
const MAX_SEGMENT: usize = 253;

/// Why a request was refused before any grant check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is neither an API path nor an allowed non-resource endpoint.
    #[error(
        "`{path}` is not a Kubernetes API path the host lends (only `/api/v1/…`, `/apis/…` and \
         GET of /version, /readyz, /livez, /healthz): {VALID}"
    )]
    NotAnApiPath {
        /// The path, escaped.
        path: String,
    },
    /// A character that has no place in a canonical path.
    #[error("`{path}` contains {what} at byte {offset}: {VALID}")]
    BadCharacter {
        /// The path, escaped.
        path: String,
        /// The character, described.
        what: String,
        /// Its byte offset.
        offset: usize,
    },
    /// `//`.
    #[error("`{path}` has an empty segment (`//`): {VALID}")]
    EmptySegment {
        /// The path.
        path: String,
    },
    /// A trailing `/`.
    #[error("`{path}` ends with `/`: {VALID}")]
    TrailingSlash {
        /// The path.
        path: String,
    },
    /// `.` or `..`.
    #[error("`{path}` has a relative segment `{segment}`: {VALID}")]
    DotSegment {
        /// The path.
        path: String,
        /// `.` or `..`.
        segment: String,
    },
    /// A segment over 253 characters.
    #[error("`{path}` has a segment longer than {MAX_SEGMENT} characters (`{segment}…`)")]
    SegmentTooLong {
        /// The path, shortened.
        path: String,
        /// The segment's start.
        segment: String,
    },
    /// A group, version, resource, subresource, namespace or name that is
    /// malformed.
    #[error("`{segment}` in `{path}` is not a valid {part}: {why}; {VALID}")]
    BadSegment {
        /// The path.
        path: String,
        /// Which part of the grammar (`group`, `namespace`, …).
        part: &'static str,
        /// The segment.
        segment: String,
        /// What is wrong with it.
        why: String,
    },
    /// More segments than the grammar allows.
    #[error("`{path}` has more segments than an API path allows (extra: `{extra}`): {VALID}")]
    TooManySegments {
        /// The path.
        path: String,
        /// The first extra segment.
        extra: String,
    },
    /// The path stops before naming a resource.
    #[error("`{path}` names no resource: {VALID}")]
    Incomplete {
        /// The path.
        path: String,
    },
    /// The method makes no sense on this path.
    #[error("{method} `{path}` is refused: {why}")]
    BadMethod {
        /// The method.
        method: Method,
        /// The path.
        path: String,
        /// Why.
        why: String,
    },
    /// A query key outside [`ALLOWED_QUERY_KEYS`].
    #[error(
        "query key `{key}` is not allowed: it could change what is reached or how; allowed keys are \
         {}",
        ALLOWED_QUERY_KEYS.join(", ")
    )]
    QueryKey {
        /// The key, escaped.
        key: String,
    },
    /// A query key given twice (the API server reads only the first; we
    /// would check one and send both).
    #[error("query key `{key}` is given more than once: give each key once")]
    DuplicateQueryKey {
        /// The key.
        key: String,
    },
    /// A query value that would make the verb ambiguous.
    #[error("query `{key}={value}` is refused: {why}")]
    QueryValue {
        /// The key.
        key: String,
        /// The value, escaped.
        value: String,
        /// Why.
        why: String,
    },
}

/// Escapes and shortens text from the request for an error message, so a
/// hostile path cannot forge log lines or flood them.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(300).flat_map(char::escape_debug).collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}

/// Parses and canonicalizes one request: `path` is the API path without
/// scheme, host or query; `query` the unencoded parameters.
pub fn parse(
    method: Method,
    path: &str,
    query: &[(String, String)],
) -> Result<ApiRequest, PathError> {
    check_characters(path)?;
    let watch = check_query(query)?;
    if NON_RESOURCE_PATHS.contains(&path) {
        if method != Method::Get {
            return Err(PathError::BadMethod {
                method,
                path: path.into(),
                why: "the non-resource endpoints are read-only: use GET".into(),
            });
        }
        if watch.is_some() {
            return Err(PathError::QueryKey {
                key: "watch".into(),
            });
        }
        return Ok(ApiRequest::NonResource { path: path.into() });
    }
    let target = parse_target(path)?;
    let verb = verb_for(method, path, &target, watch)?;
    Ok(ApiRequest::Resource { verb, target })
}

/// Refuses every byte that is not part of a plain path: escapes, query and
/// fragment markers, backslashes, whitespace, control and non-ASCII
/// characters.
fn check_characters(path: &str) -> Result<(), PathError> {
    for (offset, c) in path.char_indices() {
        let what = match c {
            '%' => "`%` (percent-encoding is refused: Kubernetes names never need it)".to_string(),
            '?' => "`?` (give query parameters in `query`, not in the path)".to_string(),
            '#' => "`#` (fragments are refused)".to_string(),
            '\\' => "`\\` (backslashes are refused)".to_string(),
            c if c.is_whitespace() => format!("whitespace {:?}", c),
            c if c.is_control() => format!("control character {:?}", c),
            c if !c.is_ascii() => format!("non-ASCII character {:?}", c),
            _ => continue,
        };
        return Err(PathError::BadCharacter {
            path: shown(path),
            what,
            offset,
        });
    }
    Ok(())
}

/// Checks the query keys; returns the `watch` flag when given.
fn check_query(query: &[(String, String)]) -> Result<Option<bool>, PathError> {
    let mut watch = None;
    for (i, (key, value)) in query.iter().enumerate() {
        if !ALLOWED_QUERY_KEYS.contains(&key.as_str()) {
            return Err(PathError::QueryKey { key: shown(key) });
        }
        if query[..i].iter().any(|(k, _)| k == key) {
            return Err(PathError::DuplicateQueryKey { key: key.clone() });
        }
        if key == "watch" {
            watch = Some(match value.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => {
                    return Err(PathError::QueryValue {
                        key: key.clone(),
                        value: shown(value),
                        why: "`watch` is `true`, `1`, `false` or `0`".into(),
                    });
                }
            });
        }
    }
    Ok(watch)
}

/// Splits and checks the segments, then reads the grammar.
fn parse_target(path: &str) -> Result<ApiTarget, PathError> {
    let (rest, group_given) = if let Some(rest) = path.strip_prefix("/api/v1/") {
        (rest, false)
    } else if let Some(rest) = path.strip_prefix("/apis/") {
        (rest, true)
    } else if path == "/api/v1" || path == "/apis" || path == "/api" {
        return Err(PathError::Incomplete { path: shown(path) });
    } else {
        return Err(PathError::NotAnApiPath { path: shown(path) });
    };
    if path.ends_with('/') {
        return Err(PathError::TrailingSlash { path: shown(path) });
    }
    let segments: Vec<&str> = rest.split('/').collect();
    for seg in &segments {
        if seg.is_empty() {
            return Err(PathError::EmptySegment { path: shown(path) });
        }
        if *seg == "." || *seg == ".." {
            return Err(PathError::DotSegment {
                path: shown(path),
                segment: (*seg).into(),
            });
        }
        if seg.len() > MAX_SEGMENT {
            return Err(PathError::SegmentTooLong {
                path: shown(path),
                segment: seg.chars().take(40).collect(),
            });
        }
    }
    let bad = |part: &'static str, segment: &str, why: String| PathError::BadSegment {
        path: shown(path),
        part,
        segment: segment.into(),
        why,
    };

    let (group, version, parts) = if group_given {
        let [group, version, parts @ ..] = segments.as_slice() else {
            return Err(PathError::Incomplete { path: shown(path) });
        };
        check_lowercase("group", group).map_err(|why| bad("group", group, why))?;
        check_dns_subdomain(group).map_err(|why| bad("group", group, why))?;
        check_lowercase("version", version).map_err(|why| bad("version", version, why))?;
        check_dns_label(version).map_err(|why| bad("version", version, why))?;
        ((*group).to_string(), (*version).to_string(), parts)
    } else {
        (String::new(), "v1".to_string(), segments.as_slice())
    };

    let too_many = |extra: &str| PathError::TooManySegments {
        path: shown(path),
        extra: extra.into(),
    };
    let core = group.is_empty();
    let (namespace, parts) = match parts {
        ["namespaces", ns, after @ ..] => {
            check_dns_label(ns).map_err(|why| bad("namespace", ns, why))?;
            match after {
                // The Namespace object itself, and its subresources: the API
                // server reads these as the namespace's own, not a resource
                // named `status` inside it.
                [] | ["status" | "finalize"] | ["status" | "finalize", ..] if core => {
                    let subresource = match after {
                        [] => None,
                        [sub] => Some((*sub).to_string()),
                        [_, extra, ..] => return Err(too_many(extra)),
                    };
                    return Ok(ApiTarget {
                        group,
                        version,
                        resource: "namespaces".into(),
                        subresource,
                        namespace: None,
                        name: Some((*ns).to_string()),
                    });
                }
                [] | ["status" | "finalize", ..] => {
                    // Outside the core group there is no Namespace object;
                    // the API server would still read these as one.
                    return Err(bad(
                        "resource",
                        after.first().copied().unwrap_or(ns),
                        "a namespace object lives only in the core group (`/api/v1/namespaces/{name}`)"
                            .into(),
                    ));
                }
                _ => (Some((*ns).to_string()), after),
            }
        }
        _ => (None, parts),
    };
    let (resource, name, subresource) = match parts {
        [] => return Err(PathError::Incomplete { path: shown(path) }),
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        [_, _, _, extra, ..] => return Err(too_many(extra)),
    };
    check_lowercase("resource", resource).map_err(|why| bad("resource", resource, why))?;
    check_dns_label(resource).map_err(|why| bad("resource", resource, why))?;
    if resource == "watch" || resource == "proxy" {
        // Legacy prefixes (`/api/v1/watch/pods`) the API server reads as a
        // verb, not a resource.
        return Err(bad(
            "resource",
            resource,
            "the legacy `/watch/` and `/proxy/` prefixes are refused: watch with `?watch=true`"
                .into(),
        ));
    }
    if let Some(name) = name {
        check_dns_subdomain(name).map_err(|why| bad("name", name, why))?;
    }
    if let Some(sub) = subresource {
        check_lowercase("subresource", sub).map_err(|why| bad("subresource", sub, why))?;
        check_dns_label(sub).map_err(|why| bad("subresource", sub, why))?;
    }
    Ok(ApiTarget {
        group,
        version,
        resource: resource.into(),
        subresource: subresource.map(str::to_string),
        namespace,
        name: name.map(str::to_string),
    })
}

/// The RBAC verb for a method on a target.
fn verb_for(
    method: Method,
    path: &str,
    target: &ApiTarget,
    watch: Option<bool>,
) -> Result<Verb, PathError> {
    let named = target.name.is_some();
    let refuse = |why: &str| PathError::BadMethod {
        method,
        path: shown(path),
        why: why.into(),
    };
    if watch.is_some() && (method != Method::Get || named) {
        return Err(refuse(
            "`watch` applies only to GET of a collection (watch one object with a `fieldSelector` \
             on `metadata.name`)",
        ));
    }
    Ok(match (method, named) {
        (Method::Get, true) => Verb::Get,
        (Method::Get, false) if watch == Some(true) => Verb::Watch,
        (Method::Get, false) => Verb::List,
        (Method::Post, _) => Verb::Create,
        (Method::Put, true) => Verb::Update,
        (Method::Patch, true) => Verb::Patch,
        (Method::Put | Method::Patch, false) => {
            return Err(refuse(
                "updates and patches need a named object: `…/{resource}/{name}`",
            ));
        }
        (Method::Delete, true) => Verb::Delete,
        (Method::Delete, false) => Verb::DeleteCollection,
    })
}

/// Uppercase is refused outright in group, version and resource: there is
/// one spelling, and the checker compares strings.
fn check_lowercase(part: &str, s: &str) -> Result<(), String> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "uppercase letters are refused in a {part} (one spelling only: lowercase)"
        ));
    }
    Ok(())
}

/// A DNS label (RFC 1123): 1–63 of `[a-z0-9-]`, alphanumeric at both ends.
pub(crate) fn check_dns_label(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 63 {
        return Err("a DNS label has 1 to 63 characters".into());
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("a DNS label has only lowercase letters, digits and `-`".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err("a DNS label starts and ends with a letter or digit".into());
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123): at most 253 characters, dot-separated DNS
/// labels.
pub(crate) fn check_dns_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_SEGMENT {
        return Err("a DNS subdomain has 1 to 253 characters".into());
    }
    for label in s.split('.') {
        check_dns_label(label)
            .map_err(|why| format!("a DNS subdomain is dot-separated DNS labels ({why})"))?;
    }
    Ok(())
}

/// Cluster-scoped resources the host knows, as `(group, resource)`. A
/// collection without a namespace for any other resource is read as an
/// all-namespaces collection of a namespaced resource, which needs
/// `namespaces: ["*"]`: the stricter reading when in doubt.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumes"),
    ("", "componentstatuses"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("certificates.k8s.io", "clustertrustbundles"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "ipaddresses"),
    ("networking.k8s.io", "servicecidrs"),
    ("node.k8s.io", "runtimeclasses"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("resource.k8s.io", "deviceclasses"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "volumeattributesclasses"),
];

/// Whether `group/resource` is cluster-scoped, by the built-in table.
pub fn is_cluster_scoped(group: &str, resource: &str) -> bool {
    CLUSTER_SCOPED
        .iter()
        .any(|&(g, r)| g == group && r == resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn ok(method: Method, path: &str) -> (Verb, ApiTarget) {
        ok_q(method, path, &[])
    }

    fn ok_q(method: Method, path: &str, query: &[(&str, &str)]) -> (Verb, ApiTarget) {
        match parse(method, path, &q(query)) {
            Ok(ApiRequest::Resource { verb, target }) => (verb, target),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    fn err(method: Method, path: &str) -> PathError {
        parse(method, path, &[]).expect_err(path)
    }

    fn target(group: &str, version: &str, resource: &str) -> ApiTarget {
        ApiTarget {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: None,
            namespace: None,
            name: None,
        }
    }

    #[test]
    fn namespaced_object_and_subresource() {
        let (verb, t) = ok(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log");
        assert_eq!(verb, Verb::Get);
        assert_eq!(
            t,
            ApiTarget {
                subresource: Some("log".into()),
                namespace: Some("pando-x".into()),
                name: Some("web".into()),
                ..target("", "v1", "pods")
            }
        );
        assert_eq!(t.grant_spelling(), "pods/log");
        assert_eq!(t.to_string(), r#"pods/log "web" in namespace "pando-x""#);
    }

    #[test]
    fn grouped_paths() {
        let (verb, t) = ok(
            Method::Put,
            "/apis/apps/v1/namespaces/pando-edge/deployments/gw/scale",
        );
        assert_eq!(verb, Verb::Update);
        assert_eq!(t.grant_spelling(), "apps/deployments/scale");
        assert_eq!(t.namespace.as_deref(), Some("pando-edge"));
        let (verb, t) = ok(
            Method::Post,
            "/apis/networking.k8s.io/v1/namespaces/pando-x/networkpolicies",
        );
        assert_eq!(verb, Verb::Create);
        assert_eq!(t.grant_spelling(), "networking.k8s.io/networkpolicies");
        assert_eq!(t.name, None);
        let (_, t) = ok(Method::Get, "/apis/node.k8s.io/v1/runtimeclasses/gvisor");
        assert_eq!(t.group, "node.k8s.io");
        assert_eq!(t.name.as_deref(), Some("gvisor"));
        assert_eq!(t.namespace, None);
        assert_eq!(t.to_string(), r#"node.k8s.io/runtimeclasses "gvisor""#);
    }

    #[test]
    fn verb_mapping() {
        let p = "/api/v1/namespaces/pando-x/pods";
        assert_eq!(ok(Method::Get, p).0, Verb::List);
        assert_eq!(ok_q(Method::Get, p, &[("watch", "true")]).0, Verb::Watch);
        assert_eq!(ok_q(Method::Get, p, &[("watch", "1")]).0, Verb::Watch);
        assert_eq!(ok_q(Method::Get, p, &[("watch", "false")]).0, Verb::List);
        assert_eq!(ok(Method::Post, p).0, Verb::Create);
        assert_eq!(ok(Method::Delete, p).0, Verb::DeleteCollection);
        let named = "/api/v1/namespaces/pando-x/pods/web";
        assert_eq!(ok(Method::Get, named).0, Verb::Get);
        assert_eq!(ok(Method::Put, named).0, Verb::Update);
        assert_eq!(ok(Method::Patch, named).0, Verb::Patch);
        assert_eq!(ok(Method::Delete, named).0, Verb::Delete);
        assert!(matches!(err(Method::Put, p), PathError::BadMethod { .. }));
        assert!(matches!(err(Method::Patch, p), PathError::BadMethod { .. }));
        assert!(matches!(
            parse(Method::Get, named, &q(&[("watch", "true")])),
            Err(PathError::BadMethod { .. })
        ));
        assert!(matches!(
            parse(Method::Get, p, &q(&[("watch", "yes")])),
            Err(PathError::QueryValue { .. })
        ));
        assert_eq!(Verb::DeleteCollection.to_string(), "deletecollection");
        assert_eq!(Verb::from_rbac("watch"), Some(Verb::Watch));
        assert_eq!(Verb::from_rbac("Watch"), None);
    }

    #[test]
    fn cluster_scoped_and_all_namespaces() {
        let (verb, t) = ok(Method::Get, "/api/v1/pods");
        assert_eq!(verb, Verb::List);
        assert_eq!((t.namespace, t.name), (None, None));
        let (verb, t) = ok(Method::Get, "/api/v1/nodes/n1");
        assert_eq!(verb, Verb::Get);
        assert_eq!(t.name.as_deref(), Some("n1"));
        assert_eq!(t.to_string(), r#"nodes "n1""#);
        assert_eq!(
            ok(Method::Get, "/api/v1/pods").1.to_string(),
            "pods in all namespaces"
        );
    }

    #[test]
    fn namespace_object_special_case() {
        let (verb, t) = ok(Method::Delete, "/api/v1/namespaces/pando-x");
        assert_eq!(verb, Verb::Delete);
        assert_eq!(
            t,
            ApiTarget {
                name: Some("pando-x".into()),
                ..target("", "v1", "namespaces")
            }
        );
        let (verb, t) = ok(Method::Put, "/api/v1/namespaces/pando-x/finalize");
        assert_eq!(verb, Verb::Update);
        assert_eq!(t.grant_spelling(), "namespaces/finalize");
        assert_eq!(t.name.as_deref(), Some("pando-x"));
        assert_eq!(t.namespace, None);
        assert_eq!(
            ok(Method::Get, "/api/v1/namespaces/pando-x/status")
                .1
                .grant_spelling(),
            "namespaces/status"
        );
        let (verb, t) = ok(Method::Get, "/api/v1/namespaces");
        assert_eq!(verb, Verb::List);
        assert_eq!(t.resource, "namespaces");
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/status/x"),
            PathError::TooManySegments { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/apis/apps/v1/namespaces/pando-x"),
            PathError::BadSegment {
                part: "resource",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/apis/apps/v1/namespaces/pando-x/status"),
            PathError::BadSegment {
                part: "resource",
                ..
            }
        ));
    }

    #[test]
    fn non_resource_endpoints() {
        for p in NON_RESOURCE_PATHS {
            assert_eq!(
                parse(Method::Get, p, &[]),
                Ok(ApiRequest::NonResource { path: (*p).into() })
            );
        }
        assert!(matches!(
            err(Method::Post, "/version"),
            PathError::BadMethod { .. }
        ));
        for p in [
            "/metrics",
            "/openapi/v2",
            "/logs/",
            "/debug/pprof",
            "/version/",
            "/",
            "",
        ] {
            assert!(parse(Method::Get, p, &[]).is_err(), "{p}");
        }
        assert!(matches!(
            err(Method::Get, "/metrics"),
            PathError::NotAnApiPath { .. }
        ));
    }

    #[test]
    fn traversal_and_escapes_are_refused() {
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/kube-system/secrets/../../pando-x/pods"),
            PathError::DotSegment { ref segment, .. } if segment == ".."
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/./pods"),
            PathError::DotSegment { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/pods/.."),
            PathError::DotSegment { .. }
        ));
        for p in [
            "/api/v1/namespaces/%2e%2e/pods",
            "/api/v1/namespaces/pando-x%2Fpods",
            "/api/v1/namespaces/pando-x/pods?labelSelector=a",
            "/api/v1/namespaces/pando-x/pods#x",
            "/api/v1/namespaces\\pando-x/pods",
            "/api/v1/namespaces/pando-x/pods/a b",
            "/api/v1/namespaces/pando-x/pods/a\n",
            "/api/v1/namespaces/pando-x/pods/a\t",
            "/api/v1/namespaces/pando-x/pods/a\u{0}",
            "/api/v1/namespaces/pandо-x/pods",
        ] {
            assert!(
                matches!(err(Method::Get, p), PathError::BadCharacter { .. }),
                "{p}"
            );
        }
        let e = err(Method::Get, "/api/v1/namespaces/pando-x%2Fpods").to_string();
        assert!(e.contains("percent-encoding"), "{e}");
        let e = err(Method::Get, "/api/v1/namespaces/x/pods/a\n").to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(matches!(
            err(Method::Get, "/api/v1//pods"),
            PathError::EmptySegment { .. }
        ));
        assert!(matches!(
            err(Method::Get, "//api/v1/pods"),
            PathError::NotAnApiPath { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/pods/"),
            PathError::TrailingSlash { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/"),
            PathError::TrailingSlash { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1"),
            PathError::Incomplete { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/apis/apps/v1"),
            PathError::Incomplete { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v2/pods"),
            PathError::NotAnApiPath { .. }
        ));
        assert!(matches!(
            err(Method::Get, "api/v1/pods"),
            PathError::NotAnApiPath { .. }
        ));
    }

    #[test]
    fn alternate_spellings_are_refused() {
        let e = err(Method::Get, "/api/v1/namespaces/pando-x/Pods");
        assert!(
            matches!(
                e,
                PathError::BadSegment {
                    part: "resource",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("uppercase"), "{e}");
        assert!(matches!(
            err(Method::Get, "/apis/Apps/v1/namespaces/pando-x/deployments"),
            PathError::BadSegment { part: "group", .. }
        ));
        assert!(matches!(
            err(Method::Get, "/apis/apps./v1/namespaces/pando-x/deployments"),
            PathError::BadSegment { part: "group", .. }
        ));
        assert!(matches!(
            err(Method::Get, "/apis/apps/V1/deployments"),
            PathError::BadSegment {
                part: "version",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/Pando-x/pods"),
            PathError::BadSegment {
                part: "namespace",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando.x/pods"),
            PathError::BadSegment {
                part: "namespace",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/pods/Web"),
            PathError::BadSegment { part: "name", .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/pods/-web"),
            PathError::BadSegment { part: "name", .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/pods/web/Log"),
            PathError::BadSegment {
                part: "subresource",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/watch/namespaces/pando-x/pods"),
            PathError::BadSegment {
                part: "resource",
                ..
            } | PathError::TooManySegments { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/watch/pods"),
            PathError::BadSegment { .. }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/proxy/nodes"),
            PathError::BadSegment { .. }
        ));
        // A name may be a dotted subdomain.
        assert_eq!(
            ok(
                Method::Get,
                "/api/v1/namespaces/pando-x/configmaps/kube-root-ca.crt"
            )
            .1
            .name
            .as_deref(),
            Some("kube-root-ca.crt")
        );
    }

    #[test]
    fn lengths_and_segment_counts() {
        let long = "a".repeat(254);
        assert!(matches!(
            err(
                Method::Get,
                &format!("/api/v1/namespaces/pando-x/pods/{long}")
            ),
            PathError::SegmentTooLong { .. }
        ));
        let name253 = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(name253.len(), 253);
        ok(
            Method::Get,
            &format!("/api/v1/namespaces/pando-x/pods/{name253}"),
        );
        let ns64 = "n".repeat(64);
        assert!(matches!(
            err(Method::Get, &format!("/api/v1/namespaces/{ns64}/pods")),
            PathError::BadSegment {
                part: "namespace",
                ..
            }
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/namespaces/pando-x/pods/web/log/more"),
            PathError::TooManySegments { ref extra, .. } if extra == "more"
        ));
        assert!(matches!(
            err(Method::Get, "/api/v1/nodes/n1/proxy/x"),
            PathError::TooManySegments { .. }
        ));
    }

    #[test]
    fn query_keys() {
        let p = "/api/v1/namespaces/pando-x/pods";
        ok_q(
            Method::Get,
            p,
            &[
                ("labelSelector", "app in (a, b)"),
                ("limit", "50"),
                ("continue", "x"),
            ],
        );
        let e = parse(Method::Get, p, &q(&[("namespace", "kube-system")])).unwrap_err();
        assert!(
            matches!(e, PathError::QueryKey { ref key } if key == "namespace"),
            "{e}"
        );
        assert!(e.to_string().contains("labelSelector"), "{e}");
        assert!(matches!(
            parse(Method::Get, p, &q(&[("LabelSelector", "a")])),
            Err(PathError::QueryKey { .. })
        ));
        assert!(matches!(
            parse(Method::Get, p, &q(&[("watch", "false"), ("watch", "true")])),
            Err(PathError::DuplicateQueryKey { .. })
        ));
        assert!(matches!(
            parse(Method::Get, "/version", &q(&[("watch", "true")])),
            Err(PathError::QueryKey { .. })
        ));
    }
}
