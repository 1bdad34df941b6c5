//! Reading a method, path and query into an [`ApiRequest`], refusing every
//! spelling that is not the one canonical one.

use super::error::shown;
use super::names::{MAX_SEGMENT, check_dns_label, check_dns_subdomain, check_lowercase};
use super::{
    ALLOWED_QUERY_KEYS, ApiRequest, ApiTarget, Method, NON_RESOURCE_PATHS, PathError, Verb,
};

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

/// Splits and checks the segments, then reads the grammar:
/// `[group/]version`, then `[namespaces/{ns}/]`, then
/// `{resource}[/{name}[/{subresource}]]`.
fn parse_target(path: &str) -> Result<ApiTarget, PathError> {
    let (segments, group_given) = segments(path)?;
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
    let (namespace, parts) = match namespace_part(path, &group, parts)? {
        Scoped::Namespace { name, subresource } => {
            return Ok(ApiTarget {
                group,
                version,
                resource: "namespaces".into(),
                subresource,
                namespace: None,
                name: Some(name),
            });
        }
        Scoped::In(namespace, parts) => (namespace, parts),
    };
    let (resource, name, subresource) = match parts {
        [] => return Err(PathError::Incomplete { path: shown(path) }),
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        [_, _, _, extra, ..] => return Err(too_many(path, extra)),
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

/// The path's segments after `/api/v1/` or `/apis/` (and which of the two),
/// each non-empty, not `.` or `..`, and not over-long.
fn segments(path: &str) -> Result<(Vec<&str>, bool), PathError> {
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
    Ok((segments, group_given))
}

fn too_many(path: &str, extra: &str) -> PathError {
    PathError::TooManySegments {
        path: shown(path),
        extra: extra.into(),
    }
}

/// What `namespaces/{ns}` at the head of the parts means.
enum Scoped<'p, 's> {
    /// The Namespace object itself, or one of its subresources.
    Namespace {
        name: String,
        subresource: Option<String>,
    },
    /// Inside a namespace (or none), with the parts after it.
    In(Option<String>, &'p [&'s str]),
}

fn namespace_part<'p, 's>(
    path: &str,
    group: &str,
    parts: &'p [&'s str],
) -> Result<Scoped<'p, 's>, PathError> {
    let bad = |segment: &str, why: String| PathError::BadSegment {
        path: shown(path),
        part: "namespace",
        segment: segment.into(),
        why,
    };
    let ["namespaces", ns, after @ ..] = parts else {
        return Ok(Scoped::In(None, parts));
    };
    check_dns_label(ns).map_err(|why| bad(ns, why))?;
    let core = group.is_empty();
    match after {
        // The Namespace object itself, and its subresources: the API server
        // reads these as the namespace's own, not a resource named `status`
        // inside it.
        [] | ["status" | "finalize"] | ["status" | "finalize", ..] if core => {
            let subresource = match after {
                [] => None,
                [sub] => Some((*sub).to_string()),
                [_, extra, ..] => return Err(too_many(path, extra)),
            };
            Ok(Scoped::Namespace {
                name: (*ns).to_string(),
                subresource,
            })
        }
        // Outside the core group there is no Namespace object; the API
        // server would still read these as one.
        [] | ["status" | "finalize", ..] => Err(PathError::BadSegment {
            path: shown(path),
            part: "resource",
            segment: after.first().copied().unwrap_or(ns).into(),
            why: "a namespace object lives only in the core group (`/api/v1/namespaces/{name}`)"
                .into(),
        }),
        _ => Ok(Scoped::In(Some((*ns).to_string()), after)),
    }
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
